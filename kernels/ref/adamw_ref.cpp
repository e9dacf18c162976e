// AdamW's reference (ref.hpp), as torch.optim.AdamW's single-tensor step.
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/kernels/ref.hpp"

namespace simrun::kernels::ref {

template <class T>
void adamw_step(const AdamW& opt, int64_t step, std::span<T> params, std::span<const T> grads, std::span<T> m,
                std::span<T> v) {
  SIMRUN_ASSERT(step >= 1, "AdamW steps count from 1");
  SIMRUN_ASSERT(grads.size() == params.size() && m.size() == params.size() && v.size() == params.size(),
                "AdamW shapes");
  const double bias1 = 1 - std::pow(opt.beta1, double(step)), bias2 = 1 - std::pow(opt.beta2, double(step));
  for (size_t i = 0; i < params.size(); ++i) {
    const T g = grads[i];
    params[i] -= T(opt.lr * opt.weight_decay) * params[i];
    m[i] = T(opt.beta1) * m[i] + T(1 - opt.beta1) * g;
    v[i] = T(opt.beta2) * v[i] + T(1 - opt.beta2) * g * g;
    const T m_hat = m[i] / T(bias1), v_hat = v[i] / T(bias2);
    params[i] -= T(opt.lr) * m_hat / (std::sqrt(v_hat) + T(opt.eps));
  }
}

template void adamw_step<float>(const AdamW&, int64_t, std::span<float>, std::span<const float>,
                                std::span<float>, std::span<float>);
template void adamw_step<double>(const AdamW&, int64_t, std::span<double>, std::span<const double>,
                                 std::span<double>, std::span<double>);

}  // namespace simrun::kernels::ref
