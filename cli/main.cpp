// simrun: cluster simulator and capacity planner for LLM training.
//   simrun SCENARIO.json                 the main job (= simrun simulate SCENARIO.json)
//   simrun estimate SCENARIO.json --json closed-form estimate
//   simrun collective --op all_reduce --gpu h100-sxm --gpus 16
//   simrun --help                        every subcommand and flag
//   simrun --version                     "simrun 0.1.0"
// Exit codes (DESIGN.md): 0 ok, 1 internal error, 2 bad input (one line on stderr),
// 3 does not fit / infeasible under a hard check.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "flag_names.hpp"
#include "plan_ranks.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"

namespace {

// Every error line goes out through here: whatever the input held, one safe line (echo.hpp).
void print_error_line(const std::string& line) {
  std::cerr << simrun::printable(line, simrun::kErrorLineMaxBytes) << "\n";
}

// Set by main when the command is `simrun plan` (the one command that splits across mpirun ranks).
bool g_planning = false;

// Bad input: one line, exit 2. A plan under mpirun has its ranks agree on their input first
// (plan_ranks.hpp, agree_on_input): rank 0 alone says why and exits 2; the others leave quietly
// with 0, so that mpirun, which stops the whole job when a rank fails, cannot stop rank 0 before
// it has said why. Other commands under mpirun are independent copies: each rank says why.
int input_error_exit(const std::string& line) {
  if (g_planning && simrun::cli::mpi_launch().rank != 0) return 0;
  print_error_line(line);
  return 2;
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Where the shipped catalogs and examples are when SIMRUN_DATA_DIR is not set: beside an
// installed binary (<prefix>/bin/simrun reads <prefix>/share/simrun, the layout `cmake --install`
// writes: SIMRUN_INSTALL_DATA_DIR is that folder relative to the binary's); else the source tree
// this binary was built from (a binary in its build tree).
std::filesystem::path data_dir(const char* argv0) {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {  // no procfs: argv[0] when it names a path
    exe.clear();
    if (argv0 && std::string_view(argv0).find('/') != std::string_view::npos)
      exe = std::filesystem::weakly_canonical(std::filesystem::absolute(argv0, ec), ec);
  }
  if (!exe.empty()) {
    const auto installed = (exe.parent_path() / SIMRUN_INSTALL_DATA_DIR).lexically_normal();
    if (std::filesystem::is_directory(installed / "models" / "catalog", ec)) return installed;
  }
  return SIMRUN_DATA_DIR;
}

// SIMRUN_CATALOG: user catalog folders, colon-separated as PATH is (empty parts skipped).
std::vector<std::filesystem::path> user_catalogs() {
  std::vector<std::filesystem::path> dirs;
  const char* env = std::getenv("SIMRUN_CATALOG");
  if (!env) return dirs;
  std::string_view rest = env;
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    if (const std::string_view part = rest.substr(0, colon); !part.empty()) dirs.emplace_back(part);
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return dirs;
}

// An empty argument is never meant: CLI11 would take `--tp ""` as the flag left out, and a
// scenario named "" as no scenario.
void refuse_empty_arguments(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool empty_assignment = a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=';
    if (!a.empty() && !empty_assignment) continue;
    const bool after_flag = i > 0 && args[i - 1].size() > 1 && args[i - 1][0] == '-';
    const std::string where = empty_assignment ? a.substr(0, a.size() - 1)
                              : after_flag     ? args[i - 1]
                                               : "argument " + std::to_string(i + 1);
    throw simrun::InputError("command line", where, "an empty value (give one, or leave the flag out)");
  }
}

// `simrun SCENARIO ...` is `simrun simulate SCENARIO ...`; `--validate` is the validate subcommand.
std::vector<std::string> normalise_arguments(int argc, char** argv, const CLI::App& app) {
  std::vector<std::string> args(argv + 1, argv + argc);
  refuse_empty_arguments(args);
  if (args.empty()) return args;
  if (args[0] == "--validate") args[0] = "validate";
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    subcommands.push_back(sub->get_name());
  const std::string& first = args[0];
  if (first.empty() || first[0] == '-' ||
      std::find(subcommands.begin(), subcommands.end(), first) != subcommands.end())
    return args;
  std::error_code ec;
  const bool json_name = first.size() > 5 && first.compare(first.size() - 5, 5, ".json") == 0;
  if (json_name || std::filesystem::exists(first, ec)) {
    args.insert(args.begin(), "simulate");
    return args;
  }
  throw simrun::InputError(
      "command line", first,
      "neither a subcommand (" + simrun::join_names(subcommands) + ") nor a scenario file");
}

int run(int argc, char** argv) {
  using namespace simrun::cli;
  CLI::App app{"simrun: cluster simulator and capacity planner for LLM training"};
  const std::string named_data_dir = env_or_empty("SIMRUN_DATA_DIR");
  const std::vector<Command> commands =
      add_commands(app, CliEnv{named_data_dir.empty() ? data_dir(argc > 0 ? argv[0] : nullptr)
                                                      : std::filesystem::path(named_data_dir),
                               !named_data_dir.empty(), user_catalogs(), env_or_empty("SIMRUN_PROGRESS")});

  std::vector<std::string> args = normalise_arguments(argc, argv, app);
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  // Where a refused flag's list is: the subcommand being parsed, or the top level's.
  const auto help_hint = [&] {
    for (const auto& command : commands)
      if (command.app->parsed()) return "see simrun " + command.app->get_name() + " --help";
    return std::string("see simrun --help");
  };
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11: "--gpus: At Most 1 required but received 2".
    const std::string what = e.what();
    if (what.find("At Most") != std::string::npos)
      return input_error_exit("command line: " + what.substr(0, what.find(':')) +
                              ": given more than once (give each flag once)");
    return input_error_exit("command line: " + what + " (" + help_hint() + " for its flags)");
  } catch (const CLI::ConversionError& e) {
    // CLI11: "Could not convert: --tp = 1.5": "--tp: "1.5" is not ...".
    std::string what = e.what();
    const auto colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    if (const auto eq = what.find(" = "); eq != std::string::npos)
      what = what.substr(0, eq) + ": " + simrun::quoted_input(what.substr(eq + 3));
    return input_error_exit(
        "command line: " + what +
        " is not a value of the flag's type (an integer for sizes and counts, a number for "
        "rates; " +
        help_hint() + ")");
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    return input_error_exit("command line: " + what + " (" + help_hint() + " for its flags)");
  }
  for (const auto& command : commands)
    if (command.app->parsed()) {
      const int code = command.run();
      // A report that did not reach its reader (a full disk behind a redirect) is a failure.
      std::cout.flush();
      if (!std::cout) {
        std::cerr << "simrun: could not write the output to standard output (disk full?)\n";
        return 1;
      }
      return code;
    }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  g_planning = argc > 1 && std::string_view(argv[1]) == "plan";
  try {
    return run(argc, argv);
  } catch (const simrun::InputError& e) {
    return input_error_exit(simrun::cli::as_command_line_error(e).what());
  } catch (const simrun::cli::InfeasibleError& e) {
    print_error_line(e.what());
    return 3;
  } catch (const std::exception& e) {
    print_error_line(std::string("simrun: internal error: ") + e.what());
    return 1;
  }
}
