// One stage's program, part 1b: the MoE layer (workload_builder.cpp holds the other layer ops,
// workload_builder_step.cpp the step around them) — the router, the permutation, the EP
// all-to-alls as the dispatcher runs them (ep_exchange), the local experts' grouped GEMMs and
// the shared experts beside them. Shapes and FLOP conventions as in workload_builder.cpp.
#include <fmt/format.h>

#include <utility>

#include "simrun/models/counts.hpp"
#include "simrun/models/moe_routing.hpp"
#include "workload_builder.hpp"

namespace simrun::detail {

void StageBuilder::Shared::shape_moe(const ModelSpec& md, const ParamCounts& pc) {
  const Layout& l = sc.layout;
  const MoeSpec& e = *md.moe;
  const double moe_layers = d(md.moe_layers());
  ep = l.ep;
  etp = l.expert_tp;
  expert_dp_size = l.expert_dp();
  experts = d(e.experts);
  top_k = d(e.top_k);
  experts_loc = experts / d(ep);
  // Balanced routing: each rank sends Ts·k token copies and, its E/ep experts being 1/ep of
  // all, receives as many; expert-TP gathers them from its etp ranks. Under a capacity factor
  // the permute pads each expert's copies to its capacity before the all-to-all
  // (Megatron-Core's drop-and-pad permutation), so every count but the FLOP count is that
  // multiple.
  moe_load = l.moe_load();
  dispatched_tokens = Ts * top_k * moe_load;
  exchange = ep_exchange(sc, opt);
  routed_tokens = dispatched_tokens * d(etp);
  counted_tokens = Ts * top_k * d(etp);
  expert_f_loc = d(e.expert_ffn_hidden) / d(etp);
  shared_f_loc = d(e.shared_experts * e.expert_ffn_hidden) / d(tp);
  moe_dense_params_local = moe_layers > 0 ? (pc.experts_shared + pc.router) / moe_layers / d(tp) : 0.0;
  expert_params_local = moe_layers > 0 ? pc.experts_routed / moe_layers / d(ep * etp) : 0.0;
}

// ---------------------------------------------------------------------------------------------
// MoE layer (Megatron-Core MoELayer with the alltoall token dispatcher, megatron/core/
// transformer/moe): this rank's Ts tokens (sequence-parallel shard) are routed, permuted by
// expert, sent to the experts' EP ranks, run through the local experts' grouped GEMMs
// (TEGroupedLinear), sent back and un-permuted. With expert_tp > 1 the dispatched tokens are
// all-gathered over the expert-TP group and the outputs reduce-scattered back, each in series
// with its all-to-all, whose output it gathers or whose input it scatters
// (MoEAlltoAllTokenDispatcher: token_permutation's all_to_all then
// gather_from_sequence_parallel_region; token_unpermutation's
// reduce_scatter_to_sequence_parallel_region then all_to_all; their autograd backwards in the
// reverse order).

// The all-to-alls of `op` (ep_exchange): one over the EP group, or its two levels side by side,
// the NVLink one on its own stream (DeepEP's kernels forward over NVLink while InfiniBand chunks
// arrive, so the two overlap: the slower sets the time). Tokens travel to their experts in the
// forward dispatch and in the combine's backward, back from them in the other two.
uint32_t StageBuilder::ep_all_to_all(OpName op, Phase phase, uint32_t after) {
  const Shared& s = m_s;
  if (s.ep <= 1) return kNoTask;
  const EpExchange& x = s.exchange;
  const bool to_experts = (op == OpName::ep_dispatch) == (phase != Phase::backward);
  const double element = to_experts && x.dispatch_element_bytes > 0 ? x.dispatch_element_bytes : s.elem;
  const double per_copy = s.dispatched_tokens / s.top_k * s.h * element;
  if (!x.two_level) {
    // A copy per expert: the dispatched token copies as Megatron-Core's permutation counts them.
    const double bytes = x.copies == s.top_k ? s.dispatched_tokens * s.h * element : per_copy * x.copies;
    const uint32_t c = collective(Stream::ep, op, CollectiveOp::all_to_all, GroupKind::ep, bytes, phase,
                                  {m_last_compute, after});
    if (x.dispatcher_kernels)
      m_prog.tasks[c].comm_kernel = to_experts ? CommKernel::flex_dispatch : CommKernel::flex_combine;
    m_wait.push_back(c);
    return c;
  }
  const uint32_t nvlink = collective(Stream::ep_intra, op, CollectiveOp::all_to_all, GroupKind::ep_intra,
                                     per_copy * x.rank_copies, phase, {m_last_compute, after});
  const uint32_t infiniband = collective(Stream::ep, op, CollectiveOp::all_to_all, GroupKind::ep_inter,
                                         per_copy * x.node_copies, phase, {m_last_compute, after});
  m_wait.push_back(nvlink);
  m_wait.push_back(infiniband);
  return infiniband;
}

// The tokens an all-to-all brings in arrive grouped by source rank; with several local experts
// Megatron-Core's alltoall dispatcher regroups them by expert before the grouped GEMM and back
// after it (token_dispatcher.py, sort_chunks_by_idxs), a copy of the routed tokens each way.
void StageBuilder::sort_chunks(Phase phase) {
  const Shared& s = m_s;
  if (s.ep > 1 && s.experts_loc > 1)
    compute(OpName::moe_sort_chunks, phase, memory_op(s.routed_tokens * s.h * s.elem * 2), 0);
}

// With --moe-shared-expert-overlap (Megatron-Core SharedExpertMLP on its own CUDA stream, driven
// by MoEAlltoAllTokenDispatcher) the shared experts run beside the all-to-alls instead of after
// the routed path: their input's sequence-parallel all-gather is issued before the permutation
// (pre_forward_comm), FC1 and the activation while the dispatch is in flight, FC2 and its
// reduce-scatter while the combine is (post_forward_comm), and their output is added after the
// unpermutation. Autograd runs each backward op on its forward op's stream, so in the backward
// FC2's gradients run beside the combine's all-to-all and FC1's beside the dispatch's.
bool StageBuilder::shared_experts_overlap() const {
  return m_s.shared_f_loc > 0 && m_s.opt.moe_shared_expert_overlap;
}

std::vector<uint32_t> StageBuilder::hold_waits() { return std::exchange(m_wait, {}); }

void StageBuilder::release_waits(const std::vector<uint32_t>& held) {
  m_wait.insert(m_wait.end(), held.begin(), held.end());
}

void StageBuilder::moe_forward(Phase phase) {
  const Shared& s = m_s;
  const bool overlap = shared_experts_overlap();
  // The router stays in 16-bit under fp8 (Transformer Engine converts the expert GEMMs only).
  const Precision router_p = outside_fp8(s.gemm_precision);
  const double per_expert = s.routed_tokens / s.experts_loc;
  const double up = s.swiglu ? 2 * s.expert_f_loc : s.expert_f_loc;
  // Router logits (model FLOPs leave the router out, as Megatron's count does), then softmax
  // and top-k over fp32 scores.
  compute(OpName::router, phase, gemm(s.Ts, s.experts, s.h, router_p), 0);
  compute(OpName::router, phase, memory_op(s.Ts * s.experts * 4 * 3), 0);
  const uint32_t shared_input = overlap ? sp_input_gather(OpName::tp_ag_mlp, phase) : kNoTask;
  compute(OpName::moe_permute, phase, memory_op(s.dispatched_tokens * s.h * s.elem * 2), 0);
  const uint32_t dispatch = ep_all_to_all(OpName::ep_dispatch, phase);
  if (s.etp > 1) {
    const uint32_t c = collective(Stream::tp, OpName::tp_ag_expert, CollectiveOp::all_gather, GroupKind::tp,
                                  s.routed_tokens * s.h * s.elem, phase, {m_last_compute, dispatch});
    m_wait.push_back(c);
  }
  if (overlap) {
    const std::vector<uint32_t> dispatched = hold_waits();
    mlp_up_forward(s.shared_f_loc, phase, Fc1Input::other, shared_input);
    release_waits(dispatched);
  }
  sort_chunks(phase);
  expert_gemm(OpName::expert_fc1, phase, grouped_gemm(per_expert, up, s.h),
              2.0 * s.counted_tokens * s.h * up);
  compute(OpName::expert_act, phase, memory_op(s.routed_tokens * (up + s.expert_f_loc) * s.elem), 0);
  expert_gemm(OpName::expert_fc2, phase, grouped_gemm(per_expert, s.h, s.expert_f_loc),
              2.0 * s.counted_tokens * s.expert_f_loc * s.h);
  sort_chunks(phase);
  uint32_t scatter = kNoTask;
  if (s.etp > 1) {
    scatter = collective(Stream::tp, OpName::tp_rs_expert, CollectiveOp::reduce_scatter, GroupKind::tp,
                         s.routed_tokens * s.h * s.elem, phase, {m_last_compute});
    m_wait.push_back(scatter);
  }
  ep_all_to_all(OpName::ep_combine, phase, scatter);
  std::vector<uint32_t> shared_output;
  if (overlap) {
    const std::vector<uint32_t> combined = hold_waits();
    mlp_down_forward(s.shared_f_loc, phase);
    shared_output = hold_waits();  // its TP reduction, for the sum after the unpermutation
    release_waits(combined);
  }
  compute(OpName::moe_unpermute, phase,
          memory_op(s.dispatched_tokens * s.h * s.elem * 2 + s.Ts * s.h * s.elem), 0);
  if (overlap)
    release_waits(shared_output);
  else if (s.shared_f_loc > 0)
    mlp_forward(s.shared_f_loc, phase, Fc1Input::other);
}

void StageBuilder::moe_backward() {
  const Shared& s = m_s;
  const bool overlap = shared_experts_overlap();
  const Precision router_p = outside_fp8(s.gemm_precision);
  const double per_expert = s.routed_tokens / s.experts_loc;
  const double up = s.swiglu ? 2 * s.expert_f_loc : s.expert_f_loc;
  if (s.shared_f_loc > 0 && !overlap) mlp_backward(s.shared_f_loc);
  compute(OpName::moe_unpermute, Phase::backward, memory_op(s.dispatched_tokens * s.h * s.elem * 2), 0);
  const uint32_t combine = ep_all_to_all(OpName::ep_combine, Phase::backward);
  if (s.etp > 1) {
    // Backward of the output reduce-scatter: all-gather the output gradient.
    const uint32_t c = collective(Stream::tp, OpName::tp_ag_expert, CollectiveOp::all_gather, GroupKind::tp,
                                  s.routed_tokens * s.h * s.elem, Phase::backward, {m_last_compute, combine});
    m_wait.push_back(c);
  }
  if (overlap) {
    const std::vector<uint32_t> combined = hold_waits();
    mlp_down_backward(s.shared_f_loc);
    release_waits(combined);
  }
  sort_chunks(Phase::backward);
  const double fc2_flops = 2.0 * s.counted_tokens * s.expert_f_loc * s.h;
  expert_gemm(OpName::expert_fc2, Phase::backward, grouped_gemm(per_expert, s.expert_f_loc, s.h),
              fc2_flops);  // dgrad
  expert_gemm(OpName::expert_fc2, Phase::backward,
              grouped_gemm(s.expert_f_loc, s.h, per_expert, InputCast::already_cast),
              fc2_flops);  // wgrad
  compute(OpName::expert_act, Phase::backward,
          memory_op(s.routed_tokens * (2 * up + s.expert_f_loc) * s.elem), 0);
  const double fc1_flops = 2.0 * s.counted_tokens * s.h * up;
  expert_gemm(OpName::expert_fc1, Phase::backward, grouped_gemm(per_expert, s.h, up), fc1_flops);  // dgrad
  expert_gemm(OpName::expert_fc1, Phase::backward, grouped_gemm(s.h, up, per_expert, InputCast::already_cast),
              fc1_flops);  // wgrad
  sort_chunks(Phase::backward);
  uint32_t scatter = kNoTask;
  if (s.etp > 1) {
    // Backward of the input all-gather: reduce-scatter the input gradient.
    scatter = collective(Stream::tp, OpName::tp_rs_expert, CollectiveOp::reduce_scatter, GroupKind::tp,
                         s.routed_tokens * s.h * s.elem, Phase::backward, {m_last_compute});
    m_wait.push_back(scatter);
  }
  ep_all_to_all(OpName::ep_dispatch, Phase::backward, scatter);
  std::vector<uint32_t> shared_input_grad;
  if (overlap) {
    const std::vector<uint32_t> dispatched = hold_waits();
    mlp_up_backward(s.shared_f_loc);
    shared_input_grad = hold_waits();  // its TP reduction, for the sum into the layer's input gradient
    release_waits(dispatched);
  }
  compute(OpName::moe_permute, Phase::backward, memory_op(s.dispatched_tokens * s.h * s.elem * 2), 0);
  compute(OpName::router, Phase::backward, memory_op(s.Ts * s.experts * 4 * 3), 0);
  compute(OpName::router, Phase::backward, gemm(s.Ts, s.h, s.experts, router_p), 0);  // dgrad
  compute(OpName::router, Phase::backward, gemm(s.h, s.experts, s.Ts, router_p), 0);  // wgrad
  release_waits(shared_input_grad);
}
}  // namespace simrun::detail

namespace simrun {

EpExchange ep_exchange(const Scenario& sc, const WorkloadOptions& opt) {
  EpExchange x;
  const Layout& l = sc.layout;
  if (opt.ep_dispatch_fp8) x.dispatch_element_bytes = 1.0 + 4.0 / 128.0;
  if (!sc.model.is_moe()) return x;
  const MoeSpec& moe = *sc.model.moe;
  x.copies = double(moe.top_k);
  const std::string dtype =
      opt.ep_dispatch_fp8 ? "tokens to their experts in fp8 with 1x128 scales, back in 16-bit" : "16-bit";
  if (opt.host.moe_dispatcher != MoeDispatcher::flex || l.ep <= 1) {
    x.why = fmt::format("one all-to-all over the EP group of {}, a copy per expert (top_k = {}), {}", l.ep,
                        moe.top_k, dtype);
    return x;
  }
  const int64_t per_rank = moe.experts / l.ep;
  const std::optional<double> ranks = expected_bins_reached(moe, per_rank);
  if (l.ep_inter() == 1 || l.expert_tp > 1) {
    if (ranks) x.copies = *ranks;
    x.dispatcher_kernels = group_inside_scale_up(sc.cluster, rank_group(l, GroupKind::ep));
    x.why = fmt::format(
        "one all-to-all over the EP group of {}, a copy per distinct destination rank ({:.3g} per token of "
        "top_k = {}){}, {}{}",
        l.ep, x.copies, moe.top_k,
        l.expert_tp > 1 ? " (expert_tp > 1: the two-level per-node exchange is not modelled)"
                        : " (the EP group does not span scale-up domains in aligned blocks)",
        dtype,
        x.dispatcher_kernels ? "; on the dispatcher's NVLink kernels (DeepEP intranode, HybridEP)" : "");
    return x;
  }
  const int64_t per_node = per_rank * l.ep_intra();
  const std::optional<double> nodes = expected_bins_reached(moe, per_node);
  if (!nodes || !ranks) {
    x.why = fmt::format(
        "one all-to-all over the EP group of {}, a copy per expert (top_k = {}): the routing's {} groups of "
        "{} "
        "experts and the {} experts of a node do not nest, so the per-node exchange falls back to today's "
        "model, {}",
        l.ep, moe.top_k, moe.groups, moe.groups > 0 ? moe.experts / moe.groups : moe.experts, per_node,
        dtype);
    return x;
  }
  x.two_level = true;
  x.node_copies = *nodes;
  x.rank_copies = *ranks;
  x.why = fmt::format(
      "two levels side by side: InfiniBand all-to-all over the {} EP blocks of {} ranks (one per scale-up "
      "domain) carrying {:.3g} copies per token (distinct destination domains{}), NVLink all-to-all inside "
      "each carrying {:.3g} (distinct destination ranks) of top_k = {}; {}",
      l.ep_inter(), l.ep_intra(), x.node_copies,
      moe.group_limited() ? fmt::format(", routing limited to {} of {} groups", moe.topk_groups, moe.groups)
                          : std::string(", unrestricted routing"),
      x.rank_copies, moe.top_k, dtype);
  return x;
}

}  // namespace simrun
