// The step runner (step_runner.hpp).
#include "step_runner.hpp"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

#include "message_shape.hpp"
#include "mpi_world.hpp"
#include "simrun/common/error.hpp"
#include "simrun/exec/host_device.hpp"

namespace simrun::exec {
namespace {

// How long a rank with nothing to do sleeps between two tests of its requests.
// From kWaitPoll, doubling while nothing arrives, up to kWaitPollMax: each wake-up costs a context
// switch, which where ranks outnumber the cores is taken from a rank that computes.
constexpr std::chrono::microseconds kWaitPoll{20};
constexpr std::chrono::microseconds kWaitPollMax{1000};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Messages move as fp32 (bf16 ones at their byte count: the same bytes).
constexpr double kMessageElemBytes = 4;

// A message's shape in fp32 elements, its counts as MPI's int counts.
struct MpiMessage {
  int count = 1, per_rank = 1;
  size_t elements = 1;
};

MpiMessage mpi_message(const Task& t, int n) {
  const MessageShape m = message_shape(t, size_t(n), kMessageElemBytes);
  if (m.count > size_t(INT_MAX)) throw std::runtime_error("a message of over 8 GiB: MPI counts are int");
  return {int(m.count), int(m.per_rank), m.elements};
}

int group_size(MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  return n;
}

}  // namespace

StepRunner::StepRunner(const StageProgram& program, const ProcessGroups& groups, CpuBackend& backend,
                       Watchdog& watchdog, InjectedFault fault)
    : m_program(program),
      m_groups(groups),
      m_backend(backend),
      m_watchdog(watchdog),
      m_fault(fault),
      m_queue(kStreamCount),
      m_dependents(program.tasks.size()),
      m_stream_buffer(kStreamCount),
      m_recv_buffer(program.tasks.size()) {
  for (uint32_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    for (uint16_t d = 0; d < t.dep_count; ++d) m_dependents[program.dep(t, d)].push_back(i);
    if (t.kind == TaskKind::recv) {
      m_recvs.push_back(i);
      m_recv_buffer[i].resize(mpi_message(t, 2).elements);
    } else {
      m_queue[size_t(t.stream)].push_back(i);
    }
    if (t.kind == TaskKind::compute) ++m_compute_tasks;
    if (t.kind == TaskKind::collective || t.kind == TaskKind::send) {
      const int n = t.kind == TaskKind::collective ? group_size(groups.comm(t.group, t.stream)) : 2;
      std::vector<float>& b = m_stream_buffer[size_t(t.stream)];
      b.resize(std::max(b.size(), mpi_message(t, n).elements));
    }
  }
  int flag = 0;
  int* tag_ub = nullptr;
  check(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag), "MPI_Comm_get_attr");
  if (flag && tag_ub && int64_t(program.tasks.size()) > int64_t(*tag_ub))
    throw std::runtime_error("a stage program has more tasks than MPI tags (MPI_TAG_UB)");
}

double StepRunner::buffer_bytes(const StageProgram& program, const RankLayout& layout) {
  std::vector<size_t> stream_elements(kStreamCount, 0);
  size_t recv_elements = 0;
  for (const Task& t : program.tasks) {
    if (t.kind == TaskKind::recv) recv_elements += mpi_message(t, 2).elements;
    if (t.kind != TaskKind::collective && t.kind != TaskKind::send) continue;
    const int n = t.kind == TaskKind::collective ? int(layout.group_size(t.group)) : 2;
    size_t& e = stream_elements[size_t(t.stream)];
    e = std::max(e, mpi_message(t, n).elements);
  }
  size_t elements = recv_elements;
  for (size_t e : stream_elements) elements += e;
  return double(elements) * sizeof(float);
}

float* StepRunner::buffer(Stream stream) { return m_stream_buffer[size_t(stream)].data(); }

void StepRunner::start_comm(uint32_t i, int64_t t0) {
  const Task& t = m_program.tasks[i];
  MPI_Request request = MPI_REQUEST_NULL, second = MPI_REQUEST_NULL;
  m_times.start_ns[i] = now_ns() - t0;
  if (t.kind == TaskKind::recv) {
    const int source = m_groups.stage_peer(t.peer_stage);
    std::vector<float>& b = m_recv_buffer[i];
    check(MPI_Irecv(b.data(), int(b.size()), MPI_FLOAT, source, int(i), MPI_COMM_WORLD, &request),
          "MPI_Irecv");
  } else if (t.kind == TaskKind::send) {
    const int dest = m_groups.stage_peer(t.peer_stage);
    check(MPI_Isend(buffer(t.stream), mpi_message(t, 2).count, MPI_FLOAT, dest, int(t.peer_task),
                    MPI_COMM_WORLD, &request),
          "MPI_Isend");
  } else {
    MPI_Comm comm = m_groups.comm(t.group, t.stream);
    const int n = group_size(comm);
    float* b = buffer(t.stream);
    const MpiMessage shape = mpi_message(t, n);
    const int count = shape.count, per_rank = shape.per_rank;
    switch (t.coll) {
      case CollectiveOp::all_reduce:
        check(MPI_Iallreduce(MPI_IN_PLACE, b, count, MPI_FLOAT, MPI_SUM, comm, &request), "MPI_Iallreduce");
        break;
      case CollectiveOp::all_gather:
        check(MPI_Iallgather(MPI_IN_PLACE, per_rank, MPI_FLOAT, b, per_rank, MPI_FLOAT, comm, &request),
              "MPI_Iallgather");
        break;
      case CollectiveOp::reduce_scatter:
        check(MPI_Ireduce_scatter_block(MPI_IN_PLACE, b, per_rank, MPI_FLOAT, MPI_SUM, comm, &request),
              "MPI_Ireduce_scatter_block");
        break;
      case CollectiveOp::all_to_all:
        check(MPI_Ialltoall(b, per_rank, MPI_FLOAT, b + size_t(per_rank) * size_t(n), per_rank, MPI_FLOAT,
                            comm, &request),
              "MPI_Ialltoall");
        break;
      case CollectiveOp::broadcast:
        check(MPI_Ibcast(b, count, MPI_FLOAT, 0, comm, &request), "MPI_Ibcast");
        break;
      case CollectiveOp::reduce: {
        int me = 0;
        MPI_Comm_rank(comm, &me);
        check(MPI_Ireduce(me == 0 ? MPI_IN_PLACE : b, b, count, MPI_FLOAT, MPI_SUM, 0, comm, &request),
              "MPI_Ireduce");
        break;
      }
      case CollectiveOp::send_recv: {
        // A ring step (the CP ring's K,V): this rank's bytes to the next member, the previous
        // member's into the buffer's second half. One tag: the stream's steps match in order.
        int me = 0;
        MPI_Comm_rank(comm, &me);
        float* in = b + size_t(count);
        check(MPI_Irecv(in, count, MPI_FLOAT, (me + n - 1) % n, 0, comm, &second), "MPI_Irecv");
        check(MPI_Isend(b, count, MPI_FLOAT, (me + 1) % n, 0, comm, &request), "MPI_Isend");
        break;
      }
    }
  }
  m_started[i] = true;
  if (t.kind != TaskKind::recv) m_stream_busy[size_t(t.stream)] = true;
  for (MPI_Request r : {request, second})
    if (r != MPI_REQUEST_NULL) {
      m_requests.push_back(r);
      m_request_task.push_back(i);
      ++m_open[i];
    }
}

void StepRunner::finish(uint32_t i, int64_t t0) {
  const Task& t = m_program.tasks[i];
  m_times.end_ns[i] = now_ns() - t0;
  m_times.finish_ns = std::max(m_times.finish_ns, m_times.end_ns[i]);
  if (t.kind != TaskKind::recv) {
    m_stream_busy[size_t(t.stream)] = false;
    ++m_next[size_t(t.stream)];
  }
  for (uint32_t d : m_dependents[i]) --m_deps_left[d];
  ++m_done;
  m_watchdog.progressed();
}

StepTimes StepRunner::run(int64_t step) {
  const size_t n = m_program.tasks.size();
  m_times = StepTimes{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), 0};
  m_deps_left.assign(n, 0);
  for (size_t i = 0; i < n; ++i) m_deps_left[i] = m_program.tasks[i].dep_count;
  m_next.assign(kStreamCount, 0);
  m_stream_busy.assign(kStreamCount, false);
  m_started.assign(n, false);
  m_open.assign(n, 0);
  m_requests.clear();
  m_request_task.clear();
  m_done = 0;
  int64_t computed = 0;
  std::vector<int> completed(2 * n + 1);  // at most two requests per task

  const int64_t t0 = now_ns();
  std::chrono::microseconds wait = kWaitPoll;
  while (m_done < int64_t(n)) {
    bool progress = false;
    // Post what can start: receives whose dependencies are met, each comm stream's head.
    for (uint32_t r : m_recvs)
      if (!m_started[r] && m_deps_left[r] == 0) {
        start_comm(r, t0);
        progress = true;
      }
    for (int s = 0; s < kStreamCount; ++s) {
      if (s == int(Stream::compute) || m_stream_busy[size_t(s)] ||
          m_next[size_t(s)] >= m_queue[size_t(s)].size())
        continue;
      const uint32_t head = m_queue[size_t(s)][m_next[size_t(s)]];
      if (m_deps_left[head] == 0 && !m_started[head]) {
        start_comm(head, t0);
        progress = true;
      }
    }
    // Collect what finished.
    auto collect = [&] {
      if (m_requests.empty()) return;
      int done = 0;
      check(MPI_Testsome(int(m_requests.size()), m_requests.data(), &done, completed.data(),
                         MPI_STATUSES_IGNORE),
            "MPI_Testsome");
      if (done == MPI_UNDEFINED || done == 0) return;
      for (int k = 0; k < done; ++k) {
        const uint32_t task = m_request_task[size_t(completed[size_t(k)])];
        if (--m_open[task] == 0) finish(task, t0);
      }
      // Drop the completed requests (MPI set them to MPI_REQUEST_NULL).
      size_t keep = 0;
      for (size_t k = 0; k < m_requests.size(); ++k)
        if (m_requests[k] != MPI_REQUEST_NULL) {
          m_requests[keep] = m_requests[k];
          m_request_task[keep] = m_request_task[k];
          ++keep;
        }
      m_requests.resize(keep);
      m_request_task.resize(keep);
      progress = true;
    };
    collect();
    // The compute stream's head, when its dependencies are met.
    const std::vector<uint32_t>& compute = m_queue[size_t(Stream::compute)];
    const size_t head_index = m_next[size_t(Stream::compute)];
    if (head_index < compute.size()) {
      const uint32_t head = compute[head_index];
      const Task& t = m_program.tasks[head];
      if (m_deps_left[head] == 0) {
        m_watchdog.at(step, head, RankActivity::computing);
        if (m_fault.kind != InjectedFault::Kind::none && m_fault.step == step &&
            computed == m_compute_tasks / 2) {
          if (m_fault.kind == InjectedFault::Kind::kill) raise(SIGKILL);
          for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
        }
        m_times.start_ns[head] = now_ns() - t0;
        m_stream_busy[size_t(Stream::compute)] = true;
        const int64_t cpu0 = thread_kernel_ns();
        if (t.kind == TaskKind::compute) m_backend.run(head);
        // Host work is slept, so its time is the wall clock's.
        m_times.kernel_ns[head] = m_program.shape(t).cls == OpClass::host
                                      ? now_ns() - t0 - m_times.start_ns[head]
                                      : thread_kernel_ns() - cpu0;
        ++computed;
        finish(head, t0);
        continue;
      }
      m_watchdog.at(step, head, RankActivity::waiting);
    }
    if (!progress) {
      if (m_requests.empty())
        throw std::runtime_error("the stage program cannot go on: no task can start and none is in flight");
      // Nothing to do but wait: test, then sleep briefly, so that a waiting rank gives its core to
      // the ranks that compute (MPI's own blocking wait polls, which steals it where ranks
      // outnumber the cores).
      collect();
      if (!progress) {
        std::this_thread::sleep_for(wait);
        wait = std::min(wait * 2, kWaitPollMax);
        continue;
      }
    }
    wait = kWaitPoll;
  }
  m_watchdog.at(step, -1, RankActivity::finished);
  return m_times;
}

}  // namespace simrun::exec
