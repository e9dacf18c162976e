// The plan view (panels.hpp): run `plan`, watch its progress, the Pareto front as a scatter.
#include <fmt/format.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>

#include "panels.hpp"
#include "simrun/common/text.hpp"

namespace simrun::gui {
namespace {

// A plan request from the current scenario: its model, tokens and GPU at its price, up to its size.
std::string default_request(const GuiState& state) {
  nlohmann::json j = {
      {"model", state.get("model").is_null() ? nlohmann::json("llama3-8b") : state.get("model")}};
  const nlohmann::json gpu = state.get("cluster.gpu"), price = state.get("run.usd_per_gpu_hour");
  j["gpus"] =
      nlohmann::json::array({{{"gpu", gpu.is_string() ? gpu : nlohmann::json("h100-sxm")},
                              {"usd_per_gpu_hour", price.is_number() ? price : nlohmann::json(2.5)}}});
  if (state.get("run.tokens").is_number()) j["tokens"] = state.get("run.tokens");
  j["max_gpus"] =
      state.get("cluster.num_gpus").is_number() ? state.get("cluster.num_gpus") : nlohmann::json(1024);
  j["top_k"] = 5;
  return j.dump(2);
}

ImU32 colour_of(int offer) {
  static const ImU32 colours[] = {IM_COL32(70, 130, 220, 255), IM_COL32(230, 150, 40, 255),
                                  IM_COL32(100, 190, 120, 255), IM_COL32(200, 90, 160, 255)};
  return colours[size_t(offer) % 4];
}

}  // namespace

void PlanView::draw(GuiState& state) {
  if (state.plan_text.empty()) state.plan_text = default_request(state);
  ImGui::InputTextMultiline("request", &state.plan_text, ImVec2(-1, ImGui::GetTextLineHeight() * 10));
  ImGui::BeginDisabled(state.planning());
  if (ImGui::Button("Run plan")) state.start_plan();
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("From the scenario")) state.plan_text = default_request(state);
  if (state.planning()) {
    const PlanProgress p = state.plan_progress();
    ImGui::ProgressBar(p.total > 0 ? float(double(p.done) / double(p.total)) : 0.0f, ImVec2(-1, 0),
                       fmt::format("{} {} / {}", p.phase == PlanPhase::searching ? "searching" : "simulating",
                                   p.done, p.total)
                           .c_str());
  }
  if (!state.plan_error.empty()) ImGui::TextColored(kErrorColour, "%s", state.plan_error.c_str());
  if (!state.plan_result || !state.plan_request) return;
  const PlanResult& r = *state.plan_result;
  if (const std::string miss = state.plan_infeasible(); !miss.empty())
    ImGui::TextColored(kErrorColour, "%s", miss.c_str());
  ImGui::Text("%lld points, %lld estimated, %lld simulated; Pareto front of %zu (click a point to load it)",
              static_cast<long long>(r.space_size), static_cast<long long>(r.evaluated),
              static_cast<long long>(r.simulated), r.pareto.size());
  if (r.pareto.empty()) return;
  // Days against dollars, log-scaled, a colour per GPU type.
  double d0 = 1e300, d1 = 0, c0 = 1e300, c1 = 0;
  for (const PlanPoint& p : r.pareto) {
    d0 = std::min(d0, p.days), d1 = std::max(d1, p.days);
    c0 = std::min(c0, p.cost_usd), c1 = std::max(c1, p.cost_usd);
  }
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const ImVec2 size(ImGui::GetContentRegionAvail().x,
                    std::max(200.0f, ImGui::GetContentRegionAvail().y - 10));
  const float m = 50;
  auto x_of = [&](double days) {
    return o.x + m + float((days - d0) / std::max(1e-12, d1 - d0)) * (size.x - 2 * m);
  };
  auto y_of = [&](double usd) {
    return o.y + size.y - m - float((usd - c0) / std::max(1e-12, c1 - c0)) * (size.y - 2 * m);
  };
  draw->AddRect(ImVec2(o.x + m, o.y + m / 2), ImVec2(o.x + size.x - m / 2, o.y + size.y - m),
                IM_COL32(90, 90, 90, 255));
  const ImU32 text = IM_COL32(200, 200, 200, 255);
  draw->AddText(ImVec2(o.x + size.x / 2 - 20, o.y + size.y - m + 10), text, "days");
  draw->AddText(ImVec2(x_of(d0) - 10, o.y + size.y - m + 10), text, fmt::format("{:.1f}", d0).c_str());
  draw->AddText(ImVec2(x_of(d1) - 30, o.y + size.y - m + 10), text, fmt::format("{:.1f}", d1).c_str());
  // Four significant digits: the ends of a narrow front ($59.5k, $60.8k) read apart.
  draw->AddText(ImVec2(o.x + 2, y_of(c1) - 7), text, usd_text(c1, 4).c_str());
  draw->AddText(ImVec2(o.x + 2, y_of(c0) - 7), text, usd_text(c0, 4).c_str());
  // The legend: a colour per GPU type of the request.
  for (size_t g = 0; g < state.plan_request->gpus.size(); ++g) {
    const ImVec2 at(o.x + size.x - 160, o.y + m / 2 + 10 + 18 * float(g));
    draw->AddCircleFilled(ImVec2(at.x, at.y + 7), 5, colour_of(int(g)));
    draw->AddText(ImVec2(at.x + 10, at.y), text, state.plan_request->gpus[g].gpu.c_str());
  }
  for (const PlanPoint& p : r.pareto) {
    const ImVec2 at(x_of(p.days), y_of(p.cost_usd));
    draw->AddCircleFilled(at, 6, colour_of(p.offer));
    if (ImGui::IsMouseHoveringRect(ImVec2(at.x - 7, at.y - 7), ImVec2(at.x + 7, at.y + 7))) {
      ImGui::SetTooltip("%s x %lld, tp %lld pp %lld dp %lld: %.1f days, $%.3fM",
                        state.plan_request->gpus[size_t(p.offer)].gpu.c_str(),
                        static_cast<long long>(p.num_gpus), static_cast<long long>(p.layout.tp),
                        static_cast<long long>(p.layout.pp), static_cast<long long>(p.layout.dp), p.days,
                        p.cost_usd / 1e6);
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
        state.load_plan_point(p);
        state.view = View::results;
      }
    }
  }
  ImGui::Dummy(size);
}

}  // namespace simrun::gui
