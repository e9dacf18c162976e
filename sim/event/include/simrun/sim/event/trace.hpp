// Chrome Trace Event JSON of a simulated step (opens in Perfetto / chrome://tracing):
// one process per traced GPU (pid = global rank), one thread per stream (compute, TP comm, CP
// comm, PP send, PP recv of activations, DP grad, DP param, PP recv of gradients), complete events ("ph":"X",
// µs) named
// "<phase> L<layer> <op> mb<micro-batch>", e.g. "fwd L3 qkv mb2", with FLOPs, bytes and the
// collective in args (Kineto's "Collective name", "Group size", "Process Group Name" keys for
// communication, so simulated and measured traces read alike). ecosystem.md §3.
#pragma once

#include <iosfwd>
#include <string>

#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/event/step_executor.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// "fwd L3 qkv mb2", "bwd L3 tp_rs_attn mb2", "opt optimizer", "comm L-1 dp_grad_reduce".
std::string task_event_name(const Task& task);

// Writes the trace of the spans in `step` (run with StepSimOptions::record_trace).
void write_chrome_trace(std::ostream& out, const Scenario& scenario, const Workload& workload,
                        const StepResult& step);

}  // namespace simrun
