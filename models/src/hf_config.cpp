// HuggingFace config.json → ModelSpec. Field names and defaults from the transformers config
// classes (ecosystem.md §5: configuration_llama/mixtral/qwen3_moe/gpt_neox/gpt2/deepseek_v3.py
// and configuration_utils.py). Unknown keys are ignored: hub configs carry many fields
// (rope_scaling, torch_dtype, ...) that do not change the shape.
#include <cmath>
#include <map>
#include <vector>

#include "model_checks.hpp"
#include "simrun/common/error.hpp"
#include "simrun/models/catalog.hpp"

namespace simrun {
namespace {

// Reads the LM fields of one config object. Every getter tries the canonical name first, then
// the attribute_map aliases, and reports errors under the name found in the file.
class HfFields {
 public:
  HfFields(const nlohmann::json& obj, std::string file, std::string prefix)
      : m_obj(obj), m_file(std::move(file)), m_prefix(std::move(prefix)) {}

  // The first of `names` present with a non-null value, or "" when none is.
  std::string find(const std::vector<std::string>& names) const {
    for (const auto& n : names)
      if (m_obj.contains(n) && !m_obj.at(n).is_null()) return n;
    return "";
  }
  bool has(const std::vector<std::string>& names) const { return !find(names).empty(); }

  int64_t integer(const std::vector<std::string>& names, int64_t min, int64_t max) const {
    const std::string key = find(names);
    if (key.empty()) fail(names.front(), "missing required field" + also_known_as(names));
    return integer_at(key, min, max);
  }
  int64_t integer_or(const std::vector<std::string>& names, int64_t fallback, int64_t min,
                     int64_t max) const {
    const std::string key = find(names);
    return key.empty() ? fallback : integer_at(key, min, max);
  }
  bool boolean_or(const std::vector<std::string>& names, bool fallback) const {
    const std::string key = find(names);
    if (key.empty()) return fallback;
    const auto& v = m_obj.at(key);
    if (!v.is_boolean()) fail(key, std::string("expected true or false, got ") + v.type_name());
    return v.get<bool>();
  }
  std::string string_or(const std::vector<std::string>& names, const std::string& fallback) const {
    const std::string key = find(names);
    if (key.empty()) return fallback;
    const auto& v = m_obj.at(key);
    if (!v.is_string()) fail(key, std::string("expected a string, got ") + v.type_name());
    return v.get<std::string>();
  }
  const nlohmann::json& raw(const std::string& key) const { return m_obj.at(key); }

  std::string path(const std::string& key) const { return m_prefix.empty() ? key : m_prefix + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw InputError(m_file, path(key), why);
  }

 private:
  static std::string also_known_as(const std::vector<std::string>& names) {
    if (names.size() < 2) return "";
    std::vector<std::string> rest(names.begin() + 1, names.end());
    return " (also accepted: " + join_names(rest) + ")";
  }
  int64_t integer_at(const std::string& key, int64_t min, int64_t max) const {
    const auto& v = m_obj.at(key);
    const std::string range = "(an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "])";
    double x = 0;
    if (v.is_number_unsigned()) {
      x = static_cast<double>(v.get<uint64_t>());
    } else if (v.is_number_integer()) {
      x = static_cast<double>(v.get<int64_t>());
    } else if (v.is_number_float() && std::isfinite(v.get<double>()) &&
               v.get<double>() == std::floor(v.get<double>())) {
      x = v.get<double>();
    } else {
      fail(key, std::string("expected an integer, got ") + v.type_name() + " " + range);
    }
    if (x < double(min) || x > double(max))
      fail(key, v.dump() + " is out of range " + range);  // x may not fit an int64_t
    return static_cast<int64_t>(x);
  }

  const nlohmann::json& m_obj;
  std::string m_file;
  std::string m_prefix;
};

// hidden_act / activation_function → FFN shape. SiLU-gated FFNs (Llama, Mistral, Qwen,
// DeepSeek: gate·up·down) are SwiGLU with 3 matrices; GELU/ReLU FFNs have 2.
FfnActivation activation_from(const HfFields& f, const std::string& key, const std::string& act) {
  static const std::vector<std::string> gated = {"silu", "swish", "swiglu"};
  static const std::vector<std::string> plain = {"gelu",        "gelu_new", "gelu_fast",  "gelu_pytorch_tanh",
                                                 "gelu_python", "gelu_10",  "quick_gelu", "relu"};
  for (const auto& g : gated)
    if (act == g) return FfnActivation::swiglu;
  for (const auto& p : plain)
    if (act == p) return FfnActivation::gelu;
  std::vector<std::string> all = gated;
  all.insert(all.end(), plain.begin(), plain.end());
  f.fail(key, "unsupported activation \"" + act + "\" (supported: " + join_names(all) + "; did you mean \"" +
                  nearest_name(act, all) + "\"?)");
}

}  // namespace

ModelSpec import_hf_config(const nlohmann::json& config, const std::string& file) {
  using namespace detail;
  if (!config.is_object())
    throw InputError(file, "(top level)", "expected a JSON object (a HuggingFace config.json)");
  // Multimodal configs (Llava, Mllama, Gemma 3, ...) nest the language model under text_config.
  const bool nested = config.contains("text_config") && config.at("text_config").is_object();
  const nlohmann::json& obj = nested ? config.at("text_config") : config;
  const HfFields f(obj, file, nested ? "text_config" : "");

  std::string model_type = f.string_or({"model_type"}, "");
  if (model_type.empty() && nested && config.contains("model_type") && config.at("model_type").is_string())
    model_type = config.at("model_type").get<std::string>();
  const bool gpt2 = model_type == "gpt2";
  const bool neox = model_type == "gpt_neox";
  const bool deepseek = model_type == "deepseek_v3" || model_type == "deepseek_v2";

  ModelSpec m;
  // attribute_map aliases: GPT-2 n_embd/n_layer/n_head/n_positions/n_inner.
  m.hidden = f.integer({"hidden_size", "n_embd", "d_model"}, 1, kMaxHidden);
  m.layers = f.integer({"num_hidden_layers", "n_layer", "num_layers"}, 1, kMaxLayers);
  m.heads = f.integer({"num_attention_heads", "n_head"}, 1, kMaxHeads);
  m.kv_heads = f.integer_or({"num_key_value_heads"}, m.heads, 1, kMaxHeads);  // null ⇒ MHA
  m.vocab = f.integer({"vocab_size"}, 1, kMaxVocab);
  // Context length: the default training sequence; a scenario's seq_len overrides it.
  m.seq_len = f.integer({"max_position_embeddings", "n_positions", "n_ctx", "seq_length"}, 1, kMaxSeqLen);
  // GPT-2: n_inner null ⇒ 4·n_embd (configuration_gpt2.py / modeling_gpt2.py).
  m.ffn_hidden = f.integer_or({"intermediate_size", "n_inner", "ffn_dim"}, 4 * m.hidden, 1, kMaxFfn);

  const std::string act_key = f.find({"hidden_act", "activation_function"});
  const std::string act = act_key.empty() ? (gpt2   ? "gelu_new"
                                             : neox ? "gelu"
                                                    : "silu")
                                          : f.string_or({act_key}, "");
  m.ffn_act = activation_from(f, act_key.empty() ? "hidden_act" : act_key, act);

  // Family conventions: GPT-2 and GPT-NeoX use LayerNorm with biases and biased projections;
  // GPT-2 has a learned position table, the others rotary embeddings.
  m.norm = (gpt2 || neox) ? NormKind::layernorm : NormKind::rmsnorm;
  m.attention_bias = f.boolean_or({"attention_bias"}, gpt2 || neox);
  m.mlp_bias = f.boolean_or({"mlp_bias"}, gpt2 || neox);
  if (gpt2) {
    m.learned_position_embeddings = true;
    m.max_positions = m.seq_len;
  }
  // tie_word_embeddings: Llama/Mistral/Mixtral/Qwen3-MoE/GPT-NeoX/DeepSeek classes default to
  // false; GPT-2 and unknown families inherit PretrainedConfig's v4 default of true.
  static const std::vector<std::string> untied_by_default = {
      "llama",     "mistral",   "mixtral",  "qwen2",       "qwen3",
      "qwen2_moe", "qwen3_moe", "gpt_neox", "deepseek_v2", "deepseek_v3"};
  bool tie_default = true;
  for (const auto& t : untied_by_default)
    if (model_type == t) tie_default = false;
  m.tied_embeddings = f.boolean_or({"tie_word_embeddings"}, tie_default);

  // MLA (DeepSeek-V2/V3): present when kv_lora_rank is given.
  if (f.has({"kv_lora_rank"})) {
    MlaSpec mla;
    mla.q_lora_rank = f.integer_or({"q_lora_rank"}, 0, 0, kMaxHidden);  // null ⇒ plain Q projection (V2-Lite)
    mla.kv_lora_rank = f.integer({"kv_lora_rank"}, 1, kMaxHidden);
    mla.qk_nope_head_dim = f.integer({"qk_nope_head_dim"}, 0, kMaxHeadDim);
    mla.qk_rope_head_dim = f.integer({"qk_rope_head_dim"}, 0, kMaxHeadDim);
    mla.v_head_dim = f.integer({"v_head_dim"}, 1, kMaxHeadDim);
    m.mla = mla;
    m.kv_heads = m.heads;  // MLA decompresses K and V for every head
    m.head_dim = mla.v_head_dim;
  } else if (f.has({"head_dim"})) {
    m.head_dim = f.integer({"head_dim"}, 1, kMaxHeadDim);
  } else {
    if (m.hidden % m.heads != 0)
      f.fail(f.find({"hidden_size", "n_embd", "d_model"}),
             std::to_string(m.hidden) + " is not a multiple of the attention heads " +
                 std::to_string(m.heads) + " and no head_dim is given");
    m.head_dim = m.hidden / m.heads;
  }

  // MoE. Mixtral: num_local_experts (alias num_experts), expert width = intermediate_size.
  // Qwen2/3-MoE: num_experts, moe_intermediate_size, decoder_sparse_step, mlp_only_layers,
  // Qwen2-MoE shared_expert_intermediate_size. DeepSeek: n_routed_experts (alias
  // num_local_experts), n_shared_experts, first_k_dense_replace, moe_layer_freq.
  const std::string experts_key = f.find({"n_routed_experts", "num_local_experts", "num_experts"});
  if (!experts_key.empty() && f.integer({experts_key}, 0, kMaxExperts) > 0) {
    MoeSpec moe;
    moe.experts = f.integer({experts_key}, 1, kMaxExperts);
    moe.top_k = f.integer({"num_experts_per_tok"}, 1, kMaxExperts);
    moe.expert_ffn_hidden = f.integer_or({"moe_intermediate_size"}, m.ffn_hidden, 1, kMaxFfn);
    moe.shared_experts = f.integer_or({"n_shared_experts"}, 0, 0, kMaxExperts);
    if (f.has({"shared_expert_intermediate_size"})) {
      const int64_t width = f.integer({"shared_expert_intermediate_size"}, 0, kMaxFfn);
      if (width % moe.expert_ffn_hidden != 0)
        f.fail("shared_expert_intermediate_size", std::to_string(width) +
                                                      " is not a multiple of moe_intermediate_size " +
                                                      std::to_string(moe.expert_ffn_hidden) +
                                                      " (simrun models shared experts of the routed width)");
      moe.shared_experts = width / moe.expert_ffn_hidden;
    }
    moe.first_dense_layers = f.integer_or({"first_k_dense_replace"}, 0, 0, m.layers - 1);
    for (const std::string key : {"moe_layer_freq", "decoder_sparse_step"}) {
      if (f.has({key}) && f.integer({key}, 1, kMaxLayers) != 1)
        f.fail(key, "only 1 (every layer after the leading dense ones is MoE) is supported");
    }
    if (f.has({"mlp_only_layers"})) {
      // Supported when the dense layers are the leading ones: [0, 1, ..., k-1].
      const auto& list = f.raw("mlp_only_layers");
      if (!list.is_array()) f.fail("mlp_only_layers", "expected a list of layer indices");
      for (size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_number_integer() || list[i].get<int64_t>() != static_cast<int64_t>(i))
          f.fail("mlp_only_layers", "only leading dense layers [0, 1, ..., k-1] are supported");
      }
      if (!list.empty()) {
        if (static_cast<int64_t>(list.size()) >= m.layers) f.fail("mlp_only_layers", "leaves no MoE layer");
        moe.first_dense_layers = static_cast<int64_t>(list.size());
      }
    }
    m.moe = moe;
  }
  if (deepseek) m.mtp_layers = f.integer_or({"num_nextn_predict_layers"}, 0, 0, kMaxLayers);

  std::string name = f.string_or({"_name_or_path"}, "");
  if (name.empty()) name = model_type.empty() ? "hf-config" : model_type;
  m.name = name;
  m.source = "HuggingFace config.json: " + file;

  static const std::map<std::string, std::string> hf_names = {
      {"kv_heads", "num_key_value_heads"},
      {"heads", "num_attention_heads"},
      {"head_dim", "head_dim"},
      {"layers", "num_hidden_layers"},
      {"hidden", "hidden_size"},
      {"max_positions", "max_position_embeddings"},
      {"moe.top_k", "num_experts_per_tok"},
      {"moe.first_dense_layers", "first_k_dense_replace"},
      {"mla.kv_lora_rank", "kv_lora_rank"},
      {"mla.qk_nope_head_dim", "qk_nope_head_dim"},
      {"mla.v_head_dim", "v_head_dim"},
      {"attention_bias", "attention_bias"}};
  detail::check_model(m, file, [&f](const std::string& field) {
    const auto it = hf_names.find(field);
    return f.path(it == hf_names.end() ? field : it->second);
  });
  return m;
}

}  // namespace simrun
