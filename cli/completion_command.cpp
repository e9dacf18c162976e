// `simrun completion bash|zsh`: prints a shell completion script, made at run time by walking the
// simrun app's subcommands and options (so it lists what this build has) and reading the catalogs
// (GPU, fabric, model and framework profile ids for --gpu, --fabric, --model, --framework). Load it with
//   source <(simrun completion bash)      or save it where the shell looks (README).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <array>
#include <cctype>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "command.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"

namespace simrun::cli {
namespace {

constexpr std::array<const char*, 2> kShells = {"bash", "zsh"};

// Arguments naming files (option or positional names as the walk meets them).
const std::set<std::string> kFileArguments = {"--trace",  "--calibration", "--dot",         "--catalog",
                                              "--prices", "--out",         "--write-bands", "scenario",
                                              "runs",     "plan",          "exercise"};

enum class ValueKind {
  none,   // a flag
  any,    // a number or text the shell cannot guess
  words,  // one of `words`
  files,  // a path, and `words` if any (--model: a catalog id or a config.json)
};

struct ArgumentCompletion {
  std::vector<std::string> names;  // "--tp", "--tensor-model-parallel-size"; a positional: its name
  std::string help;                // the help text's first sentence
  ValueKind value = ValueKind::none;
  std::vector<std::string> words;
  bool repeatable = false;  // --straggler 1:2 --straggler 5:2
};

struct CommandCompletion {
  std::string name, help;
  std::vector<ArgumentCompletion> options, positionals;
};

// Up to the first ". " before a capital ("e.g. llama3-70b" goes on).
std::string first_sentence(const std::string& help) {
  size_t end = help.find(". ");
  while (end != std::string::npos && end + 2 < help.size() &&
         !std::isupper(static_cast<unsigned char>(help[end + 2])))
    end = help.find(". ", end + 1);
  std::string s = help.substr(0, end);
  if (!s.empty() && s.back() == '.') s.pop_back();
  constexpr size_t kMax = 72;
  if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
  return s;
}

ArgumentCompletion argument_of(const CLI::Option& o, const Catalogs& catalogs) {
  ArgumentCompletion a;
  for (const std::string& n : o.get_snames()) a.names.push_back("-" + n);
  for (const std::string& n : o.get_lnames()) a.names.push_back("--" + n);
  if (a.names.empty()) a.names.push_back(o.get_name());  // a positional
  a.help = first_sentence(o.get_description());
  a.repeatable = o.get_expected_max() > 1 && o.nonpositional();
  if (o.get_expected_max() == 0) return a;  // a flag
  a.value = ValueKind::any;
  const std::string& name = a.names.back();
  if (kFileArguments.count(name)) a.value = ValueKind::files;
  if (name == "--gpu") {
    a.value = ValueKind::words;
    a.words = catalogs.hardware.gpu_ids();
  } else if (name == "--fabric") {
    a.value = ValueKind::words;
    a.words = catalogs.hardware.fabric_ids();
  } else if (name == "--framework") {
    a.value = ValueKind::words;
    a.words = catalogs.frameworks.ids();
  } else if (name == "--model") {
    a.value = ValueKind::files;
    a.words = catalogs.models.ids();
  } else if (name == "exercise") {  // `simrun textbook 4` or `simrun textbook FILE`
    a.words = {"1", "2", "3", "4", "all"};
  } else if (name == "shell") {
    a.value = ValueKind::words;
    a.words.assign(kShells.begin(), kShells.end());
  }
  return a;
}

// Hidden options and subcommands (group "") stay hidden.
CommandCompletion command_of(const CLI::App& app, const Catalogs& catalogs) {
  CommandCompletion c;
  c.name = app.get_name();
  c.help = first_sentence(app.get_description());
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;
    (o->nonpositional() ? c.options : c.positionals).push_back(argument_of(*o, catalogs));
  }
  return c;
}

std::string joined(const std::vector<std::string>& words, const char* separator) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : separator) + w;
  return s;
}

// Inside single quotes for bash and zsh.
std::string single_quoted(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// The words of `args` of kind `kind` as one case pattern ("--tp|--pp"), empty when none.
std::string case_pattern(const std::vector<ArgumentCompletion>& args, ValueKind kind) {
  std::vector<std::string> names;
  for (const ArgumentCompletion& a : args)
    if (a.value == kind && a.words.empty())
      for (const std::string& n : a.names) names.push_back(n);
  return joined(names, "|");
}

// One subcommand's case arm: its options, the value kind of the word after each, its positionals.
void print_bash_command(const CommandCompletion& c, const std::string& pattern, std::ostream& out) {
  std::vector<std::string> options;
  for (const ArgumentCompletion& a : c.options)
    for (const std::string& n : a.names) options.push_back(n);
  fmt::print(out, "    {})\n      opts={}\n      case \"$prev\" in\n", pattern,
             single_quoted(joined(options, " ")));
  for (const ArgumentCompletion& a : c.options)
    if (!a.words.empty())
      fmt::print(out, "        {}) mode=value; values={};{} ;;\n", joined(a.names, "|"),
                 single_quoted(joined(a.words, " ")), a.value == ValueKind::files ? " files=1" : "");
  if (const std::string files = case_pattern(c.options, ValueKind::files); !files.empty())
    fmt::print(out, "        {}) mode=value; files=1 ;;\n", files);
  if (const std::string any = case_pattern(c.options, ValueKind::any); !any.empty())
    fmt::print(out, "        {}) mode=value ;;\n", any);
  fmt::print(out, "      esac\n");
  std::vector<std::string> words;
  bool files = false;
  for (const ArgumentCompletion& a : c.positionals) {
    words.insert(words.end(), a.words.begin(), a.words.end());
    files = files || a.value == ValueKind::files;
  }
  if (!words.empty())
    fmt::print(out, "      [[ $mode == value ]] || values={}\n", single_quoted(joined(words, " ")));
  if (files) fmt::print(out, "      [[ $mode == value ]] || files=1\n");
  fmt::print(out, "      ;;\n");
}

void print_bash(const CommandCompletion& root, const std::vector<CommandCompletion>& subs,
                std::ostream& out) {
  std::vector<std::string> names;
  for (const CommandCompletion& s : subs) names.push_back(s.name);
  fmt::print(out,
             "# bash completion for simrun, made by `simrun completion bash` from this build's subcommands,\n"
             "# options and catalogs. Load it with: source <(simrun completion bash)\n"
             "_simrun() {{\n"
             "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"\" sub=\"\" i word\n"
             "  (( COMP_CWORD > 0 )) && prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
             "  # --flag=value reaches us split at '=' (COMP_WORDBREAKS).\n"
             "  if [[ $cur == \"=\" ]]; then\n"
             "    cur=\"\"\n"
             "  elif [[ $prev == \"=\" ]] && (( COMP_CWORD > 1 )); then\n"
             "    prev=\"${{COMP_WORDS[COMP_CWORD-2]}}\"\n"
             "  fi\n"
             "  # The subcommand; a scenario file first is `simrun simulate SCENARIO`.\n"
             "  for (( i = 1; i < COMP_CWORD; i++ )); do\n"
             "    word=\"${{COMP_WORDS[i]}}\"\n"
             "    [[ $word == -* ]] && continue\n"
             "    case \"$word\" in\n"
             "      {}) sub=\"$word\" ;;\n"
             "      *) sub=simulate ;;\n"
             "    esac\n"
             "    break\n"
             "  done\n"
             "  local opts=\"\" values=\"\" files=0 mode=\"\"\n"
             "  case \"$sub\" in\n",
             joined(names, "|"));
  for (const CommandCompletion& s : subs) print_bash_command(s, s.name, out);
  CommandCompletion top = root;
  top.positionals.push_back({{"subcommand"}, "", ValueKind::files, names, false});
  print_bash_command(top, "\"\"", out);
  fmt::print(out,
             "  esac\n"
             "  COMPREPLY=()\n"
             "  if [[ $mode != value && $cur == -* ]]; then\n"
             "    mapfile -t COMPREPLY < <(compgen -W \"$opts\" -- \"$cur\")\n"
             "    return 0\n"
             "  fi\n"
             "  [[ -n $values ]] && mapfile -t COMPREPLY < <(compgen -W \"$values\" -- \"$cur\")\n"
             "  if (( files )); then\n"
             "    compopt -o filenames 2>/dev/null\n"
             "    mapfile -t -O \"${{#COMPREPLY[@]}}\" COMPREPLY < <(compgen -f -- \"$cur\")\n"
             "  fi\n"
             "  return 0\n"
             "}}\n"
             "complete -F _simrun simrun\n");
}

// zsh's _arguments: '--tp[Tensor-parallel size]:value: ', '1:scenario:_files'.
std::string zsh_help(const std::string& help) {
  std::string s;
  for (char ch : help) s += ch == '[' ? '(' : ch == ']' ? ')' : ch == '\\' ? '/' : ch;
  return s;
}

std::string zsh_action(const ArgumentCompletion& a) {
  const std::string words = joined(a.words, " ");
  switch (a.value) {
    case ValueKind::words:
      return "(" + words + ")";
    case ValueKind::files:
      return a.words.empty() ? "_files" : "{compadd -- " + words + "; _files}";
    default:
      return " ";
  }
}

void print_zsh_arguments(const CommandCompletion& c, const std::string& indent, std::ostream& out) {
  fmt::print(out, "{}_arguments -s", indent);
  for (const ArgumentCompletion& a : c.options)
    for (const std::string& n : a.names) {
      std::string spec = (a.repeatable ? "*" : "") + n + "[" + zsh_help(a.help) + "]";
      if (a.value != ValueKind::none) spec += ":" + n.substr(n.find_first_not_of('-')) + ":" + zsh_action(a);
      fmt::print(out, " \\\n{}  {}", indent, single_quoted(spec));
    }
  for (size_t i = 0; i < c.positionals.size(); ++i) {
    const ArgumentCompletion& a = c.positionals[i];
    fmt::print(out, " \\\n{}  {}", indent,
               single_quoted(fmt::format("{}:{}:{}", i + 1, a.names[0], zsh_action(a))));
  }
  fmt::print(out, "\n");
}

void print_zsh(const CommandCompletion& root, const std::vector<CommandCompletion>& subs, std::ostream& out) {
  fmt::print(out,
             "#compdef simrun\n"
             "# zsh completion for simrun, made by `simrun completion zsh` from this build's subcommands,\n"
             "# options and catalogs. Load it with: source <(simrun completion zsh) (after compinit), or\n"
             "# save it as _simrun in a folder on $fpath.\n"
             "_simrun() {{\n"
             "  local curcontext=\"$curcontext\" state line\n"
             "  typeset -A opt_args\n"
             "  local -a subcommands\n"
             "  subcommands=(\n");
  for (const CommandCompletion& s : subs) fmt::print(out, "    {}\n", single_quoted(s.name + ":" + s.help));
  fmt::print(out, "  )\n  _arguments -C");
  for (const ArgumentCompletion& a : root.options)
    for (const std::string& n : a.names)
      fmt::print(out, " \\\n    {}", single_quoted("(- *)" + n + "[" + zsh_help(a.help) + "]"));
  fmt::print(out,
             " \\\n    '1: :->command' \\\n    '*:: :->args'\n"
             "  case $state in\n"
             "    command)\n"
             "      _describe -t commands 'simrun subcommand' subcommands\n"
             "      _files\n"
             "      ;;\n"
             "    args)\n"
             "      case $line[1] in\n");
  const CommandCompletion* simulate = nullptr;
  for (const CommandCompletion& s : subs) {
    if (s.name == "simulate") simulate = &s;
    fmt::print(out, "        {})\n", s.name);
    print_zsh_arguments(s, "          ", out);
    fmt::print(out, "          ;;\n");
  }
  if (simulate) {  // `simrun SCENARIO.json ...`: the scenario is already given
    CommandCompletion options_only = *simulate;
    options_only.positionals.clear();
    fmt::print(out, "        *)\n");
    print_zsh_arguments(options_only, "          ", out);
    fmt::print(out, "          ;;\n");
  }
  fmt::print(out,
             "      esac\n"
             "      ;;\n"
             "  esac\n"
             "}}\n"
             "if [[ \"${{funcstack[1]}}\" == _simrun ]]; then\n"
             "  _simrun \"$@\"\n"
             "else\n"
             "  compdef _simrun simrun\n"
             "fi\n");
}

}  // namespace

Command add_completion_command(CLI::App& root, const CliEnv& env) {
  auto shell = std::make_shared<std::string>();
  auto catalog_dirs = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = root.add_subcommand(
      "completion", "Print a shell completion script (bash or zsh): source <(simrun completion bash)");
  cmd->add_option("shell", *shell, "The shell: bash or zsh")->required();
  add_catalog_option(*cmd, *catalog_dirs);
  return {cmd, [shell, catalog_dirs, env, &root] {
            if (*shell != kShells[0] && *shell != kShells[1])
              throw InputError("command line", "shell", quoted_input(*shell) + " is not bash or zsh");
            const Catalogs catalogs = load_cli_catalogs(env, *catalog_dirs);  // user catalogs' ids too
            const CommandCompletion top = command_of(root, catalogs);
            std::vector<CommandCompletion> subs;
            for (const CLI::App* sub :
                 root.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
              subs.push_back(command_of(*sub, catalogs));
            if (*shell == "bash")
              print_bash(top, subs, std::cout);
            else
              print_zsh(top, subs, std::cout);
            return 0;
          }};
}

}  // namespace simrun::cli
