// The field → flag tables of the simrun command (see flag_names.hpp).
#include "flag_names.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "simrun/sim/scenario/scenario_parser.hpp"

namespace simrun::cli {
namespace {

struct FieldFlag {
  std::string_view field;
  std::string_view flag;
};

// Scenario fields (DESIGN.md "Scenario file") and the flag that overrides each.
constexpr FieldFlag kScenarioFlags[] = {
    {"model", "--model"},
    {"model.seq_len", "--seq-len"},
    {"model.layers", "--num-layers"},
    {"model.hidden", "--hidden-size"},
    {"model.heads", "--num-attention-heads"},
    {"model.kv_heads", "--num-query-groups"},
    {"model.head_dim", "--kv-channels"},
    {"model.ffn_hidden", "--ffn-hidden-size"},
    {"cluster.gpu", "--gpu"},
    {"cluster.num_gpus", "--gpus"},
    {"cluster.gpus_per_node", "--gpus-per-node"},
    {"cluster.fabric.kind", "--fabric"},
    {"cluster.fabric.nics_per_node", "--nics-per-node"},
    {"cluster.fabric.topology", "--topology"},
    {"cluster.fabric.oversubscription", "--oversubscription"},
    {"layout.tp", "--tp"},
    {"layout.pp", "--pp"},
    {"layout.dp", "--dp"},
    {"layout.cp", "--cp"},
    {"layout.cp_comm_type", "--cp-comm-type"},
    {"layout.hierarchical_context_parallel_sizes", "--hierarchical-cp-sizes"},
    {"layout.ep", "--ep"},
    {"layout.expert_tp", "--expert-tp"},
    {"layout.moe_capacity_factor", "--moe-capacity-factor"},
    {"layout.virtual_stages", "--virtual-stages"},
    {"layout.pipeline_split", "--pipeline-split"},
    {"layout.pipeline_schedule", "--pipeline-schedule"},
    {"layout.micro_batch", "--micro-batch"},
    {"layout.global_batch", "--global-batch"},
    {"layout.zero_stage", "--zero-stage"},
    {"layout.recompute", "--recompute"},
    {"layout.precision", "--precision"},
    {"layout.fp8_recipe", "--fp8-recipe"},
    {"layout.fp8_param_gather", "--fp8-param-gather"},
    {"layout.sequence_parallel", "--sequence-parallel"},
    {"layout.flash_attention", "--flash-attention"},
    {"run.tokens", "--tokens"},
    {"run.train_iters", "--train-iters"},
    {"run.usd_per_gpu_hour", "--usd-per-gpu-hour"},
    {"run.assumed_mfu", "--mfu"},
    {"framework", "--framework"},
};

// Megatron-LM arguments (megatron/training/arguments.py, core_r0.12) and simrun's reading of each.
const std::vector<MegatronArgument> kMegatronArguments = {
    {"--tensor-model-parallel-size", "--tp", "", "", ""},
    {"--pipeline-model-parallel-size", "--pp", "", "", ""},
    {"--context-parallel-size", "--cp", "", "", ""},
    {"--cp-comm-type", "--cp-comm-type", "", "", "one type for every layer"},
    {"--hierarchical-context-parallel-sizes", "--hierarchical-cp-sizes", "", "", ""},
    {"--expert-model-parallel-size", "--ep", "", "", ""},
    {"--expert-tensor-parallel-size", "--expert-tp", "", "", ""},
    {"--moe-expert-capacity-factor", "--moe-capacity-factor", "", "",
     "experts' inputs padded to the capacity (Megatron's --moe-pad-expert-input-to-capacity)"},
    {"--moe-pad-expert-input-to-capacity", "", "", "",
     "accepted, sets nothing: simrun pads to the capacity factor wherever one is given"},
    {"--num-virtual-stages-per-pipeline-rank", "--virtual-stages", "", "", ""},
    {"--micro-batch-size", "--micro-batch", "", "", ""},
    {"--global-batch-size", "--global-batch", "", "", ""},
    {"--seq-length", "--seq-len", "", "", ""},
    {"--num-layers", "--num-layers", "", "", "a variant of the model (published parameter total dropped)"},
    {"--hidden-size", "--hidden-size", "", "", "head_dim follows hidden/heads unless the model states it"},
    {"--num-attention-heads", "--num-attention-heads", "", "", ""},
    {"--num-query-groups", "--num-query-groups", "", "", "Megatron reads it with --group-query-attention"},
    {"--group-query-attention", "", "", "",
     "accepted, sets nothing: the model's kv_heads (--num-query-groups) say it"},
    {"--kv-channels", "--kv-channels", "", "", ""},
    {"--ffn-hidden-size", "--ffn-hidden-size", "", "", "the dense FFN; MoE experts keep their width"},
    {"--recompute-granularity", "--recompute", "", "", "full or selective (and simrun's none)"},
    {"--sequence-parallel", "--sequence-parallel", "", "", ""},
    {"--use-flash-attn", "--flash-attention", "", "", ""},
    {"--train-iters", "--train-iters", "", "", "tokens = iterations x global batch x seq_len"},
    {"--bf16", "--bf16", "layout.precision", "bf16", ""},
    {"--fp16", "--fp16", "layout.precision", "fp16", ""},
    {"--fp8-format", "--fp8-format", "layout.precision", "fp8",
     "e4m3 or hybrid (the same peak); wins over --bf16/--fp16, which Megatron gives beside it"},
    {"--fp8-recipe", "--fp8-recipe", "", "", "delayed, tensorwise, blockwise or mxfp8 (and simrun's nvfp4)"},
    {"--fp4-recipe", "--fp8-recipe", "", "", "nvfp4, with --precision fp4"},
    {"--fp8-param-gather", "--fp8-param-gather", "", "", "parameters kept and all-gathered in fp8"},
    {"--use-distributed-optimizer", "--use-distributed-optimizer", "layout.zero_stage", "1", ""},
    {"--recompute-activations", "--recompute-activations", "layout.recompute", "selective", ""},
    {"--overlap-moe-expert-parallel-comm", "--overlap-moe-expert-parallel-comm", "layout.pipeline_schedule",
     "combined_1f1b",
     "Megatron-Core 0.14+: one micro-batch's forward beside another's backward, the EP all-to-alls of each "
     "behind the other's compute"},
    {"--overlap-grad-reduce", "--overlap-grad-reduce", "", "",
     "DP gradient reduce per bucket during the backward: simrun's default (--no-overlap-grad-reduce: after "
     "it, Megatron's default)"},
    {"--overlap-param-gather", "--overlap-param-gather", "", "",
     "ZeRO parameter all-gather per bucket before its first forward use: simrun's default "
     "(--no-overlap-param-gather: after the optimizer step)"},
    {"--tp-comm-overlap", "--tp-comm-overlap", "", "", "TP collectives overlapped with their GEMMs"},
    {"--grad-reduce-in-bf16", "--grad-reduce-in-bf16", "", "",
     "DP gradients kept and reduced in bf16 (without it Megatron-LM keeps and reduces them in fp32 under "
     "--bf16, as the megatron-core profile does)"},
    {"--moe-shared-expert-overlap", "--moe-shared-expert-overlap", "", "",
     "shared experts beside the dispatch and combine all-to-alls"},
    {"--moe-token-dispatcher-type", "--moe-token-dispatcher-type", "", "",
     "alltoall, allgather or flex (DeepEP / HybridEP): the MoE token dispatcher, in place of the framework "
     "profile's"},
};

// Typed options (source, field: a list's elements too) and the flag that fills each.
struct OptionFlag {
  std::string_view source;
  std::string_view field;
  std::string_view flag;
};
constexpr OptionFlag kOptionFlags[] = {
    {"sweep", "min_bytes", "-b"},
    {"sweep", "max_bytes", "-e"},
    {"sweep", "factor", "-f"},
    {"collective", "ranks", "--gpus"},
    {"collective", "root", "--root"},
    {"collective", "channels", "--channels"},
    {"collective", "algorithm", "--algo"},
    {"collective", "protocol", "--proto"},
    {"step", "scope", "--full"},
    {"step", "stragglers", "--straggler"},
    {"step", "slow_links", "--slow-link"},
    {"step", "trace_ranks", "--trace-ranks"},
};

// An error's advice names scenario fields ("set layout.pipeline_split to ..."); on the command
// line each is followed by its flag, once: "layout.pipeline_split (--pipeline-split)".
std::string with_flags(std::string why) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const FieldFlag& f : kScenarioFlags) {
    if (f.field.find('.') == std::string_view::npos) continue;
    const std::string mark = " (" + std::string(f.flag) + ")";
    for (size_t at = why.find(f.field); at != std::string::npos; at = why.find(f.field, at + 1)) {
      const size_t end = at + f.field.size();
      // A field inside a longer name ("layout.pp" in "layout.pp_x", "x.layout.pp" or "layout.pp.y")
      // is not it; a sentence's full stop after it is.
      const bool longer_after =
          end < why.size() &&
          (word(why[end]) || (why[end] == '.' && end + 1 < why.size() && word(why[end + 1])));
      if ((at > 0 && (word(why[at - 1]) || why[at - 1] == '.')) || longer_after) continue;
      if (why.compare(end, mark.size(), mark) == 0) continue;
      why.insert(end, mark);
    }
  }
  return why;
}

// "stragglers[0].rank" is within "stragglers"; "stragglers_x" is not.
bool within(std::string_view field, std::string_view top) {
  if (field.substr(0, top.size()) != top) return false;
  return field.size() == top.size() || field[top.size()] == '.' || field[top.size()] == '[';
}

}  // namespace

std::optional<std::string> flag_of_scenario_field(std::string_view path) {
  for (const FieldFlag& f : kScenarioFlags)
    if (f.field == path) return std::string(f.flag);
  return std::nullopt;
}

std::optional<std::string> scenario_field_of_flag(std::string_view flag) {
  for (const FieldFlag& f : kScenarioFlags)
    if (f.flag == flag) return std::string(f.field);
  return std::nullopt;
}

const std::vector<MegatronArgument>& megatron_arguments() { return kMegatronArguments; }

std::string option_names(std::string_view flag) {
  std::string names(flag);
  for (const MegatronArgument& a : kMegatronArguments)
    if (a.flag == flag && a.name != flag) names.append(",").append(a.name);
  return names;
}

std::string megatron_arguments_markdown() {
  std::string table =
      "| Megatron-LM argument | simrun flag | sets | note |\n"
      "|---|---|---|---|\n";
  for (const MegatronArgument& a : kMegatronArguments) {
    std::string sets;
    if (a.flag.empty())
      sets = "nothing";
    else if (!a.field.empty())
      sets = "`" + std::string(a.field) + " = " + std::string(a.value) + "`";
    else if (auto field = scenario_field_of_flag(a.flag))
      sets = "`" + *field + "`";
    else
      sets = "framework behaviour";
    const std::string flag = a.flag.empty()     ? "none"
                             : a.flag == a.name ? "same"
                                                : "`" + std::string(a.flag) + "`";
    table +=
        "| `" + std::string(a.name) + "` | " + flag + " | " + sets + " | " + std::string(a.note) + " |\n";
  }
  return table;
}

std::optional<std::string> flag_of_option_field(std::string_view source, std::string_view field) {
  for (const OptionFlag& f : kOptionFlags)
    if (f.source == source && within(field, f.field)) return std::string(f.flag);
  return std::nullopt;
}

InputError as_command_line_error(const InputError& e, const std::vector<std::string>& given_scenario_fields) {
  const std::string kCommandLine = "command line";
  if (auto flag = flag_of_option_field(e.file(), e.field())) return InputError(kCommandLine, *flag, e.why());
  const auto flag = flag_of_scenario_field(e.field());
  const bool given = std::find(given_scenario_fields.begin(), given_scenario_fields.end(), e.field()) !=
                     given_scenario_fields.end();
  if (flag && given) return InputError(kCommandLine, *flag, with_flags(e.why()));
  // The layout's product rules (field "layout", or "layout.dp" when it is derived) read the sizes
  // and the GPU count together: when flags gave some of them, the contradiction is theirs.
  if (e.field() == "layout" || e.field() == "layout.dp") {
    std::string flags;
    for (const char* size :
         {"cluster.num_gpus", "layout.tp", "layout.pp", "layout.dp", "layout.cp", "layout.ep"})
      if (std::find(given_scenario_fields.begin(), given_scenario_fields.end(), size) !=
          given_scenario_fields.end())
        flags += (flags.empty() ? "" : ", ") + flag_of_scenario_field(size).value_or(size);
    if (!flags.empty() && e.file() != kOverridesSource)
      return InputError(kCommandLine, flags,
                        with_flags(e.why()) + " (the other sizes from " + e.file() + ")");
    if (!flags.empty()) return InputError(kCommandLine, flags, with_flags(e.why()));
  }
  // The batch's rules, reported on global_batch, read the sizes beside it (divisible by
  // micro_batch·dp; enough micro-batches for the schedule): a contradiction flags brought into a
  // file's batch is theirs.
  if (e.field() == "layout.global_batch" && e.file() != kOverridesSource) {
    std::string flags;
    for (const char* read : {"layout.micro_batch", "layout.dp", "cluster.num_gpus", "layout.tp", "layout.pp",
                             "layout.cp", "layout.virtual_stages", "layout.pipeline_schedule"})
      if (std::find(given_scenario_fields.begin(), given_scenario_fields.end(), read) !=
          given_scenario_fields.end())
        flags += (flags.empty() ? "" : ", ") + flag_of_scenario_field(read).value_or(read);
    if (!flags.empty())
      return InputError(kCommandLine, flags,
                        with_flags(e.why()) + " (layout.global_batch from " + e.file() + ")");
  }
  // No file: every value is a flag's or its default, so a field with a flag is named by it
  // (a missing one takes the hint below instead).
  if (flag && e.file() == kOverridesSource && e.why().rfind("missing (", 0) != 0)
    return InputError(kCommandLine, *flag, with_flags(e.why()));
  std::string why = e.file() == kOverridesSource ? with_flags(e.why()) : e.why();
  // "missing (a GPU id such as "h100-sxm")" → "... "h100-sxm", or --gpu)".
  // (Once: main() maps again what resolve_scenario mapped.)
  const std::string hint = flag ? ", or " + *flag : std::string();
  if (flag && why.rfind("missing (", 0) == 0 && why.back() == ')' && why.find(hint) == std::string::npos)
    why.insert(why.size() - 1, hint);
  return InputError(e.file() == kOverridesSource ? kCommandLine : e.file(), e.field(), why);
}

}  // namespace simrun::cli
