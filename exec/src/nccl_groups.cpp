// NCCL communicators (nccl_groups.hpp).
#include "nccl_groups.hpp"

#include <set>
#include <stdexcept>
#include <string>

#include "mpi_world.hpp"
#include "simrun/common/error.hpp"

namespace simrun::exec {
namespace {

// An NCCL communicator over the members of `comm`, its ranks theirs in `comm`.
ncclComm_t nccl_over(MPI_Comm comm) {
  int size = 0, me = 0;
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  ncclUniqueId id{};
  if (me == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast");
  ncclComm_t nccl = nullptr;
  check_nccl(ncclCommInitRank(&nccl, size, id, me), "ncclCommInitRank");
  return nccl;
}

}  // namespace

void check_nccl(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(result));
}

NcclGroups::NcclGroups(const Workload& workload, const RankLayout& layout, const ProcessGroups& groups,
                       int rank) {
  for (const auto& [key, comm] : groups.comms()) m_comms[key] = nccl_over(comm);
  // Every (from, to) stage pair any program sends over, in one order on every rank: the splits
  // are collective over the world.
  std::set<std::pair<int64_t, int64_t>> directions;
  for (const StageProgram& p : workload.stages)
    for (const Task& t : p.tasks)
      if (t.kind == TaskKind::send) directions.insert({p.stage, t.peer_stage});
  const RankCoord me = layout.coord_of(rank);
  for (const auto& [from, to] : directions) {
    // The pair: a rank of stage `from` (the color: its world rank) and its peer of stage `to`.
    int color = MPI_UNDEFINED, key = 0;
    if (me.pp == from) color = rank;
    if (me.pp == to) {
      RankCoord sender = me;
      sender.pp = from;
      color = static_cast<int>(layout.rank_of(sender));
      key = 1;
    }
    MPI_Comm pair = MPI_COMM_NULL;
    check(MPI_Comm_split(MPI_COMM_WORLD, color, key, &pair), "MPI_Comm_split");
    if (pair == MPI_COMM_NULL) continue;
    m_pipeline[{me.pp == from, me.pp == from ? to : from}] = nccl_over(pair);
    MPI_Comm_free(&pair);
  }
}

NcclGroups::~NcclGroups() {
  for (auto& [key, comm] : m_comms) ncclCommDestroy(comm);
  for (auto& [key, comm] : m_pipeline) ncclCommDestroy(comm);
}

ncclComm_t NcclGroups::comm(GroupKind group, Stream stream) const {
  const auto it = m_comms.find({group, stream});
  SIMRUN_ASSERT(it != m_comms.end(), "a collective on a group and stream that has no NCCL communicator");
  return it->second;
}

ncclComm_t NcclGroups::pipeline(bool send, int64_t peer_stage) const {
  const auto it = m_pipeline.find({send, peer_stage});
  SIMRUN_ASSERT(it != m_pipeline.end(), "pipeline traffic with a stage that has no NCCL communicator");
  return it->second;
}

}  // namespace simrun::exec
