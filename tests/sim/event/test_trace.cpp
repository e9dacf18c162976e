// The Chrome trace of a simulated step validates as Trace Event JSON: metadata names every
// process and thread, complete events carry ts/dur in µs, events of one thread nest (Perfetto
// requires it), names say phase, layer, op and micro-batch.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/event/trace.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

// The simulated step's Chrome trace, parsed (and the simulation it came from).
nlohmann::json trace_of(const Scenario& sc, SimulationOutput* simulated = nullptr) {
  SimulateOptions o;
  o.step.record_trace = true;
  const SimulationOutput out = simulate(sc, o);
  std::ostringstream text;
  write_chrome_trace(text, sc, out.workload, out.step);
  if (simulated) *simulated = out;
  return nlohmann::json::parse(text.str());
}

}  // namespace

TEST_CASE("the simulated trace is valid Chrome trace JSON", "[sim][trace]") {
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
      "layout": {"tp": 2, "pp": 4, "dp": 2, "virtual_stages": 2, "global_batch": 16, "zero_stage": 1}})");
  SimulationOutput out;
  const nlohmann::json doc = trace_of(sc, &out);
  REQUIRE(doc.contains("traceEvents"));
  REQUIRE(doc["traceEvents"].is_array());

  std::set<int64_t> named_processes;
  std::set<std::pair<int64_t, int64_t>> named_threads;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> spans;
  size_t complete = 0;
  for (const auto& e : doc["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e["pid"].is_number_integer());
    REQUIRE(e["tid"].is_number_integer());
    const std::string ph = e["ph"];
    if (ph == "M") {
      if (e["name"] == "process_name" || e["name"] == "thread_name") REQUIRE(e["args"]["name"].is_string());
      if (e["name"] == "process_name") named_processes.insert(e["pid"].get<int64_t>());
      if (e["name"] == "thread_name")
        named_threads.insert({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()});
      continue;
    }
    REQUIRE(ph == "X");
    REQUIRE(e["name"].is_string());
    REQUIRE(e["ts"].is_number());
    REQUIRE(e["dur"].is_number());
    CHECK(e["dur"].get<double>() >= 0);
    const auto key = std::make_pair(e["pid"].get<int64_t>(), e["tid"].get<int64_t>());
    CHECK(named_processes.count(key.first) == 1);
    CHECK(named_threads.count(key) == 1);
    spans[key].emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    ++complete;
  }
  CHECK(named_processes.size() == 4);  // one representative per pipeline stage
  CHECK(complete == out.workload.task_count());
  // Events on one thread do not overlap (1 ns of rounding slack).
  for (auto& [key, v] : spans) {
    std::sort(v.begin(), v.end());
    INFO("pid " << key.first << " tid " << key.second);
    for (size_t i = 1; i < v.size(); ++i) CHECK(v[i].first >= v[i - 1].second - 1e-3);
  }
}

TEST_CASE("names with quotes, backslashes or control characters stay valid JSON in the trace",
          "[sim][trace]") {
  Scenario sc = parse_scenario_text(
      R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8}, "layout": {"tp": 8}})");
  sc.model.name = std::string("my \"8b\"\\v2\tfine-tuned\n\x01");
  CHECK(trace_of(sc)["otherData"]["model"] == sc.model.name);
}

TEST_CASE("trace event names say phase, layer, op and micro-batch", "[sim][trace]") {
  Task t;
  t.phase = Phase::forward;
  t.layer = 3;
  t.op = OpName::qkv;
  t.micro_batch = 2;
  CHECK(task_event_name(t) == "fwd L3 qkv mb2");
  t.phase = Phase::backward;
  t.op = OpName::tp_rs_attn;
  CHECK(task_event_name(t) == "bwd L3 tp_rs_attn mb2");
}
