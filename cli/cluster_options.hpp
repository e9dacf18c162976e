// Cluster flags shared by `simrun collective` and `simrun topology`: a scenario file's cluster
// and/or --gpu/--gpus/--fabric/... overrides, resolved against the catalog into a ClusterSpec
// and a cluster graph (bad values become one-line InputErrors naming the flag or field).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun::cli {

struct ClusterArgs {
  std::string scenario;  // --scenario FILE (or positional for topology)
  // --gpu, --gpus, --gpus-per-node, --nics-per-node, --fabric, --topology, --oversubscription:
  // the scenario's cluster fields they override (the only fields set here).
  ScenarioOverrides overrides;
  std::vector<std::string> catalogs;  // --catalog DIR, in the order given
};

void add_cluster_options(CLI::App& cmd, ClusterArgs& args);

// The cluster: from the scenario file (validated in full) with the flags applied, or from the
// flags alone (defaults: h100-sxm, 8 GPUs, ib-ndr, rail-optimized), read by the scenario's
// reader: a value out of range or a cluster the hardware cannot host (ClusterGraph::check) is an
// InputError naming the flag, or the scenario field when the value came from the file.
ClusterSpec resolve_cluster(const ClusterArgs& args, const Catalogs& catalogs);

// The graph of a cluster resolve_cluster gave (its rules already checked).
std::shared_ptr<const ClusterGraph> build_cluster_graph(const ClusterSpec& cluster);

// "16 x h100-sxm (2 nodes x 8), ib-ndr rail-optimized"
std::string describe_cluster(const ClusterGraph& graph);

}  // namespace simrun::cli
