// Pipeline schedules: Megatron's 1F1B and interleaved orders and warm-ups, GPipe, combined 1F1B's
// pairs, DualPipe's two directions and mirror stages, the textbook bubbles when played out, and
// the layer splits.
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "workload_dry_run.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

TEST_CASE("GPipe runs every stage's ops too", "[sim][workload]") {
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 1, "pp": 4, "dp": 2, "global_batch": 16}})");
  const Workload w = build_workload(sc, WorkloadOptions{}, PipelineSchedule::gpipe);
  const auto ran = run_dry(w);
  for (size_t s = 0; s < w.stages.size(); ++s) CHECK(ran[s] == w.stages[s].tasks.size());
  // GPipe keeps every micro-batch in flight; 1F1B at most pp − stage.
  CHECK(w.stages[0].max_in_flight_chunks == 8);
  const Workload w1 = build_workload(sc);
  CHECK(w1.stages[0].max_in_flight_chunks == 4);
  CHECK(w1.stages[3].max_in_flight_chunks == 1);
}

TEST_CASE("1F1B and interleaved schedules: order and warm-up as in Megatron", "[sim][workload]") {
  const auto s = stage_schedule(PipelineSchedule::one_f_one_b, 0, 4, 8, 1);
  REQUIRE(s.size() == 16);
  CHECK((s[0].forward && s[1].forward && s[2].forward && s[3].forward && !s[4].forward));
  CHECK(s[4].micro_batch == 0);
  const auto last = stage_schedule(PipelineSchedule::one_f_one_b, 3, 4, 8, 1);
  CHECK((last[0].forward && !last[1].forward));
  const auto il = stage_schedule(PipelineSchedule::interleaved, 0, 4, 8, 2);
  REQUIRE(il.size() == 32);
  // warm-up (p−1)·2 + (v−1)·p = 10 forwards; the first p are chunk 0, the next p chunk 1.
  for (int i = 0; i < 10; ++i) CHECK(il[static_cast<size_t>(i)].forward);
  CHECK((il[3].chunk == 0 && il[4].chunk == 1 && il[8].chunk == 0 && il[8].micro_batch == 4));
  CHECK((!il[11].forward && il[11].chunk == 1 && il[11].micro_batch == 0));
}

TEST_CASE("pipeline schedules complete, the interleaved one not for every micro-batch count",
          "[sim][workload]") {
  for (int64_t pp = 2; pp <= 8; ++pp)
    for (int64_t m = pp; m <= 3 * pp + 1; ++m) {
      INFO("pp " << pp << ", m " << m);
      CHECK(schedule_completes(PipelineSchedule::gpipe, pp, m, 1));
      CHECK(schedule_completes(PipelineSchedule::one_f_one_b, pp, m, 1));
      for (int64_t v = 2; v <= 4; ++v)
        if (m % pp == 0) CHECK(schedule_completes(PipelineSchedule::interleaved, pp, m, v));
    }
  // Megatron-Core accepts micro-batch counts pp does not divide; some of its orders complete
  // (pp 4, 2 chunks, 5 micro-batches), others wait on themselves (pp 4, 4 chunks, 5).
  CHECK(schedule_completes(PipelineSchedule::interleaved, 4, 5, 2));
  CHECK_FALSE(schedule_completes(PipelineSchedule::interleaved, 4, 5, 4));
  CHECK_FALSE(schedule_completes(PipelineSchedule::interleaved, 6, 8, 2));
}

TEST_CASE("played out with equal chunk-steps, the schedules give the textbook bubbles", "[sim][workload]") {
  const double f = 1.0, b = 2.0;  // one chunk's forward and backward
  auto equal = [&](int64_t, const PipelineSlot& slot) { return slot.forward ? f : b; };
  for (int64_t pp = 2; pp <= 8; pp *= 2)
    for (int64_t m = pp; m <= 4 * pp; m += pp) {
      INFO("pp " << pp << ", m " << m);
      // GPipe and 1F1B: (m + p − 1) · (f + b) (Narayanan et al. 2021, §2.2), stage 0 last.
      for (PipelineSchedule kind : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
        const auto t = schedule_finish_times(kind, pp, m, 1, equal);
        REQUIRE(t.has_value());
        CHECK(t->front() == Approx(double(m + pp - 1) * (f + b)));
      }
      // Interleaved over v chunks of a stage: the bubble shrinks to (p − 1)·(f + b) of a chunk,
      // (p − 1)/v of a whole stage's, on top of its m·v chunk-steps (§2.2.2).
      for (int64_t v = 2; v <= 4; ++v) {
        const auto t = schedule_finish_times(PipelineSchedule::interleaved, pp, m, v, equal);
        REQUIRE(t.has_value());
        CHECK(t->front() == Approx(double(m * v + pp - 1) * (f + b)));
      }
    }
  // A message between stages delays each chunk-step that waits for it: at least the fill's and
  // the drain's 2(p − 1), at most one per step of the path, 2(m + p − 1).
  const auto hops =
      schedule_finish_times(PipelineSchedule::one_f_one_b, 4, 8, 1, equal, std::vector<double>(4, 0.25));
  CHECK(hops->front() >= double(8 + 3) * (f + b) + 2.0 * 3.0 * 0.25);
  CHECK(hops->front() <= double(8 + 3) * (f + b) + 2.0 * 11.0 * 0.25);
  // Hops per boundary: a slow one between stages 1 and 2 alone delays the path at least at the
  // fill and the drain; interleaved, the chunks' turn from stage 3 back to stage 0 crosses the
  // last boundary.
  const double slow_hop = 1.0;
  const auto one_slow =
      schedule_finish_times(PipelineSchedule::one_f_one_b, 4, 8, 1, equal, {0.0, slow_hop, 0.0, 0.0});
  CHECK(one_slow->front() >= double(8 + 3) * (f + b) + 2.0 * slow_hop);
  CHECK(one_slow->front() <= double(8 + 3) * (f + b) + 2.0 * 11.0 * slow_hop);
  const auto turn_slow =
      schedule_finish_times(PipelineSchedule::interleaved, 4, 8, 2, equal, {0.0, 0.0, 0.0, slow_hop});
  CHECK(turn_slow->front() >= double(8 * 2 + 3) * (f + b) + 2.0 * slow_hop);
  // Plain 1F1B never crosses it.
  const auto no_turn =
      schedule_finish_times(PipelineSchedule::one_f_one_b, 4, 8, 1, equal, {0.0, 0.0, 0.0, slow_hop});
  CHECK(no_turn->front() == Approx(double(8 + 3) * (f + b)));
  // A deadlocking order has no finish times.
  CHECK_FALSE(schedule_finish_times(PipelineSchedule::interleaved, 4, 5, 4, equal).has_value());
}

TEST_CASE("layer splits: even, embedding/loss accounted, balanced (1F1B and interleaved), refusals say why",
          "[sim][workload]") {
  CHECK(split_layers(80, 4, 5, PipelineSplit::even, "t") == std::vector<int64_t>(20, 4));
  const auto l405 = split_layers(126, 16, 2, PipelineSplit::embedding_loss_layers, "t");  // 128 = 16·2·4
  CHECK(l405[0] == 3);           // stage 0 chunk 0: embedding + 3 layers
  CHECK(l405[15 * 2 + 1] == 3);  // last stage, last chunk: 3 layers + loss
  CHECK(l405[1] == 4);
  CHECK(split_layers(30, 4, 1, PipelineSplit::balanced, "t") == std::vector<int64_t>{7, 8, 8, 7});
  CHECK_THROWS_WITH(split_layers(126, 16, 2, PipelineSplit::even, "t"),
                    Catch::Contains("embedding-loss-layers"));
  // Interleaved chunks split as Megatron-Core's --pipeline-model-parallel-layout can: 30 layers
  // over 12 chunks, the 6 extra ones on the middle chunks in pipeline order (virtual stage
  // vs = chunk·pp + stage, stored at stage·v + chunk), the first and last chunks light.
  const auto inter = split_layers(30, 4, 3, PipelineSplit::balanced, "t");
  CHECK(std::accumulate(inter.begin(), inter.end(), int64_t{0}) == 30);
  CHECK(inter[0] == 2);          // vs 0: stage 0, chunk 0
  CHECK(inter[3 * 3 + 2] == 2);  // vs 11: stage 3, chunk 2
  CHECK(inter[0 * 3 + 1] == 3);  // vs 4: stage 0, chunk 1, a middle chunk
  CHECK_THROWS_WITH(split_layers(6, 4, 2, PipelineSplit::balanced, "t"), Catch::Contains("layout.pp"));
  CHECK_THROWS_WITH(split_layers(31, 4, 2, PipelineSplit::embedding_loss_layers, "t"),
                    Catch::Contains("layers + 2 = 33"));
}

TEST_CASE("combined 1F1B or DualPipe with no pair says so, with pairs it says nothing", "[sim][schedule]") {
  // Interleaved over pp 2 with 2 chunks: 2 micro-batches are all warm-up and cool-down.
  const auto none = unpaired_schedule_warning(PipelineSchedule::combined_1f1b, 2, 2, 2);
  REQUIRE(none);
  CHECK_THAT(*none, Catch::StartsWith("combined-1f1b pairs no forward with a backward at 2 micro-batches") &&
                        Catch::Contains("runs as interleaved 1F1B"));
  CHECK_FALSE(unpaired_schedule_warning(PipelineSchedule::combined_1f1b, 2, 16, 2));
  CHECK(unpaired_schedule_warning(PipelineSchedule::combined_1f1b, 1, 1, 1));
  CHECK_FALSE(unpaired_schedule_warning(PipelineSchedule::combined_1f1b, 1, 4, 1));
  CHECK_FALSE(unpaired_schedule_warning(PipelineSchedule::dualpipe, 4, 8, 2));
  CHECK_FALSE(unpaired_schedule_warning(PipelineSchedule::one_f_one_b, 4, 1, 1));  // pairs nothing by design
}

TEST_CASE("combined 1F1B pairs each backward with the next forward, in 1F1B's order",
          "[sim][workload][schedule]") {
  // Megatron-Core combined_1f1b.py: "Phase k: k-th backward + (k+1)-th forward" (pp 1), the
  // interleaved order's steady state with one more warm-up micro-batch.
  const auto one = stage_schedule(PipelineSchedule::combined_1f1b, 0, 1, 4, 1);
  REQUIRE(one.size() == 8);
  for (size_t k = 0; k < one.size(); ++k) {
    INFO("slot " << k);
    CHECK(one[k].paired_with_next == (!one[k].forward && k + 1 < one.size()));
  }
  const auto il = stage_schedule(PipelineSchedule::combined_1f1b, 1, 4, 8, 2);
  const auto plain = stage_schedule(PipelineSchedule::interleaved, 1, 4, 8, 2);
  REQUIRE(il.size() == plain.size());
  for (size_t k = 0; k + 1 < il.size(); ++k) {
    CHECK((il[k].forward == plain[k].forward && il[k].micro_batch == plain[k].micro_batch));
    if (il[k].paired_with_next) CHECK(il[k + 1].micro_batch != il[k].micro_batch);
  }
}

TEST_CASE("DualPipe's step: each direction's half of the micro-batches, F&B pairs, and it completes",
          "[sim][workload][schedule]") {
  // deepseek-ai/DualPipe dualpipe.py: num_ranks even, num_chunks even and >= 2·num_ranks.
  for (int64_t pp = 2; pp <= 8; pp += 2)
    for (int64_t m = 2 * pp; m <= 4 * pp; m += 2) {
      INFO("pp " << pp << ", m " << m);
      CHECK(schedule_completes(PipelineSchedule::dualpipe, pp, m, 1));
      for (int64_t stage = 0; stage < pp; ++stage) {
        const auto slots = stage_schedule(PipelineSchedule::dualpipe, stage, pp, m, 1);
        REQUIRE(slots.size() == size_t(2 * m));
        std::map<std::pair<bool, int64_t>, int64_t> seen;  // (forward, chunk) → next micro-batch
        int64_t pairs = 0;
        for (size_t k = 0; k < slots.size(); ++k) {
          const PipelineSlot& s = slots[k];
          const int64_t first = s.chunk == 0 ? 0 : m / 2;
          CHECK(s.micro_batch == first + seen[{s.forward, s.chunk}]++);  // each direction in order
          if (s.paired_with_next) {
            ++pairs;
            REQUIRE(k + 1 < slots.size());
            CHECK((s.forward && !slots[k + 1].forward && slots[k + 1].chunk != s.chunk));
          }
        }
        for (int64_t c = 0; c < 2; ++c) CHECK((seen[{true, c}] == m / 2 && seen[{false, c}] == m / 2));
        // The main phase's two pairs an iteration, nB1F1B0's one; the middle ranks run their
        // first main-phase pair apart.
        const int64_t half_rank = std::min(stage, pp - 1 - stage);
        const bool middle = stage == pp / 2 - 1 || stage == pp / 2;
        CHECK(pairs == 2 * (m / 2 - pp + half_rank + 1) + (pp / 2 - half_rank - 1) - (middle ? 1 : 0));
      }
    }
  // Chunk 1 of stage s is position pp − 1 − s of the pipeline fed from the last stage.
  const ChunkPlace back = chunk_place(PipelineSchedule::dualpipe, 1, 1, 4, 2);
  CHECK((back.position == 2 && back.last == 3 && back.prev_stage == 2 && back.next_stage == 0));
}

TEST_CASE("played out, DualPipe's bubble is about (pp/2 − 1)(F&B + B) without its deferred weight gradients",
          "[sim][workload][schedule]") {
  // arXiv:2412.19437 Table 2: (PP/2 − 1)(F&B + B − 3W). Here each backward runs whole (W = 0,
  // schedule.hpp), and a pair's F&B is taken as f + b (nothing overlapped in time).
  const double f = 1.0, b = 2.0;
  auto equal = [&](int64_t, const PipelineSlot& slot) { return slot.forward ? f : b; };
  for (int64_t pp = 2; pp <= 8; pp += 2)
    for (int64_t m = 2 * pp; m <= 4 * pp; m += 2 * pp) {
      INFO("pp " << pp << ", m " << m);
      const auto t = schedule_finish_times(PipelineSchedule::dualpipe, pp, m, 1, equal);
      REQUIRE(t.has_value());
      // Table 2's bubble at W = 0, to within one forward chunk (the played-out order ends a
      // forward earlier on its critical rank).
      const double bubble = *std::max_element(t->begin(), t->end()) - double(m) * (f + b);
      const double table = double(pp / 2 - 1) * ((f + b) + b);
      CHECK(bubble <= table + 1e-9);
      CHECK(bubble >= table - f - 1e-9);
    }
}

TEST_CASE("paired slots interleave at the EP all-to-alls, each stream in Megatron's order",
          "[sim][workload][schedule]") {
  const Scenario sc = parse_scenario_text(
      R"({"model": {"name": "mixtral-8x7b", "seq_len": 4096}, "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"ep": 8, "global_batch": 24, "pipeline_schedule": "combined_1f1b"}})");
  const Workload w = build_workload(sc);
  CHECK(w.schedule == PipelineSchedule::combined_1f1b);
  const auto ran = run_dry(w);
  CHECK(ran[0] == w.stages[0].tasks.size());
  CHECK(w.model_flops_per_step == Approx(megatron_flops(sc)).epsilon(1e-9));
  // The EP stream of the pair (backward of micro-batch 0, forward of 1): combine_bwd(0),
  // dispatch(1), dispatch_bwd(0), combine(1), ... (model_chunk_schedule_plan.py's docstring).
  std::vector<std::pair<OpName, int32_t>> ep;
  for (const Task& t : w.stages[0].tasks)
    if (t.stream == Stream::ep &&
        (t.micro_batch == 0 ? t.phase != Phase::forward : t.micro_batch == 1 && t.phase == Phase::forward))
      ep.emplace_back(t.op, t.micro_batch);
  REQUIRE(ep.size() >= 4);
  CHECK(ep[0] == std::pair{OpName::ep_combine, 0});
  CHECK(ep[1] == std::pair{OpName::ep_dispatch, 1});
  CHECK(ep[2] == std::pair{OpName::ep_dispatch, 0});
  CHECK(ep[3] == std::pair{OpName::ep_combine, 1});
}

TEST_CASE("DualPipe: each stage holds its own and its mirror's layers, every message pairs up",
          "[sim][workload][schedule]") {
  const std::string base =
      R"({"model": {"name": "deepseek-v3", "layers": 8, "seq_len": 1024}, "cluster": {"gpu": "h800", "num_gpus": 64},
      "layout": {"pp": 4, "ep": 16, "global_batch": 128, "precision": "fp8")";
  const Workload dual = build_workload(parse_scenario_text(base + R"(, "pipeline_schedule": "dualpipe"}})"));
  const Workload plain = build_workload(parse_scenario_text(base + "}}"));
  REQUIRE(dual.micro_batches == 8);
  const auto ran = run_dry(dual);
  for (size_t s = 0; s < dual.stages.size(); ++s) CHECK(ran[s] == dual.stages[s].tasks.size());
  CHECK(dual.model_flops_per_step == Approx(plain.model_flops_per_step).epsilon(1e-9));
  // Stage 1 holds layers 2-3 (its own) and 4-5 (stage 2's): two copies of the parameters over the pipeline.
  CHECK(dual.stages[1].layers == std::vector<int32_t>{2, 3, 4, 5});
  double dual_params = 0, plain_params = 0;
  for (size_t s = 0; s < 4; ++s) {
    dual_params += dual.stages[s].params;
    plain_params += plain.stages[s].params;
  }
  CHECK(dual_params == Approx(2 * plain_params));
}
