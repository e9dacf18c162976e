// Escaping and cutting of echoed input; see echo.hpp.
#include "simrun/common/echo.hpp"

#include <cstdio>

namespace simrun {
namespace {

// The length of the UTF-8 sequence starting at `s[i]` (RFC 3629 §4: no overlongs, no surrogates,
// nothing past U+10FFFF), or 0 when the bytes there are not one.
size_t utf8_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  const unsigned c = byte(i);
  const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return byte(k) >= lo && byte(k) <= hi;
  };
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (c == 0xe0) return cont(i + 1, 0xa0) && cont(i + 2) ? 3 : 0;
  if (c == 0xed) return cont(i + 1, 0x80, 0x9f) && cont(i + 2) ? 3 : 0;
  if (c >= 0xe1 && c <= 0xef) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (c == 0xf0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c == 0xf4) return cont(i + 1, 0x80, 0x8f) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;
}

std::string hex_escape(unsigned char c) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  return buf;
}

// The code point of the valid `n`-byte UTF-8 sequence at `s[i]`.
unsigned code_point(std::string_view s, size_t i, size_t n) {
  static constexpr unsigned kLeadMask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  unsigned cp = static_cast<unsigned char>(s[i]) & kLeadMask[n];
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3fu);
  return cp;
}

// Characters beyond ASCII that break a line or drive a terminal or the text's direction: the C1
// controls (U+0085 NEL, U+009B CSI), the line and paragraph separators and the bidirectional
// marks, embeddings, overrides and isolates (Unicode TR9 §2; "Trojan Source", CVE-2021-42574).
bool is_format_control(unsigned cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string code_point_escape(unsigned cp) {
  char buf[7];
  std::snprintf(buf, sizeof buf, "\\u%04x", cp);
  return buf;
}

// One character of `s` at `i`, as printed; `length` is how many bytes of `s` it covers.
std::string printable_char(std::string_view s, size_t i, size_t& length) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  length = 1;
  switch (c) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (c < 0x20 || c == 0x7f) return hex_escape(c);
  const size_t n = utf8_length(s, i);
  if (n == 0) return hex_escape(c);
  length = n;
  if (const unsigned cp = code_point(s, i, n); is_format_control(cp)) return code_point_escape(cp);
  return std::string(s.substr(i, n));
}

}  // namespace

std::string printable(std::string_view text, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t length = 0;
    const std::string piece = printable_char(text, i, length);
    if (out.size() + piece.size() > max_bytes) return out + "…";
    out += piece;
    i += length;
  }
  return out;
}

std::string quoted_input(std::string_view text, size_t max_bytes) {
  std::string out(1, '"');
  out += printable(text, max_bytes);
  out += '"';
  return out;
}

}  // namespace simrun
