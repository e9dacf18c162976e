// The explorer's window (app.hpp).
#include "app.hpp"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace simrun::gui {
namespace {

// Frames drawn after an event before the loop sleeps again: ImGui settles hover and focus over a
// couple of frames.
constexpr int kSettleFrames = 3;
// A frame's pace while something moves (the worker running, input settling).
constexpr double kBusyFrameS = 0.05;
constexpr float kSideWidth = 390;

}  // namespace

App::App(GuiState& state, int width, int height, bool visible) : m_state(state) {
  if (!glfwInit())
    throw std::runtime_error("cannot open a window: no display (run under xvfb-run for headless use)");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
  m_window = glfwCreateWindow(width, height, "simrun what-if explorer", nullptr, nullptr);
  if (!m_window) {
    glfwTerminate();
    throw std::runtime_error("cannot create an OpenGL 3 window (no GPU driver or Mesa for the display?)");
  }
  glfwMakeContextCurrent(m_window);
  glfwSwapInterval(visible ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the layout is the code's, not a file's
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(m_window, true);
  ImGui_ImplOpenGL3_Init("#version 130");
  // The worker wakes the loop when it has a result.
  state.set_wake([] { glfwPostEmptyEvent(); });
}

App::~App() {
  m_state.set_wake({});
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(m_window);
  glfwTerminate();
}

bool App::busy() const { return m_frames_to_draw > 0 || m_state.refining() || m_state.planning(); }

void App::wait() {
  if (m_frames_to_draw > 0) {  // still settling: the next frame at once
    glfwPollEvents();
    return;
  }
  if (m_state.refining() || m_state.planning()) {
    glfwWaitEventsTimeout(kBusyFrameS);  // the spinner's pace
  } else {
    glfwWaitEvents();  // asleep until input, or the worker's wake
  }
  m_frames_to_draw = kSettleFrames;
}

bool App::frame() {
  if (glfwWindowShouldClose(m_window)) return false;
  if (m_state.poll()) m_frames_to_draw = kSettleFrames;
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  draw_panels();
  ImGui::Render();
  int w = 0, h = 0;
  glfwGetFramebufferSize(m_window, &w, &h);
  glViewport(0, 0, w, h);
  glClearColor(0.08f, 0.08f, 0.1f, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (!m_pending_screenshot.empty()) {
    std::vector<unsigned char> pixels(size_t(w) * size_t(h) * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    stbi_flip_vertically_on_write(1);  // OpenGL's rows start at the bottom
    m_screenshot_written = stbi_write_png(m_pending_screenshot.c_str(), w, h, 4, pixels.data(), w * 4) != 0;
    m_pending_screenshot.clear();
  }
  glfwSwapBuffers(m_window);
  if (!m_export.screenshot.empty()) {  // the menu asked: the next frame is written
    m_pending_screenshot = m_export.screenshot;
    m_export.screenshot.clear();
    m_frames_to_draw = std::max(m_frames_to_draw, 1);
  } else if (m_screenshot_written && m_export.status.empty()) {
    m_export.status = "wrote the screenshot";
  }
  if (m_frames_to_draw > 0) --m_frames_to_draw;
  return true;
}

bool App::screenshot(const std::filesystem::path& path) {
  m_pending_screenshot = path;
  m_screenshot_written = false;
  frame();
  return m_screenshot_written;
}

void App::draw_panels() {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->Pos);
  ImGui::SetNextWindowSize(viewport->Size);
  ImGui::Begin("simrun", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_MenuBar |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  if (ImGui::BeginMenuBar()) {
    m_export.draw(m_state);
    ImGui::TextDisabled("%s", m_export.status.empty() ? m_state.file().c_str() : m_export.status.c_str());
    ImGui::EndMenuBar();
  }
  ImGui::BeginChild("side", ImVec2(kSideWidth, 0), true);
  if (ImGui::CollapsingHeader("Scenario", ImGuiTreeNodeFlags_DefaultOpen)) m_scenario.draw(m_state);
  if (ImGui::CollapsingHeader("Layout", ImGuiTreeNodeFlags_DefaultOpen)) m_layout.draw(m_state);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("views", ImVec2(0, 0), true);
  if (ImGui::BeginTabBar("views")) {
    const bool select = !m_shown || *m_shown != m_state.view;
    for (View v : {View::results, View::memory, View::timeline, View::compare, View::plan}) {
      const ImGuiTabItemFlags flags = select && v == m_state.view ? ImGuiTabItemFlags_SetSelected : 0;
      const std::string label = to_string(v);
      if (!ImGui::BeginTabItem(label.c_str(), nullptr, flags)) continue;
      if (!select) m_state.view = v;
      m_shown = v;
      switch (v) {
        case View::results:
          m_results.draw(m_state);
          break;
        case View::memory:
          m_memory.draw(m_state);
          break;
        case View::timeline:
          m_timeline.draw(m_state);
          break;
        case View::compare:
          m_compare.draw(m_state);
          break;
        case View::plan:
          m_plan.draw(m_state);
          break;
      }
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace simrun::gui
