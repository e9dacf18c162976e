// The scenario file argument and the Megatron-style override flags shared by the subcommands
// that take a scenario (estimate, simulate, validate).
#include <fmt/format.h>

#include "command.hpp"
#include "flag_names.hpp"
#include "simrun/common/echo.hpp"
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
  cmd.add_option("--nics-per-node", o.nics_per_node,
                 "Fabric NICs per node (cluster.fabric.nics_per_node; default one per GPU)");
  cmd.add_option("--topology", o.topology,
                 "Fabric shape (cluster.fabric.topology): rail-optimized (default) or fat-tree");
  cmd.add_option("--oversubscription", o.oversubscription,
                 "Leaf down:up bandwidth ratio (cluster.fabric.oversubscription; default 1, non-blocking)");
  cmd.add_option(option_names("--tp"), o.tp, "Tensor-parallel size");
  cmd.add_option(option_names("--pp"), o.pp, "Pipeline-parallel size");
  cmd.add_option("--dp", o.dp, "Data-parallel size (default: gpus/(tp*pp*cp))");
  cmd.add_option(option_names("--cp"), o.cp, "Context-parallel size");
  cmd.add_option(option_names("--cp-comm-type"), o.cp_comm_type,
                 "p2p (ring attention, default), all_gather (K,V gathered), a2a (Ulysses) or a2a_p2p "
                 "(hierarchical: see --hierarchical-cp-sizes; a2a+p2p also read)");
  cmd.add_option(option_names("--hierarchical-cp-sizes"), a.hierarchical_cp_sizes,
                 "a2a_p2p's two levels A,P (A*P = cp): all-to-alls over A adjacent CP ranks, the ring "
                 "over P")
      ->delimiter(',');
  cmd.add_option(option_names("--ep"), o.ep, "Expert-parallel size");
  cmd.add_option(option_names("--expert-tp"), o.expert_tp,
                 "Tensor-parallel size of the expert MLPs: tp (default) or 1");
  cmd.add_option(option_names("--moe-capacity-factor"), o.moe_capacity_factor,
                 "Expert capacity as a multiple of the balanced share, inputs padded to it "
                 "(Megatron-Core with --moe-pad-expert-input-to-capacity); default dropless, balanced");
  cmd.add_option(option_names("--virtual-stages"), o.virtual_stages,
                 "Model chunks per pipeline rank (interleaved 1F1B)");
  cmd.add_option(
      "--pipeline-split", o.pipeline_split,
      "even (default), embedding_loss_layers (the embedding and the loss each take a layer's "
      "place; embedding-loss-layers also read) or balanced (as even as possible, the extra layers on middle "
      "chunks)");
  cmd.add_option(
      "--pipeline-schedule,--schedule", o.pipeline_schedule,
      "1f1b, interleaved (the default with --virtual-stages > 1, else 1f1b), combined_1f1b (Megatron-Core's "
      "EP all-to-all overlap across micro-batches; combined-1f1b also read), dualpipe (DeepSeek-V3's "
      "bidirectional pipeline) or gpipe (all forwards, then all backwards)");
  cmd.add_option(option_names("--micro-batch"), o.micro_batch, "Sequences per micro-batch");
  cmd.add_option(option_names("--global-batch"), o.global_batch, "Sequences per step");
  cmd.add_option(option_names("--seq-len"), o.seq_len, "Sequence length in tokens");
  cmd.add_option("--zero-stage", o.zero_stage, "ZeRO stage 0-3");
  cmd.add_option(option_names("--recompute"), o.recompute, "Activation recompute: none, selective or full");
  cmd.add_option("--precision", o.precision, "Training precision: bf16, fp16, fp8, fp4 (nvfp4) or fp32");
  cmd.add_option(
      option_names("--fp8-recipe"), o.fp8_recipe,
      "How fp8/fp4 GEMMs are scaled: delayed (fp8 default), tensorwise (current scaling), blockwise "
      "(1x128 / 128x128), mxfp8 (Blackwell) or nvfp4 (fp4; docs/model.md#precision-recipes)");
  cmd.add_flag("--fp8-param-gather", a.fp8_param_gather,
               "Keep and gather the parameters in fp8 (1 byte each; fp8 recipes)");
  cmd.add_flag("--sequence-parallel", a.sequence_parallel_on, "Enable sequence parallelism");
  cmd.add_flag("--no-sequence-parallel", a.sequence_parallel_off, "Disable sequence parallelism");
  cmd.add_flag(option_names("--flash-attention"), a.flash_on, "Use fused (flash) attention");
  cmd.add_flag("--no-flash-attention", a.flash_off, "Use unfused attention (s^2 scores in HBM)");
  cmd.add_option("--tokens", o.tokens, "Training tokens (default: 20 per parameter)");
  cmd.add_option("--train-iters", o.train_iters,
                 "Training iterations (Megatron): tokens = iterations x global batch x seq_len");
  // A variant of the model: these replace the catalog's (or config.json's) shape.
  cmd.add_option("--num-layers", o.layers, "Transformer layers of a variant of the model (model.layers)");
  cmd.add_option("--hidden-size", o.hidden, "Hidden width of a variant of the model (model.hidden)");
  cmd.add_option("--num-attention-heads", o.heads, "Attention heads of a variant of the model (model.heads)");
  cmd.add_option("--num-query-groups", o.kv_heads,
                 "Key/value heads (GQA groups) of a variant (model.kv_heads)");
  cmd.add_option("--kv-channels", o.head_dim, "Width of one attention head of a variant (model.head_dim)");
  cmd.add_option("--ffn-hidden-size", o.ffn_hidden,
                 "Dense FFN width of a variant of the model (model.ffn_hidden)");
  // Megatron's switches (cli/flag_names.cpp): each sets one scenario field to one value.
  for (const MegatronArgument& m : megatron_arguments()) {
    if (m.flag.empty())  // a companion switch Megatron reads with another flag: accepted, no effect
      cmd.add_flag(std::string(m.name), a.switches[std::string(m.name)],
                   fmt::format("Megatron-LM's {}: {}", m.name, m.note));
    if (m.field.empty() || m.name == "--fp8-format") continue;
    cmd.add_flag(std::string(m.name), a.switches[std::string(m.name)],
                 fmt::format("Megatron-LM's {}: {} = {}", m.name, m.field, m.value));
  }
  cmd.add_option("--fp8-format", a.fp8_format,
                 "Megatron-LM's --fp8-format: layout.precision = fp8 (e4m3 or hybrid, the same peak here)")
      ->check(CLI::IsMember({"e4m3", "hybrid"}));
  cmd.add_option("--usd-per-gpu-hour", o.usd_per_gpu_hour, "Price per GPU-hour in dollars");
  cmd.add_option("--mfu", o.mfu, "Assume this MFU instead of modelling step time");
  cmd.add_option(
         "--framework", o.framework,
         "Framework profile whose defaults apply (scenario \"framework\"): megatron-core (default), "
         "megatron-core-perf, nemo, megatron-lm-2021, fsdp1, fsdp2, composer, torchtitan, ... or id@version "
         "(docs/model.md#framework-behaviour); the framework flags override single fields")
      ->type_name("ID[@VERSION]");
  add_catalog_option(cmd, a.catalogs);
}

namespace {

// A switch's value into its override, unless another flag gave that field another value.
template <class T>
void set_once(std::optional<T>& field, const T& value, const MegatronArgument& m) {
  if (field && *field != value)
    throw InputError("command line", std::string(m.name),
                     fmt::format("sets {} to {}, which another flag gives as {} (give one)", m.field, m.value,
                                 quoted_input(fmt::format("{}", *field))));
  field = value;
}

// Megatron's --bf16, --fp8-format, --use-distributed-optimizer, ... into the overrides. FP8 first:
// Megatron gives --bf16 or --fp16 beside --fp8-format for the parameters' dtype, and FP8 is the
// precision the GEMMs run at.
void apply_megatron_switches(const ScenarioArgs& args, ScenarioOverrides& o) {
  if (!args.fp8_format.empty()) {
    if (o.precision && *o.precision != "fp8")
      throw InputError("command line", "--fp8-format",
                       "sets layout.precision to fp8, which --precision gives as " +
                           quoted_input(*o.precision) + " (give one)");
    o.precision = "fp8";
  }
  for (const MegatronArgument& m : megatron_arguments()) {
    const auto on = args.switches.find(std::string(m.name));
    if (on == args.switches.end() || !on->second || m.flag.empty()) continue;
    const std::string value(m.value);
    if (m.field == "layout.precision") {
      if (args.fp8_format.empty()) set_once(o.precision, value, m);
    } else if (m.field == "layout.zero_stage") {
      set_once(o.zero_stage, int64_t(std::stoi(value)), m);
    } else if (m.field == "layout.recompute") {
      set_once(o.recompute, value, m);
    } else if (m.field == "layout.pipeline_schedule") {
      set_once(o.pipeline_schedule, value, m);
    } else {
      throw std::logic_error("Megatron switch " + std::string(m.name) + " sets an unhandled field");
    }
  }
}

}  // namespace

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
  if (args.fp8_param_gather) o.fp8_param_gather = true;
  if (!args.hierarchical_cp_sizes.empty()) o.hierarchical_cp_sizes = args.hierarchical_cp_sizes;
  if (o.tokens && o.train_iters)
    throw InputError("command line", "--train-iters",
                     "given together with --tokens (give the run's length once)");
  apply_megatron_switches(args, o);
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

ClusterSpec load_cluster_with_flags(const ScenarioOverrides& overrides, const Catalogs& catalogs) {
  try {
    return load_cluster(overrides, catalogs);
  } catch (const InputError& e) {
    throw as_command_line_error(e, overrides.given());
  }
}

}  // namespace simrun::cli
