// The largest value each single field of a model may take: every model reader (a catalog file,
// an inline model object, a HuggingFace config.json) and `simrun accuracy`'s rows refuse more.
// Far above any published model, low enough that products of them (e.g. layers·hidden²) stay
// finite and exact in double.
#pragma once

#include <cstdint>

namespace simrun {

inline constexpr int64_t kMaxLayers = 10'000;
inline constexpr int64_t kMaxHidden = 1'000'000;
inline constexpr int64_t kMaxHeads = 100'000;
inline constexpr int64_t kMaxHeadDim = 65'536;
inline constexpr int64_t kMaxFfn = 10'000'000;
inline constexpr int64_t kMaxVocab = 100'000'000;
inline constexpr int64_t kMaxModelSeqLen = 1LL << 26;  // 64M tokens (context-parallel runs reach 1M)
inline constexpr int64_t kMaxExperts = 1'000'000;
inline constexpr double kMaxPublishedParams = 1e16;

}  // namespace simrun
