// The planner's search space (docs/planner.md "The space"): for each GPU type, framework profile
// and precision a base scenario, and over it every shape — TP, PP with its layer split, virtual
// stages, CP, EP, expert TP, micro-batch, ZeRO stage, recompute — each with the data-parallel
// sizes that make a whole number of nodes within [min_gpus, max_gpus] and divide the global batch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simrun/sim/planner/plan_request.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun::planner {

// A GPU type × framework × precision: the scenario every point of it starts from (one node, the
// request's model, tokens and price), or why none of its points can run.
struct PlanBase {
  int32_t offer = 0;
  int32_t framework = 0;
  std::string precision;
  std::optional<Scenario> scenario;
  std::string unusable;  // the prune reason of all its points (e.g. "precision_unsupported")
  int64_t node_gpus = 8;
};

// Every layout dimension but the data-parallel size.
struct PlanShape {
  int32_t base = 0;
  int64_t tp = 1, pp = 1, virtual_stages = 1, cp = 1, ep = 1, expert_tp = 1, micro_batch = 1;
  int zero_stage = 1;
  Recompute recompute = Recompute::none;
  PipelineSplit split = PipelineSplit::even;
  int64_t model_parallel() const { return tp * pp * cp; }
};

// One data-parallel size of a shape, with the global batch it runs.
struct DataParallelChoice {
  int64_t dp = 1;
  int64_t global_batch = 1;
};

struct PlanSpace {
  ModelSpec model;                      // as the request's scenarios resolve it
  double params = 0;                    // the model's parameters (count_params)
  std::vector<std::string> frameworks;  // profile ids as the request gives them
  std::vector<PlanBase> bases;
  std::vector<PlanShape> shapes;
  int64_t size = 0;  // points: Σ over shapes of their data-parallel choices
  // The lowest ZeRO stage searched: with no data parallelism to shard over, the stages are one
  // layout, searched at this one.
  int lowest_zero_stage = 0;
};

PlanSpace build_space(const PlanRequest& request, const Catalogs& catalogs);

// The global batches in sequences a request allows, [lo, hi]: global_batch alone; a batch_tokens
// range the whole sequences inside it; one batch_tokens value the nearest whole number of
// sequences. Never over kMaxGlobalBatch (the scenario's rule).
std::pair<int64_t, int64_t> batch_sequences(const PlanRequest& request, int64_t seq_len);

// The data-parallel sizes of a shape (whole nodes in range, the batch divided into micro-batches).
std::vector<DataParallelChoice> data_parallel_choices(const PlanRequest& request, const PlanSpace& space,
                                                      const PlanShape& shape);

// The point's scenario: the base's, its cluster of the point's size and its full layout (the
// scenario parser's derived fields included: sequence parallelism with tp > 1, the EP all-to-all's
// NVLink level).
Scenario point_scenario(const PlanBase& base, const PlanShape& shape, const DataParallelChoice& choice);
// The same in place: `s`, its base's scenario or an earlier point's of the same base, becomes the
// point's (a copy of the base per point is the costliest part of checking it).
void set_point(Scenario& s, const PlanShape& shape, const DataParallelChoice& choice);

}  // namespace simrun::planner
