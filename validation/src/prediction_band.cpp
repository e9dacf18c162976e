// Prediction bands from the yardstick's residuals; see prediction_band.hpp.
#include "simrun/validation/prediction_band.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"

namespace simrun {
namespace {

using nlohmann::json;

// Errors are written to 0.01% so that a regeneration that moves nothing rewrites nothing.
constexpr double kErrorResolution = 1e-4;

double rounded_error(double error) { return std::round(error / kErrorResolution) * kErrorResolution; }

// The p-quantile of sorted values, linear between neighbouring order statistics (position
// p·(n − 1); Hyndman & Fan 1996 definition 7, numpy's and R's default).
double quantile(const std::vector<double>& sorted, double p) {
  SIMRUN_ASSERT(!sorted.empty(), "a quantile of no values");
  const double position = p * double(sorted.size() - 1);
  const size_t below = size_t(position);
  if (below + 1 >= sorted.size()) return sorted.back();
  const double above_weight = position - double(below);
  return sorted[below] + above_weight * (sorted[below + 1] - sorted[below]);
}

std::string architecture_name(const std::string& architecture) {
  return architecture.empty() ? "a GPU of no stated architecture" : architecture;
}

std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }

// "7 measured runs of nemo on Hopper" or "... of the profiles extending megatron-core on Hopper:
// megatron-core-perf, nemo".
std::string runs_description(const StepTimeBand& band) {
  const std::string runs =
      fmt::format("{} measured run{}", band.runs.size(), band.runs.size() == 1 ? "" : "s");
  if (band.pooled_from.empty()) return fmt::format("{} of this family: {}", runs, band.family());
  return fmt::format("{} of the profiles extending {} on {}: {}", runs, band.framework,
                     architecture_name(band.architecture), join_names(band.pooled_from));
}

}  // namespace

PredictionResiduals prediction_residuals(const AccuracyScore& score) {
  PredictionResiduals out;
  for (const RunScore& s : score.runs)
    if (s.ok()) out.residuals.push_back({s.id, s.framework, s.architecture, rounded_error(*s.error)});
  return out;
}

std::string prediction_bands_text(const PredictionResiduals& residuals, const std::string& command) {
  std::string text = "{\n";
  text += fmt::format("  \"generated_by\": {},\n", json(command).dump());
  text += fmt::format(
      "  \"what\": {},\n",
      json("The signed step-time error (predicted - measured) / measured of every supported run of the "
           "yardstick, with the run's framework profile and GPU architecture: the residuals estimate and "
           "simulate read for the step time's prediction band (docs/validation.md \"Prediction band\"). "
           "Generated: rerun the command above after the simulator's figures change.")
          .dump());
  text += "  \"residuals\": [\n";
  for (size_t i = 0; i < residuals.residuals.size(); ++i) {
    const PredictionResidual& r = residuals.residuals[i];
    text += fmt::format("    {{\"id\": {}, \"framework\": {}, \"architecture\": {}, \"error\": {:.4f}}}{}\n",
                        json(r.run_id).dump(), json(r.framework).dump(), json(r.architecture).dump(), r.error,
                        i + 1 < residuals.residuals.size() ? "," : "");
  }
  text += "  ]\n}\n";
  return text;
}

PredictionResiduals load_prediction_residuals(const std::filesystem::path& file) {
  const json doc = load_json_file(file);
  const std::string name = file.string();
  if (!doc.is_object()) throw InputError(name, "(top level)", "expected an object with \"residuals\"");
  JsonReader top(doc, name);
  top.string("generated_by");
  top.string_or("what", "");
  const json& list = top.raw("residuals");
  if (!list.is_array())
    top.fail("residuals", "expected a list of {\"id\", \"framework\", \"architecture\", \"error\"}");
  top.finish();
  PredictionResiduals out;
  out.file = name;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("residuals[{}]", i);
    if (!list[i].is_object()) throw InputError(name, path, "expected an object");
    JsonReader row(list[i], name, path);
    PredictionResidual r;
    r.run_id = row.string("id");
    r.framework = row.string("framework");
    r.architecture = row.string("architecture");
    r.error = row.number("error", kMinError, kMaxError);  // as accuracy scores them (plausible_error)
    row.finish();
    out.residuals.push_back(std::move(r));
  }
  return out;
}

std::string StepTimeBand::family() const { return framework + " on " + architecture_name(architecture); }

StepTimeBand step_time_band(const PredictionResiduals& residuals, const FrameworkProfile& profile,
                            const std::string& architecture, const FrameworkCatalog& catalog) {
  StepTimeBand band;
  band.framework = profile.id;
  band.architecture = architecture;
  band.file = residuals.file;
  if (architecture.empty()) return band;  // no family to match
  const auto runs_of = [&](const std::string& framework) {
    std::vector<PredictionResidual> out;
    for (const PredictionResidual& r : residuals.residuals)
      if (r.framework == framework && r.architecture == architecture) out.push_back(r);
    return out;
  };
  band.runs = runs_of(profile.id);
  if (band.runs.empty())
    for (const auto& [id, other] : catalog.profiles()) {  // sorted by id
      if (other.extends != profile.id) continue;
      const std::vector<PredictionResidual> pooled = runs_of(id);
      if (pooled.empty()) continue;
      band.pooled_from.push_back(id);
      band.runs.insert(band.runs.end(), pooled.begin(), pooled.end());
    }
  if (band.runs.empty()) return band;
  std::vector<double> errors;
  for (const PredictionResidual& r : band.runs) errors.push_back(r.error);
  std::sort(errors.begin(), errors.end());
  band.error_low = quantile(errors, kBandLowPercentile);
  band.error_high = quantile(errors, kBandHighPercentile);
  return band;
}

std::string step_time_band_text(const StepTimeBand& band) {
  if (!band.assumption.empty()) return "no band: " + band.assumption;
  if (!band.measured()) return "no measured runs of this family: " + band.family();
  return fmt::format("{} … {}, {}", percent(band.low_fraction()), percent(band.high_fraction()),
                     runs_description(band));
}

json step_time_band_json(const StepTimeBand& band, double step_time_s) {
  const bool measured = band.measured();
  return {{"low", measured ? json(step_time_s * (1 + band.low_fraction())) : json(nullptr)},
          {"high", measured ? json(step_time_s * (1 + band.high_fraction())) : json(nullptr)},
          {"runs", band.runs.size()},
          {"family", band.family()},
          {"framework", band.framework},
          {"architecture", band.architecture},
          {"pooled_from", band.pooled_from},
          {"percentiles", {100 * kBandLowPercentile, 100 * kBandHighPercentile}},
          {"assumption", band.assumption.empty() ? json(nullptr) : json(band.assumption)}};
}

std::vector<Explained> step_time_band_explanations(const StepTimeBand& band, double step_time_s) {
  if (!band.assumption.empty())
    return {{"step_time_band_s", 0, "measured runs", "no band: the step time is assumed, not predicted",
             band.assumption}};
  if (!band.measured())
    return {{"step_time_band_s", 0, "measured runs", "no band: no measured runs of this family",
             fmt::format("{}: {} holds no run of {} on {}, nor of a profile extending it", band.family(),
                         band.file.empty() ? kPredictionBandsFile : band.file, band.framework,
                         architecture_name(band.architecture))}};
  const auto lowest = std::min_element(band.runs.begin(), band.runs.end(),
                                       [](const auto& a, const auto& b) { return a.error < b.error; });
  const auto highest = std::max_element(band.runs.begin(), band.runs.end(),
                                        [](const auto& a, const auto& b) { return a.error < b.error; });
  const std::string where = fmt::format(
      "e = predicted / measured - 1 over the {} in {} (event simulation), from {} ({}) to {} ({})",
      runs_description(band), band.file.empty() ? kPredictionBandsFile : band.file, percent(lowest->error),
      lowest->run_id, percent(highest->error), highest->run_id);
  const int low_pct = int(std::lround(100 * kBandLowPercentile)),
            high_pct = int(std::lround(100 * kBandHighPercentile));
  return {{"step_time_band_s.low", step_time_s * (1 + band.low_fraction()), "s",
           fmt::format("step_time_s / (1 + e_p{}), e_p{} the {}th percentile of the family's signed errors e",
                       high_pct, high_pct, high_pct),
           fmt::format("step_time_s={:.6g}, e_p{}={}; {}", step_time_s, high_pct, percent(band.error_high),
                       where)},
          {"step_time_band_s.high", step_time_s * (1 + band.high_fraction()), "s",
           fmt::format("step_time_s / (1 + e_p{}), e_p{} the {}th percentile of the family's signed errors e",
                       low_pct, low_pct, low_pct),
           fmt::format("step_time_s={:.6g}, e_p{}={}; {}", step_time_s, low_pct, percent(band.error_low),
                       where)}};
}

}  // namespace simrun
