// The cuda backend's NCCL communicators (exec/, private), as nccl-tests makes them: the first
// member of a group calls ncclGetUniqueId and broadcasts the id over MPI, every member then calls
// ncclCommInitRank. One per process group and stream, from the MPI communicators of
// process_groups.hpp (so that a stream's collectives never have to match another's in order), and
// one per pipeline direction between two stages (sender first, receiver second), each used by one
// GPU stream only.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <map>
#include <utility>

#include "process_groups.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/workload/workload.hpp"

namespace simrun::exec {

// Which way a pipeline communicator carries this rank's messages.
enum class Direction : uint8_t { send, receive };

class NcclGroups {
 public:
  // Collective over MPI_COMM_WORLD: every rank calls it with the same workload.
  NcclGroups(const Workload& workload, const RankLayout& layout, const ProcessGroups& groups, int rank);
  ~NcclGroups();
  NcclGroups(const NcclGroups&) = delete;
  NcclGroups& operator=(const NcclGroups&) = delete;

  ncclComm_t comm(GroupKind group, Stream stream) const;
  // This rank's communicator for its pipeline traffic to (send) or from (receive) `peer_stage`;
  // the peer is rank 1 of a send's communicator and rank 0 of a receive's.
  ncclComm_t pipeline(Direction direction, int64_t peer_stage) const;

  // Throws std::runtime_error naming the first communicator's asynchronous error (a peer gone, a
  // network failure: ncclCommGetAsyncError), if any.
  void throw_async_error() const;
  // Aborts every communicator's operations in flight (ncclCommAbort), so that freeing memory
  // afterwards does not wait on an NCCL kernel whose peer is gone; the destructor then has
  // nothing left to destroy. For unwinding after an error.
  void abort();

 private:
  std::map<std::pair<GroupKind, Stream>, ncclComm_t> m_comms;
  std::map<std::pair<Direction, int64_t>, ncclComm_t> m_pipeline;
};

}  // namespace simrun::exec
