// The cuda backend's launch order (launch_order.hpp).
#include "launch_order.hpp"

#include <map>
#include <queue>
#include <stdexcept>

namespace simrun::exec {

Lanes launch_lanes(const StageProgram& program) {
  Lanes lanes;
  lanes.count = kStreamCount;
  lanes.peer_stage.assign(size_t(kStreamCount), -1);
  std::map<std::pair<bool, int64_t>, int32_t> pipeline;  // (send?, peer stage) -> lane
  for (const Task& t : program.tasks) {
    int32_t lane = int32_t(t.stream);
    if (t.kind == TaskKind::send || t.kind == TaskKind::recv) {
      const auto [it, added] =
          pipeline.emplace(std::pair{t.kind == TaskKind::send, t.peer_stage}, lanes.count);
      if (added) {
        ++lanes.count;
        lanes.peer_stage.push_back(t.peer_stage);
      }
      lane = it->second;
    }
    lanes.lane_of.push_back(lane);
  }
  return lanes;
}

// Kahn's algorithm over the dependencies plus each lane's program order, the lowest task index
// first among those ready: the program order wherever the dependencies allow it.
std::vector<uint32_t> launch_order(const StageProgram& program, const Lanes& lanes) {
  const size_t n = program.tasks.size();
  std::vector<std::vector<uint32_t>> dependents(n);
  std::vector<uint32_t> waiting(n, 0);
  std::vector<int64_t> last_on_lane(size_t(lanes.count), -1);
  for (uint32_t i = 0; i < n; ++i) {
    const Task& t = program.tasks[i];
    for (uint16_t d = 0; d < t.dep_count; ++d) {
      dependents[program.dep(t, d)].push_back(i);
      ++waiting[i];
    }
    int64_t& previous = last_on_lane[size_t(lanes.lane_of[i])];
    if (previous >= 0) {
      dependents[size_t(previous)].push_back(i);
      ++waiting[i];
    }
    previous = i;
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.push(i);
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const uint32_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (uint32_t d : dependents[i])
      if (--waiting[d] == 0) ready.push(d);
  }
  if (order.size() != n)
    throw std::runtime_error("the stage program's dependencies hold a cycle: it has no launch order");
  return order;
}

std::string pipeline_order_mismatch(const StageProgram& program, const std::vector<uint32_t>& order) {
  std::map<int64_t, uint32_t> last_receive;  // per destination stage: the peer's receive of the last send
  for (uint32_t i : order) {
    const Task& t = program.tasks[i];
    if (t.kind != TaskKind::send) continue;
    const auto it = last_receive.find(t.peer_stage);
    if (it != last_receive.end() && t.peer_task < it->second)
      return "stage " + std::to_string(program.stage) + " sends to stage " + std::to_string(t.peer_stage) +
             " in another order than that stage receives (task " + std::to_string(i) + ")";
    last_receive[t.peer_stage] = t.peer_task;
  }
  return "";
}

}  // namespace simrun::exec
