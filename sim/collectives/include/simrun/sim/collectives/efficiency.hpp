// Collective link efficiencies, in one place for both fidelities: the fraction of each link's
// bandwidth that NCCL rings reach and their per-step latency α. The analytic model's α-β
// closed forms (collective_cost.hpp group_link) read them, and so does the event simulation
// when it times collectives with those forms (StepSimOptions::comm, CollectiveTiming::alpha_beta).
// calibration.json's per-link α/β replace them per GPU kind (calibration.hpp).
//
// Compute efficiencies are not here: both fidelities time kernels with the compute model
// (compute_model.hpp, default_compute_params + calibration.json), and what overlaps with what is
// the workload's (WorkloadOptions: TP overlap, gradient buckets, parameter-gather overlap).
#pragma once

namespace simrun {

struct EfficiencyDefaults {
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
};

}  // namespace simrun
