// End-to-end: reports fit for sweeps (issue 22, item 3). --json echoes the resolved inputs and
// writes byte counts as integers; --no-timing leaves out the wall-clock fields so two identical
// runs are byte-identical; --csv has one header, the inputs as leading columns and every number
// at full precision (it reads back to the JSON's value exactly); --compare-analytic --csv gives
// both rows; two runs differing in one flag share the header and differ in that input's column.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

using simrun::test::run_simrun;
using simrun::test::RunResult;

namespace {

const std::string kExample = std::string("'") + SIMRUN_DATA_DIR + "/examples/llama3-70b-h100.json'";

RunResult ok(const std::string& args) {
  RunResult r = run_simrun(args);
  INFO(args << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

// RFC 4180 cells of one line (quoted cells may hold commas and doubled quotes).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// A CSV document as a header and rows of cells, each row as long as the header.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // The cell of column `name` in row `row`.
  std::string at(size_t row, const std::string& name) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return rows.at(row).at(i);
    FAIL("no column " << name);
    return {};
  }
};

Csv parse_csv(const std::string& text) {
  Csv csv;
  std::istringstream lines(text);
  std::string line;
  REQUIRE(std::getline(lines, line));
  csv.header = csv_cells(line);
  while (std::getline(lines, line)) {
    csv.rows.push_back(csv_cells(line));
    CHECK(csv.rows.back().size() == csv.header.size());
  }
  return csv;
}

// The JSON value at a dotted path ("memory.peak_bytes_per_gpu").
const nlohmann::json& at_path(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* at = &j;
  size_t begin = 0;
  for (size_t dot = path.find('.');; dot = path.find('.', begin)) {
    at = &at->at(path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (dot == std::string::npos) return *at;
    begin = dot + 1;
  }
}

}  // namespace

TEST_CASE("estimate and simulate --json echo the resolved inputs of the 70B example", "[cli][sweep]") {
  for (const char* command : {"estimate", "simulate"}) {
    INFO(command);
    const auto j = nlohmann::json::parse(ok(std::string(command) + " " + kExample + " --json").out);
    REQUIRE(j.contains("inputs"));
    const auto& in = j["inputs"];
    // The catalog's llama3-70b shape (Meta's config.json).
    const auto& m = in["model"];
    CHECK(m["name"] == "llama3-70b");
    CHECK(m["layers"] == 80);
    CHECK(m["hidden"] == 8192);
    CHECK(m["heads"] == 64);
    CHECK(m["kv_heads"] == 8);
    CHECK(m["ffn_hidden"] == 28672);
    CHECK(m["vocab"] == 128256);
    CHECK(m["ffn_act"] == "swiglu");
    CHECK(m["seq_len"].is_number_integer());
    CHECK(m["moe"]["experts"] == 0);  // dense: the MoE fields are there, zero
    // The cluster, layout and run as the file states them.
    CHECK(in["cluster"]["gpu"] == "h100-sxm");
    CHECK(in["cluster"]["num_gpus"] == 1024);
    CHECK(in["cluster"]["gpus_per_node"] == 8);
    CHECK(in["cluster"]["fabric"]["kind"] == "ib-ndr");
    CHECK(in["cluster"]["fabric"]["nics_per_node"] == 8);
    CHECK(in["cluster"]["fabric"]["topology"] == "rail-optimized");
    CHECK(in["cluster"]["fabric"]["oversubscription"] == 1.0);
    const auto& l = in["layout"];
    CHECK(l["tp"] == 8);
    CHECK(l["pp"] == 4);
    CHECK(l["dp"] == 32);
    CHECK(l["cp"] == 1);
    CHECK(l["ep"] == 1);
    CHECK(l["virtual_stages"] == 5);
    CHECK(l["sequence_parallel"] == true);
    CHECK(l["zero_stage"] == 1);
    CHECK(l["micro_batch"] == 1);
    CHECK(l["global_batch"] == 512);
    CHECK(l["recompute"] == "selective");
    CHECK(l["precision"] == "bf16");
    CHECK(l["flash_attention"] == true);
    for (const char* key :
         {"cp_comm_type", "expert_tp", "moe_capacity_factor", "pipeline_split", "cp_a2a_level"})
      CHECK(l.contains(key));
    CHECK(in["framework"]["schedule"] == "interleaved-1f1b");  // virtual_stages 5
    CHECK(in["framework"]["kernels"] == "fused");
    CHECK(in["framework"]["tp_comm_overlap"] == "backward_async");
    CHECK(in["run"]["tokens"] == 1.4e12);
    CHECK(in["run"]["usd_per_gpu_hour"] == 5.0);
    CHECK(in["run"]["gpu_mtbf_hours"] == 50000.0);
    CHECK(in["run"]["checkpoint_interval_min"] == "auto");
    CHECK(in["calibration"].is_null());
  }
  // The framework flags show in what was applied.
  const auto j = nlohmann::json::parse(
      ok("estimate " + kExample + " --json --kernels eager --tp-comm-overlap --schedule 1f1b --tokens 2e12")
          .out);
  CHECK(j["inputs"]["framework"]["kernels"] == "eager");
  CHECK(j["inputs"]["framework"]["tp_comm_overlap"] == "full");
  CHECK(j["inputs"]["framework"]["schedule"] == "1f1b");
  CHECK(j["inputs"]["run"]["tokens"] == 2e12);
  // An MoE model carries its experts.
  const auto moe = nlohmann::json::parse(
      ok(std::string("estimate '") + SIMRUN_DATA_DIR + "/examples/mixtral-8x7b-h100.json' --json").out);
  CHECK(moe["inputs"]["model"]["moe"]["experts"] == 8);
  CHECK(moe["inputs"]["model"]["moe"]["top_k"] == 2);
}

TEST_CASE("byte counts in the JSON reports are integers", "[cli][sweep]") {
  const auto j = nlohmann::json::parse(ok("simulate " + kExample + " --json --compare-analytic").out);
  for (const auto* report : {&j, &j["analytic"]}) {
    for (const char* key : {"peak_bytes_per_gpu", "capacity_bytes", "weights", "grads", "optimizer",
                            "activations", "workspace"}) {
      INFO(key);
      CHECK((*report)["memory"][key].is_number_integer());
      CHECK((*report)["memory"][key].get<int64_t>() >= 0);
    }
  }
  CHECK(j["memory"]["peak_bytes_per_gpu"].get<int64_t>() > 10'000'000'000);  // tens of GB on a 70B stage
  REQUIRE(j["stages"].size() == 4);
  for (const auto& stage : j["stages"]) {
    CHECK(stage["peak_bytes_per_gpu"].is_number_integer());
    CHECK(stage["activations"].is_number_integer());
  }
  const auto c = nlohmann::json::parse(ok("collective --gpus 16 -b 1M -e 4M --json").out);
  for (const auto& row : c["rows"]) CHECK(row["bytes"].is_number_integer());
  CHECK(c["inputs"]["sweep"]["min_bytes"] == 1 << 20);
  CHECK(c["inputs"]["cluster"]["num_gpus"] == 16);
}

TEST_CASE("no-timing drops the wall-clock fields, and two identical runs are byte-identical",
          "[cli][sweep]") {
  const std::string simulate = "simulate " + kExample + " --compare-analytic";
  const auto timed = nlohmann::json::parse(ok(simulate + " --json").out);
  CHECK(timed["simulation"].contains("wall_s"));  // what --no-timing removes
  const RunResult a = ok(simulate + " --json --no-timing"), b = ok(simulate + " --json --no-timing");
  const auto j = nlohmann::json::parse(a.out);
  CHECK_FALSE(j["simulation"].contains("wall_s"));
  CHECK(j["simulation"]["events"].get<int64_t>() > 0);  // the rest of the simulation object stays
  CHECK(a.out == b.out);
  CHECK(ok(simulate + " --csv --no-timing").out == ok(simulate + " --csv --no-timing").out);
  CHECK(ok(simulate + " --csv --no-timing").out.find("wall_s") == std::string::npos);
  const RunResult table = ok(simulate + " --no-timing");
  CHECK(table.out.find(" s wall") == std::string::npos);
  CHECK(table.out == ok(simulate + " --no-timing").out);
  // estimate has no wall-clock field; it takes the flag so that one sweep script drives both.
  CHECK(ok("estimate " + kExample + " --json --no-timing").out == ok("estimate " + kExample + " --json").out);
  // collective --stats: events and flows stay, the build and simulation times go.
  const std::string collective = "collective --gpus 16 -b 1M -e 4M --stats";
  const auto stats = nlohmann::json::parse(ok(collective + " --json --no-timing").out)["stats"];
  CHECK(stats.contains("events"));
  for (const char* key : {"wall_s", "graph_build_s", "events_per_s"}) CHECK_FALSE(stats.contains(key));
  CHECK(ok(collective + " --json --no-timing").out == ok(collective + " --json --no-timing").out);
  CHECK(ok(collective + " --no-timing").out.find(" s, simulation") == std::string::npos);
}

TEST_CASE("CSV: one header, the inputs as leading columns, numbers that read back to the JSON's exactly",
          "[cli][sweep]") {
  for (const char* command : {"estimate", "simulate"}) {
    INFO(command);
    const std::string args = std::string(command) + " " + kExample + " --no-timing";
    const Csv csv = parse_csv(ok(args + " --csv").out);
    const auto j = nlohmann::json::parse(ok(args + " --json").out);
    REQUIRE(csv.rows.size() == 1);
    CHECK(csv.header.front() == "model.name");
    // Every input column, then the report's.
    std::set<std::string> columns(csv.header.begin(), csv.header.end());
    CHECK(columns.size() == csv.header.size());  // no column twice
    size_t inputs = 0;
    while (inputs < csv.header.size() && csv.header[inputs] != "fidelity") ++inputs;
    REQUIRE(inputs < csv.header.size());
    CHECK(inputs > 60);  // model shape, cluster, every layout field, framework, run
    for (size_t i = 0; i < inputs; ++i) {
      INFO(csv.header[i]);
      const nlohmann::json& value = at_path(j["inputs"], csv.header[i]);
      const std::string& cell = csv.rows[0][i];
      if (value.is_null())
        CHECK(cell.empty());
      else if (value.is_string())
        CHECK(cell == value.get<std::string>());
      else if (value.is_boolean())
        CHECK(cell == (value.get<bool>() ? "true" : "false"));
      else if (value.is_number_integer())
        CHECK(std::stoll(cell) == value.get<int64_t>());
      else
        CHECK(std::stod(cell) == value.get<double>());  // exact: shortest round-trip form
    }
    CHECK(csv.at(0, "layout.tp") == "8");
    CHECK(csv.at(0, "cluster.gpu") == "h100-sxm");
    // The report's numbers, exactly as in the JSON.
    const std::map<std::string, std::string> report_columns = {
        {"step_time_s", "step_time_s"},       {"mfu", "mfu"},
        {"tokens_per_s", "tokens_per_s"},     {"flops_per_step", "flops_per_step"},
        {"compute_s", "breakdown.compute_s"}, {"bubble_s", "breakdown.bubble_s"},
        {"cost_usd", "run.cost_usd"},         {"goodput", "run.goodput"}};
    for (const auto& [column, path] : report_columns) {
      INFO(column);
      CHECK(std::stod(csv.at(0, column)) == at_path(j, path).get<double>());
    }
    for (const char* bytes : {"peak_bytes_per_gpu", "capacity_bytes", "weights", "activations"}) {
      INFO(bytes);
      CHECK(std::stoll(csv.at(0, bytes)) == j["memory"][bytes].get<int64_t>());
    }
    CHECK(csv.at(0, "fidelity") == j["fidelity"]);
    CHECK(csv.at(0, "fits") == "true");
    // No number cut to 6 significant digits, as the CSV once did.
    CHECK(csv.at(0, "step_time_s").size() > 8);
  }
}

TEST_CASE("simulate --compare-analytic --csv gives the event and the analytic rows under one header",
          "[cli][sweep]") {
  const std::string args = "simulate " + kExample + " --compare-analytic --no-timing";
  const Csv csv = parse_csv(ok(args + " --csv").out);
  const auto j = nlohmann::json::parse(ok(args + " --json").out);
  REQUIRE(csv.rows.size() == 2);
  CHECK(csv.at(0, "fidelity") == "event");
  CHECK(csv.at(1, "fidelity") == "analytic");
  CHECK(std::stod(csv.at(0, "step_time_s")) == j["step_time_s"].get<double>());
  CHECK(std::stod(csv.at(1, "step_time_s")) == j["analytic"]["step_time_s"].get<double>());
  CHECK(csv.at(0, "simulation.events") == std::to_string(j["simulation"]["events"].get<int64_t>()));
  CHECK(csv.at(1, "simulation.events").empty());  // the estimate simulates nothing
  CHECK(csv.at(0, "layout.tp") == csv.at(1, "layout.tp"));
}

TEST_CASE("the CSVs of two runs differing in --tp share the header and differ in the tp column",
          "[cli][sweep]") {
  for (const char* command : {"estimate", "simulate"}) {
    INFO(command);
    const std::string base =
        std::string(command) +
        " --model llama3-8b --gpu h100-sxm --gpus 16 --global-batch 64 --csv --no-timing ";
    const Csv tp2 = parse_csv(ok(base + "--tp 2 --dp 8").out);
    const Csv tp4 = parse_csv(ok(base + "--tp 4 --dp 4").out);
    CHECK(tp2.header == tp4.header);
    REQUIRE(tp2.rows.size() == 1);
    REQUIRE(tp4.rows.size() == 1);
    CHECK(tp2.at(0, "layout.tp") == "2");
    CHECK(tp4.at(0, "layout.tp") == "4");
    // Among the inputs exactly the two flags given differ; the results move with them.
    std::set<std::string> differing;
    for (size_t i = 0; i < tp2.header.size() && tp2.header[i] != "fidelity"; ++i)
      if (tp2.rows[0][i] != tp4.rows[0][i]) differing.insert(tp2.header[i]);
    CHECK(differing == std::set<std::string>{"layout.tp", "layout.dp"});
    CHECK(tp2.at(0, "step_time_s") != tp4.at(0, "step_time_s"));
    // The same run twice: the same bytes.
    CHECK(ok(base + "--tp 2 --dp 8").out == ok(base + "--tp 2 --dp 8").out);
  }
}

TEST_CASE("collective and topology CSVs lead with the cluster's inputs, at full precision", "[cli][sweep]") {
  const std::string args = "collective --gpus 16 -b 1M -e 4M";
  const Csv csv = parse_csv(ok(args + " --csv").out);
  const auto j = nlohmann::json::parse(ok(args + " --json").out);
  REQUIRE(csv.rows.size() == j["rows"].size());
  CHECK(csv.header.front() == "cluster.gpu");
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    CHECK(csv.at(r, "cluster.num_gpus") == "16");
    CHECK(csv.at(r, "sweep.op") == "all_reduce");
    CHECK(std::stoll(csv.at(r, "bytes")) == j["rows"][r]["bytes"].get<int64_t>());
    // time_s and busbw are the JSON's µs and GB/s in SI units, every digit kept.
    CHECK(std::stod(csv.at(r, "time_s")) == j["rows"][r]["time_us"].get<double>() * 1e-6);
    CHECK(std::stod(csv.at(r, "busbw_bytes_per_s")) == j["rows"][r]["busbw_GBps"].get<double>() * 1e9);
  }
  const std::string topology = ok("topology --gpus 64 --csv").out;
  CHECK(topology.find("\ncluster.gpu,h100-sxm\n") != std::string::npos);
  CHECK(topology.find("\ncluster.num_gpus,64\n") != std::string::npos);
  const auto summary = nlohmann::json::parse(ok("topology --gpus 64 --json").out);
  CHECK(summary["inputs"]["cluster"]["num_gpus"] == 64);
  const auto line = topology.find("\nbisection_bytes_per_s,");
  REQUIRE(line != std::string::npos);
  const auto value = topology.substr(line + 23, topology.find('\n', line + 1) - line - 23);
  CHECK(std::stod(value) == summary["bisection_bytes_per_s"].get<double>());
}
