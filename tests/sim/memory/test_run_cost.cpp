// Tests of the run totals: Young/Daly checkpoint intervals, Daly's expected wall-clock,
// Chinchilla tokens, GPU-hours, dollars and energy.
#include <catch2/catch.hpp>
#include <cmath>

#include "simrun/sim/memory/run_cost.hpp"

using namespace simrun;

TEST_CASE("Daly 2006 higher-order interval reproduces the paper's printed optima", "[sim][run_cost]") {
  // Daly 2006 (FGCS 22(3)) abstract: δ = 5 min; M = 24 h → 117 min, M = 6 h → 57 min,
  // M = 15 min → 9.1 min (ecosystem.md §7.4 computes 116.7, 56.7, 9.14).
  const double delta = 300;
  CHECK(daly_interval_s(delta, 24 * 3600.0) / 60 == Approx(116.7).margin(0.05));
  CHECK(daly_interval_s(delta, 6 * 3600.0) / 60 == Approx(56.7).margin(0.05));
  CHECK(daly_interval_s(delta, 15 * 60.0) / 60 == Approx(9.14).margin(0.005));
  // δ ≥ 2M: checkpoint once per MTBF.
  CHECK(daly_interval_s(3000, 1000) == 1000);
  // Young 1974: sqrt(2δM); Daly's correction is small when δ ≪ M.
  CHECK(young_interval_s(delta, 24 * 3600.0) == Approx(std::sqrt(2 * 300 * 86400.0)));
  CHECK(daly_interval_s(delta, 24 * 3600.0) == Approx(young_interval_s(delta, 24 * 3600.0)).epsilon(0.05));
}

TEST_CASE("Daly's interval minimises Daly's expected wall-clock", "[sim][run_cost]") {
  const double delta = GENERATE(10.0, 300.0);
  const double mtbf = GENERATE(3600.0, 86400.0);
  const double restart = 600, solve = 30 * 86400.0;
  const double tau = daly_interval_s(delta, mtbf);
  const double best = daly_wall_time_s(solve, tau, delta, restart, mtbf);
  for (double f : {0.5, 0.8, 0.95, 1.05, 1.25, 2.0})
    CHECK(daly_wall_time_s(solve, f * tau, delta, restart, mtbf) > best);
  CHECK(best > solve);
}

TEST_CASE("without failures the wall-clock is solve time plus checkpoint writes", "[sim][run_cost]") {
  // M → ∞: T_w → T_s·(τ + δ)/τ.
  CHECK(daly_wall_time_s(1e6, 3600, 60, 600, 1e15) == Approx(1e6 * 3660.0 / 3600.0).epsilon(1e-6));
}

TEST_CASE("checkpoint bandwidth: SuperPOD storage tiers per node and per scalable unit", "[sim][run_cost]") {
  // hardware.md §8, "better" tier: one node writes 4 GB/s, one 32-node unit 20 GB/s, 4 units 80 GB/s.
  CHECK(checkpoint_write_bytes_per_s(1) == Approx(4e9));
  CHECK(checkpoint_write_bytes_per_s(0) == Approx(4e9));
  CHECK(checkpoint_write_bytes_per_s(4) == Approx(16e9));
  CHECK(checkpoint_write_bytes_per_s(5) == Approx(20e9));
  CHECK(checkpoint_write_bytes_per_s(32) == Approx(20e9));
  CHECK(checkpoint_write_bytes_per_s(33) == Approx(24e9));  // a unit and one node
  CHECK(checkpoint_write_bytes_per_s(37) == Approx(40e9));
  CHECK(checkpoint_write_bytes_per_s(128) == Approx(80e9));
  // Llama 3's Tectonic, 2 TB/s sustained, caps the largest clusters (100 units and up).
  CHECK(checkpoint_write_bytes_per_s(2048) == Approx(1.28e12));
  CHECK(checkpoint_write_bytes_per_s(4096) == Approx(2e12));
}

TEST_CASE("run totals: Chinchilla tokens, days, GPU-hours, dollars, energy", "[sim][run_cost]") {
  RunInputs in;
  in.params = 70e9;
  in.tokens = 0;  // → 20 tokens per parameter (Hoffmann et al. 2022)
  in.tokens_per_step = 4e6;
  in.step_time_s = 5;
  in.busy_fraction = 0.8;
  in.num_gpus = 1024;
  in.num_nodes = 128;
  in.checkpoint_bytes = 70e9 * 14;
  in.usd_per_gpu_hour = 2;
  in.gpu_mtbf_hours = 50000;
  in.tdp_w = 700;
  const RunDefaults d;
  const RunTotals r = run_totals(in, d);
  CHECK(r.tokens == Approx(1.4e12));
  CHECK(r.steps == 350000);
  CHECK(r.solve_s == Approx(350000 * 5.0));
  CHECK(r.mtbf_s == Approx(50000 * 3600.0 / 1024));
  // 128 nodes are 4 SuperPOD scalable units at 20 GB/s each (the reference architecture's 4-SU
  // figure, 80 GB/s), not 128 × 4 GB/s: 980 GB in 12.25 s.
  CHECK(r.checkpoint_write_bytes_per_s == Approx(80e9));
  CHECK(r.checkpoint_s == Approx(980e9 / 80e9));
  CHECK(r.interval_s == Approx(daly_interval_s(r.checkpoint_s, r.mtbf_s)));
  CHECK(r.wall_s == Approx(daly_wall_time_s(r.solve_s, r.interval_s, r.checkpoint_s, d.restart_s, r.mtbf_s)));
  CHECK(r.goodput == Approx(r.solve_s / r.wall_s));
  CHECK(r.goodput < 1.0);
  CHECK(r.goodput > 0.95);
  CHECK(r.days == Approx(r.wall_s / 86400));
  CHECK(r.gpu_hours == Approx(r.wall_s * 1024 / 3600));
  CHECK(r.cost_usd == Approx(r.gpu_hours * 2));
  CHECK(r.power_w_per_gpu == Approx(700 * (0.15 + 0.85 * 0.8)));
  CHECK(r.energy_kwh == Approx(r.power_w_per_gpu * 1024 * r.wall_s / 3.6e6));

  SECTION("a given interval is used as is; explicit tokens override Chinchilla") {
    RunInputs fixed = in;
    fixed.interval_s = 1800;
    fixed.tokens = 2e12;
    const RunTotals f = run_totals(fixed, d);
    CHECK(f.interval_s == 1800);
    CHECK(f.tokens == 2e12);
    CHECK(f.goodput < r.goodput);  // 30 min is further from the optimum than Daly's τ
  }
  SECTION("more GPUs fail more often: goodput falls with scale") {
    RunInputs big = in;
    big.num_gpus = 16384;
    big.num_nodes = 2048;
    CHECK(run_totals(big, d).goodput < r.goodput);
  }
  SECTION("no failure model (gpu_mtbf_hours = 0): wall-clock is the solve time") {
    RunInputs none = in;
    none.gpu_mtbf_hours = 0;
    const RunTotals n = run_totals(none, d);
    CHECK(n.wall_s == Approx(n.solve_s));
    CHECK(n.goodput == 1.0);
  }
}
