// The check after every CUDA call and kernel launch (STYLE.md "Errors"): SIMRUN_CUDA_CHECK(call)
// throws std::runtime_error "file:line: call: CUDA's own error string". For the CUDA kernels'
// host code and the cuda backend (exec/src/cuda_check.hpp adds cuBLASLt's and NCCL's); needs the
// CUDA runtime's headers, so the interface of cuda.hpp does not include it.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace simrun::kernels::cuda::detail {

[[noreturn]] inline void throw_call_error(const char* call, const char* file, int line, const char* error) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + error);
}

inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) throw_call_error(call, file, line, cudaGetErrorString(e));
}

}  // namespace simrun::kernels::cuda::detail

#define SIMRUN_CUDA_CHECK(call) ::simrun::kernels::cuda::detail::cuda_check((call), #call, __FILE__, __LINE__)
