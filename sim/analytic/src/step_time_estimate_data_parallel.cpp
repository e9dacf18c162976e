// The closed-form step time, part 2 (step_time_estimate.cpp holds the stages' micro-batches,
// step_time_estimate_pipeline.cpp the pipeline): the data-parallel traffic, Megatron DDP's buckets and FSDP's
// units, what the compute stream does not hide of it, what compute pays running beside it, and the links it
// shares with the TP, CP and EP groups.
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "step_time_estimator.hpp"

namespace simrun::detail {
namespace {

// Transfers (ready time, duration) run one after another on one stream, in the order they are
// ready: when the last ends.
double one_stream_end_s(std::vector<std::pair<double, double>> ready) {
  std::stable_sort(ready.begin(), ready.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double end = -std::numeric_limits<double>::infinity();
  for (const auto& [at, duration] : ready) end = std::max(end, at) + duration;
  return end;
}

// The share of its chunk's layers the backward has passed when each bucket is ready, counted
// apart for the dense and the expert buckets (each list covers the chunk's layers once).
std::vector<double> passed_shares(const std::vector<TimedBucket>& buckets) {
  // Per (chunk, experts): the list's layers, and those passed so far (a handful of lists: searched).
  struct Count {
    int64_t chunk;
    bool experts;
    int64_t layers = 0, seen = 0;
  };
  std::vector<Count> counts;
  auto count_of = [&](const StageProgram::GradBucketSize& b) -> Count& {
    for (Count& c : counts)
      if (c.chunk == b.chunk && c.experts == b.experts) return c;
    return counts.emplace_back(Count{b.chunk, b.experts});
  };
  for (const TimedBucket& b : buckets) count_of(b.size).layers += b.size.layers;
  std::vector<double> passed(buckets.size(), 1.0);
  for (size_t i = 0; i < buckets.size(); ++i) {
    Count& c = count_of(buckets[i].size);
    c.seen += buckets[i].size.layers;
    if (c.layers > 0) passed[i] = double(c.seen) / double(c.layers);
  }
  return passed;
}

}  // namespace

// Data parallel: a stage's local gradients and weights, in the workload's element sizes
// (gradients as reduced, weights as gathered), at the stage's fraction of the link.
double StepTimeEstimator::reduce_s(double params, int64_t n, const LinkCost& link, int64_t stage) const {
  const double bytes = params * m_wo.grad_reduce_bytes;
  const bool scatter =
      m_layout.zero_stage >= 3 ||
      (m_layout.zero_stage >= 1 && m_wo.zero_grad_collective == ZeroGradCollective::reduce_scatter);
  return m_collectives.collective_at_s(scatter ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce,
                                       bytes, n, link,
                                       m_stage_condition[size_t(stage)].fraction(link.link_class));
}

double StepTimeEstimator::gather_s(double params, int64_t n, const LinkCost& link, int64_t stage) const {
  return m_layout.zero_stage >= 1
             ? m_collectives.collective_at_s(
                   CollectiveOp::all_gather,
                   params * gathered_weight_bytes(m_layout.precision, m_layout.fp8_param_gather), n, link,
                   m_stage_condition[size_t(stage)].fraction(link.link_class))
             : 0.0;
}

// A DDP bucket's reduction and gather: over the expert-data-parallel group for routed experts,
// the data-parallel group (with CP) otherwise.
double StepTimeEstimator::bucket_reduce_s(const StageProgram::GradBucketSize& b, int64_t stage) const {
  return b.experts ? reduce_s(b.params, m_expert_dp, m_expert_dp_link, stage)
                   : reduce_s(b.params, m_dp_n, m_dp_link, stage);
}

double StepTimeEstimator::bucket_gather_s(const StageProgram::GradBucketSize& b, int64_t stage) const {
  return b.experts ? gather_s(b.params, m_expert_dp, m_expert_dp_link, stage)
                   : gather_s(b.params, m_dp_n, m_dp_link, stage);
}

// Compute beside DP traffic pays overlap_slowdown on the overlap.
double StepTimeEstimator::beside_traffic_s(double compute_s, double traffic_s) const {
  return compute_s + m_options.overlap_slowdown * std::min(traffic_s, compute_s);
}

const PieceTime& StepTimeEstimator::unit_piece(const StageProgram::FsdpUnit& u, int64_t stage) const {
  const Probes& probes = probes_of(stage);
  if (u.unit == -1) return probes.dense.embedding;
  if (u.unit == -2) return probes.dense.head;
  return layer_piece(probes, m_kinds, u.unit);
}

// ZeRO-3 / FSDP traffic unit by unit, one call each as the workload issues them (per-call
// latency and the tuner's size-dependent protocol), dense weights over DP and routed experts
// over expert-DP; units of equal size timed once. Then what runs beside each stage's last
// backward: FSDP's reduce-scatters unit by unit, or Megatron DDP's buckets as each is final
// (overlap_grad_reduce); and, FSDP over a pipeline, each stage's gather-bound first forward.
void StepTimeEstimator::time_fsdp_units() {
  const Layout& l = m_layout;
  m_unit_traffic.resize(size_t(l.pp));
  m_stage_traffic.assign(size_t(l.pp), UnitTraffic{});
  if (l.zero_stage >= 3) {
    // (A submodule unit reduce-scatters what its reduced_params say: its own gradients, or the
    // bucket that fills there, or nothing.)
    std::map<std::tuple<double, double, double, double, StageCondition>, UnitTraffic> timed;
    for (int64_t i = 0; i < l.pp; ++i)
      for (const StageProgram::FsdpUnit& u : m_stage_units[size_t(i)]) {
        const auto key = std::tuple{u.params, u.expert_params, u.reduced_params(), u.reduced_expert_params(),
                                    m_stage_condition[size_t(i)]};
        auto it = timed.find(key);
        if (it == timed.end()) {
          const double dense = u.params - u.expert_params;
          const double reduced_dense = u.reduced_params() - u.reduced_expert_params();
          auto latency = [&](CollectiveOp op, double params, int64_t n, const LinkCost& link) {
            return params > 0 ? m_collectives.collective_s(op, 1.0, n, link) : 0.0;
          };
          const double expert_gather = gather_s(u.expert_params, m_expert_dp, m_expert_dp_link, i);
          const double expert_reduce = reduce_s(u.reduced_expert_params(), m_expert_dp, m_expert_dp_link, i);
          const UnitTraffic t{
              gather_s(dense, m_dp_n, m_dp_link, i) + expert_gather,
              reduce_s(reduced_dense, m_dp_n, m_dp_link, i) + expert_reduce, expert_gather + expert_reduce,
              latency(CollectiveOp::all_gather, dense, m_dp_n, m_dp_link) +
                  latency(CollectiveOp::all_gather, u.expert_params, m_expert_dp, m_expert_dp_link),
              latency(CollectiveOp::reduce_scatter, reduced_dense, m_dp_n, m_dp_link) +
                  latency(CollectiveOp::reduce_scatter, u.reduced_expert_params(), m_expert_dp,
                          m_expert_dp_link)};
          it = timed.emplace(key, t).first;
        }
        m_unit_traffic[size_t(i)].push_back(it->second);
        m_stage_traffic[size_t(i)].add(it->second);
      }
  }
  const std::vector<UnitTraffic>& first_units = m_unit_traffic.front();
  if (!first_units.empty()) m_first_layer_traffic = first_units[std::min<size_t>(1, first_units.size() - 1)];

  if (m_fsdp_pipeline)
    for (int64_t i = 0; i < l.pp; ++i)
      m_first_forward_spans.push_back(gathered_forward_spans(
          i, i == 0 ? FirstGather::waited_for : FirstGather::done_before, OverlapSlowdown::paid));

  // Timed once per stage: the schedule asks for each last backward twice per chunk.
  m_stage_reduce_traffic_s.assign(size_t(l.pp), 0.0);
  m_stage_reduce_expert_share.assign(size_t(l.pp), 0.0);
  for (int64_t i = 0; i < l.pp; ++i) {
    double expert_s = 0;
    if (l.zero_stage >= 3) {
      const UnitTraffic& t = m_stage_traffic[size_t(i)];
      m_stage_reduce_traffic_s[size_t(i)] = t.reduce_s;
      expert_s = t.gather_s + t.reduce_s > 0 ? t.reduce_s * t.expert_s / (t.gather_s + t.reduce_s) : 0.0;
    } else if (m_wo.grad_reduce == GradReduceOverlap::bucketed) {
      for (const StageProgram::GradBucketSize& b : m_stage_buckets[size_t(i)]) {
        m_stage_reduce_traffic_s[size_t(i)] += bucket_reduce_s(b, i);
        if (b.experts) expert_s += bucket_reduce_s(b, i);
      }
    }
    if (m_stage_reduce_traffic_s[size_t(i)] > 0)
      m_stage_reduce_expert_share[size_t(i)] = expert_s / m_stage_reduce_traffic_s[size_t(i)];
  }
}

// Links shared with the DP traffic (charge_shared_links' rule): a TP, CP or EP collective
// meeting that traffic on its link gets half of it while they overlap. The share of group g's
// link the DP traffic uses, its dense part over DP and its experts' over expert-DP. On a full
// mesh the DP traffic spreads over a GPU's links to all its peers; MeshPeerLinks::counted counts
// a common peer's link as shared all the same.
double StepTimeEstimator::dp_link_share(const LinkCost& lk, RankGroup g, double expert_share,
                                        MeshPeerLinks peer_links) const {
  const Layout& l = m_layout;
  auto shares = [&](const LinkCost& traffic_link, RankGroup traffic) {
    if (g.size <= 1 || traffic.size <= 1) return false;
    const bool across = lk.link_class == LinkClass::scale_out;
    if (across != (traffic_link.link_class == LinkClass::scale_out)) return false;
    if (across || m_sc.cluster.gpu.scale_up_kind != ScaleUpKind::mesh) return true;
    if (peer_links == MeshPeerLinks::ignored) return false;
    // A common peer: the least common multiple of the strides, inside both groups.
    const int64_t common = std::lcm(g.stride, traffic.stride);
    return common / g.stride < g.size && common / traffic.stride < traffic.size;
  };
  return (shares(m_dp_link, rank_group(l, GroupKind::dp_cp)) ? 1.0 - expert_share : 0.0) +
         (shares(m_expert_dp_link, rank_group(l, GroupKind::edp)) ? expert_share : 0.0);
}

// TP, CP and EP waits, each weighted by the share of its link that DP traffic (of which
// `expert_share` is expert-DP's) would use beside it; a full mesh's peer links left out.
double StepTimeEstimator::waits_on_dp_links_s(double tp_s, double cp_s, double ep_s,
                                              double expert_share) const {
  const Layout& l = m_layout;
  return dp_link_share(m_tp_link, rank_group(l, GroupKind::tp), expert_share, MeshPeerLinks::ignored) * tp_s +
         dp_link_share(m_cp_link, cp_link_group(), expert_share, MeshPeerLinks::ignored) * cp_s +
         dp_link_share(m_ep_link, rank_group(l, GroupKind::ep), expert_share, MeshPeerLinks::ignored) * ep_s;
}

// What a stage's last backward waits longer on its TP, CP and EP collectives for meeting its own
// gradient reductions on their links (each group's backward waits, grown by the share of the
// backward the reductions run beside). On every stage's last backward in the drain; the slowest
// stage's own is charge_shared_links' steady-state share. Not on a full mesh's peer links, where
// a reduction's share of any one link is small (a stage after stage, it overestimated the drain
// by up to 9%).
double StepTimeEstimator::last_backward_shared_waits_s(const StageTime& st) const {
  const double traffic = m_stage_reduce_traffic_s[size_t(st.stage)];
  const double exposed = mb_exposed(st), backward_exposed = exposed - st.forward_exposed_s;
  if (traffic <= 0 || exposed <= 0 || backward_exposed <= 0) return 0.0;
  const double span = st.backward_s + st.recompute_s + backward_exposed;
  const double beside = std::min(1.0, traffic / span);
  const double grown = waits_on_dp_links_s(st.tp_exposed_s, st.cp_exposed_s, st.ep_exposed_s,
                                           m_stage_reduce_expert_share[size_t(st.stage)]);
  return beside * grown * backward_exposed / exposed;
}

// What a unit's first forward waits longer on its TP, CP and EP collectives for meeting the next
// unit's gather (`gather_s`, of `traffic`) on their links, as last_backward_shared_waits_s.
double StepTimeEstimator::forward_shared_waits_s(const PieceTime& piece, double gather_s,
                                                 const UnitTraffic& traffic) const {
  const double exposed = piece.exposed_s();
  if (exposed <= 0 || piece.forward_exposed_s <= 0) return 0.0;
  const double beside = std::min(1.0, gather_s / (piece.forward_s + piece.forward_exposed_s));
  const double total = traffic.gather_s + traffic.reduce_s;
  const double grown = waits_on_dp_links_s(piece.tp_exposed_s, piece.cp_exposed_s, piece.ep_exposed_s,
                                           total > 0 ? traffic.expert_s / total : 0.0);
  return beside * grown * piece.forward_exposed_s / exposed;
}

// FSDP with pipelining (torchtitan) gathers a stage's weights unit by unit during each chunk's
// first micro-batch, as the workload issues them: on one FIFO stream, a layer's gather once
// the layer fsdp_prefetch_layers before it has started (limit_all_gathers), the embedding's
// and the output layer's as soon as the stream is free; a unit computes once its gather is done
// and the unit before it has finished (its compute and its waits for TP/CP/EP collectives).
// A chunk's first gather runs during the fill, or the chunk before it, except the first
// stage's, which opens the step. Its reduce-scatters hold up nothing but the stage's own
// optimizer (the gradient send does not wait for them): fsdp_reduce_tail_s.
// Stage i's forward of a micro-batch whose weights it gathers, chunk by chunk: each chunk's
// span. FirstGather::waited_for: the stage's first unit waits for its gather too (the step's
// first forward on the first stage); OverlapSlowdown::paid: compute beside a gather pays
// overlap_slowdown.
std::vector<double> StepTimeEstimator::gathered_forward_spans(int64_t stage, FirstGather first,
                                                              OverlapSlowdown slowdown) const {
  std::vector<double> spans(size_t(m_split.split_v), 0.0);
  const std::vector<StageProgram::FsdpUnit>& units = m_stage_units[size_t(stage)];
  const std::vector<UnitTraffic>& traffic = m_unit_traffic[size_t(stage)];
  std::vector<double> starts;   // the chunk's units' start times, from the chunk's start
  std::vector<double> reached;  // submodule units: when the compute before each ended
  double gather_end = 0, compute_end = 0;
  for (size_t k = 0; k < units.size(); ++k) {
    const StageProgram::FsdpUnit& u = units[k];
    reached.push_back(compute_end);
    if (k == 0 || units[k - 1].chunk != u.chunk) {
      starts.clear();
      gather_end = first == FirstGather::waited_for && k == 0 ? traffic[k].gather_s : 0.0;
      compute_end = 0;
    } else if (u.issued_by >= 0) {
      // DeepSpeed: issued when the submodule issuing it was reached (itself: not prefetched).
      gather_end = std::max(gather_end, reached[size_t(u.issued_by)]) + traffic[k].gather_s;
    } else {
      const int64_t trigger = int64_t(starts.size()) - m_wo.fsdp_prefetch_layers;
      const double issue = u.unit >= 0 && trigger >= 0 ? starts[size_t(trigger)] : 0.0;
      gather_end = std::max(gather_end, issue) + traffic[k].gather_s;
    }
    const double start = std::max(compute_end, gather_end);
    starts.push_back(start);
    const bool next_in_chunk = k + 1 < units.size() && units[k + 1].chunk == u.chunk;
    const double beside_s =
        slowdown == OverlapSlowdown::paid && next_in_chunk ? traffic[k + 1].gather_s : 0.0;
    const PieceTime& piece = unit_piece(u, stage);
    const double share = u.forward_share;
    compute_end = start + beside_traffic_s(share * piece.forward_s, beside_s) +
                  share * piece.forward_exposed_s +
                  (beside_s > 0 ? share * forward_shared_waits_s(piece, beside_s, traffic[k + 1]) : 0.0);
    spans[size_t(u.chunk)] = compute_end;
  }
  return spans;
}

// The first forward's compute part: its span, less the forward's own waits.
double StepTimeEstimator::first_forward_s(const StageTime& st) const {
  if (!m_fsdp_pipeline) return st.forward_s;
  const std::vector<double>& spans = m_first_forward_spans[size_t(st.stage)];
  return std::accumulate(spans.begin(), spans.end(), 0.0) - st.forward_exposed_s;
}

// A stage's last backward (of each chunk) runs beside its gradients' reductions.
double StepTimeEstimator::last_backward_s(const StageTime& st) const {
  return beside_traffic_s(st.backward_s + st.recompute_s, m_stage_reduce_traffic_s[size_t(st.stage)]);
}

// The DP traffic per step of the stage with the most of it, and what the compute stream does
// not hide of it.
void StepTimeEstimator::time_data_parallel() {
  const Layout& l = m_layout;
  double grad_s = 0, param_s = 0;
  if (l.zero_stage >= 3) {  // unit by unit, the stage with the most traffic
    for (const UnitTraffic& stage : m_stage_traffic)
      if (stage.gather_s + stage.reduce_s > grad_s + param_s) {
        grad_s = stage.reduce_s;
        param_s = stage.gather_s;
      }
    // FSDP / ZeRO-3, one unit per layer plus the embedding and the head (the workload's units).
    // pp = 1: weights gathered for forward and again for backward, gradients reduce-scattered,
    // per micro-batch. pp > 1 (torchtitan: no resharding between micro-batches): once per step.
    const double passes = l.pp > 1 ? 1.0 : m_out.microbatches;
    const UnitTraffic& slow = m_stage_traffic[size_t(m_out.slowest_stage)];
    if (grad_s + param_s > 0) m_slowest_dp_share = (slow.gather_s + slow.reduce_s) / (grad_s + param_s);
    if (slow.gather_s + slow.reduce_s > 0)
      m_slowest_expert_share = slow.expert_s / (slow.gather_s + slow.reduce_s);
    m_out.dp_grad_s = passes * grad_s;
    m_out.dp_param_s = passes * (l.pp > 1 ? 1.0 : 2.0) * param_s;
    m_dp_total_s = m_out.dp_grad_s + m_out.dp_param_s;
    m_dp_busy_s = m_dp_total_s;
    expose_fsdp_traffic();
    return;
  }
  // ZeRO 0-2: Megatron's DDP reduces (and the distributed optimizer gathers) bucket by bucket,
  // one call each, as the workload plans them; the stage with the most traffic sets the pace.
  const bool every_micro_batch = l.zero_stage == 2 && m_wo.zero2_reduce_every_micro_batch;
  int64_t busiest = 0;                                // the stage with the most DP traffic
  std::vector<std::vector<TimedBucket>> all_buckets;  // [stage]
  for (int64_t i = 0; i < l.pp; ++i) {
    std::vector<TimedBucket> timed;
    double stage_grad = 0, stage_param = 0;
    for (const StageProgram::GradBucketSize& b : m_stage_buckets[size_t(i)]) {
      // DeepSpeed ZeRO-2 reduces every micro-batch's gradients, each bucket on the compute stream.
      timed.push_back(
          {b, (every_micro_batch ? m_out.microbatches : 1.0) * bucket_reduce_s(b, i), bucket_gather_s(b, i)});
      stage_grad += timed.back().grad_s;
      stage_param += timed.back().param_s;
    }
    if (stage_grad + stage_param > grad_s + param_s) {
      grad_s = stage_grad;
      param_s = stage_param;
      busiest = i;
    }
    all_buckets.push_back(std::move(timed));
  }
  m_out.dp_grad_s = grad_s;
  m_out.dp_param_s = param_s;
  if (grad_s + param_s > 0) {
    double slowest_s = 0, expert_s = 0;
    for (const TimedBucket& b : all_buckets[size_t(m_out.slowest_stage)]) {
      slowest_s += b.grad_s + b.param_s;
      if (b.size.experts) expert_s += b.grad_s + b.param_s;
    }
    m_slowest_dp_share = slowest_s / (grad_s + param_s);
    if (slowest_s > 0) m_slowest_expert_share = expert_s / slowest_s;
  }
  m_out.dp_calls = int64_t(all_buckets[size_t(busiest)].size());
  m_dp_total_s = grad_s + param_s;
  expose_ddp_traffic(all_buckets, busiest);
}

// A stage's reduce-scatters beyond its last backward, FSDP over a pipeline. They queue on one
// stream, each unit's once the last micro-batch's backward has passed it: chunk c's last
// backward ends c·p chunk-steps before the stage's last (the cool-down runs the chunks down to
// 0), its units in reverse, evenly over it.
double StepTimeEstimator::fsdp_reduce_tail_s(const StageTime& st) const {
  const std::vector<StageProgram::FsdpUnit>& units = m_stage_units[size_t(st.stage)];
  const double chunk_backward = last_backward_s(st) / double(m_split.split_v);
  std::map<int64_t, double> chunk_units, passed;
  for (const StageProgram::FsdpUnit& u : units) chunk_units[u.chunk] += 1;
  std::vector<std::pair<double, double>> ready;  // (ready time, duration); 0 = last backward ends
  for (size_t k = units.size(); k-- > 0;) {
    const double share = (passed[units[k].chunk] += 1) / chunk_units[units[k].chunk];
    const double chunk_end = -double(units[k].chunk) * m_p * chunk_backward;
    ready.push_back(
        {chunk_end - chunk_backward * (1.0 - share), m_unit_traffic[size_t(st.stage)][k].reduce_s});
  }
  return ready.empty() ? 0.0 : std::max(0.0, one_stream_end_s(std::move(ready)));
}

void StepTimeEstimator::expose_fsdp_traffic() {
  const StageTime& slow = slowest();
  const double microbatches = m_out.microbatches;
  if (m_fsdp_pipeline) {
    // The slowest stage's own gather-bound first forward, and the tail: a stage's
    // reduce-scatters beyond its last backward and the drain still to run behind it (the
    // backwards of the stages before it), then at least the first stage's first layer's
    // reduce-scatter, which only the embedding's short backward follows.
    double tail = 0, drain_behind = 0;
    for (const StageTime& st : m_out.stages) {
      tail = std::max(tail, fsdp_reduce_tail_s(st) - drain_behind);
      drain_behind += last_backward_s(st) / m_v;
    }
    tail = std::max(tail, m_first_layer_traffic.reduce_s);
    // (The first forward's wait is never negative; without gathers it is the forward itself,
    // up to rounding.)
    m_out.dp_exposed_s = std::max(0.0, first_forward_s(slow) - slow.forward_s) + tail;
  } else {
    // Prefetch hides the rest behind compute, but not each micro-batch's forward waits on its
    // gathers, played out unit by unit as above (the step's first opening with the embedding's
    // gather; a later one's embedding gathered during the backward before it, its first
    // layer's issued once its forward starts), nor the embedding's reduce-scatter after the
    // last backward.
    const std::vector<UnitTraffic>& first_units = m_unit_traffic.front();
    const UnitTraffic embedding = first_units.empty() ? UnitTraffic{} : first_units.front();
    auto forward_waits_s = [&](FirstGather first) {
      const std::vector<double> spans = gathered_forward_spans(0, first, OverlapSlowdown::not_paid);
      return std::max(
          0.0, std::accumulate(spans.begin(), spans.end(), 0.0) - slow.forward_s - slow.forward_exposed_s);
    };
    // DeepSpeed v0.5's synchronous fetches (Zero3Fetch::synchronous): the backward's gathers
    // wait like the forward's, each before its submodule computes, and share the link with the
    // reduce-scatters running beside them (their bytes, not their latency).
    const UnitTraffic& stage_traffic = m_stage_traffic.front();
    const double backward_gathers = m_wo.zero3_fetch == Zero3Fetch::synchronous
                                        ? microbatches * (stage_traffic.gather_s + stage_traffic.reduce_s -
                                                          stage_traffic.reduce_latency_s)
                                        : 0.0;
    const double unhidden = forward_waits_s(FirstGather::waited_for) +
                            (microbatches - 1.0) * forward_waits_s(FirstGather::done_before) +
                            embedding.reduce_s + backward_gathers;
    // The backward's gathers (each unit's, prefetched) and reduce-scatters run on two streams
    // at once, unless one communicator's stream serializes them (FSDP1): their calls' latencies
    // overlap, their bytes share the link, so together they take the longer stream or the
    // bytes of both, whichever is more.
    const UnitTraffic& stage = m_stage_traffic.front();
    double backward_s = stage.gather_s + stage.reduce_s;
    if (!m_wo.fsdp_one_communicator)
      backward_s = std::max(
          {stage.gather_s, stage.reduce_s, backward_s - stage.gather_latency_s - stage.reduce_latency_s});
    m_dp_busy_s = microbatches * (stage.gather_s + backward_s);
    // The window is the compute stream's whole span, its waits for TP/CP/EP collectives
    // included: FSDP's streams run beside those too. Its compute runs overlap_slowdown slower
    // for the share of it the traffic fills.
    const double span = microbatches * (slow.compute_s() + mb_exposed(slow));
    const double busy = span > 0 ? std::min(1.0, m_dp_busy_s / span) : 0.0;
    const double window = span + m_options.overlap_slowdown * busy * microbatches * slow.compute_s();
    m_out.dp_exposed_s = std::max(m_dp_busy_s - window, unhidden);
  }
  m_out.dp_exposed_s = std::min(m_dp_busy_s, m_out.dp_exposed_s);
  m_grad_overlapped_s = std::max(0.0, m_dp_busy_s - m_out.dp_exposed_s);
}

// A chunk's forward and backward as the compute stream spans them: recompute and the waits for
// TP/CP/EP collectives included (the DP stream runs beside those too). Compute beside the
// traffic runs overlap_slowdown slower (charge_overlap_slowdown), which widens the windows: by
// the share of the time, up to the last bucket's window, that the traffic fills.
std::pair<double, double> StepTimeEstimator::ddp_chunk_windows(const StageTime& st, double grad_s,
                                                               double param_s) const {
  const double v = m_v, p = m_p;
  const double forward_plain = (st.forward_s + st.forward_exposed_s) / v;
  const double backward_plain = (st.backward_s + st.recompute_s + mb_exposed(st) - st.forward_exposed_s) / v;
  const double windows = (v - 1.0) * p + 1.0;  // chunk-steps up to the last chunk's window
  auto busy = [&](double traffic_s, double window_s) {
    return window_s > 0 ? std::min(1.0, traffic_s / (windows * window_s)) : 0.0;
  };
  return {forward_plain + m_options.overlap_slowdown * busy(param_s, forward_plain) * st.forward_s / v,
          backward_plain + m_options.overlap_slowdown * busy(grad_s, backward_plain) *
                               (st.backward_s + st.recompute_s) / v};
}

// The buckets' reductions beyond a stage's last backward. Chunk c's last backward ends c·p
// chunk-steps before the stage's last (the cool-down runs the chunks down to 0, p micro-batches
// each); a bucket is ready when the backward has passed its layers (layers evenly over the
// chunk's backward), and the buckets reduce one after another on one stream: what outlasts the
// stage's last backward is exposed.
double StepTimeEstimator::ddp_grad_tail_s(const std::vector<TimedBucket>& buckets,
                                          const StageTime& st) const {
  double grad_s = 0, param_s = 0;
  for (const TimedBucket& b : buckets) {
    grad_s += b.grad_s;
    param_s += b.param_s;
  }
  if (m_wo.grad_reduce != GradReduceOverlap::bucketed ||
      (m_layout.zero_stage == 2 && m_wo.zero2_reduce_every_micro_batch))  // on the compute stream
    return grad_s;
  const double backward_chunk = ddp_chunk_windows(st, grad_s, param_s).second;
  // The cool-down's chunk-steps go at the slowest stage's pace.
  const double pace = std::max(backward_chunk, ddp_chunk_windows(slowest(), grad_s, param_s).second);
  const std::vector<double> passed = passed_shares(buckets);
  std::vector<std::pair<double, double>> ready;  // (ready time, duration); 0 = last backward ends
  for (size_t i = 0; i < buckets.size(); ++i) {
    const double chunk_end = -double(buckets[i].size.chunk) * m_p * pace;
    ready.push_back({chunk_end - backward_chunk * (1.0 - passed[i]), buckets[i].grad_s});
  }
  return ready.empty() ? 0.0 : std::clamp(one_stream_end_s(std::move(ready)), 0.0, grad_s);
}

// Megatron's DDP, bucket by bucket (the workload's buckets: chunk 0 cut at the bucket size,
// later chunks, interleaved, one bucket each unless the framework cuts them all): the gradient
// reductions' tail as above, the busiest stage's on the slowest stage's windows. The weight
// gathers mirror it (ddp_param_delay_s), on every stage: a delay anywhere holds up the path
// behind it. With v = 1: the last backward's and the first forward's windows. Over a pipeline
// the step ends with the stage whose last backward, optimizer and own gradient tail (and, gathered
// after the optimizer, its own weight gathers) end last, which need not be the slowest stage
// (stage 0 after the drain, or any stage beside a straggler's or a slow link's).
void StepTimeEstimator::expose_ddp_traffic(const std::vector<std::vector<TimedBucket>>& stage_buckets,
                                           int64_t busiest) {
  const Layout& l = m_layout;
  const StageTime& slow = slowest();
  const double grad_s = m_out.dp_grad_s, param_s = m_out.dp_param_s;
  const double grad_exposed = ddp_grad_tail_s(stage_buckets[size_t(busiest)], slow);
  const bool gathers_behind_optimizer = m_wo.param_gather != ParamGatherOverlap::next_forward;
  double param_exposed = param_s;
  if (!gathers_behind_optimizer) {
    const double forward_chunk = ddp_chunk_windows(slow, grad_s, param_s).first;
    double fill = 0;  // when stage i's first forward starts: the stages before it, one chunk each
    param_exposed = 0;
    for (int64_t i = 0; i < l.pp; ++i) {
      param_exposed =
          std::max(param_exposed, ddp_param_delay_s(stage_buckets[size_t(i)], forward_chunk, fill));
      const StageTime& st = m_out.stages[size_t(i)];
      fill += (st.forward_s + st.forward_exposed_s) / m_v + (m_hop_s.empty() ? 0.0 : m_hop_s[size_t(i)]);
    }
    param_exposed = std::min(param_exposed, param_s);
  }
  m_out.dp_exposed_s = grad_exposed + param_exposed;
  m_grad_overlapped_s = grad_s - grad_exposed;
  m_param_overlapped_s = param_s - param_exposed;
  if (m_stage_path_end.empty()) return;
  const double charged = grad_exposed + (gathers_behind_optimizer ? param_exposed : 0.0);
  double path = -std::numeric_limits<double>::infinity(), critical = path;
  for (int64_t i = 0; i < l.pp; ++i) {
    const std::vector<TimedBucket>& buckets = stage_buckets[size_t(i)];
    double own = ddp_grad_tail_s(buckets, m_out.stages[size_t(i)]);
    if (gathers_behind_optimizer)
      for (const TimedBucket& b : buckets) own += b.param_s;
    path = std::max(path, m_stage_path_end[size_t(i)]);
    critical = std::max(critical, m_stage_path_end[size_t(i)] + own);
  }
  m_out.critical_tail_s = critical - (path + charged);
}

// The weight gathers' delay to a stage's forward (overlap_param_gather): issued one after
// another from the step's start, chunk c's first forward starting c·p chunk-steps after the
// stage's first (at `first_forward_s`, after the fill), each bucket needed when the forward
// reaches its first layer, every wait delaying the rest.
double StepTimeEstimator::ddp_param_delay_s(const std::vector<TimedBucket>& buckets, double forward_chunk,
                                            double first_forward_s) const {
  const std::vector<double> passed = passed_shares(buckets);
  // Forward order: chunk by chunk, each chunk's buckets (dense and expert alike) by the point the
  // forward needs them.
  std::vector<size_t> order(buckets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = buckets.size() - 1 - i;  // list reversed
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buckets[a].size.chunk != buckets[b].size.chunk) return buckets[a].size.chunk < buckets[b].size.chunk;
    return 1.0 - passed[a] < 1.0 - passed[b];
  });
  double end = 0, delay = 0;  // 0 = the step's start
  for (const size_t i : order) {
    end += buckets[i].param_s;
    const double needed = first_forward_s + double(buckets[i].size.chunk) * m_p * forward_chunk +
                          forward_chunk * (1.0 - passed[i]) + delay;
    delay += std::max(0.0, end - needed);
  }
  return delay;
}

// Compute running beside DP or PP NCCL kernels is slower (their SMs and HBM traffic), as the
// event charges it: the compute kernels in the overlapped time, which hides behind the compute
// stream's span, waits for TP/CP/EP collectives included, so compute's share of that span. The
// slowest stage's own share of the overlapped traffic: the busiest stage's runs beside its own
// compute (another stage's, over a slow link, say).
void StepTimeEstimator::charge_overlap_slowdown() {
  const StageTime& slow = slowest();
  auto compute_share = [](double compute_s, double waits_s) {
    return compute_s > 0 ? compute_s / (compute_s + waits_s) : 0.0;
  };
  const double forward_share = compute_share(slow.forward_s, slow.forward_exposed_s);
  const double backward_share =
      m_layout.zero_stage >= 3 && m_layout.pp == 1
          ? compute_share(slow.compute_s(), mb_exposed(slow))
          : compute_share(slow.backward_s + slow.recompute_s, mb_exposed(slow) - slow.forward_exposed_s);
  m_grad_slowdown_s = m_options.overlap_slowdown * backward_share * m_slowest_dp_share * m_grad_overlapped_s;
  m_fwd_slowdown_s = m_options.overlap_slowdown * forward_share *
                     (m_slowest_dp_share * m_param_overlapped_s + m_pp_overlapped_s);
  m_out.overlap_slowdown_s = m_grad_slowdown_s + m_fwd_slowdown_s;
}

// A TP, CP or EP collective that meets the DP traffic running beside it on the same link gets
// half of that link while the two overlap (max-min fair, both bound there): its waits grow by
// the share of the compute stream's span the slowest stage's DP traffic runs on that link, the
// DP group's and the expert-DP group's traffic each where it shares it. The same link: both
// groups across domains (this GPU's NIC), both inside an NVSwitch domain (its switch port), or
// on a full mesh a link to a peer in both. One across and one inside share only a ring's hop
// or PXN's, at the slower one's rate: not counted.
void StepTimeEstimator::charge_shared_links() {
  const Layout& l = m_layout;
  const StageTime& slow = slowest();
  const double microbatches = m_out.microbatches;
  const double span_s = microbatches * (slow.compute_s() + mb_exposed(slow));
  const double dp_busy =
      span_s > 0 ? std::min(1.0, m_slowest_dp_share * (m_grad_overlapped_s + m_param_overlapped_s) / span_s)
                 : 0.0;
  if (dp_busy <= 0) return;
  // The share of the span DP traffic runs on the link of group `g`.
  auto busy_beside = [&](const LinkCost& lk, RankGroup g) {
    return dp_busy * dp_link_share(lk, g, m_slowest_expert_share, MeshPeerLinks::counted);
  };
  m_tp_shared_s = busy_beside(m_tp_link, rank_group(l, GroupKind::tp)) * microbatches * slow.tp_exposed_s;
  m_cp_shared_s = busy_beside(m_cp_link, cp_link_group()) * microbatches * slow.cp_exposed_s;
  m_ep_shared_s = busy_beside(m_ep_link, rank_group(l, GroupKind::ep)) * microbatches * slow.ep_exposed_s;
  m_out.shared_link_s = m_tp_shared_s + m_cp_shared_s + m_ep_shared_s;
}

}  // namespace simrun::detail
