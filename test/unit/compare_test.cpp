// Unit tests for output comparison: allclose statistics and the fp64-referenced accuracy check.
#include "runtime/compare.h"
#include "runtime_test_util.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace fxc;
using namespace fxc::test;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
} // namespace

TEST_CASE("compare: allclose statistics, worst element and message") {
  Tensor e = F({2, 3}, {1, 2, 3, 4, 5, 6});
  CompareResult same = compare_tensors(F({2, 3}, {1, 2, 3, 4, 5, 6}), e);
  CHECK(same.ok);
  CHECK(same.message.empty());
  CHECK(same.mismatches == 0);
  CHECK(same.max_abs_error == 0);
  CompareOptions o;
  o.rtol = 0.01;
  o.atol = 0;
  CompareResult r = compare_tensors(F({2, 3}, {1, 2.01, 3, 4, 5.5, 6.05}), e, o);
  CHECK_FALSE(r.ok);
  CHECK(r.numel == 6);
  CHECK(r.mismatches == 1); // 5.5 vs 5 (10%); 2.01 (0.5%) and 6.05 (0.83%) are inside 1%
  CHECK(r.max_abs_error == doctest::Approx(0.5));
  CHECK(r.max_rel_error == doctest::Approx(0.1));
  CHECK(r.worst_index == std::vector<int64_t>{1, 1});
  CHECK(r.worst_actual == 5.5);
  CHECK(r.worst_expected == 5);
  CHECK(r.message == "Tensor-likes are not close!\n\n"
                     "Mismatched elements: 1 / 6 (16.7%)\n"
                     "Greatest absolute difference: 0.5 at index (1, 1) (up to 0.0 allowed)\n"
                     "Greatest relative difference: 0.1 at index (1, 1) (up to 0.01 allowed)");
  CHECK(r.mismatch_abs_index == std::vector<int64_t>{1, 1});
  CHECK(r.mismatch_actual == 5.5);
  CHECK(r.mismatch_expected == 5);
  // atol alone admits small absolute errors around zero.
  o.rtol = 0;
  o.atol = 1e-3;
  CHECK(compare_tensors(F({2}, {0.0005, -1}), F({2}, {0, -1.0009}), o).ok);
  CHECK(compare_tensors(F({1}, {0.002}), F({1}, {0}), o).max_rel_error == kInf);
}

TEST_CASE("compare: the report names the mismatched elements, as torch.testing.assert_close") {
  // (0, 0) has the largest absolute error of all, 0.5, but 0.5 <= 1e-3 * 1000 is within
  // tolerance; (2, 0) and (2, 1) are not. torch.testing reports the greatest differences over
  // the mismatched elements only: absolute 0.5 at (2, 1), relative 0.5 at (2, 0).
  CompareOptions t;
  t.rtol = 1e-3;
  t.atol = 0;
  CompareResult v = compare_tensors(F({3, 2}, {1000.5, 1, 1, 1, 0.75, 4.5}),
                                    F({3, 2}, {1000, 1, 1, 1, 0.5, 4}), t);
  CHECK_FALSE(v.ok);
  CHECK(v.mismatches == 2);
  CHECK(v.worst_index == std::vector<int64_t>{0, 0}); // over all elements: within tolerance
  CHECK(v.mismatch_abs_index == std::vector<int64_t>{2, 1});
  CHECK(v.mismatch_rel_index == std::vector<int64_t>{2, 0});
  CHECK(v.mismatch_abs == 0.5);
  CHECK(v.mismatch_rel == 0.5);
  CHECK(v.mismatch_actual == 4.5);
  CHECK(v.mismatch_expected == 4);
  CHECK(v.message == "Tensor-likes are not close!\n\n"
                     "Mismatched elements: 2 / 6 (33.3%)\n"
                     "Greatest absolute difference: 0.5 at index (2, 1) (up to 0.0 allowed)\n"
                     "Greatest relative difference: 0.5 at index (2, 0) (up to 0.001 allowed)");
  // The criterion is |a - e| <= atol + rtol * |e|: exactly on the bound matches.
  t.atol = 0.25;
  t.rtol = 0;
  CHECK(compare_tensors(F({1}, {1.25}), F({1}, {1}), t).ok);
  CHECK_FALSE(compare_tensors(F({1}, {1.5}), F({1}, {1}), t).ok);
  // Expected 0: the relative difference is inf; 1 in 65536 rounds to 0.0%.
  std::vector<double> zeros(65536, 0.0), one_off(65536, 0.0);
  one_off[65535] = 1;
  CompareResult z = compare_tensors(F({256, 256}, one_off), F({256, 256}, zeros));
  CHECK(z.message ==
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 1 / 65536 (0.0%)\n"
        "Greatest absolute difference: 1.0 at index (255, 255) (up to 1e-05 allowed)\n"
        "Greatest relative difference: inf at index (255, 255) (up to 1.3e-06 allowed)");
  // NaN never matches a number; with equal_nan=False (torch.testing's default) not even NaN,
  // and a NaN difference is the greatest.
  CompareOptions nan;
  nan.equal_nan = false;
  CompareResult n = compare_tensors(F({3}, {5, kNaN, 1}), F({3}, {1, kNaN, 1}), nan);
  CHECK(n.mismatches == 2);
  CHECK(n.message.find("Greatest absolute difference: nan at index (1,)") != std::string::npos);
  // Integers compare for equality: "not equal", no tolerances.
  CompareResult i = compare_tensors(L({2}, {3, 4}), L({2}, {3, 5}));
  CHECK(i.message == "Tensor-likes are not equal!\n\n"
                     "Mismatched elements: 1 / 2 (50.0%)\n"
                     "Greatest absolute difference: 1.0 at index (1,)\n"
                     "Greatest relative difference: 0.2 at index (1,)");
}

TEST_CASE("compare: python_float writes a double as Python's repr()") {
  CHECK(python_float(0.0001220703125) == "0.0001220703125");
  CHECK(python_float(1e-05) == "1e-05");
  CHECK(python_float(1.3e-06) == "1.3e-06");
  CHECK(python_float(0.0001) == "0.0001");
  CHECK(python_float(3) == "3.0");
  CHECK(python_float(0.1) == "0.1");
  CHECK(python_float(1234.5) == "1234.5");
  CHECK(python_float(-2.5e-07) == "-2.5e-07");
  CHECK(python_float(1e16) == "1e+16");
  CHECK(python_float(1e15) == "1000000000000000.0");
  CHECK(python_float(123456789012345678.0) == "1.2345678901234568e+17");
  CHECK(python_float(1.0 / 3) == "0.3333333333333333");
  CHECK(python_float(0.0) == "0.0");
  CHECK(python_float(-0.0) == "-0.0");
  CHECK(python_float(kInf) == "inf");
  CHECK(python_float(-kInf) == "-inf");
  CHECK(python_float(kNaN) == "nan");
}

TEST_CASE("compare: NaN and infinities, shapes, dtypes and integers") {
  CompareOptions o;
  CHECK(compare_tensors(F({3}, {kNaN, 1, kInf}), F({3}, {kNaN, 1, kInf}), o).ok);
  CHECK_FALSE(compare_tensors(F({2}, {kNaN, 1}), F({2}, {1, kNaN}), o).ok);
  CHECK(compare_tensors(F({2}, {kNaN, 1}), F({2}, {1, kNaN}), o).mismatches == 2);
  CHECK_FALSE(compare_tensors(F({1}, {kInf}), F({1}, {-kInf}), o).ok);
  CHECK_FALSE(compare_tensors(F({1}, {1e30}), F({1}, {kInf}), o).ok);
  o.equal_nan = false;
  CHECK_FALSE(compare_tensors(F({1}, {kNaN}), F({1}, {kNaN}), o).ok);
  CompareResult s = compare_tensors(F({2, 3}, Vals(6, 0)), F({3, 2}, Vals(6, 0)));
  CHECK_FALSE(s.ok);
  CHECK(s.message == "shape mismatch: actual f32[2, 3], expected f32[3, 2]");
  CompareResult d = compare_tensors(D({2}, {1, 2}), F({2}, {1, 2}));
  CHECK(d.message == "dtype mismatch: actual f64, expected f32");
  CompareOptions nd;
  nd.check_dtype = false;
  CHECK(compare_tensors(D({2}, {1, 2}), F({2}, {1, 2}), nd).ok);
  // Integers compare exactly whatever the tolerance.
  CompareOptions loose;
  loose.atol = 10;
  CHECK_FALSE(compare_tensors(L({1}, {3}), L({1}, {4}), loose).ok);
  // Non-contiguous actual and 0-dim tensors.
  CHECK(compare_tensors(transposed(DType::F32, 2, 2, {1, 2, 3, 4}), F({2, 2}, {1, 2, 3, 4})).ok);
  CompareResult z = compare_tensors(F({}, {1}), F({}, {2}));
  CHECK(z.worst_index.empty());
  CHECK(format_index({3}) == "(3,)");
  CHECK(format_index({}) == "()");
}

TEST_CASE("compare: same() with an fp64 reference follows torch._dynamo.utils.same") {
  // Plain allclose at tol passes directly.
  AccuracyResult a = same_with_fp64_ref(F({2}, {1, 2}), F({2}, {1.00005, 2}), D({2}, {1, 2}));
  CHECK(a.ok);
  CHECK(a.allclose);
  // Beyond tol: RMSE(res, fp64) <= multiplier * RMSE(ref, fp64) + tol / 10.
  // 2000 elements: multiplier 2. ref error 0.01 everywhere; res error 0.019 passes, 0.021 fails.
  Vals base(2000, 1.0), ref(2000, 1.01), good(2000, 1.019), bad(2000, 1.0211);
  AccuracyResult ok = same_with_fp64_ref(F({2000}, ref), F({2000}, good), D({2000}, base));
  CHECK(ok.ok);
  CHECK_FALSE(ok.allclose);
  CHECK(ok.multiplier == 2.0);
  CHECK(ok.ref_error == doctest::Approx(0.01).epsilon(1e-4));
  CHECK(ok.res_error == doctest::Approx(0.019).epsilon(1e-4));
  AccuracyResult no = same_with_fp64_ref(F({2000}, ref), F({2000}, bad), D({2000}, base));
  CHECK_FALSE(no.ok);
  CHECK(no.message.find("RMSE (res-fp64)") == 0);
  // Fewer than 1000 elements: multiplier 3; bf16 results: multiplier 3.
  AccuracyResult small =
      same_with_fp64_ref(F({10}, Vals(10, 1.01)), F({10}, Vals(10, 1.029)), D({10}, Vals(10, 1)));
  CHECK(small.multiplier == 3.0);
  CHECK(small.ok);
  AccuracyResult bf = same_with_fp64_ref(T(DType::BF16, {2000}, ref), T(DType::BF16, {2000}, good),
                                         D({2000}, base));
  CHECK(bf.multiplier == 3.0);
  // 4-D tensors with 1x1 spatial dims also get 3.
  AccuracyResult k1 = same_with_fp64_ref(F({2000, 1, 1, 1}, ref), F({2000, 1, 1, 1}, bad),
                                         D({2000, 1, 1, 1}, base));
  CHECK(k1.multiplier == 3.0);
  CHECK(k1.ok);
  // use_larger_multiplier_for_smaller_tensor with a large tol.
  AccuracyOptions lg;
  lg.tol = 0.04;
  lg.use_larger_multiplier_for_smaller_tensor = true;
  CHECK(same_with_fp64_ref(F({10}, Vals(10, 1.1)), F({10}, Vals(10, 1.5)), D({10}, Vals(10, 1)), lg)
            .multiplier == 10.0);
  CHECK(same_with_fp64_ref(F({100}, Vals(100, 1.1)), F({100}, Vals(100, 1.5)),
                           D({100}, Vals(100, 1)), lg)
            .multiplier == 5.0);
  // No fp64 reference: only allclose counts.
  AccuracyResult nofp = same_with_fp64_ref(F({2000}, ref), F({2000}, good), Tensor());
  CHECK_FALSE(nofp.ok);
  CHECK(nofp.message.find("allclose not within tol") != std::string::npos);
  // dtype and shape mismatches; booleans compare as uint8.
  CHECK(same_with_fp64_ref(F({1}, {1}), D({1}, {1}), D({1}, {1})).message ==
        "dtype mismatch f32, f64");
  CHECK_FALSE(same_with_fp64_ref(F({1}, {1}), F({2}, {1, 1}), D({1}, {1})).ok);
  CHECK(same_with_fp64_ref(B({2}, {1, 0}), B({2}, {1, 0}), Tensor()).ok);
  CHECK_FALSE(same_with_fp64_ref(B({2}, {1, 0}), B({2}, {1, 1}), Tensor()).ok);
  // NaN in both errors passes only with equal_nan.
  AccuracyOptions en;
  en.equal_nan = true;
  CHECK(same_with_fp64_ref(F({2}, {kNaN, 1}), F({2}, {kNaN, 1}), D({2}, {5, 1}), en).ok);
  CHECK_FALSE(same_with_fp64_ref(F({2}, {kNaN, 1}), F({2}, {kNaN, 1}), D({2}, {5, 1})).ok);
}

TEST_CASE("compare: cosine similarity mode") {
  AccuracyOptions c;
  c.cos_similarity = true;
  AccuracyResult r = same_with_fp64_ref(F({3}, {1, 2, 3}), F({3}, {1.1, 2.1, 2.9}), Tensor(), c);
  double dot = 1 * 1.1 + 2 * 2.1 + 3 * 2.9, na = 1 + 4 + 9, nb = 1.21 + 4.41 + 8.41;
  CHECK(r.ok);
  CHECK(r.cos_similarity == doctest::Approx(dot / std::sqrt(na * nb)).epsilon(1e-6));
  AccuracyResult far = same_with_fp64_ref(F({2}, {1, 0}), F({2}, {0, 1}), Tensor(), c);
  CHECK_FALSE(far.ok);
  CHECK(far.cos_similarity == 0);
  CHECK(same_with_fp64_ref(F({2}, {0, 0}), F({2}, {0, 0}), Tensor(), c).ok);
}
