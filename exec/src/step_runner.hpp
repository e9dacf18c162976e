// Runs one rank's stage program for a training step (exec/, private), with the execution rules of
// the event simulation (sim/event/step_executor.hpp) on real processes: each stream runs its tasks
// one at a time in program order, a task also waits for its dependencies; compute tasks run on
// this thread through the backend, collectives and pipeline sends as non-blocking MPI calls on
// their group's communicator for that stream (a CP ring step as a send to the next member and a
// receive from the previous), receives posted as soon as their dependencies allow. MPI progresses
// whenever the rank calls it: between kernels, and while it waits with nothing else to start. Every task's
// start and end are recorded, in ns from the step's start.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "process_groups.hpp"
#include "simrun/exec/cpu_backend.hpp"
#include "watchdog.hpp"

namespace simrun::exec {

struct StepTimes {
  std::vector<int64_t> start_ns, end_ns;  // per task of the program
  // Compute tasks: the kernel's own time (0 for the other tasks). The cpu backend: the thread's
  // CPU time (CLOCK_THREAD_CPUTIME_ID): where ranks outnumber the cores, a kernel's wall time
  // holds the slices the scheduler gave other ranks, its CPU time is what it costs on a core. The
  // cuda backend: between the kernel's two CUDA events on its stream.
  std::vector<int64_t> kernel_ns;
  int64_t finish_ns = 0;  // this rank's last task end
};

// A fault to inject for the tests (SIMRUN_VALIDATE_FAULT=kill|hang:RANK:STEP): this rank, at that
// step, dies (SIGKILL) or hangs (sleeps) halfway through its compute tasks.
struct InjectedFault {
  enum class Kind { none, kill, hang } kind = Kind::none;
  int64_t step = -1;
};

class StepRunner {
 public:
  StepRunner(const StageProgram& program, const ProcessGroups& groups, CpuBackend& backend,
             Watchdog& watchdog, InjectedFault fault);
  StepTimes run(int64_t step);

  // Bytes of the communication buffers the runner allocates for `program` (a buffer per stream,
  // one per receive), for the memory check before any work starts.
  static double buffer_bytes(const StageProgram& program, const RankLayout& layout);

 private:
  void start_comm(uint32_t task, int64_t t0);
  void finish(uint32_t task, int64_t t0);
  float* buffer(Stream stream);

  const StageProgram& m_program;
  const ProcessGroups& m_groups;
  CpuBackend& m_backend;
  Watchdog& m_watchdog;
  InjectedFault m_fault;
  std::vector<std::vector<uint32_t>> m_queue;       // per stream: its tasks in program order (recvs not)
  std::vector<std::vector<uint32_t>> m_dependents;  // per task
  std::vector<uint32_t> m_recvs;
  std::vector<std::vector<float>> m_stream_buffer;  // per stream: one in-flight task's buffer
  std::vector<std::vector<float>> m_recv_buffer;    // per task (recvs only)
  int64_t m_compute_tasks = 0;
  // Per step.
  StepTimes m_times;
  std::vector<uint32_t> m_deps_left;
  std::vector<size_t> m_next;            // per stream: index into m_queue
  std::vector<bool> m_stream_busy;       // per stream
  std::vector<bool> m_started;           // per task
  std::vector<MPI_Request> m_requests;   // in flight
  std::vector<uint32_t> m_request_task;  // the task of each
  std::vector<int> m_open;               // per task: its requests in flight
  int64_t m_done = 0;
};

}  // namespace simrun::exec
