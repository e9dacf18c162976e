// The messages of a stage program's communication tasks as both step runners move them (exec/,
// private): a collective's or send's bytes (Task::comm_bytes) in elements of the runner's element
// size (the cpu runner's fp32, the cuda runner's bf16; bf16 messages are moved as their bytes).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "simrun/sim/workload/workload.hpp"

namespace simrun::exec {

// A task's message over a group of n members (2 for a pipeline send or receive).
struct MessageShape {
  size_t count = 1;     // the whole buffer, at least one element
  size_t per_rank = 1;  // each member's share: all-gather output, reduce-scatter input, all-to-all
  size_t elements = 1;  // the buffer it needs: all-to-all and a ring step send one half, receive the other
};

inline MessageShape message_shape(const Task& t, size_t n, double element_bytes) {
  MessageShape m;
  m.count = size_t(std::max(1.0, std::ceil(t.comm_bytes / element_bytes)));
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

}  // namespace simrun::exec
