// A small deterministic PRNG (splitmix64) for init rules and seeded random inputs.
#include "frontend/random.h"

// Contraction (a*b+c -> fma) would change results between targets; keep every operation
// separately rounded so the streams are bit-identical everywhere.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace fxc {

uint64_t Rng::next_u64() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return double(next_u64() >> 11) * 0x1.0p-53;
}

int64_t Rng::uniform_int(int64_t low, int64_t high) {
  assert(low < high && "empty integer range");
  uint64_t range = uint64_t(high) - uint64_t(low);
  uint64_t r = uint64_t((static_cast<unsigned __int128>(next_u64()) * range) >> 64);
  return int64_t(uint64_t(low) + r);
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u, v, s;
  do {
    u = 2.0 * uniform() - 1.0;
    v = 2.0 * uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  double m = std::sqrt(-2.0 * portable_log(s) / s);
  spare_ = v * m;
  has_spare_ = true;
  return u * m;
}

double portable_log(double x) {
  assert(x > 0 && std::isfinite(x) && "portable_log needs a positive finite argument");
  int e = 0;
  double f = std::frexp(x, &e); // exact: x = f * 2^e, f in [0.5, 1)
  if (f < 0.70710678118654752) {
    f = f * 2.0;
    e -= 1;
  }
  // log(f) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), |s| <= 0.1716.
  double s = (f - 1.0) / (f + 1.0);
  double z = s * s;
  double p = 1.0 / 27.0;
  for (int k = 12; k >= 0; --k) p = p * z + 1.0 / double(2 * k + 1);
  return double(e) * 0.69314718055994531 + 2.0 * s * p;
}

namespace {

// Rounds v to a binary float with `ebits` exponent and `mbits` mantissa bits (round to nearest
// even, overflow to infinity); returns its bit pattern.
uint32_t round_to_small_float(double v, int ebits, int mbits) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  const uint32_t sign = uint32_t(b >> 63) << (ebits + mbits);
  const int exp = int((b >> 52) & 0x7ff);
  const uint64_t frac = b & ((uint64_t(1) << 52) - 1);
  const uint32_t inf = ((uint32_t(1) << ebits) - 1) << mbits;
  if (exp == 0x7ff) return sign | inf | (frac ? uint32_t(1) << (mbits - 1) : 0);
  if (exp == 0 && frac == 0) return sign;
  const int bias = (1 << (ebits - 1)) - 1;
  const int emin = 1 - bias;
  const int e = exp == 0 ? -1022 : exp - 1023;
  const uint64_t m = exp == 0 ? frac : frac | (uint64_t(1) << 52);
  int shift = 52 - mbits;
  uint64_t r = 0;
  if (e >= emin) {
    r = (uint64_t(e + bias) << mbits) | ((m >> shift) & ((uint64_t(1) << mbits) - 1));
  } else {
    shift += emin - e;
    if (shift > 63) return sign;
    r = m >> shift;
  }
  const uint64_t rem = m & ((uint64_t(1) << shift) - 1);
  const uint64_t half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) ++r;
  if (r >= inf) return sign | inf;
  return sign | uint32_t(r);
}

template <typename T> void store_int(double v, std::byte* dst) {
  T x = 0;
  if (std::isnan(v))
    x = 0;
  else if (v <= double(std::numeric_limits<T>::min()))
    x = std::numeric_limits<T>::min();
  else if (v >= double(std::numeric_limits<T>::max()))
    x = std::numeric_limits<T>::max();
  else
    x = T(v);
  std::memcpy(dst, &x, sizeof(T));
}

} // namespace

void store_element(DType t, double v, std::byte* dst) {
  switch (t) {
  case DType::Bool: {
    uint8_t x = v != 0;
    std::memcpy(dst, &x, 1);
    return;
  }
  case DType::U8:
    return store_int<uint8_t>(v, dst);
  case DType::I8:
    return store_int<int8_t>(v, dst);
  case DType::I16:
    return store_int<int16_t>(v, dst);
  case DType::I32:
    return store_int<int32_t>(v, dst);
  case DType::I64:
    return store_int<int64_t>(v, dst);
  case DType::F16: {
    uint16_t x = uint16_t(round_to_small_float(v, 5, 10));
    std::memcpy(dst, &x, 2);
    return;
  }
  case DType::BF16: {
    uint16_t x = uint16_t(round_to_small_float(v, 8, 7));
    std::memcpy(dst, &x, 2);
    return;
  }
  case DType::F32: {
    float x = float(v);
    std::memcpy(dst, &x, 4);
    return;
  }
  case DType::F64:
    std::memcpy(dst, &v, 8);
    return;
  }
  assert(false && "unknown dtype");
}

void fill_random(DType t, size_t n, uint64_t seed, std::byte* dst, int64_t int_low,
                 int64_t int_high) {
  Rng rng(seed);
  const size_t sz = dtype_size(t);
  for (size_t i = 0; i < n; ++i, dst += sz) {
    if (is_floating(t)) {
      store_element(t, rng.normal(), dst);
    } else if (t == DType::Bool) {
      store_element(t, double(rng.next_u64() >> 63), dst);
    } else {
      int64_t x = rng.uniform_int(int_low, int_high);
      if (t == DType::I64)
        std::memcpy(dst, &x, 8);
      else
        store_element(t, double(x), dst);
    }
  }
}

namespace {

/// Stores value(i) for i in [0, n) into `dst` as `t`: float32 and float64 directly (weights
/// made by init rules: ResNet-50's 25.6 M), other dtypes through store_element.
template <typename F> void fill_each(DType t, size_t n, std::byte* dst, F&& value) {
  if (t == DType::F32) {
    for (size_t i = 0; i < n; ++i) {
      float v = float(value(i));
      std::memcpy(dst + 4 * i, &v, 4);
    }
    return;
  }
  if (t == DType::F64) {
    for (size_t i = 0; i < n; ++i) {
      double v = value(i);
      std::memcpy(dst + 8 * i, &v, 8);
    }
    return;
  }
  const size_t sz = dtype_size(t);
  for (size_t i = 0; i < n; ++i) store_element(t, value(i), dst + sz * i);
}

} // namespace

void fill_uniform(DType t, size_t n, uint64_t seed, double low, double high, std::byte* dst) {
  Rng rng(seed);
  fill_each(t, n, dst, [&](size_t) { return low + (high - low) * rng.uniform(); });
}

void fill_normal(DType t, size_t n, uint64_t seed, double mean, double std, std::byte* dst) {
  Rng rng(seed);
  fill_each(t, n, dst, [&](size_t) { return mean + std * rng.normal(); });
}

void fill_value(DType t, size_t n, double value, std::byte* dst) {
  fill_each(t, n, dst, [&](size_t) { return value; });
}

void fill_arange(DType t, size_t n, double start, double step, std::byte* dst) {
  fill_each(t, n, dst, [&](size_t i) { return start + double(i) * step; });
}

} // namespace fxc
