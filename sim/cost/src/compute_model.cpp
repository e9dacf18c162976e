// Roofline × efficiency timing of GPU ops; see compute_model.hpp for the formulas.
#include "simrun/sim/cost/compute_model.hpp"

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"

namespace simrun {
namespace {

double saturate(double x, double half) { return x <= 0 ? 0.0 : x / (x + half); }

}  // namespace

// The defaults: ComputeParams' member initialisers (generic), replaced by what the GPU's spec
// states for its kernels (its catalog entry's "compute_defaults", the rest its architecture's in
// topologies/architectures.json; each with its sources: cuBLAS GEMM sweeps, FlashAttention-2/3 papers, checked against the yardstick,
// bench/validate_measured). mem_bw_fraction 0.8 (STREAM-like on HBM) and launch_overhead 3 µs
// stay generic.
ComputeParams default_compute_params(const GpuSpec& gpu) {
  ComputeParams p;
  const GpuSpec::ComputeDefaults& d = gpu.compute_defaults;
  p.gemm_max = d.gemm_max.value_or(p.gemm_max);
  p.gemm_dim_half = d.gemm_dim_half.value_or(p.gemm_dim_half);
  p.fp8_gemm_max = d.fp8_gemm_max.value_or(p.fp8_gemm_max);
  p.fp4_gemm_max = d.fp4_gemm_max.value_or(p.fp4_gemm_max);
  p.attn_fwd_max = d.attn_fwd_max.value_or(p.attn_fwd_max);
  p.attn_bwd_max = d.attn_bwd_max.value_or(p.attn_bwd_max);
  p.attn_fa2_fwd_max = d.attn_fa2_fwd_max.value_or(p.attn_fa2_fwd_max);
  p.attn_fa2_bwd_max = d.attn_fa2_bwd_max.value_or(p.attn_fa2_bwd_max);
  return p;
}

ComputeModel::ComputeModel(const GpuSpec& gpu, const ComputeParams& params) : m_gpu(gpu), m_params(params) {
  SIMRUN_ASSERT(m_gpu.hbm_bytes_per_s > 0, "GPU without HBM bandwidth: " + m_gpu.id);
}

double ComputeModel::peak_flops_per_s(Precision p) const {
  double peak = m_gpu.peak_flops_per_s(p);
  // A precision the part lacks (fp8 on A100) runs at the 16-bit rate, as frameworks fall back.
  if (peak <= 0) peak = m_gpu.peak_flops_per_s(Precision::bf16);
  if (peak <= 0) peak = m_gpu.bf16_flops_per_s;
  return peak;
}

double ComputeModel::gemm_efficiency(double m, double n, double k, Precision p) const {
  const bool native = m_gpu.peak_flops_per_s(p) > 0;
  const double top = !native               ? m_params.gemm_max
                     : p == Precision::fp8 ? m_params.fp8_gemm_max
                     : p == Precision::fp4 ? m_params.fp4_gemm_max
                                           : m_params.gemm_max;
  const double h = m_params.gemm_dim_half;
  return top * saturate(m, h) * saturate(n, h) * saturate(k, h);
}

double ComputeModel::attention_efficiency(double seq_kv, double head_dim, OpClass pass,
                                          AttentionKernel kernel) const {
  const bool backward = pass == OpClass::attention_bwd;
  const double top = kernel == AttentionKernel::flash2
                         ? (backward ? m_params.attn_fa2_bwd_max : m_params.attn_fa2_fwd_max)
                         : (backward ? m_params.attn_bwd_max : m_params.attn_fwd_max);
  return top * saturate(seq_kv, m_params.attn_seq_half) * saturate(head_dim, m_params.attn_head_dim_half);
}

double ComputeModel::op_seconds(const OpShape& op) const {
  if (op.cls == OpClass::host) return op.host_s;
  double compute_s = 0;
  double memory_s = op.bytes / memory_bytes_per_s();
  switch (op.cls) {
    case OpClass::gemm: {
      const double work = 2.0 * op.m * op.n * op.k * op.batch;
      compute_s = work / (peak_flops_per_s(op.precision) * gemm_efficiency(op.m, op.n, op.k, op.precision));
      break;
    }
    case OpClass::attention_fwd:
    case OpClass::attention_bwd: {
      const bool bwd = op.cls == OpClass::attention_bwd;
      // Matmul work actually executed: forward QKᵀ and PV (2 matmuls of 2·T·s_kv·d per head),
      // backward 5 (recomputed QKᵀ, dV, dP, dQ, dK); causal kernels skip the masked half.
      const double per_matmul = 2.0 * op.tokens * op.seq_kv * op.head_dim * op.heads;
      const double causal_share = op.causal ? 0.5 : 1.0;
      if (op.attention_kernel != AttentionKernel::unfused) {
        const double matmuls = bwd ? 5.0 : 2.0;
        const double work = matmuls * per_matmul * causal_share;
        compute_s = work / (peak_flops_per_s(op.precision) *
                            attention_efficiency(op.seq_kv, op.head_dim, op.cls, op.attention_kernel));
      } else {
        // Unfused: batched GEMMs over the full score matrix (no causal skipping); the softmax,
        // mask and dropout traffic is in op.bytes.
        const double matmuls = bwd ? 4.0 : 2.0;
        const double eff =
            gemm_efficiency(std::min(op.tokens, op.seq_kv), op.seq_kv, op.head_dim, op.precision);
        compute_s = matmuls * per_matmul / (peak_flops_per_s(op.precision) * eff);
      }
      break;
    }
    case OpClass::memory:
    case OpClass::host:
      break;
  }
  return std::max(compute_s, memory_s) + op.serial_bytes / memory_bytes_per_s() + m_params.launch_overhead_s;
}

}  // namespace simrun
