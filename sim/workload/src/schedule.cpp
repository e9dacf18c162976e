// Pipeline schedules (schedule.hpp): Megatron's orders and their playing out.
#include "simrun/sim/workload/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <tuple>

#include "simrun/common/error.hpp"

namespace simrun {

namespace {

// DualPipe's step on rank `stage` (deepseek-ai/DualPipe dualpipe.py DualPipe.step, read at
// 3da1bbe; frameworks.md sec. 4): its eight phases nF0, nF0F1, nB1W1F1, nF0B1F1B0, nB1F1B0,
// nB1B0, nWB0, nW. Local phase 0 is the direction whose first stage is in this rank's half of
// the pipeline (chunk 0 on the first half, chunk 1 on the second); micro-batches 0..m/2−1 flow
// through chunk 0, m/2..m−1 through chunk 1, each direction's in order. The weight-gradient
// chunks that DualPipe defers (zero bubble, W) are not split from their backward here: each
// backward runs whole (B), so the bubble is (pp/2 − 1)(F&B + B) where DualPipe's is 3W shorter.
std::vector<PipelineSlot> dualpipe_schedule(int64_t stage, int64_t pp, int64_t m) {
  const int64_t half = pp / 2;
  const int64_t half_rank = std::min(stage, pp - 1 - stage);
  const bool second_half = stage >= half;
  const bool middle = stage == half - 1 || stage == half;
  std::vector<PipelineSlot> out;
  std::array<int64_t, 2> forwards{0, 0}, backwards{0, 0};
  auto chunk_of = [&](int phase) { return int64_t(second_half ? 1 - phase : phase); };
  auto first_mb = [&](int64_t chunk) { return chunk == 0 ? int64_t{0} : m / 2; };
  auto f = [&](int phase, bool paired = false) {
    const int64_t c = chunk_of(phase);
    out.push_back({true, first_mb(c) + forwards[size_t(c)]++, c, paired});
  };
  auto b = [&](int phase, bool paired = false) {
    const int64_t c = chunk_of(phase);
    out.push_back({false, first_mb(c) + backwards[size_t(c)]++, c, paired});
  };
  // _forward_backward_chunk(forward phase, backward phase): the two run overlapped.
  auto fb = [&](int forward_phase, int backward_phase) {
    f(forward_phase, true);
    b(backward_phase);
  };
  for (int64_t i = 0; i < (half - half_rank - 1) * 2; ++i) f(0);  // 1: nF0
  for (int64_t i = 0; i < half_rank + 1; ++i) {                   // 2: nF0F1
    f(0);
    f(1);
  }
  for (int64_t i = 0; i < half - half_rank - 1; ++i) {  // 3: nB1W1F1
    b(1);
    f(1);
  }
  for (int64_t i = 0; i < m / 2 - pp + half_rank + 1; ++i) {  // 4: nF0B1F1B0
    if (i == 0 && middle) {  // "We don't overlap these two chunks to further reduce bubble size."
      f(0);
      b(1);
    } else {
      fb(0, 1);
    }
    fb(1, 0);
  }
  for (int64_t i = 0; i < half - half_rank - 1; ++i) {  // 5: nB1F1B0
    b(1);
    fb(1, 0);
  }
  for (int64_t i = 0; i < half_rank + 1; ++i) {  // 6: nB1B0
    b(1);
    b(0);
  }
  for (int64_t i = 0; i < half - half_rank - 1; ++i) b(0);  // 7: nWB0 (8: nW, the deferred W, none here)
  return out;
}

}  // namespace

int64_t stage_chunks(PipelineSchedule kind, int64_t v) {
  return kind == PipelineSchedule::dualpipe                     ? 2
         : slot_order(kind, v) == PipelineSchedule::interleaved ? v
                                                                : 1;
}

std::vector<int64_t> dualpipe_layers_per_chunk(const std::vector<int64_t>& layers_per_stage) {
  std::vector<int64_t> out;
  for (size_t s = 0; s < layers_per_stage.size(); ++s) {
    out.push_back(layers_per_stage[s]);
    out.push_back(layers_per_stage[layers_per_stage.size() - 1 - s]);
  }
  return out;
}

ChunkPlace chunk_place(PipelineSchedule kind, int64_t stage, int64_t chunk, int64_t pp, int64_t v) {
  ChunkPlace p;
  if (kind == PipelineSchedule::dualpipe) {
    const bool back = chunk == 1;
    p.position = back ? pp - 1 - stage : stage;
    p.last = pp - 1;
    p.prev_stage = back ? stage + 1 : stage - 1;
    p.next_stage = back ? stage - 1 : stage + 1;
    p.prev_chunk = p.next_chunk = chunk;
    return p;
  }
  const int64_t vs = chunk * pp + stage;
  p.position = vs;
  p.last = pp * v - 1;
  p.prev_stage = (vs - 1 + pp) % pp;
  p.prev_chunk = (vs - 1) / pp;
  p.next_stage = (vs + 1) % pp;
  p.next_chunk = (vs + 1) / pp;
  return p;
}

std::vector<PipelineSlot> stage_schedule(PipelineSchedule kind, int64_t stage, int64_t pp, int64_t m,
                                         int64_t v) {
  std::vector<PipelineSlot> out;
  if (kind == PipelineSchedule::dualpipe) return dualpipe_schedule(stage, pp, m);
  if (kind == PipelineSchedule::combined_1f1b) {
    // Megatron-Core's combined 1F1B: the order of 1F1B (interleaved with virtual stages), each
    // backward run beside the forward after it ("Phase k: k-th backward + (k+1)-th forward",
    // combined_1f1b.py; interleaved, the extra warm-up micro-batch of get_pp_rank_microbatches
    // that keeps the two independent).
    out = stage_schedule(slot_order(kind, v), stage, pp, m, v);
    for (size_t k = 0; k + 1 < out.size(); ++k)
      out[k].paired_with_next = !out[k].forward && out[k + 1].forward;
    return out;
  }
  if (kind == PipelineSchedule::gpipe) {
    for (int64_t i = 0; i < m; ++i) out.push_back({true, i, 0});
    for (int64_t i = 0; i < m; ++i) out.push_back({false, i, 0});
    return out;
  }
  if (kind == PipelineSchedule::one_f_one_b) {
    const int64_t warm = std::min(pp - stage - 1, m);
    for (int64_t i = 0; i < warm; ++i) out.push_back({true, i, 0});
    for (int64_t i = 0; i < m - warm; ++i) {
      out.push_back({true, warm + i, 0});
      out.push_back({false, i, 0});
    }
    for (int64_t i = m - warm; i < m; ++i) out.push_back({false, i, 0});
    return out;
  }
  // Interleaved 1F1B (Megatron-Core schedules.py, forward_backward_pipelining_with_interleaving):
  // micro-batches go in groups of pp; within a group every chunk runs in turn. Backward visits
  // chunks in reverse order.
  const int64_t group = pp;
  std::vector<std::pair<int64_t, int64_t>> table;  // (micro-batch, chunk) in forward order
  for (int64_t first = 0; first < m; first += group)
    for (int64_t c = 0; c < v; ++c)
      for (int64_t mb = first; mb < std::min(first + group, m); ++mb) table.emplace_back(mb, c);
  const int64_t total = static_cast<int64_t>(table.size());
  const int64_t warm = (m == pp) ? total : std::min(total, (pp - stage - 1) * 2 + (v - 1) * group);
  auto fwd = [&](int64_t k) {
    return PipelineSlot{true, table[static_cast<size_t>(k)].first, table[static_cast<size_t>(k)].second};
  };
  auto bwd = [&](int64_t k) {
    return PipelineSlot{false, table[static_cast<size_t>(k)].first,
                        v - 1 - table[static_cast<size_t>(k)].second};
  };
  for (int64_t k = 0; k < warm; ++k) out.push_back(fwd(k));
  for (int64_t k = 0; k < total - warm; ++k) {
    out.push_back(fwd(warm + k));
    out.push_back(bwd(k));
  }
  for (int64_t k = total - warm; k < total; ++k) out.push_back(bwd(k));
  return out;
}

std::optional<std::string> unpaired_schedule_warning(PipelineSchedule kind, int64_t pp, int64_t m,
                                                     int64_t v) {
  if (!pairs_forward_and_backward(kind) || pp < 1) return std::nullopt;
  for (int64_t stage = 0; stage < pp; ++stage)
    for (const PipelineSlot& slot : stage_schedule(kind, stage, pp, m, v))
      if (slot.paired_with_next) return std::nullopt;
  return fmt::format(
      "{} pairs no forward with a backward at {} micro-batch{} per pipeline (each stage's are all "
      "warm-up and cool-down): it hides no all-to-all and runs as {}; more micro-batches pair them",
      to_string(kind), m, m == 1 ? "" : "es",
      kind == PipelineSchedule::dualpipe ? "a bidirectional 1F1B" : (v > 1 ? "interleaved 1F1B" : "1F1B"));
}

bool schedule_completes(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v) {
  // A pure function of four numbers that plays the whole schedule out (O(pp·v·m)): the planner and
  // the estimate ask it for the same schedules again and again, so each thread remembers its answers.
  thread_local std::map<std::tuple<PipelineSchedule, int64_t, int64_t, int64_t>, bool> known;
  const auto key = std::make_tuple(kind, pp, m, v);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  const bool completes =
      schedule_finish_times(kind, pp, m, v, [](int64_t, const PipelineSlot&) { return 0.0; }).has_value();
  if (known.size() > 100000) known.clear();  // bounded: a long-lived process asking everything
  known.emplace(key, completes);
  return completes;
}

namespace {

// The schedule's slots and where their end times (and durations, in a table) live:
// [stage][forward][chunk][micro-batch], as schedule_slot_index.
struct ScheduleShape {
  PipelineSchedule kind;
  int64_t pp, m, v, chunks;
  size_t end_index(bool forward, int64_t stage, int64_t chunk, int64_t mb) const {
    return size_t(stage * 2 * chunks * m + ((forward ? 1 : 0) * chunks + chunk) * m + mb);
  }
  size_t end_count() const { return size_t(2 * pp * chunks * m); }
};

// What a slot of stage s waits for: the end time of the slot it depends on (kReadyAtStart for
// the pipeline's first forward) and, where that ran on another stage, the boundary the message
// crosses (b between stages b and (b + 1) mod pp; kNoHop for none).
constexpr int64_t kReadyAtStart = -1, kNoHop = -1;
struct SlotInput {
  int64_t read = kReadyAtStart;
  int64_t boundary = kNoHop;
};

SlotInput input_of(const ScheduleShape& sh, int64_t s, const PipelineSlot& slot) {
  const ChunkPlace p = chunk_place(sh.kind, s, slot.chunk, sh.pp, sh.v);
  const int64_t mb = slot.micro_batch;
  SlotInput in;
  if (slot.forward) {
    if (p.position == 0) return in;  // the first forward: ready at once, no hop
    in.read = int64_t(sh.end_index(true, p.prev_stage, p.prev_chunk, mb));
  } else if (p.position == p.last) {
    in.read = int64_t(sh.end_index(true, s, slot.chunk, mb));
    return in;  // the loss turns around in place
  } else {
    in.read = int64_t(sh.end_index(false, p.next_stage, p.next_chunk, mb));
  }
  // Messages climb the stages forward and come down backward; DualPipe's chunk 1 the other way.
  const bool from_below = slot.forward == (sh.kind != PipelineSchedule::dualpipe || slot.chunk == 0);
  in.boundary = from_below ? (s + sh.pp - 1) % sh.pp : s;
  return in;
}

// When a slot may start: its input's end (< 0: not yet run), a hop later when that came from
// another stage.
double start_of(const SlotInput& in, const std::vector<double>& end, const std::vector<double>& hop_s) {
  const double ready = in.read == kReadyAtStart ? 0.0 : end[size_t(in.read)];
  if (ready < 0) return ready;
  return ready + (in.boundary == kNoHop || hop_s.empty() ? 0.0 : hop_s[size_t(in.boundary)]);
}

// One step of the schedule played out: a slot (with its partner when paired), what it reads and
// where its end goes (end_index). 32-bit fields, a remembered play being at most
// kRememberedSlots slots: the replay streams through them, so their size is its speed.
struct PlayedSlot {
  struct Input {
    int32_t read = int32_t(kReadyAtStart), boundary = int32_t(kNoHop);
    Input() = default;
    explicit Input(const SlotInput& in) : read(int32_t(in.read)), boundary(int32_t(in.boundary)) {}
    operator SlotInput() const { return SlotInput{read, boundary}; }
  };
  int32_t stage = 0;
  uint32_t slot = 0;
  Input input, partner_input;
  uint32_t at = 0, partner_at = 0;
  bool paired = false;
};

// The schedule of (kind, pp, m, v): each stage's slots, and the order playing it out runs them in
// (the same for every duration: a slot runs once its input has run), or that it deadlocks.
struct SchedulePlay {
  ScheduleShape shape;
  std::vector<std::vector<PipelineSlot>> slots;
  std::vector<PlayedSlot> order;
  bool completes = false;
};

using Duration = std::function<double(int64_t stage, const PipelineSlot& slot)>;

// The schedule played out (schedule.hpp): each stage runs as far as its inputs allow, in turn,
// until none can; each step appended to `order` when given.
std::optional<std::vector<double>> play(const ScheduleShape& sh,
                                        const std::vector<std::vector<PipelineSlot>>& slots,
                                        const Duration& duration, const std::vector<double>& hop_s,
                                        std::vector<PlayedSlot>* order) {
  std::vector<double> end(sh.end_count(), -1.0);
  std::vector<size_t> next(size_t(sh.pp), 0);
  std::vector<double> free(size_t(sh.pp), 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < sh.pp; ++s) {
      const auto& own = slots[size_t(s)];
      for (size_t& k = next[size_t(s)]; k < own.size(); ++k) {
        const PipelineSlot& slot = own[k];
        // A paired slot and the next run beside each other: both start once both may, and end
        // together, their durations summed (the caller takes off what the pair hides).
        const bool paired = slot.paired_with_next && k + 1 < own.size();
        const SlotInput input = input_of(sh, s, slot);
        double ready = start_of(input, end, hop_s);
        if (ready < 0) break;
        SlotInput partner_input;
        if (paired) {
          partner_input = input_of(sh, s, own[k + 1]);
          const double partner = start_of(partner_input, end, hop_s);
          if (partner < 0) break;
          ready = std::max(ready, partner);
        }
        const size_t at = sh.end_index(slot.forward, s, slot.chunk, slot.micro_batch);
        const size_t partner_at =
            paired ? sh.end_index(own[k + 1].forward, s, own[k + 1].chunk, own[k + 1].micro_batch) : at;
        if (order)
          order->push_back(PlayedSlot{int32_t(s), uint32_t(k), PlayedSlot::Input(input),
                                      PlayedSlot::Input(partner_input), uint32_t(at), uint32_t(partner_at),
                                      paired});
        double& clock = free[size_t(s)];
        clock = std::max(clock, ready) + duration(s, slot) + (paired ? duration(s, own[k + 1]) : 0.0);
        end[at] = clock;
        if (paired) {
          ++k;
          end[partner_at] = clock;
        }
        progress = true;
      }
    }
  }
  for (int64_t s = 0; s < sh.pp; ++s)
    if (next[size_t(s)] < slots[size_t(s)].size()) return std::nullopt;
  return free;
}

// `play` again in its recorded order, without searching for what may run: the same steps and the
// same arithmetic, so the same finish times, as long as every step's input has run when its turn
// comes, which non-negative durations and hops guarantee (a negative start would read as "not
// yet" to `play`). nullopt, for the caller to play it instead, where a start comes out negative.
std::optional<std::vector<double>> replay(const SchedulePlay& p, const Duration& duration,
                                          const std::vector<double>& hop_s) {
  const ScheduleShape& sh = p.shape;
  std::vector<double> end(sh.end_count(), -1.0);
  std::vector<double> free(size_t(sh.pp), 0.0);
  for (const PlayedSlot& step : p.order) {
    const std::vector<PipelineSlot>& own = p.slots[size_t(step.stage)];
    const PipelineSlot& slot = own[step.slot];
    double ready = start_of(step.input, end, hop_s);
    if (ready < 0) return std::nullopt;
    if (step.paired) {
      const double partner = start_of(step.partner_input, end, hop_s);
      if (partner < 0) return std::nullopt;
      ready = std::max(ready, partner);
    }
    double& clock = free[size_t(step.stage)];
    clock = std::max(clock, ready) + duration(step.stage, slot) +
            (step.paired ? duration(step.stage, own[step.slot + 1]) : 0.0);
    end[step.at] = clock;
    if (step.paired) end[step.partner_at] = clock;
  }
  return free;
}

// `replay` with each slot's duration read from a table indexed as the end times.
std::optional<std::vector<double>> replay_table(const SchedulePlay& p, const std::vector<double>& durations,
                                                const std::vector<double>& hop_s) {
  std::vector<double> end(p.shape.end_count(), -1.0);
  std::vector<double> free(size_t(p.shape.pp), 0.0);
  for (const PlayedSlot& step : p.order) {
    double ready = start_of(step.input, end, hop_s);
    if (ready < 0) return std::nullopt;
    if (step.paired) {
      const double partner = start_of(step.partner_input, end, hop_s);
      if (partner < 0) return std::nullopt;
      ready = std::max(ready, partner);
    }
    double& clock = free[size_t(step.stage)];
    clock = std::max(clock, ready) + durations[step.at] + (step.paired ? durations[step.partner_at] : 0.0);
    end[step.at] = clock;
    if (step.paired) end[step.partner_at] = clock;
  }
  return free;
}

ScheduleShape shape_of(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v) {
  return ScheduleShape{kind, pp, m, v, stage_chunks(kind, v)};
}

std::vector<std::vector<PipelineSlot>> slots_of(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v) {
  std::vector<std::vector<PipelineSlot>> slots;
  for (int64_t s = 0; s < pp; ++s) slots.push_back(stage_schedule(kind, s, pp, m, v));
  return slots;
}

// Plays of at most this many slots are remembered, and each thread keeps at most this many slots
// in all (about 70 bytes each: the slot and its played step): the estimate plays the same few schedules again
// and again (twice per layout), the planner a few hundred over a search.
constexpr int64_t kRememberedSlots = int64_t(1) << 20;
static_assert(2 * kRememberedSlots < (int64_t(1) << 31), "PlayedSlot indexes a remembered play in 32 bits");

// The play of (kind, pp, m, v), remembered per thread; null where it is too large to keep.
std::shared_ptr<const SchedulePlay> remembered_play(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v) {
  const ScheduleShape sh = shape_of(kind, pp, m, v);
  const int64_t slot_count = 2 * pp * sh.chunks * m;
  if (slot_count > kRememberedSlots) return nullptr;
  thread_local std::map<std::tuple<PipelineSchedule, int64_t, int64_t, int64_t>,
                        std::shared_ptr<const SchedulePlay>>
      known;
  thread_local int64_t known_slots = 0;
  const auto key = std::make_tuple(kind, pp, m, v);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  auto p = std::make_shared<SchedulePlay>();
  p->shape = sh;
  p->slots = slots_of(kind, pp, m, v);
  p->completes = play(
                     sh, p->slots, [](int64_t, const PipelineSlot&) { return 0.0; }, {}, &p->order)
                     .has_value();
  if (known_slots + slot_count > kRememberedSlots) {  // bounded: a long-lived process asking everything
    known.clear();
    known_slots = 0;
  }
  known.emplace(key, p);
  known_slots += slot_count;
  return p;
}

}  // namespace

size_t schedule_slot_index(PipelineSchedule kind, int64_t m, int64_t v, int64_t stage,
                           const PipelineSlot& slot) {
  return shape_of(kind, 1, m, v).end_index(slot.forward, stage, slot.chunk, slot.micro_batch);
}

std::shared_ptr<const std::vector<std::vector<PipelineSlot>>> schedule_slots(PipelineSchedule kind,
                                                                             int64_t pp, int64_t m,
                                                                             int64_t v) {
  if (std::shared_ptr<const SchedulePlay> p = remembered_play(kind, pp, m, v))
    return std::shared_ptr<const std::vector<std::vector<PipelineSlot>>>(p, &p->slots);
  return std::make_shared<const std::vector<std::vector<PipelineSlot>>>(slots_of(kind, pp, m, v));
}

std::optional<std::vector<double>> schedule_finish_times(PipelineSchedule kind, int64_t pp, int64_t m,
                                                         int64_t v, const std::vector<double>& durations,
                                                         const std::vector<double>& hop_s) {
  const ScheduleShape sh = shape_of(kind, pp, m, v);
  SIMRUN_ASSERT(durations.size() == sh.end_count(), "a duration for every slot");
  if (const std::shared_ptr<const SchedulePlay> p = remembered_play(kind, pp, m, v)) {
    if (!p->completes) return std::nullopt;
    if (auto finish = replay_table(*p, durations, hop_s)) return finish;
  }
  return play(
      sh, slots_of(kind, pp, m, v),
      [&](int64_t stage, const PipelineSlot& slot) {
        return durations[sh.end_index(slot.forward, stage, slot.chunk, slot.micro_batch)];
      },
      hop_s, nullptr);
}

std::optional<std::vector<double>> schedule_finish_times(PipelineSchedule kind, int64_t pp, int64_t m,
                                                         int64_t v, const Duration& duration,
                                                         const std::vector<double>& hop_s) {
  if (const std::shared_ptr<const SchedulePlay> p = remembered_play(kind, pp, m, v)) {
    if (!p->completes) return std::nullopt;
    if (auto finish = replay(*p, duration, hop_s)) return finish;
    return play(p->shape, p->slots, duration, hop_s, nullptr);
  }
  return play(shape_of(kind, pp, m, v), slots_of(kind, pp, m, v), duration, hop_s, nullptr);
}

}  // namespace simrun
