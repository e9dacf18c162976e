// Row-by-row reading of measured-nccl.json (see nccl_reference.hpp). The mapping is by row id:
// the rows describe their setups in prose ("8x A100 SXM (HGX, NVSwitch), 4x200Gb IB").
#include "simrun/validation/nccl_reference.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "simrun/sim/collectives/collective_sweep.hpp"

namespace simrun {

namespace {

NcclReferenceSetup setup(std::string gpu, std::string fabric, int64_t gpus, int64_t gpn, int64_t nics,
                         std::optional<Algorithm> algo, double max_bytes, std::string how,
                         double divisor = 1) {
  NcclReferenceSetup s;
  s.gpu_id = std::move(gpu);
  s.fabric_id = std::move(fabric);
  s.num_gpus = gpus;
  s.gpus_per_node = gpn;
  s.nics_per_node = nics;
  s.algorithm = algo;
  s.max_bytes = max_bytes;
  s.how = std::move(how);
  s.busbw_divisor = divisor;
  return s;
}

struct Mapping {
  std::optional<NcclReferenceSetup> setup;
  std::string not_expressible;
};

const std::map<std::string, Mapping>& mappings() {
  static const std::map<std::string, Mapping> m = {
      {"a100_8gpu_intranode_allreduce",
       {setup("a100-80gb", "ib-hdr", 8, 8, 8, std::nullopt, 4 * kGiB, "1 node x 8 a100-80gb, -e 4G"), ""}},
      {"a100_8gpu_intranode_expected",
       {setup("a100-80gb", "ib-hdr", 8, 8, 8, std::nullopt, 8 * kGiB, "1 node x 8 a100-80gb"), ""}},
      {"a100_8gpu_hpe_apollo_allreduce",
       {std::nullopt,
        "measured in nccl-tests thread mode (-t 8, one process driving 8 GPUs) up to 1 GB, which the row "
        "itself calls "
        "below peak; host-thread launch overhead is not in the catalog"}},
      {"dgxa100_multinode_allreduce_8x200",
       {setup("a100-80gb", "ib-hdr", 32, 8, 8, std::nullopt, 8 * kGiB,
              "4 nodes x 8 a100-80gb, 8 x ib-hdr per node (\"multi-node\": 4 chosen)"),
        ""}},
      {"per_nic_rule_hdr",
       {setup("a100-80gb", "ib-hdr", 4, 1, 1, Algorithm::ring, 8 * kGiB,
              "4 nodes x 1 GPU, 1 x ib-hdr each, NCCL_ALGO=Ring (busbw = one NIC)"),
        ""}},
      {"a100_40gb_3nodes_4xhdr",
       {setup("a100-40gb", "ib-hdr", 24, 8, 4, std::nullopt, 128.0 * 1024 * 1024,
              "3 nodes x 8 a100-40gb, 4 x ib-hdr per node, -e 128M (where the row peaked)"),
        ""}},
      {"a100_2nodes_4x200_allreduce_a",
       {setup("a100-80gb", "ib-hdr", 16, 8, 4, std::nullopt, 8 * kGiB,
              "2 nodes x 8 a100-80gb, 4 x ib-hdr per node"),
        ""}},
      {"a100_2nodes_4x200_allreduce_b",
       {setup("a100-80gb", "ib-hdr", 16, 8, 4, std::nullopt, 8 * kGiB,
              "2 nodes x 8 a100-80gb, 4 x ib-hdr per node, -e 8G"),
        ""}},
      {"h100_8gpu_nvls_allreduce",
       {setup("h100-sxm", "ib-ndr", 8, 8, 8, std::nullopt, 8 * kGiB,
              "1 node x 8 h100-sxm (tuner picks NVLS)"),
        ""}},
      {"h100_8gpu_ring_effective",
       {setup("h100-sxm", "ib-ndr", 8, 8, 8, Algorithm::ring, 8 * kGiB,
              "1 node x 8 h100-sxm, NCCL_ALGO=Ring"),
        ""}},
      {"h100_8gpu_allreduce_476",
       {setup("h100-sxm", "ib-ndr", 8, 8, 8, std::nullopt, 8 * kGiB,
              "1 node x 8 h100-sxm (tuner picks NVLS)"),
        ""}},
      {"h100_ndr_per_nic",
       {setup("h100-sxm", "ib-ndr", 16, 8, 8, Algorithm::ring, 8 * kGiB,
              "2 nodes x 8 h100-sxm, 8 x ib-ndr per node, NCCL_ALGO=Ring, busbw / 8 NICs", 8),
        ""}},
      {"h100_2hosts_8x400",
       {setup("h100-sxm", "ib-ndr", 16, 8, 8, Algorithm::ring, 8 * kGiB,
              "2 nodes x 8 h100-sxm, 8 x ib-ndr per node, NCCL_ALGO=Ring (the row: 2-node TREE inflates)"),
        ""}},
      {"h800_8gpu_allreduce",
       {setup("h800", "ib-ndr", 8, 8, 8, std::nullopt, 8 * kGiB, "1 node x 8 h800 (tuner picks NVLS)"), ""}},
  };
  return m;
}

}  // namespace

std::vector<NcclReferenceRow> nccl_reference_rows(const nlohmann::json& doc) {
  std::vector<NcclReferenceRow> rows;
  for (const auto& r : doc) {
    NcclReferenceRow row;
    row.id = r.value("id", "");
    row.hardware = r.value("hardware", "");
    row.measured_busbw_GBps =
        r.contains("busbw_GBps") && r["busbw_GBps"].is_number() ? r["busbw_GBps"].get<double>() : 0;
    const auto it = mappings().find(row.id);
    if (it == mappings().end()) {
      row.not_expressible = "row not known to simrun's mapping (new in measured-nccl.json)";
    } else {
      row.setup = it->second.setup;
      row.not_expressible = it->second.not_expressible;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

double predict_reference_busbw(const NcclReferenceSetup& s, const GpuSpec& gpu, const FabricSpec& fabric) {
  ClusterGraphSpec spec;
  spec.gpu = gpu;
  spec.fabric = fabric;
  spec.num_gpus = s.num_gpus;
  spec.gpus_per_node = s.gpus_per_node;
  spec.nics_per_node = s.nics_per_node;
  SweepOptions o;
  o.op = s.op;
  o.algorithm = s.algorithm;
  o.max_bytes = s.max_bytes;
  o.min_bytes = std::min(s.max_bytes, 64.0 * 1024 * 1024);
  o.factor = 2;
  const auto rows = run_collective_sweep(std::make_shared<ClusterGraph>(spec), o);
  double peak = 0;
  for (const SweepRow& r : rows) peak = std::max(peak, r.busbw_GBps);
  return peak / s.busbw_divisor;
}

}  // namespace simrun
