// The reference kernels (kernels/include/simrun/kernels/ref.hpp) against straightforward oracles:
// attention against a two-pass softmax(q·kᵀ)·v in double, odd shapes included, with the float
// kernel's error at most twice a plain float implementation's (STYLE.md "Tests"); every backward
// against central finite differences of its forward in double; AdamW against its closed form.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "simrun/kernels/ref.hpp"

using namespace simrun::kernels::ref;

namespace {

template <class T = double>
std::vector<T> random_values(size_t n, uint32_t seed, double spread = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, spread);
  std::vector<T> out(n);
  for (T& x : out) x = T(normal(rng));
  return out;
}

template <class T>
std::vector<T> as(const std::vector<double>& x) {
  return std::vector<T>(x.begin(), x.end());
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// The textbook two-pass attention in T: scores, masked softmax, weighted sum.
template <class T>
std::vector<T> naive_attention(const AttentionShape& s, const std::vector<T>& q, const std::vector<T>& k,
                               const std::vector<T>& v) {
  std::vector<T> o(q.size());
  const int64_t group = s.q_heads / s.kv_heads, d = s.head_dim;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.q_heads; ++h) {
      const T* qh = q.data() + ((b * s.q_heads + h) * s.seq) * d;
      const T* kh = k.data() + ((b * s.kv_heads + h / group) * s.seq) * d;
      const T* vh = v.data() + ((b * s.kv_heads + h / group) * s.seq) * d;
      T* oh = o.data() + ((b * s.q_heads + h) * s.seq) * d;
      for (int64_t i = 0; i < s.seq; ++i) {
        std::vector<T> p(static_cast<size_t>(s.seq), T(0));
        T top = -INFINITY, sum = 0;
        const int64_t seen = s.causal ? i + 1 : s.seq;
        for (int64_t j = 0; j < seen; ++j) {
          T dot = 0;
          for (int64_t x = 0; x < d; ++x) dot += qh[i * d + x] * kh[j * d + x];
          p[size_t(j)] = dot * T(s.scale());
          top = std::max(top, p[size_t(j)]);
        }
        for (int64_t j = 0; j < seen; ++j) sum += p[size_t(j)] = std::exp(p[size_t(j)] - top);
        for (int64_t x = 0; x < d; ++x) {
          T acc = 0;
          for (int64_t j = 0; j < seen; ++j) acc += p[size_t(j)] * vh[j * d + x];
          oh[i * d + x] = acc / sum;
        }
      }
    }
  return o;
}

size_t q_size(const AttentionShape& s) { return size_t(s.batch * s.q_heads * s.seq * s.head_dim); }
size_t kv_size(const AttentionShape& s) { return size_t(s.batch * s.kv_heads * s.seq * s.head_dim); }
size_t lse_size(const AttentionShape& s) { return size_t(s.batch * s.q_heads * s.seq); }

// Central finite differences of a scalar f at x, entry by entry.
std::vector<double> numeric_gradient(std::vector<double> x,
                                     const std::function<double(const std::vector<double>&)>& f,
                                     double step = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + step;
    const double up = f(x);
    x[i] = keep - step;
    const double down = f(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * step);
  }
  return g;
}

double weighted_sum(const std::vector<double>& w, const std::vector<double>& y) {
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i) sum += w[i] * y[i];
  return sum;
}

}  // namespace

TEST_CASE("attention forward equals the two-pass softmax(q·kᵀ)·v, odd shapes included", "[kernels][ref]") {
  const AttentionShape shapes[] = {
      {1, 4, 2, 37, 24, true}, {2, 2, 2, 97, 80, true}, {1, 3, 1, 16, 8, false}, {1, 1, 1, 1, 5, true}};
  uint32_t seed = 1;
  for (const AttentionShape& s : shapes) {
    INFO("seq " << s.seq << " head_dim " << s.head_dim << " heads " << s.q_heads << "/" << s.kv_heads);
    const auto q = random_values(q_size(s), seed++), k = random_values(kv_size(s), seed++),
               v = random_values(kv_size(s), seed++);
    const std::vector<double> truth = naive_attention(s, q, k, v);
    std::vector<double> o(q_size(s), NAN), lse(lse_size(s), NAN);
    attention_forward<double>(s, q, k, v, o, lse);
    CHECK(max_abs_diff(o, truth) < 1e-12);
    // In float: no worse than twice a plain float two-pass implementation.
    const auto qf = as<float>(q), kf = as<float>(k), vf = as<float>(v);
    std::vector<float> of(q_size(s), NAN), lsef(lse_size(s), NAN);
    attention_forward<float>(s, qf, kf, vf, of, lsef);
    const std::vector<float> plain = naive_attention(s, qf, kf, vf);
    const double kernel_error = max_abs_diff(std::vector<double>(of.begin(), of.end()), truth);
    const double plain_error = max_abs_diff(std::vector<double>(plain.begin(), plain.end()), truth);
    CHECK(kernel_error <= 2 * plain_error + 1e-7);
    CHECK(kernel_error < 1e-5);
  }
}

TEST_CASE("attention backward equals finite differences of the forward", "[kernels][ref]") {
  const AttentionShape shapes[] = {{1, 2, 1, 7, 5, true}, {1, 2, 2, 5, 3, false}, {2, 4, 2, 6, 4, true}};
  uint32_t seed = 100;
  for (const AttentionShape& s : shapes) {
    INFO("seq " << s.seq << " head_dim " << s.head_dim << " causal " << s.causal);
    const auto q = random_values(q_size(s), seed++), k = random_values(kv_size(s), seed++),
               v = random_values(kv_size(s), seed++), d_o = random_values(q_size(s), seed++);
    std::vector<double> o(q_size(s)), lse(lse_size(s));
    attention_forward<double>(s, q, k, v, o, lse);
    std::vector<double> dq(q.size(), NAN), dk(k.size(), NAN), dv(v.size(), NAN);
    attention_backward<double>(s, d_o, q, k, v, o, lse, dq, dk, dv);
    // The loss Σ dO ∘ O, as a function of each input in turn.
    auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk,
                    const std::vector<double>& vv) {
      std::vector<double> out(q_size(s)), l(lse_size(s));
      attention_forward<double>(s, qq, kk, vv, out, l);
      return weighted_sum(d_o, out);
    };
    CHECK(max_abs_diff(dq, numeric_gradient(q, [&](const auto& x) { return loss(x, k, v); })) < 1e-6);
    CHECK(max_abs_diff(dk, numeric_gradient(k, [&](const auto& x) { return loss(q, x, v); })) < 1e-6);
    CHECK(max_abs_diff(dv, numeric_gradient(v, [&](const auto& x) { return loss(q, k, x); })) < 1e-6);
  }
}

TEST_CASE("RMSNorm: x / sqrt(mean(x²) + eps) · w, and its backward against finite differences",
          "[kernels][ref]") {
  const int64_t rows = 3, h = 13;
  const double eps = 1e-5;
  const auto x = random_values(size_t(rows * h), 7), w = random_values(size_t(h), 8),
             dy = random_values(size_t(rows * h), 9);
  std::vector<double> y(x.size()), rstd(static_cast<size_t>(rows));
  rmsnorm_forward<double>(x, w, rows, h, eps, y, rstd);
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < h; ++i) ms += x[size_t(r * h + i)] * x[size_t(r * h + i)] / double(h);
    for (int64_t i = 0; i < h; ++i)
      CHECK(y[size_t(r * h + i)] == Approx(x[size_t(r * h + i)] / std::sqrt(ms + eps) * w[size_t(i)]));
  }
  std::vector<double> dx(x.size(), NAN), dw(size_t(h), 0.0);
  rmsnorm_backward<double>(dy, x, w, rstd, rows, h, dx, dw);
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww) {
    std::vector<double> out(xx.size()), r(static_cast<size_t>(rows));
    rmsnorm_forward<double>(xx, ww, rows, h, eps, out, r);
    return weighted_sum(dy, out);
  };
  CHECK(max_abs_diff(dx, numeric_gradient(x, [&](const auto& xx) { return loss(xx, w); })) < 1e-7);
  CHECK(max_abs_diff(dw, numeric_gradient(w, [&](const auto& ww) { return loss(x, ww); })) < 1e-7);
}

TEST_CASE("SwiGLU: silu(gate) · up, and its backward against finite differences", "[kernels][ref]") {
  const auto gate = random_values(41, 11, 3.0), up = random_values(41, 12), dout = random_values(41, 13);
  std::vector<double> out(41);
  swiglu_forward<double>(gate, up, out);
  for (size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(gate[i] / (1 + std::exp(-gate[i])) * up[i]));
  std::vector<double> dgate(41, NAN), dup(41, NAN);
  swiglu_backward<double>(dout, gate, up, dgate, dup);
  auto loss = [&](const std::vector<double>& g, const std::vector<double>& u) {
    std::vector<double> o(41);
    swiglu_forward<double>(g, u, o);
    return weighted_sum(dout, o);
  };
  CHECK(max_abs_diff(dgate, numeric_gradient(gate, [&](const auto& g) { return loss(g, up); })) < 1e-7);
  CHECK(max_abs_diff(dup, numeric_gradient(up, [&](const auto& u) { return loss(gate, u); })) < 1e-7);
}

TEST_CASE("cross-entropy: log Σ exp − the target's logit, stable at large logits, and its backward",
          "[kernels][ref]") {
  const int64_t rows = 4, vocab = 29;
  const auto logits = random_values(size_t(rows * vocab), 21, 2.0), dloss = random_values(size_t(rows), 22);
  const std::vector<int32_t> targets = {0, 28, 5, 17};
  std::vector<double> losses(static_cast<size_t>(rows));
  cross_entropy_forward<double>(logits, targets, rows, vocab, losses);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < vocab; ++i) sum += std::exp(logits[size_t(r * vocab + i)]);
    CHECK(losses[size_t(r)] == Approx(std::log(sum) - logits[size_t(r * vocab + targets[size_t(r)])]));
  }
  std::vector<double> dlogits(logits.size(), NAN);
  cross_entropy_backward<double>(dloss, logits, targets, rows, vocab, dlogits);
  const auto numeric = numeric_gradient(logits, [&](const std::vector<double>& x) {
    std::vector<double> l(static_cast<size_t>(rows));
    cross_entropy_forward<double>(x, targets, rows, vocab, l);
    return weighted_sum(dloss, l);
  });
  CHECK(max_abs_diff(dlogits, numeric) < 1e-7);
  // Logits of a thousand: exp overflows unshifted; the loss stays finite and exact in float too.
  std::vector<float> big(size_t(vocab), 1000.0f), loss(1);
  big[3] = 1001.0f;
  cross_entropy_forward<float>(big, std::vector<int32_t>{3}, 1, vocab, loss);
  CHECK(std::isfinite(loss[0]));
  CHECK(loss[0] == Approx(std::log(std::exp(1.0) + double(vocab - 1)) - 1.0).epsilon(1e-5));
}

TEST_CASE("AdamW: the first two steps in closed form, decay decoupled", "[kernels][ref]") {
  const AdamW opt{1e-2, 0.9, 0.999, 1e-8, 0.1};
  const std::vector<double> p0 = {0.5, -1.5, 2.0}, g1 = {0.3, -0.02, 0.0}, g2 = {-0.1, 0.4, 1e-3};
  std::vector<double> p = p0, m(3, 0.0), v(3, 0.0);
  adamw_step<double>(opt, 1, p, g1, m, v);
  std::vector<double> p1(3);
  for (size_t i = 0; i < 3; ++i) {
    // m̂ = g, v̂ = g²: the step is lr · g / (|g| + eps).
    p1[i] = p0[i] * (1 - opt.lr * opt.weight_decay) - opt.lr * g1[i] / (std::abs(g1[i]) + opt.eps);
    CHECK(p[i] == Approx(p1[i]).epsilon(1e-12));
  }
  adamw_step<double>(opt, 2, p, g2, m, v);
  for (size_t i = 0; i < 3; ++i) {
    const double m_hat =
        (opt.beta1 * (1 - opt.beta1) * g1[i] + (1 - opt.beta1) * g2[i]) / (1 - opt.beta1 * opt.beta1);
    const double v_hat = (opt.beta2 * (1 - opt.beta2) * g1[i] * g1[i] + (1 - opt.beta2) * g2[i] * g2[i]) /
                         (1 - opt.beta2 * opt.beta2);
    const double p2 = p1[i] * (1 - opt.lr * opt.weight_decay) - opt.lr * m_hat / (std::sqrt(v_hat) + opt.eps);
    CHECK(p[i] == Approx(p2).epsilon(1e-12));
  }
}

TEST_CASE("LayerNorm: (x − mean) / sqrt(var + eps) · w + b, and its backward against finite differences",
          "[kernels][ref]") {
  const int64_t rows = 3, h = 11;
  const double eps = 1e-5;
  const auto x = random_values(size_t(rows * h), 31, 2.0), w = random_values(size_t(h), 32),
             b = random_values(size_t(h), 33), dy = random_values(size_t(rows * h), 34);
  std::vector<double> y(x.size()), mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
  layernorm_forward<double>(x, w, b, rows, h, eps, y, mean, rstd);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < h; ++i) mu += x[size_t(r * h + i)] / double(h);
    for (int64_t i = 0; i < h; ++i) var += std::pow(x[size_t(r * h + i)] - mu, 2) / double(h);
    for (int64_t i = 0; i < h; ++i)
      CHECK(y[size_t(r * h + i)] ==
            Approx((x[size_t(r * h + i)] - mu) / std::sqrt(var + eps) * w[size_t(i)] + b[size_t(i)]));
  }
  std::vector<double> dx(x.size(), NAN), dw(static_cast<size_t>(h), 0.0), db(static_cast<size_t>(h), 0.0);
  layernorm_backward<double>(dy, x, w, mean, rstd, rows, h, dx, dw, db);
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww,
                  const std::vector<double>& bb) {
    std::vector<double> out(xx.size()), m(static_cast<size_t>(rows)), r(static_cast<size_t>(rows));
    layernorm_forward<double>(xx, ww, bb, rows, h, eps, out, m, r);
    return weighted_sum(dy, out);
  };
  CHECK(max_abs_diff(dx, numeric_gradient(x, [&](const auto& xx) { return loss(xx, w, b); })) < 1e-7);
  CHECK(max_abs_diff(dw, numeric_gradient(w, [&](const auto& ww) { return loss(x, ww, b); })) < 1e-7);
  CHECK(max_abs_diff(db, numeric_gradient(b, [&](const auto& bb) { return loss(x, w, bb); })) < 1e-7);
}

TEST_CASE("GELU (tanh): known values, and its backward against finite differences", "[kernels][ref]") {
  // GELU(0) = 0, GELU(x) → x for large x, → 0 for very negative x; GELU(1) ≈ 0.841192 (tanh form).
  const std::vector<double> points = {0.0, 1.0, 8.0, -8.0};
  std::vector<double> out(points.size());
  gelu_forward<double>(points, out);
  CHECK(out[0] == 0.0);
  CHECK(out[1] == Approx(0.841192).epsilon(1e-6));
  CHECK(out[2] == Approx(8.0).epsilon(1e-12));
  CHECK(std::abs(out[3]) < 1e-12);
  const auto x = random_values(37, 41, 3.0), dout = random_values(37, 42);
  std::vector<double> dx(37, NAN);
  gelu_backward<double>(dout, x, dx);
  const auto numeric = numeric_gradient(x, [&](const std::vector<double>& xx) {
    std::vector<double> o(37);
    gelu_forward<double>(xx, o);
    return weighted_sum(dout, o);
  });
  CHECK(max_abs_diff(dx, numeric) < 1e-7);
}

TEST_CASE("fp8 e4m3: known bytes, ties to even, saturation, and every byte decodes back to itself",
          "[kernels][ref]") {
  CHECK(fp8_e4m3_encode(1.0f) == 0x38);  // exponent 7 (bias 7), mantissa 0
  CHECK(fp8_e4m3_encode(-2.0f) == 0xc0);
  CHECK(fp8_e4m3_encode(448.0f) == 0x7e);  // the largest finite
  CHECK(fp8_e4m3_encode(1e6f) == 0x7e);    // saturates (satfinite)
  CHECK(fp8_e4m3_encode(-1e6f) == 0xfe);
  CHECK(fp8_e4m3_encode(1.0625f) == 0x38);                // halfway between 1 and 1.125: to the even mantissa
  CHECK(fp8_e4m3_encode(1.1875f) == 0x3a);                // halfway between 1.125 and 1.25: to 1.25
  CHECK(fp8_e4m3_encode(std::ldexp(1.0f, -9)) == 0x01);   // the smallest subnormal
  CHECK(fp8_e4m3_encode(std::ldexp(1.0f, -10)) == 0x00);  // its half: a tie, to even (zero)
  CHECK(fp8_e4m3_encode(std::ldexp(0.9375f, -6)) == 0x08);  // 7.5 subnormal steps round up to 2^-6
  CHECK(std::isnan(fp8_e4m3_decode(fp8_e4m3_encode(std::nanf("")))));
  for (int b = 0; b < 256; ++b) {
    const auto q = uint8_t(b);
    if ((q & 0x7f) == 0x7f) continue;  // NaN
    INFO(b);
    CHECK(fp8_e4m3_encode(fp8_e4m3_decode(q)) == (q == 0x80 ? 0x80 : q));
  }
  // Scaled per block: each block's amax lands on 448.
  std::vector<float> x = {1, -2, 0.5f, 4, 0, 0, 0, 0, 8};
  std::vector<uint8_t> q(x.size());
  std::vector<float> scales(3);
  fp8_cast(x, 4, q, scales);
  CHECK(scales[0] == 448.0f / 4);
  CHECK(scales[1] == 1.0f);  // all zeros
  CHECK(scales[2] == 448.0f / 8);
  CHECK(q[3] == 0x7e);
  CHECK(q[8] == 0x7e);
}
