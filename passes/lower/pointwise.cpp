// Lowering rules of the pointwise ops: unary and binary math, comparisons, integer division,
// bitwise and logical ops, where, masked_fill and clamp, as value expressions that the engine
// inlines into their consumers.
#include "passes/lower/lower_util.h"

#include <cfloat>

namespace fxc::lower_detail {
namespace {

VPtr gelu_expr(VPtr x, bool tanh_approx) {
  DType t = x->dtype;
  auto c = [&](double v) { return v_const(v, t); };
  VPtr inner;
  if (tanh_approx) {
    VPtr x3 = v_binary(VOp::Mul, v_binary(VOp::Mul, x, x), x);
    inner =
        v_unary(VOp::Tanh, v_binary(VOp::Mul, c(0.7978845608028654),
                                    v_binary(VOp::Add, x, v_binary(VOp::Mul, c(0.044715), x3))));
  } else {
    inner = v_unary(VOp::Erf, v_binary(VOp::Mul, x, c(0.7071067811865476)));
  }
  return v_binary(VOp::Mul, v_binary(VOp::Mul, c(0.5), x), v_binary(VOp::Add, c(1.0), inner));
}

#define UNARY(NAME, EXPR)                                                                          \
  void NAME(Lowerer& L, int n) {                                                                   \
    unary(L, n, [](VPtr x) -> VPtr { return EXPR; });                                              \
  }
UNARY(lower_abs, v_unary(VOp::Abs, x))
UNARY(lower_neg, v_unary(VOp::Neg, x))
UNARY(lower_exp, v_unary(VOp::Exp, x))
UNARY(lower_log, v_unary(VOp::Log, x))
UNARY(lower_sqrt, v_unary(VOp::Sqrt, x))
UNARY(lower_rsqrt, v_unary(VOp::Rsqrt, x))
UNARY(lower_tanh, v_unary(VOp::Tanh, x))
UNARY(lower_sigmoid, v_unary(VOp::Sigmoid, x))
UNARY(lower_erf, v_unary(VOp::Erf, x))
UNARY(lower_sin, v_unary(VOp::Sin, x))
UNARY(lower_cos, v_unary(VOp::Cos, x))
UNARY(lower_reciprocal, v_unary(VOp::Reciprocal, x))
UNARY(lower_relu, v_binary(VOp::Max, x, v_const(0, x->dtype)))
UNARY(lower_silu, v_binary(VOp::Mul, x, v_unary(VOp::Sigmoid, x)))
UNARY(lower_hardsigmoid,
      v_binary(VOp::Min,
               v_binary(VOp::Max,
                        v_binary(VOp::Add, v_binary(VOp::Div, x, v_const(6, x->dtype)),
                                 v_const(0.5, x->dtype)),
                        v_const(0, x->dtype)),
               v_const(1, x->dtype)))
UNARY(lower_hardswish,
      v_binary(VOp::Mul, x,
               v_binary(VOp::Min,
                        v_binary(VOp::Max,
                                 v_binary(VOp::Add, v_binary(VOp::Div, x, v_const(6, x->dtype)),
                                          v_const(0.5, x->dtype)),
                                 v_const(0, x->dtype)),
                        v_const(1, x->dtype))))
UNARY(lower_sign, v_binary(VOp::Sub, v_cast(v_binary(VOp::Gt, x, v_const(0, x->dtype)), x->dtype),
                           v_cast(v_binary(VOp::Lt, x, v_const(0, x->dtype)), x->dtype)))
#undef UNARY

void lower_logical_not(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_cast(v_unary(VOp::Not, v_cast(L.at(x, idx), DType::Bool)),
                                           m.dtype);
                           },
                           {&x}));
}

void lower_gelu(Lowerer& L, int n) {
  bool t = L.node(n).arg("approximate").s == "tanh";
  if (t)
    unary(L, n, [](VPtr x) { return gelu_expr(x, true); });
  else
    unary(L, n, [](VPtr x) { return gelu_expr(x, false); });
}

void lower_clamp(Lowerer& L, int n) {
  const Arg lo = L.node(n).arg("min"), hi = L.node(n).arg("max");
  unary(L, n, [&](VPtr x) {
    if (!lo.is_none()) x = v_binary(VOp::Max, x, v_const(lo.scalar(), x->dtype));
    if (!hi.is_none()) x = v_binary(VOp::Min, x, v_const(hi.scalar(), x->dtype));
    return x;
  });
}

/// Binary arithmetic, evaluated in the output dtype; alpha scales `other` when present.
void binary(Lowerer& L, int n, VOp op, bool has_alpha, bool reverse = false) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  double alpha = has_alpha ? L.node(n).arg("alpha").scalar() : 1.0;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr a = operand_at(L, n, "self", idx, t);
                             VPtr b = operand_at(L, n, "other", idx, t);
                             if (alpha != 1.0) b = v_binary(VOp::Mul, b, v_const(alpha, t));
                             return reverse ? v_binary(op, b, a) : v_binary(op, a, b);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}

void lower_add(Lowerer& L, int n) {
  binary(L, n, VOp::Add, true);
}
void lower_sub(Lowerer& L, int n) {
  binary(L, n, VOp::Sub, true);
}
void lower_mul(Lowerer& L, int n) {
  binary(L, n, VOp::Mul, false);
}
void lower_div(Lowerer& L, int n) {
  binary(L, n, VOp::Div, false);
}
void lower_fmod(Lowerer& L, int n) {
  binary(L, n, VOp::Fmod, false);
}
void lower_maximum(Lowerer& L, int n) {
  binary(L, n, VOp::Max, false);
}
void lower_minimum(Lowerer& L, int n) {
  binary(L, n, VOp::Min, false);
}

void lower_pow(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             return v_binary(VOp::Pow, operand_at(L, n, "self", idx, t),
                                             operand_at(L, n, "exponent", idx, t));
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "exponent")}));
}

void compare(Lowerer& L, int n, VOp op, const char* x = "self", const char* y = "other") {
  const TensorMeta& m = L.out_meta(n);
  DType c = compare_dtype(L, n, x, y);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr r = v_binary(op, operand_at(L, n, x, idx, c),
                                               operand_at(L, n, y, idx, c));
                             return v_cast(r, m.dtype);
                           },
                           {tensor_arg(L, n, x), tensor_arg(L, n, y)}));
}
void lower_eq(Lowerer& L, int n) {
  compare(L, n, VOp::Eq);
}
void lower_ne(Lowerer& L, int n) {
  compare(L, n, VOp::Ne);
}
void lower_lt(Lowerer& L, int n) {
  compare(L, n, VOp::Lt);
}
void lower_le(Lowerer& L, int n) {
  compare(L, n, VOp::Le);
}
void lower_gt(Lowerer& L, int n) {
  compare(L, n, VOp::Gt);
}
void lower_ge(Lowerer& L, int n) {
  compare(L, n, VOp::Ge);
}

void lower_logical_and(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_cast(v_binary(VOp::And,
                                                    operand_at(L, n, "self", idx, DType::Bool),
                                                    operand_at(L, n, "other", idx, DType::Bool)),
                                           m.dtype);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}

// ---- Op families of issue 18: integer division and remainders, rsub, bitwise, logical ----

// rsub(self, other, alpha) = other - alpha * self, in the output dtype.
void lower_rsub(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  double alpha = L.node(n).arg("alpha").scalar();
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr a = operand_at(L, n, "self", idx, t);
                             VPtr b = operand_at(L, n, "other", idx, t);
                             if (alpha != 1.0) a = v_binary(VOp::Mul, a, v_const(alpha, t));
                             return v_binary(VOp::Sub, b, a);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}

void lower_floor_divide(Lowerer& L, int n) {
  binary(L, n, VOp::FloorDivide, false);
}
void lower_remainder(Lowerer& L, int n) {
  binary(L, n, VOp::Remainder, false);
}
// div with rounding_mode None (true division), 'trunc' or 'floor' (the meta function checked it).
void lower_div_mode(Lowerer& L, int n) {
  const Arg& mode = L.node(n).arg("rounding_mode");
  if (mode.is_none()) return binary(L, n, VOp::Div, false);
  binary(L, n, mode.s == "floor" ? VOp::FloorDivide : VOp::TruncDivide, false);
}
void lower_bitwise_and(Lowerer& L, int n) {
  binary(L, n, VOp::BitAnd, false);
}
void lower_bitwise_or(Lowerer& L, int n) {
  binary(L, n, VOp::BitOr, false);
}
void lower_bitwise_xor(Lowerer& L, int n) {
  binary(L, n, VOp::BitXor, false);
}
void lower_shl(Lowerer& L, int n) {
  binary(L, n, VOp::Shl, false);
}
void lower_shr(Lowerer& L, int n) {
  binary(L, n, VOp::Shr, false);
}
void lower_bitwise_not(Lowerer& L, int n) {
  unary(L, n, [](VPtr x) { return v_unary(VOp::BitNot, x); });
}
// logical_or / logical_xor: both operands as bool (nonzero is true), the result cast to bool.
void logical_binary(Lowerer& L, int n, VOp op) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_cast(v_binary(op, operand_at(L, n, "self", idx, DType::Bool),
                                                    operand_at(L, n, "other", idx, DType::Bool)),
                                           m.dtype);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}
void lower_logical_or(Lowerer& L, int n) {
  logical_binary(L, n, VOp::Or);
}
void lower_logical_xor(Lowerer& L, int n) {
  logical_binary(L, n, VOp::Ne);
}
// End of the issue-18 op families.

// ---- Issue 18, unary math and special functions ----

#define UNARY(NAME, EXPR)                                                                          \
  void NAME(Lowerer& L, int n) {                                                                   \
    unary(L, n, [](VPtr x) -> VPtr { return EXPR; });                                              \
  }
UNARY(lower_tan, v_unary(VOp::Tan, x))
UNARY(lower_asin, v_unary(VOp::Asin, x))
UNARY(lower_acos, v_unary(VOp::Acos, x))
UNARY(lower_atan, v_unary(VOp::Atan, x))
UNARY(lower_sinh, v_unary(VOp::Sinh, x))
UNARY(lower_cosh, v_unary(VOp::Cosh, x))
UNARY(lower_asinh, v_unary(VOp::Asinh, x))
UNARY(lower_acosh, v_unary(VOp::Acosh, x))
UNARY(lower_atanh, v_unary(VOp::Atanh, x))
UNARY(lower_log2, v_unary(VOp::Log2, x))
UNARY(lower_log10, v_unary(VOp::Log10, x))
UNARY(lower_log1p, v_unary(VOp::Log1p, x))
UNARY(lower_expm1, v_unary(VOp::Expm1, x))
UNARY(lower_exp2, v_binary(VOp::Pow, v_const(2.0, x->dtype), x))
// Integers round to themselves.
UNARY(lower_floor, is_floating(x->dtype) ? v_unary(VOp::Floor, x) : x)
UNARY(lower_ceil, is_floating(x->dtype) ? v_unary(VOp::Ceil, x) : x)
UNARY(lower_round, is_floating(x->dtype) ? v_unary(VOp::Round, x) : x)
UNARY(lower_trunc, is_floating(x->dtype) ? v_unary(VOp::Trunc, x) : x)
#undef UNARY

// round.decimals as PyTorch computes it: scale by 10^|d|, round half to even, scale back.
void lower_round_decimals(Lowerer& L, int n) {
  const int64_t d = L.node(n).arg("decimals").i;
  const double ten = std::pow(10.0, double(d < 0 ? -d : d));
  unary(L, n, [&](VPtr x) -> VPtr {
    if (!is_floating(x->dtype)) return x;
    VPtr t = v_const(ten, x->dtype);
    if (d < 0) return v_binary(VOp::Mul, v_unary(VOp::Round, v_binary(VOp::Div, x, t)), t);
    return v_binary(VOp::Div, v_unary(VOp::Round, v_binary(VOp::Mul, x, t)), t);
  });
}

// isnan / isinf read the input in its own dtype (integers are neither).
void nan_inf_test(Lowerer& L, int n, bool inf) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) -> VPtr {
                             VPtr v = L.at(x, idx);
                             if (!is_floating(v->dtype)) return v_const(0, DType::Bool);
                             if (inf)
                               return v_binary(VOp::Eq, v_unary(VOp::Abs, v),
                                               v_const(INFINITY, v->dtype));
                             return v_binary(VOp::Ne, v, v);
                           },
                           {&x}));
}
void lower_isnan(Lowerer& L, int n) {
  nan_inf_test(L, n, false);
}
void lower_isinf(Lowerer& L, int n) {
  nan_inf_test(L, n, true);
}

void lower_atan2(Lowerer& L, int n) {
  binary(L, n, VOp::Atan2, false);
}

void lower_pow_scalar(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             return v_binary(VOp::Pow, operand_at(L, n, "self", idx, t),
                                             operand_at(L, n, "exponent", idx, t));
                           },
                           {tensor_arg(L, n, "exponent")}));
}

// clamp.Tensor: max with the lower bound, then min with the upper (both propagate NaN).
void lower_clamp_tensor(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  const bool lo = !L.node(n).arg("min").is_none(), hi = !L.node(n).arg("max").is_none();
  L.set_output(
      n, 0,
      L.pointwise(n, t, m.sizes,
                  [&](auto& idx) {
                    VPtr x = operand_at(L, n, "self", idx, t);
                    if (lo) x = v_binary(VOp::Max, x, operand_at(L, n, "min", idx, t));
                    if (hi) x = v_binary(VOp::Min, x, operand_at(L, n, "max", idx, t));
                    return x;
                  },
                  {tensor_arg(L, n, "self"), tensor_arg(L, n, "min"), tensor_arg(L, n, "max")}));
}
// End of the issue-18 unary math.

void lower_where(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             return v_where(operand_at(L, n, "condition", idx, DType::Bool),
                                            operand_at(L, n, "self", idx, t),
                                            operand_at(L, n, "other", idx, t));
                           },
                           {tensor_arg(L, n, "condition"), tensor_arg(L, n, "self"),
                            tensor_arg(L, n, "other")}));
}

void lower_masked_fill(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(
      n, 0,
      L.pointwise(n, t, m.sizes,
                  [&](auto& idx) {
                    return v_where(operand_at(L, n, "mask", idx, DType::Bool),
                                   operand_at(L, n, "value", idx, t),
                                   operand_at(L, n, "self", idx, t));
                  },
                  {tensor_arg(L, n, "self"), tensor_arg(L, n, "mask"), tensor_arg(L, n, "value")}));
}

// ---- Issue 18: the math family. Floating ops read their operands in the result dtype (as the
// reference kernel rounds them), compute in float64 and round once, as the kernels do.

VPtr f64(double v) {
  return v_const(v, DType::F64);
}
VPtr vsel(VPtr c, VPtr a, VPtr b) {
  return v_where(std::move(c), std::move(a), std::move(b));
}

/// Element-wise f(a, b) of operands `x` and `y` in float64 for floating results, in the result
/// dtype otherwise.
void math_binary(Lowerer& L, int n, const char* x, const char* y,
                 const std::function<VPtr(VPtr, VPtr)>& f) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  DType compute = is_floating(t) ? DType::F64 : t;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr a = v_cast(operand_at(L, n, x, idx, t), compute);
                             VPtr b = v_cast(operand_at(L, n, y, idx, t), compute);
                             return v_cast(f(a, b), t);
                           },
                           {tensor_arg(L, n, x), tensor_arg(L, n, y)}));
}
/// The same for one operand read in the result dtype (`in` = the input's own dtype instead).
void math_unary(Lowerer& L, int n, const std::function<VPtr(VPtr)>& f, bool own_dtype = false) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  DType t = own_dtype ? x.dtype : m.dtype;
  DType compute = is_floating(t) ? DType::F64 : t;
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_cast(f(v_cast(v_cast(L.at(x, idx), t), compute)), m.dtype);
                           },
                           {&x}));
}

VPtr vabs(VPtr a) {
  return v_unary(VOp::Abs, std::move(a));
}
VPtr veq(VPtr a, VPtr b) {
  return v_binary(VOp::Eq, std::move(a), std::move(b));
}
/// The sign bit of a float64 (-0 included; a NaN's sign bit is not visible to arithmetic and
/// reads as clear).
VPtr sign_bit(const VPtr& b) {
  return v_binary(
      VOp::Or, v_binary(VOp::Lt, b, f64(0)),
      v_binary(VOp::And, veq(b, f64(0)), v_binary(VOp::Lt, v_binary(VOp::Div, f64(1), b), f64(0))));
}

void lower_copysign(Lowerer& L, int n) {
  math_binary(L, n, "self", "other", [](VPtr a, VPtr b) {
    VPtr m = vabs(a);
    return vsel(sign_bit(b), v_unary(VOp::Neg, m), m);
  });
}
template <bool Max> void lower_fextremum(Lowerer& L, int n) {
  math_binary(L, n, "self", "other", [](VPtr a, VPtr b) {
    VPtr r = v_binary(Max ? VOp::Max : VOp::Min, a, b);
    if (!is_floating(a->dtype)) return r;
    return vsel(is_nan(a), b, vsel(is_nan(b), a, r));
  });
}
void lower_hypot(Lowerer& L, int n) {
  math_binary(L, n, "self", "other", [](VPtr a, VPtr b) {
    // max * sqrt(1 + (min/max)^2), with hypot(inf, nan) = inf and hypot(0, 0) = 0.
    VPtr x = vabs(a), y = vabs(b);
    VPtr hi = v_binary(VOp::Max, x, y), lo = v_binary(VOp::Min, x, y);
    VPtr q = v_binary(VOp::Div, lo, hi);
    VPtr r = v_binary(VOp::Mul, hi,
                      v_unary(VOp::Sqrt, v_binary(VOp::Add, f64(1), v_binary(VOp::Mul, q, q))));
    r = vsel(veq(hi, f64(0)), f64(0), r);
    VPtr inf = v_binary(VOp::Or, veq(x, f64(INFINITY)), veq(y, f64(INFINITY)));
    return vsel(inf, f64(INFINITY), r);
  });
}
void lower_ldexp(Lowerer& L, int n) {
  math_binary(L, n, "self", "other",
              [](VPtr a, VPtr b) { return v_binary(VOp::Mul, a, v_binary(VOp::Pow, f64(2), b)); });
}
/// logaddexp (base e) and logaddexp2: max + log1p(base^-|a - b|) / log(base); equal infinities
/// give themselves.
template <bool Two> void lower_logaddexp(Lowerer& L, int n) {
  math_binary(L, n, "self", "other", [](VPtr a, VPtr b) {
    VPtr d = v_unary(VOp::Neg, vabs(v_binary(VOp::Sub, a, b)));
    VPtr e = Two ? v_binary(VOp::Pow, f64(2), d) : v_unary(VOp::Exp, d);
    VPtr l = v_unary(VOp::Log1p, e);
    if (Two) l = v_binary(VOp::Div, l, f64(M_LN2));
    VPtr r = v_binary(VOp::Add, v_binary(VOp::Max, a, b), l);
    VPtr same_inf = v_binary(VOp::And, veq(a, b), veq(vabs(a), f64(INFINITY)));
    return vsel(same_inf, a, r);
  });
}
template <bool OnePlus> void lower_xlogy(Lowerer& L, int n) {
  math_binary(L, n, "self", "other", [](VPtr a, VPtr b) {
    VPtr r = vsel(veq(a, f64(0)), f64(0),
                  v_binary(VOp::Mul, a, v_unary(OnePlus ? VOp::Log1p : VOp::Log, b)));
    return vsel(is_nan(b), b, r);
  });
}
/// nextafter as special::next_toward computes it: the step is 2^(e - mantissa bits) (one less
/// toward zero from a power of two), at least the smallest subnormal.
void lower_nextafter(Lowerer& L, int n) {
  const bool f64t = L.out_meta(n).dtype == DType::F64;
  if (!f64t && L.out_meta(n).dtype != DType::F32)
    L.fail(n, "nextafter: only float32 and float64 lower");
  const double mant = f64t ? 52 : 23, min_exp = f64t ? -1074 : -149;
  const double maxval = f64t ? DBL_MAX : FLT_MAX;
  math_binary(L, n, "self", "other", [&](VPtr x, VPtr y) {
    VPtr ax = vabs(x);
    VPtr e0 = v_unary(VOp::Floor, v_unary(VOp::Log2, ax));
    VPtr p = v_binary(VOp::Pow, f64(2), e0);
    VPtr e = vsel(v_binary(VOp::Gt, p, ax), v_binary(VOp::Sub, e0, f64(1)),
                  vsel(v_binary(VOp::Le, v_binary(VOp::Mul, p, f64(2)), ax),
                       v_binary(VOp::Add, e0, f64(1)), e0));
    VPtr pe = v_binary(VOp::Pow, f64(2), e);
    VPtr up = v_binary(VOp::Gt, y, x);
    VPtr away = veq(up, v_binary(VOp::Gt, x, f64(0)));
    VPtr s = v_binary(VOp::Sub, e, f64(mant));
    s = vsel(v_binary(VOp::And, v_unary(VOp::Not, away), veq(ax, pe)),
             v_binary(VOp::Sub, s, f64(1)), s);
    VPtr step = v_binary(VOp::Pow, f64(2), v_binary(VOp::Max, s, f64(min_exp)));
    VPtr r = vsel(up, v_binary(VOp::Add, x, step), v_binary(VOp::Sub, x, step));
    VPtr tiny = f64(std::ldexp(1.0, int(min_exp)));
    r = vsel(veq(x, f64(0)), vsel(up, tiny, v_unary(VOp::Neg, tiny)), r);
    r = vsel(veq(ax, f64(INFINITY)), vsel(v_binary(VOp::Gt, x, f64(0)), f64(maxval), f64(-maxval)),
             r);
    r = vsel(veq(x, y), y, r);
    return vsel(v_binary(VOp::Or, is_nan(x), is_nan(y)), v_binary(VOp::Add, x, y), r);
  });
}
/// gcd by Euclid's algorithm unrolled 96 times (enough for any int64 pair: the worst case,
/// consecutive Fibonacci numbers, takes 92 steps), in buffers of 8 steps each: a step reads both
/// of the previous step's values twice, so one expression of all steps would double 92 times
/// wherever a pass walks it as a tree. lcm = |a / gcd * b|, 0 when gcd is 0.
LVal gcd_value(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  const DType t = m.dtype;
  auto operand = [&](const char* name) {
    LVal v =
        L.pointwise(n, t, m.sizes, [&](auto& idx) { return vabs(operand_at(L, n, name, idx, t)); },
                    {tensor_arg(L, n, name)});
    L.realize(v);
    return v;
  };
  LVal a = operand("self"), b = operand("other");
  const VPtr zero = v_const(0, t);
  for (int chunk = 0; chunk < 12; ++chunk) {
    auto steps = [&](bool first) {
      return L.pointwise(n, t, m.sizes,
                         [&](auto& idx) {
                           VPtr x = L.at(a, idx), y = L.at(b, idx);
                           for (int i = 0; i < 8; ++i) {
                             VPtr yz = veq(y, zero);
                             VPtr r = v_binary(VOp::Fmod, x, y);
                             x = vsel(yz, x, y);
                             y = vsel(yz, zero, r);
                           }
                           return first ? x : y;
                         },
                         {&a, &b});
    };
    LVal na = steps(true), nb = steps(false);
    L.realize(na);
    L.realize(nb);
    a = na;
    b = nb;
  }
  return a;
}
void lower_gcd(Lowerer& L, int n) {
  L.set_output(n, 0, gcd_value(L, n));
}
void lower_lcm(Lowerer& L, int n) {
  LVal g = gcd_value(L, n);
  const TensorMeta& m = L.out_meta(n);
  const DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr gv = L.at(g, idx), zero = v_const(0, t);
                             VPtr a = operand_at(L, n, "self", idx, t);
                             VPtr b = operand_at(L, n, "other", idx, t);
                             VPtr r =
                                 vabs(v_binary(VOp::Mul, v_binary(VOp::TruncDivide, a, gv), b));
                             return vsel(veq(gv, zero), zero, r);
                           },
                           {&g, tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}
void lower_heaviside(Lowerer& L, int n) {
  math_binary(L, n, "self", "values", [](VPtr x, VPtr v) {
    VPtr zero = v_const(0, x->dtype);
    return vsel(veq(x, zero), v, v_cast(v_binary(VOp::Gt, x, zero), x->dtype));
  });
}
void lower_isclose(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const double rtol = nd.arg("rtol").f, atol = nd.arg("atol").f;
  const bool equal_nan = nd.arg("equal_nan").b;
  const TensorMeta& m = L.out_meta(n);
  LVal& xv = L.input(n, "self");
  LVal& yv = L.input(n, "other");
  L.set_output(
      n, 0,
      L.pointwise(n, m.dtype, m.sizes,
                  [&](auto& idx) {
                    VPtr x = v_cast(L.bcast(xv, idx), DType::F64);
                    VPtr y = v_cast(L.bcast(yv, idx), DType::F64);
                    VPtr finite = v_binary(VOp::And, v_binary(VOp::Lt, vabs(x), f64(INFINITY)),
                                           v_binary(VOp::Lt, vabs(y), f64(INFINITY)));
                    VPtr near = v_binary(
                        VOp::Le, vabs(v_binary(VOp::Sub, x, y)),
                        v_binary(VOp::Add, f64(atol), vabs(v_binary(VOp::Mul, f64(rtol), y))));
                    VPtr r = v_binary(VOp::Or, veq(x, y), v_binary(VOp::And, finite, near));
                    if (equal_nan)
                      r = v_binary(VOp::Or, r, v_binary(VOp::And, is_nan(x), is_nan(y)));
                    return r;
                  },
                  {&xv, &yv}));
}
/// isfinite (K 0), isposinf (1), isneginf (2), signbit (3), isreal (4) in the input's dtype.
template <int K> void lower_float_test(Lowerer& L, int n) {
  math_unary(
      L, n,
      [](VPtr x) -> VPtr {
        if (!is_floating(x->dtype)) {
          if (K == 3) return v_binary(VOp::Lt, x, v_const(0, x->dtype));
          return v_const(K == 0 || K == 4, DType::Bool);
        }
        switch (K) {
        case 0:
          return v_binary(VOp::Lt, vabs(x), f64(INFINITY));
        case 1:
          return veq(x, f64(INFINITY));
        case 2:
          return veq(x, f64(-INFINITY));
        case 3:
          return sign_bit(x);
        default:
          return v_const(1, DType::Bool);
        }
      },
      true);
}
void lower_nan_to_num(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const DType t = L.out_meta(n).dtype;
  if (!is_floating(t)) return unary(L, n, [](VPtr x) { return x; });
  const double mx = t == DType::F64    ? DBL_MAX
                    : t == DType::F16  ? 65504.0
                    : t == DType::BF16 ? 3.38953138925153547590e38
                                       : FLT_MAX;
  auto opt = [&](const char* name, double d) {
    return nd.arg(name).is_none() ? d : nd.arg(name).scalar();
  };
  const double nanv = opt("nan", 0.0), pos = opt("posinf", mx), neg = opt("neginf", -mx);
  math_unary(L, n, [&](VPtr x) {
    return vsel(is_nan(x), f64(nanv),
                vsel(veq(x, f64(INFINITY)), f64(pos), vsel(veq(x, f64(-INFINITY)), f64(neg), x)));
  });
}
#define MATH_UNARY(NAME, EXPR)                                                                     \
  void NAME(Lowerer& L, int n) {                                                                   \
    math_unary(L, n, [](VPtr x) -> VPtr { return EXPR; });                                         \
  }
MATH_UNARY(lower_deg2rad, v_binary(VOp::Mul, x, f64(M_PI / 180.0)))
MATH_UNARY(lower_rad2deg, v_binary(VOp::Mul, x, f64(180.0 / M_PI)))
MATH_UNARY(lower_sinc, vsel(veq(x, f64(0)), f64(1),
                            v_binary(VOp::Div, v_unary(VOp::Sin, v_binary(VOp::Mul, f64(M_PI), x)),
                                     v_binary(VOp::Mul, f64(M_PI), x))))
MATH_UNARY(lower_angle, vsel(is_nan(x), x, vsel(v_binary(VOp::Lt, x, f64(0)), f64(M_PI), f64(0))))
MATH_UNARY(lower_entr, vsel(is_nan(x), x,
                            vsel(v_binary(VOp::Gt, x, f64(0)),
                                 v_unary(VOp::Neg, v_binary(VOp::Mul, x, v_unary(VOp::Log, x))),
                                 vsel(veq(x, f64(0)), f64(0), f64(-INFINITY)))))
MATH_UNARY(lower_frac, v_binary(VOp::Sub, x, v_unary(VOp::Trunc, x)))
#undef MATH_UNARY
void lower_conj_physical(Lowerer& L, int n) {
  unary(L, n, [](VPtr x) { return x; });
}
// End of the math family.

const OpTable<LowerFn>::Row kPointwiseRules[] = {
    // The math family (issue 18).
    {OpId::angle, lower_angle},
    {OpId::conj_physical, lower_conj_physical},
    {OpId::copysign_Tensor, lower_copysign},
    {OpId::deg2rad, lower_deg2rad},
    {OpId::fmax, lower_fextremum<true>},
    {OpId::fmin, lower_fextremum<false>},
    {OpId::frac, lower_frac},
    {OpId::gcd, lower_gcd},
    {OpId::heaviside, lower_heaviside},
    {OpId::hypot, lower_hypot},
    {OpId::isclose, lower_isclose},
    {OpId::isfinite, lower_float_test<0>},
    {OpId::isneginf, lower_float_test<2>},
    {OpId::isposinf, lower_float_test<1>},
    {OpId::isreal, lower_float_test<4>},
    {OpId::lcm, lower_lcm},
    {OpId::ldexp_Tensor, lower_ldexp},
    {OpId::logaddexp, lower_logaddexp<false>},
    {OpId::logaddexp2, lower_logaddexp<true>},
    {OpId::nan_to_num, lower_nan_to_num},
    {OpId::nextafter, lower_nextafter},
    {OpId::rad2deg, lower_rad2deg},
    {OpId::sgn, lower_sign},
    {OpId::signbit, lower_float_test<3>},
    {OpId::sinc, lower_sinc},
    {OpId::special_entr, lower_entr},
    {OpId::special_xlog1py, lower_xlogy<true>},
    {OpId::xlogy_Tensor, lower_xlogy<false>},
    {OpId::abs, lower_abs},
    {OpId::add_Scalar, lower_add},
    {OpId::add_Tensor, lower_add},
    {OpId::clamp, lower_clamp},
    {OpId::cos, lower_cos},
    {OpId::div_Scalar, lower_div},
    {OpId::div_Tensor, lower_div},
    {OpId::eq_Scalar, lower_eq},
    {OpId::eq_Tensor, lower_eq},
    {OpId::erf, lower_erf},
    {OpId::exp, lower_exp},
    {OpId::fmod_Scalar, lower_fmod},
    {OpId::bitwise_and_Scalar, lower_bitwise_and},
    {OpId::bitwise_and_Tensor, lower_bitwise_and},
    {OpId::bitwise_left_shift_Tensor, lower_shl},
    {OpId::bitwise_left_shift_Tensor_Scalar, lower_shl},
    {OpId::bitwise_not, lower_bitwise_not},
    {OpId::bitwise_or_Scalar, lower_bitwise_or},
    {OpId::bitwise_or_Tensor, lower_bitwise_or},
    {OpId::bitwise_right_shift_Tensor, lower_shr},
    {OpId::bitwise_right_shift_Tensor_Scalar, lower_shr},
    {OpId::bitwise_xor_Scalar, lower_bitwise_xor},
    {OpId::bitwise_xor_Tensor, lower_bitwise_xor},
    {OpId::div_Scalar_mode, lower_div_mode},
    {OpId::div_Tensor_mode, lower_div_mode},
    {OpId::floor_divide, lower_floor_divide},
    {OpId::floor_divide_Scalar, lower_floor_divide},
    {OpId::fmod_Tensor, lower_fmod},
    {OpId::logical_or, lower_logical_or},
    {OpId::logical_xor, lower_logical_xor},
    {OpId::remainder_Scalar, lower_remainder},
    {OpId::remainder_Tensor, lower_remainder},
    {OpId::rsub_Scalar, lower_rsub},
    {OpId::rsub_Tensor, lower_rsub},
    {OpId::sub_Scalar, lower_sub},
    {OpId::acos, lower_acos},
    {OpId::acosh, lower_acosh},
    {OpId::asin, lower_asin},
    {OpId::asinh, lower_asinh},
    {OpId::atan, lower_atan},
    {OpId::atan2, lower_atan2},
    {OpId::atanh, lower_atanh},
    {OpId::ceil, lower_ceil},
    {OpId::cosh, lower_cosh},
    {OpId::exp2, lower_exp2},
    {OpId::expm1, lower_expm1},
    {OpId::floor, lower_floor},
    {OpId::isinf, lower_isinf},
    {OpId::isnan, lower_isnan},
    {OpId::log10, lower_log10},
    {OpId::log1p, lower_log1p},
    {OpId::log2, lower_log2},
    {OpId::round, lower_round},
    {OpId::round_decimals, lower_round_decimals},
    {OpId::sinh, lower_sinh},
    {OpId::tan, lower_tan},
    {OpId::trunc, lower_trunc},
    {OpId::clamp_Tensor, lower_clamp_tensor},
    {OpId::pow_Scalar, lower_pow_scalar},
    {OpId::ge_Scalar, lower_ge},
    {OpId::ge_Tensor, lower_ge},
    {OpId::gelu, lower_gelu},
    {OpId::gt_Scalar, lower_gt},
    {OpId::gt_Tensor, lower_gt},
    {OpId::hardsigmoid, lower_hardsigmoid},
    {OpId::hardswish, lower_hardswish},
    {OpId::le_Scalar, lower_le},
    {OpId::le_Tensor, lower_le},
    {OpId::log, lower_log},
    {OpId::logical_and, lower_logical_and},
    {OpId::logical_not, lower_logical_not},
    {OpId::lt_Scalar, lower_lt},
    {OpId::lt_Tensor, lower_lt},
    {OpId::masked_fill_Scalar, lower_masked_fill},
    {OpId::masked_fill_Tensor, lower_masked_fill},
    {OpId::maximum, lower_maximum},
    {OpId::min_other, lower_minimum},
    {OpId::minimum, lower_minimum},
    {OpId::mul_Scalar, lower_mul},
    {OpId::mul_Tensor, lower_mul},
    {OpId::ne_Scalar, lower_ne},
    {OpId::ne_Tensor, lower_ne},
    {OpId::neg, lower_neg},
    {OpId::pow_Tensor_Scalar, lower_pow},
    {OpId::pow_Tensor_Tensor, lower_pow},
    {OpId::reciprocal, lower_reciprocal},
    {OpId::relu, lower_relu},
    {OpId::rsqrt, lower_rsqrt},
    {OpId::sigmoid, lower_sigmoid},
    {OpId::sign, lower_sign},
    {OpId::silu, lower_silu},
    {OpId::sin, lower_sin},
    {OpId::sqrt, lower_sqrt},
    {OpId::sub_Tensor, lower_sub},
    {OpId::tanh, lower_tanh},
    {OpId::where_ScalarOther, lower_where},
    {OpId::where_self, lower_where},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> pointwise_rules() {
  return kPointwiseRules;
}

} // namespace fxc::lower_detail
