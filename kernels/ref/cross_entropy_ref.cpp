// Softmax cross-entropy's reference (ref.hpp).
#include <algorithm>
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/kernels/ref.hpp"

namespace simrun::kernels::ref {
namespace {

// log Σ exp(x), shifted by the maximum so that no term overflows.
template <class T>
T log_sum_exp(const T* x, int64_t n) {
  const T top = *std::max_element(x, x + n);
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - top);
  return top + std::log(sum);
}

void check_targets(std::span<const int32_t> targets, int64_t rows, int64_t vocab) {
  SIMRUN_ASSERT(int64_t(targets.size()) == rows, "a target per row");
  for (const int32_t t : targets) SIMRUN_ASSERT(t >= 0 && t < vocab, "a target inside the vocabulary");
}

}  // namespace

template <class T>
void cross_entropy_forward(std::span<const T> logits, std::span<const int32_t> targets, int64_t rows,
                           int64_t vocab, std::span<T> losses) {
  SIMRUN_ASSERT(int64_t(logits.size()) == rows * vocab && int64_t(losses.size()) == rows,
                "cross-entropy shapes");
  check_targets(targets, rows, vocab);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = logits.data() + r * vocab;
    losses[size_t(r)] = log_sum_exp(row, vocab) - row[targets[size_t(r)]];
  }
}

template <class T>
void cross_entropy_backward(std::span<const T> dlosses, std::span<const T> logits,
                            std::span<const int32_t> targets, int64_t rows, int64_t vocab,
                            std::span<T> dlogits) {
  SIMRUN_ASSERT(int64_t(logits.size()) == rows * vocab && int64_t(dlogits.size()) == rows * vocab &&
                    int64_t(dlosses.size()) == rows,
                "cross-entropy shapes");
  check_targets(targets, rows, vocab);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = logits.data() + r * vocab;
    const T lse = log_sum_exp(row, vocab);
    for (int64_t i = 0; i < vocab; ++i)
      dlogits[size_t(r * vocab + i)] =
          (std::exp(row[i] - lse) - (i == targets[size_t(r)] ? T(1) : T(0))) * dlosses[size_t(r)];
  }
}

template void cross_entropy_forward<float>(std::span<const float>, std::span<const int32_t>, int64_t, int64_t,
                                           std::span<float>);
template void cross_entropy_forward<double>(std::span<const double>, std::span<const int32_t>, int64_t,
                                            int64_t, std::span<double>);
template void cross_entropy_backward<float>(std::span<const float>, std::span<const float>,
                                            std::span<const int32_t>, int64_t, int64_t, std::span<float>);
template void cross_entropy_backward<double>(std::span<const double>, std::span<const double>,
                                             std::span<const int32_t>, int64_t, int64_t, std::span<double>);

}  // namespace simrun::kernels::ref
