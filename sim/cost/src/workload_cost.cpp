// The cost pass (workload_cost.hpp): every distinct shape of a program timed once.
#include "simrun/sim/cost/workload_cost.hpp"

namespace simrun {

double ProgramCost::comm_kernel_s(const Task& t) const {
  const double rate = t.comm_kernel == CommKernel::flex_dispatch  ? flex_dispatcher.dispatch_bytes_per_s
                      : t.comm_kernel == CommKernel::flex_combine ? flex_dispatcher.combine_bytes_per_s
                                                                  : 0.0;
  return rate > 0 ? t.comm_bytes / rate : 0.0;
}

ProgramCost cost_program(const StageProgram& program, const ComputeModel& compute) {
  ProgramCost cost;
  cost.flex_dispatcher = compute.gpu().flex_dispatcher;
  cost.shape_time.reserve(program.shapes.size());
  for (const OpShape& shape : program.shapes) cost.shape_time.push_back(compute.op_time(shape));
  return cost;
}

WorkloadCost cost_workload(const Workload& workload, const ComputeModel& compute) {
  WorkloadCost cost;
  cost.stages.reserve(workload.stages.size());
  for (const StageProgram& stage : workload.stages) cost.stages.push_back(cost_program(stage, compute));
  return cost;
}

}  // namespace simrun
