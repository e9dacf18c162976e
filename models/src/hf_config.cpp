// HuggingFace config.json → ModelSpec. Field names and defaults from the transformers config
// classes (ecosystem.md §5: configuration_llama/mixtral/qwen3_moe/gpt_neox/gpt2/deepseek_v3.py
// and configuration_utils.py) and, for what a family builds from them, its modeling_*.py.
// Only the model_types in kArchitectures are read; any other is refused, never guessed at.
// Other keys not read here are ignored: hub configs carry many fields (rope_scaling,
// torch_dtype, logit soft-capping, ...) that change neither the parameters nor the model FLOPs.
// docs/model.md "Importing HuggingFace configs" explains each rule.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string_view>
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

// How a family builds its layers from the config: what its modeling_<type>.py does with the
// fields, and without them. One row of kArchitectures per model_type simrun understands.
enum class FfnShape { gated, plain };    // gate·act·up → down (3 matrices), or up → act → down (2)
enum class AttentionShape { mha, mla };  // MHA/GQA over head_dim, or DeepSeek's latent attention
// Whether the family reads the MoE fields at all: none; moe, whose files always state their
// experts (one without them is refused, not read as dense); or optional, whose class defaults to
// none (DeepseekV2Config's n_routed_experts is None: dense layers).
enum class Experts { none, moe, optional };
enum class Embeddings { untied, tied };  // the class's tie_word_embeddings default
enum class QkNorm { none, rms };         // q_norm/k_norm over head_dim (Qwen3, Gemma-3)
enum class BiasRule {
  none,        // no biases: the class has no such field, or ignores it
  always,      // biases on every projection, no field (GPT-2 attention and MLP, GPT-NeoX MLP)
  qkv,         // Q/K/V biased, output not, no field (Qwen2: bias=True on q/k/v_proj only)
  field,       // the config's attention_bias / mlp_bias, default false
  field_true,  // the config's field, default true (GPT-NeoX attention_bias)
};
enum class WindowRule {
  none,          // no sliding-window attention in the family (a sliding_window key is unused)
  when_set,      // sliding_window applies when non-null (Mistral, Mixtral, Gemma-2/3)
  when_enabled,  // only with use_sliding_window, on layers >= max_window_layers (Qwen2/3)
};

struct HfArchitecture {
  std::string_view model_type;
  FfnShape ffn;
  AttentionShape attention;
  Experts experts;
  NormKind norm;
  Embeddings embeddings;
  BiasRule attention_bias;
  BiasRule mlp_bias;
  int64_t layer_norms;  // 2, or 4 with the post-attention/post-FFN norms (Gemma-2/3)
  QkNorm qk_norm;
  WindowRule window;
  // when_set: every n-th layer attends globally (Gemma-2: 2; Gemma-3: sliding_window_pattern,
  // default 6); 0 = every layer is windowed.
  int64_t global_every;
  // The class defaults of fields that change the shape, for files that omit them (Gemma-3
  // text_configs omit vocab_size; MistralConfig's sliding_window is 4096; GemmaConfig's
  // head_dim is 256, not hidden/heads).
  std::string_view class_defaults;
};

constexpr std::string_view kNoDefaults = "{}";
constexpr std::string_view kQwenDefaults =
    R"({"use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28})";
constexpr std::string_view kGemma3Defaults =
    R"({"head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6, "vocab_size": 262208,
        "max_position_embeddings": 131072, "num_key_value_heads": 4})";

using enum FfnShape;
using enum AttentionShape;
using enum Embeddings;
constexpr NormKind kRms = NormKind::rmsnorm;
constexpr NormKind kLayerNorm = NormKind::layernorm;

// clang-format off
constexpr std::array<HfArchitecture, 15> kArchitectures = {{
  // model_type  ffn    attn experts        norm        tie     attention bias        mlp bias          norms qk_norm       window                    global class defaults
  {"llama",       gated, mha, Experts::none, kRms,       untied, BiasRule::field,      BiasRule::field,  2, QkNorm::none, WindowRule::none,         0, kNoDefaults},
  {"mistral",     gated, mha, Experts::none, kRms,       untied, BiasRule::none,       BiasRule::none,   2, QkNorm::none, WindowRule::when_set,     0, R"({"sliding_window": 4096})"},
  {"mixtral",     gated, mha, Experts::moe,  kRms,       untied, BiasRule::none,       BiasRule::none,   2, QkNorm::none, WindowRule::when_set,     0, kNoDefaults},
  {"qwen2",       gated, mha, Experts::none, kRms,       untied, BiasRule::qkv,        BiasRule::none,   2, QkNorm::none, WindowRule::when_enabled, 0, kQwenDefaults},
  {"qwen2_moe",   gated, mha, Experts::moe,  kRms,       untied, BiasRule::qkv,        BiasRule::none,   2, QkNorm::none, WindowRule::when_enabled, 0, kQwenDefaults},
  {"qwen3",       gated, mha, Experts::none, kRms,       untied, BiasRule::field,      BiasRule::none,   2, QkNorm::rms,  WindowRule::when_enabled, 0, kQwenDefaults},
  {"qwen3_moe",   gated, mha, Experts::moe,  kRms,       untied, BiasRule::field,      BiasRule::none,   2, QkNorm::rms,  WindowRule::when_enabled, 0, kQwenDefaults},
  {"deepseek_v2", gated, mla, Experts::optional, kRms,       untied, BiasRule::field,      BiasRule::none,   2, QkNorm::none, WindowRule::none,         0, kNoDefaults},
  {"deepseek_v3", gated, mla, Experts::moe,  kRms,       untied, BiasRule::field,      BiasRule::none,   2, QkNorm::none, WindowRule::none,         0, kNoDefaults},
  {"gpt2",        plain, mha, Experts::none, kLayerNorm, tied,   BiasRule::always,     BiasRule::always, 2, QkNorm::none, WindowRule::none,         0, kNoDefaults},
  {"gpt_neox",    plain, mha, Experts::none, kLayerNorm, untied, BiasRule::field_true, BiasRule::always, 2, QkNorm::none, WindowRule::none,         0, kNoDefaults},
  {"gemma",       gated, mha, Experts::none, kRms,       tied,   BiasRule::field,      BiasRule::none,   2, QkNorm::none, WindowRule::none,         0, R"({"head_dim": 256})"},
  {"gemma2",      gated, mha, Experts::none, kRms,       tied,   BiasRule::field,      BiasRule::none,   4, QkNorm::none, WindowRule::when_set,     2, R"({"head_dim": 256, "sliding_window": 4096})"},
  {"gemma3_text", gated, mha, Experts::none, kRms,       tied,   BiasRule::field,      BiasRule::none,   4, QkNorm::rms,  WindowRule::when_set,     6, kGemma3Defaults},
  // A Gemma-3 wrapper ("gemma3") whose text_config names no model_type of its own.
  {"gemma3",      gated, mha, Experts::none, kRms,       tied,   BiasRule::field,      BiasRule::none,   4, QkNorm::rms,  WindowRule::when_set,     6, kGemma3Defaults},
}};
// clang-format on

const HfArchitecture* find_architecture(const std::string& model_type) {
  for (const auto& a : kArchitectures)
    if (a.model_type == model_type) return &a;
  return nullptr;
}

bool reads_bias(const HfFields& f, BiasRule rule, const std::string& key) {
  switch (rule) {
    case BiasRule::none:
    case BiasRule::qkv:
      return false;
    case BiasRule::always:
      return true;
    case BiasRule::field:
      return f.boolean_or({key}, false);
    case BiasRule::field_true:
      return f.boolean_or({key}, true);
  }
  return false;
}

// hidden_activation / hidden_act / activation_function: checked to be an activation
// transformers knows. The FFN's shape comes from the family, not from this name: LlamaMLP and
// GemmaMLP are gated whatever the activation (GeGLU: gelu_pytorch_tanh), GPT-2's MLP is not.
void check_activation(const HfFields& f) {
  static const std::vector<std::string> known = {
      "silu",        "swish",   "swiglu",     "gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh",
      "gelu_python", "gelu_10", "quick_gelu", "relu"};
  const std::string key = f.find({"hidden_activation", "hidden_act", "activation_function"});
  if (key.empty()) return;
  const std::string act = f.string_or({key}, "");
  if (std::find(known.begin(), known.end(), act) != known.end()) return;
  f.fail(key, "unsupported activation \"" + act + "\" (supported: " + join_names(known) +
                  "; did you mean \"" + nearest_name(act, known) + "\"?)");
}

// Sliding-window attention: the window in tokens and how many layers use it (0: none).
struct SlidingWindow {
  int64_t tokens = 0;
  int64_t layers = 0;
  std::string source;  // the field that says which layers, for the refusal
};

SlidingWindow sliding_window(const HfFields& f, const HfArchitecture& arch, int64_t layers) {
  SlidingWindow w;
  if (arch.window == WindowRule::none) return w;
  if (arch.window == WindowRule::when_enabled && !f.boolean_or({"use_sliding_window"}, false)) return w;
  if (!f.has({"sliding_window"})) return w;  // null: full attention everywhere
  w.tokens = f.integer({"sliding_window"}, 1, int64_t(1) << 40);
  w.source = "sliding_window";
  if (f.has({"layer_types"})) {
    // transformers >= 4.53 writes the per-layer kinds out.
    const auto& kinds = f.raw("layer_types");
    if (!kinds.is_array() || static_cast<int64_t>(kinds.size()) != layers)
      f.fail("layer_types",
             "expected a list of " + std::to_string(layers) + " attention kinds (one a layer)");
    for (const auto& k : kinds) {
      const std::string kind = k.is_string() ? k.get<std::string>() : k.dump();
      if (kind == "sliding_attention") {
        ++w.layers;
      } else if (kind != "full_attention") {
        f.fail("layer_types",
               "\"" + kind + "\" is not an attention kind simrun models (full_attention, sliding_attention)");
      }
    }
    w.source = "layer_types";
  } else if (arch.window == WindowRule::when_enabled) {
    w.layers = layers - std::min(layers, f.integer({"max_window_layers"}, 0, kMaxLayers));
  } else if (arch.global_every > 0) {
    const int64_t every = f.integer_or({"sliding_window_pattern"}, arch.global_every, 1, kMaxLayers);
    w.layers = layers - layers / every;  // layers i with (i + 1) % every == 0 attend globally
  } else {
    w.layers = layers;
  }
  return w;
}

// The object the importer reads: the file's fields over its class's defaults.
nlohmann::json with_class_defaults(const nlohmann::json& obj, const HfArchitecture& arch) {
  nlohmann::json merged = nlohmann::json::parse(std::string(arch.class_defaults));
  for (const auto& item : obj.items()) merged[item.key()] = item.value();
  return merged;
}

std::string understood_list() {
  std::vector<std::string> names;
  for (const auto& a : kArchitectures) names.emplace_back(a.model_type);
  return join_names(names);
}

}  // namespace

std::vector<std::string> hf_model_types() {
  std::vector<std::string> names;
  for (const auto& a : kArchitectures) names.emplace_back(a.model_type);
  return names;
}

bool names_hf_config_file(const std::string& model) {
  const std::string_view ext = ".json";
  return model.find('/') != std::string::npos ||
         (model.size() > ext.size() && model.compare(model.size() - ext.size(), ext.size(), ext) == 0);
}

ModelSpec import_hf_config(const nlohmann::json& config, const std::string& file,
                           std::optional<int64_t> seq_len) {
  using namespace detail;
  if (!config.is_object())
    throw InputError(file, "(top level)", "expected a JSON object (a HuggingFace config.json)");
  // Multimodal configs (Llava, Mllama, Gemma 3, ...) nest the language model under text_config.
  const bool nested = config.contains("text_config") && config.at("text_config").is_object();
  const nlohmann::json& file_obj = nested ? config.at("text_config") : config;
  const std::string prefix = nested ? "text_config" : "";

  // The architecture: the text model's model_type, else the wrapper's.
  std::string type_field = "model_type";
  const nlohmann::json* type = nullptr;
  if (file_obj.contains("model_type") && !file_obj.at("model_type").is_null()) {
    type = &file_obj.at("model_type");
    type_field = nested ? "text_config.model_type" : "model_type";
  } else if (nested && config.contains("model_type") && !config.at("model_type").is_null()) {
    type = &config.at("model_type");
  }
  if (!type)
    throw InputError(file, type_field,
                     "missing: the architecture decides the shape (gated FFN, biases, norms), so simrun "
                     "reads only configs that name it (one of " +
                         understood_list() + ")");
  if (!type->is_string())
    throw InputError(file, type_field, std::string("expected a string, got ") + type->type_name());
  const std::string model_type = type->get<std::string>();
  const HfArchitecture* found = find_architecture(model_type);
  if (!found)
    throw InputError(file, type_field,
                     "\"" + model_type + "\" is not an architecture simrun imports (understood: " +
                         understood_list() + "; for another, describe the model as a model object)");
  const HfArchitecture& arch = *found;
  const nlohmann::json obj = with_class_defaults(file_obj, arch);
  const HfFields f(obj, file, prefix);
  const bool gpt2 = model_type == "gpt2";

  ModelSpec m;
  // attribute_map aliases: GPT-2 n_embd/n_layer/n_head/n_positions/n_inner.
  m.hidden = f.integer({"hidden_size", "n_embd", "d_model"}, 1, kMaxHidden);
  m.layers = f.integer({"num_hidden_layers", "n_layer", "num_layers"}, 1, kMaxLayers);
  m.heads = f.integer({"num_attention_heads", "n_head"}, 1, kMaxHeads);
  m.kv_heads = f.integer_or({"num_key_value_heads"}, m.heads, 1, kMaxHeads);  // null ⇒ MHA
  m.vocab = f.integer({"vocab_size"}, 1, kMaxVocab);
  // Context length: the default training sequence; a scenario's seq_len overrides it.
  const std::vector<std::string> context_names = {"max_position_embeddings", "n_positions", "n_ctx",
                                                  "seq_length"};
  const int64_t context = f.integer(context_names, 1, kMaxModelSeqLen);
  m.seq_len = seq_len.value_or(context);
  // GPT-2: n_inner null ⇒ 4·n_embd (configuration_gpt2.py / modeling_gpt2.py).
  m.ffn_hidden = f.integer_or({"intermediate_size", "n_inner", "ffn_dim"}, 4 * m.hidden, 1, kMaxFfn);

  check_activation(f);
  m.ffn_act = arch.ffn == gated ? FfnActivation::swiglu : FfnActivation::gelu;
  m.norm = arch.norm;
  m.layer_norms = arch.layer_norms;
  m.qk_norm = arch.qk_norm == QkNorm::rms;
  m.attention_bias = reads_bias(f, arch.attention_bias, "attention_bias");
  m.qkv_bias = arch.attention_bias == BiasRule::qkv;
  m.mlp_bias = reads_bias(f, arch.mlp_bias, "mlp_bias");
  if (gpt2) {
    // GPT-2 has a learned position table; the others rotary embeddings.
    m.learned_position_embeddings = true;
    m.max_positions = context;
  }
  m.tied_embeddings = f.boolean_or({"tie_word_embeddings"}, arch.embeddings == tied);

  if (arch.attention == mla) {
    // MLA (DeepSeek-V2/V3).
    MlaSpec a;
    a.q_lora_rank = f.integer_or({"q_lora_rank"}, 0, 0, kMaxHidden);  // null ⇒ plain Q projection (V2-Lite)
    a.kv_lora_rank = f.integer({"kv_lora_rank"}, 1, kMaxHidden);
    a.qk_nope_head_dim = f.integer({"qk_nope_head_dim"}, 0, kMaxHeadDim);
    a.qk_rope_head_dim = f.integer({"qk_rope_head_dim"}, 0, kMaxHeadDim);
    a.v_head_dim = f.integer({"v_head_dim"}, 1, kMaxHeadDim);
    m.mla = a;
    m.kv_heads = m.heads;  // MLA decompresses K and V for every head
    m.head_dim = a.v_head_dim;
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
  // num_local_experts), n_shared_experts, first_k_dense_replace, moe_layer_freq, and
  // group-limited routing n_group, topk_group (modeling_deepseek.py MoEGate: group_limited_greedy
  // or noaux_tc picks the topk_group best of n_group expert groups, then top-k within them).
  const std::string experts_key =
      arch.experts != Experts::none ? f.find({"n_routed_experts", "num_local_experts", "num_experts"}) : "";
  // Experts::moe: a file without its experts is not read as a dense model.
  if (arch.experts == Experts::moe && experts_key.empty())
    f.fail("num_experts",
           "missing: a \"" + model_type +
               "\" model has experts (give n_routed_experts, num_local_experts or num_experts)");
  // A family that always has experts has at least one (0 is not read as a dense model either).
  const int64_t experts =
      experts_key.empty() ? 0 : f.integer({experts_key}, arch.experts == Experts::moe ? 1 : 0, kMaxExperts);
  if (experts > 0) {
    MoeSpec moe;
    moe.experts = experts;
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
    moe.groups = f.integer_or({"n_group"}, 0, 0, kMaxExperts);
    moe.topk_groups = f.integer_or({"topk_group"}, moe.groups, 0, kMaxExperts);
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
  if (arch.attention == mla) m.mtp_layers = f.integer_or({"num_nextn_predict_layers"}, 0, 0, kMaxLayers);

  // Sliding windows: simrun's attention cost (FLOPs, the flash kernels' time, the unfused
  // score matrix, context-parallel exchanges) spans the whole sequence, so a window shorter
  // than it would be counted as full attention. A window no shorter than the sequence is
  // full attention, and is read as such.
  const SlidingWindow window = sliding_window(f, arch, m.layers);
  if (window.layers > 0 && window.tokens < m.seq_len)
    f.fail(window.source, std::to_string(window.tokens) + "-token sliding windows on " +
                              std::to_string(window.layers) + " of " + std::to_string(m.layers) +
                              " layers are shorter than the sequence of " + std::to_string(m.seq_len) +
                              " tokens (" +
                              (seq_len ? std::string("the seq_len given") : f.path(f.find(context_names))) +
                              "), and simrun's attention cost has no window (give a seq_len of at most " +
                              std::to_string(window.tokens) + ")");

  std::string name = f.string_or({"_name_or_path"}, "");
  if (name.empty()) name = model_type;
  m.name = name;
  m.source = "HuggingFace config.json: " + file;

  static const std::map<std::string, std::string> hf_names = {
      {"name", "_name_or_path"},
      {"kv_heads", "num_key_value_heads"},
      {"heads", "num_attention_heads"},
      {"head_dim", "head_dim"},
      {"layers", "num_hidden_layers"},
      {"hidden", "hidden_size"},
      {"max_positions", "max_position_embeddings"},
      {"moe.top_k", "num_experts_per_tok"},
      {"moe.first_dense_layers", "first_k_dense_replace"},
      {"moe.groups", "n_group"},
      {"moe.topk_groups", "topk_group"},
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
