// `simrun plan` under mpirun (cli/plan_ranks.hpp, cli/plan_mpi.cpp): the ranks split the space and
// rank 0 prints the plan one process prints; bad input is one line from rank 0 and exit 2.
// Skipped, with a warning, in a build without MPI or where mpirun is not there.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"
#include "mpi_run.hpp"

using namespace simrun::test;
using nlohmann::json;

namespace {

// tests/cli/test_plan.cpp's chapter example (Llama-3 70B, 1.4T tokens, 1,024 H100 at $5/h), narrowed.
// The chapter's model and GPU over every size up to 1,024 GPUs: enough candidates for the bound to
// skip some (docs/planner.md "Bounds").
const std::string kChapterPlan =
    "plan --model llama3-70b --tokens 1.4e12 --gpu h100-sxm:5 --max-gpus 1024 "
    "--tp 2,4,8 --pp 1,2,4 --zero-stage 1,3 --recompute none,selective --micro-batch 1,2 --top-k 4 --threads "
    "1";

json plan_json(const RunResult& r) {
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);  // one document: the ranks other than 0 print nothing
}

}  // namespace

TEST_CASE("plan under mpirun: 1 and 4 ranks rank as one process does", "[cli][plan][mpi]") {
  if (const std::string why = why_no_mpi(); !why.empty()) {
    WARN(why);
    return;
  }
  const json alone = plan_json(run_simrun(kChapterPlan + " --json"));
  const json one = plan_json(run_ranks(1, kChapterPlan + " --json"));
  const json four = plan_json(run_ranks(4, kChapterPlan + " --json"));
  REQUIRE(!alone.at("ranked").empty());
  CHECK(one == alone);  // one rank is one process: the whole report, every count included
  for (const char* key : {"ranked", "pareto", "space_size", "simulated", "why"}) {
    INFO(key);
    CHECK(four.at(key) == alone.at(key));
  }
  // Each rank skips on the floors against what it holds itself, so four ranks estimate other
  // points than one does (and count them); what the layout rules and the memory model prune is
  // the same, and so is the rest of the report.
  for (const auto& [reason, n] : alone.at("pruned").items())
    if (reason != "outranked" && reason != "over_deadline" && reason != "over_budget")
      CHECK(four.at("pruned").value(reason, json(0)) == n);
  json a = alone, f = four;
  for (json* j : {&a, &f}) {
    j->erase("pruned");
    j->erase("evaluated");
  }
  CHECK(f == a);
}

TEST_CASE("plan under mpirun: the table says how many ranks searched", "[cli][plan][mpi]") {
  if (const std::string why = why_no_mpi(); !why.empty()) {
    WARN(why);
    return;
  }
  const RunResult r = run_ranks(4, kChapterPlan);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("4 ranks of 1 threads") != std::string::npos);
  CHECK(r.out.find("simrun plan — ") == r.out.rfind("simrun plan — "));  // one table
}

TEST_CASE("plan under mpirun: bad input is one line, from rank 0, and exit 2", "[cli][plan][mpi]") {
  if (const std::string why = why_no_mpi(); !why.empty()) {
    WARN(why);
    return;
  }
  require_one_safe_line(run_ranks(4, "plan --model llama3-8b --max-gpus 64 --gpu h100-sxm:abc"),
                        "is not a number");
  require_one_safe_line(run_ranks(4, "plan --model llama3-8b --max-gpus 64 --gpu h100-sxm:2.5 --tp x"),
                        "command line");
}

TEST_CASE("plan under mpirun: input one rank alone refuses stops every rank, rank 0 saying which",
          "[cli][plan][mpi]") {
  if (const std::string why = why_no_mpi(); !why.empty()) {
    WARN(why);
    return;
  }
  // As when a plan file or catalog differs on one node: rank 1 alone gets a bad objective. Before,
  // rank 1 left quietly and the others waited in the gather for ever.
  const auto wrapper =
      write_file("rank1-refuses.sh",
                 "#!/bin/sh\n"
                 "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then exec \"$@\" --objective nosuch; fi\n"
                 "exec \"$@\"\n");
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const RunResult r =
      run_ranks(3, "plan --model llama3-8b --gpu h100-sxm:2.5 --max-gpus 8 --tp 8 --top-k 1", wrapper);
  require_one_safe_line(r, "rank 1: command line: --objective");
}
