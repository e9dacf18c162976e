// The closed-form step time, part 3 (step_time_estimate.cpp holds the stages' micro-batches,
// step_time_estimate_data_parallel.cpp the data-parallel traffic): the pipeline, its sends
// between stages and the busiest port's bound, then Megatron's schedule played out for the
// fill and drain.
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "step_time_estimator.hpp"

namespace simrun::detail {

// Pipeline sends: 1/tp of the stage output each (Megatron's scatter-gather, as the workload
// sends it), rank r of one stage to rank r of the next, each pair over its own link
// (pipeline_pair, as the event's sends take it: stages smaller than a scale-up domain still
// cross the NIC where a domain ends) at the slower of its two GPUs' fractions of that link. A
// boundary takes its slowest pair's time: a slow link slows the sends into and out of its GPU.
void StepTimeEstimator::time_pipeline_sends() {
  const Layout& l = m_layout;
  if (l.pp <= 1) return;
  const double tokens_mb = double(l.micro_batch) * double(m_model.seq_len) / double(l.cp);  // per GPU
  const double send_bytes =
      tokens_mb * double(m_model.hidden) * tensor_element_bytes(l.precision) / double(l.tp);
  const int64_t domain = scale_up_domain_size(m_sc.cluster), stage_size = l.tp * l.cp * l.dp;
  const RankLayout ranks(l, m_sc.cluster.gpus_per_node);
  std::map<int64_t, StageCondition> slow_gpus;  // each slow link's GPU, its fraction of each class
  for (const SlowLink& sl : m_options.slow_links) slow_gpus[sl.rank].slow_down(sl);
  auto across_domains = [&](int64_t a, int64_t b) { return a / domain != b / domain; };
  auto pair_s = [&](int64_t from_rank, int64_t to_rank) {
    const LinkCost& link = across_domains(from_rank, to_rank) ? m_pp_link_across : m_pp_link_inside;
    double fraction = 1;
    for (const int64_t r : {from_rank, to_rank})
      if (const auto it = slow_gpus.find(r); it != slow_gpus.end())
        fraction = std::min(fraction, it->second.fraction(link.link_class));
    return m_collectives.collective_at_s(CollectiveOp::send_recv, send_bytes, 2, link, fraction);
  };
  for (int64_t b = 0; b < l.pp; ++b) {
    const int64_t next = (b + 1) % l.pp;
    // The healthy pairs of each kind (all alike), then the pairs with a slow GPU. Megatron's
    // order puts the stage outermost: stage s holds ranks s·stage_size onwards.
    // Whether a pair crosses a domain's end repeats with the rank every domain's worth of ranks.
    double hop = 0;
    bool inside = false, across = false;
    for (int64_t r = 0; r < std::min(stage_size, domain) && !(inside && across); ++r)
      (across_domains(b * stage_size + r, next * stage_size + r) ? across : inside) = true;
    if (inside) hop = m_collectives.collective_s(CollectiveOp::send_recv, send_bytes, 2, m_pp_link_inside);
    if (across)
      hop =
          std::max(hop, m_collectives.collective_s(CollectiveOp::send_recv, send_bytes, 2, m_pp_link_across));
    for (const auto& [rank, condition] : slow_gpus) {
      RankCoord c = ranks.coord_of(rank);
      if (c.pp != b && c.pp != next) continue;
      c.pp = c.pp == b ? next : b;
      hop = std::max(hop, pair_s(rank, ranks.rank_of(c)));
    }
    m_hop_s.push_back(hop);
  }
  // Only interleaving turns from the last stage back to the first.
  m_out.pp_send_s = *std::max_element(m_hop_s.begin(), m_hop_s.end() - (m_interleaved ? 0 : 1));
  m_pp_total_s = m_out.microbatches * m_v * neighbour_hops_s(m_out.slowest_stage);
}

// One exchange with each of a stage's neighbours (a message out and one in, passing each other
// on full-duplex links): interleaved, the stages before and after it (stage 0 and p−1 exchange
// the chunks' turns); otherwise a middle stage's two neighbours, an end stage's one.
double StepTimeEstimator::neighbour_hops_s(int64_t stage) const {
  const int64_t p = m_layout.pp;
  if (m_interleaved) return m_hop_s[size_t((stage + p - 1) % p)] + m_hop_s[size_t(stage)];
  double hops = 0;
  if (stage > 0) hops += m_hop_s[size_t(stage - 1)];
  if (stage < p - 1) hops += m_hop_s[size_t(stage)];
  return hops;
}

// The step as the busiest pipeline port bounds it: each direction of a stage's port (NIC or
// scale-up, as the sends take; full duplex, as in the event) carries m·v messages per neighbour,
// one at a time at its rate, as the event's flows share it: out, the activations forward and the
// gradients back; in, the same from its neighbours. Its first waits for the forwards of the
// stages before it (stage 0: its own), its last is followed by their backwards and stage 0's
// optimizer (the stage's own beside them). A lower bound: where the schedule's path covers it,
// nothing.
double StepTimeEstimator::pipeline_port_bound_s() const {
  const int64_t p = m_layout.pp;
  if (p <= 1) return 0.0;
  auto forward_chunk = [&](const StageTime& st) { return (st.forward_s + st.forward_exposed_s) / m_v; };
  auto backward_chunk = [&](const StageTime& st) {
    return (st.backward_s + st.recompute_s + mb_exposed(st) - st.forward_exposed_s) / m_v;
  };
  const StageTime& first = m_out.stages.front();
  double bound = 0;
  double before_forward = 0, before_backward = 0;  // the stages before s: a chunk-step each, and hops
  for (int64_t s = 0; s < p; ++s) {
    const StageTime& st = m_out.stages[size_t(s)];
    const double fill = s == 0 ? forward_chunk(first) : before_forward;
    const double drain = s == 0 ? backward_chunk(first) : before_backward;
    const double load = m_out.microbatches * m_v * neighbour_hops_s(s);
    // The drain ends with stage 0's optimizer; the stage's own runs beside it.
    bound = std::max(bound, fill + load + std::max(drain + first.optimizer_s, st.optimizer_s));
    before_forward += forward_chunk(st) + m_hop_s[size_t(s)];
    before_backward += backward_chunk(st) + m_hop_s[size_t(s)];
  }
  return bound;
}

// DeepSpeed's pipe_partitioned: a received stage output (1/tp of it from each TP rank)
// all-gathered over TP before it is used (frameworks.md 2.2); none with sequence parallelism or
// tp = 1, as the workload builds it.
double StepTimeEstimator::pipeline_tp_gather_s() const {
  const Layout& l = m_layout;
  if (l.tp <= 1 || (l.sequence_parallel && l.tp > 1)) return 0.0;
  const double bytes = double(l.micro_batch) * double(m_model.seq_len) / double(l.cp) *
                       double(m_model.hidden) * tensor_element_bytes(l.precision);
  return m_collectives.collective_s(CollectiveOp::all_gather, bytes, l.tp, m_tp_link);
}

// The fill's and the drain's hops: each boundary once forward and once backward.
double StepTimeEstimator::fill_drain_hops_s() const {
  return 2.0 * std::accumulate(m_hop_s.begin(), m_hop_s.end() - 1, 0.0);
}

// Fill and drain: Megatron's schedule played out (schedule_finish_times) with each
// chunk-step at its chunk's time per micro-batch, exposed TP/CP/EP waits included, and FSDP's
// first forward and last backward of a stage stretched as above; the bubble is what the longest
// path adds to the slowest stage's own work. Equal stages give Narayanan's (p−1)/v · t; a
// heavier last stage (logits and loss) waits for the lighter stages' times, not its own, and
// interleaved, also for its chunks' round trips through them.
// Played out twice when interleaved: the compute alone, and with each message between stages
// delaying the chunk-step that waits for it (sent asynchronously, overlap_p2p_comm); what the
// messages add to the longest path is the pipeline's exposed communication. Plain 1F1B
// exchanges its messages blocking, in pairs (send_forward_recv_backward, the two passing each
// other on full-duplex links), so a stage's own m exchanges with each neighbour and the fill and
// drain's 2(p−1) (each boundary twice) sit on the path: 2(m + p − 1) sends on equal links for a
// middle stage, m + 2(p − 1) for an end stage.
double StepTimeEstimator::slot_paired_saving_s(int64_t stage, const PipelineSlot& slot) const {
  if (!slot.paired_with_next) return 0.0;
  const size_t idx = size_t(stage * m_split.split_v + std::min<int64_t>(slot.chunk, m_split.split_v - 1));
  const int64_t first = m_split.first_layer[idx], last = first + m_split.layers_per_chunk[idx];
  const int64_t moe = std::max<int64_t>(0, last - std::max(first, m_kinds.first_moe));
  return double(moe) * probes_of(stage).paired_saving_per_moe_layer_s;
}

double StepTimeEstimator::stage_paired_saving_s(int64_t stage) const {
  if (!pairs_forward_and_backward(m_schedule)) return 0.0;
  const Layout& l = m_layout;
  const int64_t m = std::max<int64_t>(1, l.num_microbatches());
  double saving = 0;
  for (const PipelineSlot& slot : stage_schedule(m_schedule, stage, l.pp, m, m_v_chunks))
    saving += slot_paired_saving_s(stage, slot);
  return saving;
}

size_t StepTimeEstimator::slot_key(const PipelineSlot& slot) const {
  const int64_t m = std::max<int64_t>(1, m_layout.num_microbatches());
  return size_t(((slot.forward ? 1 : 0) * m_v_chunks + slot.chunk) * m + slot.micro_batch);
}

// Megatron-Core's DDP cuts only a stage's first model chunk into buckets (get_model's
// disable_bucketing from the second chunk on): those reduce as the chunk's last backward
// produces them, beside it; a later chunk's one bucket reduces once its last backward has
// ended, beside the chunk-steps the stage runs next. Each runs overlap_slowdown slower over
// the reduction's time, chunk-step by chunk-step in the stage's order (its idle gaps taken as
// none). Interleaved DDP only (ZeRO 0-2, bucketed); elsewhere each stage's last backward is
// stretched by all its reductions (last_backward_s).
void StepTimeEstimator::spread_reduction_slowdown() {
  const Layout& l = m_layout;
  m_reduce_slowdown_s.clear();
  if (l.pp <= 1 || !m_interleaved || l.zero_stage >= 3 || m_wo.grad_reduce != GradReduceOverlap::bucketed ||
      !m_wo.one_bucket_after_first_chunk || m_split.split_v != m_v_chunks)
    return;
  const int64_t m = std::max<int64_t>(1, l.num_microbatches());
  for (int64_t stage = 0; stage < l.pp; ++stage) {
    std::vector<double>& slowed = m_reduce_slowdown_s.emplace_back(size_t(2 * m_v_chunks * m), 0.0);
    std::vector<double> chunk_traffic(size_t(m_v_chunks), 0.0);
    for (const StageProgram::GradBucketSize& b : m_stage_buckets[size_t(stage)])
      chunk_traffic[size_t(b.chunk)] += bucket_reduce_s(b, stage);
    const std::vector<PipelineSlot> order = stage_schedule(m_schedule, stage, l.pp, m, m_v_chunks);
    const std::vector<ChunkStep>& steps = m_chunk_steps[size_t(stage)];
    auto compute_s = [&](const PipelineSlot& slot) {
      const ChunkStep& c = steps[size_t(slot.chunk)];
      return slot.forward ? c.forward_s : c.backward_s;
    };
    for (size_t k = 0; k < order.size(); ++k) {
      const PipelineSlot& slot = order[k];
      if (slot.forward || slot.micro_batch != m - 1) continue;  // a chunk's last backward
      double traffic = chunk_traffic[size_t(slot.chunk)];
      // Its buckets beside it (the first chunk), or its one bucket beside what follows.
      for (size_t j = m_wo.chunk_bucketed(slot.chunk) ? k : k + 1; j < order.size() && traffic > 0; ++j) {
        const double beside = std::min(traffic, compute_s(order[j]));
        slowed[slot_key(order[j])] += m_options.overlap_slowdown * beside;
        traffic -= beside;
      }
    }
  }
}

// A chunk-step's time on the schedule's path (makespan): its chunk's forward or backward per
// micro-batch with its exposed TP/CP/EP waits, slowed beside the stage's reductions, less what a
// pairing hides; the stage's last backward stretched beside its gradient reductions; FSDP over a
// pipeline, each chunk's first forward unit by unit.
double StepTimeEstimator::chunk_step_s(int64_t stage, const PipelineSlot& slot) const {
  const Layout& l = m_layout;
  const int64_t last_micro_batch = std::max<int64_t>(1, l.num_microbatches()) - 1;
  auto stretch = [](double stretched, double plain) { return plain > 0 ? stretched / plain : 1.0; };
  const StageTime& st = m_out.stages[size_t(stage)];
  const ChunkStep& c = m_chunk_steps[size_t(stage)][size_t(slot.chunk)];
  if (slot.forward && slot.micro_batch == 0 && m_fsdp_pipeline) {
    const std::vector<double>& spans = m_first_forward_spans[size_t(stage)];
    return m_split.split_v == m_v_chunks ? spans[size_t(slot.chunk)]
                                         : std::accumulate(spans.begin(), spans.end(), 0.0) / m_v;
  }
  const double beside_reductions =
      m_reduce_slowdown_s.empty() ? 0.0 : m_reduce_slowdown_s[size_t(stage)][slot_key(slot)];
  const double paired = slot_paired_saving_s(stage, slot);
  if (slot.forward) return std::max(0.0, c.forward_s + beside_reductions + c.forward_exposed_s - paired);
  const bool last = slot.micro_batch == last_micro_batch && m_reduce_slowdown_s.empty();
  const double plain = st.backward_s + st.recompute_s;
  const double b = last ? stretch(last_backward_s(st), plain) : 1.0;
  // The chunk's part of the stage's longer waits beside its reductions.
  const double shared_waits =
      last && plain > 0 ? c.backward_s / plain * last_backward_shared_waits_s(st) : 0.0;
  return std::max(0.0, c.backward_s * b + beside_reductions + c.backward_exposed_s + shared_waits - paired);
}

std::optional<double> StepTimeEstimator::makespan(const std::vector<double>& hop_s,
                                                  std::vector<double>& slot_s,
                                                  std::vector<double>* stage_ends) const {
  const Layout& l = m_layout;
  const int64_t m = std::max<int64_t>(1, l.num_microbatches());
  if (slot_s.empty()) {  // each chunk-step's time, worked out for the first play, read by the next
    slot_s.assign(size_t(l.pp * 2 * m_v_chunks * m), 0.0);
    const auto slots = schedule_slots(m_schedule, l.pp, m, m_v_chunks);
    for (int64_t stage = 0; stage < l.pp; ++stage)
      for (const PipelineSlot& slot : (*slots)[size_t(stage)])
        slot_s[schedule_slot_index(m_schedule, m, m_v_chunks, stage, slot)] = chunk_step_s(stage, slot);
  }
  const auto finish = schedule_finish_times(m_schedule, l.pp, m, m_v_chunks, slot_s, hop_s);
  if (!finish) return std::nullopt;
  // Each stage's optimizer runs after its own last backward: the step ends with the stage whose
  // last backward and optimizer end last, counted here against the longest optimizer (which the
  // compute term holds).
  double end = -std::numeric_limits<double>::infinity();
  if (stage_ends) stage_ends->assign(size_t(l.pp), 0.0);
  for (int64_t i = 0; i < l.pp; ++i) {
    const double stage_end = (*finish)[size_t(i)] + m_out.stages[size_t(i)].optimizer_s - m_optimizer_s;
    if (stage_ends) (*stage_ends)[size_t(i)] = stage_end;
    end = std::max(end, stage_end);
  }
  return end;
}

void StepTimeEstimator::time_fill_and_drain() {
  const Layout& l = m_layout;
  for (const std::vector<PieceTime>& chunks : m_chunk_pieces) {
    std::vector<ChunkStep>& steps = m_chunk_steps.emplace_back();
    auto step_of = [](const PieceTime& p, double share) {
      return ChunkStep{share * p.forward_s, share * p.forward_exposed_s,
                       share * (p.backward_s + p.recompute_s), share * (p.exposed_s() - p.forward_exposed_s)};
    };
    if (m_split.split_v == m_v_chunks) {
      for (const PieceTime& c : chunks) steps.push_back(step_of(c, 1.0));
    } else {  // the split cannot be made (the event refuses the layout): 1/v of the stage each
      PieceTime whole;
      for (const PieceTime& c : chunks) whole.add(c);
      steps.assign(size_t(m_v_chunks), step_of(whole, 1.0 / m_v));
    }
  }
  spread_reduction_slowdown();
  const StageTime& slow = slowest();
  std::vector<double> slot_s;  // each chunk-step's time on the path, the same in both plays
  const std::optional<double> compute_path =
      l.pp > 1 ? makespan({}, slot_s, &m_stage_path_end) : std::nullopt;
  m_out.fill_drain_s = 0;
  if (l.pp > 1 && m_v_chunks == 1) {
    // 1F1B's steady state goes at the pace of the stage whose micro-batch, with its blocking
    // exchanges, takes longest: a middle stage beside slow links can take longer than the
    // slowest stage's compute. What that pace adds beyond the slowest stage's own work is on
    // the path.
    // DeepSpeed's engine (lock-step, a blocking call per message: the message in and the one
    // out each wait for the other end, not passing each other) pays each of a stage's messages
    // on its own, and with TP its received output all-gathered (pipe_partitioned).
    const bool deepspeed = m_wo.pipeline_engine == PipelineEngine::deepspeed;
    const double messages = deepspeed ? 2.0 : 1.0;
    double pace = 0;
    for (const StageTime& st : m_out.stages) {
      const double receives = double((st.stage > 0 ? 1 : 0) + (st.stage < l.pp - 1 ? 1 : 0));
      pace = std::max(pace, st.compute_s() + mb_exposed(st) + messages * neighbour_hops_s(st.stage) +
                                (deepspeed ? receives * pipeline_tp_gather_s() : 0.0));
    }
    m_out.pp_exposed_s =
        m_out.microbatches * (pace - (slow.compute_s() + mb_exposed(slow))) + messages * fill_drain_hops_s();
  }
  if (l.pp == 1) {
    // One stage: nothing to fill or drain.
  } else if (compute_path) {
    const double slow_slowed = m_reduce_slowdown_s.empty()
                                   ? last_backward_s(slow) - slow.backward_s - slow.recompute_s
                                   : std::accumulate(m_reduce_slowdown_s[size_t(slow.stage)].begin(),
                                                     m_reduce_slowdown_s[size_t(slow.stage)].end(), 0.0);
    // (The slowest stage's own shared-link waits are charge_shared_links' steady-state share.)
    const double slow_own = m_out.microbatches * (slow.compute_s() + mb_exposed(slow)) +
                            (first_forward_s(slow) - slow.forward_s) + slow_slowed +
                            (m_reduce_slowdown_s.empty() ? last_backward_shared_waits_s(slow) : 0.0);
    m_out.fill_drain_s = std::max(0.0, *compute_path - slow_own);
    if (l.pp > 1 && m_v_chunks > 1)
      m_out.pp_exposed_s = std::max(0.0, *makespan(m_hop_s, slot_s) - *compute_path);
  } else {
    // Megatron's order deadlocks (the event refuses the layout): one pass through every other
    // stage, 1/v of it per chunk.
    for (const StageTime& st : m_out.stages)
      if (st.stage != m_out.slowest_stage)
        m_out.fill_drain_s += (first_forward_s(st) + last_backward_s(st) + mb_exposed(st)) / m_v;
    if (m_v_chunks > 1) m_out.pp_exposed_s = fill_drain_hops_s();
  }
  if (m_v > 1) m_pp_overlapped_s = std::max(0.0, m_pp_total_s - m_out.pp_exposed_s);
}

}  // namespace simrun::detail
