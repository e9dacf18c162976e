// estimate_speed: how fast the closed-form estimate (`simrun estimate`, what `simrun plan` calls
// once per surviving layout) runs. Prints the time of one estimate() call and the calls per second
// on three fixed layouts (Llama-3 405B on 1,024 H100 with an interleaved balanced pipeline,
// Llama-3 70B with CP, Mixtral 8x7B with EP), each run with its framework's workload and memory
// conventions as the planner runs it (the fastest of five rounds). With --dump FILE it also writes the full
// report (to_json) of a seeded sample of layouts, one JSON document per line, so that a change meant to make
// the estimate faster can be diffed against the reports before it: every number must stay.
//
//   build/bench/estimate_speed [--seconds S | --calls N] [--dump FILE] [--samples N] [--seed S]
//
// --calls N runs exactly N calls per layout, for counting instructions, e.g.
//   valgrind --tool=callgrind --toggle-collect='simrun::estimate(*' build/bench/estimate_speed --calls 20
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "simrun/common/error.hpp"
#include "split_mix.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

using namespace simrun;
using simrun::bench::SplitMix;

namespace {


struct Fixed {
  const char* name;
  ScenarioOverrides overrides;
};

std::vector<Fixed> fixed_layouts() {
  std::vector<Fixed> f;
  {
    ScenarioOverrides o;
    o.model = "llama3-405b";
    o.gpu = "h100-sxm";
    o.gpus = 1024;
    o.tp = 8;
    o.pp = 8;
    o.virtual_stages = 2;
    o.pipeline_split = "balanced";
    o.global_batch = 1024;
    o.seq_len = 8192;
    f.push_back({"llama3-405b 1024 h100-sxm tp8 pp8 vpp2 balanced gb1024 seq8192", o});
  }
  {
    ScenarioOverrides o;
    o.model = "llama3-70b";
    o.gpu = "h100-sxm";
    o.gpus = 1024;
    o.tp = 4;
    o.pp = 2;
    o.virtual_stages = 8;
    o.cp = 2;
    o.global_batch = 512;
    f.push_back({"llama3-70b 1024 h100-sxm tp4 pp2 vpp8 cp2 gb512", o});
  }
  {
    ScenarioOverrides o;
    o.model = "mixtral-8x7b";
    o.gpu = "h100-sxm";
    o.gpus = 64;
    o.tp = 1;
    o.pp = 4;
    o.virtual_stages = 8;
    o.ep = 8;
    o.global_batch = 256;
    f.push_back({"mixtral-8x7b 64 h100-sxm tp1 pp4 vpp8 ep8 gb256", o});
  }
  return f;
}

// Seeded layouts over the estimate's branches: dense and MoE models, NVSwitch boards, NVL72
// racks and an Infinity Fabric mesh, 8 to 2,048 GPUs, TP/PP (1F1B, interleaved, balanced
// splits)/CP/EP, ZeRO 0-3, recompute, precisions, frameworks, and now and then a straggler or a
// slow link.
struct Drawn {
  ScenarioOverrides overrides;
  uint64_t degraded_draw = 0;
  int degraded_kind = 0;  // 0 none, 1 a straggler, 2 a slow NIC, 3 a slow scale-up link
};

Drawn draw(SplitMix& rng) {
  Drawn d;
  ScenarioOverrides& o = d.overrides;
  const std::string model = rng.pick<std::string>(
      {"llama3-8b", "llama2-13b", "mistral-7b", "llama3-70b", "gpt3-175b", "mixtral-8x7b", "llama3-405b"});
  const std::string gpu = rng.pick<std::string>({"h100-sxm", "a100-80gb", "h200", "b200", "mi300x", "gb200"});
  const int64_t gpus = rng.pick<int64_t>({8, 16, 64, 256, 1024, 2048});
  const int64_t tp = rng.pick<int64_t>({1, 2, 4, 8});
  const int64_t pp = rng.pick<int64_t>({1, 2, 4, 8});
  const int64_t cp = rng.pick<int64_t>({1, 1, 1, 2});
  const int64_t micro_batch = rng.pick<int64_t>({1, 2});
  const int64_t seq_len = rng.pick<int64_t>({1024, 2048, 4096, 8192});
  const int64_t virtual_stages = pp > 1 ? rng.pick<int64_t>({1, 1, 2, 4}) : 1;
  const bool balanced = pp > 1 && rng.pick<int>({0, 1}) == 1;
  const int64_t dp = std::max<int64_t>(1, gpus / (tp * pp * cp));
  const int64_t m = rng.pick<int64_t>({1, pp, 4 * pp});
  const int64_t zero = rng.pick<int64_t>({0, 1, 1, 2, 3});
  const std::string recompute = rng.pick<std::string>({"none", "selective", "full"});
  const std::string precision = gpu == "a100-80gb" ? "bf16" : rng.pick<std::string>({"bf16", "fp8"});
  const int64_t ep = model == "mixtral-8x7b" ? rng.pick<int64_t>({1, 2, 4, 8}) : 1;
  const std::string framework =
      rng.pick<std::string>({"", "", "megatron-core", "nemo", "deepspeed", "torchtitan", "fsdp2"});
  o.model = model;
  o.gpu = gpu;
  o.gpus = gpus;
  o.tp = tp;
  o.pp = pp;
  o.virtual_stages = virtual_stages;
  if (balanced) o.pipeline_split = "balanced";
  o.cp = cp;
  o.ep = ep;
  o.micro_batch = micro_batch;
  o.seq_len = seq_len;
  o.global_batch = micro_batch * dp * m;
  o.zero_stage = zero;
  o.recompute = recompute;
  o.precision = precision;
  if (!framework.empty()) o.framework = framework;
  d.degraded_draw = rng.next();
  d.degraded_kind = rng.pick<int>({0, 0, 0, 1, 2, 3});
  return d;
}

struct Args {
  double seconds = 1.0;  // per fixed layout
  int64_t calls = 0;     // > 0: exactly this many calls per layout, one round (for callgrind's counts)
  std::string dump;
  int64_t samples = 400;
  uint64_t seed = 24;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--seconds") == 0 && has_value) {
      a.seconds = std::strtod(argv[++i], nullptr);
      if (!(a.seconds > 0)) throw std::invalid_argument("--seconds: expected a positive number");
    } else if (std::strcmp(argv[i], "--calls") == 0 && has_value) {
      a.calls = std::strtoll(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--dump") == 0 && has_value) {
      a.dump = argv[++i];
    } else if (std::strcmp(argv[i], "--samples") == 0 && has_value) {
      a.samples = std::strtoll(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--seed") == 0 && has_value) {
      a.seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      throw std::invalid_argument(fmt::format("unknown or incomplete argument '{}'", argv[i]));
    }
  }
  return a;
}

// Writes the reports of the seeded sample; returns how many layouts the scenario rules refused.
int64_t dump_sample(const Args& a, const Catalogs& catalogs) {
  std::ofstream out(a.dump);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", a.dump));
  SplitMix rng{a.seed};
  int64_t refused = 0, written = 0;
  for (int64_t i = 0; i < a.samples; ++i) {
    const Drawn d = draw(rng);
    try {
      const Scenario s = load_scenario({}, d.overrides, catalogs);
      AnalyticOptions options = framework_options(s);
      const int64_t rank = int64_t(d.degraded_draw % uint64_t(s.layout.world_size()));
      if (d.degraded_kind == 1) options.stragglers = {Straggler{rank, 1.5}};
      if (d.degraded_kind == 2) options.slow_links = {SlowLink{rank, 0.25, LinkClass::scale_out}};
      if (d.degraded_kind == 3) options.slow_links = {SlowLink{rank, 0.5, LinkClass::scale_up}};
      const Report r = estimate(s, options);
      out << to_json(r).dump() << '\n';
      ++written;
    } catch (const InputError&) {
      ++refused;
    }
  }
  fmt::print("wrote {} reports to {} ({} layouts refused by the scenario rules)\n", written, a.dump, refused);
  return refused;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::invalid_argument& e) {
    fmt::print(
        stderr,
        "estimate_speed: {} (usage: [--seconds S | --calls N] [--dump FILE] [--samples N] [--seed S])\n",
        e.what());
    return 2;
  }
  const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
  using Clock = std::chrono::steady_clock;
  for (const Fixed& f : fixed_layouts()) {
    const Scenario s = load_scenario({}, f.overrides, catalogs);
    const AnalyticOptions options = framework_options(s);
    double checksum = estimate(s, options).step_time_s;  // the first call fills what is remembered
    if (args.calls > 0) {
      for (int64_t i = 0; i < args.calls; ++i) checksum += estimate(s, options).step_time_s;
      fmt::print("{:<64} {} calls (step {:.6g} s)\n", f.name, args.calls, checksum / double(args.calls + 1));
      continue;
    }
    // Five rounds, the fastest one counted (the machine may be busy with other work).
    int64_t calls = 0;
    double best_s = std::numeric_limits<double>::infinity();
    for (int round = 0; round < 5; ++round) {
      int64_t round_calls = 0;
      const auto start = Clock::now();
      double elapsed = 0;
      while (elapsed < args.seconds / 5) {
        for (int i = 0; i < 8; ++i) checksum += estimate(s, options).step_time_s;
        round_calls += 8;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      }
      calls += round_calls;
      best_s = std::min(best_s, elapsed / double(round_calls));
    }
    fmt::print("{:<64} {:9.2f} us/call {:9.0f} calls/s  (step {:.6g} s)\n", f.name, 1e6 * best_s,
               1.0 / best_s, checksum / double(calls + 1));
  }
  if (!args.dump.empty()) dump_sample(args, catalogs);
  return 0;
}
