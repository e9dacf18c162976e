// Hardware as data: a GPU kind (compute, memory, scale-up link) and an inter-node fabric kind,
// as read from the catalog files in topologies/gpus/ and topologies/fabrics/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simrun {

enum class Precision { fp32, tf32, bf16, fp16, fp8, fp4 };

// How GPUs inside one scale-up domain are wired.
enum class ScaleUpKind {
  nvswitch,  // NVLink through NVSwitch chips: full bandwidth between any pair (HGX, NVL72)
  mesh,      // point-to-point full mesh, no switch (AMD Infinity Fabric): bandwidth split over peers
  bridge,    // NVLink bridge between a pair (H100 PCIe)
  pcie,      // no scale-up link: peers talk over PCIe
};

struct GpuSpec {
  std::string id;    // catalog id, e.g. "h100-sxm"
  std::string name;  // e.g. "NVIDIA H100 SXM5 80GB"
  // What the CUDA runtime calls this part (cudaDeviceProp::name, nvidia-smi's name), e.g.
  // "NVIDIA H100 80GB HBM3": how `simrun validate --backend cuda` knows the GPU it runs on.
  std::vector<std::string> cuda_names;
  std::string vendor;           // "NVIDIA" | "AMD" | "CPU" (a host simrun validate measures)
  std::string architecture;     // e.g. "Hopper"
  double hbm_bytes = 0;         // vendor capacity, e.g. 80e9
  double hbm_usable_bytes = 0;  // what the runtime reports, e.g. 85.0e9 (torch total_memory)
  double hbm_bytes_per_s = 0;   // e.g. 3.35e12
  // Dense (no sparsity) peak FLOP/s per precision; 0 = not supported in hardware.
  double fp32_flops_per_s = 0;   // e.g. 66.9e12
  double tf32_flops_per_s = 0;   // e.g. 494.7e12
  double bf16_flops_per_s = 0;   // also fp16, e.g. 989.4e12
  double fp8_flops_per_s = 0;    // e.g. 1978.9e12
  double fp4_flops_per_s = 0;    // e.g. 9000e12 (Blackwell)
  int64_t sm_count = 0;          // SMs (NVIDIA) or CUs (AMD), e.g. 132
  double sram_per_sm_bytes = 0;  // max shared memory / LDS per SM, e.g. 228e3
  double l2_bytes = 0;           // e.g. 50e6
  double tdp_w = 0;              // board power, e.g. 700
  // Scale-up (intra-domain) link.
  ScaleUpKind scale_up_kind = ScaleUpKind::nvswitch;
  std::string scale_up_name;        // e.g. "NVLink 4"
  double scale_up_bytes_per_s = 0;  // per GPU per direction, e.g. 450e9 (900 GB/s bidirectional)
  int64_t scale_up_domain = 8;      // GPUs in one scale-up domain, e.g. 8 (HGX) or 72 (NVL72)
  bool nvls = false;                // NVSwitch in-switch reduction (NVLink SHARP), Hopper+
  double pcie_bytes_per_s = 0;      // host link per direction, e.g. 64e9 (Gen5 x16)
  std::string source;               // citation for the figures
  // The compute model's defaults for this part's kernels ("compute_defaults" in its catalog
  // file, each field it leaves out its architecture's: topologies/architectures.json; names as in
  // ComputeParams and calibration.json); absent from both: the generic defaults.
  struct ComputeDefaults {
    std::optional<double> gemm_max, gemm_dim_half, fp8_gemm_max, fp4_gemm_max;             // e.g. 0.72, 240
    std::optional<double> attn_fwd_max, attn_bwd_max, attn_fa2_fwd_max, attn_fa2_bwd_max;  // e.g. 0.55
    std::string source;
    // Where the fields came from, for explanations: "gb200 catalog, Blackwell architecture",
    // "Hopper architecture"; empty: none (the generic defaults).
    std::string origin;
  };
  ComputeDefaults compute_defaults;
  // The MoE flex token dispatcher's NVLink kernels (DeepEP's intranode normal kernels, HybridEP;
  // "flex_dispatcher" in the catalog file): the bytes a rank receives per second through the
  // dispatch (tokens to their experts) and the combine (back), counted as DeepEP's benchmarks
  // count them: each token once per destination rank, the rank's own share included, at the
  // element size moved (fp8 with its scales where the dispatch is fp8). They run on a few SMs and
  // can be slower than the fabric. 0: no measured figure (the all-to-all is timed on the fabric).
  struct FlexDispatcher {
    double dispatch_bytes_per_s = 0;  // e.g. 169e9 (GB200, 24 SMs)
    double combine_bytes_per_s = 0;   // e.g. 135e9
    std::string source;               // the measurement, with the SMs it ran on
  };
  FlexDispatcher flex_dispatcher;

  double peak_flops_per_s(Precision p) const;  // dense peak for GEMMs in precision p (0 = unsupported)
};

// An inter-node network kind (one port = one NIC).
struct FabricSpec {
  std::string id;               // catalog id, e.g. "ib-ndr"
  std::string name;             // e.g. "InfiniBand NDR 400 Gb/s"
  double port_bytes_per_s = 0;  // per port per direction, e.g. 50e9 (400 Gb/s)
  double latency_s = 0;         // end-to-end small-message latency, e.g. 3e-6
  double switch_latency_s = 0;  // per switch hop, e.g. 200e-9
  int64_t switch_radix = 0;     // ports per switch, e.g. 64 (Quantum-2)
  std::string source;
};

// Largest scale-up domain that lives on one board (HGX/DGX: 8 GPUs on NVSwitch).
inline constexpr int64_t kBoardScaleUpDomain = 8;

// Whether the GPU's NVLink domain is rack-scale (NVL32, NVL72: NVSwitch trays joining nodes of
// gpus_per_node GPUs, 18 trays of 4 in an NVL72 rack) rather than a board that ends at the node:
// an NVSwitch domain larger than a board and a whole number of nodes. The one rule the cluster
// graph and the simulator's groups both read.
bool rack_scale_domain(const GpuSpec& gpu, int64_t gpus_per_node);

// GPUs per node when a cluster does not say: a compute tray of 4 (two Grace superchips of 2) for
// parts whose NVLink domain is rack-scale (GB200/GB300 NVL72: 18 trays of 4); the whole domain
// where an NVSwitch or mesh domain is smaller than a board (a 4-GPU board is a node of 4, as the
// cluster graph needs); else an HGX/DGX board of 8 (bridged and PCIe GPUs too).
int64_t default_gpus_per_node(const GpuSpec& gpu);

// A GPU's PCIe link to its host, per direction: the catalog's, or Gen4 x16's 32 GB/s where a
// part gives none.
double host_pcie_bytes_per_s(const GpuSpec& gpu);

const char* to_string(Precision p);

}  // namespace simrun
