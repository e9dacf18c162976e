// Case folding for typed names (text.hpp).
#include "simrun/common/text.hpp"

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

}  // namespace simrun
