// Where a token's routed copies land under balanced routing: how many distinct "bins" (a node's
// experts, a GPU's experts) its top_k experts fall in, for the all-to-alls that send a token
// once per bin (DeepEP-style dispatch, DeepSeek-V3 sec. 3.2.2) rather than once per expert.
#pragma once

#include <cstdint>
#include <optional>

#include "simrun/models/model_spec.hpp"

namespace simrun {

// Expected distinct bins of `experts_per_bin` consecutive experts a token's top_k experts fall in,
// under balanced routing: its topk_groups groups a uniform choice among the groups (all experts
// one group without group-limited routing), its top_k experts a uniform choice among theirs
// ([inferred]: the balance DeepSeek-V3's auxiliary-loss-free routing keeps, sec. 2.1.2; DeepEP's
// tests draw routes the same way). With bins inside groups (experts_per_bin divides the group):
//   topk_groups · (g / b) · (1 − C(topk_groups·g − b, k) / C(topk_groups·g, k))
// (g experts per group, b per bin, k = top_k: a bin of a chosen group is missed when all k
// picks fall in the other topk_groups·g − b experts). With groups inside bins (j of a bin's
// b / g groups chosen, hypergeometrically):
//   (groups · g / b) · (1 − Σ_j P(j) · C((topk_groups − j)·g, k) / C(topk_groups·g, k)).
// So at most min(topk_groups · max(1, g / b), top_k) bins: DeepSeek-V3's "at most 4 nodes".
// nullopt where the bins and groups do not nest (a bin straddles groups).
std::optional<double> expected_bins_reached(const MoeSpec& moe, int64_t experts_per_bin);

}  // namespace simrun
