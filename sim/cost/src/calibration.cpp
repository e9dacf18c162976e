// Strict reading of calibration.json; see calibration.hpp.
#include "simrun/sim/cost/calibration.hpp"

#include "simrun/common/echo.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/common/units.hpp"

namespace simrun {

std::optional<std::string> Calibration::unmatched_warning(const std::string& gpu_id) const {
  if (m_file.empty() || has_gpu(gpu_id)) return std::nullopt;
  std::string keys;
  for (const auto& [id, unused] : m_gpus) keys += (keys.empty() ? "" : ", ") + id;
  return "calibration " + printable(m_file) + " has no entry for " + gpu_id +
         " (its GPUs: " + (keys.empty() ? "none" : printable(keys)) + "): the catalog's defaults apply";
}
namespace {

LinkCalibration read_link(JsonReader& r) {
  LinkCalibration l;
  l.alpha_s = r.optional_number("alpha_s", 0.0, 1e-2);
  l.beta_s_per_byte = r.optional_number("beta_s_per_byte", 1e-15, 1e-6);
  r.finish();
  return l;
}

DeviceCalibration read_device(JsonReader& r) {
  DeviceCalibration d;
  if (r.has("dense_tflops")) {
    JsonReader peaks = r.object("dense_tflops");
    if (const auto v = peaks.optional_number("fp32", 1e-6, 1e6)) d.fp32_flops_per_s = *v * kTera;
    if (const auto v = peaks.optional_number("bf16", 1e-6, 1e6)) d.bf16_flops_per_s = *v * kTera;
    peaks.finish();
  }
  if (const auto v = r.optional_number("hbm_tb_per_s", 1e-6, 1e3)) d.hbm_bytes_per_s = *v * kTera;
  d.source = r.string_or("source", "");
  r.finish();
  return d;
}

GpuCalibration read_gpu(JsonReader& r) {
  GpuCalibration g;
  g.gemm_max = r.optional_number("gemm_max", 0.01, 1.0);
  g.gemm_dim_half = r.optional_number("gemm_dim_half", 0.0, 1e5);
  g.fp8_gemm_max = r.optional_number("fp8_gemm_max", 0.01, 1.0);
  g.fp4_gemm_max = r.optional_number("fp4_gemm_max", 0.01, 1.0);
  g.attn_fwd_max = r.optional_number("attn_fwd_max", 0.01, 1.0);
  g.attn_bwd_max = r.optional_number("attn_bwd_max", 0.01, 1.0);
  g.attn_fa2_fwd_max = r.optional_number("attn_fa2_fwd_max", 0.01, 1.0);
  g.attn_fa2_bwd_max = r.optional_number("attn_fa2_bwd_max", 0.01, 1.0);
  g.attn_seq_half = r.optional_number("attn_seq_half", 0.0, 1e6);
  g.attn_head_dim_half = r.optional_number("attn_head_dim_half", 0.0, 1e4);
  g.mem_bw_fraction = r.optional_number("mem_bw_fraction", 0.01, 1.0);
  g.launch_overhead_s = r.optional_number("launch_overhead_s", 0.0, 1e-2);
  if (r.has("links")) {
    JsonReader links = r.object("links");
    if (links.has("scale_up")) {
      JsonReader up = links.object("scale_up");
      g.scale_up = read_link(up);
    }
    if (links.has("scale_out")) {
      JsonReader out = links.object("scale_out");
      g.scale_out = read_link(out);
    }
    links.finish();
  }
  if (r.has("device")) {
    JsonReader device = r.object("device");
    g.device = read_device(device);
  }
  r.finish();
  return g;
}

void put(nlohmann::json& j, const char* key, const std::optional<double>& v, double scale = 1) {
  if (v) j[key] = *v / scale;
}

nlohmann::json link_json(const LinkCalibration& l) {
  nlohmann::json j = nlohmann::json::object();
  put(j, "alpha_s", l.alpha_s);
  put(j, "beta_s_per_byte", l.beta_s_per_byte);
  return j;
}

nlohmann::json gpu_json(const GpuCalibration& g) {
  nlohmann::json j = nlohmann::json::object();
  put(j, "gemm_max", g.gemm_max);
  put(j, "gemm_dim_half", g.gemm_dim_half);
  put(j, "fp8_gemm_max", g.fp8_gemm_max);
  put(j, "fp4_gemm_max", g.fp4_gemm_max);
  put(j, "attn_fwd_max", g.attn_fwd_max);
  put(j, "attn_bwd_max", g.attn_bwd_max);
  put(j, "attn_fa2_fwd_max", g.attn_fa2_fwd_max);
  put(j, "attn_fa2_bwd_max", g.attn_fa2_bwd_max);
  put(j, "attn_seq_half", g.attn_seq_half);
  put(j, "attn_head_dim_half", g.attn_head_dim_half);
  put(j, "mem_bw_fraction", g.mem_bw_fraction);
  put(j, "launch_overhead_s", g.launch_overhead_s);
  nlohmann::json links = nlohmann::json::object();
  if (g.scale_up.alpha_s || g.scale_up.beta_s_per_byte) links["scale_up"] = link_json(g.scale_up);
  if (g.scale_out.alpha_s || g.scale_out.beta_s_per_byte) links["scale_out"] = link_json(g.scale_out);
  if (!links.empty()) j["links"] = links;
  if (!g.device.empty()) {
    nlohmann::json d = nlohmann::json::object();
    nlohmann::json peaks = nlohmann::json::object();
    put(peaks, "fp32", g.device.fp32_flops_per_s, kTera);
    put(peaks, "bf16", g.device.bf16_flops_per_s, kTera);
    if (!peaks.empty()) d["dense_tflops"] = peaks;
    put(d, "hbm_tb_per_s", g.device.hbm_bytes_per_s, kTera);
    if (!g.device.source.empty()) d["source"] = g.device.source;
    j["device"] = d;
  }
  return j;
}

void apply(std::optional<double> v, double& target) {
  if (v) target = *v;
}

}  // namespace

Calibration Calibration::parse(const nlohmann::json& doc, const std::string& file) {
  Calibration c;
  JsonReader top(doc, file);
  c.m_source = top.string_or("source", "");
  c.m_file = file;
  top.accept("version");
  if (top.has("gpus")) {
    JsonReader gpus = top.object("gpus");
    for (const auto& item : doc.at("gpus").items()) {
      JsonReader g = gpus.object(item.key());
      c.m_gpus[item.key()] = read_gpu(g);
    }
    gpus.finish();
  }
  top.finish();
  return c;
}

Calibration Calibration::load(const std::filesystem::path& path) {
  return parse(load_json_file(path), path.string());
}

nlohmann::json Calibration::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  if (!m_source.empty()) j["source"] = m_source;
  nlohmann::json gpus = nlohmann::json::object();
  for (const auto& [id, g] : m_gpus) gpus[id] = gpu_json(g);
  j["gpus"] = gpus;
  return j;
}

GpuSpec Calibration::calibrated_device(GpuSpec gpu) const {
  const auto it = m_gpus.find(gpu.id);
  if (it == m_gpus.end()) return gpu;
  const DeviceCalibration& d = it->second.device;
  apply(d.fp32_flops_per_s, gpu.fp32_flops_per_s);
  apply(d.bf16_flops_per_s, gpu.bf16_flops_per_s);
  apply(d.hbm_bytes_per_s, gpu.hbm_bytes_per_s);
  return gpu;
}

ComputeParams Calibration::compute_params(const std::string& gpu_id, ComputeParams p) const {
  const auto it = m_gpus.find(gpu_id);
  if (it == m_gpus.end()) return p;
  const GpuCalibration& g = it->second;
  apply(g.gemm_max, p.gemm_max);
  apply(g.gemm_dim_half, p.gemm_dim_half);
  apply(g.fp8_gemm_max, p.fp8_gemm_max);
  apply(g.fp4_gemm_max, p.fp4_gemm_max);
  apply(g.attn_fwd_max, p.attn_fwd_max);
  apply(g.attn_bwd_max, p.attn_bwd_max);
  apply(g.attn_fa2_fwd_max, p.attn_fa2_fwd_max);
  apply(g.attn_fa2_bwd_max, p.attn_fa2_bwd_max);
  apply(g.attn_seq_half, p.attn_seq_half);
  apply(g.attn_head_dim_half, p.attn_head_dim_half);
  apply(g.mem_bw_fraction, p.mem_bw_fraction);
  apply(g.launch_overhead_s, p.launch_overhead_s);
  return p;
}

LinkCalibration Calibration::link(const std::string& gpu_id, CalibratedLink link) const {
  const auto it = m_gpus.find(gpu_id);
  if (it == m_gpus.end()) return {};
  return link == CalibratedLink::scale_up ? it->second.scale_up : it->second.scale_out;
}

Scenario calibrated_scenario(const Scenario& scenario, const Calibration& calibration) {
  Scenario s = scenario;
  s.cluster.gpu = calibration.calibrated_device(s.cluster.gpu);
  return s;
}

ComputeModel calibrated_compute_model(const GpuSpec& gpu, const Calibration& calibration,
                                      const std::optional<ComputeParams>& base) {
  return ComputeModel(gpu, calibration.compute_params(gpu.id, base.value_or(default_compute_params(gpu))));
}

}  // namespace simrun
