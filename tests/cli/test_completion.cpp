// `simrun completion bash|zsh` (cli/completion_command.cpp): scripts the shells accept, holding
// every subcommand and option of the app and the catalogs' ids, and a bash function that
// completes what a user types.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "command.hpp"

using namespace simrun;
using namespace simrun::cli;
using namespace simrun::test;

namespace {

// `command` under /bin/sh in `cwd`: exit code and stdout.
RunResult run_shell(const std::string& command, const std::filesystem::path& cwd) {
  const auto out = scratch_dir() / "shell-out.txt", err = scratch_dir() / "shell-err.txt";
  const std::string cmd =
      "cd " + shell_quoted(cwd) + " && " + command + " >" + shell_quoted(out) + " 2>" + shell_quoted(err);
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
}

bool have(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

std::filesystem::path script(const std::string& shell) {
  const RunResult r = run_simrun("completion " + shell);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.err.empty());
  return write_file("simrun-completion." + shell, r.out);
}

// What the bash script offers for `words` (the last one being completed), run in a folder holding
// `trace-out.json` and `scenario.json`.
std::vector<std::string> bash_completions(const std::vector<std::string>& words) {
  static const std::filesystem::path bash_script = script("bash");
  static const std::filesystem::path driver = write_file(
      "complete-driver.sh",
      "source \"$1\"\nshift\nCOMP_WORDS=(\"$@\")\nCOMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n_simrun\n"
      "printf '%s\\n' \"${COMPREPLY[@]}\"\n");
  static const std::filesystem::path folder = [] {
    const auto d = scratch_dir() / "completion-cwd";
    std::filesystem::create_directories(d);
    std::ofstream(d / "trace-out.json") << "{}";
    std::ofstream(d / "scenario.json") << "{}";
    return d;
  }();
  std::string command = "bash " + shell_quoted(driver) + " " + shell_quoted(bash_script);
  for (const std::string& w : words) command += " '" + w + "'";
  const RunResult r = run_shell(command, folder);
  INFO(command << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Every subcommand of the app, and each one's long options.
struct AppNames {
  std::vector<std::string> subcommands;
  std::vector<std::pair<std::string, std::string>> options;  // (subcommand, --option)
};
AppNames app_names() {
  CLI::App app{"simrun"};
  add_commands(app, CliEnv{SIMRUN_DATA_DIR, {}, {}});
  AppNames names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.subcommands.push_back(sub->get_name());
    for (const CLI::Option* o : sub->get_options())
      if (!o->get_group().empty())
        for (const std::string& l : o->get_lnames()) names.options.push_back({sub->get_name(), "--" + l});
  }
  return names;
}

}  // namespace

TEST_CASE("the bash script is valid bash holding every subcommand, option and catalog id",
          "[cli][completion]") {
  REQUIRE(have("bash"));
  const std::filesystem::path path = script("bash");
  const RunResult syntax = run_shell("bash -n " + shell_quoted(path), scratch_dir());
  INFO(syntax.err);
  CHECK(syntax.exit_code == 0);
  const std::string text = read_text(path);
  const AppNames names = app_names();
  CHECK(names.subcommands.size() >= 8);
  for (const std::string& sub : names.subcommands) {
    INFO(sub);
    CHECK(text.find(sub) != std::string::npos);
  }
  CHECK(names.options.size() > 60);
  for (const auto& [sub, option] : names.options) {
    INFO(sub << " " << option);
    CHECK(text.find(" " + option) != std::string::npos);
  }
  for (const char* sample :
       {"completion", "--tp", "--global-batch", "--trace", "--progress", "h100-sxm", "ib-ndr", "llama3-70b"})
    CHECK(text.find(sample) != std::string::npos);
  CHECK(text.find("complete -F _simrun simrun") != std::string::npos);
}

TEST_CASE("the bash function completes subcommands, each one's flags, catalog ids and files",
          "[cli][completion]") {
  REQUIRE(have("bash"));
  CHECK(contains(bash_completions({"simrun", "simulate", "--gl"}), "--global-batch"));
  CHECK(contains(bash_completions({"simrun", "simulate", "--gl"}), "--global-batch-size"));
  CHECK(contains(bash_completions({"simrun", "sim"}), "simulate"));
  CHECK(contains(bash_completions({"simrun", "comp"}), "completion"));
  CHECK(bash_completions({"simrun", "completion", ""}) == std::vector<std::string>{"bash", "zsh"});
  CHECK(bash_completions({"simrun", "simulate", "--gpu", "h100-s"}) == std::vector<std::string>{"h100-sxm"});
  // --gpu=h100-s reaches the function split at '='.
  CHECK(bash_completions({"simrun", "estimate", "--gpu", "=", "h100-s"}) ==
        std::vector<std::string>{"h100-sxm"});
  CHECK(contains(bash_completions({"simrun", "simulate", "--fabric", ""}), "ib-ndr"));
  CHECK(contains(bash_completions({"simrun", "simulate", "--model", "llama3-7"}), "llama3-70b"));
  // A number: nothing to offer, not even files.
  CHECK(bash_completions({"simrun", "simulate", "--tp", ""}).empty());
  // Files for the scenario, --trace and --calibration.
  CHECK(contains(bash_completions({"simrun", "simulate", "sce"}), "scenario.json"));
  CHECK(contains(bash_completions({"simrun", "simulate", "--trace", "trace-"}), "trace-out.json"));
  CHECK(contains(bash_completions({"simrun", "estimate", "--calibration", ""}), "trace-out.json"));
  // ...and for a plan file, a price table, bands, validate's output and textbook's exercise or file.
  CHECK(contains(bash_completions({"simrun", "plan", "sce"}), "scenario.json"));
  CHECK(contains(bash_completions({"simrun", "plan", "--prices", "sce"}), "scenario.json"));
  CHECK(contains(bash_completions({"simrun", "accuracy", "--write-bands", "sce"}), "scenario.json"));
  CHECK(contains(bash_completions({"simrun", "textbook", ""}), "all"));
  CHECK(contains(bash_completions({"simrun", "textbook", "sce"}), "scenario.json"));
  // Each subcommand its own flags: estimate has no --trace.
  CHECK(bash_completions({"simrun", "estimate", "--trac"}).empty());
  CHECK(contains(bash_completions({"simrun", "collective", "--minb"}), "--minbytes"));
  // `simrun SCENARIO.json ...` is simulate.
  CHECK(contains(bash_completions({"simrun", "scenario.json", "--fu"}), "--full"));
  CHECK(bash_completions({"simrun", "--vers"}) == std::vector<std::string>{"--version"});
}

TEST_CASE("the zsh script holds every subcommand and the catalog ids, and zsh accepts it",
          "[cli][completion]") {
  const std::filesystem::path path = script("zsh");
  const std::string text = read_text(path);
  CHECK(text.rfind("#compdef simrun\n", 0) == 0);
  for (const std::string& sub : app_names().subcommands)
    CHECK(text.find("'" + sub + ":") != std::string::npos);
  for (const char* sample : {"'--global-batch[", "'--tp[", "h100-sxm", "ib-ndr", "llama3-70b",
                             ":trace:_files", "'1:shell:(bash zsh)'"})
    CHECK(text.find(sample) != std::string::npos);
  if (!have("zsh")) {
    WARN("zsh is not installed: its syntax check (zsh -n) is skipped");
    return;
  }
  const RunResult syntax = run_shell("zsh -n " + shell_quoted(path), scratch_dir());
  INFO(syntax.err);
  CHECK(syntax.exit_code == 0);
}

TEST_CASE("completion for another shell, or none, is one line and exit 2", "[cli][completion][errors]") {
  require_one_safe_line(run_simrun("completion fish"), "fish");
  const RunResult none = run_simrun("completion");
  CHECK(none.exit_code == 2);
  CHECK(none.out.empty());
}
