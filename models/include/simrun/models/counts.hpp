// Parameter and FLOP counts of a ModelSpec, by component.
// Parameters: exact sums of the weight matrices, biases and norm vectors of the architecture.
// FLOPs: Megatron-LM's num_floating_point_operations (megatron/training/training.py, HEAD
// after commit 8873b55d6a: causal attention counts half the s² term), with the older
// non-causal convention available for comparison with sources that use it.
#pragma once

#include "simrun/models/model_spec.hpp"

namespace simrun {

struct ParamCounts {
  double embedding = 0;       // token embedding V·h (+ learned positions)
  double attention = 0;       // all layers: QKV (or MLA) + output projections (+ biases, MLA/QK norms)
  double mlp_dense = 0;       // dense-FFN layers
  double experts_routed = 0;  // all routed experts of all MoE layers
  double experts_shared = 0;  // shared experts of all MoE layers
  double router = 0;          // MoE gating matrices
  double norms = 0;           // per-layer and final norms
  double output = 0;          // untied output projection h·V (0 when tied)
  double mtp = 0;             // multi-token-prediction modules (not in total())

  // Parameters of the main model (excludes mtp), e.g. 70.55e9 for llama3-70b.
  double total() const;
  // Parameters one token touches: routed experts scaled by top_k/experts; the embedding and
  // output matrices count in full (Mistral's convention: Mixtral 12.9B). DeepSeek's "37B
  // activated" leaves the input embedding out: active(m) - embedding.
  double active(const ModelSpec& m) const;
  // Parameters of one transformer layer (average over layers).
  double per_layer(const ModelSpec& m) const;
};

ParamCounts count_params(const ModelSpec& m);

// Parameters of one transformer layer that Megatron's tensor parallelism keeps whole on every
// TP rank rather than splitting: the layer's norms (TE LayerNormLinear holds the full norm
// weight; Qwen3/Gemma-3 query/key norms over head_dim), the row-parallel output projection's
// bias, and MLA's Q and KV down-projections with their latent norms (Megatron-Core
// MLASelfAttention builds linear_q_down_proj / linear_kv_down_proj with parallel_mode
// "duplicated"). A dense FFN adds its row-parallel FC2 bias: tp_replicated_ffn_params.
double tp_replicated_layer_params(const ModelSpec& m);
double tp_replicated_ffn_params(const ModelSpec& m);

enum class AttentionFlops {
  causal,      // Megatron HEAD: s² term halved for the causal mask
  non_causal,  // Megatron core_r0.8 and NeMo/Mosaic: full s² term
};

// Model FLOPs per sequence of m.seq_len tokens, forward + backward (3× forward), no recompute,
// by component. Weight matrices only (biases, norms, routers and MTP modules are not counted,
// as in Megatron). MoE layers count top_k routed + shared experts. MLA counts its low-rank
// projection matrices, and scores with a·(d_nope + d_rope) for QKᵀ and a·d_v for PV per
// (query, key) pair in place of 2·q.
struct FlopCounts {
  double dense_gemms = 0;     // QKV/out projections + FFN/experts, 6·tokens·(active GEMM params)
  double attention_core = 0;  // QKᵀ and PV
  double logits = 0;          // vocabulary projection
  double routed_experts = 0;  // of dense_gemms: the routed experts' GEMMs (top_k per token)
  double total() const { return dense_gemms + attention_core + logits; }
};

FlopCounts count_flops_per_sequence(const ModelSpec& m, AttentionFlops convention);
// The same for transformer layer `layer` (0-based) alone: its projections and its FFN (a dense
// one, or, from moe->first_dense_layers on, its top_k routed and shared experts), its attention
// core; logits 0. Over every layer, plus the logits, count_flops_per_sequence.
FlopCounts count_layer_flops(const ModelSpec& m, int64_t layer, AttentionFlops convention);
// Forward FLOPs per sequence of one layer's MLA up-projections (queries from their latent, where
// q_lora_rank > 0, and keys and values from theirs); 0 without MLA.
double mla_up_projection_forward_flops(const ModelSpec& m);

// The attention core's input widths per token on one of `tp` ranks, which split the heads
// (Megatron replicates the key/value heads when there are fewer than tp: one on each rank).
// q: the queries; kv_pair: keys and values together, what a context-parallel exchange moves.
// MLA (after its up-projections): heads·(d_nope + d_rope) and heads·(d_nope + d_rope + d_v).
struct AttentionWidths {
  double q = 0;
  double kv_pair = 0;
};
AttentionWidths attention_widths(const ModelSpec& m, int64_t tp);

}  // namespace simrun
