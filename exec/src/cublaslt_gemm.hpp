// A GEMM of the cuda backend through cuBLASLt (exec/, private): row-major C[m×n] = A[m×k]·B[k×n],
// `batch` times over strided operands, bf16 (fp16's rate) or fp8 e4m3 operands with fp32
// accumulation, the output bf16. The algorithm is cuBLASLt's first heuristic
// choice for the shape, picked once; the workspace is the one cuBLAS recommends on Hopper and
// Blackwell (32 MiB, cuBLAS docs "cublasSetWorkspace"). fp8 takes cuBLASLt's only fp8 layout
// ("TN": A transposed), with unit scales (the backend times it, the values are random), and needs
// every leading dimension a multiple of 16 bytes (cuBLAS docs, "cublasLtMatmul" fp8 rules); a
// shape that is not runs in bf16 (fp8_runs says which), as Transformer Engine pads or refuses.
//
// No bias or GELU epilogue: the workload keeps bias + GELU as an op of its own (the fused
// bias_gelu kernel), as Megatron's bias_gelu_fusion runs it.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace simrun::exec {

enum class GemmPrecision : uint8_t { bf16, fp8 };

// Whether an fp8 GEMM of m × n × k meets cuBLASLt's fp8 alignment (else it runs in bf16).
bool fp8_runs(int64_t m, int64_t n, int64_t k);
// The precision a GEMM of m × n × k runs in when `wanted`.
GemmPrecision gemm_precision_for(GemmPrecision wanted, int64_t m, int64_t n, int64_t k);

class LtGemm {
 public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  // `precision` as gemm_precision_for gives it. Throws std::runtime_error where cuBLASLt has no
  // algorithm for the shape.
  LtGemm(cublasLtHandle_t handle, int64_t m, int64_t n, int64_t k, int64_t batch, GemmPrecision precision);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // a: m·k·batch elements, b: k·n·batch, c: m·n·batch; `workspace` kWorkspaceBytes of device memory.
  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const;

 private:
  void release();

  cublasLtHandle_t m_handle;
  cublasLtMatmulDesc_t m_desc = nullptr;
  cublasLtMatrixLayout_t m_a = nullptr, m_b = nullptr, m_c = nullptr;
  cublasLtMatmulAlgo_t m_algo{};
};

}  // namespace simrun::exec
