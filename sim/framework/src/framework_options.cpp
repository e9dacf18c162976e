// The spellings of the framework behaviours (see framework_options.hpp).
#include "simrun/sim/framework/framework_options.hpp"

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
  return s == SelectiveRecompute::every_other_layer ? "every_other_layer" : "attention";
}
const char* to_string(FsdpBackwardPrefetch p) {
  return p == FsdpBackwardPrefetch::after_backward ? "after_backward" : "before_backward";
}
const char* to_string(KernelStack k) { return k == KernelStack::eager ? "eager" : "fused"; }
const char* to_string(Zero3Gather g) { return g == Zero3Gather::submodule ? "submodule" : "layer"; }
const char* to_string(Zero3Fetch f) { return f == Zero3Fetch::synchronous ? "synchronous" : "prefetch"; }
const char* to_string(Zero3Reduce r) { return r == Zero3Reduce::bucketed ? "bucketed" : "per_unit"; }
const char* to_string(ZeroGradCollective c) {
  return c == ZeroGradCollective::all_reduce ? "all_reduce" : "reduce_scatter";
}
const char* to_string(PipelineEngine e) { return e == PipelineEngine::deepspeed ? "deepspeed" : "megatron"; }

}  // namespace simrun
