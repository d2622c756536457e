// Deterministic random streams. Each stream (arrivals, durations, jitter, ...) has its own
// generator derived from the scenario seed and the stream's name, so adding a stream never shifts
// the others. The distributions are written here rather than taken from <random>, whose algorithms
// differ between standard libraries: the same seed must give the same run everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace metronome {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline constexpr uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

// xoshiro256** (Blackman and Vigna).
class Rng {
 public:
  Rng(uint64_t seed, std::string_view stream) {
    uint64_t x = seed ^ fnv1a(stream);
    for (auto& w : s_) w = splitmix64(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe to take the logarithm of.
  double uniform_open() { return 1.0 - uniform(); }
  double exponential(double mean) { return -mean * std::log(uniform_open()); }
  // Standard normal by Box-Muller; one draw per call keeps the stream position simple.
  double normal() {
    return std::sqrt(-2.0 * std::log(uniform_open())) * std::cos(6.283185307179586 * uniform());
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace metronome
