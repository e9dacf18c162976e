// NCCL-style algorithm/protocol selection: NCCL 2.30's cost model (src/graph/tuning.cc
// ncclTopoTuneModel + ncclTopoGetAlgoTime, src/enqueue.cc topoGetAlgoInfo; constants verbatim
// from ../shared/reference/ecosystem.md §1.2-1.6) evaluated on a group's shape, taking the
// per-GPU NVLink and per-node NIC bandwidth from the cluster instead of NCCL's graph search.
// The argmin over enabled (algorithm, protocol) pairs is the choice; NCCL_ALGO/NCCL_PROTO-style
// overrides restrict it. Also holds the protocol and link-efficiency factors the simulated
// collectives use, so the tuner and the simulation read the same numbers.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "simrun/sim/scenario/comm_types.hpp"
#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

// NCCL's algorithms (NCCL_ALGO names), plus simrun's hierarchical form and the p2p pattern that
// all_to_all and send_recv use (NCCL runs those as grouped send/recv, outside the tuner).
enum class Algorithm { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, hierarchical, p2p };
enum class Protocol { ll, ll128, simple };  // NCCL_PROTO names LL, LL128, Simple

inline constexpr int kNumAlgorithms = 9;
inline constexpr int kNumProtocols = 3;

const char* to_string(Algorithm a);  // "Ring", "Tree", "NVLS", "NVLSTree", "PAT", ...
const char* to_string(Protocol p);   // "LL", "LL128", "Simple"
// Case-insensitive; accept NCCL spellings ("ring", "NVLSTree", "collnetdirect", "simple",
// "ll128") and "hierarchical"/"hier". nullopt when unknown.
std::optional<Algorithm> parse_algorithm(std::string_view name);
std::optional<Protocol> parse_protocol(std::string_view name);
std::vector<std::string> algorithm_names();
std::vector<std::string> protocol_names();

// NCCL's compute-capability row: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell (from the GPU's
// architecture name; AMD CDNA3+ use the Hopper row, CDNA2 the Ampere row).
int compute_capability_index(const GpuSpec& gpu);

// Whether NCCL sets NVLink SHARP up for a communicator with `local_ranks` GPUs in each NVLink
// domain: an NVSwitch with multicast (Hopper and later), and more than two of the
// communicator's GPUs on it (src/transport/nvls.cc, ncclNvlsInit: no NVLS for gpuCount <= 2,
// or an NVLink clique of <= 2 across nodes).
bool nvls_usable(const GpuSpec& gpu, int64_t local_ranks);

// Fraction of raw link bandwidth that NCCL's Simple protocol moves as payload.
// NVLink: NCCL's per-link figure over the raw 25/50 GB/s link (src/graph/topo.h: SM80 20.0,
// SM90 20.6, SM100 40.1 GB/s) — the "~20% protocol overhead" NVIDIA quotes (nccl-tests #212).
// Network: NVIDIA's 46-48 GB/s per NDR 400G NIC and 24 GB/s per HDR 200G NIC (nccl-tests
// #290, #119) are 0.94-0.96 of line rate; 0.94 is used.
// PCIe: NCCL's bandwidth of an x16 link over its raw rate (src/graph/topo.cc, ecosystem.md §1:
// Gen4 24 of ~31.5 GB/s, Gen5 48 of 64).
double scale_up_efficiency(const GpuSpec& gpu);
inline constexpr double kNetworkEfficiency = 0.94;
inline constexpr double kPcieEfficiency = 0.75;

// The communicator as the tuner sees it.
struct GroupShape {
  int64_t ranks = 1;             // nRanks
  int64_t nodes = 1;             // nNodes: scale-up domains spanned
  int64_t ranks_per_node = 1;    // ppn (largest)
  int64_t rails = 0;             // NICs per node usable by the group (0 on one node)
  double intra_bytes_per_s = 0;  // per GPU per direction, effective (NVLink × efficiency)
  double inter_bytes_per_s = 0;  // per node per direction, effective (rails × port × efficiency)
  int cc_index = 2;
  bool nvls = false;       // NVSwitch with in-switch reduction in every domain
  bool nvswitch = true;    // scale-up through a switch (not mesh/bridge/PCIe)
  bool pcie_only = false;  // no NVLink between peers (NCCL's PCI latency row)
  bool operator==(const GroupShape&) const = default;
};

struct TunerChoice {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;         // after NCCL's small-message channel reduction
  double predicted_us = 0;  // NCCL-model time
  double latency_us = 0;    // of which the latency term
};

struct CostEntry {
  Algorithm algorithm;
  Protocol protocol;
  double latency_us = 0;  // NCCL-model latency
  double algbw_GBps = 0;  // NCCL-model bandwidth (0 = disabled)
  double time_us = -1;    // -1 = disabled
  std::string why_disabled;
};

class CollectiveTuner {
 public:
  // Max channels NCCL would use for rings/trees on this GPU generation.
  static int max_channels(const GroupShape& shape);

  // Why `algo` cannot run `op` on this group (nullopt when it can). Protocol-independent rules
  // of ncclTopoTuneModel plus simrun's (e.g. hierarchical needs > 1 node).
  static std::optional<std::string> unsupported(CollectiveOp op, Algorithm algo, const GroupShape& shape);
  static std::optional<std::string> unsupported(CollectiveOp op, Algorithm algo, Protocol proto,
                                                const GroupShape& shape);

  // The full NCCL-style cost table for one call; `bytes` is nccl-tests' size (total buffer for
  // all_gather/reduce_scatter).
  static std::vector<CostEntry> cost_table(CollectiveOp op, const GroupShape& shape, double bytes);

  // Argmin over the enabled entries restricted to `algo`/`proto` when given. Throws InputError
  // ("collective", "algorithm"/"protocol", why) when the restriction leaves nothing.
  static TunerChoice choose(CollectiveOp op, const GroupShape& shape, double bytes,
                            std::optional<Algorithm> algo = std::nullopt,
                            std::optional<Protocol> proto = std::nullopt);

  // Channels NCCL would run `bytes` on (its nc-- loop on thread thresholds).
  static int channels_for(CollectiveOp op, Algorithm algo, Protocol proto, const GroupShape& shape,
                          double bytes);

  // Latency constants (µs), NCCL 2.30 verbatim: base per (algo, proto), per hop per
  // (hw = NVLink|PCI|NET, algo, proto).
  static double base_latency_us(Algorithm algo, Protocol proto);
  enum class Hw { nvlink, pci, net };
  static double hw_latency_us(Hw hw, Algorithm algo, Protocol proto);
  // Per-step latency inside a domain (NVLink or PCI row) and across the network, as
  // ncclTopoTuneModel composes them (network steps include the 1 µs post overhead, ×3 for Simple).
  static double intra_step_us(Algorithm algo, Protocol proto, const GroupShape& shape);
  static double inter_step_us(Algorithm algo, Protocol proto, const GroupShape& shape);
  // Payload rate limit of a protocol on `channels` channels as NCCL models it (LL: llMaxBw
  // busbw; LL128: perChMaxRingLL128Bw per channel), in busbw bytes/s; +inf when unlimited.
  static double protocol_busbw_cap(Algorithm algo, Protocol proto, const GroupShape& shape, int channels);
  // Payload fraction of wire bytes: LL 0.5 (8-byte lines carry 4 bytes), LL128 120/128, Simple 1.
  static double protocol_efficiency(Protocol proto);
  // NCCL's nvlsEfficiency (tuning.cc): the fraction of NVLink bandwidth NVLS moves as payload,
  // 0.85 on Hopper, 0.74 on Blackwell.
  static double nvls_efficiency(const GroupShape& shape);
};

// Bytes each GPU's switch link carries per payload byte when NVLS runs `op` over `n` GPUs of one
// NVSwitch domain, up (GPU to switch) and down. all_reduce: the multimem ld_reduce of its 1/n
// shard pulls S from it and returns S/n, the multicast store sends S/n and delivers S:
// (n+1)/n each way. all_gather: S/n up, (n−1)/n down. reduce_scatter: S up, S/n down.
// Beyond a board's kBoardScaleUpDomain ranks (an NVL72 rack) the all-reduce's bus bandwidth stops
// growing with n, as NCCL's own model has it (ncclTopoTuneModel: NVLS busBw from bwIntra ·
// nvlsEfficiency, algbw = busBw · n/(2(n−1))) and as measured: 838 GB/s busbw on 8 B200, 835–847 on
// all 72 GPUs of a GB200 NVL72 rack (shared/reference/measured-microbenchmarks.md). So the bytes
// per link grow as 2(n−1)/n from their 8-rank value: max((n+1)/n, 9/8 · (n−1)/n · 8/7).
struct NvlsLinkBytes {
  double up = 1, down = 1;
};
NvlsLinkBytes nvls_link_bytes(CollectiveOp op, int64_t n);

// Link-disjoint rings over `members` GPUs of a full mesh (Infinity Fabric) that RCCL spreads
// its channels over (members − 1 but for 2, 4 and 6 GPUs; collective_algorithms.cpp finds them).
int mesh_ring_count(int64_t members);

}  // namespace simrun
