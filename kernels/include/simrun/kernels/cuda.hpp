// The CUDA kernels (kernels/cuda/*.cu), a first part of issue 27 (the forward passes of the fused
// norm and activations, AdamW, the fp8 casts; flash attention and the backward passes are not
// written yet), each beside the plain C++ reference of the same function
// (ref.hpp) it is tested against (tests/kernels/test_cuda_kernels.cpp, which skips without a
// device). Built where CMake finds the CUDA Toolkit (SIMRUN_HAVE_CUDA), for sm_80, sm_90 and
// sm_100. The interface holds no CUDA types: bf16 tensors are uint16_t (bf16.hpp), a stream is a
// void* (cudaStream_t; nullptr the default stream), so C++ without CUDA headers can call it.
//
// Device API: pointers are device memory, tensors row-major and contiguous, math in fp32.
// Host API (the `_on_host` functions): the same kernel on host vectors, copied to a device and
// back, for the tests and the microbenchmarks; they throw std::runtime_error naming the CUDA
// error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simrun::kernels::cuda {

// Devices the CUDA runtime sees; 0 where there is no driver or no device (never throws).
int device_count();
// "NVIDIA H100 80GB HBM3 (sm_90)", or "" without a device.
std::string device_name();

// Fused residual-add + RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467), rows × h, bf16 storage:
// sum = x + residual (written to residual_out, the next layer's residual), y = sum / rms(sum) · w,
// rstd[row] = 1 / rms(sum) kept for the backward. One block per row, h ≤ 16384.
void residual_rmsnorm_forward(const uint16_t* x, const uint16_t* residual, const uint16_t* weight,
                              int64_t rows, int64_t h, float eps, uint16_t* y, uint16_t* residual_out,
                              float* rstd, void* stream);

// SwiGLU's gating (Shazeer 2020, arXiv:2002.05202), elementwise over n, bf16: out = silu(gate)·up.
void swiglu_forward(const uint16_t* gate, const uint16_t* up, int64_t n, uint16_t* out, void* stream);

// Fused bias + GELU (tanh, as ref::gelu_forward) over rows × cols, bf16: out = gelu(x + bias[col]).
void bias_gelu_forward(const uint16_t* x, const uint16_t* bias, int64_t rows, int64_t cols, uint16_t* out,
                       void* stream);

// One AdamW step (as ref::adamw_step, torch.optim.AdamW) over several fp32 tensors in one launch
// (a multi-tensor apply: one block walks one tensor's chunk).
struct AdamWTensor {
  float* params = nullptr;
  const float* grads = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  int64_t n = 0;
};
void adamw_step(const std::vector<AdamWTensor>& tensors, double lr, double beta1, double beta2, double eps,
                double weight_decay, int64_t step, void* stream);

// fp8 e4m3 (OCP FP8: max 448) casts of fp32 values, as Transformer Engine scales them: per tensor
// (scale = 448 / amax over the tensor) or per block of 128 consecutive values (DeepSeek-V3's 1×128
// tiles, arXiv:2412.19437 sec. 3.3.2: one scale per block). q = round(x · scale) in e4m3, stored as
// bytes; `scales` one per tensor or per block (x ≈ q / scale).
void fp8_cast_per_tensor(const float* x, int64_t n, uint8_t* q, float* scale, void* stream);
void fp8_cast_per_block(const float* x, int64_t n, uint8_t* q, float* scales, void* stream);
inline constexpr int64_t kFp8BlockSize = 128;

// ---- Host API: the same on host vectors (the tests).
struct ResidualRmsnormOut {
  std::vector<uint16_t> y, residual_out;
  std::vector<float> rstd;
};
ResidualRmsnormOut residual_rmsnorm_forward_on_host(const std::vector<uint16_t>& x,
                                                    const std::vector<uint16_t>& residual,
                                                    const std::vector<uint16_t>& weight, int64_t rows,
                                                    int64_t h, float eps);
std::vector<uint16_t> swiglu_forward_on_host(const std::vector<uint16_t>& gate,
                                             const std::vector<uint16_t>& up);
std::vector<uint16_t> bias_gelu_forward_on_host(const std::vector<uint16_t>& x,
                                                const std::vector<uint16_t>& bias, int64_t rows,
                                                int64_t cols);
// params, m, v updated in place.
void adamw_step_on_host(std::vector<float>& params, const std::vector<float>& grads, std::vector<float>& m,
                        std::vector<float>& v, double lr, double beta1, double beta2, double eps,
                        double weight_decay, int64_t step);
struct Fp8Out {
  std::vector<uint8_t> q;
  std::vector<float> scales;
};
Fp8Out fp8_cast_on_host(const std::vector<float>& x, bool per_block);
// An e4m3 byte's value (for the tests' dequantisation).
float fp8_e4m3_value(uint8_t q);

}  // namespace simrun::kernels::cuda
