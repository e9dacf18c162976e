// Strict JSON reading; see json_reader.hpp.
#include "simrun/common/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/text.hpp"

namespace simrun {
namespace {

std::string type_name(const nlohmann::json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number()) return "number";
  return j.type_name();
}

std::string format_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The number literals of a JSON text, in document order (strings and comments skipped), so
// the parser's value events can be matched with what was written.
std::vector<std::string_view> number_literals(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = std::min(text.size(), text.find('\n', i));
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t start = i;
      while (i < text.size() && std::string_view("0123456789+-.eE").find(text[i]) != std::string_view::npos)
        ++i;
      out.push_back(text.substr(start, i - start));
    } else {
      ++i;
    }
  }
  return out;
}

// An integer literal (no fraction, no exponent) that the parser could only hold as a double:
// past the 64-bit range, where the value read would not be the value written.
bool is_integer_literal(std::string_view literal) {
  return literal.find_first_of(".eE") == std::string_view::npos;
}

// Objects and arrays open at once, at most (parse_json_text).
constexpr size_t kMaxJsonDepth = 64;

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  // A key given twice in one object would silently keep the last value: refuse it, naming
  // the object's path. The parser reports each object's start and end and every key.
  // Each open object or array: its keys so far (objects), its elements so far (arrays), and its
  // name in the path ("layout", or "[3]" for an array's fourth element).
  struct Open {
    std::string name;
    bool array = false;
    size_t elements = 0;
    std::set<std::string> keys;
  };
  std::vector<Open> open;  // outermost first
  std::string pending;     // the key whose value comes next
  const std::vector<std::string_view> numbers = number_literals(text);
  size_t next_number = 0;
  // The name of the value that starts now: its key, or its index in the array it is in.
  auto starting = [&]() {
    if (open.empty() || !open.back().array) return printable(pending);
    return "[" + std::to_string(open.back().elements++) + "]";
  };
  // The path of `last` under the open objects and arrays, e.g. "[1].layout.tp".
  // At most `levels` of the open ones, then "…" for the rest.
  auto field_of = [&](const std::string& last, size_t levels = kMaxJsonDepth) {
    std::string field;
    const auto append = [&field](const std::string& part) {
      if (part.empty()) return;
      field += (field.empty() || part.front() == '[' ? "" : ".") + part;
    };
    for (size_t i = 0; i < std::min(levels, open.size()); ++i) append(open[i].name);
    if (open.size() > levels) return field + "…";
    append(last);
    return field;
  };
  const nlohmann::json::parser_callback_t check_keys = [&](int /*depth*/, nlohmann::json::parse_event_t event,
                                                           nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start: {
        // Deeper values would be copied, compared and echoed by recursion; no input of simrun's
        // needs more than a few levels.
        if (open.size() >= kMaxJsonDepth)
          throw InputError(file, field_of("", 4),
                           "nested deeper than " + std::to_string(kMaxJsonDepth) +
                               " levels (simrun's files are a few levels deep)");
        Open o;
        o.name = starting();
        o.array = event == Event::array_start;
        open.push_back(std::move(o));
        pending.clear();
        break;
      }
      case Event::object_end:
      case Event::array_end:
        open.pop_back();
        break;
      case Event::key: {
        const std::string key = parsed.get<std::string>();
        if (!open.empty() && !open.back().keys.insert(key).second)
          throw InputError(file, field_of(printable(key)), "given twice in one object (keep one)");
        pending = key;
        break;
      }
      case Event::value: {
        const std::string name = starting();
        if (parsed.is_number() && next_number < numbers.size()) {
          const std::string_view literal = numbers[next_number++];
          if (parsed.is_number_float() && is_integer_literal(literal))
            throw InputError(file, field_of(name),
                             printable(literal) +
                                 " is past the 64-bit integer range (|x| < 2^63, "
                                 "or a number with an exponent, e.g. 1e20)");
        }
        pending.clear();
        break;
      }
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, check_keys, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const size_t offset = e.byte == 0 ? 0 : std::min(text.size(), e.byte - 1);
    int line = 1, column = 1;
    for (size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    // "[json.exception.parse_error.101] parse error at line 1, column 5: <detail>": keep the detail
    // (which may itself hold ": ", as in "last read: 'N'").
    const std::string what = e.what();
    const auto at = what.find("column");
    const auto colon = what.find(": ", at == std::string::npos ? 0 : at);
    const std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    throw InputError(file, "",
                     "malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(column) +
                         ": " + detail);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number literal beyond a double's range, e.g. 1e999: the parser stops on it before its
    // value event, so the open objects and the pending key still name its field, and it is the
    // next literal of the scan.
    const std::string literal =
        next_number < numbers.size() ? printable(numbers[next_number]) : std::string("a number");
    throw InputError(file, field_of(starting()),
                     literal + " is out of range (JSON numbers must fit a double, |x| < 1.8e308)");
  }
}

nlohmann::json load_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path.string(), "", "is a directory, not a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "", "cannot open file (does it exist and is it readable?)");
  // Read in blocks up to a bound: a device such as /dev/zero never ends, and no input of
  // simrun's comes near it.
  constexpr size_t kMaxBytes = size_t{256} << 20;
  std::string text;
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxBytes)
      throw InputError(path.string(), "", "larger than 256 MiB: not a simrun JSON input");
  }
  if (in.bad()) throw InputError(path.string(), "", "read error (a regular, readable file is expected)");
  return parse_json_text(text, path.string());
}

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      const int substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  // Case does not count (H100 is h100), a name the candidate starts with ranks first (h100 is
  // nearer h100-sxm than h200), then edit distance; a name far longer than any id is cut first
  // so that a megabyte of input costs no more than a short one.
  const std::string wanted = ascii_lower(name.substr(0, 256));
  std::string best;
  std::pair<int, int> best_rank{2, 1 << 30};
  for (const auto& c : candidates) {
    const std::string id = ascii_lower(c);
    const bool prefix = wanted.size() >= 2 && id.rfind(wanted, 0) == 0;
    const std::pair<int, int> rank{prefix ? 0 : 1, edit_distance(wanted, id)};
    if (rank < best_rank) {
      best_rank = rank;
      best = c;
    }
  }
  return best;
}

std::string join_names(const std::vector<std::string>& names, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? sep : "") + names[i];
  return out;
}

JsonReader::JsonReader(const nlohmann::json& object, std::string file, std::string path)
    : m_object(object), m_file(std::move(file)), m_path(std::move(path)) {
  if (!m_object.is_object())
    throw InputError(m_file, m_path.empty() ? "(top level)" : m_path,
                     "expected a JSON object, got " + type_name(m_object));
}

std::string JsonReader::path_of(const std::string& key) const {
  // Keys are input too: echoed safe and short.
  return m_path.empty() ? printable(key) : m_path + "." + printable(key);
}

void JsonReader::fail(const std::string& key, const std::string& why) const {
  throw InputError(m_file, path_of(key), why);
}

bool JsonReader::has(const std::string& key) {
  m_known.insert(key);
  return m_object.contains(key) && !m_object.at(key).is_null();
}

void JsonReader::accept(const std::string& key) { m_known.insert(key); }

const nlohmann::json& JsonReader::require(const std::string& key) {
  m_known.insert(key);
  if (!has(key)) fail(key, "missing required field");
  return m_object.at(key);
}

const nlohmann::json& JsonReader::raw(const std::string& key) { return require(key); }

int64_t JsonReader::integer(const std::string& key, int64_t min, int64_t max) {
  const auto& v = require(key);
  const std::string range = "(an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "])";
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))  // as written, not wrapped
      fail(key, std::to_string(v.get<uint64_t>()) + " is out of range " + range);
    const int64_t x = v.get<int64_t>();
    if (x < min || x > max) fail(key, std::to_string(x) + " is out of range " + range);
    return x;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= double(min) && d <= double(max))
      return static_cast<int64_t>(d);
    fail(key, format_number(d) + " is not allowed " + range);
  }
  fail(key, "expected an integer, got " + type_name(v) + " " + range);
}

int64_t JsonReader::integer_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  m_known.insert(key);
  return has(key) ? integer(key, min, max) : fallback;
}

double JsonReader::number(const std::string& key, double min, double max) {
  const auto& v = require(key);
  const std::string range = "(a number in [" + format_number(min) + ", " + format_number(max) + "])";
  if (!v.is_number()) fail(key, "expected a number, got " + type_name(v) + " " + range);
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < min || d > max) fail(key, format_number(d) + " is out of range " + range);
  return d;
}

double JsonReader::number_or(const std::string& key, double fallback, double min, double max) {
  m_known.insert(key);
  return has(key) ? number(key, min, max) : fallback;
}

std::optional<double> JsonReader::optional_number(const std::string& key, double min, double max) {
  m_known.insert(key);
  if (!has(key)) return std::nullopt;
  return number(key, min, max);
}

bool JsonReader::boolean_or(const std::string& key, bool fallback) {
  m_known.insert(key);
  if (!has(key)) return fallback;
  const auto& v = m_object.at(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + type_name(v));
  return v.get<bool>();
}

std::string JsonReader::string(const std::string& key) {
  const auto& v = require(key);
  if (!v.is_string()) fail(key, "expected a string, got " + type_name(v));
  std::string text = v.get<std::string>();
  // Every string a file gives is printed somewhere (a table, a warning, a trace's names).
  if (printable(text, std::string::npos) != text)
    fail(key, quoted_input(text) + " holds control characters or bytes that are not UTF-8 (give plain text)");
  return text;
}

std::string JsonReader::string_or(const std::string& key, const std::string& fallback) {
  m_known.insert(key);
  return has(key) ? string(key) : fallback;
}

std::string JsonReader::choice_or(const std::string& key, const std::string& fallback,
                                  const std::vector<std::string>& allowed) {
  const std::string value = string_or(key, fallback);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
    fail(key, quoted_input(value) + " is not one of " + join_names(allowed, "|") + " (did you mean \"" +
                  nearest_name(value, allowed) + "\"?)");
  return value;
}

JsonReader JsonReader::object(const std::string& key) {
  return JsonReader(require(key), m_file, path_of(key));
}

void JsonReader::finish() const {
  std::vector<std::string> known(m_known.begin(), m_known.end());
  for (const auto& item : m_object.items()) {
    if (m_known.count(item.key())) continue;
    fail(item.key(), "unknown field (did you mean \"" + nearest_name(item.key(), known) +
                         "\"? known: " + join_names(known) + ")");
  }
}

}  // namespace simrun
