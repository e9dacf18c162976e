// measured-runs.json rows → Scenario + framework behaviour; see measured_runs.hpp.
//
// The one set of defaults (also printed by measured_run_defaults_text()):
//
// Hardware. The first catalog chip the GPU's text names as a word of its own (gpu_id below):
// "A100…80GB" → a100-80gb, "A100…40GB" → a100-40gb, "H100-SXM5-80GB" → h100-sxm, "H100 PCIe" →
// h100-pcie, "GH200" → gh200, "GB200 (DGX-GB200, NVL72)" → gb200, "NVIDIA B200 (DGX B200)" → b200,
// "GB300 NVL72" → gb300, "H800" → h800 (an H100 NVL, H200 NVL or A100 PCIe: not in the catalog);
// the part's reference node (hardware.json "nodes"): 8 GPUs and 8 NICs per node (DGX, HGX), trays
// of 4 GPUs and 4 NICs where NVLink spans a rack (GB200/GB300 NVL72: one NIC per GPU), InfiniBand
// HDR (Ampere), XDR (Blackwell Ultra) or NDR (the rest), rail-optimized. The
// A100's "40 GB" is 40 GiB like the 80 GB part's 80 GiB (torch reports 79.35 GiB of it,
// hardware.md device queries): where the catalog omits the usable size, the 80 GB part's
// usable fraction. A SKU whose stated memory is more than 10% from its part's (torchtitan's H100
// 96 GB HBM2e 500 W) is not in the catalog: its memory is checked at the stated size on the part,
// its step time is unsupported.
//
// Sizes. num_gpus is required; every size keeps to a scenario file's bounds (scenario.hpp,
// model_limits.hpp). A micro-batch that does not divide the per-GPU batch (Composer runs a short
// last one) is simulated as the largest micro-batch up to it that does.
//
// Model. GPT-style (GELU, LayerNorm, learned positions, biases) unless the name says Llama
// (SwiGLU, RMSNorm, RoPE, no biases, untied); Nemotron's squared-ReLU MLP has two matrices like
// GELU, RoPE; MPT: ALiBi (no positions), no biases, tied embeddings; Megatron 2021 GPT ties
// the embeddings. A name of another family takes the style whose parameter count is nearer the
// row's params_b (dense_model below). MoE rows: the catalog's model where it has one (Mixtral 8x7B,
// Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V3), else none; expert_tp = tp (Megatron-Core's default) unless
// ep·tp exceeds the ranks of a stage, where only expert_tp = 1 fits.
//
// Unstated layout fields: Megatron's defaults — micro_batch 1, virtual stages 1 (plain 1F1B),
// sequence parallelism on when tp > 1, zero_stage 1 (the distributed optimizer, which the
// Megatron-Core sources' --overlap-param-gather requires), recompute none (Megatron's
// --recompute-granularity default), global batch micro_batch·dp.
//
// Framework: one profile per row (row_framework.cpp: the row's "framework", its source group, the
// framework its source names; each profile's file under
// sim/framework/profiles/ gives every behaviour with its source, docs/model.md lists them):
//  - Megatron-LM 2021 (narayanan_t1, megatron_gpt3): megatron-lm-2021 — fp16 gradients, TP
//    backward-async overlap only, parameters updated in place, no FlashAttention, dropout masks,
//    tied GPT embeddings.
//  - Megatron-Core (megatron_h100, the README H100 scaling runs): megatron-core-perf — Megatron-Core
//    with --tp-comm-overlap; fp32 main gradients in memory, bf16 on the wire. With 4 bytes on the
//    wire the weak-scaling 32B row (dp 48 on one rail per GPU, 4 micro-batches) reads +34%, so the
//    README runs cannot have reduced 32-bit gradients at the modelled bandwidth. Open.
//  - NeMo / Megatron-Bridge (nemo2407, bridge, nemo_cp, mcore_moe): nemo — TP comm overlap,
//    gradients kept and reduced in bf16 (2 + 2 + 12/d bytes per parameter); the alltoall MoE
//    dispatcher, no CUDA graphs (the H100 recipes). Bridge rows on Blackwell GPUs:
//    megatron-bridge-blackwell — the flex (HybridEP) dispatcher and CUDA graphs (full iteration
//    where the step has no host sync, else attn, moe_router, moe_preprocess), as the 25.11
//    GB200 recipes the rows' notes name.
//  - Composer + PyTorch FSDP1 (mosaic): composer — mixed_precision PURE, fp32 sharded states,
//    eager kernels, unfused DecoupledAdamW and gradient clipping, BACKWARD_POST prefetch, one
//    NCCL stream for all-gathers and reduce-scatters.
//  - torchtitan (FSDP2): torchtitan — fp32 reduce-scatter, async TP, selective AC of every other
//    layer.
#include "simrun/validation/measured_runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <tuple>
#include <utility>

#include "row_fields.hpp"
#include "row_framework.hpp"
#include "simrun/common/echo.hpp"
#include "simrun/common/error.hpp"
#include "simrun/common/json_reader.hpp"
#include "simrun/models/counts.hpp"
#include "simrun/models/model_limits.hpp"
#include "simrun/sim/scenario/rank_layout.hpp"
#include "simrun/topologies/catalog.hpp"
#include "simrun/validation/accuracy.hpp"

namespace simrun {
namespace {

using nlohmann::json;
using namespace row_fields;

// A GPU chip's name in free text: a catalog id's part before its first '-' ("h100" of h100-sxm
// and h100-pcie, "a100" of a100-40gb, "mi300x"), holding a letter and a digit ("cpu" of cpu-host,
// or a team's "my-gpu", is none: those match only as written).
std::string chip_of(const std::string& id) {
  const std::string chip = id.substr(0, id.find('-'));
  const bool letter = std::any_of(chip.begin(), chip.end(), is_letter);
  const bool digit = std::any_of(chip.begin(), chip.end(), is_digit);
  return letter && digit ? chip : "";
}

// Where `chip` first stands as a name of its own in `text` (lower case), or npos: not inside a
// longer name (the b200 of "gb200", the h200 of "gh200", the h100 of "h1000"), though a count
// may lead it ("8xh100") and letters follow it ("h100s", "h100x8", "h100sxm5").
size_t chip_position(const std::string& text, const std::string& chip) {
  for (size_t at = text.find(chip); at != std::string::npos; at = text.find(chip, at + 1)) {
    const bool count_before = at >= 2 && text[at - 1] == 'x' && is_digit(text[at - 2]);
    const bool starts = at == 0 || !is_letter(text[at - 1]) || count_before;
    const size_t end = at + chip.size();
    if (starts && (end == text.size() || !is_digit(text[end]))) return at;
  }
  return std::string::npos;
}

// The number that ends just before text[at] (digits and a decimal point, at most 7 characters:
// never out of a double's range), or nullopt.
std::optional<double> number_before(const std::string& text, size_t at) {
  size_t start = at;
  while (start > 0 && (is_digit(text[start - 1]) || text[start - 1] == '.')) --start;
  while (start < at && text[start] == '.') ++start;  // "v1..80gb": the figure, not the dots
  if (start == at || at - start > 7) return std::nullopt;
  return std::stod(text.substr(start, at - start));
}

// The memory figures a GPU text states, in GB or GiB as written ("80gb" and "141gb" once "141 GB"
// lost its space, "79.6gb", "40gib"): a number before a unit that ends a word; not a rate
// ("400gb/s", "1600gbps"), not a GPU count before a chip ("72 gb200").
std::vector<double> stated_memory_gb(const std::string& text) {
  std::vector<double> figures;
  for (const std::string unit : {"gb", "gib"})
    for (size_t at = text.find(unit); at != std::string::npos; at = text.find(unit, at + 1)) {
      const size_t end = at + unit.size();
      const char next = end < text.size() ? text[end] : ' ';
      if (next == '/' || is_letter(next) || is_digit(next)) continue;
      if (const std::optional<double> figure = number_before(text, at)) figures.push_back(*figure);
    }
  return figures;
}

// Catalog id of the row's GPU from its free text ("H100-SXM5-80GB (DGX-H100)" → h100-sxm,
// "NVIDIA B200 (DGX B200)" → b200, "GB300 NVL72" → gb300), "" when it names no catalog chip or a
// form of it the catalog does not hold. The first chip the text names ("GH200 (H100 + Grace)" is a
// gh200); its form: a PCIe card is the catalog's PCIe part (h100-pcie), an NVL card (H100 NVL,
// H200 NVL: "nvl" not leading a word such as NVLink or NVLS, on a chip whose NVLink spans a board)
// none, never the SXM part's figures. Among the chip's parts: the one whose id names a
// stated memory figure (a100-40gb), else the one whose memory is nearest it, else, with no
// figure, the first whose id names no memory (h100-sxm beside a team's h100-96gb), else the
// largest (a100-80gb). Memory figures far from every part's (a 400 Gb NIC, Grace's 480 GB) are
// not the GPU's. `hbm_scale` ≠ 1 for a SKU of the chip with other memory (the H100 96 GB, a GH200
// 144 GB): more than 10% from the part's, whose memory alone is then checked.
std::string gpu_id(const std::string& text, const HardwareCatalog& hardware, double& hbm_scale) {
  std::string g = ascii_lower(text);
  // "40 GB" reads as "40gb" (and "40 GiB" as "40gib"); other spaces stay, so that no two words run
  // together ("72 GB200" stays two).
  for (size_t at = g.find(" g"); at != std::string::npos; at = g.find(" g", at + 1)) {
    const size_t unit = g.compare(at + 1, 3, "gib") == 0 ? 3 : g.compare(at + 1, 2, "gb") == 0 ? 2 : 0;
    const size_t end = at + 1 + unit;
    if (unit > 0 && at > 0 && is_digit(g[at - 1]) && (end == g.size() || !is_alphanumeric(g[end])))
      g.erase(at, 1);
  }
  hbm_scale = 1.0;
  const std::vector<std::string> ids = hardware.gpu_ids();
  std::string chip;
  size_t first = std::string::npos;
  for (const std::string& id : ids)
    if (const std::string c = chip_of(id); !c.empty())
      if (const size_t at = chip_position(g, c); at < first) {
        first = at;
        chip = c;
      }
  if (chip.empty()) return "";
  const bool sxm = has(g, "sxm");
  const bool pcie = !sxm && has(g, "pcie");
  std::vector<const GpuSpec*> parts;  // the chip's parts of the text's form factor
  for (const std::string& id : ids)
    if (chip_of(id) == chip && has(id, "pcie") == pcie) parts.push_back(&hardware.gpu(id, "", "gpu"));
  if (parts.empty()) return "";
  const bool rack = std::any_of(parts.begin(), parts.end(),
                                [](const GpuSpec* p) { return p->scale_up_domain > kBoardScaleUpDomain; });
  // An NVL card ("H100 NVL", "H200 NVL 141GB"): "nvl" not leading a word (NVLink, NVLS), on a chip
  // whose NVLink spans a board (on a rack-scale chip, NVL72 or NVL names the rack).
  for (size_t at = g.find("nvl"); at != std::string::npos && !sxm && !rack; at = g.find("nvl", at + 1))
    if (at + 3 == g.size() || !is_letter(g[at + 3])) return "";
  // A stated figure is the GPU's memory within a factor 2 of some part's; a SKU of other memory where
  // more than 10% from the chosen part's.
  constexpr double kMemoryFigureFactor = 2.0, kOtherSkuFraction = 0.10;
  std::vector<double> memory_gb;
  for (const double figure : stated_memory_gb(g))
    if (std::any_of(parts.begin(), parts.end(), [&](const GpuSpec* p) {
          return figure * 1e9 >= p->hbm_bytes / kMemoryFigureFactor &&
                 figure * 1e9 <= kMemoryFigureFactor * p->hbm_bytes;
        }))
      memory_gb.push_back(figure);
  auto by_memory = [](const GpuSpec* a, const GpuSpec* b) { return a->hbm_bytes < b->hbm_bytes; };
  const GpuSpec* part = *std::max_element(parts.begin(), parts.end(), by_memory);
  if (memory_gb.empty()) {
    for (const GpuSpec* p : parts)
      if (stated_memory_gb(p->id).empty()) {
        part = p;
        break;
      }
    return part->id;
  }
  const double stated = memory_gb.front() * 1e9;
  part = *std::min_element(parts.begin(), parts.end(), [&](const GpuSpec* a, const GpuSpec* b) {
    return std::abs(a->hbm_bytes - stated) < std::abs(b->hbm_bytes - stated);
  });
  for (const GpuSpec* p : parts)
    for (const double figure : stated_memory_gb(p->id))
      if (std::find(memory_gb.begin(), memory_gb.end(), figure) != memory_gb.end()) part = p;
  const double nearest = *std::min_element(memory_gb.begin(), memory_gb.end(), [&](double a, double b) {
    return std::abs(a * 1e9 - part->hbm_bytes) < std::abs(b * 1e9 - part->hbm_bytes);
  });
  if (std::abs(nearest * 1e9 / part->hbm_bytes - 1) > kOtherSkuFraction)
    hbm_scale = nearest * 1e9 / part->hbm_bytes;
  return part->id;
}

// The step time a measured throughput gives, as the reference's own rows derive it (derived.method
// "GBS*seq/(tokens_per_s_per_gpu*N)"): measured.tokens_per_s_per_gpu times num_gpus, else
// tokens_per_s_total, with the row's stated layout.global_batch and model.seq_len. Else why not
// ("" where the row states no tokens/s). TFLOP/s and MFU are not read: their FLOP conventions
// differ from source to source.
struct ThroughputStep {
  double seconds = 0;  // > 0 where derived
  std::string why_not;
};
ThroughputStep step_from_tokens_per_s(const json& row, const json& meas) {
  const json empty = json::object();
  const double per_gpu = opt_num(meas, "tokens_per_s_per_gpu").value_or(0);
  const double gpus = opt_num(row, "num_gpus").value_or(0);
  const double total =
      per_gpu > 0 && gpus > 0 ? per_gpu * gpus : opt_num(meas, "tokens_per_s_total").value_or(0);
  if (!(per_gpu > 0) && !(total > 0)) return {};
  if (!(total > 0)) return {0, "measured.tokens_per_s_per_gpu without num_gpus"};
  const json& layout = row.contains("layout") ? row.at("layout") : empty;
  const json& model = row.contains("model") ? row.at("model") : empty;
  const double batch = opt_num(layout, "global_batch").value_or(0),
               seq = opt_num(model, "seq_len").value_or(0);
  if (!(batch > 0 && seq > 0))
    return {0, std::string("measured tokens/s without ") +
                   (batch > 0 ? "model.seq_len" : "layout.global_batch") + " to turn it into a step"};
  const double seconds = batch * seq / total;
  if (!(seconds > 0 && std::isfinite(seconds)))
    return {0, fmt::format("measured tokens/s: {:g} tokens at {:g} tokens/s is no step time", batch * seq,
                           total)};
  return {seconds, ""};
}

// The run's reference step time: measured.iteration_s, else derived.iteration_s, each where it
// is a positive number of seconds (else why not, in `why`), else the measured tokens/s's
// (step_from_tokens_per_s); and its TFLOP/s per GPU where stated.
void set_reference(MeasuredRun& c, const json& row, std::string& why) {
  const json empty = json::object();
  const json& meas = row.contains("measured") && row.at("measured").is_object() ? row.at("measured") : empty;
  c.tflops_per_gpu = opt_num(meas, "tflops_per_gpu").value_or(0);
  const auto from_tokens_per_s = [&] {
    const ThroughputStep step = step_from_tokens_per_s(row, meas);
    if (!(step.seconds > 0)) {
      why = step.why_not;
      return false;
    }
    c.reference_s = step.seconds;
    c.reference_kind = "from tokens/s";
    c.defaults_used.push_back("no iteration_s: global_batch·seq_len/(measured tokens/s) used");
    return true;
  };
  for (const char* kind : {"measured", "derived"}) {
    const json& section = row.contains(kind) && row.at(kind).is_object() ? row.at(kind) : empty;
    if (!section.contains("iteration_s") || section.at("iteration_s").is_null()) continue;
    const json& v = section.at("iteration_s");
    if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0) {
      c.reference_s = v.get<double>();
      c.reference_kind = kind;
      if (!why.empty()) c.defaults_used.push_back(why + ": " + kind + ".iteration_s used");
      return;
    }
    if (why.empty())
      why = fmt::format("{}.iteration_s: {} is not a positive number of seconds", kind,
                        v.is_string() ? quoted_input(v.get<std::string>()) : printable(v.dump()));
  }
  if (why.empty() && from_tokens_per_s()) return;
  if (why.empty())
    why = "no reference step time (measured and derived iteration_s null, no measured tokens/s)";
}

// A name with only its letters and digits, lower case ("Qwen3-30B-A3B" and "Qwen3_30B_a3B" are
// both "qwen330ba3b").
std::string alphanumeric(const std::string& name) {
  std::string out;
  for (const char c : name)
    if (is_alphanumeric(c)) out += c;
  return ascii_lower(out);
}

// The catalog's MoE model whose id the row's name holds, letters and digits alone ("DeepSeek-V3",
// "DeepSeekV3" → deepseek-v3; "Mixtral 8x22B" is not mixtral-8x7b), the longest where several do;
// "" where none does.
std::string moe_catalog_id(const std::string& name, const Catalogs& catalogs) {
  const std::string row_name = alphanumeric(name);
  std::string catalog_id;
  for (const std::string& id : catalogs.models.ids())
    if (const std::string key = alphanumeric(id); key.size() > alphanumeric(catalog_id).size() &&
                                                  row_name.find(key) != std::string::npos &&
                                                  catalogs.models.get(id, "", "model").is_moe())
      catalog_id = id;
  return catalog_id;
}

// Whether a row is of an MoE model: experts stated, expert parallelism, a name that says so
// (MoE, Mixtral, A3B, A22B) or names a catalog MoE model. One rule for the shape check and the
// mapping.
bool is_moe(const json& mj, const json& lj, const std::string& name, const Catalogs& catalogs) {
  const std::string lname = ascii_lower(name);
  return opt_int(mj, "experts").value_or(0) > 1 || has(lname, "moe") || has(lname, "mixtral") ||
         has(lname, "a3b") || has(lname, "a22b") || opt_int(lj, "ep").value_or(1) > 1 ||
         !moe_catalog_id(name, catalogs).empty();
}

// The architecture of an MoE row: the file gives only part of it, so the catalog's (moe_catalog_id),
// at the row's sequence length; nullopt where the catalog has none.
std::optional<ModelSpec> moe_model(const json& mj, const std::string& name, const Catalogs& catalogs,
                                   const std::string& run_id) {
  const std::string catalog_id = moe_catalog_id(name, catalogs);
  if (catalog_id.empty()) return std::nullopt;
  ModelSpec m = catalogs.models.get(catalog_id, run_id, "model");
  m.seq_len = opt_int(mj, "seq_len").value_or(m.seq_len);
  return m;
}

// A dense row's architecture from its fields and its name's family (measured_run_defaults_text):
// Llama-style (gated SwiGLU MLP of three matrices, RMSNorm, RoPE, no biases, untied) where the
// name says Llama; GPT-style (a two-matrix GELU MLP, LayerNorm, learned positions, biases) where it
// says GPT, MPT (ALiBi, tied) or Nemotron (squared ReLU, two matrices, RoPE); a name of another
// family (Mistral, Qwen, Falcon, a team's own) takes the style whose parameter count is nearer
// the row's params_b (Mistral 7B: 7.24B gated against 5.4B plain), GPT-style when none is given.
ModelSpec dense_model(const json& mj, const std::string& name, const std::string& lname,
                      const FrameworkProfile& f) {
  ModelSpec m;
  m.name = name;
  m.layers = opt_int(mj, "layers").value_or(0);
  m.hidden = opt_int(mj, "hidden").value_or(0);
  m.heads = opt_int(mj, "heads").value_or(0);
  m.kv_heads = opt_int(mj, "kv_heads").value_or(m.heads);
  m.head_dim = m.hidden / std::max<int64_t>(1, m.heads);
  m.ffn_hidden = opt_int(mj, "ffn").value_or(4 * m.hidden);
  m.vocab = opt_int(mj, "vocab").value_or(50257);
  m.seq_len = opt_int(mj, "seq_len").value_or(2048);
  const bool mpt = has(lname, "mpt");
  const bool nemotron = has(lname, "nemotron");
  auto styled = [&](bool llama_style) {
    ModelSpec s = m;
    s.ffn_act = llama_style ? FfnActivation::swiglu : FfnActivation::gelu;
    s.norm = llama_style ? NormKind::rmsnorm : NormKind::layernorm;
    s.learned_position_embeddings = !llama_style && !mpt && !nemotron;
    s.max_positions = s.learned_position_embeddings ? s.seq_len : 0;
    s.alibi = mpt;
    s.tied_embeddings = mpt || (!llama_style && f.gpt_tied_embeddings);
    s.attention_bias = !llama_style && !mpt;
    s.mlp_bias = s.attention_bias;
    return s;
  };
  if (has(lname, "llama")) return styled(true);
  const std::optional<double> params_b = opt_num(mj, "params_b");
  if (has(lname, "gpt") || mpt || nemotron || !params_b || !(*params_b > 0)) return styled(false);
  const ModelSpec gated = styled(true), plain = styled(false);
  const double target = *params_b * 1e9;
  return std::abs(count_params(gated).total() - target) < std::abs(count_params(plain).total() - target)
             ? gated
             : plain;
}

// The sizes a row may state, with the bounds a scenario file keeps to.
struct SizeField {
  const char* key;
  int64_t lo, hi;
};
constexpr SizeField kLayoutSizes[] = {{"tp", 1, kMaxParallel},
                                      {"pp", 1, kMaxParallel},
                                      {"dp", 1, kMaxGpus},
                                      {"cp", 1, kMaxParallel},
                                      {"ep", 1, kMaxParallel},
                                      {"vpp", 1, kMaxVirtualStages},
                                      {"micro_batch", 1, kMaxGlobalBatch},
                                      {"global_batch", 1, kMaxGlobalBatch},
                                      {"zero_stage", 0, 3}};
constexpr SizeField kModelSizes[] = {
    {"layers", 1, kMaxLayers},      {"hidden", 1, kMaxHidden},  {"heads", 1, kMaxHeads},
    {"kv_heads", 1, kMaxHeads},     {"ffn", 1, kMaxFfn},        {"vocab", 1, kMaxVocab},
    {"seq_len", 1, kMaxStepSeqLen}, {"experts", 1, kMaxExperts}};

// The first word of a row's text field, lower case: letters, digits, '-', '_' and '.' after any
// leading spaces ("selective" of "selective (per-op)", "fp8" of "fp8, MXFP8 recipe"; "" of "(fp8)").
std::string first_word(const std::string& text) {
  const size_t start = std::min(text.size(), text.find_first_not_of(' '));
  size_t end = start;
  while (end < text.size() &&
         (is_alphanumeric(text[end]) || text[end] == '-' || text[end] == '_' || text[end] == '.'))
    ++end;
  return ascii_lower(text.substr(start, end - start));
}

// Why the row's sizes and switches cannot be read ("" when they can): num_gpus not stated, a
// stated size that is not an integer within the scenario's bounds, a recompute or sp value
// simrun does not know, or a dense model without its shape (MoE rows take the catalog's).
std::string shape_error(const json& row, const json& mj, const json& lj, const Catalogs& catalogs) {
  for (const SizeField& f : kLayoutSizes)
    if (std::string why = not_a_size(lj, "layout", f.key, f.lo, f.hi); !why.empty()) return why;
  for (const SizeField& f : kModelSizes)
    if (std::string why = not_a_size(mj, "model", f.key, f.lo, f.hi); !why.empty()) return why;
  if (!row.contains("num_gpus") || row.at("num_gpus").is_null()) return "num_gpus not stated";
  if (std::string why = not_a_size(row, "", "num_gpus", 1, kMaxGpus); !why.empty()) return why;
  if (lj.is_object() && lj.contains("recompute") && !lj.at("recompute").is_null()) {
    const json& v = lj.at("recompute");
    const std::string rc = v.is_string() ? first_word(v.get<std::string>()) : "";
    if (rc != "none" && rc != "selective" && rc != "full")
      return "layout.recompute: " +
             (v.is_string() ? quoted_input(v.get<std::string>()) : printable(v.dump())) +
             " is not none, selective or full (then any comment)";
  }
  if (const std::string sp = opt_str(lj, "sp"); !sp.empty() && sp != "true" && sp != "false")
    return "layout.sp: " + printable(lj.at("sp").dump()) + " is not true or false";
  if (is_moe(mj, lj, opt_str(mj, "name"), catalogs)) return "";
  for (const char* key : {"layers", "hidden", "heads"})
    if (!opt_int(mj, key))
      return fmt::format("model.{} not stated (a dense model needs layers, hidden, heads)", key);
  const int64_t heads = *opt_int(mj, "heads"), kv_heads = opt_int(mj, "kv_heads").value_or(heads);
  if (kv_heads > heads || heads % kv_heads != 0)
    return fmt::format("model.kv_heads: {} does not divide heads = {}", kv_heads, heads);
  if (*opt_int(mj, "hidden") % heads != 0)
    return fmt::format("model.hidden: {} is not a multiple of heads = {}", *opt_int(mj, "hidden"), heads);
  return "";
}

// The row's precision and recipe from its "precision" text: the first word (what follows is the
// sources' commentary, e.g. "fp8 (linear layers) + bf16"), in the scenario's spellings or the
// tables': Megatron-Bridge's fp8-cs (current scaling) and fp8-mx (MXFP8), a plain "fp8" being
// Transformer Engine's delayed scaling (NeMo 24.07's default recipe) unless its commentary names
// another ("fp8 (1x128 blockwise)", "FP8 current scaling", "fp8, MXFP8 recipe"); Composer's
// amp_bf16, amp_fp16 and amp_fp8 as bf16, fp16 and fp8 (amp_fp8: Transformer Engine's
// DelayedScaling, composer/core/precision.py). Unstated: bf16. nullopt: a word simrun does not know.
std::optional<std::pair<Precision, LowPrecisionRecipe>> measured_precision(const std::string& text) {
  std::string word = first_word(text);
  if (word.empty() && text.find_first_not_of(' ') != std::string::npos) return std::nullopt;  // "(fp8)"
  if (word == "amp_bf16" || word == "amp_fp16" || word == "amp_fp8") word = word.substr(4);
  if (word.empty() || word == "bf16") return std::pair{Precision::bf16, LowPrecisionRecipe::delayed};
  if (word == "fp16") return std::pair{Precision::fp16, LowPrecisionRecipe::delayed};
  if (word == "fp32") return std::pair{Precision::fp32, LowPrecisionRecipe::delayed};
  if (word == "fp4" || word == "nvfp4") return std::pair{Precision::fp4, LowPrecisionRecipe::nvfp4};
  if (word == "fp8") {
    // The one recipe the commentary names; none or several: Transformer Engine's default, delayed.
    const std::string commentary = ascii_lower(text);
    const auto names = [&commentary](std::initializer_list<const char*> words) {
      return std::any_of(words.begin(), words.end(), [&](const char* w) { return has(commentary, w); });
    };
    const std::pair<LowPrecisionRecipe, bool> named[] = {
        {LowPrecisionRecipe::delayed, names({"delayed"})},
        {LowPrecisionRecipe::tensorwise, names({"current scaling", "current-scaling", "tensorwise"})},
        {LowPrecisionRecipe::blockwise, names({"blockwise", "block-wise", "block scaling", "block-scaled",
                                               "1x128", "128x128", "fine-grained"})},
        {LowPrecisionRecipe::mxfp8, names({"mxfp8"})}};
    LowPrecisionRecipe recipe = LowPrecisionRecipe::delayed;
    int count = 0;
    for (const auto& [r, is_named] : named)
      if (is_named) {
        recipe = r;
        ++count;
      }
    return std::pair{Precision::fp8, count == 1 ? recipe : LowPrecisionRecipe::delayed};
  }
  if (word == "fp8-cs") return std::pair{Precision::fp8, LowPrecisionRecipe::tensorwise};
  if (word == "fp8-mx") return std::pair{Precision::fp8, LowPrecisionRecipe::mxfp8};
  if (word == "fp8-block") return std::pair{Precision::fp8, LowPrecisionRecipe::blockwise};
  if (const auto recipe = parse_precision_recipe(word))
    return std::pair{precision_recipe(*recipe).gemm_precision, *recipe};
  return std::nullopt;
}

// The InfiniBand generation of the row's GPU's reference node (hardware.json "nodes"): HDR on DGX
// A100 (a 200 Gb/s ConnectX-6 per GPU); XDR on Blackwell Ultra (DGX B300, GB300 NVL72: a ConnectX-8
// at 800 Gb/s per GPU); NDR otherwise (DGX H100/H200/B200, DGX GB200, DeepSeek's H800 nodes: a
// 400 Gb/s ConnectX-7 per GPU).
std::string measured_fabric(const GpuSpec& gpu) {
  if (gpu.architecture == "Ampere") return "ib-hdr";
  if (gpu.architecture == "Blackwell Ultra") return "ib-xdr";
  return "ib-ndr";
}

// The row's cluster: its GPU (`hbm_scale` for a non-standard SKU), 8 GPUs and 8 NICs per node
// (trays of 4 in a rack-wide NVLink domain) on a rail-optimized InfiniBand fabric.
ClusterSpec measured_cluster(const json& row, const std::string& gpu_id, double hbm_scale,
                             const Catalogs& catalogs, const std::string& run_id) {
  GpuSpec gpu = catalogs.hardware.gpu(gpu_id, run_id, "gpu");
  if (hbm_scale != 1.0) {
    gpu.hbm_usable_bytes = usable_hbm_bytes(gpu) * hbm_scale;
    gpu.hbm_bytes *= hbm_scale;
  }
  ClusterSpec cluster;
  cluster.gpu = gpu;
  cluster.num_gpus = opt_int(row, "num_gpus").value_or(0);
  cluster.gpus_per_node = default_gpus_per_node(gpu);  // one NIC per GPU (DGX, DGX GB200)
  cluster.nics_per_node = cluster.gpus_per_node;
  cluster.fabric = catalogs.hardware.fabric(measured_fabric(gpu), run_id, "fabric");
  cluster.topology = FabricTopology::rail_optimized;
  return cluster;
}

// The row's layout (tp, pp and dp stated), each default taken for an unstated field noted.
void set_layout(Layout& l, const json& lj, const ModelSpec& m, const FrameworkProfile& f,
                std::vector<std::string>& defaults_used) {
  l.tp = *opt_int(lj, "tp");
  l.pp = *opt_int(lj, "pp");
  l.dp = *opt_int(lj, "dp");
  l.cp = opt_int(lj, "cp").value_or(1);
  l.ep = opt_int(lj, "ep").value_or(1);
  auto note = [&](const std::string& what) { defaults_used.push_back(what); };
  if (m.is_moe()) {
    // Megatron-Core's default expert_tp is tp; a layout whose ep·tp exceeds the ranks of a stage
    // (Qwen3-235B: tp 2, ep 32, dp 16) can only run with expert_tp = 1.
    l.expert_tp = (l.tp * l.cp * l.dp) % (l.ep * l.tp) == 0 ? l.tp : 1;
    if (l.tp > 1) note("expert_tp=" + std::to_string(l.expert_tp));
  }
  if (auto v = opt_int(lj, "vpp"))
    l.virtual_stages = *v;
  else
    note("vpp=1");
  if (auto mb = opt_int(lj, "micro_batch")) {
    l.micro_batch = *mb;
  } else {
    l.micro_batch = 1;
    note("micro_batch=1");
  }
  l.global_batch = opt_int(lj, "global_batch").value_or(l.micro_batch * l.dp);
  const std::string sp = opt_str(lj, "sp");  // "true", "false" or "" (shape_error refuses others)
  if (sp.empty()) note(f.sequence_parallel_with_tp ? "sp=(tp>1)" : "sp=off (" + f.id + ")");
  l.sequence_parallel = sp.empty() ? f.sequence_parallel_with_tp && l.tp > 1 : sp == "true";
  if (auto z = opt_int(lj, "zero_stage")) {
    l.zero_stage = static_cast<int>(*z);
  } else {
    l.zero_stage = 1;
    note("zero_stage=1");
  }
  const std::string rc = first_word(opt_str(lj, "recompute"));  // shape_error refuses other words
  if (rc.empty()) note("recompute=none");
  l.recompute = rc == "full" ? Recompute::full : rc == "selective" ? Recompute::selective : Recompute::none;
  l.flash_attention = f.flash_attention;  // megatron-lm-2021 predates FlashAttention (2022)
  // Layers that do not divide into pp·vpp chunks: Megatron's account-for-embedding/loss split
  // when layers + 2 divide (the Megatron-Bridge Llama-3.1 405B recipe), else balanced (Megatron-Core's
  // --pipeline-model-parallel-layout, as the Bridge DeepSeek-V3 recipes set it).
  const int64_t chunks = l.pp * l.virtual_stages;
  if (m.layers % chunks != 0) {
    l.pipeline_split =
        (m.layers + 2) % chunks == 0 ? PipelineSplit::embedding_loss_layers : PipelineSplit::balanced;
    note(std::string("pipeline_split=") + to_string(l.pipeline_split));
  }
}

}  // namespace

std::string measured_run_group(const json& row) {
  if (row.is_object() && row.contains("group") && row.at("group").is_string() &&
      !row.at("group").get<std::string>().empty())
    return row.at("group").get<std::string>();
  return kNoGroup;
}

// The row's layout, its data-parallel size derived where the row leaves it out or null and states
// tp, pp and num_gpus: num_gpus / (tp·pp·cp) where that divides (noted in the run's defaults).
json row_layout(const json& row, std::vector<std::string>& defaults_used) {
  if (!row.contains("layout")) return json::object();
  json l = row.at("layout");
  if (!l.is_object() || (l.contains("dp") && !l.at("dp").is_null())) return l;
  const auto tp = opt_int(l, "tp"), pp = opt_int(l, "pp"), gpus = opt_int(row, "num_gpus");
  const int64_t cp = opt_int(l, "cp").value_or(1);
  if (!tp || !pp || !gpus || *tp < 1 || *pp < 1 || cp < 1 || *gpus < 1) return l;
  const double model_parallel = double(*tp) * double(*pp) * double(cp);  // each may be any size yet
  if (model_parallel > double(*gpus) || *gpus % int64_t(model_parallel) != 0) return l;
  l["dp"] = *gpus / int64_t(model_parallel);
  defaults_used.push_back("dp=num_gpus/(tp·pp·cp)");
  return l;
}

MeasuredRun measured_run(const json& row, const Catalogs& catalogs) {
  MeasuredRun c;
  c.id = row.at("id").get<std::string>();
  // A group that is not a name would be scored with the ungrouped rows without a word.
  if (row.contains("group") && !row.at("group").is_null() && !row.at("group").is_string())
    throw InputError(c.id, "group", "expected a string, got " + printable(row.at("group").dump(), 40));
  c.group = measured_run_group(row);
  const json empty = json::object();
  const json& mj = row.contains("model") ? row.at("model") : empty;
  const json lj = row_layout(row, c.defaults_used);
  std::string no_reference;  // why the row gives no usable step time
  set_reference(c, row, no_reference);

  const std::string gpu_text = opt_str(row, "gpu");
  double hbm_scale = 1.0;
  // A catalog id as written (h100-pcie, a team's own GPU from a user catalog), else the free text.
  const std::vector<std::string> gpu_ids = catalogs.hardware.gpu_ids();
  const bool catalog_id = std::find(gpu_ids.begin(), gpu_ids.end(), ascii_lower(gpu_text)) != gpu_ids.end();
  const std::string id = catalog_id ? ascii_lower(gpu_text) : gpu_id(gpu_text, catalogs.hardware, hbm_scale);
  const std::string architecture = id.empty() ? "" : catalogs.hardware.gpu(id, c.id, "gpu").architecture;
  const FrameworkProfile& profile = catalogs.frameworks.resolve(
      measured_run_framework(row, architecture, catalogs.frameworks), c.id, "framework");
  c.framework = profile.id;
  const std::string name = opt_str(mj, "name");
  const std::string lname = ascii_lower(name);
  const bool moe = is_moe(mj, lj, name, catalogs);

  if (id.empty()) {
    c.no_scenario = gpu_text.empty()
                        ? std::string("GPU not stated (give \"gpu\": a catalog id or a chip's name)")
                        : "GPU " + quoted_input(gpu_text) + " not in the catalog";
    c.unsupported = c.no_scenario;
    return c;
  }
  if (std::string why = shape_error(row, mj, lj, catalogs); !why.empty()) {
    c.no_scenario = why;
    c.unsupported = c.no_scenario;
    return c;
  }
  if (!opt_int(lj, "tp") || !opt_int(lj, "pp") || !opt_int(lj, "dp")) {
    c.no_scenario =
        !opt_int(lj, "tp") || !opt_int(lj, "pp")
            ? "layout not stated (tp/pp/dp null)"
            : fmt::format("layout.dp not stated, and num_gpus {} is not a multiple of tp·pp·cp = {:.0f}",
                          opt_int(row, "num_gpus").value_or(0),
                          double(*opt_int(lj, "tp")) * double(*opt_int(lj, "pp")) *
                              double(opt_int(lj, "cp").value_or(1)));
    c.unsupported = c.no_scenario;
    return c;
  }
  if (hbm_scale != 1.0)
    c.unsupported = "GPU " + quoted_input(gpu_text) + ": non-standard SKU, not in the catalog";
  if (c.unsupported.empty() && c.reference_s <= 0) {
    c.unsupported = no_reference;
    c.no_step_time = true;
  }

  Scenario& sc = c.scenario;
  sc.file = c.id;
  sc.framework = profile;
  if (moe) {
    std::optional<ModelSpec> catalog_model = moe_model(mj, name, catalogs, c.id);
    if (!catalog_model) {
      c.no_scenario = "MoE architecture not in the file nor in the model catalog";
      c.unsupported = c.no_scenario;
      return c;
    }
    sc.model = *catalog_model;
  } else {
    sc.model = dense_model(mj, name, lname, profile);
  }
  sc.cluster = measured_cluster(row, id, hbm_scale, catalogs, c.id);
  Layout& l = sc.layout;
  set_layout(l, lj, sc.model, profile, c.defaults_used);
  // In double: each size is bounded (shape_error), their product need not fit an int64.
  if (const double world = double(l.tp) * double(l.pp) * double(l.dp) * double(l.cp);
      world != double(sc.cluster.num_gpus)) {
    c.no_scenario = fmt::format("tp·pp·dp·cp = {:.0f} but num_gpus = {}", world, sc.cluster.num_gpus);
    c.unsupported = c.no_scenario;
    return c;
  }
  l.ep_intra_level = ep_domain_level(sc.cluster, l);
  const std::string precision = opt_str(lj, "precision");
  if (const auto p = measured_precision(precision)) {
    l.precision = p->first;
    if (l.low_precision()) l.fp8_recipe = p->second;  // a 16-bit row names no recipe
  } else {
    c.no_scenario =
        "layout.precision: " + quoted_input(precision) +
        " is not a precision simrun knows (bf16, fp16, fp32, fp8, fp8-cs, fp8-mx, fp8-block, fp4, or "
        "a recipe: delayed, tensorwise, blockwise, mxfp8, nvfp4)";
    c.unsupported = c.no_scenario;
    return c;
  }
  sc.run.tokens = 0;

  if (l.global_batch % l.dp == 0 && l.global_batch % (l.micro_batch * l.dp) != 0) {
    // A micro-batch that does not divide the per-GPU batch: Composer runs it with a short last
    // micro-batch, or the whole per-GPU batch as one where the micro-batch is larger (Megatron
    // refuses it). Simulated as the largest micro-batch up to the stated one that divides the
    // per-GPU batch: as many micro-batches where Composer's are near even, the same tokens.
    const int64_t per_gpu = l.global_batch / l.dp;
    int64_t mb = std::min(l.micro_batch, per_gpu);
    while (per_gpu % mb != 0) --mb;
    c.defaults_used.push_back(
        fmt::format("micro_batch {} does not divide {} per GPU: micro_batch={}", l.micro_batch, per_gpu, mb));
    l.micro_batch = mb;
  }
  return c;
}

std::vector<MeasuredRun> load_measured_runs(const std::filesystem::path& file, const Catalogs& catalogs) {
  return measured_runs_of(load_json_file(file), file.string(), catalogs);
}

std::string measured_run_defaults_text() {
  return "GPU: the first catalog chip its text names, in its form factor and memory: A100…80GB → "
         "a100-80gb, A100…40GB → a100-40gb (40 GiB, usable as the 80 GB part), H100-SXM5-80GB → h100-sxm, "
         "H100 PCIe → h100-pcie, GH200 → gh200, GB200 → gb200, B200 → b200, GB300 → gb300, H800 → h800, … "
         "(H100 NVL, H200 NVL, A100 PCIe: not in the catalog); 8 GPUs + 8 NICs per node (GB200, GB300: "
         "trays of 4 GPUs + 4 NICs in 72-GPU NVLink racks), IB HDR (Ampere) / XDR (Blackwell Ultra) / NDR "
         "(the rest), rail-optimized\n"
         "precision (its first word): fp8 → delayed scaling unless its comment names one recipe, fp8-cs → "
         "tensorwise (current scaling), fp8-mx → mxfp8, fp8-block → blockwise, fp4/nvfp4 → nvfp4, or a "
         "recipe's name; Composer's amp_bf16/amp_fp16/amp_fp8 as bf16/fp16/fp8; unstated → bf16\n"
         "model: GPT-style (GELU, LayerNorm, learned positions) unless Llama (SwiGLU, RMSNorm, RoPE); MPT "
         "ALiBi, tied; Nemotron squared-ReLU as 2-matrix MLP; another family: the style whose parameter "
         "count is nearer params_b\n"
         "unstated layout: micro_batch 1, vpp 1, sp = (tp > 1), zero_stage 1 (distributed optimizer), "
         "recompute none, dp = num_gpus/(tp·pp·cp); a micro-batch that does not divide the per-GPU batch: "
         "the largest that does below it\n"
         "frameworks (sim/framework/profiles): narayanan_t1, megatron_gpt3 → megatron-lm-2021; "
         "megatron_h100 → megatron-core-perf; nemo2407, bridge, nemo_cp, mcore_moe → nemo (bridge on "
         "Blackwell → megatron-bridge-blackwell); mosaic → composer; torchtitan → torchtitan; other rows: "
         "their \"framework\" field (a profile id, or text naming a framework), else the framework their "
         "source names (Megatron-DeepSpeed or DeepSpeed with Megatron and TP, DeepSpeed (deepspeed@0.5 for a "
         "source of 2021 or before), torchtitan, llm-foundry/Composer, NeMo/Megatron-Bridge, FSDP/FSDP2, "
         "Megatron-LM of 2019-2021, HAI-LLM/DeepSeek), else megatron-core\n"
         "Megatron-LM 2021: fp16 grads, TP backward overlap, no FlashAttention, dropout 0.1\n"
         "Megatron-Core (README H100): fp32 main grads in memory, bf16 reduce-scatter, TP comm overlap\n"
         "NeMo / Megatron-Bridge: bf16 grads (grad_sync_dtype bf16), distributed optimizer, TP comm overlap\n"
         "Composer FSDP1 (mosaic): mixed_precision PURE (bf16 reduce), fp32 sharded params/grads/moments, "
         "eager kernels, FlashAttention-2, unfused DecoupledAdamW 80 B/param + grad clipping 12 B/param, "
         "BACKWARD_POST prefetch, all-gathers and reduce-scatters on one NCCL stream\n"
         "torchtitan FSDP2: fp32 reduce, fp32 sharded states, async TP, selective AC = every other layer\n"
         "MoE rows: the catalog's model the name holds (Mixtral 8x7B, Qwen3-30B-A3B, Qwen3-235B-A22B, "
         "DeepSeek-V3), balanced routing (the benchmarks force it), expert_tp = tp unless ep·tp exceeds a "
         "stage's ranks (then 1)\n";
}

}  // namespace simrun
