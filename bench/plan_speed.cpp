// plan_speed: how fast `simrun plan` searches (issue 24's speed goal). Plans Llama-3 405B on
// 15T tokens over three GPU types (H100 SXM, B200, MI300X), 8 to 16,384 GPUs, top 20
// event-simulated, cost objective, and prints the size of the space, how its points were settled
// (the layout rules and the memory model, the step floor, the closed-form estimate), the points
// settled per second per thread, and the wall time of the search and of the event re-ranking. The
// same search then runs estimating every point that fits (PlanControl::bound off), side by side in
// this one run: its time, the ratio, and whether it found the same best points and front.
//
//   build/bench/plan_speed [--threads N] [--max-gpus G] [--top-k K] [--model M]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "simrun/common/error.hpp"
#include "simrun/sim/planner/planner.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

using namespace simrun;

int main(int argc, char** argv) {
  int threads = 2;
  int64_t max_gpus = 16384, top_k = 20;
  std::string model = "llama3-405b";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--max-gpus"))
      max_gpus = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--top-k"))
      top_k = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--model"))
      model = argv[i + 1];
    else {
      fmt::print(stderr, "usage: plan_speed [--threads N] [--max-gpus G] [--top-k K] [--model M]\n");
      return 2;
    }
  }
  try {
    const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
    const nlohmann::json doc = {{"model", model},
                                {"tokens", 15e12},
                                {"gpus",
                                 {{{"gpu", "h100-sxm"}, {"usd_per_gpu_hour", 2.5}},
                                  {{"gpu", "b200"}, {"usd_per_gpu_hour", 5.5}},
                                  {{"gpu", "mi300x"}, {"usd_per_gpu_hour", 2.2}}}},
                                {"max_gpus", max_gpus},
                                {"objective", "cost"},
                                {"top_k", top_k}};
    const PlanRequest request = parse_plan_request(doc, "plan_speed", catalogs, ".");
    PlanControl control;
    control.threads = threads;
    using clock = std::chrono::steady_clock;
    auto seconds = [](clock::time_point a, clock::time_point b) {
      return std::chrono::duration<double>(b - a).count();
    };
    const auto t0 = clock::now();
    PlanPartial partial = plan_search(request, catalogs, control);
    const auto t1 = clock::now();
    const PlanPartial searched = partial;
    const PlanResult result = plan_finish(request, catalogs, std::move(partial), control);
    const auto t2 = clock::now();
    control.bound = false;
    const PlanPartial every = plan_search(request, catalogs, control);
    const auto t3 = clock::now();
    const double search_s = seconds(t0, t1), finish_s = seconds(t1, t2), every_s = seconds(t2, t3);
    const int64_t space = searched.space_size;
    // The layout rules and the memory model: what the exhaustive search prunes before it estimates.
    int64_t by_rules = 0;
    for (const auto& [reason, n] : every.pruned)
      if (reason != "over_deadline" && reason != "over_budget") by_rules += n;
    const int64_t candidates = space - by_rules;
    fmt::print("plan_speed: {} on 15T tokens, h100-sxm + b200 + mi300x, 8 to {} GPUs, top {} event-simulated",
               model, max_gpus, top_k);
    fmt::print(", {} threads ({} cores here)\n", threads, std::thread::hardware_concurrency());
    fmt::print("  space                   {} points\n", space);
    fmt::print("  layout rules, memory    {} pruned (memory {})\n", by_rules,
               every.pruned.count("memory") ? every.pruned.at("memory") : 0);
    fmt::print("  step floor              {} candidates, {} settled by it\n", candidates,
               candidates - searched.evaluated);
    fmt::print("  closed-form estimate    {} points\n", searched.evaluated);
    fmt::print("  search                  {:.2f} s: {:.0f} points settled per second per thread\n", search_s,
               double(space) / search_s / threads);
    fmt::print("  event re-ranking        {} simulations in {:.2f} s\n", result.simulated, finish_s);
    fmt::print("  total                   {:.2f} s (goal: under 60 s on 2 cores)\n", search_s + finish_s);
    fmt::print(
        "  estimating every point  {} estimates in {:.2f} s ({:.0f} per second per thread): {:.1f}x the "
        "search; same best points, front and closest: {}\n",
        every.evaluated, every_s, double(every.evaluated) / every_s / threads, every_s / search_s,
        every.best == searched.best && every.front == searched.front &&
                every.closest.fastest == searched.closest.fastest &&
                every.closest.cheapest == searched.closest.cheapest
            ? "yes"
            : "NO");
    if (!result.ranked.empty())
      fmt::print("  best                    {} x {}: {:.2f} s/step, {:.1f} days, ${:.3g}M\n",
                 request.gpus[size_t(result.ranked[0].offer)].gpu, result.ranked[0].num_gpus,
                 result.ranked[0].step_time_s, result.ranked[0].days, result.ranked[0].cost_usd / 1e6);
  } catch (const InputError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 2;
  }
  return 0;
}
