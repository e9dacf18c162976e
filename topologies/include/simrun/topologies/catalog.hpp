// The hardware catalog: GPU kinds (topologies/gpus/*.json) and fabric kinds
// (topologies/fabrics/*.json), one per file, file stem = id (the ids of the scenario contract),
// plus the entries of user catalog folders (docs/catalogs.md).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "simrun/common/catalog_files.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

// Reads one GPU or fabric object: a catalog file's, or one defined inline in a scenario (the same
// fields, the same checks: topologies/README.md). `id` is the file stem or the inline "id". A
// GPU's compute defaults are its own only: HardwareCatalog::read_gpu_entry adds its architecture's.
GpuSpec read_gpu(JsonReader& reader, const std::string& id);
FabricSpec read_fabric(JsonReader& reader, const std::string& id);

// The compute defaults of each GPU architecture (topologies/architectures.json), by the name a
// GPU entry's "architecture" gives, e.g. "Hopper".
using ArchitectureDefaults = std::map<std::string, GpuSpec::ComputeDefaults>;
ArchitectureDefaults read_architectures(const std::filesystem::path& file);

class HardwareCatalog {
 public:
  // The shipped catalog: both folders must exist and hold at least one *.json file; every GPU's
  // compute defaults are completed from its architecture's in `architectures_file`.
  static HardwareCatalog load(const std::filesystem::path& gpus_dir, const std::filesystem::path& fabrics_dir,
                              const std::filesystem::path& architectures_file);
  // Adds a user catalog's entries: every *.json in `gpus_dir` and `fabrics_dir` (a folder that
  // does not exist adds nothing). An id already in the catalog is an InputError naming the file:
  // an id means one part, so a variant takes its own id.
  void add(const std::filesystem::path& gpus_dir, const std::filesystem::path& fabrics_dir);

  // Unknown ids are InputErrors naming `file`/`field`, listing known ids, suggesting the nearest
  // (by id or alias).
  const GpuSpec& gpu(const std::string& id, const std::string& file, const std::string& field) const;
  const FabricSpec& fabric(const std::string& id, const std::string& file, const std::string& field) const;
  // The entry whose cuda_names hold `cuda_name` (cudaDeviceProp::name), or nullptr.
  const GpuSpec* gpu_named_by_cuda(const std::string& cuda_name) const;
  std::vector<std::string> gpu_ids() const;
  std::vector<std::string> fabric_ids() const;
  // A GPU object (a catalog file's, a user folder's or one inline in a scenario) as read_gpu reads
  // it, each compute default it leaves out taken from its architecture's. An architecture named
  // as a known one but for case ("hopper") is refused: it would silently get the generic defaults.
  GpuSpec read_gpu_entry(JsonReader& reader, const std::string& id) const;

 private:
  void add_folders(const std::filesystem::path& gpus_dir, const std::filesystem::path& fabrics_dir,
                   FolderRule rule);

  ArchitectureDefaults m_architectures;
  std::map<std::string, GpuSpec> m_gpus;
  std::map<std::string, FabricSpec> m_fabrics;
  std::map<std::string, std::vector<std::string>> m_gpu_aliases, m_fabric_aliases;  // id -> aliases
};

}  // namespace simrun
