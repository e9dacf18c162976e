// calibration.json (sim/cost/calibration.hpp): written and read back alike, its device entry
// applied to its GPU kind only, read as strictly as the rest of the file.
#include <catch2/catch.hpp>

#include "simrun/common/error.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "workload_test_util.hpp"

using namespace simrun;

TEST_CASE("calibration: the file it writes reads back the same, the device entry included",
          "[sim][cost][calibration]") {
  GpuCalibration c;
  c.gemm_max = 0.9;
  c.mem_bw_fraction = 0.4;
  c.launch_overhead_s = 2e-6;
  c.scale_up.alpha_s = 3e-6;
  c.scale_up.beta_s_per_byte = 4e-10;
  c.device.fp32_flops_per_s = 30e9;
  c.device.bf16_flops_per_s = 30e9;
  c.device.hbm_bytes_per_s = 9e9;
  c.device.source = "test";
  Calibration written;
  written.set_source("round trip");
  written.set_gpu("cpu-host", c);
  const Calibration read = Calibration::parse(written.to_json(), "calibration.json");
  // simulate() and estimate() run the scenario on the calibrated device.
  const Scenario sc =
      test::parse_scenario_text(R"({"model": "llama3-8b", "cluster": {"gpu": "cpu-host", "num_gpus": 4,
    "gpus_per_node": 4}, "layout": {"tp": 1, "pp": 1, "global_batch": 4}})");
  CHECK(calibrated_scenario(sc, read).cluster.gpu.fp32_flops_per_s == Approx(30e9));
  CHECK(read.to_json() == written.to_json());
  const GpuSpec device = read.calibrated_device(test::gpu("cpu-host"));
  CHECK(device.fp32_flops_per_s == Approx(30e9));
  CHECK(device.hbm_bytes_per_s == Approx(9e9));
  CHECK(read.compute_params("cpu-host").gemm_max == Approx(0.9));
  // Another GPU kind keeps its catalog figures.
  CHECK(read.calibrated_device(test::gpu("h100-sxm")).fp32_flops_per_s ==
        test::gpu("h100-sxm").fp32_flops_per_s);
  // The device entry is read strictly, as the rest of the file.
  nlohmann::json bad = written.to_json();
  bad["gpus"]["cpu-host"]["device"]["hbm_tb_per_sec"] = 1;
  CHECK_THROWS_AS(Calibration::parse(bad, "calibration.json"), InputError);
}
