// The time of one of the step's collectives or pipeline sends alone on an idle cluster, before
// the flow network shares its ports (step_executor.hpp): simrun's NCCL model on the cluster
// graph, or the analytic α-β ring formulas, with calibration.json's α/β per link class.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/event/step_executor.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/topologies/cluster_graph.hpp"

namespace simrun {

// Bandwidth-bound seconds (shared on the ports) and latency of one collective alone.
struct CommCost {
  double bw_s = 0;
  double alpha_s = 0;
  int port = 0;  // 0 NVLink port, 1 NIC
};

class StepCommCosts {
 public:
  // NCCL's model needs the cluster graph (else α-β, with a warning: warnings()); calibration.json's
  // α/β, where given for a link class, replace the model there.
  StepCommCosts(const Scenario& sc, const RankLayout& layout, const StepSimOptions& opt,
                const Calibration& cal);

  CommCost collective(CollectiveOp op, GroupKind g, double bytes);
  CommCost pipeline_send(double bytes, PairPlacement placement);

  const std::vector<std::string>& warnings() const { return m_warnings; }

 private:
  CommCost alpha_beta(CollectiveOp op, int64_t n, LinkCost lc, double bytes) const;
  CommCost nccl_model(CollectiveOp op, const std::vector<std::vector<int64_t>>& groups, double bytes,
                      int port) const;
  template <class GroupAt>
  std::vector<std::vector<int64_t>> with_nic_twins(RankGroup kind, GroupAt group_at) const;
  std::vector<std::vector<int64_t>> groups_of_block(GroupKind g, RankGroup kind) const;

  const Scenario& m_sc;
  const RankLayout& m_layout;
  const EfficiencyDefaults& m_comm;
  std::array<LinkCost, kGroupKindCount> m_link{};
  std::array<bool, kGroupKindCount> m_stage_together{};  // time a call beside its stage's groups
  std::shared_ptr<const ClusterGraph> m_graph;           // nccl_model timing
  std::array<bool, 2> m_calibrated{};                    // calibration.json gives α/β for the link class
  std::array<LinkCalibration, 2> m_cal_links{};
  std::map<std::tuple<int, int, double>, CommCost> m_cache;
  std::vector<std::string> m_warnings;
};

}  // namespace simrun
