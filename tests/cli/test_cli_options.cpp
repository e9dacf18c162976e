// The simrun command's options, walked in-process: every subcommand and flag says what it is, and
// the libraries' field names map to the flags the user typed (cli/flag_names.hpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "command.hpp"
#include "doc_section.hpp"
#include "flag_names.hpp"

using namespace simrun;
using namespace simrun::cli;

TEST_CASE("every subcommand and every option has help text", "[cli][help]") {
  CLI::App app{"simrun"};
  const std::vector<Command> commands = add_commands(app, CliEnv{SIMRUN_DATA_DIR, {}, {}});
  std::vector<std::string> names;
  size_t options = 0;
  for (const CLI::Option* o : app.get_options()) {
    INFO("simrun " << o->get_name());
    CHECK_FALSE(o->get_description().empty());
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
    INFO("simrun " << sub->get_name());
    CHECK_FALSE(sub->get_description().empty());
    for (const CLI::Option* o : sub->get_options()) {
      ++options;
      INFO("option " << o->get_name());
      CHECK_FALSE(o->get_description().empty());
    }
  }
  CHECK(commands.size() == names.size());
  for (const char* name :
       {"simulate", "estimate", "collective", "topology", "textbook", "accuracy", "plan", "validate"})
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  CHECK(options > 60);
}

TEST_CASE("an option without help text is found", "[cli][help]") {
  CLI::App app{"probe"};
  std::string value;
  app.add_option("--undocumented", value);
  bool empty_found = false;
  for (const CLI::Option* o : app.get_options()) empty_found |= o->get_description().empty();
  CHECK(empty_found);
}

TEST_CASE("library fields map to the flags that set them", "[cli][errors]") {
  CHECK(flag_of_scenario_field("layout.tp") == "--tp");
  CHECK(flag_of_scenario_field("cluster.num_gpus") == "--gpus");
  CHECK_FALSE(flag_of_scenario_field("layout"));
  CHECK(flag_of_option_field("step", "stragglers[3].rank") == "--straggler");
  CHECK(flag_of_option_field("step", "slow_links[0].bandwidth_fraction") == "--slow-link");
  CHECK(flag_of_option_field("sweep", "factor") == "-f");
  CHECK(flag_of_option_field("collective", "channels") == "--channels");
  CHECK_FALSE(flag_of_option_field("step", "stragglers_total"));
  CHECK_FALSE(flag_of_option_field("t.json", "factor"));

  // An overridden field is the flag's; the same field from the file stays the file's.
  const InputError tp("t.json", "layout.tp", "tp 3 does not divide the model's 64 attention heads");
  CHECK(std::string(as_command_line_error(tp, {"layout.tp"}).what()) ==
        "command line: --tp: tp 3 does not divide the model's 64 attention heads");
  CHECK(std::string(as_command_line_error(tp, {"layout.pp"}).what()) ==
        "t.json: layout.tp: tp 3 does not divide the model's 64 attention heads");
  CHECK(std::string(
            as_command_line_error(InputError("step", "stragglers[0].rank", "rank 16 is outside")).what()) ==
        "command line: --straggler: rank 16 is outside");
  CHECK(std::string(as_command_line_error(InputError(kOverridesSource, "layout", "tp*pp*dp*cp")).what()) ==
        "command line: layout: tp*pp*dp*cp");
  CHECK(
      std::string(as_command_line_error(InputError("t.json", "model", "missing (a catalog name)")).what()) ==
      "t.json: model: missing (a catalog name, or --model)");
}

TEST_CASE("every Megatron argument is a flag of the commands that take a scenario", "[cli][megatron]") {
  CLI::App app{"simrun"};
  const std::vector<Command> commands = add_commands(app, CliEnv{SIMRUN_DATA_DIR, {}, {}});
  for (const char* command : {"estimate", "simulate"}) {
    const CLI::App* sub = app.get_subcommand(command);
    for (const MegatronArgument& m : megatron_arguments()) {
      CAPTURE(command, m.name);
      CHECK(sub->get_option_no_throw(std::string(m.name)) != nullptr);
      if (m.name != m.flag && !m.flag.empty())
        CHECK(sub->get_option_no_throw(std::string(m.flag)) != nullptr);
    }
  }
}

TEST_CASE("docs/flags.md holds the Megatron table as cli/flag_names.cpp makes it", "[cli][megatron][docs]") {
  test::check_doc_section(std::filesystem::path(SIMRUN_SOURCE_DIR) / "docs" / "flags.md", "megatron-table",
                          megatron_arguments_markdown());
}
