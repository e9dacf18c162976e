// Cross-field checks of a ModelSpec; see model_checks.hpp.
#include "model_checks.hpp"

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun {

std::optional<std::string> model_name_problem(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (printable(name, std::string::npos) != name)
    return quoted_input(name) + " holds control characters or bytes that are not UTF-8 (give a plain name)";
  return std::nullopt;
}

}  // namespace simrun

namespace simrun::detail {

void check_model(const ModelSpec& m, const std::string& file, const FieldPath& path) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw InputError(file, path(field), why);
  };
  if (const auto why = model_name_problem(m.name)) fail("name", *why);
  if (!m.mla) {
    if (m.heads % m.kv_heads != 0)
      fail("kv_heads", std::to_string(m.kv_heads) + " does not divide heads = " + std::to_string(m.heads) +
                           " (GQA needs heads to be a multiple of kv_heads)");
  }
  if (m.kv_heads > m.heads)
    fail("kv_heads", std::to_string(m.kv_heads) + " exceeds heads = " + std::to_string(m.heads));
  if (m.head_dim <= 0) fail("head_dim", "must be positive");
  if (m.layer_norms != 2 && m.layer_norms != 4)
    fail("layer_norms",
         std::to_string(m.layer_norms) + " norms a layer: 2 (pre-norm) or 4 (Gemma-2/3 pre- and post-norms)");
  if (m.learned_position_embeddings && m.max_positions <= 0)
    fail("max_positions", "learned position embeddings need max_positions ≥ 1");
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    if (a.kv_lora_rank <= 0) fail("mla.kv_lora_rank", "must be positive");
    if (a.qk_nope_head_dim + a.qk_rope_head_dim <= 0)
      fail("mla.qk_nope_head_dim", "qk_nope_head_dim + qk_rope_head_dim must be positive");
    if (a.v_head_dim <= 0) fail("mla.v_head_dim", "must be positive");
    if (m.attention_bias) fail("attention_bias", "biases are not modelled with mla (use false)");
    if (m.qkv_bias) fail("qkv_bias", "biases are not modelled with mla (use false)");
    if (m.qk_norm) fail("qk_norm", "mla has its own latent norms (use false)");
  }
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    if (e.top_k > e.experts)
      fail("moe.top_k", std::to_string(e.top_k) + " exceeds moe.experts = " + std::to_string(e.experts));
    if (e.groups > 0 && e.experts % e.groups != 0)
      fail("moe.groups",
           std::to_string(e.groups) + " does not divide moe.experts = " + std::to_string(e.experts));
    if (e.groups > 0 && (e.topk_groups < 1 || e.topk_groups > e.groups))
      fail("moe.topk_groups",
           std::to_string(e.topk_groups) + " is not between 1 and moe.groups = " + std::to_string(e.groups));
    if (e.groups > 0 && e.topk_groups * (e.experts / e.groups) < e.top_k)
      fail("moe.topk_groups", std::to_string(e.topk_groups) + " groups of " +
                                  std::to_string(e.experts / e.groups) +
                                  " experts hold fewer than moe.top_k = " + std::to_string(e.top_k));
    if (e.groups == 0 && e.topk_groups != 0) fail("moe.topk_groups", "is given without moe.groups");
    if (e.first_dense_layers >= m.layers)
      fail("moe.first_dense_layers", std::to_string(e.first_dense_layers) +
                                         " leaves no MoE layer (layers = " + std::to_string(m.layers) + ")");
  }
}

}  // namespace simrun::detail
