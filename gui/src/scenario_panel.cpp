// The scenario panel (panels.hpp): what runs on what, and the scenario file.
#include <imgui.h>
#include <imgui_stdlib.h>

#include "panels.hpp"

namespace simrun::gui {
namespace {

// A combo over `ids` editing the string at `path`; `fallback` shown when the document leaves it out.
void id_combo(GuiState& state, const char* label, const std::string& path,
              const std::vector<std::string>& ids, const std::string& fallback = "") {
  const nlohmann::json current = state.get(path);
  const std::string shown = current.is_string() ? current.get<std::string>()
                            : current.is_null() ? fallback
                                                : current.dump();
  if (ImGui::BeginCombo(label, shown.c_str())) {
    for (const std::string& id : ids)
      if (ImGui::Selectable(id.c_str(), id == shown)) state.set(path, id);
    ImGui::EndCombo();
  }
}

// An input for the number at `path` (`fallback` shown when the document leaves it out).
void number_input(GuiState& state, const char* label, const std::string& path, double fallback,
                  const char* format) {
  const nlohmann::json current = state.get(path);
  double value = current.is_number() ? current.get<double>() : fallback;
  if (ImGui::InputDouble(label, &value, 0, 0, format, ImGuiInputTextFlags_EnterReturnsTrue))
    state.set(path, value);
}

void integer_input(GuiState& state, const char* label, const std::string& path, int fallback) {
  const nlohmann::json current = state.get(path);
  int value = current.is_number_integer() ? current.get<int>() : fallback;
  if (ImGui::InputInt(label, &value, 0, 0, ImGuiInputTextFlags_EnterReturnsTrue) && value > 0)
    state.set(path, value);
}

}  // namespace

void ScenarioPanel::draw(GuiState& state) {
  if (path_text.empty()) path_text = state.file();
  ImGui::InputText("file", &path_text);
  if (ImGui::Button("Load")) state.load(path_text);
  ImGui::SameLine();
  if (ImGui::Button("Save")) {
    try {
      state.save(path_text);
    } catch (const std::exception& e) {
      ImGui::OpenPopup("save failed");
    }
  }
  if (!state.load_error().empty()) ImGui::TextColored(kErrorColour, "%s", state.load_error().c_str());
  ImGui::Separator();

  const Catalogs& c = state.catalogs();
  const nlohmann::json model = state.get("model");
  if (model.is_string() || model.is_null()) {
    id_combo(state, "model", "model", c.models.ids());
  } else {
    ImGui::Text("model: %s", model.contains("name") ? model["name"].dump().c_str() : "(object)");
  }
  ImGui::InputText("config.json", &hf_config);
  ImGui::SameLine();
  if (ImGui::SmallButton("use") && !hf_config.empty()) state.set("model", {{"hf_config", hf_config}});
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("a HuggingFace config.json path, as the scenario's model.hf_config");

  id_combo(state, "GPU", "cluster.gpu", c.hardware.gpu_ids());
  integer_input(state, "GPUs", "cluster.num_gpus", 8);
  if (state.scenario())
    ImGui::Text("%lld nodes of %lld", static_cast<long long>(state.scenario()->cluster.num_nodes()),
                static_cast<long long>(state.scenario()->cluster.gpus_per_node));
  id_combo(state, "fabric", "cluster.fabric.kind", c.hardware.fabric_ids(), "(default) ib-ndr");
  number_input(state, "oversubscription", "cluster.fabric.oversubscription", 1.0, "%.2f");
  id_combo(state, "framework", "framework", c.frameworks.ids(),
           state.scenario() ? "(default) " + state.scenario()->framework.id : "(default)");
  number_input(state, "$/GPU-hour", "run.usd_per_gpu_hour", 2.5, "%.2f");
  number_input(state, "tokens", "run.tokens", 0, "%.3g");
}

}  // namespace simrun::gui
