// `simrun plan` under mpirun (docs/planner.md, "Scaling out"): every rank searches its share of
// the shapes (PlanControl::rank/ranks), rank 0 gathers the partials, merges them, event-simulates
// the best and prints; the other ranks print nothing. One process is rank 0 of 1.
//
// Built with MPI (SIMRUN_HAVE_MPI), plan_mpi.cpp does the split and the gather; without it, a
// command started by mpirun plans on rank 0 alone and the other ranks exit at once (plan_ranks.cpp).
#pragma once

#include <optional>
#include <string>

#include "simrun/sim/planner/planner.hpp"

namespace simrun::cli {

// Where this process stands in an mpirun job, as mpirun's environment says (Open MPI's
// OMPI_COMM_WORLD_*, else the PMI_SIZE and PMI_RANK that MPICH's Hydra sets): read without
// any MPI call, so that a plain `simrun plan` never starts MPI. Outside mpirun: rank 0 of 1.
struct MpiLaunch {
  bool by_mpirun = false;
  int rank = 0;
  int ranks = 1;
  int ranks_on_node = 1;  // of them on this machine, which share its cores
};
MpiLaunch mpi_launch();

// Under mpirun (built with MPI): every rank says whether its input was refused (`refusal`, its
// error line, or empty). On rank 0 the result is the first refusal of any rank ("rank N: " before
// another rank's); on the others it is not empty when any rank refused; empty: none did. MPI is
// initialised for the plan to come, and finalised again where a rank refused. Without MPI, or
// outside mpirun: `refusal` itself.
std::string agree_on_input(const MpiLaunch& launch, const std::string& refusal);

// plan() across the launch's ranks: the result on rank 0, nullopt on the others. control.threads
// are each rank's search threads; rank 0 event-simulates the best with those of every rank on its
// node (they are done by then). Under mpirun the search shows no progress line (each rank sees only
// its share); rank 0 shows the event phase's.
std::optional<PlanResult> plan_on_ranks(const MpiLaunch& launch, const PlanRequest& request,
                                        const Catalogs& catalogs, const PlanControl& control);

}  // namespace simrun::cli
