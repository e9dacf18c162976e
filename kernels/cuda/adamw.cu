// A multi-tensor AdamW step (cuda.hpp): the tensors' pointers and sizes go to the device in one
// table; block b walks chunk b of the concatenated tensors, so many small tensors take one launch
// (as apex / Transformer Engine's multi_tensor_apply). Math as ref::adamw_step (torch.optim.AdamW):
// p -= lr·wd·p; m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²; p -= lr·m̂/(sqrt(v̂)+eps). Test:
// tests/kernels/test_cuda_kernels.cpp. Throughput: not measured yet (no device lent). AdamWTensors
// uploads the tables once, for a step runner that steps the same tensors every step without a sync.
#include <cmath>
#include <vector>

#include "check.cuh"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 4096;  // elements a block walks

struct Coefficients {
  float lr, beta1, beta2, eps, decay, correction1, correction2;
};

__global__ void adamw_kernel(const AdamWTensor* tensors, const int64_t* chunk_tensor,
                             const int64_t* chunk_start, Coefficients c) {
  const AdamWTensor t = tensors[chunk_tensor[blockIdx.x]];
  const int64_t begin = chunk_start[blockIdx.x], end = min(begin + kChunk, t.n);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float p = t.params[i];
    const float g = t.grads[i];
    p -= c.lr * c.decay * p;
    const float m = c.beta1 * t.m[i] + (1 - c.beta1) * g;
    const float v = c.beta2 * t.v[i] + (1 - c.beta2) * g * g;
    t.m[i] = m;
    t.v[i] = v;
    t.params[i] = p - c.lr * (m / c.correction1) / (sqrtf(v / c.correction2) + c.eps);
  }
}

}  // namespace

AdamWTensors::AdamWTensors(const std::vector<AdamWTensor>& tensors) {
  std::vector<int64_t> chunk_tensor, chunk_start;
  for (size_t t = 0; t < tensors.size(); ++t)
    for (int64_t s = 0; s < tensors[t].n; s += kChunk) {
      chunk_tensor.push_back(int64_t(t));
      chunk_start.push_back(s);
    }
  m_chunks = int64_t(chunk_tensor.size());
  if (m_chunks == 0) return;
  auto upload = [](void** to, const void* from, size_t bytes) {
    SIMRUN_CUDA_CHECK(cudaMalloc(to, bytes));
    SIMRUN_CUDA_CHECK(cudaMemcpy(*to, from, bytes, cudaMemcpyHostToDevice));
  };
  upload(&m_table, tensors.data(), sizeof(AdamWTensor) * tensors.size());
  upload(&m_chunk_tensor, chunk_tensor.data(), sizeof(int64_t) * chunk_tensor.size());
  upload(&m_chunk_start, chunk_start.data(), sizeof(int64_t) * chunk_start.size());
}

AdamWTensors::~AdamWTensors() {
  cudaFree(m_table);
  cudaFree(m_chunk_tensor);
  cudaFree(m_chunk_start);
}

void AdamWTensors::step(double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step,
                        void* stream) const {
  if (m_chunks == 0) return;
  const Coefficients c{float(lr),
                       float(beta1),
                       float(beta2),
                       float(eps),
                       float(weight_decay),
                       float(1 - std::pow(beta1, double(step))),
                       float(1 - std::pow(beta2, double(step)))};
  adamw_kernel<<<unsigned(m_chunks), kThreads, 0, detail::as_stream(stream)>>>(
      static_cast<const AdamWTensor*>(m_table), static_cast<const int64_t*>(m_chunk_tensor),
      static_cast<const int64_t*>(m_chunk_start), c);
  SIMRUN_CUDA_CHECK(cudaGetLastError());
}

void adamw_step(const std::vector<AdamWTensor>& tensors, double lr, double beta1, double beta2, double eps,
                double weight_decay, int64_t step, void* stream) {
  const AdamWTensors table(tensors);
  table.step(lr, beta1, beta2, eps, weight_decay, step, stream);
  // The tables are freed when this returns: wait for the kernel that reads them.
  SIMRUN_CUDA_CHECK(cudaStreamSynchronize(detail::as_stream(stream)));
}

void adamw_step_on_host(std::vector<float>& params, const std::vector<float>& grads, std::vector<float>& m,
                        std::vector<float>& v, double lr, double beta1, double beta2, double eps,
                        double weight_decay, int64_t step) {
  using detail::DeviceBuffer;
  DeviceBuffer<float> dp(params.data(), params.size()), dg(grads.data(), grads.size()),
      dm(m.data(), m.size()), dv(v.data(), v.size());
  // Two tensors over the one buffer, so that the multi-tensor table is exercised.
  const int64_t half = int64_t(params.size()) / 2;
  std::vector<AdamWTensor> tensors = {
      {dp.ptr, dg.ptr, dm.ptr, dv.ptr, half},
      {dp.ptr + half, dg.ptr + half, dm.ptr + half, dv.ptr + half, int64_t(params.size()) - half}};
  adamw_step(tensors, lr, beta1, beta2, eps, weight_decay, step, nullptr);
  params = dp.to_host();
  m = dm.to_host();
  v = dv.to_host();
}

}  // namespace simrun::kernels::cuda
