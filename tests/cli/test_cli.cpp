// End-to-end tests of the simrun command: every bad input gets exactly one line on stderr
// naming file, field and rule, nothing on stdout, and exit 2; good input prints the contract.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using namespace simrun::test;

// A valid scenario as a JSON value that each case breaks in one place.
nlohmann::json good_scenario() {
  return nlohmann::json::parse(R"({
    "model": "llama3-70b",
    "cluster": {"gpu": "h100-sxm", "num_gpus": 64, "gpus_per_node": 8,
                "fabric": {"kind": "ib-ndr", "nics_per_node": 8}},
    "layout": {"tp": 8, "pp": 4, "dp": 2, "micro_batch": 1, "global_batch": 64,
               "recompute": "selective", "sequence_parallel": true},
    "run": {"tokens": 1e11, "usd_per_gpu_hour": 4.0}
  })");
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

RunResult estimate_with(const std::string& name, const nlohmann::json& doc) {
  return run_simrun("estimate '" + write_file(name, doc.dump(2)).string() + "' --json");
}

}  // namespace

TEST_CASE("every shipped example simulates and prints the contract keys", "[cli]") {
  int examples = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(SIMRUN_DATA_DIR) / "examples")) {
    if (entry.path().extension() != ".json") continue;
    ++examples;
    const RunResult r = run_simrun("simulate '" + entry.path().string() + "' --json");
    INFO(entry.path().filename().string() << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["step_time_s"].get<double>() > 0);
    CHECK(j["memory"]["fits"].is_boolean());  // the 405B speed layout (no recompute) reports fits: false
    for (const char* key :
         {"tp_comm_s", "pp_comm_s", "dp_comm_s", "cp_comm_s", "ep_comm_s", "exposed_comm_s"})
      CHECK(j["breakdown"].contains(key));
    // Exposed per group: each within its group's total, together the exposed total.
    double exposed = 0;
    const std::pair<const char*, const char*> groups[] = {{"tp_exposed_s", "tp_comm_s"},
                                                          {"pp_exposed_s", "pp_comm_s"},
                                                          {"dp_exposed_s", "dp_comm_s"},
                                                          {"cp_exposed_s", "cp_comm_s"},
                                                          {"ep_exposed_s", "ep_comm_s"}};
    for (const auto& [exposed_key, total_key] : groups) {
      const double e = j["breakdown"][exposed_key].get<double>();
      CHECK(e >= 0);
      CHECK(e <= j["breakdown"][total_key].get<double>() * (1 + 1e-9) + 1e-12);
      exposed += e;
    }
    CHECK(exposed == Approx(j["breakdown"]["exposed_comm_s"].get<double>()));
    if (entry.path().filename() == "mixtral-8x7b-h100.json")
      CHECK(j["breakdown"]["ep_comm_s"].get<double>() > 0);
  }
  CHECK(examples >= 5);
}

TEST_CASE("estimate --json on the headline example prints every contract key", "[cli]") {
  const RunResult r =
      run_simrun(std::string("estimate '") + SIMRUN_DATA_DIR + "/examples/llama3-70b-h100.json' --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "hfu", "flops_per_step", "warnings"})
    CHECK(j.contains(key));
  for (const char* key : {"params", "active_params"}) CHECK(j["model"].contains(key));
  for (const char* key :
       {"peak_bytes_per_gpu", "capacity_bytes", "fits", "weights", "grads", "optimizer", "activations"})
    CHECK(j["memory"].contains(key));
  for (const char* key : {"compute_s", "exposed_comm_s", "bubble_s"}) CHECK(j["breakdown"].contains(key));
  for (const char* key : {"tokens", "days", "gpu_hours", "cost_usd", "energy_kwh", "goodput"})
    CHECK(j["run"].contains(key));
  CHECK(j["step_time_s"].get<double>() > 0);
  CHECK(j["mfu"].get<double>() > 0.05);
  CHECK(j["mfu"].get<double>() < 0.8);
}

TEST_CASE("simulate --compare-analytic prints both fidelities, side by side and in JSON", "[cli]") {
  const std::string file = std::string("'") + SIMRUN_DATA_DIR + "/examples/llama3-70b-h100.json'";
  const RunResult table = run_simrun("simulate " + file + " --compare-analytic");
  INFO(table.err);
  REQUIRE(table.exit_code == 0);
  const RunResult json = run_simrun("simulate " + file + " --compare-analytic --json");
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.out);
  const double event = j["step_time_s"].get<double>(), analytic = j["analytic"]["step_time_s"].get<double>();
  CHECK(j["analytic_difference"].get<double>() == Approx((event - analytic) / analytic));
  // The table's step-time row carries both times and their difference, as the JSON has them.
  const auto row =
      table.out.find("  step time  ", table.out.find("event simulation vs closed-form estimate"));
  REQUIRE(row != std::string::npos);
  const std::string line = table.out.substr(row, table.out.find('\n', row) - row);
  CHECK(line.find(fmt::format("{:.3f} s", event)) != std::string::npos);
  CHECK(line.find(fmt::format("{:.3f} s", analytic)) != std::string::npos);
  CHECK(line.find(fmt::format("{:+.1f} %", 100 * (event - analytic) / analytic)) != std::string::npos);
  for (const char* part :
       {"  compute ", "  exposed TP ", "  exposed PP ", "  exposed DP ", "  pipeline bubble ", "  MFU "})
    CHECK(table.out.find(part, row) != std::string::npos);
  // Both columns describe the estimate's slowest stage, and each sums to its own step time.
  const auto& comparison = j["comparison"];
  const int64_t stage = comparison["stage"].get<int64_t>();
  CHECK(stage == j["analytic"]["breakdown"]["stage"].get<int64_t>());
  CHECK(comparison["event"]["stage"].get<int64_t>() == stage);
  for (const auto& [parts, step] :
       {std::pair{comparison["event"], event}, std::pair{comparison["analytic"], analytic}}) {
    const double sum = parts["compute_s"].get<double>() + parts["exposed_comm_s"].get<double>() +
                       parts["bubble_s"].get<double>();
    CHECK(sum == Approx(step).epsilon(1e-6));
  }
}

TEST_CASE("estimate works without a file from flags alone", "[cli]") {
  const RunResult r = run_simrun(
      "estimate --model llama3-8b --gpu h100-sxm --gpus 64 --tp 2 --pp 1 --global-batch 256 --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["model"]["params"].get<double>() == Approx(8.03e9).epsilon(0.01));
}

TEST_CASE("flags override the scenario file", "[cli]") {
  const fs::path file = write_file("override.json", good_scenario().dump());
  const RunResult base = run_simrun("estimate '" + file.string() + "' --json");
  const RunResult more = run_simrun("estimate '" + file.string() + "' --json --gpus 128 --global-batch 128");
  REQUIRE(base.exit_code == 0);
  REQUIRE(more.exit_code == 0);
  // Twice the GPUs at twice the batch: same per-replica work, so the step time barely moves.
  const double t1 = nlohmann::json::parse(base.out)["step_time_s"];
  const double t2 = nlohmann::json::parse(more.out)["step_time_s"];
  CHECK(t2 == Approx(t1).epsilon(0.2));
}

TEST_CASE("unknown model and GPU ids list the known ones and suggest the nearest", "[cli][errors]") {
  auto doc = good_scenario();
  doc["model"] = "llama3-70";
  require_one_safe_line(estimate_with("bad_model.json", doc), "did you mean \"llama3-70b\"");
  doc = good_scenario();
  doc["cluster"]["gpu"] = "h100sxm";
  const RunResult r = estimate_with("bad_gpu.json", doc);
  require_one_safe_line(r, "cluster.gpu");
  CHECK(r.err.find("did you mean \"h100-sxm\"") != std::string::npos);
  CHECK(r.err.find("a100-80gb") != std::string::npos);
}

TEST_CASE("layout products and divisibility are checked", "[cli][errors]") {
  auto doc = good_scenario();
  doc["layout"]["dp"] = 3;
  require_one_safe_line(estimate_with("product.json", doc), "must be equal");

  doc = good_scenario();  // 64 heads, 8 kv heads
  doc["layout"]["tp"] = 16;
  doc["layout"]["pp"] = 2;
  doc["layout"]["global_batch"] = 64;
  require_one_safe_line(estimate_with("tp_kv.json", doc), "kv_heads");

  doc = good_scenario();
  doc["model"] = {{"name", "odd"},     {"layers", 8},    {"hidden", 1536},
                  {"heads", 12},       {"kv_heads", 12}, {"ffn_hidden", 6144},
                  {"ffn_act", "gelu"}, {"vocab", 50304}, {"seq_len", 2048}};
  doc["layout"]["tp"] = 8;
  doc["layout"]["pp"] = 4;
  require_one_safe_line(estimate_with("tp_heads.json", doc), "attention heads");

  doc = good_scenario();  // 80 layers
  doc["layout"]["pp"] = 3;
  doc["cluster"]["num_gpus"] = 48;
  require_one_safe_line(estimate_with("pp_layers.json", doc), "layout.pp");

  doc = good_scenario();
  doc["layout"]["global_batch"] = 63;
  require_one_safe_line(estimate_with("batch.json", doc), "layout.global_batch");
}

TEST_CASE("zero, negative, absurd numbers and wrong types are refused", "[cli][errors]") {
  auto doc = good_scenario();
  doc["layout"]["tp"] = 0;
  require_one_safe_line(estimate_with("zero.json", doc), "layout.tp");
  doc = good_scenario();
  doc["run"]["usd_per_gpu_hour"] = -1;
  require_one_safe_line(estimate_with("negative.json", doc), "run.usd_per_gpu_hour");
  doc = good_scenario();
  doc["cluster"]["num_gpus"] = 1e13;
  require_one_safe_line(estimate_with("absurd.json", doc), "cluster.num_gpus");
  doc = good_scenario();
  doc["layout"]["tp"] = "8";
  require_one_safe_line(estimate_with("type.json", doc), "expected an integer");
  doc = good_scenario();
  doc["layout"]["micro_batch"] = 1.5;
  require_one_safe_line(estimate_with("fraction.json", doc), "layout.micro_batch");
  // NaN is not JSON; a file that spells it is malformed.
  require_one_safe_line(run_simrun("estimate '" + write_file("nan.json", R"({"model": NaN})").string() + "'"),
                        "malformed JSON");
}

TEST_CASE("unknown keys are refused with a suggestion", "[cli][errors]") {
  auto doc = good_scenario();
  doc["layout"]["tensor_parallel"] = 8;
  doc["layout"].erase("tp");
  const RunResult r = estimate_with("unknown_key.json", doc);
  require_one_safe_line(r, "layout.tensor_parallel: unknown field");
  doc = good_scenario();
  doc["layuot"] = doc["layout"];
  doc.erase("layout");
  require_one_safe_line(estimate_with("unknown_top.json", doc), "did you mean \"layout\"");
}

TEST_CASE("malformed JSON names line and column, and missing files are named", "[cli][errors]") {
  const fs::path p =
      write_file("malformed.json", "{\n  \"model\": \"llama3-8b\",\n  \"cluster\": {\"gpu\": }\n}\n");
  const RunResult r = run_simrun("estimate '" + p.string() + "'");
  require_one_safe_line(r, "line 3, column");
  require_one_safe_line(run_simrun("estimate /nonexistent/scenario.json"),
                        "/nonexistent/scenario.json: cannot open");
}

TEST_CASE("unknown subcommands and flags exit 2 with one line", "[cli][errors]") {
  require_one_safe_line(run_simrun("frobnicate"), "frobnicate: neither a subcommand");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --tp x"), "command line");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --tp 1.5"),
                        "--tp: \"1.5\" is not a value of the flag's type (an integer for sizes and counts, a "
                        "number for rates; see simrun estimate --help)");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --bogus"),
                        "--bogus (see simrun estimate --help for its flags)");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --gpus 8 --gpus 16"),
                        "--gpus: given more than once");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --json --csv"),
                        "--json excludes --csv");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --csv --explain"),
                        "--csv excludes --explain");
}

TEST_CASE("a scenario file of any name runs the main job", "[cli]") {
  const fs::path txt = write_file("scenario.txt", good_scenario().dump());
  const RunResult r = run_simrun(shell_quoted(txt) + " --json");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["fidelity"] == "event");
}

TEST_CASE("a layout that does not fit still reports, and --require-fit adds exit 3 after the report",
          "[cli]") {
  auto doc = good_scenario();  // 70B on 8 GPUs, no sharding of weights: far over 80 GB
  doc["cluster"]["num_gpus"] = 8;
  doc["layout"] = {{"tp", 8}, {"pp", 1}, {"dp", 1}, {"global_batch", 8}, {"zero_stage", 0}};
  const fs::path file = write_file("too_big.json", doc.dump());
  const RunResult reported = run_simrun("estimate '" + file.string() + "' --json");
  REQUIRE(reported.exit_code == 0);
  CHECK(nlohmann::json::parse(reported.out)["memory"]["fits"] == false);
  for (const char* command : {"estimate", "simulate"}) {
    const RunResult hard = run_simrun(std::string(command) + " '" + file.string() + "' --require-fit --json");
    INFO(command << ": " << hard.err);
    CHECK(hard.exit_code == 3);
    // The whole report first (a sweep keeps the numbers), then the one line on stderr.
    CHECK(nlohmann::json::parse(hard.out)["memory"]["fits"] == false);
    CHECK(count_lines(hard.err) == 1);
    CHECK(hard.err.find("exceeds the") != std::string::npos);
  }
}

TEST_CASE("a missing or directory hf_config names model.hf_config, a directory is not 'malformed JSON'",
          "[cli][errors]") {
  auto doc = good_scenario();
  doc["cluster"]["num_gpus"] = 8;
  doc["layout"] = {{"tp", 1}, {"pp", 1}, {"dp", 8}};
  doc["model"] = {{"hf_config", "no-such-config.json"}};
  require_one_safe_line(estimate_with("hf_missing.json", doc),
                        "hf_missing.json: model.hf_config: cannot read");
  doc["model"] = {{"hf_config", "."}};
  require_one_safe_line(estimate_with("hf_dir.json", doc), "hf_dir.json: model.hf_config: cannot read");
  require_one_safe_line(run_simrun("estimate '" + scratch_dir().string() + "/'"), "is a directory");
  // A config's context beyond what a step is simulated at needs the training length given.
  write_file("hf_long.json",
             R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "vocab_size": 128, "max_position_embeddings": 67108864})");
  doc["model"] = {{"hf_config", "hf_long.json"}};
  require_one_safe_line(estimate_with("hf_long_ctx.json", doc),
                        "hf_long_ctx.json: model.seq_len: missing, and the config's context");
  doc["model"] = {{"hf_config", "hf_long.json"}, {"seq_len", 4096}};
  CHECK(estimate_with("hf_long_ctx_given.json", doc).exit_code == 0);
  // A name given over the config's is checked as the config's own: no control characters.
  doc["model"] = {{"hf_config", "hf_long.json"}, {"seq_len", 4096}, {"name", "evil\u001b[31m\nline"}};
  require_one_safe_line(estimate_with("hf_name.json", doc),
                        "hf_name.json: model.name: \"evil\\x1b[31m\\nline\"");
}

TEST_CASE("collective: a step factor a few ulps above 1 is refused, not stepped for hours", "[cli][errors]") {
  require_one_safe_line(run_simrun("collective --gpus 16 -b 8 -e 1G -f 1.0000000000000002"),
                        "command line: -f: step factor too close to 1");
  // The message states both bounds, true of an infinite or undefined factor too.
  for (const char* factor : {"inf", "nan", "2000", "1"})
    require_one_safe_line(run_simrun(std::string("collective --gpus 16 -b 8 -e 1G -f ") + factor),
                          "command line: -f: step factor must be above 1 and at most 1024");
}

TEST_CASE("collective on one mesh or PCIe GPU reports rows instead of an internal error", "[cli]") {
  for (const char* gpu : {"mi300x", "h100-pcie", "h100-sxm"}) {
    const RunResult r = run_simrun(std::string("collective --gpu ") + gpu + " --gpus 1 -b 8 -e 1M --json");
    INFO(gpu << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("null") == std::string::npos);  // NaN/inf would serialise as null
  }
}

TEST_CASE("collective sweeps too large to simulate in reasonable time are refused in one line",
          "[cli][errors]") {
  // 1M GPUs x 14 sizes took about a minute and 4 GB; per-step rings on 16K GPUs, 19 GB.
  require_one_safe_line(run_simrun("collective --gpus 1048576 -b 8 -e 64K"),
                        "command line: --gpus: 14 sizes");
  require_one_safe_line(run_simrun("collective --gpus 16384 --decomposition steps -b 1M -e 1M"),
                        "GPUs squared (--decomposition steps)");
  // -b above the default -e blames -b; sizes are whole bytes.
  require_one_safe_line(
      run_simrun("collective -b 1G"),
      "command line: -b: the smallest size (-b \"1G\") is above the largest (-e \"128M\", the "
      "default)");
  require_one_safe_line(run_simrun("collective -b 1M -e 64K"), "command line: -e: the smallest size");
  require_one_safe_line(run_simrun("collective -b 1.5"), "-b: size '1.5' is not a whole number of bytes");
  // An all-to-all's every pair: 8,192 GPUs at the default sizes would take minutes.
  require_one_safe_line(run_simrun("collective --gpus 8192 --op all_to_all"),
                        "x 8192 GPUs squared (all_to_all: every pair of GPUs)");
}

TEST_CASE("slow-link and straggler-node flags bound their numbers under their own flag names",
          "[cli][errors]") {
  auto doc = good_scenario();
  doc["model"] = "llama3-8b";
  doc["cluster"]["num_gpus"] = 16;
  doc["layout"] = {{"tp", 8}, {"pp", 1}, {"dp", 2}};
  const std::string file = shell_quoted(write_file("slow16.json", doc.dump()));
  // 1e-300 of a NIC's bandwidth overflowed the event clock (internal error).
  require_one_safe_line(run_simrun("simulate " + file + " --slow-link 15:1e-300"),
                        "command line: --slow-link: fraction must be in [0.01, 1], got 1e-300");
  // Was reported as --straggler with the value printed through std::to_string (309 digits).
  require_one_safe_line(run_simrun("simulate " + file + " --straggler-node 0:1e308"),
                        "command line: --straggler-node: slowdown must be in [1, 100], got 1e308");
  // A rank or node given twice is refused, not the last one taken.
  require_one_safe_line(run_simrun("estimate " + file + " --straggler 0:2 --straggler 0:3"),
                        "command line: --straggler: rank 0 is given twice (\"0:2\" and \"0:3\")");
  require_one_safe_line(run_simrun("estimate " + file + " --straggler-node 0:1.2 --straggler-node 0:1.3"),
                        "command line: --straggler-node: node 0 is given twice");
  require_one_safe_line(run_simrun("simulate " + file + " --slow-link 3:0.5:nvlink"),
                        "command line: --slow-link: link must be nic or scale_up, got \"nvlink\"");
  require_one_safe_line(run_simrun("simulate " + file + " --slow-link 3:x:scale-up"), "got \"3:x:scale-up\"");
  const RunResult ok = run_simrun(
      "simulate " + file + " --straggler-node 1:1.5 --slow-link 3:0.5 --slow-link 4:0.5:scale-up --json");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("estimate paces a straggler's stage and slows the groups over a slow link", "[cli][errors]") {
  auto doc = good_scenario();
  doc["model"] = "llama3-8b";
  doc["cluster"]["num_gpus"] = 16;
  doc["layout"] = {{"tp", 8}, {"pp", 1}, {"dp", 2}};
  const std::string file = shell_quoted(write_file("straggler16.json", doc.dump()));
  const RunResult healthy = run_simrun("estimate " + file + " --json");
  const RunResult slowed = run_simrun("estimate " + file + " --straggler 3:1.5 --json");
  const RunResult node = run_simrun("estimate " + file + " --straggler-node 1:1.5 --json");
  INFO(healthy.err << slowed.err << node.err);
  REQUIRE(healthy.exit_code == 0);
  REQUIRE(slowed.exit_code == 0);
  REQUIRE(node.exit_code == 0);
  const double t0 = nlohmann::json::parse(healthy.out)["step_time_s"].get<double>();
  const double t1 = nlohmann::json::parse(slowed.out)["step_time_s"].get<double>();
  CHECK(t1 > 1.3 * t0);  // compute-bound: nearly the whole step is the slow GPU's kernels
  CHECK(t1 < 1.5 * t0 + 1e-9);
  CHECK(nlohmann::json::parse(node.out)["step_time_s"].get<double>() == Approx(t1));
  require_one_safe_line(run_simrun("estimate " + file + " --straggler 16:1.5"),
                        "command line: --straggler: rank 16 is outside the cluster (0..15)");
  require_one_safe_line(run_simrun("estimate " + file + " --slow-link 16:0.5"),
                        "command line: --slow-link: rank 16 is outside the cluster (0..15)");
  // TP inside the node, DP across: a slow scale-up port slows the TP collectives, a slow NIC the
  // DP traffic, and each within 5% of the event simulation's step, which names the link.
  for (const std::string link : {"scale_up", "scale-up", "nic"}) {
    const RunResult compared =
        run_simrun("simulate " + file + " --slow-link 3:0.25:" + link + " --compare-analytic --json");
    INFO(link << compared.err);
    REQUIRE(compared.exit_code == 0);
    const auto j = nlohmann::json::parse(compared.out);
    CHECK(j["analytic"]["step_time_s"].get<double>() > 1.05 * t0);
    CHECK(std::abs(j["analytic_difference"].get<double>()) < 0.05);
    CHECK(j["analytic"]["degraded"] == j["degraded"]);
    // simrun estimate on its own gives the comparison's column.
    const RunResult alone = run_simrun("estimate " + file + " --slow-link 3:0.25:" + link + " --json");
    INFO(alone.err);
    REQUIRE(alone.exit_code == 0);
    CHECK(nlohmann::json::parse(alone.out)["step_time_s"].get<double>() ==
          Approx(j["analytic"]["step_time_s"].get<double>()));
  }
}

TEST_CASE("simulate refuses step programs too large to simulate, in one line", "[cli][errors]") {
  // 2^24 sequences over dp 32: 524288 micro-batches x 82 layer passes hung for minutes.
  require_one_safe_line(
      run_simrun(std::string("simulate '") + SIMRUN_DATA_DIR +
                 "/examples/llama3-70b-h100.json' --global-batch 16777216"),
      "command line: --global-batch: 524288 micro-batches x 80 layers");  // the flag's value
  // Every rank of 1M GPUs.
  require_one_safe_line(run_simrun("simulate --model llama3-8b --gpu h100-sxm --gpus 1048576 --tp 8 --full"),
                        "command line: --full: simulating every one of 1048576 ranks");
}

TEST_CASE("simulate refuses communication-bound steps beyond the event clock's range", "[cli][errors]") {
  // Passes the parser's FLOP bound (seq_len 1), but ZeRO-3 gathers of a 2e14-parameter model over
  // a 64:1 HDR fabric take ~4e9 s per step; a 1% slow link overflowed the int64-ns clock (UB).
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "model": {"name": "p", "layers": 1, "hidden": 1000000, "heads": 1000, "ffn_hidden": 1,
              "vocab": 100000000, "seq_len": 1},
    "cluster": {"gpu": "h100-sxm", "num_gpus": 8, "gpus_per_node": 1,
                "fabric": {"kind": "ib-hdr", "nics_per_node": 1, "oversubscription": 64}},
    "layout": {"tp": 1, "pp": 1, "dp": 8, "zero_stage": 3, "micro_batch": 1, "global_batch": 1048576}})");
  const std::string file = shell_quoted(write_file("comm_bound.json", doc.dump()));
  require_one_safe_line(run_simrun("simulate " + file + " --slow-link 0:0.01"),
                        "layout: one step would take");
  require_one_safe_line(run_simrun("simulate " + file), "layout: one step would take");
  const RunResult analytic = run_simrun("estimate " + file + " --json");
  INFO(analytic.err);
  CHECK(analytic.exit_code == 0);
}

TEST_CASE("simulate runs a step with every GPU's NIC slowed: the range check takes the estimate's step",
          "[cli]") {
  // Each slow link's fraction used to divide the estimate again (from before the estimate
  // modelled slow links): 16 NICs at 5% put a 1.5 s step at 1e21 s and refused it.
  const std::string file = shell_quoted(write_file("all_nics_slow.json", R"({"model": "llama3-8b",
      "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
      "layout": {"tp": 8, "pp": 2, "dp": 1, "global_batch": 16}})"));
  std::string slow;
  for (int rank = 0; rank < 16; ++rank) slow += " --slow-link " + std::to_string(rank) + ":0.05:nic";
  const RunResult r = run_simrun("simulate " + file + " --full" + slow + " --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).at("step_time_s").get<double>() < 10.0);
}

TEST_CASE("a job that fails before a restart is over never finishes, and the report says so", "[cli]") {
  // 1 h per GPU over 1,024 GPUs: a failure every 3.5 s, within the 600 s restart (found by fuzzing:
  // the report said 3.6e73 days). The step time stands; the run's totals are left out.
  auto doc = good_scenario();
  doc["run"]["gpu_mtbf_hours"] = 1;
  doc["cluster"]["num_gpus"] = 1024;
  doc["layout"]["dp"] = 32;
  doc["layout"]["global_batch"] = 1024;
  const std::string file = shell_quoted(write_file("mtbf_short.json", doc.dump()));
  const std::string why =
      "the run never finishes: 1 h per GPU over 1024 GPUs is a failure every 3.52 s, within one 600 s "
      "restart";
  for (const std::string command : {"estimate", "simulate"}) {
    const RunResult table = run_simrun(command + " " + file);
    INFO(command << ": " << table.err);
    REQUIRE(table.exit_code == 0);
    CHECK(table.out.find("days                        never") != std::string::npos);
    CHECK(table.out.find(why) != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(run_simrun(command + " " + file + " --json").out);
    CHECK(j["step_time_s"].get<double>() > 0);
    CHECK(j["run"]["days"].is_null());
    CHECK(j["run"]["goodput"] == 0.0);
    // The CSV's cells are the JSON's values: empty where the JSON holds null, never "inf".
    const RunResult csv = run_simrun(command + " " + file + " --csv");
    CHECK(csv.out.find(",inf") == std::string::npos);
    // The cells by column, up to the first quoted one (the run's totals come before it).
    const auto cells = [](const std::string& line) {
      std::vector<std::string> out;
      std::string cell;
      for (const char c : line.substr(0, line.find('"'))) {
        if (c != ',') {
          cell += c;
          continue;
        }
        out.push_back(cell);
        cell.clear();
      }
      return out;
    };
    const size_t eol = csv.out.find('\n');
    const std::vector<std::string> header = cells(csv.out.substr(0, eol)), row = cells(csv.out.substr(eol + 1));
    for (const char* key : {"days", "gpu_hours", "cost_usd", "energy_kwh"}) {
      const auto at = std::find(header.begin(), header.end(), key);
      REQUIRE(at != header.end());
      REQUIRE(size_t(at - header.begin()) < row.size());
      CHECK(row[size_t(at - header.begin())].empty());
    }
    // A checkpoint interval under a minute is given in seconds, not "every 0 min".
    CHECK(table.out.find("min)") == std::string::npos);
    CHECK(table.out.find(" s)") != std::string::npos);
  }
  doc["run"]["gpu_mtbf_hours"] = 5000;  // a failure every 4.9 h: a finite run
  const nlohmann::json finite = nlohmann::json::parse(
      run_simrun("estimate " + shell_quoted(write_file("mtbf_5000.json", doc.dump())) + " --json").out);
  CHECK(finite["run"]["days"].get<double>() > 0);
  // A short run's GPU-hours in significant digits, as its cost (0.145 GPU-hours, $0.36), not "0".
  const RunResult one_token =
      run_simrun("estimate --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --global-batch 64 --tokens 1");
  CHECK(one_token.out.find("GPU-hours                   0\n") == std::string::npos);
  CHECK(one_token.out.find("GPU-hours                   0.1") != std::string::npos);
}

TEST_CASE("output that cannot be written is an error, not a silent success", "[cli][errors]") {
  const std::string example =
      shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-8b-fsdp-h100.json");
  if (fs::exists("/dev/full")) {
    // The trace is written before the report, so a failed trace leaves stdout empty.
    require_one_safe_line(run_simrun("simulate " + example + " --trace /dev/full"),
                          "--trace: could not write");
    const fs::path err = scratch_dir() / "stderr_full.txt";
    const int status = std::system((std::string("'") + SIMRUN_BINARY + "' simulate " + example +
                                    " --json >/dev/full 2>'" + err.string() + "'")
                                       .c_str());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 1));
    CHECK(read_text(err).find("could not write the output") != std::string::npos);
  }
  require_one_safe_line(run_simrun("simulate " + example + " --trace ''"), "--trace: an empty value");
  require_one_safe_line(run_simrun("estimate " + example + " --calibration ''"),
                        "--calibration: an empty value");
  if (fs::exists("/dev/full"))
    require_one_safe_line(run_simrun("topology --gpus 16 --dot /dev/full"), "--dot: could not write all");
}

TEST_CASE("an empty value is refused, never taken as the flag left out", "[cli][errors]") {
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --gpus '' --tp 2"),
                        "command line: --gpus: an empty value");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --tp="),
                        "command line: --tp: an empty value");
  require_one_safe_line(run_simrun("collective --algo ''"), "command line: --algo: an empty value");
  require_one_safe_line(run_simrun("''"), "command line: argument 1: an empty value");
}

TEST_CASE("a bad value from a flag names the flag, not the scenario file it replaces", "[cli][errors]") {
  const std::string example = shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json");
  require_one_safe_line(run_simrun("simulate " + example + " --tp 0"),
                        "command line: --tp: 0 is out of range");
  require_one_safe_line(run_simrun("simulate " + example + " --precision fp9"), "command line: --precision:");
  // A rule on the file's batch that the flags' sizes broke is the flags'.
  require_one_safe_line(run_simrun("simulate " + example + " --micro-batch 3"),
                        "command line: --micro-batch: 512 is not divisible by micro_batch*dp = 3*32 = 96 "
                        "(layout.global_batch from ");
  require_one_safe_line(run_simrun("simulate " + example + " --gpus-per-node 1 --tp 1 --pp 4 --dp 256"),
                        "command line: --dp, --tp, --pp: the interleaved schedule needs at least pp (4)");
  // An integer flag reads decimal digits whole: none saturates to 2^63 - 1, none reads as octal.
  require_one_safe_line(
      run_simrun("simulate " + example + " --tp 99999999999999999999"),
      "command line: --tp: 99999999999999999999 is out of range (beyond any 64-bit integer)");
  CHECK(run_simrun_json("estimate --model llama3-8b --gpu h100-sxm --gpus 016 --json")
            .at("inputs")
            .at("cluster")
            .at("num_gpus") == 16);
  // Nor as hexadecimal or binary (CLI11 would read 0x10 as 16 and refuse 0b10): refused alike.
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --gpus 0x10"),
                        "command line: --gpus: \"0x10\" is not a decimal number");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --gpus 16 --tp=0b10"),
                        "command line: --tp: \"0b10\" is not a decimal number");
  require_one_safe_line(run_simrun("collective -b 0x100"), "command line: -b: \"0x100\"");
  // Every way a number reaches a flag: a rate, a list's element, a leading blank (strtoll skips it
  // and reads " 010" as octal), a price, a slowdown; a file named like a number stays a file.
  const std::string llama = "estimate --model llama3-8b --gpu h100-sxm --gpus 16 ";
  require_one_safe_line(run_simrun(llama + "--tokens 0x1p40"), "command line: --tokens: \"0x1p40\"");
  require_one_safe_line(run_simrun(llama + "--tp ' 010'"), "command line: --tp: \" 010\" is not a decimal");
  require_one_safe_line(run_simrun("plan --model llama3-8b --gpu h100-sxm:2 --max-gpus 16 --tp 2,0x4"),
                        "command line: --tp: \"0x4\" is not a decimal");
  require_one_safe_line(run_simrun("plan --model llama3-8b --gpu h100-sxm:0x2 --max-gpus 16"),
                        "command line: --gpu: price \"0x2\"");
  require_one_safe_line(run_simrun(llama + "--straggler 0:0x2"), "command line: --straggler: expected");
  require_one_safe_line(run_simrun(llama + "--calibration 0x10"), "0x10: cannot open file");
  // A value the file gave stays the file's.
  auto doc = good_scenario();
  doc["layout"]["pp"] = 0;
  require_one_safe_line(
      run_simrun("estimate " + shell_quoted(write_file("pp0.json", doc.dump())) + " --tp 8"),
      "pp0.json: layout.pp");
}

TEST_CASE("CP with MLA runs in both fidelities, and Ulysses needs each rank's heads to divide by cp",
          "[cli][errors]") {
  const std::string layout = "--model deepseek-v3 --gpu h100-sxm --gpus 512 --tp 1 --pp 1 --cp 2 --ep 64";
  for (const std::string command : {"estimate", "simulate"}) {
    const RunResult r = run_simrun(command + " " + layout);
    INFO(command << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("latent") == std::string::npos);  // no warning about it
  }
  // 128 heads over tp 8: 16 per rank, which cp 32 does not divide.
  require_one_safe_line(run_simrun("simulate --model deepseek-v3 --gpu h100-sxm --gpus 256 --tp 8 --pp 1 "
                                   "--cp 32 --ep 8 --cp-comm-type a2a"),
                        "--cp-comm-type: a2a splits each rank's attention heads over cp 32: 16 query");
}

TEST_CASE("a2a+p2p takes its two levels from --hierarchical-cp-sizes, and a bad pair names the flag",
          "[cli]") {
  const std::string layout =
      "--model llama3-8b --gpu h100-sxm --gpus 16 --tp 2 --cp 8 --cp-comm-type a2a+p2p ";
  const RunResult ok = run_simrun("simulate " + layout + "--hierarchical-cp-sizes 2,4");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("cp 8 a2a+p2p") != std::string::npos);
  require_one_safe_line(run_simrun("simulate " + layout + "--hierarchical-cp-sizes 2,2"),
                        "command line: --hierarchical-cp-sizes: must be two positive integers");
  // Without a file the missing field is named by the flag that gives it.
  require_one_safe_line(run_simrun("simulate " + layout),
                        "command line: --hierarchical-cp-sizes: a2a+p2p needs it");
  require_one_safe_line(run_simrun("simulate " + layout + "--hierarchical-cp-sizes 2,x"),
                        "command line: --hierarchical-cp-sizes");
}

TEST_CASE("estimate and simulate take the fabric's NICs, shape and oversubscription from flags", "[cli]") {
  // ZeRO-3 over 128 nodes gathers and reduces over the NICs: fewer NICs or thinner uplinks slow it.
  const std::string example = std::string("'") + SIMRUN_DATA_DIR + "/examples/llama3-70b-h100.json' ";
  const std::string base = example + "--zero-stage 3 ";
  for (const std::string command : {"estimate", "simulate"}) {
    const double full = json_step_time(command + " " + base);
    CHECK(json_step_time(command + " " + base + "--nics-per-node 2") > full);
    // Fat tree at 8:1: each leaf's 8 DP rings share 4 uplinks (flows_per_uplink).
    CHECK(json_step_time(command + " " + base + "--oversubscription 8 --topology fat-tree") > 1.03 * full);
    // The run's inputs name what the flags set.
    const RunResult r = run_simrun(command + " " + base +
                                   "--nics-per-node 4 --topology fat_tree --oversubscription 2 --json");
    REQUIRE(r.exit_code == 0);
    const nlohmann::json fabric = nlohmann::json::parse(r.out)["inputs"]["cluster"]["fabric"];
    CHECK(fabric["nics_per_node"] == 4);
    CHECK(fabric["topology"] == "fat-tree");
    CHECK(fabric["oversubscription"] == 2.0);
  }
  require_one_safe_line(run_simrun("estimate " + example + "--nics-per-node 0"),
                        "command line: --nics-per-node: 0 is out of range");
  // The cluster graph's rules hold for every subcommand, not only where a graph is built.
  require_one_safe_line(run_simrun("estimate " + example + "--nics-per-node 3"),
                        "command line: --nics-per-node: 3 NICs cannot be shared evenly by 8 GPUs per node");
  require_one_safe_line(run_simrun("simulate " + example + "--topology torus"),
                        "command line: --topology: \"torus\" is not one of rail-optimized|fat-tree");
  require_one_safe_line(run_simrun("estimate " + example + "--oversubscription 0.5"),
                        "command line: --oversubscription: 0.5 is out of range");
}

TEST_CASE("a precision flag replaces the file's precision and the recipe written for it", "[cli]") {
  // The DeepSeek-V3 example trains in fp8 with the blockwise recipe; bf16 from the flag drops it,
  // a recipe given beside it is kept and checked.
  const std::string example = std::string("'") + SIMRUN_DATA_DIR + "/examples/deepseek-v3-2048-h800.json' ";
  CHECK(json_step_time("estimate " + example + "--precision bf16") > json_step_time("estimate " + example));
  require_one_safe_line(run_simrun("estimate " + example + "--precision bf16 --fp8-recipe delayed"),
                        "command line: --fp8-recipe: delayed scales fp8/fp4 GEMMs; precision bf16 runs none");
}

TEST_CASE("cluster flags are range-checked on one node too, where the fabric goes unused", "[cli][errors]") {
  require_one_safe_line(run_simrun("collective --nics-per-node 0"), "command line: --nics-per-node");
  require_one_safe_line(run_simrun("topology --oversubscription nan"), "command line: --oversubscription");
  // Without a file every value is a flag's or its default: the default GPU count is --gpus's.
  require_one_safe_line(run_simrun("collective --gpus-per-node 3"),
                        "command line: --gpus: 8 GPUs do not fill whole nodes of 3");
  // One reader for every command's cluster flags: the same value, the same line.
  for (const char* flags : {"--gpu h100-sxm --nics-per-node 0", "--gpu h100-sxm --oversubscription 0.5",
                            "--gpu h100-sxm --topology torus", "--gpu gb200 --gpus 6",
                            "--gpu h100-sxm --gpus 16 --nics-per-node 3", "--gpu h100-sxm --fabric ib-qdr"}) {
    INFO(flags);
    const RunResult collective = run_simrun(std::string("collective ") + flags);
    require_one_safe_line(collective, "command line: --");
    CHECK(run_simrun(std::string("topology ") + flags).err == collective.err);
    CHECK(run_simrun(std::string("estimate --model llama3-8b ") + flags).err == collective.err);
  }
  require_one_safe_line(run_simrun("textbook 1 --scenario /nonexistent"),
                        "command line: --scenario: only exercise 4");
}

TEST_CASE("estimate takes the framework flags simulate takes, and they move it the same way", "[cli]") {
  const std::string example = shell_quoted(fs::path(SIMRUN_DATA_DIR) / "examples" / "llama3-70b-h100.json");
  auto step = [&](const std::string& command, const std::string& flags) {
    return json_step_time(command + " " + example + " " + flags);
  };
  for (const std::string command : {"estimate", "simulate"}) {
    const double base = step(command, "");
    CHECK(step(command, "--tp-comm-overlap") < base);
    CHECK(step(command, "--kernels eager") > base);
    CHECK(step(command, "--schedule 1f1b") > base);  // the example interleaves 5 chunks
    // One schedule setting: --schedule is --pipeline-schedule (layout.pipeline_schedule).
    const double gpipe = step(command, "--pipeline-schedule gpipe");
    CHECK(step(command, "--schedule gpipe") == gpipe);
    CHECK(gpipe != base);  // one chunk per stage, not the example's 5
  }
  require_one_safe_line(run_simrun("simulate " + example +
                                   " --schedule dualpipe --pp 5 --virtual-stages 1 --tp 8 --dp 1 --gpus 40"),
                        "--pipeline-schedule: dualpipe needs an even number of pipeline stages, got pp 5");
}

TEST_CASE("simrun --version prints the CMake project version and exits 0", "[cli]") {
  const RunResult r = run_simrun("--version");
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("simrun ") + SIMRUN_VERSION + "\n");
  CHECK(r.err.empty());
}

TEST_CASE("every subcommand is listed in --help, and validate's bad input is one line, exit 2",
          "[cli][errors]") {
  const RunResult help = run_simrun("--help");
  CHECK(help.exit_code == 0);
  for (const char* name :
       {"simulate", "estimate", "collective", "topology", "textbook", "accuracy", "plan", "validate"})
    CHECK(help.out.find(std::string("  ") + name) != std::string::npos);
  require_one_safe_line(run_simrun("plan"), "command line: --model: missing");
  // Outside mpirun the input is read before MPI starts (exec/validate.hpp; the runs: tests/exec).
  require_one_safe_line(run_simrun("validate x.json --out dir"), "x.json: cannot open file");
  require_one_safe_line(run_simrun("--validate x.json"), "x.json: cannot open file");
  const std::string example =
      shell_quoted(std::filesystem::path(SIMRUN_DATA_DIR) / "examples" / "validate-small.json");
  // Here there is no GPU (or no CUDA Toolkit): one line saying which.
  require_one_safe_line(run_simrun("validate " + example + " --backend cuda"), "command line: --backend: ");
  require_one_safe_line(run_simrun("validate " + example + " --backend tpu"), "\"tpu\" is not a backend");
  require_one_safe_line(run_simrun("validate " + example + " --steps 0"),
                        "command line: --steps: must be 1 to 1000");
}

TEST_CASE("the scenario is positional everywhere, --scenario still read where it was", "[cli]") {
  const std::string file = shell_quoted(write_file("positional.json", good_scenario().dump()));
  const RunResult positional = run_simrun("collective " + file + " -b 1M -e 4M --json");
  const RunResult flag = run_simrun("collective --scenario " + file + " -b 1M -e 4M --json");
  REQUIRE(positional.exit_code == 0);
  CHECK(positional.out == flag.out);
  CHECK(nlohmann::json::parse(positional.out)["rows"].size() == 3);
  // The scenario's 64 GPUs, not the default 8: the cluster came from the file.
  CHECK(run_simrun("collective " + file + " -b 1M -e 1M").out.find("64 x h100-sxm") != std::string::npos);
  require_one_safe_line(run_simrun("collective " + file + " --scenario other.json"),
                        "command line: --scenario: given beside the scenario argument");
  const RunResult topology = run_simrun("topology " + file + " --json");
  REQUIRE(topology.exit_code == 0);
  CHECK(nlohmann::json::parse(topology.out)["gpus"] == 64);
  const RunResult textbook = run_simrun("textbook 4 " + file);
  const RunResult textbook_flag = run_simrun("textbook 4 --scenario " + file);
  REQUIRE(textbook.exit_code == 0);
  CHECK(textbook.out == textbook_flag.out);
  // The full-model line names the file's cluster and tokens, not the chapter's 1,024 H100 and 1.4T.
  CHECK(
      textbook.out.find("closed-form estimate of llama3-70b on 64 x h100-sxm, 1e+11 tokens at $4/GPU-hour") !=
      std::string::npos);
  CHECK(run_simrun("textbook " + file).out == run_simrun("textbook all " + file).out);
  require_one_safe_line(run_simrun("textbook 1 " + file), "command line: scenario: only exercise 4");
  for (const char* cmd : {"simulate", "estimate", "collective", "topology", "textbook"})
    CHECK(run_simrun(std::string(cmd) + " --help").out.find("scenario") != std::string::npos);
}

TEST_CASE("collective and topology print CSV: a header, one row per table row, SI units", "[cli]") {
  const RunResult csv = run_simrun("collective --gpus 16 -b 1M -e 16M --csv");
  REQUIRE(csv.exit_code == 0);
  const RunResult json = run_simrun("collective --gpus 16 -b 1M -e 16M --json");
  const auto rows = nlohmann::json::parse(json.out)["rows"];
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);
  // The inputs (cluster.*, sweep.*) lead; the table's columns follow.
  const std::string columns = "bytes,count,type,op,algo,proto,time_s,algbw_bytes_per_s,busbw_bytes_per_s";
  CHECK(line.rfind("cluster.gpu,", 0) == 0);
  REQUIRE(line.size() > columns.size());
  CHECK(line.substr(line.size() - columns.size() - 1) == "," + columns);
  const size_t inputs = size_t(std::count(line.begin(), line.end(), ',')) + 1 - 9;
  size_t n = 0;
  for (; std::getline(lines, line); ++n) {
    REQUIRE(n < rows.size());
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (line.back() == ',') cells.emplace_back();  // getline drops a last empty cell
    REQUIRE(cells.size() == inputs + 9);
    CHECK(std::stod(cells[inputs + 0]) == rows[n]["bytes"].get<double>());
    CHECK(cells[inputs + 3] == rows[n]["op"]);
    CHECK(std::stod(cells[inputs + 6]) == Approx(rows[n]["time_us"].get<double>() * 1e-6).epsilon(1e-5));
    CHECK(std::stod(cells[inputs + 8]) == Approx(rows[n]["busbw_GBps"].get<double>() * 1e9).epsilon(1e-5));
  }
  CHECK(n == rows.size());
  require_one_safe_line(run_simrun("collective --csv --json"), "command line");

  const RunResult topo = run_simrun("topology --gpus 64 --csv");
  REQUIRE(topo.exit_code == 0);
  CHECK(topo.out.rfind("quantity,value\n", 0) == 0);
  const auto summary = nlohmann::json::parse(run_simrun("topology --gpus 64 --json").out);
  CHECK(topo.out.find("\ngpus,64\n") != std::string::npos);
  CHECK(topo.out.find("\nbisection_bytes_per_s,") != std::string::npos);
  CHECK(topo.out.find("\nswitches_tier1,") != std::string::npos);
  // A row per input (cluster.*), per scalar key and per switch tier, after the header.
  const auto& inputs_of = summary["inputs"]["cluster"];
  const int input_rows = int(inputs_of.size() - 1 + inputs_of["fabric"].size());
  CHECK(count_lines(topo.out) ==
        input_rows + int(summary.size() - 2 + summary["switches_per_tier"].size()) + 1);
}

TEST_CASE("snake_case enum values, the older spellings still read, both giving the same report", "[cli]") {
  const std::string base = "estimate --model llama3-8b --gpu h100-sxm --json ";
  const auto same = [&](const std::string& canonical, const std::string& old) {
    const RunResult a = run_simrun(base + canonical);
    const RunResult b = run_simrun(base + old);
    INFO(canonical << ": " << a.err);
    REQUIRE(a.exit_code == 0);
    CHECK(a.out == b.out);
  };
  same("--gpus 8 --pp 2 --pipeline-split embedding_loss_layers",
       "--gpus 8 --pp 2 --pipeline-split embedding-loss-layers");
  same("--gpus 16 --tp 2 --cp 8 --cp-comm-type a2a_p2p --hierarchical-cp-sizes 2,4",
       "--gpus 16 --tp 2 --cp 8 --cp-comm-type a2a+p2p --hierarchical-cp-sizes 2,4");
  same("--gpus 8 --recompute selective --selective-recompute every_other_layer",
       "--gpus 8 --recompute selective --selective-recompute every-other-layer");
  // The scenario file reads both too.
  nlohmann::json doc = good_scenario();
  doc["layout"]["pipeline_split"] = "embedding_loss_layers";
  doc["layout"]["tp"] = 8;
  doc["layout"]["pp"] = 2;
  doc["layout"]["dp"] = 4;
  const RunResult snake = estimate_with("split_snake.json", doc);
  doc["layout"]["pipeline_split"] = "embedding-loss-layers";
  const RunResult hyphen = estimate_with("split_hyphen.json", doc);
  REQUIRE(snake.exit_code == 0);
  CHECK(snake.out == hyphen.out);
  CHECK(run_simrun("estimate --help").out.find("embedding_loss_layers") != std::string::npos);
  CHECK(run_simrun("collective --topology fat_tree --gpus 16 -b 1M -e 1M").out ==
        run_simrun("collective --topology fat-tree --gpus 16 -b 1M -e 1M").out);
}

TEST_CASE("a config.json path for --model reads a HuggingFace config, relative to the working directory",
          "[cli][hf]") {
  const fs::path hf = fs::path(SIMRUN_DATA_DIR) / "tests" / "data" / "hf";
  const fs::path dir = scratch_dir() / "hf-cwd";
  fs::create_directories(dir / "qwen");
  fs::copy_file(hf / "qwen2.5-7b.json", dir / "qwen" / "config.json", fs::copy_options::overwrite_existing);
  const std::string flags = " --gpu h100-sxm --gpus 8 --tp 4 --global-batch 8 --json";  // 28 heads;
  const RunResult r = run_simrun("estimate --model qwen/config.json" + flags, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Qwen2.5-7B model card: 7.61B (Q/K/V biases, untied embeddings).
  CHECK(nlohmann::json::parse(r.out)["model"]["params"].get<double>() == 7'615'616'512.0);

  // With a scenario file elsewhere, --model still starts at the working directory, and
  // --seq-len reaches the config's import.
  auto doc = good_scenario();
  doc["cluster"]["num_gpus"] = 8;
  doc["layout"] = {{"tp", 4}, {"pp", 1}, {"dp", 2}, {"global_batch", 8}};
  const fs::path scenario = write_file("hf_cwd_scenario.json", doc.dump());
  const RunResult over = run_simrun(
      "estimate " + shell_quoted(scenario) + " --model qwen/config.json --seq-len 2048 --json", dir);
  INFO(over.err);
  REQUIRE(over.exit_code == 0);
  CHECK(nlohmann::json::parse(over.out)["model"]["params"].get<double>() == 7'615'616'512.0);

  // A path that names no file: one line naming --model.
  require_one_safe_line(run_simrun("estimate --model qwen/missing.json" + flags, dir),
                        "command line: --model: cannot read");
}

TEST_CASE("\"model\": \"config.json\" in a scenario starts at the scenario's directory", "[cli][hf]") {
  const fs::path dir = scratch_dir() / "hf-scenario";
  fs::create_directories(dir);
  fs::copy_file(fs::path(SIMRUN_DATA_DIR) / "tests" / "data" / "hf" / "qwen3-8b.json", dir / "config.json",
                fs::copy_options::overwrite_existing);
  auto doc = good_scenario();
  doc["model"] = "config.json";
  doc["cluster"]["num_gpus"] = 8;
  doc["layout"] = {{"tp", 8}, {"pp", 1}, {"dp", 1}, {"global_batch", 8}};
  const fs::path scenario = dir / "scenario.json";
  std::ofstream(scenario) << doc.dump();
  const RunResult r = run_simrun("estimate " + shell_quoted(scenario) + " --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["model"]["params"].get<double>() == 8'190'735'360.0);  // Qwen3-8B: 8.19B
}

TEST_CASE("a Gemma-2 config: refused in one line at its 8192-token context, 9.24B within its window",
          "[cli][hf][errors]") {
  // Gemma-2's 4096-token sliding windows on alternate layers cannot be costed at 8192 tokens:
  // exit 2, one line naming the config file and its sliding_window field.
  const std::string config =
      shell_quoted(fs::path(SIMRUN_DATA_DIR) / "tests" / "data" / "hf" / "gemma-2-9b.json");
  const std::string flags = " --gpu h100-sxm --gpus 8 --tp 8 --global-batch 8 --json";
  const RunResult refused = run_simrun("estimate --model " + config + flags);
  require_one_safe_line(refused,
                        "gemma-2-9b.json: sliding_window: 4096-token sliding windows on 21 of 42 layers");
  // Within the window it is modelled: gated GELU (3 matrices), tied embeddings, 4 norms a layer.
  const RunResult r = run_simrun("estimate --model " + config + flags + " --seq-len 4096");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["model"]["params"].get<double>() == 9'241'705'984.0);  // 9.24B
}
