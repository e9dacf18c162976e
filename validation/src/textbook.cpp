// The seed chapter's exercises, computed as its code computes them, with simrun's refined
// figures beside them; see textbook.hpp.
#include "simrun/validation/textbook.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/common/units.hpp"
#include "simrun/models/counts.hpp"
#include "simrun/sim/analytic/analytic.hpp"
#include "simrun/sim/collectives/collective_cost.hpp"
#include "simrun/sim/memory/memory_model.hpp"

namespace simrun {
namespace {

// The chapter's constants (Exercise templates, verbatim).
constexpr double kChapterNvlinkGbps = 900;  // "NVLink (~900 GB/s)"
constexpr double kChapterIbGbps = 25;       // "InfiniBand (~25 GB/s)"
constexpr double kChapterParams7b = 7e9;
constexpr double kChapterSramTokens = 100000;  // flashattention_hbm_io(sram_size=100_000)
constexpr double kChapterHbmGb = 80;           // H100_MEM_GB
constexpr double kChapterParams70b = 70e9;     // MODEL_PARAMS
constexpr double kChapterTokens = 1.4e12;      // TOKENS
constexpr int64_t kChapterGpus = 1024;         // NUM_GPUS
constexpr double kChapterPeak = 989e12;        // PEAK_FLOPS_H100
constexpr double kChapterUsdPerGpuHour = 5.0;

// The chapter's all_reduce_time: 2(n−1)/n · S / (GB/s · 1e9).
double chapter_all_reduce_s(double bytes, int64_t n, double gbps) {
  return 2.0 * double(n - 1) / double(n) * bytes / (gbps * 1e9);
}

}  // namespace

Exercise1 textbook_exercise1(const TextbookInputs& in) {
  Exercise1 e;
  e.grad_bytes = 2 * kChapterParams7b;
  e.num_gpus = 8;
  e.nvlink_s = chapter_all_reduce_s(e.grad_bytes, e.num_gpus, kChapterNvlinkGbps);
  e.ib_s = chapter_all_reduce_s(e.grad_bytes, e.num_gpus, kChapterIbGbps);
  e.gap = e.ib_s / e.nvlink_s;

  const EfficiencyDefaults eff;
  ClusterSpec one_node;
  one_node.gpu = in.gpu;
  one_node.num_gpus = 8;
  one_node.gpus_per_node = 8;
  one_node.fabric = in.fabric;
  one_node.nics_per_node = 8;
  e.refined_nvlink_s = ring_all_reduce_s(e.grad_bytes, 8, group_link(one_node, {8, 1}, eff));
  ClusterSpec two_nodes = one_node;
  two_nodes.gpus_per_node = 4;
  two_nodes.nics_per_node = 4;
  e.refined_ib_s = ring_all_reduce_s(e.grad_bytes, 8, group_link(two_nodes, {8, 1}, eff));
  ClusterSpec one_nic = two_nodes;
  one_nic.nics_per_node = 1;
  e.refined_ib_one_nic_s = ring_all_reduce_s(e.grad_bytes, 8, group_link(one_nic, {8, 1}, eff));
  e.refined_gap = e.refined_ib_s / e.refined_nvlink_s;
  e.why =
      "900 GB/s is NVLink's two directions added; a ring sends one way at a time, 450 GB/s per direction, of "
      "which NCCL reaches ~82% (370 GB/s busbw). Across nodes NCCL runs one ring per NIC, so 4 GPUs with one "
      "NDR NIC each (50 GB/s, not 25) give 4 x 50 GB/s: the gap is a few x, not 36x, unless a node has a "
      "single NIC. These are rings, as the chapter's formula; where NVSwitch has SHARP, NCCL's tuner picks "
      "NVLS inside a node and NVLSTree across nodes, shorter still (an H100 node: 490 GB/s busbw, 50 ms; "
      "simrun collective times the algorithm NCCL would choose).";
  return e;
}

Exercise2 textbook_exercise2(const TextbookInputs& in) {
  Exercise2 e;
  const double d = double(e.head_dim);
  const double bytes = 2;  // dtype_bytes
  // FlashAttention (Dao et al. 2022, arXiv:2205.14135) Algorithm 1: on-chip SRAM of M elements,
  // key/value blocks of B_c = ⌈M/(4d)⌉ columns; K and V are read once, and for each of the
  // T_c = ⌈N/B_c⌉ key blocks Q and O are read and O written (3·N·d) with the softmax statistics
  // ℓ, m (4·N): HBM I/O = 2Nd + T_c·(3Nd + 4N) elements — Θ(N²d²/M), Theorem 2.
  const double sram_elements =
      (in.gpu.sram_per_sm_bytes > 0 ? in.gpu.sram_per_sm_bytes : 228.0 * 1024.0) / bytes;
  e.block_cols = int64_t(std::ceil(sram_elements / (4 * d)));
  for (int64_t n : {512, 2048, 8192, 32768, 131072}) {
    Exercise2Row r;
    r.n = n;
    const double N = double(n);
    // The chapter's standard_attention_hbm_io (its printed values): read Q, K; write S; read S,
    // write P; read P, V; write O = 4·(N·d + N²) elements (FlashAttention paper, Algorithm 0).
    r.standard_bytes = 4 * (N * d + N * N) * bytes;
    // The chapter's flashattention_hbm_io, verbatim.
    const double tiles = std::max(1.0, N / kChapterSramTokens);
    r.flash_bytes = 4 * N * d * bytes * tiles;
    r.speedup = r.standard_bytes / r.flash_bytes;
    const double key_blocks = std::ceil(N / double(e.block_cols));
    r.refined_flash_bytes = (2 * N * d + key_blocks * (3 * N * d + 4 * N)) * bytes;
    r.refined_speedup = r.standard_bytes / r.refined_flash_bytes;
    e.rows.push_back(r);
  }
  e.why = fmt::format(
      "the chapter's tiles = N/100000 treats SRAM as holding 100,000 tokens; with the {}'s {:.0f} KiB per SM "
      "(B_c = M/4d = {} keys per block) Algorithm 1 re-reads Q and O once per key block, so the I/O gap "
      "saturates near 4*B_c/(3d) = {:.1f}x (Theorem 2: Theta(N^2 d^2 / M)) instead of growing with N",
      in.gpu.id.empty() ? std::string("GPU") : in.gpu.id, sram_elements * bytes / 1024.0, e.block_cols,
      4.0 * double(e.block_cols) / (3.0 * d));
  return e;
}

Exercise3 textbook_exercise3(const TextbookInputs& in) {
  Exercise3 e;
  // The chapter: NUM_LAYERS, D_MODEL, BATCH_SIZE = 80, 8192, 4; STATE_GB = 70e9·18/32/1e9.
  const double L = 80, h = 8192, b = 4;
  e.state_bytes_per_gpu = kChapterParams70b * 18 / 32;
  e.available_bytes = kChapterHbmGb * 1e9 - e.state_bytes_per_gpu;
  // Refined: Korthikanti et al. 2022 per layer, no parallelism, 16-bit, with their dropout
  // accounting and without flash attention: 34sbh + 5as²b; full recompute keeps 2sbh per layer
  // plus one layer's activations while that layer's backward runs.
  // Their table is derived for MHA with ffn = 4h (GELU); a = the model's query heads.
  ModelSpec m = in.model;
  m.layers = int64_t(L);
  m.hidden = int64_t(h);
  m.kv_heads = m.heads;
  m.head_dim = m.hidden / m.heads;
  m.ffn_hidden = 4 * m.hidden;
  m.ffn_act = FfnActivation::gelu;
  for (int64_t s : {512, 1024, 2048, 4096, 8192, 16384}) {
    Exercise3Row r;
    r.seq_len = s;
    const double sbh = double(s) * b * h;
    r.no_ckpt_bytes = L * 10 * sbh * 2;  // activation_memory(..., with_checkpointing=False)
    r.ckpt_bytes = L * sbh * 2;          // activation_memory(..., with_checkpointing=True)
    r.fits_no_ckpt = r.no_ckpt_bytes / 1e9 < e.available_bytes / 1e9;
    r.fits_ckpt = r.ckpt_bytes / 1e9 < e.available_bytes / 1e9;
    ActivationConfig c;
    c.seq_len = s;
    c.micro_batch = int64_t(b);
    c.dropout = Dropout::masks;
    c.flash_attention = false;
    const double layer = layer_activation_bytes(m, c);
    c.recompute = Recompute::full;
    const double kept = layer_activation_bytes(m, c);
    r.refined_no_ckpt_bytes = L * layer;
    r.refined_ckpt_bytes = L * kept + layer;
    r.refined_fits_no_ckpt = r.refined_no_ckpt_bytes < e.available_bytes;
    r.refined_fits_ckpt = r.refined_ckpt_bytes < e.available_bytes;
    e.rows.push_back(r);
  }
  e.why = fmt::format(
      "the chapter's 10 values of sbh per layer (20 bytes x sbh in bf16) miss much of what backward needs: "
      "Korthikanti et al. count 34 bytes x sbh (Q, K, V, MLP activations, norm inputs, dropout masks) plus "
      "5as^2b bytes for the {}-head score matrix, "
      "which grows with s^2; checkpointing keeps 2sbh per layer as the chapter says, plus one full layer "
      "while it is recomputed",
      in.model.heads);
  return e;
}

Exercise4 textbook_exercise4(const TextbookInputs& in) {
  Exercise4 e;
  const double peak = in.gpu.bf16_flops_per_s > 0 ? in.gpu.bf16_flops_per_s : kChapterPeak;
  const FlopCounts per_seq = count_flops_per_sequence(in.model, AttentionFlops::causal);
  SIMRUN_ASSERT(in.model.seq_len > 0, "textbook model needs a sequence length");
  e.refined_flops_per_token = per_seq.total() / double(in.model.seq_len);
  e.params = count_params(in.model).total();
  for (double mfu : {0.30, 0.40, 0.50}) {
    Exercise4Row r;
    r.mfu = mfu;
    // estimate_training_run, verbatim.
    const double total_flops = 6 * kChapterParams70b * kChapterTokens;
    const double hours = total_flops / (double(kChapterGpus) * kChapterPeak * mfu) / 3600;
    r.days = hours / 24;
    r.cost_usd = hours * double(kChapterGpus) * kChapterUsdPerGpuHour;
    const double refined_hours =
        e.refined_flops_per_token * kChapterTokens / (double(kChapterGpus) * peak * mfu) / 3600;
    r.refined_days = refined_hours / 24;
    r.refined_cost_usd = refined_hours * double(kChapterGpus) * kChapterUsdPerGpuHour;
    e.rows.push_back(r);
  }
  // mfu_from_throughput(1.0e6, ...), verbatim.
  e.observed_mfu = 1.0e6 * 6 * kChapterParams70b / (double(kChapterGpus) * kChapterPeak);
  e.refined_observed_mfu = 1.0e6 * e.refined_flops_per_token / (double(kChapterGpus) * peak);
  if (in.ex4_scenario) e.full_model = estimate(*in.ex4_scenario);
  e.why = fmt::format(
      "6N counts {:.3g} FLOP/token for N = 70e9; {} has {:.2f}B parameters and Megatron's count (causal "
      "attention at s = {}, logits, no embedding lookup) is {:.3g} FLOP/token, {:+.1f}%; the full model also "
      "charges failures and checkpoints (goodput) to the wall-clock",
      6 * kChapterParams70b, in.model.name, e.params / 1e9, in.model.seq_len, e.refined_flops_per_token,
      100.0 * (e.refined_flops_per_token / (6 * kChapterParams70b) - 1.0));
  return e;
}

namespace {

// The chapter's printed table header for Exercise 3.
constexpr const char* kExercise3Header = " seq_len   no checkpt   with checkpt    fits no/yes";
// Over the chapter's own rows (its f"{N:>8} {std/1e6:>12.1f} MB {flash/1e6:>12.1f} MB {speedup:>10.1f}x").
constexpr const char* kExercise2Header = "       N    standard I/O       flash I/O    speed-up";

void print_exercise1(std::ostream& out, const TextbookInputs& in) {
  const Exercise1 e = textbook_exercise1(in);
  fmt::print(out, "Exercise 1: NVLink vs InfiniBand bandwidth math\n");
  fmt::print(out, "  ring all-reduce of 7B bf16 gradients ({:.0f} GB) on 8 GPUs\n", e.grad_bytes / 1e9);
  fmt::print(out, "  chapter:\n");
  fmt::print(out, "    NVLink (~900 GB/s):     {:>7.2f} ms\n", e.nvlink_s * 1000);
  fmt::print(out, "    InfiniBand (~25 GB/s):  {:>7.2f} ms\n", e.ib_s * 1000);
  fmt::print(out, "    Speed gap: {:.0f}x slower across nodes\n", e.gap);
  fmt::print(out, "  refined (alpha-beta ring, {} + {}):\n", in.gpu.id, in.fabric.id);
  fmt::print(out, "    NVLink, 8 GPUs in one node:                {:>7.2f} ms\n", e.refined_nvlink_s * 1000);
  fmt::print(out, "    2 nodes x 4 GPUs, one NDR NIC per GPU:     {:>7.2f} ms\n", e.refined_ib_s * 1000);
  fmt::print(out, "    2 nodes x 4 GPUs, one NDR NIC per node:    {:>7.2f} ms\n",
             e.refined_ib_one_nic_s * 1000);
  fmt::print(out, "    Speed gap: {:.1f}x (single NIC per node: {:.1f}x)\n", e.refined_gap,
             e.refined_ib_one_nic_s / e.refined_nvlink_s);
  fmt::print(out, "  why they differ: {}\n", e.why);
}

void print_exercise2(std::ostream& out, const TextbookInputs& in) {
  const Exercise2 e = textbook_exercise2(in);
  fmt::print(out, "Exercise 2: FlashAttention I/O complexity (d = {}, bf16)\n", e.head_dim);
  fmt::print(out, "  chapter:\n");
  fmt::print(out, "    {}\n", kExercise2Header);
  for (const Exercise2Row& r : e.rows)
    fmt::print(out, "    {:>8} {:>12.1f} MB {:>12.1f} MB {:>10.1f}x\n", r.n, r.standard_bytes / 1e6,
               r.flash_bytes / 1e6, r.speedup);
  fmt::print(out, "  refined (FlashAttention Algorithm 1, B_c = {}):\n", e.block_cols);
  fmt::print(out, "    {}\n", kExercise2Header);
  for (const Exercise2Row& r : e.rows)
    fmt::print(out, "    {:>8} {:>12.1f} MB {:>12.1f} MB {:>10.1f}x\n", r.n, r.standard_bytes / 1e6,
               r.refined_flash_bytes / 1e6, r.refined_speedup);
  fmt::print(out, "  why they differ: {}\n", e.why);
}

void print_exercise3(std::ostream& out, const TextbookInputs& in) {
  const Exercise3 e = textbook_exercise3(in);
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  fmt::print(out, "Exercise 3: Activation memory with checkpointing (80 layers, d_model 8192, batch 4)\n");
  fmt::print(out, "  model states {:.1f} GB/GPU (70e9 x 18 B / 32 GPUs), {:.1f} GB left of 80 GB\n",
             e.state_bytes_per_gpu / 1e9, e.available_bytes / 1e9);
  fmt::print(out, "  chapter:\n");
  fmt::print(out, "    {}\n", kExercise3Header);
  for (const Exercise3Row& r : e.rows)
    fmt::print(out, "    {:>8}{:>10.1f} GB{:>11.1f} GB{:>7} /{:>7}\n", r.seq_len, r.no_ckpt_bytes / 1e9,
               r.ckpt_bytes / 1e9, yes_no(r.fits_no_ckpt), yes_no(r.fits_ckpt));
  fmt::print(
      out,
      "  refined (Korthikanti et al. 2022: 34sbh + 5as^2b per layer; full recompute 2sbh + one layer):\n");
  fmt::print(out, "    {}\n", kExercise3Header);
  for (const Exercise3Row& r : e.rows)
    fmt::print(out, "    {:>8}{:>10.1f} GB{:>11.1f} GB{:>7} /{:>7}\n", r.seq_len,
               r.refined_no_ckpt_bytes / 1e9, r.refined_ckpt_bytes / 1e9, yes_no(r.refined_fits_no_ckpt),
               yes_no(r.refined_fits_ckpt));
  fmt::print(out, "  why they differ: {}\n", e.why);
}

void print_exercise4(std::ostream& out, const TextbookInputs& in) {
  const Exercise4 e = textbook_exercise4(in);
  fmt::print(out,
             "Exercise 4: MFU calculation + cost projection (70B, 1.4T tokens, 1024 H100, $5/GPU-hour)\n");
  fmt::print(out, "  chapter:\n");
  for (const Exercise4Row& r : e.rows)
    fmt::print(out, "    MFU={:.0f}%: {:.1f} days, cost ${:.1f}M\n", r.mfu * 100, r.days, r.cost_usd / 1e6);
  fmt::print(out, "    Observed MFU from 1M tokens/sec: {:.1f}%\n", e.observed_mfu * 100);
  fmt::print(out, "  refined ({}: Megatron causal FLOPs, {:.3g} FLOP/token):\n", in.model.name,
             e.refined_flops_per_token);
  for (const Exercise4Row& r : e.rows)
    fmt::print(out, "    MFU={:.0f}%: {:.1f} days, cost ${:.1f}M\n", r.mfu * 100, r.refined_days,
               r.refined_cost_usd / 1e6);
  fmt::print(out, "    Observed MFU from 1M tokens/sec: {:.1f}%\n", e.refined_observed_mfu * 100);
  if (e.full_model) {
    const Report& r = *e.full_model;
    const Scenario& s = *in.ex4_scenario;
    const Layout& l = s.layout;
    // The scenario named in full: it need not be the chapter's (`simrun textbook 4 FILE`).
    fmt::print(out,
               "  full model, closed-form estimate of {} on {} x {}, {:.3g} tokens at ${:.3g}/GPU-hour (tp{} "
               "pp{} dp{} vpp{}, {} recompute, global batch {}): step {:.2f} s, MFU {:.1f}%, {:.0f} "
               "tokens/s, goodput {:.3f}, {:.1f} days, ${:.2f}M\n",
               s.model.name, s.cluster.num_gpus, s.cluster.gpu.id, r.run.tokens, s.run.usd_per_gpu_hour, l.tp,
               l.pp, l.dp, l.virtual_stages, to_string(l.recompute), l.global_batch, r.step_time_s,
               r.mfu * 100, r.tokens_per_s, r.run.goodput, r.run.days, r.run.cost_usd / 1e6);
  }
  fmt::print(out, "  why they differ: {}\n", e.why);
}

}  // namespace

void print_textbook(std::ostream& out, int exercise, const TextbookInputs& in) {
  SIMRUN_ASSERT(exercise >= 0 && exercise <= 4, "exercise must be 1-4, or 0 for all");
  bool first = true;
  auto section = [&](int k, void (*print)(std::ostream&, const TextbookInputs&)) {
    if (exercise != 0 && exercise != k) return;
    if (!first) out << "\n";
    first = false;
    print(out, in);
  };
  section(1, print_exercise1);
  section(2, print_exercise2);
  section(3, print_exercise3);
  section(4, print_exercise4);
}

}  // namespace simrun
