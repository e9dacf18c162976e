// The simrun command's subcommands on one CLI11 app (main() parses and runs; the tests walk
// every option of it): simulate, estimate, collective, topology, textbook, accuracy, completion, and
// plan and validate.
#include "command.hpp"

namespace simrun::cli {

std::vector<Command> add_commands(CLI::App& app, const CliEnv& env) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("simrun ") + SIMRUN_VERSION,
                       "Print \"simrun VERSION\" and exit");
  return {
      add_simulate_command(app, env), add_estimate_command(app, env), add_collective_command(app, env),
      add_topology_command(app, env), add_textbook_command(app, env), add_accuracy_command(app, env),
      add_plan_command(app, env),     add_validate_command(app, env), add_completion_command(app, env),
  };
}

}  // namespace simrun::cli
