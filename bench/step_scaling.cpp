// step_scaling: simulator speed from 8 to 16,384 GPUs. Llama-3 405B (126 layers, 8K sequence)
// on H100 SXM with TP 8 and the interleaved schedule, PP up to 16 and DP filling the rest, 16
// micro-batches per pipeline (global batch 2,048 at 16,384 GPUs: the headline layout
// TP8 PP16 DP128). Each configuration runs in its own child process so that its peak RSS is
// its own; prints wall time, events, events/s, tasks, and peak RSS, for the default
// (representative ranks) and the --full (every rank) simulation.
//
//   build/bench/step_scaling [--max-gpus N] [--no-full] [--full-max-gpus N]
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "simrun/sim/scenario/scenario_parser.hpp"
#include "simrun/sim/event/simulate.hpp"

using namespace simrun;

namespace {

struct Config {
  int64_t gpus, tp, pp, dp, v;
};

Scenario make_scenario(const Catalogs& cat, const Config& c) {
  Scenario sc;
  sc.file = "step_scaling";
  sc.model = cat.models.get("llama3-405b", "step_scaling", "model");
  sc.model.seq_len = 8192;
  sc.cluster.gpu = cat.hardware.gpu("h100-sxm", "step_scaling", "gpu");
  sc.cluster.fabric = cat.hardware.fabric("ib-ndr", "step_scaling", "fabric");
  sc.cluster.num_gpus = c.gpus;
  sc.cluster.gpus_per_node = 8;
  sc.cluster.nics_per_node = 8;
  Layout& l = sc.layout;
  l.tp = c.tp;
  l.pp = c.pp;
  l.dp = c.dp;
  l.virtual_stages = c.v;
  // 126 layers: the embedding and the loss take a layer's place each (128 = 16 stages · 2 · 4).
  if (sc.model.layers % (c.pp * c.v) != 0) l.pipeline_split = PipelineSplit::embedding_loss_layers;
  l.sequence_parallel = true;
  l.zero_stage = 1;
  l.micro_batch = 1;
  l.global_batch = 16 * c.dp;
  l.recompute = Recompute::none;
  l.precision = Precision::bf16;
  return sc;
}

struct Result {
  double wall_s = 0, step_s = 0;
  uint64_t events = 0, tasks = 0;
  int64_t ranks = 0;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t max_gpus = 16384, full_max = 16384;
  bool full = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--max-gpus") && i + 1 < argc)
      max_gpus = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--full-max-gpus") && i + 1 < argc)
      full_max = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-full"))
      full = false;
    else {
      std::cerr << "usage: step_scaling [--max-gpus N] [--full-max-gpus N] [--no-full]\n";
      return 2;
    }
  }
  const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
  const std::vector<Config> configs = {{8, 8, 1, 1, 1},     {64, 8, 8, 1, 2},     {128, 8, 16, 1, 2},
                                       {1024, 8, 16, 8, 2}, {4096, 8, 16, 32, 2}, {16384, 8, 16, 128, 2}};
  fmt::print(
      "Llama-3 405B, 8K sequence, H100 SXM, TP8, interleaved (v=2 where pp>1), 16 micro-batches per "
      "pipeline\n");
  fmt::print("{:>6} {:>13} {:>6} {:>8} {:>9} {:>11} {:>12} {:>10} {:>9} {:>10}\n", "GPUs", "layout", "mode",
             "ranks", "step s", "tasks", "events", "wall s", "Mev/s", "peak RSS");
  for (const Config& c : configs) {
    if (c.gpus > max_gpus) continue;
    for (int mode = 0; mode < 2; ++mode) {
      const bool is_full = mode == 1;
      if (is_full && (!full || c.gpus > full_max)) continue;
      int fds[2];
      if (pipe(fds) != 0) return 1;
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        SimulateOptions o;
        o.step.scope = is_full ? SimulationScope::full : SimulationScope::representatives;
        const Scenario sc = make_scenario(catalogs, c);
        const auto t0 = std::chrono::steady_clock::now();
        const SimulationOutput out = simulate(sc, o);
        Result r;
        r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        r.step_s = out.report.step_time_s;
        r.events = out.step.events;
        r.tasks = out.step.tasks;
        r.ranks = out.step.simulated_ranks;
        if (write(fds[1], &r, sizeof r) != sizeof r) _exit(1);
        _exit(0);
      }
      close(fds[1]);
      Result r;
      const bool got = read(fds[0], &r, sizeof r) == sizeof r;
      close(fds[0]);
      int status = 0;
      struct rusage ru {};
      wait4(pid, &status, 0, &ru);
      const std::string layout = fmt::format("{}x{}x{} v{}", c.tp, c.pp, c.dp, c.v);
      if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fmt::print("{:>6} {:>13} {:>6}  failed\n", c.gpus, layout, is_full ? "full" : "rep");
        continue;
      }
      fmt::print("{:>6} {:>13} {:>6} {:>8} {:>9.3f} {:>11} {:>12} {:>10.3f} {:>9.2f} {:>7.0f} MiB\n", c.gpus,
                 layout, is_full ? "full" : "rep", r.ranks, r.step_s, r.tasks, r.events, r.wall_s,
                 r.events / r.wall_s / 1e6, double(ru.ru_maxrss) / 1024.0);
      std::cout.flush();
    }
  }
  return 0;
}
