// calibration.json (DESIGN.md "Calibration file"): per GPU kind, fitted compute-model
// parameters and per link class collective α/β, overriding ComputeParams' defaults.
//
//   {
//     "source": "simrun validate on 2x DGX H100, 2025-01-10",        // optional, free text
//     "gpus": {
//       "h100-sxm": {                                                  // catalog GPU id
//         "gemm_max": 0.74, "gemm_dim_half": 40, "fp8_gemm_max": 0.55, "fp4_gemm_max": 0.5,
//         "attn_fwd_max": 0.62, "attn_bwd_max": 0.50, "attn_fa2_fwd_max": 0.33, "attn_fa2_bwd_max": 0.30,
//         "attn_seq_half": 128, "attn_head_dim_half": 16,
//         "mem_bw_fraction": 0.82, "launch_overhead_s": 3e-6,
//         "device": {"dense_tflops": {"fp32": 0.061, "bf16": 0.061}, "hbm_tb_per_s": 0.0093,
//                    "source": "simrun validate host microbenchmark"},  // measured figures
//         "links": {
//           "scale_up":  {"alpha_s": 6e-6,  "beta_s_per_byte": 2.8e-12},   // NVLink/xGMI domain
//           "scale_out": {"alpha_s": 12e-6, "beta_s_per_byte": 2.2e-11}    // NIC fabric
//         }
//       }
//     }
//   }
//
// Every field is optional (absent = the default); unknown keys are refused so a typo cannot
// silently leave a default in place. β is seconds per byte of the per-GPU bus bandwidth
// (1 / busbw), α the per-step latency of a ring/tree step.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

// Which links a collective's α/β describe: inside the scale-up domain, or over the NICs.
enum class CalibratedLink : uint8_t { scale_up, scale_out };

struct LinkCalibration {
  std::optional<double> alpha_s;          // per-step latency, e.g. 6e-6
  std::optional<double> beta_s_per_byte;  // 1 / achieved bus bandwidth per GPU, e.g. 2.8e-12
};

// A device's own measured figures, in the GPU catalog's field names (topologies/gpus/*.json):
// they replace the catalog entry's dense peaks and memory bandwidth (calibrated_device). `simrun
// validate` measures its host this way (exec/host_device.hpp), so a CPU is described like any GPU.
struct DeviceCalibration {
  std::optional<double> fp32_flops_per_s, bf16_flops_per_s;  // e.g. 61e9
  std::optional<double> hbm_bytes_per_s;                     // e.g. 9.3e9
  std::string source;
  bool empty() const { return !fp32_flops_per_s && !bf16_flops_per_s && !hbm_bytes_per_s; }
};

struct GpuCalibration {
  // Compute-model overrides, same names as ComputeParams.
  std::optional<double> gemm_max, gemm_dim_half, fp8_gemm_max, fp4_gemm_max;
  std::optional<double> attn_fwd_max, attn_bwd_max, attn_fa2_fwd_max, attn_fa2_bwd_max, attn_seq_half,
      attn_head_dim_half;
  std::optional<double> mem_bw_fraction, launch_overhead_s;
  LinkCalibration scale_up, scale_out;
  DeviceCalibration device;
};

class Calibration {
 public:
  Calibration() = default;  // empty: every default applies

  static Calibration load(const std::filesystem::path& path);
  static Calibration parse(const nlohmann::json& doc, const std::string& file);
  // The file's JSON (parse reads it back to an equal calibration).
  nlohmann::json to_json() const;

  // The defaults with this GPU kind's overrides applied.
  ComputeParams compute_params(const std::string& gpu_id, ComputeParams defaults = ComputeParams{}) const;
  LinkCalibration link(const std::string& gpu_id, CalibratedLink link) const;
  // An α-β link cost with this GPU kind's calibrated α and β (bytes_per_s = 1/β) where given,
  // as both fidelities apply them.
  LinkCost calibrated(const std::string& gpu_id, LinkCost cost) const {
    const LinkCalibration c =
        link(gpu_id,
             cost.link_class == LinkClass::scale_up ? CalibratedLink::scale_up : CalibratedLink::scale_out);
    if (c.alpha_s) cost.alpha_s = *c.alpha_s;
    if (c.beta_s_per_byte) cost.bytes_per_s = 1.0 / *c.beta_s_per_byte;
    if (c.alpha_s || c.beta_s_per_byte) {  // measured α/β: rings, as the event
      cost.domain_shape.reset();
      cost.fabric_group.reset();
    }
    return cost;
  }
  bool has_gpu(const std::string& gpu_id) const { return m_gpus.count(gpu_id) != 0; }
  // `gpu` with this calibration's measured device figures for its kind (DeviceCalibration).
  GpuSpec calibrated_device(GpuSpec gpu) const;
  // A warning when a calibration file was given but holds nothing for `gpu_id` (its keys name
  // other GPUs, or a misspelling of this one): every default then applies, silently otherwise.
  std::optional<std::string> unmatched_warning(const std::string& gpu_id) const;
  const std::string& source() const { return m_source; }

  void set_gpu(const std::string& gpu_id, const GpuCalibration& c) { m_gpus[gpu_id] = c; }
  void set_source(std::string source) { m_source = std::move(source); }

 private:
  std::string m_source;
  std::string m_file;  // the file parsed, "" for a calibration built in code
  std::map<std::string, GpuCalibration> m_gpus;
};

// `scenario` on its GPU as `calibration` describes it (Calibration::calibrated_device): what
// simulate() and estimate() run, so that peaks, MFU and every time agree with the device entry
// whoever calls them.
Scenario calibrated_scenario(const Scenario& scenario, const Calibration& calibration);

// The compute model both fidelities time kernels with: `base` (default: default_compute_params(gpu),
// or the caller's override) with `calibration`'s parameters for this GPU kind applied on top.
// The one place calibration reaches the compute model.
ComputeModel calibrated_compute_model(const GpuSpec& gpu, const Calibration& calibration,
                                      const std::optional<ComputeParams>& base = std::nullopt);

}  // namespace simrun
