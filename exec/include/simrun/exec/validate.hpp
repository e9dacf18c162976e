// `simrun validate` as a library call (DESIGN.md "Validation output"): run under mpirun (or an
// srun that sets PMI_SIZE and PMI_RANK), every rank calls run_validate. It measures the host
// (host_device.hpp), slices the scenario to what the machine holds (slice.hpp), predicts the step with the
// simulator, runs the same per-rank task graph for real (one process per rank, cpu backend), compares op by
// op (comparison.hpp), fits calibration.json (calibration_fit.hpp), and writes into the out folder:
//   report.json           step.{predicted_s, measured_s, error, calibrated_s, calibrated_error},
//                         ops [{name, shape, calls, predicted_s, measured_s, error, ...}],
//                         the host, what was scaled down, the fit and its residuals
//   calibration.json      the fitted calibration (sim/cost/calibration.hpp), with the device entry
//   trace-measured.json   the median measured step, same slice and lane names as
//   trace-simulated.json  the simulated one (sim/event/trace.hpp)
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun::exec {

// The framework profile the cpu backend runs (sim/framework/profiles/simrun-cpu.json): the
// command line puts it in the scenario, saying so when the scenario named another.
inline constexpr const char* kCpuBackendFramework = "simrun-cpu";

// What runs the tasks: the cpu backend (Eigen, the reference kernels, MPI) or the cuda backend
// (cuBLASLt, the kernels of kernels/cuda, NCCL; one GPU per rank).
enum class Backend : uint8_t { cpu, cuda };

struct ValidateRequest {
  Backend backend = Backend::cpu;
  Scenario scenario;
  SimulateOptions options;  // the scenario's framework profile, with any flags applied
  GpuSpec host_nominal;     // cpu: the catalog's cpu-host entry, before the microbenchmark
  GpuSpec gpu;              // cuda: the catalog's entry of the GPU the ranks run on
  int64_t steps = 5;        // measured, after the warm-up
  int64_t warmup = 2;
  std::filesystem::path out_dir = "validate-out";
  double timeout_s = 60;       // the watchdog: no task finished on a rank for this long
  double step_budget_s = 120;  // a slice's predicted step on this machine stays under it
  // A fault to inject, for the tests: "kill:RANK:STEP" (that rank dies halfway through its compute
  // tasks of that step) or "hang:RANK:STEP" (it sleeps there); empty: none.
  std::string fault;
  std::vector<std::string> notes;  // what the command line changed before the slice, said with it
};

// True when simrun was built with MPI (validate needs it).
bool validate_available();
// True when simrun was built with the CUDA Toolkit, NCCL and MPI (the cuda backend needs them).
bool cuda_backend_available();

// Every rank of the job calls it. `make_request` reads the input on each rank; an InputError it
// (or the slice) throws is printed once, by rank 0, on `err`, and every rank returns 2. The report
// goes to `out` on rank 0, whole, once the run has succeeded; progress to `err`. A rank that fails
// otherwise says why on `err` and aborts the job (exit 1).
int run_validate(const std::function<ValidateRequest()>& make_request, std::ostream& out, std::ostream& err);

}  // namespace simrun::exec
