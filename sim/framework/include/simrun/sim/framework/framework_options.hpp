// The framework behaviours a step is simulated under: what overlaps with what, which kernels and
// optimizer run (WorkloadOptions, read by the workload builder and the cost pass) and how the
// framework keeps model states and activations (MemoryDefaults, read by the memory model). A
// framework profile (profile.hpp, sim/framework/profiles/*.json) holds one set of them; the
// defaults below are the megatron-core profile's.
#pragma once

#include <algorithm>
#include <cstdint>
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
  attention_core,     // Megatron --recompute-granularity selective: the attention core re-runs
                      // before its backward (Korthikanti et al. 2022)
  every_other_layer,  // torchtitan's selective activation checkpointing: per-layer (every 2nd
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

// Which kernels the framework runs around the GEMMs.
enum class KernelStack : uint8_t {
  fused,  // Transformer Engine / Megatron fused kernels: LayerNorm+cast, bias+GeLU, bias+dropout+add,
          // the architecture's best fused attention (cuDNN / FlashAttention-3 on Hopper)
  eager,  // PyTorch eager: separate norm, activation, residual and cast kernels (each re-reads its
          // inputs from HBM: eager_memory_factor × the fused traffic) and FlashAttention-2
};

// How the MoE all-to-alls move tokens between expert-parallel ranks.
enum class EpDispatcher : uint8_t {
  alltoall,  // Megatron-Core's MoEAlltoAllTokenDispatcher (token_dispatcher.py): one all-to-all over
             // the EP group sends every token copy to its expert's rank
  deepep,    // DeepSeek-V3's kernels (arXiv:2412.19437 sec. 3.2.2; DeepEP's internode kernels): a
             // token crosses InfiniBand once per destination node, to the GPU of the same in-node
             // index, which forwards it over NVLink to its experts' GPUs there (the combine reverses
             // it, reducing within the node first)
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
  // dispatch and combine all-to-alls rather than after the routed path (workload_builder.cpp).
  bool moe_shared_expert_overlap = false;
  EpDispatcher ep_dispatcher = EpDispatcher::alltoall;
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
  // Bytes per gradient element on the wire: 2 (bf16, Megatron default) or 4 (fp32 reduce, as
  // PyTorch FSDP mixed precision with reduce_dtype=float32 does).
  double grad_reduce_bytes = 2;
  // FSDP (ZeRO-3): parameter all-gathers allowed in flight ahead of compute (limit_all_gathers).
  int fsdp_prefetch_layers = 1;
  FsdpBackwardPrefetch fsdp_backward_prefetch = FsdpBackwardPrefetch::before_backward;
  // FSDP1 runs its all-gathers and reduce-scatters on one process group, whose NCCL stream
  // executes them one after another in issue order (FSDP2 and Megatron use separate streams).
  bool fsdp_one_communicator = false;
  // HBM bytes per locally held parameter of the optimizer step. Fused Adam (Apex / TE /
  // torch fused=True) reads grad, fp32 master, m, v (16 B) and writes master, m, v and the
  // 16-bit copy (14 B); gradient-norm clipping reads the fp32 gradients once.
  double adam_bytes_per_param = 30;
  double grad_clip_bytes_per_param = 4;
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
};

// How the profiles (sim/framework/profiles/*.json) and the report's inputs spell each behaviour,
// e.g. "bucketed": one spelling, read by profile.cpp and written by sim/report.
const char* to_string(TpCommOverlap o);
const char* to_string(GradReduceOverlap o);
const char* to_string(ParamGatherOverlap o);
const char* to_string(SelectiveRecompute s);
const char* to_string(FsdpBackwardPrefetch p);
const char* to_string(KernelStack k);
const char* to_string(EpDispatcher d);

}  // namespace simrun
