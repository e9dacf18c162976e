// Strict reading of calibration.json; see calibration.hpp.
#include "simrun/sim/cost/calibration.hpp"

#include "simrun/common/echo.hpp"
#include "simrun/common/json_reader.hpp"

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
  r.finish();
  return g;
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

ComputeModel calibrated_compute_model(const GpuSpec& gpu, const Calibration& calibration,
                                      const std::optional<ComputeParams>& base) {
  return ComputeModel(gpu, calibration.compute_params(gpu.id, base.value_or(default_compute_params(gpu))));
}

}  // namespace simrun
