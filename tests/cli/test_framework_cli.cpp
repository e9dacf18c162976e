// The framework profile on the simrun command: the scenario's "framework" and --framework, the
// flags over the profile, the echo of framework.profile, --explain naming the profile, and an
// unknown framework or a bad profile in a user catalog as one line, exit 2.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"

namespace fs = std::filesystem;
using namespace simrun::test;

namespace {

const std::string kExample = shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json");

nlohmann::json inputs_of(const std::string& args) {
  const RunResult r = run_simrun(args);
  INFO(args << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out)["inputs"];
}

}  // namespace

TEST_CASE("no framework is megatron-core, echoed as framework.profile", "[cli][framework]") {
  const nlohmann::json none = inputs_of("estimate " + kExample + " --json");
  const nlohmann::json named = inputs_of("estimate " + kExample + " --framework megatron-core --json");
  CHECK(none["framework"]["profile"] == "megatron-core");
  CHECK(none == named);
}

TEST_CASE("a scenario's framework sets the behaviours, --framework replaces it", "[cli][framework]") {
  nlohmann::json doc =
      nlohmann::json::parse(read_text(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json"));
  doc["framework"] = "composer";
  const std::string file = shell_quoted(write_file("framework-composer.json", doc.dump()));
  const nlohmann::json composer = inputs_of("estimate " + file + " --json")["framework"];
  CHECK(composer["profile"] == "composer");
  CHECK(composer["kernels"] == "eager");
  CHECK(composer["fsdp_backward_prefetch"] == "after_backward");
  CHECK(composer["fsdp_one_communicator"] == true);
  CHECK(composer["adam_bytes_per_param"] == 80);
  const nlohmann::json nemo = inputs_of("estimate " + file + " --framework nemo --json")["framework"];
  CHECK(nemo["profile"] == "nemo");
  CHECK(nemo["kernels"] == "fused");
  CHECK(nemo["tp_comm_overlap"] == "full");
  // A version picks the newest profile not above it; an unversioned profile serves every version.
  CHECK(inputs_of("estimate " + file + " --framework nemo@24.07 --json")["framework"]["profile"] == "nemo");
}

TEST_CASE("the framework flags replace single behaviours of the profile, both ways", "[cli][framework]") {
  const nlohmann::json f = inputs_of(
      "estimate " + kExample +
      " --framework nemo --no-tp-comm-overlap --kernels eager --no-overlap-grad-reduce --json")["framework"];
  CHECK(f["profile"] == "nemo");
  CHECK(f["tp_comm_overlap"] == "backward_async");
  CHECK(f["kernels"] == "eager");
  CHECK(f["grad_reduce"] == "after_backward");
  const nlohmann::json fused =
      inputs_of("estimate " + kExample + " --framework fsdp2 --kernels fused --json")["framework"];
  CHECK(fused["kernels"] == "fused");
  CHECK(fused["fsdp_one_communicator"] == false);
  // The profile's behaviour moves the step as the flag alone does.
  auto step = [&](const std::string& flags) {
    const RunResult r = run_simrun("estimate " + kExample + " " + flags + " --json");
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out)["step_time_s"].get<double>();
  };
  CHECK(step("--framework megatron-core-perf") == step("--tp-comm-overlap --grad-reduce-in-bf16"));
  CHECK(step("--framework megatron-core-perf --no-tp-comm-overlap --grad-reduce-in-fp32") == step(""));
  // Gradients reduced in bf16 move half the DP bytes and keep a bf16 buffer: 2 B per parameter
  // less (Megatron's fp32 main gradients, the default profile's).
  CHECK(step("--grad-reduce-in-bf16") < step(""));
  const nlohmann::json fp32 = nlohmann::json::parse(run_simrun("estimate " + kExample + " --json").out);
  const nlohmann::json bf16 =
      nlohmann::json::parse(run_simrun("estimate " + kExample + " --grad-reduce-in-bf16 --json").out);
  CHECK(fp32["inputs"]["framework"]["grad_reduce_bytes"] == 4);
  CHECK(bf16["inputs"]["framework"]["grad_reduce_bytes"] == 2);
  CHECK(bf16["memory"]["grads"].get<double>() == Approx(0.5 * fp32["memory"]["grads"].get<double>()));
}

TEST_CASE("megatron-lm-2021 turns FlashAttention off unless the scenario says", "[cli][framework]") {
  nlohmann::json doc =
      nlohmann::json::parse(read_text(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json"));
  doc["layout"].erase("flash_attention");
  const std::string file = shell_quoted(write_file("framework-no-flash.json", doc.dump()));
  CHECK(inputs_of("estimate " + file + " --json")["layout"]["flash_attention"] == true);
  CHECK(inputs_of("estimate " + file + " --framework megatron-lm-2021 --json")["layout"]["flash_attention"] ==
        false);
  CHECK(inputs_of("estimate " + file +
                  " --framework megatron-lm-2021 --flash-attention --json")["layout"]["flash_attention"] ==
        true);
  // The example states flash_attention: the file's word stands over the profile's default.
  CHECK(inputs_of("estimate " + kExample +
                  " --framework megatron-lm-2021 --json")["layout"]["flash_attention"] == true);
}

TEST_CASE("explain names the profile and what it changes, with sources", "[cli][framework]") {
  const RunResult r = run_simrun("estimate " + kExample + " --framework composer --explain");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("framework = composer (MosaicML Composer (FSDP1); ") != std::string::npos);
  CHECK(r.out.find("fsdp_backward_prefetch = \"after_backward\" (megatron-core: \"before_backward\")") !=
        std::string::npos);
  CHECK(r.out.find("source: Composer FSDP config backward_prefetch default") != std::string::npos);
  const RunResult j = run_simrun("estimate " + kExample + " --framework composer --explain --json");
  REQUIRE(j.exit_code == 0);
  const nlohmann::json fp = nlohmann::json::parse(j.out)["framework_profile"];
  CHECK(fp["id"] == "composer");
  CHECK(fp["differs_from"] == "megatron-core");
  bool prefetch = false;
  for (const nlohmann::json& c : fp["changes"])
    if (c["field"] == "fsdp_backward_prefetch") {
      prefetch = true;
      CHECK(c["value"] == "after_backward");
      CHECK(c["megatron-core"] == "before_backward");
      CHECK(c["source"].get<std::string>().size() > 20);
    }
  CHECK(prefetch);
  const RunResult d = run_simrun("simulate " + kExample + " --explain --no-timing");
  REQUIRE(d.exit_code == 0);
  CHECK(d.out.find("framework = megatron-core (Megatron-Core; ") != std::string::npos);
}

TEST_CASE("an unknown framework is one line, exit 2, naming the known ones", "[cli][framework][errors]") {
  require_one_safe_line(run_simrun("estimate " + kExample + " --framework deepspeedd"),
                        "--framework: unknown framework \"deepspeedd\" (known: composer, ");
  nlohmann::json doc =
      nlohmann::json::parse(read_text(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json"));
  doc["framework"] = "nemmo";
  const RunResult r = run_simrun("simulate " + shell_quoted(write_file("framework-typo.json", doc.dump())));
  require_one_safe_line(r, "framework-typo.json: framework: unknown framework \"nemmo\"");
  CHECK(r.err.find("did you mean \"nemo\"?") != std::string::npos);
  require_one_safe_line(run_simrun("estimate " + kExample + " --framework nemo@x"), "is not a framework id");
  doc["framework"] = 3;
  require_one_safe_line(run_simrun("estimate " + shell_quoted(write_file("framework-type.json", doc.dump()))),
                        "framework-type.json: framework:");
}

TEST_CASE("a user catalog's frameworks/ adds profiles, checked like the shipped ones", "[cli][framework]") {
  const fs::path dir = scratch_dir() / "user-frameworks";
  fs::create_directories(dir / "frameworks");
  write_file("user-frameworks/frameworks/our-fsdp.json",
             R"({"name": "Our FSDP", "extends": "fsdp2",
                 "defaults": {"step_overhead_s": {"value": 0.2, "source": "our step logs"}}})");
  const nlohmann::json f = inputs_of("estimate " + kExample + " --catalog " + shell_quoted(dir) +
                                     " --framework our-fsdp --json")["framework"];
  CHECK(f["profile"] == "our-fsdp");
  CHECK(f["step_overhead_s"] == 0.2);
  CHECK(f["kernels"] == "eager");
  write_file(
      "user-frameworks/frameworks/bad.json",
      R"({"name": "Bad", "extends": "fsdp2", "defaults": {"kernels": {"value": "jit", "source": "x"}}})");
  require_one_safe_line(run_simrun("estimate " + kExample + " --catalog " + shell_quoted(dir)),
                        "bad.json: defaults.kernels.value:");
}
