// The cuda backend's stand-in for a memory-bound op it has no kernel of its own for (a residual
// add, rotary, the embedding lookup, the router's softmax, the MoE permutes): y = 0.5·y + x over
// n bf16 elements, which reads and writes exactly the bytes the workload gives the op (cuda.hpp;
// the cpu backend's KernelKind::stream). Vectorised by 8 (16-byte loads) where n allows, a
// grid-stride loop. Test: tests/kernels/test_cuda_kernels.cpp (a device needed). Throughput: not
// measured (no device lent); exec/gpu_check.sh times it against copy bandwidth.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "check.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __nv_bfloat16 update(__nv_bfloat16 y, __nv_bfloat16 x) {
  return __float2bfloat16(0.5f * __bfloat162float(y) + __bfloat162float(x));
}

// 8 elements per 16-byte access, then the tail one at a time.
__global__ void stream_update_kernel(const __nv_bfloat16* x, int64_t n, __nv_bfloat16* y) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t vectors = n / 8;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  uint4* yv = reinterpret_cast<uint4*>(y);
  for (int64_t i = first; i < vectors; i += stride) {
    uint4 a = xv[i], b = yv[i];
    __nv_bfloat16* pa = reinterpret_cast<__nv_bfloat16*>(&a);
    __nv_bfloat16* pb = reinterpret_cast<__nv_bfloat16*>(&b);
#pragma unroll
    for (int k = 0; k < 8; ++k) pb[k] = update(pb[k], pa[k]);
    yv[i] = b;
  }
  for (int64_t i = vectors * 8 + first; i < n; i += stride) y[i] = update(y[i], x[i]);
}

}  // namespace

void stream_update(const uint16_t* x, int64_t n, uint16_t* y, void* stream) {
  if (n == 0) return;
  // 16-byte accesses need 16-byte aligned pointers (cudaMalloc's are 256-byte aligned).
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(y) % 16 != 0)
    throw std::invalid_argument("stream_update: x and y must be 16-byte aligned");
  const int64_t blocks = std::min<int64_t>((n / 8 + kThreads - 1) / kThreads + 1, 65535 * 8);
  stream_update_kernel<<<unsigned(blocks), kThreads, 0, detail::as_stream(stream)>>>(
      reinterpret_cast<const __nv_bfloat16*>(x), n, reinterpret_cast<__nv_bfloat16*>(y));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

std::vector<uint16_t> stream_update_on_host(const std::vector<uint16_t>& x, const std::vector<uint16_t>& y) {
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> dx(x.data(), x.size()), dy(y.data(), y.size());
  stream_update(dx.ptr, int64_t(x.size()), dy.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return dy.to_host();
}

}  // namespace simrun::kernels::cuda
