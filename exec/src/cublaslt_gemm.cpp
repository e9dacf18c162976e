// cuBLASLt GEMMs (cublaslt_gemm.hpp).
#include "cublaslt_gemm.hpp"

#include <stdexcept>

namespace simrun::exec {
namespace {

cudaDataType_t operand_type(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16:
      return CUDA_R_16BF;
    case GemmPrecision::fp32:
      return CUDA_R_32F;
    case GemmPrecision::fp8:
      return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}

cudaDataType_t output_type(GemmPrecision p) { return p == GemmPrecision::fp32 ? CUDA_R_32F : CUDA_R_16BF; }

template <class T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  check_cublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
               "cublasLtMatmulDescSetAttribute");
}

// A column-major rows × cols layout, `batch` of them `stride` elements apart.
cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch) {
  cublasLtMatrixLayout_t l = nullptr;
  check_cublas(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), rows),
               "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    const int64_t stride = rows * cols;
    check_cublas(
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
        "cublasLtMatrixLayoutSetAttribute");
    check_cublas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                  sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute");
  }
  return l;
}

}  // namespace

double gemm_operand_bytes(GemmPrecision p) {
  return p == GemmPrecision::fp32 ? 4 : p == GemmPrecision::fp8 ? 1 : 2;
}
double gemm_output_bytes(GemmPrecision p) { return p == GemmPrecision::fp32 ? 4 : 2; }

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(status)));
}

// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLASLt's "A" is our B (n × k), its "B" our A
// (k × m), its output n × m. fp8 needs the first operand transposed ("TN"): our B is then read as
// k × n, transposed.
LtGemm::LtGemm(cublasLtHandle_t handle, int64_t m, int64_t n, int64_t k, int64_t batch,
               GemmPrecision precision, GemmEpilogue epilogue)
    : m_handle(handle), m_epilogue(epilogue) {
  const bool tn = precision == GemmPrecision::fp8;
  check_cublas(cublasLtMatmulDescCreate(&m_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  set(m_desc, CUBLASLT_MATMUL_DESC_TRANSA, tn ? CUBLAS_OP_T : CUBLAS_OP_N);
  set(m_desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (epilogue != GemmEpilogue::none) {
    set(m_desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
        epilogue == GemmEpilogue::bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS);
    set(m_desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_16BF);
  }
  const cudaDataType_t in = operand_type(precision), out = output_type(precision);
  m_a = tn ? layout(in, k, n, batch) : layout(in, n, k, batch);
  m_b = layout(in, k, m, batch);
  m_c = layout(out, n, m, batch);

  cublasLtMatmulPreference_t preference = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const size_t workspace = kWorkspaceBytes;
  check_cublas(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace, sizeof workspace),
               "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle, m_desc, m_a, m_b, m_c, m_c, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0)
    throw std::runtime_error("cuBLASLt has no algorithm for a GEMM of " + std::to_string(m) + " x " +
                             std::to_string(n) + " x " + std::to_string(k) + " on this device");
  m_algo = result.algo;
}

LtGemm::~LtGemm() {
  cublasLtMatrixLayoutDestroy(m_a);
  cublasLtMatrixLayoutDestroy(m_b);
  cublasLtMatrixLayoutDestroy(m_c);
  cublasLtMatmulDescDestroy(m_desc);
}

void LtGemm::run(const void* a, const void* b, void* c, const void* bias, void* workspace,
                 cudaStream_t stream) const {
  if (m_epilogue != GemmEpilogue::none)
    check_cublas(
        cublasLtMatmulDescSetAttribute(m_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
        "cublasLtMatmulDescSetAttribute");
  const float alpha = 1, beta = 0;
  check_cublas(cublasLtMatmul(m_handle, m_desc, &alpha, b, m_a, a, m_b, &beta, c, m_c, c, m_c, &m_algo,
                              workspace, kWorkspaceBytes, stream),
               "cublasLtMatmul");
}

}  // namespace simrun::exec
