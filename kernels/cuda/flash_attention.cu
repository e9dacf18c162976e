// FlashAttention forward and backward (cuda.hpp), as ref::attention_forward / attention_backward:
// o = softmax(q·kᵀ/sqrt(head_dim), causal or not) · v with its log-sum-exp, and dq, dk, dv; bf16
// storage, fp32 math, grouped-query attention (q_heads / kv_heads query heads share a K/V head),
// head_dim a multiple of 8 up to 128 (padded with zeros to 16 for the fragments).
//
// Forward (Dao et al. 2022, arXiv:2205.14135, Algorithm 1, with FlashAttention-2's loop order,
// Dao 2023, arXiv:2307.08691, Algorithm 1): a block of 4 warps owns 64 query rows of one head,
// each warp 16; it walks the 64-key tiles of K and V staged in shared memory. S = Q·Kᵀ and
// O += P·V run on the tensor cores (nvcuda::wmma, bf16 16×16×16, fp32 accumulators); Q's
// fragments and O's accumulators stay in registers. S goes through shared memory (fp32), where
// the warp owning those rows keeps the online softmax's running max and sum (two lanes a row)
// and writes P in bf16; O's rows are rescaled in registers through a map of the accumulator's
// elements to their rows (an fp32 fragment loaded from a matrix of row indices: wmma's layout
// is unspecified but the same for every accumulator fragment).
// Backward (FlashAttention-2, Algorithm 2): a pre-kernel computes D = rowsum(dO ∘ O); the main
// kernel's block owns 64 keys of a K/V head and loops over its group's query heads and their
// query tiles (so dK, dV sum the group without atomics), recomputing P from lse: S = Q·Kᵀ and
// dP = dO·Vᵀ, dS = P ∘ (dP − D), dV += Pᵀ·dO, dK += dSᵀ·Q, all on wmma (P and dS in bf16, as
// FlashAttention-2), dK and dV accumulated in registers; dQ += dS·K is added with fp32 atomicAdd
// into the workspace's accumulator, which a last kernel scales and rounds to bf16.
//
// Test: cmake --build build --target test_kernels_cuda_attention && build/tests/test_kernels_cuda_attention
// (tests/kernels/test_cuda_attention.cpp; the GPU cases skip without a device). Throughput: not
// measured (no device lent); exec/gpu_check.sh times it against the cuBLASLt bf16 GEMM rate.
#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "check.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;
using bf16 = __nv_bfloat16;

constexpr int kTile = 64;  // query rows and keys of a tile, in both kernels
constexpr int kWarps = 4;  // warp w owns rows [16w, 16w + 16) of a tile
constexpr int kThreads = 32 * kWarps;
static_assert(kTile == 16 * kWarps, "a warp owns 16 rows of a tile");
constexpr int kLdF = kTile + 4;  // leading dimension of the fp32 tiles (S, dP, the warps' scratch)
constexpr int kLdP = kTile + 8;  // of the bf16 P and dS tiles
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragAt = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;  // of a transposed tile
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBt = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;  // of a transposed tile
using FragAcc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

struct Params {
  int64_t seq;
  int head_dim, q_heads, kv_heads;
  bool causal;
  float scale;       // 1/sqrt(head_dim)
  float scale_log2;  // scale · log2(e): the exponentials are exp2
};

constexpr size_t align128(size_t bytes) { return (bytes + 127) / 128 * 128; }

// Shared memory of a block, kDim the padded head_dim (a multiple of 16). Each region starts
// 128-byte aligned, and every fragment's offset inside one is a multiple of 32 bytes, as
// wmma::load_matrix_sync and store_matrix_sync need.
template <int kDim>
struct Layout {
  static constexpr int kLdB = kDim + 8;  // leading dimension of the bf16 Q, K, V, dO tiles
  static constexpr size_t kTileB = align128(sizeof(bf16) * kTile * kLdB);
  static constexpr size_t kTileF = align128(sizeof(float) * kTile * kLdF);
  static constexpr size_t kTileP = align128(sizeof(bf16) * kTile * kLdP);
  static constexpr size_t kRowF = align128(sizeof(float) * kTile);
  // Q, K, V | S | P | a factor per row.
  static constexpr size_t kForwardBytes = 3 * kTileB + kTileF + kTileP + kRowF;
  // K, V, Q, dO | S, dP | P, dS | lse, D per row.
  static constexpr size_t kBackwardBytes = 4 * kTileB + 2 * kTileF + 2 * kTileP + 2 * kRowF;
};

// Rows [0, rows) of a row-major [·, head_dim] bf16 slice into a kTile × kDim shared tile of
// leading dimension ld, in 16-byte chunks; rows from `rows` on and columns from head_dim on are
// zeros (they add nothing to the products).
template <int kDim>
__device__ void load_tile(bf16* dst, int ld, const bf16* src, int64_t rows, int head_dim) {
  constexpr int kChunks = kDim / 8;
  for (int idx = threadIdx.x; idx < kTile * kChunks; idx += kThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    uint4 chunk = make_uint4(0, 0, 0, 0);
    if (r < rows && c * 8 < head_dim)
      chunk = *reinterpret_cast<const uint4*>(src + int64_t(r) * head_dim + c * 8);
    *reinterpret_cast<uint4*>(dst + r * ld + c * 8) = chunk;
  }
}

// Whether query row qi sees key kj.
__device__ bool visible(const Params& p, int64_t qi, int64_t kj) {
  return kj < p.seq && (!p.causal || kj <= qi);
}

// A warp's 16×16 accumulator block, times `factor`, into rows [0, rows) and columns
// [col0, col0 + 16) ∩ [0, cols) of a row-major bf16 matrix of `cols` columns (out at its first
// row), through the warp's 16 × kLdF fp32 scratch.
__device__ void store_block(const FragAcc& acc, float* scratch, bf16* out, int64_t rows, int cols, int col0,
                            float factor) {
  wmma::store_matrix_sync(scratch, acc, kLdF, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x % 32; e < 16 * 16; e += 32) {
    const int r = e / 16, c = e % 16;
    if (r < rows && col0 + c < cols)
      out[int64_t(r) * cols + col0 + c] = __float2bfloat16(scratch[r * kLdF + c] * factor);
  }
  __syncwarp();
}

// The same block added (atomicAdd) into an fp32 matrix.
__device__ void add_block(const FragAcc& acc, float* scratch, float* out, int64_t rows, int cols, int col0) {
  wmma::store_matrix_sync(scratch, acc, kLdF, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x % 32; e < 16 * 16; e += 32) {
    const int r = e / 16, c = e % 16;
    if (r < rows && col0 + c < cols) atomicAdd(out + int64_t(r) * cols + col0 + c, scratch[r * kLdF + c]);
  }
  __syncwarp();
}

// Multiplies row i of the 16-row accumulators acc[0..n) by factor[i]; row_of.x[e] is element e's row.
template <int n>
__device__ void scale_rows(FragAcc (&acc)[n], const FragAcc& row_of, const float* factor) {
  float element_factor[FragAcc::num_elements];
  for (int e = 0; e < FragAcc::num_elements; ++e) element_factor[e] = factor[int(row_of.x[e])];
  for (int j = 0; j < n; ++j)
    for (int e = 0; e < FragAcc::num_elements; ++e) acc[j].x[e] *= element_factor[e];
}

// Grid: (batch · q_heads, query tiles); block: kThreads.
template <int kDim>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(Params p, const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse) {
  using L = Layout<kDim>;
  constexpr int kLdB = L::kLdB, kSteps = kDim / 16;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* q_s = reinterpret_cast<bf16*>(smem);
  bf16* k_s = reinterpret_cast<bf16*>(smem + L::kTileB);
  bf16* v_s = reinterpret_cast<bf16*>(smem + 2 * L::kTileB);
  float* s_s = reinterpret_cast<float*>(smem + 3 * L::kTileB);
  bf16* p_s = reinterpret_cast<bf16*>(smem + 3 * L::kTileB + L::kTileF);
  float* row_factor_s = reinterpret_cast<float*>(smem + 3 * L::kTileB + L::kTileF + L::kTileP);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.x;  // batch · q_heads + query head
  const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
  const int64_t bkv = b * p.kv_heads + h / (p.q_heads / p.kv_heads);  // its K/V head
  const int q_tile = int(gridDim.y - 1 - blockIdx.y);                 // the longest causal rows first
  const int64_t q0 = int64_t(q_tile) * kTile, row0 = q0 + 16 * warp;  // the block's, the warp's first row
  const int hd = p.head_dim;
  const bf16* kh = k + bkv * p.seq * hd;
  const bf16* vh = v + bkv * p.seq * hd;
  float* scratch = s_s + 16 * warp * kLdF;  // the warp's 16 rows of S
  float* row_factor = row_factor_s + 16 * warp;
  bf16* p_rows = p_s + 16 * warp * kLdP;

  load_tile<kDim>(q_s, kLdB, q + (bh * p.seq + q0) * hd, p.seq - q0, hd);
  for (int e = lane; e < 16 * 16; e += 32) scratch[(e / 16) * kLdF + e % 16] = float(e / 16);
  __syncthreads();
  FragA q_frag[kSteps];
  for (int kk = 0; kk < kSteps; ++kk)
    wmma::load_matrix_sync(q_frag[kk], q_s + 16 * warp * kLdB + 16 * kk, kLdB);
  FragAcc row_of;  // row_of.x[i]: the row of element i of every accumulator fragment
  wmma::load_matrix_sync(row_of, scratch, kLdF, wmma::mem_row_major);
  FragAcc o_acc[kSteps];
  for (int n = 0; n < kSteps; ++n) wmma::fill_fragment(o_acc[n], 0.0f);

  // Lanes 2r and 2r + 1 keep row r's running max m (in log2 units) and sum l, each over the
  // even or odd columns of a tile.
  const int r = lane / 2, half = lane % 2;
  const int64_t qi = row0 + r;
  float m = -INFINITY, l = 0.0f;
  const int key_tiles = p.causal ? q_tile + 1 : int((p.seq + kTile - 1) / kTile);
  for (int t = 0; t < key_tiles; ++t) {
    const int64_t k0 = int64_t(t) * kTile;
    __syncthreads();  // the previous tile's K, V and P are read
    load_tile<kDim>(k_s, kLdB, kh + k0 * hd, p.seq - k0, hd);
    load_tile<kDim>(v_s, kLdB, vh + k0 * hd, p.seq - k0, hd);
    __syncthreads();

    // S = Q·Kᵀ, the warp's 16 rows × 64 keys: Kᵀ is K read column-major.
    for (int j = 0; j < kTile / 16; ++j) {
      FragAcc s_acc;
      wmma::fill_fragment(s_acc, 0.0f);
      for (int kk = 0; kk < kSteps; ++kk) {
        FragBt k_frag;
        wmma::load_matrix_sync(k_frag, k_s + 16 * j * kLdB + 16 * kk, kLdB);
        wmma::mma_sync(s_acc, q_frag[kk], k_frag, s_acc);
      }
      wmma::store_matrix_sync(scratch + 16 * j, s_acc, kLdF, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax of row r: the new max, P = exp(S − max) in bf16, the old terms' factor.
    const float* s_row = scratch + r * kLdF;
    float tile_max = -INFINITY;
    for (int c = half; c < kTile; c += 2)
      if (visible(p, qi, k0 + c)) tile_max = fmaxf(tile_max, s_row[c] * p.scale_log2);
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float base = m_new == -INFINITY ? 0.0f : m_new;  // a row that sees no key yet stays 0
    float sum = 0.0f;
    for (int c = half; c < kTile; c += 2) {
      const float e = visible(p, qi, k0 + c) ? exp2f(s_row[c] * p.scale_log2 - base) : 0.0f;
      sum += e;
      p_rows[r * kLdP + c] = __float2bfloat16(e);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    const float alpha = exp2f(m - base);
    l = l * alpha + sum;
    m = m_new;
    if (half == 0) row_factor[r] = alpha;
    __syncwarp();

    // O = diag(alpha)·O + P·V.
    scale_rows(o_acc, row_of, row_factor);
    FragA p_frag[kTile / 16];
    for (int kk = 0; kk < kTile / 16; ++kk) wmma::load_matrix_sync(p_frag[kk], p_rows + 16 * kk, kLdP);
    for (int n = 0; n < kSteps; ++n)
      for (int kk = 0; kk < kTile / 16; ++kk) {
        FragB v_frag;
        wmma::load_matrix_sync(v_frag, v_s + 16 * kk * kLdB + 16 * n, kLdB);
        wmma::mma_sync(o_acc[n], p_frag[kk], v_frag, o_acc[n]);
      }
  }

  // o = O / l; lse = m·ln 2 + ln l (every row saw key 0, so l > 0).
  __syncwarp();  // row_factor's last reads are done
  if (half == 0) {
    row_factor[r] = 1.0f / l;
    if (qi < p.seq) lse[bh * p.seq + qi] = (m + log2f(l)) * kLn2;
  }
  __syncwarp();
  bf16* o_rows = o + (bh * p.seq + row0) * hd;
  scale_rows(o_acc, row_of, row_factor);
  for (int n = 0; n < kSteps; ++n) store_block(o_acc[n], scratch, o_rows, p.seq - row0, hd, 16 * n, 1.0f);
}

// D = rowsum(dO ∘ O), a warp per row of [rows, head_dim].
__global__ void attention_delta_kernel(const bf16* d_o, const bf16* o, int64_t rows, int head_dim,
                                       float* delta) {
  const int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp
  float sum = 0.0f;
  for (int d = threadIdx.x % 32; d < head_dim; d += 32)
    sum += __bfloat162float(d_o[row * head_dim + d]) * __bfloat162float(o[row * head_dim + d]);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) delta[row] = sum;
}

// Grid: (batch · kv_heads, key tiles); block: kThreads.
template <int kDim>
__global__ void __launch_bounds__(kThreads)
    flash_backward_kernel(Params p, const bf16* d_o, const bf16* q, const bf16* k, const bf16* v,
                          const float* lse, const float* delta, float* dq_accum, bf16* dk, bf16* dv) {
  using L = Layout<kDim>;
  constexpr int kLdB = L::kLdB, kSteps = kDim / 16;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* k_s = reinterpret_cast<bf16*>(smem);
  bf16* v_s = reinterpret_cast<bf16*>(smem + L::kTileB);
  bf16* q_s = reinterpret_cast<bf16*>(smem + 2 * L::kTileB);
  bf16* do_s = reinterpret_cast<bf16*>(smem + 3 * L::kTileB);
  float* s_s = reinterpret_cast<float*>(smem + 4 * L::kTileB);
  float* dp_s = reinterpret_cast<float*>(smem + 4 * L::kTileB + L::kTileF);
  bf16* p_s = reinterpret_cast<bf16*>(smem + 4 * L::kTileB + 2 * L::kTileF);
  bf16* ds_s = reinterpret_cast<bf16*>(smem + 4 * L::kTileB + 2 * L::kTileF + L::kTileP);
  float* lse_s = reinterpret_cast<float*>(smem + 4 * L::kTileB + 2 * L::kTileF + 2 * L::kTileP);
  float* delta_s = reinterpret_cast<float*>(smem + 4 * L::kTileB + 2 * L::kTileF + 2 * L::kTileP + L::kRowF);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bkv = blockIdx.x;  // batch · kv_heads + K/V head
  const int64_t b = bkv / p.kv_heads, group = p.q_heads / p.kv_heads;
  const int k_tile = int(blockIdx.y);  // key tile 0, the longest under the causal mask, first
  const int64_t k0 = int64_t(k_tile) * kTile;
  const int hd = p.head_dim;
  float* scratch = s_s + 16 * warp * kLdF;  // the warp's 16 rows of S, free once P is written

  load_tile<kDim>(k_s, kLdB, k + (bkv * p.seq + k0) * hd, p.seq - k0, hd);
  load_tile<kDim>(v_s, kLdB, v + (bkv * p.seq + k0) * hd, p.seq - k0, hd);
  FragAcc dk_acc[kSteps], dv_acc[kSteps];  // the warp's 16 keys
  for (int n = 0; n < kSteps; ++n) {
    wmma::fill_fragment(dk_acc[n], 0.0f);
    wmma::fill_fragment(dv_acc[n], 0.0f);
  }

  const int r = lane / 2, half = lane % 2;  // lanes 2r and 2r + 1: row r, even or odd columns
  const int query_tiles = int((p.seq + kTile - 1) / kTile);
  for (int64_t g = 0; g < group; ++g) {
    const int64_t bh = b * p.q_heads + (bkv % p.kv_heads) * group + g;  // the group's query heads
    for (int q_tile = p.causal ? k_tile : 0; q_tile < query_tiles; ++q_tile) {
      const int64_t q0 = int64_t(q_tile) * kTile, row0 = q0 + 16 * warp;
      __syncthreads();  // the previous tile's Q, dO, P, dS, lse and D are read
      load_tile<kDim>(q_s, kLdB, q + (bh * p.seq + q0) * hd, p.seq - q0, hd);
      load_tile<kDim>(do_s, kLdB, d_o + (bh * p.seq + q0) * hd, p.seq - q0, hd);
      for (int i = threadIdx.x; i < kTile; i += kThreads) {
        const bool in = q0 + i < p.seq;
        lse_s[i] = in ? lse[bh * p.seq + q0 + i] * kLog2e : 0.0f;
        delta_s[i] = in ? delta[bh * p.seq + q0 + i] : 0.0f;
      }
      __syncthreads();

      // S = Q·Kᵀ and dP = dO·Vᵀ, the warp's 16 query rows × 64 keys.
      for (int j = 0; j < kTile / 16; ++j) {
        FragAcc s_acc, dp_acc;
        wmma::fill_fragment(s_acc, 0.0f);
        wmma::fill_fragment(dp_acc, 0.0f);
        for (int kk = 0; kk < kSteps; ++kk) {
          FragA a;
          FragBt bt;
          wmma::load_matrix_sync(a, q_s + 16 * warp * kLdB + 16 * kk, kLdB);
          wmma::load_matrix_sync(bt, k_s + 16 * j * kLdB + 16 * kk, kLdB);
          wmma::mma_sync(s_acc, a, bt, s_acc);
          wmma::load_matrix_sync(a, do_s + 16 * warp * kLdB + 16 * kk, kLdB);
          wmma::load_matrix_sync(bt, v_s + 16 * j * kLdB + 16 * kk, kLdB);
          wmma::mma_sync(dp_acc, a, bt, dp_acc);
        }
        wmma::store_matrix_sync(s_s + 16 * warp * kLdF + 16 * j, s_acc, kLdF, wmma::mem_row_major);
        wmma::store_matrix_sync(dp_s + 16 * warp * kLdF + 16 * j, dp_acc, kLdF, wmma::mem_row_major);
      }
      __syncwarp();

      // P = exp(S·scale − lse), masked; dS = P ∘ (dP − D).
      const int row = 16 * warp + r;
      const int64_t qi = q0 + row;
      for (int c = half; c < kTile; c += 2) {
        const bool in = qi < p.seq && visible(p, qi, k0 + c);
        const float pv = in ? exp2f(s_s[row * kLdF + c] * p.scale_log2 - lse_s[row]) : 0.0f;
        p_s[row * kLdP + c] = __float2bfloat16(pv);
        ds_s[row * kLdP + c] = __float2bfloat16(pv * (dp_s[row * kLdF + c] - delta_s[row]));
      }
      __syncthreads();  // every row's P and dS, for the keys' products

      // dV += Pᵀ·dO and dK += dSᵀ·Q, the warp's 16 keys: Pᵀ and dSᵀ are P and dS read column-major.
      for (int qq = 0; qq < kTile / 16; ++qq) {
        FragAt pt, dst;
        wmma::load_matrix_sync(pt, p_s + 16 * qq * kLdP + 16 * warp, kLdP);
        wmma::load_matrix_sync(dst, ds_s + 16 * qq * kLdP + 16 * warp, kLdP);
        for (int n = 0; n < kSteps; ++n) {
          FragB bm;
          wmma::load_matrix_sync(bm, do_s + 16 * qq * kLdB + 16 * n, kLdB);
          wmma::mma_sync(dv_acc[n], pt, bm, dv_acc[n]);
          wmma::load_matrix_sync(bm, q_s + 16 * qq * kLdB + 16 * n, kLdB);
          wmma::mma_sync(dk_acc[n], dst, bm, dk_acc[n]);
        }
      }

      // dQ += dS·K, the warp's 16 query rows, into the fp32 accumulator (scaled at the end).
      FragA ds_frag[kTile / 16];
      for (int kk = 0; kk < kTile / 16; ++kk)
        wmma::load_matrix_sync(ds_frag[kk], ds_s + 16 * warp * kLdP + 16 * kk, kLdP);
      float* dq_rows = dq_accum + (bh * p.seq + row0) * hd;
      for (int n = 0; n < kSteps; ++n) {
        FragAcc dq_acc;
        wmma::fill_fragment(dq_acc, 0.0f);
        for (int kk = 0; kk < kTile / 16; ++kk) {
          FragB k_frag;
          wmma::load_matrix_sync(k_frag, k_s + 16 * kk * kLdB + 16 * n, kLdB);
          wmma::mma_sync(dq_acc, ds_frag[kk], k_frag, dq_acc);
        }
        add_block(dq_acc, scratch, dq_rows, p.seq - row0, hd, 16 * n);
      }
    }
  }

  const int64_t key0 = k0 + 16 * warp;  // the warp's first key
  for (int n = 0; n < kSteps; ++n) {
    store_block(dk_acc[n], scratch, dk + (bkv * p.seq + key0) * hd, p.seq - key0, hd, 16 * n, p.scale);
    store_block(dv_acc[n], scratch, dv + (bkv * p.seq + key0) * hd, p.seq - key0, hd, 16 * n, 1.0f);
  }
}

// dq = scale · the fp32 accumulator, in bf16.
__global__ void dq_convert_kernel(const float* dq_accum, int64_t n, float scale, bf16* dq) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dq[i] = __float2bfloat16(dq_accum[i] * scale);
}

// The shape's rules, checked before any CUDA call (so a refused shape throws without a device).
void check_dims(const AttentionDims& d) {
  if (d.head_dim < 8 || d.head_dim > 128 || d.head_dim % 8 != 0)
    throw std::invalid_argument("flash attention: head_dim " + std::to_string(d.head_dim) +
                                " is not supported: it must be a multiple of 8 from 8 to 128");
  if (d.batch < 1 || d.q_heads < 1 || d.kv_heads < 1 || d.seq < 1 || d.q_heads % d.kv_heads != 0)
    throw std::invalid_argument(
        "flash attention: batch, heads and seq must be >= 1, and q_heads a multiple of kv_heads");
  if ((d.seq + kTile - 1) / kTile > 65535 || d.batch * d.q_heads > (int64_t(1) << 31) - 1)
    throw std::invalid_argument("flash attention: seq over 4M tokens or batch · q_heads over 2^31 - 1");
}

// The tiles' 16-byte loads: every tensor (and the workspace) 16-byte aligned.
template <class... T>
void check_aligned(const T*... ptrs) {
  if (((reinterpret_cast<uintptr_t>(ptrs) % 16 != 0) || ...))
    throw std::invalid_argument("flash attention: a tensor or the workspace is not 16-byte aligned");
}

Params make_params(const AttentionDims& d) {
  const double scale = 1.0 / std::sqrt(double(d.head_dim));
  Params p{};
  p.seq = d.seq;
  p.head_dim = int(d.head_dim);
  p.q_heads = int(d.q_heads);
  p.kv_heads = int(d.kv_heads);
  p.causal = d.causal;
  p.scale = float(scale);
  p.scale_log2 = float(scale * 1.4426950408889634);
  return p;
}

unsigned tiles(int64_t seq) { return unsigned((seq + kTile - 1) / kTile); }

// f(std::integral_constant<int, kDim>), kDim head_dim rounded up to a multiple of 16 (head_dim ≤ 128,
// check_dims).
template <int kDim = 16, class F>
void with_padded_dim(int64_t head_dim, F&& f) {
  if constexpr (kDim < 128)
    if (head_dim > kDim) return with_padded_dim<kDim + 16>(head_dim, f);
  f(std::integral_constant<int, kDim>{});
}

template <class Kernel>
void allow_shared_bytes(Kernel kernel, size_t bytes, const char* what) {
  SIMRUN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

const bf16* bf(const uint16_t* ptr) { return reinterpret_cast<const bf16*>(ptr); }
bf16* bf(uint16_t* ptr) { return reinterpret_cast<bf16*>(ptr); }

size_t q_elements(const AttentionDims& d) { return size_t(d.batch * d.q_heads * d.seq * d.head_dim); }
size_t kv_elements(const AttentionDims& d) { return size_t(d.batch * d.kv_heads * d.seq * d.head_dim); }
size_t lse_elements(const AttentionDims& d) { return size_t(d.batch * d.q_heads * d.seq); }

void check_size(size_t got, size_t want, const char* name) {
  if (got != want)
    throw std::invalid_argument(std::string("flash attention: ") + name + " holds " + std::to_string(got) +
                                " values, the shape says " + std::to_string(want));
}

}  // namespace

void flash_attention_forward(const AttentionDims& dims, const uint16_t* q, const uint16_t* k,
                             const uint16_t* v, uint16_t* o, float* lse, void* stream) {
  check_dims(dims);
  check_aligned(q, k, v, o);
  const Params p = make_params(dims);
  const dim3 grid(unsigned(dims.batch * dims.q_heads), tiles(dims.seq));
  with_padded_dim(dims.head_dim, [&](auto dim) {
    constexpr int kDim = decltype(dim)::value;
    constexpr size_t bytes = Layout<kDim>::kForwardBytes;
    allow_shared_bytes(flash_forward_kernel<kDim>, bytes, "flash_attention_forward shared memory");
    flash_forward_kernel<kDim>
        <<<grid, kThreads, bytes, detail::as_stream(stream)>>>(p, bf(q), bf(k), bf(v), bf(o), lse);
  });
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

size_t flash_attention_backward_workspace_bytes(const AttentionDims& dims) {
  check_dims(dims);
  return sizeof(float) * (q_elements(dims) + lse_elements(dims));  // dq's accumulator, then D
}

void flash_attention_backward(const AttentionDims& dims, const uint16_t* d_o, const uint16_t* q,
                              const uint16_t* k, const uint16_t* v, const uint16_t* o, const float* lse,
                              uint16_t* dq, uint16_t* dk, uint16_t* dv, float* workspace, void* stream) {
  check_dims(dims);
  check_aligned(d_o, q, k, v, o, dq, dk, dv, workspace);
  const Params p = make_params(dims);
  const cudaStream_t s = detail::as_stream(stream);
  const size_t n_q = q_elements(dims);
  const auto rows = int64_t(lse_elements(dims));
  float* dq_accum = workspace;
  float* delta = workspace + n_q;

  SIMRUN_CUDA_CHECK(cudaMemsetAsync(dq_accum, 0, sizeof(float) * n_q, s));
  attention_delta_kernel<<<unsigned((rows + kWarps - 1) / kWarps), kThreads, 0, s>>>(bf(d_o), bf(o), rows,
                                                                                     p.head_dim, delta);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
  const dim3 grid(unsigned(dims.batch * dims.kv_heads), tiles(dims.seq));
  with_padded_dim(dims.head_dim, [&](auto dim) {
    constexpr int kDim = decltype(dim)::value;
    constexpr size_t bytes = Layout<kDim>::kBackwardBytes;
    allow_shared_bytes(flash_backward_kernel<kDim>, bytes, "flash_attention_backward shared memory");
    flash_backward_kernel<kDim>
        <<<grid, kThreads, bytes, s>>>(p, bf(d_o), bf(q), bf(k), bf(v), lse, delta, dq_accum, bf(dk), bf(dv));
  });
  SIMRUN_CUDA_CHECK(cudaGetLastError());
  constexpr int kConvertThreads = 256;
  const auto convert_blocks =
      unsigned(std::min<int64_t>((int64_t(n_q) + kConvertThreads - 1) / kConvertThreads, 65535 * 8));
  dq_convert_kernel<<<convert_blocks, kConvertThreads, 0, s>>>(dq_accum, int64_t(n_q), p.scale, bf(dq));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

FlashAttentionOut flash_attention_forward_on_host(const AttentionDims& dims, const std::vector<uint16_t>& q,
                                                  const std::vector<uint16_t>& k,
                                                  const std::vector<uint16_t>& v) {
  check_dims(dims);
  check_size(q.size(), q_elements(dims), "q");
  check_size(k.size(), kv_elements(dims), "k");
  check_size(v.size(), kv_elements(dims), "v");
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> dq(q.data(), q.size()), dk(k.data(), k.size()), dv(v.data(), v.size()),
      d_out(q.size());
  DeviceBuffer<float> d_lse(lse_elements(dims));
  d_out.poison();
  d_lse.poison();
  flash_attention_forward(dims, dq.ptr, dk.ptr, dv.ptr, d_out.ptr, d_lse.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {d_out.to_host(), d_lse.to_host()};
}

FlashAttentionGrads flash_attention_backward_on_host(
    const AttentionDims& dims, const std::vector<uint16_t>& d_o, const std::vector<uint16_t>& q,
    const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, const std::vector<uint16_t>& o,
    const std::vector<float>& lse) {
  check_dims(dims);
  check_size(d_o.size(), q_elements(dims), "d_o");
  check_size(q.size(), q_elements(dims), "q");
  check_size(k.size(), kv_elements(dims), "k");
  check_size(v.size(), kv_elements(dims), "v");
  check_size(o.size(), q_elements(dims), "o");
  check_size(lse.size(), lse_elements(dims), "lse");
  using detail::DeviceBuffer;
  DeviceBuffer<uint16_t> ddo(d_o.data(), d_o.size()), dq_in(q.data(), q.size()), dk_in(k.data(), k.size()),
      dv_in(v.data(), v.size()), d_out(o.data(), o.size());
  DeviceBuffer<float> d_lse(lse.data(), lse.size());
  DeviceBuffer<uint16_t> dq(q.size()), dk(k.size()), dv(v.size());
  DeviceBuffer<float> workspace(flash_attention_backward_workspace_bytes(dims) / sizeof(float));
  dq.poison();
  dk.poison();
  dv.poison();
  workspace.poison();  // the backward zeroes its accumulator itself
  flash_attention_backward(dims, ddo.ptr, dq_in.ptr, dk_in.ptr, dv_in.ptr, d_out.ptr, d_lse.ptr, dq.ptr,
                           dk.ptr, dv.ptr, workspace.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return {dq.to_host(), dk.to_host(), dv.to_host()};
}

}  // namespace simrun::kernels::cuda
