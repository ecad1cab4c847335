// A small deterministic PRNG (splitmix64) for init rules and seeded random inputs.
//
// Every result depends only on the seed and the position in the stream: the integer stream is
// splitmix64, uniform doubles take its top 53 bits, and normal samples use the Marsaglia polar
// method with a logarithm computed here from +, -, *, / and sqrt alone (all correctly rounded
// in IEEE 754, with floating-point contraction disabled in random.cpp), so the same seed gives
// bit-identical tensors on every platform and compiler, independent of the C library's libm.
#pragma once

#include "frontend/dtype.h"

#include <cstddef>
#include <cstdint>

namespace fxc {

class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  /// The next splitmix64 output.
  uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Uniform integer in [low, high); asserts low < high.
  int64_t uniform_int(int64_t low, int64_t high);
  /// Standard normal N(0, 1).
  double normal();

private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

/// Natural logarithm of a positive finite x, computed without libm (see the file comment).
double portable_log(double x);

/// Stores `v` as one element of type `t` at `dst` (round to nearest even for f16/bf16,
/// truncation toward zero for integers, v != 0 for bool).
void store_element(DType t, double v, std::byte* dst);

/// Fills n elements at dst: floating types with N(0, 1), integer types uniformly in
/// [int_low, int_high), bools with fair coin flips. The driver's seeded random inputs.
void fill_random(DType t, size_t n, uint64_t seed, std::byte* dst, int64_t int_low = 0,
                 int64_t int_high = 2);

/// Fills n elements with uniform samples in [low, high) (converted to `t`).
void fill_uniform(DType t, size_t n, uint64_t seed, double low, double high, std::byte* dst);
/// Fills n elements with normal samples of the given mean and standard deviation.
void fill_normal(DType t, size_t n, uint64_t seed, double mean, double std, std::byte* dst);
/// Fills n elements with `value`.
void fill_value(DType t, size_t n, double value, std::byte* dst);
/// Fills n elements with start, start + step, start + 2 * step, ...
void fill_arange(DType t, size_t n, double start, double step, std::byte* dst);

} // namespace fxc
