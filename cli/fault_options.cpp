// The slow-hardware flags (see command.hpp): --straggler and --straggler-node, which both
// fidelities model, and --slow-link, which only the event simulation does.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/typed_numbers.hpp"

namespace simrun::cli {
namespace {

// "A:B" with A an integer and B a number; `flag` and `example` name it in errors, with `given`
// (the argument as the user wrote it, when A:B is part of it).
std::pair<int64_t, double> parse_pair(const std::string& text, const char* flag, const char* example,
                                      const std::string& given = {}) {
  const auto colon = text.find(':');
  const std::string why =
      std::string("expected ") + example + ", got " + quoted_input(given.empty() ? text : given);
  if (colon == std::string::npos) throw InputError("command line", flag, why);
  try {
    size_t used = 0;
    const int64_t a = std::stoll(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("first");
    const std::string second = text.substr(colon + 1);
    const double b = leading_decimal(second, used);
    if (used == 0 || used != second.size()) throw std::invalid_argument("second");
    return {a, b};
  } catch (const std::exception&) {
    throw InputError("command line", flag, why);
  }
}

double checked_slowdown(double slowdown, const std::string& text, const char* flag) {
  if (!(slowdown >= 1.0 && slowdown <= 100.0))
    throw InputError("command line", flag,
                     "slowdown must be in [1, 100], got " + printable(text.substr(text.find(':') + 1)));
  return slowdown;
}

// RANK:FRACTION[:LINK], LINK nic (default) or scale_up (scale-up also read).
SlowLink parse_slow_link(const std::string& text) {
  const char* example = "RANK:FRACTION[:nic|scale_up], e.g. 12:0.25 or 12:0.5:scale_up";
  std::string pair = text;
  SlowLink link;
  const auto first = text.find(':');
  if (const auto second = first == std::string::npos ? first : text.find(':', first + 1);
      second != std::string::npos) {
    const std::string kind = text.substr(second + 1);
    if (kind == "scale_up" || kind == "scale-up") {
      link.link = LinkClass::scale_up;
    } else if (kind != "nic") {
      throw InputError(
          "command line", "--slow-link",
          "link must be nic or scale_up, got " + quoted_input(kind) + " (expected " + example + ")");
    }
    pair = text.substr(0, second);
  }
  const auto [rank, fraction] = parse_pair(pair, "--slow-link", example, text);
  // As --straggler's slowdown stops at 100x: a link at under 1% is a dead link, not a slow one.
  if (!(fraction >= 0.01 && fraction <= 1.0))
    throw InputError("command line", "--slow-link",
                     "fraction must be in [0.01, 1], got " + pair.substr(pair.find(':') + 1));
  link.rank = rank;
  link.bandwidth_fraction = fraction;
  return link;
}

}  // namespace

void add_fault_options(CLI::App& cmd, FaultArgs& args, bool event_simulation) {
  const std::string full = event_simulation ? " (implies --full; repeatable)" : " (repeatable)";
  cmd.add_option("--straggler", args.stragglers,
                 "RANK:SLOWDOWN, a GPU whose kernels run SLOWDOWN times slower" + full);
  cmd.add_option("--straggler-node", args.straggler_nodes,
                 "NODE:SLOWDOWN, every GPU of a node runs SLOWDOWN times slower" + full);
  cmd.add_option("--slow-link", args.slow_links,
                 "RANK:FRACTION[:nic|scale_up], that GPU's NIC (default) or scale-up links (NVLink, "
                 "Infinity Fabric) run at FRACTION of their bandwidth" +
                     full);
}

std::vector<Straggler> stragglers_of(const FaultArgs& args, const Scenario& scenario) {
  // Each rank once: a rank given twice by --straggler (or a node twice) is refused; a rank that
  // --straggler names on a --straggler-node runs at the slower of the two.
  std::map<int64_t, double> slowdown_of;
  std::map<int64_t, std::string> given_as;
  for (const std::string& s : args.stragglers) {
    const auto [rank, slowdown] =
        parse_pair(s, "--straggler", "RANK:SLOWDOWN, e.g. 17:1.3 (rank 17 runs its kernels 1.3x slower)");
    if (const auto earlier = given_as.find(rank); earlier != given_as.end())
      throw InputError("command line", "--straggler",
                       "rank " + std::to_string(rank) + " is given twice (" + quoted_input(earlier->second) +
                           " and " + quoted_input(s) + "): give each rank once");
    given_as[rank] = s;
    slowdown_of[rank] = checked_slowdown(slowdown, s, "--straggler");
  }
  const int64_t gpn = scenario.cluster.gpus_per_node;
  std::map<int64_t, std::string> nodes;
  for (const std::string& s : args.straggler_nodes) {
    const auto [node, slowdown] = parse_pair(s, "--straggler-node", "NODE:SLOWDOWN, e.g. 3:1.2");
    if (node < 0 || node >= scenario.cluster.num_nodes())
      throw InputError("command line", "--straggler-node",
                       "node " + std::to_string(node) + " is outside the cluster (0.." +
                           std::to_string(scenario.cluster.num_nodes() - 1) + ")");
    if (const auto earlier = nodes.find(node); earlier != nodes.end())
      throw InputError("command line", "--straggler-node",
                       "node " + std::to_string(node) + " is given twice (" + quoted_input(earlier->second) +
                           " and " + quoted_input(s) + "): give each node once");
    nodes[node] = s;
    checked_slowdown(slowdown, s, "--straggler-node");
    for (int64_t g = 0; g < gpn; ++g) {
      double& at = slowdown_of[node * gpn + g];
      at = std::max(at, slowdown);
    }
  }
  std::vector<Straggler> out;
  for (const auto& [rank, slowdown] : slowdown_of) out.push_back({rank, slowdown});
  return out;
}

std::vector<SlowLink> slow_links_of(const FaultArgs& args) {
  std::vector<SlowLink> out;
  for (const std::string& s : args.slow_links) out.push_back(parse_slow_link(s));
  return out;
}

}  // namespace simrun::cli
