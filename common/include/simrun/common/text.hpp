// Case folding for the names people type (catalog ids, enum spellings, the free text of a
// measured run): ASCII only and independent of the C locale, so "H100" and "h100" are one name
// on every machine and no byte beyond ASCII changes.
#pragma once

#include <string>
#include <string_view>

namespace simrun {

// `text` with A-Z as a-z; every other byte as written.
std::string ascii_lower(std::string_view text);

// ascii_lower(text) without '_' and '-': the one key of "all_reduce", "AllReduce" and
// "all-reduce".
std::string spelling_key(std::string_view text);

}  // namespace simrun
