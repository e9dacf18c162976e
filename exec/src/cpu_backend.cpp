// The cpu backend (cpu_backend.hpp): a compute task's kernel plan, its buffers, and the run.
#include "simrun/exec/cpu_backend.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "simrun/common/error.hpp"

namespace simrun::exec {
namespace {

namespace ref = kernels::ref;

constexpr double kFloat = 4;  // bytes of an fp32 element
// Bytes a kernel moves per element of its main tensor, as kernel_plan reads an op's element
// count back from the workload's bytes (workload_builder.cpp memory_op): a norm forward reads x
// and writes y; its backward reads dy and x and writes dx; SwiGLU reads gate and up and writes
// the output (backward: reads dout, gate, up, writes dgate, dup); GELU reads and writes one each
// (backward: reads dout, x, writes dx); cross-entropy reads the logits for its max, sum and
// target passes and writes the loss (backward: reads them, writes dlogits); AdamW reads p, g, m,
// v and writes p, m, v; a stream reads x, y and writes y.
constexpr double kNormFwdBytes = 2 * kFloat, kNormBwdBytes = 3 * kFloat;
constexpr double kSwigluFwdBytes = 3 * kFloat, kSwigluBwdBytes = 5 * kFloat;
constexpr double kGeluFwdBytes = 2 * kFloat, kGeluBwdBytes = 3 * kFloat;
constexpr double kLossFwdBytes = 3 * kFloat, kLossBwdBytes = 2 * kFloat;
constexpr double kAdamBytes = 7 * kFloat;
constexpr double kStreamBytes = 3 * kFloat;

int64_t at_least_one(double x) { return std::max<int64_t>(1, static_cast<int64_t>(std::llround(x))); }

// rows × width covering `elements`, width the op's natural row length where it has one.
void set_rows(KernelPlan& p, double elements, int64_t width) {
  p.width = std::max<int64_t>(1, std::min<int64_t>(width, at_least_one(elements)));
  p.rows = at_least_one(elements / double(p.width));
}

bool is_norm(OpName op) {
  return op == OpName::ln_attn || op == OpName::ln_mlp || op == OpName::final_ln || op == OpName::mla_norm;
}

KernelPlan memory_plan(const Scenario& sc, const OpShape& shape, const Task& task) {
  const ModelSpec& m = sc.model;
  const bool backward = task.phase == Phase::backward;
  KernelPlan p;
  if (is_norm(task.op)) {
    const bool rms = m.norm == NormKind::rmsnorm;
    p.kind = rms ? (backward ? KernelKind::rmsnorm_bwd : KernelKind::rmsnorm_fwd)
                 : (backward ? KernelKind::layernorm_bwd : KernelKind::layernorm_fwd);
    set_rows(p, shape.bytes / (backward ? kNormBwdBytes : kNormFwdBytes), m.hidden);
    const int64_t x = p.rows * p.width, w = p.width, r = p.rows;
    if (rms)
      p.buffers = backward ? std::vector<int64_t>{x, x, w, r, x, w} : std::vector<int64_t>{x, w, x, r};
    else
      p.buffers =
          backward ? std::vector<int64_t>{x, x, w, r, r, x, w, w} : std::vector<int64_t>{x, w, w, x, r, r};
    return p;
  }
  if (task.op == OpName::act || task.op == OpName::expert_act) {
    const bool swiglu = m.ffn_act == FfnActivation::swiglu;
    p.kind = swiglu ? (backward ? KernelKind::swiglu_bwd : KernelKind::swiglu_fwd)
                    : (backward ? KernelKind::gelu_bwd : KernelKind::gelu_fwd);
    const double per =
        swiglu ? (backward ? kSwigluBwdBytes : kSwigluFwdBytes) : (backward ? kGeluBwdBytes : kGeluFwdBytes);
    set_rows(p, shape.bytes / per, m.ffn_hidden);
    const int64_t x = p.rows * p.width;
    p.buffers = std::vector<int64_t>(swiglu ? (backward ? 5 : 3) : 3, x);
    return p;
  }
  if (task.op == OpName::loss) {
    p.kind = backward ? KernelKind::cross_entropy_bwd : KernelKind::cross_entropy_fwd;
    const int64_t vocab_local = std::max<int64_t>(1, m.vocab / std::max<int64_t>(1, sc.layout.tp));
    set_rows(p, shape.bytes / (backward ? kLossBwdBytes : kLossFwdBytes), vocab_local);
    const int64_t x = p.rows * p.width, r = p.rows;
    p.buffers = backward ? std::vector<int64_t>{r, x, x} : std::vector<int64_t>{x, r};
    return p;
  }
  if (task.op == OpName::optimizer) {
    p.kind = KernelKind::adamw;
    set_rows(p, shape.bytes / kAdamBytes, int64_t(1) << 20);
    p.buffers = std::vector<int64_t>(4, p.rows * p.width);
    return p;
  }
  p.kind = KernelKind::stream;
  set_rows(p, shape.bytes / kStreamBytes, int64_t(1) << 20);
  p.buffers = std::vector<int64_t>(2, p.rows * p.width);
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
  const int64_t q = a.batch * a.q_heads * a.seq * a.head_dim, kv = a.batch * a.kv_heads * a.seq * a.head_dim;
  const int64_t lse = a.batch * a.q_heads * a.seq;
  if (p.kind == KernelKind::attention_fwd)
    p.buffers = {q, kv, kv, q, lse};
  else
    p.buffers = {q, q, kv, kv, q, lse, q, kv, kv};  // dO, Q, K, V, O, lse, dQ, dK, dV
  return p;
}

// The identity of a plan: plans equal in it share buffers.
std::vector<int64_t> plan_key(const KernelPlan& p) {
  const ref::AttentionShape& a = p.attention;
  return {int64_t(p.kind), p.m,       p.n,        p.k,   p.batch,    p.rows,   p.width,
          a.batch,         a.q_heads, a.kv_heads, a.seq, a.head_dim, a.causal, llround(p.host_s * 1e9)};
}

template <class F>
void for_each_plan(const Scenario& sc, const StageProgram& program, F&& f) {
  for (uint32_t i = 0; i < program.tasks.size(); ++i)
    if (program.tasks[i].kind == TaskKind::compute) f(i, kernel_plan(sc, program, program.tasks[i]));
}

std::span<const float> in(const std::vector<float>& v) { return {v.data(), v.size()}; }
std::span<float> out(std::vector<float>& v) { return {v.data(), v.size()}; }

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

double KernelPlan::bytes() const {
  double floats = 0;
  for (int64_t b : buffers) floats += double(b);
  return floats * kFloat;
}

KernelPlan kernel_plan(const Scenario& sc, const StageProgram& program, const Task& task) {
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
      p.buffers = {p.m * p.k, p.k * p.n, p.m * p.n};
      return p;
    }
    case OpClass::attention_fwd:
    case OpClass::attention_bwd:
      return attention_plan(sc, shape);
    case OpClass::memory:
      return memory_plan(sc, shape, task);
    case OpClass::host: {
      KernelPlan p;
      p.kind = KernelKind::host;
      p.host_s = shape.host_s;
      return p;
    }
  }
  return {};
}

double CpuBackend::footprint_bytes(const Scenario& sc, const StageProgram& program) {
  std::map<std::vector<int64_t>, double> distinct;
  for_each_plan(sc, program,
                [&](uint32_t, const KernelPlan& p) { distinct.emplace(plan_key(p), p.bytes()); });
  double bytes = 0;
  for (const auto& [key, b] : distinct) bytes += b;
  return bytes;
}

CpuBackend::CpuBackend(const Scenario& sc, const StageProgram& program)
    : m_program(program), m_buffers_of(program.tasks.size(), -1) {
  std::map<std::vector<int64_t>, int32_t> index;
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for_each_plan(sc, program, [&](uint32_t task, const KernelPlan& p) {
    const auto [it, added] = index.emplace(plan_key(p), int32_t(m_buffers.size()));
    m_buffers_of[task] = it->second;
    if (!added) return;
    Buffers b;
    b.plan = p;
    for (int64_t floats : p.buffers) {
      std::vector<float> v(static_cast<size_t>(floats));
      for (float& x : v) x = uniform(rng);  // finite, and no denormals to slow a kernel down
      b.data.push_back(std::move(v));
    }
    if (p.kind == KernelKind::cross_entropy_fwd || p.kind == KernelKind::cross_entropy_bwd) {
      b.targets.resize(static_cast<size_t>(p.rows));
      for (int64_t r = 0; r < p.rows; ++r) b.targets[size_t(r)] = int32_t((r * 7919) % p.width);
    }
    if (p.kind == KernelKind::rmsnorm_fwd || p.kind == KernelKind::layernorm_fwd ||
        p.kind == KernelKind::rmsnorm_bwd || p.kind == KernelKind::layernorm_bwd) {
      // rstd must be a plausible 1/rms for the backward (positive).
      for (auto& v : b.data)
        if (v.size() == size_t(p.rows)) std::fill(v.begin(), v.end(), 1.0f);
    }
    if (p.kind == KernelKind::adamw) std::fill(b.data[3].begin(), b.data[3].end(), 0.5f);  // v >= 0
    m_buffers.push_back(std::move(b));
  });
}

void CpuBackend::run(uint32_t index) {
  SIMRUN_ASSERT(index < m_buffers_of.size() && m_buffers_of[index] >= 0, "run of a task that is not compute");
  Buffers& b = m_buffers[size_t(m_buffers_of[index])];
  const KernelPlan& p = b.plan;
  auto& d = b.data;
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  switch (p.kind) {
    case KernelKind::gemm: {
      Eigen::Map<const Matrix> a(d[0].data(), p.m, p.k), w(d[1].data(), p.k, p.n);
      Eigen::Map<Matrix> c(d[2].data(), p.m, p.n);
      for (int64_t i = 0; i < p.batch; ++i) c.noalias() = a * w;
      return;
    }
    case KernelKind::attention_fwd:
      ref::attention_forward<float>(p.attention, in(d[0]), in(d[1]), in(d[2]), out(d[3]), out(d[4]));
      return;
    case KernelKind::attention_bwd:
      ref::attention_backward<float>(p.attention, in(d[0]), in(d[1]), in(d[2]), in(d[3]), in(d[4]), in(d[5]),
                                     out(d[6]), out(d[7]), out(d[8]));
      return;
    case KernelKind::rmsnorm_fwd:
      ref::rmsnorm_forward<float>(in(d[0]), in(d[1]), p.rows, p.width, 1e-5f, out(d[2]), out(d[3]));
      return;
    case KernelKind::rmsnorm_bwd:
      ref::rmsnorm_backward<float>(in(d[0]), in(d[1]), in(d[2]), in(d[3]), p.rows, p.width, out(d[4]),
                                   out(d[5]));
      return;
    case KernelKind::layernorm_fwd:
      ref::layernorm_forward<float>(in(d[0]), in(d[1]), in(d[2]), p.rows, p.width, 1e-5f, out(d[3]),
                                    out(d[4]), out(d[5]));
      return;
    case KernelKind::layernorm_bwd:
      ref::layernorm_backward<float>(in(d[0]), in(d[1]), in(d[2]), in(d[3]), in(d[4]), p.rows, p.width,
                                     out(d[5]), out(d[6]), out(d[7]));
      return;
    case KernelKind::swiglu_fwd:
      ref::swiglu_forward<float>(in(d[0]), in(d[1]), out(d[2]));
      return;
    case KernelKind::swiglu_bwd:
      ref::swiglu_backward<float>(in(d[0]), in(d[1]), in(d[2]), out(d[3]), out(d[4]));
      return;
    case KernelKind::gelu_fwd:
      ref::gelu_forward<float>(in(d[0]), out(d[1]));
      return;
    case KernelKind::gelu_bwd:
      ref::gelu_backward<float>(in(d[0]), in(d[1]), out(d[2]));
      return;
    case KernelKind::cross_entropy_fwd:
      ref::cross_entropy_forward<float>(in(d[0]), b.targets, p.rows, p.width, out(d[1]));
      return;
    case KernelKind::cross_entropy_bwd:
      ref::cross_entropy_backward<float>(in(d[0]), in(d[1]), b.targets, p.rows, p.width, out(d[2]));
      return;
    case KernelKind::adamw:
      ref::adamw_step<float>(ref::AdamW{}, ++m_adam_step, out(d[0]), in(d[1]), out(d[2]), out(d[3]));
      return;
    case KernelKind::stream: {
      float* y = d[1].data();
      const float* x = d[0].data();
      const size_t n = d[0].size();
      for (size_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] + x[i];  // stays bounded step after step
      return;
    }
    case KernelKind::host:
      std::this_thread::sleep_for(std::chrono::duration<double>(p.host_s));
      return;
  }
}

}  // namespace simrun::exec
