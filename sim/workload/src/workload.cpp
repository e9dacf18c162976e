// The workload builder: Scenario → one task program per pipeline stage (workload.hpp). This
// file holds the names of the workload's words, the schedule's checks and the assembly of the
// stages; each stage's program is built by StageBuilder (the layers' ops in
// workload_builder.cpp, workload_builder_attention.cpp and workload_builder_moe.cpp, the step
// around them in workload_builder_step.cpp). The schedules are in
// schedule.cpp, the layer split with the layout rules (sim/scenario/layout_rules.hpp).
#include "simrun/sim/workload/workload.hpp"

#include <fmt/format.h>

#include "host_work.hpp"
#include "simrun/common/error.hpp"
#include "workload_builder.hpp"

namespace simrun {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::compute:
      return "compute";
    case Stream::tp:
      return "tp comm";
    case Stream::cp:
      return "cp comm";
    case Stream::ep:
      return "ep comm";
    case Stream::ep_intra:
      return "ep nvlink comm";
    case Stream::pp_send:
      return "pp send";
    case Stream::pp_recv:
      return "pp recv";
    case Stream::dp_grad:
      return "dp grad";
    case Stream::dp_param:
      return "dp param";
    case Stream::count:
      break;
  }
  return "?";
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::recompute:
      return "recompute";
    case Phase::optimizer:
      return "optimizer";
    case Phase::comm:
      return "comm";
  }
  return "?";
}

const char* to_string(OpName op) {
  static const char* const kNames[] = {"embedding",
                                       "ln_attn",
                                       "qkv",
                                       "rope",
                                       "attn_core",
                                       "proj",
                                       "residual_attn",
                                       "ln_mlp",
                                       "fc1",
                                       "act",
                                       "fc2",
                                       "residual_mlp",
                                       "final_ln",
                                       "logits",
                                       "loss",
                                       "optimizer",
                                       "grad_norm",
                                       "step_overhead",
                                       "tp_ag_attn",
                                       "tp_rs_attn",
                                       "tp_ar_attn",
                                       "tp_ag_mlp",
                                       "tp_rs_mlp",
                                       "tp_ar_mlp",
                                       "tp_ag_in_attn",
                                       "tp_ag_in_mlp",
                                       "tp_embedding",
                                       "tp_logits",
                                       "tp_loss",
                                       "cp_kv",
                                       "cp_a2a",
                                       "pp_act",
                                       "pp_grad",
                                       "dp_grad_reduce",
                                       "dp_param_gather",
                                       "fsdp_gather",
                                       "fsdp_reduce",
                                       "router",
                                       "moe_permute",
                                       "moe_sort_chunks",
                                       "expert_fc1",
                                       "expert_act",
                                       "expert_fc2",
                                       "moe_unpermute",
                                       "ep_dispatch",
                                       "ep_combine",
                                       "tp_ag_expert",
                                       "tp_rs_expert",
                                       "mla_q_down",
                                       "mla_q_up",
                                       "mla_kv_down",
                                       "mla_kv_up",
                                       "mla_norm",
                                       "tp_ar_latent"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(OpName::count));
  const auto i = static_cast<size_t>(op);
  return i < static_cast<size_t>(OpName::count) ? kNames[i] : "?";
}

size_t Workload::task_count() const {
  size_t n = 0;
  for (const auto& s : stages) n += s.tasks.size();
  return n;
}

std::optional<LayoutDiagnostic> workload_layout_error(const Scenario& sc, const WorkloadOptions& options,
                                                      PipelineSchedule schedule) {
  const Layout& l = sc.layout;
  if (auto error = layout_error(sc.model, sc.cluster, l)) return error;
  if (auto error = pipeline_engine_error(l, options)) return error;
  const int64_t mbs = l.num_microbatches();
  SIMRUN_ASSERT(mbs >= 1, "a valid layout has a micro-batch per pipeline");
  if (slot_order(schedule, l.virtual_stages) != PipelineSchedule::interleaved) return std::nullopt;
  if (l.pp < 2)
    return LayoutDiagnostic{"layout.virtual_stages", "interleaved_needs_pp",
                            "the interleaved schedule needs pp >= 2 (use virtual_stages = 1)"};
  if (mbs < l.pp)
    return LayoutDiagnostic{"layout.global_batch", "interleaved_needs_pp_micro_batches",
                            "the interleaved schedule needs at least pp (" + std::to_string(l.pp) +
                                ") micro-batches per step, got " + std::to_string(mbs) +
                                " = global_batch/(micro_batch·dp); raise global_batch or lower pp"};
  if (!schedule_completes(schedule, l.pp, mbs, l.virtual_stages)) {
    const int64_t fits = (mbs + l.pp - 1) / l.pp * l.pp;
    return LayoutDiagnostic{
        "layout.global_batch", "interleaved_schedule_incomplete",
        fmt::format("the interleaved schedule cannot complete with {} micro-batches on pp {} "
                    "with {} virtual stages: in Megatron's order (schedules.py table and "
                    "warm-up) the last, partial group of {} waits on itself (use a multiple "
                    "of pp, e.g. {} micro-batches: global_batch {})",
                    mbs, l.pp, l.virtual_stages, mbs % l.pp, fits, fits * l.micro_batch * l.dp)};
  }
  return std::nullopt;
}

std::vector<int32_t> prefetch_issuers(const std::vector<double>& params, double bucket_params) {
  std::vector<int32_t> issuer(params.size(), 0);
  size_t next = 0;  // the first unit not issued yet
  for (size_t i = 0; i < params.size(); ++i) {
    if (next <= i) {
      issuer[i] = static_cast<int32_t>(i);
      next = i + 1;
    }
    double in_flight = 0;
    for (size_t k = i + 1; k < next; ++k) in_flight += params[k];
    for (; next < params.size() && in_flight < bucket_params; ++next) {
      issuer[next] = static_cast<int32_t>(i);
      in_flight += params[next];
    }
  }
  return issuer;
}

Workload build_workload(const Scenario& sc, const WorkloadOptions& options, PipelineSchedule schedule) {
  Workload w;
  w.layout = sc.layout;
  if (schedule == PipelineSchedule::interleaved && sc.layout.virtual_stages < 2)
    schedule = PipelineSchedule::one_f_one_b;

  w.schedule = schedule;
  if (const auto error = workload_layout_error(sc, options, schedule))
    throw InputError(sc.file, error->field, error->message);
  w.warnings = messages(layout_warnings(sc, schedule));
  const Layout& l = sc.layout;
  const int64_t v = stage_chunks(schedule, l.virtual_stages);
  w.micro_batches = l.num_microbatches();
  if (auto unpaired = unpaired_schedule_warning(schedule, l.pp, w.micro_batches, v))
    w.warnings.push_back(*unpaired);
  if (schedule == PipelineSchedule::dualpipe) {
    w.layers_per_chunk =
        dualpipe_layers_per_chunk(split_layers(sc.model.layers, l.pp, 1, l.pipeline_split, sc.file));
  } else {
    w.layers_per_chunk = split_layers(sc.model.layers, l.pp, v, l.pipeline_split, sc.file);
  }

  detail::StageBuilder::Shared shared(sc, options, w.layers_per_chunk, v, w.micro_batches, schedule);
  std::vector<detail::StageBuilder> builders;
  builders.reserve(static_cast<size_t>(l.pp));
  for (int64_t s = 0; s < l.pp; ++s) {
    builders.emplace_back(shared, s);
    builders.back().build(stage_schedule(schedule, s, l.pp, w.micro_batches, v), schedule);
  }
  detail::link_pipeline_messages(builders);
  for (auto& b : builders) {
    w.stages.push_back(b.take());
    detail::mark_host_work(w.stages.back(), sc, options);
  }
  w.host = options.host;

  const double ranks_per_stage = double(l.tp * l.cp * l.dp);
  for (const auto& st : w.stages) {
    w.model_flops_per_step += st.flops_model * ranks_per_stage;
    w.hardware_flops_per_step += (st.flops_model + st.flops_recompute + st.flops_padding) * ranks_per_stage;
  }
  return w;
}

}  // namespace simrun
