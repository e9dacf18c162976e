// What the catalogs of named entries (models, GPUs, fabrics) share: a folder of JSON files, one
// entry per file, the file stem being the entry's id (docs/catalogs.md).
#pragma once

#include <filesystem>
#include <map>
#include <system_error>
#include <string>
#include <string_view>
#include <vector>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"

namespace simrun {

// A catalog id (a catalog file's stem, or the "id" of a GPU or fabric defined inline in a
// scenario): 1 to 64 letters, digits, '-', '_', '.' or '+', starting with a letter or a digit, so
// that it reads the same in a report, a CSV cell and a file name. E.g. "h100-sxm".
bool is_catalog_id(std::string_view id);
// The rule above in words, for error lines.
inline constexpr const char* kCatalogIdRule =
    "1 to 64 letters, digits, '-', '_', '.' or '+', starting with a letter or a digit";

// The *.json files directly in `dir`, sorted (so the first error is always the same one). A
// folder that cannot be read is an InputError naming it.
std::vector<std::filesystem::path> catalog_files(const std::filesystem::path& dir);

// The id of a catalog file: its stem. An InputError naming the file when the stem is not a
// catalog id.
std::string catalog_id_of(const std::filesystem::path& file);

// Other names people use for an entry ("aliases": ["h100", "h100-sxm5"] in its file): a list of
// catalog ids, used for "did you mean" suggestions only (a scenario names an entry by its id, so a
// report's id is always the file's). Absent: none.
std::vector<std::string> read_aliases(JsonReader& reader);

// The id nearest to `name` among the ids and their aliases (nearest_name's ranking: case does not
// count, prefixes first, then edit distance), e.g. "ndr" -> "ib-ndr" by its alias "ndr".
std::string nearest_id(const std::string& name,
                       const std::map<std::string, std::vector<std::string>>& aliases_by_id);

// Whether a catalog folder must exist and hold entries (the shipped ones) or may be absent or
// empty (a user catalog's gpus/, fabrics/ or models/).
enum class FolderRule { required, optional };

// Reads every entry of the catalog folder `dir` into `out` (id → read(reader, id)) and its aliases
// into `aliases`; an id `out` already holds is refused, naming the file. `what` names the kind of
// entry in errors, e.g. "GPU". One reader for every catalog: models, GPUs, fabrics, shipped or not.
template <typename Spec, typename Read>
void read_catalog_folder(const std::filesystem::path& dir, const char* what, Read read, FolderRule rule,
                         std::map<std::string, Spec>& out,
                         std::map<std::string, std::vector<std::string>>& aliases) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (std::filesystem::exists(dir, ec)) throw InputError(dir.string(), "", "is not a directory");
    if (rule == FolderRule::optional) return;
    throw InputError(dir.string(), "", std::string(what) + " catalog directory not found");
  }
  const std::vector<std::filesystem::path> files = catalog_files(dir);
  if (files.empty() && rule == FolderRule::required)
    throw InputError(dir.string(), "", std::string("no *.json ") + what + " files in the catalog directory");
  for (const auto& path : files) {
    const std::string id = catalog_id_of(path);
    if (out.count(id))
      throw InputError(path.string(), "",
                       std::string("the ") + what + " id " + quoted_input(id) +
                           " is already in the catalog (an id means one entry: give this one another file "
                           "name, e.g. \"" +
                           id + "-custom.json\")");
    const nlohmann::json json = load_json_file(path);
    JsonReader reader(json, path.string());
    aliases[id] = read_aliases(reader);
    out.emplace(id, read(reader, id));
  }
}

}  // namespace simrun
