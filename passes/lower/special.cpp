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
#include "passes/lower/lower_util.h"

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

/// zeta(s, q) for integer s >= 3: nine terms, then the Euler-Maclaurin tail at w = q + 9.
VPtr zeta_ir(double s, const VPtr& q) {
  // The kernel sums terms while i < 9 or q + i <= 9, i.e. cnt = max(9, floor(9 - q) + 1) of
  // them, so that the tail starts at w = q + cnt > 9. Here: nine terms, then up to kShift more,
  // each kept when i <= cnt (exact for q > -kShift + 9).
  constexpr int kShift = 64;
  VPtr cnt = v_binary(VOp::Max, k(9.0), add(un(VOp::Floor, sub(k(9.0), q)), k(1.0)));
  VPtr sum = v_binary(VOp::Pow, q, k(-s));
  VPtr b;
  for (int i = 1; i <= 9 + kShift; ++i) {
    VPtr term = v_binary(VOp::Pow, add(q, k(double(i))), k(-s));
    if (i <= 9) {
      b = term;
      sum = add(sum, term);
      continue;
    }
    VPtr keep = v_binary(VOp::Le, k(double(i)), cnt);
    sum = add(sum, sel(keep, term, k(0.0)));
    b = sel(keep, term, b);
  }
  VPtr w = add(q, cnt);
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

const OpTable<LowerFn>::Row kSpecialRules[] = {
    {OpId::digamma, lower_digamma},
    {OpId::erfinv, lower_erfinv},
    {OpId::i0, lower_i0},
    {OpId::lgamma, lower_lgamma},
    {OpId::polygamma, lower_polygamma},
    {OpId::special_i1, lower_i1},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> special_rules() {
  return kSpecialRules;
}

} // namespace fxc::lower_detail
