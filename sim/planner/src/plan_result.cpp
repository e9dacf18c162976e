// What a plan says beyond its rows (planner.hpp): the scenario a plan point runs as, and, when
// no point is feasible, why and what the request could relax.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "simrun/common/text.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/planner/planner.hpp"

namespace simrun {

nlohmann::json layout_json(const Layout& l) {
  nlohmann::json j = {{"tp", l.tp},
                      {"pp", l.pp},
                      {"dp", l.dp},
                      {"cp", l.cp},
                      {"ep", l.ep},
                      {"expert_tp", l.expert_tp},
                      {"virtual_stages", l.virtual_stages},
                      {"pipeline_split", to_string(l.pipeline_split)},
                      {"sequence_parallel", l.sequence_parallel},
                      {"zero_stage", l.zero_stage},
                      {"micro_batch", l.micro_batch},
                      {"global_batch", l.global_batch},
                      {"recompute", to_string(l.recompute)},
                      {"precision", to_string(l.precision)},
                      {"flash_attention", l.flash_attention}};
  return j;
}

nlohmann::json plan_point_scenario_json(const PlanRequest& q, const PlanPoint& p,
                                        const std::vector<std::string>& frameworks) {
  nlohmann::json doc;
  doc["model"] = scenario_model_field(q);
  doc["framework"] = frameworks[size_t(p.framework)];
  const GpuOffer& offer = q.gpus[size_t(p.offer)];
  doc["cluster"] = {{"gpu", offer.gpu}, {"num_gpus", p.num_gpus}};
  if (q.fabric) doc["cluster"]["fabric"] = {{"kind", *q.fabric}};
  doc["layout"] = layout_json(p.layout);
  doc["run"] = {{"usd_per_gpu_hour", offer.usd_per_gpu_hour}};
  if (q.tokens > 0) doc["run"]["tokens"] = q.tokens;
  return doc;
}

Scenario plan_point_scenario(const PlanRequest& q, const Catalogs& catalogs, const PlanPoint& p,
                             const std::vector<std::string>& frameworks) {
  return parse_scenario(plan_point_scenario_json(q, p, frameworks), q.file, catalogs, q.base_dir);
}

namespace {

// The most frequent prune reasons, e.g. "memory 1,200, tp_divides_heads 300".
std::string top_prune_reasons(const PruneCounts& pruned, size_t n) {
  const std::vector<std::pair<std::string, int64_t>> reasons = by_count(pruned);
  std::string out;
  for (size_t i = 0; i < std::min(n, reasons.size()); ++i)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", reasons[i].first, reasons[i].second);
  return out;
}

// What the request could relax to fit in memory: only what it held back.
std::string memory_remedies(const PlanRequest& q, const PlanPoint& closest) {
  std::vector<std::string> out;
  if (closest.num_gpus >= q.max_gpus) out.push_back("a larger max_gpus");
  const auto& rc = q.axes.recompute;
  if (!rc.empty() && std::find(rc.begin(), rc.end(), "full") == rc.end()) out.push_back("full recompute");
  const auto& zero = q.axes.zero_stage;
  if (!zero.empty() && std::find(zero.begin(), zero.end(), 3) == zero.end()) out.push_back("ZeRO stage 3");
  if (!q.axes.tp.empty() || !q.axes.pp.empty()) out.push_back("more tp or pp sizes");
  if (out.empty())
    return "every remedy the space allows was searched: a GPU with more memory, or a smaller model";
  std::string text = "allow ";
  for (size_t i = 0; i < out.size(); ++i)
    text += (i == 0 ? "" : i + 1 == out.size() ? " or " : ", ") + out[i];
  return text;
}

}  // namespace

std::string infeasible_text(const PlanRequest& q, const PlanResult& r) {
  const ClosestMiss& c = r.closest;
  auto who = [&](const PlanPoint& p) {
    return fmt::format("{} x {} (tp {} pp {} dp {})", q.gpus[size_t(p.offer)].gpu, p.num_gpus, p.layout.tp,
                       p.layout.pp, p.layout.dp);
  };
  const std::string reasons = top_prune_reasons(r.pruned, 3);
  if (!c.fastest) {
    if (c.least_memory)
      return fmt::format(
          "no layout fits in GPU memory: the closest, {}, needs {:.1f} GiB of {:.1f} GiB ({:.0f}% over); "
          "{} (pruned: {})",
          who(*c.least_memory), c.least_memory->peak_bytes_per_gpu / kGiB,
          c.least_memory->capacity_bytes / kGiB,
          100 * (c.least_memory->peak_bytes_per_gpu / c.least_memory->capacity_bytes - 1),
          memory_remedies(q, *c.least_memory), reasons);
    // The space's commonest reason, when it is the event simulation's bound: what lowers the passes.
    const auto counts = by_count(r.pruned);
    const bool too_many_passes = !counts.empty() && counts.front().first == kBeyondEventSimulation;
    return fmt::format("no layout of the space can run this model (pruned: {}){}", reasons,
                       too_many_passes
                           ? fmt::format(": the commonest, a step of more micro-batches x (layers + 2) "
                                         "than the event simulation re-runs ({:.0f}); give fewer "
                                         "sequences a step, larger micro-batches or more GPUs",
                                         kMaxEventLayerPasses)
                           : "");
  }
  std::string out;
  if (q.deadline_days && c.fastest->days > *q.deadline_days)
    out =
        fmt::format("no plan meets the {:.4g}-day deadline: the fastest, {}, takes {:.1f} days ({:.1f} over)",
                    *q.deadline_days, who(*c.fastest), c.fastest->days, c.fastest->days - *q.deadline_days);
  if (q.budget_usd && c.cheapest->cost_usd > *q.budget_usd)
    out += fmt::format("{}no plan fits the {} budget: the cheapest, {}, costs {} ({} over)",
                       out.empty() ? "" : "; ", usd_text(*q.budget_usd, 4), who(*c.cheapest),
                       usd_text(c.cheapest->cost_usd, 4), usd_text(c.cheapest->cost_usd - *q.budget_usd));
  if (out.empty() && q.deadline_days && q.budget_usd)
    out = "no plan meets both the deadline and the budget at once (each alone can be met: relax one)";
  if (out.empty())  // the estimate's best all left at the event phase
    out = fmt::format("the event simulation dropped every one of the estimate's best ({}{})",
                      top_prune_reasons(r.event_pruned, 3),
                      r.event_refusal.empty() ? "" : "; the first refusal: " + r.event_refusal);
  return out;
}

}  // namespace simrun
