// The random ops' generator: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC'11; the generator of PyTorch's CUDA backend), used as a pure function.
//
// Element i of a random op's output is computed from one Philox block whose key is the seed
// (--seed) and whose counter is (i mod 2^32, i / 2^32, stream mod 2^32, stream / 2^32), where
// the stream is an FNV-1a hash of the node's name. The reference kernels
// (runtime/kernels/random.cpp) and the inductor lowerings (passes/lower/random.cpp, the same rounds
// written as integer loop-IR operations) compute the same function, so eager, inductor CPU and the
// CUDA kernels draw the same numbers for the same seed, graph and node. docs/random.md gives the
// conversions to uniform, normal, integer and Bernoulli samples; they are not PyTorch's numbers,
// only PyTorch's distributions.
#pragma once

#include "frontend/dtype.h"

#include <array>
#include <cstdint>
#include <string_view>

namespace fxc::philox {

inline constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u; // round multipliers
inline constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u; // key schedule (Weyl) constants
inline constexpr int kRounds = 10;

using Block = std::array<uint32_t, 4>;

/// One Philox4x32 round with key (k0, k1).
inline Block round(const Block& c, uint32_t k0, uint32_t k1) {
  uint64_t p0 = uint64_t(kM0) * c[0], p1 = uint64_t(kM1) * c[2];
  return {uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k1,
          uint32_t(p0)};
}

/// Philox4x32-10 of counter `c` under the key (k0, k1).
inline Block philox4x32_10(Block c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < kRounds; ++r) {
    c = round(c, k0, k1);
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

/// The block of element `index` of the stream `stream` under `seed`.
inline Block draw(uint64_t seed, uint64_t stream, uint64_t index) {
  return philox4x32_10(
      {uint32_t(index), uint32_t(index >> 32), uint32_t(stream), uint32_t(stream >> 32)},
      uint32_t(seed), uint32_t(seed >> 32));
}

/// The stream of a random node: FNV-1a (64-bit) of its name.
uint64_t node_stream(std::string_view node_name);

/// The seed the random ops use (the driver's --seed; 0 until set).
uint64_t generator_seed();
void set_generator_seed(uint64_t seed);

/// Random bits of a uniform sample in [0, 1) of type t: 53 (f64), 24 (f32), 11 (f16), 8 (bf16),
/// so that `bits * 2^-bits` is exact in t and never rounds up to 1.
int uniform_bits(DType t);
/// The uniform sample in [0, 1) of type t from block b: (w0 >> (32 - bits)) * 2^-bits, or for f64
/// (w0 * 2^21 + (w1 >> 11)) * 2^-53.
double uniform(const Block& b, DType t);
/// A standard normal sample (Box-Muller, computed in double, then rounded to t by the caller):
/// sqrt(-2 log u1) * cos(2 pi u2), u1 = (w0 + 1) * 2^-32 in (0, 1], u2 = w1 * 2^-32.
double normal(const Block& b);
/// 2 pi as the lowering writes it.
inline constexpr double kTwoPi = 6.283185307179586;
/// A non-negative 63-bit integer from block b:
/// ((w2 << 32) | w3) with the top bit cleared.
inline int64_t bits63(const Block& b) {
  return int64_t(((uint64_t(b[2]) << 32) | b[3]) & 0x7FFFFFFFFFFFFFFFull);
}

} // namespace fxc::philox
