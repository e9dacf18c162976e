// Named fields → nested JSON and CSV rows, and a Report's CSV columns (see csv.hpp).
#include "simrun/sim/report/csv.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += (s.empty() ? "" : " | ") + l;
  return s;
}

}  // namespace

nlohmann::json to_json(const Fields& fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : fields) {
    nlohmann::json* at = &j;
    size_t begin = 0;
    for (size_t dot = f.key.find('.'); dot != std::string::npos; dot = f.key.find('.', begin)) {
      at = &(*at)[f.key.substr(begin, dot - begin)];
      begin = dot + 1;
    }
    (*at)[f.key.substr(begin)] = f.value;
  }
  return j;
}

nlohmann::json bytes_json(double bytes) {
  // Beyond int64 (or NaN) is no byte count a model computes; keep the double rather than wrap.
  if (!(std::fabs(bytes) < 9.2e18)) return bytes;
  return static_cast<int64_t>(std::llround(bytes));
}

std::string csv_cell(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "";
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
      return fmt::format("{}", v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return fmt::format("{}", v.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      // An infinite or NaN value is JSON's null (a run that never finishes has no days): empty.
      if (!std::isfinite(v.get<double>())) return "";
      return fmt::format("{}", v.get<double>());  // shortest form that reads back to the same double
    case nlohmann::json::value_t::string: {
      // A name from the input (a run's id, a model's name) may hold any bytes: control characters
      // escaped as in error lines (echo.hpp), so that no cell drives a terminal or breaks a row.
      const std::string s = printable(v.get_ref<const std::string&>(), std::string::npos);
      if (s.find_first_of(",\"") == std::string::npos) return s;
      std::string quoted = "\"";
      for (const char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
      return quoted + "\"";
    }
    default:
      return csv_cell(v.dump());  // no field holds one; a quoted JSON text rather than a lost value
  }
}

void write_csv_header(const Fields& columns, std::ostream& out) {
  std::string line;
  for (const Field& f : columns) {
    if (!line.empty()) line += ',';
    line += f.key;
  }
  out << line << "\n";
}

void write_csv(const std::vector<Fields>& rows, std::ostream& out) {
  if (rows.empty()) return;
  write_csv_header(rows.front(), out);
  std::string line;
  for (const Fields& row : rows) {
    SIMRUN_ASSERT(row.size() == rows.front().size(), "every CSV row has the header's columns");
    line.clear();
    for (size_t i = 0; i < row.size(); ++i) {
      SIMRUN_ASSERT(row[i].key == rows.front()[i].key, "every CSV row has the header's columns in order");
      if (i > 0) line += ',';
      line += csv_cell(row[i].value);
    }
    out << line << "\n";
  }
}

Fields report_csv_fields(const Report& r) {
  const MemoryReport& m = r.memory;
  const BreakdownReport& b = r.breakdown;
  return {
      {"fidelity", r.fidelity},
      {"step_time_s", r.step_time_s},
      {"tokens_per_s", r.tokens_per_s},
      {"tflops_per_gpu", r.tflops_per_gpu},
      {"mfu", r.mfu},
      {"hfu", r.hfu},
      {"flops_per_step", r.flops_per_step},
      {"params", r.params},
      {"active_params", r.active_params},
      {"peak_bytes_per_gpu", bytes_json(m.peak_bytes_per_gpu)},
      {"capacity_bytes", bytes_json(m.capacity_bytes)},
      {"fits", m.fits},
      {"weights", bytes_json(m.weights)},
      {"grads", bytes_json(m.grads)},
      {"optimizer", bytes_json(m.optimizer)},
      {"activations", bytes_json(m.activations)},
      {"compute_s", b.compute_s},
      {"exposed_comm_s", b.exposed_comm_s},
      {"bubble_s", b.bubble_s},
      {"tokens", r.run.tokens},
      {"days", r.run.days},
      {"gpu_hours", r.run.gpu_hours},
      {"cost_usd", r.run.cost_usd},
      {"energy_kwh", r.run.energy_kwh},
      {"goodput", r.run.goodput},
      // The extras, after the columns of earlier versions.
      {"hardware_flops_per_step", r.hardware_flops_per_step},
      {"workspace", bytes_json(m.workspace)},
      {"checkpoint_interval_s", r.run.checkpoint_interval_s},
      {"stage", b.stage},
      {"forward_s", b.forward_s},
      {"backward_s", b.backward_s},
      {"recompute_s", b.recompute_s},
      {"optimizer_s", b.optimizer_s},
      {"tp_comm_s", b.tp_comm_s},
      {"pp_comm_s", b.pp_comm_s},
      {"dp_comm_s", b.dp_comm_s},
      {"cp_comm_s", b.cp_comm_s},
      {"ep_comm_s", b.ep_comm_s},
      {"tp_exposed_s", b.tp_exposed_s},
      {"pp_exposed_s", b.pp_exposed_s},
      {"dp_exposed_s", b.dp_exposed_s},
      {"cp_exposed_s", b.cp_exposed_s},
      {"ep_exposed_s", b.ep_exposed_s},
      {"flop_convention", r.flop_convention},
      {"warnings", joined(r.warnings)},
      {"degraded", joined(r.degraded)},
  };
}

}  // namespace simrun
