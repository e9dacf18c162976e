// The estimate's measured envelope: the classes of layout bench/analytic_agreement measured more
// than 5% apart get the same warning from both fidelities; the rest get none.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <string>

#include "analytic_fixtures.hpp"
#include "simrun/sim/analytic/agreement_envelope.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

using namespace simrun;

namespace {

// Llama-3 70B cut to 8 layers on 64 H100: TP 8 inside each node, PP 4, DP 2, ZeRO-3.
Scenario fsdp_over_pipeline(int64_t global_batch) {
  Scenario s = test::llama3_70b_1024_h100();
  s.model.layers = 8;
  s.cluster = test::h100_cluster(64);
  s.layout.pp = 4;
  s.layout.dp = 2;
  s.layout.virtual_stages = 1;
  s.layout.zero_stage = 3;
  s.layout.global_batch = global_batch;
  return s;
}

bool warns(const Report& r, const std::string& what) {
  for (const std::string& w : r.warnings)
    if (w.find("may land more than 5% apart") != std::string::npos && w.find(what) != std::string::npos)
      return true;
  return false;
}

}  // namespace

TEST_CASE("ZeRO-3 over a pipeline with fewer micro-batches than stages: both fidelities warn",
          "[sim][analytic][agreement]") {
  const Scenario few = fsdp_over_pipeline(2);  // 1 micro-batch for 4 stages
  CHECK(warns(estimate(few), "ZeRO-3 over a pipeline with 1 micro-batch for 4 stages"));
  CHECK(warns(simulate(few, SimulateOptions{}).report, "ZeRO-3 over a pipeline"));
  const Scenario enough = fsdp_over_pipeline(8);  // 4 micro-batches
  CHECK_FALSE(warns(estimate(enough), ""));
  CHECK_FALSE(warns(simulate(enough, SimulateOptions{}).report, ""));
}

TEST_CASE("a slow link warns on a congested layout, pipelined or not", "[sim][analytic][agreement]") {
  Scenario s = test::llama3_70b_1024_h100();
  AnalyticOptions slow;
  slow.slow_links = {SlowLink{0, 0.1, LinkClass::scale_out}};
  const Report r = estimate(s, slow);
  INFO("exposed " << r.breakdown.exposed_comm_s << " of " << r.step_time_s);
  REQUIRE(congested(s, r));  // a NIC at 10%: the pipeline's and DP's messages queue at it
  CHECK(warns(r, "a slow link on a congested layout"));
  CHECK_FALSE(warns(estimate(s), ""));  // the same layout at full rate
  // TP across nodes is congested whatever the exposed share: without pipelining it warns too
  // (the benchmark's worst slow-link layouts have no pipeline).
  s.layout.tp = 16;
  s.layout.pp = 1;
  s.layout.dp = 64;
  s.layout.virtual_stages = 1;
  s.model.kv_heads = 16;
  const Report across = estimate(s, slow);
  CHECK(congested(s, across));
  CHECK_FALSE(tp_cp_inside_scale_up(s));
  CHECK(warns(across, "a slow link on a congested layout"));
}

TEST_CASE("ring attention across nodes with fewer NICs than GPUs warns in both fidelities",
          "[sim][analytic][agreement]") {
  // A 4-layer Llama-3 70B on 16 H100, TP 4 × CP 4 at 64K tokens (docs/agreement.md measures Llama 3
  // 8B: the event's step 12% longer with one NIC a node): a warning; none with a NIC per GPU, with
  // CP inside a node, or with all-gather CP.
  auto with = [](int64_t nics, int64_t tp, int64_t cp) {
    Scenario s = test::llama3_70b_1024_h100();
    s.model.layers = 4;
    s.model.seq_len = 65536;
    s.cluster = test::h100_cluster(16);
    s.cluster.nics_per_node = nics;
    s.layout.tp = tp;
    s.layout.cp = cp;
    s.layout.pp = 1;
    s.layout.virtual_stages = 1;
    s.layout.dp = 16 / (tp * cp);
    s.layout.micro_batch = 1;
    s.layout.global_batch = s.layout.dp;
    return s;
  };
  const Scenario one_nic = with(1, 4, 4);
  CHECK(warns(estimate(one_nic), "ring attention across nodes with 1 NIC for 8 GPUs a node"));
  CHECK(warns(simulate(one_nic, SimulateOptions{}).report, "ring attention across nodes"));
  CHECK_FALSE(warns(estimate(with(8, 4, 4)), "ring attention across nodes"));
  CHECK_FALSE(warns(estimate(with(1, 4, 2)), "ring attention across nodes"));
  Scenario gathered = with(1, 4, 4);
  gathered.layout.cp_comm_type = CpCommType::all_gather;
  CHECK_FALSE(warns(estimate(gathered), "ring attention across nodes"));
}

TEST_CASE("DP groups leaving a partial NVL72 rack warn, congested or not", "[sim][analytic][agreement]") {
  // Llama-3 70B, TP 2, 2K tokens: DP groups of 128 over 3 racks and 40 GPUs of a fourth (20
  // members there against 36) run 42% apart; on 4 full racks they agree. With CP 2 under ZeRO-3
  // at 8K tokens an uncongested layout there lands 12% apart.
  const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
  auto on = [&](int64_t gpus, const std::function<void(ScenarioOverrides&)>& edit = {}) {
    ScenarioOverrides o;
    o.model = "llama3-70b";
    o.gpu = "gb200";
    o.gpus = gpus;
    o.tp = 2;
    o.pp = 1;
    o.seq_len = 2048;
    o.global_batch = gpus / 2;
    o.recompute = "full";
    o.precision = "fp8";
    if (edit) edit(o);
    return load_scenario("", o, catalogs);
  };
  const Scenario partial = on(256), whole = on(288);
  CHECK(warns(estimate(partial), "DP groups leaving a partial NVL72 rack"));
  // Uncongested there too: CP 2 under ZeRO-3 at 8K tokens exposes 5% of its step.
  const Scenario uncongested = on(256, [](ScenarioOverrides& o) {
    o.cp = 2;
    o.seq_len = 8192;
    o.global_batch = 64;
    o.zero_stage = 3;
    o.precision.reset();
  });
  const Report quiet = estimate(uncongested);
  REQUIRE_FALSE(congested(uncongested, quiet));
  CHECK(warns(quiet, "DP groups leaving a partial NVL72 rack"));
  CHECK(warns(simulate(partial, SimulateOptions{}).report, "DP groups leaving a partial NVL72 rack"));
  CHECK_FALSE(warns(estimate(whole), ""));
}

TEST_CASE("the shipped examples are inside the envelope", "[sim][analytic][agreement]") {
  const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
  int examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(SIMRUN_DATA_DIR) / "examples"))
    if (entry.path().extension() == ".json") {
      CAPTURE(entry.path().string());
      CHECK_FALSE(warns(estimate(load_scenario(entry.path(), {}, catalogs)), ""));
      ++examples;
    }
  CHECK(examples >= 5);
}
