// What the catalogs of named entries (models, GPUs, fabrics) share: a folder of JSON files, one
// entry per file, the file stem being the entry's id (docs/catalogs.md).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace simrun {

// A catalog id (a catalog file's stem, or the "id" of a GPU or fabric defined inline in a
// scenario): 1 to 64 letters, digits, '-', '_', '.' or '+', starting with a letter or a digit, so
// that it reads the same in a report, a CSV cell and a file name. E.g. "h100-sxm".
bool is_catalog_id(std::string_view id);
// The rule above in words, for error lines.
inline constexpr const char* kCatalogIdRule =
    "1 to 64 letters, digits, '-', '_', '.' or '+', starting with a letter or a digit";

// The *.json files directly in `dir`, sorted (so the first error is always the same one).
std::vector<std::filesystem::path> catalog_files(const std::filesystem::path& dir);

// The id of a catalog file: its stem. An InputError naming the file when the stem is not a
// catalog id.
std::string catalog_id_of(const std::filesystem::path& file);

// Other names people use for an entry ("aliases": ["h100", "h100-sxm5"] in its file): a list of
// catalog ids, used for "did you mean" suggestions only (a scenario names an entry by its id, so a
// report's id is always the file's). Absent: none.
class JsonReader;
std::vector<std::string> read_aliases(JsonReader& reader);

// The id nearest to `name` among the ids and their aliases (nearest_name's ranking: case does not
// count, prefixes first, then edit distance), e.g. "ndr" -> "ib-ndr" by its alias "ndr".
std::string nearest_id(const std::string& name,
                       const std::map<std::string, std::vector<std::string>>& aliases_by_id);

}  // namespace simrun
