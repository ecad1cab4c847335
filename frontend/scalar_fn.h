// The scalar helper functions of the loop IR's call value operation (VOp::Call): PyTorch's
// special Bessel, Airy and orthogonal-polynomial functions. Each is one template in
// frontend/special_fns.h, instantiated for float and double by the reference kernels and for
// LLVM values by the code generator, which emits it once per module as a function with its own
// loops (the polynomials' degree is a data-dependent trip count).
#pragma once

#include <cstdint>
#include <string_view>

namespace fxc {

enum class ScalarFn : uint8_t {
  AiryAi,
  BesselJ0,
  BesselJ1,
  BesselY0,
  BesselY1,
  ModifiedBesselI0,
  ModifiedBesselI1,
  ModifiedBesselK0,
  ModifiedBesselK1,
  ScaledModifiedBesselK0,
  ScaledModifiedBesselK1,
  SphericalBesselJ0,
  ChebyshevT, // the rest take (x, n)
  ChebyshevU,
  ChebyshevV,
  ChebyshevW,
  ShiftedChebyshevT,
  ShiftedChebyshevU,
  ShiftedChebyshevV,
  ShiftedChebyshevW,
  HermiteH,
  HermiteHe,
  LaguerreL,
  LegendreP,
};
inline constexpr int kScalarFnCount = int(ScalarFn::LegendreP) + 1;

/// The name (the op's without "special_" and "_polynomial"/"_forward"): "bessel_j0",
/// "chebyshev_t", ...; the loop IR prints a call as call_<name>(args).
inline std::string_view scalar_fn_name(ScalarFn f) {
  static constexpr std::string_view kNames[kScalarFnCount] = {
      "airy_ai",
      "bessel_j0",
      "bessel_j1",
      "bessel_y0",
      "bessel_y1",
      "modified_bessel_i0",
      "modified_bessel_i1",
      "modified_bessel_k0",
      "modified_bessel_k1",
      "scaled_modified_bessel_k0",
      "scaled_modified_bessel_k1",
      "spherical_bessel_j0",
      "chebyshev_t",
      "chebyshev_u",
      "chebyshev_v",
      "chebyshev_w",
      "shifted_chebyshev_t",
      "shifted_chebyshev_u",
      "shifted_chebyshev_v",
      "shifted_chebyshev_w",
      "hermite_h",
      "hermite_he",
      "laguerre_l",
      "legendre_p",
  };
  return kNames[int(f)];
}

/// Number of operands: 1 (x) for the Bessel and Airy functions, 2 (x, n) for the polynomials.
inline int scalar_fn_arity(ScalarFn f) {
  return f >= ScalarFn::ChebyshevT ? 2 : 1;
}

/// The function named `name`, or false.
inline bool scalar_fn_by_name(std::string_view name, ScalarFn* out) {
  for (int i = 0; i < kScalarFnCount; ++i)
    if (scalar_fn_name(ScalarFn(i)) == name) {
      *out = ScalarFn(i);
      return true;
    }
  return false;
}

} // namespace fxc
