// Pipeline schedules as orders of slots: GPipe, 1F1B and Megatron's interleaved 1F1B
// (Narayanan et al. 2021, arXiv:2104.04473; megatron/core/pipeline_parallel/schedules.py), which
// slot each stage runs when, whether an order completes, and the order played out with a
// duration per slot (the longest path the closed-form estimate times the pipeline by).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "simrun/sim/scenario/layout_rules.hpp"  // PipelineSchedule

namespace simrun {

// One step of a stage's pipeline schedule: forward or backward of (micro-batch, chunk).
struct PipelineSlot {
  bool forward = true;
  int64_t micro_batch = 0;
  int64_t chunk = 0;
};

std::vector<PipelineSlot> stage_schedule(PipelineSchedule kind, int64_t stage, int64_t pp, int64_t m, int64_t v);

// Whether every stage can run its schedule to the end: each forward of (micro-batch, chunk)
// needs the previous virtual stage's, each backward the next one's (the last one its own
// forward). Megatron's interleaved table deadlocks for some micro-batch counts that pp does
// not divide (e.g. pp 4, 4 chunks, 5 micro-batches).
bool schedule_completes(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v);

// The schedule played out with a duration per slot: each stage runs its slots in order, each slot
// starting when its stage is free and the slot it depends on (as above) has ended, a hop later
// when that slot ran on another stage: hop_s[b] between stage b and stage (b + 1) mod pp, either
// way (empty: no hops). Returns every stage's finish time, or nullopt when the schedule
// deadlocks. The longest path through Megatron's order, as the closed-form estimate times the
// pipeline.
std::optional<std::vector<double>> schedule_finish_times(
    PipelineSchedule kind, int64_t pp, int64_t m, int64_t v,
    const std::function<double(int64_t stage, const PipelineSlot& slot)>& duration,
    const std::vector<double>& hop_s = {});

}  // namespace simrun
