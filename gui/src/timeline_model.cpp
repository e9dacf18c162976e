// The timeline view's data (timeline_model.hpp).
#include "timeline_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace simrun::gui {

const char* to_string(SpanCategory c) {
  switch (c) {
    case SpanCategory::forward:
      return "forward";
    case SpanCategory::backward:
      return "backward";
    case SpanCategory::recompute:
      return "recompute";
    case SpanCategory::optimizer:
      return "optimizer";
    case SpanCategory::tp:
      return "TP";
    case SpanCategory::cp:
      return "CP";
    case SpanCategory::ep:
      return "EP";
    case SpanCategory::pp:
      return "PP";
    case SpanCategory::dp:
      return "DP";
    case SpanCategory::other:
      return "other";
    case SpanCategory::count:
      break;
  }
  return "?";
}

SpanCategory category_of(const Task& t) {
  if (t.kind == TaskKind::compute) {
    switch (t.phase) {
      case Phase::forward:
        return SpanCategory::forward;
      case Phase::backward:
        return SpanCategory::backward;
      case Phase::recompute:
        return SpanCategory::recompute;
      case Phase::optimizer:
        return SpanCategory::optimizer;
      case Phase::comm:
        return SpanCategory::other;
    }
  }
  if (t.kind == TaskKind::send || t.kind == TaskKind::recv) return SpanCategory::pp;
  switch (t.group) {
    case GroupKind::tp:
      return SpanCategory::tp;
    case GroupKind::cp:
    case GroupKind::cp_a2a:
    case GroupKind::cp_ring:
      return SpanCategory::cp;
    case GroupKind::ep:
    case GroupKind::ep_intra:
    case GroupKind::ep_inter:
      return SpanCategory::ep;
    case GroupKind::pp:
      return SpanCategory::pp;
    case GroupKind::dp:
    case GroupKind::dp_cp:
    case GroupKind::edp:
      return SpanCategory::dp;
  }
  return SpanCategory::other;
}

Timeline build_timeline(const Workload& workload, const StepResult& step, const RankLayout& layout) {
  Timeline t;
  t.end_s = step.step_time.seconds();
  std::map<std::pair<int64_t, int>, size_t> lane_of;  // (rank, stream) → lane
  for (const TaskSpan& s : step.spans) {
    const int64_t stage = layout.coord_of(s.rank).pp;
    const Task& task = workload.stages[size_t(stage)].tasks[s.task];
    const auto key = std::make_pair(s.rank, int(task.stream));
    auto it = lane_of.find(key);
    if (it == lane_of.end()) {
      it = lane_of.emplace(key, t.lanes.size()).first;
      TimelineLane lane;
      lane.rank = s.rank;
      lane.stage = stage;
      lane.stream = task.stream;
      lane.name = fmt::format("rank {} {}", s.rank, simrun::to_string(task.stream));
      t.lanes.push_back(std::move(lane));
    }
    t.lanes[it->second].spans.push_back({s.start.seconds(), s.end.seconds(), s.task, category_of(task)});
  }
  for (TimelineLane& lane : t.lanes) {
    std::sort(lane.spans.begin(), lane.spans.end(),
              [](const TimelineSpan& a, const TimelineSpan& b) { return a.start_s < b.start_s; });
    double latest = 0;
    for (const TimelineSpan& s : lane.spans) lane.end_prefix.push_back(latest = std::max(latest, s.end_s));
  }
  std::sort(t.lanes.begin(), t.lanes.end(), [](const TimelineLane& a, const TimelineLane& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.stream < b.stream;
  });
  return t;
}

void visible_spans(const TimelineLane& lane, double t0, double t1, double px_per_s, double min_px,
                   std::vector<DrawSpan>& out) {
  out.clear();
  // The first span that may reach into the window: the latest end so far passes t0.
  const size_t first =
      size_t(std::upper_bound(lane.end_prefix.begin(), lane.end_prefix.end(), t0) - lane.end_prefix.begin());
  for (size_t i = first; i < lane.spans.size() && lane.spans[i].start_s <= t1; ++i) {
    const TimelineSpan& s = lane.spans[i];
    if (s.end_s < t0) continue;
    const double x0 = (std::max(s.start_s, t0) - t0) * px_per_s, x1 = (std::min(s.end_s, t1) - t0) * px_per_s;
    // A narrow span joins the narrow run before it (a run of merged spans, or one narrow span).
    const bool narrow = x1 - x0 < min_px;
    const bool joins = narrow && !out.empty() && x0 - out.back().x1 < min_px &&
                       (out.back().merged > 1 || out.back().x1 - out.back().x0 < min_px);
    if (joins) {
      DrawSpan& d = out.back();
      d.x1 = std::max(d.x1, x1);
      ++d.merged;
      continue;
    }
    out.push_back({x0, x1, s.task, s.category, 1});
  }
}

}  // namespace simrun::gui
