// Private to the collectives: a collective call planned as phases of flows. Each phase starts
// after `delay` and ends when all its flows have completed (a barrier); phases run in order.
#pragma once

#include <vector>

#include "simrun/sim/collectives.hpp"

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

// Link-disjoint directed Hamiltonian cycles over `members` GPUs of a full mesh (Infinity Fabric):
// the rings RCCL spreads channels over so every peer link carries traffic. Deterministic;
// searched once per size per process.
const std::vector<std::vector<int32_t>>& mesh_ring_cycles(int64_t members);

}  // namespace simrun::detail
