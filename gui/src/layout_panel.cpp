// The layout panel (panels.hpp): each field a combo of the values the layout rules accept.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

#include "panels.hpp"
#include "simrun/sim/scenario/precision_recipe.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

namespace simrun::gui {
namespace {

std::vector<nlohmann::json> powers_of_two(int64_t most) {
  std::vector<nlohmann::json> v;
  for (int64_t x = 1; x <= most; x *= 2) v.emplace_back(x);
  return v;
}

std::vector<nlohmann::json> names(std::initializer_list<const char*> list) {
  std::vector<nlohmann::json> v;
  for (const char* s : list) v.emplace_back(s);
  return v;
}

std::vector<nlohmann::json> names(const std::vector<std::string>& list) { return {list.begin(), list.end()}; }

// `values` after a first choice that leaves the field out (null).
std::vector<nlohmann::json> with_default(std::vector<nlohmann::json> values) {
  values.insert(values.begin(), nlohmann::json());
  return values;
}

// A null value stands for the field left out: the scenario's default.
std::string label_of(const nlohmann::json& v) {
  return v.is_null() ? "(default)" : v.is_string() ? v.get<std::string>() : v.dump();
}

// The layout object with `field` set to `value` (and, where DP follows, without "dp").
nlohmann::json layout_with(const GuiState& state, const std::string& field, const nlohmann::json& value,
                           bool derives_dp) {
  nlohmann::json layout = state.get("layout");
  if (!layout.is_object()) layout = nlohmann::json::object();
  if (derives_dp) layout.erase("dp");
  // A precision drops the recipe and fp8 parameters written for the old one (as --precision does).
  if (value.is_null())
    layout.erase(field);
  else if (field == "precision" && value.is_string())
    set_layout_precision(layout, value.get<std::string>());
  else
    layout[field] = value;
  return layout;
}

}  // namespace

const std::vector<LayoutPanel::Choice>& LayoutPanel::choices(GuiState& state, const std::string& field,
                                                             const std::vector<nlohmann::json>& values,
                                                             bool derives_dp) {
  if (m_generation != state.generation()) {
    m_choices.clear();
    m_generation = state.generation();
  }
  for (const auto& [f, list] : m_choices)
    if (f == field) return list;
  std::vector<Choice> list;
  for (const nlohmann::json& v : values) {
    const std::optional<std::string> why =
        state.why_invalid("layout", layout_with(state, field, v, derives_dp));
    list.push_back({v, label_of(v), why.value_or("")});
  }
  m_choices.emplace_back(field, std::move(list));
  return m_choices.back().second;
}

void LayoutPanel::combo(GuiState& state, const char* label, const std::string& field,
                        const std::vector<nlohmann::json>& values, bool derives_dp) {
  const nlohmann::json current = state.get("layout." + field);
  const std::string shown = label_of(current);
  if (!ImGui::BeginCombo(label, shown.c_str())) return;
  std::optional<nlohmann::json> picked;
  for (const Choice& c : choices(state, field, values, derives_dp)) {
    const bool valid = c.why_invalid.empty();
    ImGui::BeginDisabled(!valid);
    if (ImGui::Selectable(c.label.c_str(), c.value == current) && valid) picked = c.value;
    ImGui::EndDisabled();
    if (!valid && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip("%s", c.why_invalid.c_str());
  }
  ImGui::EndCombo();
  if (!picked) return;
  // TP, PP and CP leave DP to follow from num_gpus / (tp·pp·cp), as the scenario reads it.
  state.set("layout", layout_with(state, field, *picked, derives_dp));
}

void LayoutPanel::draw_degraded(GuiState& state) {
  if (!ImGui::TreeNode("What if: a slow GPU or link")) return;
  const int64_t gpus = state.scenario() ? state.scenario()->cluster.num_gpus : 1;
  ImGui::InputInt("rank", &m_degraded_rank);
  m_degraded_rank = std::clamp<int>(m_degraded_rank, 0, int(std::max<int64_t>(0, gpus - 1)));
  ImGui::SliderFloat("kernels slower (x)", &m_slowdown, 1.0f, 3.0f, "%.2f");
  ImGui::SliderFloat("link rate (fraction)", &m_link_fraction, 0.05f, 1.0f, "%.2f");
  ImGui::Combo("link", &m_link_class, "NIC\0scale-up\0");
  if (ImGui::Button("Apply")) {
    std::vector<Straggler> stragglers;
    std::vector<SlowLink> links;
    if (m_slowdown > 1.0f) stragglers.push_back({m_degraded_rank, m_slowdown});
    if (m_link_fraction < 1.0f)
      links.push_back(
          {m_degraded_rank, m_link_fraction, m_link_class == 0 ? LinkClass::scale_out : LinkClass::scale_up});
    state.set_degraded(std::move(stragglers), std::move(links));
  }
  ImGui::SameLine();
  if (ImGui::Button("Healthy")) state.set_degraded({}, {});
  for (const std::string& d :
       state.figures() ? state.figures()->estimate.degraded : std::vector<std::string>{})
    ImGui::TextWrapped("%s", d.c_str());
  ImGui::TreePop();
}

void LayoutPanel::draw(GuiState& state) {
  const int64_t gpus = state.scenario() ? state.scenario()->cluster.num_gpus : 1024;
  combo(state, "TP", "tp", powers_of_two(std::min<int64_t>(gpus, 64)), true);
  combo(state, "PP", "pp", powers_of_two(std::min<int64_t>(gpus, 128)), true);
  combo(state, "virtual stages", "virtual_stages", powers_of_two(16));
  // Left out, interleaved 1F1B with virtual stages, else 1F1B (docs/model.md "Schedules").
  combo(state, "schedule", "pipeline_schedule", with_default(names(pipeline_schedule_names())));
  combo(state, "pipeline split", "pipeline_split", with_default(names(pipeline_split_names())));
  if (state.scenario())
    ImGui::Text("DP %lld (derived: GPUs / (TP x PP x CP))",
                static_cast<long long>(state.scenario()->layout.dp));
  combo(state, "CP", "cp", powers_of_two(std::min<int64_t>(gpus, 32)), true);
  combo(state, "CP kind", "cp_comm_type", names({"p2p", "all_gather", "a2a"}));
  if (state.scenario() && state.scenario()->model.is_moe()) {
    combo(state, "EP", "ep", powers_of_two(std::min<int64_t>(gpus, 256)));
    combo(state, "expert TP", "expert_tp", powers_of_two(8));
  }
  combo(state, "micro-batch", "micro_batch", powers_of_two(16));
  combo(state, "global batch", "global_batch", powers_of_two(int64_t(1) << 14));
  combo(state, "ZeRO", "zero_stage", {0, 1, 2, 3});
  combo(state, "recompute", "recompute", names({"none", "selective", "full"}));
  combo(state, "precision", "precision", names(precision_names()));
  if (state.scenario() && state.scenario()->layout.low_precision())
    combo(state, "fp8/fp4 recipe", "fp8_recipe", with_default(names(precision_recipe_names())));
  combo(state, "sequence parallel", "sequence_parallel", {true, false});
  draw_degraded(state);
  if (!state.error().empty()) {
    ImGui::Separator();
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(kErrorColour, "%s", state.error().c_str());
    ImGui::PopTextWrapPos();
  }
}

}  // namespace simrun::gui
