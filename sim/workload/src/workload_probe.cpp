// Pieces of the workload outside any pipeline schedule (workload.hpp: probe_micro_batch,
// optimizer_program): the builder's own StageBuilder run on a two-layer, one-micro-batch slice,
// or on one stage with no slots, so the analytic model times the same ops as the event engine.
#include <algorithm>

#include "simrun/sim/workload/workload.hpp"
#include "host_work.hpp"
#include "workload_builder.hpp"

namespace simrun {

StageProgram probe_micro_batch(const Scenario& scenario, const WorkloadOptions& options) {
  Scenario slice = scenario;
  slice.model.layers = std::min<int64_t>(2, std::max<int64_t>(1, scenario.model.layers));
  Layout& l = slice.layout;
  l.pp = 1;
  l.virtual_stages = 1;
  l.global_batch = l.micro_batch * l.dp;  // one micro-batch per step
  const std::vector<int64_t> layers_per_chunk{slice.model.layers};
  const detail::StageBuilder::Shared shared(slice, options, layers_per_chunk, 1, 1);
  detail::StageBuilder builder(shared, 0);
  builder.build({PipelineSlot{true, 0, 0}, PipelineSlot{false, 0, 0}}, PipelineSchedule::one_f_one_b);
  StageProgram program = builder.take();
  detail::mark_host_work(program, slice, options);
  return program;
}

StageProgram optimizer_program(const Scenario& scenario, const WorkloadOptions& options,
                               const std::vector<int64_t>& layers_per_chunk, int64_t v, int64_t stage) {
  const int64_t m = std::max<int64_t>(1, scenario.layout.num_microbatches());
  const detail::StageBuilder::Shared shared(scenario, options, layers_per_chunk, v, m);
  detail::StageBuilder builder(shared, stage);
  builder.build({}, v > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b);
  StageProgram program = builder.take();
  detail::mark_host_work(program, scenario, options);
  return program;
}

}  // namespace simrun
