// The step floor the planner skips points on (analytic.hpp StepTimeFloor, docs/planner.md
// "Bounds"): under the estimate for every data-parallel size, pipeline and global batch it holds
// for, and through a pipeline above the stages' kernels alone by the fill and the drain.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "simrun/common/error.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "workload_test_util.hpp"

using namespace simrun;

namespace {

// Every layout dimension the floor is built for (what the planner calls a set of per-layer costs).
struct Costs {
  std::string model, gpu;
  int64_t tp, cp, ep, micro_batch;
  int zero_stage;
  std::string recompute;
};

// The scenario of `costs` with a pipeline, a data-parallel size and micro-batches per replica, or
// nullopt where the scenario's or the workload's rules refuse it.
std::optional<Scenario> layout_of(const Costs& c, int64_t pp, int64_t v, int64_t dp, int64_t microbatches) {
  const nlohmann::json doc = {{"model", c.model},
                              {"cluster", {{"gpu", c.gpu}, {"num_gpus", c.tp * c.cp * pp * dp}}},
                              {"layout",
                               {{"tp", c.tp},
                                {"pp", pp},
                                {"virtual_stages", v},
                                {"dp", dp},
                                {"cp", c.cp},
                                {"ep", c.ep},
                                {"micro_batch", c.micro_batch},
                                {"global_batch", c.micro_batch * dp * microbatches},
                                {"zero_stage", c.zero_stage},
                                {"recompute", c.recompute}}}};
  try {
    Scenario s = parse_scenario(doc, "t.json", test::catalogs(), ".");
    if (workload_layout_error(s, s.framework.workload, default_schedule(s.layout))) return std::nullopt;
    return s;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace

TEST_CASE("the step floor lies under the estimate for every pipeline and data-parallel size it holds for",
          "[sim][analytic]") {
  const Costs shapes[] = {{"llama3-8b", "h100-sxm", 1, 1, 1, 1, 1, "none"},
                          {"llama3-70b", "h100-sxm", 4, 1, 1, 2, 3, "full"},
                          {"llama3-70b", "b200", 8, 2, 1, 1, 1, "selective"},
                          {"mixtral-8x7b", "h100-sxm", 2, 1, 4, 1, 1, "none"},
                          {"qwen3-30b-a3b", "mi300x", 1, 1, 8, 2, 3, "selective"}};
  for (const Costs& c : shapes) {
    INFO(c.model << " tp " << c.tp << " cp " << c.cp << " ep " << c.ep << " mb " << c.micro_batch << " zero "
                 << c.zero_stage << " " << c.recompute);
    std::optional<StepTimeFloor> floor;
    int checked = 0;
    for (const int64_t pp : {1, 2, 4, 8})
      for (const int64_t v : {1, 2})
        for (const int64_t dp : {1, 4, 16})
          for (const int64_t microbatches : {1, 3, 8, 32}) {
            if (v > 1 && pp == 1) continue;
            const std::optional<Scenario> s = layout_of(c, pp, v, dp, microbatches);
            if (!s) continue;
            INFO("pp " << pp << " v " << v << " dp " << dp << " m " << microbatches);
            const AnalyticOptions options = framework_options(*s);
            if (!floor) floor.emplace(*s, options);  // built once, from the first layout
            const double step = estimate(*s, options).step_time_s;
            const double at_least = floor->step_time_s(s->layout);
            CHECK(at_least > 0);
            CHECK(at_least <= step);
            // Through a pipeline the last stage waits for the first micro-batch's forward through
            // the stages before it, and they for the last one's backward.
            const StepTimeFloor::Pipeline p = floor->pipeline(s->layout);
            const double m = double(microbatches);
            if (pp > 1) {
              double fill_and_drain = 0;
              for (int64_t stage = 0; stage + 1 < pp; ++stage) fill_and_drain += p.entry_s[size_t(stage)];
              CHECK(fill_and_drain > 0);
              CHECK(at_least >= fill_and_drain + m * p.stage_s.back());
            } else {
              CHECK(at_least == Approx(m * p.stage_s.front()));
            }
            ++checked;
          }
    CHECK(checked >= 12);
  }
}

TEST_CASE("the step floor is 0 where the step is set from an assumed MFU, not timed", "[sim][analytic]") {
  Scenario s = *layout_of({"llama3-8b", "h100-sxm", 1, 1, 1, 1, 1, "none"}, 1, 1, 8, 4);
  s.run.assumed_mfu = 0.9;
  const AnalyticOptions options = framework_options(s);
  CHECK(StepTimeFloor(s, options).step_time_s(s.layout) == 0);
  CHECK(estimate(s, options).step_time_s > 0);
}
