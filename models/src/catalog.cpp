// The model catalog (models/catalog/*.json, one model per file, file stem = id) and the reader
// of model objects shared by catalog files and inline scenario "model" objects.
//
// Units: every field is a count (layers, widths, heads, tokens) or a plain number of parameters;
// field names are the ModelSpec member names, e.g. {"layers": 80, "hidden": 8192, ...}.
#include "simrun/models/catalog.hpp"

#include <algorithm>

#include "model_checks.hpp"
#include "simrun/common/catalog_files.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun {

ModelSpec read_model(JsonReader& r) {
  using namespace detail;
  ModelSpec m;
  m.name = r.string_or("name", "custom");
  m.layers = r.integer("layers", 1, kMaxLayers);
  m.hidden = r.integer("hidden", 1, kMaxHidden);
  m.heads = r.integer("heads", 1, kMaxHeads);
  m.kv_heads = r.integer_or("kv_heads", m.heads, 1, kMaxHeads);
  m.ffn_hidden = r.integer("ffn_hidden", 1, kMaxFfn);
  m.ffn_act = r.choice_or("ffn_act", "swiglu", {"swiglu", "gelu"}) == "gelu" ? FfnActivation::gelu
                                                                             : FfnActivation::swiglu;
  m.norm = r.choice_or("norm", "rmsnorm", {"rmsnorm", "layernorm"}) == "layernorm" ? NormKind::layernorm
                                                                                   : NormKind::rmsnorm;
  m.vocab = r.integer("vocab", 1, kMaxVocab);
  m.seq_len = r.integer("seq_len", 1, kMaxModelSeqLen);
  m.tied_embeddings = r.boolean_or("tied_embeddings", false);
  m.attention_bias = r.boolean_or("attention_bias", false);
  m.mlp_bias = r.boolean_or("mlp_bias", false);
  m.qkv_bias = r.boolean_or("qkv_bias", false);
  m.qk_norm = r.boolean_or("qk_norm", false);
  m.layer_norms = r.integer_or("layer_norms", 2, 2, 4);
  m.learned_position_embeddings = r.boolean_or("learned_position_embeddings", false);
  m.alibi = r.boolean_or("alibi", false);
  m.max_positions =
      r.integer_or("max_positions", m.learned_position_embeddings ? m.seq_len : 0, 0, kMaxModelSeqLen);
  m.mtp_layers = r.integer_or("mtp_layers", 0, 0, kMaxLayers);
  m.published_params = r.number_or("published_params", 0, 0, kMaxPublishedParams);
  m.source = r.string_or("source", "");

  if (r.has("mla")) {
    JsonReader a = r.object("mla");
    MlaSpec mla;
    mla.q_lora_rank = a.integer_or("q_lora_rank", 0, 0, kMaxHidden);
    mla.kv_lora_rank = a.integer("kv_lora_rank", 1, kMaxHidden);
    mla.qk_nope_head_dim = a.integer("qk_nope_head_dim", 0, kMaxHeadDim);
    mla.qk_rope_head_dim = a.integer("qk_rope_head_dim", 0, kMaxHeadDim);
    mla.v_head_dim = a.integer("v_head_dim", 1, kMaxHeadDim);
    a.finish();
    m.mla = mla;
  } else {
    r.accept("mla");
  }

  if (r.has("head_dim")) {
    m.head_dim = r.integer("head_dim", 1, kMaxHeadDim);
  } else if (m.mla) {
    r.accept("head_dim");
    m.head_dim = m.mla->v_head_dim;  // MLA: the attention output width per head
  } else {
    r.accept("head_dim");
    if (m.hidden % m.heads != 0)
      r.fail("hidden", std::to_string(m.hidden) + " is not a multiple of heads = " + std::to_string(m.heads) +
                           " (make it one, or give head_dim explicitly)");
    m.head_dim = m.hidden / m.heads;
  }

  if (r.has("moe")) {
    JsonReader e = r.object("moe");
    MoeSpec moe;
    moe.experts = e.integer("experts", 1, kMaxExperts);
    moe.top_k = e.integer("top_k", 1, kMaxExperts);
    moe.expert_ffn_hidden = e.integer_or("expert_ffn_hidden", m.ffn_hidden, 1, kMaxFfn);
    moe.shared_experts = e.integer_or("shared_experts", 0, 0, kMaxExperts);
    moe.first_dense_layers = e.integer_or("first_dense_layers", 0, 0, kMaxLayers);
    moe.groups = e.integer_or("groups", 0, 0, kMaxExperts);
    moe.topk_groups = e.integer_or("topk_groups", moe.groups, 0, kMaxExperts);
    e.finish();
    m.moe = moe;
  } else {
    r.accept("moe");
  }
  r.finish();

  detail::check_model(m, r.file(), [&r](const std::string& field) { return r.path_of(field); });
  return m;
}

ModelSpec read_model_variant(const ModelSpec& base, JsonReader& r) {
  using namespace detail;
  ModelSpec m = base;
  const auto integer = [&r](const char* key, int64_t& field, int64_t max) {
    if (r.has(key)) field = r.integer(key, 1, max);
  };
  integer("layers", m.layers, kMaxLayers);
  integer("hidden", m.hidden, kMaxHidden);
  integer("heads", m.heads, kMaxHeads);
  // Multi-head attention stays so with new heads (Megatron's query groups equal the heads unless
  // --group-query-attention is given); a GQA model keeps its groups.
  if (base.kv_heads == base.heads) m.kv_heads = m.heads;
  integer("kv_heads", m.kv_heads, kMaxHeads);
  integer("ffn_hidden", m.ffn_hidden, kMaxFfn);
  integer("vocab", m.vocab, kMaxVocab);
  integer("seq_len", m.seq_len, kMaxModelSeqLen);
  const char* act = base.ffn_act == FfnActivation::gelu ? "gelu" : "swiglu";
  m.ffn_act =
      r.choice_or("ffn_act", act, {"swiglu", "gelu"}) == "gelu" ? FfnActivation::gelu : FfnActivation::swiglu;
  m.tied_embeddings = r.boolean_or("tied_embeddings", base.tied_embeddings);
  // The head width: given, else kept where base stated it (MLA, Gemma's 256), else derived.
  const bool derived_head_dim = !base.mla && base.head_dim * base.heads == base.hidden;
  if (r.has("head_dim")) {
    m.head_dim = r.integer("head_dim", 1, kMaxHeadDim);
  } else if (derived_head_dim && (m.hidden != base.hidden || m.heads != base.heads)) {
    if (m.hidden % m.heads != 0)
      r.fail(m.hidden != base.hidden ? "hidden" : "heads",
             "hidden = " + std::to_string(m.hidden) + " is not a multiple of heads = " +
                 std::to_string(m.heads) + " (make it one, or give head_dim explicitly)");
    m.head_dim = m.hidden / m.heads;
  }
  const bool reshaped = m.layers != base.layers || m.hidden != base.hidden || m.heads != base.heads ||
                        m.kv_heads != base.kv_heads || m.head_dim != base.head_dim ||
                        m.ffn_hidden != base.ffn_hidden || m.ffn_act != base.ffn_act ||
                        m.vocab != base.vocab || m.tied_embeddings != base.tied_embeddings;
  if (reshaped) {
    m.name = base.name + " (variant)";  // what the reports call it: not the published model
    m.published_params = 0;             // the authors' total is of the original shape
    m.source = "variant of " + base.name + (base.source.empty() ? "" : " (" + base.source + ")");
  }
  check_model(m, r.file(), [&r](const std::string& field) { return r.path_of(field); });
  return m;
}

namespace {

// A catalog file's model: its "name", when given, is the file stem.
ModelSpec read_catalog_model(JsonReader& reader, const std::string& id) {
  const bool named = reader.has("name");
  ModelSpec spec = read_model(reader);
  if (!named) spec.name = id;
  if (spec.name != id)
    reader.fail("name", quoted_input(spec.name) + " differs from the file name; the id is the file stem " +
                            quoted_input(id));
  return spec;
}

}  // namespace

ModelCatalog ModelCatalog::load(const std::filesystem::path& dir) {
  ModelCatalog catalog;
  read_catalog_folder(dir, "model", read_catalog_model, FolderRule::required, catalog.m_models,
                      catalog.m_aliases);
  return catalog;
}

void ModelCatalog::add(const std::filesystem::path& dir) {
  read_catalog_folder(dir, "model", read_catalog_model, FolderRule::optional, m_models, m_aliases);
}

const ModelSpec& ModelCatalog::get(const std::string& id, const std::string& file,
                                   const std::string& field) const {
  const auto it = m_models.find(id);
  if (it != m_models.end()) return it->second;
  const auto known = ids();
  throw InputError(file, field,
                   "unknown model " + quoted_input(id) + " (known: " + join_names(known) +
                       "; did you mean \"" + nearest_id(id, m_aliases) + "\"?)");
}

std::vector<std::string> ModelCatalog::ids() const {
  std::vector<std::string> out;
  out.reserve(m_models.size());
  for (const auto& [id, spec] : m_models) out.push_back(id);
  return out;
}

}  // namespace simrun
