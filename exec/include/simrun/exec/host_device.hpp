// The host described like any GPU kind (DESIGN.md "Calibration file"): `simrun validate`'s
// microbenchmark measures, with every rank running at once as they will in the step, one rank's
// single-threaded Eigen GEMM rate, its streaming memory bandwidth, and the α-β of an all-reduce
// over the ranks; host_device turns them into the catalog's cpu-host entry with this machine's
// figures. calibration.json carries them as its device entry (DeviceCalibration), so that
// `simrun simulate --calibration` predicts a step on this host.
//
// A rank's device is its share of the machine. Where ranks outnumber the cores (mpirun
// --oversubscribe: 4 ranks on 2 cores), the operating system time-slices them: a kernel runs at a
// whole core's speed while it runs (best-of timings see that rate, and the fit is made against
// it), but over a step each rank gets cores / ranks of a core. The device entry's peaks and
// bandwidth are the core's times that share (core_share).
#pragma once

#include <string>
#include <vector>

#include "simrun/exec/calibration_fit.hpp"
#include "simrun/topologies/hardware_spec.hpp"

namespace simrun::exec {

struct HostMeasurement {
  double gemm_flops_per_s = 0;               // one rank's fp32 GEMM rate (median over ranks), e.g. 40e9
  double memory_bytes_per_s = 0;             // one rank's streaming bandwidth (median over ranks), e.g. 8e9
  std::vector<CollectiveSample> all_reduce;  // world all-reduces of 4 KiB .. 16 MiB
  LinkCalibration link;                      // α-β fitted on them
  std::string cpu;                           // /proc/cpuinfo's model name, e.g. "AMD EPYC 7B13"
  int64_t cores =
      1;  // the cores this machine's ranks may run on (validate: their CPU affinities, a cgroup quota)
};

// The nominal entry (topologies/gpus/cpu-host.json) with the measured figures, each rank holding
// `share` of a core (1: the core alone, as the kernels run; core_share: over a step).
GpuSpec host_device(const GpuSpec& nominal, const HostMeasurement& m, int64_t ranks_per_node, double share);

// The share of a core each rank gets over a step: cores / ranks where ranks outnumber them, else 1.
double core_share(int64_t cores, int64_t ranks_per_node);
// The cores a cgroup CPU quota (cgroup v2 cpu.max) allows, rounded up; 0 where there is none.
// validate counts a machine's cores as the union of its ranks' CPU affinities, bounded by it.
int64_t cgroup_core_limit();

// The model name of this machine's CPU ("" where /proc/cpuinfo has none).
std::string cpu_model_name();
// Bytes of memory this machine can give: /proc/meminfo MemAvailable (0 when unknown).
double memory_available_bytes();

// This thread's CPU time so far, ns (CLOCK_THREAD_CPUTIME_ID): what kernels are timed by, here and
// in the step (a kernel's cost on a core, without the slices the scheduler gives other ranks).
int64_t thread_kernel_ns();

// One rank's GEMM rate and streaming bandwidth, timed on this thread (each at least `seconds`).
double measure_gemm_flops_per_s(double seconds);
double measure_memory_bytes_per_s(double seconds);

}  // namespace simrun::exec
