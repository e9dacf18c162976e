// Internal to simrun_models: the structural checks every ModelSpec passes, whichever reader
// (catalog/inline model object or HuggingFace config.json) produced it.
#pragma once

#include <functional>
#include <string>

#include "simrun/models/model_limits.hpp"
#include "simrun/models/model_spec.hpp"

namespace simrun::detail {

// Names a ModelSpec field (e.g. "kv_heads", "moe.top_k") the way the input file spells it, so
// errors point at the user's own field path.
using FieldPath = std::function<std::string(const std::string& spec_field)>;

// Cross-field checks (ranges of single fields are checked while reading): heads divisible by
// kv_heads, hidden = heads·head_dim unless head_dim was given, top_k ≤ experts, dense layers
// fewer than layers, MLA dims. Throws InputError(file, path(field), why).
void check_model(const ModelSpec& m, const std::string& file, const FieldPath& path);

}  // namespace simrun::detail
