// The faithful slice `simrun validate` runs when the machine cannot hold the scenario's layout:
// the per-rank shapes stay those of the scenario (the same tp, cp, pp, micro-batch, sequence and
// model widths), and only what changes no rank's shapes is scaled down, each step said:
//   - the data-parallel degree to the ranks mpirun started (the global batch with it, so each
//     pipeline keeps its micro-batches); ZeRO then shards over fewer ranks, which is said too;
//   - the cluster to the ranks on this machine, on its device (the cpu backend: cpu-host);
//   - the layers, to a multiple of the model chunks (pp × virtual stages), when a step would
//     take longer than the step budget on this machine.
// What cannot be sliced so (fewer ranks than one model replica, ranks that do not form whole
// replicas, buffers over the memory) is refused with one line (InputError) before any work.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simrun/sim/scenario/scenario.hpp"

namespace simrun::exec {

struct SliceLimits {
  int64_t ranks = 1;           // processes mpirun started, e.g. 4
  int64_t ranks_per_node = 1;  // of which on one machine
  GpuSpec device;              // what the ranks run on (the cpu backend: cpu-host, as measured)
  double memory_bytes = 0;     // memory this machine can give the ranks on it, e.g. 0.8 · MemAvailable
  double step_budget_s = 120;  // a longer predicted step takes fewer layers
};

struct Slice {
  Scenario scenario;                // what runs
  std::vector<std::string> scaled;  // each change, e.g. "dp 32 -> 4 (global batch 1024 -> 128, ...)"
};

// The refusals that need nothing measured (InputError): fewer ranks than one model replica, ranks
// that do not form whole replicas, more ranks than the layout, an EP group that no longer divides a
// stage. faithful_slice checks them first; validate checks them before it measures the host.
void check_ranks(const Scenario& scenario, int64_t ranks);

// `footprint(scenario)`: the bytes one rank's buffers take for the busiest stage (CpuBackend);
// `predict_step(scenario)`: the step time the simulator predicts on `limits.device`.
Slice faithful_slice(const Scenario& scenario, const SliceLimits& limits,
                     const std::function<double(const Scenario&)>& footprint,
                     const std::function<double(const Scenario&)>& predict_step);

}  // namespace simrun::exec
