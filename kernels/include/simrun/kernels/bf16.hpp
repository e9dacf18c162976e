// bfloat16 on the host (the CUDA kernels' storage type; Kalamkar et al. 2019, arXiv:1905.12322):
// the upper 16 bits of an IEEE fp32, rounded to nearest even. For the kernels' tests and the
// cuda backend's buffers, without CUDA headers.
#pragma once

#include <cstdint>
#include <cstring>

namespace simrun::kernels {

inline uint16_t to_bf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return uint16_t((bits >> 16) | 0x40);                   // NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);  // to nearest, ties to even
  return uint16_t((bits + rounding) >> 16);
}

inline float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace simrun::kernels
