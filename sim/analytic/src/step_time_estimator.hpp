// Private to the closed-form step time (analytic.hpp estimate_step_time): the estimator's phases
// and the pieces they share. step_time_estimate.cpp times the stages' micro-batches;
// step_time_estimate_pipeline.cpp the pipeline's sends, fill and drain;
// step_time_estimate_data_parallel.cpp the data-parallel traffic and what it costs the compute
// stream.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/cost/compute_model.hpp"
#include "simrun/sim/cost/workload_cost.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/schedule.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun::detail {

// Seconds of one micro-batch through one piece of the model (a layer, the embedding, the
// head) on one GPU, from the workload builder's tasks.
struct PieceTime {
  double forward_s = 0, backward_s = 0, recompute_s = 0;        // compute kernels by phase
  double tp_comm_s = 0, cp_comm_s = 0, ep_comm_s = 0;           // collective durations
  double tp_exposed_s = 0, cp_exposed_s = 0, ep_exposed_s = 0;  // compute stream waiting for them
  double forward_exposed_s = 0;  // of those waits, the ones before forward kernels
  double host_wait_s = 0;        // of the compute kernels' time, waiting for the host to issue them
  double host_issue_s = 0;       // the host's time to issue the piece's tasks (launches and syncs)
  double gemm_flops = 0, attention_flops = 0, hbm_bytes = 0;
  double exposed_s() const { return tp_exposed_s + cp_exposed_s + ep_exposed_s; }
  void scale(double f) {
    for (double* x :
         {&forward_exposed_s, &forward_s, &backward_s, &recompute_s, &tp_comm_s, &cp_comm_s, &tp_exposed_s,
          &cp_exposed_s, &ep_comm_s, &ep_exposed_s, &gemm_flops, &attention_flops, &hbm_bytes})
      *x *= f;
  }
  void add(const PieceTime& o) {
    forward_exposed_s += o.forward_exposed_s;
    host_wait_s += o.host_wait_s;
    host_issue_s += o.host_issue_s;
    forward_s += o.forward_s;
    backward_s += o.backward_s;
    recompute_s += o.recompute_s;
    tp_comm_s += o.tp_comm_s;
    cp_comm_s += o.cp_comm_s;
    tp_exposed_s += o.tp_exposed_s;
    cp_exposed_s += o.cp_exposed_s;
    ep_comm_s += o.ep_comm_s;
    ep_exposed_s += o.ep_exposed_s;
    gemm_flops += o.gemm_flops;
    attention_flops += o.attention_flops;
    hbm_bytes += o.hbm_bytes;
  }
};

struct ProbeTimes {
  std::array<PieceTime, 2> layer;  // by layer-id parity
  int64_t layers = 1;              // layers the probe holds (1 or 2)
  PieceTime embedding, head;
};

// What a stage runs at: its compute slowdown (its slowest straggler's, 1 for none) and its
// slowest link of each class, as a fraction of the line rate (1 for none).
struct StageCondition {
  double slowdown = 1, scale_up = 1, scale_out = 1;
  double fraction(LinkClass c) const { return c == LinkClass::scale_up ? scale_up : scale_out; }
  // Takes a slow link of this stage's (or GPU's): its class runs at the slower fraction.
  void slow_down(const SlowLink& sl) {
    double& f = sl.link == LinkClass::scale_up ? scale_up : scale_out;
    f = std::min(f, sl.bandwidth_fraction);
  }
  bool operator<(const StageCondition& o) const {
    return std::tie(slowdown, scale_up, scale_out) < std::tie(o.slowdown, o.scale_up, o.scale_out);
  }
};

// The collectives' closed-form times (collective_s) as one estimate asks them, each worked out
// once: the estimate asks the same call again and again (a stage's equal DDP buckets, every
// stage's FSDP units and sends, each layer of the probe), and NCCL's model across domains (the
// tuner's table, the fluid sharing of fabric_collective_s) is its costliest part. A call is its
// op, bytes, group size and link, the link compared by value (the copy kept here holds its
// FabricGroup, immutable once built). One per estimate, on one thread.
class CollectiveTimes {
 public:
  double collective_s(CollectiveOp op, double bytes, int64_t n, const LinkCost& link);
  // A collective's time with its bytes moving at `fraction` of the link's rate and its latency (a
  // 1-byte call's time) unchanged: as the event simulation paces a flow by its slowest port.
  double collective_at_s(CollectiveOp op, double bytes, int64_t n, const LinkCost& link, double fraction);

 private:
  struct Call {
    CollectiveOp op;
    double bytes;
    int64_t n;
    size_t link;  // in m_links
    bool operator==(const Call&) const = default;
  };
  struct CallHash {
    size_t operator()(const Call& c) const;
  };
  size_t link_index(const LinkCost& link);
  std::vector<LinkCost> m_links;
  size_t m_last_link = 0;
  std::unordered_map<Call, double, CallHash> m_seconds;
};

// The probes' programs with their costs: one micro-batch of the model's first two layers as dense
// layers, and as MoE layers (where the model has layers of that kind), each with the embedding
// and the head; and each again with its GEMMs at 16 bits where the recipe keeps the last layers
// there (first_bf16_layer).
struct ProbePrograms {
  std::optional<StageProgram> dense, moe, dense_bf16, moe_bf16;
  std::optional<ProgramCost> dense_cost, moe_cost, dense_bf16_cost, moe_bf16_cost;
};
ProbePrograms probe_programs(const Scenario& sc, const WorkloadOptions& wo, const ComputeModel& compute);

// A probe's compute kernels, each at its own time, booked to its piece: what no overlap or wait
// shortens (StepTimeFloor's).
ProbeTimes kernel_times(const StageProgram& prog, const ProgramCost& cost);

// One micro-batch of one dense layer and of one MoE layer (each with the embedding and the head),
// and of each with its GEMMs at 16 bits (a recipe's last layers; unset where it keeps none).
struct Probes {
  ProbeTimes dense, moe, dense_bf16, moe_bf16;
  // What running a MoE layer's backward beside another micro-batch's forward of one hides of
  // their exposed communication (two micro-batches' probe, paired against one after the other).
  double paired_saving_per_moe_layer_s = 0;
};

// Layers per chunk, [stage·split_v + chunk], as the workload splits them (pipeline_split), and each
// chunk's first layer. Where that split cannot be made (the event simulation refuses the layout),
// the memory model's near-even split, one chunk per stage (DualPipe's two).
struct ChunkSplit {
  std::vector<int64_t> layers_per_chunk, first_layer;
  int64_t split_v = 1;  // chunks per stage the split holds
};
ChunkSplit split_chunks(int64_t layers, const Layout& l, PipelineSchedule schedule, int64_t v_chunks);

// Where the model's layers change kind: the first MoE layer and the first a recipe keeps in 16
// bits (each the layer count where there is none).
struct LayerKinds {
  int64_t first_moe = 0, first_bf16 = 0;
};
LayerKinds layer_kinds(const Scenario& sc);
// What layer `id` runs in one micro-batch: its kind's probe layer at its recompute parity.
const PieceTime& layer_piece(const Probes& probes, const LayerKinds& kinds, int64_t id);

// What one micro-batch runs on a stage: each chunk (its layers' pieces, the embedding on the chunk
// the micro-batch enters by, the head on the one it leaves by), and the stage's per micro-batch
// (DualPipe: half its chunks', each micro-batch running through one of the two).
struct StagePieces {
  std::vector<PieceTime> chunks;
  PieceTime micro_batch;
};
StagePieces stage_pieces(const Probes& probes, const ChunkSplit& split, const LayerKinds& kinds,
                         PipelineSchedule schedule, int64_t stage, int64_t pp);

// ZeRO-3 / FSDP traffic of one unit (a layer, the embedding, the head), one call each way (two
// where it holds routed experts: one over DP, one over expert-DP), or of a stage's units summed.
struct UnitTraffic {
  double gather_s = 0, reduce_s = 0;
  double expert_s = 0;  // of gather_s + reduce_s, the routed experts' calls (over expert-DP)
  // Of those, the calls' fixed latency (a 1-byte call's time, as the event splits a collective
  // into latency and bytes on the links): transfers on two streams overlap it.
  double gather_latency_s = 0, reduce_latency_s = 0;
  void add(const UnitTraffic& o) {
    gather_s += o.gather_s;
    reduce_s += o.reduce_s;
    expert_s += o.expert_s;
    gather_latency_s += o.gather_latency_s;
    reduce_latency_s += o.reduce_latency_s;
  }
};

// Megatron DDP bucket of the ZeRO 0-2 gradient reduction, with its traffic.
struct TimedBucket {
  StageProgram::GradBucketSize size;
  double grad_s = 0, param_s = 0;
};

// One chunk of one micro-batch on one stage, as the pipeline schedule plays it.
struct ChunkStep {
  double forward_s = 0, forward_exposed_s = 0, backward_s = 0, backward_exposed_s = 0;
};

// The closed-form step time of analytic.hpp, phase by phase: run() calls each phase once, in
// the order they are declared (time_data_parallel ends in one of the two expose_*), and each
// reads what the phases before it set.
class StepTimeEstimator {
 public:
  StepTimeEstimator(const Scenario& sc, const AnalyticOptions& options);
  StepTimeEstimate run();

 private:
  // Phases.
  void probe_micro_batch_pieces();
  void split_into_chunks();
  void time_stages();
  void time_pipeline_sends();
  void time_fsdp_units();
  void time_fill_and_drain();
  void spread_reduction_slowdown();
  void time_data_parallel();
  void expose_fsdp_traffic();
  void expose_ddp_traffic(const std::vector<std::vector<TimedBucket>>& stage_buckets, int64_t busiest);
  void charge_overlap_slowdown();
  void charge_shared_links();
  void fill_breakdown();

  // The pieces they share.
  const StageTime& slowest() const { return m_out.stages[size_t(m_out.slowest_stage)]; }
  static double mb_exposed(const StageTime& st) {
    return st.tp_exposed_s + st.cp_exposed_s + st.ep_exposed_s;
  }
  // A stage's DP (or expert-DP) traffic of `params`, at the stage's link fraction.
  double reduce_s(double params, int64_t n, const LinkCost& link, int64_t stage) const;
  double gather_s(double params, int64_t n, const LinkCost& link, int64_t stage) const;
  double bucket_reduce_s(const StageProgram::GradBucketSize& b, int64_t stage) const;
  double bucket_gather_s(const StageProgram::GradBucketSize& b, int64_t stage) const;
  double beside_traffic_s(double compute_s, double traffic_s) const;
  const Probes& probes_of(int64_t stage) const { return m_probes.at(m_stage_condition[size_t(stage)]); }
  const PieceTime& unit_piece(const StageProgram::FsdpUnit& u, int64_t stage) const;
  // See gathered_forward_spans (step_time_estimate_data_parallel.cpp).
  enum class FirstGather : uint8_t { waited_for, done_before };
  enum class OverlapSlowdown : uint8_t { paid, not_paid };
  std::vector<double> gathered_forward_spans(int64_t stage, FirstGather first,
                                             OverlapSlowdown slowdown) const;
  double first_forward_s(const StageTime& st) const;
  double last_backward_s(const StageTime& st) const;
  // Whether a full mesh's link to a peer common to both groups counts as shared (dp_link_share).
  enum class MeshPeerLinks : uint8_t { counted, ignored };
  double dp_link_share(const LinkCost& lk, RankGroup g, double expert_share, MeshPeerLinks peer_links) const;
  // The group m_cp_link serves: CP's, or under a2a+p2p the ring's level (the one that leaves the
  // node), where CP's exposed time is taken.
  RankGroup cp_link_group() const {
    return rank_group(m_layout,
                      m_layout.cp_comm_type == CpCommType::a2a_p2p ? GroupKind::cp_ring : GroupKind::cp);
  }
  double waits_on_dp_links_s(double tp_s, double cp_s, double ep_s, double expert_share) const;
  double last_backward_shared_waits_s(const StageTime& st) const;
  double forward_shared_waits_s(const PieceTime& piece, double gather_s, const UnitTraffic& traffic) const;
  double fsdp_reduce_tail_s(const StageTime& st) const;
  // The schedule played out with each chunk-step at chunk_step_s (kept in slot_s, [stage][slot_key],
  // for the next play) and each message between stages at hop_s.
  double chunk_step_s(int64_t stage, const PipelineSlot& slot) const;
  std::optional<double> makespan(const std::vector<double>& hop_s, std::vector<double>& slot_s,
                                 std::vector<double>* stage_ends = nullptr) const;
  double neighbour_hops_s(int64_t stage) const;
  double fill_drain_hops_s() const;
  double pipeline_tp_gather_s() const;
  double pipeline_port_bound_s() const;
  std::pair<double, double> ddp_chunk_windows(const StageTime& st, double grad_s, double param_s) const;
  double ddp_grad_tail_s(const std::vector<TimedBucket>& buckets, const StageTime& st) const;
  double ddp_param_delay_s(const std::vector<TimedBucket>& buckets, double forward_chunk,
                           double first_forward_s) const;

  const Scenario& m_sc;
  const ModelSpec& m_model;
  const Layout& m_layout;
  const AnalyticOptions& m_options;
  const WorkloadOptions& m_wo;
  const ComputeModel m_compute;
  const PipelineSchedule m_schedule;
  const int64_t
      m_v_chunks;  // chunks per stage the schedule plays (virtual stages, interleaved; DualPipe's 2)
  const bool m_interleaved;  // each micro-batch visits every chunk of a stage (Megatron's interleaving)
  const double m_v, m_p;     // as doubles: chunks per stage, stages
  const int64_t m_dp_n;      // the DP traffic's group: dp·cp
  const int64_t m_expert_dp;
  const bool m_fsdp_pipeline;  // ZeRO-3 with pp > 1 (torchtitan)

  // Links of the process groups (Megatron order tp-cp-ep-dp-pp), with calibration α/β.
  // m_cp_link: the CP group's, or the ring level's under a2a+p2p, whose all-to-all level has
  // m_cp_a2a_link.
  LinkCost m_tp_link, m_cp_link, m_cp_a2a_link, m_ep_link, m_ep_intra_link, m_ep_inter_link, m_dp_link,
      m_expert_dp_link;
  LinkCost m_pp_link_inside, m_pp_link_across;  // a pipeline send within, or out of, a domain
  mutable CollectiveTimes m_collectives;        // every collective's time, worked out once

  // Each stage's condition (stragglers, slow links), and one micro-batch of one dense layer and
  // of one MoE layer, the embedding and the head, in each condition.
  std::vector<StageCondition> m_stage_condition;
  std::map<StageCondition, Probes> m_probes;
  LayerKinds m_kinds;  // the first MoE layer, the first 16-bit one

  ChunkSplit m_split;

  std::vector<std::vector<PieceTime>> m_chunk_pieces;                      // [stage][chunk], per micro-batch
  std::vector<std::vector<StageProgram::GradBucketSize>> m_stage_buckets;  // Megatron DDP's, ZeRO 0-2
  std::vector<std::vector<StageProgram::FsdpUnit>> m_stage_units;          // FSDP's, ZeRO-3
  double m_optimizer_s = 0;

  std::vector<double> m_hop_s;  // [b]: one message between stage b and stage (b + 1) mod pp
  double m_pp_total_s = 0, m_pp_overlapped_s = 0;  // the slowest stage's sends

  std::vector<std::vector<UnitTraffic>> m_unit_traffic;  // [stage][unit]
  std::vector<UnitTraffic> m_stage_traffic;              // [stage]: its units' traffic summed
  UnitTraffic m_first_layer_traffic;  // the first stage's first layer (after the embedding)
  std::vector<std::vector<double>> m_first_forward_spans;  // [stage][chunk], FSDP over a pipeline
  std::vector<double> m_stage_reduce_traffic_s;            // [stage]: beside its last backward
  std::vector<double> m_stage_reduce_expert_share;         // [stage]: of that, expert-DP's

  std::vector<std::vector<ChunkStep>> m_chunk_steps;  // [stage][chunk]
  // [stage][slot_key]: compute slowed beside the stage's gradient reductions, chunk by chunk
  // (interleaved DDP: spread_reduction_slowdown); empty: each last backward stretched instead.
  std::vector<std::vector<double>> m_reduce_slowdown_s;
  size_t slot_key(const PipelineSlot& slot) const;
  // What a paired slot (PipelineSlot::paired_with_next) and its partner hide (the probes' saving
  // per MoE layer, times the slot's chunk's MoE layers), 0 for the rest; and a stage's per step.
  double slot_paired_saving_s(int64_t stage, const PipelineSlot& slot) const;
  double stage_paired_saving_s(int64_t stage) const;
  // [stage]: when its last backward and its optimizer end on the compute path, less the longest
  // optimizer (which the compute term holds); pp > 1.
  std::vector<double> m_stage_path_end;

  double m_dp_total_s = 0, m_grad_overlapped_s = 0, m_param_overlapped_s = 0;
  // The slowest stage's DP traffic over the busiest stage's (whose traffic the above are): what of
  // the overlapped traffic runs beside the slowest stage's compute and collectives.
  double m_slowest_dp_share = 1;
  double m_slowest_expert_share = 0;  // of the slowest stage's DP traffic time, expert-DP's
  double m_dp_busy_s = 0;  // ZeRO-3: the time its streams are busy, traffic on two at once counted once
  double m_fwd_slowdown_s = 0, m_grad_slowdown_s = 0;
  double m_tp_shared_s = 0, m_cp_shared_s = 0, m_ep_shared_s = 0;

  StepTimeEstimate m_out;
};

}  // namespace simrun::detail
