// What runs a compute task of a stage program on a validate backend (exec/): its kernel, its
// dimensions, read back from the task's shape and the model. A GEMM keeps its m, n, k and batch;
// attention its shape (grouped-query heads where the model's group divides the local heads); a
// memory-bound op's element count is read back from its bytes and the model: a norm over
// `hidden`, an activation over `ffn_hidden`, a loss over the local vocabulary, AdamW over
// bytes / 28 parameters, every other op (residual adds, rotary, embedding, router, permutes) a
// stream over exactly its bytes. The cpu backend (cpu_backend.hpp) and the cuda backend
// (src/cuda_backend.hpp) run the same plans.
#pragma once

#include <cstdint>
#include <vector>

#include "simrun/kernels/ref.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun::exec {

// Bytes of an fp32 element: the cpu backend's, and AdamW's states on either backend.
inline constexpr double kFp32Bytes = 4;

// Which code runs a compute task.
enum class KernelKind : uint8_t {
  gemm,
  attention_fwd,
  attention_bwd,
  rmsnorm_fwd,
  rmsnorm_bwd,
  layernorm_fwd,
  layernorm_bwd,
  swiglu_fwd,
  swiglu_bwd,
  gelu_fwd,
  gelu_bwd,
  cross_entropy_fwd,
  cross_entropy_bwd,
  adamw,
  stream,  // y = 0.5·y + x over the op's bytes (read x, y; write y)
  host,    // host work the stream waits for: the task's host_s, slept
};
const char* to_string(KernelKind k);

// A compute task as a backend runs it: the kernel and its dimensions (each backend derives its
// buffers from them: CpuBackend::plan_bytes, CudaBackend::plan_bytes).
struct KernelPlan {
  KernelKind kind = KernelKind::stream;
  int64_t m = 0, n = 0, k = 0, batch = 1;  // gemm: C[m×n] = A[m×k]·B[k×n], batch times
  int64_t rows = 0, width = 0;             // norms, loss: rows × width; elementwise: rows·width elements
  kernels::ref::AttentionShape attention;  // attention
  double host_s = 0;                       // host
};

// How `task` (a compute task of `program`) runs, its memory-bound ops' element counts read back
// from the workload's bytes in elements of `element_bytes` (the cpu backend's fp32: 4; the cuda
// backend's bf16: 2).
KernelPlan kernel_plan(const Scenario& scenario, const StageProgram& program, const Task& task,
                       double element_bytes = kFp32Bytes);

// f(task index, plan) for every compute task of `program`, in program order, its plan read in
// elements of `element_bytes`.
template <class F>
void for_each_compute_plan(const Scenario& scenario, const StageProgram& program, double element_bytes,
                           F&& f) {
  for (uint32_t i = 0; i < program.tasks.size(); ++i)
    if (program.tasks[i].kind == TaskKind::compute)
      f(i, kernel_plan(scenario, program, program.tasks[i], element_bytes));
}

// The identity of a plan: plans equal in it are the same kernel on the same shapes, and a backend
// gives them one set of buffers.
std::vector<int64_t> plan_identity(const KernelPlan& plan);

}  // namespace simrun::exec
