// The CUDA kernels (kernels/include/simrun/kernels/cuda.hpp) against their plain C++ references
// (ref.hpp) on fresh random inputs, odd shapes included, outputs poisoned before each run: the
// relative error ‖out − ref‖ / ‖ref‖ (ref in double, on the same bf16-rounded inputs) below 1e-2
// for bf16 outputs and 1e-3 for fp32 ones (AdamW's state, the backward passes' dweight / dbias
// sums), and never more than twice that of a plain same-precision implementation (float math,
// bf16 results). The column sums are also checked bitwise deterministic (run twice). Tagged [gpu];
// each case skips, with a warning, without a device. Build: the target test_kernels_cuda; run
// build/tests/test_kernels_cuda.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "cuda_test_util.hpp"
#include "simrun/kernels/bf16.hpp"
#include "simrun/kernels/cuda.hpp"
#include "simrun/kernels/ref.hpp"

using namespace simrun::kernels;

using namespace simrun::kernels::test;

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

TEST_CASE("cuda: fp8 e4m3 casts match their reference byte for byte, scaled per tensor and per block",
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
      const int64_t block = per_block ? cuda::kFp8BlockSize : 0;
      std::vector<uint8_t> q(x.size());
      std::vector<float> scales(static_cast<size_t>(per_block ? (n + block - 1) / block : 1));
      ref::fp8_cast(x, block, q, scales);
      REQUIRE(out.scales.size() == scales.size());
      CHECK(out.scales == scales);
      size_t differ = 0;
      for (size_t i = 0; i < q.size(); ++i) differ += out.q[i] != q[i];
      CHECK(differ == 0);
      // And the values come back within e4m3's step: 3 mantissa bits, 2^-4 relative.
      std::vector<double> ref(x.begin(), x.end()), back(x.size());
      for (size_t i = 0; i < x.size(); ++i)
        back[i] = ref::fp8_e4m3_decode(out.q[i]) / out.scales[per_block ? i / size_t(block) : 0];
      CHECK(relative_error(back, ref) < 0.0625);
    }
}

// The norms' backward shapes: odd and aligned widths; 300 and 9000 rows for several row chunks of
// the dweight / dbias sums, 9000 reaching the capped chunk count (with an empty last chunk).
const std::pair<int64_t, int64_t> kNormBackwardShapes[] = {{1, 97},   {3, 1025},   {64, 4096},
                                                           {7, 8192}, {300, 1025}, {9000, 97}};

TEST_CASE("cuda: fused residual-add + RMSNorm backward matches its reference", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(5);
  for (auto [rows, h] : kNormBackwardShapes)
    for (bool with_next : {false, true}) {
      INFO(rows << " x " << h << (with_next ? ", with d_residual_next" : ", no d_residual_next"));
      const size_t n = size_t(rows * h);
      const auto dy = random_bf16(n, rng), sum = random_bf16(n, rng, 2), w = random_bf16(size_t(h), rng);
      const auto next = with_next ? random_bf16(n, rng) : std::vector<uint16_t>{};
      // rstd as the forward keeps it: fp32, from the bf16 sum.
      std::vector<float> rstd(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        double squares = 0;
        for (int64_t i = 0; i < h; ++i) squares += std::pow(double(from_bf16(sum[size_t(r * h + i)])), 2);
        rstd[size_t(r)] = float(1 / std::sqrt(squares / double(h) + 1e-5));
      }
      const cuda::ResidualRmsnormGrads out =
          cuda::residual_rmsnorm_backward_on_host(dy, next, sum, w, rstd, rows, h);
      std::vector<double> d_sum(n), dweight(static_cast<size_t>(h), 0.0);
      std::vector<float> plain_d_sum(n), plain_dweight(static_cast<size_t>(h), 0.0f);
      ref::rmsnorm_backward<double>(widen(dy), widen(sum), widen(w),
                                    std::vector<double>(rstd.begin(), rstd.end()), rows, h, d_sum, dweight);
      ref::rmsnorm_backward<float>(floats(dy), floats(sum), floats(w), rstd, rows, h, plain_d_sum,
                                   plain_dweight);
      for (size_t i = 0; i < next.size(); ++i) {
        d_sum[i] += from_bf16(next[i]);
        plain_d_sum[i] += from_bf16(next[i]);
      }
      check_error(relative_error(widen(out.d_sum), d_sum), relative_error(bf16_rounded(plain_d_sum), d_sum),
                  1e-2);
      check_error(relative_error(out.dweight, dweight), relative_error(plain_dweight, dweight), 1e-3);
      if (rows == 9000)
        CHECK(cuda::residual_rmsnorm_backward_on_host(dy, next, sum, w, rstd, rows, h).dweight ==
              out.dweight);
    }
}

TEST_CASE("cuda: fused residual-add + LayerNorm forward matches its reference", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(6);
  for (auto [rows, h] : {std::pair<int64_t, int64_t>{1, 97}, {3, 1025}, {64, 4096}, {7, 8192}}) {
    INFO(rows << " x " << h);
    // An offset residual: the mean far from zero, where a variance by E[x²] − E[x]² would lose digits.
    auto r = random_bf16(size_t(rows * h), rng);
    for (uint16_t& v : r) v = to_bf16(from_bf16(v) + 8.0f);
    const auto x = random_bf16(size_t(rows * h), rng), w = random_bf16(size_t(h), rng),
               b = random_bf16(size_t(h), rng);
    const cuda::ResidualLayernormOut out =
        cuda::residual_layernorm_forward_on_host(x, r, w, b, rows, h, 1e-5f);
    // The reference: the sum rounded to bf16 (as the kernel writes it), then LayerNorm in double.
    std::vector<double> sum(x.size()), y(x.size()), mean(static_cast<size_t>(rows)),
        rstd(static_cast<size_t>(rows));
    std::vector<float> plain_sum(x.size()), plain_y(x.size()), plain_mean(static_cast<size_t>(rows)),
        plain_rstd(static_cast<size_t>(rows));
    for (size_t i = 0; i < x.size(); ++i) {
      plain_sum[i] = from_bf16(to_bf16(from_bf16(x[i]) + from_bf16(r[i])));
      sum[i] = plain_sum[i];
    }
    ref::layernorm_forward<double>(sum, widen(w), widen(b), rows, h, 1e-5, y, mean, rstd);
    ref::layernorm_forward<float>(plain_sum, floats(w), floats(b), rows, h, 1e-5f, plain_y, plain_mean,
                                  plain_rstd);
    check_error(relative_error(widen(out.y), y), relative_error(bf16_rounded(plain_y), y), 1e-2);
    CHECK(relative_error(widen(out.residual_out), sum) == 0);
    CHECK(relative_error(out.mean, mean) < 1e-5);
    CHECK(relative_error(out.rstd, rstd) < 1e-5);
  }
}

TEST_CASE("cuda: fused residual-add + LayerNorm backward matches its reference", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(7);
  for (auto [rows, h] : kNormBackwardShapes)
    for (bool with_next : {false, true}) {
      INFO(rows << " x " << h << (with_next ? ", with d_residual_next" : ", no d_residual_next"));
      const size_t n = size_t(rows * h);
      const auto dy = random_bf16(n, rng), sum = random_bf16(n, rng, 2), w = random_bf16(size_t(h), rng);
      const auto next = with_next ? random_bf16(n, rng) : std::vector<uint16_t>{};
      // mean and rstd as the forward keeps them: fp32, from the bf16 sum.
      std::vector<float> mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        double total = 0, squares = 0;
        for (int64_t i = 0; i < h; ++i) total += from_bf16(sum[size_t(r * h + i)]);
        const double mu = total / double(h);
        for (int64_t i = 0; i < h; ++i) squares += std::pow(from_bf16(sum[size_t(r * h + i)]) - mu, 2);
        mean[size_t(r)] = float(mu);
        rstd[size_t(r)] = float(1 / std::sqrt(squares / double(h) + 1e-5));
      }
      const cuda::ResidualLayernormGrads out =
          cuda::residual_layernorm_backward_on_host(dy, next, sum, w, mean, rstd, rows, h);
      std::vector<double> d_sum(n), dweight(static_cast<size_t>(h), 0.0), dbias(static_cast<size_t>(h), 0.0);
      std::vector<float> plain_d_sum(n), plain_dweight(static_cast<size_t>(h), 0.0f),
          plain_dbias(static_cast<size_t>(h), 0.0f);
      ref::layernorm_backward<double>(
          widen(dy), widen(sum), widen(w), std::vector<double>(mean.begin(), mean.end()),
          std::vector<double>(rstd.begin(), rstd.end()), rows, h, d_sum, dweight, dbias);
      ref::layernorm_backward<float>(floats(dy), floats(sum), floats(w), mean, rstd, rows, h, plain_d_sum,
                                     plain_dweight, plain_dbias);
      for (size_t i = 0; i < next.size(); ++i) {
        d_sum[i] += from_bf16(next[i]);
        plain_d_sum[i] += from_bf16(next[i]);
      }
      check_error(relative_error(widen(out.d_sum), d_sum), relative_error(bf16_rounded(plain_d_sum), d_sum),
                  1e-2);
      check_error(relative_error(out.dweight, dweight), relative_error(plain_dweight, dweight), 1e-3);
      check_error(relative_error(out.dbias, dbias), relative_error(plain_dbias, dbias), 1e-3);
      if (rows == 9000) {
        const cuda::ResidualLayernormGrads again =
            cuda::residual_layernorm_backward_on_host(dy, next, sum, w, mean, rstd, rows, h);
        CHECK(again.dweight == out.dweight);
        CHECK(again.dbias == out.dbias);
      }
    }
}

TEST_CASE("cuda: SwiGLU and bias + GELU backward match their references", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(8);
  for (int64_t n : {97, 1025, 1 << 20}) {
    INFO(n);
    const auto dout = random_bf16(size_t(n), rng), gate = random_bf16(size_t(n), rng, 2),
               up = random_bf16(size_t(n), rng);
    const cuda::SwigluGrads out = cuda::swiglu_backward_on_host(dout, gate, up);
    std::vector<double> dgate(static_cast<size_t>(n)), dup(static_cast<size_t>(n));
    std::vector<float> plain_dgate(static_cast<size_t>(n)), plain_dup(static_cast<size_t>(n));
    ref::swiglu_backward<double>(widen(dout), widen(gate), widen(up), dgate, dup);
    ref::swiglu_backward<float>(floats(dout), floats(gate), floats(up), plain_dgate, plain_dup);
    check_error(relative_error(widen(out.dgate), dgate), relative_error(bf16_rounded(plain_dgate), dgate),
                1e-2);
    check_error(relative_error(widen(out.dup), dup), relative_error(bf16_rounded(plain_dup), dup), 1e-2);
  }
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 97}, {5, 1025}, {256, 4096}, {9000, 97}}) {
    INFO(rows << " x " << cols);
    const auto dout = random_bf16(size_t(rows * cols), rng), x = random_bf16(size_t(rows * cols), rng, 2),
               bias = random_bf16(size_t(cols), rng);
    const cuda::BiasGeluGrads out = cuda::bias_gelu_backward_on_host(dout, x, bias, rows, cols);
    std::vector<double> in(x.size()), dx(x.size()), dbias(static_cast<size_t>(cols), 0.0);
    std::vector<float> in_f(x.size()), plain_dx(x.size()), plain_dbias(static_cast<size_t>(cols), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) {
      in_f[i] = from_bf16(x[i]) + from_bf16(bias[i % size_t(cols)]);
      in[i] = double(from_bf16(x[i])) + double(from_bf16(bias[i % size_t(cols)]));
    }
    ref::gelu_backward<double>(widen(dout), in, dx);
    ref::gelu_backward<float>(floats(dout), in_f, plain_dx);
    for (size_t i = 0; i < x.size(); ++i) {  // dbias = Σ_rows dx, the plain one summed in float
      dbias[i % size_t(cols)] += dx[i];
      plain_dbias[i % size_t(cols)] += plain_dx[i];
    }
    check_error(relative_error(widen(out.dx), dx), relative_error(bf16_rounded(plain_dx), dx), 1e-2);
    check_error(relative_error(out.dbias, dbias), relative_error(plain_dbias, dbias), 1e-3);
    if (rows == 9000) CHECK(cuda::bias_gelu_backward_on_host(dout, x, bias, rows, cols).dbias == out.dbias);
  }
}

TEST_CASE("cuda: softmax cross-entropy forward and backward match their references", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(9);
  for (auto [rows, vocab] : {std::pair<int64_t, int64_t>{1, 97}, {5, 1025}, {16, 32000}}) {
    INFO(rows << " x " << vocab);
    const auto logits = random_bf16(size_t(rows * vocab), rng, 3);
    std::vector<int32_t> targets(static_cast<size_t>(rows));
    for (int32_t& t : targets) t = int32_t(rng() % uint32_t(vocab));
    const std::vector<double> wide = widen(logits);
    const std::vector<float> narrow = floats(logits);
    std::vector<double> loss(targets.size());
    std::vector<float> plain_loss(targets.size());
    ref::cross_entropy_forward<double>(wide, targets, rows, vocab, loss);
    ref::cross_entropy_forward<float>(narrow, targets, rows, vocab, plain_loss);
    const std::vector<float> out = cuda::cross_entropy_forward_on_host(logits, targets, vocab);
    check_error(relative_error(out, loss), relative_error(plain_loss, loss), 1e-3);

    std::vector<float> dloss(targets.size());
    std::normal_distribution<float> normal;
    for (float& d : dloss) d = normal(rng);
    std::vector<double> dlogits(logits.size());
    std::vector<float> plain(logits.size());
    ref::cross_entropy_backward<double>(std::vector<double>(dloss.begin(), dloss.end()), wide, targets, rows,
                                        vocab, dlogits);
    ref::cross_entropy_backward<float>(dloss, narrow, targets, rows, vocab, plain);
    const std::vector<uint16_t> grad = cuda::cross_entropy_backward_on_host(dloss, logits, targets, vocab);
    check_error(relative_error(widen(grad), dlogits), relative_error(bf16_rounded(plain), dlogits), 1e-2);
  }
}

TEST_CASE("cuda: the stream update writes 0.5·y + x, the tail past the last 8 included", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(10);
  for (int64_t n : {1, 97, 1025, 1 << 20}) {
    INFO(n);
    const auto x = random_bf16(size_t(n), rng), y = random_bf16(size_t(n), rng);
    std::vector<double> ref(static_cast<size_t>(n));
    std::vector<float> plain(static_cast<size_t>(n));
    for (size_t i = 0; i < size_t(n); ++i) {
      ref[i] = 0.5 * double(from_bf16(y[i])) + double(from_bf16(x[i]));
      plain[i] = 0.5f * from_bf16(y[i]) + from_bf16(x[i]);
    }
    const std::vector<uint16_t> out = cuda::stream_update_on_host(x, y);
    check_error(relative_error(widen(out), ref), relative_error(bf16_rounded(plain), ref), 1e-2);
  }
}
