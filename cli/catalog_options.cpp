// Where the catalogs come from on the command line: the shipped ones (CliEnv::data_dir), then the
// user catalog folders of SIMRUN_CATALOG and of --catalog (docs/catalogs.md).
#include <filesystem>
#include <string>
#include <vector>

#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun::cli {

void add_catalog_option(CLI::App& cmd, std::vector<std::string>& dirs) {
  cmd.add_option(
         "--catalog", dirs,
         "A user catalog folder with gpus/, fabrics/, models/ and frameworks/ subfolders of *.json entries (as in the "
         "shipped catalogs; ids must be new); repeatable, read after SIMRUN_CATALOG's folders")
      ->allow_extra_args(false)
      ->type_name("DIR");
}

Catalogs load_cli_catalogs(const CliEnv& env, const std::vector<std::string>& catalog_flags) {
  std::vector<std::filesystem::path> dirs = env.user_catalogs;
  std::error_code ec;
  for (const std::filesystem::path& dir : dirs)
    if (!std::filesystem::is_directory(dir, ec))
      throw InputError("environment", "SIMRUN_CATALOG",
                       "folder " + quoted_input(dir.string()) +
                           " not found (a colon-separated list of user catalog folders)");
  for (const std::string& dir : catalog_flags) {
    if (!std::filesystem::is_directory(dir, ec))
      throw InputError(
          "command line", "--catalog",
          "folder " + quoted_input(dir) +
              " not found (a folder with gpus/, fabrics/, models/ or frameworks/ subfolders of *.json entries)");
    dirs.emplace_back(dir);
  }
  return load_catalogs(env.data_dir, dirs);
}

}  // namespace simrun::cli
