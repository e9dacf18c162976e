// The cost pass (workload_cost.hpp): every distinct shape of a program timed once.
#include "simrun/sim/cost/workload_cost.hpp"

namespace simrun {

ProgramCost cost_program(const StageProgram& program, const ComputeModel& compute) {
  ProgramCost cost;
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
