// Scenario file parsing and validation (DESIGN.md "Scenario file"), with overrides of single
// fields (the command line's flags, in simrun) applied before validation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simrun/models/catalog.hpp"
#include "simrun/sim/framework/profile.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/topologies/catalog.hpp"

namespace simrun {

// Values that replace scenario fields (the command line's, in simrun), each named by its
// field's path below; unset ones leave the file's value.
struct ScenarioOverrides {
  std::optional<std::string> model;                           // model, e.g. "llama3-70b"
  std::optional<std::string> gpu;                             // cluster.gpu, e.g. "h100-sxm"
  std::optional<int64_t> gpus;                                // cluster.num_gpus, e.g. 1024
  std::optional<int64_t> gpus_per_node;                       // cluster.gpus_per_node, e.g. 8
  std::optional<std::string> fabric;                          // cluster.fabric.kind, e.g. "ib-ndr"
  std::optional<int64_t> nics_per_node;                       // cluster.fabric.nics_per_node, e.g. 4
  std::optional<std::string> topology;                        // cluster.fabric.topology, e.g. "fat-tree"
  std::optional<double> oversubscription;                     // cluster.fabric.oversubscription, e.g. 2
  std::optional<int64_t> tp, pp, dp, cp, ep, expert_tp;       // layout.tp ... layout.expert_tp
  std::optional<std::string> cp_comm_type;                    // layout.cp_comm_type, e.g. "a2a"
  std::optional<std::vector<int64_t>> hierarchical_cp_sizes;  // layout.hierarchical_context_parallel_sizes
  std::optional<double> moe_capacity_factor;                  // layout.moe_capacity_factor, e.g. 1.25
  std::optional<int64_t> virtual_stages;                      // layout.virtual_stages, e.g. 2
  std::optional<std::string> pipeline_split;                  // layout.pipeline_split, e.g. "balanced"
  std::optional<std::string> pipeline_schedule;               // layout.pipeline_schedule, e.g. "dualpipe"
  std::optional<int64_t> micro_batch;                         // layout.micro_batch, e.g. 1
  std::optional<int64_t> global_batch;                        // layout.global_batch, e.g. 1024
  std::optional<int64_t> seq_len;                             // model.seq_len, e.g. 8192
  // A variant of the model (Megatron's --num-layers, --hidden-size, ...): model.layers, ...
  std::optional<int64_t> layers, hidden, heads, kv_heads, head_dim, ffn_hidden;
  std::optional<int64_t> zero_stage;       // layout.zero_stage, e.g. 1
  std::optional<std::string> recompute;    // layout.recompute, e.g. "selective"
  std::optional<std::string> precision;    // layout.precision, e.g. "bf16"
  std::optional<std::string> fp8_recipe;   // layout.fp8_recipe, e.g. "mxfp8"
  std::optional<bool> fp8_param_gather;    // layout.fp8_param_gather
  std::optional<bool> sequence_parallel;   // layout.sequence_parallel
  std::optional<bool> flash_attention;     // layout.flash_attention
  std::optional<double> tokens;            // run.tokens, e.g. 1.4e12
  std::optional<int64_t> train_iters;      // run.train_iters, e.g. 250000 (tokens = iters·batch·seq)
  std::optional<double> usd_per_gpu_hour;  // run.usd_per_gpu_hour, e.g. 5
  std::optional<double> mfu;               // run.assumed_mfu, e.g. 0.4 (time from an assumed MFU)
  std::optional<std::string> framework;    // framework, e.g. "nemo" or "deepspeed@0.5"

  // Writes the overrides into a scenario document (creating objects as needed). A precision
  // given drops the file's recipe and fp8 parameters where they no longer run
  // (set_layout_precision); a recipe or fp8 parameters given beside it stay, to be checked.
  void apply_to(nlohmann::json& doc) const;
  // The scenario field path of each given override ("layout.tp"), so a caller can tell an
  // error in a value it gave from one in the file.
  std::vector<std::string> given() const;
};

// The values layout.precision, layout.pipeline_split and layout.pipeline_schedule take, as a
// scenario writes them (older spellings the parser also reads left out): the GUI's choices.
const std::vector<std::string>& precision_names();
const std::vector<std::string>& pipeline_split_names();
const std::vector<std::string>& pipeline_schedule_names();

// A scenario's layout object with its precision set to `precision` (as a scenario writes it,
// e.g. "bf16"), and the recipe and fp8 parameters written for the old precision dropped where they
// no longer run at the new one (Layout::set_precision's rule; the command line's --precision and
// the GUI's precision pick). Names neither field knows are left for the parser to report.
void set_layout_precision(nlohmann::json& layout, const std::string& precision);

// The InputError `file` of a scenario built from overrides alone (no file).
inline constexpr const char* kOverridesSource = "overrides";

struct Catalogs {
  ModelCatalog models;
  HardwareCatalog hardware;
  FrameworkCatalog frameworks;
};

// Validates `doc` (already merged with overrides) into a Scenario. `file` names the source in
// errors; relative hf_config paths resolve against `base_dir`. "model", "cluster.gpu" and
// "cluster.fabric.kind" each take a catalog id or an inline object with the catalog file's
// fields (GPUs and fabrics with an optional "id", default "custom"). "framework" names a profile
// of catalogs.frameworks (default kDefaultFramework); its flash_attention is the layout's default.
// Throws InputError.
Scenario parse_scenario(const nlohmann::json& doc, const std::string& file, const Catalogs& catalogs,
                        const std::filesystem::path& base_dir);

// Loads a scenario file (or, with an empty path, starts from an empty document and names the
// source kOverridesSource in errors), applies the overrides and validates.
Scenario load_scenario(const std::filesystem::path& path, const ScenarioOverrides& overrides,
                       const Catalogs& catalogs);

// The cluster section the overrides write (cluster.gpu among them), read with a scenario's
// defaults and rules, for the commands that take a cluster without a model (`simrun collective`,
// `simrun topology`). Errors name the source kOverridesSource.
ClusterSpec load_cluster(const ScenarioOverrides& overrides, const Catalogs& catalogs);

// A user catalog folder exists and holds a gpus/, fabrics/, models/ or frameworks/ subfolder; else an
// InputError naming it (docs/catalogs.md).
void check_user_catalog_folder(const std::filesystem::path& dir);

// Reads the shipped catalogs under the data directory (models/catalog, topologies/gpus,
// topologies/fabrics, sim/framework/profiles), then each user catalog folder in order: its gpus/,
// fabrics/, models/ and frameworks/ subfolders (at least one of them), files as in the shipped
// ones, checked the same way. An id
// given twice (shipped and user, or in two user folders) is refused (docs/catalogs.md).
Catalogs load_catalogs(const std::filesystem::path& data_dir,
                       const std::vector<std::filesystem::path>& user_dirs = {});

}  // namespace simrun
