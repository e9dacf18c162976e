// Scenario parsing and validation (DESIGN.md "Scenario file"): the fields' types and ranges here,
// the layout's rules in layout_rules.cpp, so the models below can assume a valid Scenario.
#include "simrun/sim/scenario/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "simrun/common/catalog_files.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/models/counts.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

namespace simrun {
namespace {

// One step's model FLOPs per GPU, in seconds at the GPU's dense peak. Real steps take seconds
// to minutes; the event simulation's clock (int64 ns) ends at ~292 years, and inefficiency,
// communication and bubbles must still fit under it.
constexpr double kMaxStepSecondsAtPeak = 1e6;

const std::vector<std::string> kRecomputeNames = {"none", "selective", "full"};
// "nvfp4" is fp4 under its one recipe, as users write it.
const std::vector<std::string> kPrecisionNames = {"bf16", "fp16", "fp8", "fp4", "nvfp4", "fp32"};
// The hyphenated spellings first; the snake_case ones that collective and topology take also read.
const std::vector<std::string> kTopologyNames = {"rail-optimized", "fat-tree", "rail_optimized", "fat_tree"};
// A field's names followed by the other spellings the parser also reads.
std::vector<std::string> and_spellings(std::vector<std::string> names,
                                       std::initializer_list<const char*> others) {
  names.insert(names.end(), others.begin(), others.end());
  return names;
}
// snake_case is canonical; the older hyphenated spelling is still read.
const std::vector<std::string> kPipelineSplitNames = {"even", "embedding_loss_layers", "balanced"};
const std::vector<std::string> kPipelineSplitSpellings =
    and_spellings(kPipelineSplitNames, {"embedding-loss-layers"});
// Megatron's 1F1B and interleaved 1F1B, Megatron-Core's combined 1F1B, DeepSeek's DualPipe, GPipe;
// "interleaved-1f1b" and "combined-1f1b" (as reports write them) also read.
const std::vector<std::string> kPipelineScheduleNames = {"1f1b", "interleaved", "combined_1f1b", "dualpipe",
                                                         "gpipe"};
const std::vector<std::string> kPipelineScheduleSpellings =
    and_spellings(kPipelineScheduleNames, {"interleaved-1f1b", "combined-1f1b"});
const std::vector<std::string> kCpCommTypeNames = {"p2p", "all_gather", "a2a", "a2a_p2p", "a2a+p2p"};

PipelineSplit parse_pipeline_split(const std::string& s) {
  if (s == "embedding_loss_layers" || s == "embedding-loss-layers")
    return PipelineSplit::embedding_loss_layers;
  if (s == "balanced") return PipelineSplit::balanced;
  return PipelineSplit::even;
}

PipelineSchedule parse_pipeline_schedule(const std::string& s) {
  if (s == "interleaved" || s == "interleaved-1f1b") return PipelineSchedule::interleaved;
  if (s == "combined_1f1b" || s == "combined-1f1b") return PipelineSchedule::combined_1f1b;
  if (s == "dualpipe") return PipelineSchedule::dualpipe;
  if (s == "gpipe") return PipelineSchedule::gpipe;
  return PipelineSchedule::one_f_one_b;
}

CpCommType parse_cp_comm_type(const std::string& s) {
  if (s == "all_gather") return CpCommType::all_gather;
  if (s == "a2a") return CpCommType::a2a;
  if (s == "a2a_p2p" || s == "a2a+p2p") return CpCommType::a2a_p2p;
  return CpCommType::p2p;
}

// a2a+p2p's all-to-all level (Layout::cp_a2a_level): the first of Megatron's two
// --hierarchical-context-parallel-sizes, whose product is cp. 1 under the other types.
int64_t read_cp_a2a_level(JsonReader& r, const Layout& layout) {
  const std::string key = "hierarchical_context_parallel_sizes";
  if (layout.cp_comm_type != CpCommType::a2a_p2p) {
    if (r.has(key)) r.fail(key, "is read with cp_comm_type \"a2a+p2p\" only");
    return 1;
  }
  const std::string rule = "two positive integers [a2a, p2p] whose product is cp " +
                           std::to_string(layout.cp) +
                           ": all-to-alls over the first level (adjacent CP ranks), the ring over the second";
  if (!r.has(key)) r.fail(key, "a2a+p2p needs it: " + rule);
  const nlohmann::json& v = r.raw(key);
  const auto level = [&](size_t i) {
    return v.is_array() && v.size() == 2 && v[i].is_number_integer() ? v[i].get<int64_t>() : int64_t{0};
  };
  const int64_t a2a = level(0), p2p = level(1);
  if (a2a < 1 || p2p < 1 || a2a > layout.cp || p2p > layout.cp || a2a * p2p != layout.cp)
    r.fail(key, "must be " + rule);
  return a2a;
}

Recompute parse_recompute(const std::string& s) {
  if (s == "selective") return Recompute::selective;
  if (s == "full") return Recompute::full;
  return Recompute::none;
}

Precision parse_precision(const std::string& s) {
  if (s == "fp16") return Precision::fp16;
  if (s == "fp8") return Precision::fp8;
  if (s == "fp4" || s == "nvfp4") return Precision::fp4;
  if (s == "fp32") return Precision::fp32;
  return Precision::bf16;
}

// A HuggingFace config.json named by the scenario's model: `key` of `r` holds its path
// (relative paths start at the scenario's directory); seq_len_field names the sequence length
// the config's context stands in for when it is not given. One reader for the string form
// ("model": "path/config.json") and the object form ({"hf_config": path, "seq_len": N}).
ModelSpec read_hf_model(JsonReader& r, const std::string& key, const std::filesystem::path& base_dir,
                        std::optional<int64_t> seq_len, const std::string& seq_len_field) {
  const std::filesystem::path hf_path = base_dir / r.string(key);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(hf_path, ec))
    r.fail(key,
           "cannot read " + quoted_input(hf_path.string()) +
               " (a HuggingFace config.json file; relative paths start at the scenario's directory, or at "
               "the working directory when given on the command line)");
  ModelSpec spec = import_hf_config(load_json_file(hf_path), hf_path.string(), seq_len);
  if (!seq_len && spec.seq_len > kMaxStepSeqLen)
    r.fail(seq_len_field, "missing, and the config's context of " + std::to_string(spec.seq_len) +
                              " tokens is over the " + std::to_string(kMaxStepSeqLen) +
                              " a step is simulated at (give the training sequence length)");
  return spec;
}

// Whether a model object names every field a custom model must give (read_model's required ones).
bool full_model_object(const nlohmann::json& model) {
  return std::all_of(std::begin(kModelRequiredFields), std::end(kModelRequiredFields),
                     [&model](const char* key) { return model.contains(key); });
}

// Keys of a model object read as a variant of a catalog model or a config.json, beside `own`.
void refuse_other_keys(JsonReader& model, const nlohmann::json& raw, std::initializer_list<const char*> own,
                       const std::string& base) {
  for (const auto& item : raw.items()) {
    const auto is = [&item](const char* key) { return item.key() == key; };
    if (std::any_of(own.begin(), own.end(), is) ||
        std::any_of(std::begin(kModelVariantFields), std::end(kModelVariantFields), is))
      continue;
    const std::vector<std::string> fields(std::begin(kModelVariantFields), std::end(kModelVariantFields));
    model.fail(item.key(), "a variant of " + base + " takes only " + join_names(fields) +
                               " beside its name; for other changes give every field of a custom model (as "
                               "in models/catalog/*.json)");
  }
  model.finish();
}

ModelSpec read_model_field(JsonReader& top, const Catalogs& catalogs, const std::filesystem::path& base_dir) {
  const auto& raw = top.raw("model");
  if (raw.is_string()) {
    const std::string id = raw.get<std::string>();
    if (catalogs.models.contains(id) || !names_hf_config_file(id))
      return catalogs.models.get(id, top.file(), "model");
    return read_hf_model(top, "model", base_dir, std::nullopt, "model");
  }
  if (!raw.is_object())
    top.fail("model", "expected a catalog name (e.g. \"llama3-70b\"), a config.json path or a model object");
  JsonReader model = top.object("model");
  // {"hf_config": path, ...}: the imported shape, any variant fields (seq_len, layers, ...) replaced.
  if (model.has("hf_config")) {
    const std::optional<int64_t> seq_len =
        model.has("seq_len") ? std::optional<int64_t>(model.integer("seq_len", 1, kMaxStepSeqLen))
                             : std::nullopt;
    ModelSpec spec =
        read_model_variant(read_hf_model(model, "hf_config", base_dir, seq_len, "seq_len"), model);
    spec.name = model.string_or("name", spec.name);
    if (const auto why = model_name_problem(spec.name)) model.fail("name", *why);
    refuse_other_keys(model, raw, {"hf_config", "name"}, "an imported config.json");
    return spec;
  }
  // {"name": id, ...} short of a full model refers to the catalog: the catalog model, any
  // variant fields replaced (as Megatron's --num-layers, --hidden-size ... on a known model).
  const auto name = raw.find("name");
  if (name != raw.end() && name->is_string() && !full_model_object(raw) &&
      (catalogs.models.contains(name->get<std::string>()) || !raw.contains("layers"))) {
    const ModelSpec& base = catalogs.models.get(model.string("name"), top.file(), "model.name");
    if (model.has("seq_len"))
      model.integer("seq_len", 1, kMaxStepSeqLen);  // the step's bound, below the model's
    ModelSpec spec = read_model_variant(base, model);
    refuse_other_keys(model, raw, {"name"}, "the catalog model \"" + base.name + "\"");
    return spec;
  }
  read_aliases(model);  // a copied catalog file's; an inline entry is named by its object
  return read_model(model);
}

// The "id" of a GPU or fabric defined inline (`what` "GPU" or "fabric"): an id of its own, never
// a catalog one, so that an id in a report means one part.
std::string read_inline_id(JsonReader& r, const char* what, const std::vector<std::string>& catalog_ids) {
  const std::string id = r.string_or("id", "custom");
  if (!is_catalog_id(id)) r.fail("id", quoted_input(id) + " is not an id (" + kCatalogIdRule + ")");
  if (std::find(catalog_ids.begin(), catalog_ids.end(), id) != catalog_ids.end())
    r.fail("id", quoted_input(id) + " is a catalog " + what +
                     "'s id; an inline one takes an id of its own (or name the catalog's by its id alone)");
  return id;
}

// "cluster.gpu": a catalog id, or an inline object with a catalog file's fields (read and checked
// by the catalog's own reader).
GpuSpec read_gpu_field(JsonReader& cluster, const Catalogs& catalogs) {
  const nlohmann::json& raw = cluster.raw("gpu");
  if (raw.is_object()) {
    JsonReader gpu = cluster.object("gpu");
    const std::string id = read_inline_id(gpu, "GPU", catalogs.hardware.gpu_ids());
    read_aliases(gpu);  // a copied catalog file's: read (so checked), but only catalog ids are suggested
    return catalogs.hardware.read_gpu_entry(gpu, id);
  }
  if (!raw.is_string())
    cluster.fail("gpu",
                 "expected a GPU id (e.g. \"h100-sxm\") or a GPU object with the fields of a catalog file "
                 "(topologies/gpus/*.json)");
  return catalogs.hardware.gpu(raw.get<std::string>(), cluster.file(), cluster.path_of("gpu"));
}

// "cluster.fabric.kind": as "cluster.gpu", for fabrics (default "ib-ndr").
FabricSpec read_fabric_kind(JsonReader& fabric, const Catalogs& catalogs) {
  if (fabric.has("kind") && fabric.raw("kind").is_object()) {
    JsonReader kind = fabric.object("kind");
    const std::string id = read_inline_id(kind, "fabric", catalogs.hardware.fabric_ids());
    read_aliases(kind);
    return read_fabric(kind, id);
  }
  if (fabric.has("kind") && !fabric.raw("kind").is_string())
    fabric.fail("kind",
                "expected a fabric id (e.g. \"ib-ndr\") or a fabric object with the fields of a catalog "
                "file (topologies/fabrics/*.json)");
  return catalogs.hardware.fabric(fabric.string_or("kind", "ib-ndr"), fabric.file(), fabric.path_of("kind"));
}

// A cluster whose graph cannot be built, named by the scenario field that breaks the rule
// (ClusterGraph::check holds the rules: whole nodes, NICs shared evenly, switch tiers).
void check_cluster_graph(const ClusterSpec& spec, const JsonReader& cluster) {
  std::string field;
  const auto why = ClusterGraph::check(cluster_graph_spec(spec), &field);
  if (!why) return;
  const std::string key = field == "nics_per_node" || field == "oversubscription" ? "fabric." + field
                          : field == "fabric"                                     ? "fabric.kind"
                                                                                  : field;
  cluster.fail(key, *why);
}

ClusterSpec read_cluster(JsonReader& top, const Catalogs& catalogs) {
  JsonReader cluster = top.object("cluster");
  ClusterSpec spec;
  spec.gpu = read_gpu_field(cluster, catalogs);
  spec.num_gpus = cluster.integer_or("num_gpus", 8, 1, kMaxGpus);
  const int64_t default_per_node = std::min<int64_t>(default_gpus_per_node(spec.gpu), spec.num_gpus);
  spec.gpus_per_node = cluster.integer_or("gpus_per_node", default_per_node, 1, 72);
  spec.nics_per_node = spec.gpus_per_node;
  if (cluster.has("fabric")) {
    JsonReader fabric = cluster.object("fabric");
    spec.fabric = read_fabric_kind(fabric, catalogs);
    spec.nics_per_node = fabric.integer_or("nics_per_node", spec.gpus_per_node, 1, 72);
    const std::string topology = fabric.choice_or("topology", "rail-optimized", kTopologyNames);
    spec.topology = topology == "fat-tree" || topology == "fat_tree" ? FabricTopology::fat_tree
                                                                     : FabricTopology::rail_optimized;
    spec.oversubscription = fabric.number_or("oversubscription", 1.0, 1.0, 64.0);
    fabric.finish();
  } else {
    spec.fabric = catalogs.hardware.fabric("ib-ndr", top.file(), "cluster.fabric.kind");
  }
  cluster.finish();
  check_cluster_graph(spec, cluster);
  return spec;
}

Layout read_layout(JsonReader& top, const ModelSpec& model, const ClusterSpec& cluster,
                   const FrameworkProfile& framework) {
  Layout layout;
  // No layout section reads as an empty one: every field takes the same default.
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const bool given = top.has("layout");
  JsonReader r = given ? top.object("layout") : JsonReader(kEmpty, top.file(), "layout");
  layout.tp = r.integer_or("tp", 1, 1, kMaxParallel);
  layout.pp = r.integer_or("pp", 1, 1, kMaxParallel);
  layout.cp = r.integer_or("cp", 1, 1, kMaxParallel);
  layout.ep = r.integer_or("ep", 1, 1, kMaxParallel);
  layout.expert_tp = r.integer_or("expert_tp", layout.tp, 1, kMaxParallel);
  const int64_t model_parallel = layout.tp * layout.pp * layout.cp;
  if (r.has("dp")) {
    layout.dp = r.integer("dp", 1, kMaxGpus);
  } else {
    if (cluster.num_gpus % model_parallel != 0)
      r.fail("dp", "cannot be derived: num_gpus " + std::to_string(cluster.num_gpus) +
                       " is not divisible by tp*pp*cp = " + std::to_string(model_parallel));
    layout.dp = cluster.num_gpus / model_parallel;
  }
  // At least the balanced share: below it the padding becomes dropping, and the model FLOPs
  // (Megatron's count of the routed tokens) would credit expert work never done.
  if (r.has("moe_capacity_factor")) layout.moe_capacity_factor = r.number("moe_capacity_factor", 1.0, 1024.0);
  layout.cp_comm_type = parse_cp_comm_type(r.choice_or("cp_comm_type", "p2p", kCpCommTypeNames));
  layout.cp_a2a_level = read_cp_a2a_level(r, layout);
  layout.ep_intra_level = ep_domain_level(cluster, layout);
  // Ulysses splits each rank's query heads and key/value heads (one at least: Megatron
  // replicates KV heads over a larger tp; MLA's up-projections give every query head its own)
  // over its all-to-all's ranks. (A tp that does not divide the heads is refused by its own rule.)
  const int64_t a2a = layout.cp_a2a();
  if (a2a > 1 && model.heads % layout.tp == 0) {
    const int64_t heads = model.heads / layout.tp;
    const int64_t kv_heads = model.mla ? heads : std::max<int64_t>(1, model.kv_heads / layout.tp);
    const bool hierarchical = layout.cp_comm_type == CpCommType::a2a_p2p;
    const std::string over =
        hierarchical ? "the a2a level " + std::to_string(a2a) : "cp " + std::to_string(layout.cp);
    if (heads % a2a != 0 || kv_heads % a2a != 0)
      r.fail(hierarchical ? "hierarchical_context_parallel_sizes" : "cp_comm_type",
             std::string(hierarchical ? "a2a+p2p" : "a2a") + " splits each rank's attention heads over " +
                 over + ": " + std::to_string(heads) + " query and " + std::to_string(kv_heads) +
                 " key/value heads per tensor-parallel rank do not divide by it (use p2p, or a size that "
                 "divides them)");
  }
  layout.virtual_stages = r.integer_or("virtual_stages", 1, 1, kMaxVirtualStages);
  layout.pipeline_split =
      parse_pipeline_split(r.choice_or("pipeline_split", "even", kPipelineSplitSpellings));
  if (r.has("pipeline_schedule"))
    layout.pipeline_schedule =
        parse_pipeline_schedule(r.choice_or("pipeline_schedule", "1f1b", kPipelineScheduleSpellings));
  layout.sequence_parallel =
      r.boolean_or("sequence_parallel", framework.sequence_parallel_with_tp && layout.tp > 1);
  layout.zero_stage = static_cast<int>(r.integer_or("zero_stage", 1, 0, 3));
  layout.micro_batch = r.integer_or("micro_batch", 1, 1, kMaxGlobalBatch);
  layout.global_batch = r.integer_or("global_batch", layout.micro_batch * layout.dp, 1, kMaxGlobalBatch);
  layout.recompute = parse_recompute(r.choice_or("recompute", "none", kRecomputeNames));
  layout.precision = parse_precision(r.choice_or("precision", "bf16", kPrecisionNames));
  if (r.has("fp8_recipe"))
    layout.fp8_recipe = *parse_precision_recipe(r.choice_or("fp8_recipe", "", precision_recipe_names()));
  layout.fp8_param_gather = r.boolean_or("fp8_param_gather", false);
  layout.flash_attention = r.boolean_or("flash_attention", framework.flash_attention);
  r.finish();

  if (!model.is_moe() && !r.has("expert_tp")) layout.expert_tp = 1;  // its default is tp
  if (const auto error = layout_error(model, cluster, layout))
    throw InputError(top.file(), error->field, error->message);
  if (const auto error = pipeline_engine_error(layout, framework.workload))
    throw InputError(top.file(), error->field, error->message);
  return layout;
}

RunSpec read_run(JsonReader& top, const ModelSpec& model, const Layout& layout) {
  RunSpec run;
  if (!top.has("run")) return run;
  JsonReader r = top.object("run");
  if (r.has("tokens")) {  // absent means Chinchilla's 20 per parameter; a written one is at least 1
    if (r.has("train_iters"))
      r.fail("train_iters", "given together with tokens (give the run's length once)");
    const nlohmann::json& written = r.raw("tokens");
    if (written.is_number() && std::isfinite(written.get<double>()) && written.get<double>() < 1)
      r.fail("tokens",
             "no tokens to train on (at least 1, or leave the field out for 20 per parameter, "
             "Chinchilla)");
    run.tokens = r.number("tokens", 1, 1e18);
  } else if (r.has("train_iters")) {
    // Megatron's --train-iters: every iteration trains global_batch sequences of seq_len tokens.
    const double iters = double(r.integer("train_iters", 1, int64_t(1e12)));
    run.tokens = iters * double(layout.global_batch) * double(model.seq_len);
    if (run.tokens > 1e18)
      r.fail("train_iters", "times global_batch times seq_len is over the 1e18 tokens a run may train on");
  }
  run.usd_per_gpu_hour = r.number_or("usd_per_gpu_hour", run.usd_per_gpu_hour, 0, 1e4);
  run.gpu_mtbf_hours = r.number_or("gpu_mtbf_hours", run.gpu_mtbf_hours, 1, 1e9);
  if (r.has("checkpoint_interval_min")) {
    const auto& v = r.raw("checkpoint_interval_min");
    if (v.is_string()) {
      if (v.get<std::string>() != "auto")
        r.fail("checkpoint_interval_min", "expected minutes (a number) or \"auto\"");
    } else {
      run.checkpoint_interval_min = r.number("checkpoint_interval_min", 0.1, 1e6);
    }
  }
  run.assumed_mfu = r.optional_number("assumed_mfu", 1e-4, 1.0);
  r.finish();
  return run;
}

}  // namespace

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

const char* to_string(CpCommType c) {
  switch (c) {
    case CpCommType::p2p:
      return "p2p";
    case CpCommType::all_gather:
      return "all_gather";
    case CpCommType::a2a:
      return "a2a";
    case CpCommType::a2a_p2p:
      return "a2a+p2p";
  }
  return "?";
}

const char* to_string(PipelineSplit p) {
  switch (p) {
    case PipelineSplit::even:
      return "even";
    case PipelineSplit::embedding_loss_layers:
      return "embedding-loss-layers";
    case PipelineSplit::balanced:
      return "balanced";
  }
  return "?";
}

double training_peak_flops_per_s(const Scenario& s) {
  const double peak = s.cluster.gpu.peak_flops_per_s(s.layout.precision);
  if (!(peak > 0))
    throw InputError(s.file, "layout.precision",
                     s.cluster.gpu.id + " has no dense " + to_string(s.layout.precision) +
                         " peak (use a precision it supports, e.g. bf16)");
  return peak;
}

const char* to_string(FabricTopology t) {
  return t == FabricTopology::fat_tree ? "fat-tree" : "rail-optimized";
}

namespace {

// One override: the scenario field it replaces (a dotted path) and its value (unset when not
// given). Order matters: the model before its seq_len.
struct OverrideField {
  const char* path;
  std::optional<nlohmann::json> value;
};

template <class T>
std::optional<nlohmann::json> json_of(const std::optional<T>& v) {
  return v ? std::optional<nlohmann::json>(*v) : std::nullopt;
}

std::vector<OverrideField> override_fields(const ScenarioOverrides& o) {
  return {{"model", json_of(o.model)},
          {"model.seq_len", json_of(o.seq_len)},
          {"model.layers", json_of(o.layers)},
          {"model.hidden", json_of(o.hidden)},
          {"model.heads", json_of(o.heads)},
          {"model.kv_heads", json_of(o.kv_heads)},
          {"model.head_dim", json_of(o.head_dim)},
          {"model.ffn_hidden", json_of(o.ffn_hidden)},
          {"cluster.gpu", json_of(o.gpu)},
          {"cluster.num_gpus", json_of(o.gpus)},
          {"cluster.gpus_per_node", json_of(o.gpus_per_node)},
          {"cluster.fabric.kind", json_of(o.fabric)},
          {"cluster.fabric.nics_per_node", json_of(o.nics_per_node)},
          {"cluster.fabric.topology", json_of(o.topology)},
          {"cluster.fabric.oversubscription", json_of(o.oversubscription)},
          {"layout.tp", json_of(o.tp)},
          {"layout.pp", json_of(o.pp)},
          {"layout.dp", json_of(o.dp)},
          {"layout.cp", json_of(o.cp)},
          {"layout.cp_comm_type", json_of(o.cp_comm_type)},
          {"layout.hierarchical_context_parallel_sizes", json_of(o.hierarchical_cp_sizes)},
          {"layout.ep", json_of(o.ep)},
          {"layout.expert_tp", json_of(o.expert_tp)},
          {"layout.moe_capacity_factor", json_of(o.moe_capacity_factor)},
          {"layout.virtual_stages", json_of(o.virtual_stages)},
          {"layout.pipeline_split", json_of(o.pipeline_split)},
          {"layout.pipeline_schedule", json_of(o.pipeline_schedule)},
          {"layout.micro_batch", json_of(o.micro_batch)},
          {"layout.global_batch", json_of(o.global_batch)},
          {"layout.zero_stage", json_of(o.zero_stage)},
          {"layout.recompute", json_of(o.recompute)},
          {"layout.precision", json_of(o.precision)},
          {"layout.fp8_recipe", json_of(o.fp8_recipe)},
          {"layout.fp8_param_gather", json_of(o.fp8_param_gather)},
          {"layout.sequence_parallel", json_of(o.sequence_parallel)},
          {"layout.flash_attention", json_of(o.flash_attention)},
          {"run.tokens", json_of(o.tokens)},
          {"run.train_iters", json_of(o.train_iters)},
          {"run.usd_per_gpu_hour", json_of(o.usd_per_gpu_hour)},
          {"run.assumed_mfu", json_of(o.mfu)},
          {"framework", json_of(o.framework)}};
}

}  // namespace

const std::vector<std::string>& precision_names() { return kPrecisionNames; }
const std::vector<std::string>& pipeline_split_names() { return kPipelineSplitNames; }
const std::vector<std::string>& pipeline_schedule_names() { return kPipelineScheduleNames; }

void set_layout_precision(nlohmann::json& layout, const std::string& precision) {
  layout["precision"] = precision;
  if (std::find(kPrecisionNames.begin(), kPrecisionNames.end(), precision) == kPrecisionNames.end()) return;
  const Precision p = parse_precision(precision);
  if (const auto recipe = layout.find("fp8_recipe"); recipe != layout.end() && recipe->is_string())
    if (const auto r = parse_precision_recipe(recipe->get<std::string>()); r && !recipe_runs_at(*r, p))
      layout.erase(recipe);
  if (!fp8_param_gather_runs_at(p)) layout.erase("fp8_param_gather");
}

void ScenarioOverrides::apply_to(nlohmann::json& doc) const {
  if (!doc.is_object()) return;  // parse_scenario reports the type error
  // First the precision, dropping what the file wrote for its own; a recipe or fp8 parameters
  // given beside it are written below, over what is left.
  if (precision) {
    nlohmann::json& layout = doc["layout"];
    if (layout.is_null()) layout = nlohmann::json::object();
    if (layout.is_object())
      set_layout_precision(layout, *precision);  // another type: parse_scenario reports it
  }
  for (const OverrideField& f : override_fields(*this)) {
    if (!f.value) continue;
    std::vector<std::string> keys;
    for (std::string_view rest = f.path;;) {
      const size_t dot = rest.find('.');
      keys.emplace_back(rest.substr(0, dot));
      if (dot == std::string_view::npos) break;
      rest.remove_prefix(dot + 1);
    }
    nlohmann::json* node = &doc;
    for (size_t i = 0; node && i + 1 < keys.size(); ++i) {
      nlohmann::json& child = (*node)[keys[i]];
      if (child.is_null()) child = nlohmann::json::object();
      if (keys[i] == "model" && child.is_string())  // catalog + seq_len, or config.json + seq_len
        child =
            nlohmann::json{{names_hf_config_file(child.get<std::string>()) ? "hf_config" : "name", child}};
      node = child.is_object() ? &child : nullptr;  // another type: parse_scenario reports it
    }
    if (node) (*node)[keys.back()] = *f.value;
  }
  // A changed GPU count or model-parallel size invalidates a file's dp unless dp was given too:
  // derive it again from the GPU count, as Megatron-LM does (dp = world / (tp·pp·cp)).
  const bool reshaped = gpus || tp || pp || cp || ep;
  if (reshaped && !dp && doc.contains("layout") && doc["layout"].is_object()) doc["layout"].erase("dp");
  // A schedule without virtual stages (gpipe, 1f1b, dualpipe) given over a file's virtual stages
  // runs without them, unless they are given too (schedule_error refuses the pair).
  const bool known_schedule =
      pipeline_schedule && std::find(kPipelineScheduleSpellings.begin(), kPipelineScheduleSpellings.end(),
                                     *pipeline_schedule) != kPipelineScheduleSpellings.end();
  if (known_schedule && runs_without_virtual_stages(parse_pipeline_schedule(*pipeline_schedule)) &&
      !virtual_stages && doc.contains("layout") && doc["layout"].is_object())
    doc["layout"].erase("virtual_stages");
  // The run's length is given once: a flag's replaces the file's, in either form.
  if ((tokens || train_iters) && doc.contains("run") && doc["run"].is_object())
    doc["run"].erase(tokens ? "train_iters" : "tokens");
}

std::vector<std::string> ScenarioOverrides::given() const {
  std::vector<std::string> fields;
  for (const OverrideField& f : override_fields(*this))
    if (f.value) fields.emplace_back(f.path);
  return fields;
}

Scenario parse_scenario(const nlohmann::json& doc, const std::string& file, const Catalogs& catalogs,
                        const std::filesystem::path& base_dir) {
  JsonReader top(doc, file);
  Scenario s;
  s.file = file;
  s.framework = catalogs.frameworks.resolve(top.string_or("framework", kDefaultFramework), file, "framework");
  s.model = read_model_field(top, catalogs, base_dir);
  s.cluster = read_cluster(top, catalogs);
  s.layout = read_layout(top, s.model, s.cluster, s.framework);
  s.run = read_run(top, s.model, s.layout);
  top.string_or("description", "");  // free text for people reading the file
  top.finish();
  const double peak = s.cluster.gpu.peak_flops_per_s(s.layout.precision);
  const double step_flops_per_gpu = count_flops_per_sequence(s.model, AttentionFlops::causal).total() *
                                    double(s.layout.global_batch) / double(s.cluster.num_gpus);
  if (peak > 0 && step_flops_per_gpu / peak > kMaxStepSecondsAtPeak) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "one step is %.3g FLOPs per GPU, %.3g s at the %s's peak",
                  step_flops_per_gpu, step_flops_per_gpu / peak, s.cluster.gpu.id.c_str());
    throw InputError(file, "model",
                     std::string(buf) +
                         " (at most 1e6 s per step is simulated: use a smaller model, seq_len or "
                         "global_batch, or more GPUs)");
  }
  return s;
}

Scenario load_scenario(const std::filesystem::path& path, const ScenarioOverrides& overrides,
                       const Catalogs& catalogs) {
  nlohmann::json doc = nlohmann::json::object();
  std::string file = kOverridesSource;
  std::filesystem::path base_dir = std::filesystem::current_path();
  if (!path.empty()) {
    doc = load_json_file(path);
    file = path.string();
    base_dir = path.parent_path();
  }
  overrides.apply_to(doc);
  if (!doc.is_object()) throw InputError(file, "(top level)", "expected a JSON object");
  if (!doc.contains("model"))
    throw InputError(file, "model", "missing (a catalog name such as \"llama3-70b\")");
  if (!doc.contains("cluster") || !doc["cluster"].is_object() || !doc["cluster"].contains("gpu"))
    throw InputError(file, "cluster.gpu", "missing (a GPU id such as \"h100-sxm\")");
  return parse_scenario(doc, file, catalogs, base_dir);
}

ClusterSpec load_cluster(const ScenarioOverrides& overrides, const Catalogs& catalogs) {
  nlohmann::json doc = nlohmann::json::object();
  overrides.apply_to(doc);
  if (!doc.contains("cluster") || !doc["cluster"].contains("gpu"))
    throw InputError(kOverridesSource, "cluster.gpu", "missing (a GPU id such as \"h100-sxm\")");
  JsonReader top(doc, kOverridesSource);
  return read_cluster(top, catalogs);
}

void check_user_catalog_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(
        dir.string(), "",
        "user catalog folder not found (a folder holding gpus/, fabrics/, models/ or frameworks/ "
        "subfolders of *.json entries: docs/catalogs.md)");
  bool any = false;
  for (const char* sub : {"gpus", "fabrics", "models", "frameworks"})
    any = any || std::filesystem::exists(dir / sub, ec);
  if (!any)
    throw InputError(
        dir.string(), "",
        "holds no gpus/, fabrics/, models/ or frameworks/ subfolder (a user catalog folder holds "
        "*.json entries in them: docs/catalogs.md)");
}

Catalogs load_catalogs(const std::filesystem::path& data_dir,
                       const std::vector<std::filesystem::path>& user_dirs) {
  Catalogs c{ModelCatalog::load(data_dir / "models" / "catalog"),
             HardwareCatalog::load(data_dir / "topologies" / "gpus", data_dir / "topologies" / "fabrics",
                                   data_dir / "topologies" / "architectures.json"),
             FrameworkCatalog::load(data_dir / "sim" / "framework" / "profiles")};
  for (const std::filesystem::path& dir : user_dirs) {
    check_user_catalog_folder(dir);
    c.hardware.add(dir / "gpus", dir / "fabrics");
    c.models.add(dir / "models");
    c.frameworks.add(dir / "frameworks");
  }
  return c;
}

ClusterGraphSpec cluster_graph_spec(const ClusterSpec& c) {
  ClusterGraphSpec s;
  s.gpu = c.gpu;
  s.fabric = c.fabric;
  s.num_gpus = c.num_gpus;
  s.gpus_per_node = c.gpus_per_node;
  s.nics_per_node = c.nics_per_node;
  s.shape =
      c.topology == FabricTopology::rail_optimized ? FabricShape::rail_optimized : FabricShape::fat_tree;
  s.oversubscription = c.oversubscription;
  return s;
}

}  // namespace simrun
