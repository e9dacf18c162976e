// The cuda backend of `simrun validate` (exec/, private): the compute tasks of a stage program as
// a training framework runs them on a GPU. GEMMs through cuBLASLt (cublaslt_gemm.hpp) in the
// scenario's precision (bf16; fp8 e4m3 where the scenario's GEMMs are fp8 and the GPU has fp8
// tensor cores, sm_89 and up); attention, the fused residual-add + norms,
// SwiGLU, bias + GELU, the loss and the multi-tensor AdamW step with the kernels of kernels/cuda;
// every other memory-bound op as kernels::cuda::stream_update over exactly its bytes. Activations
// are bf16, the optimizer's state fp32. The plans are the cpu backend's (kernel_plan.hpp), read in
// bf16 elements; buffers are device memory, one set per distinct plan, allocated before the first
// step. As on the cpu backend, ops do not feed each other's outputs: the step is run to be timed.
//
// enqueue() only launches: the step runner (cuda_step_runner.hpp) orders the launches on their
// streams and times them with CUDA events.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cublaslt_gemm.hpp"
#include "simrun/exec/kernel_plan.hpp"
#include "simrun/kernels/cuda.hpp"

namespace simrun::exec {

// The GEMM precision the cuda backend runs for `scenario` on a GPU of compute capability
// `major`.`minor`: fp8 where the scenario's GEMMs are fp8 and the GPU has fp8 tensor cores, else
// bf16 (validate's command line has already turned fp32 into bf16, fp4 into fp8, and fp8 on a GPU
// without it into bf16, saying so). A GEMM whose shape fp8 cannot take runs in bf16
// (gemm_precision_for).
GemmPrecision cuda_gemm_precision(const Scenario& scenario, int major, int minor);

// Why the cuda backend's kernels cannot run `program` (a head_dim its flash attention does not
// take), or "".
std::string cuda_backend_refusal(const Scenario& scenario, const StageProgram& program);

class CudaBackend {
 public:
  // Plans every compute task of `program`, allocates and fills the buffers of each distinct plan
  // on the current device, creates the GEMMs' cuBLASLt descriptors, and runs every plan once.
  CudaBackend(const Scenario& scenario, const StageProgram& program, GemmPrecision precision);
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // Device bytes the constructor allocates for `program` (the memory check before any work).
  static double footprint_bytes(const Scenario& scenario, const StageProgram& program,
                                GemmPrecision precision);

  // Device bytes of one plan's buffers (its kernel plan read in bf16 elements, kElementBytes).
  static double plan_bytes(const KernelPlan& plan, GemmPrecision precision);
  static constexpr double kElementBytes = 2;

  // Launches compute task `index` of the program on `stream`.
  void enqueue(uint32_t index, cudaStream_t stream);

 private:
  struct Plan;
  void release();
  const StageProgram& m_program;
  cublasLtHandle_t m_lt = nullptr;
  void* m_gemm_workspace = nullptr;
  std::vector<int32_t> m_plan_of;  // per task: index into m_plans, -1 for non-compute tasks
  std::vector<std::unique_ptr<Plan>> m_plans;
  int64_t m_adam_step = 0;
};

}  // namespace simrun::exec
