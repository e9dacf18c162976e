// The planner's search space; the defaults of each axis and their reasons are in docs/planner.md
// "The space".
#include "search_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "simrun/common/error.hpp"
#include "simrun/models/counts.hpp"
#include "simrun/sim/event/simulate.hpp"
#include "simrun/sim/framework/profile.hpp"
#include "simrun/sim/scenario/layout_rules.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/sim/scenario/scenario_parser.hpp"

namespace simrun::planner {
namespace {

template <class T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? std::move(fallback) : given;
}

// Powers of two from 1 up to `max`.
std::vector<int64_t> powers_of_two(int64_t max) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= max; v *= 2) out.push_back(v);
  return out;
}

// The pipeline split a stage count takes: even where pp·v divides the layers, else Megatron's
// embedding/loss accounting where pp·v divides layers + 2, else balanced (any count, 1F1B and
// interleaved alike); nullopt where none splits (more chunks than layers).
std::optional<PipelineSplit> best_split(int64_t layers, int64_t pp, int64_t v) {
  for (PipelineSplit split :
       {PipelineSplit::even, PipelineSplit::embedding_loss_layers, PipelineSplit::balanced}) {
    if (split == PipelineSplit::embedding_loss_layers && pp == 1) continue;
    if (!split_layers(layers, pp, v, split).error) return split;
  }
  return std::nullopt;
}

// Default pipeline sizes: every count up to 64 (and the layers) whose stages split evenly
// (with or without the embedding and loss counted as layers), and the powers of two, split as
// evenly as possible.
std::vector<int64_t> default_pp(int64_t layers) {
  std::vector<int64_t> out;
  for (int64_t pp = 1; pp <= std::min<int64_t>(64, layers); ++pp) {
    const bool power = (pp & (pp - 1)) == 0;
    const std::optional<PipelineSplit> split = best_split(layers, pp, 1);
    if (split && (power || *split != PipelineSplit::balanced)) out.push_back(pp);
  }
  return out;
}

// Default virtual stages: 1, and with pp > 1 the chunk counts whose chunks split evenly (or
// with the embedding and loss counted) and hold at least one layer.
std::vector<int64_t> default_virtual_stages(int64_t layers, int64_t pp) {
  std::vector<int64_t> out = {1};
  if (pp == 1) return out;
  for (int64_t v : {2, 3, 4, 6, 8}) {
    const std::optional<PipelineSplit> split = best_split(layers, pp, v);
    if (split && *split != PipelineSplit::balanced) out.push_back(v);
  }
  return out;
}

// Default context-parallel sizes: powers of two up to 8 that leave every rank at least 4K of the
// sequence (shorter shards leave attention GEMMs too small to pay for the ring; Megatron's
// long-context recipes use CP from 16K up: Llama 3, arXiv:2407.21783, sec. 3.3.2).
std::vector<int64_t> default_cp(int64_t seq_len) {
  std::vector<int64_t> out;
  for (int64_t cp : powers_of_two(8))
    if (cp == 1 || seq_len / cp >= 4096) out.push_back(cp);
  return out;
}

std::optional<Recompute> recompute_named(const std::string& name) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    if (name == to_string(r)) return r;
  return std::nullopt;
}

// The scenario document of a base: the request's model (with its sequence length), run and fabric.
nlohmann::json base_document(const PlanRequest& q, const GpuSpec& gpu, int64_t node_gpus,
                             double usd_per_gpu_hour) {
  nlohmann::json doc;
  doc["model"] = scenario_model_field(q);
  doc["cluster"] = {{"gpu", gpu.id}, {"num_gpus", node_gpus}};
  if (q.fabric) doc["cluster"]["fabric"] = {{"kind", *q.fabric}};
  doc["run"] = {{"usd_per_gpu_hour", usd_per_gpu_hour}};
  if (q.tokens > 0) doc["run"]["tokens"] = q.tokens;
  return doc;
}

}  // namespace

PlanSpace build_space(const PlanRequest& q, const Catalogs& catalogs) {
  PlanSpace space;
  const SearchAxes& a = q.axes;
  space.frameworks = or_default(a.framework, {std::string(kDefaultFramework)});
  const std::vector<std::string> precisions = or_default(a.precision, {std::string("bf16")});
  {
    const GpuSpec& gpu = catalogs.hardware.gpu(q.gpus.front().gpu, q.file, "gpus");
    space.model =
        parse_scenario(base_document(q, gpu, default_gpus_per_node(gpu), 1.0), q.file, catalogs, q.base_dir)
            .model;
    space.params = count_params(space.model).total();
  }
  for (int32_t offer = 0; offer < int32_t(q.gpus.size()); ++offer) {
    const GpuSpec& gpu = catalogs.hardware.gpu(q.gpus[size_t(offer)].gpu, q.file, "gpus");
    for (int32_t fw = 0; fw < int32_t(space.frameworks.size()); ++fw) {
      for (const std::string& precision : precisions) {
        PlanBase base;
        base.offer = offer;
        base.framework = fw;
        base.precision = precision;
        base.node_gpus = default_gpus_per_node(gpu);
        nlohmann::json doc = base_document(q, gpu, base.node_gpus, q.gpus[size_t(offer)].usd_per_gpu_hour);
        doc["framework"] = space.frameworks[size_t(fw)];
        doc["layout"] = {{"precision", precision}};
        try {
          base.scenario = parse_scenario(doc, q.file, catalogs, q.base_dir);
          training_peak_flops_per_s(*base.scenario);  // a precision the GPU lacks
        } catch (const InputError&) {
          base.scenario.reset();
          base.unusable = "precision_unsupported";
        }
        space.bases.push_back(std::move(base));
      }
    }
  }

  // Megatron-Core's three: DDP, the distributed optimizer (ZeRO-1) and FSDP (ZeRO-3).
  const std::vector<int64_t> zeros = or_default(a.zero_stage, {0, 1, 3});
  space.lowest_zero_stage = int(*std::min_element(zeros.begin(), zeros.end()));
  for (int32_t b = 0; b < int32_t(space.bases.size()); ++b) {
    const PlanBase& base = space.bases[size_t(b)];
    const ModelSpec& m = space.model;
    const int64_t domain = base.scenario ? scale_up_domain_size(base.scenario->cluster) : base.node_gpus;
    std::vector<int64_t> tps = or_default(a.tp, powers_of_two(std::min<int64_t>(8, domain)));
    const std::vector<int64_t> pps = or_default(a.pp, default_pp(m.layers));
    const std::vector<int64_t> cps = or_default(a.cp, default_cp(m.seq_len));
    // EP and expert TP: a dense model has no experts to split, whatever the axes say.
    const std::vector<int64_t> eps =
        m.is_moe() ? or_default(a.ep, powers_of_two(m.moe->experts)) : std::vector<int64_t>{1};
    const std::vector<int64_t> mbs = or_default(a.micro_batch, {1, 2, 4, 8});
    const std::vector<std::string> recomputes = or_default(a.recompute, {"none", "selective", "full"});
    for (int64_t tp : tps)
      for (int64_t pp : pps)
        for (int64_t v : a.virtual_stages.empty() ? default_virtual_stages(m.layers, pp) : a.virtual_stages) {
          if (v > 1 && pp == 1) continue;
          const std::optional<PipelineSplit> split = best_split(m.layers, pp, v);
          if (!split) continue;
          for (int64_t cp : cps)
            for (int64_t ep : eps) {
              // Expert TP: 1 and the dense TP by default; a dense model has no experts to split.
              std::vector<int64_t> etps = m.is_moe() ? a.expert_tp : std::vector<int64_t>{1};
              if (etps.empty()) etps = tp > 1 ? std::vector<int64_t>{1, tp} : std::vector<int64_t>{1};
              for (int64_t etp : etps)
                for (int64_t mb : mbs)
                  for (int64_t zero : zeros)
                    for (const std::string& rc : recomputes) {
                      PlanShape s;
                      s.base = b;
                      s.tp = tp;
                      s.pp = pp;
                      s.virtual_stages = v;
                      s.split = *split;
                      s.cp = cp;
                      s.ep = ep;
                      s.expert_tp = etp;
                      s.micro_batch = mb;
                      s.zero_stage = int(zero);
                      s.recompute = *recompute_named(rc);
                      space.shapes.push_back(s);
                    }
            }
        }
  }
  for (const PlanShape& s : space.shapes) space.size += int64_t(data_parallel_choices(q, space, s).size());
  return space;
}

std::pair<int64_t, int64_t> batch_sequences(const PlanRequest& q, int64_t seq_len) {
  if (q.global_batch) return {*q.global_batch, *q.global_batch};
  int64_t lo = 0, hi = 0;
  if (q.batch_tokens_min == q.batch_tokens_max) {  // one value: the nearest whole number of sequences
    lo = hi = std::max<int64_t>(1, std::llround(q.batch_tokens_max / double(seq_len)));
  } else {
    lo = std::max<int64_t>(1, int64_t(std::ceil(q.batch_tokens_min / double(seq_len))));
    hi = int64_t(std::floor(q.batch_tokens_max / double(seq_len)));
  }
  return {lo, std::min(hi, kMaxGlobalBatch)};
}

std::vector<DataParallelChoice> data_parallel_choices(const PlanRequest& q, const PlanSpace& space,
                                                      const PlanShape& shape) {
  std::vector<DataParallelChoice> out;
  const PlanBase& base = space.bases[size_t(shape.base)];
  const int64_t mp = shape.model_parallel();
  const int64_t node = base.node_gpus;
  const int64_t min_gpus = std::max(q.min_gpus, node);
  const auto [batch_lo, batch_hi] = batch_sequences(q, space.model.seq_len);
  // The most micro-batches per replica the event simulation can re-run (kMaxEventLayerPasses).
  const auto event_micro_batches = int64_t(kMaxEventLayerPasses / double(space.model.layers + 2));
  // Every replica runs at least one micro-batch per step, so dp·micro_batch is at most the batch.
  const int64_t dp_max = std::min(q.max_gpus / mp, batch_hi / shape.micro_batch);
  // Whole nodes: dp·mp a multiple of the node's GPUs.
  const int64_t step = node / std::gcd(node, mp);
  for (int64_t dp = step; dp <= dp_max; dp += step) {
    if (dp * mp < min_gpus) continue;
    // One replica of the dense and the expert weights: ZeRO has nothing to shard, and every stage
    // is the same point (the lowest searched stands for them).
    Layout sizes;  // Layout::expert_dp() holds the expert replicas' rule
    sizes.tp = shape.tp;
    sizes.cp = shape.cp;
    sizes.dp = dp;
    sizes.ep = shape.ep;
    sizes.expert_tp = shape.expert_tp;
    const bool one_replica = dp * shape.cp == 1 && (!space.model.is_moe() || sizes.expert_dp() == 1);
    if (one_replica && shape.zero_stage > space.lowest_zero_stage) continue;
    // The largest batch in the range this layout divides into micro-batches (more micro-batches
    // per step only shrink the pipeline bubble's share), within what the event simulation can
    // re-run where the range allows (else the point is pruned as beyond it, and counted).
    const int64_t per_step = shape.micro_batch * dp;  // sequences of one micro-batch per replica
    const int64_t simulable = std::min(batch_hi, event_micro_batches * per_step) / per_step * per_step;
    const int64_t batch = simulable >= batch_lo ? simulable : batch_hi / per_step * per_step;
    if (batch < batch_lo) continue;
    out.push_back({dp, batch});
  }
  return out;
}

void set_point(Scenario& s, const PlanShape& shape, const DataParallelChoice& choice) {
  s.cluster.num_gpus = shape.model_parallel() * choice.dp;
  Layout& l = s.layout;
  l.tp = shape.tp;
  l.pp = shape.pp;
  l.dp = choice.dp;
  l.cp = shape.cp;
  l.ep = shape.ep;
  l.expert_tp = s.model.is_moe() ? shape.expert_tp : 1;
  l.virtual_stages = shape.virtual_stages;
  l.pipeline_split = shape.split;
  l.sequence_parallel = shape.tp > 1;  // the scenario's default
  l.zero_stage = shape.zero_stage;
  l.micro_batch = shape.micro_batch;
  l.global_batch = choice.global_batch;
  l.recompute = shape.recompute;
  l.ep_intra_level = ep_domain_level(s.cluster, l);
}

Scenario point_scenario(const PlanBase& base, const PlanShape& shape, const DataParallelChoice& choice) {
  Scenario s = *base.scenario;
  set_point(s, shape, choice);
  return s;
}

}  // namespace simrun::planner
