// Private to the workload builder: what the host does to issue a stage program (docs/model.md
// "Host overhead"): how many launches each task costs the host (CUDA graphs issue a captured
// region as one) and where the host waits for the GPU (MoE dispatcher, gradient clipping).
#pragma once

#include "simrun/sim/workload/workload.hpp"

namespace simrun::detail {

// Sets Task::host_launches and Task::host_syncs over `program` (built for `scenario`).
void mark_host_work(StageProgram& program, const Scenario& scenario, const WorkloadOptions& options);

}  // namespace simrun::detail
