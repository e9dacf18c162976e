// Scenario file parsing and validation (DESIGN.md "Scenario file"), with Megatron-style
// command-line overrides applied before validation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simrun/models/catalog.hpp"
#include "simrun/sim/scenario.hpp"
#include "simrun/topologies/catalog.hpp"

namespace simrun {

// Values given on the command line; each replaces the scenario field of the same name.
struct ScenarioOverrides {
  std::optional<std::string> model;           // --model llama3-70b
  std::optional<std::string> gpu;             // --gpu h100-sxm
  std::optional<int64_t> gpus;                // --gpus 1024 (cluster.num_gpus)
  std::optional<int64_t> gpus_per_node;       // --gpus-per-node 8
  std::optional<std::string> fabric;          // --fabric ib-ndr
  std::optional<int64_t> tp, pp, dp, cp, ep, expert_tp;  // --tp 8 ...
  std::optional<std::string> cp_comm_type;               // --cp-comm-type a2a
  std::optional<std::vector<int64_t>> hierarchical_cp_sizes;  // --hierarchical-cp-sizes 2,4
  std::optional<double> moe_capacity_factor;             // --moe-capacity-factor 1.25
  std::optional<int64_t> virtual_stages;      // --virtual-stages 2
  std::optional<std::string> pipeline_split;  // --pipeline-split balanced
  std::optional<int64_t> micro_batch;         // --micro-batch 1
  std::optional<int64_t> global_batch;        // --global-batch 1024
  std::optional<int64_t> seq_len;             // --seq-len 8192
  std::optional<int64_t> zero_stage;          // --zero-stage 1
  std::optional<std::string> recompute;       // --recompute selective
  std::optional<std::string> precision;       // --precision bf16
  std::optional<bool> sequence_parallel;      // --sequence-parallel / --no-sequence-parallel
  std::optional<bool> flash_attention;        // --flash-attention / --no-flash-attention
  std::optional<double> tokens;               // --tokens 1.4e12
  std::optional<double> usd_per_gpu_hour;     // --usd-per-gpu-hour 5
  std::optional<double> mfu;                  // --mfu 0.4 (analytic time from an assumed MFU)

  // Writes the overrides into a scenario document (creating objects as needed).
  void apply_to(nlohmann::json& doc) const;
  // The scenario field each given override replaces, with its flag ("layout.tp", "--tp").
  std::vector<std::pair<std::string, std::string>> given() const;
};

struct Catalogs {
  ModelCatalog models;
  HardwareCatalog hardware;
};

// Validates `doc` (already merged with overrides) into a Scenario. `file` names the source in
// errors; relative hf_config paths resolve against `base_dir`. Throws InputError.
Scenario parse_scenario(const nlohmann::json& doc, const std::string& file, const Catalogs& catalogs,
                        const std::filesystem::path& base_dir);

// Loads a scenario file (or, with an empty path, starts from an empty document), applies the
// overrides and validates.
Scenario load_scenario(const std::filesystem::path& path, const ScenarioOverrides& overrides,
                       const Catalogs& catalogs);

// Reads the catalogs under the data directory (models/catalog, topologies/gpus, topologies/fabrics).
Catalogs load_catalogs(const std::filesystem::path& data_dir);

}  // namespace simrun
