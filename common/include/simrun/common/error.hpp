// Errors shared by every simrun library: bad input (InputError, exit 2 from main) and
// invariant checks (SIMRUN_ASSERT, always on: a broken invariant is an internal error, exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace simrun {

// Bad input. `file` names where the value came from: the file read (a scenario, a catalog entry,
// a config.json), or, for values a caller passed in code, the typed input that held them:
//   "overrides"  ScenarioOverrides (a scenario built without a file), fields as in a scenario
//   "cluster"    ClusterGraphSpec           "collective"  CollectiveRequest
//   "sweep"      SweepOptions               "step"        StepSimOptions
// `field` is the dotted path inside it, lists indexed ("layout.tp", "channels",
// "stragglers[0].rank"); `why` says what is wrong and, in parentheses, what would be right.
// Libraries never name a command-line flag, in `field` or in `why`: the command line maps
// fields to its flags when it prints (cli/flag_names.cpp). Only main() catches it; it prints
// `file: field: why` and exits 2. That line is safe to print whatever the input held: control
// characters escaped, invalid UTF-8 shown as bytes, at most kErrorLineMaxBytes (echo.hpp).
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, std::string why)
      : std::runtime_error(format_line(file, field, why)),
        m_file(std::move(file)),
        m_field(std::move(field)),
        m_why(std::move(why)) {}

  const std::string& file() const { return m_file; }
  const std::string& field() const { return m_field; }
  const std::string& why() const { return m_why; }

 private:
  static std::string format_line(const std::string& file, const std::string& field, const std::string& why);

  std::string m_file;
  std::string m_field;
  std::string m_why;
};

// A broken invariant inside simrun (a bug, not bad input).
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace simrun

#define SIMRUN_ASSERT(cond, msg)                                               \
  do {                                                                         \
    if (!(cond)) ::simrun::assertion_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
