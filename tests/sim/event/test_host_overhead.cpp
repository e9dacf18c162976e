// Host overhead (docs/model.md "Host overhead"): the host issues each rank's kernels one after
// another, so a many-kernel toy model is launch-bound while a large-GEMM run does not notice;
// CUDA graphs issue a captured region as one launch; a dropless MoE layer's dispatcher makes
// the host wait for the GPU once per forward. Both fidelities.
#include <catch2/catch.hpp>

#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

// 24 layers of width 64 on one H100: each kernel takes about its 3 µs of GPU-side overhead,
// less than the 9.4 µs the host takes to issue it.
Scenario toy() {
  return parse_scenario_text(
      R"({"model": {"name": "toy", "layers": 24, "hidden": 64, "heads": 4, "kv_heads": 4,
      "ffn_hidden": 256, "vocab": 512, "seq_len": 128}, "cluster": {"gpu": "h100-sxm", "num_gpus": 1},
      "layout": {"tp": 1, "pp": 1, "dp": 1, "micro_batch": 1, "global_batch": 4}})");
}

// A small MoE on 8 GPUs, EP 8: 8 experts, top-2; kernels longer than their launches.
Scenario moe_toy(const std::string& extra_layout = "") {
  return parse_scenario_text(R"({"model": {"name": "moe-toy", "layers": 4, "hidden": 1024, "heads": 8,
      "kv_heads": 8, "ffn_hidden": 2048, "vocab": 1024, "seq_len": 2048,
      "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 512}},
      "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "micro_batch": 1, "global_batch": 16)" +
                             extra_layout + "}}");
}

struct Step {
  double event = 0, analytic = 0, host_wait = 0;
  int64_t launches = 0;
};

Step step(const Scenario& sc, const HostOverhead& host) {
  SimulateOptions o;
  o.workload.host = host;
  o.workload.step_overhead_s = 0;  // the fixed per-step allowance would hide the launches
  const SimulationOutput out = simulate(sc, o);
  Step s;
  s.event = out.report.step_time_s;
  s.analytic = estimate(sc, analytic_options(o)).step_time_s;
  s.host_wait = out.step.ranks.at(out.step.critical).host_wait_s;
  for (const Task& t : out.workload.stages.front().tasks) s.launches += t.host_launches;
  return s;
}

HostOverhead no_host() {
  HostOverhead h;
  h.launch_s = 0;
  h.sync_s = 0;
  return h;
}

HostOverhead graphs(std::initializer_list<CudaGraphScope> scopes) {
  HostOverhead h;
  for (CudaGraphScope s : scopes) h.cuda_graphs.add(s);
  return h;
}

// Host syncs in the forward passes of a stage program (the dispatcher's), and before the optimizer.
int64_t forward_syncs(const StageProgram& p) {
  int64_t n = 0;
  for (const Task& t : p.tasks)
    if (t.phase == Phase::forward || t.phase == Phase::recompute) n += t.host_syncs;
  return n;
}

}  // namespace

TEST_CASE("a many-kernel toy model is launch-bound: the step is the host's issue time", "[sim][host]") {
  const Scenario sc = toy();
  const HostOverhead host;
  const Step with = step(sc, host), without = step(sc, no_host());
  INFO("with the host " << with.event << " s (" << with.launches << " launches, host waits " << with.host_wait
                        << " s, estimate " << with.analytic << " s); without " << without.event << " s");
  CHECK(with.event >= double(with.launches) * host.launch_s);  // the GPU cannot run ahead of the host
  CHECK(with.event < double(with.launches) * host.launch_s * 1.1);
  CHECK(with.event > 1.5 * without.event);
  CHECK(with.host_wait > 0.3 * with.event);
  CHECK(without.host_wait == 0);
  CHECK(with.analytic == Approx(with.event).epsilon(0.05));
  CHECK(without.analytic == Approx(without.event).epsilon(0.05));
}

TEST_CASE("CUDA graphs issue a captured region as one launch: the launch-bound step shrinks", "[sim][host]") {
  const Scenario sc = toy();
  const Step eager = step(sc, HostOverhead{});
  const Step modules = step(sc, graphs({CudaGraphScope::attn, CudaGraphScope::mlp}));
  const Step whole = step(sc, graphs({CudaGraphScope::full_iteration}));
  const Step none = step(sc, no_host());
  INFO("eager " << eager.event << " s (" << eager.launches << " launches), attn+mlp graphs " << modules.event
                << " s (" << modules.launches << "), full iteration " << whole.event << " s ("
                << whole.launches << "), no host " << none.event << " s");
  CHECK(modules.launches < eager.launches / 3);
  CHECK(modules.event < 0.6 * eager.event);
  CHECK(whole.launches < modules.launches);
  CHECK(whole.event <= modules.event);
  CHECK(whole.event < 1.1 * none.event);  // what is left: the GPU's own time per kernel
  CHECK(modules.analytic == Approx(modules.event).epsilon(0.05));
  CHECK(whole.analytic == Approx(whole.event).epsilon(0.05));
}

TEST_CASE("a large-GEMM run does not notice the host", "[sim][host]") {
  Scenario sc = parse_scenario_text(R"({"model": "llama3-70b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 8, "pp": 1, "dp": 1, "micro_batch": 1, "global_batch": 4}})");
  sc.model.layers = 4;
  const Step with = step(sc, HostOverhead{}), without = step(sc, no_host());
  INFO("with the host " << with.event << " s, without " << without.event << " s");
  CHECK(with.event == Approx(without.event).epsilon(0.002));
  CHECK(with.host_wait < 0.002 * with.event);
  CHECK(with.analytic == Approx(without.analytic).epsilon(0.002));
}

TEST_CASE("a dropless MoE layer's dispatcher makes the host wait once per forward, drop-and-pad never",
          "[sim][host][moe]") {
  const Scenario dropless = moe_toy();
  const int64_t micro_batches = 2, moe_layers = 4;
  WorkloadOptions alltoall;
  const Workload a = build_workload(dropless, alltoall);
  CHECK(forward_syncs(a.stages.front()) == moe_layers * micro_batches);
  WorkloadOptions allgather;
  allgather.host.moe_dispatcher = MoeDispatcher::allgather;  // a blocking .cpu() and an .item()
  CHECK(forward_syncs(build_workload(dropless, allgather).stages.front()) == 2 * moe_layers * micro_batches);
  // TE graphs over the router do not remove it; drop-and-pad does.
  WorkloadOptions router_graphs;
  router_graphs.host.cuda_graphs.add(CudaGraphScope::moe_router);
  router_graphs.host.cuda_graphs.add(CudaGraphScope::moe_preprocess);
  CHECK(forward_syncs(build_workload(dropless, router_graphs).stages.front()) == moe_layers * micro_batches);
  const Workload padded = build_workload(moe_toy(R"(, "moe_capacity_factor": 1.0)"), alltoall);
  CHECK(forward_syncs(padded.stages.front()) == 0);
  // The gradient norm's .item() before the optimizer, in either.
  int64_t optimizer_syncs = 0;
  for (const Task& t : padded.stages.front().tasks)
    if (t.op == OpName::optimizer) optimizer_syncs += t.host_syncs;
  CHECK(optimizer_syncs == 1);
}

TEST_CASE("after each dispatcher sync the GPU waits for the host to refill its queue, in both fidelities",
          "[sim][host][moe]") {
  const Scenario sc = moe_toy();
  const Step with = step(sc, HostOverhead{}), without = step(sc, no_host());
  INFO("with the host " << with.event << " s (host waits " << with.host_wait << " s, estimate "
                        << with.analytic << " s); without " << without.event << " s");
  CHECK(with.event > without.event);
  CHECK(with.host_wait > 0);
  CHECK(with.analytic == Approx(with.event).epsilon(0.05));
}
