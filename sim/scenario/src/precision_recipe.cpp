// The low-precision recipes' table; see precision_recipe.hpp.
#include "simrun/sim/scenario/precision_recipe.hpp"

#include <cmath>

#include "simrun/common/error.hpp"

namespace simrun {
namespace {

// Scale storage per element: fp32 per 128 (blockwise), E8M0 per 32 (MX), E4M3 per 16 (NVFP4).
constexpr double kBlockwiseScaleBytes = 4.0 / 128.0;
constexpr double kMxScaleBytes = 1.0 / 32.0;
constexpr double kNvfp4ScaleBytes = 1.0 / 16.0;

std::vector<PrecisionRecipeSpec> make_recipes() {
  std::vector<PrecisionRecipeSpec> r;
  PrecisionRecipeSpec delayed;
  delayed.id = LowPrecisionRecipe::delayed;
  delayed.name = "delayed";
  delayed.gemm_precision = Precision::fp8;
  // read bf16 (2) + fp8 row-wise (1) + fp8 transpose (1); the amax is reduced inside the cast.
  delayed.quantize_bytes_per_element = 2.0 + 1.0 + 1.0;
  delayed.saved_input_bytes_per_element = 1.0;
  delayed.norm_emits_quantized = true;
  delayed.source =
      "Transformer Engine DelayedScaling (Megatron-LM's default fp8_recipe 'delayed'): per-tensor scale "
      "from the amax history, fused cast_transpose writing row- and column-wise fp8, LayerNormLinear's norm "
      "emitting fp8; fprop, dgrad and wgrad in fp8 (TE docs, 'Using FP8 with Transformer Engine')";
  r.push_back(delayed);

  PrecisionRecipeSpec tensorwise = delayed;
  tensorwise.id = LowPrecisionRecipe::tensorwise;
  tensorwise.name = "tensorwise";
  // An amax pass over the bf16 tensor (2) before the cast_transpose (4).
  tensorwise.quantize_bytes_per_element = 2.0 + 4.0;
  tensorwise.norm_emits_quantized = false;
  tensorwise.source =
      "Transformer Engine Float8CurrentScaling (Megatron-LM fp8_recipe 'tensorwise'; 'fp8-cs' in the "
      "Megatron-Bridge tables): the scale comes from the tensor's own amax, computed by a separate kernel "
      "before the cast, so a norm cannot emit fp8 directly";
  r.push_back(tensorwise);

  PrecisionRecipeSpec blockwise = delayed;
  blockwise.id = LowPrecisionRecipe::blockwise;
  blockwise.name = "blockwise";
  blockwise.quantize_bytes_per_element = 2.0 + 1.0 + 1.0 + 2.0 * kBlockwiseScaleBytes;
  blockwise.saved_input_bytes_per_element = 1.0 + kBlockwiseScaleBytes;
  blockwise.norm_emits_quantized = false;
  blockwise.source =
      "DeepSeek-V3 (arXiv:2412.19437 sec. 3.3): fprop, dgrad and wgrad in fp8 E4M3 with online scales per "
      "1x128 activation tile and 128x128 weight block, fp32 scales; Transformer Engine Float8BlockScaling "
      "(Megatron-LM fp8_recipe 'blockwise'). Block-scaled GEMMs run at the per-tensor rate: DeepGEMM "
      "4096x7168x16384 ~1520 TFLOP/s on H800 against cuBLAS per-tensor ~1400 on H100 "
      "(shared/reference/measured-microbenchmarks.md)";
  r.push_back(blockwise);

  PrecisionRecipeSpec mxfp8 = delayed;
  mxfp8.id = LowPrecisionRecipe::mxfp8;
  mxfp8.name = "mxfp8";
  // Row- and column-wise copies re-quantised from bf16 (block scales run along K), E8M0 scales.
  mxfp8.quantize_bytes_per_element = 2.0 + 1.0 + 1.0 + 2.0 * kMxScaleBytes;
  mxfp8.saved_input_bytes_per_element = 1.0 + kMxScaleBytes;
  mxfp8.norm_emits_quantized = false;
  mxfp8.architectures = {"Blackwell", "Blackwell Ultra", "CDNA 4"};
  mxfp8.source =
      "OCP Microscaling (MX) v1.0: E4M3 elements with an E8M0 scale per 32; Transformer Engine "
      "MXFP8BlockScaling "
      "(Megatron-LM fp8_recipe 'mxfp8') quantises row- and column-wise copies, Blackwell tensor cores apply "
      "the block scales natively (CDNA 4 too). Norm fusion not assumed";
  r.push_back(mxfp8);

  PrecisionRecipeSpec nvfp4;
  nvfp4.id = LowPrecisionRecipe::nvfp4;
  nvfp4.name = "nvfp4";
  nvfp4.gemm_precision = Precision::fp4;
  // A per-tensor amax pass (2) for the fp32 second-level scale, then read (2), fp4 row- and
  // column-wise copies (0.5 + 0.5; the column-wise one after a 16x16 random Hadamard transform
  // for wgrad, fused in the cast) and E4M3 scales per 16.
  nvfp4.quantize_bytes_per_element = 2.0 + 2.0 + 0.5 + 0.5 + 2.0 * kNvfp4ScaleBytes;
  nvfp4.saved_input_bytes_per_element = 0.5 + kNvfp4ScaleBytes;
  nvfp4.norm_emits_quantized = false;
  nvfp4.bf16_last_layers_fraction = 0.15;
  nvfp4.architectures = {"Blackwell", "Blackwell Ultra"};
  nvfp4.source =
      "NVIDIA 2025, 'Pretraining Large Language Models with NVFP4' (arXiv:2509.25149): E2M1 elements, E4M3 "
      "scales per 16 and an fp32 per-tensor scale, fprop/dgrad/wgrad in NVFP4 with random Hadamard "
      "transforms "
      "on the wgrad inputs, a small share of the linear layers (~15%, the final blocks) kept in BF16; "
      "Transformer Engine NVFP4BlockScaling (Megatron-LM fp4_recipe 'nvfp4'), Blackwell only";
  r.push_back(nvfp4);
  return r;
}

}  // namespace

const std::vector<PrecisionRecipeSpec>& precision_recipes() {
  static const std::vector<PrecisionRecipeSpec> recipes = make_recipes();
  return recipes;
}

const PrecisionRecipeSpec& precision_recipe(LowPrecisionRecipe id) {
  for (const PrecisionRecipeSpec& r : precision_recipes())
    if (r.id == id) return r;
  SIMRUN_ASSERT(false, "every LowPrecisionRecipe has a table entry");
  return precision_recipes().front();
}

std::optional<LowPrecisionRecipe> parse_precision_recipe(const std::string& name) {
  for (const PrecisionRecipeSpec& r : precision_recipes())
    if (name == r.name) return r.id;
  return std::nullopt;
}

std::vector<std::string> precision_recipe_names() {
  std::vector<std::string> out;
  for (const PrecisionRecipeSpec& r : precision_recipes()) out.emplace_back(r.name);
  return out;
}

LowPrecisionRecipe default_recipe(Precision p) {
  return p == Precision::fp4 ? LowPrecisionRecipe::nvfp4 : LowPrecisionRecipe::delayed;
}

int64_t first_bf16_layer(Precision p, LowPrecisionRecipe r, int64_t layers) {
  if (!is_low_precision(p)) return layers;
  return layers - std::llround(precision_recipe(r).bf16_last_layers_fraction * double(layers));
}

bool recipe_runs_at(LowPrecisionRecipe r, Precision p) { return precision_recipe(r).gemm_precision == p; }

double tensor_element_bytes(Precision p) {
  return (p == Precision::fp32 || p == Precision::tf32) ? 4.0 : 2.0;
}

double gathered_weight_bytes(Precision p, bool fp8_param_gather) {
  return fp8_param_gather && fp8_param_gather_runs_at(p) ? 1.0 : tensor_element_bytes(p);
}

const char* to_string(LowPrecisionRecipe r) { return precision_recipe(r).name; }

}  // namespace simrun
