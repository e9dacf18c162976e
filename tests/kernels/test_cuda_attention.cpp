// The CUDA FlashAttention forward and backward (kernels/cuda/flash_attention.cu) against the
// plain C++ reference (ref::attention_forward / attention_backward) on fresh random inputs: odd
// sequence lengths (97, 1025), head_dim 24, 64, 80 and 128, grouped-query and multi-head, causal
// and not, outputs poisoned before each run. The relative error ‖out − ref‖ / ‖ref‖ (ref in
// double on the bf16 inputs) below 1e-2 and at most twice that of a plain same-precision
// implementation (the float reference, its outputs rounded to bf16). Tagged [gpu]; each case
// skips, with a warning, without a device. The refusal of an unsupported head_dim runs anywhere.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_test_util.hpp"
#include "simrun/kernels/bf16.hpp"
#include "simrun/kernels/cuda.hpp"
#include "simrun/kernels/ref.hpp"

using namespace simrun::kernels;

using namespace simrun::kernels::test;

namespace {

ref::AttentionShape shape_of(const cuda::AttentionDims& d) {
  return {d.batch, d.q_heads, d.kv_heads, d.seq, d.head_dim, d.causal};
}

size_t q_size(const cuda::AttentionDims& d) { return size_t(d.batch * d.q_heads * d.seq * d.head_dim); }
size_t kv_size(const cuda::AttentionDims& d) { return size_t(d.batch * d.kv_heads * d.seq * d.head_dim); }
size_t lse_size(const cuda::AttentionDims& d) { return size_t(d.batch * d.q_heads * d.seq); }

// batch, q_heads, kv_heads, seq, head_dim, causal: odd lengths, one or several tiles of 64, the
// padded head_dims (24 → 32, 80) and the aligned ones, GQA (a group of 4 or 2) and MHA.
const std::vector<cuda::AttentionDims> kShapes = {
    {2, 8, 2, 97, 64, true},    {2, 4, 4, 97, 80, false},   {2, 4, 2, 300, 80, true},
    {2, 4, 1, 1025, 128, true}, {2, 2, 2, 1025, 64, false}, {2, 4, 2, 130, 128, false},
    {2, 2, 1, 65, 24, true},
};

std::string describe(const cuda::AttentionDims& d) {
  return "batch " + std::to_string(d.batch) + ", heads " + std::to_string(d.q_heads) + "/" +
         std::to_string(d.kv_heads) + ", seq " + std::to_string(d.seq) + ", head_dim " +
         std::to_string(d.head_dim) + (d.causal ? ", causal" : ", not causal");
}

}  // namespace

TEST_CASE("cuda: FlashAttention forward matches its reference", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(11);
  for (const cuda::AttentionDims& dims : kShapes) {
    INFO(describe(dims));
    const auto q = random_bf16(q_size(dims), rng), k = random_bf16(kv_size(dims), rng),
               v = random_bf16(kv_size(dims), rng);
    const cuda::FlashAttentionOut out = cuda::flash_attention_forward_on_host(dims, q, k, v);
    std::vector<double> o(q.size()), lse(lse_size(dims));
    std::vector<float> plain_o(q.size()), plain_lse(lse_size(dims));
    ref::attention_forward<double>(shape_of(dims), widen(q), widen(k), widen(v), o, lse);
    ref::attention_forward<float>(shape_of(dims), floats(q), floats(k), floats(v), plain_o, plain_lse);
    check_error(relative_error(widen(out.o), o), relative_error(bf16_rounded(plain_o), o), 1e-2);
    CHECK(relative_error(out.lse, lse) < 1e-5);
  }
}

TEST_CASE("cuda: FlashAttention backward matches its reference", "[kernels][gpu]") {
  if (no_device()) return;
  std::mt19937 rng(12);
  for (const cuda::AttentionDims& dims : kShapes) {
    INFO(describe(dims));
    const auto q = random_bf16(q_size(dims), rng), k = random_bf16(kv_size(dims), rng),
               v = random_bf16(kv_size(dims), rng), d_o = random_bf16(q_size(dims), rng);
    // The forward's outputs as the backward reads them: o in bf16, lse in fp32 (from the double
    // reference, the same for the kernel and both references).
    std::vector<double> o_ref(q.size()), lse_ref(lse_size(dims));
    ref::attention_forward<double>(shape_of(dims), widen(q), widen(k), widen(v), o_ref, lse_ref);
    std::vector<uint16_t> o(q.size());
    std::vector<float> lse(lse_ref.size());
    for (size_t i = 0; i < o.size(); ++i) o[i] = to_bf16(float(o_ref[i]));
    for (size_t i = 0; i < lse.size(); ++i) lse[i] = float(lse_ref[i]);

    const cuda::FlashAttentionGrads out = cuda::flash_attention_backward_on_host(dims, d_o, q, k, v, o, lse);
    std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
    ref::attention_backward<double>(shape_of(dims), widen(d_o), widen(q), widen(k), widen(v), widen(o),
                                    std::vector<double>(lse.begin(), lse.end()), dq, dk, dv);
    std::vector<float> plain_dq(q.size()), plain_dk(k.size()), plain_dv(v.size());
    ref::attention_backward<float>(shape_of(dims), floats(d_o), floats(q), floats(k), floats(v), floats(o),
                                   lse, plain_dq, plain_dk, plain_dv);
    {
      INFO("dq");
      check_error(relative_error(widen(out.dq), dq), relative_error(bf16_rounded(plain_dq), dq), 1e-2);
    }
    {
      INFO("dk");
      check_error(relative_error(widen(out.dk), dk), relative_error(bf16_rounded(plain_dk), dk), 1e-2);
    }
    {
      INFO("dv");
      check_error(relative_error(widen(out.dv), dv), relative_error(bf16_rounded(plain_dv), dv), 1e-2);
    }
  }
}

TEST_CASE("cuda: FlashAttention refuses a head_dim that is not a multiple of 8 up to 128", "[kernels]") {
  // The shape is checked before any CUDA call: this runs without a device.
  for (int64_t head_dim : {97, 256, 4, 0}) {
    INFO("head_dim " << head_dim);
    const cuda::AttentionDims dims{1, 2, 1, 5, head_dim, true};
    const std::vector<uint16_t> q(q_size(dims)), kv(kv_size(dims));
    const std::vector<float> lse(lse_size(dims));
    CHECK_THROWS_WITH(cuda::flash_attention_forward_on_host(dims, q, kv, kv),
                      Catch::Contains("multiple of 8 from 8 to 128"));
    CHECK_THROWS_AS(cuda::flash_attention_backward_on_host(dims, q, q, kv, kv, q, lse),
                    std::invalid_argument);
    CHECK_THROWS_AS(cuda::flash_attention_backward_workspace_bytes(dims), std::invalid_argument);
  }
  const cuda::AttentionDims uneven_groups{1, 3, 2, 5, 64, true};  // q_heads not a multiple of kv_heads
  CHECK_THROWS_AS(cuda::flash_attention_backward_workspace_bytes(uneven_groups), std::invalid_argument);
}
