// Event simulation of one training step: the workload's per-stage programs run on simulated
// GPUs, each with its own compute and communication streams, on the discrete-event engine
// (engine.hpp); communication goes through the flow-level network (network.hpp), so the TP,
// PP, DP and CP traffic that meets on a GPU's NVLink port or NIC shares it max-min fairly.
//
// Execution rules (CUDA streams + NCCL): a stream runs its tasks one at a time in program
// order; a task also waits for its explicit dependencies. A collective starts when every
// member of its group has reached it (the early ones wait on their comm stream). Its time alone
// comes from the NCCL model of collectives.hpp (the tuner's algorithm/protocol run once per
// op, group and size on an idle cluster graph, then reused), or from the analytic model's α-β
// ring formulas (collective_cost.hpp); calibration.json α/β override either per link class.
// Contention: the bandwidth part of that time is a flow on the members' ports of the link
// class it rides (each GPU has an NVLink port and a NIC share), the α part its latency, so
// TP, PP, DP and CP traffic meeting on a port share it max-min fairly. A pipeline send is a
// flow over the two GPUs' ports; it completes the receiver's recv.
//
// Scope: by default one representative rank per pipeline stage is simulated (RankLayout): its
// TP/CP/DP peers run the same program at the same times, so a collective starts as soon as the
// representative reaches it and its flow occupies the representative's port only. `full`
// simulates every rank (every collective waits for all its members), which is what stragglers
// need; on a symmetric layout both give the same step time.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "simrun/sim/collectives/efficiency.hpp"
#include "simrun/sim/cost/calibration.hpp"
#include "simrun/sim/cost/compute_model.hpp"  // kCommOverlapSlowdown
#include "simrun/sim/cost/workload_cost.hpp"
#include "simrun/sim/event/progress.hpp"
#include "simrun/sim/scenario/degraded.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun {

enum class SimulationScope { representatives, full };

// How long a collective takes before contention.
enum class CollectiveTiming {
  nccl_model,  // simrun's NCCL model (collectives.hpp): the tuner's algorithm and protocol (ring,
               // tree, NVLS, ...) run alone on the cluster graph, once per (op, group, size)
  alpha_beta,  // the analytic model's ring α-β formulas (collective_cost.hpp)
};

struct StepSimOptions {
  SimulationScope scope = SimulationScope::representatives;
  std::vector<Straggler> stragglers;  // need scope full
  std::vector<SlowLink> slow_links;   // need scope full
  // Keep per-task start/end times of the traced ranks (representatives, stragglers) for
  // --trace; other ranks keep only what the breakdown needs.
  bool record_trace = false;
  // record_trace: the global ranks whose spans are kept, e.g. {0, 8, 16} (select_trace_ranks in
  // trace.hpp reads "0,8,16", "stage:N", "dp:N"); each must be simulated (with representatives
  // scope, a stage's tp = cp = dp = 0 rank). Empty: the reported ranks (representatives,
  // stragglers, slow links). The report's breakdown does not change with it.
  std::vector<int64_t> trace_ranks;
  CollectiveTiming timing = CollectiveTiming::nccl_model;
  EfficiencyDefaults comm;  // link fractions and α of the α-β timing (analytic model's)
  // Compute slowdown beside DP/PP NCCL kernels (compute_model.hpp).
  double overlap_slowdown = kCommOverlapSlowdown;
  // Told how the step is going (progress.hpp); empty: nobody asks. simulate() also tells it when
  // the workload is being built. The results do not depend on it.
  ProgressObserver progress;
};

// Where the time of one simulated rank went, seconds. Exposed communication and bubble are
// the compute stream's idle gaps attributed to what the next compute op waited for, down the
// chain: a collective that started late is charged from its start, the rest to what it waited for.
struct RankBreakdown {
  int64_t rank = 0;
  int64_t stage = 0;
  double finish_s = 0;                                                     // last task end
  double forward_s = 0, backward_s = 0, recompute_s = 0, optimizer_s = 0;  // compute busy time
  std::array<double, kGroupKindCount> comm_s{};     // total per GroupKind (tp, cp, dp, dp_cp, ep, pp, edp)
  std::array<double, kGroupKindCount> exposed_s{};  // exposed per GroupKind
  double bubble_s = 0;  // idle waiting for other ranks' compute: pipeline fill and drain, and
                        // (--full) a collective's slower members
  // Of the compute busy time above, the time a kernel ready to run waited for the host to issue
  // it (launch-bound stretches, the refill after a host sync).
  double host_wait_s = 0;
  double compute_s() const { return forward_s + backward_s + recompute_s + optimizer_s; }
};

struct TaskSpan {
  int64_t rank = 0;
  uint32_t task = 0;
  TimeNs start, end;
};

struct StepResult {
  TimeNs step_time;                  // slowest simulated rank's finish
  std::vector<RankBreakdown> ranks;  // traced ranks (representatives, plus stragglers in full)
  size_t critical = 0;               // index into `ranks` of the rank that finishes last
  int64_t last_rank = 0;             // that rank's id
  bool last_rank_traced = false;     // whether it is in `ranks` (simulate_step makes sure)
  std::vector<TaskSpan> spans;       // record_trace: every task of the traced ranks (trace_ranks,
                                     // or those in `ranks`), rank by rank, each in task order
  int64_t simulated_ranks = 0;
  uint64_t events = 0;  // engine events processed
  uint64_t tasks = 0;   // tasks executed over all simulated ranks
  uint64_t flows = 0;   // network flows started
  std::vector<std::string> warnings;
};

// Simulates one step of `workload`, its compute tasks timed by `cost` (cost_workload). Throws
// InputError for stragglers or slow links that check_* refuses, or with representatives scope,
// and for trace_ranks out of range or not simulated.
StepResult simulate_step(const Scenario& scenario, const Workload& workload, const WorkloadCost& cost,
                         const StepSimOptions& options, const Calibration& calibration = Calibration{});

}  // namespace simrun
