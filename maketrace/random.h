// Random numbers for maketrace (section 7.1.1): our own generator and our own
// Gaussian, so that `--seed` gives the same trace bytes with any compiler or
// standard library (std::normal_distribution and friends are not specified
// bit-for-bit and differ between libstdc++ and libc++ versions).
#ifndef BBPROF_MAKETRACE_RANDOM_H_
#define BBPROF_MAKETRACE_RANDOM_H_

#include <cmath>
#include <cstdint>

namespace bbprof::maketrace {

// SplitMix64 (Steele, Lea, Flood 2014): used to expand one 64-bit seed into
// the 256-bit state of xoshiro256**, as its authors recommend.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// xoshiro256** 1.0 (Blackman and Vigna): fast, 256-bit state, passes BigCrush.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t sm = seed;
    for (uint64_t& w : s_) w = SplitMix64(sm);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; the tiny bias
  // for huge n does not matter for picking among a few node names).
  uint32_t Below(uint32_t n) {
    return static_cast<uint32_t>(((Next() >> 32) * static_cast<uint64_t>(n)) >>
                                 32);
  }

  // Standard normal by Marsaglia's polar method. Only +,*,/, sqrt (exact in
  // IEEE 754) and log are used, so the draws are reproducible across
  // platforms whose log is correctly rounded or nearly so.
  double Gaussian() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * Uniform() - 1.0;
      v = 2.0 * Uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double m = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * m;
    have_spare_ = true;
    return u * m;
  }

  // Exponential with the given mean (inter-arrival times of Poisson streams).
  double Exponential(double mean) { return -mean * std::log1p(-Uniform()); }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0;
  bool have_spare_ = false;
};

}  // namespace bbprof::maketrace

#endif  // BBPROF_MAKETRACE_RANDOM_H_
