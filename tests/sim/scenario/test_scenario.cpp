// Scenario parsing: defaults, derived fields, overrides, and each validation rule.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

using namespace simrun;

namespace {

const Catalogs& catalogs() {
  static const Catalogs c = load_catalogs(SIMRUN_DATA_DIR);
  return c;
}

Scenario parse(const std::string& text, const ScenarioOverrides& o = {}) {
  nlohmann::json doc = nlohmann::json::parse(text);
  o.apply_to(doc);
  return parse_scenario(doc, "t.json", catalogs(), ".");
}

std::string error_of(const std::string& text, const ScenarioOverrides& o = {}) {
  try {
    parse(text, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("only model and cluster.gpu are required, the rest defaults", "[sim][scenario]") {
  const Scenario s = parse(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm"}})");
  CHECK(s.model.name == "llama3-8b");
  CHECK(s.cluster.num_gpus == 8);
  CHECK(s.cluster.fabric.id == "ib-ndr");
  CHECK(s.layout.dp == 8);
  CHECK(s.layout.world_size() == 8);
  CHECK(s.layout.recompute == Recompute::none);
  CHECK(s.layout.precision == Precision::bf16);
  CHECK(s.run.tokens == 0);
  CHECK_FALSE(s.run.checkpoint_interval_min.has_value());
  // No layout section takes the same defaults as an empty one.
  const Scenario empty = parse(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm"}, "layout": {}})");
  CHECK(s.layout.zero_stage == empty.layout.zero_stage);
  CHECK(s.layout.zero_stage == 1);
  CHECK(s.layout.flash_attention == empty.layout.flash_attention);
  CHECK(s.layout.global_batch == empty.layout.global_batch);
}

TEST_CASE("a model object naming a catalog model is that model, its shape fields replaced",
          "[sim][scenario]") {
  const std::string tail = R"(, "cluster": {"gpu": "h100-sxm"}})";
  const Scenario base = parse(R"({"model": {"name": "llama3-8b"})" + tail);
  CHECK(base.model.name == "llama3-8b");
  CHECK(base.model.published_params > 0);
  CHECK(parse(R"({"model": {"name": "llama3-8b", "seq_len": 2048})" + tail).model.seq_len == 2048);
  CHECK(parse(R"({"model": {"name": "llama3-8b", "seq_len": 2048})" + tail).model.name == "llama3-8b");

  // Megatron's --num-layers / --hidden-size on a known model: the rest of its shape stays.
  const ModelSpec half = parse(R"({"model": {"name": "llama3-8b", "layers": 16})" + tail).model;
  CHECK(half.layers == 16);
  CHECK(half.hidden == base.model.hidden);
  CHECK(half.kv_heads == base.model.kv_heads);
  CHECK(half.name == "llama3-8b (variant)");
  CHECK(half.published_params == 0);  // the authors' total was of 32 layers
  const ModelSpec wide = parse(R"({"model": {"name": "llama3-8b", "hidden": 5120})" + tail).model;
  CHECK(wide.head_dim == 160);  // derived again: hidden / heads = 5120 / 32
  CHECK(wide.kv_heads == 8);    // GQA keeps its groups
  // Multi-head attention stays multi-head with new heads (Megatron without --group-query-attention).
  const ModelSpec mha = parse(R"({"model": {"name": "llama2-7b", "heads": 64})" + tail).model;
  CHECK(mha.kv_heads == 64);
  CHECK(mha.head_dim == 64);
  // Stated head widths stay (hidden / heads would be 256 here).
  CHECK(parse(R"({"model": {"name": "qwen3-30b-a3b", "hidden": 8192})" + tail).model.head_dim == 128);

  CHECK(error_of(R"({"model": {"name": "mixtral-8x7b", "moe": {"top_k": 1}})" + tail)
            .find("t.json: model.moe: a variant of the catalog model") == 0);
  CHECK(error_of(R"({"model": {"name": "llama3-8b", "heads": 33})" + tail).find("t.json: model.heads: ") ==
        0);
  CHECK(error_of(R"({"model": {"name": "llama3-8b", "kv_heads": 3})" + tail).find("t.json: model.kv_heads") ==
        0);
  CHECK(error_of(R"({"model": {"name": "lama3-8b", "seq_len": 4096})" + tail)
            .find("did you mean \"llama3-8b\"") != std::string::npos);
}

TEST_CASE("model shape overrides make a variant of a catalog or imported model", "[sim][scenario]") {
  ScenarioOverrides o;
  o.layers = 40;
  o.ffn_hidden = 16384;
  const Scenario s = parse(R"({"model": "llama3-70b", "cluster": {"gpu": "h100-sxm", "num_gpus": 64}})", o);
  CHECK(s.model.layers == 40);
  CHECK(s.model.ffn_hidden == 16384);
  CHECK(s.model.hidden == 8192);
  CHECK(o.given() == std::vector<std::string>{"model.layers", "model.ffn_hidden"});
}

TEST_CASE("run.train_iters gives the tokens as iterations x global batch x seq_len", "[sim][scenario]") {
  const std::string base =
      R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm"}, "layout": {"global_batch": 512}, "run": )";
  CHECK(parse(base + R"({"train_iters": 1000}})").run.tokens == 1000.0 * 512 * 8192);
  CHECK(error_of(base + R"({"train_iters": 1000, "tokens": 1e12}})")
            .find("t.json: run.train_iters: given "
                  "together with tokens") == 0);
  CHECK(error_of(base + R"({"train_iters": 0}})").find("run.train_iters") != std::string::npos);
  // A flag's length replaces the file's, in either form.
  ScenarioOverrides iters;
  iters.train_iters = 10;
  CHECK(parse(base + R"({"tokens": 1e12}})", iters).run.tokens == 10.0 * 512 * 8192);
  ScenarioOverrides tokens;
  tokens.tokens = 5e11;
  CHECK(parse(base + R"({"train_iters": 10}})", tokens).run.tokens == 5e11);
}

TEST_CASE("dp is derived as num_gpus / (tp*pp*cp) when omitted", "[sim][scenario]") {
  const Scenario s = parse(R"({"model": "llama3-70b", "cluster": {"gpu": "h100-sxm", "num_gpus": 1024},
                               "layout": {"tp": 8, "pp": 4, "global_batch": 1024}})");
  CHECK(s.layout.dp == 32);
  CHECK(s.layout.num_microbatches() == 32);
  CHECK(s.layout.sequence_parallel);  // Megatron practice: SP on with TP
}

TEST_CASE("the framework profile gives sequence parallelism's default, and the scenario's value wins",
          "[sim][scenario]") {
  const std::string layout = R"(, "cluster": {"gpu": "a100-80gb", "num_gpus": 64}, "layout": {"tp": 4)";
  auto sp = [&](const std::string& framework, const std::string& extra) {
    return parse(R"({"model": "llama2-13b", "framework": ")" + framework + "\"" + layout + extra + "}}")
        .layout.sequence_parallel;
  };
  CHECK(sp("megatron-core", ""));
  CHECK_FALSE(sp("megatron-deepspeed", ""));  // frameworks.md 2.4: no SP path unless asked
  CHECK_FALSE(sp("megatron-lm-2021", ""));    // SP came with Megatron-LM v3.0
  CHECK(sp("megatron-deepspeed", R"(, "sequence_parallel": true)"));
}

TEST_CASE("overrides replace file fields, and a new GPU count re-derives dp", "[sim][scenario]") {
  ScenarioOverrides o;
  o.gpus = 2048;
  o.seq_len = 4096;
  o.recompute = "full";
  const Scenario s = parse(R"({"model": "llama3-70b", "cluster": {"gpu": "h100-sxm", "num_gpus": 1024},
                               "layout": {"tp": 8, "pp": 4, "dp": 32, "global_batch": 1024}})",
                           o);
  CHECK(s.cluster.num_gpus == 2048);
  CHECK(s.layout.dp == 64);
  CHECK(s.model.seq_len == 4096);
  CHECK(s.layout.recompute == Recompute::full);
}

TEST_CASE("a new precision drops the recipe and fp8 parameters that no longer run, and keeps the rest",
          "[sim][scenario]") {
  using nlohmann::json;
  auto retargeted = [](json layout, const std::string& precision) {
    set_layout_precision(layout, precision);
    return layout;
  };
  const json fp8 = {{"precision", "fp8"}, {"fp8_recipe", "mxfp8"}, {"fp8_param_gather", true}};
  CHECK(retargeted(fp8, "bf16") == json{{"precision", "bf16"}});
  CHECK(retargeted(fp8, "fp8") == fp8);                         // the file's recipe still runs at fp8
  CHECK(retargeted(fp8, "fp4") == json{{"precision", "fp4"}});  // mxfp8 is no fp4 recipe
  CHECK(retargeted({{"precision", "fp4"}, {"fp8_recipe", "nvfp4"}}, "fp8") == json{{"precision", "fp8"}});
  // Names it does not know are left for the parser to report.
  CHECK(retargeted(fp8, "fp9").at("fp8_recipe") == "mxfp8");
  CHECK(retargeted({{"fp8_recipe", "current"}}, "bf16").at("fp8_recipe") == "current");

  // The same rule on a parsed layout (validate's cuda rewrite).
  Layout l;
  l.precision = Precision::fp8;
  l.fp8_recipe = LowPrecisionRecipe::blockwise;
  l.fp8_param_gather = true;
  Layout same = l;
  same.set_precision(Precision::fp8);
  CHECK(same == l);
  l.set_precision(Precision::bf16);
  CHECK_FALSE(l.fp8_recipe);
  CHECK_FALSE(l.fp8_param_gather);

  // The command line: a precision given keeps the file's recipe where it still runs, and one
  // given beside it is checked, not dropped.
  const std::string file = R"({"model": "llama3-8b", "cluster": {"gpu": "b200", "num_gpus": 8},
                               "layout": {"precision": "fp8", "fp8_recipe": "mxfp8"}})";
  ScenarioOverrides o;
  o.precision = "fp8";
  CHECK(parse(file, o).layout.recipe() == LowPrecisionRecipe::mxfp8);
  o.precision = "bf16";
  CHECK_FALSE(parse(file, o).layout.fp8_recipe);
  o.fp8_recipe = "delayed";
  CHECK_THAT(error_of(file, o), Catch::Contains("layout.fp8_recipe") && Catch::Contains("runs none"));
}

TEST_CASE("inline models are validated like catalog ones", "[sim][scenario]") {
  const Scenario s =
      parse(R"({"model": {"name": "tiny", "layers": 4, "hidden": 512, "heads": 8, "kv_heads": 8,
                                         "ffn_hidden": 2048, "ffn_act": "gelu", "vocab": 32000, "seq_len": 1024},
                               "cluster": {"gpu": "a100-80gb", "num_gpus": 8}})");
  CHECK(s.model.layers == 4);
  CHECK(s.model.ffn_act == FfnActivation::gelu);
}

TEST_CASE("an expert capacity factor: MoE only, at most every token, a flag or a field",
          "[sim][scenario][moe]") {
  const std::string moe = R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16}, )";
  const Scenario dropless = parse(moe + R"("layout": {"tp": 2, "dp": 8, "ep": 8}})");
  CHECK(dropless.layout.moe_capacity_factor == 0);
  CHECK(dropless.layout.moe_load() == 1);
  const Scenario padded =
      parse(moe + R"("layout": {"tp": 2, "dp": 8, "ep": 8, "moe_capacity_factor": 1.25}})");
  CHECK(padded.layout.moe_load() == 1.25);
  ScenarioOverrides flag;
  flag.moe_capacity_factor = 2.0;
  CHECK(parse(moe + R"("layout": {"tp": 2, "dp": 8, "ep": 8}})", flag).layout.moe_load() == 2.0);
  // Mixtral routes each token to 2 of 8 experts: capacity beyond 4x the share exceeds every token.
  CHECK(parse(moe + R"("layout": {"moe_capacity_factor": 4}})").layout.moe_load() == 4.0);
  CHECK(error_of(moe + R"("layout": {"moe_capacity_factor": 4.5}})") ==
        "t.json: layout.moe_capacity_factor: 4.5 gives each expert more than every token (at most "
        "experts/top_k = 4)");
  CHECK(error_of(moe + R"("layout": {"moe_capacity_factor": 0}})")
            .find("layout.moe_capacity_factor: 0 is out of range") != std::string::npos);
  // Below the balanced share the padding becomes dropping: refused, not credited as model FLOPs.
  CHECK(error_of(moe + R"("layout": {"moe_capacity_factor": 0.5}})") ==
        "t.json: layout.moe_capacity_factor: 0.5 is out of range (a number in [1, 1024])");
  CHECK(
      error_of(
          R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm"}, "layout": {"moe_capacity_factor": 1.5}})") ==
      "t.json: layout.moe_capacity_factor: a capacity factor needs a mixture-of-experts model (this one is "
      "dense)");
}

TEST_CASE("context parallelism: the ring by default, Ulysses where each rank's heads divide by cp",
          "[sim][scenario]") {
  // Llama-3 8B: 32 query and 8 key/value heads.
  const std::string base =
      R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16}, "layout": )";
  CHECK(parse(base + R"({"tp": 2, "cp": 8}})").layout.cp_comm_type == CpCommType::p2p);
  CHECK(parse(base + R"({"tp": 2, "cp": 4, "cp_comm_type": "a2a"}})").layout.cp_comm_type == CpCommType::a2a);
  ScenarioOverrides flag;
  flag.cp_comm_type = "a2a";
  CHECK(parse(base + R"({"tp": 1, "cp": 8}})", flag).layout.cp_comm_type == CpCommType::a2a);
  CHECK(
      error_of(base + R"({"tp": 2, "cp": 8, "cp_comm_type": "a2a"}})") ==
      "t.json: layout.cp_comm_type: a2a splits each rank's attention heads over cp 8: 16 query and 4 "
      "key/value heads per tensor-parallel rank do not divide by it (use p2p, or a size that divides them)");
  CHECK(parse(base + R"({"tp": 2, "cp": 8, "cp_comm_type": "all_gather"}})").layout.cp_comm_type ==
        CpCommType::all_gather);  // no heads rule: K,V gathered whole
  CHECK(error_of(base + R"({"cp": 2, "cp_comm_type": "ulysses"}})")
            .find("p2p|all_gather|a2a|a2a_p2p|a2a+p2p") != std::string::npos);
}

TEST_CASE("a2a+p2p takes Megatron's two hierarchical CP sizes, all-to-alls over the first",
          "[sim][scenario]") {
  // Llama-3 8B: 32 query and 8 key/value heads; TP 2 leaves 16 and 4 a rank.
  const std::string base =
      R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16}, "layout": )";
  const Layout l = parse(base + R"({"tp": 2, "cp": 8, "cp_comm_type": "a2a+p2p",
      "hierarchical_context_parallel_sizes": [2, 4]}})")
                       .layout;
  CHECK(l.cp_comm_type == CpCommType::a2a_p2p);
  CHECK(l.cp_a2a() == 2);
  CHECK(l.cp_ring() == 4);
  // The single-level types: the all-to-all spans all of CP under a2a, none of it otherwise.
  CHECK(parse(base + R"({"tp": 2, "cp": 4, "cp_comm_type": "a2a"}})").layout.cp_a2a() == 4);
  CHECK(parse(base + R"({"tp": 2, "cp": 4}})").layout.cp_ring() == 4);
  ScenarioOverrides flag;
  flag.cp_comm_type = "a2a+p2p";
  flag.hierarchical_cp_sizes = std::vector<int64_t>{4, 2};
  CHECK(parse(base + R"({"tp": 2, "cp": 8}})", flag).layout.cp_a2a() == 4);
  const std::string field = "t.json: layout.hierarchical_context_parallel_sizes: ";
  CHECK(
      error_of(base + R"({"tp": 2, "cp": 8, "cp_comm_type": "a2a+p2p"}})").find(field + "a2a+p2p needs it") ==
      0);
  for (const std::string sizes :
       {"[2, 2]", "[8]", "[2, 4, 1]", "[0, 8]", "\"2,4\"", "[2.5, 4]", "[2, 4611686018427387904]"})
    CHECK(
        error_of(base +
                 R"({"tp": 2, "cp": 8, "cp_comm_type": "a2a+p2p", "hierarchical_context_parallel_sizes": )" +
                 sizes + "}}")
            .find(field + "must be two positive integers [a2a, p2p] whose product is cp 8") == 0);
  CHECK(error_of(base + R"({"tp": 2, "cp": 8, "hierarchical_context_parallel_sizes": [2, 4]}})")
            .find(field + "is read with cp_comm_type \"a2a+p2p\" only") == 0);
  // The all-to-all level splits each rank's heads: 4 KV heads do not divide by 8.
  CHECK(error_of(base + R"({"tp": 2, "cp": 8, "cp_comm_type": "a2a+p2p",
      "hierarchical_context_parallel_sizes": [8, 1]}})")
            .find(field + "a2a+p2p splits each rank's attention heads over the a2a level 8") == 0);
}

TEST_CASE("each layout rule gives its own field and reason", "[sim][scenario][errors]") {
  const std::string base =
      R"({"model": "llama3-70b", "cluster": {"gpu": "h100-sxm", "num_gpus": 64}, "layout": )";
  CHECK(error_of(base + R"({"tp": 8, "pp": 4, "dp": 4}})").find("t.json: layout: tp*pp*dp*cp") == 0);
  CHECK(error_of(base + R"({"tp": 16, "pp": 2, "dp": 2}})").find("layout.tp") != std::string::npos);
  CHECK(error_of(base + R"({"tp": 1, "pp": 64, "dp": 1}})").find("layout.pp: pp 64 does not divide") !=
        std::string::npos);
  CHECK(error_of(base + R"({"tp": 8, "pp": 4, "virtual_stages": 3}})").find("layout.virtual_stages") !=
        std::string::npos);
  CHECK(error_of(base + R"({"tp": 8, "global_batch": 12}})").find("layout.global_batch") !=
        std::string::npos);
  CHECK(error_of(base + R"({"tp": 8, "ep": 2}})").find("needs a mixture-of-experts") != std::string::npos);
  CHECK(error_of(base + R"({"tp": 8, "expert_tp": 8}})").find("expert_tp > 1 needs a mixture-of-experts") !=
        std::string::npos);
  const std::string moe =
      R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16}, "layout": )";
  CHECK(error_of(moe + R"({"tp": 4, "dp": 4, "ep": 8}})").find("must divide tp*cp*dp") != std::string::npos);
  CHECK(error_of(moe + R"({"tp": 4, "dp": 4, "ep": 2, "expert_tp": 2}})").find("must be 1 or tp") !=
        std::string::npos);
  CHECK(error_of(moe + R"({"tp": 4, "dp": 4, "ep": 3}})").find("does not divide the 8 experts") !=
        std::string::npos);
  CHECK(error_of(base + R"({"tp": 8, "recompute": "some"}})").find("none|selective|full") !=
        std::string::npos);
  CHECK(error_of(R"({"model": "llama3-8b", "cluster": {"gpu": "a100-80gb"}, "layout": {"precision": "fp8"}})")
            .find("fp8 is not supported by a100-80gb") != std::string::npos);
  CHECK(error_of(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 12}})")
            .find("cluster.num_gpus") != std::string::npos);
}

TEST_CASE("run section: auto checkpoint interval, numbers or refusal", "[sim][scenario]") {
  const std::string base = R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm"}, "run": )";
  CHECK_FALSE(
      parse(base + R"({"checkpoint_interval_min": "auto"}})").run.checkpoint_interval_min.has_value());
  CHECK(*parse(base + R"({"checkpoint_interval_min": 30}})").run.checkpoint_interval_min == 30);
  CHECK(error_of(base + R"({"checkpoint_interval_min": "often"}})").find("run.checkpoint_interval_min") !=
        std::string::npos);
  CHECK(error_of(base + R"({"tokens": -5}})").find("run.tokens") != std::string::npos);
}

TEST_CASE("a {name, seq_len} model object with a non-string name is an input error",
          "[sim][scenario][errors]") {
  const std::string tail = R"(, "cluster": {"gpu": "h100-sxm"}})";
  for (const char* name : {"5", "null", "[\"llama3-8b\"]"}) {
    CAPTURE(name);
    const std::string e =
        error_of(std::string(R"({"model": {"name": )") + name + R"(, "seq_len": 4096})" + tail);
    CHECK(e.find("t.json: model.") == 0);
  }
}

TEST_CASE("a step far beyond any real one (the event clock would overflow) is refused up front",
          "[sim][scenario][errors]") {
  // Every model field at its maximum: ~1e10 s per step at peak, past the int64-ns clock (~9.2e9 s).
  const std::string huge = R"({"model": {"name": "huge", "layers": 10000, "hidden": 1000000, "heads": 100000,
      "ffn_hidden": 10000000, "vocab": 100000000, "seq_len": 16777216}, "cluster": {"gpu": "h100-sxm"}})";
  CHECK(error_of(huge).find("t.json: model: one step is") == 0);
  // 405B on one GPU with a 2K-sequence batch is slow but simulable: not refused.
  CHECK(error_of(R"({"model": "llama3-405b", "cluster": {"gpu": "h100-sxm", "num_gpus": 1},
                     "layout": {"global_batch": 2048}})") == "");
}

TEST_CASE("tp*pp*dp*cp is compared without int64 overflow", "[sim][scenario][errors]") {
  // 2^20 each: the product is 2^80, which wraps an int64_t (UB) before the comparison.
  const std::string e = error_of(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm"},
      "layout": {"tp": 1048576, "pp": 1048576, "dp": 1048576, "cp": 1048576}})");
  CHECK(e.find("t.json: layout: tp*pp*dp*cp = 1048576*1048576*1048576*1048576 = 1208925819614629174706176") ==
        0);
}

TEST_CASE("description is free text: a string, or an input error", "[sim][scenario][errors]") {
  const std::string head = R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm"}, "description": )";
  CHECK(error_of(head + R"("Llama 3 8B on one node"})").empty());
  for (const char* value : {"5", "[\"a\"]", "{}"}) {  // null counts as absent, as everywhere
    CAPTURE(value);
    CHECK(error_of(head + value + "}").find("t.json: description") == 0);
  }
}

TEST_CASE("a cluster whose graph cannot be built is refused at the field that breaks the rule",
          "[sim][scenario][errors]") {
  auto error_with = [](const std::string& cluster) {
    return error_of(R"({"model": "llama3-8b", "cluster": )" + cluster + "}");
  };
  CHECK_THAT(error_with(R"({"gpu": "h100-sxm", "num_gpus": 12})"),
             Catch::Contains("t.json: cluster.num_gpus: 12 GPUs do not fill whole nodes of 8"));
  CHECK_THAT(
      error_with(R"({"gpu": "h100-sxm", "num_gpus": 16, "fabric": {"kind": "ib-ndr", "nics_per_node": 3}})"),
      Catch::Contains(
          "t.json: cluster.fabric.nics_per_node: 3 NICs cannot be shared evenly by 8 GPUs per node"));
  CHECK_THAT(error_with(R"({"gpu": "h100-sxm", "num_gpus": 16, "gpus_per_node": 16})"),
             Catch::Contains(
                 "t.json: cluster.gpus_per_node: 16 GPUs per node exceed the h100-sxm NVLink domain of 8"));
}

TEST_CASE("an inline GPU or fabric is read by the catalog's reader into the same spec",
          "[sim][scenario][catalog]") {
  const std::filesystem::path hw = std::filesystem::path(SIMRUN_DATA_DIR) / "topologies";
  nlohmann::json gpu = load_json_file(hw / "gpus" / "mi300x.json");
  nlohmann::json fabric = load_json_file(hw / "fabrics" / "roce-400g.json");
  gpu["id"] = "mi300x-copy";
  const nlohmann::json doc = {
      {"model", "llama3-8b"},
      {"cluster", {{"gpu", gpu}, {"fabric", {{"kind", fabric}, {"nics_per_node", 4}}}}}};
  const Scenario s = parse_scenario(doc, "t.json", catalogs(), ".");
  const GpuSpec& shipped = catalogs().hardware.gpu("mi300x", "t", "gpu");
  CHECK(s.cluster.gpu.id == "mi300x-copy");
  CHECK(s.cluster.gpu.name == shipped.name);
  CHECK(s.cluster.gpu.hbm_usable_bytes == shipped.hbm_usable_bytes);
  CHECK(s.cluster.gpu.bf16_flops_per_s == shipped.bf16_flops_per_s);
  CHECK(s.cluster.gpu.scale_up_kind == ScaleUpKind::mesh);
  CHECK(s.cluster.gpu.compute_defaults.gemm_max == shipped.compute_defaults.gemm_max);
  CHECK(s.cluster.fabric.id == "custom");  // no "id": the default
  CHECK(s.cluster.fabric.port_bytes_per_s ==
        catalogs().hardware.fabric("roce-400g", "t", "f").port_bytes_per_s);
  CHECK(s.cluster.nics_per_node == 4);

  // The same rules as a catalog file's, under the scenario's field path.
  gpu["scale_up"]["nvls"] = true;  // NVLink SHARP on a mesh
  const nlohmann::json bad = {{"model", "llama3-8b"}, {"cluster", {{"gpu", gpu}}}};
  CHECK_THROWS_WITH(
      parse_scenario(bad, "t.json", catalogs(), "."),
      Catch::Contains("t.json: cluster.gpu.scale_up.nvls: NVLink SHARP needs kind \"nvswitch\""));
  gpu["scale_up"].erase("nvls");
  gpu["id"] = "mi300x";
  const nlohmann::json taken = {{"model", "llama3-8b"}, {"cluster", {{"gpu", gpu}}}};
  CHECK_THROWS_WITH(parse_scenario(taken, "t.json", catalogs(), "."),
                    Catch::Contains("cluster.gpu.id: \"mi300x\" is a catalog GPU's id"));
}

TEST_CASE("a GPU whose NVLink or mesh domain is smaller than a board makes nodes of its domain by default",
          "[sim][scenario][catalog]") {
  const std::filesystem::path hw = std::filesystem::path(SIMRUN_DATA_DIR) / "topologies";
  auto nodes_of = [&](const char* file, const char* id, int64_t domain) {
    nlohmann::json gpu = load_json_file(hw / "gpus" / file);
    gpu["id"] = id;
    gpu["scale_up"]["domain"] = domain;
    const nlohmann::json doc = {{"model", "llama3-8b"}, {"cluster", {{"gpu", gpu}, {"num_gpus", 16}}}};
    return parse_scenario(doc, "t.json", catalogs(), ".").cluster.gpus_per_node;
  };
  CHECK(nodes_of("h100-sxm.json", "h100-board-of-4", 4) == 4);
  CHECK(nodes_of("mi300x.json", "mi300x-mesh-of-4", 4) == 4);
  CHECK(nodes_of("h100-sxm.json", "h100-copy", 8) == 8);
  CHECK(nodes_of("gb200.json", "gb200-copy", 72) == 4);         // an NVL72 rack's compute trays
  CHECK(nodes_of("h100-pcie.json", "h100-pcie-copy", 2) == 8);  // bridged pairs in a node of 8
}

TEST_CASE("user catalog folders add entries after the shipped ones and never replace one",
          "[sim][scenario][catalog]") {
  namespace fs = std::filesystem;
  const fs::path user = fs::temp_directory_path() / ("simrun-user-catalog-" + std::to_string(::getpid()));
  fs::remove_all(user);
  fs::create_directories(user / "fabrics");
  const std::string fabric = R"({"name": "test fabric", "port_gbit_per_s": 100, "latency_us": 5,
                                 "switch_latency_ns": 500, "switch_radix": 32, "source": "test"})";
  std::ofstream(user / "fabrics" / "test-100g.json") << fabric;
  const Catalogs c = load_catalogs(SIMRUN_DATA_DIR, {user});
  CHECK(c.hardware.fabric("test-100g", "t", "f").port_bytes_per_s == 100e9 / 8);
  CHECK(c.hardware.gpu_ids() == catalogs().hardware.gpu_ids());
  CHECK(c.models.ids() == catalogs().models.ids());

  // The same folder twice repeats every id.
  CHECK_THROWS_WITH(load_catalogs(SIMRUN_DATA_DIR, {user, user}),
                    Catch::Contains("test-100g.json: the fabric id \"test-100g\" is already in the catalog"));
  std::ofstream(user / "fabrics" / "ib-ndr.json") << fabric;
  CHECK_THROWS_WITH(load_catalogs(SIMRUN_DATA_DIR, {user}),
                    Catch::Contains("ib-ndr.json: the fabric id \"ib-ndr\" is already in the catalog"));
  fs::remove_all(user);
}
