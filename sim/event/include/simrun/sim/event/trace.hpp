// Chrome Trace Event JSON of a simulated step (opens in Perfetto / chrome://tracing):
// one process per traced GPU (pid = global rank, named with its node, stage and tp/cp/dp
// coordinates), one thread per stream (compute, TP comm, CP comm, PP send, PP recv of
// activations, DP grad, DP param, PP recv of gradients), complete events ("ph":"X", µs) named by
// the op kind so that Perfetto aggregates by name: "fc2 bwd", "attn_core fwd", "all_reduce tp",
// "reduce_scatter dp", "send pp_act", "recv pp_grad". Layer, micro-batch, chunk, FLOPs, bytes
// and the shape go in args, with Kineto's "Collective name", "Group size", "Process Group Name"
// keys for communication, so simulated and measured traces read alike (ecosystem.md §3). Each
// pipeline send is joined to its receive on the peer stage by a flow ("ph":"s" / "ph":"f",
// "bp":"e", one id per message) where both ranks are traced. docs/model.md "Trace".
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "simrun/sim/event/step_executor.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/scenario/scenario.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

// Default size cap of a trace: Perfetto's UI opens ~100 MB of JSON comfortably.
inline constexpr double kTraceDefaultMaxBytes = 100e6;

struct TraceOptions {
  // Bytes the JSON may take, e.g. 100e6; 0 for no limit. Past it, spans are left out in this
  // order: micro-batches from the last down (every traced rank keeps micro-batches 0 .. N−1 and
  // its per-step ops: optimizer, DP reductions), then, when micro-batch 0 alone is too large,
  // whole ranks from the last traced one back. Flows go with their send.
  double max_bytes = kTraceDefaultMaxBytes;
};

// What write_chrome_trace wrote and what the size cap left out.
struct TraceSummary {
  int64_t slices = 0;          // complete events written
  int64_t flows = 0;           // send → recv flows written (each an "s" and an "f" event)
  int64_t distinct_names = 0;  // of the slices written
  double bytes = 0;            // written
  double full_bytes = 0;       // the whole trace's size, cap or not
  int64_t ranks = 0;           // traced ranks in the step
  int64_t ranks_kept = 0;
  int64_t micro_batches = 0;  // in the step
  int64_t micro_batches_kept = 0;
  bool truncated() const { return ranks_kept < ranks || micro_batches_kept < micro_batches; }
};

// The slice name of a task, its op kind: "<op> <fwd|bwd|recomp>" for compute in a pass
// ("fc2 bwd"), the op alone for per-step compute ("optimizer"), "<collective> <group>" for
// collectives ("all_reduce tp"), "send|recv <op>" for pipeline p2p ("send pp_act").
std::string task_slice_name(const Task& task);

// A task's label, unique within a rank's step: "fwd L3 qkv mb2", "bwd L3 tp_rs_attn mb2",
// "opt optimizer", "comm L-1 dp_grad_reduce" (in each slice's args as "label").
std::string task_event_name(const Task& task);

// Writes the trace of the spans in `step` (run with StepSimOptions::record_trace).
TraceSummary write_chrome_trace(std::ostream& out, const Scenario& scenario, const Workload& workload,
                                const StepResult& step, const TraceOptions& options = TraceOptions{});

// The global ranks a selector names, in order and without repeats: "0,8,16" (ranks),
// "stage:N" (every rank of pipeline stage N), "dp:N" (every rank of data-parallel replica N).
// Throws InputError{"step", "trace_ranks", why} for a malformed selector or one out of range.
std::vector<int64_t> select_trace_ranks(std::string_view selector, const RankLayout& layout);

}  // namespace simrun
