// A transformer described by its shape: the one input every count (parameters, FLOPs,
// activation bytes) and the simulator read. Dense or MoE, MHA/GQA or MLA, GELU or SwiGLU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace simrun {

// gelu: 2 matrices (h→f→h); swiglu: 3 (gate, up, down). Gated FFNs with another activation
// (Gemma's GeGLU) have swiglu's shape and cost and are read as swiglu.
enum class FfnActivation { gelu, swiglu };
enum class NormKind { layernorm, rmsnorm };  // layernorm has weight+bias (2h), rmsnorm weight only (h)

// Multi-head latent attention (DeepSeek-V2/V3): low-rank Q and KV projections.
struct MlaSpec {
  int64_t q_lora_rank = 0;       // e.g. 1536 (0 = plain Q projection)
  int64_t kv_lora_rank = 0;      // e.g. 512
  int64_t qk_nope_head_dim = 0;  // e.g. 128
  int64_t qk_rope_head_dim = 0;  // e.g. 64
  int64_t v_head_dim = 0;        // e.g. 128
};

// Mixture of experts in the FFN of some layers.
struct MoeSpec {
  int64_t experts = 0;             // routed experts per MoE layer, e.g. 8 (Mixtral), 256 (DeepSeek-V3)
  int64_t top_k = 0;               // experts each token is routed to, e.g. 2
  int64_t expert_ffn_hidden = 0;   // FFN width of one expert, e.g. 14336 (Mixtral), 2048 (DeepSeek-V3)
  int64_t shared_experts = 0;      // always-on experts of width expert_ffn_hidden, e.g. 1 (DeepSeek-V3)
  int64_t first_dense_layers = 0;  // leading layers with a dense FFN, e.g. 3 (DeepSeek-V3)
  // Group-limited (node-limited) routing, DeepSeek-V3 sec. 2.1.2 / HF config n_group, topk_group:
  // the experts split into `groups` equal groups, and a token's top_k experts are chosen within
  // its `topk_groups` best groups, e.g. 8 and 4 (DeepSeek-V3). 0: unrestricted routing.
  int64_t groups = 0;
  int64_t topk_groups = 0;
  bool group_limited() const { return groups > 1 && topk_groups < groups; }
};

struct ModelSpec {
  std::string name;        // catalog id or user name, e.g. "llama3-70b"
  int64_t layers = 0;      // L, e.g. 80
  int64_t hidden = 0;      // h, e.g. 8192
  int64_t heads = 0;       // a, attention (query) heads, e.g. 64
  int64_t kv_heads = 0;    // key/value heads (GQA groups), e.g. 8; = heads for MHA
  int64_t head_dim = 0;    // kv_channels, e.g. 128; usually hidden / heads
  int64_t ffn_hidden = 0;  // dense FFN width, e.g. 28672
  FfnActivation ffn_act = FfnActivation::swiglu;
  NormKind norm = NormKind::rmsnorm;
  int64_t vocab = 0;                         // V, e.g. 128256
  int64_t seq_len = 0;                       // s, training sequence length in tokens, e.g. 8192
  bool tied_embeddings = false;              // output projection shares the input embedding matrix
  bool attention_bias = false;               // biases on the QKV/output projections (GPT-style)
  bool qkv_bias = false;                     // biases on Q/K/V only, output unbiased (Qwen2/2.5)
  bool qk_norm = false;                      // head_dim norms on Q and K (Qwen3, Gemma-3)
  int64_t layer_norms = 2;                   // norms a layer: 2 pre-norms; 4 with Gemma-2/3 post-norms
  bool mlp_bias = false;                     // biases on the FFN matrices (GPT-style)
  bool learned_position_embeddings = false;  // GPT-2/3 style position table of max_positions x h
  bool alibi = false;                        // ALiBi (MPT): bias inside the attention kernel, no rotary pass
  int64_t max_positions = 0;                 // length of the learned position table (0 = none)
  int64_t mtp_layers = 0;  // DeepSeek-V3 multi-token-prediction modules (not in the main count)
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  double published_params = 0;  // the total its authors publish, e.g. 70.6e9 (0 = unknown)
  std::string source;           // where the shape comes from

  bool is_moe() const { return moe.has_value() && moe->experts > 0; }
  // MoE layers: all layers after the leading dense ones, from first_moe_layer() (`layers` when
  // the model has no experts) on.
  int64_t first_moe_layer() const { return is_moe() ? moe->first_dense_layers : layers; }
  int64_t moe_layers() const { return layers - first_moe_layer(); }
  int64_t dense_layers() const { return first_moe_layer(); }
  bool is_moe_layer(int64_t layer) const { return is_moe() && layer >= first_moe_layer(); }
  // Rows of the learned position table a run of seq_len tokens needs: a longer sequence than the
  // table needs a table as long (Megatron-LM's validate_args asserts max_position_embeddings ≥
  // seq_length; the scenario warns, layout_warnings' positions_beyond_table).
  int64_t position_table_rows() const { return std::max(max_positions, seq_len); }
  int64_t q_proj_width() const { return heads * head_dim; }      // a·d_head
  int64_t kv_proj_width() const { return kv_heads * head_dim; }  // g·d_head
};

// Why `name` cannot name a model, or nothing: it is printed in tables and CSV cells, so it is
// not empty and holds nothing a terminal acts on (ESC, a newline, a bidirectional override) and
// no bytes that are not UTF-8, whichever file gave it.
std::optional<std::string> model_name_problem(const std::string& name);

}  // namespace simrun
