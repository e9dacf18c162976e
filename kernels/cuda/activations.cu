// The fused activations' forward passes (cuda.hpp): SwiGLU's gating and bias + GELU (tanh),
// elementwise, bf16 in and out, fp32 math, a grid-stride loop. Test:
// tests/kernels/test_cuda_kernels.cpp (a device needed). Throughput: not measured yet (no device
// lent; exec/gpu_check.sh times them against copy bandwidth).
#include <cuda_bf16.h>

#include "check.cuh"
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

// GELU, tanh form (Hendrycks & Gimpel 2016, arXiv:1606.08415), as ref::gelu_forward.
__device__ float gelu(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
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

}  // namespace

void swiglu_forward(const uint16_t* gate, const uint16_t* up, int64_t n, uint16_t* out, void* stream) {
  if (n == 0) return;
  swiglu_kernel<<<blocks_for(n), kThreads, 0, detail::as_stream(stream)>>>(bf(gate), bf(up), n, bf(out));
  detail::check(cudaGetLastError(), "swiglu_forward launch");
}

void bias_gelu_forward(const uint16_t* x, const uint16_t* bias, int64_t rows, int64_t cols, uint16_t* out,
                       void* stream) {
  if (rows * cols == 0) return;
  bias_gelu_kernel<<<blocks_for(rows * cols), kThreads, 0, detail::as_stream(stream)>>>(bf(x), bf(bias), rows,
                                                                                        cols, bf(out));
  detail::check(cudaGetLastError(), "bias_gelu_forward launch");
}

std::vector<uint16_t> swiglu_forward_on_host(const std::vector<uint16_t>& gate,
                                             const std::vector<uint16_t>& up) {
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> dg(gate.data(), gate.size()), du(up.data(), up.size()), dout(gate.size());
  dout.poison();
  swiglu_forward(dg.ptr, du.ptr, int64_t(gate.size()), dout.ptr, nullptr);
  detail::check(cudaDeviceSynchronize(), "swiglu_forward");
  return dout.to_host();
}

std::vector<uint16_t> bias_gelu_forward_on_host(const std::vector<uint16_t>& x,
                                                const std::vector<uint16_t>& bias, int64_t rows,
                                                int64_t cols) {
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> dx(x.data(), x.size()), db(bias.data(), bias.size()), dout(x.size());
  dout.poison();
  bias_gelu_forward(dx.ptr, db.ptr, rows, cols, dout.ptr, nullptr);
  detail::check(cudaDeviceSynchronize(), "bias_gelu_forward");
  return dout.to_host();
}

}  // namespace simrun::kernels::cuda
