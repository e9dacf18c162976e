// Predicted vs measured NCCL busbw: every row of validation/data/measured-nccl.json that the
// catalog can express, simulated with catalog hardware; a markdown table for the README, then the
// rows left out and why.
//   build/bench/nccl_measured
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "simrun/common/json_reader.hpp"
#include "simrun/topologies/catalog.hpp"
#include "simrun/validation/nccl_reference.hpp"

using namespace simrun;

int main() {
  const std::filesystem::path data = SIMRUN_DATA_DIR;
  const HardwareCatalog catalog =
      HardwareCatalog::load(data / "topologies" / "gpus", data / "topologies" / "fabrics",
                            data / "topologies" / "architectures.json");
  const auto rows =
      nccl_reference_rows(load_json_file(std::string(SIMRUN_VALIDATION_DATA_DIR) + "/measured-nccl.json"));
  std::printf("| row | setup simulated | measured busbw (GB/s) | predicted (GB/s) | error |\n");
  std::printf("|---|---|---:|---:|---:|\n");
  int within = 0, expressed = 0;
  double sum_abs = 0;
  for (const NcclReferenceRow& r : rows) {
    if (!r.setup) continue;
    const GpuSpec& gpu = catalog.gpu(r.setup->gpu_id, "measured-nccl.json", r.id);
    const FabricSpec& fabric = catalog.fabric(r.setup->fabric_id, "measured-nccl.json", r.id);
    const double predicted = predict_reference_busbw(*r.setup, gpu, fabric);
    const double err = (predicted - r.measured_busbw_GBps) / r.measured_busbw_GBps;
    ++expressed;
    within += std::abs(err) <= 0.10 ? 1 : 0;
    sum_abs += std::abs(err);
    std::printf("| `%s` | %s | %.1f | %.1f | %+.1f%% |\n", r.id.c_str(), r.setup->how.c_str(),
                r.measured_busbw_GBps, predicted, err * 100);
  }
  std::printf("\n%d of %d expressible rows within 10%% (mean |error| %.1f%%).\n\nNot expressible:\n\n",
              within, expressed, expressed ? sum_abs / expressed * 100 : 0.0);
  for (const NcclReferenceRow& r : rows)
    if (!r.setup)
      std::printf("- `%s` (%s, %.0f GB/s): %s\n", r.id.c_str(), r.hardware.c_str(), r.measured_busbw_GBps,
                  r.not_expressible.c_str());
  return within == expressed ? 0 : 1;
}
