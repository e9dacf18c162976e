// The cuda backend's error checks (exec/, private; STYLE.md "Errors"): a macro after every CUDA
// (SIMRUN_CUDA_CHECK, kernels/cuda_check.hpp), cuBLASLt and NCCL call, which throws
// std::runtime_error "file:line: call: the library's own error string"; validate's harness prints
// it with the rank and stops the job.
#pragma once

#include <cublasLt.h>
#include <nccl.h>

#include "simrun/kernels/cuda_check.hpp"  // SIMRUN_CUDA_CHECK

namespace simrun::exec::detail {

using kernels::cuda::detail::throw_call_error;

inline void cublas_check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_call_error(call, file, line, cublasLtGetStatusString(s));
}
inline void nccl_check(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess) throw_call_error(call, file, line, ncclGetErrorString(r));
}

}  // namespace simrun::exec::detail

#define SIMRUN_CUBLAS_CHECK(call) ::simrun::exec::detail::cublas_check((call), #call, __FILE__, __LINE__)
#define SIMRUN_NCCL_CHECK(call) ::simrun::exec::detail::nccl_check((call), #call, __FILE__, __LINE__)
