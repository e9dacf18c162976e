// The planner's search and ranking (planner.hpp; docs/planner.md).
#include "simrun/sim/planner/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "search_space.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/workload/schedule.hpp"

namespace simrun {

using planner::DataParallelChoice;
using planner::PlanBase;
using planner::PlanShape;
using planner::PlanSpace;

namespace {

// The points kept per search beyond top_k, so that the event simulation's re-ranking has
// candidates the estimate placed a little lower.
int64_t kept_points(const PlanRequest& q) { return std::max<int64_t>(4 * q.top_k, 64); }

// A total order on points with equal objectives, so that every split of the space ranks alike.
std::array<int64_t, 15> point_key(const PlanPoint& p) {
  const Layout& l = p.layout;
  return {p.offer,          p.num_gpus,     l.tp,          l.pp,
          l.virtual_stages, l.cp,           l.ep,          l.expert_tp,
          l.micro_batch,    l.zero_stage,   int64_t(l.recompute), p.framework,
          l.dp,             l.global_batch, int64_t(l.precision)};
}

bool better(const PlanPoint& a, const PlanPoint& b, PlanObjective o) {
  const double x = a.objective(o), y = b.objective(o);
  if (x != y) return x < y;
  return point_key(a) < point_key(b);
}

// Keeps the best `limit` points, best first.
void keep_best(std::vector<PlanPoint>& best, const PlanPoint& p, PlanObjective o, int64_t limit) {
  if (int64_t(best.size()) >= limit && !better(p, best.back(), o)) return;
  const auto at = std::lower_bound(best.begin(), best.end(), p,
                                   [&](const PlanPoint& x, const PlanPoint& y) { return better(x, y, o); });
  best.insert(at, p);
  if (int64_t(best.size()) > limit) best.pop_back();
}

bool dominates(const PlanPoint& a, const PlanPoint& b) {
  if (a.days <= b.days && a.cost_usd <= b.cost_usd && (a.days < b.days || a.cost_usd < b.cost_usd)) return true;
  return a.days == b.days && a.cost_usd == b.cost_usd && point_key(a) < point_key(b);
}

// The Pareto front of days against dollars, fewest days first.
void add_to_front(std::vector<PlanPoint>& front, const PlanPoint& p) {
  for (const PlanPoint& q : front)
    if (dominates(q, p) || point_key(q) == point_key(p)) return;
  front.erase(std::remove_if(front.begin(), front.end(), [&](const PlanPoint& q) { return dominates(p, q); }),
              front.end());
  front.insert(std::lower_bound(front.begin(), front.end(), p,
                                [](const PlanPoint& x, const PlanPoint& y) {
                                  return x.days != y.days ? x.days < y.days : point_key(x) < point_key(y);
                                }),
               p);
}

void keep_if(std::optional<PlanPoint>& slot, const PlanPoint& p, double (*value)(const PlanPoint&)) {
  if (!slot || value(p) < value(*slot) || (value(p) == value(*slot) && point_key(p) < point_key(*slot))) slot = p;
}
double days_of(const PlanPoint& p) { return p.days; }
double cost_of(const PlanPoint& p) { return p.cost_usd; }
double memory_ratio_of(const PlanPoint& p) { return p.peak_bytes_per_gpu / p.capacity_bytes; }

// A point's numbers from a report (either fidelity); who it is stays as it was.
void set_numbers(PlanPoint& p, const Report& r) {
  p.fidelity = r.fidelity;
  p.step_time_s = r.step_time_s;
  p.mfu = r.mfu;
  p.tokens_per_s = r.tokens_per_s;
  p.peak_bytes_per_gpu = r.memory.peak_bytes_per_gpu;
  p.capacity_bytes = r.memory.capacity_bytes;
  p.compute_s = r.breakdown.compute_s;
  p.exposed_comm_s = r.breakdown.exposed_comm_s;
  p.bubble_s = r.breakdown.bubble_s;
  p.days = r.run.days;
  p.gpu_hours = r.run.gpu_hours;
  p.cost_usd = r.run.cost_usd;
  p.energy_kwh = r.run.energy_kwh;
  p.goodput = r.run.goodput;
}

// Who a point is: its GPU type, framework, size and layout.
PlanPoint point_at(const PlanBase& base, const Scenario& s) {
  PlanPoint p;
  p.offer = base.offer;
  p.framework = base.framework;
  p.num_gpus = s.cluster.num_gpus;
  p.layout = s.layout;
  return p;
}

// Within the request's hard limits, or the name of the one it breaks.
const char* limit_broken(const PlanRequest& q, const PlanPoint& p) {
  if (q.deadline_days && p.days > *q.deadline_days) return "over_deadline";
  if (q.budget_usd && p.cost_usd > *q.budget_usd) return "over_budget";
  return nullptr;
}

// One shape's points: layout rules, schedule, memory, then the closed-form estimate.
void search_shape(const PlanRequest& q, const PlanSpace& space, const PlanShape& shape, PlanPartial& out,
                  std::atomic<int64_t>& done) {
  const PlanBase& base = space.bases[size_t(shape.base)];
  const std::vector<DataParallelChoice> choices = planner::data_parallel_choices(q, space, shape);
  if (!base.scenario) {
    out.pruned[base.unusable] += int64_t(choices.size());
    done += int64_t(choices.size());
    return;
  }
  for (const DataParallelChoice& choice : choices) {
    ++done;
    const Scenario s = planner::point_scenario(base, shape, choice);
    const Layout& l = s.layout;
    if (const auto error = layout_error(s.model, s.cluster, l)) {
      ++out.pruned[error->code];
      continue;
    }
    if (const auto error = pipeline_engine_error(l, s.framework.workload)) {
      ++out.pruned[error->code];
      continue;
    }
    const PipelineSchedule schedule = default_schedule(l);
    if (slot_order(schedule, l.virtual_stages) == PipelineSchedule::interleaved && l.pp > 1 &&
        !schedule_completes(schedule, l.pp, l.num_microbatches(), l.virtual_stages)) {
      ++out.pruned["interleaved_schedule_incomplete"];
      continue;
    }
    const MemoryEstimate memory = estimate_memory(s, s.framework.memory);
    if (!memory.report.fits) {
      ++out.pruned["memory"];
      PlanPoint p = point_at(base, s);
      p.peak_bytes_per_gpu = memory.report.peak_bytes_per_gpu;
      p.capacity_bytes = memory.report.capacity_bytes;
      keep_if(out.closest.least_memory, p, memory_ratio_of);
      continue;
    }
    AnalyticOptions options;
    options.workload = s.framework.workload;
    options.memory = s.framework.memory;
    const Report r = estimate(s, options);
    ++out.evaluated;
    if (!r.memory.fits) {  // the estimate's own memory verdict is the memory model's
      ++out.pruned["memory"];
      continue;
    }
    PlanPoint p = point_at(base, s);
    set_numbers(p, r);
    keep_if(out.closest.fastest, p, days_of);
    keep_if(out.closest.cheapest, p, cost_of);
    add_to_front(out.front, p);
    if (const char* broken = limit_broken(q, p)) {
      ++out.pruned[broken];
      continue;
    }
    keep_best(out.best, p, q.objective, kept_points(q));
  }
}

void merge_into(const PlanRequest& q, PlanPartial& into, const PlanPartial& from) {
  for (const PlanPoint& p : from.best) keep_best(into.best, p, q.objective, kept_points(q));
  for (const PlanPoint& p : from.front) add_to_front(into.front, p);
  for (const auto& [reason, n] : from.pruned) into.pruned[reason] += n;
  into.evaluated += from.evaluated;
  if (from.closest.fastest) keep_if(into.closest.fastest, *from.closest.fastest, days_of);
  if (from.closest.cheapest) keep_if(into.closest.cheapest, *from.closest.cheapest, cost_of);
  if (from.closest.least_memory) keep_if(into.closest.least_memory, *from.closest.least_memory, memory_ratio_of);
  into.interrupted = into.interrupted || from.interrupted;
}

std::string layout_text(const PlanPoint& p, const std::vector<std::string>& frameworks, bool moe) {
  const Layout& l = p.layout;
  std::string s = fmt::format("tp {} pp {}", l.tp, l.pp);
  if (l.virtual_stages > 1) s += fmt::format(" vpp {}", l.virtual_stages);
  s += fmt::format(" dp {}", l.dp);
  if (l.cp > 1) s += fmt::format(" cp {}", l.cp);
  if (moe) s += fmt::format(" ep {}{}", l.ep, l.expert_tp != l.tp ? fmt::format(" etp {}", l.expert_tp) : "");
  s += fmt::format(" mb {} gb {} zero {} {} {}", l.micro_batch, l.global_batch, l.zero_stage, to_string(l.recompute),
                   to_string(l.precision));
  if (frameworks.size() > 1) s += " " + frameworks[size_t(p.framework)];
  return s;
}

// What differs between two rows' layouts, e.g. "pp 4 instead of 8, zero 1 instead of 3".
std::vector<std::string> layout_differences(const PlanPoint& a, const PlanPoint& b) {
  std::vector<std::string> out;
  const Layout& x = a.layout;
  const Layout& y = b.layout;
  auto diff = [&](const char* name, auto u, auto v) {
    if (u != v) out.push_back(fmt::format("{} {} instead of {}", name, u, v));
  };
  diff("tp", x.tp, y.tp);
  diff("pp", x.pp, y.pp);
  diff("vpp", x.virtual_stages, y.virtual_stages);
  diff("dp", x.dp, y.dp);
  diff("cp", x.cp, y.cp);
  diff("ep", x.ep, y.ep);
  diff("micro-batch", x.micro_batch, y.micro_batch);
  diff("global batch", x.global_batch, y.global_batch);
  diff("zero", x.zero_stage, y.zero_stage);
  if (x.recompute != y.recompute)
    out.push_back(fmt::format("{} recompute instead of {}", to_string(x.recompute), to_string(y.recompute)));
  if (x.precision != y.precision)
    out.push_back(fmt::format("{} instead of {}", to_string(x.precision), to_string(y.precision)));
  return out;
}

}  // namespace

int64_t plan_space_size(const PlanRequest& request, const Catalogs& catalogs) {
  return planner::build_space(request, catalogs).size;
}

PlanPartial plan_search(const PlanRequest& q, const Catalogs& catalogs, const PlanControl& control) {
  const PlanSpace space = planner::build_space(q, catalogs);
  std::vector<size_t> mine;
  for (size_t i = 0; i < space.shapes.size(); ++i)
    if (int64_t(i) % control.ranks == control.rank) mine.push_back(i);
  const int threads = std::max(1, control.threads);
  std::vector<PlanPartial> partials(static_cast<size_t>(threads));
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> evaluated{0};
  std::atomic<int> running{threads};
  auto cancelled = [&] { return control.cancel && control.cancel->load(); };
  auto work = [&](int t) {
    PlanPartial& out = partials[size_t(t)];
    for (size_t i = next++; i < mine.size(); i = next++) {
      if (cancelled()) {
        out.interrupted = true;
        break;
      }
      const int64_t before = out.evaluated;
      search_shape(q, space, space.shapes[mine[i]], out, done);
      evaluated += out.evaluated - before;
    }
    --running;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  if (control.progress) {
    // The calling thread reports while the pool works, then works itself.
    std::thread reporter_work(work, 0);
    while (running.load() > 0) {
      control.progress({done.load(), space.size, evaluated.load(), "searching"});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    reporter_work.join();
  } else {
    work(0);
  }
  for (std::thread& t : pool) t.join();
  PlanPartial merged;
  for (const PlanPartial& p : partials) merge_into(q, merged, p);
  merged.space_size = space.size;
  return merged;
}

PlanPartial merge_partials(const PlanRequest& q, std::vector<PlanPartial> partials) {
  PlanPartial merged;
  for (const PlanPartial& p : partials) {
    merge_into(q, merged, p);
    merged.space_size = std::max(merged.space_size, p.space_size);
  }
  return merged;
}

PlanResult plan_finish(const PlanRequest& q, const Catalogs& catalogs, PlanPartial merged,
                       const PlanControl& control) {
  PlanResult result;
  const PlanSpace space = planner::build_space(q, catalogs);
  result.frameworks = space.frameworks;
  result.model = space.model;
  result.space_size = merged.space_size;
  result.evaluated = merged.evaluated;
  result.pruned = merged.pruned;
  result.closest = merged.closest;
  result.interrupted = merged.interrupted;

  // The best top_k by the estimate, re-run by the event simulation (threads share the rows).
  std::vector<PlanPoint> candidates(merged.best.begin(),
                                    merged.best.begin() + std::min<int64_t>(q.top_k, int64_t(merged.best.size())));
  std::vector<std::optional<PlanPoint>> simulated(candidates.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < candidates.size(); i = next++) {
      if (control.cancel && control.cancel->load()) return;
      const Scenario s = plan_point_scenario(q, catalogs, candidates[i], space.frameworks);
      SimulateOptions options;
      options.workload = s.framework.workload;
      options.memory = s.framework.memory;
      PlanPoint p = candidates[i];
      set_numbers(p, simulate(s, options).report);
      simulated[i] = p;
    }
  };
  if (control.progress) control.progress({merged.space_size, merged.space_size, merged.evaluated, "simulating"});
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, control.threads); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!simulated[i]) {  // interrupted before its simulation: the estimate's numbers
      result.interrupted = true;
      result.ranked.push_back(candidates[i]);
      continue;
    }
    ++result.simulated;
    const PlanPoint& p = *simulated[i];
    if (p.peak_bytes_per_gpu > p.capacity_bytes) {
      ++result.pruned["memory_event"];  // the schedule the simulation ran holds more in flight
      continue;
    }
    if (const char* broken = limit_broken(q, p)) {
      ++result.pruned[broken];
      continue;
    }
    result.ranked.push_back(p);
  }
  std::sort(result.ranked.begin(), result.ranked.end(),
            [&](const PlanPoint& a, const PlanPoint& b) { return better(a, b, q.objective); });
  // Competition ranking with a tolerance: a row's rank is one more than the rows better than it
  // by more than kPlanTieTolerance.
  for (PlanPoint& p : result.ranked) {
    int64_t ahead = 0;
    for (const PlanPoint& o : result.ranked)
      if (o.objective(q.objective) < p.objective(q.objective) * (1 - kPlanTieTolerance)) ++ahead;
    p.rank = ahead + 1;
  }
  // The front, with the simulated rows' event numbers where the estimate's point is on it.
  result.pareto = merged.front;
  for (PlanPoint& f : result.pareto)
    for (const std::optional<PlanPoint>& s : simulated)
      if (s && point_key(*s) == point_key(f)) {
        const int64_t rank = f.rank;
        f = *s;
        f.rank = rank;
      }
  std::vector<PlanPoint> front;
  for (const PlanPoint& p : result.pareto) add_to_front(front, p);
  result.pareto = std::move(front);

  if (result.ranked.size() >= 2) {
    const PlanPoint& a = result.ranked[0];
    const PlanPoint& b = result.ranked[1];
    const bool moe = space.model.is_moe();
    const std::string& ga = q.gpus[size_t(a.offer)].gpu;
    const std::string& gb = q.gpus[size_t(b.offer)].gpu;
    const double gap = b.objective(q.objective) / a.objective(q.objective) - 1;
    std::string what = q.objective == PlanObjective::cost
                           ? fmt::format("{:.1f}% cheaper (${:.3g}M vs ${:.3g}M)", 100 * gap, a.cost_usd / 1e6,
                                         b.cost_usd / 1e6)
                           : fmt::format("{:.1f}% faster ({:.1f} vs {:.1f} days)", 100 * gap, a.days, b.days);
    std::string because;
    if (ga != gb) {
      because = fmt::format("{} at ${}/GPU-hour needs {:.0f}k GPU-hours against {}'s {:.0f}k at ${} (MFU {:.0f}% vs {:.0f}%)",
                            ga, q.gpus[size_t(a.offer)].usd_per_gpu_hour, a.gpu_hours / 1e3, gb,
                            b.gpu_hours / 1e3, q.gpus[size_t(b.offer)].usd_per_gpu_hour, 100 * a.mfu, 100 * b.mfu);
    } else if (a.num_gpus != b.num_gpus) {
      because = fmt::format("{} GPUs instead of {}: {:.1f} vs {:.1f} days at MFU {:.0f}% vs {:.0f}%", a.num_gpus,
                            b.num_gpus, a.days, b.days, 100 * a.mfu, 100 * b.mfu);
    } else {
      const std::vector<std::string> diffs = layout_differences(a, b);
      std::string list;
      for (const std::string& d : diffs) list += (list.empty() ? "" : ", ") + d;
      // How the runner-up's step differs, part by part.
      because = fmt::format("{}; the runner-up's step is {:.3g} s against {:.3g} s (compute {:+.3g} s, exposed "
                            "communication {:+.3g} s, bubble {:+.3g} s)",
                            list, b.step_time_s, a.step_time_s, b.compute_s - a.compute_s,
                            b.exposed_comm_s - a.exposed_comm_s, b.bubble_s - a.bubble_s);
    }
    result.why = fmt::format("The winner ({} x {}, {}) is {} than the runner-up ({} x {}, {}): {}.", ga,
                             a.num_gpus, layout_text(a, result.frameworks, moe), what, gb, b.num_gpus,
                             layout_text(b, result.frameworks, moe), because);
    if (b.rank == a.rank)
      result.why += fmt::format(" They are within {:.0f}%, the estimate's error: a tie.", 100 * kPlanTieTolerance);
  }
  return result;
}

namespace {

void add_warnings(const PlanRequest& q, PlanResult& r) {
  if (r.ranked.empty()) return;
  const PlanPoint& best = r.ranked.front();
  if (q.objective == PlanObjective::cost && !q.deadline_days && best.days > 365)
    r.warnings.push_back(fmt::format(
        "the cheapest plan takes {:.0f} days: without a deadline the fewest dollars go to the smallest "
        "cluster that fits (give a deadline, or rank by time)",
        best.days));
  if (q.objective == PlanObjective::time && !q.budget_usd && r.pareto.size() > 1 &&
      best.cost_usd > 1.5 * r.pareto.back().cost_usd)
    r.warnings.push_back(fmt::format("the fastest plan costs {:.1f}x the cheapest on the Pareto front (give a "
                                     "budget to bound it)",
                                     best.cost_usd / r.pareto.back().cost_usd));
  if (r.interrupted)
    r.warnings.push_back("interrupted: the best found so far, not the whole space (rows not event-simulated say "
                         "\"analytic\")");
}

}  // namespace

PlanResult plan(const PlanRequest& q, const Catalogs& catalogs, const PlanControl& control) {
  const auto start = std::chrono::steady_clock::now();
  PlanResult r = plan_finish(q, catalogs, plan_search(q, catalogs, control), control);
  add_warnings(q, r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

nlohmann::json layout_json(const Layout& l) {
  nlohmann::json j = {{"tp", l.tp},
                      {"pp", l.pp},
                      {"dp", l.dp},
                      {"cp", l.cp},
                      {"ep", l.ep},
                      {"expert_tp", l.expert_tp},
                      {"virtual_stages", l.virtual_stages},
                      {"pipeline_split", to_string(l.pipeline_split)},
                      {"sequence_parallel", l.sequence_parallel},
                      {"zero_stage", l.zero_stage},
                      {"micro_batch", l.micro_batch},
                      {"global_batch", l.global_batch},
                      {"recompute", to_string(l.recompute)},
                      {"precision", to_string(l.precision)},
                      {"flash_attention", l.flash_attention}};
  return j;
}

nlohmann::json plan_point_scenario_json(const PlanRequest& q, const PlanPoint& p,
                                        const std::vector<std::string>& frameworks) {
  nlohmann::json doc;
  doc["model"] = q.model;
  if (q.seq_len) {
    if (doc["model"].is_string()) doc["model"] = {{"name", q.model}};
    doc["model"]["seq_len"] = *q.seq_len;
  }
  doc["framework"] = frameworks[size_t(p.framework)];
  const GpuOffer& offer = q.gpus[size_t(p.offer)];
  doc["cluster"] = {{"gpu", offer.gpu}, {"num_gpus", p.num_gpus}};
  if (q.fabric) doc["cluster"]["fabric"] = {{"kind", *q.fabric}};
  doc["layout"] = layout_json(p.layout);
  doc["run"] = {{"usd_per_gpu_hour", offer.usd_per_gpu_hour}};
  if (q.tokens > 0) doc["run"]["tokens"] = q.tokens;
  return doc;
}

Scenario plan_point_scenario(const PlanRequest& q, const Catalogs& catalogs, const PlanPoint& p,
                             const std::vector<std::string>& frameworks) {
  return parse_scenario(plan_point_scenario_json(q, p, frameworks), q.file, catalogs, q.base_dir);
}

std::string infeasible_text(const PlanRequest& q, const PlanResult& r) {
  const ClosestMiss& c = r.closest;
  auto who = [&](const PlanPoint& p) {
    return fmt::format("{} x {} (tp {} pp {} dp {})", q.gpus[size_t(p.offer)].gpu, p.num_gpus, p.layout.tp,
                       p.layout.pp, p.layout.dp);
  };
  if (!c.fastest) {
    if (c.least_memory)
      return fmt::format("no layout fits in GPU memory: the closest, {}, needs {:.1f} GiB of {:.1f} GiB ({:.0f}% over); "
                         "allow more GPUs, recompute or ZeRO-3",
                         who(*c.least_memory), c.least_memory->peak_bytes_per_gpu / kGiB,
                         c.least_memory->capacity_bytes / kGiB,
                         100 * (c.least_memory->peak_bytes_per_gpu / c.least_memory->capacity_bytes - 1));
    return "no layout of the space can run this model (see the pruning summary)";
  }
  std::string out;
  if (q.deadline_days && c.fastest->days > *q.deadline_days)
    out = fmt::format("no plan meets the {:.4g}-day deadline: the fastest, {}, takes {:.1f} days ({:.1f} over)",
                      *q.deadline_days, who(*c.fastest), c.fastest->days, c.fastest->days - *q.deadline_days);
  if (q.budget_usd && c.cheapest->cost_usd > *q.budget_usd)
    out += fmt::format("{}no plan fits the ${:.4g}M budget: the cheapest, {}, costs ${:.4g}M (${:.3g}M over)",
                       out.empty() ? "" : "; ", *q.budget_usd / 1e6, who(*c.cheapest), c.cheapest->cost_usd / 1e6,
                       (c.cheapest->cost_usd - *q.budget_usd) / 1e6);
  if (out.empty())
    out = "no plan meets both the deadline and the budget at once (each alone can be met: relax one)";
  return out;
}

}  // namespace simrun
