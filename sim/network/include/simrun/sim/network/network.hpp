// Flow-level network (SimGrid's model, no packets): a transfer is a flow over a set of directed
// links; concurrent flows share every link max-min fairly (progressive filling); rates are
// recomputed when flows start or end, only over the connected component of flows and links that
// the change touches, and the engine jumps to the next completion.
//
// A flow's links carry weights: a weight-w link carries w bytes per payload byte of the flow.
// Plain point-to-point transfers have weight 1 on every link of their route; a *coupled* flow
// (one pipelined ring or tree channel of a collective: every edge moves at the rate of the
// slowest) lists every link its edges use, with the number of edges on it as the weight.
//
// Per-message latency (α) is the flow's `latency`: the payload starts occupying bandwidth at
// once and the completion callback fires `latency` after the last byte was serialised, so a lone
// flow takes latency + bytes / bottleneck rate. Starts and ends at one instant are batched into a
// single recomputation (a "settle" event scheduled at that instant).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "simrun/common/units.hpp"
#include "simrun/sim/engine/engine.hpp"
#include "simrun/sim/network/max_min.hpp"

namespace simrun {

using LinkId = uint32_t;
using FlowId = uint64_t;  // 0 = none

struct LinkUse {
  LinkId link = 0;
  double weight = 1.0;  // bytes carried on `link` per payload byte of the flow, > 0
};

struct FlowSpec {
  std::vector<LinkUse> links;  // each link at most once (merge duplicates by adding weights)
  double bytes = 0;            // payload, >= 0
  TimeNs latency{};            // α: from last byte serialised to completion
  double max_bytes_per_s = std::numeric_limits<double>::infinity();  // payload rate cap (protocol/SM)
};

struct NetworkStats {
  uint64_t flows_started = 0;
  uint64_t flows_completed = 0;
  uint64_t flows_cancelled = 0;
  uint64_t settles = 0;              // rate recomputations
  uint64_t flows_rerated = 0;        // flow-rate evaluations summed over settles
  uint64_t links_touched = 0;        // link visits summed over settles
  uint64_t max_component_flows = 0;  // largest connected component recomputed at once
  uint64_t max_active_flows = 0;
};

class Network {
 public:
  using DoneCallback = std::function<void(FlowId)>;

  // One entry per link: capacity in bytes/s per direction (a directed link), > 0.
  Network(Engine& engine, std::vector<double> link_bytes_per_s);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Starts a flow now; `on_done` runs when its last byte has arrived (after `latency`).
  FlowId start_flow(FlowSpec spec, DoneCallback on_done);
  // Removes an active flow without calling its callback; false if unknown or already finished.
  bool cancel_flow(FlowId id);

  size_t num_links() const { return m_links.size(); }
  double link_capacity(LinkId l) const { return m_links[l].capacity; }
  size_t active_flows() const { return m_num_active; }
  // Current payload rate of an active flow (bytes/s), 0 if unknown or not yet settled.
  double flow_rate(FlowId id) const;
  // Payload bytes still to send for an active flow, as of now().
  double flow_remaining(FlowId id) const;
  // Bytes a link has carried since construction, as of now() (all flows, times their weights).
  double link_carried_bytes(LinkId l) const;
  // Current load on a link, bytes/s.
  double link_load(LinkId l) const { return m_links[l].load; }
  const NetworkStats& stats() const { return m_stats; }

 private:
  struct LinkEntry {
    uint32_t flow;   // flow slot
    uint32_t index;  // position of this link in the flow's `links`
  };
  struct Link {
    double capacity = 0;
    double load = 0;     // Σ rate·weight of the flows on it, bytes/s
    double carried = 0;  // bytes carried up to `updated_ns`
    int64_t updated_ns = 0;
    std::vector<LinkEntry> flows;  // flows using the link (unordered)
    // scratch for the settle pass
    uint64_t mark = 0;
    uint32_t local = 0;  // index in the solver's problem
  };
  struct Flow {
    FlowId id = 0;  // 0 = free slot
    std::vector<LinkUse> links;
    std::vector<uint32_t> positions;  // index of this flow's entry in each link's `flows`
    double remaining = 0;             // payload bytes as of `updated_ns`
    double rate = 0;                  // payload bytes/s
    double cap = 0;
    int64_t updated_ns = 0;
    int64_t completion_ns = -1;
    TimeNs latency{};
    EventId completion;
    DoneCallback on_done;
    uint64_t mark = 0;
    uint32_t local = 0;  // index in the solver's problem
  };

  void request_settle();
  void settle();
  void advance_link(Link& l, int64_t now_ns);
  void advance_flow(Flow& f, int64_t now_ns);
  void finish(uint32_t slot);
  void detach(uint32_t slot);
  void schedule_completion(uint32_t slot);
  uint32_t slot_of(FlowId id) const;

  Engine& m_engine;
  std::vector<Link> m_links;
  std::vector<Flow> m_flows;
  std::vector<uint32_t> m_free;
  std::vector<uint32_t> m_dirty_flows;  // started, ended or cancelled since the last settle
  std::vector<LinkId> m_dirty_links;
  bool m_settle_pending = false;
  uint64_t m_epoch = 0;
  FlowId m_next_id = 1;
  size_t m_num_active = 0;
  NetworkStats m_stats;
  MaxMinSolver m_solver;
};

}  // namespace simrun
