// The workload builder: DAG invariants (FLOPs equal Megatron's count times the recompute
// share, every task runs, no cycles, pipeline messages pair up), context parallelism, MLA, TP
// overlap and gradient buckets. The schedules are in test_schedule.cpp, MoE layers in
// test_workload_moe.cpp.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "simrun/models/counts.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/cost/workload_cost.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "workload_dry_run.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

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
