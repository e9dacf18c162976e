// The comparison (exec/comparison.hpp): ops grouped by slice name and shape over every rank,
// per-call means, errors against the measurement, the largest measured time first.
#include <catch2/catch.hpp>

#include "simrun/exec/comparison.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::exec;

TEST_CASE("comparison: ops grouped by name and shape, per call, largest first", "[exec][comparison]") {
  const Scenario sc = test::parse_scenario_text(R"({"model": {"name": "s", "layers": 2, "hidden": 128,
    "heads": 4, "ffn_hidden": 256, "vocab": 512, "seq_len": 64}, "framework": "simrun-cpu",
    "cluster": {"gpu": "cpu-host", "num_gpus": 2, "gpus_per_node": 2},
    "layout": {"tp": 2, "global_batch": 2, "precision": "fp32"}})");
  const Workload w = build_workload(sc);
  const StageProgram& p = w.stages[0];
  const std::vector<int64_t> stage_of = {0, 0};
  const std::vector<int64_t> group_sizes(kGroupKindCount, 2);
  TaskSeconds predicted(2), measured(2), calibrated(2);
  for (int r = 0; r < 2; ++r) {
    predicted[size_t(r)].assign(p.tasks.size(), 1e-3);
    measured[size_t(r)].assign(p.tasks.size(), 2e-3);
    calibrated[size_t(r)].assign(p.tasks.size(), 2.2e-3);
  }
  // One GEMM task measured 10x longer on rank 1: its row holds the mean of its calls.
  uint32_t first_gemm = 0;
  while (p.tasks[first_gemm].kind != TaskKind::compute || p.shape(p.tasks[first_gemm]).cls != OpClass::gemm)
    ++first_gemm;
  measured[1][first_gemm] = 20e-3;

  const Comparison c = compare_ops(w, stage_of, group_sizes, predicted, measured, calibrated);
  REQUIRE_FALSE(c.ops.empty());
  int64_t calls = 0;
  for (const ComparisonRow& row : c.ops) {
    calls += row.calls;
    CHECK(row.predicted_s == Approx(1e-3));
    CHECK(row.calibrated_s == Approx(2.2e-3));
  }
  int64_t non_recv = 0;
  for (const Task& t : p.tasks) non_recv += t.kind != TaskKind::recv;
  CHECK(calls == 2 * non_recv);
  for (size_t i = 1; i < c.ops.size(); ++i)
    CHECK(c.ops[i - 1].measured_s * double(c.ops[i - 1].calls) >=
          c.ops[i].measured_s * double(c.ops[i].calls));
  const std::string shape = shape_label(p, p.tasks[first_gemm], 2);
  CHECK_THAT(shape, Catch::StartsWith("gemm "));
  const auto row =
      std::find_if(c.ops.begin(), c.ops.end(), [&](const ComparisonRow& r) { return r.shape == shape; });
  REQUIRE(row != c.ops.end());
  CHECK(row->measured_s > 2e-3);
  const nlohmann::json j = comparison_json(c);
  CHECK(j["step"].contains("predicted_s"));
  CHECK(j["ops"][0].contains("error"));
}
