// NCCL-style collectives on the flow-level network. A collective call is decomposed into the
// point-to-point transfers of its algorithm — ring, double binary tree, NVLS (in-switch
// reduction), NVLSTree, PAT, hierarchical intra/inter-node, and grouped send/recv for
// all_to_all and send_recv — with NCCL's protocols (Simple/LL/LL128: per-hop latency, payload
// efficiency, rate caps) and channels (one ring/tree per channel, channels spread over rails).
//
// Two decompositions:
//  - pipelined (default): NCCL pipelines a collective in small chunks, so in steady state every
//    edge of a ring (or tree) carries data at the rate of the slowest one. Each channel group
//    (channels that use the same links) becomes one coupled flow over all links its edges use,
//    weighted by the bytes each link carries; the 2(n-1) per-step latencies of the chunk's trip
//    (pipeline fill) are added once. Link sharing with any concurrent traffic stays max-min fair
//    and exact for the pipelined model; the per-step latency total is that of the closed form.
//  - per_step: every step of the textbook ring is its own set of point-to-point flows with a
//    barrier between steps (t = Σ steps (α + bytes_step / rate)). Slower; for checks and small n.
//    Applies to ring all_reduce/all_gather/reduce_scatter; other algorithms stay pipelined (PAT
//    and hierarchical are step/phase-wise anyway; all_to_all and send_recv are plain p2p flows).
//
// Works inside an ongoing simulation: several collectives (and raw flows) may run concurrently
// and share links.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "simrun/common/units.hpp"
#include "simrun/sim/collectives/collective_tuner.hpp"
#include "simrun/sim/engine/engine.hpp"
#include "simrun/sim/network/network.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun {

namespace detail {
class LinkWeights;
}

enum class Decomposition { pipelined, per_step };
enum class LatencyModel { nccl, none };  // none: bandwidth-only (textbook exercises)

struct CollectiveModel {
  Decomposition decomposition = Decomposition::pipelined;
  LatencyModel latency = LatencyModel::nccl;
};

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::all_reduce;
  std::vector<int64_t> ranks;  // global GPU ids in communicator rank order; empty = every GPU
  // nccl-tests' size: all_reduce/broadcast/reduce/send_recv = buffer bytes (count·typesize);
  // all_gather/reduce_scatter/all_to_all = total bytes (count·typesize·n, count per rank).
  double bytes = 0;
  int64_t root = 0;                    // communicator rank, broadcast/reduce
  std::optional<Algorithm> algorithm;  // nullopt = tuner's choice
  std::optional<Protocol> protocol;    // nullopt = tuner's choice
  std::optional<int> channels;         // nullopt = tuner's choice
};

struct CollectiveResult {
  CollectiveOp op = CollectiveOp::all_reduce;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;
  int64_t ranks = 1;
  double bytes = 0;
  TimeNs start{}, end{};
  uint64_t flows = 0;  // network flows this call started

  double seconds() const { return (end - start).seconds(); }
  double algbw_bytes_per_s() const;
  double busbw_bytes_per_s() const;
};


class CollectiveRunner {
 public:
  using DoneCallback = std::function<void(const CollectiveResult&)>;

  CollectiveRunner(Engine& engine, Network& network, const ClusterGraph& graph, CollectiveModel model = {});
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // The group's shape as the tuner sees it.
  GroupShape shape(const std::vector<int64_t>& ranks) const;
  // What run() would execute (tuner choice or the overrides). Throws InputError (input
  // "collective", field algorithm, protocol, bytes, root, ranks or channels) when the request
  // cannot run on this cluster.
  TunerChoice plan(const CollectiveRequest& request) const;
  // Starts the collective now; `on_done` runs at its completion.
  void run(const CollectiveRequest& request, DoneCallback on_done);

  const CollectiveModel& model() const { return m_model; }
  const ClusterGraph& graph() const { return m_graph; }

 private:
  struct Call;
  std::vector<int64_t> resolve(const std::vector<int64_t>& ranks) const;
  void start_phase(std::shared_ptr<Call> call, size_t phase);

  Engine& m_engine;
  Network& m_network;
  const ClusterGraph& m_graph;
  CollectiveModel m_model;
  std::unique_ptr<detail::LinkWeights> m_weights;  // scratch for planning coupled flows
};

// Largest collective size accepted (2^50 bytes).
inline constexpr double kMaxCollectiveBytes = 1125899906842624.0;

}  // namespace simrun
