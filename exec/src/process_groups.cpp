// Process groups (process_groups.hpp).
#include "process_groups.hpp"

#include <set>
#include <stdexcept>

#include "mpi_world.hpp"
#include "simrun/common/error.hpp"

namespace simrun::exec {

ProcessGroups::ProcessGroups(const Workload& workload, const RankLayout& layout, int rank)
    : m_layout(layout), m_rank(rank) {
  // Every (group, stream) any stage uses, in one order on every rank: the splits are collective.
  std::set<std::pair<GroupKind, Stream>> used;
  for (const StageProgram& p : workload.stages)
    for (const Task& t : p.tasks)
      if (t.kind == TaskKind::collective) used.insert({t.group, t.stream});
  for (const auto& [group, stream] : used) {
    MPI_Comm comm = MPI_COMM_NULL;
    const int color = static_cast<int>(layout.group_id(group, rank));
    const int key = static_cast<int>(layout.index_in_group(group, rank));
    check(MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm), "MPI_Comm_split");
    m_comms[{group, stream}] = comm;
  }
}

ProcessGroups::~ProcessGroups() {
  for (auto& [key, comm] : m_comms) MPI_Comm_free(&comm);
}

MPI_Comm ProcessGroups::comm(GroupKind group, Stream stream) const {
  const auto it = m_comms.find({group, stream});
  SIMRUN_ASSERT(it != m_comms.end(), "a collective on a group and stream that has no communicator");
  return it->second;
}

int ProcessGroups::stage_peer(int64_t stage) const {
  RankCoord c = m_layout.coord_of(m_rank);
  c.pp = stage;
  return static_cast<int>(m_layout.rank_of(c));
}

}  // namespace simrun::exec
