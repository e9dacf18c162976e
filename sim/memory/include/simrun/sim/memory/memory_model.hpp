// Memory per GPU, by kind, on every pipeline stage; the report takes the worst stage.
//
// Model states (weights, gradients, optimizer) per parameter, default = Megatron's accounting
// with fp32 main gradients (docs/user-guide/features/dist_optimizer.md and
// theoretical_memory_usage.py num_bytes_per_parameter; ecosystem.md §7.2):
//   bf16/fp8 params: 2 weights + 4 fp32 main grads + 12 (fp32 master, Adam m, v) = 18 B,
//                    6 + 12/d with the distributed optimizer (ZeRO-1);
//   fp16 params:     2 + 2 + 16 (master, fp32 grad copy, m, v) = 20 B, 4 + 16/d;
//   fp32 params:     4 + 4 + 8 (m, v) = 16 B, 8 + 8/d.
// The ZeRO paper's convention (Rajbhandari et al. 2019, arXiv:1910.02054: 2 + 2 + 12 = 16Ψ,
// fp16 gradients) is available as StateConvention::zero_paper. ZeRO-2 also shards gradients,
// ZeRO-3 also weights, over the data-parallel group d = dp·cp (experts: the expert-DP group
// tp·cp·dp/(ep·expert_tp)).
// Parameters are split over tp (and routed experts over expert_tp·ep);
// each stage holds its own layers, the first the embedding, the last the output layer (with
// tied embeddings and pp > 1 Megatron keeps a copy there too).
//
// Activations per layer: Korthikanti et al. 2022 (arXiv:2205.05198, Table 2; ecosystem.md
// §7.1), written element by element so that GQA widths and SwiGLU enter where they belong and
// MHA with ffn = 4h gives exactly their closed forms:
//   replicated part  10·sbh  (two norm inputs 4, QKV input 2, MLP input 2, two dropout masks 2)
//                           — split over t only with sequence parallelism;
//   TP-split part    2sb·(q + k + v + q) + MLP (gelu 4·sbf, swiglu 6·sbf)   /t
//                           (MHA, ffn = 4h: 8sbh + 16sbh = 24sbh);
//   score part       5·a·s²·b /t (softmax 2, its dropout mask 1, dropout output 2 bytes per
//                           score), absent with flash attention or selective recompute;
//   without dropout  (Dropout::none, the default: Llama/Mistral/MPT/BLOOM-style recipes train
//                    with dropout 0) the masks and the dropout output are not stored:
//                    32·sbh + 2·a·s²·b without parallelism;
//   full recompute   only the layer input: 2·sbh (/t with sequence parallelism, where the
//                           stored input is the sequence-sharded one).
// 16-bit activations (e = 2 bytes, also under fp8: TE keeps most saved tensors in bf16);
// fp32 training stores e = 4; masks are 1 byte. s is the local sequence s/cp.
// In-flight micro-batches with 1F1B: stage i holds min(p−i, m); interleaved (v > 1) stage i
// holds (p−i) + (p−1)/v, i.e. the first stage p·(1 + (p−1)/(p·v)) (Korthikanti §4.2.3; Megatron
// compute_activation_memory). The first stage adds the embedding inputs 8·sb (int64 ids) and
// (with dropout) its mask sbh, per micro-batch in flight; the last stage the output layer's input and
// fp32 logits 4·sbh + 4·sbV (Megatron: 4sbh(1 + V/h)), both /t.
// Full recompute adds one layer's un-recomputed activations, live while that layer's backward
// runs.
//
// Workspace allowance (MemoryDefaults): CUDA context, cuBLAS workspaces, NCCL buffers, and the
// caching allocator's fragmentation as a fraction of activations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simrun/models/counts.hpp"
#include "simrun/sim/framework/framework_options.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

struct BytesPerParam {
  double weights = 0;    // e.g. 2 (bf16)
  double grads = 0;      // e.g. 4 (fp32 main grads)
  double optimizer = 0;  // e.g. 12 (fp32 master + Adam m + v)
  double total() const { return weights + grads + optimizer; }
};

BytesPerParam bytes_per_param(Precision precision, StateConvention convention);
// The layout's: its precision's, with 1-byte weights under fp8_param_gather (Megatron-LM
// --fp8-param-gather keeps the model's parameters as the fp8 copies, the fp32 master with the
// optimizer).
BytesPerParam bytes_per_param(const Layout& layout, StateConvention convention);

// Bytes of weights, grads, optimizer for `params` parameters whose optimizer (and, by ZeRO stage,
// grads/weights) is sharded over `shard_degree` data-parallel ranks.
struct ModelStateBytes {
  double weights = 0;
  double grads = 0;
  double optimizer = 0;
  double total() const { return weights + grads + optimizer; }
};
ModelStateBytes model_state_bytes(double params, int zero_stage, double shard_degree, BytesPerParam bpp);

// Inputs of the per-layer activation formula.
struct ActivationConfig {
  int64_t seq_len = 0;      // s, the local sequence (s/cp), e.g. 8192
  int64_t micro_batch = 1;  // b
  int64_t tp = 1;           // t
  bool sequence_parallel = false;
  bool flash_attention = false;
  Recompute recompute = Recompute::none;
  double element_bytes = 2;  // 2 for 16-bit activations, 4 for fp32
  Dropout dropout = Dropout::none;
  int64_t kv_seq_len = 0;  // keys per query in the score matrix (= full s with cp); 0 = seq_len
  // fp8 / fp4 training (Transformer Engine, torchao float8): the linear layers save their input
  // for the wgrad GEMM quantised (the recipe's bytes per element with its scales: fp8 ≈ 1,
  // NVFP4 ≈ 0.56), not the 16-bit tensor: the QKV and MLP inputs and the fc2 input (activation
  // output). Norm inputs, Q/K/V/O of the attention core and the activation's input stay 16-bit.
  // 0: 16-bit training, element_bytes.
  double saved_gemm_input_bytes = 0;
  SelectiveKeeps selective = SelectiveKeeps::all_but_attention_core;
  double moe_load = 1;  // expert token copies as a multiple of the balanced top_k (Layout::moe_load)
};

// Activation bytes one transformer layer keeps for one micro-batch (Korthikanti, above).
double layer_activation_bytes(const ModelSpec& m, const ActivationConfig& c);

// The buffers context parallelism holds beside a layer's saved activations, at most one layer's
// at a time (0 without CP). A block is one rank's K and V (attention_widths). The ring's K,V
// being attended beside the block arriving, and in the backward K,V and the dK,dV passed on,
// each both ways: 4 blocks. all_gather's gathered K,V and, in the backward, the whole dK,dV
// before their reduce-scatter: 2·cp blocks. Ulysses' all-to-all outputs beside their inputs:
// the local tokens' Q, K and V once more. (Transformer Engine's context-parallel attention,
// AttnFuncWithCPAndKVP2P / KVAllGather / QKVOA2A.)
double cp_exchange_bytes(const ModelSpec& m, const Layout& l, double element_bytes);

// The activation-formula inputs of a scenario's layout (local sequence s/cp, tp, SP, flash,
// recompute, precision) under the memory defaults; shared by the analytic and event paths.
ActivationConfig activation_config(const Scenario& s, const MemoryDefaults& defaults);

// Parameters of one stage, split by how they are sharded.
struct StageParams {
  int64_t layers = 0;  // transformer layers on this pipeline rank (all its chunks)
  int64_t moe_layers = 0;
  double dense = 0;    // replicated over dp·cp, split over tp (per GPU)
  double experts = 0;  // routed experts, split over expert_tp·ep (per GPU)
  bool has_embedding = false;
  bool has_output = false;
  double total() const { return dense + experts; }
};

StageParams stage_params(const ModelSpec& m, const ParamCounts& counts, const Layout& layout, int64_t stage);
// The same with the layers' placement (layer_placement) worked out once for every stage.
StageParams stage_params(const ModelSpec& m, const ParamCounts& counts, const Layout& layout,
                         const LayerPlacement& placement, int64_t stage);

// What ZeRO-3 / FSDP holds unsharded on one pipeline rank while it works (zero otherwise):
// gathered 16-bit parameters and one layer's full gradient; with pp > 1 (torchtitan's FSDP+PP)
// every unit of the stage, gathered weights and gradients accumulated in `grad_bytes` per
// parameter, until the last micro-batch. Only sharded parameters count: the stage's dense ones
// where dp·cp > 1, its routed experts where the expert-data-parallel group has more than one rank.
struct Zero3Transients {
  double gathered_weights = 0;
  double unsharded_grads = 0;
};
// With DeepSpeed's submodule gathers (MemoryDefaults::zero3_gather submodule, pp = 1) the gathered
// weights are the submodule computing (at most the stage's largest weight matrix) and the
// prefetch bucket ahead of it, within max_live_parameters; the gradients, the reduce bucket.
Zero3Transients zero3_transients(const Layout& layout, const ModelSpec& model, const ParamCounts& counts,
                                 const StageParams& params, double element_bytes, double grad_bytes,
                                 const MemoryDefaults& defaults);

struct StageMemory {
  int64_t stage = 0;
  StageParams params;
  ModelStateBytes states;                // sharded states, plus ZeRO-3's unsharded copies below
  ModelStateBytes dense_states;          // of states: the dense parameters' (over dp·cp)
  ModelStateBytes expert_states;         // of states: the routed experts' (over expert-DP)
  double fsdp_gathered_bytes = 0;        // ZeRO-3: gathered 16-bit parameters (in states.weights)
  double fsdp_unsharded_grad_bytes = 0;  // ZeRO-3: one unit's full gradient (in states.grads)
  double in_flight_microbatches = 0;
  double layer_activation_bytes = 0;        // one layer, one micro-batch
  double transformer_activation_bytes = 0;  // in_flight · layers · per layer
  double embedding_activation_bytes = 0;
  double output_activation_bytes = 0;
  double recompute_working_bytes = 0;
  double cp_exchange_bytes = 0;  // context parallelism's exchange buffers, one layer's at most
  double activations = 0;        // sum of the five above
  double workspace = 0;
  double peak = 0;
};

// What a stage's schedule keeps in flight at its memory peak.
struct InFlight {
  double micro_batches = 0;        // started and not finished (their embedding inputs are held)
  double layer_micro_batches = 0;  // layer activations held: Σ over the stage's layers
};

// One pipeline stage's memory: its parameters' states (dense over dp·cp, experts over the
// expert-DP group, ZeRO-3's unsharded copies), the activations `in_flight` holds, the output
// layer's logits on the last stage, full recompute's working layer, and the workspace
// allowance. The analytic estimate passes Megatron's in-flight counts, the event simulation
// the ones its schedule reached.
StageMemory stage_memory(const Scenario& sc, const MemoryDefaults& defaults, int64_t stage,
                         const StageParams& params, const InFlight& in_flight);

// The report's memory figures of a (worst) stage, with the GPU's usable capacity and fits.
MemoryReport memory_report(const Scenario& sc, const StageMemory& worst);

struct MemoryEstimate {
  std::vector<StageMemory> stages;
  int64_t worst_stage = 0;
  MemoryReport report;  // the worst stage, with capacity and fits
};

MemoryEstimate estimate_memory(const Scenario& s, const MemoryDefaults& defaults = {});

// Bytes per gradient on the DP wire for a run at `precision`: the framework's, but where it
// reduces Megatron's main-gradient buffer in fp32 (model_states megatron) the buffer is fp32
// under --bf16 only (arguments.py sets accumulate_allreduce_grads_in_fp32 for bf16): at fp16
// the buffer, and its reduce, stay 2 B. Applied where a scenario's profile becomes options
// (analytic.hpp framework_options, which the event's framework_simulate_options reads).
double grad_reduce_bytes_at(const WorkloadOptions& workload, const MemoryDefaults& memory,
                            Precision precision);

// Usable HBM of a GPU: hbm_usable_bytes, else its nominal GB read as GiB less 1% (the device
// queries of six parts).
double usable_hbm_bytes(const GpuSpec& gpu);
// "peak 93.0 GiB per GPU exceeds the 79.2 GiB usable (13.8 GiB over)": the one wording of a
// layout that does not fit, for warnings and --require-fit errors.
std::string memory_shortfall_text(const MemoryReport& m);

}  // namespace simrun
