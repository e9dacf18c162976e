// `simrun validate` in a build without MPI (validate.hpp): it says how to get it.
#include "simrun/common/error.hpp"
#include "simrun/exec/validate.hpp"

namespace simrun::exec {

bool validate_available() { return false; }
bool cuda_backend_available() { return false; }

int run_validate(const std::function<ValidateRequest()>&, std::ostream&, std::ostream&) {
  throw InputError("command line", "validate",
                   "this simrun was built without MPI, which validate needs (Debian: apt-get install "
                   "libopenmpi-dev openmpi-bin, then rebuild)");
}

}  // namespace simrun::exec
