// α-β collective times and group links; formulas and sources in collective_cost.hpp.
#include "simrun/sim/collectives/collective_cost.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "collective_plan.hpp"
#include "simrun/common/error.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun {
namespace {

double steps_ceil_log2(int64_t n) {
  int64_t steps = 0;
  for (int64_t k = 1; k < n; k *= 2) ++steps;
  return double(steps);
}

void check_args(double bytes, int64_t n, const LinkCost& link) {
  SIMRUN_ASSERT(bytes >= 0, "collective size must be non-negative");
  SIMRUN_ASSERT(n >= 1, "collective group must have at least one rank");
  SIMRUN_ASSERT(link.bytes_per_s > 0 || n == 1, "collective link needs a positive bandwidth");
}

// Members of a group that spans domains in the domain holding the fewest of them (at least one):
// a ring enters and leaves every domain through its members' NICs, so the thinnest domain paces
// it. Megatron's first group of the kind (members 0, stride, 2·stride, … in rank order, ranks
// filling domains in order), as the event simulates it: where the cluster ends in a partial
// rack (512 GPUs in NVL72 racks: 7 full racks and 8 GPUs), the group's last domain may hold a
// single member however many the full racks hold.
int64_t members_per_domain(const ClusterSpec& cluster, RankGroup group) {
  const int64_t domain = scale_up_domain_size(cluster);
  std::map<int64_t, int64_t> count;
  for (int64_t i = 0; i < group.size; ++i) ++count[i * group.stride / domain];
  int64_t fewest = group.size;
  for (const auto& [d, members] : count) fewest = std::min(fewest, members);
  return std::max<int64_t>(1, fewest);
}

// One GPU's NIC bandwidth as NCCL rings reach it: its share of the node's ports, reached over a
// PCIe link per GPU–NIC pair as the cluster graph wires it (an NDR port behind an A100's Gen4
// x16 moves at most the link's 32 GB/s; hardware.md §3 host interfaces), and at most a port's
// share of an oversubscribed leaf's uplinks (flows_per_uplink).
double nic_share_bytes_per_s(const ClusterSpec& cluster, const EfficiencyDefaults& eff, double uplink_flows) {
  double share = cluster.nic_bytes_per_s_per_gpu();
  if (cluster.gpu.pcie_bytes_per_s > 0 && cluster.gpus_per_node > 0) {
    const double nics_per_gpu = double(cluster.nics_per_node) / double(cluster.gpus_per_node);
    share = std::min(share, cluster.gpu.pcie_bytes_per_s * std::max(1.0, nics_per_gpu));
  }
  if (uplink_flows > 0) share = std::min(share, cluster.fabric.port_bytes_per_s / uplink_flows);
  return share * eff.scale_out_fraction;
}

}  // namespace

double ring_all_reduce_s(double bytes, int64_t n, const LinkCost& link) {
  check_args(bytes, n, link);
  if (n == 1 || bytes == 0) return 0;
  const double nd = double(n);
  return busbw_factor(CollectiveOp::all_reduce, n) * bytes / link.bytes_per_s +
         2.0 * (nd - 1.0) * link.alpha_s;
}

double tree_all_reduce_s(double bytes, int64_t n, const LinkCost& link) {
  check_args(bytes, n, link);
  if (n == 1 || bytes == 0) return 0;
  return 2.0 * bytes / link.bytes_per_s + 2.0 * steps_ceil_log2(n) * link.alpha_s;
}

double ring_all_gather_s(double bytes, int64_t n, const LinkCost& link) {
  check_args(bytes, n, link);
  if (n == 1 || bytes == 0) return 0;
  const double nd = double(n);
  return busbw_factor(CollectiveOp::all_gather, n) * bytes / link.bytes_per_s + (nd - 1.0) * link.alpha_s;
}

double ring_reduce_scatter_s(double bytes, int64_t n, const LinkCost& link) {
  return ring_all_gather_s(bytes, n, link);
}

double all_to_all_s(double bytes, int64_t n, const LinkCost& link) {
  return ring_all_gather_s(bytes, n, link);
}

double send_recv_s(double bytes, const LinkCost& link) {
  check_args(bytes, 2, link);
  if (bytes == 0) return 0;
  return bytes / link.bytes_per_s + link.alpha_s;
}

double nvls_s(CollectiveOp op, double bytes, const GroupShape& shape) {
  SIMRUN_ASSERT(shape.nvls && shape.nodes == 1, "NVLS runs inside one NVSwitch domain");
  if (shape.ranks <= 1 || bytes == 0) return 0;
  const NvlsLinkBytes per_byte = nvls_link_bytes(op, shape.ranks);
  const double latency_us =
      CollectiveTuner::hw_latency_us(CollectiveTuner::Hw::nvlink, Algorithm::nvls, Protocol::simple);
  return std::max(per_byte.up, per_byte.down) * bytes /
             (shape.intra_bytes_per_s * CollectiveTuner::nvls_efficiency(shape)) +
         latency_us * 1e-6;
}

double collective_s(CollectiveOp op, double bytes, int64_t n, const LinkCost& link) {
  const bool nccl_op =
      op == CollectiveOp::all_reduce || op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter;
  if (link.domain_shape && nccl_op && n > 1 && bytes > 0) {
    SIMRUN_ASSERT(link.domain_shape->ranks == n, "the domain shape describes another group size");
    const GroupShape& shape = *link.domain_shape;
    const TunerChoice choice = CollectiveTuner::choose(op, shape, bytes);
    if (choice.algorithm == Algorithm::nvls) return nvls_s(op, bytes, shape);
    if (choice.algorithm == Algorithm::ring) {
      if (shape.nvswitch) return choice.predicted_us * 1e-6;
      // A mesh, as the event's flows run it: channel c rides ring c mod R of the R link-disjoint
      // rings, so ring r carries its g_r channels' share of the bytes (wire bytes: the protocol's
      // line overhead) at the lower of their channels' rate (the protocol's and each channel's
      // share of a link) and its links' rate; the busiest ring sets the time.
      const int rings = std::max(1, mesh_ring_count(n)), nch = std::max(1, choice.channels);
      const double link_rate = shape.intra_bytes_per_s / double(rings);
      const double wire = detail::wire_factor(choice.algorithm, choice.protocol, shape);
      const double edge_fraction = double(op == CollectiveOp::all_reduce ? 2 : 1) * double(n - 1) / double(n);
      double slowest_s = 0;
      for (int r = 0; r < std::min(rings, nch); ++r) {
        const int g = nch / rings + (r < nch % rings ? 1 : 0);
        const double rate =
            std::min(detail::channel_group_cap(choice.algorithm, choice.protocol, shape, nch, g, 1.0),
                     link_rate / wire);
        slowest_s = std::max(slowest_s, bytes * double(g) / double(nch) * edge_fraction / rate);
      }
      return choice.latency_us * 1e-6 + slowest_s;
    }
  }
  // Across domains NCCL's model for its collectives and for send/recv; all-to-all everywhere.
  if (link.fabric_group && n > 1 && bytes > 0 &&
      (op == CollectiveOp::all_to_all ||
       ((nccl_op || op == CollectiveOp::send_recv) && link.fabric_group->shape.nodes > 1))) {
    SIMRUN_ASSERT(link.fabric_group->shape.ranks == n, "the fabric group describes another group size");
    return fabric_collective_s(op, bytes, *link.fabric_group);
  }
  switch (op) {
    case CollectiveOp::all_reduce:
      return ring_all_reduce_s(bytes, n, link);
    case CollectiveOp::all_gather:
      return ring_all_gather_s(bytes, n, link);
    case CollectiveOp::reduce_scatter:
      return ring_reduce_scatter_s(bytes, n, link);
    case CollectiveOp::all_to_all:
      return all_to_all_s(bytes, n, link);
    case CollectiveOp::send_recv:
      if (link.domain_shape && !link.domain_shape->nvswitch && n > 2) {
        SIMRUN_ASSERT(link.domain_shape->ranks == n, "the domain shape describes another group size");
        // On a full mesh a send rides the one link to its peer (a ring's neighbour), where the
        // group's link spreads its collectives over the n − 1 peer links (group_link).
        LinkCost peer_link = link;
        peer_link.bytes_per_s /= double(n - 1);
        return send_recv_s(bytes, peer_link);
      }
      return send_recv_s(bytes, link);
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      check_args(bytes, n, link);
      return (n == 1 || bytes == 0) ? 0.0 : bytes / link.bytes_per_s + double(n - 1) * link.alpha_s;
  }
  SIMRUN_ASSERT(false, "unknown collective op");
  return 0;
}

double scale_up_link_rate(const GpuSpec& gpu) {
  const double link = gpu.scale_up_kind == ScaleUpKind::mesh
                          ? gpu.scale_up_bytes_per_s / double(std::max<int64_t>(1, gpu.scale_up_domain - 1))
                          : gpu.scale_up_bytes_per_s;
  return link * scale_up_efficiency(gpu);
}

LinkCost group_link(const ClusterSpec& cluster, RankGroup group, const EfficiencyDefaults& eff) {
  const GpuSpec& gpu = cluster.gpu;
  const int64_t domain = scale_up_domain_size(cluster);

  // Scale-up bandwidth a ring of `peers` members of one domain sees.
  auto scale_up_bytes_per_s = [&](int64_t peers) {
    switch (gpu.scale_up_kind) {
      case ScaleUpKind::nvswitch:
        return gpu.scale_up_bytes_per_s;
      case ScaleUpKind::mesh:
        // Full mesh: scale_up_bytes_per_s is the sum over domain−1 point-to-point links.
        return domain > 1
                   ? gpu.scale_up_bytes_per_s * double(std::max<int64_t>(1, peers - 1)) / double(domain - 1)
                   : gpu.scale_up_bytes_per_s;
      case ScaleUpKind::bridge:
        return peers <= 2 ? gpu.scale_up_bytes_per_s : gpu.pcie_bytes_per_s;
      case ScaleUpKind::pcie:
        return gpu.pcie_bytes_per_s;
    }
    return gpu.scale_up_bytes_per_s;
  };

  if (group_inside_scale_up(cluster, group)) {
    const double bw = scale_up_bytes_per_s(group.size);
    LinkCost link{bw * eff.scale_up_fraction, eff.scale_up_alpha_s, LinkClass::scale_up};
    const bool nvswitch = gpu.scale_up_kind == ScaleUpKind::nvswitch;
    if (group.size > 1 && (nvswitch || gpu.scale_up_kind == ScaleUpKind::mesh)) {
      // As CollectiveRunner::shape reads it off the cluster graph: a GPU's switch link, or its
      // link to one mesh peer times the link-disjoint rings the group's channels spread over, at
      // NCCL's scale-up efficiency.
      GroupShape s;
      s.ranks = s.ranks_per_node = group.size;
      s.cc_index = compute_capability_index(gpu);
      s.nvswitch = nvswitch;
      s.nvls = nvls_usable(gpu, s.ranks_per_node);
      s.intra_bytes_per_s =
          scale_up_link_rate(gpu) * (nvswitch ? 1.0 : double(std::max(1, mesh_ring_count(group.size))));
      link.domain_shape = s;
    }
    return link;
  }
  // Beyond an NVLink-bridged pair (H100 PCIe) inside the node: each GPU's x16 link at NCCL's PCIe rate.
  if (group_over_host_pcie(cluster, group))
    return LinkCost{host_pcie_bytes_per_s(gpu) * kPcieEfficiency, eff.scale_up_alpha_s, LinkClass::scale_up};
  const int64_t local = members_per_domain(cluster, group);
  double bw = double(local) *
              nic_share_bytes_per_s(cluster, eff, flows_per_uplink(cluster, group, UplinkTraffic::ring));
  if (local > 1) bw = std::min(bw, scale_up_bytes_per_s(local) * eff.scale_up_fraction);
  LinkCost link{bw, eff.scale_out_alpha_s + cluster.fabric.latency_s, LinkClass::scale_out};
  link.fabric_group = fabric_group(cluster, group);
  return link;
}

int64_t nic_sharers(const ClusterSpec& cluster, RankGroup group) {
  const int64_t gpn = std::max<int64_t>(1, cluster.gpus_per_node), nics = cluster.nics_per_node;
  if (group.size < 2 || nics < 1 || nics >= gpn || gpn % nics != 0 || group_inside_scale_up(cluster, group))
    return 1;
  // A GPU's group of this kind: its offset within the stride, in its block of stride·size ranks.
  const int64_t block = std::max<int64_t>(1, group.stride) * group.size;
  std::map<int32_t, std::set<int64_t>> groups_on_nic;
  for (int64_t local = 0; local < gpn; ++local)
    for (const int32_t rail : node_rails_of_gpu(local, gpn, nics))
      groups_on_nic[rail].insert(local % std::max<int64_t>(1, group.stride) + local / block * block);
  size_t most = 1;
  for (const auto& [rail, groups] : groups_on_nic) most = std::max(most, groups.size());
  return int64_t(most);
}

double flows_per_uplink(const ClusterSpec& cluster, RankGroup group, UplinkTraffic traffic) {
  const int64_t gpn = std::max<int64_t>(1, cluster.gpus_per_node), nics = cluster.nics_per_node;
  const int64_t half = cluster.fabric.switch_radix / 2, nodes = cluster.num_nodes();
  if (!(cluster.oversubscription > 1) || half <= 0 || nics < 1 || group.size < 2 || nodes * nics <= half ||
      group_inside_scale_up(cluster, group))
    return 0;
  // ClusterGraph::build_leaves: a rail's NICs of `half` consecutive nodes share a leaf
  // (rail-optimized), or `half` consecutive NIC ports do (fat tree).
  const bool rails = cluster.topology == FabricTopology::rail_optimized;
  const auto leaf_of = [&](int64_t node, int32_t rail) {
    return rails ? (node / half) * nics + rail : (node * nics + rail) / half;
  };
  const int64_t domain = scale_up_domain_size(cluster), stride = std::max<int64_t>(1, group.stride);
  const int64_t span = group.size * stride;
  const int64_t block = group.block >= span && group.block % span == 0 ? group.block : span;
  std::map<int64_t, double> leaving;  // leaf → flows out of it, in ports' worth
  struct Member {
    int64_t rank, node, domain;
    int32_t rail;  // its GPU's first rail
  };
  for (int64_t base = 0; base < block; base += span)
    for (int64_t offset = 0; offset < (group.block > 0 ? stride : 1); ++offset) {
      std::vector<Member> members;
      // The group's NICs (node, rail) by scale-up domain, rail-major as NCCL's channels use them.
      std::map<int64_t, std::vector<std::pair<int32_t, int64_t>>> nics_of_domain;
      for (int64_t k = 0; k < group.size; ++k) {
        const int64_t rank = base + offset + k * stride;
        if (rank >= cluster.num_gpus) return 0;
        const std::vector<int32_t> gpu_rails = node_rails_of_gpu(rank % gpn, gpn, nics);
        members.push_back({rank, rank / gpn, rank / domain, gpu_rails.front()});
        for (const int32_t rail : gpu_rails) {
          auto& list = nics_of_domain[rank / domain];
          if (std::find(list.begin(), list.end(), std::pair{rail, rank / gpn}) == list.end())
            list.emplace_back(rail, rank / gpn);
        }
      }
      std::vector<std::vector<std::pair<int32_t, int64_t>>> domains;
      for (auto& [d, list] : nics_of_domain) {
        std::sort(list.begin(), list.end());
        domains.push_back(list);
      }
      if (domains.size() < 2) continue;
      // A ring or tree moves at most what the domain with the fewest NICs passes (a partial
      // rack): a boundary with more NIC entries spreads that over them, each below a port.
      size_t thinnest = domains.front().size();
      for (const auto& list : domains) thinnest = std::min(thinnest, list.size());
      switch (traffic) {
        case UplinkTraffic::ring:
          // Channel c from domain d's NIC entry c to the next domain's entry c.
          for (size_t d = 0; d < domains.size(); ++d) {
            const auto& from = domains[d];
            const auto& to = domains[(d + 1) % domains.size()];
            const size_t entries = std::min(from.size(), to.size());
            for (size_t c = 0; c < entries; ++c)
              if (leaf_of(from[c].second, from[c].first) != leaf_of(to[c].second, to[c].first))
                leaving[leaf_of(from[c].second, from[c].first)] += double(thinnest) / double(entries);
          }
          break;
        case UplinkTraffic::far:
          // Trees and PAT reach domains at every distance: a NIC entry whose counterpart in any
          // other domain sits on another leaf sends out of its leaf.
          for (size_t d = 0; d < domains.size(); ++d)
            for (size_t c = 0; c < domains[d].size(); ++c) {
              const int64_t here = leaf_of(domains[d][c].second, domains[d][c].first);
              const bool away = std::any_of(domains.begin(), domains.end(), [&](const auto& other) {
                return c < other.size() && leaf_of(other[c].second, other[c].first) != here;
              });
              if (away) leaving[here] += double(thinnest) / double(domains[d].size());
            }
          break;
        case UplinkTraffic::all_to_all:
          // PXN: a member's bytes to a peer in another domain leave through its node's NIC on the
          // peer's rail, to the peer's NIC on that rail; each member's NIC traffic is a port's
          // worth (at most; shared ports count once per member), spread evenly over those peers.
          for (const Member& from : members) {
            double outside = 0;
            for (const Member& to : members) outside += to.domain != from.domain ? 1 : 0;
            const double share = std::min(1.0, double(nics) / double(gpn)) / outside;
            for (const Member& to : members)
              if (to.domain != from.domain && leaf_of(from.node, to.rail) != leaf_of(to.node, to.rail))
                leaving[leaf_of(from.node, to.rail)] += share;
          }
          break;
      }
    }
  double most = 0;
  for (const auto& [leaf, flows] : leaving) most = std::max(most, flows);
  const double uplinks = double(std::max<int64_t>(1, std::llround(double(half) / cluster.oversubscription)));
  return most / uplinks;
}

RankGroup pipeline_pair(const ClusterSpec& cluster, int64_t stage_size, PairPlacement placement) {
  if (placement == PairPlacement::same_domain) return {2, 1};
  const int64_t domain = scale_up_domain_size(cluster);
  return {2, stage_size < domain ? domain : stage_size};
}

LinkCost all_to_all_link(const ClusterSpec& cluster, RankGroup group, const EfficiencyDefaults& eff) {
  LinkCost link = group_link(cluster, group, eff);
  // NCCL's grouped send/recv as the event's flows run it, where every node is its own domain
  // (fabric_collective_s); else (rack-scale domains, PCIe, uneven groups) the α-β forms below.
  link.fabric_group =
      scale_up_domain_size(cluster) == cluster.gpus_per_node ? fabric_group(cluster, group, true) : nullptr;
  if (link.link_class == LinkClass::scale_up) return link;
  // Every member sends (n − local)/n of its buffer through its own NIC share and (local − 1)/n
  // over the scale-up link, concurrently; as a bus bandwidth for the (n−1)/n bus factor:
  //   B = (n − 1) / max((n − local)/B_nic, (local − 1)/B_scale_up).
  const int64_t n = group.size;
  const int64_t local = members_per_domain(cluster, group);
  double per_byte =
      double(n - local) /
      nic_share_bytes_per_s(cluster, eff, flows_per_uplink(cluster, group, UplinkTraffic::all_to_all));
  if (local > 1) {
    const LinkCost inside = group_link(cluster, {local, group.stride}, eff);
    per_byte = std::max(per_byte, double(local - 1) / inside.bytes_per_s);
  }
  link.bytes_per_s = double(n - 1) / per_byte;
  return link;
}

}  // namespace simrun
