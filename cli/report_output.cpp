// Human table, CSV and --explain output of a Report (estimate and simulate share them; JSON
// comes from simrun::to_json so the contract keys live in one place).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cmath>

#include "command.hpp"
#include "simrun/common/text.hpp"
#include "simrun/common/units.hpp"

namespace simrun::cli {
namespace {

std::string human_bytes(double b) { return fmt::format("{:.2f} GiB", b / kGiB); }

std::string human_count(double x) {
  if (x >= 1e12) return fmt::format("{:.2f}T", x / 1e12);
  if (x >= 1e9) return fmt::format("{:.2f}B", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.2f}M", x / 1e6);
  if (x < 10) return fmt::format("{:.3g}", x);  // a short run's GPU-hours: 0.145, not 0
  return fmt::format("{:.0f}", x);
}

std::string layout_line(const Scenario& s) {
  const Layout& l = s.layout;
  std::string cp_comm;
  if (l.cp > 1) cp_comm = fmt::format(" {}", to_string(l.cp_comm_type));
  if (l.cp_comm_type == CpCommType::a2a_p2p) cp_comm += fmt::format(" [{}, {}]", l.cp_a2a(), l.cp_ring());
  std::string precision = to_string(l.precision);
  if (l.low_precision())
    precision += fmt::format(" {}{}", to_string(l.recipe()), l.fp8_param_gather ? ", fp8 params" : "");
  return fmt::format(
      "tp {} pp {} dp {} cp {}{} ep {}{}{} | micro-batch {} global batch {} | recompute {} | {} | "
      "zero {}{}{}",
      l.tp, l.pp, l.dp, l.cp, cp_comm, l.ep,
      l.moe_capacity_factor > 0 ? fmt::format(" capacity {:g}", l.moe_capacity_factor) : std::string(),
      l.virtual_stages > 1 ? fmt::format(" vpp {}", l.virtual_stages) : std::string(), l.micro_batch,
      l.global_batch, to_string(l.recompute), precision, l.zero_stage,
      l.sequence_parallel ? " | seq-parallel" : "", l.flash_attention ? " | flash" : "");
}

}  // namespace

void add_output_options(CLI::App& cmd, OutputFormat& format, bool* explain, const OutputHelp& help) {
  CLI::Option* json = cmd.add_flag_callback(
      "--json", [&format] { format = OutputFormat::json; }, help.json);
  CLI::Option* csv = cmd.add_flag_callback(
      "--csv", [&format] { format = OutputFormat::csv; }, help.csv);
  json->excludes(csv);
  if (explain) {
    // The JSON report carries its explanations; a CSV row has no room for them.
    CLI::Option* e =
        cmd.add_flag("--explain", *explain, "Print each number's formula and inputs (table or --json)");
    e->excludes(csv);
  }
}

void add_no_timing_option(CLI::App& cmd, Timing& timing) {
  cmd.add_flag_callback(
      "--no-timing", [&timing] { timing = Timing::omitted; },
      "Leave out wall-clock fields (simulation wall time) so that two runs' output diffs clean");
}

void print_report_table(const Report& r, const StepTimeBand& band, const Scenario& s, std::ostream& out) {
  fmt::print(out, "simrun {} — {} on {} x {} ({}, {})\n", r.fidelity, s.model.name, s.cluster.num_gpus,
             s.cluster.gpu.id, s.cluster.fabric.id, to_string(s.cluster.topology));
  fmt::print(out, "layout   {}\n", layout_line(s));
  fmt::print(out, "model    {} parameters ({} active), seq_len {}\n", human_count(r.params),
             human_count(r.active_params), s.model.seq_len);
  for (const std::string& d : r.degraded) fmt::print(out, "degraded {}\n", d);
  fmt::print(out, "\n");
  const auto row = [&out](const char* name, const std::string& value) {
    fmt::print(out, "  {:<28}{}\n", name, value);
  };
  fmt::print(out, "step\n");
  row("step time", fmt::format("{:.3f} s ({})", r.step_time_s, step_time_band_text(band)));
  row("tokens/s",
      fmt::format("{:.0f} ({:.0f} per GPU)", r.tokens_per_s, r.tokens_per_s / s.cluster.num_gpus));
  row("TFLOP/s per GPU", fmt::format("{:.1f}", r.tflops_per_gpu));
  row("MFU", fmt::format("{:.1f} %", 100 * r.mfu));
  row("HFU", fmt::format("{:.1f} %", 100 * r.hfu));
  row("model FLOPs per step", fmt::format("{:.3e}", r.flops_per_step));
  row("FLOP convention", r.flop_convention);
  fmt::print(out, "breakdown (per step)\n");
  const BreakdownReport& b = r.breakdown;
  if (s.run.assumed_mfu && r.fidelity == "analytic")
    row("compute", fmt::format("{:.3f} s (the assumed MFU's step, not split into phases)", b.compute_s));
  else
    row("compute", fmt::format("{:.3f} s (fwd {:.3f}, bwd {:.3f}, recompute {:.3f}, optimizer {:.3f})",
                               b.compute_s, b.forward_s, b.backward_s, b.recompute_s, b.optimizer_s));
  // Per group: total traffic time, and the part the compute stream waited for.
  auto group = [](const char* name, double total, double exposed) {
    return fmt::format("{} {:.3f} s ({:.3f} exposed)", name, total, exposed);
  };
  std::string comm = group("TP", b.tp_comm_s, b.tp_exposed_s) + ", " +
                     group("PP", b.pp_comm_s, b.pp_exposed_s) + ", " +
                     group("DP", b.dp_comm_s, b.dp_exposed_s);
  if (b.cp_comm_s > 0) comm += ", " + group("CP", b.cp_comm_s, b.cp_exposed_s);
  if (b.ep_comm_s > 0) comm += ", " + group("EP", b.ep_comm_s, b.ep_exposed_s);
  row("communication", comm);
  row("exposed communication", fmt::format("{:.3f} s", b.exposed_comm_s));
  row("pipeline bubble", fmt::format("{:.3f} s", b.bubble_s));
  fmt::print(out, "memory (per GPU, worst stage)\n");
  const MemoryReport& m = r.memory;
  row("weights", human_bytes(m.weights));
  row("gradients", human_bytes(m.grads));
  row("optimizer states", human_bytes(m.optimizer));
  row("activations", human_bytes(m.activations));
  row("workspace allowance", human_bytes(m.workspace));
  row("peak / capacity", fmt::format("{} / {} — {}", human_bytes(m.peak_bytes_per_gpu),
                                     human_bytes(m.capacity_bytes), m.fits ? "fits" : "DOES NOT FIT"));
  fmt::print(out, "run\n");
  row("tokens", human_count(r.run.tokens));
  const bool finishes = std::isfinite(r.run.days);  // else the warnings say why it never does
  // Under a tenth of a day in hours, so that a short run does not read "0.0".
  row("days", !finishes          ? std::string("never")
              : r.run.days < 0.1 ? fmt::format("{:.2g} ({:.2g} hours)", r.run.days, 24 * r.run.days)
                                 : fmt::format("{:.1f}", r.run.days));
  row("GPU-hours", finishes ? human_count(r.run.gpu_hours) : "-");
  row("cost", finishes ? usd_text(r.run.cost_usd) : "-");
  row("energy", finishes ? energy_text(r.run.energy_kwh) : "-");
  const double every_s = r.run.checkpoint_interval_s;
  row("goodput",
      fmt::format("{:.1f} % (checkpoint every {})", 100 * r.run.goodput,
                  every_s < 60 ? fmt::format("{:.3g} s", every_s) : fmt::format("{:.0f} min", every_s / 60)));
  for (const auto& w : r.warnings) fmt::print(out, "warning: {}\n", w);
}

void print_comparison_table(const Report& event, const BreakdownReport& event_parts, const Report& analytic,
                            std::ostream& out) {
  fmt::print(out, "\nevent simulation vs closed-form estimate (per step)\n");
  fmt::print(out, "  {:<28}{:>12}{:>12}{:>12}\n", "", "event", "analytic", "difference");
  const double step_e = event.step_time_s, step_a = analytic.step_time_s;
  fmt::print(out, "  {:<28}{:>10.3f} s{:>10.3f} s{:>12}\n", "step time", step_e, step_a,
             step_a > 0 ? fmt::format("{:+.1f} %", 100 * (step_e - step_a) / step_a) : "-");
  fmt::print(out, "  {:<28}{:>10.1f} %{:>10.1f} %\n", "MFU", 100 * event.mfu, 100 * analytic.mfu);
  // A part's difference in seconds: a percentage of a small part says little about the step.
  const BreakdownReport &be = event_parts, &ba = analytic.breakdown;
  fmt::print(out, "  stage {}, the estimate's slowest:\n", ba.stage);
  auto part = [&out](const char* name, double e, double a) {
    fmt::print(out, "  {:<28}{:>10.3f} s{:>10.3f} s{:>+10.3f} s\n", name, e, a, e - a);
  };
  part("  compute", be.compute_s, ba.compute_s);
  part("  exposed TP", be.tp_exposed_s, ba.tp_exposed_s);
  part("  exposed PP", be.pp_exposed_s, ba.pp_exposed_s);
  part("  exposed DP", be.dp_exposed_s, ba.dp_exposed_s);
  if (be.cp_comm_s > 0 || ba.cp_comm_s > 0) part("  exposed CP", be.cp_exposed_s, ba.cp_exposed_s);
  if (be.ep_comm_s > 0 || ba.ep_comm_s > 0) part("  exposed EP", be.ep_exposed_s, ba.ep_exposed_s);
  part("  pipeline bubble", be.bubble_s, ba.bubble_s);
  fmt::print(out,
             "  (the event's parts are of stage {}'s rank that finishes last; bubble is the rest of the "
             "step, so each column sums to its step time)\n",
             ba.stage);
}

void print_report_explain(const Report& r, std::ostream& out) {
  for (const auto& e : r.explanations) {
    fmt::print(out, "{} = {:.6g} {}\n", e.key, e.value, e.unit);
    fmt::print(out, "    = {}\n", e.formula);
    if (!e.inputs.empty()) fmt::print(out, "    where {}\n", e.inputs);
  }
}

void print_framework_explain(const FrameworkProfile& p, const FrameworkProfile& base, std::ostream& out) {
  fmt::print(out, "framework = {} ({}; {})\n", p.id, p.name, p.file);
  const std::vector<ProfileDifference> changes = profile_differences(p, base);
  if (p.id == base.id) {
    fmt::print(out, "    the default profile; the framework flags given replace single fields\n");
    return;
  }
  if (changes.empty()) fmt::print(out, "    the same fields as {}\n", base.id);
  for (const ProfileDifference& d : changes)
    fmt::print(out, "    {} = {} ({}: {})\n        source: {}\n", d.key, d.value, base.id, d.base_value,
               d.source);
}

nlohmann::json framework_explain_json(const FrameworkProfile& p, const FrameworkProfile& base) {
  nlohmann::json changes = nlohmann::json::array();
  for (const ProfileDifference& d : profile_differences(p, base))
    changes.push_back({{"field", d.key},
                       {"value", nlohmann::json::parse(d.value)},
                       {base.id, nlohmann::json::parse(d.base_value)},
                       {"source", d.source}});
  return {{"id", p.id}, {"name", p.name}, {"file", p.file}, {"differs_from", base.id}, {"changes", changes}};
}

Fields report_csv_row(const Fields& inputs, const Report& report, const Fields& extra) {
  Fields row = inputs;
  for (Field& f : report_csv_fields(report)) row.push_back(std::move(f));
  row.insert(row.end(), extra.begin(), extra.end());
  return row;
}

nlohmann::json report_json(const Report& report, const StepTimeBand& band, const Fields& inputs,
                           const Scenario& scenario, const Catalogs& catalogs, bool explain) {
  nlohmann::json j = to_json(report);
  j["step_time_band_s"] = step_time_band_json(band, report.step_time_s);
  j["inputs"] = to_json(inputs);
  if (explain)
    j["framework_profile"] = framework_explain_json(
        scenario.framework, catalogs.frameworks.resolve(kDefaultFramework, "catalog", "framework"));
  return j;
}

}  // namespace simrun::cli
