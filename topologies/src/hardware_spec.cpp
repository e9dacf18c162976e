// Out-of-line pieces of hardware_spec.hpp.
#include "simrun/topologies/hardware_spec.hpp"

#include <algorithm>

namespace simrun {

double GpuSpec::peak_flops_per_s(Precision p) const {
  switch (p) {
    case Precision::fp32:
      return fp32_flops_per_s;
    case Precision::tf32:
      return tf32_flops_per_s;
    case Precision::bf16:
    case Precision::fp16:
      return bf16_flops_per_s;  // tensor cores run fp16 and bf16 at the same rate
    case Precision::fp8:
      return fp8_flops_per_s;
    case Precision::fp4:
      return fp4_flops_per_s;
  }
  return 0;
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
    case Precision::fp8:
      return "fp8";
    case Precision::fp4:
      return "fp4";
  }
  return "?";
}

bool rack_scale_domain(const GpuSpec& gpu, int64_t gpus_per_node) {
  const int64_t gpn = std::max<int64_t>(1, gpus_per_node);
  return gpu.scale_up_kind == ScaleUpKind::nvswitch && gpu.scale_up_domain > kBoardScaleUpDomain &&
         gpu.scale_up_domain > gpn && gpu.scale_up_domain % gpn == 0;
}

double host_pcie_bytes_per_s(const GpuSpec& gpu) {
  return gpu.pcie_bytes_per_s > 0 ? gpu.pcie_bytes_per_s : 32e9;
}

int64_t default_gpus_per_node(const GpuSpec& gpu) {
  if (gpu.scale_up_domain > kBoardScaleUpDomain) return 4;
  const bool domain_bounds_node =
      gpu.scale_up_kind == ScaleUpKind::nvswitch || gpu.scale_up_kind == ScaleUpKind::mesh;
  if (domain_bounds_node && gpu.scale_up_domain > 0)
    return std::min(gpu.scale_up_domain, kBoardScaleUpDomain);
  return kBoardScaleUpDomain;
}

}  // namespace simrun
