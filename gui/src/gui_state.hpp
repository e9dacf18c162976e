// What the what-if explorer holds (gui/, docs/gui.md): the scenario being edited, as the JSON a
// scenario file holds (the GUI edits a copy; the simulator never sees a half-edited one), what it
// parses to or why it does not, the closed-form estimate of it (recomputed within the frame that
// changed it), the event simulation's refinement when the worker has it, the pinned scenario A
// of the compare view, and the plan view's last result. Panels read and edit it; each edit
// (set, load, set_degraded) re-evaluates: parse, estimate, and the event simulation handed to the
// worker.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim_worker.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/planner/planner.hpp"
#include "simrun/sim/scenario/degraded.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

namespace simrun::gui {

enum class View : uint8_t { results, memory, timeline, compare, plan };
const char* to_string(View v);
std::optional<View> view_named(const std::string& name);

// A scenario's numbers as the results and compare views show them.
struct Figures {
  Report estimate;              // closed form, within the frame
  std::optional<Report> event;  // the event simulation's, once refined
  const Report& best() const { return event ? *event : estimate; }
};

class GuiState {
 public:
  // Opens `scenario` (load_error() says why when it cannot), or a default scenario when empty.
  GuiState(Catalogs catalogs, std::filesystem::path data_dir, const std::filesystem::path& scenario = {});

  const Catalogs& catalogs() const { return m_catalogs; }
  const std::filesystem::path& data_dir() const { return m_data_dir; }

  // The scenario document and where it came from (save writes it back there by default).
  const nlohmann::json& doc() const { return m_doc; }
  const std::string& file() const { return m_file; }
  // Loads a scenario file; false (and load_error() says why, one line) when it cannot be read or
  // parsed as JSON: the document shown is kept.
  bool load(const std::filesystem::path& path);
  const std::string& load_error() const { return m_load_error; }
  void save(const std::filesystem::path& path) const;

  // Sets a field by its dotted path ("layout.tp", "cluster.gpu") to `value` and re-evaluates;
  // InputError (one line) for a path through a value that is not an object.
  void set(const std::string& path, const nlohmann::json& value);
  // `set` with a value written as on the command line: JSON where it parses ("4", "true",
  // "\"h100-sxm\""), else the text itself as a string ("h100-sxm").
  void set_text(const std::string& path, const std::string& text);
  // The value at a dotted path, or null.
  nlohmann::json get(const std::string& path) const;
  // Why the document with `path` set to `value` would not parse (one line), or nullopt: what the
  // layout panel offers and greys out.
  std::optional<std::string> why_invalid(const std::string& path, const nlohmann::json& value) const;

  // What-ifs of degraded hardware (the command line's --straggler and --slow-link): a GPU whose
  // kernels run slower, a link below its rate. Set, they re-evaluate; the event simulation then
  // runs every rank (as --full), which a large cluster takes longer over.
  const std::vector<Straggler>& stragglers() const { return m_stragglers; }
  const std::vector<SlowLink>& slow_links() const { return m_slow_links; }
  void set_degraded(std::vector<Straggler> stragglers, std::vector<SlowLink> slow_links);

  // The parsed scenario, or why the document does not parse (one line).
  const std::optional<Scenario>& scenario() const { return m_scenario; }
  // Counts the document's edits: what a panel's cache of it is keyed by.
  uint64_t generation() const { return m_generation; }
  const std::string& error() const { return m_error; }
  const std::optional<Figures>& figures() const { return m_figures; }
  // The event simulation of the current document, once the worker has it (and its trace spans).
  std::shared_ptr<const SimulationOutput> event() const { return m_event; }
  bool refining() const { return m_worker.busy(); }

  // Takes the worker's finished result, if it is for the current document; true when it changed
  // what the views show (the frame loop then draws again).
  bool poll();
  // Blocks until the worker is idle (headless screenshots of refined figures), at most `seconds`.
  void wait_for_worker(double seconds);

  // Compare: the scenario pinned as A and its figures.
  void pin();
  const std::optional<nlohmann::json>& pinned_doc() const { return m_pinned_doc; }
  const std::optional<Figures>& pinned() const { return m_pinned; }

  // Who the worker wakes when a result is ready (the window's event loop).
  void set_wake(std::function<void()> wake) { m_worker.set_wake(std::move(wake)); }

  View view = View::results;
  // The plan view's request text and last result with the request it answers (the worker runs it).
  std::string plan_text;
  std::string plan_file = "plan";  // names the request in its errors; its folder resolves its paths
  std::optional<PlanResult> plan_result;
  std::optional<PlanRequest> plan_request;  // of plan_result
  std::string plan_error;
  // What the plan's answer misses when nothing is ranked ("no plan meets the 1-day deadline: ..."),
  // as `simrun plan` says it with exit 3; empty otherwise.
  std::string plan_infeasible() const;
  void start_plan();
  PlanProgress plan_progress() const { return m_worker.plan_progress(); }
  bool planning() const { return m_worker.planning(); }
  // Loads the scenario of a plan point (the Pareto scatter's click).
  void load_plan_point(const PlanPoint& point);

  // The state as --dump-state writes it: the document, the error, the figures.
  nlohmann::json dump() const;

 private:
  void evaluate();  // parse, estimate, ask the worker for the event simulation

  Catalogs m_catalogs;
  std::filesystem::path m_data_dir;
  nlohmann::json m_doc;
  std::string m_file;
  std::string m_load_error;
  std::optional<Scenario> m_scenario;
  std::string m_error;
  std::optional<Figures> m_figures;
  std::shared_ptr<const SimulationOutput> m_event;
  uint64_t m_generation = 0;  // of the document; the worker's results carry the one they ran
  std::vector<Straggler> m_stragglers;
  std::vector<SlowLink> m_slow_links;
  std::optional<nlohmann::json> m_pinned_doc;
  std::optional<Figures> m_pinned;
  uint64_t m_pinned_generation = 0;           // its refinement, when it comes, is A's too
  std::optional<PlanRequest> m_plan_running;  // the request the worker is planning
  SimWorker m_worker;
};

}  // namespace simrun::gui
