// What one GPU op is, as the workload describes it: its class, its shape and the HBM traffic it
// moves on one GPU; no time. The cost pass (workload_cost.hpp) times it with the compute model.
#pragma once

#include <compare>
#include <cstdint>

#include "simrun/topologies/hardware_spec.hpp"  // Precision

namespace simrun {

enum class OpClass : uint8_t {
  gemm,           // dense matmul M×K · K×N (batch copies)
  attention_fwd,  // fused attention forward (flash) or unfused score+softmax+PV
  attention_bwd,  // its backward
  memory,         // elementwise / norm / softmax / optimizer: HBM-bound
  host,           // host work the GPU's stream waits for (launches, syncs, logging): host_s
};

// Which attention kernel runs the core.
enum class AttentionKernel : uint8_t {
  fused,    // the architecture's best fused kernel (cuDNN / FlashAttention-3 on Hopper, FA2 on Ampere)
  flash2,   // FlashAttention-2 where it is not the best one (eager PyTorch on Hopper)
  unfused,  // scores and probabilities materialised in HBM (Dao et al. 2022's baseline)
};

// One operation's shape and work on one GPU.
struct OpShape {
  OpClass cls = OpClass::memory;
  Precision precision = Precision::bf16;  // of the GEMM inputs (fp8 runs GEMMs in fp8)
  // GEMM: C[M×N] = A[M×K]·B[K×N], `batch` independent copies (a grouped GEMM: one per expert).
  double m = 0, n = 0, k = 0, batch = 1;
  // Attention: per-GPU query tokens (b·s/cp), key tokens seen per query (s), head dim,
  // local heads, the kernel, and whether the mask is causal.
  double tokens = 0, seq_kv = 0, head_dim = 0, heads = 0;
  AttentionKernel attention_kernel = AttentionKernel::fused;
  bool causal = true;
  double bytes = 0;  // HBM bytes read + written, overlapped with the op's math (roofline)
  // HBM bytes of work fused in front of the op that does not overlap its math, e.g. the fp8
  // amax+cast of a GEMM's input (Transformer Engine); timed at the memory-bound rate.
  double serial_bytes = 0;
  double host_s = 0;  // OpClass::host: seconds, e.g. 0.03

  auto operator<=>(const OpShape&) const = default;
};

}  // namespace simrun
