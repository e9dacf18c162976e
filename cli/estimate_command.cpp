// `simrun estimate SCENARIO.json [overrides] [--json|--csv] [--explain] [--require-fit]
//  [--calibration FILE] [--tp-comm-overlap] [--kernels K] [--selective-recompute R]
//  [--straggler RANK:SLOWDOWN]... [--straggler-node NODE:SLOWDOWN]... [--no-timing]`: the
// closed-form (analytic) model of one layout, over the same workload ops, compute model and
// calibration as `simrun simulate`. JSON and CSV echo the inputs (sim/report/inputs.hpp).
#include <iostream>
#include <memory>
#include <string>

#include "command.hpp"
#include "simrun/sim/analytic/analytic.hpp"

namespace simrun::cli {
namespace {

struct EstimateArgs {
  ScenarioArgs scenario;
  OutputFormat format = OutputFormat::table;
  bool explain = false;
  bool require_fit = false;
  Timing timing = Timing::shown;  // accepted as simulate does; the estimate reports no wall-clock time
  std::string calibration_file;
  FrameworkArgs framework;
  FaultArgs faults;
};

}  // namespace

Command add_estimate_command(CLI::App& root, const CliEnv& env) {
  auto args = std::make_shared<EstimateArgs>();
  CLI::App* cmd =
      root.add_subcommand("estimate", "Closed-form estimate: step time, MFU, memory, days and cost");
  add_scenario_options(*cmd, args->scenario);
  add_output_options(*cmd, args->format, &args->explain);
  add_no_timing_option(*cmd, args->timing);
  cmd->add_flag("--require-fit", args->require_fit, "Exit 3 when the layout does not fit in GPU memory");
  cmd->add_option("--calibration", args->calibration_file,
                  "calibration.json with fitted efficiencies per GPU kind (as simulate applies it)");
  add_framework_options(*cmd, args->framework);
  add_fault_options(*cmd, args->faults, false);
  return {cmd, [args, env] {
            const Catalogs catalogs = load_cli_catalogs(env, args->scenario.catalogs);
            const Scenario scenario = resolve_scenario(args->scenario, catalogs);
            AnalyticOptions options = framework_options(scenario);
            if (!args->calibration_file.empty())
              options.calibration = Calibration::load(args->calibration_file);
            apply_framework_options(args->framework, scenario, options.workload, options.memory);
            options.stragglers = stragglers_of(args->faults, scenario);
            options.slow_links = slow_links_of(args->faults);
            Report report = blaming_flags(args->scenario, [&] { return estimate(scenario, options); });
            const StepTimeBand band = attach_step_time_band(env, scenario, catalogs, report);
            const Fields inputs = report_input_fields(scenario, options.workload, args->calibration_file);
            switch (args->format) {
              case OutputFormat::json: {
                nlohmann::json j = report_json(report, band, inputs, scenario, catalogs, args->explain);
                std::cout << j.dump(2) << "\n";
                break;
              }
              case OutputFormat::csv:
                write_csv({report_csv_row(inputs, report)}, std::cout);
                break;
              case OutputFormat::table:
                print_report_table(report, band, scenario, std::cout);
                if (args->explain) {
                  std::cout << "\n";
                  print_report_explain(report, std::cout);
                  print_framework_explain(
                      scenario.framework,
                      catalogs.frameworks.resolve(kDefaultFramework, "catalog", "framework"), std::cout);
                }
                break;
            }
            // The hard check comes after the report, so a sweep keeps the numbers of what failed.
            if (args->require_fit && !report.memory.fits)
              throw InfeasibleError(scenario.file + ": memory: " + memory_shortfall_text(report.memory) +
                                    " (--require-fit)");
            return 0;
          }};
}

}  // namespace simrun::cli
