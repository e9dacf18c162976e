// Which command-line flag sets each field the libraries name in their InputErrors (scenario
// fields, and the fields of the typed options the subcommands fill), so an error in a value a
// flag gave is reported as the flag's: `command line: --tp: ...`. The libraries never name
// flags; this is the one table of them (cli/flag_names.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "simrun/common/error.hpp"

namespace simrun::cli {

// "layout.tp" → "--tp"; nullopt for a scenario field no flag sets.
std::optional<std::string> flag_of_scenario_field(std::string_view path);
// "--tp" → "layout.tp"; nullopt for a flag that sets no scenario field.
std::optional<std::string> scenario_field_of_flag(std::string_view flag);

// A Megatron-LM argument simrun reads (megatron/training/arguments.py), and what it does here:
// - an alias: `flag` is simrun's own flag for the same field (`--tensor-model-parallel-size` is
//   `--tp`); registered as another name of that flag (option_names());
// - a switch: it sets scenario field `field` to `value` (`--bf16`: layout.precision = bf16);
// - a framework behaviour: `field` empty, `note` says what it changes.
struct MegatronArgument {
  std::string_view name;   // e.g. "--tensor-model-parallel-size"
  std::string_view flag;   // simrun's flag: another name (alias) or the same (its own flag); empty: a
                           // switch accepted that sets nothing (Megatron reads it with another)
  std::string_view field;  // switches: the scenario field set, e.g. "layout.precision"
  std::string_view value;  // switches: the value set, e.g. "bf16"
  std::string_view note;   // what a reader of Megatron's docs should know, or empty
};
const std::vector<MegatronArgument>& megatron_arguments();
// The names CLI11 registers for simrun's flag `flag`: it and its Megatron aliases,
// e.g. "--tp,--tensor-model-parallel-size".
std::string option_names(std::string_view flag);
// The docs table (docs/flags.md): one row per Megatron argument, with the field it sets.
std::string megatron_arguments_markdown();

// ("step", "stragglers[0].rank") → "--straggler": a field of the typed input an InputError names
// (its `file`, see common/error.hpp); nullopt when no flag sets it.
std::optional<std::string> flag_of_option_field(std::string_view source, std::string_view field);

// `e` as the command line reports it: a field of the options or one of `given_scenario_fields`
// (overridden by a flag) becomes the flag's error, a scenario built from flags alone is the
// "command line", and a missing scenario field that a flag can give says so.
InputError as_command_line_error(const InputError& e,
                                 const std::vector<std::string>& given_scenario_fields = {});

}  // namespace simrun::cli
