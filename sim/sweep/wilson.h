// The Wilson score interval for a binomial proportion: k successes in n trials, z standard normal
// quantile (1.96 for 95%):
//   centre = (p + z^2 / 2n) / (1 + z^2 / n),  half = z sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2
//   / n)
// Unlike p +- z sqrt(p(1-p)/n) it stays inside [0, 1] and is not degenerate at k = 0 or k = n.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace metronome {

struct Interval {
  double lo = 0, hi = 1;
};

inline Interval wilson_interval(int64_t k, int64_t n, double z = 1.959963984540054) {
  if (n <= 0) return {0.0, 1.0};
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double z2 = z * z;
  const double denom = 1.0 + z2 / nn;
  const double centre = (p + z2 / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / denom;
  // At k = 0 (k = n) the bound is exactly 0 (1): centre - half (centre + half) there is zero (one)
  // up to rounding, which wrote 5.6e-17 for no crash in 3 runs.
  return {k == 0 ? 0.0 : std::max(0.0, centre - half), k == n ? 1.0 : std::min(1.0, centre + half)};
}

}  // namespace metronome
