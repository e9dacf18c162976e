// Flow-level network: max-min fair sharing, incremental recomputation, latency, conservation.
#include <catch2/catch.hpp>
#include <map>

#include "collective_fixtures.hpp"
#include "simrun/sim/network/network.hpp"

using namespace simrun;

namespace {

struct Done {
  std::map<FlowId, TimeNs> at;
  Network::DoneCallback cb(Engine& e) {
    return [this, &e](FlowId id) { at[id] = e.now(); };
  }
};

FlowSpec flow(std::vector<LinkId> links, double bytes, TimeNs latency = TimeNs{}) {
  FlowSpec f;
  for (LinkId l : links) f.links.push_back(LinkUse{l, 1.0});
  f.bytes = bytes;
  f.latency = latency;
  return f;
}

}  // namespace

TEST_CASE("a lone flow takes latency + bytes / bandwidth", "[sim][network]") {
  Engine e;
  Network net(e, {100e9, 50e9});
  Done d;
  const FlowId f = net.start_flow(flow({0, 1}, 1e9, TimeNs{2000}), d.cb(e));
  e.run();
  // bottleneck 50 GB/s: 20 ms, plus 2 µs
  CHECK(d.at[f].ns == 20'000'000 + 2000);
}

TEST_CASE("two flows on one link each get half", "[sim][network]") {
  Engine e;
  Network net(e, {10e9});
  Done d;
  const FlowId a = net.start_flow(flow({0}, 1e9), d.cb(e));
  const FlowId b = net.start_flow(flow({0}, 1e9), d.cb(e));
  e.run_until(TimeNs{1});
  CHECK(net.flow_rate(a) == Approx(5e9));
  CHECK(net.flow_rate(b) == Approx(5e9));
  e.run();
  CHECK(d.at[a].ns == 200'000'000);
  CHECK(d.at[b].ns == 200'000'000);
  CHECK(net.stats().settles <= 2);  // start batch, end batch
}

TEST_CASE("max-min: a flow limited elsewhere leaves the rest to the others", "[sim][network]") {
  // Link 0: 10 GB/s shared by A and B; link 1: 2 GB/s only on B's path.
  Engine e;
  Network net(e, {10e9, 2e9});
  Done d;
  const FlowId a = net.start_flow(flow({0}, 8e9), d.cb(e));
  const FlowId b = net.start_flow(flow({0, 1}, 2e9), d.cb(e));
  e.run_until(TimeNs{1});
  CHECK(net.flow_rate(b) == Approx(2e9));
  CHECK(net.flow_rate(a) == Approx(8e9));
  e.run();
  CHECK(d.at[a].ns == 1'000'000'000);
  CHECK(d.at[b].ns == 1'000'000'000);
}

TEST_CASE("when a flow ends the survivors speed up (rates recomputed)", "[sim][network]") {
  Engine e;
  Network net(e, {10e9});
  Done d;
  const FlowId small = net.start_flow(flow({0}, 1e9), d.cb(e));
  const FlowId big = net.start_flow(flow({0}, 3e9), d.cb(e));
  e.run();
  // Both at 5 GB/s until small is done at 0.2 s (big has 2 GB left), then big alone at 10 GB/s.
  CHECK(d.at[small].ns == 200'000'000);
  CHECK(d.at[big].ns == 400'000'000);
}

TEST_CASE("weights: a coupled flow using a link twice gets half the rate there", "[sim][network]") {
  Engine e;
  Network net(e, {10e9, 10e9});
  Done d;
  FlowSpec f;
  f.links = {LinkUse{0, 1.0}, LinkUse{1, 1.0}, LinkUse{1, 1.0}};  // duplicate merged to weight 2
  f.bytes = 1e9;
  const FlowId id = net.start_flow(f, d.cb(e));
  e.run();
  CHECK(d.at[id].ns == 200'000'000);
  CHECK(net.link_carried_bytes(0) == Approx(1e9));
  CHECK(net.link_carried_bytes(1) == Approx(2e9));
}

TEST_CASE("rate caps bind before links", "[sim][network]") {
  Engine e;
  Network net(e, {10e9});
  Done d;
  FlowSpec capped = flow({0}, 1e9);
  capped.max_bytes_per_s = 1e9;
  const FlowId a = net.start_flow(capped, d.cb(e));
  const FlowId b = net.start_flow(flow({0}, 9e9), d.cb(e));
  e.run_until(TimeNs{1});
  CHECK(net.flow_rate(a) == Approx(1e9));
  CHECK(net.flow_rate(b) == Approx(9e9));
  e.run();
  CHECK(d.at[a].ns == 1'000'000'000);
  CHECK(d.at[b].ns == 1'000'000'000);
}

TEST_CASE("flows started later join the sharing at their start time", "[sim][network]") {
  Engine e;
  Network net(e, {10e9});
  Done d;
  const FlowId a = net.start_flow(flow({0}, 2e9), d.cb(e));
  FlowId b = 0;
  e.schedule_at(TimeNs{100'000'000}, [&] { b = net.start_flow(flow({0}, 0.5e9), d.cb(e)); });
  e.run();
  // a: 1 GB alone by 0.1 s; then 5 GB/s each: b done at 0.2 s; a has 0.5 GB left at 10 GB/s -> 0.25 s
  CHECK(d.at[b].ns == 200'000'000);
  CHECK(d.at[a].ns == 250'000'000);
}

TEST_CASE("cancelled flows free their bandwidth and never call back", "[sim][network]") {
  Engine e;
  Network net(e, {10e9});
  Done d;
  const FlowId a = net.start_flow(flow({0}, 1e9), d.cb(e));
  const FlowId b = net.start_flow(flow({0}, 1e9), d.cb(e));
  e.schedule_at(TimeNs{100'000'000}, [&] { CHECK(net.cancel_flow(b)); });
  e.run();
  CHECK(d.at.count(b) == 0);
  // a: 0.5 GB at 5 GB/s in 0.1 s, rest at 10 GB/s -> 0.15 s
  CHECK(d.at[a].ns == 150'000'000);
  CHECK(net.stats().flows_cancelled == 1);
  CHECK(net.active_flows() == 0);
}

TEST_CASE("bytes are conserved on every link", "[sim][network]") {
  Engine e;
  const int links = 6;
  Network net(e, std::vector<double>(links, 3e9));
  Done d;
  double expected[links] = {};
  for (int i = 0; i < 40; ++i) {
    std::vector<LinkId> route;
    for (int l = 0; l < links; ++l)
      if ((i * 7 + l * 3) % 5 < 2) route.push_back(LinkId(l));
    if (route.empty()) route.push_back(LinkId(i % links));
    const double bytes = 1e6 * double(1 + i % 9);
    for (LinkId l : route) expected[l] += bytes;
    e.schedule_at(TimeNs{int64_t(i) * 37'000},
                  [&, route, bytes] { net.start_flow(flow(route, bytes), d.cb(e)); });
  }
  e.run();
  CHECK(d.at.size() == 40);
  for (int l = 0; l < links; ++l)
    CHECK(net.link_carried_bytes(LinkId(l)) == Approx(expected[l]).epsilon(1e-6));
}

TEST_CASE("recomputation touches only the affected component", "[sim][network]") {
  // 1000 flows on 1000 disjoint links: starting one more on link 0 re-rates 2 flows, not 1001.
  Engine e;
  Network net(e, std::vector<double>(1000, 1e9));
  Done d;
  for (LinkId l = 0; l < 1000; ++l) net.start_flow(flow({l}, 1e9), d.cb(e));
  e.run_until(TimeNs{1});
  const auto before = net.stats().flows_rerated;
  net.start_flow(flow({0}, 1e6), d.cb(e));
  e.run_until(TimeNs{2});
  CHECK(net.stats().flows_rerated - before == 2);
  e.run();
  CHECK(d.at.size() == 1001);
}

TEST_CASE("thousands of concurrent flows through a fat-tree complete, none faster than its NIC",
          "[sim][network]") {
  // 512 GPUs, every GPU sends to the GPU 256 away (crosses the spine): a shift, which the fabric's
  // destination routing (d-mod-k) spreads over the 8 spine bundles of 4 ports, 4 flows each.
  auto g = test::graph(test::cluster(test::h100_sxm(), 512));
  Simulation sim(g, test::ideal());
  std::vector<TimeNs> done;
  for (int64_t s = 0; s < 512; ++s)
    sim.send(s, (s + 256) % 512, 1e9, [&](FlowId) { done.push_back(sim.engine().now()); });
  sim.run();
  REQUIRE(done.size() == 512);
  const double t_min = done.front().seconds(), t_max = done.back().seconds();
  // 1 GB at 50 GB/s = 20 ms (+ µs latencies), every flow at its NIC's rate: no spine collisions.
  CHECK(t_min >= 0.02);
  CHECK(t_min < 0.0201);
  CHECK(t_max < 0.0201);
  CHECK(sim.network().stats().flows_completed == 512);
}
