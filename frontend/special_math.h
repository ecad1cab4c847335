// Scalar special functions in float64 for the reference kernels (runtime/kernels/special.cpp)
// and the lowerings (passes/lower/special.cpp, which share the constants):
// Cephes' digamma, trigamma and Hurwitz zeta (as PyTorch's aten/src/ATen/native/Math.h has
// them), polygamma from them, the power series of the modified Bessel functions I0 and I1,
// and erfinv (Giles' single-precision approximation refined by two Newton steps).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace fxc::special {

inline constexpr double kPi = 3.14159265358979323846;

inline double digamma(double x) {
  const double kPsi10 = 2.25175258906672110764; // digamma(10)
  if (x == 0) return std::copysign(INFINITY, -x);
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    double q;
    double r = std::modf(x, &q);
    return digamma(1 - x) - kPi / std::tan(kPi * r);
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + kPsi10;
  static const double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                             7.57575757575757575758E-3, -4.16666666666666666667E-3,
                             3.96825396825396825397E-3, -8.33333333333333333333E-3,
                             8.33333333333333333333E-2};
  double y = 0;
  if (x < 1.0e17) {
    double z = 1.0 / (x * x);
    double p = 0;
    for (double a : A) p = p * z + a;
    y = z * p;
  }
  return result + std::log(x) - (0.5 / x) - y;
}

inline double trigamma(double x) {
  double sign = +1, result = 0;
  if (x < 0.5) {
    sign = -1;
    double s = std::sin(kPi * x);
    result -= (kPi * kPi) / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (x * x);
    x += 1;
  }
  const double ixx = 1 / (x * x);
  result += (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x;
  return sign * result;
}

/// The Euler-Maclaurin coefficients (2k)!/B_2k of Cephes' zeta.
inline constexpr double kZetaA[] = {12.0,
                                    -720.0,
                                    30240.0,
                                    -1209600.0,
                                    47900160.0,
                                    -1.8924375803183791606e9,
                                    7.47242496e10,
                                    -2.950130727918164224e12,
                                    1.1646782814350067249e14,
                                    -4.5979787224074726105e15,
                                    1.8152105401943546773e17,
                                    -7.1661652561756670113e18};

/// Hurwitz zeta(x, q) = sum_k (k + q)^-x (Cephes).
inline double zeta(double x, double q) {
  const double kMachEp = 1.11022302462515654042E-16;
  if (x == 1) return INFINITY;
  if (x < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return INFINITY;
    if (x != std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  }
  double s = std::pow(q, -x), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9.0) {
    i += 1;
    a += 1.0;
    b = std::pow(a, -x);
    s += b;
    if (std::fabs(b / s) < kMachEp) return s;
  }
  double w = a;
  s += b * w / (x - 1);
  s -= 0.5 * b;
  a = 1.0;
  double k = 0.0;
  for (double A : kZetaA) {
    a *= x + k;
    b /= w;
    double t = a * b / A;
    s = s + t;
    if (std::fabs(t / s) < kMachEp) return s;
    k += 1.0;
    a *= x + k;
    b /= w;
    k += 1.0;
  }
  return s;
}

inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
  return ((n % 2) ? 1.0 : -1.0) * std::exp(std::lgamma(double(n) + 1.0)) * zeta(double(n + 1), x);
}

/// Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems),
/// evaluated in float64: the starting point of erfinv and of its lowering.
inline double erfinv_giles(double y) {
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w = w - 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  return p * y;
}

inline double erfinv(double y) {
  if (std::isnan(y) || std::fabs(y) > 1) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(y) == 1) return std::copysign(INFINITY, y);
  double x = erfinv_giles(y);
  const double two_over_sqrt_pi = 1.12837916709551257390;
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

/// I_nu(x) for nu = 0, 1 by its power series (x/2)^nu sum_k (x^2/4)^k / (k! (k + nu)!), summed
/// until the terms no longer change the sum (all terms are positive: no cancellation).
inline double bessel_series(int nu, double x) {
  double q = x * x / 4, t = 1, sum = 1;
  for (int k = 1; k < 100000 && t > 1e-17 * sum; ++k) {
    t *= q / (double(k) * double(k + nu));
    sum += t;
  }
  return nu == 0 ? sum : x / 2 * sum;
}
inline double bessel_i0(double x) {
  return bessel_series(0, x);
}
inline double bessel_i1(double x) {
  return bessel_series(1, x);
}

/// Terms of the continued fraction erfcx(x) = 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + ...))))
/// evaluated from its tail, used for x >= kErfcxCfFrom: 40 terms give full float64 accuracy there.
inline constexpr int kErfcxCfTerms = 40;
inline constexpr double kErfcxCfFrom = 3.0;
inline constexpr double kInvSqrtPi = 0.56418958354775628695;
inline double erfcx_cf(double x) {
  double t = 0;
  for (int n = kErfcxCfTerms; n >= 1; --n) t = (n / 2.0) / (x + t);
  return kInvSqrtPi / (x + t);
}

/// erfcx(x) = exp(x^2) erfc(x): the continued fraction for x >= 3, exp(x^2) erfc(x) below
/// (erfc(x) > 2e-5 there, so 1 - erf(x) keeps float64's relative accuracy), and
/// 2 exp(x^2) - erfcx(-x) for x <= -3 (+inf once exp(x^2) overflows).
inline double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x >= kErfcxCfFrom) return x == INFINITY ? 0.0 : erfcx_cf(x);
  if (x > -kErfcxCfFrom) return std::exp(x * x) * std::erfc(x);
  return 2 * std::exp(x * x) - erfcx_cf(-x);
}

/// The standard normal distribution function, 0.5 erfc(-x / sqrt(2)) (exact in both tails).
inline double ndtr(double x) {
  return 0.5 * std::erfc(-x * 0.70710678118654752440);
}

/// log(ndtr(x)), as PyTorch's calc_log_ndtr: log(erfcx(-x/sqrt 2) / 2) - x^2 / 2 below -1.
inline double log_ndtr(double x) {
  const double t = x * 0.70710678118654752440;
  if (x < -1.0) return std::log(erfcx(-t) / 2) - t * t;
  return std::log1p(-std::erfc(t) / 2);
}

/// The inverse of ndtr on [0, 1]: Abramowitz and Stegun's 26.2.23 estimate (absolute error
/// below 4.5e-4 on (0, 1/2]), then kNdtriNewton Newton steps on log(ndtr(x)) = log(q) in the
/// lower half (ndtri(p) = -ndtri(1 - p) in the upper half), each squaring the error.
inline constexpr int kNdtriNewton = 3;
inline constexpr double kNdtriC[] = {2.515517, 0.802853, 0.010328};
inline constexpr double kNdtriD[] = {1.432788, 0.189269, 0.001308};
inline double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  const bool upper = p > 0.5;
  const double q = upper ? 1 - p : p; // exact for p > 0.5 (Sterbenz)
  const double t = std::sqrt(-2 * std::log(q));
  const double num = kNdtriC[0] + t * (kNdtriC[1] + t * kNdtriC[2]);
  const double den = 1 + t * (kNdtriD[0] + t * (kNdtriD[1] + t * kNdtriD[2]));
  double x = num / den - t;
  const double lq = std::log(q);
  for (int i = 0; i < kNdtriNewton; ++i) {
    // d/dx log ndtr(x) = pdf(x) / ndtr(x) = sqrt(2/pi) / erfcx(-x / sqrt 2).
    const double d = 0.79788456080286535588 / erfcx(-x * 0.70710678118654752440);
    x -= (log_ndtr(x) - lq) / d;
  }
  return upper ? -x : x;
}

/// exp(-|x|) I_nu(|x|) for nu = 0, 1 (sign(x) for nu = 1): the power series up to
/// kBesselAsymFrom, the asymptotic expansion sum_k a_k(nu) |x|^-k / sqrt(2 pi |x|) (15 terms)
/// beyond, as the lowerings of i0 and special_i1 split them.
inline constexpr double kBesselAsymFrom = 30.0;
inline constexpr int kBesselAsymTerms = 15;
inline double bessel_asym_sum(int nu, double ax) {
  double a = 1.0, acc = 0.0, coef[kBesselAsymTerms];
  for (int k = 0; k < kBesselAsymTerms; ++k) {
    if (k > 0) a *= -(4.0 * nu * nu - double((2 * k - 1) * (2 * k - 1))) / (8.0 * k);
    coef[k] = a;
  }
  for (int k = kBesselAsymTerms - 1; k >= 0; --k) acc = acc * (1 / ax) + coef[k];
  return acc / std::sqrt(2 * kPi * ax);
}
inline double bessel_ie(int nu, double x) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  double r =
      ax <= kBesselAsymFrom ? bessel_series(nu, ax) * std::exp(-ax) : bessel_asym_sum(nu, ax);
  return nu == 1 && x < 0 ? -r : r;
}

/// The regularized incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P (igammac),
/// with PyTorch's special values. x < a + 1: the series
/// P = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n)); else the continued fraction
/// Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)), evaluated
/// from its tail with kIgammaTerms terms (the lowering's fixed count; the series runs to
/// convergence here).
inline constexpr int kIgammaTerms = 200;
inline double igamma_series(double a, double x) {
  double term = 1, sum = 1;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return std::exp(a * std::log(x) - x - std::lgamma(a + 1)) * sum;
}
inline double igammac_cf(double a, double x) {
  double t = 0;
  for (int i = kIgammaTerms; i >= 1; --i) t = -i * (i - a) / (x + 2 * i + 1 - a + t);
  return std::exp(a * std::log(x) - x - std::lgamma(a)) / (x + 1 - a + t);
}
inline double igamma(double a, double x, bool upper) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(a) || std::isnan(x) || x < 0 || a < 0) return nan;
  if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : nan;
  if (x == 0) return upper ? 1.0 : 0.0;
  if (std::isinf(a)) return std::isinf(x) ? nan : (upper ? 1.0 : 0.0);
  if (std::isinf(x)) return upper ? 0.0 : 1.0;
  if (x < a + 1) {
    double p = igamma_series(a, x);
    return upper ? 1 - p : p;
  }
  double q = igammac_cf(a, x);
  return upper ? q : 1 - q;
}

/// ldexp's and nextafter's helper: the float's successor of x toward y in a dtype with `mant`
/// explicit mantissa bits and smallest subnormal 2^min_exp (23/-149 for float32, 52/-1074 for
/// float64), by its exponent; the lowering computes the same steps.
inline double next_toward(double x, double y, int mant, int min_exp, double maxval) {
  if (std::isnan(x) || std::isnan(y)) return x + y;
  if (x == y) return y;
  if (x == 0) return y > 0 ? std::ldexp(1.0, min_exp) : -std::ldexp(1.0, min_exp);
  if (std::isinf(x)) return x > 0 ? maxval : -maxval;
  int e;
  std::frexp(std::fabs(x), &e); // |x| in [2^(e-1), 2^e)
  e -= 1;
  const bool away = (y > x) == (x > 0);
  int s = e - mant;
  if (!away && std::fabs(x) == std::ldexp(1.0, e)) s -= 1;
  double step = std::ldexp(1.0, std::max(s, min_exp));
  return y > x ? x + step : x - step;
}

} // namespace fxc::special
