// The memory view (panels.hpp): a stacked bar per pipeline stage against the usable HBM.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "panels.hpp"
#include "simrun/common/units.hpp"

namespace simrun::gui {
namespace {

struct Part {
  const char* name;
  ImU32 colour;
};
constexpr Part kParts[] = {{"weights", IM_COL32(70, 130, 220, 255)},
                           {"gradients", IM_COL32(100, 190, 120, 255)},
                           {"optimizer", IM_COL32(200, 170, 60, 255)},
                           {"activations", IM_COL32(220, 110, 80, 255)},
                           {"buffers", IM_COL32(150, 150, 150, 255)}};

std::array<double, 5> parts_of(const MemoryReport& m) {
  return {m.weights, m.grads, m.optimizer, m.activations, m.workspace};
}

}  // namespace

void MemoryView::draw(GuiState& state) {
  if (!state.figures()) {
    ImGui::TextColored(kErrorColour, "%s", state.error().c_str());
    return;
  }
  // Per stage from the event simulation (its real in-flight micro-batches); until then the
  // estimate's worst stage.
  std::vector<std::pair<std::string, MemoryReport>> bars;
  if (const auto event = state.event()) {
    for (const StageReport& s : event->stages) bars.emplace_back(fmt::format("stage {}", s.stage), s.memory);
  } else {
    bars.emplace_back("worst stage (estimate)", state.figures()->estimate.memory);
  }
  double most = 0, capacity = bars.front().second.capacity_bytes;
  for (const auto& [name, m] : bars) most = std::max(most, m.peak_bytes_per_gpu);
  const double top = std::max(most, capacity) * 1.1;

  for (const Part& p : kParts) {
    ImGui::ColorButton(p.name, ImGui::ColorConvertU32ToFloat4(p.colour), ImGuiColorEditFlags_NoTooltip,
                       ImVec2(12, 12));
    ImGui::SameLine();
    ImGui::TextUnformatted(p.name);
    ImGui::SameLine();
  }
  ImGui::Text("| HBM %.1f GiB", capacity / kGiB);

  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 size(ImGui::GetContentRegionAvail().x,
                    std::max(200.0f, ImGui::GetContentRegionAvail().y - 30));
  const float left = 60, bottom = size.y - 20;
  const float slot = (size.x - left) / float(bars.size()), width = std::min(80.0f, slot * 0.7f);
  auto y_of = [&](double bytes) { return origin.y + bottom - float(bytes / top) * (bottom - 10); };
  for (double gib = 0; gib * kGiB <= top; gib += std::max(1.0, std::round(top / kGiB / 8))) {
    draw->AddLine(ImVec2(origin.x + left, y_of(gib * kGiB)), ImVec2(origin.x + size.x, y_of(gib * kGiB)),
                  IM_COL32(80, 80, 80, 255));
    draw->AddText(ImVec2(origin.x, y_of(gib * kGiB) - 7), IM_COL32(200, 200, 200, 255),
                  fmt::format("{:.0f} GiB", gib).c_str());
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const MemoryReport& m = bars[i].second;
    const float x0 = origin.x + left + slot * float(i) + (slot - width) / 2;
    double below = 0;
    const std::array<double, 5> parts = parts_of(m);
    for (size_t k = 0; k < parts.size(); ++k) {
      draw->AddRectFilled(ImVec2(x0, y_of(below + parts[k])), ImVec2(x0 + width, y_of(below)),
                          kParts[k].colour);
      below += parts[k];
    }
    if (!m.fits)
      draw->AddRect(ImVec2(x0 - 2, y_of(below) - 2), ImVec2(x0 + width + 2, y_of(0) + 2),
                    IM_COL32(255, 40, 40, 255), 0, 0, 3);
    draw->AddText(ImVec2(x0, origin.y + bottom + 4), IM_COL32(220, 220, 220, 255), bars[i].first.c_str());
    if (ImGui::IsMouseHoveringRect(ImVec2(x0, y_of(below)), ImVec2(x0 + width, y_of(0)))) {
      ImGui::BeginTooltip();
      ImGui::Text("%s: %.2f of %.2f GiB%s", bars[i].first.c_str(), m.peak_bytes_per_gpu / kGiB,
                  m.capacity_bytes / kGiB, m.fits ? "" : " (does not fit)");
      for (size_t k = 0; k < parts.size(); ++k) ImGui::Text("  %s %.2f GiB", kParts[k].name, parts[k] / kGiB);
      ImGui::EndTooltip();
    }
  }
  draw->AddLine(ImVec2(origin.x + left, y_of(capacity)), ImVec2(origin.x + size.x, y_of(capacity)),
                IM_COL32(255, 60, 60, 255), 2);
  ImGui::Dummy(size);
}

}  // namespace simrun::gui
