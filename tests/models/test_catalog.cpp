// Tests of the model catalog (models/catalog/*.json) and of read_model's validation.
#include <catch2/catch.hpp>
#include <fstream>

#include "model_catalog_fixture.hpp"
#include "simrun/common/error.hpp"
#include "simrun/models/catalog.hpp"
#include "simrun/models/counts.hpp"

using namespace simrun;
using simrun::test::shipped_model_catalog;

namespace {

// Reads an inline model object; returns the InputError's dotted field ("" when none thrown).
std::string error_field_of(const std::string& text) {
  try {
    const auto json = parse_json_text(text, "scenario.json");
    JsonReader r(json, "scenario.json", "model");
    read_model(r);
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

const char* kValid = R"({"name": "tiny", "layers": 4, "hidden": 256, "heads": 8, "kv_heads": 2,
  "ffn_hidden": 1024, "ffn_act": "swiglu", "vocab": 1000, "seq_len": 512, "tied_embeddings": true})";

}  // namespace

TEST_CASE("every contract model id is in the catalog", "[models][catalog]") {
  const std::vector<std::string> contract = {"gpt3-175b",   "mt-nlg-530b", "bloom-176b",   "llama2-7b",
                                             "llama2-13b",  "llama2-70b",  "llama3-8b",    "llama3-70b",
                                             "llama3-405b", "mistral-7b",  "mixtral-8x7b", "deepseek-v3"};
  for (const auto& id : contract) {
    INFO(id);
    REQUIRE(shipped_model_catalog().contains(id));
    const ModelSpec& m = shipped_model_catalog().get(id, "test", "model");
    CHECK(m.name == id);
    CHECK(m.published_params > 0);
    CHECK_FALSE(m.source.empty());
  }
}

TEST_CASE("catalog shapes that other parts rely on", "[models][catalog]") {
  const ModelSpec& l70 = shipped_model_catalog().get("llama3-70b", "test", "model");
  CHECK(l70.layers == 80);
  CHECK(l70.hidden == 8192);
  CHECK(l70.heads == 64);
  CHECK(l70.kv_heads == 8);
  CHECK(l70.head_dim == 128);
  CHECK(l70.ffn_hidden == 28672);
  CHECK(l70.ffn_act == FfnActivation::swiglu);
  CHECK(l70.vocab == 128256);
  CHECK(l70.seq_len == 8192);
  CHECK_FALSE(l70.tied_embeddings);
  CHECK_FALSE(l70.is_moe());

  const ModelSpec& gpt3 = shipped_model_catalog().get("gpt3-175b", "test", "model");
  CHECK(gpt3.ffn_act == FfnActivation::gelu);
  CHECK(gpt3.norm == NormKind::layernorm);
  CHECK(gpt3.learned_position_embeddings);

  const ModelSpec& ds = shipped_model_catalog().get("deepseek-v3", "test", "model");
  REQUIRE(ds.is_moe());
  REQUIRE(ds.mla.has_value());
  CHECK(ds.moe_layers() == 58);
  CHECK(ds.dense_layers() == 3);
  CHECK(ds.mtp_layers == 1);
}

TEST_CASE("an unknown model id names the known ones and suggests the nearest", "[models][catalog][errors]") {
  try {
    shipped_model_catalog().get("llama3-70", "run.json", "model");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.file() == "run.json");
    CHECK(e.field() == "model");
    CHECK_THAT(e.why(), Catch::Contains("unknown model \"llama3-70\""));
    CHECK_THAT(e.why(), Catch::Contains("known: bloom-176b, deepseek-v3"));
    CHECK_THAT(e.why(), Catch::Contains("did you mean \"llama3-70b\"?"));
  }
}

TEST_CASE("a valid inline model object reads with defaults", "[models][read_model]") {
  const auto json = parse_json_text(kValid, "scenario.json");
  JsonReader r(json, "scenario.json", "model");
  const ModelSpec m = read_model(r);
  CHECK(m.name == "tiny");
  CHECK(m.head_dim == 32);
  CHECK(m.norm == NormKind::rmsnorm);
  CHECK(m.tied_embeddings);
  CHECK_FALSE(m.moe.has_value());
}

TEST_CASE("bad model fields are rejected with their field path", "[models][read_model][errors]") {
  struct Case {
    const char* what;
    std::string text;
    std::string field;
  };
  auto with = [](const std::string& replace, const std::string& by) {
    std::string s = kValid;
    s.replace(s.find(replace), replace.size(), by);
    return s;
  };
  const std::vector<Case> cases = {
      {"zero layers", with("\"layers\": 4", "\"layers\": 0"), "model.layers"},
      {"negative hidden", with("\"hidden\": 256", "\"hidden\": -256"), "model.hidden"},
      {"fractional heads", with("\"heads\": 8", "\"heads\": 8.5"), "model.heads"},
      {"string vocab", with("\"vocab\": 1000", "\"vocab\": \"1000\""), "model.vocab"},
      {"absurd seq_len", with("\"seq_len\": 512", "\"seq_len\": 1e12"), "model.seq_len"},
      {"heads not divisible by kv_heads", with("\"kv_heads\": 2", "\"kv_heads\": 3"), "model.kv_heads"},
      {"hidden not heads*head_dim", with("\"hidden\": 256", "\"hidden\": 260"), "model.hidden"},
      {"unknown activation", with("\"swiglu\"", "\"relu2\""), "model.ffn_act"},
      {"unknown key", with("\"tied_embeddings\"", "\"tied_embedding\""), "model.tied_embedding"},
      {"missing ffn_hidden", with("\"ffn_hidden\": 1024,", ""), "model.ffn_hidden"},
      {"moe top_k above experts",
       with("\"seq_len\": 512", "\"seq_len\": 512, \"moe\": {\"experts\": 4, \"top_k\": 5}"),
       "model.moe.top_k"},
      {"moe unknown key",
       with("\"seq_len\": 512", "\"seq_len\": 512, \"moe\": {\"experts\": 4, \"top_k\": 1, \"topk\": 2}"),
       "model.moe.topk"},
      {"moe all layers dense",
       with("\"seq_len\": 512",
            "\"seq_len\": 512, \"moe\": {\"experts\": 4, \"top_k\": 1, \"first_dense_layers\": 4}"),
       "model.moe.first_dense_layers"},
      {"mla without kv_lora_rank",
       with("\"seq_len\": 512",
            "\"seq_len\": 512, \"mla\": {\"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, \"v_head_dim\": "
            "16}"),
       "model.mla.kv_lora_rank"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    CHECK(error_field_of(c.text) == c.field);
  }
}

TEST_CASE("the unknown-key error suggests the nearest known key", "[models][read_model][errors]") {
  std::string text = kValid;
  text.replace(text.find("\"kv_heads\""), 10, "\"kv_head\"");
  try {
    const auto json = parse_json_text(text, "scenario.json");
    JsonReader r(json, "scenario.json", "model");
    read_model(r);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.field() == "model.kv_head");
    CHECK_THAT(e.why(), Catch::Contains("did you mean \"kv_heads\""));
  }
}

TEST_CASE("catalog loading refuses malformed and mismatched files", "[models][catalog][errors]") {
  const auto dir = std::filesystem::temp_directory_path() / "simrun_test_model_catalog";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };

  SECTION("an empty directory") { CHECK_THROWS_AS(ModelCatalog::load(dir), InputError); }
  SECTION("a missing directory") { CHECK_THROWS_AS(ModelCatalog::load(dir / "nope"), InputError); }
  SECTION("malformed JSON names line and column") {
    write("tiny.json", "{\"name\": \"tiny\",\n  \"layers\": 4,,\n}");
    try {
      ModelCatalog::load(dir);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("line 2"));
    }
  }
  SECTION("name differs from the file stem") {
    write("other.json", kValid);
    try {
      ModelCatalog::load(dir);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.field() == "name");
    }
  }
  SECTION("a valid file loads") {
    write("tiny.json", kValid);
    write("notes.txt", "not a model");
    const ModelCatalog c = ModelCatalog::load(dir);
    CHECK(c.ids() == std::vector<std::string>{"tiny"});
  }
  std::filesystem::remove_all(dir);
}
