// The cluster as a graph (Boost.Graph adjacency list): GPUs, the scale-up fabric of each node or
// rack (one NVSwitch vertex per NVLink domain — an 8-GPU HGX board or a 72-GPU NVL72 rack —, a
// point-to-point Infinity Fabric mesh, NVLink bridge pairs, or a PCIe host switch), NICs attached
// to GPUs over PCIe, and a folded-Clos InfiniBand/RoCE fabric of leaf, spine and core switches,
// rail-optimized (NIC k of every node on rail k's leaves, as in the DGX SuperPOD reference
// architecture) or plain (a node's NICs on consecutive leaf ports), with a leaf down:up
// oversubscription ratio.
//
// Every physical cable is two directed links (one per direction) with a bandwidth per direction
// and a latency. Routes are shortest paths: up-down through the Clos, the uplink at each tier chosen
// by the destination as InfiniBand's fat-tree routing does (d-mod-k: destination port d takes
// uplink (d / (U_0···U_{t-1})) mod U_t at tier t; OpenSM's ftree engine; Zahavi et al. 2010,
// "Optimized InfiniBand fat-tree routing for shift all-to-all communication patterns"), so the
// flows into one leaf come down distinct links and a shift (a ring of nodes) shares none on a
// non-blocking tree; PXN-style over NVLink to the GPU on the destination's rail when the source
// GPU's own NIC sits on another rail. The Boost graph also serves plain BFS
// shortest paths, Graphviz output and the summary (element counts, bisection bandwidth, per-GPU
// injection bandwidth).
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simrun/common/units.hpp"
#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

enum class FabricShape { rail_optimized, fat_tree };
const char* to_string(FabricShape shape);  // "rail-optimized" | "fat-tree"

// What the graph is built from (sim/ converts a ClusterSpec into this).
struct ClusterGraphSpec {
  GpuSpec gpu;
  FabricSpec fabric;
  int64_t num_gpus = 8;       // e.g. 16384
  int64_t gpus_per_node = 8;  // e.g. 8 (HGX), 4 (GB200 compute tray)
  int64_t nics_per_node = 8;  // one fabric port each, e.g. 8
  FabricShape shape = FabricShape::rail_optimized;
  double oversubscription = 1.0;  // leaf down:up bandwidth, e.g. 1.0 or 2.0
};

enum class VertexKind { gpu, nvswitch, host, nic, fabric_switch };
enum class LinkKind {
  scale_up,   // NVLink / Infinity Fabric / bridge: GPU <-> NVSwitch or GPU <-> GPU
  host_pcie,  // GPU <-> PCIe host switch (GPUs without a scale-up fabric)
  nic_pcie,   // GPU <-> its NIC
  nic_port,   // NIC <-> leaf switch
  fabric,     // switch tier t <-> tier t+1 (a bundle of parallel cables as one link)
};

struct GraphVertex {
  VertexKind kind = VertexKind::gpu;
  int32_t tier = 0;   // fabric switches: 1 = leaf, 2 = spine, 3+ = core; 0 otherwise
  int64_t index = 0;  // GPU id, NIC id, switch id within its tier, domain id (nvswitch), node (host)
};

struct GraphLink {
  uint32_t src = 0, dst = 0;  // vertex ids
  LinkKind kind = LinkKind::scale_up;
  int32_t tier = 0;        // fabric links: tier of the lower switch (1 = leaf-spine)
  double bytes_per_s = 0;  // per direction
  TimeNs latency{};        // wire + switch traversal at `dst`
};

struct Route {
  std::vector<uint32_t> links;  // directed link ids, in order
  TimeNs latency{};             // Σ link latencies
  int32_t switch_hops = 0;      // fabric switches traversed
  bool uses_fabric = false;     // leaves the scale-up domain
};

struct RouteOptions {
  int32_t rail = -1;  // inter-domain routes: NIC index to use on both ends; -1 = source GPU's own
};

struct ClusterSummary {
  int64_t gpus = 0, nodes = 0, scale_up_domains = 0, nvswitches = 0, nics = 0;
  std::vector<int64_t> switches_per_tier;  // [0] = leaves, [1] = spines, [2..] = core tiers
  int64_t fabric_links = 0;                // physical switch-to-switch bundles
  int64_t directed_links = 0;
  double bisection_bytes_per_s = 0;            // fabric, one direction across a balanced cut of nodes
  double scale_up_bisection_bytes_per_s = 0;   // inside one scale-up domain
  double injection_scale_up_bytes_per_s = 0;   // per GPU per direction (NVLink)
  double injection_scale_out_bytes_per_s = 0;  // per GPU per direction (its share of node NICs)
};

// The NIC rails GPU `local` of a node reaches (ClusterGraph::rails_of): one per NIC it owns when a
// node has a NIC per GPU or more (rail = local, local + gpus, ...), else the NIC it shares with
// its gpus_per_node / nics_per_node neighbours. Empty without NICs.
std::vector<int32_t> node_rails_of_gpu(int64_t local, int64_t gpus_per_node, int64_t nics_per_node);

class ClusterGraph {
 public:
  struct VertexProps {
    uint32_t id = 0;
  };
  struct EdgeProps {
    uint32_t link = 0;  // index into links()
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexProps, EdgeProps>;

  // Why this cluster cannot be built (GPU count the nodes or the switch radix cannot host, ...);
  // nullopt when it can. `field` receives the offending field name (num_gpus, gpus_per_node, ...).
  static std::optional<std::string> check(const ClusterGraphSpec& spec, std::string* field = nullptr);

  // Builds the graph; throws InputError("cluster", field, why) when check() fails.
  explicit ClusterGraph(const ClusterGraphSpec& spec);

  const ClusterGraphSpec& spec() const { return m_spec; }
  int64_t num_gpus() const { return m_spec.num_gpus; }
  int64_t num_nodes() const { return m_num_nodes; }
  int64_t gpus_per_node() const { return m_spec.gpus_per_node; }
  int64_t num_domains() const { return m_num_domains; }
  int64_t gpus_per_domain() const { return m_gpus_per_domain; }
  int64_t node_of(int64_t gpu) const { return gpu / m_spec.gpus_per_node; }
  int64_t local_index(int64_t gpu) const { return gpu % m_spec.gpus_per_node; }
  int64_t domain_of(int64_t gpu) const { return gpu / m_gpus_per_domain; }
  int64_t nics_per_node() const { return m_num_nodes > 1 ? m_spec.nics_per_node : 0; }
  // Local GPU index that owns NIC `rail` of its node (its PCIe neighbour).
  int64_t rail_owner(int64_t rail) const;
  // NICs (rails) attached to local GPU `local`.
  std::vector<int32_t> rails_of(int64_t local) const;
  int32_t fabric_tiers() const { return static_cast<int32_t>(m_tiers.size()); }

  uint32_t gpu_vertex(int64_t gpu) const { return static_cast<uint32_t>(gpu); }
  uint32_t nic_vertex(int64_t node, int64_t rail) const;

  // NVSwitch domains: the GPU -> switch link (switch -> GPU is this + 1); UINT32_MAX otherwise.
  uint32_t switch_uplink(int64_t gpu) const {
    return m_nvswitch_vertex.empty() ? UINT32_MAX : m_gpu_up[size_t(gpu)];
  }
  // The link from a GPU to its NIC `rail` (NIC -> GPU is this + 1); UINT32_MAX if not attached.
  uint32_t nic_uplink(int64_t gpu, int32_t rail) const;
  // Shortest route between two GPUs (empty for src == dst).
  Route route(int64_t src_gpu, int64_t dst_gpu, const RouteOptions& options = {}) const;
  // BFS hop count between two vertices over the Boost graph (-1 if unreachable); for checks.
  int bfs_hops(uint32_t from, uint32_t to) const;

  const std::vector<GraphLink>& links() const { return m_links; }
  const std::vector<GraphVertex>& vertices() const { return m_vertices; }
  const Graph& graph() const { return m_graph; }
  std::string vertex_name(uint32_t v) const;

  ClusterSummary summary() const;
  // Graphviz DOT of the whole graph (one undirected edge per cable). Meant for small clusters:
  // refuses (returns false, writes nothing) above `max_vertices`.
  bool write_dot(std::ostream& out, size_t max_vertices = 2000) const;

 private:
  struct Switch {
    uint32_t vertex = 0;
    std::vector<uint32_t> up_links;   // to tier+1, in uplink-index order
    std::vector<uint32_t> up_switch;  // index (within tier+1) of the switch each up link reaches
  };
  struct Tier {
    std::vector<Switch> switches;
  };

  uint32_t add_vertex(VertexKind kind, int32_t tier, int64_t index);
  uint32_t add_link(uint32_t a, uint32_t b, LinkKind kind, int32_t tier, double bytes_per_s, TimeNs latency,
                    std::optional<TimeNs> latency_back = std::nullopt);
  void build_scale_up();
  void build_nics();
  void build_fabric();
  // The fabric's parts: the leaves and the NIC ports to them (returns the number of leaves);
  // above tier t's switches, grouped by plane, the top tier (per plane the fewest switches, a
  // divisor of the `up` uplinks, with enough ports) or a tier of pods (`half` members per plane,
  // one middle switch per member uplink; returns the new tier's members).
  struct TierMember {
    int64_t sw;
    int64_t plane;
  };
  int64_t build_leaves(TimeNs nic_latency, TimeNs hop_latency);
  void build_top_tier(int32_t t, Tier& lower, Tier& upper,
                      const std::map<int64_t, std::vector<int64_t>>& planes, int64_t up, TimeNs hop_latency);
  std::vector<TierMember> build_pod_tier(int32_t t, Tier& lower, Tier& upper,
                                         const std::map<int64_t, std::vector<int64_t>>& planes, int64_t up,
                                         TimeNs hop_latency);
  void append_link(Route& r, uint32_t link) const;
  void append_nvlink_path(Route& r, int64_t src_gpu, int64_t dst_gpu) const;
  void append_fabric_path(Route& r, int64_t src_leaf, int64_t dst_leaf, int64_t dst_port) const;
  int64_t leaf_of_nic(int64_t node, int64_t rail) const;
  // The NIC's fabric port index d, leaf by leaf: leaf · radix/2 + its place among the leaf's ports.
  int64_t fabric_port_of_nic(int64_t node, int64_t rail) const;
  const char* to_string_shape() const { return to_string(m_spec.shape); }

  ClusterGraphSpec m_spec;
  int64_t m_num_nodes = 0, m_num_domains = 0, m_gpus_per_domain = 0;
  std::vector<GraphVertex> m_vertices;
  std::vector<GraphLink> m_links;
  Graph m_graph;
  // Scale-up: per GPU the link to its domain's NVSwitch (up) and back (down); mesh/bridge: pair links.
  std::vector<uint32_t> m_gpu_up, m_gpu_down;
  std::vector<uint32_t> m_nvswitch_vertex;  // per domain
  std::vector<uint32_t> m_host_vertex;      // per node (host PCIe switch), if used
  std::vector<uint32_t> m_mesh_link;        // mesh/bridge: [gpu * gpus_per_node + peer_local] -> link
  // NICs: vertex per (node, rail); GPU<->NIC links; NIC<->leaf links; leaf per NIC.
  std::vector<uint32_t> m_nic_vertex;
  std::vector<uint32_t> m_gpu_to_nic, m_nic_to_gpu, m_nic_to_leaf, m_leaf_to_nic;
  std::vector<int64_t> m_nic_leaf;
  std::vector<Tier> m_tiers;  // [0] = leaves
  double m_bisection = 0;
};

}  // namespace simrun
