// Where a process stands in an mpirun job, and `simrun plan` on one process (plan_ranks.hpp).
#include "plan_ranks.hpp"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <string>

namespace simrun::cli {
namespace {

// The first of the variables that is set to a whole number ≥ 0, or `otherwise`.
int env_int(std::initializer_list<const char*> names, int otherwise) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (!value || !*value) continue;
    char* end = nullptr;
    const long v = std::strtol(value, &end, 10);
    if (*end == '\0' && v >= 0 && v < (1L << 30)) return int(v);
  }
  return otherwise;
}

}  // namespace

MpiLaunch mpi_launch() {
  MpiLaunch launch;
  const int ranks = env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 0);
  if (ranks < 1) return launch;
  launch.by_mpirun = true;
  launch.ranks = ranks;
  launch.rank = env_int({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0);
  if (launch.rank >= launch.ranks) launch.rank = 0;
  launch.ranks_on_node = std::max(1, env_int({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 1));
  return launch;
}

#ifndef SIMRUN_HAVE_MPI
std::string agree_on_input(const MpiLaunch&, const std::string& refusal) { return refusal; }

std::optional<PlanResult> plan_on_ranks(const MpiLaunch& launch, const PlanRequest& request,
                                        const Catalogs& catalogs, const PlanControl& control) {
  if (launch.rank != 0) return std::nullopt;
  if (launch.ranks > 1)
    std::cerr << "simrun plan: built without MPI: rank 0 of " << launch.ranks
              << " searches the whole space alone (docs/planner.md, \"Scaling out\")\n";
  return plan(request, catalogs, control);
}
#endif

}  // namespace simrun::cli
