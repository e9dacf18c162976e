// Cluster flags shared by `simrun collective` and `simrun topology`: a scenario file's cluster
// and/or --gpu/--gpus/--fabric/... overrides, resolved against the catalog into a ClusterSpec
// and a cluster graph (bad values become one-line InputErrors naming the flag or field).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun::cli {

struct ClusterArgs {
  std::string scenario;                    // --scenario FILE (or positional for topology)
  std::optional<std::string> gpu;          // --gpu h100-sxm
  std::optional<int64_t> gpus;             // --gpus 16
  std::optional<int64_t> gpus_per_node;    // --gpus-per-node 8
  std::optional<int64_t> nics_per_node;    // --nics-per-node 8
  std::optional<std::string> fabric;       // --fabric ib-ndr
  std::optional<std::string> topology;     // --topology rail-optimized|fat-tree
  std::optional<double> oversubscription;  // --oversubscription 2
  std::vector<std::string> catalogs;       // --catalog DIR, in the order given
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
