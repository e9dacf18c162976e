// `simrun plan` end to end (cli/plan_command.cpp, sim/planner): the chapter's example planned and
// its best row simulated back, the report's keys (DESIGN.md "Plan report"), a plan file read as the
// flags are, the progress line on a terminal (through a pseudo-terminal) and not elsewhere, Ctrl-C,
// a space too large, an infeasible request (exit 3) and bad input (exit 2, one line).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "cli_run.hpp"

using namespace simrun::test;
using nlohmann::json;

namespace {

// The chapter's exercise (Llama-3 70B, 1.4T tokens, 1,024 H100 at $5/h), narrowed to the layouts
// its answer lies among so that the test stays quick.
const std::string kChapterPlan =
    "plan --model llama3-70b --tokens 1.4e12 --gpu h100-sxm:5 --min-gpus 1024 --max-gpus 1024 "
    "--tp 2,4,8 --pp 1,2,4 --zero-stage 1,3 --recompute none,selective --micro-batch 1,2 --top-k 4";

// The scenario file of a ranked row: what a user writes to simulate it.
json scenario_of(const json& row, const std::string& model, double tokens) {
  return {{"model", model},
          {"cluster", {{"gpu", row.at("gpu")}, {"num_gpus", row.at("num_gpus")}}},
          {"framework", row.at("framework")},
          {"layout", row.at("layout")},
          {"run", {{"tokens", tokens}, {"usd_per_gpu_hour", row.at("usd_per_gpu_hour")}}}};
}

}  // namespace

TEST_CASE("plan: the chapter's example, its best row simulated, gives the row's step time, days and cost") {
  const json plan = run_simrun_json(kChapterPlan + " --threads 2 --json");
  for (const char* key : {"ranked", "pareto", "pruned", "evaluated"}) CHECK(plan.contains(key));
  REQUIRE(!plan.at("ranked").empty());
  const json& best = plan.at("ranked").at(0);
  for (const char* key : {"gpu", "num_gpus", "layout", "step_time_s", "mfu", "peak_bytes_per_gpu", "days",
                          "gpu_hours", "cost_usd", "goodput"})
    CHECK(best.contains(key));
  CHECK(best.at("fidelity") == "event");
  CHECK(best.at("rank") == 1);
  CHECK(best.at("num_gpus") == 1024);
  CHECK(best.at("mfu").get<double>() > 0.3);
  CHECK(best.at("mfu").get<double>() < 0.7);
  // Ranked best first by the objective (dollars); ranks never go down.
  double previous = 0;
  int64_t previous_rank = 0;
  for (const json& row : plan.at("ranked")) {
    CHECK(row.at("cost_usd").get<double>() >= previous);
    CHECK(row.at("rank").get<int64_t>() >= previous_rank);
    previous = row.at("cost_usd").get<double>();
    previous_rank = row.at("rank").get<int64_t>();
  }
  const auto file = write_file("best-row.json", scenario_of(best, "llama3-70b", 1.4e12).dump());
  const json sim = run_simrun_json("simulate " + shell_quoted(file) + " --json");
  CHECK(sim.at("step_time_s").get<double>() == Approx(best.at("step_time_s").get<double>()).epsilon(1e-9));
  CHECK(sim.at("run").at("days").get<double>() == Approx(best.at("days").get<double>()).epsilon(1e-9));
  CHECK(sim.at("run").at("cost_usd").get<double>() ==
        Approx(best.at("cost_usd").get<double>()).epsilon(1e-9));
}

TEST_CASE("plan: a plan file holds the same as the flags, and the table, JSON and CSV carry the same rows") {
  const json flags = run_simrun_json(kChapterPlan + " --threads 2 --json");
  const json request = flags.at("request");
  const auto file = write_file("plan.json", request.dump());
  const json from_file = run_simrun_json("plan " + shell_quoted(file) + " --threads 1 --json");
  CHECK(from_file.at("ranked") == flags.at("ranked"));
  CHECK(from_file.at("pruned") == flags.at("pruned"));
  CHECK(from_file.at("request") == request);

  const RunResult csv = run_simrun(kChapterPlan + " --csv");
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.rfind("list,rank,gpu,num_gpus", 0) == 0);
  CHECK(csv.out.find("ranked,1,h100-sxm,1024") != std::string::npos);
  CHECK(csv.out.find("\npareto,") != std::string::npos);

  const RunResult table = run_simrun(kChapterPlan);
  REQUIRE(table.exit_code == 0);
  for (const char* part : {"ranked (ties within 5% share a rank)", "Pareto front", "pruned", "The winner"})
    CHECK(table.out.find(part) != std::string::npos);
  CHECK(table.err.empty());  // not a terminal: no progress line
}

TEST_CASE("plan: the threads split the space without changing the ranking") {
  const json one = run_simrun_json(kChapterPlan + " --json --threads 1");
  const json four = run_simrun_json(kChapterPlan + " --json --threads 4");
  CHECK(one.at("ranked") == four.at("ranked"));
  CHECK(one.at("pareto") == four.at("pareto"));
  CHECK(one.at("pruned") == four.at("pruned"));
}

TEST_CASE("plan: a deadline and a budget bound the rows, and objective time ranks by days") {
  const json plan = run_simrun_json(
      "plan --model llama3-8b --tokens 1e12 --gpu h100-sxm:2.5 --gpu a100-80gb:1.5 --max-gpus 256 "
      "--objective time "
      "--budget-usd 2e6 --deadline-days 60 --tp 1,2 --pp 1,2 --zero-stage 1 --recompute none --top-k 5 "
      "--json");
  REQUIRE(!plan.at("ranked").empty());
  double previous = 0;
  for (const json& row : plan.at("ranked")) {
    CHECK(row.at("cost_usd").get<double>() <= 2e6);
    CHECK(row.at("days").get<double>() <= 60);
    CHECK(row.at("days").get<double>() >= previous);
    previous = row.at("days").get<double>();
  }
  // Pareto: fewer days cost more dollars along the front.
  const json& front = plan.at("pareto");
  REQUIRE(!front.empty());
  for (size_t i = 1; i < front.size(); ++i) {
    CHECK(front[i].at("days").get<double>() >= front[i - 1].at("days").get<double>());
    CHECK(front[i].at("cost_usd").get<double>() < front[i - 1].at("cost_usd").get<double>());
  }
}

TEST_CASE("plan: nothing meets the deadline: exit 3, saying what comes closest and by how much") {
  const RunResult r = run_simrun(
      "plan --model llama3-70b --tokens 15e12 --gpu h100-sxm:2.5 --max-gpus 64 --deadline-days 10 --tp 8 "
      "--pp 1,2,4 "
      "--zero-stage 1 --recompute none,full");
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.out.empty());
  CHECK(r.err.find("deadline") != std::string::npos);
  CHECK(r.err.find("days") != std::string::npos);
  CHECK(r.err.find("over") != std::string::npos);
}

TEST_CASE("plan: steps too long for the event simulation: exit 3, saying what to change") {
  // One-token sequences: a 4M-token batch is 4M sequences, every point past 2^19 layer passes.
  const auto file = write_file("plan-seq1.json", R"({"model": {"name": "llama3-8b", "seq_len": 1},
      "gpus": [{"gpu": "h100-sxm", "usd_per_gpu_hour": 2}], "max_gpus": 16, "tokens": 1e10})");
  const RunResult r = run_simrun("plan " + shell_quoted(file));
  CHECK(r.exit_code == 3);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("beyond_event_simulation") != std::string::npos);
  CHECK(r.err.find("give fewer sequences a step") != std::string::npos);
}

TEST_CASE("plan: a space too large is refused before the search, with its size and what narrows it") {
  const RunResult r =
      run_simrun("plan --model llama3-70b --gpu h100-sxm:2.5 --max-gpus 1024 --max-points 10");
  require_one_safe_line(r, "narrow it");
  CHECK(r.err.find("--max-points") != std::string::npos);
}

TEST_CASE("plan: bad input is one line and exit 2") {
  const std::string base = "plan --model llama3-8b --max-gpus 64 ";
  require_one_safe_line(run_simrun("plan --model llama3-8b --max-gpus 64"), "no GPU type");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:abc"), "is not a number");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --deadline-days 0"), "--deadline-days");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --budget-usd 0"), "--budget-usd");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --objective fastest"), "unknown objective");
  require_one_safe_line(run_simrun("plan --model llama3-8b --gpu h100-sxm:2.5 --max-gpus 4"),
                        "below one node");
  require_one_safe_line(run_simrun(base + "--gpu h100-sx:2.5"), "h100-sxm");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm"), "no price");
  require_one_safe_line(run_simrun(base + "--gpu :2.5"), "--gpu: no GPU named (known: a100-40gb");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --framework nosuch"), "--framework");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --batch-tokens lots"), "--batch-tokens");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --recompute sometimes"), "sometimes");
  const auto not_object = write_file("plan-list.json", "[1, 2]");
  require_one_safe_line(run_simrun("plan " + shell_quoted(not_object)), "expected a JSON object");
  const auto unknown =
      write_file("plan-unknown.json",
                 R"({"model": "llama3-8b", "gpus": [{"gpu": "h100-sxm", "usd_per_gpu_hour": 2}],
                                      "max_gpus": 64, "deadline": 3})");
  require_one_safe_line(run_simrun("plan " + shell_quoted(unknown)), "deadline");
  const auto price =
      write_file("plan-price.json",
                 R"({"model": "llama3-8b", "gpus": [{"gpu": "h100-sxm", "usd_per_gpu_hour": "2$"}],
                                    "max_gpus": 64})");
  require_one_safe_line(run_simrun("plan " + shell_quoted(price)), "gpus[0].usd_per_gpu_hour");
  // A price table's file that is not there: named by the field (or flag) that names it.
  const auto no_table = write_file(
      "plan-no-table.json",
      R"({"model": "llama3-8b", "gpus": [{"gpu": "h100-sxm"}], "max_gpus": 64, "prices": "nofile.json"})");
  require_one_safe_line(run_simrun("plan " + shell_quoted(no_table)), "plan-no-table.json: prices: no file");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm --prices nofile.json"),
                        "command line: --prices: no file");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --threads 100000"), "--threads");
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --global-batch 20000000"), "--global-batch");
  // Both ways of giving the batch: refused, as in a plan file (the later one was kept, silently).
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --global-batch 64 --batch-tokens 4M"),
                        "--global-batch excludes --batch-tokens");
  // A batch no data-parallel size of the space divides: no point at all.
  require_one_safe_line(
      run_simrun("plan --model llama3-8b --gpu h100-sxm:2.5 --min-gpus 16 --max-gpus 16 --tp 1 "
                 "--pp 1 --cp 1 --global-batch 7"),
      "holds no point");
  // --explain explains a table row: refused with --json, and past the ranking before any output.
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --explain 1 --json"), "--explain");
  // Rows count from 1: row 0 is refused, not read as no --explain.
  require_one_safe_line(run_simrun(base + "--gpu h100-sxm:2.5 --explain 0"),
                        "command line: --explain: row 0 is not among the");
  const RunResult past = run_simrun(
      "plan --model llama3-8b --gpu h100-sxm:2.5 --min-gpus 16 --max-gpus 16 --tp 8 "
      "--pp 1 --cp 1 --zero-stage 1 --recompute none --micro-batch 1 --top-k 3 "
      "--explain 3");
  require_one_safe_line(past, "not in the ranking");
  CHECK(past.out.empty());
}

TEST_CASE("plan: batch tokens: K, M, G are binary and one value rounds to whole sequences") {
  const std::string base =
      "plan --model llama3-8b --gpu h100-sxm:2.5 --max-gpus 16 --tp 8 --pp 1 --cp 1 --zero-stage 1 "
      "--recompute none --top-k 2 --json ";
  // llama3-8b's sequences are 8,192 tokens: 4M = 4,194,304 = 512 sequences; 4e6 is 488.3 of them.
  for (const auto& [tokens, batch] : {std::pair{"4M", 512}, std::pair{"4e6", 488}}) {
    const json plan = run_simrun_json(base + "--batch-tokens " + tokens);
    REQUIRE(!plan.at("ranked").empty());
    for (const json& row : plan.at("ranked")) CHECK(row.at("layout").at("global_batch") == batch);
  }
}

TEST_CASE("plan: a batch range reaching past the event simulation keeps the batches it can re-run") {
  const json plan = run_simrun_json(
      "plan --model llama3-8b --tokens 1e12 --gpu h100-sxm:2.5 --max-gpus 8 --batch-tokens "
      "256M:4G --top-k 1 --json");
  // The winner sits at the event simulation's bound (15,420 micro-batches a replica), each re-run
  // of it seconds long: one row says as much as several.
  REQUIRE(plan.at("ranked").size() == 1);
  CHECK(plan.at("ranked").at(0).at("fidelity") == "event");
  // Kept below the range's top (4G tokens: 524,288 sequences), where the event could re-run it.
  CHECK(plan.at("ranked").at(0).at("layout").at("global_batch").get<int64_t>() < 524288);
  CHECK(plan.at("pruned").at("beyond_event_simulation").get<int64_t>() > 0);  // the range reached past it
}

TEST_CASE(
    "plan: the search prunes what the workload refuses (interleaving with fewer micro-batches than pp)") {
  const RunResult r = run_simrun(
      "plan --model llama3-8b --gpu h100-sxm:2.5 --max-gpus 8 --global-batch 2 --tp 2 "
      "--pp 4 --virtual-stages 2 --micro-batch 1");
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("interleaved_needs_pp_micro_batches") != std::string::npos);
  CHECK(r.err.find("event simulation dropped") == std::string::npos);  // pruned in the search, not after
}

TEST_CASE("plan: no point of the Pareto front beats the winner on both days and dollars") {
  // Llama-3 8B scales near perfectly from 8 to 16 H100: the estimate put 8 GPUs a hair cheaper,
  // and the event simulation of that one row (top-k 1) a hair dearer than the 16 GPUs' estimate,
  // which then beat the winner on both axes; such a point is re-run and ranked.
  const json plan =
      run_simrun_json("plan --model llama3-8b --gpu h100-sxm:3 --max-gpus 16 --top-k 1 --no-progress --json");
  const json& best = plan.at("ranked").at(0);
  for (const json& f : plan.at("pareto")) {
    INFO(f.dump());
    const bool no_later = f.at("days").get<double>() <= best.at("days").get<double>();
    const bool no_dearer = f.at("cost_usd").get<double>() <= best.at("cost_usd").get<double>();
    const bool strictly = f.at("days").get<double>() < best.at("days").get<double>() ||
                          f.at("cost_usd").get<double>() < best.at("cost_usd").get<double>();
    CHECK_FALSE((no_later && no_dearer && strictly));
  }
  CHECK(plan.at("simulated").get<int64_t>() >= 1);
}

TEST_CASE("plan: a batch flag replaces the plan file's other way of giving the batch") {
  const auto file = write_file("plan-batch.json", R"({"model": "llama3-8b", "gpus": ["h100-sxm"],
                                   "prices": {"h100-sxm": 2.5}, "max_gpus": 8, "global_batch": 64})");
  const json plan =
      run_simrun_json("plan " + shell_quoted(file) + " --batch-tokens 4M --tp 8 --top-k 1 --json");
  CHECK(!plan.at("request").contains("global_batch"));
  CHECK(plan.at("ranked").at(0).at("layout").at("global_batch") == 512);
}

TEST_CASE("plan: a dense model searches no expert TP: every row differs") {
  const json plan = run_simrun_json(
      "plan --model llama3-8b --gpu h100-sxm:2.5 --max-gpus 16 --expert-tp 1,2 --top-k 20 --json");
  REQUIRE(plan.at("ranked").size() == 20);
  std::set<std::string> rows;
  for (const json& row : plan.at("ranked")) {
    CHECK(row.at("layout").at("expert_tp") == 1);
    rows.insert(row.at("layout").dump() + row.at("gpu").dump() + row.at("num_gpus").dump() +
                row.at("framework").dump());
  }
  CHECK(rows.size() == 20);
  // Said, not only done: the axis given was not searched.
  REQUIRE(plan.at("warnings").size() == 1);
  CHECK_THAT(plan.at("warnings")[0].get<std::string>(), Catch::StartsWith("the model is dense"));
}

TEST_CASE("plan: with one replica the ZeRO stages are one point, searched once") {
  // TP 8 on 8 GPUs: dp 1, nothing to shard; z0, z1 and z3 filled the top-k with copies.
  const json plan = run_simrun_json(
      "plan --model llama3-8b --gpu h100-sxm:2.5 --min-gpus 8 --max-gpus 8 --tp 8 --pp 1,2 --cp 1 "
      "--top-k 50 --json");
  REQUIRE(!plan.at("ranked").empty());
  std::set<std::string> rows;
  for (const json& row : plan.at("ranked")) {
    json layout = row.at("layout");
    CHECK(layout.at("dp") == 1);
    CHECK(layout.at("zero_stage") == 0);
    rows.insert(layout.dump() + row.at("framework").dump());
  }
  CHECK(rows.size() == plan.at("ranked").size());
}

TEST_CASE("plan: rows beyond the event simulation are pruned before the estimate, not crashed on") {
  // 2^24 sequences per step (the scenario's most): every layout's micro-batches are beyond what the
  // event simulation handles, so nothing can be ranked: exit 3, saying why.
  const RunResult r = run_simrun(
      "plan --model llama3-8b --tokens 1e16 --gpu h100-sxm:2.5 --max-gpus 8 "
      "--batch-tokens 128G --top-k 2");
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("beyond_event_simulation") != std::string::npos);
}

// A search long enough to outlast the progress line's one-second delay.
const std::string kLongPlan =
    "plan --model llama3-405b --tokens 15e12 --gpu h100-sxm:2.5 --gpu b200:5.5 --gpu mi300x:2.2 --max-gpus "
    "16384 "
    "--threads 1 --top-k 20";

TEST_CASE("plan: on a terminal the progress line shows points, rate and ETA") {
  // script(1) runs the command on a pseudo-terminal; the plan is stopped once the line has shown.
  const auto log = scratch_dir() / "pty.txt";
  const std::string cmd = "timeout -s INT 4 script -qfec " +
                          shell_quoted(std::string(SIMRUN_BINARY) + " " + kLongPlan + " --json >/dev/null") +
                          " " + shell_quoted(log) + " >/dev/null 2>&1";
  std::system(cmd.c_str());
  const std::string seen = read_text(log);
  INFO(seen);
  CHECK(seen.find("simrun plan: ") != std::string::npos);
  CHECK(seen.find(" points, ") != std::string::npos);
  CHECK(seen.find("/s") != std::string::npos);
  CHECK(seen.find("ETA") != std::string::npos);
}

TEST_CASE("plan: Ctrl-C prints the best found so far and exits 130") {
  const auto out = scratch_dir() / "interrupted.json";
  const std::string cmd = std::string("exec ") + SIMRUN_BINARY + " " + kLongPlan + " --json >" +
                          shell_quoted(out) + " 2>/dev/null";
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  kill(child, SIGINT);
  // The same Ctrl-C delivered again at once, as timeout(1) sends it to the process and its group:
  // still the first, not the second that ends the process without a word.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(child, SIGINT);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const json j = json::parse(read_text(out));
  CHECK(j.at("interrupted") == true);
  CHECK(!j.at("ranked").empty());
}
