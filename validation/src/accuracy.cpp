// Scoring measured runs; see accuracy.hpp.
#include "simrun/validation/accuracy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <set>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun {
namespace {

using nlohmann::json;

// A reason or id in a table cell: one line, no terminal controls (echo.hpp).
constexpr size_t kCellMaxBytes = 400;

std::string type_name(const json& j) {
  if (j.is_null()) return "null";
  if (j.is_object()) return "an object";
  if (j.is_array()) return "a list";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  return "a number";
}

// Why a run is not compared: the mapping's reason (never empty: a run without one says so).
std::string unsupported_reason(const MeasuredRun& run) {
  if (!run.unsupported.empty()) return run.unsupported;
  if (!run.no_scenario.empty()) return run.no_scenario;
  return "not mapped to a scenario (no reason recorded)";
}

// A row the mapping cannot read at all: no object, no id. Named by its place in the file.
MeasuredRun unreadable_row(size_t index, const std::string& why) {
  MeasuredRun r;
  r.id = fmt::format("rows[{}]", index);
  r.group = kNoGroup;
  r.no_scenario = why;
  r.unsupported = why;
  return r;
}

// The row's id when it has a string one, else its place in the file.
std::string row_name(const json& row, size_t index) {
  if (row.is_object() && row.contains("id") && row.at("id").is_string())
    return row.at("id").get<std::string>();
  return fmt::format("rows[{}]", index);
}

MeasuredRun mapped_row(const json& row, size_t index, const Catalogs& catalogs) {
  if (!row.is_object()) return unreadable_row(index, "a row is an object, got " + type_name(row));
  if (!row.contains("id") || !row.at("id").is_string() || row.at("id").get<std::string>().empty())
    return unreadable_row(index, "no \"id\" string");
  const auto refused = [&](const std::string& why) {
    MeasuredRun r = unreadable_row(index, why);
    r.id = row_name(row, index);
    r.group = measured_run_group(row);
    return r;
  };
  try {
    return measured_run(row, catalogs);
  } catch (const InputError& e) {  // a catalog lookup refused the row's values
    return refused(e.field().empty() ? e.why() : e.field() + ": " + e.why());
  } catch (const json::exception&) {  // a field of an unexpected type
    return refused("a field of the wrong type (see the measured-runs schema)");
  }
}

// The run as simulated: the mapping's options, the calibration and the exploration knobs.
SimulateOptions simulate_options(const MeasuredRun& run, const AccuracyOptions& options) {
  SimulateOptions o = framework_simulate_options(run.scenario);  // the mapping's profile is the scenario's
  o.calibration = options.calibration;
  if (options.step_overhead_s) o.workload.step_overhead_s = *options.step_overhead_s;
  if (options.overlap_slowdown) o.step.overlap_slowdown = *options.overlap_slowdown;
  if (options.eager_memory_factor) o.workload.eager_memory_factor = *options.eager_memory_factor;
  o.step.record_trace = !options.trace_id.empty() && run.id == options.trace_id;
  return o;
}

// The run's score before simulation: its reference and, when it cannot be compared, why. A row
// with only TFLOP/s per GPU gets a step time from Megatron's FLOP count under
// options.tflops_convention.
RunScore unsimulated_score(const MeasuredRun& run, const AccuracyOptions& options) {
  RunScore s;
  s.id = run.id;
  s.group = run.group;
  s.framework = run.framework;
  if (run.has_scenario()) s.architecture = run.scenario.cluster.gpu.architecture;
  s.reference_s = run.reference_s;
  s.reference_kind = run.reference_kind;
  s.defaults_used = run.defaults_used;
  if (!run.simulatable()) s.status = "unsupported: " + unsupported_reason(run);
  if (options.tflops_convention && run.has_scenario() && run.no_step_time && run.tflops_per_gpu > 0) {
    const Layout& l = run.scenario.layout;
    s.reference_s = count_flops_per_sequence(run.scenario.model, *options.tflops_convention).total() *
                    double(l.global_batch) / (run.tflops_per_gpu * 1e12 * double(l.world_size()));
    s.reference_kind = std::string("from TFLOP/s, ") +
                       (*options.tflops_convention == AttentionFlops::causal ? "causal" : "non-causal");
    s.status = "ok";
  }
  return s;
}

void simulate_run(const MeasuredRun& run, const AccuracyOptions& options, RunScore& s) {
  std::optional<SimulationOutput> o;
  try {
    o = simulate(run.scenario, simulate_options(run, options));
    s.predicted_s = o->report.step_time_s;
    s.error = (o->report.step_time_s - s.reference_s) / s.reference_s;
    s.fits = o->report.memory.fits;
    s.mfu = o->report.mfu;
    if (!plausible_error(*s.error))
      s.status = fmt::format(
          "unsupported: predicted {:.4g} s against a reference of {:.4g} s, beyond a comparison's range "
          "({:+.1f}% to {:+.0f}%): is the reference one step's time in seconds?",
          *s.predicted_s, s.reference_s, 100 * kMinError, 100 * kMaxError);
  } catch (const InputError& e) {  // a layout or shape the simulator refuses
    s.status = "unsupported: " + (e.field().empty() ? e.why() : e.field() + ": " + e.why());
  } catch (const std::exception& e) {  // an internal error on this row: reported, not fatal to the rest
    s.status = std::string("unsupported: the simulator failed on this row (internal error, please report: ") +
               e.what() + ")";
  }
  if (!s.ok()) {
    s.predicted_s.reset();
    s.error.reset();
    s.fits.reset();
    s.mfu = 0;
    return;
  }
  if (options.on_simulated) options.on_simulated(run, s, *o);  // its errors are the caller's
}

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Below a million seconds (11.6 days) in fixed point; beyond, a user's file's figure in four
// digits (1e+308s).
std::string seconds_cell(double s) {
  if (!(s > 0)) return "-";
  return s < 1e6 ? fmt::format("{:.3f}s", s) : fmt::format("{:.4g}s", s);
}

}  // namespace

std::vector<MeasuredRun> measured_runs_of(const json& doc, const std::string& file,
                                          const Catalogs& catalogs) {
  // A row of another type among row objects is reported as that run's status, but a non-empty list
  // with no row object at all (numbers, strings) is not a measured-runs file. An empty list is: no runs.
  const auto is_row = [](const json& row) { return row.is_object(); };
  const std::string got = !doc.is_array() ? type_name(doc)
                          : !doc.empty() && std::none_of(doc.begin(), doc.end(), is_row)
                              ? "a list with no row object (rows[0] is " + type_name(doc[0]) + ")"
                              : "";
  if (!got.empty())
    throw InputError(file, "(top level)",
                     "expected a list of runs (the measured-runs schema: [{\"id\", \"group\", \"gpu\", "
                     "\"num_gpus\", \"model\", \"layout\", \"measured\", ...}, ...]), got " +
                         got);
  std::vector<MeasuredRun> out;
  out.reserve(doc.size());
  std::map<std::string, size_t> first_row_of;  // ids are unique in a file: a later copy is not scored
  for (size_t i = 0; i < doc.size(); ++i) {
    MeasuredRun& run = out.emplace_back(mapped_row(doc[i], i, catalogs));
    const bool own_id = doc[i].is_object() && doc[i].contains("id") && doc[i].at("id").is_string();
    if (!own_id) continue;  // named by its place ("rows[3]"), not an id of the file
    if (const auto [first, fresh] = first_row_of.emplace(run.id, i); !fresh) {
      run.no_scenario = run.unsupported = fmt::format("duplicate id (first at rows[{}])", first->second);
      run.no_step_time = false;
    }
  }
  return out;
}

std::vector<std::string> group_names(const std::vector<MeasuredRun>& runs) {
  std::set<std::string> names;
  for (const MeasuredRun& r : runs) names.insert(r.group);
  return {names.begin(), names.end()};
}

AccuracyScore score_accuracy(const std::vector<MeasuredRun>& runs, const AccuracyOptions& options) {
  AccuracyScore score;
  double sum_abs = 0;
  std::map<std::string, double> group_sum_abs;
  for (const MeasuredRun& run : runs) {
    if (!options.group.empty() && run.group != options.group) continue;
    RunScore s = unsimulated_score(run, options);
    if (s.ok()) simulate_run(run, options, s);
    score.groups[s.group];  // every group is listed, with or without supported runs
    if (s.ok()) {
      const double abs_error = std::abs(*s.error);
      sum_abs += abs_error;
      ++score.supported;
      if (abs_error <= kAccuracyWithin) ++score.within_15pct;
      group_sum_abs[s.group] += abs_error;
      ++score.groups[s.group].runs;
      if (abs_error > score.worst_error) {
        score.worst_error = abs_error;
        score.worst_id = s.id;
      }
      if (!*s.fits) score.not_fitting.push_back(s.id);
    }
    score.runs.push_back(std::move(s));
  }
  score.mape = score.supported ? sum_abs / score.supported : 0;
  for (auto& [name, g] : score.groups)
    if (g.runs > 0) g.mape = group_sum_abs[name] / g.runs;
  return score;
}

namespace {

// One run's columns, the same in the JSON's "runs" and the CSV (null: not known).
Fields run_fields(const RunScore& s) {
  return {{"id", s.id},
          {"group", s.group},
          {"status", s.status},
          {"predicted_s", optional_json(s.predicted_s)},
          {"reference_s", s.reference_s > 0 ? json(s.reference_s) : json(nullptr)},
          {"error_pct", s.error ? json(100 * *s.error) : json(nullptr)},
          {"fits", s.fits ? json(*s.fits) : json(nullptr)},
          {"reference_kind", s.reference_kind}};
}

}  // namespace

json accuracy_json(const AccuracyScore& score) {
  json groups = json::object();
  for (const auto& [name, g] : score.groups)
    groups[name] = {{"runs", g.runs}, {"mape_pct", g.runs > 0 ? json(100 * g.mape) : json(nullptr)}};
  json runs = json::array();
  for (const RunScore& s : score.runs) {
    json run = to_json(run_fields(s));
    run["defaults"] = s.defaults_used;
    runs.push_back(std::move(run));
  }
  return {{"summary",
           {{"supported", score.supported},
            {"within_15pct", score.within_15pct},
            {"mape_pct", score.supported ? json(100 * score.mape) : json(nullptr)},
            {"not_fitting", score.not_fitting.size()}}},
          {"groups", groups},
          {"runs", runs}};
}

void write_accuracy_csv(const AccuracyScore& score, std::ostream& out) {
  std::vector<Fields> rows;
  for (const RunScore& s : score.runs) rows.push_back(run_fields(s));
  if (rows.empty()) {
    write_csv_header(run_fields(RunScore{}), out);
    return;
  }
  write_csv(rows, out);
}

void write_accuracy_table(const AccuracyScore& score, std::ostream& out) {
  size_t id_width = 46, group_width = 13;
  for (const RunScore& s : score.runs) {
    id_width = std::max(id_width, printable(s.id).size());
    group_width = std::max(group_width, printable(s.group).size());
  }
  const std::string row_format =
      fmt::format("{{:<{}}} {{:<{}}} {{:>10}} {{:>10}} {{:>8}} {{:>5}}  {{}}\n", id_width, group_width);
  out << fmt::format(fmt::runtime(row_format), "id", "group", "predicted", "reference", "error", "fits",
                     "status");
  for (const RunScore& s : score.runs) {
    std::string status = s.status;
    if (s.ok()) {
      if (!s.reference_kind.empty()) status += ", " + s.reference_kind;
      for (const std::string& d : s.defaults_used) status += ", " + d;
    }
    out << fmt::format(fmt::runtime(row_format), printable(s.id), printable(s.group),
                       s.predicted_s ? seconds_cell(*s.predicted_s) : "-", seconds_cell(s.reference_s),
                       s.error ? fmt::format("{:+.1f}%", 100 * *s.error) : "-",
                       s.fits ? (*s.fits ? "yes" : "NO") : "-", printable(status, kCellMaxBytes));
  }
  if (score.supported > 0)
    out << fmt::format("\nsupported runs: {}   within 15%: {}   MAPE: {:.2f}%   worst: {} ({:.1f}%)\n",
                       score.supported, score.within_15pct, 100 * score.mape, printable(score.worst_id),
                       100 * score.worst_error);
  else
    out << fmt::format("\nsupported runs: 0 of {} (none could be simulated; see each run's status)\n",
                       score.runs.size());
  for (const auto& [name, g] : score.groups) {
    if (g.runs > 0)
      out << fmt::format("  {:<13} {:>3} runs  MAPE {:.2f}%\n", printable(name), g.runs, 100 * g.mape);
    else
      out << fmt::format("  {:<13} {:>3} runs  (none supported)\n", printable(name), 0);
  }
  out << fmt::format("predicted not to fit: {}\n", score.not_fitting.size());
  for (const std::string& id : score.not_fitting) out << "  " << printable(id) << "\n";
}

}  // namespace simrun
