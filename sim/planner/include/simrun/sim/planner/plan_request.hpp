// What `simrun plan` is asked: a model, the tokens to train it on, the GPU types on offer with
// their prices, the cluster sizes and layouts to search, and the objective with its deadline or
// budget. A plan file (JSON, docs/planner.md) holds the same as the command line's flags, and both
// are read by one parser, so a plan can be versioned and rerun.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/scenario/scenario_parser.hpp"

namespace simrun {

// One GPU type on offer: a catalog id and its price per GPU-hour.
struct GpuOffer {
  std::string gpu;  // catalog id, e.g. "h100-sxm"
  double usd_per_gpu_hour = 0;
};

enum class PlanObjective {
  time,  // fewest days (under budget_usd when given)
  cost,  // fewest dollars (under deadline_days when given)
};
const char* to_string(PlanObjective o);

// The values each layout dimension may take. Empty: the planner's defaults for the model and GPU
// (search_space.hpp); given: only these.
struct SearchAxes {
  std::vector<int64_t> tp, pp, cp, ep, expert_tp, virtual_stages, micro_batch;
  std::vector<int64_t> zero_stage;
  std::vector<std::string> recompute;  // "none", "selective", "full"
  std::vector<std::string> precision;  // "bf16", "fp8", ... (default: bf16)
  std::vector<std::string> framework;  // profile ids (default: megatron-core)
};

// Tokens per step when neither global_batch nor batch_tokens is given: 4M (2^22), Llama 2's
// (Touvron et al. 2023, arXiv:2307.09288, sec. 2.2: "a global batch-size of 4M tokens").
inline constexpr double kDefaultBatchTokens = 4194304;
// The most points a search may hold unless max_points says otherwise.
inline constexpr int64_t kDefaultMaxPlanPoints = 50'000'000;
// The points re-run by the event simulation unless top_k says otherwise: a few seconds of
// simulation against the search's minutes.
inline constexpr int64_t kDefaultPlanTopK = 20;

struct PlanRequest {
  std::string file;                // where it was read from ("command line" when from flags alone)
  std::filesystem::path base_dir;  // where the model's relative config.json path starts
  nlohmann::json model;            // the scenario's "model" field: a catalog id or an object
  std::optional<int64_t> seq_len;
  double tokens = 0;  // 0: Chinchilla's 20 per parameter (run_cost.hpp)
  std::vector<GpuOffer> gpus;
  std::optional<std::string> fabric;  // inter-node fabric id for every GPU type (default: the scenario's)
  int64_t min_gpus = 0;               // 0: one node of each GPU type
  int64_t max_gpus = 0;
  PlanObjective objective = PlanObjective::cost;
  std::optional<double> deadline_days;
  std::optional<double> budget_usd;
  // Sequences per step: fixed, or the tokens per step may range (the largest batch in the range
  // each layout can run, docs/planner.md).
  std::optional<int64_t> global_batch;
  double batch_tokens_min = 0, batch_tokens_max = 0;  // both 0 when global_batch is given
  int64_t top_k = kDefaultPlanTopK;                   // best points re-run by the event simulation
  int64_t max_points = kDefaultMaxPlanPoints;         // a larger space is refused before the search starts
  SearchAxes axes;
};

// Validates a plan document: every field typed and range-checked, the GPU ids and the model
// resolved against the catalogs, at least one GPU type, each with a price (its own, or the
// "prices" table's: a JSON object of id → $/GPU-hour, a path relative to `base_dir`), max_gpus
// at least one node of every GPU type, a positive deadline and budget, a known objective.
// Throws InputError naming `file` and the field.
PlanRequest parse_plan_request(const nlohmann::json& doc, const std::string& file, const Catalogs& catalogs,
                               const std::filesystem::path& base_dir);

// The scenario's "model" field for a request's points: its model, with seq_len written in when given.
nlohmann::json scenario_model_field(const PlanRequest& request);

// The plan document of a request (what --json echoes, and a plan file that reruns it).
nlohmann::json to_json(const PlanRequest& request);

}  // namespace simrun
