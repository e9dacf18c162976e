// Runs one rank's stage program for a training step on its GPU (exec/, private), with the
// execution rules of the event simulation (sim/event/step_executor.hpp) as a framework gets them
// from CUDA streams: the host launches every task once, in launch order (launch_order.hpp), each
// on its lane's stream, after a cudaStreamWaitEvent on each dependency's end event recorded on
// another stream; compute tasks through the cuda backend, collectives as NCCL calls on their
// group's communicator for that stream (a CP ring step as a grouped send to the next member and
// receive from the previous; an all-to-all as grouped sends and receives), pipeline sends and
// receives on their direction's communicator. A task with host syncs (an MoE dispatcher's token
// counts, the gradient norm's .item()) first waits on the host for its dependencies to finish.
// Every task is bracketed by two CUDA events; times are read back after the step, in ns from the
// step's start event. While the GPU works, the host polls the end events to tell the watchdog.
//
// NCCL reduces in bf16 over the message's bytes (the workload's comm_bytes), whatever dtype the
// framework reduces in: the same bytes move.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda_backend.hpp"
#include "launch_order.hpp"
#include "nccl_groups.hpp"
#include "step_runner.hpp"
#include "watchdog.hpp"

namespace simrun::exec {

class CudaStepRunner {
 public:
  // The program's pipeline traffic must match in launch order (pipeline_order_mismatch empty:
  // validate refuses it before any work).
  CudaStepRunner(const StageProgram& program, const RankLayout& layout, const NcclGroups& groups,
                 CudaBackend& backend, Watchdog& watchdog, InjectedFault fault);
  ~CudaStepRunner();
  CudaStepRunner(const CudaStepRunner&) = delete;
  CudaStepRunner& operator=(const CudaStepRunner&) = delete;

  StepTimes run(int64_t step);

  // Device bytes of the communication buffers (a buffer per lane, sized for its largest message).
  static double buffer_bytes(const StageProgram& program, const RankLayout& layout);

 private:
  void launch_comm(uint32_t task, cudaStream_t stream);
  void release();

  const StageProgram& m_program;
  const NcclGroups& m_groups;
  CudaBackend& m_backend;
  Watchdog& m_watchdog;
  InjectedFault m_fault;
  Lanes m_lanes;
  std::vector<uint32_t> m_order;
  std::vector<cudaStream_t> m_streams;  // per lane
  std::vector<void*> m_lane_buffer;     // per lane: device memory for its largest message
  std::vector<cudaEvent_t> m_start, m_end;
  cudaEvent_t m_step_start = nullptr;
  int64_t m_compute_tasks = 0;
};

}  // namespace simrun::exec
