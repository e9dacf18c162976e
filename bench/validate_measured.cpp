// validate_measured: the simulator's yardstick. Reads validation/data/measured-runs.json
// (107 published training runs with their layouts), builds each run's scenario, simulates one
// step (event simulation, representative ranks) and prints predicted vs measured step time,
// the error, and the mean absolute percentage error (MAPE) over the supported runs.
//
//   build/bench/validate_measured [--verbose] [--group NAME] [--json] [--calibration FILE]
//                                 [--trace ID FILE]   (Chrome trace of run ID, for Perfetto)
//                                 [--tflops-convention causal|non-causal]
//   (exploration, not the published figures: rows giving only TFLOP/s per GPU, nemo_cp, get a
//   step time derived from Megatron's FLOP count in that convention)
//
// The comparison is on step time, which has no FLOP convention (the sources' TFLOP/s differ:
// recompute-inclusive, causal or not). Reference time: measured.iteration_s, else
// derived.iteration_s (computed by the reference from the source's own numbers).
//
// One set of defaults for every run (no per-run tuning, no use of the measured answer): the
// mapping of sim/measured_runs.hpp (the memory test uses the same), printed with --defaults.
// Unsupported: the non-standard H100 96 GB HBM2e 500 W SKU (not in the GPU catalog), runs
// without a layout or without a reference time.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/validation/measured_runs.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/event/trace.hpp"

using namespace simrun;
using nlohmann::json;

namespace {

struct Case {
  std::string id, group;
  std::string status = "ok";  // ok | unsupported: why
  Scenario scenario;
  SimulateOptions options;
  double reference_s = 0;
  std::string reference_kind;
  std::vector<std::string> defaults_used;
};

// The command line. Exploration knobs (not used for the published figures) override one default
// for all runs; --tflops-convention causal|non-causal: rows that give only TFLOP/s per GPU
// (nemo_cp) get a step time derived in that convention (the source does not state its own).
struct Args {
  bool verbose = false, as_json = false;
  std::string only_group, calibration_file;
  std::optional<double> step_overhead, overlap_slowdown, eager_factor;
  std::optional<AttentionFlops> tflops_convention;
  std::string trace_id, trace_file;  // --trace ID FILE: the Chrome trace of one run
};

std::optional<Args> parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--verbose"))
      a.verbose = true;
    else if (!std::strcmp(argv[i], "--json"))
      a.as_json = true;
    else if (!std::strcmp(argv[i], "--group") && i + 1 < argc)
      a.only_group = argv[++i];
    else if (!std::strcmp(argv[i], "--trace") && i + 2 < argc) {
      a.trace_id = argv[++i];
      a.trace_file = argv[++i];
    } else if (!std::strcmp(argv[i], "--calibration") && i + 1 < argc)
      a.calibration_file = argv[++i];
    else if (!std::strcmp(argv[i], "--step-overhead") && i + 1 < argc)
      a.step_overhead = std::stod(argv[++i]);
    else if (!std::strcmp(argv[i], "--overlap-slowdown") && i + 1 < argc)
      a.overlap_slowdown = std::stod(argv[++i]);
    else if (!std::strcmp(argv[i], "--eager-factor") && i + 1 < argc)
      a.eager_factor = std::stod(argv[++i]);
    else if (!std::strcmp(argv[i], "--tflops-convention") && i + 1 < argc &&
             (!std::strcmp(argv[i + 1], "causal") || !std::strcmp(argv[i + 1], "non-causal")))
      a.tflops_convention =
          !std::strcmp(argv[++i], "causal") ? AttentionFlops::causal : AttentionFlops::non_causal;
    else
      return std::nullopt;
  }
  return a;
}

// A run as this program simulates it: a row with only TFLOP/s per GPU gets its reference step
// time from Megatron's FLOP count under --tflops-convention.
Case case_of(const MeasuredRun& run, const Args& args) {
  Case c{run.id,
         run.group,
         run.simulatable() ? "ok" : "unsupported: " + run.unsupported,
         run.scenario,
         {},
         run.reference_s,
         run.reference_kind,
         run.defaults_used};
  c.options.workload = run.workload;
  c.options.memory = run.memory;
  if (args.tflops_convention && run.has_scenario() && run.reference_s <= 0 && run.tflops_per_gpu > 0 &&
      run.unsupported.rfind("no reference step time", 0) == 0) {
    const Layout& l = run.scenario.layout;
    c.reference_s = step_flops(run.scenario.model, l, *args.tflops_convention).model /
                    (run.tflops_per_gpu * 1e12 * double(l.world_size()));
    c.reference_kind = std::string("from TFLOP/s, ") +
                       (*args.tflops_convention == AttentionFlops::causal ? "causal" : "non-causal");
    c.status = "ok";
  }
  return c;
}

// --verbose: the step's breakdown, then stage 0's compute time by phase and op (the top 12).
void print_breakdown(const SimulationOutput& o) {
  const auto& b = o.report.breakdown;
  std::cout << fmt::format(
      "    fwd {:.3f} bwd {:.3f} recomp {:.3f} opt {:.3f} | exposed comm {:.3f} "
      "(of total: tp {:.3f}/{:.3f} pp {:.3f}/{:.3f} dp {:.3f}/{:.3f} ep {:.3f}/{:.3f}) "
      "bubble {:.3f} | mfu {:.3f} | mem {:.1f} GB{}\n",
      b.forward_s, b.backward_s, b.recompute_s, b.optimizer_s, b.exposed_comm_s, b.tp_exposed_s, b.tp_comm_s,
      b.pp_exposed_s, b.pp_comm_s, b.dp_exposed_s, b.dp_comm_s, b.ep_exposed_s, b.ep_comm_s, b.bubble_s,
      o.report.mfu, o.report.memory.peak_bytes_per_gpu / 1e9, o.report.memory.fits ? "" : " (does not fit)");
  std::map<std::string, double> per_op;
  double total = 0;
  for (const Task& t : o.workload.stages[0].tasks)
    if (t.kind == TaskKind::compute) {
      const double seconds = o.cost.stages[0].of(t).seconds();
      per_op[std::string(to_string(t.phase)).substr(0, 3) + ":" + to_string(t.op)] += seconds;
      total += seconds;
    }
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [k, v] : per_op) top.emplace_back(v, k);
  std::sort(top.rbegin(), top.rend());
  std::string line = "    stage0 ops:";
  for (size_t i = 0; i < std::min<size_t>(top.size(), 12); ++i)
    line += fmt::format(" {} {:.0f}%", top[i].second, 100 * top[i].first / total);
  std::cout << line << "\n";
}

// The errors over the simulated runs, in the order they ran.
struct Tally {
  double sum_abs = 0;
  int n_ok = 0, n_within = 0;
  std::map<std::string, std::pair<double, int>> per_group;
  double worst = 0;
  std::string worst_id;
  std::vector<std::string> not_fitting;

  void add(const Case& c, double err, bool fits) {
    sum_abs += std::abs(err);
    ++n_ok;
    if (std::abs(err) <= 0.15) ++n_within;
    auto& g = per_group[c.group];
    g.first += std::abs(err);
    g.second += 1;
    if (std::abs(err) > worst) {
      worst = std::abs(err);
      worst_id = c.id;
    }
    if (!fits) not_fitting.push_back(c.id);
  }
  double mape() const { return n_ok ? sum_abs / n_ok : 0; }
};

// Simulates a supported run into its row (and, without --json, its line); a scenario the
// simulator refuses turns the run unsupported.
void simulate_case(Case& c, const Args& args, const Calibration& calibration, Tally& tally, json& row) {
  c.options.calibration = calibration;
  if (args.step_overhead) c.options.workload.step_overhead_s = *args.step_overhead;
  if (args.overlap_slowdown) c.options.step.overlap_slowdown = *args.overlap_slowdown;
  if (args.eager_factor) c.options.workload.eager_memory_factor = *args.eager_factor;
  try {
    c.options.step.record_trace = c.id == args.trace_id;
    const SimulationOutput o = simulate(c.scenario, c.options);
    if (c.id == args.trace_id) {
      std::ofstream f(args.trace_file);
      if (!f) throw InputError("command line", "--trace", "cannot write " + args.trace_file);
      write_chrome_trace(f, c.scenario, o.workload, o.step);
    }
    const double pred = o.report.step_time_s;
    const double err = (pred - c.reference_s) / c.reference_s;
    tally.add(c, err, o.report.memory.fits);
    row["predicted_s"] = pred;
    row["reference_s"] = c.reference_s;
    row["reference"] = c.reference_kind;
    row["error"] = err;
    row["mfu"] = o.report.mfu;
    row["fits"] = o.report.memory.fits;
    row["defaults"] = c.defaults_used;
    if (args.as_json) return;
    std::string notes = c.reference_kind == "measured" || c.reference_kind == "derived"
                            ? c.reference_kind
                            : "derived " + c.reference_kind;
    for (const auto& d : c.defaults_used) notes += ", " + d;
    if (!o.report.memory.fits) notes += ", DOES NOT FIT";
    std::cout << fmt::format("{:<46} {:<13} {:>9.3f}s {:>9.3f}s {:>+7.1f}% {:>7.2f}s  {}\n", c.id, c.group,
                             pred, c.reference_s, 100 * err, o.wall_s, notes);
    if (args.verbose) print_breakdown(o);
  } catch (const InputError& e) {
    c.status = std::string("unsupported: ") + e.what();
  }
}

void print_summary(const Tally& tally, const json& out_rows, bool as_json) {
  const double mape = tally.mape();
  if (as_json) {
    json g = json::object();
    for (const auto& [k, v] : tally.per_group) g[k] = v.first / v.second;
    std::cout << json{{"rows", out_rows},
                      {"supported", tally.n_ok},
                      {"within_15pct", tally.n_within},
                      {"mape", mape},
                      {"not_fitting", tally.not_fitting},
                      {"defaults", measured_run_defaults_text()},
                      {"mape_by_group", g}}
                     .dump(1)
              << "\n";
    return;
  }
  std::cout << fmt::format("\nsupported runs: {}   within 15%: {}   MAPE: {:.2f}%   worst: {} ({:.1f}%)\n",
                           tally.n_ok, tally.n_within, 100 * mape, tally.worst_id, 100 * tally.worst);
  for (const auto& [k, v] : tally.per_group)
    std::cout << fmt::format("  {:<13} {:>3} runs  MAPE {:.2f}%\n", k, v.second, 100 * v.first / v.second);
  std::cout << fmt::format("predicted not to fit: {}\n", tally.not_fitting.size());
  for (const auto& id : tally.not_fitting) std::cout << "  " << id << "\n";
  std::cout << "\ndefaults for unstated fields and framework behaviour (sim/measured_runs.hpp):\n"
            << measured_run_defaults_text();
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Args> parsed = parse_args(argc, argv);
  if (!parsed) {
    std::cerr << "usage: validate_measured [--verbose] [--group NAME] [--json] [--calibration FILE] "
                 "[--trace ID FILE] [--tflops-convention causal|non-causal]\n";
    return 2;
  }
  const Args& args = *parsed;
  try {
    const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
    const std::vector<MeasuredRun> runs =
        load_measured_runs(std::string(SIMRUN_VALIDATION_DATA_DIR) + "/measured-runs.json", catalogs);
    Calibration calibration;
    if (!args.calibration_file.empty()) calibration = Calibration::load(args.calibration_file);

    json out_rows = json::array();
    Tally tally;
    if (!args.as_json)
      std::cout << fmt::format("{:<46} {:<13} {:>10} {:>10} {:>8} {:>8}  {}\n", "id", "group", "predicted",
                               "reference", "error", "wall", "notes");
    for (const MeasuredRun& run : runs) {
      if (!args.only_group.empty() && run.group != args.only_group) continue;
      Case c = case_of(run, args);
      json row = {{"id", c.id}, {"group", c.group}};
      if (c.status == "ok") simulate_case(c, args, calibration, tally, row);
      if (c.status != "ok") {
        row["status"] = c.status;
        if (!args.as_json)
          std::cout << fmt::format("{:<46} {:<13} {:>10} {:>10} {:>8} {:>8}  {}\n", c.id, c.group, "-",
                                   c.reference_s > 0 ? fmt::format("{:.3f}s", c.reference_s) : "-", "-", "-",
                                   c.status);
      }
      out_rows.push_back(row);
    }
    print_summary(tally, out_rows, args.as_json);
    return 0;
  } catch (const InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
