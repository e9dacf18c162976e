// The explorer's panels (gui/, one file each): each a struct whose draw() reads and edits the
// GuiState inside the current ImGui window; none owns simulator state.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gui_state.hpp"
#include "timeline_model.hpp"

namespace simrun::gui {

// The colour of an error line in every panel.
inline const ImVec4 kErrorColour(1.0f, 0.35f, 0.35f, 1.0f);

// Model, GPU, nodes, fabric, framework, price and tokens; load and save the scenario file.
struct ScenarioPanel {
  std::string path_text;   // the file name box
  std::string hf_config;   // the config.json box
  std::string save_error;  // why the last save failed
  void draw(GuiState& state);
};

// The parallel layout: only values the layout rules accept are selectable, the others greyed
// with the rule's reason on hover; and degraded hardware as a what-if.
struct LayoutPanel {
  void draw(GuiState& state);

 private:
  void draw_degraded(GuiState& state);
  int m_degraded_rank = 0;
  float m_slowdown = 1.3f, m_link_fraction = 1.0f;
  int m_link_class = 0;  // 0: NIC, 1: scale-up
  struct Choice {
    nlohmann::json value;
    std::string label;
    std::string why_invalid;  // empty: valid
  };
  // Per field, its choices under the current document (recomputed when it changes).
  uint64_t m_generation = 0;
  std::vector<std::pair<std::string, std::vector<Choice>>> m_choices;
  const std::vector<Choice>& choices(GuiState& state, const std::string& field,
                                     const std::vector<nlohmann::json>& values, bool derives_dp);
  // A combo over `values` of the layout's `field` ("tp"); `derives_dp`: DP then follows from it.
  void combo(GuiState& state, const char* label, const std::string& field,
             const std::vector<nlohmann::json>& values, bool derives_dp = false);
};

// Step time, rates, run totals, each with its formula on hover; the estimate at once, the event
// simulation's figures when they come.
struct ResultsPanel {
  void draw(GuiState& state);
};

// Per pipeline stage, memory per GPU stacked by kind against the GPU's usable HBM.
struct MemoryView {
  void draw(GuiState& state);
};

// The simulated step: a lane per traced GPU and stream, zoom (wheel) and pan (drag), hover tooltips.
struct TimelineView {
  void draw(GuiState& state);
  // The visible window, seconds (the bench pans it).
  double t0 = 0, t1 = 0;
  int64_t last_frame_spans = 0;  // rectangles drawn in the last frame (after culling and merging)

 private:
  std::shared_ptr<const SimulationOutput> m_source;  // what m_timeline was built from
  Timeline m_timeline;
  std::vector<DrawSpan> m_draw;
};

// Pin the current scenario as A; B (the current one) beside it with the deltas.
struct ComparePanel {
  void draw(GuiState& state);
};

// Run `plan` on a request (JSON, as a plan file) with a progress bar; the Pareto front as days
// against dollars coloured by GPU type; a click on a point loads its layout.
struct PlanView {
  void draw(GuiState& state);
};

// The menu bar: export the trace (Chrome JSON), the report (JSON, CSV) and a screenshot (PNG).
struct ExportMenu {
  std::string status;                // what the last export did
  std::filesystem::path screenshot;  // set: the app writes it after this frame
  void draw(GuiState& state);
};

}  // namespace simrun::gui
