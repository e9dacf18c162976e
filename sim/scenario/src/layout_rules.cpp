// The layout rules (layout_rules.hpp): each written once.
#include "simrun/sim/scenario/layout_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "simrun/common/error.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"

namespace simrun {
namespace {

LayoutDiagnostic diag(std::string field, std::string code, std::string message) {
  return LayoutDiagnostic{std::move(field), std::move(code), std::move(message)};
}

// An integer-valued double as digits ("1208925819614629174706176"), without int64_t overflow.
std::string format_count(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", x);
  return buf;
}

// The rules of the layout's own pipeline_schedule (an unset one runs 1F1B or interleaved 1F1B,
// whose rules are the split's and the workload builder's).
std::optional<LayoutDiagnostic> schedule_error(const ModelSpec& model, const Layout& layout) {
  if (!layout.pipeline_schedule) return std::nullopt;
  const std::string field = "layout.pipeline_schedule";
  const int64_t m = layout.num_microbatches();
  if (one_chunk_per_rank(*layout.pipeline_schedule) && layout.virtual_stages > 1)
    return diag(field, "virtual_stages_need_interleaving",
                fmt::format("{} runs one model chunk per rank: virtual_stages must be 1, got {} (use "
                            "interleaved for virtual stages)",
                            to_string(*layout.pipeline_schedule), layout.virtual_stages));
  switch (*layout.pipeline_schedule) {
    case PipelineSchedule::gpipe:
    case PipelineSchedule::one_f_one_b:
      return std::nullopt;
    case PipelineSchedule::interleaved:
      if (layout.virtual_stages < 2)
        return diag(field, "interleaved_needs_virtual_stages",
                    "interleaved needs virtual_stages >= 2 (set layout.virtual_stages, or use 1f1b)");
      return std::nullopt;
    case PipelineSchedule::combined_1f1b:
      // Megatron-Core TransformerConfig.__post_init__ (overlap_moe_expert_parallel_comm) and the
      // MoE README's "Requirements for EP A2A Overlap".
      if (!model.is_moe() || layout.ep < 2)
        return diag(
            field, "combined_1f1b_needs_ep",
            "combined-1f1b hides expert-parallel all-to-alls and needs ep > 1 on a mixture-of-experts "
            "model (Megatron-Core requires expert_model_parallel_size > 1)");
      if (layout.pp > 1 && layout.virtual_stages < 2)
        return diag(
            field, "combined_1f1b_needs_interleaving",
            "combined-1f1b with pp > 1 needs virtual_stages >= 2 (Megatron-Core runs it on interleaved "
            "pipelines only, or with pp = 1)");
      if (layout.recompute == Recompute::full)
        return diag(
            field, "combined_1f1b_no_full_recompute",
            "combined-1f1b cannot run with full recompute (Megatron-Core refuses recompute_granularity "
            "full with it: use selective or none)");
      if (layout.zero_stage >= 3)
        return diag(
            field, "combined_1f1b_zero_3",
            "combined-1f1b is modelled with ZeRO 0-2 (its paired micro-batches and ZeRO-3's per-layer "
            "gathers are not modelled together): use zero_stage <= 2");
      return std::nullopt;
    case PipelineSchedule::dualpipe:
      // DualPipe's step (deepseek-ai/DualPipe dualpipe.py): num_ranks % 2 == 0, num_chunks % 2 == 0,
      // num_chunks >= 2 * num_ranks; each rank holds two stages of its own, no virtual stages.
      if (layout.pp < 2 || layout.pp % 2 != 0)
        return diag(
            field, "dualpipe_needs_even_stages",
            fmt::format("dualpipe needs an even number of pipeline stages, got pp {} (each rank pairs "
                        "with its mirror, pp − 1 − rank)",
                        layout.pp));
      if (layout.zero_stage >= 3)
        return diag(
            field, "dualpipe_zero_3",
            "dualpipe is modelled with ZeRO 0-2 (DeepSeek-V3 ran it with ZeRO-1): use zero_stage <= 2");
      if (layout.virtual_stages > 1)
        return diag(
            field, "dualpipe_without_virtual_stages",
            fmt::format("dualpipe holds two stages per rank of its own (one per direction): virtual_stages "
                        "must be 1, got {}",
                        layout.virtual_stages));
      if (m < 2 * layout.pp || m % 2 != 0) {
        const int64_t fix = std::max<int64_t>(2 * layout.pp, m + m % 2);  // the next even count ≥ 2·pp
        return diag(
            field, "dualpipe_micro_batches",
            fmt::format("dualpipe needs an even number of micro-batches, at least 2·pp = {}, got {} = "
                        "global_batch/(micro_batch·dp) (use global_batch {})",
                        2 * layout.pp, m, fix * layout.micro_batch * layout.dp));
      }
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::gpipe:
      return "gpipe";
    case PipelineSchedule::one_f_one_b:
      return "1f1b";
    case PipelineSchedule::interleaved:
      return "interleaved-1f1b";
    case PipelineSchedule::combined_1f1b:
      return "combined-1f1b";
    case PipelineSchedule::dualpipe:
      return "dualpipe";
  }
  return "?";
}

PipelineSchedule default_schedule(const Layout& layout) {
  if (layout.pipeline_schedule) return *layout.pipeline_schedule;
  return layout.virtual_stages > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
}

PipelineSchedule slot_order(PipelineSchedule schedule, int64_t virtual_stages) {
  if (schedule != PipelineSchedule::combined_1f1b) return schedule;
  return virtual_stages > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
}

bool pairs_forward_and_backward(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::combined_1f1b || schedule == PipelineSchedule::dualpipe;
}

namespace {

// The recipe must match the precision (fp8 recipes for fp8, nvfp4 for fp4) and run natively on
// the GPU (block-scaled formats need Blackwell-class tensor cores).
std::optional<LayoutDiagnostic> precision_recipe_error(const Layout& layout, const GpuSpec& gpu) {
  const bool low = layout.low_precision();
  const PrecisionRecipeSpec& recipe = precision_recipe(layout.recipe());
  // Written for a 16/32-bit run, a recipe (delayed, the fp8 default, too) would go unused.
  if (!low && layout.fp8_recipe)
    return diag("layout.fp8_recipe", "recipe_needs_low_precision",
                std::string(recipe.name) + " scales fp8/fp4 GEMMs; precision " + to_string(layout.precision) +
                    " runs none (set precision to fp8 or fp4, or leave the recipe out)");
  if (!low && layout.fp8_param_gather)
    return diag(
        "layout.fp8_param_gather", "param_gather_needs_fp8",
        std::string("fp8 parameters need fp8 training (precision ") + to_string(layout.precision) + ")");
  if (!low) return std::nullopt;
  if (!recipe_runs_at(recipe.id, layout.precision))
    return diag("layout.fp8_recipe", "recipe_precision_mismatch",
                fmt::format("{} is an {} recipe, the layout's precision is {} (fp8: delayed, tensorwise, "
                            "blockwise or mxfp8; fp4: nvfp4)",
                            recipe.name, to_string(recipe.gemm_precision), to_string(layout.precision)));
  if (layout.fp8_param_gather && !fp8_param_gather_runs_at(layout.precision))
    return diag("layout.fp8_param_gather", "param_gather_needs_fp8",
                "fp8 parameters need an fp8 recipe (the layout trains in fp4)");
  const auto& archs = recipe.architectures;
  if (!archs.empty() && std::find(archs.begin(), archs.end(), gpu.architecture) == archs.end())
    return diag("layout.fp8_recipe", "recipe_unsupported_by_gpu",
                fmt::format("{} needs tensor cores that apply block scales ({}); {} is {}", recipe.name,
                            fmt::join(archs, ", "), gpu.id,
                            gpu.architecture.empty() ? "another kind" : gpu.architecture));
  return std::nullopt;
}

}  // namespace

std::optional<LayoutDiagnostic> layout_error(const ModelSpec& model, const ClusterSpec& cluster,
                                             const Layout& layout) {
  // In double: four factors of up to 2^20 overflow int64_t before they can be compared.
  const double world = double(layout.tp) * double(layout.pp) * double(layout.dp) * double(layout.cp);
  if (world != double(cluster.num_gpus))
    return diag("layout", "world_size",
                "tp*pp*dp*cp = " + std::to_string(layout.tp) + "*" + std::to_string(layout.pp) + "*" +
                    std::to_string(layout.dp) + "*" + std::to_string(layout.cp) + " = " +
                    format_count(world) + " but cluster.num_gpus = " + std::to_string(cluster.num_gpus) +
                    " (they must be equal)");
  if (model.heads % layout.tp != 0)
    return diag("layout.tp", "tp_divides_heads",
                "tp " + std::to_string(layout.tp) + " does not divide the model's " +
                    std::to_string(model.heads) + " attention heads");
  // Megatron-Core's TransformerConfig requires num_query_groups % tp == 0.
  if (model.kv_heads % layout.tp != 0)
    return diag("layout.tp", "tp_divides_kv_heads",
                "tp " + std::to_string(layout.tp) + " does not divide the model's " +
                    std::to_string(model.kv_heads) + " kv_heads (query groups)");
  // Megatron's column-parallel FFN splits its width over tp (ColumnParallelLinear's
  // divide(output_size, world_size) asserts divisibility), as expert_tp splits an expert's.
  if (model.dense_layers() > 0 && model.ffn_hidden % layout.tp != 0)
    return diag("layout.tp", "tp_divides_ffn",
                "tp " + std::to_string(layout.tp) + " does not divide the model's ffn_hidden " +
                    std::to_string(model.ffn_hidden));
  if (layout.virtual_stages > 1 && layout.pp == 1)
    return diag("layout.virtual_stages", "virtual_stages_need_pp",
                "virtual stages need pp > 1 (interleaved 1F1B)");
  // The pipeline split over every chunk the layout asks for (split_layers: one home).
  if (auto split = split_layers(model.layers, layout.pp, layout.virtual_stages, layout.pipeline_split).error)
    return split;
  if (layout.global_batch % (layout.micro_batch * layout.dp) != 0)
    return diag("layout.global_batch", "global_batch_divisible",
                std::to_string(layout.global_batch) +
                    " is not divisible by micro_batch*dp = " + std::to_string(layout.micro_batch) + "*" +
                    std::to_string(layout.dp) + " = " + std::to_string(layout.micro_batch * layout.dp));
  if (auto schedule = schedule_error(model, layout)) return schedule;
  if (model.seq_len % layout.cp != 0)
    return diag(
        "layout.cp", "cp_divides_seq_len",
        "cp " + std::to_string(layout.cp) + " does not divide seq_len " + std::to_string(model.seq_len));
  if (layout.sequence_parallel && model.seq_len % (layout.tp * layout.cp) != 0)
    return diag(
        "layout.sequence_parallel", "sp_divides_seq_len",
        "seq_len " + std::to_string(model.seq_len) + " is not divisible by tp*cp for sequence parallelism");
  if (layout.ep > 1 && !model.is_moe())
    return diag("layout.ep", "ep_needs_moe", "ep > 1 needs a mixture-of-experts model (this one is dense)");
  if (model.is_moe()) {
    if (model.moe->experts % layout.ep != 0)
      return diag("layout.ep", "ep_divides_experts",
                  "ep " + std::to_string(layout.ep) + " does not divide the " +
                      std::to_string(model.moe->experts) + " experts");
    if (layout.expert_tp != 1 && layout.expert_tp != layout.tp)
      return diag("layout.expert_tp", "expert_tp_one_or_tp",
                  "expert_tp " + std::to_string(layout.expert_tp) + " must be 1 or tp (" +
                      std::to_string(layout.tp) + ")");
    const int64_t dense_ranks = layout.tp * layout.cp * layout.dp;
    if (dense_ranks % (layout.ep * layout.expert_tp) != 0)
      return diag("layout.ep", "ep_divides_stage",
                  "ep*expert_tp = " + std::to_string(layout.ep * layout.expert_tp) +
                      " must divide tp*cp*dp = " + std::to_string(dense_ranks) +
                      " (experts are laid out over the ranks of one pipeline stage)");
    if (model.moe->expert_ffn_hidden % layout.expert_tp != 0)
      return diag("layout.expert_tp", "expert_tp_divides_ffn",
                  "expert_tp " + std::to_string(layout.expert_tp) + " does not divide expert_ffn_hidden " +
                      std::to_string(model.moe->expert_ffn_hidden));
    if (layout.tp > 1 && !layout.sequence_parallel)
      return diag("layout.sequence_parallel", "moe_needs_sp",
                  "a mixture-of-experts model with tp > 1 needs sequence_parallel (Megatron-Core "
                  "requires it: each rank routes its own sequence shard)");
    // Capacity cannot exceed the tokens themselves: factor · top_k / experts ≤ 1.
    const double most = double(model.moe->experts) / double(model.moe->top_k);
    if (layout.moe_capacity_factor > most)
      return diag("layout.moe_capacity_factor", "capacity_above_tokens",
                  fmt::format("{:g} gives each expert more than every token (at most experts/top_k = {:g})",
                              layout.moe_capacity_factor, most));
  } else {
    if (layout.moe_capacity_factor > 0)
      return diag("layout.moe_capacity_factor", "capacity_needs_moe",
                  "a capacity factor needs a mixture-of-experts model (this one is dense)");
    if (layout.expert_tp != 1)
      return diag("layout.expert_tp", "expert_tp_needs_moe",
                  "expert_tp > 1 needs a mixture-of-experts model (this one is dense)");
  }
  if (layout.precision == Precision::fp8 && cluster.gpu.fp8_flops_per_s <= 0)
    return diag("layout.precision", "fp8_unsupported",
                "fp8 is not supported by " + cluster.gpu.id + " (use bf16 or fp16)");
  if (layout.precision == Precision::fp4 && cluster.gpu.fp4_flops_per_s <= 0)
    return diag("layout.precision", "fp4_unsupported",
                "fp4 is not supported by " + cluster.gpu.id + " (Blackwell's NVFP4; use fp8 or bf16)");
  return precision_recipe_error(layout, cluster.gpu);
}

std::optional<LayoutDiagnostic> pipeline_engine_error(const Layout& layout, const WorkloadOptions& options) {
  if (options.pipeline_engine != PipelineEngine::deepspeed || layout.pp <= 1) return std::nullopt;
  // deepspeed/runtime/pipe/schedule.py: TrainSchedule (1F1B) only, no virtual stages.
  if (layout.pipeline_schedule && *layout.pipeline_schedule != PipelineSchedule::one_f_one_b &&
      layout.virtual_stages == 1)
    return diag("layout.pipeline_schedule", "deepspeed_pipeline_1f1b_only",
                fmt::format("{} with DeepSpeed's pipeline engine, which runs its TrainSchedule (1F1B) only "
                            "(use 1f1b, or a framework with Megatron's schedules)",
                            to_string(*layout.pipeline_schedule)));
  if (layout.virtual_stages > 1)
    return diag("layout.virtual_stages", "deepspeed_pipeline_no_interleaving",
                "virtual_stages " + std::to_string(layout.virtual_stages) +
                    " with DeepSpeed's pipeline engine, which has no interleaved schedule (use "
                    "virtual_stages 1, or a framework with Megatron's schedules)");
  // deepspeed/runtime/pipe/engine.py: assert zero_optimization_stage() < ZeroStageEnum.gradients.
  if (layout.zero_stage >= 2)
    return diag(
        "layout.zero_stage", "deepspeed_pipeline_zero",
        "zero_stage " + std::to_string(layout.zero_stage) +
            " with pp > 1: DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 (use zero_stage 0 or 1, "
            "or pp 1)");
  return std::nullopt;
}

std::vector<LayoutDiagnostic> layout_warnings(const Scenario& sc, PipelineSchedule schedule) {
  const Layout& l = sc.layout;
  const ClusterSpec& cluster = sc.cluster;
  const GpuSpec& gpu = cluster.gpu;
  std::vector<LayoutDiagnostic> out;
  const int64_t domain = scale_up_domain_size(cluster);
  // What a group beyond its scale-up domain crosses.
  auto crossing = [&](RankGroup g) {
    return group_over_host_pcie(cluster, g) ? "the node's PCIe" : "the inter-node fabric";
  };
  if (const RankGroup tp = rank_group(l, GroupKind::tp); !group_inside_scale_up(cluster, tp))
    out.push_back(diag(
        "layout.tp", "tp_leaves_scale_up",
        fmt::format("tp={} spans more than one scale-up domain ({} GPUs of {}): tensor-parallel "
                    "collectives cross {}",
                    l.tp, domain, gpu.scale_up_name.empty() ? "NVLink" : gpu.scale_up_name, crossing(tp))));
  if (const RankGroup cp = rank_group(l, GroupKind::cp); l.cp > 1 && !group_inside_scale_up(cluster, cp))
    out.push_back(diag("layout.cp", "cp_leaves_scale_up",
                       fmt::format("tp·cp={} spans more than one scale-up domain ({} GPUs): ring attention "
                                   "crosses {}",
                                   l.tp * l.cp, domain, crossing(cp))));
  // Ranks fill rack-scale domains in order: where the cluster ends in a partial rack, the DP
  // groups that reach it hold fewer members there than in a full rack, and their rings leave
  // that rack through those members' NICs alone.
  if (rack_scale_domain(gpu, cluster.gpus_per_node) && cluster.num_gpus > domain &&
      cluster.num_gpus % domain != 0) {
    const RankGroup dp = rank_group(l, GroupKind::dp_cp);
    std::map<int64_t, int64_t> per_domain;
    for (int64_t i = 0; i < dp.size; ++i) ++per_domain[i * dp.stride / domain];
    int64_t fewest = dp.size, most = 0;
    for (const auto& [d, members] : per_domain) {
      fewest = std::min(fewest, members);
      most = std::max(most, members);
    }
    if (per_domain.size() > 1 && fewest < most)
      out.push_back(diag("cluster.num_gpus", "partial_scale_up_domain",
                         fmt::format("{} GPUs fill {} scale-up domains of {} and {} GPUs of another: each DP "
                                     "group has {} member(s) there against {} in a full domain, and its "
                                     "collectives move through their NICs alone; a multiple of {} GPUs "
                                     "keeps the domains alike",
                                     cluster.num_gpus, cluster.num_gpus / domain, domain,
                                     cluster.num_gpus % domain, fewest, most, domain)));
  }
  // A pipeline of pp stages and m micro-batches idles (pp−1) micro-batch slots of its m+pp−1
  // (Narayanan et al. 2021, §2.2: GPipe and 1F1B alike).
  const int64_t micro_batches = l.num_microbatches();
  if (l.pp > 1 && micro_batches < l.pp)
    out.push_back(diag("layout.global_batch", "pipeline_never_fills",
                       fmt::format("only {} micro-batch{} for pp={}: the pipeline never fills (bubble "
                                   "(pp-1)/(m+pp-1) = {:.0f}% of the step); use at least pp micro-batches, "
                                   "ideally >= 4·pp",
                                   micro_batches, micro_batches == 1 ? "" : "es", l.pp,
                                   100.0 * double(l.pp - 1) / double(micro_batches + l.pp - 1))));
  if (slot_order(schedule, l.virtual_stages) != PipelineSchedule::interleaved && l.virtual_stages > 1)
    out.push_back(diag("layout.virtual_stages", "virtual_stages_ignored",
                       fmt::format("virtual_stages ignored by the {} schedule", to_string(schedule))));
  if (l.zero_stage == 3 && l.pp > 1)
    out.push_back(
        diag("layout.zero_stage", "fsdp_with_pipeline",
             "ZeRO-3 with pp > 1: Megatron-LM and DeepSpeed do not support it; modelled as "
             "torchtitan's FSDP+PP (each stage gathers its weights once per step, keeps them and "
             "accumulates unsharded gradients across micro-batches, reduce-scatters after the last)"));
  if (l.sequence_parallel && l.tp == 1)
    out.push_back(diag("layout.sequence_parallel", "sequence_parallel_unused",
                       "sequence_parallel has no effect with tp = 1"));
  const ModelSpec& m = sc.model;
  if (m.learned_position_embeddings && m.seq_len > m.max_positions)
    out.push_back(diag("model.seq_len", "positions_beyond_table",
                       fmt::format("seq_len {} is longer than {}'s learned position table ({} positions): "
                                   "counted with a table of {} (Megatron-LM refuses max_position_embeddings "
                                   "< seq_length)",
                                   m.seq_len, m.name, m.max_positions, m.position_table_rows())));
  if (l.cp > 1 && !l.flash_attention)
    out.push_back(diag("layout.flash_attention", "cp_without_flash",
                       "context parallelism without flash attention: Megatron's ring attention needs a "
                       "fused kernel"));
  return out;
}

LayerSplit split_layers(int64_t layers, int64_t pp, int64_t v, PipelineSplit split) {
  const int64_t chunks = pp * v;
  LayerSplit result;
  std::vector<int64_t>& out = result.layers_per_chunk;
  out.assign(static_cast<size_t>(chunks), 0);
  auto refuse = [&](std::string field, std::string code, std::string message) {
    result.error = diag(std::move(field), std::move(code), std::move(message));
    return result;
  };
  // Index of model chunk (virtual stage vs = chunk·pp + stage) in `out` is stage·v + chunk.
  auto at = [&](int64_t vs) -> int64_t& { return out[static_cast<size_t>((vs % pp) * v + vs / pp)]; };
  switch (split) {
    case PipelineSplit::even:
      if (layers % pp != 0)
        return refuse(
            "layout.pp", "pp_divides_layers",
            "pp " + std::to_string(pp) + " does not divide the model's " + std::to_string(layers) +
                " layers (or set layout.pipeline_split to \"embedding-loss-layers\" when layers + 2 "
                "divide, or \"balanced\" for any count)");
      if (layers % chunks != 0)
        return refuse("layout.virtual_stages", "virtual_stages_divide_layers",
                      std::to_string(v) + " virtual stages do not divide the " + std::to_string(layers / pp) +
                          " layers per pipeline stage");
      std::fill(out.begin(), out.end(), layers / chunks);
      return result;
    case PipelineSplit::embedding_loss_layers: {
      // Megatron --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split:
      // the embedding and the loss each take a layer's place on the first and last chunk.
      if ((layers + 2) % chunks != 0 || (layers + 2) / chunks < 2)
        return refuse("layout.pipeline_split", "embedding_loss_split",
                      "embedding-loss-layers needs layers + 2 = " + std::to_string(layers + 2) +
                          " divisible by pp*virtual_stages = " + std::to_string(chunks) +
                          " with at least 2 per chunk");
      const int64_t per = (layers + 2) / chunks;
      for (int64_t vs = 0; vs < chunks; ++vs) at(vs) = per;
      at(0) -= 1;
      at(chunks - 1) -= 1;
      return result;
    }
    case PipelineSplit::balanced: {
      if (layers < chunks)
        return refuse("layout.pp", "pp_exceeds_layers",
                      "pp*virtual_stages " + std::to_string(chunks) + " exceeds the model's " +
                          std::to_string(layers) + " layers");
      // As even as possible over the model chunks in pipeline order, the extra layers on the
      // middle chunks (the first and last also run the embedding and the loss): Megatron
      // --decoder-first/last-pipeline-num-layers for 1F1B, --pipeline-model-parallel-layout
      // (Megatron-Core 0.13+) for any split of interleaved chunks.
      const int64_t base = layers / chunks;
      int64_t extra = layers % chunks;
      for (auto& n : out) n = base;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < chunks; ++i) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        auto dist = [&](int64_t x) { return std::min(x, chunks - 1 - x); };
        return dist(a) > dist(b);
      });
      for (int64_t i = 0; extra > 0; ++i, --extra) at(order[static_cast<size_t>(i)]) += 1;
      return result;
    }
  }
  return result;
}

std::vector<int64_t> split_layers(int64_t layers, int64_t pp, int64_t v, PipelineSplit split,
                                  const std::string& file) {
  LayerSplit s = split_layers(layers, pp, v, split);
  if (s.error) throw InputError(file, s.error->field, s.error->message);
  return std::move(s.layers_per_chunk);
}

std::vector<int64_t> near_even_layers(int64_t layers, int64_t pp) {
  std::vector<int64_t> per_stage(size_t(pp), layers / pp);
  for (int64_t i = 0; i < layers % pp; ++i) per_stage[size_t(i)] += 1;
  return per_stage;
}

int64_t scheduled_chunks(const Layout& layout) {
  return slot_order(default_schedule(layout), layout.virtual_stages) == PipelineSchedule::interleaved
             ? layout.virtual_stages
             : 1;
}

LayerPlacement layer_placement(const ModelSpec& model, const Layout& layout) {
  LayerPlacement out;
  out.v = scheduled_chunks(layout);
  LayerSplit s = split_layers(model.layers, layout.pp, out.v, layout.pipeline_split);
  if (s.error) {
    out.v = 1;
    s.layers_per_chunk = near_even_layers(model.layers, layout.pp);
  }
  out.layers_per_chunk = std::move(s.layers_per_chunk);
  out.first_layer = chunk_first_layers(out.layers_per_chunk, layout.pp, out.v);
  return out;
}

std::vector<int64_t> stage_layers(const ModelSpec& model, const Layout& layout, int64_t stage) {
  const LayerPlacement p = layer_placement(model, layout);
  return stage_layer_ids(p.layers_per_chunk, layout.pp, p.v, stage);
}

std::vector<int64_t> chunk_first_layers(const std::vector<int64_t>& layers_per_chunk, int64_t pp, int64_t v) {
  std::vector<int64_t> first(layers_per_chunk.size(), 0);
  for (int64_t vs = 0, next = 0; vs < pp * v; ++vs) {  // virtual stage vs = chunk·pp + stage
    const size_t idx = size_t((vs % pp) * v + vs / pp);
    first[idx] = next;
    next += layers_per_chunk[idx];
  }
  return first;
}

std::vector<int64_t> stage_layer_ids(const std::vector<int64_t>& layers_per_chunk, int64_t pp, int64_t v,
                                     int64_t stage) {
  const std::vector<int64_t> first = chunk_first_layers(layers_per_chunk, pp, v);
  std::vector<int64_t> ids;
  for (int64_t c = 0; c < v; ++c) {
    const size_t idx = size_t(stage * v + c);
    for (int64_t i = 0; i < layers_per_chunk[idx]; ++i) ids.push_back(first[idx] + i);
  }
  return ids;
}

std::vector<std::string> messages(const std::vector<LayoutDiagnostic>& diagnostics) {
  std::vector<std::string> out;
  out.reserve(diagnostics.size());
  for (const LayoutDiagnostic& d : diagnostics) out.push_back(d.message);
  return out;
}

}  // namespace simrun
