// Kernel plans (kernel_plan.hpp): a compute task's kernel and dimensions, read from its shape.
#include "simrun/exec/kernel_plan.hpp"

#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"

namespace simrun::exec {
namespace {

namespace ref = kernels::ref;

// Tensors a kernel moves per element of its main tensor, as kernel_plan reads an op's element
// count back from the workload's bytes (workload_builder.cpp memory_op, in the activations'
// element size): a norm forward reads x and writes y; its backward reads dy and x and writes dx;
// SwiGLU reads gate and up and writes the output (backward: reads dout, gate, up, writes dgate,
// dup); GELU reads and writes one each (backward: reads dout, x, writes dx); cross-entropy reads
// the logits for its max, sum and target passes and writes the loss (backward: reads them, writes
// dlogits); a stream reads x, y and writes y. AdamW reads p, g, m, v and writes p, m, v, in fp32
// whatever the activations' element.
constexpr double kNormFwdTensors = 2, kNormBwdTensors = 3;
constexpr double kSwigluFwdTensors = 3, kSwigluBwdTensors = 5;
constexpr double kGeluFwdTensors = 2, kGeluBwdTensors = 3;
constexpr double kLossFwdTensors = 3, kLossBwdTensors = 2;
constexpr double kStreamTensors = 3;
constexpr double kAdamBytes = 7 * kFp32Bytes;

int64_t at_least_one(double x) { return std::max<int64_t>(1, static_cast<int64_t>(std::llround(x))); }

// rows × width covering `elements`, width the op's natural row length where it has one.
void set_rows(KernelPlan& p, double elements, int64_t width) {
  p.width = std::max<int64_t>(1, std::min<int64_t>(width, at_least_one(elements)));
  p.rows = at_least_one(elements / double(p.width));
}

bool is_norm(OpName op) {
  return op == OpName::ln_attn || op == OpName::ln_mlp || op == OpName::final_ln || op == OpName::mla_norm;
}

KernelPlan memory_plan(const Scenario& sc, const OpShape& shape, const Task& task, double element_bytes) {
  const ModelSpec& m = sc.model;
  const double e = element_bytes;
  const bool backward = task.phase == Phase::backward;
  KernelPlan p;
  if (is_norm(task.op)) {
    const bool rms = m.norm == NormKind::rmsnorm;
    p.kind = rms ? (backward ? KernelKind::rmsnorm_bwd : KernelKind::rmsnorm_fwd)
                 : (backward ? KernelKind::layernorm_bwd : KernelKind::layernorm_fwd);
    set_rows(p, shape.bytes / ((backward ? kNormBwdTensors : kNormFwdTensors) * e), m.hidden);
    return p;
  }
  if (task.op == OpName::act || task.op == OpName::expert_act) {
    const bool swiglu = m.ffn_act == FfnActivation::swiglu;
    p.kind = swiglu ? (backward ? KernelKind::swiglu_bwd : KernelKind::swiglu_fwd)
                    : (backward ? KernelKind::gelu_bwd : KernelKind::gelu_fwd);
    const double tensors = swiglu ? (backward ? kSwigluBwdTensors : kSwigluFwdTensors)
                                  : (backward ? kGeluBwdTensors : kGeluFwdTensors);
    set_rows(p, shape.bytes / (tensors * e), m.ffn_hidden);
    return p;
  }
  if (task.op == OpName::loss) {
    p.kind = backward ? KernelKind::cross_entropy_bwd : KernelKind::cross_entropy_fwd;
    const int64_t vocab_local = std::max<int64_t>(1, m.vocab / std::max<int64_t>(1, sc.layout.tp));
    set_rows(p, shape.bytes / ((backward ? kLossBwdTensors : kLossFwdTensors) * e), vocab_local);
    return p;
  }
  if (task.op == OpName::optimizer) {
    p.kind = KernelKind::adamw;
    set_rows(p, shape.bytes / kAdamBytes, int64_t(1) << 20);
    return p;
  }
  p.kind = KernelKind::stream;
  set_rows(p, shape.bytes / (kStreamTensors * e), int64_t(1) << 20);
  return p;
}

KernelPlan attention_plan(const Scenario& sc, const OpShape& shape) {
  KernelPlan p;
  p.kind = shape.cls == OpClass::attention_bwd ? KernelKind::attention_bwd : KernelKind::attention_fwd;
  ref::AttentionShape& a = p.attention;
  a.seq = at_least_one(shape.seq_kv);
  a.batch = at_least_one(shape.tokens / shape.seq_kv);
  a.q_heads = at_least_one(shape.heads);
  a.head_dim = at_least_one(shape.head_dim);
  a.causal = shape.causal;
  // The model's query heads per K/V head (grouped-query attention), where it divides the local heads.
  const int64_t group = sc.model.kv_heads > 0 ? std::max<int64_t>(1, sc.model.heads / sc.model.kv_heads) : 1;
  a.kv_heads = a.q_heads % group == 0 ? a.q_heads / group : a.q_heads;
  return p;
}

}  // namespace

const char* to_string(KernelKind k) {
  switch (k) {
    case KernelKind::gemm:
      return "gemm";
    case KernelKind::attention_fwd:
      return "attention_fwd";
    case KernelKind::attention_bwd:
      return "attention_bwd";
    case KernelKind::rmsnorm_fwd:
      return "rmsnorm_fwd";
    case KernelKind::rmsnorm_bwd:
      return "rmsnorm_bwd";
    case KernelKind::layernorm_fwd:
      return "layernorm_fwd";
    case KernelKind::layernorm_bwd:
      return "layernorm_bwd";
    case KernelKind::swiglu_fwd:
      return "swiglu_fwd";
    case KernelKind::swiglu_bwd:
      return "swiglu_bwd";
    case KernelKind::gelu_fwd:
      return "gelu_fwd";
    case KernelKind::gelu_bwd:
      return "gelu_bwd";
    case KernelKind::cross_entropy_fwd:
      return "cross_entropy_fwd";
    case KernelKind::cross_entropy_bwd:
      return "cross_entropy_bwd";
    case KernelKind::adamw:
      return "adamw";
    case KernelKind::stream:
      return "stream";
    case KernelKind::host:
      return "host";
  }
  return "?";
}

KernelPlan kernel_plan(const Scenario& sc, const StageProgram& program, const Task& task,
                       double element_bytes) {
  SIMRUN_ASSERT(task.kind == TaskKind::compute, "kernel_plan of a task that is not compute");
  const OpShape& shape = program.shape(task);
  switch (shape.cls) {
    case OpClass::gemm: {
      KernelPlan p;
      p.kind = KernelKind::gemm;
      p.m = at_least_one(shape.m);
      p.n = at_least_one(shape.n);
      p.k = at_least_one(shape.k);
      p.batch = at_least_one(shape.batch);
      return p;
    }
    case OpClass::attention_fwd:
    case OpClass::attention_bwd:
      return attention_plan(sc, shape);
    case OpClass::memory:
      return memory_plan(sc, shape, task, element_bytes);
    case OpClass::host: {
      KernelPlan p;
      p.kind = KernelKind::host;
      p.host_s = shape.host_s;
      return p;
    }
  }
  return {};
}

std::vector<int64_t> plan_identity(const KernelPlan& p) {
  const ref::AttentionShape& a = p.attention;
  return {int64_t(p.kind), p.m,       p.n,        p.k,   p.batch,    p.rows,   p.width,
          a.batch,         a.q_heads, a.kv_heads, a.seq, a.head_dim, a.causal, llround(p.host_s * 1e9)};
}

}  // namespace simrun::exec
