// Fused residual-add + RMSNorm forward (cuda.hpp): one block per row; each thread adds its
// elements, keeps their sum of squares, the block reduces it (warp shuffles, then one warp over
// the warps' partials), and each thread scales its elements. bf16 in and out, fp32 math; the
// residual sum is written rounded to bf16, as the next layer reads it, and normalised from that.
// Test: tests/kernels/test_cuda_kernels.cpp (a device needed). Throughput: not measured yet (no
// device lent; exec/gpu_check.sh times it against copy bandwidth).
#include <cuda_bf16.h>

#include "check.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ float block_sum(float x) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  x = threadIdx.x < blockDim.x / 32 ? partial[lane] : 0.0f;
  if (warp == 0)
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  __shared__ float total;
  if (threadIdx.x == 0) total = x;
  __syncthreads();
  return total;
}

__global__ void residual_rmsnorm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                                        const __nv_bfloat16* weight, int64_t h, float eps, __nv_bfloat16* y,
                                        __nv_bfloat16* residual_out, float* rstd) {
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * h;
  const __nv_bfloat16* rr = residual + row * h;
  __nv_bfloat16* sr = residual_out + row * h;
  float squares = 0;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const __nv_bfloat16 s = __float2bfloat16(__bfloat162float(xr[i]) + __bfloat162float(rr[i]));
    sr[i] = s;
    const float f = __bfloat162float(s);
    squares += f * f;
  }
  const float inv = rsqrtf(block_sum(squares) / float(h) + eps);
  if (threadIdx.x == 0) rstd[row] = inv;
  __nv_bfloat16* yr = y + row * h;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x)
    yr[i] = __float2bfloat16(__bfloat162float(sr[i]) * inv * __bfloat162float(weight[i]));
}

}  // namespace

void residual_rmsnorm_forward(const uint16_t* x, const uint16_t* residual, const uint16_t* weight,
                              int64_t rows, int64_t h, float eps, uint16_t* y, uint16_t* residual_out,
                              float* rstd, void* stream) {
  if (rows == 0) return;
  residual_rmsnorm_kernel<<<unsigned(rows), kThreads, 0, detail::as_stream(stream)>>>(
      reinterpret_cast<const __nv_bfloat16*>(x), reinterpret_cast<const __nv_bfloat16*>(residual),
      reinterpret_cast<const __nv_bfloat16*>(weight), h, eps, reinterpret_cast<__nv_bfloat16*>(y),
      reinterpret_cast<__nv_bfloat16*>(residual_out), rstd);
  detail::check(cudaGetLastError(), "residual_rmsnorm_forward launch");
}

ResidualRmsnormOut residual_rmsnorm_forward_on_host(const std::vector<uint16_t>& x,
                                                    const std::vector<uint16_t>& residual,
                                                    const std::vector<uint16_t>& weight, int64_t rows,
                                                    int64_t h, float eps) {
  using detail::DeviceBuffer;
  const size_t n = size_t(rows * h);
  DeviceBuffer<uint16_t> dx(x.data(), n), dr(residual.data(), n), dw(weight.data(), size_t(h));
  DeviceBuffer<uint16_t> dy(n), ds(n);
  DeviceBuffer<float> drstd(static_cast<size_t>(rows));
  dy.poison();
  ds.poison();
  drstd.poison();
  residual_rmsnorm_forward(dx.ptr, dr.ptr, dw.ptr, rows, h, eps, dy.ptr, ds.ptr, drstd.ptr, nullptr);
  detail::check(cudaDeviceSynchronize(), "residual_rmsnorm_forward");
  return {dy.to_host(), ds.to_host(), drstd.to_host()};
}

}  // namespace simrun::kernels::cuda
