// Event simulation of one training step; see step_executor.hpp for the execution rules.
#include "simrun/sim/event/step_executor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>

#include "comm_costs.hpp"
#include "simrun/common/error.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/engine/engine.hpp"
#include "simrun/sim/network/network.hpp"
#include "simrun/sim/workload/wait_attribution.hpp"

namespace simrun {
namespace {

// Network links are per-GPU ports in normalised units: capacity kPortRate "bytes"/s, and a
// flow's size is its bandwidth time on an idle port × kPortRate. A flow alone on its ports
// thus lasts exactly its α-β bandwidth term; flows meeting on a port share it max-min. A GPU has
// one NIC port and one scale-up port (its NVSwitch uplink), or on a full mesh (Infinity Fabric)
// one scale-up port per peer link: collectives with other peers use other links there.
// Ports are full duplex, as NVLink and InfiniBand/RoCE are, with the catalog's per-direction
// bandwidth each way: a port is two links, out and in. A collective (ring, tree or all-to-all:
// every member sends and receives at once) takes both of each member's; a pipeline send takes
// the sender's out and the receiver's in, so 1F1B's activations forward and gradients back
// between two stages pass each other at full rate.
constexpr double kPortRate = 1e9;

// The host issues at most this many tasks ahead of the GPU (issued, not finished): CUDA's launch
// queue is finite and the host blocks on a full one. A bound on the simulator's memory more than
// a measured depth: a host this far ahead is never what the GPU waits for.
constexpr uint32_t kHostQueueDepth = 1024;
enum class PortDirection : uint32_t { out = 0, in = 1 };

int group_index(GroupKind g) { return static_cast<int>(g); }

class Executor {
 public:
  // `also_trace`: a rank to trace beyond the representatives, stragglers and slow links.
  Executor(const Scenario& sc, const Workload& w, const WorkloadCost& cost, const StepSimOptions& opt,
           const Calibration& cal, int64_t also_trace = -1)
      : m_sc(sc),
        m_w(w),
        m_cost(cost),
        m_opt(opt),
        m_layout(checked_layout(sc, opt)),
        m_comm(sc, m_layout, opt, cal),
        m_phase(also_trace >= 0 ? SimulationPhase::retracing : SimulationPhase::simulating) {
    m_full = opt.scope == SimulationScope::full;
    queue_stage_tasks();
    place_ranks();
    std::vector<double> links = port_capacities();
    if (also_trace >= 0) report(also_trace);
    record_trace_ranks();
    m_network = std::make_unique<Network>(m_engine, std::move(links));
  }

  // The scenario's ranks, once the options' stragglers and slow links are checked against them
  // (before the collectives' costs, whose cluster graph can take a while to build).
  static RankLayout checked_layout(const Scenario& sc, const StepSimOptions& opt) {
    RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
    check_stragglers(opt.stragglers, layout.world_size());
    check_slow_links(opt.slow_links, layout.world_size());
    const bool full = opt.scope == SimulationScope::full;
    if (!full && !opt.stragglers.empty())
      throw InputError("step", "stragglers", "a straggler needs every rank simulated (scope full)");
    if (!full && !opt.slow_links.empty())
      throw InputError("step", "slow_links", "a degraded link needs every rank simulated (scope full)");
    return layout;
  }

  StepResult run() {
    for (size_t i = 0; i < m_ranks.size(); ++i) advance(static_cast<uint32_t>(i));
    if (m_opt.progress) {
      report_progress();
      while (m_engine.step())
        if (m_engine.events_processed() % kProgressEvents == 0) report_progress();
    }
    m_engine.run();  // all of the events without an observer; with one, the end-of-run checks
    if (m_opt.progress) report_progress();
    StepResult out;
    out.simulated_ranks = static_cast<int64_t>(m_ranks.size());
    out.events = m_engine.events_processed();
    out.flows = m_network->stats().flows_started;
    TimeNs step{0};
    for (size_t i = 0; i < m_ranks.size(); ++i) {
      const RankState& r = m_ranks[i];
      const size_t n = r.done.size();
      SIMRUN_ASSERT(r.completed == n, "rank " + std::to_string(r.rank) + " stopped after " +
                                          std::to_string(r.completed) + " of " + std::to_string(n) +
                                          " tasks: the step deadlocked");
      out.tasks += r.completed;
      step = std::max(step, r.finish);
    }
    out.step_time = step;
    // The rank that finishes last, preferring a traced one within a microsecond: symmetric
    // ranks differ by the network's rounding only.
    TimeNs latest_traced{-1};
    for (const RankState& r : m_ranks)
      if (r.reported && r.finish > latest_traced) {
        latest_traced = r.finish;
        out.last_rank = r.rank;
      }
    out.last_rank_traced = latest_traced.ns >= 0 && (step - latest_traced).ns <= 1000;
    if (!out.last_rank_traced)
      for (const RankState& r : m_ranks)
        if (r.finish == step) out.last_rank = r.rank;
    out.warnings = m_comm.warnings();
    double worst = -1;
    for (size_t i = 0; i < m_ranks.size(); ++i) {
      RankState& r = m_ranks[i];
      if (!r.reported) continue;
      finish_breakdown(r);
      if (r.bd.finish_s > worst) {
        worst = r.bd.finish_s;
        out.critical = out.ranks.size();
      }
      out.ranks.push_back(r.bd);
    }
    if (m_opt.record_trace)
      for (const RankState& r : m_ranks) {
        if (!r.recorded) continue;
        const StageProgram& p = m_w.stages[static_cast<size_t>(r.stage)];
        for (uint32_t t = 0; t < p.tasks.size(); ++t) out.spans.push_back({r.rank, t, r.start[t], r.end[t]});
      }
    return out;
  }

 private:
  // Tells the observer the counts so far (read only: the run goes on the same).
  void report_progress() const {
    SimulationProgress p;
    p.phase = m_phase;
    p.events = m_engine.events_processed();
    p.simulated_ranks = static_cast<int64_t>(m_ranks.size());
    for (const RankState& r : m_ranks) {
      p.tasks_done += r.completed;
      p.tasks_total += r.done.size();
    }
    m_opt.progress(p);
  }

  // Per-stage stream queues (recv markers are completed by their sends, not by a stream).
  void queue_stage_tasks() {
    m_queues.resize(m_w.stages.size());
    for (size_t s = 0; s < m_w.stages.size(); ++s)
      for (uint32_t i = 0; i < m_w.stages[s].tasks.size(); ++i) {
        const Task& t = m_w.stages[s].tasks[i];
        if (t.kind != TaskKind::recv) m_queues[s][static_cast<size_t>(t.stream)].push_back(i);
        if (t.kind == TaskKind::recv && t.dep_count > 0) m_rendezvous = true;
      }
  }

  // The simulated rank holding `idx`'s place in pipeline stage `stage` (-1: none, or out of range).
  int32_t pipeline_peer(uint32_t idx, int64_t stage) const {
    if (stage < 0 || stage >= m_layout.pp()) return -1;
    RankCoord c = m_layout.coord_of(m_ranks[idx].rank);
    c.pp = stage;
    return m_index_of_rank[static_cast<size_t>(m_layout.rank_of(c))];
  }

  // A send whose recv waits for tasks of its own (DeepSpeed's blocking p2p: the receiver posts it
  // when it gets there) starts once they are done.
  bool recv_posted(uint32_t idx, const Task& send) const {
    if (!m_rendezvous) return true;
    const int32_t peer = pipeline_peer(idx, send.peer_stage);
    SIMRUN_ASSERT(peer >= 0, "pipeline peer not simulated");
    const RankState& dst = m_ranks[static_cast<size_t>(peer)];
    const StageProgram& p = program(dst);
    return deps_ready(dst, p, p.tasks[send.peer_task]);
  }

  // The simulated ranks (every rank, or the representatives) and the traced ones: the
  // representatives and the stragglers, which run slower.
  void place_ranks() {
    std::vector<int64_t> sim;
    if (m_full) {
      for (int64_t r = 0; r < m_layout.world_size(); ++r) sim.push_back(r);
    } else {
      sim = m_layout.representatives();
    }
    m_index_of_rank.assign(static_cast<size_t>(m_layout.world_size()), -1);
    m_ranks.resize(sim.size());
    for (size_t i = 0; i < sim.size(); ++i) {
      RankState& r = m_ranks[i];
      r.rank = sim[i];
      r.stage = m_layout.coord_of(sim[i]).pp;
      r.done.assign(m_w.stages[static_cast<size_t>(r.stage)].tasks.size(), 0);
      m_index_of_rank[static_cast<size_t>(sim[i])] = static_cast<int32_t>(i);
    }
    // Reported ranks (traced, in the breakdown): the representatives and the stragglers.
    for (int64_t rep : m_layout.representatives()) report(rep);
    for (const auto& s : m_opt.stragglers) {  // given twice, a GPU runs at the larger slowdown
      report(s.rank);
      double& slowdown = m_ranks[static_cast<size_t>(m_index_of_rank[static_cast<size_t>(s.rank)])].slowdown;
      slowdown = std::max(slowdown, s.slowdown);
    }
  }

  // Ranks whose spans the trace keeps (StepOptions::trace_ranks): traced for their times, not
  // reported; without a selection, the reported ranks.
  void record_trace_ranks() {
    for (size_t k = 0; k < m_opt.trace_ranks.size(); ++k) {
      const int64_t rank = m_opt.trace_ranks[k];
      const std::string field = "trace_ranks[" + std::to_string(k) + "]";
      if (rank < 0 || rank >= m_layout.world_size())
        throw InputError("step", field,
                         fmt::format("rank {} is out of range (0 to {})", rank, m_layout.world_size() - 1));
      if (m_index_of_rank[static_cast<size_t>(rank)] < 0)
        throw InputError("step", field,
                         fmt::format("rank {} is not simulated (with one representative per pipeline stage, "
                                     "ranks {}; scope full simulates every rank)",
                                     rank, fmt::join(m_layout.representatives(), ", ")));
      trace(rank);
      m_ranks[static_cast<size_t>(m_index_of_rank[static_cast<size_t>(rank)])].recorded = true;
    }
    if (m_opt.trace_ranks.empty())
      for (RankState& r : m_ranks) r.recorded = r.reported;
  }

  // The network's link capacities, two per port of each simulated rank, the degraded links
  // (traced) at their fraction.
  std::vector<double> port_capacities() {
    m_mesh_domain =
        m_sc.cluster.gpu.scale_up_kind == ScaleUpKind::mesh ? scale_up_domain_size(m_sc.cluster) : 0;
    m_ports_per_rank = static_cast<uint32_t>(std::max<int64_t>(1, m_mesh_domain)) + 1;
    std::vector<double> links(2 * m_ports_per_rank * m_ranks.size(), kPortRate);
    for (const auto& s : m_opt.slow_links) {
      const auto i = static_cast<uint32_t>(m_index_of_rank[static_cast<size_t>(s.rank)]);
      // The NIC is the rank's last port; before it the switch port, or on a mesh its links to
      // each peer. Both directions slow down. Given twice, a link runs at the lower fraction.
      const uint32_t nic = port_index(i, 1, -1);
      const uint32_t first = s.link == LinkClass::scale_out ? nic : port_index(i, 0, -1);
      const uint32_t last = s.link == LinkClass::scale_out ? nic : nic - 1;
      for (uint32_t port = first; port <= last; ++port)
        for (PortDirection d : {PortDirection::out, PortDirection::in}) {
          double& capacity = links[port_link(port, d)];
          capacity = std::min(capacity, kPortRate * s.bandwidth_fraction);
        }
      report(s.rank);
    }
    return links;
  }

  struct RankState {
    int64_t rank = 0;
    int64_t stage = 0;
    double slowdown = 1.0;
    bool traced = false;    // keeps per-task times (start, end)
    bool reported = false;  // traced, and in the breakdown (StepResult::ranks)
    bool recorded = false;  // traced, and its spans go to StepResult::spans
    std::array<uint32_t, kStreamCount> head{};
    std::array<bool, kStreamCount> busy{};
    std::vector<uint8_t> done;
    size_t completed = 0;
    TimeNs finish{0};
    int32_t nccl_active = 0;  // DP/PP/CP/EP comm kernels in flight (SM sharing)
    // The host (docs/model.md "Host overhead"): it issues the program's tasks in program order,
    // one after another at the framework's cost per launch; before a task with host syncs it
    // waits for the task's dependencies to finish on the GPU. A task starts once it is issued.
    uint32_t host_next = 0;   // the next task the host issues
    TimeNs host_clock{0};     // when the host has issued the tasks before host_next
    uint32_t host_ahead = 0;  // tasks issued and not finished
    bool host_queue_full = false;
    std::array<std::deque<TimeNs>, kStreamCount> issued;  // issue times of issued, unstarted tasks
    std::array<TimeNs, kStreamCount> wake{};              // the wake-up scheduled for a stream's head
    // Traced ranks only.
    std::vector<TimeNs> start, end;
    std::vector<TimeNs> arrival;  // --full: when this rank reached each collective (start: all had)
    TimeNs compute_free{0};
    uint32_t last_task = kNoTask;
    RankBreakdown bd;
  };

  bool m_rendezvous = false;  // some recv is posted only after tasks of its own (recv_posted)

  struct Arrival {
    int64_t count = 0;
  };

  void report(int64_t rank) {
    trace(rank);
    const int32_t i = m_index_of_rank[static_cast<size_t>(rank)];
    if (i >= 0) m_ranks[static_cast<size_t>(i)].reported = true;
  }

  void trace(int64_t rank) {
    const int32_t i = m_index_of_rank[static_cast<size_t>(rank)];
    if (i < 0) return;
    RankState& r = m_ranks[static_cast<size_t>(i)];
    if (r.traced) return;
    r.traced = true;
    r.start.assign(r.done.size(), TimeNs{0});
    r.end.assign(r.done.size(), TimeNs{0});
    if (m_full) r.arrival.assign(r.done.size(), TimeNs{0});
    r.bd.rank = r.rank;
    r.bd.stage = r.stage;
  }

  const StageProgram& program(const RankState& r) const { return m_w.stages[static_cast<size_t>(r.stage)]; }

  bool deps_ready(const RankState& r, const StageProgram& p, const Task& t) const {
    for (uint16_t k = 0; k < t.dep_count; ++k)
      if (!r.done[p.dep(t, k)]) return false;
    return true;
  }

  // The host issues what it can by now: in program order, until a host sync whose dependencies
  // have not finished or a full launch queue.
  void issue(uint32_t idx) {
    RankState& r = m_ranks[idx];
    const StageProgram& p = program(r);
    const TimeNs now = m_engine.now();
    const HostOverhead& host = m_w.host;
    while (r.host_next < p.tasks.size()) {
      const Task& task = p.tasks[r.host_next];
      if (task.kind == TaskKind::recv) {  // completed by its send
        ++r.host_next;
        continue;
      }
      if (r.host_ahead >= kHostQueueDepth) {
        r.host_queue_full = true;
        return;
      }
      if (r.host_queue_full) {  // blocked until a task finished, now
        r.host_clock = std::max(r.host_clock, now);
        r.host_queue_full = false;
      }
      if (task.host_syncs > 0) {
        if (!deps_ready(r, p, task)) return;  // issue() runs again as each task finishes
        // They finished by now (issue() ran when the last did), and the host waited from then.
        r.host_clock = std::max(r.host_clock, now) + TimeNs::from_seconds(host.sync_s * task.host_syncs);
      }
      r.host_clock = r.host_clock + TimeNs::from_seconds(host.launch_s * task.host_launches);
      r.issued[static_cast<size_t>(task.stream)].push_back(r.host_clock);
      ++r.host_ahead;
      ++r.host_next;
    }
  }

  void advance(uint32_t idx) {
    RankState& r = m_ranks[idx];
    const StageProgram& p = program(r);
    const auto& queues = m_queues[static_cast<size_t>(r.stage)];
    issue(idx);
    const TimeNs now = m_engine.now();
    for (int s = 0; s < kStreamCount; ++s) {
      const auto& q = queues[static_cast<size_t>(s)];
      auto& head = r.head[static_cast<size_t>(s)];
      if (r.busy[static_cast<size_t>(s)] || head >= q.size()) continue;
      const uint32_t t = q[head];
      const Task& task = p.tasks[t];
      if (!deps_ready(r, p, task)) continue;
      if (task.kind == TaskKind::send && !recv_posted(idx, task)) continue;
      std::deque<TimeNs>& issued = r.issued[static_cast<size_t>(s)];
      if (issued.empty()) continue;  // the host has not reached it: it will, as tasks finish
      if (issued.front() > now) {    // issued later: wake up then
        TimeNs& wake = r.wake[static_cast<size_t>(s)];
        if (wake != issued.front()) {
          wake = issued.front();
          m_engine.schedule_at(wake, [this, idx] { advance(idx); });
        }
        continue;
      }
      issued.pop_front();
      ++head;
      r.busy[static_cast<size_t>(s)] = true;
      start(idx, t, task);
    }
  }

  void start(uint32_t idx, uint32_t t, const Task& task) {
    RankState& r = m_ranks[idx];
    const TimeNs now = m_engine.now();
    if (r.traced) r.start[t] = now;
    switch (task.kind) {
      case TaskKind::compute: {
        if (r.traced) {
          // Ready (its dependencies and the stream) before the host issued it: the GPU waited
          // for the host, booked to the kernel's phase and counted apart.
          const TimeNs ready = ready_at(r, task);
          if (now > ready) {
            const double host_wait = (now - ready).seconds();
            r.bd.host_wait_s += host_wait;
            book_phase(r, task.phase, host_wait);
          }
          m_waiting_phase = task.phase;
          attribute_gap(r, task, std::min(now, ready));
        }
        TimeNs dur = m_cost.stages[static_cast<size_t>(r.stage)].of(task);
        double factor = r.slowdown;
        if (r.nccl_active > 0) factor *= 1.0 + m_opt.overlap_slowdown;
        if (factor != 1.0) dur = TimeNs{static_cast<int64_t>(std::ceil(double(dur.ns) * factor))};
        m_engine.schedule_at(now + dur, [this, idx, t] { complete(idx, t); });
        break;
      }
      case TaskKind::collective:
        arrive(idx, t, task);
        break;
      case TaskKind::send:
        send(idx, t, task);
        break;
      case TaskKind::recv:
        SIMRUN_ASSERT(false, "recv tasks are not on a stream");
        break;
    }
  }

  // A collective is reached: with representatives it starts now; with every rank simulated it
  // starts when the last member of its group arrives.
  void arrive(uint32_t idx, uint32_t t, const Task& task) {
    RankState& r = m_ranks[idx];
    if (!r.arrival.empty()) r.arrival[t] = m_engine.now();
    if (!m_full) {
      launch_collective(task, t, std::vector<uint32_t>{idx});
      return;
    }
    const int64_t n = m_layout.group_size(task.group);
    if (n <= 1) {
      launch_collective(task, t, std::vector<uint32_t>{idx});
      return;
    }
    const uint64_t key = (static_cast<uint64_t>(m_layout.group_id(task.group, r.rank)) << 32) | t;
    Arrival& a = m_arrivals[key];
    if (++a.count < n) return;
    m_arrivals.erase(key);
    std::vector<uint32_t> members;
    members.reserve(static_cast<size_t>(n));
    for (int64_t m : m_layout.group(task.group, r.rank))
      members.push_back(static_cast<uint32_t>(m_index_of_rank[static_cast<size_t>(m)]));
    launch_collective(task, t, std::move(members));
  }

  void launch_collective(const Task& task, uint32_t t, std::vector<uint32_t> members) {
    const CommCost cost = m_comm.collective(task.coll, task.group, task.comm_bytes);
    const double bw_s = cost.bw_s, alpha_s = cost.alpha_s;
    const int port = cost.port;
    const TimeNs now = m_engine.now();
    const bool sm_sharing = task.group != GroupKind::tp;
    for (uint32_t m : members) {
      RankState& r = m_ranks[m];
      if (r.traced) r.start[t] = now;  // transfer start (after waiting for the group)
      if (sm_sharing) ++r.nccl_active;
    }
    FlowSpec f;
    f.bytes = bw_s * kPortRate;
    f.latency = TimeNs::from_seconds(alpha_s);
    // Dispatcher kernels slower than the fabric (ProgramCost::comm_kernel_s): the flow's rate is
    // capped so that alone it lasts their time, leaving the rest of its ports to other traffic.
    const double kernel_s = m_cost.stages[size_t(m_ranks[members.front()].stage)].comm_kernel_s(task);
    if (f.bytes > 0 && kernel_s > alpha_s + bw_s) f.max_bytes_per_s = f.bytes / (kernel_s - alpha_s);
    auto both_directions = [&f](uint32_t port_index) {
      for (PortDirection d : {PortDirection::out, PortDirection::in})
        f.links.push_back(LinkUse{port_link(port_index, d), 1.0});
    };
    for (uint32_t m : members) {
      if (port == 0 && m_mesh_domain > 0) {  // each link to a peer of the group
        for (uint32_t p : mesh_group_ports(m, task.group)) both_directions(p);
      } else {
        both_directions(port_index(m, port, -1));
      }
    }
    m_network->start_flow(std::move(f), [this, t, sm_sharing, members = std::move(members)](FlowId) {
      for (uint32_t m : members) {
        if (sm_sharing) --m_ranks[m].nccl_active;
        complete(m, t);
      }
    });
  }

  void send(uint32_t idx, uint32_t t, const Task& task) {
    const RankState& r = m_ranks[idx];
    RankCoord c = m_layout.coord_of(r.rank);
    c.pp = task.peer_stage;
    const int64_t peer_rank = m_layout.rank_of(c);
    const int32_t peer = m_index_of_rank[static_cast<size_t>(peer_rank)];
    SIMRUN_ASSERT(peer >= 0, "pipeline peer not simulated");
    const PairPlacement placement =
        r.rank / scale_up_domain_size(m_sc.cluster) == peer_rank / scale_up_domain_size(m_sc.cluster)
            ? PairPlacement::same_domain
            : PairPlacement::across_domains;
    const CommCost cost = m_comm.pipeline_send(task.comm_bytes, placement);
    const int port = cost.port;
    FlowSpec f;
    f.bytes = cost.bw_s * kPortRate;
    f.latency = TimeNs::from_seconds(cost.alpha_s);
    f.links.push_back(LinkUse{port_link(port_index(idx, port, peer_rank), PortDirection::out), 1.0});
    f.links.push_back(
        LinkUse{port_link(port_index(static_cast<uint32_t>(peer), port, r.rank), PortDirection::in), 1.0});
    const TimeNs begin = m_engine.now();
    const uint32_t recv = task.peer_task;
    ++m_ranks[idx].nccl_active;
    m_network->start_flow(std::move(f), [this, idx, t, peer, recv, begin](FlowId) {
      --m_ranks[idx].nccl_active;
      RankState& dst = m_ranks[static_cast<size_t>(peer)];
      if (dst.traced) {  // a recv is on no stream: account its wire time here
        dst.start[recv] = begin;
        dst.end[recv] = m_engine.now();
        dst.bd.comm_s[static_cast<size_t>(group_index(GroupKind::pp))] += (dst.end[recv] - begin).seconds();
      }
      mark_done(dst, recv);
      complete(idx, t);
      advance(static_cast<uint32_t>(peer));
    });
  }

  void mark_done(RankState& r, uint32_t t) {
    SIMRUN_ASSERT(!r.done[t], "task completed twice");
    r.done[t] = 1;
    ++r.completed;
    const TimeNs now = m_engine.now();
    r.finish = std::max(r.finish, now);
    if (r.traced) {
      r.end[t] = now;
      r.last_task = t;
    }
  }

  void complete(uint32_t idx, uint32_t t) {
    RankState& r = m_ranks[idx];
    const Task& task = program(r).tasks[t];
    mark_done(r, t);
    --r.host_ahead;
    r.busy[static_cast<size_t>(task.stream)] = false;
    if (r.traced) account(r, t, task);
    advance(idx);
    if (m_rendezvous)  // a neighbour's send may wait for this rank to post its recv
      for (int64_t stage : {r.stage - 1, r.stage + 1})
        if (const int32_t peer = pipeline_peer(idx, stage); peer >= 0) advance(static_cast<uint32_t>(peer));
  }

  // Busy time per phase and communication totals of a traced rank.
  void account(RankState& r, uint32_t t, const Task& task) {
    const double d = (r.end[t] - r.start[t]).seconds();
    switch (task.kind) {
      case TaskKind::compute:
        r.compute_free = r.end[t];
        book_phase(r, task.phase, d);
        break;
      case TaskKind::collective:
      case TaskKind::send:
        r.bd.comm_s[static_cast<size_t>(group_index(task.group))] += d;
        break;
      case TaskKind::recv:  // accounted when its send's flow lands
        break;
    }
  }

  void book_phase(RankState& r, Phase phase, double seconds) {
    switch (phase) {
      case Phase::forward:
        r.bd.forward_s += seconds;
        break;
      case Phase::backward:
        r.bd.backward_s += seconds;
        break;
      case Phase::recompute:
        r.bd.recompute_s += seconds;
        break;
      case Phase::optimizer:
        r.bd.optimizer_s += seconds;
        break;
      case Phase::comm:
        break;
    }
  }

  // When a compute task of a traced rank could have started but for the host: its compute
  // stream free and its dependencies finished.
  TimeNs ready_at(const RankState& r, const Task& task) const {
    const StageProgram& p = program(r);
    TimeNs ready = r.compute_free;
    for (uint16_t k = 0; k < task.dep_count; ++k) ready = std::max(ready, r.end[p.dep(task, k)]);
    return ready;
  }

  // The compute stream idled from compute_free to now: charge the gap to what the op waited
  // for last — a collective (exposed comm of its group while it ran, what it waited for itself
  // before), a blocking send (exposed PP), or a recv (exposed PP while the message was on the
  // wire, pipeline bubble before).
  void attribute_gap(RankState& r, const Task& task, TimeNs now) {
    const double gap = (now - r.compute_free).seconds();
    if (gap <= 0) return;
    const StageProgram& p = program(r);
    uint32_t blocker = kNoTask;
    TimeNs latest{-1};
    for (uint16_t k = 0; k < task.dep_count; ++k) {
      const uint32_t dep = p.dep(task, k);
      if (r.end[dep] > latest) {
        latest = r.end[dep];
        blocker = dep;
      }
    }
    charge(r, blocker, r.compute_free, now);
  }

  // Charges the compute stream's idle [from, to) by the rule both fidelities share
  // (wait_attribution.hpp). A collective or send was issued when its group met (--full) or it
  // started, and what it waited for before that takes the lead; a recv's, a kernel's or nothing's
  // wait is theirs whole.
  void charge(RankState& r, uint32_t blocker, TimeNs from, TimeNs to) {
    const StageProgram& p = program(r);
    const bool met_group = !r.arrival.empty();  // --full
    auto issued_at = [&](uint32_t t) {
      const Task& task = p.tasks[t];
      if (task.kind == TaskKind::collective) return met_group ? r.arrival[t] : r.start[t];
      if (task.kind == TaskKind::send) return r.start[t];
      return TimeNs{std::numeric_limits<int64_t>::min()};
    };
    attribute_wait(
        blocker, from, to, issued_at, [&](uint32_t t) { return waited_for(r, t); },
        [&](uint32_t t, TimeNs lo, TimeNs hi) { book_wait(r, t, lo, hi); });
  }

  // Books [from, to) of the compute stream's idle time to what it waited for: the bubble (nothing
  // or a kernel on another rank's path), the pipeline (a recv: exposed while its message was on
  // the wire) or a group's exposed communication, less what the group spent waiting for its
  // slowest member.
  void book_wait(RankState& r, uint32_t blocker, TimeNs from, TimeNs to) {
    const double gap = (to - from).seconds();
    if (blocker == kNoTask) {
      r.bd.bubble_s += gap;
      return;
    }
    if (blocker == kHostWait) {  // a collective the host issued late: the compute waited for the host
      r.bd.host_wait_s += gap;
      book_phase(r, m_waiting_phase, gap);
      return;
    }
    const Task& b = program(r).tasks[blocker];
    if (b.kind == TaskKind::recv) {
      const TimeNs lo = std::max(from, r.start[blocker]);
      const TimeNs hi = std::min(to, r.end[blocker]);
      const double wire = hi > lo ? (hi - lo).seconds() : 0.0;
      r.bd.exposed_s[static_cast<size_t>(group_index(GroupKind::pp))] += wire;
      r.bd.bubble_s += gap - wire;
    } else if (b.kind == TaskKind::compute) {
      r.bd.bubble_s += gap;
    } else {
      const double waiting_for_peers = peer_wait(r, blocker, from, to);
      r.bd.bubble_s += waiting_for_peers;
      r.bd.exposed_s[static_cast<size_t>(group_index(b.group))] += gap - waiting_for_peers;
    }
  }

  // The task whose completion let `t` be issued: the later-ending of its dependencies and the
  // task before it on its stream.
  uint32_t waited_for(const RankState& r, uint32_t t) const {
    const StageProgram& p = program(r);
    const Task& task = p.tasks[t];
    uint32_t last = kNoTask;
    auto consider = [&](uint32_t k) {
      if (last == kNoTask || r.end[k] > r.end[last]) last = k;
    };
    for (uint16_t k = 0; k < task.dep_count; ++k) consider(p.dep(task, k));
    const auto& queue = m_queues[static_cast<size_t>(r.stage)][static_cast<size_t>(task.stream)];
    const auto it = std::lower_bound(queue.begin(), queue.end(), t);
    if (it != queue.begin()) consider(*std::prev(it));
    // A collective or send the rank reached after it was ready: the host issued it late.
    if (task.kind == TaskKind::collective || task.kind == TaskKind::send) {
      const TimeNs reached =
          task.kind == TaskKind::collective && !r.arrival.empty() ? r.arrival[t] : r.start[t];
      const TimeNs ready = last == kNoTask ? TimeNs{0} : r.end[last];
      if (reached > ready) return kHostWait;
    }
    return last;
  }

  // Of [from, to), the time the blocker's stream spent waiting for a group's slowest member
  // (--full only: with representatives every collective starts on arrival). The collectives
  // queued before the blocker on its stream count too: a bucket that waited on a straggler
  // delays the ones behind it. That idling is on the slow rank's compute, not on communication.
  double peer_wait(const RankState& r, uint32_t blocker, TimeNs from, TimeNs to) const {
    if (r.arrival.empty()) return 0.0;
    const StageProgram& p = program(r);
    const auto& queue = m_queues[static_cast<size_t>(r.stage)][static_cast<size_t>(p.tasks[blocker].stream)];
    double wait = 0;
    for (auto it = std::upper_bound(queue.begin(), queue.end(), blocker); it != queue.begin();) {
      const uint32_t k = *--it;
      if (r.end[k] <= from) break;
      if (p.tasks[k].kind != TaskKind::collective) continue;
      const TimeNs lo = std::max(from, r.arrival[k]);
      const TimeNs hi = std::min(to, r.start[k]);
      if (hi > lo) wait += (hi - lo).seconds();
    }
    return wait;
  }

  void finish_breakdown(RankState& r) {
    // Tail after the last compute op: waiting for the last reductions/gathers of the step.
    charge(r, r.last_task, r.compute_free, r.finish);
    r.bd.finish_s = r.finish.seconds();
  }

  // The port a simulated rank's traffic takes: its NIC (port 1), its scale-up port, or on a
  // mesh its link to `peer` (a global rank in its domain).
  uint32_t port_index(uint32_t idx, int port, int64_t peer) const {
    const uint32_t base = idx * m_ports_per_rank;
    if (port == 1) return base + m_ports_per_rank - 1;
    if (m_mesh_domain > 0 && peer >= 0) return base + static_cast<uint32_t>(peer % m_mesh_domain);
    return base;
  }
  // One direction of a port: the network link that carries it.
  static LinkId port_link(uint32_t port_index, PortDirection d) {
    return 2 * port_index + static_cast<uint32_t>(d);
  }

  // On a mesh, a simulated rank's ports to the other members of its `g` group, found once.
  const std::vector<uint32_t>& mesh_group_ports(uint32_t idx, GroupKind g) {
    const size_t key = size_t(idx) * kGroupKindCount + size_t(group_index(g));
    if (m_mesh_ports.size() <= key) m_mesh_ports.resize(m_ranks.size() * kGroupKindCount);
    std::vector<uint32_t>& ports = m_mesh_ports[key];
    if (ports.empty()) {
      const int64_t rank = m_ranks[idx].rank;
      for (int64_t peer : m_layout.group(g, rank))
        if (peer != rank) ports.push_back(port_index(idx, 0, peer));
    }
    return ports;
  }

  const Scenario& m_sc;
  const Workload& m_w;
  const WorkloadCost& m_cost;
  const StepSimOptions& m_opt;
  RankLayout m_layout;
  StepCommCosts m_comm;  // declared after m_layout, which it reads
  SimulationPhase m_phase;
  bool m_full = false;
  int64_t m_mesh_domain = 0;  // GPUs per full-mesh domain (0: switch or PCIe scale-up)
  uint32_t m_ports_per_rank = 2;
  std::vector<std::vector<uint32_t>> m_mesh_ports;  // port indices; rank index · kGroupKindCount + group kind
  std::vector<std::array<std::vector<uint32_t>, kStreamCount>> m_queues;
  std::vector<RankState> m_ranks;
  std::vector<int32_t> m_index_of_rank;
  std::unordered_map<uint64_t, Arrival> m_arrivals;
  Engine m_engine;
  std::unique_ptr<Network> m_network;
  Phase m_waiting_phase = Phase::comm;  // of the compute task whose wait is being charged
};

}  // namespace

StepResult simulate_step(const Scenario& scenario, const Workload& workload, const WorkloadCost& cost,
                         const StepSimOptions& options, const Calibration& calibration) {
  SIMRUN_ASSERT(cost.stages.size() == workload.stages.size(), "the cost pass does not match the workload");
  StepResult out = Executor(scenario, workload, cost, options, calibration).run();
  // The breakdown describes the rank that finishes last. Under --full with stragglers or slow
  // links that can be a rank not traced: run again tracing it (the simulation is
  // deterministic, so the step is the same).
  if (!out.last_rank_traced)
    out = Executor(scenario, workload, cost, options, calibration, out.last_rank).run();
  SIMRUN_ASSERT(out.last_rank_traced, "the rank that finishes last is not traced");
  return out;
}

}  // namespace simrun
