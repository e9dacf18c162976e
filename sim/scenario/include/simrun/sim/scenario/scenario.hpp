// The validated, immutable description of one what-if: model, cluster, parallel layout and run.
// Parsed once at the edge (scenario file + command-line overrides) and passed by const&.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "simrun/models/model_spec.hpp"
#include "simrun/sim/framework/profile.hpp"
#include "simrun/sim/scenario/precision_recipe.hpp"
#include "simrun/topologies/cluster_graph.hpp"
#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

enum class Recompute { none, selective, full };  // Korthikanti et al. 2022 (arXiv:2205.05198)
enum class FabricTopology { rail_optimized, fat_tree };

// How transformer layers are split over pipeline stages (× virtual stages = model chunks).
enum class PipelineSplit {
  even,                   // every chunk holds layers / (pp·v): pp·v must divide layers
  embedding_loss_layers,  // Megatron --account-for-embedding-in-pipeline-split and
                          // --account-for-loss-in-pipeline-split: the embedding and the loss each
                          // take one layer's place, so (layers + 2) must divide by pp·v
  balanced,               // as even as possible over the chunks, the extra layers on middle ones
                          // (Megatron --decoder-first/last-pipeline-num-layers with smaller ends;
                          // --pipeline-model-parallel-layout for interleaved chunks)
};

// The order a pipeline runs its micro-batches in (layout.pipeline_schedule; Narayanan et al. 2021,
// arXiv:2104.04473, for the first three).
enum class PipelineSchedule : uint8_t {
  gpipe,          // every forward, then every backward
  one_f_one_b,    // 1F1B (PipeDream-Flush): pp − 1 − stage warm-up forwards, then alternating
  interleaved,    // Megatron's interleaved 1F1B over virtual_stages model chunks per rank
  combined_1f1b,  // Megatron-Core --overlap-moe-expert-parallel-comm (0.14+): 1F1B's order
                  // (interleaved with virtual stages), each backward run layer by layer beside the
                  // next micro-batch's forward, either's EP all-to-alls behind the other's compute
  dualpipe,       // DeepSeek-V3's DualPipe (arXiv:2412.19437 sec. 3.2.1): micro-batches fed from
                  // both ends of the pipeline, each rank holding two stages (one per direction),
                  // forward and backward chunks paired as in combined_1f1b
};

// How context parallelism exchanges attention inputs (Megatron-Core --cp-comm-type, run by
// Transformer Engine's context-parallel attention).
enum class CpCommType {
  p2p,         // ring attention (AttnFuncWithCPAndKVP2P): K,V blocks passed around the CP group
               // while the local queries attend to the block before, cp steps
  all_gather,  // AttnFuncWithCPAndKVAllGather (Llama 3's CP, arXiv:2407.21783 sec. 3.3.2): K,V
               // all-gathered before the core, exposed; dK,dV reduce-scattered after its backward
  a2a,         // DeepSpeed-Ulysses (AttnFuncWithCPAndQKVOA2A): an all-to-all trades the sequence split
               // for a head split before the core and back after it; heads per rank must divide by cp
  a2a_p2p,     // "a2a+p2p", hierarchical: Ulysses over the first level of
               // hierarchical_context_parallel_sizes (adjacent CP ranks, e.g. on NVLink), the ring
               // over the second (AttnFuncWithCPAndKVP2P with an a2a group)
};

// The scenario's bounds on single sizes, which every reader of a layout keeps to (the scenario
// file and its flags, `simrun accuracy`'s rows; the planner's global_batch and batch_tokens):
// the GPUs of a cluster and a data-parallel size; each other parallel size; the sequences of one
// step (layout.global_batch, layout.micro_batch); the tokens of one sequence in a step (below the
// model's own bound, kMaxModelSeqLen).
inline constexpr int64_t kMaxGpus = int64_t(1) << 20;  // 1M GPUs: beyond any cluster built
inline constexpr int64_t kMaxParallel = int64_t(1) << 20;
inline constexpr int64_t kMaxGlobalBatch = int64_t(1) << 24;
inline constexpr int64_t kMaxStepSeqLen = int64_t(1) << 24;  // 16M tokens
inline constexpr int64_t kMaxVirtualStages = 1024;

// Megatron's parallel layout. Sizes multiply: tp·pp·dp·cp = num_gpus (ep splits experts
// inside the dp·cp ranks, as in Megatron-Core).

struct Layout {
  int64_t tp = 1;                             // tensor-parallel size, e.g. 8 (inside a node)
  int64_t pp = 1;                             // pipeline stages, e.g. 4
  int64_t dp = 1;                             // data-parallel replicas, e.g. 32
  int64_t cp = 1;                             // context-parallel size (sequence split for attention), e.g. 2
  CpCommType cp_comm_type = CpCommType::p2p;  // Megatron-Core's default
  // a2a+p2p: the first level of Megatron's --hierarchical-context-parallel-sizes
  // [cp_a2a_level, cp / cp_a2a_level], the adjacent CP ranks of an all-to-all (the ring runs over
  // the cp / cp_a2a_level groups of them). Read under a2a+p2p only.
  int64_t cp_a2a_level = 1;
  int64_t ep = 1;  // expert-parallel size (MoE), e.g. 8
  // The EP ranks of one scale-up domain (an HGX node), where the EP group spans several and its
  // blocks align with them (ep_domain_level, rank_layout.hpp), e.g. 8 of DeepSeek-V3's 64: the
  // NVLink level of a per-node (DeepEP) all-to-all, whose InfiniBand level runs over the
  // ep / ep_intra_level ranks of one in-domain index. 0: one level (set from the cluster when a
  // scenario is read).
  int64_t ep_intra_level = 0;
  // Tensor-parallel size of the expert MLPs (Megatron-Core --expert-tensor-parallel-size):
  // tp (its default) or 1. Experts are laid out "etp-ep-edp-pp" over the same ranks, so
  // ep·expert_tp divides tp·cp·dp; the rest, tp·cp·dp/(ep·expert_tp), reduce expert gradients.
  int64_t expert_tp = 1;
  // Megatron-Core --moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity: every
  // expert's input is padded (or, where routing is uneven, cut) to this multiple ≥ 1 of its
  // balanced share of the routed tokens (capacity = factor · tokens · top_k / experts), so the
  // all-to-alls, permutes and expert GEMMs carry that many token copies. 0: dropless routing,
  // balanced (the default, and
  // what Megatron's benchmarks force). A dropless run whose busiest expert rank takes L times its
  // share paces each layer as a factor of L does: the all-to-alls hold every rank to it.
  double moe_capacity_factor = 0;
  int64_t virtual_stages = 1;  // model chunks per pipeline rank (interleaved 1F1B when > 1)
  PipelineSplit pipeline_split = PipelineSplit::even;
  // The pipeline schedule; unset: interleaved 1F1B with virtual stages, else 1F1B
  // (default_schedule in layout_rules.hpp).
  std::optional<PipelineSchedule> pipeline_schedule;
  bool sequence_parallel = false;  // Megatron SP: norms/dropout split over tp, AG+RS instead of AR
  int zero_stage = 0;        // 0 DDP, 1 optimizer sharded (distributed optimizer), 2 +grads, 3 +params (FSDP)
  int64_t micro_batch = 1;   // sequences per micro-batch, e.g. 1
  int64_t global_batch = 1;  // sequences per optimizer step, e.g. 1024
  Recompute recompute = Recompute::none;
  Precision precision = Precision::bf16;  // GEMM precision; fp8 keeps the rest in bf16
  // How fp8 / fp4 GEMMs are scaled (precision_recipe.hpp), as the scenario writes it; unset: the
  // precision's default. A 16/32-bit layout leaves it unset (layout_rules). Read through recipe().
  std::optional<LowPrecisionRecipe> fp8_recipe;
  // Megatron-LM --fp8-param-gather: parameters kept in fp8 and gathered in fp8 (1 byte each);
  // fp8 recipes only.
  bool fp8_param_gather = false;
  bool flash_attention = true;  // fused attention: no s² score matrix in HBM

  int64_t model_parallel_size() const { return tp * pp * cp; }
  // The CP ranks an all-to-all spans: cp under a2a, the first level under a2a+p2p, else 1.
  int64_t cp_a2a() const {
    return cp_comm_type == CpCommType::a2a ? cp : cp_comm_type == CpCommType::a2a_p2p ? cp_a2a_level : 1;
  }
  // The CP ranks K,V pass around (or are gathered over): cp / cp_a2a().
  int64_t cp_ring() const { return cp / cp_a2a(); }
  // The EP all-to-all's NVLink level (ep_intra_level, else the whole EP group) and the number of
  // such blocks, one per domain, its InfiniBand level runs over.
  int64_t ep_intra() const {
    return ep_intra_level >= 1 && ep_intra_level <= ep && ep % ep_intra_level == 0 ? ep_intra_level : ep;
  }
  int64_t ep_inter() const { return ep / ep_intra(); }
  int64_t world_size() const { return tp * pp * dp * cp; }
  int64_t num_microbatches() const { return global_batch / (micro_batch * dp); }  // per pipeline
  // Ranks holding the same experts: the expert-data-parallel group size.
  int64_t expert_dp() const { return std::max<int64_t>(1, tp * cp * dp / (ep * expert_tp)); }
  // Token copies each expert takes, as a multiple of its balanced share (1 when dropless).
  double moe_load() const { return moe_capacity_factor > 0 ? moe_capacity_factor : 1.0; }

  // fp8 or fp4 GEMMs: a low-precision recipe applies.
  bool low_precision() const { return is_low_precision(precision); }
  // The precision changed to `p`, dropping the recipe and fp8 parameters written for the old one
  // where they no longer run (recipe_runs_at, fp8_param_gather_runs_at); set_layout_precision is
  // the same on a scenario document.
  void set_precision(Precision p) {
    precision = p;
    if (fp8_recipe && !recipe_runs_at(*fp8_recipe, p)) fp8_recipe.reset();
    if (!fp8_param_gather_runs_at(p)) fp8_param_gather = false;
  }
  // The recipe the low-precision GEMMs run: the written one, else the precision's default.
  LowPrecisionRecipe recipe() const { return fp8_recipe.value_or(default_recipe(precision)); }
  bool operator==(const Layout&) const = default;  // every member (the planner's partials round-trip)
};

struct ClusterSpec {
  GpuSpec gpu;
  int64_t num_gpus = 0;       // e.g. 1024
  int64_t gpus_per_node = 8;  // e.g. 8 (HGX), 4 (GB200 tray)
  FabricSpec fabric;          // inter-node network kind
  int64_t nics_per_node = 8;  // one port each, e.g. 8 (one per GPU)
  FabricTopology topology = FabricTopology::rail_optimized;
  double oversubscription = 1.0;  // leaf down:up bandwidth ratio, e.g. 1.0 (non-blocking) or 2.0

  int64_t num_nodes() const { return (num_gpus + gpus_per_node - 1) / gpus_per_node; }
  // Per-GPU share of the node's NIC bandwidth, per direction.
  double nic_bytes_per_s_per_gpu() const {
    return fabric.port_bytes_per_s * double(nics_per_node) / double(gpus_per_node);
  }
};

// The graph-building view of a scenario's cluster. The scenario reader refuses a cluster whose
// graph cannot be built (ClusterGraph::check), so every subcommand holds the same rules.
ClusterGraphSpec cluster_graph_spec(const ClusterSpec& cluster);

struct RunSpec {
  double tokens = 0;                              // training tokens; 0 = Chinchilla 20 per parameter
  double usd_per_gpu_hour = 2.5;                  // e.g. 5.0
  double gpu_mtbf_hours = 50000;                  // per GPU, independent failures
  std::optional<double> checkpoint_interval_min;  // nullopt = "auto" (Young/Daly)
  std::optional<double> assumed_mfu;              // when set, time comes from this MFU instead of the model
};

struct Scenario {
  std::string file;  // where it was read from, for messages ("command line" when none)
  ModelSpec model;
  ClusterSpec cluster;
  Layout layout;
  RunSpec run;
  // The framework profile (scenario "framework", e.g. "nemo"): its behaviours are the defaults
  // of the workload and memory options a run is given (the command line's flags override them).
  FrameworkProfile framework;
};

const char* to_string(Recompute r);
const char* to_string(FabricTopology t);
const char* to_string(PipelineSplit p);
const char* to_string(CpCommType c);
const char* to_string(PipelineSchedule s);
// GPipe and 1F1B run one model chunk per rank: no virtual stages (layout_rules refuses them).
inline bool one_chunk_per_rank(PipelineSchedule s) {
  return s == PipelineSchedule::gpipe || s == PipelineSchedule::one_f_one_b;
}
// The schedules without virtual stages: those of one chunk per rank, and DualPipe, whose two
// chunks per rank are its own (one per direction). Given as a flag over a file's virtual stages,
// such a schedule runs without them (ScenarioOverrides::apply_to).
inline bool runs_without_virtual_stages(PipelineSchedule s) {
  return one_chunk_per_rank(s) || s == PipelineSchedule::dualpipe;
}

// The GPU's dense peak FLOP/s in the layout's precision; InputError (layout.precision) when the
// GPU has none (fp8 on an A100, fp4 before Blackwell).
double training_peak_flops_per_s(const Scenario& s);

}  // namespace simrun
