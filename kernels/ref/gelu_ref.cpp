// GELU's reference (ref.hpp), the tanh approximation.
#include <cmath>
#include <numbers>

#include "simrun/common/error.hpp"
#include "simrun/kernels/ref.hpp"

namespace simrun::kernels::ref {
namespace {

constexpr double kCubic = 0.044715;

template <class T>
T inner(T x) {  // sqrt(2/π)·(x + 0.044715·x³)
  return T(std::sqrt(2.0 / std::numbers::pi)) * (x + T(kCubic) * x * x * x);
}

}  // namespace

template <class T>
void gelu_forward(std::span<const T> x, std::span<T> out) {
  SIMRUN_ASSERT(out.size() == x.size(), "gelu shapes");
  for (size_t i = 0; i < x.size(); ++i) out[i] = T(0.5) * x[i] * (T(1) + std::tanh(inner(x[i])));
}

// d/dx = 0.5·(1 + t) + 0.5·x·(1 − t²)·sqrt(2/π)·(1 + 3·0.044715·x²), t = tanh(inner(x)).
template <class T>
void gelu_backward(std::span<const T> dout, std::span<const T> x, std::span<T> dx) {
  SIMRUN_ASSERT(dout.size() == x.size() && dx.size() == x.size(), "gelu shapes");
  for (size_t i = 0; i < x.size(); ++i) {
    const T t = std::tanh(inner(x[i]));
    const T d_inner = T(std::sqrt(2.0 / std::numbers::pi)) * (T(1) + T(3 * kCubic) * x[i] * x[i]);
    dx[i] = dout[i] * (T(0.5) * (T(1) + t) + T(0.5) * x[i] * (T(1) - t * t) * d_inner);
  }
}

template void gelu_forward<float>(std::span<const float>, std::span<float>);
template void gelu_forward<double>(std::span<const double>, std::span<double>);
template void gelu_backward<float>(std::span<const float>, std::span<const float>, std::span<float>);
template void gelu_backward<double>(std::span<const double>, std::span<const double>, std::span<double>);

}  // namespace simrun::kernels::ref
