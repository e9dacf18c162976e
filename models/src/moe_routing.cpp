#include "simrun/models/moe_routing.hpp"

#include <algorithm>

namespace simrun {
namespace {

// C(n − x, k) / C(n, k): the chance that k picks without replacement among n miss x given ones.
double all_miss(int64_t n, int64_t x, int64_t k) {
  if (n - x < k) return 0.0;
  double p = 1.0;
  for (int64_t i = 0; i < k; ++i) p *= double(n - x - i) / double(n - i);
  return p;
}

}  // namespace

std::optional<double> expected_bins_reached(const MoeSpec& moe, int64_t experts_per_bin) {
  const int64_t experts = moe.experts, k = moe.top_k, b = experts_per_bin;
  if (experts <= 0 || k <= 0 || b <= 0 || experts % b != 0) return std::nullopt;
  const int64_t groups = moe.group_limited() ? moe.groups : 1;
  const int64_t chosen = moe.group_limited() ? moe.topk_groups : 1;
  const int64_t g = experts / groups;  // experts per group
  const int64_t pool = chosen * g;     // the experts a token's top_k come from
  if (g % b == 0) return double(chosen) * double(g / b) * (1.0 - all_miss(pool, b, k));
  if (b % g != 0) return std::nullopt;
  // A bin holds b / g groups; j of them among the token's `chosen`: C(b/g, j)·C(G − b/g, chosen − j)
  // / C(G, chosen), as the chance that `chosen` picks among G hit j of the bin's.
  const int64_t per_bin = b / g;
  double missed = 0;
  for (int64_t j = 0; j <= std::min(per_bin, chosen); ++j) {
    // P(exactly j of the bin's groups chosen).
    double p = 1.0;
    for (int64_t i = 0; i < j; ++i) p *= double(per_bin - i) / double(j - i);
    for (int64_t i = 0; i < chosen - j; ++i) p *= double(groups - per_bin - i) / double(chosen - j - i);
    for (int64_t i = 0; i < chosen; ++i) p /= double(groups - i) / double(chosen - i);
    if (chosen - j > groups - per_bin) p = 0;
    missed += p * all_miss(pool, j * g, k);
  }
  return double(experts / b) * (1.0 - missed);
}

}  // namespace simrun
