// Tests of import_hf_config on small HuggingFace config.json fixtures (tests/data/hf/).
#include <catch2/catch.hpp>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/models/catalog.hpp"
#include "simrun/models/counts.hpp"

using namespace simrun;

namespace {

const std::filesystem::path kHfDir = std::filesystem::path(SIMRUN_DATA_DIR) / "tests" / "data" / "hf";

ModelSpec import_fixture(const std::string& name) {
  const auto path = kHfDir / name;
  return import_hf_config(load_json_file(path), path.string());
}

ModelSpec import_text(const std::string& text) {
  return import_hf_config(parse_json_text(text, "config.json"), "config.json");
}

const ModelCatalog& catalog() {
  static const ModelCatalog c =
      ModelCatalog::load(std::filesystem::path(SIMRUN_DATA_DIR) / "models" / "catalog");
  return c;
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
  check_same_shape(m, catalog().get("llama3-8b", "t", "m"));
  CHECK(m.seq_len == 8192);                   // max_position_embeddings is the default seq_len
  CHECK(m.ffn_act == FfnActivation::swiglu);  // hidden_act silu ⇒ 3 matrices
  CHECK(count_params(m).total() == 8'030'261'248.0);
}

TEST_CASE("text_config nesting (multimodal wrappers) and class defaults", "[models][hf]") {
  // No hidden_act and no tie_word_embeddings: LlamaConfig defaults silu and false.
  const ModelSpec m = import_fixture("multimodal-llama3-8b.json");
  check_same_shape(m, catalog().get("llama3-8b", "t", "m"));
}

TEST_CASE("Mixtral: num_local_experts, num_experts_per_tok, 46.7B / 12.9B", "[models][hf][moe]") {
  const ModelSpec m = import_fixture("mixtral-8x7b.json");
  REQUIRE(m.is_moe());
  CHECK(m.moe->experts == 8);
  CHECK(m.moe->top_k == 2);
  CHECK(m.moe->expert_ffn_hidden == 14336);
  CHECK(m.moe->first_dense_layers == 0);
  CHECK(m.seq_len == 32768);
  check_same_shape(m, catalog().get("mixtral-8x7b", "t", "m"));
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
  CHECK(m.ffn_hidden == 18432);
  CHECK(m.mtp_layers == 1);
  CHECK(m.seq_len == 163840);
  check_same_shape(m, catalog().get("deepseek-v3", "t", "m"));
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
  CHECK(field_of("{" + base + R"(, "hidden_size": 64, "num_attention_heads": 4, "num_experts": 4,
    "num_experts_per_tok": 2, "decoder_sparse_step": 2})") == "decoder_sparse_step");
  CHECK(field_of("[1, 2]") == "(top level)");
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
