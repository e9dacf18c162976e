// What the CUDA kernels' tests share (tests/kernels/test_cuda_*.cpp): the skip without a device,
// fresh random bf16 inputs, widening, the plain same-precision result, and the error bound of
// their headers: ‖out − ref‖ / ‖ref‖ below a limit and at most twice the plain implementation's.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "simrun/kernels/bf16.hpp"
#include "simrun/kernels/cuda.hpp"

namespace simrun::kernels::test {

inline bool no_device() {
  if (cuda::device_count() > 0) return false;
  WARN("no CUDA device: the GPU kernel tests are skipped (they run on a lent GPU, exec/gpu_check.sh)");
  return true;
}

inline std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = to_bf16(normal(rng));
  return v;
}

inline std::vector<double> widen(const std::vector<uint16_t>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_bf16(v[i]);
  return out;
}

inline std::vector<float> floats(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_bf16(v[i]);
  return out;
}

// A plain bf16 implementation's result: the float computation's value rounded to bf16.
inline std::vector<double> bf16_rounded(const std::vector<float>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_bf16(to_bf16(v[i]));
  return out;
}

template <class A>
double relative_error(const A& out, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

// The bound: below `limit`, and at most twice the plain implementation's.
inline void check_error(double kernel, double plain, double limit) {
  INFO("kernel " << kernel << ", plain same-precision " << plain);
  CHECK(kernel < limit);
  CHECK(kernel <= 2 * plain + 1e-7);
}

}  // namespace simrun::kernels::test
