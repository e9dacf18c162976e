// Attention's reference (ref.hpp): FlashAttention's forward with the online softmax, one key at a
// time, and FlashAttention-2's backward, in T.
#include <cmath>
#include <limits>
#include <vector>

#include "simrun/common/error.hpp"
#include "simrun/kernels/ref.hpp"

namespace simrun::kernels::ref {

double AttentionShape::scale() const { return 1.0 / std::sqrt(double(head_dim)); }

namespace {

// Offsets of a (batch, head) slice of [batch, heads, seq, head_dim], and of its lse row.
struct Slices {
  const AttentionShape& s;
  size_t q(int64_t b, int64_t h) const { return size_t(((b * s.q_heads + h) * s.seq) * s.head_dim); }
  size_t kv(int64_t b, int64_t h) const {  // the K/V head of query head h
    const int64_t group = s.q_heads / s.kv_heads;
    return size_t(((b * s.kv_heads + h / group) * s.seq) * s.head_dim);
  }
  size_t lse(int64_t b, int64_t h) const { return size_t((b * s.q_heads + h) * s.seq); }
};

void check(const AttentionShape& s, size_t q, size_t k, size_t v, size_t o, size_t lse) {
  SIMRUN_ASSERT(s.batch >= 1 && s.q_heads >= 1 && s.kv_heads >= 1 && s.seq >= 1 && s.head_dim >= 1 &&
                    s.q_heads % s.kv_heads == 0,
                "attention shape");
  const auto q_size = size_t(s.batch * s.q_heads * s.seq * s.head_dim);
  const auto kv_size = size_t(s.batch * s.kv_heads * s.seq * s.head_dim);
  SIMRUN_ASSERT(q == q_size && o == q_size && k == kv_size && v == kv_size &&
                    lse == size_t(s.batch * s.q_heads * s.seq),
                "attention tensors");
}

// Keys a query at position i sees: all, or up to i when causal.
int64_t keys_seen(const AttentionShape& s, int64_t i) { return s.causal ? i + 1 : s.seq; }

template <class T>
T dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
  for (int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

}  // namespace

template <class T>
void attention_forward(const AttentionShape& s, std::span<const T> q, std::span<const T> k,
                       std::span<const T> v, std::span<T> o, std::span<T> lse) {
  check(s, q.size(), k.size(), v.size(), o.size(), lse.size());
  const Slices at{s};
  const T scale = T(s.scale());
  const int64_t dim = s.head_dim;
  std::vector<T> acc(static_cast<size_t>(dim));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.q_heads; ++h) {
      const T* qh = q.data() + at.q(b, h);
      const T* kh = k.data() + at.kv(b, h);
      const T* vh = v.data() + at.kv(b, h);
      for (int64_t i = 0; i < s.seq; ++i) {
        // Running maximum m, running sum l of exp(score − m), accumulator of exp(score − m)·v.
        T m = -std::numeric_limits<T>::infinity(), l = 0;
        std::fill(acc.begin(), acc.end(), T(0));
        for (int64_t j = 0; j < keys_seen(s, i); ++j) {
          const T score = dot(qh + i * dim, kh + j * dim, dim) * scale;
          const T m_new = std::max(m, score);
          const T rescale = std::exp(m - m_new), p = std::exp(score - m_new);
          l = l * rescale + p;
          for (int64_t d = 0; d < dim; ++d) acc[size_t(d)] = acc[size_t(d)] * rescale + p * vh[j * dim + d];
          m = m_new;
        }
        T* oi = o.data() + at.q(b, h) + size_t(i * dim);
        for (int64_t d = 0; d < dim; ++d) oi[d] = acc[size_t(d)] / l;
        lse[at.lse(b, h) + size_t(i)] = m + std::log(l);
      }
    }
}

template <class T>
void attention_backward(const AttentionShape& s, std::span<const T> d_o, std::span<const T> q,
                        std::span<const T> k, std::span<const T> v, std::span<const T> o,
                        std::span<const T> lse, std::span<T> dq, std::span<T> dk, std::span<T> dv) {
  check(s, q.size(), k.size(), v.size(), o.size(), lse.size());
  SIMRUN_ASSERT(
      d_o.size() == q.size() && dq.size() == q.size() && dk.size() == k.size() && dv.size() == v.size(),
      "attention gradients");
  std::fill(dq.begin(), dq.end(), T(0));
  std::fill(dk.begin(), dk.end(), T(0));
  std::fill(dv.begin(), dv.end(), T(0));
  const Slices at{s};
  const T scale = T(s.scale());
  const int64_t dim = s.head_dim;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.q_heads; ++h) {
      const T* qh = q.data() + at.q(b, h);
      const T* kh = k.data() + at.kv(b, h);
      const T* vh = v.data() + at.kv(b, h);
      const T* oh = o.data() + at.q(b, h);
      const T* doh = d_o.data() + at.q(b, h);
      T* dqh = dq.data() + at.q(b, h);
      T* dkh = dk.data() + at.kv(b, h);
      T* dvh = dv.data() + at.kv(b, h);
      for (int64_t i = 0; i < s.seq; ++i) {
        const T D = dot(doh + i * dim, oh + i * dim, dim);
        const T lse_i = lse[at.lse(b, h) + size_t(i)];
        for (int64_t j = 0; j < keys_seen(s, i); ++j) {
          const T p = std::exp(dot(qh + i * dim, kh + j * dim, dim) * scale - lse_i);
          const T ds = p * (dot(doh + i * dim, vh + j * dim, dim) - D);
          for (int64_t d = 0; d < dim; ++d) {
            dvh[j * dim + d] += p * doh[i * dim + d];
            dqh[i * dim + d] += ds * kh[j * dim + d] * scale;
            dkh[j * dim + d] += ds * qh[i * dim + d] * scale;
          }
        }
      }
    }
}

template void attention_forward<float>(const AttentionShape&, std::span<const float>, std::span<const float>,
                                       std::span<const float>, std::span<float>, std::span<float>);
template void attention_forward<double>(const AttentionShape&, std::span<const double>,
                                        std::span<const double>, std::span<const double>, std::span<double>,
                                        std::span<double>);
template void attention_backward<float>(const AttentionShape&, std::span<const float>, std::span<const float>,
                                        std::span<const float>, std::span<const float>,
                                        std::span<const float>, std::span<const float>, std::span<float>,
                                        std::span<float>, std::span<float>);
template void attention_backward<double>(const AttentionShape&, std::span<const double>,
                                         std::span<const double>, std::span<const double>,
                                         std::span<const double>, std::span<const double>,
                                         std::span<const double>, std::span<double>, std::span<double>,
                                         std::span<double>);

}  // namespace simrun::kernels::ref
