// What the measured steps say (measurement.hpp).
#include "measurement.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace simrun::exec {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> pack_spans(const std::vector<StepTimes>& steps) {
  std::vector<double> out;
  for (const StepTimes& t : steps)
    for (size_t i = 0; i < t.start_ns.size(); ++i) {
      out.push_back(double(t.start_ns[i]));
      out.push_back(double(t.end_ns[i]));
      out.push_back(double(t.kernel_ns[i]));
    }
  return out;
}

std::vector<MeasuredSpans> unpack_spans(const std::vector<std::vector<double>>& all, size_t steps) {
  std::vector<MeasuredSpans> out(all.size());
  for (size_t r = 0; r < all.size(); ++r) {
    const size_t tasks = all[r].size() / (3 * steps);
    for (size_t s = 0; s < steps; ++s) {
      StepTimes t{std::vector<int64_t>(tasks), std::vector<int64_t>(tasks), std::vector<int64_t>(tasks), 0};
      for (size_t i = 0; i < tasks; ++i) {
        t.start_ns[i] = int64_t(all[r][3 * (s * tasks + i)]);
        t.end_ns[i] = int64_t(all[r][3 * (s * tasks + i) + 1]);
        t.kernel_ns[i] = int64_t(all[r][3 * (s * tasks + i) + 2]);
      }
      out[r].steps.push_back(std::move(t));
    }
  }
  return out;
}

TaskSeconds measured_durations(const Workload& w, const RankLayout& layout,
                               const std::vector<MeasuredSpans>& m) {
  TaskSeconds out(m.size());
  for (size_t r = 0; r < m.size(); ++r) {
    const StageProgram& p = w.stages[size_t(layout.coord_of(int64_t(r)).pp)];
    out[r].assign(p.tasks.size(), 0.0);
    std::vector<double> per_step(m[r].steps.size());
    for (uint32_t i = 0; i < p.tasks.size(); ++i) {
      const Task& t = p.tasks[i];
      const std::vector<int64_t> members = t.kind == TaskKind::collective ? layout.group(t.group, int64_t(r))
                                                                          : std::vector<int64_t>{int64_t(r)};
      for (size_t s = 0; s < m[r].steps.size(); ++s) {
        if (t.kind == TaskKind::compute) {
          per_step[s] = double(m[r].steps[s].kernel_ns[i]) * 1e-9;
          continue;
        }
        int64_t last_start = 0;
        for (int64_t g : members) last_start = std::max(last_start, m[size_t(g)].steps[s].start_ns[i]);
        per_step[s] = double(std::max<int64_t>(0, m[r].steps[s].end_ns[i] - last_start)) * 1e-9;
      }
      out[r][i] = median(per_step);
    }
  }
  return out;
}

TaskSeconds simulated_durations(const Workload& w, const RankLayout& layout, const StepResult& step) {
  TaskSeconds out(size_t(layout.world_size()));
  for (int64_t r = 0; r < layout.world_size(); ++r)
    out[size_t(r)].assign(w.stages[size_t(layout.coord_of(r).pp)].tasks.size(), 0.0);
  for (const TaskSpan& s : step.spans) out[size_t(s.rank)][s.task] = (s.end - s.start).seconds();
  return out;
}

TaskSeconds with_kernel_times(const Workload& w, const std::vector<int64_t>& stage_of,
                              const ComputeModel& kernels, TaskSeconds simulated) {
  for (size_t r = 0; r < stage_of.size(); ++r) {
    const StageProgram& p = w.stages[size_t(stage_of[r])];
    for (uint32_t i = 0; i < p.tasks.size(); ++i)
      if (p.tasks[i].kind == TaskKind::compute) simulated[r][i] = kernels.op_seconds(p.shape(p.tasks[i]));
  }
  return simulated;
}

void fit_samples(const Workload& w, const ClusterSpec& cluster, const TaskSeconds& measured,
                 std::vector<KernelSample>& kernels, std::vector<CollectiveSample>& collectives) {
  const RankLayout layout(w.layout, cluster.gpus_per_node);
  std::map<OpShape, std::vector<double>> by_shape;
  std::map<std::tuple<int, int64_t, double, int>, std::vector<double>> by_collective;
  for (size_t r = 0; r < measured.size(); ++r) {
    const StageProgram& p = w.stages[size_t(layout.coord_of(int64_t(r)).pp)];
    for (uint32_t i = 0; i < p.tasks.size(); ++i) {
      const Task& t = p.tasks[i];
      if (t.kind == TaskKind::compute) {
        by_shape[p.shape(t)].push_back(measured[r][i]);
      } else if (t.kind == TaskKind::collective) {
        const bool inside = group_inside_scale_up(cluster, rank_group(w.layout, t.group));
        const LinkClass link = inside ? LinkClass::scale_up : LinkClass::scale_out;
        by_collective[{int(t.coll), layout.group_size(t.group), t.comm_bytes, int(link)}].push_back(
            measured[r][i]);
      }
      // Sends are left out: a send's end is seen at the rank's next test, after the kernel it
      // overlapped (step_runner.hpp), so its time is not the link's.
    }
  }
  for (const auto& [shape, times] : by_shape) kernels.push_back({shape, median(times), double(times.size())});
  for (const auto& [key, times] : by_collective)
    collectives.push_back({CollectiveOp(std::get<0>(key)), std::get<1>(key), std::get<2>(key),
                           LinkClass(std::get<3>(key)), median(times), double(times.size())});
}

}  // namespace simrun::exec
