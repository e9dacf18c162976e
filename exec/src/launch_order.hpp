// The order in which the cuda backend's host launches a stage program (exec/, private; no CUDA in
// it, so that it is tested everywhere). A GPU stream runs what is launched on it in launch order,
// and a launch may only wait for events already recorded: the launch order is a topological order
// of the tasks' dependencies in which each stream's tasks keep their program order (the event
// simulation's rule, sim/event/step_executor.hpp). Pipeline receives run on a stream per source
// stage, sends on a stream per destination stage, so that a receive waiting for its message never
// holds up one from the other direction; NCCL matches a pair's sends and receives in launch order,
// which must then be the receives' program order on the peer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simrun/sim/workload/workload.hpp"

namespace simrun::exec {

// The lane (GPU stream) a task launches on: its workload stream, or for pipeline traffic one lane
// per peer stage beyond the workload's streams.
struct Lanes {
  std::vector<int32_t> lane_of;  // per task
  int32_t count = 0;
  std::vector<int64_t> peer_stage;  // per lane: the peer stage of a pipeline lane, -1 for the others
};
Lanes launch_lanes(const StageProgram& program);

// The tasks in launch order (every task once). Throws std::runtime_error where the dependencies
// hold a cycle.
std::vector<uint32_t> launch_order(const StageProgram& program, const Lanes& lanes);

// Why NCCL could not match this program's pipeline traffic in launch order (a send to a stage
// launched after another whose receive comes later in the peer's program), or "".
std::string pipeline_order_mismatch(const StageProgram& program, const std::vector<uint32_t>& order);

}  // namespace simrun::exec
