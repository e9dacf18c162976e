// The GUI's worker thread (gui/): the event simulation of the scenario being edited, and a plan,
// run off the frame loop, so that a frame never waits for the simulator. One thread runs one job
// at a time, simulations before plans; a newer simulation request replaces one not yet started
// (the slider moved on), and a result carries the generation of the document it ran so that a late
// one is dropped. A plan is cancelled by a newer plan and when the worker goes (the window
// closes). The worker wakes the frame loop when a result is ready (`wake`, e.g. glfwPostEmptyEvent,
// called with the worker's lock held: it must not call back into the worker).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/planner/planner.hpp"

namespace simrun::gui {

struct SimulationResult {
  uint64_t generation = 0;
  std::shared_ptr<const SimulationOutput> output;  // null when it failed
  std::string error;                               // why it failed, one line
};

class SimWorker {
 public:
  explicit SimWorker(std::function<void()> wake = {});
  ~SimWorker();
  SimWorker(const SimWorker&) = delete;
  SimWorker& operator=(const SimWorker&) = delete;

  void set_wake(std::function<void()> wake);
  void simulate(uint64_t generation, const Scenario& scenario, const SimulateOptions& options);
  void plan(const PlanRequest& request, const Catalogs& catalogs);

  bool busy() const { return m_busy.load(); }
  bool planning() const { return m_planning.load(); }
  PlanProgress plan_progress() const;
  std::optional<SimulationResult> take_simulation();
  // The plan's result, or its error (one line) in `error`.
  std::optional<PlanResult> take_plan(std::string& error);

 private:
  void loop();
  struct SimulationJob {
    uint64_t generation = 0;
    Scenario scenario;
    SimulateOptions options;
  };
  struct PlanJob {
    PlanRequest request;
    const Catalogs* catalogs = nullptr;
  };

  std::function<void()> m_wake;
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::optional<SimulationJob> m_simulation_job;
  std::optional<PlanJob> m_plan_job;
  std::optional<SimulationResult> m_simulation_result;
  std::optional<PlanResult> m_plan_result;
  std::string m_plan_error;
  PlanProgress m_progress;
  std::atomic<bool> m_busy{false}, m_planning{false};
  std::atomic<bool> m_cancel_plan{false};
  bool m_stopping = false;
  std::thread m_thread;
};

}  // namespace simrun::gui
