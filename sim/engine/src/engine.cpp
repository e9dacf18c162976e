// Discrete-event engine: binary min-heap of (time, seq, slot); callbacks live in a slot table so
// heap entries stay small; cancelled events are skipped when they reach the top.
#include "simrun/sim/engine/engine.hpp"

#include <algorithm>
#include <string>

#include "simrun/common/error.hpp"

namespace simrun {

EventId Engine::schedule_at(TimeNs when, Callback cb, uint32_t tag) {
  SIMRUN_ASSERT(when >= m_now, "event scheduled in the past: " + std::to_string(when.ns) + " ns < now " +
                                   std::to_string(m_now.ns) + " ns");
  SIMRUN_ASSERT(static_cast<bool>(cb), "event without a callback");
  uint32_t slot;
  if (!m_free_slots.empty()) {
    slot = m_free_slots.back();
    m_free_slots.pop_back();
  } else {
    slot = static_cast<uint32_t>(m_slots.size());
    m_slots.emplace_back();
  }
  const uint64_t seq = m_next_seq++;
  Slot& s = m_slots[slot];
  s.cb = std::move(cb);
  s.seq = seq;
  s.tag = tag;
  s.cancelled = false;
  m_heap.push_back(HeapEntry{when.ns, seq, slot});
  std::push_heap(m_heap.begin(), m_heap.end(), later);
  ++m_scheduled;
  ++m_pending;
  return EventId{seq, slot};
}

bool Engine::is_pending(EventId id) const {
  if (!id.valid() || id.slot >= m_slots.size()) return false;
  const Slot& s = m_slots[id.slot];
  return s.seq == id.seq && !s.cancelled;
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  Slot& s = m_slots[id.slot];
  s.cancelled = true;
  s.cb = nullptr;  // release captured state now
  ++m_cancelled;
  --m_pending;
  return true;
}

void Engine::release(uint32_t slot) {
  m_slots[slot].seq = 0;
  m_slots[slot].cb = nullptr;
  m_free_slots.push_back(slot);
}

bool Engine::step() {
  while (!m_heap.empty()) {
    std::pop_heap(m_heap.begin(), m_heap.end(), later);
    const HeapEntry top = m_heap.back();
    m_heap.pop_back();
    Slot& s = m_slots[top.slot];
    SIMRUN_ASSERT(s.seq == top.seq, "heap entry and slot disagree (event lost)");
    if (s.cancelled) {
      release(top.slot);
      continue;
    }
    SIMRUN_ASSERT(top.time_ns >= m_now.ns, "simulated time ran backwards");
    m_now = TimeNs{top.time_ns};
    Callback cb = std::move(s.cb);
    const uint32_t tag = s.tag;
    release(top.slot);
    --m_pending;
    ++m_processed;
    if (m_log) m_log->push_back(LogEntry{m_now, top.seq, tag});
    cb();
    return true;
  }
  check_conservation();
  return false;
}

void Engine::run() {
  while (step()) {
  }
  check_conservation();
  SIMRUN_ASSERT(m_pending == 0, "events left pending after run()");
}

void Engine::run_until(TimeNs limit) {
  while (!m_heap.empty()) {
    // Drop cancelled entries at the top so the time test sees a live event.
    const HeapEntry& top = m_heap.front();
    if (m_slots[top.slot].cancelled) {
      std::pop_heap(m_heap.begin(), m_heap.end(), later);
      release(m_heap.back().slot);
      m_heap.pop_back();
      continue;
    }
    if (top.time_ns > limit.ns) break;
    step();
  }
  if (limit > m_now) m_now = limit;
  check_conservation();
}

void Engine::check_conservation() const {
  SIMRUN_ASSERT(m_scheduled == m_processed + m_cancelled + m_pending,
                "event lost: scheduled " + std::to_string(m_scheduled) + " != processed " +
                    std::to_string(m_processed) + " + cancelled " + std::to_string(m_cancelled) +
                    " + pending " + std::to_string(m_pending));
}

}  // namespace simrun
