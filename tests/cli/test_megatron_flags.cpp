// Megatron-LM's argument names on the simrun command: each sets the scenario field its row of
// cli/flag_names.cpp says, behaves as its simrun flag does, and contradictions name the flag.
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

using namespace simrun::test;

namespace {

const std::string kExample = std::string(SIMRUN_SOURCE_DIR) + "/examples/llama3-70b-h100.json";

nlohmann::json estimate_json(const std::string& flags) {
  const RunResult r = run_simrun("estimate " + shell_quoted(kExample) + " --json " + flags);
  INFO(flags << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

// The report's numbers that follow from the layout (not the wall clock).
std::string numbers(const nlohmann::json& j) {
  return j["step_time_s"].dump() + " " + j["memory"]["peak_bytes_per_gpu"].dump() + " " + j["run"]["tokens"].dump();
}

}  // namespace

TEST_CASE("a Megatron alias gives the same report as simrun's flag", "[cli][megatron]") {
  const std::pair<const char*, const char*> same[] = {
      {"--tp 4", "--tensor-model-parallel-size 4"},
      {"--pp 8 --virtual-stages 2", "--pipeline-model-parallel-size 8 --num-virtual-stages-per-pipeline-rank 2"},
      {"--micro-batch 2 --global-batch 1024", "--micro-batch-size 2 --global-batch-size 1024"},
      {"--seq-len 4096", "--seq-length 4096"},
      {"--recompute full", "--recompute-granularity full"},
      {"--precision bf16 --zero-stage 1 --recompute selective", "--bf16 --use-distributed-optimizer "
                                                               "--recompute-activations"},
      {"--precision fp8", "--bf16 --fp8-format hybrid"},
      {"--flash-attention", "--use-flash-attn"},
  };
  for (const auto& [simrun, megatron] : same) {
    CAPTURE(simrun, megatron);
    CHECK(numbers(estimate_json(simrun)) == numbers(estimate_json(megatron)));
  }
}

TEST_CASE("Megatron's model shape and run length flags", "[cli][megatron]") {
  const nlohmann::json base = estimate_json("");
  const nlohmann::json half = estimate_json("--num-layers 40");
  CHECK(half["model"]["params"].get<double>() < 0.6 * base["model"]["params"].get<double>());
  CHECK(half["step_time_s"].get<double>() < base["step_time_s"].get<double>());
  // Iterations x global batch (512 in the example) x seq_len (8192).
  CHECK(estimate_json("--train-iters 1000")["run"]["tokens"].get<double>() == 1000.0 * 512 * 8192);
  // Overlapping the gradient reduce is the default; Megatron's default (no overlap) costs time.
  CHECK(estimate_json("--overlap-grad-reduce")["step_time_s"] == base["step_time_s"]);
  CHECK(estimate_json("--no-overlap-grad-reduce")["step_time_s"].get<double>() >
        base["step_time_s"].get<double>());
}

TEST_CASE("contradicting Megatron flags name the flag", "[cli][megatron][errors]") {
  const std::string file = shell_quoted(kExample);
  require_one_safe_line(run_simrun("estimate " + file + " --bf16 --precision fp16"),
                        "command line: --bf16: sets layout.precision to bf16, which another flag gives as \"fp16\"");
  require_one_safe_line(run_simrun("estimate " + file + " --use-distributed-optimizer --zero-stage 3"),
                        "command line: --use-distributed-optimizer:");
  require_one_safe_line(run_simrun("estimate " + file + " --fp8-format e4m3 --precision fp16"),
                        "command line: --fp8-format:");
  require_one_safe_line(run_simrun("estimate " + file + " --train-iters 10 --tokens 1e12"),
                        "command line: --train-iters: given together with --tokens");
  require_one_safe_line(run_simrun("estimate " + file + " --num-attention-heads 60"),
                        "command line: --num-attention-heads:");
  require_one_safe_line(run_simrun("estimate " + file + " --num-query-groups 3"), "command line: --num-query-groups:");
  require_one_safe_line(run_simrun("estimate " + file + " --fp8-format e5m2"), "--fp8-format");
  require_one_safe_line(run_simrun("estimate " + file + " --overlap-grad-reduce --no-overlap-grad-reduce"),
                        "--overlap-grad-reduce");
}
