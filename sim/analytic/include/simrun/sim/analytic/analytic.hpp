// The analytic (closed-form) model of one layout: FLOPs, step time, memory, run totals, in
// microseconds, for the planner's sweep, the GUI's instant numbers and `simrun estimate`.
//
// FLOPs (per step, SI): model FLOPs are Megatron-LM's num_floating_point_operations with the
// causal convention (megatron/training/training.py at HEAD after 8873b55d6a: the attention s²
// term halved for the causal mask; ecosystem.md §6.2) times the global batch. Hardware FLOPs
// add recomputation: full recompute re-runs every transformer layer's forward (+⅓ of the
// layers' fwd+bwd FLOPs, not the logits), selective re-runs the attention core's forward
// (Korthikanti et al. 2022). MFU = model FLOPs / (step time · GPUs · dense peak of the
// training precision); HFU the same with hardware FLOPs.
//
// Step time (slowest pipeline stage, m micro-batches, v virtual stages, p stages). The work is
// the workload builder's (workload.hpp probe_micro_batch, optimizer_program): the same ops, timed
// by the same compute model (compute_model.hpp: default_compute_params + calibration.json) and
// the same TP/CP collectives with the same dependencies as the event simulation runs, so the
// two fidelities differ only where the event engine schedules, and not in what they count.
//   compute_s      = m · (forward + backward + recompute of one micro-batch) + optimizer
//                    one micro-batch on a stage = its layers × one layer's ops (by the parity of
//                    the layer id, for every-other-layer recompute) + embedding on the first,
//                    final norm, logits and loss on the last stage; each op ComputeModel::op_seconds
//                    optimizer = the stage's optimizer program (grad-norm, fused Adam, host step
//                    overhead)
//   exposed_comm_s = m · (TP + CP + EP exposed per micro-batch) + PP exposed + DP exposed
//     TP, CP: the probe's tasks run on their streams with closed-form collective times
//         (collective_s: NCCL's model inside a scale-up domain and across domains, α-β rings
//         under calibrated α/β); exposed = the compute stream's wait for them
//         (WorkloadOptions::tp_overlap decides what overlaps)
//     EP: 2 all-to-alls (dispatch, combine) forward and 2 backward per MoE layer, exposed
//     A TP, CP or EP group on the same link as the DP traffic beside it (both across domains:
//         the GPU's NIC; both in an NVSwitch domain: its port; on a mesh, a common peer's link)
//         gets half of it while they overlap (max-min fair): its waits grow by the share of
//         the compute stream's span the overlapped DP traffic fills
//     PP: one send of the stage output (1/tp of it, Megatron's scatter-gather) forward and one
//         gradient backward per micro-batch and chunk; 1F1B (v = 1) waits for each exchange
//         with a neighbour (a send and a receive passing each other), plus the fill/drain hops:
//         2(m+p−1) sends for a middle stage, m+2(p−1) for an end one; interleaved overlaps them
//         but for 2(p−1). Each boundary's sends take its own link (the NIC where it crosses
//         scale-up domains) at its own time (a slow link's)
//     DP: ZeRO-0 all-reduce of the gradients over dp·cp; ZeRO-1/2 reduce-scatter of gradients
//         + all-gather of updated weights; ZeRO-3 per micro-batch 2 all-gathers + 1
//         reduce-scatter, or with pp > 1 (torchtitan's FSDP+PP) 1 all-gather + 1 reduce-scatter
//         per step (bytes per element as the workload reduces them). ZeRO 0-2 run one call per
//         bucket of Megatron's DDP, ZeRO-3 one per FSDP unit, as the workload cuts them. Overlap
//         (WorkloadOptions::grad_reduce, param_gather): buckets reduce one after another, each
//         once the backward has passed its layers (chunk c's last backward ending c·p
//         chunk-steps before the stage's last), and what outlasts the last backward is exposed;
//         weights gather one after another from the step's start, each bucket needed when the
//         forward reaches its first layer (chunk c's first forward c·p chunk-steps in), every
//         wait delaying the rest. ZeRO-3 hides behind the compute stream's span (its
//         compute and its TP/CP/EP waits) but for the step's first two units' gathers
//         (embedding, first layer) and the embedding's last reduce-scatter; the backward's
//         gathers and reduce-scatters run on two streams (one with FSDP1's one communicator),
//         so together they take the longer stream or both's bytes without their calls'
//         latencies (a 1-byte call each), whichever is more; with pp > 1 the
//         slowest stage's gather-bound first forward (below) and
//         the tail of reduce-scatters that outlast a stage's last backward and the drain behind
//         it. Compute kernels that overlap DP or PP traffic run overlap_slowdown slower (NCCL's
//         SMs, as the event simulation charges them: compute's share of the overlapped span),
//         added to forward/backward; the windows the traffic hides in widen by as much
//   bubble_s       = Σ over the other p−1 stages of (one micro-batch's forward + backward +
//                    exposed TP/CP/EP) / v: the slowest stage waits for the fill and the drain
//                    through them. Equal stages give (p−1)/v · t (Narayanan et al. 2021,
//                    arXiv:2104.04473 §2.2: bubble (p−1)/(m·v)); a last stage heavier by the
//                    logits and loss waits for the lighter stages' times, not (p−1) of its own.
//                    Each stage's last backward runs overlap_slowdown slower beside its gradient
//                    reductions (DDP buckets under overlap_grad_reduce, FSDP reduce-scatters).
//                    ZeRO-3 with pp > 1: each chunk's first forward plays out its FSDP units,
//                    each waiting on its own gather (one stream, limit_all_gathers' window; a
//                    chunk's first unit fetched during the fill), compute beside a gather
//                    overlap_slowdown slower. Each stage's optimizer follows its own last
//                    backward; with ZeRO 0-2 so does its own gradient reductions' tail (its
//                    buckets, the cool-down paced by the slowest stage), and the stage whose
//                    path, optimizer and tail end last ends the step: what it adds beyond the
//                    slowest stage's counts here (stage 0 after the drain, or a stage beside a
//                    straggler's)
//                    Over a pipeline, no less than the busiest port's pipeline messages take:
//                    each direction of a stage's port (full duplex) carries 2·m·v messages
//                    (a forward and a backward per micro-batch and chunk, as the event's flows
//                    share it), after the fill before the stage and before the drain behind it
//                    and stage 0's optimizer
//   step_time_s    = compute_s + exposed_comm_s + bubble_s
// Stragglers (AnalyticOptions::stragglers): every compute kernel of a stage that holds one runs
// its slowdown times longer (the largest in the stage): the stage's TP, CP, EP and DP groups
// wait for that GPU at every collective, so the stage moves at its pace, and through the
// schedule so does the pipeline when that stage is the slowest.
// Slow links (AnalyticOptions::slow_links): a collective, all-to-all or pipeline send whose group
// holds a GPU with a slow link of the class it runs over (its NIC across scale-up domains, its
// scale-up port inside one) moves its bytes at that link's fraction of the rate, its latency
// unchanged, as the event simulation's flow is paced by its slowest port: bytes time / fraction,
// where latency is a 1-byte call's time. The stage holding the GPU takes its slowest link of each
// class for every group of that class (its TP, CP, EP, DP and expert-DP groups), and a send
// between two stages the slower of their fractions.
// Models the workload builder does not describe are probed as the nearest one it does: an MoE
// layer as a dense layer of ffn width top_k·expert_ffn_hidden (+ shared experts), MLA as
// attention with the model's heads and head_dim.
// With run.assumed_mfu set, step_time_s = model FLOPs / (GPUs · peak · MFU) instead (the seed
// chapter's Exercise 4 method) and the breakdown is not modelled.
#pragma once

#include <optional>
#include <vector>

#include "simrun/models/counts.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/collectives/efficiency.hpp"
#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/memory/run_cost.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/scenario/degraded.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// What the estimate reads. Everything but the run defaults and the FLOP convention is the event
// simulation's own description (SimulateOptions): analytic_options() copies it from there.
struct AnalyticOptions {
  EfficiencyDefaults efficiency;             // collective link fractions and α (as StepSimOptions::comm)
  WorkloadOptions workload;                  // framework behaviour: overlaps, buckets, kernels, recompute
  std::optional<ComputeParams> compute;      // default: default_compute_params(gpu)
  Calibration calibration;                   // per GPU kind overrides (--calibration)
  std::optional<PipelineSchedule> schedule;  // default: default_schedule(layout)
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
StepFlops step_flops(const ModelSpec& m, const Layout& layout, AttentionFlops convention);

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
  double ep_comm_s = 0;      // MoE dispatch/combine all-to-alls per micro-batch
  double ep_exposed_s = 0;   // of which the compute stream waits for
  double forward_exposed_s = 0;  // of the TP/CP/EP waits, those before forward kernels
  double optimizer_s = 0;  // once per step
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
  BreakdownReport breakdown;
  double step_time_s = 0;
};

StepTimeEstimate estimate_step_time(const Scenario& s, const StepFlops& flops,
                                    const AnalyticOptions& options);

// The full analytic report (fidelity "analytic"): every Report field, warnings, explanations.
// Throws InputError when the scenario asks for something the GPU cannot do (no peak for the
// precision).
Report estimate(const Scenario& s);
Report estimate(const Scenario& s, const AnalyticOptions& options);

// The compute model both fidelities time kernels with: default_compute_params(gpu) (or
// options.compute) with the calibration's overrides for the GPU kind.
ComputeModel analytic_compute_model(const Scenario& s, const AnalyticOptions& options);


}  // namespace simrun
