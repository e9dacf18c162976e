// Private to the collectives: a collective call planned as phases of flows. Each phase starts
// after `delay` and ends when all its flows have completed (a barrier); phases run in order.
#pragma once

#include <vector>

#include "simrun/sim/collectives/collectives.hpp"

namespace simrun::detail {

struct FlowPlan {
  std::vector<LinkUse> links;
  double bytes = 0;
  TimeNs latency{};
  double max_bytes_per_s = std::numeric_limits<double>::infinity();
};

struct PhasePlan {
  TimeNs delay{};
  std::vector<FlowPlan> flows;
};

struct CollectivePlan {
  std::vector<PhasePlan> phases;
};

// Dense per-link weight accumulator (coupled flows list each link once with summed weight).
class LinkWeights {
 public:
  explicit LinkWeights(size_t num_links) : m_weight(num_links, 0.0) {}
  void add(LinkId link, double weight) {
    if (m_weight[link] == 0.0) m_touched.push_back(link);
    m_weight[link] += weight;
  }
  void add_route(const Route& route, double weight) {
    for (uint32_t l : route.links) add(l, weight);
  }
  bool empty() const { return m_touched.empty(); }
  // The accumulated links, in first-touched order; resets the accumulator.
  std::vector<LinkUse> take() {
    std::vector<LinkUse> out;
    out.reserve(m_touched.size());
    for (LinkId l : m_touched) {
      out.push_back(LinkUse{l, m_weight[l]});
      m_weight[l] = 0.0;
    }
    m_touched.clear();
    return out;
  }

 private:
  std::vector<double> m_weight;
  std::vector<LinkId> m_touched;
};

struct PlanContext {
  const ClusterGraph& graph;
  CollectiveOp op;
  std::vector<int64_t> ranks;  // resolved (never empty)
  double bytes = 0;
  int64_t root = 0;
  GroupShape shape;
  TunerChoice choice;
  CollectiveModel model;
  LinkWeights* weights = nullptr;
  // Ring cycles inside a domain (successor per member position), all of one size; null = identity.
  const std::vector<std::vector<int32_t>>* cycles = nullptr;
};

CollectivePlan build_plan(const PlanContext& ctx);

// Rules the flows follow, shared with the closed forms of collective_cost.cpp:
// Bytes each link carries per payload byte (NCCL's protocol and algorithm efficiencies, as its
// tuner discounts the bus bandwidth: LL 1/0.5, LL128 128/120, tree Simple 1/0.92, NVLS
// 1/nvlsEfficiency, PAT 1/0.75).
double wire_factor(Algorithm algo, Protocol proto, const GroupShape& shape);
// Payload-rate cap of `group_channels` of the call's `channels`: each channel at most the
// faster of the intra/inter bandwidth over the maximum channel count, and the protocol's busbw
// cap shared by channel; `per_rate_busbw` converts the rate to NCCL's busBw (1 rings, 2 trees).
double channel_group_cap(Algorithm algo, Protocol proto, const GroupShape& shape, int channels,
                         int group_channels, double per_rate_busbw);
// NCCL's double binary tree over n ranks (ncclGetDtree): parent of `rank` in tree t (0 or 1),
// −1 at the root; and the tree's depth.
int64_t dtree_parent(int64_t n, int64_t rank, int t);
int64_t tree_depth(int64_t n, int t);

// Link-disjoint directed Hamiltonian cycles over `members` GPUs of a full mesh (Infinity Fabric):
// the rings RCCL spreads channels over so every peer link carries traffic. Deterministic;
// searched once per size per process.
const std::vector<std::vector<int32_t>>& mesh_ring_cycles(int64_t members);

}  // namespace simrun::detail
