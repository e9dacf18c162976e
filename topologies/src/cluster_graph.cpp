// Cluster graph construction and routing. The fabric is a folded Clos built bottom-up:
//  - leaves have radix/2 ports down (NICs) and (radix/2)/oversubscription up;
//  - while a set of switches that must be joined is larger than one switch can take, it is cut
//    into pods of radix/2 members, each pod joined by one middle switch per member uplink
//    (middle switches: radix/2 down, radix/2 up), and the middle switch's uplink index becomes
//    part of its "plane";
//  - the top tier joins each plane with the fewest switches whose ports suffice, every member
//    linked to every top switch of its plane by an equal bundle of cables.
// For radix 64 this reproduces the DGX H100 SuperPOD compute-fabric sizes (hardware.md §7:
// 2,048 GPUs = 64 leaf + 32 spine; 16,384 GPUs = 512 leaf + 512 spine + 256 core).
#include "simrun/topologies/cluster_graph.hpp"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>
#include <cmath>
#include <map>
#include <ostream>
#include <sstream>

#include "simrun/common/error.hpp"

namespace simrun {

namespace {

// End-to-end 64-byte latencies measured on DeepSeek's H800 cluster (deepseek-isca25 Table 5,
// hardware.md §5.3): NVLink intra-node 3.33 µs. Split over the two links of a GPU-switch-GPU path.
constexpr double kScaleUpPathLatencyS = 3.33e-6;
constexpr int64_t kMaxGraphGpus = int64_t(1) << 22;  // 4M GPUs: far beyond any built cluster
constexpr int kMaxTiers = 6;

int64_t gpus_per_domain_of(const ClusterGraphSpec& s) {
  const int64_t gpn = std::min(s.gpus_per_node, s.num_gpus);
  if (rack_scale_domain(s.gpu, s.gpus_per_node)) return std::min(s.gpu.scale_up_domain, s.num_gpus);  // NVL72
  return gpn;
}

std::string gbps(double bytes_per_s) {
  std::ostringstream o;
  o << bytes_per_s / 1e9 << " GB/s";
  return o.str();
}

}  // namespace

const char* to_string(FabricShape shape) {
  return shape == FabricShape::rail_optimized ? "rail-optimized" : "fat-tree";
}

std::optional<std::string> ClusterGraph::check(const ClusterGraphSpec& s, std::string* field) {
  auto fail = [&](const char* f, std::string why) -> std::optional<std::string> {
    if (field) *field = f;
    return why;
  };
  if (s.num_gpus < 1 || s.num_gpus > kMaxGraphGpus) {
    return fail("num_gpus", "must be between 1 and " + std::to_string(kMaxGraphGpus) + " (got " +
                                std::to_string(s.num_gpus) + ")");
  }
  if (s.gpus_per_node < 1 || s.gpus_per_node > 1024)
    return fail("gpus_per_node", "must be between 1 and 1024");
  if (s.num_gpus > s.gpus_per_node && s.num_gpus % s.gpus_per_node != 0) {
    return fail("num_gpus", std::to_string(s.num_gpus) + " GPUs do not fill whole nodes of " +
                                std::to_string(s.gpus_per_node) + " (use a multiple of " +
                                std::to_string(s.gpus_per_node) + ")");
  }
  if (s.gpu.scale_up_bytes_per_s <= 0 && s.gpu.scale_up_kind != ScaleUpKind::pcie) {
    return fail("gpu", "GPU '" + s.gpu.id + "' has no scale-up bandwidth");
  }
  const int64_t gpn = std::min(s.gpus_per_node, s.num_gpus);
  if (s.gpu.scale_up_kind == ScaleUpKind::nvswitch && gpn > s.gpu.scale_up_domain &&
      s.gpu.scale_up_domain > 0) {
    return fail("gpus_per_node", std::to_string(gpn) + " GPUs per node exceed the " + s.gpu.id +
                                     " NVLink domain of " + std::to_string(s.gpu.scale_up_domain));
  }
  if (s.gpu.scale_up_kind == ScaleUpKind::mesh &&
      (s.gpu.scale_up_domain < 2 || gpn > s.gpu.scale_up_domain)) {
    return fail("gpus_per_node", std::to_string(gpn) + " GPUs per node exceed the " + s.gpu.id +
                                     " Infinity Fabric mesh of " + std::to_string(s.gpu.scale_up_domain));
  }
  const int64_t domain = gpus_per_domain_of(s);
  const int64_t domains = (s.num_gpus + domain - 1) / domain;
  if (domains > 1) {
    if (s.nics_per_node < 1 || s.nics_per_node > 72) {  // one per GPU of an NVL72 rack at most
      return fail("nics_per_node", "multi-node clusters need 1 to 72 NICs per node (got " +
                                       std::to_string(s.nics_per_node) + ")");
    }
    if (s.nics_per_node % gpn != 0 && gpn % s.nics_per_node != 0) {
      return fail("nics_per_node", std::to_string(s.nics_per_node) + " NICs cannot be shared evenly by " +
                                       std::to_string(gpn) + " GPUs per node");
    }
    if (s.fabric.port_bytes_per_s <= 0)
      return fail("fabric", "fabric '" + s.fabric.id + "' has no port bandwidth");
    if (s.fabric.switch_radix < 4 || s.fabric.switch_radix % 2 != 0) {
      return fail("fabric", "fabric '" + s.fabric.id + "' needs an even switch radix >= 4");
    }
    if (!(s.oversubscription >= 1.0) || s.oversubscription > 64) {
      return fail("oversubscription", "must be between 1 (non-blocking) and 64");
    }
    // Tiers needed: leaves, then pods of radix/2 until one plane fits under radix ports.
    const int64_t half = s.fabric.switch_radix / 2;
    const int64_t nodes = s.num_gpus / gpn;
    int64_t members = s.shape == FabricShape::rail_optimized ? ((nodes + half - 1) / half) * s.nics_per_node
                                                             : (nodes * s.nics_per_node + half - 1) / half;
    int tiers = 1;
    while (members > s.fabric.switch_radix) {
      members = (members + half - 1) / half;
      if (++tiers >= kMaxTiers) {
        return fail("num_gpus", std::to_string(s.num_gpus) + " GPUs need more than " +
                                    std::to_string(kMaxTiers) + " switch tiers of radix " +
                                    std::to_string(s.fabric.switch_radix) +
                                    " (use a higher-radix fabric or fewer GPUs)");
      }
    }
  }
  return std::nullopt;
}

ClusterGraph::ClusterGraph(const ClusterGraphSpec& spec) : m_spec(spec) {
  std::string field;
  if (auto why = check(spec, &field)) throw InputError("cluster", field, *why);
  m_spec.gpus_per_node = std::min(spec.gpus_per_node, spec.num_gpus);
  m_num_nodes = m_spec.num_gpus / m_spec.gpus_per_node;
  m_gpus_per_domain = gpus_per_domain_of(m_spec);
  m_num_domains = (m_spec.num_gpus + m_gpus_per_domain - 1) / m_gpus_per_domain;
  if (m_num_domains == 1) m_spec.nics_per_node = 0;

  for (int64_t g = 0; g < m_spec.num_gpus; ++g) add_vertex(VertexKind::gpu, 0, g);
  build_scale_up();
  if (m_num_domains > 1) {
    build_nics();
    build_fabric();
  }
}

uint32_t ClusterGraph::add_vertex(VertexKind kind, int32_t tier, int64_t index) {
  const uint32_t id = static_cast<uint32_t>(m_vertices.size());
  m_vertices.push_back(GraphVertex{kind, tier, index});
  const auto v = boost::add_vertex(m_graph);
  SIMRUN_ASSERT(v == id, "Boost vertex ids must follow insertion order");
  m_graph[v].id = id;
  return id;
}

// Adds a cable as two directed links; returns the a->b id (even); b->a is id + 1.
uint32_t ClusterGraph::add_link(uint32_t a, uint32_t b, LinkKind kind, int32_t tier, double bytes_per_s,
                                TimeNs latency, std::optional<TimeNs> latency_back) {
  const uint32_t id = static_cast<uint32_t>(m_links.size());
  m_links.push_back(GraphLink{a, b, kind, tier, bytes_per_s, latency});
  m_links.push_back(GraphLink{b, a, kind, tier, bytes_per_s, latency_back ? *latency_back : latency});
  boost::add_edge(a, b, EdgeProps{id}, m_graph);
  boost::add_edge(b, a, EdgeProps{id + 1}, m_graph);
  return id;
}

void ClusterGraph::build_scale_up() {
  const GpuSpec& gpu = m_spec.gpu;
  const int64_t n = m_spec.num_gpus;
  const int64_t gpn = m_spec.gpus_per_node;
  const TimeNs half_path = TimeNs::from_seconds(kScaleUpPathLatencyS / 2);
  switch (gpu.scale_up_kind) {
    case ScaleUpKind::nvswitch: {
      m_gpu_up.resize(n);
      m_gpu_down.resize(n);
      for (int64_t d = 0; d < m_num_domains; ++d)
        m_nvswitch_vertex.push_back(add_vertex(VertexKind::nvswitch, 0, d));
      for (int64_t g = 0; g < n; ++g) {
        const uint32_t id = add_link(gpu_vertex(g), m_nvswitch_vertex[domain_of(g)], LinkKind::scale_up, 0,
                                     gpu.scale_up_bytes_per_s, half_path);
        m_gpu_up[g] = id;
        m_gpu_down[g] = id + 1;
      }
      return;
    }
    case ScaleUpKind::mesh: {
      // Full mesh: each GPU's bandwidth is split evenly over its domain peers (MI300X: 7 links of
      // 64 GB/s per direction, hardware.md §6 amd-mi300x-platform).
      const double per_peer =
          gpu.scale_up_bytes_per_s / double(std::max<int64_t>(1, gpu.scale_up_domain - 1));
      m_mesh_link.assign(n * gpn, UINT32_MAX);
      for (int64_t node = 0; node < m_num_nodes; ++node) {
        for (int64_t i = 0; i < gpn; ++i) {
          for (int64_t j = i + 1; j < gpn; ++j) {
            const int64_t a = node * gpn + i, b = node * gpn + j;
            const uint32_t id = add_link(gpu_vertex(a), gpu_vertex(b), LinkKind::scale_up, 0, per_peer,
                                         TimeNs::from_seconds(kScaleUpPathLatencyS));
            m_mesh_link[a * gpn + j] = id;
            m_mesh_link[b * gpn + i] = id + 1;
          }
        }
      }
      return;
    }
    case ScaleUpKind::bridge:
    case ScaleUpKind::pcie: {
      const double pcie = host_pcie_bytes_per_s(gpu);
      m_gpu_up.resize(n);
      m_gpu_down.resize(n);
      for (int64_t node = 0; node < m_num_nodes; ++node)
        m_host_vertex.push_back(add_vertex(VertexKind::host, 0, node));
      for (int64_t g = 0; g < n; ++g) {
        const uint32_t id =
            add_link(gpu_vertex(g), m_host_vertex[node_of(g)], LinkKind::host_pcie, 0, pcie, half_path);
        m_gpu_up[g] = id;
        m_gpu_down[g] = id + 1;
      }
      if (gpu.scale_up_kind == ScaleUpKind::bridge) {
        m_mesh_link.assign(n * gpn, UINT32_MAX);
        for (int64_t g = 0; g + 1 < n; g += 2) {
          if (node_of(g) != node_of(g + 1)) continue;
          const uint32_t id = add_link(gpu_vertex(g), gpu_vertex(g + 1), LinkKind::scale_up, 0,
                                       gpu.scale_up_bytes_per_s, TimeNs::from_seconds(kScaleUpPathLatencyS));
          m_mesh_link[g * gpn + local_index(g + 1)] = id;
          m_mesh_link[(g + 1) * gpn + local_index(g)] = id + 1;
        }
      }
      return;
    }
  }
}

int64_t ClusterGraph::rail_owner(int64_t rail) const {
  const int64_t gpn = m_spec.gpus_per_node, nics = m_spec.nics_per_node;
  if (nics >= gpn) return rail % gpn;
  return rail * (gpn / nics);
}

std::vector<int32_t> node_rails_of_gpu(int64_t local, int64_t gpus_per_node, int64_t nics_per_node) {
  std::vector<int32_t> out;
  if (nics_per_node <= 0) return out;
  if (nics_per_node >= gpus_per_node) {
    for (int64_t r = local; r < nics_per_node; r += gpus_per_node) out.push_back(static_cast<int32_t>(r));
  } else {
    out.push_back(static_cast<int32_t>(local / (gpus_per_node / nics_per_node)));
  }
  return out;
}

std::vector<int32_t> ClusterGraph::rails_of(int64_t local) const {
  return node_rails_of_gpu(local, m_spec.gpus_per_node, m_spec.nics_per_node);
}

uint32_t ClusterGraph::nic_vertex(int64_t node, int64_t rail) const {
  return m_nic_vertex[node * m_spec.nics_per_node + rail];
}

void ClusterGraph::build_nics() {
  const int64_t gpn = m_spec.gpus_per_node, nics = m_spec.nics_per_node;
  const double pcie =
      m_spec.gpu.pcie_bytes_per_s > 0 ? m_spec.gpu.pcie_bytes_per_s : m_spec.fabric.port_bytes_per_s;
  // GPU <-> NIC: per (gpu, rail) pair; indexed by node·nics·max(1, gpn/nics)… kept simple as a map
  // from (node, rail, attached local) through `m_gpu_to_nic[(node * nics + rail) * share + k]`.
  const int64_t share = nics >= gpn ? 1 : gpn / nics;  // GPUs behind one NIC
  m_gpu_to_nic.assign(m_num_nodes * nics * share, UINT32_MAX);
  m_nic_to_gpu.assign(m_num_nodes * nics * share, UINT32_MAX);
  for (int64_t node = 0; node < m_num_nodes; ++node) {
    for (int64_t r = 0; r < nics; ++r) {
      const uint32_t v = add_vertex(VertexKind::nic, 0, node * nics + r);
      m_nic_vertex.push_back(v);
      for (int64_t k = 0; k < share; ++k) {
        const int64_t local = rail_owner(r) + k;
        const uint32_t id =
            add_link(gpu_vertex(node * gpn + local), v, LinkKind::nic_pcie, 0, pcie, TimeNs{});
        m_gpu_to_nic[(node * nics + r) * share + k] = id;
        m_nic_to_gpu[(node * nics + r) * share + k] = id + 1;
      }
    }
  }
}

uint32_t ClusterGraph::nic_uplink(int64_t gpu, int32_t rail) const {
  const int64_t gpn = m_spec.gpus_per_node, nics = m_spec.nics_per_node;
  if (nics <= 0 || rail < 0 || rail >= nics) return UINT32_MAX;
  const int64_t share = nics >= gpn ? 1 : gpn / nics;
  const int64_t k = local_index(gpu) - rail_owner(rail);
  if (k < 0 || k >= share) return UINT32_MAX;
  return m_gpu_to_nic[(node_of(gpu) * nics + rail) * share + k];
}

void ClusterGraph::build_fabric() {
  const FabricSpec& fab = m_spec.fabric;
  const int64_t radix = fab.switch_radix, half = radix / 2;
  const double port = fab.port_bytes_per_s;
  // Link latency = wire + traversal of the switch it enters: same leaf = 2 NIC legs + 1 switch =
  // fabric.latency_s; every further switch adds switch_latency_s.
  const TimeNs nic_latency = TimeNs::from_seconds(std::max(0.0, fab.latency_s - fab.switch_latency_s) / 2);
  const TimeNs hop_latency = TimeNs::from_seconds(fab.switch_latency_s);
  const int64_t num_leaves = build_leaves(nic_latency, hop_latency);

  double nic_total = port * double(m_num_nodes * m_spec.nics_per_node);
  double min_up = nic_total;
  if (num_leaves == 1) {
    m_bisection = nic_total / 2;
    return;
  }
  // Upper tiers. Members of the current tier: (switch index, plane); all share `up` uplinks.
  int64_t up = std::max<int64_t>(1, std::llround(double(half) / m_spec.oversubscription));
  std::vector<TierMember> members;
  for (int64_t i = 0; i < num_leaves; ++i) members.push_back(TierMember{i, 0});
  for (int32_t t = 0;; ++t) {
    min_up = std::min(min_up, port * double(up) * double(members.size()));
    // Group by plane, keeping pod order.
    std::map<int64_t, std::vector<int64_t>> planes;
    for (const TierMember& m : members) planes[m.plane].push_back(m.sw);
    size_t largest = 0;
    for (const auto& [plane, list] : planes) largest = std::max(largest, list.size());
    m_tiers.emplace_back();
    Tier& upper = m_tiers.back();
    Tier& lower = m_tiers[t];
    if (int64_t(largest) <= radix) {
      build_top_tier(t, lower, upper, planes, up, hop_latency);
      break;
    }
    members = build_pod_tier(t, lower, upper, planes, up, hop_latency);
    up = radix - half;
    SIMRUN_ASSERT(int(m_tiers.size()) < kMaxTiers,
                  "fabric needs too many tiers (check() should have refused)");
  }
  m_bisection = min_up / 2;
}

int64_t ClusterGraph::build_leaves(TimeNs nic_latency, TimeNs hop_latency) {
  const int64_t half = m_spec.fabric.switch_radix / 2;
  const int64_t nics = m_spec.nics_per_node;
  m_nic_leaf.assign(m_num_nodes * nics, 0);
  int64_t num_leaves = 0;
  if (m_spec.shape == FabricShape::rail_optimized) {
    const int64_t groups = (m_num_nodes + half - 1) / half;  // scalable units of `half` nodes
    num_leaves = groups * nics;
    for (int64_t node = 0; node < m_num_nodes; ++node)
      for (int64_t r = 0; r < nics; ++r) m_nic_leaf[node * nics + r] = (node / half) * nics + r;
  } else {
    num_leaves = (m_num_nodes * nics + half - 1) / half;
    for (int64_t p = 0; p < m_num_nodes * nics; ++p) m_nic_leaf[p] = p / half;
  }
  m_tiers.emplace_back();
  for (int64_t i = 0; i < num_leaves; ++i)
    m_tiers[0].switches.push_back(Switch{add_vertex(VertexKind::fabric_switch, 1, i), {}, {}});
  m_nic_to_leaf.resize(m_num_nodes * nics);
  m_leaf_to_nic.resize(m_num_nodes * nics);
  for (int64_t p = 0; p < m_num_nodes * nics; ++p) {
    const uint32_t id =
        add_link(m_nic_vertex[p], m_tiers[0].switches[m_nic_leaf[p]].vertex, LinkKind::nic_port, 0,
                 m_spec.fabric.port_bytes_per_s, nic_latency + hop_latency, nic_latency);
    m_nic_to_leaf[p] = id;
    m_leaf_to_nic[p] = id + 1;
  }
  return num_leaves;
}

void ClusterGraph::build_top_tier(int32_t t, Tier& lower, Tier& upper,
                                  const std::map<int64_t, std::vector<int64_t>>& planes, int64_t up,
                                  TimeNs hop_latency) {
  const int64_t radix = m_spec.fabric.switch_radix;
  const double port = m_spec.fabric.port_bytes_per_s;
  for (const auto& [plane, list] : planes) {
    const int64_t need = (int64_t(list.size()) * up + radix - 1) / radix;
    int64_t c = std::max<int64_t>(1, need);
    while (up % c != 0) ++c;
    const int64_t bundle = up / c;
    std::vector<int64_t> tops;
    for (int64_t k = 0; k < c; ++k) {
      const int64_t idx = int64_t(upper.switches.size());
      upper.switches.push_back(Switch{add_vertex(VertexKind::fabric_switch, t + 2, idx), {}, {}});
      tops.push_back(idx);
    }
    for (int64_t sw : list) {
      for (int64_t k = 0; k < c; ++k) {
        const uint32_t id = add_link(lower.switches[sw].vertex, upper.switches[tops[k]].vertex,
                                     LinkKind::fabric, t + 1, port * double(bundle), hop_latency);
        lower.switches[sw].up_links.push_back(id);
        lower.switches[sw].up_switch.push_back(static_cast<uint32_t>(tops[k]));
      }
    }
  }
}

std::vector<ClusterGraph::TierMember> ClusterGraph::build_pod_tier(
    int32_t t, Tier& lower, Tier& upper, const std::map<int64_t, std::vector<int64_t>>& planes, int64_t up,
    TimeNs hop_latency) {
  const int64_t half = m_spec.fabric.switch_radix / 2;
  const double port = m_spec.fabric.port_bytes_per_s;
  std::vector<TierMember> next;
  for (const auto& [plane, list] : planes) {
    for (size_t start = 0; start < list.size(); start += size_t(half)) {
      const size_t end = std::min(list.size(), start + size_t(half));
      std::vector<int64_t> mids;
      for (int64_t i = 0; i < up; ++i) {
        const int64_t idx = int64_t(upper.switches.size());
        upper.switches.push_back(Switch{add_vertex(VertexKind::fabric_switch, t + 2, idx), {}, {}});
        mids.push_back(idx);
        next.push_back(TierMember{idx, plane * up + i});
      }
      for (size_t m = start; m < end; ++m) {
        for (int64_t i = 0; i < up; ++i) {
          const uint32_t id = add_link(lower.switches[list[m]].vertex, upper.switches[mids[i]].vertex,
                                       LinkKind::fabric, t + 1, port, hop_latency);
          lower.switches[list[m]].up_links.push_back(id);
          lower.switches[list[m]].up_switch.push_back(static_cast<uint32_t>(mids[i]));
        }
      }
    }
  }
  return next;
}

int64_t ClusterGraph::leaf_of_nic(int64_t node, int64_t rail) const {
  return m_nic_leaf[node * m_spec.nics_per_node + rail];
}

int64_t ClusterGraph::fabric_port_of_nic(int64_t node, int64_t rail) const {
  const int64_t half = m_spec.fabric.switch_radix / 2;
  const int64_t port =
      m_spec.shape == FabricShape::rail_optimized ? node % half : (node * m_spec.nics_per_node + rail) % half;
  return leaf_of_nic(node, rail) * half + port;
}

void ClusterGraph::append_link(Route& r, uint32_t link) const {
  r.links.push_back(link);
  r.latency += m_links[link].latency;
}

void ClusterGraph::append_nvlink_path(Route& r, int64_t a, int64_t b) const {
  if (a == b) return;
  const int64_t gpn = m_spec.gpus_per_node;
  if (!m_mesh_link.empty() && node_of(a) == node_of(b)) {
    const uint32_t direct = m_mesh_link[a * gpn + local_index(b)];
    if (direct != UINT32_MAX) {
      append_link(r, direct);
      return;
    }
  }
  SIMRUN_ASSERT(!m_gpu_up.empty(),
                "no scale-up path between GPUs " + std::to_string(a) + " and " + std::to_string(b));
  append_link(r, m_gpu_up[a]);
  append_link(r, m_gpu_down[b]);
}

void ClusterGraph::append_fabric_path(Route& r, int64_t leaf_a, int64_t leaf_b, int64_t dst_port) const {
  if (leaf_a == leaf_b) {
    r.switch_hops += 1;
    return;
  }
  std::vector<uint32_t> down;
  int64_t a = leaf_a, b = leaf_b;
  int32_t t = 0;
  int64_t digit = dst_port;  // d / (U_0 · … · U_{t-1}): the destination's digit at tier t
  while (a != b) {
    const Switch& sa = m_tiers[t].switches[a];
    const Switch& sb = m_tiers[t].switches[b];
    SIMRUN_ASSERT(!sa.up_links.empty() && sa.up_links.size() == sb.up_links.size(),
                  "fabric tiers are not uniform");
    const int64_t up = int64_t(sa.up_links.size());
    const size_t j = size_t(digit % up);
    digit /= up;
    append_link(r, sa.up_links[j]);
    down.push_back(sb.up_links[j] + 1);
    a = sa.up_switch[j];
    b = sb.up_switch[j];
    ++t;
  }
  for (auto it = down.rbegin(); it != down.rend(); ++it) append_link(r, *it);
  r.switch_hops += 2 * t + 1;
}

Route ClusterGraph::route(int64_t src, int64_t dst, const RouteOptions& options) const {
  SIMRUN_ASSERT(src >= 0 && src < num_gpus() && dst >= 0 && dst < num_gpus(), "route between unknown GPUs");
  Route r;
  if (src == dst) return r;
  if (domain_of(src) == domain_of(dst)) {
    append_nvlink_path(r, src, dst);
    return r;
  }
  const int64_t gpn = m_spec.gpus_per_node, nics = m_spec.nics_per_node;
  const int64_t share = nics >= gpn ? 1 : gpn / nics;
  const int64_t rail = options.rail >= 0 ? options.rail % nics : rails_of(local_index(src)).front();
  const int64_t sn = node_of(src), dn = node_of(dst);
  // Source leg: the GPU itself if it sits behind NIC `rail`, else PXN through the rail owner.
  auto attached = [&](int64_t local) {
    return local >= rail_owner(rail) && local < rail_owner(rail) + share;
  };
  int64_t src_gpu = src;
  if (!attached(local_index(src))) {
    src_gpu = sn * gpn + rail_owner(rail);
    append_nvlink_path(r, src, src_gpu);
  }
  append_link(r, m_gpu_to_nic[(sn * nics + rail) * share + (local_index(src_gpu) - rail_owner(rail))]);
  append_link(r, m_nic_to_leaf[sn * nics + rail]);
  append_fabric_path(r, leaf_of_nic(sn, rail), leaf_of_nic(dn, rail), fabric_port_of_nic(dn, rail));
  append_link(r, m_leaf_to_nic[dn * nics + rail]);
  int64_t dst_gpu = dst;
  if (!attached(local_index(dst))) dst_gpu = dn * gpn + rail_owner(rail);
  append_link(r, m_nic_to_gpu[(dn * nics + rail) * share + (local_index(dst_gpu) - rail_owner(rail))]);
  append_nvlink_path(r, dst_gpu, dst);
  r.uses_fabric = true;
  return r;
}

int ClusterGraph::bfs_hops(uint32_t from, uint32_t to) const {
  std::vector<int> dist(boost::num_vertices(m_graph), -1);
  dist[from] = 0;
  struct Recorder : boost::default_bfs_visitor {
    std::vector<int>* d;
    void tree_edge(Graph::edge_descriptor e, const Graph& g) const {
      (*d)[boost::target(e, g)] = (*d)[boost::source(e, g)] + 1;
    }
  } vis;
  vis.d = &dist;
  boost::breadth_first_search(m_graph, boost::vertex(from, m_graph), boost::visitor(vis));
  return dist[to];
}

std::string ClusterGraph::vertex_name(uint32_t v) const {
  const GraphVertex& x = m_vertices[v];
  switch (x.kind) {
    case VertexKind::gpu:
      return "gpu" + std::to_string(x.index);
    case VertexKind::nvswitch:
      return "nvswitch" + std::to_string(x.index);
    case VertexKind::host:
      return "host" + std::to_string(x.index);
    case VertexKind::nic:
      return "nic" + std::to_string(x.index / std::max<int64_t>(1, m_spec.nics_per_node)) + "_" +
             std::to_string(x.index % std::max<int64_t>(1, m_spec.nics_per_node));
    case VertexKind::fabric_switch:
      return (x.tier == 1   ? "leaf"
              : x.tier == 2 ? "spine"
                            : "core" + std::to_string(x.tier - 2) + "_") +
             std::to_string(x.index);
  }
  return "?";
}

ClusterSummary ClusterGraph::summary() const {
  ClusterSummary s;
  s.gpus = num_gpus();
  s.nodes = m_num_nodes;
  s.scale_up_domains = m_num_domains;
  s.nvswitches = int64_t(m_nvswitch_vertex.size());
  s.nics = int64_t(m_nic_vertex.size());
  for (const Tier& t : m_tiers) s.switches_per_tier.push_back(int64_t(t.switches.size()));
  for (size_t i = 0; i < m_links.size(); i += 2)
    if (m_links[i].kind == LinkKind::fabric) ++s.fabric_links;
  s.directed_links = int64_t(m_links.size());
  s.bisection_bytes_per_s = m_bisection;
  const GpuSpec& gpu = m_spec.gpu;
  s.injection_scale_up_bytes_per_s = gpu.scale_up_kind == ScaleUpKind::pcie ? 0 : gpu.scale_up_bytes_per_s;
  const int64_t dom = m_gpus_per_domain;
  if (gpu.scale_up_kind == ScaleUpKind::nvswitch) {
    s.scale_up_bisection_bytes_per_s = gpu.scale_up_bytes_per_s * double(dom / 2);
  } else if (gpu.scale_up_kind == ScaleUpKind::mesh) {
    const double per_peer = gpu.scale_up_bytes_per_s / double(std::max<int64_t>(1, gpu.scale_up_domain - 1));
    s.scale_up_bisection_bytes_per_s = per_peer * double(dom / 2) * double(dom - dom / 2);
  } else {
    s.scale_up_bisection_bytes_per_s =
        (gpu.pcie_bytes_per_s > 0 ? gpu.pcie_bytes_per_s : 32e9) * double(dom / 2);
  }
  if (m_num_domains > 1) {
    s.injection_scale_out_bytes_per_s =
        m_spec.fabric.port_bytes_per_s * double(m_spec.nics_per_node) / double(m_spec.gpus_per_node);
  }
  return s;
}

bool ClusterGraph::write_dot(std::ostream& out, size_t max_vertices) const {
  if (m_vertices.size() > max_vertices) return false;
  out << "graph cluster {\n  // " << m_spec.num_gpus << " x " << m_spec.gpu.id;
  if (m_num_domains > 1)
    out << ", " << m_spec.fabric.id << " " << to_string_shape() << "\n";
  else
    out << "\n";
  out << "  node [shape=box, fontsize=10];\n";
  for (uint32_t v = 0; v < m_vertices.size(); ++v) {
    const char* shape = m_vertices[v].kind == VertexKind::gpu   ? "box"
                        : m_vertices[v].kind == VertexKind::nic ? "ellipse"
                                                                : "hexagon";
    out << "  " << vertex_name(v) << " [shape=" << shape << "];\n";
  }
  // One undirected edge per cable: the even (a->b) half of each pair, found through Boost.
  auto [it, end] = boost::edges(m_graph);
  for (; it != end; ++it) {
    const uint32_t link = m_graph[*it].link;
    if (link % 2 != 0) continue;
    out << "  " << vertex_name(uint32_t(boost::source(*it, m_graph))) << " -- "
        << vertex_name(uint32_t(boost::target(*it, m_graph))) << " [label=\""
        << gbps(m_links[link].bytes_per_s) << "\"];\n";
  }
  out << "}\n";
  return true;
}

}  // namespace simrun
