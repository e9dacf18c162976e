// SwiGLU's reference (ref.hpp).
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/kernels/ref.hpp"

namespace simrun::kernels::ref {
namespace {

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

}  // namespace

template <class T>
void swiglu_forward(std::span<const T> gate, std::span<const T> up, std::span<T> out) {
  SIMRUN_ASSERT(gate.size() == up.size() && out.size() == up.size(), "swiglu shapes");
  for (size_t i = 0; i < out.size(); ++i) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

// silu'(g) = σ(g)·(1 + g·(1 − σ(g))).
template <class T>
void swiglu_backward(std::span<const T> dout, std::span<const T> gate, std::span<const T> up,
                     std::span<T> dgate, std::span<T> dup) {
  SIMRUN_ASSERT(dout.size() == gate.size() && dgate.size() == gate.size() && dup.size() == gate.size(),
                "swiglu shapes");
  for (size_t i = 0; i < dout.size(); ++i) {
    const T s = sigmoid(gate[i]);
    dup[i] = dout[i] * gate[i] * s;
    dgate[i] = dout[i] * up[i] * s * (T(1) + gate[i] * (T(1) - s));
  }
}

template void swiglu_forward<float>(std::span<const float>, std::span<const float>, std::span<float>);
template void swiglu_forward<double>(std::span<const double>, std::span<const double>, std::span<double>);
template void swiglu_backward<float>(std::span<const float>, std::span<const float>, std::span<const float>,
                                     std::span<float>, std::span<float>);
template void swiglu_backward<double>(std::span<const double>, std::span<const double>,
                                      std::span<const double>, std::span<double>, std::span<double>);

}  // namespace simrun::kernels::ref
