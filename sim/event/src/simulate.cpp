// Scenario → Report through the event simulation; see simulate.hpp.
#include "simrun/sim/event/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "simrun/common/error.hpp"
#include "simrun/models/counts.hpp"
#include "simrun/sim/analytic/agreement_envelope.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/memory/explain.hpp"
#include "simrun/sim/memory/run_cost.hpp"
#include "simrun/sim/report/step_metrics.hpp"

namespace simrun {
namespace {

// A stage's memory with the in-flight activations its schedule reached (the builder counts
// layer-micro-batches; the embedding holds at most one input per chunk-0 micro-batch in flight).
StageMemory stage_memory(const Scenario& sc, const Workload& w, const StageProgram& p,
                         const MemoryDefaults& md) {
  const Layout& l = sc.layout;
  StageParams params;
  params.layers = static_cast<int64_t>(p.layers.size());
  params.dense = p.params - p.expert_params;
  params.experts = p.expert_params;
  params.has_embedding = p.stage == 0;
  params.has_output = p.stage == l.pp - 1;
  const double micro_batches = double(std::min<int64_t>(p.max_in_flight_chunks, w.micro_batches));
  return simrun::stage_memory(sc, md, p.stage, params, {micro_batches, double(p.max_in_flight_layers)});
}

// Refuses a step beyond what the event simulation handles in seconds and gigabytes, or beyond
// its int64 ns clock.
void refuse_beyond_event_bounds(const Scenario& sc, const SimulateOptions& options) {
  const Layout& l = sc.layout;
  // Layer passes (kMaxEventLayerPasses) and, with every rank simulated, with the ranks per stage:
  // beyond these bounds a step takes minutes and gigabytes (llama3-405b on 16,384 GPUs --full:
  // 2.1M rank passes, ~30 s).
  constexpr double kMaxRankLayerPasses = double(1 << 22);
  const double passes = event_layer_passes(sc.model, l);
  if (passes > kMaxEventLayerPasses)
    throw InputError(sc.file, "layout.global_batch",
                     fmt::format("{} micro-batches x {} layers is {:.3g} layer passes per step, beyond the "
                                 "{:.3g} the event simulation handles (raise micro_batch or dp, lower "
                                 "global_batch, or use `simrun estimate`)",
                                 l.num_microbatches(), sc.model.layers, passes, kMaxEventLayerPasses));
  const double rank_passes = passes / double(l.pp) * double(l.world_size());
  if (options.step.scope == SimulationScope::full && rank_passes > kMaxRankLayerPasses)
    throw InputError(
        "step", "scope",
        fmt::format("simulating every one of {} ranks is {:.3g} rank-layer passes, beyond the "
                    "{:.3g} the event simulation handles (simulate representative ranks "
                    "only, without stragglers or slow links, or use a smaller cluster or global_batch)",
                    l.world_size(), rank_passes, kMaxRankLayerPasses));

  // The event clock is int64 ns (~292 years). The parser bounds a step's FLOPs, but a
  // communication-bound step (ZeRO-3 gathers of a 1e14-parameter embedding per micro-batch over
  // a 64:1 oversubscribed fabric) can still reach 1e9-1e10 s. The closed-form estimate models
  // the same traffic, the stragglers and the slow links: refuse steps it puts beyond 1e8 s (the
  // clock's range is 92 times that).
  {
    Scenario probe = sc;
    probe.run.assumed_mfu.reset();  // the modelled step time, not an assumed one
    const double worst = estimate(probe, analytic_options(options)).step_time_s;
    if (!(worst <= 1e8))
      throw InputError(sc.file, "layout",
                       fmt::format("one step would take about {:.3g} s (the closed-form estimate, with "
                                   "stragglers and slow links), beyond the 1e8 s the event simulation "
                                   "handles (use `simrun estimate`, or a smaller model or batch)",
                                   worst));
  }
}

// Memory per stage with the schedule's in-flight micro-batches, and each stage's traced rank that
// finishes last; the report takes the worst stage's memory (returned for --explain).
StageMemory stage_reports(const Scenario& sc, const SimulateOptions& options, SimulationOutput& out) {
  const Workload& w = out.workload;
  const StepResult& st = out.step;
  Report& r = out.report;
  double worst = -1;
  StageMemory worst_memory;
  for (const StageProgram& p : w.stages) {
    StageReport sr;
    sr.stage = p.stage;
    sr.layers = static_cast<int64_t>(p.layers.size());
    sr.params = p.params;
    sr.in_flight_micro_batches = p.max_in_flight_micro_batches;
    const StageMemory memory = stage_memory(sc, w, p, options.memory);
    sr.memory = memory_report(sc, memory);
    // The stage's traced rank that finishes last (its representative, unless a straggler or
    // a slow link under --full holds the stage back).
    bool found = false;
    for (const RankBreakdown& rb : st.ranks)
      if (rb.stage == p.stage && (!found || rb.finish_s > sr.time.finish_s)) {
        sr.time = rb;
        found = true;
      }
    if (sr.memory.peak_bytes_per_gpu > worst) {
      worst = sr.memory.peak_bytes_per_gpu;
      r.memory = sr.memory;
      worst_memory = memory;
    }
    out.stages.push_back(sr);
  }
  return worst_memory;
}

// Explanations (--explain): the step and its breakdown from the rank that finishes last, the
// rest as the analytic estimate explains it.
void explain_event(const Scenario& sc, const SimulateOptions& options, const ComputeModel& compute,
                   const StageMemory& worst_memory, const RunTotals& run, double peak,
                   SimulationOutput& out) {
  const Layout& l = sc.layout;
  const GpuSpec& gpu = sc.cluster.gpu;
  const Workload& w = out.workload;
  const StepResult& st = out.step;
  Report& r = out.report;
  const RankBreakdown& crit = st.ranks.at(st.critical);
  const BreakdownReport& b = r.breakdown;
  const std::string critical = fmt::format("rank {} (stage {})", crit.rank, crit.stage);
  detail::explain(
      r, "step_time_s", r.step_time_s, "s",
      "compute_s + exposed_comm_s + bubble_s of the rank that finishes last (its last task's end)",
      fmt::format("{}: compute_s={:.4g}, exposed_comm_s={:.4g}, bubble_s={:.4g}; {} schedule, {} "
                  "micro-batches, {} ranks simulated, {} tasks, {} events",
                  critical, b.compute_s, b.exposed_comm_s, b.bubble_s, to_string(w.schedule), w.micro_batches,
                  st.simulated_ranks, st.tasks, st.events));
  const ComputeParams& cp = compute.params();
  detail::explain(
      r, "breakdown.compute_s", b.compute_s, "s",
      "the busy time of its compute stream: every op of its program timed by ComputeModel::op_seconds "
      "(roofline × shape efficiency + launch), slowed while DP/PP kernels share the SMs, and the kernels' "
      "waits "
      "for the host to issue them (docs/model.md \"Host overhead\")",
      fmt::format("{}: forward={:.4g} s, backward={:.4g} s, recompute={:.4g} s, optimizer={:.4g} s; "
                  "gemm_max={}, fp8_gemm_max={}, attn_fwd_max={}, attn_bwd_max={}, mem_bw_fraction={}, "
                  "launch={:.3g} s ({})",
                  critical, b.forward_s, b.backward_s, b.recompute_s, b.optimizer_s, cp.gemm_max,
                  cp.fp8_gemm_max, cp.attn_fwd_max, cp.attn_bwd_max, cp.mem_bw_fraction, cp.launch_overhead_s,
                  options.calibration.has_gpu(gpu.id) ? "calibrated" : "defaults") +
          host_overhead_text(w.host, crit.host_wait_s, 0.0));
  detail::explain(
      r, "breakdown.exposed_comm_s", b.exposed_comm_s, "s",
      "the time its compute stream waited for a collective or message: TP + PP + DP + CP + EP exposed "
      "(each collective timed by the NCCL model on the cluster graph, sharing ports with the others "
      "in flight)",
      fmt::format("{}: exposed of total — TP {:.4g} of {:.4g} s, PP {:.4g} of {:.4g} s, DP {:.4g} of "
                  "{:.4g} s, CP {:.4g} of {:.4g} s, EP {:.4g} of {:.4g} s",
                  critical, b.tp_exposed_s, b.tp_comm_s, b.pp_exposed_s, b.pp_comm_s, b.dp_exposed_s,
                  b.dp_comm_s, b.cp_exposed_s, b.cp_comm_s, b.ep_exposed_s, b.ep_comm_s));
  const int64_t v =
      slot_order(w.schedule, l.virtual_stages) == PipelineSchedule::interleaved ? l.virtual_stages : 1;
  detail::explain(
      r, "breakdown.bubble_s", b.bubble_s, "s",
      "the time its compute stream idled on the schedule itself: pipeline fill and drain, waiting "
      "for a peer stage's compute",
      fmt::format("{}: pp={}, virtual_stages={}, micro-batches={}; (pp − 1)/(v·m) of the compute would "
                  "be {:.4g} s",
                  critical, l.pp, v, w.micro_batches,
                  double(l.pp - 1) / double(v * w.micro_batches) * b.compute_s));
  detail::explain_ep_exchange(sc, options.workload, r);
  detail::explain_throughput(sc, count_flops_per_sequence(sc.model, AttentionFlops::causal),
                             AttentionFlops::causal, peak, r);
  detail::explain_memory(sc, worst_memory, options.memory, r);
  detail::explain_run(sc, run, options.run, r);
}

// The compute time of the mean GPU: each stage's reported ranks are its representative, which
// stands for the stage's GPUs at their pace, and its stragglers, each one GPU at its own.
double busy_compute_s(const StepResult& st, const std::vector<Straggler>& stragglers, const Layout& l) {
  const double per_stage = double(l.world_size()) / double(l.pp);
  double busy = 0;
  for (int64_t stage = 0; stage < l.pp; ++stage) {
    double slow_sum = 0, slow_count = 0, pace = -1;
    for (const RankBreakdown& rank : st.ranks) {
      if (rank.stage != stage) continue;
      const bool straggler = std::any_of(stragglers.begin(), stragglers.end(),
                                         [&](const Straggler& s) { return s.rank == rank.rank; });
      if (straggler) {
        slow_sum += rank.compute_s();
        ++slow_count;
      } else if (pace < 0) {
        pace = rank.compute_s();
      }
    }
    if (pace < 0) pace = slow_count > 0 ? slow_sum / slow_count : 0.0;  // the representative straggles
    busy += (slow_sum + (per_stage - slow_count) * pace) / (per_stage * double(l.pp));
  }
  return busy;
}

}  // namespace

BreakdownReport stage_breakdown(const RankBreakdown& rank, double step_time_s) {
  BreakdownReport b;
  b.stage = rank.stage;
  b.forward_s = rank.forward_s;
  b.backward_s = rank.backward_s;
  b.recompute_s = rank.recompute_s;
  b.optimizer_s = rank.optimizer_s;
  b.compute_s = rank.compute_s();
  auto at = [](const std::array<double, kGroupKindCount>& a, GroupKind g) {
    return a[static_cast<size_t>(g)];
  };
  // Gradient and parameter traffic of the DP, DP×CP and expert-DP groups counts as DP.
  auto dp = [&](const std::array<double, kGroupKindCount>& a) {
    return at(a, GroupKind::dp) + at(a, GroupKind::dp_cp) + at(a, GroupKind::edp);
  };
  // a2a+p2p's two levels count as CP.
  auto cp = [&](const std::array<double, kGroupKindCount>& a) {
    return at(a, GroupKind::cp) + at(a, GroupKind::cp_a2a) + at(a, GroupKind::cp_ring);
  };
  // A two-level all-to-all's levels count as EP.
  auto ep = [&](const std::array<double, kGroupKindCount>& a) {
    return at(a, GroupKind::ep) + at(a, GroupKind::ep_intra) + at(a, GroupKind::ep_inter);
  };
  b.tp_comm_s = at(rank.comm_s, GroupKind::tp);
  b.pp_comm_s = at(rank.comm_s, GroupKind::pp);
  b.dp_comm_s = dp(rank.comm_s);
  b.cp_comm_s = cp(rank.comm_s);
  b.ep_comm_s = ep(rank.comm_s);
  b.tp_exposed_s = at(rank.exposed_s, GroupKind::tp);
  b.pp_exposed_s = at(rank.exposed_s, GroupKind::pp);
  b.dp_exposed_s = dp(rank.exposed_s);
  b.cp_exposed_s = cp(rank.exposed_s);
  b.ep_exposed_s = ep(rank.exposed_s);
  for (double e : rank.exposed_s) b.exposed_comm_s += e;
  // A rank that finishes before the step ends idles until it does: the pipeline's drain.
  b.bubble_s = rank.bubble_s + std::max(0.0, step_time_s - rank.finish_s);
  return b;
}

AnalyticOptions analytic_options(const SimulateOptions& simulate) {
  AnalyticOptions o;
  o.efficiency = simulate.step.comm;
  o.workload = simulate.workload;
  o.compute = simulate.compute;
  o.calibration = simulate.calibration;
  o.overlap_slowdown = simulate.step.overlap_slowdown;
  o.stragglers = simulate.step.stragglers;
  o.slow_links = simulate.step.slow_links;
  o.memory = simulate.memory;
  o.run = simulate.run;
  return o;
}

SimulateOptions framework_simulate_options(const Scenario& sc) {
  // The estimate's reading of the profile (framework_options), one for both fidelities.
  const AnalyticOptions framework = framework_options(sc);
  SimulateOptions options;
  options.workload = framework.workload;
  options.memory = framework.memory;
  return options;
}

SimulationOutput simulate(const Scenario& given, const SimulateOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const Scenario sc = calibrated_scenario(given, options.calibration);
  const Layout& l = sc.layout;
  const GpuSpec& gpu = sc.cluster.gpu;
  const double peak = training_peak_flops_per_s(sc);

  if (options.step.progress) options.step.progress(SimulationProgress{});
  refuse_beyond_event_bounds(sc, options);

  SimulationOutput out;
  const ComputeModel compute = calibrated_compute_model(gpu, options.calibration, options.compute);
  out.workload = build_workload(sc, options.workload, default_schedule(l));
  out.cost = cost_workload(out.workload, compute);
  out.step = simulate_step(sc, out.workload, out.cost, options.step, options.calibration);
  const Workload& w = out.workload;
  const StepResult& st = out.step;

  Report& r = out.report;
  r.fidelity = "event";
  const ParamCounts counts = count_params(sc.model);
  r.params = counts.total();
  r.active_params = counts.active(sc.model);
  // The workload counts its tasks' FLOPs in Megatron's causal convention.
  fill_step_rates(sc, st.step_time.seconds(),
                  {w.model_flops_per_step, w.hardware_flops_per_step, AttentionFlops::causal}, r);
  r.warnings = w.warnings;
  for (const auto& warning : st.warnings) r.warnings.push_back(warning);
  if (auto unmatched = options.calibration.unmatched_warning(sc.cluster.gpu.id))
    r.warnings.push_back(*unmatched);
  r.degraded = describe_degraded(sc, options.step.stragglers, options.step.slow_links);
  if (sc.run.assumed_mfu)
    r.warnings.push_back(
        fmt::format("run.assumed_mfu {:.3f} not used: the event simulation models the step "
                    "time (simrun estimate applies an assumed MFU)",
                    *sc.run.assumed_mfu));

  // Breakdown: the rank that finishes last (its compute + exposed comm + bubble = step time).
  r.breakdown = stage_breakdown(st.ranks.at(st.critical), r.step_time_s);

  const StageMemory worst_memory = stage_reports(sc, options, out);
  if (!r.memory.fits) r.warnings.push_back("does not fit: " + memory_shortfall_text(r.memory));
  // Outside the estimate's measured envelope, both fidelities say so, judged by the estimate's own
  // numbers (microseconds) as `simrun estimate` judges them.
  const AnalyticOptions analytic = analytic_options(options);
  out.estimate = estimate(sc, analytic);
  if (auto outside = agreement_warning(sc, analytic, out.estimate)) r.warnings.push_back(*outside);

  // Run totals, as the analytic model computes them (checkpoint = weights + optimizer states).
  const RunTotals run = fill_run_report(sc, bytes_per_param(l, options.memory.convention), options.run,
                                        busy_compute_s(st, options.step.stragglers, l) / r.step_time_s, r);

  explain_event(sc, options, compute, worst_memory, run, peak, out);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace simrun
