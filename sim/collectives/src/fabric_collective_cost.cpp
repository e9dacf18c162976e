// Closed forms of NCCL's multi-node all-reduce, all-gather and reduce-scatter over a group that
// spans scale-up domains (collective_cost.hpp). They follow the flows collective_algorithms.cpp
// builds for the event simulation, but count link loads by class instead of walking a cluster
// graph: every domain holds the same members, so one switch uplink (or mesh link) per member
// position, and one NIC per (domain, entry), stand for all of them. The channel groups then share
// those links max-min fairly, with the flow network's solver (max_min.hpp), and the call ends
// when the last group has delivered its bytes and its pipeline latency.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "collective_plan.hpp"
#include "simrun/common/error.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/network/max_min.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun {
namespace {

// One channel group as a fluid flow: its payload, rate cap, pipeline latency and the links it
// loads (resource index, bytes per payload byte).
struct FluidFlow {
  double bytes = 0;
  double cap = std::numeric_limits<double>::infinity();
  double latency_s = 0;
  std::vector<std::pair<size_t, double>> uses;
};

// When the last flow completes: max-min fair rates (max_min.hpp), advanced from one completion
// to the next.
double fluid_finish_s(std::vector<FluidFlow> flows, const std::vector<double>& capacity) {
  double now = 0, last = 0;
  std::vector<size_t> active;
  for (size_t i = 0; i < flows.size(); ++i) {
    if (flows[i].bytes > 0) {
      active.push_back(i);
    } else {
      last = std::max(last, flows[i].latency_s);
    }
  }
  MaxMinSolver solver;
  while (!active.empty()) {
    solver.clear();
    for (const double c : capacity) solver.add_link(c);
    for (const size_t i : active) {
      solver.add_flow(flows[i].cap);
      for (const auto& [r, w] : flows[i].uses) solver.add_use(uint32_t(r), w);
    }
    const std::vector<double>& rate = solver.solve();
    double step = std::numeric_limits<double>::infinity();
    for (size_t a = 0; a < active.size(); ++a) {
      SIMRUN_ASSERT(rate[a] > 0 && std::isfinite(rate[a]), "a fluid flow got no bandwidth, or no bound");
      step = std::min(step, flows[active[a]].bytes / rate[a]);
    }
    now += step;
    std::vector<size_t> still;
    for (size_t a = 0; a < active.size(); ++a) {
      FluidFlow& f = flows[active[a]];
      f.bytes -= rate[a] * step;
      if (f.bytes <= 1e-9 * std::max(1.0, rate[a] * step)) {
        last = std::max(last, now + f.latency_s);
      } else {
        still.push_back(active[a]);
      }
    }
    active = std::move(still);
  }
  return last;
}

class FabricCall {
 public:
  FabricCall(CollectiveOp op, double bytes, const FabricGroup& g)
      : m_op(op), m_bytes(bytes), m_g(g), m_choice(CollectiveTuner::choose(op, g.shape, bytes)) {
    m_d = g.shape.nodes;
    m_ppn = g.shape.ranks_per_node;
    m_entries = int64_t(g.entry_pos.size());
    m_channels = std::max(1, m_choice.channels);
    m_wire = detail::wire_factor(m_choice.algorithm, m_choice.protocol, g.shape);
    m_intra_us = CollectiveTuner::intra_step_us(m_choice.algorithm, m_choice.protocol, g.shape);
    m_inter_us = CollectiveTuner::inter_step_us(m_choice.algorithm, m_choice.protocol, g.shape);
  }

  double seconds() const {
    switch (m_choice.algorithm) {
      case Algorithm::ring:
        return ring();
      case Algorithm::tree:
        return tree();
      case Algorithm::nvls_tree:
        return nvls_tree();
      case Algorithm::pat:
        return pat();
      case Algorithm::p2p:
        return m_op == CollectiveOp::send_recv ? send_recv() : all_to_all();
      default:
        SIMRUN_ASSERT(false,
                      std::string("no closed form for ") + to_string(m_choice.algorithm) + " across domains");
    }
    return 0;
  }

 private:
  bool same_leaf(int64_t a, int64_t b) const {
    return m_g.nodes_per_leaf <= 0 ||
           m_g.domain_node[size_t(a)] / m_g.nodes_per_leaf == m_g.domain_node[size_t(b)] / m_g.nodes_per_leaf;
  }
  // A network step's latency between the NICs of domains a and b: one leaf, or up to the spine
  // and back (two more switch hops).
  double inter_alpha_us(int64_t a, int64_t b) const {
    return m_inter_us + (same_leaf(a, b) ? 0.0 : 2.0 * m_g.switch_latency_s * 1e6);
  }
  // A NIC port as this call's algorithm loads the leaf uplinks: rings domain to domain, trees
  // and PAT at every distance (flows_per_uplink).
  double port() const {
    const Algorithm a = m_choice.algorithm;
    return a == Algorithm::tree || a == Algorithm::nvls_tree || a == Algorithm::pat ? m_g.far_port_bytes_per_s
                                                                                    : m_g.port_bytes_per_s;
  }
  double nic_capacity() const { return std::min(port(), m_g.nic_pcie_bytes_per_s); }

  // Ring: channel c enters every domain at NIC entry c mod E and walks ring c mod R of the
  // domain (R link-disjoint rings on a mesh, one on a switch), a closing PXN hop to the entry
  // GPU included; each channel group is one pipeline over every domain.
  double ring() const {
    const int64_t n = m_g.shape.ranks;
    const bool all_reduce = m_op == CollectiveOp::all_reduce;
    const double edge_fraction = (all_reduce ? 2.0 : 1.0) * double(n - 1) / double(n);
    const int64_t steps = (all_reduce ? 2 : 1) * (n - 1), inter_steps = (all_reduce ? 2 : 1) * (m_d - 1);
    const int64_t rings = m_g.mesh && m_ppn > 1 ? std::max(1, mesh_ring_count(m_ppn)) : 1;
    std::map<std::pair<int64_t, int64_t>, int> groups;
    for (int c = 0; c < m_channels; ++c) groups[{c % m_entries, c % rings}]++;
    double alpha_sum = 0;
    for (int64_t k = 0; k < m_d; ++k) alpha_sum += inter_alpha_us(k, (k + 1) % m_d);
    const double fill_us =
        double(steps - inter_steps) * m_intra_us + double(inter_steps) * (alpha_sum / double(m_d));

    // Resources: NIC entry e; then the scale-up links (the switch uplinks, or one per mesh ring).
    std::vector<double> capacity(size_t(m_entries), nic_capacity());
    const size_t scale_up = capacity.size();
    capacity.resize(scale_up + size_t(rings), m_g.scale_up_link_bytes_per_s);
    std::vector<FluidFlow> flows;
    for (const auto& [key, g] : groups) {
      FluidFlow f;
      f.bytes = m_bytes * double(g) / double(m_channels) * edge_fraction;
      f.cap = detail::channel_group_cap(Algorithm::ring, m_choice.protocol, m_g.shape, m_channels, g, 1.0);
      f.latency_s = fill_us * 1e-6;
      f.uses.push_back({size_t(key.first), m_wire});
      if (m_ppn > 1) f.uses.push_back({scale_up + size_t(key.second), m_wire});
      flows.push_back(std::move(f));
    }
    return CollectiveTuner::base_latency_us(Algorithm::ring, m_choice.protocol) * 1e-6 +
           fluid_finish_s(std::move(flows), capacity);
  }

  // Children of each domain in double binary tree t.
  std::vector<int64_t> children(int t) const {
    std::vector<int64_t> out(size_t(m_d), 0);
    for (int64_t k = 0; k < m_d; ++k)
      if (const int64_t p = detail::dtree_parent(m_d, k, t); p >= 0) out[size_t(p)]++;
    return out;
  }
  // NIC edges of domain k in tree t (to its parent and to each child), each way.
  int64_t tree_edges(int64_t k, int t, const std::vector<int64_t>& kids) const {
    return (detail::dtree_parent(m_d, k, t) >= 0 ? 1 : 0) + kids[size_t(k)];
  }
  double tree_alpha_us(int t) const {
    double alpha = m_inter_us;
    for (int64_t k = 0; k < m_d; ++k)
      if (const int64_t p = detail::dtree_parent(m_d, k, t); p >= 0)
        alpha = std::max(alpha, inter_alpha_us(k, p));
    return alpha;
  }

  // Tree: half the channels on each of the two trees over domains, entering at NIC entry c mod
  // E; inside a domain a chain from the entry GPU in communicator order, reduced up and
  // broadcast down.
  double tree() const {
    std::map<std::pair<int, int64_t>, int> groups;
    for (int c = 0; c < m_channels; ++c)
      groups[{(m_channels >= 2 && c >= m_channels / 2) ? 1 : 0, c % m_entries}]++;
    const std::vector<int64_t> kids[2] = {children(0), children(1)};
    // Resources: NIC (domain k, entry e); then per member position its switch uplink, or per
    // ordered pair of positions their mesh link.
    std::vector<double> capacity(size_t(m_d * m_entries), nic_capacity());
    const size_t scale_up = capacity.size();
    capacity.resize(scale_up + size_t(m_g.mesh ? m_ppn * m_ppn : m_ppn), m_g.scale_up_link_bytes_per_s);
    auto link = [&](int64_t from, int64_t to) {
      return scale_up + size_t(m_g.mesh ? from * m_ppn + to : from);
    };
    std::vector<FluidFlow> flows;
    for (const auto& [key, g] : groups) {
      const auto [t, entry] = key;
      FluidFlow f;
      f.bytes = m_bytes * double(g) / double(m_channels);
      f.cap = detail::channel_group_cap(Algorithm::tree, m_choice.protocol, m_g.shape, m_channels, g, 2.0);
      const double depth = m_d > 1 ? double(detail::tree_depth(m_d, t)) : 0.0;
      f.latency_s = 2.0 * (double(m_ppn - 1) * m_intra_us + depth * tree_alpha_us(t)) * 1e-6;
      for (int64_t k = 0; k < m_d; ++k)
        if (const int64_t e = tree_edges(k, t, kids[t]); e > 0)
          f.uses.push_back({size_t(k * m_entries + entry), m_wire * double(e)});
      const int64_t start = m_g.entry_pos[size_t(entry)];
      std::map<size_t, double> chain;
      for (int64_t i = 0; i + 1 < m_ppn; ++i) {
        const int64_t a = (start + i) % m_ppn, b = (start + i + 1) % m_ppn;
        chain[link(a, b)] += m_wire;  // broadcast down
        chain[link(b, a)] += m_wire;  // reduce up
      }
      for (const auto& [r, w] : chain) f.uses.push_back({r, w});
      flows.push_back(std::move(f));
    }
    return CollectiveTuner::base_latency_us(Algorithm::tree, m_choice.protocol) * 1e-6 +
           fluid_finish_s(std::move(flows), capacity);
  }

  // NVLSTree: NVLS inside each domain (nvls_link_bytes on every switch link), and for each
  // member position a double binary tree over domains on the member's own NIC, half the bytes on
  // each tree: one pipeline, one flow.
  double nvls_tree() const {
    const std::vector<int64_t> kids[2] = {children(0), children(1)};
    double rate = std::numeric_limits<double>::infinity();
    if (m_ppn > 1) {
      const NvlsLinkBytes per_byte = nvls_link_bytes(CollectiveOp::all_reduce, m_ppn);
      rate = m_g.scale_up_link_bytes_per_s / (std::max(per_byte.up, per_byte.down) * m_wire);
    }
    std::vector<int64_t> sharing(size_t(m_entries), 0);
    for (const int32_t nic : m_g.member_nic) sharing[size_t(nic)]++;
    for (int64_t k = 0; k < m_d; ++k) {
      const double edges = double(tree_edges(k, 0, kids[0]) + tree_edges(k, 1, kids[1]));
      for (const int64_t members : sharing) {
        if (members == 0 || edges == 0) continue;
        const double per_member = 0.5 / double(m_ppn) * edges;  // bytes per payload byte
        rate =
            std::min({rate, port() / (per_member * double(members)), m_g.nic_pcie_bytes_per_s / per_member});
      }
    }
    const double depth = double(std::max(detail::tree_depth(m_d, 0), detail::tree_depth(m_d, 1)));
    const double latency_us =
        CollectiveTuner::hw_latency_us(CollectiveTuner::Hw::nvlink, Algorithm::nvls_tree, m_choice.protocol) +
        2.0 * depth * std::max(tree_alpha_us(0), tree_alpha_us(1));
    return latency_us * 1e-6 + m_bytes / rate;
  }

  // PAT (one GPU per domain): log2(n) steps of doubling distance, step k moving
  // min(2^k, n − 2^k) blocks of S/n through every member's own NIC.
  double pat() const {
    const int64_t n = m_g.shape.ranks;
    const double rate = nic_capacity() / m_wire;
    double seconds =
        (CollectiveTuner::base_latency_us(Algorithm::pat, m_choice.protocol) + double(n) * 2.8) * 1e-6;
    for (int64_t dist = 1; dist < n; dist <<= 1) {
      double alpha = 0;
      for (int64_t k = 0; k < m_d; ++k) alpha = std::max(alpha, inter_alpha_us(k, (k - dist % n + n) % n));
      seconds += m_bytes / double(n) * double(std::min(dist, n - dist)) / rate + alpha / 3.5 * 1e-6;
    }
    return seconds;
  }

  // The links of one domain the point-to-point models load, as fluid resources: per NIC its port
  // (shared by the node's members) and its GPU link, each one way; per member position its
  // switch uplink and downlink, or per ordered pair of positions the mesh link.
  size_t nics() const { return m_g.entry_pos.size(); }
  size_t port_resource(size_t nic) const { return nic; }
  size_t pcie_resource(size_t nic) const { return nics() + nic; }
  std::vector<double> domain_capacity() const {
    const int64_t L = m_ppn;
    std::vector<double> capacity(nics(), port());
    capacity.resize(2 * nics(), m_g.nic_pcie_bytes_per_s);
    capacity.resize(2 * nics() + size_t(m_g.mesh ? L * L : 2 * L), m_g.scale_up_link_bytes_per_s);
    return capacity;
  }
  // The scale-up links from one member position to another: the mesh link between them, or the
  // sender's switch uplink and the receiver's downlink.
  void scale_up_hop(std::map<size_t, double>& uses, int64_t from, int64_t to, double weight) const {
    const size_t scale_up = 2 * nics();
    const int64_t L = m_ppn;
    if (m_g.mesh) {
      uses[scale_up + size_t(from * L + to)] += weight;
    } else {
      uses[scale_up + size_t(from)] += weight;
      uses[scale_up + size_t(L + to)] += weight;
    }
  }
  static FluidFlow flow_on(double bytes, double latency_s, const std::map<size_t, double>& uses) {
    FluidFlow f;
    f.bytes = bytes;
    f.latency_s = latency_s;
    for (const auto& [r, w] : uses) f.uses.push_back({r, w});
    return f;
  }

  // All-to-all as grouped send/recv: every member sends S/n to every other at once, inside its
  // domain over the scale-up links, to another domain through the NIC of the destination's rail
  // (PXN: over the scale-up link to that NIC's GPU first). Flows of one kind share their links
  // alike, so each kind is one fluid flow carrying its count on every link; past 128·127 pairs
  // the event couples them all into one flow, as here.
  double all_to_all() const {
    const int64_t L = m_ppn, n = m_g.shape.ranks;
    std::vector<int64_t> members_on(nics(), 0);
    for (const int32_t e : m_g.member_nic) members_on[size_t(e)]++;
    const std::vector<double> capacity = domain_capacity();
    const double pair = m_bytes / double(n);
    std::vector<FluidFlow> flows;
    for (int64_t p = 0; p < L; ++p) {
      if (L > 1) {  // to the other members of its domain
        FluidFlow f;
        f.bytes = pair;
        f.latency_s = m_intra_us * 1e-6;
        std::map<size_t, double> uses;
        for (int64_t q = 0; q < L; ++q)
          if (q != p) scale_up_hop(uses, p, q, m_wire);
        for (const auto& [r, w] : uses) f.uses.push_back({r, w});
        flows.push_back(std::move(f));
      }
      if (m_d == 1) continue;
      for (size_t e = 0; e < nics(); ++e) {  // to the remote members behind NIC e of their node
        const double count = double((m_d - 1) * members_on[e]);
        if (count == 0) continue;
        FluidFlow f;
        f.bytes = pair;
        f.latency_s =
            (m_inter_us +
             (m_g.nodes_per_leaf > 0 && m_d > m_g.nodes_per_leaf ? 2.0 * m_g.switch_latency_s * 1e6 : 0.0)) *
            1e-6;
        std::map<size_t, double> uses{{port_resource(e), count * m_wire}, {pcie_resource(e), count * m_wire}};
        if (int32_t(e) != m_g.member_nic[size_t(p)])  // PXN through the NIC's GPU
          scale_up_hop(uses, p, m_g.entry_pos[e], count * m_wire);
        for (const auto& [r, w] : uses) f.uses.push_back({r, w});
        flows.push_back(std::move(f));
      }
    }
    if (n * (n - 1) > 128 * 127) {  // one coupled flow
      FluidFlow all;
      all.bytes = pair;
      std::map<size_t, double> uses;
      for (const FluidFlow& f : flows) {
        all.latency_s = std::max(all.latency_s, f.latency_s);
        for (const auto& [r, w] : f.uses) uses[r] += w;
      }
      for (const auto& [r, w] : uses) all.uses.push_back({r, w});
      flows = {std::move(all)};
    }
    return CollectiveTuner::base_latency_us(Algorithm::p2p, m_choice.protocol) * 1e-6 +
           fluid_finish_s(std::move(flows), capacity);
  }

  // Send/recv around the group (nccl-tests sendrecv; a CP ring step): each member sends the whole
  // size to the next, all at once. Inside a domain over the scale-up link; from a domain's last
  // member to the next domain's first through the sender's own NIC, on over the scale-up link
  // from that rail's GPU where the receiver sits behind another rail (ClusterGraph::route's
  // default route, as the event's send_recv plan takes it). The slowest hop ends the call.
  double send_recv() const {
    const int64_t L = m_ppn;
    const double bytes = m_bytes;
    std::vector<FluidFlow> flows;
    for (int64_t p = 0; p + 1 < L; ++p) {
      std::map<size_t, double> uses;
      scale_up_hop(uses, p, p + 1, m_wire);
      flows.push_back(flow_on(bytes, m_intra_us * 1e-6, uses));
    }
    const size_t nic = size_t(m_g.member_nic[size_t(L - 1)]);
    std::map<size_t, double> uses{{port_resource(nic), m_wire}, {pcie_resource(nic), m_wire}};
    const int64_t entry = m_g.entry_pos[nic];
    if (entry != 0) scale_up_hop(uses, entry, 0, m_wire);  // into the next domain's first member
    double alpha_us = 0;
    for (int64_t k = 0; k < m_d; ++k) alpha_us = std::max(alpha_us, inter_alpha_us(k, (k + 1) % m_d));
    flows.push_back(flow_on(bytes, alpha_us * 1e-6, uses));
    return CollectiveTuner::base_latency_us(Algorithm::p2p, m_choice.protocol) * 1e-6 +
           fluid_finish_s(std::move(flows), domain_capacity());
  }

  CollectiveOp m_op;
  double m_bytes;
  const FabricGroup& m_g;
  TunerChoice m_choice;
  int64_t m_d = 1, m_ppn = 1, m_entries = 1;
  int m_channels = 1;
  double m_wire = 1, m_intra_us = 0, m_inter_us = 0;
};

}  // namespace

std::shared_ptr<const FabricGroup> fabric_group(const ClusterSpec& cluster, RankGroup group,
                                                bool all_to_all) {
  const GpuSpec& gpu = cluster.gpu;
  const int64_t domain = scale_up_domain_size(cluster), gpn = std::max<int64_t>(1, cluster.gpus_per_node);
  const int64_t nics = cluster.nics_per_node;
  const bool nvswitch = gpu.scale_up_kind == ScaleUpKind::nvswitch,
             mesh = gpu.scale_up_kind == ScaleUpKind::mesh;
  if (!(nvswitch || mesh) || nics < 1 || group.size < 2) return nullptr;
  if (nics % gpn != 0 && gpn % nics != 0) return nullptr;
  // Every domain must hold the same members: the stride divides the domain (ppn members each),
  // or is a whole number of domains (one member each).
  int64_t ppn = 1;
  if (group_inside_scale_up(cluster, group)) {
    ppn = group.size;
  } else if (group.stride < domain) {
    if (domain % group.stride != 0) return nullptr;
    ppn = std::min(domain / group.stride, group.size);
    if (group.size % ppn != 0 || ppn * group.stride != domain) return nullptr;
  } else if (group.stride % domain != 0) {
    return nullptr;
  }
  const int64_t domains = group.size / ppn;

  auto g = std::make_shared<FabricGroup>();
  g->mesh = mesh;
  // NIC entries of a domain: one per (node, rail) its members reach, rail-major over nodes
  // (entries_of in collective_algorithms.cpp), at the first member that reaches it.
  struct Nic {
    int32_t rail;
    int64_t node;
    int32_t pos;
  };
  std::vector<Nic> found;
  std::map<std::pair<int64_t, int32_t>, size_t> index;
  std::vector<std::pair<int64_t, int32_t>> first_rail(static_cast<size_t>(ppn));
  for (int64_t p = 0; p < ppn; ++p) {
    const int64_t rank = p * group.stride, node = rank / gpn;
    const std::vector<int32_t> rails = node_rails_of_gpu(rank % gpn, gpn, nics);
    first_rail[size_t(p)] = {node, rails.front()};
    for (const int32_t rail : rails)
      if (index.emplace(std::make_pair(node, rail), found.size()).second)
        found.push_back(Nic{rail, node, int32_t(p)});
  }
  std::stable_sort(found.begin(), found.end(), [](const Nic& a, const Nic& b) {
    return a.rail != b.rail ? a.rail < b.rail : a.node < b.node;
  });
  for (const Nic& nic : found) g->entry_pos.push_back(nic.pos);
  for (const auto& [node, rail] : first_rail)
    for (size_t e = 0; e < found.size(); ++e)
      if (found[e].node == node && found[e].rail == rail) g->member_nic.push_back(int32_t(e));
  for (int64_t k = 0; k < domains; ++k) g->domain_node.push_back(k * ppn * group.stride / gpn);

  // Leaves (ClusterGraph::build_fabric): rail-optimized, a rail's NICs of `radix/2` nodes share a
  // leaf; otherwise `radix/2` consecutive NIC ports do.
  const int64_t half = cluster.fabric.switch_radix / 2;
  if (half > 0 && cluster.num_nodes() * nics > half)
    g->nodes_per_leaf =
        cluster.topology == FabricTopology::rail_optimized ? half : std::max<int64_t>(1, half / nics);
  g->switch_latency_s = cluster.fabric.switch_latency_s;

  // Link rates as the event's network has them (collective_harness.cpp link_capacities).
  g->scale_up_link_bytes_per_s = scale_up_link_rate(gpu);
  const double port = cluster.fabric.port_bytes_per_s * kNetworkEfficiency;
  const double sharers = double(nic_sharers(cluster, group));
  g->port_bytes_per_s = port / std::max(sharers, flows_per_uplink(cluster, group,
                                                                  all_to_all ? UplinkTraffic::all_to_all
                                                                             : UplinkTraffic::ring));
  g->far_port_bytes_per_s =
      all_to_all ? g->port_bytes_per_s
                 : port / std::max(sharers, flows_per_uplink(cluster, group, UplinkTraffic::far));
  g->nic_pcie_bytes_per_s = gpu.pcie_bytes_per_s > 0 ? gpu.pcie_bytes_per_s : cluster.fabric.port_bytes_per_s;
  // A zero rate: leave it to the α-β forms and their checks.
  if (!(g->scale_up_link_bytes_per_s > 0) || !(g->port_bytes_per_s > 0) || !(g->nic_pcie_bytes_per_s > 0))
    return nullptr;

  // The group as NCCL's tuner sees it (CollectiveRunner::shape).
  GroupShape& s = g->shape;
  s.ranks = group.size;
  s.nodes = domains;
  s.ranks_per_node = ppn;
  s.rails = domains > 1 ? int64_t(found.size()) : 0;
  s.cc_index = compute_capability_index(gpu);
  s.nvswitch = nvswitch;
  s.nvls = nvls_usable(gpu, ppn);
  s.intra_bytes_per_s =
      g->scale_up_link_bytes_per_s * (mesh ? double(std::max(1, mesh_ring_count(ppn))) : 1.0);
  s.inter_bytes_per_s = domains > 1 ? double(s.rails) * port : 0.0;
  return g;
}

double fabric_collective_s(CollectiveOp op, double bytes, const FabricGroup& group) {
  SIMRUN_ASSERT(op == CollectiveOp::all_to_all || group.shape.nodes > 1,
                "one domain: collective_s's own model");
  SIMRUN_ASSERT(op == CollectiveOp::all_reduce || op == CollectiveOp::all_gather ||
                    op == CollectiveOp::reduce_scatter || op == CollectiveOp::all_to_all ||
                    op == CollectiveOp::send_recv,
                "fabric_collective_s times all_reduce, all_gather, reduce_scatter, all_to_all and send_recv");
  if (bytes <= 0 || group.shape.ranks <= 1) return 0;
  return FabricCall(op, bytes, group).seconds();
}

}  // namespace simrun
