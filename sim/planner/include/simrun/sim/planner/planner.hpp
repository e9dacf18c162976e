// `simrun plan`: which GPUs, how many and which layout train a model on its tokens fastest or
// cheapest, under a deadline or a budget.
//
// The search (docs/planner.md): every point of the space (search_space.hpp) is checked against
// the layout rules and the memory model (cheap: most points end there, each pruning reason
// counted), the survivors are timed by the closed-form estimate (`simrun estimate`) with their run
// totals (days and dollars with Young/Daly checkpoints and failures), the best top_k by the
// objective are re-run by the event simulation (`simrun simulate`) and ranked by its numbers.
// Rows whose objectives lie within kPlanTieTolerance of each other share a rank: the estimate
// cannot tell them apart. The Pareto front of days against dollars spans every GPU type and size.
//
// The work splits by "shape" (every layout dimension but the data-parallel size): threads take
// shapes one at a time, and under MPI each rank takes every ranks-th shape (PlanControl); the
// partial results merge in a fixed order, so the ranking does not depend on how the space was split.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/planner/plan_request.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

// Rows whose objective is within this fraction of a better row's share its rank: the closed-form
// estimate and the event simulation agree within 5% on uncongested layouts (agreement_envelope.hpp,
// the DESIGN's "within a few percent"), so a smaller gap is not a ranking.
inline constexpr double kPlanTieTolerance = 0.05;

// One evaluated point: a GPU type, a cluster size, a layout, and its numbers.
struct PlanPoint {
  int32_t offer = 0;      // index into PlanRequest::gpus
  int32_t framework = 0;  // index into PlanSpace::frameworks
  int64_t num_gpus = 0;
  Layout layout;
  std::string fidelity;  // "analytic" or "event"
  double step_time_s = 0;
  double mfu = 0;
  double tokens_per_s = 0;
  double peak_bytes_per_gpu = 0;
  double capacity_bytes = 0;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0;  // the step's parts
  double days = 0;
  double gpu_hours = 0;
  double cost_usd = 0;
  double energy_kwh = 0;
  double goodput = 0;
  int64_t rank = 0;  // in the ranking (ties share one); 0 outside it
  double objective(PlanObjective o) const { return o == PlanObjective::time ? days : cost_usd; }
  bool operator==(const PlanPoint&) const = default;
};

// Why a point left the search, counted per reason (e.g. "memory", "tp_divides_heads",
// "over_deadline"; from the event phase "memory_event" and "event_refused").
using PruneCounts = std::map<std::string, int64_t>;
// A step of more micro-batch layer passes than the event simulation re-runs (kMaxEventLayerPasses).
inline constexpr const char* kBeyondEventSimulation = "beyond_event_simulation";
// The reasons, most frequent first (equal counts by name).
std::vector<std::pair<std::string, int64_t>> by_count(const PruneCounts& pruned);

// The best point that misses the request's hard limits, per limit, for an infeasible plan's message.
struct ClosestMiss {
  std::optional<PlanPoint> fastest;       // fewest days among the points that fit in memory
  std::optional<PlanPoint> cheapest;      // fewest dollars among them
  std::optional<PlanPoint> least_memory;  // the smallest peak/capacity among those that do not fit
};

struct PlanResult {
  std::vector<PlanPoint> ranked;  // the top_k, event-simulated, best first
  std::vector<PlanPoint> pareto;  // days against dollars, fewest days first
  PruneCounts pruned;
  PruneCounts event_pruned;  // of them, the event phase's (the estimate's best it dropped)
  int64_t space_size = 0;    // points in the space
  int64_t evaluated = 0;     // points timed by the closed-form estimate
  int64_t simulated = 0;     // points re-run by the event simulation
  ClosestMiss closest;
  std::vector<std::string> frameworks;  // profile ids, indexed by PlanPoint::framework
  ModelSpec model;                      // as the request's scenarios resolve it
  bool interrupted = false;             // cancelled: the best found so far
  double wall_s = 0;
  // Why the winner wins against the runner-up, one sentence (empty with fewer than two rows).
  std::string why;
  // Why the first of the estimate's best that the event simulation refused was refused (e.g. a
  // step over the simulated clock's range); empty when none was.
  std::string event_refusal;
  // Caveats of the answer, one line each (e.g. a cost objective without a deadline picking a
  // run of years).
  std::vector<std::string> warnings;
};

enum class PlanPhase {
  searching,   // the space, by the estimate
  simulating,  // the estimate's best, by the event simulation
};

// Searching: points settled of the space. Simulating: simulations finished of those planned
// (top_k, more where rows drop out).
struct PlanProgress {
  int64_t done = 0;       // points settled (pruned, skipped or timed); simulations finished
  int64_t total = 0;      // points in the space; simulations planned
  int64_t evaluated = 0;  // points timed by the estimate
  PlanPhase phase = PlanPhase::searching;
};

struct PlanControl {
  int threads = 1;
  // Called on the calling thread about every 100 ms while the search runs.
  std::function<void(const PlanProgress&)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set (e.g. by SIGINT): stop, keep the best so far
  int rank = 0, ranks = 1;                    // this process's share of the shapes (MPI)
  // Skip the points whose floor cannot rank (docs/planner.md "Bounds"; counted "outranked", or
  // past a hard limit): the ranking, the front and the closest misses are those of estimating
  // every point. False: every point that fits is estimated, each prune reason exact.
  bool bound = true;
};

// The size of the space, before it is searched (for the too-large and the empty checks).
struct PlanSpaceSize {
  int64_t points = 0;
  int64_t batch_min = 0, batch_max = 0;  // the global batches the request allows, in sequences
  int64_t seq_len = 0;                   // tokens per sequence
};
PlanSpaceSize plan_space_size(const PlanRequest& request, const Catalogs& catalogs);

// The search's part that a rank runs: every shape of its share checked and estimated; the
// merged partials (merge_partials) are what plan_finish ranks.
struct PlanPartial {
  std::vector<PlanPoint> best;   // the best points by the objective within the hard limits
  std::vector<PlanPoint> front;  // its Pareto front of days against dollars
  PruneCounts pruned;
  int64_t space_size = 0;
  int64_t evaluated = 0;
  ClosestMiss closest;
  bool interrupted = false;
};
PlanPartial plan_search(const PlanRequest& request, const Catalogs& catalogs, const PlanControl& control);
// Merges partials of disjoint shares (in any order: the result is the same).
PlanPartial merge_partials(const PlanRequest& request, std::vector<PlanPartial> partials);
// A partial as JSON and back, every field exact (plan_partial.cpp): what a rank sends to rank 0.
// partial_from_json throws InputError ("plan partial", the field) on a malformed one.
nlohmann::json to_json(const PlanPartial& partial);
PlanPartial partial_from_json(const nlohmann::json& j);

// The best top_k re-run by the event simulation, ranked, the Pareto front and the sentence.
PlanResult plan_finish(const PlanRequest& request, const Catalogs& catalogs, PlanPartial merged,
                       const PlanControl& control);

// plan_search + plan_finish on one process.
PlanResult plan(const PlanRequest& request, const Catalogs& catalogs, const PlanControl& control);

// The scenario of a point (what `simrun simulate` runs for its row): the request's model, tokens
// and price, the point's GPU type, size and layout.
Scenario plan_point_scenario(const PlanRequest& request, const Catalogs& catalogs, const PlanPoint& point,
                             const std::vector<std::string>& frameworks);
// The same as a scenario file's JSON.
nlohmann::json plan_point_scenario_json(const PlanRequest& request, const PlanPoint& point,
                                        const std::vector<std::string>& frameworks);

// The layout of a row as the scenario writes it (DESIGN.md "Plan report": "layout": {…as in the scenario…}).
nlohmann::json layout_json(const Layout& layout);

// A row's layout in one line: `prose` for sentences ("tp 8 pp 4 dp 32 mb 1 gb 1024 zero 1
// recompute none bf16"), `cell` for the plan table's column ("tp8 pp4 dp32 mb1 gb1024 z1 norc",
// the precision when not bf16). EP is named for an MoE model, the framework when the plan searched
// several (the result's model and frameworks).
enum class LayoutStyle { prose, cell };
std::string layout_text(const PlanPoint& point, const PlanResult& result, LayoutStyle style);

// "the request cannot be met: ..." with what comes closest and by how much it misses (exit 3).
std::string infeasible_text(const PlanRequest& request, const PlanResult& result);

}  // namespace simrun
