// The explorer's window (gui/): the canonical GLFW + OpenGL 3 Dear ImGui loop around the panels.
// It draws only when something changed (input, or the worker's result), and sleeps otherwise; a
// headless run (Xvfb) draws a few frames, waits for the worker, and writes a PNG.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "gui_state.hpp"
#include "panels.hpp"

struct GLFWwindow;

namespace simrun::gui {

class App {
 public:
  // Opens the window (hidden when `visible` is false); throws std::runtime_error when there is no
  // display or no OpenGL 3 context.
  App(GuiState& state, int width, int height, bool visible);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Draws one frame; false once the window was closed.
  bool frame();
  // Sleeps until input or a worker result arrives (a frame's pace while something moves).
  void wait();
  // Draws a frame and writes it as a PNG; false when it could not be written.
  bool screenshot(const std::filesystem::path& path);
  // Frames the app still wants drawn before it sleeps (input settles over a few frames).
  bool busy() const;

  TimelineView& timeline() { return m_timeline; }

 private:
  void draw_panels();

  GuiState& m_state;
  GLFWwindow* m_window = nullptr;
  int m_frames_to_draw = 1;
  ScenarioPanel m_scenario;
  LayoutPanel m_layout;
  ResultsPanel m_results;
  MemoryView m_memory;
  TimelineView m_timeline;
  ComparePanel m_compare;
  PlanView m_plan;
  ExportMenu m_export;
  std::optional<View> m_shown;  // the view whose tab is open; another in state.view selects that tab
  std::filesystem::path m_pending_screenshot;
  bool m_screenshot_written = false;
};

}  // namespace simrun::gui
