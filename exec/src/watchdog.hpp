// The watchdog of a validation rank (exec/, private): a rank that dies or hangs must not leave the
// others waiting in a collective forever.
//
// Each rank's watchdog thread writes a heartbeat once a second, a one-line file
// DIR/heartbeat/rank-N: its host and pid, the step, the task it is at, whether it computes or
// waits on communication, how long since its last task finished, and the time. It ends its
// process with one line on stderr and exit code 1 (_exit: the rank's main thread may be inside
// MPI), after which mpirun stops the whole job, when
//   - a rank on the same machine is gone (its pid no longer exists): it names it;
//   - mpirun stops this rank (SIGTERM, e.g. because another rank died): it says so, naming the
//     rank whose process is gone where it can see one;
//   - its own rank has finished no task for `timeout_s`: it names the ranks that stand out, a
//     heartbeat that stopped (the process died or froze), or a rank stuck computing while the
//     others wait for it.
#pragma once

#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace simrun::exec {

enum class RankActivity : int { starting, computing, waiting, finished };

class Watchdog {
 public:
  // Heartbeats in `dir`; `timeout_s` without a finished task stops the job. Installs its SIGTERM
  // handler until stop().
  Watchdog(std::filesystem::path dir, int rank, int ranks, double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // `labels[i]` names task i in the messages (the trace's event names).
  void set_labels(std::vector<std::string> labels);
  // Called by the rank's main thread as it goes (cheap: atomics).
  void at(int64_t step, int64_t task, RankActivity activity) {
    m_step.store(step, std::memory_order_relaxed);
    m_task.store(task, std::memory_order_relaxed);
    m_activity.store(static_cast<int>(activity), std::memory_order_relaxed);
  }
  void progressed();  // a task finished
  void stop();        // the run is over: no more checks

 private:
  void loop();
  void write_heartbeat(double since_progress_s);
  // Prints the line (`cause`: what happened; empty: the timeout), with the ranks that stand out
  // when `look_for_fault`, and ends the process.
  [[noreturn]] void fire(double since_progress_s, const std::string& cause, bool look_for_fault);

  std::filesystem::path m_dir;
  int m_rank, m_ranks;
  double m_timeout_s;
  std::vector<std::string> m_labels;
  std::atomic<int64_t> m_step{-1}, m_task{-1};
  std::atomic<int> m_activity{0};
  std::atomic<int64_t> m_last_progress_ns{0};
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  struct sigaction m_previous_sigterm {};
  std::thread m_thread;
};

}  // namespace simrun::exec
