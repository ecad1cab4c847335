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
  const TensorMeta& x = c.tensor("self");
  std::vector<bool> mask;
  if (auto d = c.opt_int("dim")) {
    mask = c.dim_mask({*d}, x.dim());
    zero_numel_check(c, x, mask, "argmax");
  } else {
    if (x.numel() == 0)
      c.fail("argmax(): expected reduction dim to be specified for input.numel() == 0");
    mask = all_dims(x.dim());
  }
  return {make(DType::I64, reduce_shape(x.sizes, mask, c.bool_("keepdim")), x.device)};
}

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
    {OpId::sum, guarded<sum_default>},
    {OpId::sum_dim_IntList, guarded<sum_dim>},
    {OpId::cumsum, guarded<cumsum>},
    {OpId::cumprod, guarded<cumsum>},
    {OpId::logcumsumexp, guarded<logcumsumexp>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> reduction_meta() { return kReductionMeta; }

} // namespace fxc::meta_detail
