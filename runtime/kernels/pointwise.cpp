// Reference kernels of the pointwise ops: unary and binary math, comparisons, integer division,
// bitwise and logical ops, where, masked_fill, clamp, dropout and the in-place forms, over the
// elementwise engine of kernel_util.h. Values compute in the op's opmath type and integers wrap
// on overflow, as in PyTorch.
#include "runtime/kernels/kernel_util.h"

#include "frontend/special_math.h"

#include <cfloat>

namespace fxc::kernel_detail {
namespace {

// ---- Unary ops ----

double gelu_erf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double silu(double x) {
  return x / (1.0 + std::exp(-x));
}
double hardsigmoid(double x) {
  return std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
}
double hardswish(double x) {
  return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
}
double relu(double x) {
  return std::isnan(x) ? x : (x > 0 ? x : 0.0);
}
double sign(double x) {
  return double((0 < x) - (x < 0));
}

enum class UnaryKind {
  Promote,   // integer/bool inputs compute in the default float dtype (exp, sqrt, ...)
  FloatOnly, // non-floating inputs are an error (gelu, silu, ...)
  Keep,      // the result keeps the input dtype (relu, neg, abs, sign)
};

Tensor unary(const KernelCall& c, const Tensor& x, UnaryKind kind, FloatFn ff, IntFn fi,
             const char* name, const double* extra = nullptr) {
  DType dt = x.dtype();
  if (kind == UnaryKind::FloatOnly && !is_floating(dt))
    fail(std::string(name) + " is not implemented for " + dname(dt) + " tensors");
  if (kind == UnaryKind::Promote && !is_floating(dt)) dt = c.default_float();
  dt = c.result_dtype(dt);
  return elementwise({x}, dt, dt, ff, fi, extra);
}

#define UNARY_FLOAT(fn, KIND, expr)                                                                \
  std::vector<Tensor> k_##fn(const KernelCall& c) {                                                \
    return {unary(                                                                                 \
        c, c.tensor("self"), UnaryKind::KIND,                                                      \
        [](const double* v, const double*) {                                                       \
          double x = v[0];                                                                         \
          return (expr);                                                                           \
        },                                                                                         \
        nullptr, #fn)};                                                                            \
  }

UNARY_FLOAT(exp, Promote, std::exp(x))
UNARY_FLOAT(log, Promote, std::log(x))
UNARY_FLOAT(sqrt, Promote, std::sqrt(x))
UNARY_FLOAT(rsqrt, Promote, 1.0 / std::sqrt(x))
UNARY_FLOAT(erf, Promote, std::erf(x))
UNARY_FLOAT(sin, Promote, std::sin(x))
UNARY_FLOAT(cos, Promote, std::cos(x))
UNARY_FLOAT(tanh, Promote, std::tanh(x))
UNARY_FLOAT(sigmoid, Promote, sigmoid(x))
UNARY_FLOAT(reciprocal, Promote, 1.0 / x)
UNARY_FLOAT(silu, FloatOnly, silu(x))
UNARY_FLOAT(hardswish, FloatOnly, hardswish(x))
UNARY_FLOAT(hardsigmoid, FloatOnly, hardsigmoid(x))
#undef UNARY_FLOAT

Tensor relu_of(const KernelCall& c, const Tensor& x) {
  if (x.dtype() == DType::Bool) fail("relu is not implemented for b8 tensors");
  return unary(
      c, x, UnaryKind::Keep, [](const double* v, const double*) { return relu(v[0]); },
      [](const int64_t* v, const double*) { return std::max<int64_t>(v[0], 0); }, "relu");
}

Tensors k_relu(const KernelCall& c) {
  return {relu_of(c, c.tensor("self"))};
}

Tensors k_neg(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dtype() == DType::Bool)
    fail("negation, the `-` operator, on a bool tensor is not supported; use logical_not");
  return {unary(
      c, x, UnaryKind::Keep, [](const double* v, const double*) { return -v[0]; },
      [](const int64_t* v, const double*) { return wrap_sub(0, v[0]); }, "neg")};
}

Tensors k_abs(const KernelCall& c) {
  return {unary(
      c, c.tensor("self"), UnaryKind::Keep,
      [](const double* v, const double*) { return std::fabs(v[0]); },
      [](const int64_t* v, const double*) { return v[0] < 0 ? wrap_sub(0, v[0]) : v[0]; }, "abs")};
}

Tensors k_sign(const KernelCall& c) {
  return {unary(
      c, c.tensor("self"), UnaryKind::Keep,
      [](const double* v, const double*) { return sign(v[0]); },
      [](const int64_t* v, const double*) { return int64_t((0 < v[0]) - (v[0] < 0)); }, "sign")};
}

Tensors k_gelu(const KernelCall& c) {
  const std::string& approx = c.arg("approximate").s;
  if (approx != "none" && approx != "tanh")
    fail("approximate argument must be either none or tanh, got '" + approx + "'");
  FloatFn f = approx == "tanh"
                  ? FloatFn([](const double* v, const double*) { return gelu_tanh(v[0]); })
                  : FloatFn([](const double* v, const double*) { return gelu_erf(v[0]); });
  return {unary(c, c.tensor("self"), UnaryKind::FloatOnly, f, nullptr, "gelu")};
}

Tensors k_logical_not(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {elementwise(
      {x}, DType::F64, DType::Bool,
      [](const double* v, const double*) { return double(v[0] == 0); }, nullptr)};
}

// ---- Binary arithmetic ----

// The second operand of a `.Tensor` or `.Scalar` overload: the tensor "other", or the scalar
// as a 0-dim tensor of the common dtype (so it is rounded as PyTorch rounds wrapped scalars).
struct Binary {
  Tensor a, b;
  DType common;
};

Binary binary_operands(const KernelCall& c, const char* other = "other") {
  const Tensor& a = c.tensor("self");
  const Arg& o = c.arg(other);
  if (o.kind == Arg::Kind::Tensor) {
    const Tensor& b = c.tensor(other);
    DType common = result_type({a, b}, {}, c);
    return {a, b, common};
  }
  DType common = result_type({a}, {o}, c);
  return {a, filled(common, {}, o), common};
}

Tensor add_like(const KernelCall& c, bool subtract) {
  Binary op = binary_operands(c);
  double alpha = c.arg("alpha").scalar();
  if (!is_floating(op.common) && c.arg("alpha").kind == Arg::Kind::Float)
    fail("for integral input tensors, argument alpha must not be a floating point number");
  if (subtract && op.a.dtype() == DType::Bool && op.b.dtype() == DType::Bool)
    fail("subtraction, the `-` operator, with two bool tensors is not supported; use "
         "logical_xor");
  double extra[2] = {subtract ? -alpha : alpha, double(int64_t(alpha))};
  if (subtract) extra[1] = -extra[1];
  return elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double* e) { return v[0] + e[0] * v[1]; },
      [](const int64_t* v, const double* e) {
        return wrap_add(v[0], wrap_mul(int64_t(e[1]), v[1]));
      },
      extra);
}

Tensors k_add(const KernelCall& c) {
  return {add_like(c, false)};
}
Tensors k_sub(const KernelCall& c) {
  return {add_like(c, true)};
}

Tensors k_mul(const KernelCall& c) {
  Binary op = binary_operands(c);
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) { return v[0] * v[1]; },
      [](const int64_t* v, const double*) { return wrap_mul(v[0], v[1]); })};
}

Tensors k_div(const KernelCall& c) {
  Binary op = binary_operands(c);
  DType dt = is_floating(op.common) ? op.common : c.default_float();
  return {elementwise(
      {op.a, op.b}, dt, dt, [](const double* v, const double*) { return v[0] / v[1]; }, nullptr)};
}

Tensors k_maximum(const KernelCall& c) {
  Binary op = binary_operands(c);
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) { return nan_max(v[0], v[1]); },
      [](const int64_t* v, const double*) { return std::max(v[0], v[1]); })};
}

Tensors k_minimum(const KernelCall& c) {
  Binary op = binary_operands(c);
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) { return nan_min(v[0], v[1]); },
      [](const int64_t* v, const double*) { return std::min(v[0], v[1]); })};
}

// Integer power as PyTorch computes it (negative exponents give 1, ±1 or 0).
int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  int64_t r = 1;
  while (exp) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}

Tensors k_pow(const KernelCall& c) {
  Binary op = binary_operands(c, "exponent");
  const Arg& e = c.arg("exponent");
  if (!is_floating(op.common) && e.kind != Arg::Kind::Tensor && e.scalar() < 0)
    fail("integers to negative integer powers are not allowed");
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) { return std::pow(v[0], v[1]); },
      [](const int64_t* v, const double*) { return int_pow(v[0], v[1]); })};
}

Tensors k_fmod(const KernelCall& c) {
  Binary op = binary_operands(c);
  if (!is_floating(op.common) && c.arg("other").scalar() == 0) fail("ZeroDivisionError");
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) { return std::fmod(v[0], v[1]); },
      [](const int64_t* v, const double*) {
        // INT64_MIN % -1 overflows in C++; the mathematical result is 0.
        return v[1] == -1 ? int64_t(0) : v[0] % v[1];
      })};
}

// ---- Comparisons and logical ops ----

/// The comparison a k_cmp kernel makes.
enum class CmpKind { Eq, Ne, Lt, Le, Gt, Ge };

template <CmpKind Op, typename T> bool compare(T a, T b) {
  switch (Op) {
  case CmpKind::Eq:
    return a == b;
  case CmpKind::Ne:
    return a != b;
  case CmpKind::Lt:
    return a < b;
  case CmpKind::Le:
    return a <= b;
  case CmpKind::Gt:
    return a > b;
  case CmpKind::Ge:
    return a >= b;
  }
  return false;
}
template <CmpKind Op> double cmp(const double* v, const double*) {
  return compare<Op>(v[0], v[1]);
}
template <CmpKind Op> int64_t icmp(const int64_t* v, const double*) {
  return compare<Op>(v[0], v[1]);
}

template <CmpKind Op> Tensors k_cmp(const KernelCall& c) {
  Binary op = binary_operands(c);
  return {elementwise({op.a, op.b}, op.common, DType::Bool, cmp<Op>, icmp<Op>)};
}

Tensors k_logical_and(const KernelCall& c) {
  return {elementwise(
      {c.tensor("self"), c.tensor("other")}, DType::F64, DType::Bool,
      [](const double* v, const double*) { return double(v[0] != 0 && v[1] != 0); }, nullptr)};
}

Tensors k_where(const KernelCall& c) {
  const Tensor& cond = c.tensor("condition");
  if (cond.dtype() != DType::Bool)
    fail("where expected condition to be a boolean tensor, but got a tensor with dtype " +
         dname(cond.dtype()));
  Binary op = binary_operands(c);
  return {elementwise(
      {cond, op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) { return v[0] != 0 ? v[1] : v[2]; },
      [](const int64_t* v, const double*) { return v[0] != 0 ? v[1] : v[2]; })};
}

Tensors k_masked_fill(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& mask = c.tensor("mask");
  if (mask.dtype() != DType::Bool)
    fail("masked_fill only supports boolean masks, but got mask with dtype " + dname(mask.dtype()));
  const Arg& value = c.arg("value");
  Tensor v = filled(x.dtype(), {}, value); // a fractional value truncates for integer tensors
  return {elementwise(
      {x, mask, v}, x.dtype(), x.dtype(),
      [](const double* a, const double*) { return a[1] != 0 ? a[2] : a[0]; },
      [](const int64_t* a, const double*) { return a[1] != 0 ? a[2] : a[0]; })};
}

// masked_fill.Tensor: the value is a 0-dim tensor, converted to self's dtype.
Tensors k_masked_fill_tensor(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& mask = c.tensor("mask");
  const Tensor& value = c.tensor("value");
  if (mask.dtype() != DType::Bool)
    fail("masked_fill only supports boolean masks, but got mask with dtype " + dname(mask.dtype()));
  if (value.dim() != 0)
    fail("masked_fill only supports a 0-dimensional value tensor, but got tensor with " +
         std::to_string(value.dim()) + " dimension(s)");
  Tensor v = value.to(x.dtype());
  return {elementwise(
      {x, mask, v}, x.dtype(), x.dtype(),
      [](const double* a, const double*) { return a[1] != 0 ? a[2] : a[0]; },
      [](const int64_t* a, const double*) { return a[1] != 0 ? a[2] : a[0]; })};
}

// x clamped to the bounds given (None: no bound) in dtype dt; NaN stays NaN.
Tensor clamp_to(const Tensor& x, const Arg& lo, const Arg& hi, DType dt) {
  // Bounds become 0-dim tensors of the common dtype; extra[] says which bounds exist.
  auto bound = [&](const Arg& a) {
    Tensor t = Tensor::empty(dt, {});
    if (a.kind == Arg::Kind::Int && !is_floating(dt))
      t.store_int(0, a.i);
    else if (!a.is_none())
      t.store(0, a.scalar());
    return t;
  };
  double extra[2] = {double(!lo.is_none()), double(!hi.is_none())};
  return elementwise(
      {x, bound(lo), bound(hi)}, dt, dt,
      [](const double* v, const double* e) {
        if (std::isnan(v[0])) return v[0];
        double r = v[0];
        if (e[0] != 0) r = std::isnan(v[1]) ? v[1] : std::max(r, v[1]);
        if (e[1] != 0) r = std::isnan(v[2]) ? v[2] : std::min(r, v[2]);
        return r;
      },
      [](const int64_t* v, const double* e) {
        int64_t r = v[0];
        if (e[0] != 0) r = std::max(r, v[1]);
        if (e[1] != 0) r = std::min(r, v[2]);
        return r;
      },
      extra);
}

Tensors k_clamp(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& lo = c.arg("min");
  const Arg& hi = c.arg("max");
  if (lo.is_none() && hi.is_none())
    fail("torch.clamp: at least one of 'min' or 'max' must not be None");
  return {clamp_to(x, lo, hi, result_type({x}, {lo, hi}, c))};
}

template <bool Min> Tensors k_clamp_one(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& b = c.arg(Min ? "min" : "max");
  DType dt = result_type({x}, {b}, c);
  if (dt == DType::Bool)
    fail(std::string(Min ? "clamp_min" : "clamp_max") + "_cpu not implemented for 'Bool'");
  return {Min ? clamp_to(x, b, Arg::none(), dt) : clamp_to(x, Arg::none(), b, dt)};
}

// ---- Activations: hardtanh, leaky_relu, elu, softplus, mish, prelu ----

Tensors k_hardtanh(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dtype() == DType::Bool) fail("\"hardtanh_cpu\" not implemented for 'Bool'");
  return {clamp_to(x, c.arg("min_val"), c.arg("max_val"), c.result_dtype(x.dtype()))};
}

// A float-only activation with up to three Scalar parameters, passed to `f` as e[0..2].
Tensor activation(const KernelCall& c, const char* name, std::initializer_list<const char*> params,
                  FloatFn f) {
  double extra[3] = {0, 0, 0};
  size_t k = 0;
  for (const char* p : params) extra[k++] = c.arg(p).scalar();
  return unary(c, c.tensor("self"), UnaryKind::FloatOnly, f, nullptr, name, extra);
}

double softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

Tensors k_leaky_relu(const KernelCall& c) {
  return {activation(c, "leaky_relu", {"negative_slope"}, [](const double* v, const double* e) {
    return v[0] > 0 ? v[0] : v[0] * e[0];
  })};
}
Tensors k_elu(const KernelCall& c) {
  return {
      activation(c, "elu", {"alpha", "scale", "input_scale"}, [](const double* v, const double* e) {
        double x = v[0];
        return x > 0 ? x * e[1] : std::expm1(x * e[2]) * e[0] * e[1];
      })};
}
Tensors k_softplus(const KernelCall& c) {
  return {activation(c, "softplus", {"beta", "threshold"},
                     [](const double* v, const double* e) { return softplus(v[0], e[0], e[1]); })};
}
Tensors k_mish(const KernelCall& c) {
  return {activation(c, "mish", {}, [](const double* v, const double*) {
    return v[0] * std::tanh(softplus(v[0], 1.0, 20.0));
  })};
}

// ---- relu6, selu, celu, log_sigmoid, logit, hardshrink, softshrink, threshold ----

// A Scalar parameter as the op's element type holds it: PyTorch compares float32 inputs with
// float(lambd), so x = 0.4f is inside hardshrink(0.4).
double param_as(const Tensor& x, double v) {
  return x.dtype() == DType::F32 ? double(float(v)) : v;
}

Tensors k_relu6(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dtype() == DType::Bool) fail("\"hardtanh_cpu\" not implemented for 'Bool'");
  return {clamp_to(x, Arg::of_int(0), Arg::of_int(6), c.result_dtype(x.dtype()))};
}
Tensors k_selu(const KernelCall& c) {
  return {activation(c, "selu", {}, [](const double* v, const double*) {
    const double alpha = 1.6732632423543772848170429916717,
                 scale = 1.0507009873554804934193349852946;
    return v[0] > 0 ? v[0] * scale : std::expm1(v[0]) * alpha * scale;
  })};
}
Tensors k_celu(const KernelCall& c) {
  return {activation(c, "celu", {"alpha"}, [](const double* v, const double* e) {
    return v[0] > 0 ? v[0] : std::expm1(v[0] / e[0]) * e[0];
  })};
}
Tensors k_log_sigmoid(const KernelCall& c) {
  return {activation(c, "log_sigmoid", {}, [](const double* v, const double*) {
    return std::min(v[0], 0.0) - std::log1p(std::exp(-std::abs(v[0])));
  })};
}
Tensors k_hardshrink(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  double extra[1] = {param_as(x, c.arg("lambd").scalar())};
  return {unary(
      c, x, UnaryKind::FloatOnly,
      [](const double* v, const double* e) { return v[0] >= -e[0] && v[0] <= e[0] ? 0.0 : v[0]; },
      nullptr, "hardshrink", extra)};
}
Tensors k_softshrink(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  double extra[1] = {param_as(x, c.arg("lambd").scalar())};
  return {unary(
      c, x, UnaryKind::FloatOnly,
      [](const double* v, const double* e) {
        return v[0] > e[0] ? v[0] - e[0] : v[0] < -e[0] ? v[0] + e[0] : 0.0;
      },
      nullptr, "softshrink", extra)};
}
// logit(x) = log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given.
Tensors k_logit(const KernelCall& c) {
  const Arg& eps = c.arg("eps");
  double extra[1] = {eps.is_none() ? -1.0 : eps.f};
  return {unary(
      c, c.tensor("self"), UnaryKind::Promote,
      [](const double* v, const double* e) {
        double z = e[0] < 0 ? v[0] : std::min(std::max(v[0], e[0]), 1.0 - e[0]);
        return std::log(z / (1.0 - z));
      },
      nullptr, "logit", extra)};
}
// threshold: `value` where x <= threshold, x elsewhere; the input's dtype.
Tensors k_threshold(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dtype() == DType::Bool) fail("\"threshold_cpu\" not implemented for 'Bool'");
  double extra[2] = {param_as(x, c.arg("threshold").scalar()), c.arg("value").scalar()};
  return {unary(
      c, x, UnaryKind::Keep,
      [](const double* v, const double* e) { return v[0] <= e[0] ? e[1] : v[0]; },
      [](const int64_t* v, const double* e) { return double(v[0]) <= e[0] ? int64_t(e[1]) : v[0]; },
      "threshold", extra)};
}

// prelu: weight has one element or one per channel (dim 1).
Tensors k_prelu(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& w = c.tensor("weight");
  if (!is_floating(x.dtype())) fail("\"prelu_cpu\" not implemented for '" + dname(x.dtype()) + "'");
  Tensor wv = w;
  if (w.numel() != 1) {
    if (x.dim() < 2 || w.dim() != 1 || w.size(0) != x.size(1))
      fail("Mismatch of parameter numbers and input channel size. Found parameter numbers = " +
           std::to_string(w.numel()) +
           " and channel size = " + std::to_string(x.dim() >= 2 ? x.size(1) : 1) + ".");
    Shape sizes(size_t(x.dim()), 1), strides(size_t(x.dim()), 0);
    sizes[1] = w.size(0);
    strides[1] = w.stride(0);
    wv = view_of(w, sizes, strides, w.storage_offset());
  } else {
    wv = view_of(w, {}, {}, w.storage_offset());
  }
  DType dt = c.result_dtype(x.dtype());
  return {elementwise(
      {x, wv}, dt, dt, [](const double* v, const double*) { return v[0] > 0 ? v[0] : v[0] * v[1]; },
      nullptr)};
}

Tensors k_fill_scalar(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {filled(c.result_dtype(x.dtype()), x.sizes(), c.arg("value"))};
}

// ---- Op families of issue 18: integer division and remainders, rsub, bitwise, logical ----

// PyTorch's integer division raises on a zero divisor (on the CPU).
void check_divisor(int64_t b) {
  if (b == 0) fail("ZeroDivisionError");
}

// c10::div_floor_floating, in the op's math type T.
template <class T> T div_floor_floating(T a, T b) {
  if (b == 0) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
  T floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = std::copysign(T(0), a / b);
  }
  return floordiv;
}
template <class T> T div_trunc_floating(T a, T b) {
  return std::trunc(a / b);
}
// Python's %, in T (remainder's float loop).
template <class T> T remainder_floating(T a, T b) {
  T mod = std::fmod(a, b);
  if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
  return mod;
}
int64_t div_floor_int(int64_t a, int64_t b) {
  check_divisor(b);
  if (b == -1) return wrap_sub(0, a); // INT64_MIN / -1 wraps
  int64_t q = a / b;
  if (a % b != 0 && (a < 0) != (b < 0)) --q;
  return q;
}
int64_t div_trunc_int(int64_t a, int64_t b) {
  check_divisor(b);
  return b == -1 ? wrap_sub(0, a) : a / b;
}
int64_t remainder_int(int64_t a, int64_t b) {
  check_divisor(b);
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}
int64_t fmod_int(int64_t a, int64_t b) {
  check_divisor(b);
  return b == -1 ? 0 : a % b;
}

// A float function of two operands computed in float (e[0] == 0) or double (e[0] != 0): half
// types compute in float, as PyTorch's opmath does.
#define FXC_FLOAT_BINARY(NAME, FN)                                                                 \
  double NAME(const double* v, const double* e) {                                                  \
    if (e[0] != 0) return FN<double>(v[0], v[1]);                                                  \
    return double(FN<float>(float(v[0]), float(v[1])));                                            \
  }
FXC_FLOAT_BINARY(ff_div_floor, div_floor_floating)
FXC_FLOAT_BINARY(ff_div_trunc, div_trunc_floating)
FXC_FLOAT_BINARY(ff_remainder, remainder_floating)
#undef FXC_FLOAT_BINARY

// An integer-division-like op over self and other (tensor or number) in their common dtype.
Tensor int_division(const KernelCall& c, const char* kernel, FloatFn ff, IntFn fi) {
  Binary op = binary_operands(c);
  if (op.common == DType::Bool) not_implemented(kernel, op.common);
  double extra[1] = {double(op.common == DType::F64)};
  return elementwise({op.a, op.b}, op.common, op.common, ff, fi, extra);
}

Tensors k_floor_divide(const KernelCall& c) {
  return {int_division(c, "div_floor_cpu", ff_div_floor,
                       [](const int64_t* v, const double*) { return div_floor_int(v[0], v[1]); })};
}

Tensors k_div_mode(const KernelCall& c) {
  const Arg& mode = c.arg("rounding_mode");
  if (mode.is_none()) return k_div(c);
  if (mode.kind != Arg::Kind::String || (mode.s != "trunc" && mode.s != "floor"))
    fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" +
         (mode.kind == Arg::Kind::String ? mode.s : std::string("?")) + "'");
  if (mode.s == "floor") return k_floor_divide(c);
  return {int_division(c, "div_trunc_cpu", ff_div_trunc,
                       [](const int64_t* v, const double*) { return div_trunc_int(v[0], v[1]); })};
}

Tensors k_remainder(const KernelCall& c) {
  return {int_division(c, "remainder_cpu", ff_remainder,
                       [](const int64_t* v, const double*) { return remainder_int(v[0], v[1]); })};
}

Tensors k_fmod_tensor(const KernelCall& c) {
  return {int_division(
      c, "fmod_cpu", [](const double* v, const double*) { return std::fmod(v[0], v[1]); },
      [](const int64_t* v, const double*) { return fmod_int(v[0], v[1]); })};
}

// rsub(self, other, alpha) = other - alpha * self.
Tensors k_rsub(const KernelCall& c) {
  Binary op = binary_operands(c);
  const Arg& alpha_arg = c.arg("alpha");
  const bool other_bool = c.arg("other").kind == Arg::Kind::Tensor
                              ? op.b.dtype() == DType::Bool
                              : c.arg("other").kind == Arg::Kind::Bool;
  if (op.a.dtype() == DType::Bool && other_bool)
    fail("subtraction, the `-` operator, with two bool tensors is not supported; use "
         "logical_xor");
  if (op.a.dtype() == DType::Bool || other_bool)
    fail("subtraction, the `-` operator, with a bool tensor is not supported; use logical_not "
         "to invert a mask");
  if (!is_floating(op.common) && alpha_arg.kind == Arg::Kind::Float)
    fail("for integral input tensors, argument alpha must not be a floating point number");
  double alpha = alpha_arg.scalar();
  double extra[2] = {-alpha, -double(int64_t(alpha))};
  return {elementwise(
      {op.b, op.a}, op.common, op.common,
      [](const double* v, const double* e) { return v[0] + e[0] * v[1]; },
      [](const int64_t* v, const double* e) {
        return wrap_add(v[0], wrap_mul(int64_t(e[1]), v[1]));
      },
      extra)};
}

// bitwise_and/or/xor: bool and integer dtypes.
template <int Op> Tensors k_bitwise(const KernelCall& c) {
  static const char* const kNames[] = {"bitwise_and_cpu", "bitwise_or_cpu", "bitwise_xor_cpu"};
  Binary op = binary_operands(c);
  if (is_floating(op.common)) not_implemented(kNames[Op], op.common);
  return {elementwise({op.a, op.b}, op.common, op.common, nullptr,
                      [](const int64_t* v, const double*) -> int64_t {
                        if (Op == 0) return v[0] & v[1];
                        if (Op == 1) return v[0] | v[1];
                        return v[0] ^ v[1];
                      })};
}

// The shifts: integer dtypes only. A shift by a negative amount or by the width or more gives 0
// (left) or the sign fill (right), as PyTorch's loops define it.
template <bool Left> Tensors k_shift(const KernelCall& c) {
  Binary op = binary_operands(c);
  if (!is_integral(op.common)) not_implemented(Left ? "lshift_cpu" : "rshift_cpu", op.common);
  const bool u8 = op.common == DType::U8;
  double extra[2] = {double(dtype_size(op.common) * 8), double(u8)};
  return {elementwise(
      {op.a, op.b}, op.common, op.common, nullptr,
      [](const int64_t* v, const double* e) -> int64_t {
        const int64_t bits = int64_t(e[0]);
        const bool is_unsigned = e[1] != 0;
        const int64_t b = v[1];
        const bool negative = is_unsigned ? int8_t(b) < 0 : b < 0;
        if (Left) {
          if (negative || b >= bits) return 0;
          return int64_t(uint64_t(v[0]) << b);
        }
        const int64_t max_shift = bits - (is_unsigned ? 0 : 1);
        if (negative || b >= max_shift) return max_shift >= 64 ? 0 : v[0] >> max_shift;
        return v[0] >> b;
      },
      extra)};
}

Tensors k_bitwise_not(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (is_floating(x.dtype())) not_implemented("bitwise_not_cpu", x.dtype());
  if (x.dtype() == DType::Bool)
    return {elementwise({x}, DType::Bool, DType::Bool, nullptr,
                        [](const int64_t* v, const double*) { return int64_t(v[0] == 0); })};
  return {elementwise({x}, x.dtype(), x.dtype(), nullptr,
                      [](const int64_t* v, const double*) { return ~v[0]; })};
}

template <bool Xor> Tensors k_logical_or_xor(const KernelCall& c) {
  return {elementwise(
      {c.tensor("self"), c.tensor("other")}, DType::F64, DType::Bool,
      [](const double* v, const double*) {
        return Xor ? double((v[0] != 0) != (v[1] != 0)) : double(v[0] != 0 || v[1] != 0);
      },
      nullptr)};
}
// End of the issue-18 op families.

// ---- Issue 18, unary math and special functions ----

#define UNARY_FLOAT(fn, KIND, expr)                                                                \
  std::vector<Tensor> k_##fn(const KernelCall& c) {                                                \
    return {unary(                                                                                 \
        c, c.tensor("self"), UnaryKind::KIND,                                                      \
        [](const double* v, const double*) {                                                       \
          double x = v[0];                                                                         \
          return (expr);                                                                           \
        },                                                                                         \
        nullptr, #fn)};                                                                            \
  }
UNARY_FLOAT(tan, Promote, std::tan(x))
UNARY_FLOAT(asin, Promote, std::asin(x))
UNARY_FLOAT(acos, Promote, std::acos(x))
UNARY_FLOAT(atan, Promote, std::atan(x))
UNARY_FLOAT(sinh, Promote, std::sinh(x))
UNARY_FLOAT(cosh, Promote, std::cosh(x))
UNARY_FLOAT(asinh, Promote, std::asinh(x))
UNARY_FLOAT(acosh, Promote, std::acosh(x))
UNARY_FLOAT(atanh, Promote, std::atanh(x))
UNARY_FLOAT(log2, Promote, std::log2(x))
UNARY_FLOAT(log10, Promote, std::log10(x))
UNARY_FLOAT(log1p, Promote, std::log1p(x))
UNARY_FLOAT(expm1, Promote, std::expm1(x))
UNARY_FLOAT(exp2, Promote, std::exp2(x))
#undef UNARY_FLOAT

// floor, ceil, round (half to even), trunc: integers come back unchanged; bool has no loop.
template <int Op> Tensors k_rounding(const KernelCall& c) {
  static const char* const kNames[] = {"floor_cpu", "ceil_cpu", "round_cpu", "trunc_cpu"};
  const Tensor& x = c.tensor("self");
  if (x.dtype() == DType::Bool) not_implemented(kNames[Op], x.dtype());
  return {unary(
      c, x, UnaryKind::Keep,
      [](const double* v, const double*) {
        switch (Op) {
        case 0:
          return std::floor(v[0]);
        case 1:
          return std::ceil(v[0]);
        case 2:
          return std::nearbyint(v[0]);
        default:
          return std::trunc(v[0]);
        }
      },
      [](const int64_t* v, const double*) { return v[0]; }, kNames[Op])};
}

// round.decimals: PyTorch scales by 10^|decimals| in the op's math type, rounds half to even,
// and scales back (dividing for decimals > 0).
Tensors k_round_decimals(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const int64_t d = c.arg("decimals").i;
  if (x.dtype() == DType::Bool || (!is_floating(x.dtype()) && d != 0))
    not_implemented("round_cpu", x.dtype());
  if (!is_floating(x.dtype())) return {x.clone()};
  DType dt = c.result_dtype(x.dtype());
  double extra[3] = {std::pow(10.0, double(d < 0 ? -d : d)), double(d < 0),
                     double(dt == DType::F64)};
  return {elementwise(
      {x}, dt, dt,
      [](const double* v, const double* e) {
        if (e[2] != 0) {
          double t = e[0];
          return e[1] != 0 ? std::nearbyint(v[0] / t) * t : std::nearbyint(v[0] * t) / t;
        }
        float t = float(e[0]), a = float(v[0]);
        return double(e[1] != 0 ? std::nearbyint(a / t) * t : std::nearbyint(a * t) / t);
      },
      nullptr, extra)};
}

Tensors k_isnan(const KernelCall& c) {
  return {elementwise(
      {c.tensor("self")}, DType::F64, DType::Bool,
      [](const double* v, const double*) { return double(std::isnan(v[0])); }, nullptr)};
}
Tensors k_isinf(const KernelCall& c) {
  return {elementwise(
      {c.tensor("self")}, DType::F64, DType::Bool,
      [](const double* v, const double*) { return double(std::isinf(v[0])); }, nullptr)};
}

Tensors k_atan2(const KernelCall& c) {
  Binary op = binary_operands(c);
  DType dt = is_floating(op.common) ? op.common : c.default_float();
  return {elementwise(
      {op.a, op.b}, dt, dt, [](const double* v, const double*) { return std::atan2(v[0], v[1]); },
      nullptr)};
}

// pow.Scalar(Scalar self, Tensor exponent).
Tensors k_pow_scalar(const KernelCall& c) {
  const Tensor& e = c.tensor("exponent");
  const Arg& s = c.arg("self");
  DType dt = result_type({e}, {s}, c);
  Tensor base = filled(dt, {}, s);
  return {elementwise(
      {base, e}, dt, dt, [](const double* v, const double*) { return std::pow(v[0], v[1]); },
      [](const int64_t* v, const double*) { return int_pow(v[0], v[1]); })};
}

// clamp.Tensor: min(max(x, lo), hi); a NaN bound gives NaN, as PyTorch's loop does.
Tensors k_clamp_tensor(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& lo = c.arg("min");
  const Arg& hi = c.arg("max");
  if (lo.is_none() && hi.is_none())
    fail("torch.clamp: At least one of 'min' or 'max' must not be None");
  Tensors ins = {x};
  if (!lo.is_none()) ins.push_back(c.tensor("min"));
  if (!hi.is_none()) ins.push_back(c.tensor("max"));
  DType dt = result_type(ins, {}, c);
  if (dt == DType::Bool) not_implemented("clamp_cpu", dt);
  // Missing bounds become -inf/+inf (floats) or the int64 extremes (integers), never binding.
  const bool fl = is_floating(dt);
  auto bound = [&](const Arg& a, const char* name, bool upper) {
    if (!a.is_none()) return c.tensor(name);
    Tensor t = Tensor::empty(fl ? DType::F64 : DType::I64, {});
    if (fl)
      t.store(0, upper ? INFINITY : -INFINITY);
    else
      t.store_int(0, upper ? std::numeric_limits<int64_t>::max()
                           : std::numeric_limits<int64_t>::min());
    return t;
  };
  Tensor tl = bound(lo, "min", false), th = bound(hi, "max", true);
  DType compute = fl ? dt : DType::I64;
  return {elementwise(
      {x, tl, th}, compute, dt,
      [](const double* v, const double*) {
        if (std::isnan(v[1]) || std::isnan(v[2])) return double(NAN);
        if (std::isnan(v[0])) return v[0];
        return std::min(std::max(v[0], v[1]), v[2]);
      },
      [](const int64_t* v, const double*) { return std::min(std::max(v[0], v[1]), v[2]); })};
}
// End of the issue-18 unary math.

// ---- In-place ops: compute out of place, then write into self ----

Tensors k_relu_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_relu(c)[0]);
}
Tensors k_silu_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_silu(c)[0]);
}
Tensors k_hardswish_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_hardswish(c)[0]);
}
Tensors k_hardtanh_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_hardtanh(c)[0]);
}
Tensors k_leaky_relu_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_leaky_relu(c)[0]);
}
Tensors k_elu_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_elu(c)[0]);
}
Tensors k_dropout_(const KernelCall& c) {
  double p = c.arg("p").f;
  if (p < 0 || p > 1)
    fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (c.arg("train").b && p != 0)
    fail("dropout in training mode is not supported by the reference interpreter");
  return {c.tensor("self")};
}
Tensors k_detach_(const KernelCall& c) {
  return {c.tensor("self")};
}
Tensors k_mish_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_mish(c)[0]);
}
Tensors k_add_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_add(c)[0]);
}

// atan2.out: the result written into out (same sizes and dtype, as the meta function checks).
Tensors k_atan2_out(const KernelCall& c) {
  const Tensor& out = c.tensor("out");
  Tensor r = k_atan2(c)[0];
  if (r.sizes() != out.sizes())
    fail("out has shape " + shape_str(out.sizes()) + " but the result has " + shape_str(r.sizes()));
  out.copy_from(r);
  return {out};
}

Tensors k_zero_(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  self.copy_from(filled(self.dtype(), {}, Arg::of_int(0)));
  return {self};
}

Tensors k_fill_(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  const Arg& v = c.arg("value");
  if (v.kind == Arg::Kind::Tensor) {
    const Tensor& t = c.tensor("value");
    if (t.dim() != 0)
      fail("fill_ only supports 0-dimension value tensor but got tensor with " +
           std::to_string(t.dim()) + " dimensions");
    self.copy_from(t);
  } else {
    self.copy_from(filled(self.dtype(), {}, v));
  }
  return {self};
}

// ---- Issue 18: the math family (binary float functions, tests, conversions) ----

// The common dtype of self and other, refused as PyTorch's dispatch does when it is not
// floating (`kernel` names PyTorch's loop); with `promote`, integers compute in the default
// float dtype instead (TensorIterator's float ops: copysign, xlogy, ...).
DType float_common(const KernelCall& c, const Binary& op, const char* kernel, bool promote) {
  if (is_floating(op.common)) return op.common;
  if (promote) return c.result_dtype(c.default_float());
  not_implemented(kernel, op.common);
}

Tensor float_binary(const KernelCall& c, const char* kernel, bool promote, FloatFn f,
                    const char* other = "other", const double* extra = nullptr) {
  Binary op = binary_operands(c, other);
  DType dt = float_common(c, op, kernel, promote);
  return elementwise({op.a, op.b}, dt, dt, f, nullptr, extra);
}

#define FLOAT_BINARY(NAME, KERNEL, PROMOTE, EXPR)                                                  \
  Tensors k_##NAME(const KernelCall& c) {                                                          \
    return {float_binary(c, KERNEL, PROMOTE, [](const double* v, const double*) {                  \
      const double a = v[0], b = v[1];                                                             \
      return (EXPR);                                                                               \
    })};                                                                                           \
  }
FLOAT_BINARY(copysign, "copysign_cpu", true, std::copysign(a, b))
FLOAT_BINARY(hypot, "hypot_cpu", false, std::hypot(a, b))
FLOAT_BINARY(ldexp, "ldexp", true, a* std::exp2(b))
FLOAT_BINARY(logaddexp, "logaddexp_cpu", false,
             std::isinf(a) && a == b ? a : std::max(a, b) + std::log1p(std::exp(-std::fabs(a - b))))
FLOAT_BINARY(logaddexp2, "logaddexp2_cpu", false,
             std::isinf(a) && a == b
                 ? a
                 : std::max(a, b) + std::log1p(std::exp2(-std::fabs(a - b))) / M_LN2)
FLOAT_BINARY(xlogy, "xlogy_cpu", true, std::isnan(b) ? b : (a == 0 ? 0.0 : a * std::log(b)))
FLOAT_BINARY(xlog1py, "xlog1py_cpu", true, std::isnan(b) ? b : (a == 0 ? 0.0 : a * std::log1p(b)))
#undef FLOAT_BINARY

// fmax / fmin: the other operand where one is NaN; integers compare as integers.
template <bool Max> Tensors k_fextremum(const KernelCall& c) {
  Binary op = binary_operands(c);
  if (op.common == DType::Bool) not_implemented(Max ? "fmax_cpu" : "fmin_cpu", op.common);
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) {
        return Max ? std::fmax(v[0], v[1]) : std::fmin(v[0], v[1]);
      },
      [](const int64_t* v, const double*) {
        return Max ? std::max(v[0], v[1]) : std::min(v[0], v[1]);
      })};
}

// gcd / lcm of integers: non-negative, lcm 0 when either is 0.
int64_t gcd_of(int64_t a, int64_t b) {
  a = a < 0 ? wrap_sub(0, a) : a;
  b = b < 0 ? wrap_sub(0, b) : b;
  while (b != 0) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}
template <bool Lcm> Tensors k_gcd_lcm(const KernelCall& c) {
  Binary op = binary_operands(c);
  if (!is_integral(op.common) || op.common == DType::Bool)
    not_implemented(Lcm ? "lcm_cpu" : "gcd_cpu", op.common);
  return {elementwise({op.a, op.b}, op.common, op.common, nullptr,
                      [](const int64_t* v, const double*) -> int64_t {
                        int64_t g = gcd_of(v[0], v[1]);
                        if (!Lcm) return g;
                        if (g == 0) return 0;
                        int64_t r = wrap_mul(v[0] / g, v[1]);
                        return r < 0 ? wrap_sub(0, r) : r;
                      })};
}

Tensors k_nextafter(const KernelCall& c) {
  Binary op = binary_operands(c);
  if (!is_floating(op.common)) not_implemented("nextafter_cpu", op.common);
  const bool f64 = op.common == DType::F64;
  if (!f64 && op.common != DType::F32) not_implemented("nextafter_cpu", op.common);
  const double extra[1] = {double(f64)};
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double* e) {
        return e[0] != 0 ? special::next_toward(v[0], v[1], 52, -1074, DBL_MAX)
                         : special::next_toward(v[0], v[1], 23, -149, FLT_MAX);
      },
      nullptr, extra)};
}

// heaviside(x, values): values where x == 0, else x > 0 (NaN gives 0, as PyTorch's loop).
Tensors k_heaviside(const KernelCall& c) {
  Binary op = binary_operands(c, "values");
  if (op.a.dtype() != op.b.dtype())
    fail("heaviside is not yet implemented for tensors with different dtypes");
  if (op.common == DType::Bool) not_implemented("heaviside_cpu", op.common);
  return {elementwise(
      {op.a, op.b}, op.common, op.common,
      [](const double* v, const double*) { return v[0] == 0 ? v[1] : double(v[0] > 0); },
      [](const int64_t* v, const double*) { return v[0] == 0 ? v[1] : int64_t(v[0] > 0); })};
}

// isclose: |x - y| <= atol + rtol |y| for finite values, equality otherwise, NaNs equal when
// equal_nan.
Tensors k_isclose(const KernelCall& c) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("other");
  if (a.dtype() != b.dtype())
    fail(std::string(
             "isclose(): expected self and other to have the same dtype, but got self.dtype = ") +
         dname(a.dtype()) + " and other.dtype = " + dname(b.dtype()));
  const double extra[3] = {c.arg("rtol").f, c.arg("atol").f, double(c.arg("equal_nan").b)};
  return {elementwise(
      {a, b}, DType::F64, DType::Bool,
      [](const double* v, const double* e) {
        const double x = v[0], y = v[1];
        if (x == y) return 1.0;
        if (std::isnan(x) || std::isnan(y))
          return double(e[2] != 0 && std::isnan(x) && std::isnan(y));
        if (std::isinf(x) || std::isinf(y)) return 0.0;
        return double(std::fabs(x - y) <= e[1] + std::fabs(e[0] * y));
      },
      nullptr, extra)};
}

template <int K> Tensors k_float_test(const KernelCall& c) {
  return {elementwise(
      {c.tensor("self")}, DType::F64, DType::Bool,
      [](const double* v, const double*) {
        const double x = v[0];
        return double(K == 0   ? std::isfinite(x)
                      : K == 1 ? x == INFINITY
                      : K == 2 ? x == -INFINITY
                      : K == 3 ? std::signbit(x)
                               : true);
      },
      nullptr)};
}

// The largest finite value of a floating dtype (nan_to_num's default for +inf).
double float_max(DType t) {
  switch (t) {
  case DType::F16:
    return 65504.0;
  case DType::BF16:
    return 3.38953138925153547590e38;
  case DType::F64:
    return DBL_MAX;
  default:
    return FLT_MAX;
  }
}

Tensors k_nan_to_num(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (!is_floating(x.dtype())) return {x.clone()};
  auto opt = [&](const char* name, double dflt) {
    const Arg& a = c.arg(name);
    return a.is_none() ? dflt : a.scalar();
  };
  const double mx = float_max(x.dtype());
  const double extra[3] = {opt("nan", 0.0), opt("posinf", mx), opt("neginf", -mx)};
  return {elementwise(
      {x}, x.dtype(), x.dtype(),
      [](const double* v, const double* e) {
        const double y = v[0];
        return std::isnan(y) ? e[0] : y == INFINITY ? e[1] : y == -INFINITY ? e[2] : y;
      },
      nullptr, extra)};
}

// float_power: both operands as float64.
Tensors k_float_power(const KernelCall& c) {
  const Arg& s = c.arg("self");
  const Arg& e = c.arg("exponent");
  Tensor a = s.kind == Arg::Kind::Tensor ? c.tensor("self") : filled(DType::F64, {}, s);
  Tensor b = e.kind == Arg::Kind::Tensor ? c.tensor("exponent") : filled(DType::F64, {}, e);
  return {elementwise(
      {a, b}, DType::F64, DType::F64,
      [](const double* v, const double*) { return std::pow(v[0], v[1]); }, nullptr)};
}

#define UNARY_MATH(NAME, KIND, EXPR)                                                               \
  Tensors k_##NAME(const KernelCall& c) {                                                          \
    return {unary(                                                                                 \
        c, c.tensor("self"), UnaryKind::KIND,                                                      \
        [](const double* v, const double*) {                                                       \
          const double x = v[0];                                                                   \
          return (EXPR);                                                                           \
        },                                                                                         \
        nullptr, #NAME)};                                                                          \
  }
UNARY_MATH(erfc, Promote, std::erfc(x))
UNARY_MATH(deg2rad, Promote, x*(M_PI / 180.0))
UNARY_MATH(rad2deg, Promote, x * (180.0 / M_PI))
UNARY_MATH(sinc, Promote, x == 0 ? 1.0 : std::sin(M_PI * x) / (M_PI * x))
UNARY_MATH(angle, Promote, std::isnan(x) ? x : (x < 0 ? M_PI : 0.0))
UNARY_MATH(entr, Promote, std::isnan(x) ? x : x > 0 ? -x * std::log(x) : x == 0 ? 0.0 : -INFINITY)
UNARY_MATH(frac, FloatOnly, x - std::trunc(x))
#undef UNARY_MATH

Tensors k_conj_physical(const KernelCall& c) {
  return {c.tensor("self").clone()};
}

Tensors k_signbit(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (is_floating(x.dtype())) return k_float_test<3>(c);
  return {elementwise({x}, DType::I64, DType::Bool, nullptr,
                      [](const int64_t* v, const double*) { return int64_t(v[0] < 0); })};
}
// isfinite / isposinf / isneginf: integers are finite and never infinite.
template <int K> Tensors k_int_aware_test(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (is_floating(x.dtype())) return k_float_test<K>(c);
  return {elementwise({x}, DType::I64, DType::Bool, nullptr,
                      [](const int64_t*, const double*) { return int64_t(K == 0 || K == 4); })};
}
// End of the math family.

const OpTable<KernelFn>::Row kPointwiseKernels[] = {
    // The math family (issue 18).
    {OpId::angle, k_angle},
    {OpId::conj_physical, k_conj_physical},
    {OpId::copysign_Tensor, k_copysign},
    {OpId::deg2rad, k_deg2rad},
    {OpId::erfc, k_erfc},
    {OpId::float_power_Scalar, k_float_power},
    {OpId::float_power_Tensor_Scalar, k_float_power},
    {OpId::float_power_Tensor_Tensor, k_float_power},
    {OpId::fmax, k_fextremum<true>},
    {OpId::fmin, k_fextremum<false>},
    {OpId::frac, k_frac},
    {OpId::gcd, k_gcd_lcm<false>},
    {OpId::heaviside, k_heaviside},
    {OpId::hypot, k_hypot},
    {OpId::isclose, k_isclose},
    {OpId::isfinite, k_int_aware_test<0>},
    {OpId::isneginf, k_int_aware_test<2>},
    {OpId::isposinf, k_int_aware_test<1>},
    {OpId::isreal, k_int_aware_test<4>},
    {OpId::lcm, k_gcd_lcm<true>},
    {OpId::ldexp_Tensor, k_ldexp},
    {OpId::logaddexp, k_logaddexp},
    {OpId::logaddexp2, k_logaddexp2},
    {OpId::nan_to_num, k_nan_to_num},
    {OpId::nextafter, k_nextafter},
    {OpId::rad2deg, k_rad2deg},
    {OpId::sgn, k_sign},
    {OpId::signbit, k_signbit},
    {OpId::sinc, k_sinc},
    {OpId::special_entr, k_entr},
    {OpId::special_xlog1py, k_xlog1py},
    {OpId::xlogy_Tensor, k_xlogy},
    {OpId::abs, k_abs},
    {OpId::add_Scalar, k_add},
    {OpId::add_Tensor, k_add},
    {OpId::add__Tensor, k_add_},
    {OpId::clamp, k_clamp},
    {OpId::cos, k_cos},
    {OpId::div_Scalar, k_div},
    {OpId::div_Tensor, k_div},
    {OpId::eq_Scalar, k_cmp<CmpKind::Eq>},
    {OpId::eq_Tensor, k_cmp<CmpKind::Eq>},
    {OpId::erf, k_erf},
    {OpId::exp, k_exp},
    {OpId::fill__Scalar, k_fill_},
    {OpId::fill__Tensor, k_fill_},
    {OpId::fmod_Scalar, k_fmod},
    {OpId::bitwise_and_Scalar, k_bitwise<0>},
    {OpId::bitwise_and_Tensor, k_bitwise<0>},
    {OpId::bitwise_left_shift_Tensor, k_shift<true>},
    {OpId::bitwise_left_shift_Tensor_Scalar, k_shift<true>},
    {OpId::bitwise_not, k_bitwise_not},
    {OpId::bitwise_or_Scalar, k_bitwise<1>},
    {OpId::bitwise_or_Tensor, k_bitwise<1>},
    {OpId::bitwise_right_shift_Tensor, k_shift<false>},
    {OpId::bitwise_right_shift_Tensor_Scalar, k_shift<false>},
    {OpId::bitwise_xor_Scalar, k_bitwise<2>},
    {OpId::bitwise_xor_Tensor, k_bitwise<2>},
    {OpId::div_Scalar_mode, k_div_mode},
    {OpId::div_Tensor_mode, k_div_mode},
    {OpId::floor_divide, k_floor_divide},
    {OpId::floor_divide_Scalar, k_floor_divide},
    {OpId::fmod_Tensor, k_fmod_tensor},
    {OpId::logical_or, k_logical_or_xor<false>},
    {OpId::logical_xor, k_logical_or_xor<true>},
    {OpId::remainder_Scalar, k_remainder},
    {OpId::remainder_Tensor, k_remainder},
    {OpId::rsub_Scalar, k_rsub},
    {OpId::rsub_Tensor, k_rsub},
    {OpId::sub_Scalar, k_sub},
    {OpId::acos, k_acos},
    {OpId::acosh, k_acosh},
    {OpId::asin, k_asin},
    {OpId::asinh, k_asinh},
    {OpId::atan, k_atan},
    {OpId::atanh, k_atanh},
    {OpId::cosh, k_cosh},
    {OpId::exp2, k_exp2},
    {OpId::expm1, k_expm1},
    {OpId::log10, k_log10},
    {OpId::log1p, k_log1p},
    {OpId::log2, k_log2},
    {OpId::sinh, k_sinh},
    {OpId::tan, k_tan},
    {OpId::atan2, k_atan2},
    {OpId::atan2_out, k_atan2_out},
    {OpId::ceil, k_rounding<1>},
    {OpId::clamp_Tensor, k_clamp_tensor},
    {OpId::floor, k_rounding<0>},
    {OpId::isinf, k_isinf},
    {OpId::isnan, k_isnan},
    {OpId::pow_Scalar, k_pow_scalar},
    {OpId::round, k_rounding<2>},
    {OpId::round_decimals, k_round_decimals},
    {OpId::trunc, k_rounding<3>},
    {OpId::ge_Scalar, k_cmp<CmpKind::Ge>},
    {OpId::ge_Tensor, k_cmp<CmpKind::Ge>},
    {OpId::gelu, k_gelu},
    {OpId::gt_Scalar, k_cmp<CmpKind::Gt>},
    {OpId::gt_Tensor, k_cmp<CmpKind::Gt>},
    {OpId::hardsigmoid, k_hardsigmoid},
    {OpId::hardswish, k_hardswish},
    {OpId::hardswish_, k_hardswish_},
    {OpId::le_Scalar, k_cmp<CmpKind::Le>},
    {OpId::le_Tensor, k_cmp<CmpKind::Le>},
    {OpId::log, k_log},
    {OpId::logical_and, k_logical_and},
    {OpId::logical_not, k_logical_not},
    {OpId::lt_Scalar, k_cmp<CmpKind::Lt>},
    {OpId::lt_Tensor, k_cmp<CmpKind::Lt>},
    {OpId::masked_fill_Scalar, k_masked_fill},
    {OpId::masked_fill_Tensor, k_masked_fill_tensor},
    {OpId::maximum, k_maximum},
    {OpId::min_other, k_minimum},
    {OpId::minimum, k_minimum},
    {OpId::mul_Scalar, k_mul},
    {OpId::mul_Tensor, k_mul},
    {OpId::ne_Scalar, k_cmp<CmpKind::Ne>},
    {OpId::ne_Tensor, k_cmp<CmpKind::Ne>},
    {OpId::neg, k_neg},
    {OpId::pow_Tensor_Scalar, k_pow},
    {OpId::pow_Tensor_Tensor, k_pow},
    {OpId::reciprocal, k_reciprocal},
    {OpId::relu, k_relu},
    {OpId::relu_, k_relu_},
    {OpId::zero_, k_zero_},
    {OpId::rsqrt, k_rsqrt},
    {OpId::sigmoid, k_sigmoid},
    {OpId::sign, k_sign},
    {OpId::silu, k_silu},
    {OpId::silu_, k_silu_},
    {OpId::sin, k_sin},
    {OpId::sqrt, k_sqrt},
    {OpId::sub_Tensor, k_sub},
    {OpId::tanh, k_tanh},
    {OpId::where_ScalarOther, k_where},
    {OpId::where_self, k_where},
    // Activations and single-bound clamps.
    {OpId::_prelu_kernel, k_prelu},
    {OpId::clamp_max, k_clamp_one<false>},
    {OpId::clamp_min, k_clamp_one<true>},
    {OpId::elu, k_elu},
    {OpId::celu, k_celu},
    {OpId::selu, k_selu},
    {OpId::log_sigmoid, k_log_sigmoid},
    {OpId::logit, k_logit},
    {OpId::hardshrink, k_hardshrink},
    {OpId::softshrink, k_softshrink},
    {OpId::relu6, k_relu6},
    {OpId::threshold, k_threshold},
    {OpId::elu_, k_elu_},
    {OpId::dropout_, k_dropout_},
    {OpId::detach_, k_detach_},
    {OpId::fill_Scalar, k_fill_scalar},
    {OpId::hardtanh, k_hardtanh},
    {OpId::hardtanh_, k_hardtanh_},
    {OpId::leaky_relu, k_leaky_relu},
    {OpId::leaky_relu_, k_leaky_relu_},
    {OpId::mish, k_mish},
    {OpId::mish_, k_mish_},
    {OpId::prelu, k_prelu},
    {OpId::softplus, k_softplus},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> pointwise_kernels() {
  return kPointwiseKernels;
}

} // namespace fxc::kernel_detail
