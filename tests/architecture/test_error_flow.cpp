// Errors flow one way: the libraries (common/, models/, topologies/, sim/) name the fields of
// their inputs, and only the command line (cli/) knows its flags (common/error.hpp). This reads
// the libraries' sources and fails on a string literal that names a flag.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Literal {
  std::string text;
  int line = 0;
};

// The string literals of C++ source text, comments and character literals skipped (raw strings
// read up to their delimiter).
std::vector<Literal> string_literals(const std::string& src) {
  std::vector<Literal> out;
  int line = 1;
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    if (c == '\n') {
      ++line;
    } else if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
      while (i < src.size() && src[i] != '\n') ++i;
      --i;
    } else if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
      const size_t end = src.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? src.size() : end + 2;
      for (size_t k = i; k < stop; ++k) line += src[k] == '\n';
      i = stop - 1;
    } else if (c == '\'') {
      for (++i; i < src.size() && src[i] != '\''; ++i)
        if (src[i] == '\\') ++i;
    } else if (c == 'R' && i + 1 < src.size() && src[i + 1] == '"') {
      const size_t open = src.find('(', i + 2);
      if (open == std::string::npos) break;
      // ")delim\"", built in steps (GCC 12 warns falsely on operator+ here: -Wrestrict).
      std::string close(1, ')');
      close.append(src, i + 2, open - i - 2).push_back('"');
      const size_t end = src.find(close, open);
      const size_t stop = end == std::string::npos ? src.size() : end;
      out.push_back({src.substr(open + 1, stop - open - 1), line});
      for (size_t k = i; k < stop; ++k) line += src[k] == '\n';
      i = stop + close.size() - 1;
    } else if (c == '"') {
      Literal lit{"", line};
      for (++i; i < src.size() && src[i] != '"'; ++i) {
        if (src[i] == '\\' && i + 1 < src.size()) lit.text += src[i++];
        lit.text += src[i];
      }
      out.push_back(lit);
    }
  }
  return out;
}

// "--tp", "--straggler", "-b": a dash (or two) and a letter, not inside a word ("fat-tree").
bool names_a_flag(const std::string& text) {
  static const std::regex kDoubleDash(R"((^|[^\w-])--[A-Za-z])");
  // nccl-tests' own flags (-b 8 -e 4G -t 8) describe measured runs; a simrun flag has two dashes
  // except -b/-e/-f, which only an error would name alone: "-b", "(-b)".
  static const std::regex kShort(R"(^-[bef]$|\(-[bef]\))");
  return std::regex_search(text, kDoubleDash) || std::regex_search(text, kShort) || text == "command line";
}

// Every literal of `src` that names a flag, as "line: text".
std::vector<std::string> flag_literals(const std::string& src) {
  std::vector<std::string> found;
  for (const Literal& l : string_literals(src))
    if (names_a_flag(l.text)) found.push_back(std::to_string(l.line) + ": \"" + l.text + "\"");
  return found;
}

}  // namespace

TEST_CASE("the flag finder finds flags and only flags", "[architecture]") {
  CHECK(flag_literals(R"src(throw InputError("command line", "--tp", "bad");)src").size() == 2);
  CHECK(flag_literals(R"src(throw InputError("sweep", "min_bytes", "below the minimum (-b)");)src").size() ==
        1);
  CHECK(flag_literals(R"src(why = "a straggler needs every rank (add --full)";)src").size() == 1);
  CHECK(flag_literals(R"src(auto s = R"x(use --gpu)x";)src").size() == 1);
  CHECK(flag_literals(R"src(InputError("step", "scope", "needs scope full (fat-tree, top-k, 1e-3, -1)");)src")
            .empty());
  CHECK(flag_literals("// add --full\n/* --tp */ char q = '\"'; auto s = \"ok\";").empty());
  CHECK(flag_literals(R"src(note = "nccl-tests -t 8, -e 4G";)src").empty());
}

TEST_CASE("libraries never name a command-line flag (cli/ maps fields to flags)", "[architecture]") {
  namespace fs = std::filesystem;
  const fs::path root = SIMRUN_SOURCE_DIR;
  size_t files = 0;
  for (const char* dir : {"common", "models", "topologies", "sim", "validation"}) {
    REQUIRE(fs::is_directory(root / dir));
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      ++files;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const auto found = flag_literals(text.str());
      std::string where = fs::relative(entry.path(), root).string();
      for (const std::string& f : found) where += "\n  " + f;
      INFO(where);
      CHECK(found.empty());
    }
  }
  CHECK(files > 50);
}
