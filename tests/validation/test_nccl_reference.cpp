// Accuracy against measured NCCL bandwidths (validation/data/measured-nccl.json): every row
// the catalog can express is predicted within 10% of its large-message busbw.
#include <catch2/catch.hpp>
#include <cmath>

#include "collective_fixtures.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/validation/nccl_reference.hpp"

using namespace simrun;
using namespace simrun::test;

namespace {

GpuSpec gpu_by_id(const std::string& id) {
  if (id == "h100-sxm") return h100_sxm();
  if (id == "h800") return h800();
  if (id == "a100-80gb" || id == "a100-40gb") return a100();  // same NVLink 3 board (hardware.md §3)
  FAIL("no test spec for GPU " << id);
  return {};
}

FabricSpec fabric_by_id(const std::string& id) {
  if (id == "ib-ndr") return ib_ndr();
  if (id == "ib-hdr") return hdr();
  FAIL("no test spec for fabric " << id);
  return {};
}

}  // namespace

TEST_CASE("measured NCCL busbw rows are predicted within 10%", "[sim][collectives][reference]") {
  const auto doc = load_json_file(std::string(SIMRUN_VALIDATION_DATA_DIR) + "/measured-nccl.json");
  const auto rows = nccl_reference_rows(doc);
  REQUIRE(rows.size() >= 14);
  int expressed = 0;
  for (const NcclReferenceRow& row : rows) {
    INFO(row.id << ": " << row.hardware);
    if (!row.setup) {
      CHECK_FALSE(row.not_expressible.empty());  // a reason for every row left out
      continue;
    }
    ++expressed;
    const double predicted =
        predict_reference_busbw(*row.setup, gpu_by_id(row.setup->gpu_id), fabric_by_id(row.setup->fabric_id));
    INFO("predicted " << predicted << " GB/s, measured " << row.measured_busbw_GBps << " GB/s");
    CHECK(std::abs(predicted - row.measured_busbw_GBps) <= 0.10 * row.measured_busbw_GBps);
  }
  CHECK(expressed >= 13);
}
