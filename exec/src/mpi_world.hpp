// The MPI job as validate sees it (exec/, private): this rank, the ranks, those on its machine,
// and the few collectives the driver needs beyond the step's own.
#pragma once

#include <mpi.h>

#include <vector>

namespace simrun::exec {

// Throws std::runtime_error naming `call` when an MPI call fails.
void check(int code, const char* call);

struct World {
  int rank = 0, ranks = 1, ranks_per_node = 1;
  MPI_Comm node = MPI_COMM_NULL;  // the ranks on this machine
};

// Every rank's value, on every rank.
std::vector<double> all_gather(double x, const World& w);
// Each rank's doubles, concatenated on rank 0 in rank order (empty elsewhere).
std::vector<std::vector<double>> gather_on_rank0(const std::vector<double>& mine, const World& w);

}  // namespace simrun::exec
