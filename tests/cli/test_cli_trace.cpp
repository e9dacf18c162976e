// End-to-end tests of simulate's trace (issue 22): `--trace -` alone on stdout, the ranks chosen
// on the command line, and the size cap's cut with its warning.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_run.hpp"

namespace fs = std::filesystem;
using namespace simrun::test;

// `--trace -` puts the trace alone on stdout (valid JSON, nothing else), the table on stderr;
// with --json or --csv, which also want stdout, it is refused.
TEST_CASE("a trace to stdout (--trace -) comes alone, the table going to stderr", "[cli][trace]") {
  const std::string example =
      shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-8b-fsdp-h100.json");
  const RunResult r = run_simrun("simulate " + example + " --trace -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);  // throws on anything mixed in
  CHECK(doc["traceEvents"].size() > 100);
  CHECK(r.err.find("step time") != std::string::npos);
  CHECK(r.err.find("trace written to") == std::string::npos);

  require_one_safe_line(run_simrun("simulate " + example + " --trace - --json"),
                        "--trace: '-' writes the trace");
  require_one_safe_line(run_simrun("simulate " + example + " --trace - --csv"),
                        "--trace: '-' writes the trace");
}

TEST_CASE("trace ranks chosen on the command line are the traced ones, and a bad selector names its flag",
          "[cli][trace]") {
  const std::string example =
      shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-8b-fsdp-h100.json");
  const RunResult r = run_simrun("simulate " + example + " --trace - --trace-ranks 0,3");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::set<int64_t> pids;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  for (const auto& e : doc["traceEvents"]) pids.insert(e["pid"].get<int64_t>());
  CHECK(pids == std::set<int64_t>{0, 3});

  for (const char* bad : {"999999", "stage:99", "dp:-1", "1,,2", "ranks"})
    require_one_safe_line(run_simrun("simulate " + example + " --trace - --trace-ranks " + bad),
                          "command line: --trace-ranks: ");
  require_one_safe_line(run_simrun("simulate " + example + " --trace - --trace-max-mb -1"),
                        "command line: --trace-max-mb: must be 0");
}

TEST_CASE("a trace over its size cap is cut with a warning naming what was left out", "[cli][trace]") {
  const std::string example =
      shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-8b-fsdp-h100.json");
  const fs::path trace = scratch_dir() / "capped.json";
  const RunResult r =
      run_simrun("simulate " + example + " --json --trace " + shell_quoted(trace) + " --trace-max-mb 1");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::file_size(trace) <= 1000000);
  CHECK_NOTHROW(nlohmann::json::parse(read_text(trace)));
  bool warned = false;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  for (const auto& w : report["warnings"]) {
    const std::string text = w.get<std::string>();
    warned = warned || (text.find("trace: left out micro-batches") != std::string::npos &&
                        text.find("--trace-max-mb 0") != std::string::npos);
  }
  CHECK(warned);

  // A cap below the least a trace keeps (one micro-batch of one rank): the size written, said.
  const fs::path tiny = scratch_dir() / "tiny-cap.json";
  const RunResult under =
      run_simrun("simulate " + example + " --trace " + shell_quoted(tiny) + " --trace-max-mb 0.001");
  REQUIRE(under.exit_code == 0);
  const std::string written = fmt::format("({:.3g} MB written: the least a trace keeps, over the cap",
                                          double(fs::file_size(tiny)) / 1e6);
  CHECK(under.out.find(written) != std::string::npos);
}
