// The seed chapter's four exercises (../shared/seed/training-infrastructure-chapter.txt,
// "Exercises"): each computed exactly as the chapter's code does, so its printed numbers come
// out digit for digit, and beside it the refined figure from simrun's full model with one line
// on why the two differ. `simrun textbook [1|2|3|4|all]` prints them (cli/textbook_command.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "simrun/sim/report/report.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

// Hardware and model the refined figures use (the chapter's H100, NDR InfiniBand, Llama-3 70B),
// from the catalogs; `ex4_scenario` is examples/textbook/ex4-llama3-70b-1024-h100.json when given.
struct TextbookInputs {
  GpuSpec gpu;        // h100-sxm
  FabricSpec fabric;  // ib-ndr
  ModelSpec model;    // llama3-70b
  std::optional<Scenario> ex4_scenario;
};

// Exercise 1: ring all-reduce of 7B bf16 gradients on 8 GPUs, NVLink vs InfiniBand.
struct Exercise1 {
  double grad_bytes = 0;            // 2 · 7e9
  int64_t num_gpus = 0;             // 8
  double nvlink_s = 0;              // chapter: 2(n−1)/n · S / 900 GB/s
  double ib_s = 0;                  // chapter: same at 25 GB/s
  double gap = 0;                   // ib_s / nvlink_s (≈ 36)
  double refined_nvlink_s = 0;      // α-β ring on NVLink at 450 GB/s per direction × ring efficiency
  double refined_ib_s = 0;          // 2 nodes × 4 GPUs, one NDR NIC per GPU, NCCL's ring per NIC
  double refined_ib_one_nic_s = 0;  // the same if each node had a single NDR NIC
  double refined_gap = 0;
  std::string why;
};
Exercise1 textbook_exercise1(const TextbookInputs& in);

// Exercise 2: HBM I/O of standard vs FlashAttention for N in {512 … 131072}, d = 64.
struct Exercise2Row {
  int64_t n = 0;
  double standard_bytes = 0;  // 4·(N·d + N²)·2 (FlashAttention paper Algorithm 0)
  double flash_bytes = 0;     // chapter: 4·N·d·2·max(1, N/100000)
  double speedup = 0;
  double refined_flash_bytes = 0;  // FlashAttention Algorithm 1 with the GPU's SRAM
  double refined_speedup = 0;
};
struct Exercise2 {
  int64_t head_dim = 64;
  int64_t block_cols = 0;  // B_c = ⌈M/(4d)⌉, M = SRAM per SM in elements
  std::vector<Exercise2Row> rows;
  std::string why;
};
Exercise2 textbook_exercise2(const TextbookInputs& in);

// Exercise 3: activation memory of an 80-layer, h = 8192 model, batch 4, vs sequence length.
struct Exercise3Row {
  int64_t seq_len = 0;
  double no_ckpt_bytes = 0;   // chapter: L · 10·b·s·h · 2
  double ckpt_bytes = 0;      // chapter: L · b·s·h · 2
  bool fits_no_ckpt = false;  // vs 80 GB − model states
  bool fits_ckpt = false;
  double refined_no_ckpt_bytes = 0;  // Korthikanti: L·(34sbh + 5as²b)
  double refined_ckpt_bytes = 0;     // L·2sbh + one layer's 34sbh + 5as²b during its backward
  bool refined_fits_no_ckpt = false;
  bool refined_fits_ckpt = false;
};
struct Exercise3 {
  double state_bytes_per_gpu = 0;  // 70e9 · 18 / 32
  double available_bytes = 0;      // 80e9 − state
  std::vector<Exercise3Row> rows;
  std::string why;
};
Exercise3 textbook_exercise3(const TextbookInputs& in);

// Exercise 4: Llama-3 70B on 1.4T tokens, 1024 H100 at $5/GPU-hour: days and cost vs MFU.
struct Exercise4Row {
  double mfu = 0;
  double days = 0;  // chapter: 6·N·D / (GPUs · 989e12 · MFU)
  double cost_usd = 0;
  double refined_days = 0;  // Megatron causal FLOPs of the real model at the same MFU
  double refined_cost_usd = 0;
};
struct Exercise4 {
  std::vector<Exercise4Row> rows;
  double observed_mfu = 0;          // chapter: 1M tokens/s · 6N / (GPUs · peak)
  double refined_observed_mfu = 0;  // Megatron FLOPs per token, dense bf16 peak 989.4
  double refined_flops_per_token = 0;
  double params = 0;                 // count_params of the real model
  std::optional<Report> full_model;  // estimate() of ex4_scenario
  std::string why;
};
Exercise4 textbook_exercise4(const TextbookInputs& in);

// Prints exercise 1-4, or all four for 0, as the chapter prints them plus the refined lines.
void print_textbook(std::ostream& out, int exercise, const TextbookInputs& in);

}  // namespace simrun
