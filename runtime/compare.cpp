// Output comparison: elementwise allclose with error statistics, and torch._dynamo's `same`.
#include "runtime/compare.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace fxc {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = linear % sizes[d];
    linear /= sizes[d];
  }
  return idx;
}

double rmse(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  if (x.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (x[i] - y[i]) * (x[i] - y[i]);
  return std::sqrt(s / double(x.size()));
}

} // namespace

std::string format_index(const std::vector<int64_t>& index) {
  std::string s = "(";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  if (index.size() == 1) s += ",";
  return s + ")";
}

CompareResult compare_tensors(const Tensor& actual, const Tensor& expected,
                              const CompareOptions& opts) {
  CompareResult r;
  if (actual.sizes() != expected.sizes()) {
    r.message = "shape mismatch: actual " + format_meta(actual.meta()) + ", expected " +
                format_meta(expected.meta());
    return r;
  }
  if (opts.check_dtype && actual.dtype() != expected.dtype()) {
    r.message = "dtype mismatch: actual " + std::string(dtype_name(actual.dtype())) +
                ", expected " + std::string(dtype_name(expected.dtype()));
    return r;
  }
  // Integers and booleans compare exactly.
  bool exact = !is_floating(expected.dtype()) && !is_floating(actual.dtype());
  double rtol = exact ? 0 : opts.rtol, atol = exact ? 0 : opts.atol;
  std::vector<double> a = actual.to_vector(), e = expected.to_vector();
  const double inf = std::numeric_limits<double>::infinity();
  r.numel = int64_t(a.size());
  int64_t worst = -1, violation = -1;
  double worst_err = -1, worst_ratio = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = a[i], y = e[i], abs_err, rel_err;
    bool ok;
    if (std::isnan(x) || std::isnan(y)) {
      ok = std::isnan(x) && std::isnan(y) && opts.equal_nan;
      abs_err = rel_err = ok ? 0 : inf;
    } else if (std::isinf(x) || std::isinf(y)) {
      ok = x == y;
      abs_err = rel_err = ok ? 0 : inf;
    } else {
      abs_err = std::fabs(x - y);
      rel_err = y != 0 ? abs_err / std::fabs(y) : (abs_err != 0 ? inf : 0);
      ok = abs_err <= atol + rtol * std::fabs(y);
    }
    if (!ok) {
      ++r.mismatches;
      // How far outside the tolerance: the element most out of tolerance is reported too.
      double allowed = atol + rtol * (std::isfinite(y) ? std::fabs(y) : 0);
      double ratio = allowed > 0 ? abs_err / allowed : inf;
      if (ratio > worst_ratio || violation < 0) {
        worst_ratio = ratio;
        violation = int64_t(i);
      }
    }
    r.max_abs_error = std::max(r.max_abs_error, abs_err);
    r.max_rel_error = std::max(r.max_rel_error, rel_err);
    if (abs_err > worst_err) {
      worst_err = abs_err;
      worst = int64_t(i);
    }
  }
  if (worst >= 0) {
    r.worst_index = unravel(worst, actual.sizes());
    r.worst_actual = a[size_t(worst)];
    r.worst_expected = e[size_t(worst)];
  }
  if (violation >= 0) {
    r.violation_index = unravel(violation, actual.sizes());
    r.violation_actual = a[size_t(violation)];
    r.violation_expected = e[size_t(violation)];
  }
  r.ok = r.mismatches == 0;
  if (!r.ok) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * double(r.mismatches) / double(r.numel));
    r.message =
        "mismatched elements: " + std::to_string(r.mismatches) + " / " + std::to_string(r.numel) +
        " (" + pct + ")\n" + "greatest absolute difference: " + num(r.max_abs_error) +
        " at index " + format_index(r.worst_index) + " (actual " + num(r.worst_actual) +
        ", expected " + num(r.worst_expected) + "; up to " + num(atol) + " allowed)\n" +
        "greatest relative difference: " + num(r.max_rel_error) + " (up to " + num(rtol) +
        " allowed)\n" + "most out of tolerance: index " + format_index(r.violation_index) +
        " (actual " + num(r.violation_actual) + ", expected " + num(r.violation_expected) + ")";
  }
  return r;
}

AccuracyResult same_with_fp64_ref(const Tensor& ref0, const Tensor& res, const Tensor& fp64_ref,
                                  const AccuracyOptions& opts) {
  AccuracyResult r;
  Tensor ref = ref0;
  if (ref.sizes() != res.sizes()) {
    r.message =
        "shape mismatch: ref " + format_meta(ref.meta()) + ", res " + format_meta(res.meta());
    return r;
  }
  if (opts.exact_dtype && ref.dtype() != res.dtype()) {
    r.message = "dtype mismatch " + std::string(dtype_name(ref.dtype())) + ", " +
                std::string(dtype_name(res.dtype()));
    return r;
  }
  CompareOptions close;
  close.rtol = close.atol = opts.tol;
  close.equal_nan = opts.equal_nan;
  close.check_dtype = false;
  if (opts.exact_dtype && ref.dtype() == DType::Bool) {
    // Booleans compare as uint8 under the same tolerance.
    r.ok = r.allclose = compare_tensors(ref.to(DType::U8), res.to(DType::U8), close).ok;
    if (!r.ok) r.message = "accuracy failed: uint8 tensor did not match";
    return r;
  }
  if (opts.cos_similarity) {
    Tensor a = ref.to(DType::F32), b = res.to(DType::F32);
    close.equal_nan = true;
    if (compare_tensors(a, b, close).ok) {
      r.ok = r.allclose = true;
      r.cos_similarity = 1;
      return r;
    }
    std::vector<double> x = a.to_vector(), y = b.to_vector();
    double dot = 0, nx = 0, ny = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      dot += x[i] * y[i];
      nx += x[i] * x[i];
      ny += y[i] * y[i];
    }
    const double eps = 1e-6;
    r.cos_similarity = dot / std::sqrt(std::max(nx * ny, eps * eps));
    r.ok = r.cos_similarity >= 0.99;
    if (!r.ok) r.message = "similarity score " + num(r.cos_similarity) + " < 0.99";
    return r;
  }
  if (!opts.exact_dtype) ref = ref.to(res.dtype());
  if (compare_tensors(ref, res, close).ok) {
    r.ok = r.allclose = true;
    return r;
  }
  if (!fp64_ref.defined() || fp64_ref.dtype() != DType::F64) {
    r.message = "accuracy failed: allclose not within tol=" + num(opts.tol);
    return r;
  }
  if (fp64_ref.sizes() != res.sizes()) {
    r.message = "shape mismatch: fp64_ref " + format_meta(fp64_ref.meta()) + ", res " +
                format_meta(res.meta());
    return r;
  }
  r.ref_error = rmse(fp64_ref, ref);
  r.res_error = rmse(fp64_ref, res);
  int64_t n = fp64_ref.numel();
  r.multiplier = res.dtype() == DType::BF16 ? 3.0 : 2.0;
  bool larger = opts.use_larger_multiplier_for_smaller_tensor;
  if (larger && n <= 10 && opts.tol >= 4e-2)
    r.multiplier = 10.0;
  else if (larger && n <= 500 && opts.tol >= 4e-2)
    r.multiplier = 5.0;
  else if (n < 1000 || (ref.dim() == 4 && ref.size(3) == 1 && ref.size(2) == 1) || opts.tol >= 2e-2)
    r.multiplier = 3.0;
  r.ok = r.res_error <= r.multiplier * r.ref_error + opts.tol / 10.0;
  if (!r.ok && opts.equal_nan && std::isnan(r.ref_error) && std::isnan(r.res_error)) r.ok = true;
  if (!r.ok)
    r.message = "RMSE (res-fp64): " + num(r.res_error) + ", (ref-fp64): " + num(r.ref_error) +
                " and shape=" + format_meta(res.meta()) + ", multiplier: " + num(r.multiplier) +
                ", tol: " + num(opts.tol);
  return r;
}

} // namespace fxc
