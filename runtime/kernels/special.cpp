// Reference kernels of the special functions: lgamma, digamma, polygamma, erfinv, i0 and
// special_i1. Each is computed in float64 (integer and bool inputs give the default float dtype)
// and rounded once to the result's dtype; the formulas are Cephes' (digamma, trigamma, zeta) as
// PyTorch's aten/src/ATen/native/Math.h has them, the power series of the modified Bessel
// functions, and erfinv as Giles' approximation refined by two Newton steps.
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
#undef SPECIAL

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
    {OpId::digamma, k_digamma}, {OpId::erfinv, k_erfinv},       {OpId::i0, k_i0},
    {OpId::lgamma, k_lgamma},   {OpId::polygamma, k_polygamma}, {OpId::special_i1, k_i1},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> special_kernels() {
  return kSpecialKernels;
}

} // namespace fxc::kernel_detail
