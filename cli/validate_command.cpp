// `simrun validate SCENARIO.json [--backend cpu|cuda] [--steps N] [--warmup N] [--out DIR] [--timeout S]
//  [--step-budget S]` (and `simrun --validate ...`), started by mpirun (or srun), one process per
// rank: runs the scenario's own per-rank task graph for real, compares it op by op with the
// simulation and writes DIR/{report,calibration,trace-measured,trace-simulated}.json
// (exec/include/simrun/exec/validate.hpp; docs/validation.md "Validate on your machine").
#include <cstdlib>
#include <iostream>
#include <memory>

#include "command.hpp"
#include "flag_names.hpp"
#include "plan_ranks.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/exec/validate.hpp"
#ifdef SIMRUN_HAVE_CUDA_KERNELS
#include "simrun/kernels/cuda.hpp"
#endif

namespace simrun::cli {
namespace {

struct ValidateArgs {
  ScenarioArgs scenario;
  FrameworkArgs framework;
  std::string backend = "cpu";
  int64_t steps = 5;
  int64_t warmup = 2;
  std::string out = "validate-out";
  double timeout_s = 60;
  double step_budget_s = 120;
};

// The cuda backend's request: the GPU this machine has, as the catalog knows it (its cuda_names),
// and bf16 where the scenario asked for fp32 (the kernels are bf16); InputError where it cannot
// run here (no CUDA Toolkit, NCCL or device; a GPU the catalog does not name).
void apply_cuda_backend(exec::ValidateRequest& r, const Catalogs& catalogs) {
#ifdef SIMRUN_HAVE_CUDA_KERNELS
  if (!exec::cuda_backend_available())
    throw InputError("command line", "--backend",
                     "this simrun was built without NCCL or MPI, which the cuda backend needs (--backend cpu "
                     "runs here)");
  if (kernels::cuda::device_count() == 0)
    throw InputError(
        "command line", "--backend",
        "no CUDA device on this machine (the cuda backend needs a GPU; --backend cpu runs here)");
  const std::string name = kernels::cuda::device_cuda_name();
  const GpuSpec* gpu = catalogs.hardware.gpu_named_by_cuda(name);
  if (!gpu)
    throw InputError(
        "command line", "--backend",
        "the GPU here, " + quoted_input(name) +
            ", is in no catalog entry's cuda_names (add it to its GPU's file, docs/catalogs.md)");
  r.backend = exec::Backend::cuda;
  r.gpu = *gpu;
  // What the cuda backend's GEMMs run, said as the slice's other changes are (cuda_backend.hpp).
  Precision precision = r.scenario.layout.precision;
  if (precision == Precision::fp32 || precision == Precision::tf32 || precision == Precision::fp16) {
    r.notes.push_back(std::string("precision ") + to_string(precision) +
                      " -> bf16 (the cuda backend's kernels are bf16)");
    precision = Precision::bf16;
  }
  if (precision == Precision::fp4) {
    r.notes.push_back("precision fp4 -> fp8 (the cuda backend has no fp4 GEMM)");
    precision = Precision::fp8;
  }
  if (precision == Precision::fp8 && !(gpu->fp8_flops_per_s > 0)) {
    r.notes.push_back("precision fp8 -> bf16 (" + gpu->id + " has no fp8 tensor cores)");
    precision = Precision::bf16;
  }
  r.scenario.layout.set_precision(precision);  // dropping a recipe written for the precision replaced
#else
  (void)r;
  (void)catalogs;
  throw InputError("command line", "--backend",
                   "this simrun was built without the CUDA Toolkit (the cuda backend needs it and a GPU; "
                   "--backend cpu runs here)");
#endif
}

exec::ValidateRequest request_of(const ValidateArgs& a, const CliEnv& env) {
  try {
    if (a.backend != "cpu" && a.backend != "cuda")
      throw InputError(
          "command line", "--backend",
          "\"" + a.backend +
              "\" is not a backend (cpu: Eigen, the reference kernels and MPI; cuda: cuBLASLt, our CUDA "
              "kernels and NCCL)");
    if (a.steps < 1 || a.steps > 1000)
      throw InputError("command line", "--steps", "must be 1 to 1000 measured steps");
    if (a.warmup < 0 || a.warmup > 1000)
      throw InputError("command line", "--warmup", "must be 0 to 1000 warm-up steps");
    if (!(a.timeout_s >= 1 && a.timeout_s <= 86400))
      throw InputError("command line", "--timeout", "must be 1 to 86400 seconds");
    if (!(a.step_budget_s > 0 && a.step_budget_s <= 86400))
      throw InputError("command line", "--step-budget", "must be more than 0 and at most 86400 seconds");
    const Catalogs catalogs = load_cli_catalogs(env, a.scenario.catalogs);
    exec::ValidateRequest r;
    r.scenario = resolve_scenario(a.scenario, catalogs);
    if (a.backend == "cuda") {
      // The cuda backend runs the program the scenario's own framework profile gives (its streams
      // and overlaps as CUDA streams, its host syncs as host waits).
      apply_cuda_backend(r, catalogs);
    } else {
      // The cpu backend runs its own framework behaviour (no overlaps, no framework host work):
      // the simulation it is compared with must assume the same.
      const FrameworkProfile& cpu =
          catalogs.frameworks.resolve(exec::kCpuBackendFramework, "sim/framework/profiles", "framework");
      if (r.scenario.framework.id != cpu.id) {
        r.notes.push_back("framework " + r.scenario.framework.id + " -> " + cpu.id + " (" + cpu.name +
                          ": what the cpu backend runs)");
        r.scenario.framework = cpu;
      }
    }
    r.options = framework_simulate_options(r.scenario);
    apply_framework_options(a.framework, r.scenario, r.options.workload, r.options.memory);
    r.host_nominal = catalogs.hardware.gpu("cpu-host", "topologies/gpus", "cpu-host");
    r.steps = a.steps;
    r.warmup = a.warmup;
    r.out_dir = a.out;
    r.timeout_s = a.timeout_s;
    r.step_budget_s = a.step_budget_s;
    if (const char* fault = std::getenv("SIMRUN_VALIDATE_FAULT"))
      r.fault = fault;  // the tests' fault injection
    return r;
  } catch (const InputError& e) {
    throw as_command_line_error(e);
  }
}

}  // namespace

Command add_validate_command(CLI::App& root, const CliEnv& env) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = root.add_subcommand("validate",
                                      "Run the scenario's step for real under mpirun (one process per "
                                      "rank, on its CPU core or GPU), compare it op by op "
                                      "with the simulation and fit calibration.json (docs/validation.md)");
  add_scenario_options(*cmd, args->scenario);
  add_framework_options(*cmd, args->framework);
  cmd->add_option("--backend", args->backend,
                  "Where the ranks run: cpu (Eigen, the reference kernels, MPI) or cuda (a GPU per rank: "
                  "cuBLASLt, simrun's CUDA kernels, NCCL)");
  cmd->add_option("--steps", args->steps, "Steps measured, after the warm-up (default 5)");
  cmd->add_option("--warmup", args->warmup, "Warm-up steps, not measured (default 2)");
  cmd->add_option("--out", args->out,
                  "Folder for report.json, calibration.json and the two traces (default validate-out)");
  cmd->add_option(
      "--timeout", args->timeout_s,
      "Seconds a rank may finish no task before the job stops, naming the rank at fault (default 60)");
  cmd->add_option("--step-budget", args->step_budget_s,
                  "Seconds a step may be predicted to take on this machine; a longer one runs fewer layers "
                  "(default 120)");
  return {cmd, [args, env] {
            // Outside mpirun the input is read before MPI starts, so a bad file costs no MPI start-up.
            if (!mpi_launch().by_mpirun) {
              const exec::ValidateRequest request = request_of(*args, env);
              return exec::run_validate([&] { return request; }, std::cout, std::cerr);
            }
            return exec::run_validate([&] { return request_of(*args, env); }, std::cout, std::cerr);
          }};
}

}  // namespace simrun::cli
