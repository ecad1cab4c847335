// Reference kernels of the special functions: lgamma, digamma, polygamma, erfinv, i0,
// special_i1, and (issue 18) special_erfcx, special_ndtr, special_ndtri, special_log_ndtr,
// special_i0e, special_i1e, mvlgamma, special_polygamma, igamma, igammac and special_zeta. Each is
// computed in float64 (integer and bool inputs give the default float dtype) and rounded once to
// the result's dtype; the formulas are Cephes' (digamma, trigamma, zeta) as PyTorch's
// aten/src/ATen/native/Math.h has them, the power series of the modified Bessel functions, and
// erfinv as Giles' approximation refined by two Newton steps.
#include "runtime/kernels/kernel_util.h"

#include "frontend/special_fns.h"
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

// The Bessel, Airy and orthogonal-polynomial functions (frontend/special_fns.h), computed in
// the result's own precision as PyTorch's CPU kernels do (float or double; integer inputs give
// the default float dtype, and the polynomials promote x and n together). PyTorch's CPU kernels
// take no 16-bit floats.
template <ScalarFn F> double call_f64(const double* v, const double*) {
  return special::eval_scalar_fn<double>(F, v);
}
template <ScalarFn F> double call_f32(const double* v, const double*) {
  const float a[2] = {float(v[0]), scalar_fn_arity(F) == 2 ? float(v[1]) : 0.0f};
  return double(special::eval_scalar_fn<float>(F, a));
}
template <ScalarFn F> Tensors k_call(const KernelCall& c) {
  const bool unary = scalar_fn_arity(F) == 1;
  // The unary functions' operand is "self" or "x" (airy_ai, scaled_modified_bessel_k0/k1,
  // spherical_bessel_j0), as native_functions.yaml names it.
  const char* x_name = c.node.schema->index_of("x") >= 0 ? "x" : "self";
  std::vector<const char*> names =
      unary ? std::vector<const char*>{x_name} : std::vector<const char*>{"x", "n"};
  Tensors ts;
  std::vector<Arg> scalars;
  for (const char* nm : names) {
    const Arg& a = c.arg(nm);
    if (a.kind == Arg::Kind::Tensor)
      ts.push_back(c.tensor(nm));
    else
      scalars.push_back(a);
  }
  DType dt = result_type(ts, scalars, c);
  if (!is_floating(dt)) dt = c.result_dtype(c.default_float());
  // PyTorch's kernel name: "aten.special_bessel_j0.default" -> "bessel_j0_cpu".
  const std::string& t = c.node.target;
  const size_t b = t.find("special_") + 8;
  const std::string kernel = t.substr(b, t.find('.', b) - b) + "_cpu";
  if (dt != DType::F32 && dt != DType::F64) not_implemented(kernel.c_str(), dt);
  Tensors ins;
  for (const char* nm : names) {
    const Arg& a = c.arg(nm);
    ins.push_back(a.kind == Arg::Kind::Tensor ? c.tensor(nm) : filled(dt, {}, a));
  }
  return {elementwise(ins, dt, dt, dt == DType::F64 ? call_f64<F> : call_f32<F>, nullptr)};
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
    // The Bessel, Airy and orthogonal-polynomial functions.
    {OpId::special_airy_ai, k_call<ScalarFn::AiryAi>},
    {OpId::special_bessel_j0, k_call<ScalarFn::BesselJ0>},
    {OpId::special_bessel_j1, k_call<ScalarFn::BesselJ1>},
    {OpId::special_bessel_y0, k_call<ScalarFn::BesselY0>},
    {OpId::special_bessel_y1, k_call<ScalarFn::BesselY1>},
    {OpId::special_chebyshev_polynomial_t, k_call<ScalarFn::ChebyshevT>},
    {OpId::special_chebyshev_polynomial_t_x_scalar, k_call<ScalarFn::ChebyshevT>},
    {OpId::special_chebyshev_polynomial_t_n_scalar, k_call<ScalarFn::ChebyshevT>},
    {OpId::special_chebyshev_polynomial_u, k_call<ScalarFn::ChebyshevU>},
    {OpId::special_chebyshev_polynomial_u_x_scalar, k_call<ScalarFn::ChebyshevU>},
    {OpId::special_chebyshev_polynomial_u_n_scalar, k_call<ScalarFn::ChebyshevU>},
    {OpId::special_chebyshev_polynomial_v, k_call<ScalarFn::ChebyshevV>},
    {OpId::special_chebyshev_polynomial_v_x_scalar, k_call<ScalarFn::ChebyshevV>},
    {OpId::special_chebyshev_polynomial_v_n_scalar, k_call<ScalarFn::ChebyshevV>},
    {OpId::special_chebyshev_polynomial_w, k_call<ScalarFn::ChebyshevW>},
    {OpId::special_chebyshev_polynomial_w_x_scalar, k_call<ScalarFn::ChebyshevW>},
    {OpId::special_chebyshev_polynomial_w_n_scalar, k_call<ScalarFn::ChebyshevW>},
    {OpId::special_hermite_polynomial_h, k_call<ScalarFn::HermiteH>},
    {OpId::special_hermite_polynomial_h_x_scalar, k_call<ScalarFn::HermiteH>},
    {OpId::special_hermite_polynomial_h_n_scalar, k_call<ScalarFn::HermiteH>},
    {OpId::special_hermite_polynomial_he, k_call<ScalarFn::HermiteHe>},
    {OpId::special_hermite_polynomial_he_x_scalar, k_call<ScalarFn::HermiteHe>},
    {OpId::special_hermite_polynomial_he_n_scalar, k_call<ScalarFn::HermiteHe>},
    {OpId::special_laguerre_polynomial_l, k_call<ScalarFn::LaguerreL>},
    {OpId::special_laguerre_polynomial_l_x_scalar, k_call<ScalarFn::LaguerreL>},
    {OpId::special_laguerre_polynomial_l_n_scalar, k_call<ScalarFn::LaguerreL>},
    {OpId::special_legendre_polynomial_p, k_call<ScalarFn::LegendreP>},
    {OpId::special_legendre_polynomial_p_x_scalar, k_call<ScalarFn::LegendreP>},
    {OpId::special_legendre_polynomial_p_n_scalar, k_call<ScalarFn::LegendreP>},
    {OpId::special_modified_bessel_i0, k_call<ScalarFn::ModifiedBesselI0>},
    {OpId::special_modified_bessel_i1, k_call<ScalarFn::ModifiedBesselI1>},
    {OpId::special_modified_bessel_k0, k_call<ScalarFn::ModifiedBesselK0>},
    {OpId::special_modified_bessel_k1, k_call<ScalarFn::ModifiedBesselK1>},
    {OpId::special_scaled_modified_bessel_k0, k_call<ScalarFn::ScaledModifiedBesselK0>},
    {OpId::special_scaled_modified_bessel_k1, k_call<ScalarFn::ScaledModifiedBesselK1>},
    {OpId::special_shifted_chebyshev_polynomial_t, k_call<ScalarFn::ShiftedChebyshevT>},
    {OpId::special_shifted_chebyshev_polynomial_t_x_scalar, k_call<ScalarFn::ShiftedChebyshevT>},
    {OpId::special_shifted_chebyshev_polynomial_t_n_scalar, k_call<ScalarFn::ShiftedChebyshevT>},
    {OpId::special_shifted_chebyshev_polynomial_u, k_call<ScalarFn::ShiftedChebyshevU>},
    {OpId::special_shifted_chebyshev_polynomial_u_x_scalar, k_call<ScalarFn::ShiftedChebyshevU>},
    {OpId::special_shifted_chebyshev_polynomial_u_n_scalar, k_call<ScalarFn::ShiftedChebyshevU>},
    {OpId::special_shifted_chebyshev_polynomial_v, k_call<ScalarFn::ShiftedChebyshevV>},
    {OpId::special_shifted_chebyshev_polynomial_v_x_scalar, k_call<ScalarFn::ShiftedChebyshevV>},
    {OpId::special_shifted_chebyshev_polynomial_v_n_scalar, k_call<ScalarFn::ShiftedChebyshevV>},
    {OpId::special_shifted_chebyshev_polynomial_w, k_call<ScalarFn::ShiftedChebyshevW>},
    {OpId::special_shifted_chebyshev_polynomial_w_x_scalar, k_call<ScalarFn::ShiftedChebyshevW>},
    {OpId::special_shifted_chebyshev_polynomial_w_n_scalar, k_call<ScalarFn::ShiftedChebyshevW>},
    {OpId::special_spherical_bessel_j0, k_call<ScalarFn::SphericalBesselJ0>},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> special_kernels() {
  return kSpecialKernels;
}

} // namespace fxc::kernel_detail
