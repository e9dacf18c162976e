// Internal to simrun_models: the structural checks every ModelSpec passes, whichever reader
// (catalog/inline model object or HuggingFace config.json) produced it.
#pragma once

#include <functional>
#include <string>

#include "simrun/models/model_spec.hpp"

namespace simrun::detail {

// Names a ModelSpec field (e.g. "kv_heads", "moe.top_k") the way the input file spells it, so
// errors point at the user's own field path.
using FieldPath = std::function<std::string(const std::string& spec_field)>;

// Cross-field checks (ranges of single fields are checked while reading): heads divisible by
// kv_heads, hidden = heads·head_dim unless head_dim was given, top_k ≤ experts, dense layers
// fewer than layers, MLA dims. Throws InputError(file, path(field), why).
void check_model(const ModelSpec& m, const std::string& file, const FieldPath& path);

// Sane maxima for single fields: far above any published model, low enough that products of
// them (e.g. layers·hidden²) stay finite and exact in double.
inline constexpr int64_t kMaxLayers = 10'000;
inline constexpr int64_t kMaxHidden = 1'000'000;
inline constexpr int64_t kMaxHeads = 100'000;
inline constexpr int64_t kMaxHeadDim = 65'536;
inline constexpr int64_t kMaxFfn = 10'000'000;
inline constexpr int64_t kMaxVocab = 100'000'000;
inline constexpr int64_t kMaxSeqLen = 1LL << 26;  // 64M tokens (context-parallel runs reach 1M)
inline constexpr int64_t kMaxExperts = 1'000'000;
inline constexpr double kMaxPublishedParams = 1e16;

}  // namespace simrun::detail
