// The pseudo-random generator of weft-load: xoshiro256** seeded through splitmix64.
//
// Why not std::mt19937_64: weft-load seeds a fresh generator for every session (so session i
// asks for the same files whatever the thread count or the order sessions run in), and
// mt19937_64 carries 2.5 KB of state whose seeding costs hundreds of steps. xoshiro256**
// (Blackman and Vigna, 2018) keeps 32 bytes, seeds in four splitmix64 steps, passes BigCrush,
// and runs about twice as fast. Neither generator is fit for secrets; none are needed here.
//
// Rng satisfies std::uniform_random_bit_generator, so std:: distributions accept it, but the
// code in weft::load uses its own helpers below so that sequences do not depend on the
// standard library's distribution algorithms (which differ between implementations).
// A Rng is a plain value: copy it to fork a sequence; it is not shared between threads.
#pragma once

#include <cstdint>
#include <limits>

namespace weft::load {

/// Returns the next output of splitmix64 and advances `state` (Steele, Lea, Flood 2014).
constexpr std::uint64_t splitmix64(std::uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  using result_type = std::uint64_t;

  /// Seeds the generator from one 64-bit seed; equal seeds give equal sequences.
  explicit constexpr Rng(std::uint64_t seed = 0) {
    // splitmix64 spreads any seed (0 included) into a state that is never all zero.
    for (auto& word : s_) word = splitmix64(seed);
  }

  /// Seeds a generator for item `index` of stream `stream` under `seed`, so that different
  /// uses of one user seed (schedule, Zipf draws of session i, ...) get unrelated sequences.
  static constexpr Rng for_stream(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    std::uint64_t mix = seed;
    std::uint64_t a = splitmix64(mix);
    mix ^= stream * 0xd1b54a32d192ed03ULL;
    std::uint64_t b = splitmix64(mix);
    mix ^= index * 0xaef17502108ef2d9ULL;
    return Rng{a ^ b ^ splitmix64(mix)};
  }

  /// Builds a generator from an explicit state (tests use the reference vectors); the state
  /// must not be all zero.
  static constexpr Rng from_state(std::uint64_t s0, std::uint64_t s1, std::uint64_t s2,
                                  std::uint64_t s3) {
    Rng r;
    r.s_[0] = s0;
    r.s_[1] = s1;
    r.s_[2] = s2;
    r.s_[3] = s3;
    return r;
  }

  /// Returns the smallest output, 0 (std::uniform_random_bit_generator needs it).
  static constexpr result_type min() { return 0; }
  /// Returns the largest output, 2^64 - 1.
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }

  /// Returns the next 64 random bits.
  constexpr result_type operator()() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Returns a double uniform in [0, 1) with 53 random bits.
  constexpr double uniform01() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

  /// Returns an integer uniform in [0, n) for n > 0, without modulo bias (Lemire 2019).
  std::uint64_t below(std::uint64_t n) {
    __extension__ using u128 = unsigned __int128;  // GCC/Clang; -Wpedantic needs the marker
    u128 m = static_cast<u128>((*this)()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<u128>((*this)()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  friend constexpr bool operator==(const Rng&, const Rng&) = default;

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  std::uint64_t s_[4]{};
};

}  // namespace weft::load
