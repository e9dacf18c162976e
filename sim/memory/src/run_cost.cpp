// Run totals: tokens, checkpoint/failure overhead, days, cost, energy; formulas in run_cost.hpp.
#include "simrun/sim/memory/run_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"

namespace simrun {

double young_interval_s(double checkpoint_s, double mtbf_s) {
  SIMRUN_ASSERT(checkpoint_s >= 0 && mtbf_s > 0, "Young interval needs δ ≥ 0 and M > 0");
  return std::sqrt(2.0 * checkpoint_s * mtbf_s);
}

double daly_interval_s(double checkpoint_s, double mtbf_s) {
  SIMRUN_ASSERT(checkpoint_s >= 0 && mtbf_s > 0, "Daly interval needs δ ≥ 0 and M > 0");
  if (checkpoint_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = checkpoint_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * checkpoint_s * mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - checkpoint_s;
}

double daly_wall_time_s(double solve_s, double interval_s, double checkpoint_s, double restart_s,
                        double mtbf_s) {
  SIMRUN_ASSERT(interval_s > 0 && mtbf_s > 0, "Daly wall time needs τ > 0 and M > 0");
  return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + checkpoint_s) / mtbf_s) * solve_s /
         interval_s;
}

double checkpoint_write_bytes_per_s(int64_t num_nodes, const RunDefaults& d) {
  const int64_t nodes = std::max<int64_t>(1, num_nodes);
  const int64_t units = nodes / d.nodes_per_storage_unit, rest = nodes % d.nodes_per_storage_unit;
  const double partial =
      std::min(d.storage_write_bytes_per_s_per_node * double(rest), d.storage_write_bytes_per_s_per_unit);
  return std::min(d.storage_write_bytes_per_s_per_unit * double(units) + partial,
                  d.storage_write_cap_bytes_per_s);
}

RunTotals run_totals(const RunInputs& in, const RunDefaults& d) {
  SIMRUN_ASSERT(in.tokens_per_step > 0 && in.step_time_s > 0 && in.num_gpus > 0, "run needs a step");
  RunTotals r;
  r.tokens = in.tokens > 0 ? in.tokens : d.chinchilla_tokens_per_param * in.params;
  r.steps = std::ceil(r.tokens / in.tokens_per_step);
  r.solve_s = r.steps * in.step_time_s;

  r.checkpoint_bytes = in.checkpoint_bytes;
  r.checkpoint_write_bytes_per_s = checkpoint_write_bytes_per_s(in.num_nodes, d);
  r.checkpoint_s = in.checkpoint_bytes / r.checkpoint_write_bytes_per_s;
  if (in.gpu_mtbf_hours > 0) {
    r.mtbf_s = in.gpu_mtbf_hours * kSecondsPerHour / double(in.num_gpus);
    r.interval_s = in.interval_s > 0 ? in.interval_s : daly_interval_s(r.checkpoint_s, r.mtbf_s);
    if (r.interval_s <= 0) r.interval_s = std::max(r.checkpoint_s, 1.0);
    r.never_finishes = r.mtbf_s <= d.restart_s;
    r.wall_s = r.never_finishes
                   ? INFINITY
                   : daly_wall_time_s(r.solve_s, r.interval_s, r.checkpoint_s, d.restart_s, r.mtbf_s);
  } else {
    // No failures: only the checkpoints cost time.
    r.mtbf_s = INFINITY;
    r.interval_s = in.interval_s;
    r.wall_s = r.solve_s * (in.interval_s > 0 ? 1.0 + r.checkpoint_s / in.interval_s : 1.0);
  }
  r.goodput = r.never_finishes ? 0.0 : r.wall_s > 0 ? r.solve_s / r.wall_s : 1.0;
  r.days = r.wall_s / kSecondsPerDay;
  r.gpu_hours = r.wall_s * double(in.num_gpus) / kSecondsPerHour;
  r.cost_usd = r.gpu_hours * in.usd_per_gpu_hour;
  r.busy_fraction = std::clamp(in.busy_fraction, 0.0, 1.0);
  r.power_w_per_gpu = in.tdp_w * (d.idle_power_fraction + (1.0 - d.idle_power_fraction) * r.busy_fraction);
  r.energy_kwh = r.power_w_per_gpu * double(in.num_gpus) * r.wall_s / 3.6e6;
  return r;
}

RunInputs run_inputs(const Scenario& sc, const BytesPerParam& bpp, double params, double step_time_s,
                     double busy_fraction) {
  const Layout& l = sc.layout;
  RunInputs in;
  in.params = params;
  in.tokens = sc.run.tokens;
  in.tokens_per_step = double(l.global_batch) * double(sc.model.seq_len);
  in.step_time_s = step_time_s;
  in.busy_fraction = std::clamp(busy_fraction, 0.0, 1.0);
  in.num_gpus = l.world_size();
  in.num_nodes = sc.cluster.num_nodes();
  in.checkpoint_bytes = params * (bpp.weights + bpp.optimizer);
  in.usd_per_gpu_hour = sc.run.usd_per_gpu_hour;
  in.gpu_mtbf_hours = sc.run.gpu_mtbf_hours;
  in.interval_s = sc.run.checkpoint_interval_min ? *sc.run.checkpoint_interval_min * 60.0 : 0.0;
  in.tdp_w = sc.cluster.gpu.tdp_w;
  return in;
}

RunTotals fill_run_report(const Scenario& sc, const BytesPerParam& bpp, const RunDefaults& defaults,
                          double busy_fraction, Report& r) {
  const RunInputs in = run_inputs(sc, bpp, r.params, r.step_time_s, busy_fraction);
  const RunTotals run = run_totals(in, defaults);
  r.run.tokens = run.tokens;
  r.run.days = run.days;
  r.run.gpu_hours = run.gpu_hours;
  r.run.cost_usd = run.cost_usd;
  r.run.energy_kwh = run.energy_kwh;
  r.run.goodput = run.goodput;
  r.run.checkpoint_interval_s = run.interval_s;
  if (run.never_finishes)
    r.warnings.push_back(fmt::format(
        "the run never finishes: {:.4g} h per GPU over {} GPUs is a failure every {:.3g} s, within one "
        "{:.0f} s "
        "restart (days, GPU-hours, cost and energy are left out; a longer run.gpu_mtbf_hours or fewer GPUs)",
        sc.run.gpu_mtbf_hours, in.num_gpus, run.mtbf_s, defaults.restart_s));
  else if (run.goodput < 0.8)
    r.warnings.push_back(
        fmt::format("goodput {:.2f}: failures and checkpoints cost more than 20% of the run (job "
                    "MTBF {:.2f} h)",
                    run.goodput, run.mtbf_s / kSecondsPerHour));
  return run;
}

}  // namespace simrun
