// The framework-behaviour flags shared by `simrun estimate` and `simrun simulate`: TP comm overlap,
// shared-expert overlap, kernel stack and what selective recompute re-runs, when DP gradients and ZeRO
// parameters travel (see command.hpp). Each replaces the value of the scenario's framework profile
// (--framework) for that one behaviour.
#include "command.hpp"
#include "simrun/common/error.hpp"

namespace simrun::cli {

void add_framework_options(CLI::App& cmd, FrameworkArgs& args) {
  CLI::Option* tp_overlap =
      cmd.add_flag("--tp-comm-overlap", args.tp_comm_overlap,
                   "Overlap TP collectives with their GEMMs (Megatron --tp-comm-overlap / async-TP)");
  cmd.add_flag(
         "--no-tp-comm-overlap", args.no_tp_comm_overlap,
         "Overlap only the backward's TP collectives (Megatron's default; where a profile turns overlap on)")
      ->excludes(tp_overlap);
  cmd.add_flag("--moe-shared-expert-overlap", args.moe_shared_expert_overlap,
               "Run the MoE shared experts beside the dispatch and combine all-to-alls (Megatron-Core "
               "--moe-shared-expert-overlap)");
  cmd.add_option(
         "--moe-token-dispatcher-type", args.moe_dispatcher,
         "MoE token dispatcher (Megatron-Core --moe-token-dispatcher-type): alltoall (NCCL all-to-all, "
         "permutation kernels around it) | allgather | flex (DeepEP / HybridEP kernels, one copy per "
         "destination node across nodes)")
      ->check(CLI::IsMember(moe_dispatcher_names()));
  cmd.add_option("--kernels", args.kernels,
                 "Kernel stack: fused (Transformer Engine / Megatron, default) | eager (PyTorch eager + "
                 "FlashAttention-2)")
      ->check(CLI::IsMember({"fused", "eager"}));
  cmd.add_option("--selective-recompute", args.selective,
                 "What recompute=selective re-runs: attention (Megatron core_attn, default) | "
                 "every_other_layer (torchtitan AC; every-other-layer also read) | norm_mla_up_swiglu "
                 "(DeepSeek-V3: RMSNorms, MLA up-projections, SwiGLU outputs)")
      ->check(CLI::IsMember({"attention", "every_other_layer", "every-other-layer", "norm_mla_up_swiglu"}));
  CLI::Option* grad = cmd.add_flag(
      "--overlap-grad-reduce", args.overlap_grad_reduce,
      "Reduce DP gradients per bucket as the backward makes them final (Megatron --overlap-grad-reduce; "
      "simrun's default)");
  cmd.add_flag("--no-overlap-grad-reduce", args.no_overlap_grad_reduce,
               "Reduce DP gradients after the backward (Megatron's default without --overlap-grad-reduce)")
      ->excludes(grad);
  CLI::Option* gather =
      cmd.add_flag("--overlap-param-gather", args.overlap_param_gather,
                   "All-gather ZeRO parameters per bucket before their first forward use (Megatron "
                   "--overlap-param-gather; simrun's default)");
  cmd.add_flag("--no-overlap-param-gather", args.no_overlap_param_gather,
               "All-gather ZeRO parameters right after the optimizer step (Megatron's default)")
      ->excludes(gather);
  CLI::Option* bf16 = cmd.add_flag(
      "--grad-reduce-in-bf16", args.grad_reduce_in_bf16,
      "DP gradients kept and reduced in bf16 (Megatron --grad-reduce-in-bf16; the nemo profile's)");
  cmd.add_flag("--grad-reduce-in-fp32", args.grad_reduce_in_fp32,
               "DP gradients kept and reduced in fp32 (Megatron-LM's default under --bf16, the megatron-core "
               "profile's)")
      ->excludes(bf16);
}

void apply_framework_options(const FrameworkArgs& args, const Scenario& scenario, WorkloadOptions& workload,
                             MemoryDefaults& memory) {
  // Each flag given replaces the profile's value (scenario.framework), both ways.
  if (args.tp_comm_overlap) workload.tp_overlap = TpCommOverlap::full;
  if (args.no_tp_comm_overlap) workload.tp_overlap = TpCommOverlap::backward_async;
  if (args.moe_shared_expert_overlap) {
    const ModelSpec& m = scenario.model;
    if (!m.is_moe() || m.moe->shared_experts == 0)
      throw InputError("command line", "--moe-shared-expert-overlap",
                       m.name +
                           " has no shared experts to overlap (an MoE model with moe.shared_experts >= 1, "
                           "e.g. deepseek-v3)");
    workload.moe_shared_expert_overlap = true;
  }
  if (!args.moe_dispatcher.empty()) {
    if (!scenario.model.is_moe())
      throw InputError("command line", "--moe-token-dispatcher-type",
                       scenario.model.name + " has no experts to dispatch tokens to (a dense model)");
    workload.host.moe_dispatcher = *moe_dispatcher_named(args.moe_dispatcher);
  }
  if (args.overlap_grad_reduce) workload.grad_reduce = GradReduceOverlap::bucketed;
  if (args.no_overlap_grad_reduce) workload.grad_reduce = GradReduceOverlap::after_backward;
  // The gradients' dtype on the wire, and in memory where the profile keeps Megatron's gradient
  // buffer (the buffer is the one reduced); FSDP's reduced shard is fp32 either way.
  if (args.grad_reduce_in_bf16 || args.grad_reduce_in_fp32) {
    workload.grad_reduce_bytes = args.grad_reduce_in_fp32 ? 4 : 2;
    // The buffer follows under bf16 training (fp8/fp4 recipes keep bf16 parameters); an fp16 or
    // fp32 run's buffer is its parameters' dtype whatever the wire.
    const Precision p = scenario.layout.precision;
    const bool bf16_params = p == Precision::bf16 || p == Precision::fp8 || p == Precision::fp4;
    if (memory.convention != StateConvention::fsdp && bf16_params)
      memory.convention = args.grad_reduce_in_fp32 ? StateConvention::megatron : StateConvention::zero_paper;
  }
  if (args.overlap_param_gather) workload.param_gather = ParamGatherOverlap::next_forward;
  if (args.no_overlap_param_gather) workload.param_gather = ParamGatherOverlap::after_optimizer;
  if (!args.kernels.empty())
    workload.kernels = args.kernels == "eager" ? KernelStack::eager : KernelStack::fused;
  if (!args.selective.empty()) {
    workload.selective = selective_recompute_named(args.selective);
    memory.selective = selective_keeps(workload.selective);
  }
}

}  // namespace simrun::cli
