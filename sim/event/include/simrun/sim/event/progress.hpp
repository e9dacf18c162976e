// Progress of one event simulation, for a caller that shows it (the CLI draws a line on a
// terminal's stderr): simulate() reports when it starts building the workload, and the step
// executor when a pass starts, every kProgressEvents engine events and when the pass ends.
// An observer only reads counters, so a run gives the same results with or without one; without
// one, the executor runs its engine as before.
#pragma once

#include <cstdint>
#include <functional>

namespace simrun {

enum class SimulationPhase {
  building,    // workload built and its tasks timed; nothing counted yet
  simulating,  // the step's events
  retracing,   // the step again, tracing the rank that finished last (stragglers, slow links)
};

struct SimulationProgress {
  SimulationPhase phase = SimulationPhase::building;
  uint64_t events = 0;          // engine events processed in this pass, e.g. 1'250'000
  uint64_t tasks_done = 0;      // tasks finished in this pass over every simulated rank
  uint64_t tasks_total = 0;     // tasks of one pass over every simulated rank (0 while building)
  int64_t simulated_ranks = 0;  // e.g. 4 (representatives) or 1024 (--full)
};

using ProgressObserver = std::function<void(const SimulationProgress&)>;

// Events between two reports: rare enough to cost nothing measurable (a few hundred a second).
inline constexpr uint64_t kProgressEvents = uint64_t{1} << 14;

}  // namespace simrun
