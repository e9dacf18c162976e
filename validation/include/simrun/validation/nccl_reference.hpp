// The measured NCCL bandwidths of validation/data/measured-nccl.json as simulator setups: each
// row's free-text hardware description mapped to catalog ids, GPU/NIC counts and the nccl-tests
// options it implies, or the reason the catalog cannot express it. Shared by the accuracy test
// and bench/nccl_measured.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/collectives/collective_tuner.hpp"
#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

struct NcclReferenceSetup {
  std::string gpu_id;     // catalog id, e.g. "h100-sxm"
  std::string fabric_id;  // catalog id, e.g. "ib-ndr" (unused on one node)
  int64_t num_gpus = 8;
  int64_t gpus_per_node = 8;
  int64_t nics_per_node = 8;
  CollectiveOp op = CollectiveOp::all_reduce;
  std::optional<Algorithm> algorithm;  // NCCL_ALGO the row was measured with, if any
  double max_bytes = 8.0 * (1 << 30);  // sweep 64 MiB..max_bytes (-f 2); prediction = peak busbw
  double busbw_divisor = 1;            // per-NIC rows: node busbw / NICs
  std::string how;                     // how the row is expressed (for the README table)
};

struct NcclReferenceRow {
  std::string id;
  std::string hardware;  // the row's own description
  double measured_busbw_GBps = 0;
  std::optional<NcclReferenceSetup> setup;
  std::string not_expressible;  // why, when setup is empty
};

// Rows of measured-nccl.json (the parsed document), each with its setup or its reason.
std::vector<NcclReferenceRow> nccl_reference_rows(const nlohmann::json& doc);

// Peak busbw (GB/s, divided by busbw_divisor) that the simulator predicts for a setup.
double predict_reference_busbw(const NcclReferenceSetup& setup, const GpuSpec& gpu, const FabricSpec& fabric);

}  // namespace simrun
