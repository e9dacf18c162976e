// NCCL's cost model and selection (NVIDIA/nccl 2.30.7 src/graph/tuning.cc, src/enqueue.cc), with
// the constants copied verbatim from ../shared/reference/ecosystem.md §1.2 and the formulas of
// §1.3-1.6. Where NCCL reads its graph search (nChannels, bwIntra, bwInter) this uses the
// cluster's effective NVLink and NIC bandwidth (ecosystem.md §1.7 "do not re-implement the graph
// search").
#include "simrun/sim/collectives/collective_tuner.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>

#include "simrun/common/error.hpp"
#include "simrun/common/text.hpp"

namespace simrun {

namespace {

constexpr int LL = 0, LL128 = 1, SIMPLE = 2;
constexpr int TREE = 0, RING = 1, NVLS = 4, NVLS_TREE = 5, PAT = 6;

// baseLatencies (µs) [algo][LL, LL128, Simple]
constexpr double kBaseLat[7][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0},      {0, 0, 0},
                                   {0, 0, 0},        {0, 0, 0},        {8.0, 8.0, 8.0}};
// hwLatencies (µs per step/hop) [hw NVLINK, PCI, NET][algo][proto]
constexpr double kHwLat[3][7][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// llMaxBws (GB/s) [row][N1, N2, N4]
constexpr double kLlMaxBw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChMaxRingLL128Bw[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double kPerChMaxTreeLL128Bw[4][3] = {
    {20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChMaxNVLSTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// treeCorrectionFactor [proto][log2(nBytes/64)]
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// NCCL_NET_OVERHEAD default on Intel x86 (µs), ×3 for Simple.
constexpr double kNetOverheadUs = 1.0;
// Thread limits and thresholds (src/include/comm.h, enqueue.cc).
constexpr int kMaxThreads[3] = {512, 640, 512};  // LL, LL128, Simple
constexpr double kThreadThreshold[3] = {8, 8, 64};

int log2i(int64_t v) {
  int r = 0;
  while (v > 1) {
    v >>= 1;
    ++r;
  }
  return r;
}

int node_index(const GroupShape& s) { return s.nodes <= 2 ? int(s.nodes - 1) : 2; }

}  // namespace

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::tree:
      return "Tree";
    case Algorithm::ring:
      return "Ring";
    case Algorithm::collnet_direct:
      return "CollNetDirect";
    case Algorithm::collnet_chain:
      return "CollNetChain";
    case Algorithm::nvls:
      return "NVLS";
    case Algorithm::nvls_tree:
      return "NVLSTree";
    case Algorithm::pat:
      return "PAT";
    case Algorithm::hierarchical:
      return "Hierarchical";
    case Algorithm::p2p:
      return "P2P";
  }
  return "?";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return "LL";
    case Protocol::ll128:
      return "LL128";
    case Protocol::simple:
      return "Simple";
  }
  return "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  const std::string n = spelling_key(name);
  if (n == "tree") return Algorithm::tree;
  if (n == "ring") return Algorithm::ring;
  if (n == "collnetdirect") return Algorithm::collnet_direct;
  if (n == "collnetchain") return Algorithm::collnet_chain;
  if (n == "nvls") return Algorithm::nvls;
  if (n == "nvlstree") return Algorithm::nvls_tree;
  if (n == "pat") return Algorithm::pat;
  if (n == "hierarchical" || n == "hier") return Algorithm::hierarchical;
  if (n == "p2p") return Algorithm::p2p;
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  const std::string n = spelling_key(name);
  if (n == "ll") return Protocol::ll;
  if (n == "ll128") return Protocol::ll128;
  if (n == "simple") return Protocol::simple;
  return std::nullopt;
}

std::vector<std::string> algorithm_names() {
  return {"Ring", "Tree", "NVLS", "NVLSTree", "PAT", "CollNetDirect", "CollNetChain", "Hierarchical", "P2P"};
}
std::vector<std::string> protocol_names() { return {"LL", "LL128", "Simple"}; }

int compute_capability_index(const GpuSpec& gpu) {
  const std::string a = spelling_key(gpu.architecture);
  if (a.find("blackwell") != std::string::npos || a.find("rubin") != std::string::npos) return 3;
  if (a.find("hopper") != std::string::npos) return 2;
  if (a.find("ampere") != std::string::npos) return 1;
  if (a.find("volta") != std::string::npos) return 0;
  if (a.find("cdna2") != std::string::npos || a.find("cdna 2") != std::string::npos) return 1;
  if (gpu.vendor == "AMD") return 2;
  return 2;
}

bool nvls_usable(const GpuSpec& gpu, int64_t local_ranks) {
  return gpu.nvls && gpu.scale_up_kind == ScaleUpKind::nvswitch && compute_capability_index(gpu) >= 2 &&
         local_ranks > 2;
}

double scale_up_efficiency(const GpuSpec& gpu) {
  if (gpu.scale_up_kind == ScaleUpKind::pcie) return kPcieEfficiency;
  switch (compute_capability_index(gpu)) {
    case 0:
      return 20.0 / 25.0;  // SM70: 20.0 GB/s per 25 GB/s NVLink 2
    case 1:
      return 20.0 / 25.0;  // SM80: 20.0 per 25 GB/s NVLink 3 link
    case 2:
      return 20.6 / 25.0;  // SM90: 20.6 per 25 GB/s NVLink 4 link
    default:
      return 40.1 / 50.0;  // SM100: 40.1 per 50 GB/s NVLink 5 link
  }
}

double CollectiveTuner::nvls_efficiency(const GroupShape& shape) {
  return kNvlsEfficiency[std::clamp(shape.cc_index, 0, 3)];
}

NvlsLinkBytes nvls_link_bytes(CollectiveOp op, int64_t n) {
  const double nd = double(std::max<int64_t>(1, n));
  switch (op) {
    case CollectiveOp::all_reduce: {
      const double board = double(kBoardScaleUpDomain);
      const double constant_busbw = (board + 1) / board * ((nd - 1) / nd) * board / (board - 1);
      const double per_byte = std::max((nd + 1) / nd, constant_busbw);
      return {per_byte, per_byte};
    }
    case CollectiveOp::all_gather:
      return {1 / nd, (nd - 1) / nd};
    default:
      return {1, 1 / nd};  // reduce_scatter
  }
}

int CollectiveTuner::max_channels(const GroupShape& shape) {
  if (shape.pcie_only) return 4;
  return shape.cc_index >= 2 ? 16 : 8;
}

double CollectiveTuner::base_latency_us(Algorithm algo, Protocol proto) {
  const int a = static_cast<int>(algo);
  if (a > PAT) return algo == Algorithm::hierarchical ? kBaseLat[RING][int(proto)] : 0.0;
  return kBaseLat[a][static_cast<int>(proto)];
}

double CollectiveTuner::hw_latency_us(Hw hw, Algorithm algo, Protocol proto) {
  int a = static_cast<int>(algo);
  if (a > PAT) a = RING;  // hierarchical and p2p hop like rings
  return kHwLat[static_cast<int>(hw)][a][static_cast<int>(proto)];
}

double CollectiveTuner::intra_step_us(Algorithm algo, Protocol proto, const GroupShape& shape) {
  const Hw intra = shape.pcie_only ? Hw::pci : Hw::nvlink;
  double lat = hw_latency_us(intra, algo, proto);
  if (lat == 0) lat = hw_latency_us(intra, Algorithm::ring, proto);
  if (shape.nodes > 1) lat = std::max(lat, kNetOverheadUs * (proto == Protocol::simple ? 3 : 1));
  return lat;
}

double CollectiveTuner::inter_step_us(Algorithm algo, Protocol proto, const GroupShape& shape) {
  // ppn == 1 uses the Tree row (ncclTopoTuneModel); latencyInter is 0 for the IB plugin.
  const Algorithm row = shape.ranks_per_node == 1 ? Algorithm::tree : algo;
  double lat = hw_latency_us(Hw::net, row, proto);
  if (lat == 0) lat = hw_latency_us(Hw::net, Algorithm::ring, proto);
  return lat;
}

double CollectiveTuner::protocol_efficiency(Protocol proto) {
  switch (proto) {
    case Protocol::ll:
      return 0.5;
    case Protocol::ll128:
      return 0.92;  // NCCL's 120/128 factor as written in tuning.cc
    case Protocol::simple:
      return 1.0;
  }
  return 1.0;
}

double CollectiveTuner::protocol_busbw_cap(Algorithm algo, Protocol proto, const GroupShape& shape,
                                           int channels) {
  const int idx = node_index(shape);
  const int cc = std::clamp(shape.cc_index, 0, 3);
  const int row = shape.nodes == 1 ? cc : 0;  // multi-node: CPU vendor row (Intel/ARM = 0)
  if (algo == Algorithm::ring || algo == Algorithm::p2p || algo == Algorithm::hierarchical) {
    if (proto == Protocol::ll) return kLlMaxBw[row][idx] * 1e9;
    if (proto == Protocol::ll128) return double(channels) * kPerChMaxRingLL128Bw[cc][idx] * 1e9;
  }
  if (algo == Algorithm::tree) {
    if (proto == Protocol::ll) return kLlMaxBw[row][idx] * 1e9;
    if (proto == Protocol::ll128) return double(channels) * kPerChMaxTreeLL128Bw[cc][idx] * 1e9;
    return double(channels) * kPerChMaxTreeBw[cc][idx] * 1e9;
  }
  return std::numeric_limits<double>::infinity();
}

namespace {

// Why an (algorithm, protocol) cannot run a call, as a code: the tuner's hot path (one choice per
// collective of every estimate) decides on the code and words it only when asked (reason_text).
enum class Disabled {
  none,
  p2p_op_not_p2p,  // all_to_all/send_recv with another algorithm
  p2p_not_p2p_op,  // P2P for a collective
  tree_not_all_reduce,
  collnet,
  nvls_no_sharp,
  nvls_op,
  nvls_multi_node,
  nvls_arity,
  nvls_tree_no_sharp,
  nvls_tree_op,
  nvls_tree_single_node,
  pat_op,
  pat_ppn,
  hierarchical_op,
  hierarchical_shape,
  simple_only,  // NVLS, NVLSTree, PAT with LL or LL128
  hierarchical_simple,
  ll128_no_nvlink,
  p2p_ll128,
  hierarchical_on_request,  // not disabled for an explicit request: only for the automatic choice
};

// The protocol-independent rules of ncclTopoTuneModel plus simrun's (e.g. hierarchical needs > 1 node).
Disabled disabled_code(CollectiveOp op, Algorithm algo, const GroupShape& s) {
  const bool p2p_op = op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv;
  if (p2p_op) return algo != Algorithm::p2p ? Disabled::p2p_op_not_p2p : Disabled::none;
  switch (algo) {
    case Algorithm::p2p:
      return Disabled::p2p_not_p2p_op;
    case Algorithm::ring:
      return Disabled::none;
    case Algorithm::tree:
      return op != CollectiveOp::all_reduce ? Disabled::tree_not_all_reduce : Disabled::none;
    case Algorithm::collnet_direct:
    case Algorithm::collnet_chain:
      return Disabled::collnet;
    case Algorithm::nvls:
      if (!s.nvls) return Disabled::nvls_no_sharp;
      if (op != CollectiveOp::all_reduce && op != CollectiveOp::all_gather &&
          op != CollectiveOp::reduce_scatter)
        return Disabled::nvls_op;
      if (s.nodes > 1) return Disabled::nvls_multi_node;
      if (op != CollectiveOp::all_reduce && s.ranks_per_node > 32) return Disabled::nvls_arity;
      return Disabled::none;
    case Algorithm::nvls_tree:
      if (!s.nvls) return Disabled::nvls_tree_no_sharp;
      if (op != CollectiveOp::all_reduce) return Disabled::nvls_tree_op;
      if (s.nodes == 1) return Disabled::nvls_tree_single_node;
      return Disabled::none;
    case Algorithm::pat:
      if (op != CollectiveOp::all_gather && op != CollectiveOp::reduce_scatter) return Disabled::pat_op;
      if (s.ranks_per_node != 1 || s.nodes != s.ranks) return Disabled::pat_ppn;
      return Disabled::none;
    case Algorithm::hierarchical:
      if (op != CollectiveOp::all_reduce && op != CollectiveOp::all_gather &&
          op != CollectiveOp::reduce_scatter)
        return Disabled::hierarchical_op;
      if (s.nodes < 2 || s.ranks_per_node < 2) return Disabled::hierarchical_shape;
      return Disabled::none;
  }
  return Disabled::none;
}

// The same with the protocol's rules.
Disabled disabled_code(CollectiveOp op, Algorithm algo, Protocol proto, const GroupShape& s) {
  if (const Disabled why = disabled_code(op, algo, s); why != Disabled::none) return why;
  if ((algo == Algorithm::nvls || algo == Algorithm::nvls_tree || algo == Algorithm::pat) &&
      proto != Protocol::simple)
    return Disabled::simple_only;
  if (algo == Algorithm::hierarchical && proto != Protocol::simple) return Disabled::hierarchical_simple;
  if (proto == Protocol::ll128 && (s.pcie_only || s.cc_index < 1)) return Disabled::ll128_no_nvlink;
  if (algo == Algorithm::p2p && proto == Protocol::ll128) return Disabled::p2p_ll128;
  return Disabled::none;
}

std::string reason_text(Disabled why, CollectiveOp op, Algorithm algo) {
  switch (why) {
    case Disabled::none:
      return "";
    case Disabled::p2p_op_not_p2p:
      return std::string(to_string(op)) + " runs as grouped send/recv (P2P); NCCL_ALGO does not apply";
    case Disabled::p2p_not_p2p_op:
      return std::string("P2P is the pattern of alltoall/sendrecv, not of ") + to_string(op);
    case Disabled::tree_not_all_reduce:
      return std::string("NCCL runs Tree only for all_reduce, not ") + to_string(op);
    case Disabled::collnet:
      return std::string(to_string(algo)) +
             " needs in-network reduction (IB SHARP, NCCL_COLLNET_ENABLE=1), which the fabric catalog does "
             "not describe";
    case Disabled::nvls_no_sharp:
      return "NVLS needs NVSwitch in-switch reduction (NVLink SHARP, NVSwitch gen 3+, Hopper or later)";
    case Disabled::nvls_op:
      return std::string("NCCL runs NVLS only for all_reduce, all_gather and reduce_scatter, not ") +
             to_string(op);
    case Disabled::nvls_multi_node:
      return "multi-node NVLS needs CollNet (IB SHARP); use NVLSTree for all_reduce across nodes";
    case Disabled::nvls_arity:
      return "NVLS all_gather/reduce_scatter supports at most 32 local ranks (NCCL_MAX_NVLS_ARITY)";
    case Disabled::nvls_tree_no_sharp:
      return "NVLSTree needs NVSwitch in-switch reduction (NVLink SHARP, NVSwitch gen 3+, Hopper or later)";
    case Disabled::nvls_tree_op:
      return std::string("NCCL runs NVLSTree only for all_reduce, not ") + to_string(op);
    case Disabled::nvls_tree_single_node:
      return "NVLSTree is disabled on a single node (NCCL); use NVLS";
    case Disabled::pat_op:
      return std::string("PAT runs only all_gather and reduce_scatter, not ") + to_string(op);
    case Disabled::pat_ppn:
      return "PAT needs one GPU per node (NCCL enables it only then)";
    case Disabled::hierarchical_op:
      return std::string("the hierarchical form exists for all_reduce, all_gather and reduce_scatter, not ") +
             to_string(op);
    case Disabled::hierarchical_shape:
      return "the hierarchical form needs several nodes with several GPUs each";
    case Disabled::simple_only:
      return std::string(to_string(algo)) + " runs only with the Simple protocol";
    case Disabled::hierarchical_simple:
      return "the hierarchical form runs with Simple";
    case Disabled::ll128_no_nvlink:
      return "LL128 needs NVLink between GPUs (NCCL enables it only on NVLink paths, cc >= 7.0)";
    case Disabled::p2p_ll128:
      return "send/recv uses LL (small) or Simple, not LL128";
    case Disabled::hierarchical_on_request:
      return "not an NCCL algorithm: only on request (algorithm hierarchical)";
  }
  return "";
}

}  // namespace

std::optional<std::string> CollectiveTuner::unsupported(CollectiveOp op, Algorithm algo,
                                                        const GroupShape& s) {
  const Disabled why = disabled_code(op, algo, s);
  if (why == Disabled::none) return std::nullopt;
  return reason_text(why, op, algo);
}

std::optional<std::string> CollectiveTuner::unsupported(CollectiveOp op, Algorithm algo, Protocol proto,
                                                        const GroupShape& s) {
  const Disabled why = disabled_code(op, algo, proto, s);
  if (why == Disabled::none) return std::nullopt;
  return reason_text(why, op, algo);
}

namespace {

// What every entry of one call's cost table reads: the group's size, channels and rates in
// NCCL's terms (ncclTopoTuneModel's nRanks, nChannels, compCapIndex, bw in GB/s) and the call's
// steps.
struct CallTerms {
  int64_t n;     // ranks
  int nch;       // max channels
  int idx;       // node_index: 1, 2 or more nodes
  int cc;        // compute capability index, clamped to the tables
  double intra;  // GB/s
  double inter;  // GB/s
  bool ar;       // all_reduce
  bool agrs;     // all_gather or reduce_scatter
  int64_t nsteps;
  double ring_bw;  // GB/s, the slower of the ring's hops
};

CallTerms call_terms(CollectiveOp op, const GroupShape& s) {
  CallTerms t;
  t.n = s.ranks;
  t.nch = CollectiveTuner::max_channels(s);
  t.idx = node_index(s);
  t.cc = std::clamp(s.cc_index, 0, 3);
  t.intra = s.intra_bytes_per_s / 1e9;
  t.inter = s.inter_bytes_per_s / 1e9;
  t.ar = op == CollectiveOp::all_reduce;
  t.agrs = op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter;
  t.nsteps = t.ar ? 2 * (t.n - 1) : (t.agrs ? t.n - 1 : t.n);
  t.ring_bw = s.nodes == 1 ? t.intra : (s.ranks_per_node == 1 ? t.inter : std::min(t.intra, t.inter));
  return t;
}

// Bandwidth (§1.3): busBw, then bus -> algorithm bandwidth, in GB/s.
double model_algbw_GBps(Algorithm algo, Protocol proto, const CallTerms& t, const GroupShape& s) {
  const int nch = t.nch, idx = t.idx, cc = t.cc;
  double bus = t.ring_bw;
  double ratio = (algo == Algorithm::ring || algo == Algorithm::nvls || algo == Algorithm::nvls_tree ||
                  algo == Algorithm::hierarchical)
                     ? double(t.n) / double(std::max<int64_t>(1, t.nsteps))
                     : 0.5;
  if (algo == Algorithm::nvls || algo == Algorithm::nvls_tree) {
    double intra_bw = t.intra * kNvlsEfficiency[cc] * double(nch - 1) / double(nch);
    intra_bw *= t.ar ? 2.0 : double(s.ranks_per_node - 1) / double(s.ranks_per_node);
    const double inter_bw = t.inter * ((s.nodes <= 2 && algo == Algorithm::nvls_tree) ? 2.0 : 1.0);
    bus = s.nodes > 1 ? std::min(intra_bw, inter_bw) : intra_bw;
    if (algo == Algorithm::nvls_tree) bus = std::min(bus, double(nch) * kPerChMaxNVLSTreeBw[cc][idx]);
  }
  if (algo == Algorithm::ring && proto == Protocol::ll)
    bus = std::min(kLlMaxBw[s.nodes == 1 ? cc : 0][idx], bus * 0.5);
  if (algo == Algorithm::ring && proto == Protocol::ll128)
    bus = std::min(bus * 0.92, double(nch) * kPerChMaxRingLL128Bw[cc][idx]);
  if (algo == Algorithm::tree) {
    bus = std::min(bus * 0.92, double(nch) * kPerChMaxTreeBw[cc][idx]);
    if (proto == Protocol::ll) bus = std::min(bus / 3.8, kLlMaxBw[s.nodes == 1 ? cc : 0][idx]);
    if (proto == Protocol::ll128)
      bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                     double(nch) * kPerChMaxTreeLL128Bw[cc][idx]);
  }
  if (algo == Algorithm::pat) bus *= 0.75;
  if (algo == Algorithm::p2p) {
    bus = t.ring_bw * (proto == Protocol::ll ? 0.5 : 1.0);
    ratio = 1.0;
  }
  if (t.agrs && algo != Algorithm::ring && algo != Algorithm::hierarchical) ratio = 1.0;
  return bus * ratio;
}

// Latency (§1.4), in µs, before the time's corrections.
double model_latency_us(CollectiveOp op, Algorithm algo, Protocol proto, const CallTerms& t,
                        const GroupShape& s) {
  using Hw = CollectiveTuner::Hw;
  const int64_t n = t.n, nsteps = t.nsteps;
  double lat = CollectiveTuner::base_latency_us(algo, proto);
  const double intra_lat = CollectiveTuner::intra_step_us(algo, proto, s);
  const double inter_lat = CollectiveTuner::inter_step_us(algo, proto, s);
  const Hw hw = s.nodes == 1 ? (s.pcie_only ? Hw::pci : Hw::nvlink) : Hw::net;
  switch (algo) {
    case Algorithm::ring:
    case Algorithm::hierarchical:
      if (op == CollectiveOp::broadcast || op == CollectiveOp::reduce) {
        lat += double(nsteps) * CollectiveTuner::hw_latency_us(
                                    hw, proto == Protocol::simple ? Algorithm::tree : Algorithm::ring, proto);
      } else {
        const int64_t inter_steps = s.nodes == 1 ? 0 : (t.ar ? 2 * (s.nodes - 1) : s.nodes - 1);
        lat += double(nsteps - inter_steps) * intra_lat + double(inter_steps) * inter_lat;
      }
      break;
    case Algorithm::tree:
      lat += 2.0 * (double(n / s.nodes - 1) * intra_lat + double(log2i(s.nodes)) * inter_lat);
      break;
    case Algorithm::nvls:
      lat = CollectiveTuner::hw_latency_us(Hw::nvlink, algo, proto) + (s.nodes > 1 ? inter_lat : 0.0);
      break;
    case Algorithm::nvls_tree:
      lat +=
          CollectiveTuner::hw_latency_us(Hw::nvlink, algo, proto) + 2.0 * double(log2i(s.nodes)) * inter_lat;
      break;
    case Algorithm::pat:
      lat += double(log2i(s.nodes)) * (inter_lat / 3.5) + double(n) * 2.8;
      break;
    case Algorithm::p2p:
      lat += s.nodes > 1 ? inter_lat : intra_lat;
      break;
    default:
      break;
  }
  return lat;
}

}  // namespace

namespace {

constexpr Algorithm kTableAlgorithms[] = {
    Algorithm::tree,          Algorithm::ring,         Algorithm::collnet_direct,
    Algorithm::collnet_chain, Algorithm::nvls,         Algorithm::nvls_tree,
    Algorithm::pat,           Algorithm::hierarchical, Algorithm::p2p};
constexpr Protocol kTableProtocols[] = {Protocol::ll, Protocol::ll128, Protocol::simple};
constexpr size_t kTableSize = std::size(kTableAlgorithms) * std::size(kTableProtocols);

// One cost table entry with its reason as a code (CostEntry words it).
struct CodedEntry {
  Algorithm algorithm;
  Protocol protocol;
  double latency_us = 0;
  double algbw_GBps = 0;
  double time_us = -1;
  Disabled why = Disabled::none;
};
using CodedTable = std::array<CodedEntry, kTableSize>;

// The cost table in NCCL's order (algorithms, then protocols), without allocating.
CodedTable coded_cost_table(CollectiveOp op, const GroupShape& s, double bytes) {
  CodedTable table;
  const CallTerms t = call_terms(op, s);
  size_t i = 0;
  for (Algorithm algo : kTableAlgorithms) {
    for (Protocol proto : kTableProtocols) {
      CodedEntry& e = table[i++];
      e = CodedEntry{algo, proto, 0, 0, -1, disabled_code(op, algo, proto, s)};
      if (e.why != Disabled::none) continue;
      e.algbw_GBps = model_algbw_GBps(algo, proto, t, s);
      double lat = model_latency_us(op, algo, proto, t, s);

      // Time (§1.5).
      double bw = e.algbw_GBps;
      const int log_size = log2i(int64_t(bytes) >> 6);
      if (algo == Algorithm::tree && t.ar && int64_t(bytes) >= 64 && log_size < 23)
        bw *= kTreeCorrection[static_cast<int>(proto)][log_size];
      if (algo == Algorithm::ring && proto == Protocol::simple && s.nodes > 1 && t.ar &&
          bytes / (double(t.nch) * double(t.n)) >= 64)
        lat *= t.cc < 1 ? 1.9 : 1.4;
      if (algo == Algorithm::hierarchical) e.why = Disabled::hierarchical_on_request;
      e.latency_us = lat;
      e.time_us = bw > 0 ? lat + bytes / (1000.0 * bw) : -1;
    }
  }
  return table;
}

}  // namespace

std::vector<CostEntry> CollectiveTuner::cost_table(CollectiveOp op, const GroupShape& s, double bytes) {
  std::vector<CostEntry> table;
  table.reserve(kTableSize);
  for (const CodedEntry& e : coded_cost_table(op, s, bytes))
    table.push_back(CostEntry{e.algorithm, e.protocol, e.latency_us, e.algbw_GBps, e.time_us,
                              reason_text(e.why, op, e.algorithm)});
  return table;
}

int CollectiveTuner::channels_for(CollectiveOp op, Algorithm algo, Protocol proto, const GroupShape& s,
                                  double bytes) {
  int nc = max_channels(s);
  if (algo == Algorithm::nvls || algo == Algorithm::nvls_tree) return nc;
  const int p = static_cast<int>(proto);
  const double nt = (algo == Algorithm::tree || algo == Algorithm::pat) ? 640.0 : double(kMaxThreads[p]);
  double threshold = kThreadThreshold[p];
  if (algo == Algorithm::ring && proto == Protocol::ll) threshold *= double(s.ranks);
  (void)op;
  while (bytes < double(nc) * nt * threshold && nc >= 2) --nc;
  return nc;
}

TunerChoice CollectiveTuner::choose(CollectiveOp op, const GroupShape& s, double bytes,
                                    std::optional<Algorithm> algo, std::optional<Protocol> proto) {
  if (algo) {
    if (auto why = unsupported(op, *algo, s)) throw InputError("collective", "algorithm", *why);
  }
  if (algo && proto) {
    if (auto why = unsupported(op, *algo, *proto, s)) throw InputError("collective", "protocol", *why);
  }
  const CodedTable table = coded_cost_table(op, s, bytes);
  const CodedEntry* best = nullptr;
  for (const CodedEntry& e : table) {
    if (algo && e.algorithm != *algo) continue;
    if (proto && e.protocol != *proto) continue;
    if (e.time_us < 0) continue;
    // Entries disabled for automatic choice (hierarchical) still serve an explicit request.
    if (e.why != Disabled::none && !(algo && *algo == e.algorithm)) continue;
    if (!best || e.time_us < best->time_us) best = &e;
  }
  if (!best) {
    std::string why = "no algorithm/protocol can run " + std::string(to_string(op));
    // Prefer the reason of an algorithm that could run this op but not with this protocol.
    for (int pass = 0; pass < 2; ++pass) {
      bool found = false;
      for (const CodedEntry& e : table) {
        if ((algo && e.algorithm != *algo) || (proto && e.protocol != *proto) || e.why == Disabled::none)
          continue;
        if (pass == 0 && disabled_code(op, e.algorithm, s) != Disabled::none) continue;
        why = reason_text(e.why, op, e.algorithm);
        found = true;
        break;
      }
      if (found) break;
    }
    throw InputError("collective", proto ? "protocol" : "algorithm", why);
  }
  TunerChoice c;
  c.algorithm = best->algorithm;
  c.protocol = best->protocol;
  c.predicted_us = best->time_us;
  c.latency_us = best->latency_us;
  c.channels = channels_for(op, c.algorithm, c.protocol, s, bytes);
  return c;
}

}  // namespace simrun
