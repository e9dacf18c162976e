// The hardware catalog: GPU kinds (topologies/gpus/*.json) and fabric kinds
// (topologies/fabrics/*.json), one per file, file stem = id (the ids of the scenario contract).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

class HardwareCatalog {
 public:
  static HardwareCatalog load(const std::filesystem::path& gpus_dir,
                              const std::filesystem::path& fabrics_dir);

  // Unknown ids are InputErrors naming `file`/`field`, listing known ids, suggesting the nearest.
  const GpuSpec& gpu(const std::string& id, const std::string& file, const std::string& field) const;
  const FabricSpec& fabric(const std::string& id, const std::string& file, const std::string& field) const;
  std::vector<std::string> gpu_ids() const;
  std::vector<std::string> fabric_ids() const;

 private:
  std::map<std::string, GpuSpec> m_gpus;
  std::map<std::string, FabricSpec> m_fabrics;
};

}  // namespace simrun
