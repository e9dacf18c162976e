// The cuda backend (cuda_backend.hpp): plans, device buffers, launches.
#include "cuda_backend.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>

#include "cuda_check.hpp"
#include "simrun/common/error.hpp"
#include "simrun/kernels/bf16.hpp"

namespace simrun::exec {
namespace {

namespace cuda = kernels::cuda;

constexpr float kNormEps = 1e-5f;

enum class Element : uint8_t { bf16, f32, fp8, i32, bytes };
double size_of(Element e) {
  switch (e) {
    case Element::bf16:
      return 2;
    case Element::f32:
    case Element::i32:
      return 4;
    case Element::fp8:
    case Element::bytes:
      return 1;
  }
  return 1;
}

// What a buffer holds before the first step: random values in [-1, 1] (finite, no denormals),
// ones (a norm's rstd), halves (AdamW's second moment, ≥ 0), labels inside the vocabulary, or
// nothing (outputs and workspaces).
enum class Fill : uint8_t { random, ones, halves, labels, none };

struct BufferSpec {
  Element element = Element::bf16;
  int64_t count = 0;
  Fill fill = Fill::random;
};

Element operand_element(GemmPrecision p) { return p == GemmPrecision::fp8 ? Element::fp8 : Element::bf16; }

cuda::AttentionDims dims_of(const kernels::ref::AttentionShape& a) {
  return {a.batch, a.q_heads, a.kv_heads, a.seq, a.head_dim, a.causal};
}

// The buffers of a plan, in the order enqueue() reads them.
std::vector<BufferSpec> buffers_of(const KernelPlan& p, GemmPrecision precision) {
  using E = Element;
  using F = Fill;
  const int64_t x = p.rows * p.width, w = p.width, r = p.rows;
  switch (p.kind) {
    case KernelKind::gemm: {
      const GemmPrecision runs = gemm_precision_for(precision, p.m, p.n, p.k);
      const E in = operand_element(runs);
      return {{in, p.m * p.k * p.batch}, {in, p.k * p.n * p.batch}, {E::bf16, p.m * p.n * p.batch, F::none}};
    }
    case KernelKind::attention_fwd: {
      const auto& a = p.attention;
      const int64_t q = a.batch * a.q_heads * a.seq * a.head_dim,
                    kv = a.batch * a.kv_heads * a.seq * a.head_dim;
      return {{E::bf16, q},
              {E::bf16, kv},
              {E::bf16, kv},
              {E::bf16, q, F::none},
              {E::f32, q / a.head_dim, F::none}};
    }
    case KernelKind::attention_bwd: {
      const auto& a = p.attention;
      const int64_t q = a.batch * a.q_heads * a.seq * a.head_dim,
                    kv = a.batch * a.kv_heads * a.seq * a.head_dim;
      const int64_t workspace = int64_t(cuda::flash_attention_backward_workspace_bytes(dims_of(a)));
      // dO, Q, K, V, O, lse (a plausible log-sum-exp: ones), dQ, dK, dV, workspace
      return {{E::bf16, q},           {E::bf16, q},
              {E::bf16, kv},          {E::bf16, kv},
              {E::bf16, q},           {E::f32, q / a.head_dim, F::ones},
              {E::bf16, q, F::none},  {E::bf16, kv, F::none},
              {E::bf16, kv, F::none}, {E::bytes, workspace, F::none}};
    }
    case KernelKind::rmsnorm_fwd:  // x, residual, weight, y, residual_out, rstd
      return {{E::bf16, x},          {E::bf16, x},          {E::bf16, w},
              {E::bf16, x, F::none}, {E::bf16, x, F::none}, {E::f32, r, F::none}};
    case KernelKind::rmsnorm_bwd:  // dy, d_residual_next, residual_out, weight, rstd, d_sum, dweight,
                                   // workspace
      return {{E::bf16, x},
              {E::bf16, x},
              {E::bf16, x},
              {E::bf16, w},
              {E::f32, r, F::ones},
              {E::bf16, x, F::none},
              {E::f32, w, F::none},
              {E::bytes, int64_t(cuda::residual_rmsnorm_backward_workspace_bytes(r, w)), F::none}};
    case KernelKind::layernorm_fwd:  // x, residual, weight, bias, y, residual_out, mean, rstd
      return {{E::bf16, x},          {E::bf16, x},          {E::bf16, w},         {E::bf16, w},
              {E::bf16, x, F::none}, {E::bf16, x, F::none}, {E::f32, r, F::none}, {E::f32, r, F::none}};
    case KernelKind::layernorm_bwd:
      // dy, d_residual_next, residual_out, weight, mean, rstd, d_sum, dweight, dbias, workspace
      return {{E::bf16, x},
              {E::bf16, x},
              {E::bf16, x},
              {E::bf16, w},
              {E::f32, r},
              {E::f32, r, F::ones},
              {E::bf16, x, F::none},
              {E::f32, w, F::none},
              {E::f32, w, F::none},
              {E::bytes, int64_t(cuda::residual_layernorm_backward_workspace_bytes(r, w)), F::none}};
    case KernelKind::swiglu_fwd:  // gate, up, out
      return {{E::bf16, x}, {E::bf16, x}, {E::bf16, x, F::none}};
    case KernelKind::swiglu_bwd:  // dout, gate, up, dgate, dup
      return {{E::bf16, x}, {E::bf16, x}, {E::bf16, x}, {E::bf16, x, F::none}, {E::bf16, x, F::none}};
    case KernelKind::gelu_fwd:  // x, bias, out
      return {{E::bf16, x}, {E::bf16, w}, {E::bf16, x, F::none}};
    case KernelKind::gelu_bwd:  // dout, x, bias, dx, dbias, workspace
      return {
          {E::bf16, x},         {E::bf16, x},
          {E::bf16, w},         {E::bf16, x, F::none},
          {E::f32, w, F::none}, {E::bytes, int64_t(cuda::bias_gelu_backward_workspace_bytes(r, w)), F::none}};
    case KernelKind::cross_entropy_fwd:  // logits, labels, losses
      return {{E::bf16, x}, {E::i32, r, F::labels}, {E::f32, r, F::none}};
    case KernelKind::cross_entropy_bwd:  // dlosses, logits, labels, dlogits
      return {{E::f32, r}, {E::bf16, x}, {E::i32, r, F::labels}, {E::bf16, x, F::none}};
    case KernelKind::adamw:  // params, grads, m, v
      return {{E::f32, x}, {E::f32, x}, {E::f32, x}, {E::f32, x, F::halves}};
    case KernelKind::stream:  // x, y
      return {{E::bf16, x}, {E::bf16, x}};
    case KernelKind::host:
      return {};
  }
  return {};
}

// A random pattern of `bytes`, in `element`, copied over the buffer by repetition.
std::vector<uint8_t> pattern(Element element, Fill fill, int64_t vocab, size_t bytes, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<uint8_t> out(bytes);
  auto put = [&](size_t i, const void* v, size_t n) {
    std::copy_n(static_cast<const uint8_t*>(v), n, &out[i]);
  };
  for (size_t i = 0; i + size_t(size_of(element)) <= bytes; i += size_t(size_of(element))) {
    const float f = fill == Fill::ones ? 1.0f : fill == Fill::halves ? 0.5f : uniform(rng);
    switch (element) {
      case Element::bf16: {
        const uint16_t h = kernels::to_bf16(f);
        put(i, &h, 2);
        break;
      }
      case Element::f32:
        put(i, &f, 4);
        break;
      case Element::i32: {
        const int32_t label = int32_t(rng() % uint32_t(std::max<int64_t>(1, vocab)));
        put(i, &label, 4);
        break;
      }
      case Element::fp8:  // e4m3 bytes below 2^1 in magnitude: never NaN (0x7f, 0xff)
        out[i] = uint8_t(rng() & 0xb7);
        break;
      case Element::bytes:
        out[i] = 0;
        break;
    }
  }
  return out;
}

void CUDART_CB sleep_on_host(void* seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(*static_cast<const double*>(seconds)));
}

}  // namespace

struct CudaBackend::Plan {
  KernelPlan plan;
  std::vector<void*> buffers;
  std::unique_ptr<LtGemm> gemm;
  std::unique_ptr<cuda::AdamWTensors> adam;
  ~Plan() {
    for (void* p : buffers) cudaFree(p);
  }
  template <class T = uint16_t>
  T* at(size_t i) const {
    return static_cast<T*>(buffers[i]);
  }
};

GemmPrecision cuda_gemm_precision(const Scenario& sc, int major, int minor) {
  // fp8 tensor cores from sm_89 (Ada, Hopper, Blackwell).
  return sc.layout.precision == Precision::fp8 && major * 10 + minor >= 89 ? GemmPrecision::fp8
                                                                           : GemmPrecision::bf16;
}

std::string cuda_backend_refusal(const Scenario& sc, const StageProgram& program) {
  std::string refusal;
  for_each_compute_plan(sc, program, CudaBackend::kElementBytes, [&](uint32_t, const KernelPlan& p) {
    if (!refusal.empty() || (p.kind != KernelKind::attention_fwd && p.kind != KernelKind::attention_bwd))
      return;
    try {  // the kernel's own shape rules, checked before any CUDA call
      cuda::flash_attention_backward_workspace_bytes(dims_of(p.attention));
    } catch (const std::invalid_argument& e) {
      refusal = std::string(e.what()) + " (the cuda backend's attention)";
    }
  });
  return refusal;
}

double CudaBackend::plan_bytes(const KernelPlan& plan, GemmPrecision precision) {
  double bytes = 0;
  for (const BufferSpec& b : buffers_of(plan, precision)) bytes += double(b.count) * size_of(b.element);
  return bytes;
}

double CudaBackend::footprint_bytes(const Scenario& sc, const StageProgram& program,
                                    GemmPrecision precision) {
  std::map<std::vector<int64_t>, double> distinct;
  for_each_compute_plan(sc, program, CudaBackend::kElementBytes, [&](uint32_t, const KernelPlan& p) {
    distinct.emplace(plan_identity(p), plan_bytes(p, precision));
  });
  double bytes = double(LtGemm::kWorkspaceBytes);
  for (const auto& [key, b] : distinct) bytes += b;
  return bytes;
}

CudaBackend::CudaBackend(const Scenario& sc, const StageProgram& program, GemmPrecision precision)
    : m_program(program), m_plan_of(program.tasks.size(), -1) {
  try {
    SIMRUN_CUBLAS_CHECK(cublasLtCreate(&m_lt));
    SIMRUN_CUDA_CHECK(cudaMalloc(&m_gemm_workspace, LtGemm::kWorkspaceBytes));
    std::map<std::vector<int64_t>, int32_t> index;
    std::vector<uint32_t> first_task;  // per plan
    std::mt19937 rng(12345);
    constexpr size_t kPatternBytes = size_t(1) << 22;
    for_each_compute_plan(sc, program, CudaBackend::kElementBytes, [&](uint32_t task, const KernelPlan& p) {
      const auto [it, added] = index.emplace(plan_identity(p), int32_t(m_plans.size()));
      m_plan_of[task] = it->second;
      if (!added) return;
      first_task.push_back(task);
      m_plans.push_back(std::make_unique<Plan>());
      Plan& plan = *m_plans.back();
      plan.plan = p;
      for (const BufferSpec& b : buffers_of(p, precision)) {
        const size_t bytes = size_t(std::max<int64_t>(1, b.count)) * size_t(size_of(b.element));
        plan.buffers.push_back(nullptr);
        SIMRUN_CUDA_CHECK(cudaMalloc(&plan.buffers.back(), bytes));
        void* ptr = plan.buffers.back();
        if (b.fill == Fill::none) {
          SIMRUN_CUDA_CHECK(cudaMemset(ptr, 0, bytes));
          continue;
        }
        const std::vector<uint8_t> fill =
            pattern(b.element, b.fill, p.width, std::min(bytes, kPatternBytes), rng);
        for (size_t at = 0; at < bytes; at += fill.size())
          SIMRUN_CUDA_CHECK(cudaMemcpy(static_cast<uint8_t*>(ptr) + at, fill.data(),
                                       std::min(fill.size(), bytes - at), cudaMemcpyHostToDevice));
      }
      if (p.kind == KernelKind::gemm)
        plan.gemm = std::make_unique<LtGemm>(m_lt, p.m, p.n, p.k, p.batch,
                                             gemm_precision_for(precision, p.m, p.n, p.k));
      if (p.kind == KernelKind::adamw)
        plan.adam = std::make_unique<cuda::AdamWTensors>(std::vector<cuda::AdamWTensor>{
            {plan.at<float>(0), plan.at<float>(1), plan.at<float>(2), plan.at<float>(3), p.rows * p.width}});
    });
    // Every kernel once, before any NCCL kernel runs beside it: CUDA loads a module at its first
    // launch (lazy loading, CUDA 12's default), which may wait for the kernels running on other
    // streams; an NCCL kernel waiting for its peers would then wait forever.
    for (size_t p = 0; p < m_plans.size(); ++p)
      if (m_plans[p]->plan.kind != KernelKind::host) enqueue(first_task[p], nullptr);
    SIMRUN_CUDA_CHECK(cudaDeviceSynchronize());
    m_adam_step = 0;
  } catch (...) {
    release();
    throw;
  }
}

void CudaBackend::release() {
  m_plans.clear();
  if (m_gemm_workspace) cudaFree(m_gemm_workspace);
  if (m_lt) cublasLtDestroy(m_lt);
  m_gemm_workspace = nullptr;
  m_lt = nullptr;
}

CudaBackend::~CudaBackend() { release(); }

void CudaBackend::enqueue(uint32_t index, cudaStream_t stream) {
  SIMRUN_ASSERT(index < m_plan_of.size() && m_plan_of[index] >= 0, "enqueue of a task that is not compute");
  Plan& b = *m_plans[size_t(m_plan_of[index])];
  const KernelPlan& p = b.plan;
  const int64_t rows = p.rows, width = p.width, n = p.rows * p.width;
  void* s = stream;
  switch (p.kind) {
    case KernelKind::gemm:
      b.gemm->run(b.buffers[0], b.buffers[1], b.buffers[2], m_gemm_workspace, stream);
      return;
    case KernelKind::attention_fwd:
      cuda::flash_attention_forward(dims_of(p.attention), b.at(0), b.at(1), b.at(2), b.at(3), b.at<float>(4),
                                    s);
      return;
    case KernelKind::attention_bwd:
      cuda::flash_attention_backward(dims_of(p.attention), b.at(0), b.at(1), b.at(2), b.at(3), b.at(4),
                                     b.at<float>(5), b.at(6), b.at(7), b.at(8), b.at<float>(9), s);
      return;
    case KernelKind::rmsnorm_fwd:
      cuda::residual_rmsnorm_forward(b.at(0), b.at(1), b.at(2), rows, width, kNormEps, b.at(3), b.at(4),
                                     b.at<float>(5), s);
      return;
    case KernelKind::rmsnorm_bwd:
      cuda::residual_rmsnorm_backward(b.at(0), b.at(1), b.at(2), b.at(3), b.at<float>(4), rows, width,
                                      b.at(5), b.at<float>(6), b.at<float>(7), s);
      return;
    case KernelKind::layernorm_fwd:
      cuda::residual_layernorm_forward(b.at(0), b.at(1), b.at(2), b.at(3), rows, width, kNormEps, b.at(4),
                                       b.at(5), b.at<float>(6), b.at<float>(7), s);
      return;
    case KernelKind::layernorm_bwd:
      cuda::residual_layernorm_backward(b.at(0), b.at(1), b.at(2), b.at(3), b.at<float>(4), b.at<float>(5),
                                        rows, width, b.at(6), b.at<float>(7), b.at<float>(8), b.at<float>(9),
                                        s);
      return;
    case KernelKind::swiglu_fwd:
      cuda::swiglu_forward(b.at(0), b.at(1), n, b.at(2), s);
      return;
    case KernelKind::swiglu_bwd:
      cuda::swiglu_backward(b.at(0), b.at(1), b.at(2), n, b.at(3), b.at(4), s);
      return;
    case KernelKind::gelu_fwd:
      cuda::bias_gelu_forward(b.at(0), b.at(1), rows, width, b.at(2), s);
      return;
    case KernelKind::gelu_bwd:
      cuda::bias_gelu_backward(b.at(0), b.at(1), b.at(2), rows, width, b.at(3), b.at<float>(4),
                               b.at<float>(5), s);
      return;
    case KernelKind::cross_entropy_fwd:
      cuda::cross_entropy_forward(b.at(0), b.at<int32_t>(1), rows, width, b.at<float>(2), s);
      return;
    case KernelKind::cross_entropy_bwd:
      cuda::cross_entropy_backward(b.at<float>(0), b.at(1), b.at<int32_t>(2), rows, width, b.at(3), s);
      return;
    case KernelKind::adamw: {
      const kernels::ref::AdamW opt;
      b.adam->step(opt.lr, opt.beta1, opt.beta2, opt.eps, opt.weight_decay, ++m_adam_step, s);
      return;
    }
    case KernelKind::stream:
      cuda::stream_update(b.at(0), n, b.at(1), s);
      return;
    case KernelKind::host:
      SIMRUN_CUDA_CHECK(cudaLaunchHostFunc(stream, sleep_on_host, &b.plan.host_s));
      return;
  }
}

}  // namespace simrun::exec
