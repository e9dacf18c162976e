// Tests of import_hf_config on small HuggingFace config.json fixtures (tests/data/hf/).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "model_catalog_fixture.hpp"
#include "simrun/common/error.hpp"
#include "simrun/models/catalog.hpp"
#include "simrun/models/counts.hpp"

using namespace simrun;
using simrun::test::shipped_model_catalog;

namespace {

const std::filesystem::path kHfDir = std::filesystem::path(SIMRUN_DATA_DIR) / "tests" / "data" / "hf";

ModelSpec import_fixture(const std::string& name, std::optional<int64_t> seq_len = std::nullopt) {
  const auto path = kHfDir / name;
  return import_hf_config(load_json_file(path), path.string(), seq_len);
}

// A published total is printed to a few digits, sometimes truncated rather than rounded
// (Qwen2.5-7B's card says 7.61B for 7,615,616,512), so a count matches it when it lies within
// one unit of the last printed digit: `unit` = 0.01e9 for "7.61B", 0.1e9 for "46.7B".
bool matches_published(double count, double published, double unit) {
  return std::abs(count - published) <= unit;
}

// The error an import gives, or an empty one when it gives none.
InputError import_error(const std::string& name, std::optional<int64_t> seq_len = std::nullopt) {
  try {
    import_fixture(name, seq_len);
  } catch (const InputError& e) {
    return e;
  }
  return InputError("", "", "");
}

ModelSpec import_text(const std::string& text) {
  return import_hf_config(parse_json_text(text, "config.json"), "config.json");
}

// The shape fields two specs must agree on (names and sources differ).
void check_same_shape(const ModelSpec& a, const ModelSpec& b) {
  CHECK(a.layers == b.layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.heads == b.heads);
  CHECK(a.kv_heads == b.kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.ffn_hidden == b.ffn_hidden);
  CHECK(a.ffn_act == b.ffn_act);
  CHECK(a.norm == b.norm);
  CHECK(a.vocab == b.vocab);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(count_params(a).total() == count_params(b).total());
}

}  // namespace

TEST_CASE("a Llama-3-8B config.json gives the catalog shape and 8.03B parameters", "[models][hf]") {
  const ModelSpec m = import_fixture("llama3-8b.json");
  check_same_shape(m, shipped_model_catalog().get("llama3-8b", "t", "m"));
  CHECK(m.seq_len == 8192);                   // max_position_embeddings is the default seq_len
  CHECK(m.ffn_act == FfnActivation::swiglu);  // hidden_act silu ⇒ 3 matrices
  CHECK(count_params(m).total() == 8'030'261'248.0);
}

TEST_CASE("text_config nesting (multimodal wrappers) and class defaults", "[models][hf]") {
  // No hidden_act and no tie_word_embeddings: LlamaConfig defaults silu and false.
  const ModelSpec m = import_fixture("multimodal-llama3-8b.json");
  check_same_shape(m, shipped_model_catalog().get("llama3-8b", "t", "m"));
}

TEST_CASE("Mixtral: num_local_experts, num_experts_per_tok, 46.7B / 12.9B", "[models][hf][moe]") {
  const ModelSpec m = import_fixture("mixtral-8x7b.json");
  REQUIRE(m.is_moe());
  CHECK(m.moe->experts == 8);
  CHECK(m.moe->top_k == 2);
  CHECK(m.moe->expert_ffn_hidden == 14336);
  CHECK(m.moe->first_dense_layers == 0);
  CHECK(m.seq_len == 32768);
  check_same_shape(m, shipped_model_catalog().get("mixtral-8x7b", "t", "m"));
  const ParamCounts c = count_params(m);
  CHECK(std::abs(c.active(m) - 12.9e9) / 12.9e9 < 0.01);
}

TEST_CASE("Mixtral's num_experts alias (attribute_map) reads like num_local_experts", "[models][hf][moe]") {
  const ModelSpec m = import_text(R"({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
    "max_position_embeddings": 256, "num_experts": 4, "num_experts_per_tok": 2})");
  REQUIRE(m.is_moe());
  CHECK(m.moe->experts == 4);
  CHECK(m.kv_heads == 2);
  CHECK_FALSE(m.tied_embeddings);
}

TEST_CASE("DeepSeek-V3: MLA, shared experts, leading dense layers, MTP", "[models][hf][moe]") {
  const ModelSpec m = import_fixture("deepseek-v3.json");
  REQUIRE(m.mla.has_value());
  CHECK(m.mla->q_lora_rank == 1536);
  CHECK(m.mla->kv_lora_rank == 512);
  CHECK(m.mla->qk_rope_head_dim == 64);
  REQUIRE(m.is_moe());
  CHECK(m.moe->experts == 256);
  CHECK(m.moe->shared_experts == 1);
  CHECK(m.moe->first_dense_layers == 3);
  CHECK(m.moe->expert_ffn_hidden == 2048);
  CHECK(m.moe->groups == 8);  // n_group, topk_group: node-limited routing
  CHECK(m.moe->topk_groups == 4);
  CHECK(m.ffn_hidden == 18432);
  CHECK(m.mtp_layers == 1);
  CHECK(m.seq_len == 163840);
  check_same_shape(m, shipped_model_catalog().get("deepseek-v3", "t", "m"));
  CHECK(std::abs(count_params(m).total() - 671e9) / 671e9 < 0.01);
}

TEST_CASE("Qwen3-MoE: num_experts, moe_intermediate_size, explicit head_dim", "[models][hf][moe]") {
  // Qwen3-30B-A3B model card: 30.5B total, 3.3B activated; head_dim 128 ≠ hidden/heads = 64.
  const ModelSpec m = import_fixture("qwen3-30b-a3b.json");
  CHECK(m.head_dim == 128);
  CHECK(m.q_proj_width() == 4096);
  REQUIRE(m.is_moe());
  CHECK(m.moe->experts == 128);
  CHECK(m.moe->top_k == 8);
  CHECK(m.moe->expert_ffn_hidden == 768);
  const ParamCounts c = count_params(m);
  CHECK(std::abs(c.total() - 30.5e9) / 30.5e9 < 0.01);
  CHECK(std::abs(c.active(m) - 3.3e9) / 3.3e9 < 0.02);  // printed with 2 digits: ±0.05B
}

TEST_CASE("GPT-2: attribute_map names, n_inner null, tied by default, learned positions", "[models][hf]") {
  const ModelSpec m = import_fixture("gpt2.json");
  CHECK(m.hidden == 768);
  CHECK(m.layers == 12);
  CHECK(m.heads == 12);
  CHECK(m.ffn_hidden == 4 * 768);
  CHECK(m.ffn_act == FfnActivation::gelu);
  CHECK(m.norm == NormKind::layernorm);
  CHECK(m.tied_embeddings);
  CHECK(m.learned_position_embeddings);
  CHECK(m.max_positions == 1024);
  CHECK(m.seq_len == 1024);
  CHECK(count_params(m).total() == 124'439'808.0);  // GPT-2 small checkpoint
}

TEST_CASE("GPT-NeoX-20B: untied embed_in/embed_out, biases, 20.55B", "[models][hf]") {
  const ModelSpec m = import_fixture("gpt-neox-20b.json");
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.attention_bias);
  CHECK(m.norm == NormKind::layernorm);
  CHECK_FALSE(m.learned_position_embeddings);          // rotary
  CHECK(count_params(m).total() == 20'554'567'680.0);  // EleutherAI checkpoint
}

TEST_CASE("bad HF configs give one InputError naming the field", "[models][hf][errors]") {
  try {
    import_fixture("bad-activation.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.field() == "hidden_act");
    CHECK_THAT(e.why(), Catch::Contains("did you mean \"silu\""));
  }
  auto field_of = [](const std::string& text) {
    try {
      import_text(text);
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string();
  };
  const std::string base = R"("model_type": "llama", "intermediate_size": 128, "num_hidden_layers": 2,
    "vocab_size": 100, "max_position_embeddings": 128)";
  CHECK(field_of("{" + base + R"(, "num_attention_heads": 4})") == "hidden_size");
  CHECK(
      field_of("{" + base + R"(, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3})") ==
      "num_key_value_heads");
  CHECK(field_of("{" + base + R"(, "hidden_size": 66, "num_attention_heads": 4})") == "hidden_size");
  CHECK(field_of("{" + base + R"(, "hidden_size": "64", "num_attention_heads": 4})") == "hidden_size");
  CHECK(field_of(R"({"text_config": {)" + base + R"(, "hidden_size": 64, "num_attention_heads": 0}})") ==
        "text_config.num_attention_heads");
  CHECK(field_of(R"({"model_type": "qwen3_moe", "intermediate_size": 128, "num_hidden_layers": 2,
    "vocab_size": 100, "max_position_embeddings": 128, "hidden_size": 64, "num_attention_heads": 4,
    "num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 2})") == "decoder_sparse_step");
  CHECK(field_of("[1, 2]") == "(top level)");
  // A Mixtral or Qwen-MoE file without its experts is not read as a dense model.
  const std::string moe_shape = R"("intermediate_size": 128, "num_hidden_layers": 2, "vocab_size": 100,
    "max_position_embeddings": 128, "hidden_size": 64, "num_attention_heads": 4, "num_experts_per_tok": 2})";
  CHECK(field_of(R"({"model_type": "mixtral", )" + moe_shape) == "num_experts");
  CHECK(field_of(R"({"model_type": "qwen3_moe", )" + moe_shape) == "num_experts");
  // Nor one with none of them.
  CHECK(field_of(R"({"model_type": "mixtral", "num_local_experts": 0, )" + moe_shape) == "num_local_experts");
  CHECK(field_of(R"({"model_type": "qwen3_moe", "num_experts": 0, )" + moe_shape) == "num_experts");
  // The name is printed in tables: nothing a terminal acts on.
  CHECK(field_of("{" + base + R"(, "hidden_size": 64, "num_attention_heads": 4,
    "_name_or_path": "evil\u001b[31mRED\nline"})") == "_name_or_path");
  CHECK(field_of("{" + base + R"(, "hidden_size": 64, "num_attention_heads": 4,
    "_name_or_path": "right\u202eleft"})") == "_name_or_path");
  CHECK(field_of("{" + base + R"(, "hidden_size": 64, "num_attention_heads": 4,
    "_name_or_path": "org/Llama-3 \\ é"})")
            .empty());
}

TEST_CASE("out-of-range integers are quoted as written, not wrapped through int64", "[models][hf][errors]") {
  const std::string base = R"({"model_type": "llama", "intermediate_size": 128, "num_hidden_layers": 2,
    "vocab_size": 100, "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": )";
  auto why_of = [&](const std::string& value) {
    try {
      import_text(base + value + "}");
    } catch (const InputError& e) {
      CHECK(e.field() == "max_position_embeddings");
      return e.why();
    }
    return std::string("no error");
  };
  CHECK_THAT(why_of("1e300"), Catch::StartsWith("1e+300 is out of range"));
  CHECK_THAT(why_of("-1e300"), Catch::StartsWith("-1e+300 is out of range"));
  CHECK_THAT(why_of("18446744073709551615"), Catch::StartsWith("18446744073709551615 is out of range"));
}

// Import tests of published configs (hub config.json fields copied as they are) against the
// totals their authors publish, within one unit of the last printed digit (matches_published).

TEST_CASE("Llama-3.1-8B and 70B configs give 8.03B and 70.6B", "[models][hf][published]") {
  // Hub model pages (safetensors totals): 8.03B and 70.6B params.
  const ModelSpec m8 = import_fixture("llama-3.1-8b.json");
  CHECK(m8.seq_len == 131072);  // rope_scaling changes no shape
  CHECK(count_params(m8).total() == 8'030'261'248.0);
  CHECK(matches_published(count_params(m8).total(), 8.03e9, 0.01e9));
  const ModelSpec m70 = import_fixture("llama-3.1-70b.json");
  check_same_shape(m70, shipped_model_catalog().get("llama3-70b", "t", "m"));
  CHECK(matches_published(count_params(m70).total(), 70.6e9, 0.1e9));
}

TEST_CASE("Qwen2.5-7B: Q/K/V biases without an output bias, 7.61B (6.53B non-embedding)",
          "[models][hf][published]") {
  // Qwen2.5-7B model card: "Number of Parameters: 7.61B; Number of Paramaters (Non-Embedding): 6.53B".
  // Qwen2Attention builds q/k/v_proj with bias=True and o_proj without; the config has no field.
  const ModelSpec m = import_fixture("qwen2.5-7b.json");
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.attention_bias);
  const ParamCounts c = count_params(m);
  // Per layer: Q 3584·3584 + K,V 2·3584·512 + O 3584·3584 + biases 3584 + 2·512.
  CHECK(c.attention == 28.0 * (3584.0 * 3584 * 2 + 2.0 * 3584 * 512 + 3584 + 2 * 512));
  CHECK(c.total() == 7'615'616'512.0);
  CHECK(matches_published(c.total(), 7.61e9, 0.01e9));
  CHECK(matches_published(c.total() - c.embedding - c.output, 6.53e9, 0.01e9));
  // sliding_window 131072 is off (use_sliding_window false): the import needs no seq_len.
  CHECK(m.seq_len == 131072);
}

TEST_CASE("Qwen3-8B: query/key norms, explicit head_dim, 8.19B (6.95B non-embedding)",
          "[models][hf][published]") {
  // Qwen3-8B model card: "Number of Parameters: 8.2B; Number of Paramaters (Non-Embedding): 6.95B";
  // hub page: 8.19B params.
  const ModelSpec m = import_fixture("qwen3-8b.json");
  CHECK(m.qk_norm);
  CHECK(m.head_dim == 128);
  const ParamCounts c = count_params(m);
  CHECK(c.total() == 8'190'735'360.0);
  CHECK(matches_published(c.total(), 8.19e9, 0.01e9));
  CHECK(matches_published(c.total() - c.embedding - c.output, 6.95e9, 0.01e9));
}

TEST_CASE("Qwen3-30B-A3B: 30.5B total, 3.3B activated", "[models][hf][published][moe]") {
  // Qwen3-30B-A3B model card: "Number of Parameters: 30.5B in total and 3.3B activated".
  const ModelSpec m = import_fixture("qwen3-30b-a3b.json");
  const ParamCounts c = count_params(m);
  CHECK(matches_published(c.total(), 30.5e9, 0.1e9));
  CHECK(matches_published(c.active(m), 3.3e9, 0.1e9));
}

TEST_CASE("Mixtral-8x7B: 46.7B total, 12.9B per token", "[models][hf][published][moe]") {
  // Mistral AI, "Mixtral of experts" (blog, Dec 2023): "46.7B total parameters but only uses
  // 12.9B parameters per token".
  const ModelSpec m = import_fixture("mixtral-8x7b.json");
  const ParamCounts c = count_params(m);
  CHECK(matches_published(c.total(), 46.7e9, 0.1e9));
  CHECK(matches_published(c.active(m), 12.9e9, 0.1e9));
}

TEST_CASE("Mistral-7B-v0.1: 7.24B, its 4096-token window is read at seq_len <= 4096 only",
          "[models][hf][published]") {
  // Hub model page (safetensors): 7.24B params.
  const ModelSpec m = import_fixture("mistral-7b-v0.1.json", 4096);
  CHECK(count_params(m).total() == 7'241'732'096.0);
  CHECK(matches_published(count_params(m).total(), 7.24e9, 0.01e9));
  check_same_shape(m, shipped_model_catalog().get("mistral-7b", "t", "m"));
  // The config's own context (32768) is longer than the window: refused, naming the field.
  const InputError e = import_error("mistral-7b-v0.1.json");
  CHECK(e.field() == "sliding_window");
  CHECK_THAT(e.why(), Catch::Contains("32 of 32 layers") && Catch::Contains("at most 4096"));
}

TEST_CASE("DeepSeek-V3: 671B total, 37B activated", "[models][hf][published][moe]") {
  // DeepSeek-V3 technical report (arXiv:2412.19437) abstract: "671B total parameters with 37B
  // activated for each token" (the hub's 685B adds the MTP module, counted apart in mtp).
  const ModelSpec m = import_fixture("deepseek-v3.json");
  const ParamCounts c = count_params(m);
  CHECK(matches_published(c.total(), 671e9, 1e9));
  CHECK(matches_published(c.active(m) - c.embedding, 37e9, 1e9));  // activated: no input embedding
}

TEST_CASE("DeepSeek-V2: 236B total, 21B activated", "[models][hf][published][moe]") {
  // DeepSeek-V2 report (arXiv:2405.04434) abstract: "236B total parameters, of which 21B are
  // activated for each token". Shape fields of the hub config (160 routed + 2 shared experts,
  // 1 leading dense layer).
  const ModelSpec m = import_fixture("deepseek-v2.json", 4096);
  const ParamCounts c = count_params(m);
  CHECK(matches_published(c.total(), 236e9, 1e9));
  CHECK(matches_published(c.active(m) - c.embedding, 21e9, 1e9));
}

TEST_CASE("a Gemma-2 config: gated GELU, tied, 4 norms a layer, 9.24B, windows refused past 4096",
          "[models][hf][published][gemma]") {
  // Gemma 2 report (arXiv:2408.00118) Table 2, 9B: 8,324,201,984 non-embedding parameters
  // (its 917,962,752 embedding parameters count a padded 256,128-row table; the hub checkpoint
  // has vocab_size 256000); Gemma-2-9B model page: 9.24B params.
  const ModelSpec m = import_fixture("gemma-2-9b.json", 4096);
  CHECK(m.ffn_act == FfnActivation::swiglu);  // GeGLU: gate, up and down, 3 matrices
  CHECK(m.tied_embeddings);                   // GemmaConfig's default
  CHECK(m.head_dim == 256);                   // not hidden/heads = 224
  CHECK(m.layer_norms == 4);                  // pre- and post-norms around attention and FFN
  const ParamCounts c = count_params(m);
  CHECK(c.output == 0);
  CHECK(c.total() - c.embedding == 8'324'201'984.0);
  CHECK(c.total() == 9'241'705'984.0);
  CHECK(matches_published(c.total(), 9.24e9, 0.01e9));
  // The FFN's FLOPs are those of its three matrices: 6·s·(attention + FFN weights) per sequence.
  const FlopCounts f = count_flops_per_sequence(m, AttentionFlops::causal);
  CHECK(f.dense_gemms == 6.0 * 4096 * (c.attention + c.mlp_dense));
  CHECK(c.mlp_dense == 42.0 * 3 * 3584 * 14336);

  // At the config's own context of 8192 tokens, half the layers' 4096-token windows would be
  // counted as full attention: one error naming the field, never a different shape.
  const InputError e = import_error("gemma-2-9b.json");
  CHECK(e.field() == "sliding_window");
  CHECK_THAT(e.why(), Catch::Contains("21 of 42 layers") && Catch::Contains("8192") &&
                          Catch::Contains("max_position_embeddings"));
  CHECK(e.why().find('\n') == std::string::npos);
  CHECK(import_error("gemma-2-9b.json", 4097).field() == "sliding_window");
}

TEST_CASE("a Gemma-3-27B config (text_config, class defaults): 25.6B non-embedding",
          "[models][hf][published][gemma]") {
  // Gemma 3 report (arXiv:2503.19786) Table 1, 27B: 417M vision encoder, 1,416M embedding,
  // 25,600M non-embedding parameters. Its embedding count includes the 1152·5376 multimodal
  // projector; the text_config leaves vocab_size (262,208) to Gemma3TextConfig's default.
  const ModelSpec m = import_fixture("gemma-3-27b.json", 1024);
  CHECK(m.vocab == 262208);
  CHECK(m.qk_norm);
  CHECK(m.layer_norms == 4);
  CHECK(m.tied_embeddings);
  const ParamCounts c = count_params(m);
  CHECK(matches_published(c.total() - c.embedding, 25'600e6, 1e6));
  CHECK(matches_published(c.embedding + 1152.0 * 5376, 1'416e6, 1e6));
  // Five of six layers attend within 1024 tokens (sliding_window_pattern 6, the default).
  const InputError e = import_error("gemma-3-27b.json");
  CHECK(e.field() == "text_config.sliding_window");
  CHECK_THAT(e.why(), Catch::Contains("52 of 62 layers"));
}

TEST_CASE("sliding windows: use_sliding_window, max_window_layers and layer_types decide the layers",
          "[models][hf]") {
  const std::string qwen = R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 256,
    "sliding_window": 64)";
  auto error_of = [](const std::string& text) {
    try {
      import_hf_config(parse_json_text(text, "config.json"), "config.json");
    } catch (const InputError& e) {
      return e.field() + ": " + e.why();
    }
    return std::string();
  };
  CHECK(error_of(qwen + "}").empty());  // use_sliding_window false
  CHECK(error_of(qwen + R"(, "use_sliding_window": true, "max_window_layers": 4})")
            .empty());  // no layer past 4
  CHECK_THAT(error_of(qwen + R"(, "use_sliding_window": true, "max_window_layers": 3})"),
             Catch::StartsWith("sliding_window: 64-token sliding windows on 1 of 4 layers"));
  CHECK_THAT(error_of(qwen + R"(, "use_sliding_window": true, "layer_types": ["full_attention",
    "sliding_attention", "sliding_attention", "full_attention"]})"),
             Catch::StartsWith("layer_types: 64-token sliding windows on 2 of 4 layers"));
  CHECK_THAT(error_of(qwen + R"(, "use_sliding_window": true, "layer_types": ["full_attention"]})"),
             Catch::StartsWith("layer_types: expected a list of 4"));
  // A window no shorter than the sequence is full attention.
  CHECK(import_hf_config(
            parse_json_text(qwen + R"(, "use_sliding_window": true, "max_window_layers": 0})", "config.json"),
            "config.json", 64)
            .seq_len == 64);
  // Llama has no sliding-window attention: the key is unused there, as in transformers.
  CHECK(
      error_of(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 256, "sliding_window": 8})")
          .empty());
}

TEST_CASE("model_type: unknown or missing is one error listing the understood ones", "[models][hf][errors]") {
  const std::string body = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 256)";
  for (const std::string& text : {"{\"model_type\": \"phi3\", " + body + "}", "{" + body + "}",
                                  R"({"model_type": "llava", "text_config": {)" + body + "}}"}) {
    try {
      import_hf_config(parse_json_text(text, "config.json"), "config.json");
      FAIL("no error for " << text);
    } catch (const InputError& e) {
      CHECK(e.file() == "config.json");
      CHECK(e.field() == "model_type");
      CHECK_THAT(e.why(), Catch::Contains("llama, mistral, mixtral, qwen2"));
      CHECK(e.why().find('\n') == std::string::npos);
    }
  }
  // Every understood model_type is one import_hf_config reads.
  for (const auto& type : hf_model_types()) {
    CAPTURE(type);
    const bool mla = type.rfind("deepseek", 0) == 0;
    const bool moe = mla || type == "mixtral" || type.find("_moe") != std::string::npos;
    const std::string text =
        "{\"model_type\": \"" + type + "\", " + body +
        (mla ? R"(, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8)"
             : "") +
        (moe ? R"(, "num_experts": 4, "num_experts_per_tok": 2)" : "") + ", \"sliding_window\": null}";
    CHECK_NOTHROW(import_hf_config(parse_json_text(text, "config.json"), "config.json"));
  }
}

TEST_CASE("the family decides the FFN's shape, not the activation's name", "[models][hf]") {
  const std::string body = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 256, "hidden_act": "gelu")";
  auto act_of = [&](const std::string& type) {
    return import_hf_config(parse_json_text("{\"model_type\": \"" + type + "\", " + body + "}", "c"), "c")
        .ffn_act;
  };
  CHECK(act_of("llama") == FfnActivation::swiglu);  // LlamaMLP is gated whatever hidden_act says
  CHECK(act_of("gemma") == FfnActivation::swiglu);
  CHECK(act_of("gpt_neox") == FfnActivation::gelu);
}

TEST_CASE("docs/model.md lists every understood model_type", "[models][hf][docs]") {
  std::ifstream in(std::filesystem::path(SIMRUN_DATA_DIR) / "docs" / "model.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& type : hf_model_types()) {
    CAPTURE(type);
    CHECK(text.str().find("`" + type + "`") != std::string::npos);
  }
}
