// Catalog folders: one JSON file per entry, file stem = id (see catalog_files.hpp).
#include "simrun/common/catalog_files.hpp"

#include <algorithm>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"

namespace simrun {

bool is_catalog_id(std::string_view id) {
  constexpr size_t kMaxIdBytes = 64;
  if (id.empty() || id.size() > kMaxIdBytes) return false;
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(id.front())) return false;
  return std::all_of(id.begin(), id.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.' || c == '+'; });
}

std::vector<std::filesystem::path> catalog_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) throw InputError(dir.string(), "", "cannot read the catalog folder (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  return files;
}

std::string catalog_id_of(const std::filesystem::path& file) {
  const std::string id = file.stem().string();
  if (!is_catalog_id(id))
    throw InputError(file.string(), "",
                     "the file name " + quoted_input(id) +
                         " is not a catalog id (the id is the file stem: " + kCatalogIdRule + ")");
  return id;
}

std::vector<std::string> read_aliases(JsonReader& reader) {
  std::vector<std::string> aliases;
  if (!reader.has("aliases")) return aliases;
  const nlohmann::json& list = reader.raw("aliases");
  const std::string rule = std::string("a list of other names, each ") + kCatalogIdRule;
  if (!list.is_array()) reader.fail("aliases", "expected " + rule);
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string() || !is_catalog_id(list[i].get<std::string>()))
      reader.fail("aliases[" + std::to_string(i) + "]", "is not a name (" + rule + ")");
    aliases.push_back(list[i].get<std::string>());
  }
  return aliases;
}

std::string nearest_id(const std::string& name,
                       const std::map<std::string, std::vector<std::string>>& aliases_by_id) {
  std::vector<std::string> names, ids;
  for (const auto& [id, aliases] : aliases_by_id) {
    names.push_back(id);
    ids.push_back(id);
    for (const std::string& alias : aliases) {
      names.push_back(alias);
      ids.push_back(id);
    }
  }
  const std::string nearest = nearest_name(name, names);
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == nearest) return ids[i];
  return "";
}

}  // namespace simrun
