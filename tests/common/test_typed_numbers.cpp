// Numbers as people type them on a command line: decimal only (typed_numbers.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "simrun/common/typed_numbers.hpp"

using namespace simrun;

TEST_CASE("an integer flag's text: decimal digits go on, leading zeros dropped, prefixes and blanks stop",
          "[common][numbers]") {
  std::string ten = "010";
  CHECK(decimal_integer_error(ten).empty());
  CHECK(ten == "10");  // not octal
  std::string zero = "-000";
  CHECK(decimal_integer_error(zero).empty());
  CHECK(zero == "-0");
  for (std::string bad : {"0x10", "0X10", "-0x1", "0b10", "0o7", " 010", "\t4"}) {
    INFO(bad);
    CHECK_THAT(decimal_integer_error(bad), Catch::Contains("is not a decimal number"));
  }
  std::string huge = "99999999999999999999";
  CHECK(decimal_integer_error(huge) == "99999999999999999999 is out of range (beyond any 64-bit integer)");
  std::string word = "four";  // no integer: the library's own error says so
  CHECK(decimal_integer_error(word).empty());
}

TEST_CASE("a number flag's text refuses hexadecimal floats and blanks, leading_decimal reads the rest",
          "[common][numbers]") {
  CHECK_THAT(decimal_number_error("0x1p40"), Catch::Contains("is not a decimal number"));
  CHECK_THAT(decimal_number_error(" 1.5"), Catch::Contains("is not a decimal number"));
  CHECK(decimal_number_error("1e3").empty());
  CHECK(decimal_number_error(".5").empty());
  size_t used = 0;
  CHECK(leading_decimal("1.5M", used) == 1.5);
  CHECK(used == 3);
  CHECK(leading_decimal("+2", used) == 2);
  CHECK(leading_decimal("1e3", used) == 1000);
  for (const char* none : {"0x10", " 2", "inf", "nan", "", "abc"}) {
    INFO(none);
    leading_decimal(none, used);
    CHECK(used == 0);
  }
  CHECK(radix_prefixed("-0b1"));
  CHECK_FALSE(radix_prefixed("0.5"));
  CHECK_FALSE(radix_prefixed("0"));
}
