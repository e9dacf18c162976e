// The published measured training runs (validation/data/measured-runs.json) as simrun
// scenarios: one mapping, used by `simrun accuracy` (accuracy.hpp, which also reads other files
// in the same schema) and by the memory test (every run trained, so every run must be predicted
// to fit).
//
// A row gives the GPU as free text, the model's shape, the layout (null = the source does not
// say) and the measured (or derived) step time. The mapping turns it into a Scenario plus the
// framework profile of the row's source (its WorkloadOptions, MemoryDefaults), with ONE documented
// set of defaults for every unstated field — no per-run settings, never the measured answer.
// The defaults, with their sources, are in measured_run_defaults_text() (printed by the
// benchmark) and in the comments of measured_runs.cpp.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// The group of a row that names none (or not as a string).
inline constexpr const char* kNoGroup = "(none)";

struct MeasuredRun {
  std::string id;     // row id, e.g. "mosaic_mpt13b_h100_80gb_8gpu_s2048_gbs16"
  std::string group;  // source group, e.g. "mosaic"
  // The framework profile of the row's source group (sim/framework/profiles/<id>.json), e.g.
  // "composer": the only per-source choice; the scenario's framework is its.
  std::string framework = kDefaultFramework;
  // Empty when the scenario was built; else why not (no layout, tp·pp·dp·cp ≠ num_gpus, ...).
  std::string no_scenario;
  // Empty when the step time can be simulated and compared; else why not (MoE, a GPU SKU not in
  // the catalog, no reference time). A run can have a scenario (memory-checked) without this.
  std::string unsupported;
  Scenario scenario;           // its framework: the row's profile (workload and memory behaviour)
  double reference_s = 0;      // measured.iteration_s, else derived.iteration_s, else from tokens/s; 0 = none
  double tflops_per_gpu = 0;   // measured.tflops_per_gpu in the source's FLOP convention; 0 = none
  std::string reference_kind;  // "measured" | "derived" | "from tokens/s" | ""
  std::vector<std::string> defaults_used;  // unstated fields filled, e.g. "micro_batch=1"

  // The one reason the run is not compared is that it gives no usable step time (a TFLOP/s per GPU
  // may stand in: AccuracyOptions::tflops_convention).
  bool no_step_time = false;

  bool has_scenario() const { return no_scenario.empty(); }
  bool simulatable() const { return has_scenario() && unsupported.empty(); }
};

// One row (an object with a string "id") → run. `catalogs` supplies GPUs (the row's free text as
// mapped below, or a catalog id as written), fabrics and (for MoE rows the file does not fully
// describe) catalog models. A row it cannot map says why in the run (no_scenario and
// unsupported, never empty); measured_runs_of (accuracy.hpp) also takes rows it cannot read.
MeasuredRun measured_run(const nlohmann::json& row, const Catalogs& catalogs);

// A row's group: its "group" string, or kNoGroup.
std::string measured_run_group(const nlohmann::json& row);

// Every row of a measured-runs file, in file order (measured_runs_of: a file that is not a list
// of rows is an InputError, a row it cannot read a run that says why).
std::vector<MeasuredRun> load_measured_runs(const std::filesystem::path& file, const Catalogs& catalogs);

// The defaults for unstated fields and the per-framework behaviour, as printed text (one item
// per line), for `simrun accuracy`'s output and the README.
std::string measured_run_defaults_text();

}  // namespace simrun
