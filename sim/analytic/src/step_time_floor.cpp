// The floor under the closed-form step time (analytic.hpp StepTimeFloor; docs/planner.md
// "Bounds"): the probes' kernels alone, stage by stage, with the pipeline's fill and drain.
#include <algorithm>
#include <memory>

#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "step_time_estimator.hpp"

namespace simrun {

struct StepTimeFloor::Kernels {
  detail::Probes probes;  // kernel times only
  int64_t layers = 0;
  detail::LayerKinds kinds;
  bool assumed_mfu = false;  // the step is set from it, not timed
};

StepTimeFloor::StepTimeFloor(const Scenario& sc, const AnalyticOptions& options) {
  auto k = std::make_shared<Kernels>();
  const detail::ProbePrograms programs =
      detail::probe_programs(sc, options.workload, analytic_compute_model(sc, options));
  if (programs.dense) k->probes.dense = detail::kernel_times(*programs.dense, *programs.dense_cost);
  if (programs.moe) {
    k->probes.moe = detail::kernel_times(*programs.moe, *programs.moe_cost);
    if (!programs.dense) {
      k->probes.dense.embedding = k->probes.moe.embedding;
      k->probes.dense.head = k->probes.moe.head;
    }
  }
  if (programs.dense_bf16)
    k->probes.dense_bf16 = detail::kernel_times(*programs.dense_bf16, *programs.dense_bf16_cost);
  if (programs.moe_bf16)
    k->probes.moe_bf16 = detail::kernel_times(*programs.moe_bf16, *programs.moe_bf16_cost);
  k->layers = sc.model.layers;
  k->kinds = detail::layer_kinds(sc);
  k->assumed_mfu = sc.run.assumed_mfu.has_value();
  m_kernels = std::move(k);
}

StepTimeFloor::Pipeline StepTimeFloor::pipeline(const Layout& l) const {
  const Kernels& k = *m_kernels;
  Pipeline out;
  out.schedule = default_schedule(l);
  const int64_t v_chunks = l.pp > 1 ? stage_chunks(out.schedule, l.virtual_stages) : 1;
  out.chunks = v_chunks;
  const detail::ChunkSplit split = detail::split_chunks(k.layers, l, out.schedule, v_chunks);
  // A paired slot runs shorter than its kernels (the estimate takes off what the pairing hides),
  // DualPipe's micro-batches enter from both ends, and a split the workload cannot make has no
  // schedule to follow: the stage's own kernels alone.
  out.chained = l.pp > 1 && !pairs_forward_and_backward(out.schedule) &&
                out.schedule != PipelineSchedule::dualpipe && split.split_v == v_chunks;
  auto kernels = [&](const detail::PieceTime& p) {
    return k.assumed_mfu ? 0.0 : p.forward_s + p.backward_s + p.recompute_s;
  };
  for (int64_t stage = 0; stage < l.pp; ++stage) {
    const detail::StagePieces p = detail::stage_pieces(k.probes, split, k.kinds, out.schedule, stage, l.pp);
    out.stage_s.push_back(kernels(p.micro_batch));
    out.entry_s.push_back(kernels(p.chunks.front()));
  }
  return out;
}

// Stage j runs its m micro-batches' kernels after the first one's forward through the stages
// before it (entering each by its first chunk) and before the last one's backward back through
// them (leaving each by its first chunk, the last to run a micro-batch's backward): a path of
// the schedule the estimate plays (time_fill_and_drain), each chunk-step at its kernels alone.
// Equal stages: (m + p − 1) stage-steps, Narayanan's 1F1B.
double StepTimeFloor::step_time_s(const Pipeline& p, int64_t microbatches) {
  const int64_t pp = int64_t(p.stage_s.size());
  const int64_t m = std::max<int64_t>(1, microbatches);
  const bool chained = p.chained && schedule_completes(p.schedule, pp, m, p.chunks);
  double floor = 0, before = 0;
  for (int64_t j = 0; j < pp; ++j) {
    floor = std::max(floor, (chained ? before : 0.0) + double(m) * p.stage_s[size_t(j)]);
    before += p.entry_s[size_t(j)];
  }
  return floor;
}

double StepTimeFloor::step_time_s(const Layout& l) const {
  return step_time_s(pipeline(l), l.num_microbatches());
}

}  // namespace simrun
