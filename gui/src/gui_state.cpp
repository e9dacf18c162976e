// What the what-if explorer holds (gui_state.hpp).
#include "gui_state.hpp"

#include <chrono>
#include <fstream>
#include <thread>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"

namespace simrun::gui {
namespace {

// The JSON pointer of a dotted path: "layout.tp" → /layout/tp.
nlohmann::json::json_pointer pointer_of(const std::string& path) {
  std::string p = "/";
  for (char c : path) p += c == '.' ? '/' : c;
  return nlohmann::json::json_pointer(p);
}

std::string one_line(const std::string& text) { return printable(text, kErrorLineMaxBytes); }

}  // namespace

const char* to_string(View v) {
  switch (v) {
    case View::results:
      return "results";
    case View::memory:
      return "memory";
    case View::timeline:
      return "timeline";
    case View::compare:
      return "compare";
    case View::plan:
      return "plan";
  }
  return "?";
}

std::optional<View> view_named(const std::string& name) {
  for (View v : {View::results, View::memory, View::timeline, View::compare, View::plan})
    if (name == to_string(v)) return v;
  return std::nullopt;
}

GuiState::GuiState(Catalogs catalogs, std::filesystem::path data_dir, const std::filesystem::path& scenario)
    : m_catalogs(std::move(catalogs)), m_data_dir(std::move(data_dir)) {
  m_doc = {{"model", "llama3-70b"},
           {"cluster", {{"gpu", "h100-sxm"}, {"num_gpus", 1024}}},
           {"layout", {{"tp", 8}, {"pp", 4}, {"global_batch", 1024}}},
           {"run", {{"tokens", 1.4e12}, {"usd_per_gpu_hour", 2.5}}}};
  m_file = "untitled.json";
  if (scenario.empty() || !load(scenario)) evaluate();
}

bool GuiState::load(const std::filesystem::path& path) {
  nlohmann::json doc;
  try {
    doc = load_json_file(path);
    if (!doc.is_object()) throw InputError(path.string(), "(top level)", "expected a JSON object");
  } catch (const std::exception& e) {
    m_load_error = one_line(e.what());
    return false;
  }
  m_doc = std::move(doc);
  m_file = path.string();
  m_load_error.clear();
  evaluate();
  return true;
}

void GuiState::save(const std::filesystem::path& path) const {
  std::ofstream out(path);
  out << m_doc.dump(2) << "\n";
  if (!out) throw std::runtime_error("could not write " + path.string());
}

void GuiState::set(const std::string& path, const nlohmann::json& value) {
  nlohmann::json doc = m_doc;
  try {
    doc[pointer_of(path)] = value;
  } catch (const nlohmann::json::exception&) {
    throw InputError("command line", path,
                     "is not a field a value can be set at (a path through objects, e.g. layout.tp)");
  }
  m_doc = std::move(doc);
  evaluate();
}

void GuiState::set_text(const std::string& path, const std::string& text) {
  // What starts as a JSON value (a number, an object, a list, true, false, null) is read as a scenario
  // file's reader reads it, its error named by the setting; any other text is a string (a model id).
  const size_t first = text.find_first_not_of(" \t");
  const bool json_value = first != std::string::npos &&
                          (std::string_view("-0123456789{[\"").find(text[first]) != std::string_view::npos ||
                           text == "true" || text == "false" || text == "null");
  if (!json_value) {
    set(path, nlohmann::json(text));
    return;
  }
  try {
    set(path, parse_json_text(text, "command line"));
  } catch (const InputError& e) {
    throw InputError("command line", "--set " + path, e.why());
  }
}

nlohmann::json GuiState::get(const std::string& path) const {
  const auto p = pointer_of(path);
  return m_doc.contains(p) ? m_doc[p] : nlohmann::json();
}

std::optional<std::string> GuiState::why_invalid(const std::string& path, const nlohmann::json& value) const {
  nlohmann::json doc = m_doc;
  try {
    doc[pointer_of(path)] = value;
    parse_scenario(doc, m_file, m_catalogs, std::filesystem::path(m_file).parent_path());
  } catch (const InputError& e) {
    return one_line(e.why());
  } catch (const std::exception& e) {
    return one_line(e.what());
  }
  return std::nullopt;
}

void GuiState::set_degraded(std::vector<Straggler> stragglers, std::vector<SlowLink> slow_links) {
  m_stragglers = std::move(stragglers);
  m_slow_links = std::move(slow_links);
  evaluate();
}

void GuiState::evaluate() {
  ++m_generation;
  m_event.reset();
  try {
    m_scenario = parse_scenario(m_doc, m_file, m_catalogs, std::filesystem::path(m_file).parent_path());
    m_error.clear();
  } catch (const std::exception& e) {
    m_scenario.reset();
    m_figures.reset();
    m_error = one_line(e.what());
    return;
  }
  try {
    AnalyticOptions estimate_options = framework_options(*m_scenario);
    estimate_options.stragglers = m_stragglers;
    estimate_options.slow_links = m_slow_links;
    m_figures = Figures{estimate(*m_scenario, estimate_options), std::nullopt};
  } catch (const std::exception& e) {
    m_figures.reset();
    m_error = one_line(e.what());
    return;
  }
  SimulateOptions options = framework_simulate_options(*m_scenario);
  options.step.record_trace = true;
  options.step.stragglers = m_stragglers;
  options.step.slow_links = m_slow_links;
  if (!m_stragglers.empty() || !m_slow_links.empty()) options.step.scope = SimulationScope::full;
  m_worker.simulate(m_generation, *m_scenario, options);
}

bool GuiState::poll() {
  bool changed = false;
  if (std::optional<SimulationResult> r = m_worker.take_simulation(); r && r->generation == m_generation) {
    if (r->output && m_figures) {
      m_event = r->output;
      m_figures->event = r->output->report;
      if (m_pinned && m_pinned_generation == m_generation) m_pinned->event = r->output->report;
    } else if (!r->error.empty()) {
      m_error = "event simulation: " + one_line(r->error);
    }
    changed = true;
  }
  std::string failed;
  if (std::optional<PlanResult> p = m_worker.take_plan(failed)) {
    plan_result = std::move(p);
    plan_request = std::move(m_plan_running);  // the result and its own request, together
    m_plan_running.reset();
    changed = true;
  }
  if (!failed.empty()) {
    plan_error = one_line(failed);
    m_plan_running.reset();
    changed = true;
  }
  return changed;
}

void GuiState::wait_for_worker(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while ((m_worker.busy() || m_worker.planning()) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  poll();
}

void GuiState::pin() {
  m_pinned_doc = m_doc;
  m_pinned = m_figures;
  m_pinned_generation = m_generation;
}

void GuiState::start_plan() {
  plan_error.clear();
  try {
    // As simrun plan reads a plan file: duplicate keys, depth and number range checked, the line named.
    const nlohmann::json doc = parse_json_text(plan_text, plan_file);
    m_plan_running =
        parse_plan_request(doc, plan_file, m_catalogs, std::filesystem::path(plan_file).parent_path());
    m_worker.plan(*m_plan_running, m_catalogs);
  } catch (const std::exception& e) {
    plan_error = one_line(e.what());
  }
}

void GuiState::load_plan_point(const PlanPoint& point) {
  if (!plan_request || !plan_result) return;
  m_doc = plan_point_scenario_json(*plan_request, point, plan_result->frameworks);
  m_file = "plan-point.json";
  evaluate();
}

nlohmann::json GuiState::dump() const {
  nlohmann::json j = {{"file", m_file}, {"scenario", m_doc}, {"view", to_string(view)}};
  if (!m_error.empty()) j["error"] = m_error;
  if (!m_load_error.empty()) j["load_error"] = m_load_error;
  if (m_figures) {
    j["estimate"] = to_json(m_figures->estimate);
    if (m_figures->event) j["event"] = to_json(*m_figures->event);
  }
  if (m_pinned) j["pinned"] = to_json(m_pinned->best());
  for (const Straggler& s : m_stragglers)
    j["stragglers"].push_back({{"rank", s.rank}, {"slowdown", s.slowdown}});
  for (const SlowLink& l : m_slow_links)
    j["slow_links"].push_back({{"rank", l.rank},
                               {"fraction", l.bandwidth_fraction},
                               {"link", l.link == LinkClass::scale_up ? "scale-up" : "nic"}});
  if (!plan_error.empty()) j["plan_error"] = plan_error;
  if (plan_result) {
    j["plan"] = {{"evaluated", plan_result->evaluated}, {"pareto", plan_result->pareto.size()}};
    if (const std::string miss = plan_infeasible(); !miss.empty()) j["plan"]["infeasible"] = miss;
  }
  return j;
}

std::string GuiState::plan_infeasible() const {
  if (!plan_result || !plan_request || !plan_result->ranked.empty() || plan_result->interrupted) return "";
  return infeasible_text(*plan_request, *plan_result);
}

}  // namespace simrun::gui
