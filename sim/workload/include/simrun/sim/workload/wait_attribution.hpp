// The rule both fidelities use to say what an idle compute stream waited for (the breakdown's
// exposed communication and bubble): the wait [from, to) of an op goes to the task it waited
// for last, its blocker; of that, the part before the blocker was issued goes, by the same rule,
// to what the blocker itself waited for (an expert-TP all-gather waiting for its all-to-all), so
// each stretch of the wait lands on the task that was running then. The event executor and the
// estimate's probe call it with their own clocks and books.
#pragma once

#include <algorithm>
#include <cstdint>

#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// `issued_at(task)`: when the task was issued on its stream (a task whose lead is its own, such
// as a compute kernel, may return anything <= `from`); `waited_for(task)`: its own blocker, or
// kNoTask; `book(task, lo, hi)`: charges [lo, hi) to a task, or to nothing waited for (kNoTask,
// the bubble). Each stretch is booked once, latest first.
// `waited_for` may return kHostWait: the task was ready before the host issued it (a collective
// after a host sync, docs/model.md "Host overhead"); the rest of the wait is the host's, booked
// to kHostWait.
inline constexpr uint32_t kHostWait = kNoTask - 1;

template <class Time, class IssuedAt, class WaitedFor, class Book>
void attribute_wait(uint32_t blocker, Time from, Time to, IssuedAt&& issued_at, WaitedFor&& waited_for,
                    Book&& book) {
  while (from < to) {
    if (blocker == kNoTask || blocker == kHostWait) {
      book(blocker, from, to);
      return;
    }
    const Time issued = std::max(from, issued_at(blocker));
    if (issued < to) book(blocker, issued, to);
    to = std::min(to, issued);
    blocker = waited_for(blocker);
  }
}

}  // namespace simrun
