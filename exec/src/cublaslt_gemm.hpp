// A GEMM of the cuda backend through cuBLASLt (exec/, private): row-major C[m×n] = A[m×k]·B[k×n],
// `batch` times over strided operands, bf16 (fp16's rate), fp32 or fp8 e4m3 operands with fp32
// accumulation, the output bf16 (fp32 for fp32). The algorithm is cuBLASLt's first heuristic
// choice for the shape, picked once; the workspace is the one cuBLAS recommends on Hopper and
// Blackwell (32 MiB, cuBLAS docs "cublasSetWorkspace"). fp8 takes cuBLASLt's only fp8 layout
// ("TN": A transposed), with unit scales; the backend times it, the values are random.
// An epilogue fuses a bias add, or bias + GELU, into the GEMM's store (CUBLASLT_EPILOGUE_BIAS,
// _GELU_BIAS), where a framework fuses them (Megatron's bias_gelu_fusion off, TE's fused fc1).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace simrun::exec {

enum class GemmPrecision : uint8_t { bf16, fp32, fp8 };
enum class GemmEpilogue : uint8_t { none, bias, bias_gelu };

// Bytes of one element of an operand (A, B) and of the output (C).
double gemm_operand_bytes(GemmPrecision p);
double gemm_output_bytes(GemmPrecision p);

// Throws std::runtime_error naming the cuBLAS status.
void check_cublas(cublasStatus_t status, const char* what);

class LtGemm {
 public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  LtGemm(cublasLtHandle_t handle, int64_t m, int64_t n, int64_t k, int64_t batch, GemmPrecision precision,
         GemmEpilogue epilogue = GemmEpilogue::none);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // a: m·k·batch elements, b: k·n·batch, c: m·n·batch, bias: n (bf16) with an epilogue.
  void run(const void* a, const void* b, void* c, const void* bias, void* workspace,
           cudaStream_t stream) const;

 private:
  cublasLtHandle_t m_handle;
  cublasLtMatmulDesc_t m_desc = nullptr;
  cublasLtMatrixLayout_t m_a = nullptr, m_b = nullptr, m_c = nullptr;
  cublasLtMatmulAlgo_t m_algo{};
  GemmEpilogue m_epilogue;
};

}  // namespace simrun::exec
