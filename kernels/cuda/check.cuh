// CUDA error checks of the kernels' launch and host code (kernels/cuda, private).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace simrun::kernels::cuda::detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A device copy of a host span, freed with it.
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    check(cudaMalloc(&ptr, sizeof(T) * (count ? count : 1)), "cudaMalloc");
  }
  DeviceBuffer(const T* host, size_t count) : DeviceBuffer(count) {
    check(cudaMemcpy(ptr, host, sizeof(T) * count, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // Poisoned (0xff bytes: NaN in fp32 and bf16) so that an element a kernel leaves unwritten shows.
  void poison() { check(cudaMemset(ptr, 0xff, sizeof(T) * n), "cudaMemset"); }
  std::vector<T> to_host() const {
    std::vector<T> out(n);
    check(cudaMemcpy(out.data(), ptr, sizeof(T) * n, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
    return out;
  }
};

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace simrun::kernels::cuda::detail
