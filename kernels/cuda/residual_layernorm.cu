// Fused residual-add + LayerNorm, forward and backward (cuda.hpp), bf16 in and out, fp32 math.
// Forward: one block per row; sum = x + residual rounded to bf16 (written: the next layer's
// residual), mean = Σ sum / h, then var = Σ (sum − mean)² / h in a second pass over the row (not
// E[x²] − E[x]², which cancels), y = (sum − mean)·rstd·w + b. Backward: one block per row reduces
// mean(g) and mean(g∘x̂) (g = dy∘w) and writes d_sum = rstd·(g − mean(g) − x̂·mean(g∘x̂)) +
// d_residual_next; dweight = Σ_rows dy∘x̂ and dbias = Σ_rows dy by reduce.cuh's column sums
// (per-chunk partials, then an ordered sum: deterministic). Test: tests/kernels/test_cuda_kernels.cpp
// (build the target test_kernels_cuda, run build/tests/test_kernels_cuda; a device needed).
// Throughput: not measured (no device lent); exec/gpu_check.sh times it against copy bandwidth.
#include <cuda_bf16.h>

#include <optional>

#include "check.cuh"
#include "reduce.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// As ref::layernorm_forward (torch.nn.LayerNorm: the biased variance) on the bf16-rounded sum.
__global__ void residual_layernorm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                                          const __nv_bfloat16* weight, const __nv_bfloat16* bias, int64_t h,
                                          float eps, __nv_bfloat16* y, __nv_bfloat16* residual_out,
                                          float* mean, float* rstd) {
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * h;
  const __nv_bfloat16* rr = residual + row * h;
  __nv_bfloat16* sr = residual_out + row * h;
  float total = 0;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const __nv_bfloat16 s = __float2bfloat16(__bfloat162float(xr[i]) + __bfloat162float(rr[i]));
    sr[i] = s;
    total += __bfloat162float(s);
  }
  const float mu = detail::block_sum(total) / float(h);
  // Each thread reads back only the elements it wrote itself.
  float squares = 0;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const float centred = __bfloat162float(sr[i]) - mu;
    squares += centred * centred;
  }
  const float inv = rsqrtf(detail::block_sum(squares) / float(h) + eps);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = inv;
  }
  __nv_bfloat16* yr = y + row * h;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x)
    yr[i] = __float2bfloat16((__bfloat162float(sr[i]) - mu) * inv * __bfloat162float(weight[i]) +
                             __bfloat162float(bias[i]));
}

// With x̂ = (sum − mean)·rstd and g = dy∘w, as ref::layernorm_backward: d_sum = rstd·(g − mean(g) −
// x̂·mean(g∘x̂)), plus d_residual_next where given (the residual stream's gradient passes the add).
__global__ void residual_layernorm_backward_kernel(const __nv_bfloat16* dy,
                                                   const __nv_bfloat16* d_residual_next,
                                                   const __nv_bfloat16* residual_out,
                                                   const __nv_bfloat16* weight, const float* mean,
                                                   const float* rstd, int64_t h, __nv_bfloat16* d_sum) {
  const int64_t row = blockIdx.x;
  const __nv_bfloat16* dyr = dy + row * h;
  const __nv_bfloat16* sr = residual_out + row * h;
  const float mu = mean[row], s = rstd[row];
  float sum_g = 0, sum_gx = 0;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const float g = __bfloat162float(dyr[i]) * __bfloat162float(weight[i]);
    sum_g += g;
    sum_gx += g * ((__bfloat162float(sr[i]) - mu) * s);
  }
  const float mean_g = detail::block_sum(sum_g) / float(h);
  const float mean_gx = detail::block_sum(sum_gx) / float(h);
  const __nv_bfloat16* nr = d_residual_next ? d_residual_next + row * h : nullptr;
  __nv_bfloat16* dr = d_sum + row * h;
  for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
    const float xhat = (__bfloat162float(sr[i]) - mu) * s;
    float d = s * (__bfloat162float(dyr[i]) * __bfloat162float(weight[i]) - mean_g - xhat * mean_gx);
    if (nr) d += __bfloat162float(nr[i]);
    dr[i] = __float2bfloat16(d);
  }
}

// dweight's and dbias's terms (a detail::column_sums term): dy∘x̂ and dy at (row, col).
struct LayernormParamGrad {
  const __nv_bfloat16* dy;
  const __nv_bfloat16* residual_out;
  const float* mean;
  const float* rstd;
  int64_t h;
  __device__ void operator()(int64_t row, int64_t col, float* acc) const {
    const int64_t i = row * h + col;
    const float d = __bfloat162float(dy[i]);
    acc[0] += d * ((__bfloat162float(residual_out[i]) - mean[row]) * rstd[row]);
    acc[1] += d;
  }
};

const __nv_bfloat16* bf(const uint16_t* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }
__nv_bfloat16* bf(uint16_t* p) { return reinterpret_cast<__nv_bfloat16*>(p); }

}  // namespace

void residual_layernorm_forward(const uint16_t* x, const uint16_t* residual, const uint16_t* weight,
                                const uint16_t* bias, int64_t rows, int64_t h, float eps, uint16_t* y,
                                uint16_t* residual_out, float* mean, float* rstd, void* stream) {
  if (rows == 0 || h == 0) return;
  residual_layernorm_kernel<<<unsigned(rows), kThreads, 0, detail::as_stream(stream)>>>(
      bf(x), bf(residual), bf(weight), bf(bias), h, eps, bf(y), bf(residual_out), mean, rstd);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

size_t residual_layernorm_backward_workspace_bytes(int64_t rows, int64_t h) {
  return detail::column_sums_workspace_bytes(2, rows, h);
}

void residual_layernorm_backward(const uint16_t* dy, const uint16_t* d_residual_next,
                                 const uint16_t* residual_out, const uint16_t* weight, const float* mean,
                                 const float* rstd, int64_t rows, int64_t h, uint16_t* d_sum, float* dweight,
                                 float* dbias, void* workspace, void* stream) {
  if (h == 0) return;
  const cudaStream_t s = detail::as_stream(stream);
  // dweight and dbias first: they read dy and residual_out, which d_sum may then overwrite in place.
  detail::column_sums<2>(LayernormParamGrad{bf(dy), bf(residual_out), mean, rstd, h}, rows, h,
                         static_cast<float*>(workspace), {dweight, dbias}, s);
  if (rows == 0) return;
  residual_layernorm_backward_kernel<<<unsigned(rows), kThreads, 0, s>>>(
      bf(dy), bf(d_residual_next), bf(residual_out), bf(weight), mean, rstd, h, bf(d_sum));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

ResidualLayernormOut residual_layernorm_forward_on_host(const std::vector<uint16_t>& x,
                                                        const std::vector<uint16_t>& residual,
                                                        const std::vector<uint16_t>& weight,
                                                        const std::vector<uint16_t>& bias, int64_t rows,
                                                        int64_t h, float eps) {
  using detail::DeviceBuffer;
  const size_t n = size_t(rows * h);
  DeviceBuffer<uint16_t> dx(x.data(), n), dr(residual.data(), n), dw(weight.data(), size_t(h)),
      db(bias.data(), size_t(h)), dy(n), ds(n);
  DeviceBuffer<float> dmean(static_cast<size_t>(rows)), drstd(static_cast<size_t>(rows));
  dy.poison();
  ds.poison();
  dmean.poison();
  drstd.poison();
  residual_layernorm_forward(dx.ptr, dr.ptr, dw.ptr, db.ptr, rows, h, eps, dy.ptr, ds.ptr, dmean.ptr,
                             drstd.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dy.to_host(), ds.to_host(), dmean.to_host(), drstd.to_host()};
}

ResidualLayernormGrads residual_layernorm_backward_on_host(
    const std::vector<uint16_t>& dy, const std::vector<uint16_t>& d_residual_next,
    const std::vector<uint16_t>& residual_out, const std::vector<uint16_t>& weight,
    const std::vector<float>& mean, const std::vector<float>& rstd, int64_t rows, int64_t h) {
  using detail::DeviceBuffer;
  const size_t n = size_t(rows * h);
  DeviceBuffer<uint16_t> ddy(dy.data(), n), dsum_in(residual_out.data(), n), dw(weight.data(), size_t(h)),
      dsum(n);
  std::optional<DeviceBuffer<uint16_t>> dnext;  // none: d_residual_next is zero
  if (!d_residual_next.empty()) dnext.emplace(d_residual_next.data(), n);
  DeviceBuffer<float> dmean(mean.data(), size_t(rows)), drstd(rstd.data(), size_t(rows)),
      dweight(static_cast<size_t>(h)), dbias(static_cast<size_t>(h));
  DeviceBuffer<unsigned char> workspace(residual_layernorm_backward_workspace_bytes(rows, h));
  dsum.poison();
  dweight.poison();
  dbias.poison();
  workspace.poison();  // every partial read must have been written
  residual_layernorm_backward(ddy.ptr, dnext ? dnext->ptr : nullptr, dsum_in.ptr, dw.ptr, dmean.ptr,
                              drstd.ptr, rows, h, dsum.ptr, dweight.ptr, dbias.ptr, workspace.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dsum.to_host(), dweight.to_host(), dbias.to_host()};
}

}  // namespace simrun::kernels::cuda
