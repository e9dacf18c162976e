// RMSNorm's and LayerNorm's references (ref.hpp).
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/kernels/ref.hpp"

namespace simrun::kernels::ref {

template <class T>
void rmsnorm_forward(std::span<const T> x, std::span<const T> weight, int64_t rows, int64_t h, T eps,
                     std::span<T> y, std::span<T> rstd) {
  SIMRUN_ASSERT(int64_t(x.size()) == rows * h && int64_t(y.size()) == rows * h &&
                    int64_t(weight.size()) == h && int64_t(rstd.size()) == rows,
                "rmsnorm shapes");
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x.data() + r * h;
    T sum_sq = 0;
    for (int64_t i = 0; i < h; ++i) sum_sq += xr[i] * xr[i];
    const T s = T(1) / std::sqrt(sum_sq / T(h) + eps);
    rstd[size_t(r)] = s;
    for (int64_t i = 0; i < h; ++i) y[size_t(r * h + i)] = xr[i] * s * weight[size_t(i)];
  }
}

// With x̂ = x·s: dx = s·(dy∘w − x̂·mean(dy∘w∘x̂)), dw += dy∘x̂.
template <class T>
void rmsnorm_backward(std::span<const T> dy, std::span<const T> x, std::span<const T> weight,
                      std::span<const T> rstd, int64_t rows, int64_t h, std::span<T> dx,
                      std::span<T> dweight) {
  SIMRUN_ASSERT(
      int64_t(dy.size()) == rows * h && int64_t(dx.size()) == rows * h && int64_t(dweight.size()) == h,
      "rmsnorm shapes");
  for (int64_t r = 0; r < rows; ++r) {
    const T s = rstd[size_t(r)];
    const T* xr = x.data() + r * h;
    const T* dyr = dy.data() + r * h;
    T mean = 0;  // mean(dy∘w∘x̂)
    for (int64_t i = 0; i < h; ++i) mean += dyr[i] * weight[size_t(i)] * xr[i] * s;
    mean /= T(h);
    for (int64_t i = 0; i < h; ++i) {
      const T xhat = xr[i] * s;
      dx[size_t(r * h + i)] = s * (dyr[i] * weight[size_t(i)] - xhat * mean);
      dweight[size_t(i)] += dyr[i] * xhat;
    }
  }
}

template <class T>
void layernorm_forward(std::span<const T> x, std::span<const T> weight, std::span<const T> bias, int64_t rows,
                       int64_t h, T eps, std::span<T> y, std::span<T> mean, std::span<T> rstd) {
  SIMRUN_ASSERT(int64_t(x.size()) == rows * h && int64_t(y.size()) == rows * h &&
                    int64_t(weight.size()) == h && int64_t(bias.size()) == h &&
                    int64_t(mean.size()) == rows && int64_t(rstd.size()) == rows,
                "layernorm shapes");
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x.data() + r * h;
    T mu = 0;
    for (int64_t i = 0; i < h; ++i) mu += xr[i];
    mu /= T(h);
    T var = 0;
    for (int64_t i = 0; i < h; ++i) var += (xr[i] - mu) * (xr[i] - mu);
    const T s = T(1) / std::sqrt(var / T(h) + eps);
    mean[size_t(r)] = mu;
    rstd[size_t(r)] = s;
    for (int64_t i = 0; i < h; ++i)
      y[size_t(r * h + i)] = (xr[i] - mu) * s * weight[size_t(i)] + bias[size_t(i)];
  }
}

// With x̂ = (x − mean)·s and g = dy∘w: dx = s·(g − mean(g) − x̂·mean(g∘x̂)); dw += dy∘x̂, db += dy.
template <class T>
void layernorm_backward(std::span<const T> dy, std::span<const T> x, std::span<const T> weight,
                        std::span<const T> mean, std::span<const T> rstd, int64_t rows, int64_t h,
                        std::span<T> dx, std::span<T> dweight, std::span<T> dbias) {
  SIMRUN_ASSERT(int64_t(dy.size()) == rows * h && int64_t(dx.size()) == rows * h &&
                    int64_t(dweight.size()) == h && int64_t(dbias.size()) == h,
                "layernorm shapes");
  for (int64_t r = 0; r < rows; ++r) {
    const T s = rstd[size_t(r)], mu = mean[size_t(r)];
    const T* xr = x.data() + r * h;
    const T* dyr = dy.data() + r * h;
    T mean_g = 0, mean_gx = 0;
    for (int64_t i = 0; i < h; ++i) {
      const T g = dyr[i] * weight[size_t(i)];
      mean_g += g;
      mean_gx += g * (xr[i] - mu) * s;
    }
    mean_g /= T(h);
    mean_gx /= T(h);
    for (int64_t i = 0; i < h; ++i) {
      const T xhat = (xr[i] - mu) * s;
      dx[size_t(r * h + i)] = s * (dyr[i] * weight[size_t(i)] - mean_g - xhat * mean_gx);
      dweight[size_t(i)] += dyr[i] * xhat;
      dbias[size_t(i)] += dyr[i];
    }
  }
}

template void layernorm_forward<float>(std::span<const float>, std::span<const float>, std::span<const float>,
                                       int64_t, int64_t, float, std::span<float>, std::span<float>,
                                       std::span<float>);
template void layernorm_forward<double>(std::span<const double>, std::span<const double>,
                                        std::span<const double>, int64_t, int64_t, double, std::span<double>,
                                        std::span<double>, std::span<double>);
template void layernorm_backward<float>(std::span<const float>, std::span<const float>,
                                        std::span<const float>, std::span<const float>,
                                        std::span<const float>, int64_t, int64_t, std::span<float>,
                                        std::span<float>, std::span<float>);
template void layernorm_backward<double>(std::span<const double>, std::span<const double>,
                                         std::span<const double>, std::span<const double>,
                                         std::span<const double>, int64_t, int64_t, std::span<double>,
                                         std::span<double>, std::span<double>);
template void rmsnorm_forward<float>(std::span<const float>, std::span<const float>, int64_t, int64_t, float,
                                     std::span<float>, std::span<float>);
template void rmsnorm_forward<double>(std::span<const double>, std::span<const double>, int64_t, int64_t,
                                      double, std::span<double>, std::span<double>);
template void rmsnorm_backward<float>(std::span<const float>, std::span<const float>, std::span<const float>,
                                      std::span<const float>, int64_t, int64_t, std::span<float>,
                                      std::span<float>);
template void rmsnorm_backward<double>(std::span<const double>, std::span<const double>,
                                       std::span<const double>, std::span<const double>, int64_t, int64_t,
                                       std::span<double>, std::span<double>);

}  // namespace simrun::kernels::ref
