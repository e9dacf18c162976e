// The faithful slice (slice.hpp).
#include "simrun/exec/slice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"

namespace simrun::exec {
namespace {

void slice_data_parallel(Slice& s, const SliceLimits& limits) {
  check_ranks(s.scenario, limits.ranks);
  Layout& l = s.scenario.layout;
  const int64_t dp = limits.ranks / (l.tp * l.cp * l.pp);
  if (dp == l.dp) return;
  const int64_t micro_batches = l.num_microbatches();
  const int64_t global_batch = l.micro_batch * dp * micro_batches;
  std::string change = fmt::format("dp {} -> {} (global batch {} -> {}: {} micro-batches per pipeline kept)",
                                   l.dp, dp, l.global_batch, global_batch, micro_batches);
  if (l.zero_stage > 0)
    change += fmt::format(
        "; ZeRO-{} shards over {} ranks instead of {}, so each rank's optimizer step and "
        "data-parallel collectives are {}x larger",
        l.zero_stage, dp, l.dp, l.dp / dp);
  l.dp = dp;
  l.global_batch = global_batch;
  s.scaled.push_back(change);
}

}  // namespace

void check_ranks(const Scenario& scenario, int64_t ranks) {
  const Layout& l = scenario.layout;
  const std::string& file = scenario.file;
  const int64_t replica = l.tp * l.cp * l.pp;
  if (ranks < replica)
    throw InputError(file, "layout",
                     fmt::format("one model replica needs tp x cp x pp = {} ranks and mpirun started {} (run "
                                 "with -np {}; fewer ranks than a replica cannot keep its shapes)",
                                 replica, ranks, replica));
  if (ranks % replica != 0)
    throw InputError(
        file, "layout",
        fmt::format("{} ranks do not form whole replicas of tp x cp x pp = {} ranks (run with -np "
                    "a multiple of {})",
                    ranks, replica, replica));
  const int64_t dp = ranks / replica;
  if (dp > l.dp)
    throw InputError(file, "layout.dp",
                     fmt::format("the layout runs on {} ranks and mpirun started {} (run with -np {})",
                                 l.world_size(), ranks, l.world_size()));
  if (l.ep > 1 && (l.tp * l.cp * dp) % (l.ep * l.expert_tp) != 0)
    throw InputError(file, "layout.ep",
                     fmt::format("ep {} x expert tp {} does not divide the {} ranks of a stage once dp is {} "
                                 "(run with -np {})",
                                 l.ep, l.expert_tp, l.tp * l.cp * dp, dp, l.world_size()));
}

namespace {

void slice_cluster(Slice& s, const SliceLimits& limits) {
  ClusterSpec& c = s.scenario.cluster;
  if (c.gpu.id != limits.device.id)
    s.scaled.push_back(fmt::format("device {} -> {} ({})", c.gpu.id, limits.device.id, limits.device.name));
  if (c.num_gpus != limits.ranks || c.gpus_per_node != limits.ranks_per_node)
    s.scaled.push_back(fmt::format("cluster {} GPUs, {} per node -> {} ranks, {} per node", c.num_gpus,
                                   c.gpus_per_node, limits.ranks, limits.ranks_per_node));
  c.gpu = limits.device;
  c.num_gpus = limits.ranks;
  c.gpus_per_node = limits.ranks_per_node;
  c.nics_per_node = std::min(c.nics_per_node, limits.ranks_per_node);
  s.scenario.layout.ep_intra_level = 0;  // one level inside one machine
}

void check_memory(const Slice& s, const SliceLimits& limits,
                  const std::function<double(const Scenario&)>& footprint) {
  const double per_rank = footprint(s.scenario);
  const double need = per_rank * double(limits.ranks_per_node);
  if (limits.memory_bytes > 0 && need > limits.memory_bytes)
    throw InputError(
        s.scenario.file, "layout",
        fmt::format("the buffers of one rank's shapes take {:.2f} GiB and {} ranks on this machine "
                    "need {:.2f} GiB; it has {:.2f} GiB to give (run fewer ranks per machine, or a "
                    "smaller micro-batch or sequence: the shapes cannot shrink faithfully)",
                    per_rank / kGiB, limits.ranks_per_node, need / kGiB, limits.memory_bytes / kGiB));
}

void slice_layers(Slice& s, const SliceLimits& limits,
                  const std::function<double(const Scenario&)>& predict_step) {
  ModelSpec& m = s.scenario.model;
  const Layout& l = s.scenario.layout;
  const int64_t chunks = l.pp * l.virtual_stages;
  const double step_s = predict_step(s.scenario);
  if (step_s <= limits.step_budget_s || m.layers <= chunks) return;
  // Layers a chunk keeps: as many as the budget allows, at least one.
  const int64_t per_chunk = m.layers / chunks;
  const int64_t keep =
      std::clamp<int64_t>(int64_t(std::floor(double(per_chunk) * limits.step_budget_s / step_s)), 1,
                          std::max<int64_t>(1, per_chunk - 1));
  const int64_t layers = keep * chunks;
  if (layers >= m.layers) return;
  // Seconds to three significant figures, whole seconds from 100 (a budget of 0.01 s is not "0 s").
  const auto seconds = [](double v) {
    return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
  };
  s.scaled.push_back(
      fmt::format("layers {} -> {} ({} per model chunk: a step was predicted at {} s on this "
                  "machine, over the step budget of {} s)",
                  m.layers, layers, keep, seconds(step_s), seconds(limits.step_budget_s)));
  if (m.moe) m.moe->first_dense_layers = std::min(m.moe->first_dense_layers, layers);
  m.layers = layers;
  s.scenario.layout.pipeline_split = PipelineSplit::even;
}

}  // namespace

Slice faithful_slice(const Scenario& scenario, const SliceLimits& limits,
                     const std::function<double(const Scenario&)>& footprint,
                     const std::function<double(const Scenario&)>& predict_step) {
  Slice s{scenario, {}};
  slice_data_parallel(s, limits);
  slice_cluster(s, limits);
  check_memory(s, limits, footprint);
  slice_layers(s, limits, predict_step);
  return s;
}

}  // namespace simrun::exec
