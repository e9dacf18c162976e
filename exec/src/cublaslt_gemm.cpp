// cuBLASLt GEMMs (cublaslt_gemm.hpp).
#include "cublaslt_gemm.hpp"

#include <stdexcept>
#include <string>

#include "cuda_check.hpp"

namespace simrun::exec {
namespace {

cudaDataType_t operand_type(GemmPrecision p) {
  return p == GemmPrecision::fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
}

template <class T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  SIMRUN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value));
}

// A column-major rows × cols layout, `batch` of them rows·cols elements apart.
cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch) {
  cublasLtMatrixLayout_t l = nullptr;
  SIMRUN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), rows));
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    const int64_t stride = rows * cols;
    SIMRUN_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    SIMRUN_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                         &stride, sizeof stride));
  }
  return l;
}

}  // namespace

// fp8 operands' leading dimension is k (1-byte elements), the bf16 output's n: 16 bytes each;
// m is the output's column count, kept a multiple of 16 as Transformer Engine requires.
bool fp8_runs(int64_t m, int64_t n, int64_t k) { return k % 16 == 0 && n % 16 == 0 && m % 16 == 0; }

GemmPrecision gemm_precision_for(GemmPrecision wanted, int64_t m, int64_t n, int64_t k) {
  return wanted == GemmPrecision::fp8 && !fp8_runs(m, n, k) ? GemmPrecision::bf16 : wanted;
}

// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLASLt's "A" is our B (n × k), its "B" our A
// (k × m), its output n × m. fp8 needs the first operand transposed ("TN"): our B is then read as
// k × n, transposed.
LtGemm::LtGemm(cublasLtHandle_t handle, int64_t m, int64_t n, int64_t k, int64_t batch,
               GemmPrecision precision)
    : m_handle(handle) {
  try {
    const bool tn = precision == GemmPrecision::fp8;
    SIMRUN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&m_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    set(m_desc, CUBLASLT_MATMUL_DESC_TRANSA, tn ? CUBLAS_OP_T : CUBLAS_OP_N);
    set(m_desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
    const cudaDataType_t in = operand_type(precision), out = CUDA_R_16BF;
    m_a = tn ? layout(in, k, n, batch) : layout(in, n, k, batch);
    m_b = layout(in, k, m, batch);
    m_c = layout(out, n, m, batch);

    cublasLtMatmulPreference_t preference = nullptr;
    SIMRUN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const size_t workspace = kWorkspaceBytes;
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
    if (status == CUBLAS_STATUS_SUCCESS)
      status =
          cublasLtMatmulAlgoGetHeuristic(handle, m_desc, m_a, m_b, m_c, m_c, preference, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    SIMRUN_CUBLAS_CHECK(status);
    if (found == 0)
      throw std::runtime_error("cuBLASLt has no algorithm for a GEMM of " + std::to_string(m) + " x " +
                               std::to_string(n) + " x " + std::to_string(k) + " on this device");
    m_algo = result.algo;
  } catch (...) {
    release();
    throw;
  }
}

void LtGemm::release() {
  if (m_a) cublasLtMatrixLayoutDestroy(m_a);
  if (m_b) cublasLtMatrixLayoutDestroy(m_b);
  if (m_c) cublasLtMatrixLayoutDestroy(m_c);
  if (m_desc) cublasLtMatmulDescDestroy(m_desc);
  m_a = m_b = m_c = nullptr;
  m_desc = nullptr;
}

LtGemm::~LtGemm() { release(); }

void LtGemm::run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const {
  const float alpha = 1, beta = 0;
  SIMRUN_CUBLAS_CHECK(cublasLtMatmul(m_handle, m_desc, &alpha, b, m_a, a, m_b, &beta, c, m_c, c, m_c, &m_algo,
                                     workspace, kWorkspaceBytes, stream));
}

}  // namespace simrun::exec
