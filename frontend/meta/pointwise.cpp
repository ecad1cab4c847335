// Meta functions of the pointwise ops: unary and binary math, comparisons, integer division,
// bitwise and logical ops, where, masked_fill, clamp, dropout and the in-place forms. Outputs take
// TensorIterator's layout and torch.result_type's dtype (Python numbers promote as wrapped
// numbers); ops without a loop for a dtype fail as PyTorch's dispatch does.
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Pointwise ops.

// The output of a TensorIterator over `ops` with dtype `dt`.
TensorMeta iter_output(const Ctx& c, const std::vector<Operand>& ops, DType dt) {
  std::vector<const TensorMeta*> ts, tensors_only;
  for (const Operand& o : ops) {
    ts.push_back(o.t ? o.t : &kScalarMeta);
    if (o.t) tensors_only.push_back(o.t);
  }
  Sizes shape = broadcast_all(c, tensors_only);
  return make_strided(dt, shape, iter_strides(ts, shape), common_device(c, tensors_only));
}

DType result_type(const std::vector<Operand>& ops) {
  ResultType r;
  for (const Operand& o : ops) {
    if (o.t)
      r.add_tensor(*o.t);
    else
      r.add_number(o.scalar);
  }
  return r.result();
}

enum class Out { Same, Float, Bool };

template <Out K> Metas unary(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = x.dtype;
  if (K == Out::Float && !is_floating(dt)) dt = DType::F32;
  if (K == Out::Bool) dt = DType::Bool;
  return {iter_output(c, {{&x, {}}}, dt)};
}

Metas neg(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dtype == DType::Bool)
    c.fail("negation, the '-' operator, on a bool tensor is not supported; use logical_not");
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

Metas gelu(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const std::string& ap = c.str("approximate");
  if (ap != "none" && ap != "tanh")
    c.fail("approximate argument must be either none or tanh, got '" + ap + "'");
  const TensorMeta& x = c.tensor("self");
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

Metas inplace(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {c.tensor("self")};
}

void alpha_check(const Ctx& c, DType dt, const Arg& alpha) {
  if (alpha.kind == Arg::Kind::Bool && dt != DType::Bool)
    c.fail("boolean alpha only supported for boolean results");
  if (!is_floating(dt) && alpha.kind == Arg::Kind::Float)
    c.fail("for integral input tensors, argument alpha must not be a floating point number");
}

// Binary arithmetic: `other` is a tensor or a number; add/sub also take alpha.
enum class Bin { Arith, Sub, TrueDiv, Compare, Logical, Pow };

template <Bin K> Metas binary(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand a = c.operand("self");
  const char* other_name = K == Bin::Pow ? "exponent" : "other";
  Operand b = c.operand(other_name);
  DType common = result_type({a, b});
  DType out = common;
  if (K == Bin::TrueDiv && !is_floating(common)) out = DType::F32;
  if (K == Bin::Compare || K == Bin::Logical) out = DType::Bool;
  if (K == Bin::Sub) {
    const bool ba = (a.t ? a.t->dtype : scalar_dtype(a.scalar)) == DType::Bool;
    const bool bb = (b.t ? b.t->dtype : scalar_dtype(b.scalar)) == DType::Bool;
    if (ba && bb)
      c.fail("subtraction, the '-' operator, with two bool tensors is not supported; use "
             "logical_xor");
    if (ba || bb)
      c.fail("subtraction, the '-' operator, with a bool tensor is not supported; use "
             "logical_not to invert a mask");
  }
  if ((K == Bin::Arith || K == Bin::Sub) && c.has_arg("alpha"))
    alpha_check(c, common, c.arg("alpha"));
  if (K == Bin::Pow && !b.t && is_integral(a.t ? a.t->dtype : DType::I64) &&
      b.scalar.kind == Arg::Kind::Int && b.scalar.i < 0)
    c.fail("integers to negative integer powers are not allowed");
  return {iter_output(c, {a, b}, out)};
}

Metas add_inplace(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  Operand other = c.operand("other");
  DType common = result_type({{&self, {}}, other});
  if (!can_cast(common, self.dtype))
    c.fail("result type " + std::string(dtype_name(common)) +
           " can't be cast to the desired output type " + std::string(dtype_name(self.dtype)));
  alpha_check(c, common, c.arg("alpha"));
  if (other.t) {
    Sizes shape = broadcast_all(c, {&self, other.t});
    if (shape != self.sizes)
      c.fail("output with shape " + join(self.sizes) + " doesn't match the broadcast shape " +
             join(shape));
  }
  return {self};
}

Metas fill_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& v = c.tensor("value");
  if (v.dim() != 0)
    c.fail("fill_ only supports a 0-dimension value tensor, but got one with " +
           std::to_string(v.dim()) + " dimensions");
  return {c.tensor("self")};
}

Metas where_self(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& cond = c.tensor("condition");
  if (cond.dtype != DType::Bool && cond.dtype != DType::U8)
    c.fail("where expected condition to be a boolean tensor, but got " + format_meta(cond));
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  return {iter_output(c, {{&cond, {}}, a, b}, dt)};
}

Metas where_scalar_other(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& cond = c.tensor("condition");
  if (cond.dtype != DType::Bool && cond.dtype != DType::U8)
    c.fail("where expected condition to be a boolean tensor, but got " + format_meta(cond));
  Operand a = c.operand("self"), b = c.scalar_operand("other");
  DType dt = result_type({a, b});
  return {iter_output(c, {{&cond, {}}, a, b}, dt)};
}

Metas masked_fill(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool)
    c.fail("masked_fill only supports boolean masks, but got mask " + format_meta(mask));
  Sizes shape = broadcast_all(c, {&mask, &self});
  return {make(self.dtype, shape, common_device(c, {&self, &mask}))};
}

// masked_fill.Tensor: the value is a 0-dim tensor.
Metas masked_fill_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& v = c.tensor("value");
  if (v.dim() != 0)
    c.fail("masked_fill only supports a 0-dimensional value tensor, but " + c.desc("value"));
  return masked_fill(g, n);
}

Metas clamp(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  bool lo = c.has("min"), hi = c.has("max");
  if (!lo && !hi) c.fail("clamp: at least one of 'min' or 'max' must not be None");
  DType dt = self.dtype;
  if (!is_floating(dt)) {
    ResultType r;
    r.add_tensor(self);
    if (lo) r.add_number(c.arg("min"));
    if (hi) r.add_number(c.arg("max"));
    dt = r.result();
  }
  return {iter_output(c, {{&self, {}}}, dt)};
}

Metas dropout(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  double p = c.float_("p");
  if (!(p >= 0 && p <= 1))
    c.fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (p == 0 || !c.bool_("train") || x.numel() == 0) return {x}; // returns the input itself
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

Metas polygamma(const Graph& g, const Node& n) {
  Ctx c(g, n);
  int64_t order = c.int_("n");
  if (order < 0)
    c.fail("polygamma(n, x) does not support negative n, got n=" + std::to_string(order));
  return unary<Out::Float>(g, n);
}

// ---------------------------------------------------------------------------------------------
// Op families of issue 18: integer division and remainders, rsub, bitwise and logical ops.

// The rounding mode of div.Tensor_mode / div.Scalar_mode: "" for None (true division).
std::string rounding_mode(const Ctx& c) {
  if (!c.has("rounding_mode")) return "";
  const std::string& m = c.str("rounding_mode");
  if (m != "trunc" && m != "floor")
    c.fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + m +
           "'");
  return m;
}

// div with a rounding mode: true division without one; trunc/floor keep the common dtype
// (integers stay integers) and have no loop for bool.
Metas div_mode(const Graph& g, const Node& n) {
  Ctx c(g, n);
  std::string mode = rounding_mode(c);
  if (mode.empty()) return binary<Bin::TrueDiv>(g, n);
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  if (dt == DType::Bool)
    not_implemented(c, mode == "trunc" ? "div_trunc_cpu" : "div_floor_cpu", dt);
  return {iter_output(c, {a, b}, dt)};
}

// floor_divide, remainder, fmod.Tensor: the common dtype, no loop for bool.
template <const char* Kernel> Metas int_division(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  if (dt == DType::Bool) not_implemented(c, Kernel, dt);
  return {iter_output(c, {a, b}, dt)};
}
constexpr char kDivFloorCpu[] = "div_floor_cpu";
constexpr char kRemainderCpu[] = "remainder_cpu";
constexpr char kFmodCpu[] = "fmod_cpu";

// bitwise_and/or/xor (bool and integers) and the shifts (integers only).
template <const char* Kernel, bool AllowBool> Metas bitwise(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  if (is_floating(dt) || (!AllowBool && dt == DType::Bool)) not_implemented(c, Kernel, dt);
  return {iter_output(c, {a, b}, dt)};
}
constexpr char kBitwiseAndCpu[] = "bitwise_and_cpu";
constexpr char kBitwiseOrCpu[] = "bitwise_or_cpu";
constexpr char kBitwiseXorCpu[] = "bitwise_xor_cpu";
constexpr char kLshiftCpu[] = "lshift_cpu";
constexpr char kRshiftCpu[] = "rshift_cpu";

Metas bitwise_not(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (is_floating(x.dtype)) not_implemented(c, "bitwise_not_cpu", x.dtype);
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}
// End of the issue-18 op families.

// ---------------------------------------------------------------------------------------------
// Issue 18, unary math and special functions.

// floor, ceil, round, trunc: integers are returned as they are (a copy); bool has no loop.
template <const char* Kernel> Metas rounding(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dtype == DType::Bool) not_implemented(c, Kernel, x.dtype);
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}
constexpr char kFloorCpu[] = "floor_cpu";
constexpr char kCeilCpu[] = "ceil_cpu";
constexpr char kRoundCpu[] = "round_cpu";
constexpr char kTruncCpu[] = "trunc_cpu";

Metas round_decimals(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const int64_t d = c.int_("decimals");
  if (x.dtype == DType::Bool || (!is_floating(x.dtype) && d != 0))
    not_implemented(c, kRoundCpu, x.dtype);
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

// pow.Scalar(Scalar self, Tensor exponent): the number is a wrapped scalar.
Metas pow_scalar(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand base = c.scalar_operand("self");
  const TensorMeta& e = c.tensor("exponent");
  return {iter_output(c, {{&e, {}}}, result_type({base, {&e, {}}}))};
}

// clamp.Tensor: the common dtype of self and the bounds given.
Metas clamp_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta* lo = c.opt_tensor("min");
  const TensorMeta* hi = c.opt_tensor("max");
  if (!lo && !hi) c.fail("torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Operand> ops = {{&self, {}}};
  if (lo) ops.push_back({lo, {}});
  if (hi) ops.push_back({hi, {}});
  DType dt = result_type(ops);
  if (dt == DType::Bool) not_implemented(c, "clamp_cpu", dt);
  return {iter_output(c, ops, dt)};
}
// End of the issue-18 unary math.

// Activations on floating tensors (leaky_relu, elu, softplus, mish): the input's dtype.
Metas float_activation(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (!is_floating(x.dtype)) {
    std::string name = n.target.substr(n.target.find('.') + 1); // "leaky_relu.default"
    not_implemented(c, name.substr(0, name.find('.')) + "_cpu", x.dtype);
  }
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

// hardtanh: a clamp to [min_val, max_val] that keeps the input dtype; bool has no kernel.
Metas hardtanh(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dtype == DType::Bool) not_implemented(c, "hardtanh", x.dtype);
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

// clamp_min / clamp_max: one bound; an integer tensor promotes with a float bound, as clamp.
template <bool Min> Metas clamp_one(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  DType dt = self.dtype;
  if (!is_floating(dt)) {
    ResultType r;
    r.add_tensor(self);
    r.add_number(c.arg(Min ? "min" : "max"));
    dt = r.result();
  }
  if (dt == DType::Bool) not_implemented(c, Min ? "clamp_min_cpu" : "clamp_max_cpu", dt);
  return {iter_output(c, {{&self, {}}}, dt)};
}

// prelu / _prelu_kernel: weight has one element or one per channel (dim 1 of self).
Metas prelu(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& w = c.tensor("weight");
  if (!is_floating(x.dtype)) not_implemented(c, "prelu_cpu", x.dtype);
  int64_t channels = x.dim() >= 2 ? x.sizes[1] : 1;
  if (w.numel() != 1 && (w.dim() != 1 || w.sizes[0] != channels))
    c.fail("Mismatch of parameter numbers and input channel size. Found parameter numbers = " +
           std::to_string(w.numel()) + " and channel size = " + std::to_string(channels) + ".");
  if (w.dtype != x.dtype) check_same_dtype(c, x, "self", &w, "weight");
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

// fill.Scalar: a new tensor of self's sizes and dtype, every element `value`.
Metas fill_scalar(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {iter_output(c, {{&x, {}}}, x.dtype)};
}

// ---------------------------------------------------------------------------------------------
// Issue 18, the math family.

// Binary ops with loops for floating dtypes only (hypot, logaddexp, nextafter, igamma, ...).
template <const char* Kernel> Metas float_only_binary(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand a = c.operand("self"), b = c.operand("other");
  DType dt = result_type({a, b});
  if (!is_floating(dt)) not_implemented(c, Kernel, dt);
  return {iter_output(c, {a, b}, dt)};
}
constexpr char kHypotCpu[] = "hypot_cpu";
constexpr char kLogaddexpCpu[] = "logaddexp_cpu";
constexpr char kLogaddexp2Cpu[] = "logaddexp2_cpu";
constexpr char kNextafterCpu[] = "nextafter_cpu";
constexpr char kIgammaCpu[] = "igamma_cpu";
constexpr char kIgammacCpu[] = "igammac_cpu";
constexpr char kFmaxCpu[] = "fmax_cpu";
constexpr char kFminCpu[] = "fmin_cpu";
constexpr char kGcdCpu[] = "gcd_cpu";
constexpr char kLcmCpu[] = "lcm_cpu";

// heaviside(self, values): both of one dtype.
Metas heaviside(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& v = c.tensor("values");
  if (x.dtype != v.dtype)
    c.fail("heaviside is not yet implemented for tensors with different dtypes");
  if (x.dtype == DType::Bool) not_implemented(c, "heaviside_cpu", x.dtype);
  return {iter_output(c, {{&x, {}}, {&v, {}}}, x.dtype)};
}

Metas isclose(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& y = c.tensor("other");
  if (x.dtype != y.dtype)
    c.fail("isclose(): expected self and other to have the same dtype, but got self.dtype = " +
           std::string(dtype_name(x.dtype)) +
           " and other.dtype = " + std::string(dtype_name(y.dtype)));
  if (c.float_("rtol") < 0) c.fail("rtol must be greater than or equal to zero");
  if (c.float_("atol") < 0) c.fail("atol must be greater than or equal to zero");
  return {iter_output(c, {{&x, {}}, {&y, {}}}, DType::Bool)};
}

// float_power: float64 whatever the operands (one may be a Python number).
Metas float_power(const Graph& g, const Node& n) {
  Ctx c(g, n);
  std::vector<Operand> ops;
  for (const char* name : {"self", "exponent"})
    if (c.arg(name).kind == Arg::Kind::Tensor) ops.push_back({&c.tensor(name), {}});
  return {iter_output(c, ops, DType::F64)};
}

Metas mvlgamma(const Graph& g, const Node& n) {
  Ctx c(g, n);
  if (c.int_("p") < 1) c.fail("p has to be greater than or equal to 1");
  return unary<Out::Float>(g, n);
}

// The special Bessel and Airy functions (integer inputs give the default float dtype), named
// "self" or "x" by native_functions.yaml.
Metas special_unary(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor(n.schema->index_of("x") >= 0 ? "x" : "self");
  return {iter_output(c, {{&x, {}}}, is_floating(x.dtype) ? x.dtype : DType::F32)};
}

// The orthogonal polynomials p(x, n): x and n (either may be a number) promote together, an
// integral result type gives the default float dtype (PyTorch's binary float op).
Metas special_poly(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Operand x = c.operand("x"), deg = c.operand("n");
  DType dt = result_type({x, deg});
  return {iter_output(c, {x, deg}, is_floating(dt) ? dt : DType::F32)};
}

// An out= overload (atan2.out): the functional op's result, written into `out` and returned; out
// must have the result's dtype and sizes (PyTorch would resize an empty one, which a graph of
// fixed sizes never needs).
Metas binary_out(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& out = c.tensor("out");
  TensorMeta r = binary<Bin::TrueDiv>(g, n)[0];
  if (out.dtype != r.dtype || out.sizes != r.sizes)
    c.fail("out is " + format_meta(out) + " but the result is " + format_meta(r));
  return {out};
}

const OpTable<MetaFn>::Row kPointwiseMeta[] = {
    // The special Bessel, Airy and orthogonal-polynomial functions.
    {OpId::special_airy_ai, guarded<special_unary>},
    {OpId::special_bessel_j0, guarded<special_unary>},
    {OpId::special_bessel_j1, guarded<special_unary>},
    {OpId::special_bessel_y0, guarded<special_unary>},
    {OpId::special_bessel_y1, guarded<special_unary>},
    {OpId::special_chebyshev_polynomial_t, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_t_x_scalar, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_t_n_scalar, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_u, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_u_x_scalar, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_u_n_scalar, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_v, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_v_x_scalar, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_v_n_scalar, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_w, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_w_x_scalar, guarded<special_poly>},
    {OpId::special_chebyshev_polynomial_w_n_scalar, guarded<special_poly>},
    {OpId::special_hermite_polynomial_h, guarded<special_poly>},
    {OpId::special_hermite_polynomial_h_x_scalar, guarded<special_poly>},
    {OpId::special_hermite_polynomial_h_n_scalar, guarded<special_poly>},
    {OpId::special_hermite_polynomial_he, guarded<special_poly>},
    {OpId::special_hermite_polynomial_he_x_scalar, guarded<special_poly>},
    {OpId::special_hermite_polynomial_he_n_scalar, guarded<special_poly>},
    {OpId::special_laguerre_polynomial_l, guarded<special_poly>},
    {OpId::special_laguerre_polynomial_l_x_scalar, guarded<special_poly>},
    {OpId::special_laguerre_polynomial_l_n_scalar, guarded<special_poly>},
    {OpId::special_legendre_polynomial_p, guarded<special_poly>},
    {OpId::special_legendre_polynomial_p_x_scalar, guarded<special_poly>},
    {OpId::special_legendre_polynomial_p_n_scalar, guarded<special_poly>},
    {OpId::special_modified_bessel_i0, guarded<special_unary>},
    {OpId::special_modified_bessel_i1, guarded<special_unary>},
    {OpId::special_modified_bessel_k0, guarded<special_unary>},
    {OpId::special_modified_bessel_k1, guarded<special_unary>},
    {OpId::special_scaled_modified_bessel_k0, guarded<special_unary>},
    {OpId::special_scaled_modified_bessel_k1, guarded<special_unary>},
    {OpId::special_shifted_chebyshev_polynomial_t, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_t_x_scalar, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_t_n_scalar, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_u, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_u_x_scalar, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_u_n_scalar, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_v, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_v_x_scalar, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_v_n_scalar, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_w, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_w_x_scalar, guarded<special_poly>},
    {OpId::special_shifted_chebyshev_polynomial_w_n_scalar, guarded<special_poly>},
    {OpId::special_spherical_bessel_j0, guarded<special_unary>},
    // The math family (issue 18).
    {OpId::angle, guarded<unary<Out::Float>>},
    {OpId::conj_physical, guarded<unary<Out::Same>>},
    {OpId::copysign_Tensor, guarded<binary<Bin::TrueDiv>>},
    {OpId::deg2rad, guarded<unary<Out::Float>>},
    {OpId::erfc, guarded<unary<Out::Float>>},
    {OpId::float_power_Scalar, guarded<float_power>},
    {OpId::float_power_Tensor_Scalar, guarded<float_power>},
    {OpId::float_power_Tensor_Tensor, guarded<float_power>},
    {OpId::fmax, guarded<int_division<kFmaxCpu>>},
    {OpId::fmin, guarded<int_division<kFminCpu>>},
    {OpId::frac, guarded<float_activation>},
    {OpId::gcd, guarded<bitwise<kGcdCpu, false>>},
    {OpId::heaviside, guarded<heaviside>},
    {OpId::hypot, guarded<float_only_binary<kHypotCpu>>},
    {OpId::igamma, guarded<float_only_binary<kIgammaCpu>>},
    {OpId::igammac, guarded<float_only_binary<kIgammacCpu>>},
    {OpId::isclose, guarded<isclose>},
    {OpId::isfinite, guarded<unary<Out::Bool>>},
    {OpId::isneginf, guarded<unary<Out::Bool>>},
    {OpId::isposinf, guarded<unary<Out::Bool>>},
    {OpId::isreal, guarded<unary<Out::Bool>>},
    {OpId::lcm, guarded<bitwise<kLcmCpu, false>>},
    {OpId::ldexp_Tensor, guarded<binary<Bin::TrueDiv>>},
    {OpId::logaddexp, guarded<float_only_binary<kLogaddexpCpu>>},
    {OpId::logaddexp2, guarded<float_only_binary<kLogaddexp2Cpu>>},
    {OpId::mvlgamma, guarded<mvlgamma>},
    {OpId::nan_to_num, guarded<unary<Out::Same>>},
    {OpId::nextafter, guarded<float_only_binary<kNextafterCpu>>},
    {OpId::rad2deg, guarded<unary<Out::Float>>},
    {OpId::sgn, guarded<unary<Out::Same>>},
    {OpId::signbit, guarded<unary<Out::Bool>>},
    {OpId::sinc, guarded<unary<Out::Float>>},
    {OpId::special_entr, guarded<unary<Out::Float>>},
    {OpId::special_erfcx, guarded<unary<Out::Float>>},
    {OpId::special_i0e, guarded<unary<Out::Float>>},
    {OpId::special_i1e, guarded<unary<Out::Float>>},
    {OpId::special_log_ndtr, guarded<unary<Out::Float>>},
    {OpId::special_ndtr, guarded<unary<Out::Float>>},
    {OpId::special_ndtri, guarded<unary<Out::Float>>},
    {OpId::special_polygamma, guarded<polygamma>},
    {OpId::special_xlog1py, guarded<binary<Bin::TrueDiv>>},
    {OpId::special_zeta, guarded<binary<Bin::TrueDiv>>},
    {OpId::xlogy_Tensor, guarded<binary<Bin::TrueDiv>>},
    {OpId::abs, guarded<unary<Out::Same>>},
    {OpId::add_Scalar, guarded<binary<Bin::Arith>>},
    {OpId::add_Tensor, guarded<binary<Bin::Arith>>},
    {OpId::add__Tensor, guarded<add_inplace>},
    {OpId::clamp, guarded<clamp>},
    {OpId::cos, guarded<unary<Out::Float>>},
    {OpId::div_Scalar, guarded<binary<Bin::TrueDiv>>},
    {OpId::div_Tensor, guarded<binary<Bin::TrueDiv>>},
    {OpId::dropout, guarded<dropout>},
    {OpId::eq_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::eq_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::erf, guarded<unary<Out::Float>>},
    // The special functions (runtime/kernels/special.cpp).
    {OpId::digamma, guarded<unary<Out::Float>>},
    {OpId::erfinv, guarded<unary<Out::Float>>},
    {OpId::i0, guarded<unary<Out::Float>>},
    {OpId::lgamma, guarded<unary<Out::Float>>},
    {OpId::polygamma, guarded<polygamma>},
    {OpId::special_i1, guarded<unary<Out::Float>>},
    {OpId::exp, guarded<unary<Out::Float>>},
    {OpId::fill__Scalar, guarded<inplace>},
    {OpId::fill__Tensor, guarded<fill_tensor>},
    {OpId::fmod_Scalar, guarded<int_division<kFmodCpu>>},
    {OpId::ge_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::ge_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::gelu, guarded<gelu>},
    {OpId::gt_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::gt_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::hardsigmoid, guarded<unary<Out::Same>>},
    {OpId::hardswish, guarded<unary<Out::Same>>},
    {OpId::hardswish_, guarded<inplace>},
    {OpId::le_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::le_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::log, guarded<unary<Out::Float>>},
    {OpId::logical_and, guarded<binary<Bin::Logical>>},
    {OpId::logical_not, guarded<unary<Out::Bool>>},
    {OpId::lt_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::lt_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::masked_fill_Scalar, guarded<masked_fill>},
    {OpId::masked_fill_Tensor, guarded<masked_fill_tensor>},
    {OpId::maximum, guarded<binary<Bin::Arith>>},
    {OpId::min_other, guarded<binary<Bin::Arith>>},
    {OpId::minimum, guarded<binary<Bin::Arith>>},
    {OpId::mul_Scalar, guarded<binary<Bin::Arith>>},
    {OpId::mul_Tensor, guarded<binary<Bin::Arith>>},
    {OpId::ne_Scalar, guarded<binary<Bin::Compare>>},
    {OpId::ne_Tensor, guarded<binary<Bin::Compare>>},
    {OpId::neg, guarded<neg>},
    {OpId::pow_Tensor_Scalar, guarded<binary<Bin::Pow>>},
    {OpId::pow_Tensor_Tensor, guarded<binary<Bin::Pow>>},
    {OpId::reciprocal, guarded<unary<Out::Float>>},
    {OpId::relu, guarded<unary<Out::Same>>},
    {OpId::relu_, guarded<inplace>},
    {OpId::zero_, guarded<inplace>},
    {OpId::rsqrt, guarded<unary<Out::Float>>},
    {OpId::sigmoid, guarded<unary<Out::Float>>},
    {OpId::sign, guarded<unary<Out::Same>>},
    {OpId::silu, guarded<unary<Out::Same>>},
    {OpId::silu_, guarded<inplace>},
    {OpId::sin, guarded<unary<Out::Float>>},
    {OpId::sqrt, guarded<unary<Out::Float>>},
    {OpId::sub_Tensor, guarded<binary<Bin::Sub>>},
    {OpId::tanh, guarded<unary<Out::Float>>},
    {OpId::where_ScalarOther, guarded<where_scalar_other>},
    {OpId::where_self, guarded<where_self>},
    {OpId::bitwise_and_Scalar, guarded<bitwise<kBitwiseAndCpu, true>>},
    {OpId::bitwise_and_Tensor, guarded<bitwise<kBitwiseAndCpu, true>>},
    {OpId::bitwise_left_shift_Tensor, guarded<bitwise<kLshiftCpu, false>>},
    {OpId::bitwise_left_shift_Tensor_Scalar, guarded<bitwise<kLshiftCpu, false>>},
    {OpId::bitwise_not, guarded<bitwise_not>},
    {OpId::bitwise_or_Scalar, guarded<bitwise<kBitwiseOrCpu, true>>},
    {OpId::bitwise_or_Tensor, guarded<bitwise<kBitwiseOrCpu, true>>},
    {OpId::bitwise_right_shift_Tensor, guarded<bitwise<kRshiftCpu, false>>},
    {OpId::bitwise_right_shift_Tensor_Scalar, guarded<bitwise<kRshiftCpu, false>>},
    {OpId::bitwise_xor_Scalar, guarded<bitwise<kBitwiseXorCpu, true>>},
    {OpId::bitwise_xor_Tensor, guarded<bitwise<kBitwiseXorCpu, true>>},
    {OpId::div_Scalar_mode, guarded<div_mode>},
    {OpId::div_Tensor_mode, guarded<div_mode>},
    {OpId::floor_divide, guarded<int_division<kDivFloorCpu>>},
    {OpId::floor_divide_Scalar, guarded<int_division<kDivFloorCpu>>},
    {OpId::fmod_Tensor, guarded<int_division<kFmodCpu>>},
    {OpId::logical_or, guarded<binary<Bin::Logical>>},
    {OpId::logical_xor, guarded<binary<Bin::Logical>>},
    {OpId::remainder_Scalar, guarded<int_division<kRemainderCpu>>},
    {OpId::remainder_Tensor, guarded<int_division<kRemainderCpu>>},
    {OpId::rsub_Scalar, guarded<binary<Bin::Sub>>},
    {OpId::rsub_Tensor, guarded<binary<Bin::Sub>>},
    {OpId::sub_Scalar, guarded<binary<Bin::Sub>>},
    {OpId::acos, guarded<unary<Out::Float>>},
    {OpId::acosh, guarded<unary<Out::Float>>},
    {OpId::asin, guarded<unary<Out::Float>>},
    {OpId::asinh, guarded<unary<Out::Float>>},
    {OpId::atan, guarded<unary<Out::Float>>},
    {OpId::atanh, guarded<unary<Out::Float>>},
    {OpId::cosh, guarded<unary<Out::Float>>},
    {OpId::exp2, guarded<unary<Out::Float>>},
    {OpId::expm1, guarded<unary<Out::Float>>},
    {OpId::log10, guarded<unary<Out::Float>>},
    {OpId::log1p, guarded<unary<Out::Float>>},
    {OpId::log2, guarded<unary<Out::Float>>},
    {OpId::sinh, guarded<unary<Out::Float>>},
    {OpId::tan, guarded<unary<Out::Float>>},
    {OpId::atan2, guarded<binary<Bin::TrueDiv>>},
    {OpId::atan2_out, guarded<binary_out>},
    {OpId::ceil, guarded<rounding<kCeilCpu>>},
    {OpId::clamp_Tensor, guarded<clamp_tensor>},
    {OpId::floor, guarded<rounding<kFloorCpu>>},
    {OpId::isinf, guarded<unary<Out::Bool>>},
    {OpId::isnan, guarded<unary<Out::Bool>>},
    {OpId::pow_Scalar, guarded<pow_scalar>},
    {OpId::round, guarded<rounding<kRoundCpu>>},
    {OpId::round_decimals, guarded<round_decimals>},
    {OpId::trunc, guarded<rounding<kTruncCpu>>},
    // Activations and single-bound clamps.
    {OpId::clamp_max, guarded<clamp_one<false>>},
    {OpId::clamp_min, guarded<clamp_one<true>>},
    {OpId::elu, guarded<float_activation>},
    {OpId::celu, guarded<float_activation>},
    {OpId::selu, guarded<float_activation>},
    {OpId::log_sigmoid, guarded<float_activation>},
    {OpId::hardshrink, guarded<float_activation>},
    {OpId::softshrink, guarded<float_activation>},
    {OpId::logit, guarded<unary<Out::Float>>},
    {OpId::relu6, guarded<hardtanh>},
    {OpId::threshold, guarded<hardtanh>},
    {OpId::elu_, guarded<inplace>},
    {OpId::dropout_, guarded<inplace>},
    {OpId::detach_, guarded<inplace>},
    {OpId::fill_Scalar, guarded<fill_scalar>},
    {OpId::prelu, guarded<prelu>},
    {OpId::_prelu_kernel, guarded<prelu>},
    {OpId::hardtanh, guarded<hardtanh>},
    {OpId::hardtanh_, guarded<inplace>},
    {OpId::leaky_relu, guarded<float_activation>},
    {OpId::leaky_relu_, guarded<inplace>},
    {OpId::mish, guarded<float_activation>},
    {OpId::mish_, guarded<inplace>},
    {OpId::softplus, guarded<float_activation>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> pointwise_meta() {
  return kPointwiseMeta;
}

} // namespace fxc::meta_detail
