// What `simrun validate` needs of a backend (exec/, private): the machine its ranks run on, as the
// slice, the prediction and the fit see it, and a step runner for a rank. The cpu backend
// (validate.cpp) measures its host; the cuda backend (cuda_validate.cpp) reads its GPU's catalog
// entry: its prediction is the simulator's own for that GPU, uncalibrated.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "mpi_world.hpp"
#include "process_groups.hpp"
#include "simrun/exec/validate.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "step_runner.hpp"
#include "watchdog.hpp"

namespace simrun::exec {

struct Machine {
  std::string backend;      // "cpu" | "cuda", for the report
  GpuSpec core;             // what one kernel runs on: the fit is against it
  GpuSpec device;           // a rank over a step: the slice's budget
  GpuCalibration measured;  // what was measured before the step (cpu: the microbenchmark)
  int64_t processors = 1;   // processors the ranks of a machine share (cpu: cores; cuda: a GPU each)
  double memory_bytes = 0;  // what a machine can give its ranks' buffers, the least of any machine
  std::optional<LinkCalibration> link;  // a microbenchmark's α-β, where the step's own fit has none
  std::string line;                     // the report's line on it ("host ..." or "gpu ...")
  std::string source;                   // the calibration's source: "<what> (N ranks ...)"
  nlohmann::json json;                  // report.json's description of it
};

// A rank's step runner, whichever the backend.
class RankRunner {
 public:
  virtual ~RankRunner() = default;
  virtual StepTimes run(int64_t step) = 0;
};

// Bytes one rank's buffers take for `program` (the backend's kernels and its messages).
double cpu_footprint_bytes(const Scenario& sc, const StageProgram& program, const RankLayout& layout);

#ifdef SIMRUN_HAVE_CUDA_BACKEND
// Why the ranks on this machine cannot each have a GPU, or "".
std::string cuda_rank_refusal(const World& w);
// The GPU of this rank (the local rank's device, made current) as the catalog's entry req.gpu.
Machine cuda_machine(const ValidateRequest& req, const World& w);
// What the cuda backend must refuse for this slice (a head_dim its attention does not take), or "".
std::string cuda_refusal(const Scenario& sc, const Workload& wl);
double cuda_footprint_bytes(const Scenario& sc, const StageProgram& program, const RankLayout& layout);
std::unique_ptr<RankRunner> make_cuda_runner(const Scenario& sc, const Workload& wl,
                                             const StageProgram& program, const RankLayout& layout,
                                             const ProcessGroups& groups, int rank, Watchdog& watchdog,
                                             InjectedFault fault);
#endif

}  // namespace simrun::exec
