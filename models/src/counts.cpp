// Parameter and FLOP counts of a ModelSpec; see counts.hpp.
//
// Parameters are exact sums over the weight matrices, biases and norm vectors of the
// architecture as the reference implementations build it (HuggingFace transformers modeling_*
// files; Megatron-LM GPTModel for GPT-3/MT-NLG). FLOPs follow Megatron-LM's
// num_floating_point_operations (ecosystem.md §6.2): matrices only, biases, norms and the
// router ignored, 6 FLOPs per weight per token for forward + backward.
#include "simrun/models/counts.hpp"

#include <algorithm>

namespace simrun {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

// Training FLOPs per weight per token: forward + backward (3), a multiply-add (2).
constexpr double kFwdBwd = 3.0, kFma = 2.0;

// Parameters of one norm: LayerNorm has weight and bias (2h), RMSNorm weight only (h).
double norm_params(const ModelSpec& m, double width) {
  return m.norm == NormKind::layernorm ? 2 * width : width;
}

// Weight matrices of one FFN of width `ffn`: SwiGLU gate+up+down (3·h·f), GELU up+down (2·h·f).
double ffn_matrices(const ModelSpec& m, int64_t ffn) {
  return (m.ffn_act == FfnActivation::swiglu ? 3.0 : 2.0) * d(m.hidden) * d(ffn);
}

// One FFN with its biases (up/gate outputs f each, down output h).
double ffn_params(const ModelSpec& m, int64_t ffn) {
  double p = ffn_matrices(m, ffn);
  if (m.mlp_bias) p += (m.ffn_act == FfnActivation::swiglu ? 2.0 : 1.0) * d(ffn) + d(m.hidden);
  return p;
}

// MLA's weight matrices of one layer, in elements (DeepSeek-V2/V3 modeling_deepseek_v3.py):
// q_a h·r_q and q_b r_q·a·(d_nope+d_rope), or a plain h·a·(d_nope+d_rope) Q when r_q = 0;
// kv_a h·(r_kv+d_rope), kv_b r_kv·a·(d_nope+d_v); output a·d_v·h.
struct MlaMatrices {
  double q_down = 0, q_up = 0, q_plain = 0, kv_down = 0, kv_up = 0, out = 0;
  double total() const { return q_down + q_up + q_plain + kv_down + kv_up + out; }
};

MlaMatrices mla_matrices(const ModelSpec& m) {
  const MlaSpec& l = *m.mla;
  const double h = d(m.hidden), a = d(m.heads), qk = d(l.qk_nope_head_dim + l.qk_rope_head_dim);
  MlaMatrices x;
  if (l.q_lora_rank > 0) {
    x.q_down = h * d(l.q_lora_rank);
    x.q_up = d(l.q_lora_rank) * a * qk;
  } else {
    x.q_plain = h * a * qk;
  }
  x.kv_down = h * d(l.kv_lora_rank + l.qk_rope_head_dim);
  x.kv_up = d(l.kv_lora_rank) * a * d(l.qk_nope_head_dim + l.v_head_dim);
  x.out = a * d(l.v_head_dim) * h;
  return x;
}

// Attention weight matrices of one layer (no biases, no norms).
//   MHA/GQA: Q h·(a·d), K and V h·(g·d) each, output (a·d)·h.  MLA: mla_matrices.
double attention_matrices(const ModelSpec& m) {
  if (m.mla) return mla_matrices(m).total();
  const double h = d(m.hidden), q = d(m.q_proj_width()), k = d(m.kv_proj_width());
  return h * (q + 2 * k) + q * h;
}

// The FFN matrices one token runs through in a layer: a dense FFN, or an MoE layer's top_k
// routed experts (`routed`, of `all`) and its shared ones.
struct LayerFfnMatrices {
  double all = 0, routed = 0;
};

LayerFfnMatrices layer_ffn_matrices(const ModelSpec& m, bool moe_layer) {
  if (!moe_layer) return {ffn_matrices(m, m.ffn_hidden), 0.0};
  const double expert = ffn_matrices(m, m.moe->expert_ffn_hidden);
  const double routed = d(m.moe->top_k) * expert;
  return {routed + d(m.moe->shared_experts) * expert, routed};
}

// FLOPs of one layer's attention core per sequence (forward + backward). Scores QKᵀ take a·d_qk
// FMAs per (query, key) pair and PV a·d_v. For MHA/GQA d_qk = d_v = head_dim, which gives
// Megatron's 2·q. MLA: d_qk = d_nope + d_rope and d_v = v_head_dim per head (the decompressed
// form that training runs), so a·(d_nope + d_rope + d_v) replaces 2·q.
double attention_core_flops(const ModelSpec& m, AttentionFlops convention) {
  const double s = d(m.seq_len);
  const double score_and_value_width =
      m.mla ? d(m.heads) * d(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim)
            : 2.0 * d(m.q_proj_width());
  const double causal_fraction = convention == AttentionFlops::causal ? 0.5 : 1.0;
  return kFwdBwd * kFma * s * s * score_and_value_width * causal_fraction;
}

// Norms inside one layer's attention: MLA's two low-rank norms (q_a_layernorm over r_q,
// kv_a_layernorm over r_kv), or the per-head query and key norms over head_dim (Qwen3, Gemma-3
// q_norm/k_norm, one weight vector each, shared by the heads).
double attention_norm_params(const ModelSpec& m) {
  if (m.mla)
    return (m.mla->q_lora_rank > 0 ? norm_params(m, d(m.mla->q_lora_rank)) : 0.0) +
           norm_params(m, d(m.mla->kv_lora_rank));
  return m.qk_norm ? 2 * norm_params(m, d(m.head_dim)) : 0.0;
}

// One layer's attention parameters: matrices + biases (Q/K/V outputs, and the output projection
// unless only Q/K/V are biased) + the norms inside attention.
double attention_params(const ModelSpec& m) {
  double p = attention_matrices(m) + attention_norm_params(m);
  if (!m.mla && (m.attention_bias || m.qkv_bias)) p += d(m.q_proj_width() + 2 * m.kv_proj_width());
  if (!m.mla && m.attention_bias) p += d(m.hidden);
  return p;
}

// One MoE FFN block: routed experts, shared experts, router (experts·h, no bias).
struct MoeLayerParams {
  double routed = 0, shared = 0, router = 0;
};
MoeLayerParams moe_layer_params(const ModelSpec& m) {
  const MoeSpec& e = *m.moe;
  return {d(e.experts) * ffn_params(m, e.expert_ffn_hidden),
          d(e.shared_experts) * ffn_params(m, e.expert_ffn_hidden), d(e.experts) * d(m.hidden)};
}

}  // namespace

double ParamCounts::total() const {
  return embedding + attention + mlp_dense + experts_routed + experts_shared + router + norms + output;
}

double ParamCounts::active(const ModelSpec& m) const {
  if (!m.is_moe()) return total();
  return total() - experts_routed + experts_routed * d(m.moe->top_k) / d(m.moe->experts);
}

double ParamCounts::per_layer(const ModelSpec& m) const {
  const double final_norm = norm_params(m, d(m.hidden));
  return (total() - embedding - output - final_norm) / d(m.layers);
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const double h = d(m.hidden), L = d(m.layers);
  c.embedding = d(m.vocab) * h + (m.learned_position_embeddings ? d(m.position_table_rows()) * h : 0.0);
  c.attention = L * attention_params(m);
  c.mlp_dense = d(m.dense_layers()) * ffn_params(m, m.ffn_hidden);
  if (m.is_moe()) {
    const MoeLayerParams e = moe_layer_params(m);
    const double n = d(m.moe_layers());
    c.experts_routed = n * e.routed;
    c.experts_shared = n * e.shared;
    c.router = n * e.router;
  }
  // Two norms per layer (before attention, before FFN; Gemma-2/3 four, with the post-norms)
  // and the final norm.
  c.norms = (d(m.layer_norms) * L + 1) * norm_params(m, h);
  c.output = m.tied_embeddings ? 0.0 : d(m.vocab) * h;
  if (m.mtp_layers > 0) {
    // DeepSeek-V3 MTP module (arXiv:2412.19437 §2.2): embedding and output head shared with
    // the main model; per depth two input RMSNorms, the 2h→h projection, one transformer layer
    // shaped like the model's last layer, and its own final norm.
    double layer = attention_params(m) + d(m.layer_norms) * norm_params(m, h);
    if (m.is_moe()) {
      const MoeLayerParams e = moe_layer_params(m);
      layer += e.routed + e.shared + e.router;
    } else {
      layer += ffn_params(m, m.ffn_hidden);
    }
    c.mtp = d(m.mtp_layers) * (2 * norm_params(m, h) + 2 * h * h + layer + norm_params(m, h));
  }
  return c;
}

double tp_replicated_layer_params(const ModelSpec& m) {
  const double h = d(m.hidden);
  double p = d(m.layer_norms) * norm_params(m, h) + attention_norm_params(m);
  if (m.mla) {
    const MlaMatrices x = mla_matrices(m);
    p += x.q_down + x.kv_down;
  } else if (m.attention_bias) {
    p += h;
  }
  return p;
}

double tp_replicated_ffn_params(const ModelSpec& m) { return m.mlp_bias ? d(m.hidden) : 0.0; }

FlopCounts count_flops_per_sequence(const ModelSpec& m, AttentionFlops convention) {
  // Megatron-LM num_floating_point_operations (training.py, ecosystem.md §6.2) with batch 1:
  //   3 (fwd+bwd) · 2 (FMA) · tokens · [h·(f·ffn·dense_layers + f·ffn_e·(top_k + shared)·moe_layers)
  //                                     + L·(h·(q+2k) + q·h) + h·V]
  //   + s² · L · 3·2·q/2·2  (causal: HEAD after 8873b55d6a halves the score term; core_r0.8 does not).
  // MTP modules are left out, like the main-model parameter count.
  const double s = d(m.seq_len), L = d(m.layers), h = d(m.hidden);
  const LayerFfnMatrices dense = layer_ffn_matrices(m, false);
  const LayerFfnMatrices moe = m.is_moe() ? layer_ffn_matrices(m, true) : LayerFfnMatrices{};
  const double ffn_per_token = d(m.dense_layers()) * dense.all + d(m.moe_layers()) * moe.all;

  FlopCounts f;
  f.dense_gemms = kFwdBwd * kFma * s * (ffn_per_token + L * attention_matrices(m));
  f.routed_experts = kFwdBwd * kFma * s * d(m.moe_layers()) * moe.routed;
  f.attention_core = L * attention_core_flops(m, convention);
  f.logits = kFwdBwd * kFma * s * h * d(m.vocab);
  return f;
}

FlopCounts count_layer_flops(const ModelSpec& m, int64_t layer, AttentionFlops convention) {
  // count_flops_per_sequence's terms for one layer.
  const double s = d(m.seq_len);
  const LayerFfnMatrices ffn = layer_ffn_matrices(m, m.is_moe_layer(layer));
  FlopCounts f;
  f.dense_gemms = kFwdBwd * kFma * s * (ffn.all + attention_matrices(m));
  f.routed_experts = kFwdBwd * kFma * s * ffn.routed;
  f.attention_core = attention_core_flops(m, convention);
  return f;
}

double mla_up_projection_forward_flops(const ModelSpec& m) {
  if (!m.mla) return 0.0;
  const MlaMatrices x = mla_matrices(m);
  return kFma * d(m.seq_len) * (x.q_up + x.kv_up);
}

AttentionWidths attention_widths(const ModelSpec& m, int64_t tp) {
  const double t = double(std::max<int64_t>(1, tp));
  const double heads = double(m.heads) / t;
  if (m.mla) {
    const double qk = double(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim);
    return {heads * qk, heads * (qk + double(m.mla->v_head_dim))};
  }
  const double head_dim = double(m.head_dim > 0 ? m.head_dim : m.hidden / std::max<int64_t>(1, m.heads));
  const double kv_heads = std::max(double(m.kv_heads > 0 ? m.kv_heads : m.heads) / t, 1.0);
  return {heads * head_dim, 2 * kv_heads * head_dim};
}

}  // namespace simrun
