// The CUDA kernels against the measured ceilings (issue 27): a device-to-device copy's bandwidth,
// then each memory-bound kernel's bytes moved per second as a fraction of it; cuBLAS's bf16 GEMM
// rate, then flash attention's matmul FLOP/s as a fraction of it. Times by
// CUDA events, the median of 20 runs after 3 warm-ups. Needs a device (exec/gpu_check.sh runs it).
//   build/bench/cuda_kernels [--elements N]        (default 64M elements)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "simrun/kernels/cuda.hpp"

namespace {

namespace cuda = simrun::kernels::cuda;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cuda_kernels: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Median seconds of `run` over 20 timed calls.
double median_seconds(const std::function<void()>& run) {
  for (int i = 0; i < 3; ++i) run();
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  std::vector<double> t;
  for (int i = 0; i < 20; ++i) {
    check(cudaEventRecord(a), "cudaEventRecord");
    run();
    check(cudaEventRecord(b), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    t.push_back(ms * 1e-3);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = int64_t(64) << 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--elements") == 0) n = std::max<int64_t>(1024, std::atoll(argv[i + 1]));
  if (cuda::device_count() == 0) {
    std::fprintf(stderr, "cuda_kernels: no CUDA device\n");
    return 1;
  }
  void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  const size_t bytes = size_t(n) * 4;
  for (void** p : {&a, &b, &c, &d}) check(cudaMalloc(p, bytes), "cudaMalloc");
  for (void* p : {a, b, c, d}) check(cudaMemset(p, 0, bytes), "cudaMemset");
  const double copy_s =
      median_seconds([&] { check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "copy"); });
  const double ceiling = 2.0 * double(bytes) / copy_s;  // read + write
  std::printf("%s, %lld elements\n", cuda::device_name().c_str(), static_cast<long long>(n));
  std::printf("%-34s %10s %12s %9s\n", "kernel", "time ms", "GB/s", "of copy");
  auto row = [&](const char* name, double moved_bytes, const std::function<void()>& run) {
    const double s = median_seconds(run);
    std::printf("%-34s %10.3f %12.1f %8.1f%%\n", name, s * 1e3, moved_bytes / s / 1e9,
                moved_bytes / s / ceiling * 100);
  };
  std::printf("%-34s %10.3f %12.1f %8.1f%%\n", "device-to-device copy (ceiling)", copy_s * 1e3, ceiling / 1e9,
              100.0);
  const int64_t h = 8192, rows = n / h;
  auto u16 = [](void* p) { return static_cast<uint16_t*>(p); };
  auto f32 = [](void* p) { return static_cast<float*>(p); };
  // Scratch for the statistics, the workspaces and the labels: small next to the tensors.
  void* scratch = nullptr;
  const size_t scratch_bytes = std::max<size_t>({cuda::residual_rmsnorm_backward_workspace_bytes(rows, h),
                                                 cuda::residual_layernorm_backward_workspace_bytes(rows, h),
                                                 cuda::bias_gelu_backward_workspace_bytes(rows, h)}) +
                               (size_t(64) << 20);
  check(cudaMalloc(&scratch, scratch_bytes), "cudaMalloc");
  check(cudaMemset(scratch, 0, scratch_bytes), "cudaMemset");
  float* stats = f32(scratch);                              // rows floats: rstd, mean
  float* stats2 = stats + rows;                             // rows floats
  float* dweight = stats2 + rows;                           // h floats
  float* dbias = dweight + h;                               // h floats
  int32_t* labels = reinterpret_cast<int32_t*>(dbias + h);  // rows labels (zeros: inside any vocabulary)
  void* workspace = static_cast<char*>(scratch) + (size_t(32) << 20);
  // Bytes each kernel must move at least (its tensors read and written once; the statistics,
  // weights and workspaces left out): the fraction of copy bandwidth is of these.
  const double x2 = double(n) * 2;  // one bf16 tensor of n elements
  row("residual + RMSNorm fwd (bf16)", 4 * x2, [&] {
    cuda::residual_rmsnorm_forward(u16(a), u16(b), u16(c), rows, h, 1e-5f, u16(d), u16(c), stats, nullptr);
  });
  row("residual + RMSNorm bwd (bf16)", 4 * x2, [&] {
    cuda::residual_rmsnorm_backward(u16(a), u16(b), u16(c), u16(c), stats, rows, h, u16(d), dweight,
                                    workspace, nullptr);
  });
  row("residual + LayerNorm fwd (bf16)", 4 * x2, [&] {
    cuda::residual_layernorm_forward(u16(a), u16(b), u16(c), u16(c), rows, h, 1e-5f, u16(d), u16(c), stats,
                                     stats2, nullptr);
  });
  row("residual + LayerNorm bwd (bf16)", 4 * x2, [&] {
    cuda::residual_layernorm_backward(u16(a), u16(b), u16(c), u16(c), stats, stats2, rows, h, u16(d), dweight,
                                      dbias, workspace, nullptr);
  });
  row("SwiGLU fwd (bf16)", 3 * x2, [&] { cuda::swiglu_forward(u16(a), u16(b), n, u16(c), nullptr); });
  row("SwiGLU bwd (bf16)", 5 * x2,
      [&] { cuda::swiglu_backward(u16(a), u16(b), u16(c), n, u16(d), u16(d) + n, nullptr); });
  row("bias + GELU fwd (bf16)", 2 * x2,
      [&] { cuda::bias_gelu_forward(u16(a), u16(b), rows, h, u16(c), nullptr); });
  row("bias + GELU bwd (bf16)", 3 * x2,
      [&] { cuda::bias_gelu_backward(u16(a), u16(b), u16(c), rows, h, u16(d), dbias, workspace, nullptr); });
  const int64_t vocab = 32768, ce_rows = n / vocab;
  row("cross-entropy fwd (bf16 logits)", x2,
      [&] { cuda::cross_entropy_forward(u16(a), labels, ce_rows, vocab, stats, nullptr); });
  row("cross-entropy bwd (bf16 logits)", 2 * x2,
      [&] { cuda::cross_entropy_backward(stats, u16(a), labels, ce_rows, vocab, u16(b), nullptr); });
  row("stream update y = 0.5y + x (bf16)", 3 * x2, [&] { cuda::stream_update(u16(a), n, u16(b), nullptr); });
  const int64_t params = n / 4;
  const cuda::AdamWTensors adam({{f32(a), f32(b), f32(c), f32(d), params}});
  int64_t adam_step = 0;
  row("AdamW step (fp32, multi-tensor)", double(params) * 28,
      [&] { adam.step(1e-3, 0.9, 0.95, 1e-8, 0.1, ++adam_step, nullptr); });
  row("fp8 cast, per tensor", double(n) * 4 + double(n),
      [&] { cuda::fp8_cast_per_tensor(f32(a), n, static_cast<uint8_t*>(b), f32(c), nullptr); });
  row("fp8 cast, per block of 128", double(n) * 4 + double(n),
      [&] { cuda::fp8_cast_per_block(f32(a), n, static_cast<uint8_t*>(b), f32(c), nullptr); });
  cudaFree(scratch);

  // Attention against the bf16 GEMM rate cuBLAS reaches on this device (8192³, fp32 accumulation).
  const int64_t g = 8192;
  void *ga = nullptr, *gb = nullptr, *gc = nullptr;
  for (void** p : {&ga, &gb, &gc}) check(cudaMalloc(p, size_t(g * g) * 2), "cudaMalloc");
  for (void* p : {ga, gb, gc}) check(cudaMemset(p, 0x3c, size_t(g * g) * 2), "cudaMemset");  // ~0.01, finite
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cuda_kernels: cublasCreate failed\n");
    return 1;
  }
  const float one = 1, zero = 0;
  const double gemm_s = median_seconds([&] {
    if (cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, int(g), int(g), int(g), &one, ga, CUDA_R_16BF, int(g),
                     gb, CUDA_R_16BF, int(g), &zero, gc, CUDA_R_16BF, int(g), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "cuda_kernels: cublasGemmEx failed\n");
      std::exit(1);
    }
  });
  const double gemm_rate = 2.0 * double(g) * double(g) * double(g) / gemm_s;
  cublasDestroy(blas);
  for (void* p : {ga, gb, gc}) cudaFree(p);
  std::printf("\n%-44s %10s %10s %9s\n", "attention (bf16, flash)", "time ms", "TFLOP/s", "of GEMM");
  std::printf("%-44s %10.3f %10.1f %8.1f%%\n", "cuBLAS bf16 GEMM 8192^3 (ceiling)", gemm_s * 1e3,
              gemm_rate / 1e12, 100.0);
  for (const int64_t dim : {int64_t(128), int64_t(64)})
    for (const bool causal : {true, false}) {
      const cuda::AttentionDims dims{1, 16, 16, 8192, dim, causal};
      const size_t q = size_t(dims.batch * dims.q_heads * dims.seq * dims.head_dim);
      void *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr, *dlse = nullptr, *dgrad = nullptr,
           *dws = nullptr;
      for (void** p : {&dq, &dk, &dv, &dout, &dgrad}) check(cudaMalloc(p, q * 2 * 3), "cudaMalloc");
      check(cudaMalloc(&dlse, size_t(dims.batch * dims.q_heads * dims.seq) * 4), "cudaMalloc");
      check(cudaMalloc(&dws, cuda::flash_attention_backward_workspace_bytes(dims)), "cudaMalloc");
      for (void* p : {dq, dk, dv, dout, dgrad}) check(cudaMemset(p, 0x3c, q * 2 * 3), "cudaMemset");
      // Matmul FLOPs: Q·Kᵀ and P·V, 2·2·seq²·dim per head, half of them under a causal mask; the
      // backward's five matmuls 2.5 times the forward's (FlashAttention-2's count).
      const double flops = 4.0 * double(dims.batch * dims.q_heads) * double(dims.seq) * double(dims.seq) *
                           double(dim) * (causal ? 0.5 : 1.0);
      const double fwd_s = median_seconds([&] {
        cuda::flash_attention_forward(dims, u16(dq), u16(dk), u16(dv), u16(dout), f32(dlse), nullptr);
      });
      const double bwd_s = median_seconds([&] {
        cuda::flash_attention_backward(dims, u16(dgrad), u16(dq), u16(dk), u16(dv), u16(dout), f32(dlse),
                                       u16(dgrad) + q, u16(dgrad) + 2 * q, u16(dout) + q, f32(dws), nullptr);
      });
      char name[96];
      std::snprintf(name, sizeof name, "fwd, head_dim %lld, 8K tokens, 16 heads%s",
                    static_cast<long long>(dim), causal ? ", causal" : "");
      std::printf("%-44s %10.3f %10.1f %8.1f%%\n", name, fwd_s * 1e3, flops / fwd_s / 1e12,
                  flops / fwd_s / gemm_rate * 100);
      std::snprintf(name, sizeof name, "bwd, head_dim %lld, 8K tokens, 16 heads%s",
                    static_cast<long long>(dim), causal ? ", causal" : "");
      std::printf("%-44s %10.3f %10.1f %8.1f%%\n", name, bwd_s * 1e3, 2.5 * flops / bwd_s / 1e12,
                  2.5 * flops / bwd_s / gemm_rate * 100);
      for (void* p : {dq, dk, dv, dout, dlse, dgrad, dws}) cudaFree(p);
    }
  for (void* p : {a, b, c, d}) cudaFree(p);
  return 0;
}
