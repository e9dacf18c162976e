// The workload builder: DAG invariants (FLOPs equal Megatron's count times the recompute
// share, every task runs, no cycles, pipeline messages pair up), schedules and layer splits.
#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <numeric>
#include <tuple>

#include "simrun/common/error.hpp"
#include "simrun/models/counts.hpp"
#include "simrun/models/moe_routing.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/cost/workload_cost.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

// Runs every stage program with zero-duration tasks under the executor's rules (streams in
// order, explicit deps, a recv completes when its send does). Returns tasks run per stage.
std::vector<size_t> run_dry(const Workload& w) {
  const size_t stages = w.stages.size();
  std::vector<std::vector<uint8_t>> done(stages);
  std::vector<std::array<std::vector<uint32_t>, kStreamCount>> queues(stages);
  std::vector<std::array<size_t, kStreamCount>> head(stages);
  for (size_t s = 0; s < stages; ++s) {
    done[s].assign(w.stages[s].tasks.size(), 0);
    head[s].fill(0);
    for (uint32_t i = 0; i < w.stages[s].tasks.size(); ++i) {
      const Task& t = w.stages[s].tasks[i];
      for (uint16_t k = 0; k < t.dep_count; ++k)
        REQUIRE(w.stages[s].dep(t, k) < i);  // deps point back: acyclic
      if (t.kind != TaskKind::recv) queues[s][static_cast<size_t>(t.stream)].push_back(i);
      if (t.kind == TaskKind::send) REQUIRE(t.peer_task != kNoTask);
    }
  }
  std::vector<size_t> count(stages, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t s = 0; s < stages; ++s) {
      const StageProgram& p = w.stages[s];
      for (int st = 0; st < kStreamCount; ++st) {
        auto& q = queues[s][static_cast<size_t>(st)];
        while (head[s][static_cast<size_t>(st)] < q.size()) {
          const uint32_t i = q[head[s][static_cast<size_t>(st)]];
          const Task& t = p.tasks[i];
          bool ready = true;
          for (uint16_t k = 0; k < t.dep_count; ++k) ready = ready && done[s][p.dep(t, k)];
          if (!ready) break;
          done[s][i] = 1;
          ++count[s];
          ++head[s][static_cast<size_t>(st)];
          progress = true;
          if (t.kind == TaskKind::send) {
            const auto peer = static_cast<size_t>(t.peer_stage);
            REQUIRE(w.stages[peer].tasks[t.peer_task].kind == TaskKind::recv);
            REQUIRE(!done[peer][t.peer_task]);
            done[peer][t.peer_task] = 1;
            ++count[peer];
          }
        }
      }
    }
  }
  return count;
}

double megatron_flops(const Scenario& sc) {
  return count_flops_per_sequence(sc.model, AttentionFlops::causal).total() * double(sc.layout.global_batch);
}

// Llama-3 8B at 32K tokens on `gpus` H100s under `layout` (one micro-batch per pipeline, no
// recompute): the long-context workload the context-parallelism tests read.
Workload long_context_workload(const std::string& layout, int64_t gpus = 8) {
  const Scenario sc = parse_scenario_text(
      R"({"model": {"name": "llama3-8b", "seq_len": 32768}, "cluster": {"gpu": "h100-sxm", "num_gpus": )" +
      std::to_string(gpus) + R"(}, "layout": {)" + layout + R"(, "recompute": "none"}})");
  return build_workload(sc);
}

// The attention core's first forward block under `layout` (long_context_workload), less its
// launch overhead.
double forward_core_s(const std::string& layout) {
  const Workload w = long_context_workload(layout);
  const ComputeModel cm(gpu("h100-sxm"), ComputeParams{});
  for (const Task& t : w.stages[0].tasks)
    if (t.op == OpName::attn_core && t.phase == Phase::forward)
      return cm.op_seconds(w.stages[0].shape(t)) - ComputeParams{}.launch_overhead_s;
  return 0.0;
}

}  // namespace

TEST_CASE("FLOPs of the DAG equal Megatron's count times (1 + recompute share)", "[sim][workload]") {
  const auto recompute = GENERATE(std::string("none"), std::string("selective"), std::string("full"));
  const auto layout = GENERATE(std::string(R"("tp": 2, "pp": 2, "dp": 2, "virtual_stages": 2)"),
                               std::string(R"("tp": 1, "pp": 4, "dp": 2, "zero_stage": 3, "pp": 1, "dp": 8)"),
                               std::string(R"("tp": 4, "pp": 1, "dp": 1, "cp": 2, "zero_stage": 1)"),
                               std::string(R"("tp": 2, "pp": 1, "dp": 1, "cp": 4, "cp_comm_type": "a2a")"));
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {)" + layout +
                          R"(, "global_batch": 16, "recompute": ")" + recompute + R"("}})");
  const Workload w = build_workload(sc);
  const double megatron = megatron_flops(sc);
  CHECK(w.model_flops_per_step == Approx(megatron).epsilon(1e-9));
  const FlopCounts f = count_flops_per_sequence(sc.model, AttentionFlops::causal);
  double share = 0;
  if (recompute == "full") share = (f.dense_gemms + f.attention_core) / 3.0 / f.total();
  if (recompute == "selective") share = f.attention_core / 3.0 / f.total();
  CHECK(w.hardware_flops_per_step == Approx(megatron * (1 + share)).epsilon(1e-9));
}

TEST_CASE("context parallelism runs Transformer Engine's ring: cp blocks, each after its K,V arrive",
          "[sim][workload]") {
  // Llama-3 8B, 32K tokens over CP 4 (TP 2): each rank holds 8K tokens of each sequence; one
  // ring step moves one rank's K and V (8K tokens × 2 × 4 KV heads of 128 over TP 2, bf16).
  const Workload w = long_context_workload(R"("tp": 2, "cp": 4)");
  const StageProgram& p = w.stages[0];
  const double block = 8192.0 * 2 * (8 * 128 / 2) * 2;
  std::map<Phase, std::vector<double>> exchanges;  // layer 3's, in program order
  std::map<Phase, int64_t> blocks;
  for (uint32_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    if (t.layer != 3) continue;
    if (t.op == OpName::cp_kv) {
      CHECK(t.coll == CollectiveOp::send_recv);
      CHECK(t.group == GroupKind::cp);
      exchanges[t.phase].push_back(t.comm_bytes / block);
    }
    if (t.op == OpName::attn_core) {
      ++blocks[t.phase];
      // Every block but the first waits for the exchange issued before the previous block: the
      // forward's block k for the K,V that the k-th step brought.
      bool waits_for_exchange = false;
      for (uint16_t k = 0; k < t.dep_count; ++k)
        waits_for_exchange = waits_for_exchange || p.tasks[p.dep(t, k)].op == OpName::cp_kv;
      CHECK(waits_for_exchange == (blocks[t.phase] > 1));
    }
  }
  // Forward: three steps of K,V. Backward: K,V, then K,V with dK,dV twice, then dK,dV home.
  CHECK(exchanges[Phase::forward] == std::vector<double>{1, 1, 1});
  CHECK(exchanges[Phase::backward] == std::vector<double>{1, 2, 2, 1});
  CHECK(blocks[Phase::forward] == 4);
  CHECK(blocks[Phase::backward] == 4);
}

TEST_CASE("all-gather context parallelism gathers K,V before the core and reduce-scatters dK,dV after",
          "[sim][workload]") {
  // Llama-3 8B, 32K tokens over CP 4 (TP 2): every rank's 8K tokens of K and V (4 KV heads of
  // 128 over TP 2, bf16) gathered to each; the core runs the local queries against all 32K keys.
  const Workload w = long_context_workload(R"("tp": 2, "cp": 4, "cp_comm_type": "all_gather")");
  const StageProgram& p = w.stages[0];
  const double gathered = 32768.0 * 2 * (8 * 128 / 2) * 2;
  std::map<Phase, std::vector<CollectiveOp>> exchanges;  // layer 3's, in program order
  std::map<Phase, int64_t> cores;
  uint32_t last_exchange = kNoTask;
  bool first_after_scatter_waits = false;
  for (uint32_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    if (t.layer != 3) continue;
    auto waits_on = [&](uint32_t task) {
      for (uint16_t k = 0; k < t.dep_count; ++k)
        if (p.dep(t, k) == task) return true;
      return false;
    };
    if (t.op == OpName::cp_kv) {
      CHECK(t.group == GroupKind::cp);
      CHECK(t.comm_bytes == Approx(gathered));
      exchanges[t.phase].push_back(t.coll);
      last_exchange = i;
    }
    if (t.op == OpName::attn_core) {
      ++cores[t.phase];
      CHECK(waits_on(last_exchange));  // the gather is exposed
    }
    if (t.kind == TaskKind::compute && t.op != OpName::attn_core && t.phase == Phase::backward &&
        last_exchange != kNoTask && p.tasks[last_exchange].coll == CollectiveOp::reduce_scatter) {
      first_after_scatter_waits = waits_on(last_exchange);  // the next op back needs dK,dV home
      last_exchange = kNoTask;
    }
  }
  CHECK(exchanges[Phase::forward] == std::vector<CollectiveOp>{CollectiveOp::all_gather});
  CHECK(exchanges[Phase::backward] ==
        std::vector<CollectiveOp>{CollectiveOp::all_gather, CollectiveOp::reduce_scatter});
  CHECK(cores[Phase::forward] == 1);
  CHECK(cores[Phase::backward] == 1);
  CHECK(first_after_scatter_waits);
  // A quarter of the queries against every key: a quarter of the core's time without CP.
  CHECK(forward_core_s(R"("tp": 2, "cp": 4, "cp_comm_type": "all_gather")") ==
        Approx(forward_core_s(R"("tp": 2, "cp": 1)") / 4).epsilon(1e-6));
}

TEST_CASE("a2a+p2p runs the ring between the all-to-alls, on the first level's tokens and heads",
          "[sim][workload]") {
  // Llama-3 8B, 32K tokens over CP 8 as [2, 4] (TP 2): 4K tokens a rank; the all-to-all over
  // two ranks leaves 8K tokens with 8 query and 2 KV heads, and the ring passes those K,V (the
  // same bytes as one rank's own) around four.
  const Workload w = long_context_workload(
      R"("tp": 2, "cp": 8, "cp_comm_type": "a2a+p2p", "hierarchical_context_parallel_sizes": [2, 4])", 16);
  const double tokens = 4096, q = 16 * 128, kv = 4 * 128, block = tokens * 2 * kv * 2;
  struct Exchange {
    OpName op;
    GroupKind group;
    double bytes;
    bool operator==(const Exchange&) const = default;
  };
  std::map<Phase, std::vector<Exchange>> exchanges;  // layer 3's, in program order
  std::map<Phase, int64_t> cores;
  for (const Task& t : w.stages[0].tasks) {
    if (t.layer != 3) continue;
    if (t.op == OpName::cp_a2a || t.op == OpName::cp_kv)
      exchanges[t.phase].push_back({t.op, t.group, t.comm_bytes});
    if (t.op == OpName::attn_core) ++cores[t.phase];
  }
  const Exchange qkv{OpName::cp_a2a, GroupKind::cp_a2a, tokens * (q + 2 * kv) * 2};
  const Exchange out{OpName::cp_a2a, GroupKind::cp_a2a, tokens * q * 2};
  auto ring = [&](double blocks) { return Exchange{OpName::cp_kv, GroupKind::cp_ring, blocks * block}; };
  CHECK(exchanges[Phase::forward] == std::vector<Exchange>{qkv, ring(1), ring(1), ring(1), out});
  CHECK(exchanges[Phase::backward] == std::vector<Exchange>{out, ring(1), ring(2), ring(2), ring(1), qkv});
  CHECK(cores[Phase::forward] == 4);
  CHECK(cores[Phase::backward] == 4);
  // A step of [2, 2] over TP 2: half the heads over twice the tokens against half the keys, as a
  // step of the plain ring over two with TP 4.
  CHECK(
      forward_core_s(
          R"("tp": 2, "cp": 4, "cp_comm_type": "a2a+p2p", "hierarchical_context_parallel_sizes": [2, 2])") ==
      Approx(forward_core_s(R"("tp": 4, "cp": 2)")).epsilon(1e-6));
}

TEST_CASE("Ulysses context parallelism trades the sequence split for a head split around the core",
          "[sim][workload]") {
  // Llama-3 8B, 32K tokens over CP 4 (TP 2): 16 query and 4 KV heads per rank before the
  // all-to-all, 4 and 1 after it, for all 32K tokens.
  const Workload w = long_context_workload(R"("tp": 2, "cp": 4, "cp_comm_type": "a2a")");
  const StageProgram& p = w.stages[0];
  const double tokens = 8192, q = 16 * 128, kv = 4 * 128;
  std::map<Phase, std::vector<double>> exchanges;  // layer 3's, in program order, in bytes
  std::map<Phase, int64_t> cores;
  for (const Task& t : p.tasks) {
    if (t.layer != 3) continue;
    if (t.op == OpName::cp_a2a) {
      CHECK(t.coll == CollectiveOp::all_to_all);
      CHECK(t.group == GroupKind::cp);
      exchanges[t.phase].push_back(t.comm_bytes);
    }
    if (t.op == OpName::attn_core) ++cores[t.phase];
  }
  CHECK(exchanges[Phase::forward] == std::vector<double>{tokens * (q + 2 * kv) * 2, tokens * q * 2});
  CHECK(exchanges[Phase::backward] == std::vector<double>{tokens * q * 2, tokens * (q + 2 * kv) * 2});
  CHECK(cores[Phase::forward] == 1);
  CHECK(cores[Phase::backward] == 1);
  // A quarter of the heads over the whole sequence: a quarter of the core's time without CP.
  CHECK(forward_core_s(R"("tp": 2, "cp": 4, "cp_comm_type": "a2a")") ==
        Approx(forward_core_s(R"("tp": 2, "cp": 1)") / 4).epsilon(1e-6));
}

TEST_CASE("every task of every stage runs: no cycles, no deadlock, every send meets its recv",
          "[sim][workload]") {
  const auto layout =
      GENERATE(std::string(R"("tp": 1, "pp": 4, "dp": 2, "global_batch": 16)"),
               std::string(R"("tp": 2, "pp": 4, "dp": 1, "virtual_stages": 2, "global_batch": 8)"),
               std::string(R"("tp": 1, "pp": 8, "dp": 1, "virtual_stages": 2, "global_batch": 8)"),
               std::string(R"("tp": 1, "pp": 8, "dp": 1, "virtual_stages": 4, "global_batch": 24)"),
               std::string(R"("tp": 1, "pp": 2, "dp": 4, "global_batch": 4, "zero_stage": 2)"));
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {)" + layout +
                          R"(, "recompute": "full"}})");
  const Workload w = build_workload(sc);
  const auto ran = run_dry(w);
  for (size_t s = 0; s < w.stages.size(); ++s) CHECK(ran[s] == w.stages[s].tasks.size());
}

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

TEST_CASE("bad layouts are refused with the reason, doubtful ones warned about", "[sim][workload][errors]") {
  Scenario sc = parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 1, "pp": 8, "dp": 1, "global_batch": 4}})");
  const Workload w = build_workload(sc);
  REQUIRE_FALSE(w.warnings.empty());
  CHECK(w.warnings[0].find("only 4 micro-batches for pp=8: the pipeline never fills") != std::string::npos);
  sc.layout.virtual_stages = 2;
  CHECK_THROWS_WITH(build_workload(sc),
                    Catch::Contains("layout.global_batch") && Catch::Contains("interleaved"));
  // An interleaved order that cannot complete is refused before it is simulated.
  Scenario il = parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 4},
      "layout": {"tp": 1, "pp": 4, "dp": 1, "virtual_stages": 4, "global_batch": 5}})");
  CHECK_THROWS_WITH(build_workload(il), Catch::Contains("layout.global_batch") &&
                                            Catch::Contains("cannot complete") &&
                                            Catch::Contains("global_batch 8"));
  il.layout.virtual_stages = 2;
  CHECK_NOTHROW(build_workload(il));
}

TEST_CASE("TP comm overlap: every sequence-parallel all-gather runs beside the GEMM after it",
          "[sim][workload]") {
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 8, "pp": 1, "dp": 1, "global_batch": 2, "sequence_parallel": true}})");
  // TP all-gathers whose next compute op (the GEMM that consumes them: qkv/fc1 forward,
  // proj/fc2 dgrad, or the dgrad running while the wgrad's input is re-gathered) waits for
  // them. Megatron's default exposes the forward and output-gradient gathers; TE's userbuffers
  // (full overlap) pipeline every one with that GEMM.
  auto all_gathers_blocking_next_op = [&](TpCommOverlap overlap) {
    WorkloadOptions o;
    o.tp_overlap = overlap;
    const Workload w = build_workload(sc, o);
    const StageProgram& p = w.stages[0];
    int blocking = 0, gathers = 0;
    for (uint32_t i = 0; i < p.tasks.size(); ++i) {
      const Task& ag = p.tasks[i];
      if (ag.kind != TaskKind::collective || ag.group != GroupKind::tp || ag.coll != CollectiveOp::all_gather)
        continue;
      ++gathers;
      uint32_t j = i + 1;
      while (j < p.tasks.size() && p.tasks[j].kind != TaskKind::compute) ++j;
      REQUIRE(j < p.tasks.size());
      const OpName next = p.tasks[j].op;
      if (next == OpName::embedding) continue;  // the embedding's scatter-add has no GEMM to hide behind
      for (uint16_t k = 0; k < p.tasks[j].dep_count; ++k)
        if (p.dep(p.tasks[j], k) == i) ++blocking;
    }
    REQUIRE(gathers > 0);
    return blocking;
  };
  CHECK(all_gathers_blocking_next_op(TpCommOverlap::backward_async) > 0);
  CHECK(all_gathers_blocking_next_op(TpCommOverlap::full) == 0);
}

TEST_CASE(
    "MoE layers: FLOPs equal Megatron's top_k count, every task runs, 4 all-to-alls a layer (6 recomputed)",
    "[sim][workload][moe]") {
  // Mixtral 8x7B (8 experts, top-2) on 16 GPUs: EP 8 over the data-parallel ranks, with expert
  // TP equal to TP and with expert TP 1 (Megatron-Core's two expert decompositions).
  const auto layout = GENERATE(std::string(R"("tp": 1, "pp": 2, "dp": 8, "ep": 8, "global_batch": 16)"),
                               std::string(R"("tp": 2, "pp": 2, "dp": 4, "ep": 4, "global_batch": 8)"),
                               std::string(R"("tp": 2, "pp": 1, "dp": 8, "ep": 8, "expert_tp": 1,
                                              "global_batch": 16, "recompute": "full")"));
  const Scenario sc = parse_scenario_text(
      R"({"model": {"name": "mixtral-8x7b", "seq_len": 4096}, "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
      "layout": {)" +
      layout + "}}");
  const Workload w = build_workload(sc);
  CHECK(w.model_flops_per_step == Approx(megatron_flops(sc)).epsilon(1e-9));
  const auto ran = run_dry(w);
  for (size_t s = 0; s < w.stages.size(); ++s) CHECK(ran[s] == w.stages[s].tasks.size());

  const StageProgram& p = w.stages[0];
  const int64_t layer_runs = int64_t(p.layers.size()) * w.micro_batches;
  const int64_t passes = sc.layout.recompute == Recompute::full ? 3 : 2;  // fwd, (recompute), bwd
  int64_t a2a = 0, expert_grad_reduces = 0, sorts = 0;
  for (const Task& t : p.tasks) {
    if (t.op == OpName::moe_sort_chunks) ++sorts;
    if (t.kind == TaskKind::collective && t.coll == CollectiveOp::all_to_all) {
      CHECK(t.group == GroupKind::ep);
      // Each rank's top_k (2) copies of its sequence-parallel tokens (micro-batch 1), h 4096, bf16.
      CHECK(t.comm_bytes == Approx(4096.0 / double(sc.layout.tp) * 2 * 4096 * 2));
      ++a2a;
    }
    if (t.op == OpName::dp_grad_reduce && t.group == GroupKind::edp) ++expert_grad_reduces;
  }
  CHECK(a2a == 2 * passes * layer_runs);
  // Several local experts: the received tokens are regrouped by expert and back, in every pass.
  CHECK(sorts == (8 / sc.layout.ep > 1 ? 2 * passes * layer_runs : 0));
  CHECK((expert_grad_reduces > 0) ==
        (sc.layout.expert_dp() > 1));  // none when each rank holds its own experts
  // Experts: 8 per layer, split over ep·expert_tp ranks; they shard over the expert-DP group.
  const double per_expert = 3.0 * 4096 * 14336;
  const double stage_layers = double(p.layers.size());
  CHECK(p.expert_params ==
        Approx(stage_layers * 8 * per_expert / double(sc.layout.ep * sc.layout.expert_tp)));
}

TEST_CASE("MLA layers: FLOPs equal Megatron's count with the latent projections, every task runs",
          "[sim][workload][mla]") {
  // DeepSeek-V3: q_lora 1536, kv_lora 512, d_nope 128 + d_rope 64, d_v 128; 3 dense layers.
  const auto layout = GENERATE(std::string(R"("tp": 1, "pp": 1, "dp": 16, "ep": 16, "global_batch": 16)"),
                               std::string(R"("tp": 2, "pp": 1, "dp": 8, "ep": 8, "expert_tp": 1,
                                              "global_batch": 8, "recompute": "full")"));
  const Scenario sc = parse_scenario_text(
      R"({"model": "deepseek-v3", "cluster": {"gpu": "h100-sxm", "num_gpus": 16}, "layout": {)" + layout +
      "}}");
  const Workload w = build_workload(sc);
  CHECK(w.model_flops_per_step == Approx(megatron_flops(sc)).epsilon(1e-9));
  const auto ran = run_dry(w);
  for (size_t s = 0; s < w.stages.size(); ++s) CHECK(ran[s] == w.stages[s].tasks.size());
  int64_t q_down = 0, latent_reduces = 0;
  for (const Task& t : w.stages[0].tasks) {
    if (t.op == OpName::mla_q_down) ++q_down;
    if (t.op == OpName::tp_ar_latent) ++latent_reduces;
  }
  const int64_t passes = sc.layout.recompute == Recompute::full ? 2 : 1;  // forward (+ recompute)
  CHECK(q_down == passes * 61 * w.micro_batches);
  CHECK(latent_reduces == (sc.layout.tp > 1 ? 2 * 61 * w.micro_batches : 0));  // Q and KV latents
}

TEST_CASE("MLA with context parallelism: the exchanges carry K and V at their own head widths",
          "[sim][workload][mla]") {
  // DeepSeek-V3, 16K tokens over CP 4 (TP 2): 4K tokens and 64 heads per rank. Keys are
  // d_nope + d_rope = 192 wide per head, values 128, so a ring step moves 4K × 64 × 320 bf16;
  // Ulysses sends queries (192) with keys and values before the core and the output (128) after.
  const std::string comm = GENERATE(std::string("p2p"), std::string("a2a"));
  const Scenario sc = parse_scenario_text(
      R"({"model": {"name": "deepseek-v3", "seq_len": 16384}, "cluster": {"gpu": "h100-sxm", "num_gpus": 64},
          "layout": {"tp": 2, "cp": 4, "ep": 8, "global_batch": 8, "recompute": "none", "cp_comm_type": ")" +
      comm + R"("}})");
  const Workload w = build_workload(sc);
  const double tokens = 4096, heads = 64, qk = 192, v = 128, bf16 = 2;
  std::map<Phase, std::vector<double>> exchanges;  // layer 3's, in program order, in bytes
  for (const Task& t : w.stages[0].tasks)
    if (t.layer == 3 && (t.op == OpName::cp_kv || t.op == OpName::cp_a2a))
      exchanges[t.phase].push_back(t.comm_bytes);
  INFO("cp_comm_type " << comm);
  if (comm == "p2p") {
    const double block = tokens * heads * (qk + v) * bf16;
    CHECK(exchanges[Phase::forward] == std::vector<double>{block, block, block});
    CHECK(exchanges[Phase::backward] == std::vector<double>{block, 2 * block, 2 * block, block});
  } else {
    const double qkv = tokens * heads * (2 * qk + v) * bf16, out = tokens * heads * v * bf16;
    CHECK(exchanges[Phase::forward] == std::vector<double>{qkv, out});
    CHECK(exchanges[Phase::backward] == std::vector<double>{out, qkv});
  }
  const auto ran = run_dry(w);
  CHECK(ran[0] == w.stages[0].tasks.size());
}

TEST_CASE("MoE with expert TP: each expert-TP collective runs in series with its all-to-all",
          "[sim][workload][moe]") {
  // Megatron-Core's alltoall dispatcher gathers the tokens the dispatch all-to-all brought over
  // the expert-TP group, and scatters the experts' output before the combine all-to-all sends
  // it back; the backward runs the reverse. Beside each other they took the longer of the two.
  const Scenario sc = parse_scenario_text(
      R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
          "layout": {"tp": 2, "dp": 8, "ep": 4, "global_batch": 16}})");
  REQUIRE(sc.layout.expert_tp == 2);
  const Workload w = build_workload(sc);
  const StageProgram& p = w.stages.front();
  auto depends_on = [&](const Task& t, OpName op) {
    for (uint16_t k = 0; k < t.dep_count; ++k)
      if (p.tasks[p.dep(t, k)].op == op && p.tasks[p.dep(t, k)].layer == t.layer) return true;
    return false;
  };
  int gathers = 0, combines = 0, dispatches = 0;
  for (const Task& t : p.tasks) {
    const bool forward = t.phase == Phase::forward;
    if (t.op == OpName::tp_ag_expert) {
      ++gathers;
      CHECK(depends_on(t, forward ? OpName::ep_dispatch : OpName::ep_combine));
    }
    if (t.op == OpName::ep_combine && forward) {
      ++combines;
      CHECK(depends_on(t, OpName::tp_rs_expert));
    }
    if (t.op == OpName::ep_dispatch && !forward) {
      ++dispatches;
      CHECK(depends_on(t, OpName::tp_rs_expert));
    }
  }
  const int layer_passes = int(sc.model.layers) * int(sc.layout.num_microbatches());
  CHECK(gathers == 2 * layer_passes);
  CHECK(combines == layer_passes);
  CHECK(dispatches == layer_passes);
}

TEST_CASE("an expert capacity factor scales the tokens each expert takes, and only those",
          "[sim][workload][moe]") {
  // Megatron-Core's drop-and-pad permutation (--moe-pad-expert-input-to-capacity) pads
  // each expert's copies to the capacity before the all-to-all: the all-to-alls, permutes and
  // expert GEMMs carry factor times the balanced copies; attention and the router do not change,
  // nor do the model FLOPs (Megatron's count takes the routed tokens, not the padding).
  const std::string text = R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
                                "layout": {"tp": 2, "dp": 8, "ep": 4, "global_batch": 8)";
  const ComputeModel cm(gpu("h100-sxm"), ComputeParams{});
  struct Totals {
    std::map<OpName, double> flops, bytes, seconds;
  };
  auto totals = [&](const std::string& extra) {
    const Workload w = build_workload(parse_scenario_text(text + extra + "}}"));
    const StageProgram& stage = w.stages.front();
    const ProgramCost cost = cost_program(stage, cm);
    Totals t;
    for (const Task& k : stage.tasks) {
      t.flops[k.op] += k.flops;
      t.bytes[k.op] += k.kind == TaskKind::compute ? stage.hbm_bytes(k) : k.comm_bytes;
      t.seconds[k.op] += cost.of(k).seconds();
    }
    return t;
  };
  const Totals one = totals(""), padded = totals(R"(, "moe_capacity_factor": 1.5)");
  for (const OpName op : {OpName::ep_dispatch, OpName::ep_combine, OpName::tp_ag_expert,
                          OpName::moe_sort_chunks, OpName::expert_act, OpName::moe_permute})
    CHECK(padded.bytes.at(op) == Approx(1.5 * one.bytes.at(op)));
  for (const OpName op : {OpName::expert_fc1, OpName::expert_fc2}) {
    INFO(to_string(op) << ": " << one.seconds.at(op) << " -> " << padded.seconds.at(op) << " s");
    CHECK(padded.flops.at(op) == one.flops.at(op));
    // 1.5x the rows: up to 1.5x the time (a larger GEMM runs nearer its peak).
    CHECK(padded.seconds.at(op) > 1.3 * one.seconds.at(op));
    CHECK(padded.seconds.at(op) <= 1.5 * one.seconds.at(op) * (1 + 1e-9));
  }
  for (const OpName op : {OpName::qkv, OpName::attn_core, OpName::router}) {
    CHECK(padded.flops.at(op) == one.flops.at(op));
    CHECK(padded.seconds.at(op) == one.seconds.at(op));
  }
}

TEST_CASE("hardware FLOPs add the expert work on capacity padding, as the closed form counts it",
          "[sim][workload][moe]") {
  const auto recompute = GENERATE(std::string("none"), std::string("full"));
  const Scenario sc = parse_scenario_text(
      R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
          "layout": {"tp": 2, "pp": 2, "dp": 4, "ep": 4, "global_batch": 8, "moe_capacity_factor": 1.5,
                     "recompute": ")" +
      recompute + R"("}})");
  const Workload w = build_workload(sc);
  const FlopCounts per_sequence = count_flops_per_sequence(sc.model, AttentionFlops::causal);
  const double routed = per_sequence.routed_experts * double(sc.layout.global_batch);
  const double recomputed = recompute == "full" ? 4.0 / 3.0 : 1.0;
  CHECK(w.model_flops_per_step == Approx(megatron_flops(sc)).epsilon(1e-9));
  const double recompute_flops =
      recompute == "full" ? (per_sequence.dense_gemms + per_sequence.attention_core) / 3.0 * 8 : 0.0;
  CHECK(w.hardware_flops_per_step ==
        Approx(megatron_flops(sc) + recompute_flops + 0.5 * routed * recomputed).epsilon(1e-9));
  const StepFlops closed = step_flops(sc.model, sc.layout, AttentionFlops::causal);
  CHECK(closed.hardware == Approx(w.hardware_flops_per_step).epsilon(1e-9));
}

TEST_CASE("MoE layouts the event simulation cannot run are refused with the reason", "[sim][workload][moe]") {
  const std::string base =
      R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16}, "layout": )";
  auto error_of = [&](const std::string& layout) {
    try {
      build_workload(parse_scenario_text(base + layout + "}"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error_of(R"({"tp": 2, "dp": 8, "ep": 8, "sequence_parallel": false})"),
             Catch::Contains("needs sequence_parallel"));
  CHECK(error_of(R"({"tp": 2, "dp": 8, "ep": 8, "expert_tp": 1})").empty());
}

TEST_CASE("ZeRO-3 with MoE: dense weights move over the DP group, routed experts over expert-DP",
          "[sim][workload][moe]") {
  struct Case {
    int64_t gpus;
    std::string layout;
    int64_t dp, expert_dp;
  };
  // One micro-batch each (global batch = dp): FSDP without pipelining gathers and
  // reduce-scatters every micro-batch.
  const Case c =
      GENERATE(Case{16, R"("tp": 1, "dp": 16, "ep": 8, "global_batch": 16)", 16, 2},
               Case{8, R"("tp": 1, "dp": 8, "ep": 8, "global_batch": 8)", 8, 1},  // an expert a rank
               // TP 8 inside the node, EP over it with expert_tp 1: no dense sharding.
               Case{8, R"("tp": 8, "dp": 1, "ep": 2, "expert_tp": 1, "global_batch": 1)", 1, 4});
  const Scenario sc =
      parse_scenario_text(R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": )" +
                          std::to_string(c.gpus) + R"(}, "layout": {)" + c.layout + R"(, "zero_stage": 3}})");
  INFO(c.layout);
  const WorkloadOptions o;
  const Workload w = build_workload(sc, o, default_schedule(sc.layout));
  const StageProgram& p = w.stages[0];
  const double elem = 2.0;  // bf16 weights gathered
  std::map<GroupKind, double> gathered, reduced;
  std::map<GroupKind, int64_t> gathers;
  for (const Task& t : p.tasks) {
    if (t.op == OpName::fsdp_gather) {
      gathered[t.group] += t.comm_bytes;
      ++gathers[t.group];
      CHECK(t.coll == CollectiveOp::all_gather);
    }
    if (t.op == OpName::fsdp_reduce) {
      reduced[t.group] += t.comm_bytes;
      CHECK(t.coll == CollectiveOp::reduce_scatter);
    }
  }
  const size_t groups_reducing = reduced.size(), groups_gathering = gathers.size();
  const double dense = p.params - p.expert_params;
  // Each parameter reduce-scattered once, over the group that shards it; none over a group of one.
  CHECK(reduced[GroupKind::dp] == Approx(c.dp > 1 ? dense * o.grad_reduce_bytes : 0.0));
  CHECK(reduced[GroupKind::edp] == Approx(c.expert_dp > 1 ? p.expert_params * o.grad_reduce_bytes : 0.0));
  CHECK(groups_reducing == size_t(c.dp > 1) + size_t(c.expert_dp > 1));
  if (c.expert_dp > 1) {
    // Every MoE layer's experts gathered for its forward and again for its backward, as its
    // dense weights are: 32 layers twice.
    CHECK(gathers[GroupKind::edp] == 2 * sc.model.layers);
    CHECK(gathered[GroupKind::edp] == Approx(2 * p.expert_params * elem));
  }
  if (c.dp > 1) CHECK(gathers[GroupKind::dp] == 2 * sc.model.layers + 2);  // and the embedding, the head
  CHECK(groups_gathering == size_t(c.dp > 1) + size_t(c.expert_dp > 1));
}

TEST_CASE("gradient buckets: every parameter reduced once, Megatron-Core buckets only the first chunk",
          "[sim][workload]") {
  // Llama-3 8B on 16 GPUs, pp 2 with 2 chunks a stage (8 layers each), dp 8, ZeRO-1: a layer
  // (218M parameters) fills a max(40M, 8M) bucket on its own.
  const Scenario sc = parse_scenario_text(
      R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
          "layout": {"tp": 1, "pp": 2, "dp": 8, "virtual_stages": 2, "zero_stage": 1, "global_batch": 16}})");
  auto reduces = [&](bool one_bucket_after_first_chunk) {
    WorkloadOptions o;
    o.one_bucket_after_first_chunk = one_bucket_after_first_chunk;
    const Workload w = build_workload(sc, o, default_schedule(sc.layout));
    const StageProgram& p = w.stages[0];
    int64_t count = 0;
    double bytes = 0;
    for (const Task& t : p.tasks)
      if (t.op == OpName::dp_grad_reduce) {
        CHECK(t.coll == CollectiveOp::reduce_scatter);
        ++count;
        bytes += t.comm_bytes;
      }
    CHECK(bytes == Approx(p.params * o.grad_reduce_bytes));  // each parameter exactly once
    return count;
  };
  // Stage 0 holds chunk 0 (layers 0-7 and the embedding) and chunk 1 (layers 16-23).
  CHECK(reduces(true) == 8 + 1 + 1);
  CHECK(reduces(false) == 8 + 1 + 8);
}

TEST_CASE("shared experts beside the all-to-alls: the same ops, none waiting for the all-to-all beside it",
          "[sim][workload][moe]") {
  // DeepSeek-V3 (one shared expert) with TP 2 and sequence parallelism, EP 8, under Megatron-Core's
  // --moe-shared-expert-overlap: FC1 runs while the dispatch is in flight, FC2 while the combine
  // is, and in the backward FC2's gradients beside the combine's all-to-all, FC1's beside the
  // dispatch's.
  const Scenario sc = parse_scenario_text(
      R"({"model": {"name": "deepseek-v3", "seq_len": 2048}, "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
          "layout": {"tp": 2, "dp": 8, "ep": 8, "expert_tp": 1, "sequence_parallel": true, "global_batch": 8}})");
  WorkloadOptions overlapped;
  overlapped.moe_shared_expert_overlap = true;
  const Workload serial = build_workload(sc);
  const Workload w = build_workload(sc, overlapped);
  const StageProgram& p = w.stages.front();
  CHECK(w.model_flops_per_step == serial.model_flops_per_step);
  CHECK(p.tasks.size() == serial.stages.front().tasks.size());
  const auto ran = run_dry(w);
  CHECK(ran[0] == p.tasks.size());

  // One MoE layer's tasks of one phase, in program order.
  auto layer_tasks = [&](const StageProgram& prog, Phase phase) {
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < prog.tasks.size(); ++i)
      if (prog.tasks[i].layer == 3 && prog.tasks[i].micro_batch == 0 && prog.tasks[i].phase == phase)
        ids.push_back(i);
    return ids;
  };
  auto position = [&](const StageProgram& prog, const std::vector<uint32_t>& ids, OpName op, int nth = 0) {
    for (size_t k = 0; k < ids.size(); ++k)
      if (prog.tasks[ids[k]].op == op && nth-- == 0) return k;
    FAIL("no " << to_string(op));
    return size_t{0};
  };
  auto waits_for = [&](const StageProgram& prog, uint32_t task, OpName op) {
    const Task& t = prog.tasks[task];
    for (uint16_t k = 0; k < t.dep_count; ++k)
      if (prog.tasks[prog.dep(t, k)].op == op) return true;
    return false;
  };

  const std::vector<uint32_t> fwd = layer_tasks(p, Phase::forward);
  const size_t dispatch = position(p, fwd, OpName::ep_dispatch),
               combine = position(p, fwd, OpName::ep_combine);
  const size_t fc1 = position(p, fwd, OpName::fc1), fc2 = position(p, fwd, OpName::fc2);
  CHECK(dispatch < fc1);
  CHECK(fc1 < position(p, fwd, OpName::expert_fc1));
  CHECK(combine < fc2);
  CHECK(fc2 < position(p, fwd, OpName::moe_unpermute));
  CHECK_FALSE(waits_for(p, fwd[fc1], OpName::ep_dispatch));
  CHECK(waits_for(p, fwd[fc1], OpName::tp_ag_mlp));  // its input, gathered before the permutation
  CHECK(position(p, fwd, OpName::tp_ag_mlp) < position(p, fwd, OpName::moe_permute));
  CHECK_FALSE(waits_for(p, fwd[fc2], OpName::ep_combine));
  CHECK(waits_for(p, fwd[position(p, fwd, OpName::moe_sort_chunks)], OpName::ep_dispatch));
  CHECK(waits_for(p, fwd[position(p, fwd, OpName::moe_unpermute)], OpName::ep_combine));
  CHECK(waits_for(p, fwd[position(p, fwd, OpName::residual_mlp)], OpName::tp_rs_mlp));

  const std::vector<uint32_t> bwd = layer_tasks(p, Phase::backward);
  const size_t bwd_combine = position(p, bwd, OpName::ep_combine);
  const size_t bwd_dispatch = position(p, bwd, OpName::ep_dispatch);
  const size_t fc2_dgrad = position(p, bwd, OpName::fc2), fc1_dgrad = position(p, bwd, OpName::fc1);
  CHECK(bwd_combine < fc2_dgrad);
  CHECK(fc2_dgrad < position(p, bwd, OpName::expert_fc2));
  CHECK(bwd_dispatch < fc1_dgrad);
  CHECK(fc1_dgrad < position(p, bwd, OpName::moe_permute));
  CHECK_FALSE(waits_for(p, bwd[fc2_dgrad], OpName::ep_combine));
  CHECK_FALSE(waits_for(p, bwd[fc1_dgrad], OpName::ep_dispatch));
  CHECK(waits_for(p, bwd[position(p, bwd, OpName::ln_mlp)], OpName::tp_rs_mlp));

  // Without the option the shared expert follows the routed path (forward) and precedes it
  // (backward).
  const StageProgram& q = serial.stages.front();
  const std::vector<uint32_t> serial_fwd = layer_tasks(q, Phase::forward);
  CHECK(position(q, serial_fwd, OpName::moe_unpermute) < position(q, serial_fwd, OpName::fc1));
  const std::vector<uint32_t> serial_bwd = layer_tasks(q, Phase::backward);
  CHECK(position(q, serial_bwd, OpName::fc1) < position(q, serial_bwd, OpName::ep_combine));
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

namespace {
// The bytes of the first layer's EP all-to-alls of micro-batch 0 on stage 0, by op, phase and group.
std::map<std::tuple<OpName, Phase, GroupKind>, double> ep_bytes(const Workload& w) {
  std::map<std::tuple<OpName, Phase, GroupKind>, double> out;
  for (const Task& t : w.stages[0].tasks)
    if (t.kind == TaskKind::collective && is_ep(t.group))
      out.emplace(std::tuple{t.op, t.phase, t.group}, t.comm_bytes);
  return out;
}
const std::string kDeepSeekOn64 =
    R"({"model": {"name": "deepseek-v3", "layers": 5, "seq_len": 1024}, "cluster": {"gpu": "h800", "num_gpus": 64},
      "layout": {"ep": 64, "global_batch": 64}})";
}  // namespace

TEST_CASE("fp8 dispatch: the all-to-alls to the experts carry fp8 and scales, the combines 16 bits",
          "[sim][workload][moe]") {
  const Scenario sc = parse_scenario_text(kDeepSeekOn64);
  WorkloadOptions fp8;
  fp8.ep_dispatch_fp8 = true;
  const auto plain = ep_bytes(build_workload(sc)), cast = ep_bytes(build_workload(sc, fp8));
  const double ratio = (1.0 + 4.0 / 128.0) / 2.0;  // a byte and a 4-byte scale per 128, of 2 bytes
  using K = std::tuple<OpName, Phase, GroupKind>;
  const K dispatch{OpName::ep_dispatch, Phase::forward, GroupKind::ep},
      combine{OpName::ep_combine, Phase::forward, GroupKind::ep},
      combine_bwd{OpName::ep_combine, Phase::backward, GroupKind::ep},  // the output gradient, to the experts
      dispatch_bwd{OpName::ep_dispatch, Phase::backward, GroupKind::ep};
  for (const K& k : {dispatch, combine, combine_bwd, dispatch_bwd}) REQUIRE(plain.count(k) == 1);
  CHECK(cast.at(dispatch) == Approx(ratio * plain.at(dispatch)));
  CHECK(cast.at(combine_bwd) == Approx(ratio * plain.at(combine_bwd)));
  CHECK(cast.at(combine) == plain.at(combine));
  CHECK(cast.at(dispatch_bwd) == plain.at(dispatch_bwd));
  // Megatron's dispatcher: a copy per expert, Ts · top_k · h · 2 bytes.
  CHECK(plain.at(dispatch) == Approx(1024.0 * 8 * 7168 * 2));
}

TEST_CASE("DeepEP over nodes: one InfiniBand copy per destination node, the NVLink fan-out beside it",
          "[sim][workload][moe]") {
  const Scenario sc = parse_scenario_text(kDeepSeekOn64);
  REQUIRE(sc.layout.ep_intra() == 8);
  REQUIRE(sc.layout.ep_inter() == 8);
  WorkloadOptions deepep;
  deepep.host.moe_dispatcher = MoeDispatcher::flex;
  const Workload w = build_workload(sc, deepep);
  const EpExchange x = ep_exchange(sc, deepep);
  REQUIRE(x.two_level);
  // Node-limited routing (4 of 8 groups, one per node): expected distinct nodes and ranks.
  CHECK(x.node_copies == Approx(*expected_bins_reached(*sc.model.moe, 32)));
  CHECK(x.node_copies < 4.0);
  CHECK(x.rank_copies == Approx(*expected_bins_reached(*sc.model.moe, 4)));
  const auto bytes = ep_bytes(w);
  const double per_copy = 1024.0 * 7168 * 2;
  for (OpName op : {OpName::ep_dispatch, OpName::ep_combine})
    for (Phase phase : {Phase::forward, Phase::backward}) {
      CHECK(bytes.count({op, phase, GroupKind::ep}) == 0);
      CHECK(bytes.at({op, phase, GroupKind::ep_inter}) == Approx(per_copy * x.node_copies));
      CHECK(bytes.at({op, phase, GroupKind::ep_intra}) == Approx(per_copy * x.rank_copies));
    }
  // The InfiniBand bytes fall by top_k / distinct nodes against a copy per expert: 8 / 3.63.
  const auto flat = ep_bytes(build_workload(sc));
  CHECK(flat.at({OpName::ep_dispatch, Phase::forward, GroupKind::ep}) /
            bytes.at({OpName::ep_dispatch, Phase::forward, GroupKind::ep_inter}) ==
        Approx(2.204).margin(0.001));
  // The two levels run side by side: the NVLink one on its own stream, neither waiting for the other.
  for (const Task& t : w.stages[0].tasks)
    if (t.group == GroupKind::ep_intra) CHECK(t.stream == Stream::ep_intra);
  const auto ran = run_dry(w);
  for (size_t s = 0; s < w.stages.size(); ++s) CHECK(ran[s] == w.stages[s].tasks.size());
}

TEST_CASE("unrestricted routing, Megatron's dispatcher, one node: a copy per expert as before",
          "[sim][workload][moe]") {
  // Megatron's alltoall dispatcher sends every copy, node-limited routing or not.
  const Scenario deepseek = parse_scenario_text(kDeepSeekOn64);
  const EpExchange megatron = ep_exchange(deepseek, WorkloadOptions{});
  CHECK_FALSE(megatron.two_level);
  CHECK(megatron.copies == 8);
  // DeepEP inside one node: one all-to-all, a copy per distinct rank.
  WorkloadOptions deepep;
  deepep.host.moe_dispatcher = MoeDispatcher::flex;
  const Scenario one_node = parse_scenario_text(
      R"({"model": {"name": "deepseek-v3", "layers": 5, "seq_len": 1024}, "cluster": {"gpu": "h800", "num_gpus": 8},
      "layout": {"ep": 8, "global_batch": 8}})");
  const EpExchange inside = ep_exchange(one_node, deepep);
  CHECK_FALSE(inside.two_level);
  CHECK(inside.copies == Approx(*expected_bins_reached(*one_node.model.moe, 32)));
  // An unrestricted model under DeepEP over nodes: distinct nodes of all eight.
  const Scenario qwen = parse_scenario_text(
      R"({"model": {"name": "qwen3-30b-a3b", "layers": 2, "seq_len": 1024}, "cluster": {"gpu": "h800", "num_gpus": 16},
      "layout": {"ep": 16, "global_batch": 16}})");
  CHECK(qwen.layout.ep_inter() == 2);
  const EpExchange free = ep_exchange(qwen, deepep);
  REQUIRE(free.two_level);
  double all_elsewhere = 1;  // the 8 picks among 128 all miss a node's 64 experts
  for (int i = 0; i < 8; ++i) all_elsewhere *= (64.0 - i) / (128.0 - i);
  CHECK(free.node_copies == Approx(2 * (1 - all_elsewhere)));
  CHECK(ep_exchange(qwen, WorkloadOptions{}).copies == 8);
}
