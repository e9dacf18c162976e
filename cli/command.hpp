// How subcommands plug into the simrun command: each file adds one CLI11 subcommand and a run
// function; main() parses, runs the chosen one and maps exceptions to exit codes
// (InputError → 2 with one line on stderr, InfeasibleError → 3, anything else → 1).
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "flag_names.hpp"
#include "simrun/sim/event/step_executor.hpp"
#include "simrun/sim/report/csv.hpp"
#include "simrun/sim/report/inputs.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"
#include "simrun/sim/workload/workload.hpp"
#include "simrun/validation/prediction_band.hpp"

namespace simrun::cli {

// What every subcommand may need from the edge: where the catalogs are.
struct CliEnv {
  std::filesystem::path data_dir;  // root holding models/catalog and topologies/{gpus,fabrics}
  bool data_dir_from_env = false;  // data_dir is SIMRUN_DATA_DIR's (errors name the variable)
  // User catalog folders from SIMRUN_CATALOG (colon-separated), read after the shipped catalogs
  // and before those of --catalog (docs/catalogs.md).
  std::vector<std::filesystem::path> user_catalogs;
  std::string progress;  // SIMRUN_PROGRESS: "1", "0" or empty (unset); progress_line.hpp
};

// --catalog DIR (repeatable): a user catalog folder with gpus/, fabrics/ and models/ subfolders.
void add_catalog_option(CLI::App& cmd, std::vector<std::string>& dirs);
// The shipped catalogs with the user folders of SIMRUN_CATALOG and then of --catalog added; a
// folder that does not exist is an InputError naming the flag or the variable.
Catalogs load_cli_catalogs(const CliEnv& env, const std::vector<std::string>& catalog_flags);

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit code
};

// "Does not fit / infeasible" under a hard check: exit 3.
class InfeasibleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class OutputFormat { table, json, csv };
// Wall-clock fields in the output: shown, or omitted (--no-timing) so that two runs diff clean.
enum class Timing { shown, omitted };

// Scenario file + the Megatron-style override flags shared by estimate/simulate/plan/topology.
struct ScenarioArgs {
  std::string file;
  ScenarioOverrides overrides;
  bool sequence_parallel_on = false, sequence_parallel_off = false;
  bool fp8_param_gather = false;
  bool flash_on = false, flash_off = false;
  std::vector<int64_t> hierarchical_cp_sizes;  // --hierarchical-cp-sizes 2,4 (empty: not given)
  std::map<std::string, bool> switches;        // Megatron's --bf16, ... by name (flag_names.hpp)
  std::string fp8_format;                      // --fp8-format e4m3|hybrid (empty: not given)
  std::vector<std::string> catalogs;           // --catalog DIR, in the order given
};
void add_scenario_options(CLI::App& cmd, ScenarioArgs& args);
Scenario resolve_scenario(const ScenarioArgs& args, const Catalogs& catalogs);
// `run()`, its InputErrors named as the flags that gave their values (as_command_line_error): the
// layout rules the simulation applies (an interleaved schedule's micro-batches) read the sizes
// the flags set.
template <class Run>
auto blaming_flags(const ScenarioArgs& args, Run&& run) {
  try {
    return run();
  } catch (const InputError& e) {
    throw as_command_line_error(e, args.overrides.given());
  }
}
// load_scenario with an error in an overridden field reported as its flag's (cli/flag_names.hpp).
Scenario load_scenario_with_flags(const std::string& file, const ScenarioOverrides& overrides,
                                  const Catalogs& catalogs);
// load_cluster likewise: a cluster from flags alone, errors naming the flags.
ClusterSpec load_cluster_with_flags(const ScenarioOverrides& overrides, const Catalogs& catalogs);

// Framework behaviour the scenario file does not state, shared by estimate and simulate
// (cli/framework_options.cpp): --tp-comm-overlap, --moe-shared-expert-overlap, --kernels,
// --selective-recompute. (The pipeline schedule is the scenario's: --pipeline-schedule.)
struct FrameworkArgs {
  bool tp_comm_overlap = false, no_tp_comm_overlap = false;
  bool moe_shared_expert_overlap = false;
  std::string moe_dispatcher;  // alltoall | allgather | flex; empty: the framework profile's
  std::string kernels;         // fused | eager; empty: the framework profile's
  std::string selective;       // attention | every-other-layer; empty: the framework profile's
  // Megatron's --overlap-grad-reduce / --overlap-param-gather (simrun's defaults) and their --no-.
  bool overlap_grad_reduce = false, no_overlap_grad_reduce = false;
  bool overlap_param_gather = false, no_overlap_param_gather = false;
  // Megatron's --grad-reduce-in-bf16 and its fp32 counterpart: the DP gradients' dtype.
  bool grad_reduce_in_bf16 = false, grad_reduce_in_fp32 = false;
};
void add_framework_options(CLI::App& cmd, FrameworkArgs& args);
// The scenario's framework profile with the flags given applied over it.
void apply_framework_options(const FrameworkArgs& args, const Scenario& scenario, WorkloadOptions& workload,
                             MemoryDefaults& memory);

// Slow hardware (cli/fault_options.cpp): --straggler, --straggler-node and --slow-link for
// estimate and simulate (`event_simulation`: they imply --full).
struct FaultArgs {
  std::vector<std::string> stragglers;       // RANK:SLOWDOWN
  std::vector<std::string> straggler_nodes;  // NODE:SLOWDOWN
  std::vector<std::string> slow_links;       // RANK:FRACTION[:nic|scale-up]
};
void add_fault_options(CLI::App& cmd, FaultArgs& args, bool event_simulation);
// Parsed and checked against the cluster's nodes; ranks are checked where they are used.
std::vector<Straggler> stragglers_of(const FaultArgs& args, const Scenario& scenario);
std::vector<SlowLink> slow_links_of(const FaultArgs& args);

// Every subcommand on `app` (cli/app.cpp), with --version and --help; main() runs the parsed one.
std::vector<Command> add_commands(CLI::App& app, const CliEnv& env);

Command add_estimate_command(CLI::App& root, const CliEnv& env);
Command add_collective_command(CLI::App& root, const CliEnv& env);
Command add_topology_command(CLI::App& root, const CliEnv& env);
Command add_simulate_command(CLI::App& root, const CliEnv& env);
Command add_textbook_command(CLI::App& root, const CliEnv& env);
Command add_accuracy_command(CLI::App& root, const CliEnv& env);
Command add_plan_command(CLI::App& root, const CliEnv& env);
Command add_validate_command(CLI::App& root, const CliEnv& env);
// `simrun completion bash|zsh`: a completion script made by walking `root`'s subcommands and
// options (cli/completion_command.cpp); add it last, so it sees the others.
Command add_completion_command(CLI::App& root, const CliEnv& env);

// The prediction band of the report's step time (cli/step_time_band.cpp): the shipped residuals of
// the scenario's framework profile × GPU architecture; its --explain entries join the report's.
StepTimeBand attach_step_time_band(const CliEnv& env, const Scenario& scenario, const Catalogs& catalogs,
                                   Report& report);

// Report printing shared by estimate and simulate (cli/report_output.cpp); the step time's row
// carries its band.
void print_report_table(const Report& report, const StepTimeBand& band, const Scenario& scenario,
                        std::ostream& out);
void print_report_explain(const Report& report, std::ostream& out);
// --explain's account of the framework profile: its id and file, then each field that differs from
// `base` (the default profile) with its source.
void print_framework_explain(const FrameworkProfile& profile, const FrameworkProfile& base,
                             std::ostream& out);
// The same as the JSON report's "framework_profile" (with --explain --json).
nlohmann::json framework_explain_json(const FrameworkProfile& profile, const FrameworkProfile& base);
// The JSON report estimate and simulate print: the contract keys (to_json), "step_time_band_s",
// "inputs", and with `explain` the "framework_profile" against the default profile of `catalogs`.
nlohmann::json report_json(const Report& report, const StepTimeBand& band, const Fields& inputs,
                           const Scenario& scenario, const Catalogs& catalogs, bool explain);
// One CSV row of a report: the inputs' columns, the report's (report_csv_fields), then `extra`.
Fields report_csv_row(const Fields& inputs, const Report& report, const Fields& extra = {});
// simulate --compare-analytic: step time and MFU of both fidelities side by side, and the parts
// (compute, exposed traffic per group, bubble) of one pipeline stage: `event_parts` are the
// event's on the stage the estimate's breakdown describes (analytic.breakdown.stage).
void print_comparison_table(const Report& event, const BreakdownReport& event_parts, const Report& analytic,
                            std::ostream& out);
// What --json and --csv print, in a command's help.
struct OutputHelp {
  const char* json;
  const char* csv;
};
// A report's (estimate, simulate).
inline constexpr OutputHelp kReportOutputHelp = {
    "Print the report as JSON (contract keys, and the inputs it was computed from)",
    "Print the report as CSV: a header, then one row led by the inputs (full precision)"};
// Adds --json/--csv (and --explain when `explain` is given) to a command.
void add_output_options(CLI::App& cmd, OutputFormat& format, bool* explain,
                        const OutputHelp& help = kReportOutputHelp);
// Adds --no-timing, which sets `timing` to omitted: wall-clock fields are the only ones two
// identical runs differ in.
void add_no_timing_option(CLI::App& cmd, Timing& timing);

}  // namespace simrun::cli
