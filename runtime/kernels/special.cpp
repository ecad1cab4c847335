// Reference kernels of the special functions: lgamma, digamma, polygamma, erfinv, i0,
// special_i1, and (issue 18) special_erfcx, special_ndtr, special_ndtri, special_log_ndtr,
// special_i0e, special_i1e, mvlgamma, special_polygamma, igamma, igammac and special_zeta. Each is
// computed in float64 (integer and bool inputs give the default float dtype) and rounded once to
// the result's dtype; the formulas are Cephes' (digamma, trigamma, zeta) as PyTorch's
// aten/src/ATen/native/Math.h has them, the power series of the modified Bessel functions, and
// erfinv as Giles' approximation refined by two Newton steps.
#include "runtime/kernels/kernel_util.h"

#include "frontend/special_math.h"

namespace fxc::kernel_detail {
namespace {

Tensor special_unary(const KernelCall& c, const Tensor& x, FloatFn f, const double* extra) {
  DType dt = is_floating(x.dtype()) ? x.dtype() : c.default_float();
  dt = c.result_dtype(dt);
  return elementwise({x}, dt, dt, f, nullptr, extra);
}

#define SPECIAL(NAME, EXPR)                                                                        \
  Tensors k_##NAME(const KernelCall& c) {                                                          \
    return {special_unary(                                                                         \
        c, c.tensor("self"), [](const double* v, const double*) { return EXPR(v[0]); }, nullptr)}; \
  }
SPECIAL(lgamma, std::lgamma)
SPECIAL(digamma, special::digamma)
SPECIAL(erfinv, special::erfinv)
SPECIAL(i0, special::bessel_i0)
SPECIAL(i1, special::bessel_i1)
SPECIAL(erfcx, special::erfcx)
SPECIAL(ndtr, special::ndtr)
SPECIAL(ndtri, special::ndtri)
SPECIAL(log_ndtr, special::log_ndtr)
#undef SPECIAL

Tensors k_i0e(const KernelCall& c) {
  return {special_unary(
      c, c.tensor("self"),
      [](const double* v, const double*) { return special::bessel_ie(0, v[0]); }, nullptr)};
}
Tensors k_i1e(const KernelCall& c) {
  return {special_unary(
      c, c.tensor("self"),
      [](const double* v, const double*) { return special::bessel_ie(1, v[0]); }, nullptr)};
}

// mvlgamma(x, p) = sum_{j < p} lgamma(x - j / 2) + p (p - 1) / 4 log(pi), defined for
// x > (p - 1) / 2.
Tensors k_mvlgamma(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const int64_t p = c.arg("p").i;
  if (p < 1) fail("p has to be greater than or equal to 1");
  for (double v : values(x))
    if (!(v > (double(p) - 1) / 2)) fail("All elements must be greater than (p-1)/2");
  const double extra[1] = {double(p)};
  return {special_unary(
      c, x,
      [](const double* v, const double* e) {
        double r = e[0] * (e[0] - 1) / 4 * std::log(special::kPi);
        for (int64_t j = 0; j < int64_t(e[0]); ++j) r += std::lgamma(v[0] - double(j) / 2);
        return r;
      },
      extra)};
}

// igamma, igammac (floating only) and special_zeta (integers promote to the default float).
Tensor special_binary(const KernelCall& c, const char* kernel, bool promote, FloatFn f) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("other");
  DType dt = result_type({a, b}, {}, c);
  if (!is_floating(dt)) {
    if (!promote) not_implemented(kernel, dt);
    dt = c.result_dtype(c.default_float());
  }
  return elementwise({a, b}, dt, dt, f, nullptr);
}
Tensors k_igamma(const KernelCall& c) {
  return {special_binary(c, "igamma_cpu", false, [](const double* v, const double*) {
    return special::igamma(v[0], v[1], false);
  })};
}
Tensors k_igammac(const KernelCall& c) {
  return {special_binary(c, "igammac_cpu", false, [](const double* v, const double*) {
    return special::igamma(v[0], v[1], true);
  })};
}
Tensors k_zeta(const KernelCall& c) {
  return {special_binary(c, "zeta_cpu", true,
                         [](const double* v, const double*) { return special::zeta(v[0], v[1]); })};
}

Tensors k_polygamma(const KernelCall& c) {
  int64_t n = c.arg("n").i;
  if (n < 0) fail("polygamma(n, x) does not support negative n, got n=" + std::to_string(n));
  const double extra[1] = {double(n)};
  return {special_unary(
      c, c.tensor("self"),
      [](const double* v, const double* e) { return special::polygamma(int64_t(e[0]), v[0]); },
      extra)};
}

const OpTable<KernelFn>::Row kSpecialKernels[] = {
    {OpId::digamma, k_digamma},
    {OpId::erfinv, k_erfinv},
    {OpId::i0, k_i0},
    {OpId::lgamma, k_lgamma},
    {OpId::polygamma, k_polygamma},
    {OpId::special_i1, k_i1},
    // Issue 18.
    {OpId::igamma, k_igamma},
    {OpId::igammac, k_igammac},
    {OpId::mvlgamma, k_mvlgamma},
    {OpId::special_erfcx, k_erfcx},
    {OpId::special_i0e, k_i0e},
    {OpId::special_i1e, k_i1e},
    {OpId::special_log_ndtr, k_log_ndtr},
    {OpId::special_ndtr, k_ndtr},
    {OpId::special_ndtri, k_ndtri},
    {OpId::special_polygamma, k_polygamma},
    {OpId::special_zeta, k_zeta},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> special_kernels() {
  return kSpecialKernels;
}

} // namespace fxc::kernel_detail
