// `simrun simulate` as a library call: Scenario → workload → event simulation of one step →
// Report (DESIGN.md contract keys, fidelity "event") plus what the table, CSV and trace need:
// per-stage time breakdown and memory with the schedule's real in-flight micro-batches.
//
// Conventions: model FLOPs are Megatron-LM's causal count (step_metrics.hpp);
// MFU = model FLOPs / (step time · GPUs · dense peak of the training precision); HFU adds the
// recomputed forward FLOPs; tflops_per_gpu is model FLOPs per GPU per second.
#pragma once
#include <vector>

#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/event/step_executor.hpp"
#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/memory/run_cost.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

struct SimulateOptions {
  StepSimOptions step;                   // scope, stragglers, trace, comm efficiencies
  WorkloadOptions workload;              // framework overlap behaviour
  std::optional<ComputeParams> compute;  // defaults before calibration (default_compute_params)
  Calibration calibration;               // per GPU kind overrides (--calibration)
  MemoryDefaults memory;
  RunDefaults run;  // run totals: restart time, checkpoint bandwidth, idle power
};

struct StageReport {
  int64_t stage = 0;
  int64_t layers = 0;  // transformer layers held (all chunks)
  double params = 0;   // parameters held per GPU (before ZeRO sharding)
  int64_t in_flight_micro_batches = 0;
  MemoryReport memory;
  RankBreakdown time;  // the stage's traced rank that finishes last (its representative by default)
};

struct SimulationOutput {
  Report report;
  std::vector<StageReport> stages;
  Workload workload;
  WorkloadCost cost;  // its compute tasks timed on the scenario's GPU
  StepResult step;
  // The closed-form estimate of the same layout under the same options (analytic_options), which
  // judges the agreement envelope (agreement_envelope.hpp).
  Report estimate;
  double wall_s = 0;  // host time spent in build + simulation
};

SimulationOutput simulate(const Scenario& scenario, const SimulateOptions& options = SimulateOptions{});

// The options a scenario's framework profile sets: its workload behaviour and memory conventions
// (the rest at their defaults), as framework_options does for the estimate.
SimulateOptions framework_simulate_options(const Scenario& scenario);

// The event simulation's work grows with micro-batches x layers (the tasks of each stage program):
// simulate refuses a step of more layer passes than this (llama3-70b with 8192 micro-batches: 672K
// passes, ~12 s and 2.5 GB). The planner leaves such points out before estimating them.
inline constexpr double kMaxEventLayerPasses = double(1 << 19);
inline double event_layer_passes(const ModelSpec& model, const Layout& layout) {
  return double(layout.num_microbatches()) * double(model.layers + 2);
}

// The estimate's options taken from a simulation's: same workload behaviour, compute defaults,
// calibration, collective efficiencies and memory conventions (to compare the two fidelities on one layout).
AnalyticOptions analytic_options(const SimulateOptions& simulate);

// One traced rank's step as the report's parts: compute, traffic per group (DP, DP×CP and
// expert-DP count as DP), and bubble up to the step's end, so the parts sum to step_time_s.
BreakdownReport stage_breakdown(const RankBreakdown& rank, double step_time_s);

}  // namespace simrun
