// NCCL communicators (nccl_groups.hpp).
#include "nccl_groups.hpp"

#include <set>
#include <stdexcept>
#include <string>

#include "cuda_check.hpp"
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
  if (me == 0) SIMRUN_NCCL_CHECK(ncclGetUniqueId(&id));
  check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast");
  ncclComm_t nccl = nullptr;
  SIMRUN_NCCL_CHECK(ncclCommInitRank(&nccl, size, id, me));
  return nccl;
}

}  // namespace

NcclGroups::NcclGroups(const Workload& workload, const RankLayout& layout, const ProcessGroups& groups,
                       int rank) {
  try {
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
      m_pipeline[{me.pp == from ? Direction::send : Direction::receive, me.pp == from ? to : from}] =
          nccl_over(pair);
      MPI_Comm_free(&pair);
    }
  } catch (...) {  // a member's init failed: the communicators made so far go with it
    abort();
    throw;
  }
}

void NcclGroups::throw_async_error() const {
  auto check_one = [](ncclComm_t comm) {
    ncclResult_t state = ncclSuccess;
    SIMRUN_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    SIMRUN_NCCL_CHECK(state);
  };
  for (const auto& [key, comm] : m_comms) check_one(comm);
  for (const auto& [key, comm] : m_pipeline) check_one(comm);
}

void NcclGroups::abort() {
  for (auto& [key, comm] : m_comms) ncclCommAbort(comm);
  for (auto& [key, comm] : m_pipeline) ncclCommAbort(comm);
  m_comms.clear();
  m_pipeline.clear();
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

ncclComm_t NcclGroups::pipeline(Direction direction, int64_t peer_stage) const {
  const auto it = m_pipeline.find({direction, peer_stage});
  SIMRUN_ASSERT(it != m_pipeline.end(), "pipeline traffic with a stage that has no NCCL communicator");
  return it->second;
}

}  // namespace simrun::exec
