// The MPI job as validate sees it (mpi_world.hpp).
#include "mpi_world.hpp"

#include <stdexcept>
#include <string>

namespace simrun::exec {

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string(call) + " failed");
}

std::vector<double> all_gather(double x, const World& w) {
  std::vector<double> all(size_t(w.ranks));
  check(MPI_Allgather(&x, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather");
  return all;
}

std::vector<std::vector<double>> gather_on_rank0(const std::vector<double>& mine, const World& w) {
  int count = int(mine.size());
  std::vector<int> counts(size_t(w.ranks));
  check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> offsets(size_t(w.ranks), 0);
  for (size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<double> all(w.rank == 0 ? size_t(offsets.back() + counts.back()) : 0);
  check(MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::vector<double>> per_rank;
  if (w.rank == 0)
    for (size_t r = 0; r < counts.size(); ++r)
      per_rank.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  return per_rank;
}

}  // namespace simrun::exec
