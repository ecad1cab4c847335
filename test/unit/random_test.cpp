// Unit tests for the deterministic PRNG and element conversions used by init rules and inputs.
#include "frontend/random.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace fxc;

namespace {
uint16_t bits16(DType t, double v) {
  uint16_t x;
  std::byte b[2];
  store_element(t, v, b);
  std::memcpy(&x, b, 2);
  return x;
}
} // namespace

TEST_CASE("random: splitmix64 reproduces the reference stream") {
  Rng r(0);
  CHECK(r.next_u64() == 0xe220a8397b1dcdafULL);
  CHECK(r.next_u64() == 0x6e789e6aa1b965f4ULL);
  CHECK(r.next_u64() == 0x06c45d188009454fULL);
}

TEST_CASE("random: uniform and normal samples have the right range and moments") {
  Rng r(42);
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double u = r.uniform();
    REQUIRE((u >= 0 && u < 1));
    sum += u;
  }
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.01));
  sum = 0;
  for (int i = 0; i < n; ++i) {
    double z = r.normal();
    sum += z;
    sq += z * z;
  }
  CHECK(std::abs(sum / n) < 0.01);
  CHECK(sq / n == doctest::Approx(1.0).epsilon(0.01));
  for (int i = 0; i < 1000; ++i) {
    int64_t k = r.uniform_int(-3, 5);
    REQUIRE((k >= -3 && k < 5));
  }
}

TEST_CASE("random: portable_log agrees with libm to the last bits") {
  for (double x : {1e-300, 1e-10, 0.001, 0.5, 0.7071, 1.0, 1.0000001, 2.0, 3.14159, 1e10, 1e300}) {
    CAPTURE(x);
    CHECK(portable_log(x) == doctest::Approx(std::log(x)).epsilon(1e-15));
  }
  CHECK(portable_log(1.0) == 0.0);
}

TEST_CASE("random: fills are deterministic per seed and respect their ranges") {
  std::vector<float> a(1000), b(1000), c(1000);
  fill_random(DType::F32, a.size(), 7, reinterpret_cast<std::byte*>(a.data()));
  fill_random(DType::F32, b.size(), 7, reinterpret_cast<std::byte*>(b.data()));
  fill_random(DType::F32, c.size(), 8, reinterpret_cast<std::byte*>(c.data()));
  CHECK(a == b);
  CHECK(a != c);
  std::vector<int64_t> ids(1000);
  fill_random(DType::I64, ids.size(), 1, reinterpret_cast<std::byte*>(ids.data()), 10, 20);
  bool low = false, high = false;
  for (int64_t v : ids) {
    REQUIRE((v >= 10 && v < 20));
    low |= v == 10;
    high |= v == 19;
  }
  CHECK((low && high));
  std::vector<uint8_t> bs(1000);
  fill_random(DType::Bool, bs.size(), 1, reinterpret_cast<std::byte*>(bs.data()));
  int ones = 0;
  for (uint8_t v : bs) {
    REQUIRE(v <= 1);
    ones += v;
  }
  CHECK((ones > 400 && ones < 600));
  std::vector<double> u(1000);
  fill_uniform(DType::F64, u.size(), 3, -0.25, 0.25, reinterpret_cast<std::byte*>(u.data()));
  for (double v : u) REQUIRE((v >= -0.25 && v < 0.25));
  std::vector<int32_t> r(5);
  fill_arange(DType::I32, r.size(), 2, 3, reinterpret_cast<std::byte*>(r.data()));
  CHECK(r == std::vector<int32_t>{2, 5, 8, 11, 14});
}

TEST_CASE("random: f16/bf16 conversion rounds to nearest even") {
  CHECK(bits16(DType::F16, 1.0) == 0x3c00);
  CHECK(bits16(DType::F16, -2.0) == 0xc000);
  CHECK(bits16(DType::F16, 65504.0) == 0x7bff);
  CHECK(bits16(DType::F16, 65520.0) == 0x7c00);              // rounds up to infinity
  CHECK(bits16(DType::F16, std::ldexp(1.0, -24)) == 0x0001); // smallest subnormal
  CHECK(bits16(DType::F16, std::ldexp(1.0, -26)) == 0x0000);
  CHECK(bits16(DType::F16, 1.0 + std::ldexp(1.0, -11)) == 0x3c00); // tie to even
  CHECK(bits16(DType::F16, 1.0 + 3 * std::ldexp(1.0, -11)) == 0x3c02);
  CHECK(bits16(DType::F16, NAN) == 0x7e00);
  CHECK(bits16(DType::BF16, 1.0) == 0x3f80);
  CHECK(bits16(DType::BF16, 1.0 + std::ldexp(1.0, -8)) == 0x3f80);
  CHECK(bits16(DType::BF16, 1.0 + 3 * std::ldexp(1.0, -8)) == 0x3f82);
  CHECK(bits16(DType::BF16, -INFINITY) == 0xff80);
  int8_t i8;
  store_element(DType::I8, 300.0, reinterpret_cast<std::byte*>(&i8));
  CHECK(i8 == 127); // saturates instead of wrapping
  store_element(DType::I8, -2.7, reinterpret_cast<std::byte*>(&i8));
  CHECK(i8 == -2);
}
