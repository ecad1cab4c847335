// Meta functions of the reductions and scans: sum, mean, amax, any, argmax, softmax and
// log_softmax, cumsum, cumprod and logcumsumexp. Reduced outputs are contiguous; integer and bool
// sums accumulate in int64 unless a dtype is given, as in PyTorch.
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Issue 18, scans.

// cumsum: the input's sizes, contiguous; integers and bool accumulate in int64 unless a dtype
// is given.
Metas cumsum(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  DType dt = x.dtype;
  if (auto d = c.opt_dtype("dtype"))
    dt = *d;
  else if (!is_floating(dt))
    dt = DType::I64;
  return {make(dt, x.sizes, x.device)};
}
// logcumsumexp: floating inputs only (its loop has no integer types).
Metas logcumsumexp(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  if (!is_floating(x.dtype)) not_implemented(c, "logcumsumexp_out_cpu", x.dtype);
  return {make(x.dtype, x.sizes, x.device)};
}
// End of the issue-18 scans.

// ---------------------------------------------------------------------------------------------
// Reductions: contiguous outputs.

Sizes reduce_shape(const Sizes& in, const std::vector<bool>& mask, bool keepdim) {
  Sizes out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!mask[d])
      out.push_back(in[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

std::vector<bool> all_dims(int64_t rank) {
  return std::vector<bool>(size_t(rank), true);
}

// dim=None or dim=[] reduces every dimension.
std::vector<bool> reduce_mask(const Ctx& c, const TensorMeta& x, std::string_view name) {
  if (!c.has(name) || c.ints(name).empty()) return all_dims(x.dim());
  return c.dim_mask(c.ints(name), x.dim());
}

DType sum_dtype(const Ctx& c, const TensorMeta& x) {
  if (auto dt = c.opt_dtype("dtype")) return *dt;
  return is_floating(x.dtype) ? x.dtype : DType::I64;
}

Metas sum_default(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {make(sum_dtype(c, x), {}, x.device)};
}

Metas sum_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {make(sum_dtype(c, x), reduce_shape(x.sizes, reduce_mask(c, x, "dim"), c.bool_("keepdim")),
               x.device)};
}

DType mean_dtype(const Ctx& c, const TensorMeta& x) {
  auto dt = c.opt_dtype("dtype");
  if (dt && !is_floating(*dt))
    c.fail("mean(): could not infer output dtype. Optional dtype must be a floating point dtype, "
           "got " +
           std::string(dtype_name(*dt)));
  if (!dt && !is_floating(x.dtype))
    c.fail(
        "mean(): could not infer output dtype. Input dtype must be a floating point dtype, got " +
        format_meta(x));
  return dt ? *dt : x.dtype;
}

Metas mean_default(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {make(mean_dtype(c, x), {}, x.device)};
}

Metas mean_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = mean_dtype(c, x);
  return {make(dt, reduce_shape(x.sizes, reduce_mask(c, x, "dim"), c.bool_("keepdim")), x.device)};
}

void zero_numel_check(const Ctx& c, const TensorMeta& x, const std::vector<bool>& mask,
                      const char* op) {
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d] && x.sizes[d] == 0)
      c.fail(std::string(op) + "(): expected reduction dim " + std::to_string(d) +
             " to have non-zero size, input is " + format_meta(x));
  if (x.dim() == 0 && x.numel() == 0) c.fail(std::string(op) + "(): input is empty");
}

Metas amax(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  auto mask = reduce_mask(c, x, "dim");
  zero_numel_check(c, x, mask, "amax");
  return {make(x.dtype, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

Metas any_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  auto mask = c.dim_mask({c.int_("dim")}, x.dim());
  DType dt = x.dtype == DType::U8 ? DType::U8 : DType::Bool;
  return {make(dt, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

Metas argmax(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const char* op = n.target == "aten.argmin.default" ? "argmin" : "argmax";
  const TensorMeta& x = c.tensor("self");
  std::vector<bool> mask;
  if (auto d = c.opt_int("dim")) {
    mask = c.dim_mask({*d}, x.dim());
    zero_numel_check(c, x, mask, op);
  } else {
    if (x.numel() == 0)
      c.fail(std::string(op) + "(): expected reduction dim to be specified for input.numel() == 0");
    mask = all_dims(x.dim());
  }
  return {make(DType::I64, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

// ---------------------------------------------------------------------------------------------
// Issue 18, reductions: amin, argmin, max/min (whole tensor and .dim), any/all, prod, var/std,
// var_mean, logsumexp and linalg_vector_norm.

Metas amin(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  auto mask = reduce_mask(c, x, "dim");
  zero_numel_check(c, x, mask, "amin");
  return {make(x.dtype, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

// max() / min() over every element: a 0-dim result; an empty input is an error.
Metas max_all(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.numel() == 0)
    c.fail(std::string(n.target == "aten.min.default" ? "min" : "max") +
           "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
           "reduction dim with the 'dim' argument.");
  return {make(x.dtype, {}, x.device)};
}

// max.dim / min.dim: (values, indices).
Metas max_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  auto mask = c.dim_mask({c.int_("dim")}, x.dim());
  zero_numel_check(c, x, mask, n.target == "aten.min.dim" ? "min" : "max");
  Sizes out = reduce_shape(x.sizes, mask, c.bool_("keepdim"));
  return {make(x.dtype, out, x.device), make(DType::I64, out, x.device)};
}

// any / all (.default, .dim, .dims): bool results, u8 for u8 inputs.
Metas any_all(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  std::vector<bool> mask = all_dims(x.dim());
  bool keepdim = false;
  if (c.has_arg("dim")) {
    const Arg& a = c.arg("dim");
    if (a.kind == Arg::Kind::Int)
      mask = c.dim_mask({a.i}, x.dim());
    else
      mask = reduce_mask(c, x, "dim");
    keepdim = c.bool_("keepdim");
  }
  DType dt = x.dtype == DType::U8 ? DType::U8 : DType::Bool;
  return {make(dt, reduce_shape(x.sizes, mask, keepdim), x.device)};
}

Metas prod(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = sum_dtype(c, x);
  if (!c.has_arg("dim")) return {make(dt, {}, x.device)};
  auto mask = c.dim_mask({c.int_("dim")}, x.dim());
  return {make(dt, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

// var / std (.correction, .dim) and var_mean: floating inputs; dim None or [] reduces all.
Metas var_like(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (!is_floating(x.dtype))
    c.fail("std and var only support floating point and complex dtypes, but " + c.desc("self"));
  if (c.has_arg("correction") && c.has("correction")) {
    const Arg& a = c.arg("correction");
    if (a.kind != Arg::Kind::Int && a.kind != Arg::Kind::Float && a.kind != Arg::Kind::Bool)
      c.fail("argument 'correction' must be a number");
  }
  Sizes out = reduce_shape(x.sizes, reduce_mask(c, x, "dim"), c.bool_("keepdim"));
  Metas r = {make(x.dtype, out, x.device)};
  if (n.target == "aten.var_mean.correction" || n.target == "aten.std_mean.correction")
    r.push_back(make(x.dtype, out, x.device));
  return r;
}

// logsumexp: integer inputs compute in the default float dtype.
Metas logsumexp(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = is_floating(x.dtype) ? x.dtype : DType::F32;
  return {make(dt, reduce_shape(x.sizes, reduce_mask(c, x, "dim"), c.bool_("keepdim")), x.device)};
}

// linalg_vector_norm(self, ord, dim, keepdim, dtype): floating inputs; a negative or zero ord
// (other than -inf) has no identity, so an empty reduction is an error for it.
Metas vector_norm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (!is_floating(x.dtype))
    c.fail("linalg.vector_norm: Expected a floating point or complex tensor as input, but " +
           c.desc("self"));
  DType dt = x.dtype;
  if (auto d = c.opt_dtype("dtype")) {
    if (!is_floating(*d)) c.fail("linalg.vector_norm: dtype should be floating point");
    dt = *d;
  }
  const Arg& ord = c.arg("ord");
  if (ord.kind != Arg::Kind::Int && ord.kind != Arg::Kind::Float)
    c.fail("linalg.vector_norm: argument 'ord' must be a number");
  auto mask = reduce_mask(c, x, "dim");
  if (ord.scalar() < 0 || std::isinf(ord.scalar())) {
    if (x.numel() == 0 && ord.scalar() != 0)
      for (size_t d = 0; d < mask.size(); ++d)
        if (mask[d] && x.sizes[d] == 0)
          c.fail("linalg.vector_norm cannot compute the " + std::to_string(ord.scalar()) +
                 " norm on the empty dimension " + std::to_string(d));
  }
  return {make(dt, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}
// count_nonzero (dim None / int, or a dim list): i64 counts.
Metas count_nonzero(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  std::vector<bool> mask = all_dims(x.dim());
  const Arg& a = c.arg("dim");
  if (a.kind == Arg::Kind::Int)
    mask = c.dim_mask({a.i}, x.dim());
  else if (a.kind == Arg::Kind::Ints && !a.ints.empty())
    mask = c.dim_mask(a.ints, x.dim());
  return {make(DType::I64, reduce_shape(x.sizes, mask, false), x.device)};
}

// nansum: sum's dtype rules.
Metas nansum(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {make(sum_dtype(c, x), reduce_shape(x.sizes, reduce_mask(c, x, "dim"), c.bool_("keepdim")),
               x.device)};
}

// cummax / cummin: (values, i64 indices) of the input's sizes.
Metas cummax(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  return {make(x.dtype, x.sizes, x.device), make(DType::I64, x.sizes, x.device)};
}
// End of the issue-18 reductions.

// ---------------------------------------------------------------------------------------------
// Issue 18, sorting: sort, argsort, topk. Contiguous outputs, i64 indices.

int64_t sort_dim(const Ctx& c, const TensorMeta& x) {
  return x.dim() == 0 ? 0 : c.dim(c.int_("dim"), x.dim());
}

Metas sort(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  sort_dim(c, x);
  return {make(x.dtype, x.sizes, x.device), make(DType::I64, x.sizes, x.device)};
}

Metas argsort(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  sort_dim(c, x);
  return {make(DType::I64, x.sizes, x.device)};
}

Metas topk(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  int64_t d = sort_dim(c, x);
  int64_t k = c.int_("k");
  int64_t len = x.dim() == 0 ? 1 : x.sizes[size_t(d)];
  if (k < 0 || k > len)
    c.fail("selected index k out of range: k is " + std::to_string(k) + " but the dimension has " +
           std::to_string(len) + " elements");
  Sizes out = x.sizes;
  if (x.dim() > 0) out[size_t(d)] = k;
  return {make(x.dtype, out, x.device), make(DType::I64, out, x.device)};
}
// End of the issue-18 sorting.

// _softmax / _log_softmax(self, dim, half_to_float)
Metas softmax_internal(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  if (!is_floating(x.dtype)) c.fail("softmax needs a floating point input, got " + format_meta(x));
  bool half_to_float = c.bool_("half_to_float");
  if (half_to_float && (x.dtype != DType::F16 || x.device.kind != Device::CUDA))
    c.fail("half_to_float is only supported for f16 inputs on CUDA");
  return {make(half_to_float ? DType::F32 : x.dtype, x.sizes, x.device)};
}

// softmax.int / log_softmax.int(self, dim, dtype)
Metas softmax_int(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim(c.int_("dim"), x.dim());
  DType dt = c.opt_dtype("dtype").value_or(x.dtype);
  if (!is_floating(dt))
    c.fail("softmax needs a floating point input or dtype, got " + format_meta(x));
  return {make(dt, x.sizes, x.device)};
}

// _softmax_backward_data(grad_output, output, dim, input_dtype): the gradient of softmax's
// input, in input_dtype.
Metas softmax_backward_data(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& go = c.tensor("grad_output");
  const TensorMeta& y = c.tensor("output");
  if (go.sizes != y.sizes)
    c.fail("grad_output " + format_meta(go) + " and output " + format_meta(y) +
           " must have the same sizes");
  c.dim(c.int_("dim"), y.dim());
  DType dt = c.arg("input_dtype").dtype();
  if (!is_floating(dt) || !is_floating(y.dtype))
    c.fail("softmax backward needs floating point tensors, got " + format_meta(y));
  return {make(dt, y.sizes, y.device)};
}

const OpTable<MetaFn>::Row kReductionMeta[] = {
    {OpId::_log_softmax, guarded<softmax_internal>},
    {OpId::_softmax, guarded<softmax_internal>},
    {OpId::amax, guarded<amax>},
    {OpId::any_dim, guarded<any_dim>},
    {OpId::argmax, guarded<argmax>},
    {OpId::log_softmax_int, guarded<softmax_int>},
    {OpId::mean, guarded<mean_default>},
    {OpId::mean_dim, guarded<mean_dim>},
    {OpId::softmax_int, guarded<softmax_int>},
    {OpId::_safe_softmax, guarded<softmax_int>},
    {OpId::_softmax_backward_data, guarded<softmax_backward_data>},
    {OpId::sum, guarded<sum_default>},
    {OpId::sum_dim_IntList, guarded<sum_dim>},
    {OpId::cumsum, guarded<cumsum>},
    {OpId::cumprod, guarded<cumsum>},
    {OpId::logcumsumexp, guarded<logcumsumexp>},
    {OpId::all, guarded<any_all>},
    {OpId::all_dim, guarded<any_all>},
    {OpId::all_dims, guarded<any_all>},
    {OpId::amin, guarded<amin>},
    {OpId::any, guarded<any_all>},
    {OpId::any_dims, guarded<any_all>},
    {OpId::argmin, guarded<argmax>},
    {OpId::linalg_vector_norm, guarded<vector_norm>},
    {OpId::logsumexp, guarded<logsumexp>},
    {OpId::max, guarded<max_all>},
    {OpId::max_dim, guarded<max_dim>},
    {OpId::min, guarded<max_all>},
    {OpId::min_dim, guarded<max_dim>},
    {OpId::prod, guarded<prod>},
    {OpId::prod_dim_int, guarded<prod>},
    {OpId::std_correction, guarded<var_like>},
    {OpId::std_dim, guarded<var_like>},
    {OpId::var_correction, guarded<var_like>},
    {OpId::var_dim, guarded<var_like>},
    {OpId::var_mean_correction, guarded<var_like>},
    {OpId::count_nonzero, guarded<count_nonzero>},
    {OpId::count_nonzero_dim_IntList, guarded<count_nonzero>},
    {OpId::cummax, guarded<cummax>},
    {OpId::cummin, guarded<cummax>},
    {OpId::nansum, guarded<nansum>},
    {OpId::std_mean_correction, guarded<var_like>},
    {OpId::argsort, guarded<argsort>},
    {OpId::argsort_stable, guarded<argsort>},
    {OpId::sort, guarded<sort>},
    {OpId::sort_stable, guarded<sort>},
    {OpId::topk, guarded<topk>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> reduction_meta() {
  return kReductionMeta;
}

} // namespace fxc::meta_detail
