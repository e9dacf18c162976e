// simrun-gui: the what-if explorer (docs/gui.md).
//   simrun-gui [--scenario FILE]                       the window
//   simrun-gui --scenario FILE --screenshot out.png [--frames N] [--view
//   results|memory|timeline|compare|plan]
//              [--set layout.tp=4 ...] [--dump-state state.json]
//                                                      headless (under xvfb-run): draws, writes, exits
// Exit codes as simrun's: 0 ok, 1 internal error (no display), 2 bad input (one line on stderr).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

#include "app.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/typed_numbers.hpp"

namespace {

using simrun::gui::App;
using simrun::gui::GuiState;

// The refinement a headless run waits for before it draws its last frames, at most.
constexpr double kHeadlessWaitS = 300;

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("SIMRUN_DATA_DIR"); env && *env) return env;
  return SIMRUN_DATA_DIR;
}

int bad_input(const std::string& line) {
  std::cerr << simrun::printable(line, simrun::kErrorLineMaxBytes) << "\n";
  return 2;
}

int run(int argc, char** argv) {
  CLI::App cli{"simrun-gui: the what-if explorer of simrun (docs/gui.md)"};
  std::string scenario, screenshot, view, dump_state, plan_file;
  bool pin = false;
  std::vector<std::string> sets;
  int frames = 3, width = 1600, height = 1000;
  cli.add_option("--scenario", scenario, "Scenario file to open (the same file simrun reads)");
  cli.add_option("--screenshot", screenshot, "Headless: draw, write this PNG and exit");
  cli.add_option("--frames", frames, "Headless: frames drawn before the screenshot (default 3)")
      ->transform(CLI::Validator(simrun::decimal_integer_error, ""))  // decimal, as simrun's flags
      ->check(CLI::Range(1, 10000));
  cli.add_option("--view", view, "The view shown: results, memory, timeline, compare or plan");
  cli.add_option("--set", sets, "A scenario field by its path, e.g. layout.tp=4 (repeatable)");
  cli.add_flag("--pin", pin, "Pin the scenario as loaded as A (the compare view), before --set changes it");
  cli.add_option("--plan", plan_file,
                 "Run this plan request (a plan file, docs/planner.md) in the plan view");
  cli.add_option("--dump-state", dump_state, "Headless: write the state (scenario, figures) as JSON");
  cli.add_option("--size", width, "Window width in pixels (default 1600)")
      ->transform(CLI::Validator(simrun::decimal_integer_error, ""))
      ->check(CLI::Range(320, 8192));
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return cli.exit(e);
    return bad_input(std::string("command line: ") + e.what());
  }
  const bool headless = !screenshot.empty() || !dump_state.empty();

  GuiState state(simrun::load_catalogs(data_dir()), data_dir(), scenario);
  if (!state.load_error().empty() && headless) return bad_input(state.load_error());
  if (pin) {
    state.wait_for_worker(kHeadlessWaitS);  // A with its refined figures
    state.pin();
  }
  for (const std::string& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      return bad_input("command line: --set " + s + ": expected PATH=VALUE (e.g. layout.tp=4)");
    state.set_text(s.substr(0, eq), s.substr(eq + 1));
  }
  if (!view.empty()) {
    const auto v = simrun::gui::view_named(view);
    if (!v)
      return bad_input("command line: --view: " + view +
                       " is not a view (results, memory, timeline, compare, plan)");
    state.view = *v;
  }
  if (headless && !state.error().empty()) return bad_input(state.error());
  if (!plan_file.empty()) {
    std::ifstream in(plan_file);
    if (!in) return bad_input(plan_file + ": cannot open file (does it exist and is it readable?)");
    state.plan_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    state.plan_file = plan_file;
    state.start_plan();
    if (headless && !state.plan_error.empty()) return bad_input(state.plan_error);
  }

  App app(state, width, height, !headless);
  if (!headless) {
    while (app.frame()) app.wait();
    return 0;
  }
  for (int i = 0; i < frames; ++i) app.frame();
  state.wait_for_worker(kHeadlessWaitS);
  // What the worker refused is bad input too (a plan request's field); a simulation that failed is
  // simrun's.
  if (!state.plan_error.empty()) return bad_input(state.plan_error);
  if (!state.error().empty()) {
    std::cerr << simrun::printable("simrun-gui: " + state.error(), simrun::kErrorLineMaxBytes) << "\n";
    return 1;
  }
  for (int i = 0; i < 3; ++i) app.frame();  // the refined figures, settled
  if (!screenshot.empty() && !app.screenshot(screenshot))
    return bad_input("command line: --screenshot: cannot write " + simrun::quoted_input(screenshot));
  if (!dump_state.empty()) {
    std::ofstream out(dump_state);
    out << state.dump().dump(2) << "\n";
    if (!out)
      return bad_input("command line: --dump-state: cannot write " + simrun::quoted_input(dump_state));
  }
  // A plan with nothing to rank is `simrun plan`'s exit 3, its line on stderr (the outputs written).
  if (const std::string miss = state.plan_infeasible(); !miss.empty()) {
    std::cerr << simrun::printable(plan_file + ": " + miss, simrun::kErrorLineMaxBytes) << "\n";
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const simrun::InputError& e) {
    return bad_input(e.what());
  } catch (const std::exception& e) {
    std::cerr << simrun::printable(std::string("simrun-gui: ") + e.what(), simrun::kErrorLineMaxBytes)
              << "\n";
    return 1;
  }
}
