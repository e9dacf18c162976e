// Framework profiles: reading and checking the data files (sim/framework/profiles/*.json, a user
// catalog's frameworks/*.json), "extends", and resolving "id@version". Format: docs/model.md
// "Framework behaviour".
#include "simrun/sim/framework/profile.hpp"

#include <algorithm>
#include <functional>
#include <regex>
#include <set>

#include "simrun/common/catalog_files.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/common/text.hpp"

namespace simrun {
namespace {

using nlohmann::json;

// One field of the schema: its key and how its "value" is read into a profile.
struct FieldRule {
  const char* key;
  std::function<void(JsonReader& field, FrameworkProfile& p)> read;
};

// The value of a field object {"value": ..., "source": "..."}; it must be given.
void require_value(JsonReader& f) {
  if (!f.has("value")) f.fail("value", "missing (each field is {\"value\": ..., \"source\": \"...\"})");
}
std::string choice(JsonReader& f, const std::vector<std::string>& allowed) {
  require_value(f);
  return f.choice_or("value", "", allowed);
}
bool boolean(JsonReader& f) {
  require_value(f);
  if (!f.raw("value").is_boolean()) f.fail("value", "expected true or false");
  return f.raw("value").get<bool>();
}
double number(JsonReader& f, double min, double max) { return f.number("value", min, max); }

// The schema, in the order profiles list and reports print it. Names follow the "framework.*"
// inputs a report echoes (sim/report/inputs.cpp) where the field is a WorkloadOptions one.
const std::vector<FieldRule>& field_rules() {
  static const std::vector<FieldRule> kRules = {
      {"kernels",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.kernels = choice(f, {to_string(KernelStack::fused), to_string(KernelStack::eager)}) ==
                                      to_string(KernelStack::eager)
                                  ? KernelStack::eager
                                  : KernelStack::fused;
       }},
      {"eager_memory_factor",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.eager_memory_factor = number(f, 1, 10); }},
      {"selective_recompute",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.selective = selective_recompute_named(choice(f, selective_recompute_names()));
         p.memory.selective = selective_keeps(p.workload.selective);
       }},
      {"step_overhead_s",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.step_overhead_s = number(f, 0, 60); }},
      {"tp_comm_overlap",
       [](JsonReader& f, FrameworkProfile& p) {
         const std::string o = choice(f, {to_string(TpCommOverlap::backward_async),
                                          to_string(TpCommOverlap::full), to_string(TpCommOverlap::none)});
         p.workload.tp_overlap = o == to_string(TpCommOverlap::full)   ? TpCommOverlap::full
                                 : o == to_string(TpCommOverlap::none) ? TpCommOverlap::none
                                                                       : TpCommOverlap::backward_async;
       }},
      {"moe_shared_expert_overlap",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.moe_shared_expert_overlap = boolean(f); }},
      {"ep_dispatch_dtype",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.ep_dispatch_fp8 = choice(f, {"bf16", "fp8"}) == "fp8";
       }},
      {"grad_reduce",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.grad_reduce = choice(f, {to_string(GradReduceOverlap::bucketed),
                                             to_string(GradReduceOverlap::after_backward)}) ==
                                          to_string(GradReduceOverlap::bucketed)
                                      ? GradReduceOverlap::bucketed
                                      : GradReduceOverlap::after_backward;
       }},
      {"param_gather",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.param_gather = choice(f, {to_string(ParamGatherOverlap::next_forward),
                                              to_string(ParamGatherOverlap::after_optimizer)}) ==
                                           to_string(ParamGatherOverlap::next_forward)
                                       ? ParamGatherOverlap::next_forward
                                       : ParamGatherOverlap::after_optimizer;
       }},
      {"bucket_params_min",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.bucket_params_min = number(f, 1, 1e12); }},
      {"bucket_params_per_dp",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.bucket_params_per_dp = number(f, 0, 1e12); }},
      {"one_bucket_after_first_chunk",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.one_bucket_after_first_chunk = boolean(f); }},
      {"grad_reduce_dtype",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.grad_reduce_bytes = choice(f, {"bf16", "fp16", "fp32"}) == "fp32" ? 4 : 2;
       }},
      {"fsdp_prefetch_layers",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.fsdp_prefetch_layers = static_cast<int>(f.integer("value", 0, 1024));
       }},
      {"fsdp_backward_prefetch",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.fsdp_backward_prefetch = choice(f, {to_string(FsdpBackwardPrefetch::before_backward),
                                                        to_string(FsdpBackwardPrefetch::after_backward)}) ==
                                                     to_string(FsdpBackwardPrefetch::after_backward)
                                                 ? FsdpBackwardPrefetch::after_backward
                                                 : FsdpBackwardPrefetch::before_backward;
       }},
      {"fsdp_one_communicator",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.fsdp_one_communicator = boolean(f); }},
      {"zero3_gather_granularity",
       [](JsonReader& f, FrameworkProfile& p) {
         const Zero3Gather g =
             choice(f, {to_string(Zero3Gather::layer), to_string(Zero3Gather::submodule)}) ==
                     to_string(Zero3Gather::submodule)
                 ? Zero3Gather::submodule
                 : Zero3Gather::layer;
         p.workload.zero3_gather = g;
         p.memory.zero3_gather = g;
       }},
      {"zero3_prefetch_bucket_params",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.zero3_prefetch_bucket_params = number(f, 0, 1e12);
         p.memory.zero3_prefetch_bucket_params = p.workload.zero3_prefetch_bucket_params;
       }},
      {"zero3_max_live_params",
       [](JsonReader& f, FrameworkProfile& p) { p.memory.zero3_max_live_params = number(f, 0, 1e15); }},
      {"zero3_persistence_threshold",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.zero3_persistence_threshold = number(f, 0, 1e12);
       }},
      {"zero3_fetch",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.zero3_fetch =
             choice(f, {to_string(Zero3Fetch::prefetch), to_string(Zero3Fetch::synchronous)}) ==
                     to_string(Zero3Fetch::synchronous)
                 ? Zero3Fetch::synchronous
                 : Zero3Fetch::prefetch;
       }},
      {"zero3_reduce",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.zero3_reduce =
             choice(f, {to_string(Zero3Reduce::per_unit), to_string(Zero3Reduce::bucketed)}) ==
                     to_string(Zero3Reduce::bucketed)
                 ? Zero3Reduce::bucketed
                 : Zero3Reduce::per_unit;
       }},
      {"zero3_reduce_bucket_params",
       [](JsonReader& f, FrameworkProfile& p) { p.memory.zero3_reduce_bucket_params = number(f, 0, 1e12); }},
      {"zero3_reduce_events",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.zero3_reduce_events = static_cast<int>(f.integer("value", 0, 1024));
       }},
      {"zero2_reduce_every_micro_batch",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.zero2_reduce_every_micro_batch = p.memory.zero2_reduce_every_micro_batch = boolean(f);
       }},
      {"zero_grad_collective",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.zero_grad_collective = choice(f, {to_string(ZeroGradCollective::reduce_scatter),
                                                      to_string(ZeroGradCollective::all_reduce)}) ==
                                                   to_string(ZeroGradCollective::all_reduce)
                                               ? ZeroGradCollective::all_reduce
                                               : ZeroGradCollective::reduce_scatter;
       }},
      {"pipeline_engine",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.pipeline_engine =
             choice(f, {to_string(PipelineEngine::megatron), to_string(PipelineEngine::deepspeed)}) ==
                     to_string(PipelineEngine::deepspeed)
                 ? PipelineEngine::deepspeed
                 : PipelineEngine::megatron;
       }},
      {"adam_bytes_per_param",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.adam_bytes_per_param = number(f, 0, 1000); }},
      {"grad_clip_bytes_per_param",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.grad_clip_bytes_per_param = number(f, 0, 1000); }},
      {"model_states",
       [](JsonReader& f, FrameworkProfile& p) {
         const std::string s = choice(f, {"megatron", "zero_paper", "fsdp"});
         p.memory.convention = s == "fsdp"         ? StateConvention::fsdp
                               : s == "zero_paper" ? StateConvention::zero_paper
                                                   : StateConvention::megatron;
       }},
      {"dropout",
       [](JsonReader& f, FrameworkProfile& p) {
         p.memory.dropout = choice(f, {"none", "masks"}) == "masks" ? Dropout::masks : Dropout::none;
       }},
      {"host_launch_s",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.host.launch_s = number(f, 0, 1e-3); }},
      {"host_sync_s",
       [](JsonReader& f, FrameworkProfile& p) { p.workload.host.sync_s = number(f, 0, 1e-2); }},
      {"moe_token_dispatcher",
       [](JsonReader& f, FrameworkProfile& p) {
         p.workload.host.moe_dispatcher = *moe_dispatcher_named(choice(f, moe_dispatcher_names()));
       }},
      {"cuda_graph_scope",
       [](JsonReader& f, FrameworkProfile& p) {
         require_value(f);
         const json& v = f.raw("value");
         std::vector<std::string> allowed;
         for (CudaGraphScope s : kCudaGraphScopes) allowed.push_back(to_string(s));
         const std::string rule =
             "expected a list of CUDA graph scopes, each one of " + join_names(allowed) + " ([] for none)";
         if (!v.is_array()) f.fail("value", rule);
         CudaGraphScopes scopes;
         for (const json& e : v) {
           bool known = false;
           for (CudaGraphScope s : kCudaGraphScopes)
             if (e.is_string() && e.get<std::string>() == to_string(s)) {
               scopes.add(s);
               known = true;
             }
           if (!known) f.fail("value", rule);
         }
         p.workload.host.cuda_graphs = scopes;
       }},
      {"flash_attention", [](JsonReader& f, FrameworkProfile& p) { p.flash_attention = boolean(f); }},
      {"sequence_parallel",
       [](JsonReader& f, FrameworkProfile& p) {
         p.sequence_parallel_with_tp = choice(f, {"with_tp", "off"}) == "with_tp";
       }},
      {"gpt_tied_embeddings", [](JsonReader& f, FrameworkProfile& p) { p.gpt_tied_embeddings = boolean(f); }},
  };
  return kRules;
}

std::vector<int> version_parts(const std::string& v) {
  std::vector<int> parts;
  size_t at = 0;
  while (at <= v.size()) {
    const size_t dot = v.find('.', at);
    parts.push_back(std::stoi(v.substr(at, dot - at)));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return parts;
}

bool is_version(const std::string& v) {
  static const std::regex kVersion(R"(^[0-9]{1,6}(\.[0-9]{1,6}){0,3}$)");
  return std::regex_match(v, kVersion);
}

// "id" or "id@version" split; false when either part is malformed.
bool split_id(const std::string& text, std::string& family, std::string& version) {
  const size_t at = text.find('@');
  family = text.substr(0, at);
  version = at == std::string::npos ? "" : text.substr(at + 1);
  return is_catalog_id(family) && (at == std::string::npos || is_version(version));
}

// a < b by version; the unversioned profile ("") is the lowest.
bool version_less(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return a.empty() && !b.empty();
  return version_parts(a) < version_parts(b);
}

// The id among `ids` that family@version names: the family's highest version not above the one
// asked for, or its newest where none is asked ("deepspeed@0.5" → "deepspeed@0.3.12"). Empty
// where the family has none.
std::string best_version_id(const std::string& family, const std::string& version,
                            const std::vector<std::string>& ids) {
  std::string best, best_version;
  for (const std::string& id : ids) {
    std::string f, v;
    if (!split_id(id, f, v) || f != family) continue;
    if (!version.empty() && version_less(version, v)) continue;
    if (best.empty() || version_less(best_version, v)) {
      best = id;
      best_version = v;
    }
  }
  return best;
}

}  // namespace

const ProfileField* FrameworkProfile::field(const std::string& key) const {
  for (const ProfileField& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<ProfileDifference> profile_differences(const FrameworkProfile& profile,
                                                   const FrameworkProfile& base) {
  std::vector<ProfileDifference> out;
  for (const ProfileField& f : profile.fields) {
    const ProfileField* b = base.field(f.key);
    if (!b || b->value != f.value) out.push_back({f.key, f.value, b ? b->value : "", f.source});
  }
  return out;
}

std::string profiles_markdown(const FrameworkCatalog& catalog) {
  const FrameworkProfile& base = catalog.resolve(kDefaultFramework, "catalog", "framework");
  std::string out =
      "| profile | framework | extends | differs from " + base.id + " in |\n|---|---|---|---|\n";
  for (const auto& [id, p] : catalog.profiles()) {
    std::string changes;
    for (const ProfileDifference& d : profile_differences(p, base))
      changes += (changes.empty() ? "" : ", ") + d.key + " " + d.value;
    std::erase(changes, '"');
    out += "| `" + id + "` | " + p.name + " | " + (p.extends.empty() ? "" : "`" + p.extends + "`") + " | " +
           (id == base.id     ? "(the default)"
            : changes.empty() ? "nothing"
                              : changes) +
           " |\n";
  }
  return out;
}

void FrameworkCatalog::read_dir(const std::filesystem::path& dir, bool required) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (std::filesystem::exists(dir, ec)) throw InputError(dir.string(), "", "is not a directory");
    if (!required) return;
    throw InputError(dir.string(), "", "framework profile directory not found");
  }
  const std::vector<std::filesystem::path> files = catalog_files(dir);
  if (files.empty() && required)
    throw InputError(dir.string(), "", "no *.json framework profiles in the directory");
  // Every file first, so that a profile may extend one that sorts after it.
  std::map<std::string, std::pair<std::filesystem::path, json>> docs;
  for (const auto& path : files) {
    const std::string id = path.stem().string();
    std::string family, version;
    if (!split_id(id, family, version))
      throw InputError(
          path.string(), "",
          "the file name must be a profile id, " + std::string(kCatalogIdRule) +
              ", optionally followed by @ and a version such as 0.14 (e.g. deepspeed@0.3.12.json)");
    if (m_profiles.count(id))
      throw InputError(path.string(), "",
                       "the framework profile " + quoted_input(id) +
                           " is already in the catalog (give this profile another file name, e.g. \"" +
                           printable(family) + "-custom.json\")");
    docs.emplace(id, std::make_pair(path, load_json_file(path)));
  }
  std::vector<std::string> known;  // the ids an "extends" may name
  for (const auto& [id, doc] : docs) known.push_back(id);
  for (const auto& [id, p] : m_profiles) known.push_back(id);
  std::set<std::string> reading;  // the chain of "extends" being followed, to refuse a cycle
  std::function<const FrameworkProfile&(const std::string&)> build =
      [&](const std::string& id) -> const FrameworkProfile& {
    if (const auto it = m_profiles.find(id); it != m_profiles.end()) return it->second;
    const auto& [path, doc] = docs.at(id);
    JsonReader r(doc, path.string());
    FrameworkProfile p;
    if (r.has("extends")) {
      // A profile's own id, else id@version resolved as --framework resolves it.
      const std::string asked = r.string("extends");
      std::string base = asked, family, version;
      if (!docs.count(base) && !m_profiles.count(base))
        base = split_id(asked, family, version) ? best_version_id(family, version, known) : "";
      if (base.empty())
        r.fail("extends", "unknown profile " + quoted_input(asked) + " (known: " + join_names(known) + ")");
      if (!reading.insert(id).second || reading.count(base))
        r.fail("extends", "profiles extend each other in a cycle (" + quoted_input(id) + " and " +
                              quoted_input(base) + ")");
      p = build(base);
      p.extends = base;
      reading.erase(id);
    }
    p.id = id;
    split_id(id, p.family, p.version);
    p.file = path.string();
    p.name = r.string("name");
    if (p.name.empty()) r.fail("name", "must not be empty (the framework's name, e.g. \"Megatron-Core\")");
    r.string_or("description", "");  // free text for people reading the file
    m_aliases[id] = read_aliases(r);
    JsonReader defaults = r.object("defaults");
    const bool extends = r.has("extends");
    for (const FieldRule& rule : field_rules()) {
      if (!defaults.has(rule.key)) {
        if (!extends)
          defaults.fail(rule.key,
                        "missing (a profile gives every field, or \"extends\" another profile and "
                        "gives the fields that differ)");
        continue;
      }
      JsonReader f = defaults.object(rule.key);
      rule.read(f, p);
      const std::string source = f.string("source");
      if (source.empty())
        f.fail("source", "every field names its source (framework code or docs, and version)");
      f.finish();
      ProfileField field{rule.key, f.raw("value").dump(), source, id};
      bool replaced = false;
      for (ProfileField& old : p.fields)
        if (old.key == field.key) {
          old = field;
          replaced = true;
        }
      if (!replaced) p.fields.push_back(field);
    }
    defaults.finish();
    r.finish();
    return m_profiles.emplace(id, std::move(p)).first->second;
  };
  for (const auto& [id, doc] : docs) build(id);
}

FrameworkCatalog FrameworkCatalog::load(const std::filesystem::path& dir) {
  FrameworkCatalog c;
  c.read_dir(dir, true);
  if (!c.m_profiles.count(kDefaultFramework))
    throw InputError(
        dir.string(), "",
        std::string("no ") + kDefaultFramework + ".json (the profile of scenarios that name none)");
  return c;
}

void FrameworkCatalog::add(const std::filesystem::path& dir) { read_dir(dir, false); }

std::vector<std::string> FrameworkCatalog::ids() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : m_profiles) out.push_back(k);
  return out;
}

std::optional<std::string> FrameworkCatalog::id_named(const std::string& text) const {
  const size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  const std::string written =
      first == std::string::npos ? "" : ascii_lower(text.substr(first, last - first + 1));
  std::string family, version;
  if (!split_id(written, family, version)) return std::nullopt;
  if (std::any_of(m_profiles.begin(), m_profiles.end(),
                  [&](const auto& p) { return p.second.family == family; }))
    return written;
  for (const auto& [id, aliases] : m_aliases)
    if (std::find(aliases.begin(), aliases.end(), family) != aliases.end())
      return version.empty() ? id : m_profiles.at(id).family + "@" + version;
  return std::nullopt;
}

const FrameworkProfile& FrameworkCatalog::resolve(const std::string& requested, const std::string& file,
                                                  const std::string& field) const {
  std::string family, version;
  if (!split_id(requested, family, version))
    throw InputError(file, field,
                     quoted_input(requested) +
                         " is not a framework id (an id such as \"megatron-core\", or id@version such as "
                         "\"deepspeed@0.5\")");
  const std::string best = best_version_id(family, version, ids());
  if (!best.empty()) return m_profiles.at(best);
  std::vector<std::string> versions;
  for (const auto& [id, p] : m_profiles)
    if (p.family == family) versions.push_back(id);
  if (!versions.empty())
    throw InputError(file, field,
                     "no profile of " + quoted_input(family) + " for version " + printable(version) +
                         " or older (known: " + join_names(versions) + ")");
  std::map<std::string, std::vector<std::string>> by_family;
  for (const auto& [id, aliases] : m_aliases) {
    std::vector<std::string>& into = by_family[m_profiles.at(id).family];
    into.insert(into.end(), aliases.begin(), aliases.end());
  }
  throw InputError(file, field,
                   "unknown framework " + quoted_input(requested) + " (known: " + join_names(ids()) +
                       "; did you mean \"" + nearest_id(family, by_family) + "\"?)");
}

}  // namespace simrun
