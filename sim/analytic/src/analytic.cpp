// The analytic model: FLOPs, memory and run totals of one layout, and the report around the
// step time (step_time_estimate.cpp); formulas and sources in analytic.hpp (time),
// memory_model.hpp (memory), run_cost.hpp (run totals) and collective_cost.hpp (collectives).
#include "simrun/sim/analytic/analytic.hpp"

#include <fmt/format.h>

#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/analytic/agreement_envelope.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/memory/explain.hpp"
#include "simrun/sim/report/step_metrics.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/schedule.hpp"

namespace simrun {

StepFlops step_flops(const ModelSpec& m, const Layout& layout, AttentionFlops convention,
                     SelectiveRecompute selective) {
  StepFlops f;
  f.per_sequence = count_flops_per_sequence(m, convention);
  const double batch = double(layout.global_batch);
  f.model = f.per_sequence.total() * batch;
  // What the recompute re-runs, per sequence, as the workload builder re-runs it: one more forward
  // (⅓ of fwd+bwd) of the transformer layers (full), of every odd layer (torchtitan's selective
  // AC), of the attention core (Megatron's selective), or of the MLA up-projections (DeepSeek-V3's;
  // its norms and SwiGLU re-run no GEMM); never the logits. Its routed experts apart, for their
  // padding.
  double recomputed = 0, recomputed_routed = 0;
  switch (layout.recompute) {
    case Recompute::none:
      break;
    case Recompute::full:
      recomputed = (f.per_sequence.dense_gemms + f.per_sequence.attention_core) / 3.0;
      recomputed_routed = f.per_sequence.routed_experts / 3.0;
      break;
    case Recompute::selective:
      switch (selective) {
        case SelectiveRecompute::attention_core:
          recomputed = f.per_sequence.attention_core / 3.0;
          break;
        case SelectiveRecompute::every_other_layer:
          for (int64_t layer = 1; layer < m.layers; layer += 2) {
            const FlopCounts one = count_layer_flops(m, layer, convention);
            recomputed += (one.dense_gemms + one.attention_core) / 3.0;
            recomputed_routed += one.routed_experts / 3.0;
          }
          break;
        case SelectiveRecompute::norm_mla_up_swiglu:
          recomputed = mla_up_projection_forward_flops(m) * double(m.layers);
          break;
      }
      break;
  }
  f.recompute = recomputed * batch;
  // Padded to capacity, the experts run moe_load times the routed tokens, recomputed ones too.
  f.padding = (f.per_sequence.routed_experts + recomputed_routed) * (layout.moe_load() - 1.0) * batch;
  f.hardware = f.model + f.recompute + f.padding;
  return f;
}

ComputeModel analytic_compute_model(const Scenario& s, const AnalyticOptions& options) {
  return calibrated_compute_model(s.cluster.gpu, options.calibration, options.compute);
}

namespace {

// The layout's caveats (layout_rules.hpp, as the event simulation states them), then the
// estimate's own: an interleaved order that cannot complete, memory, assumed MFU, MFU (goodput's
// is the run totals', fill_run_report, in both fidelities).
void add_estimate_warnings(const Scenario& sc, const AnalyticOptions& options, int64_t worst_stage,
                           Report& r) {
  const Layout& l = sc.layout;
  const PipelineSchedule schedule = default_schedule(l);
  const std::vector<std::string> layout_caveats = messages(layout_warnings(sc, schedule));
  r.warnings.insert(r.warnings.begin(), layout_caveats.begin(), layout_caveats.end());
  if (auto unmatched = options.calibration.unmatched_warning(sc.cluster.gpu.id))
    r.warnings.push_back(*unmatched);
  if (slot_order(schedule, l.virtual_stages) == PipelineSchedule::interleaved && l.pp > 1 &&
      l.num_microbatches() >= l.pp &&
      !schedule_completes(schedule, l.pp, l.num_microbatches(), l.virtual_stages))
    r.warnings.push_back(fmt::format(
        "the interleaved schedule cannot complete with {} micro-batches on pp {} with {} virtual stages "
        "(Megatron's order deadlocks on the last, partial group; the event simulation refuses it): use a "
        "multiple of pp",
        l.num_microbatches(), l.pp, l.virtual_stages));
  if (auto unpaired = unpaired_schedule_warning(schedule, l.pp, l.num_microbatches(),
                                                stage_chunks(schedule, l.virtual_stages)))
    r.warnings.push_back(*unpaired);
  if (!r.memory.fits)
    r.warnings.push_back(
        fmt::format("does not fit: {} (stage {})", memory_shortfall_text(r.memory), worst_stage));
  if (sc.run.assumed_mfu)
    r.warnings.push_back(
        fmt::format("step time from the assumed MFU {:.3f} (run.assumed_mfu); the breakdown is not "
                    "modelled{}",
                    *sc.run.assumed_mfu, options.stragglers.empty() ? "" : ", nor the stragglers"));
  if (r.mfu > 0.75)
    r.warnings.push_back(fmt::format("MFU {:.2f} is above what published runs reach (≤ 0.6)", r.mfu));
}

// The --explain entries of the step time and its breakdown: formula and inputs.
void explain_step_time(const Scenario& sc, const AnalyticOptions& options, const StepFlops& flops,
                       const StepTimeEstimate& time, double peak, Report& r) {
  const Layout& l = sc.layout;
  const GpuSpec& gpu = sc.cluster.gpu;
  auto explain = [&](std::string key, double value, std::string unit, std::string formula,
                     std::string inputs) {
    detail::explain(r, std::move(key), value, std::move(unit), std::move(formula), std::move(inputs));
  };
  const BreakdownReport& b = r.breakdown;
  const ComputeParams cparams = analytic_compute_model(sc, options).params();
  if (sc.run.assumed_mfu) {
    explain("step_time_s", r.step_time_s, "s", "flops_per_step / (num_gpus · peak · assumed_mfu)",
            fmt::format("flops_per_step={:.4g}, num_gpus={}, peak={:.4g} FLOP/s ({}), assumed_mfu={}",
                        flops.model, l.world_size(), peak, to_string(l.precision), *sc.run.assumed_mfu));
  } else {
    explain("step_time_s", r.step_time_s, "s", "compute_s + exposed_comm_s + bubble_s",
            fmt::format("compute_s={:.4g}, exposed_comm_s={:.4g}, bubble_s={:.4g}", b.compute_s,
                        b.exposed_comm_s, b.bubble_s));
    const StageTime& slowest = time.stages[size_t(time.slowest_stage)];
    explain(
        "breakdown.compute_s", b.compute_s, "s",
        "m · (forward + backward + recompute of one micro-batch on the slowest stage) + optimizer + "
        "overlap slowdown; each of the workload builder's ops timed by ComputeModel::op_seconds "
        "(roofline × shape efficiency + launch), and the kernels' waits for the host to issue them, no less "
        "than "
        "the busiest stage's host issue time (docs/model.md \"Host overhead\")",
        fmt::format(
            "m={}, stage={}, forward={:.4g} s, backward={:.4g} s, recompute={:.4g} s, optimizer={:.4g} s, "
            "overlap slowdown={:.4g} s; gemm_max={}, attn_fwd_max={}, attn_bwd_max={}, mem_bw_fraction={}, "
            "launch={:.3g} s ({}{}){}",
            time.microbatches, time.slowest_stage, slowest.forward_s, slowest.backward_s, slowest.recompute_s,
            b.optimizer_s, time.overlap_slowdown_s, cparams.gemm_max, cparams.attn_fwd_max,
            cparams.attn_bwd_max, cparams.mem_bw_fraction, cparams.launch_overhead_s,
            gpu.compute_defaults.origin.empty() ? "generic" : gpu.compute_defaults.origin,
            options.calibration.has_gpu(gpu.id) ? ", calibrated" : " defaults",
            slowest.compute_slowdown > 1
                ? fmt::format("; a straggler in the stage: every kernel {:.4g}x slower",
                              slowest.compute_slowdown)
                : std::string()) +
            host_overhead_text(
                options.workload.host,
                slowest.host_wait_s * time.microbatches + slowest.optimizer_host_wait_s + time.host_bound_s,
                time.host_bound_s));
    explain(
        "breakdown.exposed_comm_s", b.exposed_comm_s, "s",
        "m · (TP + CP + EP exposed per micro-batch) + their waits on links shared with DP traffic + PP "
        "exposed (1F1B: m exchanges with each of a stage's neighbours, a send and a receive passing each "
        "other, at the pace of the stage whose micro-batch with them takes longest, + each boundary's send "
        "twice in the fill and drain, 2(m + p − 1) sends on equal links for a middle stage, m + 2(p − 1) "
        "for an end one; interleaved: what the asynchronous sends add to the "
        "schedule's longest path) + DP exposed (NCCL's model, in a scale-up domain and across domains); "
        "over a slow link, its bytes at the link's fraction",
        fmt::format(
            "m={}, per-micro-batch={:.4g} s (tp total {:.4g} s/step), shared links={:.4g} s, pp "
            "exposed={:.4g} "
            "s of {:.4g} s (slowest send {:.4g} s), dp exposed={:.4g} s of {:.4g} s (grad {:.4g} s, "
            "params {:.4g} s{}){}",
            time.microbatches, time.mb_exposed_comm_s, b.tp_comm_s, time.shared_link_s, b.pp_exposed_s,
            b.pp_comm_s, time.pp_send_s, time.dp_exposed_s, b.dp_comm_s, time.dp_grad_s, time.dp_param_s,
            time.dp_calls > 0 ? fmt::format(", in {} DDP buckets", time.dp_calls) : std::string(),
            slowest.scale_up_fraction < 1 || slowest.scale_out_fraction < 1
                ? fmt::format("; slow links in the stage: scale-up at {:.4g}, NIC at {:.4g} of the rate",
                              slowest.scale_up_fraction, slowest.scale_out_fraction)
                : std::string()));
    explain(
        "breakdown.bubble_s", b.bubble_s, "s",
        "longest path through the schedule's order (each chunk-step at its chunk's forward or backward "
        "+ exposed TP/CP/EP per micro-batch) − the slowest stage's own work (equal stages: Narayanan's "
        "(p − 1)/v of a stage's micro-batch) + the pipeline hops on that path beyond the stage's own "
        "messages; each stage's last backward slowed beside its gradient reductions (interleaved "
        "DDP: a later chunk's one bucket beside the chunk-steps after its last backward); ZeRO-3 with "
        "pp > 1: each chunk's first forward unit by unit, each unit waiting on its own gather; ZeRO 0-2 "
        "with pp > 1: what the stage ending the step (its last backward, optimizer and own gradient "
        "reductions' tail ending last) adds; no less than the busiest port's pipeline messages take, "
        "one at a time, between the fill and the drain",
        fmt::format("pp={}, v={}, slowest stage={}, fill and drain={:.4g} s, hops={:.4g} s, stage ending the "
                    "step={:.4g} s, port bound adds {:.4g} s",
                    l.pp, l.virtual_stages, time.slowest_stage, time.fill_drain_s,
                    time.pp_exposed_s - b.pp_exposed_s, time.critical_tail_s, time.pipeline_port_s));
  }
}

}  // namespace

AnalyticOptions framework_options(const Scenario& s) {
  AnalyticOptions options;
  options.workload = s.framework.workload;
  options.memory = s.framework.memory;
  options.workload.grad_reduce_bytes =
      grad_reduce_bytes_at(options.workload, options.memory, s.layout.precision);
  return options;
}

Report estimate(const Scenario& s) { return estimate(s, AnalyticOptions{}); }

namespace {

// An estimate's numbers and what its warnings and explanations read.
struct Estimated {
  Report report;
  StepFlops flops;
  StepTimeEstimate time;
  RunTotals run;
  double peak = 0;
};

Estimated estimate_numbers_of(const Scenario& sc, const AnalyticOptions& options,
                              const MemoryEstimate& memory) {
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  if (l.num_microbatches() < 1)
    throw InputError(
        sc.file, "layout.global_batch",
        fmt::format("global_batch {} is smaller than micro_batch·dp = {} (make it a multiple of it)",
                    l.global_batch, l.micro_batch * l.dp));

  Estimated e;
  Report& r = e.report;
  r.fidelity = "analytic";
  const ParamCounts counts = count_params(m);
  r.params = counts.total();
  r.active_params = counts.active(m);

  e.flops = step_flops(m, l, options.flop_convention, options.workload.selective);
  e.peak = training_peak_flops_per_s(sc);
  const double n_gpus = double(l.world_size());
  r.memory = memory.report;

  e.time = estimate_step_time(sc, e.flops, options);
  double step_time_s = e.time.step_time_s;
  if (sc.run.assumed_mfu) {
    step_time_s = e.flops.model / (n_gpus * e.peak * *sc.run.assumed_mfu);
    r.breakdown = BreakdownReport{};
    r.breakdown.compute_s = step_time_s;
  } else {
    r.breakdown = e.time.breakdown;
    r.degraded = describe_degraded(sc, options.stragglers, options.slow_links);
  }
  fill_step_rates(sc, step_time_s, {e.flops.model, e.flops.hardware, options.flop_convention}, r);

  // Run totals. The checkpoint holds weights and optimizer states (not gradients). The busy
  // fraction is the slowest stage's, scaled by the stages' mean compute over its.
  double busy = r.breakdown.compute_s / step_time_s;
  if (!sc.run.assumed_mfu && !e.time.stages.empty()) {
    double mean = 0;
    for (const StageTime& st : e.time.stages) mean += st.compute_s() / double(e.time.stages.size());
    const double slowest = e.time.stages.at(size_t(e.time.slowest_stage)).compute_s();
    if (slowest > 0) busy *= mean / slowest;
  }
  e.run = fill_run_report(sc, bytes_per_param(l, options.memory.convention), options.run, busy, r);
  return e;
}

}  // namespace

Report estimate_numbers(const Scenario& sc, const AnalyticOptions& options, const MemoryEstimate& memory) {
  return estimate_numbers_of(sc, options, memory).report;
}

Report estimate(const Scenario& given, const AnalyticOptions& options) {
  const Scenario sc = calibrated_scenario(given, options.calibration);
  const MemoryEstimate memory = estimate_memory(sc, options.memory);
  Estimated e = estimate_numbers_of(sc, options, memory);
  Report& r = e.report;
  add_estimate_warnings(sc, options, memory.worst_stage, r);
  if (auto outside = agreement_warning(sc, options, r)) r.warnings.push_back(*outside);
  explain_step_time(sc, options, e.flops, e.time, e.peak, r);
  detail::explain_ep_exchange(sc, options.workload, r);
  detail::explain_throughput(sc, e.flops.per_sequence, options.flop_convention, e.peak, r);
  detail::explain_memory(sc, memory.stages[size_t(memory.worst_stage)], options.memory, r);
  detail::explain_run(sc, e.run, options.run, r);
  return std::move(r);
}

namespace detail {
namespace {

// Where the flex dispatcher's NVLink kernels move the tokens: the throughput that bounds them on
// this GPU (ProgramCost::comm_kernel_s), or that none is measured.
std::string dispatcher_kernel_note(const EpExchange& x, const GpuSpec& gpu) {
  if (!x.dispatcher_kernels) return "";
  const GpuSpec::FlexDispatcher& k = gpu.flex_dispatcher;
  if (k.dispatch_bytes_per_s <= 0)
    return fmt::format("; no measured throughput of those kernels on {}: timed on the fabric", gpu.id);
  return fmt::format(
      "; each all-to-all no faster than those kernels move the bytes a rank receives on {}: dispatch {:.0f} "
      "GB/s, combine {:.0f} GB/s ({})",
      gpu.id, k.dispatch_bytes_per_s / 1e9, k.combine_bytes_per_s / 1e9, k.source);
}

}  // namespace

void explain_ep_exchange(const Scenario& sc, const WorkloadOptions& workload, Report& r) {
  if (!sc.model.is_moe() || sc.layout.ep <= 1) return;
  const EpExchange x = ep_exchange(sc, workload);
  explain(r, "breakdown.ep_comm_s", r.breakdown.ep_comm_s, "s",
          "the MoE dispatch and combine all-to-alls (forward, backward, recomputed), each timed on its "
          "group's links; bytes = tokens · copies per token · hidden · bytes per element; two-level "
          "(DeepEP): the InfiniBand level's copies are the distinct destination domains, the NVLink "
          "level's the distinct destination ranks, expected under balanced routing (moe_routing.hpp)",
          fmt::format("dispatcher {}: {}{}", to_string(workload.host.moe_dispatcher), x.why,
                      dispatcher_kernel_note(x, sc.cluster.gpu)));
}

}  // namespace detail
}  // namespace simrun
