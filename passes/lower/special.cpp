// Lowering rules of the special functions (lgamma, digamma, polygamma, erfinv, i0, special_i1)
// as loop-IR expressions in float64 over the existing value operations (no library calls
// beyond log, exp, sin, tan, erf and pow, which both targets have), rounded once to the result's
// dtype. Each follows the reference kernel's formula with fixed trip counts:
//   lgamma    x < 0.5: log(pi / |sin(pi frac(x))|) - lgamma(1 - x); lgamma(y) of y >= 0.5 as
//             Stirling's series at y + 8 minus sum_k log(y + k), k < 8
//   digamma   x < 0: digamma(1 - x) - pi / tan(pi (x - trunc(x))); ten recurrence steps, then the
//             asymptotic series (Cephes' coefficients)
//   polygamma n = 0: digamma; n = 1: PyTorch's trigamma (reflection, six steps, series);
//             n >= 2: (-1)^(n+1) n! zeta(n + 1, x), zeta by the kernel's terms (9, and up to
//             64 more while x + i <= 9) and Cephes' Euler-Maclaurin tail (exact for x > -55)
//   erfinv    Giles' approximation and two Newton steps (erf and exp)
//   i0, i1    |x| <= 30: the power series (60 terms); beyond: the asymptotic expansion
//             exp(|x| - log(2 pi |x|) / 2) sum_k a_k |x|^-k (15 terms); i1 is odd
//   i0e, i1e  the same times exp(-|x|) (the expansion without its exponential)
//   erfcx     x >= 3: a continued fraction from its 40th term; |x| < 3: exp(x^2) (1 - erf(x));
//             x <= -3: 2 exp(x^2) - erfcx(-x). erfc, ndtr and log_ndtr from it
//   ndtri     Abramowitz and Stegun's 26.2.23 estimate, then three Newton steps on
//             log(ndtr(x)) = log(p)
//   mvlgamma  the sum of p lgamma terms
//   igamma,   x < a + 1: the series (200 terms), else the continued fraction (200 terms from
//   igammac   its tail): accurate for a and x up to about 100 (the kernel's series runs on)
//   zeta      special_zeta's tensor s: zeta(n + 1, x)'s formula with s a value
#include "passes/lower/lower_util.h"

#include "frontend/scalar_fn.h"
#include "frontend/special_math.h"

namespace fxc::lower_detail {
namespace {

namespace sp = fxc::special;

VPtr k(double v) {
  return v_const(v, DType::F64);
}
VPtr add(VPtr a, VPtr b) {
  return v_binary(VOp::Add, std::move(a), std::move(b));
}
VPtr sub(VPtr a, VPtr b) {
  return v_binary(VOp::Sub, std::move(a), std::move(b));
}
VPtr mul(VPtr a, VPtr b) {
  return v_binary(VOp::Mul, std::move(a), std::move(b));
}
VPtr div(VPtr a, VPtr b) {
  return v_binary(VOp::Div, std::move(a), std::move(b));
}
VPtr lt(VPtr a, VPtr b) {
  return v_binary(VOp::Lt, std::move(a), std::move(b));
}
VPtr eq(VPtr a, VPtr b) {
  return v_binary(VOp::Eq, std::move(a), std::move(b));
}
VPtr un(VOp o, VPtr a) {
  return v_unary(o, std::move(a));
}
VPtr sel(VPtr c, VPtr a, VPtr b) {
  return v_where(std::move(c), std::move(a), std::move(b));
}
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// lgamma(y) for y >= 0.5 (and +inf): Stirling's series at y + 8.
VPtr lgamma_pos(const VPtr& y) {
  VPtr z = add(y, k(8.0));
  VPtr iz = div(k(1.0), z), iz2 = mul(iz, iz);
  VPtr series = mul(
      iz, add(k(1.0 / 12), mul(iz2, add(k(-1.0 / 360),
                                        mul(iz2, add(k(1.0 / 1260), mul(iz2, k(-1.0 / 1680))))))));
  VPtr st =
      add(sub(mul(sub(z, k(0.5)), un(VOp::Log, z)), z), add(k(0.91893853320467274178), series));
  VPtr logs = un(VOp::Log, y);
  for (int i = 1; i < 8; ++i) logs = add(logs, un(VOp::Log, add(y, k(double(i)))));
  return sel(eq(y, k(kInf)), k(kInf), sub(st, logs));
}

VPtr lgamma_ir(const VPtr& x) {
  VPtr refl = lt(x, k(0.5));
  VPtr y = sel(refl, sub(k(1.0), x), x);
  VPtr ly = lgamma_pos(y);
  VPtr frac = sub(x, un(VOp::Floor, x));
  VPtr s = un(VOp::Abs, un(VOp::Sin, mul(k(sp::kPi), frac)));
  VPtr reflected = sub(un(VOp::Log, div(k(sp::kPi), s)), ly);
  VPtr pole = v_binary(VOp::And, v_binary(VOp::Le, x, k(0.0)), eq(x, un(VOp::Floor, x)));
  VPtr r = sel(refl, reflected, ly);
  // Poles (0, -1, -2, ...) and -inf give +inf, as PyTorch's lgamma does.
  return sel(v_binary(VOp::Or, pole, eq(x, k(-kInf))), k(kInf), r);
}

VPtr digamma_ir(const VPtr& x) {
  VPtr neg = lt(x, k(0.0));
  VPtr y = sel(neg, sub(k(1.0), x), x);
  VPtr acc = k(0.0);
  for (int i = 0; i < 10; ++i) acc = sub(acc, div(k(1.0), add(y, k(double(i)))));
  VPtr z = add(y, k(10.0));
  static const double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                             7.57575757575757575758E-3, -4.16666666666666666667E-3,
                             3.96825396825396825397E-3, -8.33333333333333333333E-3,
                             8.33333333333333333333E-2};
  VPtr iz2 = div(k(1.0), mul(z, z));
  VPtr p = k(0.0);
  for (double a : A) p = add(mul(p, iz2), k(a));
  VPtr tail = sel(lt(z, k(1.0e17)), mul(iz2, p), k(0.0));
  VPtr pos = sub(sub(add(acc, un(VOp::Log, z)), div(k(0.5), z)), tail);
  VPtr r = sub(x, un(VOp::Trunc, x));
  VPtr reflected = sub(pos, div(k(sp::kPi), un(VOp::Tan, mul(k(sp::kPi), r))));
  VPtr res = sel(neg, reflected, pos);
  res = sel(v_binary(VOp::And, neg, eq(x, un(VOp::Trunc, x))), k(kNaN), res);
  // digamma(+-0) = -+inf: the sign of 1/x tells the zeros apart.
  VPtr zero = sel(lt(k(0.0), div(k(1.0), x)), k(-kInf), k(kInf));
  return sel(eq(x, k(0.0)), zero, res);
}

VPtr trigamma_ir(const VPtr& x0) {
  VPtr refl = lt(x0, k(0.5));
  VPtr s = un(VOp::Sin, mul(k(sp::kPi), x0));
  VPtr result = sel(refl, sub(k(0.0), div(k(sp::kPi * sp::kPi), mul(s, s))), k(0.0));
  VPtr x = sel(refl, sub(k(1.0), x0), x0);
  for (int i = 0; i < 6; ++i) {
    result = add(result, div(k(1.0), mul(x, x)));
    x = add(x, k(1.0));
  }
  VPtr ixx = div(k(1.0), mul(x, x));
  VPtr poly = add(add(k(1.0), div(k(1.0), mul(k(2.0), x))),
                  mul(ixx, sub(k(1. / 6), mul(ixx, sub(k(1. / 30), mul(ixx, k(1. / 42)))))));
  result = add(result, div(poly, x));
  return sel(refl, sub(k(0.0), result), result);
}

/// The direct terms of the lowered Hurwitz zeta and where its Euler-Maclaurin tail starts.
struct ZetaHead {
  VPtr sum; ///< q^-s + sum of the kept (q + i)^-s
  VPtr b;   ///< the last kept term
  VPtr w;   ///< q + the number of terms
};

/// The kernel sums terms while i < 9 or q + i <= 9, i.e. cnt = max(9, floor(9 - q) + 1) of
/// them, so that the tail starts at w = q + cnt > 9. Here: nine terms, then up to kShift more,
/// each kept when i <= cnt (exact for q > 9 - kShift). `ns` is -s.
ZetaHead zeta_head(const VPtr& ns, const VPtr& q) {
  constexpr int kShift = 64;
  VPtr cnt = v_binary(VOp::Max, k(9.0), add(un(VOp::Floor, sub(k(9.0), q)), k(1.0)));
  VPtr sum = v_binary(VOp::Pow, q, ns);
  VPtr b;
  for (int i = 1; i <= 9 + kShift; ++i) {
    VPtr term = v_binary(VOp::Pow, add(q, k(double(i))), ns);
    if (i <= 9) {
      b = term;
      sum = add(sum, term);
      continue;
    }
    VPtr keep = v_binary(VOp::Le, k(double(i)), cnt);
    sum = add(sum, sel(keep, term, k(0.0)));
    b = sel(keep, term, b);
  }
  return {sum, b, add(q, cnt)};
}

/// zeta(s, q) for integer s >= 3: zeta_head's terms, then the Euler-Maclaurin tail.
VPtr zeta_ir(double s, const VPtr& q) {
  auto [sum, b, w] = zeta_head(k(-s), q);
  sum = add(sum, div(mul(b, w), k(s - 1)));
  sum = sub(sum, mul(k(0.5), b));
  double a = 1.0, kk = 0.0;
  VPtr bb = b;
  for (double A : sp::kZetaA) {
    a *= s + kk;
    bb = div(bb, w);
    sum = add(sum, div(mul(k(a), bb), k(A)));
    kk += 1.0;
    a *= s + kk;
    bb = div(bb, w);
    kk += 1.0;
  }
  VPtr pole = v_binary(VOp::And, v_binary(VOp::Le, q, k(0.0)), eq(q, un(VOp::Floor, q)));
  return sel(pole, k(kInf), sum);
}

VPtr erfinv_ir(const VPtr& y) {
  VPtr w = sub(k(0.0), un(VOp::Log, mul(sub(k(1.0), y), add(k(1.0), y))));
  auto horner = [](VPtr t, std::initializer_list<double> cs) {
    VPtr p;
    for (double c : cs) p = p ? add(k(c), mul(p, t)) : k(c);
    return p;
  };
  VPtr central = horner(sub(w, k(2.5)),
                        {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                         0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
  VPtr tail = horner(sub(un(VOp::Sqrt, w), k(3.0)),
                     {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                      -0.0076224613, 0.00943887047, 1.00167406, 2.83297682});
  VPtr x = mul(sel(lt(w, k(5.0)), central, tail), y);
  for (int i = 0; i < 2; ++i)
    x = sub(x, div(sub(un(VOp::Erf, x), y),
                   mul(k(1.12837916709551257390), un(VOp::Exp, sub(k(0.0), mul(x, x))))));
  VPtr ay = un(VOp::Abs, y);
  VPtr inf = sel(lt(y, k(0.0)), k(-kInf), k(kInf));
  return sel(v_binary(VOp::Gt, ay, k(1.0)), k(kNaN), sel(eq(ay, k(1.0)), inf, x));
}

/// I_nu(x), nu = 0 or 1.
VPtr bessel_ir(int nu, const VPtr& x) {
  VPtr ax = un(VOp::Abs, x);
  VPtr q = div(mul(x, x), k(4.0));
  VPtr t = k(1.0), sum = k(1.0);
  for (int i = 1; i <= 60; ++i) {
    t = mul(t, mul(q, k(1.0 / (double(i) * double(i + nu)))));
    sum = add(sum, t);
  }
  VPtr series = nu == 0 ? sum : mul(div(x, k(2.0)), sum);
  // sum_k (-1)^k a_k(nu) / z^k, a_k = prod_j (4 nu^2 - (2j - 1)^2) / (k! 8^k).
  VPtr iz = div(k(1.0), ax), acc = k(0.0);
  std::vector<double> coef;
  double a = 1.0;
  for (int kk = 0; kk < 15; ++kk) {
    if (kk > 0) a *= -(4.0 * nu * nu - double((2 * kk - 1) * (2 * kk - 1))) / (8.0 * kk);
    coef.push_back(a);
  }
  for (auto it = coef.rbegin(); it != coef.rend(); ++it) acc = add(mul(acc, iz), k(*it));
  VPtr scale = un(VOp::Exp, sub(ax, mul(k(0.5), un(VOp::Log, mul(k(2 * sp::kPi), ax)))));
  VPtr asym = mul(scale, acc);
  if (nu == 1) asym = sel(lt(x, k(0.0)), sub(k(0.0), asym), asym);
  return sel(v_binary(VOp::Le, ax, k(30.0)), series, asym);
}

void special(Lowerer& L, int n, const std::function<VPtr(VPtr)>& f) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  L.set_output(
      n, 0,
      L.pointwise(n, m.dtype, m.sizes,
                  [&](auto& idx) { return v_cast(f(v_cast(L.at(x, idx), DType::F64)), m.dtype); },
                  {&x}));
}

void lower_lgamma(Lowerer& L, int n) {
  special(L, n, lgamma_ir);
}
void lower_digamma(Lowerer& L, int n) {
  special(L, n, digamma_ir);
}
void lower_erfinv(Lowerer& L, int n) {
  special(L, n, erfinv_ir);
}
void lower_i0(Lowerer& L, int n) {
  special(L, n, [](VPtr x) { return bessel_ir(0, x); });
}
void lower_i1(Lowerer& L, int n) {
  special(L, n, [](VPtr x) { return bessel_ir(1, x); });
}
void lower_polygamma(Lowerer& L, int n) {
  int64_t order = L.node(n).arg("n").i;
  if (order < 0) L.fail(n, "polygamma(n, x) does not support negative n");
  if (order == 0) return special(L, n, digamma_ir);
  if (order == 1) return special(L, n, trigamma_ir);
  double factor = ((order % 2) ? 1.0 : -1.0) * std::exp(std::lgamma(double(order) + 1.0));
  special(L, n, [&](VPtr x) { return mul(k(factor), zeta_ir(double(order + 1), x)); });
}

// ---- Issue 18: erfc, erfcx, the normal distribution's functions, i0e/i1e, mvlgamma, the
// incomplete gamma functions and Hurwitz zeta, following frontend/special_math.h.

/// The continued fraction of erfcx at z >= 3 (special::erfcx_cf).
VPtr erfcx_cf_ir(const VPtr& z) {
  VPtr t = k(0.0);
  for (int m = sp::kErfcxCfTerms; m >= 1; --m) t = div(k(m / 2.0), add(z, t));
  return div(k(sp::kInvSqrtPi), add(z, t));
}
VPtr erfcx_ir(const VPtr& x) {
  VPtr cf = erfcx_cf_ir(v_binary(VOp::Max, un(VOp::Abs, x), k(sp::kErfcxCfFrom)));
  VPtr ex2 = un(VOp::Exp, mul(x, x));
  VPtr mid = mul(ex2, sub(k(1.0), un(VOp::Erf, x)));
  VPtr r = sel(v_binary(VOp::Gt, x, k(-sp::kErfcxCfFrom)), mid, sub(mul(k(2.0), ex2), cf));
  r = sel(v_binary(VOp::Ge, x, k(sp::kErfcxCfFrom)), sel(eq(x, k(kInf)), k(0.0), cf), r);
  return sel(v_binary(VOp::Ne, x, x), x, r);
}
VPtr erfc_ir(const VPtr& x) {
  VPtr cf = erfcx_cf_ir(v_binary(VOp::Max, x, k(sp::kErfcxCfFrom)));
  VPtr tail = mul(un(VOp::Exp, sub(k(0.0), mul(x, x))), cf);
  return sel(v_binary(VOp::Ge, x, k(sp::kErfcxCfFrom)), tail, sub(k(1.0), un(VOp::Erf, x)));
}
const double kSqrtHalf = 0.70710678118654752440;
VPtr ndtr_ir(const VPtr& x) {
  return mul(k(0.5), erfc_ir(mul(x, k(-kSqrtHalf))));
}
VPtr log_ndtr_ir(const VPtr& x) {
  VPtr t = mul(x, k(kSqrtHalf));
  VPtr low = sub(un(VOp::Log, div(erfcx_ir(sub(k(0.0), t)), k(2.0))), mul(t, t));
  VPtr high = un(VOp::Log1p, div(sub(k(0.0), erfc_ir(t)), k(2.0)));
  return sel(lt(x, k(-1.0)), low, high);
}
/// q = min(p, 1 - p), kept inside (0, 1/2] so that masked lanes stay finite.
VPtr ndtri_q(const VPtr& p) {
  VPtr q = sel(v_binary(VOp::Gt, p, k(0.5)), sub(k(1.0), p), p);
  return v_binary(VOp::Max, q, k(std::numeric_limits<double>::denorm_min()));
}
/// Abramowitz and Stegun's 26.2.23 estimate of ndtri(q), q <= 1/2.
VPtr ndtri_start(const VPtr& q) {
  VPtr t = un(VOp::Sqrt, mul(k(-2.0), un(VOp::Log, q)));
  VPtr num = add(k(sp::kNdtriC[0]), mul(t, add(k(sp::kNdtriC[1]), mul(t, k(sp::kNdtriC[2])))));
  VPtr den = add(k(1.0), mul(t, add(k(sp::kNdtriD[0]),
                                    mul(t, add(k(sp::kNdtriD[1]), mul(t, k(sp::kNdtriD[2])))))));
  return sub(div(num, den), t);
}
/// One Newton step on log(ndtr(x)) = log(q).
VPtr ndtri_newton(const VPtr& x, const VPtr& q) {
  VPtr d = div(k(0.79788456080286535588), erfcx_ir(mul(x, k(-kSqrtHalf))));
  return sub(x, div(sub(log_ndtr_ir(x), un(VOp::Log, q)), d));
}
VPtr ndtri_finish(const VPtr& x, const VPtr& p) {
  VPtr r = sel(v_binary(VOp::Gt, p, k(0.5)), sub(k(0.0), x), x);
  r = sel(eq(p, k(0.0)), k(-kInf), sel(eq(p, k(1.0)), k(kInf), r));
  VPtr bad = v_binary(VOp::Or, v_binary(VOp::Ne, p, p),
                      v_binary(VOp::Or, lt(p, k(0.0)), v_binary(VOp::Gt, p, k(1.0))));
  return sel(bad, k(kNaN), r);
}

/// exp(-|x|) I_nu(|x|) (sign(x) for nu = 1), as special::bessel_ie.
VPtr bessel_e_ir(int nu, const VPtr& x) {
  VPtr ax = un(VOp::Abs, x);
  VPtr q = div(mul(ax, ax), k(4.0));
  VPtr t = k(1.0), sum = k(1.0);
  for (int i = 1; i <= 60; ++i) {
    t = mul(t, mul(q, k(1.0 / (double(i) * double(i + nu)))));
    sum = add(sum, t);
  }
  VPtr series = mul(nu == 0 ? sum : mul(div(ax, k(2.0)), sum), un(VOp::Exp, sub(k(0.0), ax)));
  double a = 1.0, coef[sp::kBesselAsymTerms];
  for (int kk = 0; kk < sp::kBesselAsymTerms; ++kk) {
    if (kk > 0) a *= -(4.0 * nu * nu - double((2 * kk - 1) * (2 * kk - 1))) / (8.0 * kk);
    coef[kk] = a;
  }
  VPtr iz = div(k(1.0), ax), acc = k(0.0);
  for (int kk = sp::kBesselAsymTerms - 1; kk >= 0; --kk) acc = add(mul(acc, iz), k(coef[kk]));
  VPtr asym = div(acc, un(VOp::Sqrt, mul(k(2 * sp::kPi), ax)));
  VPtr r = sel(v_binary(VOp::Le, ax, k(sp::kBesselAsymFrom)), series, asym);
  if (nu == 1) r = sel(lt(x, k(0.0)), sub(k(0.0), r), r);
  return sel(v_binary(VOp::Ne, x, x), x, r);
}

/// P(a, x) (upper = false) or Q(a, x): the series (kIgammaTerms terms) where x < a + 1, the
/// continued fraction elsewhere, with special::igamma's special values.
VPtr igamma_ir(const VPtr& a, const VPtr& x, bool upper) {
  VPtr sum = k(1.0), term = k(1.0);
  for (int i = 1; i <= sp::kIgammaTerms; ++i) {
    term = mul(term, div(x, add(a, k(double(i)))));
    sum = add(sum, term);
  }
  VPtr la = sub(mul(a, un(VOp::Log, x)), x);
  VPtr p_series = mul(un(VOp::Exp, sub(la, lgamma_ir(add(a, k(1.0))))), sum);
  VPtr t = k(0.0);
  for (int i = sp::kIgammaTerms; i >= 1; --i) {
    double di = double(i);
    t = div(mul(k(-di), sub(k(di), a)), add(add(x, k(2 * di + 1)), sub(t, a)));
  }
  VPtr q_cf = div(un(VOp::Exp, sub(la, lgamma_ir(a))), add(sub(add(x, k(1.0)), a), t));
  VPtr use_series = lt(x, add(a, k(1.0)));
  VPtr r = upper ? sel(use_series, sub(k(1.0), p_series), q_cf)
                 : sel(use_series, p_series, sub(k(1.0), q_cf));
  const double one_if_upper = upper ? 1.0 : 0.0;
  auto isinf = [](const VPtr& v) { return eq(un(VOp::Abs, v), k(kInf)); };
  r = sel(isinf(x), k(1.0 - one_if_upper), r);
  r = sel(isinf(a), sel(isinf(x), k(kNaN), k(one_if_upper)), r);
  r = sel(eq(x, k(0.0)), k(one_if_upper), r);
  r = sel(eq(a, k(0.0)), sel(v_binary(VOp::Gt, x, k(0.0)), k(1.0 - one_if_upper), k(kNaN)), r);
  VPtr bad = v_binary(VOp::Or, v_binary(VOp::Or, lt(x, k(0.0)), lt(a, k(0.0))),
                      v_binary(VOp::Or, v_binary(VOp::Ne, a, a), v_binary(VOp::Ne, x, x)));
  return sel(bad, k(kNaN), r);
}

/// Hurwitz zeta(s, q) for a tensor s: zeta_ir's terms with special::zeta's domain.
VPtr zeta_tensor_ir(const VPtr& s, const VPtr& q) {
  auto [sum, b, w] = zeta_head(sub(k(0.0), s), q);
  sum = add(sum, div(mul(b, w), sub(s, k(1.0))));
  sum = sub(sum, mul(k(0.5), b));
  VPtr a = k(1.0), kk = k(0.0);
  for (double A : sp::kZetaA) {
    a = mul(a, add(s, kk));
    b = div(b, w);
    sum = add(sum, div(mul(a, b), k(A)));
    kk = add(kk, k(1.0));
    a = mul(a, add(s, kk));
    b = div(b, w);
    kk = add(kk, k(1.0));
  }
  VPtr qint = eq(q, un(VOp::Floor, q)), qneg = v_binary(VOp::Le, q, k(0.0));
  VPtr r = sel(v_binary(VOp::And, qneg, qint), k(kInf), sum);
  r = sel(v_binary(VOp::And, qneg, v_binary(VOp::Ne, s, un(VOp::Floor, s))), k(kNaN), r);
  r = sel(lt(s, k(1.0)), k(kNaN), r);
  return sel(eq(s, k(1.0)), k(kInf), r);
}

void special_binary(Lowerer& L, int n, const std::function<VPtr(VPtr, VPtr)>& f) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr a = v_cast(operand_at(L, n, "self", idx, m.dtype), DType::F64);
                             VPtr b = v_cast(operand_at(L, n, "other", idx, m.dtype), DType::F64);
                             return v_cast(f(a, b), m.dtype);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}

void lower_erfc(Lowerer& L, int n) {
  special(L, n, erfc_ir);
}
void lower_erfcx(Lowerer& L, int n) {
  special(L, n, erfcx_ir);
}
void lower_ndtr(Lowerer& L, int n) {
  special(L, n, ndtr_ir);
}
void lower_log_ndtr(Lowerer& L, int n) {
  special(L, n, log_ndtr_ir);
}
// ndtri: each Newton step is a float64 buffer, since a step reads its estimate many times
// (one expression of all steps would grow geometrically wherever a pass walks it as a tree).
void lower_ndtri(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  LVal& p = L.input(n, "self");
  auto p_at = [&](auto& idx) { return v_cast(L.at(p, idx), DType::F64); };
  LVal x = L.pointwise(n, DType::F64, m.sizes,
                       [&](auto& idx) { return ndtri_start(ndtri_q(p_at(idx))); }, {&p});
  for (int i = 0; i < sp::kNdtriNewton; ++i) {
    L.realize(x);
    x = L.pointwise(n, DType::F64, m.sizes,
                    [&](auto& idx) { return ndtri_newton(L.at(x, idx), ndtri_q(p_at(idx))); },
                    {&x, &p});
  }
  L.set_output(
      n, 0,
      L.pointwise(n, m.dtype, m.sizes,
                  [&](auto& idx) { return v_cast(ndtri_finish(L.at(x, idx), p_at(idx)), m.dtype); },
                  {&x, &p}));
}
void lower_i0e(Lowerer& L, int n) {
  special(L, n, [](VPtr x) { return bessel_e_ir(0, x); });
}
void lower_i1e(Lowerer& L, int n) {
  special(L, n, [](VPtr x) { return bessel_e_ir(1, x); });
}
// mvlgamma: the values' domain (x > (p - 1) / 2) is checked by the reference kernel only.
void lower_mvlgamma(Lowerer& L, int n) {
  const int64_t p = L.node(n).arg("p").i;
  if (p < 1) L.fail(n, "p has to be greater than or equal to 1");
  special(L, n, [&](VPtr x) {
    VPtr r = k(double(p) * double(p - 1) / 4 * std::log(sp::kPi));
    for (int64_t j = 0; j < p; ++j) r = add(r, lgamma_ir(sub(x, k(double(j) / 2))));
    return r;
  });
}
void lower_igamma(Lowerer& L, int n) {
  special_binary(L, n, [](VPtr a, VPtr x) { return igamma_ir(a, x, false); });
}
void lower_igammac(Lowerer& L, int n) {
  special_binary(L, n, [](VPtr a, VPtr x) { return igamma_ir(a, x, true); });
}
void lower_zeta(Lowerer& L, int n) {
  special_binary(L, n, zeta_tensor_ir);
}

// The Bessel, Airy and orthogonal-polynomial functions: one VOp::Call of the op's scalar
// function (frontend/special_fns.h, which code generation emits once per module) on the
// operands converted to the opmath type, f64 for f64 results and f32 otherwise, as the
// reference kernel computes; like PyTorch's CPU kernels they take no 16-bit floats.
template <ScalarFn F> void lower_call(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  if (m.dtype != DType::F32 && m.dtype != DType::F64)
    L.fail(n, "this special function is not implemented for " + std::string(dtype_name(m.dtype)));
  const std::string x_name = L.node(n).schema->index_of("x") >= 0 ? "x" : "self";
  const std::vector<std::string> names = scalar_fn_arity(F) == 1
                                             ? std::vector<std::string>{x_name}
                                             : std::vector<std::string>{"x", "n"};
  std::vector<const LVal*> ins;
  for (const std::string& nm : names) ins.push_back(tensor_arg(L, n, nm));
  L.set_output(n, 0,
               L.pointwise(
                   n, m.dtype, m.sizes,
                   [&](const std::vector<IndexExpr>& idx) {
                     std::vector<VPtr> a;
                     for (const std::string& nm : names)
                       a.push_back(operand_at(L, n, nm, idx, m.dtype));
                     return v_call(F, std::move(a));
                   },
                   ins));
}

const OpTable<LowerFn>::Row kSpecialRules[] = {
    // Issue 18.
    {OpId::erfc, lower_erfc},
    {OpId::igamma, lower_igamma},
    {OpId::igammac, lower_igammac},
    {OpId::mvlgamma, lower_mvlgamma},
    {OpId::special_erfcx, lower_erfcx},
    {OpId::special_i0e, lower_i0e},
    {OpId::special_i1e, lower_i1e},
    {OpId::special_log_ndtr, lower_log_ndtr},
    {OpId::special_ndtr, lower_ndtr},
    {OpId::special_ndtri, lower_ndtri},
    {OpId::special_polygamma, lower_polygamma},
    {OpId::special_zeta, lower_zeta},
    {OpId::digamma, lower_digamma},
    {OpId::erfinv, lower_erfinv},
    {OpId::i0, lower_i0},
    {OpId::lgamma, lower_lgamma},
    {OpId::polygamma, lower_polygamma},
    {OpId::special_i1, lower_i1},
    // The Bessel, Airy and orthogonal-polynomial functions.
    {OpId::special_airy_ai, lower_call<ScalarFn::AiryAi>},
    {OpId::special_bessel_j0, lower_call<ScalarFn::BesselJ0>},
    {OpId::special_bessel_j1, lower_call<ScalarFn::BesselJ1>},
    {OpId::special_bessel_y0, lower_call<ScalarFn::BesselY0>},
    {OpId::special_bessel_y1, lower_call<ScalarFn::BesselY1>},
    {OpId::special_chebyshev_polynomial_t, lower_call<ScalarFn::ChebyshevT>},
    {OpId::special_chebyshev_polynomial_t_x_scalar, lower_call<ScalarFn::ChebyshevT>},
    {OpId::special_chebyshev_polynomial_t_n_scalar, lower_call<ScalarFn::ChebyshevT>},
    {OpId::special_chebyshev_polynomial_u, lower_call<ScalarFn::ChebyshevU>},
    {OpId::special_chebyshev_polynomial_u_x_scalar, lower_call<ScalarFn::ChebyshevU>},
    {OpId::special_chebyshev_polynomial_u_n_scalar, lower_call<ScalarFn::ChebyshevU>},
    {OpId::special_chebyshev_polynomial_v, lower_call<ScalarFn::ChebyshevV>},
    {OpId::special_chebyshev_polynomial_v_x_scalar, lower_call<ScalarFn::ChebyshevV>},
    {OpId::special_chebyshev_polynomial_v_n_scalar, lower_call<ScalarFn::ChebyshevV>},
    {OpId::special_chebyshev_polynomial_w, lower_call<ScalarFn::ChebyshevW>},
    {OpId::special_chebyshev_polynomial_w_x_scalar, lower_call<ScalarFn::ChebyshevW>},
    {OpId::special_chebyshev_polynomial_w_n_scalar, lower_call<ScalarFn::ChebyshevW>},
    {OpId::special_hermite_polynomial_h, lower_call<ScalarFn::HermiteH>},
    {OpId::special_hermite_polynomial_h_x_scalar, lower_call<ScalarFn::HermiteH>},
    {OpId::special_hermite_polynomial_h_n_scalar, lower_call<ScalarFn::HermiteH>},
    {OpId::special_hermite_polynomial_he, lower_call<ScalarFn::HermiteHe>},
    {OpId::special_hermite_polynomial_he_x_scalar, lower_call<ScalarFn::HermiteHe>},
    {OpId::special_hermite_polynomial_he_n_scalar, lower_call<ScalarFn::HermiteHe>},
    {OpId::special_laguerre_polynomial_l, lower_call<ScalarFn::LaguerreL>},
    {OpId::special_laguerre_polynomial_l_x_scalar, lower_call<ScalarFn::LaguerreL>},
    {OpId::special_laguerre_polynomial_l_n_scalar, lower_call<ScalarFn::LaguerreL>},
    {OpId::special_legendre_polynomial_p, lower_call<ScalarFn::LegendreP>},
    {OpId::special_legendre_polynomial_p_x_scalar, lower_call<ScalarFn::LegendreP>},
    {OpId::special_legendre_polynomial_p_n_scalar, lower_call<ScalarFn::LegendreP>},
    {OpId::special_modified_bessel_i0, lower_call<ScalarFn::ModifiedBesselI0>},
    {OpId::special_modified_bessel_i1, lower_call<ScalarFn::ModifiedBesselI1>},
    {OpId::special_modified_bessel_k0, lower_call<ScalarFn::ModifiedBesselK0>},
    {OpId::special_modified_bessel_k1, lower_call<ScalarFn::ModifiedBesselK1>},
    {OpId::special_scaled_modified_bessel_k0, lower_call<ScalarFn::ScaledModifiedBesselK0>},
    {OpId::special_scaled_modified_bessel_k1, lower_call<ScalarFn::ScaledModifiedBesselK1>},
    {OpId::special_shifted_chebyshev_polynomial_t, lower_call<ScalarFn::ShiftedChebyshevT>},
    {OpId::special_shifted_chebyshev_polynomial_t_x_scalar,
     lower_call<ScalarFn::ShiftedChebyshevT>},
    {OpId::special_shifted_chebyshev_polynomial_t_n_scalar,
     lower_call<ScalarFn::ShiftedChebyshevT>},
    {OpId::special_shifted_chebyshev_polynomial_u, lower_call<ScalarFn::ShiftedChebyshevU>},
    {OpId::special_shifted_chebyshev_polynomial_u_x_scalar,
     lower_call<ScalarFn::ShiftedChebyshevU>},
    {OpId::special_shifted_chebyshev_polynomial_u_n_scalar,
     lower_call<ScalarFn::ShiftedChebyshevU>},
    {OpId::special_shifted_chebyshev_polynomial_v, lower_call<ScalarFn::ShiftedChebyshevV>},
    {OpId::special_shifted_chebyshev_polynomial_v_x_scalar,
     lower_call<ScalarFn::ShiftedChebyshevV>},
    {OpId::special_shifted_chebyshev_polynomial_v_n_scalar,
     lower_call<ScalarFn::ShiftedChebyshevV>},
    {OpId::special_shifted_chebyshev_polynomial_w, lower_call<ScalarFn::ShiftedChebyshevW>},
    {OpId::special_shifted_chebyshev_polynomial_w_x_scalar,
     lower_call<ScalarFn::ShiftedChebyshevW>},
    {OpId::special_shifted_chebyshev_polynomial_w_n_scalar,
     lower_call<ScalarFn::ShiftedChebyshevW>},
    {OpId::special_spherical_bessel_j0, lower_call<ScalarFn::SphericalBesselJ0>},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> special_rules() {
  return kSpecialRules;
}

} // namespace fxc::lower_detail
