// Meta functions of the random ops (rand, randn, randint, randperm, their _like forms,
// bernoulli, native_dropout, the in-place distributions) and of native_dropout_backward:
// contiguous outputs of the requested dtype (rand and randn: a floating one), the layout of the
// input for the _like forms, self for the in-place ones.
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

Device device_of(const Ctx& c) {
  return c.opt_device("device").value_or(Device{});
}

/// rand, randn: a floating dtype, float32 unless asked.
Metas rand(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  DType dt = c.opt_dtype("dtype").value_or(DType::F32);
  if (!is_floating(dt))
    c.fail(std::string(n.target) + " is not implemented for " + std::string(dtype_name(dt)) +
           " (a floating dtype is required)");
  return {make(dt, sz, device_of(c))};
}

Metas rand_like(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = c.opt_dtype("dtype").value_or(x.dtype);
  if (!is_floating(dt))
    c.fail(std::string(n.target) + " is not implemented for " + std::string(dtype_name(dt)) +
           " (a floating dtype is required)");
  TensorMeta out = make_format(dt, x.sizes, x.device,
                               c.memory_format("memory_format", MemoryFormat::Preserve), &x);
  out.device = c.opt_device("device").value_or(x.device);
  return {out};
}

/// randint, randint.low: int64 unless asked; low < high.
Metas randint(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  int64_t low = c.has_arg("low") ? c.int_("low") : 0, high = c.int_("high");
  if (low >= high)
    c.fail("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(low) +
           " >= to=" + std::to_string(high));
  DType dt = c.opt_dtype("dtype").value_or(DType::I64);
  if (dt == DType::Bool) c.fail("randint is not implemented for bool");
  return {make(dt, sz, device_of(c))};
}

Metas randperm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  int64_t len = c.int_("n");
  if (len < 0) c.fail("n must be non-negative, got " + std::to_string(len));
  DType dt = c.opt_dtype("dtype").value_or(DType::I64);
  if (dt == DType::Bool) c.fail("randperm is not implemented for bool");
  return {make(dt, {len}, device_of(c))};
}

/// bernoulli (p = the elements of self, floating), bernoulli.p (p in [0, 1]): self's dtype
/// and sizes, contiguous.
Metas bernoulli(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (c.has_arg("p")) {
    double p = c.float_("p");
    if (!(p >= 0 && p <= 1))
      c.fail("bernoulli_ expects p to be in [0, 1], but got p=" + std::to_string(p));
  } else if (!is_floating(x.dtype)) {
    c.fail("bernoulli is not implemented for " + std::string(dtype_name(x.dtype)) +
           " (the probabilities must be floating)");
  }
  return {make(x.dtype, x.sizes, x.device)};
}

/// native_dropout: (output, mask): the input's sizes, contiguous; the mask is bool.
Metas native_dropout(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  double p = c.float_("p");
  if (!(p >= 0 && p <= 1))
    c.fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  bool train = c.arg("train").is_none() || c.bool_("train");
  if (train && !is_floating(x.dtype))
    c.fail("native_dropout is not implemented for " + std::string(dtype_name(x.dtype)) + " inputs");
  return {make(x.dtype, x.sizes, x.device), make(DType::Bool, x.sizes, x.device)};
}

Metas native_dropout_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& gr = c.tensor("grad_output");
  const TensorMeta& m = c.tensor("mask");
  if (m.dtype != DType::Bool)
    c.fail("native_dropout_backward: mask must be bool, got " + std::string(dtype_name(m.dtype)));
  if (gr.dtype == DType::Bool)
    c.fail("native_dropout_backward is not implemented for " + std::string(dtype_name(gr.dtype)) +
           " gradients");
  if (m.sizes != gr.sizes)
    c.fail("native_dropout_backward: mask " + format_meta(m) + " and grad_output " +
           format_meta(gr) + " differ in size");
  c.float_("scale");
  // grad * mask * scale: a float scale makes an integral gradient float32
  return {make(is_floating(gr.dtype) ? gr.dtype : DType::F32, gr.sizes, gr.device)};
}

/// The in-place distributions (uniform_, normal_, ...): self, which they overwrite.
Metas random_inplace(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {c.tensor("self")};
}

const OpTable<MetaFn>::Row kRandomMeta[] = {
    {OpId::bernoulli, guarded<bernoulli>},
    {OpId::bernoulli_p, guarded<bernoulli>},
    {OpId::cauchy_, guarded<random_inplace>},
    {OpId::exponential_, guarded<random_inplace>},
    {OpId::geometric_, guarded<random_inplace>},
    {OpId::log_normal_, guarded<random_inplace>},
    {OpId::native_dropout, guarded<native_dropout>},
    {OpId::native_dropout_backward, guarded<native_dropout_backward>},
    {OpId::normal_, guarded<random_inplace>},
    {OpId::rand, guarded<rand>},
    {OpId::rand_like, guarded<rand_like>},
    {OpId::randint, guarded<randint>},
    {OpId::randint_low, guarded<randint>},
    {OpId::randn, guarded<rand>},
    {OpId::randn_like, guarded<rand_like>},
    {OpId::randperm, guarded<randperm>},
    {OpId::uniform_, guarded<random_inplace>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> random_meta() {
  return kRandomMeta;
}

} // namespace fxc::meta_detail
