// Totals of a training run: tokens, steps, wall-clock days including checkpoints and failures,
// GPU-hours, dollars, energy, and goodput.
//
// Tokens: run.tokens, or Chinchilla's compute-optimal 20 tokens per parameter (Hoffmann et al.
// 2022, arXiv:2203.15556, "Approach 1"; ecosystem.md §7.3) of the total parameter count.
// Failures: independent GPU failures, job MTBF M = gpu_mtbf_hours / num_gpus. Checkpoint write
// time δ = checkpoint bytes / storage write bandwidth (RunDefaults). Interval τ: the given one,
// or Daly's higher-order optimum (Daly 2006, FGCS 22(3):303-312; ecosystem.md §7.4)
//   τ = sqrt(2δM)·[1 + (1/3)·sqrt(δ/(2M)) + (1/9)·(δ/(2M))] − δ   for δ < 2M,   τ = M otherwise.
// Wall-clock for T_s seconds of solve time, restart time R, exponential failures (Daly 2006,
// eq. for the expected total wall-clock time):
//   T_w = M · e^{R/M} · (e^{(τ+δ)/M} − 1) · T_s/τ,   goodput = T_s / T_w.
// Energy: N GPUs at P = TDP·(idle + (1 − idle)·busy) for T_w, where busy is the fraction of a
// step a GPU runs compute kernels, averaged over the pipeline's stages (each holds as many GPUs);
// GPU board power only (no host, network, cooling).
#pragma once

#include <cstdint>

#include "simrun/sim/memory/memory_model.hpp"
#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

struct RunDefaults {
  // Restart after a failure: detection, rescheduling, reload; Daly's published runs use
  // R = 10 min, and Meta reports ≈10 min recovery stalls for synchronous training at scale
  // (FT-HSDP, arXiv:2602.00277).
  double restart_s = 600;
  // Checkpoint write bandwidth, the DGX H100 SuperPOD reference architecture's "better" storage
  // tier (hardware.md §8): 4 GB/s for one node writing ...
  double storage_write_bytes_per_s_per_node = 4e9;
  // ... but 20 GB/s for a whole scalable unit of 32 nodes (80 GB/s for 4 SU): the nodes of a unit
  // share its storage, they do not add up. The unit is DGX H100's (32 nodes of 8 GPUs); other
  // parts' nodes are counted against it as they are (a GB200 tray of 4 GPUs is a node) ...
  double storage_write_bytes_per_s_per_unit = 20e9;
  int nodes_per_storage_unit = 32;
  // ... up to the storage system's aggregate: Llama 3's Tectonic sustained 2 TB/s (hardware.md §8).
  double storage_write_cap_bytes_per_s = 2e12;
  // Idle board power as a fraction of TDP: H100 SXM idles at ≈70-100 W of 700 W.
  double idle_power_fraction = 0.15;
  // Chinchilla tokens per parameter when run.tokens is 0.
  double chinchilla_tokens_per_param = 20;
};

// Storage write bandwidth for a checkpoint of `num_nodes` nodes (RunDefaults): each whole unit's
// rate, the nodes of a partial unit at the per-node rate up to a unit's, at most the system's cap.
double checkpoint_write_bytes_per_s(int64_t num_nodes, const RunDefaults& defaults = {});

// Young 1974: τ = sqrt(2δM).
double young_interval_s(double checkpoint_s, double mtbf_s);
// Daly 2006 higher-order optimum (above).
double daly_interval_s(double checkpoint_s, double mtbf_s);
// Daly 2006 expected wall-clock (above).
double daly_wall_time_s(double solve_s, double interval_s, double checkpoint_s, double restart_s,
                        double mtbf_s);

struct RunInputs {
  double params = 0;           // total parameters, for Chinchilla tokens
  double tokens = 0;           // 0 = Chinchilla
  double tokens_per_step = 0;  // global_batch · seq_len
  double step_time_s = 0;
  double busy_fraction = 1;  // compute / step time, the mean over pipeline stages
  int64_t num_gpus = 0;
  int64_t num_nodes = 0;
  double checkpoint_bytes = 0;  // whole job's checkpoint (weights + optimizer states)
  double usd_per_gpu_hour = 0;
  double gpu_mtbf_hours = 0;
  double interval_s = 0;  // 0 = Daly optimum
  double tdp_w = 0;
};

struct RunTotals {
  double tokens = 0;
  double steps = 0;
  double solve_s = 0;           // steps · step time, no failures
  double mtbf_s = 0;            // job MTBF
  double checkpoint_bytes = 0;  // whole job's checkpoint
  double checkpoint_write_bytes_per_s = 0;
  double checkpoint_s = 0;  // δ
  double interval_s = 0;    // τ
  double wall_s = 0;        // T_w
  double days = 0;
  double gpu_hours = 0;
  double cost_usd = 0;
  double busy_fraction = 0;  // RunInputs::busy_fraction, clamped to [0, 1]
  double power_w_per_gpu = 0;
  double energy_kwh = 0;
  double goodput = 0;
  // The job fails, on average, before a restart is over (job MTBF ≤ restart): it never finishes
  // (Daly's expected time grows as e^(R/M) past any figure worth printing). Days, GPU-hours,
  // cost and energy are then infinite (null in JSON), goodput 0, and the report says why.
  bool never_finishes = false;
};

RunTotals run_totals(const RunInputs& in, const RunDefaults& defaults = {});

// A scenario's run inputs for a step of `step_time_s` with `busy_fraction` of it computing; the
// checkpoint holds `params` weights and optimizer states (not gradients) at `bpp`. Days and dollars
// grow with the step time (run_totals: the wall time is proportional to steps · step time).
RunInputs run_inputs(const Scenario& scenario, const BytesPerParam& bpp, double params, double step_time_s,
                     double busy_fraction);

// Fills report.run from a finished step estimate (report.params and step_time_s, with
// `busy_fraction` of the step computing, the mean over the pipeline's stages) and the scenario's
// run section (run_inputs). Shared by the analytic and event paths.
RunTotals fill_run_report(const Scenario& scenario, const BytesPerParam& bpp, const RunDefaults& defaults,
                          double busy_fraction, Report& report);

}  // namespace simrun
