// The timeline view's data (gui/src/timeline_model.hpp): lanes of the simulated step, and what a
// frame draws of them: only spans inside the window, narrow neighbours merged.
#include <catch2/catch.hpp>

#include "simrun/sim/event/simulate.hpp"
#include "timeline_model.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::gui;

namespace {

struct Simulated {
  Scenario scenario;
  SimulationOutput out;
};

const Simulated& llama() {
  static const Simulated s = [] {
    Scenario sc =
        test::parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 64},
      "layout": {"tp": 2, "pp": 4, "global_batch": 64}})");
    SimulateOptions o = framework_simulate_options(sc);
    o.step.record_trace = true;
    return Simulated{sc, simulate(sc, o)};
  }();
  return s;
}

}  // namespace

TEST_CASE("timeline: a lane per traced rank and stream, spans in order, every span once", "[gui][timeline]") {
  const Simulated& s = llama();
  const RankLayout layout(s.scenario.layout, s.scenario.cluster.gpus_per_node);
  const Timeline t = build_timeline(s.out.workload, s.out.step, layout);
  REQUIRE_FALSE(t.lanes.empty());
  CHECK(t.end_s == Approx(s.out.report.step_time_s));
  size_t spans = 0;
  for (const TimelineLane& lane : t.lanes) {
    spans += lane.spans.size();
    for (size_t i = 1; i < lane.spans.size(); ++i) CHECK(lane.spans[i - 1].start_s <= lane.spans[i].start_s);
    CHECK(lane.end_prefix.size() == lane.spans.size());
  }
  CHECK(spans == s.out.step.spans.size());
  // One representative rank per stage, its compute lane first.
  CHECK(t.lanes.front().rank == 0);
  CHECK(t.lanes.front().stream == Stream::compute);
}

TEST_CASE("timeline: a frame draws the window's spans only, narrow ones merged", "[gui][timeline]") {
  const Simulated& s = llama();
  const RankLayout layout(s.scenario.layout, s.scenario.cluster.gpus_per_node);
  const Timeline t = build_timeline(s.out.workload, s.out.step, layout);
  const TimelineLane& compute = t.lanes.front();
  std::vector<DrawSpan> drawn;

  // Zoomed far in (1 ms at 1000 px): every span that overlaps the window, none merged.
  const double t0 = compute.spans[compute.spans.size() / 2].start_s, t1 = t0 + 1e-3;
  visible_spans(compute, t0, t1, 1000 / (t1 - t0), 3, drawn);
  size_t overlapping = 0;
  for (const TimelineSpan& sp : compute.spans) overlapping += sp.end_s > t0 && sp.start_s <= t1;
  int32_t merged = 0;
  for (const DrawSpan& d : drawn) {
    merged += d.merged;
    CHECK(d.x0 >= 0);
    CHECK(d.x1 <= 1000 + 1e-6);
  }
  CHECK(size_t(merged) == overlapping);

  // The whole step in 200 px: far fewer rectangles than spans, and every span still counted.
  const double px = 200 / t.end_s;
  visible_spans(compute, 0, t.end_s, px, 3, drawn);
  merged = 0;
  for (const DrawSpan& d : drawn) merged += d.merged;
  CHECK(size_t(merged) == compute.spans.size());
  CHECK(drawn.size() < compute.spans.size() / 4);
  // Nothing outside the window.
  visible_spans(compute, t.end_s + 1, t.end_s + 2, px, 3, drawn);
  CHECK(drawn.empty());
}
