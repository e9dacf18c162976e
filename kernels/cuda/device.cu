// Which device the CUDA runtime sees (cuda.hpp).
#include <cuda_runtime.h>

#include <string>

#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" / "no device" error
    return 0;
  }
  return n;
}

std::string device_cuda_name() {
  if (device_count() == 0) return "";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "";
  return p.name;
}

std::string device_name() {
  if (device_count() == 0) return "";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "";
  return std::string(p.name) + " (sm_" + std::to_string(p.major * 10 + p.minor) + ")";
}

}  // namespace simrun::kernels::cuda
