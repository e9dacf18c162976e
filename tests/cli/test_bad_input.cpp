// The bad-input corpus: every file in tests/data/bad_scenarios, and inputs too large to keep as
// files, get exit 2 and one line that is safe to print (control characters escaped, echoes cut
// short), naming the field. Add a file here for each new class of bad input found.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"

using namespace simrun::test;
namespace fs = std::filesystem;

namespace {

// Each corpus file and what its error line must say (its field, and the value as written).
const std::map<std::string, std::string>& corpus() {
  static const std::map<std::string, std::string> kExpected = {
      {"bell-nul-del-in-gpu.json", R"(cluster.gpu: unknown GPU "h100\x07\x00\x7f")"},
      {"combined-1f1b-full-recompute.json",
       "layout.pipeline_schedule: combined-1f1b cannot run with full recompute"},
      {"combined-1f1b-zero-3.json", "layout.pipeline_schedule: combined-1f1b is modelled with ZeRO 0-2"},
      {"combined-1f1b-pp-without-virtual-stages.json",
       "layout.pipeline_schedule: combined-1f1b with pp > 1 needs virtual_stages >= 2"},
      {"combined-1f1b-without-ep.json",
       "layout.pipeline_schedule: combined-1f1b hides expert-parallel all-to-alls and needs ep > 1"},
      {"dualpipe-few-micro-batches.json",
       "layout.pipeline_schedule: dualpipe needs an even number of micro-batches, at least 2·pp = 16, got "
       "12"},
      {"dualpipe-odd-stages.json",
       "layout.pipeline_schedule: dualpipe needs an even number of pipeline stages, got pp 3"},
      {"control-chars-in-key.json", R"(layout.\x1b[2Jtp: unknown field)"},
      {"control-chars-in-value.json", R"(model: unknown model "llama3-8b\x1b[31mRED\r\nX")"},
      {"huge-exponent.json", "cluster.num_gpus: 1e999 is out of range"},
      {"inline-fabric-missing-field.json", "cluster.fabric.kind.port_gbit_per_s: missing required field"},
      {"inline-gpu-catalog-id.json", R"(cluster.gpu.id: "h100-sxm" is a catalog GPU's id)"},
      {"inline-gpu-control-chars-in-id.json", R"(cluster.gpu.id: "h100\x1b[2J" holds control characters)"},
      {"inline-gpu-control-chars-in-name.json",
       R"(cluster.gpu.scale_up.name: "NVLink\x07 4" holds control characters or bytes that are not UTF-8)"},
      {"inline-gpu-negative-memory.json", "cluster.gpu.hbm_gb: -3 is out of range"},
      {"inline-gpu-nvls-without-nvswitch.json",
       R"(cluster.gpu.scale_up.nvls: NVLink SHARP needs kind "nvswitch")"},
      {"inline-gpu-unknown-field.json",
       R"(cluster.gpu.dense_tflops.bf17: unknown field (did you mean "bf16"?)"},
      {"integer-past-2-63.json", "cluster.num_gpus: 9223372036854775808 is out of range"},
      {"integer-past-2-64.json", "layout.tp: 18446744073709551617 is past the 64-bit integer range"},
      {"negative-past-2-63.json", "cluster.num_gpus: -9223372036854775809 is past the 64-bit integer range"},
      {"invalid-utf8.json", R"(malformed JSON at line 1, column 20)"},
      {"osc-sequence-in-choice.json", R"(layout.recompute: "full\x1b]0;title\x07" holds control characters)"},
      {"zero-tokens.json", "run.tokens: no tokens to train on"},
  };
  return kExpected;
}

}  // namespace

TEST_CASE("every file of the bad-input corpus gets one safe line naming its field", "[cli][errors][corpus]") {
  const fs::path dir = fs::path(SIMRUN_TEST_DATA_DIR) / "bad_scenarios";
  std::map<std::string, std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) found[entry.path().filename().string()] = "";
  for (const auto& [name, expected] : corpus()) CHECK(found.count(name) == 1);
  for (const auto& [name, unused] : found) {
    INFO(name << " needs an expected line in corpus()");
    REQUIRE(corpus().count(name) == 1);
    for (const char* command : {"estimate", "simulate"}) {
      INFO(command << " " << name);
      require_one_safe_line(run_simrun(std::string(command) + " " + shell_quoted(dir / name)),
                            corpus().at(name));
    }
  }
}

TEST_CASE("a megabyte string is echoed cut short, with an ellipsis", "[cli][errors][corpus]") {
  nlohmann::json doc = {{"model", std::string(1 << 20, 'A')}, {"cluster", {{"gpu", "h100-sxm"}}}};
  const RunResult r = run_simrun("estimate " + shell_quoted(write_file("megabyte.json", doc.dump())));
  require_one_safe_line(r, "model: unknown model \"AAAA");
  CHECK(r.err.find("…\"") != std::string::npos);
  CHECK(r.err.size() < 1000);
  doc = {{"model", "llama3-8b"},
         {"cluster", {{"gpu", "h100-sxm"}}},
         {"layout", {{std::string(1 << 20, 'k'), 1}}}};
  require_one_safe_line(run_simrun("estimate " + shell_quoted(write_file("megakey.json", doc.dump()))),
                        "unknown field");
}

TEST_CASE("control characters in flag values are escaped, from CLI11's errors and ours",
          "[cli][errors][corpus]") {
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --tp \"$(printf '\\033[2J')\""),
                        R"(--tp: "\x1b[2J" is not a value of the flag's type)");
  require_one_safe_line(run_simrun("estimate --model \"$(printf 'llama\\033[31m')\" --gpu h100-sxm"),
                        R"(--model: unknown model "llama\x1b[31m")");
  require_one_safe_line(
      run_simrun("simulate --model llama3-8b --gpu h100-sxm --straggler \"$(printf '3:\\007')\""),
      "--straggler");
}

TEST_CASE("names are suggested case-insensitively, prefixes first", "[cli][errors]") {
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu H100"), R"(did you mean "h100-sxm"?)");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100"), R"(did you mean "h100-sxm"?)");
  require_one_safe_line(run_simrun("estimate --model Llama3-70B --gpu h100-sxm"),
                        R"(did you mean "llama3-70b"?)");
}

TEST_CASE("model-parallel flags re-derive dp from the GPU count, and a contradiction names the flags",
          "[cli][errors][overrides]") {
  const std::string example = shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json");
  // The file's 1024 GPUs as tp 8 pp 4 dp 32: --tp 4 makes dp 64, as Megatron-LM derives it.
  const RunResult r = run_simrun("estimate " + example + " --tp 4");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("tp 4 pp 4 dp 64") != std::string::npos);
  require_one_safe_line(
      run_simrun("estimate " + example + " --tp 4 --dp 32"),
      "command line: --tp, --dp: tp*pp*dp*cp = 4*4*32*1 = 512 but cluster.num_gpus (--gpus) = 1024");
  // Advice that names a scenario field names its flag beside it, on the command line.
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --gpus 64 --pp 64"),
                        "(or set layout.pipeline_split (--pipeline-split) to \"embedding-loss-layers\"");
  require_one_safe_line(run_simrun("estimate " + example + " --pp 3"),
                        "command line: --pp: cannot be derived");
  // Without a file too, the sizes the flags gave are named, not the dp they left to derive.
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --gpus 16 --tp 8 --pp 4"),
                        "command line: --gpus, --tp, --pp: cannot be derived");
}

TEST_CASE("a calibration keyed by a GPU the scenario does not use says so in both commands",
          "[cli][calibration]") {
  const fs::path calibration =
      write_file("calibration-h100_sxm.json", R"({"gpus": {"h100_sxm": {"gemm_max": 0.7}}})");
  for (const char* command : {"estimate", "simulate"}) {
    const RunResult r =
        run_simrun(std::string(command) + " --model llama3-8b --gpu h100-sxm --gpus 8 --json " +
                   "--calibration " + shell_quoted(calibration));
    INFO(command << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("has no entry for h100-sxm (its GPUs: h100_sxm): the catalog's defaults apply") !=
          std::string::npos);
  }
}
