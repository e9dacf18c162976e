// What the catalogs of named entries (models, GPUs, fabrics) share: a folder of JSON files, one
// entry per file, the file stem being the entry's id (docs/catalogs.md).
#pragma once

#include <filesystem>
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

}  // namespace simrun
