// Out-of-line pieces of error.hpp.
#include "simrun/common/error.hpp"

namespace simrun {

void assertion_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": assertion `" + expr + "` failed" +
                      (msg.empty() ? "" : ": " + msg));
}

}  // namespace simrun
