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

std::string usd_text(double usd) {
  struct Scale {
    double at;
    const char* suffix;
  };
  // From just below each power: 999,960 reads "$1M", not "$1e+03k".
  static constexpr Scale kScales[] = {{1e9, "B"}, {1e6, "M"}, {1e3, "k"}};
  char buf[64];
  for (const Scale& scale : kScales)
    if (std::abs(usd) >= 0.9995 * scale.at) {
      std::snprintf(buf, sizeof buf, "$%.3g%s", usd / scale.at, scale.suffix);
      return buf;
    }
  std::snprintf(buf, sizeof buf, "$%.2f", usd);
  return buf;
}

}  // namespace simrun
