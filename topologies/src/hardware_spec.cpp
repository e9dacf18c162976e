// Out-of-line pieces of hardware_spec.hpp.
#include "simrun/topologies/hardware_spec.hpp"

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

}  // namespace simrun
