// Closed-form (α-β) times of the collectives a training step issues, and the link a group of
// ranks talks over in a cluster. α is a per-step latency (seconds), B the per-direction
// bandwidth a rank sees (bytes per second), S the message size in bytes as nccl-tests counts
// it (the full buffer: for all_gather the gathered output, for reduce_scatter the input).
//   ring all_reduce      2(n−1)/n · S/B + 2(n−1)·α      (Patarasuk & Yuan 2009; NCCL Ring)
//   tree all_reduce      2·S/B + 2·⌈log2 n⌉·α            (NCCL double binary tree: bandwidth
//                                                          ratio 0.5 of busbw, tuning.cc §1.3)
//   all_gather / reduce_scatter (ring)  (n−1)/n · S/B + (n−1)·α
//   all_to_all (pairwise)                (n−1)/n · S/B + (n−1)·α
//   send_recv                            S/B + α
// Inside one NVSwitch or full-mesh domain all_reduce, all_gather and reduce_scatter take NCCL's
// (RCCL's) own model instead: its tuner's choice of algorithm and protocol (collective_tuner.hpp), a ring
// timed as the tuner predicts it (base + per-step latency of the protocol, its bandwidth), and NVLink SHARP
// (NVLS, Hopper and later) as
//   nvls  max(up, down) · S / (B_link · nvlsEfficiency) + NCCL's NVLS latency
// with the bytes per switch link of nvls_link_bytes. Both are what the event simulation's flows
// take for the call alone (tests/sim/collectives/test_collective_cost.cpp).
// Across domains (an HGX node or an NVL72 rack each) the same three take NCCL's multi-node
// algorithms as the event's flows run them (collective_algorithms.cpp): the tuner's choice on
// the group's shape, then Ring (one channel group per NIC entry and ring, each a pipeline over
// every domain), Tree (double binary tree over domains, a chain inside each), NVLSTree or PAT,
// timed by max-min sharing of the link classes they load (a switch uplink or mesh link, a NIC
// port, a GPU–NIC link) among their channel groups: fabric_collective_s. all_to_all, where each
// node is its own domain, likewise: NCCL's grouped send/recv, every pair at once, through the
// NIC of the destination's rail.
// The bus-bandwidth factors are nccl-tests' (doc/PERFORMANCE.md; ecosystem.md §2.1), so a
// time here and a measured busbw diff directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "simrun/sim/collectives/collective_tuner.hpp"
#include "simrun/sim/collectives/efficiency.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"  // RankGroup
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

// A group in NVSwitch or full-mesh domains as NCCL's algorithms load its links; every domain
// holds the same members (positions 0..ppn−1, `stride` apart in Megatron's rank order).
struct FabricGroup {
  GroupShape shape;                      // the tuner's view: nodes = domains, ranks_per_node = ppn
  std::vector<int32_t> entry_pos;        // where channel c enters a domain: member position of NIC entry
                                         // c mod size (one per NIC, rail-major over the domain's nodes)
  std::vector<int32_t> member_nic;       // per member position: the entry (NIC) of its own first rail
  std::vector<int64_t> domain_node;      // per domain: node of its first member (for switch hops)
  int64_t nodes_per_leaf = 0;            // nodes whose same-rail NICs share a leaf switch (0 = one leaf)
  double scale_up_link_bytes_per_s = 0;  // a switch uplink, or one mesh link, after efficiency
  double port_bytes_per_s = 0;           // one NIC port after network efficiency, this group's share
                                         // of it: / max(nic_sharers, flows_per_uplink of its rings, or
                                         // of its all-to-all)
  double far_port_bytes_per_s = 0;       // the same for trees and PAT (UplinkTraffic::far)
  double nic_pcie_bytes_per_s = 0;       // the GPU–NIC link behind it
  double switch_latency_s = 0;           // per extra switch hop
  bool mesh = false;
};

struct LinkCost {
  double bytes_per_s = 0;  // effective per-direction bandwidth seen by one rank, e.g. 369e9
  double alpha_s = 0;      // latency per algorithm step, e.g. 1.9e-6
  LinkClass link_class = LinkClass::scale_up;
  // Set when the group sits in one NVSwitch or full-mesh domain: the group as NCCL's tuner sees
  // it (unset: α-β rings, e.g. across domains, over PCIe, or under calibrated α/β).
  std::optional<GroupShape> domain_shape = std::nullopt;
  // Set for NCCL's model across domains (group_link) and for all-to-all (all_to_all_link) when
  // the group fits fabric_group (unset: the α-β forms, e.g. over PCIe or under calibrated α/β).
  std::shared_ptr<const FabricGroup> fabric_group = nullptr;
  // The same link: equal rates and shapes, and the same FabricGroup (immutable once built).
  bool operator==(const LinkCost&) const = default;
};

double ring_all_reduce_s(double bytes, int64_t n, const LinkCost& link);
double tree_all_reduce_s(double bytes, int64_t n, const LinkCost& link);
double ring_all_gather_s(double bytes, int64_t n, const LinkCost& link);
double ring_reduce_scatter_s(double bytes, int64_t n, const LinkCost& link);
double all_to_all_s(double bytes, int64_t n, const LinkCost& link);
double send_recv_s(double bytes, const LinkCost& link);
// NVLS time of all_reduce, all_gather or reduce_scatter on the whole of `shape` (one domain).
double nvls_s(CollectiveOp op, double bytes, const GroupShape& shape);
// all_reduce, all_gather or reduce_scatter over a group spanning domains, or all_to_all over
// any fabric group, as above.
double fabric_collective_s(CollectiveOp op, double bytes, const FabricGroup& group);
// By op: NCCL's model inside a scale-up domain and across domains, and all-to-all as grouped
// send/recv (above), where the link carries their shapes; else the α-β forms (broadcast and
// reduce pipelined along a chain: S/B + (n−1)·α).
double collective_s(CollectiveOp op, double bytes, int64_t n, const LinkCost& link);
// The link a group's ring runs over. Inside one scale-up domain (GpuSpec::scale_up_domain GPUs,
// e.g. 8 on HGX, 72 on NVL72): the scale-up bandwidth × scale_up_fraction (a full-mesh domain
// only uses the links to group peers: (n−1)/(domain−1) of it; a PCIe "domain" the PCIe link).
// Across domains: NCCL runs one ring per NIC, so a ring's bandwidth is the NIC bandwidth of the
// group members inside one domain, local·nic_bytes_per_s_per_gpu (at most the GPU's PCIe link
// per NIC, as the cluster graph wires it) × scale_out_fraction, divided by the fabric
// oversubscription and capped by the scale-up link (nccl-tests: 8×NDR per node ⇒
// ≈370-385 GB/s busbw, measured-nccl.json h100_ndr_per_nic).
LinkCost group_link(const ClusterSpec& cluster, RankGroup group, const EfficiencyDefaults& eff);

// The group as NCCL's algorithms load its links, when it sits in NVSwitch or full-mesh domains
// with the same members in each (null otherwise: uneven, bridge/PCIe scale-up, one rank).
// group_link attaches it across domains, all_to_all_link wherever a node is its own domain.
// `all_to_all`: the group's members exchange with every peer (else NCCL's rings and trees).
std::shared_ptr<const FabricGroup> fabric_group(const ClusterSpec& cluster, RankGroup group,
                                                bool all_to_all = false);

// How a group's collective crosses leaf switches: NCCL's rings (each channel domain to domain on
// one rail), its trees and PAT (domains at every distance), or an all-to-all through PXN (a
// member's bytes to a peer leave on the peer's rail).
enum class UplinkTraffic : uint8_t { ring, far, all_to_all };

// An oversubscribed fabric's leaf uplinks (radix/2 ports down, radix/(2·oversubscription) up;
// ClusterGraph::build_fabric): the flows leaving one leaf per uplink port, on the leaf where
// they are most, when every group of `group`'s kind in group.block runs its collective at once,
// in ports' worth of traffic. 0 on a non-blocking fabric, within one leaf, or for a group inside
// a scale-up domain. A flow across leaves then moves at most a port's rate divided by this, as
// the event's flows share the uplinks (its NCCL model times every group of the block together
// where this exceeds 1).
double flows_per_uplink(const ClusterSpec& cluster, RankGroup group, UplinkTraffic traffic);

// Symmetric NIC sharing: how many groups of the group's kind meet on one NIC. In a training
// step every GPU of a node runs its own group's collective at once (the TP ranks of a node
// reduce the same DP bucket together; every GPU of a stage sends its activations together), so
// where a node has fewer NICs than GPUs, the groups whose members attach to one NIC share it:
// those at offsets 0 .. min(stride, gpus_per_node) − 1 of Megatron's order, counted on the NIC
// that carries the most of them. 1 inside a scale-up domain and wherever each GPU has a NIC of
// its own (an HGX node's 8 rails). The α-β forms already take a GPU's share of the node's NICs
// (group_link); NCCL's model, timing one call on its own, divides the NIC port by this.
int64_t nic_sharers(const ClusterSpec& cluster, RankGroup group);

// The pair a pipeline send between adjacent stages runs over, as group_link reads it: two GPUs
// of one scale-up domain, {2, 1}; across domains, a GPU and its peer `stage_size` ranks on, or,
// where stages are smaller than a domain, {2, domain}: the pair still leaves its domain through
// the NIC. Both fidelities take a send's link from here (the event per pair of ranks, the
// estimate per stage boundary).
enum class PairPlacement : uint8_t { same_domain, across_domains };
RankGroup pipeline_pair(const ClusterSpec& cluster, int64_t stage_size, PairPlacement placement);

// The link an all-to-all over the group runs on, as a bus bandwidth for all_to_all_s. A ring's
// cross-domain traffic is one neighbour's share, but an all-to-all sends (n − local)/n of every
// member's buffer off the domain, each member through its own NIC: inside one domain it is
// group_link; across domains the NIC share (bounded by the scale-up share of the local peers).
// Where every node is its own domain it also carries the group's FabricGroup, and collective_s
// times the all-to-all as NCCL's grouped send/recv instead.
LinkCost all_to_all_link(const ClusterSpec& cluster, RankGroup group, const EfficiencyDefaults& eff);

// The rate of one GPU's scale-up link as NCCL moves it (the network's link capacity): its
// NVSwitch uplink, or on a full mesh its link to one peer, times scale_up_efficiency.
double scale_up_link_rate(const GpuSpec& gpu);

}  // namespace simrun
