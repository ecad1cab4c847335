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
  CHECK(r.message.find("mismatched elements: 1 / 6 (16.7%)") == 0);
  CHECK(r.message.find("at index (1, 1)") != std::string::npos);
  CHECK(r.violation_index == std::vector<int64_t>{1, 1});
  // The element furthest outside the tolerance need not have the largest absolute error.
  CompareOptions t;
  t.rtol = 1e-3;
  t.atol = 1e-6;
  CompareResult v = compare_tensors(F({3}, {1000.5, 0.001, 2}), F({3}, {1000, 0.0011, 2}), t);
  CHECK(v.mismatches == 1);
  CHECK(v.worst_index == std::vector<int64_t>{0});
  CHECK(v.violation_index == std::vector<int64_t>{1});
  CHECK(v.message.find("most out of tolerance: index (1,)") != std::string::npos);
  // atol alone admits small absolute errors around zero.
  o.rtol = 0;
  o.atol = 1e-3;
  CHECK(compare_tensors(F({2}, {0.0005, -1}), F({2}, {0, -1.0009}), o).ok);
  CHECK(compare_tensors(F({1}, {0.002}), F({1}, {0}), o).max_rel_error == kInf);
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
