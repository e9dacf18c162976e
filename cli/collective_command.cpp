// `simrun collective [SCENARIO.json] --op all_reduce --gpu h100-sxm --gpus 16 [--fabric ib-ndr]
//  [-b 8 -e 8G -f 2] [--algo ring] [--proto simple] [--json|--csv] [--stats] [--no-timing]`: an
// nccl-tests-style sweep of one collective over every GPU of the cluster, simulated on the
// flow-level network. JSON and CSV echo the inputs (the cluster and the sweep's options).
#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cluster_options.hpp"
#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/common/typed_numbers.hpp"
#include "simrun/sim/collectives/collective_sweep.hpp"
#include "simrun/sim/report/inputs.hpp"

namespace simrun::cli {
namespace {

struct CollectiveArgs {
  ClusterArgs cluster;
  std::string op = "all_reduce";
  std::string min_bytes = "8", max_bytes = "128M";
  double factor = 2;
  std::string algo, proto;
  int64_t root = 0;
  std::string decomposition = "pipelined";
  std::string scenario_flag;  // --scenario FILE, the positional's older spelling
  OutputFormat format = OutputFormat::table;
  bool stats = false;
  Timing timing = Timing::shown;
};

// The sweep's inputs: the cluster, then the options that shape every row (algorithm and
// protocol "tuner" when NCCL's tuner chooses them per size, as --algo's help says).
Fields sweep_input_fields(const ClusterSpec& cluster, const SweepOptions& o) {
  Fields f = cluster_input_fields(cluster);
  const Fields sweep = {
      {"sweep.op", to_string(o.op)},
      {"sweep.min_bytes", static_cast<int64_t>(o.min_bytes)},
      {"sweep.max_bytes", static_cast<int64_t>(o.max_bytes)},
      {"sweep.step_factor", o.factor},
      {"sweep.algo", o.algorithm ? to_string(*o.algorithm) : "tuner"},
      {"sweep.proto", o.protocol ? to_string(*o.protocol) : "tuner"},
      {"sweep.root", o.reported_root()},
      {"sweep.decomposition",
       o.simulation.collectives.decomposition == Decomposition::per_step ? "steps" : "pipelined"},
  };
  f.insert(f.end(), sweep.begin(), sweep.end());
  return f;
}

// One row per size, led by the inputs, then the JSON report's columns in SI units (seconds,
// bytes per second) at full precision.
void print_sweep_csv(std::ostream& out, const Fields& inputs, const SweepOptions& o,
                     const std::vector<SweepRow>& rows) {
  std::vector<Fields> table;
  for (const SweepRow& r : rows) {
    Fields row = inputs;
    const Fields columns = {{"bytes", static_cast<int64_t>(r.bytes)},
                            {"count", r.count},
                            {"type", r.type},
                            {"op", to_string(o.op)},
                            {"algo", to_string(r.algorithm)},
                            {"proto", to_string(r.protocol)},
                            {"time_s", r.time_us * 1e-6},
                            {"algbw_bytes_per_s", r.algbw_GBps * 1e9},
                            {"busbw_bytes_per_s", r.busbw_GBps * 1e9}};
    row.insert(row.end(), columns.begin(), columns.end());
    table.push_back(std::move(row));
  }
  write_csv(table, out);
}

// nccl-tests sizes: an integer with an optional K/M/G/T suffix (powers of 1024), e.g. 8, 64K, 8G.
double parse_size(const std::string& text, const char* flag) {
  const std::string bad = quoted_input(text) + " is not a size (e.g. 8, 64K, 128M, 8G)";
  if (text.empty()) throw InputError("command line", flag, bad);
  size_t used = 0;
  double v = leading_decimal(text, used);
  if (used == 0) throw InputError("command line", flag, bad);
  std::string suffix = text.substr(used);
  for (char& c : suffix) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (suffix == "B") suffix = "";
  if (suffix.size() >= 2 && suffix.back() == 'B') suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'I') suffix.pop_back();
  double scale = 1;
  if (suffix == "K")
    scale = 1024.0;
  else if (suffix == "M")
    scale = 1024.0 * 1024;
  else if (suffix == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty())
    throw InputError("command line", flag, bad);
  v *= scale;
  if (std::isfinite(v) && v != std::floor(v))
    throw InputError("command line", flag, "size '" + text + "' is not a whole number of bytes");
  if (!(v >= 1) || !std::isfinite(v))
    throw InputError("command line", flag, "size must be at least 1 byte (got '" + text + "')");
  if (v > kMaxCollectiveBytes)
    throw InputError("command line", flag,
                     "size '" + text + "' is beyond 2^50 bytes (1 PiB), the largest simulated");
  return std::floor(v);
}

}  // namespace

Command add_collective_command(CLI::App& root, const CliEnv& env) {
  auto a = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = root.add_subcommand(
      "collective", "Simulate one NCCL collective over the cluster at a sweep of sizes (nccl-tests columns)");
  cmd->add_option(
      "--op", a->op,
      "all_reduce (default), all_gather, reduce_scatter, broadcast, reduce, all_to_all or send_recv "
      "(nccl-tests' alltoall, sendrecv also read)");
  cmd->add_option("scenario", a->cluster.scenario,
                  "Scenario JSON file to take the cluster from (the cluster flags override it)");
  cmd->add_option("--scenario", a->scenario_flag, "Deprecated spelling of the positional SCENARIO")
      ->group("");
  add_cluster_options(*cmd, a->cluster);
  cmd->add_option("-b,--minbytes", a->min_bytes, "Smallest size, nccl-tests style (default 8)");
  cmd->add_option("-e,--maxbytes", a->max_bytes, "Largest size (default 128M)");
  cmd->add_option("-f,--stepfactor", a->factor, "Size multiplier between rows (default 2)");
  cmd->add_option("--algo", a->algo,
                  "NCCL_ALGO: Ring, Tree, NVLS, NVLSTree, PAT, or Hierarchical (default: tuner)");
  cmd->add_option("--proto", a->proto, "NCCL_PROTO: LL, LL128, Simple (default: tuner)");
  cmd->add_option("--root", a->root, "Root rank for broadcast/reduce (default 0)");
  cmd->add_option("--decomposition", a->decomposition,
                  "pipelined (default: one coupled flow per channel group) or steps (every algorithm step; "
                  "per_step also read)");
  CLI::Option* json = cmd->add_flag_callback(
      "--json", [a] { a->format = OutputFormat::json; }, "JSON rows instead of the table (contract keys)");
  CLI::Option* csv = cmd->add_flag_callback(
      "--csv", [a] { a->format = OutputFormat::csv; },
      "CSV instead of the table: a header, then one row per size led by the inputs (seconds, bytes/s, full "
      "precision)");
  json->excludes(csv);
  cmd->add_flag("--stats", a->stats, "Also print events processed, flows, wall time and events/s");
  add_no_timing_option(*cmd, a->timing);
  return {
      cmd, [a, env, cmd] {
        SweepOptions o;
        const auto op = parse_collective_op(a->op);
        if (!op)
          throw InputError(
              "command line", "--op",
              "unknown collective '" + a->op + "' (known: " + join_names(collective_op_names()) + ")");
        o.op = *op;
        if (!a->algo.empty()) {
          o.algorithm = parse_algorithm(a->algo);
          if (!o.algorithm)
            throw InputError(
                "command line", "--algo",
                "unknown algorithm '" + a->algo + "' (known: " + join_names(algorithm_names()) + ")");
        }
        if (!a->proto.empty()) {
          o.protocol = parse_protocol(a->proto);
          if (!o.protocol)
            throw InputError(
                "command line", "--proto",
                "unknown protocol '" + a->proto + "' (known: " + join_names(protocol_names()) + ")");
        }
        if (a->decomposition == "steps" || a->decomposition == "per_step" || a->decomposition == "per-step") {
          o.simulation.collectives.decomposition = Decomposition::per_step;
        } else if (a->decomposition != "pipelined") {
          throw InputError("command line", "--decomposition",
                           "unknown decomposition '" + a->decomposition + "' (known: pipelined, steps)");
        }
        if (!a->scenario_flag.empty()) {
          if (!a->cluster.scenario.empty() && a->cluster.scenario != a->scenario_flag)
            throw InputError("command line", "--scenario",
                             "given beside the scenario argument '" + a->cluster.scenario + "' (give one)");
          a->cluster.scenario = a->scenario_flag;
        }
        o.min_bytes = parse_size(a->min_bytes, "-b");
        o.max_bytes = parse_size(a->max_bytes, "-e");
        if (o.max_bytes < o.min_bytes) {
          // Blame the flag the user gave: -e when it was given, else -b above the default -e.
          const bool e_default = cmd->count("--maxbytes") == 0;
          throw InputError("command line", e_default ? "-b" : "-e",
                           "the smallest size (-b " + quoted_input(a->min_bytes) +
                               ") is above the largest (-e " + quoted_input(a->max_bytes) +
                               (e_default ? ", the default" : "") + "): give -e at least -b");
        }
        o.factor = a->factor;
        o.root = a->root;

        const Catalogs catalogs = load_cli_catalogs(env, a->cluster.catalogs);
        const ClusterSpec cluster = resolve_cluster(a->cluster, catalogs);
        const auto t0 = std::chrono::steady_clock::now();
        const auto graph = build_cluster_graph(cluster);
        const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (o.root < 0 || o.root >= graph->num_gpus())
          throw InputError("command line", "--root",
                           "root must be a rank 0.." + std::to_string(graph->num_gpus() - 1));
        // The sweep simulates every GPU's flows at every size; with --decomposition steps, every
        // step of every rank too (a ring has 2(n-1) steps: n^2 transfers), and an all-to-all
        // sends from every GPU to every other (n^2 flows: 1,024 GPUs at 25 sizes take 3 s here,
        // 2,048 would take 11 s and are refused at the default sizes). Bound the work so a huge
        // cluster is refused in a line rather than simulated for minutes in gigabytes.
        const std::vector<double> sizes = sweep_sizes(o, graph->num_gpus());
        {
          const bool per_step = o.simulation.collectives.decomposition == Decomposition::per_step;
          const bool all_pairs = o.op == CollectiveOp::all_to_all;
          const double n = double(graph->num_gpus());
          const double work = double(sizes.size()) * (per_step || all_pairs ? n * n : n);
          const double budget = per_step ? double(1 << 23) : all_pairs ? double(1 << 25) : double(1 << 22);
          if (work > budget)
            throw InputError("command line", "--gpus",
                             std::to_string(sizes.size()) + " sizes x " + std::to_string(graph->num_gpus()) +
                                 (per_step    ? " GPUs squared (--decomposition steps)"
                                  : all_pairs ? " GPUs squared (all_to_all: every pair of GPUs)"
                                              : " GPUs") +
                                 " is beyond the sweep's limit of " + std::to_string(int64_t(budget)) +
                                 " (use fewer GPUs, a narrower -b/-e range or a larger -f)");
        }
        // Validate every size up front (algorithm/protocol availability), so nothing is printed
        // before a bad-input error.
        {
          Simulation probe(graph, o.simulation);
          for (double bytes : sizes) probe.collectives().plan(o.request(bytes));
        }
        SweepStats stats;
        const auto rows = run_collective_sweep(graph, o, &stats);
        const Fields inputs = sweep_input_fields(cluster, o);
        const bool timed = a->timing == Timing::shown;
        if (a->format == OutputFormat::csv) {
          print_sweep_csv(std::cout, inputs, o, rows);
          return 0;
        }
        if (a->format == OutputFormat::json) {
          std::ostringstream body;
          print_sweep_json(body, o, rows);
          nlohmann::json doc = nlohmann::json::parse(body.str());
          doc["inputs"] = to_json(inputs);
          if (a->stats) {
            doc["stats"] = {
                {"events", stats.events}, {"flows", stats.flows}, {"rate_recomputations", stats.settles}};
            if (timed) {
              doc["stats"]["graph_build_s"] = build_s;
              doc["stats"]["wall_s"] = stats.wall_s;
              doc["stats"]["events_per_s"] = stats.wall_s > 0 ? double(stats.events) / stats.wall_s : 0.0;
            }
          }
          std::cout << doc.dump(2) << "\n";
          return 0;
        }
        std::cout << "# cluster: " << describe_cluster(*graph) << "\n";
        print_sweep_table(std::cout, o, graph->num_gpus(), rows);
        if (a->stats) {
          std::cout << "# stats: events " << stats.events << ", flows " << stats.flows
                    << ", rate recomputations " << stats.settles;
          if (timed)
            std::cout << ", graph build " << build_s << " s, simulation " << stats.wall_s << " s, "
                      << (stats.wall_s > 0 ? double(stats.events) / stats.wall_s : 0.0) << " events/s";
          std::cout << "\n";
        }
        return 0;
      }};
}

}  // namespace simrun::cli
