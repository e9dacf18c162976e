// A small portable random generator (splitmix64, Steele et al. 2014) for the benchmarks' seeded
// samples, so that a seed names the same sample on every machine and compiler.
#pragma once

#include <cstdint>
#include <vector>

namespace simrun::bench {

struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[next() % v.size()];
  }
};

}  // namespace simrun::bench
