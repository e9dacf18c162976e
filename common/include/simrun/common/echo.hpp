// Input echoed back in an error line, made safe: the one-line error contract (DESIGN.md "Exit
// codes") must hold for any bytes a user gives, and no input may drive the terminal. Control
// characters and DEL become C escapes (`\n`, `\t`, `\x1b`), the C1 controls, line separators and
// bidirectional controls `\uNNNN` (`\u0085`, `\u202e`), bytes that are not UTF-8 `\xNN`, and
// long text is cut at a character boundary with an ellipsis.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace simrun {

// An echoed value (a name, a string value, a flag's argument) is at most this many bytes before
// its ellipsis: enough for any catalog id or path a person types, short of flooding the line.
inline constexpr size_t kEchoMaxBytes = 120;
// A whole error line, its echoes included, is at most this many bytes before its ellipsis.
inline constexpr size_t kErrorLineMaxBytes = 1000;

// `text` with control characters, DEL and invalid UTF-8 escaped, cut to `max_bytes` (escapes
// included) plus "…" when longer.
std::string printable(std::string_view text, size_t max_bytes = kEchoMaxBytes);

// printable(text) in double quotes: how error lines quote what the user wrote.
std::string quoted_input(std::string_view text, size_t max_bytes = kEchoMaxBytes);

}  // namespace simrun
