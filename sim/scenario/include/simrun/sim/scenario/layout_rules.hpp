// The rules of a parallel layout, in one place and as data: what makes a layout impossible
// (layout_error: the scenario parser raises it as InputError, the workload builder refuses a
// hand-built Scenario with it, a planner counts it as a pruning reason) and the caveats of one
// that runs (layout_warnings: both fidelities report them word for word). Sources: Megatron-Core
// TransformerConfig and parallel_state (divisibility), Narayanan et al. 2021 (pipeline bubble).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

struct LayoutDiagnostic {
  std::string field;    // the scenario field at fault, e.g. "layout.tp"
  std::string code;     // a stable name to count by, e.g. "tp_divides_heads"
  std::string message;  // one line: what is wrong (and what would be right)
};

// Which pipeline schedule a layout runs: its pipeline_schedule, else interleaved 1F1B with
// virtual stages, else 1F1B.
PipelineSchedule default_schedule(const Layout& layout);
// The slot order `schedule` plays with `virtual_stages` chunks per rank: combined 1F1B plays
// 1F1B's (interleaved 1F1B's with virtual stages); the others their own.
PipelineSchedule slot_order(PipelineSchedule schedule, int64_t virtual_stages);
// Model chunks per pipeline rank the layout's schedule runs: its virtual stages where it plays
// interleaved 1F1B's order, else 1 (an explicit 1F1B ignores virtual_stages, with a warning).
int64_t scheduled_chunks(const Layout& layout);
// Whether a schedule pairs each backward with the next forward, layer by layer (combined 1F1B,
// DualPipe's F&B chunks).
bool pairs_forward_and_backward(PipelineSchedule schedule);

// The first rule `layout` breaks for this model and cluster, in the order the parser checks
// them (later rules assume the earlier hold); nullopt when it can run. The schedule's own
// rules (an interleaved order that completes) are the workload builder's.
std::optional<LayoutDiagnostic> layout_error(const ModelSpec& model, const ClusterSpec& cluster,
                                             const Layout& layout);

// What the framework's pipeline engine cannot run (WorkloadOptions::pipeline_engine): DeepSpeed's
// runs its TrainSchedule (1F1B) only, so no interleaved, GPipe, DualPipe or combined 1F1B order,
// and refuses ZeRO-2/3 with pp > 1 (frameworks.md 2.1, 2.3); nullopt when it can run.
std::optional<LayoutDiagnostic> pipeline_engine_error(const Layout& layout, const WorkloadOptions& options);

// Caveats of a layout that runs under `schedule`: groups leaving the scale-up domain, a
// pipeline that never fills, settings without effect, combinations modelled as one framework
// runs them.
std::vector<LayoutDiagnostic> layout_warnings(const Scenario& scenario, PipelineSchedule schedule);

// Layers of each model chunk (index stage·v + chunk) under the layout's pipeline_split: even,
// Megatron's account-for-embedding/loss split (embedding and loss take a layer's place each),
// or balanced (1F1B: extra layers on the middle stages). Throws InputError when the split
// cannot be made, saying which split would work.
std::vector<int64_t> split_layers(int64_t layers, int64_t pp, int64_t virtual_stages, PipelineSplit split,
                                  const std::string& file);
struct LayerSplit {
  std::vector<int64_t> layers_per_chunk;  // index stage·v + chunk, e.g. {7, 8, 8, 7}
  std::optional<LayoutDiagnostic> error;  // why the split cannot be made (then layers_per_chunk is partial)
};
LayerSplit split_layers(int64_t layers, int64_t pp, int64_t v, PipelineSplit split);

// Near-even layers per stage, the remainder on the first stages (where no pipeline_split can
// be made: the event simulation refuses such a layout, the estimate and memory model still read it).
std::vector<int64_t> near_even_layers(int64_t layers, int64_t pp);

// The global layer ids pipeline stage `stage` holds: the one split the workload, the estimate
// and the memory model share (pipeline_split over the layout's chunks, its virtual stages under
// the interleaved schedule; near_even_layers where that split cannot be made).
std::vector<int64_t> stage_layers(const ModelSpec& model, const Layout& layout, int64_t stage);

// That split for every stage at once: layers per chunk (index stage·v + chunk) and each chunk's
// first layer, v being the chunks per stage it holds.
struct LayerPlacement {
  std::vector<int64_t> layers_per_chunk, first_layer;
  int64_t v = 1;
};
LayerPlacement layer_placement(const ModelSpec& model, const Layout& layout);

// The first global layer of each model chunk (index stage·v + chunk): virtual stage
// chunk·pp + stage takes the layers after those of the virtual stages before it.
std::vector<int64_t> chunk_first_layers(const std::vector<int64_t>& layers_per_chunk, int64_t pp, int64_t v);

// The global layer ids `stage` holds, chunk by chunk (virtual stage chunk·pp + stage takes the
// layers after those of the virtual stages before it).
std::vector<int64_t> stage_layer_ids(const std::vector<int64_t>& layers_per_chunk, int64_t pp, int64_t v,
                                     int64_t stage);

// Their messages, as reports list them.
std::vector<std::string> messages(const std::vector<LayoutDiagnostic>& diagnostics);

}  // namespace simrun
