// Degraded GPUs and links (degraded.hpp): their checks and the report's description.
#include "simrun/sim/scenario/degraded.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "simrun/common/error.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"

namespace simrun {
namespace {

std::string outside_cluster(int64_t rank, int64_t world_size) {
  return "rank " + std::to_string(rank) + " is outside the cluster (0.." + std::to_string(world_size - 1) +
         ")";
}

}  // namespace

void check_stragglers(const std::vector<Straggler>& stragglers, int64_t world_size) {
  for (size_t i = 0; i < stragglers.size(); ++i) {
    const Straggler& s = stragglers[i];
    if (s.rank < 0 || s.rank >= world_size)
      throw InputError("step", fmt::format("stragglers[{}].rank", i), outside_cluster(s.rank, world_size));
    if (!(s.slowdown >= 1.0 && s.slowdown <= 100.0))
      throw InputError("step", fmt::format("stragglers[{}].slowdown", i),
                       fmt::format("slowdown must be in [1, 100], got {}", s.slowdown));
  }
}

void check_slow_links(const std::vector<SlowLink>& slow_links, int64_t world_size) {
  for (size_t i = 0; i < slow_links.size(); ++i) {
    const SlowLink& s = slow_links[i];
    if (s.rank < 0 || s.rank >= world_size)
      throw InputError("step", fmt::format("slow_links[{}].rank", i), outside_cluster(s.rank, world_size));
    if (!(s.bandwidth_fraction > 0 && s.bandwidth_fraction <= 1))
      throw InputError("step", fmt::format("slow_links[{}].bandwidth_fraction", i),
                       "the bandwidth fraction must be in (0, 1]");
  }
}

std::vector<std::string> describe_degraded(const Scenario& sc, const std::vector<Straggler>& stragglers,
                                           const std::vector<SlowLink>& slow_links) {
  // Per rank the effect the simulation applies (the larger slowdown, the lower fraction), then
  // ranks with the same effect grouped.
  std::map<int64_t, double> slowdown;
  std::map<std::pair<int64_t, LinkClass>, double> fraction;
  for (const Straggler& s : stragglers) slowdown[s.rank] = std::max(slowdown[s.rank], s.slowdown);
  for (const SlowLink& s : slow_links) {
    const auto [it, added] = fraction.emplace(std::pair{s.rank, s.link}, s.bandwidth_fraction);
    if (!added) it->second = std::min(it->second, s.bandwidth_fraction);
  }
  // (kind: kernels, NIC, scale-up; value) -> ranks, ascending.
  std::map<std::pair<int, double>, std::vector<int64_t>> ranks_of;
  for (const auto& [rank, x] : slowdown) ranks_of[{0, x}].push_back(rank);
  for (const auto& [key, f] : fraction)
    ranks_of[{key.second == LinkClass::scale_out ? 1 : 2, f}].push_back(key.first);
  const RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
  std::vector<std::string> out;
  for (const auto& [kind, ranks] : ranks_of) {
    const auto [what, value] = kind;
    const std::string effect = what == 0 ? fmt::format("kernels {:.4g}x slower", value)
                               : what == 1
                                   ? fmt::format("NIC at {:.4g}% of its bandwidth", 100 * value)
                                   : fmt::format("scale-up links at {:.4g}% of their bandwidth", 100 * value);
    for (size_t i = 0; i < ranks.size();) {
      const int64_t stage = layout.coord_of(ranks[i]).pp;
      size_t j = i;
      while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1 &&
             layout.coord_of(ranks[j + 1]).pp == stage)
        ++j;
      out.push_back(i == j ? fmt::format("rank {} (stage {}): {}", ranks[i], stage, effect)
                           : fmt::format("ranks {}-{} (stage {}): {}", ranks[i], ranks[j], stage, effect));
      i = j + 1;
    }
  }
  return out;
}

}  // namespace simrun
