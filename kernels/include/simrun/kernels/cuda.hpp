// The CUDA kernels (kernels/cuda/*.cu), issue 27 (the fused residual-add + RMSNorm / LayerNorm and
// activations, forward and backward, AdamW, the fp8 casts, flash attention),
// each beside the plain C++ reference of the same function
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

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace simrun::kernels::cuda {

// Devices the CUDA runtime sees; 0 where there is no driver or no device (never throws).
int device_count();
// "NVIDIA H100 80GB HBM3 (sm_90)", or "" without a device.
std::string device_name();
// What CUDA calls device 0 (cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3"; the catalog's
// cuda_names), or "" without a device.
std::string device_cuda_name();

// Fused residual-add + RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467), rows × h, bf16 storage:
// sum = x + residual (written to residual_out, the next layer's residual), y = sum / rms(sum) · w,
// rstd[row] = 1 / rms(sum) kept for the backward. One block per row, h ≤ 16384.
void residual_rmsnorm_forward(const uint16_t* x, const uint16_t* residual, const uint16_t* weight,
                              int64_t rows, int64_t h, float eps, uint16_t* y, uint16_t* residual_out,
                              float* rstd, void* stream);

// Backward passes with weight (and bias) gradients: the column sums over rows are deterministic (no
// atomics): per-chunk partials in an fp32 `workspace` of the `_workspace_bytes` size (device memory,
// shape-dependent only), then an ordered sum over the chunks. dweight / dbias are written, not
// accumulated. d_residual_next may be nullptr (zero); d_sum may overwrite dy, d_residual_next or
// residual_out in place.

// Residual-add + RMSNorm's backward, from residual_out (the normalised sum) and rstd: d_sum =
// RMSNorm's dx (as ref::rmsnorm_backward) + d_residual_next (the gradient reaching residual_out from
// later layers), the gradient of both x and residual; dweight[h] = Σ_rows dy∘x̂ (fp32).
size_t residual_rmsnorm_backward_workspace_bytes(int64_t rows, int64_t h);
void residual_rmsnorm_backward(const uint16_t* dy, const uint16_t* d_residual_next,
                               const uint16_t* residual_out, const uint16_t* weight, const float* rstd,
                               int64_t rows, int64_t h, uint16_t* d_sum, float* dweight, void* workspace,
                               void* stream);

// Fused residual-add + LayerNorm (Ba et al. 2016, arXiv:1607.06450), rows × h, bf16 storage:
// sum = x + residual (written to residual_out), y = (sum − mean)·rstd·w + b with the biased
// variance (as ref::layernorm_forward, torch.nn.LayerNorm); mean and rstd per row (fp32) kept.
void residual_layernorm_forward(const uint16_t* x, const uint16_t* residual, const uint16_t* weight,
                                const uint16_t* bias, int64_t rows, int64_t h, float eps, uint16_t* y,
                                uint16_t* residual_out, float* mean, float* rstd, void* stream);
// Its backward: d_sum = layernorm's dx (as ref::layernorm_backward) + d_residual_next; dweight[h] =
// Σ_rows dy∘x̂, dbias[h] = Σ_rows dy (fp32).
size_t residual_layernorm_backward_workspace_bytes(int64_t rows, int64_t h);
void residual_layernorm_backward(const uint16_t* dy, const uint16_t* d_residual_next,
                                 const uint16_t* residual_out, const uint16_t* weight, const float* mean,
                                 const float* rstd, int64_t rows, int64_t h, uint16_t* d_sum, float* dweight,
                                 float* dbias, void* workspace, void* stream);

// SwiGLU's gating (Shazeer 2020, arXiv:2002.05202), elementwise over n, bf16: out = silu(gate)·up.
void swiglu_forward(const uint16_t* gate, const uint16_t* up, int64_t n, uint16_t* out, void* stream);

// Fused bias + GELU (tanh, as ref::gelu_forward) over rows × cols, bf16: out = gelu(x + bias[col]).
void bias_gelu_forward(const uint16_t* x, const uint16_t* bias, int64_t rows, int64_t cols, uint16_t* out,
                       void* stream);
// SwiGLU's backward (as ref::swiglu_backward), bf16: dgate = dout·up·silu'(gate), dup = dout·silu(gate).
void swiglu_backward(const uint16_t* dout, const uint16_t* gate, const uint16_t* up, int64_t n,
                     uint16_t* dgate, uint16_t* dup, void* stream);
// Bias + GELU's backward: dx = dout·gelu'(x + bias[col]) (bf16; gelu' as ref::gelu_backward),
// dbias[cols] = Σ_rows dx (fp32, from dx before its rounding; deterministic as above).
size_t bias_gelu_backward_workspace_bytes(int64_t rows, int64_t cols);
void bias_gelu_backward(const uint16_t* dout, const uint16_t* x, const uint16_t* bias, int64_t rows,
                        int64_t cols, uint16_t* dx, float* dbias, void* workspace, void* stream);

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
// The same step over fixed tensors with the tables uploaded once: step() only launches (no host
// sync), for a step runner that steps the same tensors every training step.
class AdamWTensors {
 public:
  explicit AdamWTensors(const std::vector<AdamWTensor>& tensors);
  ~AdamWTensors();
  AdamWTensors(const AdamWTensors&) = delete;
  AdamWTensors& operator=(const AdamWTensors&) = delete;
  void step(double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step,
            void* stream) const;

 private:
  void* m_table = nullptr;  // AdamWTensor[tensors]
  void* m_chunk_tensor = nullptr;
  void* m_chunk_start = nullptr;
  int64_t m_chunks = 0;
};

// Softmax cross-entropy per row of bf16 logits (as ref::cross_entropy_forward / _backward): loss =
// logsumexp(row) − row[target] (fp32); dlogits = (softmax(row) − onehot(target))·dloss (bf16).
void cross_entropy_forward(const uint16_t* logits, const int32_t* targets, int64_t rows, int64_t vocab,
                           float* losses, void* stream);
void cross_entropy_backward(const float* dlosses, const uint16_t* logits, const int32_t* targets,
                            int64_t rows, int64_t vocab, uint16_t* dlogits, void* stream);

// y = 0.5·y + x over n bf16 elements (16-byte aligned): the cuda backend's memory-bound op where it
// has no kernel of the op's own, reading and writing exactly the op's bytes.
void stream_update(const uint16_t* x, int64_t n, uint16_t* y, void* stream);

// fp8 e4m3 (OCP FP8: max 448) casts of fp32 values, as Transformer Engine scales them: per tensor
// (scale = 448 / amax over the tensor) or per block of 128 consecutive values (DeepSeek-V3's 1×128
// tiles, arXiv:2412.19437 sec. 3.3.2: one scale per block). q = round(x · scale) in e4m3, stored as
// bytes; `scales` one per tensor or per block (x ≈ q / scale).
void fp8_cast_per_tensor(const float* x, int64_t n, uint8_t* q, float* scale, void* stream);
void fp8_cast_per_block(const float* x, int64_t n, uint8_t* q, float* scales, void* stream);
inline constexpr int64_t kFp8BlockSize = 128;

// FlashAttention (Dao et al. 2022, arXiv:2205.14135; the backward FlashAttention-2's, Dao 2023,
// arXiv:2307.08691), bf16 storage, fp32 math, as ref::attention_forward / attention_backward:
// q, o, d_o, dq [batch, q_heads, seq, head_dim]; k, v, dk, dv [batch, kv_heads, seq, head_dim]
// (grouped-query attention: q_heads / kv_heads query heads share a K/V head); lse [batch, q_heads,
// seq] = max + ln(sum), fp32; scale 1/sqrt(head_dim); causal: query i sees keys j ≤ i. head_dim a
// multiple of 8 up to 128, tensors 16-byte aligned; others throw std::invalid_argument before any
// CUDA call. AttentionDims mirrors ref::AttentionShape (ref.hpp is C++20, this header C++17).
struct AttentionDims {
  int64_t batch = 1;     // e.g. 2
  int64_t q_heads = 1;   // e.g. 32
  int64_t kv_heads = 1;  // divides q_heads, e.g. 8
  int64_t seq = 1;       // tokens, e.g. 8192
  int64_t head_dim = 1;  // e.g. 128
  bool causal = true;
};
void flash_attention_forward(const AttentionDims& dims, const uint16_t* q, const uint16_t* k,
                             const uint16_t* v, uint16_t* o, float* lse, void* stream);
// The backward's fp32 workspace: dq's accumulator and D = rowsum(dO ∘ O).
size_t flash_attention_backward_workspace_bytes(const AttentionDims& dims);
void flash_attention_backward(const AttentionDims& dims, const uint16_t* d_o, const uint16_t* q,
                              const uint16_t* k, const uint16_t* v, const uint16_t* o, const float* lse,
                              uint16_t* dq, uint16_t* dk, uint16_t* dv, float* workspace, void* stream);

// ---- Host API: the same on host vectors (the tests).
struct ResidualRmsnormOut {
  std::vector<uint16_t> y, residual_out;
  std::vector<float> rstd;
};
ResidualRmsnormOut residual_rmsnorm_forward_on_host(const std::vector<uint16_t>& x,
                                                    const std::vector<uint16_t>& residual,
                                                    const std::vector<uint16_t>& weight, int64_t rows,
                                                    int64_t h, float eps);
// The backward passes' host forms: d_residual_next empty for none (zero).
struct ResidualRmsnormGrads {
  std::vector<uint16_t> d_sum;
  std::vector<float> dweight;
};
ResidualRmsnormGrads residual_rmsnorm_backward_on_host(const std::vector<uint16_t>& dy,
                                                       const std::vector<uint16_t>& d_residual_next,
                                                       const std::vector<uint16_t>& residual_out,
                                                       const std::vector<uint16_t>& weight,
                                                       const std::vector<float>& rstd, int64_t rows,
                                                       int64_t h);
struct ResidualLayernormOut {
  std::vector<uint16_t> y, residual_out;
  std::vector<float> mean, rstd;
};
ResidualLayernormOut residual_layernorm_forward_on_host(const std::vector<uint16_t>& x,
                                                        const std::vector<uint16_t>& residual,
                                                        const std::vector<uint16_t>& weight,
                                                        const std::vector<uint16_t>& bias, int64_t rows,
                                                        int64_t h, float eps);
struct ResidualLayernormGrads {
  std::vector<uint16_t> d_sum;
  std::vector<float> dweight, dbias;
};
ResidualLayernormGrads residual_layernorm_backward_on_host(
    const std::vector<uint16_t>& dy, const std::vector<uint16_t>& d_residual_next,
    const std::vector<uint16_t>& residual_out, const std::vector<uint16_t>& weight,
    const std::vector<float>& mean, const std::vector<float>& rstd, int64_t rows, int64_t h);
std::vector<uint16_t> swiglu_forward_on_host(const std::vector<uint16_t>& gate,
                                             const std::vector<uint16_t>& up);
std::vector<uint16_t> bias_gelu_forward_on_host(const std::vector<uint16_t>& x,
                                                const std::vector<uint16_t>& bias, int64_t rows,
                                                int64_t cols);
struct SwigluGrads {
  std::vector<uint16_t> dgate, dup;
};
SwigluGrads swiglu_backward_on_host(const std::vector<uint16_t>& dout, const std::vector<uint16_t>& gate,
                                    const std::vector<uint16_t>& up);
struct BiasGeluGrads {
  std::vector<uint16_t> dx;
  std::vector<float> dbias;
};
BiasGeluGrads bias_gelu_backward_on_host(const std::vector<uint16_t>& dout, const std::vector<uint16_t>& x,
                                         const std::vector<uint16_t>& bias, int64_t rows, int64_t cols);
// params, m, v updated in place.
void adamw_step_on_host(std::vector<float>& params, const std::vector<float>& grads, std::vector<float>& m,
                        std::vector<float>& v, double lr, double beta1, double beta2, double eps,
                        double weight_decay, int64_t step);
struct Fp8Out {
  std::vector<uint8_t> q;
  std::vector<float> scales;
};
Fp8Out fp8_cast_on_host(const std::vector<float>& x, bool per_block);
std::vector<float> cross_entropy_forward_on_host(const std::vector<uint16_t>& logits,
                                                 const std::vector<int32_t>& targets, int64_t vocab);
std::vector<uint16_t> cross_entropy_backward_on_host(const std::vector<float>& dlosses,
                                                     const std::vector<uint16_t>& logits,
                                                     const std::vector<int32_t>& targets, int64_t vocab);
// y updated: the returned vector is 0.5·y + x.
std::vector<uint16_t> stream_update_on_host(const std::vector<uint16_t>& x, const std::vector<uint16_t>& y);

struct FlashAttentionOut {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};
FlashAttentionOut flash_attention_forward_on_host(const AttentionDims& dims, const std::vector<uint16_t>& q,
                                                  const std::vector<uint16_t>& k,
                                                  const std::vector<uint16_t>& v);
struct FlashAttentionGrads {
  std::vector<uint16_t> dq, dk, dv;
};
FlashAttentionGrads flash_attention_backward_on_host(
    const AttentionDims& dims, const std::vector<uint16_t>& d_o, const std::vector<uint16_t>& q,
    const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, const std::vector<uint16_t>& o,
    const std::vector<float>& lse);

}  // namespace simrun::kernels::cuda
