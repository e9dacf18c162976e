// The catalog of named models (data files in models/catalog/*.json), inline model objects and
// HuggingFace config.json import, all producing a ModelSpec.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simrun/common/json_reader.hpp"
#include "simrun/models/model_spec.hpp"

namespace simrun {

class ModelCatalog {
 public:
  // Reads every *.json in `dir` (one model per file, file stem = id): the shipped catalog, a
  // folder that must exist and hold at least one file.
  static ModelCatalog load(const std::filesystem::path& dir);
  // Adds a user catalog's models: every *.json in `dir` (a folder that does not exist adds
  // nothing). An id already in the catalog is an InputError naming the file.
  void add(const std::filesystem::path& dir);

  // The model with this id; an unknown id is an InputError naming `file`/`field`, listing the
  // known ids and suggesting the nearest (by id or alias).
  const ModelSpec& get(const std::string& id, const std::string& file, const std::string& field) const;
  bool contains(const std::string& id) const { return m_models.count(id) != 0; }
  std::vector<std::string> ids() const;

 private:
  std::map<std::string, ModelSpec> m_models;
  std::map<std::string, std::vector<std::string>> m_aliases;  // id -> other names, for suggestions
};

// Reads a model object (catalog file or inline scenario "model"): the DESIGN.md fields
// {"name","layers","hidden","heads","kv_heads","ffn_hidden","ffn_act","vocab","seq_len",
//  "tied_embeddings","moe":{...}} plus the optional extras of ModelSpec. Validates ranges.
ModelSpec read_model(JsonReader& reader);
// The fields read_model requires (the rest default).
inline constexpr const char* kModelRequiredFields[] = {"layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len"};

// A variant of `base` (a catalog model or an imported config): the shape fields of a model object
// that `reader` holds replace base's (layers, hidden, heads, kv_heads, head_dim, ffn_hidden,
// ffn_act, vocab, seq_len, tied_embeddings, as Megatron's --num-layers, --hidden-size ... set
// them), with the same ranges and cross-field checks as read_model. The head width follows a new
// hidden or heads (hidden / heads) unless base gave it explicitly or head_dim is given; the
// published parameter total no longer applies and is dropped, and a changed shape is named
// "<base> (variant)". Keys other than these are left to
// the caller (reader.finish() is not called).
ModelSpec read_model_variant(const ModelSpec& base, JsonReader& reader);
inline constexpr const char* kModelVariantFields[] = {"layers",   "hidden",     "heads",   "kv_heads",
                                                      "head_dim", "ffn_hidden", "ffn_act", "vocab",
                                                      "seq_len",  "tied_embeddings"};

// Maps a HuggingFace config.json (text_config nesting followed) to a ModelSpec. `file` names
// it in errors. Only the model_types of hf_model_types() are read: another, or none, is an
// InputError, as is a sliding window shorter than the sequence. seq_len: the training sequence
// in tokens, e.g. 8192 (default: the config's max_position_embeddings).
ModelSpec import_hf_config(const nlohmann::json& config, const std::string& file,
                           std::optional<int64_t> seq_len = std::nullopt);

// The HuggingFace model_types import_hf_config understands, e.g. "llama", "gemma2".
std::vector<std::string> hf_model_types();

// Whether a model named by a string is a config.json path rather than a catalog id: it contains
// a '/' or ends in ".json" (catalog ids are file stems, which do neither).
bool names_hf_config_file(const std::string& model);

}  // namespace simrun
