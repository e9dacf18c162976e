// The closed-form estimate of one layout (`simrun estimate`, the planner's sweep, the GUI's
// instant numbers): FLOPs, step time, memory, run totals in microseconds. It times the workload
// builder's own ops (probe_micro_batch, optimizer_program) with the cost pass and closed-form
// collectives, then plays the pipeline and the data-parallel traffic out in closed form. The
// formulas, term by term, with their sources (Narayanan et al. 2021, arXiv:2104.04473;
// Korthikanti et al. 2022, arXiv:2205.05198), are in docs/model.md "The closed-form estimate".
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "simrun/models/counts.hpp"
#include "simrun/sim/collectives/efficiency.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/memory/run_cost.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/degraded.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// What the estimate reads. Everything but the run defaults and the FLOP convention is the event
// simulation's own description (SimulateOptions): analytic_options() copies it from there.
struct AnalyticOptions {
  EfficiencyDefaults efficiency;         // collective link fractions and α (as StepSimOptions::comm)
  WorkloadOptions workload;              // framework behaviour: overlaps, buckets, kernels, recompute
  std::optional<ComputeParams> compute;  // default: default_compute_params(gpu)
  Calibration calibration;               // per GPU kind overrides (--calibration)
  // Compute slowdown while DP/PP NCCL kernels share the SMs (the event simulation's value).
  double overlap_slowdown = kCommOverlapSlowdown;
  // GPUs running their kernels slower (as StepSimOptions::stragglers): each paces its pipeline
  // stage, whose TP, CP, EP and DP groups wait for it at every collective.
  std::vector<Straggler> stragglers;
  // Links running below their line rate (as StepSimOptions::slow_links): each slows its stage's
  // groups that run over that class of link, and the sends between stages.
  std::vector<SlowLink> slow_links;
  MemoryDefaults memory;
  RunDefaults run;
  AttentionFlops flop_convention = AttentionFlops::causal;
};

struct StepFlops {
  FlopCounts per_sequence;  // model FLOPs of one sequence, fwd+bwd
  double model = 0;         // per step: per_sequence.total() · global_batch
  double recompute = 0;     // extra forward FLOPs per step from recompute
  // Expert GEMMs on the padding (Layout::moe_capacity_factor > 1), with their recompute.
  double padding = 0;
  double hardware = 0;  // model + recompute + padding
};
// `selective`: what Recompute::selective re-runs (the profile's WorkloadOptions::selective);
// read only when layout.recompute is selective.
StepFlops step_flops(const ModelSpec& m, const Layout& layout, AttentionFlops convention,
                     SelectiveRecompute selective);

// Time of one micro-batch on one pipeline stage, per GPU.
struct StageTime {
  int64_t stage = 0;
  double gemm_flops = 0;       // fwd+bwd model FLOPs of every op but the attention core, per GPU
  double attention_flops = 0;  // fwd+bwd model FLOPs of the attention core, per GPU
  double memory_bytes = 0;     // HBM bytes of all ops (recompute included), per GPU
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  double tp_comm_s = 0;     // all TP collectives of the micro-batch
  double tp_exposed_s = 0;  // of which the compute stream waits for
  double cp_comm_s = 0;
  double cp_exposed_s = 0;
  double ep_comm_s = 0;          // MoE dispatch/combine all-to-alls per micro-batch
  double ep_exposed_s = 0;       // of which the compute stream waits for
  double forward_exposed_s = 0;  // of the TP/CP/EP waits, those before forward kernels
  double optimizer_s = 0;        // once per step
  // Of forward_s + backward_s + recompute_s, the kernels' waits for the host to issue them
  // (per micro-batch), and of optimizer_s, the optimizer's (after the gradient norm's host sync).
  double host_wait_s = 0;
  double optimizer_host_wait_s = 0;
  // The host's time to issue one micro-batch's tasks, and the optimizer's, at the framework's
  // cost per launch and per sync.
  double host_issue_s = 0;
  double optimizer_host_issue_s = 0;
  double compute_slowdown = 1;  // its slowest straggler's (AnalyticOptions::stragglers), in the times above
  // Its slowest link of each class, as a fraction of the line rate (AnalyticOptions::slow_links),
  // in the collective times above and in its DP traffic.
  double scale_up_fraction = 1, scale_out_fraction = 1;
  double compute_s() const { return forward_s + backward_s + recompute_s; }
};

struct StepTimeEstimate {
  std::vector<StageTime> stages;
  int64_t slowest_stage = 0;
  double microbatches = 0;  // m
  double pp_send_s = 0;     // one activation send between stages (the slowest boundary's)
  double dp_grad_s = 0;     // gradient reduction (all-reduce or reduce-scatter), per step
  double dp_param_s = 0;    // weight all-gather (ZeRO ≥ 1), per step
  int64_t dp_calls = 0;     // ZeRO 0-2: DDP buckets of the busiest stage, one call each way
  double dp_exposed_s = 0;
  double pp_exposed_s = 0;
  double mb_exposed_comm_s = 0;   // TP + CP + EP exposed per micro-batch (slowest stage)
  double fill_drain_s = 0;        // what the schedule's longest path adds to the slowest stage's work
  double overlap_slowdown_s = 0;  // compute slowed by overlapping DP/PP traffic, per step
  double shared_link_s = 0;       // TP/CP/EP waits added by DP traffic on the same link, per step
  // ZeRO 0-2 over a pipeline: what the stage that ends the step (its last backward, optimizer
  // and own gradient tail ending last) adds beyond the slowest stage's path and DP tail.
  double critical_tail_s = 0;
  // Over a pipeline: what the busiest NIC or scale-up port's pipeline messages need beyond the
  // step above (pipeline_port_bound_s: the port carries them one at a time at its rate, e.g. a
  // slow NIC's stage under the interleaved schedule's asynchronous sends).
  double pipeline_port_s = 0;
  // What the host's issue time of the busiest stage's step (every launch and sync, one after
  // another) needs beyond the step above: the launch-bound share, booked to compute.
  double host_bound_s = 0;
  BreakdownReport breakdown;
  double step_time_s = 0;
};

StepTimeEstimate estimate_step_time(const Scenario& s, const StepFlops& flops,
                                    const AnalyticOptions& options);

// A floor under estimate(...).step_time_s: the kernels of one micro-batch, each at its time alone
// (no wait, exposed communication, optimizer or host bound on top; a straggler only slows them),
// m times on the stage with the most of them and, through a pipeline, after the first
// micro-batch's forward through the stages before it and before its backward back through them
// (docs/planner.md "Bounds"). Built once from a scenario (its probes: the costliest part of an
// estimate), it holds for every scenario that differs from that one only in the data-parallel
// size, the pipeline (pp, virtual stages, split), the global batch and the GPU count: what the
// planner varies within one set of per-layer costs, and skips points on when even their floor
// cannot rank. With run.assumed_mfu the step is set, not timed: the floor is 0.
class StepTimeFloor {
 public:
  StepTimeFloor(const Scenario& sc, const AnalyticOptions& options);

  // The kernels of one micro-batch, stage by stage, of a layout's pipeline: what the floor reads
  // of it, for every global batch and data-parallel size.
  struct Pipeline {
    std::vector<double> stage_s;  // each stage's, per micro-batch
    std::vector<double> entry_s;  // each stage's chunk a micro-batch enters by (its first)
    PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
    int64_t chunks = 1;    // per stage, as the schedule plays them (stage_chunks)
    bool chained = false;  // the fill and drain count: stage by stage, nothing paired
  };
  Pipeline pipeline(const Layout& layout) const;
  static double step_time_s(const Pipeline& pipeline, int64_t microbatches);
  double step_time_s(const Layout& layout) const;

 private:
  struct Kernels;
  std::shared_ptr<const Kernels> m_kernels;
};

// The options a scenario's framework profile sets: its workload behaviour and memory conventions
// (the rest at their defaults). What `simrun estimate` runs before its flags, and the planner.
AnalyticOptions framework_options(const Scenario& s);

// The full analytic report (fidelity "analytic"): every Report field, warnings, explanations.
// Throws InputError when the scenario asks for something the GPU cannot do (no peak for the
// precision).
Report estimate(const Scenario& s);
Report estimate(const Scenario& s, const AnalyticOptions& options);
// estimate()'s numbers alone (step time, rates, breakdown, memory, run totals: the same), without
// its warnings and explanations, for a sweep that has estimated the memory (estimate_memory with
// options.memory) already: what the planner reads of each point.
Report estimate_numbers(const Scenario& s, const AnalyticOptions& options, const MemoryEstimate& memory);

// The compute model both fidelities time kernels with: default_compute_params(gpu) (or
// options.compute) with the calibration's overrides for the GPU kind.
ComputeModel analytic_compute_model(const Scenario& s, const AnalyticOptions& options);

namespace detail {
// The --explain entry of breakdown.ep_comm_s (both fidelities): how the MoE all-to-alls move a
// token (ep_exchange), where the model is MoE with ep > 1.
void explain_ep_exchange(const Scenario& s, const WorkloadOptions& workload, Report& r);
}  // namespace detail

}  // namespace simrun
