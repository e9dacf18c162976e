// `simrun accuracy [RUNS.json] [--group G] [--json|--csv] [--calibration FILE] [--catalog DIR]`:
// the simulator scored on measured runs (validation/accuracy.hpp). RUNS.json is a file in the
// reference's measured-runs schema (a team's own logs; docs/validation.md); without it, the
// shipped yardstick (validation/data/measured-runs.json). Per run: predicted and reference step
// time, error, memory verdict, or "unsupported: why"; MAPE per group and over all supported runs.
// `--write-bands FILE` also writes the supported runs' residuals, the prediction bands estimate and
// simulate read (validation/prediction_band.hpp; the shipped ones: docs/validation.md "Prediction band").
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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
  std::string bands_file;             // --write-bands FILE; empty: none written
};

// The shipped yardstick, beside the catalogs (source tree or installed share/simrun).
std::filesystem::path shipped_runs(const CliEnv& env) {
  return env.data_dir / "validation" / "data" / "measured-runs.json";
}

// The residuals of every supported run to `a.bands_file`, with the command that wrote them.
void write_bands(const AccuracyArgs& a, const AccuracyScore& score) {
  std::string command = "simrun accuracy";
  if (!a.runs_file.empty()) command += " " + a.runs_file;
  command += " --write-bands " + a.bands_file;
  std::ofstream out(a.bands_file);
  if (out) out << prediction_bands_text(prediction_residuals(score), command);
  out.flush();
  if (!out) throw InputError("command line", "--write-bands", "cannot write " + quoted_input(a.bands_file));
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
  add_output_options(*cmd, args->format, nullptr,
                     {"Print the scores as JSON: the summary, MAPE per group and one entry per run "
                      "(docs/validation.md)",
                      "Print the scores as CSV: a header, then one row per run (full precision)"});
  cmd->add_option("--calibration", args->calibration_file,
                  "calibration.json with fitted efficiencies per GPU kind (as simulate applies it)")
      ->type_name("FILE");
  add_catalog_option(*cmd, args->catalogs);
  CLI::Option* bands =
      cmd->add_option("--write-bands", args->bands_file,
                      "Also write every supported run's signed error, framework profile and GPU architecture "
                      "to FILE: the prediction bands of estimate and simulate (shipped: "
                      "validation/data/prediction-bands.json; docs/validation.md)")
          ->type_name("FILE");
  // A band describes the simulator as estimate and simulate run it: every run, uncalibrated.
  bands->excludes("--group")->excludes("--calibration");
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
        if (!args->bands_file.empty()) {  // a folder that is not there, refused before seconds of scoring
          const std::filesystem::path folder = std::filesystem::path(args->bands_file).parent_path();
          std::error_code ec;
          if (!folder.empty() && !std::filesystem::is_directory(folder, ec))
            throw InputError("command line", "--write-bands",
                             "cannot write " + quoted_input(args->bands_file) + ": no folder " +
                                 quoted_input(folder.string()));
        }
        const AccuracyScore score = score_accuracy(runs, options);
        if (!args->bands_file.empty()) write_bands(*args, score);
        switch (args->format) {
          case OutputFormat::json:
            std::cout << accuracy_json(score).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                      << "\n";
            break;
          case OutputFormat::csv:
            write_accuracy_csv(score, std::cout);
            break;
          case OutputFormat::table:
            write_accuracy_table(score, std::cout);
            std::cout << "\ndefaults for unstated fields and framework behaviour:\n"
                      << measured_run_defaults_text();
            if (!args->bands_file.empty())
              fmt::print(std::cout, "\nprediction bands: {} residuals written to {}\n",
                         prediction_residuals(score).residuals.size(), printable(args->bands_file));
            break;
        }
        return 0;
      }};
}

}  // namespace simrun::cli
