// The cpu backend of `simrun validate`: the compute tasks of a stage program run on this rank's
// CPU thread. GEMMs with Eigen (single-threaded: one core per rank), attention, norms,
// activations, the loss and AdamW with the plain C++ references of kernels/ref, every other
// memory-bound op (residual adds, rotary, embedding, router, permutes) as a stream over exactly
// the bytes the workload gives it. Buffers are fp32 (the scenario's fp32, or bf16 emulated in
// fp32), of the task's own shape, allocated once per shape before the first step and reused.
//
// The ops do not feed each other's outputs: the step is run to be timed, and each kernel's
// arithmetic is tested against its oracle in tests/kernels. A memory-bound op's shape is read
// back from its bytes and the model (kernel_plan): a norm over `hidden`, a loss over the local
// vocabulary, AdamW over bytes / 28 parameters.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "simrun/exec/kernel_plan.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun::exec {

class CpuBackend {
 public:
  // Plans every compute task of `program` and allocates the buffers of each distinct plan.
  CpuBackend(const Scenario& scenario, const StageProgram& program);

  // Bytes of one plan's fp32 buffers.
  static double plan_bytes(const KernelPlan& plan);
  // Bytes the backend's buffers take for `program`: what the constructor allocates (the memory
  // check before any work starts).
  static double footprint_bytes(const Scenario& scenario, const StageProgram& program);

  // Runs compute task `index` of the program once.
  void run(uint32_t index);

 private:
  struct Buffers {
    KernelPlan plan;
    std::vector<std::vector<float>> data;
    std::vector<int32_t> targets;  // cross-entropy's labels
  };
  const StageProgram& m_program;
  std::vector<int32_t> m_buffers_of;  // per task: index into m_buffers, -1 for non-compute tasks
  std::vector<Buffers> m_buffers;
  int64_t m_adam_step = 0;
};

}  // namespace simrun::exec
