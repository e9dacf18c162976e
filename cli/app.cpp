// The simrun command's subcommands on one CLI11 app (main() parses and runs; the tests walk
// every option of it): simulate, estimate, collective, topology, textbook, accuracy, completion, and
// plan and validate.
#include <charconv>
#include <cstdint>

#include "command.hpp"

namespace simrun::cli {
namespace {

// CLI11 reads an integer flag with strtoll(…, 0): a value past 64 bits saturates (`--tp
// 99999999999999999999` became 9223372036854775807 in the error it then got) and a leading zero
// makes it octal (`--gpus 010` was 8). Decimal digits are checked here first, leading zeros
// dropped; anything else is left to CLI11's conversion and its error.
std::string decimal_integer(std::string& text) {
  const size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (text.size() == sign || text.find_first_not_of("0123456789", sign) != std::string::npos) return "";
  const size_t first = std::min(text.find_first_not_of('0', sign), text.size() - 1);
  text = (text[0] == '-' ? "-" : "") + text.substr(first);
  int64_t value = 0;
  if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc())
    return text + " is out of range (beyond any 64-bit integer)";
  return "";
}

void guard_integer_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->get_type_name() == "INT" || option->get_type_name() == "N")
      option->transform(CLI::Validator(decimal_integer, ""));
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) guard_integer_options(*sub);
}

}  // namespace

std::vector<Command> add_commands(CLI::App& app, const CliEnv& env) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("simrun ") + SIMRUN_VERSION,
                       "Print \"simrun VERSION\" and exit");
  std::vector<Command> commands{
      add_simulate_command(app, env), add_estimate_command(app, env), add_collective_command(app, env),
      add_topology_command(app, env), add_textbook_command(app, env), add_accuracy_command(app, env),
      add_plan_command(app, env),     add_validate_command(app, env), add_completion_command(app, env),
  };
  guard_integer_options(app);
  return commands;
}

}  // namespace simrun::cli
