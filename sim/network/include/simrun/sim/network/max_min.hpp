// Max-min fair rates of flows sharing weighted links, by progressive filling (Bertsekas &
// Gallager, Data Networks, §6.5.2; SimGrid's lmm solver does the same with weights): every
// unfrozen flow's rate rises together until a link saturates, which freezes its flows at that
// share, or a flow reaches its own cap. The one solver of the project: the flow network
// (network.hpp) runs it at every settle, the closed-form fabric costs (collective_cost.hpp)
// between the completions of their channel groups.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace simrun {

// One problem at a time. Buffers are kept between problems, so a caller that solves often (the
// network, at every start and end of a flow) does not allocate.
class MaxMinSolver {
 public:
  // Starts a new, empty problem.
  void clear();
  // A link of `capacity` bytes/s (>= 0); returns its index in this problem.
  uint32_t add_link(double capacity);
  // A flow with a payload-rate cap (+inf when uncapped); returns its index in this problem. Its
  // link uses follow through add_use, until the next add_flow.
  uint32_t add_flow(double cap);
  // The last added flow carries `weight` (> 0) bytes on `link` per payload byte. A link may be
  // listed more than once; the weights add.
  void add_use(uint32_t link, double weight);

  // Max-min fair payload rates (bytes/s), one per flow in order of addition. A flow on no link
  // gets its cap (+inf when uncapped). Ties between equal offers go to the lower index, so
  // the result does not depend on anything but the problem.
  const std::vector<double>& solve();

 private:
  struct Use {
    uint32_t link;
    double weight;
  };
  struct Member {
    uint32_t flow;
    double weight;
  };
  // The flow's uses, a range of m_uses.
  std::pair<std::vector<Use>::const_iterator, std::vector<Use>::const_iterator> uses_of(size_t flow) const;
  // Each link's flows (m_first_member, m_members) and its unfrozen weight, from the uses.
  void link_members();
  // Progressive filling from the residual capacities: m_rate, one per flow.
  void fill();

  // The problem.
  std::vector<double> m_capacity;     // per link
  std::vector<double> m_cap;          // per flow
  std::vector<uint32_t> m_first_use;  // per flow: start of its uses in m_uses
  std::vector<Use> m_uses;
  // Scratch of solve().
  std::vector<uint32_t> m_first_member;  // per link + 1: its flows in m_members
  std::vector<Member> m_members;
  std::vector<double> m_residual, m_unfrozen_weight;  // per link
  std::vector<char> m_frozen;                         // per flow
  std::vector<double> m_rate;                         // per flow
};

}  // namespace simrun
