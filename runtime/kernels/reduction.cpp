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

const OpTable<KernelFn>::Row kReductionKernels[] = {
    {OpId::_log_softmax, k_log_softmax},
    {OpId::_softmax, k_softmax},
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
};

} // namespace

std::span<const OpTable<KernelFn>::Row> reduction_kernels() { return kReductionKernels; }

} // namespace fxc::kernel_detail
