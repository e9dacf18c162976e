// The cost pass: a built workload (workload.hpp, shapes and no times) timed on one GPU kind by
// the compute model. Both fidelities read these times: the event simulation for every compute
// task, the closed-form estimate for its probe's ops. Re-costing for another GPU or another
// calibration re-times the shapes; it does not rebuild the graph. Collectives are not timed
// here: the event simulation times them on the network as they meet other traffic, the
// estimate with the closed forms of collective_cost.hpp.
#pragma once

#include <vector>

#include "simrun/common/units.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// Kernel times of one stage program's shapes (index = Task::shape), launch overhead included.
struct ProgramCost {
  std::vector<TimeNs> shape_time;
  GpuSpec::FlexDispatcher flex_dispatcher;  // the GPU's dispatcher kernel throughputs
  // A task's time on its stream: a compute task's kernel; zero for collectives, sends and
  // receives (timed by whoever runs them).
  TimeNs of(const Task& t) const { return t.shape == kNoShape ? TimeNs{0} : shape_time[t.shape]; }
  // The least time of a collective whose bytes the MoE flex dispatcher's kernels move
  // (Task::comm_kernel): its bytes, the bytes a rank receives, each token once per destination
  // rank with its own share, as DeepEP counts them (workload_builder_moe.cpp ep_all_to_all), at the
  // GPU's measured dispatch or combine throughput (GpuSpec::flex_dispatcher). 0 for NCCL's
  // kernels and on a GPU with no measured figure. Both fidelities time such a collective as the
  // longer of this and its fabric time (docs/model.md "What one step contains", MoE).
  double comm_kernel_s(const Task& t) const;
};

struct WorkloadCost {
  std::vector<ProgramCost> stages;  // index = stage
};

ProgramCost cost_program(const StageProgram& program, const ComputeModel& compute);
WorkloadCost cost_workload(const Workload& workload, const ComputeModel& compute);

}  // namespace simrun
