// The calibration fit of `simrun validate`: least squares (Eigen) of the compute model's
// parameters on the measured kernels and of a link class's α-β on the measured collectives,
// written to calibration.json (sim/cost/calibration.hpp).
//
// Compute: for each GEMM half-saturation h (and attention sequence half) on a grid, the times the
// compute model gives each op at efficiency 1 and no launch cost, x_i (compute_model.hpp: the
// GEMM curve Π d/(d+h), attention's, HBM traffic for memory-bound ops), are fitted as
//   t_i ≈ x_i / eff_class(i) + launch
// over every op together, each op's relative error weighted by its share of the step's time
// (minimise Σ calls·t · ((pred − t)/t)²: a kernel that takes a third of the step counts for a
// third, a hundred tiny ones for what they take); the grid point with the least residual wins.
// The curves so shaped, each class's efficiency is set so that its ops' total time per step is
// the measured total (the step's time is a sum of them: a fit that shrank a class's total would
// shrink the step). An efficiency
// over 1 means the device entry's peak (or bandwidth) was low: the peak is raised to match and the efficiency
// set to 1. Efficiencies are kept within calibration.json's bounds [0.01, 1]; a negative launch cost is
// refitted as 0. Collectives: t_i ≈ c_α,i·α + c_β,i·β with c_α, c_β the α-β forms' own coefficients
// (collective_cost.hpp), per link class.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/cost/compute_model.hpp"

namespace simrun::exec {

struct KernelSample {
  OpShape shape;
  double measured_s = 0;  // e.g. the median over steps of one call
  double calls = 1;       // calls of this shape per step (its weight: calls · measured_s)
};

struct CollectiveSample {
  CollectiveOp op = CollectiveOp::all_reduce;
  int64_t ranks = 2;  // group size
  double bytes = 0;   // as the workload counts them (Task::comm_bytes)
  LinkClass link = LinkClass::scale_up;
  double measured_s = 0;
  double calls = 1;  // per step (the weight, as KernelSample's)
};

// How well the fitted model reproduces one class of samples.
struct FitResidual {
  std::string what;  // "gemm", "attention_fwd", "attention_bwd", "memory", "collectives scale_up"
  int64_t samples = 0;
  double rms_relative_error = 0;  // weighted by time as the fit: sqrt(Σ calls·t·e² / Σ calls·t), e.g. 0.08
  double max_relative_error = 0;
};

struct CalibrationFit {
  GpuCalibration calibration;  // efficiencies, launch cost, links, and the device's corrected peaks
  std::vector<FitResidual> residuals;
  std::vector<std::string> notes;  // what the fit could not determine and kept
};

// Fits `device`'s compute parameters on the kernel samples (host work excluded) and α-β per link
// class on the collective samples; `defaults` are the parameters a class without samples keeps.
// The calibration's device entry is `device`'s peaks and bandwidth (corrected as above).
CalibrationFit fit_calibration(const GpuSpec& device, const ComputeParams& defaults,
                               const std::vector<KernelSample>& kernels,
                               const std::vector<CollectiveSample>& collectives);

// The α-β coefficients of one collective (seconds per unit α, per unit β): the α-β forms of
// collective_cost.hpp evaluated at α = 1, β = 0 and at α = 0, β = 1.
struct AlphaBetaTerms {
  double alpha = 0, beta = 0;
};
AlphaBetaTerms alpha_beta_terms(CollectiveOp op, int64_t ranks, double bytes);

}  // namespace simrun::exec
