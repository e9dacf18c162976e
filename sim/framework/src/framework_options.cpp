// The spellings of the framework behaviours (see framework_options.hpp).
#include "simrun/sim/framework/framework_options.hpp"

#include <fmt/format.h>

namespace simrun {

const char* to_string(TpCommOverlap o) {
  return o == TpCommOverlap::full ? "full" : o == TpCommOverlap::none ? "none" : "backward_async";
}
const char* to_string(GradReduceOverlap o) {
  return o == GradReduceOverlap::bucketed ? "bucketed" : "after_backward";
}
const char* to_string(ParamGatherOverlap o) {
  return o == ParamGatherOverlap::next_forward ? "next_forward" : "after_optimizer";
}
const char* to_string(SelectiveRecompute s) {
  switch (s) {
    case SelectiveRecompute::attention_core:
      return "attention";
    case SelectiveRecompute::every_other_layer:
      return "every_other_layer";
    case SelectiveRecompute::norm_mla_up_swiglu:
      return "norm_mla_up_swiglu";
  }
  return "?";
}
SelectiveKeeps selective_keeps(SelectiveRecompute s) {
  switch (s) {
    case SelectiveRecompute::every_other_layer:
      return SelectiveKeeps::every_other_layer;
    case SelectiveRecompute::norm_mla_up_swiglu:
      return SelectiveKeeps::all_but_norm_mla_up_swiglu;
    case SelectiveRecompute::attention_core:
      break;
  }
  return SelectiveKeeps::all_but_attention_core;
}
SelectiveRecompute selective_recompute_named(const std::string& name) {
  if (name == "every_other_layer" || name == "every-other-layer")
    return SelectiveRecompute::every_other_layer;
  if (name == "norm_mla_up_swiglu") return SelectiveRecompute::norm_mla_up_swiglu;
  return SelectiveRecompute::attention_core;
}
const std::vector<std::string>& selective_recompute_names() {
  static const std::vector<std::string> kNames = {to_string(SelectiveRecompute::attention_core),
                                                  to_string(SelectiveRecompute::every_other_layer),
                                                  to_string(SelectiveRecompute::norm_mla_up_swiglu)};
  return kNames;
}
const char* to_string(FsdpBackwardPrefetch p) {
  return p == FsdpBackwardPrefetch::after_backward ? "after_backward" : "before_backward";
}
const char* to_string(KernelStack k) { return k == KernelStack::eager ? "eager" : "fused"; }
const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::alltoall:
      return "alltoall";
    case MoeDispatcher::allgather:
      return "allgather";
    case MoeDispatcher::flex:
      return "flex";
  }
  return "alltoall";
}
namespace {
constexpr MoeDispatcher kMoeDispatchers[] = {MoeDispatcher::alltoall, MoeDispatcher::allgather,
                                             MoeDispatcher::flex};
}  // namespace
std::vector<std::string> moe_dispatcher_names() {
  std::vector<std::string> names;
  for (MoeDispatcher d : kMoeDispatchers) names.emplace_back(to_string(d));
  return names;
}
std::optional<MoeDispatcher> moe_dispatcher_named(const std::string& name) {
  for (MoeDispatcher d : kMoeDispatchers)
    if (name == to_string(d)) return d;
  return std::nullopt;
}
const char* to_string(CudaGraphScope s) {
  switch (s) {
    case CudaGraphScope::attn:
      return "attn";
    case CudaGraphScope::mlp:
      return "mlp";
    case CudaGraphScope::moe_router:
      return "moe_router";
    case CudaGraphScope::moe_preprocess:
      return "moe_preprocess";
    case CudaGraphScope::moe:
      return "moe";
    case CudaGraphScope::full_iteration:
      return "full_iteration";
  }
  return "attn";
}
std::string to_string(CudaGraphScopes s) {
  std::string out;
  for (CudaGraphScope scope : kCudaGraphScopes)
    if (s.has(scope)) {
      if (!out.empty()) out.append("+");
      out.append(to_string(scope));
    }
  return out.empty() ? "none" : out;
}

std::string host_overhead_text(const HostOverhead& host, double host_wait_s, double host_bound_s) {
  std::string graphs = to_string(host.cuda_graphs);
  if (host.cuda_graphs.any())
    graphs.append(
        " (a captured region is one launch; full_iteration only without host syncs, a dropless "
        "MoE step's dispatcher sync stays)");
  return fmt::format(
      "; host: {:.3g} µs per launch, {:.3g} µs per sync, MoE dispatcher {} ({} host sync(s) per dropless MoE "
      "layer forward, none under drop-and-pad), gradient-norm sync before the optimizer, CUDA graphs {}; "
      "kernels waited {:.4g} s for the host{}",
      host.launch_s * 1e6, host.sync_s * 1e6, to_string(host.moe_dispatcher), host.dispatcher_syncs(), graphs,
      host_wait_s,
      host_bound_s > 0
          ? fmt::format(" (launch-bound: the step is the host's issue time, {:.4g} s of it beyond the GPU's)",
                        host_bound_s)
          : std::string());
}
const char* to_string(Zero3Gather g) { return g == Zero3Gather::submodule ? "submodule" : "layer"; }
const char* to_string(Zero3Fetch f) { return f == Zero3Fetch::synchronous ? "synchronous" : "prefetch"; }
const char* to_string(Zero3Reduce r) { return r == Zero3Reduce::bucketed ? "bucketed" : "per_unit"; }
const char* to_string(ZeroGradCollective c) {
  return c == ZeroGradCollective::all_reduce ? "all_reduce" : "reduce_scatter";
}
const char* to_string(PipelineEngine e) { return e == PipelineEngine::deepspeed ? "deepspeed" : "megatron"; }

}  // namespace simrun
