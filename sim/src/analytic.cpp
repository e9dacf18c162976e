// The analytic model: FLOPs, step time, memory and run totals of one layout; formulas and
// sources in analytic.hpp (time), memory_model.hpp (memory), run_cost.hpp (run totals) and
// collective_cost.hpp (collectives).
#include "simrun/sim/analytic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/collective_cost.hpp"

namespace simrun {
namespace {

double checked_peak(const Scenario& s, Precision p) {
  const double peak = s.cluster.gpu.peak_flops_per_s(p);
  if (!(peak > 0))
    throw InputError(s.file, "layout.precision",
                     fmt::format("{} has no dense {} peak (use a precision it supports, e.g. bf16)",
                                 s.cluster.gpu.id, to_string(p)));
  return peak;
}

// GEMM parameters of one dense and one MoE layer (weights a token multiplies), scaled so that
// all layers together reproduce count_flops_per_sequence's dense_gemms.
struct LayerGemmParams {
  double dense_layer = 0;
  double moe_layer = 0;
};

LayerGemmParams layer_gemm_params(const ModelSpec& m, const ParamCounts& c, const FlopCounts& per_seq) {
  const double L = double(m.layers);
  const double attention = c.attention / L;
  const int64_t dense_layers = m.dense_layers();
  const int64_t moe_layers = m.moe_layers();
  LayerGemmParams p;
  p.dense_layer = attention + (dense_layers > 0 ? c.mlp_dense / double(dense_layers) : 0.0);
  if (moe_layers > 0) {
    const double routed_active =
        c.experts_routed / double(moe_layers) * double(m.moe->top_k) / double(m.moe->experts);
    p.moe_layer = attention + routed_active + (c.experts_shared + c.router) / double(moe_layers);
  }
  const double raw =
      6.0 * double(m.seq_len) * (double(dense_layers) * p.dense_layer + double(moe_layers) * p.moe_layer);
  if (raw > 0) {
    const double scale = per_seq.dense_gemms / raw;
    p.dense_layer *= scale;
    p.moe_layer *= scale;
  }
  return p;
}

std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

}  // namespace

const char* flop_convention_text(AttentionFlops convention) {
  return convention == AttentionFlops::causal
             ? "Megatron-LM num_floating_point_operations, causal (attention s^2 term halved; HEAD after "
               "8873b55d6a); "
               "MFU vs dense peak of the training precision; HFU adds recompute"
             : "Megatron-LM core_r0.8 num_floating_point_operations, non-causal (full attention s^2 term); "
               "MFU vs dense peak of the training precision; HFU adds recompute";
}

StepFlops step_flops(const ModelSpec& m, const Layout& layout, AttentionFlops convention) {
  StepFlops f;
  f.per_sequence = count_flops_per_sequence(m, convention);
  const double batch = double(layout.global_batch);
  f.model = f.per_sequence.total() * batch;
  switch (layout.recompute) {
    case Recompute::none:
      f.recompute = 0;
      break;
    // One more forward (⅓ of fwd+bwd) of the transformer layers; the logits are not recomputed.
    case Recompute::full:
      f.recompute = (f.per_sequence.dense_gemms + f.per_sequence.attention_core) / 3.0 * batch;
      break;
    case Recompute::selective:
      f.recompute = f.per_sequence.attention_core / 3.0 * batch;
      break;
  }
  f.hardware = f.model + f.recompute;
  return f;
}

StepTimeEstimate estimate_step_time(const Scenario& sc, const StepFlops& flops,
                                    const AnalyticOptions& options) {
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  const ClusterSpec& cluster = sc.cluster;
  const GpuSpec& gpu = cluster.gpu;
  const EfficiencyDefaults& eff = options.efficiency;

  const double gemm_peak = checked_peak(sc, l.precision);
  const Precision attention_precision =
      (l.precision == Precision::fp32 || l.precision == Precision::tf32) ? l.precision : Precision::bf16;
  const double attention_peak = checked_peak(sc, attention_precision);
  const double gemm_rate =
      gemm_peak * ((l.precision == Precision::fp8 || l.precision == Precision::fp4) ? eff.fp8_gemm_fraction
                                                                                    : eff.gemm_fraction);
  const double attention_rate =
      attention_peak * (l.flash_attention ? eff.flash_attention_fraction : eff.unfused_attention_fraction);
  const double memory_rate = gpu.hbm_bytes_per_s * eff.memory_bound_fraction;
  SIMRUN_ASSERT(memory_rate > 0, "GPU needs an HBM bandwidth");

  const ParamCounts counts = count_params(m);
  const LayerGemmParams layer_params = layer_gemm_params(m, counts, flops.per_sequence);
  const BytesPerParam bpp = bytes_per_param(l.precision, options.memory.convention);

  const double tp = double(l.tp);
  const double cp = double(l.cp);
  const double p = double(l.pp);
  const double v = double(std::max<int64_t>(1, l.virtual_stages));
  const double mb = double(l.micro_batch);
  const double s_local = double(m.seq_len) / cp;
  const double h = double(m.hidden);
  const double e = activation_element_bytes(l.precision);
  const bool sp = l.sequence_parallel && l.tp > 1;
  const int64_t head_dim = m.head_dim > 0 ? m.head_dim : m.hidden / std::max<int64_t>(1, m.heads);
  const double q_width = double(m.heads * head_dim);
  const double kv_width = double((m.kv_heads > 0 ? m.kv_heads : m.heads) * head_dim);
  const double f = double(m.ffn_hidden);
  const double tokens_mb = mb * double(m.seq_len);  // tokens of one micro-batch (all cp ranks)

  StepTimeEstimate out;
  out.microbatches = double(std::max<int64_t>(1, l.num_microbatches()));
  const double microbatches = out.microbatches;

  // Links of the process groups (Megatron order tp-cp-ep-dp-pp).
  const LinkCost tp_link = group_link(cluster, {l.tp, 1}, eff);
  const LinkCost cp_link = group_link(cluster, {l.cp, l.tp}, eff);
  const LinkCost ep_link = group_link(cluster, {l.ep, l.tp * l.cp}, eff);
  const LinkCost dp_link = group_link(cluster, {l.dp * l.cp, l.tp}, eff);
  const int64_t expert_dp = std::max<int64_t>(1, (l.dp * l.cp) / l.ep);
  const LinkCost expert_dp_link = group_link(cluster, {expert_dp, l.tp * l.ep}, eff);
  const LinkCost pp_link = group_link(cluster, {2, l.tp * l.cp * l.dp}, eff);

  // Per layer, one micro-batch, per GPU.
  const double attention_flops_layer = flops.per_sequence.attention_core / double(m.layers) * mb / cp / tp;
  const double sbh = s_local * mb * h;
  const double replicated_split = sp ? tp : 1.0;
  // Forward memory-bound traffic: two norms (read+write, 4·sbh), two residual adds (6·sbh),
  // the activation function (gelu read f write f; swiglu read 2f write f), rotary on q and k
  // (read+write), and without flash the score matrix (write S, read S, write P, read P:
  // FlashAttention paper Algorithm 0). Backward moves about twice the forward's bytes.
  double layer_fwd_bytes = 10.0 * e * sbh / replicated_split +
                           (m.ffn_act == FfnActivation::swiglu ? 3.0 : 2.0) * e * s_local * mb * f / tp +
                           2.0 * e * s_local * mb * (q_width + kv_width) / tp;
  double score_fwd_bytes = 0;
  if (!l.flash_attention) score_fwd_bytes = 4.0 * e * double(m.heads) * s_local * double(m.seq_len) * mb / tp;
  layer_fwd_bytes += score_fwd_bytes;
  // Cross-entropy over fp32 vocab-parallel logits: read and write them once forward.
  const double logits_fwd_bytes = 2.0 * 4.0 * s_local * mb * double(m.vocab) / tp;

  // TP collectives of one layer (fwd + bwd) on s·b·h activations.
  const double tp_bytes = sbh * e;
  double tp_layer_s = 0;
  if (l.tp > 1) {
    tp_layer_s = sp ? 4.0 * (ring_all_gather_s(tp_bytes, l.tp, tp_link) +
                             ring_reduce_scatter_s(tp_bytes, l.tp, tp_link))
                    : 4.0 * ring_all_reduce_s(tp_bytes, l.tp, tp_link);
    if (l.recompute == Recompute::full) tp_layer_s *= 1.5;  // the forward's two again
  }
  // CP ring attention: K and V of the local chunk, (cp−1) hops forward, twice that backward.
  const double kv_bytes = 2.0 * s_local * mb * kv_width * e / tp;
  const double cp_layer_fwd_s = l.cp > 1 ? (cp - 1.0) * send_recv_s(kv_bytes, cp_link) : 0.0;
  // EP: dispatch + combine all-to-alls of top_k copies of the local tokens, forward and backward.
  double ep_moe_layer_s = 0;
  if (m.is_moe() && l.ep > 1) {
    const double a2a_bytes = sbh * e * double(m.moe->top_k) / tp;
    ep_moe_layer_s = 4.0 * all_to_all_s(a2a_bytes, l.ep, ep_link);
  }

  const double dense_shard = double(l.dp * l.cp);
  for (int64_t i = 0; i < l.pp; ++i) {
    const StageParams sp_params = stage_params(m, counts, l, i);
    const double layers = double(sp_params.layers);
    const double moe_layers = double(sp_params.moe_layers);
    const double dense_layers = layers - moe_layers;
    StageTime st;
    st.stage = i;
    st.gemm_flops = 6.0 * tokens_mb / cp / tp *
                    (dense_layers * layer_params.dense_layer + moe_layers * layer_params.moe_layer);
    double logits_flops = 0;
    if (sp_params.has_output) logits_flops = flops.per_sequence.logits * mb / cp / tp;
    st.attention_flops = attention_flops_layer * layers;
    double fwd_bytes = layer_fwd_bytes * layers + (sp_params.has_output ? logits_fwd_bytes : 0.0);
    st.memory_bytes = 3.0 * fwd_bytes;

    const double gemm_s = (st.gemm_flops + logits_flops) / gemm_rate;
    const double attention_s = st.attention_flops / attention_rate;
    const double fwd_mem_s = fwd_bytes / memory_rate;
    st.forward_s = (gemm_s + attention_s) / 3.0 + fwd_mem_s;
    st.backward_s = 2.0 * (gemm_s + attention_s) / 3.0 + 2.0 * fwd_mem_s;
    switch (l.recompute) {
      case Recompute::none:
        st.recompute_s = 0;
        break;
      case Recompute::full:
        st.recompute_s =
            (st.gemm_flops / gemm_rate + attention_s) / 3.0 + layer_fwd_bytes * layers / memory_rate;
        break;
      case Recompute::selective:
        st.recompute_s = attention_s / 3.0 + score_fwd_bytes * layers / memory_rate;
        break;
    }
    st.tp_comm_s = tp_layer_s * layers;
    st.cp_comm_s = 3.0 * cp_layer_fwd_s * layers;
    // Ring attention overlaps each hop with the attention block it feeds.
    const double attention_layer_s = attention_flops_layer / attention_rate;
    st.cp_exposed_s = layers * (std::max(0.0, cp_layer_fwd_s - attention_layer_s / 3.0) +
                                std::max(0.0, 2.0 * cp_layer_fwd_s - 2.0 * attention_layer_s / 3.0));
    st.ep_comm_s = ep_moe_layer_s * moe_layers;

    // Optimizer: fused Adam over the local shard reads grads and optimizer states and writes
    // states and weights; the gradient-norm pass reads the grads once more.
    const double local_dense = sp_params.dense / (l.zero_stage >= 1 ? dense_shard : 1.0);
    const double local_experts = sp_params.experts / (l.zero_stage >= 1 ? double(expert_dp) : 1.0);
    st.optimizer_s =
        (local_dense + local_experts) * (2.0 * bpp.grads + 2.0 * bpp.optimizer + bpp.weights) / memory_rate;
    out.stages.push_back(st);
  }

  auto mb_total = [&](const StageTime& st) {
    return st.compute_s() + st.tp_comm_s * (1.0 - eff.tp_overlap_fraction) + st.cp_exposed_s + st.ep_comm_s;
  };
  out.slowest_stage = 0;
  for (const StageTime& st : out.stages)
    if (mb_total(st) > mb_total(out.stages[size_t(out.slowest_stage)])) out.slowest_stage = st.stage;
  const StageTime& slow = out.stages[size_t(out.slowest_stage)];
  double optimizer_s = 0;
  for (const StageTime& st : out.stages) optimizer_s = std::max(optimizer_s, st.optimizer_s);
  out.mb_exposed_comm_s =
      slow.tp_comm_s * (1.0 - eff.tp_overlap_fraction) + slow.cp_exposed_s + slow.ep_comm_s;

  // Pipeline sends: the stage output, sequence-sharded under SP (Megatron sends the scattered
  // tensor).
  double pp_total_s = 0;
  if (l.pp > 1) {
    const double send_bytes = sbh * e / (sp ? tp : 1.0);
    out.pp_send_s = send_recv_s(send_bytes, pp_link);
    pp_total_s = 2.0 * microbatches * v * out.pp_send_s;
    out.pp_exposed_s =
        v > 1 ? 2.0 * (p - 1.0) * out.pp_send_s : 2.0 * (microbatches + p - 1.0) * out.pp_send_s;
  }

  // Data parallel: the biggest stage's local gradients and weights.
  double dense_local = 0, expert_local = 0;
  for (int64_t i = 0; i < l.pp; ++i) {
    const StageParams sp_params = stage_params(m, counts, l, i);
    dense_local = std::max(dense_local, sp_params.dense);
    expert_local = std::max(expert_local, sp_params.experts);
  }
  const int64_t dp_n = l.dp * l.cp;
  auto reduce = [&](double params, int64_t n, const LinkCost& link) {
    const double bytes = params * bpp.grads;
    return l.zero_stage == 0 ? ring_all_reduce_s(bytes, n, link) : ring_reduce_scatter_s(bytes, n, link);
  };
  auto gather = [&](double params, int64_t n, const LinkCost& link) {
    return l.zero_stage >= 1 ? ring_all_gather_s(params * bpp.weights, n, link) : 0.0;
  };
  const double grad_s = reduce(dense_local, dp_n, dp_link) + reduce(expert_local, expert_dp, expert_dp_link);
  const double param_s = gather(dense_local, dp_n, dp_link) + gather(expert_local, expert_dp, expert_dp_link);
  const double bucket_params = std::max(eff.dp_bucket_params, 1e6 * double(l.dp));
  const double bucket_fraction = std::min(1.0, bucket_params / std::max(1.0, dense_local + expert_local));
  double dp_total_s = 0;
  if (l.zero_stage >= 3) {
    // Weights gathered for forward and again for backward, gradients reduce-scattered, per
    // micro-batch (FSDP / ZeRO-3), prefetched behind compute.
    out.dp_grad_s = microbatches * grad_s;
    out.dp_param_s = microbatches * 2.0 * param_s;
    dp_total_s = out.dp_grad_s + out.dp_param_s;
    const double window = microbatches * slow.compute_s();
    out.dp_exposed_s = eff.dp_overlap == DpOverlap::none
                           ? dp_total_s
                           : std::max(dp_total_s - window, param_s * bucket_fraction);
  } else {
    out.dp_grad_s = grad_s;
    out.dp_param_s = param_s;
    dp_total_s = grad_s + param_s;
    if (eff.dp_overlap == DpOverlap::none) {
      out.dp_exposed_s = dp_total_s;
    } else {
      out.dp_exposed_s = std::max(grad_s - slow.backward_s, grad_s * bucket_fraction) +
                         std::max(param_s - slow.forward_s, param_s * bucket_fraction);
    }
  }

  BreakdownReport& b = out.breakdown;
  b.forward_s = microbatches * slow.forward_s;
  b.backward_s = microbatches * slow.backward_s;
  b.recompute_s = microbatches * slow.recompute_s;
  b.optimizer_s = optimizer_s;
  b.compute_s = b.forward_s + b.backward_s + b.recompute_s + b.optimizer_s;
  b.tp_comm_s = microbatches * slow.tp_comm_s;
  b.pp_comm_s = pp_total_s;
  b.dp_comm_s = dp_total_s;
  b.exposed_comm_s = microbatches * out.mb_exposed_comm_s + out.pp_exposed_s + out.dp_exposed_s;
  b.bubble_s = (p - 1.0) / v * (slow.compute_s() + out.mb_exposed_comm_s);
  out.step_time_s = b.compute_s + b.exposed_comm_s + b.bubble_s;
  return out;
}

Report estimate(const Scenario& s) { return estimate(s, AnalyticOptions{}); }

Report estimate(const Scenario& sc, const AnalyticOptions& options) {
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  const ClusterSpec& cluster = sc.cluster;
  const GpuSpec& gpu = cluster.gpu;
  if (l.num_microbatches() < 1)
    throw InputError(
        sc.file, "layout.global_batch",
        fmt::format("global_batch {} is smaller than micro_batch·dp = {} (make it a multiple of it)",
                    l.global_batch, l.micro_batch * l.dp));

  Report r;
  r.fidelity = "analytic";
  r.flop_convention = flop_convention_text(options.flop_convention);
  const ParamCounts counts = count_params(m);
  r.params = counts.total();
  r.active_params = counts.active(m);

  const StepFlops flops = step_flops(m, l, options.flop_convention);
  r.flops_per_step = flops.model;
  r.hardware_flops_per_step = flops.hardware;
  const double peak = checked_peak(sc, l.precision);
  const double n_gpus = double(l.world_size());

  const MemoryEstimate memory = estimate_memory(sc, options.memory);
  r.memory = memory.report;

  const StepTimeEstimate time = estimate_step_time(sc, flops, options);
  if (sc.run.assumed_mfu) {
    r.step_time_s = flops.model / (n_gpus * peak * *sc.run.assumed_mfu);
    r.breakdown = BreakdownReport{};
    r.breakdown.compute_s = r.step_time_s;
  } else {
    r.step_time_s = time.step_time_s;
    r.breakdown = time.breakdown;
  }
  const double tokens_per_step = double(l.global_batch) * double(m.seq_len);
  r.tokens_per_s = tokens_per_step / r.step_time_s;
  r.tflops_per_gpu = flops.model / (r.step_time_s * n_gpus) / kTera;
  r.mfu = flops.model / (r.step_time_s * n_gpus * peak);
  r.hfu = flops.hardware / (r.step_time_s * n_gpus * peak);

  // Run totals. The checkpoint holds weights and optimizer states (not gradients).
  const BytesPerParam bpp = bytes_per_param(l.precision, options.memory.convention);
  RunInputs ri;
  ri.params = r.params;
  ri.tokens = sc.run.tokens;
  ri.tokens_per_step = tokens_per_step;
  ri.step_time_s = r.step_time_s;
  ri.busy_fraction = r.breakdown.compute_s / r.step_time_s;
  ri.num_gpus = l.world_size();
  ri.num_nodes = (l.world_size() + std::max<int64_t>(1, cluster.gpus_per_node) - 1) /
                 std::max<int64_t>(1, cluster.gpus_per_node);
  ri.checkpoint_bytes = r.params * (bpp.weights + bpp.optimizer);
  ri.usd_per_gpu_hour = sc.run.usd_per_gpu_hour;
  ri.gpu_mtbf_hours = sc.run.gpu_mtbf_hours;
  ri.interval_s = sc.run.checkpoint_interval_min ? *sc.run.checkpoint_interval_min * 60.0 : 0.0;
  ri.tdp_w = gpu.tdp_w;
  const RunTotals run = run_totals(ri, options.run);
  r.run.tokens = run.tokens;
  r.run.days = run.days;
  r.run.gpu_hours = run.gpu_hours;
  r.run.cost_usd = run.cost_usd;
  r.run.energy_kwh = run.energy_kwh;
  r.run.goodput = run.goodput;
  r.run.checkpoint_interval_s = run.interval_s;

  // Warnings.
  const int64_t domain = scale_up_domain_size(cluster);
  if (!group_inside_scale_up(cluster, {l.tp, 1}))
    r.warnings.push_back(
        fmt::format("tp={} spans more than one scale-up domain ({} GPUs of {}): tensor-parallel "
                    "collectives cross the inter-node fabric",
                    l.tp, domain, gpu.scale_up_name.empty() ? "NVLink" : gpu.scale_up_name));
  if (l.cp > 1 && !group_inside_scale_up(cluster, {l.cp, l.tp}))
    r.warnings.push_back(
        fmt::format("tp·cp={} spans more than one scale-up domain ({} GPUs): ring attention "
                    "crosses the inter-node fabric",
                    l.tp * l.cp, domain));
  if (l.pp > 1 && l.num_microbatches() < l.pp)
    r.warnings.push_back(
        fmt::format("only {} micro-batches for pp={}: the pipeline never fills (bubble {:.0f}% of "
                    "compute)",
                    l.num_microbatches(), l.pp, 100.0 * double(l.pp - 1) / double(l.num_microbatches())));
  if (m.layers % l.pp != 0)
    r.warnings.push_back(fmt::format("pp={} does not divide {} layers: stages get {} or {} layers", l.pp,
                                     m.layers, m.layers / l.pp, m.layers / l.pp + 1));
  if (!r.memory.fits)
    r.warnings.push_back(fmt::format("does not fit: {} peak per GPU on stage {} > {} usable HBM",
                                     gb(r.memory.peak_bytes_per_gpu), memory.worst_stage,
                                     gb(r.memory.capacity_bytes)));
  if (l.cp > 1 && !l.flash_attention)
    r.warnings.push_back(
        "context parallelism without flash attention: Megatron's ring attention needs a fused kernel");
  if (sc.run.assumed_mfu)
    r.warnings.push_back(
        fmt::format("step time from the assumed MFU {:.3f} (run.assumed_mfu); the breakdown is not "
                    "modelled",
                    *sc.run.assumed_mfu));
  if (run.goodput < 0.8)
    r.warnings.push_back(
        fmt::format("goodput {:.2f}: failures and checkpoints cost more than 20% of the run (job "
                    "MTBF {:.2f} h)",
                    run.goodput, run.mtbf_s / kSecondsPerHour));
  if (r.mfu > 0.75)
    r.warnings.push_back(fmt::format("MFU {:.2f} is above what published runs reach (≤ 0.6)", r.mfu));

  // Explanations (--explain): formula and inputs of each headline number.
  auto explain = [&](std::string key, double value, std::string unit, std::string formula,
                     std::string inputs) {
    r.explanations.push_back({std::move(key), value, std::move(unit), std::move(formula), std::move(inputs)});
  };
  const BreakdownReport& b = r.breakdown;
  if (sc.run.assumed_mfu) {
    explain("step_time_s", r.step_time_s, "s", "flops_per_step / (num_gpus · peak · assumed_mfu)",
            fmt::format("flops_per_step={:.4g}, num_gpus={}, peak={:.4g} FLOP/s ({}), assumed_mfu={}",
                        flops.model, l.world_size(), peak, to_string(l.precision), *sc.run.assumed_mfu));
  } else {
    explain("step_time_s", r.step_time_s, "s", "compute_s + exposed_comm_s + bubble_s",
            fmt::format("compute_s={:.4g}, exposed_comm_s={:.4g}, bubble_s={:.4g}", b.compute_s,
                        b.exposed_comm_s, b.bubble_s));
    explain(
        "breakdown.compute_s", b.compute_s, "s",
        "m · (forward + backward + recompute of one micro-batch on the slowest stage) + optimizer; GEMMs at "
        "peak·gemm_fraction, attention at peak·attention_fraction, memory-bound traffic at "
        "HBM·memory_fraction",
        fmt::format(
            "m={}, stage={}, forward={:.4g} s, backward={:.4g} s, recompute={:.4g} s, optimizer={:.4g} s, "
            "gemm_fraction={}, attention_fraction={}, memory_fraction={}",
            time.microbatches, time.slowest_stage, time.stages[size_t(time.slowest_stage)].forward_s,
            time.stages[size_t(time.slowest_stage)].backward_s,
            time.stages[size_t(time.slowest_stage)].recompute_s, b.optimizer_s,
            l.precision == Precision::fp8 ? options.efficiency.fp8_gemm_fraction
                                          : options.efficiency.gemm_fraction,
            l.flash_attention ? options.efficiency.flash_attention_fraction
                              : options.efficiency.unfused_attention_fraction,
            options.efficiency.memory_bound_fraction));
    explain(
        "breakdown.exposed_comm_s", b.exposed_comm_s, "s",
        "m · (TP + CP + EP exposed per micro-batch) + PP exposed + DP exposed (α-β ring times)",
        fmt::format(
            "m={}, per-micro-batch={:.4g} s (tp total {:.4g} s/step), pp exposed={:.4g} s (send {:.4g} s), "
            "dp exposed={:.4g} s of {:.4g} s (grad {:.4g} s, params {:.4g} s)",
            time.microbatches, time.mb_exposed_comm_s, b.tp_comm_s, time.pp_exposed_s, time.pp_send_s,
            time.dp_exposed_s, b.dp_comm_s, time.dp_grad_s, time.dp_param_s));
    explain("breakdown.bubble_s", b.bubble_s, "s",
            "(pp − 1)/v · (one micro-batch's compute + exposed TP/CP/EP)",
            fmt::format("pp={}, v={}, per-micro-batch={:.4g} s", l.pp, l.virtual_stages,
                        time.stages[size_t(time.slowest_stage)].compute_s() + time.mb_exposed_comm_s));
  }
  explain(
      "flops_per_step", r.flops_per_step, "FLOP",
      "per-sequence model FLOPs · global_batch (" +
          std::string(options.flop_convention == AttentionFlops::causal ? "causal" : "non-causal") + ")",
      fmt::format("dense_gemms={:.4g}, attention_core={:.4g}, logits={:.4g} per sequence, global_batch={}",
                  flops.per_sequence.dense_gemms, flops.per_sequence.attention_core,
                  flops.per_sequence.logits, l.global_batch));
  explain("tokens_per_s", r.tokens_per_s, "token/s", "global_batch · seq_len / step_time_s",
          fmt::format("global_batch={}, seq_len={}, step_time_s={:.4g}", l.global_batch, m.seq_len,
                      r.step_time_s));
  explain("tflops_per_gpu", r.tflops_per_gpu, "TFLOP/s", "flops_per_step / (step_time_s · num_gpus) / 1e12",
          fmt::format("flops_per_step={:.4g}, step_time_s={:.4g}, num_gpus={}", flops.model, r.step_time_s,
                      l.world_size()));
  explain("mfu", r.mfu, "", "flops_per_step / (step_time_s · num_gpus · peak)",
          fmt::format("peak={:.4g} FLOP/s ({} dense, {})", peak, to_string(l.precision), gpu.id));
  explain("hfu", r.hfu, "", "(flops_per_step + recompute_flops) / (step_time_s · num_gpus · peak)",
          fmt::format("recompute_flops={:.4g} ({})", flops.recompute, to_string(l.recompute)));
  explain("model.params", r.params, "", "sum of weight matrices, biases and norms (count_params)",
          fmt::format("layers={}, hidden={}, ffn_hidden={}, vocab={}", m.layers, m.hidden, m.ffn_hidden,
                      m.vocab));
  const StageMemory& ws = memory.stages[size_t(memory.worst_stage)];
  const BytesPerParam mb_pp = bytes_per_param(l.precision, options.memory.convention);
  explain(
      "memory.weights", r.memory.weights, "B", "stage params per GPU · weight bytes (/d under ZeRO-3)",
      fmt::format("stage={}, params per GPU={:.4g} (+ experts {:.4g}), bytes/param={}, zero_stage={}, d={}",
                  memory.worst_stage, ws.params.dense, ws.params.experts, mb_pp.weights, l.zero_stage,
                  l.dp * l.cp));
  explain("memory.grads", r.memory.grads, "B", "stage params per GPU · grad bytes (/d under ZeRO-2,3)",
          fmt::format("bytes/param={} ({} main grads)", mb_pp.grads,
                      options.memory.convention == StateConvention::megatron ? "Megatron fp32"
                                                                             : "ZeRO-paper 16-bit"));
  explain("memory.optimizer", r.memory.optimizer, "B",
          "stage params per GPU · optimizer bytes (/d under ZeRO ≥ 1)",
          fmt::format("bytes/param={} (fp32 master + Adam m, v)", mb_pp.optimizer));
  explain(
      "memory.activations", r.memory.activations, "B",
      "in_flight · layers · per-layer (Korthikanti 2022) + embedding + logits + full-recompute working layer",
      fmt::format("in_flight={:.3g}, layers={}, per-layer={}, embedding={}, logits={}, working={}",
                  ws.in_flight_microbatches, ws.params.layers, gb(ws.layer_activation_bytes),
                  gb(ws.embedding_activation_bytes), gb(ws.output_activation_bytes),
                  gb(ws.recompute_working_bytes)));
  explain("memory.peak_bytes_per_gpu", r.memory.peak_bytes_per_gpu, "B",
          "weights + grads + optimizer + activations + workspace (worst stage)",
          fmt::format("stage={}, workspace={} ({} fixed + {}·activations), capacity={}", memory.worst_stage,
                      gb(r.memory.workspace), gb(options.memory.fixed_bytes),
                      options.memory.fragmentation_fraction, gb(r.memory.capacity_bytes)));
  explain("run.tokens", r.run.tokens, "token",
          sc.run.tokens > 0 ? "run.tokens" : "20 · params (Chinchilla, Hoffmann et al. 2022)",
          fmt::format("params={:.4g}, steps={:.0f} of {:.4g} tokens", r.params, run.steps, tokens_per_step));
  explain("run.goodput", r.run.goodput, "",
          "T_s / T_w, T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ (Daly 2006); τ Daly optimum unless given",
          fmt::format(
              "M={:.4g} h (gpu_mtbf {} h / {} GPUs), δ={:.4g} s ({} at {:.4g} GB/s), τ={:.4g} min, R={} s",
              run.mtbf_s / kSecondsPerHour, sc.run.gpu_mtbf_hours, l.world_size(), run.checkpoint_s,
              gb(ri.checkpoint_bytes), run.checkpoint_write_bytes_per_s / 1e9, run.interval_s / 60.0,
              options.run.restart_s));
  explain(
      "run.days", r.run.days, "day", "T_w / 86400, T_w = steps · step_time_s / goodput",
      fmt::format("steps={:.0f}, step_time_s={:.4g}, goodput={:.4f}", run.steps, r.step_time_s, run.goodput));
  explain("run.gpu_hours", r.run.gpu_hours, "GPU·h", "num_gpus · T_w / 3600",
          fmt::format("num_gpus={}, T_w={:.4g} s", l.world_size(), run.wall_s));
  explain("run.cost_usd", r.run.cost_usd, "$", "gpu_hours · usd_per_gpu_hour",
          fmt::format("gpu_hours={:.4g}, usd_per_gpu_hour={}", run.gpu_hours, sc.run.usd_per_gpu_hour));
  explain("run.energy_kwh", r.run.energy_kwh, "kWh",
          "num_gpus · TDP · (idle + (1 − idle) · busy) · T_w / 3.6e6 (GPU board power only)",
          fmt::format("TDP={} W, idle={}, busy={:.3f} (compute_s/step_time_s), {:.0f} W per GPU", gpu.tdp_w,
                      options.run.idle_power_fraction, ri.busy_fraction, run.power_w_per_gpu));
  return r;
}

}  // namespace simrun
