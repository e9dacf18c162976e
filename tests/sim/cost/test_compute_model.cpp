// The roofline × efficiency op timing and the calibration file that overrides its defaults.
#include <catch2/catch.hpp>

#include "hardware_fixtures.hpp"
#include "simrun/common/error.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

using namespace simrun;
using simrun::test::h100_sxm;

namespace {
OpShape gemm(double m, double n, double k, Precision p = Precision::bf16) {
  OpShape s;
  s.cls = OpClass::gemm;
  s.m = m;
  s.n = n;
  s.k = k;
  s.precision = p;
  s.bytes = 2 * (m * k + k * n + m * n);
  return s;
}
}  // namespace

TEST_CASE("large GEMMs approach gemm_max of the dense peak, small ones are less efficient",
          "[sim][compute_model]") {
  ComputeParams p;
  p.launch_overhead_s = 0;
  const ComputeModel cm(h100_sxm(), p);
  const double big = cm.gemm_efficiency(16384, 16384, 16384, Precision::bf16);
  CHECK(big == Approx(p.gemm_max).epsilon(0.01));
  CHECK(cm.gemm_efficiency(8192, 128, 8192, Precision::bf16) < 0.8 * big);
  // Time of a big GEMM = flops / (peak · eff).
  const OpShape g = gemm(8192, 8192, 8192);
  const double expect =
      2.0 * 8192.0 * 8192 * 8192 / (989.4e12 * cm.gemm_efficiency(8192, 8192, 8192, Precision::bf16));
  CHECK(cm.op_seconds(g) == Approx(expect).epsilon(1e-9));
  // More work never takes less time; efficiency never decreases with size.
  double last_t = 0, last_e = 0;
  for (double d = 64; d <= 32768; d *= 2) {
    const double t = cm.op_seconds(gemm(d, d, d));
    const double e = cm.gemm_efficiency(d, d, d, Precision::bf16);
    CHECK(t > last_t);
    CHECK(e >= last_e);
    last_t = t;
    last_e = e;
  }
}

TEST_CASE("fp8 GEMMs run at the fp8 rate, faster than bf16 but not 2x", "[sim][compute_model]") {
  const ComputeModel cm(h100_sxm(), ComputeParams{});
  const double bf16 = cm.op_seconds(gemm(8192, 8192, 8192));
  const double fp8 = cm.op_seconds(gemm(8192, 8192, 8192, Precision::fp8));
  CHECK(fp8 < bf16);
  CHECK(fp8 > 0.5 * bf16);
}

TEST_CASE("memory-bound ops run at the HBM roofline plus the launch overhead", "[sim][compute_model]") {
  ComputeParams p;
  const ComputeModel cm(h100_sxm(), p);
  OpShape m;
  m.cls = OpClass::memory;
  m.bytes = 1e9;
  CHECK(cm.op_seconds(m) == Approx(1e9 / (3.35e12 * p.mem_bw_fraction) + p.launch_overhead_s));
}

TEST_CASE("flash attention avoids the s^2 HBM traffic of unfused attention", "[sim][compute_model]") {
  const ComputeModel cm(h100_sxm(), ComputeParams{});
  OpShape a;
  a.cls = OpClass::attention_fwd;
  a.tokens = 8192;
  a.seq_kv = 8192;
  a.head_dim = 128;
  a.heads = 8;
  a.attention_kernel = AttentionKernel::fused;
  a.bytes = 8192.0 * 128 * 8 * 4 * 2;
  const double flash = cm.op_seconds(a);
  a.attention_kernel = AttentionKernel::unfused;
  a.bytes += 8192.0 * 8192 * 8 * 9;
  const double unfused = cm.op_seconds(a);
  CHECK(unfused > 1.5 * flash);
  a.attention_kernel = AttentionKernel::fused;
  a.cls = OpClass::attention_bwd;
  CHECK(cm.op_seconds(a) > 2.0 * flash);  // 5 matmuls at a lower efficiency vs 2
}

TEST_CASE("calibration.json overrides defaults per GPU kind and refuses unknown keys", "[sim][calibration]") {
  const auto doc = nlohmann::json::parse(R"({"source": "test", "gpus": {"h100-sxm": {"gemm_max": 0.7,
      "mem_bw_fraction": 0.9, "links": {"scale_out": {"alpha_s": 1e-5, "beta_s_per_byte": 2e-11}}}}})");
  const Calibration c = Calibration::parse(doc, "cal.json");
  CHECK(c.compute_params("h100-sxm").gemm_max == 0.7);
  CHECK(c.compute_params("h100-sxm").mem_bw_fraction == 0.9);
  CHECK(c.compute_params("h100-sxm").attn_fwd_max == ComputeParams{}.attn_fwd_max);
  CHECK(c.compute_params("a100-80gb").gemm_max == ComputeParams{}.gemm_max);
  CHECK(*c.link("h100-sxm", CalibratedLink::scale_out).alpha_s == 1e-5);
  CHECK_FALSE(c.link("h100-sxm", CalibratedLink::scale_up).alpha_s.has_value());

  const auto bad = nlohmann::json::parse(R"({"gpus": {"h100-sxm": {"gemm_maxx": 0.7}}})");
  try {
    (void)Calibration::parse(bad, "cal.json");
    FAIL("unknown key accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(
              "cal.json: gpus.h100-sxm.gemm_maxx: unknown field (did you mean \"gemm_max\"") == 0);
  }
  const auto out_of_range = nlohmann::json::parse(R"({"gpus": {"h100-sxm": {"gemm_max": 1.7}}})");
  CHECK_THROWS_AS(Calibration::parse(out_of_range, "cal.json"), InputError);
}

TEST_CASE("compute defaults come from the GPU catalog's data, not from architecture names in code",
          "[sim][compute]") {
  const Catalogs catalogs = load_catalogs(SIMRUN_DATA_DIR);
  const GpuSpec h100 = catalogs.hardware.gpu("h100-sxm", "t.json", "cluster.gpu");
  const GpuSpec a100 = catalogs.hardware.gpu("a100-80gb", "t.json", "cluster.gpu");
  const GpuSpec b200 = catalogs.hardware.gpu("b200", "t.json", "cluster.gpu");
  const GpuSpec mi300x = catalogs.hardware.gpu("mi300x", "t.json", "cluster.gpu");
  // Hopper's and Ampere's (topologies/architectures.json), which these parts state nothing over.
  CHECK(default_compute_params(h100).gemm_max == 0.72);
  CHECK(default_compute_params(h100).attn_fa2_bwd_max == 0.20);
  CHECK(default_compute_params(a100).gemm_dim_half == 260);
  CHECK(default_compute_params(a100).attn_fa2_fwd_max == default_compute_params(a100).attn_fwd_max);
  CHECK_FALSE(h100.compute_defaults.source.empty());
  // A part of an architecture without figures (CDNA 3) that states none keeps the generic defaults.
  CHECK(default_compute_params(mi300x).gemm_max == ComputeParams{}.gemm_max);
  // Blackwell's from the measured microbenchmarks (B200's, architectures.json: 77.6% of peak in isolation ×
  // Hopper's in-loop ratio 0.897; NVFP4 0.582 × 0.776).
  CHECK(default_compute_params(b200).gemm_max == Approx(0.696));
  CHECK(default_compute_params(b200).fp4_gemm_max == Approx(0.452));
  // The spec's figures, not its architecture's name, decide: no branch on names in code.
  GpuSpec renamed = h100;
  renamed.architecture = "Ampere";
  CHECK(default_compute_params(renamed).gemm_max == 0.72);
}
