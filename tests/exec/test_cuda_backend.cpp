// The cuda backend's host-side rules (exec/src/cuda_backend.hpp), tested where no GPU is: the GEMM
// precision it runs for a scenario and a compute capability, the head_dim its attention refuses,
// and the device bytes it will ask for before any work starts.
#include <catch2/catch.hpp>

#include "cuda_backend.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::exec;

namespace {

Scenario scenario(int64_t head_dim, const std::string& precision, int64_t layers = 2) {
  return test::parse_scenario_text(R"({"model": {"name": "s", "layers": )" + std::to_string(layers) +
                                   R"(, "hidden": 512, "heads": 4, "kv_heads": 2, "head_dim": )" +
                                   std::to_string(head_dim) + R"(, "ffn_hidden": 1024, "ffn_act": "swiglu",
    "vocab": 1024, "seq_len": 256},
    "cluster": {"gpu": "h100-sxm", "num_gpus": 1, "gpus_per_node": 1},
    "layout": {"global_batch": 2, "precision": ")" +
                                   precision + R"("}})");
}

}  // namespace

TEST_CASE("cuda backend: the GEMM precision follows the scenario and the GPU", "[exec][cuda]") {
  CHECK(cuda_gemm_precision(scenario(128, "bf16"), 9, 0) == GemmPrecision::bf16);
  CHECK(cuda_gemm_precision(scenario(128, "fp8"), 9, 0) == GemmPrecision::fp8);
  CHECK(cuda_gemm_precision(scenario(128, "fp8"), 8, 0) == GemmPrecision::bf16);  // A100: no fp8
  // A shape fp8 cannot take (a leading dimension not 16 bytes) runs in bf16, as Transformer Engine's
  // fp8 GEMMs need.
  CHECK(gemm_precision_for(GemmPrecision::fp8, 4096, 8192, 2048) == GemmPrecision::fp8);
  CHECK(gemm_precision_for(GemmPrecision::fp8, 4096, 8192, 2040) == GemmPrecision::bf16);
  CHECK(gemm_precision_for(GemmPrecision::fp8, 4096, 50257, 2048) == GemmPrecision::bf16);
  CHECK(gemm_precision_for(GemmPrecision::bf16, 4096, 50257, 2048) == GemmPrecision::bf16);
}

TEST_CASE("cuda backend: a head_dim its flash attention does not take is refused, one that it takes is not",
          "[exec][cuda]") {
  for (int64_t dim : {64, 80, 128}) {
    const Scenario sc = scenario(dim, "bf16");
    const Workload w = build_workload(sc);
    CHECK(cuda_backend_refusal(sc, w.stages[0]).empty());
  }
  const Scenario sc = scenario(256, "bf16");
  const std::string why = cuda_backend_refusal(sc, build_workload(sc).stages[0]);
  CHECK(why.find("head_dim 256") != std::string::npos);
}

TEST_CASE("cuda backend: the device footprint counts each distinct plan once", "[exec][cuda]") {
  const Scenario sc = scenario(128, "bf16", 4);
  const Workload w = build_workload(sc);
  const StageProgram& p = w.stages[0];
  double layer_tasks = 0, other_tasks = 0, largest = 0;  // the layers' tasks, the rest (optimizer, loss)
  for (const Task& t : p.tasks)
    if (t.kind == TaskKind::compute) {
      const double bytes =
          CudaBackend::plan_bytes(kernel_plan(sc, p, t, CudaBackend::kElementBytes), GemmPrecision::bf16);
      (t.layer >= 0 ? layer_tasks : other_tasks) += bytes;
      largest = std::max(largest, bytes);
    }
  const double footprint = CudaBackend::footprint_bytes(sc, p, GemmPrecision::bf16);
  const double workspace = double(LtGemm::kWorkspaceBytes);
  CHECK(footprint >= workspace + largest);
  INFO(footprint << " " << layer_tasks << " " << other_tasks);
  // Four layers' tasks share their shapes' buffers: a layer's worth of them (or less) is allocated.
  CHECK(footprint <= workspace + other_tasks + layer_tasks / 4);
  CHECK(CudaBackend::footprint_bytes(sc, p, GemmPrecision::fp8) < footprint);  // 1-byte GEMM operands
}
