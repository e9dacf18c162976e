// The step's rates, one formula for both fidelities (DESIGN.md report keys):
//   tokens_per_s   = global_batch · seq_len / step_time_s
//   tflops_per_gpu = model FLOPs / (step_time_s · GPUs) / 1e12
//   mfu            = model FLOPs / (step_time_s · GPUs · dense peak of the training precision)
//   hfu            = hardware FLOPs (model + recompute + expert capacity padding) / (the same)
// Model FLOPs are Megatron-LM's num_floating_point_operations in the caller's attention
// convention (models/counts.hpp: causal halves the s² term; Korthikanti et al. 2022, App. A).
#pragma once

#include "simrun/models/counts.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

struct StepFlopTotals {
  double model = 0;     // whole cluster, one step, e.g. 1.2e18
  double hardware = 0;  // model + recompute + padding
  AttentionFlops convention = AttentionFlops::causal;
};

// Sets the report's step_time_s, flops_per_step, hardware_flops_per_step, flop_convention,
// tokens_per_s, tflops_per_gpu, mfu and hfu.
void fill_step_rates(const Scenario& scenario, double step_time_s, const StepFlopTotals& flops, Report& report);

// The FLOP convention sentence every output states.
const char* flop_convention_text(AttentionFlops convention);

}  // namespace simrun
