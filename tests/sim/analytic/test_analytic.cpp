// Tests of the analytic estimate: FLOPs against Megatron's closed form, MFU/HFU definitions,
// the step-time composition, collective traffic against the α-β forms, warnings, and the
// report JSON's contract keys.
#include <catch2/catch.hpp>
#include <string>

#include "analytic_fixtures.hpp"
#include "simrun/common/error.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/workload/workload.hpp"

using namespace simrun;

namespace {

// Megatron-LM num_floating_point_operations (HEAD, causal), closed form for a dense GQA model
// (ecosystem.md §6.2): F = 6·B·s·[L·h·ffn·f + L·(h·(q+2k) + q·h) + h·V] + 6·B·s²·L·q.
double megatron_causal_flops(const ModelSpec& m, double B) {
  const double s = double(m.seq_len), L = double(m.layers), h = double(m.hidden), ffn = double(m.ffn_hidden);
  const double f = m.ffn_act == FfnActivation::swiglu ? 3 : 2;
  const double q = double(m.heads * m.head_dim), k = double(m.kv_heads * m.head_dim), V = double(m.vocab);
  return 6 * B * s * (L * h * ffn * f + L * (h * (q + 2 * k) + q * h) + h * V) + 6 * B * s * s * L * q;
}

Scenario single_node(int64_t tp, bool sequence_parallel) {
  Scenario s = test::llama3_70b_1024_h100();
  s.model.layers = 8;  // a slice of Llama-3 70B that fits 8 GPUs
  s.cluster = test::h100_cluster(8);
  s.layout.tp = tp;
  s.layout.pp = 1;
  s.layout.dp = 8 / tp;
  s.layout.virtual_stages = 1;
  s.layout.sequence_parallel = sequence_parallel;
  s.layout.global_batch = 8 / tp * 4;
  return s;
}

}  // namespace

TEST_CASE("model FLOPs per step equal Megatron's causal closed form", "[sim][analytic]") {
  const ModelSpec m = test::llama3_70b();
  Layout l;
  l.global_batch = 512;
  const StepFlops f = step_flops(m, l, AttentionFlops::causal, SelectiveRecompute::attention_core);
  CHECK(f.model == Approx(megatron_causal_flops(m, 512)).epsilon(1e-9));
  CHECK(f.hardware == f.model);
  // The non-causal convention counts the s² term twice.
  const StepFlops nc = step_flops(m, l, AttentionFlops::non_causal, SelectiveRecompute::attention_core);
  const double s = 8192;
  CHECK(nc.model - f.model == Approx(6 * 512 * s * s * 80 * 8192).epsilon(1e-9));
}

TEST_CASE("hardware FLOPs add the recomputed forward", "[sim][analytic]") {
  const ModelSpec m = test::llama3_70b();
  Layout l;
  l.global_batch = 64;
  const FlopCounts per_seq = count_flops_per_sequence(m, AttentionFlops::causal);
  l.recompute = Recompute::full;
  CHECK(step_flops(m, l, AttentionFlops::causal, SelectiveRecompute::attention_core).hardware ==
        Approx(64 * (per_seq.total() + (per_seq.dense_gemms + per_seq.attention_core) / 3)));
  l.recompute = Recompute::selective;
  CHECK(step_flops(m, l, AttentionFlops::causal, SelectiveRecompute::attention_core).hardware ==
        Approx(64 * (per_seq.total() + per_seq.attention_core / 3)));
}

TEST_CASE("the headline estimate: consistent definitions and a plausible MFU", "[sim][analytic]") {
  const Scenario s = test::llama3_70b_1024_h100();
  const Report r = estimate(s);
  const double peak = 989.4e12, n = 1024;
  CHECK(r.fidelity == "analytic");
  CHECK(r.step_time_s == Approx(r.breakdown.compute_s + r.breakdown.exposed_comm_s + r.breakdown.bubble_s));
  const BreakdownReport& b = r.breakdown;
  CHECK(b.exposed_comm_s ==
        Approx(b.tp_exposed_s + b.pp_exposed_s + b.dp_exposed_s + b.cp_exposed_s + b.ep_exposed_s));
  CHECK(b.tp_exposed_s <= b.tp_comm_s);
  CHECK(b.dp_exposed_s <= b.dp_comm_s);
  CHECK(r.mfu == Approx(r.flops_per_step / (r.step_time_s * n * peak)));
  CHECK(r.hfu == Approx(r.hardware_flops_per_step / (r.step_time_s * n * peak)));
  CHECK(r.hfu > r.mfu);  // selective recompute
  CHECK(r.tokens_per_s == Approx(512 * 8192 / r.step_time_s));
  CHECK(r.tflops_per_gpu == Approx(r.mfu * peak / 1e12));
  CHECK(r.params == Approx(70.55e9).epsilon(0.005));
  CHECK(r.active_params == r.params);
  // Megatron-LM's H100 runs of 70B-class GPT models reach 0.40-0.47 MFU (measured-runs.json,
  // megatron_h100); the estimate must land in the band published runs occupy.
  CHECK(r.mfu > 0.35);
  CHECK(r.mfu < 0.55);
  // The model is no faster than its own compute roofline: MFU ≤ the GEMM efficiency of peak.
  CHECK(r.mfu < default_compute_params(s.cluster.gpu).gemm_max);
  CHECK(r.memory.fits);
  CHECK(r.warnings.empty());
  // Days: steps · step time / goodput.
  const double steps = std::ceil(1.4e12 / (512 * 8192));
  CHECK(r.run.days == Approx(steps * r.step_time_s / r.run.goodput / 86400).epsilon(1e-9));
  CHECK(r.run.cost_usd == Approx(r.run.gpu_hours * 5.0));
  CHECK(r.run.goodput > 0.95);
  CHECK(r.run.goodput < 1.0);
}

TEST_CASE("assumed MFU gives the chapter's time: flops / (N · peak · mfu)", "[sim][analytic]") {
  Scenario s = test::llama3_70b_1024_h100();
  s.run.assumed_mfu = 0.4;
  const Report r = estimate(s);
  CHECK(r.step_time_s == Approx(r.flops_per_step / (1024 * 989.4e12 * 0.4)));
  CHECK(r.mfu == Approx(0.4));
  CHECK(r.breakdown.compute_s == Approx(r.step_time_s));
  CHECK(r.warnings.size() == 1);
}

TEST_CASE("TP traffic per step is Megatron's collectives per layer, embedding and head on NVLink",
          "[sim][analytic]") {
  const bool sp = GENERATE(false, true);
  const Scenario s = single_node(8, sp);
  const StepFlops f =
      step_flops(s.model, s.layout, AttentionFlops::causal, SelectiveRecompute::attention_core);
  const StepTimeEstimate t = estimate_step_time(s, f, AnalyticOptions{});
  const LinkCost nvlink = group_link(s.cluster, {8, 1}, EfficiencyDefaults{});
  const double tokens = 8192.0;            // s·b on this rank
  const double bytes = tokens * 8192 * 2;  // s·b·h bf16
  const double loss = 3 * tokens * 4;      // vocab-parallel cross entropy: max, sum-exp, target (fp32)
  const double m = double(s.layout.num_microbatches());
  // Rings, or NVLS where NCCL's tuner picks it (H100: the all-reduces).
  const double ag = collective_s(CollectiveOp::all_gather, bytes, 8, nvlink);
  const double rs = collective_s(CollectiveOp::reduce_scatter, bytes, 8, nvlink);
  const double ar = collective_s(CollectiveOp::all_reduce, bytes, 8, nvlink);
  // Per layer without SP: AR after the attention and MLP blocks forward, AR of the input
  // gradient of QKV and FC1 backward. With SP: AG before and RS after each block forward;
  // backward AG of the output gradient (row-parallel), re-gather of the input and RS of its
  // gradient (column-parallel). Embedding: AR (SP: RS) forward, AG backward under SP. Head:
  // AG forward under SP, the loss all-reduce, AG + RS (or AR) backward.
  const double per_mb = sp ? 8 * (6 * ag + 4 * rs) + (rs + ag) + (2 * ag + rs) +
                                 collective_s(CollectiveOp::all_reduce, loss, 8, nvlink)
                           : 8 * 4 * ar + ar + ar + collective_s(CollectiveOp::all_reduce, loss, 8, nvlink);
  CHECK(t.breakdown.tp_comm_s == Approx(m * per_mb));
  // Megatron's default overlaps the backward's collectives with the dgrad/wgrad GEMMs, not the
  // forward's: at least the forward per layer is exposed, and less than all of it.
  const double forward_per_layer = sp ? 2 * (ag + rs) : 2 * ar;
  CHECK(t.breakdown.exposed_comm_s >= m * 8 * forward_per_layer);
  CHECK(t.breakdown.exposed_comm_s < t.breakdown.tp_comm_s);
  CHECK(t.breakdown.bubble_s == 0);
  CHECK(t.breakdown.dp_comm_s == 0);
}

TEST_CASE("the estimate's ops carry Megatron's FLOPs and are timed by the compute model", "[sim][analytic]") {
  const bool sp = GENERATE(false, true);
  const Scenario s = single_node(8, sp);
  const StepFlops f =
      step_flops(s.model, s.layout, AttentionFlops::causal, SelectiveRecompute::attention_core);
  const StepTimeEstimate t = estimate_step_time(s, f, AnalyticOptions{});
  REQUIRE(t.stages.size() == 1);
  const StageTime& st = t.stages[0];
  // The workload builder's ops of one micro-batch, per GPU, add up to the closed form.
  const double ranks = double(s.layout.tp * s.layout.dp);
  CHECK((st.gemm_flops + st.attention_flops) * t.microbatches * ranks == Approx(f.model).epsilon(1e-9));
  // Compute time is bounded by the roofline of those FLOPs at the compute model's best GEMM
  // efficiency; a slower calibrated GEMM makes it slower.
  const ComputeParams defaults = default_compute_params(s.cluster.gpu);
  CHECK(st.compute_s() > (st.gemm_flops + st.attention_flops) / (989.4e12 * defaults.gemm_max));
  AnalyticOptions slow;
  GpuCalibration g;
  g.gemm_max = defaults.gemm_max / 2;
  slow.calibration.set_gpu(s.cluster.gpu.id, g);
  const StepTimeEstimate t2 = estimate_step_time(s, f, slow);
  CHECK(t2.stages[0].forward_s > 1.5 * st.forward_s);
}

TEST_CASE("DP gradient reduction: ZeRO-0 all-reduce, ZeRO-1 reduce-scatter + all-gather", "[sim][analytic]") {
  Scenario s = single_node(1, false);
  s.model.layers = 2;
  s.layout.dp = 8;
  s.layout.global_batch = 8;
  const ParamCounts counts = count_params(s.model);
  const LinkCost nvlink = group_link(s.cluster, {8, 1}, EfficiencyDefaults{});
  const double params = counts.total();

  // One call per bucket of Megatron's DDP, as the workload cuts them (here the output layer, each
  // of the two Llama-3 70B layers and the embedding pass the 40M-parameter minimum alone: four);
  // gradients in the workload's reduce precision (bf16, Megatron's default), weights in bf16.
  const std::vector<StageProgram::GradBucketSize> buckets = build_workload(s).stages[0].grad_buckets;
  REQUIRE(buckets.size() == 4);
  double bucket_params = 0;
  for (const auto& b : buckets) bucket_params += b.params;
  CHECK(bucket_params == Approx(params));
  auto per_bucket = [&](CollectiveOp op, double bytes_per_param) {
    double seconds = 0;
    for (const auto& b : buckets) seconds += collective_s(op, b.params * bytes_per_param, 8, nvlink);
    return seconds;
  };
  const double grad_bytes = WorkloadOptions{}.grad_reduce_bytes;

  s.layout.zero_stage = 0;
  StepTimeEstimate t = estimate_step_time(
      s, step_flops(s.model, s.layout, AttentionFlops::causal, SelectiveRecompute::attention_core),
      AnalyticOptions{});
  CHECK(t.breakdown.dp_comm_s == Approx(per_bucket(CollectiveOp::all_reduce, grad_bytes)));

  s.layout.zero_stage = 1;
  t = estimate_step_time(
      s, step_flops(s.model, s.layout, AttentionFlops::causal, SelectiveRecompute::attention_core),
      AnalyticOptions{});
  CHECK(t.dp_grad_s == Approx(per_bucket(CollectiveOp::reduce_scatter, grad_bytes)));
  CHECK(t.dp_param_s == Approx(per_bucket(CollectiveOp::all_gather, 2)));
  // Cut in buckets it takes longer than one call of the whole (each call pays NCCL's latency).
  CHECK(t.dp_grad_s > collective_s(CollectiveOp::reduce_scatter, params * grad_bytes, 8, nvlink));

  // ZeRO-3: one call per FSDP unit (embedding, each layer, output layer), weights gathered for the
  // forward and again for the backward, gradients reduce-scattered, each micro-batch (here one).
  Scenario fsdp = s;
  fsdp.layout.zero_stage = 3;
  const std::vector<StageProgram::FsdpUnit> units = build_workload(fsdp).stages[0].fsdp_units;
  REQUIRE(units.size() == 4);
  double unit_params = 0, unit_gathers = 0, unit_reduces = 0;
  for (const auto& u : units) {
    unit_params += u.params;
    unit_gathers += collective_s(CollectiveOp::all_gather, u.params * 2, 8, nvlink);
    unit_reduces += collective_s(CollectiveOp::reduce_scatter, u.params * grad_bytes, 8, nvlink);
  }
  CHECK(unit_params == Approx(params));
  const StepTimeEstimate z3 = estimate_step_time(
      fsdp, step_flops(fsdp.model, fsdp.layout, AttentionFlops::causal, SelectiveRecompute::attention_core),
      AnalyticOptions{});
  CHECK(z3.dp_param_s == Approx(2 * unit_gathers));
  CHECK(z3.dp_grad_s == Approx(unit_reduces));

  SECTION("without overlap all of it is exposed; with overlap less") {
    AnalyticOptions none;
    none.workload.grad_reduce = GradReduceOverlap::after_backward;
    none.workload.param_gather = ParamGatherOverlap::after_optimizer;
    const StepTimeEstimate exposed = estimate_step_time(
        s, step_flops(s.model, s.layout, AttentionFlops::causal, SelectiveRecompute::attention_core), none);
    CHECK(exposed.dp_exposed_s == Approx(exposed.breakdown.dp_comm_s));
    CHECK(t.dp_exposed_s < exposed.dp_exposed_s);
    CHECK(t.dp_exposed_s > 0);  // the last bucket cannot hide
  }
}

TEST_CASE("pipeline bubble: the other stages' fill and drain, interleaving shrinks it", "[sim][analytic]") {
  Scenario s = test::llama3_70b_1024_h100();
  s.layout.virtual_stages = 1;
  const StepFlops f =
      step_flops(s.model, s.layout, AttentionFlops::causal, SelectiveRecompute::attention_core);
  // Gradients reduced after the flush: no stage's last backward runs beside its reductions.
  AnalyticOptions after_flush;
  after_flush.workload.grad_reduce = GradReduceOverlap::after_backward;
  const StepTimeEstimate one = estimate_step_time(s, f, after_flush);
  s.layout.virtual_stages = 5;
  const StepTimeEstimate five = estimate_step_time(s, f, after_flush);
  // The last stage carries the vocabulary projection: it is the slowest.
  REQUIRE(one.slowest_stage == 3);
  auto per_micro_batch = [](const StageTime& st) {
    return st.compute_s() + st.tp_exposed_s + st.cp_exposed_s + st.ep_exposed_s;
  };
  double others = 0;
  for (int i = 0; i < 3; ++i) others += per_micro_batch(one.stages[size_t(i)]);
  const double slowest = per_micro_batch(one.stages[3]);
  // 1F1B: the slowest stage waits one micro-batch of each other stage in fill and drain, plus
  // p − 1 pipeline hops each way; the stage's own messages stay exposed communication: as the
  // last stage, one exchange per micro-batch with its one neighbour (its gradient out and the
  // next activation in, passing each other on full-duplex links).
  CHECK(one.breakdown.bubble_s == Approx(others + 2.0 * 3.0 * one.pp_send_s));
  CHECK(one.breakdown.pp_exposed_s == Approx(double(one.microbatches) * one.pp_send_s));
  CHECK(
      one.step_time_s ==
      Approx(one.breakdown.compute_s + one.breakdown.exposed_comm_s + one.breakdown.bubble_s).epsilon(1e-12));
  // Narayanan's (p − 1) · t with t the slowest stage's would overcount the lighter stages.
  CHECK(others < 3.0 * slowest);
  CHECK(others > 3.0 * 0.9 * slowest);
  // Interleaved: each stage's share per chunk is 1/v, and the heavy last chunk (logits, loss)
  // adds the waits of its round trips through the lighter stages: a little more than 1/v.
  double others5 = 0;
  for (const StageTime& st : five.stages)
    if (st.stage != five.slowest_stage) others5 += per_micro_batch(st);
  CHECK(five.fill_drain_s >= others5 / 5.0);
  CHECK(five.fill_drain_s < 1.1 * others5 / 5.0);
  CHECK(five.breakdown.bubble_s < one.breakdown.bubble_s / 4.0);
  // Its messages are sent asynchronously: on the path at least the fill's and drain's hops, far
  // fewer than all 2·m·v of them.
  CHECK(five.pp_exposed_s >= 2.0 * 3.0 * five.pp_send_s);
  CHECK(five.pp_exposed_s < 0.25 * 2.0 * double(five.microbatches) * 5.0 * five.pp_send_s);
  // Reduced bucket by bucket (overlap_grad_reduce), each stage's last backward runs beside its
  // reductions and slows by overlap_slowdown of the overlap: the drain grows by at most that
  // share of the other stages' backward.
  s.layout.virtual_stages = 1;
  const AnalyticOptions bucketed;
  REQUIRE(bucketed.workload.grad_reduce == GradReduceOverlap::bucketed);
  const StepTimeEstimate overlapped = estimate_step_time(s, f, bucketed);
  double others_backward = 0;
  for (int i = 0; i < 3; ++i)
    others_backward += one.stages[size_t(i)].backward_s + one.stages[size_t(i)].recompute_s;
  CHECK(overlapped.fill_drain_s > one.fill_drain_s);
  CHECK(overlapped.fill_drain_s <= one.fill_drain_s + bucketed.overlap_slowdown * others_backward + 1e-12);
}

TEST_CASE("what-ifs move the estimate the right way", "[sim][analytic]") {
  const Scenario base = test::llama3_70b_1024_h100();
  const Report r0 = estimate(base);

  SECTION("full recompute: slower, higher HFU than MFU, less memory") {
    Scenario s = base;
    s.layout.recompute = Recompute::full;
    const Report r = estimate(s);
    CHECK(r.step_time_s > r0.step_time_s);
    CHECK(r.hfu > r.mfu * 1.25);
    CHECK(r.memory.activations < r0.memory.activations);
  }
  SECTION("a slower fabric is never faster") {
    Scenario s = base;
    s.cluster.fabric.port_bytes_per_s = 25e9;
    CHECK(estimate(s).step_time_s >= r0.step_time_s);
  }
  SECTION("tp=16 crosses the NVLink domain: a warning and a slower step") {
    Scenario s = base;
    s.layout.tp = 16;
    s.layout.dp = 16;
    s.layout.global_batch = 256;
    const Report r = estimate(s);
    REQUIRE_FALSE(r.warnings.empty());
    CHECK(r.warnings[0].find("tp=16") != std::string::npos);
    CHECK(r.breakdown.tp_comm_s > r0.breakdown.tp_comm_s);
  }
  SECTION("fewer micro-batches than stages warns") {
    Scenario s = base;
    s.layout.global_batch = 64;  // m = 2 < pp = 4
    s.layout.virtual_stages = 1;
    const Report r = estimate(s);
    CHECK_FALSE(r.warnings.empty());
  }
  SECTION("a layout that does not fit says so") {
    Scenario s = base;
    s.layout.tp = 1;
    s.layout.pp = 1;
    s.layout.dp = 1024;
    s.layout.virtual_stages = 1;
    s.layout.zero_stage = 0;
    s.layout.global_batch = 1024;
    const Report r = estimate(s);
    CHECK_FALSE(r.memory.fits);
    bool warned = false;
    for (const auto& w : r.warnings) warned = warned || w.find("does not fit") != std::string::npos;
    CHECK(warned);
  }
  SECTION("a precision the GPU lacks is bad input") {
    Scenario s = base;
    s.layout.precision = Precision::fp4;
    CHECK_THROWS_AS(estimate(s), InputError);
  }
}

TEST_CASE("report JSON has every DESIGN.md contract key", "[sim][analytic][report]") {
  const nlohmann::json j = to_json(estimate(test::llama3_70b_1024_h100()));
  for (const char* key : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "hfu", "flops_per_step"})
    CHECK(j.at(key).is_number());
  for (const char* key : {"params", "active_params"}) CHECK(j.at("model").at(key).is_number());
  for (const char* key :
       {"peak_bytes_per_gpu", "capacity_bytes", "weights", "grads", "optimizer", "activations"})
    CHECK(j.at("memory").at(key).is_number());
  CHECK(j.at("memory").at("fits").is_boolean());
  for (const char* key : {"compute_s", "exposed_comm_s", "bubble_s"})
    CHECK(j.at("breakdown").at(key).is_number());
  for (const char* key : {"tokens", "days", "gpu_hours", "cost_usd", "energy_kwh", "goodput"})
    CHECK(j.at("run").at(key).is_number());
  CHECK(j.at("warnings").is_array());
  CHECK(j.at("fidelity") == "analytic");
  CHECK(j.at("flop_convention").get<std::string>().find("causal") != std::string::npos);
  REQUIRE(j.at("explanations").is_array());
  bool step_explained = false;
  for (const auto& e : j.at("explanations"))
    step_explained =
        step_explained || (e.at("key") == "step_time_s" && !e.at("formula").get<std::string>().empty());
  CHECK(step_explained);
  // Values round-trip.
  CHECK(j.at("step_time_s").get<double>() > 0);
  CHECK(j.at("memory").at("peak_bytes_per_gpu").get<double>() <
        j.at("memory").at("capacity_bytes").get<double>());
}
