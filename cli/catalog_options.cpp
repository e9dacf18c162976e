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
  cmd.add_option("--catalog", dirs,
                 "A user catalog folder with gpus/, fabrics/, models/ and frameworks/ subfolders of *.json "
                 "entries (as in the "
                 "shipped catalogs; ids must be new); repeatable, read after SIMRUN_CATALOG's folders")
      ->allow_extra_args(false)
      ->type_name("DIR");
}

Catalogs load_cli_catalogs(const CliEnv& env, const std::vector<std::string>& catalog_flags) {
  // A data folder named by SIMRUN_DATA_DIR (main.cpp data_dir) is checked as the variable's.
  if (env.data_dir_from_env) {
    std::error_code ec;
    for (const char* part : {"models/catalog", "topologies/gpus", "topologies/fabrics",
                             "sim/framework/profiles", "topologies/architectures.json"})
      if (std::string_view(part).ends_with(".json")
              ? !std::filesystem::is_regular_file(env.data_dir / part, ec)
              : !std::filesystem::is_directory(env.data_dir / part, ec))
        throw InputError("environment", "SIMRUN_DATA_DIR",
                         "folder " + quoted_input(env.data_dir.string()) + " holds no " + part +
                             " (a data folder holds the shipped catalogs: docs/catalogs.md)");
  }
  // Each folder checked by the library's rule, its error named by where the folder came from.
  const auto check = [](const std::filesystem::path& dir, const char* source, const char* field) {
    try {
      check_user_catalog_folder(dir);
    } catch (const InputError& e) {
      throw InputError(source, field, "folder " + quoted_input(dir.string()) + ": " + e.why());
    }
  };
  // A folder named twice (in SIMRUN_CATALOG and again by --catalog, or as "dir" and "dir/") is
  // read once: its entries are not new ids the second time.
  std::vector<std::filesystem::path> dirs;
  const auto add = [&](const std::filesystem::path& dir) {
    std::error_code ec;
    for (const std::filesystem::path& seen : dirs)
      if (std::filesystem::equivalent(seen, dir, ec)) return;
    dirs.push_back(dir);
  };
  for (const std::filesystem::path& dir : env.user_catalogs) {
    check(dir, "environment", "SIMRUN_CATALOG");
    add(dir);
  }
  for (const std::string& dir : catalog_flags) {
    check(dir, "command line", "--catalog");
    add(dir);
  }
  return load_catalogs(env.data_dir, dirs);
}

}  // namespace simrun::cli
