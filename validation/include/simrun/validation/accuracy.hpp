// The yardstick as a report: every run of a measured-runs file (the reference's schema; the
// shipped one is validation/data/measured-runs.json) simulated for one step (event simulation,
// representative ranks) and set against its reference step time, with the mean absolute
// percentage error (MAPE) per group and over all supported runs. `simrun accuracy` prints it as a
// table, JSON (DESIGN.md "Accuracy report") or CSV; bench/validate_measured adds exploration knobs.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/report/csv.hpp"
#include "simrun/validation/measured_runs.hpp"

namespace simrun {

// A run within this fraction of its reference counts as "within 15%".
inline constexpr double kAccuracyWithin = 0.15;

// The errors a comparison can hold: above −100% (a predicted step time is positive) and at most
// +9,900% (100× the reference). Outside, or not finite, the reference is not a step time in
// seconds (a unit slip, a per-token time): the run is listed as unsupported, not scored, and its
// error never reaches a bands file (prediction_band.hpp), whose reader keeps to the same range.
inline constexpr double kMinError = -0.999, kMaxError = 99;
inline bool plausible_error(double error) { return error >= kMinError && error <= kMaxError; }

// One run as scored.
struct RunScore {
  std::string id;                     // row id, e.g. "narayanan2021_t1_1T"
  std::string group;                  // source group, e.g. "narayanan_t1" ("" when the row has none)
  std::string framework;              // the run's framework profile id, e.g. "nemo"
  std::string architecture;           // its GPU's architecture, e.g. "Hopper" ("" without a scenario)
  std::string status = "ok";          // "ok" or "unsupported: why" (why never empty)
  double reference_s = 0;             // reference step time in seconds; 0 = none
  std::string reference_kind;         // "measured" | "derived" | "from tokens/s" | "from TFLOP/s, …" | ""
  std::optional<double> predicted_s;  // simulated step time in seconds; set when ok
  std::optional<double> error;        // (predicted − reference) / reference, e.g. −0.036; set when ok
  std::optional<bool> fits;           // the simulation's memory verdict; set when ok
  double mfu = 0;                     // simulated MFU (0 when not simulated)
  std::vector<std::string> defaults_used;  // unstated fields filled, e.g. "micro_batch=1"

  bool ok() const { return status == "ok"; }
};

struct GroupScore {
  int runs = 0;     // supported (simulated) runs of the group
  double mape = 0;  // their mean |error| as a fraction, e.g. 0.0588; 0 when runs = 0
};

struct AccuracyScore {
  std::vector<RunScore> runs;                // every scored row, in file order
  std::map<std::string, GroupScore> groups;  // every group of the scored rows, by name
  int supported = 0;                         // runs simulated and compared
  int within_15pct = 0;                      // of those, |error| ≤ kAccuracyWithin
  double mape = 0;                           // mean |error| over the supported runs (fraction)
  std::vector<std::string> not_fitting;      // supported runs predicted not to fit in memory
  std::string worst_id;                      // the supported run with the largest |error|
  double worst_error = 0;                    // its |error| (fraction)
};

struct AccuracyOptions {
  std::string group;        // score only this group's rows; empty: every row
  Calibration calibration;  // per GPU kind efficiencies (as `simrun simulate --calibration`)
  // Exploration knobs (bench/validate_measured; not the published figures), each overriding one
  // default for every run.
  std::optional<double> step_overhead_s, overlap_slowdown, eager_memory_factor;
  // Rows that give only TFLOP/s per GPU get a reference step time from Megatron's FLOP count in
  // this convention (the source does not state its own); unset: they stay unsupported.
  std::optional<AttentionFlops> tflops_convention;
  std::string trace_id;  // record the Chrome trace of this run (on_simulated receives it)
  // Called after each run is simulated, in file order (breakdowns, traces, progress).
  std::function<void(const MeasuredRun&, const RunScore&, const SimulationOutput&)> on_simulated;
};

// The rows of a measured-runs document, in file order. A row that cannot be mapped (not an
// object, no id, an unknown GPU, no layout, fields of the wrong type) is a run that says why; a
// document that is not a list of rows (another type, or a non-empty list holding no row object)
// is an InputError naming `file`; an empty list is no runs.
std::vector<MeasuredRun> measured_runs_of(const nlohmann::json& doc, const std::string& file,
                                          const Catalogs& catalogs);

// The groups of `runs`, sorted, each once.
std::vector<std::string> group_names(const std::vector<MeasuredRun>& runs);

// Simulates every supported run (of options.group, when given) and scores it. A run the
// simulator refuses becomes unsupported with the reason; nothing here throws for a row.
AccuracyScore score_accuracy(const std::vector<MeasuredRun>& runs, const AccuracyOptions& options = {});

// DESIGN.md "Accuracy report": {"summary": {"supported", "within_15pct", "mape_pct",
// "not_fitting"}, "groups": {name: {"runs", "mape_pct"}}, "runs": [{"id", "group", "status",
// "predicted_s", "reference_s", "error_pct", "fits", "reference_kind", "defaults"}]}; values not
// known (an unsupported run's prediction, a group without supported runs' MAPE) are null.
nlohmann::json accuracy_json(const AccuracyScore& score);

// The CSV: a header, then one row per run: id, group, status, predicted_s, reference_s,
// error_pct, fits, reference_kind, at full precision (the header alone for a file of no rows).
void write_accuracy_csv(const AccuracyScore& score, std::ostream& out);

// The human table: a line per run (id, group, predicted, reference, error, fits, status and the
// defaults it took), MAPE per group, the summary line and the runs predicted not to fit.
void write_accuracy_table(const AccuracyScore& score, std::ostream& out);

}  // namespace simrun
