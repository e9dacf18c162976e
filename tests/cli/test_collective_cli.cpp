// End-to-end: `simrun collective` and `simrun topology` (nccl-tests columns, JSON rows, stats,
// DOT, one-line exit-2 errors).

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_run.hpp"

namespace {

namespace fs = std::filesystem;
using namespace simrun::test;

int count_lines(const std::string& s, bool data_only) {
  std::istringstream in(s);
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (!line.empty() && (!data_only || line[0] != '#')) ++n;
  return n;
}

}  // namespace

TEST_CASE("simrun collective prints the nccl-tests columns, one row per size", "[cli][collectives]") {
  const auto r = run_simrun("collective --op all_reduce --gpu h100-sxm --gpus 16 -b 8 -e 8G -f 2");
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const char* col : {"size", "count", "type", "redop", "root", "time", "algbw", "busbw"})
    CHECK(r.out.find(col) != std::string::npos);
  CHECK(count_lines(r.out, true) == 31);  // 8 B .. 8 GiB by 2
  CHECK(r.out.find("float") != std::string::npos);
}

TEST_CASE("simrun collective --json has the contract keys, --stats adds events/s", "[cli][collectives]") {
  const auto r = run_simrun("collective --op all_gather --gpus 8 -b 1M -e 1G -f 4 --json --stats");
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["rows"].size() == 6);
  for (const auto& row : doc["rows"])
    for (const char* k :
         {"bytes", "count", "type", "op", "algo", "proto", "time_us", "algbw_GBps", "busbw_GBps"})
      CHECK(row.contains(k));
  CHECK(doc["rows"][0]["op"] == "all_gather");
  CHECK(doc["stats"]["events"].get<double>() > 0);
  CHECK(doc["stats"].contains("events_per_s"));
  const auto t = run_simrun("collective --gpus 16 -b 1M -e 1M --stats");
  CHECK(t.out.find("events/s") != std::string::npos);
  // The echoed root is the table's (nccl-tests): broadcast's and reduce's, -1 for an all-reduce.
  for (const auto& [op, root] : {std::pair<std::string, int>{"all_reduce", -1}, {"broadcast", 5}}) {
    const auto j = nlohmann::json::parse(
        run_simrun("collective --op " + op + " --root 5 --gpus 8 -b 1M -e 1M --json --no-timing").out);
    CHECK(j["inputs"]["sweep"]["root"] == root);
  }
}

TEST_CASE("simrun collective runs every op and algorithm", "[cli][collectives]") {
  const char* runs[] = {
      "--op all_reduce --algo ring --proto ll",
      "--op all_reduce --algo Ring --proto LL128",
      "--op all_reduce --algo tree",
      "--op all_reduce --algo nvls --gpus 8",
      "--op all_reduce --algo NVLSTree",
      "--op all_reduce --algo hierarchical",
      "--op all_gather --algo ring",
      "--op all_gather --algo nvls --gpus 8",
      "--op reduce_scatter --algo pat --gpus 4 --gpus-per-node 1 --nics-per-node 1",
      "--op all_gather --algo PAT --gpus 4 --gpus-per-node 1 --nics-per-node 1",
      "--op broadcast --root 3",
      "--op reduce --proto simple",
      "--op alltoall",
      "--op sendrecv",
      "--op all_reduce --decomposition steps",
      "--op all_reduce --gpu mi300x",
      "--op all_reduce --gpu gb200 --gpus 144",
      "--op all_reduce --gpu a100-80gb --fabric ib-hdr --topology fat-tree --oversubscription 2 --gpus 64",
  };
  for (const char* extra : runs) {
    INFO(extra);
    const std::string gpus = std::string(extra).find("--gpus ") == std::string::npos ? "--gpus 16 " : "";
    const auto r = run_simrun("collective -b 1K -e 64M -f 64 " + gpus + extra);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(count_lines(r.out, true) == 3);
  }
}

TEST_CASE("simrun collective: bad input is one line on stderr and exit 2", "[cli][collectives]") {
  const char* bad[] = {"--gpu a100-80gb --algo nvls",
                       "--op scatter",
                       "--algo bogus",
                       "--proto fast",
                       "-b 0",
                       "-e 2048T",
                       "--gpus 12",
                       "--gpus 16 --gpus-per-node 16",
                       "--op all_gather --algo tree",
                       "--gpu h200x",
                       "-f 1",
                       "--gpus 16 --algo nvls",
                       "--op alltoall --gpus 16384",
                       "--root 99"};
  for (const char* args : bad) {
    INFO(args);
    const auto r = run_simrun(std::string("collective ") + args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(count_lines(r.err, false) == 1);
    CHECK(r.err.rfind("command line: ", 0) == 0);
  }
}

TEST_CASE("simrun topology prints counts and bisection and writes DOT for small clusters",
          "[cli][topology]") {
  const auto r = run_simrun("topology --gpu h100-sxm --gpus 2048");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("leaf switches") != std::string::npos);
  CHECK(r.out.find("bisection bandwidth") != std::string::npos);
  CHECK(r.out.find("per-GPU injection") != std::string::npos);
  const auto j = run_simrun("topology --gpu h100-sxm --gpus 16384 --json");
  REQUIRE(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["switches_per_tier"] == nlohmann::json::array({512, 512, 256}));  // DGX H100 SuperPOD RA
  const fs::path dot = scratch_dir() / "small.dot";
  const auto d = run_simrun("topology --gpus 16 --dot '" + dot.string() + "'");
  REQUIRE(d.exit_code == 0);
  CHECK(read_text(dot).rfind("graph cluster {", 0) == 0);
  // `--dot -` is stdout (as `--trace -`), the summary moves to stderr; no file named "-".
  const auto piped = run_simrun("topology --gpus 16 --dot - --json");
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.out.rfind("graph cluster {", 0) == 0);
  CHECK(nlohmann::json::parse(piped.err)["gpus"] == 16);
  CHECK_FALSE(fs::exists("-"));
  const auto big = run_simrun("topology --gpus 4096 --dot '" + (scratch_dir() / "big.dot").string() + "'");
  CHECK(big.exit_code == 2);
  CHECK(count_lines(big.err, false) == 1);
}

TEST_CASE("an NVL72 rack as one node takes one NIC per GPU by default", "[cli][collectives]") {
  const RunResult r =
      run_simrun("collective --op all_reduce --gpu gb200 --gpus 144 --gpus-per-node 72 -b 1G -e 1G --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["rows"].size() == 1);
  const RunResult over =
      run_simrun("collective --op all_reduce --gpu gb200 --gpus 144 --gpus-per-node 72 --nics-per-node 73");
  CHECK(over.exit_code == 2);
  CHECK(over.err.find("--nics-per-node") != std::string::npos);
}
