// The cuda backend's launch order (exec/src/launch_order.hpp), tested where no GPU is: every task
// launched once, after its dependencies, each lane's tasks in program order, and each pipeline
// direction's sends in the order the peer's receives come.
#include <catch2/catch.hpp>
#include <map>

#include "launch_order.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::exec;

namespace {

Scenario scenario(const std::string& layout) {
  return test::parse_scenario_text(R"({"model": {"name": "s", "layers": 8, "hidden": 128, "heads": 4,
    "kv_heads": 2, "ffn_hidden": 256, "ffn_act": "swiglu", "vocab": 512, "seq_len": 64},
    "cluster": {"gpu": "h100-sxm", "num_gpus": 16, "gpus_per_node": 8},
    "layout": )" + layout + "}");
}

void check_order(const StageProgram& p) {
  const Lanes lanes = launch_lanes(p);
  const std::vector<uint32_t> order = launch_order(p, lanes);
  REQUIRE(order.size() == p.tasks.size());
  std::vector<int64_t> position(p.tasks.size(), -1);
  for (size_t k = 0; k < order.size(); ++k) {
    REQUIRE(position[order[k]] == -1);  // once
    position[order[k]] = int64_t(k);
  }
  std::map<int32_t, int64_t> last_on_lane;
  for (uint32_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    for (uint16_t d = 0; d < t.dep_count; ++d) CHECK(position[p.dep(t, d)] < position[i]);
    const int32_t lane = lanes.lane_of[i];
    REQUIRE(lane >= 0);
    REQUIRE(lane < lanes.count);
    if (t.kind == TaskKind::send || t.kind == TaskKind::recv) {
      CHECK(lane >= kStreamCount);
      CHECK(lanes.peer_stage[size_t(lane)] == t.peer_stage);
    }
    const auto it = last_on_lane.find(lane);
    if (it != last_on_lane.end()) CHECK(position[size_t(it->second)] < position[i]);
    last_on_lane[lane] = i;
  }
  CHECK(pipeline_order_mismatch(p, order).empty());
}

}  // namespace

TEST_CASE("launch order: dependencies, lanes and pipeline messages in order", "[exec][cuda]") {
  for (const char* layout :
       {R"({"tp": 2, "pp": 4, "global_batch": 16, "micro_batch": 1})",
        R"({"tp": 2, "pp": 4, "virtual_stages": 2, "global_batch": 16, "micro_batch": 1})",
        R"({"tp": 2, "pp": 2, "dp": 4, "global_batch": 16, "zero_stage": 1})",
        R"({"tp": 1, "pp": 2, "cp": 2, "dp": 4, "global_batch": 16})"}) {
    INFO(layout);
    const Workload w = build_workload(scenario(layout));
    for (const StageProgram& p : w.stages) check_order(p);
  }
}

TEST_CASE("launch order: sends out of their receives' order are named", "[exec][cuda]") {
  StageProgram p;
  p.stage = 0;
  for (uint32_t peer_task : {5u, 3u}) {  // the second send matches an earlier receive
    Task t;
    t.kind = TaskKind::send;
    t.stream = Stream::pp_send;
    t.peer_stage = 1;
    t.peer_task = peer_task;
    p.tasks.push_back(t);
  }
  const Lanes lanes = launch_lanes(p);
  const std::string why = pipeline_order_mismatch(p, launch_order(p, lanes));
  CHECK(why.find("stage 0 sends to stage 1") != std::string::npos);
}
