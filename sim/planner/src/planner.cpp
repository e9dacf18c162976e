// The planner's search and ranking (planner.hpp; docs/planner.md).
#include "simrun/sim/planner/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <thread>
#include <tuple>

#include "search_space.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/text.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/memory/run_cost.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

using planner::DataParallelChoice;
using planner::PlanBase;
using planner::PlanShape;
using planner::PlanSpace;

namespace {

// Candidates estimated between two updates of what the search holds (bounded_out): a fixed count,
// so that what is estimated does not depend on the threads.
constexpr size_t kEstimateBatch = 512;

// The points kept per search beyond top_k, so that the event simulation's re-ranking has
// candidates the estimate placed a little lower.
int64_t kept_points(const PlanRequest& q) { return std::max<int64_t>(4 * q.top_k, 64); }

// A total order on points with equal objectives, so that every split of the space ranks alike.
std::array<int64_t, 15> point_key(const PlanPoint& p) {
  const Layout& l = p.layout;
  return {p.offer,      p.num_gpus,           l.tp,
          l.pp,         l.virtual_stages,     l.cp,
          l.ep,         l.expert_tp,          l.micro_batch,
          l.zero_stage, int64_t(l.recompute), p.framework,
          l.dp,         l.global_batch,       int64_t(l.precision)};
}

bool better(const PlanPoint& a, const PlanPoint& b, PlanObjective o) {
  const double x = a.objective(o), y = b.objective(o);
  if (x != y) return x < y;
  return point_key(a) < point_key(b);
}

// Whether `worse` ties `better` (objectives, better <= worse): within kPlanTieTolerance, the
// estimate's error. Not transitive: a ties b and b ties c while a is ahead of c, so ranks are
// counted per row (plan_finish) rather than by grouping.
bool within_tie(double better, double worse) { return better >= worse * (1 - kPlanTieTolerance); }

// Keeps the best `limit` points, best first.
void keep_best(std::vector<PlanPoint>& best, const PlanPoint& p, PlanObjective o, int64_t limit) {
  if (int64_t(best.size()) >= limit && !better(p, best.back(), o)) return;
  const auto at = std::lower_bound(best.begin(), best.end(), p,
                                   [&](const PlanPoint& x, const PlanPoint& y) { return better(x, y, o); });
  if (at != best.end() && point_key(*at) == point_key(p)) return;  // already kept (a merge of overlaps)
  best.insert(at, p);
  if (int64_t(best.size()) > limit) best.pop_back();
}

bool dominates(const PlanPoint& a, const PlanPoint& b) {
  if (a.days <= b.days && a.cost_usd <= b.cost_usd && (a.days < b.days || a.cost_usd < b.cost_usd))
    return true;
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
  if (!slot || value(p) < value(*slot) || (value(p) == value(*slot) && point_key(p) < point_key(*slot)))
    slot = p;
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
const char* limit_broken(const PlanRequest& q, double days, double cost_usd) {
  if (q.deadline_days && days > *q.deadline_days) return "over_deadline";
  if (q.budget_usd && cost_usd > *q.budget_usd) return "over_budget";
  return nullptr;
}
const char* limit_broken(const PlanRequest& q, const PlanPoint& p) {
  return limit_broken(q, p.days, p.cost_usd);
}

// work(t, stop) on `threads` threads; the calling thread calls `report` (if any) about every
// 100 ms until they are done. An exception in one sets `stop` for the others and is rethrown
// here once all have joined.
void run_pool(int threads, const std::function<void(int, const std::atomic<bool>&)>& work,
              const std::function<void()>& report) {
  std::vector<std::exception_ptr> errors(size_t(std::max(1, threads)));
  std::atomic<bool> stop{false};
  std::atomic<int> running{int(errors.size())};
  {
    std::vector<std::jthread> pool;
    for (size_t t = 0; t < errors.size(); ++t)
      pool.emplace_back([&, t] {
        try {
          work(int(t), stop);
        } catch (...) {
          errors[t] = std::current_exception();
          stop = true;
        }
        --running;
      });
    try {
      while (report && running.load() > 0) {
        report();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    } catch (...) {
      stop = true;
      throw;  // the pool joins first
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// A point that passed the layout rules and the memory model, waiting for the estimate, with the
// floor of its days and dollars: StepTimeFloor's step through the run totals (which grow with the
// step time), so no more than its own.
struct Candidate {
  uint32_t shape = 0;  // in PlanSpace::shapes
  DataParallelChoice choice;
  double floor_days = 0, floor_cost_usd = 0;
  double floor_objective(PlanObjective o) const {
    return o == PlanObjective::time ? floor_days : floor_cost_usd;
  }
};

// One thread's step floors, one per set of per-layer costs: a base and every layout dimension but
// the pipeline and the data-parallel size (what StepTimeFloor holds for), with the EP all-to-all's
// NVLink level (which the data-parallel size can change: ep_domain_level).
class FloorCache {
 public:
  const StepTimeFloor& floor(const PlanShape& shape, const Scenario& s) {
    const Key key{shape.base,       shape.tp,        shape.cp,
                  shape.ep,         shape.expert_tp, shape.micro_batch,
                  shape.zero_stage, shape.recompute, s.layout.ep_intra_level};
    auto it = m_floors.find(key);
    if (it == m_floors.end()) it = m_floors.emplace(key, StepTimeFloor(s, framework_options(s))).first;
    return it->second;
  }

 private:
  using Key = std::tuple<int32_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, Recompute, int64_t>;
  std::map<Key, StepTimeFloor> m_floors;
};

// One shape's points through the layout rules, the schedule and the memory model: the survivors
// become candidates, with their floors.
void check_shape(const PlanRequest& q, const PlanSpace& space, uint32_t shape_index, FloorCache& floors,
                 PlanPartial& out, std::vector<Candidate>& candidates, std::atomic<int64_t>& done) {
  const PlanShape& shape = space.shapes[shape_index];
  const PlanBase& base = space.bases[size_t(shape.base)];
  const std::vector<DataParallelChoice> choices = planner::data_parallel_choices(q, space, shape);
  if (!base.scenario) {
    out.pruned[base.unusable] += int64_t(choices.size());
    done += int64_t(choices.size());
    return;
  }
  // The same for every point of the shape with the same EP level (FloorCache).
  std::optional<StepTimeFloor::Pipeline> floor;
  int64_t floor_ep_level = 0;
  const RunDefaults run_defaults = framework_options(*base.scenario).run;
  Scenario s = *base.scenario;
  for (const DataParallelChoice& choice : choices) {
    planner::set_point(s, shape, choice);
    const Layout& l = s.layout;
    // First what bounds the work of the checks after it (the schedule's play grows with the
    // micro-batches): a row the event simulation could never re-run.
    std::string pruned;
    if (event_layer_passes(s.model, l) > kMaxEventLayerPasses) {
      pruned = kBeyondEventSimulation;
    } else if (const auto error = workload_layout_error(s, s.framework.workload, default_schedule(l))) {
      // The layout rules, the framework's pipeline engine and the schedule: what build_workload refuses.
      pruned = error->code;
    } else if (const MemoryEstimate memory = estimate_memory(s, s.framework.memory); !memory.report.fits) {
      pruned = "memory";
      PlanPoint p = point_at(base, s);
      p.peak_bytes_per_gpu = memory.report.peak_bytes_per_gpu;
      p.capacity_bytes = memory.report.capacity_bytes;
      keep_if(out.closest.least_memory, p, memory_ratio_of);
    }
    if (!pruned.empty()) {
      ++out.pruned[pruned];
      ++done;
      continue;
    }
    if (!floor || floor_ep_level != l.ep_intra_level) {
      floor = floors.floor(shape, s).pipeline(l);
      floor_ep_level = l.ep_intra_level;
    }
    const double step_floor_s = StepTimeFloor::step_time_s(*floor, l.num_microbatches());
    const RunTotals run = run_totals(
        run_inputs(s, bytes_per_param(l, s.framework.memory.convention), space.params, step_floor_s, 1.0),
        run_defaults);
    candidates.push_back({shape_index, choice, run.days, run.cost_usd});
  }
}

// A candidate timed by the closed-form estimate, into the thread's partial.
void estimate_candidate(const PlanRequest& q, const PlanSpace& space, const Candidate& c, PlanPartial& out) {
  const PlanShape& shape = space.shapes[c.shape];
  const PlanBase& base = space.bases[size_t(shape.base)];
  const Scenario s = planner::point_scenario(base, shape, c.choice);
  const AnalyticOptions options = framework_options(s);
  const Report r = estimate_numbers(s, options, estimate_memory(s, options.memory));
  ++out.evaluated;
  if (!r.memory.fits) {  // the estimate's own memory verdict is the memory model's
    ++out.pruned["memory"];
    return;
  }
  PlanPoint p = point_at(base, s);
  set_numbers(p, r);
  // What the bound's exactness rests on (docs/planner.md "Bounds"): an estimator change that
  // breaks it fails here rather than changing the ranking unseen.
  SIMRUN_ASSERT(c.floor_days <= p.days * (1 + 1e-12) && c.floor_cost_usd <= p.cost_usd * (1 + 1e-12),
                "the step floor lies under the estimate");
  keep_if(out.closest.fastest, p, days_of);
  keep_if(out.closest.cheapest, p, cost_of);
  add_to_front(out.front, p);
  if (const char* broken = limit_broken(q, p)) {
    ++out.pruned[broken];
    return;
  }
  keep_best(out.best, p, q.objective, kept_points(q));
}

// The prune reason of candidates whose floor cannot rank.
constexpr const char* kOutranked = "outranked";

// Why a candidate need not be estimated, judged on its floor against what the search holds: it
// can be neither the fastest nor the cheapest point, a front point beats it in both days and
// dollars, and it is past a hard limit or behind every kept point. nullptr: it must be estimated.
// Each test is strict, so that a point the estimate would tie is estimated: the search finds what
// estimating every point finds.
const char* bounded_out(const PlanRequest& q, const PlanPartial& known, const Candidate& c) {
  const ClosestMiss& k = known.closest;
  if (!k.fastest || c.floor_days <= k.fastest->days || c.floor_cost_usd <= k.cheapest->cost_usd)
    return nullptr;
  const bool dominated = std::any_of(known.front.begin(), known.front.end(), [&](const PlanPoint& f) {
    return f.days <= c.floor_days && f.cost_usd <= c.floor_cost_usd &&
           (f.days < c.floor_days || f.cost_usd < c.floor_cost_usd);
  });
  if (!dominated) return nullptr;
  if (const char* broken = limit_broken(q, c.floor_days, c.floor_cost_usd)) return broken;
  if (int64_t(known.best.size()) >= kept_points(q) &&
      c.floor_objective(q.objective) > known.best.back().objective(q.objective))
    return kOutranked;
  return nullptr;
}

void merge_into(const PlanRequest& q, PlanPartial& into, const PlanPartial& from) {
  for (const PlanPoint& p : from.best) keep_best(into.best, p, q.objective, kept_points(q));
  for (const PlanPoint& p : from.front) add_to_front(into.front, p);
  for (const auto& [reason, n] : from.pruned) into.pruned[reason] += n;
  into.evaluated += from.evaluated;
  if (from.closest.fastest) keep_if(into.closest.fastest, *from.closest.fastest, days_of);
  if (from.closest.cheapest) keep_if(into.closest.cheapest, *from.closest.cheapest, cost_of);
  if (from.closest.least_memory)
    keep_if(into.closest.least_memory, *from.closest.least_memory, memory_ratio_of);
  into.interrupted = into.interrupted || from.interrupted;
}

// Prune reasons of the event phase (the search's come from the layout rules and the memory model).
constexpr const char* kMemoryEvent = "memory_event";  // the schedule the simulation ran holds more in flight
constexpr const char* kEventRefused = "event_refused";  // the scenario or the simulation refused the point

// The layer passes the event phase simulates at once, in all: four simulations at the bound
// (kMaxEventLayerPasses, ~2.5 GB each: simulate.hpp), any number of small ones.
constexpr double kEventPassesAtOnce = 4 * kMaxEventLayerPasses;

// A point of the estimate's best, event-simulated: its event numbers, and the reason it leaves the
// ranking if it does.
struct EventOutcome {
  bool ran = false;
  PlanPoint point;      // the event numbers (when not refused)
  std::string pruned;   // empty: ranked; else kMemoryEvent, kEventRefused or a hard limit
  std::string refusal;  // why, when refused
  bool has_numbers() const { return pruned != kMemoryEvent && pruned != kEventRefused; }
};

EventOutcome simulate_point(const PlanRequest& q, const Catalogs& catalogs, const PlanSpace& space,
                            const PlanPoint& candidate) {
  EventOutcome out;
  out.ran = true;
  out.point = candidate;
  try {
    const Scenario s = plan_point_scenario(q, catalogs, candidate, space.frameworks);
    set_numbers(out.point, simulate(s, framework_simulate_options(s)).report);
  } catch (const InputError& e) {
    out.pruned = kEventRefused;
    out.refusal = e.why();
    return out;
  }
  if (out.point.peak_bytes_per_gpu > out.point.capacity_bytes)
    out.pruned = kMemoryEvent;
  else if (const char* broken = limit_broken(q, out.point))
    out.pruned = broken;
  return out;
}

// What differs between two rows' layouts, e.g. "pp 4 instead of 8, zero 1 instead of 3".
std::vector<std::string> layout_differences(const PlanPoint& a, const PlanPoint& b,
                                            const std::vector<std::string>& frameworks) {
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
  diff("expert tp", x.expert_tp, y.expert_tp);
  diff("micro-batch", x.micro_batch, y.micro_batch);
  diff("global batch", x.global_batch, y.global_batch);
  diff("zero", x.zero_stage, y.zero_stage);
  if (x.recompute != y.recompute)
    out.push_back(fmt::format("{} recompute instead of {}", to_string(x.recompute), to_string(y.recompute)));
  if (x.precision != y.precision)
    out.push_back(fmt::format("{} instead of {}", to_string(x.precision), to_string(y.precision)));
  if (a.framework != b.framework)
    out.push_back(
        fmt::format("{} instead of {}", frameworks[size_t(a.framework)], frameworks[size_t(b.framework)]));
  return out;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> by_count(const PruneCounts& pruned) {
  std::vector<std::pair<std::string, int64_t>> reasons(pruned.begin(), pruned.end());
  std::sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return reasons;
}

std::string layout_text(const PlanPoint& p, const PlanResult& result, LayoutStyle style) {
  const std::vector<std::string>& frameworks = result.frameworks;
  const Layout& l = p.layout;
  const bool prose = style == LayoutStyle::prose;
  std::string s;
  auto field = [&](const char* long_name, const char* short_name, int64_t value) {
    if (!s.empty()) s += ' ';
    s += prose ? fmt::format("{} {}", long_name, value) : fmt::format("{}{}", short_name, value);
  };
  field("tp", "tp", l.tp);
  field("pp", "pp", l.pp);
  if (l.virtual_stages > 1) field("vpp", "v", l.virtual_stages);
  field("dp", "dp", l.dp);
  if (l.cp > 1) field("cp", "cp", l.cp);
  if (result.model.is_moe()) {
    field("ep", "ep", l.ep);
    if (l.expert_tp != l.tp) field("etp", "etp", l.expert_tp);
  }
  field("mb", "mb", l.micro_batch);
  field("gb", "gb", l.global_batch);
  field("zero", "z", l.zero_stage);
  if (prose)
    s += fmt::format(" recompute {}", to_string(l.recompute));
  else
    s += l.recompute == Recompute::none ? " norc" : l.recompute == Recompute::full ? " full-rc" : " sel-rc";
  if (prose || l.precision != Precision::bf16) s += std::string(" ") + to_string(l.precision);
  if (frameworks.size() > 1) s += " " + frameworks[size_t(p.framework)];
  return s;
}

PlanSpaceSize plan_space_size(const PlanRequest& request, const Catalogs& catalogs) {
  const PlanSpace space = planner::build_space(request, catalogs);
  const auto [lo, hi] = planner::batch_sequences(request, space.model.seq_len);
  return {space.size, lo, hi, space.model.seq_len};
}

namespace {

// What the search's two passes share: the space, this rank's shapes, the counters the progress
// line reads, and the cancel flag.
struct SearchState {
  const PlanRequest& q;
  const PlanControl& control;
  const PlanSpace& space;
  std::atomic<int64_t> done{0};       // points settled
  std::atomic<int64_t> evaluated{0};  // of them, estimated
  bool cancelled() const { return control.cancel && control.cancel->load(); }
};

// The first pass: this rank's shapes through the layout rules and the memory model, the survivors
// as candidates with their floors (no more threads than shapes).
std::vector<Candidate> check_shapes(SearchState& st, const std::vector<uint32_t>& mine, PlanPartial& known,
                                    const std::function<void()>& report) {
  const int threads =
      int(std::clamp<size_t>(size_t(std::max(1, st.control.threads)), 1, std::max<size_t>(1, mine.size())));
  std::vector<PlanPartial> partials(static_cast<size_t>(threads));
  std::vector<std::vector<Candidate>> found(static_cast<size_t>(threads));
  std::atomic<size_t> next{0};
  run_pool(
      threads,
      [&](int t, const std::atomic<bool>& stop) {
        FloorCache floors;
        for (size_t i = next++; i < mine.size() && !stop; i = next++) {
          if (st.cancelled()) {
            partials[size_t(t)].interrupted = true;
            break;
          }
          check_shape(st.q, st.space, mine[i], floors, partials[size_t(t)], found[size_t(t)], st.done);
        }
      },
      report);
  for (const PlanPartial& p : partials) merge_into(st.q, known, p);
  std::vector<Candidate> candidates = std::move(found.front());
  for (size_t t = 1; t < found.size(); ++t) {
    candidates.insert(candidates.end(), found[t].begin(), found[t].end());
    std::vector<Candidate>().swap(found[t]);  // freed as it goes: candidates are most of the search's memory
  }
  return candidates;
}

// The second pass: the candidates estimated lowest floor first, in batches of a fixed size, each
// judged against what the batches before its own found (bounded_out), so that what is estimated
// does not depend on the threads. Without the bound (PlanControl::bound false) every candidate is
// estimated.
void estimate_candidates(SearchState& st, std::vector<Candidate> candidates, PlanPartial& known,
                         const std::function<void()>& report) {
  const PlanRequest& q = st.q;
  std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    const double x = a.floor_objective(q.objective), y = b.floor_objective(q.objective);
    if (x != y) return x < y;
    return std::tie(a.shape, a.choice.dp) < std::tie(b.shape, b.choice.dp);
  });
  const int threads = int(std::clamp<size_t>(size_t(std::max(1, st.control.threads)), 1,
                                             std::max<size_t>(1, candidates.size() / 64)));
  std::vector<PlanPartial> partials(static_cast<size_t>(threads));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  std::atomic<bool> failed{false};
  // The batch [batch_begin, batch_end): set between batches, while every thread waits.
  size_t batch_begin = 0, batch_end = std::min(candidates.size(), kEstimateBatch);
  std::atomic<size_t> next{0};  // the next candidate of the batch to take
  std::barrier sync(threads, [&]() noexcept {
    for (PlanPartial& p : partials) {
      merge_into(q, known, p);
      p = PlanPartial{};
    }
    if (st.cancelled() || failed) {
      known.interrupted = known.interrupted || st.cancelled();
      batch_begin = batch_end = candidates.size();
      return;
    }
    next = batch_begin = batch_end;
    batch_end = std::min(candidates.size(), batch_end + kEstimateBatch);
  });
  run_pool(
      threads,
      [&](int t, const std::atomic<bool>& stop) {
        PlanPartial& out = partials[size_t(t)];
        while (batch_begin < candidates.size()) {
          if (stop) failed = true;  // the progress report threw: end after this batch
          try {
            // The first batch runs whole: a search interrupted before it still ranks the lowest
            // floors it found.
            for (size_t i = next++; i < batch_end && !failed && !(st.cancelled() && batch_begin > 0);
                 i = next++) {
              const Candidate& c = candidates[i];
              if (const char* skip = st.control.bound ? bounded_out(q, known, c) : nullptr) {
                ++out.pruned[skip];
              } else {
                const int64_t before = out.evaluated;
                estimate_candidate(q, st.space, c, out);
                st.evaluated += out.evaluated - before;
              }
              ++st.done;
            }
          } catch (...) {
            errors[size_t(t)] = std::current_exception();
            failed = true;
          }
          sync.arrive_and_wait();  // every thread, every batch: none may leave the barrier waiting
        }
        if (errors[size_t(t)]) std::rethrow_exception(errors[size_t(t)]);
      },
      report);
}

}  // namespace

PlanPartial plan_search(const PlanRequest& q, const Catalogs& catalogs, const PlanControl& control) {
  const PlanSpace space = planner::build_space(q, catalogs);
  std::vector<uint32_t> mine;
  for (size_t i = 0; i < space.shapes.size(); ++i)
    if (int64_t(i) % control.ranks == control.rank) mine.push_back(uint32_t(i));
  SearchState st{q, control, space};
  std::function<void()> report;
  if (control.progress)
    report = [&] {
      control.progress({st.done.load(), space.size, st.evaluated.load(), PlanPhase::searching});
    };
  PlanPartial known;
  estimate_candidates(st, check_shapes(st, mine, known, report), known, report);
  known.space_size = space.size;
  return known;
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

  // The estimate's best, re-run by the event simulation down the list until top_k rows survive
  // its verdicts (memory, the hard limits, a refusal), in waves of the rows still missing.
  std::vector<PlanPoint> candidates = merged.best;
  std::vector<EventOutcome> outcomes(candidates.size());
  size_t tried = 0;
  int64_t kept = 0;
  auto cancelled = [&] { return control.cancel && control.cancel->load(); };
  // Progress: the simulations finished of the top_k (more where rows drop out).
  std::atomic<int64_t> finished{0};
  std::function<void()> report;
  if (control.progress)
    report = [&] {
      const int64_t n = finished.load();
      control.progress({n, std::max<int64_t>(n, std::min<int64_t>(q.top_k, int64_t(candidates.size()))),
                        merged.evaluated, PlanPhase::simulating});
    };
  if (report) report();
  // An event outcome counted: ranked (true), or pruned by its verdict.
  auto take = [&](const EventOutcome& o) {
    if (!o.ran) return false;
    ++result.simulated;
    if (!o.pruned.empty()) {
      ++result.pruned[o.pruned];
      ++result.event_pruned[o.pruned];
      if (o.pruned == kEventRefused && result.event_refusal.empty()) result.event_refusal = o.refusal;
      return false;
    }
    result.ranked.push_back(o.point);
    return true;
  };
  while (kept < q.top_k && tried < candidates.size() && !cancelled()) {
    const size_t wave = std::min(candidates.size() - tried, size_t(q.top_k - kept));
    std::atomic<size_t> next{tried};
    auto work = [&](int, const std::atomic<bool>& stop) {
      for (size_t i = next++; i < tried + wave && !stop && !cancelled(); i = next++) {
        outcomes[i] = simulate_point(q, catalogs, space, candidates[i]);
        ++finished;
      }
    };
    // As many at once as the threads, the rows and the memory allow (each simulation's memory
    // grows with its layer passes).
    double largest = 1;
    for (size_t i = tried; i < tried + wave; ++i)
      largest = std::max(largest, event_layer_passes(space.model, candidates[i].layout));
    const auto by_memory = size_t(std::max(1.0, kEventPassesAtOnce / largest));
    run_pool(int(std::min({size_t(std::max(1, control.threads)), wave, by_memory})), work, report);
    for (size_t i = tried; i < tried + wave; ++i)
      if (take(outcomes[i])) ++kept;
    tried += wave;
  }
  auto outcome_of = [&](const PlanPoint& p) -> const EventOutcome* {
    for (size_t i = 0; i < candidates.size(); ++i)
      if (outcomes[i].ran && point_key(candidates[i]) == point_key(p)) return &outcomes[i];
    return nullptr;
  };
  // A point of the estimate's front may beat the winner on both days and dollars once the winner
  // carries its event figures (the estimate placed it behind, within its error): it is re-run
  // too and ranked, until no point of the front dominates the best row.
  while (!result.ranked.empty() && !cancelled()) {
    const PlanPoint best =
        *std::min_element(result.ranked.begin(), result.ranked.end(),
                          [&](const PlanPoint& a, const PlanPoint& b) { return better(a, b, q.objective); });
    const auto rival = std::find_if(merged.front.begin(), merged.front.end(), [&](const PlanPoint& f) {
      return outcome_of(f) == nullptr && dominates(f, best);
    });
    if (rival == merged.front.end()) break;
    candidates.push_back(*rival);
    outcomes.push_back(simulate_point(q, catalogs, space, *rival));
    ++finished;
    take(outcomes.back());
  }
  // Interrupted before the event phase finished: the next rows with the estimate's numbers.
  for (size_t i = 0; i < candidates.size() && kept < q.top_k && cancelled(); ++i)
    if (!outcomes[i].ran) {
      result.interrupted = true;
      result.ranked.push_back(candidates[i]);
      ++kept;
    }
  std::sort(result.ranked.begin(), result.ranked.end(),
            [&](const PlanPoint& a, const PlanPoint& b) { return better(a, b, q.objective); });
  // Competition ranking with a tolerance: a row's rank is one more than the rows better than it by
  // more than kPlanTieTolerance (the rows it does not tie).
  for (PlanPoint& p : result.ranked) {
    int64_t ahead = 0;
    for (const PlanPoint& o : result.ranked)
      if (!within_tie(o.objective(q.objective), p.objective(q.objective))) ++ahead;
    p.rank = ahead + 1;
  }
  // The front: the search's, each simulated point with its event numbers (or without it, where
  // the simulation found it does not fit or refused it), and every simulated point that joins it.
  std::vector<PlanPoint> front;
  for (const PlanPoint& f : merged.front)
    if (const EventOutcome* o = outcome_of(f); !o) add_to_front(front, f);
  for (const EventOutcome& o : outcomes)
    if (o.ran && o.has_numbers()) add_to_front(front, o.point);
  result.pareto = std::move(front);

  if (result.ranked.size() >= 2) {
    const PlanPoint& a = result.ranked[0];
    const PlanPoint& b = result.ranked[1];
    const std::string& ga = q.gpus[size_t(a.offer)].gpu;
    const std::string& gb = q.gpus[size_t(b.offer)].gpu;
    const double gap = b.objective(q.objective) / a.objective(q.objective) - 1;
    std::string what = q.objective == PlanObjective::cost
                           ? fmt::format("{:.1f}% cheaper ({} vs {})", 100 * gap, usd_text(a.cost_usd, 4),
                                         usd_text(b.cost_usd, 4))
                           : fmt::format("{:.1f}% faster ({:.1f} vs {:.1f} days)", 100 * gap, a.days, b.days);
    std::string because;
    if (ga != gb) {
      because = fmt::format(
          "{} at ${}/GPU-hour needs {:.0f}k GPU-hours against {}'s {:.0f}k at ${} (MFU {:.0f}% vs {:.0f}%)",
          ga, q.gpus[size_t(a.offer)].usd_per_gpu_hour, a.gpu_hours / 1e3, gb, b.gpu_hours / 1e3,
          q.gpus[size_t(b.offer)].usd_per_gpu_hour, 100 * a.mfu, 100 * b.mfu);
    } else if (a.num_gpus != b.num_gpus) {
      because = fmt::format("{} GPUs instead of {}: {:.1f} vs {:.1f} days at MFU {:.0f}% vs {:.0f}%",
                            a.num_gpus, b.num_gpus, a.days, b.days, 100 * a.mfu, 100 * b.mfu);
    } else {
      const std::vector<std::string> diffs = layout_differences(a, b, result.frameworks);
      std::string list;
      for (const std::string& d : diffs) list += (list.empty() ? "" : ", ") + d;
      // How the runner-up's step differs, part by part.
      because = fmt::format(
          "{}; the runner-up's step is {:.3g} s against {:.3g} s (compute {:+.3g} s, exposed "
          "communication {:+.3g} s, bubble {:+.3g} s)",
          list, b.step_time_s, a.step_time_s, b.compute_s - a.compute_s, b.exposed_comm_s - a.exposed_comm_s,
          b.bubble_s - a.bubble_s);
    }
    result.why = fmt::format("The winner ({} x {}, {}) is {} than the runner-up ({} x {}, {}): {}.", ga,
                             a.num_gpus, layout_text(a, result, LayoutStyle::prose), what, gb,
                             b.num_gpus, layout_text(b, result, LayoutStyle::prose), because);
    if (within_tie(a.objective(q.objective), b.objective(q.objective)))
      result.why +=
          fmt::format(" They are within {:.0f}%, the estimate's error: a tie.", 100 * kPlanTieTolerance);
  }
  return result;
}

namespace {

void add_warnings(const PlanRequest& q, PlanResult& r) {
  const auto above_one = [](const std::vector<int64_t>& sizes) {
    return std::any_of(sizes.begin(), sizes.end(), [](int64_t n) { return n > 1; });
  };
  if (!r.model.is_moe() && (above_one(q.axes.ep) || above_one(q.axes.expert_tp)))
    r.warnings.push_back(
        "the model is dense (no experts): expert-parallel and expert-TP sizes above 1 were "
        "not searched");
  if (r.ranked.empty()) return;
  const PlanPoint& best = r.ranked.front();
  if (q.objective == PlanObjective::cost && !q.deadline_days && best.days > 365)
    r.warnings.push_back(fmt::format(
        "the cheapest plan takes {:.0f} days: without a deadline the fewest dollars go to the smallest "
        "cluster that fits (give a deadline, or rank by time)",
        best.days));
  if (q.objective == PlanObjective::time && !q.budget_usd && r.pareto.size() > 1 &&
      best.cost_usd > 1.5 * r.pareto.back().cost_usd)
    r.warnings.push_back(
        fmt::format("the fastest plan costs {:.1f}x the cheapest on the Pareto front (give a "
                    "budget to bound it)",
                    best.cost_usd / r.pareto.back().cost_usd));
  if (const auto refused = r.pruned.find(kEventRefused); refused != r.pruned.end())
    r.warnings.push_back(
        fmt::format("{} of the estimate's best could not be event-simulated and left the "
                    "ranking; the first: {}",
                    refused->second, r.event_refusal));
  if (r.interrupted)
    r.warnings.push_back(
        "interrupted: the best found so far, not the whole space (rows not event-simulated carry the "
        "estimate's numbers, fidelity \"analytic\")");
}

}  // namespace

PlanResult plan(const PlanRequest& q, const Catalogs& catalogs, const PlanControl& control) {
  const auto start = std::chrono::steady_clock::now();
  PlanResult r = plan_finish(q, catalogs, plan_search(q, catalogs, control), control);
  add_warnings(q, r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace simrun
