// Degraded hardware in both fidelities: a straggler slows its stage by its share of the compute,
// a slow NIC or scale-up link the groups over it, a pipeline boundary waits for its slowest pair,
// the breakdown is the last rank's; out-of-range ones are refused.
#include <algorithm>
#include <catch2/catch.hpp>
#include <utility>

#include "simrun/common/error.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "step_fixtures.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

// A step on slow hardware (every rank simulated) in both fidelities, and the estimate's on
// healthy hardware.
struct SlowStep {
  double event = 0, analytic = 0, healthy = 0;
};
SlowStep slow_step(const Scenario& sc, std::vector<Straggler> stragglers, std::vector<SlowLink> slow_links) {
  SimulateOptions o;
  o.step.scope = SimulationScope::full;
  o.step.stragglers = std::move(stragglers);
  o.step.slow_links = std::move(slow_links);
  return {simulate(sc, o).report.step_time_s, estimate(sc, analytic_options(o)).step_time_s,
          estimate(sc).step_time_s};
}

}  // namespace

TEST_CASE("a straggler slows the whole step by about its slowdown of the compute share", "[sim][step]") {
  const Scenario sc =
      scenario("llama3-8b", "h100-sxm", 16, R"("tp": 2, "pp": 2, "dp": 4, "global_batch": 32)");
  SimulateOptions o;
  o.step.scope = SimulationScope::full;
  const SimulationOutput base = simulate(sc, o);
  const double t0 = base.report.step_time_s;
  const double compute = base.report.breakdown.compute_s;
  // Rank 13 = (tp 1, dp 2, stage 1): the last stage, which also runs the loss, sets the pace.
  for (double slowdown : {1.1, 1.5, 2.0}) {
    const double t = step_s(sc, SimulationScope::full, {{13, slowdown}});
    // Synchronous training waits for the slowest GPU at every TP and DP collective and every
    // pipeline hand-off, so its extra compute lands on the critical path (partly hidden only
    // where its TP peers wait for communication anyway).
    CHECK(t > t0 + 0.7 * (slowdown - 1.0) * compute);
    CHECK(t <= t0 * slowdown + 1e-6);
  }
  // Any GPU of the same stage hurts the same; one on the lighter first stage hurts less.
  const double last_stage = step_s(sc, SimulationScope::full, {{13, 1.5}});
  CHECK(step_s(sc, SimulationScope::full, {{8, 1.5}}) == Approx(last_stage).epsilon(1e-6));
  CHECK(step_s(sc, SimulationScope::full, {{5, 1.5}}) <= last_stage);
  CHECK_THROWS_AS(step_s(sc, SimulationScope::representatives, {{5, 1.5}}), InputError);
  CHECK_THROWS_AS(step_s(sc, SimulationScope::full, {{16, 1.5}}), InputError);
}

TEST_CASE("the analytic estimate paces a straggler's stage as the event simulation does",
          "[sim][step][analytic]") {
  struct Case {
    std::string model, gpu;
    int64_t gpus;
    std::string layout;
    Straggler straggler;
    int64_t seq_len = 0;  // 0: the model's
    double tolerance = 0.02;
  };
  const Case c = GENERATE(
      // The last stage (rank 13) or the first (rank 5) of a 1F1B pipeline with TP and DP.
      Case{"llama3-8b", "h100-sxm", 16, R"("tp": 2, "pp": 2, "dp": 4, "global_batch": 32)", {13, 1.5}},
      Case{"llama3-8b", "h100-sxm", 16, R"("tp": 2, "pp": 2, "dp": 4, "global_batch": 32)", {5, 2.0}},
      // One micro-batch through four stages: the slowed middle stage ends its step (its optimizer
      // twice as long) before the first stage ends the drain and its own. Charging the slowest
      // optimizer after the longest path put the estimate 16% above the event.
      Case{"mistral-7b",
           "h200",
           8,
           R"("tp": 1, "pp": 4, "dp": 2, "micro_batch": 2, "global_batch": 4, "precision": "fp8")",
           {4, 2.0},
           1024},
      // FSDP without a pipeline: every gather and reduce-scatter waits for the slow GPU.
      Case{"llama3-8b",
           "h100-sxm",
           8,
           R"("tp": 1, "pp": 1, "dp": 8, "global_batch": 32, "zero_stage": 3)",
           {3, 1.5}},
      // The slowed last stage is not the one that ends the step: the first stage's gradient
      // all-reduces start after the drain the straggler delays. With the DP tail taken on the
      // slowest stage only, the event's step was 9.4% longer than the estimate's.
      Case{"llama3-8b",
           "mi300x",
           16,
           R"("tp": 1, "pp": 2, "dp": 8, "micro_batch": 1, "global_batch": 8, "recompute": "selective",
               "precision": "fp8")",
           {13, 1.25},
           1024,
           0.03});
  const std::string model =
      c.seq_len > 0 ? R"({"name": ")" + c.model + R"(", "seq_len": )" + std::to_string(c.seq_len) + "}"
                    : R"(")" + c.model + R"(")";
  const SlowStep t = slow_step(scenario_of(model, c.gpu, c.gpus, c.layout), {c.straggler}, {});
  INFO(c.model << " on " << c.gpus << " " << c.gpu << ", " << c.layout << ", rank " << c.straggler.rank
               << " at " << c.straggler.slowdown << "x: event " << t.event << " s, analytic " << t.analytic
               << " s, healthy analytic " << t.healthy << " s");
  CHECK(t.analytic > t.healthy * (1 + 0.1 * (c.straggler.slowdown - 1)));
  CHECK(t.analytic == Approx(t.event).epsilon(c.tolerance));
}

TEST_CASE("the report names the slow GPUs and links it ran with, a GPU given twice at its worst",
          "[sim][step][analytic]") {
  const Scenario sc =
      scenario("llama3-8b", "h100-sxm", 16, R"("tp": 2, "pp": 2, "dp": 4, "global_batch": 32)");
  SimulateOptions o;
  o.step.scope = SimulationScope::full;
  // A node's GPUs (8-15, all of stage 1), one of them also named alone, at a lower slowdown.
  for (int64_t r = 8; r < 16; ++r) o.step.stragglers.push_back({r, 1.25});
  o.step.stragglers.push_back({9, 1.1});
  o.step.stragglers.push_back({3, 1.5});
  o.step.slow_links = {{2, 0.5, LinkClass::scale_out},
                       {2, 0.25, LinkClass::scale_out},
                       {6, 0.5, LinkClass::scale_up},
                       {7, 0.5, LinkClass::scale_up},
                       {8, 0.5, LinkClass::scale_up}};
  const Report event = simulate(sc, o).report;
  const std::vector<std::string> expected = {
      "ranks 8-15 (stage 1): kernels 1.25x slower", "rank 3 (stage 0): kernels 1.5x slower",
      "rank 2 (stage 0): NIC at 25% of its bandwidth",
      "ranks 6-7 (stage 0): scale-up links at 50% of their bandwidth",  // a range stops at a stage
      "rank 8 (stage 1): scale-up links at 50% of their bandwidth"};
  CHECK(event.degraded == expected);
  // The estimate names the same; healthy runs name none.
  const Report analytic = estimate(sc, analytic_options(o));
  CHECK(analytic.degraded == expected);
  CHECK(simulate(sc).report.degraded.empty());
  // Given twice, a GPU runs at the larger slowdown, in both fidelities.
  SimulateOptions twice;
  twice.step.scope = SimulationScope::full;
  twice.step.stragglers = {{13, 2.0}, {13, 1.1}};
  SimulateOptions once = twice;
  once.step.stragglers = {{13, 2.0}};
  CHECK(simulate(sc, twice).report.step_time_s == simulate(sc, once).report.step_time_s);
  CHECK(estimate(sc, analytic_options(twice)).step_time_s ==
        estimate(sc, analytic_options(once)).step_time_s);
}

TEST_CASE("the analytic estimate slows the groups over a slow link as the event simulation does",
          "[sim][step][analytic]") {
  struct Case {
    std::string model;  // the scenario's "model" value, JSON
    std::string gpu;
    int64_t gpus;
    std::string layout;
    SlowLink link;
    double tolerance = 0.02;
  };
  const Case c = GENERATE(
      // TP inside the node, DP across: the scale-up port slows the TP collectives, the NIC the
      // DP traffic.
      Case{R"("llama3-8b")", "h100-sxm", 16, R"("tp": 8, "pp": 1, "dp": 2)", {3, 0.25, LinkClass::scale_up}},
      Case{R"("llama3-8b")", "h100-sxm", 16, R"("tp": 8, "pp": 1, "dp": 2)", {3, 0.25, LinkClass::scale_out}},
      // One micro-batch through four stages, the slow NIC's stage 2 not the slowest: its DP
      // reductions and gathers run during the fill and the drain, and beside its own compute.
      // With the busiest stage's traffic opening the step and slowing the slowest stage's
      // compute, the estimate was 15% above the event.
      Case{R"("gpt3-175b")",
           "h200",
           64,
           R"("tp": 8, "pp": 4, "dp": 2, "micro_batch": 2, "global_batch": 4)",
           {46, 0.1, LinkClass::scale_out}},
      // FSDP over a pipeline, one micro-batch: the slow NIC's stage carries the most DP traffic,
      // beside its own compute, not the slowest stage's. Charging the slowest stage's compute
      // the overlap slowdown of that traffic put the estimate 10% above the event.
      Case{R"({"name": "llama3-70b", "seq_len": 4096})",
           "h200",
           256,
           R"("tp": 4, "pp": 4, "dp": 16, "micro_batch": 2, "global_batch": 32, "zero_stage": 3,
               "recompute": "full", "precision": "fp8")",
           {137, 0.1, LinkClass::scale_out},
           0.04},
      // Stages of 4 GPUs, two to a node: the sends between stages 1 and 2 (and, interleaved,
      // from 3 back to 0) cross the NICs, the others stay on NVLink. Timed on NVLink as the
      // stages' group link, the slow NIC's boundary was missed: the event's step 6.6% longer.
      Case{R"({"name": "mistral-7b", "seq_len": 2048})",
           "h100-sxm",
           16,
           R"("tp": 2, "pp": 4, "dp": 2, "virtual_stages": 2, "micro_batch": 2, "global_batch": 16,
               "zero_stage": 2, "precision": "fp8")",
           {9, 0.1, LinkClass::scale_out}},
      // 1F1B, the slow NIC's stage 6 in the middle: its two exchanges per micro-batch, both over
      // the slow NIC, set the steady state's pace, not the heavier last stage's compute. Taking
      // the slowest stage's exchanges only, the event's step was 16.4% longer.
      Case{R"({"name": "mistral-7b", "seq_len": 8192})",
           "b200",
           256,
           R"("tp": 2, "pp": 8, "dp": 16, "micro_batch": 2, "global_batch": 1024, "zero_stage": 3,
               "recompute": "selective", "precision": "fp8")",
           {220, 0.1, LinkClass::scale_out}},
      // Interleaved, the slow NIC's stage sends 2 messages per micro-batch and chunk through it
      // and receives 2, asynchronously: the port's load bounds the step (0.23 s of it). Without
      // the bound the event's step was 34% longer than the estimate's.
      Case{R"("mistral-7b")",
           "b200",
           64,
           R"("tp": 2, "pp": 8, "dp": 4, "virtual_stages": 2, "global_batch": 128, "precision": "fp8")",
           {37, 0.1, LinkClass::scale_out},
           0.04});
  const SlowStep t = slow_step(scenario_of(c.model, c.gpu, c.gpus, c.layout), {}, {c.link});
  INFO(c.model << " on " << c.gpus << " " << c.gpu << ", " << c.layout << ", rank " << c.link.rank << " at "
               << c.link.bandwidth_fraction << ": event " << t.event << " s, analytic " << t.analytic
               << " s, healthy analytic " << t.healthy << " s");
  CHECK(t.analytic > 1.02 * t.healthy);
  CHECK(t.analytic == Approx(t.event).epsilon(c.tolerance));
}

TEST_CASE("1F1B over slow links: each exchange with a neighbour costs one hop, in both fidelities",
          "[sim][step][analytic]") {
  // Every NIC at 5%, two stages on two nodes: the pipeline messages are a sizeable share of the
  // step. Each micro-batch the last stage sends its gradient and receives the next activation at
  // once, and they pass each other on the full-duplex link; counting both on the path, the
  // estimate was 3.9% above the event (exposed PP 0.114 s against 0.064 s).
  const Scenario sc =
      scenario("llama3-8b", "h100-sxm", 16, R"("tp": 8, "pp": 2, "dp": 1, "global_batch": 16)");
  std::vector<SlowLink> slow;
  for (int64_t rank = 0; rank < 16; ++rank) slow.push_back({rank, 0.05, LinkClass::scale_out});
  const SlowStep t = slow_step(sc, {}, slow);
  INFO("event " << t.event << " s, analytic " << t.analytic << " s, healthy analytic " << t.healthy << " s");
  CHECK(t.analytic > 1.03 * t.healthy);
  CHECK(t.analytic == Approx(t.event).epsilon(0.01));
}

TEST_CASE("the analytic estimate refuses a straggler or a slow link outside the cluster or its range",
          "[sim][analytic]") {
  const Scenario sc =
      scenario("llama3-8b", "h100-sxm", 16, R"("tp": 2, "pp": 2, "dp": 4, "global_batch": 32)");
  AnalyticOptions o;
  o.stragglers = {{16, 1.5}};
  CHECK_THROWS_AS(estimate(sc, o), InputError);
  o.stragglers = {{3, 0.5}};
  CHECK_THROWS_AS(estimate(sc, o), InputError);
  // The value as given, shortest form (std::to_string printed 1e308 as 309 digits).
  o.stragglers = {{3, 1e308}};
  CHECK_THROWS_WITH(estimate(sc, o), Catch::Contains("slowdown must be in [1, 100], got 1e+308"));
  o.stragglers.clear();
  o.slow_links = {{16, 0.5}};
  CHECK_THROWS_AS(estimate(sc, o), InputError);
  o.slow_links = {{3, 0.0}};
  CHECK_THROWS_AS(estimate(sc, o), InputError);
}

TEST_CASE("a degraded NIC slows the data-parallel traffic that crosses it", "[sim][step]") {
  // DP over nodes (tp 8 fills a node), ZeRO-3: parameter gathers and gradient reductions on the NICs.
  const Scenario sc = scenario("llama3-8b", "h100-sxm", 16,
                               R"("tp": 8, "pp": 1, "dp": 2, "global_batch": 2, "zero_stage": 3)");
  SimulateOptions o;
  o.step.scope = SimulationScope::full;
  const double base = simulate(sc, o).report.step_time_s;
  o.step.slow_links.push_back({9, 0.05});
  const double slow = simulate(sc, o).report.step_time_s;
  CHECK(slow > base * 1.05);
  o.step.slow_links[0].bandwidth_fraction = 1.0;
  CHECK(simulate(sc, o).report.step_time_s == Approx(base));
}

TEST_CASE("a degraded scale-up link slows the tensor-parallel collectives through it, switch and mesh",
          "[sim][step]") {
  // One node, tp 8: every TP collective crosses each GPU's NVSwitch port (H100) or its links to
  // the seven peers (MI300X's full mesh); no traffic leaves the node.
  for (const char* gpu : {"h100-sxm", "mi300x"}) {
    INFO(gpu);
    const Scenario sc = scenario("llama3-8b", gpu, 8, R"("tp": 8, "pp": 1, "dp": 1, "global_batch": 4)");
    SimulateOptions o;
    o.step.scope = SimulationScope::full;
    const Report base = simulate(sc, o).report;
    o.step.slow_links = {{3, 0.25, LinkClass::scale_up}};
    const Report slow = simulate(sc, o).report;
    // The ring runs at its slowest link: every TP collective takes longer, and the step with it.
    CHECK(slow.breakdown.tp_comm_s > base.breakdown.tp_comm_s * 2);
    CHECK(slow.step_time_s > base.step_time_s * 1.05);
    // Its NIC carries nothing here.
    o.step.slow_links = {{3, 0.25, LinkClass::scale_out}};
    CHECK(simulate(sc, o).report.step_time_s == Approx(base.step_time_s));
  }
}

TEST_CASE("a pipeline boundary waits for its slowest pair of GPUs, each pair on its own link",
          "[sim][step][analytic]") {
  // Stages of 3 GPUs on 8-GPU nodes: rank 5 of stage 1 sends to rank 8 of stage 2 across the
  // NIC, while ranks 3 and 4 send to 6 and 7 over NVLink. Judged by the stages' first ranks (3
  // and 6, one node) the boundary was timed on NVLink and a slow NIC at rank 5 went unseen.
  // Rank 2's sends (to 5; 1F1B has no turn from stage 7 back to 0) stay on its node, so its slow
  // NIC slows no send. The event takes each pair's link (pipeline_pair) and its two GPUs' rates.
  const Scenario sc = scenario("mistral-7b", "h100-sxm", 24,
                               R"("tp": 1, "pp": 8, "dp": 3, "micro_batch": 2, "global_batch": 48,
                                   "precision": "fp8")");
  const StepFlops f =
      step_flops(sc.model, sc.layout, AttentionFlops::causal, SelectiveRecompute::attention_core);
  auto slowest_send_s = [&](int64_t rank) {
    AnalyticOptions o;
    o.slow_links = {{rank, 0.1, LinkClass::scale_out}};
    return estimate_step_time(sc, f, o).pp_send_s;
  };
  const double healthy = estimate_step_time(sc, f, AnalyticOptions{}).pp_send_s;
  const LinkCost nic = group_link(sc.cluster, pipeline_pair(sc.cluster, 3, PairPlacement::across_domains),
                                  EfficiencyDefaults{});
  const double send_bytes = 2.0 * 8192 * 4096 * 2;  // b·s·h, bf16 activations
  const double full = collective_s(CollectiveOp::send_recv, send_bytes, 2, nic);
  const double latency = collective_s(CollectiveOp::send_recv, 1.0, 2, nic);
  CHECK(healthy == Approx(full));
  CHECK(slowest_send_s(5) == Approx(latency + (full - latency) / 0.1));  // its bytes at 10% of the rate
  CHECK(slowest_send_s(8) == Approx(slowest_send_s(5)));
  CHECK(slowest_send_s(2) == Approx(healthy));
  // Both fidelities see the slow send: the step within 4% of the event's.
  for (const int64_t rank : {5, 8}) {
    const SlowStep t = slow_step(sc, {}, {{rank, 0.1, LinkClass::scale_out}});
    INFO("rank " << rank << "'s NIC at 10%: event " << t.event << " s, analytic " << t.analytic << " s");
    CHECK(t.analytic > t.healthy);
    CHECK(t.event == Approx(t.analytic).epsilon(0.04));
  }
}

TEST_CASE("with a straggler the breakdown is the last rank's, and waiting on it is not communication",
          "[sim][step]") {
  // Found by metamorphic testing: the breakdown described a rank that did not finish last, and
  // a bucket's wait for the straggler to arrive was charged as exposed DP communication.
  const Scenario sc = scenario("llama3-8b", "h100-sxm", 8,
                               R"("tp": 2, "pp": 2, "dp": 2, "zero_stage": 0, "global_batch": 16)");
  for (const auto& [straggler, slow_link] : {std::pair{true, false}, std::pair{false, true}}) {
    SimulateOptions o;
    o.step.scope = SimulationScope::full;
    if (straggler) o.step.stragglers = {{7, 3.0}};
    if (slow_link) o.step.slow_links = {{7, 0.05}};
    const SimulationOutput out = simulate(sc, o);
    const BreakdownReport& b = out.report.breakdown;
    CHECK(b.compute_s + b.exposed_comm_s + b.bubble_s == Approx(out.report.step_time_s).epsilon(1e-9));
    CHECK(b.dp_exposed_s <= b.dp_comm_s + 1e-12);
    CHECK(b.tp_exposed_s <= b.tp_comm_s + 1e-12);
    CHECK(b.pp_exposed_s <= b.pp_comm_s + 1e-12);
    double last_finish = 0;
    for (const StageReport& s : out.stages) last_finish = std::max(last_finish, s.time.finish_s);
    CHECK(last_finish == Approx(out.report.step_time_s).epsilon(1e-12));
  }
}
