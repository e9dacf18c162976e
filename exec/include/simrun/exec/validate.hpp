// `simrun validate` as a library call (DESIGN.md "Validation output"): run under mpirun (or
// srun), every rank calls run_validate. It measures the host (host_device.hpp), slices the
// scenario to what the machine holds (slice.hpp), predicts the step with the simulator, runs the
// same per-rank task graph for real (one process per rank, cpu backend), compares op by op
// (comparison.hpp), fits calibration.json (calibration_fit.hpp), and writes into the out folder:
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

#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun::exec {

struct ValidateRequest {
  Scenario scenario;
  SimulateOptions options;  // the scenario's framework profile, with any flags applied
  GpuSpec host_nominal;     // the catalog's cpu-host entry, before the microbenchmark
  int64_t steps = 5;        // measured, after the warm-up
  int64_t warmup = 2;
  std::filesystem::path out_dir = "validate-out";
  double timeout_s = 60;       // the watchdog: no task finished on a rank for this long
  double step_budget_s = 120;  // a slice's predicted step on this machine stays under it
};

// True when simrun was built with MPI (validate needs it).
bool validate_available();

// Every rank of the job calls it. `make_request` reads the input on each rank; an InputError it
// (or the slice) throws is printed once, by rank 0, on `err`, and every rank returns 2. Results
// go to `out` on rank 0. A rank that fails otherwise says why on `err` and aborts the job (exit 1).
int run_validate(const std::function<ValidateRequest()>& make_request, std::ostream& out, std::ostream& err);

}  // namespace simrun::exec
