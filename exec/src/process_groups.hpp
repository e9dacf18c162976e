// One MPI communicator per process group and stream a stage program uses (exec/, private).
// Ranks are MPI_COMM_WORLD's, placed in Megatron's tp-cp-ep-dp-pp order (RankLayout): world rank
// r is the layout's rank r. A group's communicator is split from the world by the group's id, its
// members ordered by their index in the group; each stream gets its own, so that the collectives
// of two streams (a TP all-reduce beside a DP reduce-scatter) never have to match in order.
#pragma once

#include <mpi.h>

#include <map>
#include <utility>

#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun::exec {

class ProcessGroups {
 public:
  // Collective over MPI_COMM_WORLD: every rank calls it with the same workload.
  ProcessGroups(const Workload& workload, const RankLayout& layout, int rank);
  ~ProcessGroups();
  ProcessGroups(const ProcessGroups&) = delete;
  ProcessGroups& operator=(const ProcessGroups&) = delete;

  MPI_Comm comm(GroupKind group, Stream stream) const;
  // Every (group, stream) communicator, in the same order on every rank (the cuda backend's NCCL
  // communicators are made from them, nccl_groups.hpp).
  const std::map<std::pair<GroupKind, Stream>, MPI_Comm>& comms() const { return m_comms; }
  // The world rank holding this rank's place in pipeline stage `stage`.
  int stage_peer(int64_t stage) const;

 private:
  const RankLayout& m_layout;
  int m_rank;
  std::map<std::pair<GroupKind, Stream>, MPI_Comm> m_comms;
};

}  // namespace simrun::exec
