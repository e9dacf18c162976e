// `simrun simulate SCENARIO.json [overrides] [--json|--csv] [--trace FILE|-] [--trace-ranks SEL]
//  [--trace-max-mb MB] [--full]
//  [--straggler RANK:SLOWDOWN]... [--straggler-node NODE:SLOWDOWN]... [--slow-link RANK:FRACTION]...
//  [--calibration FILE] [--compare-analytic] [--require-fit] [--no-timing]`:
// the event simulation of one training step (the main job; `simrun SCENARIO.json` is this).
// Prints the report (table, JSON with the contract keys plus "inputs", "stages" and
// "simulation", or CSV), optionally the analytic estimate beside it (in CSV, a second row), and
// writes a Chrome trace (to a file, or with `--trace -` to stdout, the table then going to stderr).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>

#include "command.hpp"
#include "progress_line.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/event/trace.hpp"

namespace simrun::cli {
namespace {

struct SimulateArgs {
  ScenarioArgs scenario;
  OutputFormat format = OutputFormat::table;
  bool explain = false;
  bool require_fit = false;
  bool full = false;
  bool compare_analytic = false;
  Timing timing = Timing::shown;
  FrameworkArgs framework;
  std::string trace_file;
  std::string trace_ranks;
  double trace_max_mb = kTraceDefaultMaxBytes / 1e6;
  std::string calibration_file;
  FaultArgs faults;
  ProgressArgs progress;
};

nlohmann::json stages_json(const SimulationOutput& o) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageReport& s : o.stages) {
    stages.push_back(
        {{"stage", s.stage},
         {"rank", s.time.rank},
         {"layers", s.layers},
         {"params", s.params},
         {"in_flight_micro_batches", s.in_flight_micro_batches},
         {"peak_bytes_per_gpu", bytes_json(s.memory.peak_bytes_per_gpu)},
         {"activations", bytes_json(s.memory.activations)},
         {"fits", s.memory.fits},
         {"finish_s", s.time.finish_s},
         {"compute_s", s.time.compute_s()},
         {"exposed_comm_s", std::accumulate(s.time.exposed_s.begin(), s.time.exposed_s.end(), 0.0)},
         {"bubble_s", s.time.bubble_s}});
  }
  return stages;
}

// The JSON "simulation" object, and the CSV's simulation.* columns: how the step was simulated
// and, unless --no-timing, the wall-clock time it took. `o` null: the same columns empty (the
// analytic row of --compare-analytic).
Fields simulation_fields(const SimulationOutput* o, SimulationScope scope, Timing timing) {
  using nlohmann::json;
  Fields f = {
      {"simulation.schedule", o ? json(to_string(o->workload.schedule)) : json()},
      {"simulation.micro_batches", o ? json(o->workload.micro_batches) : json()},
      {"simulation.scope", o ? json(scope == SimulationScope::full ? "full" : "representatives") : json()},
      {"simulation.simulated_ranks", o ? json(o->step.simulated_ranks) : json()},
      {"simulation.tasks", o ? json(o->step.tasks) : json()},
      {"simulation.events", o ? json(o->step.events) : json()},
  };
  if (timing == Timing::shown) f.push_back({"simulation.wall_s", o ? json(o->wall_s) : json()});
  return f;
}

// The event's parts on one pipeline stage (its traced rank that finishes last), bubble up to the
// step's end.
BreakdownReport breakdown_on_stage(const SimulationOutput& o, int64_t stage) {
  for (const StageReport& s : o.stages)
    if (s.stage == stage) return stage_breakdown(s.time, o.report.step_time_s);
  return o.report.breakdown;
}

void print_stage_table(const SimulationOutput& o, Timing timing, std::ostream& out) {
  fmt::print(out, "\nper pipeline stage (its traced rank that finishes last)\n");
  fmt::print(out, "  {:>5} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11}\n", "stage", "rank", "layers",
             "in-flight", "compute", "exp.comm", "bubble", "finish", "peak mem");
  for (const StageReport& s : o.stages) {
    const double exposed = std::accumulate(s.time.exposed_s.begin(), s.time.exposed_s.end(), 0.0);
    fmt::print(out, "  {:>5} {:>6} {:>6} {:>9} {:>8.3f}s {:>8.3f}s {:>8.3f}s {:>8.3f}s {:>7.1f}GiB{}\n",
               s.stage, s.time.rank, s.layers, s.in_flight_micro_batches, s.time.compute_s(), exposed,
               s.time.bubble_s, s.time.finish_s, s.memory.peak_bytes_per_gpu / kGiB,
               s.memory.fits ? "" : " !");
  }
  fmt::print(out, "simulation: {} schedule, {} micro-batches, {} ranks simulated, {} tasks, {} events{}\n",
             to_string(o.workload.schedule), o.workload.micro_batches, o.step.simulated_ranks, o.step.tasks,
             o.step.events, timing == Timing::omitted ? "" : fmt::format(", {:.2f} s wall", o.wall_s));
}

// What the trace's size cap left out, and the flags that bring it back.
std::string trace_cap_warning(const TraceSummary& t, double max_mb) {
  std::string left_out;
  if (t.micro_batches_kept < t.micro_batches)
    left_out =
        t.micro_batches_kept + 1 == t.micro_batches
            ? fmt::format("micro-batch {} of each rank", t.micro_batches - 1)
            : fmt::format("micro-batches {}-{} of each rank", t.micro_batches_kept, t.micro_batches - 1);
  if (t.ranks_kept < t.ranks)
    left_out += fmt::format("{}{} of {} traced ranks", left_out.empty() ? "" : " and ",
                            t.ranks - t.ranks_kept, t.ranks);
  // The least it keeps (a micro-batch of a rank) may itself be over the cap: said, not hidden.
  const bool over = t.bytes > max_mb * 1e6;
  auto mb = [](double bytes) {
    return bytes < 10e6 ? fmt::format("{:.3g} MB", bytes / 1e6) : fmt::format("{:.0f} MB", bytes / 1e6);
  };
  return fmt::format(
      "trace: left out {} to stay under {:g} MB ({} written{}, {} in all); --trace-max-mb 0 "
      "writes everything, --trace-ranks traces fewer ranks",
      left_out, max_mb, mb(t.bytes), over ? ": the least a trace keeps, over the cap" : "", mb(t.full_bytes));
}

// The simulation's options from the flags and the scenario's framework profile; stragglers, slow
// links and ranks traced beyond the representatives simulate every rank.
SimulateOptions simulate_options_of(const SimulateArgs& a, const Scenario& scenario) {
  SimulateOptions options = framework_simulate_options(scenario);
  if (!a.calibration_file.empty()) options.calibration = Calibration::load(a.calibration_file);
  options.step.stragglers = stragglers_of(a.faults, scenario);
  options.step.slow_links = slow_links_of(a.faults);
  const RankLayout layout(scenario.layout, scenario.cluster.gpus_per_node);
  if (!a.trace_ranks.empty()) options.step.trace_ranks = select_trace_ranks(a.trace_ranks, layout);
  const std::vector<int64_t> representatives = layout.representatives();
  const bool traces_others =
      std::any_of(options.step.trace_ranks.begin(), options.step.trace_ranks.end(), [&](int64_t r) {
        return std::find(representatives.begin(), representatives.end(), r) == representatives.end();
      });
  const bool needs_full =
      !options.step.stragglers.empty() || !options.step.slow_links.empty() || traces_others;
  options.step.scope = a.full || needs_full ? SimulationScope::full : SimulationScope::representatives;
  options.step.record_trace = !a.trace_file.empty();
  apply_framework_options(a.framework, scenario, options.workload, options.memory);
  return options;
}

// The Chrome trace to its file (or stdout with `--trace -`); what the size cap left out becomes
// a warning of the report.
void write_trace(const SimulateArgs& a, const Scenario& scenario, const SimulationOutput& out,
                 Report& report) {
  TraceOptions trace_options;
  trace_options.max_bytes = a.trace_max_mb * 1e6;
  TraceSummary written;
  if (a.trace_file == "-") {
    written = write_chrome_trace(std::cout, scenario, out.workload, out.step, trace_options);
  } else {
    std::ofstream f(a.trace_file);
    if (!f) throw InputError("command line", "--trace", "cannot write " + quoted_input(a.trace_file));
    written = write_chrome_trace(f, scenario, out.workload, out.step, trace_options);
    f.flush();
    if (!f)
      throw InputError(
          "command line", "--trace",
          "could not write all of " + quoted_input(a.trace_file) + " (disk full, or not a regular file?)");
  }
  if (written.truncated()) report.warnings.push_back(trace_cap_warning(written, a.trace_max_mb));
}

// The report as the flags ask: JSON (with stages, simulation and the comparison), CSV rows or
// the tables (on stderr when the trace goes to stdout).
void print_simulate_report(const SimulateArgs& a, const Scenario& scenario, const Catalogs& catalogs,
                           const SimulateOptions& options, const SimulationOutput& out, const Report& report,
                           const StepTimeBand& band) {
  const bool trace_to_stdout = a.trace_file == "-";
  std::optional<Report> analytic;
  BreakdownReport event_parts;  // the event's on the stage the estimate's parts describe
  if (a.compare_analytic) {
    analytic = out.estimate;
    event_parts = breakdown_on_stage(out, analytic->breakdown.stage);
  }

  const Fields inputs = report_input_fields(scenario, options.workload, a.calibration_file);
  switch (a.format) {
    case OutputFormat::json: {
      nlohmann::json j = report_json(report, band, inputs, scenario, catalogs, a.explain);
      j["stages"] = stages_json(out);
      j["simulation"] = to_json(simulation_fields(&out, options.step.scope, a.timing))["simulation"];
      if (analytic) {
        j["analytic"] = to_json(*analytic);
        j["analytic_difference"] = (report.step_time_s - analytic->step_time_s) / analytic->step_time_s;
        j["comparison"] = {{"stage", analytic->breakdown.stage},
                           {"event", to_json(event_parts)},
                           {"analytic", to_json(analytic->breakdown)}};
      }
      std::cout << j.dump(2) << "\n";
      break;
    }
    case OutputFormat::csv: {
      std::vector<Fields> rows = {
          report_csv_row(inputs, report, simulation_fields(&out, options.step.scope, a.timing))};
      if (analytic)
        rows.push_back(
            report_csv_row(inputs, *analytic, simulation_fields(nullptr, options.step.scope, a.timing)));
      write_csv(rows, std::cout);
      break;
    }
    case OutputFormat::table: {
      // With the trace on stdout, the table goes to stderr.
      std::ostream& table = trace_to_stdout ? std::cerr : std::cout;
      print_report_table(report, band, scenario, table);
      print_stage_table(out, a.timing, table);
      if (analytic) print_comparison_table(report, event_parts, *analytic, table);
      if (a.explain) {
        table << "\n";
        print_report_explain(report, table);
        print_framework_explain(scenario.framework,
                                catalogs.frameworks.resolve(kDefaultFramework, "catalog", "framework"),
                                table);
      }
      break;
    }
  }
}

}  // namespace

Command add_simulate_command(CLI::App& root, const CliEnv& env) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = root.add_subcommand(
      "simulate",
      "Event simulation of one training step: step time, MFU, breakdown, memory, timeline (the main job)");
  add_scenario_options(*cmd, args->scenario);
  add_output_options(*cmd, args->format, &args->explain);
  add_no_timing_option(*cmd, args->timing);
  CLI::Option* trace = cmd->add_option(
      "--trace", args->trace_file,
      "Write a Chrome-trace JSON timeline (open in ui.perfetto.dev); '-' writes it to stdout and the "
      "table to stderr (not with --json or --csv)");
  cmd->add_option(
         "--trace-ranks", args->trace_ranks,
         "Ranks to trace: 0,8,16 or stage:N (every rank of stage N) or dp:N (every rank of data-parallel "
         "replica N); default one per stage. Ranks other than a stage's first make the run simulate "
         "every rank (as --full)")
      ->needs(trace);
  cmd->add_option(
         "--trace-max-mb", args->trace_max_mb,
         "Size cap of the trace in MB (default 100; 0: none). Past it the last micro-batches are left "
         "out, then the last ranks, with a warning")
      ->needs(trace);
  cmd->add_flag("--full", args->full, "Simulate every rank, not one representative per pipeline stage");
  add_fault_options(*cmd, args->faults, true);
  cmd->add_option("--calibration", args->calibration_file,
                  "calibration.json with fitted efficiencies per GPU kind");
  cmd->add_flag("--compare-analytic", args->compare_analytic,
                "Also print the closed-form estimate and the difference (with --csv, a second row)");
  cmd->add_flag("--require-fit", args->require_fit, "Exit 3 when the layout does not fit in GPU memory");
  add_framework_options(*cmd, args->framework);
  add_progress_options(*cmd, args->progress);
  return {
      cmd, [args, env] {
        const ProgressMode progress_shown = progress_mode(args->progress, env.progress);
        const Catalogs catalogs = load_cli_catalogs(env, args->scenario.catalogs);
        const bool trace_to_stdout = args->trace_file == "-";
        if (trace_to_stdout && args->format != OutputFormat::table)
          throw InputError("command line", "--trace",
                           "'-' writes the trace to stdout, where the report goes with --json or --csv (give "
                           "the trace a file name)");
        if (!(args->trace_max_mb >= 0))
          throw InputError("command line", "--trace-max-mb",
                           fmt::format("must be 0 (no cap) or more, got {:g}", args->trace_max_mb));
        const Scenario scenario = resolve_scenario(args->scenario, catalogs);
        SimulateOptions options = simulate_options_of(*args, scenario);

        // The line is blanked before anything else is printed (or the error line, by unwinding).
        std::unique_ptr<ProgressLine> progress = stderr_progress_line(progress_shown);
        if (progress) options.step.progress = progress->observer();
        const SimulationOutput out =
            blaming_flags(args->scenario, [&] { return simulate(scenario, options); });
        options.step.progress = nullptr;  // before the line it reports to goes
        progress.reset();
        Report report = out.report;
        if (!args->trace_file.empty()) write_trace(*args, scenario, out, report);
        const StepTimeBand band = attach_step_time_band(env, scenario, catalogs, report);
        print_simulate_report(*args, scenario, catalogs, options, out, report, band);
        if (!args->trace_file.empty() && !trace_to_stdout && args->format == OutputFormat::table)
          fmt::print(std::cout, "trace written to {} (open in https://ui.perfetto.dev)\n", args->trace_file);
        // The hard check comes after the report, so a sweep keeps the numbers of what failed.
        if (args->require_fit && !report.memory.fits)
          throw InfeasibleError(scenario.file + ": memory: " + memory_shortfall_text(report.memory) +
                                " (--require-fit)");
        return 0;
      }};
}

}  // namespace simrun::cli
