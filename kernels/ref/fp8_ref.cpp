// fp8 e4m3's reference (ref.hpp): OCP 8-bit floating point (2023) E4M3, rounding to nearest even
// and saturating to the largest finite value, as cvt.rn.satfinite.e4m3x2.f32 (PTX ISA) and
// Transformer Engine's casts do.
#include <cmath>

#include "simrun/common/error.hpp"
#include "simrun/kernels/ref.hpp"

namespace simrun::kernels::ref {
namespace {

constexpr int kBias = 7;  // E4M3's exponent bias
constexpr int kMinNormalExponent = -6;
constexpr int kMantissaBits = 3;

}  // namespace

uint8_t fp8_e4m3_encode(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  double a = std::min(std::abs(double(x)), double(kFp8E4m3Max));
  // The step at a's exponent (subnormals share the smallest normal's), a rounded to it, ties even.
  const int exponent =
      a > 0 ? std::max(kMinNormalExponent, int(std::floor(std::log2(a)))) : kMinNormalExponent;
  const double step = std::ldexp(1.0, exponent - kMantissaBits);
  a = std::nearbyint(a / step) * step;  // the default rounding mode: to nearest, ties to even
  a = std::min(a, double(kFp8E4m3Max));
  if (a < std::ldexp(1.0, kMinNormalExponent))  // subnormal: 0.mmm · 2^-6
    return uint8_t(sign | int(std::lround(a / std::ldexp(1.0, kMinNormalExponent - kMantissaBits))));
  const int e = int(std::floor(std::log2(a)));
  const int mantissa = int(std::lround((a / std::ldexp(1.0, e) - 1.0) * (1 << kMantissaBits)));
  return uint8_t(sign | ((e + kBias) << kMantissaBits) | mantissa);
}

float fp8_e4m3_decode(uint8_t q) {
  const int exponent = (q >> kMantissaBits) & 0xf, mantissa = q & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::nanf("");
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), kMinNormalExponent - kMantissaBits)
                                        : std::ldexp(1.0f + float(mantissa) / 8.0f, exponent - kBias);
  return (q & 0x80) ? -magnitude : magnitude;
}

void fp8_cast(std::span<const float> x, int64_t block, std::span<uint8_t> q, std::span<float> scales) {
  const int64_t n = int64_t(x.size()), size = block > 0 ? block : std::max<int64_t>(1, n);
  SIMRUN_ASSERT(q.size() == x.size() && int64_t(scales.size()) == (n + size - 1) / size, "fp8 cast shapes");
  for (int64_t b = 0; b * size < n; ++b) {
    const int64_t begin = b * size, end = std::min(n, begin + size);
    float amax = 0;
    for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::abs(x[size_t(i)]));
    const float scale = amax > 0 ? kFp8E4m3Max / amax : 1.0f;
    scales[size_t(b)] = scale;
    for (int64_t i = begin; i < end; ++i) q[size_t(i)] = fp8_e4m3_encode(x[size_t(i)] * scale);
  }
}

}  // namespace simrun::kernels::ref
