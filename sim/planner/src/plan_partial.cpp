// A rank's share of the search as JSON (planner.hpp: to_json(PlanPartial), partial_from_json):
// what the ranks of `simrun plan` under mpirun send to rank 0, which merges them.
//
// The text is a message between processes of one binary, not a file format: it carries every
// field exactly, so that the merged result is the one a single process gets. Numbers are JSON
// numbers (nlohmann::json writes a double in the shortest digits that read back to the same bits,
// and an int64_t as an integer); a double that is not finite, which JSON cannot hold, is written as
// the string "inf", "-inf" or "nan". Enumerations are written as their integer values, so that a
// value added to an enumeration travels without a name table to keep in step here.
#include <cmath>
#include <limits>
#include <string>

#include "simrun/common/error.hpp"
#include "simrun/sim/planner/planner.hpp"

namespace simrun {
namespace {

constexpr const char* kWhere = "plan partial";

nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

double double_of(const nlohmann::json& j, const char* field) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw InputError(kWhere, field, "expected a number");
}

const nlohmann::json& member(const nlohmann::json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end()) throw InputError(kWhere, field, "missing");
  return *it;
}

int64_t int_of(const nlohmann::json& j, const char* field) {
  const nlohmann::json& v = member(j, field);
  if (!v.is_number_integer()) throw InputError(kWhere, field, "expected an integer");
  return v.get<int64_t>();
}

template <class Enum>
nlohmann::json enum_number(Enum e) {
  return static_cast<int64_t>(e);
}
template <class Enum>
Enum enum_of(const nlohmann::json& j, const char* field) {
  return static_cast<Enum>(int_of(j, field));
}

// Every member of Layout (scenario.hpp), in its order. The structured binding names them all: a
// member added to Layout stops this from compiling until it travels here (and in layout_of).
nlohmann::json full_layout_json(const Layout& l) {
  const auto& [tp, pp, dp, cp, cp_comm_type, cp_a2a_level, ep, ep_intra_level, expert_tp, moe_capacity_factor,
               virtual_stages, pipeline_split, pipeline_schedule, sequence_parallel, zero_stage, micro_batch,
               global_batch, recompute, precision, fp8_recipe, fp8_param_gather, flash_attention] = l;
  return {
      {"tp", tp},
      {"pp", pp},
      {"dp", dp},
      {"cp", cp},
      {"cp_comm_type", enum_number(cp_comm_type)},
      {"cp_a2a_level", cp_a2a_level},
      {"ep", ep},
      {"ep_intra_level", ep_intra_level},
      {"expert_tp", expert_tp},
      {"moe_capacity_factor", number(moe_capacity_factor)},
      {"virtual_stages", virtual_stages},
      {"pipeline_split", enum_number(pipeline_split)},
      {"pipeline_schedule", pipeline_schedule ? enum_number(*pipeline_schedule) : nlohmann::json(nullptr)},
      {"sequence_parallel", sequence_parallel},
      {"zero_stage", zero_stage},
      {"micro_batch", micro_batch},
      {"global_batch", global_batch},
      {"recompute", enum_number(recompute)},
      {"precision", enum_number(precision)},
      {"fp8_recipe", fp8_recipe ? enum_number(*fp8_recipe) : nlohmann::json(nullptr)},
      {"fp8_param_gather", fp8_param_gather},
      {"flash_attention", flash_attention}};
}

bool bool_of(const nlohmann::json& j, const char* field) {
  const nlohmann::json& v = member(j, field);
  if (!v.is_boolean()) throw InputError(kWhere, field, "expected true or false");
  return v.get<bool>();
}

Layout layout_of(const nlohmann::json& j) {
  Layout l;
  l.tp = int_of(j, "tp");
  l.pp = int_of(j, "pp");
  l.dp = int_of(j, "dp");
  l.cp = int_of(j, "cp");
  l.cp_comm_type = enum_of<CpCommType>(j, "cp_comm_type");
  l.cp_a2a_level = int_of(j, "cp_a2a_level");
  l.ep = int_of(j, "ep");
  l.ep_intra_level = int_of(j, "ep_intra_level");
  l.expert_tp = int_of(j, "expert_tp");
  l.moe_capacity_factor = double_of(member(j, "moe_capacity_factor"), "moe_capacity_factor");
  l.virtual_stages = int_of(j, "virtual_stages");
  l.pipeline_split = enum_of<PipelineSplit>(j, "pipeline_split");
  if (!member(j, "pipeline_schedule").is_null())
    l.pipeline_schedule = enum_of<PipelineSchedule>(j, "pipeline_schedule");
  l.sequence_parallel = bool_of(j, "sequence_parallel");
  l.zero_stage = int(int_of(j, "zero_stage"));
  l.micro_batch = int_of(j, "micro_batch");
  l.global_batch = int_of(j, "global_batch");
  l.recompute = enum_of<Recompute>(j, "recompute");
  l.precision = enum_of<Precision>(j, "precision");
  if (!member(j, "fp8_recipe").is_null()) l.fp8_recipe = enum_of<LowPrecisionRecipe>(j, "fp8_recipe");
  l.fp8_param_gather = bool_of(j, "fp8_param_gather");
  l.flash_attention = bool_of(j, "flash_attention");
  return l;
}

// Every member of PlanPoint (planner.hpp), in its order, named by a structured binding as the
// layout's are.
nlohmann::json point_json(const PlanPoint& p) {
  const auto& [offer, framework, num_gpus, layout, fidelity, step_time_s, mfu, tokens_per_s,
               peak_bytes_per_gpu, capacity_bytes, compute_s, exposed_comm_s, bubble_s, days, gpu_hours,
               cost_usd, energy_kwh, goodput, rank] = p;
  return {{"offer", offer},
          {"framework", framework},
          {"num_gpus", num_gpus},
          {"layout", full_layout_json(layout)},
          {"fidelity", fidelity},
          {"step_time_s", number(step_time_s)},
          {"mfu", number(mfu)},
          {"tokens_per_s", number(tokens_per_s)},
          {"peak_bytes_per_gpu", number(peak_bytes_per_gpu)},
          {"capacity_bytes", number(capacity_bytes)},
          {"compute_s", number(compute_s)},
          {"exposed_comm_s", number(exposed_comm_s)},
          {"bubble_s", number(bubble_s)},
          {"days", number(days)},
          {"gpu_hours", number(gpu_hours)},
          {"cost_usd", number(cost_usd)},
          {"energy_kwh", number(energy_kwh)},
          {"goodput", number(goodput)},
          {"rank", rank}};
}

PlanPoint point_of(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError(kWhere, "point", "expected an object");
  auto real = [&](const char* field) { return double_of(member(j, field), field); };
  PlanPoint p;
  p.offer = int32_t(int_of(j, "offer"));
  p.framework = int32_t(int_of(j, "framework"));
  p.num_gpus = int_of(j, "num_gpus");
  p.layout = layout_of(member(j, "layout"));
  const nlohmann::json& fidelity = member(j, "fidelity");
  if (!fidelity.is_string()) throw InputError(kWhere, "fidelity", "expected a string");
  p.fidelity = fidelity.get<std::string>();
  p.step_time_s = real("step_time_s");
  p.mfu = real("mfu");
  p.tokens_per_s = real("tokens_per_s");
  p.peak_bytes_per_gpu = real("peak_bytes_per_gpu");
  p.capacity_bytes = real("capacity_bytes");
  p.compute_s = real("compute_s");
  p.exposed_comm_s = real("exposed_comm_s");
  p.bubble_s = real("bubble_s");
  p.days = real("days");
  p.gpu_hours = real("gpu_hours");
  p.cost_usd = real("cost_usd");
  p.energy_kwh = real("energy_kwh");
  p.goodput = real("goodput");
  p.rank = int_of(j, "rank");
  return p;
}

nlohmann::json points_json(const std::vector<PlanPoint>& points) {
  nlohmann::json j = nlohmann::json::array();
  for (const PlanPoint& p : points) j.push_back(point_json(p));
  return j;
}

std::vector<PlanPoint> points_of(const nlohmann::json& j, const char* field) {
  if (!j.is_array()) throw InputError(kWhere, field, "expected an array");
  std::vector<PlanPoint> points;
  for (const nlohmann::json& p : j) points.push_back(point_of(p));
  return points;
}

nlohmann::json optional_point_json(const std::optional<PlanPoint>& p) {
  return p ? point_json(*p) : nlohmann::json(nullptr);
}

std::optional<PlanPoint> optional_point_of(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return point_of(j);
}

}  // namespace

nlohmann::json to_json(const PlanPartial& partial) {
  nlohmann::json pruned = nlohmann::json::object();
  for (const auto& [reason, n] : partial.pruned) pruned[reason] = n;
  return {{"best", points_json(partial.best)},
          {"front", points_json(partial.front)},
          {"pruned", pruned},
          {"space_size", partial.space_size},
          {"evaluated", partial.evaluated},
          {"closest",
           {{"fastest", optional_point_json(partial.closest.fastest)},
            {"cheapest", optional_point_json(partial.closest.cheapest)},
            {"least_memory", optional_point_json(partial.closest.least_memory)}}},
          {"interrupted", partial.interrupted}};
}

PlanPartial partial_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError(kWhere, "partial", "expected an object");
  PlanPartial partial;
  partial.best = points_of(member(j, "best"), "best");
  partial.front = points_of(member(j, "front"), "front");
  const nlohmann::json& pruned = member(j, "pruned");
  if (!pruned.is_object()) throw InputError(kWhere, "pruned", "expected an object");
  for (const auto& [reason, n] : pruned.items()) {
    if (!n.is_number_integer()) throw InputError(kWhere, "pruned", "expected integer counts");
    partial.pruned[reason] = n.get<int64_t>();
  }
  partial.space_size = int_of(j, "space_size");
  partial.evaluated = int_of(j, "evaluated");
  const nlohmann::json& closest = member(j, "closest");
  partial.closest.fastest = optional_point_of(member(closest, "fastest"));
  partial.closest.cheapest = optional_point_of(member(closest, "cheapest"));
  partial.closest.least_memory = optional_point_of(member(closest, "least_memory"));
  partial.interrupted = bool_of(j, "interrupted");
  return partial;
}

}  // namespace simrun
