// Fused residual-add + RMSNorm, forward and backward (cuda.hpp), bf16 in and out, fp32 math.
// Forward: one block per row; each thread adds its elements, keeps their sum of squares, the block
// reduces it (reduce.cuh's block_sum), and each thread scales its elements; the residual sum is
// written rounded to bf16, as the next layer reads it, and normalised from that. Backward: one
// block per row reduces Σ dy∘w∘x̂ and writes d_sum = rstd·(dy∘w − x̂·mean(dy∘w∘x̂)) +
// d_residual_next; dweight = Σ_rows dy∘x̂ by reduce.cuh's column sums (per-chunk partials, then an
// ordered sum: deterministic). Test: tests/kernels/test_cuda_kernels.cpp (build the target
// test_kernels_cuda, run build/tests/test_kernels_cuda; a device needed). Throughput: not measured
// (no device lent); exec/gpu_check.sh times it against copy bandwidth.
#include <cuda_bf16.h>

#include <optional>

#include "check.cuh"
#include "reduce.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr int kThreads = 256;

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
  const float inv = rsqrtf(detail::block_sum(squares) / float(h) + eps);
  if (threadIdx.x == 0) rstd[row] = inv;
  __nv_bfloat16* yr = y + row * h;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x)
    yr[i] = __float2bfloat16(__bfloat162float(sr[i]) * inv * __bfloat162float(weight[i]));
}

// With x̂ = sum·rstd, as ref::rmsnorm_backward: d_sum = rstd·(dy∘w − x̂·mean(dy∘w∘x̂)), plus
// d_residual_next where given (the residual stream's gradient passes the add unchanged).
__global__ void residual_rmsnorm_backward_kernel(const __nv_bfloat16* dy,
                                                 const __nv_bfloat16* d_residual_next,
                                                 const __nv_bfloat16* residual_out,
                                                 const __nv_bfloat16* weight, const float* rstd, int64_t h,
                                                 __nv_bfloat16* d_sum) {
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* dyr = dy + row * h;
  const __nv_bfloat16* sr = residual_out + row * h;
  const float s = rstd[row];
  float dot = 0;  // Σ dy∘w∘x̂
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x)
    dot += __bfloat162float(dyr[i]) * __bfloat162float(weight[i]) * (__bfloat162float(sr[i]) * s);
  const float mean = detail::block_sum(dot) / float(h);
  const __nv_bfloat16* nr = d_residual_next ? d_residual_next + row * h : nullptr;
  __nv_bfloat16* dr = d_sum + row * h;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const float xhat = __bfloat162float(sr[i]) * s;
    float d = s * (__bfloat162float(dyr[i]) * __bfloat162float(weight[i]) - xhat * mean);
    if (nr) d += __bfloat162float(nr[i]);
    dr[i] = __float2bfloat16(d);
  }
}

// dweight's term (a detail::column_sums term): dy∘x̂ at (row, col).
struct RmsnormWeightGrad {
  const __nv_bfloat16* dy;
  const __nv_bfloat16* residual_out;
  const float* rstd;
  int64_t h;
  __device__ void operator()(int64_t row, int64_t col, float* acc) const {
    const int64_t i = row * h + col;
    acc[0] += __bfloat162float(dy[i]) * (__bfloat162float(residual_out[i]) * rstd[row]);
  }
};

const __nv_bfloat16* bf(const uint16_t* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }
__nv_bfloat16* bf(uint16_t* p) { return reinterpret_cast<__nv_bfloat16*>(p); }

}  // namespace

void residual_rmsnorm_forward(const uint16_t* x, const uint16_t* residual, const uint16_t* weight,
                              int64_t rows, int64_t h, float eps, uint16_t* y, uint16_t* residual_out,
                              float* rstd, void* stream) {
  if (rows == 0) return;
  residual_rmsnorm_kernel<<<unsigned(rows), kThreads, 0, detail::as_stream(stream)>>>(
      bf(x), bf(residual), bf(weight), h, eps, bf(y), bf(residual_out), rstd);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

size_t residual_rmsnorm_backward_workspace_bytes(int64_t rows, int64_t h) {
  return detail::column_sums_workspace_bytes(1, rows, h);
}

void residual_rmsnorm_backward(const uint16_t* dy, const uint16_t* d_residual_next,
                               const uint16_t* residual_out, const uint16_t* weight, const float* rstd,
                               int64_t rows, int64_t h, uint16_t* d_sum, float* dweight, void* workspace,
                               void* stream) {
  if (h == 0) return;
  const cudaStream_t s = detail::as_stream(stream);
  // dweight first: it reads dy and residual_out, which d_sum may then overwrite in place.
  detail::column_sums<1>(RmsnormWeightGrad{bf(dy), bf(residual_out), rstd, h}, rows, h,
                         static_cast<float*>(workspace), {dweight}, s);
  if (rows == 0) return;
  residual_rmsnorm_backward_kernel<<<unsigned(rows), kThreads, 0, s>>>(
      bf(dy), bf(d_residual_next), bf(residual_out), bf(weight), rstd, h, bf(d_sum));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
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
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dy.to_host(), ds.to_host(), drstd.to_host()};
}

ResidualRmsnormGrads residual_rmsnorm_backward_on_host(const std::vector<uint16_t>& dy,
                                                       const std::vector<uint16_t>& d_residual_next,
                                                       const std::vector<uint16_t>& residual_out,
                                                       const std::vector<uint16_t>& weight,
                                                       const std::vector<float>& rstd, int64_t rows,
                                                       int64_t h) {
  using detail::DeviceBuffer;
  const size_t n = size_t(rows * h);
  DeviceBuffer<uint16_t> ddy(dy.data(), n), dsum_in(residual_out.data(), n), dw(weight.data(), size_t(h)),
      dsum(n);
  std::optional<DeviceBuffer<uint16_t>> dnext;  // none: d_residual_next is zero
  if (!d_residual_next.empty()) dnext.emplace(d_residual_next.data(), n);
  DeviceBuffer<float> drstd(rstd.data(), size_t(rows)), dweight(static_cast<size_t>(h));
  DeviceBuffer<unsigned char> workspace(residual_rmsnorm_backward_workspace_bytes(rows, h));
  dsum.poison();
  dweight.poison();
  workspace.poison();  // every partial read must have been written
  residual_rmsnorm_backward(ddy.ptr, dnext ? dnext->ptr : nullptr, dsum_in.ptr, dw.ptr, drstd.ptr, rows, h,
                            dsum.ptr, dweight.ptr, workspace.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dsum.to_host(), dweight.to_host()};
}

}  // namespace simrun::kernels::cuda
