// The workload: the task graph one GPU runs in one training step, per pipeline stage (ranks of
// a stage run the same program), as a description: every op with its shape and work, its
// dependencies and its stream, no times (the cost pass, sim/cost/workload_cost.hpp, times it;
// the event simulation runs it, sim/event/step_executor.hpp). What a program holds, op by op,
// per Megatron-LM (Narayanan et al. 2021, arXiv:2104.04473; Korthikanti et al. 2022,
// arXiv:2205.05198), is in docs/model.md "What a stage program holds".
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/framework/framework_options.hpp"
#include "simrun/sim/scenario/comm_types.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/workload/op_shape.hpp"

namespace simrun {

// Streams of one GPU; comm streams run concurrently with compute.
// ep_intra: the NVLink level of a two-level EP all-to-all (EpExchange), beside its InfiniBand
// level on ep.
enum class Stream : uint8_t { compute, tp, cp, ep, pp_send, pp_recv, dp_grad, dp_param, ep_intra, count };
inline constexpr int kStreamCount = static_cast<int>(Stream::count);
const char* to_string(Stream s);

// What a task's time counts as in the breakdown.
enum class Phase : uint8_t { forward, backward, recompute, optimizer, comm };
const char* to_string(Phase p);

enum class TaskKind : uint8_t {
  compute,     // a GPU kernel (or host work the stream waits for) of shape StageProgram::shapes[shape]
  collective,  // a collective on `group`
  send,        // pipeline p2p send to peer_stage; completes the matching recv
  recv,        // arrival marker of a pipeline p2p message (no stream time of its own)
};

// Names of operations, for traces and breakdowns.
enum class OpName : uint8_t {
  embedding,
  ln_attn,
  qkv,
  rope,
  attn_core,
  proj,
  residual_attn,
  ln_mlp,
  fc1,
  act,
  fc2,
  residual_mlp,
  final_ln,
  logits,
  loss,
  optimizer,
  grad_norm,
  step_overhead,
  tp_ag_attn,
  tp_rs_attn,
  tp_ar_attn,
  tp_ag_mlp,
  tp_rs_mlp,
  tp_ar_mlp,
  tp_ag_in_attn,
  tp_ag_in_mlp,
  tp_embedding,
  tp_logits,
  tp_loss,
  cp_kv,   // a CP ring step: K,V (backward: and dK,dV) to the next rank; or their all-gather
           // (backward: and the reduce-scatter of dK,dV)
  cp_a2a,  // a Ulysses all-to-all: Q,K,V (or O) from the sequence split to the head split, or back
  pp_act,
  pp_grad,
  dp_grad_reduce,
  dp_param_gather,
  fsdp_gather,
  fsdp_reduce,
  router,           // MoE gate: h → experts logits, softmax and top-k
  moe_permute,      // tokens sorted by expert before the dispatch (and its backward)
  moe_sort_chunks,  // received tokens regrouped by local expert after the dispatch, and back
  expert_fc1,       // grouped GEMM over the local experts
  expert_act,
  expert_fc2,
  moe_unpermute,  // combined tokens restored to sequence order, weighted by the router probs
  ep_dispatch,    // all-to-all of the routed tokens to their experts' ranks
  ep_combine,     // all-to-all of the expert outputs back
  tp_ag_expert,   // expert-TP all-gather of the dispatched tokens (expert_tp > 1)
  tp_rs_expert,   // expert-TP reduce-scatter of the expert outputs
  mla_q_down,     // MLA low-rank projections (DeepSeek-V2/V3): h → r_q, duplicated over TP
  mla_q_up,       // r_q → heads·(d_nope + d_rope), column-parallel
  mla_kv_down,    // h → r_kv + d_rope, duplicated over TP
  mla_kv_up,      // r_kv → heads·(d_nope + d_v), column-parallel
  mla_norm,       // the RMSNorms on the two latents
  tp_ar_latent,   // all-reduce of a latent's gradient (its up-projection is column-parallel)
  count
};
const char* to_string(OpName op);

// The kernels that move a collective's bytes: NCCL's, timed on the fabric alone; or the MoE flex
// dispatcher's NVLink kernels (EpExchange::dispatcher_kernels), whose throughput on the GPU
// (GpuSpec::flex_dispatcher) also bounds the all-to-all's time (ProgramCost::comm_kernel_s): its
// dispatch kernel carries tokens to their experts (the forward dispatch, the combine's backward),
// its combine kernel back (the forward combine, the dispatch's backward), as DeepEP's autograd
// functions run them (Megatron-Core fused_a2a.py).
enum class CommKernel : uint8_t { nccl, flex_dispatch, flex_combine };

inline constexpr uint32_t kNoTask = 0xffffffffu;
inline constexpr uint32_t kNoShape = 0xffffffffu;

struct Task {
  TaskKind kind = TaskKind::compute;
  Stream stream = Stream::compute;
  Phase phase = Phase::forward;
  OpName op = OpName::embedding;
  CollectiveOp coll = CollectiveOp::all_reduce;
  GroupKind group = GroupKind::tp;
  CommKernel comm_kernel = CommKernel::nccl;  // collective: the kernels that move its bytes
  // The host's share (docs/model.md "Host overhead"): launches it costs the host to issue the
  // task (0 inside a CUDA graph launched with an earlier task, and for recvs), and host syncs
  // before it: the host waits for the task's dependencies to finish on the GPU, then issues it.
  uint8_t host_launches = 1;
  uint8_t host_syncs = 0;
  int16_t chunk = 0;             // model chunk (virtual stage) on this rank
  int32_t layer = -1;            // global layer index, -1 for non-layer ops
  int32_t micro_batch = -1;      // -1 for per-step ops (optimizer, DP reduction)
  uint32_t shape = kNoShape;     // compute: index into StageProgram::shapes
  double flops = 0;              // model FLOPs (Megatron convention, causal) of compute ops
  double comm_bytes = 0;         // collective: buffer size per rank (AR in=out, AG out, RS in); p2p message
  int32_t peer_stage = -1;       // send: destination stage; recv: source stage
  uint32_t peer_task = kNoTask;  // send: index of the matching recv task in the peer's program
  uint32_t first_dep = 0;        // into StageProgram::deps
  uint16_t dep_count = 0;
};

struct StageProgram {
  int64_t stage = 0;
  std::vector<Task> tasks;
  std::vector<uint32_t> deps;   // task indices, slices per Task
  std::vector<OpShape> shapes;  // of the compute tasks, one each (Task::shape)
  std::vector<int32_t> layers;  // global layer ids held by this stage (all chunks)
  double params = 0;            // parameters held (before ZeRO sharding), experts included
  double expert_params = 0;     // of which routed experts (sharded over the expert-DP group)
  // Megatron-Core DDP's gradient buckets (ZeRO 0-2; none under ZeRO-3), chunk by chunk from the
  // last, each chunk's in backward order: this rank's parameters in each, whether they are
  // routed experts (reduced over the expert-DP group instead of DP), the model chunk and how
  // many transformer layers it holds (the embedding and the output layer count none).
  struct GradBucketSize {
    double params = 0;
    bool experts = false;
    int64_t chunk = 0;
    int64_t layers = 0;
  };
  std::vector<GradBucketSize> grad_buckets;
  // ZeRO-3's gathered units in forward order, chunk by chunk (none under ZeRO 0-2): the
  // embedding on the first stage, each layer (FSDP) or each of its gathered submodules
  // (DeepSpeed, Zero3Gather::submodule), the output layer on the last, with this rank's
  // parameters in each and, of those, the routed experts'.
  struct FsdpUnit {
    int64_t chunk = 0;
    int32_t unit = 0;  // layer id; -1 the embedding, -2 the output layer
    double params = 0;
    double expert_params = 0;
    // Submodule gathers only (FSDP's layer units keep these defaults): the unit whose start
    // issues this one's forward gather (its index in fsdp_units; -1: fsdp_prefetch_layers
    // before it), its share of its layer's forward compute, and the gradients reduce-scattered
    // once its backward is done (a bucket that fills there; -1: its own parameters).
    int32_t issued_by = -1;
    double forward_share = 1;
    double reduce_params = -1, reduce_expert_params = 0;
    double reduced_params() const { return reduce_params < 0 ? params : reduce_params; }
    double reduced_expert_params() const { return reduce_params < 0 ? expert_params : reduce_expert_params; }
  };
  std::vector<FsdpUnit> fsdp_units;
  // Peak of forwards whose backward has not run yet: in layers' worth of activations, in
  // model chunks, and in micro-batches of this stage's full layer count (rounded up).
  int64_t max_in_flight_layers = 0;
  int64_t max_in_flight_chunks = 0;
  int64_t max_in_flight_micro_batches = 0;
  double flops_model = 0;      // sum of task flops, phases forward + backward
  double flops_recompute = 0;  // sum of task flops, phase recompute
  double flops_padding = 0;    // expert GEMMs on capacity padding (Layout::moe_capacity_factor)

  uint32_t dep(const Task& t, uint16_t i) const { return deps[t.first_dep + i]; }
  const OpShape& shape(const Task& t) const { return shapes[t.shape]; }
  // HBM bytes a compute task moves (its shape's overlapped and serial traffic); 0 for the rest.
  double hbm_bytes(const Task& t) const {
    return t.shape == kNoShape ? 0.0 : shapes[t.shape].bytes + shapes[t.shape].serial_bytes;
  }
};

struct Workload {
  Layout layout;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int64_t micro_batches = 0;              // per pipeline, per step
  std::vector<int64_t> layers_per_chunk;  // index stage·v + chunk
  std::vector<StageProgram> stages;
  std::vector<std::string> warnings;
  HostOverhead host;  // the framework's per-launch and per-sync host costs (WorkloadOptions::host)
  double model_flops_per_step = 0;     // whole cluster, Megatron convention (causal)
  double hardware_flops_per_step = 0;  // + recompute
  size_t task_count() const;
};

// DeepSpeed's ZeRO-3 prefetch (partitioned_param_coordinator.py fetch_sub_module; frameworks.md
// 1.2): when a unit is reached, the units after it are gathered while fewer than
// `bucket_params` elements are in flight. For each unit of `params` (a pass's order), the index
// of the unit whose fetch issues its gather: itself when nothing ahead issued it.
std::vector<int32_t> prefetch_issuers(const std::vector<double>& params, double bucket_params);

// Builds the per-stage programs: shapes, dependencies and streams, no timings (the cost pass,
// workload_cost.hpp, times them for a GPU). Throws InputError for layouts that cannot run
// (reason and the nearest valid choice in the message); adds warnings for ones that run with a
// caveat.
// How an MoE layer's all-to-alls move a token between its EP ranks (workload_builder_moe.cpp
// ep_all_to_all), by the dispatcher (WorkloadOptions::host.moe_dispatcher: flex exchanges per node), the
// model's routing (MoeSpec::groups, topk_groups) and the EP group's place on the cluster
// (Layout::ep_intra()).
struct EpExchange {
  // Two levels (a DeepEP-style dispatcher over an EP group spanning scale-up domains): an
  // all-to-all over GroupKind::ep_inter (InfiniBand) of one copy per distinct destination domain,
  // and beside it one over GroupKind::ep_intra (NVLink) of one per distinct destination rank.
  // Else one all-to-all over GroupKind::ep of `copies` per token.
  bool two_level = false;
  double copies = 0;       // one level: top_k (a copy per expert), or distinct ranks (DeepEP)
  double node_copies = 0;  // two levels: distinct destination domains per token (expected)
  double rank_copies = 0;  // two levels: distinct destination ranks per token (expected)
  // The one-level all-to-all of a flex dispatcher over an EP group inside one scale-up domain runs
  // on its NVLink kernels (DeepEP's intranode kernels, HybridEP), whose measured throughput bounds
  // it (CommKernel). Not the two-level exchange: DeepEP's internode kernels are other kernels,
  // with no measured NVLink figure (their README's internode figures are the NIC's).
  bool dispatcher_kernels = false;
  // Bytes per hidden element of the all-to-alls that carry tokens to their experts (the forward
  // dispatch, the combine's backward): fp8 and an fp32 scale per 1×128 tile (ep_dispatch_fp8:
  // DeepSeek-V3 sec. 3.3.3; DeepEP's dispatch takes the fp8 tensor with float scales
  // [tokens, hidden / 128]); 0: the activations' (as the others always are).
  double dispatch_element_bytes = 0;
  std::string why;  // for --explain: the shape chosen and, where it falls back, the reason
};
EpExchange ep_exchange(const Scenario& scenario, const WorkloadOptions& options);

// Why the workload cannot be built for this layout and schedule, or nullopt: the layout's rules
// (layout_rules.hpp), the framework's pipeline engine, then the schedule's own (interleaving needs
// pp >= 2 and at least pp micro-batches, and an order that completes). build_workload throws it
// as InputError; the planner counts it as a pruning reason.
std::optional<LayoutDiagnostic> workload_layout_error(const Scenario& scenario,
                                                      const WorkloadOptions& options,
                                                      PipelineSchedule schedule);

Workload build_workload(const Scenario& scenario, const WorkloadOptions& options, PipelineSchedule schedule);
inline Workload build_workload(const Scenario& scenario, const WorkloadOptions& options = WorkloadOptions{}) {
  return build_workload(scenario, options, default_schedule(scenario.layout));
}

// Pieces of the workload outside any pipeline schedule, for the analytic model (analytic.hpp):
// it times the very ops, TP/CP collectives and dependencies the event simulation runs.
//
// probe_micro_batch: one micro-batch through a slice of the model's first two layers (pp 1,
// one chunk, one micro-batch per step) on one GPU, in program order: embedding forward, layers
// 0 and 1 forward, head forward, head backward, layers 1 and 0 backward (each with its
// recompute), embedding backward, then the slice's gradient reduction and optimizer. Task::layer
// tells the layers apart (0, 1); the rest have layer -1 and Task::op names them. Two layers, so
// that recompute of every other layer shows both parities; one for a one-layer model. The
// slice's layers run their GEMMs at the recipe's precision, or at 16 bits as the last layers a
// recipe keeps there do (first_bf16_layer).
enum class ProbeGemms : uint8_t { recipe, kept_bf16 };
StageProgram probe_micro_batch(const Scenario& scenario, const WorkloadOptions& options,
                               ProbeGemms gemms = ProbeGemms::recipe);

// Two micro-batches through the same slice: F0, B0, F1, B1, with B0 beside F1 layer by layer
// (PipelineSlot::paired_with_next) or not: what pairing hides (combined 1F1B, DualPipe's F&B).
enum class ProbePairing : uint8_t { sequential, paired };
StageProgram probe_two_micro_batches(const Scenario& scenario, const WorkloadOptions& options,
                                     ProbePairing pairing);

// The per-step tail of `stage` with no micro-batch before it: ZeRO-1/2 parameter gathers,
// gradient-norm, fused Adam over the local shard, the host step overhead. Its `params` are the
// parameters the stage holds (before ZeRO sharding). layers_per_chunk as split_layers returns
// them for v chunks per stage (DualPipe: a stage's own and its mirror's, as the workload holds them).
StageProgram optimizer_program(const Scenario& scenario, const WorkloadOptions& options,
                               const std::vector<int64_t>& layers_per_chunk, int64_t v, int64_t stage,
                               PipelineSchedule schedule = PipelineSchedule::one_f_one_b);

}  // namespace simrun
