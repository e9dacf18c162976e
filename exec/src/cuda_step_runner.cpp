// The cuda step runner (cuda_step_runner.hpp).
#include "cuda_step_runner.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "simrun/common/error.hpp"

namespace simrun::exec {
namespace {

constexpr double kElement = 2;  // bytes of a bf16 element: NCCL moves the messages as bf16
// How long the host sleeps between two polls of the end events while the GPU works.
constexpr std::chrono::microseconds kPoll{100};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

size_t count_of(double bytes) { return size_t(std::max(1.0, std::ceil(bytes / kElement))); }

// bf16 elements of a task's message over a group of n, and of the buffer it needs: an all-gather's
// output and a reduce-scatter's input are n shares; an all-to-all and a ring step send one buffer
// and receive into a second.
struct Message {
  size_t count = 1, per_rank = 1, elements = 1;
};

Message message_of(const Task& t, size_t n) {
  Message m;
  m.count = count_of(t.comm_bytes);
  m.per_rank = std::max<size_t>(1, m.count / n);
  m.elements = m.count;
  if (t.kind == TaskKind::collective) switch (t.coll) {
      case CollectiveOp::all_gather:
      case CollectiveOp::reduce_scatter:
        m.elements = std::max(m.elements, m.per_rank * n);
        break;
      case CollectiveOp::all_to_all:
        m.elements = 2 * m.per_rank * n;
        break;
      case CollectiveOp::send_recv:
        m.elements = 2 * m.count;
        break;
      default:
        break;
    }
  return m;
}

size_t group_size_of(const Task& t, const RankLayout& layout) {
  return t.kind == TaskKind::collective ? size_t(layout.group_size(t.group)) : 2;
}

int nccl_size(ncclComm_t comm) {
  int n = 1;
  check_nccl(ncclCommCount(comm, &n), "ncclCommCount");
  return n;
}

int nccl_rank(ncclComm_t comm) {
  int r = 0;
  check_nccl(ncclCommUserRank(comm, &r), "ncclCommUserRank");
  return r;
}

}  // namespace

CudaStepRunner::CudaStepRunner(const StageProgram& program, const NcclGroups& groups, CudaBackend& backend,
                               Watchdog& watchdog, InjectedFault fault)
    : m_program(program),
      m_groups(groups),
      m_backend(backend),
      m_watchdog(watchdog),
      m_fault(fault),
      m_lanes(launch_lanes(program)),
      m_order(launch_order(program, m_lanes)) {
  if (const std::string why = pipeline_order_mismatch(program, m_order); !why.empty())
    throw std::runtime_error("the cuda backend cannot match this pipeline's messages in order: " + why);
  m_streams.assign(size_t(m_lanes.count), nullptr);
  for (cudaStream_t& s : m_streams)
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<size_t> elements(size_t(m_lanes.count), 0);
  for (uint32_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    if (t.kind == TaskKind::compute) {
      ++m_compute_tasks;
      continue;
    }
    const size_t n = t.kind == TaskKind::collective ? size_t(nccl_size(groups.comm(t.group, t.stream))) : 2;
    size_t& e = elements[size_t(m_lanes.lane_of[i])];
    e = std::max(e, message_of(t, n).elements);
  }
  m_lane_buffer.assign(size_t(m_lanes.count), nullptr);
  for (size_t l = 0; l < elements.size(); ++l)
    if (elements[l] > 0) {
      check(cudaMalloc(&m_lane_buffer[l], elements[l] * size_t(kElement)), "cudaMalloc");
      check(cudaMemset(m_lane_buffer[l], 0, elements[l] * size_t(kElement)), "cudaMemset");
    }
  m_start.assign(program.tasks.size(), nullptr);
  m_end.assign(program.tasks.size(), nullptr);
  for (auto* events : {&m_start, &m_end})
    for (cudaEvent_t& e : *events) check(cudaEventCreate(&e), "cudaEventCreate");
  check(cudaEventCreate(&m_step_start), "cudaEventCreate");
}

CudaStepRunner::~CudaStepRunner() {
  for (auto* events : {&m_start, &m_end})
    for (cudaEvent_t e : *events) cudaEventDestroy(e);
  cudaEventDestroy(m_step_start);
  for (void* b : m_lane_buffer) cudaFree(b);
  for (cudaStream_t s : m_streams) cudaStreamDestroy(s);
}

double CudaStepRunner::buffer_bytes(const StageProgram& program, const RankLayout& layout) {
  const Lanes lanes = launch_lanes(program);
  std::vector<size_t> elements(size_t(lanes.count), 0);
  for (uint32_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    if (t.kind == TaskKind::compute) continue;
    size_t& e = elements[size_t(lanes.lane_of[i])];
    e = std::max(e, message_of(t, group_size_of(t, layout)).elements);
  }
  double bytes = 0;
  for (size_t e : elements) bytes += double(e) * kElement;
  return bytes;
}

void CudaStepRunner::launch_comm(uint32_t i, cudaStream_t stream) {
  const Task& t = m_program.tasks[i];
  auto* b = static_cast<uint16_t*>(m_lane_buffer[size_t(m_lanes.lane_of[i])]);
  if (t.kind == TaskKind::send || t.kind == TaskKind::recv) {
    const bool send = t.kind == TaskKind::send;
    const size_t count = message_of(t, 2).count;
    ncclComm_t comm = m_groups.pipeline(send, t.peer_stage);
    check_nccl(send ? ncclSend(b, count, ncclBfloat16, 1, comm, stream)
                    : ncclRecv(b, count, ncclBfloat16, 0, comm, stream),
               send ? "ncclSend" : "ncclRecv");
    return;
  }
  ncclComm_t comm = m_groups.comm(t.group, t.stream);
  const int n = nccl_size(comm), me = nccl_rank(comm);
  const Message m = message_of(t, size_t(n));
  switch (t.coll) {
    case CollectiveOp::all_reduce:
      check_nccl(ncclAllReduce(b, b, m.count, ncclBfloat16, ncclSum, comm, stream), "ncclAllReduce");
      return;
    case CollectiveOp::all_gather:  // in place: this rank's share sits at its offset of the output
      check_nccl(ncclAllGather(b + size_t(me) * m.per_rank, b, m.per_rank, ncclBfloat16, comm, stream),
                 "ncclAllGather");
      return;
    case CollectiveOp::reduce_scatter:
      check_nccl(
          ncclReduceScatter(b, b + size_t(me) * m.per_rank, m.per_rank, ncclBfloat16, ncclSum, comm, stream),
          "ncclReduceScatter");
      return;
    case CollectiveOp::all_to_all: {
      uint16_t* in = b + m.per_rank * size_t(n);
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int peer = 0; peer < n; ++peer) {
        check_nccl(ncclSend(b + size_t(peer) * m.per_rank, m.per_rank, ncclBfloat16, peer, comm, stream),
                   "ncclSend");
        check_nccl(ncclRecv(in + size_t(peer) * m.per_rank, m.per_rank, ncclBfloat16, peer, comm, stream),
                   "ncclRecv");
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd");
      return;
    }
    case CollectiveOp::broadcast:
      check_nccl(ncclBroadcast(b, b, m.count, ncclBfloat16, 0, comm, stream), "ncclBroadcast");
      return;
    case CollectiveOp::reduce:
      check_nccl(ncclReduce(b, b, m.count, ncclBfloat16, ncclSum, 0, comm, stream), "ncclReduce");
      return;
    case CollectiveOp::send_recv: {  // a ring step: to the next member, from the previous
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      check_nccl(ncclSend(b, m.count, ncclBfloat16, (me + 1) % n, comm, stream), "ncclSend");
      check_nccl(ncclRecv(b + m.count, m.count, ncclBfloat16, (me + n - 1) % n, comm, stream), "ncclRecv");
      check_nccl(ncclGroupEnd(), "ncclGroupEnd");
      return;
    }
  }
}

StepTimes CudaStepRunner::run(int64_t step) {
  const size_t n = m_program.tasks.size();
  cudaStream_t main = m_streams[size_t(Stream::compute)];
  check(cudaEventRecord(m_step_start, main), "cudaEventRecord");
  for (cudaStream_t s : m_streams)
    if (s != main) check(cudaStreamWaitEvent(s, m_step_start, 0), "cudaStreamWaitEvent");
  int64_t launched_compute = 0;
  for (uint32_t i : m_order) {
    const Task& t = m_program.tasks[i];
    cudaStream_t stream = m_streams[size_t(m_lanes.lane_of[i])];
    if (t.host_syncs > 0) {  // the host waits for the GPU, then launches
      m_watchdog.at(step, i, RankActivity::waiting);
      for (uint16_t d = 0; d < t.dep_count; ++d)
        check(cudaEventSynchronize(m_end[m_program.dep(t, d)]), "cudaEventSynchronize");
    }
    for (uint16_t d = 0; d < t.dep_count; ++d) {
      const uint32_t dep = m_program.dep(t, d);
      if (m_lanes.lane_of[dep] != m_lanes.lane_of[i])
        check(cudaStreamWaitEvent(stream, m_end[dep], 0), "cudaStreamWaitEvent");
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
    check(cudaEventRecord(m_start[i], stream), "cudaEventRecord");
    if (t.kind == TaskKind::compute)
      m_backend.enqueue(i, stream);
    else
      launch_comm(i, stream);
    check(cudaEventRecord(m_end[i], stream), "cudaEventRecord");
  }
  // The GPU works: tell the watchdog as tasks finish (in launch order, which is each lane's).
  size_t done = 0;
  m_watchdog.at(step, -1, RankActivity::waiting);
  while (done < n) {
    const cudaError_t e = cudaEventQuery(m_end[m_order[done]]);
    if (e == cudaSuccess) {
      ++done;
      m_watchdog.progressed();
      continue;
    }
    if (e != cudaErrorNotReady) check(e, "the step on the GPU");
    std::this_thread::sleep_for(kPoll);
  }
  StepTimes times{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), 0};
  auto ns_since_start = [&](cudaEvent_t e) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, m_step_start, e), "cudaEventElapsedTime");
    return int64_t(double(ms) * 1e6);
  };
  for (size_t i = 0; i < n; ++i) {
    times.start_ns[i] = ns_since_start(m_start[i]);
    times.end_ns[i] = ns_since_start(m_end[i]);
    // A kernel's own time: between its two events on its stream (the cpu backend's CPU time).
    if (m_program.tasks[i].kind == TaskKind::compute) times.cpu_ns[i] = times.end_ns[i] - times.start_ns[i];
    times.finish_ns = std::max(times.finish_ns, times.end_ns[i]);
  }
  m_watchdog.at(step, -1, RankActivity::finished);
  return times;
}

}  // namespace simrun::exec
