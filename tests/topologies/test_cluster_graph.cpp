// The cluster graph: element counts (DGX SuperPOD sizes), shortest routes (d-mod-k over spines), PXN,
// oversubscription, domains, DOT, bad input.
#include <catch2/catch.hpp>
#include <set>
#include <sstream>

#include "collective_fixtures.hpp"
#include "simrun/common/error.hpp"

using namespace simrun;
using namespace simrun::test;

TEST_CASE("rail-optimized NDR fabric reproduces the DGX H100 SuperPOD switch counts", "[topologies][graph]") {
  // hardware.md §7 (nv-superpod-h100-ra): 2,048 GPUs = 64 leaf + 32 spine; 16,384 GPUs =
  // 512 leaf + 512 spine + 256 core (radix-64 QM9700).
  {
    const ClusterGraph g(cluster(h100_sxm(), 2048));
    const auto s = g.summary();
    CHECK(s.nodes == 256);
    CHECK(s.switches_per_tier == std::vector<int64_t>{64, 32});
    CHECK(s.nics == 2048);
    CHECK(s.nvswitches == 256);
  }
  {
    const ClusterGraph g(cluster(h100_sxm(), 16384));
    const auto s = g.summary();
    CHECK(s.switches_per_tier == std::vector<int64_t>{512, 512, 256});
    CHECK(s.bisection_bytes_per_s == Approx(16384 * 50e9 / 2));
    CHECK(s.injection_scale_out_bytes_per_s == Approx(50e9));
    CHECK(s.injection_scale_up_bytes_per_s == Approx(450e9));
  }
}

TEST_CASE("routes are shortest paths (BFS over the Boost graph)", "[topologies][graph]") {
  for (FabricShape shape : {FabricShape::rail_optimized, FabricShape::fat_tree}) {
    auto spec = cluster(h100_sxm(), 1024);
    spec.shape = shape;
    spec.fabric.switch_radix = 8;  // forces three tiers on 128 nodes
    const ClusterGraph g(spec);
    CHECK(g.fabric_tiers() >= 3);
    for (int64_t src : {0, 3, 77, 512, 1000}) {
      for (int64_t dst : {1, 8, 9, 64, 200, 513, 1023}) {
        if (src == dst) continue;
        // Rail-matched pairs (same local index) and intra-node pairs route without PXN detours.
        if (g.local_index(src) != g.local_index(dst) && g.node_of(src) != g.node_of(dst)) continue;
        const Route r = g.route(src, dst);
        INFO("src " << src << " dst " << dst);
        CHECK(int(r.links.size()) == g.bfs_hops(g.gpu_vertex(src), g.gpu_vertex(dst)));
        // The route is connected.
        for (size_t i = 0; i + 1 < r.links.size(); ++i)
          CHECK(g.links()[r.links[i]].dst == g.links()[r.links[i + 1]].src);
        CHECK(g.links()[r.links.front()].src == g.gpu_vertex(src));
        CHECK(g.links()[r.links.back()].dst == g.gpu_vertex(dst));
      }
    }
  }
}

TEST_CASE("spine routes follow the destination (d-mod-k), PXN keeps cross-rail traffic on its rail",
          "[topologies][graph]") {
  const ClusterGraph g(cluster(h100_sxm(), 4096));  // 512 nodes: 16 node groups of 32 per rail
  // The 32 rail-0 NICs under one leaf, reached from 32 sources under another: each comes down its
  // own spine link, and from one source leaf to another leaf they leave on 32 distinct uplinks.
  std::set<uint32_t> down_links, up_links;
  for (int64_t k = 0; k < 32; ++k) {
    const Route r = g.route(8 * k, 8 * (32 + k));  // node k (leaf group 0) to node 32 + k (group 1)
    REQUIRE(r.switch_hops == 3);
    up_links.insert(r.links[2]);                     // leaf -> spine
    down_links.insert(r.links[r.links.size() - 3]);  // spine -> leaf
  }
  CHECK(up_links.size() == 32);
  CHECK(down_links.size() == 32);
  // A route depends on its destination only above the leaf: two sources, one destination, one spine.
  CHECK(g.links()[g.route(0, 8 * 300).links[2]].dst == g.links()[g.route(8, 8 * 300).links[2]].dst);
  // GPU 1 of node 0 to GPU 0 of node 1 on rail 0: NVLink to GPU 0 first (PXN), then rail 0 only.
  RouteOptions o;
  o.rail = 0;
  const Route r = g.route(1, 8, o);
  CHECK(g.links()[r.links[0]].kind == LinkKind::scale_up);
  CHECK(r.switch_hops == 1);  // same rail-0 leaf
  CHECK(r.uses_fabric);
}

TEST_CASE("route latency grows with switch hops", "[topologies][graph]") {
  const ClusterGraph g(cluster(h100_sxm(), 1024));
  const Route same_leaf = g.route(0, 8);
  const Route cross_leaf = g.route(0, 8 * 64);
  CHECK(same_leaf.switch_hops == 1);
  CHECK(cross_leaf.switch_hops == 3);
  // DeepSeek H800 measurements: 2.8 µs same leaf, 3.7 µs cross leaf (hardware.md §5.3)
  CHECK(same_leaf.latency.micros() == Approx(2.8).margin(0.01));
  CHECK(cross_leaf.latency.micros() == Approx(3.7).margin(0.01));
}

TEST_CASE("oversubscription halves leaf uplinks and bisection", "[topologies][graph]") {
  auto spec = cluster(h100_sxm(), 2048);
  spec.oversubscription = 2.0;
  const ClusterGraph g(spec);
  CHECK(g.summary().bisection_bytes_per_s == Approx(2048 * 50e9 / 4));
}

TEST_CASE("NVL72 racks are one NVLink domain across trays, MI300X is a mesh", "[topologies][graph]") {
  const ClusterGraph nvl(cluster(gb200(), 144, 4, ib_ndr(), 4));
  CHECK(nvl.num_domains() == 2);
  CHECK(nvl.num_nodes() == 36);
  const Route in_rack = nvl.route(0, 71);  // tray 0 to tray 17 of rack 0: NVLink only
  CHECK_FALSE(in_rack.uses_fabric);
  CHECK(in_rack.links.size() == 2);
  CHECK(nvl.route(0, 72).uses_fabric);
  const ClusterGraph amd(cluster(mi300x(), 8));
  const Route r = amd.route(0, 5);
  REQUIRE(r.links.size() == 1);
  CHECK(amd.links()[r.links[0]].bytes_per_s == Approx(64e9));
  CHECK(amd.summary().nvswitches == 0);
}

TEST_CASE("one rule says which NVLink domains span nodes", "[topologies][graph]") {
  // NVL72: 18 trays of 4 (or 9 of 8) in one domain; an HGX board ends at its node; a domain that
  // is not a whole number of nodes is read as the node's.
  CHECK(rack_scale_domain(gb200(), 4));
  CHECK(rack_scale_domain(gb200(), 8));
  CHECK_FALSE(rack_scale_domain(gb200(), 16));
  CHECK_FALSE(rack_scale_domain(gb200(), 72));
  CHECK_FALSE(rack_scale_domain(h100_sxm(), 4));
  CHECK_FALSE(rack_scale_domain(mi300x(), 4));
  CHECK(ClusterGraph(cluster(gb200(), 144, 8, ib_ndr(), 8)).gpus_per_domain() == 72);
  CHECK(ClusterGraph(cluster(gb200(), 144, 16, ib_ndr(), 16)).gpus_per_domain() == 16);
  CHECK(ClusterGraph(cluster(h100_sxm(), 16, 4, ib_ndr(), 4)).gpus_per_domain() == 4);
}

TEST_CASE("four NICs for eight GPUs: two GPUs share each NIC", "[topologies][graph]") {
  const ClusterGraph g(cluster(a100(), 24, 8, hdr(), 4));
  CHECK(g.rails_of(0) == std::vector<int32_t>{0});
  CHECK(g.rails_of(1) == std::vector<int32_t>{0});
  CHECK(g.rails_of(7) == std::vector<int32_t>{3});
  CHECK(g.rail_owner(3) == 6);
  CHECK(g.summary().nics == 12);
  CHECK(g.summary().injection_scale_out_bytes_per_s == Approx(12.5e9));
}

TEST_CASE("DOT output for small clusters, refused for large ones", "[topologies][graph]") {
  const ClusterGraph small(cluster(h100_sxm(), 16));
  std::ostringstream dot;
  REQUIRE(small.write_dot(dot));
  const std::string s = dot.str();
  CHECK(s.rfind("graph cluster {", 0) == 0);
  CHECK(s.find("gpu0 -- nvswitch0") != std::string::npos);
  CHECK(s.find("nic1_7 -- leaf") != std::string::npos);
  const ClusterGraph big(cluster(h100_sxm(), 4096));
  std::ostringstream none;
  CHECK_FALSE(big.write_dot(none));
  CHECK(none.str().empty());
}

TEST_CASE("clusters the hardware cannot host are refused with a reason", "[topologies][graph]") {
  std::string field;
  CHECK(ClusterGraph::check(cluster(h100_sxm(), 12), &field));  // 1.5 nodes
  CHECK(field == "num_gpus");
  CHECK(ClusterGraph::check(cluster(h100_sxm(), 32, 16)));  // 16 per node > NVLink domain of 8
  CHECK(ClusterGraph::check(cluster(h100_sxm(), 0)));
  CHECK(ClusterGraph::check(cluster(h100_sxm(), 16, 8, ib_ndr(), 3)));  // 3 NICs for 8 GPUs
  auto radix4 = cluster(h100_sxm(), 1 << 20);
  radix4.fabric.switch_radix = 4;
  CHECK(ClusterGraph::check(radix4));  // too many tiers
  CHECK_THROWS_AS(ClusterGraph(cluster(h100_sxm(), 12)), InputError);
  CHECK_FALSE(ClusterGraph::check(cluster(h100_sxm(), 4)));  // part of one node is fine
}
