// Hardware built in code for the engine/network/collective tests (no catalog files). Figures are
// those of ../shared/reference/hardware.md with the section they come from.
#pragma once

#include <memory>
#include <optional>

#include "hardware_fixtures.hpp"
#include "simrun/sim/collective_sweep.hpp"
#include "simrun/sim/simulation.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun::test {

// hardware.md §3: H800 export NVLink, 400 GB/s bidirectional (200 per direction), NVSwitch gen 3.
inline GpuSpec h800() {
  GpuSpec g = h100_sxm();
  g.id = "h800-sxm";
  g.scale_up_bytes_per_s = 200e9;
  return g;
}

// hardware.md §3/§5.1/§5.2: NVLink 3 via NVSwitch gen 2, 600 GB/s bidirectional (300 per
// direction), no in-switch reduction; PCIe Gen4 x16 32 GB/s per direction.
inline GpuSpec a100() {
  GpuSpec g;
  g.id = "a100-80gb";
  g.vendor = "NVIDIA";
  g.architecture = "Ampere";
  g.scale_up_kind = ScaleUpKind::nvswitch;
  g.scale_up_bytes_per_s = 300e9;
  g.scale_up_domain = 8;
  g.nvls = false;
  g.pcie_bytes_per_s = 32e9;
  return g;
}

// hardware.md §3/§6 gb200-nvl72: NVLink 5, 1,800 GB/s bidirectional, 72-GPU domain, 4 GPUs per tray.
inline GpuSpec gb200() {
  GpuSpec g = h100_sxm();
  g.id = "gb200";
  g.architecture = "Blackwell";
  g.scale_up_bytes_per_s = 900e9;
  g.scale_up_domain = 72;
  return g;
}

// hardware.md §6 amd-mi300x-platform: full mesh, 7 Infinity Fabric links of 64 GB/s per direction.
inline GpuSpec mi300x() {
  GpuSpec g;
  g.id = "mi300x";
  g.vendor = "AMD";
  g.architecture = "CDNA 3";
  g.scale_up_kind = ScaleUpKind::mesh;
  g.scale_up_bytes_per_s = 448e9;
  g.scale_up_domain = 8;
  g.pcie_bytes_per_s = 64e9;
  return g;
}

// hardware.md §5.3: HDR 200 Gb/s = 25 GB/s per direction, QM8700 radix 40.
inline FabricSpec hdr() {
  FabricSpec f = ib_ndr();
  f.id = "ib-hdr";
  f.port_bytes_per_s = 25e9;
  f.switch_radix = 40;
  return f;
}

inline ClusterGraphSpec cluster(const GpuSpec& gpu, int64_t gpus, int64_t gpus_per_node = 8,
                                std::optional<FabricSpec> fabric = std::nullopt, int64_t nics_per_node = -1) {
  ClusterGraphSpec s;
  s.gpu = gpu;
  s.fabric = fabric ? *fabric : ib_ndr();
  s.num_gpus = gpus;
  s.gpus_per_node = gpus_per_node;
  s.nics_per_node = nics_per_node > 0 ? nics_per_node : gpus_per_node;
  return s;
}

inline std::shared_ptr<const ClusterGraph> graph(const ClusterGraphSpec& s) {
  return std::make_shared<ClusterGraph>(s);
}

// Runs one collective to completion in a fresh simulation.
inline CollectiveResult run_one(std::shared_ptr<const ClusterGraph> g, CollectiveRequest req,
                                SimulationOptions opt = {}) {
  Simulation sim(std::move(g), opt);
  std::optional<CollectiveResult> out;
  sim.collectives().run(req, [&](const CollectiveResult& r) { out = r; });
  sim.run();
  if (!out) throw std::logic_error("collective did not complete");
  return *out;
}

inline CollectiveRequest request(CollectiveOp op, double bytes, std::optional<Algorithm> algo = std::nullopt,
                                 std::optional<Protocol> proto = std::nullopt) {
  CollectiveRequest r;
  r.op = op;
  r.bytes = bytes;
  r.algorithm = algo;
  r.protocol = proto;
  return r;
}

// Bandwidth-only model: raw link rates, no latency (textbook exercises, closed forms).
inline SimulationOptions ideal() {
  SimulationOptions o;
  o.efficiency = LinkEfficiency::ideal;
  o.collectives.latency = LatencyModel::none;
  return o;
}

}  // namespace simrun::test
