// Small, fast, portable random numbers for workload generation. The standard library's
// distributions are implementation-defined, so the benchmark draws through these instead:
// the same seed gives the same operations on every platform.
#pragma once

#include <cstdint>

namespace dptree::bench {

__extension__ using Uint128 = unsigned __int128;  // __extension__: GCC/Clang type, -Wpedantic

// SplitMix64 step: a bijective 64-bit mixer (also used to scatter key ids over the key space).
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The inverse of mix64: undoes each xor-shift and multiplication in turn.
inline std::uint64_t unmix64(std::uint64_t x) {
  x ^= x >> 31 ^ x >> 62;
  x *= 0x319642b2d24d8ec3ULL;  // the inverse of 0x94d049bb133111eb modulo 2^64
  x ^= x >> 27 ^ x >> 54;
  x *= 0x96de1b173f119089ULL;  // the inverse of 0xbf58476d1ce4e5b9
  x ^= x >> 30 ^ x >> 60;
  return x - 0x9e3779b97f4a7c15ULL;
}

// xoshiro256** (Blackman & Vigna), seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      w = mix64(seed);
    }
  }
  std::uint64_t next() {
    std::uint64_t s0 = s_[0], s1 = s_[1], s2 = s_[2], s3 = s_[3];
    // Word by word: a vectorised load spanning two words stored apart by the last call
    // cannot be forwarded from the store buffer and waits for it to drain, behind the
    // fence of a persistent index's last persist (a cost of the benchmark, not the index).
    asm("" : "+r"(s0), "+r"(s1), "+r"(s2), "+r"(s3));
    const std::uint64_t result = rotl(s1 * 5, 7) * 9;
    const std::uint64_t t = s1 << 17;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 45);
    asm("" : "+r"(s0), "+r"(s1), "+r"(s2), "+r"(s3));
    s_[0] = s0;
    s_[1] = s1;
    s_[2] = s2;
    s_[3] = s3;
    return result;
  }
  // Uniform in [0, n) (Lemire's multiply-shift; the tiny bias is irrelevant here). n > 0.
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<Uint128>(next()) * n) >> 64);
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// The seed of stream `stream` (a thread, the preload) derived from the user's seed.
inline std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  return mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ULL));
}

}  // namespace dptree::bench
