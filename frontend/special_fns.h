// The scalar formulas of PyTorch's special Bessel, Airy and orthogonal-polynomial functions
// (aten/src/ATen/native/Math.h: Cephes' rational and Chebyshev approximations, the
// polynomials' three-term recurrences and closed forms), written once as templates over the
// value type T and shared by the reference kernels (T = float or double: PyTorch computes in
// the input's own precision) and the code generator (T = an LLVM value, codegen/llvm_codegen.cpp,
// which emits each function once per module).
//
// So that one text serves both, a formula has no data-dependent `if`: each branch is computed
// and sel(c, a, b) picks (the unselected branches may produce inf or NaN, which nobody reads),
// and a branch with a loop gets inputs for which its loop ends at once where it is not taken.
// Loops are recur() (a counted three-term recurrence that stops once its value is NaN, as
// PyTorch's) and loop_while(). The type provides, found by argument-dependent lookup for LLVM
// values: arithmetic and comparisons, sel, fabs, sqrt, trunc, exp, log, sin, cos, acos, isnan,
// isinf, is_double (the precision), recur and loop_while.
#pragma once

#include "frontend/scalar_fn.h"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>

namespace fxc::special {

// ---- The operations for float and double.

template <class T, class = std::enable_if_t<std::is_floating_point_v<T>>>
inline T sel(bool c, T a, T b) {
  return c ? a : b;
}
template <class T, class = std::enable_if_t<std::is_floating_point_v<T>>> inline bool is_double(T) {
  return std::is_same_v<T, double>;
}

/// q after `count` steps (p, q) -> (q, step(k, p, q)), k = 1, 2, ..., stopping early once q is
/// NaN (it stays NaN); count < 1 returns q.
template <class T, class F, class = std::enable_if_t<std::is_floating_point_v<T>>>
inline T recur(T count, T p, T q, F step) {
  const int64_t c = count >= T(1) ? int64_t(count) : 0;
  for (int64_t k = 1; k <= c && !std::isnan(q); ++k) {
    T r = step(T(k), p, q);
    p = q;
    q = r;
  }
  return q;
}

template <class T, size_t N, class C, class B,
          class = std::enable_if_t<std::is_floating_point_v<T>>>
inline std::array<T, N> loop_while(std::array<T, N> s, C cond, B body) {
  while (cond(s)) s = body(s);
  return s;
}

// ---- Shared pieces.

/// Cephes' polevl: ((c0 z + c1) z + ...) + c_last, from 0 as PyTorch's loops start.
template <class T, size_t N> T horner(T z, const double (&c)[N]) {
  T r(0.0);
  for (double ci : c) r = r * z + T(ci);
  return r;
}

/// Cephes' chbevl: the Chebyshev series sum c_i T_i(z / 2), without the final 1/2 (b0 - b2).
template <class T, size_t N> T chbevl(T z, const double (&c)[N]) {
  T p(0.0), q(0.0), a(c[0]);
  for (size_t i = 1; i < N; ++i) {
    p = q;
    q = a;
    a = z * q - p + T(c[i]);
  }
  return T(0.5) * (a - p);
}

/// The degree as PyTorch's CPU kernels take it (static_cast<int64_t>(n)): n truncated, or -1
/// (a negative degree: the polynomial is 0) where the conversion is NaN or out of range.
template <class T> T degree(T n) {
  using std::fabs, std::trunc;
  return sel(fabs(n) < T(9.2233720368547758e18), trunc(n), T(-1.0));
}
/// An integral n is even.
template <class T> auto is_even(T n) {
  using std::trunc;
  return trunc(n * T(0.5)) * T(2.0) == n;
}

// ---- Airy and Bessel functions.

inline constexpr double kAiryAN[] = {+3.46538101525629032477e-01, +1.20075952739645805542e+01,
                                     +7.62796053615234516538e+01, +1.68089224934630576269e+02,
                                     +1.59756391350164413639e+02, +7.05360906840444183113e+01,
                                     +1.40264691163389668864e+01, +9.99999999999999995305e-01};
inline constexpr double kAiryAD[] = {+5.67594532638770212846e-01, +1.47562562584847203173e+01,
                                     +8.45138970141474626562e+01, +1.77318088145400459522e+02,
                                     +1.64234692871529701831e+02, +7.14778400825575695274e+01,
                                     +1.40959135607834029598e+01, +1.00000000000000000470e+00};
inline constexpr double kAiryAFN[] = {
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08};
inline constexpr double kAiryAFD[] = {
    +1.33560420706553243746e+01, +3.26825032795224613948e+01, +2.67367040941499554804e+01,
    +9.18707402907259625840e+00, +1.47529146771666414581e+00, +1.15687173795188044134e-01,
    +4.40291641615211203805e-03, +7.54720348287414296618e-05, +4.51850092970580378464e-07};
inline constexpr double kAiryAGN[] = {
    +1.97339932091685679179e-02, +3.91103029615688277255e-01, +1.06579897599595591108e+00,
    +9.39169229816650230044e-01, +3.51465656105547619242e-01, +6.33888919628925490927e-02,
    +5.85804113048388458567e-03, +2.82851600836737019778e-04, +6.98793669997260967291e-06,
    +8.11789239554389293311e-08, +3.41551784765923618484e-10};
inline constexpr double kAiryAGD[] = {+9.30892908077441974853e+00, +1.98352928718312140417e+01,
                                      +1.55646628932864612953e+01, +5.47686069422975497931e+00,
                                      +9.54293611618961883998e-01, +8.64580826352392193095e-02,
                                      +4.12656523824222607191e-03, +1.01259085116509135510e-04,
                                      +1.17166733214413521882e-06, +4.91834570062930015649e-09};

/// Ai(x): the asymptotic forms below -2.09 and from 2.09 on (0 beyond 103.892), the Maclaurin
/// series between (summed until a term is below the precision's epsilon), NaN at +-inf.
template <class T> T airy_ai(T x) {
  using std::fabs, std::sqrt, std::sin, std::cos, std::exp, std::isinf;
  const T one(1.0), zero(0.0), pi(3.14159265358979323846);
  const T eps(is_double(x) ? std::numeric_limits<double>::epsilon()
                           : double(std::numeric_limits<float>::epsilon()));
  // x < -2.09
  const T zn = one / (T(-2.0) * x * sqrt(-x) / T(3.0));
  const T zz = zn * zn;
  const T tn = T(-2.0) * x * sqrt(-x) / T(3.0) + T(0.25) * pi;
  const T neg = T(5.64189583547756286948e-01) / sqrt(sqrt(-x)) *
                (sin(tn) * (one + zz * horner(zz, kAiryAFN) / horner(zz, kAiryAFD)) -
                 cos(tn) * (zn * horner(zz, kAiryAGN) / horner(zz, kAiryAGD)));
  // x >= 2.09
  const T zeta = T(2.0) * x * sqrt(x) / T(3.0);
  const T pos = T(5.64189583547756286948e-01) *
                (horner(one / zeta, kAiryAN) / horner(one / zeta, kAiryAD)) /
                (T(2.0) * sqrt(sqrt(x)) * exp(zeta));
  // The series, from x = 0 (one step) where another branch is taken.
  const auto series_taken = !(x < T(-2.09)) && !(x >= T(2.09));
  const T xs = sel(series_taken, x, zero);
  const T z = xs * xs * xs;
  // State: m, n, f, g, k, t.
  std::array<T, 6> s = {one, xs, one, xs, one, one};
  s = loop_while(
      s, [&](const std::array<T, 6>& v) { return v[5] > eps; },
      [&](const std::array<T, 6>& v) {
        T m = v[0], n = v[1], f = v[2], g = v[3], k = v[4];
        m = m * z;
        k = k + one;
        m = m / k;
        n = n * z;
        k = k + one;
        n = n / k;
        m = m / k;
        f = f + m;
        k = k + one;
        n = n / k;
        g = g + n;
        return std::array<T, 6>{m, n, f, g, k, fabs(m / f)};
      });
  T r = T(0.355028053887817239260) * s[2] - T(0.258819403792806798405) * s[3];
  r = sel(x >= T(2.09), pos, r);
  r = sel(x < T(-2.09), neg, r);
  r = sel(x > T(103.892), zero, r);
  return sel(isinf(x), T(std::numeric_limits<double>::quiet_NaN()), r);
}

inline constexpr double kJ0PP[] = {+7.96936729297347051624e-04, +8.28352392107440799803e-02,
                                   +1.23953371646414299388e+00, +5.44725003058768775090e+00,
                                   +8.74716500199817011941e+00, +5.30324038235394892183e+00,
                                   +9.99999999999999997821e-01};
inline constexpr double kJ0PQ[] = {+9.24408810558863637013e-04, +8.56288474354474431428e-02,
                                   +1.25352743901058953537e+00, +5.47097740330417105182e+00,
                                   +8.76190883237069594232e+00, +5.30605288235394617618e+00,
                                   +1.00000000000000000218e+00};
inline constexpr double kJ0QP[] = {-1.13663838898469149931e-02, -1.28252718670509318512e+00,
                                   -1.95539544257735972385e+01, -9.32060152123768231369e+01,
                                   -1.77681167980488050595e+02, -1.47077505154951170175e+02,
                                   -5.14105326766599330220e+01, -6.05014350600728481186e+00};
inline constexpr double kJ0QQ[] = {+6.43178256118178023184e+01, +8.56430025976980587198e+02,
                                   +3.88240183605401609683e+03, +7.24046774195652478189e+03,
                                   +5.93072701187316984827e+03, +2.06209331660327847417e+03,
                                   +2.42005740240291393179e+02};
inline constexpr double kJ0RP[] = {-4.79443220978201773821e+09, +1.95617491946556577543e+12,
                                   -2.49248344360967716204e+14, +9.70862251047306323952e+15};
inline constexpr double kJ0RQ[] = {+4.99563147152651017219e+02, +1.73785401676374683123e+05,
                                   +4.84409658339962045305e+07, +1.11855537045356834862e+10,
                                   +2.11277520115489217587e+12, +3.10518229857422583814e+14,
                                   +3.18121955943204943306e+16, +1.71086294081043136091e+18};
inline constexpr double kJ1PP[] = {+7.62125616208173112003e-04, +7.31397056940917570436e-02,
                                   +1.12719608129684925192e+00, +5.11207951146807644818e+00,
                                   +8.42404590141772420927e+00, +5.21451598682361504063e+00,
                                   +1.00000000000000000254e+00};
inline constexpr double kJ1PQ[] = {+5.71323128072548699714e-04, +6.88455908754495404082e-02,
                                   +1.10514232634061696926e+00, +5.07386386128601488557e+00,
                                   +8.39985554327604159757e+00, +5.20982848682361821619e+00,
                                   +9.99999999999999997461e-01};
inline constexpr double kJ1QP[] = {+5.10862594750176621635e-02, +4.98213872951233449420e+00,
                                   +7.58238284132545283818e+01, +3.66779609360150777800e+02,
                                   +7.10856304998926107277e+02, +5.97489612400613639965e+02,
                                   +2.11688757100572135698e+02, +2.52070205858023719784e+01};
inline constexpr double kJ1QQ[] = {+7.42373277035675149943e+01, +1.05644886038262816351e+03,
                                   +4.98641058337653607651e+03, +9.56231892404756170795e+03,
                                   +7.99704160447350683650e+03, +2.82619278517639096600e+03,
                                   +3.36093607810698293419e+02};
inline constexpr double kJ1RP[] = {-8.99971225705559398224e+08, +4.52228297998194034323e+11,
                                   -7.27494245221818276015e+13, +3.68295732863852883286e+15};
inline constexpr double kJ1RQ[] = {+6.20836478118054335476e+02, +2.56987256757748830383e+05,
                                   +8.35146791431949253037e+07, +2.21511595479792499675e+10,
                                   +4.74914122079991414898e+12, +7.84369607876235854894e+14,
                                   +8.95222336184627338078e+16, +5.32278620332680085395e+18};
inline constexpr double kY0YP[] = {+1.55924367855235737965e+04, -1.46639295903971606143e+07,
                                   +5.43526477051876500413e+09, -9.82136065717911466409e+11,
                                   +8.75906394395366999549e+13, -3.46628303384729719441e+15,
                                   +4.42733268572569800351e+16, -1.84950800436986690637e+16};
inline constexpr double kY0YQ[] = {+1.04128353664259848412e+03, +6.26107330137134956842e+05,
                                   +2.68919633393814121987e+08, +8.64002487103935000337e+10,
                                   +2.02979612750105546709e+13, +3.17157752842975028269e+15,
                                   +2.50596256172653059228e+17};
inline constexpr double kY1YP[] = {+1.26320474790178026440e+09, -6.47355876379160291031e+11,
                                   +1.14509511541823727583e+14, -8.12770255501325109621e+15,
                                   +2.02439475713594898196e+17, -7.78877196265950026825e+17};
inline constexpr double kY1YQ[] = {+5.94301592346128195359e+02, +2.35564092943068577943e+05,
                                   +7.34811944459721705660e+07, +1.87601316108706159478e+10,
                                   +3.88231277496238566008e+12, +6.20557727146953693363e+14,
                                   +6.87141087355300489866e+16, +3.97270608116560655612e+18};

inline constexpr double kPiOver4 = 0.785398163397448309615660845819875721;
inline constexpr double k3PiOver4 = 2.356194490192344928846982537459627163;
inline constexpr double kSqrt2OverPi = 0.797884560802865355879892119868763737;
inline constexpr double k2OverPi = 0.636619772367581343075535053490057448;

/// J0(|x|) and Y0's asymptotic form for x > 5: (P cos(x - pi/4) -+ 5/x Q sin(x - pi/4))
/// sqrt(2/(pi x)); `y` selects Y0's (sin and cos swapped, the sign +).
template <class T> T bessel_asym0(T x, bool y) {
  using std::sqrt, std::sin, std::cos;
  const T w = T(25.0) / (x * x);
  const T pq = horner(w, kJ0PP) / horner(w, kJ0PQ);
  const T qq = horner(w, kJ0QP) / horner(w, kJ0QQ);
  const T a = x - T(kPiOver4);
  const T r = y ? pq * sin(a) + T(5.0) / x * qq * cos(a) : pq * cos(a) - T(5.0) / x * qq * sin(a);
  return r * T(kSqrt2OverPi) / sqrt(x);
}
/// The same for J1 and Y1 (argument x - 3 pi/4, w = (5/x)^2 computed as 5/x (5/x)).
template <class T> T bessel_asym1(T x, bool y) {
  using std::sqrt, std::sin, std::cos;
  const T w = T(5.0) / x * (T(5.0) / x);
  const T pq = horner(w, kJ1PP) / horner(w, kJ1PQ);
  const T qq = horner(w, kJ1QP) / horner(w, kJ1QQ);
  const T a = x - T(k3PiOver4);
  const T r = y ? pq * sin(a) + T(5.0) / x * qq * cos(a) : pq * cos(a) - T(5.0) / x * qq * sin(a);
  return r * T(kSqrt2OverPi) / sqrt(x);
}

template <class T> T bessel_j0(T x0) {
  using std::fabs;
  const T x = fabs(x0), xx = x * x;
  const T rational = (xx - T(5.78318596294678452118e+00)) * (xx - T(3.04712623436620863991e+01)) *
                     horner(xx, kJ0RP) / horner(xx, kJ0RQ);
  const T small = sel(x < T(0.00001), T(1.0) - xx / T(4.0), rational);
  return sel(x <= T(5.0), small, bessel_asym0(x, false));
}

template <class T> T bessel_j1(T x0) {
  using std::fabs;
  const T x = fabs(x0), xx = x * x;
  const T small = horner(xx, kJ1RP) / horner(xx, kJ1RQ) * x * (xx - T(1.46819706421238932572e+01)) *
                  (xx - T(4.92184563216946036703e+01));
  const T r = sel(x <= T(5.0), small, bessel_asym1(x, false));
  return sel(x0 < T(0.0), -r, r);
}

template <class T> T bessel_y0(T x) {
  using std::log;
  const T xx = x * x;
  const T small = horner(xx, kY0YP) / horner(xx, kY0YQ) + (T(k2OverPi) * log(x) * bessel_j0(x));
  T r = sel(x < T(0.0), T(std::numeric_limits<double>::quiet_NaN()), small);
  r = sel(x == T(0.0), T(-std::numeric_limits<double>::infinity()), r);
  return sel(x <= T(5.0), r, bessel_asym0(x, true));
}

template <class T> T bessel_y1(T x) {
  using std::log;
  const T xx = x * x;
  const T small = x * (horner(xx, kY1YP) / horner(xx, kY1YQ)) +
                  (T(k2OverPi) * (bessel_j1(x) * log(x) - T(1.0) / x));
  T r = sel(x < T(0.0), T(std::numeric_limits<double>::quiet_NaN()), small);
  r = sel(x == T(0.0), T(-std::numeric_limits<double>::infinity()), r);
  return sel(x <= T(5.0), r, bessel_asym1(x, true));
}

inline constexpr double kI0A[] = {
    -4.41534164647933937950e-18, +3.33079451882223809783e-17, -2.43127984654795469359e-16,
    +1.71539128555513303061e-15, -1.16853328779934516808e-14, +7.67618549860493561688e-14,
    -4.85644678311192946090e-13, +2.95505266312963983461e-12, -1.72682629144155570723e-11,
    +9.67580903537323691224e-11, -5.18979560163526290666e-10, +2.65982372468238665035e-09,
    -1.30002500998624804212e-08, +6.04699502254191894932e-08, -2.67079385394061173391e-07,
    +1.11738753912010371815e-06, -4.41673835845875056359e-06, +1.64484480707288970893e-05,
    -5.75419501008210370398e-05, +1.88502885095841655729e-04, -5.76375574538582365885e-04,
    +1.63947561694133579842e-03, -4.32430999505057594430e-03, +1.05464603945949983183e-02,
    -2.37374148058994688156e-02, +4.93052842396707084878e-02, -9.49010970480476444210e-02,
    +1.71620901522208775349e-01, -3.04682672343198398683e-01, +6.76795274409476084995e-01};
inline constexpr double kI0B[] = {
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, +4.46562142029675999901e-17,
    +3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    +1.77256013305652638360e-15, +3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, +1.54008621752140982691e-14, +3.85277838274214270114e-13,
    +7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, +1.18891471078464383424e-11, +4.94060238822496958910e-10,
    +3.39623202570838634515e-09, +2.26666899049817806459e-08, +2.04891858946906374183e-07,
    +2.89137052083475648297e-06, +6.88975834691682398426e-05, +3.36911647825569408990e-03,
    +8.04490411014108831608e-01};
inline constexpr double kI1A[] = {
    +2.77791411276104639959e-18, -2.11142121435816608115e-17, +1.55363195773620046921e-16,
    -1.10559694773538630805e-15, +7.60068429473540693410e-15, -5.04218550472791168711e-14,
    +3.22379336594557470981e-13, -1.98397439776494371520e-12, +1.17361862988909016308e-11,
    -6.66348972350202774223e-11, +3.62559028155211703701e-10, -1.88724975172282928790e-09,
    +9.38153738649577178388e-09, -4.44505912879632808065e-08, +2.00329475355213526229e-07,
    -8.56872026469545474066e-07, +3.47025130813767847674e-06, -1.32731636560394358279e-05,
    +4.78156510755005422638e-05, -1.61760815825896745588e-04, +5.12285956168575772895e-04,
    -1.51357245063125314899e-03, +4.15642294431288815669e-03, -1.05640848946261981558e-02,
    +2.47264490306265168283e-02, -5.29459812080949914269e-02, +1.02643658689847095384e-01,
    -1.76416518357834055153e-01, +2.52587186443633654823e-01};
inline constexpr double kI1B[] = {
    +7.51729631084210481353e-18, +4.41434832307170791151e-18, -4.65030536848935832153e-17,
    -3.20952592199342395980e-17, +2.96262899764595013876e-16, +3.30820231092092828324e-16,
    -1.88035477551078244854e-15, -3.81440307243700780478e-15, +1.04202769841288027642e-14,
    +4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, +2.03562854414708950722e-12, +1.41258074366137813316e-11,
    +3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
    -3.83538038596423702205e-09, -2.63146884688951950684e-08, -2.51223623787020892529e-07,
    -3.88256480887769039346e-06, -1.10588938762623716291e-04, -9.76109749136146840777e-03,
    +7.78576235018280120474e-01};
inline constexpr double kK0A[] = {+1.37446543561352307156e-16, +4.25981614279661018399e-14,
                                  +1.03496952576338420167e-11, +1.90451637722020886025e-09,
                                  +2.53479107902614945675e-07, +2.28621210311945178607e-05,
                                  +1.26461541144692592338e-03, +3.59799365153615016266e-02,
                                  +3.44289899924628486886e-01, -5.35327393233902768720e-01};
inline constexpr double kK0B[] = {
    +5.30043377268626276149e-18, -1.64758043015242134646e-17, +5.21039150503902756861e-17,
    -1.67823109680541210385e-16, +5.51205597852431940784e-16, -1.84859337734377901440e-15,
    +6.34007647740507060557e-15, -2.22751332699166985548e-14, +8.03289077536357521100e-14,
    -2.98009692317273043925e-13, +1.14034058820847496303e-12, -4.51459788337394416547e-12,
    +1.85594911495471785253e-11, -7.95748924447710747776e-11, +3.57739728140030116597e-10,
    -1.69753450938905987466e-09, +8.57403401741422608519e-09, -4.66048989768794782956e-08,
    +2.76681363944501510342e-07, -1.83175552271911948767e-06, +1.39498137188764993662e-05,
    -1.28495495816278026384e-04, +1.56988388573005337491e-03, -3.14481013119645005427e-02,
    +2.44030308206595545468e+00};
inline constexpr double kK1A[] = {
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, +1.52530022733894777053e+00};
inline constexpr double kK1B[] = {
    -5.75674448366501715755e-18, +1.79405087314755922667e-17, -5.68946255844285935196e-17,
    +1.83809354436663880070e-16, -6.05704724837331885336e-16, +2.03870316562433424052e-15,
    -7.01983709041831346144e-15, +2.47715442448130437068e-14, -8.97670518232499435011e-14,
    +3.34841966607842919884e-13, -1.28917396095102890680e-12, +5.13963967348173025100e-12,
    -2.12996783842756842877e-11, +9.21831518760500529508e-11, -4.19035475934189648750e-10,
    +2.01504975519703286596e-09, -1.03457624656780970260e-08, +5.74108412545004946722e-08,
    -3.50196060308781257119e-07, +2.40648494783721712015e-06, -1.93619797416608296024e-05,
    +1.95215518471351631108e-04, -2.85781685962277938680e-03, +1.03923736576817238437e-01,
    +2.72062619048444266945e+00};

/// I0(x): Chebyshev series in |x|/2 - 2 up to 8, in 32/|x| - 2 beyond.
template <class T> T modified_bessel_i0(T x) {
  using std::fabs, std::exp, std::sqrt;
  const T ax = fabs(x);
  const T small = exp(ax) * chbevl(ax / T(2.0) - T(2.0), kI0A);
  const T large = exp(ax) * chbevl(T(32.0) / ax - T(2.0), kI0B) / sqrt(ax);
  return sel(ax <= T(8.0), small, large);
}

/// I1(x), odd.
template <class T> T modified_bessel_i1(T x) {
  using std::fabs, std::exp, std::sqrt;
  const T ax = fabs(x);
  const T small = chbevl(ax / T(2.0) - T(2.0), kI1A) * ax * exp(ax);
  const T large = exp(ax) * chbevl(T(32.0) / ax - T(2.0), kI1B) / sqrt(ax);
  const T r = sel(ax <= T(8.0), small, large);
  return sel(x < T(0.0), -r, r);
}

/// K0(x) (`scaled`: exp(x) K0(x)): inf at 0, NaN below; a series with log(x/2) I0(x) up to 2,
/// Chebyshev in 8/x - 2 beyond.
template <class T> T modified_bessel_k0(T x, bool scaled) {
  using std::exp, std::log, std::sqrt;
  T small = chbevl(x * x - T(2.0), kK0A) - log(T(0.5) * x) * modified_bessel_i0(x);
  const T c = chbevl(T(8.0) / x - T(2.0), kK0B);
  const T large = scaled ? c / sqrt(x) : exp(-x) * c / sqrt(x);
  if (scaled) small = small * exp(x);
  T r = sel(x <= T(2.0), small, large);
  r = sel(x < T(0.0), T(std::numeric_limits<double>::quiet_NaN()), r);
  return sel(x == T(0.0), T(std::numeric_limits<double>::infinity()), r);
}

/// K1(x) (`scaled`: exp(x) K1(x)), as K0.
template <class T> T modified_bessel_k1(T x, bool scaled) {
  using std::exp, std::log, std::sqrt;
  T small = log(T(0.5) * x) * modified_bessel_i1(x) + chbevl(x * x - T(2.0), kK1A) / x;
  const T c = chbevl(T(8.0) / x - T(2.0), kK1B);
  const T large = scaled ? c / sqrt(x) : exp(-x) * c / sqrt(x);
  if (scaled) small = small * exp(x);
  T r = sel(x <= T(2.0), small, large);
  r = sel(x < T(0.0), T(std::numeric_limits<double>::quiet_NaN()), r);
  return sel(x == T(0.0), T(std::numeric_limits<double>::infinity()), r);
}

/// j0(x) = sin(x) / x: its Taylor series below 1/2, 0 at +-inf.
template <class T> T spherical_bessel_j0(T x) {
  using std::fabs, std::sin, std::isinf;
  const T xx = x * x;
  const T series =
      T(1.0) +
      xx * (T(-1.0) / T(6.0) +
            xx * (T(1.0) / T(120.0) +
                  xx * (T(-1.0) / T(5040.0) +
                        xx * (T(1.0) / T(362880.0) +
                              xx * (T(-1.0) / T(39916800.0) + xx * (T(1.0) / T(6227020800.0)))))));
  const T r = sel(fabs(x) < T(0.5), series, sin(x) / x);
  return sel(isinf(x), T(0.0), r);
}

// ---- Orthogonal polynomials of degree n (PyTorch's recurrences; the trigonometric closed
// forms where PyTorch uses them).

/// The recurrence r = 2 y q - p from (p, q) = (1, q1) up to degree n >= 2 (taken), else q1.
template <class T> T chebyshev_recur(T y, T q1, T n, decltype(T(0.0) < T(0.0)) taken) {
  const T count = sel(taken, n - T(1.0), T(0.0));
  return recur(count, T(1.0), q1, [&](T, T p, T q) { return (y + y) * q - p; });
}

/// T_n(x): cos(n acos(x)) for |x| < 1 and n > 6.
template <class T> T chebyshev_t(T x, T n0) {
  using std::fabs, std::cos, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0);
  const auto unit = fabs(x) == one;
  const auto trig = n > T(6.0) && fabs(x) < one;
  T r = chebyshev_recur(x, x, n, n > one && !unit && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, cos(n * acos(x)), r);
  r = sel(unit, sel(x > zero || is_even(n), one, -one), r);
  return sel(n < zero, zero, r);
}

/// U_n(x): sin((n + 1) acos(x)) / sin(acos(x)) for |x| < 1 and n > 8.
template <class T> T chebyshev_u(T x, T n0) {
  using std::fabs, std::cos, std::sin, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0);
  const auto unit = fabs(x) == one;
  const auto trig = n > T(8.0) && fabs(x) < one;
  const T a = acos(x);
  const T closed =
      sel(sin(a) != zero, sin((n + one) * a) / sin(a), (n + one) * cos((n + one) * a) / x);
  T r = chebyshev_recur(x, x + x, n, n > one && !unit && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, closed, r);
  r = sel(unit, sel(x > zero || is_even(n), n + one, -(n + one)), r);
  return sel(n < zero, zero, r);
}

/// V_n(x): cos((n + 1/2) acos(x)) / cos(acos(x) / 2) for |x| < 1 and n > 8.
template <class T> T chebyshev_v(T x, T n0) {
  using std::fabs, std::cos, std::sin, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0), two(2.0);
  const auto unit = fabs(x) == one;
  const auto trig = n > T(8.0) && fabs(x) < one;
  const T a = acos(x);
  const T odd_sign = sel(is_even(n), n + n + one, -(n + n + one));
  const T closed = sel(sin(a / two) != one, cos((n + T(0.5)) * a) / cos(a / two), odd_sign);
  T r = chebyshev_recur(x, x + x - one, n, n > one && !unit && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, closed, r);
  r = sel(unit, sel(x > zero, one, odd_sign), r);
  return sel(n < zero, zero, r);
}

/// W_n(x): sin((n + 1/2) acos(x)) / sin(acos(x) / 2) for |x| < 1 and n > 8.
template <class T> T chebyshev_w(T x, T n0) {
  using std::fabs, std::cos, std::sin, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0), two(2.0);
  const auto unit = fabs(x) == one;
  const auto trig = n > T(8.0) && fabs(x) < one;
  const T a = acos(x);
  const T at_one = sel(x > zero, n + n + one, sel(is_even(n), one, -one));
  const T closed = sel(cos(a / two) != one, sin((n + T(0.5)) * a) / sin(a / two), at_one);
  T r = chebyshev_recur(x, x + x + one, n, n > one && !unit && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, closed, r);
  r = sel(unit, at_one, r);
  return sel(n < zero, zero, r);
}

/// T*_n(x) = T_n(2x - 1), with PyTorch's own special cases (x = 0, x = 1; the closed form for
/// |2x - 1| < 1 and n > 6).
template <class T> T shifted_chebyshev_t(T x, T n0) {
  using std::fabs, std::cos, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0);
  const T y = x + x - one;
  const auto trig = n > T(6.0) && fabs(y) < one;
  const auto edge = x == one || x == zero;
  T r = chebyshev_recur(y, y, n, n > one && !edge && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, cos(n * acos(y)), r);
  r = sel(x == zero, sel(is_even(n), one, -one), r);
  r = sel(x == one, one, r);
  return sel(n < zero, zero, r);
}

template <class T> T shifted_chebyshev_u(T x, T n0) {
  using std::fabs, std::cos, std::sin, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0);
  const T y = x + x - one;
  const auto trig = n > T(6.0) && fabs(y) < one;
  const auto edge = x == one || x == zero;
  const T a = acos(y);
  const T closed =
      sel(sin(a) != zero, sin((n + one) * a) / sin(a), (n + one) * cos((n + one) * a) / y);
  T r = chebyshev_recur(y, y + y, n, n > one && !edge && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, closed, r);
  r = sel(x == zero, sel(is_even(n), n + one, -(n + one)), r);
  r = sel(x == one, n + one, r);
  return sel(n < zero, zero, r);
}

template <class T> T shifted_chebyshev_v(T x, T n0) {
  using std::fabs, std::cos, std::sin, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0), two(2.0);
  const T y = x + x - one;
  const auto trig = n > T(6.0) && fabs(y) < one;
  const auto edge = x == one || x == zero;
  const T a = acos(y);
  const T odd_sign = sel(is_even(n), n + n + one, -(n + n + one));
  const T closed = sel(sin(a / two) != one, cos((n + T(0.5)) * a) / cos(a / two), odd_sign);
  T r = chebyshev_recur(y, y + y - one, n, n > one && !edge && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, closed, r);
  r = sel(x == zero, odd_sign, r);
  r = sel(x == one, one, r);
  return sel(n < zero, zero, r);
}

template <class T> T shifted_chebyshev_w(T x, T n0) {
  using std::fabs, std::cos, std::sin, std::acos;
  const T n = degree(n0), one(1.0), zero(0.0), two(2.0);
  const T y = x + x - one;
  const auto trig = n > T(4.0) && fabs(y) < one;
  const auto edge = x == one || x == zero;
  const T a = acos(y);
  const T sign = sel(is_even(n), one, -one);
  const T closed = sel(cos(a / two) != one, sin((n + T(0.5)) * a) / sin(a / two), sign);
  T r = chebyshev_recur(y, y + y + one, n, n > one && !edge && !trig);
  r = sel(n == zero, one, r);
  r = sel(trig, closed, r);
  r = sel(x == zero, sign, r);
  r = sel(x == one, n + n + one, r);
  return sel(n < zero, zero, r);
}

/// The physicists' Hermite H_n(x): H_{k+1} = 2x H_k - 2k H_{k-1}; NaN beyond degree 128 (float)
/// or 512 (double), as PyTorch's.
template <class T> T hermite_h(T x, T n0) {
  const T n = degree(n0), one(1.0), zero(0.0);
  const T limit(is_double(x) ? 512.0 : 128.0);
  const T count = sel(n > one && !(n > limit), n - one, zero);
  T r = recur(count, one, x + x, [&](T k, T p, T q) { return (x + x) * q - (k + k) * p; });
  r = sel(n > limit, T(std::numeric_limits<double>::quiet_NaN()), r);
  r = sel(n == zero, one, r);
  return sel(n < zero, zero, r);
}

/// The probabilists' Hermite He_n(x): He_{k+1} = x He_k - k He_{k-1}.
template <class T> T hermite_he(T x, T n0) {
  const T n = degree(n0), one(1.0), zero(0.0);
  const T limit(is_double(x) ? 512.0 : 128.0);
  const T count = sel(n > one && !(n > limit), n - one, zero);
  T r = recur(count, one, x, [&](T k, T p, T q) { return x * q - k * p; });
  r = sel(n > limit, T(std::numeric_limits<double>::quiet_NaN()), r);
  r = sel(n == zero, one, r);
  return sel(n < zero, zero, r);
}

/// Laguerre L_n(x): (k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}; 1 at x = 0.
template <class T> T laguerre_l(T x, T n0) {
  using std::fabs;
  const T n = degree(n0), one(1.0), zero(0.0);
  const auto at_zero = fabs(x) == zero;
  const T count = sel(n > one && !at_zero, n - one, zero);
  T r = recur(count, one, one - x,
              [&](T k, T p, T q) { return (((k + k) + (one - x)) * q - k * p) / (k + one); });
  r = sel(n == zero || at_zero, one, r);
  return sel(n < zero, zero, r);
}

/// Legendre P_n(x): (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}; +-1 at |x| = 1.
template <class T> T legendre_p(T x, T n0) {
  using std::fabs;
  const T n = degree(n0), one(1.0), zero(0.0);
  const auto unit = fabs(x) == one;
  const T count = sel(n > one && !unit, n - one, zero);
  T r = recur(count, one, x,
              [&](T k, T p, T q) { return ((k + k + one) * x * q - k * p) / (k + one); });
  r = sel(n == zero, one, r);
  r = sel(unit, sel(x > zero || is_even(n), one, -one), r);
  return sel(n < zero, zero, r);
}

static_assert(std::size(kI0A) == 30 && std::size(kI0B) == 25 && std::size(kI1A) == 29 &&
                  std::size(kI1B) == 25 && std::size(kK0A) == 10 && std::size(kK0B) == 25 &&
                  std::size(kK1A) == 11 && std::size(kK1B) == 25 && std::size(kAiryAGN) == 11 &&
                  std::size(kAiryAGD) == 10 && std::size(kY1YP) == 6 && std::size(kY0YP) == 8,
              "the coefficient tables of PyTorch's Math.h");

/// f(args): the function a VOp::Call names.
template <class T> T eval_scalar_fn(ScalarFn f, const T* a) {
  switch (f) {
  case ScalarFn::AiryAi:
    return airy_ai(a[0]);
  case ScalarFn::BesselJ0:
    return bessel_j0(a[0]);
  case ScalarFn::BesselJ1:
    return bessel_j1(a[0]);
  case ScalarFn::BesselY0:
    return bessel_y0(a[0]);
  case ScalarFn::BesselY1:
    return bessel_y1(a[0]);
  case ScalarFn::ModifiedBesselI0:
    return modified_bessel_i0(a[0]);
  case ScalarFn::ModifiedBesselI1:
    return modified_bessel_i1(a[0]);
  case ScalarFn::ModifiedBesselK0:
    return modified_bessel_k0(a[0], false);
  case ScalarFn::ModifiedBesselK1:
    return modified_bessel_k1(a[0], false);
  case ScalarFn::ScaledModifiedBesselK0:
    return modified_bessel_k0(a[0], true);
  case ScalarFn::ScaledModifiedBesselK1:
    return modified_bessel_k1(a[0], true);
  case ScalarFn::SphericalBesselJ0:
    return spherical_bessel_j0(a[0]);
  case ScalarFn::ChebyshevT:
    return chebyshev_t(a[0], a[1]);
  case ScalarFn::ChebyshevU:
    return chebyshev_u(a[0], a[1]);
  case ScalarFn::ChebyshevV:
    return chebyshev_v(a[0], a[1]);
  case ScalarFn::ChebyshevW:
    return chebyshev_w(a[0], a[1]);
  case ScalarFn::ShiftedChebyshevT:
    return shifted_chebyshev_t(a[0], a[1]);
  case ScalarFn::ShiftedChebyshevU:
    return shifted_chebyshev_u(a[0], a[1]);
  case ScalarFn::ShiftedChebyshevV:
    return shifted_chebyshev_v(a[0], a[1]);
  case ScalarFn::ShiftedChebyshevW:
    return shifted_chebyshev_w(a[0], a[1]);
  case ScalarFn::HermiteH:
    return hermite_h(a[0], a[1]);
  case ScalarFn::HermiteHe:
    return hermite_he(a[0], a[1]);
  case ScalarFn::LaguerreL:
    return laguerre_l(a[0], a[1]);
  case ScalarFn::LegendreP:
    return legendre_p(a[0], a[1]);
  }
  return a[0];
}

} // namespace fxc::special
