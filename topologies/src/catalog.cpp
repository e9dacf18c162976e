// The hardware catalog: topologies/gpus/*.json and topologies/fabrics/*.json, one kind per
// file, file stem = id, and user catalogs of the same files. Format: topologies/README.md.
//
// Units in the files are the ones vendors print, named in each key, and converted to SI here:
//   *_gb = 1e9 bytes, *_gib = 2^30 bytes, *_mib = 2^20 bytes, *_kib = 2^10 bytes,
//   *_tb_per_s = 1e12 bytes/s, *_gb_per_s_* = 1e9 bytes/s, *_gbit_per_s = 1e9 bits/s,
//   dense_tflops = 1e12 FLOP/s (dense, no sparsity), *_us = 1e-6 s, *_ns = 1e-9 s, *_w = watts.
// NVIDIA's "KB"/"MB" for shared memory and L2 are binary (device queries: H100 L2 = 52,428,800
// bytes = 50 MiB), hence _kib/_mib.
#include "simrun/topologies/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "simrun/common/catalog_files.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/common/text.hpp"
#include "simrun/common/units.hpp"

namespace simrun {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kBitsPerByte = 8.0;

// Sane upper bounds: generous multiples of the largest current parts.
constexpr double kMaxMemoryGb = 100'000;   // 100 TB per GPU
constexpr double kMaxTflops = 1e7;         // 10 EFLOP/s per GPU
constexpr double kMaxBandwidthTb = 1'000;  // 1 PB/s
constexpr int64_t kMaxDomain = 1'000'000;

ScaleUpKind scale_up_kind(const std::string& s) {
  if (s == "mesh") return ScaleUpKind::mesh;
  if (s == "bridge") return ScaleUpKind::bridge;
  if (s == "pcie") return ScaleUpKind::pcie;
  return ScaleUpKind::nvswitch;
}

template <typename Spec>
const Spec& find_or_throw(const std::map<std::string, Spec>& m,
                          const std::map<std::string, std::vector<std::string>>& aliases,
                          const std::string& id, const char* what, const std::string& file,
                          const std::string& field) {
  const auto it = m.find(id);
  if (it != m.end()) return it->second;
  std::vector<std::string> known;
  for (const auto& [k, v] : m) known.push_back(k);
  // An empty id is nearest to nothing: no suggestion.
  if (id.empty())
    throw InputError(file, field, std::string("no ") + what + " named (known: " + join_names(known) + ")");
  throw InputError(file, field,
                   std::string("unknown ") + what + " " + quoted_input(id) + " (known: " + join_names(known) +
                       "; did you mean \"" + nearest_id(id, aliases) + "\"?)");
}

// A "compute_defaults" object: a GPU entry's or an architecture's.
GpuSpec::ComputeDefaults read_compute_defaults(JsonReader& c) {
  GpuSpec::ComputeDefaults d;
  d.gemm_max = c.optional_number("gemm_max", 0.01, 1);
  d.gemm_dim_half = c.optional_number("gemm_dim_half", 0, 1e6);
  d.fp8_gemm_max = c.optional_number("fp8_gemm_max", 0.01, 1);
  d.fp4_gemm_max = c.optional_number("fp4_gemm_max", 0.01, 1);
  d.attn_fwd_max = c.optional_number("attn_fwd_max", 0.01, 1);
  d.attn_bwd_max = c.optional_number("attn_bwd_max", 0.01, 1);
  d.attn_fa2_fwd_max = c.optional_number("attn_fa2_fwd_max", 0.01, 1);
  d.attn_fa2_bwd_max = c.optional_number("attn_fa2_bwd_max", 0.01, 1);
  d.source = c.string("source");
  if (d.source.empty()) c.fail("source", "every set of defaults names its source");
  c.finish();
  return d;
}

// Each field `own` leaves out taken from `base` (its architecture's), the sources and origins joined.
GpuSpec::ComputeDefaults completed(GpuSpec::ComputeDefaults own, const GpuSpec::ComputeDefaults& base) {
  bool took = false;
  const auto fill = [&took](std::optional<double>& field, const std::optional<double>& from) {
    if (field || !from) return;
    field = from;
    took = true;
  };
  fill(own.gemm_max, base.gemm_max);
  fill(own.gemm_dim_half, base.gemm_dim_half);
  fill(own.fp8_gemm_max, base.fp8_gemm_max);
  fill(own.fp4_gemm_max, base.fp4_gemm_max);
  fill(own.attn_fwd_max, base.attn_fwd_max);
  fill(own.attn_bwd_max, base.attn_bwd_max);
  fill(own.attn_fa2_fwd_max, base.attn_fa2_fwd_max);
  fill(own.attn_fa2_bwd_max, base.attn_fa2_bwd_max);
  if (!took) return own;
  const auto join = [](const std::string& a, const std::string& b) {
    return a.empty() ? b : a + "; the rest: " + b;
  };
  own.source = join(own.source, base.source);
  own.origin = own.origin.empty() ? base.origin : own.origin + ", " + base.origin;
  return own;
}

}  // namespace

ArchitectureDefaults read_architectures(const std::filesystem::path& file) {
  const nlohmann::json doc = load_json_file(file);
  JsonReader r(doc, file.string());
  r.string("about");
  const nlohmann::json& names = r.raw("architectures");
  JsonReader list = r.object("architectures");
  ArchitectureDefaults out;
  for (const auto& item : names.items()) {
    const std::string& name = item.key();
    JsonReader entry = list.object(name);
    JsonReader c = entry.object("compute_defaults");
    GpuSpec::ComputeDefaults d = read_compute_defaults(c);
    d.origin = name + " architecture";
    out.emplace(name, std::move(d));
    entry.finish();
  }
  list.finish();
  r.finish();
  return out;
}

GpuSpec read_gpu(JsonReader& r, const std::string& id) {
  GpuSpec g;
  g.id = id;
  g.name = r.string("name");
  if (r.has("cuda_names")) {
    const nlohmann::json& list = r.raw("cuda_names");
    if (!list.is_array()) r.fail("cuda_names", "expected a list of the names CUDA reports for this part");
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string() || list[i].get<std::string>().empty() ||
          list[i].get<std::string>().size() > 256)
        r.fail("cuda_names[" + std::to_string(i) + "]", "is not a name (a string of 1 to 256 bytes)");
      g.cuda_names.push_back(list[i].get<std::string>());
    }
  }
  g.vendor = r.choice_or("vendor", "NVIDIA", {"NVIDIA", "AMD", "CPU"});
  g.architecture = r.string("architecture");
  g.hbm_bytes = r.number("hbm_gb", 0.001, kMaxMemoryGb) * kGB;
  if (r.has("hbm_usable_gib") && r.has("hbm_usable_gb"))
    r.fail("hbm_usable_gb", "give hbm_usable_gib or hbm_usable_gb, not both");
  if (const auto gib = r.optional_number("hbm_usable_gib", 0.001, kMaxMemoryGb))
    g.hbm_usable_bytes = *gib * kGiB;
  if (const auto gb = r.optional_number("hbm_usable_gb", 0.001, kMaxMemoryGb)) g.hbm_usable_bytes = *gb * kGB;
  // A part's nominal "80 GB" is 80 GiB on the device (an H100 reports 79.19 GiB usable), so its
  // usable memory is at most hbm_gb read as GiB.
  if (const double nominal = g.hbm_bytes / kGB * kGiB; g.hbm_usable_bytes > nominal) {
    const bool gib = r.has("hbm_usable_gib");
    r.fail(gib ? "hbm_usable_gib" : "hbm_usable_gb",
           fmt::format(
               "{:.6g} is more than the part holds (usable memory is at most hbm_gb {:.6g}, read as GiB: "
               "{:.6g} GiB = {:.6g} GB)",
               g.hbm_usable_bytes / (gib ? kGiB : kGB), g.hbm_bytes / kGB, nominal / kGiB, nominal / kGB));
  }
  g.hbm_bytes_per_s = r.number("hbm_tb_per_s", 0.001, kMaxBandwidthTb) * kTera;

  JsonReader peaks = r.object("dense_tflops");
  g.fp32_flops_per_s = peaks.number("fp32", 0.001, kMaxTflops) * kTera;
  g.tf32_flops_per_s = peaks.number_or("tf32", 0, 0, kMaxTflops) * kTera;
  g.bf16_flops_per_s = peaks.number("bf16", 0.001, kMaxTflops) * kTera;
  g.fp8_flops_per_s = peaks.number_or("fp8", 0, 0, kMaxTflops) * kTera;
  g.fp4_flops_per_s = peaks.number_or("fp4", 0, 0, kMaxTflops) * kTera;
  peaks.finish();

  g.sm_count = r.integer("sm_count", 1, 100'000);
  g.sram_per_sm_bytes = r.number("sram_per_sm_kib", 1, 1e6) * kKiB;
  g.l2_bytes = r.number("l2_mib", 0.001, 1e6) * kMiB;
  g.tdp_w = r.number("tdp_w", 1, 100'000);

  JsonReader up = r.object("scale_up");
  g.scale_up_kind = scale_up_kind(up.choice_or("kind", "nvswitch", {"nvswitch", "mesh", "bridge", "pcie"}));
  g.scale_up_name = up.string("name");
  g.scale_up_bytes_per_s = up.number("gb_per_s_per_direction", 0.001, kMaxBandwidthTb * 1000) * kGB;
  g.scale_up_domain = up.integer("domain", 1, kMaxDomain);
  g.nvls = up.boolean_or("nvls", false);
  up.finish();
  if (g.nvls && g.scale_up_kind != ScaleUpKind::nvswitch)
    r.fail("scale_up.nvls", "NVLink SHARP needs kind \"nvswitch\"");

  g.pcie_bytes_per_s = r.number("pcie_gb_per_s_per_direction", 0.001, 100'000) * kGB;
  if (r.has("compute_defaults")) {
    JsonReader c = r.object("compute_defaults");
    g.compute_defaults = read_compute_defaults(c);
    g.compute_defaults.origin = id + "'s own";
  }
  if (r.has("flex_dispatcher")) {
    JsonReader f = r.object("flex_dispatcher");
    GpuSpec::FlexDispatcher& d = g.flex_dispatcher;
    d.dispatch_bytes_per_s = f.number("dispatch_gb_per_s", 0.001, kMaxBandwidthTb * 1000) * kGB;
    d.combine_bytes_per_s = f.number("combine_gb_per_s", 0.001, kMaxBandwidthTb * 1000) * kGB;
    d.source = f.string("source");
    if (d.source.empty()) f.fail("source", "every measured figure names its source");
    f.finish();
  }
  g.source = r.string("source");
  if (g.source.empty()) r.fail("source", "every entry names its source");
  r.string_or("assumed", "");  // free text: the fields that had to be assumed, and why
  r.finish();
  return g;
}

FabricSpec read_fabric(JsonReader& r, const std::string& id) {
  FabricSpec f;
  f.id = id;
  f.name = r.string("name");
  f.port_bytes_per_s = r.number("port_gbit_per_s", 0.001, 1e6) * 1e9 / kBitsPerByte;
  f.latency_s = r.number("latency_us", 0, 1e6) * 1e-6;
  f.switch_latency_s = r.number("switch_latency_ns", 0, 1e9) * 1e-9;
  f.switch_radix = r.integer("switch_radix", 2, 100'000);
  f.source = r.string("source");
  if (f.source.empty()) r.fail("source", "every entry names its source");
  r.string_or("assumed", "");
  r.finish();
  return f;
}

HardwareCatalog HardwareCatalog::load(const std::filesystem::path& gpus_dir,
                                      const std::filesystem::path& fabrics_dir,
                                      const std::filesystem::path& architectures_file) {
  HardwareCatalog c;
  c.m_architectures = read_architectures(architectures_file);
  c.add_folders(gpus_dir, fabrics_dir, FolderRule::required);
  return c;
}

void HardwareCatalog::add(const std::filesystem::path& gpus_dir, const std::filesystem::path& fabrics_dir) {
  add_folders(gpus_dir, fabrics_dir, FolderRule::optional);
}

void HardwareCatalog::add_folders(const std::filesystem::path& gpus_dir,
                                  const std::filesystem::path& fabrics_dir, FolderRule rule) {
  const auto read_completed_gpu = [this](JsonReader& r, const std::string& id) {
    return read_gpu_entry(r, id);
  };
  read_catalog_folder(gpus_dir, "GPU", read_completed_gpu, rule, m_gpus, m_gpu_aliases);
  read_catalog_folder(fabrics_dir, "fabric", read_fabric, rule, m_fabrics, m_fabric_aliases);
}

GpuSpec HardwareCatalog::read_gpu_entry(JsonReader& r, const std::string& id) const {
  GpuSpec gpu = read_gpu(r, id);
  if (const auto it = m_architectures.find(gpu.architecture); it != m_architectures.end()) {
    gpu.compute_defaults = completed(gpu.compute_defaults, it->second);
    return gpu;
  }
  // A near miss ("hopper", "Hopper ", "Blackwell-Ultra") would run the generic defaults without a
  // word; a name unlike any (AMD's, a new one) is an architecture without figures.
  for (const auto& [name, defaults] : m_architectures)
    if (edit_distance(ascii_lower(name), ascii_lower(gpu.architecture)) <= 2)
      r.fail("architecture",
             quoted_input(gpu.architecture) + " is not an architecture with compute defaults; did you mean " +
                 quoted_input(name) +
                 "? (topologies/architectures.json; another name takes the generic defaults)");
  return gpu;
}

const GpuSpec& HardwareCatalog::gpu(const std::string& id, const std::string& file,
                                    const std::string& field) const {
  return find_or_throw(m_gpus, m_gpu_aliases, id, "GPU", file, field);
}

const FabricSpec& HardwareCatalog::fabric(const std::string& id, const std::string& file,
                                          const std::string& field) const {
  return find_or_throw(m_fabrics, m_fabric_aliases, id, "fabric", file, field);
}

const GpuSpec* HardwareCatalog::gpu_named_by_cuda(const std::string& cuda_name) const {
  for (const auto& [id, g] : m_gpus)
    for (const std::string& n : g.cuda_names)
      if (n == cuda_name) return &g;
  return nullptr;
}

std::vector<std::string> HardwareCatalog::gpu_ids() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : m_gpus) out.push_back(k);
  return out;
}

std::vector<std::string> HardwareCatalog::fabric_ids() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : m_fabrics) out.push_back(k);
  return out;
}

}  // namespace simrun
