// The watchdog (watchdog.hpp).
#include "watchdog.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "simrun/common/echo.hpp"

namespace simrun::exec {
namespace {

// A heartbeat older than this means its process stopped writing it (the writer ticks every second).
constexpr double kStaleHeartbeatS = 5;

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* activity_name(int a) {
  switch (static_cast<RankActivity>(a)) {
    case RankActivity::starting:
      return "starting";
    case RankActivity::computing:
      return "computing";
    case RankActivity::waiting:
      return "waiting on communication";
    case RankActivity::finished:
      return "finished";
  }
  return "?";
}

// How often the watchdog looks (its heartbeat is written every kHeartbeatTicks looks).
constexpr std::chrono::milliseconds kTick{200};
constexpr int kHeartbeatTicks = 5;

// Set by SIGTERM (mpirun stopping the job, e.g. because a rank died): the watchdog says why first.
std::atomic<bool> g_terminated{false};
extern "C" void on_sigterm(int) { g_terminated.store(true); }

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

struct Heartbeat {
  bool found = false;
  std::string host;
  long pid = 0;
  int64_t step = -1, task = -1;
  int activity = 0;
  double since_progress_s = 0;
  int64_t written_ns = 0;
};

Heartbeat read_heartbeat(const std::filesystem::path& file) {
  Heartbeat h;
  std::ifstream in(file);
  if (in >> h.host >> h.pid >> h.step >> h.task >> h.activity >> h.since_progress_s >> h.written_ns)
    h.found = true;
  return h;
}

}  // namespace

Watchdog::Watchdog(std::filesystem::path dir, int rank, int ranks, double timeout_s)
    : m_dir(std::move(dir)), m_rank(rank), m_ranks(ranks), m_timeout_s(timeout_s) {
  std::error_code ec;
  std::filesystem::create_directories(m_dir, ec);
  m_last_progress_ns.store(wall_ns());
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, &m_previous_sigterm);
  m_thread = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::set_labels(std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_labels = std::move(labels);
}

void Watchdog::progressed() { m_last_progress_ns.store(wall_ns(), std::memory_order_relaxed); }

void Watchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stopping) return;
    m_stopping = true;
  }
  m_activity.store(static_cast<int>(RankActivity::finished));
  m_wake.notify_all();
  if (m_thread.joinable()) m_thread.join();
  write_heartbeat(0);
  sigaction(SIGTERM, &m_previous_sigterm, nullptr);  // mpirun may stop the rank as usual again
}

void Watchdog::write_heartbeat(double since_progress_s) {
  const std::filesystem::path file = m_dir / fmt::format("rank-{}", m_rank);
  const std::filesystem::path temporary = m_dir / fmt::format(".rank-{}.tmp", m_rank);
  {
    std::ofstream out(temporary);
    out << host_name() << ' ' << long(getpid()) << ' ' << m_step.load() << ' ' << m_task.load() << ' '
        << m_activity.load() << ' ' << since_progress_s << ' ' << wall_ns() << '\n';
  }
  std::error_code ec;
  std::filesystem::rename(temporary, file, ec);  // readers never see half a line
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(m_mutex);
  const std::string host = host_name();
  for (int tick = 0; !m_stopping; ++tick) {
    m_wake.wait_for(lock, kTick);
    if (m_stopping) break;
    const double since = double(wall_ns() - m_last_progress_ns.load()) * 1e-9;
    if (g_terminated.load()) fire(since, "stopped by mpirun (SIGTERM)", true);
    if (tick % kHeartbeatTicks != 0) continue;
    write_heartbeat(since);
    // A rank on this machine whose process is gone: say so at once.
    for (int r = 0; r < m_ranks; ++r) {
      if (r == m_rank) continue;
      const Heartbeat h = read_heartbeat(m_dir / fmt::format("rank-{}", r));
      if (h.found && h.host == host && static_cast<RankActivity>(h.activity) != RankActivity::finished &&
          kill(pid_t(h.pid), 0) != 0 && errno == ESRCH)
        fire(since, fmt::format("rank {} (pid {}) died: its process is gone", r, h.pid), false);
    }
    if (since > m_timeout_s) fire(since, "", true);
  }
}

void Watchdog::fire(double since_progress_s, const std::string& cause, bool look_for_fault) {
  const int64_t task = m_task.load();
  const std::string label =
      task >= 0 && size_t(task) < m_labels.size() ? m_labels[size_t(task)] : fmt::format("task {}", task);
  std::string suspects;
  const int64_t now = wall_ns();
  const std::string host = host_name();
  for (int r = 0; r < m_ranks; ++r) {
    if (r == m_rank) continue;
    const Heartbeat h = read_heartbeat(m_dir / fmt::format("rank-{}", r));
    std::string why;
    if (!h.found)
      why = "no heartbeat";
    else if (h.host == host && kill(pid_t(h.pid), 0) != 0 && errno == ESRCH)
      why = fmt::format("pid {} is gone: it died", h.pid);
    else if (double(now - h.written_ns) * 1e-9 > kStaleHeartbeatS)
      why = fmt::format("its heartbeat stopped {:.0f} s ago (pid {} died or froze)",
                        double(now - h.written_ns) * 1e-9, h.pid);
    else if (static_cast<RankActivity>(h.activity) == RankActivity::computing &&
             h.since_progress_s > m_timeout_s / 2)
      why =
          fmt::format("stuck computing task {} of step {} for {:.0f} s", h.task, h.step, h.since_progress_s);
    if (!why.empty()) suspects += fmt::format("{}rank {} ({})", suspects.empty() ? "" : "; ", r, why);
  }
  const bool self_stuck = static_cast<RankActivity>(m_activity.load()) == RankActivity::computing;
  std::string line =
      cause.empty()
          ? fmt::format(
                "simrun validate: rank {}: no task finished for {:.0f} s (--timeout {:.0f}), {} at '{}' of "
                "step {}",
                m_rank, since_progress_s, m_timeout_s, activity_name(m_activity.load()), label, m_step.load())
          : fmt::format("simrun validate: rank {}: {}, while this rank was {} at '{}' of step {}", m_rank,
                        cause, activity_name(m_activity.load()), label, m_step.load());
  if (!look_for_fault) {
  } else if (!suspects.empty()) {
    line += "; the rank at fault: " + suspects;
  } else if (self_stuck) {
    line += "; this rank is the one stuck";
  } else {
    line += "; no other rank stands out (every heartbeat is fresh and waiting)";
  }
  line += "; stopping the job";
  std::cerr << printable(line, kErrorLineMaxBytes) << std::endl;
  _exit(1);
}

}  // namespace simrun::exec
