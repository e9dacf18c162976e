// The step time's prediction band in estimate and simulate: the shipped residuals
// (validation/data/prediction-bands.json under the data folder, validation/prediction_band.hpp)
// for the scenario's framework profile × GPU architecture.
#include <fmt/format.h>

#include <system_error>

#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun::cli {

// Run from the repository root after the simulator's figures change (docs/validation.md).
const char* const kRegenerateBandsCommand =
    "build/cli/simrun accuracy --write-bands validation/data/prediction-bands.json";

StepTimeBand attach_step_time_band(const CliEnv& env, const Scenario& scenario, const Catalogs& catalogs,
                                   Report& report) {
  const std::filesystem::path file = env.data_dir / kPredictionBandsFile;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw InputError(file.string(), "(file)",
                     std::string("missing: the prediction bands ship with simrun's data (regenerate: ") +
                         kRegenerateBandsCommand + ")");
  StepTimeBand band = step_time_band(load_prediction_residuals(file), scenario.framework,
                                     scenario.cluster.gpu.architecture, catalogs.frameworks);
  // The estimate's step under an assumed MFU is the assumption's (simulate models it regardless).
  if (scenario.run.assumed_mfu && report.fidelity == "analytic") {
    band.runs.clear();
    band.pooled_from.clear();
    band.assumption =
        fmt::format("the step time follows from the assumed MFU {:.3f}", *scenario.run.assumed_mfu);
  }
  for (Explained& e : step_time_band_explanations(band, report.step_time_s))
    report.explanations.push_back(std::move(e));
  return band;
}

}  // namespace simrun::cli
