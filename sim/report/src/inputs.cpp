// The resolved inputs of a report as named fields (see inputs.hpp). Framework behaviours are
// written as the profiles spell them (framework_options.hpp), model kinds as the catalog does.
#include "simrun/sim/report/inputs.hpp"

#include "simrun/sim/scenario/layout_rules.hpp"

namespace simrun {
namespace {

const char* to_string(FfnActivation a) { return a == FfnActivation::gelu ? "gelu" : "swiglu"; }
const char* to_string(NormKind n) { return n == NormKind::layernorm ? "layernorm" : "rmsnorm"; }
void append(Fields& to, Fields more) {
  for (Field& f : more) to.push_back(std::move(f));
}

Fields model_fields(const ModelSpec& m) {
  const MoeSpec moe = m.moe.value_or(MoeSpec{});
  const MlaSpec mla = m.mla.value_or(MlaSpec{});
  return {
      {"model.name", m.name},
      {"model.layers", m.layers},
      {"model.hidden", m.hidden},
      {"model.heads", m.heads},
      {"model.kv_heads", m.kv_heads},
      {"model.head_dim", m.head_dim},
      {"model.ffn_hidden", m.ffn_hidden},
      {"model.ffn_act", to_string(m.ffn_act)},
      {"model.norm", to_string(m.norm)},
      {"model.vocab", m.vocab},
      {"model.seq_len", m.seq_len},
      {"model.tied_embeddings", m.tied_embeddings},
      {"model.attention_bias", m.attention_bias},
      {"model.qkv_bias", m.qkv_bias},
      {"model.qk_norm", m.qk_norm},
      {"model.layer_norms", m.layer_norms},
      {"model.mlp_bias", m.mlp_bias},
      {"model.learned_position_embeddings", m.learned_position_embeddings},
      {"model.alibi", m.alibi},
      {"model.max_positions", m.max_positions},
      {"model.mtp_layers", m.mtp_layers},
      {"model.moe.experts", moe.experts},
      {"model.moe.top_k", moe.top_k},
      {"model.moe.expert_ffn_hidden", moe.expert_ffn_hidden},
      {"model.moe.shared_experts", moe.shared_experts},
      {"model.moe.first_dense_layers", moe.first_dense_layers},
      {"model.moe.groups", moe.groups},
      {"model.moe.topk_groups", moe.topk_groups},
      {"model.mla.q_lora_rank", mla.q_lora_rank},
      {"model.mla.kv_lora_rank", mla.kv_lora_rank},
      {"model.mla.qk_nope_head_dim", mla.qk_nope_head_dim},
      {"model.mla.qk_rope_head_dim", mla.qk_rope_head_dim},
      {"model.mla.v_head_dim", mla.v_head_dim},
  };
}

Fields layout_fields(const Layout& l) {
  return {
      {"layout.tp", l.tp},
      {"layout.pp", l.pp},
      {"layout.dp", l.dp},
      {"layout.cp", l.cp},
      {"layout.cp_comm_type", to_string(l.cp_comm_type)},
      {"layout.cp_a2a_level", l.cp_a2a_level},
      {"layout.ep", l.ep},
      {"layout.expert_tp", l.expert_tp},
      {"layout.moe_capacity_factor", l.moe_capacity_factor},
      {"layout.virtual_stages", l.virtual_stages},
      {"layout.pipeline_split", to_string(l.pipeline_split)},
      {"layout.pipeline_schedule", to_string(default_schedule(l))},
      {"layout.sequence_parallel", l.sequence_parallel},
      {"layout.zero_stage", l.zero_stage},
      {"layout.micro_batch", l.micro_batch},
      {"layout.global_batch", l.global_batch},
      {"layout.recompute", to_string(l.recompute)},
      {"layout.precision", to_string(l.precision)},
      {"layout.fp8_recipe", l.low_precision() ? to_string(l.recipe()) : "none"},
      {"layout.fp8_param_gather", l.fp8_param_gather},
      {"layout.flash_attention", l.flash_attention},
  };
}

Fields framework_fields(const std::string& profile, const WorkloadOptions& w, PipelineSchedule schedule) {
  return {
      {"framework.profile", profile},
      {"framework.schedule", to_string(schedule)},
      {"framework.kernels", to_string(w.kernels)},
      {"framework.eager_memory_factor", w.eager_memory_factor},
      {"framework.selective_recompute", to_string(w.selective)},
      {"framework.step_overhead_s", w.step_overhead_s},
      {"framework.tp_comm_overlap", to_string(w.tp_overlap)},
      {"framework.moe_shared_expert_overlap", w.moe_shared_expert_overlap},
      {"framework.moe_token_dispatcher", to_string(w.host.moe_dispatcher)},
      {"framework.ep_dispatch_dtype", w.ep_dispatch_fp8 ? "fp8" : "bf16"},
      {"framework.grad_reduce", to_string(w.grad_reduce)},
      {"framework.param_gather", to_string(w.param_gather)},
      {"framework.bucket_params_min", w.bucket_params_min},
      {"framework.bucket_params_per_dp", w.bucket_params_per_dp},
      {"framework.one_bucket_after_first_chunk", w.one_bucket_after_first_chunk},
      {"framework.grad_reduce_bytes", w.grad_reduce_bytes},
      {"framework.fsdp_prefetch_layers", w.fsdp_prefetch_layers},
      {"framework.fsdp_backward_prefetch", to_string(w.fsdp_backward_prefetch)},
      {"framework.fsdp_one_communicator", w.fsdp_one_communicator},
      {"framework.zero3_gather_granularity", to_string(w.zero3_gather)},
      {"framework.zero3_prefetch_bucket_params", w.zero3_prefetch_bucket_params},
      {"framework.zero3_persistence_threshold", w.zero3_persistence_threshold},
      {"framework.zero3_fetch", to_string(w.zero3_fetch)},
      {"framework.zero3_reduce", to_string(w.zero3_reduce)},
      {"framework.zero3_reduce_events", w.zero3_reduce_events},
      {"framework.zero2_reduce_every_micro_batch", w.zero2_reduce_every_micro_batch},
      {"framework.zero_grad_collective", to_string(w.zero_grad_collective)},
      {"framework.pipeline_engine", to_string(w.pipeline_engine)},
      {"framework.adam_bytes_per_param", w.adam_bytes_per_param},
      {"framework.grad_clip_bytes_per_param", w.grad_clip_bytes_per_param},
  };
}

Fields run_fields(const RunSpec& r) {
  return {
      {"run.tokens", r.tokens > 0 ? nlohmann::json(r.tokens) : nlohmann::json()},
      {"run.usd_per_gpu_hour", r.usd_per_gpu_hour},
      {"run.gpu_mtbf_hours", r.gpu_mtbf_hours},
      {"run.checkpoint_interval_min",
       r.checkpoint_interval_min ? nlohmann::json(*r.checkpoint_interval_min) : nlohmann::json("auto")},
      {"run.assumed_mfu", r.assumed_mfu ? nlohmann::json(*r.assumed_mfu) : nlohmann::json()},
  };
}

}  // namespace

Fields cluster_input_fields(const ClusterSpec& c) {
  return {
      {"cluster.gpu", c.gpu.id},
      {"cluster.num_gpus", c.num_gpus},
      {"cluster.gpus_per_node", c.gpus_per_node},
      {"cluster.fabric.kind", c.fabric.id},
      {"cluster.fabric.nics_per_node", c.nics_per_node},
      {"cluster.fabric.topology", to_string(c.topology)},
      {"cluster.fabric.oversubscription", c.oversubscription},
  };
}

Fields report_input_fields(const Scenario& s, const WorkloadOptions& workload,
                           const std::string& calibration_file) {
  Fields fields = model_fields(s.model);
  append(fields, cluster_input_fields(s.cluster));
  append(fields, layout_fields(s.layout));
  append(fields, framework_fields(s.framework.id, workload, default_schedule(s.layout)));
  append(fields, run_fields(s.run));
  fields.push_back(
      {"calibration", calibration_file.empty() ? nlohmann::json() : nlohmann::json(calibration_file)});
  return fields;
}

}  // namespace simrun
