// The host's share of a stage program (host_work.hpp). Rules and sources: docs/model.md "Host
// overhead" and ../shared/reference/frameworks.md §5.
#include "host_work.hpp"

#include <tuple>

namespace simrun::detail {
namespace {

// The CUDA-graph module scope an op of a layer belongs to (Megatron-Core --cuda-graph-modules,
// Transformer Engine make_graphed_callables over the layer's submodules), or none.
enum class Module : uint8_t { none, attn, mlp, moe_router, moe };

Module module_of(OpName op, bool moe_layer) {
  switch (op) {
    case OpName::ln_attn:
    case OpName::qkv:
    case OpName::rope:
    case OpName::attn_core:
    case OpName::proj:
    case OpName::residual_attn:
    case OpName::tp_ag_attn:
    case OpName::tp_rs_attn:
    case OpName::tp_ar_attn:
    case OpName::tp_ag_in_attn:
    case OpName::cp_kv:
    case OpName::cp_a2a:
    case OpName::mla_q_down:
    case OpName::mla_q_up:
    case OpName::mla_kv_down:
    case OpName::mla_kv_up:
    case OpName::mla_norm:
    case OpName::tp_ar_latent:
      return Module::attn;
    case OpName::ln_mlp:
    case OpName::router:
      // The MoE layer's pre-MLP norm goes with its router (the moe_router graph).
      return moe_layer ? Module::moe_router : Module::mlp;
    case OpName::fc1:
    case OpName::act:
    case OpName::fc2:
    case OpName::residual_mlp:
    case OpName::tp_ag_mlp:
    case OpName::tp_rs_mlp:
    case OpName::tp_ar_mlp:
    case OpName::tp_ag_in_mlp:
      // An MoE layer's shared experts and residual belong to the whole-layer "moe" graph.
      return moe_layer ? Module::moe : Module::mlp;
    case OpName::moe_permute:
    case OpName::moe_sort_chunks:
    case OpName::expert_fc1:
    case OpName::expert_act:
    case OpName::expert_fc2:
    case OpName::moe_unpermute:
    case OpName::ep_dispatch:
    case OpName::ep_combine:
    case OpName::tp_ag_expert:
    case OpName::tp_rs_expert:
      return Module::moe;
    default:
      return Module::none;
  }
}

// Whether the profile's scopes capture `m`. moe_router takes the router op, into which the
// workload folds the dispatcher's preprocess (moe_preprocess adds no op of its own); the whole
// MoE layer ("moe") only under drop-and-pad: "moe cuda graph is only supported with drop-padding
// MoE" (Megatron-Core transformer_config.py).
bool captured(Module m, CudaGraphScopes scopes, bool dropless) {
  switch (m) {
    case Module::attn:
      return scopes.has(CudaGraphScope::attn);
    case Module::mlp:
      return scopes.has(CudaGraphScope::mlp);
    case Module::moe_router:
      return scopes.has(CudaGraphScope::moe_router) || (scopes.has(CudaGraphScope::moe) && !dropless);
    case Module::moe:
      return scopes.has(CudaGraphScope::moe) && !dropless;
    case Module::none:
      return false;
  }
  return false;
}

// The ops before which a dropless MoE layer's forward needs its token counts on the host: the
// first of them in a layer's forward carries the dispatcher's sync.
bool needs_token_counts(OpName op) {
  return op == OpName::ep_dispatch || op == OpName::tp_ag_expert || op == OpName::moe_sort_chunks ||
         op == OpName::expert_fc1;
}

}  // namespace

void mark_host_work(StageProgram& program, const Scenario& sc, const WorkloadOptions& options) {
  const HostOverhead& host = options.host;
  const bool moe = sc.model.is_moe();
  // Dropless routing (no capacity factor): the dispatcher's split sizes are data-dependent and
  // must reach the host. Drop-and-pad (--moe-expert-capacity-factor with
  // --moe-pad-expert-input-to-capacity) makes every size static and skips the sync.
  const bool dropless = moe && sc.layout.moe_capacity_factor <= 0;
  // A full-iteration graph needs a step without host syncs in its forward and backward.
  const bool full_iteration = host.cuda_graphs.has(CudaGraphScope::full_iteration) && !dropless;

  using Region = std::tuple<int, int32_t, int32_t, int16_t, bool>;  // module, layer, mb, chunk, backward
  const Region kNoRegion{-1, 0, 0, 0, false};
  Region previous = kNoRegion;
  std::tuple<int32_t, int32_t, int16_t, Phase> synced{-1, -1, 0, Phase::comm};
  bool in_full_graph = full_iteration, after_grad_norm = false;
  for (Task& t : program.tasks) {
    t.host_launches = 1;
    t.host_syncs = 0;
    if (t.kind == TaskKind::recv) {  // completed by its send, not issued on a stream
      t.host_launches = 0;
      continue;
    }
    if (t.kind == TaskKind::compute && program.shape(t).cls == OpClass::host) {  // host work itself
      t.host_launches = 0;
      continue;
    }
    // Dispatcher: one host sync (allgather: two) per MoE layer forward, recompute included.
    const bool forward = t.phase == Phase::forward || t.phase == Phase::recompute;
    if (dropless && forward && sc.model.is_moe_layer(t.layer) && needs_token_counts(t.op)) {
      const auto key = std::make_tuple(t.layer, t.micro_batch, t.chunk, t.phase);
      if (key != synced) t.host_syncs = static_cast<uint8_t>(host.dispatcher_syncs());
      synced = key;
    }
    // Gradient clipping: get_grad_norm_fp32's total_norm.item() (megatron/core/optimizer/
    // clip_grads.py) makes the host wait for the norm before it issues the optimizer's kernels.
    if (t.op == OpName::grad_norm) after_grad_norm = true;
    if (t.op == OpName::optimizer && after_grad_norm) {
      t.host_syncs = 1;
      after_grad_norm = false;
    }
    if (t.phase == Phase::optimizer) in_full_graph = false;
    Region region = kNoRegion;
    if (in_full_graph) {
      region = Region{0, -1, -1, 0, false};  // one graph for the step's forwards and backwards
    } else if (host.cuda_graphs.any() && t.layer >= 0) {
      const Module m = module_of(t.op, sc.model.is_moe_layer(t.layer));
      if (captured(m, host.cuda_graphs, dropless))
        region = Region{int(m) + 1, t.layer, t.micro_batch, t.chunk, t.phase == Phase::backward};
    }
    if (region != kNoRegion && region == previous) t.host_launches = 0;  // inside the graph launched before
    previous = region;
  }
}

}  // namespace simrun::detail
