// The kernels' host helpers (kernels/cuda, private): device copies of host data, poisoned
// outputs, the stream cast; errors through SIMRUN_CUDA_CHECK (simrun/kernels/cuda_check.hpp).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "simrun/kernels/cuda_check.hpp"

namespace simrun::kernels::cuda::detail {

// A device copy of a host span, freed with it.
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    SIMRUN_CUDA_CHECK(cudaMalloc(&ptr, sizeof(T) * (count ? count : 1)));
  }
  DeviceBuffer(const T* host, size_t count) : DeviceBuffer(count) {
    SIMRUN_CUDA_CHECK(cudaMemcpy(ptr, host, sizeof(T) * count, cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // Poisoned (0xff bytes: NaN in fp32 and bf16) so that an element a kernel leaves unwritten shows.
  void poison() { SIMRUN_CUDA_CHECK(cudaMemset(ptr, 0xff, sizeof(T) * n)); }
  std::vector<T> to_host() const {
    std::vector<T> out(n);
    SIMRUN_CUDA_CHECK(cudaMemcpy(out.data(), ptr, sizeof(T) * n, cudaMemcpyDeviceToHost));
    return out;
  }
};

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace simrun::kernels::cuda::detail
