// Out-of-line pieces of error.hpp.
#include "simrun/common/error.hpp"

#include "simrun/common/echo.hpp"

namespace simrun {

std::string InputError::format_line(const std::string& file, const std::string& field, const std::string& why) {
  std::string line = file.empty() ? std::string("input") : file;
  if (!field.empty()) line += ": " + field;
  return printable(line + ": " + why, kErrorLineMaxBytes);
}

void assertion_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": assertion `" + expr + "` failed" +
                      (msg.empty() ? "" : ": " + msg));
}

}  // namespace simrun
