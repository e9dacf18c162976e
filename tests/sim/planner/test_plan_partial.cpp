// A rank's partial search as JSON and back (sim/planner/src/plan_partial.cpp): every field of
// PlanPartial, PlanPoint and the Layout a point carries comes back exactly, doubles to the bit.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

#include "simrun/common/error.hpp"
#include "simrun/sim/planner/planner.hpp"

using namespace simrun;

namespace {

// A layout with every member away from its default.
Layout unusual_layout(int64_t seed) {
  Layout l;
  l.tp = 4 + seed;
  l.pp = 8;
  l.dp = 96;
  l.cp = 2;
  l.cp_comm_type = CpCommType::a2a_p2p;
  l.cp_a2a_level = 2;
  l.ep = 16;
  l.ep_intra_level = 8;
  l.expert_tp = 2;
  l.moe_capacity_factor = 1.0 / 3.0;
  l.virtual_stages = 3;
  l.pipeline_split = PipelineSplit::balanced;
  l.pipeline_schedule = PipelineSchedule::dualpipe;
  l.sequence_parallel = true;
  l.zero_stage = 3;
  l.micro_batch = 2;
  l.global_batch = 1536;
  l.recompute = Recompute::selective;
  l.precision = Precision::fp8;
  l.fp8_recipe = LowPrecisionRecipe::mxfp8;
  l.fp8_param_gather = true;
  l.flash_attention = false;
  return l;
}

// A point whose every number is one JSON text could round badly.
PlanPoint unusual_point(int64_t seed) {
  PlanPoint p;
  p.offer = 2;
  p.framework = 1;
  p.num_gpus = 12288 + seed;
  p.layout = unusual_layout(seed);
  p.fidelity = "event";
  p.step_time_s = 0.1 + double(seed);
  p.mfu = std::nextafter(0.5, 1.0);
  p.tokens_per_s = 1.0 / 7.0 * 1e7;
  p.peak_bytes_per_gpu = 81920.0 * 1024 * 1024 + 0.5;
  p.capacity_bytes = std::numeric_limits<double>::max();
  p.compute_s = std::numeric_limits<double>::denorm_min();
  p.exposed_comm_s = -0.0;
  p.bubble_s = std::numeric_limits<double>::min();
  p.days = 89.99999999999999;
  p.gpu_hours = 2.6e7 / 3;
  p.cost_usd = 6.02214076e23;
  p.energy_kwh = std::numeric_limits<double>::infinity();
  p.goodput = std::numeric_limits<double>::quiet_NaN();
  p.rank = 3;
  return p;
}

bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

// Equal as values, and every double the same bits (== would take -0.0 for 0.0 and never NaN for NaN).
void check_same(const PlanPoint& a, const PlanPoint& b) {
  for (auto field :
       {&PlanPoint::step_time_s, &PlanPoint::mfu, &PlanPoint::tokens_per_s, &PlanPoint::peak_bytes_per_gpu,
        &PlanPoint::capacity_bytes, &PlanPoint::compute_s, &PlanPoint::exposed_comm_s, &PlanPoint::bubble_s,
        &PlanPoint::days, &PlanPoint::gpu_hours, &PlanPoint::cost_usd, &PlanPoint::energy_kwh,
        &PlanPoint::goodput})
    CHECK(same_bits(a.*field, b.*field));
  CHECK(same_bits(a.layout.moe_capacity_factor, b.layout.moe_capacity_factor));
  PlanPoint x = a, y = b;
  x.goodput = y.goodput = 0;  // NaN: compared by its bits above
  CHECK(x.layout == y.layout);
  CHECK(x == y);
}

PlanPartial read_back(const PlanPartial& partial) {
  return partial_from_json(nlohmann::json::parse(to_json(partial).dump()));
}

}  // namespace

TEST_CASE(
    "plan partial: every field of a partial, its points and their layouts comes back from its JSON text",
    "[planner][partial]") {
  PlanPartial partial;
  partial.best = {unusual_point(0), unusual_point(1)};
  partial.best[1].fidelity = "analytic";
  partial.best[1].layout.pipeline_schedule.reset();  // unset: the default schedule
  partial.front = {unusual_point(2)};
  partial.pruned = {{"memory", 123456789012LL}, {"tp_divides_heads", 7}, {"over_deadline", 0}};
  partial.space_size = 9007199254740993LL;  // 2^53 + 1: no double holds it
  partial.evaluated = 42;
  partial.closest.fastest = unusual_point(3);
  partial.closest.least_memory = unusual_point(4);
  partial.interrupted = true;

  const PlanPartial back = read_back(partial);
  REQUIRE(back.best.size() == 2);
  check_same(back.best[0], partial.best[0]);
  check_same(back.best[1], partial.best[1]);
  CHECK(!back.best[1].layout.pipeline_schedule);
  REQUIRE(back.front.size() == 1);
  check_same(back.front[0], partial.front[0]);
  CHECK(back.pruned == partial.pruned);
  CHECK(back.space_size == partial.space_size);
  CHECK(back.evaluated == partial.evaluated);
  REQUIRE(back.closest.fastest);
  check_same(*back.closest.fastest, *partial.closest.fastest);
  CHECK(!back.closest.cheapest);
  REQUIRE(back.closest.least_memory);
  check_same(*back.closest.least_memory, *partial.closest.least_memory);
  CHECK(back.interrupted);
}

TEST_CASE("plan partial: an empty partial comes back empty", "[planner][partial]") {
  const PlanPartial back = read_back(PlanPartial{});
  CHECK(back.best.empty());
  CHECK(back.front.empty());
  CHECK(back.pruned.empty());
  CHECK(back.space_size == 0);
  CHECK(!back.closest.fastest);
  CHECK(!back.interrupted);
}

TEST_CASE("plan partial: doubles come back to the bit from the JSON text", "[planner][partial]") {
  // nlohmann::json writes the shortest digits that read back to the same double.
  for (double v : {0.1, 1.0 / 3.0, 2.0 / 3.0 * 1e-300, 5e-324, 1.7976931348623157e308,
                   std::nextafter(1.0, 2.0), 123456789.123456789, -0.0, 4.35e-5, 0.30000000000000004}) {
    PlanPartial partial;
    partial.best = {PlanPoint{}};
    partial.best[0].days = v;
    partial.best[0].layout.moe_capacity_factor = v;
    const PlanPartial back = read_back(partial);
    INFO(to_json(partial).dump());
    CHECK(same_bits(back.best.at(0).days, v));
    CHECK(same_bits(back.best.at(0).layout.moe_capacity_factor, v));
  }
}

TEST_CASE("plan partial: a malformed partial is an error naming the field", "[planner][partial]") {
  nlohmann::json j = to_json(PlanPartial{});
  j.erase("evaluated");
  CHECK_THROWS_WITH(partial_from_json(j), Catch::Contains("evaluated"));
  nlohmann::json k = to_json(PlanPartial{});
  k["best"] = nlohmann::json::array({{{"offer", 0}}});
  CHECK_THROWS_AS(partial_from_json(k), InputError);
  CHECK_THROWS_AS(partial_from_json(nlohmann::json::array()), InputError);
}
