// Unit tests for the reference kernels: every op in the schema table, checked against values
// computed independently here (float64 formulas, hand-computed cases) and error cases.
#include "runtime/kernels.h"
#include "runtime_test_util.h"

#include "frontend/composite.h"
#include "frontend/schema.h"
#include "passes/decompose.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

using namespace fxc;
using namespace fxc::test;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Tolerances for comparing a result stored in `dt` with a float64 formula.
double rtol_for(DType dt) {
  switch (dt) {
  case DType::F16:
    return 1e-3;
  case DType::BF16:
    return 8e-3;
  case DType::F32:
    return 1e-6;
  default:
    return 1e-12;
  }
}

Vals map(const Vals& v, const std::function<double(double)>& f) {
  Vals r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = f(v[i]);
  return r;
}

// The values `t` holds once rounded to its dtype (what a kernel actually reads).
Vals held(const Tensor& t) {
  return t.to_vector();
}
} // namespace

// A composite op (frontend/composite.h) runs its decomposition instead.
TEST_CASE("kernels: every op in the schema table has a reference kernel, or is composite") {
  for (const OpSchema* s : all_schemas()) {
    bool has = find_kernel(s->target) != nullptr || is_composite(s->target);
    CHECK_MESSAGE(has, s->target);
  }
  bool unknown = find_kernel("aten.nonexistent.default") != nullptr;
  CHECK_FALSE(unknown);
}

TEST_CASE("kernels: unary float ops match float64 formulas across shapes and dtypes") {
  struct Row {
    const char* target;
    std::function<double(double)> f;
    double lo, hi;
  };
  const Row rows[] = {
      {"aten.exp.default", [](double x) { return std::exp(x); }, -3, 3},
      {"aten.log.default", [](double x) { return std::log(x); }, 0.1, 5},
      {"aten.sqrt.default", [](double x) { return std::sqrt(x); }, 0, 9},
      {"aten.rsqrt.default", [](double x) { return 1 / std::sqrt(x); }, 0.1, 9},
      {"aten.erf.default", [](double x) { return std::erf(x); }, -3, 3},
      {"aten.sin.default", [](double x) { return std::sin(x); }, -6, 6},
      {"aten.cos.default", [](double x) { return std::cos(x); }, -6, 6},
      {"aten.tanh.default", [](double x) { return std::tanh(x); }, -4, 4},
      {"aten.sigmoid.default", [](double x) { return 1 / (1 + std::exp(-x)); }, -6, 6},
      {"aten.reciprocal.default", [](double x) { return 1 / x; }, 0.5, 4},
      {"aten.silu.default", [](double x) { return x / (1 + std::exp(-x)); }, -6, 6},
      {"aten.hardswish.default",
       [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; }, -5, 5},
      {"aten.hardsigmoid.default", [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; },
       -5, 5},
      {"aten.relu.default", [](double x) { return x > 0 ? x : 0; }, -3, 3},
      {"aten.abs.default", [](double x) { return std::fabs(x); }, -3, 3},
      {"aten.neg.default", [](double x) { return -x; }, -3, 3},
      {"aten.sign.default", [](double x) { return double((x > 0) - (x < 0)); }, -3, 3},
      {"aten.gelu.default", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       -4, 4},
  };
  const DType dts[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
  const Shape shapes[] = {{}, {0}, {1}, {3, 1, 4}};
  uint64_t seed = 1;
  for (const Row& r : rows)
    for (DType dt : dts)
      for (const Shape& sh : shapes) {
        CAPTURE(r.target);
        CAPTURE(dtype_name(dt));
        Tensor x = R(dt, sh, seed++, r.lo, r.hi);
        check(op1(r.target, {x}), dt, sh, map(held(x), r.f), rtol_for(dt), rtol_for(dt) * 1e-3);
        // Non-contiguous input: a transposed view.
        Vals v = rand_vals(6, seed++, r.lo, r.hi);
        Tensor xt = transposed(dt, 2, 3, v);
        check(op1(r.target, {xt}), dt, {2, 3}, map(held(xt), r.f), rtol_for(dt),
              rtol_for(dt) * 1e-3);
      }
}

TEST_CASE("kernels: unary ops on integers promote, keep the dtype, or fail") {
  Tensor i = L({4}, {-2, 0, 1, 4});
  check(op1("aten.exp.default", {i}), DType::F32, {4},
        {std::exp(-2.0), 1, std::exp(1.0), std::exp(4.0)});
  check(op1("aten.sqrt.default", {i}), DType::F32, {4}, {kNaN, 0, 1, 2});
  check(op1("aten.reciprocal.default", {i}), DType::F32, {4}, {-0.5, kInf, 1, 0.25});
  check(op1("aten.relu.default", {i}), DType::I64, {4}, {0, 0, 1, 4});
  check(op1("aten.abs.default", {i}), DType::I64, {4}, {2, 0, 1, 4});
  check(op1("aten.neg.default", {i}), DType::I64, {4}, {2, 0, -1, -4});
  check(op1("aten.sign.default", {i}), DType::I64, {4}, {-1, 0, 1, 1});
  check(op1("aten.sigmoid.default", {B({2}, {1, 0})}), DType::F32, {2},
        {1 / (1 + std::exp(-1.0)), 0.5});
  CHECK(op_error("aten.gelu.default", {i}).find("not implemented for i64") != std::string::npos);
  CHECK(op_error("aten.silu.default", {i}).find("not implemented") != std::string::npos);
  CHECK(op_error("aten.hardswish.default", {i}).find("not implemented") != std::string::npos);
  CHECK(op_error("aten.neg.default", {B({1}, {1})}).find("bool") != std::string::npos);
  // float64 mode: integer inputs promote to f64.
  check(op1("aten.exp.default", {i}, true), DType::F64, {4},
        {std::exp(-2.0), 1, std::exp(1.0), std::exp(4.0)}, 1e-15);
  // NaN propagates through relu and sign maps NaN to 0 (PyTorch's CPU behaviour).
  check(op1("aten.relu.default", {F({2}, {kNaN, -1})}), DType::F32, {2}, {kNaN, 0});
}

TEST_CASE("kernels: gelu tanh approximation and bad approximate argument") {
  Tensor x = D({5}, {-3, -0.5, 0, 0.7, 2.5});
  auto f = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  check(op1("aten.gelu.default", {x, {"approximate", S("tanh")}}), DType::F64, {5}, map(held(x), f),
        1e-14);
  CHECK(op_error("aten.gelu.default", {x, {"approximate", S("fast")}}).find("none or tanh") !=
        std::string::npos);
  CHECK(op1("aten.gelu.default", {x}).at({3}) ==
        doctest::Approx(0.7 * 0.5 * (1 + std::erf(0.7 / std::sqrt(2.0)))));
}

TEST_CASE("kernels: binary arithmetic broadcasts over non-contiguous operands") {
  Vals av = rand_vals(6, 11), bv = rand_vals(4, 12);
  Tensor a = transposed(DType::F32, 2, 3, av).as_strided({2, 1, 3}, {1, 1, 2}, 0); // [2,1,3]
  Tensor b = F({4, 1}, bv);
  Vals ah = held(a), bh = held(b);
  auto expect = [&](std::function<double(double, double)> f) {
    Vals r;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 3; ++k)
          r.push_back(double(float(f(ah[size_t(i * 3 + k)], bh[size_t(j)]))));
    return r;
  };
  check(op1("aten.add.Tensor", {a, b}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return x + y; }));
  check(op1("aten.add.Tensor", {a, b, {"alpha", I(3)}}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return x + 3 * y; }));
  check(op1("aten.sub.Tensor", {a, b, {"alpha", Fl(0.5)}}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return x - 0.5 * y; }));
  check(op1("aten.mul.Tensor", {a, b}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return x * y; }));
  check(op1("aten.div.Tensor", {a, b}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return x / y; }));
  check(op1("aten.maximum.default", {a, b}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return std::max(x, y); }));
  check(op1("aten.minimum.default", {a, b}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return std::min(x, y); }));
  check(op1("aten.min.other", {a, b}), DType::F32, {2, 4, 3},
        expect([](double x, double y) { return std::min(x, y); }));
  // Expanded (stride 0) operand and size-0 broadcasting.
  Tensor e = F({1}, {2}).as_strided({3}, {0}, 0);
  check(op1("aten.mul.Tensor", {e, F({3}, {1, 2, 3})}), DType::F32, {3}, {2, 4, 6});
  check(op1("aten.add.Tensor", {F({0, 3}, {}), F({3}, {1, 2, 3})}), DType::F32, {0, 3}, {});
  CHECK(op_error("aten.add.Tensor", {F({2}, {1, 2}), F({3}, {1, 2, 3})}).find("broadcast") !=
        std::string::npos);
}

TEST_CASE("kernels: scalar overloads and PyTorch type promotion") {
  // int tensor with float scalar -> default float; with int scalar -> stays int.
  check(op1("aten.add.Scalar", {T(DType::I32, {2}, {1, 2}), Fl(0.5)}), DType::F32, {2}, {1.5, 2.5});
  check(op1("aten.add.Scalar", {T(DType::I32, {2}, {1, 2}), I(5)}), DType::I32, {2}, {6, 7});
  check(op1("aten.mul.Scalar", {T(DType::I16, {2}, {3, -4}), I(2)}), DType::I16, {2}, {6, -8});
  check(op1("aten.div.Scalar", {L({2}, {3, -4}), I(2)}), DType::F32, {2}, {1.5, -2});
  check(op1("aten.div.Tensor", {L({2}, {1, 0}), L({2}, {0, 0})}), DType::F32, {2}, {kInf, kNaN});
  // 0-dim tensors rank below dimensioned tensors of the same category.
  check(op1("aten.add.Tensor", {F({2}, {1, 2}), D({}, {0.5})}), DType::F32, {2}, {1.5, 2.5});
  check(op1("aten.add.Tensor", {T(DType::F16, {1}, {1}), F({}, {0.25})}), DType::F16, {1}, {1.25});
  check(op1("aten.add.Tensor", {L({2}, {1, 2}), D({}, {0.5})}), DType::F64, {2}, {1.5, 2.5});
  check(op1("aten.add.Tensor", {T(DType::U8, {1}, {200}), T(DType::I8, {1}, {-100})}), DType::I16,
        {1}, {100});
  check(op1("aten.add.Tensor", {T(DType::F16, {1}, {1}), T(DType::BF16, {1}, {1})}), DType::F32,
        {1}, {2});
  check(op1("aten.add.Tensor", {B({2}, {1, 0}), B({2}, {1, 0})}), DType::Bool, {2}, {1, 0});
  check(op1("aten.mul.Scalar", {B({2}, {1, 0}), I(3)}), DType::I64, {2}, {3, 0});
  check(op1("aten.add.Scalar", {T(DType::F16, {2}, {1, 2}), Fl(0.5)}), DType::F16, {2}, {1.5, 2.5});
  CHECK(op_error("aten.sub.Tensor", {B({1}, {1}), B({1}, {0})}).find("bool") != std::string::npos);
  CHECK(op_error("aten.add.Tensor", {L({1}, {1}), L({1}, {1}), {"alpha", Fl(0.5)}}).find("alpha") !=
        std::string::npos);
  // Integer arithmetic wraps like PyTorch's.
  check(op1("aten.add.Tensor", {T(DType::I32, {1}, {2147483647}), T(DType::I32, {1}, {1})}),
        DType::I32, {1}, {-2147483648.0});
  check(op1("aten.mul.Tensor", {T(DType::U8, {1}, {16}), T(DType::U8, {1}, {17})}), DType::U8, {1},
        {16});
  // f16 results round once from the exact value.
  check(op1("aten.add.Tensor", {T(DType::F16, {1}, {1024}), T(DType::F16, {1}, {0.5})}), DType::F16,
        {1}, {1024});
  check(op1("aten.add.Tensor", {T(DType::F16, {1}, {1025}), T(DType::F16, {1}, {0.5})}), DType::F16,
        {1}, {1026});
  // float64 mode: float scalars with int tensors give f64.
  check(op1("aten.mul.Scalar", {L({1}, {3}), Fl(0.1)}, true), DType::F64, {1},
        {0.30000000000000004}, 0, 0);
}

TEST_CASE("kernels: maximum/minimum propagate NaN; integer versions stay integral") {
  check(op1("aten.maximum.default", {F({3}, {kNaN, 1, 2}), F({3}, {0, kNaN, 1})}), DType::F32, {3},
        {kNaN, kNaN, 2});
  check(op1("aten.minimum.default", {L({3}, {5, -1, 2}), L({3}, {4, 0, 2})}), DType::I64, {3},
        {4, -1, 2});
}

TEST_CASE("kernels: pow with integer and float exponents") {
  check(op1("aten.pow.Tensor_Scalar", {L({4}, {-3, 0, 2, 5}), I(3)}), DType::I64, {4},
        {-27, 0, 8, 125});
  check(op1("aten.pow.Tensor_Scalar", {L({2}, {4, 9}), Fl(0.5)}), DType::F32, {2}, {2, 3});
  check(op1("aten.pow.Tensor_Scalar", {F({3}, {-2, 0.5, 3}), I(2)}), DType::F32, {3}, {4, 0.25, 9});
  check(op1("aten.pow.Tensor_Scalar", {F({2}, {-8, 4}), Fl(1.0 / 3)}), DType::F32, {2},
        {kNaN, std::pow(4.0, 1.0 / 3)});
  CHECK(op_error("aten.pow.Tensor_Scalar", {L({1}, {2}), I(-1)}).find("negative") !=
        std::string::npos);
  check(op1("aten.pow.Tensor_Tensor", {L({4}, {2, 1, -1, 2}), L({4}, {10, -3, -3, -1})}),
        DType::I64, {4}, {1024, 1, -1, 0});
  check(op1("aten.pow.Tensor_Tensor", {F({2, 1}, {2, 3}), F({2}, {2, 0.5})}), DType::F32, {2, 2},
        {4, std::sqrt(2.0), 9, std::sqrt(3.0)});
  check(op1("aten.pow.Tensor_Scalar", {T(DType::I64, {1}, {3}), I(40)}), DType::I64, {1},
        {double(int64_t(12157665459056928801ull))}); // 3^40 wraps like int64 arithmetic
}

TEST_CASE("kernels: fmod follows C semantics and rejects integer division by zero") {
  check(op1("aten.fmod.Scalar", {F({4}, {-7, 7, 5.5, -0.5}), I(3)}), DType::F32, {4},
        {-1, 1, 2.5, -0.5});
  check(op1("aten.fmod.Scalar", {L({3}, {-7, 7, 6}), I(3)}), DType::I64, {3}, {-1, 1, 0});
  check(op1("aten.fmod.Scalar", {L({2}, {-7, 7}), Fl(2.5)}), DType::F32, {2}, {-2, 2});
  CHECK(op_error("aten.fmod.Scalar", {L({1}, {1}), I(0)}) == "ZeroDivisionError");
  check(op1("aten.fmod.Scalar", {F({1}, {1}), I(0)}), DType::F32, {1}, {kNaN});
}

TEST_CASE("kernels: comparisons, both overloads, NaN and scalar rounding") {
  Tensor a = F({4}, {1, 2, kNaN, 4});
  Tensor b = F({4}, {1, 3, kNaN, 3});
  struct Row {
    const char* name;
    Vals tensor, scalar;
  };
  const Row rows[] = {
      {"eq", {1, 0, 0, 0}, {0, 1, 0, 0}}, {"ne", {0, 1, 1, 1}, {1, 0, 1, 1}},
      {"lt", {0, 1, 0, 0}, {1, 0, 0, 0}}, {"le", {1, 1, 0, 0}, {1, 1, 0, 0}},
      {"gt", {0, 0, 0, 1}, {0, 0, 0, 1}}, {"ge", {1, 0, 0, 1}, {0, 1, 0, 1}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    check(op1(std::string("aten.") + r.name + ".Tensor", {a, b}), DType::Bool, {4}, r.tensor);
    check(op1(std::string("aten.") + r.name + ".Scalar", {a, I(2)}), DType::Bool, {4}, r.scalar);
  }
  // The scalar is converted to the tensor's dtype first, as PyTorch does.
  check(op1("aten.eq.Scalar", {F({1}, {0.1}), Fl(0.1)}), DType::Bool, {1}, {1});
  check(op1("aten.eq.Scalar", {D({1}, {0.1}), Fl(0.1)}), DType::Bool, {1}, {1});
  check(op1("aten.gt.Scalar", {L({2}, {0, 1}), Fl(0.5)}), DType::Bool, {2}, {0, 1});
  // Broadcasting comparisons, integer operands compared exactly.
  Tensor big = L({2}, {double((int64_t(1) << 53) + 1), 5});
  big.store_int(0, (int64_t(1) << 53) + 1);
  Tensor big2 = L({1}, {0});
  big2.store_int(0, int64_t(1) << 53);
  check(op1("aten.ne.Tensor", {big, big2}), DType::Bool, {2}, {1, 1});
  check(op1("aten.lt.Tensor", {L({2, 1}, {1, 5}), L({3}, {0, 2, 6})}), DType::Bool, {2, 3},
        {0, 1, 1, 0, 0, 1});
}

TEST_CASE("kernels: logical ops, where and masked_fill") {
  check(op1("aten.logical_not.default", {F({3}, {0, 2, kNaN})}), DType::Bool, {3}, {1, 0, 0});
  check(op1("aten.logical_and.default", {F({3}, {0, 2, kNaN}), L({3}, {1, 1, 3})}), DType::Bool,
        {3}, {0, 1, 1});
  Tensor cond = B({2, 1}, {1, 0});
  check(op1("aten.where.self", {cond, F({3}, {1, 2, 3}), L({2, 3}, {7, 8, 9, 10, 11, 12})}),
        DType::F32, {2, 3}, {1, 2, 3, 10, 11, 12});
  check(op1("aten.where.ScalarOther", {cond, L({2}, {1, 2}), I(-5)}), DType::I64, {2, 2},
        {1, 2, -5, -5});
  check(op1("aten.where.ScalarOther", {cond, L({2}, {1, 2}), Fl(0.5)}), DType::F32, {2, 2},
        {1, 2, 0.5, 0.5});
  check(op1("aten.where.self", {B({}, {1}), D({}, {-kInf}), F({2}, {1, 2})}), DType::F32, {2},
        {-kInf, -kInf});
  CHECK(op_error("aten.where.self", {F({1}, {1}), F({1}, {1}), F({1}, {2})}).find("boolean") !=
        std::string::npos);
  Tensor x = F({2, 2}, {1, 2, 3, 4});
  check(op1("aten.masked_fill.Scalar", {x, B({2}, {0, 1}), Fl(-kInf)}), DType::F32, {2, 2},
        {1, -kInf, 3, -kInf});
  check(op1("aten.masked_fill.Scalar", {L({3}, {1, 2, 3}), B({2, 1}, {1, 0}), I(9)}), DType::I64,
        {2, 3}, {9, 9, 9, 1, 2, 3});
  CHECK(op_error("aten.masked_fill.Scalar", {x, F({2}, {0, 1}), I(1)}).find("boolean") !=
        std::string::npos);
}

TEST_CASE("kernels: clamp with one or both bounds, integers and NaN") {
  Tensor x = F({5}, {-3, -0.5, 0.5, 3, kNaN});
  check(op1("aten.clamp.default", {x, Fl(-1), Fl(1)}), DType::F32, {5}, {-1, -0.5, 0.5, 1, kNaN});
  check(op1("aten.clamp.default", {x, {"min", I(0)}}), DType::F32, {5}, {0, 0, 0.5, 3, kNaN});
  check(op1("aten.clamp.default", {x, {"max", I(0)}}), DType::F32, {5}, {-3, -0.5, 0, 0, kNaN});
  check(op1("aten.clamp.default", {L({3}, {-5, 0, 5}), I(-2), I(2)}), DType::I64, {3}, {-2, 0, 2});
  check(op1("aten.clamp.default", {L({3}, {-5, 0, 5}), Fl(-2.5), None()}), DType::F32, {3},
        {-2.5, 0, 5});
  CHECK(op_error("aten.clamp.default", {x}).find("at least one") != std::string::npos);
}

TEST_CASE("kernels: sum and mean reduce in double over any dims") {
  // [1e8, 1, -1e8] sums to 1 only with a wide accumulator.
  check(op1("aten.sum.default", {F({3}, {1e8, 1, -1e8})}), DType::F32, {}, {1});
  Vals v = rand_vals(24, 21);
  Tensor x = F({2, 3, 4}, v);
  Vals h = held(x);
  auto at = [&](int i, int j, int k) { return h[size_t(i * 12 + j * 4 + k)]; };
  Vals s02, m1;
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) s += at(i, j, k);
    s02.push_back(s);
  }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) m1.push_back((at(i, 0, k) + at(i, 1, k) + at(i, 2, k)) / 3);
  check(op1("aten.sum.dim_IntList", {x, Is({0, -1})}), DType::F32, {3}, s02);
  check(op1("aten.sum.dim_IntList", {x, Is({2, 0}), Bo(true)}), DType::F32, {1, 3, 1}, s02);
  check(op1("aten.mean.dim", {x, Is({1})}), DType::F32, {2, 4}, m1);
  check(op1("aten.mean.dim", {x, Is({-2}), Bo(true)}), DType::F32, {2, 1, 4}, m1);
  double total = 0;
  for (double e : h) total += e;
  check(op1("aten.sum.dim_IntList", {x, None()}), DType::F32, {}, {total});
  check(op1("aten.sum.dim_IntList", {x, Is({})}), DType::F32, {}, {total});
  check(op1("aten.mean.default", {x}), DType::F32, {}, {total / 24});
  // Non-contiguous input.
  Tensor t = transposed(DType::F32, 2, 3, {1, 2, 3, 4, 5, 6});
  check(op1("aten.sum.dim_IntList", {t, Is({1})}), DType::F32, {2}, {1 + 2 + 3, 4 + 5 + 6});
  // Integer and bool sums give i64; dtype keyword converts first.
  check(op1("aten.sum.default", {B({3}, {1, 1, 0})}), DType::I64, {}, {2});
  check(op1("aten.sum.default", {T(DType::I32, {2}, {2147483647, 1})}), DType::I64, {},
        {2147483648.0});
  check(op1("aten.sum.default", {L({2}, {1, 2}), {"dtype", Dt(DType::F16)}}), DType::F16, {}, {3});
  check(op1("aten.mean.dim", {L({2}, {1, 2}), Is({0}), Bo(false), {"dtype", Dt(DType::F64)}}),
        DType::F64, {}, {1.5});
  CHECK(op_error("aten.mean.default", {L({2}, {1, 2})}).find("could not infer output dtype") !=
        std::string::npos);
  // Empty and 0-dim reductions.
  check(op1("aten.sum.dim_IntList", {F({0, 3}, {}), Is({0})}), DType::F32, {3}, {0, 0, 0});
  check(op1("aten.mean.dim", {F({0, 3}, {}), Is({0})}), DType::F32, {3}, {kNaN, kNaN, kNaN});
  check(op1("aten.sum.dim_IntList", {F({}, {5}), Is({0})}), DType::F32, {}, {5});
  CHECK(op_error("aten.sum.dim_IntList", {x, Is({1, -2})}).find("multiple times") !=
        std::string::npos);
  CHECK(op_error("aten.sum.dim_IntList", {x, Is({3})}).find("out of range") != std::string::npos);
}

TEST_CASE("kernels: amax, any and argmax") {
  Tensor x = F({2, 3}, {1, 5, 5, -1, kNaN, 2});
  check(op1("aten.amax.default", {x, Is({1})}), DType::F32, {2}, {5, kNaN});
  check(op1("aten.amax.default", {x, Is({0}), Bo(true)}), DType::F32, {1, 3}, {1, kNaN, 5});
  check(op1("aten.amax.default", {L({2, 2}, {3, -9, 7, 1})}), DType::I64, {}, {7});
  CHECK(op_error("aten.amax.default", {F({0, 2}, {}), Is({0})}).find("non-zero size") !=
        std::string::npos);
  check(op1("aten.any.dim", {F({2, 3}, {0, 0, 0, 0, kNaN, 0}), I(1)}), DType::Bool, {2}, {0, 1});
  check(op1("aten.any.dim", {L({2, 2}, {0, 1, 0, 0}), I(0), Bo(true)}), DType::Bool, {1, 2},
        {0, 1});
  check(op1("aten.argmax.default", {x, I(1)}), DType::I64, {2}, {1, 1}); // first max; NaN wins
  check(op1("aten.argmax.default", {F({2, 3}, {1, 5, 5, 7, 0, 7})}), DType::I64, {}, {3});
  check(op1("aten.argmax.default", {F({2, 3}, {1, 5, 5, 7, 0, 7}), None(), Bo(true)}), DType::I64,
        {1, 1}, {3});
  check(op1("aten.argmax.default", {F({2, 3}, {1, 5, 5, 7, 0, 7}), I(0), Bo(true)}), DType::I64,
        {1, 3}, {1, 0, 1});
  CHECK(op_error("aten.argmax.default", {F({0}, {})}).find("numel() == 0") != std::string::npos);
}

TEST_CASE("kernels: softmax and log_softmax subtract the max and honour dims and dtypes") {
  Tensor x = F({2, 3}, {1000, 1001, 1002, -kInf, 0, 1});
  auto soft = [](Vals r) {
    double m = *std::max_element(r.begin(), r.end()), s = 0;
    for (double v : r) s += std::exp(v - m);
    for (double& v : r) v = std::exp(v - m) / s;
    return r;
  };
  Vals r0 = soft({1000, 1001, 1002}), r1 = soft({-kInf, 0, 1});
  Vals expect = r0;
  expect.insert(expect.end(), r1.begin(), r1.end());
  check(op1("aten._softmax.default", {x, I(1), Bo(false)}), DType::F32, {2, 3}, expect);
  check(op1("aten.softmax.int", {x, I(-1)}), DType::F32, {2, 3}, expect);
  Vals lexpect = map(expect, [](double v) { return std::log(v); });
  check(op1("aten._log_softmax.default", {x, I(1), Bo(false)}), DType::F32, {2, 3}, lexpect, 1e-6,
        1e-6);
  check(op1("aten.log_softmax.int", {x, I(1)}), DType::F32, {2, 3}, lexpect, 1e-6, 1e-6);
  // Along dim 0 of a transposed input.
  Tensor t = transposed(DType::F32, 3, 2, {1, 4, 2, 5, 3, 6}); // rows (1,4) (2,5) (3,6)
  Vals c0 = soft({1, 2, 3}), c1 = soft({4, 5, 6});
  check(op1("aten._softmax.default", {t, I(0), Bo(false)}), DType::F32, {3, 2},
        {c0[0], c1[0], c0[1], c1[1], c0[2], c1[2]});
  // half_to_float and dtype keywords.
  Tensor h = T(DType::F16, {3}, {1, 2, 3});
  check(op1("aten._softmax.default", {h, I(0), Bo(true)}), DType::F32, {3}, soft({1, 2, 3}));
  check(op1("aten.softmax.int", {h, I(0), Dt(DType::F64)}), DType::F64, {3}, soft({1, 2, 3}),
        1e-14);
  check(op1("aten._softmax.default", {h, I(0), Bo(false)}), DType::F16, {3}, soft({1, 2, 3}), 1e-3);
  CHECK(op_error("aten._softmax.default", {x, I(0), Bo(true)}).find("half_to_float") !=
        std::string::npos);
  CHECK(op_error("aten.softmax.int", {L({2}, {1, 2}), I(0)}).find("not implemented") !=
        std::string::npos);
  check(op1("aten.softmax.int", {F({}, {3}), I(0)}), DType::F32, {}, {1});
  check(op1("aten.softmax.int", {F({2}, {-kInf, -kInf}), I(0)}), DType::F32, {2}, {kNaN, kNaN});
}

TEST_CASE("kernels: layer norm with population variance, affine parameters and saved stats") {
  Vals v = rand_vals(2 * 3 * 4, 31), wv = rand_vals(12, 32), bv = rand_vals(12, 33);
  Tensor x = D({2, 3, 4}, v), w = D({3, 4}, wv), b = D({3, 4}, bv);
  double eps = 1e-5;
  Vals expect, mean, rstd, expect_last;
  for (int i = 0; i < 2; ++i) {
    double m = 0, var = 0;
    for (int j = 0; j < 12; ++j) m += v[size_t(i * 12 + j)];
    m /= 12;
    for (int j = 0; j < 12; ++j) var += (v[size_t(i * 12 + j)] - m) * (v[size_t(i * 12 + j)] - m);
    var /= 12;
    for (int j = 0; j < 12; ++j)
      expect.push_back((v[size_t(i * 12 + j)] - m) / std::sqrt(var + eps) * wv[size_t(j)] +
                       bv[size_t(j)]);
    mean.push_back(m);
    rstd.push_back(1 / std::sqrt(var + eps));
  }
  check(op1("aten.layer_norm.default", {x, Is({3, 4}), w, b, Fl(eps)}), DType::F64, {2, 3, 4},
        expect, 1e-12, 1e-12);
  auto r = op("aten.native_layer_norm.default", {x, Is({3, 4}), w, b, Fl(eps)});
  REQUIRE(r.size() == 3);
  check(r[0], DType::F64, {2, 3, 4}, expect, 1e-12, 1e-12);
  check(r[1], DType::F64, {2, 1, 1}, mean, 1e-12, 1e-12);
  check(r[2], DType::F64, {2, 1, 1}, rstd, 1e-12, 1e-12);
  // Without affine parameters, over the last dim only, f32.
  for (int row = 0; row < 6; ++row) {
    double m = 0, var = 0;
    for (int j = 0; j < 4; ++j) m += double(float(v[size_t(row * 4 + j)]));
    m /= 4;
    for (int j = 0; j < 4; ++j) var += std::pow(double(float(v[size_t(row * 4 + j)])) - m, 2);
    var /= 4;
    for (int j = 0; j < 4; ++j)
      expect_last.push_back((double(float(v[size_t(row * 4 + j)])) - m) / std::sqrt(var + 0.1));
  }
  check(op1("aten.layer_norm.default", {F({2, 3, 4}, v), Is({4}), None(), None(), Fl(0.1)}),
        DType::F32, {2, 3, 4}, expect_last, 1e-5, 1e-6);
  CHECK(op_error("aten.layer_norm.default", {x, Is({4, 3})}).find("normalized_shape") !=
        std::string::npos);
  CHECK(op_error("aten.layer_norm.default", {x, Is({4}), D({3}, {1, 1, 1})}).find("weight") !=
        std::string::npos);
}

TEST_CASE("kernels: batch norm in evaluation mode and its core ATen form") {
  Vals v = rand_vals(2 * 3 * 2 * 2, 41);
  Tensor x = F({2, 3, 2, 2}, v);
  Vals rm = {0.1, -0.2, 0.3}, rv = {1.5, 0.5, 2.0}, w = {1, 2, -1}, b = {0, 0.5, 1};
  double eps = 1e-3;
  Vals h = held(x), expect;
  for (size_t i = 0; i < h.size(); ++i) {
    size_t ch = (i / 4) % 3;
    expect.push_back(
        (h[i] - double(float(rm[ch]))) / std::sqrt(double(float(rv[ch])) + eps) * w[ch] + b[ch]);
  }
  Tensor tw = F({3}, w), tb = F({3}, b), trm = F({3}, rm), trv = F({3}, rv);
  check(
      op1("aten.batch_norm.default", {x, tw, tb, trm, trv, Bo(false), Fl(0.1), Fl(eps), Bo(true)}),
      DType::F32, {2, 3, 2, 2}, expect, 1e-5, 1e-6);
  auto r = op("aten._native_batch_norm_legit_no_training.default",
              {x, tw, tb, trm, trv, Fl(0.1), Fl(eps)});
  REQUIRE(r.size() == 3);
  check(r[0], DType::F32, {2, 3, 2, 2}, expect, 1e-5, 1e-6);
  check(r[1], DType::F32, {0}, {});
  check(r[2], DType::F32, {0}, {});
  // Training mode normalises by the batch and moves the running mean towards the batch mean.
  Tensor rm2 = F({3}, rm), rv2 = F({3}, rv);
  op1("aten.batch_norm.default", {x, tw, tb, rm2, rv2, Bo(true), Fl(0.1), Fl(eps), Bo(true)});
  Vals mean(3, 0.0), moved;
  for (size_t i = 0; i < h.size(); ++i) mean[(i / 4) % 3] += h[i] / 8;
  for (size_t c = 0; c < 3; ++c) moved.push_back(0.9 * double(float(rm[c])) + 0.1 * mean[c]);
  check(rm2, DType::F32, {3}, moved, 1e-5, 1e-6);
  CHECK(op_error("aten.batch_norm.default",
                 {x, tw, tb, F({2}, {0, 0}), trv, Bo(false), Fl(0.1), Fl(eps), Bo(true)})
            .find("running_mean") != std::string::npos);
}

namespace {
// Reference matrix product of row-major [n,k] x [k,m].
Vals matmul_ref(const Vals& a, const Vals& b, int n, int k, int m) {
  Vals r(size_t(n * m), 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j)
      for (int p = 0; p < k; ++p)
        r[size_t(i * m + j)] += a[size_t(i * k + p)] * b[size_t(p * m + j)];
  return r;
}
} // namespace

TEST_CASE("kernels: mm, bmm, addmm, linear and matmul over every rank case") {
  Vals a = rand_vals(6, 51), b = rand_vals(12, 52), c = rand_vals(8, 53);
  Tensor A = D({2, 3}, a), Bm = D({3, 4}, b);
  Vals ab = matmul_ref(a, b, 2, 3, 4);
  check(op1("aten.mm.default", {A, Bm}), DType::F64, {2, 4}, ab, 1e-14, 1e-14);
  check(op1("aten.matmul.default", {A, Bm}), DType::F64, {2, 4}, ab, 1e-14, 1e-14);
  // Transposed operands.
  Tensor At = transposed(DType::F64, 2, 3, a);
  check(op1("aten.mm.default", {At, Bm}), DType::F64, {2, 4}, ab, 1e-14, 1e-14);
  // addmm: beta * self + alpha * (A @ B), with self broadcast.
  Tensor bias = D({4}, {1, 2, 3, 4});
  Vals addmm = ab;
  for (size_t i = 0; i < addmm.size(); ++i) addmm[i] = 0.5 * (1 + double(i % 4)) + 2 * ab[i];
  check(op1("aten.addmm.default", {bias, A, Bm, {"beta", Fl(0.5)}, {"alpha", I(2)}}), DType::F64,
        {2, 4}, addmm, 1e-14, 1e-14);
  // beta = 0 ignores NaN in self.
  check(op1("aten.addmm.default", {D({1}, {kNaN}), A, Bm, {"beta", I(0)}}), DType::F64, {2, 4}, ab,
        1e-14, 1e-14);
  // linear: x @ W^T + b, with 3-D input.
  Tensor W = D({4, 3}, rand_vals(12, 54));
  Vals wt(12);
  Vals wv = held(W);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) wt[size_t(j * 4 + i)] = wv[size_t(i * 3 + j)];
  Vals lin = matmul_ref(a, wt, 2, 3, 4);
  for (size_t i = 0; i < lin.size(); ++i) lin[i] += 1 + double(i % 4);
  check(op1("aten.linear.default", {D({1, 2, 3}, a), W, bias}), DType::F64, {1, 2, 4}, lin, 1e-14,
        1e-14);
  check(op1("aten.linear.default", {D({3}, {1, 0, 0}), W}), DType::F64, {4},
        {wv[0], wv[3], wv[6], wv[9]});
  // matmul rank cases: 1-D x 1-D, 1-D x 2-D, 2-D x 1-D, batched broadcast.
  check(op1("aten.matmul.default", {D({3}, {1, 2, 3}), D({3}, {4, 5, 6})}), DType::F64, {}, {32});
  check(op1("aten.matmul.default", {D({3}, {1, 2, 3}), Bm}), DType::F64, {4},
        matmul_ref({1, 2, 3}, b, 1, 3, 4), 1e-14, 1e-14);
  check(op1("aten.matmul.default", {A, D({3}, {1, 2, 3})}), DType::F64, {2},
        matmul_ref(a, {1, 2, 3}, 2, 3, 1), 1e-14, 1e-14);
  Vals x3 = rand_vals(2 * 2 * 3, 55);
  Tensor X3 = D({2, 1, 2, 3}, x3);             // batch [2, 1]
  Tensor Y3 = D({3, 3, 4}, rand_vals(36, 56)); // batch [3]
  Tensor out = op1("aten.matmul.default", {X3, Y3});
  REQUIRE(out.sizes() == Shape{2, 3, 2, 4});
  Vals yv = held(Y3);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      Vals xa(x3.begin() + i * 6, x3.begin() + i * 6 + 6),
          yb(yv.begin() + j * 12, yv.begin() + j * 12 + 12);
      Vals r = matmul_ref(xa, yb, 2, 3, 4);
      for (int e = 0; e < 8; ++e)
        CHECK(out.at({i, j, e / 4, e % 4}) == doctest::Approx(r[size_t(e)]).epsilon(1e-13));
    }
  Tensor v1 = op1("aten.matmul.default", {D({3}, {1, 1, 1}), Y3});
  CHECK(v1.sizes() == Shape{3, 4});
  // bmm with an expanded batch operand.
  Tensor bb = D({1, 3, 4}, b).as_strided({2, 3, 4}, {0, 4, 1}, 0);
  Tensor bmm = op1("aten.bmm.default",
                   {D({2, 2, 3}, {a[0], a[1], a[2], a[3], a[4], a[5], 1, 0, 0, 0, 1, 0}), bb});
  check(
      bmm, DType::F64, {2, 2, 4},
      [&] {
        Vals r = ab;
        Vals r2 = matmul_ref({1, 0, 0, 0, 1, 0}, b, 2, 3, 4);
        r.insert(r.end(), r2.begin(), r2.end());
        return r;
      }(),
      1e-14, 1e-14);
  // f32 accumulation happens in double: a long dot product of alternating large terms.
  Vals big, ones;
  for (int i = 0; i < 999; ++i) {
    big.push_back(i % 3 == 0 ? 1e8 : i % 3 == 1 ? 1 : -1e8);
    ones.push_back(1);
  }
  check(op1("aten.mm.default", {F({1, 999}, big), F({999, 1}, ones)}), DType::F32, {1, 1}, {333});
  // Errors.
  CHECK(op_error("aten.mm.default", {A, A}).find("cannot be multiplied") != std::string::npos);
  CHECK(op_error("aten.mm.default", {A, F({3, 4}, b)}).find("same dtype") != std::string::npos);
  CHECK(op_error("aten.bmm.default", {A, Bm}).find("3-D") != std::string::npos);
  CHECK(op_error("aten.matmul.default", {D({}, {1}), A}).find("at least 1D") != std::string::npos);
  CHECK(op_error("aten.matmul.default", {D({2, 2, 3}, x3), D({3, 3, 4}, rand_vals(36, 1))})
            .find("broadcast") != std::string::npos);
}

namespace {
// Direct 2-D convolution written out: x [N,C,H,W], w [O,C/g,KH,KW].
Vals conv_ref(const Vals& x, Shape xs, const Vals& w, Shape ws, const Vals& bias, int s0, int s1,
              int p0, int p1, int d0, int d1, int groups, Shape* out_shape) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = (H + 2 * p0 - d0 * (KH - 1) - 1) / s0 + 1,
          OW = (W + 2 * p1 - d1 * (KW - 1) - 1) / s1 + 1;
  *out_shape = {N, O, OH, OW};
  Vals r;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias.empty() ? 0 : bias[size_t(o)];
          int64_t g = o / (O / groups);
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * s0 - p0 + kh * d0, iw = ow * s1 - p1 + kw * d1;
                if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
                acc += x[size_t(((n * C + g * CG + c) * H + ih) * W + iw)] *
                       w[size_t(((o * CG + c) * KH + kh) * KW + kw)];
              }
          r.push_back(acc);
        }
  return r;
}
} // namespace

TEST_CASE("kernels: conv2d and convolution with stride, padding, dilation and groups") {
  Vals x = rand_vals(2 * 4 * 5 * 6, 61), w = rand_vals(6 * 2 * 3 * 2, 62), b = rand_vals(6, 63);
  Tensor X = D({2, 4, 5, 6}, x), W = D({6, 2, 3, 2}, w), Bb = D({6}, b);
  Shape os;
  Vals expect = conv_ref(x, {2, 4, 5, 6}, w, {6, 2, 3, 2}, b, 2, 1, 1, 0, 1, 2, 2, &os);
  check(op1("aten.conv2d.default", {X, W, Bb, Is({2, 1}), Is({1, 0}), Is({1, 2}), I(2)}),
        DType::F64, os, expect, 1e-13, 1e-13);
  check(op1("aten.convolution.default",
            {X, W, Bb, Is({2, 1}), Is({1, 0}), Is({1, 2}), Bo(false), Is({0, 0}), I(2)}),
        DType::F64, os, expect, 1e-13, 1e-13);
  // Defaults, no bias, single int parameters broadcast to both dims.
  Tensor W1 = D({3, 4, 3, 3}, rand_vals(108, 64));
  Vals e2 = conv_ref(x, {2, 4, 5, 6}, held(W1), {3, 4, 3, 3}, {}, 1, 1, 1, 1, 1, 1, 1, &os);
  check(op1("aten.conv2d.default", {X, W1, None(), Is({1}), Is({1})}), DType::F64, os, e2, 1e-13,
        1e-13);
  // Unbatched input.
  Tensor x0 = D({4, 5, 6}, Vals(x.begin(), x.begin() + 120));
  Vals e3 = conv_ref(Vals(x.begin(), x.begin() + 120), {1, 4, 5, 6}, held(W1), {3, 4, 3, 3}, {}, 1,
                     1, 0, 0, 1, 1, 1, &os);
  check(op1("aten.conv2d.default", {x0, W1}), DType::F64, {3, 3, 4}, e3, 1e-13, 1e-13);
  // 1-D convolution through convolution.
  Tensor x1 = D({1, 2, 5}, {1, 2, 3, 4, 5, 0, 1, 0, 1, 0});
  Tensor w1 = D({1, 2, 2}, {1, -1, 2, 0});
  check(op1("aten.convolution.default",
            {x1, w1, None(), Is({1}), Is({0}), Is({1}), Bo(false), Is({0}), I(1)}),
        DType::F64, {1, 1, 4}, {-1, 1, -1, 1});
  // Transposed convolution (values from torch 1.13): stride, padding, output_padding, groups.
  check(op1("aten.convolution.default",
            {D({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), D({2, 1, 3}, {1, -1, 2, 0.5, 2, 1}),
             D({1}, {0.5}), Is({2}), Is({1}), Is({1}), Bo(true), Is({1}), I(1)}),
        DType::F64, {1, 1, 8}, {9.5, 12.5, 10.5, 17, 11.5, 21.5, 12.5, 16.5});
  check(op1("aten.convolution.default",
            {D({1, 2, 2, 1}, {1, 2, 3, 4}), D({2, 1, 2, 1}, {1, 2, 3, -1}), None(), Is({1}),
             Is({0}), Is({1}), Bo(true), Is({0}), I(2)}),
        DType::F64, {1, 2, 3, 1}, {1, 4, 4, 9, 9, -4});
  CHECK(op_error("aten.convolution.default",
                 {X, W, Bb, Is({1}), Is({0}), Is({1}), Bo(true), Is({0}), I(2)})
            .find("does not match input") != std::string::npos);
  CHECK(op_error("aten.conv2d.default", {X, W}).find("channels") != std::string::npos);
  CHECK(op_error("aten.conv2d.default", {D({1, 4, 2, 2}, Vals(16, 1)), W1}).find("too small") !=
        std::string::npos);
}

TEST_CASE("kernels: max_pool2d with ceil_mode, padding, dilation and flat indices") {
  // 1 x 1 x 4 x 5 plane with distinct values.
  Vals v;
  for (int i = 0; i < 20; ++i) v.push_back(double((i * 7) % 20));
  Tensor x = F({1, 1, 4, 5}, v);
  auto ref = [&](int k, int s, int p, int d, bool ceil, Shape* shape, Vals* idx) {
    auto outsz = [&](int in) {
      int num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
      int o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
      if (ceil && (o - 1) * s >= in + p) --o;
      return o;
    };
    int OH = outsz(4), OW = outsz(5);
    *shape = {1, 1, OH, OW};
    Vals r;
    idx->clear();
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow) {
        double best = -kInf;
        int bi = -1;
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) {
            int h = oh * s - p + i * d, w = ow * s - p + j * d;
            if (h < 0 || w < 0 || h >= 4 || w >= 5) continue;
            if (v[size_t(h * 5 + w)] > best) {
              best = v[size_t(h * 5 + w)];
              bi = h * 5 + w;
            }
          }
        r.push_back(best);
        idx->push_back(bi);
      }
    return r;
  };
  struct Case {
    int k, s, p, d;
    bool ceil;
  };
  for (Case cs : {Case{2, 2, 0, 1, false}, Case{2, 2, 0, 1, true}, Case{3, 2, 1, 1, true},
                  Case{2, 1, 1, 2, false}, Case{3, 3, 1, 1, true}}) {
    CAPTURE(cs.k);
    CAPTURE(cs.ceil);
    Shape shape;
    Vals idx;
    Vals expect = ref(cs.k, cs.s, cs.p, cs.d, cs.ceil, &shape, &idx);
    auto r = op("aten.max_pool2d_with_indices.default",
                {x, Is({cs.k}), Is({cs.s}), Is({cs.p}), Is({cs.d}), Bo(cs.ceil)});
    REQUIRE(r.size() == 2);
    check(r[0], DType::F32, shape, expect);
    check(r[1], DType::I64, shape, idx);
    check(op1("aten.max_pool2d.default",
              {x, Is({cs.k, cs.k}), Is({cs.s, cs.s}), Is({cs.p}), Is({cs.d}), Bo(cs.ceil)}),
          DType::F32, shape, expect);
  }
  // Default stride = kernel size; 3-D input; NaN wins.
  check(op1("aten.max_pool2d.default", {F({1, 2, 2}, {1, kNaN, 3, 2}), Is({2})}), DType::F32,
        {1, 1, 1}, {kNaN});
  CHECK(op_error("aten.max_pool2d.default", {x, Is({2}), Is({2}), Is({2})}).find("half") !=
        std::string::npos);
}

TEST_CASE("kernels: adaptive_avg_pool2d uses PyTorch's start/end windows") {
  Vals v = rand_vals(5 * 7, 71);
  Tensor x = D({1, 1, 5, 7}, v);
  Vals expect;
  int OH = 3, OW = 4;
  for (int oh = 0; oh < OH; ++oh)
    for (int ow = 0; ow < OW; ++ow) {
      int h0 = (oh * 5) / OH, h1 = int(std::ceil((oh + 1) * 5.0 / OH));
      int w0 = (ow * 7) / OW, w1 = int(std::ceil((ow + 1) * 7.0 / OW));
      double s = 0;
      for (int h = h0; h < h1; ++h)
        for (int w = w0; w < w1; ++w) s += v[size_t(h * 7 + w)];
      expect.push_back(s / ((h1 - h0) * (w1 - w0)));
    }
  check(op1("aten.adaptive_avg_pool2d.default", {x, Is({3, 4})}), DType::F64, {1, 1, 3, 4}, expect,
        1e-14, 1e-14);
  check(
      op1("aten.adaptive_avg_pool2d.default", {F({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), Is({1, 1})}),
      DType::F32, {2, 1, 1}, {2.5, 6.5});
  CHECK(op_error("aten.adaptive_avg_pool2d.default", {F({4}, {1, 2, 3, 4}), Is({1, 1})})
            .find("3-D or 4-D") != std::string::npos);
}

namespace {
// Attention for one head: q [L,E], k [S,E], v [S,Ev] with an additive mask [L,S].
Vals attention_ref(const Vals& q, const Vals& k, const Vals& v, int L, int S, int E, int Ev,
                   const Vals& mask, double scale) {
  Vals out;
  for (int i = 0; i < L; ++i) {
    Vals s(static_cast<size_t>(S));
    double m = -kInf;
    for (int j = 0; j < S; ++j) {
      double d = 0;
      for (int e = 0; e < E; ++e) d += q[size_t(i * E + e)] * k[size_t(j * E + e)];
      s[size_t(j)] = d * scale + (mask.empty() ? 0 : mask[size_t(i * S + j)]);
      m = std::max(m, s[size_t(j)]);
    }
    double z = 0;
    for (double x : s) z += std::exp(x - m);
    for (int f = 0; f < Ev; ++f) {
      double acc = 0;
      for (int j = 0; j < S; ++j)
        acc += (m == -kInf ? 0 : std::exp(s[size_t(j)] - m) / z) * v[size_t(j * Ev + f)];
      out.push_back(acc);
    }
  }
  return out;
}
} // namespace

TEST_CASE("kernels: scaled_dot_product_attention with masks, causal and scale") {
  int L = 3, S = 4, E = 2, Ev = 3;
  Vals q = rand_vals(size_t(L * E), 81), k = rand_vals(size_t(S * E), 82),
       v = rand_vals(size_t(S * Ev), 83);
  Tensor Q = D({1, 1, 3, 2}, q), K = D({1, 1, 4, 2}, k), V = D({1, 1, 4, 3}, v);
  double sc = 1 / std::sqrt(2.0);
  check(op1("aten.scaled_dot_product_attention.default", {Q, K, V}), DType::F64, {1, 1, 3, 3},
        attention_ref(q, k, v, L, S, E, Ev, {}, sc), 1e-13, 1e-13);
  Vals causal(static_cast<size_t>(L * S));
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < S; ++j) causal[size_t(i * S + j)] = j > i ? -kInf : 0;
  check(op1("aten.scaled_dot_product_attention.default", {Q, K, V, {"is_causal", Bo(true)}}),
        DType::F64, {1, 1, 3, 3}, attention_ref(q, k, v, L, S, E, Ev, causal, sc), 1e-13, 1e-13);
  Vals bm = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1}; // row 1 fully masked -> zeros
  Vals add(bm.size());
  for (size_t i = 0; i < bm.size(); ++i) add[i] = bm[i] != 0 ? 0 : -kInf;
  Tensor out = op1("aten.scaled_dot_product_attention.default", {Q, K, V, B({3, 4}, bm)});
  check(out, DType::F64, {1, 1, 3, 3}, attention_ref(q, k, v, L, S, E, Ev, add, sc), 1e-13, 1e-13);
  CHECK(out.at({0, 0, 1, 2}) == 0);
  Vals fm = rand_vals(12, 84);
  check(op1("aten.scaled_dot_product_attention.default",
            {Q, K, V, D({1, 3, 4}, fm), {"scale", Fl(0.3)}}),
        DType::F64, {1, 1, 3, 3}, attention_ref(q, k, v, L, S, E, Ev, fm, 0.3), 1e-13, 1e-13);
  // Batch broadcasting of key/value and f32 results.
  Tensor out2 = op1("aten.scaled_dot_product_attention.default",
                    {F({2, 3, 2}, rand_vals(12, 85)), F({1, 4, 2}, k), F({1, 4, 3}, v)});
  CHECK(out2.sizes() == Shape{2, 3, 3});
  CHECK(op_error("aten.scaled_dot_product_attention.default", {Q, K, V, None(), Fl(0.1)})
            .find("dropout_p") != std::string::npos);
  CHECK(op_error("aten.scaled_dot_product_attention.default",
                 {Q, K, V, B({3, 4}, bm), Fl(0), Bo(true)})
            .find("is_causal") != std::string::npos);
  // Grouped-query attention: 4 query heads share 2 key/value heads (heads 0,1 -> 0; 2,3 -> 1).
  Vals q4 = rand_vals(24, 1), k2 = rand_vals(16, 2), v2 = rand_vals(24, 3);
  Tensor gqa = op1(
      "aten.scaled_dot_product_attention.default",
      {D({1, 4, 3, 2}, q4), D({1, 2, 4, 2}, k2), D({1, 2, 4, 3}, v2), {"enable_gqa", Bo(true)}});
  REQUIRE(gqa.sizes() == Shape{1, 4, 3, 3});
  for (int h = 0; h < 4; ++h) {
    int kv = h / 2;
    Vals ref = attention_ref(Vals(q4.begin() + h * 6, q4.begin() + h * 6 + 6),
                             Vals(k2.begin() + kv * 8, k2.begin() + kv * 8 + 8),
                             Vals(v2.begin() + kv * 12, v2.begin() + kv * 12 + 12), 3, 4, 2, 3, {},
                             1 / std::sqrt(2.0));
    for (int e = 0; e < 9; ++e)
      CHECK(gqa.at({0, h, e / 3, e % 3}) == doctest::Approx(ref[size_t(e)]).epsilon(1e-12));
  }
  CHECK(op_error("aten.scaled_dot_product_attention.default", {D({1, 3, 3, 2}, rand_vals(18, 1)),
                                                               D({1, 2, 4, 2}, k2),
                                                               D({1, 2, 4, 3}, v2),
                                                               {"enable_gqa", Bo(true)}})
            .find("must divide") != std::string::npos);
  check(op1("aten.scaled_dot_product_attention.default", {Q, K, V, {"enable_gqa", Bo(true)}}),
        DType::F64, {1, 1, 3, 3}, attention_ref(q, k, v, L, S, E, Ev, {}, sc), 1e-13, 1e-13);
}

TEST_CASE("kernels: embedding, gather, index_select and scatter_add with range checks") {
  Tensor w = F({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  check(op1("aten.embedding.default", {w, L({2, 2}, {3, 0, 1, 1})}), DType::F32, {2, 2, 2},
        {30, 31, 0, 1, 10, 11, 10, 11});
  check(op1("aten.embedding.default", {w, T(DType::I32, {}, {2})}), DType::F32, {2}, {20, 21});
  CHECK(op_error("aten.embedding.default", {w, L({1}, {4})}).find("index 4 is out of range") !=
        std::string::npos);
  CHECK(op_error("aten.embedding.default", {w, L({1}, {-1})}).find("out of range") !=
        std::string::npos);
  CHECK(op_error("aten.embedding.default", {w, F({1}, {1})}).find("i64") != std::string::npos);
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  check(op1("aten.gather.default", {x, I(1), L({2, 2}, {2, 0, 1, 1})}), DType::F32, {2, 2},
        {3, 1, 5, 5});
  check(op1("aten.gather.default", {x, I(0), L({1, 3}, {1, 0, 1})}), DType::F32, {1, 3}, {4, 2, 6});
  check(op1("aten.gather.default",
            {transposed(DType::F32, 3, 2, {1, 4, 2, 5, 3, 6}), I(-1), L({3, 1}, {1, 0, 1})}),
        DType::F32, {3, 1}, {4, 2, 6});
  CHECK(op_error("aten.gather.default", {x, I(1), L({1, 1}, {3})}).find("out of bounds") !=
        std::string::npos);
  // int32 indices are taken, as PyTorch 2 takes them; float ones are not.
  check(op1("aten.gather.default", {x, I(1), T(DType::I32, {1, 1}, {2})}), DType::F32, {1, 1}, {3});
  CHECK(!op_error("aten.gather.default", {x, I(1), F({1, 1}, {0})}).empty());
  check(op1("aten.index_select.default", {x, I(1), L({3}, {2, 2, 0})}), DType::F32, {2, 3},
        {3, 3, 1, 6, 6, 4});
  check(op1("aten.index_select.default", {x, I(-2), T(DType::I32, {1}, {1})}), DType::F32, {1, 3},
        {4, 5, 6});
  check(op1("aten.index_select.default", {x, I(0), L({0}, {})}), DType::F32, {0, 3}, {});
  CHECK(op_error("aten.index_select.default", {x, I(0), L({1}, {2})}).find("out of range") !=
        std::string::npos);
  check(op1("aten.scatter_add.default", {F({2, 3}, {0, 0, 0, 1, 1, 1}), I(1),
                                         L({2, 2}, {2, 2, 0, 1}), F({2, 2}, {5, 6, 7, 8})}),
        DType::F32, {2, 3}, {0, 0, 11, 8, 9, 1});
  CHECK(op_error("aten.scatter_add.default", {x, I(0), L({1, 1}, {5}), F({1, 1}, {1})})
            .find("out of bounds") != std::string::npos);
}

TEST_CASE("kernels: advanced indexing with None entries, masks and negative indices") {
  Vals v;
  for (int i = 0; i < 24; ++i) v.push_back(i);
  Tensor x = F({2, 3, 4}, v); // x[i][j][k] = 12i + 4j + k
  // x[[1, 0]] -> [2, 3, 4]
  Tensor r = op1("aten.index.Tensor", {x, std::vector<Tensor>{L({2}, {1, 0})}});
  CHECK(r.sizes() == Shape{2, 3, 4});
  CHECK(r.at({0, 2, 3}) == 23);
  CHECK(r.at({1, 0, 1}) == 1);
  // x[:, [2, -1]] -> [2, 2, 4]
  r = op1("aten.index.Tensor", {x, std::vector<Tensor>{Tensor(), L({2}, {2, -1})}});
  CHECK(r.sizes() == Shape{2, 2, 4});
  CHECK(r.at({1, 0, 3}) == 12 + 8 + 3);
  CHECK(r.at({1, 1, 0}) == 12 + 8);
  // Adjacent index tensors broadcast together: x[:, [[0], [2]], [1, 3]] -> [2, 2, 2]
  r = op1("aten.index.Tensor",
          {x, std::vector<Tensor>{Tensor(), L({2, 1}, {0, 2}), L({2}, {1, 3})}});
  CHECK(r.sizes() == Shape{2, 2, 2});
  CHECK(r.at({1, 1, 0}) == 12 + 8 + 1);
  CHECK(r.at({0, 0, 1}) == 3);
  // Separated by None: the broadcast dims go first: x[[0, 1], :, [3, 0]] -> [2, 3]
  r = op1("aten.index.Tensor", {x, std::vector<Tensor>{L({2}, {0, 1}), Tensor(), L({2}, {3, 0})}});
  check(r, DType::F32, {2, 3}, {3, 7, 11, 12, 16, 20});
  // Boolean mask over the first two dims.
  Tensor m = B({2, 3}, {1, 0, 0, 0, 0, 1});
  r = op1("aten.index.Tensor", {x, std::vector<Tensor>{m}});
  check(r, DType::F32, {2, 4}, {0, 1, 2, 3, 20, 21, 22, 23});
  CHECK(
      op_error("aten.index.Tensor", {x, std::vector<Tensor>{L({1}, {2})}}).find("out of bounds") !=
      std::string::npos);
  CHECK(op_error("aten.index.Tensor", {x, std::vector<Tensor>{B({3}, {1, 0, 1})}}).find("mask") !=
        std::string::npos);
  CHECK(op_error("aten.index.Tensor", {x, std::vector<Tensor>{F({1}, {0})}}).find("indices") !=
        std::string::npos);
}

TEST_CASE("kernels: cat, roll and constant padding") {
  Tensor a = F({2, 2}, {1, 2, 3, 4});
  check(op1("aten.cat.default", {std::vector<Tensor>{a, L({1, 2}, {5, 6})}}), DType::F32, {3, 2},
        {1, 2, 3, 4, 5, 6});
  check(op1("aten.cat.default",
            {std::vector<Tensor>{a, transposed(DType::F32, 2, 1, {7, 8}), F({0}, {})}, I(-1)}),
        DType::F32, {2, 3}, {1, 2, 7, 3, 4, 8});
  check(op1("aten.cat.default",
            {std::vector<Tensor>{T(DType::I32, {1}, {1}), T(DType::F16, {1}, {0.5})}}),
        DType::F16, {2}, {1, 0.5});
  CHECK(op_error("aten.cat.default", {std::vector<Tensor>{a, F({1, 3}, {1, 2, 3})}})
            .find("sizes of tensors must match") != std::string::npos);
  CHECK(op_error("aten.cat.default", {std::vector<Tensor>{a, F({2}, {1, 2})}})
            .find("same number of dimensions") != std::string::npos);
  Tensor r = F({2, 3}, {1, 2, 3, 4, 5, 6});
  check(op1("aten.roll.default", {r, Is({1})}), DType::F32, {2, 3}, {6, 1, 2, 3, 4, 5});
  check(op1("aten.roll.default", {r, Is({-1}), Is({1})}), DType::F32, {2, 3}, {2, 3, 1, 5, 6, 4});
  check(op1("aten.roll.default", {r, Is({1, 4}), Is({0, 1})}), DType::F32, {2, 3},
        {6, 4, 5, 3, 1, 2});
  CHECK(op_error("aten.roll.default", {r, Is({1, 2})}).find("shifts") != std::string::npos);
  // Padding: last dim (1, 2), second-to-last (0, -1) crops one row.
  Tensor p = op1("aten.constant_pad_nd.default", {r, Is({1, 2, 0, -1}), Fl(9)});
  check(p, DType::F32, {1, 6}, {9, 1, 2, 3, 9, 9});
  check(op1("aten.constant_pad_nd.default", {L({2}, {1, 2}), Is({1, 0})}), DType::I64, {3},
        {0, 1, 2});
  check(op1("aten.pad.default", {r, Is({0, 0, 1, 0}), S("constant"), Fl(-1)}), DType::F32, {3, 3},
        {-1, -1, -1, 1, 2, 3, 4, 5, 6});
  check(op1("aten.pad.default", {F({2}, {1, 2}), Is({1, 1})}), DType::F32, {4}, {0, 1, 2, 0});
  // Reflect, replicate and circular modes (PyTorch: F.pad(x, (2, 1), mode)).
  Tensor row = F({1, 3}, {1, 2, 3});
  check(op1("aten.pad.default", {row, Is({2, 1}), S("reflect")}), DType::F32, {1, 6},
        {3, 2, 1, 2, 3, 2});
  check(op1("aten.pad.default", {row, Is({2, 1}), S("replicate")}), DType::F32, {1, 6},
        {1, 1, 1, 2, 3, 3});
  check(op1("aten.pad.default", {row, Is({2, 1}), S("circular")}), DType::F32, {1, 6},
        {2, 3, 1, 2, 3, 1});
  CHECK(op_error("aten.pad.default", {r, Is({1, 1}), S("bogus")}) ==
        "unrecognised padding mode 'bogus'");
  CHECK(op_error("aten.constant_pad_nd.default", {r, Is({-2, -2})}).find("negative output size") !=
        std::string::npos);
  CHECK(op_error("aten.constant_pad_nd.default", {r, Is({1})}).find("divisible by 2") !=
        std::string::npos);
}

TEST_CASE("kernels: computeStride decides when a reshape is a view") {
  Shape out;
  CHECK(compute_view_strides({2, 3, 4}, {12, 4, 1}, {6, 4}, &out));
  CHECK(out == Shape{4, 1});
  CHECK(compute_view_strides({2, 3}, {1, 2}, {2, 3, 1}, &out)); // transposed, adding a size-1 dim
  CHECK(out == Shape{1, 2, 2});
  CHECK_FALSE(compute_view_strides({2, 3}, {1, 2}, {6}, &out));
  CHECK(compute_view_strides({4, 1, 3}, {3, 100, 1}, {2, 2, 3}, &out)); // size-1 dims are free
  CHECK(out == Shape{6, 3, 1});
  CHECK(compute_view_strides({}, {}, {1, 1}, &out));
  CHECK(out == Shape{1, 1});
  CHECK(compute_view_strides({0, 3}, {3, 1}, {3, 0}, &out));
  CHECK(compute_view_strides({2, 2, 3}, {0, 3, 1}, {2, 6}, &out)); // expanded outer dim
  CHECK(out == Shape{0, 1});
}

TEST_CASE("kernels: view ops share storage and compute PyTorch's strides") {
  Vals v;
  for (int i = 0; i < 24; ++i) v.push_back(i);
  Tensor x = F({2, 3, 4}, v);
  Tensor y = op1("aten.view.default", {x, Is({6, -1})});
  CHECK(y.storage() == x.storage());
  CHECK(y.sizes() == Shape{6, 4});
  CHECK(op_error("aten.view.default", {x, Is({5, -1})}).find("invalid for input of size 24") !=
        std::string::npos);
  CHECK(op_error("aten.view.default", {x, Is({-1, -1})}).find("only one dimension") !=
        std::string::npos);
  Tensor t = op1("aten.transpose.int", {x, I(0), I(-1)});
  CHECK(t.storage() == x.storage());
  CHECK(t.sizes() == Shape{4, 3, 2});
  CHECK(t.strides() == Shape{1, 4, 12});
  CHECK(op_error("aten.view.default", {t, Is({24})}).find("reshape") != std::string::npos);
  Tensor rs = op1("aten.reshape.default", {t, Is({24})});
  CHECK(rs.storage() != x.storage()); // not viewable: a copy
  CHECK(rs.at({1}) == 12);
  Tensor rv = op1("aten.reshape.default", {x, Is({4, 6})});
  CHECK(rv.storage() == x.storage());
  Tensor p = op1("aten.permute.default", {x, Is({2, 0, 1})});
  CHECK(p.sizes() == Shape{4, 2, 3});
  CHECK(p.at({3, 1, 2}) == 12 + 8 + 3);
  CHECK(op_error("aten.permute.default", {x, Is({0, 0, 1})}).find("duplicate") !=
        std::string::npos);
  Tensor e = op1("aten.expand.default", {F({3, 1}, {1, 2, 3}), Is({2, -1, 4})});
  CHECK(e.sizes() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(e.at({1, 2, 3}) == 3);
  CHECK(op_error("aten.expand.default", {F({3}, {1, 2, 3}), Is({4})}).find("must match") !=
        std::string::npos);
  CHECK(op_error("aten.expand.default", {F({3}, {1, 2, 3}), Is({-1, 3})}).find("leading") !=
        std::string::npos);
  Tensor s =
      op1("aten.slice.Tensor", {x, I(2), I(1), I(std::numeric_limits<int64_t>::max()), I(2)});
  CHECK(s.sizes() == Shape{2, 3, 2});
  CHECK(s.storage_offset() == 1);
  CHECK(s.at({1, 2, 1}) == 12 + 8 + 3);
  check(op1("aten.slice.Tensor", {F({5}, {0, 1, 2, 3, 4}), I(0), I(-3), I(-1)}), DType::F32, {2},
        {2, 3});
  check(op1("aten.slice.Tensor", {F({5}, {0, 1, 2, 3, 4}), I(0), I(4), I(2)}), DType::F32, {0}, {});
  check(op1("aten.slice.Tensor", {F({3}, {0, 1, 2}), I(0), None(), None()}), DType::F32, {3},
        {0, 1, 2});
  CHECK(op_error("aten.slice.Tensor", {x, I(0), I(0), I(1), I(0)}).find("positive") !=
        std::string::npos);
  Tensor sel = op1("aten.select.int", {x, I(1), I(-1)});
  CHECK(sel.sizes() == Shape{2, 4});
  CHECK(sel.at({1, 0}) == 12 + 8);
  CHECK(op_error("aten.select.int", {x, I(1), I(3)}).find("out of range") != std::string::npos);
  Tensor as = op1("aten.as_strided.default", {x, Is({2, 2}), Is({1, 12}), I(5)});
  check(as, DType::F32, {2, 2}, {5, 17, 6, 18});
  check(op1("aten.as_strided.default", {sel, Is({2}), Is({1})}), DType::F32, {2}, {8, 9});
  CHECK(op_error("aten.as_strided.default", {x, Is({2}), Is({20}), I(5)}).find("storage") !=
        std::string::npos);
  Tensor u = op1("aten.unsqueeze.default", {x, I(-1)});
  CHECK(u.sizes() == Shape{2, 3, 4, 1});
  CHECK(u.strides() == Shape{12, 4, 1, 1});
  CHECK(op1("aten.unsqueeze.default", {x, I(1)}).strides() == Shape{12, 12, 4, 1});
  CHECK(op1("aten.unsqueeze.default", {F({}, {1}), I(0)}).sizes() == Shape{1});
  Tensor q = F({1, 3, 1}, {1, 2, 3});
  CHECK(op1("aten.squeeze.dim", {q, I(0)}).sizes() == Shape{3, 1});
  CHECK(op1("aten.squeeze.dim", {q, I(1)}).sizes() == Shape{1, 3, 1});
  CHECK(op1("aten.squeeze.dims", {q, Is({0, -1})}).sizes() == Shape{3});
  CHECK(op1("aten.squeeze.dims", {F({}, {1}), Is({0})}).sizes() == Shape{});
  CHECK(op1("aten.alias.default", {x}).storage() == x.storage());
  auto parts = op("aten.split.Tensor", {x, I(3), I(2)});
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].sizes() == Shape{2, 3, 3});
  CHECK(parts[1].sizes() == Shape{2, 3, 1});
  CHECK(parts[1].at({0, 0, 0}) == 3);
  CHECK(parts[1].storage() == x.storage());
  auto ws = op("aten.split_with_sizes.default", {x, Is({1, 2}), I(1)});
  REQUIRE(ws.size() == 2);
  CHECK(ws[1].sizes() == Shape{2, 2, 4});
  CHECK(ws[1].at({0, 0, 0}) == 4);
  CHECK(op_error("aten.split_with_sizes.default", {x, Is({1, 1}), I(1)}).find("sum exactly") !=
        std::string::npos);
  Tensor f = op1("aten.flatten.using_ints", {x, I(1)});
  CHECK(f.sizes() == Shape{2, 12});
  CHECK(f.storage() == x.storage());
  CHECK(op1("aten.flatten.using_ints", {F({}, {3})}).sizes() == Shape{1});
  Tensor ft = op1("aten.flatten.using_ints", {t});
  CHECK(ft.storage() != x.storage());
  CHECK(ft.at({1}) == 12);
  Tensor uf = op1("aten.unflatten.int", {x, I(-1), Is({2, -1})});
  CHECK(uf.sizes() == Shape{2, 3, 2, 2});
  CHECK(uf.storage() == x.storage());
  CHECK(op_error("aten.unflatten.int", {x, I(2), Is({3, -1})}).find("invalid") !=
        std::string::npos);
  CHECK(op1("aten.contiguous.default", {x}).storage() == x.storage());
  Tensor ct = op1("aten.contiguous.default", {t});
  CHECK(ct.storage() != x.storage());
  CHECK(ct.is_contiguous());
  CHECK(ct.to_vector() == t.to_vector());
}

TEST_CASE("kernels: copies, conversions and slice_scatter") {
  Tensor x = F({2, 2}, {1.5, -2.5, 3, 4});
  Tensor c = op1("aten.clone.default", {x});
  CHECK(c.storage() != x.storage());
  CHECK(c.to_vector() == x.to_vector());
  check(op1("aten._to_copy.default", {x, {"dtype", Dt(DType::I32)}}), DType::I32, {2, 2},
        {1, -2, 3, 4});
  check(op1("aten._to_copy.default", {x}), DType::F32, {2, 2}, {1.5, -2.5, 3, 4});
  CHECK(op1("aten.to.dtype", {x, Dt(DType::F32)}).storage() == x.storage());
  CHECK(op1("aten.to.dtype", {x, Dt(DType::F32), Bo(false), Bo(true)}).storage() != x.storage());
  check(op1("aten.to.dtype", {x, Dt(DType::BF16)}), DType::BF16, {2, 2}, {1.5, -2.5, 3, 4});
  check(op1("aten.to.dtype", {x, Dt(DType::Bool)}), DType::Bool, {2, 2}, {1, 1, 1, 1});
  check(op1("aten.copy.default", {x, L({2}, {7, 8})}), DType::F32, {2, 2}, {7, 8, 7, 8});
  Tensor lf = op1("aten.lift_fresh_copy.default", {x});
  CHECK(lf.storage() != x.storage());
  check(lf, DType::F32, {2, 2}, {1.5, -2.5, 3, 4});
  check(op1("aten.slice_scatter.default", {F({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}),
                                           F({2, 2}, {1, 2, 3, 4}), I(1), I(1), None(), I(2)}),
        DType::F32, {2, 4}, {0, 1, 0, 2, 0, 3, 0, 4});
  CHECK(op_error("aten.slice_scatter.default",
                 {F({4}, {0, 0, 0, 0}), F({3}, {1, 2, 3}), I(0), I(0), I(2)})
            .find("slice") != std::string::npos);
}

TEST_CASE("kernels: in-place ops mutate their input's storage and return it") {
  Tensor x = F({4}, {-1, 2, -3, 4});
  auto r = op("aten.relu_.default", {x});
  REQUIRE(r.size() == 1);
  CHECK(r[0].storage() == x.storage());
  CHECK(x.to_vector() == Vals{0, 2, 0, 4});
  // Through a view: only the viewed elements change.
  Tensor base = F({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor col = base.as_strided({2}, {3}, 1);
  op("aten.add_.Tensor", {col, F({}, {10}), {"alpha", I(2)}});
  CHECK(base.to_vector() == Vals{1, 22, 3, 4, 25, 6});
  // Aliasing operands: x += x^T computes from the old values.
  Tensor sq = F({2, 2}, {1, 2, 3, 4});
  op("aten.add_.Tensor", {sq, sq.as_strided({2, 2}, {1, 2}, 0)});
  CHECK(sq.to_vector() == Vals{2, 5, 5, 8});
  Tensor s = D({2}, {-1, 1});
  op("aten.silu_.default", {s});
  CHECK(s.to_vector()[1] == doctest::Approx(1 / (1 + std::exp(-1.0))));
  Tensor h = D({2}, {-4, 1});
  op("aten.hardswish_.default", {h});
  CHECK(h.to_vector() == Vals{0, 1 * 4.0 / 6});
  Tensor f = L({3}, {1, 2, 3});
  op("aten.fill_.Scalar", {f, I(7)});
  CHECK(f.to_vector() == Vals{7, 7, 7});
  op("aten.fill_.Tensor", {f, F({}, {2.9})});
  CHECK(f.to_vector() == Vals{2, 2, 2});
  CHECK(op_error("aten.fill_.Tensor", {f, F({1}, {2})}).find("0-dimension") != std::string::npos);
  CHECK(op_error("aten.add_.Tensor", {L({2}, {1, 2}), F({2}, {0.5, 0.5})}).find("can't be cast") !=
        std::string::npos);
  CHECK(op_error("aten.add_.Tensor", {F({2}, {1, 2}), F({2, 2}, {1, 1, 1, 1})})
            .find("doesn't match") != std::string::npos);
}

// In-place ops with no kernel of their own (mul_, masked_fill_, pow_, ...) run their functional
// op and copy the result into self, with TensorIterator's checks on the written tensor.
TEST_CASE("kernels: in-place ops computed through their functional op") {
  Tensor base = F({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = base.as_strided({3}, {1}, 3);
  auto r = op("aten.mul_.Tensor", {row, F({3}, {2, 3, 4})});
  REQUIRE(r.size() == 1);
  CHECK(r[0].storage() == base.storage());
  CHECK(base.to_vector() == Vals{1, 2, 3, 8, 15, 24});
  // In float64 mode (--check-accuracy's reference) too: the caller's float64 operand is written.
  Tensor based = D({2, 3}, {1, 2, 3, 4, 5, 6});
  op("aten.mul_.Tensor", {based.as_strided({3}, {1}, 3), D({3}, {2, 3, 4})}, true);
  CHECK(based.to_vector() == Vals{1, 2, 3, 8, 15, 24});
  Tensor m = F({2, 2}, {1, 2, 3, 4});
  op("aten.masked_fill_.Scalar", {m, B({2}, {1, 0}), Fl(-1)});
  CHECK(m.to_vector() == Vals{-1, 2, -1, 4});
  // pow_.Scalar is Tensor ** Scalar (pow.Scalar would be Scalar ** Tensor).
  Tensor p = F({3}, {1, 2, 3});
  op("aten.pow_.Scalar", {p, I(2)});
  CHECK(p.to_vector() == Vals{1, 4, 9});
  Tensor q = L({3}, {7, -7, 8});
  op("aten.floor_divide_.Tensor", {q, L({3}, {2, 2, 3})});
  CHECK(q.to_vector() == Vals{3, -4, 2});
  // A comparison writes its booleans in self's dtype.
  Tensor c = F({3}, {1, 5, 3});
  op("aten.gt_.Scalar", {c, I(2)});
  CHECK(c.dtype() == DType::F32);
  CHECK(c.to_vector() == Vals{0, 1, 1});
  // x *= x^T reads the old values.
  Tensor sq = F({2, 2}, {1, 2, 3, 4});
  op("aten.mul_.Tensor", {sq, sq.as_strided({2, 2}, {1, 2}, 0)});
  CHECK(sq.to_vector() == Vals{1, 6, 6, 16});
  CHECK(op_error("aten.mul_.Scalar", {L({2}, {1, 2}), Fl(1.5)}) ==
        "result type f32 can't be cast to the desired output type i64");
  CHECK(op_error("aten.div_.Tensor", {L({2}, {1, 2}), L({2}, {2, 2})}).find("can't be cast") !=
        std::string::npos);
  CHECK(op_error("aten.sub_.Tensor", {F({3}, {1, 2, 3}), F({2, 3}, {1, 1, 1, 1, 1, 1})}) ==
        "output with shape [3] doesn't match the broadcast shape [2, 3]");
  Tensor one = F({1}, {1});
  CHECK(op_error("aten.mul_.Scalar", {one.as_strided({3}, {0}, 0), I(2)})
            .find("more than one element of the written-to tensor") != std::string::npos);
}

// Every such op against its functional op on a copy: the same values in self (cast to self's
// dtype), or an error from both.
TEST_CASE("kernels: every in-place op without a kernel matches its functional op") {
  int ran = 0, refused = 0;
  for (const OpInfo& info : all_ops()) {
    std::string target(info.target);
    if (!has_tag(info.id, OpTag::Inplace) || find_kernel(target) || !is_composite(target)) continue;
    std::string fun = functional_target(target);
    REQUIRE_MESSAGE(!fun.empty(), target);
    const OpSchema* s = find_schema(target);
    CAPTURE(target);
    uint64_t seed = 1;
    std::vector<In> args;
    for (const ArgSchema& a : s->args) {
      if (a.name == "self") continue;
      if (a.has_default) continue;
      if (a.type == ArgType::Tensor) {
        if (a.name.find("mask") != std::string::npos)
          args.push_back({a.name, B({2, 3}, {1, 0, 1, 0, 0, 1})});
        else if (a.name == "index")
          args.push_back({a.name, L({2, 3}, {0, 1, 0, 1, 1, 0})});
        else if (a.name == "value")
          args.push_back({a.name, F({}, {0.25})});
        else
          args.push_back({a.name, R(DType::F32, {2, 3}, ++seed, 0.1, 0.9)});
      } else if (a.type == ArgType::Int || a.type == ArgType::SymInt) {
        args.push_back({a.name, I(a.name == "dim" ? 1 : 2)});
      } else if (a.type == ArgType::Scalar || a.type == ArgType::Float) {
        args.push_back({a.name, Fl(0.5)});
      } else if (a.type == ArgType::Bool) {
        args.push_back({a.name, Bo(false)});
      } else if (a.type == ArgType::Str) {
        args.push_back({a.name, S(a.name == "reduce" ? "sum" : "trunc")});
      } else {
        args.push_back({a.name, None()});
      }
    }
    Tensor self = R(DType::F32, {2, 3}, 7, 0.1, 0.9);
    std::vector<In> fargs = args, iargs = args;
    Tensor copy = self.clone();
    fargs.insert(fargs.begin(), In("self", self.clone()));
    iargs.insert(iargs.begin(), In("self", copy));
    std::string ferr, ierr;
    std::vector<Tensor> f, r;
    try {
      f = op(fun, fargs);
    } catch (const TensorError& e) {
      ferr = e.what();
    }
    try {
      r = op(target, iargs);
    } catch (const TensorError& e) {
      ierr = e.what();
    }
    CHECK_MESSAGE(ferr.empty() == ierr.empty(),
                  fun << ": '" << ferr << "' against '" << ierr << "'");
    if (!ferr.empty() || !ierr.empty()) {
      ++refused;
      continue;
    }
    REQUIRE(r.size() == 1);
    CHECK(r[0].storage() == copy.storage());
    Vals want = f[0].to_vector(), got = copy.to_vector();
    REQUIRE(want.size() == got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      double w = double(float(want[i])); // rounded to self's f32
      CHECK_MESSAGE((got[i] == w || (std::isnan(got[i]) && std::isnan(w))),
                    fun << " element " << i << ": " << w << " in place " << got[i]);
    }
    ++ran;
  }
  CHECK(ran > 80);
  MESSAGE(ran << " in-place ops ran, " << refused << " refused these arguments on both paths");
}

TEST_CASE("kernels: dropout, _assert_tensor_metadata and factories") {
  Tensor x = F({2}, {1, 2});
  CHECK(op1("aten.dropout.default", {x, Fl(0.5), Bo(false)}).storage() == x.storage());
  CHECK(op1("aten.dropout.default", {x, Fl(0), Bo(true)}).to_vector() == Vals{1, 2});
  // Training mode: native_dropout's output, each element dropped or scaled by 1 / (1 - p).
  Tensor big = F({64}, Vals(64, 1.0));
  Vals dropped = op1("aten.dropout.default", {big, Fl(0.5), Bo(true)}).to_vector();
  int kept = 0;
  for (double v : dropped) {
    CHECK((v == 0 || v == 2));
    kept += v == 2;
  }
  CHECK(kept > 8);
  CHECK(kept < 56);
  CHECK(op1("aten.dropout.default", {x, Fl(1), Bo(true)}).to_vector() == Vals{0, 0});
  CHECK(op_error("aten.dropout.default", {x, Fl(1.5), Bo(false)}).find("between 0 and 1") !=
        std::string::npos);
  CHECK(op("aten._assert_tensor_metadata.default", {x, Is({2}), None(), Dt(DType::F32)}).empty());
  CHECK(op_error("aten._assert_tensor_metadata.default", {x, Is({3})}).find("size") !=
        std::string::npos);
  CHECK(op_error("aten._assert_tensor_metadata.default", {x, None(), None(), Dt(DType::F16)})
            .find("dtype") != std::string::npos);
  CHECK(op("aten._assert_tensor_metadata.default", {D({2}, {1, 2}), None(), None(), Dt(DType::F32)},
           true)
            .empty());
  check(op1("aten.arange.default", {I(4)}), DType::I64, {4}, {0, 1, 2, 3});
  check(op1("aten.arange.default", {Fl(2.5)}), DType::F32, {3}, {0, 1, 2});
  check(op1("aten.arange.start", {I(2), I(5), {"dtype", Dt(DType::F16)}}), DType::F16, {3},
        {2, 3, 4});
  check(op1("aten.arange.start_step", {I(10), I(0), I(-3)}), DType::I64, {4}, {10, 7, 4, 1});
  check(op1("aten.arange.start_step", {Fl(0), Fl(1), Fl(0.25)}), DType::F32, {4},
        {0, 0.25, 0.5, 0.75});
  check(op1("aten.arange.start_step", {I(0), I(1), Fl(0.3)}, true), DType::F64, {4},
        {0, 0.3, 0.6, 0.8999999999999999}, 0, 1e-15);
  CHECK(op_error("aten.arange.start_step", {I(0), I(5), I(0)}).find("nonzero") !=
        std::string::npos);
  CHECK(op_error("aten.arange.start_step", {I(0), I(5), I(-1)}).find("inconsistent") !=
        std::string::npos);
  check(op1("aten.full.default", {Is({2, 1}), Fl(1.5)}), DType::F32, {2, 1}, {1.5, 1.5});
  check(op1("aten.full.default", {Is({2}), I(3)}), DType::I64, {2}, {3, 3});
  check(op1("aten.full.default", {Is({1}), Bo(true)}), DType::Bool, {1}, {1});
  check(op1("aten.full.default", {Is({1}), Fl(-kInf), {"dtype", Dt(DType::BF16)}}), DType::BF16,
        {1}, {-kInf});
  check(op1("aten.full.default", {Is({2}), Fl(1.5)}, true), DType::F64, {2}, {1.5, 1.5});
  check(op1("aten.full_like.default", {L({2}, {0, 0}), I(5)}), DType::I64, {2}, {5, 5});
  check(op1("aten.full_like.default", {L({2}, {0, 0}), Fl(0.5), {"dtype", Dt(DType::F32)}}),
        DType::F32, {2}, {0.5, 0.5});
  check(op1("aten.zeros.default", {Is({2, 0})}), DType::F32, {2, 0}, {});
  check(op1("aten.zeros.default", {Is({2}), {"dtype", Dt(DType::I32)}}), DType::I32, {2}, {0, 0});
  check(op1("aten.new_zeros.default", {T(DType::F16, {1}, {3}), Is({3})}), DType::F16, {3},
        {0, 0, 0});
  check(op1("aten.scalar_tensor.default", {I(3)}), DType::F32, {}, {3});
  check(op1("aten.scalar_tensor.default", {Fl(-kInf), {"dtype", Dt(DType::F16)}}), DType::F16, {},
        {-kInf});
  check(op1("aten.scalar_tensor.default", {I(3)}, true), DType::F64, {}, {3});
  CHECK(op_error("aten.zeros.default", {Is({-1})}).find("negative") != std::string::npos);
  CHECK(op_error("aten.full.default", {Is({int64_t(1) << 30, int64_t(1) << 30}), I(0)})
            .find("too large") != std::string::npos);
}

TEST_CASE("kernels: hostile sizes and parameters fail cleanly") {
  Tensor x = F({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = F({1, 1, 1, 1}, {1});
  CHECK(op_error("aten.conv2d.default", {x, w, None(), Is({int64_t(1) << 62})})
            .find("out of range") != std::string::npos);
  CHECK(op_error("aten.max_pool2d.default", {x, Is({2}), Is({2}), Is({0}), Is({int64_t(1) << 40})})
            .find("out of range") != std::string::npos);
  CHECK(op_error("aten.constant_pad_nd.default", {x, Is({int64_t(1) << 62, 0})})
            .find("out of range") != std::string::npos);
  CHECK(op_error("aten.expand.default", {F({1}, {1}), Is({int64_t(1) << 40, int64_t(1) << 40})})
            .find("overflow") != std::string::npos);
  CHECK(op_error("aten.view.default", {x, Is({int64_t(1) << 62, 4, -1})}).find("overflow") !=
        std::string::npos);
  CHECK(op_error("aten.arange.default", {Fl(1e300)}).find("too many") != std::string::npos);
  CHECK(op_error("aten.new_zeros.default", {x, Is({int64_t(1) << 62, 16})}).find("overflow") !=
        std::string::npos);
}

TEST_CASE("kernels: float64 mode produces f64 wherever PyTorch would produce a float") {
  Tensor h = D({3}, {1, 2, 3}); // in float64 mode every floating input is already f64
  CHECK(op1("aten._softmax.default", {h, I(0), Bo(true)}, true).dtype() == DType::F64);
  CHECK(op1("aten.to.dtype", {h, Dt(DType::F16)}, true).dtype() == DType::F64);
  CHECK(op1("aten._to_copy.default", {L({1}, {1}), {"dtype", Dt(DType::BF16)}}, true).dtype() ==
        DType::F64);
  CHECK(op1("aten.div.Tensor", {L({1}, {1}), L({1}, {3})}, true).item() == 1.0 / 3);
  CHECK(op1("aten.arange.default", {Fl(2)}, true).dtype() == DType::F64);
  CHECK(op1("aten.zeros.default", {Is({1})}, true).dtype() == DType::F64);
  CHECK(op1("aten.mean.default", {h, {"dtype", Dt(DType::F32)}}, true).dtype() == DType::F64);
  CHECK(op1("aten.arange.default", {I(2)}, true).dtype() == DType::I64);
  CHECK(op1("aten.to.dtype", {h, Dt(DType::I32)}, true).dtype() == DType::I32);
}

TEST_CASE("kernels: masked_fill converts the value to the tensor's dtype") {
  check(op1("aten.masked_fill.Scalar", {L({2}, {1, 2}), B({2}, {1, 0}), Fl(2.7)}), DType::I64, {2},
        {2, 2});
  Tensor big =
      op1("aten.masked_fill.Scalar", {L({1}, {0}), B({1}, {1}), I((int64_t(1) << 62) + 1)});
  CHECK(big.load_int(0) == (int64_t(1) << 62) + 1);
  check(op1("aten.masked_fill.Scalar", {T(DType::F16, {1}, {0}), B({1}, {1}), Fl(0.1)}), DType::F16,
        {1}, {0.0999755859375}, 0, 0);
}

TEST_CASE("kernels: integer scalars keep full int64 precision") {
  Tensor x = L({1}, {0});
  x.store_int(0, (int64_t(1) << 62) + 1);
  Tensor r = op1("aten.add.Scalar", {x, I(2)});
  CHECK(r.load_int(0) == (int64_t(1) << 62) + 3);
  Tensor e = op1("aten.eq.Scalar", {x, I((int64_t(1) << 62) + 1)});
  CHECK(e.item() == 1);
  Tensor w = op1("aten.where.ScalarOther", {B({1}, {0}), x, I((int64_t(1) << 62) + 7)});
  CHECK(w.load_int(0) == (int64_t(1) << 62) + 7);
}

TEST_CASE("kernels: empty and size-1 shapes through products, norms and joins") {
  check(op1("aten.mm.default", {F({2, 0}, {}), F({0, 3}, {})}), DType::F32, {2, 3}, Vals(6, 0));
  check(op1("aten.bmm.default", {F({0, 2, 3}, {}), F({0, 3, 1}, {})}), DType::F32, {0, 2, 1}, {});
  check(op1("aten.addmm.default", {F({1}, {5}), F({1, 0}, {}), F({0, 2}, {})}), DType::F32, {1, 2},
        {5, 5});
  check(op1("aten.matmul.default", {F({0}, {}), F({0}, {})}), DType::F32, {}, {0});
  check(op1("aten.softmax.int", {F({2, 0}, {}), I(1)}), DType::F32, {2, 0}, {});
  check(op1("aten.layer_norm.default", {F({0, 4}, {}), Is({4})}), DType::F32, {0, 4}, {});
  check(op1("aten.layer_norm.default", {F({2, 1}, {3, -7}), Is({1})}), DType::F32, {2, 1}, {0, 0});
  check(op1("aten.cat.default", {std::vector<Tensor>{F({0}, {}), F({0}, {})}}), DType::F32, {0},
        {});
  check(op1("aten.cat.default", {std::vector<Tensor>{F({0, 2}, {}), F({1, 2}, {1, 2})}}),
        DType::F32, {1, 2}, {1, 2});
  check(op1("aten.sum.dim_IntList", {F({1, 1, 1}, {4}), Is({1}), Bo(true)}), DType::F32, {1, 1, 1},
        {4});
  check(op1("aten.max_pool2d.default", {F({1, 1, 1, 1}, {7}), Is({1})}), DType::F32, {1, 1, 1, 1},
        {7});
  check(op1("aten.embedding.default", {F({3, 2}, {0, 1, 2, 3, 4, 5}), L({0}, {})}), DType::F32,
        {0, 2}, {});
  check(op1("aten.index_select.default", {F({}, {9}), I(0), L({1}, {0})}), DType::F32, {}, {9});
  check(op1("aten.gather.default", {F({}, {9}), I(0), L({}, {0})}), DType::F32, {}, {9});
  check(op1("aten.where.self", {B({0, 1}, {}), F({3}, {1, 2, 3}), F({1}, {0})}), DType::F32, {0, 3},
        {});
  check(op1("aten.scaled_dot_product_attention.default",
            {F({1, 0, 2}, {}), F({1, 3, 2}, Vals(6, 1)), F({1, 3, 2}, Vals(6, 1))}),
        DType::F32, {1, 0, 2}, {});
}

// ---- Op families of issue 18: integer division and remainders, rsub, bitwise, logical ----
// Expected values are Python's / PyTorch's (floor division and % follow the divisor's sign,
// fmod and trunc division the dividend's).

TEST_CASE("kernels: floor_divide, div rounding modes, remainder and fmod sign rules") {
  Tensor a = L({6}, {-7, 7, -7, 7, -6, 0});
  Tensor b = L({6}, {2, 2, -2, -2, 3, -5});
  const Vals floor = {-4, 3, 3, -4, -2, 0}, trunc = {-3, 3, 3, -3, -2, 0};
  check(op1("aten.floor_divide.default", {a, b}), DType::I64, {6}, floor);
  check(op1("aten.div.Tensor_mode", {a, b, {"rounding_mode", S("floor")}}), DType::I64, {6}, floor);
  check(op1("aten.div.Tensor_mode", {a, b, {"rounding_mode", S("trunc")}}), DType::I64, {6}, trunc);
  check(op1("aten.div.Tensor_mode", {a, b, {"rounding_mode", None()}}), DType::F32, {6},
        {-3.5, 3.5, 3.5, -3.5, -2, 0});
  check(op1("aten.remainder.Tensor", {a, b}), DType::I64, {6}, {1, 1, -1, -1, 0, 0});
  check(op1("aten.fmod.Tensor", {a, b}), DType::I64, {6}, {-1, 1, -1, 1, 0, 0});
  // Scalar overloads, negative dividends, floats (Python's float // and %).
  Tensor x = F({4}, {-7.5, 7.5, 1, -0.0});
  check(op1("aten.floor_divide.Scalar", {x, I(2)}), DType::F32, {4}, {-4, 3, 0, 0});
  check(op1("aten.remainder.Scalar", {x, I(2)}), DType::F32, {4}, {0.5, 1.5, 1, 0});
  check(op1("aten.remainder.Scalar", {x, I(-2)}), DType::F32, {4}, {-1.5, -0.5, -1, 0});
  check(op1("aten.div.Scalar_mode", {x, I(2), {"rounding_mode", S("trunc")}}), DType::F32, {4},
        {-3, 3, 0, 0});
  check(op1("aten.div.Scalar_mode", {x, I(2), {"rounding_mode", S("floor")}}), DType::F32, {4},
        {-4, 3, 0, 0});
  // 1 // 0.1 is 9 in Python and PyTorch (through fmod), not floor(1 / 0.1) = 10.
  check(op1("aten.floor_divide.Scalar", {D({1}, {1}), Fl(0.1)}), DType::F64, {1}, {9});
  check(op1("aten.floor_divide.Scalar", {F({1}, {1}), Fl(0.1)}), DType::F32, {1}, {9});
  // Float division by zero is IEEE's; integer division by zero raises, as on PyTorch's CPU.
  check(op1("aten.floor_divide.Scalar", {F({3}, {1, -1, 0}), I(0)}), DType::F32, {3},
        {kInf, -kInf, kNaN});
  check(op1("aten.remainder.Scalar", {F({1}, {1}), I(0)}), DType::F32, {1}, {kNaN});
  CHECK(op_error("aten.floor_divide.default", {L({2}, {1, 2}), L({2}, {1, 0})}) ==
        "ZeroDivisionError");
  CHECK(op_error("aten.remainder.Scalar", {L({1}, {5}), I(0)}) == "ZeroDivisionError");
  CHECK(op_error("aten.fmod.Tensor", {L({1}, {5}), L({1}, {0})}) == "ZeroDivisionError");
  CHECK(op_error("aten.div.Tensor_mode",
                 {L({1}, {5}), L({1}, {0}), {"rounding_mode", S("trunc")}}) == "ZeroDivisionError");
  // Promotion: an int tensor with a float number computes in float.
  check(op1("aten.floor_divide.Scalar", {L({2}, {-7, 7}), Fl(2.5)}), DType::F32, {2}, {-3, 2});
  check(op1("aten.remainder.Tensor", {T(DType::I32, {2}, {-7, 7}), L({2}, {3, -3})}), DType::I64,
        {2}, {2, -2});
  // Broadcast, 0-dim, empty and f16 operands.
  check(op1("aten.floor_divide.default", {L({2, 1}, {-7, 7}), L({3}, {2, -2, 3})}), DType::I64,
        {2, 3}, {-4, 3, -3, 3, -4, 2});
  check(op1("aten.remainder.Tensor", {L({}, {-7}), L({2}, {3, -3})}), DType::I64, {2}, {2, -1});
  check(op1("aten.remainder.Tensor", {F({0}, {}), F({0}, {})}), DType::F32, {0}, {});
  check(op1("aten.remainder.Scalar", {T(DType::F16, {2}, {-5.5, 5.5}), I(2)}), DType::F16, {2},
        {0.5, 1.5});
  check(op1("aten.fmod.Tensor", {T(DType::I8, {2}, {-128, 127}), T(DType::I8, {2}, {-1, -3})}),
        DType::I8, {2}, {0, 1});
  // Errors: bool has no loop, unknown rounding modes are refused.
  CHECK(op_error("aten.remainder.Tensor", {B({1}, {1}), B({1}, {1})}) ==
        "\"remainder_cpu\" not implemented for 'Bool'");
  CHECK(op_error("aten.floor_divide.default", {B({1}, {1}), B({1}, {1})}) ==
        "\"div_floor_cpu\" not implemented for 'Bool'");
  CHECK(op_error("aten.div.Tensor_mode", {F({1}, {1}), F({1}, {1}), {"rounding_mode", S("round")}})
            .find("rounding_mode to be one of None, 'trunc', or 'floor'") != std::string::npos);
}

TEST_CASE("kernels: sub.Scalar and rsub") {
  check(op1("aten.sub.Scalar", {L({2}, {1, 2}), I(1)}), DType::I64, {2}, {0, 1});
  check(op1("aten.sub.Scalar", {F({2}, {1, 2}), Fl(0.5), I(2)}), DType::F32, {2}, {0, 1});
  check(op1("aten.rsub.Scalar", {L({3}, {1, 2, 3}), I(10), I(2)}), DType::I64, {3}, {8, 6, 4});
  check(op1("aten.rsub.Scalar", {L({2}, {1, 2}), Fl(0.5)}), DType::F32, {2}, {-0.5, -1.5});
  check(op1("aten.rsub.Tensor", {F({2}, {1, 2}), F({2, 1}, {5, 6})}), DType::F32, {2, 2},
        {4, 3, 5, 4});
  check(op1("aten.rsub.Tensor", {F({2}, {1, 2}), F({2}, {5, 5}), {"alpha", Fl(0.5)}}), DType::F32,
        {2}, {4.5, 4});
  CHECK(op_error("aten.rsub.Tensor", {B({1}, {1}), B({1}, {1})}).find("two bool tensors") !=
        std::string::npos);
  CHECK(op_error("aten.rsub.Scalar", {L({1}, {1}), I(1), Fl(0.5)}).find("alpha") !=
        std::string::npos);
}

TEST_CASE("kernels: bitwise and/or/xor/not on integers and bools") {
  Tensor a = L({3}, {12, -1, 5}), b = L({3}, {10, 7, -3});
  check(op1("aten.bitwise_and.Tensor", {a, b}), DType::I64, {3}, {8, 7, 5});
  check(op1("aten.bitwise_or.Tensor", {a, b}), DType::I64, {3}, {14, -1, -3});
  check(op1("aten.bitwise_xor.Tensor", {a, b}), DType::I64, {3}, {6, -8, -8});
  Tensor p = B({4}, {1, 1, 0, 0}), q = B({4}, {1, 0, 1, 0});
  check(op1("aten.bitwise_and.Tensor", {p, q}), DType::Bool, {4}, {1, 0, 0, 0});
  check(op1("aten.bitwise_or.Tensor", {p, q}), DType::Bool, {4}, {1, 1, 1, 0});
  check(op1("aten.bitwise_xor.Tensor", {p, q}), DType::Bool, {4}, {0, 1, 1, 0});
  check(op1("aten.bitwise_and.Scalar", {T(DType::U8, {2}, {255, 7}), I(12)}), DType::U8, {2},
        {12, 4});
  check(op1("aten.bitwise_or.Scalar", {B({2}, {0, 1}), Bo(true)}), DType::Bool, {2}, {1, 1});
  check(op1("aten.bitwise_xor.Scalar", {B({2}, {0, 1}), I(3)}), DType::I64, {2}, {3, 2});
  check(op1("aten.bitwise_and.Tensor", {T(DType::U8, {2}, {255, 7}), T(DType::I8, {2}, {-1, 3})}),
        DType::I16, {2}, {255, 3});
  check(op1("aten.bitwise_and.Tensor", {L({2, 1}, {6, 3}), L({}, {5})}), DType::I64, {2, 1},
        {4, 1});
  check(op1("aten.bitwise_not.default", {L({3}, {0, 5, -1})}), DType::I64, {3}, {-1, -6, 0});
  check(op1("aten.bitwise_not.default", {B({2}, {1, 0})}), DType::Bool, {2}, {0, 1});
  check(op1("aten.bitwise_not.default", {T(DType::U8, {2}, {0, 5})}), DType::U8, {2}, {255, 250});
  check(op1("aten.bitwise_not.default", {L({0}, {})}), DType::I64, {0}, {});
  CHECK(op_error("aten.bitwise_and.Tensor", {F({1}, {1}), F({1}, {1})}) ==
        "\"bitwise_and_cpu\" not implemented for 'Float'");
  CHECK(op_error("aten.bitwise_or.Scalar", {L({1}, {1}), Fl(1.5)}) ==
        "\"bitwise_or_cpu\" not implemented for 'Float'");
  CHECK(op_error("aten.bitwise_not.default", {T(DType::F16, {1}, {1})}) ==
        "\"bitwise_not_cpu\" not implemented for 'Half'");
}

TEST_CASE("kernels: shifts follow PyTorch's out-of-range rules") {
  Tensor a = T(DType::I32, {5}, {1, 1, -1, 3, 1});
  Tensor s = T(DType::I32, {5}, {3, 31, 1, -1, 32});
  check(op1("aten.bitwise_left_shift.Tensor", {a, s}), DType::I32, {5},
        {8, -2147483648.0, -2, 0, 0});
  Tensor r = T(DType::I32, {5}, {-16, 16, -1, 16, -16});
  check(op1("aten.bitwise_right_shift.Tensor", {r, T(DType::I32, {5}, {2, 2, 40, -1, 31})}),
        DType::I32, {5}, {-4, 4, -1, 0, -1});
  // uint8: amounts of 128 and more are negative as int8; a right shift past the width gives 0.
  Tensor u = T(DType::U8, {3}, {200, 200, 200});
  check(op1("aten.bitwise_right_shift.Tensor", {u, T(DType::U8, {3}, {1, 8, 200})}), DType::U8, {3},
        {100, 0, 0});
  check(op1("aten.bitwise_left_shift.Tensor", {u, T(DType::U8, {3}, {1, 8, 200})}), DType::U8, {3},
        {144, 0, 0});
  check(op1("aten.bitwise_left_shift.Tensor_Scalar", {L({2}, {1, 2}), I(62)}), DType::I64, {2},
        {4611686018427387904.0, -9223372036854775808.0});
  check(op1("aten.bitwise_right_shift.Tensor_Scalar", {L({2}, {-5, 5}), I(1)}), DType::I64, {2},
        {-3, 2});
  // A bool tensor shifted by a Python int is int64, as torch.result_type says.
  check(op1("aten.bitwise_left_shift.Tensor_Scalar", {B({2}, {1, 0}), I(2)}), DType::I64, {2},
        {4, 0});
  CHECK(op_error("aten.bitwise_left_shift.Tensor", {B({1}, {1}), B({1}, {1})}) ==
        "\"lshift_cpu\" not implemented for 'Bool'");
  CHECK(op_error("aten.bitwise_right_shift.Tensor_Scalar", {F({1}, {1}), I(1)}) ==
        "\"rshift_cpu\" not implemented for 'Float'");
}

TEST_CASE("kernels: logical_or and logical_xor treat nonzero (and NaN) as true") {
  Tensor a = F({4}, {0, 1.5, kNaN, 0});
  Tensor b = F({4}, {0, 2, 0, -2});
  check(op1("aten.logical_or.default", {a, b}), DType::Bool, {4}, {0, 1, 1, 1});
  check(op1("aten.logical_xor.default", {a, b}), DType::Bool, {4}, {0, 0, 1, 1});
  check(op1("aten.logical_xor.default", {L({2, 1}, {0, 3}), B({2}, {0, 1})}), DType::Bool, {2, 2},
        {0, 1, 1, 0});
}

// ---- Issue 18, unary math and special functions ----

TEST_CASE("kernels: trigonometric, hyperbolic and log/exp variants match float64 formulas") {
  struct Row {
    const char* target;
    double (*f)(double);
    double lo, hi;
  };
  const Row rows[] = {
      {"aten.tan.default", [](double x) { return std::tan(x); }, -1.2, 1.2},
      {"aten.asin.default", [](double x) { return std::asin(x); }, -0.99, 0.99},
      {"aten.acos.default", [](double x) { return std::acos(x); }, -0.99, 0.99},
      {"aten.atan.default", [](double x) { return std::atan(x); }, -5, 5},
      {"aten.sinh.default", [](double x) { return std::sinh(x); }, -3, 3},
      {"aten.cosh.default", [](double x) { return std::cosh(x); }, -3, 3},
      {"aten.asinh.default", [](double x) { return std::asinh(x); }, -5, 5},
      {"aten.acosh.default", [](double x) { return std::acosh(x); }, 1, 6},
      {"aten.atanh.default", [](double x) { return std::atanh(x); }, -0.99, 0.99},
      {"aten.log2.default", [](double x) { return std::log2(x); }, 0.1, 9},
      {"aten.log10.default", [](double x) { return std::log10(x); }, 0.1, 900},
      {"aten.log1p.default", [](double x) { return std::log1p(x); }, -0.9, 5},
      {"aten.expm1.default", [](double x) { return std::expm1(x); }, -3, 3},
  };
  for (const Row& r : rows) {
    CAPTURE(r.target);
    for (DType dt : {DType::F32, DType::F64, DType::F16}) {
      Tensor x = R(dt, {3, 5}, 7, r.lo, r.hi);
      check(op1(r.target, {x}), dt, {3, 5}, map(held(x), r.f), rtol_for(dt), 1e-6);
    }
    // Integers compute in the default float dtype.
    check(op1(r.target, {L({1}, {1})}), DType::F32, {1}, {r.f(1.0)}, 1e-6, 1e-6);
  }
  // Out of the domain gives NaN, at the poles infinities.
  check(op1("aten.asin.default", {F({1}, {2})}), DType::F32, {1}, {kNaN});
  check(op1("aten.atanh.default", {F({2}, {1, -1})}), DType::F32, {2}, {kInf, -kInf});
  check(op1("aten.log2.default", {F({2}, {0, -1})}), DType::F32, {2}, {-kInf, kNaN});
  check(op1("aten.tan.default", {F({0}, {})}), DType::F32, {0}, {});
}

TEST_CASE("kernels: floor, ceil, round (half to even), trunc and round.decimals") {
  Tensor x = F({6}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.7});
  check(op1("aten.floor.default", {x}), DType::F32, {6}, {-3, -2, -1, 0, 1, 2});
  check(op1("aten.ceil.default", {x}), DType::F32, {6}, {-2, -1, 0, 1, 2, 3});
  check(op1("aten.round.default", {x}), DType::F32, {6}, {-2, -2, 0, 0, 2, 3});
  check(op1("aten.trunc.default", {x}), DType::F32, {6}, {-2, -1, 0, 0, 1, 2});
  // Integers come back unchanged (no float round trip: 2^53 + 1 survives).
  Tensor big = L({2}, {-3, 0});
  big.store_int(1, (int64_t(1) << 53) + 1);
  for (const char* op :
       {"aten.floor.default", "aten.ceil.default", "aten.round.default", "aten.trunc.default"}) {
    CAPTURE(op);
    Tensor r = op1(op, {big});
    CHECK(r.dtype() == DType::I64);
    CHECK(r.load_int(1) == (int64_t(1) << 53) + 1);
  }
  CHECK(op_error("aten.floor.default", {B({1}, {1})}) ==
        "\"floor_cpu\" not implemented for 'Bool'");
  check(op1("aten.round.decimals", {F({3}, {1.2345, -2.5, 125}), {"decimals", I(2)}}), DType::F32,
        {3}, {1.23, -2.5, 125}, 1e-6, 1e-6);
  check(op1("aten.round.decimals", {F({3}, {1.2345, -2.5, 125}), {"decimals", I(-1)}}), DType::F32,
        {3}, {0, 0, 120});
  check(op1("aten.round.decimals", {T(DType::F16, {1}, {2.5}), {"decimals", I(0)}}), DType::F16,
        {1}, {2});
}

TEST_CASE("kernels: isnan, isinf, atan2, pow.Scalar and clamp.Tensor") {
  Tensor s = F({4}, {kNaN, kInf, -kInf, 1});
  check(op1("aten.isnan.default", {s}), DType::Bool, {4}, {1, 0, 0, 0});
  check(op1("aten.isinf.default", {s}), DType::Bool, {4}, {0, 1, 1, 0});
  check(op1("aten.isnan.default", {L({2}, {0, 1})}), DType::Bool, {2}, {0, 0});
  check(op1("aten.isinf.default", {T(DType::F16, {1}, {70000})}), DType::Bool, {1}, {1});
  check(op1("aten.atan2.default", {F({4}, {1, 1, -1, 0}), F({4}, {1, -1, -1, 0})}), DType::F32, {4},
        {M_PI / 4, 3 * M_PI / 4, -3 * M_PI / 4, 0});
  check(op1("aten.atan2.default", {L({2, 1}, {1, -1}), L({1}, {0})}), DType::F32, {2, 1},
        {M_PI / 2, -M_PI / 2});
  check(op1("aten.pow.Scalar", {I(2), L({3}, {0, 3, 10})}), DType::I64, {3}, {1, 8, 1024});
  check(op1("aten.pow.Scalar", {I(2), T(DType::I32, {2}, {3, -1})}), DType::I32, {2}, {8, 0});
  check(op1("aten.pow.Scalar", {Fl(2.0), L({2}, {3, -1})}), DType::F32, {2}, {8, 0.5});
  check(op1("aten.pow.Scalar", {I(2), F({2}, {0.5, -1})}), DType::F32, {2}, {std::sqrt(2.0), 0.5});
  Tensor x = F({4}, {-2, 0.5, 3, kNaN});
  check(op1("aten.clamp.Tensor", {x, F({4}, {-1, -1, kNaN, 0}), F({1}, {2})}), DType::F32, {4},
        {-1, 0.5, kNaN, kNaN});
  check(op1("aten.clamp.Tensor", {L({3}, {1, 5, 9}), None(), L({3}, {4, 4, 4})}), DType::I64, {3},
        {1, 4, 4});
  check(op1("aten.clamp.Tensor", {T(DType::I32, {2}, {1, 5}), F({}, {2.5})}), DType::F32, {2},
        {2.5, 5});
  CHECK(op_error("aten.clamp.Tensor", {B({1}, {1}), B({1}, {0})}) ==
        "\"clamp_cpu\" not implemented for 'Bool'");
}

// ---- Issue 18, scans ----

TEST_CASE("kernels: cumsum along a dim, dtypes, 0-dim, empty and strided inputs") {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  check(op1("aten.cumsum.default", {x, I(1)}), DType::F32, {2, 3}, {1, 3, 6, 4, 9, 15});
  check(op1("aten.cumsum.default", {x, I(-2)}), DType::F32, {2, 3}, {1, 2, 3, 5, 7, 9});
  check(op1("aten.cumsum.default", {x, I(1), {"dtype", Dt(DType::F64)}}), DType::F64, {2, 3},
        {1, 3, 6, 4, 9, 15});
  // Integers and bools accumulate in int64 (a causal mask's positions, for one).
  check(op1("aten.cumsum.default", {B({4}, {1, 0, 1, 1}), I(0)}), DType::I64, {4}, {1, 1, 2, 3});
  check(op1("aten.cumsum.default", {T(DType::I8, {3}, {100, 100, 100}), I(0)}), DType::I64, {3},
        {100, 200, 300});
  check(op1("aten.cumsum.default",
            {T(DType::I8, {3}, {100, 100, 100}), I(0), {"dtype", Dt(DType::I8)}}),
        DType::I8, {3}, {100, -56, 44});
  check(op1("aten.cumsum.default", {L({}, {7}), I(-1)}), DType::I64, {}, {7});
  check(op1("aten.cumsum.default", {F({0, 3}, {}), I(1)}), DType::F32, {0, 3}, {});
  check(op1("aten.cumsum.default", {T(DType::F16, {3}, {0.5, 0.25, 2048}), I(0)}), DType::F16, {3},
        {0.5, 0.75, 2048});
  // A transposed view: [[1, 3], [2, 4]] summed along dim 1.
  check(op1("aten.cumsum.default", {transposed(DType::F32, 2, 2, {1, 3, 2, 4}), I(1)}), DType::F32,
        {2, 2}, {1, 4, 2, 6});
  CHECK(op_error("aten.cumsum.default", {x, I(2)}).find("dimension out of range") !=
        std::string::npos);
}

TEST_CASE("kernels: cumprod and logcumsumexp") {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 0, 6});
  check(op1("aten.cumprod.default", {x, I(1)}), DType::F32, {2, 3}, {1, 2, 6, 4, 0, 0});
  check(op1("aten.cumprod.default", {x, I(0)}), DType::F32, {2, 3}, {1, 2, 3, 4, 0, 18});
  check(op1("aten.cumprod.default", {T(DType::I32, {3}, {-2, 3, 4}), I(0)}), DType::I64, {3},
        {-2, -6, -24});
  check(op1("aten.cumprod.default", {B({3}, {1, 1, 0}), I(0)}), DType::I64, {3}, {1, 1, 0});
  check(op1("aten.cumprod.default", {L({3}, {2, 3, 4}), I(0), {"dtype", Dt(DType::F64)}}),
        DType::F64, {3}, {2, 6, 24});
  check(op1("aten.cumprod.default", {F({0}, {}), I(0)}), DType::F32, {0}, {});
  const double l2 = std::log(2.0);
  check(op1("aten.logcumsumexp.default", {F({4}, {0, 0, 1000, -kInf}), I(0)}), DType::F32, {4},
        {0, l2, 1000, 1000});
  check(op1("aten.logcumsumexp.default", {F({3}, {-kInf, -kInf, kInf}), I(0)}), DType::F32, {3},
        {-kInf, -kInf, kInf});
  check(op1("aten.logcumsumexp.default", {D({2, 2}, {1, 2, 3, kNaN}), I(-1)}), DType::F64, {2, 2},
        {1, 2 + std::log1p(std::exp(-1.0)), 3, kNaN});
  CHECK(op_error("aten.logcumsumexp.default", {L({2}, {1, 2}), I(0)}) ==
        "\"logcumsumexp_out_cpu\" not implemented for 'Long'");
}

// Issue 18: values checked against PyTorch 1.13 by hand (torch.sort(stable=True),
// torch.scatter_reduce, torch.var).
TEST_CASE("kernels: sort is stable in both directions, NaN sorts last ascending; topk, argsort") {
  Tensor t = L({8}, {2, 1, 2, 0, 1, 2, 0, 1});
  auto s = op("aten.sort.stable", {t, {"stable", Bo(true)}});
  check(s[0], DType::I64, {8}, {0, 0, 1, 1, 1, 2, 2, 2});
  check(s[1], DType::I64, {8}, {3, 6, 1, 4, 7, 0, 2, 5});
  auto sd = op("aten.sort.stable", {t, {"stable", Bo(true)}, {"descending", Bo(true)}});
  check(sd[1], DType::I64, {8}, {0, 2, 5, 1, 4, 7, 3, 6}); // equal keys keep their order
  check(op1("aten.argsort.stable", {t, {"stable", Bo(true)}, {"dim", I(0)}}), DType::I64, {8},
        {3, 6, 1, 4, 7, 0, 2, 5});
  Tensor x = F({2, 3}, {3, kNaN, 1, -1, 5, 2});
  auto sx = op("aten.sort.default", {x});
  check(sx[0], DType::F32, {2, 3}, {1, 3, kNaN, -1, 2, 5});
  check(sx[1], DType::I64, {2, 3}, {2, 0, 1, 0, 2, 1});
  auto s0 = op("aten.sort.default", {x, I(0), Bo(true)});
  check(s0[0], DType::F32, {2, 3}, {3, kNaN, 2, -1, 5, 1});
  check(s0[1], DType::I64, {2, 3}, {0, 0, 1, 1, 1, 0});
  auto tk = op("aten.topk.default", {F({5}, {4, 9, -2, 7, 0}), I(2)});
  check(tk[0], DType::F32, {2}, {9, 7});
  check(tk[1], DType::I64, {2}, {1, 3});
  auto tks = op("aten.topk.default", {F({5}, {4, 9, -2, 7, 0}), I(3), I(0), Bo(false)});
  check(tks[0], DType::F32, {3}, {-2, 0, 4});
  check(tks[1], DType::I64, {3}, {2, 4, 0});
  CHECK(op_error("aten.topk.default", {F({5}, {4, 9, -2, 7, 0}), I(6)}).find("out of range") !=
        std::string::npos);
}

TEST_CASE("kernels: scatter_reduce with and without include_self; scatter and index_put") {
  Tensor self = F({3}, {10, 20, 30});
  Tensor idx = L({4}, {0, 0, 2, 0});
  Tensor src = F({4}, {1, 2, 3, 4});
  auto sr = [&](const char* r, bool inc) {
    return op1("aten.scatter_reduce.two", {self, I(0), idx, src, S(r), {"include_self", Bo(inc)}});
  };
  check(sr("sum", true), DType::F32, {3}, {17, 20, 33});
  check(sr("sum", false), DType::F32, {3}, {7, 20, 3}); // untouched positions keep self
  check(sr("mean", true), DType::F32, {3}, {17.0 / 4, 20, 16.5});
  check(sr("mean", false), DType::F32, {3}, {7.0 / 3, 20, 3});
  check(sr("amax", false), DType::F32, {3}, {4, 20, 3});
  check(sr("amin", true), DType::F32, {3}, {1, 20, 3});
  check(sr("prod", true), DType::F32, {3}, {80, 20, 90});
  check(op1("aten.scatter_reduce.two", {L({3}, {10, 20, 30}),
                                        I(0),
                                        idx,
                                        L({4}, {1, 2, 3, 4}),
                                        S("mean"),
                                        {"include_self", Bo(false)}}),
        DType::I64, {3}, {2, 20, 3}); // integer mean floors
  CHECK(op_error("aten.scatter_reduce.two", {self, I(0), idx, src, S("max")}).find("amax") !=
        std::string::npos);
  check(op1("aten.scatter.src",
            {F({2, 3}, {0, 0, 0, 0, 0, 0}), I(1), L({2, 1}, {2, 0}), F({2, 2}, {5, 6, 7, 8})}),
        DType::F32, {2, 3}, {0, 0, 5, 7, 0, 0});
  check(op1("aten.scatter.value", {F({2, 2}, {1, 2, 3, 4}), I(0), L({1, 2}, {1, 0}), Fl(9)}),
        DType::F32, {2, 2}, {1, 9, 9, 4});
  Tensor x = F({3, 2}, {0, 1, 2, 3, 4, 5});
  check(op1("aten.index_put.default", {x, std::vector<Tensor>{L({2}, {-1, 0})}, F({2}, {7, 8})}),
        DType::F32, {3, 2}, {7, 8, 2, 3, 7, 8});
  check(op1("aten.index_put.default",
            {x, std::vector<Tensor>{Tensor(), L({3}, {1, 1, 0})}, F({}, {10}), Bo(true)}),
        DType::F32, {3, 2}, {10, 21, 12, 23, 14, 25});
  check(op1("aten.index_put.default", {x, std::vector<Tensor>{B({3}, {1, 0, 1})}, F({}, {-1})}),
        DType::F32, {3, 2}, {-1, -1, 2, 3, -1, -1});
  CHECK(op_error("aten.index_put.default", {x, std::vector<Tensor>{L({1}, {0})}, F({3}, {1, 2, 3})})
            .find("shape mismatch") != std::string::npos);
}

TEST_CASE("kernels: var and std with corrections, var_mean, and the other new reductions") {
  Tensor x = F({2, 3}, {1, 2, 6, 4, 4, 4});
  check(op1("aten.var.correction", {x, Is({1})}), DType::F32, {2}, {7, 0});
  check(op1("aten.var.correction", {x, Is({1}), {"correction", I(0)}}), DType::F32, {2},
        {14.0 / 3, 0});
  check(op1("aten.var.correction", {x, Is({1}), {"correction", I(3)}}), DType::F32, {2},
        {kInf, kNaN}); // the divisor max(0, N - correction) is 0
  check(op1("aten.var.correction", {x}), DType::F32, {}, {3.1});
  check(op1("aten.std.dim", {x, Is({0}), Bo(false), Bo(true)}), DType::F32, {1, 3}, {1.5, 1, 1});
  auto vm = op("aten.var_mean.correction", {x, Is({-1}), {"keepdim", Bo(true)}});
  check(vm[0], DType::F32, {2, 1}, {7, 0});
  check(vm[1], DType::F32, {2, 1}, {3, 4});
  CHECK(op_error("aten.var.correction", {L({2}, {1, 2})}).find("floating") != std::string::npos);
  check(op1("aten.amin.default", {x, Is({-1})}), DType::F32, {2}, {1, 4});
  check(op1("aten.argmin.default", {L({4}, {3, 1, 1, 2})}), DType::I64, {}, {1}); // first min
  auto md = op("aten.max.dim", {F({2, 2}, {1, kNaN, 5, 5}), I(1)});
  check(md[0], DType::F32, {2}, {kNaN, 5});
  check(md[1], DType::I64, {2}, {1, 0});
  check(op1("aten.all.dims", {B({2, 2}, {1, 1, 0, 1}), Is({1})}), DType::Bool, {2}, {1, 0});
  check(op1("aten.any.default", {B({2}, {0, 0})}), DType::Bool, {}, {0});
  check(op1("aten.prod.dim_int", {L({2, 2}, {3, 4, 5, 6}), I(0)}), DType::I64, {2}, {15, 24});
  check(op1("aten.logsumexp.default", {F({2}, {-kInf, -kInf}), Is({0})}), DType::F32, {}, {-kInf});
  check(op1("aten.logsumexp.default", {F({2}, {0, std::log(3.0)}), Is({0})}), DType::F32, {},
        {std::log(4.0)});
  check(op1("aten.linalg_vector_norm.default", {F({2}, {3, -4})}), DType::F32, {}, {5});
  check(op1("aten.linalg_vector_norm.default", {F({2}, {3, -4}), Fl(kInf)}), DType::F32, {}, {4});
  check(op1("aten.linalg_vector_norm.default", {F({3}, {3, 0, -4}), I(0)}), DType::F32, {}, {2});
}

TEST_CASE("kernels: cummax/cummin take the later index on ties; index_add, index_fill, nansum") {
  auto cm = op("aten.cummax.default", {L({6}, {1, 3, 3, 2, 5, 5}), I(0)});
  check(cm[0], DType::I64, {6}, {1, 3, 3, 3, 5, 5});
  check(cm[1], DType::I64, {6}, {0, 1, 2, 2, 4, 5});
  auto cn = op("aten.cummin.default", {F({2, 3}, {2, kNaN, 1, 4, 4, 3}), I(-1)});
  check(cn[0], DType::F32, {2, 3}, {2, kNaN, kNaN, 4, 4, 3});
  check(cn[1], DType::I64, {2, 3}, {0, 1, 1, 0, 1, 2});
  Tensor x = F({2, 3}, {0, 1, 2, 3, 4, 5});
  check(op1("aten.index_add.default",
            {x, I(1), L({2}, {2, 2}), F({2, 2}, {1, 2, 3, 4}), {"alpha", Fl(10)}}),
        DType::F32, {2, 3}, {0, 1, 32, 3, 4, 75});
  CHECK(op_error("aten.index_add.default", {x, I(0), L({1}, {-1}), F({1, 3}, {1, 1, 1})})
            .find("out of bounds") != std::string::npos);
  check(op1("aten.index_fill.int_Scalar", {x, I(1), L({2}, {-1, 0}), Fl(-1)}), DType::F32, {2, 3},
        {-1, 1, -1, -1, 4, -1});
  check(op1("aten.nansum.default", {F({2, 2}, {1, kNaN, kNaN, kNaN}), Is({1})}), DType::F32, {2},
        {1, 0});
  check(op1("aten.count_nonzero.dim_IntList", {F({2, 2}, {0, kNaN, 0, 0}), Is({0})}), DType::I64,
        {2}, {0, 1});
  auto sm = op("aten.std_mean.correction", {F({4}, {1, 2, 3, 4})});
  check(sm[0], DType::F32, {}, {std::sqrt(5.0 / 3)});
  check(sm[1], DType::F32, {}, {2.5});
}

namespace {
Arg Fls(std::vector<double> v) {
  return Arg::of_floats(std::move(v));
}
} // namespace

TEST_CASE("kernels: avg_pool2d ceil_mode windows clip at input+padding for the divisor") {
  // W=6, kernel 3, stride 2, padding 1, ceil mode: 4 windows starting at -1, 1, 3, 5. The last
  // covers [5, 8) but is clipped to [5, 7) (input + padding) for count_include_pad, so its
  // divisor is 2, not 3; without count_include_pad it is 1 (only x[5] is inside).
  Tensor x = F({1, 1, 1, 6}, {1, 2, 3, 4, 5, 6});
  check(op1("aten.avg_pool2d.default", {x, Is({1, 3}), Is({1, 2}), Is({0, 1}), Bo(true), Bo(true)}),
        DType::F32, {1, 1, 1, 4}, {1, 3, 5, 3});
  check(
      op1("aten.avg_pool2d.default", {x, Is({1, 3}), Is({1, 2}), Is({0, 1}), Bo(true), Bo(false)}),
      DType::F32, {1, 1, 1, 4}, {1.5, 3, 5, 6});
  // Without ceil mode the partial last window is dropped; a divisor_override replaces the count.
  check(op1("aten.avg_pool2d.default",
            {x, Is({1, 3}), Is({1, 2}), Is({0, 1}), Bo(false), Bo(true), I(2)}),
        DType::F32, {1, 1, 1, 3}, {1.5, 4.5, 7.5});
  // W=5, kernel 2, stride 2, padding 1: the ceil-mode window that would start at 5 (in the
  // right padding only) is not made.
  check(op1("aten.avg_pool2d.default",
            {F({1, 1, 1, 5}, {1, 2, 3, 4, 5}), Is({1, 2}), Is({1, 2}), Is({0, 1}), Bo(true)}),
        DType::F32, {1, 1, 1, 3}, {0.5, 2.5, 4.5});
}

TEST_CASE("kernels: upsample_bilinear2d source positions with and without align_corners") {
  Tensor x = F({1, 1, 1, 2}, {0, 1});
  // align_corners: the corners map onto each other, src = d * (in-1)/(out-1).
  check(op1("aten.upsample_bilinear2d.default", {x, Is({1, 4}), Bo(true)}), DType::F32,
        {1, 1, 1, 4}, {0, 1.0 / 3, 2.0 / 3, 1});
  // Half-pixel centres: src = (d + 0.5) * in/out - 0.5, clamped to [0, in-1].
  check(op1("aten.upsample_bilinear2d.default", {x, Is({1, 4}), Bo(false)}), DType::F32,
        {1, 1, 1, 4}, {0, 0.25, 0.75, 1});
  // .vec with scale factors: the output size is floor(in * scale), the scale is 1/factor.
  check(op1("aten.upsample_bilinear2d.vec", {x, None(), Bo(false), Fls({1.0, 2.5})}), DType::F32,
        {1, 1, 1, 5}, {0, 0.1, 0.5, 0.9, 1});
  // Nearest: floor(d * in/out); nearest-exact: floor((d + 0.5) * in/out).
  Tensor y = F({1, 1, 1, 3}, {10, 20, 30});
  check(op1("aten.upsample_nearest2d.default", {y, Is({1, 5})}), DType::F32, {1, 1, 1, 5},
        {10, 10, 20, 20, 30});
  check(op1("aten._upsample_nearest_exact2d.default", {y, Is({1, 5})}), DType::F32, {1, 1, 1, 5},
        {10, 10, 20, 30, 30});
  CHECK(op_error("aten.upsample_nearest2d.vec", {y, Is({1, 5}), Fls({2.0, 2.0})})
            .find("exactly one") != std::string::npos);
}

TEST_CASE("kernels: grid_sampler_2d in every mode and padding (values from torch 1.13)") {
  Tensor x = F({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor g = F({1, 1, 5, 2}, {0, 0, -1, -1, 1.5, 0.2, -1.2, 0.7, 0.25, -0.4});
  struct Case {
    int64_t mode, pad;
    bool align;
    Vals want;
  };
  const Case cases[] = {
      {0, 0, false, {3.5, 0.25, 0.0, 0.64, 2.675}},
      {0, 0, true, {3.5, 1.0, 2.4, 2.84, 3.15}},
      {0, 1, false, {3.5, 1.0, 5.1, 4.0, 2.675}},
      {0, 2, false, {3.5, 1.0, 4.85, 4.0, 2.675}},
      {0, 2, true, {3.5, 1.0, 4.3, 3.75, 3.15}},
      {1, 0, false, {2.0, 1.0, 0.0, 0.0, 2.0}},
      {1, 0, true, {2.0, 1.0, 6.0, 4.0, 2.0}},
      {1, 2, false, {2.0, 1.0, 6.0, 4.0, 2.0}},
      {2, 0, false, {4.15625, 0.0625, -0.629253, 0.611008, 3.131858}},
      {2, 1, true, {3.5, 1.0, 4.929749, 3.520939, 3.169032}},
      {2, 2, false, {3.5, 0.25, 4.971595, 4.24, 2.716216}},
      {2, 2, true, {3.5, 1.0, 4.631498, 3.873753, 3.015189}},
  };
  for (const Case& c : cases) {
    INFO("mode " << c.mode << " padding " << c.pad << " align " << c.align);
    check(op1("aten.grid_sampler_2d.default", {x, g, I(c.mode), I(c.pad), Bo(c.align)}), DType::F32,
          {1, 1, 1, 5}, c.want, 1e-5, 1e-5);
  }
  CHECK(op_error("aten.grid_sampler_2d.default", {x, g, I(0), I(5), Bo(false)})
            .find("padding_mode") != std::string::npos);
}

TEST_CASE("kernels: linear 1-D and bicubic upsampling, adaptive max pooling and cdist") {
  Tensor x = F({1, 1, 4}, {0, 1, 4, 9});
  check(op1("aten.upsample_linear1d.default", {x, Is({6}), Bo(false)}), DType::F32, {1, 1, 6},
        {0.0, 0.5, 1.5, 3.5, 6.5, 9.0}, 1e-6, 1e-6);
  Tensor x4 = F({1, 1, 1, 4}, {0, 1, 4, 9});
  check(op1("aten.upsample_bicubic2d.default", {x4, Is({1, 6}), Bo(true)}), DType::F32,
        {1, 1, 1, 6}, {0.0, 0.288, 1.504, 3.016, 6.264, 9.0}, 1e-5, 1e-5);
  check(op1("aten.upsample_bicubic2d.default", {x4, Is({1, 6}), Bo(false)}), DType::F32,
        {1, 1, 1, 6}, {-0.0868056, 0.21875, 1.430555, 3.152778, 6.78125, 9.434028}, 1e-5, 1e-5);
  auto mp = op("aten.adaptive_max_pool1d.default", {F({1, 1, 7}, {3, 1, 4, 1, 5, 9, 2}), Is({3})});
  REQUIRE(mp.size() == 2);
  check(mp[0], DType::F32, {1, 1, 3}, {4, 5, 9});
  check(mp[1], DType::I64, {1, 1, 3}, {2, 4, 5});
  Tensor a = F({2, 2}, {0, 0, 1, 2}), b = F({2, 2}, {3, 4, 1, 0});
  check(op1("aten._cdist_forward.default", {a, b, Fl(1.0), None()}), DType::F32, {2, 2},
        {7, 1, 4, 2});
  check(op1("aten._cdist_forward.default", {a, b, Fl(2.0), None()}), DType::F32, {2, 2},
        {5, 1, std::sqrt(8.0), 2});
  check(op1("aten._cdist_forward.default", {a, b, Fl(INFINITY), None()}), DType::F32, {2, 2},
        {4, 1, 2, 2});
  check(op1("aten._cdist_forward.default", {a, b, Fl(0.0), None()}), DType::F32, {2, 2},
        {2, 1, 2, 1});
}

TEST_CASE("kernels: im2col, col2im and _pdist_forward (values from torch 1.13)") {
  Vals v;
  for (int i = 0; i < 12; ++i) v.push_back(i);
  check(op1("aten.im2col.default",
            {F({1, 1, 3, 4}, v), Is({2, 2}), Is({1, 1}), Is({0, 0}), Is({1, 2})}),
        DType::F32, {1, 4, 4}, {0, 2, 4, 6, 1, 3, 5, 7, 4, 6, 8, 10, 5, 7, 9, 11});
  check(op1("aten.col2im.default", {F({1, 4, 4}, Vals(16, 1.0)), Is({3, 3}), Is({2, 2}), Is({1, 1}),
                                    Is({0, 0}), Is({1, 1})}),
        DType::F32, {1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1});
  check(op1("aten._pdist_forward.default", {F({3, 2}, {0, 0, 3, 4, 1, 0}), Fl(2.0)}), DType::F32,
        {3}, {5, 1, std::sqrt(20.0)});
  CHECK(op_error("aten.col2im.default", {F({1, 4, 5}, Vals(20, 1.0)), Is({3, 3}), Is({2, 2}),
                                         Is({1, 1}), Is({0, 0}), Is({1, 1})})
            .find("does not match") != std::string::npos);
}

// ---- Issue 18, the math family: float64 values from PyTorch 1.13 (torch.special, torch.*),
// edge cases included (+-0, +-inf, NaN, the domains' ends).

TEST_CASE("kernels: math family unary ops match PyTorch in float64, edge values included") {
  struct Row {
    const char* target;
    Vals x, want;
  };
  const Row rows[] = {
      {"aten.erfc.default",
       {-kInf, -30.0, -2.0, -0.0, 0.0, 0.5, 3.0, 10.0, kInf, kNaN},
       {2.0, 2.0, 1.9953222650189528, 1.0, 1.0, 0.4795001221869535, 2.209049699858544e-05,
        2.088487583762545e-45, 0.0, kNaN}},
      {"aten.special_erfcx.default",
       {-kInf, -30.0, -2.0, -0.0, 0.0, 0.5, 3.0, 10.0, kInf, kNaN},
       {kInf, kInf, 108.94090438997797, 1.0, 1.0, 0.6156903441929258, 0.17900115118138998,
        0.05614099274382259, 0.0, kNaN}},
      // ndtr(-30) = erfc(30 / sqrt 2) / 2 = 4.9e-198; PyTorch's (1 + erf(x / sqrt 2)) / 2 gives 0
      // by cancellation, fxc keeps the lower tail.
      {"aten.special_ndtr.default",
       {-kInf, -30.0, -2.0, -0.0, 0.0, 0.5, 3.0, 10.0, kInf, kNaN},
       {0.0, 4.906713927148764e-198, 0.02275013194817921, 0.5, 0.5, 0.6914624612740131,
        0.9986501019683699, 1.0, 1.0, kNaN}},
      {"aten.special_log_ndtr.default",
       {-kInf, -30.0, -2.0, -0.0, 0.0, 0.5, 3.0, 10.0, kInf, kNaN},
       {-kInf, -454.32124395634327, -3.7831843336820317, -0.6931471805599453, -0.6931471805599453,
        -0.36894641528865635, -0.0013508099647481923, -7.619853024160498e-24, -0.0, kNaN}},
      {"aten.special_i0e.default",
       {-kInf, -30.0, -2.0, -0.0, 0.0, 0.5, 3.0, 10.0, kInf, kNaN},
       {0.0, 0.0731459464822373, 0.308508322553671, 1.0, 1.0, 0.6450352704491501,
        0.24300035416182536, 0.1278333371634286, 0.0, kNaN}},
      {"aten.special_i1e.default",
       {-kInf, -30.0, -2.0, -0.0, 0.0, 0.5, 3.0, 10.0, kInf, kNaN},
       {-0.0, -0.07191633059864755, -0.2152692892489377, 0.0, 0.0, 0.15642080318487173,
        0.19682671329730084, 0.1212626813844555, 0.0, kNaN}},
      {"aten.sinc.default",
       {-kInf, -2.0, -0.0, 0.0, 0.5, kInf, kNaN},
       {kNaN, -3.8981718325193755e-17, 1.0, 1.0, 0.6366197723675814, kNaN, kNaN}},
      {"aten.special_entr.default",
       {-kInf, -30.0, -0.0, 0.0, 0.5, 3.0, kInf, kNaN},
       {-kInf, -kInf, 0.0, 0.0, 0.34657359027997264, -3.295836866004329, -kInf, kNaN}},
      {"aten.angle.default",
       {-kInf, -2.0, -0.0, 0.0, 0.5, kInf, kNaN},
       {3.141592653589793, 3.141592653589793, 0.0, 0.0, 0.0, 0.0, kNaN}},
      {"aten.frac.default", {-2.5, -0.0, 0.0, 3.25, kNaN}, {-0.5, 0.0, 0.0, 0.25, kNaN}},
      {"aten.special_ndtri.default",
       {-0.5, 0.0, 1e-300, 1e-20, 0.3, 0.5, 0.9, 0.999999999999, 1.0, 2.0, kNaN},
       {kNaN, -kInf, -37.0470962993612, -9.262340089798409, -0.5244005127080409, 0.0,
        1.2815515655446004, 7.0344869100478356, kInf, kNaN, kNaN}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.target);
    const int64_t n = int64_t(r.x.size());
    // The sinc(+-2) = +-4e-17 and erfc tails: relative tolerance, no absolute one (ndtri(0.5)
    // is 0 to within 1e-16).
    const bool ndtri = std::string(r.target) == "aten.special_ndtri.default";
    check(op1(r.target, {D({n}, r.x)}), DType::F64, {n}, r.want, 1e-9, ndtri ? 1e-15 : 1e-300);
    // float32 reads its inputs as float32 and rounds the float64 result once.
    Tensor x32 = F({n}, r.x);
    Vals want32 = map(op1(r.target, {D({n}, held(x32))}).to_vector(),
                      [](double v) { return double(float(v)); });
    check(op1(r.target, {x32}), DType::F32, {n}, want32, 1e-7, 1e-30);
  }
  // Integers compute in the default float dtype.
  check(op1("aten.erfc.default", {L({2}, {0, 1})}), DType::F32, {2}, {1.0, 0.15729920705028513},
        1e-6, 0);
  CHECK(op_error("aten.frac.default", {L({1}, {1})}) == "frac is not implemented for i64 tensors");
}

TEST_CASE("kernels: math family binary ops match PyTorch in float64, edge values included") {
  struct Row {
    const char* target;
    Vals a, b, want;
  };
  const Row rows[] = {
      {"aten.igamma.default",
       {0.0, 0.5, 1.0, 3.0, -1.0, kInf, 2.0, kNaN, 0.0, 5.0, 20.0},
       {1.0, 0.0, kInf, 2.5, 1.0, 1.0, kInf, 1.0, 0.0, 30.0, 15.0},
       {1.0, 0.0, 1.0, 0.4561868841166703, kNaN, 0.0, 1.0, kNaN, kNaN, 0.999999996375699,
        0.12478121503252497}},
      {"aten.igammac.default",
       {0.0, 0.5, 1.0, 3.0, -1.0, kInf, 2.0, kNaN, 0.0, 5.0, 20.0},
       {1.0, 0.0, kInf, 2.5, 1.0, 1.0, kInf, 1.0, 0.0, 30.0, 15.0},
       {0.0, 1.0, 0.0, 0.5438131158833297, kNaN, 1.0, 0.0, kNaN, kNaN, 3.6243009520614924e-09,
        0.8752187849674751}},
      {"aten.special_zeta.default",
       {1.0, 0.5, 2.0, 3.0, 2.5, 4.0, kNaN},
       {1.0, 1.0, -2.0, -2.5, -2.5, 0.5, 1.0},
       {kInf, kNaN, kInf, 0.0541020258208641, kNaN, 16.23484850566707, kNaN}},
      {"aten.hypot.default",
       {3.0, kInf, kNaN, 0.0, -5.0},
       {4.0, kNaN, kInf, -0.0, 12.0},
       {5.0, kInf, kInf, 0.0, 13.0}},
      {"aten.logaddexp.default",
       {kInf, -kInf, kInf, 1.0, -1000.0, kNaN},
       {kInf, -kInf, -kInf, 2.0, -1000.0, 1.0},
       {kInf, -kInf, kInf, 2.313261687518223, -999.3068528194401, kNaN}},
      {"aten.logaddexp2.default",
       {kInf, -kInf, 1.0, 3.0},
       {kInf, -kInf, 1.0, -2.0},
       {kInf, -kInf, 2.0, 3.0443941193584534}},
      {"aten.xlogy.Tensor",
       {0.0, 0.0, 2.0, 2.0, kNaN},
       {0.0, kNaN, 0.0, 3.0, 1.0},
       {0.0, kNaN, -kInf, 2.1972245773362196, kNaN}},
      {"aten.special_xlog1py.default",
       {0.0, 0.0, 2.0, 2.0},
       {-1.0, kNaN, -1.0, 3.0},
       {0.0, kNaN, -kInf, 2.772588722239781}},
      {"aten.copysign.Tensor",
       {1.0, 1.0, -2.0, kInf, 0.0},
       {-0.0, 0.0, 3.0, -1.0, -1.0},
       {-1.0, 1.0, 2.0, -kInf, -0.0}},
      {"aten.fmax.default", {kNaN, 1.0, kNaN, -0.0}, {1.0, kNaN, kNaN, 2.0}, {1.0, 1.0, kNaN, 2.0}},
      {"aten.fmin.default",
       {kNaN, 1.0, kNaN, -3.0},
       {1.0, kNaN, kNaN, 2.0},
       {1.0, 1.0, kNaN, -3.0}},
      {"aten.nextafter.default",
       {0.0, 0.0, 1.0, 1.0, kInf, -kInf, 2.0, 5e-324, kNaN},
       {1.0, -1.0, 2.0, 0.0, 0.0, 0.0, 2.0, 0.0, 1.0},
       {5e-324, -5e-324, 1.0000000000000002, 0.9999999999999999, 1.7976931348623157e+308,
        -1.7976931348623157e+308, 2.0, 0.0, kNaN}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.target);
    const int64_t n = int64_t(r.a.size());
    check(op1(r.target, {D({n}, r.a), D({n}, r.b)}), DType::F64, {n}, r.want, 1e-9, 0);
  }
  // The sign of a zero result (copysign(0, -1) = -0).
  CHECK(std::signbit(op1("aten.copysign.Tensor", {D({1}, {0.0}), D({1}, {-1.0})}).load(0)));
  // float32 steps are float32's.
  check(op1("aten.nextafter.default",
            {F({4}, {0.0, 1.0, -1.0, 1e38}), F({4}, {1.0, 2.0, -2.0, kInf})}),
        DType::F32, {4},
        {1.401298464324817e-45, 1.0000001192092896, -1.0000001192092896, 1.0000000694406173e+38}, 0,
        0);
  check(op1("aten.heaviside.default", {F({4}, {-1.0, 0.0, 2.0, kNaN}), F({1}, {0.5})}), DType::F32,
        {4}, {0.0, 0.5, 1.0, 0.0});
  CHECK(op_error("aten.heaviside.default", {F({1}, {1.0}), D({1}, {0.5})}) ==
        "heaviside is not yet implemented for tensors with different dtypes");
  check(op1("aten.gcd.default", {L({5}, {12, -18, 0, 0, 7}), L({5}, {18, 12, 0, 5, -21})}),
        DType::I64, {5}, {6, 6, 0, 5, 7});
  check(op1("aten.lcm.default", {L({5}, {12, -18, 0, 0, 7}), L({5}, {18, 12, 0, 5, -21})}),
        DType::I64, {5}, {36, 36, 0, 0, 21});
  CHECK(op_error("aten.gcd.default", {F({1}, {1.0}), F({1}, {2.0})}) ==
        "\"gcd_cpu\" not implemented for 'Float'");
  CHECK(op_error("aten.hypot.default", {L({1}, {1}), L({1}, {2})}) ==
        "\"hypot_cpu\" not implemented for 'Long'");
  check(op1("aten.isclose.default",
            {F({4}, {1.0, kInf, kNaN, 1.0}), F({4}, {1.000001f, kInf, kNaN, 1.1})}),
        DType::Bool, {4}, {1, 1, 0, 0});
  check(op1("aten.isclose.default",
            {F({2}, {kNaN, 1.0}), F({2}, {kNaN, 1.0}), {"equal_nan", Bo(true)}}),
        DType::Bool, {2}, {1, 1});
  // mvlgamma (p = 3) and special_polygamma; mvlgamma's domain is x > (p - 1) / 2.
  check(op1("aten.mvlgamma.default", {D({2}, {2.5, 4.0}), {"p", I(3)}}), DType::F64, {2},
        {1.8809954616117743, 5.402975080909175}, 1e-12, 0);
  CHECK(op_error("aten.mvlgamma.default", {D({1}, {1.0}), {"p", I(3)}}) ==
        "All elements must be greater than (p-1)/2");
  check(op1("aten.special_polygamma.default", {{"n", I(2)}, {"self", D({2}, {0.5, 3.0})}}),
        DType::F64, {2}, {-16.828796644234316, -0.15411380631918856}, 1e-12, 0);
}

TEST_CASE("kernels: float tests, nan_to_num, float_power and the identities of real tensors") {
  Tensor w = F({6}, {kInf, -kInf, kNaN, 1.0, -0.0, 3e38});
  check(op1("aten.isfinite.default", {w}), DType::Bool, {6}, {0, 0, 0, 1, 1, 1});
  check(op1("aten.isposinf.default", {w}), DType::Bool, {6}, {1, 0, 0, 0, 0, 0});
  check(op1("aten.isneginf.default", {w}), DType::Bool, {6}, {0, 1, 0, 0, 0, 0});
  check(op1("aten.isreal.default", {w}), DType::Bool, {6}, {1, 1, 1, 1, 1, 1});
  check(op1("aten.signbit.default", {w}), DType::Bool, {6}, {0, 1, 0, 0, 1, 0});
  check(op1("aten.signbit.default", {L({3}, {-2, 0, 5})}), DType::Bool, {3}, {1, 0, 0});
  check(op1("aten.isfinite.default", {L({2}, {-2, 0})}), DType::Bool, {2}, {1, 1});
  check(op1("aten.nan_to_num.default", {w}), DType::F32, {6},
        {3.4028234663852886e38, -3.4028234663852886e38, 0.0, 1.0, 0.0, 3e38}, 1e-7, 0);
  check(op1("aten.nan_to_num.default",
            {w, {"nan", Fl(1.5)}, {"posinf", Fl(9.0)}, {"neginf", Fl(-9.0)}}),
        DType::F32, {6}, {9.0, -9.0, 1.5, 1.0, 0.0, 3e38}, 1e-7, 0);
  check(op1("aten.float_power.Tensor_Tensor", {L({3}, {2, 3, 4}), F({1}, {0.5})}), DType::F64, {3},
        {std::sqrt(2.0), std::sqrt(3.0), 2.0}, 1e-15, 0);
  check(op1("aten.float_power.Scalar", {{"self", I(2)}, {"exponent", L({2}, {-1, 10})}}),
        DType::F64, {2}, {0.5, 1024.0}, 0, 0);
  check(op1("aten.sgn.default", {L({3}, {-4, 0, 7})}), DType::I64, {3}, {-1, 0, 1});
  check(op1("aten.deg2rad.default", {L({1}, {180})}), DType::F32, {1}, {M_PI}, 1e-7, 0);
  check(op1("aten.rad2deg.default", {D({1}, {M_PI})}), DType::F64, {1}, {180.0}, 1e-15, 0);
  check(op1("aten.ldexp.Tensor", {F({3}, {1.5, -2.0, 3.0}), L({3}, {3, -1, 0})}), DType::F32, {3},
        {12.0, -1.0, 3.0}, 0, 0);
  for (const char* id : {"aten.positive.default", "aten.real.default", "aten.resolve_conj.default",
                         "aten.resolve_neg.default", "aten.conj_physical.default"}) {
    CAPTURE(id);
    check(op1(id, {F({2}, {-1.5, 2.0})}), DType::F32, {2}, {-1.5, 2.0});
  }
}

TEST_CASE("kernels: training batch norm updates the running statistics (values from torch 1.13)") {
  const Vals out = {0.10000002, 0.46726084, 1.93711388, -1.13630426, -1.73711383, 1.26904345};
  auto args = [](Tensor rm, Tensor rv) {
    return std::vector<In>{F({3, 2}, {1, 2, 3, 5, -1, 0.5}),
                           F({2}, {1.5, -1}),
                           F({2}, {0.1, 0.2}),
                           rm,
                           rv,
                           Bo(true),
                           Fl(0.25),
                           Fl(1e-5)};
  };
  // native_batch_norm and _native_batch_norm_legit write running_mean/var in place.
  for (const char* target :
       {"aten.native_batch_norm.default", "aten._native_batch_norm_legit.default"}) {
    INFO(target);
    Tensor rm = F({2}, {0.5, -1}), rv = F({2}, {2, 1});
    std::vector<Tensor> r = op(target, args(rm, rv));
    REQUIRE(r.size() == 3);
    check(r[0], DType::F32, {3, 2}, out);
    check(r[1], DType::F32, {2}, {1.0, 2.5});
    check(r[2], DType::F32, {2}, {0.61237127, 0.53452170});
    check(rm, DType::F32, {2}, {0.625, -0.125});
    check(rv, DType::F32, {2}, {2.5, 2.0625});
  }
  // The functional form returns them and leaves its inputs alone.
  Tensor rm = F({2}, {0.5, -1}), rv = F({2}, {2, 1});
  std::vector<Tensor> r = op("aten._native_batch_norm_legit_functional.default", args(rm, rv));
  REQUIRE(r.size() == 5);
  check(r[0], DType::F32, {3, 2}, out);
  check(r[3], DType::F32, {2}, {0.625, -0.125});
  check(r[4], DType::F32, {2}, {2.5, 2.0625});
  check(rm, DType::F32, {2}, {0.5, -1});
  // _batch_norm_with_update_functional: an empty reserve, then the statistics.
  r = op("aten._batch_norm_with_update_functional.default",
         {F({3, 2}, {1, 2, 3, 5, -1, 0.5}), F({2}, {1.5, -1}), F({2}, {0.1, 0.2}), rm, rv, Fl(0.25),
          Fl(1e-5)});
  REQUIRE(r.size() == 6);
  CHECK(r[3].dtype() == DType::U8);
  CHECK(r[3].numel() == 0);
  check(r[5], DType::F32, {2}, {2.5, 2.0625});
  // batch_norm in training mode normalises by the batch statistics.
  check(op1("aten.batch_norm.default",
            {F({3, 2}, {1, 2, 3, 5, -1, 0.5}), F({2}, {1.5, -1}), F({2}, {0.1, 0.2}), None(),
             None(), Bo(true), Fl(0.25), Fl(1e-5), Bo(false)}),
        DType::F32, {3, 2}, out);
  CHECK(op_error("aten.native_batch_norm.default", {L({3, 2}, {1, 2, 3, 5, -1, 0}), None(), None(),
                                                    None(), None(), Bo(true), Fl(0.1), Fl(1e-5)})
            .find("not implemented") != std::string::npos);
}

TEST_CASE("kernels: rms_norm, _safe_softmax and _softmax_backward_data (values from torch 1.13)") {
  check(op1("aten.rms_norm.default",
            {F({2, 3}, {1, 2, 2, 3, 0, 4}), Is({3}), F({3}, {1, 2, -1}), Fl(0.5)}),
        DType::F32, {2, 3}, {0.53452247, 2.13808990, -1.06904495, 1.00938988, 0, -1.34585321});
  CHECK(op_error("aten.rms_norm.default", {F({2, 3}, Vals(6, 1.0)), Is({2}), None(), None()})
            .find("normalized_shape") != std::string::npos);
  const double inf = std::numeric_limits<double>::infinity();
  check(op1("aten._safe_softmax.default", {F({2, 2}, {-inf, -inf, 0, 0}), I(1), None()}),
        DType::F32, {2, 2}, {0, 0, 0.5, 0.5});
  check(op1("aten._softmax_backward_data.default",
            {F({2, 3}, {1, -1, 2, 0, 3, 1}),
             F({2, 3}, {0.09003057, 0.24472848, 0.66524094, 0.17529039, 0.03911257, 0.78559703}),
             I(1), Dt(DType::F32)}),
        DType::F32, {2, 3},
        {-0.01582593, -0.53247631, 0.54830223, -0.15827578, 0.08202162, 0.07625419});
}

TEST_CASE("kernels: relu6, selu, celu, log_sigmoid, logit, shrinks, threshold (torch 1.13)") {
  const Vals v = {-3, -0.5, 0, 0.5, 3};
  check(op1("aten.selu.default", {F({5}, v)}), DType::F32, {5},
        {-1.67056870, -0.69175816, 0, 0.52535051, 3.15210295});
  check(op1("aten.celu.default", {F({5}, v), Fl(0.5)}), DType::F32, {5},
        {-0.49876061, -0.31606027, 0, 0.5, 3});
  check(op1("aten.log_sigmoid.default", {F({5}, v)}), DType::F32, {5},
        {-3.04858732, -0.97407699, -0.69314718, -0.47407699, -0.04858735});
  check(op1("aten.logit.default", {F({5}, {0, 0.25, 0.5, 0.9, 1}), Fl(0.2)}), DType::F32, {5},
        {-1.38629436, -1.09861231, 0, 1.38629448, 1.38629448});
  check(op1("aten.hardshrink.default", {F({5}, v), Fl(0.5)}), DType::F32, {5}, {-3, 0, 0, 0, 3});
  check(op1("aten.softshrink.default", {F({5}, v), Fl(0.5)}), DType::F32, {5},
        {-2.5, 0, 0, 0, 2.5});
  check(op1("aten.threshold.default", {F({5}, v), Fl(0), Fl(-7)}), DType::F32, {5},
        {-7, -7, -7, 0.5, 3});
  check(op1("aten.threshold.default", {L({4}, {-1, 0, 2, 5}), I(1), I(9)}), DType::I64, {4},
        {9, 9, 2, 5});
  check(op1("aten.relu6.default", {F({5}, {-9, -1.5, 0, 1.5, 9})}), DType::F32, {5},
        {0, 0, 0, 1.5, 6});
  check(op1("aten.relu6.default", {L({3}, {-2, 3, 8})}), DType::I64, {3}, {0, 3, 6});
  CHECK(op_error("aten.selu.default", {L({2}, {1, 2})}).find("not implemented") !=
        std::string::npos);
}

TEST_CASE("kernels: _embedding_bag in every mode, padding_idx, include_last_offset (torch 1.13)") {
  Tensor w = F({6, 2}, {0, 1, 2, 3, 4, 5, 6, -7, 8, 9, -1, 10});
  Tensor ids = L({7}, {1, 5, 1, 0, 3, 4, 2});
  Tensor offs = L({4}, {0, 3, 3, 7}); // bags [0, 3), [3, 3) (empty), [3, 7); 7 is the last offset
  auto bag = [&](int64_t mode, int64_t pad, In psw = None(), bool last = true) {
    return op("aten._embedding_bag.default",
              {w, ids, offs, Bo(false), I(mode), Bo(false), psw, Bo(last), I(pad)});
  };
  auto r = bag(0, -1);
  REQUIRE(r.size() == 4);
  check(r[0], DType::F32, {3, 2}, {3, 16, 0, 0, 18, 8});
  check(r[1], DType::I64, {0}, {}); // the sum fast path computes no offset2bag
  check(r[2], DType::I64, {3}, {0, 0, 0});
  r = bag(0, 4);
  check(r[0], DType::F32, {3, 2}, {3, 16, 0, 0, 10, -1});
  check(r[1], DType::I64, {7}, {0, 0, 0, 2, 2, 2, 2});
  r = bag(1, -1);
  check(r[0], DType::F32, {3, 2}, {1, 16.0 / 3, 0, 0, 4.5, 2});
  check(r[2], DType::I64, {3}, {3, 0, 4});
  check(r[3], DType::I64, {3}, {3, 0, 4});
  r = bag(1, 4);
  check(r[0], DType::F32, {3, 2}, {1, 16.0 / 3, 0, 0, 10.0 / 3, -1.0 / 3});
  check(r[2], DType::I64, {3}, {3, 0, 3});
  r = bag(2, -1);
  check(r[0], DType::F32, {3, 2}, {2, 10, 0, 0, 8, 9});
  check(r[3], DType::I64, {3, 2}, {1, 5, 0, 0, 4, 4});
  r = bag(2, 4);
  check(r[0], DType::F32, {3, 2}, {2, 10, 0, 0, 6, 5});
  check(r[2], DType::I64, {3}, {3, 0, 3});
  check(r[3], DType::I64, {3, 2}, {1, 5, 0, 0, 3, 2});
  r = bag(0, -1, F({7}, {1, 2, 3, 4, 5, 6, 7}), false);
  check(r[0], DType::F32, {4, 2}, {6, 32, 0, 0, 106, 58, 0, 0});
  // No indices at all: every bag is empty.
  r = op("aten._embedding_bag.default",
         {w, L({0}, {}), L({2}, {0, 0}), Bo(false), I(1), Bo(false), None(), Bo(false), I(-1)});
  check(r[0], DType::F32, {2, 2}, {0, 0, 0, 0});
  // The export spelling with an optional padding_idx.
  check(op("aten.embedding_bag.padding_idx",
           {w, ids, offs, Bo(false), I(1), Bo(false), None(), Bo(true), None()})[0],
        DType::F32, {3, 2}, {1, 16.0 / 3, 0, 0, 4.5, 2});
  CHECK(op_error("aten._embedding_bag.default",
                 {w, ids, F({2}, {0, 3}), Bo(false), I(0), Bo(false), None(), Bo(false), I(-1)})
            .find("offsets must be a 1-D int64 or int32 tensor") != std::string::npos);
}

TEST_CASE("kernels: max_unpool, segment_reduce, margin losses, nearest-exact (torch 1.13)") {
  check(op1("aten.max_unpool2d.default",
            {F({1, 1, 2, 2}, {1, 2, 3, 4}), L({1, 1, 2, 2}, {0, 3, 9, 11}), Is({3, 4})}),
        DType::F32, {1, 1, 3, 4}, {1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4});
  check(op1("aten.max_unpool3d.default", {F({1, 2, 1, 1}, {5, 6}), L({1, 2, 1, 1}, {1, 0}),
                                          Is({1, 2, 1}), Is({1, 1, 1}), Is({0, 0, 0})}),
        DType::F32, {1, 1, 2, 1}, {6, 5}); // unbatched: the channel is the first dim
  Tensor d = F({5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor len = L({3}, {2, 0, 3}), off = L({4}, {1, 2, 2, 4});
  auto seg = [&](const char* how, bool by_len, Arg init = None()) {
    return op1("aten.segment_reduce.default",
               {d, S(how), by_len ? In("lengths", len) : In("offsets", off), In("unsafe", Bo(true)),
                In("initial", init)});
  };
  check(seg("sum", true), DType::F32, {3, 2}, {4, 6, 0, 0, 21, 24});
  check(seg("sum", true, Fl(1.5)), DType::F32, {3, 2}, {5.5, 7.5, 1.5, 1.5, 22.5, 25.5});
  check(seg("mean", true), DType::F32, {3, 2}, {2, 3, kNaN, kNaN, 7, 8});
  check(seg("mean", true, Fl(1.5)), DType::F32, {3, 2}, {2.75, 3.75, 1.5, 1.5, 7.5, 8.5});
  check(seg("max", true), DType::F32, {3, 2}, {3, 4, -kInf, -kInf, 9, 10});
  check(seg("min", true, Fl(1.5)), DType::F32, {3, 2}, {1, 1.5, 1.5, 1.5, 1.5, 1.5});
  check(seg("prod", true), DType::F32, {3, 2}, {3, 8, 1, 1, 315, 480});
  check(seg("sum", false), DType::F32, {3, 2}, {3, 4, 0, 0, 12, 14});
  check(seg("mean", false), DType::F32, {3, 2}, {3, 4, kNaN, kNaN, 6, 7});
  check(seg("max", false), DType::F32, {3, 2}, {3, 4, -kInf, -kInf, 7, 8});
  check(seg("prod", false), DType::F32, {3, 2}, {3, 4, 1, 1, 35, 48});
  Tensor xm = F({2, 4}, {0.1, 0.2, 0.4, 0.8, 0.5, -0.3, 0.2, 0.9});
  check(op1("aten.multi_margin_loss.default", {xm, L({2}, {3, 1}), I(1), I(1), None(), I(0)}),
        DType::F32, {2}, {0.325, 1.375}, 1e-6, 1e-6);
  check(op1("aten.multi_margin_loss.default",
            {xm, L({2}, {3, 1}), I(2), Fl(0.5), F({4}, {1, 2, 3, 4}), I(1)}),
        DType::F32, {}, {1.4}, 1e-6, 1e-6);
  auto ml = op("aten.multilabel_margin_loss_forward.default",
               {xm, L({2, 4}, {3, 0, -1, 1, 1, 2, 3, -1}), I(0)});
  check(ml[0], DType::F32, {2}, {0.85, 0.925}, 1e-6, 1e-6);
  check(ml[1], DType::F32, {2, 4}, {1, 0, 0, 1, 0, 1, 1, 1});
  Tensor s = F({1, 1, 10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  check(op1("aten._upsample_nearest_exact1d.default", {s, Is({4})}), DType::F32, {1, 1, 4},
        {1, 3, 6, 8});
  check(op1("aten._upsample_nearest_exact1d.vec", {s, None(), In(Arg::of_floats({0.7}))}),
        DType::F32, {1, 1, 7}, {0, 2, 3, 5, 6, 7, 9});
  CHECK(op_error("aten.multi_margin_loss.default", {xm, L({2}, {3, 1}), I(3), I(1), None(), I(1)})
            .find("only p == 1 and p == 2 supported") != std::string::npos);
}

TEST_CASE("kernels: fractional max pooling, grid_sampler_3d, antialiased bilinear (torch 1.13)") {
  Tensor fx = F({1, 1, 4, 5}, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4});
  auto fr = op("aten.fractional_max_pool2d.default",
               {fx, Is({2, 2}), Is({2, 3}), F({1, 1, 2}, {0.3, 0.6})});
  REQUIRE(fr.size() == 2);
  check(fr[0], DType::F32, {1, 1, 2, 3}, {9, 6, 5, 8, 9, 9});
  check(fr[1], DType::I64, {1, 1, 2, 3}, {5, 7, 4, 11, 12, 14});
  Vals v;
  for (int i = 0; i < 24; ++i) v.push_back(i);
  Tensor vol = F({1, 1, 2, 3, 4}, v);
  Tensor g = F({1, 1, 1, 3, 3}, {-1, -1, -1, 0.55, 0.2, -0.3, 1.2, 0, 0.9});
  auto gs = [&](int64_t mode, int64_t pad, bool align) {
    return op1("aten.grid_sampler_3d.default", {vol, g, I(mode), I(pad), Bo(align)});
  };
  check(gs(0, 0, false), DType::F32, {1, 1, 1, 1, 3}, {0, 10.2, 1.14}, 1e-5, 1e-5);
  check(gs(0, 0, true), DType::F32, {1, 1, 1, 1, 3}, {0, 11.325, 12.88}, 1e-5, 1e-5);
  check(gs(0, 1, true), DType::F32, {1, 1, 1, 1, 3}, {0, 11.325, 18.4}, 1e-5, 1e-5);
  check(gs(0, 2, true), DType::F32, {1, 1, 1, 1, 3}, {0, 11.325, 18.1}, 1e-5, 1e-5);
  check(gs(0, 2, false), DType::F32, {1, 1, 1, 1, 3}, {0, 10.2, 19}, 1e-5, 1e-5);
  check(gs(1, 0, false), DType::F32, {1, 1, 1, 1, 3}, {0, 7, 0});
  check(gs(1, 0, true), DType::F32, {1, 1, 1, 1, 3}, {0, 6, 19});
  check(gs(1, 1, false), DType::F32, {1, 1, 1, 1, 3}, {0, 7, 19});
  Vals a;
  for (int i = 0; i < 16; ++i) a.push_back(std::pow(double(i), 1.5));
  check(op1("aten._upsample_bilinear2d_aa.default", {F({1, 1, 2, 8}, a), Is({3, 3}), Bo(false)}),
        DType::F32, {1, 1, 3, 3},
        {1.4748501, 6.7930546, 14.4421062, 14.5263090, 22.9623032, 33.1598358, 27.5777683,
         39.1315498, 51.8775635},
        1e-5, 1e-5);
}

// The LAPACK decompositions, against values torch.linalg gives (float64) for the same inputs.
TEST_CASE("kernels: linalg inverse, det, slogdet and LU with batches, info and empty inputs") {
  const Vals m = {3, 1, 2, 6, 3, 4, 3, 1, 5};
  const Vals inv = {1.2222222222222223,
                    -0.3333333333333333,
                    -0.2222222222222222,
                    -2,
                    1,
                    0,
                    -0.3333333333333333,
                    0,
                    0.3333333333333333};
  auto r = op("aten.linalg_inv_ex.default", {D({3, 3}, m)});
  check(r[0], DType::F64, {3, 3}, inv, 1e-12, 1e-12);
  check(r[1], DType::I32, {}, {0});
  // A non-contiguous (column-major) input holding the same matrix.
  check(op("aten.linalg_inv_ex.default", {transposed(DType::F64, 3, 3, m)})[0], DType::F64, {3, 3},
        inv, 1e-12, 1e-12);
  // A batch with a singular matrix: info names the zero pivot; check_errors raises.
  Tensor batch = D({2, 2, 2}, {4, 7, 2, 6, 1, 2, 2, 4});
  r = op("aten.linalg_inv_ex.default", {batch});
  check(r[1], DType::I32, {2}, {0, 2});
  Vals first = r[0].to_vector();
  CHECK(close(first[0], 0.6, 1e-12, 1e-12));
  CHECK(close(first[1], -0.7, 1e-12, 1e-12));
  CHECK(op_error("aten.linalg_inv_ex.default", {batch, {"check_errors", Bo(true)}}) ==
        "linalg.inv: (Batch element 1): The diagonal element 2 is zero, the inversion could not "
        "be completed because the input matrix is singular.");
  // det, slogdet and the LU factors (getrf's pivots, 1-based).
  r = op("aten._linalg_det.default", {D({3, 3}, m)});
  check(r[0], DType::F64, {}, {9}, 1e-12, 1e-12);
  check(r[1], DType::F64, {3, 3}, {6, 3, 4, 0.5, -0.5, 0, 0.5, 1, 3}, 1e-12, 1e-12);
  check(r[2], DType::I32, {3}, {2, 2, 3});
  Vals neg = map(m, [](double x) { return -x; });
  r = op("aten._linalg_slogdet.default", {D({3, 3}, neg)});
  check(r[0], DType::F64, {}, {-1});
  check(r[1], DType::F64, {}, {std::log(9.0)}, 1e-12, 1e-12);
  r = op("aten._linalg_slogdet.default", {D({2, 2}, {1, 2, 2, 4})});
  check(r[0], DType::F64, {}, {0});
  check(r[1], DType::F64, {}, {-kInf});
  // Empty: the determinant of a 0x0 matrix is 1; an empty batch gives empty results.
  check(op("aten._linalg_det.default", {D({0, 0}, {})})[0], DType::F64, {}, {1});
  check(op("aten._linalg_det.default", {D({0, 2, 2}, {})})[0], DType::F64, {0}, {});
  check(op("aten.linalg_inv_ex.default", {F({0, 0}, {})})[0], DType::F32, {0, 0}, {});
  // linalg_lu: A = P L U.
  r = op("aten.linalg_lu.default", {D({3, 3}, m)});
  check(r[0], DType::F64, {3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1});
  check(r[1], DType::F64, {3, 3}, {1, 0, 0, 0.5, 1, 0, 0.5, 1, 1}, 1e-12, 1e-12);
  check(r[2], DType::F64, {3, 3}, {6, 3, 4, 0, -0.5, 0, 0, 0, 3}, 1e-12, 1e-12);
  // linalg_lu_solve with the factors solves A X = B.
  auto f = op("aten.linalg_lu_factor_ex.default", {D({3, 3}, m)});
  Tensor x = op1("aten.linalg_lu_solve.default", {f[0], f[1], D({3, 1}, {1, 2, 3})});
  Vals xv = x.to_vector();
  for (int i = 0; i < 3; ++i)
    CHECK(close(m[size_t(i * 3)] * xv[0] + m[size_t(i * 3 + 1)] * xv[1] +
                    m[size_t(i * 3 + 2)] * xv[2],
                double(i + 1), 1e-12, 1e-12));
  CHECK(op_error("aten.linalg_inv_ex.default", {D({2, 3}, rand_vals(6, 1))}).find("square") !=
        std::string::npos);
}

TEST_CASE("kernels: linalg solve, cholesky and triangular solves") {
  // solve with a vector right-hand side broadcast over a batch of A.
  Tensor A = D({2, 2, 2}, {4, 7, 2, 6, 2, 0, 0, 4});
  auto r = op("aten._linalg_solve_ex.default", {A, D({2}, {1, 2})});
  check(r[0], DType::F64, {2, 2}, {-0.8, 0.6, 0.5, 0.5}, 1e-12, 1e-12);
  check(r[3], DType::I32, {2}, {0, 0});
  // left=False solves X A = B.
  r = op("aten._linalg_solve_ex.default",
         {D({2, 2}, {4, 7, 2, 6}), D({1, 2}, {1, 2}), {"left", Bo(false)}});
  check(r[0], DType::F64, {1, 2}, {0.2, 0.1}, 1e-12, 1e-12);
  CHECK(op_error("aten._linalg_solve_ex.default",
                 {D({2, 2}, {1, 2, 2, 4}), D({2}, {1, 2}), {"check_errors", Bo(true)}}) ==
        "torch.linalg.solve: The solver failed because the input matrix is singular.");
  // Cholesky: lower and upper factors; a matrix that is not positive-definite sets info.
  Tensor spd = D({2, 2}, {4, 2, 2, 3});
  r = op("aten.linalg_cholesky_ex.default", {spd});
  check(r[0], DType::F64, {2, 2}, {2, 0, 1, std::sqrt(2.0)}, 1e-12, 1e-12);
  check(r[1], DType::I32, {}, {0});
  check(op("aten.linalg_cholesky_ex.default", {spd, {"upper", Bo(true)}})[0], DType::F64, {2, 2},
        {2, 1, 0, std::sqrt(2.0)}, 1e-12, 1e-12);
  check(op("aten.linalg_cholesky_ex.default", {D({2, 2}, {1, 2, 2, 1})})[1], DType::I32, {}, {2});
  CHECK(op_error("aten.linalg_cholesky_ex.default",
                 {D({2, 2}, {1, 2, 2, 1}), {"check_errors", Bo(true)}}) ==
        "linalg.cholesky: The factorization could not be completed because the input is not "
        "positive-definite (the leading minor of order 2 is not positive-definite).");
  // cholesky_solve and cholesky_inverse from the factor.
  Tensor Lf = D({2, 2}, {2, 0, 1, std::sqrt(2.0)});
  // inverse of [[4, 2], [2, 3]] = [[3, -2], [-2, 4]] / 8
  check(op1("aten.cholesky_inverse.default", {Lf}), DType::F64, {2, 2}, {0.375, -0.25, -0.25, 0.5},
        1e-12, 1e-12);
  check(op1("aten.cholesky_solve.default", {D({2, 1}, {1, 1}), Lf}), DType::F64, {2, 1},
        {0.125, 0.25}, 1e-12, 1e-12);
  // Triangular solves: upper, lower with unit diagonal, transposed, right-hand side.
  Tensor U = D({2, 2}, {2, 1, 0, 4});
  r = op("aten.triangular_solve.default", {D({2, 1}, {4, 8}), U});
  check(r[0], DType::F64, {2, 1}, {1, 2}, 1e-12, 1e-12);
  check(r[1], DType::F64, {2, 2}, {2, 1, 0, 4});
  check(
      op("aten.triangular_solve.default", {D({2, 1}, {2, 9}), U, Bo(true), Bo(true), Bo(false)})[0],
      DType::F64, {2, 1}, {1, 2}, 1e-12, 1e-12);
  check(op1("aten.linalg_solve_triangular.default", {D({2, 2}, {5, 0, 3, 7}),
                                                     D({2, 1}, {1, 5}),
                                                     {"upper", Bo(false)},
                                                     {"unitriangular", Bo(true)}}),
        DType::F64, {2, 1}, {1, 2}, 1e-12, 1e-12);
  check(op1("aten.linalg_solve_triangular.default",
            {U, D({1, 2}, {2, 9}), {"upper", Bo(true)}, {"left", Bo(false)}}),
        DType::F64, {1, 2}, {1, 2}, 1e-12, 1e-12);
}

TEST_CASE("kernels: qr, eigh and svd follow LAPACK's signs as PyTorch does") {
  Tensor A = D({3, 2}, {1, 2, 3, 4, 5, 6});
  auto r = op("aten.linalg_qr.default", {A});
  check(r[0], DType::F64, {3, 2},
        {-0.16903085094570325, 0.8970852271450607, -0.50709255283711, 0.27602622373694136,
         -0.8451542547285166, -0.34503277967117696},
        1e-12, 1e-12);
  check(r[1], DType::F64, {2, 2}, {-5.916079783099616, -7.437357441610946, 0, 0.828078671210825},
        1e-12, 1e-12);
  r = op("aten.linalg_qr.default", {A, S("complete")});
  check(r[0], DType::F64, {3, 3},
        {-0.16903085094570325, 0.8970852271450607, 0.4082482904638627, -0.50709255283711,
         0.27602622373694136, -0.8164965809277263, -0.8451542547285166, -0.34503277967117696,
         0.40824829046386313},
        1e-12, 1e-12);
  check(r[1], DType::F64, {3, 2},
        {-5.916079783099616, -7.437357441610946, 0, 0.828078671210825, 0, 0}, 1e-12, 1e-12);
  CHECK(op_error("aten.linalg_qr.default", {A, S("full")}).find("unrecognized mode 'full'") !=
        std::string::npos);
  r = op("aten._linalg_svd.default", {A});
  check(r[0], DType::F64, {3, 2},
        {-0.22984769640007147, 0.8834610176985255, -0.5247448187602937, 0.24078249213254635,
         -0.8196419411205159, -0.4018960334334318},
        1e-12, 1e-12);
  check(r[1], DType::F64, {2}, {9.525518091565107, 0.5143005806586443}, 1e-12, 1e-12);
  check(r[2], DType::F64, {2, 2},
        {-0.6196294838293404, -0.7848944532670524, -0.7848944532670524, 0.6196294838293404}, 1e-12,
        1e-12);
  // Values only; an empty matrix with full matrices gives identity U.
  r = op("aten._linalg_svd.default", {A, Bo(false), Bo(false)});
  CHECK(r[0].numel() == 0);
  check(r[1], DType::F64, {2}, {9.525518091565107, 0.5143005806586443}, 1e-12, 1e-12);
  r = op("aten._linalg_svd.default", {D({2, 0}, {}), Bo(true)});
  check(r[0], DType::F64, {2, 2}, {1, 0, 0, 1});
  check(r[1], DType::F64, {0}, {});
  Tensor H = D({3, 3}, {2, 1, 0, 1, 3, 1, 0, 1, 4});
  r = op("aten._linalg_eigh.default", {H});
  check(r[0], DType::F64, {3}, {1.2679491924311228, 3, 4.7320508075688785}, 1e-12, 1e-12);
  check(r[1], DType::F64, {3, 3},
        {0.7886751345948129, -0.5773502691896255, 0.2113248654051871, -0.5773502691896255,
         -0.5773502691896257, 0.5773502691896258, 0.21132486540518702, 0.5773502691896258,
         0.7886751345948129},
        1e-12, 1e-12);
  // Batched float32 input: each matrix on its own, results in float32.
  Tensor Hb = F({2, 2, 2}, {2, 0, 0, 1, 1, 1, 1, 1});
  r = op("aten._linalg_eigh.default", {Hb, S("U"), Bo(false)});
  check(r[0], DType::F32, {2, 2}, {1, 2, 0, 2}, 1e-6, 1e-6);
  CHECK(r[1].numel() == 0);
  check(op1("aten.linalg_matrix_exp.default", {D({2, 2}, {0, 1, -2, -3})}), DType::F64, {2, 2},
        {0.6004235991062717, 0.23254415793482963, -0.46508831586965926, -0.09720887469821694},
        1e-12, 1e-12);
}

// The special Bessel, Airy and orthogonal-polynomial functions (frontend/special_fns.h):
// PyTorch's float64 outputs at the branch points of each formula (x = 0, |x| = 1, n < 0, the
// closed forms' thresholds, past Hermite's degree limit), then identities at large degrees.
TEST_CASE("kernels: special Bessel and Airy functions match PyTorch at edge values") {
  struct Row {
    const char* target;
    Vals x, want;
  };
  const Row rows[] = {
      {"aten.special_airy_ai.default",
       {-30.0, -3.0, -2.09, 0.0, 1.0, 2.09, 5.0, 10.0, 104.0, kInf},
       {-0.0879681884568426, -0.3788142883304339, 0.17005055173203007, 0.3550280538878172,
        0.13529241631288144, 0.03042031836319837, 0.00010834442813607433, 1.1047532552898654e-10,
        0.0, kNaN}},
      {"aten.special_bessel_j0.default",
       {0.0, 1e-06, -2.5, 5.0, 7.0, 100.0},
       {1.0, 0.99999999999975, -0.048383776468256645, -0.17759678121123898, 0.3000792697173623,
        0.01998585030422333}},
      {"aten.special_bessel_j1.default",
       {0.0, -2.5, 5.0, 7.0, -100.0},
       {0.0, -0.4970941024644698, -0.3275791437359959, -0.004682797275893047, 0.0771453520141123}},
      {"aten.special_bessel_y0.default",
       {-1.0, 0.0, 0.5, 5.0, 7.0, 100.0},
       {kNaN, -kInf, -0.4445187335067066, -0.3085176376345636, -0.02594975564546204,
        -0.0772443133650831}},
      {"aten.special_bessel_y1.default",
       {-1.0, 0.0, 0.5, 5.0, 7.0, 100.0},
       {kNaN, -kInf, -1.471472392670243, 0.14786315225770028, -0.3026672388243377,
        -0.02037231200275932}},
      {"aten.special_modified_bessel_i0.default",
       {0.0, -1.0, 8.0, 20.0},
       {1.0, 1.2660658777520082, 427.56411572180474, 43558282.559553534}},
      {"aten.special_modified_bessel_i1.default",
       {0.0, -1.0, 8.0, 20.0},
       {0.0, -0.5651591039924851, 399.8731367825599, 42454973.385127775}},
      {"aten.special_modified_bessel_k0.default",
       {-1.0, 0.0, 0.5, 2.0, 20.0},
       {kNaN, kInf, 0.924419071227666, 0.1138938727495334, 5.741237815336524e-10}},
      {"aten.special_modified_bessel_k1.default",
       {-1.0, 0.0, 0.5, 2.0, 20.0},
       {kNaN, kInf, 1.6564411200033007, 0.13986588181652246, 5.883057969557038e-10}},
      {"aten.special_scaled_modified_bessel_k0.default",
       {-1.0, 0.0, 0.5, 2.0, 20.0},
       {kNaN, kInf, 1.5241093857739099, 0.8415682150707712, 0.2785448766571822}},
      {"aten.special_scaled_modified_bessel_k1.default",
       {-1.0, 0.0, 0.5, 2.0, 20.0},
       {kNaN, kInf, 2.7310097082117855, 1.0334768470686888, 0.28542549694072644}},
      {"aten.special_spherical_bessel_j0.default",
       {0.0, 0.25, -3.0, kInf, kNaN},
       {1.0, 0.9896158370180917, 0.0470400026866224, 0.0, kNaN}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.target);
    const int64_t n = int64_t(r.x.size());
    check(op1(r.target, {D({n}, r.x)}), DType::F64, {n}, r.want, 1e-13, 1e-300);
    // float32 computes in float (as PyTorch's CPU kernel): near the float64 value (Ai(-30)'s
    // phase 2/3 30^1.5 = 110 rounded to float costs it 2e-5).
    check(op1(r.target, {F({n}, r.x)}), DType::F32, {n},
          map(r.want, [](double v) { return double(float(v)); }), 1e-4, 1e-30);
  }
  // Integers give the default float dtype; PyTorch's CPU kernels take no 16-bit floats.
  check(op1("aten.special_bessel_j0.default", {L({1}, {0})}), DType::F32, {1}, {1.0}, 0, 0);
  CHECK(op_error("aten.special_bessel_j0.default", {T(DType::F16, {1}, {0.5})}) ==
        "\"bessel_j0_cpu\" not implemented for 'Half'");
}

TEST_CASE("kernels: orthogonal polynomials match PyTorch and their identities at any degree") {
  struct Row {
    const char* target;
    Vals x, n, want;
  };
  const Row rows[] = {
      {"aten.special_chebyshev_polynomial_t.default",
       {0.3, 0.3, 1.0, -1.0, -1.0, 2.0, 0.5, 0.5, 2.0, 0.5},
       {5.0, 9.0, 7.0, 7.0, -1.0, 3.0, 0.0, 20.0, 1000.0, kNaN},
       {0.9988800000000001, 0.3888276480000005, 1.0, -1.0, 0.0, 26.0, 1.0, -0.5000000000000034,
        kNaN, 0.0}},
      {"aten.special_chebyshev_polynomial_u.default",
       {0.3, 0.3, 1.0, -1.0, 2.0, 0.5},
       {5.0, 12.0, 7.0, 7.0, 3.0, -2.0},
       {1.01376, -0.7156128112640001, 8.0, -8.0, 56.0, 0.0}},
      {"aten.special_chebyshev_polynomial_v.default",
       {0.3, 0.3, 1.0, -1.0, -1.0, 2.0},
       {5.0, 12.0, 7.0, 7.0, 6.0, 3.0},
       {0.96416, -1.231673421824, 1.0, -15.0, 13.0, 41.0}},
      {"aten.special_chebyshev_polynomial_w.default",
       {0.3, 0.3, 1.0, -1.0, -1.0, 2.0},
       {5.0, 12.0, 7.0, 7.0, 6.0, 3.0},
       {1.06336, -0.1995522007040017, 15.0, -1.0, 1.0, 71.0}},
      {"aten.special_shifted_chebyshev_polynomial_t.default",
       {0.3, 0.3, 1.0, 0.0, 0.0, 2.0},
       {5.0, 9.0, 7.0, 7.0, 6.0, 3.0},
       {-0.8838399999999998, 0.5329295360000004, 1.0, -1.0, 1.0, 99.0}},
      {"aten.special_shifted_chebyshev_polynomial_u.default",
       {0.3, 0.3, 1.0, 0.0, 0.0, 2.0},
       {5.0, 9.0, 7.0, 7.0, 6.0, 3.0},
       {-0.67968, 0.9022238719999996, 8.0, -8.0, 7.0, 204.0}},
      {"aten.special_shifted_chebyshev_polynomial_v.default",
       {0.3, 0.3, 1.0, 0.0, 0.0, 2.0},
       {5.0, 9.0, 7.0, 7.0, 6.0, 3.0},
       {-0.16927999999999985, 1.825459712, 1.0, -15.0, 13.0, 169.0}},
      {"aten.special_shifted_chebyshev_polynomial_w.default",
       {0.3, 0.3, 1.0, 0.0, 0.0, 2.0},
       {3.0, 9.0, 7.0, 7.0, 6.0, 3.0},
       {0.728, -0.021011968000000072, 15.0, -1.0, 1.0, 239.0}},
      {"aten.special_hermite_polynomial_h.default",
       {0.5, 0.5, -2.0, 3.0, 0.5, 0.5},
       {3.0, 10.0, 7.0, 0.0, 600.0, -1.0},
       {-5.0, 22591.0, 3104.0, 1.0, kNaN, 0.0}},
      {"aten.special_hermite_polynomial_he.default",
       {0.5, 0.5, -2.0, 3.0, 0.5, 0.5},
       {3.0, 10.0, 7.0, 1.0, 600.0, -1.0},
       {-1.375, 49.0439453125, -86.0, 3.0, kNaN, 0.0}},
      {"aten.special_laguerre_polynomial_l.default",
       {0.5, 0.0, -2.0, 3.0, 0.5, 0.5},
       {2.0, 9.0, 7.0, 1.0, 30.0, -1.0},
       {0.125, 1.0, 133.24761904761903, -2.0, 0.2754592304343055, 0.0}},
      {"aten.special_legendre_polynomial_p.default",
       {0.5, 1.0, -1.0, -1.0, 0.3, 0.5},
       {2.0, 9.0, 9.0, 8.0, 30.0, -1.0},
       {-0.125, 1.0, -1.0, 1.0, 0.14665500486868718, 0.0}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.target);
    const int64_t n = int64_t(r.x.size());
    check(op(r.target, {D({n}, r.x), D({n}, r.n)})[0], DType::F64, {n}, r.want, 1e-12, 1e-15);
  }
  // T_n(cos t) = cos(n t) and U_n(cos t) = sin((n + 1) t) / sin t, at degrees the closed
  // forms and the recurrences both cover (n = 2^20 runs a million steps at x = 1.5: NaN once
  // the values overflow, as PyTorch's loop gives).
  const double t = 0.7;
  Vals ns = {2, 3, 6, 7, 40, 1000, 123457};
  for (double nn : ns) {
    CAPTURE(nn);
    Tensor x = D({1}, {std::cos(t)}), deg = D({1}, {nn});
    check(op("aten.special_chebyshev_polynomial_t.default", {x, deg})[0], DType::F64, {1},
          {std::cos(nn * t)}, 1e-9, 1e-9);
    check(op("aten.special_chebyshev_polynomial_u.default", {x, deg})[0], DType::F64, {1},
          {std::sin((nn + 1) * t) / std::sin(t)}, 1e-9, 1e-9);
  }
  check(op("aten.special_chebyshev_polynomial_t.default", {D({1}, {1.5}), D({1}, {1048576.0})})[0],
        DType::F64, {1}, {kNaN}, 0, 0);
  // H_{n+1} = 2x H_n - 2n H_{n-1}, He_{n+1} = x He_n - n He_{n-1}, at n = 30.
  auto at = [](const char* target, double x, double deg) {
    return op(target, {D({1}, {x}), D({1}, {deg})})[0].to_vector()[0];
  };
  const double x = 0.8;
  const char* h = "aten.special_hermite_polynomial_h.default";
  const char* he = "aten.special_hermite_polynomial_he.default";
  CHECK(at(h, x, 31) == doctest::Approx(2 * x * at(h, x, 30) - 60 * at(h, x, 29)).epsilon(1e-12));
  CHECK(at(he, x, 31) == doctest::Approx(x * at(he, x, 30) - 30 * at(he, x, 29)).epsilon(1e-12));
  // Scalar overloads promote x and n together; integers give the default float dtype.
  Tensor r = op("aten.special_legendre_polynomial_p.x_scalar", {Fl(0.5), L({2}, {2, 3})})[0];
  check(r, DType::F32, {2}, {-0.125, -0.4375}, 1e-7, 0);
  r = op("aten.special_legendre_polynomial_p.n_scalar", {D({1}, {0.5}), I(2)})[0];
  check(r, DType::F64, {1}, {-0.125}, 1e-15, 0);
  check(op("aten.special_hermite_polynomial_h.default", {L({1}, {1}), L({1}, {2})})[0], DType::F32,
        {1}, {2.0}, 0, 0);
  CHECK(op_error("aten.special_chebyshev_polynomial_t.default",
                 {T(DType::F16, {1}, {0.5}), T(DType::F16, {1}, {2})}) ==
        "\"chebyshev_polynomial_t_cpu\" not implemented for 'Half'");
}

TEST_CASE("kernels: tensor and selection ops of the single-op corpus (values from torch 1.13)") {
  // mode: the most frequent value (the smallest on a tie) and its last position
  auto md = op("aten.mode.default", {F({2, 4}, {1, 2, 2, 3, 5, 5, 1, 1}), I(1)});
  check(md[0], DType::F32, {2}, {2, 1});
  check(md[1], DType::I64, {2}, {2, 3});
  auto mt = op("aten.mode.default",
               {transposed(DType::F32, 2, 4, {1, 2, 2, 3, 5, 5, 1, 1}), I(1), Bo(true)});
  check(mt[0], DType::F32, {2, 1}, {2, 1});
  check(mt[1], DType::I64, {2, 1}, {2, 3});
  auto m0 = op("aten.mode.default", {F({}, {4})});
  check(m0[0], DType::F32, {}, {4});
  check(m0[1], DType::I64, {}, {0});
  // bincount: counts, minlength, f32 weights summed in f32
  check(op1("aten.bincount.default", {L({5}, {1, 1, 3, 0, 1})}), DType::I64, {4}, {1, 3, 0, 1});
  check(op1("aten.bincount.default", {L({5}, {1, 1, 3, 0, 1}), None(), I(6)}), DType::I64, {6},
        {1, 3, 0, 1, 0, 0});
  check(op1("aten.bincount.default", {L({3}, {1, 1, 3}), F({3}, {0.5, 0.25, 2})}), DType::F32, {4},
        {0, 0.75, 0, 2});
  check(op1("aten.bincount.default", {L({0}, {}), None(), I(2)}), DType::I64, {2}, {0, 0});
  CHECK(op_error("aten.bincount.default", {L({2}, {1, -1})}).find("non-negative") !=
        std::string::npos);
  // nonzero_static: padded with fill_value, or cut to size
  check(op1("aten.nonzero_static.default", {F({2, 2}, {0, 1, 2, 0}), In("size", I(3))}), DType::I64,
        {3, 2}, {0, 1, 1, 0, -1, -1});
  check(op1("aten.nonzero_static.default",
            {transposed(DType::F32, 2, 2, {0, 1, 2, 0}), In("size", I(1)), In("fill_value", I(7))}),
        DType::I64, {1, 2}, {0, 1});
  check(op1("aten.nonzero_static.default", {F({}, {3}), In("size", I(2))}), DType::I64, {2, 0}, {});
  // histogram: even bins over [min, max] (widened for one value), or given edges
  auto h = op("aten.histogram.bin_ct", {F({5}, {1, 2, 1, 4, 2.5}), I(3)});
  check(h[0], DType::F32, {3}, {2, 2, 1});
  check(h[1], DType::F32, {4}, {1, 2, 3, 4});
  auto hr = op("aten.histogram.bin_ct",
               {F({5}, {1, 2, 1, 4, 2.5}), I(2), In("range", Arg::of_floats({0, 3})),
                In("weight", F({5}, {1, 2, 3, 4, 5})), In("density", Bo(true))});
  check(hr[0], DType::F32, {2}, {0.24242425, 0.42424241});
  auto ht = op("aten.histogram.bins_tensor", {F({5}, {1, 2, 1, 4, 2.5}), F({3}, {0, 1.5, 2.5})});
  check(ht[0], DType::F32, {2}, {2, 2});
  auto h0 = op("aten.histogram.bin_ct", {F({}, {3}), I(1)});
  check(h0[0], DType::F32, {1}, {1});
  check(h0[1], DType::F32, {2}, {2.5, 3.5});
  // renorm, gradient, cumulative_trapezoid, fftshift
  check(op1("aten.renorm.default", {F({2, 3}, {1, 2, 3, 0.5, 0.5, 0.5}), I(2), I(0), Fl(1)}),
        DType::F32, {2, 3}, {0.26726124, 0.53452247, 0.80178368, 0.5, 0.5, 0.5});
  check(op1("aten.renorm.default", {F({2, 3}, {1, 2, 3, 0.5, 0.5, 0.5}), I(1), I(1), Fl(1.5)}),
        DType::F32, {2, 3}, {1, 1.2, 1.28571427, 0.5, 0.3, 0.21428572});
  check(op("aten.gradient.scalarint", {F({5}, {1, 2, 4, 7, 11}), In("spacing", Fl(2))})[0],
        DType::F32, {5}, {0.5, 0.75, 1.25, 1.75, 2});
  check(op("aten.gradient.scalarint", {F({5}, {1, 2, 4, 7, 11}), In("edge_order", I(2))})[0],
        DType::F32, {5}, {0.5, 1.5, 2.5, 3.5, 4.5});
  auto g2 = op("aten.gradient.scalarint", {F({2, 3}, {1, 2, 4, 2, 5, 7})});
  check(g2[0], DType::F32, {2, 3}, {1, 3, 3, 1, 3, 3});
  check(g2[1], DType::F32, {2, 3}, {1, 1.5, 2, 3, 2.5, 2});
  check(op("aten.gradient.scalarint", {L({4}, {1, 2, 4, 7})})[0], DType::F32, {4},
        {1, 1.5, 2.5, 3});
  check(op1("aten.cumulative_trapezoid.x",
            {F({2, 3}, {1, 2, 4, 2, 5, 7}), F({2, 3}, {0, 1, 3, 0, 2, 3})}),
        DType::F32, {2, 2}, {1.5, 7.5, 7, 13});
  check(op1("aten.cumulative_trapezoid.x", {F({2, 3}, {1, 2, 4, 2, 5, 7}), F({3}, {0, 1, 3})}),
        DType::F32, {2, 2}, {1.5, 7.5, 3.5, 15.5});
  check(op1("aten.cumulative_trapezoid.dx",
            {F({2, 3}, {1, 2, 4, 2, 5, 7}), In("dx", Fl(0.5)), In("dim", I(0))}),
        DType::F32, {1, 3}, {0.75, 1.75, 2.75});
  check(op1("aten.fft_fftshift.default", {F({5}, {0, 1, 2, 3, 4})}), DType::F32, {5},
        {3, 4, 0, 1, 2});
  check(op1("aten.fft_ifftshift.default", {F({5}, {0, 1, 2, 3, 4})}), DType::F32, {5},
        {2, 3, 4, 0, 1});
  check(op1("aten.fft_fftshift.default", {F({2, 3}, {0, 1, 2, 3, 4, 5}), Is({1})}), DType::F32,
        {2, 3}, {2, 0, 1, 5, 3, 4});
  // combinations: pairs, with replacement, triples; none of an empty vector
  check(op1("aten.combinations.default", {F({4}, {1, 2, 3, 4})}), DType::F32, {6, 2},
        {1, 2, 1, 3, 1, 4, 2, 3, 2, 4, 3, 4});
  check(op1("aten.combinations.default", {F({3}, {1, 2, 3}), I(2), Bo(true)}), DType::F32, {6, 2},
        {1, 1, 1, 2, 1, 3, 2, 2, 2, 3, 3, 3});
  check(op1("aten.combinations.default", {F({4}, {1, 2, 3, 4}), I(3)}), DType::F32, {4, 3},
        {1, 2, 3, 1, 2, 4, 1, 3, 4, 2, 3, 4});
  check(op1("aten.combinations.default", {F({0}, {})}), DType::F32, {0, 2}, {});
  // _chunk_cat: each tensor flattened from dim, padded to num_chunks pieces, chunks side by side
  check(op1("aten._chunk_cat.default",
            {std::vector<Tensor>{F({2, 3}, {1, 2, 3, 4, 5, 6}), F({2, 1}, {7, 8})}, I(1), I(2)}),
        DType::F32, {2, 2, 3}, {1, 2, 7, 3, 0, 0, 4, 5, 8, 6, 0, 0});
  // tensor_split by sections and by indices (a negative one counts from the end)
  auto ts = op("aten.tensor_split.sections", {F({7}, {0, 1, 2, 3, 4, 5, 6}), I(3)});
  REQUIRE(ts.size() == 3);
  check(ts[0], DType::F32, {3}, {0, 1, 2});
  check(ts[2], DType::F32, {2}, {5, 6});
  auto ti = op("aten.tensor_split.indices", {F({7}, {0, 1, 2, 3, 4, 5, 6}), Is({1, 5, -1})});
  REQUIRE(ti.size() == 4);
  check(ti[1], DType::F32, {4}, {1, 2, 3, 4});
  check(ti[3], DType::F32, {1}, {6});
  auto tt = op("aten.tensor_split.tensor_indices_or_sections",
               {F({7}, {0, 1, 2, 3, 4, 5, 6}), L({3}, {1, 5, -1})});
  REQUIRE(tt.size() == 4);
  check(tt[1], DType::F32, {4}, {1, 2, 3, 4});
  // index_fill with a 0-dim tensor value, _unsafe_masked_index
  check(op1("aten.index_fill.int_Tensor",
            {F({2, 3}, {1, 2, 3, 4, 5, 6}), I(1), L({2}, {0, 2}), F({}, {-1})}),
        DType::F32, {2, 3}, {-1, 2, -1, -1, 5, -1});
  check(op1("aten.index_fill.int_Tensor", {F({}, {3}), I(0), L({1}, {0}), F({}, {-1})}), DType::F32,
        {}, {-1});
  check(op1("aten._unsafe_masked_index.default",
            {F({3}, {10, 20, 30}), B({4}, {1, 0, 1, 1}), std::vector<Tensor>{L({4}, {0, 7, 2, -3})},
             Fl(-1)}),
        DType::F32, {4}, {10, -1, 30, 10});
  check(op1("aten._unsafe_masked_index_put_accumulate.default",
            {F({3}, {10, 20, 30}), B({3}, {1, 0, 1}), std::vector<Tensor>{L({3}, {0, 1, 0})},
             F({3}, {1, 2, 4})}),
        DType::F32, {3}, {15, 20, 30});
  // boolean-mask index_put whose values broadcast along the selected rows
  check(op1("aten.index_put.default",
            {F({2, 2}, {1, 2, 3, 4}), std::vector<Tensor>{B({2}, {0, 1})}, F({2}, {8, 9})}),
        DType::F32, {2, 2}, {1, 2, 8, 9});
  // resize (first elements, zeros past them), zero_, new_empty_strided, linspace of tensors
  check(op1("aten.resize.default", {F({2, 2}, {1, 2, 3, 4}), Is({3})}), DType::F32, {3}, {1, 2, 3});
  check(op1("aten.resize.default", {transposed(DType::F32, 2, 2, {1, 2, 3, 4}), Is({5})}),
        DType::F32, {5}, {1, 2, 3, 4, 0});
  check(op1("aten.resize_.default", {F({2, 3}, {1, 2, 3, 4, 5, 6}), Is({3, 2})}), DType::F32,
        {3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK(op_error("aten.resize_.default", {F({2}, {1, 2}), Is({3})}).find("storage") !=
        std::string::npos);
  check(op1("aten.zero_.default", {L({2}, {3, 4})}), DType::I64, {2}, {0, 0});
  check(op1("aten.new_empty_strided.default", {F({1}, {5}), Is({2, 0}), Is({3, 4})}), DType::F32,
        {2, 0}, {});
  check(op1("aten.linspace.Tensor_Tensor", {F({}, {1}), L({}, {3}), I(5)}), DType::F32, {5},
        {1, 1.5, 2, 2.5, 3});
  check(op1("aten.logspace.Tensor_Scalar", {F({}, {0}), I(2), I(3), Fl(2)}), DType::F32, {3},
        {1, 2, 4});
  check(op1("aten.linspace.Tensor_Scalar", {F({}, {1}), I(3), I(0)}), DType::F32, {0}, {});
  // softmax of an integral input with a float dtype, dropout backward of integral gradients
  check(op1("aten.softmax.int", {L({3}, {1, 2, 3}), I(0), Dt(DType::F32)}), DType::F32, {3},
        {0.09003057, 0.24472848, 0.66524094});
  check(op1("aten.native_dropout_backward.default", {L({3}, {1, 2, 3}), B({3}, {1, 0, 1}), Fl(2)}),
        DType::F32, {3}, {2, 0, 6});
  check(op1("aten.atan2.out", {F({2}, {1, -1}), F({2}, {2, -3}), In("out", F({2}, {0, 0}))}),
        DType::F32, {2}, {0.46364760, -2.81984210});
  check(op1("aten._local_scalar_dense.default", {L({1}, {42})}), DType::I64, {}, {42});
  // unique ops: what is not asked for is empty, of self's dtype (as torch.export records it)
  auto uq = op("aten.unique_consecutive.default", {F({3}, {1, 1, 2})});
  check(uq[0], DType::F32, {2}, {1, 2});
  CHECK(uq[1].dtype() == DType::F32);
  CHECK(uq[1].numel() == 0);
}
