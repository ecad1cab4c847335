// Reference kernels of the factories (full, zeros, scalar_tensor, new_zeros, full_like, arange)
// and of _assert_tensor_metadata.
#include "runtime/kernels/kernel_util.h"

namespace fxc::kernel_detail {
namespace {

Tensors k_assert_tensor_metadata(const KernelCall& c) {
  const Tensor& a = c.tensor("a");
  const Arg& size = c.arg("size");
  if (!size.is_none() && size.ints != a.sizes())
    fail("tensor metadata mismatch: expected size " + shape_str(size.ints) + ", got " +
         shape_str(a.sizes()));
  const Arg& dt = c.arg("dtype");
  if (!dt.is_none() && c.result_dtype(dt.dtype()) != a.dtype())
    fail("tensor metadata mismatch: expected dtype " + dname(c.result_dtype(dt.dtype())) +
         ", got " + dname(a.dtype()));
  // Strides are deliberately not compared: reference kernels return contiguous results where
  // PyTorch may return another layout with the same values.
  return {};
}
// ---- Factories ----

DType factory_dtype(const KernelCall& c, DType fallback) {
  const Arg& dt = c.arg("dtype");
  return c.result_dtype(dt.is_none() ? fallback : dt.dtype());
}

Tensors k_full(const KernelCall& c) {
  const Arg& v = c.arg("fill_value");
  return {
      filled(factory_dtype(c, wrapped_number_dtype(v, c.default_float())), c.arg("size").ints, v)};
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

// ones, empty.memory_format (zero-filled: the reference interpreter has no uninitialized memory),
// their _like and new_ forms, and new_full.
Tensors k_ones(const KernelCall& c) {
  return {filled(factory_dtype(c, c.default_float()), c.arg("size").ints, Arg::of_int(1))};
}
Tensors k_zeros_like(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {Tensor::empty(factory_dtype(c, x.dtype()), x.sizes())};
}
Tensors k_ones_like(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {filled(factory_dtype(c, x.dtype()), x.sizes(), Arg::of_int(1))};
}
Tensors k_new_ones(const KernelCall& c) {
  return {filled(factory_dtype(c, c.tensor("self").dtype()), c.arg("size").ints, Arg::of_int(1))};
}
Tensors k_new_full(const KernelCall& c) {
  return {
      filled(factory_dtype(c, c.tensor("self").dtype()), c.arg("size").ints, c.arg("fill_value"))};
}

// linspace: PyTorch's two-sided formula (start + i*step in the first half, end - (n-1-i)*step
// in the second), so both ends are exact.
Tensors k_linspace(const KernelCall& c) {
  int64_t n = c.arg("steps").i;
  if (n < 0) fail("number of steps must be non-negative");
  double a = c.arg("start").scalar(), b = c.arg("end").scalar();
  Tensor out = Tensor::empty(factory_dtype(c, c.default_float()), {n});
  double step = n > 1 ? (b - a) / double(n - 1) : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double v = i < n / 2 ? a + step * double(i) : b - step * double(n - 1 - i);
    if (is_floating(out.dtype()))
      out.store(i, v);
    else
      out.store_int(i, int64_t(v));
  }
  return {out};
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

const OpTable<KernelFn>::Row kFactoryKernels[] = {
    {OpId::_assert_tensor_metadata, k_assert_tensor_metadata},
    {OpId::arange, k_arange},
    {OpId::arange_start, k_arange},
    {OpId::arange_start_step, k_arange},
    {OpId::empty_like, k_zeros_like},
    {OpId::empty_memory_format, k_zeros},
    {OpId::empty_strided, k_zeros},
    {OpId::full, k_full},
    {OpId::full_like, k_full_like},
    {OpId::linspace, k_linspace},
    {OpId::new_empty, k_new_zeros},
    {OpId::new_full, k_new_full},
    {OpId::new_ones, k_new_ones},
    {OpId::new_zeros, k_new_zeros},
    {OpId::ones, k_ones},
    {OpId::ones_like, k_ones_like},
    {OpId::scalar_tensor, k_scalar_tensor},
    {OpId::zeros, k_zeros},
    {OpId::zeros_like, k_zeros_like},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> factory_kernels() {
  return kFactoryKernels;
}

} // namespace fxc::kernel_detail
