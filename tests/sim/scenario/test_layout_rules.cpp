// Tests of the layout rules (layout_rules.hpp): one home for what makes a layout impossible and
// for the caveats both fidelities state.
#include <algorithm>
#include <catch2/catch.hpp>

#include "simrun/common/error.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using simrun::test::parse_scenario_text;

namespace {

bool mentions(const std::vector<std::string>& warnings, const std::string& text) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("a pipeline that never fills gets one warning, word for word the same from both fidelities",
          "[sim][layout_rules]") {
  // 4 micro-batches on 8 stages: (pp-1)/(m+pp-1) = 7/11 of the step idles (Narayanan et al. 2021).
  const Scenario sc =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 1, "pp": 8, "global_batch": 4}})");
  const std::vector<LayoutDiagnostic> caveats = layout_warnings(sc, default_schedule(sc.layout));
  const auto bubble = std::find_if(caveats.begin(), caveats.end(), [](const LayoutDiagnostic& d) {
    return d.code == "pipeline_never_fills";
  });
  REQUIRE(bubble != caveats.end());
  CHECK(bubble->field == "layout.global_batch");
  CHECK(bubble->message.find("bubble (pp-1)/(m+pp-1) = 64% of the step") != std::string::npos);

  const Report estimated = estimate(sc);
  const Report simulated = simulate(sc).report;
  CHECK(std::count(estimated.warnings.begin(), estimated.warnings.end(), bubble->message) == 1);
  CHECK(std::count(simulated.warnings.begin(), simulated.warnings.end(), bubble->message) == 1);
  CHECK_FALSE(mentions(estimated.warnings, "175%"));
}

TEST_CASE("tp 8 stays inside an NVL72 domain, and leaves a 4-GPU H100 node", "[sim][layout_rules]") {
  const Scenario nvl72 = parse_scenario_text(R"({"model": "llama3-70b",
      "cluster": {"gpu": "gb200", "num_gpus": 72, "gpus_per_node": 4},
      "layout": {"tp": 8, "pp": 1, "dp": 9, "global_batch": 72}})");
  CHECK_FALSE(mentions(messages(layout_warnings(nvl72, default_schedule(nvl72.layout))), "scale-up domain"));
  CHECK_FALSE(mentions(estimate(nvl72).warnings, "NVLink domain"));
  CHECK_FALSE(mentions(estimate(nvl72).warnings, "scale-up domain"));
  CHECK_FALSE(mentions(build_workload(nvl72).warnings, "scale-up domain"));

  const Scenario small_nodes = parse_scenario_text(R"({"model": "llama3-8b",
      "cluster": {"gpu": "h100-sxm", "num_gpus": 16, "gpus_per_node": 4},
      "layout": {"tp": 8, "pp": 1, "dp": 2, "global_batch": 16}})");
  const std::vector<LayoutDiagnostic> caveats =
      layout_warnings(small_nodes, default_schedule(small_nodes.layout));
  REQUIRE(caveats.size() >= 1);
  CHECK(caveats[0].code == "tp_leaves_scale_up");
  CHECK(caveats[0].message.find("tp=8 spans more than one scale-up domain (4 GPUs") != std::string::npos);
  CHECK(build_workload(small_nodes).warnings == estimate(small_nodes).warnings);
}

TEST_CASE(
    "tp beyond an H100 PCIe card's NVLink bridge rings over the node's PCIe, in both fidelities and the "
    "words",
    "[sim][layout_rules]") {
  // The estimate sent such a group through the NICs of a node that has none (2.6 s against the
  // event's 4.1 s); both now ring over each card's x16 link at NCCL's PCIe rate, as the graph routes it.
  for (int64_t tp : {4, 8}) {
    INFO("tp " << tp);
    const Scenario sc = parse_scenario_text(
        R"({"model": "llama3-8b", "cluster": {"gpu": "h100-pcie", "num_gpus": 16},
        "layout": {"tp": )" +
        std::to_string(tp) + R"(, "pp": 1, "dp": )" + std::to_string(16 / tp) + R"(, "global_batch": 16}})");
    const double event = simulate(sc).report.step_time_s, analytic = estimate(sc).step_time_s;
    CHECK(analytic == Approx(event).epsilon(0.05));
    CHECK(mentions(estimate(sc).warnings, "tensor-parallel collectives cross the node's PCIe"));
  }
}

TEST_CASE("a cluster that ends in a partial NVL72 rack is stated, whole racks are not",
          "[sim][layout_rules]") {
  // 512 GB300: 7 racks of 72 and 8 GPUs. DP groups of TP 8 hold 9 members a full rack, 1 there.
  auto caveat = [](int64_t gpus) {
    const Scenario sc = parse_scenario_text(
        R"({"model": "llama3-8b", "cluster": {"gpu": "gb300", "num_gpus": )" + std::to_string(gpus) +
        R"(}, "layout": {"tp": 8, "pp": 1, "global_batch": )" + std::to_string(gpus / 8) + "}}");
    const std::vector<LayoutDiagnostic> all = layout_warnings(sc, default_schedule(sc.layout));
    const auto it = std::find_if(all.begin(), all.end(), [](const LayoutDiagnostic& d) {
      return d.code == "partial_scale_up_domain";
    });
    return it == all.end() ? std::string() : it->field + ": " + it->message;
  };
  const std::string partial = caveat(512);
  CHECK(partial.rfind("cluster.num_gpus: 512 GPUs fill 7 scale-up domains of 72 and 8 GPUs of another", 0) ==
        0);
  CHECK(partial.find("1 member(s) there against 9") != std::string::npos);
  CHECK(caveat(576).empty());  // 8 whole racks
  CHECK(caveat(64).empty());   // one domain
}

TEST_CASE("a layout error names the field and a stable code, the same for the parser and the builder",
          "[sim][layout_rules]") {
  // Megatron-Core's TransformerConfig: num_query_groups % tp == 0. Llama-3 8B has 8 KV heads.
  Scenario sc = parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
      "layout": {"tp": 8, "pp": 1, "dp": 2, "global_batch": 16}})");
  CHECK_FALSE(layout_error(sc.model, sc.cluster, sc.layout).has_value());
  sc.model.kv_heads = 4;  // a hand-built model: tp 8 no longer divides its key/value heads
  const auto error = layout_error(sc.model, sc.cluster, sc.layout);
  REQUIRE(error.has_value());
  CHECK(error->field == "layout.tp");
  CHECK(error->code == "tp_divides_kv_heads");
  CHECK_THROWS_WITH(build_workload(sc), Catch::Contains("layout.tp") && Catch::Contains(error->message));
  CHECK_THROWS_WITH(parse_scenario_text(R"({"model": {"name": "m", "layers": 2, "hidden": 1024, "heads": 16,
      "kv_heads": 4, "ffn_hidden": 4096, "vocab": 32000, "seq_len": 2048},
      "cluster": {"gpu": "h100-sxm", "num_gpus": 8}, "layout": {"tp": 8}})"),
                    Catch::Contains("layout.tp") && Catch::Contains(error->message.substr(0, 20)));
}

TEST_CASE("tp divides a dense FFN's width, as expert_tp an expert's", "[sim][layout_rules]") {
  // Megatron's ColumnParallelLinear splits ffn_hidden over tp; 14337 = 14336 + 1 splits over none.
  Scenario sc = parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 16},
      "layout": {"tp": 8, "pp": 1, "dp": 2, "global_batch": 16}})");
  sc.model.ffn_hidden = 14337;
  const auto error = layout_error(sc.model, sc.cluster, sc.layout);
  REQUIRE(error.has_value());
  CHECK(error->code == "tp_divides_ffn");
  CHECK(error->message == "tp 8 does not divide the model's ffn_hidden 14337");
  sc.layout.tp = 1;
  sc.layout.dp = 16;
  CHECK_FALSE(layout_error(sc.model, sc.cluster, sc.layout).has_value());
}

TEST_CASE("an MoE model with tp > 1 needs sequence parallelism in both fidelities", "[sim][layout_rules]") {
  CHECK_THROWS_WITH(
      parse_scenario_text(R"({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 2, "ep": 4, "sequence_parallel": false}})"),
      Catch::Contains("layout.sequence_parallel") && Catch::Contains("Megatron-Core"));
}

TEST_CASE("the pipeline split's refusals are split_layers' own, for the parser and the builder alike",
          "[sim][layout_rules]") {
  Scenario sc = parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 1, "pp": 8, "global_batch": 8}})");
  sc.layout.pp = 5;  // 32 layers over 5 stages: no even split
  sc.layout.dp = 1;
  sc.cluster.num_gpus = 5;
  const auto error = layout_error(sc.model, sc.cluster, sc.layout);
  REQUIRE(error.has_value());
  const LayerSplit split = split_layers(32, 5, 1, PipelineSplit::even);
  REQUIRE(split.error.has_value());
  CHECK(error->code == "pp_divides_layers");
  CHECK(error->code == split.error->code);
  CHECK(error->message == split.error->message);
  CHECK_THROWS_WITH(build_workload(sc), Catch::Contains(error->message));
  sc.layout.pipeline_split = PipelineSplit::balanced;  // {6, 7, 7, 6, 6}: extras on the middle stages
  CHECK_FALSE(layout_error(sc.model, sc.cluster, sc.layout).has_value());
  CHECK(stage_layers(sc.model, sc.layout, 2).size() == 7);
}

TEST_CASE("precision recipes: each matches its precision and needs tensor cores that run it",
          "[sim][layout_rules][precision]") {
  auto error_of = [](const std::string& gpu, const std::string& layout) -> std::string {
    try {
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": ")" + gpu +
                          R"(", "num_gpus": 8}, "layout": {"tp": 1, )" + layout + "}}");
    } catch (const InputError& e) {
      return e.field() + ": " + e.what();
    }
    return "";
  };
  CHECK(error_of("b200", R"("precision": "fp8", "fp8_recipe": "mxfp8")").empty());
  CHECK(error_of("b200", R"("precision": "nvfp4")").empty());
  CHECK(error_of("h100-sxm", R"("precision": "fp8", "fp8_recipe": "blockwise", "fp8_param_gather": true)")
            .empty());
  CHECK_THAT(error_of("h100-sxm", R"("precision": "fp8", "fp8_recipe": "mxfp8")"),
             Catch::Contains("layout.fp8_recipe") && Catch::Contains("h100-sxm is Hopper"));
  CHECK_THAT(error_of("h100-sxm", R"("precision": "fp4")"),
             Catch::Contains("layout.precision") && Catch::Contains("fp4 is not supported by h100-sxm"));
  CHECK_THAT(error_of("b200", R"("precision": "bf16", "fp8_recipe": "tensorwise")"),
             Catch::Contains("layout.fp8_recipe") && Catch::Contains("precision bf16 runs none"));
  // delayed is the field's default, so only its being written tells that it would go unused.
  CHECK_THAT(error_of("b200", R"("precision": "bf16", "fp8_recipe": "delayed")"),
             Catch::Contains("layout.fp8_recipe") && Catch::Contains("leave the recipe out"));
  CHECK(error_of("b200", R"("precision": "fp8", "fp8_recipe": "delayed")").empty());
  CHECK_THAT(error_of("b200", R"("precision": "fp8", "fp8_recipe": "nvfp4")"),
             Catch::Contains("nvfp4 is an fp4 recipe"));
  CHECK_THAT(error_of("b200", R"("precision": "nvfp4", "fp8_param_gather": true)"),
             Catch::Contains("layout.fp8_param_gather"));
  CHECK_THAT(error_of("b200", R"("precision": "fp8", "fp8_recipe": "current")"),
             Catch::Contains("layout.fp8_recipe"));
}

TEST_CASE(
    "precision recipes time and size what they run: the amax pass, fp4 GEMMs, 16-bit final "
    "layers, fp8 parameters",
    "[sim][precision]") {
  auto run = [](const std::string& layout) {
    const Scenario sc = parse_scenario_text(
        R"({"model": "llama3-8b", "cluster": {"gpu": "b200", "num_gpus": 8}, "layout": {"tp": 1, "dp": 8, )"
        R"("global_batch": 64, "zero_stage": 1, )" +
        layout + "}}");
    return simulate(sc).report;
  };
  const Report bf16 = run(R"("precision": "bf16")");
  const Report delayed = run(R"("precision": "fp8")");
  const Report current = run(R"("precision": "fp8", "fp8_recipe": "tensorwise")");
  const Report mx = run(R"("precision": "fp8", "fp8_recipe": "mxfp8")");
  const Report fp4 = run(R"("precision": "nvfp4")");
  INFO("bf16 " << bf16.step_time_s << ", delayed " << delayed.step_time_s << ", tensorwise "
               << current.step_time_s << ", mxfp8 " << mx.step_time_s << ", nvfp4 " << fp4.step_time_s);
  CHECK(delayed.step_time_s < bf16.step_time_s);
  // Current scaling's amax pass, and no norm emitting fp8: more HBM traffic than delayed scaling.
  CHECK(current.step_time_s > delayed.step_time_s);
  CHECK(fp4.step_time_s < mx.step_time_s);
  // fp4 keeps its last 15% of layers at 16 bits: faster than fp8, not twice.
  CHECK(fp4.step_time_s > 0.5 * mx.step_time_s);
  // NVFP4 saves its GEMM inputs at ~0.56 bytes: fewer activation bytes than fp8.
  CHECK(fp4.memory.activations < mx.memory.activations);
  const Report fp8_params = run(R"("precision": "fp8", "fp8_param_gather": true)");
  CHECK(fp8_params.memory.weights == Approx(0.5 * delayed.memory.weights));
}

TEST_CASE("an explicit 1F1B or GPipe over virtual stages is refused, not run as one chunk under their name",
          "[sim][layout_rules]") {
  const std::string base = R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
        "layout": {"tp": 2, "pp": 4, "global_batch": 16, "virtual_stages": 2, "pipeline_schedule": ")";
  for (const char* schedule : {"1f1b", "gpipe"})
    CHECK_THROWS_WITH(
        parse_scenario_text(base + schedule + "\"}}"),
        Catch::Contains("layout.pipeline_schedule") && Catch::Contains("virtual_stages must be 1, got 2"));
  // Given over a file's virtual stages (a flag), such a schedule runs without them, as reported.
  const auto sized = [&](const std::string& layout) {
    nlohmann::json doc = nlohmann::json::parse(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm",
        "num_gpus": 8}, "layout": {"tp": 2, "pp": 4, "global_batch": 16)" +
                                               layout + "}}");
    ScenarioOverrides o;
    o.pipeline_schedule = "1f1b";
    o.apply_to(doc);
    return parse_scenario(doc, "t.json", simrun::test::catalogs(), ".");
  };
  CHECK(sized(R"(, "virtual_stages": 2)").layout.virtual_stages == 1);
  CHECK(estimate(sized(R"(, "virtual_stages": 2)")).memory.activations ==
        Approx(estimate(sized("")).memory.activations));
  // DualPipe keeps two chunks per rank of its own: the file's virtual stages go the same way, and
  // written in the file beside it they are refused with the count.
  const nlohmann::json dual = nlohmann::json::parse(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm",
      "num_gpus": 8}, "layout": {"tp": 2, "pp": 4, "global_batch": 16, "virtual_stages": 2}})");
  nlohmann::json flagged = dual;
  ScenarioOverrides o;
  o.pipeline_schedule = "dualpipe";
  o.apply_to(flagged);
  CHECK(parse_scenario(flagged, "t.json", simrun::test::catalogs(), ".").layout.virtual_stages == 1);
  nlohmann::json written = dual;
  written["layout"]["pipeline_schedule"] = "dualpipe";
  CHECK_THROWS_WITH(parse_scenario(written, "t.json", simrun::test::catalogs(), "."),
                    Catch::Contains("dualpipe holds two stages per rank of its own (one per direction): "
                                    "virtual_stages must be 1, got 2"));
}

TEST_CASE("a GPipe layout holds every micro-batch's activations, at 1F1B's step time",
          "[sim][layout_rules]") {
  auto run = [](const std::string& extra) {
    return estimate(
        parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
        "layout": {"tp": 2, "pp": 4, "global_batch": 16)" +
                            extra + "}}"));
  };
  const Report one_f_one_b = run(""), gpipe = run(R"(, "pipeline_schedule": "gpipe")");
  // 1F1B's first stage holds pp = 4 micro-batches, GPipe's all 16 (Huang et al. 2019).
  CHECK(gpipe.memory.activations > 3 * one_f_one_b.memory.activations);
  CHECK(gpipe.step_time_s == Approx(one_f_one_b.step_time_s).epsilon(0.02));
}

TEST_CASE("a sequence longer than the learned position table is counted with a table as long, and said",
          "[sim][layout_rules]") {
  const char* text = R"({"model": "gpt3-175b", "cluster": {"gpu": "h100-sxm", "num_gpus": 64},
      "layout": {"tp": 8, "pp": 8, "global_batch": 64}})";
  const Scenario native = parse_scenario_text(text);
  Scenario longer = native;
  longer.model.seq_len = 4096;  // GPT-3's table holds 2048 positions
  const double h = 12288;
  CHECK(count_params(native.model).embedding == (50257 + 2048) * h);
  CHECK(count_params(longer.model).embedding == (50257 + 4096) * h);

  auto position_caveat = [](const Scenario& sc) {
    const std::vector<LayoutDiagnostic> all = layout_warnings(sc, default_schedule(sc.layout));
    return std::find_if(all.begin(), all.end(), [](const LayoutDiagnostic& d) {
             return d.code == "positions_beyond_table";
           }) != all.end();
  };
  CHECK_FALSE(position_caveat(native));
  REQUIRE(position_caveat(longer));
  const std::string said = "seq_len 4096 is longer than gpt3-175b's learned position table (2048 positions)";
  CHECK(mentions(estimate(longer).warnings, said));
  CHECK(mentions(simulate(longer).report.warnings, said));
  // Rotary models have no table to outgrow.
  Scenario rotary =
      parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
      "layout": {"tp": 8, "global_batch": 8}})");
  rotary.model.seq_len = 65536;
  CHECK_FALSE(position_caveat(rotary));
}
