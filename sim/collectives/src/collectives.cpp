// CollectiveRunner: validates a call, asks the tuner (or the overrides) for algorithm, protocol and
// channels, plans the flows (collective_algorithms.cpp) and runs the phases on the network.
#include "simrun/sim/collectives/collectives.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "collective_plan.hpp"
#include "simrun/common/error.hpp"

namespace simrun {

double CollectiveResult::algbw_bytes_per_s() const {
  const double s = seconds();
  return s > 0 ? bytes / s : 0.0;
}

double CollectiveResult::busbw_bytes_per_s() const { return algbw_bytes_per_s() * busbw_factor(op, ranks); }

struct CollectiveRunner::Call {
  CollectiveResult result;
  detail::CollectivePlan plan;
  DoneCallback on_done;
  size_t outstanding = 0;
};

CollectiveRunner::CollectiveRunner(Engine& engine, Network& network, const ClusterGraph& graph,
                                   CollectiveModel model)
    : m_engine(engine), m_network(network), m_graph(graph), m_model(model) {
  SIMRUN_ASSERT(network.num_links() == graph.links().size(), "network and cluster graph disagree on links");
}

CollectiveRunner::~CollectiveRunner() = default;

std::vector<int64_t> CollectiveRunner::resolve(const std::vector<int64_t>& ranks) const {
  std::vector<int64_t> out = ranks;
  if (out.empty()) {
    out.resize(size_t(m_graph.num_gpus()));
    std::iota(out.begin(), out.end(), int64_t{0});
  }
  std::set<int64_t> seen;
  for (int64_t r : out) {
    if (r < 0 || r >= m_graph.num_gpus())
      throw InputError("collective", "ranks",
                       "GPU " + std::to_string(r) + " is not in the cluster (0.." +
                           std::to_string(m_graph.num_gpus() - 1) + ")");
    if (!seen.insert(r).second)
      throw InputError("collective", "ranks", "GPU " + std::to_string(r) + " appears twice");
  }
  return out;
}

GroupShape CollectiveRunner::shape(const std::vector<int64_t>& ranks_in) const {
  const std::vector<int64_t> ranks = resolve(ranks_in);
  const GpuSpec& gpu = m_graph.spec().gpu;
  GroupShape s;
  s.ranks = int64_t(ranks.size());
  std::map<int64_t, int64_t> per_domain;
  std::map<int64_t, std::set<std::pair<int64_t, int32_t>>> nics;
  for (int64_t r : ranks) {
    const int64_t d = m_graph.domain_of(r);
    per_domain[d]++;
    for (int32_t rail : m_graph.rails_of(m_graph.local_index(r))) nics[d].insert({m_graph.node_of(r), rail});
  }
  s.nodes = int64_t(per_domain.size());
  for (const auto& [d, count] : per_domain) s.ranks_per_node = std::max(s.ranks_per_node, count);
  s.cc_index = compute_capability_index(gpu);
  s.nvswitch = gpu.scale_up_kind == ScaleUpKind::nvswitch;
  s.pcie_only = gpu.scale_up_kind == ScaleUpKind::pcie;
  s.nvls = nvls_usable(gpu, s.ranks_per_node);
  // Effective bandwidths straight from the network's link capacities.
  const int64_t g0 = ranks.front();
  if (const uint32_t up = m_graph.switch_uplink(g0); up != UINT32_MAX) {
    s.intra_bytes_per_s = m_network.link_capacity(up);
  } else if (m_graph.num_gpus() < 2) {
    // A lone mesh/PCIe GPU has no peer to probe a link to: take its link rate from the spec.
    s.intra_bytes_per_s = gpu.scale_up_bytes_per_s > 0 ? gpu.scale_up_bytes_per_s : gpu.pcie_bytes_per_s;
  } else if (gpu.scale_up_kind == ScaleUpKind::mesh) {
    // Rings over the mesh use one peer link per ring: as many rings as link-disjoint cycles.
    const Route r = m_graph.route(g0, g0 % m_graph.gpus_per_node() == 0 ? g0 + 1 : g0 - 1);
    const double rings = double(std::max<size_t>(1, detail::mesh_ring_cycles(s.ranks_per_node).size()));
    s.intra_bytes_per_s = r.links.empty() ? 0 : m_network.link_capacity(r.links.front()) * rings;
  } else {
    const Route r = m_graph.route(g0, g0 % m_graph.gpus_per_node() == 0 ? g0 + 1 : g0 - 1);
    s.intra_bytes_per_s = r.links.empty() ? 0 : m_network.link_capacity(r.links.front());
  }
  if (s.nodes > 1) {
    size_t rails = SIZE_MAX;
    for (const auto& [d, set] : nics) rails = std::min(rails, set.size());
    s.rails = int64_t(rails);
    double port = 0;
    for (const GraphLink& l : m_graph.links()) {
      if (l.kind == LinkKind::nic_port) {
        port = m_network.link_capacity(LinkId(&l - m_graph.links().data()));
        break;
      }
    }
    s.inter_bytes_per_s = double(s.rails) * port;
  }
  return s;
}

TunerChoice CollectiveRunner::plan(const CollectiveRequest& req) const {
  if (!(req.bytes > 0) || req.bytes > kMaxCollectiveBytes)
    throw InputError("collective", "bytes",
                     "size must be between 1 byte and 2^50 bytes (got " + std::to_string(req.bytes) + ")");
  const std::vector<int64_t> ranks = resolve(req.ranks);
  const int64_t n = int64_t(ranks.size());
  if (req.root < 0 || req.root >= n)
    throw InputError("collective", "root",
                     "root must be a rank of the group (0.." + std::to_string(n - 1) + ")");
  constexpr int64_t kMaxAllToAllRanks = 8192;
  if (req.op == CollectiveOp::all_to_all && n > kMaxAllToAllRanks)
    throw InputError("collective", "ranks",
                     "all_to_all is simulated pair by pair (n² transfers): at most " +
                         std::to_string(kMaxAllToAllRanks) + " ranks");
  const GroupShape s = shape(ranks);
  std::optional<Algorithm> algo = req.algorithm;
  if (!algo && (req.op == CollectiveOp::all_to_all || req.op == CollectiveOp::send_recv))
    algo = Algorithm::p2p;
  TunerChoice c = CollectiveTuner::choose(req.op, s, req.bytes, algo, req.protocol);
  if (req.channels) {
    if (*req.channels < 1 || *req.channels > 64) throw InputError("collective", "channels", "must be 1..64");
    c.channels = *req.channels;
  }
  return c;
}

void CollectiveRunner::run(const CollectiveRequest& req, DoneCallback on_done) {
  const TunerChoice choice = plan(req);
  auto call = std::make_shared<Call>();
  call->on_done = std::move(on_done);
  CollectiveResult& r = call->result;
  r.op = req.op;
  r.algorithm = choice.algorithm;
  r.protocol = choice.protocol;
  r.channels = choice.channels;
  r.bytes = req.bytes;
  r.start = m_engine.now();
  std::vector<int64_t> ranks = resolve(req.ranks);
  r.ranks = int64_t(ranks.size());
  if (ranks.size() > 1) {
    if (!m_weights) m_weights = std::make_unique<detail::LinkWeights>(m_graph.links().size());
    const GroupShape s = shape(req.ranks);
    const bool mesh = m_graph.spec().gpu.scale_up_kind == ScaleUpKind::mesh;
    detail::PlanContext ctx{
        m_graph, req.op, std::move(ranks), req.bytes,       req.root,
        s,       choice, m_model,          m_weights.get(), mesh ? &detail::mesh_ring_cycles(s.ranks_per_node) : nullptr};
    call->plan = detail::build_plan(ctx);
  }
  // Always asynchronous: on_done never runs inside run(), even for a one-rank group.
  m_engine.schedule_in(
      TimeNs{}, [this, call] { start_phase(call, 0); }, /*tag=*/10);
}

void CollectiveRunner::start_phase(std::shared_ptr<Call> call, size_t phase) {
  if (phase >= call->plan.phases.size()) {
    call->result.end = m_engine.now();
    call->plan.phases.clear();
    if (call->on_done) call->on_done(call->result);
    return;
  }
  auto go = [this, call, phase] {
    detail::PhasePlan& ph = call->plan.phases[phase];
    if (ph.flows.empty()) {
      start_phase(call, phase + 1);
      return;
    }
    call->outstanding = ph.flows.size();
    call->result.flows += ph.flows.size();
    std::vector<detail::FlowPlan> flows = std::move(ph.flows);
    for (detail::FlowPlan& f : flows) {
      FlowSpec spec;
      spec.links = std::move(f.links);
      spec.bytes = f.bytes;
      spec.latency = f.latency;
      spec.max_bytes_per_s = f.max_bytes_per_s;
      m_network.start_flow(std::move(spec), [this, call, phase](FlowId) {
        if (--call->outstanding == 0) start_phase(call, phase + 1);
      });
    }
  };
  const TimeNs delay = call->plan.phases[phase].delay;
  if (delay.ns > 0) {
    m_engine.schedule_in(delay, go, /*tag=*/10);
  } else {
    go();
  }
}

}  // namespace simrun
