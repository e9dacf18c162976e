// `simrun validate SCENARIO.json [--backend cpu] [--steps N] [--warmup N] [--out DIR] [--timeout S]
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

// Why --backend cuda cannot run here: no CUDA Toolkit at build time, no device, or (with both)
// the cuda step runner, which is not written yet (issue 27: the kernels exist, cuBLASLt and NCCL
// do not).
std::string cuda_backend_refusal() {
#ifdef SIMRUN_HAVE_CUDA_KERNELS
  if (kernels::cuda::device_count() == 0)
    return "no CUDA device on this machine (the cuda backend needs a GPU; --backend cpu runs here)";
  return "the cuda backend's step runner (cuBLASLt GEMMs, NCCL) is not written yet; " +
         kernels::cuda::device_name() + " runs --backend cpu meanwhile";
#else
  return "this simrun was built without the CUDA Toolkit (the cuda backend needs it and a GPU; --backend cpu "
         "runs here)";
#endif
}

exec::ValidateRequest request_of(const ValidateArgs& a, const CliEnv& env) {
  try {
    if (a.backend == "cuda") throw InputError("command line", "--backend", cuda_backend_refusal());
    if (a.backend != "cpu")
      throw InputError(
          "command line", "--backend",
          "\"" + a.backend + "\" is not a backend (cpu: Eigen, the reference kernels and MPI; cuda)");
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
    // The cpu backend runs its own framework behaviour (no overlaps, no framework host work): the
    // simulation it is compared with must assume the same.
    const FrameworkProfile& cpu =
        catalogs.frameworks.resolve(exec::kCpuBackendFramework, "sim/framework/profiles", "framework");
    if (r.scenario.framework.id != cpu.id) {
      r.notes.push_back("framework " + r.scenario.framework.id + " -> " + cpu.id + " (" + cpu.name +
                        ": what the cpu backend runs)");
      r.scenario.framework = cpu;
    }
    r.options = framework_simulate_options(r.scenario);
    apply_framework_options(a.framework, r.scenario, r.options.workload, r.options.memory,
                            r.options.schedule);
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
                                      "Run the scenario's step for real under mpirun (cpu backend: one "
                                      "process per rank), compare it op by op "
                                      "with the simulation and fit calibration.json (docs/validation.md)");
  add_scenario_options(*cmd, args->scenario);
  add_framework_options(*cmd, args->framework);
  cmd->add_option("--backend", args->backend, "Where the ranks run: cpu (Eigen, the reference kernels, MPI)");
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
