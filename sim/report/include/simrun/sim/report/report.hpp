// The report of one layout (analytic estimate or event simulation): the contract keys of
// DESIGN.md plus breakdowns. SI units throughout: seconds, bytes, dollars, FLOPs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace simrun {

// One explained number: value, the formula, and its inputs (for --explain).
struct Explained {
  std::string key;  // report key, e.g. "step_time_s"
  double value = 0;
  std::string unit;     // e.g. "s"
  std::string formula;  // e.g. "compute_s + exposed_comm_s + bubble_s"
  std::string inputs;   // e.g. "compute_s=3.1, exposed_comm_s=0.2, bubble_s=0.4"
};

struct MemoryReport {
  double weights = 0;  // bytes per GPU (worst pipeline stage)
  double grads = 0;
  double optimizer = 0;    // fp32 master weights + Adam moments
  double activations = 0;  // peak in-flight activations
  double workspace = 0;    // allowance: cuBLAS workspace, NCCL buffers, allocator fragmentation
  double peak_bytes_per_gpu = 0;
  double capacity_bytes = 0;  // usable HBM
  bool fits = false;
};

struct BreakdownReport {
  int64_t stage = 0;     // the pipeline stage these parts describe: in the event simulation the
                         // stage of the rank that finishes last, in the estimate its slowest stage
  double compute_s = 0;  // forward + backward + recompute + optimizer on the critical path
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  double optimizer_s = 0;
  double tp_comm_s = 0;       // totals per step (exposed or not)
  double pp_comm_s = 0;       // messages sent and received
  double dp_comm_s = 0;       // incl. expert gradients over the expert-data-parallel group
  double cp_comm_s = 0;       // context-parallel K/V exchange
  double ep_comm_s = 0;       // MoE token dispatch/combine all-to-alls
  double exposed_comm_s = 0;  // communication not hidden behind compute: the sum of
  double tp_exposed_s = 0;    // the compute stream waiting for each group's traffic
  double pp_exposed_s = 0;
  double dp_exposed_s = 0;
  double cp_exposed_s = 0;
  double ep_exposed_s = 0;
  double bubble_s = 0;  // pipeline fill/drain idle time
};

struct RunReport {
  double tokens = 0;
  double days = 0;  // wall-clock incl. failure losses
  double gpu_hours = 0;
  double cost_usd = 0;
  double energy_kwh = 0;
  double goodput = 0;  // useful fraction of wall-clock after checkpoints and failures
  double checkpoint_interval_s = 0;
};

struct Report {
  std::string fidelity;  // "analytic" | "event"
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  // model FLOPs (causal convention) per GPU per second / 1e12
  double mfu = 0;             // model FLOPs / (time · GPUs · dense peak)
  double hfu = 0;             // hardware FLOPs (incl. recompute) / (time · GPUs · peak)
  double flops_per_step = 0;  // model FLOPs per step
  double hardware_flops_per_step = 0;
  double params = 0;
  double active_params = 0;
  std::string flop_convention;  // stated in every output
  MemoryReport memory;
  BreakdownReport breakdown;
  RunReport run;
  std::vector<std::string> warnings;
  // The slow GPUs and links the step was modelled with (stragglers, slow links), one line each,
  // e.g. "ranks 8-15 (stage 1): kernels 1.2x slower"; empty for healthy hardware.
  std::vector<std::string> degraded;
  std::vector<Explained> explanations;  // filled for --explain
};

// The contract JSON (DESIGN.md "Report") with every key, plus the breakdown extras.
nlohmann::json to_json(const Report& r);
nlohmann::json to_json(const BreakdownReport& b);  // the report's "breakdown" object

}  // namespace simrun
