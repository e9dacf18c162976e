// The calibration fit (calibration_fit.hpp).
#include "simrun/exec/calibration_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace simrun::exec {
namespace {

// calibration.json's bounds on an efficiency (calibration.cpp read_gpu).
constexpr double kMinEfficiency = 0.01, kMaxEfficiency = 1.0;

enum Unknown { gemm, attn_fwd, attn_bwd, memory, kUnknowns };
constexpr std::array<const char*, kUnknowns> kUnknownNames = {"gemm", "attention_fwd", "attention_bwd",
                                                              "memory"};

Unknown unknown_of(OpClass c) {
  switch (c) {
    case OpClass::gemm:
      return gemm;
    case OpClass::attention_fwd:
      return attn_fwd;
    case OpClass::attention_bwd:
      return attn_bwd;
    default:
      return memory;
  }
}

// The compute model with every efficiency 1 (and, for compute-bound classes, HBM traffic free),
// no launch cost, and the grid point's half-saturations: x_i of the fit.
ComputeModel unit_model(const GpuSpec& device, const ComputeParams& defaults, double gemm_half,
                        double seq_half, bool memory_free) {
  ComputeParams p = defaults;
  p.gemm_max = p.fp8_gemm_max = p.fp4_gemm_max = 1;
  p.attn_fwd_max = p.attn_bwd_max = p.attn_fa2_fwd_max = p.attn_fa2_bwd_max = 1;
  p.gemm_dim_half = gemm_half;
  p.attn_seq_half = seq_half;
  p.mem_bw_fraction = memory_free ? 1e30 : 1;
  p.launch_overhead_s = 0;
  return ComputeModel(device, p);
}

struct Solution {
  std::array<double, kUnknowns> inverse_efficiency{};  // 1/eff per class (0: no samples)
  double launch_s = 0;
  double cost = std::numeric_limits<double>::infinity();  // Σ relative error²
  double gemm_half = 0, seq_half = 0;
};

// Weighted least squares of t_i ≈ x_i·u_class + launch over the classes present.
Solution solve(const std::vector<KernelSample>& samples, const std::vector<double>& x, bool with_launch) {
  std::array<int, kUnknowns> column{};
  int columns = 0;
  for (int u = 0; u < kUnknowns; ++u) {
    column[size_t(u)] = -1;
    for (const KernelSample& s : samples)
      if (unknown_of(s.shape.cls) == u) {
        column[size_t(u)] = columns++;
        break;
      }
  }
  const int launch_column = with_launch ? columns++ : -1;
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(Eigen::Index(samples.size()), columns);
  Eigen::VectorXd b(Eigen::Index(samples.size()));
  for (size_t i = 0; i < samples.size(); ++i) {
    // Row i: sqrt(calls·t) · (x·u + launch − t) / t.
    const double t = samples[i].measured_s, root = std::sqrt(samples[i].calls * t);
    a(Eigen::Index(i), column[size_t(unknown_of(samples[i].shape.cls))]) = x[i] / t * root;
    if (with_launch) a(Eigen::Index(i), launch_column) = root / t;
    b(Eigen::Index(i)) = root;
  }
  const Eigen::VectorXd u = a.colPivHouseholderQr().solve(b);
  Solution s;
  for (int k = 0; k < kUnknowns; ++k)
    if (column[size_t(k)] >= 0) s.inverse_efficiency[size_t(k)] = u(column[size_t(k)]);
  if (with_launch) s.launch_s = u(launch_column);
  s.cost = (a * u - b).squaredNorm();
  return s;
}

double relative_error(double predicted, double measured) { return (predicted - measured) / measured; }

// weights: each sample's calls per step; the rms weights each relative error by the time it takes.
FitResidual residual_of(std::string what, const std::vector<double>& predicted,
                        const std::vector<double>& measured, const std::vector<double>& calls) {
  FitResidual r{std::move(what), int64_t(measured.size()), 0, 0};
  double sum = 0, total = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    const double e = relative_error(predicted[i], measured[i]), w = calls[i] * measured[i];
    sum += w * e * e;
    total += w;
    r.max_relative_error = std::max(r.max_relative_error, std::abs(e));
  }
  r.rms_relative_error = total > 0 ? std::sqrt(sum / total) : 0;
  return r;
}

void fit_compute(const GpuSpec& device, const ComputeParams& defaults, const std::vector<KernelSample>& all,
                 CalibrationFit& fit) {
  std::vector<KernelSample> samples;
  for (const KernelSample& s : all)
    if (s.shape.cls != OpClass::host && s.measured_s > 0) samples.push_back(s);
  if (samples.empty()) {
    fit.notes.push_back("no kernel measured: the compute model keeps its defaults");
    return;
  }
  Solution best;
  // The grid of half-saturations: GEMM dimensions and attention key lengths, in elements.
  for (double gemm_half : {0.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0})
    for (double seq_half : {0.0, 16.0, 64.0, 128.0, 512.0}) {
      const ComputeModel compute = unit_model(device, defaults, gemm_half, seq_half, true);
      const ComputeModel bandwidth = unit_model(device, defaults, gemm_half, seq_half, false);
      std::vector<double> x;
      for (const KernelSample& s : samples)
        x.push_back((s.shape.cls == OpClass::memory ? bandwidth : compute).op_seconds(s.shape));
      Solution s = solve(samples, x, true);
      if (s.launch_s < 0) s = solve(samples, x, false);
      s.gemm_half = gemm_half;
      s.seq_half = seq_half;
      if (s.cost < best.cost) best = s;
    }

  if (!std::isfinite(best.cost)) {
    fit.notes.push_back("the kernels' times fit no compute model (no finite least squares): defaults kept");
    return;
  }
  // Each class's total time per step kept: least squares shaped the curves (the half-saturations,
  // the launch cost); each efficiency is then the one whose ops take, together, the measured time.
  {
    const ComputeModel compute = unit_model(device, defaults, best.gemm_half, best.seq_half, true);
    const ComputeModel bandwidth = unit_model(device, defaults, best.gemm_half, best.seq_half, false);
    std::array<double, kUnknowns> unit_total{}, measured_total{};
    for (const KernelSample& s : samples) {
      const size_t k = size_t(unknown_of(s.shape.cls));
      unit_total[k] += s.calls * (s.shape.cls == OpClass::memory ? bandwidth : compute).op_seconds(s.shape);
      measured_total[k] += s.calls * (s.measured_s - best.launch_s);
    }
    for (size_t k = 0; k < kUnknowns; ++k)
      if (best.inverse_efficiency[k] > 0 && unit_total[k] > 0 && measured_total[k] > 0)
        best.inverse_efficiency[k] = measured_total[k] / unit_total[k];
  }

  // Efficiencies over 1: the device's peak (bandwidth) was low; raise it, keep eff at 1.
  GpuSpec corrected = device;
  std::array<double, kUnknowns>& u = best.inverse_efficiency;
  if (u[gemm] > 0 && u[gemm] < 1) {
    const double raise = 1 / u[gemm];
    corrected.fp32_flops_per_s *= raise;
    corrected.bf16_flops_per_s *= raise;
    u[attn_fwd] *= raise;
    u[attn_bwd] *= raise;
    u[gemm] = 1;
    fit.notes.push_back(fmt::format("GEMMs ran faster than the measured peak: peak raised to {:.1f} GFLOP/s",
                                    corrected.fp32_flops_per_s / 1e9));
  }
  if (u[memory] > 0 && u[memory] < 1) {
    corrected.hbm_bytes_per_s /= u[memory];
    u[memory] = 1;
    fit.notes.push_back(
        fmt::format("memory-bound ops ran faster than the measured bandwidth: raised to {:.1f} GB/s",
                    corrected.hbm_bytes_per_s / 1e9));
  }
  GpuCalibration& c = fit.calibration;
  auto efficiency = [&](Unknown k) -> std::optional<double> {
    if (u[size_t(k)] == 0) return std::nullopt;  // no samples of the class
    if (u[size_t(k)] < 0) {
      fit.notes.push_back(fmt::format("{}: no positive efficiency fits its kernels: the default kept",
                                      kUnknownNames[size_t(k)]));
      return std::nullopt;
    }
    const double eff = 1 / u[size_t(k)];
    if (eff < kMinEfficiency)
      fit.notes.push_back(fmt::format("{} efficiency {:.4f} is under calibration.json's floor {}: kept at it",
                                      kUnknownNames[size_t(k)], eff, kMinEfficiency));
    return std::clamp(eff, kMinEfficiency, kMaxEfficiency);
  };
  c.gemm_max = efficiency(gemm);
  c.gemm_dim_half = best.gemm_half;
  c.attn_fwd_max = efficiency(attn_fwd);
  c.attn_bwd_max = efficiency(attn_bwd);
  // The CPU backend runs one attention kernel: FA2's figures are the same kernel's.
  c.attn_fa2_fwd_max = c.attn_fwd_max;
  c.attn_fa2_bwd_max = c.attn_bwd_max;
  c.attn_seq_half = best.seq_half;
  c.mem_bw_fraction = efficiency(memory);
  c.launch_overhead_s = std::max(0.0, best.launch_s);
  // The device entry the efficiencies are relative to, corrected where they would pass 1.
  c.device.fp32_flops_per_s = corrected.fp32_flops_per_s;
  c.device.bf16_flops_per_s = corrected.bf16_flops_per_s;
  c.device.hbm_bytes_per_s = corrected.hbm_bytes_per_s;

  // Residuals of the fitted model as simulate will apply it.
  Calibration applied;
  applied.set_gpu(device.id, c);
  const ComputeModel fitted = calibrated_compute_model(applied.calibrated_device(device), applied, defaults);
  for (int k = 0; k < kUnknowns; ++k) {
    std::vector<double> predicted, measured, calls;
    for (const KernelSample& s : samples)
      if (unknown_of(s.shape.cls) == k) {
        predicted.push_back(fitted.op_seconds(s.shape));
        measured.push_back(s.measured_s);
        calls.push_back(s.calls);
      }
    if (!measured.empty())
      fit.residuals.push_back(residual_of(kUnknownNames[size_t(k)], predicted, measured, calls));
  }
}

void fit_links(const std::vector<CollectiveSample>& all, LinkClass link, CalibrationFit& fit) {
  std::vector<CollectiveSample> samples;
  for (const CollectiveSample& s : all)
    if (s.link == link && s.measured_s > 0 && s.bytes > 0 && s.ranks > 1) samples.push_back(s);
  const char* name = link == LinkClass::scale_up ? "scale_up" : "scale_out";
  if (samples.empty()) return;
  auto solve_links = [&](bool with_alpha) {
    Eigen::MatrixXd a(Eigen::Index(samples.size()), with_alpha ? 2 : 1);
    Eigen::VectorXd b(Eigen::Index(samples.size()));
    for (size_t i = 0; i < samples.size(); ++i) {
      const AlphaBetaTerms t = alpha_beta_terms(samples[i].op, samples[i].ranks, samples[i].bytes);
      const double time = samples[i].measured_s, root = std::sqrt(samples[i].calls * time);
      a(Eigen::Index(i), 0) = t.beta / time * root;
      if (with_alpha) a(Eigen::Index(i), 1) = t.alpha / time * root;
      b(Eigen::Index(i)) = root;
    }
    const Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
    return std::pair<double, double>{x(0), with_alpha ? x(1) : 0.0};
  };
  auto [beta, alpha] = solve_links(true);
  if (alpha < 0) std::tie(beta, alpha) = solve_links(false);
  if (!(beta > 0)) {
    fit.notes.push_back(fmt::format("{} collectives: no positive bandwidth term fits; α-β kept", name));
    return;
  }
  // The collectives' total time per step kept, as the kernels' (fit_compute).
  double predicted_total = 0, measured_total = 0;
  for (const CollectiveSample& s : samples) {
    const AlphaBetaTerms t = alpha_beta_terms(s.op, s.ranks, s.bytes);
    predicted_total += s.calls * (t.alpha * alpha + t.beta * beta);
    measured_total += s.calls * s.measured_s;
  }
  alpha *= measured_total / predicted_total;
  beta *= measured_total / predicted_total;
  LinkCalibration& l = link == LinkClass::scale_up ? fit.calibration.scale_up : fit.calibration.scale_out;
  l.alpha_s = std::clamp(alpha, 0.0, 1e-2);  // calibration.json's bounds
  l.beta_s_per_byte = std::clamp(beta, 1e-15, 1e-6);
  std::vector<double> predicted, measured, calls;
  for (const CollectiveSample& s : samples) {
    const AlphaBetaTerms t = alpha_beta_terms(s.op, s.ranks, s.bytes);
    predicted.push_back(t.alpha * *l.alpha_s + t.beta * *l.beta_s_per_byte);
    measured.push_back(s.measured_s);
    calls.push_back(s.calls);
  }
  fit.residuals.push_back(residual_of(std::string("collectives ") + name, predicted, measured, calls));
}

}  // namespace

AlphaBetaTerms alpha_beta_terms(CollectiveOp op, int64_t ranks, double bytes) {
  LinkCost per_alpha, per_beta;
  per_alpha.alpha_s = 1;
  per_alpha.bytes_per_s = 1e300;
  per_beta.alpha_s = 0;
  per_beta.bytes_per_s = 1;
  return {collective_s(op, bytes, ranks, per_alpha), collective_s(op, bytes, ranks, per_beta)};
}

CalibrationFit fit_calibration(const GpuSpec& device, const ComputeParams& defaults,
                               const std::vector<KernelSample>& kernels,
                               const std::vector<CollectiveSample>& collectives) {
  CalibrationFit fit;
  fit_compute(device, defaults, kernels, fit);
  fit_links(collectives, LinkClass::scale_up, fit);
  fit_links(collectives, LinkClass::scale_out, fit);
  return fit;
}

}  // namespace simrun::exec
