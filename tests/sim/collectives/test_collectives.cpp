// Collectives on the flow-level network: closed forms, conservation, symmetry, determinism,
// monotonicity, congestion, the chapter's Exercise 1, bad input.
#include <catch2/catch.hpp>
#include <cmath>

#include "collective_fixtures.hpp"
#include "simrun/common/error.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {
// NCCL 2.30 tuning.cc: Ring Simple base 8.4 µs, NVLink hop 3.4 µs (ecosystem.md §1.2).
constexpr double kRingSimpleBaseUs = 8.4, kRingSimpleNvlinkUs = 3.4;
const double kH100Nvlink = 450e9 * 20.6 / 25.0;  // NCCL's per-link 20.6 of 25 GB/s (topo.h)
}  // namespace

TEST_CASE("ring all-reduce matches 2(n-1)/n·S/B + steps·α", "[sim][collectives]") {
  const double S = 1 * kGiB;
  for (int64_t n : {2, 4, 8}) {
    auto g = graph(cluster(h100_sxm(), n));
    INFO("n = " << n);
    // Bandwidth only: raw 450 GB/s NVLink.
    const auto bw =
        run_one(g, request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple), ideal());
    CHECK(bw.seconds() == Approx(2.0 * double(n - 1) / double(n) * S / 450e9).epsilon(1e-6));
    // With NCCL's latencies and effective NVLink bandwidth, pipelined and per-step agree.
    const double expected = (kRingSimpleBaseUs + 2.0 * double(n - 1) * kRingSimpleNvlinkUs) * 1e-6 +
                            2.0 * double(n - 1) / double(n) * S / kH100Nvlink;
    const auto piped = run_one(g, request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple));
    CHECK(piped.seconds() == Approx(expected).epsilon(1e-6));
    SimulationOptions steps;
    steps.collectives.decomposition = Decomposition::per_step;
    const auto stepped =
        run_one(g, request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple), steps);
    CHECK(stepped.seconds() == Approx(expected).epsilon(1e-5));
    CHECK(stepped.flows > piped.flows);
  }
}

TEST_CASE("all_gather and reduce_scatter move (n-1)/n of the buffer", "[sim][collectives]") {
  const double S = 2 * kGiB;
  for (int64_t n : {3, 8}) {
    auto g = graph(cluster(a100(), n));
    for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
      const auto r = run_one(g, request(op, S, Algorithm::ring, Protocol::simple), ideal());
      CHECK(r.seconds() == Approx(double(n - 1) / double(n) * S / 300e9).epsilon(1e-6));
      CHECK(r.busbw_bytes_per_s() == Approx(300e9).epsilon(1e-6));  // busbw = link rate
    }
  }
}

TEST_CASE("broadcast and reduce pipeline the buffer once over the chain", "[sim][collectives]") {
  const double S = 1 * kGiB;
  auto g = graph(cluster(h100_sxm(), 8));
  for (CollectiveOp op : {CollectiveOp::broadcast, CollectiveOp::reduce}) {
    auto req = request(op, S, Algorithm::ring, Protocol::simple);
    req.root = 3;
    const auto r = run_one(g, req, ideal());
    CHECK(r.seconds() == Approx(S / 450e9).epsilon(1e-6));
  }
}

TEST_CASE("tree all-reduce: chain in the node, double binary tree across nodes", "[sim][collectives]") {
  const double S = 1 * kGiB;
  // One node: a chain; every inner GPU sends S up and S down over its NVLink: 2S/B, with NCCL's
  // 0.92 tree efficiency (tuning.cc "Tree & AllReduce: busBw *= 0.92").
  auto one = graph(cluster(h100_sxm(), 8));
  const auto chain =
      run_one(one, request(CollectiveOp::all_reduce, S, Algorithm::tree, Protocol::simple), ideal());
  CHECK(chain.seconds() == Approx(2 * S / (0.92 * 450e9)).epsilon(1e-6));
  // Latency: 2·((ppn-1)·α_intra + log2(nodes)·α_inter) + base (ecosystem.md §1.4), here with
  // a tiny buffer so the latency term dominates: 4 nodes x 1 GPU, Tree LL.
  auto four = graph(cluster(h100_sxm(), 4, 1, ib_ndr(), 1));
  const auto small = run_one(four, request(CollectiveOp::all_reduce, 8, Algorithm::tree, Protocol::ll));
  // ppn == 1: NET Tree LL hop 5.0 µs; base Tree LL 6.8 µs; DBT depth over 4 nodes = 2 (+ the
  // one extra switch hop these cross-leaf-free routes do not take).
  CHECK(small.seconds() * 1e6 == Approx(6.8 + 2 * (2 * 5.0)).margin(0.05));
  // Across nodes, the double binary tree balances NICs: every node sends and receives S per
  // direction in each phase, about the ring's 2(n-1)/n·S.
  auto sixteen = graph(cluster(h100_sxm(), 16, 1, ib_ndr(), 1));
  const auto tree =
      run_one(sixteen, request(CollectiveOp::all_reduce, S, Algorithm::tree, Protocol::simple), ideal());
  const auto ring =
      run_one(sixteen, request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple), ideal());
  CHECK(tree.seconds() / ring.seconds() == Approx(1.0 / 0.92 * 2.0 / (2.0 * 15 / 16)).epsilon(0.15));
}

TEST_CASE("NVLS halves NVLink traffic: (n+1)/n·S per direction, efficiency 0.85", "[sim][collectives]") {
  const double S = 4 * kGiB;
  auto g = graph(cluster(h100_sxm(), 8));
  const auto r = run_one(g, request(CollectiveOp::all_reduce, S, Algorithm::nvls), ideal());
  CHECK(r.seconds() == Approx(9.0 / 8.0 * S / (0.85 * 450e9)).epsilon(1e-6));
  CHECK(r.algorithm == Algorithm::nvls);
}

TEST_CASE("NVLS over a 72-GPU NVL72 rack: the bus bandwidth of 8 ranks, not more", "[sim][collectives]") {
  // Measured (shared/reference/measured-microbenchmarks.md): 838 GB/s busbw on 8 B200 with NVLS,
  // 835-847 on all 72 GPUs of a GB200 NVL72 rack at 4-8 GiB; NCCL's model keeps NVLS busbw
  // independent of the rank count. (n+1)/n bytes per link alone would give 72 ranks 25% more.
  const double S = 8 * kGiB;
  auto busbw = [&](int64_t n) {
    const auto r = run_one(graph(cluster(gb200(), n, 4)),
                           request(CollectiveOp::all_reduce, S, Algorithm::nvls), ideal());
    return S / r.seconds() * 2.0 * double(n - 1) / double(n);
  };
  CHECK(busbw(72) == Approx(busbw(8)).epsilon(0.01));
  CHECK(nvls_link_bytes(CollectiveOp::all_reduce, 4).up == Approx(5.0 / 4.0));  // a board: (n+1)/n
  CHECK(nvls_link_bytes(CollectiveOp::all_reduce, 72).up == Approx(9.0 / 7.0 * 71.0 / 72.0));
}

TEST_CASE("bytes are conserved and every rank carries the same load (symmetry)", "[sim][collectives]") {
  const double S = 1 * kGiB;
  auto g = graph(cluster(h100_sxm(), 32));  // 4 nodes, rail-optimized
  Simulation sim(g, ideal());
  std::optional<CollectiveResult> res;
  sim.collectives().run(request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple),
                        [&](const CollectiveResult& r) { res = r; });
  sim.run();
  REQUIRE(res);
  const double n = 32, edge = 2 * (n - 1) / n * S;
  double nic_total = 0, uplink_min = 1e300, uplink_max = 0;
  for (int64_t gpu = 0; gpu < 32; ++gpu) {
    const double up = sim.network().link_carried_bytes(g->switch_uplink(gpu));
    uplink_min = std::min(uplink_min, up);
    uplink_max = std::max(uplink_max, up);
  }
  for (LinkId l = 0; l < g->links().size(); ++l)
    if (g->links()[l].kind == LinkKind::nic_port && g->vertices()[g->links()[l].src].kind == VertexKind::nic)
      nic_total += sim.network().link_carried_bytes(l);
  // Every GPU sends one ring edge per channel over NVLink (PXN keeps the exit on NVLink too).
  CHECK(uplink_min == Approx(edge).epsilon(1e-9));
  CHECK(uplink_max == Approx(edge).epsilon(1e-9));
  // Each node sends one edge per channel into the fabric: 4 nodes x 2(n-1)/n·S.
  CHECK(nic_total == Approx(4 * edge).epsilon(1e-9));
}

TEST_CASE("same input, identical event log", "[sim][collectives]") {
  auto log_of = [] {
    auto g = graph(cluster(h100_sxm(), 64));
    Simulation sim(g);
    std::vector<Engine::LogEntry> log;
    sim.engine().set_log(&log);
    for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::all_to_all}) {
      for (double bytes : {1024.0, 1e6, 1e9}) {
        sim.collectives().run(request(op, bytes), [](const CollectiveResult&) {});
        auto half = request(op, bytes);
        for (int64_t r = 0; r < 64; r += 2) half.ranks.push_back(r);
        sim.collectives().run(half, [](const CollectiveResult&) {});  // concurrent, shares links
        sim.run();
      }
    }
    return log;
  };
  const auto a = log_of(), b = log_of();
  CHECK(a.size() > 50);
  CHECK(a == b);
}

TEST_CASE("more bandwidth or fewer hops is never slower", "[sim][collectives]") {
  struct Case {
    CollectiveOp op;
    std::optional<Algorithm> algo;
  };
  const std::vector<Case> cases = {
      {CollectiveOp::all_reduce, Algorithm::ring},      {CollectiveOp::all_reduce, Algorithm::tree},
      {CollectiveOp::all_reduce, Algorithm::nvls_tree}, {CollectiveOp::all_reduce, std::nullopt},
      {CollectiveOp::all_gather, Algorithm::ring},      {CollectiveOp::reduce_scatter, std::nullopt},
      {CollectiveOp::broadcast, Algorithm::ring},       {CollectiveOp::all_to_all, std::nullopt},
      {CollectiveOp::send_recv, std::nullopt},          {CollectiveOp::all_reduce, Algorithm::hierarchical}};
  for (const Case& c : cases) {
    for (double bytes : {4096.0, 4e6, 4e9}) {
      INFO(to_string(c.op) << " " << (c.algo ? to_string(*c.algo) : "auto") << " " << bytes);
      auto base = cluster(h100_sxm(), 32);
      auto fast_nvlink = base;
      fast_nvlink.gpu.scale_up_bytes_per_s *= 2;
      auto fast_nic = base;
      fast_nic.fabric.port_bytes_per_s *= 2;
      const double t0 = run_one(graph(base), request(c.op, bytes, c.algo)).seconds();
      CHECK(run_one(graph(fast_nvlink), request(c.op, bytes, c.algo)).seconds() <= t0 * (1 + 1e-9));
      CHECK(run_one(graph(fast_nic), request(c.op, bytes, c.algo)).seconds() <= t0 * (1 + 1e-9));
    }
  }
  // Fewer hops: two nodes under one leaf vs two nodes on different leaves (3 switches).
  auto g = graph(cluster(h100_sxm(), 512));
  for (Algorithm a : {Algorithm::ring, Algorithm::tree}) {
    auto near = request(CollectiveOp::all_reduce, 1e6, a), far = near;
    for (int64_t i = 0; i < 16; ++i) {
      near.ranks.push_back(i);
      far.ranks.push_back(i < 8 ? i : 8 * 40 + i);  // node 0 and node 41 (another leaf group)
    }
    const double t_near = run_one(g, near).seconds(), t_far = run_one(g, far).seconds();
    CHECK(t_near < t_far);
  }
}

TEST_CASE("a GPU with two NICs sends over both, in every algorithm that leaves the node",
          "[sim][collectives]") {
  // HDR NICs (25 GB/s) so the NICs, not NVLink, bound every case: two nodes of 8 GPUs with 8 or
  // 16 NICs, and for PAT four nodes of one GPU with one or two NICs. NCCL gives a GPU's channels
  // every NIC near it; the estimate's group shape counts them all (GroupShape::rails).
  struct Case {
    CollectiveOp op;
    Algorithm algo;
    int64_t gpus_per_node;
  };
  const std::vector<Case> cases = {{CollectiveOp::all_reduce, Algorithm::ring, 8},
                                   {CollectiveOp::all_reduce, Algorithm::tree, 8},
                                   {CollectiveOp::all_reduce, Algorithm::nvls_tree, 8},
                                   {CollectiveOp::all_reduce, Algorithm::hierarchical, 8},
                                   {CollectiveOp::all_gather, Algorithm::hierarchical, 8},
                                   {CollectiveOp::all_to_all, Algorithm::p2p, 8},
                                   {CollectiveOp::send_recv, Algorithm::p2p, 8},
                                   {CollectiveOp::all_gather, Algorithm::pat, 1}};
  for (const Case& c : cases) {
    INFO(to_string(c.op) << " " << to_string(c.algo));
    const int64_t gpn = c.gpus_per_node, gpus = gpn == 1 ? 4 : 16;
    const auto req = request(c.op, 4e9, c.algo, Protocol::simple);
    const double one = run_one(graph(cluster(h100_sxm(), gpus, gpn, hdr(), gpn)), req, ideal()).seconds();
    const double two = run_one(graph(cluster(h100_sxm(), gpus, gpn, hdr(), 2 * gpn)), req, ideal()).seconds();
    CHECK(two < 0.9 * one);
  }
}

TEST_CASE("concurrent collectives share links: two on the same GPUs each take twice as long",
          "[sim][collectives]") {
  const double S = 1 * kGiB;
  auto g = graph(cluster(h100_sxm(), 16));
  const double alone =
      run_one(g, request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple), ideal()).seconds();
  Simulation sim(g, ideal());
  std::vector<double> t;
  for (int i = 0; i < 2; ++i)
    sim.collectives().run(request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple),
                          [&](const CollectiveResult& r) { t.push_back(r.seconds()); });
  sim.run();
  REQUIRE(t.size() == 2);
  CHECK(t[0] == Approx(2 * alone).epsilon(1e-6));
  CHECK(t[1] == Approx(2 * alone).epsilon(1e-6));
}

TEST_CASE("a 2:1 oversubscribed spine halves cross-leaf bandwidth", "[sim][network][collectives]") {
  // Radix-8 fat tree, 2 nodes x 4 GPUs x 4 NICs: one leaf per node; leaf uplinks = 4 ports
  // (1:1) or 2 ports (2:1) to a single spine. All four GPUs of node 0 send to node 1.
  auto spec = cluster(h100_sxm(), 8, 4, ib_ndr(), 4);
  spec.shape = FabricShape::fat_tree;
  spec.fabric.switch_radix = 8;
  auto rate = [&](double over) {
    auto s = spec;
    s.oversubscription = over;
    Simulation sim(graph(s), ideal());
    std::vector<double> t;
    for (int64_t i = 0; i < 4; ++i)
      sim.send(i, 4 + i, 1e9, [&](FlowId) { t.push_back(sim.engine().now().seconds()); });
    sim.run();
    return 1e9 / t.back();
  };
  const double full = rate(1.0), half = rate(2.0);
  CHECK(full == Approx(50e9).epsilon(1e-3));
  CHECK(half == Approx(25e9).epsilon(1e-3));
  // And a whole all_reduce across the two leaves slows down accordingly.
  auto s2 = spec;
  s2.oversubscription = 2.0;
  const auto ar1 = run_one(
      graph(spec), request(CollectiveOp::all_reduce, 1e9, Algorithm::ring, Protocol::simple), ideal());
  const auto ar2 =
      run_one(graph(s2), request(CollectiveOp::all_reduce, 1e9, Algorithm::ring, Protocol::simple), ideal());
  CHECK(ar2.seconds() > ar1.seconds());
}

TEST_CASE("selection: tree or LL at small sizes, ring/Simple or NVLS at large", "[sim][collectives][tuner]") {
  struct Setup {
    const char* name;
    ClusterGraphSpec spec;
  };
  const std::vector<Setup> setups = {{"1 x 8 H100", cluster(h100_sxm(), 8)},
                                     {"16 x 8 H100", cluster(h100_sxm(), 128)},
                                     {"4 x 8 A100 HDR", cluster(a100(), 32, 8, hdr())},
                                     {"64 x 8 A100 HDR", cluster(a100(), 512, 8, hdr())}};
  for (const Setup& s : setups) {
    INFO(s.name);
    auto g = graph(s.spec);
    Simulation sim(g);
    const TunerChoice small = sim.collectives().plan(request(CollectiveOp::all_reduce, 1024));
    CHECK((small.algorithm == Algorithm::tree || small.protocol == Protocol::ll));
    const TunerChoice large = sim.collectives().plan(request(CollectiveOp::all_reduce, 4 * kGiB));
    CHECK(large.protocol == Protocol::simple);
    CHECK((large.algorithm == Algorithm::ring || large.algorithm == Algorithm::nvls ||
           large.algorithm == Algorithm::nvls_tree));
  }
  // Multi-node A100: small messages on the tree, large on the ring.
  Simulation a(graph(cluster(a100(), 512, 8, hdr())));
  CHECK(a.collectives().plan(request(CollectiveOp::all_reduce, 1024)).algorithm == Algorithm::tree);
  CHECK(a.collectives().plan(request(CollectiveOp::all_reduce, 4 * kGiB)).algorithm == Algorithm::ring);
  // Channels shrink for small messages (NCCL's nc-- loop).
  Simulation h(graph(cluster(h100_sxm(), 8)));
  CHECK(h.collectives()
            .plan(request(CollectiveOp::all_reduce, 8, Algorithm::ring, Protocol::simple))
            .channels == 1);
  CHECK(h.collectives()
            .plan(request(CollectiveOp::all_reduce, 1e9, Algorithm::ring, Protocol::simple))
            .channels == 16);
}

TEST_CASE("Exercise 1: 7B bf16 ring all-reduce, NVLink 900 GB/s vs IB 25 GB/s, is about 36x",
          "[sim][collectives][textbook]") {
  // The chapter's Exercise 1, bandwidth only: 7e9 parameters x 2 bytes over 8 GPUs.
  const double S = 7e9 * 2;
  GpuSpec nvlink = h100_sxm();
  nvlink.scale_up_bytes_per_s = 900e9;
  FabricSpec ib = ib_ndr();
  ib.port_bytes_per_s = 25e9;
  const auto t_nvlink =
      run_one(graph(cluster(nvlink, 8)),
              request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple), ideal());
  const auto t_ib = run_one(graph(cluster(nvlink, 8, 1, ib, 1)),
                            request(CollectiveOp::all_reduce, S, Algorithm::ring, Protocol::simple), ideal());
  CHECK(t_nvlink.seconds() == Approx(2.0 * 7 / 8 * S / 900e9).epsilon(1e-6));  // 27.2 ms
  CHECK(t_ib.seconds() == Approx(2.0 * 7 / 8 * S / 25e9).epsilon(1e-6));       // 0.98 s
  CHECK(t_ib.seconds() / t_nvlink.seconds() == Approx(36.0).epsilon(0.01));
}

TEST_CASE("every op and algorithm runs and reports nccl-tests bandwidths", "[sim][collectives]") {
  auto g = graph(cluster(h100_sxm(), 16));
  auto one_node = graph(cluster(h100_sxm(), 8));
  auto one_per_node = graph(cluster(h100_sxm(), 8, 1, ib_ndr(), 1));
  struct Case {
    std::shared_ptr<const ClusterGraph> g;
    CollectiveOp op;
    Algorithm algo;
    Protocol proto;
  };
  const std::vector<Case> cases = {
      {g, CollectiveOp::all_reduce, Algorithm::ring, Protocol::ll},
      {g, CollectiveOp::all_reduce, Algorithm::ring, Protocol::ll128},
      {g, CollectiveOp::all_reduce, Algorithm::tree, Protocol::simple},
      {g, CollectiveOp::all_reduce, Algorithm::nvls_tree, Protocol::simple},
      {g, CollectiveOp::all_reduce, Algorithm::hierarchical, Protocol::simple},
      {g, CollectiveOp::all_gather, Algorithm::hierarchical, Protocol::simple},
      {g, CollectiveOp::reduce_scatter, Algorithm::ring, Protocol::simple},
      {g, CollectiveOp::broadcast, Algorithm::ring, Protocol::simple},
      {g, CollectiveOp::reduce, Algorithm::ring, Protocol::ll},
      {g, CollectiveOp::all_to_all, Algorithm::p2p, Protocol::simple},
      {g, CollectiveOp::send_recv, Algorithm::p2p, Protocol::simple},
      {one_node, CollectiveOp::all_gather, Algorithm::nvls, Protocol::simple},
      {one_node, CollectiveOp::reduce_scatter, Algorithm::nvls, Protocol::simple},
      {one_per_node, CollectiveOp::all_gather, Algorithm::pat, Protocol::simple},
      {one_per_node, CollectiveOp::reduce_scatter, Algorithm::pat, Protocol::simple},
  };
  for (const Case& c : cases) {
    INFO(to_string(c.op) << " " << to_string(c.algo) << " " << to_string(c.proto));
    const auto r = run_one(c.g, request(c.op, 256e6, c.algo, c.proto));
    CHECK(r.algorithm == c.algo);
    CHECK(r.protocol == c.proto);
    CHECK(r.seconds() > 0);
    CHECK(r.busbw_bytes_per_s() == Approx(r.algbw_bytes_per_s() * busbw_factor(c.op, r.ranks)));
    // No collective beats the physics: busbw <= 2 x (effective NVLink) for any op here.
    CHECK(r.busbw_bytes_per_s() < 2 * 450e9);
  }
  CHECK(busbw_factor(CollectiveOp::all_reduce, 8) == Approx(14.0 / 8));
  CHECK(busbw_factor(CollectiveOp::all_gather, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(CollectiveOp::all_to_all, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(CollectiveOp::broadcast, 8) == 1.0);
}

TEST_CASE("bad requests are InputErrors naming the request's field", "[sim][collectives]") {
  auto a = graph(cluster(a100(), 8));
  Simulation sim(a);
  auto expect_field = [&](CollectiveRequest req, const std::string& field) {
    try {
      sim.collectives().plan(req);
      FAIL("no error for " << field);
    } catch (const InputError& e) {
      CHECK(e.file() == "collective");
      CHECK(e.field() == field);
      CHECK_FALSE(e.why().empty());
    }
  };
  expect_field(request(CollectiveOp::all_reduce, 1e6, Algorithm::nvls), "algorithm");  // no NVLS on A100
  expect_field(request(CollectiveOp::all_gather, 1e6, Algorithm::tree), "algorithm");
  expect_field(request(CollectiveOp::all_reduce, 1e6, Algorithm::collnet_direct), "algorithm");
  expect_field(request(CollectiveOp::all_gather, 1e6, Algorithm::pat), "algorithm");  // 8 GPUs on one node
  expect_field(request(CollectiveOp::broadcast, 1e6, Algorithm::tree), "algorithm");
  expect_field(request(CollectiveOp::all_reduce, 0), "bytes");
  expect_field(request(CollectiveOp::all_reduce, std::ldexp(1.0, 51)), "bytes");
  Simulation h(graph(cluster(h100_sxm(), 16)));
  auto nvls_multi = request(CollectiveOp::all_reduce, 1e6, Algorithm::nvls);
  CHECK_THROWS_AS(h.collectives().plan(nvls_multi), InputError);
  CHECK_THROWS_AS(h.collectives().plan(request(CollectiveOp::all_reduce, 1e6, Algorithm::nvls, Protocol::ll)),
                  InputError);
  CHECK_FALSE(parse_algorithm("bogus"));
  CHECK(parse_algorithm("NVLSTREE") == Algorithm::nvls_tree);
  CHECK(parse_algorithm("Ring") == Algorithm::ring);
  CHECK(parse_protocol("simple") == Protocol::simple);
  CHECK(parse_protocol("LL128") == Protocol::ll128);
  CHECK(parse_collective_op("allreduce") == CollectiveOp::all_reduce);
  CHECK(parse_collective_op("all_gather") == CollectiveOp::all_gather);
  CHECK_FALSE(parse_collective_op("scatter"));
}
