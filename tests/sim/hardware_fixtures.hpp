// The hardware specs the sim tests share, built in code (no catalog files) with the figures of
// the catalog entries they mirror and their sources.
#pragma once

#include "simrun/topologies/hardware_spec.hpp"

namespace simrun::test {

// H100 SXM5 80 GB (NVIDIA H100 whitepaper Table 3; H100 product page; 79.19 GiB usable).
inline GpuSpec h100_sxm() {
  GpuSpec g;
  g.id = "h100-sxm";
  g.name = "NVIDIA H100 SXM5 80GB";
  g.vendor = "NVIDIA";
  g.hbm_bytes = 80e9;
  g.hbm_usable_bytes = 79.19 * 1024.0 * 1024.0 * 1024.0;
  g.hbm_bytes_per_s = 3.35e12;
  g.fp32_flops_per_s = 66.9e12;
  g.tf32_flops_per_s = 494.7e12;
  g.bf16_flops_per_s = 989.4e12;
  g.fp8_flops_per_s = 1978.9e12;
  g.sm_count = 132;
  g.sram_per_sm_bytes = 228.0 * 1024.0;
  g.l2_bytes = 50.0 * 1024.0 * 1024.0;
  g.tdp_w = 700;
  g.scale_up_kind = ScaleUpKind::nvswitch;
  g.scale_up_name = "NVLink 4";
  g.scale_up_bytes_per_s = 450e9;
  g.scale_up_domain = 8;
  g.nvls = true;
  g.pcie_bytes_per_s = 64e9;
  return g;
}

// InfiniBand NDR 400 Gb/s (hardware.md §5.3): 50 GB/s per port per direction, QM9700 radix 64;
// latencies from the DeepSeek measurements (2.8 µs same leaf, 3.7 cross leaf: 0.45 µs per hop).
inline FabricSpec ib_ndr() {
  FabricSpec f;
  f.id = "ib-ndr";
  f.port_bytes_per_s = 50e9;
  f.latency_s = 2.8e-6;
  f.switch_latency_s = 450e-9;
  f.switch_radix = 64;
  return f;
}

}  // namespace simrun::test
