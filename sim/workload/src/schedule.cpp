// Pipeline schedules (schedule.hpp): Megatron's orders and their playing out.
#include "simrun/sim/workload/schedule.hpp"

#include <algorithm>

#include "simrun/common/error.hpp"

namespace simrun {

std::vector<PipelineSlot> stage_schedule(PipelineSchedule kind, int64_t stage, int64_t pp, int64_t m, int64_t v) {
  std::vector<PipelineSlot> out;
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
    return PipelineSlot{false, table[static_cast<size_t>(k)].first, v - 1 - table[static_cast<size_t>(k)].second};
  };
  for (int64_t k = 0; k < warm; ++k) out.push_back(fwd(k));
  for (int64_t k = 0; k < total - warm; ++k) {
    out.push_back(fwd(warm + k));
    out.push_back(bwd(k));
  }
  for (int64_t k = total - warm; k < total; ++k) out.push_back(bwd(k));
  return out;
}

bool schedule_completes(PipelineSchedule kind, int64_t pp, int64_t m, int64_t v) {
  return schedule_finish_times(kind, pp, m, v, [](int64_t, const PipelineSlot&) { return 0.0; }).has_value();
}

std::optional<std::vector<double>> schedule_finish_times(
    PipelineSchedule kind, int64_t pp, int64_t m, int64_t v,
    const std::function<double(int64_t stage, const PipelineSlot& slot)>& duration,
    const std::vector<double>& hop_s) {
  std::vector<std::vector<PipelineSlot>> slots;
  for (int64_t s = 0; s < pp; ++s) slots.push_back(stage_schedule(kind, s, pp, m, v));
  // End time of [forward][virtual stage][micro-batch], virtual stage = chunk·pp + stage; < 0 = not
  // yet run.
  const int64_t stages = pp * v;
  std::vector<std::vector<double>> end(2, std::vector<double>(static_cast<size_t>(stages * m), -1.0));
  auto at = [&](bool forward, int64_t vs, int64_t mb) -> double& {
    return end[forward ? 1 : 0][static_cast<size_t>(vs * m + mb)];
  };
  std::vector<size_t> next(static_cast<size_t>(pp), 0);
  std::vector<double> free(static_cast<size_t>(pp), 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < pp; ++s) {
      const auto& own = slots[static_cast<size_t>(s)];
      for (size_t& k = next[static_cast<size_t>(s)]; k < own.size(); ++k) {
        const PipelineSlot& slot = own[k];
        const int64_t vs = slot.chunk * pp + s;
        const double ready = slot.forward ? (vs == 0 ? 0.0 : at(true, vs - 1, slot.micro_batch))
                                          : (vs == stages - 1 ? at(true, vs, slot.micro_batch)
                                                              : at(false, vs + 1, slot.micro_batch));
        if (ready < 0) break;
        const bool own_forward = !slot.forward && vs == stages - 1;  // the loss turns around in place
        const bool first = slot.forward && vs == 0;
        // From the stage before (forward) or after (backward): the boundary's hop.
        const int64_t boundary = slot.forward ? (s + pp - 1) % pp : s;
        const double hop = own_forward || first || hop_s.empty() ? 0.0 : hop_s[static_cast<size_t>(boundary)];
        double& clock = free[static_cast<size_t>(s)];
        clock = std::max(clock, ready + hop) + duration(s, slot);
        at(slot.forward, vs, slot.micro_batch) = clock;
        progress = true;
      }
    }
  }
  for (int64_t s = 0; s < pp; ++s)
    if (next[static_cast<size_t>(s)] < slots[static_cast<size_t>(s)].size()) return std::nullopt;
  return free;
}

}  // namespace simrun
