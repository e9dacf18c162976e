// --explain entries shared by the analytic estimate and the event simulation; see explain.hpp.
#include "simrun/sim/memory/explain.hpp"

#include <fmt/format.h>

#include "simrun/common/units.hpp"

namespace simrun::detail {
namespace {

std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

}  // namespace

void explain(Report& r, std::string key, double value, std::string unit, std::string formula,
             std::string inputs) {
  r.explanations.push_back({std::move(key), value, std::move(unit), std::move(formula), std::move(inputs)});
}

void explain_throughput(const Scenario& sc, const FlopCounts& per_sequence, AttentionFlops convention,
                        double peak, Report& r) {
  const Layout& l = sc.layout;
  const ModelSpec& m = sc.model;
  explain(r, "flops_per_step", r.flops_per_step, "FLOP",
          "per-sequence model FLOPs · global_batch (" +
              std::string(convention == AttentionFlops::causal ? "causal" : "non-causal") + ")",
          fmt::format(
              "dense_gemms={:.4g}, attention_core={:.4g}, logits={:.4g} per sequence, global_batch={}",
              per_sequence.dense_gemms, per_sequence.attention_core, per_sequence.logits, l.global_batch));
  explain(r, "tokens_per_s", r.tokens_per_s, "token/s", "global_batch · seq_len / step_time_s",
          fmt::format("global_batch={}, seq_len={}, step_time_s={:.4g}", l.global_batch, m.seq_len,
                      r.step_time_s));
  explain(r, "tflops_per_gpu", r.tflops_per_gpu, "TFLOP/s",
          "flops_per_step / (step_time_s · num_gpus) / 1e12",
          fmt::format("flops_per_step={:.4g}, step_time_s={:.4g}, num_gpus={}", r.flops_per_step,
                      r.step_time_s, l.world_size()));
  explain(r, "mfu", r.mfu, "", "flops_per_step / (step_time_s · num_gpus · peak)",
          fmt::format("peak={:.4g} FLOP/s ({} dense, {})", peak, to_string(l.precision), sc.cluster.gpu.id));
  explain(r, "hfu", r.hfu, "",
          "(flops_per_step + recompute and expert capacity padding flops) / (step_time_s · num_gpus · peak)",
          fmt::format("extra_flops={:.4g} (recompute {}, moe_capacity_factor {})",
                      r.hardware_flops_per_step - r.flops_per_step, to_string(l.recompute),
                      l.moe_capacity_factor > 0 ? fmt::format("{:g}", l.moe_capacity_factor) : "none"));
  explain(r, "model.params", r.params, "", "sum of weight matrices, biases and norms (count_params)",
          fmt::format("layers={}, hidden={}, ffn_hidden={}, vocab={}", m.layers, m.hidden, m.ffn_hidden,
                      m.vocab));
}

void explain_memory(const Scenario& sc, const StageMemory& ws, const MemoryDefaults& defaults, Report& r) {
  const Layout& l = sc.layout;
  const BytesPerParam bpp = bytes_per_param(l, defaults.convention);
  // Each state: the stage's dense parameters, sharded over d = dp·cp, and its routed experts,
  // over the expert-data-parallel group d_e, where ZeRO's stage shards that state (memory_model's
  // parts, StageMemory), plus ZeRO-3's transients: the gathered working set of weights, the
  // gradients held unsharded before their reduce-scatter.
  const std::string shards = fmt::format(
      "stage={}, dense params per GPU={:.4g}, experts {:.4g}, zero_stage={}, "
      "d={}, d_e={}",
      ws.stage, ws.params.dense, ws.params.experts, l.zero_stage, l.dp * l.cp, l.expert_dp());
  explain(
      r, "memory.weights", r.memory.weights, "B",
      "dense · weight bytes + experts · weight bytes, over d and d_e under ZeRO-3, + ZeRO-3 gathered weights",
      fmt::format("{}, bytes/param={}: dense {}, experts {}, gathered {}", shards, bpp.weights,
                  gb(ws.dense_states.weights), gb(ws.expert_states.weights), gb(ws.fsdp_gathered_bytes)));
  explain(
      r, "memory.grads", r.memory.grads, "B",
      "dense · grad bytes + experts · grad bytes, over d and d_e under ZeRO-3 and under ZeRO-2 where the "
      "framework reduces every micro-batch, + ZeRO-3 unsharded gradients",
      fmt::format("bytes/param={} ({} main grads){}: dense {}, experts {}, unsharded {}", bpp.grads,
                  defaults.convention == StateConvention::megatron ? "Megatron fp32" : "ZeRO-paper 16-bit",
                  l.zero_stage == 2 && !defaults.zero2_reduce_every_micro_batch &&
                          defaults.convention != StateConvention::fsdp
                      ? ", held whole under ZeRO-2: the framework reduces them once per step"
                      : "",
                  gb(ws.dense_states.grads), gb(ws.expert_states.grads), gb(ws.fsdp_unsharded_grad_bytes)));
  explain(r, "memory.optimizer", r.memory.optimizer, "B",
          "dense · optimizer bytes + experts · optimizer bytes, over d and d_e under ZeRO ≥ 1",
          fmt::format("bytes/param={} (fp32 master + Adam m, v): dense {}, experts {}", bpp.optimizer,
                      gb(ws.dense_states.optimizer), gb(ws.expert_states.optimizer)));
  explain(
      r, "memory.activations", r.memory.activations, "B",
      "layer-micro-batches in flight · per-layer (Korthikanti 2022) + embedding + logits + full-recompute "
      "working layer + CP exchange buffers",
      fmt::format(
          "in flight: {:.3g} micro-batches on {} layers ({:.4g} layer-micro-batches), per-layer={}, "
          "embedding={}, logits={}, working={}, cp exchange={}",
          ws.in_flight_microbatches, ws.params.layers,
          ws.layer_activation_bytes > 0 ? ws.transformer_activation_bytes / ws.layer_activation_bytes : 0.0,
          gb(ws.layer_activation_bytes), gb(ws.embedding_activation_bytes), gb(ws.output_activation_bytes),
          gb(ws.recompute_working_bytes), gb(ws.cp_exchange_bytes)));
  explain(r, "memory.peak_bytes_per_gpu", r.memory.peak_bytes_per_gpu, "B",
          "weights + grads + optimizer + activations + workspace (worst stage)",
          fmt::format("stage={}, workspace={} ({} fixed + {}·activations), capacity={}", ws.stage,
                      gb(r.memory.workspace), gb(defaults.fixed_bytes), defaults.fragmentation_fraction,
                      gb(r.memory.capacity_bytes)));
}

void explain_run(const Scenario& sc, const RunTotals& run, const RunDefaults& defaults, Report& r) {
  const Layout& l = sc.layout;
  const double tokens_per_step = double(l.global_batch) * double(sc.model.seq_len);
  explain(r, "run.tokens", r.run.tokens, "token",
          sc.run.tokens > 0 ? "run.tokens" : "20 · params (Chinchilla, Hoffmann et al. 2022)",
          fmt::format("params={:.4g}, steps={:.0f} of {:.4g} tokens", r.params, run.steps, tokens_per_step));
  explain(r, "run.goodput", r.run.goodput, "",
          "T_s / T_w, T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ (Daly 2006); τ Daly optimum unless given",
          fmt::format(
              "M={:.4g} h (gpu_mtbf {} h / {} GPUs), δ={:.4g} s ({} at {:.4g} GB/s: {:.4g} GB/s per node, "
              "{:.4g} GB/s per {}-node storage unit, {:.4g} TB/s at most), τ={:.4g} min, R={} s",
              run.mtbf_s / kSecondsPerHour, sc.run.gpu_mtbf_hours, l.world_size(), run.checkpoint_s,
              gb(run.checkpoint_bytes), run.checkpoint_write_bytes_per_s / 1e9,
              defaults.storage_write_bytes_per_s_per_node / 1e9,
              defaults.storage_write_bytes_per_s_per_unit / 1e9, defaults.nodes_per_storage_unit,
              defaults.storage_write_cap_bytes_per_s / 1e12, run.interval_s / 60.0, defaults.restart_s));
  explain(
      r, "run.days", r.run.days, "day", "T_w / 86400, T_w = steps · step_time_s / goodput",
      fmt::format("steps={:.0f}, step_time_s={:.4g}, goodput={:.4f}", run.steps, r.step_time_s, run.goodput));
  explain(r, "run.gpu_hours", r.run.gpu_hours, "GPU·h", "num_gpus · T_w / 3600",
          fmt::format("num_gpus={}, T_w={:.4g} s", l.world_size(), run.wall_s));
  explain(r, "run.cost_usd", r.run.cost_usd, "$", "gpu_hours · usd_per_gpu_hour",
          fmt::format("gpu_hours={:.4g}, usd_per_gpu_hour={}", run.gpu_hours, sc.run.usd_per_gpu_hour));
  explain(r, "run.energy_kwh", r.run.energy_kwh, "kWh",
          "num_gpus · TDP · (idle + (1 − idle) · busy) · T_w / 3.6e6 (GPU board power only)",
          fmt::format("TDP={} W, idle={}, busy={:.3f} ({}), {:.0f} W per GPU", sc.cluster.gpu.tdp_w,
                      defaults.idle_power_fraction, run.busy_fraction,
                      sc.run.assumed_mfu && r.fidelity == "analytic"
                          ? "an assumed MFU's step is all compute"
                          : "compute over the step, the mean of the pipeline's stages",
                      run.power_w_per_gpu));
}

}  // namespace simrun::detail
