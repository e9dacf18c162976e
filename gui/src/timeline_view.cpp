// The timeline view (panels.hpp): the simulated step, lanes per traced GPU and stream.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>

#include "panels.hpp"
#include "simrun/sim/event/trace.hpp"

namespace simrun::gui {
namespace {

constexpr float kLaneHeight = 16, kLabelWidth = 150;
constexpr double kMinWindowS = 1e-6;                           // the deepest zoom
constexpr ImU32 kMergedColour = IM_COL32(120, 120, 130, 255);  // a run of merged spans: not one op
// Spans narrower than this many pixels merge with their narrow neighbours (timeline_model.hpp).
constexpr double kMinSpanPx = 3;

ImU32 colour_of(SpanCategory c) {
  switch (c) {
    case SpanCategory::forward:
      return IM_COL32(70, 130, 220, 255);
    case SpanCategory::backward:
      return IM_COL32(40, 80, 170, 255);
    case SpanCategory::recompute:
      return IM_COL32(120, 170, 240, 255);
    case SpanCategory::optimizer:
      return IM_COL32(160, 100, 200, 255);
    case SpanCategory::tp:
      return IM_COL32(230, 150, 40, 255);
    case SpanCategory::cp:
      return IM_COL32(230, 200, 60, 255);
    case SpanCategory::ep:
      return IM_COL32(200, 90, 160, 255);
    case SpanCategory::pp:
      return IM_COL32(100, 190, 120, 255);
    case SpanCategory::dp:
      return IM_COL32(220, 90, 70, 255);
    default:
      return IM_COL32(150, 150, 150, 255);
  }
}

}  // namespace

void TimelineView::draw(GuiState& state) {
  const std::shared_ptr<const SimulationOutput> event = state.event();
  if (!event) {
    ImGui::Text(state.refining() ? "the event simulation is running..."
                                 : "no simulated step (see the error)");
    return;
  }
  if (event != m_source) {
    m_source = event;
    const RankLayout layout(state.scenario()->layout, state.scenario()->cluster.gpus_per_node);
    m_timeline = build_timeline(event->workload, event->step, layout);
    t0 = 0;
    t1 = std::max(1e-9, m_timeline.end_s);
  }
  for (int c = 0; c < int(SpanCategory::count); ++c) {
    ImGui::ColorButton(to_string(SpanCategory(c)), ImGui::ColorConvertU32ToFloat4(colour_of(SpanCategory(c))),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(12, 12));
    ImGui::SameLine();
    ImGui::TextUnformatted(to_string(SpanCategory(c)));
    ImGui::SameLine();
  }
  ImGui::Text("| %.3f-%.3f s of %.3f s (wheel: zoom, drag: pan)", t0, t1, m_timeline.end_s);

  // The wheel zooms; rows are exactly a lane high, as the clipper counts them.
  ImGui::BeginChild("lanes", ImVec2(0, 0), false,
                    ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoScrollWithMouse);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = std::max(50.0f, ImGui::GetContentRegionAvail().x - kLabelWidth);
  const double px_per_s = double(width) / (t1 - t0);

  // Zoom about the mouse, pan by dragging: only while the lanes are hovered.
  if (ImGui::IsWindowHovered()) {
    const ImGuiIO& io = ImGui::GetIO();
    const double at = t0 + double(io.MousePos.x - origin.x - kLabelWidth) / px_per_s;
    if (io.MouseWheel != 0) {
      const double factor = io.MouseWheel > 0 ? 0.8 : 1.25;
      // Between a microsecond and the whole step (twice over) in view.
      const double width =
          std::clamp((t1 - t0) * factor, kMinWindowS, 2 * std::max(kMinWindowS, m_timeline.end_s));
      t0 = at - (at - t0) / (t1 - t0) * width;
      t1 = t0 + width;
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
      const double shift = double(io.MouseDelta.x) / px_per_s;
      t0 -= shift;
      t1 -= shift;
    }
  }

  last_frame_spans = 0;
  ImGuiListClipper clipper;
  clipper.Begin(int(m_timeline.lanes.size()), kLaneHeight);
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const TimelineLane& lane = m_timeline.lanes[size_t(i)];
      const ImVec2 row = ImGui::GetCursorScreenPos();
      draw->AddText(ImVec2(row.x, row.y + 1), IM_COL32(210, 210, 210, 255), lane.name.c_str());
      visible_spans(lane, t0, t1, px_per_s, kMinSpanPx, m_draw);
      last_frame_spans += int64_t(m_draw.size());
      const float x = row.x + kLabelWidth;
      for (const DrawSpan& d : m_draw) {
        const ImVec2 a(x + float(d.x0), row.y + 1),
            b(x + std::max(float(d.x1), float(d.x0) + 1), row.y + kLaneHeight - 1);
        draw->AddRectFilled(a, b, d.merged > 1 ? kMergedColour : colour_of(d.category));
        if (ImGui::IsMouseHoveringRect(a, b)) {
          const Task& task = event->workload.stages[size_t(lane.stage)].tasks[d.task];
          ImGui::BeginTooltip();
          ImGui::Text("%s", task_slice_name(task).c_str());
          ImGui::TextDisabled("%s", task_event_name(task).c_str());
          if (d.merged > 1) {
            ImGui::Text("%d spans merged at this zoom (zoom in to see them), from:", d.merged);
          } else {
            const TimelineSpan& span =
                *std::find_if(lane.spans.begin(), lane.spans.end(),
                              [&](const TimelineSpan& sp) { return sp.task == d.task; });
            ImGui::Text("%.3f ms", (span.end_s - span.start_s) * 1e3);
          }
          if (task.layer >= 0) ImGui::Text("layer %d, micro-batch %d", task.layer, task.micro_batch);
          if (task.comm_bytes > 0) ImGui::Text("%.3g MB", task.comm_bytes / 1e6);
          ImGui::EndTooltip();
        }
      }
      ImGui::Dummy(ImVec2(kLabelWidth + width, kLaneHeight));
    }
  ImGui::PopStyleVar();
  ImGui::EndChild();
}

}  // namespace simrun::gui
