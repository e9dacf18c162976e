// The estimate's measured envelope (see agreement_envelope.hpp and docs/agreement.md).
#include "simrun/sim/analytic/agreement_envelope.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"

namespace simrun {

bool tp_cp_inside_scale_up(const Scenario& s) {
  return group_inside_scale_up(s.cluster, {s.layout.tp * s.layout.cp, 1});
}

bool uncongested(const Scenario& s, double exposed_share) {
  return tp_cp_inside_scale_up(s) && exposed_share <= kUncongestedExposedShare;
}

bool congested(const Scenario& s, const Report& estimate) {
  const double exposed_share =
      estimate.step_time_s > 0 ? estimate.breakdown.exposed_comm_s / estimate.step_time_s : 0;
  return !uncongested(s, exposed_share);
}

std::optional<std::string> agreement_warning(const Scenario& s, const AnalyticOptions& options,
                                             const Report& estimate) {
  const Layout& l = s.layout;
  if (s.run.assumed_mfu) return std::nullopt;  // the estimate's time is the assumption, not the model
  // The classes of layout where bench/analytic_agreement measured the two more than 5% apart
  // (docs/agreement.md, 2026-12-07; nearly every congested layout beyond 10% is of the first).
  std::vector<std::string> reasons;
  const std::vector<LayoutDiagnostic> warnings = layout_warnings(s, default_schedule(l));
  const bool partial_rack = std::any_of(warnings.begin(), warnings.end(), [](const LayoutDiagnostic& w) {
    return w.code == "partial_scale_up_domain";
  });
  if (partial_rack)
    reasons.push_back(
        "DP groups leaving a partial NVL72 rack: measured up to 42% apart (71% with hierarchical CP, 12% on "
        "uncongested layouts), 104% with a slow NIC there, 96% with DeepSeek-V3 under ZeRO-3 and 25% on an "
        "oversubscribed fat tree");
  if (!options.slow_links.empty() && !partial_rack && congested(s, estimate))
    reasons.push_back("a slow link on a congested layout: measured up to 17% apart (MI300X)");
  // Ring attention's sends (p2p, and a2a+p2p's ring level) across nodes that share a NIC.
  const bool ring = l.cp_comm_type == CpCommType::p2p || l.cp_comm_type == CpCommType::a2a_p2p;
  if (l.cp > 1 && ring && s.cluster.nics_per_node < s.cluster.gpus_per_node && !tp_cp_inside_scale_up(s))
    reasons.push_back(fmt::format(
        "ring attention across nodes with {} NIC{} for {} GPUs a node: the estimate's NIC sharing is "
        "coarser than the event's flows, measured up to 23% apart (MI300X with 2 NICs a node; 22% on "
        "H100 with one), the event's step longer",
        s.cluster.nics_per_node, s.cluster.nics_per_node == 1 ? "" : "s", s.cluster.gpus_per_node));
  if (l.zero_stage == 3 && l.pp > 1 && l.num_microbatches() < l.pp)
    reasons.push_back(
        fmt::format("ZeRO-3 over a pipeline with {} micro-batch{} for {} stages, a step of fill and drain: "
                    "measured up to "
                    "12% apart on DeepSeek-V3 (the event's step longer)",
                    l.num_microbatches(), l.num_microbatches() == 1 ? "" : "es", l.pp));
  if (reasons.empty()) return std::nullopt;
  std::string why;
  for (const std::string& r : reasons) why += (why.empty() ? "" : "; ") + r;
  return "the closed-form estimate and the event simulation may land more than 5% apart on this layout (" +
         why + "; docs/agreement.md): compare the two before relying on either";
}

}  // namespace simrun
