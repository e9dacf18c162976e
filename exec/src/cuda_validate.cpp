// The cuda backend's part in `simrun validate` (validate_backend.hpp): this rank's GPU, the
// slice's footprint on it, and the runner that owns the NCCL communicators, the backend and the
// step runner.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <exception>
#include <stdexcept>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "cuda_step_runner.hpp"
#include "launch_order.hpp"
#include "nccl_groups.hpp"
#include "validate_backend.hpp"

namespace simrun::exec {
namespace {

// Share of a GPU's free memory the backend's buffers may take (the rest: NCCL's buffers, cuBLAS's
// and the CUDA context's own).
constexpr double kUsableGpuFraction = 0.85;

struct DeviceInfo {
  int major = 0, minor = 0;
};

DeviceInfo current_device() {
  int device = 0;
  SIMRUN_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  SIMRUN_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return {p.major, p.minor};
}

GemmPrecision precision_here(const Scenario& sc) {
  const DeviceInfo d = current_device();
  return cuda_gemm_precision(sc, d.major, d.minor);
}

// The backend first (its kernels loaded and run once before any NCCL kernel), then the
// communicators, then the runner. Unwinding after an error aborts the communicators first, so that
// freeing the runner's buffers does not wait on an NCCL kernel whose peer is gone.
class CudaRunner final : public RankRunner {
 public:
  CudaRunner(const Scenario& sc, const Workload& wl, const StageProgram& program, const RankLayout& layout,
             const ProcessGroups& groups, int rank, Watchdog& watchdog, InjectedFault fault)
      : m_backend(sc, program, precision_here(sc)),
        m_nccl(wl, layout, groups, rank),
        m_runner(program, layout, m_nccl, m_backend, watchdog, fault) {}
  ~CudaRunner() override {
    if (std::uncaught_exceptions() > m_exceptions) m_nccl.abort();
  }
  StepTimes run(int64_t step) override { return m_runner.run(step); }

 private:
  int m_exceptions = std::uncaught_exceptions();
  CudaBackend m_backend;
  NcclGroups m_nccl;
  CudaStepRunner m_runner;
};

}  // namespace

std::string cuda_rank_refusal(const World& w) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  if (devices >= w.ranks_per_node) return "";
  return fmt::format(
      "command line: --backend: mpirun started {} ranks on a machine with {} GPUs (the cuda backend runs a "
      "rank "
      "per GPU: -np {} or fewer per machine)",
      w.ranks_per_node, devices, devices);
}

Machine cuda_machine(const ValidateRequest& req, const World& w) {
  int local = 0;
  check(MPI_Comm_rank(w.node, &local), "MPI_Comm_rank");
  SIMRUN_CUDA_CHECK(cudaSetDevice(local));
  size_t free = 0, total = 0;
  SIMRUN_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const DeviceInfo d = current_device();
  Machine m;
  m.backend = "cuda";
  m.core = req.gpu;
  m.device = req.gpu;  // no calibration: the simulator's own prediction for this GPU
  m.processors = w.ranks_per_node;
  // The slice compares a machine's memory with its ranks' buffers together: each rank has a GPU.
  m.memory_bytes = all_min(double(free) * kUsableGpuFraction) * double(w.ranks_per_node);
  const GemmPrecision precision = cuda_gemm_precision(req.scenario, d.major, d.minor);
  const char* gemm = precision == GemmPrecision::fp8 ? "fp8 e4m3" : "bf16";
  m.line = fmt::format(
      "gpu      {} (catalog {}, sm_{}), {} per machine, {:.1f} of {:.1f} GiB free; GEMMs {} through cuBLASLt "
      "(bf16 where fp8 cannot take the shape)\n",
      req.gpu.name, req.gpu.id, d.major * 10 + d.minor, w.ranks_per_node, double(free) / (1 << 30),
      double(total) / (1 << 30), gemm);
  m.source = fmt::format("{} ({} ranks, cuda backend)", req.gpu.id, w.ranks);
  m.json = {{"gpu", req.gpu.id},
            {"name", req.gpu.name},
            {"compute_capability", d.major * 10 + d.minor},
            {"free_bytes", double(free)},
            {"gemm_precision", gemm}};
  return m;
}

std::string cuda_refusal(const Scenario& sc, const Workload& wl) {
  for (const StageProgram& p : wl.stages) {
    if (std::string why = cuda_backend_refusal(sc, p); !why.empty()) return sc.file + ": model: " + why;
    const Lanes lanes = launch_lanes(p);
    if (std::string why = pipeline_order_mismatch(p, launch_order(p, lanes)); !why.empty())
      return sc.file +
             ": layout: the cuda backend cannot match this pipeline schedule's messages in order (" + why +
             ")";
  }
  return "";
}

double cuda_footprint_bytes(const Scenario& sc, const StageProgram& program, const RankLayout& layout) {
  return CudaBackend::footprint_bytes(sc, program, precision_here(sc)) +
         CudaStepRunner::buffer_bytes(program, layout);
}

std::unique_ptr<RankRunner> make_cuda_runner(const Scenario& sc, const Workload& wl,
                                             const StageProgram& program, const RankLayout& layout,
                                             const ProcessGroups& groups, int rank, Watchdog& watchdog,
                                             InjectedFault fault) {
  return std::make_unique<CudaRunner>(sc, wl, program, layout, groups, rank, watchdog, fault);
}

}  // namespace simrun::exec
