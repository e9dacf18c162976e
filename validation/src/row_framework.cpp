// The framework profile of a measured-runs row (row_framework.hpp).
#include "row_framework.hpp"

#include <algorithm>
#include <optional>

#include "row_fields.hpp"

namespace simrun {
namespace {

using nlohmann::json;
using namespace row_fields;

// Whether a DeepSpeed source names only years before 2022 (its runs ran DeepSpeed v0.3-v0.5, the
// last releases before v0.6.0, whose PR #1453 of 2022-01-20 rewrote the ZeRO-3 fetch:
// frameworks.md 1.5), reading 4-digit numbers from 2015 to 2035 as years (not a 2048-token
// sequence or 2048 GPUs); false when it names none.
bool before_deepspeed_0_6(const std::string& text) {
  int latest = 0;
  for (size_t at = 0; at + 4 <= text.size(); ++at) {
    const bool word =
        (at == 0 || !is_digit(text[at - 1])) && (at + 4 == text.size() || !is_digit(text[at + 4]));
    if (!word || !std::all_of(text.begin() + long(at), text.begin() + long(at) + 4, is_digit)) continue;
    if (const int year = std::stoi(text.substr(at, 4)); year >= 2015 && year <= 2035)
      latest = std::max(latest, year);
  }
  return latest > 0 && latest < 2022;
}

// What decides a row's framework beside the text naming it.
struct RowFacts {
  // Megatron-Bridge 25.11's Blackwell recipes: flex/HybridEP dispatcher and CUDA graphs (the
  // profile's sources; the H100 recipes keep alltoall without graphs, as nemo does).
  bool blackwell = false;
  // layout.tp > 1: Megatron's tensor-parallel layers, DeepSpeed having none of its own.
  bool tensor_parallel = false;
};

// The framework a free text names (`names`, lower case: a row's source and group, or its own
// "framework" field where that is no profile id), or "" where it names none; `era` is the text
// whose years date it (DeepSpeed before v0.6, Megatron-LM of 2019-2021).
std::string framework_named(const std::string& names, const std::string& era, const RowFacts& row) {
  // Megatron's model on DeepSpeed: the fork's name, or both named where the run has tensor
  // parallelism ("Using DeepSpeed and Megatron to Train Megatron-Turing NLG", TP 8; frameworks.md
  // 2.4); both named without it is a comparison ("DeepSpeed ZeRO-3 vs Megatron-LM").
  if (has(names, "megatron-deepspeed") ||
      (has(names, "deepspeed") && has(names, "megatron") && row.tensor_parallel))
    return "megatron-deepspeed";
  if (has(names, "deepspeed")) return before_deepspeed_0_6(era) ? "deepspeed@0.5" : "deepspeed";
  if (has(names, "torchtitan")) return "torchtitan";
  if (has(names, "llm-foundry") || has(names, "composer") || has(names, "mosaic")) return "composer";
  if (has(names, "megatron-bridge") && row.blackwell) return "megatron-bridge-blackwell";
  if (has(names, "nemo") || has(names, "megatron-bridge")) return "nemo";
  if (has(names, "fsdp2")) return "fsdp2";
  if (has(names, "fsdp")) return "fsdp1";
  if (has(names, "megatron") && (has(era, "2019") || has(era, "2020") || has(era, "2021")))
    return "megatron-lm-2021";
  // DeepSeek's own framework, where no other is named (a Megatron DeepSeek-V3 recipe is Megatron's).
  if (has(names, "hai-llm") || (has(names, "deepseek") && !has(names, "megatron"))) return "hai-llm";
  if (has(names, "megatron")) return kDefaultFramework;  // Megatron-LM, Megatron-Core of today
  return "";
}

}  // namespace

std::string measured_run_framework(const json& row, const std::string& architecture,
                                   const FrameworkCatalog& frameworks) {
  const json empty = json::object();
  const json& layout = row.contains("layout") ? row.at("layout") : empty;
  const RowFacts facts{architecture.rfind("Blackwell", 0) == 0, opt_int(layout, "tp").value_or(1) > 1};
  const std::string group = opt_str(row, "group");
  const std::string source_text = ascii_lower(group + " " + opt_str(row, "source"));
  if (const std::string f = opt_str(row, "framework"); !f.empty()) {
    if (!row.at("framework").is_string()) return f;  // a number, a list: resolve says it is no id
    const std::string named = framework_named(ascii_lower(f), ascii_lower(f) + " " + source_text, facts);
    if (const std::optional<std::string> id = frameworks.id_named(f)) {
      // Written as the id: that profile. Named otherwise ("DeepSpeed", "Megatron-LM"), a family
      // whose era the source dates runs the dated profile, as a source naming it would.
      const bool dated = (*id == "deepspeed" && named == "deepspeed@0.5") ||
                         (*id == kDefaultFramework && named == "megatron-lm-2021");
      return *id != f && dated ? named : *id;
    }
    return named.empty() ? f : named;
  }
  if (group == "bridge" && facts.blackwell) return "megatron-bridge-blackwell";
  if (group == "narayanan_t1" || group == "megatron_gpt3") return "megatron-lm-2021";
  if (group == "megatron_h100") return "megatron-core-perf";
  if (group == "mosaic") return "composer";
  if (group == "torchtitan") return "torchtitan";
  if (group == "nemo2407" || group == "bridge" || group == "nemo_cp" || group == "mcore_moe") return "nemo";
  const std::string named = framework_named(source_text, source_text, facts);
  return named.empty() ? kDefaultFramework : named;
}

}  // namespace simrun
