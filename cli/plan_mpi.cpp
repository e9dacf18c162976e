// `simrun plan` split across the ranks of an mpirun job (plan_ranks.hpp); built with MPI only.
//
// Each rank searches every ranks-th shape (plan_search), sends its partial as JSON text to rank 0
// (MPI_Gather of the lengths, MPI_Gatherv of the texts; to_json keeps every field exact), and
// rank 0 merges them (merge_partials: the order does not matter) and finishes alone: the top_k
// event simulations are a few seconds against the search's minutes, and splitting them would cost
// a second exchange for little.
#include <mpi.h>

#include <chrono>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "plan_ranks.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun::cli {
namespace {

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string(call) + " failed");
}

// Every rank's text, on rank 0 (empty elsewhere).
std::vector<std::string> gather_on_rank0(const std::string& text, int rank, int ranks) {
  if (text.size() > size_t(std::numeric_limits<int>::max()))
    throw std::runtime_error("a rank's partial plan is over 2 GiB of text");
  int length = int(text.size());
  std::vector<int> lengths(rank == 0 ? size_t(ranks) : 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> offsets(lengths.size());
  long total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = int(total);
    total += lengths[r];
  }
  if (total > std::numeric_limits<int>::max())
    throw std::runtime_error("the partial plans are over 2 GiB of text");
  std::string all(size_t(total), '\0');
  check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> texts;
  for (size_t r = 0; r < lengths.size(); ++r)
    texts.push_back(all.substr(size_t(offsets[r]), size_t(lengths[r])));
  return texts;
}

}  // namespace

std::string agree_on_input(const MpiLaunch& launch, const std::string& refusal) {
  if (!launch.by_mpirun) return refusal;
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) check(MPI_Init(nullptr, nullptr), "MPI_Init");
  int rank = 0, ranks = 1;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
  const std::vector<std::string> all = gather_on_rank0(refusal, rank, ranks);
  std::string first;
  for (size_t r = 0; r < all.size() && first.empty(); ++r)
    if (!all[r].empty()) first = r == 0 ? all[r] : "rank " + std::to_string(r) + ": " + all[r];
  // Every rank learns whether any refused (rank 0 alone prints the line).
  int refused = first.empty() ? 0 : 1;
  check(MPI_Bcast(&refused, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (refused) {
    MPI_Finalize();
    if (first.empty()) first = refusal.empty() ? "another rank refused its input" : refusal;
  }
  return first;
}

std::optional<PlanResult> plan_on_ranks(const MpiLaunch& launch, const PlanRequest& request,
                                        const Catalogs& catalogs, const PlanControl& control) {
  if (!launch.by_mpirun) return plan(request, catalogs, control);  // no MPI at all
  const auto start = std::chrono::steady_clock::now();
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) check(MPI_Init(nullptr, nullptr), "MPI_Init");
  PlanControl search = control;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &search.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &search.ranks), "MPI_Comm_size");
  search.progress = nullptr;
  std::vector<std::string> texts;
  try {
    texts =
        gather_on_rank0(to_json(plan_search(request, catalogs, search)).dump(), search.rank, search.ranks);
  } catch (const std::exception& e) {
    // The other ranks wait in the gather: end the job rather than leave them hanging.
    std::cerr << "simrun plan: rank " << search.rank << ": " << printable(e.what(), kErrorLineMaxBytes)
              << "\n";
    MPI_Abort(MPI_COMM_WORLD, dynamic_cast<const InputError*>(&e) ? 2 : 1);
  }
  MPI_Finalize();
  if (search.rank != 0) return std::nullopt;

  std::vector<PlanPartial> partials;
  for (const std::string& text : texts) partials.push_back(partial_from_json(nlohmann::json::parse(text)));
  PlanControl finish = control;
  finish.threads = control.threads * launch.ranks_on_node;
  PlanResult result = plan_finish(request, catalogs, merge_partials(request, std::move(partials)), finish);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace simrun::cli
