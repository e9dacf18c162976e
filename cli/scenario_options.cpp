// The scenario file argument and the Megatron-style override flags shared by the subcommands
// that take a scenario (estimate, simulate, topology, plan).
#include "command.hpp"
#include "flag_names.hpp"
#include "simrun/common/error.hpp"
#include "simrun/models/catalog.hpp"

namespace simrun::cli {

void add_scenario_options(CLI::App& cmd, ScenarioArgs& a) {
  auto& o = a.overrides;
  cmd.add_option("scenario", a.file,
                 "Scenario JSON file (DESIGN.md format); optional when --model and --gpu are given");
  cmd.add_option("--model", o.model,
                 "Model catalog id (e.g. llama3-70b) or a HuggingFace config.json path (e.g. "
                 "gemma-2-9b/config.json, relative to the working directory; model_type one of " +
                     join_names(hf_model_types()) + "; see docs/model.md)");
  cmd.add_option("--gpu", o.gpu, "GPU catalog id, e.g. h100-sxm");
  cmd.add_option("--gpus", o.gpus, "Number of GPUs (cluster.num_gpus)");
  cmd.add_option("--gpus-per-node", o.gpus_per_node, "GPUs per node (cluster.gpus_per_node)");
  cmd.add_option("--fabric", o.fabric, "Inter-node fabric id, e.g. ib-ndr");
  cmd.add_option("--tp,--tensor-model-parallel-size", o.tp, "Tensor-parallel size");
  cmd.add_option("--pp,--pipeline-model-parallel-size", o.pp, "Pipeline-parallel size");
  cmd.add_option("--dp", o.dp, "Data-parallel size (default: gpus/(tp*pp*cp))");
  cmd.add_option("--cp,--context-parallel-size", o.cp, "Context-parallel size");
  cmd.add_option("--cp-comm-type", o.cp_comm_type,
                 "p2p (ring attention, default), all_gather (K,V gathered), a2a (Ulysses) or a2a_p2p "
                 "(hierarchical: see --hierarchical-cp-sizes; a2a+p2p also read)");
  cmd.add_option("--hierarchical-cp-sizes,--hierarchical-context-parallel-sizes", a.hierarchical_cp_sizes,
                 "a2a_p2p's two levels A,P (A*P = cp): all-to-alls over A adjacent CP ranks, the ring "
                 "over P")
      ->delimiter(',');
  cmd.add_option("--ep,--expert-model-parallel-size", o.ep, "Expert-parallel size");
  cmd.add_option("--expert-tp,--expert-tensor-parallel-size", o.expert_tp,
                 "Tensor-parallel size of the expert MLPs: tp (default) or 1");
  cmd.add_option("--moe-capacity-factor,--moe-expert-capacity-factor", o.moe_capacity_factor,
                 "Expert capacity as a multiple of the balanced share, inputs padded to it "
                 "(Megatron-Core with --moe-pad-expert-input-to-capacity); default dropless, balanced");
  cmd.add_option("--virtual-stages,--num-virtual-stages-per-pipeline-rank", o.virtual_stages,
                 "Model chunks per pipeline rank (interleaved 1F1B)");
  cmd.add_option("--pipeline-split", o.pipeline_split,
                 "even (default), embedding_loss_layers (the embedding and the loss each take a layer's "
                 "place; embedding-loss-layers also read) or balanced (1F1B: the extra layers on middle "
                 "stages)");
  cmd.add_option("--micro-batch,--micro-batch-size", o.micro_batch, "Sequences per micro-batch");
  cmd.add_option("--global-batch,--global-batch-size", o.global_batch, "Sequences per step");
  cmd.add_option("--seq-len,--seq-length", o.seq_len, "Sequence length in tokens");
  cmd.add_option("--zero-stage", o.zero_stage, "ZeRO stage 0-3");
  cmd.add_option("--recompute,--recompute-granularity", o.recompute,
                 "Activation recompute: none, selective or full");
  cmd.add_option("--precision", o.precision, "Training precision: bf16, fp16, fp8 or fp32");
  cmd.add_flag("--sequence-parallel", a.sequence_parallel_on, "Enable sequence parallelism");
  cmd.add_flag("--no-sequence-parallel", a.sequence_parallel_off, "Disable sequence parallelism");
  cmd.add_flag("--flash-attention", a.flash_on, "Use fused (flash) attention");
  cmd.add_flag("--no-flash-attention", a.flash_off, "Use unfused attention (s^2 scores in HBM)");
  cmd.add_option("--tokens", o.tokens, "Training tokens (default: 20 per parameter)");
  cmd.add_option("--usd-per-gpu-hour", o.usd_per_gpu_hour, "Price per GPU-hour in dollars");
  cmd.add_option("--mfu", o.mfu, "Assume this MFU instead of modelling step time");
  add_catalog_option(cmd, a.catalogs);
}

Scenario resolve_scenario(const ScenarioArgs& args, const Catalogs& catalogs) {
  ScenarioOverrides o = args.overrides;
  if (args.sequence_parallel_on && args.sequence_parallel_off)
    throw InputError("command line", "--sequence-parallel",
                     "given together with --no-sequence-parallel (choose one)");
  if (args.flash_on && args.flash_off)
    throw InputError("command line", "--flash-attention",
                     "given together with --no-flash-attention (choose one)");
  if (args.sequence_parallel_on) o.sequence_parallel = true;
  if (args.sequence_parallel_off) o.sequence_parallel = false;
  if (args.flash_on) o.flash_attention = true;
  if (args.flash_off) o.flash_attention = false;
  if (!args.hierarchical_cp_sizes.empty()) o.hierarchical_cp_sizes = args.hierarchical_cp_sizes;
  // A config.json path on the command line starts at the working directory, not at the
  // scenario file's (where the scenario's own paths start).
  if (o.model && names_hf_config_file(*o.model) && !catalogs.models.contains(*o.model))
    o.model = std::filesystem::absolute(*o.model).lexically_normal().string();
  if (args.file.empty() && !(o.model && o.gpu))
    throw InputError("command line", "scenario",
                     "give a scenario file, or at least --model and --gpu (e.g. --model llama3-70b --gpu "
                     "h100-sxm --gpus 1024)");
  return load_scenario_with_flags(args.file, o, catalogs);
}

Scenario load_scenario_with_flags(const std::string& file, const ScenarioOverrides& overrides,
                                  const Catalogs& catalogs) {
  Scenario s;
  try {
    s = load_scenario(file, overrides, catalogs);
  } catch (const InputError& e) {
    throw as_command_line_error(e, overrides.given());
  }
  if (file.empty()) s.file = "command line";  // what later errors name as the scenario's source
  return s;
}

}  // namespace simrun::cli
