// Private to the workload builder: one StageBuilder assembles one stage's program from the
// pipeline schedule's slots (workload_builder.cpp: the layers; workload_builder_attention.cpp:
// their attention block; workload_builder_moe.cpp: the MoE layer; workload_builder_step.cpp: the
// step around them).
#pragma once

#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "simrun/sim/scenario/precision_recipe.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {
struct ParamCounts;
}

namespace simrun::detail {

// A count as the double the cost formulas take.
inline double d(int64_t v) { return static_cast<double>(v); }

// Precision of the GEMMs Transformer Engine leaves outside fp8 (output layer, MoE router).
Precision outside_fp8(Precision p);

class StageBuilder {
 public:
  // Everything the stages share: the scenario's dimensions, precomputed once.
  struct Shared {
    Shared(const Scenario& sc, const WorkloadOptions& o, const std::vector<int64_t>& layers_per_chunk,
           int64_t v, int64_t m, PipelineSchedule schedule = PipelineSchedule::one_f_one_b);
    const Scenario& sc;
    const WorkloadOptions& opt;
    std::vector<int64_t> layers_per_chunk;  // stage·v + chunk
    std::vector<int64_t> first_layer;       // stage·v + chunk → first global layer id
    int64_t v, m, pp, tp, cp;               // v: chunks per stage (virtual stages; DualPipe's two)
    PipelineSchedule schedule;
    // The first and last micro-batch through `chunk` (DualPipe: each direction its half).
    int64_t first_mb(int64_t chunk) const {
      return schedule == PipelineSchedule::dualpipe && chunk == 1 ? m / 2 : 0;
    }
    int64_t last_mb(int64_t chunk) const {
      return schedule == PipelineSchedule::dualpipe && chunk == 0 ? m / 2 - 1 : m - 1;
    }
    ChunkPlace place(int64_t stage, int64_t chunk) const {
      return chunk_place(schedule, stage, chunk, pp, v);
    }
    // Context parallelism (Layout::cp_a2a, cp_ring): the ranks of the Ulysses all-to-alls (1:
    // none) and of the ring (1: none), with their groups (GroupKind::cp but under a2a+p2p);
    // or K,V all-gathered over the CP group (CpCommType::all_gather).
    int64_t cp_a2a, cp_ring;
    GroupKind cp_a2a_group, cp_ring_group;
    bool cp_all_gather;
    bool sp, flash, causal, swiglu, rope, layernorm;
    Precision gemm_precision;
    // The fp8 / fp4 recipe (precision_recipe.hpp): quantisation bytes per element cast, and
    // the first layer of the last ones it keeps in 16-bit (layers from there run at 16 bits).
    const PrecisionRecipeSpec* recipe = nullptr;
    int64_t first_bf16_layer = 0;
    // Transformer Engine's LayerNormLinear / LayerNormMLP (fused kernels) write the norm's
    // output in fp8 when the recipe knows its scale beforehand (delayed scaling), so the QKV and
    // FC1 GEMMs after a norm need no cast of their own.
    bool norm_emits_fp8;
    double param_elem;  // bytes per parameter gathered (ZeRO, FSDP): elem, or 1 with fp8 parameters
    double elem;        // activation element bytes (2, or 4 for fp32)
    double T, Ts;       // tokens per micro-batch on this rank: full, and SP-split
    double h, q_loc, kv_loc, f_loc, heads_loc, head_dim, seq, vocab_loc;
    // The attention core's QKᵀ + PV width on this rank (MHA/GQA: 2·q) and the output
    // projection's input width (q; MLA: heads·d_v).
    double core_width_loc, out_width_loc;
    // K's and V's widths together, what a CP exchange moves per token (2·kv; MLA: heads·(d_qk + d_v)).
    double kv_pair_loc;
    // Multi-head latent attention: q_loc = heads·(d_nope + d_rope), kv_loc = heads·d_v on this
    // rank (what the core reads and writes), head_dim their mean.
    bool mla = false;
    double q_rank = 0, kv_rank = 0;      // latent widths r_q (0: plain Q projection), r_kv
    double rope_dim = 0, kv_up_loc = 0;  // d_rope; the KV up-projection's width heads·(d_nope + d_v)
    double embedding_params_local;       // embedding (+positions) on the first stage (vocab split)
    double output_params_local;          // untied output layer + final norm on the last stage
    double attn_params_local;            // attention + the two norms of one layer (TP split)
    double dense_ffn_params_local;       // the FFN of a dense layer
    GroupKind dp_group;                  // dp, or dp×cp when cp > 1
    int64_t dp_size;                     // ranks sharing a ZeRO shard

    // Mixture of experts (the model's is_moe_layer), balanced routing.
    bool moe = false;
    int64_t ep = 1, etp = 1;
    int64_t expert_dp_size = 1;  // ranks holding the same experts (expert gradients)
    double experts = 0;          // routed experts E
    double top_k = 0;
    double experts_loc = 0;        // E/ep held by this rank
    double dispatched_tokens = 0;  // token copies this rank sends out: Ts·top_k·moe_load
    EpExchange exchange;           // how the all-to-alls move them (ep_exchange)
    double routed_tokens = 0;      // token copies this rank's experts compute: dispatched·etp
    // Of them, those Megatron's FLOP count takes (model FLOPs): Ts·top_k·etp, unpadded.
    double counted_tokens = 0;
    double moe_load = 1;                // Layout::moe_load: token copies per expert over the balanced share
    double expert_f_loc = 0;            // one expert's FFN width here: f_e/etp
    double shared_f_loc = 0;            // the shared experts' FFN width here: shared·f_e/tp
    double moe_dense_params_local = 0;  // router + shared experts of one MoE layer
    double expert_params_local = 0;     // the routed experts of one MoE layer held here

    bool is_moe_layer(int64_t layer) const { return sc.model.is_moe_layer(layer); }
    // One layer's parameters on this rank: reduced over the DP group, and (MoE layers) over the
    // expert-DP group.
    double layer_dense_params(int64_t layer) const {
      return attn_params_local + (is_moe_layer(layer) ? moe_dense_params_local : dense_ffn_params_local);
    }
    double layer_expert_params(int64_t layer) const {
      return is_moe_layer(layer) ? expert_params_local : 0.0;
    }
    double layer_params(int64_t layer) const {
      return layer_dense_params(layer) + layer_expert_params(layer);
    }
    // An FSDP unit's parameters on this rank: a layer (id ≥ 0), the embedding (−1) or the output
    // layer (−2).
    double fsdp_unit_params(int32_t unit) const {
      return unit >= 0 ? layer_params(unit) : unit == -1 ? embedding_params_local : output_params_local;
    }

    // DeepSpeed's ZeRO-3 (Zero3Gather::submodule, pp = 1): each submodule's weights gathered by
    // its own hooks. A gathered submodule of a layer (or of the embedding, -1, or the output
    // layer, -2): this rank's parameters of it, whether they are routed experts (over
    // expert-DP), and the ops that need them gathered.
    struct Submodule {
      double params = 0;
      bool experts = false;
      std::vector<OpName> ops;
    };
    bool submodule_gathers = false;
    // The unit's submodules in forward order, those under the persistence threshold left out
    // (they stay whole on every rank: norms, biases, small matrices).
    std::vector<Submodule> submodules(int32_t unit) const;

   private:
    // The constructor's parts: the attention's widths on this rank (MHA/GQA or MLA); the
    // parameters each rank holds and the group reducing them; the experts' (MoE models).
    void shape_attention(const ModelSpec& md);
    void split_params(const ModelSpec& md, const ParamCounts& pc);
    void shape_moe(const ModelSpec& md, const ParamCounts& pc);
  };

  StageBuilder(const Shared& shared, int64_t stage);
  void build(const std::vector<PipelineSlot>& slots, PipelineSchedule schedule);
  StageProgram take() { return std::move(m_prog); }
  StageProgram& program() { return m_prog; }

  // Recv task of (direction forward?, micro-batch, chunk), for linking sends.
  std::map<std::tuple<bool, int64_t, int64_t>, uint32_t> recv_index;
  // Send tasks: (task, destination stage, forward?, micro-batch, destination chunk).
  struct PendingSend {
    uint32_t task;
    int64_t dst_stage;
    bool forward;
    int64_t micro_batch;
    int64_t dst_chunk;
  };
  std::vector<PendingSend> sends;

 private:
  uint32_t add(Task t, const std::vector<uint32_t>& deps);
  // The index of `shape` in the program's shapes, added once: the micro-batches repeat theirs.
  uint32_t intern(const OpShape& shape);
  uint32_t compute(OpName op, Phase phase, const OpShape& shape, double flops);
  // A routed-expert GEMM: `counted_flops` of model FLOPs, its padding (moe_load − 1 times
  // them) counted as hardware FLOPs only.
  uint32_t expert_gemm(OpName op, Phase phase, const OpShape& shape, double counted_flops);
  uint32_t collective(Stream stream, OpName op, CollectiveOp coll, GroupKind group, double bytes, Phase phase,
                      std::vector<uint32_t> deps);
  // Under fp8, whether the GEMM pays the cast of its M×K operand (see workload_builder.cpp):
  // InputCast::already_cast where Transformer Engine has an fp8 copy of it already.
  enum class InputCast : uint8_t { cast, already_cast };
  OpShape gemm(double m, double n, double k, Precision p, InputCast input = InputCast::cast) const;
  // The GEMM precision of the layer being built (m_layer): the layout's, or 16-bit on the last
  // layers a low-precision recipe keeps there.
  Precision layer_gemm_precision() const;
  // One per local expert.
  OpShape grouped_gemm(double m, double n, double k, InputCast input = InputCast::cast) const;
  OpShape memory_op(double bytes) const;
  // The attention core's shape on this rank (forward or backward), bytes left to the caller.
  OpShape attention_block(OpClass cls) const;

  // Pipeline p2p of one activation (forward) or its gradient (backward) with chunk `peer_chunk`
  // of stage `peer_stage`: the receive gates the next compute op; the send follows the last one.
  Task pp_message(TaskKind kind, Stream stream, OpName op, int64_t peer_stage, double bytes) const;
  // `pass`: Phase::forward (an activation) or Phase::backward (its gradient).
  void pp_recv(OpName op, int64_t peer_stage, double bytes, Phase pass, int64_t mb, int64_t chunk);
  void pp_send(OpName op, int64_t peer_stage, int64_t peer_chunk, double bytes, Phase pass, int64_t mb);
  // Where a slot of (micro-batch, chunk) sits: its place in its pipeline (chunk_place), its index
  // into layers_per_chunk/first_layer, and the bytes of one pipeline message. Sets the cursor's
  // micro-batch and chunk.
  struct SlotPlace {
    ChunkPlace at;
    size_t idx = 0;
    double msg = 0;
  };
  SlotPlace enter_slot(int64_t mb, int64_t chunk);
  void forward_slot(int64_t mb, int64_t chunk);
  void backward_slot(int64_t mb, int64_t chunk);
  // A slot and the next run beside each other (PipelineSlot::paired_with_next): both appended,
  // then their tasks reordered so that each one's EP all-to-alls run behind the other's compute.
  void paired_slots(const PipelineSlot& first, const PipelineSlot& second);
  void run_slot(const PipelineSlot& slot);
  // Moves the tasks [begin, end) to the order `order` (old indices, a permutation of the range),
  // renumbering every reference to them.
  void reorder_tasks(uint32_t begin, const std::vector<uint32_t>& order);
  void layer_forward(int32_t layer, Phase phase);
  void layer_backward(int32_t layer);
  void recompute_norms_up_projections_and_activations(int32_t layer);
  void cp_all_to_all(double width, Phase phase);
  void cp_kv_collective(CollectiveOp op, Phase phase);
  void attention_core_forward(Phase phase);
  void attention_core_backward();
  // The Q/K/V projections after ln_attn (and rope), given the SP all-gather to wait for.
  void qkv_forward(Phase phase, uint32_t sp_gather);
  void qkv_backward();
  void mla_forward(Phase phase, uint32_t sp_gather);
  void mla_backward();
  // The MLP block between ln_mlp and the residual: dense (TP column/row-parallel), or MoE;
  // Fc1Input::norm_output: FC1 reads ln_mlp's output directly (not so for an MoE layer's shared
  // experts, which read the router's input).
  enum class Fc1Input : uint8_t { norm_output, other };
  void mlp_forward(double f_loc, Phase phase, Fc1Input input);
  void mlp_backward(double f_loc);
  // Its halves: FC1 and the activation after the input's all-gather (`input_gather`, kNoTask
  // without SP), FC2 and its TP reduction; in the backward FC2's gradients with the
  // activation's, and FC1's.
  void mlp_up_forward(double f_loc, Phase phase, Fc1Input input, uint32_t input_gather);
  void mlp_down_forward(double f_loc, Phase phase);
  void mlp_down_backward(double f_loc);
  void mlp_up_backward(double f_loc);
  void moe_forward(Phase phase);
  void moe_backward();
  // Whether the shared experts run beside the all-to-alls (WorkloadOptions::moe_shared_expert_overlap).
  bool shared_experts_overlap() const;
  // The tasks the next compute op would wait for, taken aside while ops that do not wait for
  // them are appended, then given back.
  std::vector<uint32_t> hold_waits();
  void release_waits(const std::vector<uint32_t>& held);
  // An all-to-all of this rank's routed token copies over the EP group, after the last compute
  // op and `after` (a collective whose output it sends, or kNoTask); returns the task, or
  // kNoTask when ep = 1.
  uint32_t ep_all_to_all(OpName op, Phase phase, uint32_t after = kNoTask);
  // The dispatched tokens regrouped by local expert (or back), when a rank holds several.
  void sort_chunks(Phase phase);
  // A column-parallel linear's backward (QKV, FC1): input re-gather ∥ dgrad, grad RS/AR ∥ wgrad.
  void column_parallel_backward(OpName op, OpName ag_name, OpName rs_name, double n_loc, double flops_each);
  // A row-parallel linear's backward (proj, FC2): grad all-gather (SP) then dgrad, wgrad.
  void row_parallel_backward(OpName op, OpName ag_name, double k_loc, double flops_each);
  // Forward TP collective after a row-parallel GEMM (AR, or RS with SP).
  void tp_after_row_parallel(OpName rs_name, OpName ar_name, uint32_t gemm_task, uint32_t before_gemm,
                             Phase phase);
  // Forward SP all-gather before a column-parallel GEMM; returns the task or kNoTask.
  uint32_t tp_before_column_parallel(OpName ag_name, Phase phase);
  // The SP all-gather of a column-parallel GEMM's input, after the last compute op (kNoTask
  // without SP), and the wait for it: before the GEMM, or after it when TP comm overlap
  // pipelines the two (called where the GEMM is appended: on its one side, then the other).
  enum class GemmSide : uint8_t { before, after };
  uint32_t sp_input_gather(OpName ag_name, Phase phase);
  void wait_for_input_gather(uint32_t ag, GemmSide side);
  void embedding_forward();
  void embedding_backward();
  void head_forward();
  void head_backward();
  // The group a kind of gradient is reduced over (dense: DP or DP×CP; experts: expert-DP),
  // and its size.
  std::pair<GroupKind, int64_t> bucket_group(int kind) const;
  // Megatron DDP's buckets of this stage, fixed before the step (see plan_grad_buckets).
  void plan_grad_buckets();
  // The dense (DP) or expert (EDP) gradients of `layer` are final; a bucket whose last layer
  // this was reduces now (bucketed), or after the backward.
  void grads_ready(int kind, int32_t layer);
  void reduce_bucket(size_t bucket);
  // DeepSpeed ZeRO-2: every micro-batch's gradients reduced
  // (WorkloadOptions::zero2_reduce_every_micro_batch).
  bool reduces_every_micro_batch() const;
  // ZeRO-1/2 --overlap-param-gather: each bucket's all-gather before its first forward use.
  void gather_params_before_first_use();
  // ZeRO-3: a unit's parameters by the group sharding them; its gathers before it computes
  // (prefetched), its reduce-scatters after its backward. `pass`: the gather before the unit's
  // forward (Phase::forward) or its backward (Phase::backward).
  std::vector<std::pair<GroupKind, double>> unit_shards(int32_t unit) const;
  void fsdp_gather(int32_t unit, Phase pass);
  uint32_t issue_fsdp_gather(int32_t unit, Phase pass);
  void fsdp_reduce(int32_t unit);
  // DeepSpeed's ZeRO-3: the submodule units of this stage (indices into fsdp_units) by (unit,
  // submodule); a pass's fetch order (forward: as fsdp_units, backward: reversed), which of them
  // issues each one's gather and the gathers issued so far. Before a compute op that needs a
  // submodule not yet fetched in this pass, every unit up to it is fetched: its own gather
  // waited for, and the gathers it issues started.
  void plan_submodule_units();
  void start_submodule_pass(Phase pass);
  void fetch_submodules_for(OpName op);
  void fetch_position(size_t position);
  void reduce_submodules(int32_t unit);
  double prefetch_bucket_params() const;              // 0 with synchronous fetches
  std::vector<std::vector<OpName>> m_unit_ops;        // fsdp_units index → the ops needing it gathered
  std::map<int32_t, std::vector<size_t>> m_units_of;  // unit (layer, -1, -2) → fsdp_units indices
  std::vector<size_t> m_pass;                         // fsdp_units indices in this pass's order
  std::vector<int32_t> m_pass_issuer;                 // position → position whose fetch issues it
  std::vector<uint32_t> m_pass_gather;                // position → its last gather (kNoTask: none yet)
  size_t m_pass_fetched = 0;                          // positions fetched so far
  size_t m_pass_issued = 0;                           // positions whose gathers are issued
  std::vector<uint32_t> m_reduce_calls;               // DeepSpeed's reduce buckets, in issue order
  // DeepSpeed's pipeline engine: a send deferred to TrainSchedule's next step (the next slot's,
  // or an idle step before it: flush_deferred_send), and the last p2p call (each blocks the host
  // until done).
  struct DeferredSend {
    OpName op;
    int64_t peer_stage, peer_chunk;
    double bytes;
    Phase pass;
    int64_t mb;
    int64_t step;  // TrainSchedule's step of the slot that made it: it is sent at step + 1
  };
  // The step of TrainSchedule's clock at which this stage runs micro-batch `mb`'s forward or
  // backward (deepspeed/runtime/pipe/schedule.py _step_to_micro_batch): forward 2·mb + s,
  // backward 2·mb + 2·pp − 1 − s. The steps between a stage's slots are idle but for their sends.
  int64_t train_schedule_step(bool forward, int64_t mb) const {
    return forward ? 2 * mb + m_stage : 2 * mb + 2 * m_s.pp - 1 - m_stage;
  }
  std::optional<DeferredSend> m_deferred_send;
  uint32_t m_last_p2p = kNoTask;
  void flush_deferred_send();
  bool deepspeed_pipeline() const {
    return m_s.opt.pipeline_engine == PipelineEngine::deepspeed && m_s.pp > 1;
  }
  void optimizer();

  const Shared& m_s;
  int64_t m_stage;
  StageProgram m_prog;
  PipelineSchedule m_schedule = PipelineSchedule::one_f_one_b;
  // Cursor state while appending.
  int32_t m_layer = -1;
  int32_t m_mb = -1;
  int16_t m_chunk = 0;
  Phase m_phase = Phase::forward;
  uint32_t m_last_compute = kNoTask;
  std::vector<uint32_t> m_wait;  // tasks the next compute op waits for
  std::map<OpShape, uint32_t> m_shape_index;
  // Gradient buckets (ZeRO 0–2). Megatron DDP keeps the experts' gradients in buffers of
  // their own, reduced over the expert-data-parallel group.
  static constexpr int kDenseParams = 0, kExpertParams = 1;
  struct GradBucket {
    int kind = kDenseParams;
    double params = 0;            // this rank's parameters in the bucket (after TP/EP split)
    std::vector<int32_t> layers;  // backward order, so back() is the first the forward uses;
                                  // -1 embedding, -2 output layer + final norm
    size_t pending = 0;           // layers whose gradients are not final yet
  };
  std::vector<GradBucket> m_grad_buckets;
  std::array<std::map<int32_t, size_t>, 2> m_bucket_of_layer;  // per kind: layer → bucket
  std::vector<size_t> m_buckets_ready;                         // in the order they became ready
  std::vector<uint32_t> m_grad_reduces;
  std::map<int32_t, std::vector<uint32_t>> m_param_gather_of_layer;  // layer → its buckets' param AGs
  std::map<int32_t, bool> m_layer_forwarded;                         // first forward use seen
  // FSDP (ZeRO-3).
  std::map<int32_t, uint32_t> m_first_op_of_layer;  // latest first (forward) compute op of a layer
  // A layer's backward in the prefetch's terms: the compute op that ends just as it starts, and
  // its last gradient GEMM (FsdpBackwardPrefetch::before_backward / after_backward).
  std::map<int32_t, uint32_t> m_backward_start_of_layer;
  std::map<int32_t, uint32_t> m_gradients_done_of_layer;
  std::map<int32_t, uint32_t> m_prefetched_gather;  // unit → backward all-gather issued ahead
  int64_t m_in_flight_chunks = 0;
  int64_t m_in_flight_layers = 0;
  bool m_blocking_send = true;
};

// Points every send at the recv task it completes in the destination stage's program.
void link_pipeline_messages(std::vector<StageBuilder>& builders);

}  // namespace simrun::detail
