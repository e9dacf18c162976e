// The discrete-event engine (ns-3 / SimGrid style): simulated time is an integer TimeNs, events
// are ordered by (time, sequence number) so equal times run in insertion order and every run is
// deterministic; a binary heap holds them; cancellation is by flag (the heap entry is skipped
// when popped). No globals: every Simulation owns its Engine, so two can live in one process.
//
// Invariants checked with SIMRUN_ASSERT: time never runs backwards, nothing is scheduled in the
// past, and no event is lost (scheduled = executed + cancelled + pending, at every quiescent point).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "simrun/common/units.hpp"

namespace simrun {

// Handle of a scheduled event. A default-constructed id refers to nothing.
struct EventId {
  uint64_t seq = 0;   // 1-based sequence number; 0 = none
  uint32_t slot = 0;  // index into the engine's callback table
  bool valid() const { return seq != 0; }
};

class Engine {
 public:
  using Callback = std::function<void()>;

  // One executed event, for determinism checks (`set_log`).
  struct LogEntry {
    TimeNs time;
    uint64_t seq = 0;
    uint32_t tag = 0;  // caller-chosen category, e.g. kind of event
    bool operator==(const LogEntry&) const = default;
  };

  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  TimeNs now() const { return m_now; }

  // Schedules `cb` at absolute time `when` (>= now()). Returns a handle for cancel().
  EventId schedule_at(TimeNs when, Callback cb, uint32_t tag = 0);
  EventId schedule_in(TimeNs delay, Callback cb, uint32_t tag = 0) {
    return schedule_at(m_now + delay, std::move(cb), tag);
  }
  // Cancels a pending event; returns false if it already ran or was cancelled.
  bool cancel(EventId id);
  bool is_pending(EventId id) const;

  // Runs the next event; false when the queue is empty.
  bool step();
  // Runs until no events remain.
  void run();
  // Runs every event with time <= limit, then sets now() to limit (if it is later).
  void run_until(TimeNs limit);

  bool empty() const { return m_pending == 0; }
  uint64_t events_scheduled() const { return m_scheduled; }
  uint64_t events_processed() const { return m_processed; }
  uint64_t events_cancelled() const { return m_cancelled; }
  uint64_t events_pending() const { return m_pending; }

  // Records every executed event into *log (nullptr stops recording). The log must outlive runs.
  void set_log(std::vector<LogEntry>* log) { m_log = log; }

 private:
  struct HeapEntry {
    int64_t time_ns;
    uint64_t seq;
    uint32_t slot;
  };
  struct Slot {
    Callback cb;
    uint64_t seq = 0;  // seq of the event occupying the slot; 0 = free
    uint32_t tag = 0;
    bool cancelled = false;
  };
  static bool later(const HeapEntry& a, const HeapEntry& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.seq > b.seq;
  }
  void release(uint32_t slot);
  void check_conservation() const;

  TimeNs m_now{};
  uint64_t m_next_seq = 1;
  uint64_t m_scheduled = 0, m_processed = 0, m_cancelled = 0, m_pending = 0;
  std::vector<HeapEntry> m_heap;  // min-heap on (time, seq) via std::push_heap with `later`
  std::vector<Slot> m_slots;
  std::vector<uint32_t> m_free_slots;
  std::vector<LogEntry>* m_log = nullptr;
};

}  // namespace simrun
