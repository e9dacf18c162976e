// Flow-level network: max-min fair rates (max_min.hpp) over the connected component of flows and
// links touched since the last recomputation.
#include "simrun/sim/network/network.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "simrun/common/error.hpp"

namespace simrun {

namespace {
constexpr uint32_t kTagSettle = 1;
constexpr uint32_t kTagFlowDone = 2;
constexpr uint32_t kTagFlowNotify = 3;
constexpr int kSlotBits = 32;
}  // namespace

Network::Network(Engine& engine, std::vector<double> link_bytes_per_s) : m_engine(engine) {
  m_links.resize(link_bytes_per_s.size());
  for (size_t i = 0; i < m_links.size(); ++i) {
    SIMRUN_ASSERT(link_bytes_per_s[i] > 0 && std::isfinite(link_bytes_per_s[i]),
                  "link " + std::to_string(i) + " needs a positive finite capacity");
    m_links[i].capacity = link_bytes_per_s[i];
  }
}

uint32_t Network::slot_of(FlowId id) const {
  const uint32_t slot = static_cast<uint32_t>(id & 0xffffffffu);
  if (id == 0 || slot >= m_flows.size() || m_flows[slot].id != id) return UINT32_MAX;
  return slot;
}

FlowId Network::start_flow(FlowSpec spec, DoneCallback on_done) {
  SIMRUN_ASSERT(spec.bytes >= 0 && std::isfinite(spec.bytes), "flow bytes must be finite and >= 0");
  SIMRUN_ASSERT(spec.max_bytes_per_s > 0, "flow rate cap must be positive");
  SIMRUN_ASSERT(spec.latency.ns >= 0, "flow latency must be >= 0");
  // Merge duplicate links (a coupled flow may list a link once per edge).
  std::sort(spec.links.begin(), spec.links.end(),
            [](const LinkUse& a, const LinkUse& b) { return a.link < b.link; });
  size_t out = 0;
  for (size_t i = 0; i < spec.links.size(); ++i) {
    SIMRUN_ASSERT(spec.links[i].link < m_links.size(), "flow uses an unknown link");
    SIMRUN_ASSERT(spec.links[i].weight > 0, "flow link weight must be positive");
    if (out > 0 && spec.links[out - 1].link == spec.links[i].link) {
      spec.links[out - 1].weight += spec.links[i].weight;
    } else {
      spec.links[out++] = spec.links[i];
    }
  }
  spec.links.resize(out);

  uint32_t slot;
  if (!m_free.empty()) {
    slot = m_free.back();
    m_free.pop_back();
  } else {
    slot = static_cast<uint32_t>(m_flows.size());
    m_flows.emplace_back();
  }
  Flow& f = m_flows[slot];
  f.id = (m_next_id++ << kSlotBits) | slot;
  f.links = std::move(spec.links);
  f.positions.resize(f.links.size());
  f.remaining = spec.bytes;
  f.rate = 0;
  f.cap = spec.max_bytes_per_s;
  f.updated_ns = m_engine.now().ns;
  f.latency = spec.latency;
  f.completion = EventId{};
  f.completion_ns = -1;
  f.on_done = std::move(on_done);
  f.mark = 0;
  for (size_t i = 0; i < f.links.size(); ++i) {
    Link& l = m_links[f.links[i].link];
    f.positions[i] = static_cast<uint32_t>(l.flows.size());
    l.flows.push_back(LinkEntry{slot, static_cast<uint32_t>(i)});
  }
  ++m_num_active;
  ++m_stats.flows_started;
  m_stats.max_active_flows = std::max<uint64_t>(m_stats.max_active_flows, m_num_active);
  m_dirty_flows.push_back(slot);
  request_settle();
  return f.id;
}

void Network::request_settle() {
  if (m_settle_pending) return;
  m_settle_pending = true;
  m_engine.schedule_at(
      m_engine.now(), [this] { settle(); }, kTagSettle);
}

void Network::advance_link(Link& l, int64_t now_ns) {
  if (now_ns > l.updated_ns) {
    l.carried += l.load * double(now_ns - l.updated_ns) * 1e-9;
    l.updated_ns = now_ns;
  }
}

void Network::advance_flow(Flow& f, int64_t now_ns) {
  if (now_ns > f.updated_ns) {
    if (std::isfinite(f.rate)) {
      f.remaining = std::max(0.0, f.remaining - f.rate * double(now_ns - f.updated_ns) * 1e-9);
    } else {
      f.remaining = 0;
    }
    f.updated_ns = now_ns;
  }
}

void Network::detach(uint32_t slot) {
  Flow& f = m_flows[slot];
  const int64_t now_ns = m_engine.now().ns;
  for (size_t i = 0; i < f.links.size(); ++i) {
    const LinkId lid = f.links[i].link;
    Link& l = m_links[lid];
    advance_link(l, now_ns);
    if (std::isfinite(f.rate)) l.load = std::max(0.0, l.load - f.rate * f.links[i].weight);
    // swap-remove this flow's entry, fixing the position of the entry moved into its place
    const uint32_t pos = f.positions[i];
    const LinkEntry moved = l.flows.back();
    l.flows[pos] = moved;
    m_flows[moved.flow].positions[moved.index] = pos;
    l.flows.pop_back();
    if (l.flows.empty()) l.load = 0;
    m_dirty_links.push_back(lid);
  }
  if (f.completion.valid()) m_engine.cancel(f.completion);
  f.id = 0;
  f.links.clear();
  f.links.shrink_to_fit();
  f.positions.clear();
  f.positions.shrink_to_fit();
  f.on_done = nullptr;
  m_free.push_back(slot);
  --m_num_active;
  request_settle();
}

void Network::finish(uint32_t slot) {
  Flow& f = m_flows[slot];
  f.completion = EventId{};  // this event is running
  // Completion times are whole nanoseconds (rounded up), so the links have been credited with a
  // few bytes more (or, after rounding, less) than the flow had left: settle the difference so
  // every link carries exactly Σ bytes·weight.
  const int64_t now_ns = m_engine.now().ns;
  if (std::isfinite(f.rate)) {
    const double left = f.remaining - f.rate * double(now_ns - f.updated_ns) * 1e-9;
    for (const LinkUse& u : f.links) {
      Link& l = m_links[u.link];
      advance_link(l, now_ns);
      l.carried += left * u.weight;
    }
  }
  const FlowId id = f.id;
  DoneCallback cb = std::move(f.on_done);
  const TimeNs latency = f.latency;
  ++m_stats.flows_completed;
  detach(slot);
  if (cb) {
    m_engine.schedule_in(
        latency, [cb = std::move(cb), id] { cb(id); }, kTagFlowNotify);
  }
}

bool Network::cancel_flow(FlowId id) {
  const uint32_t slot = slot_of(id);
  if (slot == UINT32_MAX) return false;
  ++m_stats.flows_cancelled;
  detach(slot);
  return true;
}

double Network::flow_rate(FlowId id) const {
  const uint32_t slot = slot_of(id);
  if (slot == UINT32_MAX) return 0;
  return m_flows[slot].rate;
}

double Network::flow_remaining(FlowId id) const {
  const uint32_t slot = slot_of(id);
  if (slot == UINT32_MAX) return 0;
  const Flow& f = m_flows[slot];
  const double dt = double(m_engine.now().ns - f.updated_ns) * 1e-9;
  return std::isfinite(f.rate) ? std::max(0.0, f.remaining - f.rate * dt) : 0.0;
}

double Network::link_carried_bytes(LinkId l) const {
  const Link& link = m_links[l];
  return link.carried + link.load * double(m_engine.now().ns - link.updated_ns) * 1e-9;
}

void Network::schedule_completion(uint32_t slot) {
  Flow& f = m_flows[slot];
  int64_t when;
  if (f.remaining <= 0 || !std::isfinite(f.rate)) {
    when = m_engine.now().ns;
  } else {
    SIMRUN_ASSERT(f.rate > 0, "active flow with zero rate");
    // Rounded up to whole nanoseconds, except that an excess of at most 1e-10 of the duration
    // (and at least 1e-6 ns) rounds down: accumulated floating-point error must not make a whole
    // nanosecond, or equal flows with different rate histories (one re-rated more often than its
    // twin) finish apart and symmetric ranks drift. A flow ending that early books its leftover
    // bytes in finish().
    const double exact_ns = f.remaining / f.rate * 1e9;
    const double dt_ns = std::ceil(exact_ns - std::max(1e-6, 1e-10 * exact_ns));
    SIMRUN_ASSERT(dt_ns < 9e18, "flow completion beyond the time range");
    when = m_engine.now().ns + static_cast<int64_t>(dt_ns);
  }
  if (f.completion.valid() && m_engine.is_pending(f.completion) && f.completion_ns == when) return;
  if (f.completion.valid()) m_engine.cancel(f.completion);
  const FlowId id = f.id;
  f.completion_ns = when;
  f.completion = m_engine.schedule_at(
      TimeNs{when},
      [this, slot, id] {
        if (m_flows[slot].id == id) finish(slot);
      },
      kTagFlowDone);
}

void Network::settle() {
  m_settle_pending = false;
  const int64_t now_ns = m_engine.now().ns;
  ++m_epoch;
  ++m_stats.settles;

  // 1. The connected component(s) reachable from what changed.
  std::vector<uint32_t> comp_flows;
  std::vector<LinkId> comp_links;
  std::vector<LinkId> frontier;
  auto visit_link = [&](LinkId lid) {
    Link& l = m_links[lid];
    if (l.mark == m_epoch) return;
    l.mark = m_epoch;
    comp_links.push_back(lid);
    frontier.push_back(lid);
  };
  auto visit_flow = [&](uint32_t slot) {
    Flow& f = m_flows[slot];
    if (f.id == 0 || f.mark == m_epoch) return;
    f.mark = m_epoch;
    comp_flows.push_back(slot);
    for (const LinkUse& u : f.links) visit_link(u.link);
  };
  for (uint32_t slot : m_dirty_flows) visit_flow(slot);
  for (LinkId lid : m_dirty_links) visit_link(lid);
  m_dirty_flows.clear();
  m_dirty_links.clear();
  while (!frontier.empty()) {
    const LinkId lid = frontier.back();
    frontier.pop_back();
    for (const LinkEntry& e : m_links[lid].flows) visit_flow(e.flow);
  }
  if (comp_flows.empty()) {
    for (LinkId lid : comp_links) {
      advance_link(m_links[lid], now_ns);
      m_links[lid].load = 0;
    }
    return;
  }
  m_stats.flows_rerated += comp_flows.size();
  m_stats.links_touched += comp_links.size();
  m_stats.max_component_flows = std::max<uint64_t>(m_stats.max_component_flows, comp_flows.size());

  // 2. Bring bytes up to now at the old rates.
  for (LinkId lid : comp_links) advance_link(m_links[lid], now_ns);
  for (uint32_t slot : comp_flows) advance_flow(m_flows[slot], now_ns);

  // 3. Max-min fair rates over the component.
  m_solver.clear();
  for (LinkId lid : comp_links) m_links[lid].local = m_solver.add_link(m_links[lid].capacity);
  for (uint32_t slot : comp_flows) {
    Flow& f = m_flows[slot];
    f.local = m_solver.add_flow(f.cap);
    for (const LinkUse& u : f.links) m_solver.add_use(m_links[u.link].local, u.weight);
  }
  const std::vector<double>& rates = m_solver.solve();

  // 4. New loads and completion times.
  for (LinkId lid : comp_links) m_links[lid].load = 0;
  for (uint32_t slot : comp_flows) {
    Flow& f = m_flows[slot];
    const double rate = rates[f.local];
    const bool changed = rate != f.rate || !f.completion.valid();
    f.rate = rate;
    if (std::isfinite(f.rate)) {
      for (const LinkUse& u : f.links) m_links[u.link].load += f.rate * u.weight;
    }
    if (changed) schedule_completion(slot);
  }
}

}  // namespace simrun
