// Case folding for typed names, dollars as text (text.hpp).
#include "simrun/common/text.hpp"

#include <cmath>
#include <cstdio>

namespace simrun {
namespace {

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

}  // namespace

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

std::string spelling_key(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text)
    if (c != '_' && c != '-') out.push_back(ascii_lower(c));
  return out;
}

std::string usd_text(double usd, int digits) {
  if (!std::isfinite(usd)) return "-";
  struct Scale {
    double at;
    const char* suffix;
  };
  static constexpr Scale kScales[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}};
  const char* sign = usd < 0 ? "-" : "";
  const double amount = std::abs(usd);
  char buf[64];
  // From just below each power, so that 999,960 reads "$1M", not "$1e+03k"; trillions as %.{digits}g
  // of the largest scale, or whole trillions past 10^digits of them.
  const double below = 1 - 0.5 * std::pow(10.0, -digits);
  for (const Scale& scale : kScales)
    if (amount >= below * scale.at) {
      const double scaled = amount / scale.at;
      if (scaled >= std::pow(10.0, digits))
        std::snprintf(buf, sizeof buf, "%s$%.0f%s", sign, scaled, scale.suffix);
      else
        std::snprintf(buf, sizeof buf, "%s$%.*g%s", sign, digits, scaled, scale.suffix);
      return buf;
    }
  std::snprintf(buf, sizeof buf, "%s$%.2f", amount < 0.005 ? "" : sign, amount);
  return buf;
}

std::string energy_text(double kwh) {
  if (!std::isfinite(kwh)) return "-";
  char buf[64];
  if (kwh < 999.5)
    std::snprintf(buf, sizeof buf, "%.3g kWh", kwh);
  else
    std::snprintf(buf, sizeof buf, "%.0f MWh", kwh / 1e3);
  return buf;
}

}  // namespace simrun
