// Framework profiles (DESIGN.md "Framework profile"): what a training framework does by default,
// one data file each under sim/framework/profiles/ (and a user catalog's frameworks/), every
// field with its source. A scenario names one ("framework": "nemo", "deepspeed@0.5"); the
// command line's framework flags then override single fields. Schema, resolution of versions
// and the shipped profiles: docs/model.md "Framework behaviour".
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simrun/sim/framework/framework_options.hpp"

namespace simrun {

// The profile a scenario without "framework" runs: the simulator's long-standing defaults.
inline constexpr const char* kDefaultFramework = "megatron-core";

// One field of a profile as its file (or the profile it extends) gives it.
struct ProfileField {
  std::string key;     // e.g. "tp_comm_overlap"
  std::string value;   // the JSON value as written, e.g. "\"full\"", "true", "80"
  std::string source;  // where the value comes from: framework code or docs, path and version
  std::string from;    // id of the profile whose file gives the field (itself or one it extends)
};

struct FrameworkProfile {
  std::string id = kDefaultFramework;      // the file stem, e.g. "megatron-core" or "deepspeed@0.3.12"
  std::string family = kDefaultFramework;  // the id before '@', e.g. "deepspeed"
  std::string version;                     // after '@', e.g. "0.5"; empty for an unversioned profile
  std::string name = "Megatron-Core";      // e.g. "Megatron-Core"
  std::string file;                        // the data file it was read from
  std::string extends;  // the profile whose fields it takes where it gives none; empty: none
  WorkloadOptions workload;
  MemoryDefaults memory;
  bool flash_attention = true;  // layout.flash_attention where the scenario does not say
  // layout.sequence_parallel where the scenario does not say: on with tp > 1 ("with_tp"), or off.
  bool sequence_parallel_with_tp = true;
  bool gpt_tied_embeddings = false;  // a GPT model built from its shape alone (measured runs) ties
                                     // its input and output embeddings
  std::vector<ProfileField> fields;  // every field, in the schema's order
  const ProfileField* field(const std::string& key) const;
};

// A field whose value differs between two profiles.
struct ProfileDifference {
  std::string key;
  std::string value, base_value;
  std::string source;  // of `value`
};
std::vector<ProfileDifference> profile_differences(const FrameworkProfile& profile,
                                                   const FrameworkProfile& base);

class FrameworkCatalog;
// The docs' table of profiles (docs/model.md "Framework behaviour"): each profile's id, name, the
// profile it extends and the values in which it differs from kDefaultFramework's.
std::string profiles_markdown(const FrameworkCatalog& catalog);

class FrameworkCatalog {
 public:
  // The shipped profiles: `dir` must exist and hold at least one *.json file, among them
  // kDefaultFramework's.
  static FrameworkCatalog load(const std::filesystem::path& dir);
  // A user catalog's frameworks/ folder (absent: nothing added); an id already known is refused.
  void add(const std::filesystem::path& dir);

  // "id" or "id@version": the profile of that id with the highest version not above the one
  // asked for (an unversioned profile counts as the lowest), or, without a version, the highest.
  // Unknown ids, malformed versions and versions older than every profile are InputErrors naming
  // `file`/`field`, listing the known ids and suggesting the nearest.
  const FrameworkProfile& resolve(const std::string& requested, const std::string& file,
                                  const std::string& field) const;
  // The "id" or "id@version" `text` writes, case and surrounding spaces aside, where its id is a
  // profile family's or one of the profiles' aliases ("DeepSpeed@0.5" → "deepspeed@0.5",
  // "megatron-ds" → "megatron-deepspeed"); nullopt where it names none. resolve may still refuse
  // its version.
  std::optional<std::string> id_named(const std::string& text) const;
  std::vector<std::string> ids() const;  // every profile id, sorted
  const std::map<std::string, FrameworkProfile>& profiles() const { return m_profiles; }

 private:
  void read_dir(const std::filesystem::path& dir, bool required);
  std::map<std::string, FrameworkProfile> m_profiles;
  std::map<std::string, std::vector<std::string>> m_aliases;  // id -> aliases (suggestions only)
};

}  // namespace simrun
