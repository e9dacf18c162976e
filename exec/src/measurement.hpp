// What the measured steps say, op by op (exec/, private): each rank's spans as rank 0 gathers
// them, the time of each task as the comparison and the fit read it, and the fit's samples.
#pragma once

#include <vector>

#include "simrun/exec/calibration_fit.hpp"
#include "simrun/exec/comparison.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/event/step_executor.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "step_runner.hpp"

namespace simrun::exec {

double median(std::vector<double> v);

// One rank's measured steps, as rank 0 gathered them.
struct MeasuredSpans {
  std::vector<StepTimes> steps;
};

// Each rank's steps from what gather_on_rank0 brought: per step, per task, start, end and CPU time.
std::vector<MeasuredSpans> unpack_spans(const std::vector<std::vector<double>>& all, size_t steps);
// The same three numbers of every task of every step, for unpack_spans on rank 0.
std::vector<double> pack_spans(const std::vector<StepTimes>& steps);

// Seconds per task per rank, the median over the measured steps. A compute task: its kernel's own
// time (StepTimes::kernel_ns). A send: its end less its start. A collective: its end less the
// last member's start, the time the collective itself took once every member had reached it (the
// wait for a late member is that member's compute, which the step's other tasks account for);
// each rank's times count from its own start of the step, right after a barrier.
TaskSeconds measured_durations(const Workload& w, const RankLayout& layout,
                               const std::vector<MeasuredSpans>& m);

// Seconds per task per rank of a simulated step (every rank traced).
TaskSeconds simulated_durations(const Workload& w, const RankLayout& layout, const StepResult& step);

// `simulated` with every compute task's time replaced by its kernel's alone on `kernels`' device.
TaskSeconds with_kernel_times(const Workload& w, const std::vector<int64_t>& stage_of,
                              const ComputeModel& kernels, TaskSeconds simulated);

// The kernels and collectives of the measured step as the fit's samples: one per distinct shape
// (or collective, size and link class on `cluster`), its median over the ranks and tasks that ran
// it, weighted by its calls. Pipeline sends are left out (their end is seen late).
void fit_samples(const Workload& w, const ClusterSpec& cluster, const TaskSeconds& measured,
                 std::vector<KernelSample>& kernels, std::vector<CollectiveSample>& collectives);

}  // namespace simrun::exec
