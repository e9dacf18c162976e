// Where each global rank sits in the parallel layout, in Megatron-Core's default rank order
// "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py, RankGenerator): TP varies fastest, so a
// TP group is tp consecutive ranks and stays inside a node when tp <= gpus_per_node; PP varies
// slowest. Expert layers decompose the same ranks a second way (Megatron-Core's expert
// RankGenerator, order "tp-ep-dp-pp" with tp := expert_tp): within one pipeline stage, the
// local index tp + TP·(cp + CP·dp) splits into expert-TP (fastest), EP, then expert-DP. With
// expert_tp = tp an EP group is ep consecutive (cp, dp) positions of the same tp rank; with
// expert_tp = 1 it is ep consecutive ranks. The dense coordinates never change.
//
// Symmetry: ranks that differ only in their tp, cp or dp coordinate run the same program
// (same layers, same micro-batch schedule) and, on a symmetric fabric, see the same timing.
// One representative per pipeline stage (tp = cp = dp = 0) therefore stands for its class.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

// A rank's coordinates, each in [0, size).
struct RankCoord {
  int64_t tp = 0;
  int64_t cp = 0;
  int64_t dp = 0;
  int64_t pp = 0;
  auto operator<=>(const RankCoord&) const = default;
};

// A process group of `size` ranks whose members are `stride` ranks apart in Megatron's rank
// order (tp-cp-ep-dp-pp: TP fastest), e.g. TP {size tp, stride 1}, DP {size dp·cp, stride tp},
// PP neighbours {size 2, stride tp·cp·dp}.
struct RankGroup {
  int64_t size = 1;
  int64_t stride = 1;
  // The ranks from 0 whose groups of this kind run their collectives together with this one:
  // a pipeline stage (its ranks run one program in lock step); the groups are this one moved by
  // 0 .. stride − 1 and by whole size·stride blocks. 0: the group alone (PP pairs).
  int64_t block = 0;
};

// The process groups a collective can run on.
enum class GroupKind : uint8_t {
  tp,     // tensor parallel: tp consecutive ranks
  cp,     // context parallel
  dp,     // data parallel (gradient reduction); for ZeRO also parameter gathering
  dp_cp,  // dp × cp: where gradients are reduced when cp > 1 (Megatron reduces over both)
  ep,     // expert parallel (MoE all-to-all)
  pp,     // pipeline: the stages of one model replica
  edp,    // expert data parallel: ranks holding the same experts (expert gradient reduction)
  // CP under a2a+p2p (Layout::cp_a2a(), cp_ring()): the all-to-all's adjacent CP ranks, and
  // the ring over the cp_ring of them at the same place in each.
  cp_a2a,
  cp_ring,
  // EP's two levels (Layout::ep_intra(), ep_inter()): the adjacent EP ranks in one scale-up
  // domain (NVLink), and the EP ranks with the same place in each domain (InfiniBand).
  ep_intra,
  ep_inter,
};
inline constexpr int kGroupKindCount = 11;

const char* to_string(GroupKind g);
// Expert parallelism's groups: the whole EP group, or a two-level all-to-all's levels.
inline bool is_ep(GroupKind g) {
  return g == GroupKind::ep || g == GroupKind::ep_intra || g == GroupKind::ep_inter;
}

// A `g` group's shape for its links: its size and the rank distance between members (PP: a
// pair of neighbouring stages). Equal to RankLayout::group's members (tested).
RankGroup rank_group(const Layout& l, GroupKind g);

// True when every member of the group sits in one scale-up domain.
bool group_inside_scale_up(const ClusterSpec& cluster, RankGroup group);

// True when the group leaves its scale-up domain (an NVLink-bridged pair, or a PCIe card alone)
// but stays in its node: its rings cross the host's PCIe, each GPU's x16 link, as the cluster
// graph routes them.
bool group_over_host_pcie(const ClusterSpec& cluster, RankGroup group);

// GPUs per scale-up domain: a rack-scale domain (rack_scale_domain, hardware_spec.hpp) as the
// catalog gives it; a board domain capped by gpus_per_node (an H100 cluster of 4-GPU nodes has
// 4-GPU NVLink domains).
int64_t scale_up_domain_size(const ClusterSpec& cluster);

// Layout::ep_intra_level on `cluster`: the EP ranks per scale-up domain where the EP group spans
// several domains and its blocks (every stage's, every EP group's) start on a domain boundary
// with the same number of members in each; else 0 (one level).
int64_t ep_domain_level(const ClusterSpec& cluster, const Layout& layout);

class RankLayout {
 public:
  RankLayout(const Layout& layout, int64_t gpus_per_node);

  int64_t world_size() const { return m_tp * m_cp * m_dp * m_pp; }
  int64_t tp() const { return m_tp; }
  int64_t cp() const { return m_cp; }
  int64_t dp() const { return m_dp; }
  int64_t pp() const { return m_pp; }
  int64_t ep() const { return m_ep; }
  int64_t expert_tp() const { return m_etp; }
  int64_t expert_dp() const { return m_tp * m_cp * m_dp / (m_ep * m_etp); }
  int64_t gpus_per_node() const { return m_gpus_per_node; }

  // rank = tp + TP·(cp + CP·(dp + DP·pp))
  int64_t rank_of(const RankCoord& c) const { return c.tp + m_tp * (c.cp + m_cp * (c.dp + m_dp * c.pp)); }
  RankCoord coord_of(int64_t rank) const;
  int64_t node_of(int64_t rank) const { return rank / m_gpus_per_node; }
  int64_t local_gpu_of(int64_t rank) const { return rank % m_gpus_per_node; }

  // The ranks of `kind`'s group containing `rank`, in group order (member i has index i).
  std::vector<int64_t> group(GroupKind kind, int64_t rank) const;
  int64_t group_size(GroupKind kind) const;
  // Position of `rank` inside its `kind` group.
  int64_t index_in_group(GroupKind kind, int64_t rank) const;
  // A stable id for the group containing `rank`: equal for all its members, distinct otherwise.
  int64_t group_id(GroupKind kind, int64_t rank) const;
  // Distinct nodes spanned by the group containing `rank`.
  int64_t nodes_spanned(GroupKind kind, int64_t rank) const;
  // Largest number of group members sharing one node (members per node on a uniform layout).
  int64_t members_per_node(GroupKind kind, int64_t rank) const;

  // One representative rank per pipeline stage: (tp, cp, dp) = 0. Index = stage.
  std::vector<int64_t> representatives() const;
  // The representative standing for `rank` (same pipeline stage).
  int64_t representative_of(int64_t rank) const { return rank_of(RankCoord{0, 0, 0, coord_of(rank).pp}); }

 private:
  // A rank's place in the expert decomposition of its stage.
  struct ExpertCoord {
    int64_t stage_base = 0;  // first rank of the stage
    int64_t etp = 0, ep = 0, edp = 0;
    int64_t rank(int64_t etp_size, int64_t ep_size, int64_t t, int64_t e, int64_t d) const {
      return stage_base + t + etp_size * (e + ep_size * d);
    }
  };
  ExpertCoord expert_coord_of(int64_t rank) const;

  int64_t m_tp, m_cp, m_dp, m_pp, m_ep, m_etp;
  int64_t m_cp_a2a;    // Layout::cp_a2a(): a CP coordinate is a2a index + m_cp_a2a · ring index
  int64_t m_ep_intra;  // Layout::ep_intra(): an EP index is intra index + m_ep_intra · inter index
  int64_t m_gpus_per_node;
};

}  // namespace simrun
