// Tests of the hardware catalog (topologies/gpus/*.json, topologies/fabrics/*.json).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/common/units.hpp"
#include "simrun/topologies/catalog.hpp"

using namespace simrun;

namespace {

const std::filesystem::path kRoot = std::filesystem::path(SIMRUN_DATA_DIR) / "topologies";

const HardwareCatalog& catalog() {
  static const HardwareCatalog c =
      HardwareCatalog::load(kRoot / "gpus", kRoot / "fabrics", kRoot / "architectures.json");
  return c;
}

const std::vector<std::string> kContractGpus = {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h800",
                                                "h200",      "gh200",     "b200",     "gb200",     "b300",
                                                "gb300",     "mi300x",    "mi325x",   "mi355x"};
const std::vector<std::string> kContractFabrics = {"ib-hdr", "ib-ndr", "ib-xdr", "roce-400g"};

}  // namespace

TEST_CASE("cpu-host stands for the host simrun validate measures, as a GPU kind", "[topologies][catalog]") {
  const GpuSpec& g = catalog().gpu("cpu-host", "test", "cluster.gpu");
  CHECK(g.vendor == "CPU");
  CHECK(g.fp32_flops_per_s > 0);
  CHECK(g.bf16_flops_per_s == g.fp32_flops_per_s);  // bf16 emulated in fp32
  CHECK(g.hbm_bytes_per_s > 0);
  CHECK_FALSE(g.nvls);
  CHECK(g.compute_defaults.gemm_max);
}

TEST_CASE("every contract GPU id exists with positive core figures", "[topologies][catalog]") {
  for (const auto& id : kContractGpus) {
    INFO(id);
    const GpuSpec& g = catalog().gpu(id, "test", "cluster.gpu");
    CHECK(g.id == id);
    CHECK_FALSE(g.name.empty());
    CHECK_FALSE(g.source.empty());
    CHECK(g.hbm_bytes >= 40e9);
    CHECK(g.hbm_bytes_per_s >= 1.5e12);
    CHECK(g.fp32_flops_per_s > 0);
    CHECK(g.bf16_flops_per_s > g.fp32_flops_per_s);
    CHECK(g.sm_count > 0);
    CHECK(g.sram_per_sm_bytes > 0);
    CHECK(g.l2_bytes > 0);
    CHECK(g.tdp_w >= 300);
    CHECK(g.scale_up_bytes_per_s > 0);
    CHECK(g.scale_up_domain >= 2);
    CHECK(g.pcie_bytes_per_s > 0);
    CHECK_FALSE(g.scale_up_name.empty());
    // Usable memory, where known, is near the vendor figure (GiB vs GB, reserved memory).
    if (g.hbm_usable_bytes > 0) {
      CHECK(g.hbm_usable_bytes > 0.9 * g.hbm_bytes);
      CHECK(g.hbm_usable_bytes < 1.1 * g.hbm_bytes);
    }
    // Each lower precision is at least as fast as the one above it, where it exists.
    if (g.fp8_flops_per_s > 0) CHECK(g.fp8_flops_per_s >= g.bf16_flops_per_s);
    if (g.fp4_flops_per_s > 0) CHECK(g.fp4_flops_per_s >= g.fp8_flops_per_s);
  }
  // Every catalog GPU is a contract GPU, and cpu-host (simrun validate's host, tested below).
  CHECK(catalog().gpu_ids().size() == kContractGpus.size() + 1);
}

TEST_CASE("GPU figures match the reference datasheets", "[topologies][catalog]") {
  // shared/reference/hardware.md §1-3 (nv-h100-whitepaper, nv-a100-datasheet, nv-gb200-nvl72,
  // amd-mi300-arch).
  const GpuSpec& h100 = catalog().gpu("h100-sxm", "t", "f");
  CHECK(h100.bf16_flops_per_s == Approx(989.4e12));
  CHECK(h100.peak_flops_per_s(Precision::fp16) == h100.bf16_flops_per_s);
  CHECK(h100.peak_flops_per_s(Precision::fp8) == Approx(1978.9e12));
  CHECK(h100.peak_flops_per_s(Precision::fp4) == 0);
  CHECK(h100.hbm_bytes == 80e9);
  CHECK(h100.hbm_usable_bytes == Approx(79.19 * kGiB));
  CHECK(h100.hbm_bytes_per_s == Approx(3.35e12));
  CHECK(h100.scale_up_bytes_per_s == Approx(450e9));  // 900 GB/s bidirectional
  CHECK(h100.sm_count == 132);
  CHECK(h100.l2_bytes == 50.0 * 1024 * 1024);
  CHECK(h100.sram_per_sm_bytes == 228.0 * 1024);
  CHECK(h100.tdp_w == 700);
  CHECK(h100.nvls);
  CHECK(h100.scale_up_kind == ScaleUpKind::nvswitch);

  const GpuSpec& a100 = catalog().gpu("a100-80gb", "t", "f");
  CHECK(a100.bf16_flops_per_s == Approx(312e12));
  CHECK(a100.fp8_flops_per_s == 0);
  CHECK_FALSE(a100.nvls);  // NVLS needs NVSwitch gen 3 (nccl-env)

  for (const char* id : {"gb200", "gb300"}) {
    const GpuSpec& g = catalog().gpu(id, "t", "f");
    CHECK(g.scale_up_domain == 72);
    CHECK(g.scale_up_kind == ScaleUpKind::nvswitch);
    CHECK(g.nvls);
    CHECK(g.scale_up_bytes_per_s == Approx(900e9));
  }
  for (const char* id : {"mi300x", "mi325x", "mi355x"}) {
    const GpuSpec& g = catalog().gpu(id, "t", "f");
    CHECK(g.vendor == "AMD");
    CHECK(g.scale_up_kind == ScaleUpKind::mesh);
    CHECK_FALSE(g.nvls);
    CHECK(g.scale_up_domain == 8);
  }
  CHECK(catalog().gpu("h100-pcie", "t", "f").scale_up_kind == ScaleUpKind::bridge);
  CHECK(catalog().gpu("h800", "t", "f").scale_up_bytes_per_s == Approx(200e9));
  CHECK(catalog().gpu("b200", "t", "f").fp4_flops_per_s == Approx(9000e12));
}

TEST_CASE("a GPU takes its architecture's compute defaults for the fields its entry leaves out",
          "[topologies][catalog]") {
  // Every Hopper part runs Hopper's kernels: one set of figures (topologies/architectures.json).
  const GpuSpec& h100 = catalog().gpu("h100-sxm", "test", "cluster.gpu");
  CHECK(h100.compute_defaults.gemm_max == 0.72);
  CHECK(h100.compute_defaults.attn_bwd_max == 0.42);
  CHECK(h100.compute_defaults.origin == "Hopper architecture");
  CHECK(h100.compute_defaults.source.rfind("Hopper: cuBLAS", 0) == 0);
  // GB200's measured GEMMs are its own; its attention Blackwell's.
  const GpuSpec& gb200 = catalog().gpu("gb200", "test", "cluster.gpu");
  CHECK(gb200.compute_defaults.gemm_max == 0.654);
  CHECK(gb200.compute_defaults.attn_fwd_max == 0.55);
  CHECK(gb200.compute_defaults.gemm_dim_half == 240);
  CHECK(gb200.compute_defaults.source.find("; the rest: B200's") != std::string::npos);
  // An architecture without figures leaves the generic defaults.
  const GpuSpec& mi300x = catalog().gpu("mi300x", "test", "cluster.gpu");
  CHECK_FALSE(mi300x.compute_defaults.gemm_max);
  CHECK(mi300x.compute_defaults.origin.empty());
  CHECK(gb200.compute_defaults.origin == "gb200's own, Blackwell architecture");
  // Every NVIDIA part has figures for its kernels: an architecture misspelt in a new file shows here.
  for (const std::string& id : catalog().gpu_ids()) {
    const GpuSpec& g = catalog().gpu(id, "test", "cluster.gpu");
    INFO(id);
    if (g.vendor == "NVIDIA") CHECK(g.compute_defaults.gemm_max);
  }
}

TEST_CASE("a GPU defined outside the catalog takes its architecture's defaults, its own fields first",
          "[topologies][catalog]") {
  std::ifstream in(kRoot / "gpus" / "h100-sxm.json");
  nlohmann::json part = nlohmann::json::parse(in);
  part.erase("aliases");  // read by the folder reader, beside the entry
  part["compute_defaults"] = {{"gemm_max", 0.6}, {"source", "our sweep"}};
  JsonReader reader(part, "mine.json");
  const GpuSpec mine = catalog().read_gpu_entry(reader, "mine");
  CHECK(mine.compute_defaults.gemm_max == 0.6);
  CHECK(mine.compute_defaults.fp8_gemm_max == 0.55);
  CHECK(mine.compute_defaults.origin == "mine's own, Hopper architecture");
  CHECK(mine.compute_defaults.source ==
        "our sweep; the rest: " + catalog().gpu("h100-sxm", "t", "gpu").compute_defaults.source);
  // A known architecture in other case would run the generic defaults without a word: refused.
  part["architecture"] = "hopper";
  JsonReader lower(part, "mine.json");
  CHECK_THROWS_WITH(
      catalog().read_gpu_entry(lower, "mine"),
      Catch::StartsWith("mine.json: architecture: \"hopper\" is not an architecture with compute "
                        "defaults; did you mean \"Hopper\"?"));
  part["architecture"] = "Blackwell-Ultra";  // a letter off
  JsonReader dashed(part, "mine.json");
  CHECK_THROWS_WITH(catalog().read_gpu_entry(dashed, "mine"),
                    Catch::Contains("did you mean \"Blackwell Ultra\"?"));
  // A new architecture is legal: the generic defaults, but for the fields the entry gives.
  part["architecture"] = "Rubin";
  JsonReader rubin(part, "mine.json");
  const GpuSpec next = catalog().read_gpu_entry(rubin, "mine");
  CHECK(next.compute_defaults.gemm_max == 0.6);
  CHECK_FALSE(next.compute_defaults.fp8_gemm_max);
  CHECK(next.compute_defaults.origin == "mine's own");
}

TEST_CASE("a malformed architectures file is refused, naming the file and the field",
          "[topologies][catalog][errors]") {
  const auto file = std::filesystem::temp_directory_path() / "simrun_test_architectures.json";
  const auto refusal = [&](const std::string& text) {
    std::ofstream(file) << text;
    try {
      read_architectures(file);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(refusal(R"({"about": "x", "architectures": {"Hopper": {"compute_defaults": {"gemm_max": 2,
             "source": "s"}}}})"),
             Catch::Contains("architectures.Hopper.compute_defaults.gemm_max: 2 is out of range"));
  CHECK_THAT(
      refusal(R"({"about": "x", "architectures": {"Hopper": {"compute_defaults": {"gemm_max": 0.7}}}})"),
      Catch::Contains("architectures.Hopper.compute_defaults.source"));
  CHECK_THAT(refusal(R"({"about": "x", "architectures": {"Hopper": {"defaults": {}}}})"),
             Catch::Contains("architectures.Hopper"));
  CHECK(refusal(R"({"about": "x", "architectures": {}})") == "(no error)");
}

TEST_CASE("every contract fabric id exists with bandwidth, latency and radix", "[topologies][catalog]") {
  const std::map<std::string, double> gbit = {
      {"ib-hdr", 200}, {"ib-ndr", 400}, {"ib-xdr", 800}, {"roce-400g", 400}};
  for (const auto& id : kContractFabrics) {
    INFO(id);
    const FabricSpec& f = catalog().fabric(id, "test", "cluster.fabric.kind");
    CHECK(f.id == id);
    CHECK(f.port_bytes_per_s == Approx(gbit.at(id) * 1e9 / 8));  // per direction
    CHECK(f.latency_s > 0);
    CHECK(f.latency_s < 10e-6);
    CHECK(f.switch_latency_s > 0);
    CHECK(f.switch_latency_s < f.latency_s);
    CHECK(f.switch_radix >= 32);
    CHECK_FALSE(f.source.empty());
  }
  CHECK(catalog().fabric_ids().size() == kContractFabrics.size());
}

TEST_CASE("unknown GPU and fabric ids list the known ones and suggest the nearest",
          "[topologies][catalog][errors]") {
  try {
    catalog().gpu("h100", "run.json", "cluster.gpu");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.file() == "run.json");
    CHECK(e.field() == "cluster.gpu");
    CHECK_THAT(e.why(), Catch::Contains("unknown GPU \"h100\""));
    CHECK_THAT(e.why(), Catch::Contains("known: a100-40gb, a100-80gb"));
    // The id the name starts with, not the one a letter away (h200).
    CHECK_THAT(e.why(), Catch::Contains("did you mean \"h100-sxm\"?"));
  }
  try {
    catalog().fabric("ib-ndr400", "run.json", "cluster.fabric.kind");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.field() == "cluster.fabric.kind");
    CHECK_THAT(e.why(), Catch::Contains("did you mean \"ib-ndr\"?"));
  }
}

TEST_CASE("malformed or incomplete hardware files are refused", "[topologies][catalog][errors]") {
  const auto dir = std::filesystem::temp_directory_path() / "simrun_test_hw_catalog";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "gpus");
  std::filesystem::create_directories(dir / "fabrics");
  std::filesystem::copy_file(kRoot / "fabrics" / "ib-ndr.json", dir / "fabrics" / "ib-ndr.json");
  std::ifstream in(kRoot / "gpus" / "h100-sxm.json");
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write_gpu = [&](const std::string& text) { std::ofstream(dir / "gpus" / "x.json") << text; };
  auto field_of_load = [&]() {
    try {
      HardwareCatalog::load(dir / "gpus", dir / "fabrics", kRoot / "architectures.json");
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("(no error)");
  };
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };

  write_gpu(good);
  CHECK(field_of_load() == "(no error)");
  write_gpu(edit("\"sm_count\": 132", "\"sm_count\": 0"));
  CHECK(field_of_load() == "sm_count");
  write_gpu(edit("\"bf16\": 989.4", "\"bf16\": -1"));
  CHECK(field_of_load() == "dense_tflops.bf16");
  write_gpu(edit("\"tdp_w\"", "\"tdp_watts\""));
  CHECK(field_of_load() == "tdp_w");  // the missing required field is reported first
  write_gpu(edit("\"kind\": \"nvswitch\"", "\"kind\": \"nvswich\""));
  CHECK(field_of_load() == "scale_up.kind");
  write_gpu(edit("\"source\": \"shared/reference", "\"sources\": \"shared/reference"));
  CHECK(field_of_load() == "source");
  const auto with_defaults = [&](const std::string& fields) {
    return edit("\"pcie_gb_per_s_per_direction\": 64,",
                "\"pcie_gb_per_s_per_direction\": 64, \"compute_defaults\": {" + fields + "},");
  };
  write_gpu(with_defaults(R"("gemm_max": 0.7, "sources": "our sweep")"));
  CHECK(field_of_load() == "compute_defaults.source");  // the defaults cite theirs too
  write_gpu(with_defaults(R"("gemm_max": 1.5, "source": "our sweep")"));
  CHECK(field_of_load() == "compute_defaults.gemm_max");
  write_gpu(edit("\"vendor\": \"NVIDIA\",", "\"vendor\": \"NVIDIA\", \"colour\": \"green\","));
  CHECK(field_of_load() == "colour");
  write_gpu(edit("\"hbm_usable_gib\": 79.19", "\"hbm_usable_gib\": 200"));
  CHECK(field_of_load() == "hbm_usable_gib");  // more usable memory than the part's 80 GB
  CHECK_THROWS_WITH(
      HardwareCatalog::load(dir / "gpus", dir / "fabrics", kRoot / "architectures.json"),
      Catch::Contains("200 is more than the part holds (usable memory is at most hbm_gb 80, read "
                      "as GiB: 80 GiB = 85.8993 GB)"));
  write_gpu(edit("\"hbm_usable_gib\": 79.19", "\"hbm_usable_gib\": 80"));
  CHECK(field_of_load() == "(no error)");  // "80 GB" is 80 GiB on the device
  write_gpu("{\"name\": ");
  CHECK(field_of_load() == "");  // malformed JSON: file-level error with line and column
  std::filesystem::remove_all(dir);
  CHECK_THROWS_AS(HardwareCatalog::load(dir / "gpus", dir / "fabrics", kRoot / "architectures.json"),
                  InputError);
}
