// Catalog folders: one JSON file per entry, file stem = id (see catalog_files.hpp).
#include "simrun/common/catalog_files.hpp"

#include <algorithm>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

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
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
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

}  // namespace simrun
