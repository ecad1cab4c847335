// Output comparison: elementwise allclose with error statistics, and torch._dynamo's `same`.
#include "runtime/compare.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, then Python's layout (float_repr_style "short"): positional
  // for decimal exponents -4..15, else d.ddde+XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr); // "-1.25e-05"
  size_t epos = sci.find('e');
  int exp = std::atoi(sci.c_str() + epos + 1);
  bool neg = sci[0] == '-';
  std::string digits;
  for (size_t i = neg ? 1 : 0; i < epos; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    size_t point = size_t(exp + 1); // digits before the decimal point (exp >= 0)
    if (exp < 0) return out + "0." + std::string(size_t(-exp - 1), '0') + digits;
    if (digits.size() <= point)
      return out + digits + std::string(point - digits.size(), '0') + ".0";
    return out + digits.substr(0, point) + "." + digits.substr(point);
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char e[16];
  std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + e;
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
  int64_t worst = -1, mis_abs = -1, mis_rel = -1;
  double worst_err = -1;
  // torch.testing's greatest differences over the mismatches: a NaN difference wins (torch.max
  // propagates NaN; the first one is reported), else the largest.
  auto greater = [](double v, double best) { return std::isnan(v) ? !std::isnan(best) : v > best; };
  for (size_t i = 0; i < a.size(); ++i) {
    double x = a[i], y = e[i];
    // torch.isclose: equal values (infinities included) match; otherwise the difference must
    // be finite and within atol + rtol * |expected|.
    double diff = std::fabs(x - y);
    bool ok = x == y || (std::isnan(x) && std::isnan(y) && opts.equal_nan) ||
              (std::isfinite(diff) && diff <= atol + rtol * std::fabs(y));
    // Statistics over all elements: NaN-vs-number and inf-vs-other count as infinite.
    double abs_err = ok ? (std::isfinite(diff) ? diff : 0) : (std::isnan(diff) ? inf : diff);
    double rel_err = !std::isfinite(abs_err) ? inf
                     : y != 0                ? abs_err / std::fabs(y)
                                             : (abs_err != 0 ? inf : 0);
    if (!ok) {
      ++r.mismatches;
      double rel = diff / std::fabs(y); // as torch: inf where expected is 0, NaN with a NaN
      if (mis_abs < 0 || greater(diff, r.mismatch_abs)) {
        r.mismatch_abs = diff;
        mis_abs = int64_t(i);
      }
      if (mis_rel < 0 || greater(rel, r.mismatch_rel)) {
        r.mismatch_rel = rel;
        mis_rel = int64_t(i);
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
  r.ok = r.mismatches == 0;
  if (r.ok) return r;
  r.mismatch_abs_index = unravel(mis_abs, actual.sizes());
  r.mismatch_rel_index = unravel(mis_rel, actual.sizes());
  r.mismatch_actual = a[size_t(mis_abs)];
  r.mismatch_expected = e[size_t(mis_abs)];
  // torch.testing._comparison.make_tensor_mismatch_msg, line for line.
  bool equality = rtol == 0 && atol == 0;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * double(r.mismatches) / double(r.numel));
  auto diff_line = [&](const char* type, double d, const std::vector<int64_t>& idx, double tol) {
    return std::string("Greatest ") + type + " difference: " + python_float(d) + " at index " +
           format_index(idx) + (equality ? "" : " (up to " + python_float(tol) + " allowed)");
  };
  r.message = std::string("Tensor-likes are not ") + (equality ? "equal" : "close") + "!\n\n" +
              "Mismatched elements: " + std::to_string(r.mismatches) + " / " +
              std::to_string(r.numel) + " (" + pct + ")\n" +
              diff_line("absolute", r.mismatch_abs, r.mismatch_abs_index, atol) + "\n" +
              diff_line("relative", r.mismatch_rel, r.mismatch_rel_index, rtol);
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
