// One stage's program: the slots of its pipeline schedule expanded into layer ops, TP/CP
// collectives, pipeline messages, gradient buckets, ZeRO/FSDP gathers and the optimizer.
//
// Shapes per micro-batch on one rank (b = micro_batch, s = seq_len, t = tp, c = cp):
//   T  = b·s/c tokens through the GEMMs; Ts = T/t with sequence parallelism (norms, residuals)
//   q = a·d, k = g·d projection widths; f = ffn_hidden; V = vocab
// FLOPs per op follow Megatron's count (forward: 2 per multiply-add; backward 2× forward;
// causal attention core 2·T·s·q/t forward, i.e. half of the full score matrix).
#include "workload_builder.hpp"

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/models/counts.hpp"

namespace simrun::detail {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

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

StageBuilder::Shared::Shared(const Scenario& scenario, const ComputeModel& cm, const WorkloadOptions& o,
                             const std::vector<int64_t>& lpc, int64_t v_, int64_t m_)
    : sc(scenario), compute(cm), opt(o), layers_per_chunk(lpc), v(v_), m(m_) {
  const Layout& l = sc.layout;
  const ModelSpec& md = sc.model;
  pp = l.pp;
  tp = l.tp;
  cp = l.cp;
  sp = l.sequence_parallel && l.tp > 1;
  flash = l.flash_attention;
  causal = true;
  swiglu = md.ffn_act == FfnActivation::swiglu;
  rope = !md.learned_position_embeddings && !md.alibi;
  layernorm = md.norm == NormKind::layernorm;
  gemm_precision = gemm_precision_of(l.precision);
  elem = (l.precision == Precision::fp32 || l.precision == Precision::tf32) ? 4.0 : 2.0;
  seq = d(md.seq_len);
  T = d(l.micro_batch) * seq / d(cp);
  Ts = sp ? T / d(tp) : T;
  h = d(md.hidden);
  head_dim = d(md.head_dim > 0 ? md.head_dim : md.hidden / md.heads);
  heads_loc = d(md.heads) / d(tp);
  q_loc = d(md.heads) * head_dim / d(tp);
  // With fewer KV heads than tp, Megatron replicates them: each rank holds one.
  kv_loc = std::max(d(md.kv_heads) * head_dim / d(tp), head_dim);
  f_loc = d(md.ffn_hidden) / d(tp);
  vocab_loc = d(md.vocab) / d(tp);

  const ParamCounts pc = count_params(md);
  layer_params_local = pc.per_layer(md) / d(tp);
  embedding_params_local = pc.embedding / d(tp);
  const double final_norm = (layernorm ? 2.0 : 1.0) * h;
  output_params_local = (md.tied_embeddings && pp == 1 ? 0.0 : d(md.vocab) * h / d(tp)) + final_norm;
  const double q = d(md.heads) * head_dim, k = d(md.kv_heads) * head_dim;
  const double ffn_factor = swiglu ? 3.0 : 2.0;
  flops_per_layer_fwd = 2.0 * T * (h * (q + 2 * k) + q * h + h * d(md.ffn_hidden) * ffn_factor) / d(tp) +
                        2.0 * T * seq * q / d(tp);  // causal core: half of 4·T·s·q
  dp_group = cp > 1 ? GroupKind::dp_cp : GroupKind::dp;
  dp_size = l.dp * l.cp;

  first_layer.assign(layers_per_chunk.size(), 0);
  int64_t next = 0;
  for (int64_t vs = 0; vs < pp * v; ++vs) {  // virtual stage vs = chunk·pp + stage
    const size_t idx = static_cast<size_t>((vs % pp) * v + vs / pp);
    first_layer[idx] = next;
    next += layers_per_chunk[idx];
  }
  SIMRUN_ASSERT(next == md.layers, "layer split does not cover the model");
}

StageBuilder::StageBuilder(const Shared& shared, int64_t stage) : m_s(shared), m_stage(stage) {
  m_prog.stage = stage;
  for (int64_t c = 0; c < m_s.v; ++c) {
    const size_t idx = static_cast<size_t>(stage * m_s.v + c);
    for (int64_t i = 0; i < m_s.layers_per_chunk[idx]; ++i)
      m_prog.layers.push_back(static_cast<int32_t>(m_s.first_layer[idx] + i));
  }
  m_prog.params = d(static_cast<int64_t>(m_prog.layers.size())) * m_s.layer_params_local;
  if (stage == 0) m_prog.params += m_s.embedding_params_local;
  if (stage == m_s.pp - 1) m_prog.params += m_s.output_params_local;
  m_bucket_limit = std::max(m_s.opt.bucket_params_min, m_s.opt.bucket_params_per_dp * d(m_s.dp_size));
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

uint32_t StageBuilder::compute(OpName op, Phase phase, const OpShape& shape, double flops) {
  Task t;
  t.kind = TaskKind::compute;
  t.stream = Stream::compute;
  t.phase = phase;
  t.op = op;
  t.flops = flops;
  t.hbm_bytes = shape.bytes + shape.serial_bytes;
  t.duration = m_s.compute.op_time(shape);
  if (phase == Phase::recompute)
    m_prog.flops_recompute += flops;
  else if (phase != Phase::optimizer)
    m_prog.flops_model += flops;
  const uint32_t id = add(t, m_wait);
  m_wait.clear();
  m_last_compute = id;
  return id;
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

OpShape StageBuilder::gemm(double m, double n, double k, Precision p) const {
  OpShape s;
  s.cls = OpClass::gemm;
  s.precision = p;
  s.m = m;
  s.n = n;
  s.k = k;
  const bool fp8 = p == Precision::fp8 || p == Precision::fp4;
  const double in = fp8 ? 1.0 : m_s.elem;
  s.bytes = (m * k + k * n) * in + m * n * m_s.elem;
  // Transformer Engine casts the activation operand to fp8 (amax + scale + cast) per GEMM.
  if (fp8) s.serial_bytes = m * k * (m_s.elem + 1.0);
  return s;
}

OpShape StageBuilder::memory_op(double bytes) const {
  OpShape s;
  s.cls = OpClass::memory;
  s.bytes = m_s.opt.kernels == KernelStack::eager ? bytes * m_s.opt.eager_memory_factor : bytes;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Tensor-parallel collectives around the column/row-parallel GEMMs

uint32_t StageBuilder::tp_before_column_parallel(OpName ag_name, Phase phase) {
  if (!m_s.sp) return kNoTask;
  const uint32_t ag = collective(Stream::tp, ag_name, CollectiveOp::all_gather, GroupKind::tp,
                                 m_s.T * m_s.h * m_s.elem, phase, {m_last_compute});
  if (m_s.opt.tp_overlap == TpCommOverlap::full) return ag;  // pipelined with the GEMM: waited for after it
  m_wait.push_back(ag);
  return kNoTask;
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

OpShape StageBuilder::attention_shape(OpClass cls) const {
  const Shared& s = m_s;
  OpShape a;
  a.cls = cls;
  a.tokens = s.T;
  a.seq_kv = s.seq;
  a.head_dim = s.head_dim;
  a.heads = s.heads_loc;
  a.flash = s.flash;
  a.flash2 = s.opt.kernels == KernelStack::eager;
  a.causal = s.causal;
  return a;
}

void StageBuilder::attention_core_forward(Phase phase) {
  const Shared& s = m_s;
  OpShape a = attention_shape(OpClass::attention_fwd);
  if (s.flash) {
    a.bytes = s.T * (2 * s.q_loc + 2 * s.kv_loc) * s.elem;  // read Q, K, V; write O
  } else {
    // Scores b·(a/t)·(s/c)·s written, softmax read+write, dropout mask and output, PV read.
    const double scores = s.T * s.seq * s.heads_loc;
    a.bytes = s.T * (2 * s.q_loc + 2 * s.kv_loc) * s.elem + scores * (4 * s.elem + 1);
  }
  const double flops = 2.0 * s.T * s.seq * s.q_loc;
  uint32_t kv = kNoTask;
  if (s.cp > 1) {
    // Ring attention (Megatron CP, p2p): K and V of the other cp−1 ranks stream in while the
    // local blocks compute; modelled as an all-gather of K,V on the CP group.
    kv = collective(Stream::cp, OpName::cp_kv, CollectiveOp::all_gather, GroupKind::cp,
                    s.T * d(s.cp) * 2 * s.kv_loc * s.elem, phase, {m_last_compute});
  }
  compute(OpName::attn_core, phase, a, flops);
  if (kv != kNoTask) m_wait.push_back(kv);
}

void StageBuilder::layer_forward(int32_t layer, Phase phase, bool /*last_mb_of_step_use*/) {
  const Shared& s = m_s;
  m_layer = layer;
  const Precision gp = s.gemm_precision;
  const double q = s.q_loc, kv = s.kv_loc;
  const double norm_bytes = s.Ts * s.h * s.elem * 2;
  const double residual_bytes = s.Ts * s.h * (3 * s.elem + 1);

  if (s.sc.layout.zero_stage == 3 && phase == Phase::forward) fsdp_gather(layer, false);
  if (phase == Phase::forward && !m_layer_forwarded[layer]) {
    m_layer_forwarded[layer] = true;
    const auto it = m_param_gather_of_layer.find(layer);
    if (it != m_param_gather_of_layer.end()) m_wait.push_back(it->second);
  }

  // Attention block.
  const uint32_t ln1 = compute(OpName::ln_attn, phase, memory_op(norm_bytes), 0);
  m_first_op_of_layer[layer] = ln1;
  const uint32_t ag1 = tp_before_column_parallel(OpName::tp_ag_attn, phase);
  compute(OpName::qkv, phase, gemm(s.T, q + 2 * kv, s.h, gp), 2.0 * s.T * s.h * (q + 2 * kv));
  if (ag1 != kNoTask) m_wait.push_back(ag1);
  if (s.rope) compute(OpName::rope, phase, memory_op(s.T * (q + kv) * s.elem * 2), 0);
  attention_core_forward(phase);
  const uint32_t before_proj = m_last_compute;
  const uint32_t proj = compute(OpName::proj, phase, gemm(s.T, s.h, q, gp), 2.0 * s.T * q * s.h);
  tp_after_row_parallel(OpName::tp_rs_attn, OpName::tp_ar_attn, proj, before_proj, phase);
  compute(OpName::residual_attn, phase, memory_op(residual_bytes), 0);

  // MLP block.
  compute(OpName::ln_mlp, phase, memory_op(norm_bytes), 0);
  const uint32_t ag2 = tp_before_column_parallel(OpName::tp_ag_mlp, phase);
  const double up = s.swiglu ? 2 * s.f_loc : s.f_loc;
  compute(OpName::fc1, phase, gemm(s.T, up, s.h, gp), 2.0 * s.T * s.h * up);
  if (ag2 != kNoTask) m_wait.push_back(ag2);
  compute(OpName::act, phase, memory_op(s.T * (up + s.f_loc) * s.elem), 0);
  const uint32_t before_fc2 = m_last_compute;
  const uint32_t fc2 = compute(OpName::fc2, phase, gemm(s.T, s.h, s.f_loc, gp), 2.0 * s.T * s.f_loc * s.h);
  tp_after_row_parallel(OpName::tp_rs_mlp, OpName::tp_ar_mlp, fc2, before_fc2, phase);
  compute(OpName::residual_mlp, phase, memory_op(residual_bytes), 0);
  m_layer = -1;
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
  compute(op, Phase::backward, gemm(s.T, k_loc, s.h, s.gemm_precision), flops_each);  // dgrad
  if (ag != kNoTask) m_wait.push_back(ag);
  compute(op, Phase::backward, gemm(k_loc, s.h, s.T, s.gemm_precision), flops_each);  // wgrad
}

void StageBuilder::column_parallel_backward(OpName op, OpName ag_name, OpName rs_name, double n_loc,
                                            double flops_each) {
  const Shared& s = m_s;
  const double bytes = s.T * s.h * s.elem;
  uint32_t ag = kNoTask;
  if (s.sp)  // re-gather the sequence-sharded input for the wgrad, overlapping the dgrad
    ag = collective(Stream::tp, ag_name, CollectiveOp::all_gather, GroupKind::tp, bytes, Phase::backward,
                    {m_last_compute});
  const uint32_t dgrad = compute(op, Phase::backward, gemm(s.T, s.h, n_loc, s.gemm_precision), flops_each);
  uint32_t red = kNoTask;
  if (s.tp > 1)  // reduce the input gradient over TP, overlapping the wgrad
    red = s.sp ? collective(Stream::tp, rs_name, CollectiveOp::reduce_scatter, GroupKind::tp, bytes,
                            Phase::backward, {dgrad})
               : collective(Stream::tp, rs_name, CollectiveOp::all_reduce, GroupKind::tp, bytes,
                            Phase::backward, {dgrad});
  if (ag != kNoTask) m_wait.push_back(ag);
  compute(op, Phase::backward, gemm(s.h, n_loc, s.T, s.gemm_precision), flops_each);  // wgrad
  if (red != kNoTask) m_wait.push_back(red);
}

void StageBuilder::layer_backward(int32_t layer) {
  const Shared& s = m_s;
  const Layout& l = s.sc.layout;
  if (l.zero_stage == 3 && m_last_compute != kNoTask) m_backward_start_of_layer[layer] = m_last_compute;
  if (l.zero_stage == 3 && (l.pp == 1 || m_mb == 0)) {
    const auto it = m_prefetched_gather.find(layer);
    if (it != m_prefetched_gather.end()) {
      m_wait.push_back(it->second);
      m_prefetched_gather.erase(it);
    } else {
      fsdp_gather(layer, true);
    }
  }
  const bool every_other =
      l.recompute == Recompute::selective && s.opt.selective == SelectiveRecompute::every_other_layer;
  if (l.recompute == Recompute::full || (every_other && layer % 2 == 1))
    layer_forward(layer, Phase::recompute, false);
  m_layer = layer;
  const double q = s.q_loc, kv = s.kv_loc;
  const double norm_bwd_bytes = s.Ts * s.h * s.elem * 4;
  const double residual_bwd_bytes = s.Ts * s.h * (2 * s.elem + 1);
  const double up = s.swiglu ? 2 * s.f_loc : s.f_loc;

  // MLP block, reversed.
  compute(OpName::residual_mlp, Phase::backward, memory_op(residual_bwd_bytes), 0);
  row_parallel_backward(OpName::fc2, OpName::tp_ag_mlp, s.f_loc, 2.0 * s.T * s.f_loc * s.h);
  compute(OpName::act, Phase::backward, memory_op(s.T * (2 * up + s.f_loc) * s.elem), 0);
  column_parallel_backward(OpName::fc1, OpName::tp_ag_in_mlp, OpName::tp_rs_mlp, up, 2.0 * s.T * s.h * up);
  compute(OpName::ln_mlp, Phase::backward, memory_op(norm_bwd_bytes), 0);

  // Attention block, reversed.
  compute(OpName::residual_attn, Phase::backward, memory_op(residual_bwd_bytes), 0);
  row_parallel_backward(OpName::proj, OpName::tp_ag_attn, q, 2.0 * s.T * q * s.h);
  if (l.recompute == Recompute::selective && s.opt.selective == SelectiveRecompute::attention_core)
    attention_core_forward(Phase::recompute);
  {
    OpShape a = attention_shape(OpClass::attention_bwd);
    a.bytes = s.T * (4 * q + 4 * kv) * s.elem;
    if (!s.flash) a.bytes += s.T * s.seq * s.heads_loc * (4 * s.elem + 1);
    uint32_t kv_task = kNoTask;
    if (s.cp > 1)  // ring attention backward: K,V and their gradients travel the ring
      kv_task = collective(Stream::cp, OpName::cp_kv, CollectiveOp::all_gather, GroupKind::cp,
                           2 * s.T * d(s.cp) * 2 * kv * s.elem, Phase::backward, {m_last_compute});
    compute(OpName::attn_core, Phase::backward, a, 2.0 * 2.0 * s.T * s.seq * q);
    if (kv_task != kNoTask) m_wait.push_back(kv_task);
  }
  if (s.rope) compute(OpName::rope, Phase::backward, memory_op(s.T * (q + kv) * s.elem * 2), 0);
  column_parallel_backward(OpName::qkv, OpName::tp_ag_in_attn, OpName::tp_rs_attn, q + 2 * kv,
                           2.0 * s.T * s.h * (q + 2 * kv));
  if (l.zero_stage == 3) m_gradients_done_of_layer[layer] = m_last_compute;
  // FSDP1 with BACKWARD_POST: the post-backward hook issues the next unit's all-gather before
  // this unit's reduce-scatter on the same communicator, so the gather goes first.
  if (l.zero_stage == 3 && l.pp == 1 && s.dp_size > 1 && layer > 0 && s.opt.fsdp_one_communicator &&
      s.opt.fsdp_backward_prefetch == FsdpBackwardPrefetch::after_backward)
    m_prefetched_gather[layer - 1] = issue_fsdp_gather(layer - 1, true);
  compute(OpName::ln_attn, Phase::backward, memory_op(norm_bwd_bytes), 0);
  m_layer = -1;

  if (l.zero_stage == 3) {
    if (l.pp == 1 || m_mb == s.m - 1) fsdp_reduce(layer);
  } else if (m_mb == s.m - 1) {
    grads_ready(s.layer_params_local, layer);
  }
}

// ---------------------------------------------------------------------------------------------
// Embedding and head

void StageBuilder::embedding_forward() {
  const Shared& s = m_s;
  if (s.sc.layout.zero_stage == 3) fsdp_gather(-1, false);
  const auto it = m_param_gather_of_layer.find(-1);
  if (it != m_param_gather_of_layer.end() && m_mb == 0) m_wait.push_back(it->second);
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
    if (s.sc.layout.pp == 1 || m_mb == s.m - 1) fsdp_reduce(-1);
  } else if (m_mb == s.m - 1) {
    grads_ready(s.embedding_params_local, -1);
  }
}

void StageBuilder::head_forward() {
  const Shared& s = m_s;
  if (s.sc.layout.zero_stage == 3) fsdp_gather(-2, false);
  const auto it = m_param_gather_of_layer.find(-2);
  if (it != m_param_gather_of_layer.end() && m_mb == 0) m_wait.push_back(it->second);
  compute(OpName::final_ln, Phase::forward, memory_op(s.Ts * s.h * s.elem * 2), 0);
  const uint32_t ag = tp_before_column_parallel(OpName::tp_logits, Phase::forward);
  // The output layer stays in 16-bit under fp8 (Transformer Engine converts transformer layers).
  const Precision p = s.gemm_precision == Precision::fp8 || s.gemm_precision == Precision::fp4
                          ? Precision::bf16
                          : s.gemm_precision;
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
  const Precision p = s.gemm_precision == Precision::fp8 || s.gemm_precision == Precision::fp4
                          ? Precision::bf16
                          : s.gemm_precision;
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
    if (s.sc.layout.pp == 1 || m_mb == s.m - 1) fsdp_reduce(-2);
  } else if (m_mb == s.m - 1) {
    grads_ready(s.output_params_local, -2);
  }
}

// ---------------------------------------------------------------------------------------------
// Data parallelism: gradient buckets (ZeRO 0–2), FSDP units (ZeRO-3)

void StageBuilder::grads_ready(double params, int32_t layer) {
  if (m_s.dp_size <= 1) return;
  m_bucket_fill += params;
  m_bucket_layers.push_back(layer);
  if (m_bucket_fill >= m_bucket_limit) flush_bucket();
}

void StageBuilder::flush_bucket() {
  if (m_bucket_fill <= 0) return;
  const Shared& s = m_s;
  const bool zero = s.sc.layout.zero_stage >= 1;
  const double bytes = m_bucket_fill * s.opt.grad_reduce_bytes;
  if (s.opt.grad_reduce == GradReduceOverlap::bucketed) {
    const int32_t saved = m_layer;
    m_layer = m_bucket_layers.empty() ? -1 : m_bucket_layers.back();
    m_grad_reduces.push_back(collective(Stream::dp_grad, OpName::dp_grad_reduce,
                                        zero ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce,
                                        s.dp_group, bytes, Phase::comm, {m_last_compute}));
    m_layer = saved;
  } else {
    m_deferred_buckets.push_back(bytes);
  }
  if (zero) m_param_buckets.emplace_back(m_bucket_fill, m_bucket_layers);
  m_bucket_fill = 0;
  m_bucket_layers.clear();
}

void StageBuilder::fsdp_gather(int32_t unit, bool backward) {
  const Shared& s = m_s;
  if (s.dp_size <= 1) return;
  const Layout& l = s.sc.layout;
  // With pp > 1 (torchtitan FSDP+PP) parameters stay gathered across micro-batches.
  if (l.pp > 1 && (backward || m_mb != 0)) return;
  m_wait.push_back(issue_fsdp_gather(unit, backward));
}

uint32_t StageBuilder::issue_fsdp_gather(int32_t unit, bool backward) {
  const Shared& s = m_s;
  const double params = unit >= 0    ? s.layer_params_local
                        : unit == -1 ? s.embedding_params_local
                                     : s.output_params_local;
  // Prefetch window. Forward: this gather may start once the unit `fsdp_prefetch_layers` before
  // it has started computing (the rate limiter of limit_all_gathers). Backward: once the unit
  // `fsdp_prefetch_layers` after it has started its backward (BACKWARD_PRE) or computed its
  // gradients (BACKWARD_POST).
  std::vector<uint32_t> deps;
  if (unit >= 0) {
    const int32_t prev = backward ? unit + s.opt.fsdp_prefetch_layers : unit - s.opt.fsdp_prefetch_layers;
    const std::map<int32_t, uint32_t>& trigger =
        !backward ? m_first_op_of_layer
        : s.opt.fsdp_backward_prefetch == FsdpBackwardPrefetch::before_backward ? m_backward_start_of_layer
                                                                                 : m_gradients_done_of_layer;
    const auto it = trigger.find(prev);
    if (it != trigger.end()) deps.push_back(it->second);
  }
  const int32_t saved = m_layer;
  m_layer = unit;
  const uint32_t g = collective(Stream::dp_param, OpName::fsdp_gather, CollectiveOp::all_gather, s.dp_group,
                                params * s.elem, Phase::comm, deps);
  m_layer = saved;
  return g;
}

void StageBuilder::fsdp_reduce(int32_t unit) {
  const Shared& s = m_s;
  if (s.dp_size <= 1) return;
  const double params = unit >= 0    ? s.layer_params_local
                        : unit == -1 ? s.embedding_params_local
                                     : s.output_params_local;
  const int32_t saved = m_layer;
  m_layer = unit;
  const Stream stream = s.opt.fsdp_one_communicator ? Stream::dp_param : Stream::dp_grad;
  m_grad_reduces.push_back(collective(stream, OpName::fsdp_reduce, CollectiveOp::reduce_scatter,
                                      s.dp_group, params * s.opt.grad_reduce_bytes, Phase::comm,
                                      {m_last_compute}));
  m_layer = saved;
}

void StageBuilder::optimizer() {
  const Shared& s = m_s;
  const Layout& l = s.sc.layout;
  m_mb = -1;
  m_chunk = 0;
  m_layer = -1;
  flush_bucket();
  for (double bytes : m_deferred_buckets)
    m_grad_reduces.push_back(
        collective(Stream::dp_grad, OpName::dp_grad_reduce,
                   l.zero_stage >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce, s.dp_group,
                   bytes, Phase::comm, {m_last_compute}));
  for (uint32_t r : m_grad_reduces) m_wait.push_back(r);
  const double shard = l.zero_stage >= 1 ? m_prog.params / d(s.dp_size) : m_prog.params;
  // Bytes per parameter from the framework's optimizer (WorkloadOptions): already counted per
  // kernel, so no eager factor.
  OpShape norm;
  norm.cls = OpClass::memory;
  norm.bytes = shard * s.opt.grad_clip_bytes_per_param;
  compute(OpName::grad_norm, Phase::optimizer, norm, 0);
  OpShape adam = norm;
  adam.bytes = shard * s.opt.adam_bytes_per_param;
  compute(OpName::optimizer, Phase::optimizer, adam, 0);
  if (s.opt.step_overhead_s > 0) {
    Task t;
    t.kind = TaskKind::compute;
    t.stream = Stream::compute;
    t.phase = Phase::optimizer;
    t.op = OpName::step_overhead;
    t.duration = TimeNs::from_seconds(s.opt.step_overhead_s);
    m_last_compute = add(t, m_wait);
    m_wait.clear();
  }
  if (l.zero_stage >= 1 && l.zero_stage <= 2 && s.opt.param_gather == ParamGatherOverlap::after_optimizer)
    for (const auto& b : m_param_buckets)
      collective(Stream::dp_param, OpName::dp_param_gather, CollectiveOp::all_gather, s.dp_group,
                 b.first * s.elem, Phase::comm, {m_last_compute});
}

// ---------------------------------------------------------------------------------------------
// Slots

void StageBuilder::pp_recv(OpName op, int64_t peer_vs, double bytes, bool forward, int64_t mb, int64_t chunk) {
  Task t;
  t.kind = TaskKind::recv;
  t.stream = Stream::pp_recv;
  t.phase = Phase::comm;
  t.op = op;
  t.coll = CollectiveOp::send_recv;
  t.group = GroupKind::pp;
  t.comm_bytes = bytes;
  t.peer_stage = static_cast<int32_t>(peer_vs % m_s.pp);
  const uint32_t r = add(t, {});
  recv_index[{forward, mb, chunk}] = r;
  m_wait.push_back(r);
}

void StageBuilder::pp_send(OpName op, int64_t peer_vs, double bytes, bool forward, int64_t mb) {
  Task t;
  t.kind = TaskKind::send;
  t.stream = Stream::pp_send;
  t.phase = Phase::comm;
  t.op = op;
  t.coll = CollectiveOp::send_recv;
  t.group = GroupKind::pp;
  t.comm_bytes = bytes;
  t.peer_stage = static_cast<int32_t>(peer_vs % m_s.pp);
  const uint32_t snd = add(t, {m_last_compute});
  sends.push_back({snd, peer_vs % m_s.pp, forward, mb, peer_vs / m_s.pp});
  if (m_blocking_send) m_wait.push_back(snd);
}

void StageBuilder::forward_slot(int64_t mb, int64_t chunk) {
  const Shared& s = m_s;
  m_mb = static_cast<int32_t>(mb);
  m_chunk = static_cast<int16_t>(chunk);
  const int64_t vs = chunk * s.pp + m_stage;
  const int64_t last_vs = s.pp * s.v - 1;
  const double msg = s.T * s.h * s.elem / d(s.tp);  // Megatron scatter-gather: 1/t of the activation each
  if (vs > 0) {
    pp_recv(OpName::pp_act, vs - 1, msg, true, mb, chunk);
  } else {
    embedding_forward();
  }
  const size_t idx = static_cast<size_t>(m_stage * s.v + chunk);
  for (int64_t i = 0; i < s.layers_per_chunk[idx]; ++i)
    layer_forward(static_cast<int32_t>(s.first_layer[idx] + i), Phase::forward, mb == s.m - 1);
  if (vs == last_vs) {
    head_forward();
  } else {
    pp_send(OpName::pp_act, vs + 1, msg, true, mb);
  }
  m_in_flight_chunks += 1;
  m_in_flight_layers += s.layers_per_chunk[idx];
  m_prog.max_in_flight_chunks = std::max(m_prog.max_in_flight_chunks, m_in_flight_chunks);
  m_prog.max_in_flight_micro_batches = std::max(m_prog.max_in_flight_micro_batches, m_in_flight_layers);
}

void StageBuilder::backward_slot(int64_t mb, int64_t chunk) {
  const Shared& s = m_s;
  m_mb = static_cast<int32_t>(mb);
  m_chunk = static_cast<int16_t>(chunk);
  const int64_t vs = chunk * s.pp + m_stage;
  const int64_t last_vs = s.pp * s.v - 1;
  const double msg = s.T * s.h * s.elem / d(s.tp);
  if (vs < last_vs) {
    pp_recv(OpName::pp_grad, vs + 1, msg, false, mb, chunk);
  } else {
    head_backward();
  }
  const size_t idx = static_cast<size_t>(m_stage * s.v + chunk);
  for (int64_t i = s.layers_per_chunk[idx] - 1; i >= 0; --i)
    layer_backward(static_cast<int32_t>(s.first_layer[idx] + i));
  if (vs > 0) {
    pp_send(OpName::pp_grad, vs - 1, msg, false, mb);
  } else {
    embedding_backward();
  }
  m_in_flight_chunks -= 1;
  m_in_flight_layers -= s.layers_per_chunk[idx];
}

void StageBuilder::build(const std::vector<Slot>& slots, PipelineSchedule schedule) {
  const Shared& s = m_s;
  const Layout& l = s.sc.layout;
  m_schedule = schedule;
  // Megatron's 1F1B waits for each p2p op (batch_isend_irecv + wait); the interleaved schedule
  // overlaps them with compute (--overlap-p2p-communication).
  m_blocking_send = schedule != PipelineSchedule::interleaved;

  // ZeRO-1/2 with --overlap-param-gather: the previous step's parameter all-gather runs in
  // this step's first forward, bucket by bucket; buckets are the gradient buckets (backward
  // order), so precompute them and issue their gathers in forward order.
  if (l.zero_stage >= 1 && l.zero_stage <= 2 && s.dp_size > 1 &&
      s.opt.param_gather == ParamGatherOverlap::next_forward) {
    std::vector<std::pair<double, std::vector<int32_t>>> buckets;
    double fill = 0;
    std::vector<int32_t> members;
    auto push = [&](double p, int32_t layer) {
      fill += p;
      members.push_back(layer);
      if (fill >= m_bucket_limit) {
        buckets.emplace_back(fill, members);
        fill = 0;
        members.clear();
      }
    };
    for (int64_t c = s.v - 1; c >= 0; --c) {
      const int64_t vs = c * s.pp + m_stage;
      if (vs == s.pp * s.v - 1) push(s.output_params_local, -2);
      const size_t idx = static_cast<size_t>(m_stage * s.v + c);
      for (int64_t i = s.layers_per_chunk[idx] - 1; i >= 0; --i)
        push(s.layer_params_local, static_cast<int32_t>(s.first_layer[idx] + i));
      if (vs == 0) push(s.embedding_params_local, -1);
    }
    if (fill > 0) buckets.emplace_back(fill, members);
    m_mb = -1;
    for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) {
      m_layer = it->second.back();
      const uint32_t g = collective(Stream::dp_param, OpName::dp_param_gather, CollectiveOp::all_gather,
                                    s.dp_group, it->first * s.elem, Phase::comm, {});
      for (int32_t layer : it->second) m_param_gather_of_layer[layer] = g;
    }
    m_layer = -1;
  }

  for (const Slot& slot : slots) {
    if (slot.forward)
      forward_slot(slot.micro_batch, slot.chunk);
    else
      backward_slot(slot.micro_batch, slot.chunk);
  }
  optimizer();
  // max_in_flight_micro_batches was tracked in layers; convert to micro-batches of this stage.
  const double stage_layers = d(static_cast<int64_t>(m_prog.layers.size()));
  const int64_t in_flight_layers = m_prog.max_in_flight_micro_batches;
  m_prog.max_in_flight_micro_batches =
      stage_layers > 0 ? static_cast<int64_t>(std::ceil(d(in_flight_layers) / stage_layers)) : 0;
  m_prog.max_in_flight_layers = in_flight_layers;
}

void link_pipeline_messages(std::vector<StageBuilder>& builders) {
  for (auto& b : builders) {
    for (const auto& snd : b.sends) {
      auto& dst = builders[static_cast<size_t>(snd.dst_stage)];
      const auto it = dst.recv_index.find({snd.forward, snd.micro_batch, snd.dst_chunk});
      SIMRUN_ASSERT(it != dst.recv_index.end(), "pipeline send without a matching recv");
      b.program().tasks[snd.task].peer_task = it->second;
    }
  }
}

}  // namespace simrun::detail
