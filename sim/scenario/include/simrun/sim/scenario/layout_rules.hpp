// The rules of a parallel layout, in one place and as data: what makes a layout impossible
// (layout_error: the scenario parser raises it as InputError, the workload builder refuses a
// hand-built Scenario with it, a planner counts it as a pruning reason) and the caveats of one
// that runs (layout_warnings: both fidelities report them word for word). Sources: Megatron-Core
// TransformerConfig and parallel_state (divisibility), Narayanan et al. 2021 (pipeline bubble).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

struct LayoutDiagnostic {
  std::string field;    // the scenario field at fault, e.g. "layout.tp"
  std::string code;     // a stable name to count by, e.g. "tp_divides_heads"
  std::string message;  // one line: what is wrong (and what would be right)
};

enum class PipelineSchedule : uint8_t { gpipe, one_f_one_b, interleaved };
const char* to_string(PipelineSchedule s);
// Which pipeline schedule a layout runs: interleaved 1F1B with virtual stages, else 1F1B.
PipelineSchedule default_schedule(const Layout& layout);

// The first rule `layout` breaks for this model and cluster, in the order the parser checks
// them (later rules assume the earlier hold); nullopt when it can run. The schedule's own
// rules (an interleaved order that completes) are the workload builder's.
std::optional<LayoutDiagnostic> layout_error(const ModelSpec& model, const ClusterSpec& cluster,
                                             const Layout& layout);

// Caveats of a layout that runs under `schedule`: groups leaving the scale-up domain, a
// pipeline that never fills, settings without effect, combinations modelled as one framework
// runs them.
std::vector<LayoutDiagnostic> layout_warnings(const Scenario& scenario, PipelineSchedule schedule);

// Their messages, as reports list them.
std::vector<std::string> messages(const std::vector<LayoutDiagnostic>& diagnostics);

}  // namespace simrun
