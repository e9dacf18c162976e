// Pieces of the workload outside any pipeline schedule (workload.hpp: probe_micro_batch,
// optimizer_program): the builder's own StageBuilder run on a two-layer, one-micro-batch slice,
// or on one stage with no slots, so the analytic model times the same ops as the event engine.
#include <algorithm>

#include "host_work.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "workload_builder.hpp"

namespace simrun {

namespace {

// The probes' slice: the model's first two layers (one for a one-layer model), pp 1, one chunk,
// `micro_batches` micro-batches per step, their GEMMs at the recipe's precision or at 16 bits.
StageProgram probe_slice(const Scenario& scenario, const WorkloadOptions& options, int64_t micro_batches,
                         const std::vector<PipelineSlot>& slots, ProbeGemms gemms = ProbeGemms::recipe) {
  Scenario slice = scenario;
  slice.model.layers = std::min<int64_t>(2, std::max<int64_t>(1, scenario.model.layers));
  Layout& l = slice.layout;
  l.pp = 1;
  l.virtual_stages = 1;
  l.pipeline_schedule.reset();
  l.global_batch = l.micro_batch * l.dp * micro_batches;
  const std::vector<int64_t> layers_per_chunk{slice.model.layers};
  detail::StageBuilder::Shared shared(slice, options, layers_per_chunk, 1, micro_batches);
  shared.first_bf16_layer = gemms == ProbeGemms::kept_bf16 ? 0 : slice.model.layers;
  detail::StageBuilder builder(shared, 0);
  builder.build(slots, PipelineSchedule::one_f_one_b);
  StageProgram program = builder.take();
  detail::mark_host_work(program, slice, options);
  return program;
}

}  // namespace

StageProgram probe_micro_batch(const Scenario& scenario, const WorkloadOptions& options, ProbeGemms gemms) {
  return probe_slice(scenario, options, 1, {PipelineSlot{true, 0, 0}, PipelineSlot{false, 0, 0}}, gemms);
}

StageProgram probe_two_micro_batches(const Scenario& scenario, const WorkloadOptions& options,
                                     ProbePairing pairing) {
  const bool paired = pairing == ProbePairing::paired;
  return probe_slice(scenario, options, 2,
                     {PipelineSlot{true, 0, 0}, PipelineSlot{false, 0, 0, paired}, PipelineSlot{true, 1, 0},
                      PipelineSlot{false, 1, 0}});
}

StageProgram optimizer_program(const Scenario& scenario, const WorkloadOptions& options,
                               const std::vector<int64_t>& layers_per_chunk, int64_t v, int64_t stage,
                               PipelineSchedule schedule) {
  const int64_t m = std::max<int64_t>(1, scenario.layout.num_microbatches());
  if (schedule != PipelineSchedule::dualpipe)
    schedule = v > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
  const detail::StageBuilder::Shared shared(scenario, options, layers_per_chunk, v, m, schedule);
  detail::StageBuilder builder(shared, stage);
  builder.build({}, schedule);
  StageProgram program = builder.take();
  detail::mark_host_work(program, scenario, options);
  return program;
}

}  // namespace simrun
