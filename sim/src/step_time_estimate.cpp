// The closed-form step time (analytic.hpp estimate_step_time; the formulas and their sources
// are in that header's comment): the workload builder's ops of one micro-batch timed on their
// streams, stage by stage, then the pipeline's fill and drain played out, the data-parallel
// traffic and what the compute stream does not hide of it, and the links the groups share.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "simrun/common/error.hpp"
#include "simrun/sim/analytic.hpp"
#include "simrun/sim/collective_cost.hpp"
#include "simrun/sim/rank_layout.hpp"
#include "workload_builder.hpp"

namespace simrun {
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

// Seconds of one micro-batch through one piece of the model (a layer, the embedding, the
// head) on one GPU, from the workload builder's tasks.
struct PieceTime {
  double forward_s = 0, backward_s = 0, recompute_s = 0;        // compute kernels by phase
  double tp_comm_s = 0, cp_comm_s = 0, ep_comm_s = 0;           // collective durations
  double tp_exposed_s = 0, cp_exposed_s = 0, ep_exposed_s = 0;  // compute stream waiting for them
  double forward_exposed_s = 0;  // of those waits, the ones before forward kernels
  double gemm_flops = 0, attention_flops = 0, hbm_bytes = 0;
  double exposed_s() const { return tp_exposed_s + cp_exposed_s + ep_exposed_s; }
  void add(const PieceTime& o) {
    forward_exposed_s += o.forward_exposed_s;
    forward_s += o.forward_s;
    backward_s += o.backward_s;
    recompute_s += o.recompute_s;
    tp_comm_s += o.tp_comm_s;
    cp_comm_s += o.cp_comm_s;
    tp_exposed_s += o.tp_exposed_s;
    cp_exposed_s += o.cp_exposed_s;
    ep_comm_s += o.ep_comm_s;
    ep_exposed_s += o.ep_exposed_s;
    gemm_flops += o.gemm_flops;
    attention_flops += o.attention_flops;
    hbm_bytes += o.hbm_bytes;
  }
};

struct ProbeTimes {
  std::array<PieceTime, 2> layer;  // by layer-id parity
  int64_t layers = 1;              // layers the probe holds (1 or 2)
  PieceTime embedding, head;
};

// One micro-batch of one dense layer and of one MoE layer (each with the embedding and the head).
struct Probes {
  ProbeTimes dense, moe;
};

struct GroupLinks {
  LinkCost tp;
  int64_t tp_size = 1;
  LinkCost cp;
  int64_t cp_size = 1;
  LinkCost ep;
  int64_t ep_size = 1;
};

// Runs the probe's tasks on their streams (a stream runs its tasks in program order; a task
// also waits for its dependencies), with closed-form times (collective_s) for the TP, CP and EP
// collectives and none for the data-parallel ones (timed per step, below). A wait of the compute
// stream is charged to the piece and group of the dependency it waited for last, as the event
// simulation charges it, and counted apart when a forward kernel waited. Compute kernels run
// `slowdown` times longer (a straggler's stage).
ProbeTimes time_probe(const StageProgram& prog, const GroupLinks& links, double slowdown) {
  ProbeTimes out;
  auto piece_of = [&](const Task& t) -> PieceTime* {
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
  };
  std::array<double, kStreamCount> stream_free{};
  std::vector<double> end(prog.tasks.size(), 0.0);
  double compute_free = 0;
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
    const size_t stream = size_t(t.stream);
    const double start = std::max(stream_free[stream], ready);
    double duration = 0;
    PieceTime* piece = piece_of(t);
    if (t.kind == TaskKind::compute) {
      duration = t.duration.seconds() * slowdown;
      if (start > compute_free && blocker != kNoTask) {
        const Task& b = prog.tasks[blocker];
        PieceTime* owner = piece_of(b);
        const double wait = start - compute_free;
        const bool charged =
            owner && b.kind == TaskKind::collective &&
            (b.group == GroupKind::tp || b.group == GroupKind::cp || b.group == GroupKind::ep);
        if (charged) {
          (b.group == GroupKind::tp   ? owner->tp_exposed_s
           : b.group == GroupKind::cp ? owner->cp_exposed_s
                                      : owner->ep_exposed_s) += wait;
          if (t.phase == Phase::forward) owner->forward_exposed_s += wait;
        }
      }
      compute_free = start + duration;
      if (piece) {
        (t.phase == Phase::forward    ? piece->forward_s
         : t.phase == Phase::backward ? piece->backward_s
                                      : piece->recompute_s) += duration;
        if (t.phase != Phase::recompute)  // model FLOPs, as the workload counts them
          (t.op == OpName::attn_core ? piece->attention_flops : piece->gemm_flops) += t.flops;
        piece->hbm_bytes += t.hbm_bytes;
      }
    } else if (t.kind == TaskKind::collective && t.group == GroupKind::tp) {
      duration = collective_s(t.coll, t.comm_bytes, links.tp_size, links.tp);
      if (piece) piece->tp_comm_s += duration;
    } else if (t.kind == TaskKind::collective && t.group == GroupKind::cp) {
      duration = collective_s(t.coll, t.comm_bytes, links.cp_size, links.cp);
      if (piece) piece->cp_comm_s += duration;
    } else if (t.kind == TaskKind::collective && t.group == GroupKind::ep) {
      duration = collective_s(t.coll, t.comm_bytes, links.ep_size, links.ep);
      if (piece) piece->ep_comm_s += duration;
    }
    end[i] = start + duration;
    stream_free[stream] = end[i];
  }
  return out;
}

// ZeRO-3 / FSDP traffic of one unit (a layer, the embedding, the head), one call each way (two
// where it holds routed experts: one over DP, one over expert-DP), or of a stage's units summed.
struct UnitTraffic {
  double gather_s = 0, reduce_s = 0;
  // Of those, the calls' fixed latency (a 1-byte call's time, as the event splits a collective
  // into latency and bytes on the links): transfers on two streams overlap it.
  double gather_latency_s = 0, reduce_latency_s = 0;
  void add(const UnitTraffic& o) {
    gather_s += o.gather_s;
    reduce_s += o.reduce_s;
    gather_latency_s += o.gather_latency_s;
    reduce_latency_s += o.reduce_latency_s;
  }
};

// Megatron DDP bucket of the ZeRO 0-2 gradient reduction, with its traffic.
struct TimedBucket {
  StageProgram::GradBucketSize size;
  double grad_s = 0, param_s = 0;
};

// One chunk of one micro-batch on one stage, as the pipeline schedule plays it.
struct ChunkStep {
  double forward_s = 0, forward_exposed_s = 0, backward_s = 0, backward_exposed_s = 0;
};

// The closed-form step time of analytic.hpp, phase by phase: run() calls each phase once, in
// the order they are declared (time_data_parallel ends in one of the two expose_*), and each
// reads what the phases before it set.
class StepTimeEstimator {
 public:
  StepTimeEstimator(const Scenario& sc, const AnalyticOptions& options);
  StepTimeEstimate run();

 private:
  // Phases.
  void probe_micro_batch_pieces();
  void split_into_chunks();
  void time_stages();
  void time_pipeline_sends();
  void time_fsdp_units();
  void time_fill_and_drain();
  void time_data_parallel();
  void expose_fsdp_traffic();
  void expose_ddp_traffic(const std::vector<TimedBucket>& buckets);
  void charge_overlap_slowdown();
  void charge_shared_links();
  void fill_breakdown();

  // The pieces they share.
  const StageTime& slowest() const { return m_out.stages[size_t(m_out.slowest_stage)]; }
  static double mb_exposed(const StageTime& st) {
    return st.tp_exposed_s + st.cp_exposed_s + st.ep_exposed_s;
  }
  double reduce_s(double params, int64_t n, const LinkCost& link) const;
  double gather_s(double params, int64_t n, const LinkCost& link) const;
  double beside_traffic_s(double compute_s, double traffic_s) const;
  const Probes& probes_of(int64_t stage) const { return m_probes.at(m_stage_slowdown[size_t(stage)]); }
  const PieceTime& unit_piece(const StageProgram::FsdpUnit& u, int64_t stage) const;
  std::vector<double> gathered_forward_spans(int64_t stage, bool opens_step, bool slowed) const;
  double first_forward_s(const StageTime& st) const;
  double last_backward_s(const StageTime& st) const;
  double fsdp_reduce_tail_s(const StageTime& st) const;
  std::optional<double> makespan(double hop_s, std::vector<double>* stage_ends = nullptr) const;
  std::pair<double, double> ddp_chunk_windows(const StageTime& st, double grad_s, double param_s) const;
  double ddp_grad_tail_s(const std::vector<TimedBucket>& buckets, const StageTime& st) const;

  const Scenario& m_sc;
  const ModelSpec& m_model;
  const Layout& m_layout;
  const AnalyticOptions& m_options;
  const WorkloadOptions& m_wo;
  const ComputeModel m_compute;
  const PipelineSchedule m_schedule;
  const int64_t m_v_chunks;  // chunks per stage the schedule plays (virtual stages, interleaved)
  const double m_v, m_p;     // as doubles: chunks per stage, stages
  const int64_t m_dp_n;      // the DP traffic's group: dp·cp
  const int64_t m_expert_dp;
  const bool m_fsdp_pipeline;  // ZeRO-3 with pp > 1 (torchtitan)

  // Links of the process groups (Megatron order tp-cp-ep-dp-pp), with calibration α/β.
  LinkCost m_tp_link, m_cp_link, m_ep_link, m_dp_link, m_expert_dp_link, m_pp_link;

  // Each stage's compute slowdown (its slowest straggler's, 1 for none), and one micro-batch of
  // one dense layer and of one MoE layer, the embedding and the head, at each slowdown.
  std::vector<double> m_stage_slowdown;
  std::map<double, Probes> m_probes;
  int64_t m_first_moe = 0;  // the first MoE layer's id (layers when there is none)

  // Layers per chunk, [stage·split_v + chunk], as the workload splits them, and each chunk's first.
  std::vector<int64_t> m_layers_per_chunk, m_first_layer;
  int64_t m_split_v = 1;

  std::vector<std::vector<PieceTime>> m_chunk_pieces;                      // [stage][chunk], per micro-batch
  std::vector<std::vector<StageProgram::GradBucketSize>> m_stage_buckets;  // Megatron DDP's, ZeRO 0-2
  std::vector<std::vector<StageProgram::FsdpUnit>> m_stage_units;          // FSDP's, ZeRO-3
  double m_optimizer_s = 0;

  double m_pp_total_s = 0, m_pp_overlapped_s = 0;

  std::vector<std::vector<UnitTraffic>> m_unit_traffic;  // [stage][unit]
  std::vector<UnitTraffic> m_stage_traffic;              // [stage]: its units' traffic summed
  UnitTraffic m_first_layer_traffic;  // the first stage's first layer (after the embedding)
  std::vector<std::vector<double>> m_first_forward_spans;  // [stage][chunk], FSDP over a pipeline
  std::vector<double> m_stage_reduce_traffic_s;            // [stage]: beside its last backward

  std::vector<std::vector<ChunkStep>> m_chunk_steps;  // [stage][chunk]
  // [stage]: when its last backward and its optimizer end on the compute path, less the longest
  // optimizer (which the compute term holds); pp > 1.
  std::vector<double> m_stage_path_end;

  double m_dp_total_s = 0, m_grad_overlapped_s = 0, m_param_overlapped_s = 0;
  double m_dp_busy_s = 0;  // ZeRO-3: the time its streams are busy, traffic on two at once counted once
  double m_fwd_slowdown_s = 0, m_grad_slowdown_s = 0;
  double m_tp_shared_s = 0, m_cp_shared_s = 0, m_ep_shared_s = 0;

  StepTimeEstimate m_out;
};

StepTimeEstimator::StepTimeEstimator(const Scenario& sc, const AnalyticOptions& options)
    : m_sc(sc),
      m_model(sc.model),
      m_layout(sc.layout),
      m_options(options),
      m_wo(options.workload),
      m_compute(analytic_compute_model(sc, options)),
      m_schedule(options.schedule.value_or(default_schedule(sc.layout))),
      m_v_chunks((m_schedule == PipelineSchedule::interleaved && sc.layout.pp > 1)
                     ? std::max<int64_t>(1, sc.layout.virtual_stages)
                     : 1),
      m_v(double(m_v_chunks)),
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
  m_tp_link = link({l.tp, 1});
  m_cp_link = link({l.cp, l.tp});
  m_ep_link = options.calibration.calibrated(gpu_id, all_to_all_link(cluster, {l.ep, l.expert_tp}, eff));
  m_dp_link = link({l.dp * l.cp, l.tp});
  m_expert_dp_link = link({m_expert_dp, l.expert_tp * l.ep});
  m_pp_link = link({2, l.tp * l.cp * l.dp});
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

// Each stage's slowdown: its slowest straggler's. Then one micro-batch of one dense layer and
// of one MoE layer, the embedding and the head: the workload builder's ops and collectives (each
// probe's two layers of one kind), timed at each stage's slowdown.
void StepTimeEstimator::probe_micro_batch_pieces() {
  const Layout& l = m_layout;
  m_stage_slowdown.assign(size_t(l.pp), 1.0);
  if (!m_options.stragglers.empty()) {
    check_stragglers(m_options.stragglers, l.world_size());
    const RankLayout ranks(l, m_sc.cluster.gpus_per_node);
    for (const Straggler& st : m_options.stragglers) {
      double& slowdown = m_stage_slowdown[size_t(ranks.coord_of(st.rank).pp)];
      slowdown = std::max(slowdown, st.slowdown);
    }
  }
  const GroupLinks links{m_tp_link, l.tp, m_cp_link, l.cp, m_ep_link, l.ep};
  const int64_t dense_layers = m_model.dense_layers();
  const int64_t moe_layers = m_model.moe_layers();
  std::optional<StageProgram> dense_program, moe_program;
  if (dense_layers > 0 || moe_layers == 0) {
    Scenario dense = m_sc;
    dense.model.moe.reset();
    dense_program = probe_micro_batch(dense, m_compute, m_wo);
  }
  if (moe_layers > 0) {
    Scenario routed = m_sc;
    routed.model.moe->first_dense_layers = 0;
    moe_program = probe_micro_batch(routed, m_compute, m_wo);
  }
  for (const double slowdown : m_stage_slowdown) {
    if (m_probes.count(slowdown)) continue;
    Probes& probes = m_probes[slowdown];
    if (dense_program) probes.dense = time_probe(*dense_program, links, slowdown);
    if (moe_program) {
      probes.moe = time_probe(*moe_program, links, slowdown);
      if (!dense_program) {
        probes.dense.embedding = probes.moe.embedding;
        probes.dense.head = probes.moe.head;
      }
    }
  }
  m_first_moe = m_model.is_moe() ? m_model.moe->first_dense_layers : m_model.layers;
}

// Layers per stage as the workload splits them (pipeline_split); where that split cannot be
// made (the event simulation refuses the layout) the memory model's near-even split.
void StepTimeEstimator::split_into_chunks() {
  const Layout& l = m_layout;
  m_split_v = m_v_chunks;
  try {
    m_layers_per_chunk = split_layers(m_model.layers, l.pp, m_split_v, l.pipeline_split, m_sc.file);
  } catch (const InputError&) {
    m_split_v = 1;
    m_layers_per_chunk = layers_per_stage(m_model.layers, l.pp);
  }
  m_first_layer.assign(m_layers_per_chunk.size(), 0);
  for (int64_t vs = 0, next = 0; vs < l.pp * m_split_v; ++vs) {  // virtual stage vs = chunk·pp + stage
    const size_t idx = size_t((vs % l.pp) * m_split_v + vs / l.pp);
    m_first_layer[idx] = next;
    next += m_layers_per_chunk[idx];
  }
}

// Each stage's micro-batch (its chunks' layers, the embedding on the first, the head on the
// last), its optimizer program, DDP buckets and FSDP units; then the slowest.
void StepTimeEstimator::time_stages() {
  const Layout& l = m_layout;
  for (int64_t i = 0; i < l.pp; ++i) {
    StageTime st;
    st.stage = i;
    st.compute_slowdown = m_stage_slowdown[size_t(i)];
    std::vector<PieceTime>& chunks = m_chunk_pieces.emplace_back(size_t(m_split_v));
    const Probes& probes = probes_of(i);
    for (int64_t c = 0; c < m_split_v; ++c) {
      const size_t idx = size_t(i * m_split_v + c);
      for (int64_t k = 0; k < m_layers_per_chunk[idx]; ++k) {
        const int64_t id = m_first_layer[idx] + k;
        const ProbeTimes& probe = id >= m_first_moe ? probes.moe : probes.dense;
        chunks[size_t(c)].add(probe.layer[size_t(std::min<int64_t>(id % 2, probe.layers - 1))]);
      }
    }
    if (i == 0) chunks.front().add(probes.dense.embedding);
    if (i == l.pp - 1) chunks.back().add(probes.dense.head);
    PieceTime sum;
    for (const PieceTime& c : chunks) sum.add(c);
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
    const StageProgram opt = optimizer_program(m_sc, m_compute, m_wo, m_layers_per_chunk, m_split_v, i);
    for (const Task& t : opt.tasks)
      if (t.kind == TaskKind::compute && t.phase == Phase::optimizer)
        st.optimizer_s += t.duration.seconds() * m_stage_slowdown[size_t(i)];
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

// Pipeline sends: 1/tp of the stage output each (Megatron's scatter-gather, as the workload
// sends it).
void StepTimeEstimator::time_pipeline_sends() {
  const Layout& l = m_layout;
  if (l.pp <= 1) return;
  const double tokens_mb = double(l.micro_batch) * double(m_model.seq_len) / double(l.cp);  // per GPU
  const double send_bytes =
      tokens_mb * double(m_model.hidden) * activation_element_bytes(l.precision) / double(l.tp);
  m_out.pp_send_s = send_recv_s(send_bytes, m_pp_link);
  m_pp_total_s = 2.0 * m_out.microbatches * m_v * m_out.pp_send_s;
}

// Data parallel: the biggest stage's local gradients and weights, in the workload's element
// sizes (gradients as reduced, weights as gathered).
double StepTimeEstimator::reduce_s(double params, int64_t n, const LinkCost& link) const {
  const double bytes = params * m_wo.grad_reduce_bytes;
  return collective_s(m_layout.zero_stage == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter,
                      bytes, n, link);
}

double StepTimeEstimator::gather_s(double params, int64_t n, const LinkCost& link) const {
  return m_layout.zero_stage >= 1
             ? collective_s(CollectiveOp::all_gather, params * activation_element_bytes(m_layout.precision),
                            n, link)
             : 0.0;
}

// Compute beside DP traffic pays overlap_slowdown on the overlap.
double StepTimeEstimator::beside_traffic_s(double compute_s, double traffic_s) const {
  return compute_s + m_options.overlap_slowdown * std::min(traffic_s, compute_s);
}

const PieceTime& StepTimeEstimator::unit_piece(const StageProgram::FsdpUnit& u, int64_t stage) const {
  const Probes& probes = probes_of(stage);
  if (u.unit == -1) return probes.dense.embedding;
  if (u.unit == -2) return probes.dense.head;
  const ProbeTimes& probe = u.unit >= m_first_moe ? probes.moe : probes.dense;
  return probe.layer[size_t(std::min<int64_t>(u.unit % 2, probe.layers - 1))];
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
    std::map<std::pair<double, double>, UnitTraffic> timed;
    for (int64_t i = 0; i < l.pp; ++i)
      for (const StageProgram::FsdpUnit& u : m_stage_units[size_t(i)]) {
        const auto key = std::pair{u.params, u.expert_params};
        auto it = timed.find(key);
        if (it == timed.end()) {
          const double dense = u.params - u.expert_params;
          auto latency = [](CollectiveOp op, double params, int64_t n, const LinkCost& link) {
            return params > 0 ? collective_s(op, 1.0, n, link) : 0.0;
          };
          const UnitTraffic t{
              gather_s(dense, m_dp_n, m_dp_link) + gather_s(u.expert_params, m_expert_dp, m_expert_dp_link),
              reduce_s(dense, m_dp_n, m_dp_link) + reduce_s(u.expert_params, m_expert_dp, m_expert_dp_link),
              latency(CollectiveOp::all_gather, dense, m_dp_n, m_dp_link) +
                  latency(CollectiveOp::all_gather, u.expert_params, m_expert_dp, m_expert_dp_link),
              latency(CollectiveOp::reduce_scatter, dense, m_dp_n, m_dp_link) +
                  latency(CollectiveOp::reduce_scatter, u.expert_params, m_expert_dp, m_expert_dp_link)};
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
      m_first_forward_spans.push_back(gathered_forward_spans(i, i == 0, true));

  // Timed once per stage: the schedule asks for each last backward twice per chunk.
  m_stage_reduce_traffic_s.assign(size_t(l.pp), 0.0);
  for (int64_t i = 0; i < l.pp; ++i) {
    if (l.zero_stage >= 3) {
      m_stage_reduce_traffic_s[size_t(i)] = m_stage_traffic[size_t(i)].reduce_s;
    } else if (m_wo.grad_reduce == GradReduceOverlap::bucketed) {
      for (const StageProgram::GradBucketSize& b : m_stage_buckets[size_t(i)])
        m_stage_reduce_traffic_s[size_t(i)] += b.experts ? reduce_s(b.params, m_expert_dp, m_expert_dp_link)
                                                         : reduce_s(b.params, m_dp_n, m_dp_link);
    }
  }
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
// span. `opens_step`: the stage's first unit waits for its gather too (the step's first
// forward on the first stage); `slowed`: compute beside a gather pays overlap_slowdown.
std::vector<double> StepTimeEstimator::gathered_forward_spans(int64_t stage, bool opens_step,
                                                              bool slowed) const {
  std::vector<double> spans(size_t(m_split_v), 0.0);
  const std::vector<StageProgram::FsdpUnit>& units = m_stage_units[size_t(stage)];
  const std::vector<UnitTraffic>& traffic = m_unit_traffic[size_t(stage)];
  std::vector<double> starts;  // the chunk's units' start times, from the chunk's start
  double gather_end = 0, compute_end = 0;
  for (size_t k = 0; k < units.size(); ++k) {
    const StageProgram::FsdpUnit& u = units[k];
    if (k == 0 || units[k - 1].chunk != u.chunk) {
      starts.clear();
      gather_end = opens_step && k == 0 ? traffic[k].gather_s : 0.0;
      compute_end = 0;
    } else {
      const int64_t trigger = int64_t(starts.size()) - m_wo.fsdp_prefetch_layers;
      const double issue = u.unit >= 0 && trigger >= 0 ? starts[size_t(trigger)] : 0.0;
      gather_end = std::max(gather_end, issue) + traffic[k].gather_s;
    }
    const double start = std::max(compute_end, gather_end);
    starts.push_back(start);
    const bool next_in_chunk = k + 1 < units.size() && units[k + 1].chunk == u.chunk;
    const double beside_s = slowed && next_in_chunk ? traffic[k + 1].gather_s : 0.0;
    const PieceTime& piece = unit_piece(u, stage);
    compute_end = start + beside_traffic_s(piece.forward_s, beside_s) + piece.forward_exposed_s;
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

// Fill and drain: Megatron's schedule played out (detail::schedule_finish_times) with each
// chunk-step at its chunk's time per micro-batch, exposed TP/CP/EP waits included, and FSDP's
// first forward and last backward of a stage stretched as above; the bubble is what the longest
// path adds to the slowest stage's own work. Equal stages give Narayanan's (p−1)/v · t; a
// heavier last stage (logits and loss) waits for the lighter stages' times, not its own, and
// interleaved, also for its chunks' round trips through them.
// Played out twice when interleaved: the compute alone, and with each message between stages
// delaying the chunk-step that waits for it (sent asynchronously, overlap_p2p_comm); what the
// messages add to the longest path is the pipeline's exposed communication. Plain 1F1B
// exchanges its messages blocking, in pairs (send_forward_recv_backward), so a stage's own
// 2m and the fill and drain's 2(p−1) sit on the path: 2(m + p − 1) sends.
std::optional<double> StepTimeEstimator::makespan(double hop_s, std::vector<double>* stage_ends) const {
  const Layout& l = m_layout;
  const int64_t last_micro_batch = std::max<int64_t>(1, l.num_microbatches()) - 1;
  auto stretch = [](double stretched, double plain) { return plain > 0 ? stretched / plain : 1.0; };
  const auto finish = detail::schedule_finish_times(
      m_schedule, l.pp, last_micro_batch + 1, m_v_chunks,
      [&](int64_t stage, const detail::Slot& slot) {
        const StageTime& st = m_out.stages[size_t(stage)];
        const ChunkStep& c = m_chunk_steps[size_t(stage)][size_t(slot.chunk)];
        if (slot.forward && slot.micro_batch == 0 && m_fsdp_pipeline) {
          const std::vector<double>& spans = m_first_forward_spans[size_t(stage)];
          return m_split_v == m_v_chunks ? spans[size_t(slot.chunk)]
                                         : std::accumulate(spans.begin(), spans.end(), 0.0) / m_v;
        }
        if (slot.forward) return c.forward_s + c.forward_exposed_s;
        const double b = slot.micro_batch == last_micro_batch
                             ? stretch(last_backward_s(st), st.backward_s + st.recompute_s)
                             : 1.0;
        return c.backward_s * b + c.backward_exposed_s;
      },
      hop_s);
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
    if (m_split_v == m_v_chunks) {
      for (const PieceTime& c : chunks) steps.push_back(step_of(c, 1.0));
    } else {  // the split cannot be made (the event refuses the layout): 1/v of the stage each
      PieceTime whole;
      for (const PieceTime& c : chunks) whole.add(c);
      steps.assign(size_t(m_v_chunks), step_of(whole, 1.0 / m_v));
    }
  }
  const StageTime& slow = slowest();
  const std::optional<double> compute_path = l.pp > 1 ? makespan(0.0, &m_stage_path_end) : std::nullopt;
  m_out.fill_drain_s = 0;
  if (l.pp > 1 && m_v_chunks == 1)
    m_out.pp_exposed_s = 2.0 * (m_out.microbatches + m_p - 1.0) * m_out.pp_send_s;
  if (l.pp == 1) {
    // One stage: nothing to fill or drain.
  } else if (compute_path) {
    const double slow_own = m_out.microbatches * (slow.compute_s() + mb_exposed(slow)) +
                            (first_forward_s(slow) - slow.forward_s) +
                            (last_backward_s(slow) - slow.backward_s - slow.recompute_s);
    m_out.fill_drain_s = std::max(0.0, *compute_path - slow_own);
    if (l.pp > 1 && m_v_chunks > 1)
      m_out.pp_exposed_s = std::max(0.0, *makespan(m_out.pp_send_s) - *compute_path);
  } else {
    // Megatron's order deadlocks (the event refuses the layout): one pass through every other
    // stage, 1/v of it per chunk.
    for (const StageTime& st : m_out.stages)
      if (st.stage != m_out.slowest_stage)
        m_out.fill_drain_s += (first_forward_s(st) + last_backward_s(st) + mb_exposed(st)) / m_v;
    if (m_v_chunks > 1) m_out.pp_exposed_s = 2.0 * (m_p - 1.0) * m_out.pp_send_s;
  }
  if (m_v > 1) m_pp_overlapped_s = std::max(0.0, m_pp_total_s - m_out.pp_exposed_s);
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
    m_out.dp_grad_s = passes * grad_s;
    m_out.dp_param_s = passes * (l.pp > 1 ? 1.0 : 2.0) * param_s;
    m_dp_total_s = m_out.dp_grad_s + m_out.dp_param_s;
    m_dp_busy_s = m_dp_total_s;
    expose_fsdp_traffic();
    return;
  }
  // ZeRO 0-2: Megatron's DDP reduces (and the distributed optimizer gathers) bucket by bucket,
  // one call each, as the workload plans them; the stage with the most traffic sets the pace.
  std::vector<TimedBucket> buckets;                   // of the stage with the most DP traffic
  std::vector<std::vector<TimedBucket>> all_buckets;  // [stage]
  for (const auto& stage : m_stage_buckets) {
    std::vector<TimedBucket> timed;
    double stage_grad = 0, stage_param = 0;
    for (const StageProgram::GradBucketSize& b : stage) {
      const int64_t n = b.experts ? m_expert_dp : m_dp_n;
      const LinkCost& lk = b.experts ? m_expert_dp_link : m_dp_link;
      timed.push_back({b, reduce_s(b.params, n, lk), gather_s(b.params, n, lk)});
      stage_grad += timed.back().grad_s;
      stage_param += timed.back().param_s;
    }
    if (stage_grad + stage_param > grad_s + param_s) {
      grad_s = stage_grad;
      param_s = stage_param;
      buckets = timed;
    }
    all_buckets.push_back(std::move(timed));
  }
  m_out.dp_grad_s = grad_s;
  m_out.dp_param_s = param_s;
  m_out.dp_calls = int64_t(buckets.size());
  m_dp_total_s = grad_s + param_s;
  expose_ddp_traffic(buckets);
  // Over a pipeline the step ends with the stage whose last backward, optimizer and own
  // gradient tail end last, which need not be the slowest stage (stage 0 after the drain, or
  // any stage beside a straggler's).
  if (!m_stage_path_end.empty()) {
    double path = -std::numeric_limits<double>::infinity(), critical = path;
    for (int64_t i = 0; i < l.pp; ++i) {
      path = std::max(path, m_stage_path_end[size_t(i)]);
      critical = std::max(critical, m_stage_path_end[size_t(i)] +
                                        ddp_grad_tail_s(all_buckets[size_t(i)], m_out.stages[size_t(i)]));
    }
    m_out.critical_tail_s = critical - (path + (grad_s - m_grad_overlapped_s));
  }
}

// A stage's reduce-scatters beyond its last backward, FSDP over a pipeline. They queue on one
// stream, each unit's once the last micro-batch's backward has passed it: chunk c's last
// backward ends c·p chunk-steps before the stage's last (the cool-down runs the chunks down to
// 0), its units in reverse, evenly over it.
double StepTimeEstimator::fsdp_reduce_tail_s(const StageTime& st) const {
  const std::vector<StageProgram::FsdpUnit>& units = m_stage_units[size_t(st.stage)];
  const double chunk_backward = last_backward_s(st) / double(m_split_v);
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
    m_out.dp_exposed_s = first_forward_s(slow) - slow.forward_s + tail;
  } else {
    // Prefetch hides the rest behind compute, but not each micro-batch's forward waits on its
    // gathers, played out unit by unit as above (the step's first opening with the embedding's
    // gather; a later one's embedding gathered during the backward before it, its first
    // layer's issued once its forward starts), nor the embedding's reduce-scatter after the
    // last backward.
    const std::vector<UnitTraffic>& first_units = m_unit_traffic.front();
    const UnitTraffic embedding = first_units.empty() ? UnitTraffic{} : first_units.front();
    auto forward_waits_s = [&](bool opens_step) {
      const std::vector<double> spans = gathered_forward_spans(0, opens_step, false);
      return std::max(
          0.0, std::accumulate(spans.begin(), spans.end(), 0.0) - slow.forward_s - slow.forward_exposed_s);
    };
    const double unhidden =
        forward_waits_s(true) + (microbatches - 1.0) * forward_waits_s(false) + embedding.reduce_s;
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

// The share of its chunk's layers the backward has passed when each bucket is ready, counted
// apart for the dense and the expert buckets (each list covers the chunk's layers once).
std::vector<double> passed_shares(const std::vector<TimedBucket>& buckets) {
  std::map<std::pair<int64_t, bool>, int64_t> chunk_layers, seen;
  for (const TimedBucket& b : buckets) chunk_layers[{b.size.chunk, b.size.experts}] += b.size.layers;
  std::vector<double> passed(buckets.size(), 1.0);
  for (size_t i = 0; i < buckets.size(); ++i) {
    const std::pair<int64_t, bool> key{buckets[i].size.chunk, buckets[i].size.experts};
    seen[key] += buckets[i].size.layers;
    if (chunk_layers[key] > 0) passed[i] = double(seen[key]) / double(chunk_layers[key]);
  }
  return passed;
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
  if (m_wo.grad_reduce != GradReduceOverlap::bucketed) return grad_s;
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
// reductions' tail as above, on the slowest stage's windows. The weight gathers mirror it:
// issued one after another from the step's start, chunk c's first forward starting c·p
// chunk-steps in, each bucket needed when the forward reaches its first layer, every wait
// delaying the rest. With v = 1: the last backward's and the first forward's windows.
void StepTimeEstimator::expose_ddp_traffic(const std::vector<TimedBucket>& buckets) {
  const StageTime& slow = slowest();
  const double grad_s = m_out.dp_grad_s, param_s = m_out.dp_param_s;
  const double p = m_p;
  const double forward_chunk = ddp_chunk_windows(slow, grad_s, param_s).first;
  const std::vector<double> passed = passed_shares(buckets);
  const double grad_exposed = ddp_grad_tail_s(buckets, slow);
  double param_exposed = param_s;
  if (m_wo.param_gather == ParamGatherOverlap::next_forward) {
    // Forward order: chunk by chunk, each chunk's buckets (dense and expert alike) by the point
    // the forward needs them.
    std::vector<size_t> order(buckets.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = buckets.size() - 1 - i;  // list reversed
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (buckets[a].size.chunk != buckets[b].size.chunk)
        return buckets[a].size.chunk < buckets[b].size.chunk;
      return 1.0 - passed[a] < 1.0 - passed[b];
    });
    double end = 0, delay = 0;  // 0 = the step's first forward starts
    for (const size_t i : order) {
      end += buckets[i].param_s;
      const double needed =
          double(buckets[i].size.chunk) * p * forward_chunk + forward_chunk * (1.0 - passed[i]) + delay;
      delay += std::max(0.0, end - needed);
    }
    param_exposed = std::min(delay, param_s);
  }
  m_out.dp_exposed_s = grad_exposed + param_exposed;
  m_grad_overlapped_s = grad_s - grad_exposed;
  m_param_overlapped_s = param_s - param_exposed;
}

// Compute running beside DP or PP NCCL kernels is slower (their SMs and HBM traffic), as the
// event charges it: the compute kernels in the overlapped time, which hides behind the compute
// stream's span, waits for TP/CP/EP collectives included, so compute's share of that span.
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
  m_grad_slowdown_s = m_options.overlap_slowdown * backward_share * m_grad_overlapped_s;
  m_fwd_slowdown_s = m_options.overlap_slowdown * forward_share * (m_param_overlapped_s + m_pp_overlapped_s);
  m_out.overlap_slowdown_s = m_grad_slowdown_s + m_fwd_slowdown_s;
}

// A TP, CP or EP collective that meets the DP traffic running beside it on the same link gets
// half of that link while the two overlap (max-min fair, both bound there): its waits grow by
// the share of the compute stream's span the DP traffic runs. The same link: both groups
// across domains (this GPU's NIC), both inside an NVSwitch domain (its switch port), or on a
// full mesh a link to a peer in both. One across and one inside share only a ring's hop or
// PXN's, at the slower one's rate: not counted.
void StepTimeEstimator::charge_shared_links() {
  const Layout& l = m_layout;
  const StageTime& slow = slowest();
  const double microbatches = m_out.microbatches;
  const double span_s = microbatches * (slow.compute_s() + mb_exposed(slow));
  const double dp_busy =
      span_s > 0 ? std::min(1.0, (m_grad_overlapped_s + m_param_overlapped_s) / span_s) : 0.0;
  const RankGroup dp_group{m_dp_n, l.tp};
  auto shares_with_dp = [&](const LinkCost& lk, RankGroup g) {
    if (g.size <= 1 || dp_group.size <= 1 || dp_busy <= 0) return false;
    const bool across = lk.link_class == LinkClass::scale_out;
    if (across != (m_dp_link.link_class == LinkClass::scale_out)) return false;
    if (across || m_sc.cluster.gpu.scale_up_kind != ScaleUpKind::mesh) return true;
    // A common peer: the least common multiple of the strides, inside both groups.
    const int64_t common = std::lcm(g.stride, dp_group.stride);
    return common / g.stride < g.size && common / dp_group.stride < dp_group.size;
  };
  if (shares_with_dp(m_tp_link, {l.tp, 1})) m_tp_shared_s = dp_busy * microbatches * slow.tp_exposed_s;
  if (shares_with_dp(m_cp_link, {l.cp, l.tp})) m_cp_shared_s = dp_busy * microbatches * slow.cp_exposed_s;
  if (shares_with_dp(m_ep_link, {l.ep, l.expert_tp}))
    m_ep_shared_s = dp_busy * microbatches * slow.ep_exposed_s;
  m_out.shared_link_s = m_tp_shared_s + m_cp_shared_s + m_ep_shared_s;
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
  m_out.step_time_s = b.compute_s + b.exposed_comm_s + b.bubble_s;
}

}  // namespace

StepTimeEstimate estimate_step_time(const Scenario& sc, const StepFlops& flops,
                                    const AnalyticOptions& options) {
  (void)flops;  // FLOPs come with the workload's ops
  training_peak_flops_per_s(sc);
  return StepTimeEstimator(sc, options).run();
}

}  // namespace simrun
