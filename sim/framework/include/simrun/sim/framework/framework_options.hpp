// The framework behaviours a step is simulated under: what overlaps with what, which kernels and
// optimizer run (WorkloadOptions, read by the workload builder and the cost pass) and how the
// framework keeps model states and activations (MemoryDefaults, read by the memory model). A
// framework profile (profile.hpp, sim/framework/profiles/*.json) holds one set of them; the
// defaults below are the megatron-core profile's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simrun {

// What overlaps with what, which kernels and optimizer run. The defaults are the megatron-core
// profile's (sim/framework/profiles/megatron-core.json; a test checks that they agree).
enum class TpCommOverlap : uint8_t {
  backward_async,  // Megatron default: forward TP collectives exposed; backward AG/RS or AR
                   // overlapped with the dgrad/wgrad GEMMs
  full,            // TE userbuffers (--tp-comm-overlap) or PyTorch async-TP (needs sequence
                   // parallelism): each all-gather / reduce-scatter runs beside the GEMM that
                   // consumes or produces it; only what outlasts that GEMM shows
  none,            // Megatron-DeepSpeed (async_tensor_model_parallel_allreduce off): without
                   // sequence parallelism the backward input-gradient all-reduce is waited for
                   // before the wgrad GEMM; with it the AG/RS stay as backward_async
};
enum class GradReduceOverlap : uint8_t {
  after_backward,  // reduce after the pipeline flush (Megatron without --overlap-grad-reduce)
  bucketed,        // each bucket as soon as its gradients are final (--overlap-grad-reduce, torch DDP)
};
enum class ParamGatherOverlap : uint8_t {
  after_optimizer,  // ZeRO ≥ 1: all-gather updated parameters right after the optimizer step
  next_forward,     // --overlap-param-gather: gather bucket k before its first forward use
};

enum class SelectiveRecompute : uint8_t {
  attention_core,      // Megatron --recompute-granularity selective: the attention core re-runs
                       // before its backward (Korthikanti et al. 2022)
  every_other_layer,   // torchtitan's selective activation checkpointing: per-layer (every 2nd
                       // block checkpointed) or per-op (every 2nd matmul recomputed) — half a forward
  norm_mla_up_swiglu,  // DeepSeek-V3 (arXiv:2412.19437 sec. 3.2.3, 3.3.3): every RMSNorm, the MLA
                       // up-projections and the SwiGLU outputs re-run before their backward; the
                       // SwiGLU inputs kept in FP8, the attention output (the output projection's
                       // input) in E5M6
};

// When FSDP re-gathers the next unit's parameters in the backward pass.
enum class FsdpBackwardPrefetch : uint8_t {
  before_backward,  // BACKWARD_PRE (FSDP2's implicit prefetch; FSDP1 option): unit k−1's all-gather
                    // is issued when unit k's backward starts, so it hides behind all of it
  after_backward,   // BACKWARD_POST (FSDP1 / Composer default): issued from unit k's post-backward
                    // hook, once k's gradients exist, so only k's norm backward hides it
};

// How ZeRO-3 cuts a stage's parameters into all-gathers (frameworks.md 1.2).
enum class Zero3Gather : uint8_t {
  layer,      // FSDP: one unit per transformer layer (plus the embedding and the output layer)
  submodule,  // DeepSpeed: each submodule (a projection, an MLP matrix, the routed experts)
              // gathered by its own hooks; parameters under the persistence threshold stay whole
};
// Whether a ZeRO-3 gather runs ahead of the compute that needs it.
enum class Zero3Fetch : uint8_t {
  prefetch,     // issued ahead (fsdp_prefetch_layers, or zero3_prefetch_bucket_params ahead)
  synchronous,  // DeepSpeed v0.5: issued when the module is reached, with device syncs around it
};
// How ZeRO-3 reduce-scatters gradients.
enum class Zero3Reduce : uint8_t {
  per_unit,  // one reduce-scatter per gathered unit as its backward ends (FSDP; DeepSpeed v0.5:
             // one per parameter)
  bucketed,  // DeepSpeed: gradients copied into a bucket of bucket_params_min elements, one
             // reduce-scatter each time it fills
};
// The collective ZeRO-1/2 reduces a gradient bucket with.
enum class ZeroGradCollective : uint8_t {
  reduce_scatter,  // Megatron's distributed optimizer: each rank receives its shard
  all_reduce,      // DeepSpeed (use_multi_rank_bucket_allreduce): the whole bucket all-reduced,
                   // each rank keeps its slice
};
// Which pipeline engine runs pp > 1.
enum class PipelineEngine : uint8_t {
  megatron,   // Megatron-Core's schedules: batched isend/irecv pairs posted ahead
  deepspeed,  // DeepSpeed's PipelineEngine (TrainSchedule): lock-step 1F1B, blocking send and
              // recv as separate calls (a send completes once its peer has reached the recv),
              // the stage output split over TP and all-gathered on receipt, no interleaving
};

// Which kernels the framework runs around the GEMMs.
enum class KernelStack : uint8_t {
  fused,  // Transformer Engine / Megatron fused kernels: LayerNorm+cast, bias+GeLU, bias+dropout+add,
          // the architecture's best fused attention (cuDNN / FlashAttention-3 on Hopper)
  eager,  // PyTorch eager: separate norm, activation, residual and cast kernels (each re-reads its
          // inputs from HBM: eager_memory_factor × the fused traffic) and FlashAttention-2
};

// Megatron-Core's MoE token dispatcher (--moe-token-dispatcher-type). Each makes the host wait
// for the GPU once or more per MoE layer forward in dropless mode (docs/model.md "Host overhead";
// ../shared/reference/frameworks.md §5): alltoall once (d2h_event.synchronize() at
// before_ep_alltoall), allgather twice (a blocking .cpu() of tokens_per_expert, then .item()),
// flex (DeepEP / HybridEP) once (the received counts come back as a Python list). flex also
// moves the tokens as DeepSeek-V3's kernels do (arXiv:2412.19437 sec. 3.2.2; DeepEP's internode
// kernels): a token crosses InfiniBand once per destination node, to the GPU of the same in-node
// index, which forwards it over NVLink to its experts' GPUs there (the combine reverses it);
// alltoall and allgather send every token copy to its expert's rank (token_dispatcher.py).
enum class MoeDispatcher : uint8_t { alltoall, allgather, flex };

// What CUDA graphs capture (Megatron-Core --cuda-graph-scope / --cuda-graph-modules), as a set of
// bits: Transformer Engine's per-module graphs (attn, mlp, moe_router, moe_preprocess, moe) or
// the whole forward-backward (full_iteration). A captured region is issued by the host as one
// graph launch instead of one launch per kernel.
enum class CudaGraphScope : uint8_t {
  attn = 1,
  mlp = 2,              // a dense layer's MLP
  moe_router = 4,       // an MoE layer's pre-MLP norm and router
  moe_preprocess = 8,   // the dispatcher's preprocess (folded into the router op in the workload)
  moe = 16,             // the whole MoE layer: drop-and-pad only (no host sync inside)
  full_iteration = 32,  // every micro-batch's forward and backward: a step without host syncs
};
struct CudaGraphScopes {
  uint8_t bits = 0;
  bool has(CudaGraphScope s) const { return (bits & static_cast<uint8_t>(s)) != 0; }
  bool any() const { return bits != 0; }
  void add(CudaGraphScope s) { bits = static_cast<uint8_t>(bits | static_cast<uint8_t>(s)); }
  bool operator==(const CudaGraphScopes&) const = default;
};

// The host (CPU) side of a step: the framework's Python thread issues each rank's kernels one
// after another; the GPU runs a kernel only once it is issued. Sources in the profiles and in
// docs/model.md "Host overhead".
struct HostOverhead {
  // CPU time to issue one kernel (or NCCL call, or graph replay) from PyTorch eager on a DGX
  // H100: 9.4 µs (NVIDIA/Fuser issue #3507, measured CPU overhead per kernel, torch-eager).
  double launch_s = 9.4e-6;
  // A host-device synchronisation's round trip beyond waiting for the GPU's queue to drain
  // (event record and wait ~1 µs, a PCIe round trip 1–2 µs: UNVERIFIED, cudarc PR #335).
  double sync_s = 2e-6;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  CudaGraphScopes cuda_graphs;  // none by default (Megatron-LM --cuda-graph-impl none)
  // Host syncs per MoE layer forward of the dispatcher (0 under drop-and-pad).
  int dispatcher_syncs() const { return moe_dispatcher == MoeDispatcher::allgather ? 2 : 1; }
};

struct WorkloadOptions {
  KernelStack kernels = KernelStack::fused;
  // HBM traffic of the memory-bound ops with unfused kernels, relative to fused ones: a fused
  // bias+dropout+residual reads 2 and writes 1 tensor where eager dropout then add moves 6;
  // GeLU with its bias, LayerNorm with its cast likewise; not every op doubles (torch fuses
  // LayerNorm, GeLU and bias into single kernels), so 1.6 on average.
  double eager_memory_factor = 1.6;
  SelectiveRecompute selective = SelectiveRecompute::attention_core;
  // Host work once per step that the GPU waits for: launching the optimizer over every
  // parameter tensor, the gradient-norm and loss host syncs, logging, the data loader hand-off.
  double step_overhead_s = 0.03;
  TpCommOverlap tp_overlap = TpCommOverlap::backward_async;
  // Megatron-Core --moe-shared-expert-overlap: an MoE layer's shared experts run beside its
  // dispatch and combine all-to-alls rather than after the routed path (workload_builder_moe.cpp).
  bool moe_shared_expert_overlap = false;
  // The all-to-alls that carry tokens to their experts (the forward dispatch, and the combine's
  // backward, which sends the output gradient before the down-projection) in fp8: 1 byte per
  // element plus an fp32 scale per 128 (DeepSeek-V3 sec. 3.3.3; DeepEP's dispatch takes the fp8
  // tensor and its float scales [tokens, hidden / 128]). The combines stay 16-bit.
  bool ep_dispatch_fp8 = false;
  GradReduceOverlap grad_reduce = GradReduceOverlap::bucketed;
  ParamGatherOverlap param_gather = ParamGatherOverlap::next_forward;
  // Megatron DDP bucket: max(40M, 1M·dp) parameters (distributed_data_parallel.py).
  double bucket_params_min = 40e6;
  double bucket_params_per_dp = 1e6;
  // Megatron-Core's get_model() (megatron/training/training.py) wraps each model chunk in a DDP
  // of its own and passes disable_bucketing from the second chunk on ("communication for these
  // model chunks is overlapped with compute anyway"): each later chunk reduces as one bucket.
  bool one_bucket_after_first_chunk = true;
  // The DDP bucket size over `dp` ranks, and whether model chunk `chunk` is cut into buckets.
  double grad_bucket_params(int64_t dp) const {
    return std::max(bucket_params_min, bucket_params_per_dp * double(dp));
  }
  bool chunk_bucketed(int64_t chunk) const { return chunk == 0 || !one_bucket_after_first_chunk; }
  // Bytes per gradient element on the wire: 4 (fp32: Megatron-LM's fp32 main-gradient buffer
  // under --bf16, the megatron-core profile; torchtitan's reduce_dtype float32) or 2 (bf16/fp16:
  // NeMo's and Megatron-Bridge's recipes, FSDP's param_dtype reduce, DeepSpeed's model dtype).
  double grad_reduce_bytes = 4;
  // FSDP (ZeRO-3): parameter all-gathers allowed in flight ahead of compute (limit_all_gathers).
  int fsdp_prefetch_layers = 1;
  FsdpBackwardPrefetch fsdp_backward_prefetch = FsdpBackwardPrefetch::before_backward;
  // FSDP1 runs its all-gathers and reduce-scatters on one process group, whose NCCL stream
  // executes them one after another in issue order (FSDP2 and Megatron use separate streams).
  bool fsdp_one_communicator = false;
  // ZeRO-3 as DeepSpeed runs it (frameworks.md 1.2, 1.3, 1.5); the defaults are FSDP's.
  Zero3Gather zero3_gather = Zero3Gather::layer;
  // Submodule gathers: elements gathered ahead of the module computing (stage3_prefetch_bucket_size).
  double zero3_prefetch_bucket_params = 0;
  // Parameters with fewer elements stay unpartitioned (stage3_param_persistence_threshold).
  double zero3_persistence_threshold = 0;
  Zero3Fetch zero3_fetch = Zero3Fetch::prefetch;
  Zero3Reduce zero3_reduce = Zero3Reduce::per_unit;
  // Reduce buckets in flight before the host blocks on the oldest (0: no limit); the backward's
  // next kernels wait for it.
  int zero3_reduce_events = 0;
  // ZeRO-2: gradients reduced at every micro-batch (DeepSpeed partition_gradients), bucket by
  // bucket on the compute stream, rather than once after the last micro-batch.
  bool zero2_reduce_every_micro_batch = false;
  ZeroGradCollective zero_grad_collective = ZeroGradCollective::reduce_scatter;
  PipelineEngine pipeline_engine = PipelineEngine::megatron;
  // HBM bytes per locally held parameter of the optimizer step. Fused Adam (Apex / TE /
  // torch fused=True) reads grad, fp32 master, m, v (16 B) and writes master, m, v and the
  // 16-bit copy (14 B); gradient-norm clipping reads the fp32 gradients once.
  double adam_bytes_per_param = 30;
  double grad_clip_bytes_per_param = 4;
  HostOverhead host;
};

enum class StateConvention {
  megatron,    // fp32 main gradients: 18 B/param for bf16 (the default)
  zero_paper,  // 16 B/param: 16-bit gradients (Rajbhandari et al. 2019)
  fsdp,        // PyTorch FSDP mixed precision: the sharded parameter stays fp32 (the all-gather
               // casts it to bf16), the reduced gradient shard is fp32, Adam m, v fp32: 4 + 4 + 8
};

// Whether training applies dropout (hidden and attention): Korthikanti's table assumes it
// (Megatron's GPT recipes, p = 0.1); most current pre-training recipes use none.
enum class Dropout { none, masks };

enum class SelectiveKeeps { all_but_attention_core, every_other_layer, all_but_norm_mla_up_swiglu };
// What a selective recompute leaves stored, as the memory model reads it.
SelectiveKeeps selective_keeps(SelectiveRecompute s);
// SelectiveRecompute by its spelling (to_string's; "every-other-layer" also read), and every
// spelling, as profiles and flags offer them.
SelectiveRecompute selective_recompute_named(const std::string& name);
const std::vector<std::string>& selective_recompute_names();

struct MemoryDefaults {
  // Fixed per-GPU allowance: CUDA context and kernels (≈0.5 GB on Hopper), cuBLAS/cuBLASLt
  // workspaces (32 MiB per stream on Hopper), NCCL channel buffers of the TP/PP/DP/CP
  // communicators (NCCL_BUFFSIZE 4 MiB per channel per peer and protocol; several hundred MB
  // per communicator), TE/fp8 scratch. 2 GB is the usual gap between a run's allocator peak
  // and nvidia-smi's reading at this scale.
  double fixed_bytes = 2.0e9;
  // PyTorch caching-allocator fragmentation, as a fraction of the activation bytes (the
  // allocations that come and go each micro-batch); model states sit in contiguous buffers.
  double fragmentation_fraction = 0.05;
  StateConvention convention = StateConvention::megatron;
  Dropout dropout = Dropout::none;
  // What Recompute::selective keeps: Korthikanti's (everything but the attention core) or
  // torchtitan's selective AC (every other layer checkpointed, i.e. half the layers keep only
  // their input).
  SelectiveKeeps selective = SelectiveKeeps::all_but_attention_core;
  // ZeRO-3's gathered working set: FSDP's whole layers, or DeepSpeed's submodules (the one
  // computing plus zero3_prefetch_bucket_params ahead, at most zero3_max_live_params) with a
  // gradient bucket of zero3_reduce_bucket_params (stage3 ipg bucket).
  Zero3Gather zero3_gather = Zero3Gather::layer;
  double zero3_prefetch_bucket_params = 0;
  double zero3_max_live_params = 0;  // 0: no limit
  double zero3_reduce_bucket_params = 0;
  // ZeRO-2 keeps only its gradient shard where each micro-batch's gradients are reduced as they
  // are made (DeepSpeed); a framework that reduces them once per step (Megatron-Core's DDP
  // buffer) holds them whole until then, as ZeRO-1 does. WorkloadOptions' field of the same name.
  bool zero2_reduce_every_micro_batch = false;
};

// How the profiles (sim/framework/profiles/*.json) and the report's inputs spell each behaviour,
// e.g. "bucketed": one spelling, read by profile.cpp and written by sim/report.
const char* to_string(TpCommOverlap o);
const char* to_string(GradReduceOverlap o);
const char* to_string(ParamGatherOverlap o);
const char* to_string(SelectiveRecompute s);
const char* to_string(FsdpBackwardPrefetch p);
const char* to_string(KernelStack k);
const char* to_string(MoeDispatcher d);
// Every dispatcher's name (to_string), and the dispatcher a name spells (nullopt: none).
std::vector<std::string> moe_dispatcher_names();
std::optional<MoeDispatcher> moe_dispatcher_named(const std::string& name);
const char* to_string(CudaGraphScope s);
// "none", or the scopes joined by '+', e.g. "attn+moe_router+moe_preprocess".
std::string to_string(CudaGraphScopes s);
// --explain's account of the host: the costs per launch and sync, the dispatcher, what CUDA graphs
// capture, and `host_wait_s` of the step the GPU waited for the host (of it `host_bound_s` where
// the estimate's step is the host's issue time), e.g. "; host: 9.4 µs per launch, ...".
std::string host_overhead_text(const HostOverhead& host, double host_wait_s, double host_bound_s);
inline constexpr CudaGraphScope kCudaGraphScopes[] = {
    CudaGraphScope::attn,           CudaGraphScope::mlp, CudaGraphScope::moe_router,
    CudaGraphScope::moe_preprocess, CudaGraphScope::moe, CudaGraphScope::full_iteration};
const char* to_string(Zero3Gather g);
const char* to_string(Zero3Fetch f);
const char* to_string(Zero3Reduce r);
const char* to_string(ZeroGradCollective c);
const char* to_string(PipelineEngine e);

}  // namespace simrun
