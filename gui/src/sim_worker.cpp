// The GUI's worker thread (sim_worker.hpp).
#include "sim_worker.hpp"

#include "simrun/common/error.hpp"

namespace simrun::gui {

SimWorker::SimWorker(std::function<void()> wake) : m_wake(std::move(wake)) {
  m_thread = std::thread([this] { loop(); });
}

SimWorker::~SimWorker() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stopping = true;
    m_cancel_plan = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

void SimWorker::set_wake(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_wake = std::move(wake);
}

void SimWorker::simulate(uint64_t generation, const Scenario& scenario, const SimulateOptions& options) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_simulation_job = SimulationJob{generation, scenario, options};
    m_busy = true;
  }
  m_cv.notify_all();
}

void SimWorker::plan(const PlanRequest& request, const Catalogs& catalogs) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_plan_job = PlanJob{request, &catalogs};
    m_progress = PlanProgress{};
    m_planning = true;
    m_cancel_plan = true;  // a plan running now gives way; the loop clears the flag for the new one
  }
  m_cv.notify_all();
}

PlanProgress SimWorker::plan_progress() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_progress;
}

std::optional<SimulationResult> SimWorker::take_simulation() {
  std::lock_guard<std::mutex> lock(m_mutex);
  std::optional<SimulationResult> r = std::move(m_simulation_result);
  m_simulation_result.reset();
  return r;
}

std::optional<PlanResult> SimWorker::take_plan(std::string& error) {
  std::lock_guard<std::mutex> lock(m_mutex);
  std::optional<PlanResult> r = std::move(m_plan_result);
  m_plan_result.reset();
  if (!m_plan_error.empty()) {
    error = m_plan_error;
    m_plan_error.clear();
  }
  return r;
}

void SimWorker::loop() {
  std::unique_lock<std::mutex> lock(m_mutex);
  for (;;) {
    m_cv.wait(lock, [&] { return m_stopping || m_simulation_job || m_plan_job; });
    if (m_stopping) return;
    if (m_simulation_job) {
      SimulationJob job = std::move(*m_simulation_job);
      m_simulation_job.reset();
      lock.unlock();
      SimulationResult result;
      result.generation = job.generation;
      try {
        result.output = std::make_shared<const SimulationOutput>(simrun::simulate(job.scenario, job.options));
      } catch (const std::exception& e) {
        result.error = e.what();
      }
      lock.lock();
      m_simulation_result = std::move(result);
      if (!m_simulation_job) m_busy = false;
    } else {
      PlanJob job = std::move(*m_plan_job);
      m_plan_job.reset();
      m_cancel_plan = false;  // under the lock: a plan() from now on cancels this one
      lock.unlock();
      PlanControl control;
      control.threads = 1;
      control.cancel = &m_cancel_plan;
      control.progress = [this](const PlanProgress& p) {
        std::lock_guard<std::mutex> progress_lock(m_mutex);
        m_progress = p;
        if (m_wake) m_wake();
      };
      std::optional<PlanResult> result;
      std::string error;
      try {
        result = simrun::plan(job.request, *job.catalogs, control);
      } catch (const std::exception& e) {
        error = e.what();
      }
      lock.lock();
      if (!m_plan_job) {  // not superseded while it ran
        m_plan_result = std::move(result);
        m_plan_error = error;
        m_planning = false;
      }
    }
    if (m_wake) m_wake();
  }
}

}  // namespace simrun::gui
