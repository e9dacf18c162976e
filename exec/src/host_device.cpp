// The host's device entry and its single-rank microbenchmarks (host_device.hpp).
#include "simrun/exec/host_device.hpp"

#include <fmt/format.h>
#include <time.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace simrun::exec {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The best of repeated timings of `f` within `seconds` of wall time, in seconds of this thread's
// CPU time: what `f` costs on a core, as the step's kernels are measured (step_runner.hpp), with
// the slices the scheduler gives other ranks left out.
template <class F>
double best_time(double seconds, F&& f) {
  f();  // warm the caches and the pages
  double best = 1e30;
  const auto start = std::chrono::steady_clock::now();
  do {
    const int64_t t = thread_kernel_ns();
    f();
    best = std::min(best, double(thread_kernel_ns() - t) * 1e-9);
  } while (seconds_since(start) < seconds);
  return best;
}

}  // namespace

int64_t thread_kernel_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

double measure_gemm_flops_per_s(double seconds) {
  // Square GEMMs of 256 and 512: Eigen's blocked kernel at its asymptotic rate on one core; the
  // faster of the two (the larger one can spill the core's L2).
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  double best = 0;
  for (int n : {256, 512}) {
    const Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n);
    Matrix c(n, n);
    const double t = best_time(seconds / 2, [&] { c.noalias() = a * b; });
    best = std::max(best, 2.0 * n * n * n / t);
  }
  return best;
}

double measure_memory_bytes_per_s(double seconds) {
  // A triad over 3 × 32 MiB, well past any cache: reads 2 arrays, writes 1 (STREAM's count).
  const size_t n = size_t(8) << 20;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 0.5f);
  const double t = best_time(seconds, [&] {
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
  });
  return 3.0 * 4.0 * double(n) / t;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(std::min(line.size(), colon + 2));
    }
  return "";
}

double memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0;
  return 0;
}

double core_share(int64_t cores, int64_t ranks_per_node) {
  return ranks_per_node > cores ? double(cores) / double(ranks_per_node) : 1.0;
}

int64_t cgroup_core_limit() {
  // "max 100000" (no quota) or "200000 100000" (2 cores' worth).
  std::ifstream quota_file("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (!(quota_file >> quota >> period) || quota == "max" || !(period > 0)) return 0;
  try {
    return std::max<int64_t>(1, int64_t(std::ceil(std::stod(quota) / period)));
  } catch (const std::exception&) {
    return 0;
  }
}

GpuSpec host_device(const GpuSpec& nominal, const HostMeasurement& m, int64_t ranks_per_node, double share) {
  GpuSpec g = nominal;
  g.name = fmt::format("{} ({} ranks on {} cores)", m.cpu.empty() ? "this host's CPU" : m.cpu, ranks_per_node,
                       m.cores);
  g.fp32_flops_per_s = g.bf16_flops_per_s = m.gemm_flops_per_s * share;  // bf16 is emulated in fp32
  g.hbm_bytes_per_s = m.memory_bytes_per_s * share;
  if (m.link.beta_s_per_byte) g.scale_up_bytes_per_s = g.pcie_bytes_per_s = 1 / *m.link.beta_s_per_byte;
  g.scale_up_domain = std::max<int64_t>(g.scale_up_domain, ranks_per_node);
  g.source = fmt::format(
      "simrun validate's microbenchmark on this host: Eigen fp32 GEMM 256^3 and 512^3 {:.1f} GFLOP/s and "
      "a triad {:.1f} GB/s on one core, times {:.3g}, a rank's share of a core ({} ranks on {} "
      "cores); MPI all-reduce alpha-beta",
      m.gemm_flops_per_s / 1e9, m.memory_bytes_per_s / 1e9, share, ranks_per_node, m.cores);
  return g;
}

}  // namespace simrun::exec
