// The Chrome trace of a simulated step validates as Trace Event JSON: metadata names every
// process and thread, complete events carry ts/dur in µs, events of one thread nest (Perfetto
// requires it), slices are named by op kind (a few dozen names on the 70B example), flows join
// each pipeline send to its recv on the next stage, the size cap leaves out the last
// micro-batches, and the rank selector reads "0,8,16", "stage:N", "dp:N".
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "simrun/common/error.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/event/trace.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

// The simulated step's Chrome trace, parsed (and the simulation it came from, what was written).
nlohmann::json trace_of(const Scenario& sc, SimulationOutput* simulated = nullptr,
                        TraceSummary* summary = nullptr, const TraceOptions& trace = TraceOptions{},
                        const StepSimOptions& step = StepSimOptions{}) {
  SimulateOptions o;
  o.step = step;
  o.step.record_trace = true;
  const SimulationOutput out = simulate(sc, o);
  std::ostringstream text;
  const TraceSummary written = write_chrome_trace(text, sc, out.workload, out.step, trace);
  CHECK(written.bytes == double(text.str().size()));
  if (simulated) *simulated = out;
  if (summary) *summary = written;
  return nlohmann::json::parse(text.str());
}

Scenario example(const std::string& name) {
  return load_scenario(std::filesystem::path(SIMRUN_DATA_DIR) / "examples" / name, ScenarioOverrides{},
                       catalogs());
}

// The slices of one (pid, tid) row.
struct Slice {
  double ts, end;
  std::string name;
};
using Rows = std::map<std::pair<int64_t, int64_t>, std::vector<Slice>>;

Rows rows_of(const nlohmann::json& doc) {
  Rows rows;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      rows[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].push_back(
          {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>(),
           e["name"].get<std::string>()});
  return rows;
}

// The slice of `rows` at (pid, tid) that encloses ts, or null.
const Slice* enclosing(const Rows& rows, const nlohmann::json& e) {
  const auto it = rows.find({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()});
  if (it == rows.end()) return nullptr;
  const double ts = e["ts"].get<double>();
  for (const Slice& s : it->second)
    if (s.ts <= ts && ts <= s.end) return &s;
  return nullptr;
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
    if (ph == "s" || ph == "f") continue;  // flows: their own test
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

TEST_CASE("DualPipe's receives in flight together get rows of their own: every row's slices nest",
          "[sim][trace]") {
  // DualPipe receives from both neighbours at once: on one row the receives overlapped partly,
  // which Chrome traces do not allow (Perfetto drew them wrong).
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
      "layout": {"tp": 1, "pp": 8, "dp": 2, "global_batch": 64, "zero_stage": 1,
                 "pipeline_schedule": "dualpipe"}})");
  const nlohmann::json doc = trace_of(sc);
  for (auto& [key, row] : rows_of(doc)) {
    std::sort(row.begin(), row.end(), [](const Slice& a, const Slice& b) { return a.ts < b.ts; });
    INFO("pid " << key.first << " tid " << key.second);
    for (size_t i = 1; i < row.size(); ++i) CHECK(row[i].ts >= row[i - 1].end - 1e-3);
  }
  std::set<std::string> names;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") names.insert(e["args"]["name"].get<std::string>());
  CHECK(names.count("stream 5 pp recv (2)") == 1);
}

TEST_CASE("names with quotes, backslashes or control characters stay valid JSON in the trace",
          "[sim][trace]") {
  Scenario sc = parse_scenario_text(
      R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8}, "layout": {"tp": 8}})");
  sc.model.name = std::string("my \"8b\"\\v2\tfine-tuned\n\x01");
  CHECK(trace_of(sc)["otherData"]["model"] == sc.model.name);
}

TEST_CASE("trace slices are named by op kind, their labels say phase, layer, op and micro-batch",
          "[sim][trace]") {
  Task t;
  t.phase = Phase::forward;
  t.layer = 3;
  t.op = OpName::qkv;
  t.micro_batch = 2;
  CHECK(task_slice_name(t) == "qkv fwd");
  CHECK(task_event_name(t) == "fwd L3 qkv mb2");
  t.phase = Phase::backward;
  t.op = OpName::fc2;
  CHECK(task_slice_name(t) == "fc2 bwd");
  t.kind = TaskKind::collective;
  t.op = OpName::tp_rs_attn;
  t.coll = CollectiveOp::reduce_scatter;
  t.group = GroupKind::tp;
  CHECK(task_slice_name(t) == "reduce_scatter tp");
  CHECK(task_event_name(t) == "bwd L3 tp_rs_attn mb2");
  t.coll = CollectiveOp::all_reduce;
  CHECK(task_slice_name(t) == "all_reduce tp");
  t.kind = TaskKind::send;
  t.op = OpName::pp_act;
  CHECK(task_slice_name(t) == "send pp_act");
  t.kind = TaskKind::recv;
  CHECK(task_slice_name(t) == "recv pp_act");
  t.kind = TaskKind::compute;
  t.phase = Phase::optimizer;
  t.op = OpName::optimizer;
  CHECK(task_slice_name(t) == "optimizer");
}

// Issue 22: the 70B example's trace aggregates by name in Perfetto (a few dozen names, not one
// per layer and micro-batch), and every pipeline send flows to its recv on the neighbouring stage.
TEST_CASE("the 70B example's trace has a few dozen slice names and flows between stages", "[sim][trace]") {
  const Scenario sc = example("llama3-70b-h100.json");
  const RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
  SimulationOutput out;
  TraceSummary summary;
  const nlohmann::json doc = trace_of(sc, &out, &summary);
  CHECK_FALSE(summary.truncated());
  CHECK(summary.bytes < kTraceDefaultMaxBytes);

  std::set<std::string> names;
  std::map<int64_t, nlohmann::json> starts, finishes;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") names.insert(e["name"].get<std::string>());
    if (e["ph"] == "s") CHECK(starts.emplace(e["id"].get<int64_t>(), e).second);
    if (e["ph"] == "f") {
      CHECK(e["bp"] == "e");
      CHECK(finishes.emplace(e["id"].get<int64_t>(), e).second);
    }
  }
  INFO(names.size() << " names");
  CHECK(names.size() >= 20);
  CHECK(names.size() <= 60);
  CHECK(summary.distinct_names == int64_t(names.size()));
  for (const char* n :
       {"fc2 bwd", "attn_core fwd", "all_reduce tp", "reduce_scatter dp", "send pp_act", "recv pp_grad"})
    CHECK(names.count(n) == 1);

  // One flow per pipeline message: every send of every stage has a traced peer by default.
  size_t sends = 0;
  for (const StageProgram& p : out.workload.stages)
    for (const Task& t : p.tasks) sends += t.kind == TaskKind::send;
  CHECK(sends > 0);
  CHECK(starts.size() == sends);
  CHECK(summary.flows == int64_t(sends));
  REQUIRE(finishes.size() == starts.size());
  const Rows rows = rows_of(doc);
  for (const auto& [id, s] : starts) {
    const nlohmann::json& f = finishes.at(id);
    INFO("flow " << id);
    CHECK(s["name"] == f["name"]);
    const int64_t from = layout.coord_of(s["pid"].get<int64_t>()).pp;
    const int64_t to = layout.coord_of(f["pid"].get<int64_t>()).pp;
    // Neighbouring stages; with virtual stages the last sends on to the first.
    CHECK((to == (from + 1) % layout.pp() || from == (to + 1) % layout.pp()));
    // Each end lies inside its slice: the send on the sender, the recv on the receiver.
    const Slice* send = enclosing(rows, s);
    const Slice* recv = enclosing(rows, f);
    REQUIRE(send);
    REQUIRE(recv);
    CHECK(send->name == "send " + s["name"].get<std::string>());
    CHECK(recv->name == "recv " + f["name"].get<std::string>());
  }
}

TEST_CASE("a trace over its size cap leaves out the last micro-batches and says so", "[sim][trace]") {
  const Scenario sc = example("llama3-70b-h100.json");
  SimulationOutput out;
  TraceSummary whole;
  trace_of(sc, &out, &whole);
  REQUIRE_FALSE(whole.truncated());
  CHECK(whole.full_bytes == whole.bytes);

  TraceOptions capped;
  capped.max_bytes = whole.bytes / 3;
  TraceSummary cut;
  const nlohmann::json doc = trace_of(sc, nullptr, &cut, capped);
  CHECK(cut.truncated());
  CHECK(cut.bytes <= capped.max_bytes);
  CHECK(cut.full_bytes == Approx(whole.bytes).epsilon(1e-9));
  CHECK(cut.ranks_kept == cut.ranks);  // micro-batches go first
  CHECK(cut.micro_batches_kept >= 1);
  CHECK(cut.micro_batches_kept < cut.micro_batches);
  std::set<int64_t> micro_batches;
  bool optimizer = false;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X") {
      micro_batches.insert(e["args"]["microbatch"].get<int64_t>());
      optimizer = optimizer || e["name"] == "optimizer";
    }
  CHECK(optimizer);  // per-step ops stay
  CHECK(*micro_batches.rbegin() == cut.micro_batches_kept - 1);

  // A cap below one micro-batch of every rank keeps fewer ranks, at least one.
  capped.max_bytes = 1;
  trace_of(sc, nullptr, &cut, capped);
  CHECK(cut.micro_batches_kept == 1);
  CHECK(cut.ranks_kept == 1);
  capped.max_bytes = 0;  // no cap
  trace_of(sc, nullptr, &cut, capped);
  CHECK_FALSE(cut.truncated());
}

TEST_CASE("trace ranks: the selected ranks' spans only, the report unchanged", "[sim][trace]") {
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
      "layout": {"tp": 2, "pp": 2, "dp": 4, "global_batch": 16}})");
  const RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
  StepSimOptions step;
  step.scope = SimulationScope::full;
  SimulationOutput all, some;
  trace_of(sc, &all, nullptr, TraceOptions{}, step);
  step.trace_ranks = select_trace_ranks("dp:1", layout);
  CHECK(step.trace_ranks == std::vector<int64_t>{2, 3, 10, 11});
  TraceSummary summary;
  const nlohmann::json doc = trace_of(sc, &some, &summary, TraceOptions{}, step);
  std::set<int64_t> pids;
  for (const auto& e : doc["traceEvents"]) pids.insert(e["pid"].get<int64_t>());
  CHECK(pids == std::set<int64_t>{2, 3, 10, 11});
  CHECK(summary.flows > 0);  // 2 → 10 and 3 → 11
  CHECK(some.report.step_time_s == all.report.step_time_s);
  REQUIRE(some.stages.size() == all.stages.size());
  for (size_t i = 0; i < some.stages.size(); ++i) CHECK(some.stages[i].time.rank == all.stages[i].time.rank);

  // With representatives only, a rank that is not simulated is refused.
  step.scope = SimulationScope::representatives;
  SimulateOptions o;
  o.step = step;
  o.step.record_trace = true;
  try {
    simulate(sc, o);
    FAIL("a rank that is not simulated was traced");
  } catch (const InputError& e) {
    CHECK(e.file() == "step");
    CHECK(e.field() == "trace_ranks[0]");
    CHECK_THAT(e.why(), Catch::Contains("rank 2 is not simulated"));
  }
}

TEST_CASE("the trace rank selector reads ranks, stage:N and dp:N, and refuses the rest", "[sim][trace]") {
  Layout l;
  l.tp = 2;
  l.pp = 2;
  l.dp = 4;
  const RankLayout layout(l, 8);
  CHECK(select_trace_ranks("0,8,5,8", layout) == std::vector<int64_t>{0, 8, 5});
  CHECK(select_trace_ranks("stage:1", layout) == std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(select_trace_ranks("dp:3", layout) == std::vector<int64_t>{6, 7, 14, 15});
  for (const char* bad : {"16", "-1", "stage:2", "dp:4", "1,,2", "1,", "foo", "node:1", "stage:", "3x"}) {
    INFO(bad);
    try {
      select_trace_ranks(bad, layout);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.file() == "step");
      CHECK(e.field() == "trace_ranks");
    }
  }
}

TEST_CASE("a goodput under 80% warns in both fidelities", "[sim][step]") {
  // Llama 3 405B on 65,536 GB200: a GPU failure every 0.76 h of the job at 50,000 h per GPU.
  const Scenario sc = parse_scenario_text(
      R"({"model": "llama3-405b", "cluster": {"gpu": "gb200", "num_gpus": 65536},
          "layout": {"tp": 8, "pp": 16, "virtual_stages": 2, "pipeline_split": "embedding-loss-layers",
                     "global_batch": 8192, "recompute": "full"}})");
  const Report analytic = estimate(sc);
  const Report event = simulate(sc).report;
  REQUIRE(analytic.run.goodput < 0.8);
  for (const Report* r : {&analytic, &event}) {
    const auto warned = std::count_if(r->warnings.begin(), r->warnings.end(), [](const std::string& w) {
      return w.rfind("goodput 0.", 0) == 0 &&
             w.find("failures and checkpoints cost more than 20%") != std::string::npos;
    });
    CHECK(warned == 1);
  }
}

TEST_CASE("energy: both fidelities power the GPUs for the mean of the stages' compute, not one stage's",
          "[sim][step]") {
  // DeepSeek-V3's first stage holds the three dense layers and computes 11.8 s of a 17.0 s step,
  // the others about 14.6 s: the event took stage 0's busy share and the estimate the slowest
  // stage's, so the estimate's shorter run drew more energy than the event's longer one.
  const Scenario sc = example("deepseek-v3-2048-h800.json");
  const Report event = simulate(sc, framework_simulate_options(sc)).report;
  const Report analytic = estimate(sc, framework_options(sc));
  const double event_kw = event.run.energy_kwh / event.run.gpu_hours;
  const double analytic_kw = analytic.run.energy_kwh / analytic.run.gpu_hours;
  CHECK(analytic_kw == Approx(event_kw).epsilon(0.02));
  CHECK(event.run.energy_kwh / analytic.run.energy_kwh ==
        Approx(event.run.gpu_hours / analytic.run.gpu_hours).epsilon(0.02));

  // A straggler is one GPU of its stage, not a stage of its own: 1 GPU of 64 at half speed
  // stretches everyone's step, so the mean GPU computes a smaller share of it.
  const Scenario dense =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 64},
      "layout": {"tp": 1, "pp": 1, "dp": 64, "global_batch": 64}})");
  SimulateOptions slow = framework_simulate_options(dense);
  slow.step.scope = SimulationScope::full;
  slow.workload.grad_reduce_bytes = 2;  // bf16 gradients: a short DP tail, as the formula below assumes
  const Report even = simulate(dense, slow).report;
  slow.step.stragglers = {Straggler{5, 2.0}};
  const Report uneven = simulate(dense, slow).report;
  REQUIRE(uneven.step_time_s > 1.5 * even.step_time_s);
  // Board power TDP·(0.15 + 0.85·busy) (RunDefaults::idle_power_fraction): back to busy.
  const double tdp_kw = dense.cluster.gpu.tdp_w / 1e3;
  auto busy = [&](const Report& r) { return (r.run.energy_kwh / r.run.gpu_hours / tdp_kw - 0.15) / 0.85; };
  // 63 GPUs at the even pace and one at twice its compute, over the longer step.
  CHECK(busy(uneven) ==
        Approx(busy(even) * 65.0 / 64.0 * even.step_time_s / uneven.step_time_s).epsilon(0.01));
}
