// Numbers as people type them (typed_numbers.hpp).
#include "simrun/common/typed_numbers.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "simrun/common/echo.hpp"

namespace simrun {
namespace {

bool starts_blank(std::string_view text) {
  return !text.empty() && std::isspace(static_cast<unsigned char>(text[0]));
}

std::string not_decimal(std::string_view text) {
  return quoted_input(text) +
         " is not a decimal number (sizes, counts and rates are written in decimal digits, without blanks "
         "or a 0x, 0b or 0o prefix)";
}

}  // namespace

bool radix_prefixed(std::string_view text) {
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.remove_prefix(1);
  return text.size() >= 2 && text[0] == '0' &&
         std::string_view("xXbBoO").find(text[1]) != std::string_view::npos;
}

std::string decimal_integer_error(std::string& text) {
  if (radix_prefixed(text) || starts_blank(text)) return not_decimal(text);
  const size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (text.size() == sign || text.find_first_not_of("0123456789", sign) != std::string::npos) return "";
  const size_t first = std::min(text.find_first_not_of('0', sign), text.size() - 1);
  text = (text[0] == '-' ? "-" : "") + text.substr(first);
  int64_t value = 0;
  if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc())
    return text + " is out of range (beyond any 64-bit integer)";
  return "";
}

std::string decimal_number_error(const std::string& text) {
  return radix_prefixed(text) || starts_blank(text) ? not_decimal(text) : "";
}

double leading_decimal(const std::string& text, size_t& used) {
  used = 0;
  if (text.empty() || starts_blank(text) || radix_prefixed(text)) return 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (!std::isfinite(v)) used = 0;
  return used == 0 ? 0 : v;
}

}  // namespace simrun
