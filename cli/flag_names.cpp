// The field → flag tables of the simrun command (see flag_names.hpp).
#include "flag_names.hpp"

#include <algorithm>
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
    {"layout.micro_batch", "--micro-batch"},
    {"layout.global_batch", "--global-batch"},
    {"layout.zero_stage", "--zero-stage"},
    {"layout.recompute", "--recompute"},
    {"layout.precision", "--precision"},
    {"layout.sequence_parallel", "--sequence-parallel"},
    {"layout.flash_attention", "--flash-attention"},
    {"run.tokens", "--tokens"},
    {"run.usd_per_gpu_hour", "--usd-per-gpu-hour"},
    {"run.assumed_mfu", "--mfu"},
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
  if (flag && given) return InputError(kCommandLine, *flag, e.why());
  // The layout's product rules (field "layout", or "layout.dp" when it is derived) read the sizes
  // and the GPU count together: when flags gave some of them, the contradiction is theirs.
  if (e.field() == "layout" || e.field() == "layout.dp") {
    std::string flags;
    for (const char* size : {"cluster.num_gpus", "layout.tp", "layout.pp", "layout.dp", "layout.cp", "layout.ep"})
      if (std::find(given_scenario_fields.begin(), given_scenario_fields.end(), size) != given_scenario_fields.end())
        flags += (flags.empty() ? "" : ", ") + flag_of_scenario_field(size).value_or(size);
    if (!flags.empty() && e.file() != kOverridesSource)
      return InputError(kCommandLine, flags, e.why() + " (the other sizes from " + e.file() + ")");
    if (!flags.empty()) return InputError(kCommandLine, flags, e.why());
  }
  std::string why = e.why();
  // "missing (a GPU id such as "h100-sxm")" → "... "h100-sxm", or --gpu)".
  // (Once: main() maps again what resolve_scenario mapped.)
  const std::string hint = flag ? ", or " + *flag : std::string();
  if (flag && why.rfind("missing (", 0) == 0 && why.back() == ')' && why.find(hint) == std::string::npos)
    why.insert(why.size() - 1, hint);
  return InputError(e.file() == kOverridesSource ? kCommandLine : e.file(), e.field(), why);
}

}  // namespace simrun::cli
