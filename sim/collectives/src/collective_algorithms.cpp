// How each collective algorithm becomes flows (see collectives.hpp for the two decompositions).
//
// Rings follow NCCL's multi-node rings: the group is split by scale-up domain (an HGX node or an
// NVL72 rack); channel c enters every domain at the GPU behind NIC entry c (rails interleaved over
// the domain's nodes), walks the domain's GPUs over NVLink, and leaves for the next domain on the
// same rail — through the entry GPU's NIC over NVLink (PXN), so rails stay rail-local. Channels
// whose rings use the same links form one channel group (one coupled flow). Trees are NCCL's
// double binary tree over domains (ncclGetDtree: tree 1 mirrors tree 0 for an even count, shifts
// it for an odd one) with a chain through each domain's GPUs; half the channels use each tree.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <random>

#include "collective_plan.hpp"
#include "simrun/common/error.hpp"

namespace simrun::detail {

namespace {

struct Domain {
  int64_t id = 0;
  std::vector<int64_t> members;  // global GPU ids, in communicator order
};

struct Entry {
  size_t pos = 0;  // position in Domain::members
  int32_t rail = 0;
};

struct Edge {
  int64_t src = 0, dst = 0;
  int32_t rail = -1;
};

std::vector<Domain> domains_of(const ClusterGraph& g, const std::vector<int64_t>& ranks) {
  std::vector<Domain> out;
  std::map<int64_t, size_t> index;
  for (int64_t r : ranks) {
    const int64_t d = g.domain_of(r);
    auto [it, fresh] = index.emplace(d, out.size());
    if (fresh) out.push_back(Domain{d, {}});
    out[it->second].members.push_back(r);
  }
  return out;
}

// The (node, rail) NIC entries of a domain, one per NIC, interleaved rail-major over nodes.
std::vector<Entry> entries_of(const ClusterGraph& g, const Domain& d) {
  struct Key {
    int32_t rail;
    int64_t node;
    size_t pos;
  };
  std::vector<Key> keys;
  std::map<std::pair<int64_t, int32_t>, bool> seen;
  for (size_t i = 0; i < d.members.size(); ++i) {
    const int64_t node = g.node_of(d.members[i]);
    for (int32_t rail : g.rails_of(g.local_index(d.members[i]))) {
      if (seen.emplace(std::make_pair(node, rail), true).second) keys.push_back(Key{rail, node, i});
    }
  }
  std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return a.rail != b.rail ? a.rail < b.rail : a.node < b.node;
  });
  std::vector<Entry> out;
  for (const Key& k : keys) out.push_back(Entry{k.pos, k.rail});
  if (out.empty()) out.push_back(Entry{0, 0});
  return out;
}

std::vector<int64_t> rotated(const std::vector<int64_t>& v, size_t start) {
  std::vector<int64_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[(start + i) % v.size()];
  return out;
}

// NCCL's binary tree over ranks 0..n-1 (ncclGetBtree, src/graph/trees.cc): returns parent (-1 root).
int64_t btree_parent(int64_t n, int64_t rank) {
  if (rank == 0) return -1;
  int64_t bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  int64_t up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return up;
}

}  // namespace

// Double binary tree: parent of `rank` in tree t (0 or 1).
int64_t dtree_parent(int64_t n, int64_t rank, int t) {
  if (t == 0 || n <= 1) return btree_parent(n, rank);
  if (n % 2 == 1) {  // shift by one
    const int64_t s = (rank - 1 + n) % n;
    const int64_t p = btree_parent(n, s);
    return p < 0 ? -1 : (p + 1) % n;
  }
  const int64_t s = n - 1 - rank;  // mirror
  const int64_t p = btree_parent(n, s);
  return p < 0 ? -1 : n - 1 - p;
}

int64_t tree_depth(int64_t n, int t) {
  int64_t depth = 0;
  for (int64_t r = 0; r < n; ++r) {
    int64_t d = 0;
    for (int64_t x = r; dtree_parent(n, x, t) >= 0; x = dtree_parent(n, x, t)) {
      ++d;
      SIMRUN_ASSERT(d <= n, "double binary tree has a cycle");
    }
    depth = std::max(depth, d);
  }
  return depth;
}

double wire_factor(Algorithm algo, Protocol proto, const GroupShape& shape) {
  switch (algo) {
    case Algorithm::tree:
      if (proto == Protocol::ll) return 3.8;
      if (proto == Protocol::ll128) return shape.nodes == 1 ? 9.0 / 7.0 : 128.0 / 120.0;
      return 1.0 / 0.92;
    case Algorithm::nvls:
    case Algorithm::nvls_tree:
      return 1.0 / CollectiveTuner::nvls_efficiency(shape);
    case Algorithm::pat:
      return 1.0 / 0.75;
    default:
      return 1.0 / CollectiveTuner::protocol_efficiency(proto);
  }
}

double channel_group_cap(Algorithm algo, Protocol proto, const GroupShape& shape, int channels,
                         int group_channels, double per_rate_busbw) {
  double channel_cap = std::max(shape.intra_bytes_per_s, shape.inter_bytes_per_s) /
                       double(CollectiveTuner::max_channels(shape));
  if (channel_cap <= 0) channel_cap = std::numeric_limits<double>::infinity();
  const double share = double(group_channels) / double(channels);
  const double proto_cap = CollectiveTuner::protocol_busbw_cap(algo, proto, shape, channels);
  return std::min(double(group_channels) * channel_cap, proto_cap * share) / per_rate_busbw;
}

namespace {

class Planner {
 public:
  explicit Planner(const PlanContext& ctx)
      : m_ctx(ctx),
        m_g(ctx.graph),
        m_shape(ctx.shape),
        m_algo(ctx.choice.algorithm),
        m_proto(ctx.choice.protocol),
        m_channels(std::max(1, ctx.choice.channels)),
        m_domains(domains_of(ctx.graph, ctx.ranks)),
        m_n(int64_t(ctx.ranks.size())) {
    const bool no_lat = ctx.model.latency == LatencyModel::none;
    m_intra_us = no_lat ? 0.0 : CollectiveTuner::intra_step_us(m_algo, m_proto, m_shape);
    m_inter_us = no_lat ? 0.0 : CollectiveTuner::inter_step_us(m_algo, m_proto, m_shape);
    m_switch_s = no_lat ? 0.0 : m_g.spec().fabric.switch_latency_s;
    m_base = no_lat ? TimeNs{} : us(CollectiveTuner::base_latency_us(m_algo, m_proto));
    if (m_domains.size() > 1)
      for (const Domain& d : m_domains) m_entries.push_back(entries_of(m_g, d));
  }

  CollectivePlan plan() {
    switch (m_algo) {
      case Algorithm::ring:
        return ring();
      case Algorithm::tree:
        return tree();
      case Algorithm::nvls:
        return nvls();
      case Algorithm::nvls_tree:
        return nvls_tree();
      case Algorithm::pat:
        return pat();
      case Algorithm::hierarchical:
        return hierarchical();
      case Algorithm::p2p:
        return m_ctx.op == CollectiveOp::all_to_all ? all_to_all() : send_recv();
      default:
        SIMRUN_ASSERT(false, std::string("no flow plan for ") + to_string(m_algo));
    }
    return {};
  }

 private:
  static TimeNs us(double v) { return TimeNs::from_seconds(v * 1e-6); }

  Route route(const Edge& e) const {
    RouteOptions o;
    o.rail = e.rail;
    return m_g.route(e.src, e.dst, o);
  }
  // A transfer from `src` to `dst` spread evenly over `rails` (NCCL gives a GPU's channels every
  // NIC near it, ncclTopoCompute's per-channel NIC choice; with one NIC a GPU this is its route on
  // that rail): `weight` per byte added to `m_ctx.weights`, one share a rail. Returns the largest α.
  double add_over_rails(int64_t src, int64_t dst, const std::vector<int32_t>& rails, double weight) {
    if (rails.empty()) {
      const Route r = route(Edge{src, dst, -1});
      m_ctx.weights->add_route(r, weight);
      return alpha_us(r);
    }
    double alpha = 0;
    for (const int32_t rail : rails) {
      const Route r = route(Edge{src, dst, rail});
      m_ctx.weights->add_route(r, weight / double(rails.size()));
      alpha = std::max(alpha, alpha_us(r));
    }
    return alpha;
  }
  std::vector<int32_t> rails_of(int64_t gpu) const { return m_g.rails_of(m_g.local_index(gpu)); }

  double alpha_us(const Route& r) const {
    if (!r.uses_fabric) return m_intra_us;
    return m_inter_us + double(std::max(0, r.switch_hops - 1)) * m_switch_s * 1e6;
  }
  double wire_factor() const { return detail::wire_factor(m_algo, m_proto, m_shape); }
  // Payload-rate cap of a channel group of `g` channels; `per_rate_busbw` converts the flow's
  // rate into NCCL's busBw (1 for rings, 2 for trees, whose algbw NCCL takes as busBw/2).
  double group_cap(int g, double per_rate_busbw) const {
    return channel_group_cap(m_algo, m_proto, m_shape, m_channels, g, per_rate_busbw);
  }

  // The cycle (successor of each member position) a ring channel follows inside a domain of
  // `size` members: the identity ring on switches, one of the link-disjoint mesh rings on a mesh.
  size_t next_in_cycle(size_t cycle, size_t pos, size_t size) const {
    if (m_ctx.cycles && !m_ctx.cycles->empty() && m_ctx.cycles->front().size() == size)
      return size_t((*m_ctx.cycles)[cycle % m_ctx.cycles->size()][pos]);
    return (pos + 1) % size;
  }
  size_t num_cycles() const { return m_ctx.cycles && !m_ctx.cycles->empty() ? m_ctx.cycles->size() : 1; }

  std::vector<int64_t> cycle_order(const std::vector<int64_t>& members, size_t start, size_t cycle) const {
    std::vector<int64_t> out;
    size_t pos = start;
    for (size_t i = 0; i < members.size(); ++i) {
      out.push_back(members[pos]);
      pos = next_in_cycle(cycle, pos, members.size());
    }
    return out;
  }

  // Ring order for one channel group: every domain entered at the group's NIC entry, walked along
  // the group's cycle, left (PXN) towards the next domain's entry on that entry's rail.
  std::vector<Edge> ring_edges(size_t entry, size_t cycle) const {
    std::vector<Edge> edges;
    if (m_domains.size() == 1) {
      const auto o = cycle_order(m_domains[0].members, 0, cycle);
      for (size_t i = 0; i < o.size(); ++i) edges.push_back(Edge{o[i], o[(i + 1) % o.size()], -1});
      return edges;
    }
    std::vector<std::vector<int64_t>> orders;
    std::vector<int32_t> rails;
    for (size_t k = 0; k < m_domains.size(); ++k) {
      const Entry& e = m_entries[k][entry % m_entries[k].size()];
      orders.push_back(cycle_order(m_domains[k].members, e.pos, cycle));
      rails.push_back(e.rail);
    }
    for (size_t k = 0; k < orders.size(); ++k) {
      const auto& o = orders[k];
      for (size_t i = 0; i + 1 < o.size(); ++i) edges.push_back(Edge{o[i], o[i + 1], -1});
      const size_t next = (k + 1) % orders.size();
      edges.push_back(Edge{o.back(), orders[next].front(), rails[next]});
    }
    return edges;
  }

  // Channel groups: channels whose rings use the same links, keyed by (entry, cycle): channel c
  // enters at entry c mod E and follows cycle c mod R.
  std::vector<std::pair<std::pair<size_t, size_t>, int>> ring_groups() const {
    std::map<std::pair<size_t, size_t>, int> count;
    const size_t entries = m_domains.size() > 1 ? m_entries[0].size() : 1;
    for (int c = 0; c < m_channels; ++c) count[{size_t(c) % entries, size_t(c) % num_cycles()}]++;
    return {count.begin(), count.end()};
  }

  // Bytes every ring edge carries, per payload byte of the whole call, and pipeline steps.
  void ring_shape(double* edge_fraction, int64_t* steps, int64_t* inter_steps) const {
    const int64_t n = m_n, d = int64_t(m_domains.size());
    switch (m_ctx.op) {
      case CollectiveOp::all_reduce:
        *edge_fraction = 2.0 * double(n - 1) / double(n);
        *steps = 2 * (n - 1);
        *inter_steps = d > 1 ? 2 * (d - 1) : 0;
        return;
      case CollectiveOp::all_gather:
      case CollectiveOp::reduce_scatter:
        *edge_fraction = double(n - 1) / double(n);
        *steps = n - 1;
        *inter_steps = d > 1 ? d - 1 : 0;
        return;
      default:  // broadcast, reduce: a pipelined chain, every edge carries the whole buffer
        *edge_fraction = 1.0;
        *steps = n - 1;
        *inter_steps = d > 1 ? d - 1 : 0;
        return;
    }
  }

  CollectivePlan ring() {
    CollectivePlan plan;
    const auto groups = ring_groups();
    double edge_fraction;
    int64_t steps, inter_steps;
    ring_shape(&edge_fraction, &steps, &inter_steps);
    const bool chain = m_ctx.op == CollectiveOp::broadcast || m_ctx.op == CollectiveOp::reduce;
    const bool per_step = m_ctx.model.decomposition == Decomposition::per_step && !chain && m_n > 1;
    const double wire = wire_factor();
    if (per_step)
      plan.phases.resize(size_t(steps));
    else
      plan.phases.resize(1);
    plan.phases[0].delay = m_base;
    for (const auto& [group, g] : groups) {
      const double group_bytes = m_ctx.bytes * double(g) / double(m_channels);
      std::vector<Edge> edges = ring_edges(group.first, group.second);
      if (chain) edges = chain_edges(edges);
      const double cap = group_cap(g, 1.0);
      if (per_step) {
        for (const Edge& e : edges) {
          const Route r = route(e);
          FlowPlan f;
          for (uint32_t l : r.links) f.links.push_back(LinkUse{l, wire});
          f.bytes = group_bytes / double(m_n);
          f.latency = us(alpha_us(r));
          f.max_bytes_per_s = cap;
          for (auto& ph : plan.phases) ph.flows.push_back(f);
        }
        continue;
      }
      double alpha_inter_sum = 0, alpha_chain = 0;
      int64_t inter_edges = 0;
      for (const Edge& e : edges) {
        const Route r = route(e);
        m_ctx.weights->add_route(r, wire);
        const double a = alpha_us(r);
        alpha_chain += a;
        if (r.uses_fabric) {
          alpha_inter_sum += a;
          ++inter_edges;
        }
      }
      const double alpha_inter = inter_edges > 0 ? alpha_inter_sum / double(inter_edges) : m_inter_us;
      double fill_us =
          chain ? alpha_chain : double(steps - inter_steps) * m_intra_us + double(inter_steps) * alpha_inter;
      FlowPlan f;
      f.links = m_ctx.weights->take();
      f.bytes = group_bytes * edge_fraction;
      f.latency = us(fill_us);
      f.max_bytes_per_s = cap;
      plan.phases[0].flows.push_back(std::move(f));
    }
    return plan;
  }

  // Broadcast: the ring opened at the root; reduce: the same chain reversed (towards the root).
  std::vector<Edge> chain_edges(const std::vector<Edge>& ring) const {
    const int64_t root = m_ctx.ranks[size_t(m_ctx.root)];
    size_t start = 0;
    for (size_t i = 0; i < ring.size(); ++i)
      if (ring[i].src == root) start = i;
    std::vector<Edge> out;
    for (size_t i = 0; i + 1 < ring.size(); ++i) {
      Edge e = ring[(start + i) % ring.size()];
      if (m_ctx.op == CollectiveOp::reduce) std::swap(e.src, e.dst);
      out.push_back(e);
    }
    return out;
  }

  CollectivePlan tree() {
    CollectivePlan plan;
    plan.phases.resize(1);
    plan.phases[0].delay = m_base;
    const int64_t d = int64_t(m_domains.size());
    const size_t entries = d > 1 ? m_entries[0].size() : 1;
    std::map<std::pair<int, size_t>, int> groups;
    for (int c = 0; c < m_channels; ++c) {
      const int t = (m_channels >= 2 && c >= m_channels / 2) ? 1 : 0;
      groups[{t, size_t(c) % entries}]++;
    }
    const double wire = wire_factor();
    int64_t ppn = 0;
    for (const Domain& dom : m_domains) ppn = std::max<int64_t>(ppn, int64_t(dom.members.size()));
    for (const auto& [key, g] : groups) {
      const auto [t, entry] = key;
      std::vector<int64_t> heads(static_cast<size_t>(d), 0);
      std::vector<int32_t> rails(static_cast<size_t>(d), -1);
      for (int64_t k = 0; k < d; ++k) {
        const Domain& dom = m_domains[size_t(k)];
        size_t pos = 0;
        if (d > 1) {
          const Entry& e = m_entries[size_t(k)][entry % m_entries[size_t(k)].size()];
          pos = e.pos;
          rails[size_t(k)] = e.rail;
        }
        const auto chain = rotated(dom.members, pos);
        heads[size_t(k)] = chain.front();
        for (size_t i = 0; i + 1 < chain.size(); ++i) {
          m_ctx.weights->add_route(route(Edge{chain[i], chain[i + 1], -1}), wire);  // broadcast down
          m_ctx.weights->add_route(route(Edge{chain[i + 1], chain[i], -1}), wire);  // reduce up
        }
      }
      double alpha_inter = m_inter_us;
      for (int64_t k = 0; k < d; ++k) {
        const int64_t p = dtree_parent(d, k, t);
        if (p < 0) continue;
        const Route up = route(Edge{heads[size_t(k)], heads[size_t(p)], rails[size_t(p)]});
        const Route down = route(Edge{heads[size_t(p)], heads[size_t(k)], rails[size_t(k)]});
        m_ctx.weights->add_route(up, wire);
        m_ctx.weights->add_route(down, wire);
        alpha_inter = std::max(alpha_inter, alpha_us(up));
      }
      const double depth = d > 1 ? double(tree_depth(d, t)) : 0.0;
      FlowPlan f;
      f.links = m_ctx.weights->take();
      f.bytes = m_ctx.bytes * double(g) / double(m_channels);
      f.latency = us(2.0 * (double(ppn - 1) * m_intra_us + depth * alpha_inter));
      f.max_bytes_per_s = group_cap(g, 2.0);
      if (!f.links.empty()) plan.phases[0].flows.push_back(std::move(f));
    }
    return plan;
  }

  // NVLink SHARP inside one domain: multimem loads reduce in the switch, multimem stores multicast
  // (bytes per GPU link: nvls_link_bytes).
  void add_nvls_links(const std::vector<int64_t>& members, double up_weight, double down_weight) {
    const double wire = wire_factor();
    for (int64_t gpu : members) {
      const uint32_t up = m_g.switch_uplink(gpu);
      SIMRUN_ASSERT(up != UINT32_MAX, "NVLS needs an NVSwitch domain");
      m_ctx.weights->add(up, up_weight * wire);
      m_ctx.weights->add(up + 1, down_weight * wire);
    }
  }

  CollectivePlan nvls() {
    CollectivePlan plan;
    plan.phases.resize(1);
    const auto& members = m_domains[0].members;
    const NvlsLinkBytes per_byte = nvls_link_bytes(m_ctx.op, int64_t(members.size()));
    if (members.size() > 1) add_nvls_links(members, per_byte.up, per_byte.down);
    FlowPlan f;
    f.links = m_ctx.weights->take();
    f.bytes = m_ctx.bytes;
    f.latency =
        m_ctx.model.latency == LatencyModel::none
            ? TimeNs{}
            : us(CollectiveTuner::hw_latency_us(CollectiveTuner::Hw::nvlink, Algorithm::nvls, m_proto));
    plan.phases[0].flows.push_back(std::move(f));
    return plan;
  }

  // NVLS reduce-scatter inside each domain, a double binary tree across domains per local shard
  // (GPU at position l of every domain, on its own rail), NVLS all-gather back: one pipeline.
  CollectivePlan nvls_tree() {
    CollectivePlan plan;
    plan.phases.resize(1);
    const int64_t d = int64_t(m_domains.size());
    size_t ppn = m_domains[0].members.size();
    for (const Domain& dom : m_domains) ppn = std::min(ppn, dom.members.size());
    for (const Domain& dom : m_domains) {
      const NvlsLinkBytes per_byte = nvls_link_bytes(CollectiveOp::all_reduce, int64_t(dom.members.size()));
      if (dom.members.size() > 1) add_nvls_links(dom.members, per_byte.up, per_byte.down);
    }
    double alpha_inter = m_inter_us;
    for (size_t l = 0; l < ppn; ++l) {
      for (int t = 0; t < 2; ++t) {
        for (int64_t k = 0; k < d; ++k) {
          const int64_t par = dtree_parent(d, k, t);
          if (par < 0) continue;
          const int64_t a = m_domains[size_t(k)].members[l], b = m_domains[size_t(par)].members[l];
          const std::vector<int32_t> rails = rails_of(a);
          alpha_inter = std::max(alpha_inter, add_over_rails(a, b, rails, 0.5 / double(ppn)));
          add_over_rails(b, a, rails, 0.5 / double(ppn));
        }
      }
    }
    FlowPlan f;
    f.links = m_ctx.weights->take();
    f.bytes = m_ctx.bytes;
    const double depth = double(std::max(tree_depth(d, 0), tree_depth(d, 1)));
    f.latency =
        m_ctx.model.latency == LatencyModel::none
            ? TimeNs{}
            : us(CollectiveTuner::hw_latency_us(CollectiveTuner::Hw::nvlink, Algorithm::nvls_tree, m_proto) +
                 2.0 * depth * alpha_inter);
    plan.phases[0].flows.push_back(std::move(f));
    return plan;
  }

  // PAT (NCCL 2.23+) for one GPU per node: log2(n) Bruck-style steps of doubling distance; step k
  // moves min(2^k, n - 2^k) blocks of S/n. reduce_scatter runs the steps in reverse.
  CollectivePlan pat() {
    CollectivePlan plan;
    const int64_t n = m_n;
    std::vector<int64_t> dist;
    for (int64_t s = 1; s < n; s <<= 1) dist.push_back(s);
    if (m_ctx.op == CollectiveOp::reduce_scatter) std::reverse(dist.begin(), dist.end());
    const bool no_lat = m_ctx.model.latency == LatencyModel::none;
    const double wire = wire_factor();
    for (size_t k = 0; k < dist.size(); ++k) {
      PhasePlan ph;
      if (k == 0) ph.delay = no_lat ? TimeNs{} : m_base + us(double(n) * 2.8);
      double alpha = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t src = m_ctx.ranks[size_t(i)], dst = m_ctx.ranks[size_t((i - dist[k] % n + n) % n)];
        alpha = std::max(alpha, add_over_rails(src, dst, rails_of(src), wire));
      }
      FlowPlan f;
      f.links = m_ctx.weights->take();
      f.bytes = m_ctx.bytes / double(n) * double(std::min(dist[k], n - dist[k]));
      f.latency = no_lat ? TimeNs{} : us(alpha / 3.5);
      ph.flows.push_back(std::move(f));
      plan.phases.push_back(std::move(ph));
    }
    return plan;
  }

  // One coupled ring flow over `rings` (each a list of GPUs in ring order, its edges spread over
  // `rails`: none inside a domain).
  FlowPlan ring_flow(const std::vector<std::vector<int64_t>>& rings, double edge_bytes, int64_t steps,
                     const std::vector<int32_t>& rails) {
    double alpha = 0;
    for (const auto& ring : rings)
      for (size_t i = 0; i < ring.size(); ++i)
        alpha = std::max(alpha, add_over_rails(ring[i], ring[(i + 1) % ring.size()], rails, 1.0));
    FlowPlan f;
    f.links = m_ctx.weights->take();
    f.bytes = edge_bytes;
    f.latency = us(double(steps) * alpha);
    return f;
  }

  // simrun's hierarchical form (Horovod/2D style, phases in sequence): all_reduce = intra-domain
  // reduce-scatter, inter-domain all-reduce of each 1/p shard among same-position GPUs on their
  // own rail, intra-domain all-gather. all_gather / reduce_scatter use the two halves.
  CollectivePlan hierarchical() {
    CollectivePlan plan;
    const double s = m_ctx.bytes;
    size_t ppn = m_domains[0].members.size();
    for (const Domain& dom : m_domains) ppn = std::min(ppn, dom.members.size());
    const double p = double(ppn), d = double(m_domains.size());
    std::vector<std::vector<int64_t>> intra;
    for (const Domain& dom : m_domains) intra.push_back(dom.members);
    auto intra_phase = [&](double fraction) {
      PhasePlan ph;
      ph.flows.push_back(ring_flow(intra, s * fraction, int64_t(ppn) - 1, {}));
      return ph;
    };
    auto inter_phase = [&](double fraction, int64_t steps) {
      PhasePlan ph;
      for (size_t l = 0; l < ppn; ++l) {
        std::vector<int64_t> ring;
        for (const Domain& dom : m_domains) ring.push_back(dom.members[l]);
        ph.flows.push_back(ring_flow({ring}, s / p * fraction, steps, rails_of(ring.front())));
      }
      return ph;
    };
    switch (m_ctx.op) {
      case CollectiveOp::all_reduce:
        plan.phases.push_back(intra_phase((p - 1) / p));
        plan.phases.push_back(inter_phase(2 * (d - 1) / d, 2 * (int64_t(d) - 1)));
        plan.phases.push_back(intra_phase((p - 1) / p));
        break;
      case CollectiveOp::all_gather:
        plan.phases.push_back(inter_phase((d - 1) / d, int64_t(d) - 1));
        plan.phases.push_back(intra_phase((p - 1) / p));
        break;
      default:
        plan.phases.push_back(intra_phase((p - 1) / p));
        plan.phases.push_back(inter_phase((d - 1) / d, int64_t(d) - 1));
        break;
    }
    plan.phases.front().delay = m_base;
    return plan;
  }

  // all_to_all: every rank sends S/n to every other (NCCL: grouped send/recv, PXN to the
  // destination's rail). Independent flows up to kIndependentPairs pairs, then one coupled flow.
  CollectivePlan all_to_all() {
    CollectivePlan plan;
    plan.phases.resize(1);
    plan.phases[0].delay = m_base;
    const int64_t n = m_n;
    const double wire = wire_factor();
    const double pair_bytes = m_ctx.bytes / double(n);
    constexpr int64_t kIndependentPairs = 128 * 127;
    const bool coupled = n * (n - 1) > kIndependentPairs;
    double alpha = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (i == j) continue;
        const int64_t src = m_ctx.ranks[size_t(i)], dst = m_ctx.ranks[size_t(j)];
        if (src == dst) continue;
        const double a = add_over_rails(src, dst, rails_of(dst), wire);
        if (coupled) {
          alpha = std::max(alpha, a);
          continue;
        }
        FlowPlan f;
        f.links = m_ctx.weights->take();
        f.bytes = pair_bytes;
        f.latency = us(a);
        plan.phases[0].flows.push_back(std::move(f));
      }
    }
    if (coupled && !m_ctx.weights->empty()) {
      FlowPlan f;
      f.links = m_ctx.weights->take();
      f.bytes = pair_bytes;
      f.latency = us(alpha);
      plan.phases[0].flows.push_back(std::move(f));
    }
    return plan;
  }

  // nccl-tests sendrecv: rank i sends S to i+1 and receives S from i-1, all at once.
  CollectivePlan send_recv() {
    CollectivePlan plan;
    plan.phases.resize(1);
    plan.phases[0].delay = m_base;
    const double wire = wire_factor();
    for (int64_t i = 0; i < m_n; ++i) {
      const int64_t src = m_ctx.ranks[size_t(i)], dst = m_ctx.ranks[size_t((i + 1) % m_n)];
      if (src == dst) continue;
      const double alpha = add_over_rails(src, dst, rails_of(src), wire);
      FlowPlan f;
      f.links = m_ctx.weights->take();
      f.bytes = m_ctx.bytes;
      f.latency = us(alpha);
      plan.phases[0].flows.push_back(std::move(f));
    }
    return plan;
  }

  const PlanContext& m_ctx;
  const ClusterGraph& m_g;
  const GroupShape& m_shape;
  Algorithm m_algo;
  Protocol m_proto;
  int m_channels;
  std::vector<Domain> m_domains;
  std::vector<std::vector<Entry>> m_entries;
  int64_t m_n;
  double m_intra_us = 0, m_inter_us = 0, m_switch_s = 0;
  TimeNs m_base{};
};

// One directed Hamiltonian cycle over the arcs still free, by randomised depth-first search.
bool hamiltonian_cycle(size_t p, std::vector<std::vector<char>>& free_arc, std::mt19937& rng,
                       std::vector<int32_t>* succ) {
  std::vector<int32_t> path{0};
  std::vector<char> on_path(p, 0);
  on_path[0] = 1;
  int64_t budget = 20000;
  std::function<bool()> extend = [&]() -> bool {
    if (--budget < 0) return false;
    const size_t u = size_t(path.back());
    if (path.size() == p) return free_arc[u][0] != 0;
    std::vector<int32_t> next;
    for (size_t v = 0; v < p; ++v)
      if (!on_path[v] && free_arc[u][v]) next.push_back(int32_t(v));
    std::shuffle(next.begin(), next.end(), rng);
    for (int32_t v : next) {
      path.push_back(v);
      on_path[size_t(v)] = 1;
      if (extend()) return true;
      on_path[size_t(v)] = 0;
      path.pop_back();
    }
    return false;
  };
  if (!extend()) return false;
  succ->assign(p, 0);
  for (size_t i = 0; i < p; ++i) (*succ)[size_t(path[i])] = path[(i + 1) % p];
  for (size_t i = 0; i < p; ++i) free_arc[size_t(path[i])][size_t(path[(i + 1) % p])] = 0;
  return true;
}

std::vector<std::vector<int32_t>> search_mesh_ring_cycles(int64_t members) {
  const size_t p = size_t(std::max<int64_t>(members, 1));
  std::vector<std::vector<int32_t>> best;
  for (size_t s = 1; s < std::max<size_t>(p, 2); ++s) {  // rings of stride s coprime with p
    if (std::gcd(s, p) != 1) continue;
    std::vector<int32_t> succ(p);
    for (size_t i = 0; i < p; ++i) succ[i] = int32_t((i + s) % p);
    best.push_back(std::move(succ));
  }
  if (p < 3 || p > 16) return best;
  // A full decomposition of the complete digraph into p-1 Hamiltonian cycles exists for every
  // p except 4 and 6 (Tillson 1980); randomised search with restarts finds one for small p.
  std::mt19937 rng(12345);
  for (int attempt = 0; attempt < 2000 && best.size() + 1 < p; ++attempt) {
    std::vector<std::vector<char>> free_arc(p, std::vector<char>(p, 1));
    for (size_t i = 0; i < p; ++i) free_arc[i][i] = 0;
    std::vector<std::vector<int32_t>> cycles;
    std::vector<int32_t> succ;
    while (hamiltonian_cycle(p, free_arc, rng, &succ)) cycles.push_back(succ);
    if (cycles.size() > best.size()) best = std::move(cycles);
  }
  return best;
}

}  // namespace

const std::vector<std::vector<int32_t>>& mesh_ring_cycles(int64_t members) {
  // The search takes milliseconds for some sizes: once per size per process (map nodes are
  // stable, so the references stay valid).
  static std::mutex mutex;
  static std::map<int64_t, std::vector<std::vector<int32_t>>> found;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(members);
  if (it == found.end()) it = found.emplace(members, search_mesh_ring_cycles(members)).first;
  return it->second;
}

CollectivePlan build_plan(const PlanContext& ctx) { return Planner(ctx).plan(); }

}  // namespace simrun::detail

namespace simrun {

int mesh_ring_count(int64_t members) { return int(detail::mesh_ring_cycles(members).size()); }

}  // namespace simrun
