// The compare view (panels.hpp): the pinned scenario A beside the current one, B, with deltas.
#include <fmt/format.h>
#include <imgui.h>

#include "panels.hpp"
#include "simrun/common/units.hpp"

namespace simrun::gui {
namespace {

struct Figure {
  const char* name;
  double (*value)(const Report&);
  const char* format;
};

const Figure kFigures[] = {
    {"step time (s)", [](const Report& r) { return r.step_time_s; }, "{:.3f}"},
    {"tokens/s", [](const Report& r) { return r.tokens_per_s; }, "{:.4g}"},
    {"MFU (%)", [](const Report& r) { return r.mfu * 100; }, "{:.1f}"},
    {"days", [](const Report& r) { return r.run.days; }, "{:.1f}"},
    {"GPU-hours", [](const Report& r) { return r.run.gpu_hours; }, "{:.4g}"},
    {"cost ($M)", [](const Report& r) { return r.run.cost_usd / 1e6; }, "{:.3f}"},
    {"energy (MWh)", [](const Report& r) { return r.run.energy_kwh / 1e3; }, "{:.1f}"},
    {"peak memory (GiB)", [](const Report& r) { return r.memory.peak_bytes_per_gpu / kGiB; }, "{:.1f}"},
};

}  // namespace

void ComparePanel::draw(GuiState& state) {
  if (ImGui::Button("Pin the current scenario as A")) state.pin();
  if (!state.pinned()) {
    ImGui::TextWrapped(
        "Pin a scenario, then change the layout or the cluster: B (the current one) shows beside A.");
    return;
  }
  if (!state.figures()) {
    ImGui::TextColored(kErrorColour, "B: %s", state.error().c_str());
    return;
  }
  const Report& a = state.pinned()->best();
  const Report& b = state.figures()->best();
  if (ImGui::BeginTable("compare", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn("A (pinned)");
    ImGui::TableSetupColumn("B (current)");
    ImGui::TableSetupColumn("B vs A");
    ImGui::TableHeadersRow();
    for (const Figure& f : kFigures) {
      const double va = f.value(a), vb = f.value(b);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(f.name);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(fmt::format(fmt::runtime(f.format), va).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(fmt::format(fmt::runtime(f.format), vb).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(va != 0 ? fmt::format("{:+.1f} %", (vb - va) / va * 100).c_str() : "-");
    }
    ImGui::EndTable();
  }
  if (state.pinned_doc() && ImGui::CollapsingHeader("A's scenario"))
    ImGui::TextUnformatted(state.pinned_doc()->dump(2).c_str());
}

}  // namespace simrun::gui
