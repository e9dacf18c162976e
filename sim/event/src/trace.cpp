// Chrome Trace Event JSON writer; see trace.hpp.
#include "simrun/sim/event/trace.hpp"

#include <fmt/format.h>

#include <ostream>
#include <set>

#include "simrun/sim/scenario/rank_layout.hpp"

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

}  // namespace

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

void write_chrome_trace(std::ostream& out, const Scenario& sc, const Workload& w, const StepResult& step) {
  const RankLayout layout(sc.layout, sc.cluster.gpus_per_node);
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"simrun simulate\",\"model\":\""
      << json_escape(sc.model.name) << "\",\"gpu\":\"" << json_escape(sc.cluster.gpu.id)
      << "\",\"step_time_s\":" << fmt::format("{:.9g}", step.step_time.seconds()) << "},\"traceEvents\":[";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  std::set<int64_t> ranks;
  for (const auto& s : step.spans) ranks.insert(s.rank);
  for (int64_t rank : ranks) {
    const RankCoord c = layout.coord_of(rank);
    sep();
    out << fmt::format(
        R"J({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"rank {} (node {} GPU {}, stage {}, tp {} cp {} dp {})"}}}})J",
        rank, rank, layout.node_of(rank), layout.local_gpu_of(rank), c.pp, c.tp, c.cp, c.dp);
    sep();
    out << fmt::format(
        R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", rank,
        rank);
    for (int s = 0; s <= kStreamCount; ++s) {
      sep();
      out << fmt::format(
          R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"stream {} {}"}}}})", rank, s,
          s, s == kStreamCount ? "pp recv grad" : to_string(static_cast<Stream>(s)));
    }
  }
  for (const auto& span : step.spans) {
    const StageProgram& p = w.stages[static_cast<size_t>(layout.coord_of(span.rank).pp)];
    const Task& t = p.tasks[span.task];
    sep();
    const double ts = double(span.start.ns) * 1e-3;
    const double dur = double((span.end - span.start).ns) * 1e-3;
    const char* cat = t.kind == TaskKind::compute ? "kernel" : "collective_comm";
    // Activations and gradients arrive from different neighbours and may overlap in time:
    // gradients get their own row so that every row's events nest.
    const int tid =
        t.kind == TaskKind::recv && t.op == OpName::pp_grad ? kStreamCount : static_cast<int>(t.stream);
    out << fmt::format(
        R"({{"ph":"X","cat":"{}","name":"{}","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{)", cat,
        task_event_name(t), span.rank, tid, ts, dur);
    out << fmt::format(R"("layer":{},"microbatch":{},"chunk":{})", t.layer, t.micro_batch, t.chunk);
    if (t.kind == TaskKind::compute) {
      out << fmt::format(R"(,"flops":{:.6g},"hbm_bytes":{:.6g})", t.flops, p.hbm_bytes(t));
    } else {
      const int64_t n = t.kind == TaskKind::collective ? layout.group_size(t.group) : 2;
      out << fmt::format(
          R"(,"Collective name":"{}","kernel":"ncclDevKernel_{}_Sum_bf16","bytes":{:.6g},"Group size":{},"Process Group Name":"{}")",
          to_string(t.coll), collective_name(t.coll), t.comm_bytes, n, to_string(t.group));
      if (t.peer_stage >= 0) out << fmt::format(R"(,"peer_stage":{})", t.peer_stage);
    }
    out << "}}";
  }
  out << "]}\n";
}

}  // namespace simrun
