// The plan document's one parser (plan_request.hpp): plan files and the command line's flags
// (which the CLI writes into a document first) are checked by the same rules.
#include "simrun/sim/planner/plan_request.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"

namespace simrun {

const char* to_string(PlanObjective o) { return o == PlanObjective::time ? "time" : "cost"; }

namespace {

constexpr int64_t kMaxPlanGpus = 1'048'576;

// A list of integers (or one integer) at `key`, each in [min, max], without repeats.
std::vector<int64_t> integer_list(JsonReader& r, const std::string& key, int64_t min, int64_t max) {
  std::vector<int64_t> out;
  if (!r.has(key)) return out;
  const nlohmann::json& v = r.raw(key);
  const nlohmann::json list = v.is_array() ? v : nlohmann::json::array({v});
  if (list.empty()) r.fail(key, "an empty list (leave the field out to search every value)");
  for (const nlohmann::json& x : list) {
    if (!x.is_number_integer()) r.fail(key, fmt::format("expected integers, got {}", quoted_input(x.dump())));
    const int64_t i = x.get<int64_t>();
    if (i < min || i > max) r.fail(key, fmt::format("{} is outside [{}, {}]", i, min, max));
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A list of names (or one name) at `key`, each one of `allowed` (empty: any string).
std::vector<std::string> name_list(JsonReader& r, const std::string& key,
                                   const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  if (!r.has(key)) return out;
  const nlohmann::json& v = r.raw(key);
  const nlohmann::json list = v.is_array() ? v : nlohmann::json::array({v});
  if (list.empty()) r.fail(key, "an empty list (leave the field out for the default)");
  for (const nlohmann::json& x : list) {
    if (!x.is_string()) r.fail(key, fmt::format("expected names, got {}", quoted_input(x.dump())));
    const std::string name = x.get<std::string>();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      r.fail(key, fmt::format("unknown value {} (known: {})", quoted_input(name), join_names(allowed)));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

// A price per GPU-hour: positive, and at most $10,000 (beyond any list price: a typo).
double checked_price(double usd, const std::string& file, const std::string& field) {
  if (!(usd > 0) || usd > 1e4)
    throw InputError(file, field, fmt::format("price {} is outside (0, 10000] $/GPU-hour", usd));
  return usd;
}

// The "prices" table: a JSON object of GPU id → $/GPU-hour, inline or in a file.
std::map<std::string, double> read_prices(JsonReader& top, const std::filesystem::path& base_dir) {
  std::map<std::string, double> prices;
  if (!top.has("prices")) return prices;
  const nlohmann::json& v = top.raw("prices");
  std::string file = top.file();
  std::string path = top.path_of("prices");
  nlohmann::json table = v;
  if (v.is_string()) {
    const std::filesystem::path p = base_dir / v.get<std::string>();
    std::error_code ec;
    if (!std::filesystem::exists(p, ec))  // named by the field that names it; errors inside it by the file
      top.fail("prices", "no file " + quoted_input(p.string()) + " (a JSON object of GPU id to $/GPU-hour)");
    table = load_json_file(p);
    file = p.string();
    path = "";
  }
  if (!table.is_object())
    throw InputError(file, path.empty() ? "prices" : path,
                     "expected an object of GPU id to $/GPU-hour, e.g. {\"h100-sxm\": 2.5}");
  for (const auto& [id, price] : table.items()) {
    const std::string field = path.empty() ? id : path + "." + id;
    if (!price.is_number())
      throw InputError(
          file, field,
          fmt::format("price {} is not a number ($/GPU-hour, e.g. 2.5)", printable(price.dump())));
    prices[id] = checked_price(price.get<double>(), file, field);
  }
  return prices;
}

}  // namespace

PlanRequest parse_plan_request(const nlohmann::json& doc, const std::string& file, const Catalogs& catalogs,
                               const std::filesystem::path& base_dir) {
  if (!doc.is_object()) throw InputError(file, "plan", "expected a JSON object (docs/planner.md)");
  PlanRequest q;
  q.file = file;
  q.base_dir = base_dir;
  JsonReader r(doc, file);
  if (!r.has("model")) r.fail("model", "missing: the model to plan for (a catalog id, e.g. llama3-70b)");
  q.model = r.raw("model");
  if (r.has("seq_len")) q.seq_len = r.integer("seq_len", 1, kMaxStepSeqLen);
  if (r.has("tokens")) q.tokens = r.number("tokens", 1, 1e18);

  const std::map<std::string, double> prices = read_prices(r, base_dir);
  if (!r.has("gpus"))
    r.fail("gpus", "no GPU type to plan on (give each GPU id with its $/GPU-hour, e.g. h100-sxm at 2.5)");
  const nlohmann::json& gpus = r.raw("gpus");
  if (!gpus.is_array() || gpus.empty())
    r.fail("gpus", "expected a non-empty list of {\"gpu\", \"usd_per_gpu_hour\"} (e.g. h100-sxm at 2.5)");
  for (size_t i = 0; i < gpus.size(); ++i) {
    const std::string path = fmt::format("gpus[{}]", i);
    const nlohmann::json entry = gpus[i].is_string() ? nlohmann::json{{"gpu", gpus[i]}} : gpus[i];
    if (!entry.is_object())
      throw InputError(file, path, "expected {\"gpu\": id, \"usd_per_gpu_hour\": price}");
    JsonReader g(entry, file, path);
    GpuOffer offer;
    offer.gpu = g.string("gpu");
    catalogs.hardware.gpu(offer.gpu, file, g.path_of("gpu"));  // an unknown id: one line, nearest known
    if (g.has("usd_per_gpu_hour")) {
      if (!g.raw("usd_per_gpu_hour").is_number())
        g.fail("usd_per_gpu_hour", fmt::format("price {} is not a number ($/GPU-hour, e.g. 2.5)",
                                               printable(g.raw("usd_per_gpu_hour").dump())));
      offer.usd_per_gpu_hour =
          checked_price(g.raw("usd_per_gpu_hour").get<double>(), file, g.path_of("usd_per_gpu_hour"));
    } else if (const auto p = prices.find(offer.gpu); p != prices.end()) {
      offer.usd_per_gpu_hour = p->second;
    } else {
      g.fail("usd_per_gpu_hour",
             fmt::format("no price for {} (give its $/GPU-hour with it, or in a prices table)", offer.gpu));
    }
    g.finish();
    for (const GpuOffer& o : q.gpus)
      if (o.gpu == offer.gpu) throw InputError(file, path, fmt::format("{} is offered twice", offer.gpu));
    q.gpus.push_back(offer);
  }
  if (r.has("fabric")) {
    q.fabric = r.string("fabric");
    catalogs.hardware.fabric(*q.fabric, file, "fabric");
  }

  // Cluster sizes: whole nodes of each GPU type, from min_gpus (default one node) to max_gpus.
  if (!r.has("max_gpus")) r.fail("max_gpus", "missing: the largest cluster to consider, in GPUs (e.g. 8192)");
  q.max_gpus = r.integer("max_gpus", 1, kMaxPlanGpus);
  q.min_gpus = r.integer_or("min_gpus", 0, 1, kMaxPlanGpus);
  for (const GpuOffer& o : q.gpus) {
    const int64_t node = default_gpus_per_node(catalogs.hardware.gpu(o.gpu, file, "gpus"));
    if (q.max_gpus < node)
      r.fail("max_gpus", fmt::format("{} is below one node of {} ({} GPUs)", q.max_gpus, o.gpu, node));
  }
  if (q.min_gpus > q.max_gpus)
    r.fail("min_gpus", fmt::format("{} is above max_gpus {}", q.min_gpus, q.max_gpus));

  const std::string objective = r.string_or("objective", "cost");
  if (objective != "time" && objective != "cost")
    r.fail("objective", fmt::format("unknown objective {} (known: time, cost)", quoted_input(objective)));
  q.objective = objective == "time" ? PlanObjective::time : PlanObjective::cost;
  // A finite amount of zero or less gets its own words; anything else the stated range.
  const auto non_positive = [&](const char* key) {
    const nlohmann::json& v = r.raw(key);
    return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() <= 0;
  };
  if (r.has("deadline_days")) {
    if (non_positive("deadline_days"))
      r.fail("deadline_days", fmt::format("{:g} days cannot be met (a deadline is a positive number of days)",
                                          r.raw("deadline_days").get<double>()));
    q.deadline_days = r.number("deadline_days", 1e-6, 1e6);
  }
  if (r.has("budget_usd")) {
    if (non_positive("budget_usd"))
      r.fail("budget_usd", fmt::format("a budget of ${:g} buys nothing (give a positive amount)",
                                       r.raw("budget_usd").get<double>()));
    q.budget_usd = r.number("budget_usd", 0.01, 1e15);
  }

  if (r.has("global_batch")) q.global_batch = r.integer("global_batch", 1, kMaxGlobalBatch);
  if (r.has("batch_tokens")) {
    if (q.global_batch) r.fail("batch_tokens", "given together with global_batch (give one)");
    const nlohmann::json& v = r.raw("batch_tokens");
    const nlohmann::json range = v.is_array() ? v : nlohmann::json::array({v, v});
    if (range.size() != 2 || !range[0].is_number() || !range[1].is_number())
      r.fail("batch_tokens", "expected tokens per step, or [min, max] (e.g. [2e6, 16e6])");
    q.batch_tokens_min = range[0].get<double>();
    q.batch_tokens_max = range[1].get<double>();
    if (!(q.batch_tokens_min >= 1) || q.batch_tokens_max < q.batch_tokens_min || q.batch_tokens_max > 1e12)
      r.fail("batch_tokens", fmt::format("[{}, {}] is not a range of tokens in [1, 1e12]", q.batch_tokens_min,
                                         q.batch_tokens_max));
  }
  if (!q.global_batch && q.batch_tokens_max == 0)
    q.batch_tokens_min = q.batch_tokens_max = kDefaultBatchTokens;
  q.top_k = r.integer_or("top_k", kDefaultPlanTopK, 1, 10000);
  q.max_points = r.integer_or("max_points", kDefaultMaxPlanPoints, 1, int64_t(1) << 50);

  if (r.has("search")) {
    JsonReader s = r.object("search");
    SearchAxes& a = q.axes;
    a.tp = integer_list(s, "tp", 1, 1024);
    a.pp = integer_list(s, "pp", 1, 1024);
    a.cp = integer_list(s, "cp", 1, 1024);
    a.ep = integer_list(s, "ep", 1, 4096);
    a.expert_tp = integer_list(s, "expert_tp", 1, 1024);
    a.virtual_stages = integer_list(s, "virtual_stages", 1, 1024);
    a.micro_batch = integer_list(s, "micro_batch", 1, 4096);
    a.zero_stage = integer_list(s, "zero_stage", 0, 3);
    a.recompute = name_list(s, "recompute", {"none", "selective", "full"});
    a.precision = name_list(s, "precision", {"bf16", "fp16", "fp8", "fp4", "fp32"});
    a.framework = name_list(s, "framework", {});
    for (const std::string& f : a.framework) catalogs.frameworks.resolve(f, file, s.path_of("framework"));
    s.finish();
  }
  r.finish();

  // The model, resolved as a scenario resolves it (errors name the plan's "model" field).
  const nlohmann::json probe = {{"model", scenario_model_field(q)},
                                {"cluster", {{"gpu", q.gpus.front().gpu}, {"num_gpus", 1}}}};
  parse_scenario(probe, file, catalogs, base_dir);
  return q;
}

nlohmann::json scenario_model_field(const PlanRequest& q) {
  if (!q.seq_len) return q.model;
  nlohmann::json model = q.model.is_string() ? nlohmann::json{{"name", q.model}} : q.model;
  model["seq_len"] = *q.seq_len;
  return model;
}

nlohmann::json to_json(const PlanRequest& q) {
  nlohmann::json j;
  j["model"] = q.model;
  if (q.seq_len) j["seq_len"] = *q.seq_len;
  if (q.tokens > 0) j["tokens"] = q.tokens;
  j["gpus"] = nlohmann::json::array();
  for (const GpuOffer& o : q.gpus)
    j["gpus"].push_back({{"gpu", o.gpu}, {"usd_per_gpu_hour", o.usd_per_gpu_hour}});
  if (q.fabric) j["fabric"] = *q.fabric;
  if (q.min_gpus > 0) j["min_gpus"] = q.min_gpus;
  j["max_gpus"] = q.max_gpus;
  j["objective"] = to_string(q.objective);
  if (q.deadline_days) j["deadline_days"] = *q.deadline_days;
  if (q.budget_usd) j["budget_usd"] = *q.budget_usd;
  if (q.global_batch)
    j["global_batch"] = *q.global_batch;
  else
    j["batch_tokens"] = {q.batch_tokens_min, q.batch_tokens_max};
  j["top_k"] = q.top_k;
  if (q.max_points != kDefaultMaxPlanPoints) j["max_points"] = q.max_points;
  nlohmann::json s = nlohmann::json::object();
  const SearchAxes& a = q.axes;
  auto put = [&](const char* key, const auto& values) {
    if (!values.empty()) s[key] = values;
  };
  put("tp", a.tp);
  put("pp", a.pp);
  put("cp", a.cp);
  put("ep", a.ep);
  put("expert_tp", a.expert_tp);
  put("virtual_stages", a.virtual_stages);
  put("micro_batch", a.micro_batch);
  put("zero_stage", a.zero_stage);
  put("recompute", a.recompute);
  put("precision", a.precision);
  put("framework", a.framework);
  if (!s.empty()) j["search"] = s;
  return j;
}

}  // namespace simrun
