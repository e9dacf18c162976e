// Units in types: simulated time is an integer count of nanoseconds (TimeNs), so event order
// is exact and runs are deterministic. Sizes are bytes, rates bytes_per_s, work flops.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace simrun {

// Simulated time in integer nanoseconds (ns-3 style). 2^63 ns is about 292 years.
struct TimeNs {
  int64_t ns = 0;

  constexpr TimeNs() = default;
  constexpr explicit TimeNs(int64_t v) : ns(v) {}

  static constexpr TimeNs zero() { return TimeNs{0}; }
  static constexpr TimeNs max() { return TimeNs{std::numeric_limits<int64_t>::max()}; }
  // Rounds up so that a non-zero duration never becomes zero time.
  static TimeNs from_seconds(double s) { return TimeNs{static_cast<int64_t>(std::ceil(s * 1e9))}; }

  constexpr double seconds() const { return static_cast<double>(ns) * 1e-9; }
  constexpr double micros() const { return static_cast<double>(ns) * 1e-3; }

  constexpr auto operator<=>(const TimeNs&) const = default;
  constexpr TimeNs operator+(TimeNs o) const { return TimeNs{ns + o.ns}; }
  constexpr TimeNs operator-(TimeNs o) const { return TimeNs{ns - o.ns}; }
  constexpr TimeNs& operator+=(TimeNs o) {
    ns += o.ns;
    return *this;
  }
};

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kSecondsPerHour = 3600.0;
inline constexpr double kSecondsPerDay = 86400.0;

}  // namespace simrun
