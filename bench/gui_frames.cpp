// simrun-gui's frame times (issue 26): a scripted slider sweep on Llama-3 405B on 16,384 H100s
// (examples/llama3-405b-16k-h100.json), each frame after an edit that re-estimates the step and
// restarts the event simulation on the worker, then the step's timeline panned across, a frame
// per step of the pan. Prints the median and 95th-percentile frame times of each. Runs with a
// display (xvfb-run -a build/bench/gui_frames); the figures are the software renderer's there.
//   build/bench/gui_frames [--frames N]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "app.hpp"

namespace {

using namespace simrun;
using namespace simrun::gui;
using Clock = std::chrono::steady_clock;

struct Percentiles {
  double median_ms = 0, p95_ms = 0;
};

Percentiles percentiles(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 95 / 100)]};
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 120;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--frames") == 0) frames = std::max(10, std::atoi(argv[i + 1]));
  GuiState state(load_catalogs(SIMRUN_DATA_DIR), SIMRUN_DATA_DIR,
                 std::string(SIMRUN_DATA_DIR) + "/examples/llama3-405b-16k-h100.json");
  if (!state.load_error().empty()) {
    fmt::print(stderr, "gui_frames: {}\n", state.load_error());
    return 1;
  }
  App app(state, 1600, 1000, false);
  app.frame();

  // The sweep: each frame moves a "slider" (the global batch, so the micro-batches per pipeline),
  // as a drag does, and draws.
  std::vector<double> sweep;
  const std::vector<int> batches = {1024, 1536, 2048, 3072, 4096};
  for (int i = 0; i < frames; ++i) {
    const auto t = Clock::now();
    nlohmann::json layout = state.get("layout");
    layout["global_batch"] = batches[size_t(i) % batches.size()];
    state.set("layout", layout);
    app.frame();
    sweep.push_back(ms_since(t));
  }
  const Percentiles s = percentiles(sweep);

  // The timeline: the refined step, the whole step in view, then panned a frame at a time.
  state.view = View::timeline;
  const auto wait = Clock::now();
  state.wait_for_worker(600);
  const double simulated_s = ms_since(wait) / 1e3;
  app.frame();
  app.frame();
  TimelineView& timeline = app.timeline();
  const double width = timeline.t1 - timeline.t0;
  std::vector<double> pan;
  int64_t drawn = 0;
  for (int i = 0; i < frames; ++i) {
    const double shift = width * 0.01 * ((i / 50) % 2 == 0 ? 1 : -1);
    timeline.t0 += shift;
    timeline.t1 += shift;
    const auto t = Clock::now();
    app.frame();
    pan.push_back(ms_since(t));
    drawn = std::max(drawn, timeline.last_frame_spans);
  }
  const Percentiles p = percentiles(pan);
  const size_t spans = state.event() ? state.event()->step.spans.size() : 0;
  fmt::print("simrun-gui frame times, llama3-405b on 16,384 H100 (tp 8, pp 16), {} frames each\n", frames);
  fmt::print("  slider sweep (edit + estimate + frame): median {:.2f} ms, p95 {:.2f} ms\n", s.median_ms,
             s.p95_ms);
  fmt::print(
      "  timeline pan: median {:.2f} ms, p95 {:.2f} ms; {} spans in the step, at most {} drawn per "
      "frame\n",
      p.median_ms, p.p95_ms, spans, drawn);
  fmt::print("  (event simulation on the worker after the sweep: {:.1f} s)\n", simulated_s);
  return 0;
}
