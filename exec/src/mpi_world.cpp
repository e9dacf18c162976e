// The MPI job as validate sees it (mpi_world.hpp).
#include "mpi_world.hpp"

#include <limits>
#include <stdexcept>

namespace simrun::exec {
namespace {

// Rank 0's concatenation of every rank's `mine` (MPI_Gather of the counts, then MPI_Gatherv).
template <class T>
std::vector<std::vector<T>> gather_vectors(const std::vector<T>& mine, MPI_Datatype type, const World& w) {
  if (mine.size() > size_t(std::numeric_limits<int>::max()))
    throw std::runtime_error("a rank's measurements pass MPI's int counts");
  int count = int(mine.size());
  std::vector<int> counts(size_t(w.ranks));
  check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> offsets(size_t(w.ranks), 0);
  long long total = w.rank == 0 ? counts[0] : 0;
  for (size_t r = 1; w.rank == 0 && r < counts.size(); ++r) {
    total += counts[r];
    if (total > std::numeric_limits<int>::max())
      throw std::runtime_error("the ranks' measurements together pass MPI's int counts");
    offsets[r] = offsets[r - 1] + counts[r - 1];
  }
  std::vector<T> all(static_cast<size_t>(total));
  check(MPI_Gatherv(mine.data(), count, type, all.data(), counts.data(), offsets.data(), type, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::vector<T>> per_rank;
  if (w.rank == 0)
    for (size_t r = 0; r < counts.size(); ++r)
      per_rank.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  return per_rank;
}

}  // namespace

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, size_t(length)));
}

std::vector<double> all_gather(double x, const World& w) {
  std::vector<double> all(size_t(w.ranks));
  check(MPI_Allgather(&x, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather");
  return all;
}

double all_min(double x) {
  double least = x;
  check(MPI_Allreduce(&x, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  return least;
}

double all_max(double x) {
  double most = x;
  check(MPI_Allreduce(&x, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return most;
}

std::vector<std::vector<double>> gather_on_rank0(const std::vector<double>& mine, const World& w) {
  return gather_vectors(mine, MPI_DOUBLE, w);
}

std::vector<std::string> gather_text_on_rank0(const std::string& mine, const World& w) {
  std::vector<std::string> texts;
  for (const std::vector<char>& t : gather_vectors(std::vector<char>(mine.begin(), mine.end()), MPI_CHAR, w))
    texts.emplace_back(t.begin(), t.end());
  return texts;
}

}  // namespace simrun::exec
