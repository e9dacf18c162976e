// Extensible catalogs end to end (docs/catalogs.md): GPUs and fabrics defined inline in a
// scenario, user catalog folders from --catalog and SIMRUN_CATALOG, each entry checked as the
// shipped ones are, and ids that mean one part only.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"

using namespace simrun::test;
namespace fs = std::filesystem;

namespace {

const fs::path kData = SIMRUN_DATA_DIR;
const fs::path kExample = kData / "examples" / "llama3-70b-h100.json";

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_text(p)); }

// A report with what may differ between two runs of the same inputs left out: wall-clock fields,
// and the explanations' text, which names the GPU by its id.
nlohmann::json comparable(nlohmann::json j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [key, value] : j.items())
      if (key.find("wall") == std::string::npos && key != "inputs") out[key] = comparable(value);
    return out;
  }
  if (j.is_array())
    for (auto& v : j) v = comparable(v);
  return j;
}

// A fresh empty folder under the test's scratch folder.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = scratch_dir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

RunResult run_ok(const std::string& args) {
  const RunResult r = run_simrun(args);
  INFO("simrun " << args << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("an inline GPU and fabric give the report of the catalog entries they copy", "[cli][catalog]") {
  nlohmann::json doc = read_json(kExample);
  nlohmann::json gpu = read_json(kData / "topologies" / "gpus" / "h100-sxm.json");
  nlohmann::json fabric = read_json(kData / "topologies" / "fabrics" / "ib-ndr.json");
  gpu["id"] = "my-h100";
  fabric["id"] = "my-ndr";
  REQUIRE(doc["cluster"]["gpu"] == "h100-sxm");
  REQUIRE(doc["cluster"]["fabric"]["kind"] == "ib-ndr");
  doc["cluster"]["gpu"] = gpu;
  doc["cluster"]["fabric"]["kind"] = fabric;
  const fs::path inline_file = write_file("inline-hardware.json", doc.dump(2));

  for (const char* command : {"estimate", "simulate"}) {
    INFO(command);
    const RunResult shipped = run_ok(std::string(command) + " " + shell_quoted(kExample) + " --json");
    const RunResult inlined = run_ok(std::string(command) + " " + shell_quoted(inline_file) + " --json");
    CHECK(comparable(nlohmann::json::parse(inlined.out)) == comparable(nlohmann::json::parse(shipped.out)));
    // Not vacuous: the report holds the step time, and the inline file was read as written.
    CHECK(nlohmann::json::parse(shipped.out).at("step_time_s").get<double>() > 0);
  }
  const RunResult table = run_ok("simulate " + shell_quoted(inline_file));
  CHECK(table.out.find("1024 x my-h100 (my-ndr") != std::string::npos);
  // The same report because the inline part runs its architecture's kernels, not the generic ones.
  CHECK(run_ok("estimate " + shell_quoted(inline_file) + " --explain")
            .out.find("(Hopper architecture defaults)") != std::string::npos);

  // A changed figure changes the report: the inline object is what is simulated.
  gpu["hbm_tb_per_s"] = 1.0;
  gpu["dense_tflops"]["bf16"] = 400.0;
  doc["cluster"]["gpu"] = gpu;
  const RunResult slower =
      run_ok("estimate " + shell_quoted(write_file("inline-slow.json", doc.dump())) + " --json");
  const RunResult shipped = run_ok("estimate " + shell_quoted(kExample) + " --json");
  CHECK(nlohmann::json::parse(slower.out).at("step_time_s").get<double>() >
        1.5 * nlohmann::json::parse(shipped.out).at("step_time_s").get<double>());
}

TEST_CASE("a bad inline GPU or fabric field gets exit 2 naming the file and the field",
          "[cli][catalog][errors]") {
  nlohmann::json gpu = read_json(kData / "topologies" / "gpus" / "b200.json");
  gpu["id"] = "b200-capped";
  gpu["tdp_w"] = "lots";
  const nlohmann::json doc = {{"model", "llama3-8b"}, {"cluster", {{"gpu", gpu}, {"num_gpus", 8}}}};
  const fs::path file = write_file("inline-bad-tdp.json", doc.dump());
  require_one_safe_line(run_simrun("estimate " + shell_quoted(file)),
                        file.string() + ": cluster.gpu.tdp_w: expected a number, got string");

  nlohmann::json no_source = read_json(kData / "topologies" / "fabrics" / "ib-xdr.json");
  no_source["source"] = "";
  const nlohmann::json fabric_doc = {{"model", "llama3-8b"},
                                     {"cluster", {{"gpu", "h100-sxm"}, {"fabric", {{"kind", no_source}}}}}};
  require_one_safe_line(
      run_simrun("estimate " + shell_quoted(write_file("inline-no-source.json", fabric_doc.dump()))),
      "cluster.fabric.kind.source: every entry names its source");
  require_one_safe_line(
      run_simrun("estimate " + shell_quoted(write_file(
                                   "gpu-number.json", R"({"model": "llama3-8b", "cluster": {"gpu": 100}})"))),
      "cluster.gpu: expected a GPU id (e.g. \"h100-sxm\") or a GPU object");
}

TEST_CASE("a user catalog folder adds a GPU, a fabric and a model, from --catalog or SIMRUN_CATALOG",
          "[cli][catalog]") {
  const fs::path user = fresh_dir("user-catalog");
  fs::create_directories(user / "gpus");
  fs::create_directories(user / "fabrics");
  fs::create_directories(user / "models");
  nlohmann::json gpu = read_json(kData / "topologies" / "gpus" / "h100-sxm.json");
  gpu["hbm_gb"] = 96;
  gpu.erase("hbm_usable_gib");
  gpu["name"] = "H100 96GB (user entry)";
  std::ofstream(user / "gpus" / "h100-96gb.json") << gpu.dump(2);
  std::ofstream(user / "fabrics" / "ib-ndr-slow.json")
      << R"({"name": "NDR at half rate", "port_gbit_per_s": 200,
    "latency_us": 3, "switch_latency_ns": 450, "switch_radix": 64, "source": "test"})";
  nlohmann::json model = read_json(kData / "models" / "catalog" / "llama3-8b.json");
  model["name"] = "llama3-8b-deep";
  model["layers"] = 40;
  std::ofstream(user / "models" / "llama3-8b-deep.json") << model.dump(2);

  const std::string args = "estimate --model llama3-8b-deep --gpu h100-96gb --fabric ib-ndr-slow --gpus 16";
  require_one_safe_line(run_simrun(args), R"(--model: unknown model "llama3-8b-deep")");
  const RunResult flag = run_ok(args + " --catalog " + shell_quoted(user));
  CHECK(flag.out.find("llama3-8b-deep on 16 x h100-96gb (ib-ndr-slow") != std::string::npos);
  // 96 GB read as GiB less 1%, the user entry's capacity without a device query.
  CHECK(flag.out.find("/ 95.04 GiB") != std::string::npos);
  // Its kernels are Hopper's (topologies/architectures.json), as the part it was copied from.
  CHECK(run_ok(args + " --explain --catalog " + shell_quoted(user))
            .out.find("(Hopper architecture defaults)") != std::string::npos);

  // SIMRUN_CATALOG: a colon-separated list, empty parts skipped; the child inherits it.
  const fs::path other = fresh_dir("other-catalog");
  fs::create_directories(other / "models");
  REQUIRE(::setenv("SIMRUN_CATALOG", (other.string() + "::" + user.string()).c_str(), 1) == 0);
  const RunResult env = run_simrun(args);
  // The same folder named again by --catalog (as "dir/") is read once, not refused as new ids.
  const RunResult twice = run_simrun(args + " --catalog " + shell_quoted(user.string() + "/"));
  ::unsetenv("SIMRUN_CATALOG");
  INFO(env.err);
  REQUIRE(env.exit_code == 0);
  CHECK(env.out == flag.out);
  INFO(twice.err);
  REQUIRE(twice.exit_code == 0);
  CHECK(twice.out == flag.out);

  // Every subcommand that reads the catalogs takes --catalog.
  const std::string catalog = " --catalog " + shell_quoted(user);
  run_ok("simulate --model llama3-8b-deep --gpu h100-96gb --gpus 8" + catalog);
  CHECK(run_ok("topology --gpu h100-96gb --gpus 16 --fabric ib-ndr-slow" + catalog).out.find("h100-96gb") !=
        std::string::npos);
  run_ok("collective --gpu h100-96gb --gpus 16 --fabric ib-ndr-slow -e 1M" + catalog);
  run_ok("textbook 1" + catalog);
}

TEST_CASE("a SIMRUN_DATA_DIR without the shipped catalogs is named in one line", "[cli][catalog][errors]") {
  const fs::path empty = fresh_dir("empty-data-dir");
  REQUIRE(::setenv("SIMRUN_DATA_DIR", empty.c_str(), 1) == 0);
  const RunResult r = run_simrun("estimate --model llama3-8b --gpu h100-sxm --gpus 8");
  ::unsetenv("SIMRUN_DATA_DIR");
  require_one_safe_line(
      r, "environment: SIMRUN_DATA_DIR: folder \"" + empty.string() + "\" holds no models/catalog");
}

TEST_CASE("a user catalog entry is checked like a shipped one, its file named in the error",
          "[cli][catalog][errors]") {
  const fs::path user = fresh_dir("bad-catalog");
  fs::create_directories(user / "gpus");
  const std::string run = "estimate --model llama3-8b --gpu h100-sxm --catalog " + shell_quoted(user);

  std::ofstream(user / "gpus" / "broken.json") << R"({"name": "half a file", )";
  require_one_safe_line(run_simrun(run), (user / "gpus" / "broken.json").string() + ": ");
  require_one_safe_line(run_simrun(run), "malformed JSON");

  nlohmann::json gpu = read_json(kData / "topologies" / "gpus" / "h100-sxm.json");
  gpu["sm_count"] = 0;
  std::ofstream(user / "gpus" / "broken.json") << gpu.dump();
  require_one_safe_line(run_simrun(run),
                        (user / "gpus" / "broken.json").string() + ": sm_count: 0 is out of range");

  // An id means one part: a user entry never replaces a shipped one.
  fs::remove(user / "gpus" / "broken.json");
  gpu["sm_count"] = 132;
  std::ofstream(user / "gpus" / "h100-sxm.json") << gpu.dump();
  require_one_safe_line(run_simrun(run), (user / "gpus" / "h100-sxm.json").string() +
                                             R"(: the GPU id "h100-sxm" is already in the catalog)");
  fs::remove(user / "gpus" / "h100-sxm.json");
  fs::create_directories(user / "models");
  fs::copy_file(kData / "models" / "catalog" / "llama3-8b.json", user / "models" / "llama3-8b.json");
  require_one_safe_line(run_simrun(run), R"(: the model id "llama3-8b" is already in the catalog)");
  fs::remove(user / "models" / "llama3-8b.json");

  // A file name that is no id.
  std::ofstream(user / "gpus" / "my gpu.json") << gpu.dump();
  require_one_safe_line(run_simrun(run), R"(the file name "my gpu" is not a catalog id)");
  fs::remove(user / "gpus" / "my gpu.json");
  run_ok(run);  // what is left is a valid (empty) catalog

  // Folders that are not catalogs.
  require_one_safe_line(run_simrun(run + " --catalog " + shell_quoted(user / "missing")),
                        "command line: --catalog: folder");
  require_one_safe_line(run_simrun(run + " --catalog " + shell_quoted(fresh_dir("empty-catalog"))),
                        "holds no gpus/, fabrics/, models/ or frameworks/ subfolder");
  REQUIRE(::setenv("SIMRUN_CATALOG", (user / "missing").c_str(), 1) == 0);
  const RunResult env = run_simrun("estimate --model llama3-8b --gpu h100-sxm");
  ::unsetenv("SIMRUN_CATALOG");
  require_one_safe_line(env, "environment: SIMRUN_CATALOG: folder");
}

TEST_CASE("unknown names are suggested by id and by alias, case-insensitively", "[cli][catalog][errors]") {
  // By alias: "ndr" is as near ib-hdr as ib-ndr by edit distance, and is ib-ndr's alias.
  require_one_safe_line(
      run_simrun("estimate --model llama3-8b --gpu h100-sxm --fabric ndr"),
      R"(--fabric: unknown fabric "ndr" (known: ib-hdr, ib-ndr, ib-xdr, roce-400g; did you mean "ib-ndr"?))");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h100-sxm --fabric RoCEv2"),
                        R"(did you mean "roce-400g"?)");
  require_one_safe_line(run_simrun("estimate --model Meta-Llama-3-8B --gpu h100-sxm"),
                        R"(did you mean "llama3-8b"?)");
  // By id, as before.
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu H100"), R"(did you mean "h100-sxm"?)");
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu mi300"), R"(did you mean "mi300x"?)");

  // A user entry's aliases count too, and are checked.
  const fs::path user = fresh_dir("alias-catalog");
  fs::create_directories(user / "gpus");
  nlohmann::json gpu = read_json(kData / "topologies" / "gpus" / "h200.json");
  gpu["aliases"] = {"h200-141gb-capped"};
  gpu["tdp_w"] = 600;
  std::ofstream(user / "gpus" / "h200-600w.json") << gpu.dump();
  const std::string catalog = " --catalog " + shell_quoted(user);
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h200-141GB-capped" + catalog),
                        R"(did you mean "h200-600w"?)");
  gpu["aliases"] = {"fine", 7};
  std::ofstream(user / "gpus" / "h200-600w.json") << gpu.dump();
  require_one_safe_line(run_simrun("estimate --model llama3-8b --gpu h200" + catalog),
                        (user / "gpus" / "h200-600w.json").string() + ": aliases[1]: is not a name");
}
