// The explorer's state (gui/src/gui_state.hpp): edits re-evaluate at once, the worker refines, an
// invalid value says why without touching the document, a bad file is refused with one line.
#include <catch2/catch.hpp>
#include <fstream>

#include "cli_run.hpp"
#include "gui_state.hpp"
#include "simrun/common/error.hpp"

using namespace simrun;
using namespace simrun::gui;

TEST_CASE("gui state: an edit re-estimates within the call, the worker refines it", "[gui][state]") {
  GuiState state(load_catalogs(SIMRUN_DATA_DIR), SIMRUN_DATA_DIR);
  REQUIRE(state.load(std::string(SIMRUN_DATA_DIR) + "/examples/llama3-70b-h100.json"));
  REQUIRE(state.figures());
  const double before = state.figures()->estimate.step_time_s;
  nlohmann::json layout = state.get("layout");
  layout["tp"] = 4;
  layout.erase("dp");
  state.set("layout", layout);
  REQUIRE(state.figures());
  CHECK(state.figures()->estimate.step_time_s != before);  // no frame waited for this
  state.wait_for_worker(120);
  REQUIRE(state.figures()->event);
  CHECK(state.event() != nullptr);
  CHECK(state.dump()["event"]["step_time_s"].get<double>() > 0);
}

TEST_CASE("gui state: an invalid value says why and leaves the document as it was", "[gui][state]") {
  GuiState state(load_catalogs(SIMRUN_DATA_DIR), SIMRUN_DATA_DIR);
  REQUIRE(state.load(std::string(SIMRUN_DATA_DIR) + "/examples/llama3-70b-h100.json"));
  const nlohmann::json doc = state.doc();
  nlohmann::json layout = doc["layout"];
  layout["tp"] = 3;
  layout.erase("dp");
  const auto why = state.why_invalid("layout", layout);
  REQUIRE(why);
  CHECK_FALSE(why->empty());
  CHECK(state.doc() == doc);
  state.set_text("layout.tp", "3");  // set anyway: the error is shown, the figures go
  CHECK_FALSE(state.error().empty());
  CHECK_FALSE(state.figures());
}

TEST_CASE("gui state: a setting's text is a JSON value when it starts as one, else a string",
          "[gui][state]") {
  GuiState state(load_catalogs(SIMRUN_DATA_DIR), SIMRUN_DATA_DIR);
  REQUIRE(state.load(std::string(SIMRUN_DATA_DIR) + "/examples/llama3-70b-h100.json"));
  state.set_text("layout.tp", "4");
  CHECK(state.get("layout.tp") == 4);
  state.set_text("run.tokens", "1e12");
  CHECK(state.get("run.tokens") == 1e12);
  state.set_text("model", "llama3-8b");
  CHECK(state.get("model") == "llama3-8b");
  // A number it cannot hold is refused, named by the setting, not set as the string "1e999".
  CHECK_THROWS_WITH(state.set_text("layout.tp", "1e999"),
                    Catch::StartsWith("command line: --set layout.tp: 1e999 is out of range"));
  CHECK(state.get("layout.tp") == 4);
}

TEST_CASE("gui state: a file it cannot load is one line, and the shown scenario stays", "[gui][state]") {
  GuiState state(load_catalogs(SIMRUN_DATA_DIR), SIMRUN_DATA_DIR);
  const nlohmann::json doc = state.doc();
  const auto bad = simrun::test::write_file("bad.json", "{\"model\": \x01 not json");
  CHECK_FALSE(state.load(bad));
  CHECK(state.load_error().find('\n') == std::string::npos);
  CHECK(state.load_error().find('\x01') == std::string::npos);
  CHECK(state.doc() == doc);
  CHECK_FALSE(state.load("/nonexistent/scenario.json"));
  CHECK_FALSE(state.load(simrun::test::write_file("array.json", "[1, 2]")));  // JSON, not a scenario object
  CHECK(state.doc() == doc);
  // A field under a value that is not an object: one InputError, the document kept.
  REQUIRE(state.doc()["model"].is_string());
  CHECK_THROWS_AS(state.set("model.layers", 80), simrun::InputError);
  CHECK(state.doc() == doc);
}
