// The cuda step runner (cuda_step_runner.hpp).
#include "cuda_step_runner.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "cuda_check.hpp"
#include "message_shape.hpp"
#include "simrun/common/error.hpp"

namespace simrun::exec {
namespace {

constexpr double kElement = 2;  // bytes of a bf16 element: NCCL moves the messages as bf16
// How long the host sleeps between two polls of the end events while the GPU works, and how many
// polls between two asks of NCCL for an asynchronous error (a peer gone, a network failure).
constexpr std::chrono::microseconds kPoll{100};
constexpr int kPollsPerErrorCheck = 100;

// Members of the group a communication task runs over (2 for a pipeline send or receive).
size_t group_size_of(const Task& t, const RankLayout& layout) {
  return t.kind == TaskKind::collective ? size_t(layout.group_size(t.group)) : 2;
}

// Per lane: the bf16 elements of its largest message's buffer.
std::vector<size_t> lane_elements(const StageProgram& program, const Lanes& lanes, const RankLayout& layout) {
  std::vector<size_t> elements(size_t(lanes.count), 0);
  for (uint32_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    if (t.kind == TaskKind::compute) continue;
    size_t& e = elements[size_t(lanes.lane_of[i])];
    e = std::max(e, message_shape(t, group_size_of(t, layout), kElement).elements);
  }
  return elements;
}

int nccl_size(ncclComm_t comm) {
  int n = 1;
  SIMRUN_NCCL_CHECK(ncclCommCount(comm, &n));
  return n;
}

int nccl_rank(ncclComm_t comm) {
  int r = 0;
  SIMRUN_NCCL_CHECK(ncclCommUserRank(comm, &r));
  return r;
}

// ncclGroupStart … ncclGroupEnd, the end also where a call between them throws.
class NcclGroupCall {
 public:
  NcclGroupCall() { SIMRUN_NCCL_CHECK(ncclGroupStart()); }
  ~NcclGroupCall() {
    if (m_open) ncclGroupEnd();
  }
  void end() {
    m_open = false;
    SIMRUN_NCCL_CHECK(ncclGroupEnd());
  }

 private:
  bool m_open = true;
};

}  // namespace

CudaStepRunner::CudaStepRunner(const StageProgram& program, const RankLayout& layout,
                               const NcclGroups& groups, CudaBackend& backend, Watchdog& watchdog,
                               InjectedFault fault)
    : m_program(program),
      m_groups(groups),
      m_backend(backend),
      m_watchdog(watchdog),
      m_fault(fault),
      m_lanes(launch_lanes(program)),
      m_order(launch_order(program, m_lanes)) {
  try {
    m_streams.assign(size_t(m_lanes.count), nullptr);
    for (cudaStream_t& s : m_streams) SIMRUN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const std::vector<size_t> elements = lane_elements(program, m_lanes, layout);
    m_lane_buffer.assign(elements.size(), nullptr);
    for (size_t l = 0; l < elements.size(); ++l)
      if (elements[l] > 0) {
        SIMRUN_CUDA_CHECK(cudaMalloc(&m_lane_buffer[l], elements[l] * size_t(kElement)));
        SIMRUN_CUDA_CHECK(cudaMemset(m_lane_buffer[l], 0, elements[l] * size_t(kElement)));
      }
    m_start.assign(program.tasks.size(), nullptr);
    m_end.assign(program.tasks.size(), nullptr);
    for (auto* events : {&m_start, &m_end})
      for (cudaEvent_t& e : *events) SIMRUN_CUDA_CHECK(cudaEventCreate(&e));
    SIMRUN_CUDA_CHECK(cudaEventCreate(&m_step_start));
  } catch (...) {
    release();
    throw;
  }
  for (const Task& t : program.tasks)
    if (t.kind == TaskKind::compute) ++m_compute_tasks;
}

void CudaStepRunner::release() {
  for (auto* events : {&m_start, &m_end})
    for (cudaEvent_t e : *events)
      if (e) cudaEventDestroy(e);
  if (m_step_start) cudaEventDestroy(m_step_start);
  for (void* b : m_lane_buffer) cudaFree(b);
  for (cudaStream_t s : m_streams)
    if (s) cudaStreamDestroy(s);
  m_start.clear();
  m_end.clear();
  m_step_start = nullptr;
  m_lane_buffer.clear();
  m_streams.clear();
}

CudaStepRunner::~CudaStepRunner() { release(); }

double CudaStepRunner::buffer_bytes(const StageProgram& program, const RankLayout& layout) {
  double bytes = 0;
  for (size_t e : lane_elements(program, launch_lanes(program), layout)) bytes += double(e) * kElement;
  return bytes;
}

void CudaStepRunner::launch_comm(uint32_t i, cudaStream_t stream) {
  const Task& t = m_program.tasks[i];
  auto* b = static_cast<uint16_t*>(m_lane_buffer[size_t(m_lanes.lane_of[i])]);
  if (t.kind == TaskKind::send || t.kind == TaskKind::recv) {
    const size_t count = message_shape(t, 2, kElement).count;
    if (t.kind == TaskKind::send)
      SIMRUN_NCCL_CHECK(
          ncclSend(b, count, ncclBfloat16, 1, m_groups.pipeline(Direction::send, t.peer_stage), stream));
    else
      SIMRUN_NCCL_CHECK(
          ncclRecv(b, count, ncclBfloat16, 0, m_groups.pipeline(Direction::receive, t.peer_stage), stream));
    return;
  }
  ncclComm_t comm = m_groups.comm(t.group, t.stream);
  const int n = nccl_size(comm), me = nccl_rank(comm);
  const MessageShape m = message_shape(t, size_t(n), kElement);
  switch (t.coll) {
    case CollectiveOp::all_reduce:
      SIMRUN_NCCL_CHECK(ncclAllReduce(b, b, m.count, ncclBfloat16, ncclSum, comm, stream));
      return;
    case CollectiveOp::all_gather:  // in place: this rank's share sits at its offset of the output
      SIMRUN_NCCL_CHECK(
          ncclAllGather(b + size_t(me) * m.per_rank, b, m.per_rank, ncclBfloat16, comm, stream));
      return;
    case CollectiveOp::reduce_scatter:
      SIMRUN_NCCL_CHECK(
          ncclReduceScatter(b, b + size_t(me) * m.per_rank, m.per_rank, ncclBfloat16, ncclSum, comm, stream));
      return;
    case CollectiveOp::all_to_all: {
      uint16_t* in = b + m.per_rank * size_t(n);
      NcclGroupCall group;
      for (int peer = 0; peer < n; ++peer) {
        SIMRUN_NCCL_CHECK(
            ncclSend(b + size_t(peer) * m.per_rank, m.per_rank, ncclBfloat16, peer, comm, stream));
        SIMRUN_NCCL_CHECK(
            ncclRecv(in + size_t(peer) * m.per_rank, m.per_rank, ncclBfloat16, peer, comm, stream));
      }
      group.end();
      return;
    }
    case CollectiveOp::broadcast:
      SIMRUN_NCCL_CHECK(ncclBroadcast(b, b, m.count, ncclBfloat16, 0, comm, stream));
      return;
    case CollectiveOp::reduce:
      SIMRUN_NCCL_CHECK(ncclReduce(b, b, m.count, ncclBfloat16, ncclSum, 0, comm, stream));
      return;
    case CollectiveOp::send_recv: {  // a ring step: to the next member, from the previous
      NcclGroupCall group;
      SIMRUN_NCCL_CHECK(ncclSend(b, m.count, ncclBfloat16, (me + 1) % n, comm, stream));
      SIMRUN_NCCL_CHECK(ncclRecv(b + m.count, m.count, ncclBfloat16, (me + n - 1) % n, comm, stream));
      group.end();
      return;
    }
  }
}

StepTimes CudaStepRunner::run(int64_t step) {
  const size_t n = m_program.tasks.size();
  cudaStream_t main = m_streams[size_t(Stream::compute)];
  SIMRUN_CUDA_CHECK(cudaEventRecord(m_step_start, main));
  for (cudaStream_t s : m_streams)
    if (s != main) SIMRUN_CUDA_CHECK(cudaStreamWaitEvent(s, m_step_start, 0));
  int64_t launched_compute = 0;
  for (uint32_t i : m_order) {
    const Task& t = m_program.tasks[i];
    cudaStream_t stream = m_streams[size_t(m_lanes.lane_of[i])];
    if (t.host_syncs > 0) {  // the host waits for the GPU, then launches
      m_watchdog.at(step, i, RankActivity::waiting);
      for (uint16_t d = 0; d < t.dep_count; ++d)
        SIMRUN_CUDA_CHECK(cudaEventSynchronize(m_end[m_program.dep(t, d)]));
    }
    for (uint16_t d = 0; d < t.dep_count; ++d) {
      const uint32_t dep = m_program.dep(t, d);
      if (m_lanes.lane_of[dep] != m_lanes.lane_of[i])
        SIMRUN_CUDA_CHECK(cudaStreamWaitEvent(stream, m_end[dep], 0));
    }
    if (t.kind == TaskKind::compute) {
      m_watchdog.at(step, i, RankActivity::computing);
      if (m_fault.kind != InjectedFault::Kind::none && m_fault.step == step &&
          launched_compute == m_compute_tasks / 2) {
        if (m_fault.kind == InjectedFault::Kind::kill) raise(SIGKILL);
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }
      ++launched_compute;
    }
    SIMRUN_CUDA_CHECK(cudaEventRecord(m_start[i], stream));
    if (t.kind == TaskKind::compute)
      m_backend.enqueue(i, stream);
    else
      launch_comm(i, stream);
    SIMRUN_CUDA_CHECK(cudaEventRecord(m_end[i], stream));
  }
  // The GPU works: tell the watchdog as tasks finish (in launch order, which is each lane's).
  size_t done = 0;
  int polls = 0;
  m_watchdog.at(step, -1, RankActivity::waiting);
  while (done < n) {
    const cudaError_t e = cudaEventQuery(m_end[m_order[done]]);
    if (e == cudaSuccess) {
      ++done;
      m_watchdog.progressed();
      continue;
    }
    if (e != cudaErrorNotReady) SIMRUN_CUDA_CHECK(e);
    if (++polls % kPollsPerErrorCheck == 0) m_groups.throw_async_error();
    std::this_thread::sleep_for(kPoll);
  }
  StepTimes times{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), 0};
  auto ns_since_start = [&](cudaEvent_t e) {
    float ms = 0;
    SIMRUN_CUDA_CHECK(cudaEventElapsedTime(&ms, m_step_start, e));
    return int64_t(double(ms) * 1e6);
  };
  for (size_t i = 0; i < n; ++i) {
    times.start_ns[i] = ns_since_start(m_start[i]);
    times.end_ns[i] = ns_since_start(m_end[i]);
    // A kernel's own time: between its two events on its stream (it shares the SMs with the NCCL
    // kernels running beside it, as in training).
    if (m_program.tasks[i].kind == TaskKind::compute)
      times.kernel_ns[i] = times.end_ns[i] - times.start_ns[i];
    times.finish_ns = std::max(times.finish_ns, times.end_ns[i]);
  }
  m_watchdog.at(step, -1, RankActivity::finished);
  return times;
}

}  // namespace simrun::exec
