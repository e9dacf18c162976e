// The closed-form step time (analytic.hpp estimate_step_time; the formulas and their sources
// are in that header's comment): the workload builder's ops of one micro-batch timed on their
// streams, stage by stage, and the step's breakdown. The pipeline's sends, fill and drain are in
// step_time_estimate_pipeline.cpp; the data-parallel traffic, what the compute stream does not
// hide of it and the links the groups share in step_time_estimate_data_parallel.cpp; the
// estimator's declaration in step_time_estimator.hpp.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <vector>

#include "simrun/common/error.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "simrun/sim/workload/wait_attribution.hpp"
#include "step_time_estimator.hpp"

namespace simrun {
namespace detail {
namespace {

// Context parallelism's groups: the whole CP group, or a2a+p2p's two levels.
bool is_cp(GroupKind g) { return g == GroupKind::cp || g == GroupKind::cp_a2a || g == GroupKind::cp_ring; }

// The TP, CP and EP groups' links and sizes, for the probe's collectives.
struct GroupLinks {
  LinkCost tp;
  int64_t tp_size = 1;
  LinkCost cp;  // GroupKind::cp, or the ring's level under a2a+p2p (GroupKind::cp_ring)
  int64_t cp_size = 1;
  LinkCost cp_a2a;  // a2a+p2p's all-to-all level (GroupKind::cp_a2a)
  int64_t cp_a2a_size = 1;
  LinkCost ep;
  int64_t ep_size = 1;
  LinkCost ep_intra, ep_inter;  // a two-level EP all-to-all's levels (GroupKind::ep_intra, ep_inter)
  int64_t ep_intra_size = 1, ep_inter_size = 1;
};

// The piece of the micro-batch a task belongs to (its layer's, the first two layers apart; the
// embedding's; the head's), or nullptr for the per-step tasks. Counts the layers seen.
PieceTime* piece_of(ProbeTimes& out, const Task& t) {
  if (t.layer >= 0) {
    out.layers = std::max<int64_t>(out.layers, int64_t(t.layer) + 1);
    return &out.layer[size_t(std::min<int32_t>(t.layer, 1))];
  }
  switch (t.op) {
    case OpName::embedding:
    case OpName::tp_embedding:
      return &out.embedding;
    case OpName::final_ln:
    case OpName::logits:
    case OpName::loss:
    case OpName::tp_logits:
    case OpName::tp_loss:
      return &out.head;
    default:
      return nullptr;  // optimizer, DP traffic: per step, not per micro-batch
  }
}

// A compute kernel's `seconds` by its phase, its model FLOPs and its HBM traffic.
void book_compute(PieceTime& piece, const StageProgram& prog, const Task& t, double seconds) {
  (t.phase == Phase::forward    ? piece.forward_s
   : t.phase == Phase::backward ? piece.backward_s
                                : piece.recompute_s) += seconds;
  if (t.phase != Phase::recompute)  // model FLOPs, as the workload counts them
    (t.op == OpName::attn_core ? piece.attention_flops : piece.gemm_flops) += t.flops;
  piece.hbm_bytes += prog.hbm_bytes(t);
}

// A compute kernel ready `seconds` before the host issued it: the wait, booked to its phase (the
// compute stream's time, as the event simulation books it) and counted apart.
void book_host_wait(PieceTime& piece, const Task& t, double seconds) {
  (t.phase == Phase::forward    ? piece.forward_s
   : t.phase == Phase::backward ? piece.backward_s
                                : piece.recompute_s) += seconds;
  piece.host_wait_s += seconds;
}

// The compute stream's waits for the host over `prog` (a stage's optimizer program) run alone:
// the host issued its first tasks during the backward, so it starts ahead of the GPU, and waits
// at each host sync (the gradient norm's) for the task's dependencies, then issues at its cost
// per launch. Collectives take no time here (the step's data-parallel traffic is timed apart).
double host_waits_s(const StageProgram& prog, const ProgramCost& cost, const HostOverhead& host,
                    double slowdown) {
  std::array<double, kStreamCount> stream_free{};
  std::vector<double> end(prog.tasks.size(), 0.0);
  double host_clock = -std::numeric_limits<double>::infinity(), waits = 0;
  for (size_t i = 0; i < prog.tasks.size(); ++i) {
    const Task& t = prog.tasks[i];
    double ready = 0;
    for (uint16_t k = 0; k < t.dep_count; ++k) ready = std::max(ready, end[prog.dep(t, k)]);
    if (t.host_syncs > 0) host_clock = std::max(host_clock, ready) + host.sync_s * t.host_syncs;
    host_clock += host.launch_s * t.host_launches;
    const double gpu_ready = std::max(stream_free[size_t(t.stream)], ready);
    const double start = std::max(gpu_ready, host_clock);
    const double duration = t.kind == TaskKind::compute ? cost.of(t).seconds() * slowdown : 0.0;
    if (t.kind == TaskKind::compute) waits += start - gpu_ready;
    end[i] = start + duration;
    stream_free[size_t(t.stream)] = end[i];
  }
  return waits;
}

// A TP, CP or EP collective's closed-form time on its group's link at the condition's fraction,
// no shorter than its kernels' (ProgramCost::comm_kernel_s), booked to its piece; 0 for the
// data-parallel ones (timed per step).
double probe_collective_s(const Task& t, PieceTime* piece, const GroupLinks& links,
                          const StageCondition& condition, const ProgramCost& cost, CollectiveTimes& times) {
  double duration = 0;
  if (t.group == GroupKind::tp) {
    duration = times.collective_at_s(t.coll, t.comm_bytes, links.tp_size, links.tp,
                                     condition.fraction(links.tp.link_class));
    if (piece) piece->tp_comm_s += duration;
  } else if (is_cp(t.group)) {
    const bool a2a_level = t.group == GroupKind::cp_a2a;
    const LinkCost& link = a2a_level ? links.cp_a2a : links.cp;
    duration = times.collective_at_s(t.coll, t.comm_bytes, a2a_level ? links.cp_a2a_size : links.cp_size,
                                     link, condition.fraction(link.link_class));
    if (piece) piece->cp_comm_s += duration;
  } else if (is_ep(t.group)) {
    const bool intra = t.group == GroupKind::ep_intra, inter = t.group == GroupKind::ep_inter;
    const LinkCost& link = intra ? links.ep_intra : inter ? links.ep_inter : links.ep;
    duration = times.collective_at_s(t.coll, t.comm_bytes,
                                     intra   ? links.ep_intra_size
                                     : inter ? links.ep_inter_size
                                             : links.ep_size,
                                     link, condition.fraction(link.link_class));
    duration = std::max(duration, cost.comm_kernel_s(t));
    if (piece) piece->ep_comm_s += duration;
  }
  return duration;
}

// Runs the probe's tasks on their streams (a stream runs its tasks in program order; a task
// also waits for its dependencies), with closed-form times (collective_s) for the TP, CP and EP
// collectives and none for the data-parallel ones (timed per step, below). A wait of the compute
// stream is charged by the event simulation's rule (wait_attribution.hpp) to the piece and group
// of the collective that was running; counted apart when a forward kernel waited. Compute
// kernels run the condition's slowdown times longer (a straggler's stage), and collectives move
// their bytes at its fraction of their link class (a slow link's stage).
//
// The host issues the tasks in program order at the framework's cost per launch (docs/model.md
// "Host overhead"); it starts ahead of the GPU (it issued them while earlier micro-batches ran)
// and falls behind after each host sync, where it waits for the task's dependencies; a task
// starts once issued. A compute kernel's wait for the host is booked to its phase, and counted
// apart (PieceTime::host_wait_s); the host's own time per piece is PieceTime::host_issue_s (the
// step's floor, fill_breakdown).
ProbeTimes time_probe(const StageProgram& prog, const ProgramCost& cost, const GroupLinks& links,
                      const StageCondition& condition, const HostOverhead& host, CollectiveTimes& times) {
  ProbeTimes out;
  std::array<double, kStreamCount> stream_free{};
  std::array<uint32_t, kStreamCount> stream_last;
  stream_last.fill(kNoTask);
  std::vector<double> begin(prog.tasks.size(), 0.0), end(prog.tasks.size(), 0.0);
  std::vector<uint32_t> waited_for(prog.tasks.size(), kNoTask);  // what each task started after
  // Charges the compute stream's wait [from, to) by the rule the event simulation uses
  // (wait_attribution.hpp); only the TP, CP and EP collectives' shares are the probe's to book.
  auto charge_wait = [&](uint32_t blocker, double from, double to, const Task& waiting,
                         PieceTime* waiting_piece) {
    const bool forward = waiting.phase == Phase::forward;
    auto book = [&](uint32_t t, double lo, double hi) {
      if (t == kHostWait) {  // a collective the host issued late: the kernel waited for the host
        if (waiting_piece) book_host_wait(*waiting_piece, waiting, hi - lo);
        return;
      }
      if (t == kNoTask) return;
      const Task& b = prog.tasks[t];
      PieceTime* owner = piece_of(out, b);
      const bool charged = owner && b.kind == TaskKind::collective &&
                           (b.group == GroupKind::tp || is_cp(b.group) || is_ep(b.group));
      if (!charged) return;
      const double wait = hi - lo;
      (b.group == GroupKind::tp ? owner->tp_exposed_s
       : is_cp(b.group)         ? owner->cp_exposed_s
                                : owner->ep_exposed_s) += wait;
      if (forward) owner->forward_exposed_s += wait;
    };
    attribute_wait(
        blocker, from, to, [&](uint32_t t) { return begin[t]; }, [&](uint32_t t) { return waited_for[t]; },
        book);
  };
  double compute_free = 0;
  double host_clock = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < prog.tasks.size(); ++i) {
    const Task& t = prog.tasks[i];
    double ready = 0;
    uint32_t blocker = kNoTask;
    for (uint16_t k = 0; k < t.dep_count; ++k) {
      const uint32_t dep = prog.dep(t, k);
      if (end[dep] > ready) {
        ready = end[dep];
        blocker = dep;
      }
    }
    if (t.host_syncs > 0) host_clock = std::max(host_clock, ready) + host.sync_s * t.host_syncs;
    host_clock += host.launch_s * t.host_launches;
    const size_t stream = size_t(t.stream);
    if (stream_free[stream] > ready) blocker = stream_last[stream];
    const double gpu_ready = std::max(stream_free[stream], ready);
    const double start = std::max(gpu_ready, host_clock);
    begin[i] = start;
    // A collective issued after it was ready: what the compute stream waits for before it is the host.
    waited_for[i] = t.kind != TaskKind::compute && start > gpu_ready ? kHostWait : blocker;
    double duration = 0;
    PieceTime* piece = piece_of(out, t);
    if (piece) piece->host_issue_s += host.launch_s * t.host_launches + host.sync_s * t.host_syncs;
    if (t.kind == TaskKind::compute) {
      duration = cost.of(t).seconds() * condition.slowdown;
      if (gpu_ready > compute_free) charge_wait(blocker, compute_free, gpu_ready, t, piece);
      compute_free = start + duration;
      if (piece) {
        book_compute(*piece, prog, t, duration);
        if (start > gpu_ready) book_host_wait(*piece, t, start - gpu_ready);
      }
    } else if (t.kind == TaskKind::collective) {
      duration = probe_collective_s(t, piece, links, condition, cost, times);
    }
    end[i] = start + duration;
    stream_free[stream] = end[i];
    stream_last[stream] = uint32_t(i);
  }
  return out;
}

}  // namespace

ProbePrograms probe_programs(const Scenario& sc, const WorkloadOptions& wo, const ComputeModel& compute) {
  ProbePrograms out;
  const ModelSpec& m = sc.model;
  if (m.dense_layers() > 0 || m.moe_layers() == 0) {
    Scenario dense = sc;
    dense.model.moe.reset();
    out.dense = probe_micro_batch(dense, wo);
    out.dense_cost = cost_program(*out.dense, compute);
  }
  if (m.moe_layers() > 0) {
    Scenario routed = sc;
    routed.model.moe->first_dense_layers = 0;
    out.moe = probe_micro_batch(routed, wo);
    out.moe_cost = cost_program(*out.moe, compute);
  }
  // The layers a recipe keeps in 16 bits (NVFP4's last 15%), of each kind the tail holds.
  const LayerKinds kinds = layer_kinds(sc);
  if (kinds.first_bf16 < m.layers) {
    if (out.dense && kinds.first_bf16 < kinds.first_moe) {
      Scenario dense = sc;
      dense.model.moe.reset();
      out.dense_bf16 = probe_micro_batch(dense, wo, ProbeGemms::kept_bf16);
      out.dense_bf16_cost = cost_program(*out.dense_bf16, compute);
    }
    if (out.moe) {
      Scenario routed = sc;
      routed.model.moe->first_dense_layers = 0;
      out.moe_bf16 = probe_micro_batch(routed, wo, ProbeGemms::kept_bf16);
      out.moe_bf16_cost = cost_program(*out.moe_bf16, compute);
    }
  }
  return out;
}

LayerKinds layer_kinds(const Scenario& sc) {
  return {sc.model.first_moe_layer(),
          first_bf16_layer(sc.layout.precision, sc.layout.recipe(), sc.model.layers)};
}

const PieceTime& layer_piece(const Probes& probes, const LayerKinds& kinds, int64_t id) {
  const bool routed = id >= kinds.first_moe, kept_bf16 = id >= kinds.first_bf16;
  const ProbeTimes& probe =
      routed ? (kept_bf16 ? probes.moe_bf16 : probes.moe) : (kept_bf16 ? probes.dense_bf16 : probes.dense);
  return probe.layer[size_t(std::min<int64_t>(id % 2, probe.layers - 1))];
}

ChunkSplit split_chunks(int64_t layers, const Layout& l, PipelineSchedule schedule, int64_t v_chunks) {
  ChunkSplit out;
  const bool dualpipe = schedule == PipelineSchedule::dualpipe && l.pp > 1;
  out.split_v = v_chunks;
  LayerSplit split = split_layers(layers, l.pp, dualpipe ? 1 : out.split_v, l.pipeline_split);
  if (split.error) {
    out.split_v = dualpipe ? 2 : 1;
    split.layers_per_chunk = near_even_layers(layers, l.pp);
  }
  out.layers_per_chunk = std::move(split.layers_per_chunk);
  if (dualpipe) {
    // Chunk 1 of stage s holds the layers of stage pp − 1 − s (the workload's copy).
    const std::vector<int64_t> own_first = chunk_first_layers(out.layers_per_chunk, l.pp, 1);
    out.layers_per_chunk = dualpipe_layers_per_chunk(out.layers_per_chunk);
    for (int64_t s = 0; s < l.pp; ++s) {
      out.first_layer.push_back(own_first[size_t(s)]);
      out.first_layer.push_back(own_first[size_t(l.pp - 1 - s)]);
    }
    return out;
  }
  out.first_layer = chunk_first_layers(out.layers_per_chunk, l.pp, out.split_v);
  return out;
}

StagePieces stage_pieces(const Probes& probes, const ChunkSplit& split, const LayerKinds& kinds,
                         PipelineSchedule schedule, int64_t stage, int64_t pp) {
  StagePieces out;
  std::vector<PieceTime>& chunks = out.chunks;
  chunks.resize(size_t(split.split_v));
  for (int64_t c = 0; c < split.split_v; ++c) {
    const size_t idx = size_t(stage * split.split_v + c);
    for (int64_t k = 0; k < split.layers_per_chunk[idx]; ++k)
      chunks[size_t(c)].add(layer_piece(probes, kinds, split.first_layer[idx] + k));
  }
  if (schedule == PipelineSchedule::dualpipe && split.split_v == 2) {
    for (int64_t c = 0; c < 2; ++c) {
      const ChunkPlace at = chunk_place(schedule, stage, c, pp, 2);
      if (at.position == 0) chunks[size_t(c)].add(probes.dense.embedding);
      if (at.position == at.last) chunks[size_t(c)].add(probes.dense.head);
    }
  } else {
    if (stage == 0) chunks.front().add(probes.dense.embedding);
    if (stage == pp - 1) chunks.back().add(probes.dense.head);
  }
  for (const PieceTime& c : chunks) out.micro_batch.add(c);
  if (schedule == PipelineSchedule::dualpipe) out.micro_batch.scale(0.5);
  return out;
}

size_t CollectiveTimes::CallHash::operator()(const Call& c) const {
  size_t h = std::hash<double>()(c.bytes);
  h = h * 31 + std::hash<int64_t>()(c.n);
  h = h * 31 + size_t(c.op);
  return h * 31 + c.link;
}

size_t CollectiveTimes::link_index(const LinkCost& link) {
  if (m_last_link < m_links.size() && m_links[m_last_link] == link) return m_last_link;
  for (size_t i = 0; i < m_links.size(); ++i)
    if (m_links[i] == link) return m_last_link = i;
  m_links.push_back(link);
  return m_last_link = m_links.size() - 1;
}

double CollectiveTimes::collective_s(CollectiveOp op, double bytes, int64_t n, const LinkCost& link) {
  const Call call{op, bytes, n, link_index(link)};
  if (const auto it = m_seconds.find(call); it != m_seconds.end()) return it->second;
  const double seconds = simrun::collective_s(op, bytes, n, link);
  m_seconds.emplace(call, seconds);
  return seconds;
}

double CollectiveTimes::collective_at_s(CollectiveOp op, double bytes, int64_t n, const LinkCost& link,
                                        double fraction) {
  const double full = collective_s(op, bytes, n, link);
  if (fraction >= 1.0 || n <= 1) return full;
  const double latency = std::min(full, collective_s(op, 1.0, n, link));
  return latency + (full - latency) / fraction;
}

StepTimeEstimator::StepTimeEstimator(const Scenario& sc, const AnalyticOptions& options)
    : m_sc(sc),
      m_model(sc.model),
      m_layout(sc.layout),
      m_options(options),
      m_wo(options.workload),
      m_compute(analytic_compute_model(sc, options)),
      m_schedule(default_schedule(sc.layout)),
      m_v_chunks(sc.layout.pp > 1 ? stage_chunks(m_schedule, sc.layout.virtual_stages) : 1),
      m_interleaved(m_v_chunks > 1 && m_schedule != PipelineSchedule::dualpipe),
      m_v(m_interleaved ? double(m_v_chunks) : 1.0),
      m_p(double(sc.layout.pp)),
      m_dp_n(sc.layout.dp * sc.layout.cp),
      m_expert_dp(sc.layout.expert_dp()),
      m_fsdp_pipeline(sc.layout.zero_stage >= 3 && sc.layout.pp > 1) {
  const Layout& l = m_layout;
  const ClusterSpec& cluster = sc.cluster;
  const EfficiencyDefaults& eff = options.efficiency;
  const std::string& gpu_id = cluster.gpu.id;
  auto link = [&](RankGroup g) {
    return options.calibration.calibrated(gpu_id, group_link(cluster, g, eff));
  };
  m_tp_link = link(rank_group(l, GroupKind::tp));
  auto all_to_all = [&](RankGroup g) {
    return options.calibration.calibrated(gpu_id, all_to_all_link(cluster, g, eff));
  };
  m_cp_link = l.cp_comm_type == CpCommType::a2a       ? all_to_all(rank_group(l, GroupKind::cp))
              : l.cp_comm_type == CpCommType::a2a_p2p ? link(rank_group(l, GroupKind::cp_ring))
                                                      : link(rank_group(l, GroupKind::cp));
  m_cp_a2a_link = all_to_all(rank_group(l, GroupKind::cp_a2a));
  m_ep_link = all_to_all(rank_group(l, GroupKind::ep));
  m_ep_intra_link = all_to_all(rank_group(l, GroupKind::ep_intra));
  m_ep_inter_link = all_to_all(rank_group(l, GroupKind::ep_inter));
  m_dp_link = link(rank_group(l, GroupKind::dp_cp));
  m_expert_dp_link = link(rank_group(l, GroupKind::edp));
  m_pp_link_inside = link(pipeline_pair(cluster, l.tp * l.cp * l.dp, PairPlacement::same_domain));
  m_pp_link_across = link(pipeline_pair(cluster, l.tp * l.cp * l.dp, PairPlacement::across_domains));
  m_out.microbatches = double(std::max<int64_t>(1, l.num_microbatches()));
}

StepTimeEstimate StepTimeEstimator::run() {
  probe_micro_batch_pieces();
  split_into_chunks();
  time_stages();
  time_pipeline_sends();
  time_fsdp_units();
  time_fill_and_drain();
  time_data_parallel();
  charge_overlap_slowdown();
  charge_shared_links();
  fill_breakdown();
  return std::move(m_out);
}

// Each stage's condition: its slowest straggler's slowdown and its slowest link of each class.
// Then one micro-batch of one dense layer and of one MoE layer, the embedding and the head: the
// workload builder's ops and collectives (each probe's two layers of one kind), timed in each
// stage's condition.
void StepTimeEstimator::probe_micro_batch_pieces() {
  const Layout& l = m_layout;
  m_stage_condition.assign(size_t(l.pp), StageCondition{});
  check_stragglers(m_options.stragglers, l.world_size());
  check_slow_links(m_options.slow_links, l.world_size());
  const RankLayout ranks(l, m_sc.cluster.gpus_per_node);
  for (const Straggler& st : m_options.stragglers) {
    double& slowdown = m_stage_condition[size_t(ranks.coord_of(st.rank).pp)].slowdown;
    slowdown = std::max(slowdown, st.slowdown);
  }
  for (const SlowLink& sl : m_options.slow_links)
    m_stage_condition[size_t(ranks.coord_of(sl.rank).pp)].slow_down(sl);
  const bool hierarchical = l.cp_comm_type == CpCommType::a2a_p2p;
  const GroupLinks links{m_tp_link,       l.tp,
                         m_cp_link,       hierarchical ? l.cp_ring() : l.cp,
                         m_cp_a2a_link,   l.cp_a2a(),
                         m_ep_link,       l.ep,
                         m_ep_intra_link, m_ep_inter_link,
                         l.ep_intra(),    l.ep_inter()};
  const int64_t moe_layers = m_model.moe_layers();
  const ProbePrograms programs = probe_programs(m_sc, m_wo, m_compute);
  // Pairing (combined 1F1B, DualPipe): two micro-batches of the MoE slice, the first's backward
  // beside the second's forward, against one after the other.
  std::optional<StageProgram> sequential_pair, paired_pair;
  std::optional<ProgramCost> sequential_cost, paired_cost;
  if (moe_layers > 0 && pairs_forward_and_backward(m_schedule)) {
    Scenario routed = m_sc;
    routed.model.moe->first_dense_layers = 0;
    sequential_pair = probe_two_micro_batches(routed, m_wo, ProbePairing::sequential);
    paired_pair = probe_two_micro_batches(routed, m_wo, ProbePairing::paired);
    sequential_cost = cost_program(*sequential_pair, m_compute);
    paired_cost = cost_program(*paired_pair, m_compute);
  }
  auto exposed_s = [](const ProbeTimes& t) {
    return t.layer[0].exposed_s() + t.layer[1].exposed_s() + t.embedding.exposed_s() + t.head.exposed_s();
  };
  for (const StageCondition& condition : m_stage_condition) {
    if (m_probes.count(condition)) continue;
    Probes& probes = m_probes[condition];
    if (programs.dense)
      probes.dense =
          time_probe(*programs.dense, *programs.dense_cost, links, condition, m_wo.host, m_collectives);
    if (paired_pair) {
      const ProbeTimes sequential =
          time_probe(*sequential_pair, *sequential_cost, links, condition, m_wo.host, m_collectives);
      const ProbeTimes paired =
          time_probe(*paired_pair, *paired_cost, links, condition, m_wo.host, m_collectives);
      probes.paired_saving_per_moe_layer_s =
          std::max(0.0, exposed_s(sequential) - exposed_s(paired)) / double(paired.layers);
    }
    if (programs.moe) {
      probes.moe = time_probe(*programs.moe, *programs.moe_cost, links, condition, m_wo.host, m_collectives);
      if (!programs.dense) {
        probes.dense.embedding = probes.moe.embedding;
        probes.dense.head = probes.moe.head;
      }
    }
    if (programs.dense_bf16)
      probes.dense_bf16 = time_probe(*programs.dense_bf16, *programs.dense_bf16_cost, links, condition,
                                     m_wo.host, m_collectives);
    if (programs.moe_bf16)
      probes.moe_bf16 =
          time_probe(*programs.moe_bf16, *programs.moe_bf16_cost, links, condition, m_wo.host, m_collectives);
  }
  m_kinds = layer_kinds(m_sc);
}

void StepTimeEstimator::split_into_chunks() {
  m_split = split_chunks(m_model.layers, m_layout, m_schedule, m_v_chunks);
}

// Each stage's micro-batch (its chunks' layers, the embedding on the first, the head on the
// last), its optimizer program, DDP buckets and FSDP units; then the slowest.
void StepTimeEstimator::time_stages() {
  const Layout& l = m_layout;
  for (int64_t i = 0; i < l.pp; ++i) {
    StageTime st;
    st.stage = i;
    const StageCondition& condition = m_stage_condition[size_t(i)];
    st.compute_slowdown = condition.slowdown;
    st.scale_up_fraction = condition.scale_up;
    st.scale_out_fraction = condition.scale_out;
    StagePieces pieces = stage_pieces(probes_of(i), m_split, m_kinds, m_schedule, i, l.pp);
    m_chunk_pieces.push_back(std::move(pieces.chunks));
    PieceTime& sum = pieces.micro_batch;
    // Pairing hides EP all-to-alls (paired_saving_s): the stage's share, per micro-batch.
    sum.ep_exposed_s = std::max(0.0, sum.ep_exposed_s - stage_paired_saving_s(i) / m_out.microbatches);
    st.gemm_flops = sum.gemm_flops;
    st.attention_flops = sum.attention_flops;
    st.memory_bytes = sum.hbm_bytes;
    st.forward_s = sum.forward_s;
    st.backward_s = sum.backward_s;
    st.recompute_s = sum.recompute_s;
    st.tp_comm_s = sum.tp_comm_s;
    st.tp_exposed_s = sum.tp_exposed_s;
    st.cp_comm_s = sum.cp_comm_s;
    st.cp_exposed_s = sum.cp_exposed_s;
    st.ep_comm_s = sum.ep_comm_s;
    st.ep_exposed_s = sum.ep_exposed_s;
    st.forward_exposed_s = sum.forward_exposed_s;

    // Optimizer: the stage's own optimizer program (grad-norm, fused Adam, host overhead).
    const StageProgram opt =
        optimizer_program(m_sc, m_wo, m_split.layers_per_chunk, m_split.split_v, i, m_schedule);
    const ProgramCost opt_cost = cost_program(opt, m_compute);
    for (const Task& t : opt.tasks)
      if (t.kind == TaskKind::compute && t.phase == Phase::optimizer)
        st.optimizer_s += opt_cost.of(t).seconds() * condition.slowdown;
    const double optimizer_host_wait = host_waits_s(opt, opt_cost, m_wo.host, condition.slowdown);
    st.optimizer_s += optimizer_host_wait;
    st.host_wait_s = sum.host_wait_s;
    st.host_issue_s = sum.host_issue_s;
    st.optimizer_host_wait_s = optimizer_host_wait;
    for (const Task& t : opt.tasks)
      st.optimizer_host_issue_s += m_wo.host.launch_s * t.host_launches + m_wo.host.sync_s * t.host_syncs;
    m_stage_buckets.push_back(opt.grad_buckets);
    m_stage_units.push_back(opt.fsdp_units);
    m_out.stages.push_back(st);
  }

  m_out.slowest_stage = 0;
  for (const StageTime& st : m_out.stages)
    if (st.compute_s() + mb_exposed(st) > slowest().compute_s() + mb_exposed(slowest()))
      m_out.slowest_stage = st.stage;
  for (const StageTime& st : m_out.stages) m_optimizer_s = std::max(m_optimizer_s, st.optimizer_s);
  m_out.mb_exposed_comm_s = mb_exposed(slowest());
}

void StepTimeEstimator::fill_breakdown() {
  const StageTime& slow = slowest();
  const double microbatches = m_out.microbatches;
  BreakdownReport& b = m_out.breakdown;
  b.stage = m_out.slowest_stage;
  b.forward_s = microbatches * slow.forward_s + m_fwd_slowdown_s;
  b.backward_s = microbatches * slow.backward_s + m_grad_slowdown_s;
  b.recompute_s = microbatches * slow.recompute_s;
  b.optimizer_s = m_optimizer_s;
  b.compute_s = b.forward_s + b.backward_s + b.recompute_s + b.optimizer_s;
  b.tp_comm_s = microbatches * slow.tp_comm_s;
  b.pp_comm_s = 2.0 * m_pp_total_s;  // a middle stage receives as many messages as it sends
  b.dp_comm_s = m_dp_total_s;
  b.cp_comm_s = microbatches * slow.cp_comm_s;
  b.ep_comm_s = microbatches * slow.ep_comm_s;
  b.tp_exposed_s = microbatches * slow.tp_exposed_s + m_tp_shared_s;
  b.cp_exposed_s = microbatches * slow.cp_exposed_s + m_cp_shared_s;
  b.ep_exposed_s = microbatches * slow.ep_exposed_s + m_ep_shared_s;
  // The critical path's pipeline hops (out.pp_exposed_s) beyond the messages a stage receives
  // itself are other stages' sends during fill and drain (fewer micro-batches than stages):
  // the stage idles on the pipeline there, which the event simulation counts as bubble.
  b.pp_exposed_s = std::min(m_out.pp_exposed_s, m_pp_total_s);
  b.dp_exposed_s = m_out.dp_exposed_s;
  b.exposed_comm_s = b.tp_exposed_s + b.cp_exposed_s + b.ep_exposed_s + b.pp_exposed_s + b.dp_exposed_s;
  b.bubble_s = m_out.fill_drain_s + (m_out.pp_exposed_s - b.pp_exposed_s) + m_out.critical_tail_s;
  m_out.pipeline_port_s =
      std::max(0.0, pipeline_port_bound_s() - (b.compute_s + b.exposed_comm_s + b.bubble_s));
  b.bubble_s += m_out.pipeline_port_s;
  // The host issues every task of its rank's step one after another: no stage's step ends before
  // its host has issued all of them. Where that is later (launch-bound), the GPU waited for the
  // host: booked to the forward and backward phases in proportion, as the event simulation books
  // a kernel's wait for the host to its phase.
  double host_floor = 0;
  for (const StageTime& st : m_out.stages)
    host_floor = std::max(host_floor, microbatches * st.host_issue_s + st.optimizer_host_issue_s);
  m_out.host_bound_s = std::max(0.0, host_floor - (b.compute_s + b.exposed_comm_s + b.bubble_s));
  if (m_out.host_bound_s > 0) {
    const double passes = b.forward_s + b.backward_s + b.recompute_s;
    const double forward_share = passes > 0 ? b.forward_s / passes : 1.0;
    b.forward_s += m_out.host_bound_s * forward_share;
    b.backward_s += m_out.host_bound_s * (1.0 - forward_share);
    b.compute_s += m_out.host_bound_s;
  }
  m_out.step_time_s = b.compute_s + b.exposed_comm_s + b.bubble_s;
}

ProbeTimes kernel_times(const StageProgram& prog, const ProgramCost& cost) {
  ProbeTimes out;
  for (const Task& t : prog.tasks) {
    PieceTime* piece = piece_of(out, t);
    if (piece && t.kind == TaskKind::compute) book_compute(*piece, prog, t, cost.of(t).seconds());
  }
  return out;
}

}  // namespace detail

StepTimeEstimate estimate_step_time(const Scenario& sc, const StepFlops& flops,
                                    const AnalyticOptions& options) {
  (void)flops;  // FLOPs come with the workload's ops
  training_peak_flops_per_s(sc);
  return detail::StepTimeEstimator(sc, options).run();
}

}  // namespace simrun
