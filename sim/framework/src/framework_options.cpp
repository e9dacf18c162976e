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
  if (name == "every_other_layer" || name == "every-other-layer") return SelectiveRecompute::every_other_layer;
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
const char* to_string(EpDispatcher d) { return d == EpDispatcher::deepep ? "deepep" : "alltoall"; }

}  // namespace simrun
