// Low-precision training recipes: which GEMMs run at the fp8 / fp4 tensor-core rate, what stays
// in 16-bit, and the quantisation work each adds. One table (precision_recipe.cpp), each entry
// with its source; the workload builder, the compute and memory models and the layout rules
// read it.
//
// A recipe quantises a GEMM's 16-bit operands before the GEMM: it reads the bf16 tensor,
// writes a row-wise copy for this GEMM and a column-wise copy (the transpose, or a
// re-quantisation along the other axis for block scales) for the backward GEMM that consumes it
// along K, and stores the scales; current scaling first finds the tensor's amax in a separate
// pass (the scale must be known before the cast). Delayed scaling takes the scale from the amax
// history, so a norm kernel can emit its output already in fp8.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simrun/topologies/hardware_spec.hpp"

namespace simrun {

// Megatron-LM --fp8-recipe {delayed, tensorwise, blockwise, mxfp8} and --fp4-recipe nvfp4.
enum class LowPrecisionRecipe { delayed, tensorwise, blockwise, mxfp8, nvfp4 };

struct PrecisionRecipeSpec {
  LowPrecisionRecipe id = LowPrecisionRecipe::delayed;
  const char* name = "";  // as the scenario and Megatron-LM spell it, e.g. "mxfp8"
  // Tensor-core rate of a linear layer's GEMMs, fprop, dgrad and wgrad alike (every recipe here
  // runs all three low: each entry's source): fp8 or fp4.
  Precision gemm_precision = Precision::fp8;
  // HBM bytes moved per element of a 16-bit operand quantised: reads, the row- and column-wise
  // quantised copies, the scales, and current scaling's amax pass.
  double quantize_bytes_per_element = 0;
  // Bytes per element of a quantised GEMM input saved for the backward (with its scales).
  double saved_input_bytes_per_element = 1;
  // Whether a fused norm can emit its output already quantised (the scale known beforehand).
  bool norm_emits_quantized = false;
  // Fraction of the transformer layers (the last ones) kept in 16-bit by the recipe.
  double bf16_last_layers_fraction = 0;
  // GPU architectures whose tensor cores run the recipe's scaled format natively; empty = any
  // GPU with the precision's dense peak.
  std::vector<std::string> architectures;
  const char* source = "";
};

const PrecisionRecipeSpec& precision_recipe(LowPrecisionRecipe r);
// All recipes, in declaration order.
const std::vector<PrecisionRecipeSpec>& precision_recipes();
// The recipe named `name` (as written in a scenario or on the command line); nullopt if none.
std::optional<LowPrecisionRecipe> parse_precision_recipe(const std::string& name);
// The recipe names, for error messages and option help ("delayed, tensorwise, ...").
std::vector<std::string> precision_recipe_names();
// The recipe a precision defaults to: delayed scaling for fp8 (Megatron-LM's --fp8-recipe
// default), nvfp4 for fp4 (its only fp4 recipe).
LowPrecisionRecipe default_recipe(Precision p);
// fp8 or fp4 GEMMs: where a recipe applies.
inline bool is_low_precision(Precision p) { return p == Precision::fp8 || p == Precision::fp4; }
// Whether recipe `r` scales GEMMs of precision `p` (fp8 recipes for fp8, nvfp4 for fp4), and
// whether parameters can be gathered in fp8 at `p` (fp8 only): the layout rules refuse a recipe or
// fp8 parameters written for another precision, and a changed precision drops them by these.
bool recipe_runs_at(LowPrecisionRecipe r, Precision p);
inline bool fp8_param_gather_runs_at(Precision p) { return p == Precision::fp8; }
// The first of the last transformer layers that a run at precision `p` under recipe `r` keeps in
// 16-bit (the recipe's bf16_last_layers_fraction of `layers`, rounded); `layers` where it keeps
// none. The workload builder runs those layers' GEMMs at 16 bits, the estimate's probes likewise.
int64_t first_bf16_layer(Precision p, LowPrecisionRecipe r, int64_t layers);
// Bytes per element of the activations and 16-bit tensors of a run at precision `p`: 4 for
// fp32/tf32, 2 otherwise (fp8 and fp4 recipes quantise copies of 16-bit tensors).
double tensor_element_bytes(Precision p);
// Bytes per parameter as the weights are gathered and held for the GEMMs: 1 where they are
// gathered in fp8 (Megatron-LM --fp8-param-gather: the model's parameters are the fp8 copies,
// the fp32 master stays with the optimizer), tensor_element_bytes(p) otherwise.
double gathered_weight_bytes(Precision p, bool fp8_param_gather);
const char* to_string(LowPrecisionRecipe r);

}  // namespace simrun
