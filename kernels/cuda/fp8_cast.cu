// fp8 e4m3 casts with per-tensor and per-block (128) scaling (cuda.hpp). Per tensor: one kernel
// takes the tensor's amax (a block reduction, then an atomic max on the float's bits, which order
// as integers for non-negative floats), a second scales by 448 / amax and casts, saturating
// (__nv_fp8_e4m3 rounds to nearest, saturates to finite). Per block: one block of 128 threads per
// 128 values, its own amax and scale. Test: tests/kernels/test_cuda_kernels.cpp (byte for byte
// against ref::fp8_cast). Throughput: not measured yet (no device lent).
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>

#include "check.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr float kE4m3Max =
    448.0f;  // OCP 8-bit floating point spec (2023), E4M3's largest finite (ref::kFp8E4m3Max)
constexpr int kThreads = 256;

__device__ float block_max(float x) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  x = threadIdx.x < (blockDim.x + 31) / 32 ? partial[lane] : 0.0f;
  if (warp == 0)
    for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  __shared__ float total;
  if (threadIdx.x == 0) total = x;
  __syncthreads();
  return total;
}

__global__ void amax_kernel(const float* x, int64_t n, unsigned* amax_bits) {
  float m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    m = fmaxf(m, fabsf(x[i]));
  m = block_max(m);
  if (threadIdx.x == 0) atomicMax(amax_bits, __float_as_uint(m));
}

__device__ float scale_of(float amax) { return amax > 0 ? kE4m3Max / amax : 1.0f; }

__global__ void cast_kernel(const float* x, int64_t n, const unsigned* amax_bits, uint8_t* q, float* scale) {
  const float s = scale_of(__uint_as_float(*amax_bits));
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = s;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    q[i] = __nv_fp8_e4m3(x[i] * s).__x;
}

__global__ void block_cast_kernel(const float* x, int64_t n, uint8_t* q, float* scales) {
  const int64_t i = blockIdx.x * kFp8BlockSize + threadIdx.x;
  const float v = i < n ? x[i] : 0.0f;
  const float s = scale_of(block_max(fabsf(v)));
  if (threadIdx.x == 0) scales[blockIdx.x] = s;
  if (i < n) q[i] = __nv_fp8_e4m3(v * s).__x;
}

unsigned blocks_for(int64_t n) { return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, 4096)); }

}  // namespace

void fp8_cast_per_tensor(const float* x, int64_t n, uint8_t* q, float* scale, void* stream) {
  if (n == 0) return;
  detail::DeviceBuffer<unsigned> amax(1);
  SIMRUN_CUDA_CHECK(cudaMemsetAsync(amax.ptr, 0, sizeof(unsigned), detail::as_stream(stream)));
  amax_kernel<<<blocks_for(n), kThreads, 0, detail::as_stream(stream)>>>(x, n, amax.ptr);
  cast_kernel<<<blocks_for(n), kThreads, 0, detail::as_stream(stream)>>>(x, n, amax.ptr, q, scale);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
  SIMRUN_CUDA_CHECK(cudaStreamSynchronize(detail::as_stream(stream)));  // amax is freed
}

void fp8_cast_per_block(const float* x, int64_t n, uint8_t* q, float* scales, void* stream) {
  if (n == 0) return;
  const int64_t blocks = (n + kFp8BlockSize - 1) / kFp8BlockSize;
  block_cast_kernel<<<unsigned(blocks), unsigned(kFp8BlockSize), 0, detail::as_stream(stream)>>>(x, n, q,
                                                                                                 scales);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

Fp8Out fp8_cast_on_host(const std::vector<float>& x, bool per_block) {
  using detail::DeviceBuffer;
  const int64_t n = int64_t(x.size());
  const size_t scales = per_block ? size_t((n + kFp8BlockSize - 1) / kFp8BlockSize) : 1;
  DeviceBuffer<float> dx(x.data(), x.size()), ds(scales);
  DeviceBuffer<uint8_t> dq(x.size());
  dq.poison();
  ds.poison();
  if (per_block)
    fp8_cast_per_block(dx.ptr, n, dq.ptr, ds.ptr, nullptr);
  else
    fp8_cast_per_tensor(dx.ptr, n, dq.ptr, ds.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dq.to_host(), ds.to_host()};
}

}  // namespace simrun::kernels::cuda
