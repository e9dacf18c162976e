// Shared helpers of the workload/step-simulation tests: catalogs and scenarios from JSON text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simrun/sim/scenario_parser.hpp"

namespace simrun::test {

inline const Catalogs& catalogs() {
  static const Catalogs c = load_catalogs(SIMRUN_DATA_DIR);
  return c;
}

inline Scenario parse_scenario_text(const std::string& text) {
  return parse_scenario(nlohmann::json::parse(text), "t.json", catalogs(), ".");
}

inline GpuSpec gpu(const std::string& id) { return catalogs().hardware.gpu(id, "t.json", "cluster.gpu"); }

}  // namespace simrun::test
