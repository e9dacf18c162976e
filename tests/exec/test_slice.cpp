// The faithful slice (exec/slice.hpp): what it scales down keeps every rank's shapes, each change
// is said, and what cannot be sliced so is one InputError.
#include <catch2/catch.hpp>

#include "simrun/exec/slice.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::exec;

namespace {

Scenario llama_70b() {
  return test::parse_scenario_text(
      R"({"model": "llama3-70b", "cluster": {"gpu": "h100-sxm", "num_gpus": 1024},
    "layout": {"tp": 2, "pp": 2, "dp": 256, "global_batch": 1024, "zero_stage": 1}})");
}

SliceLimits four_ranks() {
  SliceLimits l;
  l.ranks = 4;
  l.ranks_per_node = 4;
  l.device = test::gpu("cpu-host");
  l.memory_bytes = 64e9;
  l.step_budget_s = 100;
  return l;
}

double no_buffers(const Scenario&) { return 0; }
double fast_step(const Scenario&) { return 1; }

}  // namespace

TEST_CASE("slice: data parallelism and the cluster shrink to the ranks, the replica's shapes stay",
          "[exec][slice]") {
  const Scenario full = llama_70b();
  const Slice s = faithful_slice(full, four_ranks(), no_buffers, fast_step);
  CHECK(s.scenario.layout.tp == 2);
  CHECK(s.scenario.layout.pp == 2);
  CHECK(s.scenario.layout.dp == 1);
  CHECK(s.scenario.layout.micro_batch == full.layout.micro_batch);
  CHECK(s.scenario.layout.num_microbatches() == full.layout.num_microbatches());  // 4 per pipeline kept
  CHECK(s.scenario.layout.global_batch == 4);
  CHECK(s.scenario.model.layers == full.model.layers);
  CHECK(s.scenario.cluster.num_gpus == 4);
  CHECK(s.scenario.cluster.gpu.id == "cpu-host");
  REQUIRE(s.scaled.size() == 3);
  CHECK_THAT(s.scaled[0], Catch::StartsWith("dp 256 -> 1 (global batch 1024 -> 4"));
  CHECK_THAT(s.scaled[0], Catch::Contains("ZeRO-1 shards over 1 ranks instead of 256"));
  CHECK_THAT(s.scaled[1], Catch::StartsWith("device h100-sxm -> cpu-host"));
  CHECK_THAT(s.scaled[2], Catch::StartsWith("cluster 1024 GPUs, 8 per node -> 4 ranks, 4 per node"));
}

TEST_CASE("slice: a layout that already fits is left as it is", "[exec][slice]") {
  const Scenario small = test::parse_scenario_text(R"({"model": {"name": "s", "layers": 4, "hidden": 256,
    "heads": 4, "ffn_hidden": 1024, "vocab": 4096, "seq_len": 256}, "cluster": {"gpu": "cpu-host", "num_gpus": 4,
    "gpus_per_node": 4}, "layout": {"tp": 2, "pp": 2, "global_batch": 8, "precision": "fp32"}})");
  const Slice s = faithful_slice(small, four_ranks(), no_buffers, fast_step);
  CHECK(s.scaled.empty());
  CHECK(s.scenario.layout == small.layout);
}

TEST_CASE("slice: a step over the budget keeps fewer layers, a multiple of the model chunks",
          "[exec][slice]") {
  SliceLimits limits = four_ranks();
  limits.step_budget_s = 60;
  // 80 layers predicted at 800 s: 40 per stage x 60/800 = 3 per stage.
  auto predict = [](const Scenario& sc) { return 10.0 * double(sc.model.layers); };
  const Slice s = faithful_slice(llama_70b(), limits, no_buffers, predict);
  CHECK(s.scenario.model.layers == 6);
  CHECK_THAT(s.scaled.back(), Catch::StartsWith("layers 80 -> 6 (3 per model chunk"));
  CHECK(s.scenario.model.hidden == 8192);  // the shapes stay
  CHECK_THAT(s.scaled.back(),
             Catch::EndsWith("predicted at 800 s on this machine, over the step budget of 60 s)"));
  // A budget under a second is printed as given, not rounded to "0 s".
  limits.step_budget_s = 0.25;
  CHECK_THAT(faithful_slice(llama_70b(), limits, no_buffers, predict).scaled.back(),
             Catch::EndsWith("over the step budget of 0.25 s)"));
}

TEST_CASE("slice: what cannot be sliced faithfully is refused with one line", "[exec][slice]") {
  SliceLimits limits = four_ranks();
  limits.ranks = limits.ranks_per_node = 2;
  CHECK_THROWS_WITH(faithful_slice(llama_70b(), limits, no_buffers, fast_step),
                    Catch::Contains("one model replica needs tp x cp x pp = 4 ranks and mpirun started 2"));
  limits.ranks = limits.ranks_per_node = 6;
  CHECK_THROWS_WITH(faithful_slice(llama_70b(), limits, no_buffers, fast_step),
                    Catch::Contains("6 ranks do not form whole replicas"));
  const Scenario small = test::parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "cpu-host",
    "num_gpus": 4, "gpus_per_node": 4}, "layout": {"tp": 1, "pp": 1, "dp": 4, "global_batch": 8}})");
  limits.ranks = limits.ranks_per_node = 8;
  CHECK_THROWS_WITH(faithful_slice(small, limits, no_buffers, fast_step),
                    Catch::Contains("the layout runs on 4 ranks and mpirun started 8"));
  limits = four_ranks();
  auto big = [](const Scenario&) { return 20e9; };
  CHECK_THROWS_WITH(faithful_slice(llama_70b(), limits, big, fast_step),
                    Catch::Contains("the buffers of one rank's shapes take 18.63 GiB"));
}
