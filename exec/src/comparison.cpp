// The comparison (comparison.hpp).
#include "simrun/exec/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>

#include "simrun/sim/event/trace.hpp"

namespace simrun::exec {

std::string shape_label(const StageProgram& program, const Task& task, int64_t group_ranks) {
  if (task.kind != TaskKind::compute)
    return fmt::format("{:.3g} MB over {}", task.comm_bytes / 1e6,
                       task.kind == TaskKind::collective ? group_ranks : int64_t(2));
  const OpShape& s = program.shape(task);
  switch (s.cls) {
    case OpClass::gemm:
      return s.batch > 1 ? fmt::format("gemm {}x{}x{} x{}", s.m, s.n, s.k, s.batch)
                         : fmt::format("gemm {}x{}x{}", s.m, s.n, s.k);
    case OpClass::attention_fwd:
    case OpClass::attention_bwd:
      return fmt::format("attention t{} s{} h{} d{}", s.tokens, s.seq_kv, s.heads, s.head_dim);
    case OpClass::memory:
      return fmt::format("{:.3g} MB", (s.bytes + s.serial_bytes) / 1e6);
    case OpClass::host:
      return fmt::format("host {:.3g} ms", s.host_s * 1e3);
  }
  return "";
}

Comparison compare_ops(const Workload& workload, const std::vector<int64_t>& stage_of,
                       const std::vector<int64_t>& group_size_of_kind, const TaskSeconds& predicted,
                       const TaskSeconds& measured, const TaskSeconds& calibrated) {
  std::map<std::pair<std::string, std::string>, ComparisonRow> rows;
  for (size_t rank = 0; rank < stage_of.size(); ++rank) {
    const StageProgram& p = workload.stages[size_t(stage_of[rank])];
    for (uint32_t i = 0; i < p.tasks.size(); ++i) {
      const Task& t = p.tasks[i];
      if (t.kind == TaskKind::recv) continue;  // its time is its send's
      const std::string name = task_slice_name(t);
      const std::string shape = shape_label(p, t, group_size_of_kind[size_t(t.group)]);
      ComparisonRow& row = rows[{name, shape}];
      row.name = name;
      row.shape = shape;
      ++row.calls;
      row.predicted_s += predicted[rank][i];
      row.measured_s += measured[rank][i];
      row.calibrated_s += calibrated[rank][i];
    }
  }
  Comparison c;
  for (auto& [key, row] : rows) {
    const double calls = double(row.calls);
    row.predicted_s /= calls;
    row.measured_s /= calls;
    row.calibrated_s /= calls;
    c.ops.push_back(row);
  }
  std::sort(c.ops.begin(), c.ops.end(), [](const ComparisonRow& a, const ComparisonRow& b) {
    return a.measured_s * double(a.calls) > b.measured_s * double(b.calls);
  });
  return c;
}

namespace {

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }
std::string signed_percent(double e) { return fmt::format("{:+.1f}%", e * 100); }

}  // namespace

void print_comparison(const Comparison& c, std::ostream& out, size_t max_rows) {
  out << fmt::format("{:<22} {:<30} {:>6} {:>11} {:>11} {:>8} {:>11} {:>8}\n", "op", "shape", "calls",
                     "predicted", "measured", "error", "calibrated", "error");
  out << fmt::format("{:<22} {:<30} {:>6} {:>11} {:>11} {:>8} {:>11} {:>8}\n", "", "", "", "ms/call",
                     "ms/call", "", "ms/call", "");
  for (size_t i = 0; i < c.ops.size() && i < max_rows; ++i) {
    const ComparisonRow& r = c.ops[i];
    out << fmt::format("{:<22} {:<30} {:>6} {:>11} {:>11} {:>8} {:>11} {:>8}\n", r.name, r.shape, r.calls,
                       ms(r.predicted_s), ms(r.measured_s), signed_percent(r.error()), ms(r.calibrated_s),
                       signed_percent(r.calibrated_error()));
  }
  if (c.ops.size() > max_rows)
    out << fmt::format("({} more op kinds in report.json)\n", c.ops.size() - max_rows);
  out << fmt::format("{:<22} {:<30} {:>6} {:>11} {:>11} {:>8} {:>11} {:>8}\n", "step", "(slowest rank)", "",
                     ms(c.step.predicted_s), ms(c.step.measured_s), signed_percent(c.step.error()),
                     ms(c.step.calibrated_s), signed_percent(c.step.calibrated_error()));
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json ops = nlohmann::json::array();
  for (const ComparisonRow& r : c.ops)
    ops.push_back({{"name", r.name},
                   {"shape", r.shape},
                   {"calls", r.calls},
                   {"predicted_s", r.predicted_s},
                   {"measured_s", r.measured_s},
                   {"error", r.error()},
                   {"calibrated_s", r.calibrated_s},
                   {"calibrated_error", r.calibrated_error()}});
  return {{"step",
           {{"predicted_s", c.step.predicted_s},
            {"measured_s", c.step.measured_s},
            {"error", c.step.error()},
            {"calibrated_s", c.step.calibrated_s},
            {"calibrated_error", c.step.calibrated_error()}}},
          {"ops", ops}};
}

}  // namespace simrun::exec
