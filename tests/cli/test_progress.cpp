// simulate's progress line (cli/progress_line.hpp): nothing on a pipe by default, the line when
// forced (--progress, SIMRUN_PROGRESS=1) with stdout unchanged, blanked before an error line;
// and the line's text and timing in-process.
#include <catch2/catch.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "cli_run.hpp"
#include "progress_line.hpp"

using namespace simrun;
using namespace simrun::cli;
using namespace simrun::test;

namespace {

const std::string kScenario = "--model llama3-8b --gpu h100-sxm --gpus 16 --tp 2 --pp 2 --global-batch 64";

// The table's host time ("0.02 s wall") differs from run to run.
std::string without_wall_time(const std::string& table) {
  return std::regex_replace(table, std::regex("[0-9.]+ s wall"), "_ s wall");
}

// `NAME=VALUE simrun ARGS`.
RunResult run_with_env(const std::string& assignment, const std::string& args) {
  const auto out = scratch_dir() / "stdout.txt", err = scratch_dir() / "stderr.txt";
  const std::string cmd = assignment + " " + shell_quoted(SIMRUN_BINARY) + " " + args + " >" +
                          shell_quoted(out) + " 2>" + shell_quoted(err);
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
}

}  // namespace

TEST_CASE("simulate writes no progress to a pipe, and the same stdout with the line forced on",
          "[cli][progress]") {
  const RunResult plain = run_simrun("simulate " + kScenario + " --full");
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.err.empty());  // stderr is a file here, not a terminal
  CHECK(plain.out.find("step time") != std::string::npos);

  for (const RunResult& r : {run_simrun("simulate " + kScenario + " --full --progress"),
                             run_with_env("SIMRUN_PROGRESS=1", "simulate " + kScenario + " --full")}) {
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(without_wall_time(r.out) == without_wall_time(plain.out));
    CHECK(r.err.find("\rsimrun: building the step's tasks") != std::string::npos);
    CHECK(r.err.find("\rsimrun: simulating 0%, 0 of ") != std::string::npos);
    CHECK(r.err.find("16 ranks") != std::string::npos);
    CHECK(r.err.find('\n') == std::string::npos);  // one line, redrawn
    // Blanked at the end: spaces between the last two carriage returns, nothing after them.
    REQUIRE(r.err.size() > 2);
    CHECK(r.err.back() == '\r');
    const size_t before_last = r.err.rfind('\r', r.err.size() - 2);
    REQUIRE(before_last != std::string::npos);
    CHECK(r.err.find_first_not_of(' ', before_last + 1) == r.err.size() - 1);
  }
}

TEST_CASE("the progress flags and SIMRUN_PROGRESS decide, and a bad value is one line", "[cli][progress]") {
  CHECK(run_with_env("SIMRUN_PROGRESS=0", "simulate " + kScenario + " --progress").err.find("simulating") !=
        std::string::npos);
  CHECK(run_with_env("SIMRUN_PROGRESS=1", "simulate " + kScenario + " --no-progress").err.empty());
  CHECK(run_with_env("SIMRUN_PROGRESS=0", "simulate " + kScenario).err.empty());
  CHECK(run_with_env("SIMRUN_PROGRESS=", "simulate " + kScenario).err.empty());
  require_one_safe_line(run_with_env("SIMRUN_PROGRESS=yes", "simulate " + kScenario), "SIMRUN_PROGRESS");
  require_one_safe_line(run_simrun("simulate " + kScenario + " --progress --no-progress"), "--progress");
}

TEST_CASE("an error during a run with the line on comes on a blanked line", "[cli][progress]") {
  // A step too large for the event simulation is refused once the run has started.
  const RunResult r =
      run_simrun("simulate --model llama3-8b --gpu h100-sxm --gpus 16 --global-batch 16777216 --progress");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  REQUIRE(r.err.find("\rsimrun: building") != std::string::npos);
  const std::string after_line = r.err.substr(r.err.rfind('\r') + 1);
  CHECK(after_line.find("micro-batches x 32 layers") != std::string::npos);
  CHECK(after_line.find('\n') == after_line.size() - 1);
}

TEST_CASE("the progress text gives the share of tasks done and an ETA from the pace so far",
          "[cli][progress]") {
  SimulationProgress p;
  CHECK(progress_text(p, 2.2) == "simrun: building the step's tasks (2 s)");
  p.phase = SimulationPhase::simulating;
  p.events = 1'234'567;
  p.tasks_done = 120'000;
  p.tasks_total = 480'000;
  p.simulated_ranks = 8;
  // A quarter done in 5 s: three quarters more take 15 s.
  CHECK(progress_text(p, 5) ==
        "simrun: simulating 25%, 120.0k of 480.0k tasks, 1.2M events, 8 ranks, ETA 15 s");
  CHECK(progress_text(p, 100) ==
        "simrun: simulating 25%, 120.0k of 480.0k tasks, 1.2M events, 8 ranks, ETA 5 min 00 s");
  // Too early for a pace: no ETA.
  CHECK(progress_text(p, 0.1).find("ETA") == std::string::npos);
  p.phase = SimulationPhase::retracing;
  p.simulated_ranks = 1;
  p.tasks_done = 950;
  p.tasks_total = 1000;
  CHECK(progress_text(p, 1) ==
        "simrun: tracing the last rank 95%, 950 of 1000 tasks, 1.2M events, 1 rank, ETA 0 s");
  // Within 80 columns for any count up to 1e12.
  p.tasks_done = p.tasks_total = p.events = 999'999'999'999;
  p.simulated_ranks = 131'072;
  p.phase = SimulationPhase::simulating;
  CHECK(progress_text(p, 1e6).size() < 80);
}

TEST_CASE("the line waits out its delay, redraws over itself and is blanked when done", "[cli][progress]") {
  SimulationProgress p;
  p.phase = SimulationPhase::simulating;
  p.tasks_total = 100;
  {
    std::ostringstream out;
    {
      ProgressLine line(out, std::chrono::hours(1));
      line.update(p);
      p.tasks_done = 100;
      line.update(p);
    }
    CHECK(out.str().empty());  // a run shorter than the delay shows nothing
  }
  std::ostringstream out;
  {
    ProgressLine line(out, std::chrono::seconds(0));
    p.tasks_done = 0;
    p.phase = SimulationPhase::building;
    line.update(p);
    p.phase = SimulationPhase::simulating;  // a new phase is drawn at once
    line.update(p);
    const std::string drawn = out.str();
    CHECK(drawn == "\r" + progress_text(SimulationProgress{}, 0) + "\r" + progress_text(p, 0));
  }
  // Blanked: the last line's width of spaces between two carriage returns.
  const std::string last = progress_text(p, 0);
  const std::string s = out.str();
  CHECK(s.substr(s.size() - last.size() - 2) == "\r" + std::string(last.size(), ' ') + "\r");
}
