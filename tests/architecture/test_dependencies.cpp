// Dependencies point one way (DESIGN.md "Layout"): each area of sim/ includes only the headers of
// the areas below it, as sim/CMakeLists.txt links them; the workload describes and never times
// (no compute model, no collective tuner); no library includes the command line's headers.
// Read from the sources, so a stray include fails here with its file and line even where a
// transitive link would let it compile.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Include {
  std::string file, header;
  int line = 0;
};

// Every `#include "..."` under `dir` (recursively), with where it stands.
std::vector<Include> includes_under(const fs::path& dir) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::vector<Include> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu")) continue;
    std::ifstream in(entry.path());
    std::string text;
    for (int line = 1; std::getline(in, text); ++line) {
      std::smatch m;
      if (std::regex_search(text, m, kInclude)) out.push_back({entry.path().string(), m[1], line});
    }
  }
  return out;
}

// The area a header belongs to: "simrun/sim/<area>/x.hpp" → area; "" for others.
std::string sim_area(const std::string& header) {
  static const std::regex kSim(R"(^simrun/sim/([a-z_]+)/)");
  std::smatch m;
  return std::regex_search(header, m, kSim) ? std::string(m[1]) : std::string();
}

// Each area and the areas it may include (itself included): sim/CMakeLists.txt's links, closed
// transitively.
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> kAllowed = [] {
    const std::map<std::string, std::vector<std::string>> direct = {
        {"framework", {}},
        {"scenario", {"framework"}},  // the scenario names its framework profile
        {"engine", {}},
        {"network", {"engine"}},
        {"workload", {"scenario"}},
        {"report", {"scenario", "workload"}},  // the inputs it echoes include the framework options
        {"collectives", {"scenario", "network"}},
        {"cost", {"workload", "collectives"}},
        {"memory", {"report", "scenario"}},
        {"analytic", {"cost", "workload", "collectives", "memory", "report"}},
        {"event", {"analytic", "cost", "workload", "collectives", "network", "memory", "report"}},
    };
    std::map<std::string, std::set<std::string>> closed;
    for (const auto& [area, deps] : direct) {
      std::set<std::string>& reach = closed[area];
      std::vector<std::string> todo = {area};
      while (!todo.empty()) {
        const std::string a = todo.back();
        todo.pop_back();
        if (!reach.insert(a).second) continue;
        for (const std::string& d : direct.at(a)) todo.push_back(d);
      }
    }
    return closed;
  }();
  return kAllowed;
}

}  // namespace

TEST_CASE("each area of sim/ includes only the areas below it", "[architecture]") {
  const fs::path sim = fs::path(SIMRUN_SOURCE_DIR) / "sim";
  int checked = 0;
  for (const auto& [area, reach] : allowed()) {
    REQUIRE(fs::is_directory(sim / area));
    for (const Include& inc : includes_under(sim / area)) {
      const std::string to = sim_area(inc.header);
      if (to.empty()) continue;
      ++checked;
      INFO(inc.file << ":" << inc.line << " includes " << inc.header);
      CHECK(reach.count(to) == 1);
    }
  }
  CHECK(checked > 50);  // the walk saw the cross-area includes
}

TEST_CASE("the workload describes: its files include neither the compute model nor the tuner",
          "[architecture]") {
  const std::vector<Include> includes = includes_under(fs::path(SIMRUN_SOURCE_DIR) / "sim" / "workload");
  REQUIRE(includes.size() > 5);
  for (const Include& inc : includes) {
    INFO(inc.file << ":" << inc.line << " includes " << inc.header);
    CHECK(inc.header.find("compute_model") == std::string::npos);
    CHECK(inc.header.find("collective_tuner") == std::string::npos);
    CHECK(sim_area(inc.header) != "cost");
    CHECK(sim_area(inc.header) != "collectives");
  }
}

TEST_CASE("no library includes the command line's headers or CLI11", "[architecture]") {
  const std::set<std::string> cli_headers = [] {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(fs::path(SIMRUN_SOURCE_DIR) / "cli"))
      if (entry.path().extension() == ".hpp") names.insert(entry.path().filename().string());
    return names;
  }();
  REQUIRE(cli_headers.count("command.hpp") == 1);
  for (const char* dir : {"common", "models", "topologies", "sim", "validation"})
    for (const Include& inc : includes_under(fs::path(SIMRUN_SOURCE_DIR) / dir)) {
      INFO(inc.file << ":" << inc.line << " includes " << inc.header);
      CHECK(cli_headers.count(fs::path(inc.header).filename().string()) == 0);
      CHECK(inc.header.rfind("CLI/", 0) != 0);
    }
}
