// `simrun accuracy [RUNS.json] [--group G] [--json|--csv] [--calibration FILE] [--catalog DIR]`:
// the simulator scored on measured runs (validation/accuracy.hpp). RUNS.json is a file in the
// reference's measured-runs schema (a team's own logs; docs/validation.md); without it, the
// shipped yardstick (validation/data/measured-runs.json). Per run: predicted and reference step
// time, error, memory verdict, or "unsupported: why"; MAPE per group and over all supported runs.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/validation/accuracy.hpp"

namespace simrun::cli {
namespace {

struct AccuracyArgs {
  std::string runs_file;  // empty: the shipped yardstick
  std::string group;
  OutputFormat format = OutputFormat::table;
  std::string calibration_file;
  std::vector<std::string> catalogs;  // --catalog DIR
};

// The shipped yardstick, beside the catalogs (source tree or installed share/simrun).
std::filesystem::path shipped_runs(const CliEnv& env) {
  return env.data_dir / "validation" / "data" / "measured-runs.json";
}

}  // namespace

Command add_accuracy_command(CLI::App& root, const CliEnv& env) {
  auto args = std::make_shared<AccuracyArgs>();
  CLI::App* cmd = root.add_subcommand(
      "accuracy", "Score the simulator on measured runs: predicted vs measured step time, MAPE per group");
  cmd->add_option("runs", args->runs_file,
                  "Measured runs in the reference's schema (a JSON list of rows; docs/validation.md); "
                  "default: the shipped yardstick")
      ->type_name("RUNS.json");
  cmd->add_option("--group", args->group, "Score only the rows of this group (a row's \"group\")")
      ->type_name("G");
  add_output_options(*cmd, args->format, nullptr);
  cmd->add_option("--calibration", args->calibration_file,
                  "calibration.json with fitted efficiencies per GPU kind (as simulate applies it)");
  add_catalog_option(*cmd, args->catalogs);
  return {
      cmd, [args, env] {
        const Catalogs catalogs = load_cli_catalogs(env, args->catalogs);
        std::filesystem::path file = args->runs_file;
        if (file.empty()) {
          file = shipped_runs(env);
          std::error_code ec;
          if (!std::filesystem::is_regular_file(file, ec))
            throw InputError("command line", "runs",
                             "no RUNS.json given and the shipped yardstick " + quoted_input(file.string()) +
                                 " is missing (give a measured-runs file)");
        }
        const std::vector<MeasuredRun> runs = measured_runs_of(load_json_file(file), file.string(), catalogs);
        AccuracyOptions options;
        if (!args->group.empty()) {
          const std::vector<std::string> groups = group_names(runs);
          if (std::find(groups.begin(), groups.end(), args->group) == groups.end())
            throw InputError("command line", "--group",
                             quoted_input(args->group) + " is not a group of " + quoted_input(file.string()) +
                                 " (its groups: " + join_names(groups) + ")");
          options.group = args->group;
        }
        if (!args->calibration_file.empty()) options.calibration = Calibration::load(args->calibration_file);
        const AccuracyScore score = score_accuracy(runs, options);
        switch (args->format) {
          case OutputFormat::json:
            std::cout << accuracy_json(score).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                      << "\n";
            break;
          case OutputFormat::csv:
            write_csv(accuracy_csv_rows(score), std::cout);
            break;
          case OutputFormat::table:
            write_accuracy_table(score, std::cout);
            std::cout << "\ndefaults for unstated fields and framework behaviour:\n"
                      << measured_run_defaults_text();
            break;
        }
        return 0;
      }};
}

}  // namespace simrun::cli
