// The simrun command's subcommands on one CLI11 app (main() parses and runs; the tests walk
// every option of it): simulate, estimate, collective, topology, textbook, accuracy, completion, and
// plan and validate.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "command.hpp"
#include "simrun/common/echo.hpp"

namespace simrun::cli {
namespace {

std::string not_decimal(const std::string& text) {
  return quoted_input(text) + " is not a decimal number (sizes, counts and rates are written in decimal)";
}

// CLI11 reads an integer flag with strtoll(…, 0): a value past 64 bits saturates (`--tp
// 99999999999999999999` became 9223372036854775807 in the error it then got), a leading zero
// makes it octal (`--gpus 010` was 8) and 0x hexadecimal (`--gpus 0x10` was 16). Decimal digits
// are checked here first, leading zeros dropped; a radix prefix is refused; anything else is left
// to CLI11's conversion and its error.
std::string decimal_integer(std::string& text) {
  if (radix_prefixed(text)) return not_decimal(text);
  const size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (text.size() == sign || text.find_first_not_of("0123456789", sign) != std::string::npos) return "";
  const size_t first = std::min(text.find_first_not_of('0', sign), text.size() - 1);
  text = (text[0] == '-' ? "-" : "") + text.substr(first);
  int64_t value = 0;
  if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc())
    return text + " is out of range (beyond any 64-bit integer)";
  return "";
}

// CLI11 reads a number flag with strtod, which takes hexadecimal floats (`--tokens 0x1p40`).
std::string decimal_float(std::string& text) { return radix_prefixed(text) ? not_decimal(text) : ""; }

void guard_number_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type == "INT" || type == "N") option->transform(CLI::Validator(decimal_integer, ""));
    if (type == "FLOAT") option->transform(CLI::Validator(decimal_float, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) guard_number_options(*sub);
}

}  // namespace

std::vector<Command> add_commands(CLI::App& app, const CliEnv& env) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("simrun ") + SIMRUN_VERSION,
                       "Print \"simrun VERSION\" and exit");
  std::vector<Command> commands{
      add_simulate_command(app, env), add_estimate_command(app, env), add_collective_command(app, env),
      add_topology_command(app, env), add_textbook_command(app, env), add_accuracy_command(app, env),
      add_plan_command(app, env),     add_validate_command(app, env), add_completion_command(app, env),
  };
  guard_number_options(app);
  return commands;
}

bool radix_prefixed(std::string_view text) {
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.remove_prefix(1);
  return text.size() >= 2 && text[0] == '0' && std::string_view("xXbBoO").find(text[1]) != std::string_view::npos;
}

double leading_decimal(const std::string& text, size_t& used) {
  used = 0;
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || radix_prefixed(text)) return 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (!std::isfinite(v)) used = 0;
  return used == 0 ? 0 : v;
}

}  // namespace simrun::cli
