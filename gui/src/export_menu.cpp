// The export menu (panels.hpp): the trace, the report and a screenshot of the window.
#include <fmt/format.h>
#include <imgui.h>

#include <fstream>

#include "panels.hpp"
#include "simrun/sim/event/trace.hpp"
#include "simrun/sim/report/csv.hpp"

namespace simrun::gui {

void ExportMenu::draw(GuiState& state) {
  if (!ImGui::BeginMenu("Export")) return;
  const std::shared_ptr<const SimulationOutput> event = state.event();
  if (ImGui::MenuItem("Trace (Chrome JSON): step-trace.json", nullptr, false, event != nullptr)) {
    std::ofstream out("step-trace.json");
    const TraceSummary t = write_chrome_trace(out, *state.scenario(), event->workload, event->step);
    status = out ? fmt::format("wrote step-trace.json ({} slices; open in ui.perfetto.dev)", t.slices)
                 : "could not write step-trace.json";
  }
  if (ImGui::MenuItem("Report (JSON): report.json", nullptr, false, state.figures().has_value())) {
    std::ofstream out("report.json");
    out << to_json(state.figures()->best()).dump(2) << "\n";
    status = out ? "wrote report.json" : "could not write report.json";
  }
  if (ImGui::MenuItem("Report (CSV): report.csv", nullptr, false, state.figures().has_value())) {
    std::ofstream out("report.csv");
    write_csv({report_csv_fields(state.figures()->best())}, out);
    status = out ? "wrote report.csv" : "could not write report.csv";
  }
  if (ImGui::MenuItem("Screenshot (PNG): simrun-gui.png")) {
    screenshot = "simrun-gui.png";
    status.clear();  // the app says when the frame is written
  }
  ImGui::EndMenu();
}

}  // namespace simrun::gui
