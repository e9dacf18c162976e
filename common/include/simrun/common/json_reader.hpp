// Strict reading of JSON input files: every field is typed, range-checked and accounted for,
// and every problem becomes one InputError line `file: field.path: what is wrong (what is
// allowed)`. Unknown keys are refused with the nearest known key as a suggestion.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace simrun {

// Parses a JSON file; malformed JSON becomes an InputError naming line and column.
nlohmann::json load_json_file(const std::filesystem::path& path);
// Parses JSON text; `file` names it in errors.
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

// Edit distance, for "did you mean" suggestions.
int edit_distance(const std::string& a, const std::string& b);
// The candidate nearest to `name` (empty when there are none).
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);
// "a, b, c" — for "(known: ...)" parts of error lines.
std::string join_names(const std::vector<std::string>& names, const std::string& sep = ", ");

// Reads one JSON object. Each getter records the key as known; finish() refuses keys that no
// getter asked for. Children share the file name and extend the dotted path.
class JsonReader {
 public:
  JsonReader(const nlohmann::json& object, std::string file, std::string path = "");

  // Whether the key holds a value (null reads as absent, as the *_or getters take it); records
  // the key as known, like the getters, so that `"fabric": null` is an absent field, not an
  // unknown one.
  bool has(const std::string& key);
  // Marks a key as known without reading it (for fields handled elsewhere).
  void accept(const std::string& key);

  int64_t integer(const std::string& key, int64_t min, int64_t max);
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  double number(const std::string& key, double min, double max);
  double number_or(const std::string& key, double fallback, double min, double max);
  std::optional<double> optional_number(const std::string& key, double min, double max);
  bool boolean_or(const std::string& key, bool fallback);
  // A string field; control characters and bytes that are not UTF-8 are refused (it gets printed).
  std::string string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& fallback);
  // A string that must be one of `allowed`.
  std::string choice_or(const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& allowed);
  JsonReader object(const std::string& key);
  const nlohmann::json& raw(const std::string& key);

  // Throws on the first key no getter asked for, suggesting the nearest known key.
  void finish() const;

  const std::string& file() const { return m_file; }
  std::string path_of(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;

 private:
  const nlohmann::json& require(const std::string& key);

  const nlohmann::json& m_object;
  std::string m_file;
  std::string m_path;
  std::set<std::string> m_known;
};

}  // namespace simrun
