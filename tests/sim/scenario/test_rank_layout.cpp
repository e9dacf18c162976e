// Rank placement in Megatron's order tp-cp-ep-dp-pp and the groups derived from it.
#include <catch2/catch.hpp>

#include "simrun/sim/scenario/rank_layout.hpp"

using namespace simrun;

namespace {
Layout make_layout(int64_t tp, int64_t cp, int64_t dp, int64_t pp) {
  Layout l;
  l.tp = tp;
  l.cp = cp;
  l.dp = dp;
  l.pp = pp;
  return l;
}
}  // namespace

TEST_CASE("TP varies fastest and PP slowest (Megatron tp-cp-ep-dp-pp)", "[sim][rank_layout]") {
  const RankLayout r(make_layout(8, 2, 4, 4), 8);
  CHECK(r.world_size() == 256);
  CHECK(r.rank_of({1, 0, 0, 0}) == 1);
  CHECK(r.rank_of({0, 1, 0, 0}) == 8);
  CHECK(r.rank_of({0, 0, 1, 0}) == 16);
  CHECK(r.rank_of({0, 0, 0, 1}) == 64);
  for (int64_t rank = 0; rank < r.world_size(); ++rank) CHECK(r.rank_of(r.coord_of(rank)) == rank);
}

TEST_CASE("groups: TP inside a node, DP and PP strided across nodes", "[sim][rank_layout]") {
  const RankLayout r(make_layout(8, 1, 4, 2), 8);
  CHECK(r.group(GroupKind::tp, 13) == std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(r.group(GroupKind::dp, 13) == std::vector<int64_t>{5, 13, 21, 29});
  CHECK(r.group(GroupKind::pp, 13) == std::vector<int64_t>{13, 45});
  CHECK(r.nodes_spanned(GroupKind::tp, 13) == 1);
  CHECK(r.nodes_spanned(GroupKind::dp, 13) == 4);
  CHECK(r.members_per_node(GroupKind::dp, 13) == 1);
  CHECK(r.index_in_group(GroupKind::dp, 21) == 2);
  CHECK(r.group_id(GroupKind::dp, 21) == r.group_id(GroupKind::dp, 5));
  CHECK(r.group_id(GroupKind::dp, 21) != r.group_id(GroupKind::dp, 6));
}

TEST_CASE("dp_cp groups cover both dimensions and expert groups split the ranks of a stage",
          "[sim][rank_layout]") {
  Layout l = make_layout(2, 2, 4, 2);
  l.ep = 4;
  SECTION("expert_tp = tp (Megatron-Core's default): EP over (cp, dp) positions of one tp rank") {
    l.expert_tp = 2;
    const RankLayout r(l, 8);
    CHECK(r.group(GroupKind::dp_cp, 0).size() == 8);
    CHECK(r.group(GroupKind::cp, 0) == std::vector<int64_t>{0, 2});
    CHECK(r.group(GroupKind::ep, 0) == std::vector<int64_t>{0, 2, 4, 6});
    CHECK(r.group(GroupKind::ep, 9) == std::vector<int64_t>{9, 11, 13, 15});
    CHECK(r.group(GroupKind::edp, 9) == std::vector<int64_t>{1, 9});
    CHECK(r.group(GroupKind::ep, 25) == std::vector<int64_t>{25, 27, 29, 31});  // stage 1
    CHECK(r.group_size(GroupKind::edp) == 2);
    CHECK(r.index_in_group(GroupKind::ep, 13) == 2);
    CHECK(r.group_id(GroupKind::ep, 13) == r.group_id(GroupKind::ep, 9));
    CHECK(r.group_id(GroupKind::edp, 13) == r.group_id(GroupKind::edp, 5));
  }
  SECTION("expert_tp = 1: EP over consecutive ranks, expert DP strided by ep") {
    l.expert_tp = 1;
    const RankLayout r(l, 8);
    CHECK(r.group(GroupKind::ep, 5) == std::vector<int64_t>{4, 5, 6, 7});
    CHECK(r.group(GroupKind::edp, 5) == std::vector<int64_t>{1, 5, 9, 13});
    CHECK(r.group(GroupKind::edp, 21) == std::vector<int64_t>{17, 21, 25, 29});
    CHECK(r.index_in_group(GroupKind::edp, 9) == 2);
    CHECK(r.group_id(GroupKind::edp, 9) == r.group_id(GroupKind::edp, 13));
    CHECK(r.group_id(GroupKind::edp, 9) != r.group_id(GroupKind::edp, 10));
  }
}

TEST_CASE("a2a+p2p: the all-to-all over adjacent CP ranks, the ring over the same place in each",
          "[sim][rank_layout]") {
  // TP 2, CP 8 as [2, 4] (Megatron --hierarchical-context-parallel-sizes 2 4): "every two
  // adjacent" CP ranks form the first level; CP ranks with the same index in them, the second.
  Layout l = make_layout(2, 8, 1, 1);
  l.cp_comm_type = CpCommType::a2a_p2p;
  l.cp_a2a_level = 2;
  const RankLayout r(l, 8);
  // Rank 7: tp 1, cp 3 (the second of the pair {2, 3}).
  CHECK(r.group(GroupKind::cp_a2a, 7) == std::vector<int64_t>{5, 7});
  CHECK(r.group(GroupKind::cp_ring, 7) == std::vector<int64_t>{3, 7, 11, 15});
  CHECK(r.group_size(GroupKind::cp_a2a) == 2);
  CHECK(r.group_size(GroupKind::cp_ring) == 4);
  CHECK(r.index_in_group(GroupKind::cp_a2a, 7) == 1);
  CHECK(r.index_in_group(GroupKind::cp_ring, 7) == 1);
  for (GroupKind g : {GroupKind::cp_a2a, GroupKind::cp_ring})
    for (int64_t rank = 0; rank < r.world_size(); ++rank) {
      const std::vector<int64_t> members = r.group(g, rank);
      CHECK(members[size_t(r.index_in_group(g, rank))] == rank);
      CHECK(r.group_id(g, rank) == members.front());
    }
  CHECK(r.nodes_spanned(GroupKind::cp_a2a, 7) == 1);  // on NVLink
  CHECK(r.nodes_spanned(GroupKind::cp_ring, 7) == 2);
}

TEST_CASE("rank_group's size and stride are those of the group's members", "[sim][rank_layout]") {
  Layout l = make_layout(2, 8, 2, 2);
  l.ep = 4;
  l.expert_tp = GENERATE(1, 2);
  l.cp_comm_type = CpCommType::a2a_p2p;
  l.cp_a2a_level = GENERATE(1, 2, 4);
  l.ep_intra_level = GENERATE(0, 2);
  const RankLayout r(l, 8);
  INFO("expert_tp " << l.expert_tp << ", cp_a2a_level " << l.cp_a2a_level << ", ep_intra_level "
                    << l.ep_intra_level);
  for (int k = 0; k < kGroupKindCount; ++k) {
    const auto g = static_cast<GroupKind>(k);
    const RankGroup shape = rank_group(l, g);
    for (int64_t rank = 0; rank < r.world_size(); ++rank) {
      const std::vector<int64_t> members = r.group(g, rank);
      INFO(to_string(g) << " of rank " << rank);
      CHECK(int64_t(members.size()) == (g == GroupKind::pp ? l.pp : shape.size));
      for (size_t i = 1; i < members.size(); ++i) CHECK(members[i] - members[i - 1] == shape.stride);
    }
  }
}

TEST_CASE("EP's two levels: the EP ranks of one node, and those at the same place in each node",
          "[sim][rank_layout]") {
  // DeepSeek-V3's stage: 128 ranks (dp 128), EP 64 over 8 nodes of 8.
  Layout l = make_layout(1, 1, 128, 2);
  l.ep = 64;
  ClusterSpec cluster;
  cluster.gpus_per_node = 8;
  cluster.num_gpus = 256;
  l.ep_intra_level = ep_domain_level(cluster, l);
  REQUIRE(l.ep_intra() == 8);
  REQUIRE(l.ep_inter() == 8);
  const RankLayout r(l, 8);
  CHECK(r.group(GroupKind::ep_intra, 139) == std::vector<int64_t>{136, 137, 138, 139, 140, 141, 142, 143});
  CHECK(r.group(GroupKind::ep_inter, 139) == std::vector<int64_t>{131, 139, 147, 155, 163, 171, 179, 187});
  CHECK(r.nodes_spanned(GroupKind::ep_intra, 139) == 1);
  CHECK(r.nodes_spanned(GroupKind::ep_inter, 139) == 8);
  CHECK(r.group_id(GroupKind::ep_inter, 139) == 131);
  CHECK(r.index_in_group(GroupKind::ep_inter, 139) == 1);
  // Inside one node, or over blocks that do not start on a node boundary: one level.
  l.ep = 8;
  CHECK(ep_domain_level(cluster, l) == 0);
  l.ep = 64;
  l.expert_tp = 3;
  CHECK(ep_domain_level(cluster, l) == 0);
}

TEST_CASE("one representative per pipeline stage", "[sim][rank_layout]") {
  const RankLayout r(make_layout(8, 1, 16, 4), 8);
  CHECK(r.representatives() == std::vector<int64_t>{0, 128, 256, 384});
  CHECK(r.representative_of(300) == 256);
}
