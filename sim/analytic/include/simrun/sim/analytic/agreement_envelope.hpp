// Where the closed-form estimate has been measured against the event simulation, and the
// warning both commands give where the two are known to land apart. bench/analytic_agreement
// samples thousands of layouts (docs/agreement.md): with TP and CP inside a scale-up domain and
// at most 10% of the step exposed communication in both fidelities ("uncongested") 99-100% of
// the sampled layouts land within 5%; congested ones do on 95-98%, and three classes are
// measured beyond it: DP groups leaving a partial NVL72 rack (up to 42%, 12% uncongested, 104%
// with a slow NIC there), slow links elsewhere (up to 17%) and ZeRO-3 over a pipeline with fewer
// micro-batches than stages (up to 12%, DeepSeek-V3).
#pragma once

#include <optional>
#include <string>

#include "simrun/sim/analytic/analytic.hpp"

namespace simrun {

// The exposed communication, as a share of the step, up to which a layout is uncongested.
inline constexpr double kUncongestedExposedShare = 0.10;

// Whether the TP group, and CP over it, sits in one scale-up domain (NVLink/NVSwitch, a mesh).
bool tp_cp_inside_scale_up(const Scenario& s);

// Uncongested: TP x CP inside a scale-up domain and at most kUncongestedExposedShare of the step
// exposed communication (the benchmark passes the larger of the two fidelities' shares).
bool uncongested(const Scenario& s, double exposed_share);
// Not uncongested by the estimate's own exposed share.
bool congested(const Scenario& s, const Report& estimate);

// The warning for a layout of a class measured more than 5% apart, naming the class, or nullopt.
// `estimate` is the closed form's report of the layout (both commands judge by its numbers).
std::optional<std::string> agreement_warning(const Scenario& s, const AnalyticOptions& options,
                                             const Report& estimate);

}  // namespace simrun
