// The estimate's measured envelope (see agreement_envelope.hpp and docs/agreement.md).
#include "simrun/sim/analytic/agreement_envelope.hpp"

#include <fmt/format.h>

#include <vector>

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
  // The classes of layout where bench/analytic_agreement measured the two more than 5% apart.
  std::vector<std::string> reasons;
  if (!options.slow_links.empty() && l.pp > 1 && congested(s, estimate))
    reasons.push_back(
        "a slow link under a congested pipeline: measured up to 14.9% apart with a slow NIC under "
        "interleaving (the event's step longer) and 22.7% on a mesh with most of a GPU's links slowed "
        "(shorter)");
  if (l.zero_stage == 3 && l.pp > 1 && l.num_microbatches() < l.pp)
    reasons.push_back(
        fmt::format("ZeRO-3 over a pipeline with {} micro-batch{} for {} stages, a step of fill and drain: "
                    "measured up to "
                    "5.7% apart",
                    l.num_microbatches(), l.num_microbatches() == 1 ? "" : "es", l.pp));
  if (reasons.empty()) return std::nullopt;
  std::string why;
  for (const std::string& r : reasons) why += (why.empty() ? "" : "; ") + r;
  return "the closed-form estimate and the event simulation may land more than 5% apart on this layout (" +
         why + "; docs/agreement.md): compare the two before relying on either";
}

}  // namespace simrun
