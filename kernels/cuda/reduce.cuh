// Reductions shared by the CUDA kernels (kernels/cuda, private). A block-wide sum; and column sums
// over rows (the backward passes' dweight, dbias), deterministic and without atomics, in two
// passes: the rows are cut into a number of chunks that depends on the row count alone, one kernel
// writes each (chunk, column)'s partial sum to an fp32 workspace [outputs × chunks × cols], a second
// adds a column's chunks in order. So the same inputs give the same bits run after run, however the
// blocks are scheduled (a fixed order of additions, where atomics' order would vary).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "check.cuh"

namespace simrun::kernels::cuda::detail {

// The sum of x over a one-dimensional block (blockDim.x a multiple of 32), returned to every thread:
// warp shuffles, then one warp over the warps' partials. Safe to call again right after: every
// thread has read `total` before any passes the next call's first barrier.
__device__ inline float block_sum(float x) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  x = threadIdx.x < blockDim.x / 32 ? partial[lane] : 0.0f;
  if (warp == 0)
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  __shared__ float total;
  if (threadIdx.x == 0) total = x;
  __syncthreads();
  return total;
}

// A column tile's block: 32 columns (a warp reads 32 consecutive values of a row) × 8 row lanes.
constexpr int kTileCols = 32;
constexpr int kTileRows = 8;
// Chunks of at least 64 rows, at most 128 chunks (the workspace: 128 × cols floats per output).
constexpr int64_t kMinRowsPerChunk = 64;
constexpr int64_t kMaxRowChunks = 128;

inline int64_t row_chunks(int64_t rows) {
  return std::min((rows + kMinRowsPerChunk - 1) / kMinRowsPerChunk, kMaxRowChunks);
}

inline size_t column_sums_workspace_bytes(int outputs, int64_t rows, int64_t cols) {
  return size_t(outputs) * size_t(row_chunks(rows)) * size_t(cols) * sizeof(float);
}

// Block (x, y) takes columns [32·x, 32·x + 32) of rows [y·per_chunk, (y + 1)·per_chunk) ∩ [0, rows):
// thread (tx, ty) adds term(row, col, acc) over the chunk's rows ty, ty + 8, ..., then lane ty = 0
// adds the 8 lanes in order and writes partials[(k·chunks + y)·cols + col] for each output k.
template <int kOutputs, class Term>
__global__ void column_partials_kernel(Term term, int64_t rows, int64_t cols, int64_t per_chunk,
                                       float* partials) {
  __shared__ float lanes[kOutputs][kTileRows][kTileCols];
  const int64_t col = int64_t(blockIdx.x) * kTileCols + threadIdx.x;
  const int64_t begin = int64_t(blockIdx.y) * per_chunk;
  const int64_t end = begin + per_chunk < rows ? begin + per_chunk : rows;
  float acc[kOutputs];
#pragma unroll
  for (int k = 0; k < kOutputs; ++k) acc[k] = 0.0f;
  if (col < cols)
    for (int64_t row = begin + threadIdx.y; row < end; row += kTileRows) term(row, col, acc);
#pragma unroll
  for (int k = 0; k < kOutputs; ++k) lanes[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
#pragma unroll
  for (int k = 0; k < kOutputs; ++k) {
    float sum = 0.0f;
    for (int lane = 0; lane < kTileRows; ++lane) sum += lanes[k][lane][threadIdx.x];
    partials[(int64_t(k) * gridDim.y + blockIdx.y) * cols + col] = sum;
  }
}

// sums[col] = Σ_chunk partials[chunk·cols + col], the chunks in order (a grid-stride loop).
static __global__ void sum_chunks_kernel(const float* partials, int64_t chunks, int64_t cols, float* sums) {
  for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; col < cols;
       col += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partials[chunk * cols + col];
    sums[col] = sum;
  }
}

// sums[k][col] = Σ_row acc[k] of term(row, col, acc) for rows × cols; `workspace` holds
// column_sums_workspace_bytes(kOutputs, rows, cols). Term is a functor with
// `__device__ void operator()(int64_t row, int64_t col, float* acc) const` adding to acc[0..kOutputs),
// called once for each (row, col) (it may write that element's output too). No rows: zero sums.
template <int kOutputs, class Term>
void column_sums(const Term& term, int64_t rows, int64_t cols, float* workspace,
                 const std::array<float*, kOutputs>& sums, cudaStream_t stream) {
  if (cols == 0) return;
  if (rows == 0) {
    for (float* s : sums) SIMRUN_CUDA_CHECK(cudaMemsetAsync(s, 0, sizeof(float) * size_t(cols), stream));
    return;
  }
  const int64_t chunks = row_chunks(rows), per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(unsigned((cols + kTileCols - 1) / kTileCols), unsigned(chunks));
  column_partials_kernel<kOutputs>
      <<<grid, dim3(kTileCols, kTileRows), 0, stream>>>(term, rows, cols, per_chunk, workspace);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
  constexpr int kThreads = 256;
  const unsigned blocks = unsigned(std::min<int64_t>((cols + kThreads - 1) / kThreads, 65535));
  for (int k = 0; k < kOutputs; ++k) {
    sum_chunks_kernel<<<blocks, kThreads, 0, stream>>>(workspace + k * chunks * cols, chunks, cols,
                                                       sums[size_t(k)]);
    SIMRUN_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace simrun::kernels::cuda::detail
