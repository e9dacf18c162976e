// One stage's program, part 2: the step around the layers (workload_builder.cpp holds the
// layers' ops) — data-parallel gradient buckets and ZeRO/FSDP parameter gathers, the
// optimizer step, pipeline messages, and the schedule's slots expanded in order.
#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "workload_builder.hpp"

namespace simrun::detail {

// ---------------------------------------------------------------------------------------------
// Data parallelism: gradient buckets (ZeRO 0–2), FSDP units (ZeRO-3)

std::pair<GroupKind, int64_t> StageBuilder::bucket_group(int kind) const {
  return kind == kExpertParams ? std::pair{GroupKind::edp, m_s.expert_dp_size}
                               : std::pair{m_s.dp_group, m_s.dp_size};
}

void StageBuilder::plan_grad_buckets() {
  // Megatron-Core's DDP (distributed_data_parallel.py, param_and_grad_buffer.py): each model
  // chunk is its own DDP instance whose buffer is cut into buckets of at least
  // max(40M, 1M·dp) parameters, taken in reverse parameter order (the order backward produces
  // gradients); from the second chunk on one bucket each (one_bucket_after_first_chunk).
  const Shared& s = m_s;
  const double limit = s.opt.grad_bucket_params(s.dp_size);
  for (int kind : {kDenseParams, kExpertParams}) {
    const bool dense = kind == kDenseParams;
    if (bucket_group(kind).second <= 1) continue;
    for (int64_t c = s.v - 1; c >= 0; --c) {
      const bool bucketed = s.opt.chunk_bucketed(c);
      GradBucket open{kind, 0, {}, 0};
      auto close = [&] {
        if (open.params <= 0) return;
        open.pending = open.layers.size();
        for (int32_t layer : open.layers)
          m_bucket_of_layer[static_cast<size_t>(kind)][layer] = m_grad_buckets.size();
        m_prog.grad_buckets.push_back({open.params, kind == kExpertParams, c,
                                       int64_t(std::count_if(open.layers.begin(), open.layers.end(),
                                                             [](int32_t id) { return id >= 0; }))});
        m_grad_buckets.push_back(std::move(open));
        open = GradBucket{kind, 0, {}, 0};
      };
      auto add_params = [&](double params, int32_t layer) {
        if (params <= 0) return;
        open.params += params;
        open.layers.push_back(layer);
        if (bucketed && open.params >= limit) close();
      };
      const ChunkPlace at = s.place(m_stage, c);
      if (dense && at.position == at.last) add_params(s.output_params_local, -2);
      const size_t idx = static_cast<size_t>(m_stage * s.v + c);
      for (int64_t i = s.layers_per_chunk[idx] - 1; i >= 0; --i) {
        const int64_t layer = s.first_layer[idx] + i;
        add_params(dense ? s.layer_dense_params(layer) : s.layer_expert_params(layer),
                   static_cast<int32_t>(layer));
      }
      if (dense && at.position == 0) add_params(s.embedding_params_local, -1);
      close();
    }
  }
}

void StageBuilder::grads_ready(int kind, int32_t layer) {
  const auto& of_layer = m_bucket_of_layer[static_cast<size_t>(kind)];
  const auto it = of_layer.find(layer);
  if (it == of_layer.end()) return;  // nothing to reduce: no parameters of this kind, or no group
  GradBucket& b = m_grad_buckets[it->second];
  SIMRUN_ASSERT(b.pending > 0, "a layer's gradients finished twice");
  if (--b.pending > 0) return;
  if (reduces_every_micro_batch()) {
    // DeepSpeed ZeRO-2 (overlap_comm off): each bucket reduced as it fills, on the compute
    // stream, at every micro-batch: the backward waits for it.
    reduce_bucket(it->second);
    m_wait.push_back(m_grad_reduces.back());
    b.pending = b.layers.size();
    if (m_mb == m_s.m - 1) m_buckets_ready.push_back(it->second);  // gathered after the optimizer
    return;
  }
  m_buckets_ready.push_back(it->second);
  if (m_s.opt.grad_reduce == GradReduceOverlap::bucketed) reduce_bucket(it->second);
}

bool StageBuilder::reduces_every_micro_batch() const {
  return m_s.sc.layout.zero_stage == 2 && m_s.opt.zero2_reduce_every_micro_batch;
}

void StageBuilder::reduce_bucket(size_t bucket) {
  const Shared& s = m_s;
  const GradBucket& b = m_grad_buckets[bucket];
  const bool zero = s.sc.layout.zero_stage >= 1;
  const int32_t saved = m_layer;
  m_layer = b.layers.back();
  const bool scatter = zero && s.opt.zero_grad_collective == ZeroGradCollective::reduce_scatter;
  m_grad_reduces.push_back(collective(Stream::dp_grad, OpName::dp_grad_reduce,
                                      scatter ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce,
                                      bucket_group(b.kind).first, b.params * s.opt.grad_reduce_bytes,
                                      Phase::comm, {m_last_compute}));
  m_layer = saved;
}

void StageBuilder::gather_params_before_first_use() {
  // The previous step's parameter all-gathers run in this step's first forward, issued in the
  // order of first use (embedding first, the output layer last); each layer's first forward
  // op waits for its buckets' gathers.
  const Shared& s = m_s;
  auto first_use = [](const GradBucket& b) {
    const int32_t layer = b.layers.back();
    return layer == -1 ? int64_t{-1} : layer == -2 ? int64_t{1} << 40 : int64_t{layer};
  };
  std::vector<size_t> order(m_grad_buckets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return first_use(m_grad_buckets[a]) < first_use(m_grad_buckets[b]);
  });
  m_mb = -1;
  for (size_t i : order) {
    const GradBucket& b = m_grad_buckets[i];
    m_layer = b.layers.back();
    const uint32_t task = collective(Stream::dp_param, OpName::dp_param_gather, CollectiveOp::all_gather,
                                     bucket_group(b.kind).first, b.params * s.param_elem, Phase::comm, {});
    for (int32_t layer : b.layers) m_param_gather_of_layer[layer].push_back(task);
  }
  m_layer = -1;
}

void StageBuilder::fsdp_gather(int32_t unit, Phase pass) {
  if (m_s.submodule_gathers) return;  // fetched op by op (fetch_submodules_for)
  // With pp > 1 (torchtitan FSDP+PP) parameters stay gathered across micro-batches.
  if (m_s.sc.layout.pp > 1 && (pass == Phase::backward || m_mb != m_s.first_mb(m_chunk))) return;
  const uint32_t gather = issue_fsdp_gather(unit, pass);
  if (gather != kNoTask) m_wait.push_back(gather);
}

// An FSDP unit's parameters by the group that shards them: the dense ones over the DP group,
// a MoE layer's routed experts over the expert-DP group, as torchtitan shards an MoE block's
// experts over its own mesh (fully_shard(moe.experts, mesh=dp_mod_ep)) and DeepSpeed-MoE
// partitions them over the expert-data-parallel group. A group of one rank moves nothing.
std::vector<std::pair<GroupKind, double>> StageBuilder::unit_shards(int32_t unit) const {
  const Shared& s = m_s;
  const double experts = unit >= 0 ? s.layer_expert_params(unit) : 0.0;
  std::vector<std::pair<GroupKind, double>> shards;
  if (s.dp_size > 1) shards.emplace_back(s.dp_group, s.fsdp_unit_params(unit) - experts);
  if (experts > 0 && s.expert_dp_size > 1) shards.emplace_back(GroupKind::edp, experts);
  return shards;
}

// The unit's gathers on the parameter stream, dense first; that stream runs them in order, so
// the last one's end is the unit's (returned; kNoTask when there is none).
uint32_t StageBuilder::issue_fsdp_gather(int32_t unit, Phase pass) {
  SIMRUN_ASSERT(pass == Phase::forward || pass == Phase::backward,
                "an FSDP gather is for a forward or a backward");
  const Shared& s = m_s;
  const bool backward = pass == Phase::backward;
  // Prefetch window. Forward: this gather may start once the unit `fsdp_prefetch_layers` before
  // it has started computing (the rate limiter of limit_all_gathers). Backward: once the unit
  // `fsdp_prefetch_layers` after it has started its backward (BACKWARD_PRE) or computed its
  // gradients (BACKWARD_POST).
  std::vector<uint32_t> deps;
  if (unit >= 0) {
    const int32_t prev = backward ? unit + s.opt.fsdp_prefetch_layers : unit - s.opt.fsdp_prefetch_layers;
    const std::map<int32_t, uint32_t>& trigger =
        !backward                                                               ? m_first_op_of_layer
        : s.opt.fsdp_backward_prefetch == FsdpBackwardPrefetch::before_backward ? m_backward_start_of_layer
                                                                                : m_gradients_done_of_layer;
    const auto it = trigger.find(prev);
    if (it != trigger.end()) deps.push_back(it->second);
  }
  const int32_t saved = m_layer;
  m_layer = unit;
  uint32_t last = kNoTask;
  for (const auto& [group, unit_params] : unit_shards(unit))
    last = collective(Stream::dp_param, OpName::fsdp_gather, CollectiveOp::all_gather, group,
                      unit_params * s.param_elem, Phase::comm, deps);
  m_layer = saved;
  return last;
}

void StageBuilder::fsdp_reduce(int32_t unit) {
  if (m_s.submodule_gathers) {
    reduce_submodules(unit);
    return;
  }
  const Shared& s = m_s;
  const int32_t saved = m_layer;
  m_layer = unit;
  const Stream stream = s.opt.fsdp_one_communicator ? Stream::dp_param : Stream::dp_grad;
  for (const auto& [group, unit_params] : unit_shards(unit))
    m_grad_reduces.push_back(collective(stream, OpName::fsdp_reduce, CollectiveOp::reduce_scatter, group,
                                        unit_params * s.opt.grad_reduce_bytes, Phase::comm,
                                        {m_last_compute}));
  m_layer = saved;
}

// ---------------------------------------------------------------------------------------------
// DeepSpeed's ZeRO-3: submodule gathers and reduce buckets (frameworks.md 1.2, 1.3)

void StageBuilder::plan_submodule_units() {
  const Shared& s = m_s;
  std::vector<StageProgram::FsdpUnit>& units = m_prog.fsdp_units;
  auto add_unit = [&](int32_t unit) {
    const std::vector<Shared::Submodule> subs = s.submodules(unit);
    double total = 0;
    for (const Shared::Submodule& sm : subs) total += sm.params;
    for (const Shared::Submodule& sm : subs) {
      StageProgram::FsdpUnit u;
      u.unit = unit;
      u.params = sm.params;
      u.expert_params = sm.experts ? sm.params : 0.0;
      u.forward_share = sm.params / total;
      m_units_of[unit].push_back(units.size());
      m_unit_ops.push_back(sm.ops);
      units.push_back(u);
    }
  };
  if (m_stage == 0) add_unit(-1);
  for (int32_t layer : m_prog.layers) add_unit(layer);
  if (m_stage == s.pp - 1) add_unit(-2);
  std::vector<double> params;
  for (const StageProgram::FsdpUnit& u : units) params.push_back(u.params);
  const std::vector<int32_t> issuers = prefetch_issuers(params, prefetch_bucket_params());
  for (size_t k = 0; k < units.size(); ++k) units[k].issued_by = issuers[k];
  // Gradients: each unit's own reduce-scatter (FSDP; v0.5's one per parameter), or the
  // backward's gradients gathered into a bucket of bucket_params_min elements, reduced each
  // time it fills and once more for what is left after the last unit (stage3.py ipg bucket,
  // reduce_bucket_size); dense and expert gradients in buckets of their own.
  const bool bucketed = s.opt.zero3_reduce == Zero3Reduce::bucketed;
  double open_dense = 0, open_experts = 0;
  for (size_t k = units.size(); k-- > 0;) {
    StageProgram::FsdpUnit& u = units[k];
    if (!bucketed) {
      u.reduce_params = u.params;
      u.reduce_expert_params = u.expert_params;
      continue;
    }
    open_dense += u.params - u.expert_params;
    open_experts += u.expert_params;
    const bool full = std::max(open_dense, open_experts) >= s.opt.bucket_params_min;
    u.reduce_params = 0;
    if (full || k == 0) {
      u.reduce_params = open_dense + open_experts;
      u.reduce_expert_params = open_experts;
      open_dense = open_experts = 0;
    }
  }
}

double StageBuilder::prefetch_bucket_params() const {
  return m_s.opt.zero3_fetch == Zero3Fetch::prefetch ? m_s.opt.zero3_prefetch_bucket_params : 0.0;
}

void StageBuilder::start_submodule_pass(Phase pass) {
  const std::vector<StageProgram::FsdpUnit>& units = m_prog.fsdp_units;
  const size_t n = units.size();
  m_pass.resize(n);
  for (size_t k = 0; k < n; ++k) m_pass[k] = pass == Phase::forward ? k : n - 1 - k;
  if (pass == Phase::forward) {
    m_pass_issuer.clear();
    for (const StageProgram::FsdpUnit& u : units) m_pass_issuer.push_back(u.issued_by);
  } else {
    std::vector<double> params;
    for (size_t idx : m_pass) params.push_back(units[idx].params);
    m_pass_issuer = prefetch_issuers(params, prefetch_bucket_params());
  }
  m_pass_gather.assign(n, kNoTask);
  m_pass_fetched = m_pass_issued = 0;
}

void StageBuilder::fetch_submodules_for(OpName op) {
  const int32_t unit = op == OpName::embedding ? -1 : op == OpName::logits ? -2 : m_layer;
  const auto it = m_units_of.find(unit);
  if (it == m_units_of.end() || m_pass.empty()) return;
  // The furthest of the unit's submodules this op needs that is not fetched yet in this pass.
  const size_t n = m_pass.size();
  size_t target = n;
  for (size_t idx : it->second) {
    const std::vector<OpName>& ops = m_unit_ops[idx];
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) continue;
    const size_t position = m_pass[0] == 0 ? idx : n - 1 - idx;
    if (position >= m_pass_fetched && (target == n || position > target)) target = position;
  }
  if (target == n) return;
  for (size_t position = m_pass_fetched; position <= target; ++position) fetch_position(position);
  m_pass_fetched = target + 1;
}

// A submodule's pre-forward (or pre-backward) hook: its own gather if nothing issued it yet,
// then the gathers it prefetches, each after the compute before it; the module waits for its own.
void StageBuilder::fetch_position(size_t position) {
  const Shared& s = m_s;
  const int32_t saved = m_layer;
  for (; m_pass_issued < m_pass.size() && size_t(m_pass_issuer[m_pass_issued]) <= position; ++m_pass_issued) {
    const StageProgram::FsdpUnit& u = m_prog.fsdp_units[m_pass[m_pass_issued]];
    m_layer = u.unit;
    uint32_t last = kNoTask;
    if (s.dp_size > 1 && u.params > u.expert_params)
      last = collective(Stream::dp_param, OpName::fsdp_gather, CollectiveOp::all_gather, s.dp_group,
                        (u.params - u.expert_params) * s.param_elem, Phase::comm, {m_last_compute});
    if (s.expert_dp_size > 1 && u.expert_params > 0)
      last = collective(Stream::dp_param, OpName::fsdp_gather, CollectiveOp::all_gather, GroupKind::edp,
                        u.expert_params * s.param_elem, Phase::comm, {m_last_compute});
    m_pass_gather[m_pass_issued] = last;
  }
  m_layer = saved;
  if (m_pass_gather[position] != kNoTask) m_wait.push_back(m_pass_gather[position]);
}

// After a unit's backward: the reduce-scatters its submodules carry (their own, or a bucket
// that fills there), each on the gradient stream after the last compute op. With a limit on
// reduce events in flight the host blocks on the oldest beyond it: the next compute waits.
void StageBuilder::reduce_submodules(int32_t unit) {
  const Shared& s = m_s;
  const auto it = m_units_of.find(unit);
  if (it == m_units_of.end()) return;
  const int32_t saved = m_layer;
  m_layer = unit;
  for (auto idx = it->second.rbegin(); idx != it->second.rend(); ++idx) {
    const StageProgram::FsdpUnit& u = m_prog.fsdp_units[*idx];
    const double dense = u.reduced_params() - u.reduced_expert_params(), experts = u.reduced_expert_params();
    for (const auto& [group, size, params] :
         {std::tuple{s.dp_group, s.dp_size, dense}, std::tuple{GroupKind::edp, s.expert_dp_size, experts}}) {
      if (size <= 1 || params <= 0) continue;
      const uint32_t call =
          collective(Stream::dp_grad, OpName::fsdp_reduce, CollectiveOp::reduce_scatter, group,
                     params * s.opt.grad_reduce_bytes, Phase::comm, {m_last_compute});
      m_grad_reduces.push_back(call);
      m_reduce_calls.push_back(call);
      const auto limit = static_cast<size_t>(s.opt.zero3_reduce_events);
      if (limit > 0 && m_reduce_calls.size() > limit)
        m_wait.push_back(m_reduce_calls[m_reduce_calls.size() - 1 - limit]);
    }
  }
  m_layer = saved;
}

void StageBuilder::optimizer() {
  const Shared& s = m_s;
  const Layout& l = s.sc.layout;
  m_mb = -1;
  m_chunk = 0;
  m_layer = -1;
  if (s.opt.grad_reduce == GradReduceOverlap::after_backward && !reduces_every_micro_batch())
    for (size_t bucket : m_buckets_ready) reduce_bucket(bucket);
  for (uint32_t r : m_grad_reduces) m_wait.push_back(r);
  // The local shard: dense parameters over the DP group, experts over the expert-DP group.
  const double dense = m_prog.params - m_prog.expert_params;
  const double shard =
      l.zero_stage >= 1 ? dense / d(s.dp_size) + m_prog.expert_params / d(s.expert_dp_size) : m_prog.params;
  // Bytes per parameter from the framework's optimizer (WorkloadOptions): already counted per
  // kernel, so no eager factor.
  OpShape norm;
  norm.cls = OpClass::memory;
  norm.bytes = shard * s.opt.grad_clip_bytes_per_param;
  compute(OpName::grad_norm, Phase::optimizer, norm, 0);
  OpShape adam = norm;
  adam.bytes = shard * s.opt.adam_bytes_per_param;
  compute(OpName::optimizer, Phase::optimizer, adam, 0);
  if (s.opt.step_overhead_s > 0) {
    OpShape host;
    host.cls = OpClass::host;
    host.host_s = s.opt.step_overhead_s;
    compute(OpName::step_overhead, Phase::optimizer, host, 0);
  }
  if (l.zero_stage >= 1 && l.zero_stage <= 2 && s.opt.param_gather == ParamGatherOverlap::after_optimizer)
    for (size_t bucket : m_buckets_ready) {
      const GradBucket& b = m_grad_buckets[bucket];
      collective(Stream::dp_param, OpName::dp_param_gather, CollectiveOp::all_gather,
                 bucket_group(b.kind).first, b.params * s.param_elem, Phase::comm, {m_last_compute});
    }
}

// ---------------------------------------------------------------------------------------------
// Slots

Task StageBuilder::pp_message(TaskKind kind, Stream stream, OpName op, int64_t peer_stage,
                              double bytes) const {
  Task t;
  t.kind = kind;
  t.stream = stream;
  t.phase = Phase::comm;
  t.op = op;
  t.coll = CollectiveOp::send_recv;
  t.group = GroupKind::pp;
  t.comm_bytes = bytes;
  t.peer_stage = static_cast<int32_t>(peer_stage);
  return t;
}

// Under DeepSpeed's pipeline engine a recv is posted when the host reaches it (after the last
// compute op and the p2p call before it), and its send waits for that (step_executor.cpp): the
// two meet in lock-step, neither side overlapping the transfer with compute.
void StageBuilder::pp_recv(OpName op, int64_t peer_stage, double bytes, Phase pass, int64_t mb,
                           int64_t chunk) {
  const std::vector<uint32_t> posted =
      deepspeed_pipeline() ? std::vector<uint32_t>{m_last_compute, m_last_p2p} : std::vector<uint32_t>{};
  const uint32_t r = add(pp_message(TaskKind::recv, Stream::pp_recv, op, peer_stage, bytes), posted);
  recv_index[{pass == Phase::forward, mb, chunk}] = r;
  m_wait.push_back(r);
  m_last_p2p = r;
  // DeepSpeed's pipe_partitioned (default): each TP rank sent 1/tp of the stage output and the
  // receiver all-gathers it over TP (PartitionedTensor.full(); frameworks.md 2.2). Megatron
  // with sequence parallelism sends a shard it keeps sharded.
  if (deepspeed_pipeline() && m_s.tp > 1 && !m_s.sp) {
    m_wait.push_back(
        collective(Stream::tp, op, CollectiveOp::all_gather, GroupKind::tp, bytes * d(m_s.tp), pass, {r}));
  }
}

void StageBuilder::pp_send(OpName op, int64_t peer_stage, int64_t peer_chunk, double bytes, Phase pass,
                           int64_t mb) {
  if (deepspeed_pipeline()) {  // TrainSchedule sends it at the next step (flush_deferred_send)
    m_deferred_send = DeferredSend{
        op, peer_stage, peer_chunk, bytes, pass, mb, train_schedule_step(pass == Phase::forward, mb)};
    return;
  }
  const uint32_t snd =
      add(pp_message(TaskKind::send, Stream::pp_send, op, peer_stage, bytes), {m_last_compute});
  sends.push_back({snd, peer_stage, pass == Phase::forward, mb, peer_chunk});
  if (m_blocking_send) m_wait.push_back(snd);
}

// DeepSpeed's TrainSchedule sends a step's output at the start of the next step: a forward
// step first sends the previous backward's gradient, then receives its activation; a backward
// step first receives its gradient, then sends the previous forward's activation
// (runtime/pipe/schedule.py). Each call blocks (assert async_op == False).
void StageBuilder::flush_deferred_send() {
  if (!m_deferred_send) return;
  const DeferredSend ds = *m_deferred_send;
  m_deferred_send.reset();
  const int16_t chunk = m_chunk;
  const int32_t mb = m_mb;
  m_mb = static_cast<int32_t>(ds.mb);
  const uint32_t snd = add(pp_message(TaskKind::send, Stream::pp_send, ds.op, ds.peer_stage, ds.bytes),
                           {m_last_compute, m_last_p2p});
  sends.push_back({snd, ds.peer_stage, ds.pass == Phase::forward, ds.mb, ds.peer_chunk});
  m_wait.push_back(snd);
  m_last_p2p = snd;
  m_mb = mb;
  m_chunk = chunk;
}

StageBuilder::SlotPlace StageBuilder::enter_slot(int64_t mb, int64_t chunk) {
  const Shared& s = m_s;
  m_mb = static_cast<int32_t>(mb);
  m_chunk = static_cast<int16_t>(chunk);
  SlotPlace at;
  at.at = s.place(m_stage, chunk);
  at.idx = static_cast<size_t>(m_stage * s.v + chunk);
  at.msg = s.T * s.h * s.elem / d(s.tp);  // Megatron scatter-gather: 1/t of the activation each
  return at;
}

void StageBuilder::forward_slot(int64_t mb, int64_t chunk) {
  const Shared& s = m_s;
  const auto [at, idx, msg] = enter_slot(mb, chunk);
  if (s.submodule_gathers) start_submodule_pass(Phase::forward);
  flush_deferred_send();
  if (at.position > 0) {
    pp_recv(OpName::pp_act, at.prev_stage, msg, Phase::forward, mb, chunk);
  } else {
    embedding_forward();
  }
  for (int64_t i = 0; i < s.layers_per_chunk[idx]; ++i)
    layer_forward(static_cast<int32_t>(s.first_layer[idx] + i), Phase::forward);
  if (at.position == at.last) {
    head_forward();
  } else {
    pp_send(OpName::pp_act, at.next_stage, at.next_chunk, msg, Phase::forward, mb);
  }
  m_in_flight_chunks += 1;
  m_in_flight_layers += s.layers_per_chunk[idx];
  m_prog.max_in_flight_chunks = std::max(m_prog.max_in_flight_chunks, m_in_flight_chunks);
  m_prog.max_in_flight_layers = std::max(m_prog.max_in_flight_layers, m_in_flight_layers);
}

void StageBuilder::backward_slot(int64_t mb, int64_t chunk) {
  const Shared& s = m_s;
  const auto [at, idx, msg] = enter_slot(mb, chunk);
  if (s.submodule_gathers) start_submodule_pass(Phase::backward);
  if (at.position < at.last) {
    // A backward step receives its gradient, then sends the previous step's output; an output
    // made before an idle step went out on that step, before this receive (a stage with fewer
    // micro-batches than the stages after it idles between its forward and its backward).
    if (m_deferred_send && m_deferred_send->step + 1 < train_schedule_step(false, mb)) flush_deferred_send();
    pp_recv(OpName::pp_grad, at.next_stage, msg, Phase::backward, mb, chunk);
    flush_deferred_send();
  } else {
    flush_deferred_send();
    head_backward();
  }
  for (int64_t i = s.layers_per_chunk[idx] - 1; i >= 0; --i)
    layer_backward(static_cast<int32_t>(s.first_layer[idx] + i));
  if (at.position > 0) {
    pp_send(OpName::pp_grad, at.prev_stage, at.prev_chunk, msg, Phase::backward, mb);
  } else {
    embedding_backward();
  }
  m_in_flight_chunks -= 1;
  m_in_flight_layers -= s.layers_per_chunk[idx];
}

void StageBuilder::build(const std::vector<PipelineSlot>& slots, PipelineSchedule schedule) {
  const Shared& s = m_s;
  const Layout& l = s.sc.layout;
  m_schedule = schedule;
  // Megatron's 1F1B waits for each p2p op (batch_isend_irecv + wait); the interleaved schedule
  // overlaps them with compute (--overlap-p2p-communication), and so does DualPipe ("both
  // all-to-all and PP communication can be fully hidden", arXiv:2412.19437 sec. 3.2.1).
  m_blocking_send =
      slot_order(schedule, s.v) != PipelineSchedule::interleaved && schedule != PipelineSchedule::dualpipe;

  if (l.zero_stage >= 1 && l.zero_stage <= 2 && s.opt.param_gather == ParamGatherOverlap::next_forward)
    gather_params_before_first_use();

  for (size_t k = 0; k < slots.size(); ++k) {
    if (slots[k].paired_with_next && k + 1 < slots.size()) {
      paired_slots(slots[k], slots[k + 1]);
      ++k;
    } else {
      run_slot(slots[k]);
    }
  }
  flush_deferred_send();
  optimizer();
  // In micro-batches of this stage's full layer count, rounded up.
  const double stage_layers = d(static_cast<int64_t>(m_prog.layers.size()));
  m_prog.max_in_flight_micro_batches =
      stage_layers > 0 ? static_cast<int64_t>(std::ceil(d(m_prog.max_in_flight_layers) / stage_layers)) : 0;
}

void StageBuilder::run_slot(const PipelineSlot& slot) {
  if (slot.forward)
    forward_slot(slot.micro_batch, slot.chunk);
  else
    backward_slot(slot.micro_batch, slot.chunk);
}

// Megatron-Core's combined 1F1B (model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run):
// forward layer k of one micro-batch beside backward layer L−1−k of the other, each layer cut at
// its all-to-alls into nodes, on one compute and one communication stream:
//   comm:    combine_bwd      | dispatch_fwd → dispatch_bwd   | combine_fwd
//   compute: pre_dispatch_fwd | mlp_bwd → mlp_bwd_dw → mlp_fwd | pre_dispatch_bwd
// Both slots are appended whole, then cut into segments, each ending at one of its EP all-to-alls,
// and the segments taken in turn, the backward's first: its combine_bwd, the forward's dispatch,
// the backward's dispatch_bwd, the forward's combine, the next layer's ... in program order (the
// streams' order). Neither slot waits for the other: the pair's own waits are the next slot's.
// DualPipe overlaps its F&B chunks the same way (arXiv:2412.19437 sec. 3.2.1, Figure 4).
void StageBuilder::paired_slots(const PipelineSlot& first, const PipelineSlot& second) {
  const auto begin = static_cast<uint32_t>(m_prog.tasks.size());
  run_slot(first);
  const auto middle = static_cast<uint32_t>(m_prog.tasks.size());
  // The second starts on its own inputs: nothing of the first (which it may run before).
  const std::vector<uint32_t> first_waits = hold_waits();
  m_last_compute = kNoTask;
  run_slot(second);
  const auto end = static_cast<uint32_t>(m_prog.tasks.size());
  release_waits(first_waits);
  auto segments = [&](uint32_t from, uint32_t to) {
    std::vector<std::vector<uint32_t>> out(1);
    for (uint32_t i = from; i < to; ++i) {
      out.back().push_back(i);
      const Task& t = m_prog.tasks[i];
      if (t.kind == TaskKind::collective && t.stream == Stream::ep) out.emplace_back();
    }
    return out;
  };
  const auto a = segments(begin, middle), b = segments(middle, end);
  const auto& backward = first.forward ? b : a;
  const auto& forward = first.forward ? a : b;
  std::vector<uint32_t> order;
  order.reserve(end - begin);
  for (size_t k = 0; k < std::max(backward.size(), forward.size()); ++k)
    for (const auto* side : {&backward, &forward})
      if (k < side->size()) order.insert(order.end(), (*side)[k].begin(), (*side)[k].end());
  reorder_tasks(begin, order);
}

void StageBuilder::reorder_tasks(uint32_t begin, const std::vector<uint32_t>& order) {
  const auto end = static_cast<uint32_t>(begin + order.size());
  std::vector<uint32_t> new_index(order.size());
  for (size_t k = 0; k < order.size(); ++k) new_index[order[k] - begin] = static_cast<uint32_t>(begin + k);
  auto renumber = [&](uint32_t& id) {
    if (id != kNoTask && id >= begin && id < end) id = new_index[id - begin];
  };
  std::vector<Task> tasks;
  std::vector<uint32_t> deps;
  tasks.reserve(order.size());
  const auto deps_begin = static_cast<uint32_t>(m_prog.tasks[begin].first_dep);
  for (uint32_t old : order) {
    Task t = m_prog.tasks[old];
    const uint32_t first = static_cast<uint32_t>(deps_begin + deps.size());
    for (uint16_t i = 0; i < t.dep_count; ++i) {
      uint32_t dep = m_prog.deps[t.first_dep + i];
      renumber(dep);
      deps.push_back(dep);
    }
    t.first_dep = first;
    tasks.push_back(t);
  }
  SIMRUN_ASSERT(deps_begin + deps.size() == m_prog.deps.size(), "the reordered tasks own the last deps");
  std::copy(tasks.begin(), tasks.end(), m_prog.tasks.begin() + begin);
  std::copy(deps.begin(), deps.end(), m_prog.deps.begin() + deps_begin);
  // Every reference the builder keeps to a task.
  for (auto& [key, id] : recv_index) renumber(id);
  for (PendingSend& snd : sends) renumber(snd.task);
  renumber(m_last_compute);
  for (uint32_t& id : m_wait) renumber(id);
  for (uint32_t& id : m_grad_reduces) renumber(id);
  for (auto& [layer, ids] : m_param_gather_of_layer)
    for (uint32_t& id : ids) renumber(id);
  for (auto* of_layer :
       {&m_first_op_of_layer, &m_backward_start_of_layer, &m_gradients_done_of_layer, &m_prefetched_gather})
    for (auto& [layer, id] : *of_layer) renumber(id);
}

void link_pipeline_messages(std::vector<StageBuilder>& builders) {
  for (auto& b : builders) {
    for (const auto& snd : b.sends) {
      auto& dst = builders[static_cast<size_t>(snd.dst_stage)];
      const auto it = dst.recv_index.find({snd.forward, snd.micro_batch, snd.dst_chunk});
      SIMRUN_ASSERT(it != dst.recv_index.end(), "pipeline send without a matching recv");
      b.program().tasks[snd.task].peer_task = it->second;
    }
  }
}

}  // namespace simrun::detail
