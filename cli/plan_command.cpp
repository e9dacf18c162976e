// `simrun plan [PLAN.json] --model M --tokens T --gpu ID:PRICE... --max-gpus N [--objective time|cost]
//  [--deadline-days D] [--budget-usd B] [search flags] [--threads N] [--json|--csv] [--explain N]`:
// the capacity planner (sim/planner, docs/planner.md). The flags write into the plan document the
// file holds, so both are read by one parser; --json echoes that document as "request".
#include <fmt/format.h>
#include <signal.h>  // sigaction

#include <algorithm>
#include <atomic>
#include <csignal>
#include <ctime>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "command.hpp"
#include "flag_names.hpp"
#include "plan_ranks.hpp"
#include "progress_line.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/common/text.hpp"
#include "simrun/common/typed_numbers.hpp"
#include "simrun/common/units.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/planner/planner.hpp"

namespace simrun::cli {
namespace {

// Set by SIGINT: the search stops and prints the best found so far (exit 130).
std::atomic<bool> g_interrupted{false};
// When the first SIGINT came (CLOCK_MONOTONIC, ns; 0: none yet).
std::atomic<int64_t> g_first_interrupt_ns{0};
// One Ctrl-C can arrive twice: sent to the process and to its process group (timeout(1), a shell's
// job control beside mpirun's forwarding). A second within this time is the same one.
constexpr int64_t kSameInterruptNs = 500'000'000;

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

// SIGINT's action (sigaction: signal() is unspecified in a process with threads; both are
// async-signal-safe).
void set_sigint(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
}

extern "C" void on_interrupt(int) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe (POSIX)
  const int64_t now_ns = int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  int64_t first = 0;
  if (g_first_interrupt_ns.compare_exchange_strong(first, now_ns)) {
    g_interrupted.store(true);
    return;
  }
  if (now_ns - first < kSameInterruptNs) return;
  set_sigint(SIG_DFL);  // a second Ctrl-C ends the process at once
  std::raise(SIGINT);
}

// Ctrl-C stops the search while it lives (the search and the printing of its answer, so that
// the same Ctrl-C arriving twice does not cut the answer short); the default action comes back
// however the scope ends.
struct InterruptScope {
  InterruptScope() {
    g_interrupted.store(false);
    g_first_interrupt_ns.store(0);
    set_sigint(on_interrupt);
  }
  ~InterruptScope() { set_sigint(SIG_DFL); }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// More worker threads than any machine has cores is a typo, and each costs a stack.
constexpr int kMaxPlanThreads = 4096;

struct PlanArgs {
  std::string file;
  std::string model;
  std::optional<int64_t> seq_len;
  std::optional<double> tokens;
  std::vector<std::string> gpus;  // ID:PRICE or ID
  std::string prices;
  std::string fabric;
  std::optional<int64_t> min_gpus, max_gpus;
  std::string objective;
  std::optional<double> deadline_days, budget_usd;
  std::optional<int64_t> global_batch;
  std::string batch_tokens;
  std::optional<int64_t> top_k, max_points;
  std::vector<int64_t> tp, pp, cp, ep, expert_tp, virtual_stages, micro_batch, zero_stage;
  std::vector<std::string> recompute, precision, framework;
  int threads = 0;
  OutputFormat format = OutputFormat::table;
  std::optional<int64_t> explain_row;  // --explain N: row N of the ranking, 1-based
  ProgressArgs progress;
  std::vector<std::string> catalogs;
};

// Each flag's field in the plan document, for errors in a value a flag gave.
struct FlagField {
  const char* flag;
  const char* field;
};
constexpr FlagField kFlagFields[] = {
    {"--model", "model"},
    {"--seq-len", "seq_len"},
    {"--tokens", "tokens"},
    {"--gpu", "gpus"},
    {"--prices", "prices"},
    {"--fabric", "fabric"},
    {"--min-gpus", "min_gpus"},
    {"--max-gpus", "max_gpus"},
    {"--objective", "objective"},
    {"--deadline-days", "deadline_days"},
    {"--budget-usd", "budget_usd"},
    {"--global-batch", "global_batch"},
    {"--batch-tokens", "batch_tokens"},
    {"--top-k", "top_k"},
    {"--max-points", "max_points"},
    {"--tp", "search.tp"},
    {"--pp", "search.pp"},
    {"--cp", "search.cp"},
    {"--ep", "search.ep"},
    {"--expert-tp", "search.expert_tp"},
    {"--virtual-stages", "search.virtual_stages"},
    {"--micro-batch", "search.micro_batch"},
    {"--zero-stage", "search.zero_stage"},
    {"--recompute", "search.recompute"},
    {"--precision", "search.precision"},
    {"--framework", "search.framework"},
};

// "4M", "16e6", "2097152": tokens per step. K, M and G are binary (2^10, 2^20, 2^30), as batch
// sizes are written: Llama 2's "4M tokens" are 1,024 sequences of 4,096 (arXiv:2307.09288, sec. 2.2).
double tokens_of(const std::string& text) {
  double scale = 1;
  std::string number = text;
  if (!number.empty()) {
    const char last = number.back();
    if (last == 'K' || last == 'k') scale = 0x1p10;
    if (last == 'M' || last == 'm') scale = 0x1p20;
    if (last == 'G' || last == 'g') scale = 0x1p30;
    if (scale > 1) number.pop_back();
  }
  size_t used = 0;
  const double v = leading_decimal(number, used);
  if (used == 0 || used != number.size())
    throw InputError(
        "command line", "--batch-tokens",
        fmt::format("{} is not a number of tokens (e.g. 4M, or 2M:16M for a range)", quoted_input(text)));
  return v * scale;
}

// The global batches a space allows, e.g. "1,024" or "488 to 3,906".
std::string batch_text(const PlanSpaceSize& size) {
  const std::string lo = count_text(uint64_t(size.batch_min)), hi = count_text(uint64_t(size.batch_max));
  return size.batch_min == size.batch_max ? lo : lo + " to " + hi;
}

// The plan document: the file's, with every flag given written over it.
nlohmann::json plan_document(const PlanArgs& a, std::vector<std::string>& given) {
  nlohmann::json doc = a.file.empty() ? nlohmann::json::object() : load_json_file(a.file);
  if (!doc.is_object()) throw InputError(a.file, "plan", "expected a JSON object (docs/planner.md)");
  auto set = [&](const char* field, nlohmann::json value) {
    given.emplace_back(field);
    const std::string f(field);
    if (f.rfind("search.", 0) == 0) {
      if (!doc.contains("search") || !doc["search"].is_object()) doc["search"] = nlohmann::json::object();
      doc["search"][f.substr(7)] = std::move(value);
    } else {
      doc[f] = std::move(value);
    }
  };
  if (!a.model.empty()) set("model", a.model);
  if (a.seq_len) set("seq_len", *a.seq_len);
  if (a.tokens) set("tokens", *a.tokens);
  if (!a.gpus.empty()) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const std::string& g : a.gpus) {
      const size_t colon = g.find(':');
      if (colon == std::string::npos) {
        gpus.push_back({{"gpu", g}});
        continue;
      }
      const std::string id = g.substr(0, colon), price = g.substr(colon + 1);
      size_t used = 0;
      const double usd = leading_decimal(price, used);
      if (used == 0 || used != price.size())
        throw InputError("command line", "--gpu",
                         fmt::format("price {} of {} is not a number ($/GPU-hour, e.g. {}:2.5)",
                                     quoted_input(price), quoted_input(id), quoted_input(id)));
      gpus.push_back({{"gpu", id}, {"usd_per_gpu_hour", usd}});
    }
    set("gpus", gpus);
  }
  if (!a.prices.empty()) set("prices", std::filesystem::absolute(a.prices).string());
  if (!a.fabric.empty()) set("fabric", a.fabric);
  if (a.min_gpus) set("min_gpus", *a.min_gpus);
  if (a.max_gpus) set("max_gpus", *a.max_gpus);
  if (!a.objective.empty()) set("objective", a.objective);
  if (a.deadline_days) set("deadline_days", *a.deadline_days);
  if (a.budget_usd) set("budget_usd", *a.budget_usd);
  // The two ways to give the batch: a flag's replaces the file's, whichever the file held.
  if (a.global_batch) {
    doc.erase("batch_tokens");
    set("global_batch", *a.global_batch);
  }
  if (!a.batch_tokens.empty()) {
    doc.erase("global_batch");
    const size_t colon = a.batch_tokens.find(':');
    if (colon == std::string::npos)
      set("batch_tokens", tokens_of(a.batch_tokens));
    else
      set("batch_tokens",
          {tokens_of(a.batch_tokens.substr(0, colon)), tokens_of(a.batch_tokens.substr(colon + 1))});
  }
  if (a.top_k) set("top_k", *a.top_k);
  if (a.max_points) set("max_points", *a.max_points);
  auto list = [&](const char* field, const auto& values) {
    if (!values.empty()) set(field, values);
  };
  list("search.tp", a.tp);
  list("search.pp", a.pp);
  list("search.cp", a.cp);
  list("search.ep", a.ep);
  list("search.expert_tp", a.expert_tp);
  list("search.virtual_stages", a.virtual_stages);
  list("search.micro_batch", a.micro_batch);
  list("search.zero_stage", a.zero_stage);
  list("search.recompute", a.recompute);
  list("search.precision", a.precision);
  list("search.framework", a.framework);
  return doc;
}

// An error in a field a flag gave (or any field of a plan from flags alone) as the flag's.
InputError as_flag_error(const InputError& e, const std::vector<std::string>& given, bool from_file) {
  for (const FlagField& f : kFlagFields) {
    const std::string field(f.field);
    const bool in_field =
        e.field() == field || e.field().rfind(field + ".", 0) == 0 || e.field().rfind(field + "[", 0) == 0;
    if (in_field && (!from_file || std::find(given.begin(), given.end(), field) != given.end()))
      return InputError("command line", f.flag, e.why());
  }
  return e;
}

nlohmann::json point_json(const PlanRequest& q, const PlanResult& r, const PlanPoint& p) {
  const GpuOffer& offer = q.gpus[size_t(p.offer)];
  nlohmann::json j = {{"gpu", offer.gpu},
                      {"num_gpus", p.num_gpus},
                      {"usd_per_gpu_hour", offer.usd_per_gpu_hour},
                      {"framework", r.frameworks[size_t(p.framework)]},
                      {"layout", layout_json(p.layout)},
                      {"fidelity", p.fidelity},
                      {"step_time_s", p.step_time_s},
                      {"mfu", p.mfu},
                      {"tokens_per_s", p.tokens_per_s},
                      {"peak_bytes_per_gpu", p.peak_bytes_per_gpu},
                      {"capacity_bytes", p.capacity_bytes},
                      {"headroom_bytes", p.capacity_bytes - p.peak_bytes_per_gpu},
                      {"days", p.days},
                      {"gpu_hours", p.gpu_hours},
                      {"cost_usd", p.cost_usd},
                      {"energy_kwh", p.energy_kwh},
                      {"goodput", p.goodput}};
  if (p.rank > 0) j["rank"] = p.rank;
  return j;
}

nlohmann::json result_json(const PlanRequest& q, const PlanResult& r) {
  nlohmann::json j;
  j["request"] = to_json(q);
  j["ranked"] = nlohmann::json::array();
  for (const PlanPoint& p : r.ranked) j["ranked"].push_back(point_json(q, r, p));
  j["pareto"] = nlohmann::json::array();
  for (const PlanPoint& p : r.pareto) j["pareto"].push_back(point_json(q, r, p));
  j["pruned"] = r.pruned;
  j["space_size"] = r.space_size;
  j["evaluated"] = r.evaluated;
  j["simulated"] = r.simulated;
  j["tie_tolerance"] = kPlanTieTolerance;
  j["why"] = r.why;
  j["warnings"] = r.warnings;
  j["interrupted"] = r.interrupted;
  return j;
}

// The ranking's table shows each row's rank; the Pareto front's has none.
enum class RankColumn { shown, blank };

void print_rows(std::ostream& out, const PlanRequest& q, const PlanResult& r,
                const std::vector<PlanPoint>& rows, RankColumn rank_column) {
  const bool ranks = rank_column == RankColumn::shown;
  // The GPU and layout columns as wide as their widest cell in either table (a user's GPU id, an
  // MoE layout), so that the ranking and the front line up.
  size_t gpu_width = 10, layout_width = 40;
  for (const auto* table : {&r.ranked, &r.pareto})
    for (const PlanPoint& p : *table) {
      gpu_width = std::max(gpu_width, q.gpus[size_t(p.offer)].gpu.size());
      layout_width = std::max(layout_width, layout_text(p, r, LayoutStyle::cell).size());
    }
  out << fmt::format("{:>4}  {:<{}} {:>6}  {:<{}} {:>8} {:>5} {:>9} {:>7} {:>9} {:>9} {:>9} {:>7}\n",
                     ranks ? "rank" : "", "gpu", gpu_width, "gpus", "layout", layout_width, "step s", "MFU",
                     "headroom", "days", "GPU-h", "cost", "energy", "goodput");
  for (const PlanPoint& p : rows) {
    const std::string rank = ranks ? fmt::format("{}", p.rank) : "";
    out << fmt::format(
        "{:>4}  {:<{}} {:>6}  {:<{}} {:>8.3f} {:>4.1f}% {:>5.1f} GiB {:>7.1f} {:>9} {:>9} {:>9} "
        "{:>6.1f}%{}\n",
        rank, q.gpus[size_t(p.offer)].gpu, gpu_width, p.num_gpus, layout_text(p, r, LayoutStyle::cell),
        layout_width, p.step_time_s, 100 * p.mfu, (p.capacity_bytes - p.peak_bytes_per_gpu) / kGiB, p.days,
        count_text(uint64_t(p.gpu_hours)), usd_text(p.cost_usd), energy_text(p.energy_kwh), 100 * p.goodput,
        p.fidelity == "event" ? "" : " (estimate)");
  }
}

std::string points_text(int64_t n) { return fmt::format("{} point{}", n, n == 1 ? "" : "s"); }

void print_table(std::ostream& out, const PlanRequest& q, const PlanResult& r, const std::string& workers) {
  std::string goal = q.objective == PlanObjective::cost ? "fewest dollars" : "fewest days";
  if (q.deadline_days) goal += fmt::format(" within {:.4g} days", *q.deadline_days);
  if (q.budget_usd) goal += " within " + usd_text(*q.budget_usd, 4);
  std::string model = q.model.is_string() ? q.model.get<std::string>() : q.model.dump();
  out << fmt::format(
      "simrun plan — {}, {}; {}\n", model,
      q.tokens > 0 ? fmt::format("{:.3g} tokens", q.tokens) : std::string("20 tokens per parameter"), goal);
  out << fmt::format("searched {}: {} estimated, {} event-simulated; {}, {:.1f} s{}\n\n",
                     points_text(r.space_size), r.evaluated, r.simulated, workers, r.wall_s,
                     r.interrupted ? " (interrupted: the best found so far)" : "");
  out << "ranked (ties within " << int(100 * kPlanTieTolerance) << "% share a rank)\n";
  print_rows(out, q, r, r.ranked, RankColumn::shown);
  if (!r.why.empty()) out << "\n" << r.why << "\n";
  for (const std::string& w : r.warnings) out << "warning: " << w << "\n";
  out << "\nPareto front, days against dollars (every GPU type and size)\n";
  print_rows(out, q, r, r.pareto, RankColumn::blank);
  int64_t total = 0;
  for (const auto& [reason, n] : r.pruned) total += n;
  out << fmt::format("\npruned {} of {}", total, points_text(r.space_size));
  const std::vector<std::pair<std::string, int64_t>> reasons = by_count(r.pruned);
  for (size_t i = 0; i < reasons.size(); ++i)
    out << fmt::format("{} {} {}", i == 0 ? ":" : ",", reasons[i].first, reasons[i].second);
  out << "\n";
}

Fields csv_row(const PlanRequest& q, const PlanResult& r, const PlanPoint& p, const char* list) {
  const Layout& l = p.layout;
  return {{"list", list},
          {"rank", p.rank},
          {"gpu", q.gpus[size_t(p.offer)].gpu},
          {"num_gpus", p.num_gpus},
          {"usd_per_gpu_hour", q.gpus[size_t(p.offer)].usd_per_gpu_hour},
          {"framework", r.frameworks[size_t(p.framework)]},
          {"tp", l.tp},
          {"pp", l.pp},
          {"virtual_stages", l.virtual_stages},
          {"dp", l.dp},
          {"cp", l.cp},
          {"ep", l.ep},
          {"expert_tp", l.expert_tp},
          {"micro_batch", l.micro_batch},
          {"global_batch", l.global_batch},
          {"zero_stage", l.zero_stage},
          {"recompute", to_string(l.recompute)},
          {"precision", to_string(l.precision)},
          {"pipeline_split", to_string(l.pipeline_split)},
          {"fidelity", p.fidelity},
          {"step_time_s", p.step_time_s},
          {"mfu", p.mfu},
          {"peak_bytes_per_gpu", p.peak_bytes_per_gpu},
          {"capacity_bytes", p.capacity_bytes},
          {"days", p.days},
          {"gpu_hours", p.gpu_hours},
          {"cost_usd", p.cost_usd},
          {"energy_kwh", p.energy_kwh},
          {"goodput", p.goodput}};
}

// The request, every rule checked before the search starts (bad input: InputError).
PlanRequest checked_request(const PlanArgs& a, const Catalogs& catalogs) {
  std::vector<std::string> given;
  PlanRequest q;
  try {
    const nlohmann::json doc = plan_document(a, given);
    const std::filesystem::path base =
        a.file.empty() ? std::filesystem::current_path() : std::filesystem::path(a.file).parent_path();
    q = parse_plan_request(doc, a.file.empty() ? "command line" : a.file, catalogs, base);
  } catch (const InputError& e) {
    throw as_flag_error(e, given, !a.file.empty());
  }
  if (a.threads < 0 || a.threads > kMaxPlanThreads)
    throw InputError("command line", "--threads",
                     fmt::format("{} is outside [1, {}] (0: every core)", a.threads, kMaxPlanThreads));
  if (a.explain_row && a.format != OutputFormat::table)
    throw InputError("command line", "--explain",
                     "explains a row of the table: give it without --json or --csv (simrun simulate "
                     "--json on the row's scenario gives the report as JSON)");
  // A field of the plan, as the flag that gave it where one did.
  auto refuse = [&](const char* field, const std::string& why) {
    throw as_flag_error(InputError(q.file, field, why), given, !a.file.empty());
  };
  const PlanSpaceSize space = plan_space_size(q, catalogs);
  if (space.points > q.max_points)
    refuse("max_points", fmt::format("the space holds {} points, over the {} a search may take: narrow it "
                                     "(--tp, --pp, --micro-batch, --zero-stage, --recompute, a smaller "
                                     "--max-gpus or a fixed --global-batch) or raise --max-points",
                                     space.points, q.max_points));
  if (space.batch_min > space.batch_max)
    refuse("batch_tokens", fmt::format("no whole number of {}-token sequences from 1 to {} lies in the range "
                                       "(give a range that holds at least one)",
                                       space.seq_len, kMaxGlobalBatch));
  if (space.points == 0) {
    const std::string gpus = q.min_gpus == q.max_gpus ? fmt::format("{}", q.max_gpus)
                             : q.min_gpus > 0         ? fmt::format("{} to {}", q.min_gpus, q.max_gpus)
                                                      : fmt::format("up to {}", q.max_gpus);
    refuse(
        q.global_batch ? "global_batch" : "max_gpus",
        fmt::format("the space holds no point: no size searched (tp·pp·cp, micro-batch) leaves a "
                    "data-parallel size that fills whole nodes of {} GPUs and divides a global batch of {} "
                    "sequences (search other sizes, more GPUs or another batch)",
                    gpus, batch_text(space)));
  }
  if (a.explain_row && (*a.explain_row < 1 || *a.explain_row > q.top_k))
    throw InputError(
        "command line", "--explain",
        fmt::format("row {} is not among the {} ranked rows (1 to --top-k)", *a.explain_row, q.top_k));
  return q;
}

}  // namespace

Command add_plan_command(CLI::App& root, const CliEnv& env) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = root.add_subcommand(
      "plan",
      "Capacity planner: which GPUs, how many and which layout, ranked by days or dollars (docs/planner.md)");
  cmd->add_option("plan", a->file, "Plan file (JSON, docs/planner.md); the flags override its fields");
  cmd->add_option("--model", a->model, "Model catalog id (e.g. llama3-70b) or a config.json path");
  cmd->add_option("--seq-len", a->seq_len, "Sequence length in tokens (default: the model's)");
  cmd->add_option("--tokens", a->tokens, "Training tokens (default: 20 per parameter)");
  cmd->add_option("--gpu", a->gpus,
                  "A GPU type on offer and its $/GPU-hour, ID:PRICE (repeatable), e.g. h100-sxm:2.5")
      ->type_name("ID:PRICE");
  cmd->add_option("--prices", a->prices, "Price table: a JSON object of GPU id to $/GPU-hour");
  cmd->add_option("--fabric", a->fabric, "Inter-node fabric id for every GPU type (default: the scenario's)");
  cmd->add_option("--min-gpus", a->min_gpus, "Smallest cluster (default: one node)");
  cmd->add_option("--max-gpus", a->max_gpus, "Largest cluster (whole nodes up to it are searched)");
  cmd->add_option("--objective", a->objective, "time (fewest days) or cost (fewest dollars, the default)");
  cmd->add_option("--deadline-days", a->deadline_days,
                  "Finish within this many days (failures and checkpoints included)");
  cmd->add_option("--budget-usd", a->budget_usd, "Spend at most this many dollars");
  CLI::Option* global_batch = cmd->add_option("--global-batch", a->global_batch, "Sequences per step, fixed");
  cmd->add_option("--batch-tokens", a->batch_tokens,
                  "Tokens per step (K, M, G: 2^10, 2^20, 2^30; one value rounds to whole sequences), or a "
                  "range MIN:MAX (e.g. 2M:16M); default 4M (Llama 2's)")
      ->type_name("TOKENS[:MAX]")
      ->excludes(global_batch);
  cmd->add_option("--top-k", a->top_k,
                  fmt::format("Best points re-run by the event simulation (default {})", kDefaultPlanTopK));
  cmd->add_option(
      "--max-points", a->max_points,
      "Refuse a space larger than this (default " + count_text(uint64_t(kDefaultMaxPlanPoints)) + ")");
  cmd->add_option("--tp", a->tp, "Tensor-parallel sizes to search, e.g. 4,8")->delimiter(',');
  cmd->add_option("--pp", a->pp, "Pipeline sizes to search")->delimiter(',');
  cmd->add_option("--cp", a->cp, "Context-parallel sizes to search")->delimiter(',');
  cmd->add_option("--ep", a->ep, "Expert-parallel sizes to search (MoE)")->delimiter(',');
  cmd->add_option("--expert-tp", a->expert_tp, "Expert tensor-parallel sizes to search (MoE)")
      ->delimiter(',');
  cmd->add_option("--virtual-stages", a->virtual_stages, "Virtual stages per pipeline rank to search")
      ->delimiter(',');
  cmd->add_option("--micro-batch", a->micro_batch, "Micro-batch sizes to search")->delimiter(',');
  cmd->add_option("--zero-stage", a->zero_stage, "ZeRO stages to search (default 0,1,3)")->delimiter(',');
  cmd->add_option("--recompute", a->recompute, "Recompute settings to search: none,selective,full")
      ->delimiter(',');
  cmd->add_option("--precision", a->precision, "Precisions to search (default bf16), e.g. bf16,fp8")
      ->delimiter(',');
  cmd->add_option("--framework", a->framework, "Framework profiles to search (default megatron-core)")
      ->delimiter(',');
  cmd->add_option("--threads", a->threads, "Worker threads (default: every core)");
  add_output_options(*cmd, a->format, nullptr,
                     {"Print the plan as JSON: the ranked points, the Pareto front, the prune counts "
                      "(docs/planner.md)",
                      "Print the plan as CSV: a header, then one row per ranked and Pareto point (full "
                      "precision)"});
  cmd->add_option("--explain", a->explain_row,
                  "Explain row N of the ranking: its scenario and every number's formula")
      ->type_name("N");
  add_progress_options(*cmd, a->progress);
  add_catalog_option(*cmd, a->catalogs);
  return {
      cmd, [a, env] {
        // Under mpirun every rank checks its own input (its files may differ); rank 0 reports the
        // first refusal of any rank and every rank stops (plan_ranks.hpp, agree_on_input).
        const MpiLaunch launch = mpi_launch();
        std::optional<Catalogs> catalogs;
        PlanRequest q;
        std::exception_ptr refused;
        std::string refusal;
        try {
          catalogs = load_cli_catalogs(env, a->catalogs);
          q = checked_request(*a, *catalogs);
        } catch (const InputError& e) {
          refused = std::current_exception();
          refusal = as_command_line_error(e).what();
        }
        const std::string first_refusal = agree_on_input(launch, refusal);
        if (refused) std::rethrow_exception(refused);  // rank 0 says why (main.cpp), the others leave
        if (!first_refusal.empty()) {                  // another rank's input
          if (launch.rank == 0) std::cerr << printable(first_refusal, kErrorLineMaxBytes) << "\n";
          return launch.rank == 0 ? 2 : 0;
        }
        // Under mpirun the ranks on one machine share its cores (plan_ranks.hpp).
        const int threads =
            a->threads > 0 ? a->threads
                           : std::max(1, int(std::thread::hardware_concurrency()) / launch.ranks_on_node);

        std::unique_ptr<ProgressLine> line = stderr_progress_line(progress_mode(a->progress, env.progress));
        if (launch.rank != 0) line.reset();  // rank 0 speaks for the job
        PlanControl control;
        control.threads = threads;
        control.cancel = &g_interrupted;
        const auto start = std::chrono::steady_clock::now();
        std::optional<std::chrono::steady_clock::time_point> simulating_since;
        if (line)
          control.progress = [&](const PlanProgress& p) {
            const auto now = std::chrono::steady_clock::now();
            const double elapsed = std::chrono::duration<double>(now - start).count();
            std::string text;
            if (p.phase == PlanPhase::simulating) {
              if (!simulating_since) simulating_since = now;
              const double since = std::chrono::duration<double>(now - *simulating_since).count();
              text = fmt::format("simrun plan: event-simulating the best, {} of {} points", p.done, p.total);
              if (since > 0) text += fmt::format(", {:.2g}/s", double(p.done) / since);
              if (p.done > 0 && p.done < p.total)
                text += ", ETA " + duration_text(since * double(p.total - p.done) / double(p.done));
            } else {
              const double done = p.total > 0 ? double(p.done) / double(p.total) : 0;
              const double rate = elapsed > 0 ? double(p.done) / elapsed : 0;
              text = fmt::format("simrun plan: {:.0f}%, {} of {} points, {} estimated, {}/s", 100 * done,
                                 count_text(uint64_t(p.done)), count_text(uint64_t(p.total)),
                                 count_text(uint64_t(p.evaluated)), count_text(uint64_t(rate)));
              if (p.done > 0 && p.done < p.total && elapsed >= 0.5)
                text += ", ETA " + duration_text(elapsed * (1 - done) / done);
            }
            line->show(text);
          };
        const InterruptScope interrupt;
        const std::optional<PlanResult> on_rank = plan_on_ranks(launch, q, *catalogs, control);
        if (line) line->clear();
        if (!on_rank) return 0;  // a rank other than 0: rank 0 prints the whole plan
        const PlanResult& result = *on_rank;

        if (result.ranked.empty() && !result.interrupted)
          throw InfeasibleError(q.file + ": " + infeasible_text(q, result));
        if (a->explain_row && *a->explain_row > int64_t(result.ranked.size()))
          throw InputError(
              "command line", "--explain",
              fmt::format("row {} is not in the ranking ({} rows)", *a->explain_row, result.ranked.size()));
        // The explained row is simulated before anything prints: a refusal leaves no half output.
        std::optional<Report> explained;
        if (a->explain_row) {
          const Scenario s = plan_point_scenario(q, *catalogs, result.ranked[size_t(*a->explain_row - 1)],
                                                 result.frameworks);
          explained = simulate(s, framework_simulate_options(s)).report;
        }
        switch (a->format) {
          case OutputFormat::json:
            std::cout << result_json(q, result).dump(2) << "\n";
            break;
          case OutputFormat::csv: {
            std::vector<Fields> rows;
            for (const PlanPoint& p : result.ranked) rows.push_back(csv_row(q, result, p, "ranked"));
            for (const PlanPoint& p : result.pareto) rows.push_back(csv_row(q, result, p, "pareto"));
            if (rows.empty() && !result.frameworks.empty())  // no point ranked: the header alone
              write_csv_header(csv_row(q, result, PlanPoint{}, "ranked"), std::cout);
            write_csv(rows, std::cout);
            break;
          }
          case OutputFormat::table:
            print_table(std::cout, q, result,
                        launch.ranks > 1 ? fmt::format("{} ranks of {} threads", launch.ranks, threads)
                                         : fmt::format("{} threads", threads));
            break;
        }
        if (explained) {
          const PlanPoint& p = result.ranked[size_t(*a->explain_row - 1)];
          std::cout << fmt::format("\nrow {}: the scenario (simrun simulate FILE reruns it)\n{}\n\n",
                                   *a->explain_row,
                                   plan_point_scenario_json(q, p, result.frameworks).dump(2));
          // An interrupted plan's row that carries the estimate's numbers: explained as simulated.
          if (p.fidelity != "event")
            std::cout << fmt::format(
                "the row holds the closed-form estimate's numbers (the plan was interrupted before its "
                "event simulation); explained here as the event simulation runs it: step {:.3f} s against "
                "the row's {:.3f} s\n\n",
                explained->step_time_s, p.step_time_s);
          print_report_explain(*explained, std::cout);
        }
        return result.interrupted ? 130 : 0;
      }};
}

}  // namespace simrun::cli
