// Memory per GPU by kind and pipeline stage; formulas and sources in memory_model.hpp.
#include "simrun/sim/memory/memory_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"

namespace simrun {

BytesPerParam bytes_per_param(Precision precision, StateConvention convention) {
  if (convention == StateConvention::zero_paper) {
    // 2 + 2 + K, K = 12 (fp32 master, momentum, variance); fp32 training has no master copy.
    if (precision == Precision::fp32 || precision == Precision::tf32) return {4, 4, 8};
    return {2, 2, 12};
  }
  if (convention == StateConvention::fsdp) return {4, 4, 8};
  switch (precision) {
    case Precision::fp16:
      return {2, 2, 16};
    case Precision::fp32:
    case Precision::tf32:
      return {4, 4, 8};
    case Precision::bf16:
    case Precision::fp8:  // Megatron keeps bf16 parameters unless --fp8-param
    case Precision::fp4:
      return {2, 4, 12};
  }
  return {2, 4, 12};
}

BytesPerParam bytes_per_param(const Layout& layout, StateConvention convention) {
  BytesPerParam b = bytes_per_param(layout.precision, convention);
  if (layout.fp8_param_gather) b.weights = 1;
  return b;
}

ModelStateBytes model_state_bytes(double params, int zero_stage, double shard_degree, BytesPerParam bpp) {
  SIMRUN_ASSERT(zero_stage >= 0 && zero_stage <= 3, "zero_stage must be 0..3");
  SIMRUN_ASSERT(shard_degree >= 1, "ZeRO shard degree must be at least 1");
  const double d = shard_degree;
  ModelStateBytes b;
  b.weights = params * bpp.weights / (zero_stage >= 3 ? d : 1.0);
  b.grads = params * bpp.grads / (zero_stage >= 2 ? d : 1.0);
  b.optimizer = params * bpp.optimizer / (zero_stage >= 1 ? d : 1.0);
  return b;
}

std::string memory_shortfall_text(const MemoryReport& m) {
  return fmt::format("peak {:.1f} GiB per GPU exceeds the {:.1f} GiB usable ({:.1f} GiB over)",
                     m.peak_bytes_per_gpu / kGiB, m.capacity_bytes / kGiB,
                     (m.peak_bytes_per_gpu - m.capacity_bytes) / kGiB);
}

double grad_reduce_bytes_at(const WorkloadOptions& workload, const MemoryDefaults& memory,
                            Precision precision) {
  if (memory.convention == StateConvention::megatron && precision == Precision::fp16)
    return std::min(workload.grad_reduce_bytes, bytes_per_param(precision, memory.convention).grads);
  return workload.grad_reduce_bytes;
}

double usable_hbm_bytes(const GpuSpec& gpu) {
  if (gpu.hbm_usable_bytes > 0) return gpu.hbm_usable_bytes;
  // No device query: the nominal figure read as GiB, less what the queried parts keep back
  // (shared/reference/hardware.md device-queries: H100 SXM 79.19 GiB of "80 GB", A100 80GB
  // 79.35, H200 139.8 of 141, B200 179.1 of 180, GH200 95.6 of 96: 0.990 to 0.996; the least,
  // H100's 0.9899, to three figures).
  constexpr double kUsableOfNominalGib = 0.990;
  return gpu.hbm_bytes / kGB * kGiB * kUsableOfNominalGib;
}

double layer_activation_bytes(const ModelSpec& m, const ActivationConfig& c) {
  SIMRUN_ASSERT(c.tp >= 1 && c.seq_len >= 1 && c.micro_batch >= 1, "activation config needs positive sizes");
  const double s = double(c.seq_len);
  const double b = double(c.micro_batch);
  const double h = double(m.hidden);
  const double t = double(c.tp);
  const double e = c.element_bytes;
  const double sbh = s * b * h;

  if (c.recompute == Recompute::selective && c.selective == SelectiveKeeps::every_other_layer) {
    // Half the layers keep only their input, half everything (averaged per layer).
    ActivationConfig full = c, none = c;
    full.recompute = Recompute::full;
    none.recompute = Recompute::none;
    return 0.5 * (layer_activation_bytes(m, full) + layer_activation_bytes(m, none));
  }
  if (c.recompute == Recompute::full) {
    // Only the layer input is kept (Korthikanti Table 2: 2sbh); sequence-sharded under SP.
    return e * sbh / (c.sequence_parallel ? t : 1.0);
  }
  const int64_t head_dim = m.head_dim > 0 ? m.head_dim : m.hidden / std::max<int64_t>(1, m.heads);
  const double q = double(m.heads * head_dim);
  const double kv = double((m.kv_heads > 0 ? m.kv_heads : m.heads) * head_dim);
  // MoE layers (balanced routing): each token's top_k expert copies plus the shared experts
  // keep what a dense MLP of that total width keeps, and the grouped GEMMs save their permuted
  // top_k input copies (Megatron-Core TEGroupedLinear). Applied to every layer of an MoE model.
  // Under a capacity factor the expert copies are padded or cut to moe_load times top_k.
  const double routed_copies = m.is_moe() ? double(m.moe->top_k) * c.moe_load : 0.0;
  const double f = m.is_moe()
                       ? double(m.moe->expert_ffn_hidden) * (routed_copies + double(m.moe->shared_experts))
                       : double(m.ffn_hidden);

  const bool dropout = c.dropout == Dropout::masks;
  const double gi =
      c.saved_gemm_input_bytes > 0 ? c.saved_gemm_input_bytes : e;  // per saved GEMM-input element
  const double routed_inputs = routed_copies * gi * sbh;
  // Norm inputs (2 × e·sbh), QKV input (e·sbh), MLP input (e·sbh), two 1-byte dropout masks.
  const double replicated = 2 * e * sbh + gi * sbh + gi * sbh + (dropout ? 2 * sbh : 0.0);
  // Q, K, V, the attention output (input of the output projection); the MLP's activation input
  // and output (SwiGLU: gate and up, 2f wide, in; f out).
  double attention_tp = e * s * b * (q + kv + kv + q);
  if (m.mla) {
    // MLA: queries and keys d_nope + d_rope wide per head, values and output d_v; the normed Q
    // and KV latents are the up-projections' saved inputs (duplicated on every TP rank).
    const MlaSpec& a = *m.mla;
    const double qk = double(m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim));
    const double vo = double(m.heads * a.v_head_dim);
    attention_tp = e * s * b * (2 * qk + 2 * vo) + t * gi * s * b * double(a.q_lora_rank + a.kv_lora_rank);
  }
  double mlp_tp = ((m.ffn_act == FfnActivation::swiglu ? 2.0 : 1.0) * e + gi) * s * b * f;
  double kept_replicated = replicated;
  if (c.recompute == Recompute::selective && c.selective == SelectiveKeeps::all_but_norm_mla_up_swiglu) {
    // DeepSeek-V3 (arXiv:2412.19437 sec. 3.2.3, 3.3.3): the norms' outputs (the inputs of the
    // QKV or MLA down-projections, of the router and the MLP) are recomputed from their kept
    // inputs; MLA keeps its latents and the attention output (cached in E5M6, 12 bits), its
    // up-projected Q, K, V recomputed; the SwiGLU inputs are kept in FP8 (else 16-bit), its
    // output recomputed.
    kept_replicated = 2 * e * sbh + (dropout ? 2 * sbh : 0.0);
    if (m.mla) {
      const MlaSpec& a = *m.mla;
      const double vo = double(m.heads * a.v_head_dim);
      const double o_bytes = c.saved_gemm_input_bytes > 0 ? 1.5 : e;
      attention_tp = o_bytes * s * b * vo + t * gi * s * b * double(a.q_lora_rank + a.kv_lora_rank);
    }
    mlp_tp = (m.ffn_act == FfnActivation::swiglu ? 2.0 : 1.0) * gi * s * b * f;
  }
  double bytes =
      kept_replicated / (c.sequence_parallel ? t : 1.0) + (attention_tp + mlp_tp + routed_inputs) / t;

  const bool keeps_scores = !c.flash_attention && c.recompute == Recompute::none;
  if (keeps_scores) {
    const double kv_s = double(c.kv_seq_len > 0 ? c.kv_seq_len : c.seq_len);
    // Softmax output (e), its dropout mask (1), dropout output (e): 5 bytes per score at e = 2;
    // without dropout the softmax output alone.
    bytes += double(m.heads) * s * kv_s * b * (dropout ? 2 * e + 1 : e) / t;
  }
  return bytes;
}

namespace {

// The parameters one copy of pipeline stage `stage` holds (its layers as the workload splits
// them, the embedding on the first, the output layer on the last).
StageParams one_stage_params(const ModelSpec& m, const ParamCounts& counts, const Layout& layout,
                             const LayerPlacement& placement, int64_t stage) {
  SIMRUN_ASSERT(stage >= 0 && stage < layout.pp, "stage out of range");
  // Its layers as the workload splits them; MoE layers are those at index ≥ first_dense_layers.
  const int64_t first_moe = m.first_moe_layer();
  int64_t count = 0, moe_here = 0;
  for (int64_t c = 0; c < placement.v; ++c) {
    const size_t idx = size_t(stage * placement.v + c);
    const int64_t first = placement.first_layer[idx], end = first + placement.layers_per_chunk[idx];
    count += end - first;
    moe_here += std::max<int64_t>(0, end - std::max(first, first_moe));
  }

  const double L = double(m.layers);
  const double attention_per_layer = counts.attention / L;
  const double norms_per_layer = counts.norms / L;  // final norm spread evenly (h params)
  const int64_t dense_layers = m.dense_layers();
  const int64_t moe_layers = m.moe_layers();
  const double dense_ffn_per_layer = dense_layers > 0 ? counts.mlp_dense / double(dense_layers) : 0.0;
  const double routed_per_layer = moe_layers > 0 ? counts.experts_routed / double(moe_layers) : 0.0;
  const double shared_per_layer =
      moe_layers > 0 ? (counts.experts_shared + counts.router) / double(moe_layers) : 0.0;

  const double tp = double(layout.tp);
  const double ep = double(layout.ep);
  const double etp = double(layout.expert_tp);
  StageParams p;
  p.layers = count;
  p.moe_layers = moe_here;
  double dense = double(count) * (attention_per_layer + norms_per_layer) +
                 double(count - moe_here) * dense_ffn_per_layer + double(moe_here) * shared_per_layer;
  p.has_embedding = stage == 0;
  p.has_output = stage == layout.pp - 1;
  if (p.has_embedding) dense += counts.embedding;
  if (p.has_output) {
    // Untied: the output projection. Tied with pp > 1: Megatron keeps a copy of the word
    // embedding on the last stage and all-reduces its gradient with the first.
    if (counts.output > 0)
      dense += counts.output;
    else if (layout.pp > 1)
      dense += double(m.vocab) * double(m.hidden);
  }
  // TP splits the parameters but for the few it keeps whole on every rank.
  const double replicated =
      double(count) * tp_replicated_layer_params(m) + double(count - moe_here) * tp_replicated_ffn_params(m);
  p.dense = (dense - replicated) / tp + replicated;
  p.experts = double(moe_here) * routed_per_layer / (etp * ep);
  return p;
}

}  // namespace

StageParams stage_params(const ModelSpec& m, const ParamCounts& counts, const Layout& layout, int64_t stage) {
  return stage_params(m, counts, layout, layer_placement(m, layout), stage);
}

StageParams stage_params(const ModelSpec& m, const ParamCounts& counts, const Layout& layout,
                         const LayerPlacement& placement, int64_t stage) {
  StageParams p = one_stage_params(m, counts, layout, placement, stage);
  if (default_schedule(layout) != PipelineSchedule::dualpipe) return p;
  // DualPipe: each rank also holds its mirror's stage, pp − 1 − stage, for the micro-batches fed
  // from the other end: "2×" parameters (arXiv:2412.19437 Table 2), with their gradients and
  // optimizer states (each copy's over its DP group).
  const StageParams mirror = one_stage_params(m, counts, layout, placement, layout.pp - 1 - stage);
  p.layers += mirror.layers;
  p.moe_layers += mirror.moe_layers;
  p.dense += mirror.dense;
  p.experts += mirror.experts;
  p.has_embedding = p.has_embedding || mirror.has_embedding;
  p.has_output = p.has_output || mirror.has_output;
  return p;
}

namespace {

// The largest weight matrix one rank gathers at once under DeepSpeed's submodule gathers: the
// embedding or output layer (vocab-parallel), a layer's QKV, output projection or first MLP
// matrix (TP-split), or a MoE layer's routed experts (one submodule, its own group). The same
// matrices as the workload builder's submodules (workload_builder.cpp Shared::submodules).
double largest_gathered_matrix(const ModelSpec& m, const ParamCounts& counts, const Layout& layout,
                               const StageParams& params) {
  const double tp = double(layout.tp), h = double(m.hidden);
  double largest = 0;
  if (params.has_embedding) largest = std::max(largest, counts.embedding / tp);
  if (params.has_output) largest = std::max(largest, counts.output / tp);
  const AttentionWidths w = attention_widths(m, layout.tp);
  largest = std::max(largest, h * (w.q + w.kv_pair));
  const double gate = m.ffn_act == FfnActivation::swiglu ? 2.0 : 1.0;
  largest = std::max(largest, h * gate * double(m.ffn_hidden) / tp);
  if (params.moe_layers > 0) largest = std::max(largest, params.experts / double(params.moe_layers));
  return largest;
}

}  // namespace

Zero3Transients zero3_transients(const Layout& layout, const ModelSpec& model, const ParamCounts& counts,
                                 const StageParams& params, double element_bytes, double grad_bytes,
                                 const MemoryDefaults& defaults) {
  Zero3Transients z;
  if (layout.zero_stage != 3 || params.layers <= 0) return z;
  // Only sharded parameters are gathered: the dense ones over dp·cp, the routed experts over
  // the expert-data-parallel group.
  const bool dense_sharded = layout.dp * layout.cp > 1;
  const double dense = dense_sharded ? params.dense : 0.0;
  const double experts = layout.expert_dp() > 1 ? params.experts : 0.0;
  if (dense + experts <= 0) return z;
  if (defaults.zero3_gather == Zero3Gather::submodule && layout.pp == 1) {
    // DeepSpeed (frameworks.md 1.2, 1.3): the submodule computing, and what the coordinator
    // prefetches ahead of it (up to stage3_prefetch_bucket_size, stopping at
    // max_live_parameters); the gradients pass through the ipg bucket (reduce_bucket_size
    // elements, 16-bit) before their reduce-scatter.
    const double largest = largest_gathered_matrix(model, counts, layout, params);
    double live = largest + defaults.zero3_prefetch_bucket_params;
    if (defaults.zero3_max_live_params > 0)
      live = std::min(live, std::max(largest, defaults.zero3_max_live_params));
    z.gathered_weights = std::min(live, dense + experts) * element_bytes;
    z.unsharded_grads = std::min(defaults.zero3_reduce_bucket_params, dense + experts) * element_bytes;
    return z;
  }
  if (layout.pp > 1) {
    // torchtitan's FSDP+PP: the pipeline stage turns resharding after backward and gradient
    // reduction off for all but the last micro-batch (torch.distributed.pipelining stage.py,
    // set_reshard_after_backward / set_requires_gradient_sync): the stage's weights stay
    // gathered for the step and its gradients accumulate unsharded, in the reduction dtype
    // (FSDP2 accumulates in MixedPrecisionPolicy.reduce_dtype, fp32 in torchtitan): the state
    // convention's gradient bytes.
    z.gathered_weights = (dense + experts) * element_bytes;
    z.unsharded_grads = (dense + experts) * grad_bytes;
    return z;
  }
  // The layer computing and the one prefetched are gathered in 16-bit; so is the root unit
  // (embedding, output layer), which PyTorch FSDP does not reshard after forward; the layer
  // being reduce-scattered holds its full gradient (Zhao et al. 2023, arXiv:2304.11277, §3.2–3.3).
  // A MoE layer's unit also holds its experts.
  const double root =
      dense_sharded
          ? ((params.has_embedding ? counts.embedding : 0.0) + (params.has_output ? counts.output : 0.0)) /
                double(layout.tp)
          : 0.0;
  const double per_layer = std::max(0.0, dense - root) / double(params.layers) +
                           (params.moe_layers > 0 ? experts / double(params.moe_layers) : 0.0);
  z.gathered_weights = (2 * per_layer + root) * element_bytes;
  z.unsharded_grads = per_layer * element_bytes;
  return z;
}

double cp_exchange_bytes(const ModelSpec& m, const Layout& l, double element_bytes) {
  if (l.cp <= 1) return 0.0;
  const AttentionWidths w = attention_widths(m, l.tp);
  const double tokens = double(l.micro_batch) * double(m.seq_len) / double(l.cp);  // on this rank
  const double block = tokens * w.kv_pair * element_bytes;                         // one rank's K and V
  switch (l.cp_comm_type) {
    case CpCommType::p2p:
      return 4 * block;
    case CpCommType::all_gather:
      return 2 * double(l.cp) * block;
    case CpCommType::a2a:
      return tokens * (w.q + w.kv_pair) * element_bytes;
    case CpCommType::a2a_p2p:  // the all-to-all's, then the ring's over the second level
      return tokens * (w.q + w.kv_pair) * element_bytes + 4 * block;
  }
  return 0.0;
}

ActivationConfig activation_config(const Scenario& sc, const MemoryDefaults& defaults) {
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  ActivationConfig ac;
  ac.seq_len = std::max<int64_t>(1, m.seq_len / l.cp);
  ac.kv_seq_len = m.seq_len;
  ac.micro_batch = l.micro_batch;
  ac.tp = l.tp;
  ac.sequence_parallel = l.sequence_parallel && l.tp > 1;
  ac.flash_attention = l.flash_attention;
  ac.recompute = l.recompute;
  ac.element_bytes = tensor_element_bytes(l.precision);
  ac.dropout = defaults.dropout;
  if (l.low_precision())
    ac.saved_gemm_input_bytes = precision_recipe(l.recipe()).saved_input_bytes_per_element;
  ac.selective = defaults.selective;
  ac.moe_load = l.moe_load();
  return ac;
}

StageMemory stage_memory(const Scenario& sc, const MemoryDefaults& defaults, int64_t stage,
                         const StageParams& params, const InFlight& in_flight) {
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  const ParamCounts counts = count_params(m);
  const BytesPerParam bpp = bytes_per_param(l, defaults.convention);
  const ActivationConfig ac = activation_config(sc, defaults);

  StageMemory st;
  st.stage = stage;
  st.params = params;
  // ZeRO's accounting, but ZeRO-2's gradients whole where the framework reduces them once per
  // step (MemoryDefaults::zero2_reduce_every_micro_batch): ZeRO-1's. FSDP's SHARD_GRAD_OP
  // reduce-scatters after every backward and keeps its shard.
  const bool held_whole = l.zero_stage == 2 && !defaults.zero2_reduce_every_micro_batch &&
                          defaults.convention != StateConvention::fsdp;
  const int grads_stage = held_whole ? 1 : l.zero_stage;
  auto states = [&](double n, double degree) {
    ModelStateBytes b = model_state_bytes(n, l.zero_stage, degree, bpp);
    b.grads = model_state_bytes(n, grads_stage, degree, bpp).grads;
    return b;
  };
  const ModelStateBytes dense = states(params.dense, double(l.dp * l.cp));
  const ModelStateBytes experts = states(params.experts, double(l.expert_dp()));
  st.dense_states = dense;
  st.expert_states = experts;
  st.states = {dense.weights + experts.weights, dense.grads + experts.grads,
               dense.optimizer + experts.optimizer};
  const Zero3Transients z3 = zero3_transients(l, m, counts, params, ac.element_bytes, bpp.grads, defaults);
  st.fsdp_gathered_bytes = z3.gathered_weights;
  st.fsdp_unsharded_grad_bytes = z3.unsharded_grads;
  st.states.weights += z3.gathered_weights;
  st.states.grads += z3.unsharded_grads;

  const double s = double(ac.seq_len), b = double(l.micro_batch), h = double(m.hidden), t = double(l.tp);
  st.in_flight_microbatches = in_flight.micro_batches;
  st.layer_activation_bytes = layer_activation_bytes(m, ac);
  st.transformer_activation_bytes = in_flight.layer_micro_batches * st.layer_activation_bytes;
  if (params.has_embedding) {
    // int64 token ids (8·sb) and the embedding dropout mask (sbh), per micro-batch in flight.
    const double mask = defaults.dropout == Dropout::masks ? s * b * h : 0.0;
    st.embedding_activation_bytes = in_flight.micro_batches * (8.0 * s * b + mask) / t;
  }
  if (params.has_output) {
    // Output-layer input and fp32 logits for the cross-entropy: 4sbh + 4sbV, vocab-parallel.
    st.output_activation_bytes = (4.0 * s * b * h + 4.0 * s * b * double(m.vocab)) / t;
  }
  if (l.recompute == Recompute::full) {  // the layer being recomputed holds all its activations
    ActivationConfig working = ac;
    working.recompute = Recompute::none;
    st.recompute_working_bytes = layer_activation_bytes(m, working);
  }
  st.cp_exchange_bytes = cp_exchange_bytes(m, l, ac.element_bytes);
  st.activations = st.transformer_activation_bytes + st.embedding_activation_bytes +
                   st.output_activation_bytes + st.recompute_working_bytes + st.cp_exchange_bytes;
  st.workspace = defaults.fixed_bytes + defaults.fragmentation_fraction * st.activations;
  st.peak = st.states.total() + st.activations + st.workspace;
  return st;
}

MemoryReport memory_report(const Scenario& sc, const StageMemory& worst) {
  MemoryReport r;
  r.weights = worst.states.weights;
  r.grads = worst.states.grads;
  r.optimizer = worst.states.optimizer;
  r.activations = worst.activations;
  r.workspace = worst.workspace;
  r.peak_bytes_per_gpu = worst.peak;
  r.capacity_bytes = usable_hbm_bytes(sc.cluster.gpu);
  r.fits = worst.peak <= r.capacity_bytes;
  return r;
}

MemoryEstimate estimate_memory(const Scenario& sc, const MemoryDefaults& defaults) {
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  SIMRUN_ASSERT(l.tp >= 1 && l.pp >= 1 && l.dp >= 1 && l.cp >= 1 && l.ep >= 1,
                "layout sizes must be positive");
  SIMRUN_ASSERT(m.layers >= 1 && m.hidden >= 1 && m.seq_len >= 1, "model needs layers, hidden, seq_len");

  const ParamCounts counts = count_params(m);
  const double p = double(l.pp);
  const double v = double(std::max<int64_t>(1, scheduled_chunks(l)));
  const double microbatches = double(std::max<int64_t>(1, l.num_microbatches()));

  const LayerPlacement placement = layer_placement(m, l);
  MemoryEstimate out;
  for (int64_t i = 0; i < l.pp; ++i) {
    const StageParams params = stage_params(m, counts, l, placement, i);
    const double ahead = p - double(i);  // micro-batches stage i has started but not finished
    // Megatron's interleaved factor assumes the warm-up fills; a stage cannot hold more
    // micro-batches than the step has (Megatron applies the same cap to plain 1F1B).
    double in_flight = std::min(v > 1 ? ahead + (p - 1.0) / v : ahead, microbatches);
    double layers_each = double(params.layers);
    if (default_schedule(l) == PipelineSchedule::gpipe) {
      // GPipe: every micro-batch's forward before any backward (Huang et al. 2019, arXiv:1811.06965).
      in_flight = microbatches;
    } else if (default_schedule(l) == PipelineSchedule::dualpipe) {
      // DualPipe: pp + 1 chunks' activations on every rank (arXiv:2412.19437 Table 2), a chunk
      // being one of its two stages (their mean layer count).
      in_flight = std::min(p + 1.0, microbatches);
      layers_each = double(params.layers) / 2.0;
    }
    out.stages.push_back(stage_memory(sc, defaults, i, params, {in_flight, in_flight * layers_each}));
  }
  out.worst_stage = 0;
  for (const StageMemory& st : out.stages)
    if (st.peak > out.stages[size_t(out.worst_stage)].peak) out.worst_stage = st.stage;
  out.report = memory_report(sc, out.stages[size_t(out.worst_stage)]);
  return out;
}

}  // namespace simrun
