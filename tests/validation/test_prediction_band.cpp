// Tests of the prediction band (validation/prediction_band.hpp): the percentiles and their
// conversion into a band on the true step time, the family lookup (own runs, runs of the profiles
// extending it, none) and the bands file's reading. That the shipped file is the yardstick's
// residuals of today's simulator is test_accuracy's check, on its one run of the yardstick.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "simrun/common/error.hpp"
#include "simrun/validation/prediction_band.hpp"
#include "workload_test_util.hpp"
#include "yardstick_files.hpp"

using namespace simrun;
namespace fs = std::filesystem;

namespace {

const FrameworkProfile& profile(const std::string& id) {
  return test::catalogs().frameworks.resolve(id, "t.json", "framework");
}

PredictionResiduals residuals(const std::vector<PredictionResidual>& rows) { return {rows, "bands.json"}; }

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "simrun-test-prediction-band";
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

}  // namespace

TEST_CASE(
    "prediction band: the 10th and 90th percentiles of the family's errors, as a band on the true step time",
    "[validation][prediction_band]") {
  // Eleven nemo runs on Hopper with errors 0%, 1%, ..., 10%: the 10th percentile is the second
  // (1%), the 90th the tenth (9%); an Ampere run and a composer run are other families.
  std::vector<PredictionResidual> rows;
  for (int i = 0; i <= 10; ++i) rows.push_back({fmt::format("r{}", i), "nemo", "Hopper", 0.01 * i});
  rows.push_back({"ampere", "nemo", "Ampere", -0.5});
  rows.push_back({"composer", "composer", "Hopper", 0.5});
  const StepTimeBand band =
      step_time_band(residuals(rows), profile("nemo"), "Hopper", test::catalogs().frameworks);
  REQUIRE(band.measured());
  CHECK(band.runs.size() == 11);
  CHECK(band.pooled_from.empty());
  CHECK(band.error_low == Approx(0.01));
  CHECK(band.error_high == Approx(0.09));
  // A prediction 9% high means the true time is predicted / 1.09: the band's low end.
  CHECK(band.low_fraction() == Approx(1 / 1.09 - 1));
  CHECK(band.high_fraction() == Approx(1 / 1.01 - 1));
  CHECK(step_time_band_text(band) == "-8.3% … -1.0%, 11 measured runs of this family: nemo on Hopper");
  const nlohmann::json j = step_time_band_json(band, 2.0);
  CHECK(j.at("low").get<double>() == Approx(2.0 / 1.09));
  CHECK(j.at("high").get<double>() == Approx(2.0 / 1.01));
  CHECK(j.at("runs") == 11);
  CHECK(j.at("family") == "nemo on Hopper");

  // Interpolated between neighbours when p·(n − 1) falls between them: 0, 10%, 20% → 2% and 18%.
  const StepTimeBand three = step_time_band(
      residuals({{"a", "nemo", "Hopper", 0.2}, {"b", "nemo", "Hopper", 0.0}, {"c", "nemo", "Hopper", 0.1}}),
      profile("nemo"), "Hopper", test::catalogs().frameworks);
  CHECK(three.error_low == Approx(0.02));
  CHECK(three.error_high == Approx(0.18));
}

TEST_CASE(
    "prediction band: about 8 in 10 of the family's measured runs fall inside the band of their prediction",
    "[validation][prediction_band]") {
  // A run predicted at p with error e measured p / (1 + e): inside [p / (1 + e90), p / (1 + e10)]
  // exactly when e10 ≤ e ≤ e90. A band built the wrong way round holds none of them.
  const PredictionResiduals shipped = load_prediction_residuals(test::kShippedBands);
  for (const auto& [framework, architecture] :
       std::vector<std::pair<std::string, std::string>>{{"nemo", "Hopper"}, {"composer", "Ampere"}}) {
    const StepTimeBand band =
        step_time_band(shipped, profile(framework), architecture, test::catalogs().frameworks);
    INFO(band.family());
    REQUIRE(band.runs.size() >= 10);
    int inside = 0;
    for (const PredictionResidual& r : band.runs) {
      const double predicted = 3.0, measured = predicted / (1 + r.error);
      const nlohmann::json j = step_time_band_json(band, predicted);
      if (measured >= j.at("low").get<double>() - 1e-12 && measured <= j.at("high").get<double>() + 1e-12)
        ++inside;
    }
    CHECK(inside >= 0.75 * double(band.runs.size()));
    CHECK(inside < int(band.runs.size()));  // the extremes fall outside
  }
}

TEST_CASE("prediction band: a profile without runs pools the profiles extending it, else says there are none",
          "[validation][prediction_band]") {
  const PredictionResiduals rows =
      residuals({{"n1", "nemo", "Hopper", 0.05},
                 {"p1", "megatron-core-perf", "Hopper", -0.05},
                 {"c1", "composer", "Hopper", 0.3},  // extends fsdp1, not megatron-core
                 {"old", "megatron-lm-2021", "Ampere", 0.0}});
  const FrameworkCatalog& catalog = test::catalogs().frameworks;
  REQUIRE(profile("nemo").extends == kDefaultFramework);
  REQUIRE(profile("megatron-core-perf").extends == kDefaultFramework);

  const StepTimeBand pooled = step_time_band(rows, profile(kDefaultFramework), "Hopper", catalog);
  CHECK(pooled.runs.size() == 2);
  CHECK(pooled.pooled_from == std::vector<std::string>{"megatron-core-perf", "nemo"});
  CHECK(pooled.family() == "megatron-core on Hopper");
  CHECK_THAT(step_time_band_text(pooled),
             Catch::EndsWith(", 2 measured runs of the profiles extending megatron-core on Hopper: "
                             "megatron-core-perf, nemo"));

  // Its own runs come first: megatron-core with one run of its own on Hopper takes only that one.
  PredictionResiduals own = rows;
  own.residuals.push_back({"m1", kDefaultFramework, "Hopper", 0.01});
  const StepTimeBand own_band = step_time_band(own, profile(kDefaultFramework), "Hopper", catalog);
  CHECK(own_band.runs.size() == 1);
  CHECK(own_band.pooled_from.empty());

  // No runs of deepspeed (nor of a profile extending it), none of megatron-core's children on
  // Blackwell, and a GPU that states no architecture.
  for (const auto& [framework, architecture, family] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"deepspeed", "Hopper", "deepspeed@0.6 on Hopper"},
           {kDefaultFramework, "Blackwell", "megatron-core on Blackwell"},
           {"nemo", "", "nemo on a GPU of no stated architecture"}}) {
    const StepTimeBand none = step_time_band(rows, profile(framework), architecture, catalog);
    CHECK_FALSE(none.measured());
    CHECK(step_time_band_text(none) == fmt::format("no measured runs of this family: {}", family));
    const nlohmann::json j = step_time_band_json(none, 2.0);
    CHECK(j.at("low").is_null());
    CHECK(j.at("high").is_null());
    CHECK(j.at("runs") == 0);
    const std::vector<Explained> why = step_time_band_explanations(none, 2.0);
    REQUIRE(why.size() == 1);
    CHECK(why[0].key == "step_time_band_s");
  }
}

TEST_CASE("prediction band: the bands file reads back what was written, and a bad one names its field",
          "[validation][prediction_band]") {
  const PredictionResiduals rows =
      residuals({{"a \"quoted\" id", "nemo", "Hopper", -0.1234}, {"b", "composer", "Ampere", 0.05}});
  const fs::path file =
      write_file("bands.json", prediction_bands_text(rows, "simrun accuracy --write-bands x"));
  const PredictionResiduals back = load_prediction_residuals(file);
  REQUIRE(back.residuals.size() == 2);
  CHECK(back.residuals[0].run_id == "a \"quoted\" id");
  CHECK(back.residuals[0].error == -0.1234);
  CHECK(back.residuals[1].architecture == "Ampere");
  CHECK(back.file == file.string());

  const fs::path bad = write_file(
      "bad-bands.json",
      R"({"generated_by": "x", "residuals": [{"id": "a", "framework": "nemo", "architecture": "Hopper", "error": "big"}]})");
  try {
    load_prediction_residuals(bad);
    FAIL("a string error was read");
  } catch (const InputError& e) {
    CHECK(e.file() == bad.string());
    CHECK(e.field() == "residuals[0].error");
  }
  const fs::path unknown_key = write_file("unknown-bands.json", R"({"generated_by": "x", "residual": []})");
  CHECK_THROWS_AS(load_prediction_residuals(unknown_key), InputError);
}

// The shipped file holds the residuals of today's simulator on the shipped yardstick; when the
// model's figures move, the one command below rewrites it.
