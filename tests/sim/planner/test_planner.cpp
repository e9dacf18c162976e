// The planner's ranking, ties and Pareto front on a real search (sim/planner/src/planner.cpp,
// docs/planner.md "The search"), and the prune reasons' order.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "simrun/sim/planner/planner.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using simrun::test::catalogs;

namespace {

PlanResult small_plan(PlanObjective objective) {
  const nlohmann::json doc = {
      {"model", "llama3-8b"},
      {"tokens", 1e12},
      {"gpus",
       {{{"gpu", "h100-sxm"}, {"usd_per_gpu_hour", 2.5}}, {{"gpu", "a100-80gb"}, {"usd_per_gpu_hour", 1.5}}}},
      {"max_gpus", 32},
      {"objective", to_string(objective)},
      {"top_k", 12},
      {"search", {{"zero_stage", {1}}, {"recompute", {"none"}}, {"micro_batch", {1, 2}}}}};
  const PlanRequest q = parse_plan_request(doc, "t.json", catalogs(), ".");
  PlanControl control;
  control.threads = 2;
  return plan(q, catalogs(), control);
}

}  // namespace

TEST_CASE("plan ranking: best first, every row event-simulated, ranks counted with the tie tolerance") {
  for (const PlanObjective objective : {PlanObjective::cost, PlanObjective::time}) {
    const PlanResult r = small_plan(objective);
    REQUIRE(r.ranked.size() == 12);
    CHECK(r.simulated >= int64_t(r.ranked.size()));
    CHECK(r.ranked.front().rank == 1);
    for (size_t i = 0; i < r.ranked.size(); ++i) {
      const PlanPoint& p = r.ranked[i];
      CHECK(p.fidelity == "event");
      if (i > 0) CHECK(r.ranked[i - 1].objective(objective) <= p.objective(objective));
      // One more than the rows better by more than the tolerance: ties share a rank and are not
      // transitive (a row may tie the one before it and still rank below the first).
      int64_t ahead = 0;
      for (const PlanPoint& o : r.ranked)
        if (o.objective(objective) < p.objective(objective) * (1 - kPlanTieTolerance)) ++ahead;
      CHECK(p.rank == ahead + 1);
    }
  }
}

TEST_CASE("plan ranking: the Pareto front is fewest days first and no point on it dominates another") {
  const PlanResult r = small_plan(PlanObjective::cost);
  REQUIRE(r.pareto.size() >= 2);
  for (size_t i = 1; i < r.pareto.size(); ++i) {
    CHECK(r.pareto[i - 1].days <= r.pareto[i].days);
    CHECK(r.pareto[i - 1].cost_usd > r.pareto[i].cost_usd);  // more days only for fewer dollars
  }
  for (const PlanPoint& p : r.pareto) CHECK(p.peak_bytes_per_gpu <= p.capacity_bytes);
}

TEST_CASE("plan ranking: prune reasons by count, most first, equal counts by name") {
  const PruneCounts pruned = {{"memory", 5}, {"tp_divides_heads", 9}, {"over_budget", 5}};
  const auto reasons = by_count(pruned);
  REQUIRE(reasons.size() == 3);
  CHECK(reasons[0].first == "tp_divides_heads");
  CHECK(reasons[1].first == "memory");
  CHECK(reasons[2].first == "over_budget");
}

namespace {

PlanPartial search(const nlohmann::json& doc, bool bound, int threads = 2) {
  const PlanRequest q = parse_plan_request(doc, "t.json", catalogs(), ".");
  PlanControl control;
  control.threads = threads;
  control.bound = bound;
  return plan_search(q, catalogs(), control);
}

void check_same_point(const std::optional<PlanPoint>& a, const std::optional<PlanPoint>& b) {
  REQUIRE(a.has_value() == b.has_value());
  if (a) CHECK(*a == *b);
}

}  // namespace

TEST_CASE("plan bound: skipping the points whose floor cannot rank finds what estimating every point finds") {
  const std::vector<nlohmann::json> requests = {
      // Cost, no limit: the front spans every size.
      {{"model", "llama3-70b"},
       {"tokens", 1.4e12},
       {"gpus",
        {{{"gpu", "h100-sxm"}, {"usd_per_gpu_hour", 2.5}}, {{"gpu", "b200"}, {"usd_per_gpu_hour", 5.5}}}},
       {"max_gpus", 512},
       {"objective", "cost"},
       {"top_k", 3},
       {"search",
        {{"tp", {2, 4, 8}},
         {"pp", {1, 2, 4, 8}},
         {"zero_stage", {1, 3}},
         {"recompute", {"none", "full"}},
         {"micro_batch", {1, 2}}}}},
      // MoE, time under a deadline and a budget.
      {{"model", "mixtral-8x7b"},
       {"tokens", 1e12},
       {"gpus", {{{"gpu", "h100-sxm"}, {"usd_per_gpu_hour", 2.5}}}},
       {"max_gpus", 128},
       {"objective", "time"},
       {"deadline_days", 30},
       {"budget_usd", 3e6},
       {"top_k", 3},
       {"search", {{"zero_stage", {1}}, {"recompute", {"none", "selective"}}}}},
      // A deadline nothing meets: the closest misses are what the message reads.
      {{"model", "llama3-8b"},
       {"tokens", 1e13},
       {"gpus", {{{"gpu", "a100-80gb"}, {"usd_per_gpu_hour", 1.5}}}},
       {"max_gpus", 64},
       {"objective", "cost"},
       {"deadline_days", 1},
       {"top_k", 3},
       {"search", {{"zero_stage", {1}}, {"recompute", {"none"}}}}}};
  for (const nlohmann::json& doc : requests) {
    INFO(doc.dump());
    const PlanPartial bounded = search(doc, true);
    const PlanPartial every = search(doc, false);
    CHECK(bounded.best == every.best);
    CHECK(bounded.front == every.front);
    check_same_point(bounded.closest.fastest, every.closest.fastest);
    check_same_point(bounded.closest.cheapest, every.closest.cheapest);
    check_same_point(bounded.closest.least_memory, every.closest.least_memory);
    CHECK(bounded.evaluated < every.evaluated);
    CHECK(every.pruned.count("outranked") == 0);
    // What the layout rules and the memory model prune is the same; of the rest, some were not
    // estimated (outranked, or past a limit on their floor alone).
    for (const auto& [reason, n] : bounded.pruned)
      if (reason != "outranked" && reason != "over_deadline" && reason != "over_budget")
        CHECK(n == every.pruned.at(reason));
    const int64_t outranked = bounded.pruned.count("outranked") ? bounded.pruned.at("outranked") : 0;
    CHECK(bounded.evaluated + outranked <= every.evaluated);
    // The candidates go in batches of a fixed size: what is estimated does not depend on the threads.
    for (const int threads : {1, 3}) {
      const PlanPartial other = search(doc, true, threads);
      CHECK(other.pruned == bounded.pruned);
      CHECK(other.evaluated == bounded.evaluated);
      CHECK(other.best == bounded.best);
    }
  }
}
