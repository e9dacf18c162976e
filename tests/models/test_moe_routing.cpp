#include <catch2/catch.hpp>

#include "simrun/models/moe_routing.hpp"

using namespace simrun;

namespace {
MoeSpec deepseek_v3(int64_t groups, int64_t topk_groups) {
  MoeSpec m;
  m.experts = 256;
  m.top_k = 8;
  m.groups = groups;
  m.topk_groups = topk_groups;
  return m;
}
// C(n − x, k) / C(n, k), written out.
double miss(double n, double x, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= (n - x - i) / (n - i);
  return p;
}
}  // namespace

TEST_CASE("node-limited routing: a token reaches at most topk_groups nodes", "[models][moe]") {
  // DeepSeek-V3 on 8 nodes of 32 experts: 8 groups, 4 chosen; the 8 picks among 128 experts.
  const double limited = *expected_bins_reached(deepseek_v3(8, 4), 32);
  CHECK(limited == Approx(4 * (1 - miss(128, 32, 8))));
  CHECK(limited < 4.0);
  CHECK(limited > 3.5);
  // Unrestricted: the 8 picks among all 256.
  const double free = *expected_bins_reached(deepseek_v3(0, 0), 32);
  CHECK(free == Approx(8 * (1 - miss(256, 32, 8))));
  CHECK(free / limited == Approx(1.459).margin(0.001));
  // A GPU's 4 experts: distinct ranks of the token's 8 copies.
  CHECK(*expected_bins_reached(deepseek_v3(8, 4), 4) == Approx(32 * (1 - miss(128, 4, 8))));
  // One expert per bin: every copy its own.
  CHECK(*expected_bins_reached(deepseek_v3(8, 4), 1) == Approx(8.0));
}

TEST_CASE("groups inside nodes: the chosen groups' nodes, hypergeometrically", "[models][moe]") {
  // 2 nodes of 128 experts, 4 groups each: a node is missed when none of its groups is chosen
  // (C(4,4)/C(8,4) = 1/70) or all 8 picks miss the chosen groups it holds.
  const double two_nodes = *expected_bins_reached(deepseek_v3(8, 4), 128);
  double missed = 0;
  const double c84 = 70;
  const double ways[5] = {1, 16, 36, 16, 1};  // C(4, j)·C(4, 4 − j)
  for (int j = 0; j <= 4; ++j) missed += ways[j] / c84 * miss(128, 32.0 * j, 8);
  CHECK(two_nodes == Approx(2 * (1 - missed)));
  CHECK(two_nodes <= 2.0);
  // Bins that straddle groups: no answer.
  CHECK_FALSE(expected_bins_reached(deepseek_v3(8, 4), 48).has_value());
}
