// analytic_agreement: how closely the closed-form estimate (`simrun estimate`) follows the event
// simulation (`simrun simulate`) over a fixed, seeded sample of layouts: dense and MoE models,
// six GPU kinds (four on NVSwitch boards, GB200 in NVL72 racks, MI300X on an Infinity Fabric
// mesh), 8 to 256 GPUs,
// sequences of 1K to 8K, TP, PP (1F1B or interleaved), CP, EP, DP, ZeRO 0-3, recompute and 1 to
// 4·pp micro-batches. Both fidelities run with their shipped
// defaults. A layout counts as uncongested when its TP and CP groups stay inside a scale-up
// domain and neither fidelity exposes more than 10% of the step as communication: there the two
// should agree within 5% (issue 4); the rest is printed for information. Prints the counts, the
// distribution of (event − analytic)/analytic, and the layouts that disagree most, each as a
// command line that reproduces it. With --stragglers each layout also gets one GPU running
// 1.1x to 2x slower at a seeded rank (the same layouts as without): the event simulation runs
// every rank (--full) and the estimate paces that GPU's stage by it. With --slow-links each
// layout gets one GPU whose NIC or scale-up links run at 10% to 50% of their bandwidth (a
// seeded rank, class and fraction; both flags together give both). With --capacity-factors only
// the MoE layouts run, each with a seeded expert capacity factor (1.25, 1.5 or 2: every expert's
// tokens padded to that multiple of its share). With --cp-comm-type all_gather or a2a only the
// layouts with CP run, each with K,V all-gathered or with Ulysses all-to-alls instead of the ring
// (a2a refuses those whose heads do not divide); with a2a+p2p each of them runs twice the CP (on
// half the DP) as [2, cp]: all-to-alls over pairs of CP ranks, the ring over the pairs. With
// --mla every layout runs DeepSeek-V3 instead (multi-head latent attention, 256 experts, 1 to 16
// EP; 1F1B, balanced over the stages), CP ones included; with --shared-expert-overlap too, its
// shared expert runs beside the all-to-alls (--moe-shared-expert-overlap).
//
//   build/bench/analytic_agreement [--samples N] [--seed S] [--worst K] [--stragglers] [--slow-links]
//                                  [--capacity-factors] [--mla [--shared-expert-overlap]]
//                                  [--cp-comm-type all_gather|a2a|a2a+p2p]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "simrun/common/error.hpp"
#include "split_mix.hpp"
#include "simrun/sim/analytic/agreement_envelope.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"
#include "simrun/sim/event/simulate.hpp"

using namespace simrun;
using simrun::bench::SplitMix;

namespace {


ScenarioOverrides draw(SplitMix& rng) {
  ScenarioOverrides o;
  const std::string model = rng.pick<std::string>(
      {"llama3-8b", "llama2-13b", "mistral-7b", "llama3-70b", "gpt3-175b", "mixtral-8x7b"});
  const std::string gpu = rng.pick<std::string>({"h100-sxm", "a100-80gb", "h200", "b200", "mi300x", "gb200"});
  const int64_t gpus = rng.pick<int64_t>({8, 16, 64, 256});
  const int64_t tp = rng.pick<int64_t>({1, 2, 4, 8});
  const int64_t pp = rng.pick<int64_t>({1, 2, 4, 8});
  const int64_t cp = rng.pick<int64_t>({1, 1, 1, 2});
  const int64_t micro_batch = rng.pick<int64_t>({1, 2});
  const int64_t seq_len = rng.pick<int64_t>({1024, 2048, 4096, 8192});
  const int64_t virtual_stages = pp > 1 ? rng.pick<int64_t>({1, 1, 2}) : 1;
  const int64_t dp = std::max<int64_t>(1, gpus / (tp * pp * cp));
  // Micro-batches per pipeline: one, the pipeline depth, or four times it.
  const int64_t m = rng.pick<int64_t>({1, pp, 4 * pp});
  const int64_t zero = rng.pick<int64_t>({0, 1, 1, 2, 3});
  const std::string recompute = rng.pick<std::string>({"none", "selective", "full"});
  const std::string precision = gpu == "a100-80gb" ? "bf16" : rng.pick<std::string>({"bf16", "fp8"});
  const int64_t ep = model == "mixtral-8x7b" ? rng.pick<int64_t>({1, 2, 4, 8}) : 1;
  o.model = model;
  o.gpu = gpu;
  o.gpus = gpus;
  o.tp = tp;
  o.pp = pp;
  o.virtual_stages = virtual_stages;
  o.cp = cp;
  o.ep = ep;
  o.micro_batch = micro_batch;
  o.seq_len = seq_len;
  o.global_batch = micro_batch * dp * m;
  o.zero_stage = zero;
  o.recompute = recompute;
  o.precision = precision;
  return o;
}

// The simrun flags that give a sample's layout (its draw and what a mode changed).
std::string command_of(const ScenarioOverrides& o) {
  std::string c = fmt::format(
      "--model {} --gpu {} --gpus {} --tp {} --pp {} --virtual-stages {} --cp {} --ep {} --micro-batch {} "
      "--seq-len {} --global-batch {} --zero-stage {} --recompute {} --precision {}",
      *o.model, *o.gpu, *o.gpus, *o.tp, *o.pp, *o.virtual_stages, *o.cp, *o.ep, *o.micro_batch, *o.seq_len,
      *o.global_batch, *o.zero_stage, *o.recompute, *o.precision);
  if (o.pipeline_split) c += " --pipeline-split " + *o.pipeline_split;
  if (o.moe_capacity_factor) c += fmt::format(" --moe-capacity-factor {}", *o.moe_capacity_factor);
  if (o.cp_comm_type) c += " --cp-comm-type " + *o.cp_comm_type;
  if (o.hierarchical_cp_sizes)
    c += fmt::format(" --hierarchical-cp-sizes {},{}", o.hierarchical_cp_sizes->at(0),
                     o.hierarchical_cp_sizes->at(1));
  return c;
}

struct Row {
  double diff = 0;  // (event − analytic) / analytic
  double event_s = 0, analytic_s = 0;
  double exposed_share = 0;  // the larger of the two fidelities' exposed communication / step
  std::string command;
};

void summarize(const char* title, std::vector<Row> rows, size_t worst) {
  fmt::print("{}: {} layouts\n", title, rows.size());
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return std::abs(a.diff) > std::abs(b.diff); });
  std::vector<double> abs_diff;
  for (const Row& r : rows) abs_diff.push_back(std::abs(r.diff));
  std::sort(abs_diff.begin(), abs_diff.end());
  auto within = [&](double bound) {
    return std::count_if(abs_diff.begin(), abs_diff.end(), [&](double d) { return d <= bound; });
  };
  auto quantile = [&](double q) { return abs_diff[size_t(q * double(abs_diff.size() - 1))]; };
  fmt::print("  within 5%: {} ({:.1f}%)   within 10%: {}   |diff| median {:.2f}%  p90 {:.2f}%  max {:.2f}%\n",
             within(0.05), 100.0 * double(within(0.05)) / double(rows.size()), within(0.10),
             100 * quantile(0.5), 100 * quantile(0.9), 100 * abs_diff.back());
  for (size_t i = 0; i < std::min(worst, rows.size()); ++i)
    fmt::print("  {:+7.2f}%  event {:.4g} s  analytic {:.4g} s  exposed {:4.1f}%  {}\n", 100 * rows[i].diff,
               rows[i].event_s, rows[i].analytic_s, 100 * rows[i].exposed_share, rows[i].command);
}

struct Args {
  int64_t samples = 1000;
  uint64_t seed = 4;
  size_t worst = 8;
  bool with_stragglers = false, with_slow_links = false, with_capacity = false, with_mla = false;
  bool shared_expert_overlap = false;
  std::string cp_comm_type;  // empty: each layout's default (the ring)
};

// Throws std::invalid_argument on a bad command line.
Args parse_args(int argc, char** argv) {
  Args a;
  auto count = [](const char* flag, const char* text) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || text[0] == '-')
      throw std::invalid_argument(fmt::format("{}: expected a non-negative integer, got '{}'", flag, text));
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--samples") == 0 && has_value) {
      a.samples = int64_t(count("--samples", argv[++i]));
    } else if (std::strcmp(argv[i], "--seed") == 0 && has_value) {
      a.seed = count("--seed", argv[++i]);
    } else if (std::strcmp(argv[i], "--stragglers") == 0) {
      a.with_stragglers = true;
    } else if (std::strcmp(argv[i], "--slow-links") == 0) {
      a.with_slow_links = true;
    } else if (std::strcmp(argv[i], "--capacity-factors") == 0) {
      a.with_capacity = true;
    } else if (std::strcmp(argv[i], "--mla") == 0) {
      a.with_mla = true;
    } else if (std::strcmp(argv[i], "--shared-expert-overlap") == 0) {
      a.shared_expert_overlap = true;
    } else if (std::strcmp(argv[i], "--cp-comm-type") == 0 && has_value) {
      a.cp_comm_type = argv[++i];
      if (a.cp_comm_type != "all_gather" && a.cp_comm_type != "a2a" && a.cp_comm_type != "a2a+p2p")
        throw std::invalid_argument(
            fmt::format("--cp-comm-type: all_gather, a2a or a2a+p2p, got '{}'", a.cp_comm_type));
    } else if (std::strcmp(argv[i], "--worst") == 0 && has_value) {
      a.worst = size_t(count("--worst", argv[++i]));
    } else {
      throw std::invalid_argument(fmt::format("unknown or incomplete argument '{}'", argv[i]));
    }
  }
  if (a.shared_expert_overlap && !a.with_mla)
    throw std::invalid_argument("--shared-expert-overlap needs --mla (DeepSeek-V3 has the shared expert)");
  return a;
}

// A layout's seeded extras (straggler, slow link, capacity factor, DeepSeek-V3's EP), drawn for
// every layout whether the flags use them or not, from streams of their own: the layouts stay
// those of the seed.
struct Extras {
  uint64_t straggler_draw = 0;
  double slowdown = 1;
  uint64_t link_draw = 0;
  double fraction = 1;
  bool scale_up = false;
  double capacity = 1;
  int64_t mla_ep = 1;
};

struct ExtraStreams {
  SplitMix straggler_rng, link_rng, capacity_rng, mla_rng;
  explicit ExtraStreams(uint64_t seed)
      : straggler_rng{~seed},
        link_rng{seed ^ 0x5DEECE66Dull},
        capacity_rng{seed ^ 0x9E3779B97F4A7C15ull},
        mla_rng{seed ^ 0xD1B54A32D192ED03ull} {}
  Extras next() {
    Extras e;
    e.straggler_draw = straggler_rng.next();
    e.slowdown = straggler_rng.pick<double>({1.1, 1.25, 1.5, 2.0});
    e.link_draw = link_rng.next();
    e.fraction = link_rng.pick<double>({0.1, 0.25, 0.5});
    e.scale_up = link_rng.pick<int>({0, 1}) == 1;
    e.capacity = capacity_rng.pick<double>({1.25, 1.5, 2.0});
    e.mla_ep = mla_rng.pick<int64_t>({1, 2, 4, 8, 16});
    return e;
  }
};

// The drawn layout as the flags change it: a capacity factor, DeepSeek-V3, a CP comm type.
ScenarioOverrides variant_of(const ScenarioOverrides& drawn, const Args& a, const Extras& e) {
  ScenarioOverrides o = drawn;
  if (a.with_capacity) o.moe_capacity_factor = e.capacity;
  if (a.with_mla) {
    // DeepSeek-V3 (61 layers: the balanced 1F1B split over pp stages).
    o.model = "deepseek-v3";
    o.ep = e.mla_ep;
    o.virtual_stages = 1;
    if (*o.pp > 1) o.pipeline_split = "balanced";
  }
  if (!a.cp_comm_type.empty()) o.cp_comm_type = a.cp_comm_type;
  if (a.cp_comm_type == "a2a+p2p") {
    o.hierarchical_cp_sizes = std::vector<int64_t>{2, *o.cp};
    o.cp = 2 * *o.cp;
  }
  return o;
}

// The options both fidelities run with: the shared expert's overlap, a straggler, a slow link;
// each appended to `command` as its flag.
SimulateOptions options_of(const Scenario& sc, const Args& a, const Extras& e, std::string& command) {
  SimulateOptions options;
  if (a.shared_expert_overlap) {
    options.workload.moe_shared_expert_overlap = true;
    command += " --moe-shared-expert-overlap";
  }
  if (a.with_stragglers) {
    const Straggler st{int64_t(e.straggler_draw % uint64_t(sc.layout.world_size())), e.slowdown};
    options.step.scope = SimulationScope::full;
    options.step.stragglers = {st};
    command += fmt::format(" --straggler {}:{}", st.rank, st.slowdown);
  }
  if (a.with_slow_links) {
    const SlowLink sl{int64_t(e.link_draw % uint64_t(sc.layout.world_size())), e.fraction,
                      e.scale_up ? LinkClass::scale_up : LinkClass::scale_out};
    options.step.scope = SimulationScope::full;
    options.step.slow_links = {sl};
    command +=
        fmt::format(" --slow-link {}:{}:{}", sl.rank, sl.bandwidth_fraction, e.scale_up ? "scale-up" : "nic");
  }
  return options;
}

Row compare_fidelities(const Scenario& sc, const SimulateOptions& options, const std::string& command) {
  const Report event = simulate(sc, options).report;
  const Report analytic = estimate(sc, analytic_options(options));
  Row r;
  r.event_s = event.step_time_s;
  r.analytic_s = analytic.step_time_s;
  r.diff = (r.event_s - r.analytic_s) / r.analytic_s;
  r.exposed_share = std::max(event.breakdown.exposed_comm_s / event.step_time_s,
                             analytic.breakdown.exposed_comm_s / analytic.step_time_s);
  r.command = "simrun simulate " + command + " --compare-analytic";
  return r;
}

void print_sample(const Args& a, int64_t refused, int64_t dense_skipped, int64_t without_cp_skipped) {
  fmt::print(
      "analytic vs event step time, {} sampled layouts (seed {}{}), {} refused by the scenario rules or "
      "the event simulation\n",
      a.samples, a.seed,
      a.with_stragglers && a.with_slow_links ? ", one straggler and one slow link each"
      : a.with_stragglers                    ? ", one straggler each"
      : a.with_slow_links                    ? ", one slow link each"
                                             : "",
      refused);
  if (a.with_capacity)
    fmt::print("MoE layouts only, each with a seeded expert capacity factor ({} dense layouts skipped)\n",
               dense_skipped);
  if (a.with_mla)
    fmt::print("every layout as DeepSeek-V3 (MLA, 1 to 16 EP, 1F1B balanced{})\n",
               a.shared_expert_overlap ? ", shared expert beside the all-to-alls" : "");
  if (!a.cp_comm_type.empty())
    fmt::print("CP layouts only, each with cp_comm_type {} ({} layouts without CP skipped)\n", a.cp_comm_type,
               without_cp_skipped);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr,
               "analytic_agreement: {} (usage: [--samples N] [--seed S] [--worst K] [--stragglers] "
               "[--slow-links] [--capacity-factors] [--mla [--shared-expert-overlap]] "
               "[--cp-comm-type all_gather|a2a|a2a+p2p])\n",
               e.what());
    return 2;
  }
  const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
  SplitMix rng{args.seed};
  ExtraStreams extras(args.seed);
  int64_t dense_skipped = 0, without_cp_skipped = 0;
  std::vector<Row> uncongested, congested;
  int64_t refused = 0;
  for (int64_t i = 0; i < args.samples; ++i) {
    const ScenarioOverrides drawn = draw(rng);
    const Extras e = extras.next();
    if (args.with_capacity && drawn.model != "mixtral-8x7b") {
      ++dense_skipped;
      continue;
    }
    if (!args.cp_comm_type.empty() && drawn.cp.value_or(1) == 1) {
      ++without_cp_skipped;
      continue;
    }
    try {
      const ScenarioOverrides o = variant_of(drawn, args, e);
      std::string command = command_of(o);
      const Scenario sc = load_scenario({}, o, catalogs);
      const SimulateOptions options = options_of(sc, args, e, command);
      Row r = compare_fidelities(sc, options, command);
      (simrun::uncongested(sc, r.exposed_share) ? uncongested : congested).push_back(std::move(r));
    } catch (const InputError&) {
      ++refused;  // by the scenario rules or the event simulation (the estimate is not run)
    }
  }
  print_sample(args, refused, dense_skipped, without_cp_skipped);
  summarize("uncongested (TP and CP inside a scale-up domain, exposed communication <= 10% in both)",
            uncongested, args.worst);
  summarize("congested (for information)", congested, args.worst);
  return 0;
}
