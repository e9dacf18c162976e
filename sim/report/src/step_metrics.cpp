// The step's rates (step_metrics.hpp).
#include "simrun/sim/report/step_metrics.hpp"

#include "simrun/common/units.hpp"

namespace simrun {

const char* flop_convention_text(AttentionFlops convention) {
  return convention == AttentionFlops::causal
             ? "Megatron-LM num_floating_point_operations, causal (attention s^2 term halved; HEAD after "
               "8873b55d6a); "
               "MFU vs dense peak of the training precision; HFU adds recompute and expert capacity padding"
             : "Megatron-LM core_r0.8 num_floating_point_operations, non-causal (full attention s^2 term); "
               "MFU vs dense peak of the training precision; HFU adds recompute and expert capacity padding";
}

void fill_step_rates(const Scenario& sc, double step_time_s, const StepFlopTotals& flops, Report& r) {
  const Layout& l = sc.layout;
  const double gpus = double(l.world_size());
  const double peak = training_peak_flops_per_s(sc);
  r.flop_convention = flop_convention_text(flops.convention);
  r.flops_per_step = flops.model;
  r.hardware_flops_per_step = flops.hardware;
  r.step_time_s = step_time_s;
  r.tokens_per_s = double(l.global_batch) * double(sc.model.seq_len) / step_time_s;
  r.tflops_per_gpu = flops.model / (step_time_s * gpus) / kTera;
  r.mfu = flops.model / (step_time_s * gpus * peak);
  r.hfu = flops.hardware / (step_time_s * gpus * peak);
}

}  // namespace simrun
