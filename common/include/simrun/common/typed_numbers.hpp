// Numbers as people type them on a command line (simrun's flags, simrun-gui's): decimal, as a
// scenario file's JSON writes them. strtoll(…, 0) and strtod, which CLI11 and std::stod use,
// also read 0x10 as 16, 010 as 8, 0x1p40 as 2^40 and skip leading blanks; these refuse that.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace simrun {

// Whether `text` starts, after a sign, with a radix prefix: 0x, 0b or 0o (either case).
bool radix_prefixed(std::string_view text);

// An integer flag's text checked before the library converts it: "" when it may go on (decimal
// digits, leading zeros dropped in place so that 010 is ten; or text that is no integer at all,
// left to the library's own error), else why not: a radix prefix, a leading blank, beyond 64 bits.
std::string decimal_integer_error(std::string& text);
// A number flag's likewise: a radix prefix (a hexadecimal float) or a leading blank.
std::string decimal_number_error(const std::string& text);

// std::stod's reading of the start of `text`, but 0 characters used where it starts with a blank,
// a radix prefix or names no finite number (inf, nan). For flags that parse their own values
// (sizes with suffixes, RANK:SLOWDOWN, GPU:PRICE).
double leading_decimal(const std::string& text, size_t& used);

}  // namespace simrun
