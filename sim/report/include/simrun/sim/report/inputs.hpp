// The resolved inputs a report was computed from, echoed beside it so that a report stands alone
// and the rows of a sweep can be told apart and diffed: the model and its shape, the cluster, every
// layout field, the framework behaviour applied and the run. One list of fields feeds both the
// JSON "inputs" object (nested at the dots) and the leading CSV columns (named by the dotted
// path), so the two never drift. The names follow the scenario file's (DESIGN.md "Scenario file").
#pragma once

#include <string>

#include "simrun/sim/report/csv.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// The cluster: cluster.gpu, num_gpus, gpus_per_node, fabric.{kind, nics_per_node, topology,
// oversubscription} (estimate, simulate, collective and topology all echo it).
Fields cluster_input_fields(const ClusterSpec& cluster);

// What estimate and simulate ran: model.* (name and shape; MoE and MLA fields always present,
// 0 when the model has none, so every run of a sweep has the same columns), cluster.*, every
// Layout field as layout.*, framework.* (the profile's id, the schedule the layout runs
// (default_schedule) and every WorkloadOptions field as applied, flags included), run.*
// (tokens null when Chinchilla's default applies, checkpoint_interval_min "auto" when
// Young/Daly's) and the calibration file (null when none).
Fields report_input_fields(const Scenario& scenario, const WorkloadOptions& workload,
                           const std::string& calibration_file);

}  // namespace simrun
