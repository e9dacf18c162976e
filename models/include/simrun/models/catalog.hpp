// The catalog of named models (data files in models/catalog/*.json), inline model objects and
// HuggingFace config.json import, all producing a ModelSpec.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "simrun/common/json_reader.hpp"
#include "simrun/models/model_spec.hpp"

namespace simrun {

class ModelCatalog {
 public:
  // Reads every *.json in `dir` (one model per file, file stem = id).
  static ModelCatalog load(const std::filesystem::path& dir);

  // The model with this id; an unknown id is an InputError naming `file`/`field`, listing the
  // known ids and suggesting the nearest.
  const ModelSpec& get(const std::string& id, const std::string& file, const std::string& field) const;
  bool contains(const std::string& id) const { return m_models.count(id) != 0; }
  std::vector<std::string> ids() const;

 private:
  std::map<std::string, ModelSpec> m_models;
};

// Reads a model object (catalog file or inline scenario "model"): the DESIGN.md fields
// {"name","layers","hidden","heads","kv_heads","ffn_hidden","ffn_act","vocab","seq_len",
//  "tied_embeddings","moe":{...}} plus the optional extras of ModelSpec. Validates ranges.
ModelSpec read_model(JsonReader& reader);

// Maps a HuggingFace config.json (Llama/Mistral/Mixtral/Qwen/GPT-2/GPT-NeoX/DeepSeek-V3 field
// names; text_config nesting) to a ModelSpec. `file` names it in errors.
ModelSpec import_hf_config(const nlohmann::json& config, const std::string& file);

}  // namespace simrun
