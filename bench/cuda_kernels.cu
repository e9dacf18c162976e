// The CUDA kernels' bandwidth against the measured ceiling (issue 27): a device-to-device copy's
// bandwidth, then each memory-bound kernel's bytes moved per second as a fraction of it. Times by
// CUDA events, the median of 20 runs after 3 warm-ups. Needs a device (exec/gpu_check.sh runs it).
//   build/bench/cuda_kernels [--elements N]        (default 64M elements)
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
  row("residual + RMSNorm fwd (bf16)", double(rows * h) * 2 * 4 + double(rows) * 4, [&] {
    cuda::residual_rmsnorm_forward(u16(a), u16(b), u16(c), rows, h, 1e-5f, u16(d), u16(c),
                                   static_cast<float*>(a), nullptr);
  });
  row("SwiGLU fwd (bf16)", double(n) * 2 * 3,
      [&] { cuda::swiglu_forward(u16(a), u16(b), n, u16(c), nullptr); });
  row("bias + GELU fwd (bf16)", double(n) * 2 * 2,
      [&] { cuda::bias_gelu_forward(u16(a), u16(b), rows, h, u16(c), nullptr); });
  const int64_t params = n / 4;
  std::vector<cuda::AdamWTensor> tensors = {{static_cast<float*>(a), static_cast<const float*>(b),
                                             static_cast<float*>(c), static_cast<float*>(d), params}};
  row("AdamW step (fp32, multi-tensor)", double(params) * 28,
      [&] { cuda::adamw_step(tensors, 1e-3, 0.9, 0.95, 1e-8, 0.1, 1, nullptr); });
  row("fp8 cast, per tensor", double(n) * 4 * 2 + double(n), [&] {
    cuda::fp8_cast_per_tensor(static_cast<float*>(a), n, static_cast<uint8_t*>(b), static_cast<float*>(c),
                              nullptr);
  });
  row("fp8 cast, per block of 128", double(n) * 5, [&] {
    cuda::fp8_cast_per_block(static_cast<float*>(a), n, static_cast<uint8_t*>(b), static_cast<float*>(c),
                             nullptr);
  });
  for (void* p : {a, b, c, d}) cudaFree(p);
  return 0;
}
