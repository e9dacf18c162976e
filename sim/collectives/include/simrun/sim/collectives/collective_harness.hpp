// One simulation: the engine, the network on a cluster graph and the collective runner, owned
// together so that two simulations can live in one process (the GUI's A/B). The training-step
// simulator schedules compute on engine(), point-to-point transfers on network() (routes from
// graph().route()) and collectives on collectives(); all share links.
//
//   auto graph = std::make_shared<ClusterGraph>(cluster_graph_spec(cluster));
//   Simulation sim(graph);
//   sim.collectives().run({CollectiveOp::all_reduce, {}, 1 << 30}, [](const CollectiveResult& r) {...});
//   sim.run();
#pragma once

#include <memory>
#include <vector>

#include "simrun/sim/collectives/collectives.hpp"
#include "simrun/sim/engine/engine.hpp"
#include "simrun/sim/network/network.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun {

// How link capacities are set from the graph's raw bandwidths.
enum class LinkEfficiency {
  nccl,   // × NCCL's achievable fraction (scale_up_efficiency, kNetworkEfficiency)
  ideal,  // raw line rate (textbook exercises)
};

struct SimulationOptions {
  LinkEfficiency efficiency = LinkEfficiency::nccl;
  CollectiveModel collectives;
};

// Seconds one collective takes alone on the cluster graph (a fresh simulation, tuner's choice).
double collective_alone_s(std::shared_ptr<const ClusterGraph> graph, const CollectiveRequest& request);
// Seconds until the last of `requests` ends, all started at the same instant on the same graph
// (their flows sharing links), e.g. every group of a kind in a pipeline stage in a training step:
// groups placed unlike each other (a stride that does not divide the NVLink domain) finish at
// different times, and the step waits on the slowest.
double collective_among_s(std::shared_ptr<const ClusterGraph> graph,
                          const std::vector<CollectiveRequest>& requests);

class Simulation {
 public:
  explicit Simulation(std::shared_ptr<const ClusterGraph> graph, SimulationOptions options = {});
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  Engine& engine() { return m_engine; }
  Network& network() { return *m_network; }
  CollectiveRunner& collectives() { return *m_collectives; }
  const ClusterGraph& graph() const { return *m_graph; }
  const SimulationOptions& options() const { return m_options; }

  // Route → flow links with weight 1 (for point-to-point transfers).
  static std::vector<LinkUse> link_uses(const Route& route);
  // Starts a point-to-point transfer of `bytes` between two GPUs over graph().route().
  FlowId send(int64_t src_gpu, int64_t dst_gpu, double bytes, Network::DoneCallback on_done,
              const RouteOptions& options = {});

  void run() { m_engine.run(); }

 private:
  std::shared_ptr<const ClusterGraph> m_graph;
  SimulationOptions m_options;
  Engine m_engine;
  std::unique_ptr<Network> m_network;
  std::unique_ptr<CollectiveRunner> m_collectives;
};

}  // namespace simrun
