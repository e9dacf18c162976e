// The MoE layer in the workload: FLOPs equal Megatron's top-k count, the dispatcher's
// all-to-alls (fp8 dispatch, DeepEP's per-node copies, unrestricted routing), expert TP, the
// capacity factor, shared experts beside the all-to-alls, ZeRO-3's expert-DP traffic, and the
// MoE layouts the event simulation refuses.
#include <catch2/catch.hpp>
#include <map>
#include <tuple>

#include "simrun/common/error.hpp"
#include "simrun/models/moe_routing.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/cost/workload_cost.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "workload_dry_run.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

// The bytes of the first layer's EP all-to-alls of micro-batch 0 on stage 0, by op, phase and group.
std::map<std::tuple<OpName, Phase, GroupKind>, double> ep_bytes(const Workload& w) {
  std::map<std::tuple<OpName, Phase, GroupKind>, double> out;
  for (const Task& t : w.stages[0].tasks)
    if (t.kind == TaskKind::collective && is_ep(t.group))
      out.emplace(std::tuple{t.op, t.phase, t.group}, t.comm_bytes);
  return out;
}

// DeepSeek-V3 (5 layers) on 64 H800 with EP 64.
const std::string kDeepSeekOn64 =
    R"({"model": {"name": "deepseek-v3", "layers": 5, "seq_len": 1024}, "cluster": {"gpu": "h800", "num_gpus": 64},
      "layout": {"ep": 64, "global_batch": 64}})";

}  // namespace

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
  const StepFlops closed =
      step_flops(sc.model, sc.layout, AttentionFlops::causal, SelectiveRecompute::attention_core);
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
