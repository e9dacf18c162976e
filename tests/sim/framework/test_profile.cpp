// Framework profiles (sim/framework/profile.hpp): the shipped files load and are checked like a
// catalog, megatron-core holds the simulator's long-standing defaults, "extends" and versions
// resolve as documented, bad files and unknown ids are one-line InputErrors, and docs/model.md's
// table of profiles is the one the catalog makes.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "doc_section.hpp"
#include "simrun/common/error.hpp"
#include "simrun/sim/framework/profile.hpp"

using namespace simrun;
namespace fs = std::filesystem;

namespace {

const fs::path kShipped = fs::path(SIMRUN_DATA_DIR) / "sim" / "framework" / "profiles";

const FrameworkCatalog& shipped() {
  static const FrameworkCatalog c = FrameworkCatalog::load(kShipped);
  return c;
}

// A fresh folder under the temporary directory holding `files` (name → JSON text).
fs::path folder_with(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
  const fs::path dir = fs::temp_directory_path() / ("simrun-test-profiles-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [file, text] : files) std::ofstream(dir / file) << text;
  return dir;
}

// A complete profile: megatron-core's file with `name` and, optionally, one field replaced.
std::string megatron_core_text() {
  std::ifstream in(kShipped / "megatron-core.json");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string small_profile(const std::string& extends, const std::string& field_json) {
  return R"({"name": "X", "extends": ")" + extends + R"(", "defaults": {)" + field_json + "}}";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("the default profile is megatron-core and holds the options' defaults", "[sim][framework]") {
  const FrameworkProfile& p = shipped().resolve(kDefaultFramework, "t", "framework");
  const WorkloadOptions w;
  const MemoryDefaults m;
  CHECK(p.id == "megatron-core");
  CHECK(p.workload.kernels == w.kernels);
  CHECK(p.workload.eager_memory_factor == w.eager_memory_factor);
  CHECK(p.workload.selective == w.selective);
  CHECK(p.workload.step_overhead_s == w.step_overhead_s);
  CHECK(p.workload.tp_overlap == w.tp_overlap);
  CHECK(p.workload.moe_shared_expert_overlap == w.moe_shared_expert_overlap);
  CHECK(p.workload.grad_reduce == w.grad_reduce);
  CHECK(p.workload.param_gather == w.param_gather);
  CHECK(p.workload.bucket_params_min == w.bucket_params_min);
  CHECK(p.workload.bucket_params_per_dp == w.bucket_params_per_dp);
  CHECK(p.workload.one_bucket_after_first_chunk == w.one_bucket_after_first_chunk);
  CHECK(p.workload.grad_reduce_bytes == w.grad_reduce_bytes);
  CHECK(p.workload.fsdp_prefetch_layers == w.fsdp_prefetch_layers);
  CHECK(p.workload.fsdp_backward_prefetch == w.fsdp_backward_prefetch);
  CHECK(p.workload.fsdp_one_communicator == w.fsdp_one_communicator);
  CHECK(p.workload.adam_bytes_per_param == w.adam_bytes_per_param);
  CHECK(p.workload.grad_clip_bytes_per_param == w.grad_clip_bytes_per_param);
  CHECK(p.workload.host.launch_s == w.host.launch_s);
  CHECK(p.workload.host.sync_s == w.host.sync_s);
  CHECK(p.workload.host.moe_dispatcher == w.host.moe_dispatcher);
  CHECK(p.workload.host.cuda_graphs == w.host.cuda_graphs);
  CHECK(p.memory.convention == m.convention);
  CHECK(p.memory.dropout == m.dropout);
  CHECK(p.memory.selective == m.selective);
  CHECK(p.memory.fixed_bytes == m.fixed_bytes);
  CHECK(p.flash_attention);
  CHECK_FALSE(p.gpt_tied_embeddings);
  // A default-constructed profile (a Scenario built in code) is the same one.
  const FrameworkProfile none;
  CHECK(none.id == p.id);
  CHECK(none.name == p.name);
}

TEST_CASE("every shipped profile gives every field, each with its source", "[sim][framework]") {
  const size_t schema = shipped().resolve(kDefaultFramework, "t", "framework").fields.size();
  CHECK(schema >= 20);
  CHECK(shipped().ids().size() >= 8);
  for (const auto& [id, p] : shipped().profiles()) {
    INFO(id);
    CHECK(p.fields.size() == schema);
    for (const ProfileField& f : p.fields) CHECK(f.source.size() > 20);
    CHECK_FALSE(p.name.empty());
    if (id != kDefaultFramework)
      CHECK_FALSE(profile_differences(p, shipped().resolve(kDefaultFramework, "t", "f")).empty());
  }
  // What the profiles say where the sources say it (the files cite them).
  const auto& profiles = shipped().profiles();
  CHECK(profiles.at("composer").workload.fsdp_backward_prefetch == FsdpBackwardPrefetch::after_backward);
  CHECK(profiles.at("fsdp1").workload.fsdp_backward_prefetch == FsdpBackwardPrefetch::before_backward);
  CHECK(profiles.at("fsdp1").workload.fsdp_one_communicator);
  CHECK_FALSE(profiles.at("fsdp2").workload.fsdp_one_communicator);
  CHECK(profiles.at("torchtitan").workload.grad_reduce_bytes == 4);
  CHECK(profiles.at("torchtitan").memory.selective == SelectiveKeeps::every_other_layer);
  CHECK(profiles.at("nemo").memory.convention == StateConvention::zero_paper);
  CHECK_FALSE(profiles.at("megatron-lm-2021").flash_attention);
  CHECK(profiles.at("megatron-core").sequence_parallel_with_tp);
  CHECK_FALSE(profiles.at("megatron-lm-2021").sequence_parallel_with_tp);  // SP came with v3.0 (2022)
  // Megatron-DeepSpeed (frameworks.md 2.4): Megatron's fused kernels and synchronous TP on DeepSpeed's
  // pipeline engine, without FlashAttention or sequence parallelism by default.
  const FrameworkProfile& mds = profiles.at("megatron-deepspeed");
  CHECK(mds.workload.kernels == KernelStack::fused);
  CHECK(mds.workload.pipeline_engine == PipelineEngine::deepspeed);
  CHECK(mds.workload.tp_overlap == TpCommOverlap::none);
  CHECK_FALSE(mds.flash_attention);
  CHECK_FALSE(mds.sequence_parallel_with_tp);
  CHECK(profiles.at("megatron-lm-2021").memory.dropout == Dropout::masks);
  // Megatron-Bridge's GB200 recipes: HybridEP through the flex dispatcher, CUDA graphs.
  const HostOverhead& blackwell = profiles.at("megatron-bridge-blackwell").workload.host;
  CHECK(blackwell.moe_dispatcher == MoeDispatcher::flex);
  CHECK(blackwell.cuda_graphs.has(CudaGraphScope::full_iteration));
  CHECK(blackwell.cuda_graphs.has(CudaGraphScope::moe_router));
  CHECK_FALSE(profiles.at("nemo").workload.host.cuda_graphs.any());
}

TEST_CASE("a profile that extends another takes its fields and says which it gives", "[sim][framework]") {
  const FrameworkProfile& composer = shipped().resolve("composer", "t", "framework");
  CHECK(composer.extends == "fsdp1");
  CHECK(composer.field("fsdp_backward_prefetch")->from == "composer");
  CHECK(composer.field("model_states")->from == "fsdp1");
  CHECK(composer.field("flash_attention")->from == "megatron-core");
  const std::vector<ProfileDifference> d =
      profile_differences(composer, shipped().resolve("fsdp1", "t", "framework"));
  REQUIRE(d.size() == 1);
  CHECK(d[0].key == "fsdp_backward_prefetch");
  CHECK(d[0].value == "\"after_backward\"");
  CHECK(d[0].base_value == "\"before_backward\"");
}

TEST_CASE("id@version takes the newest profile not above the version asked for", "[sim][framework]") {
  const fs::path dir = folder_with(
      "versions",
      {{"megatron-core.json", megatron_core_text()},
       {"x.json", small_profile("megatron-core", R"("kernels": {"value": "eager", "source": "s"})")},
       {"x@0.5.json", small_profile("x", R"("dropout": {"value": "masks", "source": "s"})")},
       {"x@0.14.json", small_profile("x", R"("grad_reduce_dtype": {"value": "fp32", "source": "s"})")},
       {"y@2.json", small_profile("megatron-core", R"("kernels": {"value": "eager", "source": "s"})")}});
  const FrameworkCatalog c = FrameworkCatalog::load(dir);
  CHECK(c.resolve("x", "t", "framework").id == "x@0.14");  // no version: the newest
  CHECK(c.resolve("x@0.14", "t", "framework").id == "x@0.14");
  CHECK(c.resolve("x@0.9", "t", "framework").id == "x@0.5");  // 0.9 < 0.14 by number, not text
  CHECK(c.resolve("x@0.5.3", "t", "framework").id == "x@0.5");
  CHECK(c.resolve("x@3", "t", "framework").id == "x@0.14");
  CHECK(c.resolve("x@0.1", "t", "framework").id == "x");  // the unversioned profile is the oldest
  CHECK(c.resolve("x@0.14", "t", "framework").version == "0.14");
  CHECK(c.resolve("x@0.14", "t", "framework").family == "x");
  CHECK_THAT(error_of([&] { c.resolve("y@1.5", "s.json", "framework"); }),
             Catch::Equals("s.json: framework: no profile of \"y\" for version 1.5 or older (known: y@2)"));
  CHECK_THAT(error_of([&] { c.resolve("x@v1", "s.json", "framework"); }),
             Catch::Contains("s.json: framework: \"x@v1\" is not a framework id"));
}

TEST_CASE("an id or alias written in another case names its profile, other text none", "[sim][framework]") {
  const FrameworkCatalog& c = shipped();
  CHECK(c.id_named(" DeepSpeed@0.5 ") == "deepspeed@0.5");
  CHECK(c.id_named("Megatron-Core-Perf") == "megatron-core-perf");
  CHECK(c.id_named("megatron-ds") == "megatron-deepspeed");  // an alias
  CHECK(c.id_named("ds@0.5") == "deepspeed@0.5");            // an alias, the version kept
  CHECK(c.id_named("PyTorch FSDP") == std::nullopt);         // text, not an id
  CHECK(c.id_named("jax-pax") == std::nullopt);
  CHECK(c.id_named("") == std::nullopt);
}

TEST_CASE("the shipped DeepSpeed files are named by the first version they describe", "[sim][framework]") {
  // deepspeed@0.3.12.json holds ZeRO-3 as v0.3.12 (its first release) to v0.5.4 ran it, so v0.4
  // and v0.5 resolve there, not to today's unversioned file.
  for (const char* v : {"deepspeed@0.3.12", "deepspeed@0.4", "deepspeed@0.5", "deepspeed@0.5.4"})
    CHECK(shipped().resolve(v, "t", "framework").id == "deepspeed@0.3.12");
  CHECK(shipped().resolve("deepspeed@0.6", "t", "framework").id == "deepspeed@0.6");
  CHECK(shipped().resolve("deepspeed@0.14", "t", "framework").id == "deepspeed@0.6");
  CHECK(shipped().resolve("deepspeed", "t", "framework").id == "deepspeed@0.6");
}

TEST_CASE("an unknown framework lists the known ones and suggests the nearest", "[sim][framework]") {
  const std::string e = error_of([] { shipped().resolve("deepspeedd", "s.json", "framework"); });
  CHECK_THAT(e, Catch::StartsWith("s.json: framework: unknown framework \"deepspeedd\" (known: composer, "));
  CHECK_THAT(e, Catch::Contains("megatron-core, "));
  CHECK(e.find('\n') == std::string::npos);
  CHECK_THAT(error_of([] { shipped().resolve("bridge", "s.json", "framework"); }),
             Catch::EndsWith("did you mean \"nemo\"?)"));  // by its alias
}

TEST_CASE("a bad profile file is an InputError naming the file and the field", "[sim][framework]") {
  const std::string core = megatron_core_text();
  auto load_with = [&](const std::string& name, const std::string& file, const std::string& text) {
    return error_of([&] {
      FrameworkCatalog::load(folder_with(name, {{"megatron-core.json", core}, {file, text}}));
    });
  };
  CHECK_THAT(load_with("bad-value", "b.json",
                       small_profile("megatron-core", R"("kernels": {"value": "jit", "source": "s"})")),
             Catch::Contains("b.json: defaults.kernels.value:"));
  CHECK_THAT(
      load_with("no-source", "b.json", small_profile("megatron-core", R"("kernels": {"value": "eager"})")),
      Catch::Contains("b.json: defaults.kernels.source:"));
  CHECK_THAT(load_with("empty-source", "b.json",
                       small_profile("megatron-core", R"("kernels": {"value": "eager", "source": ""})")),
             Catch::Contains("b.json: defaults.kernels.source: every field names its source"));
  CHECK_THAT(load_with("unknown-field", "b.json",
                       small_profile("megatron-core", R"("kernel": {"value": "eager", "source": "s"})")),
             Catch::Contains("b.json: defaults.kernel:"));
  CHECK_THAT(
      load_with("range", "b.json",
                small_profile("megatron-core", R"("adam_bytes_per_param": {"value": -1, "source": "s"})")),
      Catch::Contains("b.json: defaults.adam_bytes_per_param.value:"));
  CHECK_THAT(
      load_with(
          "graph-scope", "b.json",
          small_profile("megatron-core", R"("cuda_graph_scope": {"value": ["attn", "mpl"], "source": "s"})")),
      Catch::Contains("b.json: defaults.cuda_graph_scope.value: expected a list of CUDA graph scopes"));
  CHECK_THAT(load_with("dispatcher", "b.json",
                       small_profile("megatron-core",
                                     R"("moe_token_dispatcher": {"value": "deepep", "source": "s"})")),
             Catch::Contains("b.json: defaults.moe_token_dispatcher.value:"));
  CHECK_THAT(load_with("incomplete", "b.json", R"({"name": "B", "defaults": {}})"),
             Catch::Contains("b.json: defaults.kernels: missing"));
  CHECK_THAT(load_with("extends-unknown", "b.json", small_profile("nope", "")),
             Catch::Contains("b.json: extends: unknown profile \"nope\""));
  CHECK_THAT(error_of([&] {
               FrameworkCatalog::load(folder_with("cycle", {{"megatron-core.json", core},
                                                            {"a.json", small_profile("b", "")},
                                                            {"b.json", small_profile("a", "")}}));
             }),
             Catch::Contains("extends: profiles extend each other in a cycle"));
  CHECK_THAT(load_with("bad-name", "b@x.json", small_profile("megatron-core", "")),
             Catch::Contains("b@x.json: the file name must be a profile id"));
  CHECK_THAT(error_of([&] {
               FrameworkCatalog::load(folder_with("no-default", {{"a.json", core}}));
             }),
             Catch::Contains("no megatron-core.json"));
}

TEST_CASE("a user catalog's profile may extend a shipped one, not replace it", "[sim][framework]") {
  FrameworkCatalog c = FrameworkCatalog::load(kShipped);
  c.add(folder_with(
      "user", {{"my-fsdp.json",
                small_profile("fsdp2", R"("step_overhead_s": {"value": 0.1, "source": "our logs"})")}}));
  const FrameworkProfile& mine = c.resolve("my-fsdp", "t", "framework");
  CHECK(mine.workload.step_overhead_s == 0.1);
  CHECK(mine.memory.convention == StateConvention::fsdp);
  // A version in "extends" resolves as --framework does: DeepSpeed 0.5 is deepspeed@0.3.12's era.
  const std::string overhead = R"("step_overhead_s": {"value": 0.2, "source": "our logs"})";
  c.add(folder_with("user-versioned", {{"my-deepspeed.json", small_profile("deepspeed@0.5", overhead)}}));
  CHECK(c.resolve("my-deepspeed", "t", "framework").extends == "deepspeed@0.3.12");
  c.add(fs::path("/nonexistent/simrun/frameworks"));  // an absent folder adds nothing
  CHECK_THAT(error_of([&] {
               c.add(folder_with("dup", {{"nemo.json", megatron_core_text()}}));
             }),
             Catch::Contains("nemo.json: the framework profile \"nemo\" is already in the catalog"));
}

TEST_CASE("docs/model.md holds the table of profiles as the catalog makes it", "[sim][framework][docs]") {
  test::check_doc_section(fs::path(SIMRUN_DATA_DIR) / "docs" / "model.md", "framework-profiles",
                          profiles_markdown(shipped()));
}
