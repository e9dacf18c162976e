// Cluster flags for `simrun collective` and `simrun topology` (see cluster_options.hpp).
#include "cluster_options.hpp"

#include <sstream>

namespace simrun::cli {

void add_cluster_options(CLI::App& cmd, ClusterArgs& a) {
  cmd.add_option("--gpu", a.overrides.gpu, "GPU catalog id, e.g. h100-sxm (default h100-sxm)");
  cmd.add_option("--gpus", a.overrides.gpus, "Number of GPUs, e.g. 16 (default 8)");
  cmd.add_option("--gpus-per-node", a.overrides.gpus_per_node,
                 "GPUs per node (default 8; 4 where the GPU's NVLink domain spans more than an 8-GPU board, "
                 "the domain where it is smaller)");
  cmd.add_option("--nics-per-node", a.overrides.nics_per_node, "Fabric NICs per node (default: one per GPU)");
  cmd.add_option("--fabric", a.overrides.fabric,
                 "Fabric catalog id: ib-hdr, ib-ndr, ib-xdr, roce-400g (default ib-ndr)");
  cmd.add_option("--topology", a.overrides.topology,
                 "Fabric shape: rail_optimized (default) or fat_tree (rail-optimized, fat-tree also read)");
  cmd.add_option("--oversubscription", a.overrides.oversubscription,
                 "Leaf down:up bandwidth ratio (default 1)");
  add_catalog_option(cmd, a.catalogs);
}

ClusterSpec resolve_cluster(const ClusterArgs& a, const Catalogs& catalogs) {
  // The flags are a scenario's cluster fields: read by the scenario's reader, with its defaults,
  // ranges and graph rules (ClusterGraph::check), over the file's cluster or alone.
  if (!a.scenario.empty()) return load_scenario_with_flags(a.scenario, a.overrides, catalogs).cluster;
  ScenarioOverrides o = a.overrides;
  if (!o.gpu) o.gpu = "h100-sxm";
  return load_cluster_with_flags(o, catalogs);
}

std::shared_ptr<const ClusterGraph> build_cluster_graph(const ClusterSpec& cluster) {
  return std::make_shared<const ClusterGraph>(cluster_graph_spec(cluster));
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
