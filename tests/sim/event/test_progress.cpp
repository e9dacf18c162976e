// The event simulation's progress observer (progress.hpp): told the phases in order, counts that
// only grow and end at the step's totals, and a run that gives the same results with it as
// without it.
#include <catch2/catch.hpp>
#include <vector>

#include "simrun/sim/event/simulate.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

Scenario every_rank_scenario() {
  return parse_scenario_text(
      R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
          "layout": {"tp": 2, "pp": 2, "dp": 4, "global_batch": 64}})");
}

}  // namespace

TEST_CASE("the progress observer sees the phases in order and counts that end at the step's totals",
          "[sim][step][progress]") {
  SimulateOptions o;
  o.step.scope = SimulationScope::full;
  std::vector<SimulationProgress> seen;
  o.step.progress = [&seen](const SimulationProgress& p) { seen.push_back(p); };
  const SimulationOutput out = simulate(every_rank_scenario(), o);

  REQUIRE(seen.size() >= 4);  // building, the pass's start, at least one on the way, its end
  CHECK(seen.front().phase == SimulationPhase::building);
  CHECK(seen.front().tasks_total == 0);
  CHECK(seen[1].phase == SimulationPhase::simulating);
  CHECK(seen[1].events == 0);
  CHECK(seen[1].tasks_done == 0);
  REQUIRE(out.step.events > 2 * kProgressEvents);  // so reports on the way are expected
  size_t on_the_way = 0;
  for (size_t i = 2; i < seen.size(); ++i) {
    INFO("report " << i);
    CHECK(seen[i].phase == SimulationPhase::simulating);
    CHECK(seen[i].events >= seen[i - 1].events);
    CHECK(seen[i].tasks_done >= seen[i - 1].tasks_done);
    CHECK(seen[i].tasks_done <= seen[i].tasks_total);
    CHECK(seen[i].tasks_total == out.step.tasks);
    CHECK(seen[i].simulated_ranks == 16);
    if (seen[i].tasks_done > 0 && seen[i].tasks_done < seen[i].tasks_total) {
      ++on_the_way;
      CHECK(seen[i].events % kProgressEvents == 0);
    }
  }
  CHECK(on_the_way >= out.step.events / kProgressEvents - 1);
  CHECK(seen.back().events == out.step.events);
  CHECK(seen.back().tasks_done == out.step.tasks);
}

TEST_CASE("a simulation gives the same results with a progress observer as without one",
          "[sim][step][progress]") {
  const auto scope = GENERATE(SimulationScope::representatives, SimulationScope::full);
  SimulateOptions o;
  o.step.scope = scope;
  o.step.record_trace = true;
  const SimulationOutput plain = simulate(every_rank_scenario(), o);
  size_t reports = 0;
  o.step.progress = [&reports](const SimulationProgress&) { ++reports; };
  const SimulationOutput observed = simulate(every_rank_scenario(), o);

  CHECK(reports >= 3);
  CHECK(observed.report.step_time_s == plain.report.step_time_s);
  CHECK(observed.report.mfu == plain.report.mfu);
  CHECK(observed.step.step_time == plain.step.step_time);
  CHECK(observed.step.events == plain.step.events);
  CHECK(observed.step.tasks == plain.step.tasks);
  CHECK(observed.step.flows == plain.step.flows);
  CHECK(observed.step.last_rank == plain.step.last_rank);
  REQUIRE(observed.step.ranks.size() == plain.step.ranks.size());
  for (size_t i = 0; i < plain.step.ranks.size(); ++i) {
    CHECK(observed.step.ranks[i].finish_s == plain.step.ranks[i].finish_s);
    CHECK(observed.step.ranks[i].bubble_s == plain.step.ranks[i].bubble_s);
    CHECK(observed.step.ranks[i].exposed_s == plain.step.ranks[i].exposed_s);
  }
  REQUIRE(observed.step.spans.size() == plain.step.spans.size());
  bool spans_equal = true;
  for (size_t i = 0; i < plain.step.spans.size(); ++i) {
    const TaskSpan &a = observed.step.spans[i], &b = plain.step.spans[i];
    spans_equal = spans_equal && a.rank == b.rank && a.task == b.task && a.start == b.start && a.end == b.end;
  }
  CHECK(spans_equal);
}
