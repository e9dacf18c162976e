// The progress line of long runs (`simrun simulate`, `simrun plan`): on stderr, only when it is a
// terminal (or --progress / SIMRUN_PROGRESS=1 asks for it) and only once the run has taken more
// than a second; one line redrawn with '\r' (tasks done, %, events, ranks, ETA) and blanked
// when the run ends, so stdout and what follows on stderr are what they are without it.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <ostream>
#include <string>

#include "simrun/sim/event/progress.hpp"

namespace simrun::cli {

enum class ProgressMode {
  automatic,  // on a terminal's stderr, after kProgressDelay
  always,     // from the start, whatever stderr is (--progress, SIMRUN_PROGRESS=1)
  never,      // --no-progress, SIMRUN_PROGRESS=0
};

// --progress / --no-progress.
struct ProgressArgs {
  bool on = false, off = false;
};
void add_progress_options(CLI::App& cmd, ProgressArgs& args);
// The flags, else SIMRUN_PROGRESS (`env_value`: "1" or "0"; empty: unset), else automatic.
// Throws InputError for both flags, or another value of the variable.
ProgressMode progress_mode(const ProgressArgs& args, const std::string& env_value);

inline constexpr std::chrono::milliseconds kProgressDelay{1000};
inline constexpr std::chrono::milliseconds kProgressRedraw{100};

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;
  // Draws on `out` once `delay` has passed since construction, at most every kProgressRedraw
  // (and whenever the phase changes).
  ProgressLine(std::ostream& out, Clock::duration delay);
  ~ProgressLine();  // blanks the line (also when the run throws, before main prints its error)
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void update(const SimulationProgress& p);
  // Draws `text` (a line of another command's progress, e.g. `simrun plan`'s) under the same
  // delay and redraw rules.
  void show(const std::string& text);
  void clear();
  // An observer for SimulateOptions::step.progress (this must outlive the run).
  ProgressObserver observer() {
    return [this](const SimulationProgress& p) { update(p); };
  }

 private:
  std::ostream& m_out;
  Clock::time_point m_start, m_phase_start, m_last_draw;
  Clock::duration m_delay;
  SimulationPhase m_phase = SimulationPhase::building;
  bool m_drawn_phase = false;  // the current phase has been drawn once
  size_t m_width = 0;          // characters on the line now (0: nothing drawn)
};

// The line `mode` asks for on stderr: none under never, nor under automatic when stderr is not
// a terminal.
std::unique_ptr<ProgressLine> stderr_progress_line(ProgressMode mode);

// "simrun: simulating 45%, 120.0k of 266.0k tasks, 1.2M events, 8 ranks, ETA 15 s": the text of
// one report, `elapsed_s` into its phase.
std::string progress_text(const SimulationProgress& p, double elapsed_s);

// 950, 12.3k, 48.1M; 15 s, 2 min 05 s: the line's numbers.
std::string count_text(uint64_t n);
std::string duration_text(double s);

}  // namespace simrun::cli
