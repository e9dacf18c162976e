// Case folding for typed names: ASCII letters only, whatever the locale; dollars and energy as text.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "simrun/common/text.hpp"

using namespace simrun;

TEST_CASE("ascii_lower folds A-Z and leaves every other byte", "[common][text]") {
  CHECK(ascii_lower("H100-SXM5_80GB") == "h100-sxm5_80gb");
  CHECK(ascii_lower("") == "");
  CHECK(ascii_lower("Éμ\xff") == "Éμ\xff");  // UTF-8 and stray bytes as written
  CHECK(ascii_lower(std::string("A\0B", 3)) == std::string("a\0b", 3));
}

TEST_CASE("spelling_key is one key for the spellings of a name", "[common][text]") {
  CHECK(spelling_key("all_reduce") == "allreduce");
  CHECK(spelling_key("AllReduce") == "allreduce");
  CHECK(spelling_key("all-reduce") == "allreduce");
  CHECK(spelling_key("CollNet_Direct") == "collnetdirect");
  CHECK(spelling_key("all reduce") == "all reduce");  // a space is part of the name
}

TEST_CASE("usd_text reads at the scale of the sum, three significant digits", "[common][text]") {
  CHECK(usd_text(55.07) == "$55.07");
  CHECK(usd_text(0) == "$0.00");
  CHECK(usd_text(68'640) == "$68.6k");
  CHECK(usd_text(999'960) == "$1M");
  CHECK(usd_text(1'234'567) == "$1.23M");
  CHECK(usd_text(4.5e9) == "$4.5B");
  CHECK(usd_text(-2'500) == "-$2.5k");
  CHECK(usd_text(-0.0) == "$0.00");
  CHECK(usd_text(1.5e12) == "$1.5T");
  CHECK(usd_text(2e16) == "$20000T");
  CHECK(usd_text(std::numeric_limits<double>::infinity()) == "-");
  CHECK(usd_text(std::nan("")) == "-");
  CHECK(usd_text(1'000'412, 4) == "$1M");
  CHECK(usd_text(1'000'412, 7) == "$1.000412M");
  CHECK(energy_text(0.366) == "0.366 kWh");
  CHECK(energy_text(999.7) == "1 MWh");
  CHECK(energy_text(21e6) == "21000 MWh");
}
