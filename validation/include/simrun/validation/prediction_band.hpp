// How far to trust a predicted step time: a band from the yardstick's residuals for the
// prediction's family (framework profile × GPU architecture). The residuals (every supported
// run's signed error, its profile and architecture) ship as a generated data file,
// validation/data/prediction-bands.json, written by `simrun accuracy --write-bands FILE` and read
// at run time, so a prediction never reruns the yardstick. The statistic and what the band means:
// docs/validation.md "Prediction band".
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simrun/sim/framework/profile.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/validation/accuracy.hpp"

namespace simrun {

// The shipped residuals beside the yardstick, relative to the data folder (source tree or
// share/simrun); docs/validation.md "Prediction band" gives the one command that regenerates them.
inline constexpr const char* kPredictionBandsFile = "validation/data/prediction-bands.json";

// The band's percentiles of the family's signed errors: 10th and 90th, so about 8 in 10 of the
// family's measured runs fall inside it (docs/validation.md "Prediction band").
inline constexpr double kBandLowPercentile = 0.10, kBandHighPercentile = 0.90;

// One supported run of the yardstick as scored.
struct PredictionResidual {
  std::string run_id;        // e.g. "nemo2407_LLAMA2-7B_8gpu"
  std::string framework;     // its framework profile id, e.g. "nemo"
  std::string architecture;  // its GPU's architecture, e.g. "Hopper"
  double error = 0;          // (predicted − measured) / measured, e.g. −0.036
};

// Every residual of a bands file, in the file's order.
struct PredictionResiduals {
  std::vector<PredictionResidual> residuals;
  std::string file;  // where they were read from ("" when computed in process)
};

// The supported runs of a scored yardstick, in its order, errors rounded to 1e-4 (as written).
PredictionResiduals prediction_residuals(const AccuracyScore& score);

// The bands file: {"generated_by": `command`, "what": ..., "residuals": [{"id", "framework",
// "architecture", "error"}, ...]}, one residual per line so that a regeneration diffs by run.
std::string prediction_bands_text(const PredictionResiduals& residuals, const std::string& command);

// Reads a bands file; a malformed one is an InputError naming the file and field.
PredictionResiduals load_prediction_residuals(const std::filesystem::path& file);

// The band of one prediction's family.
struct StepTimeBand {
  std::string framework;     // the scenario's framework profile id, e.g. "megatron-core"
  std::string architecture;  // its GPU's architecture, e.g. "Hopper" ("" when the GPU states none)
  // The profiles extending `framework` whose runs stand in for it when it has none of its own on
  // this architecture, e.g. {"megatron-core-perf", "nemo"}; empty: its own runs (or none).
  std::vector<std::string> pooled_from;
  std::vector<PredictionResidual> runs;  // the family's residuals (empty: no measured runs)
  std::string file;                      // the bands file they come from
  // Set where the step time is no prediction but an assumption (an assumed MFU's): no band, and
  // this says why, e.g. "the step time follows from the assumed MFU 0.500".
  std::string assumption;
  double error_low = 0, error_high = 0;  // kBandLowPercentile / kBandHighPercentile of their errors

  bool measured() const { return !runs.empty(); }
  // The true step time relative to the prediction, measured / predicted − 1 = 1 / (1 + e) − 1:
  // the lower bound from the high error and the upper from the low one, e.g. −0.03 and +0.08.
  double low_fraction() const { return 1 / (1 + error_high) - 1; }
  double high_fraction() const { return 1 / (1 + error_low) - 1; }
  // "nemo on Hopper": the profile × architecture the band describes.
  std::string family() const;
};

// The band of `profile` on `architecture`: the profile's own residuals there, else those of the
// profiles of `catalog` that extend it directly, else none.
StepTimeBand step_time_band(const PredictionResiduals& residuals, const FrameworkProfile& profile,
                            const std::string& architecture, const FrameworkCatalog& catalog);

// The table's words after a step time: "-3.0% … +8.0%, 7 measured runs of this family: nemo on
// Hopper", "-9.8% … +12.0%, 26 measured runs of the profiles extending megatron-core on Hopper:
// megatron-core-perf, nemo", or "no measured runs of this family: deepspeed@0.6 on Hopper".
std::string step_time_band_text(const StepTimeBand& band);

// The report's "step_time_band_s": {"low", "high" (seconds; null without runs), "runs",
// "family", "framework", "architecture", "pooled_from", "percentiles"}.
nlohmann::json step_time_band_json(const StepTimeBand& band, double step_time_s);

// --explain's account: the bounds' formula and inputs (the family's runs, the extremes), or why
// there is no band.
std::vector<Explained> step_time_band_explanations(const StepTimeBand& band, double step_time_s);

}  // namespace simrun
