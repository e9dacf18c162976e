// The time of a step's collective or pipeline send alone; see comm_costs.hpp.
#include "comm_costs.hpp"

#include <algorithm>
#include <set>

#include "simrun/sim/collectives/collective_harness.hpp"

namespace simrun {
namespace {

// Latency terms of `op` on a ring of n: NCCL's ring steps (all-reduce: reduce-scatter then
// all-gather).
double latency_steps(CollectiveOp op, int64_t n) {
  const double nd = double(n);
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2.0 * (nd - 1.0);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      return nd - 1.0;
    case CollectiveOp::send_recv:
      return 1.0;
  }
  return 1.0;
}

int link_class_index(LinkClass c) { return c == LinkClass::scale_up ? 0 : 1; }

}  // namespace

StepCommCosts::StepCommCosts(const Scenario& sc, const RankLayout& layout, const StepSimOptions& opt,
                             const Calibration& cal)
    : m_sc(sc), m_layout(layout), m_comm(opt.comm) {
  const Layout& l = sc.layout;
  for (GroupKind g :
       {GroupKind::tp, GroupKind::cp, GroupKind::dp, GroupKind::dp_cp, GroupKind::ep, GroupKind::pp,
        GroupKind::edp, GroupKind::cp_a2a, GroupKind::cp_ring, GroupKind::ep_intra, GroupKind::ep_inter}) {
    const bool all_to_all =
        is_ep(g) || g == GroupKind::cp_a2a || (g == GroupKind::cp && l.cp_comm_type == CpCommType::a2a);
    m_link[static_cast<size_t>(g)] = all_to_all ? all_to_all_link(sc.cluster, rank_group(l, g), opt.comm)
                                                : group_link(sc.cluster, rank_group(l, g), opt.comm);
    // Where the kind's groups overfill an oversubscribed fabric's leaf uplinks (at any distance
    // for rings and trees: the tuner may pick a tree or PAT), each call runs beside every group
    // of its kind in its pipeline stage (once per layout: the count reads only the layout).
    m_stage_together[static_cast<size_t>(g)] =
        flows_per_uplink(sc.cluster, rank_group(l, g),
                         all_to_all ? UplinkTraffic::all_to_all : UplinkTraffic::far) > 1;
  }
  if (opt.timing == CollectiveTiming::nccl_model) {
    const ClusterGraphSpec spec = cluster_graph_spec(sc.cluster);
    if (const auto why = ClusterGraph::check(spec)) {
      m_warnings.push_back(
          "collectives timed with the alpha-beta model: the cluster graph cannot be built (" + *why + ")");
    } else {
      m_graph = std::make_shared<ClusterGraph>(spec);
    }
  }
  for (LinkClass c : {LinkClass::scale_up, LinkClass::scale_out}) {
    const LinkCalibration lcal = cal.link(
        sc.cluster.gpu.id, c == LinkClass::scale_up ? CalibratedLink::scale_up : CalibratedLink::scale_out);
    m_calibrated[link_class_index(c)] = lcal.alpha_s.has_value() || lcal.beta_s_per_byte.has_value();
    m_cal_links[link_class_index(c)] = lcal;
  }
}

CommCost StepCommCosts::collective(CollectiveOp op, GroupKind g, double bytes) {
  const auto key = std::make_tuple(static_cast<int>(op), static_cast<int>(g), bytes);
  const auto it = m_cache.find(key);
  if (it != m_cache.end()) return it->second;
  const int64_t n = m_layout.group_size(g);
  const LinkCost lc = m_link[static_cast<size_t>(g)];
  const int port = link_class_index(lc.link_class);
  CommCost cost;
  if (m_graph && n > 1 && !m_calibrated[port]) {
    const RankGroup kind = rank_group(m_sc.layout, g);
    cost = nccl_model(op,
                      m_stage_together[static_cast<size_t>(g)]
                          ? groups_of_block(g, kind)
                          : with_nic_twins(kind, [&](int64_t o) { return m_layout.group(g, o); }),
                      bytes, port);
  } else
    cost = alpha_beta(op, n, lc, bytes);
  m_cache.emplace(key, cost);
  return cost;
}

CommCost StepCommCosts::pipeline_send(double bytes, PairPlacement placement) {
  const bool same_domain = placement == PairPlacement::same_domain;
  const auto key = std::make_tuple(-1, same_domain ? 1 : 0, bytes);
  const auto it = m_cache.find(key);
  if (it != m_cache.end()) return it->second;
  const int64_t domain = scale_up_domain_size(m_sc.cluster);
  const int64_t stage_size = rank_group(m_sc.layout, GroupKind::pp).stride;
  const LinkCost lc = group_link(m_sc.cluster, pipeline_pair(m_sc.cluster, stage_size, placement), m_comm);
  const int port = link_class_index(lc.link_class);
  CommCost cost;
  if (m_graph && !m_calibrated[port] && m_sc.cluster.num_gpus > domain - (same_domain ? domain : 0))
    cost = nccl_model(CollectiveOp::send_recv,
                      same_domain ? std::vector<std::vector<int64_t>>{{0, 1}}
                                  : with_nic_twins(rank_group(m_sc.layout, GroupKind::pp),
                                                   [&](int64_t o) {
                                                     return std::vector<int64_t>{o, domain + o};
                                                   }),
                      bytes, port);
  else
    cost = alpha_beta(CollectiveOp::send_recv, 2, lc, bytes);
  m_cache.emplace(key, cost);
  return cost;
}

// α-β time of a collective on an n-member group (analytic formulas, calibration α/β).
CommCost StepCommCosts::alpha_beta(CollectiveOp op, int64_t n, LinkCost lc, double bytes) const {
  const LinkCalibration c = m_cal_links[link_class_index(lc.link_class)];
  if (c.alpha_s) lc.alpha_s = *c.alpha_s;
  if (c.beta_s_per_byte) lc.bytes_per_s = 1.0 / *c.beta_s_per_byte;
  CommCost cost;
  cost.port = link_class_index(lc.link_class);
  if (n <= 1) return cost;
  cost.bw_s = busbw_factor(op, n) * bytes / lc.bytes_per_s;  // a ring's bandwidth-bound share
  cost.alpha_s = latency_steps(op, n) * lc.alpha_s;
  return cost;
}

// The NCCL model's time of `op` on `groups` at once on the cluster graph (a group and its twins
// on the same nodes, where they share its NICs: nic_sharers; or every group of its stage), until
// the slowest ends: the one rank the step simulates stands for them all. The latency part is the
// time of a 1-byte call, the rest is bandwidth-bound.
CommCost StepCommCosts::nccl_model(CollectiveOp op, const std::vector<std::vector<int64_t>>& groups,
                                   double bytes, int port) const {
  auto run = [&](double b) {
    std::vector<CollectiveRequest> requests;
    for (const std::vector<int64_t>& ranks : groups) {
      CollectiveRequest& req = requests.emplace_back();
      req.op = op;
      req.ranks = ranks;
      req.bytes = b;
    }
    return collective_among_s(m_graph, requests);
  };
  CommCost cost;
  cost.port = port;
  const double latency = run(1.0);
  cost.alpha_s = latency;
  cost.bw_s = std::max(0.0, run(bytes) - latency);
  return cost;
}

// The group at offset 0 (`group_at(0)`) and, where groups of its kind share a NIC
// (nic_sharers > 1), its twins at offsets 1 .. min(stride, gpus_per_node) − 1 on the same
// nodes, which run beside it in the step.
template <class GroupAt>
std::vector<std::vector<int64_t>> StepCommCosts::with_nic_twins(RankGroup kind, GroupAt group_at) const {
  std::vector<std::vector<int64_t>> groups{group_at(0)};
  if (nic_sharers(m_sc.cluster, kind) > 1)
    for (int64_t o = 1; o < std::min(kind.stride, m_sc.cluster.gpus_per_node); ++o)
      groups.push_back(group_at(o));
  return groups;
}

// Every group of kind `g` among the ranks of `kind.block` (its pipeline stage): they run the same
// collective at once.
std::vector<std::vector<int64_t>> StepCommCosts::groups_of_block(GroupKind g, RankGroup kind) const {
  std::vector<std::vector<int64_t>> groups;
  std::set<int64_t> seen;
  for (int64_t r = 0; r < std::min(kind.block, m_layout.world_size()); ++r)
    if (seen.insert(m_layout.group_id(g, r)).second) groups.push_back(m_layout.group(g, r));
  return groups;
}

}  // namespace simrun
