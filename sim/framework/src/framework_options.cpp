// The spellings of the framework behaviours (see framework_options.hpp).
#include "simrun/sim/framework/framework_options.hpp"

namespace simrun {

const char* to_string(TpCommOverlap o) { return o == TpCommOverlap::full ? "full" : "backward_async"; }
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

}  // namespace simrun
