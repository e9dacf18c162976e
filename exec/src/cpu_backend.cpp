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

// The fp32 buffers of a plan (floats each), in the order run() reads them.
std::vector<int64_t> fp32_buffers(const KernelPlan& p) {
  const int64_t x = p.rows * p.width, w = p.width, r = p.rows;
  switch (p.kind) {
    case KernelKind::gemm:
      return {p.m * p.k, p.k * p.n, p.m * p.n};
    case KernelKind::attention_fwd:
    case KernelKind::attention_bwd: {
      const ref::AttentionShape& a = p.attention;
      const int64_t q = a.batch * a.q_heads * a.seq * a.head_dim,
                    kv = a.batch * a.kv_heads * a.seq * a.head_dim;
      const int64_t lse = a.batch * a.q_heads * a.seq;
      if (p.kind == KernelKind::attention_fwd) return {q, kv, kv, q, lse};
      return {q, q, kv, kv, q, lse, q, kv, kv};  // dO, Q, K, V, O, lse, dQ, dK, dV
    }
    case KernelKind::rmsnorm_fwd:
      return {x, w, x, r};
    case KernelKind::rmsnorm_bwd:
      return {x, x, w, r, x, w};
    case KernelKind::layernorm_fwd:
      return {x, w, w, x, r, r};
    case KernelKind::layernorm_bwd:
      return {x, x, w, r, r, x, w, w};
    case KernelKind::swiglu_fwd:
    case KernelKind::gelu_fwd:
    case KernelKind::gelu_bwd:
      return std::vector<int64_t>(3, x);
    case KernelKind::swiglu_bwd:
      return std::vector<int64_t>(5, x);
    case KernelKind::cross_entropy_fwd:
      return {x, r};
    case KernelKind::cross_entropy_bwd:
      return {r, x, x};
    case KernelKind::adamw:
      return std::vector<int64_t>(4, x);
    case KernelKind::stream:
      return std::vector<int64_t>(2, x);
    case KernelKind::host:
      return {};
  }
  return {};
}

std::span<const float> in(const std::vector<float>& v) { return {v.data(), v.size()}; }
std::span<float> out(std::vector<float>& v) { return {v.data(), v.size()}; }

}  // namespace

double CpuBackend::plan_bytes(const KernelPlan& plan) {
  double floats = 0;
  for (int64_t b : fp32_buffers(plan)) floats += double(b);
  return floats * kFp32Bytes;
}

double CpuBackend::footprint_bytes(const Scenario& sc, const StageProgram& program) {
  std::map<std::vector<int64_t>, double> distinct;
  for_each_compute_plan(sc, program, kFp32Bytes, [&](uint32_t, const KernelPlan& p) {
    distinct.emplace(plan_identity(p), plan_bytes(p));
  });
  double bytes = 0;
  for (const auto& [key, b] : distinct) bytes += b;
  return bytes;
}

CpuBackend::CpuBackend(const Scenario& sc, const StageProgram& program)
    : m_program(program), m_buffers_of(program.tasks.size(), -1) {
  std::map<std::vector<int64_t>, int32_t> index;
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for_each_compute_plan(sc, program, kFp32Bytes, [&](uint32_t task, const KernelPlan& p) {
    const auto [it, added] = index.emplace(plan_identity(p), int32_t(m_buffers.size()));
    m_buffers_of[task] = it->second;
    if (!added) return;
    Buffers b;
    b.plan = p;
    for (int64_t floats : fp32_buffers(p)) {
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
