// Reference kernels: one plain host implementation per op, in one table keyed by target.
#include "runtime/kernels.h"

#include "frontend/schema.h"
#include "frontend/tensor_rules.h"
#include "runtime/plugin.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>

// Hot loops are optimised even in debug builds (GCC only; other compilers use the build's level).
#if defined(__GNUC__) && !defined(__clang__)
#define FXC_OPTIMIZED [[gnu::optimize("O3")]]
#else
#define FXC_OPTIMIZED
#endif

namespace fxc {

const Tensor& KernelCall::tensor(std::string_view name) const {
  int i = node.schema->index_of(name);
  assert(i >= 0 && size_t(i) < tensors.size() && "no such tensor argument");
  return tensors[size_t(i)];
}

const std::vector<Tensor>& KernelCall::list(std::string_view name) const {
  int i = node.schema->index_of(name);
  assert(i >= 0 && size_t(i) < lists.size() && "no such tensor list argument");
  return lists[size_t(i)];
}

namespace {

using Shape = std::vector<int64_t>;
using Tensors = std::vector<Tensor>;

[[noreturn]] void fail(const std::string& msg) {
  throw TensorError(msg);
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string dname(DType t) {
  return std::string(dtype_name(t));
}

// PyTorch's dimension wrapping and broadcasting (frontend/tensor_rules.h), failing as a kernel.
int64_t wrap(int64_t d, int64_t rank) {
  try {
    return wrap_dim(d, rank);
  } catch (const std::out_of_range& e) {
    fail(e.what());
  }
}

Shape broadcast(const Shape& a, const Shape& b) {
  try {
    return broadcast_shapes(a, b);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
}

// A stride-0 view of t with the broadcast shape `shape` (t's shape must broadcast to it).
Tensor expand_to(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  size_t n = shape.size(), k = size_t(t.dim());
  if (k > n) fail("cannot broadcast " + shape_str(t.sizes()) + " to " + shape_str(shape));
  Shape st(n, 0);
  for (size_t i = 0; i < k; ++i) {
    size_t o = n - k + i;
    if (t.size(int64_t(i)) == shape[o])
      st[o] = t.stride(int64_t(i));
    else if (t.size(int64_t(i)) != 1)
      fail("cannot broadcast " + shape_str(t.sizes()) + " to " + shape_str(shape));
  }
  TensorMeta m = t.meta();
  m.sizes = shape;
  m.strides = st;
  return Tensor(t.storage(), m);
}

Tensor view_of(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  TensorMeta m = t.meta();
  m.sizes = std::move(sizes);
  m.strides = std::move(strides);
  m.storage_offset = offset;
  return Tensor(t.storage(), m);
}

// The hot loops below (offsets, gathering values, storing results) are compiled with
// optimisation even in debug builds: they dominate the interpreter's run time. They only move
// and convert values, so optimisation cannot change results.

// Element offsets (relative to raw_data) of every index over the given dims, row-major.
FXC_OPTIMIZED std::vector<int64_t> dim_offsets(const Shape& sizes, const Shape& strides) {
  int64_t n = checked_numel(sizes);
  std::vector<int64_t> out(size_t(n), 0);
  if (n == 0) return out;
  size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[size_t(i)] = off;
    for (size_t d = nd; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<int64_t> all_offsets(const Tensor& t) {
  return dim_offsets(t.sizes(), t.strides());
}

template <class T>
FXC_OPTIMIZED void gather_as(const std::byte* base, const std::vector<int64_t>& off, double* dst) {
  for (size_t i = 0; i < off.size(); ++i) {
    T v;
    std::memcpy(&v, base + off[i] * int64_t(sizeof(T)), sizeof(T));
    dst[i] = double(v);
  }
}

// Values of t in row-major order, as double.
std::vector<double> values(const Tensor& t) {
  std::vector<int64_t> off = all_offsets(t);
  std::vector<double> v(off.size());
  const std::byte* base = off.empty() ? nullptr : t.raw_data();
  switch (t.dtype()) {
  case DType::F32:
    gather_as<float>(base, off, v.data());
    break;
  case DType::F64:
    gather_as<double>(base, off, v.data());
    break;
  case DType::I64:
    gather_as<int64_t>(base, off, v.data());
    break;
  case DType::I32:
    gather_as<int32_t>(base, off, v.data());
    break;
  default:
    for (size_t i = 0; i < off.size(); ++i) v[i] = t.load(off[i]);
  }
  return v;
}

template <class T> FXC_OPTIMIZED void scatter_as(std::byte* base, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    T x = T(v[i]);
    std::memcpy(base + i * sizeof(T), &x, sizeof(T));
  }
}

// A contiguous tensor of `dtype` from row-major double values (rounded on store).
Tensor make(DType dtype, Shape sizes, const std::vector<double>& v) {
  Tensor t = Tensor::empty(dtype, std::move(sizes));
  assert(int64_t(v.size()) == t.numel() && "value count differs from the shape");
  if (v.empty()) return t;
  switch (dtype) {
  case DType::F32:
    scatter_as<float>(t.raw_data(), v);
    break;
  case DType::F64:
    scatter_as<double>(t.raw_data(), v);
    break;
  default:
    for (size_t i = 0; i < v.size(); ++i) t.store(int64_t(i), v[i]);
  }
  return t;
}

// ---- Type promotion (PyTorch's result_type: dim tensors > 0-dim tensors > Python scalars) ----

DType result_type(const Tensors& ts, const std::vector<Arg>& scalars, const KernelCall& c) {
  ResultType r(c.default_float());
  for (const Tensor& t : ts) r.add_tensor(t.dtype(), t.dim());
  for (const Arg& a : scalars) r.add_number(a);
  return c.fdt(r.result());
}


int64_t cast_int(int64_t v, DType t);

// ---- Elementwise engine ----

using FloatFn = double (*)(const double*, const double*);
using IntFn = int64_t (*)(const int64_t*, const double*);

// out[i] = f(ins[0][i], ins[1][i], ...) over the broadcast shape. Inputs are converted to
// `compute` (rounded as that dtype would hold them); floating compute runs `ff` in double,
// integral/bool compute runs `fi` in int64. `extra` passes op constants to the functions.
Tensor elementwise(const Tensors& ins, DType compute, DType out_dtype, FloatFn ff, IntFn fi,
                   const double* extra = nullptr) {
  assert(ins.size() <= 4 && "elementwise supports at most 4 inputs");
  Shape shape;
  for (const Tensor& t : ins) shape = broadcast(shape, t.sizes());
  size_t k = ins.size();
  Tensors ex(k);
  for (size_t j = 0; j < k; ++j) ex[j] = expand_to(ins[j], shape);
  int64_t n = checked_numel(shape);
  if (is_floating(compute) || !fi) {
    std::vector<std::vector<double>> in(k);
    for (size_t j = 0; j < k; ++j) {
      in[j] = values(ex[j]);
      if (ex[j].dtype() != compute)
        for (double& v : in[j]) v = round_to_dtype(v, compute);
    }
    std::vector<double> out(static_cast<size_t>(n));
    double dv[4];
    for (size_t i = 0; i < out.size(); ++i) {
      for (size_t j = 0; j < k; ++j) dv[j] = in[j][i];
      out[i] = ff(dv, extra);
    }
    return make(out_dtype, shape, out);
  }
  Tensor out = Tensor::empty(out_dtype, shape);
  std::vector<std::vector<int64_t>> off(k);
  for (size_t j = 0; j < k; ++j) off[j] = all_offsets(ex[j]);
  int64_t iv[4];
  for (int64_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < k; ++j) {
      int64_t v = ex[j].load_int(off[j][size_t(i)]);
      iv[j] = ex[j].dtype() == compute ? v : cast_int(v, compute);
    }
    out.store_int(i, fi(iv, extra));
  }
  return out;
}

// An int64 as an integral/bool dtype would hold it (C++ conversion: wraps).
int64_t cast_int(int64_t v, DType t) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::U8:
    return uint8_t(v);
  case DType::I8:
    return int8_t(v);
  case DType::I16:
    return int16_t(v);
  case DType::I32:
    return int32_t(v);
  default:
    return v;
  }
}

// Wraparound integer arithmetic (PyTorch integer ops wrap on overflow).
int64_t wrap_add(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) - uint64_t(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}

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
  dt = c.fdt(dt);
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

// A tensor of `size` filled with a Scalar argument (integers exactly); defined with the factories.
Tensor filled(DType dt, const Shape& size, const Arg& value);

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

double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
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

template <int Op> double cmp(const double* v, const double*) {
  switch (Op) {
  case 0:
    return v[0] == v[1];
  case 1:
    return v[0] != v[1];
  case 2:
    return v[0] < v[1];
  case 3:
    return v[0] <= v[1];
  case 4:
    return v[0] > v[1];
  default:
    return v[0] >= v[1];
  }
}
template <int Op> int64_t icmp(const int64_t* v, const double*) {
  switch (Op) {
  case 0:
    return v[0] == v[1];
  case 1:
    return v[0] != v[1];
  case 2:
    return v[0] < v[1];
  case 3:
    return v[0] <= v[1];
  case 4:
    return v[0] > v[1];
  default:
    return v[0] >= v[1];
  }
}

template <int Op> Tensors k_cmp(const KernelCall& c) {
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

Tensors k_clamp(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& lo = c.arg("min");
  const Arg& hi = c.arg("max");
  if (lo.is_none() && hi.is_none())
    fail("torch.clamp: at least one of 'min' or 'max' must not be None");
  DType dt = result_type({x}, {lo, hi}, c);
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
  return {elementwise(
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
      extra)};
}

// ---- Op families of issue 18: integer division and remainders, rsub, bitwise, logical ----

[[noreturn]] void not_implemented(const char* kernel, DType dt) {
  fail(not_implemented_message(kernel, dt));
}

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
  return {elementwise({op.a, op.b}, op.common, op.common, nullptr,
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
                        if (negative || b >= max_shift)
                          return max_shift >= 64 ? 0 : v[0] >> max_shift;
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
  DType dt = c.fdt(x.dtype());
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
      {op.a, op.b}, dt, dt,
      [](const double* v, const double*) { return std::atan2(v[0], v[1]); }, nullptr)};
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

// ---- Issue 18, scans ----

// PyTorch's _log_add_exp_helper(x, y): log(exp(x) + exp(y)), exact for equal infinities, NaN
// propagating.
double log_add_exp(double x, double y) {
  double mn = std::isnan(y) ? y : std::min(x, y);
  double mx = std::isnan(y) ? y : std::max(x, y);
  if (mn != mx || std::isfinite(mn)) return std::log1p(std::exp(mn - mx)) + mx;
  return x;
}

// The scans along `dim`: 0 cumsum, 1 cumprod, 2 logcumsumexp. The input is converted to the
// result dtype first (as PyTorch does with a dtype argument); floats accumulate in double (the
// CPU acc_type), integers in wrapping int64.
template <int Kind> Tensors k_scan(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const int64_t d = wrap(c.arg("dim").i, x.dim());
  DType dt = x.dtype();
  if (Kind == 2) {
    if (!is_floating(dt)) not_implemented("logcumsumexp_out_cpu", dt);
  } else {
    const Arg& dta = c.arg("dtype");
    dt = dta.is_none() ? (is_floating(x.dtype()) ? x.dtype() : DType::I64) : dta.dtype();
  }
  Shape sizes = x.sizes();
  const int64_t len = x.dim() == 0 ? 1 : sizes[size_t(d)];
  int64_t inner = 1;
  for (size_t i = size_t(d) + 1; i < sizes.size(); ++i) inner *= sizes[i];
  const int64_t n = checked_numel(sizes);
  const int64_t outer = len == 0 || inner == 0 ? 0 : n / (len * inner);
  if (is_floating(dt)) {
    std::vector<double> v = values(x);
    for (double& e : v) e = round_to_dtype(e, c.fdt(dt));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double acc = Kind == 0 ? 0.0 : Kind == 1 ? 1.0 : -INFINITY;
        for (int64_t k = 0; k < len; ++k) {
          size_t at = size_t((o * len + k) * inner + i);
          acc = Kind == 0 ? acc + v[at] : Kind == 1 ? acc * v[at] : log_add_exp(v[at], acc);
          v[at] = acc;
        }
      }
    return {make(c.fdt(dt), sizes, v)};
  }
  Tensor out = Tensor::empty(dt, sizes);
  std::vector<int64_t> off = all_offsets(x);
  std::vector<int64_t> v(off.size());
  for (size_t i = 0; i < off.size(); ++i) v[i] = cast_int(x.load_int(off[i]), dt);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t acc = Kind == 0 ? 0 : 1;
      for (int64_t k = 0; k < len; ++k) {
        size_t at = size_t((o * len + k) * inner + i);
        acc = Kind == 0 ? wrap_add(acc, v[at]) : wrap_mul(acc, v[at]);
        out.store_int(int64_t(at), acc);
      }
    }
  return {out};
}
// End of the issue-18 scans.

// ---- Reductions ----

// Which dims a reduction reduces: `dims` empty (or None) means all dims.
std::vector<bool> reduced_dims(const Tensor& t, const Arg& dims) {
  int64_t r = t.dim();
  std::vector<bool> red(size_t(std::max<int64_t>(r, 0)), false);
  std::vector<int64_t> list;
  if (dims.kind == Arg::Kind::Ints)
    list = dims.ints;
  else if (dims.kind == Arg::Kind::Int)
    list = {dims.i};
  if (list.empty()) {
    std::fill(red.begin(), red.end(), true);
    return red;
  }
  std::vector<bool> seen(size_t(std::max<int64_t>(r, 1)), false);
  for (int64_t d : list) {
    int64_t w = wrap(d, r);
    if (seen[size_t(w)])
      fail("dim " + std::to_string(w) + " appears multiple times in the list of dims");
    seen[size_t(w)] = true;
    if (r > 0) red[size_t(w)] = true;
  }
  return red;
}

// A reduction layout: for output element o and reduced element i, the input offset is
// outer[o] + inner[i].
struct ReduceLayout {
  std::vector<int64_t> outer, inner;
  Shape out_shape; // with or without kept dims
};

ReduceLayout reduce_layout(const Shape& sizes, const Shape& strides, const std::vector<bool>& red,
                           bool keepdim) {
  Shape osz, ost, isz, ist, out_shape;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (red[d]) {
      isz.push_back(sizes[d]);
      ist.push_back(strides[d]);
      if (keepdim) out_shape.push_back(1);
    } else {
      osz.push_back(sizes[d]);
      ost.push_back(strides[d]);
      out_shape.push_back(sizes[d]);
    }
  }
  return {dim_offsets(osz, ost), dim_offsets(isz, ist), out_shape};
}

ReduceLayout reduce_layout(const Tensor& t, const std::vector<bool>& red, bool keepdim) {
  return reduce_layout(t.sizes(), t.strides(), red, keepdim);
}

Tensors k_sum(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dt = c.arg("dtype");
  DType out = dt.is_none() ? (is_floating(x.dtype()) ? x.dtype() : DType::I64) : dt.dtype();
  out = c.fdt(out);
  bool has_dim = c.node.schema->index_of("dim") >= 0;
  auto red = reduced_dims(x, has_dim ? c.arg("dim") : Arg::none());
  ReduceLayout L = reduce_layout(x, red, has_dim && c.arg("keepdim").b);
  Tensor o = Tensor::empty(out, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    if (is_floating(out)) {
      double s = 0;
      for (int64_t off : L.inner) s += round_to_dtype(x.load(L.outer[i] + off), out);
      o.store(int64_t(i), s);
    } else {
      int64_t s = 0;
      for (int64_t off : L.inner) s = wrap_add(s, x.load_int(L.outer[i] + off));
      o.store_int(int64_t(i), s);
    }
  }
  return {o};
}

Tensors k_mean(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dt = c.arg("dtype");
  if (dt.is_none() && !is_floating(x.dtype()))
    fail("mean(): could not infer output dtype. Input dtype must be either a floating point or "
         "complex dtype. Got: " +
         dname(x.dtype()));
  DType out = c.fdt(dt.is_none() ? x.dtype() : dt.dtype());
  if (!is_floating(out)) fail("mean(): the output dtype must be floating, got " + dname(out));
  bool has_dim = c.node.schema->index_of("dim") >= 0;
  auto red = reduced_dims(x, has_dim ? c.arg("dim") : Arg::none());
  ReduceLayout L = reduce_layout(x, red, has_dim && c.arg("keepdim").b);
  Tensor o = Tensor::empty(out, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    double s = 0;
    for (int64_t off : L.inner) s += round_to_dtype(x.load(L.outer[i] + off), out);
    o.store(int64_t(i), s / double(L.inner.size()));
  }
  return {o};
}

Tensors k_amax(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  auto red = reduced_dims(x, c.arg("dim"));
  ReduceLayout L = reduce_layout(x, red, c.arg("keepdim").b);
  if (L.inner.empty() && !L.outer.empty())
    fail("amax(): expected reduction dims to have non-zero size");
  Tensor o = Tensor::empty(c.fdt(x.dtype()), L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    if (is_floating(x.dtype())) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t off : L.inner) m = nan_max(m, x.load(L.outer[i] + off));
      o.store(int64_t(i), m);
    } else {
      int64_t m = std::numeric_limits<int64_t>::min();
      for (int64_t off : L.inner) m = std::max(m, x.load_int(L.outer[i] + off));
      o.store_int(int64_t(i), m);
    }
  }
  return {o};
}

Tensors k_any(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  auto red = reduced_dims(x, Arg::of_ints({c.arg("dim").i}));
  ReduceLayout L = reduce_layout(x, red, c.arg("keepdim").b);
  Tensor o = Tensor::empty(x.dtype() == DType::U8 ? DType::U8 : DType::Bool, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    bool any = false;
    for (int64_t off : L.inner) any = any || x.load(L.outer[i] + off) != 0;
    o.store_int(int64_t(i), any);
  }
  return {o};
}

Tensors k_argmax(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dim = c.arg("dim");
  bool keepdim = c.arg("keepdim").b;
  if (x.numel() == 0)
    fail("argmax(): expected reduction dim to be specified for input.numel() == 0");
  ReduceLayout L;
  if (dim.is_none()) {
    std::vector<bool> red(size_t(x.dim()), true);
    L = reduce_layout(x, red, keepdim);
  } else {
    L = reduce_layout(x, reduced_dims(x, Arg::of_ints({dim.i})), keepdim);
    if (L.inner.empty() && !L.outer.empty())
      fail("argmax(): expected reduction dim to have non-zero size");
  }
  Tensor o = Tensor::empty(DType::I64, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    double best = 0;
    int64_t arg = -1;
    for (size_t j = 0; j < L.inner.size(); ++j) {
      double v = x.load(L.outer[i] + L.inner[j]);
      if (arg >= 0 && std::isnan(best)) break; // the first NaN is the maximum
      if (arg < 0 || v > best || std::isnan(v)) {
        best = v;
        arg = int64_t(j);
      }
    }
    o.store_int(int64_t(i), arg);
  }
  return {o};
}

// ---- Softmax and normalisation ----

Tensor softmax_impl(const Tensor& in, int64_t dim, DType out_dtype, bool log) {
  int64_t d = wrap(dim, in.dim());
  std::vector<bool> red(size_t(in.dim()), false);
  if (in.dim() > 0) red[size_t(d)] = true;
  // Offsets into a contiguous tensor of in's shape are row-major linear indices, which index
  // both the gathered input values and the result.
  ReduceLayout O = reduce_layout(in.sizes(), contiguous_strides(in.sizes()), red, true);
  std::vector<double> xv = values(in), yv(xv.size()), row(O.inner.size());
  for (size_t i = 0; i < O.outer.size(); ++i) {
    double mx = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < row.size(); ++j) {
      row[j] = xv[size_t(O.outer[i] + O.inner[j])];
      mx = std::isnan(row[j]) || std::isnan(mx) ? NAN : std::max(mx, row[j]);
    }
    double s = 0;
    for (double v : row) s += std::exp(v - mx);
    for (size_t j = 0; j < row.size(); ++j)
      yv[size_t(O.outer[i] + O.inner[j])] =
          log ? row[j] - mx - std::log(s) : std::exp(row[j] - mx) / s;
  }
  return make(out_dtype, in.sizes(), yv);
}

Tensors softmax_family(const KernelCall& c, bool log) {
  Tensor x = c.tensor("self");
  DType out = x.dtype();
  if (c.node.schema->index_of("half_to_float") >= 0) {
    if (c.arg("half_to_float").b) {
      if (x.dtype() != DType::F16 && x.dtype() != DType::BF16 && !c.float64)
        fail("conversion from " + dname(x.dtype()) + " to f32 is not supported with half_to_float");
      out = DType::F32;
    }
  } else if (!c.arg("dtype").is_none()) {
    out = c.arg("dtype").dtype();
  }
  out = c.fdt(out);
  if (!is_floating(out) || !is_floating(x.dtype()))
    fail(std::string(log ? "log_softmax" : "softmax") + " is not implemented for " +
         dname(x.dtype()) + " tensors");
  // An explicit dtype converts the input first (as PyTorch does); half_to_float only widens.
  if (c.node.schema->index_of("dtype") >= 0 && !c.arg("dtype").is_none()) x = x.to(out);
  return {softmax_impl(x, c.arg("dim").i, out, log)};
}

Tensors k_softmax(const KernelCall& c) {
  return softmax_family(c, false);
}
Tensors k_log_softmax(const KernelCall& c) {
  return softmax_family(c, true);
}

// Checks that the optional affine tensor has `n` elements.
void check_affine(const Tensor& t, int64_t n, const char* what) {
  if (t.defined() && t.numel() != n)
    fail(std::string(what) + " has " + std::to_string(t.numel()) + " elements, expected " +
         std::to_string(n));
}

Tensors layer_norm_impl(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  const Shape& ns = c.arg("normalized_shape").ints;
  const Tensor& w = c.tensor("weight");
  const Tensor& b = c.tensor("bias");
  double eps = c.arg("eps").f;
  int64_t k = int64_t(ns.size()), axis = x.dim() - k;
  bool ok = axis >= 0 && k > 0;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(axis + i) == ns[size_t(i)];
  if (!ok)
    fail("given normalized_shape=" + shape_str(ns) + ", expected input with shape [*, " +
         shape_str(ns).substr(1) + ", but got input of size " + shape_str(x.sizes()));
  int64_t n = checked_numel(ns);
  check_affine(w, n, "weight");
  check_affine(b, n, "bias");
  std::vector<bool> red(size_t(x.dim()), false);
  for (int64_t d = axis; d < x.dim(); ++d) red[size_t(d)] = true;
  ReduceLayout L = reduce_layout(x, red, true);
  DType dt = c.fdt(x.dtype());
  Shape stat_shape = L.out_shape;
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  // The normalised dims are the trailing ones, so row i is xv[i * n, (i + 1) * n).
  std::vector<double> xv = values(x), yv(xv.size()), mv(L.outer.size()), rv(L.outer.size());
  for (size_t i = 0; i < L.outer.size(); ++i) {
    const double* row = xv.data() + i * size_t(n);
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += row[j];
    double mu = s / double(n), var = 0;
    for (int64_t j = 0; j < n; ++j) var += (row[j] - mu) * (row[j] - mu);
    var /= double(n);
    double r = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      double y = (row[j] - mu) * r;
      if (!wv.empty()) y *= wv[size_t(j)];
      if (!bv.empty()) y += bv[size_t(j)];
      yv[i * size_t(n) + size_t(j)] = y;
    }
    mv[i] = mu;
    rv[i] = r;
  }
  return {make(dt, x.sizes(), yv), make(dt, stat_shape, mv), make(dt, stat_shape, rv)};
}

Tensors k_layer_norm(const KernelCall& c) {
  return {layer_norm_impl(c)[0]};
}
Tensors k_native_layer_norm(const KernelCall& c) {
  return layer_norm_impl(c);
}

// Inference batch norm over channel dim 1 with the running statistics.
Tensor batch_norm_eval(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                       const Tensor& rv, double eps, DType dt) {
  if (x.dim() < 2)
    fail("batch_norm expects an input with at least 2 dims, got " + shape_str(x.sizes()));
  if (!rm.defined() || !rv.defined())
    fail("batch_norm in evaluation mode needs running_mean and running_var");
  int64_t C = x.size(1);
  check_affine(w, C, "weight");
  check_affine(b, C, "bias");
  check_affine(rm, C, "running_mean");
  check_affine(rv, C, "running_var");
  std::vector<double> m = values(rm), v = values(rv);
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  Tensor out = Tensor::empty(dt, x.sizes());
  std::vector<int64_t> off = all_offsets(x);
  int64_t inner = 1;
  for (int64_t d = 2; d < x.dim(); ++d) inner *= x.size(d);
  for (size_t i = 0; i < off.size(); ++i) {
    size_t ch = size_t((int64_t(i) / inner) % C);
    double y = (x.load(off[i]) - m[ch]) / std::sqrt(v[ch] + eps);
    if (!wv.empty()) y *= wv[ch];
    if (!bv.empty()) y += bv[ch];
    out.store(int64_t(i), y);
  }
  return out;
}

Tensors k_batch_norm(const KernelCall& c) {
  if (c.arg("training").b)
    fail("batch_norm in training mode is not supported by the reference interpreter");
  const Tensor& x = c.tensor("input");
  return {batch_norm_eval(x, c.tensor("weight"), c.tensor("bias"), c.tensor("running_mean"),
                          c.tensor("running_var"), c.arg("eps").f, c.fdt(x.dtype()))};
}

Tensors k_native_batch_norm_no_training(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  DType dt = c.fdt(x.dtype());
  Tensor out = batch_norm_eval(x, c.tensor("weight"), c.tensor("bias"), c.tensor("running_mean"),
                               c.tensor("running_var"), c.arg("eps").f, dt);
  return {out, Tensor::empty(dt, {0}), Tensor::empty(dt, {0})};
}

// ---- Matrix products ----

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    fail(std::string(op) + ": expected both operands to have the same dtype, got " +
         dname(a.dtype()) + " and " + dname(b.dtype()));
}

// out[n, m] += a[n, k] @ b[k, m] on contiguous double buffers, summing over k in order.
// Compiled with optimisation even in debug builds: it dominates the interpreter's run time,
// and without -ffast-math the result is the same as at -O0.
FXC_OPTIMIZED void gemm_kernel(const double* a, const double* b, double* out, int64_t n, int64_t k,
                               int64_t m) {
  // Blocks of rows of b stay in cache across all rows of a; each out[i, j] still sums its k
  // products in ascending order.
  const int64_t kBlock = 64;
  for (int64_t p0 = 0; p0 < k; p0 += kBlock) {
    int64_t p1 = std::min(k, p0 + kBlock);
    for (int64_t i = 0; i < n; ++i) {
      double* orow = out + i * m;
      const double* arow = a + i * k;
      for (int64_t p = p0; p < p1; ++p) {
        double x = arow[p];
        const double* brow = b + p * m;
        for (int64_t j = 0; j < m; ++j) orow[j] += x * brow[j];
      }
    }
  }
}

// Row-major double copy of the [r, c] matrix at `base` with the given strides.
void load_matrix(const Tensor& t, int64_t base, int64_t r, int64_t c, int64_t sr, int64_t sc,
                 double* dst) {
  if (t.dtype() == DType::F32 || t.dtype() == DType::F64) {
    const std::byte* p = t.raw_data();
    bool f32 = t.dtype() == DType::F32;
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        int64_t off = base + i * sr + j * sc;
        if (f32) {
          float v;
          std::memcpy(&v, p + off * 4, 4);
          dst[i * c + j] = v;
        } else {
          std::memcpy(&dst[i * c + j], p + off * 8, 8);
        }
      }
    return;
  }
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) dst[i * c + j] = t.load(base + i * sr + j * sc);
}

// Batched product of a [batch..., n, k] and b [batch..., k, m] (same batch shape, any
// strides): row-major double result of batch * n * m, accumulated in double.
std::vector<double> gemm(const Tensor& a, const Tensor& b) {
  int64_t r = a.dim();
  assert(r >= 2 && b.dim() == r && "gemm expects equal ranks >= 2");
  Shape batch(a.sizes().begin(), a.sizes().end() - 2);
  int64_t n = a.size(r - 2), k = a.size(r - 1), m = b.size(r - 1);
  assert(b.size(r - 2) == k && "gemm inner sizes differ");
  auto boff_a = dim_offsets(batch, Shape(a.strides().begin(), a.strides().end() - 2));
  auto boff_b = dim_offsets(batch, Shape(b.strides().begin(), b.strides().end() - 2));
  std::vector<double> av(size_t(n * k)), bv(size_t(k * m)), out(boff_a.size() * size_t(n * m), 0.0);
  for (size_t t = 0; t < boff_a.size(); ++t) {
    // A batch operand broadcast with stride 0 is loaded once.
    if (t == 0 || boff_a[t] != boff_a[t - 1])
      load_matrix(a, boff_a[t], n, k, a.stride(r - 2), a.stride(r - 1), av.data());
    if (t == 0 || boff_b[t] != boff_b[t - 1])
      load_matrix(b, boff_b[t], k, m, b.stride(r - 2), b.stride(r - 1), bv.data());
    gemm_kernel(av.data(), bv.data(), out.data() + t * size_t(n * m), n, k, m);
  }
  return out;
}

Tensor transpose_last(const Tensor& t) {
  Shape s = t.sizes(), st = t.strides();
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  std::swap(st[st.size() - 1], st[st.size() - 2]);
  return view_of(t, s, st, t.storage_offset());
}

Tensor unsqueeze_view(const Tensor& t, int64_t d) {
  Shape s = t.sizes(), st = t.strides();
  int64_t stride = d >= t.dim() ? 1 : t.size(d) * t.stride(d);
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return view_of(t, s, st, t.storage_offset());
}

// torch.matmul over every rank combination, as double values and the result shape.
std::vector<double> matmul_values(const Tensor& a0, const Tensor& b0, Shape* shape) {
  if (a0.dim() == 0 || b0.dim() == 0)
    fail("both arguments to matmul need to be at least 1D, but they are " +
         std::to_string(a0.dim()) + "D and " + std::to_string(b0.dim()) + "D");
  Tensor a = a0.dim() == 1 ? unsqueeze_view(a0, 0) : a0;
  Tensor b = b0.dim() == 1 ? unsqueeze_view(b0, 1) : b0;
  int64_t n = a.size(a.dim() - 2), k = a.size(a.dim() - 1);
  int64_t k2 = b.size(b.dim() - 2), m = b.size(b.dim() - 1);
  if (k != k2)
    fail("mat1 and mat2 shapes cannot be multiplied (" + std::to_string(n) + "x" +
         std::to_string(k) + " and " + std::to_string(k2) + "x" + std::to_string(m) + ")");
  Shape ba(a.sizes().begin(), a.sizes().end() - 2), bb(b.sizes().begin(), b.sizes().end() - 2);
  Shape batch = broadcast(ba, bb);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {n, k});
  sb.insert(sb.end(), {k, m});
  *shape = batch;
  if (a0.dim() > 1) shape->push_back(n);
  if (b0.dim() > 1) shape->push_back(m);
  return gemm(expand_to(a, sa), expand_to(b, sb));
}

Tensors k_matmul(const KernelCall& c) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("other");
  check_same_dtype(a, b, "matmul");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {make(c.fdt(a.dtype()), shape, v)};
}

Tensors k_mm(const KernelCall& c) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("mat2");
  if (a.dim() != 2 || b.dim() != 2)
    fail("mm expects 2-D operands, got " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  check_same_dtype(a, b, "mm");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {make(c.fdt(a.dtype()), shape, v)};
}

Tensors k_bmm(const KernelCall& c) {
  const Tensor& a = c.tensor("self");
  const Tensor& b = c.tensor("mat2");
  if (a.dim() != 3 || b.dim() != 3)
    fail("bmm expects 3-D operands, got " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  if (a.size(0) != b.size(0))
    fail("bmm: batch sizes differ: " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()));
  check_same_dtype(a, b, "bmm");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {make(c.fdt(a.dtype()), shape, v)};
}

// beta * bias + alpha * product, with bias broadcast to the product's shape.
Tensor add_bias(const std::vector<double>& prod, const Shape& shape, const Tensor& bias,
                double beta, double alpha, DType dt) {
  std::vector<double> out(prod.size());
  std::vector<double> bv;
  if (bias.defined() && beta != 0) bv = values(expand_to(bias, shape));
  for (size_t i = 0; i < prod.size(); ++i)
    out[i] = alpha * prod[i] + (bv.empty() ? 0.0 : beta * bv[i]);
  return make(dt, shape, out);
}

Tensors k_addmm(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  const Tensor& a = c.tensor("mat1");
  const Tensor& b = c.tensor("mat2");
  if (a.dim() != 2 || b.dim() != 2)
    fail("addmm expects 2-D matrices, got " + shape_str(a.sizes()) + " and " +
         shape_str(b.sizes()));
  check_same_dtype(a, b, "addmm");
  check_same_dtype(self, a, "addmm");
  Shape shape;
  auto v = matmul_values(a, b, &shape);
  return {
      add_bias(v, shape, self, c.arg("beta").scalar(), c.arg("alpha").scalar(), c.fdt(a.dtype()))};
}

Tensors k_linear(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  const Tensor& w = c.tensor("weight");
  const Tensor& bias = c.tensor("bias");
  check_same_dtype(x, w, "linear");
  if (bias.defined()) check_same_dtype(x, bias, "linear");
  if (w.dim() != 1 && w.dim() != 2)
    fail("linear expects a 1-D or 2-D weight, got " + shape_str(w.sizes()));
  Shape shape;
  auto v = matmul_values(x, w.dim() == 2 ? transpose_last(w) : w, &shape);
  return {add_bias(v, shape, bias, 1.0, 1.0, c.fdt(x.dtype()))};
}

// ---- Convolution and pooling ----

// A per-spatial-dim parameter (stride, padding, ...) with n entries; one entry applies to all.
// Values are bounded so that size arithmetic with them cannot overflow.
Shape expand_param(const Shape& p, size_t n, const char* what) {
  if (p.size() != n && p.size() != 1)
    fail(std::string(what) + " must have 1 or " + std::to_string(n) + " elements, got " +
         std::to_string(p.size()));
  for (int64_t v : p)
    if (v < -(int64_t(1) << 20) || v > (int64_t(1) << 20))
      fail(std::string(what) + " value " + std::to_string(v) + " is out of range");
  return p.size() == n ? p : Shape(n, p[0]);
}

// Unfolds the [C, H, W] image x into col[(c, kh, kw), (oh, ow)] (zeros where the window
// reaches into the padding).
FXC_OPTIMIZED void im2col(const double* x, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW,
                          int64_t OH, int64_t OW, const Shape& stride, const Shape& pad,
                          const Shape& dil, double* col) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        double* row = col + ((c * KH + kh) * KW + kw) * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
            bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
            row[oh * OW + ow] = inside ? x[(c * H + ih) * W + iw] : 0.0;
          }
        }
      }
}

// 2-D convolution of x [N, C, H, W] with w [O, C/groups, KH, KW].
Tensor conv2d_impl(const Tensor& x, const Tensor& w, const Tensor& bias, Shape stride, Shape pad,
                   Shape dil, int64_t groups, DType dt) {
  if (x.dim() != 4 || w.dim() != 4)
    fail("expected a 4-D input and weight for 2-D convolution, got " + shape_str(x.sizes()) +
         " and " + shape_str(w.sizes()));
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int64_t O = w.size(0), CG = w.size(1), KH = w.size(2), KW = w.size(3);
  if (groups <= 0) fail("non-positive groups is not supported");
  for (int i = 0; i < 2; ++i) {
    if (stride[i] <= 0) fail("non-positive stride is not supported");
    if (pad[i] < 0) fail("negative padding is not supported");
    if (dil[i] <= 0) fail("dilation should be greater than zero");
  }
  if (CG * groups != C)
    fail("given groups=" + std::to_string(groups) + ", weight of size " + shape_str(w.sizes()) +
         ", expected input" + shape_str(x.sizes()) + " to have " + std::to_string(CG * groups) +
         " channels, but got " + std::to_string(C) + " channels instead");
  if (O % groups != 0)
    fail("given groups=" + std::to_string(groups) + ", expected weight to be divisible by " +
         std::to_string(groups) + " at dimension 0, but got weight of size " +
         shape_str(w.sizes()));
  check_affine(bias, O, "bias");
  int64_t OH = (H + 2 * pad[0] - dil[0] * (KH - 1) - 1) / stride[0] + 1;
  int64_t OW = (W + 2 * pad[1] - dil[1] * (KW - 1) - 1) / stride[1] + 1;
  if (H + 2 * pad[0] - dil[0] * (KH - 1) - 1 < 0 || W + 2 * pad[1] - dil[1] * (KW - 1) - 1 < 0)
    fail("calculated output size is too small for input " + shape_str(x.sizes()) + " and kernel " +
         shape_str(w.sizes()));
  Shape out_shape{N, O, OH, OW};
  int64_t patch = checked_numel({CG, KH, KW}), npix = checked_numel({OH, OW});
  if (checked_numel(out_shape) > Tensor::kMaxBytes / 8 ||
      checked_numel({patch, npix}) > Tensor::kMaxBytes / 8)
    fail("convolution of " + shape_str(x.sizes()) + " with " + shape_str(w.sizes()) +
         " is too large");
  std::vector<double> xv = values(x), wv = values(w);
  std::vector<double> bv = bias.defined() ? values(bias) : std::vector<double>();
  std::vector<double> out(size_t(N * O * npix), 0.0), col(size_t(patch * npix));
  int64_t opg = O / groups;
  // Per image and group: out[o, pixel] = sum over (c, kh, kw) of w[o, c, kh, kw] * x[c, ih, iw],
  // as a product of the weights and the unfolded input patches.
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t g = 0; g < groups; ++g) {
      im2col(xv.data() + (nn * C + g * CG) * H * W, CG, H, W, KH, KW, OH, OW, stride, pad, dil,
             col.data());
      gemm_kernel(wv.data() + g * opg * patch, col.data(), out.data() + (nn * O + g * opg) * npix,
                  opg, patch, npix);
    }
  if (!bv.empty())
    for (int64_t nn = 0; nn < N; ++nn)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t p = 0; p < npix; ++p) out[size_t((nn * O + o) * npix + p)] += bv[size_t(o)];
  return make(dt, out_shape, out);
}

Tensors k_conv2d(const KernelCall& c) {
  Tensor x = c.tensor("input");
  const Tensor& w = c.tensor("weight");
  check_same_dtype(x, w, "conv2d");
  bool unbatched = x.dim() == 3;
  if (unbatched) x = unsqueeze_view(x, 0);
  Tensor out = conv2d_impl(x, w, c.tensor("bias"), expand_param(c.arg("stride").ints, 2, "stride"),
                           expand_param(c.arg("padding").ints, 2, "padding"),
                           expand_param(c.arg("dilation").ints, 2, "dilation"), c.arg("groups").i,
                           c.fdt(x.dtype()));
  if (unbatched)
    out = view_of(out, Shape(out.sizes().begin() + 1, out.sizes().end()),
                  Shape(out.strides().begin() + 1, out.strides().end()), 0);
  return {out};
}

Tensors k_convolution(const KernelCall& c) {
  if (c.arg("transposed").b)
    fail("transposed convolution is not supported by the reference interpreter");
  Tensor x = c.tensor("input"), w = c.tensor("weight");
  check_same_dtype(x, w, "convolution");
  Shape stride = c.arg("stride").ints, pad = c.arg("padding").ints, dil = c.arg("dilation").ints;
  bool one_d = x.dim() == 3;
  if (one_d) { // 1-D convolution as 2-D with height 1
    if (w.dim() != 3)
      fail("expected a 3-D weight for 1-D convolution, got " + shape_str(w.sizes()));
    x = unsqueeze_view(x, 2);
    w = unsqueeze_view(w, 2);
    stride = {1, expand_param(stride, 1, "stride")[0]};
    pad = {0, expand_param(pad, 1, "padding")[0]};
    dil = {1, expand_param(dil, 1, "dilation")[0]};
  } else if (x.dim() != 4) {
    fail("only 1-D and 2-D convolutions are supported by the reference interpreter, got input " +
         shape_str(x.sizes()));
  }
  Tensor out = conv2d_impl(x, w, c.tensor("bias"), expand_param(stride, 2, "stride"),
                           expand_param(pad, 2, "padding"), expand_param(dil, 2, "dilation"),
                           c.arg("groups").i, c.fdt(x.dtype()));
  if (one_d)
    out = view_of(out, {out.size(0), out.size(1), out.size(3)},
                  {out.stride(0), out.stride(1), out.stride(3)}, 0);
  return {out};
}

// PyTorch's pooling_output_shape.
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

Tensors max_pool(const KernelCall& c, bool with_indices) {
  Tensor x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    fail("max_pool2d expects a 3-D or 4-D input, got " + shape_str(x.sizes()));
  Shape k = expand_param(c.arg("kernel_size").ints, 2, "kernel_size");
  Shape s = c.arg("stride").ints.empty() ? k : expand_param(c.arg("stride").ints, 2, "stride");
  Shape p = expand_param(c.arg("padding").ints, 2, "padding");
  Shape d = expand_param(c.arg("dilation").ints, 2, "dilation");
  bool ceil = c.arg("ceil_mode").b;
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0) fail("kernel size should be greater than zero");
    if (s[i] <= 0) fail("stride should be greater than zero");
    if (d[i] <= 0) fail("dilation should be greater than zero");
    if (p[i] < 0 || p[i] > k[i] / 2) fail("pad should be at most half of effective kernel size");
  }
  int64_t H = x.size(x.dim() - 2), W = x.size(x.dim() - 1);
  int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - 2));
  int64_t OH = pool_out(H, k[0], p[0], s[0], d[0], ceil),
          OW = pool_out(W, k[1], p[1], s[1], d[1], ceil);
  if (OH <= 0 || OW <= 0)
    fail("given input size " + shape_str(x.sizes()) + ", the calculated output size is too small");
  Shape osz(x.sizes().begin(), x.sizes().end() - 2);
  osz.insert(osz.end(), {OH, OW});
  DType dt = c.fdt(x.dtype());
  Tensor out = Tensor::empty(dt, osz), ind = Tensor::empty(DType::I64, osz);
  std::vector<double> xv = values(x);
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t hs = oh * s[0] - p[0], ws = ow * s[1] - p[1];
        int64_t h0 = hs, w0 = ws;
        while (h0 < 0) h0 += d[0];
        while (w0 < 0) w0 += d[1];
        double best = -std::numeric_limits<double>::infinity();
        int64_t bi = h0 * W + w0;
        for (int64_t kh = 0; kh < k[0]; ++kh) {
          int64_t ih = hs + kh * d[0];
          if (ih < 0 || ih >= H) continue;
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            int64_t iw = ws + kw * d[1];
            if (iw < 0 || iw >= W) continue;
            double v = xv[size_t((pl * H + ih) * W + iw)];
            if (v > best || std::isnan(v)) {
              best = v;
              bi = ih * W + iw;
            }
          }
        }
        out.store(idx, best);
        ind.store_int(idx, bi);
        ++idx;
      }
  if (with_indices) return {out, ind};
  return {out};
}

Tensors k_max_pool2d(const KernelCall& c) {
  return max_pool(c, false);
}
Tensors k_max_pool2d_with_indices(const KernelCall& c) {
  return max_pool(c, true);
}

Tensors k_adaptive_avg_pool2d(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    fail("adaptive_avg_pool2d expects a 3-D or 4-D input, got " + shape_str(x.sizes()));
  Shape os = expand_param(c.arg("output_size").ints, 2, "output_size");
  if (os[0] < 0 || os[1] < 0) fail("adaptive_avg_pool2d: output size must be non-negative");
  int64_t H = x.size(x.dim() - 2), W = x.size(x.dim() - 1);
  for (int64_t d = 0; d < x.dim() - 2; ++d)
    if (x.size(d) == 0) fail("adaptive_avg_pool2d: input has an empty non-spatial dimension");
  if ((H == 0 || W == 0) && os[0] * os[1] > 0)
    fail("adaptive_avg_pool2d: input spatial size is zero");
  int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - 2));
  Shape osz(x.sizes().begin(), x.sizes().end() - 2);
  osz.insert(osz.end(), {os[0], os[1]});
  Tensor out = Tensor::empty(c.fdt(x.dtype()), osz);
  std::vector<double> xv = values(x);
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < os[0]; ++oh) {
      int64_t h0 = (oh * H) / os[0], h1 = ((oh + 1) * H + os[0] - 1) / os[0];
      for (int64_t ow = 0; ow < os[1]; ++ow) {
        int64_t w0 = (ow * W) / os[1], w1 = ((ow + 1) * W + os[1] - 1) / os[1];
        double s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) s += xv[size_t((pl * H + ih) * W + iw)];
        out.store(idx++, s / double((h1 - h0) * (w1 - w0)));
      }
    }
  return {out};
}

// ---- Attention ----

Tensor reshape_impl(const Tensor& x, const Shape& size);

// Grouped-query attention: repeats each of t's heads (dim -3) so that it has `heads` of them,
// as repeat_interleave does (result head j is input head j / (heads / t's heads)).
Tensor repeat_heads(const Tensor& t, int64_t heads, const char* what) {
  int64_t r = t.dim(), hk = t.size(r - 3);
  if (hk == heads) return t;
  if (hk == 0 || heads % hk != 0)
    fail("scaled_dot_product_attention: the number of heads in " + std::string(what) + " (" +
         std::to_string(hk) + ") must divide the number of heads in query (" +
         std::to_string(heads) + ")");
  Shape sz = t.sizes(), st = t.strides();
  sz.insert(sz.begin() + (r - 2), heads / hk);
  st.insert(st.begin() + (r - 2), 0);
  Shape out = t.sizes();
  out[size_t(r - 3)] = heads;
  return reshape_impl(view_of(t, sz, st, t.storage_offset()), out);
}

Tensors k_sdpa(const KernelCall& c) {
  const Tensor& q = c.tensor("query");
  Tensor k = c.tensor("key");
  Tensor v = c.tensor("value");
  const Tensor& mask = c.tensor("attn_mask");
  if (c.arg("dropout_p").f != 0)
    fail("scaled_dot_product_attention with dropout_p != 0 is not supported by the reference "
         "interpreter");
  bool causal = c.arg("is_causal").b;
  if (causal && mask.defined())
    fail("scaled_dot_product_attention: explicit attn_mask should not be set when is_causal=True");
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    fail("scaled_dot_product_attention expects query, key and value of at least 2 dims");
  check_same_dtype(q, k, "scaled_dot_product_attention");
  check_same_dtype(q, v, "scaled_dot_product_attention");
  if (c.arg("enable_gqa").b && q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3) {
    k = repeat_heads(k, q.size(q.dim() - 3), "key");
    v = repeat_heads(v, q.size(q.dim() - 3), "value");
  }
  int64_t L = q.size(q.dim() - 2), E = q.size(q.dim() - 1);
  int64_t S = k.size(k.dim() - 2), Ev = v.size(v.dim() - 1);
  if (k.size(k.dim() - 1) != E)
    fail("scaled_dot_product_attention: query has " + std::to_string(E) + " features but key has " +
         std::to_string(k.size(k.dim() - 1)));
  if (v.size(v.dim() - 2) != S)
    fail("scaled_dot_product_attention: key has " + std::to_string(S) +
         " positions but value has " + std::to_string(v.size(v.dim() - 2)));
  Shape batch = broadcast(Shape(q.sizes().begin(), q.sizes().end() - 2),
                          Shape(k.sizes().begin(), k.sizes().end() - 2));
  batch = broadcast(batch, Shape(v.sizes().begin(), v.sizes().end() - 2));
  auto with = [&](Shape tail) {
    Shape s = batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  // scores = q @ k^T, computed in double for every batch entry.
  std::vector<double> scores =
      gemm(expand_to(q, with({L, E})), expand_to(transpose_last(k), with({E, S})));
  double scale = c.arg("scale").is_none() ? 1.0 / std::sqrt(double(E)) : c.arg("scale").f;
  std::vector<double> madd;
  if (mask.defined()) {
    Tensor mx = expand_to(mask, with({L, S}));
    std::vector<int64_t> off = all_offsets(mx);
    madd.resize(off.size());
    for (size_t i = 0; i < off.size(); ++i) {
      double m = mx.load(off[i]);
      madd[i] = mask.dtype() == DType::Bool ? (m != 0 ? 0.0 : -INFINITY) : m;
    }
  }
  size_t nb = scores.size() / size_t(std::max<int64_t>(L * S, 1));
  if (L * S == 0) nb = size_t(checked_numel(batch));
  std::vector<double> probs(scores.size());
  for (size_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < L; ++i) {
      size_t row = (b * size_t(L) + size_t(i)) * size_t(S);
      double mxv = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double s = scores[row + size_t(j)] * scale;
        if (!madd.empty()) s += madd[row + size_t(j)];
        if (causal && j > i) s = -INFINITY;
        scores[row + size_t(j)] = s;
        mxv = std::isnan(s) || std::isnan(mxv) ? NAN : std::max(mxv, s);
      }
      // PyTorch's math path uses _safe_softmax: a fully masked row gives zeros, not NaN.
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += std::exp(scores[row + size_t(j)] - mxv);
      for (int64_t j = 0; j < S; ++j)
        probs[row + size_t(j)] =
            mxv == -INFINITY ? 0.0 : std::exp(scores[row + size_t(j)] - mxv) / sum;
    }
  // out = probs @ v
  Tensor pt = make(DType::F64, with({L, S}), probs);
  std::vector<double> out = gemm(pt, expand_to(v, with({S, Ev})));
  return {make(c.fdt(q.dtype()), with({L, Ev}), out)};
}

// ---- Indexing ----

Tensors k_embedding(const KernelCall& c) {
  const Tensor& w = c.tensor("weight");
  const Tensor& idx = c.tensor("indices");
  if (w.dim() != 2) fail("embedding expects a 2-D weight, got " + shape_str(w.sizes()));
  if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
    fail("expected indices of type i64 or i32 for embedding, got " + dname(idx.dtype()));
  int64_t V = w.size(0), D = w.size(1);
  Shape shape = idx.sizes();
  shape.push_back(D);
  Tensor out = Tensor::empty(c.fdt(w.dtype()), shape);
  std::vector<int64_t> off = all_offsets(idx);
  for (size_t i = 0; i < off.size(); ++i) {
    int64_t r = idx.load_int(off[i]);
    if (r < 0 || r >= V)
      fail("embedding: index " + std::to_string(r) + " is out of range for a table of " +
           std::to_string(V) + " rows");
    for (int64_t j = 0; j < D; ++j)
      out.store(int64_t(i) * D + j, w.load(r * w.stride(0) + j * w.stride(1)));
  }
  return {out};
}

void check_index_dtype(const Tensor& t, const char* op) {
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
    fail(std::string(op) + ": expected an i64 or i32 index tensor, got " + dname(t.dtype()));
}

Tensors k_gather(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& index = c.tensor("index");
  if (index.dtype() != DType::I64)
    fail("gather(): expected dtype i64 for index, got " + dname(index.dtype()));
  int64_t r = std::max<int64_t>(x.dim(), 1);
  int64_t dim = wrap(c.arg("dim").i, x.dim());
  if (std::max<int64_t>(index.dim(), 1) != r)
    fail("gather(): index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < index.dim(); ++d)
    if (d != dim && index.size(d) > (x.dim() ? x.size(d) : 1))
      fail("gather(): size of dimension " + std::to_string(d) + " of index " +
           shape_str(index.sizes()) + " exceeds that of input " + shape_str(x.sizes()));
  Tensor out = Tensor::empty(c.fdt(x.dtype()), index.sizes());
  int64_t dsize = x.dim() ? x.size(dim) : 1;
  int64_t n = index.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, xoff = 0, ioff = 0, v = 0;
    std::vector<int64_t> mi(size_t(index.dim()));
    for (int64_t d = index.dim() - 1; d >= 0; --d) {
      mi[size_t(d)] = rem % index.size(d);
      rem /= index.size(d);
      ioff += mi[size_t(d)] * index.stride(d);
    }
    v = index.load_int(ioff);
    if (v < 0 || v >= dsize)
      fail("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
           " with size " + std::to_string(dsize));
    for (int64_t d = 0; d < x.dim(); ++d) xoff += (d == dim ? v : mi[size_t(d)]) * x.stride(d);
    out.store(i, x.load(xoff));
  }
  return {out};
}

Tensors k_index_select(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& index = c.tensor("index");
  check_index_dtype(index, "index_select");
  if (index.dim() > 1)
    fail("index_select(): index must be 0-D or 1-D, got " + shape_str(index.sizes()));
  int64_t dim = wrap(c.arg("dim").i, x.dim());
  Tensor xs = x.dim() == 0 ? unsqueeze_view(x, 0) : x;
  std::vector<int64_t> idx;
  for (int64_t off : all_offsets(index)) idx.push_back(index.load_int(off));
  int64_t dsize = xs.size(dim);
  for (int64_t v : idx)
    if (v < 0 || v >= dsize)
      fail("index_select(): index " + std::to_string(v) + " is out of range for dimension " +
           std::to_string(dim) + " with size " + std::to_string(dsize));
  Shape os = xs.sizes();
  os[size_t(dim)] = int64_t(idx.size());
  Tensor out = Tensor::empty(c.fdt(x.dtype()), x.dim() == 0 ? Shape{} : os);
  Tensor ov = x.dim() == 0 ? unsqueeze_view(out, 0) : out;
  for (size_t j = 0; j < idx.size(); ++j) {
    Shape ss = xs.sizes(), sst = xs.strides();
    ss[size_t(dim)] = 1;
    Tensor src = view_of(xs, ss, sst, xs.storage_offset() + idx[j] * xs.stride(dim));
    Shape ds = ov.sizes();
    ds[size_t(dim)] = 1;
    Tensor dst = view_of(ov, ds, ov.strides(), ov.storage_offset() + int64_t(j) * ov.stride(dim));
    dst.copy_from(src);
  }
  return {out};
}

// Advanced indexing: x[indices] with None entries for untouched dims.
Tensors k_index(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  std::vector<Tensor> idx;
  // Boolean masks expand into one long index per masked dim (their nonzero positions).
  for (const Tensor& t : c.list("indices")) {
    if (!t.defined() || (t.dtype() != DType::Bool && t.dtype() != DType::U8)) {
      if (t.defined() && !is_integral(t.dtype()))
        fail("tensors used as indices must be long, int, byte or bool tensors, got " +
             dname(t.dtype()));
      idx.push_back(t);
      continue;
    }
    int64_t first = int64_t(idx.size());
    for (int64_t d = 0; d < t.dim(); ++d)
      if (first + d >= x.dim() || x.size(first + d) != t.size(d))
        fail("the shape of the mask " + shape_str(t.sizes()) + " at index " + std::to_string(d) +
             " does not match the shape of the indexed tensor " + shape_str(x.sizes()));
    std::vector<std::vector<double>> coords(size_t(t.dim()));
    std::vector<int64_t> off = all_offsets(t);
    for (size_t i = 0; i < off.size(); ++i) {
      if (t.load(off[i]) == 0) continue;
      int64_t rem = int64_t(i);
      for (int64_t d = t.dim() - 1; d >= 0; --d) {
        coords[size_t(d)].push_back(double(rem % t.size(d)));
        rem /= t.size(d);
      }
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      std::vector<double>& p = coords[size_t(d)];
      idx.push_back(make(DType::I64, {int64_t(p.size())}, p));
    }
  }
  if (int64_t(idx.size()) > x.dim())
    fail("too many indices for tensor of dimension " + std::to_string(x.dim()) + " (got " +
         std::to_string(idx.size()) + ")");
  idx.resize(size_t(x.dim()));
  std::vector<int64_t> pos;
  Shape bshape;
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d].defined()) {
      pos.push_back(int64_t(d));
      bshape = broadcast(bshape, idx[d].sizes());
    }
  if (pos.empty()) return {x.clone()};
  bool adjacent = pos.back() - pos.front() + 1 == int64_t(pos.size());
  // Output dims: [before..., B..., after...] when adjacent, else [B..., rest...].
  Shape rest_before, rest_after;
  std::vector<int64_t> rest_dims_before, rest_dims_after;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (idx[size_t(d)].defined()) continue;
    if (adjacent && d < pos.front())
      rest_dims_before.push_back(d);
    else
      rest_dims_after.push_back(d);
  }
  Shape out_shape;
  for (int64_t d : rest_dims_before) out_shape.push_back(x.size(d));
  out_shape.insert(out_shape.end(), bshape.begin(), bshape.end());
  for (int64_t d : rest_dims_after) out_shape.push_back(x.size(d));
  Tensor out = Tensor::empty(c.fdt(x.dtype()), out_shape);
  int64_t n = out.numel();
  Tensors bidx;
  std::vector<std::vector<int64_t>> boff;
  for (int64_t d : pos) {
    bidx.push_back(expand_to(idx[size_t(d)], bshape));
    boff.push_back(all_offsets(bidx.back()));
  }
  int64_t nb = checked_numel(bshape);
  int64_t nbefore = 1, nafter = 1;
  for (int64_t d : rest_dims_before) nbefore *= x.size(d);
  for (int64_t d : rest_dims_after) nafter *= x.size(d);
  auto rest_offsets = [&](const std::vector<int64_t>& dims) {
    Shape s, st;
    for (int64_t d : dims) {
      s.push_back(x.size(d));
      st.push_back(x.stride(d));
    }
    return dim_offsets(s, st);
  };
  std::vector<int64_t> before_off = rest_offsets(rest_dims_before),
                       after_off = rest_offsets(rest_dims_after);
  for (int64_t bi = 0; bi < nb && n > 0; ++bi) {
    int64_t src = 0;
    for (size_t j = 0; j < pos.size(); ++j) {
      int64_t v = bidx[j].load_int(boff[j][size_t(bi)]);
      int64_t size = x.size(pos[j]);
      if (v < -size || v >= size)
        fail("index " + std::to_string(v) + " is out of bounds for dimension " +
             std::to_string(pos[j]) + " with size " + std::to_string(size));
      if (v < 0) v += size;
      src += v * x.stride(pos[j]);
    }
    for (int64_t a = 0; a < nbefore; ++a)
      for (int64_t r = 0; r < nafter; ++r) {
        int64_t o = (a * nb + bi) * nafter + r;
        out.store(o, x.load(src + before_off[size_t(a)] + after_off[size_t(r)]));
      }
  }
  return {out};
}

Tensors k_scatter_add(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& index = c.tensor("index");
  const Tensor& src = c.tensor("src");
  if (index.dtype() != DType::I64)
    fail("scatter_add(): expected dtype i64 for index, got " + dname(index.dtype()));
  if (src.dtype() != x.dtype())
    fail("scatter_add(): expected self and src to have the same dtype, got " + dname(x.dtype()) +
         " and " + dname(src.dtype()));
  int64_t dim = wrap(c.arg("dim").i, x.dim());
  int64_t r = std::max<int64_t>(x.dim(), 1);
  if (std::max<int64_t>(index.dim(), 1) != r || std::max<int64_t>(src.dim(), 1) != r)
    fail("scatter_add(): index and src must have as many dimensions as self");
  auto size_or_1 = [](const Tensor& t, int64_t d) { return t.dim() ? t.size(d) : 1; };
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (index.size(d) > size_or_1(src, d))
      fail("scatter_add(): expected index " + shape_str(index.sizes()) +
           " to be no larger than src " + shape_str(src.sizes()) + " in every dimension");
    if (d != dim && index.size(d) > size_or_1(x, d))
      fail("scatter_add(): expected index " + shape_str(index.sizes()) +
           " to be no larger than self " + shape_str(x.sizes()) + " apart from dimension " +
           std::to_string(dim));
  }
  DType dt = c.fdt(x.dtype());
  std::vector<double> acc = values(x);
  std::vector<int64_t> xstr = contiguous_strides(x.sizes());
  int64_t dsize = size_or_1(x, dim);
  int64_t n = index.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, ioff = 0, soff = 0;
    std::vector<int64_t> mi(size_t(index.dim()));
    for (int64_t d = index.dim() - 1; d >= 0; --d) {
      mi[size_t(d)] = rem % index.size(d);
      rem /= index.size(d);
      ioff += mi[size_t(d)] * index.stride(d);
      soff += mi[size_t(d)] * src.stride(d);
    }
    int64_t v = index.load_int(ioff);
    if (v < 0 || v >= dsize)
      fail("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
           " with size " + std::to_string(dsize));
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d) o += (d == dim ? v : mi[size_t(d)]) * xstr[size_t(d)];
    acc[size_t(o)] += src.load(soff);
  }
  return {make(dt, x.sizes(), acc)};
}

// ---- Joining, padding, scatter ----

Tensors k_cat(const KernelCall& c) {
  const Tensors& ts = c.list("tensors");
  if (ts.empty()) fail("torch.cat(): expected a non-empty list of tensors");
  Tensors used;
  std::optional<DType> common;
  for (const Tensor& t : ts) {
    if (!t.defined()) fail("torch.cat(): expected tensors, got None");
    common = common ? promote_types(*common, t.dtype()) : t.dtype();
    if (!(t.dim() == 1 && t.size(0) == 0)) used.push_back(t); // legacy empty tensors are skipped
  }
  DType dt = c.fdt(*common);
  if (used.empty()) return {Tensor::empty(dt, ts[0].sizes())};
  const Tensor& f = used[0];
  if (f.dim() == 0) fail("zero-dimensional tensor cannot be concatenated");
  int64_t dim = wrap(c.arg("dim").i, f.dim());
  Shape shape = f.sizes();
  shape[size_t(dim)] = 0;
  for (size_t i = 0; i < used.size(); ++i) {
    const Tensor& t = used[i];
    if (t.dim() != f.dim())
      fail("tensors must have the same number of dimensions: got " + std::to_string(f.dim()) +
           " and " + std::to_string(t.dim()));
    for (int64_t d = 0; d < f.dim(); ++d)
      if (d != dim && t.size(d) != f.size(d))
        fail("sizes of tensors must match except in dimension " + std::to_string(dim) +
             ". Expected size " + std::to_string(f.size(d)) + " but got size " +
             std::to_string(t.size(d)) + " for tensor number " + std::to_string(i) +
             " in the list");
    shape[size_t(dim)] += t.size(dim);
  }
  Tensor out = Tensor::empty(dt, shape);
  int64_t at = 0;
  for (const Tensor& t : used) {
    Shape s = out.sizes();
    s[size_t(dim)] = t.size(dim);
    view_of(out, s, out.strides(), at * out.stride(dim)).copy_from(t);
    at += t.size(dim);
  }
  return {out};
}

Tensors k_roll(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& shifts = c.arg("shifts").ints;
  const Shape& dims = c.arg("dims").ints;
  if (dims.empty() && shifts.size() != 1)
    fail("roll: shifts must have one element when dims is empty, got " +
         std::to_string(shifts.size()));
  if (!dims.empty() && dims.size() != shifts.size())
    fail("roll: shifts and dims must align: shifts has " + std::to_string(shifts.size()) +
         " elements, dims has " + std::to_string(dims.size()));
  std::vector<double> v = values(x);
  int64_t n = int64_t(v.size());
  std::vector<double> out(v.size());
  if (dims.empty()) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = ((i + shifts[0]) % n + n) % n;
      out[size_t(j)] = v[size_t(i)];
    }
    return {make(c.fdt(x.dtype()), x.sizes(), out)};
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = wrap(dims[k], x.dim());
    int64_t size = x.dim() ? x.size(d) : 1;
    int64_t inner = 1;
    for (int64_t e = d + 1; e < x.dim(); ++e) inner *= x.size(e);
    for (int64_t i = 0; i < n && size > 0; ++i) {
      int64_t coord = (i / inner) % size;
      int64_t nc = ((coord + shifts[k]) % size + size) % size;
      out[size_t(i + (nc - coord) * inner)] = v[size_t(i)];
    }
    v = out;
  }
  return {make(c.fdt(x.dtype()), x.sizes(), v)};
}

Tensor constant_pad(const Tensor& x, const Shape& pad, double value, DType dt) {
  if (pad.size() % 2 != 0)
    fail("padding length must be divisible by 2, got " + std::to_string(pad.size()));
  for (int64_t p : pad)
    if (p < -(int64_t(1) << 40) || p > (int64_t(1) << 40))
      fail("padding " + std::to_string(p) + " is out of range");
  if (int64_t(pad.size() / 2) > x.dim())
    fail("padding length " + std::to_string(pad.size()) + " is too large for a " +
         std::to_string(x.dim()) + "-D input");
  Shape lo(size_t(x.dim()), 0), out_shape = x.sizes();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    size_t d = size_t(x.dim()) - 1 - i;
    lo[d] = pad[2 * i];
    out_shape[d] = x.size(int64_t(d)) + pad[2 * i] + pad[2 * i + 1];
    if (out_shape[d] < 0)
      fail("the input size " + std::to_string(x.size(int64_t(d))) + ", plus negative padding " +
           std::to_string(pad[2 * i]) + " and " + std::to_string(pad[2 * i + 1]) +
           " resulted in a negative output size");
  }
  Tensor out = Tensor::empty(dt, out_shape);
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0;
    bool inside = true;
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      int64_t o = rem % out_shape[size_t(d)];
      rem /= out_shape[size_t(d)];
      int64_t s = o - lo[size_t(d)];
      if (s < 0 || s >= x.size(d))
        inside = false;
      else
        src += s * x.stride(d);
    }
    out.store(i, inside ? x.load(src) : value);
  }
  return out;
}

Tensors k_constant_pad_nd(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {constant_pad(x, c.arg("pad").ints, c.arg("value").scalar(), c.fdt(x.dtype()))};
}

Tensors k_pad(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const std::string& mode = c.arg("mode").s;
  if (mode != "constant")
    fail("pad mode '" + mode + "' is not supported by the reference interpreter");
  const Arg& v = c.arg("value");
  return {constant_pad(x, c.arg("pad").ints, v.is_none() ? 0.0 : v.f, c.fdt(x.dtype()))};
}

// ---- Views ----

Shape infer_size(Shape shape, int64_t numel) {
  int64_t infer = -1;
  Shape known_dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail("only one dimension can be inferred");
      infer = int64_t(i);
    } else if (shape[i] < 0) {
      fail("invalid shape dimension " + std::to_string(shape[i]));
    } else {
      known_dims.push_back(shape[i]);
    }
  }
  int64_t known = checked_numel(known_dims);
  bool ok = infer >= 0 ? known != 0 && numel % known == 0 : known == numel;
  if (!ok)
    fail("shape '" + shape_str(shape) + "' is invalid for input of size " + std::to_string(numel));
  if (infer >= 0) shape[size_t(infer)] = numel / known;
  return shape;
}

Tensor view_impl(const Tensor& x, const Shape& size) {
  Shape shape = infer_size(size, x.numel());
  Shape st;
  if (!compute_view_strides(x.sizes(), x.strides(), shape, &st))
    fail("view size is not compatible with input tensor's size and stride (at least one dimension "
         "spans across two contiguous subspaces). Use .reshape(...) instead.");
  return view_of(x, shape, st, x.storage_offset());
}

Tensor reshape_impl(const Tensor& x, const Shape& size) {
  Shape shape = infer_size(size, x.numel());
  Shape st;
  if (compute_view_strides(x.sizes(), x.strides(), shape, &st))
    return view_of(x, shape, st, x.storage_offset());
  Tensor y = x.clone();
  return view_of(y, shape, contiguous_strides(shape), 0);
}

Tensors k_view(const KernelCall& c) {
  return {view_impl(c.tensor("self"), c.arg("size").ints)};
}
Tensors k_reshape(const KernelCall& c) {
  return {reshape_impl(c.tensor("self"), c.arg("shape").ints)};
}

Tensors k_permute(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& dims = c.arg("dims").ints;
  if (int64_t(dims.size()) != x.dim())
    fail("permute(): number of dimensions in the tensor input does not match the length "
         "of the desired ordering of dimensions i.e. input.dim() = " +
         std::to_string(x.dim()) + " is not equal to len(dims) = " + std::to_string(dims.size()));
  Shape s, st;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    int64_t w = wrap(d, x.dim());
    if (seen[size_t(w)]) fail("permute(): duplicate dims are not allowed");
    seen[size_t(w)] = true;
    s.push_back(x.size(w));
    st.push_back(x.stride(w));
  }
  return {view_of(x, s, st, x.storage_offset())};
}

Tensors k_transpose(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  int64_t a = wrap(c.arg("dim0").i, x.dim()), b = wrap(c.arg("dim1").i, x.dim());
  if (x.dim() == 0) return {x};
  Shape s = x.sizes(), st = x.strides();
  std::swap(s[size_t(a)], s[size_t(b)]);
  std::swap(st[size_t(a)], st[size_t(b)]);
  return {view_of(x, s, st, x.storage_offset())};
}

Tensors k_expand(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& size = c.arg("size").ints;
  if (int64_t(size.size()) < x.dim())
    fail("expand: the number of sizes provided (" + std::to_string(size.size()) +
         ") must be greater or equal to the number of dimensions in the tensor (" +
         std::to_string(x.dim()) + ")");
  size_t n = size.size(), k = size_t(x.dim());
  Shape s(n), st(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < n - k) {
      if (size[i] < 0)
        fail("expand: the expanded size of the tensor (" + std::to_string(size[i]) +
             ") isn't allowed in a leading, non-existing dimension " + std::to_string(i));
      s[i] = size[i];
      st[i] = 0;
      continue;
    }
    int64_t d = int64_t(i - (n - k));
    int64_t want = size[i] == -1 ? x.size(d) : size[i];
    if (want == x.size(d)) {
      s[i] = want;
      st[i] = x.stride(d);
    } else if (x.size(d) == 1 && want >= 0) {
      s[i] = want;
      st[i] = 0;
    } else {
      fail("the expanded size of the tensor (" + std::to_string(want) +
           ") must match the existing size (" + std::to_string(x.size(d)) +
           ") at non-singleton dimension " + std::to_string(i) +
           ".  Target sizes: " + shape_str(size) + ".  Tensor sizes: " + shape_str(x.sizes()));
    }
  }
  checked_numel(s);
  return {view_of(x, s, st, x.storage_offset())};
}

Tensor slice_impl(const Tensor& x, int64_t dim, const Arg& start, const Arg& end, int64_t step) {
  if (x.dim() == 0) fail("slice() cannot be applied to a 0-dim tensor");
  int64_t d = wrap(dim, x.dim());
  if (step <= 0) fail("slice step must be positive, got " + std::to_string(step));
  int64_t size = x.size(d);
  int64_t s = start.is_none() ? 0 : start.i, e = end.is_none() ? size : end.i;
  if (s < 0) s = s < -size ? 0 : s + size;
  if (e < 0) e = e < -size ? 0 : e + size;
  s = std::min(s, size);
  e = std::min(e, size);
  if (e < s) e = s;
  int64_t len = (e - s + step - 1) / step;
  Shape sz = x.sizes(), st = x.strides();
  sz[size_t(d)] = len;
  st[size_t(d)] = x.stride(d) * step;
  return view_of(x, sz, st, x.storage_offset() + s * x.stride(d));
}

Tensors k_slice(const KernelCall& c) {
  return {
      slice_impl(c.tensor("self"), c.arg("dim").i, c.arg("start"), c.arg("end"), c.arg("step").i)};
}

Tensors k_select(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("select() cannot be applied to a 0-dim tensor");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  int64_t i = c.arg("index").i, size = x.size(d);
  if (i < -size || i >= size)
    fail("select(): index " + std::to_string(i) + " out of range for tensor of size " +
         shape_str(x.sizes()) + " at dimension " + std::to_string(d));
  if (i < 0) i += size;
  Shape sz = x.sizes(), st = x.strides();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return {view_of(x, sz, st, x.storage_offset() + i * x.stride(d))};
}

Tensors k_as_strided(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& size = c.arg("size").ints;
  const Shape& stride = c.arg("stride").ints;
  if (size.size() != stride.size())
    fail("as_strided: mismatch in length of strides and shape (" + std::to_string(size.size()) +
         " sizes, " + std::to_string(stride.size()) + " strides)");
  const Arg& off = c.arg("storage_offset");
  return {x.as_strided(size, stride, off.is_none() ? x.storage_offset() : off.i)};
}

Tensors k_unsqueeze(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {unsqueeze_view(x, wrap(c.arg("dim").i, x.dim() + 1))};
}

Tensor squeeze_dims(const Tensor& x, const std::vector<bool>& drop) {
  Shape s, st;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!(drop[size_t(d)] && x.size(d) == 1)) {
      s.push_back(x.size(d));
      st.push_back(x.stride(d));
    }
  return view_of(x, s, st, x.storage_offset());
}

Tensors k_squeeze(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  std::vector<bool> drop(size_t(x.dim()), false);
  const Arg& dims = c.arg("dim");
  std::vector<int64_t> list = dims.kind == Arg::Kind::Ints ? dims.ints : Shape{dims.i};
  for (int64_t d : list) {
    int64_t w = wrap(d, x.dim());
    if (x.dim() > 0) drop[size_t(w)] = true;
  }
  return {squeeze_dims(x, drop)};
}

Tensors k_alias(const KernelCall& c) {
  return {c.tensor("self")};
}

Tensors k_split(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("split expects at least a 1-dimensional tensor");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  int64_t size = x.size(d);
  Shape sizes;
  if (c.node.schema->index_of("split_sizes") >= 0) {
    sizes = c.arg("split_sizes").ints;
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0)
        fail("split_with_sizes expects split_sizes to be non-negative, got " + shape_str(sizes));
      total += s;
    }
    if (total != size)
      fail("split_with_sizes expects split_sizes to sum exactly to " + std::to_string(size) +
           " (input tensor's size at dimension " + std::to_string(d) +
           "), but got split_sizes=" + shape_str(sizes));
  } else {
    int64_t ss = c.arg("split_size").i;
    if (ss < 0 || (ss == 0 && size != 0))
      fail("split_size can only be 0 if dimension size is 0, but got dimension size of " +
           std::to_string(size));
    int64_t n = ss == 0 ? 1 : std::max<int64_t>((size + ss - 1) / ss, 1);
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::min(ss, size - i * ss));
  }
  Tensors out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice_impl(x, d, Arg::of_int(at), Arg::of_int(at + s), 1));
    at += s;
  }
  return out;
}

Tensors k_flatten(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) return {reshape_impl(x, {1})};
  int64_t s = wrap(c.arg("start_dim").i, x.dim()), e = wrap(c.arg("end_dim").i, x.dim());
  if (s > e) fail("flatten() has invalid args: start_dim cannot come after end_dim");
  if (s == e) return {x};
  Shape shape(x.sizes().begin(), x.sizes().begin() + s);
  int64_t prod = 1;
  for (int64_t d = s; d <= e; ++d) prod *= x.size(d);
  shape.push_back(prod);
  shape.insert(shape.end(), x.sizes().begin() + e + 1, x.sizes().end());
  return {reshape_impl(x, shape)};
}

Tensors k_unflatten(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("unflatten() cannot be applied to a 0-dim tensor");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  const Shape& sizes = c.arg("sizes").ints;
  if (sizes.empty()) fail("unflatten: sizes must be non-empty");
  Shape inferred = infer_size(sizes, x.size(d));
  Shape shape(x.sizes().begin(), x.sizes().begin() + d);
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  shape.insert(shape.end(), x.sizes().begin() + d + 1, x.sizes().end());
  return {view_impl(x, shape)};
}

Tensors k_contiguous(const KernelCall& c) {
  return {c.tensor("self").contiguous()};
}

// ---- Copies and conversions ----

Tensors k_clone(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {x.to(c.fdt(x.dtype()))};
}

Tensors k_to_copy(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dt = c.arg("dtype");
  return {x.to(c.fdt(dt.is_none() ? x.dtype() : dt.dtype()))};
}

Tensors k_to_dtype(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  DType dt = c.fdt(c.arg("dtype").dtype());
  if (dt == x.dtype() && !c.arg("copy").b) return {x};
  return {x.to(dt)};
}

Tensors k_copy(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  Tensor out = Tensor::empty(c.fdt(x.dtype()), x.sizes());
  out.copy_from(c.tensor("src"));
  return {out};
}

Tensors k_slice_scatter(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& src = c.tensor("src");
  Tensor out = x.to(c.fdt(x.dtype()));
  Tensor dst = slice_impl(out, c.arg("dim").i, c.arg("start"), c.arg("end"), c.arg("step").i);
  if (dst.sizes() != src.sizes())
    fail("slice_scatter: expected src to have a size equal to the slice of self. src size = " +
         shape_str(src.sizes()) + ", slice size = " + shape_str(dst.sizes()));
  dst.copy_from(src);
  return {out};
}

Tensors k_dropout(const KernelCall& c) {
  double p = c.arg("p").f;
  if (p < 0 || p > 1)
    fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (c.arg("train").b && p != 0)
    fail("dropout in training mode is not supported by the reference interpreter");
  return {c.tensor("input")};
}

Tensors k_assert_tensor_metadata(const KernelCall& c) {
  const Tensor& a = c.tensor("a");
  const Arg& size = c.arg("size");
  if (!size.is_none() && size.ints != a.sizes())
    fail("tensor metadata mismatch: expected size " + shape_str(size.ints) + ", got " +
         shape_str(a.sizes()));
  const Arg& dt = c.arg("dtype");
  if (!dt.is_none() && c.fdt(dt.dtype()) != a.dtype())
    fail("tensor metadata mismatch: expected dtype " + dname(c.fdt(dt.dtype())) + ", got " +
         dname(a.dtype()));
  // Strides are deliberately not compared: reference kernels return contiguous results where
  // PyTorch may return another layout with the same values.
  return {};
}

Tensors k_lift_fresh_copy(const KernelCall& c) {
  return {c.tensor("self").clone()};
}

// ---- Factories ----

DType factory_dtype(const KernelCall& c, DType fallback) {
  const Arg& dt = c.arg("dtype");
  return c.fdt(dt.is_none() ? fallback : dt.dtype());
}

Tensor filled(DType dt, const Shape& size, const Arg& value) {
  Tensor t = Tensor::empty(dt, size);
  Tensor v = Tensor::empty(dt, {});
  if (value.kind == Arg::Kind::Int && !is_floating(dt))
    v.store_int(0, value.i);
  else
    v.store(0, value.scalar());
  t.copy_from(v);
  return t;
}

Tensors k_full(const KernelCall& c) {
  const Arg& v = c.arg("fill_value");
  return {filled(factory_dtype(c, wrapped_number_dtype(v, c.default_float())), c.arg("size").ints, v)};
}

Tensors k_full_like(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {filled(factory_dtype(c, x.dtype()), x.sizes(), c.arg("fill_value"))};
}

Tensors k_zeros(const KernelCall& c) {
  return {Tensor::empty(factory_dtype(c, c.default_float()), c.arg("size").ints)};
}

Tensors k_new_zeros(const KernelCall& c) {
  return {Tensor::empty(factory_dtype(c, c.tensor("self").dtype()), c.arg("size").ints)};
}

Tensors k_scalar_tensor(const KernelCall& c) {
  return {filled(factory_dtype(c, c.default_float()), {}, c.arg("s"))};
}

Tensors k_arange(const KernelCall& c) {
  const OpSchema& s = *c.node.schema;
  Arg start = s.index_of("start") >= 0 ? c.arg("start") : Arg::of_int(0);
  Arg end = c.arg("end");
  Arg step = s.index_of("step") >= 0 ? c.arg("step") : Arg::of_int(1);
  bool any_float = start.kind == Arg::Kind::Float || end.kind == Arg::Kind::Float ||
                   step.kind == Arg::Kind::Float;
  DType dt = factory_dtype(c, any_float ? c.default_float() : DType::I64);
  double a = start.scalar(), b = end.scalar(), st = step.scalar();
  if (st == 0) fail("arange: step must be nonzero");
  if (!std::isfinite(a) || !std::isfinite(b))
    fail("arange: unsupported range: " + std::to_string(a) + " -> " + std::to_string(b));
  if ((st > 0 && b < a) || (st < 0 && b > a))
    fail("arange: upper bound and larger bound inconsistent with step sign");
  double len = std::ceil((b - a) / st);
  if (len > double(Tensor::kMaxBytes)) fail("arange: too many elements");
  int64_t n = int64_t(len);
  Tensor out = Tensor::empty(dt, {n});
  bool ints = start.kind == Arg::Kind::Int && step.kind == Arg::Kind::Int && !is_floating(dt);
  for (int64_t i = 0; i < n; ++i) {
    if (ints)
      out.store_int(i, wrap_add(start.i, wrap_mul(step.i, i)));
    else
      out.store(i, a + st * double(i));
  }
  return {out};
}

// ---- In-place ops: compute out of place, then write into self ----

Tensors write_back(const Tensor& self, const Tensor& r) {
  if (!can_cast(r.dtype(), self.dtype()))
    fail("result type " + dname(r.dtype()) + " can't be cast to the desired output type " +
         dname(self.dtype()));
  if (r.sizes() != self.sizes())
    fail("output with shape " + shape_str(self.sizes()) + " doesn't match the broadcast shape " +
         shape_str(r.sizes()));
  self.copy_from(r);
  return {self};
}

Tensors k_relu_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_relu(c)[0]);
}
Tensors k_silu_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_silu(c)[0]);
}
Tensors k_hardswish_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_hardswish(c)[0]);
}
Tensors k_add_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_add(c)[0]);
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

// ---- The table ----

const OpTable<KernelFn>::Row kKernels[] = {
    {OpId::_assert_tensor_metadata, k_assert_tensor_metadata},
    {OpId::_log_softmax, k_log_softmax},
    {OpId::_native_batch_norm_legit_no_training, k_native_batch_norm_no_training},
    {OpId::_softmax, k_softmax},
    {OpId::_to_copy, k_to_copy},
    {OpId::abs, k_abs},
    {OpId::adaptive_avg_pool2d, k_adaptive_avg_pool2d},
    {OpId::add_Scalar, k_add},
    {OpId::add_Tensor, k_add},
    {OpId::add__Tensor, k_add_},
    {OpId::addmm, k_addmm},
    {OpId::alias, k_alias},
    {OpId::amax, k_amax},
    {OpId::any_dim, k_any},
    {OpId::arange, k_arange},
    {OpId::arange_start, k_arange},
    {OpId::arange_start_step, k_arange},
    {OpId::argmax, k_argmax},
    {OpId::as_strided, k_as_strided},
    {OpId::batch_norm, k_batch_norm},
    {OpId::bmm, k_bmm},
    {OpId::cat, k_cat},
    {OpId::clamp, k_clamp},
    {OpId::clone, k_clone},
    {OpId::constant_pad_nd, k_constant_pad_nd},
    {OpId::contiguous, k_contiguous},
    {OpId::conv2d, k_conv2d},
    {OpId::convolution, k_convolution},
    {OpId::copy, k_copy},
    {OpId::cos, k_cos},
    {OpId::div_Scalar, k_div},
    {OpId::div_Tensor, k_div},
    {OpId::dropout, k_dropout},
    {OpId::embedding, k_embedding},
    {OpId::eq_Scalar, k_cmp<0>},
    {OpId::eq_Tensor, k_cmp<0>},
    {OpId::erf, k_erf},
    {OpId::exp, k_exp},
    {OpId::expand, k_expand},
    {OpId::fill__Scalar, k_fill_},
    {OpId::fill__Tensor, k_fill_},
    {OpId::flatten_using_ints, k_flatten},
    {OpId::fmod_Scalar, k_fmod},
    // Issue 18 op families (integer division, rsub, bitwise, logical).
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
    {OpId::expm1, k_expm1},
    {OpId::log10, k_log10},
    {OpId::log1p, k_log1p},
    {OpId::log2, k_log2},
    {OpId::sinh, k_sinh},
    {OpId::tan, k_tan},
    {OpId::atan2, k_atan2},
    {OpId::ceil, k_rounding<1>},
    {OpId::clamp_Tensor, k_clamp_tensor},
    {OpId::floor, k_rounding<0>},
    {OpId::isinf, k_isinf},
    {OpId::isnan, k_isnan},
    {OpId::pow_Scalar, k_pow_scalar},
    {OpId::round, k_rounding<2>},
    {OpId::round_decimals, k_round_decimals},
    {OpId::trunc, k_rounding<3>},
    {OpId::cumprod, k_scan<1>},
    {OpId::cumsum, k_scan<0>},
    {OpId::logcumsumexp, k_scan<2>},
    // End of the issue-18 rows.
    {OpId::full, k_full},
    {OpId::full_like, k_full_like},
    {OpId::gather, k_gather},
    {OpId::ge_Scalar, k_cmp<5>},
    {OpId::ge_Tensor, k_cmp<5>},
    {OpId::gelu, k_gelu},
    {OpId::gt_Scalar, k_cmp<4>},
    {OpId::gt_Tensor, k_cmp<4>},
    {OpId::hardsigmoid, k_hardsigmoid},
    {OpId::hardswish, k_hardswish},
    {OpId::hardswish_, k_hardswish_},
    {OpId::index_Tensor, k_index},
    {OpId::index_select, k_index_select},
    {OpId::layer_norm, k_layer_norm},
    {OpId::le_Scalar, k_cmp<3>},
    {OpId::le_Tensor, k_cmp<3>},
    {OpId::lift_fresh_copy, k_lift_fresh_copy},
    {OpId::linear, k_linear},
    {OpId::log, k_log},
    {OpId::log_softmax_int, k_log_softmax},
    {OpId::logical_and, k_logical_and},
    {OpId::logical_not, k_logical_not},
    {OpId::lt_Scalar, k_cmp<2>},
    {OpId::lt_Tensor, k_cmp<2>},
    {OpId::masked_fill_Scalar, k_masked_fill},
    {OpId::matmul, k_matmul},
    {OpId::max_pool2d, k_max_pool2d},
    {OpId::max_pool2d_with_indices, k_max_pool2d_with_indices},
    {OpId::maximum, k_maximum},
    {OpId::mean, k_mean},
    {OpId::mean_dim, k_mean},
    {OpId::min_other, k_minimum},
    {OpId::minimum, k_minimum},
    {OpId::mm, k_mm},
    {OpId::mul_Scalar, k_mul},
    {OpId::mul_Tensor, k_mul},
    {OpId::native_layer_norm, k_native_layer_norm},
    {OpId::ne_Scalar, k_cmp<1>},
    {OpId::ne_Tensor, k_cmp<1>},
    {OpId::neg, k_neg},
    {OpId::new_zeros, k_new_zeros},
    {OpId::pad, k_pad},
    {OpId::permute, k_permute},
    {OpId::pow_Tensor_Scalar, k_pow},
    {OpId::pow_Tensor_Tensor, k_pow},
    {OpId::reciprocal, k_reciprocal},
    {OpId::relu, k_relu},
    {OpId::relu_, k_relu_},
    {OpId::reshape, k_reshape},
    {OpId::roll, k_roll},
    {OpId::rsqrt, k_rsqrt},
    {OpId::scalar_tensor, k_scalar_tensor},
    {OpId::scaled_dot_product_attention, k_sdpa},
    {OpId::scatter_add, k_scatter_add},
    {OpId::select_int, k_select},
    {OpId::sigmoid, k_sigmoid},
    {OpId::sign, k_sign},
    {OpId::silu, k_silu},
    {OpId::silu_, k_silu_},
    {OpId::sin, k_sin},
    {OpId::slice_Tensor, k_slice},
    {OpId::slice_scatter, k_slice_scatter},
    {OpId::softmax_int, k_softmax},
    {OpId::split_Tensor, k_split},
    {OpId::split_with_sizes, k_split},
    {OpId::sqrt, k_sqrt},
    {OpId::squeeze_dim, k_squeeze},
    {OpId::squeeze_dims, k_squeeze},
    {OpId::sub_Tensor, k_sub},
    {OpId::sum, k_sum},
    {OpId::sum_dim_IntList, k_sum},
    {OpId::tanh, k_tanh},
    {OpId::to_dtype, k_to_dtype},
    {OpId::transpose_int, k_transpose},
    {OpId::unflatten_int, k_unflatten},
    {OpId::unsqueeze, k_unsqueeze},
    {OpId::view, k_view},
    {OpId::where_ScalarOther, k_where},
    {OpId::where_self, k_where},
    {OpId::zeros, k_zeros},
};

const OpTable<KernelFn>& kernel_table() {
  static const OpTable<KernelFn> table(kKernels);
  return table;
}

} // namespace

const OpLayer& kernel_layer() { return kernel_table(); }

bool compute_view_strides(const Shape& oldshape, const Shape& oldstride, const Shape& newshape,
                          Shape* out) {
  if (oldshape.empty()) {
    *out = Shape(newshape.size(), 1);
    return true;
  }
  int64_t numel = checked_numel(oldshape);
  if (numel == 0 && oldshape == newshape) {
    *out = oldstride;
    return true;
  }
  Shape ns(newshape.size(), 0);
  if (numel == 0) {
    for (int64_t d = int64_t(newshape.size()) - 1; d >= 0; --d)
      ns[size_t(d)] = d == int64_t(newshape.size()) - 1
                          ? 1
                          : std::max<int64_t>(newshape[size_t(d) + 1], 1) * ns[size_t(d) + 1];
    *out = ns;
    return true;
  }
  int64_t view_d = int64_t(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = int64_t(oldshape.size()) - 1; td >= 0; --td) {
    tensor_numel *= oldshape[size_t(td)];
    if (td == 0 || (oldshape[size_t(td) - 1] != 1 &&
                    oldstride[size_t(td) - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[size_t(view_d)] == 1)) {
        ns[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= newshape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = oldstride[size_t(td) - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return false;
  *out = ns;
  return true;
}

KernelFn find_kernel(std::string_view target) { return kernel_table().find(target); }

std::vector<Tensor> run_kernel(const KernelCall& call) {
  assert(call.node.schema && "node without schema");
  KernelFn fn = find_kernel(call.node.target);
  if (!fn)
    if (const CustomOp* op = find_custom_op(call.node.target)) return run_custom_op_cpu(*op, call);
  if (!fn) throw TensorError("the reference interpreter has no kernel for " + call.node.target);
  return fn(call);
}

} // namespace fxc
