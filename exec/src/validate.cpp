// `simrun validate` under MPI (validate.hpp): measure the host, slice, predict, run, compare, fit.
#include "simrun/exec/validate.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "host_bench.hpp"
#include "measurement.hpp"
#include "mpi_world.hpp"
#include "process_groups.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/exec/calibration_fit.hpp"
#include "simrun/exec/comparison.hpp"
#include "simrun/exec/cpu_backend.hpp"
#include "simrun/exec/host_device.hpp"
#include "simrun/exec/slice.hpp"
#include "simrun/sim/event/trace.hpp"
#include "step_runner.hpp"
#include "validate_backend.hpp"
#include "watchdog.hpp"

namespace simrun::exec {
namespace {

// Share of MemAvailable the ranks' buffers may take (the rest: MPI's buffers, the simulator's
// own workload and the page cache).
constexpr double kUsableMemoryFraction = 0.8;
// The watchdog's timeout is at least this many times the longest kernel the prediction holds.
constexpr double kTimeoutPerKernel = 3;

// Whether any rank refused; rank 0 prints the first refusal, "rank N: " before another rank's.
bool agree_on_refusal(const std::string& refusal, const World& w, std::ostream& err) {
  int mine = refusal.empty() ? 0 : 1, any = 0;
  check(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  if (!any) return false;
  const std::vector<std::string> all = gather_text_on_rank0(refusal, w);
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) {
      err << printable(r == 0 ? all[r] : fmt::format("rank {}: {}", r, all[r]), kErrorLineMaxBytes)
          << std::endl;
      break;
    }
  return true;
}

// The fault a test injects (ValidateRequest::fault, "kill|hang:RANK:STEP") if it is this rank's.
InjectedFault fault_of(const std::string& text, int rank) {
  InjectedFault fault;
  char kind[8] = {};
  int at_rank = -1;
  long step = -1;
  if (std::sscanf(text.c_str(), "%7[a-z]:%d:%ld", kind, &at_rank, &step) == 3 && at_rank == rank) {
    fault.kind = std::string(kind) == "kill"   ? InjectedFault::Kind::kill
                 : std::string(kind) == "hang" ? InjectedFault::Kind::hang
                                               : InjectedFault::Kind::none;
    fault.step = step;
  }
  return fault;
}

SimulateOptions traced_options(SimulateOptions o, const Calibration& calibration, int64_t ranks) {
  o.calibration = calibration;
  o.step.scope = SimulationScope::full;
  o.step.record_trace = true;
  o.step.trace_ranks.resize(size_t(ranks));
  std::iota(o.step.trace_ranks.begin(), o.step.trace_ranks.end(), 0);
  return o;
}

// A step simulated on ranks that share a machine's cores, and the calibration that describes
// each rank's device: `kernels` (relative to `core`, its device entry the core's own peaks) with
// the device entry's peaks and bandwidth times the rank's share of a core. Where ranks outnumber
// the cores, the share is a mean-field processor-sharing one: the cores divided by the ranks that
// want one on average, ranks × the fraction of the step they compute, iterated from "all of them"
// to its fixed point on the simulated step itself (no measurement enters it).
struct SharedStep {
  double share = 1;
  Calibration calibration;
  SimulationOutput out;
};

constexpr int kShareIterations = 12;
constexpr double kShareTolerance = 0.002;

SharedStep predict_on_shared_cores(const Scenario& sc, const GpuSpec& core, const GpuCalibration& kernels,
                                   const SimulateOptions& options, int64_t cores, int64_t ranks_per_node,
                                   int64_t ranks) {
  SharedStep step;
  double share = core_share(cores, ranks_per_node);
  for (int i = 0; i < kShareIterations; ++i) {
    GpuCalibration c = kernels;
    c.device.fp32_flops_per_s = c.device.fp32_flops_per_s.value_or(core.fp32_flops_per_s) * share;
    c.device.bf16_flops_per_s = c.device.bf16_flops_per_s.value_or(core.bf16_flops_per_s) * share;
    c.device.hbm_bytes_per_s = c.device.hbm_bytes_per_s.value_or(core.hbm_bytes_per_s) * share;
    step.calibration = Calibration{};
    step.calibration.set_gpu(core.id, c);
    step.out = simulate(sc, traced_options(options, step.calibration, ranks));  // sc's GPU: core's kind
    step.share = share;
    if (ranks_per_node <= cores || step.out.stages.empty() || !(step.out.report.step_time_s > 0)) break;
    double busy = 0;
    for (const StageReport& stage : step.out.stages) busy += stage.time.compute_s();
    busy /= double(step.out.stages.size()) * step.out.report.step_time_s;
    const double next = std::min(1.0, double(cores) / (double(ranks_per_node) * std::max(busy, 1e-3)));
    if (std::abs(next - share) < kShareTolerance) break;
    share = next;
  }
  return step;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("could not write " + path.string());
}

std::string percent(double x) { return fmt::format("{:.1f}%", x * 100); }

nlohmann::json fit_json(const CalibrationFit& fit) {
  nlohmann::json residuals = nlohmann::json::array();
  for (const FitResidual& r : fit.residuals)
    residuals.push_back({{"what", r.what},
                         {"samples", r.samples},
                         {"rms_relative_error", r.rms_relative_error},
                         {"max_relative_error", r.max_relative_error}});
  return {{"residuals", residuals}, {"notes", fit.notes}};
}

void print_fit(const CalibrationFit& fit, const GpuCalibration& c, std::ostream& out) {
  auto v = [](const std::optional<double>& x, double scale, const char* unit) {
    return x ? fmt::format("{:.3g}{}", *x * scale, unit) : std::string("-");
  };
  out << fmt::format(
      "fit      gemm_max {} (half at {} elements), attention fwd {} bwd {}, memory-bound {}, "
      "launch {}; scale_up alpha {} beta {}\n",
      v(c.gemm_max, 1, ""), v(c.gemm_dim_half, 1, ""), v(c.attn_fwd_max, 1, ""), v(c.attn_bwd_max, 1, ""),
      v(c.mem_bw_fraction, 1, ""), v(c.launch_overhead_s, 1e6, " us"), v(c.scale_up.alpha_s, 1e6, " us"),
      c.scale_up.beta_s_per_byte ? fmt::format("{:.3g} GB/s", 1e-9 / *c.scale_up.beta_s_per_byte)
                                 : std::string("-"));
  std::string residuals;
  for (const FitResidual& r : fit.residuals)
    residuals += fmt::format("{}{} rms {} max {} ({} samples)", residuals.empty() ? "" : "; ", r.what,
                             percent(r.rms_relative_error), percent(r.max_relative_error), r.samples);
  out << "residual " << residuals << "\n";
  for (const std::string& note : fit.notes) out << "note     " << note << "\n";
}

// The cpu backend's machine: the host, measured, described like a GPU kind.
Machine cpu_machine(const ValidateRequest& req, const World& w) {
  const HostMeasurement host = measure_host(w);
  Machine m;
  m.backend = "cpu";
  m.core = host_device(req.host_nominal, host, w.ranks_per_node, 1.0);  // a kernel as it runs
  // A rank over a step, every rank computing (the slice's budget; the predictions refine the share).
  m.device = host_device(req.host_nominal, host, w.ranks_per_node, core_share(host.cores, w.ranks_per_node));
  m.measured.gemm_max = 1;  // what the microbenchmark alone says: peaks are the GEMM and triad rates
  m.measured.mem_bw_fraction = 1;
  m.measured.scale_up = host.link;
  m.processors = host.cores;
  // Every rank slices alike: the least memory of any machine.
  m.memory_bytes = all_min(memory_available_bytes() * kUsableMemoryFraction);
  m.link = host.link;
  m.line = fmt::format(
      "host     {}, {} cores for {} ranks: GEMM {:.1f} GFLOP/s and memory {:.1f} GB/s per core; "
      "MPI all-reduce alpha {:.1f} us, {:.2f} GB/s\n",
      host.cpu.empty() ? "CPU" : host.cpu, host.cores, w.ranks_per_node, host.gemm_flops_per_s / 1e9,
      host.memory_bytes_per_s / 1e9, host.link.alpha_s.value_or(0) * 1e6,
      host.link.beta_s_per_byte ? 1e-9 / *host.link.beta_s_per_byte : 0.0);
  m.source = fmt::format("{} ({} ranks on {} cores, cpu backend)", host.cpu, w.ranks, host.cores);
  m.json = {{"cpu", host.cpu},
            {"gemm_flops_per_s", host.gemm_flops_per_s},
            {"memory_bytes_per_s", host.memory_bytes_per_s},
            {"all_reduce_alpha_s", host.link.alpha_s.value_or(0)},
            {"all_reduce_beta_s_per_byte", host.link.beta_s_per_byte.value_or(0)}};
  return m;
}

class CpuRunner final : public RankRunner {
 public:
  CpuRunner(const Scenario& sc, const StageProgram& program, const ProcessGroups& groups, Watchdog& watchdog,
            InjectedFault fault)
      : m_backend(sc, program), m_runner(program, groups, m_backend, watchdog, fault) {}
  StepTimes run(int64_t step) override { return m_runner.run(step); }

 private:
  CpuBackend m_backend;
  StepRunner m_runner;
};

struct Run {
  World world;
  const ValidateRequest& request;
  std::ostream& out;  // the report, written whole once the run has succeeded
  std::ostream& err;  // one-line refusals, progress
};

int validate(const Run& run) {
  const World& w = run.world;
  const ValidateRequest& req = run.request;
  std::ostream& err = run.err;
  std::ostringstream report_text;  // stdout holds nothing until the run has succeeded

  // 1. The host, described like a GPU kind; every machine holding as many ranks.
  const bool even = all_min(w.ranks_per_node) == all_max(w.ranks_per_node);
  if (agree_on_refusal(even ? ""
                            : req.scenario.file + ": cluster: mpirun placed different numbers of ranks on "
                                                  "the machines (place as many on each)",
                       w, err))
    return 2;
  const bool cuda = req.backend == Backend::cuda;
  if (w.rank == 0 && !cuda)
    err << "simrun validate: measuring the host (GEMM, memory, MPI all-reduce)" << std::endl;
#ifdef SIMRUN_HAVE_CUDA_BACKEND
  if (agree_on_refusal(cuda ? cuda_rank_refusal(w) : "", w, err)) return 2;
  const Machine machine = cuda ? cuda_machine(req, w) : cpu_machine(req, w);
#else
  SIMRUN_ASSERT(!cuda, "the cuda backend in a build without it");
  const Machine machine = cpu_machine(req, w);
#endif
  const GpuSpec& core = machine.core;
  const GpuCalibration& measured_device = machine.measured;
  Calibration base;
  base.set_gpu(machine.device.id, measured_device);

  // 2. The slice this machine holds.
  SliceLimits limits;
  limits.ranks = w.ranks;
  limits.ranks_per_node = w.ranks_per_node;
  limits.device = machine.device;
  limits.memory_bytes = machine.memory_bytes;
  limits.step_budget_s = req.step_budget_s;
  auto footprint = [&](const Scenario& sc) {
    const Workload wl = build_workload(sc, req.options.workload);  // the slice's own schedule
    const RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
    double most = 0;
    for (const StageProgram& p : wl.stages)
#ifdef SIMRUN_HAVE_CUDA_BACKEND
      most = std::max(most, cuda ? cuda_footprint_bytes(sc, p, layout) : cpu_footprint_bytes(sc, p, layout));
#else
      most = std::max(most, cpu_footprint_bytes(sc, p, layout));
#endif
    return most;
  };
  auto predict = [&](const Scenario& sc) {
    SimulateOptions o = req.options;
    o.calibration = base;
    return simulate(sc, o).report.step_time_s;
  };
  std::string refusal;
  std::optional<Slice> sliced;
  try {
    sliced = faithful_slice(req.scenario, limits, footprint, predict);
  } catch (const InputError& e) {
    refusal = e.what();
  }
  if (agree_on_refusal(refusal, w, err)) return 2;
  const Slice& slice = *sliced;
  const Scenario& sc = slice.scenario;

  // 3. The prediction, every rank traced.
  const SharedStep predicted_step = predict_on_shared_cores(sc, core, measured_device, req.options,
                                                            machine.processors, w.ranks_per_node, w.ranks);
  const SimulationOutput& predicted = predicted_step.out;
  const Workload& wl = predicted.workload;
  const RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
  const StageProgram& program = wl.stages[size_t(layout.coord_of(w.rank).pp)];
#ifdef SIMRUN_HAVE_CUDA_BACKEND
  if (agree_on_refusal(cuda ? cuda_refusal(sc, wl) : "", w, err)) return 2;
#endif

  if (w.rank == 0) {
    report_text << fmt::format(
        "simrun validate — {} on {} ranks of this host ({} backend), tp {} pp {} dp {} cp {}, {} "
        "micro-batches per pipeline, {}\n",
        sc.model.name, w.ranks, machine.backend, sc.layout.tp, sc.layout.pp, sc.layout.dp, sc.layout.cp,
        sc.layout.num_microbatches(), to_string(wl.schedule));
    report_text << machine.line;
    if (slice.scaled.empty() && req.notes.empty())
      report_text << "scaled   nothing: the layout runs as the scenario gives it\n";
    for (const std::string& s : req.notes) report_text << "scaled   " << s << "\n";
    for (const std::string& s : slice.scaled) report_text << "scaled   " << s << "\n";
  }

  if (w.rank == 0)
    err << fmt::format("simrun validate: running {} warm-up and {} measured steps on {} ranks", req.warmup,
                       req.steps, w.ranks)
        << std::endl;
  // 4. The real step. The watchdog waits at least a few times the longest kernel predicted.
  double longest_kernel_s = 0;
  for (const ProgramCost& stage : predicted.cost.stages)
    for (TimeNs t : stage.shape_time) longest_kernel_s = std::max(longest_kernel_s, t.seconds());
  const double timeout_s = std::max(req.timeout_s, kTimeoutPerKernel * longest_kernel_s);
  if (w.rank == 0 && timeout_s > req.timeout_s)
    err << fmt::format(
        "simrun validate: the watchdog waits {:.0f} s, not --timeout {:.0f}: a kernel of this slice "
        "is predicted at {:.0f} s\n",
        timeout_s, req.timeout_s, longest_kernel_s);
  std::vector<std::string> labels;
  for (const Task& t : program.tasks) labels.push_back(task_event_name(t));
  Watchdog watchdog(req.out_dir / "heartbeat", w.rank, w.ranks, timeout_s);
  watchdog.set_labels(std::move(labels));
  const InjectedFault fault = fault_of(req.fault, w.rank);
  const ProcessGroups groups(wl, layout, w.rank);
#ifdef SIMRUN_HAVE_CUDA_BACKEND
  const std::unique_ptr<RankRunner> runner =
      cuda ? make_cuda_runner(sc, wl, program, layout, groups, w.rank, watchdog, fault)
           : std::make_unique<CpuRunner>(sc, program, groups, watchdog, fault);
#else
  const std::unique_ptr<RankRunner> runner =
      std::make_unique<CpuRunner>(sc, program, groups, watchdog, fault);
#endif
  std::vector<StepTimes> steps;
  std::vector<double> step_s;
  for (int64_t s = 0; s < req.warmup + req.steps; ++s) {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    StepTimes t = runner->run(s);
    double mine = double(t.finish_ns) * 1e-9, slowest = 0;
    check(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    if (s >= req.warmup) {
      steps.push_back(std::move(t));
      step_s.push_back(slowest);
    }
  }
  watchdog.stop();

  // 5. Gather every measured step's spans on rank 0.
  const std::vector<std::vector<double>> all_spans = gather_on_rank0(pack_spans(steps), w);
  if (w.rank != 0) return 0;
  const std::vector<MeasuredSpans> measured_spans = unpack_spans(all_spans, steps.size());
  std::vector<size_t> order(step_s.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return step_s[a] < step_s[b]; });
  const size_t median_step = order[order.size() / 2];
  const TaskSeconds measured = measured_durations(wl, layout, measured_spans);

  // 6. Fit against the core a kernel runs on, then give each rank its share of it; re-predict;
  // compare (compute ops: the kernel alone on the core, as measured; the rest: the simulated spans).
  std::vector<KernelSample> kernels;
  std::vector<CollectiveSample> collectives;
  fit_samples(wl, sc.cluster, measured, kernels, collectives);
  const ComputeParams base_params = base.compute_params(core.id, default_compute_params(core));
  CalibrationFit fit = fit_calibration(core, default_compute_params(core), kernels, collectives);
  if (!fit.calibration.scale_up.beta_s_per_byte && machine.link) {
    fit.calibration.scale_up = *machine.link;
    fit.notes.push_back(
        "the step's collectives did not determine alpha-beta: the microbenchmark's all-reduce fit kept");
  }
  fit.calibration.device.source =
      core.source +
      "; the fitted core times each rank's share of it by processor sharing (exec/src/validate.cpp)";
  const ComputeModel fitted_kernels = [&] {
    Calibration c;
    c.set_gpu(core.id, fit.calibration);
    return calibrated_compute_model(c.calibrated_device(core), c, default_compute_params(core));
  }();
  const SharedStep calibrated_step = predict_on_shared_cores(sc, core, fit.calibration, req.options,
                                                             machine.processors, w.ranks_per_node, w.ranks);
  const SimulationOutput& calibrated = calibrated_step.out;
  Calibration calibration = calibrated_step.calibration;
  calibration.set_source(fmt::format("simrun validate on {}, {}", machine.source, sc.file));
  if (calibrated_step.share < 1)
    fit.notes.push_back(
        fmt::format("{} ranks share {} cores: each rank's device is {:.3g} of the fitted core "
                    "(processor sharing: the cores over the ranks computing at a time)",
                    w.ranks_per_node, machine.processors, calibrated_step.share));

  std::vector<int64_t> stage_of;
  for (int64_t r = 0; r < w.ranks; ++r) stage_of.push_back(layout.coord_of(r).pp);
  std::vector<int64_t> group_sizes(kGroupKindCount);
  for (int g = 0; g < kGroupKindCount; ++g) group_sizes[size_t(g)] = layout.group_size(GroupKind(g));
  Comparison comparison = compare_ops(
      wl, stage_of, group_sizes,
      with_kernel_times(wl, stage_of, ComputeModel(core, base_params),
                        simulated_durations(wl, layout, predicted.step)),
      measured,
      with_kernel_times(wl, stage_of, fitted_kernels, simulated_durations(wl, layout, calibrated.step)));
  comparison.step = {predicted.report.step_time_s, step_s[median_step], calibrated.report.step_time_s};

  std::string measured_steps;
  for (double s : step_s) measured_steps += fmt::format(" {:.3f}", s);
  report_text << fmt::format("steps    {} warm-up, {} measured (s):{}; median {:.3f} s\n\n", req.warmup,
                             req.steps, measured_steps, comparison.step.measured_s);
  print_comparison(comparison, report_text, 25);
  report_text << "\n";
  print_fit(fit, fit.calibration, report_text);

  // The measured step's trace: the median step, every rank, in the simulated trace's names.
  StepResult measured_step;
  measured_step.step_time = TimeNs::from_seconds(comparison.step.measured_s);
  for (int64_t r = 0; r < w.ranks; ++r) {
    const StepTimes& t = measured_spans[size_t(r)].steps[median_step];
    for (size_t i = 0; i < t.start_ns.size(); ++i)
      measured_step.spans.push_back({r, uint32_t(i), TimeNs{t.start_ns[i]}, TimeNs{t.end_ns[i]}});
  }
  std::ofstream measured_trace(req.out_dir / "trace-measured.json");
  write_chrome_trace(measured_trace, sc, wl, measured_step);
  std::ofstream simulated_trace(req.out_dir / "trace-simulated.json");
  write_chrome_trace(simulated_trace, sc, wl, predicted.step);

  nlohmann::json report = comparison_json(comparison);
  report["scenario"] = sc.file;
  report["ranks"] = w.ranks;
  std::vector<std::string> scaled = req.notes;
  scaled.insert(scaled.end(), slice.scaled.begin(), slice.scaled.end());
  report["scaled"] = scaled;
  report["steps"] = {{"warmup", req.warmup}, {"measured_s", step_s}};
  report["backend"] = machine.backend;
  report[cuda ? "device" : "host"] = machine.json;
  report["fit"] = fit_json(fit);
  write_file(req.out_dir / "report.json", report.dump(2) + "\n");
  write_file(req.out_dir / "calibration.json", calibration.to_json().dump(2) + "\n");
  report_text << fmt::format(
      "wrote    {0}/report.json, {0}/calibration.json, {0}/trace-measured.json, "
      "{0}/trace-simulated.json\n",
      req.out_dir.string());
  run.out << report_text.str();
  return 0;
}

}  // namespace

bool validate_available() { return true; }

double cpu_footprint_bytes(const Scenario& sc, const StageProgram& program, const RankLayout& layout) {
  return CpuBackend::footprint_bytes(sc, program) + StepRunner::buffer_bytes(program, layout);
}

bool cuda_backend_available() {
#ifdef SIMRUN_HAVE_CUDA_BACKEND
  return true;
#else
  return false;
#endif
}

int run_validate(const std::function<ValidateRequest()>& make_request, std::ostream& out, std::ostream& err) {
  int provided = 0, initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized)
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // Errors come back to check() (mpi_world.hpp), which names them, rather than aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  World w;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &w.ranks), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  check(MPI_Comm_size(node, &w.ranks_per_node), "MPI_Comm_size");
  w.node = node;

  std::string refusal;
  std::optional<ValidateRequest> request;
  try {
    request = make_request();
    check_ranks(request->scenario, w.ranks);
    if (w.rank == 0) {  // the out folder, before any rank starts work; no heartbeat of an earlier run in it
      std::error_code ec;
      std::filesystem::create_directories(request->out_dir, ec);
      if (ec || !std::filesystem::is_directory(request->out_dir))
        throw InputError("command line", "--out",
                         "cannot create the folder " + quoted_input(request->out_dir.string()) +
                             " (give a writable path)");
      std::filesystem::remove_all(request->out_dir / "heartbeat", ec);
    }
  } catch (const InputError& e) {
    refusal = e.what();
  }
  if (agree_on_refusal(refusal, w, err)) {
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 2;
  }
  int code = 0;
  try {
    code = validate(Run{w, *request, out, err});
  } catch (const std::exception& e) {
    err << printable(fmt::format("simrun validate: rank {}: internal error: {}", w.rank, e.what()),
                     kErrorLineMaxBytes)
        << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  out.flush();
  MPI_Comm_free(&node);
  MPI_Finalize();
  return code;
}

}  // namespace simrun::exec
