// Time of one GPU operation: a roofline on the GPU's dense peak for the op's precision and its
// HBM bandwidth, each derated by an efficiency factor, plus a fixed per-kernel overhead:
//
//   t = max( flops / (peak(precision) · eff_compute(shape)),  bytes / (hbm · eff_mem) ) + launch
//
// GEMM efficiency saturates with each dimension: a GEMM with a small M, N or K fills fewer
// tiles per SM wave and amortises its prologue/epilogue over less work, so
//
//   eff_gemm(M, N, K) = gemm_max · Π_{d ∈ {M,N,K}} d / (d + gemm_dim_half)
//
// (a Michaelis–Menten curve per dimension: 1/2 of the asymptote at d = gemm_dim_half; large
// square GEMMs reach gemm_max, which is what cuBLAS sustains on a well-cooled part under the
// training power draw — below the boost-clock datasheet peak).
// Fused (flash) attention is timed on its own curve — it is bounded by the softmax and the
// tile recomputation in the backward pass, not by the tensor cores alone:
//
//   eff_attn = attn_max · s_kv / (s_kv + attn_seq_half) · d_head / (d_head + attn_head_dim_half)
//
// and its backward pass runs 5 matmuls where the forward runs 2 (it recomputes QKᵀ), i.e. 2.5×
// the forward work where the model FLOP convention counts 2×. Unfused attention materialises
// the b·a·s² score matrix in HBM and is timed as two batched GEMMs plus softmax/dropout
// traffic (the HBM-I/O model of Dao et al. 2022, arXiv:2205.14135).
//
// Every default lives in ComputeParams below; calibration.json (calibration.hpp) overrides
// them per GPU kind.
#pragma once

#include <cstdint>
#include <string>

#include "simrun/common/units.hpp"
#include "simrun/sim/workload/op_shape.hpp"
#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

// A compute kernel that starts while a data-parallel or pipeline NCCL kernel runs on the same
// GPU takes this much longer: NCCL's channels occupy SMs (one CTA each, 16–32 on Hopper) and
// the copies compete for HBM bandwidth. Both fidelities' default.
inline constexpr double kCommOverlapSlowdown = 0.15;

// The compute model's parameters. The member initialisers are the generic defaults;
// default_compute_params() takes the GPU spec's compute defaults over them (its catalog entry's own,
// the rest its architecture's: topologies/architectures.json);
// calibration.json replaces any of them per GPU kind.
struct ComputeParams {
  // Large bf16/fp16 GEMMs: fraction of the dense datasheet peak sustained by cuBLAS in a
  // training loop (boost clock is not held under full tensor-core load; A100 ~ 0.85, H100
  // ~ 0.75 in published GEMM sweeps). Default between them; calibration sets it per kind.
  double gemm_max = 0.80;
  // Dimension at which the per-dimension factor d/(d + half) is 1/2 (elements).
  double gemm_dim_half = 40.0;
  // fp8 GEMMs (Transformer Engine / torchao): fraction of the fp8 dense peak. Lower than
  // bf16 because fp8 GEMMs are shorter and their amax/scale epilogues do not shrink.
  double fp8_gemm_max = 0.60;
  // NVFP4 GEMMs: fraction of the fp4 dense peak (Blackwell). Generic: the fp8 figure.
  double fp4_gemm_max = 0.60;
  // Flash attention forward / backward: fraction of the bf16 dense peak at long sequences
  // and large head dimension (FlashAttention-2 on A100 reaches ~70% fwd, ~60% bwd of peak).
  double attn_fwd_max = 0.70;
  double attn_bwd_max = 0.60;
  // FlashAttention-2 where it is not the architecture's best kernel (Hopper: FA2 lacks the
  // wgmma/TMA pipeline of cuDNN/FA3: ≈250 TFLOP/s forward, ≈200 backward on H100 for causal 2K
  // sequences; Shah et al. 2024, arXiv:2407.08608, Figs. 5–6). Used by frameworks running FA2
  // (eager PyTorch).
  double attn_fa2_fwd_max = 0.70;
  double attn_fa2_bwd_max = 0.60;
  double attn_seq_half = 128.0;      // tokens of key sequence at which eff is halved
  double attn_head_dim_half = 16.0;  // head dimension at which eff is halved
  // Memory-bound kernels: fraction of the HBM datasheet bandwidth reached by elementwise,
  // norm and optimizer kernels (STREAM-like triad on HBM: ~0.8–0.9).
  double mem_bw_fraction = 0.80;
  // Fixed cost per kernel: launch plus the idle gap between dependent kernels on a stream.
  double launch_overhead_s = 3e-6;
};

// The defaults for a GPU: its spec's compute defaults (its entry's own and its architecture's, with
// their sources) over the generic member initialisers.
ComputeParams default_compute_params(const GpuSpec& gpu);

class ComputeModel {
 public:
  ComputeModel(const GpuSpec& gpu, const ComputeParams& params);

  // Roofline time of one op (seconds), including the launch overhead.
  double op_seconds(const OpShape& op) const;
  TimeNs op_time(const OpShape& op) const { return TimeNs::from_seconds(op_seconds(op)); }

  // The efficiency factors (exposed for tests, --explain and the analytic comparison).
  double gemm_efficiency(double m, double n, double k, Precision p) const;
  // pass: OpClass::attention_fwd or attention_bwd.
  double attention_efficiency(double seq_kv, double head_dim, OpClass pass,
                              AttentionKernel kernel = AttentionKernel::fused) const;
  double peak_flops_per_s(Precision p) const;
  double memory_bytes_per_s() const { return m_gpu.hbm_bytes_per_s * m_params.mem_bw_fraction; }

  const ComputeParams& params() const { return m_params; }
  const GpuSpec& gpu() const { return m_gpu; }

 private:
  GpuSpec m_gpu;
  ComputeParams m_params;
};

}  // namespace simrun
