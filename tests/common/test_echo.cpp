// Echoed input made safe: control characters, DEL and invalid UTF-8 escaped, valid UTF-8 kept,
// long text cut at a character boundary.
#include <catch2/catch.hpp>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

using namespace simrun;

TEST_CASE("printable escapes what would drive a terminal and keeps UTF-8", "[common][echo]") {
  CHECK(printable("h100-sxm") == "h100-sxm");
  CHECK(printable("a\nb\rc\td") == R"(a\nb\rc\td)");
  CHECK(printable("\x1b[31mred\x07") == R"(\x1b[31mred\x07)");
  CHECK(printable(std::string("nul\0del\x7f", 8)) == R"(nul\x00del\x7f)");
  CHECK(printable("μs · ≤ 🙂") == "μs · ≤ 🙂");
  CHECK(printable("\xff\xfe ok") == R"(\xff\xfe ok)");
  CHECK(printable("\xc0\xaf") == R"(\xc0\xaf)");      // overlong '/'
  CHECK(printable("\xed\xa0\x80") == R"(\xed\xa0\x80)");  // a UTF-16 surrogate
  CHECK(printable(R"(\x1b)") == R"(\x1b)");  // already escaped text is left as it is
}

TEST_CASE("printable escapes the controls beyond ASCII: C1, line separators, bidi", "[common][echo]") {
  CHECK(printable("llama\u0085X") == R"(llama\u0085X)");      // NEL breaks a line
  CHECK(printable("a\u009b31mb") == R"(a\u009b31mb)");        // 8-bit CSI drives a terminal
  CHECK(printable("a\u2028b\u2029c") == R"(a\u2028b\u2029c)");  // line, paragraph separators
  CHECK(printable("x\u202ey\u2066z\u200f") == R"(x\u202ey\u2066z\u200f)");  // bidi
  CHECK(printable("\u00a0\u00e9\u2027\u2030") == "\u00a0\u00e9\u2027\u2030");  // printable neighbours kept
}

TEST_CASE("printable cuts long text at a character boundary, with an ellipsis", "[common][echo]") {
  CHECK(printable(std::string(500, 'a'), 10) == "aaaaaaaaaa…");
  CHECK(printable("ααααα", 5) == "αα…");  // 2 bytes each: the third does not fit
  CHECK(printable("\n\n\n", 5) == R"(\n\n…)");
  CHECK(quoted_input(std::string(1000, 'x')).size() == kEchoMaxBytes + 2 + std::string("…").size());
}

TEST_CASE("an InputError's line is safe whatever its parts hold", "[common][echo]") {
  const InputError e("s.json", "layout.\x1b[2J", std::string(5000, 'w') + "\n");
  const std::string line = e.what();
  CHECK(line.rfind(R"(s.json: layout.\x1b[2J: www)", 0) == 0);
  CHECK(line.size() == kErrorLineMaxBytes + std::string("…").size());
  CHECK(line.find('\n') == std::string::npos);
}
