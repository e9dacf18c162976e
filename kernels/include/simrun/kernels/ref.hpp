// The plain C++ reference kernels (kernels/ref/<op>_ref.cpp): the CPU backend's compute and, later,
// what the CUDA kernels of kernels/<op>.cu are tested against (STYLE.md "Kernels"). Each is the
// textbook loop in T (float for the backend, double for the tests' oracles), tensors row-major
// and contiguous, shapes in the arguments. No threads, no SIMD: correct and readable first.
#pragma once

#include <cstdint>
#include <span>

namespace simrun::kernels::ref {

// RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467): y = x / rms(x) · w, rms(x) =
// sqrt(mean(x²) + eps), over the last dimension h of `rows` rows. rstd[row] = 1 / rms, kept for
// the backward.
template <class T>
void rmsnorm_forward(std::span<const T> x, std::span<const T> weight, int64_t rows, int64_t h, T eps,
                     std::span<T> y, std::span<T> rstd);
// dx, and dweight accumulated (+=) over the rows.
template <class T>
void rmsnorm_backward(std::span<const T> dy, std::span<const T> x, std::span<const T> weight,
                      std::span<const T> rstd, int64_t rows, int64_t h, std::span<T> dx,
                      std::span<T> dweight);

// LayerNorm (Ba et al. 2016, arXiv:1607.06450): y = (x − mean) · rstd · w + b over the last
// dimension h, rstd = 1 / sqrt(var + eps) (the biased variance, as torch.nn.LayerNorm); mean and
// rstd per row kept for the backward.
template <class T>
void layernorm_forward(std::span<const T> x, std::span<const T> weight, std::span<const T> bias, int64_t rows,
                       int64_t h, T eps, std::span<T> y, std::span<T> mean, std::span<T> rstd);
// dx, and dweight and dbias accumulated (+=) over the rows.
template <class T>
void layernorm_backward(std::span<const T> dy, std::span<const T> x, std::span<const T> weight,
                        std::span<const T> mean, std::span<const T> rstd, int64_t rows, int64_t h,
                        std::span<T> dx, std::span<T> dweight, std::span<T> dbias);

// GELU, tanh approximation (Hendrycks & Gimpel 2016, arXiv:1606.08415; GPT-2's and Megatron's
// gelu_impl): 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))), elementwise.
template <class T>
void gelu_forward(std::span<const T> x, std::span<T> out);
template <class T>
void gelu_backward(std::span<const T> dout, std::span<const T> x, std::span<T> dx);

// SwiGLU's gating (Shazeer 2020, arXiv:2002.05202): out = silu(gate) · up, elementwise.
template <class T>
void swiglu_forward(std::span<const T> gate, std::span<const T> up, std::span<T> out);
template <class T>
void swiglu_backward(std::span<const T> dout, std::span<const T> gate, std::span<const T> up,
                     std::span<T> dgate, std::span<T> dup);

// Softmax cross-entropy per row: loss[row] = logsumexp(logits[row]) − logits[row][target[row]],
// over a vocabulary of `vocab`.
template <class T>
void cross_entropy_forward(std::span<const T> logits, std::span<const int32_t> targets, int64_t rows,
                           int64_t vocab, std::span<T> losses);
// dlogits = (softmax(logits) − onehot(target)) · dloss[row].
template <class T>
void cross_entropy_backward(std::span<const T> dlosses, std::span<const T> logits,
                            std::span<const int32_t> targets, int64_t rows, int64_t vocab,
                            std::span<T> dlogits);

// Attention's shape: q [batch, q_heads, seq, head_dim]; k and v [batch, kv_heads, seq, head_dim]
// (grouped-query attention: q_heads / kv_heads query heads share a K/V head); causal or not.
struct AttentionShape {
  int64_t batch = 1, q_heads = 1, kv_heads = 1, seq = 1, head_dim = 1;
  bool causal = true;
  double scale() const;  // 1/sqrt(head_dim)
};
// o = softmax(q·kᵀ·scale, masked) · v, by FlashAttention's online softmax over the keys (Dao et
// al. 2022, arXiv:2205.14135, Algorithm 1, one key at a time); lse [batch, q_heads, seq] the
// softmax's log-sum-exp, kept for the backward.
template <class T>
void attention_forward(const AttentionShape& shape, std::span<const T> q, std::span<const T> k,
                       std::span<const T> v, std::span<T> o, std::span<T> lse);
// FlashAttention-2's backward (Dao 2023, arXiv:2307.08691, Algorithm 2): P recomputed from lse,
// D = rowsum(dO ∘ O), dS = P ∘ (dO·vᵀ − D); dq = dS·k·scale, dk = dSᵀ·q·scale, dv = Pᵀ·dO, the
// query heads of a group summed into their K/V head's dk and dv.
template <class T>
void attention_backward(const AttentionShape& shape, std::span<const T> d_o, std::span<const T> q,
                        std::span<const T> k, std::span<const T> v, std::span<const T> o,
                        std::span<const T> lse, std::span<T> dq, std::span<T> dk, std::span<T> dv);

// AdamW, PyTorch's torch.optim.AdamW (Loshchilov & Hutter 2019, arXiv:1711.05101): decoupled
// decay p −= lr·wd·p, then m, v moments with bias correction at `step` (1 for the first),
// p −= lr · m̂ / (sqrt(v̂) + eps).
struct AdamW {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};
template <class T>
void adamw_step(const AdamW& opt, int64_t step, std::span<T> params, std::span<const T> grads, std::span<T> m,
                std::span<T> v);

// fp8 E4M3 (OCP 8-bit floating point, 2023; largest finite 448): a float rounded to nearest even
// and saturated to ±448 (NaN stays NaN), and a byte's value.
inline constexpr float kFp8E4m3Max = 448.0f;
uint8_t fp8_e4m3_encode(float x);
float fp8_e4m3_decode(uint8_t q);
// The scaled cast Transformer Engine runs: per block of `block` consecutive values (0: the whole
// tensor), scale = 448 / amax (1 where amax is 0), q = e4m3(x · scale); `scales` one per block.
void fp8_cast(std::span<const float> x, int64_t block, std::span<uint8_t> q, std::span<float> scales);

}  // namespace simrun::kernels::ref
