// Reports as named scalar fields, for the JSON objects they nest into and the CSV rows they
// flatten to: a sweep's rows share one header, numbers keep full precision (integers as written,
// doubles in shortest round-trip form, which reads back to the same double) and bytes are
// integers in both.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "simrun/sim/report/report.hpp"

namespace simrun {

// One named value: its dotted path (the CSV column name), e.g. "layout.tp", and a JSON scalar
// (string, integer, double, bool; null for "not given" or "not measured", an empty CSV cell).
struct Field {
  std::string key;
  nlohmann::json value;
};
using Fields = std::vector<Field>;

// The fields as one JSON object, nested at the dots: "layout.tp" → {"layout": {"tp": …}}.
nlohmann::json to_json(const Fields& fields);

// A byte count as a JSON integer (the models compute bytes as doubles; rounded to the nearest).
nlohmann::json bytes_json(double bytes);

// One CSV cell of a JSON scalar: numbers at full precision, true/false, null as an empty cell,
// strings with control characters escaped (printable, echo.hpp: a line break is "\n") and quoted
// (RFC 4180) when they hold a comma or a quote.
std::string csv_cell(const nlohmann::json& value);

// A header line of the first row's keys, then one line per row; every row has the same keys in
// the same order (asserted), so runs of a sweep diff column by column.
void write_csv(const std::vector<Fields>& rows, std::ostream& out);
// The header line alone: `columns`' keys (for a table of no rows).
void write_csv_header(const Fields& columns, std::ostream& out);

// A Report's CSV columns: the ones earlier versions printed (fidelity, the DESIGN.md report keys
// under their short names) in their order, then the extras (full breakdown, workspace,
// checkpoint interval, FLOP convention, warnings and degraded hardware joined by " | ").
Fields report_csv_fields(const Report& report);

}  // namespace simrun
