// --explain entries shared by the analytic estimate and the event simulation: what both
// compute the same way (FLOPs and throughput, the worst stage's memory, the run totals). Each
// fidelity adds its own step-time and breakdown entries.
#pragma once

#include "simrun/models/counts.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/memory/run_cost.hpp"

namespace simrun::detail {

// One entry: the number, its formula and the inputs that went in.
void explain(Report& r, std::string key, double value, std::string unit, std::string formula,
             std::string inputs);

// flops_per_step, tokens_per_s, tflops_per_gpu, mfu, hfu and model.params of the report.
void explain_throughput(const Scenario& sc, const FlopCounts& per_sequence, AttentionFlops convention,
                        double peak, Report& r);
// memory.* of the worst stage.
void explain_memory(const Scenario& sc, const StageMemory& worst, const MemoryDefaults& defaults, Report& r);
// run.*.
void explain_run(const Scenario& sc, const RunTotals& run, const RunDefaults& defaults, Report& r);

}  // namespace simrun::detail
