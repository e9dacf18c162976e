// Megatron rank order tp-cp-ep-dp-pp; see rank_layout.hpp.
#include "simrun/sim/scenario/rank_layout.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "simrun/common/error.hpp"

namespace simrun {

const char* to_string(GroupKind g) {
  switch (g) {
    case GroupKind::tp:
      return "tp";
    case GroupKind::cp:
      return "cp";
    case GroupKind::dp:
      return "dp";
    case GroupKind::dp_cp:
      return "dp_cp";
    case GroupKind::ep:
      return "ep";
    case GroupKind::pp:
      return "pp";
    case GroupKind::edp:
      return "edp";
    case GroupKind::cp_a2a:
      return "cp_a2a";
    case GroupKind::cp_ring:
      return "cp_ring";
    case GroupKind::ep_intra:
      return "ep_intra";
    case GroupKind::ep_inter:
      return "ep_inter";
  }
  return "?";
}

RankGroup rank_group(const Layout& l, GroupKind g) {
  const int64_t stage = l.tp * l.cp * l.dp;
  switch (g) {
    case GroupKind::tp:
      return {l.tp, 1, stage};
    case GroupKind::cp:
      return {l.cp, l.tp, stage};
    case GroupKind::dp:
      return {l.dp, l.tp * l.cp, stage};
    case GroupKind::dp_cp:
      return {l.dp * l.cp, l.tp, stage};
    case GroupKind::ep:
      return {l.ep, l.expert_tp, stage};
    case GroupKind::edp:
      return {l.expert_dp(), l.expert_tp * l.ep, stage};
    case GroupKind::pp:
      return {2, stage};  // pipeline sends are timed pair by pair (pipeline_pair)
    case GroupKind::cp_a2a:
      return {l.cp_a2a(), l.tp, stage};
    case GroupKind::cp_ring:
      return {l.cp_ring(), l.tp * l.cp_a2a(), stage};
    case GroupKind::ep_intra:
      return {l.ep_intra(), l.expert_tp, stage};
    case GroupKind::ep_inter:
      return {l.ep_inter(), l.expert_tp * l.ep_intra(), stage};
  }
  return {1, 1};
}

RankLayout::RankLayout(const Layout& layout, int64_t gpus_per_node)
    : m_tp(layout.tp),
      m_cp(layout.cp),
      m_dp(layout.dp),
      m_pp(layout.pp),
      m_ep(layout.ep),
      m_etp(layout.expert_tp),
      m_cp_a2a(layout.cp_a2a()),
      m_ep_intra(layout.ep_intra()),
      m_gpus_per_node(std::max<int64_t>(1, gpus_per_node)) {
  SIMRUN_ASSERT(m_tp >= 1 && m_cp >= 1 && m_dp >= 1 && m_pp >= 1 && m_ep >= 1 && m_etp >= 1,
                "layout sizes must be positive");
  SIMRUN_ASSERT((m_tp * m_cp * m_dp) % (m_ep * m_etp) == 0, "ep·expert_tp must divide tp·cp·dp");
  SIMRUN_ASSERT(m_cp_a2a >= 1 && m_cp % m_cp_a2a == 0, "the all-to-all level must divide cp");
}

RankLayout::ExpertCoord RankLayout::expert_coord_of(int64_t rank) const {
  const int64_t stage_ranks = m_tp * m_cp * m_dp;
  const int64_t local = rank % stage_ranks;
  ExpertCoord e;
  e.stage_base = rank - local;
  e.etp = local % m_etp;
  e.ep = (local / m_etp) % m_ep;
  e.edp = local / (m_etp * m_ep);
  return e;
}

RankCoord RankLayout::coord_of(int64_t rank) const {
  SIMRUN_ASSERT(rank >= 0 && rank < world_size(), "rank out of range");
  RankCoord c;
  c.tp = rank % m_tp;
  rank /= m_tp;
  c.cp = rank % m_cp;
  rank /= m_cp;
  c.dp = rank % m_dp;
  c.pp = rank / m_dp;
  return c;
}

int64_t RankLayout::group_size(GroupKind kind) const {
  switch (kind) {
    case GroupKind::tp:
      return m_tp;
    case GroupKind::cp:
      return m_cp;
    case GroupKind::dp:
      return m_dp;
    case GroupKind::dp_cp:
      return m_dp * m_cp;
    case GroupKind::ep:
      return m_ep;
    case GroupKind::pp:
      return m_pp;
    case GroupKind::edp:
      return expert_dp();
    case GroupKind::cp_a2a:
      return m_cp_a2a;
    case GroupKind::cp_ring:
      return m_cp / m_cp_a2a;
    case GroupKind::ep_intra:
      return m_ep_intra;
    case GroupKind::ep_inter:
      return m_ep / m_ep_intra;
  }
  return 1;
}

std::vector<int64_t> RankLayout::group(GroupKind kind, int64_t rank) const {
  const RankCoord c = coord_of(rank);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(group_size(kind)));
  RankCoord m = c;
  switch (kind) {
    case GroupKind::tp:
      for (m.tp = 0; m.tp < m_tp; ++m.tp) out.push_back(rank_of(m));
      break;
    case GroupKind::cp:
      for (m.cp = 0; m.cp < m_cp; ++m.cp) out.push_back(rank_of(m));
      break;
    case GroupKind::dp:
      for (m.dp = 0; m.dp < m_dp; ++m.dp) out.push_back(rank_of(m));
      break;
    case GroupKind::dp_cp:
      for (m.dp = 0; m.dp < m_dp; ++m.dp)
        for (m.cp = 0; m.cp < m_cp; ++m.cp) out.push_back(rank_of(m));
      break;
    case GroupKind::ep: {
      const ExpertCoord e = expert_coord_of(rank);
      for (int64_t i = 0; i < m_ep; ++i) out.push_back(e.rank(m_etp, m_ep, e.etp, i, e.edp));
      break;
    }
    case GroupKind::edp: {
      const ExpertCoord e = expert_coord_of(rank);
      for (int64_t j = 0; j < expert_dp(); ++j) out.push_back(e.rank(m_etp, m_ep, e.etp, e.ep, j));
      break;
    }
    case GroupKind::pp:
      for (m.pp = 0; m.pp < m_pp; ++m.pp) out.push_back(rank_of(m));
      break;
    case GroupKind::cp_a2a:
      for (m.cp = c.cp - c.cp % m_cp_a2a; m.cp < c.cp - c.cp % m_cp_a2a + m_cp_a2a; ++m.cp)
        out.push_back(rank_of(m));
      break;
    case GroupKind::cp_ring:
      for (m.cp = c.cp % m_cp_a2a; m.cp < m_cp; m.cp += m_cp_a2a) out.push_back(rank_of(m));
      break;
    case GroupKind::ep_intra: {
      const ExpertCoord e = expert_coord_of(rank);
      const int64_t first = e.ep - e.ep % m_ep_intra;
      for (int64_t i = first; i < first + m_ep_intra; ++i)
        out.push_back(e.rank(m_etp, m_ep, e.etp, i, e.edp));
      break;
    }
    case GroupKind::ep_inter: {
      const ExpertCoord e = expert_coord_of(rank);
      for (int64_t i = e.ep % m_ep_intra; i < m_ep; i += m_ep_intra)
        out.push_back(e.rank(m_etp, m_ep, e.etp, i, e.edp));
      break;
    }
  }
  return out;
}

int64_t RankLayout::index_in_group(GroupKind kind, int64_t rank) const {
  const RankCoord c = coord_of(rank);
  switch (kind) {
    case GroupKind::tp:
      return c.tp;
    case GroupKind::cp:
      return c.cp;
    case GroupKind::dp:
      return c.dp;
    case GroupKind::dp_cp:
      return c.cp + m_cp * c.dp;
    case GroupKind::ep:
      return expert_coord_of(rank).ep;
    case GroupKind::edp:
      return expert_coord_of(rank).edp;
    case GroupKind::pp:
      return c.pp;
    case GroupKind::cp_a2a:
      return c.cp % m_cp_a2a;
    case GroupKind::cp_ring:
      return c.cp / m_cp_a2a;
    case GroupKind::ep_intra:
      return expert_coord_of(rank).ep % m_ep_intra;
    case GroupKind::ep_inter:
      return expert_coord_of(rank).ep / m_ep_intra;
  }
  return 0;
}

int64_t RankLayout::group_id(GroupKind kind, int64_t rank) const {
  // The smallest member rank identifies the group.
  const RankCoord c = coord_of(rank);
  RankCoord m = c;
  switch (kind) {
    case GroupKind::tp:
      m.tp = 0;
      break;
    case GroupKind::cp:
      m.cp = 0;
      break;
    case GroupKind::dp:
      m.dp = 0;
      break;
    case GroupKind::dp_cp:
      m.dp = 0;
      m.cp = 0;
      break;
    case GroupKind::ep: {
      const ExpertCoord e = expert_coord_of(rank);
      return e.rank(m_etp, m_ep, e.etp, 0, e.edp);
    }
    case GroupKind::edp: {
      const ExpertCoord e = expert_coord_of(rank);
      return e.rank(m_etp, m_ep, e.etp, e.ep, 0);
    }
    case GroupKind::pp:
      m.pp = 0;
      break;
    case GroupKind::cp_a2a:
      m.cp = c.cp - c.cp % m_cp_a2a;
      break;
    case GroupKind::cp_ring:
      m.cp = c.cp % m_cp_a2a;
      break;
    case GroupKind::ep_intra: {
      const ExpertCoord e = expert_coord_of(rank);
      return e.rank(m_etp, m_ep, e.etp, e.ep - e.ep % m_ep_intra, e.edp);
    }
    case GroupKind::ep_inter: {
      const ExpertCoord e = expert_coord_of(rank);
      return e.rank(m_etp, m_ep, e.etp, e.ep % m_ep_intra, e.edp);
    }
  }
  return rank_of(m);
}

int64_t RankLayout::nodes_spanned(GroupKind kind, int64_t rank) const {
  std::set<int64_t> nodes;
  for (int64_t r : group(kind, rank)) nodes.insert(node_of(r));
  return static_cast<int64_t>(nodes.size());
}

int64_t RankLayout::members_per_node(GroupKind kind, int64_t rank) const {
  std::map<int64_t, int64_t> count;
  int64_t best = 0;
  for (int64_t r : group(kind, rank)) best = std::max(best, ++count[node_of(r)]);
  return best;
}

std::vector<int64_t> RankLayout::representatives() const {
  std::vector<int64_t> out;
  for (int64_t s = 0; s < m_pp; ++s) out.push_back(rank_of(RankCoord{0, 0, 0, s}));
  return out;
}

int64_t scale_up_domain_size(const ClusterSpec& cluster) {
  const int64_t per_node = std::max<int64_t>(1, cluster.gpus_per_node);
  const int64_t domain = cluster.gpu.scale_up_domain;
  if (domain <= 0) return per_node;
  // Rack-scale NVLink (NVL72: 18 trays of 4 GPUs behind NVLink switches) spans nodes; an
  // HGX-style board domain (8 GPUs) ends at the node, however many GPUs the node holds. The
  // cluster graph draws its domains by the same rule (rack_scale_domain).
  return rack_scale_domain(cluster.gpu, per_node) ? domain : std::min(domain, per_node);
}

int64_t ep_domain_level(const ClusterSpec& cluster, const Layout& l) {
  const int64_t domain = scale_up_domain_size(cluster), span = l.ep * l.expert_tp;
  // Megatron's rank order puts a stage's tp·cp·dp ranks, and in them each EP group's ep·expert_tp,
  // side by side: a domain holds domain / expert_tp members of one group when both are multiples
  // of it and it is a multiple of expert_tp.
  const bool aligned =
      span > domain && span % domain == 0 && domain % l.expert_tp == 0 && (l.tp * l.cp * l.dp) % domain == 0;
  return aligned ? domain / l.expert_tp : 0;
}

bool group_inside_scale_up(const ClusterSpec& cluster, RankGroup group) {
  SIMRUN_ASSERT(group.size >= 1 && group.stride >= 1, "group size and stride must be positive");
  // Groups are aligned in Megatron's rank order, so the members span size·stride consecutive
  // ranks; the group fits when that span fits in one domain.
  return group.size == 1 || group.size * group.stride <= scale_up_domain_size(cluster);
}

bool group_over_host_pcie(const ClusterSpec& cluster, RankGroup group) {
  const ScaleUpKind kind = cluster.gpu.scale_up_kind;
  return (kind == ScaleUpKind::bridge || kind == ScaleUpKind::pcie) &&
         !group_inside_scale_up(cluster, group) && group.size * group.stride <= cluster.gpus_per_node;
}

}  // namespace simrun
