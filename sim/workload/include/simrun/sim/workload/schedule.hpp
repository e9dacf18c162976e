// Pipeline schedules as orders of slots: GPipe, 1F1B and Megatron's interleaved 1F1B
// (Narayanan et al. 2021, arXiv:2104.04473; megatron/core/pipeline_parallel/schedules.py),
// Megatron-Core's combined 1F1B (combined_1f1b.py) and DeepSeek's DualPipe (arXiv:2412.19437
// sec. 3.2.1; deepseek-ai/DualPipe dualpipe.py), which
// slot each stage runs when, whether an order completes, and the order played out with a
// duration per slot (the longest path the closed-form estimate times the pipeline by).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/scenario/layout_rules.hpp"  // PipelineSchedule

namespace simrun {

// One step of a stage's pipeline schedule: forward or backward of (micro-batch, chunk).
struct PipelineSlot {
  bool forward = true;
  int64_t micro_batch = 0;
  int64_t chunk = 0;
  // Runs beside the stage's next slot, layer by layer, one's EP all-to-alls behind the other's
  // compute (combined 1F1B: a backward and the forward after it; DualPipe: its F&B chunks).
  bool paired_with_next = false;
};

// Where chunk `chunk` of `stage` sits in the pipeline its micro-batches flow through: its
// position (0: the embedding's), the last position (the loss's), and the chunks before and after
// it. Megatron's orders: virtual stage chunk·pp + stage of pp·v. DualPipe: chunk 0 is position
// `stage` of the pipeline from stage 0 to pp − 1, chunk 1 position pp − 1 − stage of the one
// back (each rank holds a stage of either direction: two copies of the parameters).
struct ChunkPlace {
  int64_t position = 0, last = 0;
  int64_t prev_stage = -1, prev_chunk = 0;  // valid when position > 0
  int64_t next_stage = -1, next_chunk = 0;  // valid when position < last
};
ChunkPlace chunk_place(PipelineSchedule kind, int64_t stage, int64_t chunk, int64_t pp, int64_t v);
// The chunks each stage holds under `kind`: v (interleaved), 2 (DualPipe), else 1.
int64_t stage_chunks(PipelineSchedule kind, int64_t v);
// DualPipe's layers per chunk (index stage·2 + chunk) from the layers of each pipeline stage:
// a stage's own (chunk 0) and its mirror's, pp − 1 − stage (chunk 1).
std::vector<int64_t> dualpipe_layers_per_chunk(const std::vector<int64_t>& layers_per_stage);

std::vector<PipelineSlot> stage_schedule(PipelineSchedule kind, int64_t stage, int64_t pp, int64_t m,
                                         int64_t v);

// Whether every stage can run its schedule to the end: each forward of (micro-batch, chunk)
// needs the previous virtual stage's, each backward the next one's (the last one its own
// forward). Megatron's interleaved table deadlocks for some micro-batch counts that pp does
// not divide (e.g. pp 4, 4 chunks, 5 micro-batches).
bool schedule_completes(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v);

// Combined 1F1B or DualPipe whose order pairs no forward with a backward (every micro-batch in
// a stage's warm-up or cool-down): it hides nothing and runs as the order under it. The warning
// both fidelities give then, naming the micro-batches; nullopt otherwise.
std::optional<std::string> unpaired_schedule_warning(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v);

// The schedule played out with a duration per slot: each stage runs its slots in order (a paired
// slot and the next as one, both ending at once), each slot
// starting when its stage is free and the slot it depends on (as above) has ended, a hop later
// when that slot ran on another stage: hop_s[b] between stage b and stage (b + 1) mod pp, either
// way (empty: no hops). Returns every stage's finish time, or nullopt when the schedule
// deadlocks. The longest path through Megatron's order, as the closed-form estimate times the
// pipeline. The order the slots run in is the same for every duration (a slot runs once its input
// has run): each thread remembers it per (kind, pp, m, v) and replays it.
std::optional<std::vector<double>> schedule_finish_times(
    PipelineSchedule kind, int64_t pp, int64_t m, int64_t v,
    const std::function<double(int64_t stage, const PipelineSlot& slot)>& duration,
    const std::vector<double>& hop_s = {});

// The same with every slot's duration in a table, durations[schedule_slot_index(…)] (2·pp·c·m
// entries, c = stage_chunks(kind, v)): what the estimate plays twice per layout.
std::optional<std::vector<double>> schedule_finish_times(PipelineSchedule kind, int64_t pp, int64_t m,
                                                         int64_t v, const std::vector<double>& durations,
                                                         const std::vector<double>& hop_s = {});
// Where a slot of `stage` sits in that table: [stage][forward][chunk][micro-batch].
size_t schedule_slot_index(PipelineSchedule kind, int64_t m, int64_t v, int64_t stage,
                           const PipelineSlot& slot);
// Each stage's slots, as stage_schedule gives them, remembered per thread with the plays.
std::shared_ptr<const std::vector<std::vector<PipelineSlot>>> schedule_slots(PipelineSchedule kind,
                                                                             int64_t pp, int64_t m,
                                                                             int64_t v);

}  // namespace simrun
