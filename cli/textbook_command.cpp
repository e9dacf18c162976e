// `simrun textbook [1|2|3|4|all] [SCENARIO.json]`: the seed chapter's four exercises with the
// chapter's own numbers and, beside each, simrun's refined figure and why they differ.
// Exercise 4's full-model line estimates examples/textbook/ex4-llama3-70b-1024-h100.json (or
// SCENARIO.json).
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/validation/textbook.hpp"

namespace simrun::cli {
namespace {

struct TextbookArgs {
  std::string exercise = "all";
  std::string scenario;
  std::string scenario_flag;          // --scenario FILE, the positional's older spelling
  std::vector<std::string> catalogs;  // --catalog DIR
};

bool is_exercise(const std::string& s) { return s == "all" || (s.size() == 1 && s[0] >= '1' && s[0] <= '4'); }

}  // namespace

Command add_textbook_command(CLI::App& root, const CliEnv& env) {
  auto args = std::make_shared<TextbookArgs>();
  CLI::App* cmd =
      root.add_subcommand("textbook", "The seed chapter's exercises: its numbers and simrun's refined ones");
  cmd->add_option("exercise", args->exercise, "Which exercise: 1, 2, 3, 4 or all (default all)");
  cmd->add_option(
      "scenario", args->scenario,
      "Scenario for exercise 4's full-model line (default examples/textbook/ex4-llama3-70b-1024-h100.json)");
  cmd->add_option("--scenario", args->scenario_flag, "Deprecated spelling of the positional SCENARIO")
      ->group("");
  add_catalog_option(*cmd, args->catalogs);
  return {cmd, [args, env] {
            // `simrun textbook FILE.json`: a scenario in the exercise's place means all exercises.
            std::error_code ec;
            if (!is_exercise(args->exercise) && args->scenario.empty() &&
                (args->exercise.ends_with(".json") || std::filesystem::is_regular_file(args->exercise, ec))) {
              args->scenario = args->exercise;
              args->exercise = "all";
            }
            if (!args->scenario_flag.empty()) {
              if (!args->scenario.empty() && args->scenario != args->scenario_flag)
                throw InputError("command line", "--scenario",
                                 "given beside the scenario argument '" + args->scenario + "' (give one)");
              args->scenario = args->scenario_flag;
            }
            int exercise = 0;
            if (args->exercise == "all")
              exercise = 0;
            else if (args->exercise.size() == 1 && args->exercise[0] >= '1' && args->exercise[0] <= '4')
              exercise = args->exercise[0] - '0';
            else
              throw InputError("command line", "exercise",
                               quoted_input(args->exercise) + " is not an exercise (use 1, 2, 3, 4 or all)");

            const Catalogs catalogs = load_cli_catalogs(env, args->catalogs);
            TextbookInputs in;
            in.gpu = catalogs.hardware.gpu("h100-sxm", "catalog", "gpu");
            in.fabric = catalogs.hardware.fabric("ib-ndr", "catalog", "fabric");
            in.model = catalogs.models.get("llama3-70b", "catalog", "model");
            std::filesystem::path scenario = args->scenario;
            if (scenario.empty()) {
              const auto shipped = env.data_dir / "examples" / "textbook" / "ex4-llama3-70b-1024-h100.json";
              if (std::filesystem::exists(shipped)) scenario = shipped;
            }
            if (!args->scenario.empty() && exercise != 0 && exercise != 4)
              throw InputError("command line", args->scenario_flag.empty() ? "scenario" : "--scenario",
                               "only exercise 4 reads a scenario (run exercise 4 or all, or leave it out)");
            if (!scenario.empty() && (exercise == 0 || exercise == 4))
              in.ex4_scenario = load_scenario(scenario, ScenarioOverrides{}, catalogs);
            print_textbook(std::cout, exercise, in);
            return 0;
          }};
}

}  // namespace simrun::cli
