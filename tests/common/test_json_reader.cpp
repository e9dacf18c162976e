// JsonReader: strict typed reading with one-line errors naming file and field path.
#include <catch2/catch.hpp>
#include <filesystem>

#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"

using simrun::InputError;
using simrun::JsonReader;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("typed getters check type and range and name the dotted path", "[common][json]") {
  const auto doc =
      nlohmann::json::parse(R"({"layout": {"tp": 8, "pp": "4", "mb": 0, "f": 2.5, "big": 1e30}})");
  JsonReader top(doc, "s.json");
  JsonReader layout = top.object("layout");
  CHECK(layout.integer("tp", 1, 64) == 8);
  CHECK(error_of([&] { layout.integer("pp", 1, 64); }) ==
        "s.json: layout.pp: expected an integer, got string (an integer in [1, 64])");
  CHECK(error_of([&] { layout.integer("mb", 1, 64); }).find("layout.mb: 0 is out of range") !=
        std::string::npos);
  CHECK(error_of([&] { layout.integer("f", 1, 64); }).find("layout.f: 2.5 is not allowed") !=
        std::string::npos);
  CHECK(error_of([&] { layout.number("big", 0, 1e9); }).find("out of range") != std::string::npos);
  CHECK(error_of([&] { layout.integer("missing", 1, 2); }) ==
        "s.json: layout.missing: missing required field");
  CHECK(layout.integer_or("absent", 7, 1, 9) == 7);
}

TEST_CASE("finish() refuses unknown keys and suggests the nearest known one", "[common][json]") {
  const auto doc = nlohmann::json::parse(R"({"tp": 8, "ppp": 2})");
  JsonReader r(doc, "s.json", "layout");
  r.integer("tp", 1, 8);
  r.integer_or("pp", 1, 1, 8);
  const std::string e = error_of([&] { r.finish(); });
  CHECK(e.find("s.json: layout.ppp: unknown field (did you mean \"pp\"?") == 0);
}

TEST_CASE("a null field reads as absent, and asking for it makes it known", "[common][json]") {
  // Found by fuzzing the examples: "fabric": null was refused as an unknown field (known: gpu,
  // gpus_per_node, num_gpus), since only the getters, not has(), recorded a key.
  const auto doc = nlohmann::json::parse(R"({"gpu": "h100-sxm", "fabric": null, "nics": null})");
  JsonReader r(doc, "s.json");
  CHECK(r.string("gpu") == "h100-sxm");
  CHECK_FALSE(r.has("fabric"));
  CHECK(r.integer_or("nics", 8, 1, 72) == 8);
  CHECK_NOTHROW(r.finish());
}

TEST_CASE("choices list the allowed values", "[common][json]") {
  const auto doc = nlohmann::json::parse(R"({"recompute": "ful"})");
  JsonReader r(doc, "s.json", "layout");
  const std::string e = error_of([&] { r.choice_or("recompute", "none", {"none", "selective", "full"}); });
  CHECK(e.find("none|selective|full") != std::string::npos);
  CHECK(e.find("did you mean \"full\"") != std::string::npos);
}

TEST_CASE("malformed JSON reports line and column", "[common][json]") {
  const std::string e = error_of([] { simrun::parse_json_text("{\n  \"a\": 1,\n  \"b\": ]\n}", "x.json"); });
  CHECK(e.find("x.json: malformed JSON at line 3, column 8") == 0);
  // The parser's detail is kept whole, colons and all.
  const std::string nan = error_of([] { simrun::parse_json_text(R"({"a": NaN})", "x.json"); });
  CHECK(nan.find("invalid literal; last read: '") != std::string::npos);
}

TEST_CASE("a key given twice in one object is refused with its path", "[common][json]") {
  const std::string e =
      error_of([] { simrun::parse_json_text(R"({"layout": {"tp": 999, "tp": 1}})", "x.json"); });
  CHECK(e == "x.json: layout.tp: given twice in one object (keep one)");
  // The same key in sibling objects (array elements, different sections) is fine.
  CHECK_NOTHROW(simrun::parse_json_text(R"({"a": [{"b": 1}, {"b": 2}], "c": {"b": 3}})", "x.json"));
  // In a list, the path names the element: a file of rows says which row.
  CHECK(error_of([] { simrun::parse_json_text(R"([{"id": "a"}, {"id": "b", "id": "c"}])", "x.json"); }) ==
        "x.json: [1].id: given twice in one object (keep one)");
}

TEST_CASE("a literal past 64 bits in a list is named by its element's path", "[common][json]") {
  CHECK(error_of([] {
          simrun::parse_json_text(R"([{"id": "a"}, {"id": "b", "notes": 1000000000000000000000000}])",
                                  "x.json");
        }).find("x.json: [1].notes: 1000000000000000000000000 is past") == 0);
  CHECK(error_of([] {
          simrun::parse_json_text(R"({"a": [1, [2, 30000000000000000000000]]})", "x.json");
        }).find("x.json: a[1][1]: 30000000000000000000000 is past") == 0);
}

TEST_CASE("an endless device is refused after a bound, not read forever", "[common][json]") {
  if (!std::filesystem::exists("/dev/zero")) return;
  const std::string e = error_of([] { simrun::load_json_file("/dev/zero"); });
  CHECK(e.find("/dev/zero: larger than 256 MiB") == 0);
}

TEST_CASE("a number beyond a double's range is bad input, not an internal error", "[common][json]") {
  const std::string e = error_of([] { simrun::parse_json_text(R"({"layout": {"ep": 1e999}})", "x.json"); });
  CHECK(e == "x.json: layout.ep: 1e999 is out of range (JSON numbers must fit a double, |x| < 1.8e308)");
  // In an array, after other numbers: the element is named.
  const std::string in_array =
      error_of([] { simrun::parse_json_text(R"({"a": [1, 2.5], "b": {"c": [3, -4e400]}})", "y.json"); });
  CHECK(in_array.find("y.json: b.c[1]: -4e400 is out of range") == 0);
}

TEST_CASE("a value nested past 64 levels is bad input, not a stack overflow when echoed", "[common][json]") {
  const std::string deep = R"({"prices": {"h100": )" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  const std::string e = error_of([&] { simrun::parse_json_text(deep, "x.json"); });
  CHECK(e == "x.json: prices.h100[0]…: nested deeper than 64 levels (simrun's files are a few levels deep)");
  CHECK_NOTHROW(simrun::parse_json_text(std::string(64, '[') + std::string(64, ']'), "x.json"));
  CHECK_THROWS(simrun::parse_json_text(std::string(65, '[') + std::string(65, ']'), "x.json"));
}

TEST_CASE("edit distance and nearest name", "[common][json]") {
  CHECK(simrun::edit_distance("kitten", "sitting") == 3);
  CHECK(simrun::edit_distance("", "abc") == 3);
  CHECK(simrun::nearest_name("h100sxm", {"a100-80gb", "h100-sxm", "h200"}) == "h100-sxm");
}

TEST_CASE("an integer literal past 64 bits is refused as written, found among arrays, strings and comments",
          "[common][json]") {
  const std::string text = R"({
    "a": [1, 2.5, 3e2, -4],  // 5 in a comment
    "s": "6 in a string \" 7",
    /* 8 */ "b": {"c": 0.5, "d": 123456789012345678901234}
  })";
  CHECK(
      error_of([&] { simrun::parse_json_text(text, "x.json"); }) ==
      "x.json: b.d: 123456789012345678901234 is past the 64-bit integer range (|x| < 2^63, or a number with "
      "an exponent, e.g. 1e20)");
  // Within 64 bits, or written with an exponent, the value is read.
  const auto doc =
      simrun::parse_json_text(R"({"a": [1, 2.5], "u": 18446744073709551615, "e": 1e24})", "y.json");
  CHECK(doc["u"].get<uint64_t>() == 18446744073709551615u);
  CHECK(doc["e"].get<double>() == 1e24);
}
