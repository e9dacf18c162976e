// DeepSpeed's ZeRO and pipeline engine as the deepspeed profiles describe them
// (shared/reference/frameworks.md sections 1 and 2): ZeRO-3's per-submodule gathers with their
// prefetch bucket, v0.5's synchronous fetches, ZeRO-2's reduction at every micro-batch, the
// lock-step pipeline engine and the layouts it refuses; in both fidelities.
#include <catch2/catch.hpp>
#include <string>

#include "simrun/common/error.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

// A 1.3B GPT (GPT-3 XL's shape, Brown et al. 2020 Table 2.1) on two H100 nodes under ZeRO-3:
// small layers, so each all-gather's fixed latency weighs.
Scenario small_zero3(const std::string& framework, int64_t zero_stage = 3, const std::string& extra = "") {
  return parse_scenario_text(
      R"({"framework": ")" + framework +
      R"(", "model": {"name": "gpt-1.3b", "layers": 24, "hidden": 2048, "heads": 16, "ffn_hidden": 8192,
          "ffn_act": "gelu", "vocab": 50304, "seq_len": 1024},
          "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
          "layout": {"tp": 1, "pp": 1, "dp": 16, "micro_batch": 1, "global_batch": 32, "zero_stage": )" +
      std::to_string(zero_stage) + extra + "}}");
}

SimulateOptions options_of(const Scenario& sc) { return framework_simulate_options(sc); }

// Llama-3 8B over DeepSpeed's pipeline engine, 4 stages on 4 H100, `global_batch` micro-batches of one.
Scenario deepspeed_pipeline_of_4(int64_t global_batch) {
  return parse_scenario_text(
      R"({"framework": "deepspeed", "model": {"name": "llama3-8b", "seq_len": 2048},
          "cluster": {"gpu": "h100-sxm", "num_gpus": 4},
          "layout": {"tp": 1, "pp": 4, "dp": 1, "global_batch": )" +
      std::to_string(global_batch) + "}}");
}

struct Both {
  double event = 0, analytic = 0;
};
Both step_of(const Scenario& sc) {
  const SimulateOptions o = options_of(sc);
  return {simulate(sc, o).report.step_time_s, estimate(sc, analytic_options(o)).step_time_s};
}

int64_t count(const StageProgram& p, OpName op, int32_t layer, Phase pass_of_next_compute = Phase::comm) {
  (void)pass_of_next_compute;
  int64_t n = 0;
  for (const Task& t : p.tasks)
    if (t.op == op && t.layer == layer && t.micro_batch == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "DeepSpeed's prefetch issues the submodules ahead while fewer than the bucket's elements are in flight",
    "[sim][workload][deepspeed]") {
  // Reached in order, the first unit issues itself and those after it up to the bucket
  // (partitioned_param_coordinator.py: it stops once the in-flight count reaches the bucket).
  CHECK(prefetch_issuers({10, 10, 10, 10}, 15) == std::vector<int32_t>{0, 0, 0, 1});
  CHECK(prefetch_issuers({10, 10, 10, 10}, 0) == std::vector<int32_t>{0, 1, 2, 3});  // synchronous
  CHECK(prefetch_issuers({10, 40, 10}, 5) == std::vector<int32_t>{0, 0, 1});         // one ahead at least
}

TEST_CASE(
    "DeepSpeed's ZeRO-3 gathers each submodule, leaves norms and biases whole and is slower than FSDP's "
    "layer units where latency dominates; v0.5 slower still",
    "[sim][step][analytic][deepspeed]") {
  const Scenario ds = small_zero3("deepspeed"), fsdp = small_zero3("fsdp2"),
                 old = small_zero3("deepspeed@0.5");
  const Workload w = build_workload(ds, ds.framework.workload);
  const StageProgram& p = w.stages[0];
  // Forward and backward of micro-batch 0: QKV, the output projection, FC1 and FC2, each its
  // own all-gather, twice (FSDP: one per layer each way).
  CHECK(count(p, OpName::fsdp_gather, 5) == 8);
  CHECK(count(build_workload(fsdp, fsdp.framework.workload).stages[0], OpName::fsdp_gather, 5) == 2);
  double gathered = 0;
  int64_t units_of_layer = 0;
  for (const StageProgram::FsdpUnit& u : p.fsdp_units)
    if (u.unit == 5) {
      gathered += u.params;
      ++units_of_layer;
    }
  CHECK(units_of_layer == 4);
  CHECK(gathered == Approx(12.0 * 2048 * 2048));  // the four matrices; 13h of biases and norms stay
  // One reduce-scatter per 5e8-element bucket: the 1.3B model's gradients in three calls.
  int64_t reduces = 0;
  for (const Task& t : p.tasks)
    if (t.op == OpName::fsdp_reduce && t.micro_batch == 0) ++reduces;
  CHECK(reduces == 3);

  const Both d = step_of(ds), f = step_of(fsdp), v05 = step_of(old);
  INFO("fsdp2 " << f.event << " / " << f.analytic << " s, deepspeed " << d.event << " / " << d.analytic
                << " s, deepspeed@0.5 (deepspeed@0.3.12) " << v05.event << " / " << v05.analytic
                << " s (event / analytic)");
  CHECK(d.event > f.event);
  CHECK(d.analytic > f.analytic);
  CHECK(v05.event > d.event);
  CHECK(v05.analytic > d.analytic);
  CHECK(d.analytic == Approx(d.event).epsilon(0.1));
  CHECK(v05.analytic == Approx(v05.event).epsilon(0.1));
}

TEST_CASE("DeepSpeed's ZeRO-2 all-reduces every micro-batch's gradient buckets on the compute stream",
          "[sim][step][analytic][deepspeed]") {
  const Scenario ds = small_zero3("deepspeed", 2);
  const StageProgram p = build_workload(ds, ds.framework.workload).stages[0];
  int64_t per_micro_batch[2] = {0, 0};
  for (const Task& t : p.tasks)
    if (t.op == OpName::dp_grad_reduce) {
      REQUIRE(t.micro_batch >= 0);
      CHECK(t.coll == CollectiveOp::all_reduce);
      ++per_micro_batch[t.micro_batch];
    }
  CHECK(per_micro_batch[0] > 0);
  CHECK(per_micro_batch[0] == per_micro_batch[1]);
  // Once per step (as ZeRO-1) the same buckets cost less.
  SimulateOptions once = options_of(ds);
  once.workload.zero2_reduce_every_micro_batch = false;
  const double every = simulate(ds, options_of(ds)).report.step_time_s;
  CHECK(simulate(ds, once).report.step_time_s < every);
  const Both b = step_of(ds);
  CHECK(b.analytic == Approx(b.event).epsilon(0.1));
}

TEST_CASE("DeepSpeed's pipeline engine: lock-step blocking p2p makes the step longer than Megatron's 1F1B",
          "[sim][step][analytic][deepspeed]") {
  const Scenario sc = parse_scenario_text(
      R"({"model": {"name": "llama3-8b", "seq_len": 4096}, "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
          "layout": {"tp": 2, "pp": 4, "dp": 2, "sequence_parallel": false, "global_batch": 16,
                     "zero_stage": 1}})");
  SimulateOptions megatron;
  SimulateOptions deepspeed;
  deepspeed.workload.pipeline_engine = PipelineEngine::deepspeed;
  const double event_megatron = simulate(sc, megatron).report.step_time_s;
  const double event_deepspeed = simulate(sc, deepspeed).report.step_time_s;
  const double analytic_megatron = estimate(sc, analytic_options(megatron)).step_time_s;
  const double analytic_deepspeed = estimate(sc, analytic_options(deepspeed)).step_time_s;
  INFO("megatron " << event_megatron << " / " << analytic_megatron << " s, deepspeed " << event_deepspeed
                   << " / " << analytic_deepspeed << " s (event / analytic)");
  CHECK(event_deepspeed > event_megatron);
  CHECK(analytic_deepspeed > analytic_megatron);
  CHECK(analytic_deepspeed == Approx(event_deepspeed).epsilon(0.1));
  // The receiver posts each recv when it gets there: a send waits for it.
  const StageProgram p = build_workload(sc, deepspeed.workload).stages[1];
  int64_t posted = 0;
  for (const Task& t : p.tasks)
    if (t.kind == TaskKind::recv && t.dep_count > 0) ++posted;
  CHECK(posted > 0);
}

TEST_CASE("DeepSpeed's pipeline engine runs fewer micro-batches than stages, sending on its idle steps",
          "[sim][step][analytic][deepspeed]") {
  // TrainSchedule's clock: stage 0 of 4 runs micro-batch 0's forward at step 0 and its backward
  // at step 7, and sends the activation at step 1; it does not post the gradient's receive first.
  // Each stage's idle steps send what the step before made (the step deadlocked before).
  for (const int64_t global_batch : {1, 2, 3, 4}) {
    const Scenario sc = deepspeed_pipeline_of_4(global_batch);
    const Both b = step_of(sc);
    INFO("global batch " << global_batch << ": event " << b.event << " s, analytic " << b.analytic << " s");
    CHECK(b.event > 0);
    CHECK(b.analytic == Approx(b.event).epsilon(0.02));
  }
}

// DeepSpeed's TrainSchedule.steps() (runtime/pipe/schedule.py), its p2p commands only: each
// step's micro-batch and direction from _step_to_micro_batch; a forward step sends the previous
// (backward) step's gradient, then receives its activation; a backward step receives its
// gradient, then sends the previous (forward) step's activation. "send grad 3" and the like.
std::vector<std::string> train_schedule_p2p(int64_t stage, int64_t stages, int64_t micro_batches) {
  const auto valid = [&](int64_t mb) { return mb >= 0 && mb < micro_batches; };
  std::vector<std::string> out;
  int64_t prev = -1;
  for (int64_t step = 0; step < 2 * (micro_batches + stages - 1); ++step) {
    const bool even_step = step % 2 == 0, even_stage = stage % 2 == 0;
    const bool forward = even_step == even_stage;
    int64_t mb = 0;
    if (forward)
      mb = (even_step ? step / 2 : (step - 1) / 2) - stage / 2;
    else
      mb = even_step ? step / 2 - stages + (stage + 1) / 2 : (step - 1) / 2 - stages + 1 + stage / 2;
    const bool has_prev_stage = stage > 0, has_next_stage = stage + 1 < stages;
    if (forward) {
      if (valid(prev) && has_prev_stage) out.push_back("send grad " + std::to_string(prev));
      if (valid(mb) && has_prev_stage) out.push_back("recv act " + std::to_string(mb));
    } else {
      if (valid(mb) && has_next_stage) out.push_back("recv grad " + std::to_string(mb));
      if (valid(prev) && has_next_stage) out.push_back("send act " + std::to_string(prev));
    }
    prev = mb;
  }
  return out;
}

TEST_CASE("DeepSpeed's pipeline engine sends and receives in TrainSchedule's order on every stage",
          "[sim][step][deepspeed]") {
  // Fewer micro-batches than stages (idle steps), as many, and more.
  for (const int64_t micro_batches : {1, 3, 4, 7}) {
    const Scenario sc = deepspeed_pipeline_of_4(micro_batches);
    const Workload w = build_workload(sc, options_of(sc).workload);
    for (const StageProgram& p : w.stages) {
      std::vector<std::string> built;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::send && t.kind != TaskKind::recv) continue;
        built.push_back(std::string(t.kind == TaskKind::send ? "send " : "recv ") +
                        (t.op == OpName::pp_grad ? "grad " : "act ") + std::to_string(t.micro_batch));
      }
      INFO(micro_batches << " micro-batches, stage " << p.stage);
      CHECK(built == train_schedule_p2p(p.stage, 4, micro_batches));
    }
  }
}

TEST_CASE(
    "DeepSpeed's pipeline engine refuses virtual stages, schedules but 1F1B and ZeRO-2/3 over a pipeline",
    "[sim][scenario][deepspeed]") {
  const std::string model = R"("model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16}, )";
  auto error_field = [&](const std::string& layout) {
    try {
      parse_scenario_text(R"({"framework": "deepspeed", )" + model + R"("layout": {)" + layout + "}}");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(error_field(R"("tp": 2, "pp": 4, "dp": 2, "virtual_stages": 2, "global_batch": 16)"),
             Catch::Contains("layout.virtual_stages") && Catch::Contains("no interleaved schedule"));
  CHECK_THAT(error_field(R"("tp": 2, "pp": 4, "dp": 2, "zero_stage": 2, "global_batch": 16)"),
             Catch::Contains("layout.zero_stage") && Catch::Contains("refuses ZeRO-2 and ZeRO-3"));
  CHECK(error_field(R"("tp": 2, "pp": 4, "dp": 2, "zero_stage": 1, "global_batch": 16)") == "accepted");
  for (const char* schedule : {"gpipe", "dualpipe"})
    CHECK_THAT(error_field(R"("tp": 2, "pp": 4, "dp": 2, "global_batch": 16, "pipeline_schedule": ")" +
                           std::string(schedule) + "\""),
               Catch::Contains("layout.pipeline_schedule") && Catch::Contains("TrainSchedule (1F1B) only"));
  CHECK(error_field(R"("tp": 2, "pp": 1, "dp": 8, "zero_stage": 3, "global_batch": 16)") == "accepted");
}

TEST_CASE("DeepSpeed's ZeRO-3 holds the submodules within its prefetch bucket, not whole layers",
          "[sim][memory][deepspeed]") {
  // MT-NLG 530B's shape without TP: an FSDP layer unit is 5e9 parameters, two of them plus the
  // embeddings gathered; DeepSpeed holds its largest matrix (FC1, 1.7e9), and prefetches
  // nothing beside it: that is above max_live_parameters (1e9) already.
  const Scenario ds = parse_scenario_text(
      R"({"framework": "deepspeed", "model": "mt-nlg-530b", "cluster": {"gpu": "h100-sxm", "num_gpus": 512},
          "layout": {"tp": 1, "pp": 1, "dp": 512, "global_batch": 512, "zero_stage": 3, "recompute": "full"}})");
  Scenario fsdp = ds;
  fsdp.framework =
      parse_scenario_text(
          R"({"framework": "fsdp2", "model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8}})")
          .framework;
  const MemoryEstimate d = estimate_memory(ds, ds.framework.memory);
  const MemoryEstimate f = estimate_memory(fsdp, fsdp.framework.memory);
  const double h = 20480;
  CHECK(d.stages[0].fsdp_gathered_bytes == Approx(4 * h * h * 2));
  CHECK(d.stages[0].fsdp_unsharded_grad_bytes == Approx(5e8 * 2));
  CHECK(d.stages[0].fsdp_gathered_bytes < 0.2 * f.stages[0].fsdp_gathered_bytes);
}
