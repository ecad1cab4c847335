// Scalar special functions in float64 for the reference kernels (runtime/kernels/special.cpp)
// and the lowerings (passes/lower/special.cpp, which share the constants):
// Cephes' digamma, trigamma and Hurwitz zeta (as PyTorch's aten/src/ATen/native/Math.h has
// them), polygamma from them, the power series of the modified Bessel functions I0 and I1,
// and erfinv (Giles' single-precision approximation refined by two Newton steps).
#pragma once

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

} // namespace fxc::special
