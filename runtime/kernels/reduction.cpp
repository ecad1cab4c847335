// Reference kernels of the reductions and scans: sum, mean, amax, any, argmax, softmax and
// log_softmax, cumsum, cumprod and logcumsumexp. Floats accumulate in double (the CPU's acc
// type), integers in wrapping int64.
#include "runtime/kernels/kernel_util.h"

namespace fxc::kernel_detail {
namespace {

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
    for (double& e : v) e = round_to_dtype(e, c.result_dtype(dt));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double acc = Kind == 0 ? 0.0 : Kind == 1 ? 1.0 : -INFINITY;
        for (int64_t k = 0; k < len; ++k) {
          size_t at = size_t((o * len + k) * inner + i);
          acc = Kind == 0 ? acc + v[at] : Kind == 1 ? acc * v[at] : log_add_exp(v[at], acc);
          v[at] = acc;
        }
      }
    return {make(c.result_dtype(dt), sizes, v)};
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

Tensors k_sum(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dt = c.arg("dtype");
  DType out = dt.is_none() ? (is_floating(x.dtype()) ? x.dtype() : DType::I64) : dt.dtype();
  out = c.result_dtype(out);
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
  DType out = c.result_dtype(dt.is_none() ? x.dtype() : dt.dtype());
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
  Tensor o = Tensor::empty(c.result_dtype(x.dtype()), L.out_shape);
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

// ---- Issue 18, reductions: amin, argmin, max/min, any/all, prod, var/std, logsumexp, norms ----

bool keepdim_of(const KernelCall& c) {
  return c.node.schema->index_of("keepdim") >= 0 && c.arg("keepdim").b;
}
const Arg& dim_arg(const KernelCall& c) {
  static const Arg none = Arg::none();
  return c.node.schema->index_of("dim") >= 0 ? c.arg("dim") : none;
}

// amin, and max()/min() over all elements (Min selects the minimum): NaN propagates.
template <bool Min> Tensors k_extreme(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  auto red = reduced_dims(x, dim_arg(c));
  ReduceLayout L = reduce_layout(x, red, keepdim_of(c));
  if (L.inner.empty())
    fail(std::string(Min ? "min" : "max") +
         "(): expected a non-empty input or reduction dims of non-zero size");
  Tensor o = Tensor::empty(c.result_dtype(x.dtype()), L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    if (is_floating(x.dtype())) {
      double m = Min ? INFINITY : -INFINITY;
      for (int64_t off : L.inner) {
        double v = x.load(L.outer[i] + off);
        m = Min ? nan_min(m, v) : nan_max(m, v);
      }
      o.store(int64_t(i), m);
    } else {
      int64_t m = Min ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
      for (int64_t off : L.inner) {
        int64_t v = x.load_int(L.outer[i] + off);
        m = Min ? std::min(m, v) : std::max(m, v);
      }
      o.store_int(int64_t(i), m);
    }
  }
  return {o};
}

// The position of the first extreme element of each reduced row (the first NaN, if any).
template <bool Min> std::vector<int64_t> arg_extreme(const Tensor& x, const ReduceLayout& L) {
  std::vector<int64_t> out(L.outer.size(), 0);
  const bool fl = is_floating(x.dtype());
  for (size_t i = 0; i < L.outer.size(); ++i) {
    double best = 0;
    int64_t ibest = 0, arg = -1;
    for (size_t j = 0; j < L.inner.size(); ++j) {
      int64_t at = L.outer[i] + L.inner[j];
      if (fl) {
        double v = x.load(at);
        if (arg >= 0 && std::isnan(best)) break;
        if (arg < 0 || std::isnan(v) || (Min ? v < best : v > best)) {
          best = v;
          arg = int64_t(j);
        }
      } else {
        int64_t v = x.load_int(at);
        if (arg < 0 || (Min ? v < ibest : v > ibest)) {
          ibest = v;
          arg = int64_t(j);
        }
      }
    }
    out[i] = arg;
  }
  return out;
}

Tensors k_argmin(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dim = c.arg("dim");
  if (x.numel() == 0)
    fail("argmin(): expected reduction dim to be specified for input.numel() == 0");
  std::vector<bool> red = dim.is_none() ? std::vector<bool>(size_t(x.dim()), true)
                                        : reduced_dims(x, Arg::of_ints({dim.i}));
  ReduceLayout L = reduce_layout(x, red, c.arg("keepdim").b);
  Tensor o = Tensor::empty(DType::I64, L.out_shape);
  std::vector<int64_t> a = arg_extreme<true>(x, L);
  for (size_t i = 0; i < a.size(); ++i) o.store_int(int64_t(i), a[i]);
  return {o};
}

// max.dim / min.dim: (values, indices of the first extreme element).
template <bool Min> Tensors k_extreme_dim(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  ReduceLayout L =
      reduce_layout(x, reduced_dims(x, Arg::of_ints({c.arg("dim").i})), c.arg("keepdim").b);
  if (L.inner.empty() && !L.outer.empty())
    fail(std::string(Min ? "min" : "max") + "(): expected reduction dim to have non-zero size");
  std::vector<int64_t> a = arg_extreme<Min>(x, L);
  Tensor v = Tensor::empty(c.result_dtype(x.dtype()), L.out_shape);
  Tensor idx = Tensor::empty(DType::I64, L.out_shape);
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t at = L.outer[i] + L.inner[size_t(a[i])];
    if (is_floating(x.dtype()))
      v.store(int64_t(i), x.load(at));
    else
      v.store_int(int64_t(i), x.load_int(at));
    idx.store_int(int64_t(i), a[i]);
  }
  return {v, idx};
}

// any / all (.default, .dim, .dims).
template <bool All> Tensors k_any_all(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  ReduceLayout L = reduce_layout(x, reduced_dims(x, dim_arg(c)), keepdim_of(c));
  Tensor o = Tensor::empty(x.dtype() == DType::U8 ? DType::U8 : DType::Bool, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    bool r = All;
    for (int64_t off : L.inner) {
      bool nz = x.load(L.outer[i] + off) != 0;
      r = All ? r && nz : r || nz;
    }
    o.store_int(int64_t(i), r);
  }
  return {o};
}

Tensors k_prod(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dt = c.arg("dtype");
  DType out =
      c.result_dtype(dt.is_none() ? (is_floating(x.dtype()) ? x.dtype() : DType::I64) : dt.dtype());
  ReduceLayout L = reduce_layout(x, reduced_dims(x, dim_arg(c)), keepdim_of(c));
  Tensor o = Tensor::empty(out, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    if (is_floating(out)) {
      double p = 1;
      for (int64_t off : L.inner) p *= round_to_dtype(x.load(L.outer[i] + off), out);
      o.store(int64_t(i), p);
    } else {
      int64_t p = 1;
      for (int64_t off : L.inner) p = wrap_mul(p, cast_int(x.load_int(L.outer[i] + off), out));
      o.store_int(int64_t(i), p);
    }
  }
  return {o};
}

// The correction of var/std: .correction's Scalar? (None is 1), .dim's unbiased flag.
double correction_of(const KernelCall& c) {
  if (c.node.schema->index_of("unbiased") >= 0) return c.arg("unbiased").b ? 1.0 : 0.0;
  const Arg& a = c.arg("correction");
  return a.is_none() ? 1.0 : a.scalar();
}

// var / std / var_mean: two-pass in double; the divisor is max(0, N - correction).
template <int Kind> // 0 var, 1 std, 2 var_mean, 3 std_mean
Tensors k_var(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (!is_floating(x.dtype()))
    fail("std and var only support floating point and complex dtypes, got " + dname(x.dtype()));
  ReduceLayout L = reduce_layout(x, reduced_dims(x, c.arg("dim")), c.arg("keepdim").b);
  const double corr = correction_of(c);
  DType out = c.result_dtype(x.dtype());
  Tensor v = Tensor::empty(out, L.out_shape), m = Tensor::empty(out, L.out_shape);
  const double n = double(L.inner.size());
  for (size_t i = 0; i < L.outer.size(); ++i) {
    double s = 0;
    for (int64_t off : L.inner) s += x.load(L.outer[i] + off);
    double mean = s / n, ss = 0;
    for (int64_t off : L.inner) {
      double d = x.load(L.outer[i] + off) - mean;
      ss += d * d;
    }
    double var = ss / std::max(0.0, n - corr);
    v.store(int64_t(i), Kind == 1 || Kind == 3 ? std::sqrt(var) : var);
    m.store(int64_t(i), mean);
  }
  if (Kind >= 2) return {v, m};
  return {v};
}

// logsumexp: log(sum(exp(x - m))) + m with m the maximum (0 when it is infinite).
Tensors k_logsumexp(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  DType out = c.result_dtype(is_floating(x.dtype()) ? x.dtype() : c.default_float());
  ReduceLayout L = reduce_layout(x, reduced_dims(x, c.arg("dim")), c.arg("keepdim").b);
  Tensor o = Tensor::empty(out, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    double m = -INFINITY;
    for (int64_t off : L.inner) m = nan_max(m, round_to_dtype(x.load(L.outer[i] + off), out));
    if (std::isinf(m)) m = 0;
    double s = 0;
    for (int64_t off : L.inner) s += std::exp(round_to_dtype(x.load(L.outer[i] + off), out) - m);
    o.store(int64_t(i), std::log(s) + m);
  }
  return {o};
}

// linalg_vector_norm: ord 0 counts non-zeros, +-inf is the max/min of |x|, else
// (sum |x|^ord)^(1/ord). An explicit dtype converts the input first.
Tensors k_vector_norm(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (!is_floating(x.dtype()))
    fail("linalg.vector_norm: Expected a floating point or complex tensor as input. Got " +
         dname(x.dtype()));
  const Arg& dt = c.arg("dtype");
  DType out = c.result_dtype(dt.is_none() ? x.dtype() : dt.dtype());
  const double p = c.arg("ord").scalar();
  ReduceLayout L = reduce_layout(x, reduced_dims(x, c.arg("dim")), c.arg("keepdim").b);
  if (L.inner.empty() && !L.outer.empty() && (p < 0 || std::isinf(p)))
    fail("linalg.vector_norm cannot compute the " + std::to_string(p) +
         " norm on an empty tensor because the operation does not have an identity");
  Tensor o = Tensor::empty(out, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    double r = p == INFINITY ? 0 : p == -INFINITY ? INFINITY : 0;
    for (int64_t off : L.inner) {
      double a = std::fabs(round_to_dtype(x.load(L.outer[i] + off), out));
      if (p == INFINITY)
        r = nan_max(r, a);
      else if (p == -INFINITY)
        r = nan_min(r, a);
      else if (p == 0)
        r += a != 0 ? 1.0 : (std::isnan(a) ? a : 0.0);
      else if (p == 1)
        r += a;
      else if (p == 2)
        r += a * a;
      else
        r += std::pow(a, p);
    }
    if (p == 2)
      r = std::sqrt(r);
    else if (p != 0 && p != 1 && !std::isinf(p))
      r = std::pow(r, 1.0 / p);
    o.store(int64_t(i), r);
  }
  return {o};
}
// count_nonzero: i64 counts of non-zero elements (NaN counts) over dim (None: all), or a list.
Tensors k_count_nonzero(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  ReduceLayout L = reduce_layout(x, reduced_dims(x, c.arg("dim")), false);
  Tensor o = Tensor::empty(DType::I64, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    int64_t k = 0;
    for (int64_t off : L.inner) k += x.load(L.outer[i] + off) != 0;
    o.store_int(int64_t(i), k);
  }
  return {o};
}

// nansum: sum with NaN read as zero.
Tensors k_nansum(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dt = c.arg("dtype");
  DType out =
      c.result_dtype(dt.is_none() ? (is_floating(x.dtype()) ? x.dtype() : DType::I64) : dt.dtype());
  ReduceLayout L = reduce_layout(x, reduced_dims(x, c.arg("dim")), c.arg("keepdim").b);
  Tensor o = Tensor::empty(out, L.out_shape);
  for (size_t i = 0; i < L.outer.size(); ++i) {
    if (is_floating(out)) {
      double s = 0;
      for (int64_t off : L.inner) {
        double v = round_to_dtype(x.load(L.outer[i] + off), out);
        if (!std::isnan(v)) s += v;
      }
      o.store(int64_t(i), s);
    } else {
      int64_t s = 0;
      for (int64_t off : L.inner) s = wrap_add(s, x.load_int(L.outer[i] + off));
      o.store_int(int64_t(i), s);
    }
  }
  return {o};
}

// cummax / cummin along dim: the running extreme and where it was last reached (ties take the
// later index, a NaN sticks), as PyTorch's CPU kernel (greater_equal / less_equal).
template <bool Min> Tensors k_cumextreme(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const int64_t d = x.dim() == 0 ? 0 : wrap(c.arg("dim").i, x.dim());
  std::vector<bool> red(size_t(x.dim()), false);
  if (x.dim() > 0) red[size_t(d)] = true;
  ReduceLayout L = reduce_layout(x, red, true);
  ReduceLayout O = reduce_layout(x.sizes(), contiguous_strides(x.sizes()), red, true);
  Tensor v = Tensor::empty(c.result_dtype(x.dtype()), x.sizes()),
         idx = Tensor::empty(DType::I64, x.sizes());
  const bool fl = is_floating(x.dtype());
  for (size_t i = 0; i < L.outer.size(); ++i) {
    double best = 0;
    int64_t ibest = 0, at = 0;
    for (size_t j = 0; j < L.inner.size(); ++j) {
      int64_t src = L.outer[i] + L.inner[j], dst = O.outer[i] + O.inner[j];
      if (fl) {
        double e = x.load(src);
        if (j == 0 || std::isnan(e) || (!std::isnan(best) && (Min ? e <= best : e >= best))) {
          best = e;
          at = int64_t(j);
        }
        v.store(dst, best);
      } else {
        int64_t e = x.load_int(src);
        if (j == 0 || (Min ? e <= ibest : e >= ibest)) {
          ibest = e;
          at = int64_t(j);
        }
        v.store_int(dst, ibest);
      }
      idx.store_int(dst, at);
    }
  }
  return {v, idx};
}
// End of the issue-18 reductions.

// ---- Issue 18, sorting: sort (always stable, as on CPU), argsort, topk ----

// The order of each row along `dim`: NaN sorts above every number; equal keys keep their
// positions (stable), in both directions.
struct SortResult {
  Tensor values, indices;
};
SortResult sort_rows(const KernelCall& c, const Tensor& x, int64_t dim, bool descending,
                     int64_t k) {
  const int64_t d = x.dim() == 0 ? 0 : wrap(dim, x.dim());
  std::vector<bool> red(size_t(x.dim()), false);
  if (x.dim() > 0) red[size_t(d)] = true;
  ReduceLayout L = reduce_layout(x, red, true);
  const int64_t len = int64_t(L.inner.size());
  if (k < 0) k = len;
  Shape out = x.sizes();
  if (x.dim() > 0) out[size_t(d)] = k;
  // Row-major output offsets: outer index o, position j -> the same layout as the input rows.
  std::vector<bool> red_out = red;
  ReduceLayout O = reduce_layout(out, contiguous_strides(out), red_out, true);
  SortResult r{Tensor::empty(c.result_dtype(x.dtype()), out), Tensor::empty(DType::I64, out)};
  const bool fl = is_floating(x.dtype());
  std::vector<int64_t> perm(static_cast<size_t>(len));
  std::vector<double> fv(static_cast<size_t>(len));
  std::vector<int64_t> iv(static_cast<size_t>(len));
  for (size_t i = 0; i < L.outer.size(); ++i) {
    for (int64_t j = 0; j < len; ++j) {
      int64_t at = L.outer[i] + L.inner[size_t(j)];
      if (fl)
        fv[size_t(j)] = x.load(at);
      else
        iv[size_t(j)] = x.load_int(at);
    }
    std::iota(perm.begin(), perm.end(), 0);
    auto less = [&](int64_t a, int64_t b) {
      if (!fl) return iv[size_t(a)] < iv[size_t(b)];
      double va = fv[size_t(a)], vb = fv[size_t(b)];
      if (std::isnan(vb)) return !std::isnan(va);
      return va < vb;
    };
    if (descending)
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return less(b, a); });
    else
      std::stable_sort(perm.begin(), perm.end(), less);
    for (int64_t j = 0; j < k; ++j) {
      int64_t src = perm[size_t(j)], dst = O.outer[i] + O.inner[size_t(j)];
      if (fl)
        r.values.store(dst, fv[size_t(src)]);
      else
        r.values.store_int(dst, iv[size_t(src)]);
      r.indices.store_int(dst, src);
    }
  }
  return r;
}

Tensors k_sort(const KernelCall& c) {
  SortResult r = sort_rows(c, c.tensor("self"), c.arg("dim").i, c.arg("descending").b, -1);
  return {r.values, r.indices};
}

Tensors k_argsort(const KernelCall& c) {
  return {sort_rows(c, c.tensor("self"), c.arg("dim").i, c.arg("descending").b, -1).indices};
}

// topk: the k largest (or smallest) along dim, in sorted order; ties keep index order.
Tensors k_topk(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  int64_t k = c.arg("k").i;
  int64_t len = x.dim() == 0 ? 1 : x.size(wrap(c.arg("dim").i, x.dim()));
  if (k < 0 || k > len) fail("selected index k out of range");
  SortResult r = sort_rows(c, x, c.arg("dim").i, c.arg("largest").b, k);
  return {r.values, r.indices};
}
// End of the issue-18 sorting.

// ---- Softmax and normalisation ----

// `safe` (_safe_softmax): a row whose elements are all -inf gives zeros instead of NaN.
Tensor softmax_impl(const Tensor& in, int64_t dim, DType out_dtype, bool log, bool safe = false) {
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
    const bool masked = safe && mx == -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < row.size(); ++j)
      yv[size_t(O.outer[i] + O.inner[j])] = masked ? 0.0
                                            : log  ? row[j] - mx - std::log(s)
                                                   : std::exp(row[j] - mx) / s;
  }
  return make(out_dtype, in.sizes(), yv);
}

Tensors softmax_family(const KernelCall& c, bool log, bool safe = false) {
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
  out = c.result_dtype(out);
  bool cast_first = c.node.schema->index_of("dtype") >= 0 && !c.arg("dtype").is_none();
  if (!is_floating(out) || (!is_floating(x.dtype()) && !cast_first))
    fail(std::string(log ? "log_softmax" : "softmax") + " is not implemented for " +
         dname(x.dtype()) + " tensors");
  // An explicit dtype converts the input first (as PyTorch does); half_to_float only widens.
  if (cast_first) x = x.to(out);
  return {softmax_impl(x, c.arg("dim").i, out, log, safe)};
}

Tensors k_softmax(const KernelCall& c) {
  return softmax_family(c, false);
}
Tensors k_log_softmax(const KernelCall& c) {
  return softmax_family(c, true);
}
Tensors k_safe_softmax(const KernelCall& c) {
  return softmax_family(c, false, true);
}

// _softmax_backward_data: output * (grad - sum(grad * output, dim)), in input_dtype.
Tensors k_softmax_backward_data(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_output");
  const Tensor& y = c.tensor("output");
  if (go.sizes() != y.sizes())
    fail("grad_output " + shape_str(go.sizes()) + " and output " + shape_str(y.sizes()) +
         " must have the same sizes");
  DType dt = c.result_dtype(c.arg("input_dtype").dtype());
  if (!is_floating(dt) || !is_floating(y.dtype()))
    fail("softmax backward is not implemented for " + dname(y.dtype()) + " tensors");
  int64_t d = wrap(c.arg("dim").i, y.dim());
  std::vector<bool> red(size_t(y.dim()), false);
  if (y.dim() > 0) red[size_t(d)] = true;
  ReduceLayout O = reduce_layout(y.sizes(), contiguous_strides(y.sizes()), red, true);
  std::vector<double> gv = values(go), yv = values(y), r(yv.size());
  for (size_t i = 0; i < O.outer.size(); ++i) {
    double s = 0;
    for (int64_t off : O.inner) s += gv[size_t(O.outer[i] + off)] * yv[size_t(O.outer[i] + off)];
    for (int64_t off : O.inner) {
      size_t k = size_t(O.outer[i] + off);
      r[k] = yv[k] * (gv[k] - s);
    }
  }
  return {make(dt, y.sizes(), r)};
}

const OpTable<KernelFn>::Row kReductionKernels[] = {
    {OpId::_log_softmax, k_log_softmax},
    {OpId::_softmax, k_softmax},
    {OpId::_safe_softmax, k_safe_softmax},
    {OpId::_softmax_backward_data, k_softmax_backward_data},
    {OpId::amax, k_amax},
    {OpId::any_dim, k_any},
    {OpId::argmax, k_argmax},
    {OpId::cumprod, k_scan<1>},
    {OpId::cumsum, k_scan<0>},
    {OpId::logcumsumexp, k_scan<2>},
    {OpId::log_softmax_int, k_log_softmax},
    {OpId::mean, k_mean},
    {OpId::mean_dim, k_mean},
    {OpId::softmax_int, k_softmax},
    {OpId::sum, k_sum},
    {OpId::sum_dim_IntList, k_sum},
    {OpId::all, k_any_all<true>},
    {OpId::all_dim, k_any_all<true>},
    {OpId::all_dims, k_any_all<true>},
    {OpId::amin, k_extreme<true>},
    {OpId::any, k_any_all<false>},
    {OpId::any_dims, k_any_all<false>},
    {OpId::argmin, k_argmin},
    {OpId::linalg_vector_norm, k_vector_norm},
    {OpId::logsumexp, k_logsumexp},
    {OpId::max, k_extreme<false>},
    {OpId::max_dim, k_extreme_dim<false>},
    {OpId::min, k_extreme<true>},
    {OpId::min_dim, k_extreme_dim<true>},
    {OpId::prod, k_prod},
    {OpId::prod_dim_int, k_prod},
    {OpId::std_correction, k_var<1>},
    {OpId::std_dim, k_var<1>},
    {OpId::var_correction, k_var<0>},
    {OpId::var_dim, k_var<0>},
    {OpId::var_mean_correction, k_var<2>},
    {OpId::count_nonzero, k_count_nonzero},
    {OpId::count_nonzero_dim_IntList, k_count_nonzero},
    {OpId::cummax, k_cumextreme<false>},
    {OpId::cummin, k_cumextreme<true>},
    {OpId::nansum, k_nansum},
    {OpId::std_mean_correction, k_var<3>},
    {OpId::argsort, k_argsort},
    {OpId::argsort_stable, k_argsort},
    {OpId::sort, k_sort},
    {OpId::sort_stable, k_sort},
    {OpId::topk, k_topk},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> reduction_kernels() {
  return kReductionKernels;
}

} // namespace fxc::kernel_detail
