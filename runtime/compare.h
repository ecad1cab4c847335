// Output comparison: allclose-style element checks and PyTorch's fp64-referenced accuracy check.
#pragma once

#include "runtime/tensor.h"

#include <string>
#include <vector>

namespace fxc {

struct CompareOptions {
  double rtol = 1.3e-6; ///< torch.testing defaults for float32
  double atol = 1e-5;
  bool equal_nan = true;   ///< NaN matches NaN in the same position
  bool check_dtype = true; ///< a dtype difference is a mismatch
};

/// The outcome of comparing an actual tensor with an expected one, elementwise as
/// torch.testing.assert_close does: an element matches when |actual - expected| <= atol + rtol *
/// |expected| (infinities only match themselves; NaN matches NaN only with equal_nan).
struct CompareResult {
  bool ok = false;
  /// Why it failed, empty when ok: "shape mismatch: ...", "dtype mismatch: ...", or
  /// torch.testing's report: "Tensor-likes are not close!\n\nMismatched elements: 1 / 6 (16.7%)\n
  /// Greatest absolute difference: 0.5 at index (1, 1) (up to 1e-05 allowed)\nGreatest relative
  /// difference: 0.1 at index (1, 1) (up to 1.3e-06 allowed)" ("not equal", without the allowed
  /// tolerances, when both are 0).
  std::string message;
  int64_t numel = 0;
  int64_t mismatches = 0;           ///< elements outside tolerance
  double max_abs_error = 0;         ///< over all elements (NaN-vs-number counts as infinite)
  double max_rel_error = 0;         ///< |a - e| / |e| (infinite where e == 0 and a != 0)
  std::vector<int64_t> worst_index; ///< multi-index of the element with the largest abs error
  double worst_actual = 0, worst_expected = 0;
  /// Over the mismatched elements only, as torch.testing reports them (NaN when one is NaN): the
  /// greatest |actual - expected| and |actual - expected| / |expected|, with their indices and
  /// the values there. Zero and empty when ok.
  double mismatch_abs = 0, mismatch_rel = 0;
  std::vector<int64_t> mismatch_abs_index, mismatch_rel_index;
  double mismatch_actual = 0, mismatch_expected = 0; ///< at mismatch_abs_index
};

CompareResult compare_tensors(const Tensor& actual, const Tensor& expected,
                              const CompareOptions& opts = {});

/// "(0, 3, 1)"
std::string format_index(const std::vector<int64_t>& index);

/// A double as Python's repr() writes it (and so torch.testing's messages): the shortest digits
/// that read back the same value, "0.0001220703125", "1e-05", "3.0", "inf", "nan".
std::string python_float(double v);

struct AccuracyOptions {
  double tol = 1e-4;           ///< torch._dynamo.utils.same's tol (used as rtol and atol)
  bool cos_similarity = false; ///< compare by cosine similarity (>= 0.99) instead of RMSE
  bool equal_nan = false;
  bool exact_dtype = true;
  bool use_larger_multiplier_for_smaller_tensor = false;
};

/// The verdict of torch._dynamo.utils.same(ref, res, fp64_ref) for one tensor.
struct AccuracyResult {
  bool ok = false;
  std::string message;   ///< explanation when not ok (or the path that passed)
  bool allclose = false; ///< passed the plain allclose(ref, res, tol, tol) first
  double res_error = 0;  ///< RMSE(res, fp64_ref)
  double ref_error = 0;  ///< RMSE(ref, fp64_ref)
  double multiplier = 0; ///< res_error must be <= multiplier * ref_error + tol / 10
  double cos_similarity = 0;
};

/// `ref` is the reference result in the model's precision (e.g. eager f32), `res` the result
/// under test, `fp64_ref` the float64 reference (an undefined tensor when there is none).
AccuracyResult same_with_fp64_ref(const Tensor& ref, const Tensor& res, const Tensor& fp64_ref,
                                  const AccuracyOptions& opts = {});

} // namespace fxc
