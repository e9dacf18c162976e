// One stage's program, part 1a: the attention block (workload_builder.cpp holds the rest of the
// layer, workload_builder_moe.cpp the MoE layer) — the QKV or MLA projections and their
// backward, and the attention core with its context-parallel communication (the CP ring,
// K/V all-gather, Ulysses all-to-all). Shapes and FLOP conventions as in workload_builder.cpp.
#include <vector>

#include "workload_builder.hpp"

namespace simrun::detail {

// One block of the attention core: the local queries against the keys and values of seq/cp
// tokens of each sequence (all of them without CP; with the CP ring, one step of it). With K,V
// all-gathered, the local queries against every key at once; under Ulysses (a2a) the whole
// core at once, every token of the micro-batch for heads/cp heads (a2a+p2p: one ring step of
// the first level's tokens, heads/cp_a2a heads). A flash kernel reads Q, K, V and writes O
// (backward: also reads dO and O, writes dQ, dK, dV); an unfused one also writes and reads the
// scores: softmax read+write, dropout mask and output, PV read.
OpShape StageBuilder::attention_block(OpClass cls) const {
  const Shared& s = m_s;
  OpShape a;
  a.cls = cls;
  // The core runs in the activations' precision: 16-bit under fp8 training (Transformer
  // Engine keeps attention outside fp8), fp32 / tf32 when training in them.
  a.precision = outside_fp8(s.gemm_precision);
  a.tokens = s.T * d(s.cp_a2a);
  a.seq_kv = s.cp_all_gather ? s.seq : s.seq / d(s.cp_ring);
  a.head_dim = s.head_dim;
  a.heads = s.heads_loc / d(s.cp_a2a);
  a.attention_kernel = !s.flash                              ? AttentionKernel::unfused
                       : s.opt.kernels == KernelStack::eager ? AttentionKernel::flash2
                                                             : AttentionKernel::fused;
  a.causal = s.causal;
  const double passes = cls == OpClass::attention_bwd ? 2.0 : 1.0;
  const double kv_tokens = s.cp_all_gather ? s.T * d(s.cp) : s.T;  // every rank's, gathered
  a.bytes = passes * (s.T * 2 * s.q_loc + kv_tokens * 2 * s.kv_loc) * s.elem;
  if (!s.flash) a.bytes += a.tokens * a.seq_kv * a.heads * (4 * s.elem + 1);
  return a;
}

// Ulysses' all-to-all over its CP ranks (TE's flash_attn_a2a_communicate), in series with the
// core: each rank's `width` columns of its tokens, sequence-split before and head-split after
// (or back).
void StageBuilder::cp_all_to_all(double width, Phase phase) {
  const Shared& s = m_s;
  m_wait.push_back(collective(Stream::cp, OpName::cp_a2a, CollectiveOp::all_to_all, s.cp_a2a_group,
                              s.T * width * s.elem, phase, {m_last_compute}));
}

// K and V (or dK and dV) of every rank of the CP group, gathered to each (or reduce-scattered
// to their owners), in series with the core.
void StageBuilder::cp_kv_collective(CollectiveOp op, Phase phase) {
  const Shared& s = m_s;
  m_wait.push_back(collective(Stream::cp, OpName::cp_kv, op, GroupKind::cp,
                              s.T * d(s.cp) * s.kv_pair_loc * s.elem, phase, {m_last_compute}));
}

// The attention core's forward. With the CP ring (cp_comm_type p2p, Megatron-Core's default;
// Transformer Engine's AttnFuncWithCPAndKVP2P) in cp steps: at step i the local queries attend
// to the K,V block that started i ranks back, while the block for step i + 1 moves one rank on
// over the CP group (each rank sends to the next and receives from the previous at once), on
// its own stream. Causal load balancing (each rank holds chunks j and 2cp−1−j of every
// sequence) gives every step 1/cp of the core's work. With all_gather
// (AttnFuncWithCPAndKVAllGather) every rank's K,V are gathered first, in series with the core
// (Transformer Engine: "KV all-gather between CP ranks is exposed"). With Ulysses (a2a) Q, K, V
// go through an all-to-all before the core and its output through one after. a2a+p2p does
// both: the all-to-alls over the first level's ranks, between them the ring over the second
// level's, each step on the first level's tokens and heads/cp_a2a heads (each block still one
// rank's worth of K,V bytes).
void StageBuilder::attention_core_forward(Phase phase) {
  const Shared& s = m_s;
  const double core_flops = s.T * s.seq * s.core_width_loc;  // causal: half of 2·T·s·width
  if (s.cp_all_gather) {
    cp_kv_collective(CollectiveOp::all_gather, phase);
    compute(OpName::attn_core, phase, attention_block(OpClass::attention_fwd), core_flops);
    return;
  }
  if (s.cp_a2a > 1) cp_all_to_all(s.q_loc + s.kv_pair_loc, phase);
  const double block_bytes = s.T * s.kv_pair_loc * s.elem;  // K and V of the local tokens
  uint32_t arriving = kNoTask;
  for (int64_t step = 0; step < s.cp_ring; ++step) {
    const uint32_t arrived = arriving;
    if (step + 1 < s.cp_ring)
      arriving =
          collective(Stream::cp, OpName::cp_kv, CollectiveOp::send_recv, s.cp_ring_group, block_bytes, phase,
                     step == 0 ? std::vector<uint32_t>{m_last_compute} : std::vector<uint32_t>{});
    if (arrived != kNoTask) m_wait.push_back(arrived);
    compute(OpName::attn_core, phase, attention_block(OpClass::attention_fwd), core_flops / d(s.cp_ring));
  }
  if (s.cp_a2a > 1) cp_all_to_all(s.out_width_loc, phase);
}

// Its backward. With the CP ring again (AttnFuncWithCPAndKVP2P.backward): step 0 passes K,V
// on, steps 1 … cp−2 pass K,V with the dK,dV accumulated so far (after the previous step's
// block), the last step passes only dK,dV, which reach their owner as its block computes. With
// all_gather, K,V gathered again (the forward kept only the local ones), and every rank's dK,dV
// reduce-scattered back to their owners before the QKV backward. With Ulysses the output
// gradient through an all-to-all before, dQ, dK, dV through one after (under a2a+p2p, after
// the ring has brought dK,dV home: the same stream, in order).
void StageBuilder::attention_core_backward() {
  const Shared& s = m_s;
  const double core_flops = 2.0 * s.T * s.seq * s.core_width_loc;
  if (s.cp_all_gather) {
    cp_kv_collective(CollectiveOp::all_gather, Phase::backward);
    compute(OpName::attn_core, Phase::backward, attention_block(OpClass::attention_bwd), core_flops);
    cp_kv_collective(CollectiveOp::reduce_scatter, Phase::backward);
    return;
  }
  if (s.cp_a2a > 1) cp_all_to_all(s.out_width_loc, Phase::backward);
  const double block_bytes = s.T * s.kv_pair_loc * s.elem;
  uint32_t passed = kNoTask;
  for (int64_t step = 0; step < s.cp_ring; ++step) {
    const uint32_t arrived = passed;
    if (s.cp_ring > 1) {
      const double bytes = step == 0 || step == s.cp_ring - 1 ? block_bytes : 2 * block_bytes;
      passed = collective(Stream::cp, OpName::cp_kv, CollectiveOp::send_recv, s.cp_ring_group, bytes,
                          Phase::backward, {m_last_compute});
    }
    if (arrived != kNoTask) m_wait.push_back(arrived);
    compute(OpName::attn_core, Phase::backward, attention_block(OpClass::attention_bwd),
            core_flops / d(s.cp_ring));
  }
  if (passed != kNoTask) m_wait.push_back(passed);  // dK,dV home before the QKV backward
  if (s.cp_a2a > 1) cp_all_to_all(s.q_loc + s.kv_pair_loc, Phase::backward);
}

void StageBuilder::qkv_forward(Phase phase, uint32_t sp_gather) {
  const Shared& s = m_s;
  const double q = s.q_loc, kv = s.kv_loc;
  const InputCast cast = s.norm_emits_fp8 ? InputCast::already_cast : InputCast::cast;
  compute(OpName::qkv, phase, gemm(s.T, q + 2 * kv, s.h, layer_gemm_precision(), cast),
          2.0 * s.T * s.h * (q + 2 * kv));
  if (sp_gather != kNoTask) m_wait.push_back(sp_gather);
  if (s.rope) compute(OpName::rope, phase, memory_op(s.T * (q + kv) * s.elem * 2), 0);
}

// Multi-head latent attention's projections (DeepSeek-V2/V3; Megatron-Core
// MLASelfAttention): the hidden state goes down to a Q latent of r_q and a KV latent of r_kv
// (plus one shared d_rope key), each normed, then up to the heads; the down-projections are
// duplicated on every TP rank (each counts 1/t of their model FLOPs), the up-projections split
// the heads. Rotary embedding on the d_rope parts of the queries and the shared key.
void StageBuilder::mla_forward(Phase phase, uint32_t sp_gather) {
  const Shared& s = m_s;
  const Precision gp = layer_gemm_precision();
  const double share = 1.0 / d(s.tp);
  auto gathered = [&] {
    if (sp_gather != kNoTask) m_wait.push_back(sp_gather);
    sp_gather = kNoTask;
  };
  if (s.q_rank > 0) {
    compute(OpName::mla_q_down, phase, gemm(s.T, s.q_rank, s.h, gp), 2.0 * s.T * s.h * s.q_rank * share);
    gathered();
    compute(OpName::mla_norm, phase, memory_op(s.T * s.q_rank * s.elem * 2), 0);
    compute(OpName::mla_q_up, phase, gemm(s.T, s.q_loc, s.q_rank, gp), 2.0 * s.T * s.q_rank * s.q_loc);
  } else {
    compute(OpName::mla_q_up, phase, gemm(s.T, s.q_loc, s.h, gp), 2.0 * s.T * s.h * s.q_loc);
    gathered();
  }
  const double kv_down = s.kv_rank + s.rope_dim;
  compute(OpName::mla_kv_down, phase, gemm(s.T, kv_down, s.h, gp), 2.0 * s.T * s.h * kv_down * share);
  compute(OpName::mla_norm, phase, memory_op(s.T * s.kv_rank * s.elem * 2), 0);
  compute(OpName::mla_kv_up, phase, gemm(s.T, s.kv_up_loc, s.kv_rank, gp),
          2.0 * s.T * s.kv_rank * s.kv_up_loc);
  compute(OpName::rope, phase, memory_op(s.T * (s.heads_loc + 1) * s.rope_dim * s.elem * 2), 0);
}

void StageBuilder::mla_backward() {
  const Shared& s = m_s;
  const Precision gp = layer_gemm_precision();
  const double share = 1.0 / d(s.tp);
  compute(OpName::rope, Phase::backward, memory_op(s.T * (s.heads_loc + 1) * s.rope_dim * s.elem * 2), 0);
  // An up-projection's backward: dgrad to its latent (a partial sum over the TP ranks' heads,
  // all-reduced while the wgrad runs), wgrad, then the latent's norm.
  auto up_backward = [&](OpName op, double rank, double width) {
    const double flops = 2.0 * s.T * rank * width;
    const uint32_t dgrad = compute(op, Phase::backward, gemm(s.T, rank, width, gp), flops);
    uint32_t ar = kNoTask;
    if (s.tp > 1)
      ar = collective(Stream::tp, OpName::tp_ar_latent, CollectiveOp::all_reduce, GroupKind::tp,
                      s.T * rank * s.elem, Phase::backward, {dgrad});
    compute(op, Phase::backward, gemm(rank, width, s.T, gp, InputCast::already_cast), flops);
    if (ar != kNoTask) m_wait.push_back(ar);
    compute(OpName::mla_norm, Phase::backward, memory_op(s.T * rank * s.elem * 4), 0);
  };
  up_backward(OpName::mla_kv_up, s.kv_rank, s.kv_up_loc);
  if (s.q_rank > 0) up_backward(OpName::mla_q_up, s.q_rank, s.q_loc);
  // The down-projections (and a plain Q projection) as one column-parallel GEMM on the
  // gathered input: SP re-gather beside the dgrad, the input gradient reduced beside the wgrad.
  const double kv_down = s.kv_rank + s.rope_dim;
  const double down = kv_down + (s.q_rank > 0 ? s.q_rank : s.q_loc);
  const double down_flops = 2.0 * s.T * s.h * (kv_down * share + (s.q_rank > 0 ? s.q_rank * share : s.q_loc));
  column_parallel_backward(OpName::mla_kv_down, OpName::tp_ag_in_attn, OpName::tp_rs_attn, down, down_flops);
}

void StageBuilder::qkv_backward() {
  const Shared& s = m_s;
  const double q = s.q_loc, kv = s.kv_loc;
  if (s.rope) compute(OpName::rope, Phase::backward, memory_op(s.T * (q + kv) * s.elem * 2), 0);
  column_parallel_backward(OpName::qkv, OpName::tp_ag_in_attn, OpName::tp_rs_attn, q + 2 * kv,
                           2.0 * s.T * s.h * (q + 2 * kv));
}

}  // namespace simrun::detail
