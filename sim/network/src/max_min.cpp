// Progressive filling with two heaps of offers: each link offers residual / unfrozen weight per
// unit of weight, each capped flow its cap; the smallest offer freezes its flows at that rate and
// the links they cross offer anew (stale offers are dropped when they surface).
#include "simrun/sim/network/max_min.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

#include "simrun/common/error.hpp"

namespace simrun {

void MaxMinSolver::clear() {
  m_capacity.clear();
  m_cap.clear();
  m_first_use.clear();
  m_uses.clear();
}

uint32_t MaxMinSolver::add_link(double capacity) {
  SIMRUN_ASSERT(capacity >= 0 && std::isfinite(capacity), "a link needs a finite capacity >= 0");
  m_capacity.push_back(capacity);
  return static_cast<uint32_t>(m_capacity.size() - 1);
}

uint32_t MaxMinSolver::add_flow(double cap) {
  SIMRUN_ASSERT(cap > 0, "a flow's rate cap must be positive");
  m_cap.push_back(cap);
  m_first_use.push_back(static_cast<uint32_t>(m_uses.size()));
  return static_cast<uint32_t>(m_cap.size() - 1);
}

void MaxMinSolver::add_use(uint32_t link, double weight) {
  SIMRUN_ASSERT(!m_cap.empty(), "a link use needs a flow");
  SIMRUN_ASSERT(link < m_capacity.size(), "a flow uses an unknown link");
  SIMRUN_ASSERT(weight > 0, "a link weight must be positive");
  m_uses.push_back(Use{link, weight});
}

std::pair<std::vector<MaxMinSolver::Use>::const_iterator, std::vector<MaxMinSolver::Use>::const_iterator>
MaxMinSolver::uses_of(size_t flow) const {
  const size_t end = flow + 1 < m_cap.size() ? m_first_use[flow + 1] : m_uses.size();
  return {m_uses.begin() + m_first_use[flow], m_uses.begin() + end};
}

const std::vector<double>& MaxMinSolver::solve() {
  link_members();
  m_residual = m_capacity;
  fill();
  return m_rate;
}

void MaxMinSolver::link_members() {
  const size_t links = m_capacity.size(), flows = m_cap.size();
  m_first_member.assign(links + 1, 0);
  for (const Use& u : m_uses) ++m_first_member[u.link + 1];
  for (size_t l = 0; l < links; ++l) m_first_member[l + 1] += m_first_member[l];
  m_members.resize(m_uses.size());
  m_unfrozen_weight.assign(links, 0.0);
  std::vector<uint32_t>& next = m_first_member;  // filled forwards, then shifted back
  for (size_t f = 0; f < flows; ++f) {
    const auto [begin, end] = uses_of(f);
    for (auto u = begin; u != end; ++u) {
      m_members[next[u->link]++] = Member{static_cast<uint32_t>(f), u->weight};
      m_unfrozen_weight[u->link] += u->weight;
    }
  }
  for (size_t l = links; l > 0; --l) next[l] = next[l - 1];
  next[0] = 0;
}

void MaxMinSolver::fill() {
  const size_t links = m_capacity.size(), flows = m_cap.size();
  struct Offer {
    double share;
    uint32_t id;  // link index, or flow index for caps
    bool operator>(const Offer& o) const { return share != o.share ? share > o.share : id > o.id; }
  };
  std::priority_queue<Offer, std::vector<Offer>, std::greater<Offer>> link_offers, cap_offers;
  for (size_t l = 0; l < links; ++l)
    if (m_unfrozen_weight[l] > 0)
      link_offers.push(Offer{m_residual[l] / m_unfrozen_weight[l], static_cast<uint32_t>(l)});

  m_frozen.assign(flows, 0);
  m_rate.assign(flows, 0.0);
  size_t unfrozen = 0;
  for (size_t f = 0; f < flows; ++f) {
    const auto [begin, end] = uses_of(f);
    if (begin == end) {
      m_frozen[f] = 1;
      m_rate[f] = m_cap[f];  // unconstrained (+inf when uncapped)
      continue;
    }
    ++unfrozen;
    if (std::isfinite(m_cap[f])) cap_offers.push(Offer{m_cap[f], static_cast<uint32_t>(f)});
  }

  auto freeze = [&](uint32_t f, double rate) {
    m_frozen[f] = 1;
    m_rate[f] = rate;
    --unfrozen;
    const auto [begin, end] = uses_of(f);
    for (auto u = begin; u != end; ++u) {
      m_residual[u->link] = std::max(0.0, m_residual[u->link] - rate * u->weight);
      m_unfrozen_weight[u->link] -= u->weight;
      if (m_unfrozen_weight[u->link] > 1e-12) {
        link_offers.push(Offer{m_residual[u->link] / m_unfrozen_weight[u->link], u->link});
      } else {
        m_unfrozen_weight[u->link] = 0;
      }
    }
  };
  while (unfrozen > 0) {
    while (!link_offers.empty()) {  // drop stale offers
      const Offer& o = link_offers.top();
      if (m_unfrozen_weight[o.id] > 0 && o.share == m_residual[o.id] / m_unfrozen_weight[o.id]) break;
      link_offers.pop();
    }
    while (!cap_offers.empty() && m_frozen[cap_offers.top().id]) cap_offers.pop();
    if (!cap_offers.empty() && (link_offers.empty() || cap_offers.top().share <= link_offers.top().share)) {
      const Offer o = cap_offers.top();
      cap_offers.pop();
      freeze(o.id, o.share);
      continue;
    }
    SIMRUN_ASSERT(!link_offers.empty(), "progressive filling ran out of constraints");
    const Offer o = link_offers.top();
    link_offers.pop();
    for (uint32_t m = m_first_member[o.id]; m < m_first_member[o.id + 1]; ++m)
      if (!m_frozen[m_members[m].flow]) freeze(m_members[m].flow, o.share);
  }
}

}  // namespace simrun
