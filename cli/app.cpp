// The simrun command's subcommands on one CLI11 app (main() parses and runs; the tests walk
// every option of it): simulate, estimate, collective, topology, textbook, accuracy, completion, and
// plan and validate, listed but not built yet.
#include "command.hpp"
#include "simrun/common/error.hpp"

namespace simrun::cli {
namespace {

// A subcommand the contract names that this build does not have yet: listed in --help, and
// answering with one line (exit 2) instead of a crash or a parse error.
Command add_not_implemented_command(CLI::App& root, const std::string& name, const std::string& what) {
  CLI::App* cmd = root.add_subcommand(name, what + " (not implemented in this build yet)");
  cmd->allow_extras();
  return {cmd, [name] {
            throw InputError("command line", name,
                             "not implemented in this build yet (available: simulate, estimate, collective, "
                             "topology, textbook, accuracy, plan)");
            return 2;
          }};
}

}  // namespace

std::vector<Command> add_commands(CLI::App& app, const CliEnv& env) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("simrun ") + SIMRUN_VERSION,
                       "Print \"simrun VERSION\" and exit");
  return {
      add_simulate_command(app, env),
      add_estimate_command(app, env),
      add_collective_command(app, env),
      add_topology_command(app, env),
      add_textbook_command(app, env),
      add_accuracy_command(app, env),
      add_plan_command(app, env),
      add_not_implemented_command(app, "validate",
                                  "Measure a scenario on this machine's GPUs against the simulation"),
      add_completion_command(app, env),
  };
}

}  // namespace simrun::cli
