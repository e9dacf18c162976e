// The comparison `simrun validate` prints and writes (DESIGN.md "Validation output"): every op
// of the step, predicted by the simulator and measured on the ranks, grouped by the trace's slice
// name and the op's shape ("fc1 fwd" 256×1024×256), with the per-step totals.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simrun/sim/workload/workload.hpp"

namespace simrun::exec {

// Seconds per task, per rank (index: world rank, then task of that rank's stage program).
using TaskSeconds = std::vector<std::vector<double>>;

struct ComparisonRow {
  std::string name;   // the trace's slice name, e.g. "fc1 fwd", "all_reduce tp", "send pp_act"
  std::string shape;  // e.g. "gemm 256x2048x256", "attention b1 h2 s256 d64", "1.05 MB over 2"
  int64_t calls = 0;  // over every rank of the step
  double predicted_s = 0, measured_s = 0, calibrated_s = 0;  // per call (mean over the calls)
  double error() const { return measured_s > 0 ? (predicted_s - measured_s) / measured_s : 0; }
  double calibrated_error() const { return measured_s > 0 ? (calibrated_s - measured_s) / measured_s : 0; }
};

struct StepComparison {
  double predicted_s = 0;   // the simulator on the device entry the microbenchmark measured
  double measured_s = 0;    // median over the measured steps of the slowest rank's finish
  double calibrated_s = 0;  // the simulator with the fitted calibration.json
  double error() const { return measured_s > 0 ? (predicted_s - measured_s) / measured_s : 0; }
  double calibrated_error() const { return measured_s > 0 ? (calibrated_s - measured_s) / measured_s : 0; }
};

struct Comparison {
  StepComparison step;
  std::vector<ComparisonRow> ops;  // by measured time per step, largest first
};

// An op's shape as the comparison and the fit name it.
std::string shape_label(const StageProgram& program, const Task& task, int64_t group_ranks);

// `stage_of[rank]` the rank's pipeline stage; `group_ranks(rank, task)` a collective's group size.
Comparison compare_ops(const Workload& workload, const std::vector<int64_t>& stage_of,
                       const std::vector<int64_t>& group_size_of_kind, const TaskSeconds& predicted,
                       const TaskSeconds& measured, const TaskSeconds& calibrated);

void print_comparison(const Comparison& c, std::ostream& out, size_t max_rows);
nlohmann::json comparison_json(const Comparison& c);

}  // namespace simrun::exec
