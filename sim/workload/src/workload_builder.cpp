// One stage's program, part 1: the layers' ops — MLP, norms, residuals around the attention
// block — with their TP collectives, and the embedding and head. The attention block (QKV or
// MLA projections, the core and its CP communication) is in workload_builder_attention.cpp; the
// MoE layer and its EP all-to-alls in workload_builder_moe.cpp; the step around the layers
// (data-parallel buckets, ZeRO/FSDP gathers, optimizer, pipeline slots) in
// workload_builder_step.cpp.
//
// Shapes per micro-batch on one rank (b = micro_batch, s = seq_len, t = tp, c = cp):
//   T  = b·s/c tokens through the GEMMs; Ts = T/t with sequence parallelism (norms, residuals)
//   q = a·d, k = g·d projection widths; f = ffn_hidden; V = vocab
// FLOPs per op follow Megatron's count (forward: 2 per multiply-add; backward 2× forward;
// causal attention core 2·T·s·q/t forward, i.e. half of the full score matrix).
#include "workload_builder.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "simrun/common/error.hpp"
#include "simrun/models/counts.hpp"

namespace simrun::detail {
namespace {

Precision gemm_precision_of(Precision p) {
  switch (p) {
    case Precision::fp8:
    case Precision::fp4:
      return p;
    case Precision::fp16:
      return Precision::fp16;
    case Precision::fp32:
      return Precision::fp32;
    case Precision::tf32:
      return Precision::tf32;
    case Precision::bf16:
      return Precision::bf16;
  }
  return Precision::bf16;
}

}  // namespace

Precision outside_fp8(Precision p) {
  return p == Precision::fp8 || p == Precision::fp4 ? Precision::bf16 : p;
}

StageBuilder::Shared::Shared(const Scenario& scenario, const WorkloadOptions& o,
                             const std::vector<int64_t>& lpc, int64_t v_, int64_t m_,
                             PipelineSchedule schedule_)
    : sc(scenario), opt(o), layers_per_chunk(lpc), v(v_), m(m_), schedule(schedule_) {
  const Layout& l = sc.layout;
  const ModelSpec& md = sc.model;
  pp = l.pp;
  tp = l.tp;
  cp = l.cp;
  cp_a2a = l.cp_a2a();
  cp_ring = l.cp_ring();
  cp_all_gather = l.cp > 1 && l.cp_comm_type == CpCommType::all_gather;
  const bool hierarchical = l.cp_comm_type == CpCommType::a2a_p2p;
  cp_a2a_group = hierarchical ? GroupKind::cp_a2a : GroupKind::cp;
  cp_ring_group = hierarchical ? GroupKind::cp_ring : GroupKind::cp;
  sp = l.sequence_parallel && l.tp > 1;
  flash = l.flash_attention;
  causal = true;
  swiglu = md.ffn_act == FfnActivation::swiglu;
  rope = !md.learned_position_embeddings && !md.alibi;
  layernorm = md.norm == NormKind::layernorm;
  gemm_precision = gemm_precision_of(l.precision);
  const bool low = is_low_precision(gemm_precision);
  recipe = &precision_recipe(l.recipe());
  first_bf16_layer = simrun::first_bf16_layer(gemm_precision, l.recipe(), md.layers);
  norm_emits_fp8 = o.kernels == KernelStack::fused && low && recipe->norm_emits_quantized;
  elem = tensor_element_bytes(l.precision);
  param_elem = gathered_weight_bytes(l.precision, l.fp8_param_gather);
  seq = d(md.seq_len);
  T = d(l.micro_batch) * seq / d(cp);
  Ts = sp ? T / d(tp) : T;
  h = d(md.hidden);
  shape_attention(md);
  const ParamCounts pc = count_params(md);
  split_params(md, pc);
  moe = md.is_moe();
  if (moe) shape_moe(md, pc);
  if (schedule == PipelineSchedule::dualpipe) {
    // Chunk 0 of stage s: position s of the forward pipeline; chunk 1: position pp − 1 − s of the
    // backward one, the same layers as chunk 0 of stage pp − 1 − s (a second copy).
    first_layer.assign(layers_per_chunk.size(), 0);
    for (int64_t s = 1; s < pp; ++s)
      first_layer[size_t(s * 2)] = first_layer[size_t((s - 1) * 2)] + layers_per_chunk[size_t((s - 1) * 2)];
    for (int64_t s = 0; s < pp; ++s) first_layer[size_t(s * 2 + 1)] = first_layer[size_t((pp - 1 - s) * 2)];
  } else {
    first_layer = chunk_first_layers(layers_per_chunk, pp, v);
  }
  submodule_gathers = l.zero_stage == 3 && o.zero3_gather == Zero3Gather::submodule && l.pp == 1;
  SIMRUN_ASSERT(std::accumulate(layers_per_chunk.begin(), layers_per_chunk.end(), int64_t(0)) ==
                    md.layers * (schedule == PipelineSchedule::dualpipe ? 2 : 1),
                "layer split does not cover the model");
}

void StageBuilder::Shared::shape_attention(const ModelSpec& md) {
  head_dim = d(md.head_dim > 0 ? md.head_dim : md.hidden / md.heads);
  heads_loc = d(md.heads) / d(tp);
  const AttentionWidths widths = attention_widths(md, tp);
  q_loc = widths.q;
  kv_pair_loc = widths.kv_pair;
  kv_loc = kv_pair_loc / 2;
  f_loc = d(md.ffn_hidden) / d(tp);
  vocab_loc = d(md.vocab) / d(tp);
  core_width_loc = 2.0 * q_loc;
  out_width_loc = q_loc;
  mla = md.mla.has_value();
  if (mla) {
    const MlaSpec& a = *md.mla;
    const double qk = d(a.qk_nope_head_dim + a.qk_rope_head_dim), v = d(a.v_head_dim);
    q_rank = d(a.q_lora_rank);
    kv_rank = d(a.kv_lora_rank);
    rope_dim = d(a.qk_rope_head_dim);
    kv_loc = heads_loc * v;
    head_dim = (qk + v) / 2;
    core_width_loc = heads_loc * (qk + v);
    out_width_loc = heads_loc * v;
    kv_up_loc = heads_loc * d(a.qk_nope_head_dim + a.v_head_dim);
  }
}

void StageBuilder::Shared::split_params(const ModelSpec& md, const ParamCounts& pc) {
  const Layout& l = sc.layout;
  const double final_norm = (layernorm ? 2.0 : 1.0) * h;
  embedding_params_local = pc.embedding / d(tp);
  output_params_local = (md.tied_embeddings && pp == 1 ? 0.0 : d(md.vocab) * h / d(tp)) + final_norm;
  // TP splits a layer's parameters but for the few it keeps whole on every rank.
  const double replicated = tp_replicated_layer_params(md), ffn_replicated = tp_replicated_ffn_params(md);
  attn_params_local =
      ((pc.attention + pc.norms - final_norm) / d(md.layers) - replicated) / d(tp) + replicated;
  dense_ffn_params_local =
      md.dense_layers() > 0 ? (pc.mlp_dense / d(md.dense_layers()) - ffn_replicated) / d(tp) + ffn_replicated
                            : 0.0;
  dp_group = cp > 1 ? GroupKind::dp_cp : GroupKind::dp;
  dp_size = l.dp * l.cp;
}

std::vector<StageBuilder::Shared::Submodule> StageBuilder::Shared::submodules(int32_t unit) const {
  std::vector<Submodule> out;
  // DeepSpeed keeps a parameter with fewer elements than the threshold whole on every rank
  // (stage3_param_persistence_threshold): the norms and biases, which each sit beside the
  // weight matrices compared here.
  auto add = [&](double params, bool routed, std::vector<OpName> ops) {
    if (params > 0 && params >= opt.zero3_persistence_threshold)
      out.push_back({params, routed, std::move(ops)});
  };
  if (unit == -1) {
    add(embedding_params_local, false, {OpName::embedding});
    return out;
  }
  if (unit == -2) {
    add(output_params_local - (layernorm ? 2.0 : 1.0) * h, false, {OpName::logits});
    return out;
  }
  if (mla) {
    const std::vector<OpName> q_ops = q_rank > 0 ? std::vector<OpName>{OpName::mla_q_up}
                                                 : std::vector<OpName>{OpName::mla_q_up, OpName::mla_kv_down};
    if (q_rank > 0) add(h * q_rank, false, {OpName::mla_q_down, OpName::mla_kv_down});
    add((q_rank > 0 ? q_rank : h) * q_loc, false, q_ops);
    add(h * (kv_rank + rope_dim), false, {OpName::mla_kv_down});
    add(kv_rank * kv_up_loc, false, {OpName::mla_kv_up});
  } else {
    add(h * (q_loc + 2 * kv_loc), false, {OpName::qkv});
  }
  add(out_width_loc * h, false, {OpName::proj});
  const double gate = swiglu ? 2.0 : 1.0;
  if (is_moe_layer(unit)) {
    add(h * experts, false, {OpName::router});
    add(expert_params_local, true, {OpName::expert_fc1, OpName::expert_fc2});
    add(h * gate * shared_f_loc, false, {OpName::fc1});
    add(shared_f_loc * h, false, {OpName::fc2});
  } else {
    add(h * gate * f_loc, false, {OpName::fc1});
    add(f_loc * h, false, {OpName::fc2});
  }
  return out;
}

StageBuilder::StageBuilder(const Shared& shared, int64_t stage) : m_s(shared), m_stage(stage) {
  m_prog.stage = stage;
  for (int64_t c = 0; c < m_s.v; ++c) {
    const size_t idx = static_cast<size_t>(stage * m_s.v + c);
    for (int64_t i = 0; i < m_s.layers_per_chunk[idx]; ++i)
      m_prog.layers.push_back(static_cast<int32_t>(m_s.first_layer[idx] + i));
  }
  for (int32_t layer : m_prog.layers) {
    m_prog.params += m_s.layer_params(layer);
    m_prog.expert_params += m_s.layer_expert_params(layer);
  }
  for (int64_t c = 0; c < m_s.v; ++c) {
    const ChunkPlace at = m_s.place(stage, c);
    if (at.position == 0) m_prog.params += m_s.embedding_params_local;
    if (at.position == at.last) m_prog.params += m_s.output_params_local;
  }
  if (m_s.sc.layout.zero_stage <= 2) plan_grad_buckets();
  if (m_s.submodule_gathers) {
    plan_submodule_units();
  } else if (m_s.sc.layout.zero_stage >= 3) {
    // The units fsdp_gather and fsdp_reduce move, in the order the forward computes them.
    if (stage == 0) m_prog.fsdp_units.push_back({0, -1, m_s.fsdp_unit_params(-1), 0.0});
    for (int64_t c = 0; c < m_s.v; ++c) {
      const size_t idx = static_cast<size_t>(stage * m_s.v + c);
      for (int64_t i = 0; i < m_s.layers_per_chunk[idx]; ++i) {
        const auto layer = static_cast<int32_t>(m_s.first_layer[idx] + i);
        m_prog.fsdp_units.push_back({c, layer, m_s.fsdp_unit_params(layer), m_s.layer_expert_params(layer)});
      }
    }
    if (stage == m_s.pp - 1) m_prog.fsdp_units.push_back({m_s.v - 1, -2, m_s.fsdp_unit_params(-2), 0.0});
  }
}

// ---------------------------------------------------------------------------------------------
// Task creation

uint32_t StageBuilder::add(Task t, const std::vector<uint32_t>& deps) {
  t.layer = m_layer;
  t.micro_batch = m_mb;
  t.chunk = m_chunk;
  t.first_dep = static_cast<uint32_t>(m_prog.deps.size());
  uint16_t n = 0;
  for (uint32_t dep : deps) {
    if (dep == kNoTask) continue;
    m_prog.deps.push_back(dep);
    ++n;
  }
  t.dep_count = n;
  const auto id = static_cast<uint32_t>(m_prog.tasks.size());
  m_prog.tasks.push_back(t);
  return id;
}

uint32_t StageBuilder::intern(const OpShape& shape) {
  const auto [it, added] = m_shape_index.try_emplace(shape, static_cast<uint32_t>(m_prog.shapes.size()));
  if (added) m_prog.shapes.push_back(shape);
  return it->second;
}

uint32_t StageBuilder::compute(OpName op, Phase phase, const OpShape& shape, double flops) {
  if (m_s.submodule_gathers && phase != Phase::optimizer) fetch_submodules_for(op);
  Task t;
  t.kind = TaskKind::compute;
  t.stream = Stream::compute;
  t.phase = phase;
  t.op = op;
  t.flops = flops;
  t.shape = intern(shape);
  if (phase == Phase::recompute)
    m_prog.flops_recompute += flops;
  else if (phase != Phase::optimizer)
    m_prog.flops_model += flops;
  const uint32_t id = add(t, m_wait);
  m_wait.clear();
  m_last_compute = id;
  return id;
}

uint32_t StageBuilder::expert_gemm(OpName op, Phase phase, const OpShape& shape, double counted_flops) {
  m_prog.flops_padding += counted_flops * (m_s.moe_load - 1.0);
  return compute(op, phase, shape, counted_flops);
}

uint32_t StageBuilder::collective(Stream stream, OpName op, CollectiveOp coll, GroupKind group, double bytes,
                                  Phase phase, std::vector<uint32_t> deps) {
  Task t;
  t.kind = TaskKind::collective;
  t.stream = stream;
  t.phase = phase;
  t.op = op;
  t.coll = coll;
  t.group = group;
  t.comm_bytes = bytes;
  return add(t, deps);
}

OpShape StageBuilder::gemm(double m, double n, double k, Precision p, InputCast input) const {
  OpShape s;
  s.cls = OpClass::gemm;
  s.precision = p;
  s.m = m;
  s.n = n;
  s.k = k;
  const bool low = p == Precision::fp8 || p == Precision::fp4;
  const double in = p == Precision::fp4 ? 0.5 : low ? 1.0 : m_s.elem;
  s.bytes = (m * k + k * n) * in + m * n * m_s.elem;
  // Transformer Engine quantises the activation operand before the GEMM (the recipe's bytes per
  // element: its reads, row- and column-wise copies, scales, amax pass). Callers pass
  // InputCast::already_cast where TE has it already: a wgrad GEMM reuses the column-wise copy
  // that the forward's (or the dgrad's) quantisation wrote, and a GEMM right after a norm gets its
  // input quantised by the norm (Shared::norm_emits_fp8).
  if (low && input == InputCast::cast) s.serial_bytes = m * k * m_s.recipe->quantize_bytes_per_element;
  return s;
}

Precision StageBuilder::layer_gemm_precision() const {
  return m_layer >= m_s.first_bf16_layer ? outside_fp8(m_s.gemm_precision) : m_s.gemm_precision;
}

// One GEMM of each local expert, launched as one grouped GEMM (TEGroupedLinear): per-expert
// shape for the efficiency, the experts' total work and traffic, one launch.
OpShape StageBuilder::grouped_gemm(double m, double n, double k, InputCast input) const {
  OpShape g = gemm(m, n, k, layer_gemm_precision(), input);
  g.batch = m_s.experts_loc;
  g.bytes *= m_s.experts_loc;
  g.serial_bytes *= m_s.experts_loc;
  return g;
}

OpShape StageBuilder::memory_op(double bytes) const {
  OpShape s;
  s.cls = OpClass::memory;
  s.bytes = m_s.opt.kernels == KernelStack::eager ? bytes * m_s.opt.eager_memory_factor : bytes;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Tensor-parallel collectives around the column/row-parallel GEMMs

uint32_t StageBuilder::sp_input_gather(OpName ag_name, Phase phase) {
  if (!m_s.sp) return kNoTask;
  return collective(Stream::tp, ag_name, CollectiveOp::all_gather, GroupKind::tp, m_s.T * m_s.h * m_s.elem,
                    phase, {m_last_compute});
}

void StageBuilder::wait_for_input_gather(uint32_t ag, GemmSide side) {
  if (ag == kNoTask) return;
  // With TP comm overlap the gather is pipelined with the GEMM: waited for after it.
  if ((side == GemmSide::after) == (m_s.opt.tp_overlap == TpCommOverlap::full)) m_wait.push_back(ag);
}

uint32_t StageBuilder::tp_before_column_parallel(OpName ag_name, Phase phase) {
  const uint32_t ag = sp_input_gather(ag_name, phase);
  wait_for_input_gather(ag, GemmSide::before);
  return m_s.opt.tp_overlap == TpCommOverlap::full ? ag : kNoTask;
}

void StageBuilder::tp_after_row_parallel(OpName rs_name, OpName ar_name, uint32_t gemm_task,
                                         uint32_t before_gemm, Phase phase) {
  if (m_s.tp == 1) return;
  const double bytes = m_s.T * m_s.h * m_s.elem;
  const bool overlapped = m_s.sp && m_s.opt.tp_overlap == TpCommOverlap::full;
  const uint32_t start_after = overlapped ? before_gemm : gemm_task;
  const uint32_t c = m_s.sp ? collective(Stream::tp, rs_name, CollectiveOp::reduce_scatter, GroupKind::tp,
                                         bytes, phase, {start_after})
                            : collective(Stream::tp, ar_name, CollectiveOp::all_reduce, GroupKind::tp, bytes,
                                         phase, {start_after});
  m_wait.push_back(c);
}

// ---------------------------------------------------------------------------------------------
// Layer forward (phase forward or recompute)

void StageBuilder::layer_forward(int32_t layer, Phase phase) {
  const Shared& s = m_s;
  m_layer = layer;
  const Precision gp = layer_gemm_precision();
  const double norm_bytes = s.Ts * s.h * s.elem * 2;
  const double residual_bytes = s.Ts * s.h * (3 * s.elem + 1);

  if (s.sc.layout.zero_stage == 3 && phase == Phase::forward) fsdp_gather(layer, Phase::forward);
  if (phase == Phase::forward && !m_layer_forwarded[layer]) {
    m_layer_forwarded[layer] = true;
    const auto it = m_param_gather_of_layer.find(layer);
    if (it != m_param_gather_of_layer.end())
      m_wait.insert(m_wait.end(), it->second.begin(), it->second.end());
  }

  // Attention block.
  const uint32_t ln1 = compute(OpName::ln_attn, phase, memory_op(norm_bytes), 0);
  m_first_op_of_layer[layer] = ln1;
  const uint32_t ag1 = tp_before_column_parallel(OpName::tp_ag_attn, phase);
  if (s.mla)
    mla_forward(phase, ag1);
  else
    qkv_forward(phase, ag1);
  attention_core_forward(phase);
  const uint32_t before_proj = m_last_compute;
  const double o = s.out_width_loc;
  const uint32_t proj = compute(OpName::proj, phase, gemm(s.T, s.h, o, gp), 2.0 * s.T * o * s.h);
  tp_after_row_parallel(OpName::tp_rs_attn, OpName::tp_ar_attn, proj, before_proj, phase);
  compute(OpName::residual_attn, phase, memory_op(residual_bytes), 0);

  // MLP block.
  compute(OpName::ln_mlp, phase, memory_op(norm_bytes), 0);
  if (s.is_moe_layer(layer))
    moe_forward(phase);
  else
    mlp_forward(s.f_loc, phase, Fc1Input::norm_output);
  compute(OpName::residual_mlp, phase, memory_op(residual_bytes), 0);
  m_layer = -1;
}

void StageBuilder::mlp_forward(double f_loc, Phase phase, Fc1Input input) {
  mlp_up_forward(f_loc, phase, input, sp_input_gather(OpName::tp_ag_mlp, phase));
  mlp_down_forward(f_loc, phase);
}

void StageBuilder::mlp_up_forward(double f_loc, Phase phase, Fc1Input input, uint32_t input_gather) {
  const Shared& s = m_s;
  const double up = s.swiglu ? 2 * f_loc : f_loc;
  const InputCast cast =
      input == Fc1Input::norm_output && s.norm_emits_fp8 ? InputCast::already_cast : InputCast::cast;
  wait_for_input_gather(input_gather, GemmSide::before);
  compute(OpName::fc1, phase, gemm(s.T, up, s.h, layer_gemm_precision(), cast), 2.0 * s.T * s.h * up);
  wait_for_input_gather(input_gather, GemmSide::after);
  compute(OpName::act, phase, memory_op(s.T * (up + f_loc) * s.elem), 0);
}

void StageBuilder::mlp_down_forward(double f_loc, Phase phase) {
  const Shared& s = m_s;
  const uint32_t before_fc2 = m_last_compute;
  const uint32_t fc2 =
      compute(OpName::fc2, phase, gemm(s.T, s.h, f_loc, layer_gemm_precision()), 2.0 * s.T * f_loc * s.h);
  tp_after_row_parallel(OpName::tp_rs_mlp, OpName::tp_ar_mlp, fc2, before_fc2, phase);
}

// ---------------------------------------------------------------------------------------------
// Layer backward

void StageBuilder::row_parallel_backward(OpName op, OpName ag_name, double k_loc, double flops_each) {
  const Shared& s = m_s;
  uint32_t ag = kNoTask;
  if (s.sp) {
    // Backward of the forward reduce-scatter: all-gather the output gradient. With TP comm
    // overlap it is pipelined with the dgrad GEMM that consumes it (Transformer Engine's
    // userbuffers AG overlap for proj/fc2 dgrad), as the forward all-gather is with its GEMM.
    ag = collective(Stream::tp, ag_name, CollectiveOp::all_gather, GroupKind::tp, s.T * s.h * s.elem,
                    Phase::backward, {m_last_compute});
    if (m_s.opt.tp_overlap != TpCommOverlap::full) {
      m_wait.push_back(ag);
      ag = kNoTask;
    }
  }
  compute(op, Phase::backward, gemm(s.T, k_loc, s.h, layer_gemm_precision()), flops_each);  // dgrad
  if (ag != kNoTask) m_wait.push_back(ag);
  compute(op, Phase::backward, gemm(k_loc, s.h, s.T, layer_gemm_precision(), InputCast::already_cast),
          flops_each);  // wgrad
}

void StageBuilder::column_parallel_backward(OpName op, OpName ag_name, OpName rs_name, double n_loc,
                                            double flops_each) {
  const Shared& s = m_s;
  const double bytes = s.T * s.h * s.elem;
  uint32_t ag = kNoTask;
  if (s.sp)  // re-gather the sequence-sharded input for the wgrad, overlapping the dgrad
    ag = collective(Stream::tp, ag_name, CollectiveOp::all_gather, GroupKind::tp, bytes, Phase::backward,
                    {m_last_compute});
  const uint32_t dgrad =
      compute(op, Phase::backward, gemm(s.T, s.h, n_loc, layer_gemm_precision()), flops_each);
  uint32_t red = kNoTask;
  if (s.tp > 1)  // reduce the input gradient over TP, overlapping the wgrad
    red = s.sp ? collective(Stream::tp, rs_name, CollectiveOp::reduce_scatter, GroupKind::tp, bytes,
                            Phase::backward, {dgrad})
               : collective(Stream::tp, rs_name, CollectiveOp::all_reduce, GroupKind::tp, bytes,
                            Phase::backward, {dgrad});
  if (ag != kNoTask) m_wait.push_back(ag);
  // Without the async all-reduce (TpCommOverlap::none, no SP) the wgrad waits for it.
  if (red != kNoTask && !s.sp && s.opt.tp_overlap == TpCommOverlap::none) {
    m_wait.push_back(red);
    red = kNoTask;
  }
  compute(op, Phase::backward, gemm(s.h, n_loc, s.T, layer_gemm_precision(), InputCast::already_cast),
          flops_each);  // wgrad
  if (red != kNoTask) m_wait.push_back(red);
}

void StageBuilder::mlp_backward(double f_loc) {
  mlp_down_backward(f_loc);
  mlp_up_backward(f_loc);
}

void StageBuilder::mlp_down_backward(double f_loc) {
  const Shared& s = m_s;
  const double up = s.swiglu ? 2 * f_loc : f_loc;
  row_parallel_backward(OpName::fc2, OpName::tp_ag_mlp, f_loc, 2.0 * s.T * f_loc * s.h);
  compute(OpName::act, Phase::backward, memory_op(s.T * (2 * up + f_loc) * s.elem), 0);
}

void StageBuilder::mlp_up_backward(double f_loc) {
  const Shared& s = m_s;
  const double up = s.swiglu ? 2 * f_loc : f_loc;
  column_parallel_backward(OpName::fc1, OpName::tp_ag_in_mlp, OpName::tp_rs_mlp, up, 2.0 * s.T * s.h * up);
}

// DeepSeek-V3's selective recompute (arXiv:2412.19437 sec. 3.2.3 "Recomputation of RMSNorm and MLA
// Up-Projection", sec. 3.3.3 SwiGLU outputs recomputed from their FP8 inputs): before the layer's
// backward, its two norms (and MLA's latent norms), the MLA up-projections and the MLP
// activation (the routed experts' and the shared experts') re-run, as in the forward.
void StageBuilder::recompute_norms_up_projections_and_activations(int32_t layer) {
  const Shared& s = m_s;
  const Phase phase = Phase::recompute;
  const double norm_bytes = s.Ts * s.h * s.elem * 2;
  compute(OpName::ln_attn, phase, memory_op(norm_bytes), 0);
  if (s.mla) {
    const Precision gp = layer_gemm_precision();
    if (s.q_rank > 0) {
      compute(OpName::mla_norm, phase, memory_op(s.T * s.q_rank * s.elem * 2), 0);
      compute(OpName::mla_q_up, phase, gemm(s.T, s.q_loc, s.q_rank, gp), 2.0 * s.T * s.q_rank * s.q_loc);
    }
    compute(OpName::mla_norm, phase, memory_op(s.T * s.kv_rank * s.elem * 2), 0);
    compute(OpName::mla_kv_up, phase, gemm(s.T, s.kv_up_loc, s.kv_rank, gp),
            2.0 * s.T * s.kv_rank * s.kv_up_loc);
  }
  compute(OpName::ln_mlp, phase, memory_op(norm_bytes), 0);
  auto activation = [&](OpName op, double tokens, double f_loc) {
    const double up = s.swiglu ? 2 * f_loc : f_loc;
    compute(op, phase, memory_op(tokens * (up + f_loc) * s.elem), 0);
  };
  if (s.is_moe_layer(layer)) {
    activation(OpName::expert_act, s.routed_tokens, s.expert_f_loc);
    if (s.shared_f_loc > 0) activation(OpName::act, s.T, s.shared_f_loc);
  } else {
    activation(OpName::act, s.T, s.f_loc);
  }
}

void StageBuilder::layer_backward(int32_t layer) {
  const Shared& s = m_s;
  const Layout& l = s.sc.layout;
  if (l.zero_stage == 3 && m_last_compute != kNoTask) m_backward_start_of_layer[layer] = m_last_compute;
  if (l.zero_stage == 3 && (l.pp == 1 || m_mb == s.first_mb(m_chunk))) {
    const auto it = m_prefetched_gather.find(layer);
    if (it != m_prefetched_gather.end()) {
      m_wait.push_back(it->second);
      m_prefetched_gather.erase(it);
    } else {
      fsdp_gather(layer, Phase::backward);
    }
  }
  const bool every_other =
      l.recompute == Recompute::selective && s.opt.selective == SelectiveRecompute::every_other_layer;
  if (l.recompute == Recompute::full || (every_other && layer % 2 == 1))
    layer_forward(layer, Phase::recompute);
  m_layer = layer;
  if (l.recompute == Recompute::selective && s.opt.selective == SelectiveRecompute::norm_mla_up_swiglu)
    recompute_norms_up_projections_and_activations(layer);
  const double norm_bwd_bytes = s.Ts * s.h * s.elem * 4;
  const double residual_bwd_bytes = s.Ts * s.h * (2 * s.elem + 1);

  // MLP block, reversed.
  compute(OpName::residual_mlp, Phase::backward, memory_op(residual_bwd_bytes), 0);
  if (s.is_moe_layer(layer))
    moe_backward();
  else
    mlp_backward(s.f_loc);
  compute(OpName::ln_mlp, Phase::backward, memory_op(norm_bwd_bytes), 0);

  // Attention block, reversed.
  compute(OpName::residual_attn, Phase::backward, memory_op(residual_bwd_bytes), 0);
  row_parallel_backward(OpName::proj, OpName::tp_ag_attn, s.out_width_loc, 2.0 * s.T * s.out_width_loc * s.h);
  if (l.recompute == Recompute::selective && s.opt.selective == SelectiveRecompute::attention_core)
    attention_core_forward(Phase::recompute);
  attention_core_backward();
  if (s.mla)
    mla_backward();
  else
    qkv_backward();
  if (l.zero_stage == 3) m_gradients_done_of_layer[layer] = m_last_compute;
  // FSDP1 with BACKWARD_POST: the post-backward hook issues the next unit's all-gather before
  // this unit's reduce-scatter on the same communicator, so the gather goes first.
  if (l.zero_stage == 3 && l.pp == 1 && layer > 0 && !s.submodule_gathers && s.opt.fsdp_one_communicator &&
      s.opt.fsdp_backward_prefetch == FsdpBackwardPrefetch::after_backward) {
    const uint32_t gather = issue_fsdp_gather(layer - 1, Phase::backward);
    if (gather != kNoTask) m_prefetched_gather[layer - 1] = gather;
  }
  compute(OpName::ln_attn, Phase::backward, memory_op(norm_bwd_bytes), 0);
  m_layer = -1;

  if (l.zero_stage == 3) {
    if (l.pp == 1 || m_mb == s.last_mb(m_chunk)) fsdp_reduce(layer);
  } else if (m_mb == s.last_mb(m_chunk) || reduces_every_micro_batch()) {
    grads_ready(kDenseParams, layer);
    grads_ready(kExpertParams, layer);
  }
}

// ---------------------------------------------------------------------------------------------
// Embedding and head

void StageBuilder::embedding_forward() {
  const Shared& s = m_s;
  if (s.sc.layout.zero_stage == 3) fsdp_gather(-1, Phase::forward);
  const auto it = m_param_gather_of_layer.find(-1);
  if (it != m_param_gather_of_layer.end() && m_mb == s.first_mb(m_chunk))
    m_wait.insert(m_wait.end(), it->second.begin(), it->second.end());
  compute(OpName::embedding, Phase::forward, memory_op(s.T * s.h * s.elem * 2), 0);
  if (s.tp > 1) {
    // VocabParallelEmbedding: each rank holds V/t rows; partial sums are all-reduced
    // (reduce-scattered into the sequence-parallel region with SP).
    const uint32_t c = collective(Stream::tp, OpName::tp_embedding,
                                  s.sp ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce,
                                  GroupKind::tp, s.T * s.h * s.elem, Phase::forward, {m_last_compute});
    m_wait.push_back(c);
  }
}

void StageBuilder::embedding_backward() {
  const Shared& s = m_s;
  if (s.sp) {
    const uint32_t c = collective(Stream::tp, OpName::tp_embedding, CollectiveOp::all_gather, GroupKind::tp,
                                  s.T * s.h * s.elem, Phase::backward, {m_last_compute});
    m_wait.push_back(c);
  }
  // Scatter-add of the token gradients into the (fp32 main-grad) embedding gradient.
  compute(OpName::embedding, Phase::backward, memory_op(s.T * s.h * (s.elem + 8)), 0);
  if (s.sc.layout.zero_stage == 3) {
    if (s.sc.layout.pp == 1 || m_mb == s.last_mb(m_chunk)) fsdp_reduce(-1);
  } else if (m_mb == s.last_mb(m_chunk) || reduces_every_micro_batch()) {
    grads_ready(kDenseParams, -1);
  }
}

void StageBuilder::head_forward() {
  const Shared& s = m_s;
  if (s.sc.layout.zero_stage == 3) fsdp_gather(-2, Phase::forward);
  const auto it = m_param_gather_of_layer.find(-2);
  if (it != m_param_gather_of_layer.end() && m_mb == s.first_mb(m_chunk))
    m_wait.insert(m_wait.end(), it->second.begin(), it->second.end());
  compute(OpName::final_ln, Phase::forward, memory_op(s.Ts * s.h * s.elem * 2), 0);
  const uint32_t ag = tp_before_column_parallel(OpName::tp_logits, Phase::forward);
  // The output layer stays in 16-bit under fp8 (Transformer Engine converts transformer layers).
  const Precision p = outside_fp8(s.gemm_precision);
  compute(OpName::logits, Phase::forward, gemm(s.T, s.vocab_loc, s.h, p), 2.0 * s.T * s.h * s.vocab_loc);
  if (ag != kNoTask) m_wait.push_back(ag);  // overlapped with the GEMM: the loss waits for it
  // Vocab-parallel cross entropy: fp32 logits, max/sum-exp/target all-reduces (T floats each).
  compute(OpName::loss, Phase::forward, memory_op(s.T * s.vocab_loc * (s.elem + 4 + 4)), 0);
  if (s.tp > 1) {
    const uint32_t c = collective(Stream::tp, OpName::tp_loss, CollectiveOp::all_reduce, GroupKind::tp,
                                  3 * s.T * 4, Phase::forward, {m_last_compute});
    m_wait.push_back(c);
  }
}

void StageBuilder::head_backward() {
  const Shared& s = m_s;
  const Precision p = outside_fp8(s.gemm_precision);
  compute(OpName::loss, Phase::backward, memory_op(s.T * s.vocab_loc * (4 + s.elem)), 0);
  const double flops = 2.0 * s.T * s.h * s.vocab_loc;
  uint32_t ag = kNoTask;
  if (s.sp)
    ag = collective(Stream::tp, OpName::tp_logits, CollectiveOp::all_gather, GroupKind::tp,
                    s.T * s.h * s.elem, Phase::backward, {m_last_compute});
  const uint32_t dgrad = compute(OpName::logits, Phase::backward, gemm(s.T, s.h, s.vocab_loc, p), flops);
  uint32_t red = kNoTask;
  if (s.tp > 1)
    red = collective(Stream::tp, OpName::tp_logits,
                     s.sp ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce, GroupKind::tp,
                     s.T * s.h * s.elem, Phase::backward, {dgrad});
  if (ag != kNoTask) m_wait.push_back(ag);
  compute(OpName::logits, Phase::backward, gemm(s.vocab_loc, s.h, s.T, p), flops);
  if (red != kNoTask) m_wait.push_back(red);
  compute(OpName::final_ln, Phase::backward, memory_op(s.Ts * s.h * s.elem * 4), 0);
  if (s.sc.layout.zero_stage == 3) {
    if (s.sc.layout.pp == 1 || m_mb == s.last_mb(m_chunk)) fsdp_reduce(-2);
  } else if (m_mb == s.last_mb(m_chunk) || reduces_every_micro_batch()) {
    grads_ready(kDenseParams, -2);
  }
}

}  // namespace simrun::detail
