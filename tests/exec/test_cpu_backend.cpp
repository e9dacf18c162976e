// The cpu backend (exec/cpu_backend.hpp): each compute task's plan keeps its shape (a GEMM's
// dimensions, a memory-bound op's bytes), and every task of a stage program runs.
#include <catch2/catch.hpp>

#include "simrun/exec/cpu_backend.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::exec;

namespace {

Scenario small(const std::string& act, const std::string& layout) {
  return test::parse_scenario_text(R"({"model": {"name": "s", "layers": 2, "hidden": 128, "heads": 4,
    "kv_heads": 2, "ffn_hidden": 256, "ffn_act": ")" +
                                   act + R"(", "vocab": 512, "seq_len": 64},
    "framework": "simrun-cpu", "cluster": {"gpu": "cpu-host", "num_gpus": 4, "gpus_per_node": 4},
    "layout": )" + layout + "}");
}

}  // namespace

TEST_CASE("cpu backend: a plan keeps its task's shape", "[exec][backend]") {
  const Scenario sc = small("swiglu", R"({"tp": 2, "pp": 2, "global_batch": 4, "precision": "fp32"})");
  const Workload w = build_workload(sc);
  int gemms = 0, memory_ops = 0, attention = 0;
  for (const StageProgram& p : w.stages)
    for (const Task& t : p.tasks) {
      if (t.kind != TaskKind::compute) continue;
      const OpShape& s = p.shape(t);
      const KernelPlan plan = kernel_plan(sc, p, t);
      INFO(to_string(t.op) << " " << to_string(t.phase) << " " << to_string(plan.kind));
      if (s.cls == OpClass::gemm) {
        ++gemms;
        CHECK(plan.kind == KernelKind::gemm);
        CHECK(double(plan.m) == s.m);
        CHECK(double(plan.n) == s.n);
        CHECK(double(plan.k) == s.k);
      } else if (s.cls == OpClass::memory) {
        ++memory_ops;
        // The main tensor's elements times the kernel's bytes per element: the op's bytes, within
        // the rounding to whole rows.
        const double elements = double(plan.rows * plan.width);
        CHECK(elements > 0);
        CHECK(CpuBackend::plan_bytes(plan) > 0);
        if (plan.kind == KernelKind::stream) CHECK(elements * 12 == Approx(s.bytes).margin(12 * plan.width));
      } else if (s.cls == OpClass::attention_fwd || s.cls == OpClass::attention_bwd) {
        ++attention;
        CHECK(plan.attention.seq == 64);
        CHECK(plan.attention.head_dim == 32);
        CHECK(plan.attention.q_heads == 2);   // 4 heads over tp 2
        CHECK(plan.attention.kv_heads == 1);  // 2 K/V heads over tp 2: grouped-query attention kept
      }
    }
  CHECK(gemms > 0);
  CHECK(memory_ops > 0);
  CHECK(attention > 0);
}

TEST_CASE("cpu backend: the norm, activation, loss and optimizer ops run their reference kernels",
          "[exec][backend]") {
  const Scenario sc = small("gelu", R"({"tp": 1, "pp": 1, "dp": 4, "global_batch": 4, "precision": "fp32"})");
  const Workload w = build_workload(sc);
  std::set<KernelKind> kinds;
  const StageProgram& p = w.stages[0];
  for (const Task& t : p.tasks)
    if (t.kind == TaskKind::compute) kinds.insert(kernel_plan(sc, p, t).kind);
  for (KernelKind k : {KernelKind::gemm, KernelKind::attention_fwd, KernelKind::attention_bwd,
                       KernelKind::gelu_fwd, KernelKind::gelu_bwd, KernelKind::cross_entropy_fwd,
                       KernelKind::cross_entropy_bwd, KernelKind::adamw, KernelKind::stream}) {
    INFO(to_string(k));
    CHECK(kinds.count(k) == 1);
  }
  // The catalog model's norm: RMSNorm for a model object without "norm" (model_spec.hpp's default).
  CHECK((kinds.count(KernelKind::rmsnorm_fwd) == 1 || kinds.count(KernelKind::layernorm_fwd) == 1));
}

TEST_CASE("cpu backend: every compute task of every stage runs, in buffers the footprint counts",
          "[exec][backend]") {
  for (const char* act : {"swiglu", "gelu"}) {
    const Scenario sc = small(act, R"({"tp": 2, "pp": 2, "global_batch": 4, "precision": "fp32"})");
    const Workload w = build_workload(sc);
    for (const StageProgram& p : w.stages) {
      double largest = 0;
      for (const Task& t : p.tasks)
        if (t.kind == TaskKind::compute)
          largest = std::max(largest, CpuBackend::plan_bytes(kernel_plan(sc, p, t)));
      const double footprint = CpuBackend::footprint_bytes(sc, p);
      CHECK(footprint >= largest);
      CpuBackend backend(sc, p);
      for (uint32_t i = 0; i < p.tasks.size(); ++i)
        if (p.tasks[i].kind == TaskKind::compute) backend.run(i);
    }
  }
}
