// Meta functions of the factories (full, zeros, scalar_tensor, new_zeros, full_like, arange)
// and of _assert_tensor_metadata: contiguous outputs of the requested dtype and device.
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Factories.

Device factory_device(const Ctx& c) {
  return c.opt_device("device").value_or(Device{});
}

Metas full(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  const Arg& v = c.arg("fill_value");
  DType dt = c.opt_dtype("dtype").value_or(scalar_dtype(v));
  return {make(dt, sz, factory_device(c))};
}

Metas zeros(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  return {make(c.opt_dtype("dtype").value_or(DType::F32), sz, factory_device(c))};
}

Metas empty_strided(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const Sizes& sz = c.ints("size");
  const Sizes& st = c.ints("stride");
  c.check_sizes(sz);
  if (st.size() != sz.size())
    c.fail("mismatch in length of strides and shape: " + join(sz) + " and " + join(st));
  for (int64_t v : st)
    if (v < 0) c.fail("empty_strided: negative strides are not supported, got " + join(st));
  return {make_strided(c.opt_dtype("dtype").value_or(DType::F32), sz, st, factory_device(c))};
}

Metas linspace(const Graph& g, const Node& n) {
  Ctx c(g, n);
  int64_t steps = c.int_("steps");
  if (steps < 0) c.fail("number of steps must be non-negative");
  for (const char* a : {"start", "end"})
    if (!is_scalar_kind(c.arg(a).kind))
      c.fail("linspace expects numbers, got " + std::string(arg_kind_name(c.arg(a).kind)));
  return {make(c.opt_dtype("dtype").value_or(DType::F32), {steps}, factory_device(c))};
}

Metas scalar_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {make(c.opt_dtype("dtype").value_or(DType::F32), {}, factory_device(c))};
}

Metas new_zeros(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& sz = c.ints("size");
  c.check_sizes(sz);
  return {
      make(c.opt_dtype("dtype").value_or(x.dtype), sz, c.opt_device("device").value_or(x.device))};
}

Metas full_like(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = c.opt_dtype("dtype").value_or(x.dtype);
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Preserve);
  TensorMeta out = make_format(dt, x.sizes, x.device, mf, &x);
  out.device = c.opt_device("device").value_or(x.device);
  return {out};
}

Metas arange(const Graph& g, const Node& n) {
  Ctx c(g, n);
  int si = n.schema ? n.schema->index_of("start") : -1;
  int pi = n.schema ? n.schema->index_of("step") : -1;
  Arg start = si >= 0 ? c.arg("start") : Arg::of_int(0);
  Arg end = c.arg("end");
  Arg step = pi >= 0 ? c.arg("step") : Arg::of_int(1);
  for (const Arg* a : {&start, &end, &step})
    if (!is_scalar_kind(a->kind))
      c.fail("arange expects numbers, got " + std::string(arg_kind_name(a->kind)));
  bool any_float = start.kind == Arg::Kind::Float || end.kind == Arg::Kind::Float ||
                   step.kind == Arg::Kind::Float;
  DType dt = c.opt_dtype("dtype").value_or(any_float ? DType::F32 : DType::I64);
  double xs = start.scalar(), xe = end.scalar(), xst = step.scalar();
  if (!std::isfinite(xs) || !std::isfinite(xe))
    c.fail("unsupported range: " + std::to_string(xs) + " -> " + std::to_string(xe));
  if (xst == 0) c.fail("step must be nonzero");
  if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
    c.fail("upper bound and larger bound inconsistent with step sign");
  double size_d;
  if (!is_floating(dt)) {
    // Integer arange: the bounds are truncated to integers first.
    for (double v : {xs, xe, xst})
      if (!(std::fabs(v) < 9.2e18))
        c.fail("arange bounds or step out of range for " + std::string(dtype_name(dt)));
    __int128 is = __int128(std::trunc(xs)), ie = __int128(std::trunc(xe)),
             ist = __int128(std::trunc(xst));
    if (ist == 0) c.fail("step must be nonzero");
    __int128 sgn = ist > 0 ? 1 : -1;
    size_d = double((ie - is + ist - sgn) / ist);
  } else {
    size_d = std::ceil((xe - xs) / xst);
  }
  if (!(size_d >= 0 && size_d <= 9.2e18)) c.fail("invalid size, possible overflow?");
  return {make(dt, {int64_t(size_d)}, factory_device(c))};
}

// ---------------------------------------------------------------------------------------------
// Assertions.

Metas assert_tensor_metadata(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = c.tensor("a");
  if (c.has("size") && c.ints("size") != a.sizes)
    c.fail("tensor size mismatch: expected " + join(c.ints("size")) + ", got " + format_meta(a));
  if (c.has("stride") && c.ints("stride") != a.strides)
    c.fail("tensor stride mismatch: expected " + join(c.ints("stride")) + ", got " +
           join(a.strides));
  if (auto dt = c.opt_dtype("dtype"); dt && *dt != a.dtype)
    c.fail("tensor dtype mismatch: expected " + std::string(dtype_name(*dt)) + ", got " +
           format_meta(a));
  if (auto dev = c.opt_device("device"); dev && dev->kind != a.device.kind)
    c.fail("tensor device mismatch: expected " + device_name(*dev) + ", got " +
           device_name(a.device));
  return {};
}

const OpTable<MetaFn>::Row kFactoryMeta[] = {
    {OpId::_assert_tensor_metadata, guarded<assert_tensor_metadata>},
    {OpId::arange, guarded<arange>},
    {OpId::arange_start, guarded<arange>},
    {OpId::arange_start_step, guarded<arange>},
    {OpId::empty_like, guarded<full_like>},
    {OpId::empty_memory_format, guarded<zeros>},
    {OpId::empty_strided, guarded<empty_strided>},
    {OpId::full, guarded<full>},
    {OpId::full_like, guarded<full_like>},
    {OpId::linspace, guarded<linspace>},
    {OpId::new_empty, guarded<new_zeros>},
    {OpId::new_full, guarded<new_zeros>},
    {OpId::new_ones, guarded<new_zeros>},
    {OpId::new_zeros, guarded<new_zeros>},
    {OpId::ones, guarded<zeros>},
    {OpId::ones_like, guarded<full_like>},
    {OpId::scalar_tensor, guarded<scalar_tensor>},
    {OpId::zeros, guarded<zeros>},
    {OpId::zeros_like, guarded<full_like>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> factory_meta() {
  return kFactoryMeta;
}

} // namespace fxc::meta_detail
