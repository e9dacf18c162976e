// Softmax cross-entropy forward and backward over rows of bf16 logits (cuda.hpp), as
// ref::cross_entropy_forward / _backward: loss = logsumexp(row) − row[target], dlogits =
// (softmax(row) − onehot(target))·dloss. One block per row; the block reduces the row's maximum,
// then Σ exp(x − max), in fp32 (warp shuffles, then one warp over the warps' partials). The
// backward recomputes both rather than keeping the softmax (Megatron's fused vocab-parallel
// cross-entropy keeps only the row's statistics too). Test: tests/kernels/test_cuda_kernels.cpp
// (a device needed). Throughput: not measured (no device lent); exec/gpu_check.sh times it
// against copy bandwidth.
#include <cuda_bf16.h>

#include <cfloat>

#include "check.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// The block's reduction of x by `op` (max or sum), returned to every thread.
template <class Op>
__device__ float block_reduce(float x, Op op, float identity) {
  __shared__ float partial[32];
  __shared__ float total;
  for (int offset = 16; offset > 0; offset /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = x;
  __syncthreads();
  if (warp == 0) {
    x = lane < int(blockDim.x / 32) ? partial[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, offset));
    if (lane == 0) total = x;
  }
  __syncthreads();
  const float result = total;
  __syncthreads();  // `total` and `partial` are reused by the next reduction
  return result;
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// The row's maximum and log Σ exp(x − max).
struct RowStats {
  float max, log_sum;
};

__device__ RowStats row_stats(const __nv_bfloat16* row, int64_t vocab) {
  float top = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) top = fmaxf(top, __bfloat162float(row[i]));
  top = block_reduce(top, Max{}, -FLT_MAX);
  float sum = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) sum += __expf(__bfloat162float(row[i]) - top);
  sum = block_reduce(sum, Sum{}, 0.0f);
  return {top, logf(sum)};
}

__global__ void cross_entropy_forward_kernel(const __nv_bfloat16* logits, const int32_t* targets,
                                             int64_t vocab, float* losses) {
  const __nv_bfloat16* row = logits + int64_t(blockIdx.x) * vocab;
  const RowStats s = row_stats(row, vocab);
  if (threadIdx.x == 0) losses[blockIdx.x] = s.max + s.log_sum - __bfloat162float(row[targets[blockIdx.x]]);
}

__global__ void cross_entropy_backward_kernel(const float* dlosses, const __nv_bfloat16* logits,
                                              const int32_t* targets, int64_t vocab, __nv_bfloat16* dlogits) {
  const int64_t r = blockIdx.x;
  const __nv_bfloat16* row = logits + r * vocab;
  const RowStats s = row_stats(row, vocab);
  const float dloss = dlosses[r];
  const int32_t target = targets[r];
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float p = __expf(__bfloat162float(row[i]) - s.max - s.log_sum);
    dlogits[r * vocab + i] = __float2bfloat16((p - (i == target ? 1.0f : 0.0f)) * dloss);
  }
}

}  // namespace

void cross_entropy_forward(const uint16_t* logits, const int32_t* targets, int64_t rows, int64_t vocab,
                           float* losses, void* stream) {
  if (rows == 0) return;
  cross_entropy_forward_kernel<<<unsigned(rows), kThreads, 0, detail::as_stream(stream)>>>(
      reinterpret_cast<const __nv_bfloat16*>(logits), targets, vocab, losses);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

void cross_entropy_backward(const float* dlosses, const uint16_t* logits, const int32_t* targets,
                            int64_t rows, int64_t vocab, uint16_t* dlogits, void* stream) {
  if (rows == 0) return;
  cross_entropy_backward_kernel<<<unsigned(rows), kThreads, 0, detail::as_stream(stream)>>>(
      dlosses, reinterpret_cast<const __nv_bfloat16*>(logits), targets, vocab,
      reinterpret_cast<__nv_bfloat16*>(dlogits));
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

std::vector<float> cross_entropy_forward_on_host(const std::vector<uint16_t>& logits,
                                                 const std::vector<int32_t>& targets, int64_t vocab) {
  using detail::DeviceBuffer;
  const int64_t rows = int64_t(targets.size());
  DeviceBuffer<uint16_t> dl(logits.data(), logits.size());
  DeviceBuffer<int32_t> dt(targets.data(), targets.size());
  DeviceBuffer<float> out(targets.size());
  out.poison();
  cross_entropy_forward(dl.ptr, dt.ptr, rows, vocab, out.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return out.to_host();
}

std::vector<uint16_t> cross_entropy_backward_on_host(const std::vector<float>& dlosses,
                                                     const std::vector<uint16_t>& logits,
                                                     const std::vector<int32_t>& targets, int64_t vocab) {
  using detail::DeviceBuffer;
  const int64_t rows = int64_t(targets.size());
  DeviceBuffer<float> dd(dlosses.data(), dlosses.size());
  DeviceBuffer<uint16_t> dl(logits.data(), logits.size()), out(logits.size());
  DeviceBuffer<int32_t> dt(targets.data(), targets.size());
  out.poison();
  cross_entropy_backward(dd.ptr, dl.ptr, dt.ptr, rows, vocab, out.ptr, nullptr);
  SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
  return out.to_host();
}

}  // namespace simrun::kernels::cuda
