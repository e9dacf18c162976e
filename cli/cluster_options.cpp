// Cluster flags for `simrun collective` and `simrun topology` (see cluster_options.hpp).
#include "cluster_options.hpp"

#include <sstream>

#include "flag_names.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/sim/collectives/collective_harness.hpp"

namespace simrun::cli {

void add_cluster_options(CLI::App& cmd, ClusterArgs& a) {
  cmd.add_option("--gpu", a.gpu, "GPU catalog id, e.g. h100-sxm (default h100-sxm)");
  cmd.add_option("--gpus", a.gpus, "Number of GPUs, e.g. 16 (default 8)");
  cmd.add_option("--gpus-per-node", a.gpus_per_node, "GPUs per node (default 8; 4 for NVL72 GPUs)");
  cmd.add_option("--nics-per-node", a.nics_per_node, "Fabric NICs per node (default: one per GPU)");
  cmd.add_option("--fabric", a.fabric,
                 "Fabric catalog id: ib-hdr, ib-ndr, ib-xdr, roce-400g (default ib-ndr)");
  cmd.add_option("--topology", a.topology,
                 "Fabric shape: rail_optimized (default) or fat_tree (rail-optimized, fat-tree also read)");
  cmd.add_option("--oversubscription", a.oversubscription, "Leaf down:up bandwidth ratio (default 1)");
  add_catalog_option(cmd, a.catalogs);
}

ClusterSpec resolve_cluster(const ClusterArgs& a, const Catalogs& catalogs) {
  ClusterSpec c;
  const std::string file = "command line";
  if (!a.scenario.empty()) {
    ScenarioOverrides o;
    o.gpu = a.gpu;
    o.gpus = a.gpus;
    o.gpus_per_node = a.gpus_per_node;
    o.fabric = a.fabric;
    c = load_scenario_with_flags(a.scenario, o, catalogs).cluster;
  } else {
    c.gpu = catalogs.hardware.gpu(a.gpu.value_or("h100-sxm"), file, "--gpu");
    c.num_gpus = a.gpus.value_or(8);
    if (c.num_gpus < 1)
      throw InputError(file, "--gpus", "must be at least 1 (got " + std::to_string(c.num_gpus) + ")");
    const int64_t default_per_node = std::min<int64_t>(c.gpu.scale_up_domain >= 72 ? 4 : 8, c.num_gpus);
    c.gpus_per_node = a.gpus_per_node.value_or(default_per_node);
    c.fabric = catalogs.hardware.fabric(a.fabric.value_or("ib-ndr"), file, "--fabric");
    c.nics_per_node = c.gpus_per_node;
  }
  // Flags given are checked even where one node leaves the fabric unused (ClusterGraph::check
  // skips it there): the same ranges.
  if (a.nics_per_node && (*a.nics_per_node < 1 || *a.nics_per_node > 72))
    throw InputError(file, "--nics-per-node",
                     "must be between 1 and 72 (got " + std::to_string(*a.nics_per_node) + ")");
  if (a.oversubscription && !(*a.oversubscription >= 1.0 && *a.oversubscription <= 64))
    throw InputError(file, "--oversubscription", "must be between 1 (non-blocking) and 64");
  if (a.nics_per_node) c.nics_per_node = *a.nics_per_node;
  if (a.topology) {
    if (*a.topology == "rail-optimized" || *a.topology == "rail_optimized") {
      c.topology = FabricTopology::rail_optimized;
    } else if (*a.topology == "fat-tree" || *a.topology == "fat_tree") {
      c.topology = FabricTopology::fat_tree;
    } else {
      throw InputError(file, "--topology",
                       "unknown topology '" + *a.topology + "' (known: rail_optimized, fat_tree)");
    }
  }
  if (a.oversubscription) c.oversubscription = *a.oversubscription;
  return c;
}

std::shared_ptr<const ClusterGraph> build_cluster_graph(const ClusterSpec& cluster, const ClusterArgs& a) {
  const ClusterGraphSpec spec = cluster_graph_spec(cluster);
  std::string field;
  if (auto why = ClusterGraph::check(spec, &field)) {
    // The graph's field as the scenario names it, and whether a flag gave its value.
    struct Field {
      const char* graph;
      const char* scenario;
      bool given;
    };
    const Field fields[] = {{"num_gpus", "cluster.num_gpus", bool(a.gpus)},
                            {"gpus_per_node", "cluster.gpus_per_node", bool(a.gpus_per_node)},
                            {"nics_per_node", "cluster.fabric.nics_per_node", bool(a.nics_per_node)},
                            {"fabric", "cluster.fabric.kind", bool(a.fabric)},
                            {"oversubscription", "cluster.fabric.oversubscription", bool(a.oversubscription)},
                            {"gpu", "cluster.gpu", bool(a.gpu)}};
    for (const Field& f : fields) {
      if (field != f.graph) continue;
      const auto flag = flag_of_scenario_field(f.scenario);
      if (flag && (a.scenario.empty() || f.given)) throw InputError("command line", *flag, *why);
      throw InputError(a.scenario, f.scenario, *why);
    }
    throw InputError(a.scenario.empty() ? "command line" : a.scenario, "cluster", *why);
  }
  return std::make_shared<ClusterGraph>(spec);
}

std::string describe_cluster(const ClusterGraph& g) {
  std::ostringstream o;
  o << g.num_gpus() << " x " << g.spec().gpu.id << " (" << g.num_nodes() << " node"
    << (g.num_nodes() == 1 ? "" : "s") << " x " << g.gpus_per_node() << ")";
  if (g.num_domains() > 1) {
    o << ", " << g.spec().nics_per_node << " x " << g.spec().fabric.id << " per node, "
      << to_string(g.spec().shape);
    if (g.spec().oversubscription != 1.0) o << " " << g.spec().oversubscription << ":1 oversubscribed";
  }
  return o.str();
}

}  // namespace simrun::cli
