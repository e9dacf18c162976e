// The MPI job as validate sees it (exec/, private): this rank, the ranks, those on its machine,
// and the few collectives the driver needs beyond the step's own. MPI_COMM_WORLD returns its
// errors (MPI_ERRORS_RETURN, set by run_validate), and check() turns one into an exception that
// names the call and MPI's own words for it.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace simrun::exec {

// Throws std::runtime_error "CALL failed: MPI's error string" when `code` is not MPI_SUCCESS.
void check(int code, const char* call);

struct World {
  int rank = 0, ranks = 1, ranks_per_node = 1;
  MPI_Comm node = MPI_COMM_NULL;  // the ranks on this machine
};

// Every rank's value, on every rank.
std::vector<double> all_gather(double x, const World& w);
// The least (most) of every rank's value, on every rank.
double all_min(double x);
double all_max(double x);
// Each rank's doubles, concatenated on rank 0 in rank order (empty elsewhere); throws where the
// total passes MPI's int counts.
std::vector<std::vector<double>> gather_on_rank0(const std::vector<double>& mine, const World& w);
// Each rank's text, on rank 0 (empty elsewhere).
std::vector<std::string> gather_text_on_rank0(const std::string& mine, const World& w);

}  // namespace simrun::exec
