// The step time's prediction band end to end (cli/step_time_band.cpp, validation/prediction_band.hpp):
// estimate and simulate show it in the table, the JSON ("step_time_band_s") and --explain, from
// the shipped residuals of the scenario's family; a family without measured runs says so;
// `simrun accuracy --write-bands FILE` writes the residuals.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "yardstick_files.hpp"

using namespace simrun::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kExample = fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json";

// The shipped signed errors of the runs of these profiles on this architecture, sorted.
std::vector<double> shipped_errors(const std::vector<std::string>& frameworks,
                                   const std::string& architecture) {
  std::vector<double> errors;
  const json shipped = json::parse(read_text(kShippedBands));
  for (const json& r : shipped.at("residuals"))
    if (r.at("architecture") == architecture &&
        std::find(frameworks.begin(), frameworks.end(), r.at("framework").get<std::string>()) !=
            frameworks.end())
      errors.push_back(r.at("error"));
  std::sort(errors.begin(), errors.end());
  return errors;
}

double quantile(const std::vector<double>& sorted, double p) {
  const double position = p * double(sorted.size() - 1);
  const size_t below = size_t(position);
  if (below + 1 >= sorted.size()) return sorted.back();
  return sorted[below] + (position - double(below)) * (sorted[below + 1] - sorted[below]);
}

}  // namespace

// The example names no framework: Megatron-Core, whose own profile has no measured runs; those of
// the profiles extending it on Hopper (NeMo, Megatron-Core as the README's scaling runs set it up)
// stand in, and the band is step_time / (1 + e) at their 90th and 10th percentile errors.
TEST_CASE("estimate and simulate give the example's step time a band from its family's measured runs",
          "[cli][prediction_band]") {
  const std::vector<double> errors = shipped_errors({"megatron-core-perf", "nemo"}, "Hopper");
  REQUIRE(errors.size() >= 10);
  for (const char* command : {"estimate", "simulate"}) {
    INFO(command);
    const json report = run_simrun_json(std::string(command) + " " + shell_quoted(kExample) + " --json");
    REQUIRE(report.contains("step_time_band_s"));
    const json& band = report.at("step_time_band_s");
    const double step = report.at("step_time_s");
    CHECK(band.at("runs") == errors.size());
    CHECK(band.at("family") == "megatron-core on Hopper");
    CHECK(band.at("pooled_from") == json::array({"megatron-core-perf", "nemo"}));
    CHECK(band.at("low").get<double>() == Approx(step / (1 + quantile(errors, 0.9))));
    CHECK(band.at("high").get<double>() == Approx(step / (1 + quantile(errors, 0.1))));
    CHECK(band.at("low").get<double>() < band.at("high").get<double>());
  }

  const RunResult table = run_simrun("estimate " + shell_quoted(kExample));
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("measured runs of the profiles extending megatron-core on Hopper: "
                                        "megatron-core-perf, nemo)\n"));
  CHECK_THAT(table.out, Catch::Contains(" … +"));

  const RunResult explain = run_simrun("estimate " + shell_quoted(kExample) + " --explain");
  REQUIRE(explain.exit_code == 0);
  CHECK_THAT(explain.out, Catch::Contains("step_time_band_s.low = "));
  CHECK_THAT(explain.out, Catch::Contains("step_time_band_s.high = "));
  CHECK_THAT(explain.out, Catch::Contains("= step_time_s / (1 + e_p90)"));
}

TEST_CASE("a family without measured runs says so in the table, the JSON and --explain",
          "[cli][prediction_band]") {
  const std::string args = "estimate " + shell_quoted(kExample) + " --framework deepspeed --virtual-stages 1";
  const RunResult table = run_simrun(args);
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("(no measured runs of this family: deepspeed@0.6 on Hopper)"));

  const json band = run_simrun_json(args + " --json").at("step_time_band_s");
  CHECK(band.at("runs") == 0);
  CHECK(band.at("low").is_null());
  CHECK(band.at("high").is_null());
  CHECK(band.at("family") == "deepspeed@0.6 on Hopper");

  const RunResult explain = run_simrun(args + " --explain");
  REQUIRE(explain.exit_code == 0);
  CHECK_THAT(
      explain.out,
      Catch::Contains("step_time_band_s = 0 measured runs\n    = no band: no measured runs of this family"));
}

// An assumed MFU gives the estimate its step time: no model prediction, so no band (simulate
// models the step anyway and keeps its band).
TEST_CASE("an assumed MFU's step has no band, and its compute is not split into phases",
          "[cli][prediction_band]") {
  const std::string args = "estimate " + shell_quoted(kExample) + " --mfu 0.5";
  const RunResult table = run_simrun(args);
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("(no band: the step time follows from the assumed MFU 0.500)"));
  CHECK_THAT(table.out, Catch::Contains("(the assumed MFU's step, not split into phases)"));
  CHECK_THAT(table.out, !Catch::Contains("fwd 0.000"));
  const json band = run_simrun_json(args + " --json").at("step_time_band_s");
  CHECK(band.at("low").is_null());
  CHECK(band.at("runs") == 0);
  CHECK(band.at("assumption") == "the step time follows from the assumed MFU 0.500");
  const json simulated = run_simrun_json("simulate " + shell_quoted(kExample) + " --mfu 0.5 --json");
  CHECK(simulated.at("step_time_band_s").at("runs").get<int>() > 0);
  CHECK(simulated.at("step_time_band_s").at("assumption").is_null());
}

TEST_CASE("simrun accuracy --write-bands writes the supported runs' residuals",
          "[cli][prediction_band][accuracy]") {
  // One small shipped row (NeMo 24.07, 8 H100) and one the simulator cannot map.
  json row;
  for (const json& r : json::parse(read_text(kShippedRuns)))
    if (r.at("id") == "nemo2407_LLAMA2-7B_8gpu") row = r;
  REQUIRE(row.is_object());
  json unknown = row;
  unknown["id"] = "team_tpu_run";
  unknown["gpu"] = "TPU v5p";
  const fs::path runs = write_file("band-runs.json", json::array({row, unknown}).dump());
  const fs::path bands = scratch_dir() / "bands.json";
  fs::remove(bands);

  const json report =
      run_simrun_json("accuracy " + shell_quoted(runs) + " --json --write-bands " + shell_quoted(bands));
  const json written = json::parse(read_text(bands));
  CHECK_THAT(written.at("generated_by").get<std::string>(), Catch::StartsWith("simrun accuracy "));
  REQUIRE(written.at("residuals").size() == 1);
  const json& r = written.at("residuals")[0];
  CHECK(r.at("id") == "nemo2407_LLAMA2-7B_8gpu");
  CHECK(r.at("framework") == "nemo");
  CHECK(r.at("architecture") == "Hopper");
  CHECK(r.at("error").get<double>() ==
        Approx(report.at("runs")[0].at("error_pct").get<double>() / 100).margin(1e-4));

  // A band scores the simulator as estimate and simulate run it: every run, uncalibrated.
  const RunResult grouped =
      run_simrun("accuracy " + shell_quoted(runs) + " --group nemo2407 --write-bands " + shell_quoted(bands));
  CHECK(grouped.exit_code == 2);
  const RunResult unwritable = run_simrun("accuracy " + shell_quoted(runs) + " --write-bands " +
                                          shell_quoted(scratch_dir() / "no" / "b.json"));
  CHECK(unwritable.exit_code == 2);
  CHECK_THAT(unwritable.err, Catch::Contains("--write-bands: cannot write"));
}
