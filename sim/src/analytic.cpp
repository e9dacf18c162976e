// The analytic model: FLOPs, step time, memory and run totals of one layout; formulas and
// sources in analytic.hpp (time), memory_model.hpp (memory), run_cost.hpp (run totals) and
// collective_cost.hpp (collectives).
#include "simrun/sim/analytic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "explain.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/collective_cost.hpp"
#include "simrun/sim/simulate.hpp"
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

double checked_peak(const Scenario& s, Precision p) {
  const double peak = s.cluster.gpu.peak_flops_per_s(p);
  if (!(peak > 0))
    throw InputError(s.file, "layout.precision",
                     fmt::format("{} has no dense {} peak (use a precision it supports, e.g. bf16)",
                                 s.cluster.gpu.id, to_string(p)));
  return peak;
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
// simulation charges it, and counted apart when a forward kernel waited.
ProbeTimes time_probe(const StageProgram& prog, const GroupLinks& links) {
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
      duration = t.duration.seconds();
      if (start > compute_free && blocker != kNoTask) {
        const Task& b = prog.tasks[blocker];
        PieceTime* owner = piece_of(b);
        const double wait = start - compute_free;
        const bool charged = owner && b.kind == TaskKind::collective &&
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

}  // namespace

const char* flop_convention_text(AttentionFlops convention) {
  return convention == AttentionFlops::causal
             ? "Megatron-LM num_floating_point_operations, causal (attention s^2 term halved; HEAD after "
               "8873b55d6a); "
               "MFU vs dense peak of the training precision; HFU adds recompute"
             : "Megatron-LM core_r0.8 num_floating_point_operations, non-causal (full attention s^2 term); "
               "MFU vs dense peak of the training precision; HFU adds recompute";
}

StepFlops step_flops(const ModelSpec& m, const Layout& layout, AttentionFlops convention) {
  StepFlops f;
  f.per_sequence = count_flops_per_sequence(m, convention);
  const double batch = double(layout.global_batch);
  f.model = f.per_sequence.total() * batch;
  switch (layout.recompute) {
    case Recompute::none:
      f.recompute = 0;
      break;
    // One more forward (⅓ of fwd+bwd) of the transformer layers; the logits are not recomputed.
    case Recompute::full:
      f.recompute = (f.per_sequence.dense_gemms + f.per_sequence.attention_core) / 3.0 * batch;
      break;
    case Recompute::selective:
      f.recompute = f.per_sequence.attention_core / 3.0 * batch;
      break;
  }
  f.hardware = f.model + f.recompute;
  return f;
}

StepTimeEstimate estimate_step_time(const Scenario& sc, const StepFlops& flops,
                                    const AnalyticOptions& options) {
  (void)flops;  // FLOPs come with the workload's ops
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  const ClusterSpec& cluster = sc.cluster;
  const EfficiencyDefaults& eff = options.efficiency;
  const WorkloadOptions& wo = options.workload;
  checked_peak(sc, l.precision);
  const ComputeModel compute = analytic_compute_model(sc, options);

  const double tp = double(l.tp);
  const double p = double(l.pp);
  const PipelineSchedule schedule = options.schedule.value_or(default_schedule(l));
  const int64_t v_chunks =
      (schedule == PipelineSchedule::interleaved && l.pp > 1) ? std::max<int64_t>(1, l.virtual_stages) : 1;
  const double v = double(v_chunks);
  const double e = activation_element_bytes(l.precision);
  const double tokens_mb = double(l.micro_batch) * double(m.seq_len) / double(l.cp);  // per GPU

  StepTimeEstimate out;
  out.microbatches = double(std::max<int64_t>(1, l.num_microbatches()));
  const double microbatches = out.microbatches;

  // Links of the process groups (Megatron order tp-cp-ep-dp-pp), with calibration α/β.
  const std::string& gpu_id = cluster.gpu.id;
  auto link = [&](RankGroup g) {
    return options.calibration.calibrated(gpu_id, group_link(cluster, g, eff));
  };
  const LinkCost tp_link = link({l.tp, 1});
  const LinkCost cp_link = link({l.cp, l.tp});
  const LinkCost ep_link =
      options.calibration.calibrated(gpu_id, all_to_all_link(cluster, {l.ep, l.expert_tp}, eff));
  const LinkCost dp_link = link({l.dp * l.cp, l.tp});
  const int64_t expert_dp = l.expert_dp();
  const LinkCost expert_dp_link = link({expert_dp, l.expert_tp * l.ep});
  const LinkCost pp_link = link({2, l.tp * l.cp * l.dp});

  // One micro-batch of one dense layer and of one MoE layer, the embedding and the head: the
  // workload builder's ops and collectives (each probe's two layers of one kind).
  const GroupLinks links{tp_link, l.tp, cp_link, l.cp, ep_link, l.ep};
  ProbeTimes dense_probe, moe_probe;
  const int64_t dense_layers = m.dense_layers();
  const int64_t moe_layers = m.moe_layers();
  if (dense_layers > 0 || moe_layers == 0) {
    Scenario dense = sc;
    dense.model.moe.reset();
    dense_probe = time_probe(probe_micro_batch(dense, compute, wo), links);
  }
  if (moe_layers > 0) {
    Scenario routed = sc;
    routed.model.moe->first_dense_layers = 0;
    moe_probe = time_probe(probe_micro_batch(routed, compute, wo), links);
    if (dense_layers == 0) {
      dense_probe.embedding = moe_probe.embedding;
      dense_probe.head = moe_probe.head;
    }
  }

  // Layers per stage as the workload splits them (pipeline_split); where that split cannot be
  // made (the event simulation refuses the layout) the memory model's near-even split.
  std::vector<int64_t> layers_per_chunk;
  int64_t split_v = v_chunks;
  try {
    layers_per_chunk = split_layers(m.layers, l.pp, split_v, l.pipeline_split, sc.file);
  } catch (const InputError&) {
    split_v = 1;
    layers_per_chunk = layers_per_stage(m.layers, l.pp);
  }
  std::vector<int64_t> first_layer(layers_per_chunk.size(), 0);
  for (int64_t vs = 0, next = 0; vs < l.pp * split_v; ++vs) {  // virtual stage vs = chunk·pp + stage
    const size_t idx = size_t((vs % l.pp) * split_v + vs / l.pp);
    first_layer[idx] = next;
    next += layers_per_chunk[idx];
  }

  const ParamCounts counts = count_params(m);
  double dense_local = 0, expert_local = 0;  // the biggest stage's parameters per GPU
  std::vector<StageParams> stage_local;      // per GPU, before data-parallel sharding
  std::vector<std::vector<StageProgram::GradBucketSize>> stage_buckets;  // Megatron DDP's, ZeRO 0-2
  std::vector<std::vector<StageProgram::FsdpUnit>> stage_units;          // FSDP's, ZeRO-3
  const int64_t first_moe = m.is_moe() ? m.moe->first_dense_layers : m.layers;
  std::vector<std::vector<PieceTime>> chunk_pieces;  // [stage][chunk], per micro-batch
  for (int64_t i = 0; i < l.pp; ++i) {
    StageTime st;
    st.stage = i;
    std::vector<PieceTime>& chunks = chunk_pieces.emplace_back(size_t(split_v));
    for (int64_t c = 0; c < split_v; ++c) {
      const size_t idx = size_t(i * split_v + c);
      for (int64_t k = 0; k < layers_per_chunk[idx]; ++k) {
        const int64_t id = first_layer[idx] + k;
        const ProbeTimes& probe = id >= first_moe ? moe_probe : dense_probe;
        chunks[size_t(c)].add(probe.layer[size_t(std::min<int64_t>(id % 2, probe.layers - 1))]);
      }
    }
    if (i == 0) chunks.front().add(dense_probe.embedding);
    if (i == l.pp - 1) chunks.back().add(dense_probe.head);
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
    const StageProgram opt = optimizer_program(sc, compute, wo, layers_per_chunk, split_v, i);
    for (const Task& t : opt.tasks)
      if (t.kind == TaskKind::compute && t.phase == Phase::optimizer) st.optimizer_s += t.duration.seconds();
    StageParams local = m.is_moe() ? stage_params(m, counts, l, i) : StageParams{};
    if (!m.is_moe()) local.dense = opt.params;
    local.layers = 0;  // as the workload splits them
    for (int64_t c = 0; c < split_v; ++c) local.layers += layers_per_chunk[size_t(i * split_v + c)];
    dense_local = std::max(dense_local, local.dense);
    expert_local = std::max(expert_local, local.experts);
    stage_local.push_back(local);
    stage_buckets.push_back(opt.grad_buckets);
    stage_units.push_back(opt.fsdp_units);
    out.stages.push_back(st);
  }

  auto mb_exposed = [&](const StageTime& st) { return st.tp_exposed_s + st.cp_exposed_s + st.ep_exposed_s; };
  out.slowest_stage = 0;
  for (const StageTime& st : out.stages)
    if (st.compute_s() + mb_exposed(st) >
        out.stages[size_t(out.slowest_stage)].compute_s() + mb_exposed(out.stages[size_t(out.slowest_stage)]))
      out.slowest_stage = st.stage;
  const StageTime& slow = out.stages[size_t(out.slowest_stage)];
  double optimizer_s = 0;
  for (const StageTime& st : out.stages) optimizer_s = std::max(optimizer_s, st.optimizer_s);
  out.mb_exposed_comm_s = mb_exposed(slow);

  // Pipeline sends: 1/tp of the stage output each (Megatron's scatter-gather, as the workload
  // sends it).
  double pp_total_s = 0, pp_overlapped_s = 0;
  if (l.pp > 1) {
    const double send_bytes = tokens_mb * double(m.hidden) * e / tp;
    out.pp_send_s = send_recv_s(send_bytes, pp_link);
    pp_total_s = 2.0 * microbatches * v * out.pp_send_s;
  }

  // Data parallel: the biggest stage's local gradients and weights, in the workload's element
  // sizes (gradients as reduced, weights as gathered).
  const int64_t dp_n = l.dp * l.cp;
  auto reduce = [&](double params, int64_t n, const LinkCost& lk) {
    const double bytes = params * wo.grad_reduce_bytes;
    return collective_s(l.zero_stage == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter, bytes, n, lk);
  };
  auto gather = [&](double params, int64_t n, const LinkCost& lk) {
    return l.zero_stage >= 1 ? collective_s(CollectiveOp::all_gather, params * e, n, lk) : 0.0;
  };

  // ZeRO-3 / FSDP traffic unit by unit, one call each as the workload issues them (per-call
  // latency and the tuner's size-dependent protocol), dense weights over DP and routed experts
  // over expert-DP; units of equal size timed once.
  struct UnitTraffic {
    double gather_s = 0, reduce_s = 0;
  };
  std::vector<std::vector<UnitTraffic>> unit_traffic(size_t(l.pp));
  std::vector<double> stage_gathers(size_t(l.pp), 0.0), stage_reduces(size_t(l.pp), 0.0);
  if (l.zero_stage >= 3) {
    std::map<std::pair<double, double>, UnitTraffic> timed;
    for (int64_t i = 0; i < l.pp; ++i)
      for (const StageProgram::FsdpUnit& u : stage_units[size_t(i)]) {
        const auto key = std::pair{u.params, u.expert_params};
        auto it = timed.find(key);
        if (it == timed.end()) {
          const double dense = u.params - u.expert_params;
          const UnitTraffic t{
              gather(dense, dp_n, dp_link) + gather(u.expert_params, expert_dp, expert_dp_link),
              reduce(dense, dp_n, dp_link) + reduce(u.expert_params, expert_dp, expert_dp_link)};
          it = timed.emplace(key, t).first;
        }
        unit_traffic[size_t(i)].push_back(it->second);
        stage_gathers[size_t(i)] += it->second.gather_s;
        stage_reduces[size_t(i)] += it->second.reduce_s;
      }
  }
  auto stage_reduces_s = [&](int64_t i) { return stage_reduces[size_t(i)]; };
  // The first stage's first layer (after the embedding): a layer's share of its traffic.
  const std::vector<UnitTraffic>& first_units = unit_traffic.front();
  const UnitTraffic first_layer_traffic =
      first_units.empty() ? UnitTraffic{} : first_units[std::min<size_t>(1, first_units.size() - 1)];
  // FSDP with pipelining (torchtitan) gathers a stage's weights unit by unit during each chunk's
  // first micro-batch, as the workload issues them: on one FIFO stream, a layer's gather once
  // the layer fsdp_prefetch_layers before it has started (limit_all_gathers), the embedding's
  // and the output layer's as soon as the stream is free; a unit computes once its gather is done
  // and the unit before it has finished (its compute and its waits for TP/CP/EP collectives).
  // A chunk's first gather runs during the fill, or the chunk before it, except the first
  // stage's, which opens the step. Compute beside a gather pays overlap_slowdown on the overlap.
  // Its reduce-scatters hold up nothing but the stage's own optimizer (the gradient send does
  // not wait for them): below, as a tail.
  const bool fsdp_pipeline = l.zero_stage >= 3 && l.pp > 1;
  auto beside_traffic_s = [&](double compute_s, double traffic_s) {
    return compute_s + options.overlap_slowdown * std::min(traffic_s, compute_s);
  };
  auto unit_piece = [&](const StageProgram::FsdpUnit& u) -> const PieceTime& {
    if (u.unit == -1) return dense_probe.embedding;
    if (u.unit == -2) return dense_probe.head;
    const ProbeTimes& probe = u.unit >= first_moe ? moe_probe : dense_probe;
    return probe.layer[size_t(std::min<int64_t>(u.unit % 2, probe.layers - 1))];
  };
  // Stage i's forward of a micro-batch whose weights it gathers, chunk by chunk: each chunk's
  // span. `opens_step`: the stage's first unit waits for its gather too (the step's first
  // forward on the first stage); `slowed`: compute beside a gather pays overlap_slowdown.
  auto gathered_forward_spans = [&](int64_t i, bool opens_step, bool slowed) {
    std::vector<double> spans(size_t(split_v), 0.0);
    const std::vector<StageProgram::FsdpUnit>& units = stage_units[size_t(i)];
    const std::vector<UnitTraffic>& traffic = unit_traffic[size_t(i)];
    std::vector<double> starts;  // the chunk's units' start times, from the chunk's start
    double gather_end = 0, compute_end = 0;
    for (size_t k = 0; k < units.size(); ++k) {
      const StageProgram::FsdpUnit& u = units[k];
      if (k == 0 || units[k - 1].chunk != u.chunk) {
        starts.clear();
        gather_end = opens_step && k == 0 ? traffic[k].gather_s : 0.0;
        compute_end = 0;
      } else {
        const int64_t trigger = int64_t(starts.size()) - wo.fsdp_prefetch_layers;
        const double issue = u.unit >= 0 && trigger >= 0 ? starts[size_t(trigger)] : 0.0;
        gather_end = std::max(gather_end, issue) + traffic[k].gather_s;
      }
      const double start = std::max(compute_end, gather_end);
      starts.push_back(start);
      const bool next_in_chunk = k + 1 < units.size() && units[k + 1].chunk == u.chunk;
      const double beside_s = slowed && next_in_chunk ? traffic[k + 1].gather_s : 0.0;
      const PieceTime& piece = unit_piece(u);
      compute_end = start + beside_traffic_s(piece.forward_s, beside_s) + piece.forward_exposed_s;
      spans[size_t(u.chunk)] = compute_end;
    }
    return spans;
  };
  std::vector<std::vector<double>> first_forward_spans;  // [stage][chunk]: micro-batch 0's forward
  if (fsdp_pipeline)
    for (int64_t i = 0; i < l.pp; ++i) first_forward_spans.push_back(gathered_forward_spans(i, i == 0, true));
  // The first forward's compute part: its span, less the forward's own waits.
  auto first_forward_s = [&](const StageTime& st) {
    if (!fsdp_pipeline) return st.forward_s;
    const std::vector<double>& spans = first_forward_spans[size_t(st.stage)];
    return std::accumulate(spans.begin(), spans.end(), 0.0) - st.forward_exposed_s;
  };
  // A stage's last backward (of each chunk) runs beside its gradients' reductions: FSDP's
  // reduce-scatters unit by unit, Megatron DDP's buckets as each is final (overlap_grad_reduce).
  // Timed once per stage: the schedule below asks for each last backward twice per chunk.
  std::vector<double> stage_reduce_traffic_s(size_t(l.pp), 0.0);
  for (int64_t i = 0; i < l.pp; ++i) {
    if (l.zero_stage >= 3) {
      stage_reduce_traffic_s[size_t(i)] = stage_reduces_s(i);
    } else if (wo.grad_reduce == GradReduceOverlap::bucketed) {
      for (const StageProgram::GradBucketSize& b : stage_buckets[size_t(i)])
        stage_reduce_traffic_s[size_t(i)] +=
            b.experts ? reduce(b.params, expert_dp, expert_dp_link) : reduce(b.params, dp_n, dp_link);
    }
  }
  auto last_backward_s = [&](const StageTime& st) {
    return beside_traffic_s(st.backward_s + st.recompute_s, stage_reduce_traffic_s[size_t(st.stage)]);
  };
  // Fill and drain: Megatron's schedule played out (detail::schedule_finish_times) with each
  // chunk-step at its chunk's time per micro-batch, exposed TP/CP/EP waits included, and FSDP's
  // first forward and last backward of a stage stretched as above; the bubble is what the longest
  // path adds to the slowest stage's own work. Equal stages give Narayanan's (p−1)/v · t; a
  // heavier last stage (logits and loss) waits for the lighter stages' times, not its own, and
  // interleaved, also for its chunks' round trips through them.
  struct ChunkStep {  // one chunk of one micro-batch on one stage
    double forward_s = 0, forward_exposed_s = 0, backward_s = 0, backward_exposed_s = 0;
  };
  std::vector<std::vector<ChunkStep>> chunk_steps;  // [stage][chunk]
  for (const std::vector<PieceTime>& chunks : chunk_pieces) {
    std::vector<ChunkStep>& steps = chunk_steps.emplace_back();
    auto step_of = [](const PieceTime& p, double share) {
      return ChunkStep{share * p.forward_s, share * p.forward_exposed_s, share * (p.backward_s + p.recompute_s),
                       share * (p.exposed_s() - p.forward_exposed_s)};
    };
    if (split_v == v_chunks) {
      for (const PieceTime& c : chunks) steps.push_back(step_of(c, 1.0));
    } else {  // the split cannot be made (the event refuses the layout): 1/v of the stage each
      PieceTime whole;
      for (const PieceTime& c : chunks) whole.add(c);
      steps.assign(size_t(v_chunks), step_of(whole, 1.0 / v));
    }
  }
  auto stretch = [](double stretched, double plain) { return plain > 0 ? stretched / plain : 1.0; };
  const int64_t last_micro_batch = std::max<int64_t>(1, l.num_microbatches()) - 1;
  // Played out twice when interleaved: the compute alone, and with each message between stages
  // delaying the chunk-step that waits for it (sent asynchronously, overlap_p2p_comm); what the
  // messages add to the longest path is the pipeline's exposed communication. Plain 1F1B
  // exchanges its messages blocking, in pairs (send_forward_recv_backward), so a stage's own
  // 2m and the fill and drain's 2(p−1) sit on the path: 2(m + p − 1) sends.
  auto makespan = [&](double hop_s) -> std::optional<double> {
    const auto finish = detail::schedule_finish_times(
        schedule, l.pp, last_micro_batch + 1, v_chunks,
        [&](int64_t stage, const detail::Slot& slot) {
          const StageTime& st = out.stages[size_t(stage)];
          const ChunkStep& c = chunk_steps[size_t(stage)][size_t(slot.chunk)];
          if (slot.forward && slot.micro_batch == 0 && fsdp_pipeline) {
            const std::vector<double>& spans = first_forward_spans[size_t(stage)];
            return split_v == v_chunks ? spans[size_t(slot.chunk)]
                                       : std::accumulate(spans.begin(), spans.end(), 0.0) / v;
          }
          if (slot.forward) return c.forward_s + c.forward_exposed_s;
          const double b = slot.micro_batch == last_micro_batch
                               ? stretch(last_backward_s(st), st.backward_s + st.recompute_s)
                               : 1.0;
          return c.backward_s * b + c.backward_exposed_s;
        },
        hop_s);
    if (!finish) return std::nullopt;
    return *std::max_element(finish->begin(), finish->end());
  };
  const std::optional<double> compute_path = l.pp > 1 ? makespan(0.0) : std::nullopt;
  out.fill_drain_s = 0;
  if (l.pp > 1 && v_chunks == 1) out.pp_exposed_s = 2.0 * (microbatches + p - 1.0) * out.pp_send_s;
  if (l.pp == 1) {
    // One stage: nothing to fill or drain.
  } else if (compute_path) {
    const double slow_own = microbatches * (slow.compute_s() + mb_exposed(slow)) +
                            (first_forward_s(slow) - slow.forward_s) +
                            (last_backward_s(slow) - slow.backward_s - slow.recompute_s);
    out.fill_drain_s = std::max(0.0, *compute_path - slow_own);
    if (l.pp > 1 && v_chunks > 1) out.pp_exposed_s = std::max(0.0, *makespan(out.pp_send_s) - *compute_path);
  } else {
    // Megatron's order deadlocks (the event refuses the layout): one pass through every other
    // stage, 1/v of it per chunk.
    for (const StageTime& st : out.stages)
      if (st.stage != out.slowest_stage)
        out.fill_drain_s += (first_forward_s(st) + last_backward_s(st) + mb_exposed(st)) / v;
    if (v_chunks > 1) out.pp_exposed_s = 2.0 * (p - 1.0) * out.pp_send_s;
  }
  if (v > 1) pp_overlapped_s = std::max(0.0, pp_total_s - out.pp_exposed_s);

  double grad_s = reduce(dense_local, dp_n, dp_link) + reduce(expert_local, expert_dp, expert_dp_link);
  double param_s = gather(dense_local, dp_n, dp_link) + gather(expert_local, expert_dp, expert_dp_link);
  if (l.zero_stage >= 3) {  // unit by unit, the stage with the most traffic
    grad_s = param_s = 0;
    for (int64_t i = 0; i < l.pp; ++i)
      if (stage_gathers[size_t(i)] + stage_reduces[size_t(i)] > grad_s + param_s) {
        grad_s = stage_reduces[size_t(i)];
        param_s = stage_gathers[size_t(i)];
      }
  }
  // ZeRO 0-2: Megatron's DDP reduces (and the distributed optimizer gathers) bucket by bucket,
  // one call each, as the workload plans them; the stage with the most traffic sets the pace.
  struct TimedBucket {
    StageProgram::GradBucketSize size;
    double grad_s = 0, param_s = 0;
  };
  std::vector<TimedBucket> buckets;  // of the stage with the most DP traffic
  if (l.zero_stage <= 2) {
    grad_s = param_s = 0;
    for (const auto& stage : stage_buckets) {
      std::vector<TimedBucket> timed;
      double stage_grad = 0, stage_param = 0;
      for (const StageProgram::GradBucketSize& b : stage) {
        const int64_t n = b.experts ? expert_dp : dp_n;
        const LinkCost& lk = b.experts ? expert_dp_link : dp_link;
        timed.push_back({b, reduce(b.params, n, lk), gather(b.params, n, lk)});
        stage_grad += timed.back().grad_s;
        stage_param += timed.back().param_s;
      }
      if (stage_grad + stage_param > grad_s + param_s) {
        grad_s = stage_grad;
        param_s = stage_param;
        buckets = std::move(timed);
      }
    }
  }
  double dp_total_s = 0, grad_overlapped_s = 0, param_overlapped_s = 0;
  if (l.zero_stage >= 3) {
    // FSDP / ZeRO-3, one unit per layer plus the embedding and the head (the workload's units).
    // pp = 1: weights gathered for forward and again for backward, gradients reduce-scattered,
    // per micro-batch. pp > 1 (torchtitan: no resharding between micro-batches): once per step.
    const double passes = l.pp > 1 ? 1.0 : microbatches;
    out.dp_grad_s = passes * grad_s;
    out.dp_param_s = passes * (l.pp > 1 ? 1.0 : 2.0) * param_s;
    dp_total_s = out.dp_grad_s + out.dp_param_s;
    if (fsdp_pipeline) {
      // The slowest stage's own gather-bound first forward, and the tail: a stage's
      // reduce-scatters beyond its last backward and the drain still to run behind it (the
      // backwards of the stages before it), then at least the first stage's first layer's
      // reduce-scatter, which only the embedding's short backward follows. A stage's
      // reduce-scatters queue on one stream, each unit's once the last micro-batch's backward
      // has passed it: chunk c's last backward ends c·p chunk-steps before the stage's last (the
      // cool-down runs the chunks down to 0), its units in reverse, evenly over it.
      auto reduce_tail_s = [&](const StageTime& st) {
        const std::vector<StageProgram::FsdpUnit>& units = stage_units[size_t(st.stage)];
        const double chunk_backward = last_backward_s(st) / double(split_v);
        std::map<int64_t, double> chunk_units, passed;
        for (const StageProgram::FsdpUnit& u : units) chunk_units[u.chunk] += 1;
        std::vector<std::pair<double, double>> ready;  // (ready time, duration); 0 = last backward ends
        for (size_t k = units.size(); k-- > 0;) {
          const double share = (passed[units[k].chunk] += 1) / chunk_units[units[k].chunk];
          const double chunk_end = -double(units[k].chunk) * p * chunk_backward;
          ready.push_back(
              {chunk_end - chunk_backward * (1.0 - share), unit_traffic[size_t(st.stage)][k].reduce_s});
        }
        return ready.empty() ? 0.0 : std::max(0.0, one_stream_end_s(std::move(ready)));
      };
      double tail = 0, drain_behind = 0;
      for (const StageTime& st : out.stages) {
        tail = std::max(tail, reduce_tail_s(st) - drain_behind);
        drain_behind += last_backward_s(st) / v;
      }
      tail = std::max(tail, first_layer_traffic.reduce_s);
      out.dp_exposed_s = first_forward_s(slow) - slow.forward_s + tail;
    } else {
      // Prefetch hides the rest behind compute, but not each micro-batch's forward waits on its
      // gathers, played out unit by unit as above (the step's first opening with the embedding's
      // gather; a later one's embedding gathered during the backward before it, its first
      // layer's issued once its forward starts), nor the embedding's reduce-scatter after the
      // last backward.
      const UnitTraffic embedding = first_units.empty() ? UnitTraffic{} : first_units.front();
      auto forward_waits_s = [&](bool opens_step) {
        const std::vector<double> spans = gathered_forward_spans(0, opens_step, false);
        return std::max(0.0, std::accumulate(spans.begin(), spans.end(), 0.0) - slow.forward_s -
                                 slow.forward_exposed_s);
      };
      const double unhidden =
          forward_waits_s(true) + (microbatches - 1.0) * forward_waits_s(false) + embedding.reduce_s;
      // The window is the compute stream's whole span, its waits for TP/CP/EP collectives
      // included: FSDP's stream runs beside those too. Its compute runs overlap_slowdown slower
      // for the share of it the traffic fills.
      const double span = microbatches * (slow.compute_s() + mb_exposed(slow));
      const double busy = span > 0 ? std::min(1.0, dp_total_s / span) : 0.0;
      const double window = span + options.overlap_slowdown * busy * microbatches * slow.compute_s();
      out.dp_exposed_s = std::max(dp_total_s - window, unhidden);
    }
    out.dp_exposed_s = std::min(dp_total_s, out.dp_exposed_s);
    grad_overlapped_s = std::max(0.0, dp_total_s - out.dp_exposed_s);
  } else {
    out.dp_grad_s = grad_s;
    out.dp_param_s = param_s;
    out.dp_calls = int64_t(buckets.size());
    dp_total_s = grad_s + param_s;
    // Megatron's DDP, bucket by bucket (the workload's buckets: chunk 0 cut at the bucket size,
    // later chunks, interleaved, one bucket each unless the framework cuts them all). Chunk c's
    // last backward ends c·p chunk-steps before the stage's last (the cool-down runs the chunks
    // down to 0, p micro-batches each); a bucket is ready when the backward has passed its layers
    // (layers evenly over the chunk's backward), and the buckets reduce one after another on one
    // stream: what outlasts the stage's last backward is exposed. The weight gathers mirror it:
    // issued one after another from the step's start, chunk c's first forward starting c·p
    // chunk-steps in, each bucket needed when the forward reaches its first layer, every wait
    // delaying the rest. With v = 1: the last backward's and the first forward's windows.
    // A chunk's forward and backward as the compute stream spans them: recompute and the waits
    // for TP/CP/EP collectives included (the DP stream runs beside those too).
    // Compute beside the traffic runs overlap_slowdown slower (below), which widens the windows:
    // by the share of the time, up to the last bucket's window, that the traffic fills.
    const double forward_plain = (slow.forward_s + slow.forward_exposed_s) / v;
    const double backward_plain =
        (slow.backward_s + slow.recompute_s + mb_exposed(slow) - slow.forward_exposed_s) / v;
    const double windows = (v - 1.0) * p + 1.0;  // chunk-steps up to the last chunk's window
    auto busy = [&](double traffic_s, double window_s) {
      return window_s > 0 ? std::min(1.0, traffic_s / (windows * window_s)) : 0.0;
    };
    const double forward_chunk =
        forward_plain + options.overlap_slowdown * busy(param_s, forward_plain) * slow.forward_s / v;
    const double backward_chunk = backward_plain + options.overlap_slowdown * busy(grad_s, backward_plain) *
                                                       (slow.backward_s + slow.recompute_s) / v;
    // The share of its chunk's layers the backward has passed when each bucket is ready, counted
    // apart for the dense and the expert buckets (each list covers the chunk's layers once).
    std::map<std::pair<int64_t, bool>, int64_t> chunk_layers, seen;
    for (const TimedBucket& b : buckets) chunk_layers[{b.size.chunk, b.size.experts}] += b.size.layers;
    std::vector<double> passed(buckets.size(), 1.0);
    for (size_t i = 0; i < buckets.size(); ++i) {
      const std::pair<int64_t, bool> key{buckets[i].size.chunk, buckets[i].size.experts};
      seen[key] += buckets[i].size.layers;
      if (chunk_layers[key] > 0) passed[i] = double(seen[key]) / double(chunk_layers[key]);
    }
    double grad_exposed = grad_s;
    if (wo.grad_reduce == GradReduceOverlap::bucketed) {
      std::vector<std::pair<double, double>> ready;  // (ready time, duration); 0 = last backward ends
      for (size_t i = 0; i < buckets.size(); ++i) {
        const double chunk_end = -double(buckets[i].size.chunk) * p * backward_chunk;
        ready.push_back({chunk_end - backward_chunk * (1.0 - passed[i]), buckets[i].grad_s});
      }
      grad_exposed = ready.empty() ? 0.0 : std::clamp(one_stream_end_s(std::move(ready)), 0.0, grad_s);
    }
    double param_exposed = param_s;
    if (wo.param_gather == ParamGatherOverlap::next_forward) {
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
    out.dp_exposed_s = grad_exposed + param_exposed;
    grad_overlapped_s = grad_s - grad_exposed;
    param_overlapped_s = param_s - param_exposed;
  }
  // Compute running beside DP or PP NCCL kernels is slower (their SMs and HBM traffic), as the
  // event charges it: the compute kernels in the overlapped time, which hides behind the compute
  // stream's span, waits for TP/CP/EP collectives included, so compute's share of that span.
  auto compute_share = [](double compute_s, double waits_s) {
    return compute_s > 0 ? compute_s / (compute_s + waits_s) : 0.0;
  };
  const double forward_share = compute_share(slow.forward_s, slow.forward_exposed_s);
  const double backward_share =
      l.zero_stage >= 3 && l.pp == 1
          ? compute_share(slow.compute_s(), mb_exposed(slow))
          : compute_share(slow.backward_s + slow.recompute_s, mb_exposed(slow) - slow.forward_exposed_s);
  const double grad_slowdown_s = options.overlap_slowdown * backward_share * grad_overlapped_s;
  const double fwd_slowdown_s =
      options.overlap_slowdown * forward_share * (param_overlapped_s + pp_overlapped_s);
  out.overlap_slowdown_s = grad_slowdown_s + fwd_slowdown_s;

  // A TP, CP or EP collective that meets the DP traffic running beside it on the same link gets
  // half of that link while the two overlap (max-min fair, both bound there): its waits grow by
  // the share of the compute stream's span the DP traffic runs. The same link: both groups
  // across domains (this GPU's NIC), both inside an NVSwitch domain (its switch port), or on a
  // full mesh a link to a peer in both. One across and one inside share only a ring's hop or
  // PXN's, at the slower one's rate: not counted.
  const double span_s = microbatches * (slow.compute_s() + mb_exposed(slow));
  const double dp_busy = span_s > 0 ? std::min(1.0, (grad_overlapped_s + param_overlapped_s) / span_s) : 0.0;
  const RankGroup dp_group{dp_n, l.tp};
  auto shares_with_dp = [&](const LinkCost& lk, RankGroup g) {
    if (g.size <= 1 || dp_group.size <= 1 || dp_busy <= 0) return false;
    const bool across = lk.link_class == LinkClass::scale_out;
    if (across != (dp_link.link_class == LinkClass::scale_out)) return false;
    if (across || cluster.gpu.scale_up_kind != ScaleUpKind::mesh) return true;
    // A common peer: the least common multiple of the strides, inside both groups.
    const int64_t common = std::lcm(g.stride, dp_group.stride);
    return common / g.stride < g.size && common / dp_group.stride < dp_group.size;
  };
  const double tp_shared_s =
      shares_with_dp(tp_link, {l.tp, 1}) ? dp_busy * microbatches * slow.tp_exposed_s : 0.0;
  const double cp_shared_s =
      shares_with_dp(cp_link, {l.cp, l.tp}) ? dp_busy * microbatches * slow.cp_exposed_s : 0.0;
  const double ep_shared_s =
      shares_with_dp(ep_link, {l.ep, l.expert_tp}) ? dp_busy * microbatches * slow.ep_exposed_s : 0.0;

  out.shared_link_s = tp_shared_s + cp_shared_s + ep_shared_s;

  BreakdownReport& b = out.breakdown;
  b.stage = out.slowest_stage;
  b.forward_s = microbatches * slow.forward_s + fwd_slowdown_s;
  b.backward_s = microbatches * slow.backward_s + grad_slowdown_s;
  b.recompute_s = microbatches * slow.recompute_s;
  b.optimizer_s = optimizer_s;
  b.compute_s = b.forward_s + b.backward_s + b.recompute_s + b.optimizer_s;
  b.tp_comm_s = microbatches * slow.tp_comm_s;
  b.pp_comm_s = 2.0 * pp_total_s;  // a middle stage receives as many messages as it sends
  b.dp_comm_s = dp_total_s;
  b.cp_comm_s = microbatches * slow.cp_comm_s;
  b.ep_comm_s = microbatches * slow.ep_comm_s;
  b.tp_exposed_s = microbatches * slow.tp_exposed_s + tp_shared_s;
  b.cp_exposed_s = microbatches * slow.cp_exposed_s + cp_shared_s;
  b.ep_exposed_s = microbatches * slow.ep_exposed_s + ep_shared_s;
  // The critical path's pipeline hops (out.pp_exposed_s) beyond the messages a stage receives
  // itself are other stages' sends during fill and drain (fewer micro-batches than stages):
  // the stage idles on the pipeline there, which the event simulation counts as bubble.
  b.pp_exposed_s = std::min(out.pp_exposed_s, pp_total_s);
  b.dp_exposed_s = out.dp_exposed_s;
  b.exposed_comm_s = b.tp_exposed_s + b.cp_exposed_s + b.ep_exposed_s + b.pp_exposed_s + b.dp_exposed_s;
  b.bubble_s = out.fill_drain_s + (out.pp_exposed_s - b.pp_exposed_s);
  out.step_time_s = b.compute_s + b.exposed_comm_s + b.bubble_s;
  return out;
}

AnalyticOptions analytic_options(const SimulateOptions& simulate) {
  AnalyticOptions o;
  o.efficiency = simulate.step.comm;
  o.workload = simulate.workload;
  o.compute = simulate.compute;
  o.calibration = simulate.calibration;
  o.schedule = simulate.schedule;
  o.overlap_slowdown = simulate.step.overlap_slowdown;
  o.memory = simulate.memory;
  o.run = simulate.run;
  return o;
}

ComputeModel analytic_compute_model(const Scenario& s, const AnalyticOptions& options) {
  const GpuSpec& gpu = s.cluster.gpu;
  return ComputeModel(
      gpu, options.calibration.compute_params(gpu.id, options.compute.value_or(default_compute_params(gpu))));
}

Report estimate(const Scenario& s) { return estimate(s, AnalyticOptions{}); }

Report estimate(const Scenario& sc, const AnalyticOptions& options) {
  const ModelSpec& m = sc.model;
  const Layout& l = sc.layout;
  const ClusterSpec& cluster = sc.cluster;
  const GpuSpec& gpu = cluster.gpu;
  if (l.num_microbatches() < 1)
    throw InputError(
        sc.file, "layout.global_batch",
        fmt::format("global_batch {} is smaller than micro_batch·dp = {} (make it a multiple of it)",
                    l.global_batch, l.micro_batch * l.dp));

  Report r;
  r.fidelity = "analytic";
  r.flop_convention = flop_convention_text(options.flop_convention);
  const ParamCounts counts = count_params(m);
  r.params = counts.total();
  r.active_params = counts.active(m);

  const StepFlops flops = step_flops(m, l, options.flop_convention);
  r.flops_per_step = flops.model;
  r.hardware_flops_per_step = flops.hardware;
  const double peak = checked_peak(sc, l.precision);
  const double n_gpus = double(l.world_size());

  const MemoryEstimate memory = estimate_memory(sc, options.memory);
  r.memory = memory.report;

  const StepTimeEstimate time = estimate_step_time(sc, flops, options);
  if (sc.run.assumed_mfu) {
    r.step_time_s = flops.model / (n_gpus * peak * *sc.run.assumed_mfu);
    r.breakdown = BreakdownReport{};
    r.breakdown.compute_s = r.step_time_s;
  } else {
    r.step_time_s = time.step_time_s;
    r.breakdown = time.breakdown;
  }
  const double tokens_per_step = double(l.global_batch) * double(m.seq_len);
  r.tokens_per_s = tokens_per_step / r.step_time_s;
  r.tflops_per_gpu = flops.model / (r.step_time_s * n_gpus) / kTera;
  r.mfu = flops.model / (r.step_time_s * n_gpus * peak);
  r.hfu = flops.hardware / (r.step_time_s * n_gpus * peak);

  // Run totals. The checkpoint holds weights and optimizer states (not gradients).
  const RunTotals run =
      fill_run_report(sc, bytes_per_param(l.precision, options.memory.convention), options.run, r);

  // Warnings.
  const int64_t domain = scale_up_domain_size(cluster);
  if (!group_inside_scale_up(cluster, {l.tp, 1}))
    r.warnings.push_back(
        fmt::format("tp={} spans more than one scale-up domain ({} GPUs of {}): tensor-parallel "
                    "collectives cross the inter-node fabric",
                    l.tp, domain, gpu.scale_up_name.empty() ? "NVLink" : gpu.scale_up_name));
  if (l.cp > 1 && !group_inside_scale_up(cluster, {l.cp, l.tp}))
    r.warnings.push_back(
        fmt::format("tp·cp={} spans more than one scale-up domain ({} GPUs): ring attention "
                    "crosses the inter-node fabric",
                    l.tp * l.cp, domain));
  if (l.pp > 1 && l.num_microbatches() < l.pp)
    r.warnings.push_back(
        fmt::format("only {} micro-batches for pp={}: the pipeline never fills (bubble {:.0f}% of "
                    "compute)",
                    l.num_microbatches(), l.pp, 100.0 * double(l.pp - 1) / double(l.num_microbatches())));
  const PipelineSchedule schedule = options.schedule.value_or(default_schedule(l));
  if (schedule == PipelineSchedule::interleaved && l.pp > 1 && l.num_microbatches() >= l.pp &&
      !detail::schedule_completes(schedule, l.pp, l.num_microbatches(), l.virtual_stages))
    r.warnings.push_back(fmt::format(
        "the interleaved schedule cannot complete with {} micro-batches on pp {} with {} virtual stages "
        "(Megatron's order deadlocks on the last, partial group; the event simulation refuses it): use a "
        "multiple of pp",
        l.num_microbatches(), l.pp, l.virtual_stages));
  if (l.zero_stage == 3 && l.pp > 1) r.warnings.push_back(kFsdpWithPipelineWarning);
  if (l.zero_stage == 3 && m.is_moe())
    r.warnings.push_back(
        "ZeRO-3 with a mixture-of-experts model: estimated (experts gathered and reduce-scattered over the "
        "expert-data-parallel group) but not yet simulated event by event, so `simrun simulate` refuses it");
  if (m.layers % l.pp != 0)
    r.warnings.push_back(fmt::format("pp={} does not divide {} layers: stages get {} or {} layers", l.pp,
                                     m.layers, m.layers / l.pp, m.layers / l.pp + 1));
  if (!r.memory.fits)
    r.warnings.push_back(
        fmt::format("does not fit: {} (stage {})", memory_shortfall_text(r.memory), memory.worst_stage));
  if (l.cp > 1 && !l.flash_attention)
    r.warnings.push_back(
        "context parallelism without flash attention: Megatron's ring attention needs a fused kernel");
  if (sc.run.assumed_mfu)
    r.warnings.push_back(
        fmt::format("step time from the assumed MFU {:.3f} (run.assumed_mfu); the breakdown is not "
                    "modelled",
                    *sc.run.assumed_mfu));
  if (run.goodput < 0.8)
    r.warnings.push_back(
        fmt::format("goodput {:.2f}: failures and checkpoints cost more than 20% of the run (job "
                    "MTBF {:.2f} h)",
                    run.goodput, run.mtbf_s / kSecondsPerHour));
  if (r.mfu > 0.75)
    r.warnings.push_back(fmt::format("MFU {:.2f} is above what published runs reach (≤ 0.6)", r.mfu));

  // Explanations (--explain): formula and inputs of each headline number.
  auto explain = [&](std::string key, double value, std::string unit, std::string formula,
                     std::string inputs) {
    detail::explain(r, std::move(key), value, std::move(unit), std::move(formula), std::move(inputs));
  };
  const BreakdownReport& b = r.breakdown;
  const ComputeParams cparams = analytic_compute_model(sc, options).params();
  if (sc.run.assumed_mfu) {
    explain("step_time_s", r.step_time_s, "s", "flops_per_step / (num_gpus · peak · assumed_mfu)",
            fmt::format("flops_per_step={:.4g}, num_gpus={}, peak={:.4g} FLOP/s ({}), assumed_mfu={}",
                        flops.model, l.world_size(), peak, to_string(l.precision), *sc.run.assumed_mfu));
  } else {
    explain("step_time_s", r.step_time_s, "s", "compute_s + exposed_comm_s + bubble_s",
            fmt::format("compute_s={:.4g}, exposed_comm_s={:.4g}, bubble_s={:.4g}", b.compute_s,
                        b.exposed_comm_s, b.bubble_s));
    explain(
        "breakdown.compute_s", b.compute_s, "s",
        "m · (forward + backward + recompute of one micro-batch on the slowest stage) + optimizer + "
        "overlap slowdown; each of the workload builder's ops timed by ComputeModel::op_seconds "
        "(roofline × shape efficiency + launch)",
        fmt::format(
            "m={}, stage={}, forward={:.4g} s, backward={:.4g} s, recompute={:.4g} s, optimizer={:.4g} s, "
            "overlap slowdown={:.4g} s; gemm_max={}, attn_fwd_max={}, attn_bwd_max={}, mem_bw_fraction={}, "
            "launch={:.3g} s ({}{})",
            time.microbatches, time.slowest_stage, time.stages[size_t(time.slowest_stage)].forward_s,
            time.stages[size_t(time.slowest_stage)].backward_s,
            time.stages[size_t(time.slowest_stage)].recompute_s, b.optimizer_s, time.overlap_slowdown_s,
            cparams.gemm_max, cparams.attn_fwd_max, cparams.attn_bwd_max, cparams.mem_bw_fraction,
            cparams.launch_overhead_s, gpu.architecture.empty() ? "generic" : gpu.architecture,
            options.calibration.has_gpu(gpu.id) ? ", calibrated" : " defaults"));
    explain(
        "breakdown.exposed_comm_s", b.exposed_comm_s, "s",
        "m · (TP + CP + EP exposed per micro-batch) + their waits on links shared with DP traffic + PP "
        "exposed (1F1B: 2(m + p − 1) sends; interleaved: what the asynchronous sends add to the schedule's "
        "longest path) + DP exposed (NCCL's model, in a scale-up domain and across domains)",
        fmt::format("m={}, per-micro-batch={:.4g} s (tp total {:.4g} s/step), shared links={:.4g} s, pp "
                    "exposed={:.4g} "
                    "s of {:.4g} s (send {:.4g} s), dp exposed={:.4g} s of {:.4g} s (grad {:.4g} s, params "
                    "{:.4g} s{})",
                    time.microbatches, time.mb_exposed_comm_s, b.tp_comm_s, time.shared_link_s,
                    b.pp_exposed_s, b.pp_comm_s, time.pp_send_s, time.dp_exposed_s, b.dp_comm_s,
                    time.dp_grad_s, time.dp_param_s,
                    time.dp_calls > 0 ? fmt::format(", in {} DDP buckets", time.dp_calls) : std::string()));
    explain("breakdown.bubble_s", b.bubble_s, "s",
            "longest path through the schedule's order (each chunk-step at its chunk's forward or backward "
            "+ exposed TP/CP/EP per micro-batch) − the slowest stage's own work (equal stages: Narayanan's "
            "(p − 1)/v of a stage's micro-batch) + the pipeline hops on that path beyond the stage's own "
            "messages; each stage's last backward slowed beside its gradient reductions; ZeRO-3 with "
            "pp > 1: each chunk's first forward unit by unit, each unit waiting on its own gather",
            fmt::format("pp={}, v={}, slowest stage={}, fill and drain={:.4g} s, hops={:.4g} s", l.pp,
                        l.virtual_stages, time.slowest_stage, time.fill_drain_s,
                        time.pp_exposed_s - b.pp_exposed_s));
  }
  detail::explain_throughput(sc, flops.per_sequence, options.flop_convention, peak, r);
  detail::explain_memory(sc, memory.stages[size_t(memory.worst_stage)], options.memory, r);
  detail::explain_run(sc, run, options.run, r);
  return r;
}

}  // namespace simrun
