// The fused activations (cuda.hpp), bf16 in and out, fp32 math. SwiGLU's gating forward and
// backward and bias + GELU (tanh) forward: elementwise, a grid-stride loop. Bias + GELU backward:
// dx = dout · gelu'(x + bias) written by a column-tile kernel that also adds dx (in fp32, before
// rounding) down its rows into per-chunk partials, then dbias = Σ_rows dx summed over the chunks in
// order (reduce.cuh: deterministic, no atomics). Test: tests/kernels/test_cuda_kernels.cpp (build
// the target test_kernels_cuda, run build/tests/test_kernels_cuda; a device needed). Throughput:
// not measured (no device lent); exec/gpu_check.sh times it against copy bandwidth.
#include <cuda_bf16.h>

#include "check.cuh"
#include "reduce.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535 * 8));
}

__global__ void swiglu_kernel(const __nv_bfloat16* gate, const __nv_bfloat16* up, int64_t n,
                              __nv_bfloat16* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = __bfloat162float(gate[i]);
    out[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * __bfloat162float(up[i]));
  }
}

// silu'(g) = σ(g)·(1 + g·(1 − σ(g))), as ref::swiglu_backward.
__global__ void swiglu_backward_kernel(const __nv_bfloat16* dout, const __nv_bfloat16* gate,
                                       const __nv_bfloat16* up, int64_t n, __nv_bfloat16* dgate,
                                       __nv_bfloat16* dup) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float d = __bfloat162float(dout[i]), g = __bfloat162float(gate[i]), u = __bfloat162float(up[i]);
    const float s = 1.0f / (1.0f + expf(-g));
    dup[i] = __float2bfloat16(d * g * s);
    dgate[i] = __float2bfloat16(d * u * s * (1.0f + g * (1.0f - s)));
  }
}

// GELU, tanh form (Hendrycks & Gimpel 2016, arXiv:1606.08415), as ref::gelu_forward.
__device__ float gelu(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// gelu'(x) = 0.5·(1 + t) + 0.5·x·(1 − t²)·sqrt(2/π)·(1 + 3·0.044715·x²), t = tanh(sqrt(2/π)·(x +
// 0.044715·x³)), as ref::gelu_backward.
__device__ float gelu_grad(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float t = tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x));
  const float d_inner = kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * d_inner;
}

__global__ void bias_gelu_kernel(const __nv_bfloat16* x, const __nv_bfloat16* bias, int64_t rows,
                                 int64_t cols, __nv_bfloat16* out) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(gelu(__bfloat162float(x[i]) + __bfloat162float(bias[i % cols])));
}

const __nv_bfloat16* bf(const uint16_t* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }
__nv_bfloat16* bf(uint16_t* p) { return reinterpret_cast<__nv_bfloat16*>(p); }

// One element of bias + GELU backward (a detail::column_sums term): writes dx, adds it (fp32) to
// its column's dbias partial.
struct BiasGeluGrad {
  const __nv_bfloat16* dout;
  const __nv_bfloat16* x;
  const __nv_bfloat16* bias;
  int64_t cols;
  __nv_bfloat16* dx;
  __device__ void operator()(int64_t row, int64_t col, float* acc) const {
    const int64_t i = row * cols + col;
    const float d =
        __bfloat162float(dout[i]) * gelu_grad(__bfloat162float(x[i]) + __bfloat162float(bias[col]));
    dx[i] = __float2bfloat16(d);
    acc[0] += d;
  }
};

}  // namespace

void swiglu_forward(const uint16_t* gate, const uint16_t* up, int64_t n, uint16_t* out, void* stream) {
  if (n == 0) return;
  swiglu_kernel<<<blocks_for(n), kThreads, 0, detail::as_stream(stream)>>>(bf(gate), bf(up), n, bf(out));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

void bias_gelu_forward(const uint16_t* x, const uint16_t* bias, int64_t rows, int64_t cols, uint16_t* out,
                       void* stream) {
  if (rows * cols == 0) return;
  bias_gelu_kernel<<<blocks_for(rows * cols), kThreads, 0, detail::as_stream(stream)>>>(bf(x), bf(bias), rows,
                                                                                        cols, bf(out));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

void swiglu_backward(const uint16_t* dout, const uint16_t* gate, const uint16_t* up, int64_t n,
                     uint16_t* dgate, uint16_t* dup, void* stream) {
  if (n == 0) return;
  swiglu_backward_kernel<<<blocks_for(n), kThreads, 0, detail::as_stream(stream)>>>(
      bf(dout), bf(gate), bf(up), n, bf(dgate), bf(dup));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

size_t bias_gelu_backward_workspace_bytes(int64_t rows, int64_t cols) {
  return detail::column_sums_workspace_bytes(1, rows, cols);
}

void bias_gelu_backward(const uint16_t* dout, const uint16_t* x, const uint16_t* bias, int64_t rows,
                        int64_t cols, uint16_t* dx, float* dbias, void* workspace, void* stream) {
  detail::column_sums<1>(BiasGeluGrad{bf(dout), bf(x), bf(bias), cols, bf(dx)}, rows, cols,
                         static_cast<float*>(workspace), {dbias}, detail::as_stream(stream));
}

std::vector<uint16_t> swiglu_forward_on_host(const std::vector<uint16_t>& gate,
                                             const std::vector<uint16_t>& up) {
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> dg(gate.data(), gate.size()), du(up.data(), up.size()), dout(gate.size());
  dout.poison();
  swiglu_forward(dg.ptr, du.ptr, int64_t(gate.size()), dout.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return dout.to_host();
}

std::vector<uint16_t> bias_gelu_forward_on_host(const std::vector<uint16_t>& x,
                                                const std::vector<uint16_t>& bias, int64_t rows,
                                                int64_t cols) {
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> dx(x.data(), x.size()), db(bias.data(), bias.size()), dout(x.size());
  dout.poison();
  bias_gelu_forward(dx.ptr, db.ptr, rows, cols, dout.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return dout.to_host();
}

SwigluGrads swiglu_backward_on_host(const std::vector<uint16_t>& dout, const std::vector<uint16_t>& gate,
                                    const std::vector<uint16_t>& up) {
  using detail::DeviceBuffer;
  const size_t n = dout.size();
  DeviceBuffer<uint16_t> dd(dout.data(), n), dg(gate.data(), n), du(up.data(), n), dgate(n), dup(n);
  dgate.poison();
  dup.poison();
  swiglu_backward(dd.ptr, dg.ptr, du.ptr, int64_t(n), dgate.ptr, dup.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dgate.to_host(), dup.to_host()};
}

BiasGeluGrads bias_gelu_backward_on_host(const std::vector<uint16_t>& dout, const std::vector<uint16_t>& x,
                                         const std::vector<uint16_t>& bias, int64_t rows, int64_t cols) {
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> dd(dout.data(), dout.size()), dx_in(x.data(), x.size()),
      db(bias.data(), bias.size()), dx(x.size());
  DeviceBuffer<float> dbias(bias.size());
  DeviceBuffer<unsigned char> workspace(bias_gelu_backward_workspace_bytes(rows, cols));
  dx.poison();
  dbias.poison();
  workspace.poison();  // every partial read must have been written
  bias_gelu_backward(dd.ptr, dx_in.ptr, db.ptr, rows, cols, dx.ptr, dbias.ptr, workspace.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dx.to_host(), dbias.to_host()};
}

}  // namespace simrun::kernels::cuda
