// `simrun topology [SCENARIO.json] [--dot FILE|-] [--json|--csv]`: the cluster graph of a scenario (or
// of --gpu/--gpus/--fabric flags): element counts per kind and tier, bisection bandwidth, per-GPU
// injection bandwidth; Graphviz DOT for small clusters (`--dot -`: on stdout, the summary on
// stderr). JSON and CSV echo the cluster's inputs.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cluster_options.hpp"
#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/sim/report/inputs.hpp"

namespace simrun::cli {
namespace {

struct TopologyArgs {
  ClusterArgs cluster;
  std::string dot;
  OutputFormat format = OutputFormat::table;
};

std::string tier_name(size_t tier, size_t tiers) {
  if (tier == 0) return "leaf switches";
  if (tier == 1) return tiers == 2 ? "spine switches (top)" : "spine switches";
  return "core switches (tier " + std::to_string(tier + 1) + ")";
}

}  // namespace

Command add_topology_command(CLI::App& root, const CliEnv& env) {
  auto a = std::make_shared<TopologyArgs>();
  CLI::App* cmd =
      root.add_subcommand("topology", "Summarise the cluster graph of a scenario (counts, bisection, DOT)");
  cmd->add_option("scenario", a->cluster.scenario, "Scenario JSON file (or give --gpu/--gpus/--fabric)");
  add_cluster_options(*cmd, a->cluster);
  cmd->add_option("--dot", a->dot,
                  "Write the graph as Graphviz DOT to this file, or to stdout with `-` (the summary then "
                  "goes to stderr; small clusters)");
  CLI::Option* json = cmd->add_flag_callback(
      "--json", [a] { a->format = OutputFormat::json; }, "JSON summary instead of the table");
  CLI::Option* csv = cmd->add_flag_callback(
      "--csv", [a] { a->format = OutputFormat::csv; },
      "CSV instead of the table: a header (quantity,value), then one row per input (cluster.*) and per "
      "JSON key (bytes/s, full precision)");
  json->excludes(csv);
  return {cmd, [a, env] {
            const Catalogs catalogs = load_cli_catalogs(env, a->cluster.catalogs);
            const ClusterSpec cluster = resolve_cluster(a->cluster, catalogs);
            const auto graph = build_cluster_graph(cluster);
            // `--dot -` puts the graph on stdout and the summary on stderr, as `simulate --trace -`.
            const bool dot_to_stdout = a->dot == "-";
            std::ostream& out = dot_to_stdout ? std::cerr : std::cout;
            if (!a->dot.empty()) {
              constexpr size_t kMaxDotVertices = 2000;
              if (graph->vertices().size() > kMaxDotVertices)
                throw InputError("command line", "--dot",
                                 "the cluster has " + std::to_string(graph->vertices().size()) +
                                     " vertices; DOT output is for clusters up to " +
                                     std::to_string(kMaxDotVertices));
              if (dot_to_stdout) {
                graph->write_dot(std::cout, kMaxDotVertices);
              } else {
                std::ofstream f(a->dot);
                if (!f) throw InputError("command line", "--dot", "cannot write " + quoted_input(a->dot));
                graph->write_dot(f, kMaxDotVertices);
                f.flush();
                if (!f)
                  throw InputError("command line", "--dot",
                                   "could not write all of " + quoted_input(a->dot) +
                                       " (disk full, or not a regular file?)");
              }
            }
            const ClusterSummary s = graph->summary();
            if (a->format != OutputFormat::table) {
              nlohmann::json j = {{"gpus", s.gpus},
                                  {"nodes", s.nodes},
                                  {"scale_up_domains", s.scale_up_domains},
                                  {"gpus_per_scale_up_domain", graph->gpus_per_domain()},
                                  {"nvswitches", s.nvswitches},
                                  {"nics", s.nics},
                                  {"switches_per_tier", s.switches_per_tier},
                                  {"fabric_links", s.fabric_links},
                                  {"directed_links", s.directed_links},
                                  {"bisection_bytes_per_s", s.bisection_bytes_per_s},
                                  {"scale_up_bisection_bytes_per_s", s.scale_up_bisection_bytes_per_s},
                                  {"injection_scale_up_bytes_per_s", s.injection_scale_up_bytes_per_s},
                                  {"injection_scale_out_bytes_per_s", s.injection_scale_out_bytes_per_s}};
              const Fields inputs = cluster_input_fields(cluster);
              if (a->format == OutputFormat::json) {
                j["inputs"] = to_json(inputs);
                out << j.dump(2) << "\n";
                return 0;
              }
              // One row per input, then per key; the switch tiers as switches_tier1, switches_tier2, ...
              out << "quantity,value\n";
              for (const Field& f : inputs) out << f.key << "," << csv_cell(f.value) << "\n";
              for (const auto& [key, value] : j.items()) {
                if (!value.is_array()) {
                  out << key << "," << csv_cell(value) << "\n";
                  continue;
                }
                for (size_t t = 0; t < value.size(); ++t)
                  out << "switches_tier" << t + 1 << "," << csv_cell(value[t]) << "\n";
              }
              return 0;
            }
            auto row = [&out](const std::string& k, const std::string& v) {
              out << fmt::format("{:<34} {}\n", k, v);
            };
            auto gbps = [](double b) {
              return b >= 1e12 ? fmt::format("{:.1f} TB/s", b / 1e12) : fmt::format("{:.1f} GB/s", b / 1e9);
            };
            out << "# cluster: " << describe_cluster(*graph) << "\n";
            row("GPUs", std::to_string(s.gpus));
            row("nodes", std::to_string(s.nodes));
            const char* kind = cluster.gpu.scale_up_kind == ScaleUpKind::nvswitch ? "NVSwitch"
                               : cluster.gpu.scale_up_kind == ScaleUpKind::mesh   ? "full mesh"
                               : cluster.gpu.scale_up_kind == ScaleUpKind::bridge ? "bridge pairs + PCIe"
                                                                                  : "PCIe";
            row("scale-up domains", std::to_string(s.scale_up_domains) + " x " +
                                        std::to_string(graph->gpus_per_domain()) + " GPUs (" + kind + ")");
            if (s.nvswitches > 0)
              row("NVSwitch vertices", std::to_string(s.nvswitches) + " (one per domain)");
            row("NICs", std::to_string(s.nics));
            for (size_t t = 0; t < s.switches_per_tier.size(); ++t)
              row(tier_name(t, s.switches_per_tier.size()), std::to_string(s.switches_per_tier[t]));
            row("switch-to-switch cables (bundles)", std::to_string(s.fabric_links));
            row("directed links", std::to_string(s.directed_links));
            if (s.scale_up_domains > 1)
              row("bisection bandwidth (fabric)", gbps(s.bisection_bytes_per_s) + " per direction");
            row("bisection of one scale-up domain",
                gbps(s.scale_up_bisection_bytes_per_s) + " per direction");
            row("per-GPU injection, scale-up", gbps(s.injection_scale_up_bytes_per_s) + " per direction");
            if (s.scale_up_domains > 1)
              row("per-GPU injection, scale-out", gbps(s.injection_scale_out_bytes_per_s) + " per direction");
            if (!a->dot.empty() && !dot_to_stdout) row("DOT written to", quoted_input(a->dot));
            return 0;
          }};
}

}  // namespace simrun::cli
