// An nccl-tests-style sweep (`simrun collective`, bench/): one collective over every GPU of a
// cluster at sizes min, min·f, ... max, each simulated to completion, reported with the
// nccl-tests columns (size, count, type, redop, root, time, algbw, busbw) plus algo/proto.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/collectives/collective_harness.hpp"
#include "simrun/sim/collectives/collectives.hpp"

namespace simrun {

struct SweepOptions {
  CollectiveOp op = CollectiveOp::all_reduce;
  double min_bytes = 8;          // smallest size in bytes, e.g. 8 (nccl-tests -b)
  double max_bytes = 128 << 20;  // largest size in bytes, e.g. 128 MiB (nccl-tests -e)
  double factor = 2;             // size multiplier between rows, > 1 (nccl-tests -f)
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  int64_t root = 0;
  SimulationOptions simulation;

  // The request of one size of the sweep.
  CollectiveRequest request(double bytes) const;
  // The root as nccl-tests reports it: broadcast's and reduce's, -1 for the ops without one.
  int64_t reported_root() const {
    return op == CollectiveOp::broadcast || op == CollectiveOp::reduce ? root : -1;
  }
};

struct SweepRow {
  double bytes = 0;   // nccl-tests size column
  int64_t count = 0;  // elements (per rank for all_gather/reduce_scatter/all_to_all)
  std::string type;   // "float"
  std::string redop;  // "sum" or "none"
  int64_t root = -1;
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;
};

struct SweepStats {
  uint64_t events = 0;
  uint64_t flows = 0;
  uint64_t settles = 0;
  double wall_s = 0;   // simulation only (graph built before)
  double build_s = 0;  // cluster graph construction
};

// Sizes as nccl-tests steps them (min·f^k up to max), rounded to the element size (×n for the
// per-rank ops). Throws InputError("sweep", "min_bytes"/"max_bytes"/"factor", why) on bad ranges.
std::vector<double> sweep_sizes(const SweepOptions& options, int64_t ranks);

std::vector<SweepRow> run_collective_sweep(std::shared_ptr<const ClusterGraph> graph,
                                           const SweepOptions& options, SweepStats* stats = nullptr);

// nccl-tests text table (header lines start with '#').
void print_sweep_table(std::ostream& out, const SweepOptions& options, int64_t ranks,
                       const std::vector<SweepRow>& rows);
// {"rows":[{"bytes","count","type","op","algo","proto","time_us","algbw_GBps","busbw_GBps"}]}
void print_sweep_json(std::ostream& out, const SweepOptions& options, const std::vector<SweepRow>& rows);

}  // namespace simrun
