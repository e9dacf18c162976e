// Efficiency defaults of the analytic model, in one place: the fraction of each hardware peak
// that real kernels and collectives reach, and how much communication hides behind compute.
// A calibration file (DESIGN.md "Calibration file") overrides these per GPU kind; until one is
// given, the values below are the model's stated assumptions, each with where it comes from.
#pragma once

namespace simrun {

// Whether a data-parallel gradient reduction overlaps with the backward pass.
enum class DpOverlap {
  none,        // reduce after backward (Megatron's default without --overlap-grad-reduce)
  overlapped,  // bucketed, overlapped with the last micro-batch's backward (--overlap-grad-reduce,
               // --overlap-param-gather); only what outlasts that window, or the last bucket, shows
};

struct EfficiencyDefaults {
  // Fraction of the dense peak that large bf16/fp16 GEMMs reach. Hopper's 989 TFLOP/s is not
  // sustained at 700 W: cuBLAS GEMMs of transformer shapes measure 650-750 TFLOP/s on H100 SXM
  // (≈0.66-0.76), and Megatron's best H100 runs reach 47% MFU end to end (measured-runs.json,
  // megatron_h100), which bounds this from below once bubble and communication are added.
  double gemm_fraction = 0.70;
  // Fraction of the fp8 dense peak reached by fp8 GEMMs including the amax/cast kernels around
  // them: NeMo/Megatron-Bridge fp8 runs are 1.3-1.5x, not 2x, faster than bf16 (measured-runs.json,
  // nemo2407 and bridge groups), i.e. ≈0.70·1.4/2.
  double fp8_gemm_fraction = 0.50;
  // Fraction of the bf16 peak reached by fused (flash) attention, forward+backward averaged:
  // FlashAttention-2 reaches 50-73% of A100 peak forward and less backward (Dao 2023, arXiv
  // 2307.08691 Fig. 5-7); cuDNN/FA3 on H100 are in the same range.
  double flash_attention_fraction = 0.50;
  // Attention core without a fused kernel: batched GEMMs of head_dim width, plus the s² traffic
  // that the memory-bound term adds separately.
  double unfused_attention_fraction = 0.35;
  // Fraction of HBM bandwidth reached by memory-bound kernels (norms, activations, residual adds,
  // softmax, the optimizer): STREAM-like copies reach ≈0.9 on H100; framework element-wise
  // kernels are typically 0.7-0.85.
  double memory_bound_fraction = 0.80;
  // Fraction of the scale-up link's per-direction bandwidth seen as ring busbw: NCCL on 8x H100
  // reaches ≈370 GB/s ring busbw of 450 GB/s line rate (NVIDIA, nccl-tests issue #212;
  // measured-nccl.json h100_8gpu_ring_effective) = 0.82.
  double scale_up_fraction = 0.82;
  // Fraction of a NIC's per-direction bandwidth seen as ring busbw: 46-48 GB/s per NDR 400G NIC
  // (NVIDIA, nccl-tests issue #290) and 24 GB/s per HDR 200G NIC (issue #119) ≈ 0.94-0.96.
  double scale_out_fraction = 0.94;
  // Per-step latency α of a ring over the scale-up link: NCCL 2.30's Ring/LL128 NVLink hardware
  // latency, 1.9 µs per step (src/graph/tuning.cc hwLatencies; ecosystem.md §1.2).
  double scale_up_alpha_s = 1.9e-6;
  // Per-step latency α over the network, added to the fabric's own latency: NCCL's Ring/LL128
  // NET hardware latency, 4.0 µs per step (same table).
  double scale_out_alpha_s = 4.0e-6;
  // Fraction of tensor-parallel communication hidden behind compute. Megatron's default has
  // none (TE's userbuffer TP-overlap is opt-in), so TP collectives are on the critical path.
  double tp_overlap_fraction = 0.0;
  DpOverlap dp_overlap = DpOverlap::overlapped;
  // Gradient bucket size in parameters: Megatron DDP's bucket_size = max(40M, 1M·dp)
  // (megatron/core/distributed/distributed_data_parallel.py); the last bucket cannot overlap.
  double dp_bucket_params = 40e6;
};

}  // namespace simrun
