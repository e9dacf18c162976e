// simrun-gui headless under xvfb-run (gui/src/main.cpp): the PNG is written, has the asked size
// and is not blank; a changed setting changes the figures; a scenario it cannot load is one line
// and exit 2. Skipped, with a warning, where xvfb-run is not installed.
#include <stb_image.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_run.hpp"

using namespace simrun::test;
using nlohmann::json;

namespace {

const std::string kExample = std::string(SIMRUN_DATA_DIR) + "/examples/llama3-70b-h100.json";

std::string why_no_display() {
  std::error_code ec;
  for (const char* dir : {"/usr/bin", "/usr/local/bin"})
    if (std::filesystem::exists(std::filesystem::path(dir) / "xvfb-run", ec)) return "";
  return "xvfb-run is not installed (Debian: xvfb xauth): the headless GUI tests are skipped";
}

// `simrun-gui ARGS` under a virtual X server. Under the sanitizers without LeakSanitizer: Mesa and
// GLFW keep allocations past exit that are not simrun's (the GUI's state is leak-checked in-process
// by test_gui). The X authority file is the test's own (-f): xvfb-run's temporary folder for it
// can fail to go while the server still writes there, and xvfb-run then exits 5 in place of the
// GUI's status ("problem while cleaning up temporary directory", seen under ASan in CI).
RunResult run_gui(const std::string& args) {
  static int calls = 0;
  const auto out = scratch_dir() / "gui-stdout.txt", err = scratch_dir() / "gui-stderr.txt";
  const auto auth = scratch_dir() / ("xauth-" + std::to_string(::getpid()) + "-" + std::to_string(++calls));
  const std::string cmd = "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" xvfb-run -a -f " +
                          shell_quoted(auth) + " -s '-screen 0 1600x1000x24' " +
                          shell_quoted(SIMRUN_GUI_BINARY) + " " + args + " >" + shell_quoted(out) + " 2>" +
                          shell_quoted(err);
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
}

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("gui headless: each view's PNG is written, 1600x1000, not blank", "[gui][headless]") {
  if (const std::string why = why_no_display(); !why.empty()) {
    WARN(why);
    return;
  }
  for (const char* view : {"results", "memory", "timeline", "compare", "plan"}) {
    INFO(view);
    const auto png = scratch_dir() / (std::string(view) + ".png");
    std::filesystem::remove(png);
    const RunResult r = run_gui("--scenario " + shell_quoted(kExample) + " --view " + view +
                                " --screenshot " + shell_quoted(png));
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    int w = 0, h = 0, channels = 0;
    unsigned char* pixels = stbi_load(png.c_str(), &w, &h, &channels, 3);
    REQUIRE(pixels != nullptr);
    CHECK(w == 1600);
    CHECK(h == 1000);
    std::set<uint32_t> colours;
    for (int i = 0; i < w * h; i += 97)
      colours.insert(uint32_t(pixels[3 * i]) << 16 | uint32_t(pixels[3 * i + 1]) << 8 | pixels[3 * i + 2]);
    stbi_image_free(pixels);
    CHECK(colours.size() > 8);  // text, panels and figures, not one flat colour
  }
}

TEST_CASE("gui headless: a changed setting changes the figures", "[gui][headless]") {
  if (const std::string why = why_no_display(); !why.empty()) {
    WARN(why);
    return;
  }
  const auto a = scratch_dir() / "a.json", b = scratch_dir() / "b.json";
  REQUIRE(run_gui("--scenario " + shell_quoted(kExample) + " --dump-state " + shell_quoted(a)).exit_code ==
          0);
  REQUIRE(run_gui("--scenario " + shell_quoted(kExample) +
                  " --set layout.tp=4 --set layout.dp=64 --dump-state " + shell_quoted(b))
              .exit_code == 0);
  const json sa = read_json(a), sb = read_json(b);
  CHECK(sb["scenario"]["layout"]["tp"] == 4);
  CHECK(sa["estimate"]["step_time_s"] != sb["estimate"]["step_time_s"]);
  CHECK(sa["event"]["step_time_s"] != sb["event"]["step_time_s"]);  // the worker's refinement came too
}

TEST_CASE("gui headless: a scenario it cannot load is one line and exit 2", "[gui][headless]") {
  if (const std::string why = why_no_display(); !why.empty()) {
    WARN(why);
    return;
  }
  const auto bad = write_file("gui-bad.json",
                              "{\"model\": \"llama3-70b\", \"cluster\": {\"gpu\": \"h100-sxm\"}, "
                              "\"layout\": {\"tp\": 3}}");
  require_one_safe_line(run_gui("--scenario " + shell_quoted(bad) + " --screenshot x.png"),
                        "gui-bad.json: layout");
  require_one_safe_line(run_gui("--scenario /nonexistent.json --screenshot x.png"), "cannot open file");
  require_one_safe_line(run_gui("--scenario " + shell_quoted(kExample) + " --view nope --screenshot x.png"),
                        "--view");
  // An output it cannot write names its flag, as simrun's --trace does.
  require_one_safe_line(run_gui("--scenario " + shell_quoted(kExample) + " --dump-state /nonexistent/s.json"),
                        "command line: --dump-state: cannot write");
}

TEST_CASE("gui headless: a plan with nothing to rank says what misses, exit 3 as simrun plan",
          "[gui][headless]") {
  if (const std::string why = why_no_display(); !why.empty()) {
    WARN(why);
    return;
  }
  const auto plan =
      write_file("gui-plan-deadline.json",
                 R"({"model": "llama3-70b", "gpus": [{"gpu": "h100-sxm", "usd_per_gpu_hour": 2.5}],
                                   "max_gpus": 64, "deadline_days": 1, "search": {"tp": 8, "pp": [1, 2],
                                   "zero_stage": 1, "recompute": "full"}})");
  const auto state = scratch_dir() / "gui-plan-deadline-state.json";
  const RunResult r =
      run_gui("--view plan --plan " + shell_quoted(plan) + " --dump-state " + shell_quoted(state));
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("no plan meets the 1-day deadline") != std::string::npos);
  CHECK(read_json(state).at("plan").at("infeasible").get<std::string>().find("no plan meets") == 0);
}
