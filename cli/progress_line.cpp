// The stderr progress line of `simrun simulate` and `simrun plan` (progress_line.hpp).
#include "progress_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <iostream>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun::cli {

std::string duration_text(double s) {
  const auto whole = static_cast<int64_t>(std::llround(s));
  if (whole < 60) return fmt::format("{} s", whole);
  if (whole < 3600) return fmt::format("{} min {:02} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02} min", whole / 3600, whole % 3600 / 60);
}

// 950, 12.3k, 48.1M: short enough that the line stays within 80 columns.
std::string count_text(uint64_t n) {
  if (n < 10'000) return fmt::format("{}", n);
  if (n < 1'000'000) return fmt::format("{:.1f}k", double(n) / 1e3);
  if (n < 1'000'000'000) return fmt::format("{:.1f}M", double(n) / 1e6);
  return fmt::format("{:.1f}G", double(n) / 1e9);
}

void add_progress_options(CLI::App& cmd, ProgressArgs& args) {
  CLI::Option* on = cmd.add_flag("--progress", args.on,
                                 "Show the progress line on stderr from the start, even when it is not a "
                                 "terminal (default: on a terminal, once a run takes over a second; "
                                 "also SIMRUN_PROGRESS=1)");
  cmd.add_flag("--no-progress", args.off, "Never show the progress line (also SIMRUN_PROGRESS=0)")
      ->excludes(on);
}

ProgressMode progress_mode(const ProgressArgs& args, const std::string& env_value) {
  if (args.on) return ProgressMode::always;
  if (args.off) return ProgressMode::never;
  if (env_value.empty()) return ProgressMode::automatic;
  if (env_value == "1") return ProgressMode::always;
  if (env_value == "0") return ProgressMode::never;
  throw InputError("environment", "SIMRUN_PROGRESS",
                   "must be 1 (show the progress line) or 0 (never), got " + quoted_input(env_value));
}

std::string progress_text(const SimulationProgress& p, double elapsed_s) {
  if (p.phase == SimulationPhase::building)
    return fmt::format("simrun: building the step's tasks ({})", duration_text(elapsed_s));
  const char* what = p.phase == SimulationPhase::simulating ? "simulating" : "tracing the last rank";
  const std::string ranks = fmt::format("{} rank{}", p.simulated_ranks, p.simulated_ranks == 1 ? "" : "s");
  if (p.tasks_total == 0) return fmt::format("simrun: {}, {} events, {}", what, count_text(p.events), ranks);
  const double done = double(p.tasks_done) / double(p.tasks_total);
  std::string text =
      fmt::format("simrun: {} {:.0f}%, {} of {} tasks, {} events, {}", what, 100 * done,
                  count_text(p.tasks_done), count_text(p.tasks_total), count_text(p.events), ranks);
  // The pace so far carries on: tasks finish at a steady rate once the pipeline has filled.
  if (p.tasks_done > 0 && p.tasks_done < p.tasks_total && elapsed_s >= 0.5)
    text += ", ETA " + duration_text(elapsed_s * (1 - done) / done);
  return text;
}

ProgressLine::ProgressLine(std::ostream& out, Clock::duration delay)
    : m_out(out), m_start(Clock::now()), m_phase_start(m_start), m_last_draw(m_start), m_delay(delay) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const SimulationProgress& p) {
  const Clock::time_point now = Clock::now();
  if (p.phase != m_phase) {
    m_phase = p.phase;
    m_phase_start = now;
    m_drawn_phase = false;
  }
  if (now - m_start < m_delay) return;
  if (m_drawn_phase && now - m_last_draw < kProgressRedraw) return;
  show(progress_text(p, std::chrono::duration<double>(now - m_phase_start).count()));
}

void ProgressLine::show(const std::string& text) {
  const Clock::time_point now = Clock::now();
  if (now - m_start < m_delay) return;
  if (m_drawn_phase && now - m_last_draw < kProgressRedraw) return;
  // Pad over what a longer previous line left.
  const size_t pad = m_width > text.size() ? m_width - text.size() : 0;
  m_out << '\r' << text << std::string(pad, ' ') << std::flush;
  m_width = text.size();
  m_last_draw = now;
  m_drawn_phase = true;
}

void ProgressLine::clear() {
  if (m_width == 0) return;
  m_out << '\r' << std::string(m_width, ' ') << '\r' << std::flush;
  m_width = 0;
}

std::unique_ptr<ProgressLine> stderr_progress_line(ProgressMode mode) {
  switch (mode) {
    case ProgressMode::never:
      return nullptr;
    case ProgressMode::always:
      return std::make_unique<ProgressLine>(std::cerr, ProgressLine::Clock::duration::zero());
    case ProgressMode::automatic:
      if (!::isatty(STDERR_FILENO)) return nullptr;
      return std::make_unique<ProgressLine>(std::cerr, kProgressDelay);
  }
  return nullptr;
}

}  // namespace simrun::cli
