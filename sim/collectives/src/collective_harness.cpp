// Simulation: engine + network (link capacities from the graph, scaled by the transport's
// achievable fraction) + collective runner.
#include "simrun/sim/collectives/collective_harness.hpp"

#include <algorithm>

#include "simrun/common/error.hpp"

namespace simrun {

double collective_alone_s(std::shared_ptr<const ClusterGraph> graph, const CollectiveRequest& request) {
  return collective_among_s(std::move(graph), {request});
}

double collective_among_s(std::shared_ptr<const ClusterGraph> graph,
                          const std::vector<CollectiveRequest>& requests) {
  SIMRUN_ASSERT(!requests.empty(), "no collective to time");
  Simulation sim(std::move(graph));
  double slowest = 0;
  for (const CollectiveRequest& request : requests)
    sim.collectives().run(
        request, [&slowest](const CollectiveResult& r) { slowest = std::max(slowest, r.seconds()); });
  sim.run();
  return slowest;
}

namespace {

std::vector<double> link_capacities(const ClusterGraph& g, LinkEfficiency efficiency) {
  std::vector<double> caps;
  caps.reserve(g.links().size());
  const double scale_up = scale_up_efficiency(g.spec().gpu);
  for (const GraphLink& l : g.links()) {
    double f = 1.0;
    if (efficiency == LinkEfficiency::nccl) {
      switch (l.kind) {
        case LinkKind::scale_up:
          f = scale_up;
          break;
        case LinkKind::host_pcie:
          f = kPcieEfficiency;
          break;
        case LinkKind::nic_pcie:
          f = 1.0;
          break;
        case LinkKind::nic_port:
        case LinkKind::fabric:
          f = kNetworkEfficiency;
          break;
      }
    }
    caps.push_back(l.bytes_per_s * f);
  }
  return caps;
}

}  // namespace

Simulation::Simulation(std::shared_ptr<const ClusterGraph> graph, SimulationOptions options)
    : m_graph(std::move(graph)), m_options(options) {
  SIMRUN_ASSERT(m_graph != nullptr, "Simulation needs a cluster graph");
  m_network = std::make_unique<Network>(m_engine, link_capacities(*m_graph, options.efficiency));
  m_collectives = std::make_unique<CollectiveRunner>(m_engine, *m_network, *m_graph, options.collectives);
}

std::vector<LinkUse> Simulation::link_uses(const Route& route) {
  std::vector<LinkUse> out;
  out.reserve(route.links.size());
  for (uint32_t l : route.links) out.push_back(LinkUse{l, 1.0});
  return out;
}

FlowId Simulation::send(int64_t src, int64_t dst, double bytes, Network::DoneCallback on_done,
                        const RouteOptions& options) {
  const Route r = m_graph->route(src, dst, options);
  FlowSpec spec;
  spec.links = link_uses(r);
  spec.bytes = bytes;
  spec.latency = r.latency;
  return m_network->start_flow(std::move(spec), std::move(on_done));
}

}  // namespace simrun
