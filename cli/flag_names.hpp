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

// ("step", "stragglers[0].rank") → "--straggler": a field of the typed input an InputError names
// (its `file`, see common/error.hpp); nullopt when no flag sets it.
std::optional<std::string> flag_of_option_field(std::string_view source, std::string_view field);

// `e` as the command line reports it: a field of the options or one of `given_scenario_fields`
// (overridden by a flag) becomes the flag's error, a scenario built from flags alone is the
// "command line", and a missing scenario field that a flag can give says so.
InputError as_command_line_error(const InputError& e,
                                 const std::vector<std::string>& given_scenario_fields = {});

}  // namespace simrun::cli
