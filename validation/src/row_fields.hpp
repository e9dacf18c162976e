// Reading a measured-runs row's free-form fields (measured_runs.cpp, row_framework.cpp): text
// tests in lower case, and a field's value where it has the type asked for. A row of another
// team's file may hold anything: each reader says what it does with the rest.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "simrun/common/echo.hpp"
#include "simrun/common/text.hpp"

namespace simrun::row_fields {

using nlohmann::json;

inline bool has(const std::string& hay, const char* needle) { return hay.find(needle) != std::string::npos; }
inline bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
inline bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
inline bool is_alphanumeric(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

inline std::optional<int64_t> opt_int(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_number()) return std::nullopt;
  const double v = j.at(key).get<double>();
  if (!(std::abs(v) < 9.0e15)) return std::nullopt;  // NaN, or beyond what a double counts exactly
  return static_cast<int64_t>(v);
}
// Why `section.key` is not usable as a size from `lo` to `hi` ("" when it is, or when null/absent:
// the caller's default applies): a row of another team's file may hold anything. The bounds are
// the scenario's and the models' (scenario.hpp, model_limits.hpp), so that a row is read as a
// scenario file would be.
inline std::string not_a_size(const json& j, const char* section, const char* key, int64_t lo, int64_t hi) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return "";
  const json& v = j.at(key);
  const std::string field = fmt::format("{}{}{}", section, *section ? "." : "", key);
  const bool integer =
      v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  if (!integer || v.get<double>() < double(lo))
    return fmt::format(
        "{}: {} is not {}", field, v.is_string() ? quoted_input(v.get<std::string>()) : printable(v.dump()),
        lo == 1 ? std::string("a positive integer") : fmt::format("an integer from {} to {}", lo, hi));
  if (v.get<double>() > double(hi))
    return fmt::format("{}: {} is beyond what simrun simulates (at most {})", field, printable(v.dump()), hi);
  return "";
}
inline std::optional<double> opt_num(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_number()) return std::nullopt;
  return j.at(key).get<double>();
}
inline std::string opt_str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return "";
  if (j.at(key).is_string()) return j.at(key).get<std::string>();
  if (j.at(key).is_boolean()) return j.at(key).get<bool>() ? "true" : "false";
  return j.at(key).dump();
}

}  // namespace simrun::row_fields
