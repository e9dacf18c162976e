// validate_measured: `simrun accuracy` on the shipped yardstick (validation/accuracy.hpp) with
// exploration knobs the command does not offer. Same table and figures as
//   simrun accuracy [--group NAME] [--json] [--calibration FILE]
// plus
//   build/bench/validate_measured [--verbose]          each run's breakdown and top ops
//                                 [--trace ID FILE]    Chrome trace of run ID, for Perfetto
//                                 [--tflops-convention causal|non-causal]
//                                 [--step-overhead S] [--overlap-slowdown F] [--eager-factor F]
// (exploration, not the published figures: --tflops-convention gives the rows that state only
// TFLOP/s per GPU, nemo_cp, a step time derived from Megatron's FLOP count in that convention;
// the others override one default for every run).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/sim/event/trace.hpp"
#include "simrun/validation/accuracy.hpp"

using namespace simrun;

namespace {

struct Args {
  bool verbose = false, as_json = false;
  std::string calibration_file, trace_file;
  AccuracyOptions options;
};

std::optional<Args> parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--verbose"))
      a.verbose = true;
    else if (!std::strcmp(argv[i], "--json"))
      a.as_json = true;
    else if (!std::strcmp(argv[i], "--group") && i + 1 < argc)
      a.options.group = argv[++i];
    else if (!std::strcmp(argv[i], "--trace") && i + 2 < argc) {
      a.options.trace_id = argv[++i];
      a.trace_file = argv[++i];
    } else if (!std::strcmp(argv[i], "--calibration") && i + 1 < argc)
      a.calibration_file = argv[++i];
    else if (!std::strcmp(argv[i], "--step-overhead") && i + 1 < argc)
      a.options.step_overhead_s = std::stod(argv[++i]);
    else if (!std::strcmp(argv[i], "--overlap-slowdown") && i + 1 < argc)
      a.options.overlap_slowdown = std::stod(argv[++i]);
    else if (!std::strcmp(argv[i], "--eager-factor") && i + 1 < argc)
      a.options.eager_memory_factor = std::stod(argv[++i]);
    else if (!std::strcmp(argv[i], "--tflops-convention") && i + 1 < argc &&
             (!std::strcmp(argv[i + 1], "causal") || !std::strcmp(argv[i + 1], "non-causal")))
      a.options.tflops_convention =
          !std::strcmp(argv[++i], "causal") ? AttentionFlops::causal : AttentionFlops::non_causal;
    else
      return std::nullopt;
  }
  return a;
}

// --verbose: the step's breakdown, then stage 0's compute time by phase and op (the top 12).
std::string breakdown_text(const SimulationOutput& o) {
  const auto& b = o.report.breakdown;
  std::string text = fmt::format(
      "    fwd {:.3f} bwd {:.3f} recomp {:.3f} opt {:.3f} | exposed comm {:.3f} "
      "(of total: tp {:.3f}/{:.3f} pp {:.3f}/{:.3f} dp {:.3f}/{:.3f} ep {:.3f}/{:.3f}) "
      "bubble {:.3f} | mfu {:.3f} | mem {:.1f} GB{} | wall {:.2f}s\n",
      b.forward_s, b.backward_s, b.recompute_s, b.optimizer_s, b.exposed_comm_s, b.tp_exposed_s, b.tp_comm_s,
      b.pp_exposed_s, b.pp_comm_s, b.dp_exposed_s, b.dp_comm_s, b.ep_exposed_s, b.ep_comm_s, b.bubble_s,
      o.report.mfu, o.report.memory.peak_bytes_per_gpu / 1e9, o.report.memory.fits ? "" : " (does not fit)",
      o.wall_s);
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
  text += "    stage0 ops:";
  for (size_t i = 0; i < std::min<size_t>(top.size(), 12); ++i)
    text += fmt::format(" {} {:.0f}%", top[i].second, 100 * top[i].first / total);
  return text + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Args> parsed = parse_args(argc, argv);
  if (!parsed) {
    std::cerr << "usage: validate_measured [--verbose] [--group NAME] [--json] [--calibration FILE] "
                 "[--trace ID FILE] [--tflops-convention causal|non-causal] [--step-overhead S] "
                 "[--overlap-slowdown F] [--eager-factor F]\n";
    return 2;
  }
  Args& args = *parsed;
  try {
    const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
    const std::string file = std::string(SIMRUN_VALIDATION_DATA_DIR) + "/measured-runs.json";
    const std::vector<MeasuredRun> runs = measured_runs_of(load_json_file(file), file, catalogs);
    if (!args.calibration_file.empty()) args.options.calibration = Calibration::load(args.calibration_file);
    std::map<std::string, std::string> breakdowns;  // --verbose: by run id
    args.options.on_simulated = [&](const MeasuredRun& run, const RunScore&, const SimulationOutput& o) {
      if (args.verbose) breakdowns[run.id] = breakdown_text(o);
      if (run.id != args.options.trace_id) return;
      std::ofstream f(args.trace_file);
      if (!f) throw InputError("command line", "--trace", "cannot write " + args.trace_file);
      write_chrome_trace(f, run.scenario, o.workload, o.step);
    };
    const AccuracyScore score = score_accuracy(runs, args.options);
    if (args.as_json) {
      std::cout << accuracy_json(score).dump(1) << "\n";
      return 0;
    }
    std::ostringstream table;
    write_accuracy_table(score, table);
    // The table with each run's breakdown under its line (--verbose).
    std::istringstream lines(table.str());
    for (std::string line; std::getline(lines, line);) {
      std::cout << line << "\n";
      const std::string id = line.substr(0, line.find(' '));
      if (auto it = breakdowns.find(id); it != breakdowns.end()) std::cout << it->second;
    }
    std::cout << "\ndefaults for unstated fields and framework behaviour (validation/measured_runs.hpp):\n"
              << measured_run_defaults_text();
    return 0;
  } catch (const InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
