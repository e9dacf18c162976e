// validate's microbenchmark of the host (host_bench.hpp).
#include "host_bench.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "measurement.hpp"

namespace simrun::exec {
namespace {

// The microbenchmark's all-reduce sizes (bytes) and the time each of its measurements takes.
constexpr double kAllReduceSizes[] = {4096, 65536, 1 << 20, 4 << 20, 16 << 20};
constexpr double kBenchSeconds = 0.3;

// The cores this machine's ranks may run on: the union of their CPU affinities (mpirun may bind
// each to its own), bounded by a cgroup quota.
int64_t machine_cores(const World& w) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
    return std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t all;
  CPU_ZERO(&all);
  check(MPI_Allreduce(&mine, &all, int(sizeof(cpu_set_t)), MPI_BYTE, MPI_BOR, w.node), "MPI_Allreduce");
  int64_t cores = CPU_COUNT(&all);
  if (const int64_t limit = cgroup_core_limit(); limit > 0) cores = std::min(cores, limit);
  return std::max<int64_t>(1, cores);
}

}  // namespace

HostMeasurement measure_host(const World& w) {
  HostMeasurement m;
  m.cpu = cpu_model_name();
  m.cores = machine_cores(w);
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  m.gemm_flops_per_s = median(all_gather(measure_gemm_flops_per_s(kBenchSeconds), w));
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  m.memory_bytes_per_s = median(all_gather(measure_memory_bytes_per_s(kBenchSeconds), w));
  if (w.ranks > 1) {
    for (double bytes : kAllReduceSizes) {
      std::vector<float> buffer(size_t(bytes / 4), 1.0f);
      std::vector<double> times;
      for (int rep = 0; rep < 7; ++rep) {
        check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        const double t = MPI_Wtime();
        check(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(buffer.size()), MPI_FLOAT, MPI_SUM,
                            MPI_COMM_WORLD),
              "MPI_Allreduce");
        double elapsed = MPI_Wtime() - t, slowest = 0;
        check(MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
        times.push_back(slowest);
      }
      m.all_reduce.push_back({CollectiveOp::all_reduce, w.ranks, bytes, LinkClass::scale_up, median(times)});
    }
    const CalibrationFit links = fit_calibration(GpuSpec{}, ComputeParams{}, {}, m.all_reduce);
    m.link = links.calibration.scale_up;
  }
  return m;
}

}  // namespace simrun::exec
