// Tests of the measured-runs mapping (validation/measured_runs.hpp): a few rows map to the scenario
// and framework behaviour the file and the sources say, and the defaults for null fields are the
// documented ones. The runs' predictions, memory verdicts included, are test_accuracy's.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "simrun/sim/scenario/scenario_parser.hpp"
#include "simrun/validation/accuracy.hpp"  // measured_runs_of
#include "simrun/validation/measured_runs.hpp"
#include "workload_test_util.hpp"
#include "yardstick_files.hpp"

using namespace simrun;

namespace {

const std::vector<MeasuredRun>& runs() {
  static const std::vector<MeasuredRun> r = load_measured_runs(test::kShippedRuns, test::catalogs());
  return r;
}

// The WorkloadOptions fields where `a` and `b` differ, by name.
std::vector<std::string> differing(const WorkloadOptions& a, const WorkloadOptions& b) {
  std::vector<std::string> out;
  auto cmp = [&](const char* name, auto x, auto y) {
    if (x != y) out.push_back(name);
  };
  cmp("kernels", a.kernels, b.kernels);
  cmp("eager_memory_factor", a.eager_memory_factor, b.eager_memory_factor);
  cmp("selective", a.selective, b.selective);
  cmp("step_overhead_s", a.step_overhead_s, b.step_overhead_s);
  cmp("tp_overlap", a.tp_overlap, b.tp_overlap);
  cmp("moe_shared_expert_overlap", a.moe_shared_expert_overlap, b.moe_shared_expert_overlap);
  cmp("grad_reduce", a.grad_reduce, b.grad_reduce);
  cmp("param_gather", a.param_gather, b.param_gather);
  cmp("bucket_params_min", a.bucket_params_min, b.bucket_params_min);
  cmp("bucket_params_per_dp", a.bucket_params_per_dp, b.bucket_params_per_dp);
  cmp("one_bucket_after_first_chunk", a.one_bucket_after_first_chunk, b.one_bucket_after_first_chunk);
  cmp("grad_reduce_bytes", a.grad_reduce_bytes, b.grad_reduce_bytes);
  cmp("fsdp_prefetch_layers", a.fsdp_prefetch_layers, b.fsdp_prefetch_layers);
  cmp("fsdp_backward_prefetch", a.fsdp_backward_prefetch, b.fsdp_backward_prefetch);
  cmp("fsdp_one_communicator", a.fsdp_one_communicator, b.fsdp_one_communicator);
  cmp("adam_bytes_per_param", a.adam_bytes_per_param, b.adam_bytes_per_param);
  cmp("grad_clip_bytes_per_param", a.grad_clip_bytes_per_param, b.grad_clip_bytes_per_param);
  return out;
}

const MeasuredRun& run(const std::string& id) {
  for (const MeasuredRun& r : runs())
    if (r.id == id) return r;
  FAIL("no measured run " << id);
  static MeasuredRun none;
  return none;
}

}  // namespace

TEST_CASE("measured runs: every row maps or says why not", "[sim][measured_runs]") {
  REQUIRE(runs().size() >= 100);
  int simulatable = 0;
  for (const MeasuredRun& r : runs()) {
    INFO(r.id);
    if (!r.has_scenario()) CHECK_FALSE(r.unsupported.empty());
    if (r.simulatable()) {
      ++simulatable;
      CHECK(r.reference_s > 0);
      CHECK(r.scenario.layout.world_size() == r.scenario.cluster.num_gpus);
    }
  }
  CHECK(simulatable >= 89);
}

TEST_CASE("measured runs: a Megatron 2021 row (Narayanan Table 1, 1T)", "[sim][measured_runs]") {
  const MeasuredRun& r = run("narayanan2021_t1_1T");
  REQUIRE(r.simulatable());
  CHECK(r.framework == "megatron-lm-2021");
  CHECK(r.scenario.cluster.gpu.id == "a100-80gb");
  CHECK(r.scenario.cluster.fabric.id == "ib-hdr");
  CHECK(r.scenario.layout.tp == 8);
  CHECK(r.scenario.layout.pp == 64);
  CHECK(r.scenario.layout.dp == 6);
  CHECK(r.scenario.layout.recompute == Recompute::full);
  CHECK(r.scenario.layout.precision == Precision::fp16);
  CHECK_FALSE(r.scenario.layout.flash_attention);  // 2021 predates FlashAttention
  CHECK(r.scenario.model.tied_embeddings);
  CHECK(r.scenario.framework.memory.dropout == Dropout::masks);
  CHECK(r.reference_kind == "derived");
  CHECK(r.reference_s == Approx(102.63));
}

TEST_CASE("measured runs: null fields take the documented Megatron defaults", "[sim][measured_runs]") {
  const MeasuredRun& r = run("megatron_readme_h100_weak_70B");
  REQUIRE(r.simulatable());
  const Layout& l = r.scenario.layout;
  CHECK(l.micro_batch == 1);
  CHECK(l.virtual_stages == 1);
  CHECK(l.zero_stage == 1);
  CHECK(l.recompute == Recompute::none);
  CHECK(l.sequence_parallel);  // tp 8 > 1
  CHECK(r.scenario.cluster.gpu.id == "h100-sxm");
  CHECK(r.scenario.cluster.fabric.id == "ib-ndr");
  CHECK(r.scenario.model.ffn_act == FfnActivation::gelu);
  CHECK(r.defaults_used.size() >= 4);
}

TEST_CASE("measured runs: framework behaviour per source", "[sim][measured_runs]") {
  const MeasuredRun& mosaic = run("mosaic_mpt13b_h100_80gb_8gpu_s2048_gbs16");
  CHECK(mosaic.framework == "composer");
  CHECK(mosaic.scenario.framework.workload.kernels == KernelStack::eager);
  CHECK(mosaic.scenario.framework.workload.grad_reduce_bytes == 2);  // FSDP mixed_precision PURE
  CHECK(mosaic.scenario.framework.memory.convention == StateConvention::fsdp);
  CHECK(mosaic.scenario.layout.zero_stage == 3);
  CHECK_FALSE(mosaic.scenario.model.learned_position_embeddings);  // ALiBi
  CHECK(mosaic.scenario.model.alibi);

  const MeasuredRun& titan = run("torchtitan_a100_Llama38B_0");
  CHECK(titan.framework == "torchtitan");
  CHECK(titan.scenario.framework.workload.grad_reduce_bytes == 4);  // FSDP2 reduce_dtype fp32
  CHECK(titan.scenario.model.ffn_act == FfnActivation::swiglu);
  CHECK(titan.scenario.framework.memory.selective == SelectiveKeeps::every_other_layer);

  const MeasuredRun& nemo = run("nemo2407_GPT3-20B_64gpu");
  CHECK(nemo.framework == "nemo");
  CHECK(nemo.scenario.framework.memory.convention == StateConvention::zero_paper);  // bf16 grads
  CHECK(nemo.scenario.layout.precision == Precision::fp8);
}

TEST_CASE("measured runs: other files' rows pick their framework by their own field, else their source",
          "[sim][measured_runs]") {
  nlohmann::json base = nlohmann::json::parse(R"({"id": "x", "gpu": "H100-SXM5-80GB", "num_gpus": 16,
      "model": {"name": "team-7b", "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048},
      "layout": {"tp": 1, "pp": 1, "dp": 16, "zero_stage": 3, "micro_batch": 1, "global_batch": 64},
      "measured": {"iteration_s": 2.0}})");
  auto framework_of_row = [&](const std::string& id, const nlohmann::json& extra) {
    nlohmann::json row = base;
    row["id"] = id;
    row.update(extra);
    return measured_runs_of(nlohmann::json::array({row}), "team.json", test::catalogs()).at(0);
  };
  CHECK(framework_of_row("a", {{"framework", "deepspeed@0.5"}}).framework == "deepspeed@0.3.12");
  // "deepspeed" is the newest DeepSpeed profile (deepspeed@0.6: v0.6 to HEAD); a source of 2021 or
  // before ran v0.3-v0.5 (v0.6.0 came in 2022).
  CHECK(framework_of_row("b", {{"group", "zero3"}, {"source", "DeepSpeed ZeRO-3 blog"}}).framework ==
        "deepspeed@0.6");
  CHECK(framework_of_row("b2", {{"group", "zero3"}, {"source", "DeepSpeed ZeRO-3 blog, 2021-03-08"}})
            .framework == "deepspeed@0.3.12");
  CHECK(framework_of_row("b3", {{"group", "zero3"}, {"source", "DeepSpeed issue 1069 (2021), rerun 2023"}})
            .framework == "deepspeed@0.6");
  // A sequence length or a GPU count is no year.
  CHECK(framework_of_row("b4", {{"group", "zero3"}, {"source", "DeepSpeed blog (2021), 2048 GPUs, seq 2048"}})
            .framework == "deepspeed@0.3.12");
  // Megatron-DeepSpeed (BLOOM's fork) before DeepSpeed, and its default: no sequence parallelism.
  const MeasuredRun bloom = framework_of_row(
      "mds", {{"group", "t"},
              {"source", "bigscience-workshop/Megatron-DeepSpeed, BLOOM training logs"},
              {"layout", {{"tp", 4}, {"pp", 1}, {"dp", 4}, {"micro_batch", 1}, {"global_batch", 64}}}});
  CHECK(bloom.framework == "megatron-deepspeed");
  CHECK_FALSE(bloom.scenario.layout.sequence_parallel);
  CHECK_FALSE(bloom.scenario.layout.flash_attention);
  // Both named, as MT-NLG's paper does: Megatron's layers on DeepSpeed's engine.
  const nlohmann::json mt_nlg = {
      {"group", "t"},
      {"source", "Smith et al. 2022, Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B"},
      {"layout", {{"tp", 8}, {"pp", 1}, {"dp", 2}, {"micro_batch", 1}, {"global_batch", 64}}}};
  CHECK(framework_of_row("mds2", mt_nlg).framework == "megatron-deepspeed");
  // Both named without tensor parallelism: a comparison, the DeepSpeed run's.
  CHECK(framework_of_row("mds3", {{"group", "t"}, {"source", "DeepSpeed ZeRO-3 vs Megatron-LM"}}).framework ==
        "deepspeed@0.6");
  CHECK(framework_of_row("c", {{"group", "t"}, {"source", "pytorch/torchtitan docs"}}).framework ==
        "torchtitan");
  CHECK(framework_of_row("d", {{"group", "t"}, {"source", "PyTorch FSDP2 tutorial"}}).framework == "fsdp2");
  CHECK(framework_of_row("e", {{"group", "t"}, {"source", "Megatron-LM paper, 2020"}}).framework ==
        "megatron-lm-2021");
  CHECK(framework_of_row("f", {{"group", "t"}, {"source", "a cluster log"}}).framework == "megatron-core");
  CHECK(framework_of_row("h", {{"group", "t"}, {"source", "DeepSeek-V3 Technical Report, Table 1"}})
            .framework == "hai-llm");
  // DeepSeek named beside another framework: that framework's run of the model.
  CHECK(framework_of_row("h2", {{"group", "t"}, {"source", "Megatron-Core, DeepSeek-V3 recipe"}}).framework ==
        "megatron-core");
  CHECK(framework_of_row("h3", {{"group", "t"}, {"source", "FSDP2 DeepSeek-V3 run"}}).framework == "fsdp2");
  const MeasuredRun unknown = framework_of_row("g", {{"framework", "jax-pax"}});
  CHECK_FALSE(unknown.simulatable());
  CHECK_THAT(unknown.unsupported, Catch::Contains("unknown framework \"jax-pax\""));
  // A "framework" field that is no profile id is read as text naming one, dated by the source.
  CHECK(framework_of_row("i1", {{"framework", "DeepSpeed"}}).framework == "deepspeed@0.6");
  CHECK(framework_of_row("i2", {{"framework", "DeepSpeed"}, {"source", "a 2021 blog"}}).framework ==
        "deepspeed@0.3.12");
  CHECK(framework_of_row("i3", {{"framework", "PyTorch FSDP"}}).framework == "fsdp1");
  CHECK(framework_of_row("i4", {{"framework", "NeMo 24.07"}}).framework == "nemo");
  CHECK(framework_of_row("i5", {{"framework", "Megatron-LM"}}).framework == "megatron-core");
  CHECK(framework_of_row("i6", {{"framework", "Megatron-LM"}, {"source", "SC21 paper, 2021"}}).framework ==
        "megatron-lm-2021");
  CHECK(framework_of_row("i7", {{"framework", "nemo@24.07"}}).framework == "nemo");
  // The field wins over the source: the source's DeepSpeed does not count.
  CHECK(framework_of_row("i8", {{"framework", "torchtitan"}, {"source", "vs DeepSpeed"}}).framework ==
        "torchtitan");
  CHECK(framework_of_row("i9", {{"framework", "PyTorch FSDP"}, {"source", "vs DeepSpeed"}}).framework ==
        "fsdp1");
  // Ids and aliases in another case: their profiles (the text alone would read megatron-core).
  CHECK(framework_of_row("j1", {{"framework", "Megatron-Core-Perf"}}).framework == "megatron-core-perf");
  CHECK(framework_of_row("j2", {{"framework", "megatron-ds"}}).framework == "megatron-deepspeed");
  CHECK(framework_of_row("j3", {{"framework", " DeepSpeed@0.5 "}}).framework == "deepspeed@0.3.12");
  // Written as the id, the profile as asked, whatever the source's year.
  CHECK(framework_of_row("j4", {{"framework", "deepspeed"}, {"source", "a 2021 blog"}}).framework ==
        "deepspeed@0.6");
  // Not text: no profile.
  CHECK_THAT(framework_of_row("j5", {{"framework", 7}}).unsupported,
             Catch::Contains("unknown framework \"7\""));

  // Precision: the first word, in the tables' or the scenario's spellings; else unsupported.
  auto with_precision = [&](const std::string& id, const std::string& precision) {
    return framework_of_row(id, {{"layout", {{"tp", 1}, {"pp", 1}, {"dp", 16}, {"precision", precision}}}});
  };
  CHECK(with_precision("p1", "fp8-cs").scenario.layout.fp8_recipe == LowPrecisionRecipe::tensorwise);
  CHECK(with_precision("p2", "mxfp8").scenario.layout.fp8_recipe == LowPrecisionRecipe::mxfp8);
  CHECK(with_precision("p3", "blockwise").scenario.layout.precision == Precision::fp8);
  CHECK(with_precision("p4", "fp8 (linear layers) + bf16").scenario.layout.fp8_recipe ==
        LowPrecisionRecipe::delayed);
  // A plain fp8 whose commentary names its recipe runs that recipe.
  CHECK(with_precision("p6", "FP8 (fine-grained: 1x128 tiles, 128x128 blocks)").scenario.layout.fp8_recipe ==
        LowPrecisionRecipe::blockwise);
  CHECK(with_precision("p7", "fp8 current scaling").scenario.layout.fp8_recipe ==
        LowPrecisionRecipe::tensorwise);
  CHECK(with_precision("p8", "fp8, MXFP8 recipe").scenario.layout.fp8_recipe == LowPrecisionRecipe::mxfp8);
  // Words that only look like a recipe, or two recipes named: the default, delayed scaling.
  CHECK(with_precision("p9", "fp8 (all transformer blocks)").scenario.layout.fp8_recipe ==
        LowPrecisionRecipe::delayed);
  CHECK(with_precision("p10", "fp8 (delayed; current scaling was slower)").scenario.layout.fp8_recipe ==
        LowPrecisionRecipe::delayed);
  // Composer's automatic mixed precisions; amp_fp8 runs Transformer Engine's DelayedScaling.
  const MeasuredRun amp_fp8 = with_precision("p11", "amp_fp8");
  CHECK(amp_fp8.scenario.layout.precision == Precision::fp8);
  CHECK(amp_fp8.scenario.layout.recipe() == LowPrecisionRecipe::delayed);
  CHECK(with_precision("p12", "amp_fp16").scenario.layout.precision == Precision::fp16);
  CHECK(with_precision("p13", "amp_bf16").scenario.layout.precision == Precision::bf16);
  const MeasuredRun odd = with_precision("p5", "int4");
  CHECK_FALSE(odd.simulatable());
  CHECK_THAT(odd.unsupported,
             Catch::StartsWith("layout.precision: \"int4\" is not a precision simrun knows"));
}

TEST_CASE("measured runs: a GPU's free text names its catalog part and the part's node",
          "[sim][measured_runs]") {
  // Other teams write GPUs as their sources do; each catalog chip is read, as a name of its own,
  // in its form factor and memory, on its reference node's InfiniBand (hardware.json "nodes").
  nlohmann::json row = nlohmann::json::parse(R"({"id": "x", "num_gpus": 16,
      "model": {"name": "team-7b", "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048},
      "layout": {"tp": 1, "pp": 1, "dp": 16, "micro_batch": 1, "global_batch": 64},
      "measured": {"iteration_s": 2.0}})");
  auto on = [&](const std::string& gpu) {
    row["gpu"] = gpu;
    return measured_runs_of(nlohmann::json::array({row}), "team.json", test::catalogs()).at(0);
  };
  const std::vector<std::tuple<std::string, std::string, int64_t, std::string>> parts = {
      {"NVIDIA B200 (DGX B200)", "b200", 8, "ib-ndr"},
      {"B200-SXM-180GB (8x400 Gb/s IB per node)", "b200", 8, "ib-ndr"},
      {"GB300 NVL72", "gb300", 4, "ib-xdr"},  // trays of 4 in the 72-GPU NVLink rack
      {"HGX B300", "b300", 8, "ib-xdr"},
      {"H800-SXM5-80GB", "h800", 8, "ib-ndr"},
      {"NVIDIA H200 SXM 141GB", "h200", 8, "ib-ndr"},
      {"AMD Instinct MI300X", "mi300x", 8, "ib-ndr"},
      {"GH200 (H100 + Grace CPU)", "gh200", 4, "ib-ndr"},  // the first chip named
      {"8xA100-SXM4-40GB", "a100-40gb", 8, "ib-hdr"},
      {"A100 80 GB", "a100-80gb", 8, "ib-hdr"},
      {"GB200 (DGX-GB200, NVL72)", "gb200", 4, "ib-ndr"},
      {"72 GB200 (NVL72)", "gb200", 4, "ib-ndr"},  // a count, not 72 GB
      {"GB200 NVL", "gb200", 4, "ib-ndr"},         // the rack, not an NVL card
      {"GB300 NVL-72", "gb300", 4, "ib-xdr"},
      {"DGX B200 (NVLS)", "b200", 8, "ib-ndr"},
      {"NVIDIA H100s", "h100-sxm", 8, "ib-ndr"},
      {"H100x8", "h100-sxm", 8, "ib-ndr"},
      {"H100 80.0GB", "h100-sxm", 8, "ib-ndr"},
      {"H100-SXM5 (400Gb IB)", "h100-sxm", 8, "ib-ndr"},             // a NIC's rate, not memory
      {"GH200 (480GB LPDDR5X + 96GB HBM3e)", "gh200", 4, "ib-ndr"},  // Grace's memory is not the GPU's
      {"A100 40 GiB", "a100-40gb", 8, "ib-hdr"}};
  for (const auto& [text, id, per_node, fabric] : parts) {
    INFO(text);
    const MeasuredRun r = on(text);
    REQUIRE(r.simulatable());
    CHECK(r.scenario.cluster.gpu.id == id);
    CHECK(r.scenario.cluster.gpus_per_node == per_node);
    CHECK(r.scenario.cluster.nics_per_node == per_node);
    CHECK(r.scenario.cluster.fabric.id == fabric);
  }
  // Not the SXM part's figures for another form of the chip; no part for a chip not catalogued.
  for (const char* text : {"H200 NVL", "A100 PCIe 80GB", "V100-SXM2-32GB", "TPU v5p", "Grace CPU"}) {
    INFO(text);
    CHECK_THAT(on(text).unsupported, Catch::EndsWith("not in the catalog"));
  }
  CHECK(on("H100 PCIe").scenario.cluster.gpu.id == "h100-pcie");
  // Other memory than the part's: its memory checked at the stated size, its step time not compared.
  const MeasuredRun big = on("GH200 144GB");
  CHECK(big.scenario.cluster.gpu.hbm_bytes == Approx(144e9));
  CHECK_THAT(big.unsupported, Catch::Contains("non-standard SKU"));

  // A team's own part of a chip (a user catalog's h100-96gb) takes the text that names its memory,
  // and no other: an "H100-SXM5-80GB" or a plain "H100 SXM" stays the catalog's h100-sxm.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "simrun-test-team-gpus";
  std::filesystem::create_directories(dir / "gpus");
  std::ifstream shipped(std::filesystem::path(SIMRUN_DATA_DIR) / "topologies" / "gpus" / "h100-sxm.json");
  nlohmann::json part = nlohmann::json::parse(shipped);
  part.erase("cuda_names");
  part.erase("aliases");
  part.erase("hbm_usable_gib");
  part["hbm_gb"] = 96;
  std::ofstream(dir / "gpus" / "h100-96gb.json") << part.dump();
  Catalogs team = test::catalogs();
  team.hardware.add(dir / "gpus", dir / "fabrics");
  auto on_team = [&](const std::string& gpu) {
    row["gpu"] = gpu;
    return measured_runs_of(nlohmann::json::array({row}), "team.json", team).at(0).scenario.cluster.gpu.id;
  };
  CHECK(on_team("H100 96GB") == "h100-96gb");
  CHECK(on_team("H100-SXM5-80GB (DGX-H100)") == "h100-sxm");
  CHECK(on_team("H100 SXM") == "h100-sxm");
}

TEST_CASE("measured runs: an unstated dp is the GPUs over tp, pp and cp, where they divide",
          "[sim][measured_runs]") {
  nlohmann::json row = nlohmann::json::parse(R"({"id": "x", "gpu": "H100-SXM5-80GB", "num_gpus": 64,
      "model": {"name": "team-7b", "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048},
      "layout": {"tp": 2, "pp": 2, "cp": 2, "dp": null, "global_batch": 64},
      "measured": {"iteration_s": 2.0}})");
  auto read = [&] {
    return measured_runs_of(nlohmann::json::array({row}), "team.json", test::catalogs()).at(0);
  };
  const MeasuredRun derived = read();
  REQUIRE(derived.simulatable());
  CHECK(derived.scenario.layout.dp == 8);
  CHECK(std::count(derived.defaults_used.begin(), derived.defaults_used.end(), "dp=num_gpus/(tp·pp·cp)") ==
        1);
  row["layout"].erase("dp");
  CHECK(read().scenario.layout.dp == 8);
  row["num_gpus"] = 60;  // not a multiple of tp·pp·cp = 8
  CHECK(read().unsupported == "layout.dp not stated, and num_gpus 60 is not a multiple of tp·pp·cp = 8");
}

TEST_CASE("measured runs: a dense model of another family takes the style its parameter count says",
          "[sim][measured_runs]") {
  nlohmann::json row = nlohmann::json::parse(R"({"id": "x", "gpu": "H100-SXM5-80GB", "num_gpus": 8,
      "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 64},
      "measured": {"iteration_s": 2.0}})");
  auto model_of = [&](const nlohmann::json& model) {
    row["model"] = model;
    return measured_runs_of(nlohmann::json::array({row}), "team.json", test::catalogs()).at(0).scenario.model;
  };
  // Mistral 7B (HF config: SwiGLU, 14336 wide): 7.24B gated against 5.4B as a two-matrix MLP.
  const nlohmann::json mistral = {{"name", "Mistral-7B"}, {"layers", 32},    {"hidden", 4096},
                                  {"heads", 32},          {"kv_heads", 8},   {"ffn", 14336},
                                  {"vocab", 32000},       {"seq_len", 4096}, {"params_b", 7.24}};
  const ModelSpec gated = model_of(mistral);
  CHECK(gated.ffn_act == FfnActivation::swiglu);
  CHECK(gated.norm == NormKind::rmsnorm);
  CHECK_FALSE(gated.learned_position_embeddings);
  // Falcon 7B (GELU, 4 x 4544 wide, one KV head): 6.9B plain against 9.6B gated.
  const ModelSpec plain = model_of({{"name", "Falcon-7B"},
                                    {"layers", 32},
                                    {"hidden", 4544},
                                    {"heads", 71},
                                    {"kv_heads", 1},
                                    {"ffn", 18176},
                                    {"vocab", 65024},
                                    {"seq_len", 2048},
                                    {"params_b", 7.2}});
  CHECK(plain.ffn_act == FfnActivation::gelu);
  // Without params_b, a name of no known family is GPT-style; a GPT name stays GPT-style whatever it says.
  nlohmann::json unsized = mistral;
  unsized.erase("params_b");
  CHECK(model_of(unsized).ffn_act == FfnActivation::gelu);
  nlohmann::json gpt = mistral;
  gpt["name"] = "GPT-7B";
  CHECK(model_of(gpt).ffn_act == FfnActivation::gelu);
}

TEST_CASE("measured runs: an MoE row's name picks the catalog's model, letters and digits alone",
          "[sim][measured_runs]") {
  nlohmann::json row = nlohmann::json::parse(R"({"id": "x", "gpu": "H100-SXM5-80GB", "num_gpus": 64,
      "model": {"layers": 48, "hidden": 2048, "heads": 32, "seq_len": 4096},
      "layout": {"tp": 1, "pp": 1, "dp": 64, "ep": 8, "micro_batch": 1, "global_batch": 256},
      "measured": {"iteration_s": 2.0}})");
  auto named = [&](const std::string& name) {
    row["model"]["name"] = name;
    return measured_runs_of(nlohmann::json::array({row}), "team.json", test::catalogs()).at(0);
  };
  CHECK(named("Qwen3-30B-A3B").scenario.model.name == named("Qwen3_30B_a3B").scenario.model.name);
  CHECK(named("qwen3 30b a3b").scenario.model.is_moe());
  CHECK(named("DeepSeek V3 (671B)").scenario.model.moe->experts == 256);
  CHECK(named("Mixtral 8x7B").scenario.model.moe->experts == 8);
  // A catalog MoE model's name alone, without expert parallelism or a shape, is that model.
  row["layout"]["ep"] = nullptr;
  row["model"] = {{"seq_len", 4096}};
  CHECK(named("DeepSeek-V3").simulatable());
  row["layout"]["ep"] = 8;
  // Mixtral 8x22B is not the catalog's 8x7B: its architecture is in neither the row nor the catalog.
  CHECK(named("Mixtral 8x22B").unsupported == "MoE architecture not in the file nor in the model catalog");
}

TEST_CASE("measured runs: a row's framework behaviour is its profile's, as a scenario naming it gets",
          "[sim][measured_runs][framework]") {
  const MeasuredRun& mosaic = run("mosaic_mpt13b_h100_80gb_8gpu_s2048_gbs16");
  auto scenario_with = [](const std::string& framework) {
    return test::parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "num_gpus": 8},
                                         "framework": ")" +
                                     framework + R"("})");
  };
  const Scenario composer = scenario_with("composer");
  CHECK(differing(composer.framework.workload, mosaic.scenario.framework.workload).empty());
  CHECK(composer.framework.memory.convention == mosaic.scenario.framework.memory.convention);
  CHECK(mosaic.scenario.framework.id == "composer");
  // Plain FSDP1 runs the Composer rows' behaviour but for the backward prefetch, which Composer's
  // FSDP config changes from PyTorch's BACKWARD_PRE to BACKWARD_POST.
  const Scenario fsdp1 = scenario_with("fsdp1");
  CHECK(differing(fsdp1.framework.workload, mosaic.scenario.framework.workload) ==
        std::vector<std::string>{"fsdp_backward_prefetch"});
  CHECK(fsdp1.framework.workload.fsdp_backward_prefetch == FsdpBackwardPrefetch::before_backward);
  CHECK(fsdp1.framework.memory.convention == StateConvention::fsdp);
  // Every row's options are exactly its profile's.
  for (const MeasuredRun& r : runs()) {
    if (!r.has_scenario()) continue;
    INFO(r.id);
    const FrameworkProfile& p = test::catalogs().frameworks.resolve(r.framework, "t", "framework");
    CHECK(differing(p.workload, r.scenario.framework.workload).empty());
    CHECK(r.scenario.layout.flash_attention == p.flash_attention);
  }
}

TEST_CASE("measured runs: a row with a throughput and no step time is compared at the step it gives",
          "[sim][measured_runs]") {
  // A shipped row with its iteration_s taken away: its tokens/s per GPU gives the derived one back
  // (the reference's own method, GBS·seq/(tokens/s/GPU·N)), to the rounding of the printed figure.
  nlohmann::json row;
  for (const nlohmann::json& r : nlohmann::json::parse(std::ifstream(test::kShippedRuns)))
    if (r.at("id") == "nemo2407_LLAMA2-7B_8gpu") row = r;
  REQUIRE(row.is_object());
  const double derived = row.at("derived").at("iteration_s").get<double>();
  row["derived"]["iteration_s"] = nullptr;
  auto mapped = [](const nlohmann::json& r) {
    return measured_runs_of(nlohmann::json::array({r}), "team.json", test::catalogs()).at(0);
  };
  const MeasuredRun per_gpu = mapped(row);
  CHECK(per_gpu.reference_s == Approx(derived).epsilon(0.005));
  CHECK(per_gpu.reference_kind == "from tokens/s");
  CHECK(std::any_of(per_gpu.defaults_used.begin(), per_gpu.defaults_used.end(),
                    [](const std::string& d) { return d.find("measured tokens/s") != std::string::npos; }));
  // The total throughput does too; without the batch there is nothing to derive, and a TFLOP/s
  // figure alone (its FLOP convention unstated) is not read.
  nlohmann::json total = row;
  total["measured"]["tokens_per_s_total"] =
      row.at("measured").at("tokens_per_s_per_gpu").get<double>() * row.at("num_gpus").get<double>();
  total["measured"]["tokens_per_s_per_gpu"] = nullptr;
  CHECK(mapped(total).reference_s == Approx(derived).epsilon(0.005));
  nlohmann::json no_gpus = total;  // the total needs no GPU count
  no_gpus.erase("num_gpus");
  CHECK(mapped(no_gpus).reference_s == Approx(derived).epsilon(0.005));
  nlohmann::json no_batch = row;
  no_batch["layout"]["global_batch"] = nullptr;
  CHECK(mapped(no_batch).unsupported ==
        "measured tokens/s without layout.global_batch to turn it into a step");
  nlohmann::json per_gpu_alone = row;
  per_gpu_alone.erase("num_gpus");
  CHECK_THAT(mapped(per_gpu_alone).unsupported, Catch::Contains("num_gpus"));
  // A throughput that makes no step time (one past a double's range) is no reference.
  nlohmann::json huge = row;
  huge["measured"]["tokens_per_s_per_gpu"] = 1e308;
  CHECK_THAT(mapped(huge).unsupported, Catch::Contains("is no step time"));
  CHECK(mapped(huge).reference_s == 0);
  // A stated iteration_s that is not a step time stays the row's fault, not replaced.
  nlohmann::json bad = row;
  bad["measured"]["iteration_s"] = "slow";
  CHECK_THAT(mapped(bad).unsupported, Catch::Contains("measured.iteration_s"));
}

TEST_CASE("measured runs: unsupported rows say why", "[sim][measured_runs]") {
  CHECK_THAT(run("mcore_moe_mixtral8x7b_h100").unsupported, Catch::Contains("no reference step time"));
  // MoE rows run on the catalog's architecture; Qwen3-235B's tp 2 · ep 32 > 32 ranks per stage
  // leaves expert_tp = 1.
  const MeasuredRun& qwen = run("mbridge2511_H100_Qwen3_235B_a22B_256gpu_fp8-cs");
  CHECK(qwen.simulatable());
  CHECK(qwen.scenario.model.name == "qwen3-235b-a22b");
  CHECK(qwen.scenario.layout.expert_tp == 1);
  const MeasuredRun& h96 = run("torchtitan_h100_t1_fsdp_8gpu");
  CHECK(h96.has_scenario());  // memory is checked on a 96 GB h100-sxm
  CHECK_FALSE(h96.simulatable());
  CHECK(h96.scenario.cluster.gpu.hbm_bytes == Approx(96e9));
  CHECK_FALSE(run("megatron_readme_h100_strong_177B_96gpu").has_scenario());
}
