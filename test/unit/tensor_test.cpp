// Unit tests for host tensors: dtype conversions, element access, views, copies, bounds checks.
#include "runtime/tensor.h"
#include "runtime_test_util.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

using namespace fxc;
using namespace fxc::test;

namespace {

// All finite non-negative halves as (value, bits), ascending: an independent table for checking
// rounding (built from the bit layout, not from half_to_float).
std::vector<std::pair<double, uint16_t>> half_table() {
  std::vector<std::pair<double, uint16_t>> t;
  for (uint32_t e = 0; e < 31; ++e)
    for (uint32_t m = 0; m < 1024; ++m) {
      double v = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, int(e) - 15);
      t.push_back({v, uint16_t((e << 10) | m)});
    }
  return t;
}

// Nearest half to |f| (ties to even mantissa), by search in the table; 0x7c00 beyond the range.
uint16_t nearest_half(double f, const std::vector<std::pair<double, uint16_t>>& t) {
  double a = std::fabs(f);
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (a >= 65520.0) return sign | 0x7c00;
  auto it = std::lower_bound(t.begin(), t.end(), std::make_pair(a, uint16_t(0)));
  if (it == t.end()) return sign | 0x7bff; // in (65504, 65520): rounds down to the max
  if (it->first == a || it == t.begin()) return sign | it->second;
  auto lo = it - 1;
  double dlo = a - lo->first, dhi = it->first - a;
  if (dlo < dhi) return sign | lo->second;
  if (dhi < dlo) return sign | it->second;
  return sign | ((lo->second & 1) ? it->second : lo->second);
}

} // namespace

TEST_CASE("tensor: float16 conversion of known values rounds to nearest even") {
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65519.0f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);
  CHECK(float_to_half(1e10f) == 0x7c00);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);        // tie -> even (0)
  CHECK(float_to_half(std::ldexp(3.0f, -25)) == 0x0002);        // 1.5 ulp -> 2
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00); // tie -> even
  CHECK(float_to_half(1.0f + std::ldexp(3.0f, -11)) == 0x3c02); // tie -> even (up)
  CHECK(float_to_half(std::ldexp(1023.5f, -24)) == 0x0400);     // rounds into the normals
  uint16_t nan = float_to_half(std::nanf(""));
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x3ff) != 0);
  CHECK(half_to_float(0x3555) == doctest::Approx(0.333251953125));
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::isinf(half_to_float(0xfc00)));
  CHECK(half_to_float(0xfc00) < 0);
}

TEST_CASE("tensor: float16 round trip of every half and rounding of random floats") {
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; // NaN payloads
    REQUIRE(float_to_half(half_to_float(uint16_t(h))) == h);
  }
  auto table = half_table();
  Vals v = rand_vals(20000, 7, -70000, 70000);
  Vals small = rand_vals(20000, 8, -1e-4, 1e-4);
  v.insert(v.end(), small.begin(), small.end());
  for (double x : v) {
    float f = float(x);
    REQUIRE_MESSAGE(float_to_half(f) == nearest_half(f, table), "value " << f);
  }
}

TEST_CASE("tensor: bfloat16 conversion rounds to nearest even and keeps NaN") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80); // tie -> even
  CHECK(float_to_bf16(1.0f + std::ldexp(3.0f, -8)) == 0x3f82); // tie -> even (up)
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -7)) == 0x3f81); // exact
  CHECK(float_to_bf16(3.4e38f) == 0x7f80);                     // overflows to inf
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  for (uint32_t b = 0; b < 65536; ++b) {
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) continue;
    REQUIRE(float_to_bf16(bf16_to_float(uint16_t(b))) == b);
  }
}

TEST_CASE("tensor: load and store for every dtype") {
  struct Row {
    DType dt;
    double in, out;
  };
  const Row rows[] = {
      {DType::Bool, 0.5, 1},
      {DType::Bool, 0, 0},
      {DType::U8, 300, 44},
      {DType::I8, -130, 126},
      {DType::I16, -3.7, -3},
      {DType::I32, 2147483648.0, -2147483648.0},
      {DType::I64, 1e15, 1e15},
      {DType::F16, 0.1, 0.0999755859375},
      {DType::BF16, 0.1, 0.10009765625},
      {DType::F32, 0.1, double(0.1f)},
      {DType::F64, 0.1, 0.1},
  };
  for (const Row& r : rows) {
    CAPTURE(dtype_name(r.dt));
    Tensor t = Tensor::empty(r.dt, {3});
    t.store(1, r.in);
    CHECK(t.load(1) == r.out);
    CHECK(t.load(0) == 0);
    CHECK(round_to_dtype(r.in, r.dt) == r.out);
  }
  Tensor big = Tensor::empty(DType::I64, {1});
  big.store_int(0, (int64_t(1) << 62) + 1);
  CHECK(big.load_int(0) == (int64_t(1) << 62) + 1);
  Tensor b = Tensor::empty(DType::Bool, {1});
  b.store_int(0, 7);
  CHECK(b.load_int(0) == 1);
}

TEST_CASE("tensor: views share storage; contiguous, to and clone copy when needed") {
  Tensor t = F({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor tt = t.as_strided({3, 2}, {1, 3}, 0);
  CHECK(tt.storage() == t.storage());
  CHECK_FALSE(tt.is_contiguous());
  CHECK(tt.to_vector() == Vals{0, 3, 1, 4, 2, 5});
  CHECK(tt.at({2, 1}) == 5);
  CHECK(tt.offset_of(1) == 3);
  tt.store(tt.offset_of(1), 30); // element (0, 1) of the view is (1, 0) of the base
  CHECK(t.at({1, 0}) == 30);
  Tensor c = tt.contiguous();
  CHECK(c.storage() != t.storage());
  CHECK(c.is_contiguous());
  CHECK(c.to_vector() == Vals{0, 30, 1, 4, 2, 5});
  CHECK(t.contiguous().storage() == t.storage());
  Tensor row = t.as_strided({3}, {1}, 3); // a contiguous view with an offset stays a view
  CHECK(row.contiguous().storage() == t.storage());
  CHECK(row.to_vector() == Vals{30, 4, 5});
  Tensor h = tt.to(DType::F16);
  CHECK(h.dtype() == DType::F16);
  CHECK(h.to_vector() == Vals{0, 30, 1, 4, 2, 5});
  Tensor cl = t.clone();
  CHECK(cl.storage() != t.storage());
  cl.store(0, 9);
  CHECK(t.at({0, 0}) == 0);
  CHECK(Tensor::scalar(DType::I32, 7).item() == 7);
  CHECK_THROWS_AS(t.item(), TensorError);
}

TEST_CASE("tensor: copy_from broadcasts and converts") {
  Tensor dst = Tensor::empty(DType::I32, {2, 3});
  dst.copy_from(F({3}, {1.9, -2.5, 3}));
  CHECK(dst.to_vector() == Vals{1, -2, 3, 1, -2, 3});
  Tensor col = Tensor::empty(DType::F32, {2, 2});
  col.copy_from(F({2, 1}, {5, 6}));
  CHECK(col.to_vector() == Vals{5, 5, 6, 6});
  CHECK_THROWS_AS(col.copy_from(F({3}, {1, 2, 3})), TensorError);
}

TEST_CASE("tensor: sizes and views from files are checked") {
  CHECK_THROWS_AS(Tensor::empty(DType::F32, {-1}), TensorError);
  CHECK_THROWS_AS(Tensor::empty(DType::F32, {int64_t(1) << 40, int64_t(1) << 40}), TensorError);
  CHECK_THROWS_AS(Tensor::empty(DType::F32, {int64_t(1) << 39}), TensorError); // > kMaxBytes
  CHECK(Tensor::empty(DType::F32, {0, 5}).numel() == 0);
  Tensor t = F({4}, {1, 2, 3, 4});
  CHECK_THROWS_AS(t.as_strided({3}, {2}, 0), TensorError);
  CHECK_THROWS_AS(t.as_strided({2}, {1}, 3), TensorError);
  CHECK_THROWS_AS(t.as_strided({2}, {-1}, 3), TensorError);
  CHECK(t.as_strided({2}, {2}, 1).to_vector() == Vals{2, 4});
  CHECK(t.as_strided({0}, {1}, 4).numel() == 0);
  WeightData w;
  w.storage = std::make_shared<Storage>(16);
  w.meta.dtype = DType::F32;
  w.meta.sizes = {2, 2};
  w.meta.strides = {2, 1};
  CHECK(Tensor::from_weight(w).storage() == w.storage);
  w.meta.sizes = {3, 2};
  CHECK_THROWS_AS(Tensor::from_weight(w), TensorError);
  w.meta.sizes = {2, 2};
  w.meta.storage_offset = 1;
  CHECK_THROWS_AS(Tensor::from_weight(w), TensorError);
}

TEST_CASE("tensor: dense conversions and clones keep every value") {
  Vals v = rand_vals(1000, 3, -1e6, 1e6);
  Tensor f = F({10, 100}, v);
  Tensor d = f.to(DType::F64);
  Vals fv = f.to_vector(), dv = d.to_vector();
  REQUIRE(dv.size() == 1000);
  for (size_t i = 0; i < dv.size(); ++i) CHECK(dv[i] == fv[i]);
  Tensor c = d.clone();
  CHECK(c.storage() != d.storage());
  CHECK(c.to_vector() == dv);
  Tensor row = f.as_strided({100}, {1}, 300); // contiguous view with an offset
  CHECK(row.to(DType::F64).to_vector() == Vals(fv.begin() + 300, fv.begin() + 400));
}
