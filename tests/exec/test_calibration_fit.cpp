// The calibration fit (exec/calibration_fit.hpp): it recovers the parameters that made the times,
// raises a peak an efficiency would pass, and fits α-β with the collective cost's own forms.
#include <catch2/catch.hpp>

#include "simrun/common/error.hpp"
#include "simrun/exec/calibration_fit.hpp"
#include "workload_test_util.hpp"

using namespace simrun;
using namespace simrun::exec;

namespace {

OpShape gemm(double m, double n, double k) {
  OpShape s;
  s.cls = OpClass::gemm;
  s.precision = Precision::fp32;
  s.m = m, s.n = n, s.k = k;
  s.bytes = (m * k + k * n + m * n) * 4;
  return s;
}

OpShape memory(double bytes) {
  OpShape s;
  s.cls = OpClass::memory;
  s.bytes = bytes;
  return s;
}

OpShape attention(OpClass cls, double seq) {
  OpShape s;
  s.cls = cls;
  s.precision = Precision::fp32;
  s.tokens = seq, s.seq_kv = seq, s.head_dim = 64, s.heads = 4;
  s.bytes = 4 * seq * 64 * 4 * 4;
  return s;
}

std::vector<OpShape> shapes() {
  std::vector<OpShape> v;
  for (double m : {64.0, 256.0, 1024.0})
    for (double n : {128.0, 512.0}) v.push_back(gemm(m, n, 256));
  for (double b : {1e5, 1e6, 1e7}) v.push_back(memory(b));
  for (double s : {128.0, 512.0, 2048.0}) {
    v.push_back(attention(OpClass::attention_fwd, s));
    v.push_back(attention(OpClass::attention_bwd, s));
  }
  return v;
}

GpuSpec host() { return test::gpu("cpu-host"); }

}  // namespace

TEST_CASE("fit: recovers the compute model's parameters from the times it gave", "[exec][fit]") {
  ComputeParams truth = default_compute_params(host());
  truth.gemm_max = 0.7;
  truth.gemm_dim_half = 32;
  truth.attn_fwd_max = 0.2;
  truth.attn_bwd_max = 0.15;
  truth.attn_seq_half = 64;
  truth.mem_bw_fraction = 0.6;
  truth.launch_overhead_s = 5e-6;
  const ComputeModel model(host(), truth);
  std::vector<KernelSample> samples;
  for (const OpShape& s : shapes()) samples.push_back({s, model.op_seconds(s), 4});

  const CalibrationFit fit = fit_calibration(host(), default_compute_params(host()), samples, {});
  const GpuCalibration& c = fit.calibration;
  CHECK(*c.gemm_max == Approx(0.7).epsilon(1e-6));
  CHECK(*c.gemm_dim_half == 32);
  CHECK(*c.attn_fwd_max == Approx(0.2).epsilon(1e-6));
  CHECK(*c.attn_bwd_max == Approx(0.15).epsilon(1e-6));
  CHECK(*c.attn_seq_half == 64);
  CHECK(*c.mem_bw_fraction == Approx(0.6).epsilon(1e-6));
  CHECK(*c.launch_overhead_s == Approx(5e-6).epsilon(1e-6));
  CHECK(*c.device.fp32_flops_per_s == host().fp32_flops_per_s);  // no efficiency passed 1
  for (const FitResidual& r : fit.residuals) CHECK(r.rms_relative_error < 1e-6);
}

TEST_CASE("fit: an efficiency over 1 raises the device's peak instead", "[exec][fit]") {
  ComputeParams truth = default_compute_params(host());
  truth.gemm_max = 1;
  truth.gemm_dim_half = 0;
  truth.launch_overhead_s = 0;
  GpuSpec faster = host();
  faster.fp32_flops_per_s *= 1.5;  // the kernels ran 1.5x the entry's peak
  const ComputeModel model(faster, truth);
  std::vector<KernelSample> samples;
  for (double m : {128.0, 512.0, 2048.0})
    samples.push_back({gemm(m, 512, 512), model.op_seconds(gemm(m, 512, 512)), 1});

  const CalibrationFit fit = fit_calibration(host(), default_compute_params(host()), samples, {});
  CHECK(*fit.calibration.gemm_max == Approx(1));
  CHECK(*fit.calibration.device.fp32_flops_per_s == Approx(faster.fp32_flops_per_s).epsilon(1e-6));
  REQUIRE_FALSE(fit.notes.empty());
  CHECK_THAT(fit.notes[0], Catch::Contains("peak raised"));
}

TEST_CASE("fit: a negative launch cost is refitted as none", "[exec][fit]") {
  ComputeParams truth = default_compute_params(host());
  truth.launch_overhead_s = 0;
  truth.mem_bw_fraction = 0.5;
  const ComputeModel model(host(), truth);
  std::vector<KernelSample> samples;
  // Small ops a little faster than the line through the large ones: least squares would put launch below 0.
  for (double b : {1e4, 1e5, 1e7, 1e8})
    samples.push_back({memory(b), model.op_seconds(memory(b)) * (b < 1e6 ? 0.8 : 1.0), 1});
  const CalibrationFit fit = fit_calibration(host(), default_compute_params(host()), samples, {});
  CHECK(*fit.calibration.launch_overhead_s == 0);
  CHECK(*fit.calibration.mem_bw_fraction > 0.45);
}

TEST_CASE("fit: alpha-beta of a link class from collectives of several sizes", "[exec][fit]") {
  const double alpha = 7e-6, beta = 1 / 3e9;
  std::vector<CollectiveSample> samples;
  for (double bytes : {4096.0, 65536.0, 1e6, 16e6})
    for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather}) {
      const AlphaBetaTerms t = alpha_beta_terms(op, 4, bytes);
      samples.push_back({op, 4, bytes, LinkClass::scale_up, t.alpha * alpha + t.beta * beta, 1});
    }
  const CalibrationFit fit = fit_calibration(host(), default_compute_params(host()), {}, samples);
  REQUIRE(fit.calibration.scale_up.alpha_s);
  CHECK(*fit.calibration.scale_up.alpha_s == Approx(alpha).epsilon(1e-6));
  CHECK(*fit.calibration.scale_up.beta_s_per_byte == Approx(beta).epsilon(1e-6));
  CHECK_FALSE(fit.calibration.scale_out.alpha_s);

  // The terms are the α-β forms': a ring all-reduce over 4 ranks takes 2(n-1) steps and 2(n-1)/n of the
  // bytes.
  const AlphaBetaTerms ring = alpha_beta_terms(CollectiveOp::all_reduce, 4, 1e6);
  CHECK(ring.alpha == Approx(6));
  CHECK(ring.beta == Approx(1.5e6));
}
