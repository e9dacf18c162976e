// Chrome Trace Event JSON writer and the trace's rank selector; see trace.hpp.
#include "simrun/sim/event/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <numeric>
#include <ostream>
#include <set>
#include <unordered_map>

#include "simrun/common/error.hpp"

namespace simrun {
namespace {

const char* phase_tag(Phase p) {
  switch (p) {
    case Phase::forward:
      return "fwd";
    case Phase::backward:
      return "bwd";
    case Phase::recompute:
      return "recomp";
    case Phase::optimizer:
      return "opt";
    case Phase::comm:
      return "comm";
  }
  return "?";
}

const char* kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::fused:
      return "fused";
    case AttentionKernel::flash2:
      return "flash2";
    case AttentionKernel::unfused:
      return "unfused";
  }
  return "?";
}

// A JSON string's contents (RFC 8259 §7): quote and backslash escaped, control characters as
// \u00XX. The names come from parsed JSON, so they are valid UTF-8 already.
std::string json_escape(const std::string& s) {
  std::string o;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      o += c;
    }
  }
  return o;
}

using Buffer = fmt::memory_buffer;

// Activations and gradients arrive from different neighbours and may overlap in time:
// gradients get their own row so that every row's events nest.
int thread_of(const Task& t) {
  return t.kind == TaskKind::recv && t.op == OpName::pp_grad ? kStreamCount : static_cast<int>(t.stream);
}

// A row's slices must nest in a Chrome trace, but a stream may hold transfers in flight together
// (DualPipe receives from both neighbours at once): a slice that would overlap its row's last
// moves to the thread's next row free by its start, tid thread + row · kRowStride.
constexpr int kRowStride = kStreamCount + 1;

// The tid of each of a rank's spans (span_tid[first + k]) and the rows each thread needs.
std::vector<int> assign_rows(const std::vector<TaskSpan>& spans, size_t first, size_t count,
                             const StageProgram& program, std::vector<int>& span_tid) {
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), first);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return spans[a].start.ns < spans[b].start.ns; });
  std::vector<std::vector<int64_t>> row_ends(kRowStride);  // per thread, each row's last end
  for (const size_t i : order) {
    const int thread = thread_of(program.tasks[spans[i].task]);
    std::vector<int64_t>& ends = row_ends[size_t(thread)];
    size_t row = 0;
    while (row < ends.size() && ends[row] > spans[i].start.ns) ++row;
    if (row == ends.size()) ends.push_back(0);
    ends[row] = spans[i].end.ns;
    span_tid[i] = thread + int(row) * kRowStride;
  }
  std::vector<int> rows(kRowStride);
  for (size_t t = 0; t < rows.size(); ++t) rows[t] = std::max<int>(1, int(row_ends[t].size()));
  return rows;
}

// µs with ns precision, as Chrome traces count.
double us(TimeNs t) { return double(t.ns) * 1e-3; }

void format_rank_metadata(Buffer& b, const RankLayout& layout, int64_t rank, const std::vector<int>& rows) {
  const RankCoord c = layout.coord_of(rank);
  auto o = std::back_inserter(b);
  fmt::format_to(
      o,
      R"J({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"rank {} (node {} GPU {}, stage {}, tp {} cp {} dp {})"}}}},)J"
      "\n",
      rank, rank, layout.node_of(rank), layout.local_gpu_of(rank), c.pp, c.tp, c.cp, c.dp);
  fmt::format_to(o,
                 R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}},)"
                 "\n",
                 rank, rank);
  for (int s = 0; s <= kStreamCount; ++s)
    for (int row = 0; row < rows[size_t(s)]; ++row)
      fmt::format_to(
          o,
          R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"stream {} {}{}"}}}},)"
          "\n",
          rank, s + row * kRowStride, s,
          s == kStreamCount ? "pp recv grad" : to_string(static_cast<Stream>(s)),
          row == 0 ? "" : fmt::format(" ({})", row + 1));
  // A thread's extra rows sort beside it (Perfetto orders rows by tid otherwise); only where there
  // are any, so that other traces stay as they were.
  if (std::any_of(rows.begin(), rows.end(), [](int n) { return n > 1; }))
    for (int s = 0; s <= kStreamCount; ++s)
      for (int row = 0; row < rows[size_t(s)]; ++row)
        fmt::format_to(
            o,
            R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}},)"
            "\n",
            rank, s + row * kRowStride, s * 16 + row);
}

void format_shape(Buffer& b, const OpShape& s) {
  auto o = std::back_inserter(b);
  switch (s.cls) {
    case OpClass::gemm:
      // C[M×N] = A[M×K]·B[K×N], `batch` copies.
      if (s.batch != 1)
        fmt::format_to(o, R"(,"shape":"{:.0f} x [{:.0f},{:.0f}]x[{:.0f},{:.0f}]")", s.batch, s.m, s.k, s.k,
                       s.n);
      else
        fmt::format_to(o, R"(,"shape":"[{:.0f},{:.0f}]x[{:.0f},{:.0f}]")", s.m, s.k, s.k, s.n);
      break;
    case OpClass::attention_fwd:
    case OpClass::attention_bwd:
      fmt::format_to(
          o,
          R"(,"shape":"tokens {:.0f}, kv {:.0f}, heads {:.0f}, head_dim {:.0f}","kernel":"{}","causal":{})",
          s.tokens, s.seq_kv, s.heads, s.head_dim, kernel_name(s.attention_kernel), s.causal);
      break;
    case OpClass::memory:
      break;
    case OpClass::host:
      fmt::format_to(o, R"(,"host_s":{:.6g})", s.host_s);
      break;
  }
}

void format_slice(Buffer& b, const RankLayout& layout, const StageProgram& p, const TaskSpan& span, int tid) {
  const Task& t = p.tasks[span.task];
  auto o = std::back_inserter(b);
  const char* cat = t.kind == TaskKind::compute ? "kernel" : "collective_comm";
  fmt::format_to(o,
                 R"({{"ph":"X","cat":"{}","name":"{}","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{)",
                 cat, task_slice_name(t), span.rank, tid, us(span.start), us(span.end - span.start));
  fmt::format_to(o, R"("label":"{}","op":"{}","phase":"{}","layer":{},"microbatch":{},"chunk":{})",
                 task_event_name(t), to_string(t.op), to_string(t.phase), t.layer, t.micro_batch, t.chunk);
  if (t.kind == TaskKind::compute) {
    fmt::format_to(o, R"(,"flops":{:.6g},"hbm_bytes":{:.6g})", t.flops, p.hbm_bytes(t));
    if (t.shape != kNoShape) format_shape(b, p.shape(t));
  } else {
    const int64_t n = t.kind == TaskKind::collective ? layout.group_size(t.group) : 2;
    fmt::format_to(
        o,
        R"(,"Collective name":"{}","kernel":"ncclDevKernel_{}_Sum_bf16","bytes":{:.6g},"Group size":{},"Process Group Name":"{}")",
        to_string(t.coll), collective_name(t.coll), t.comm_bytes, n, to_string(t.group));
    if (t.peer_stage >= 0) fmt::format_to(o, R"(,"peer_stage":{})", t.peer_stage);
  }
  fmt::format_to(o, "}}}},\n");
}

// A flow from the middle of the send's slice to the middle of its recv's ("bp":"e": bound to
// the enclosing slice, which the middle leaves no doubt about).
void format_flow(Buffer& b, int64_t id, const Task& send, const TaskSpan& from, int from_tid,
                 const TaskSpan& to, int to_tid) {
  auto o = std::back_inserter(b);
  const auto mid = [](const TaskSpan& s) { return us(s.start) + 0.5 * us(s.end - s.start); };
  fmt::format_to(o,
                 R"({{"ph":"s","id":{},"cat":"pp","name":"{}","pid":{},"tid":{},"ts":{:.3f}}},)"
                 "\n",
                 id, to_string(send.op), from.rank, from_tid, mid(from));
  fmt::format_to(o,
                 R"({{"ph":"f","bp":"e","id":{},"cat":"pp","name":"{}","pid":{},"tid":{},"ts":{:.3f}}},)"
                 "\n",
                 id, to_string(send.op), to.rank, to_tid, mid(to));
}

// The spans of one traced rank: step.spans[first, first + count), in task order.
struct RankSpans {
  int64_t rank = 0;
  size_t first = 0;
  size_t count = 0;
  const StageProgram* program = nullptr;
};

[[noreturn]] void bad_selector(std::string_view selector, const std::string& why) {
  throw InputError("step", "trace_ranks", "\"" + std::string(selector) + "\": " + why);
}

int64_t parse_index(std::string_view text, std::string_view selector) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    bad_selector(selector, "expected ranks such as 0,8,16, or stage:N, or dp:N");
  return v;
}

}  // namespace

std::string task_slice_name(const Task& t) {
  switch (t.kind) {
    case TaskKind::compute:
      if (t.phase == Phase::forward || t.phase == Phase::backward || t.phase == Phase::recompute)
        return fmt::format("{} {}", to_string(t.op), phase_tag(t.phase));
      return to_string(t.op);
    case TaskKind::collective:
      return fmt::format("{} {}", to_string(t.coll), to_string(t.group));
    case TaskKind::send:
      return fmt::format("send {}", to_string(t.op));
    case TaskKind::recv:
      return fmt::format("recv {}", to_string(t.op));
  }
  return to_string(t.op);
}

std::string task_event_name(const Task& t) {
  std::string name = phase_tag(t.phase);
  if (t.layer >= 0)
    name += fmt::format(" L{}", t.layer);
  else if (t.layer == -1 && (t.op == OpName::embedding || t.op == OpName::tp_embedding))
    name += " emb";
  name += " ";
  name += to_string(t.op);
  if (t.micro_batch >= 0) name += fmt::format(" mb{}", t.micro_batch);
  return name;
}

TraceSummary write_chrome_trace(std::ostream& out, const Scenario& sc, const Workload& w,
                                const StepResult& step, const TraceOptions& options) {
  const RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
  const std::string header = fmt::format(
      "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"simrun "
      "simulate\",\"model\":\"{}\",\"gpu\":\"{}\","
      "\"step_time_s\":{:.9g}}},\"traceEvents\":[\n",
      json_escape(sc.model.name), json_escape(sc.cluster.gpu.id), step.step_time.seconds());
  const std::string footer = "\n]}\n";

  // The traced ranks, each a run of spans in task order (StepResult::spans).
  std::vector<RankSpans> ranks;
  for (size_t i = 0; i < step.spans.size(); ++i) {
    if (ranks.empty() || ranks.back().rank != step.spans[i].rank) {
      const int64_t stage = layout.coord_of(step.spans[i].rank).pp;
      ranks.push_back({step.spans[i].rank, i, 0, &w.stages[static_cast<size_t>(stage)]});
    }
    SIMRUN_ASSERT(step.spans[i].task == ranks.back().count, "trace spans out of task order");
    ++ranks.back().count;
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const RankSpans& a, const RankSpans& b) { return a.rank < b.rank; });
  std::unordered_map<int64_t, size_t> index_of_rank;
  for (size_t i = 0; i < ranks.size(); ++i) index_of_rank[ranks[i].rank] = i;
  // The recv span matching a send span and the receiving rank, or null when it is not traced.
  struct Peer {
    const TaskSpan* span = nullptr;
    size_t rank_index = 0;
  };
  auto recv_of = [&](const RankSpans& r, const Task& send) {
    RankCoord c = layout.coord_of(r.rank);
    c.pp = send.peer_stage;
    const auto it = index_of_rank.find(layout.rank_of(c));
    if (it == index_of_rank.end()) return Peer{};
    const RankSpans& peer = ranks[it->second];
    SIMRUN_ASSERT(send.peer_task < peer.count, "a send's recv is not in its peer's program");
    return Peer{&step.spans[peer.first + send.peer_task], it->second};
  };
  std::vector<int> span_tid(step.spans.size(), 0);
  std::vector<std::vector<int>> rows(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i)
    rows[i] = assign_rows(step.spans, ranks[i].first, ranks[i].count, *ranks[i].program, span_tid);
  auto tid_of = [&](const TaskSpan& s) { return span_tid[size_t(&s - step.spans.data())]; };

  const int64_t micro_batches = std::max<int64_t>(w.micro_batches, 0);
  // Pass 1: the bytes of every part, to choose what fits. Part 0 of a rank is its metadata and
  // per-step ops, part 1 + k its micro-batch k; a flow counts with its send.
  std::vector<std::vector<double>> bytes(ranks.size(), std::vector<double>(size_t(micro_batches) + 1, 0.0));
  Buffer b;
  int64_t flows = 0;  // numbered as pass 2 numbers them when it keeps everything
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankSpans& r = ranks[i];
    b.clear();
    format_rank_metadata(b, layout, r.rank, rows[i]);
    bytes[i][0] += double(b.size());
    for (size_t k = 0; k < r.count; ++k) {
      const TaskSpan& span = step.spans[r.first + k];
      const Task& t = r.program->tasks[span.task];
      b.clear();
      format_slice(b, layout, *r.program, span, tid_of(span));
      if (t.kind == TaskKind::send)
        if (const Peer p = recv_of(r, t); p.span)
          format_flow(b, ++flows, t, span, tid_of(span), *p.span, tid_of(*p.span));
      const size_t part = std::min(static_cast<size_t>(std::max(t.micro_batch, -1) + 1), bytes[i].size() - 1);
      bytes[i][part] += double(b.size());
    }
  }
  // The last event has no ",\n" after it.
  const double frame = double(header.size() + footer.size()) - (ranks.empty() ? 0.0 : 2.0);
  std::vector<double> per_part(size_t(micro_batches) + 1, 0.0);  // over every rank
  for (const auto& row : bytes)
    for (size_t k = 0; k < row.size(); ++k) per_part[k] += row[k];
  TraceSummary summary;
  summary.ranks = static_cast<int64_t>(ranks.size());
  summary.micro_batches = micro_batches;
  std::vector<double> upto(per_part.size());  // frame + parts 0..k of every rank
  for (size_t k = 0; k < per_part.size(); ++k) upto[k] = (k == 0 ? frame : upto[k - 1]) + per_part[k];
  summary.full_bytes = upto.back();
  int64_t keep_mb = micro_batches;
  size_t keep_ranks = ranks.size();
  if (options.max_bytes > 0 && summary.full_bytes > options.max_bytes) {
    // At least micro-batch 0 of one rank, whatever the cap.
    while (keep_mb > 1 && upto[size_t(keep_mb)] > options.max_bytes) --keep_mb;
    if (keep_mb == 1 && micro_batches >= 1) {
      double sum = upto[1];
      while (keep_ranks > 1 && sum > options.max_bytes) {
        --keep_ranks;
        sum -= bytes[keep_ranks][0] + bytes[keep_ranks][1];
      }
    }
  }
  summary.ranks_kept = static_cast<int64_t>(keep_ranks);
  summary.micro_batches_kept = keep_mb;

  // Pass 2: write what is kept, each event followed by ",\n" but the last.
  std::set<std::string> names;
  b.clear();
  out << header;
  double written = double(header.size());
  bool first = true;
  auto emit = [&] {
    if (!first) out << ",\n";
    first = false;
    out.write(b.data(), static_cast<std::streamsize>(b.size() - 2));
    written += double(b.size());
    b.clear();
  };
  int64_t flow_id = 0;
  for (size_t i = 0; i < keep_ranks; ++i) {
    const RankSpans& r = ranks[i];
    format_rank_metadata(b, layout, r.rank, rows[i]);
    emit();
    for (size_t k = 0; k < r.count; ++k) {
      const TaskSpan& span = step.spans[r.first + k];
      const Task& t = r.program->tasks[span.task];
      if (t.micro_batch >= keep_mb) continue;
      format_slice(b, layout, *r.program, span, tid_of(span));
      ++summary.slices;
      names.insert(task_slice_name(t));
      if (t.kind == TaskKind::send)
        if (const Peer p = recv_of(r, t); p.span && p.rank_index < keep_ranks) {
          format_flow(b, ++flow_id, t, span, tid_of(span), *p.span, tid_of(*p.span));
          ++summary.flows;
        }
      emit();
    }
  }
  out << footer;
  summary.bytes = written - (first ? 0 : 2) + double(footer.size());
  summary.distinct_names = static_cast<int64_t>(names.size());
  return summary;
}

std::vector<int64_t> select_trace_ranks(std::string_view selector, const RankLayout& layout) {
  std::vector<int64_t> out;
  auto add = [&](int64_t rank) {
    if (std::find(out.begin(), out.end(), rank) == out.end()) out.push_back(rank);
  };
  const auto colon = selector.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view by = selector.substr(0, colon);
    const int64_t n = parse_index(selector.substr(colon + 1), selector);
    if (by == "stage") {
      if (n < 0 || n >= layout.pp())
        bad_selector(selector, fmt::format("stage {} is out of range (0 to {})", n, layout.pp() - 1));
      for (int64_t dp = 0; dp < layout.dp(); ++dp)
        for (int64_t cp = 0; cp < layout.cp(); ++cp)
          for (int64_t tp = 0; tp < layout.tp(); ++tp) add(layout.rank_of(RankCoord{tp, cp, dp, n}));
    } else if (by == "dp") {
      if (n < 0 || n >= layout.dp())
        bad_selector(selector,
                     fmt::format("data-parallel replica {} is out of range (0 to {})", n, layout.dp() - 1));
      for (int64_t pp = 0; pp < layout.pp(); ++pp)
        for (int64_t cp = 0; cp < layout.cp(); ++cp)
          for (int64_t tp = 0; tp < layout.tp(); ++tp) add(layout.rank_of(RankCoord{tp, cp, n, pp}));
    } else {
      bad_selector(selector, "expected stage:N or dp:N, or ranks such as 0,8,16");
    }
    return out;
  }
  size_t at = 0;
  while (at <= selector.size()) {
    const size_t comma = std::min(selector.find(',', at), selector.size());
    const int64_t rank = parse_index(selector.substr(at, comma - at), selector);
    if (rank < 0 || rank >= layout.world_size())
      bad_selector(selector, fmt::format("rank {} is out of range (0 to {})", rank, layout.world_size() - 1));
    add(rank);
    at = comma + 1;
  }
  return out;
}

}  // namespace simrun
