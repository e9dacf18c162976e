// The results panel (panels.hpp): the step and the run, each figure's formula on hover.
#include <fmt/format.h>
#include <imgui.h>

#include "panels.hpp"
#include "simrun/common/units.hpp"

namespace simrun::gui {
namespace {

// The estimate's --explain entry for `key`, as a tooltip.
void explain_tooltip(const Report& estimate, const char* key) {
  if (!ImGui::IsItemHovered()) return;
  for (const Explained& e : estimate.explanations)
    if (e.key == key) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
      ImGui::Text("%s = %s", e.key.c_str(), e.formula.c_str());
      ImGui::TextDisabled("%s", e.inputs.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
      return;
    }
}

void row(const char* name, const std::string& value, const Report& estimate, const char* key) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(name);
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(value.c_str());
  explain_tooltip(estimate, key);
}

}  // namespace

void ResultsPanel::draw(GuiState& state) {
  if (!state.figures()) {
    ImGui::TextColored(kErrorColour, "%s", state.error().c_str());
    return;
  }
  const Figures& f = *state.figures();
  const Report& r = f.best();
  if (f.event)
    ImGui::TextColored(ImVec4(0.4f, 0.9f, 0.4f, 1), "refined by the event simulation");
  else if (state.refining())
    ImGui::Text("closed-form estimate; event simulation running %c", "|/-\\"[int(ImGui::GetTime() * 8) % 4]);
  else
    ImGui::Text("closed-form estimate");
  if (ImGui::BeginTable("figures", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
    row("step time", fmt::format("{:.3f} s", r.step_time_s), f.estimate, "step_time_s");
    row("tokens/s", fmt::format("{:.4g}", r.tokens_per_s), f.estimate, "tokens_per_s");
    row("MFU", fmt::format("{:.1f} %", r.mfu * 100), f.estimate, "mfu");
    row("HFU", fmt::format("{:.1f} %", r.hfu * 100), f.estimate, "hfu");
    row("days", fmt::format("{:.1f}", r.run.days), f.estimate, "run.days");
    row("GPU-hours", fmt::format("{:.4g}", r.run.gpu_hours), f.estimate, "run.gpu_hours");
    row("cost", fmt::format("${:.3f}M", r.run.cost_usd / 1e6), f.estimate, "run.cost_usd");
    row("energy", fmt::format("{:.1f} MWh", r.run.energy_kwh / 1e3), f.estimate, "run.energy_kwh");
    row("goodput", fmt::format("{:.1f} %", r.run.goodput * 100), f.estimate, "run.goodput");
    row("memory",
        fmt::format("{:.1f} / {:.1f} GiB{}", r.memory.peak_bytes_per_gpu / kGiB,
                    r.memory.capacity_bytes / kGiB, r.memory.fits ? "" : "  does not fit"),
        f.estimate, "memory.peak_bytes_per_gpu");
    ImGui::EndTable();
  }
  // The step's parts as one bar: compute, exposed communication, bubble.
  const BreakdownReport& b = r.breakdown;
  const double total = std::max(1e-12, b.compute_s + b.exposed_comm_s + b.bubble_s);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x, height = 18;
  float x = at.x;
  const std::pair<double, ImU32> parts[] = {{b.compute_s, IM_COL32(70, 130, 220, 255)},
                                            {b.exposed_comm_s, IM_COL32(230, 150, 40, 255)},
                                            {b.bubble_s, IM_COL32(150, 150, 150, 255)}};
  for (const auto& [seconds, colour] : parts) {
    const float w = float(seconds / total) * width;
    draw->AddRectFilled(ImVec2(x, at.y), ImVec2(x + w, at.y + height), colour);
    x += w;
  }
  ImGui::Dummy(ImVec2(width, height));
  ImGui::Text("compute %.3f s, exposed communication %.3f s, bubble %.3f s", b.compute_s, b.exposed_comm_s,
              b.bubble_s);
  for (const std::string& w : r.warnings) ImGui::TextWrapped("warning: %s", w.c_str());
}

}  // namespace simrun::gui
