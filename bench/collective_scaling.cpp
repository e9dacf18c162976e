// Simulator speed for collectives from 8 to 131,072 GPUs: a 16 GiB all_reduce on H100 nodes
// with a rail-optimized NDR fat-tree (the targets: 16,384 GPUs < 1 s, 131,072 < 10 s of
// wall time on one core), per algorithm, plus an nccl-tests sweep, the per-step decomposition and
// thousands of concurrent point-to-point flows, each with events, flows and events/s.
//   build/bench/collective_scaling            (all scales)
//   build/bench/collective_scaling 16384      (one scale)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include "simrun/sim/collectives/collective_harness.hpp"
#include "simrun/sim/collectives/collective_sweep.hpp"
#include "simrun/topologies/catalog.hpp"

using namespace simrun;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Run {
  CollectiveResult result;
  uint64_t events = 0, flows = 0, settles = 0;
  double wall_s = 0;
};

Run run(std::shared_ptr<const ClusterGraph> g, CollectiveRequest req, SimulationOptions opt = {}) {
  const auto t0 = Clock::now();
  Simulation sim(std::move(g), opt);
  std::optional<CollectiveResult> out;
  sim.collectives().run(req, [&](const CollectiveResult& r) { out = r; });
  sim.run();
  Run r;
  r.wall_s = since(t0);
  r.result = *out;
  r.events = sim.engine().events_processed();
  r.flows = sim.network().stats().flows_started;
  r.settles = sim.network().stats().settles;
  return r;
}

void print_run(int64_t gpus, const char* what, double build_s, const Run& r) {
  std::printf(
      "| %7lld | %-22s | %-8s | %-6s | %9.2f | %7.1f | %7llu | %7llu | %7llu | %7.3f | %7.3f | %10.0f |\n",
      static_cast<long long>(gpus), what, to_string(r.result.algorithm), to_string(r.result.protocol),
      r.result.seconds() * 1e3, r.result.busbw_bytes_per_s() / 1e9, static_cast<unsigned long long>(r.events),
      static_cast<unsigned long long>(r.flows), static_cast<unsigned long long>(r.settles), build_s, r.wall_s,
      r.wall_s > 0 ? double(r.events) / r.wall_s : 0.0);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path data = SIMRUN_DATA_DIR;
  const HardwareCatalog catalog =
      HardwareCatalog::load(data / "topologies" / "gpus", data / "topologies" / "fabrics",
                            data / "topologies" / "architectures.json");
  const GpuSpec& h100 = catalog.gpu("h100-sxm", "bench", "gpu");
  const FabricSpec& ndr = catalog.fabric("ib-ndr", "bench", "fabric");
  std::vector<int64_t> scales = {8, 64, 512, 4096, 16384, 65536, 131072};
  if (argc > 1) scales = {std::atoll(argv[1])};
  const double S = 16.0 * 1024 * 1024 * 1024;

  std::printf("# 16 GiB all_reduce, h100-sxm x N, 8 x ib-ndr per node, rail-optimized; one core\n");
  std::printf(
      "| GPUs    | run                    | algo     | proto  | sim (ms)  | busbw   | events  | flows   | "
      "rerates | build s | wall s  | events/s   |\n");
  std::printf(
      "|---------|------------------------|----------|--------|-----------|---------|---------|---------|----"
      "-----|---------|---------|------------|\n");
  for (int64_t n : scales) {
    ClusterGraphSpec spec;
    spec.gpu = h100;
    spec.fabric = ndr;
    spec.num_gpus = n;
    spec.gpus_per_node = 8;
    spec.nics_per_node = 8;
    const auto t0 = Clock::now();
    auto g = std::make_shared<ClusterGraph>(spec);
    const double build_s = since(t0);
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.bytes = S;
    const Run automatic = run(g, req);
    print_run(n, "auto (tuner)", build_s, automatic);
    std::printf(
        "|         | total incl. graph      |          |        |           |         |         |         |  "
        "       |         | %7.3f |            |\n",
        build_s + automatic.wall_s);
    for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls_tree}) {
      if (n == 8 && a == Algorithm::nvls_tree) continue;
      req.algorithm = a;
      req.protocol = Protocol::simple;
      print_run(n, (std::string(to_string(a)) + " Simple").c_str(), build_s, run(g, req));
    }
    if (n <= 128) {
      SimulationOptions steps;
      steps.collectives.decomposition = Decomposition::per_step;
      req.algorithm = Algorithm::ring;
      print_run(n, "Ring, per-step flows", build_s, run(g, req, steps));
    }
    if (n <= 16384) {
      SweepOptions o;
      o.min_bytes = 8;
      o.max_bytes = S;
      SweepStats st;
      run_collective_sweep(g, o, &st);
      std::printf(
          "| %7lld | sweep 8 B..16 GiB x2   | (32 sizes)        |           |         | %7llu | %7llu | "
          "%7llu | %7.3f | %7.3f | %10.0f |\n",
          static_cast<long long>(n), static_cast<unsigned long long>(st.events),
          static_cast<unsigned long long>(st.flows), static_cast<unsigned long long>(st.settles), build_s,
          st.wall_s, st.wall_s > 0 ? double(st.events) / st.wall_s : 0.0);
    }
    if (n >= 64 && n <= 512) {
      CollectiveRequest a2a;
      a2a.op = CollectiveOp::all_to_all;
      a2a.bytes = 1024.0 * 1024 * 1024;
      if (n > 128) {  // independent flows up to 128 ranks (16,256 flows); coupled above
        a2a.ranks.clear();
        for (int64_t r = 0; r < 128; ++r) a2a.ranks.push_back(r * (n / 128));
      }
      print_run(int64_t(a2a.ranks.empty() ? n : 128), "alltoall 1 GiB (p2p)", build_s, run(g, a2a));
    }
  }
  return 0;
}
