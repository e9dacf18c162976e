// The timeline view's data (gui/), apart from drawing so that it is tested without a window: the
// simulated step's spans as lanes, one per traced GPU and stream, each span with a category for
// its colour; and what a frame draws of a lane: the spans inside the visible window (found by
// binary search, not scanned), with runs of spans narrower than a few pixels merged into one, so
// that a step of a 16,384-GPU cluster (a million spans) draws as fast as a small one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simrun/sim/event/step_executor.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun::gui {

// What a span's colour says.
enum class SpanCategory : uint8_t {
  forward,
  backward,
  recompute,
  optimizer,
  tp,
  cp,
  ep,
  pp,
  dp,
  other,
  count
};
const char* to_string(SpanCategory c);
SpanCategory category_of(const Task& task);

struct TimelineSpan {
  double start_s = 0, end_s = 0;
  uint32_t task = 0;  // in its rank's stage program
  SpanCategory category = SpanCategory::other;
};

struct TimelineLane {
  int64_t rank = 0;
  int64_t stage = 0;
  Stream stream = Stream::compute;
  std::string name;                 // "rank 8 compute"
  std::vector<TimelineSpan> spans;  // by start
  std::vector<double> end_prefix;   // the latest end among spans[0..i]: the culling's search key
};

struct Timeline {
  std::vector<TimelineLane> lanes;
  double end_s = 0;  // the step's end
};

// Lanes of every traced rank (rank order), one per stream that holds a span (stream order).
Timeline build_timeline(const Workload& workload, const StepResult& step, const RankLayout& layout);

// A span as a frame draws it: pixels from the window's left, and how many spans it stands for.
struct DrawSpan {
  double x0 = 0, x1 = 0;
  uint32_t task = 0;  // the first span's
  SpanCategory category = SpanCategory::other;
  int32_t merged = 1;
};

// The spans of `lane` that overlap [t0, t1] (seconds), at `px_per_s`, into `out` (cleared):
// consecutive spans each under `min_px` wide and less than `min_px` apart are merged into one.
void visible_spans(const TimelineLane& lane, double t0, double t1, double px_per_s, double min_px,
                   std::vector<DrawSpan>& out);

}  // namespace simrun::gui
