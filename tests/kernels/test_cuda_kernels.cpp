// The CUDA kernels (kernels/include/simrun/kernels/cuda.hpp) against their plain C++ references
// (ref.hpp) on fresh random inputs, odd shapes included, outputs poisoned before each run: the
// relative error ‖out − ref‖ / ‖ref‖ (ref in double) below 1e-3 for fp32 arithmetic and 1e-2 with
// bf16 operands, and never more than twice that of a plain same-precision implementation (float
// math, bf16 results). Tagged [gpu]; each case skips, with a warning, without a device.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "simrun/kernels/bf16.hpp"
#include "simrun/kernels/cuda.hpp"
#include "simrun/kernels/ref.hpp"

using namespace simrun::kernels;

namespace {

bool no_device() {
  if (cuda::device_count() > 0) return false;
  WARN("no CUDA device: the GPU kernel tests are skipped (they run on a lent GPU, exec/gpu_check.sh)");
  return true;
}

std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = to_bf16(normal(rng));
  return v;
}

std::vector<double> widen(const std::vector<uint16_t>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_bf16(v[i]);
  return out;
}

// A plain bf16 implementation's result: the float computation's value rounded to bf16.
std::vector<double> bf16_rounded(const std::vector<float>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_bf16(to_bf16(v[i]));
  return out;
}

template <class A>
double relative_error(const A& out, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

// The bound of the tests' header: below `limit`, and at most twice the plain implementation's.
void check_error(double kernel, double plain, double limit) {
  INFO("kernel " << kernel << ", plain same-precision " << plain);
  CHECK(kernel < limit);
  CHECK(kernel <= 2 * plain + 1e-7);
}

}  // namespace

TEST_CASE("cuda: fused residual-add + RMSNorm forward matches its reference", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(1);
  for (auto [rows, h] : {std::pair<int64_t, int64_t>{1, 97}, {3, 1025}, {64, 4096}, {7, 8192}}) {
    INFO(rows << " x " << h);
    const auto x = random_bf16(size_t(rows * h), rng), r = random_bf16(size_t(rows * h), rng),
               w = random_bf16(size_t(h), rng);
    const cuda::ResidualRmsnormOut out = cuda::residual_rmsnorm_forward_on_host(x, r, w, rows, h, 1e-5f);
    // The reference: the sum rounded to bf16 (as the kernel writes it), then RMSNorm in double.
    std::vector<double> sum(x.size()), weight = widen(w), y(x.size()), rstd(static_cast<size_t>(rows));
    std::vector<float> plain_sum(x.size()), plain_w(w.size()), plain_y(x.size()),
        plain_rstd(static_cast<size_t>(rows));
    for (size_t i = 0; i < x.size(); ++i) {
      plain_sum[i] = from_bf16(to_bf16(from_bf16(x[i]) + from_bf16(r[i])));
      sum[i] = plain_sum[i];
    }
    for (size_t i = 0; i < w.size(); ++i) plain_w[i] = from_bf16(w[i]);
    ref::rmsnorm_forward<double>(sum, weight, rows, h, 1e-5, y, rstd);
    ref::rmsnorm_forward<float>(plain_sum, plain_w, rows, h, 1e-5f, plain_y, plain_rstd);
    check_error(relative_error(widen(out.y), y), relative_error(bf16_rounded(plain_y), y), 1e-2);
    CHECK(relative_error(widen(out.residual_out), sum) == 0);
    CHECK(relative_error(out.rstd, rstd) < 1e-5);
  }
}

TEST_CASE("cuda: SwiGLU and bias + GELU forward match their references", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(2);
  for (int64_t n : {97, 1025, 1 << 20}) {
    INFO(n);
    const auto gate = random_bf16(size_t(n), rng, 2), up = random_bf16(size_t(n), rng);
    const std::vector<uint16_t> out = cuda::swiglu_forward_on_host(gate, up);
    std::vector<double> ref(static_cast<size_t>(n));
    std::vector<float> plain(static_cast<size_t>(n)), gf(static_cast<size_t>(n)), uf(static_cast<size_t>(n));
    for (size_t i = 0; i < size_t(n); ++i) gf[i] = from_bf16(gate[i]), uf[i] = from_bf16(up[i]);
    ref::swiglu_forward<double>(widen(gate), widen(up), ref);
    ref::swiglu_forward<float>(gf, uf, plain);
    check_error(relative_error(widen(out), ref), relative_error(bf16_rounded(plain), ref), 1e-2);
  }
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 97}, {5, 1025}, {256, 4096}}) {
    INFO(rows << " x " << cols);
    const auto x = random_bf16(size_t(rows * cols), rng, 2), bias = random_bf16(size_t(cols), rng);
    const std::vector<uint16_t> out = cuda::bias_gelu_forward_on_host(x, bias, rows, cols);
    std::vector<double> in(x.size()), ref(x.size());
    std::vector<float> in_f(x.size()), plain(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      in_f[i] = from_bf16(x[i]) + from_bf16(bias[i % size_t(cols)]);
      in[i] = double(from_bf16(x[i])) + double(from_bf16(bias[i % size_t(cols)]));
    }
    ref::gelu_forward<double>(in, ref);
    ref::gelu_forward<float>(in_f, plain);
    check_error(relative_error(widen(out), ref), relative_error(bf16_rounded(plain), ref), 1e-2);
  }
}

TEST_CASE("cuda: the multi-tensor AdamW step matches torch.optim.AdamW's", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (int64_t n : {97, 4097 * 3, 1 << 20}) {
    INFO(n);
    std::vector<float> p(static_cast<size_t>(n)), g(static_cast<size_t>(n)), m(static_cast<size_t>(n)),
        v(static_cast<size_t>(n));
    for (size_t i = 0; i < size_t(n); ++i) {
      p[i] = normal(rng), g[i] = normal(rng), m[i] = 0.1f * normal(rng), v[i] = std::abs(0.1f * normal(rng));
    }
    std::vector<double> pd(p.begin(), p.end()), gd(g.begin(), g.end()), md(m.begin(), m.end()),
        vd(v.begin(), v.end());
    std::vector<float> pf = p, mf = m, vf = v;
    const ref::AdamW opt{1e-3, 0.9, 0.95, 1e-8, 0.1};
    ref::adamw_step<double>(opt, 7, pd, gd, md, vd);
    ref::adamw_step<float>(opt, 7, pf, g, mf, vf);
    cuda::adamw_step_on_host(p, g, m, v, opt.lr, opt.beta1, opt.beta2, opt.eps, opt.weight_decay, 7);
    check_error(relative_error(p, pd), relative_error(pf, pd), 1e-3);
    check_error(relative_error(m, md), relative_error(mf, md), 1e-3);
    check_error(relative_error(v, vd), relative_error(vf, vd), 1e-3);
  }
}

TEST_CASE("cuda: fp8 e4m3 casts keep values within e4m3's step, scaled per tensor and per block",
          "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(4);
  std::normal_distribution<float> normal;
  for (bool per_block : {false, true})
    for (int64_t n : {97, 1025, 1 << 16}) {
      INFO((per_block ? "per block " : "per tensor ") << n);
      std::vector<float> x(static_cast<size_t>(n));
      for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (i % 300 == 0 ? 50.0f : 1.0f);  // outliers
      const cuda::Fp8Out out = cuda::fp8_cast_on_host(x, per_block);
      const int64_t blocks = per_block ? (n + cuda::kFp8BlockSize - 1) / cuda::kFp8BlockSize : 1;
      REQUIRE(int64_t(out.scales.size()) == blocks);
      std::vector<double> ref(x.begin(), x.end()), back(x.size());
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t begin = per_block ? b * cuda::kFp8BlockSize : 0;
        const int64_t end = per_block ? std::min(n, begin + cuda::kFp8BlockSize) : n;
        float amax = 0;
        for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::abs(x[size_t(i)]));
        CHECK(out.scales[size_t(b)] == Approx(448.0f / amax).epsilon(1e-6));
        for (int64_t i = begin; i < end; ++i)
          back[size_t(i)] = cuda::fp8_e4m3_value(out.q[size_t(i)]) / out.scales[size_t(b)];
      }
      // e4m3 keeps 3 mantissa bits: a normal value rounds within 2^-4 of itself.
      CHECK(relative_error(back, ref) < 0.0625);
    }
}
