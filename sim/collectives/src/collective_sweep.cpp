// nccl-tests-style sweep over message sizes, and its text/JSON output (ecosystem.md §2.3).
#include "simrun/sim/collectives/collective_sweep.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "simrun/common/error.hpp"

namespace simrun {

CollectiveRequest SweepOptions::request(double bytes) const {
  CollectiveRequest req;
  req.op = op;
  req.bytes = bytes;
  req.root = root;
  req.algorithm = algorithm;
  req.protocol = protocol;
  return req;
}

namespace {

constexpr double kTypeBytes = 4;  // nccl-tests default type: float

bool per_rank_count(CollectiveOp op) {
  return op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter ||
         op == CollectiveOp::all_to_all;
}

// nccl-tests getFloatStr: "%*.2f", then "%*.1f", "%*.0f", then exponent, whichever fits.
std::string float_str(double v, int width) {
  char buf[64];
  for (int prec = 2; prec >= 0; --prec) {
    std::snprintf(buf, sizeof buf, "%*.*f", width, prec, v);
    if (int(std::string(buf).size()) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, v);
  return buf;
}

}  // namespace

std::vector<double> sweep_sizes(const SweepOptions& o, int64_t ranks) {
  if (!(o.min_bytes >= 1) || o.min_bytes > kMaxCollectiveBytes)
    throw InputError("sweep", "min_bytes", "minimum size must be between 1 byte and 2^50 bytes");
  if (!(o.max_bytes >= 1) || o.max_bytes > kMaxCollectiveBytes)
    throw InputError("sweep", "max_bytes", "maximum size must be between 1 byte and 2^50 bytes");
  if (o.max_bytes < o.min_bytes)
    throw InputError("sweep", "max_bytes", "maximum size is below the minimum size");
  if (!(o.factor > 1) || o.factor > 1024)
    throw InputError("sweep", "factor", "step factor must be above 1 and at most 1024 (e.g. 2)");
  const double unit = kTypeBytes * (per_rank_count(o.op) ? double(ranks) : 1.0);
  std::vector<double> sizes;
  // Sizes that round to the same row are merged, so count the steps too: a factor a few ulps
  // above 1 (1.0000000000000002) would otherwise step from min_bytes to max_bytes for hours.
  int64_t steps = 0;
  for (double s = o.min_bytes; s <= o.max_bytes * (1 + 1e-12); s *= o.factor) {
    if (++steps > 1000000)
      throw InputError("sweep", "factor",
                       "step factor too close to 1: more than 1000000 steps from the minimum size to the "
                       "maximum (e.g. 2)");
    const double rounded = std::max(1.0, std::floor(s / unit)) * unit;
    if (sizes.empty() || rounded != sizes.back()) sizes.push_back(rounded);
    if (sizes.size() > 10000)
      throw InputError("sweep", "factor", "more than 10000 sizes (use a larger step)");
  }
  return sizes;
}

std::vector<SweepRow> run_collective_sweep(std::shared_ptr<const ClusterGraph> graph, const SweepOptions& o,
                                           SweepStats* stats) {
  const int64_t n = graph->num_gpus();
  const std::vector<double> sizes = sweep_sizes(o, n);
  const auto t0 = std::chrono::steady_clock::now();
  Simulation sim(graph, o.simulation);
  std::vector<SweepRow> rows;
  for (double bytes : sizes) {
    std::optional<CollectiveResult> result;
    sim.collectives().run(o.request(bytes), [&result](const CollectiveResult& r) { result = r; });
    sim.run();
    SIMRUN_ASSERT(result.has_value(), "collective did not complete");
    SweepRow row;
    row.bytes = bytes;
    row.count = int64_t(bytes / kTypeBytes / (per_rank_count(o.op) ? double(n) : 1.0));
    row.type = "float";
    const bool reduces = o.op == CollectiveOp::all_reduce || o.op == CollectiveOp::reduce_scatter ||
                         o.op == CollectiveOp::reduce;
    row.redop = reduces ? "sum" : "none";
    row.root = o.reported_root();
    row.time_us = result->seconds() * 1e6;
    row.algbw_GBps = result->algbw_bytes_per_s() / 1e9;
    row.busbw_GBps = result->busbw_bytes_per_s() / 1e9;
    row.algorithm = result->algorithm;
    row.protocol = result->protocol;
    row.channels = result->channels;
    rows.push_back(row);
  }
  if (stats) {
    stats->events = sim.engine().events_processed();
    stats->flows = sim.network().stats().flows_started;
    stats->settles = sim.network().stats().settles;
    stats->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return rows;
}

void print_sweep_table(std::ostream& out, const SweepOptions& o, int64_t ranks,
                       const std::vector<SweepRow>& rows) {
  char line[512];
  out << "# simrun collective: " << to_string(o.op) << " over " << ranks << " ranks (simulated)\n#\n";
  std::snprintf(line, sizeof line, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %-8s  %-6s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "algo", "proto");
  out << line;
  std::snprintf(line, sizeof line, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %-8s  %-6s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "");
  out << line;
  double sum_busbw = 0;
  for (const SweepRow& r : rows) {
    std::snprintf(line, sizeof line, "%12.0f  %12lld  %8s  %6s  %6lld  %7s  %6s  %6s  %-8s  %-6s\n", r.bytes,
                  static_cast<long long>(r.count), r.type.c_str(), r.redop.c_str(),
                  static_cast<long long>(r.root), float_str(r.time_us, 7).c_str(),
                  float_str(r.algbw_GBps, 6).c_str(), float_str(r.busbw_GBps, 6).c_str(),
                  to_string(r.algorithm), to_string(r.protocol));
    out << line;
    sum_busbw += r.busbw_GBps;
  }
  std::snprintf(line, sizeof line, "# %-20s : %g \n", "Avg bus bandwidth",
                rows.empty() ? 0.0 : sum_busbw / double(rows.size()));
  out << line << "#\n";
}

void print_sweep_json(std::ostream& out, const SweepOptions& o, const std::vector<SweepRow>& rows) {
  nlohmann::json doc;
  doc["rows"] = nlohmann::json::array();
  for (const SweepRow& r : rows) {
    doc["rows"].push_back({{"bytes", static_cast<int64_t>(r.bytes)},  // sizes are whole bytes (<= 2^50)
                           {"count", r.count},
                           {"type", r.type},
                           {"op", to_string(o.op)},
                           {"algo", to_string(r.algorithm)},
                           {"proto", to_string(r.protocol)},
                           {"time_us", r.time_us},
                           {"algbw_GBps", r.algbw_GBps},
                           {"busbw_GBps", r.busbw_GBps}});
  }
  out << doc.dump(2) << "\n";
}

}  // namespace simrun
