// The simrun command's subcommands on one CLI11 app (main() parses and runs; the tests walk
// every option of it): simulate, estimate, collective, topology, textbook, accuracy, completion, and
// plan and validate.
#include "command.hpp"
#include "simrun/common/typed_numbers.hpp"

namespace simrun::cli {
namespace {

// CLI11 reads an integer flag with strtoll(…, 0): a value past 64 bits saturates (`--tp
// 99999999999999999999` became 9223372036854775807 in the error it then got), a leading zero
// makes it octal (`--gpus 010` was 8), 0x hexadecimal (`--gpus 0x10` was 16), and a leading
// blank is skipped (" 010" octal again); a number flag with strtod, which takes hexadecimal floats
// (`--tokens 0x1p40`). Each is checked first (typed_numbers.hpp). Every number option of simrun
// is of CLI11's INT or FLOAT type, or "N" (--explain).
void guard_number_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type == "INT" || type == "N") option->transform(CLI::Validator(decimal_integer_error, ""));
    if (type == "FLOAT") option->transform(CLI::Validator(decimal_number_error, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) guard_number_options(*sub);
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
  guard_number_options(app);
  return commands;
}

}  // namespace simrun::cli
