// Lowering rules of the factories: full, zeros, scalar_tensor, full_like, new_zeros and arange
// as constant or index-valued expressions.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

/// full, zeros, scalar_tensor, full_like, new_zeros: a constant of the output's dtype.
/// _assert_tensor_metadata: checked here, at compile time, against the operand's metadata (its
/// size and dtype; strides are not compared, as the reference kernel does not); it computes
/// nothing, so no code runs for it.
void lower_assert_tensor_metadata(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const Arg& a = nd.arg("a");
  if (a.kind != Arg::Kind::Tensor) L.fail(n, "argument 'a' must be a tensor");
  const TensorMeta& m = L.g().values[a.tensor].meta;
  const Arg& size = nd.arg("size");
  if (size.kind == Arg::Kind::Ints && size.ints != m.sizes) {
    std::string s = "[";
    for (size_t i = 0; i < size.ints.size(); ++i)
      s += (i ? ", " : "") + std::to_string(size.ints[i]);
    L.fail(n, "tensor metadata mismatch: expected size " + s + "], got " + format_meta(m));
  }
  const Arg& dt = nd.arg("dtype");
  if (dt.kind == Arg::Kind::DType && dt.dtype() != m.dtype)
    L.fail(n, "tensor metadata mismatch: expected dtype " + std::string(dtype_name(dt.dtype())) +
                  ", got " + format_meta(m));
}

void constant_fill(Lowerer& L, int n, double v) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes, [&](auto&) { return v_const(v, m.dtype); }, {}));
}
void lower_full(Lowerer& L, int n) {
  constant_fill(L, n, L.node(n).arg("fill_value").scalar());
}
void lower_zeros(Lowerer& L, int n) {
  constant_fill(L, n, 0);
}
void lower_ones(Lowerer& L, int n) {
  constant_fill(L, n, 1);
}
void lower_scalar_tensor(Lowerer& L, int n) {
  constant_fill(L, n, L.node(n).arg("s").scalar());
}

void lower_arange(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  int si = nd.schema->index_of("start"), pi = nd.schema->index_of("step");
  double start = si >= 0 ? nd.args[si].scalar() : 0.0;
  double step = pi >= 0 ? nd.args[pi].scalar() : 1.0;
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr i = v_index(idx.empty() ? IndexExpr(0) : idx[0], t);
                             return v_binary(VOp::Add, v_const(start, t),
                                             v_binary(VOp::Mul, v_const(step, t), i));
                           },
                           {}));
}

/// linspace: start + i*step below steps/2, end - (steps-1-i)*step from there (PyTorch's formula).
void lower_linspace(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  int64_t steps = nd.arg("steps").i;
  double a = nd.arg("start").scalar(), b = nd.arg("end").scalar();
  double step = steps > 1 ? (b - a) / double(steps - 1) : 0.0;
  DType t = is_floating(m.dtype) && m.dtype != DType::F16 && m.dtype != DType::BF16 ? m.dtype
                                                                                    : DType::F64;
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             IndexExpr i = idx.empty() ? IndexExpr(0) : idx[0];
                             VPtr lo =
                                 v_binary(VOp::Add, v_const(a, t),
                                          v_binary(VOp::Mul, v_const(step, t), v_index(i, t)));
                             VPtr hi = v_binary(VOp::Sub, v_const(b, t),
                                                v_binary(VOp::Mul, v_const(step, t),
                                                         v_index(IndexExpr(steps - 1) - i, t)));
                             VPtr first = v_binary(VOp::Lt, v_index(i, DType::I64),
                                                   v_const(double(steps / 2), DType::I64));
                             return v_cast(v_where(first, lo, hi), m.dtype);
                           },
                           {}));
}

const OpTable<LowerFn>::Row kFactoryRules[] = {
    {OpId::_assert_tensor_metadata, lower_assert_tensor_metadata},
    {OpId::arange, lower_arange},
    {OpId::arange_start, lower_arange},
    {OpId::arange_start_step, lower_arange},
    {OpId::empty_like, lower_zeros},
    {OpId::empty_memory_format, lower_zeros},
    {OpId::empty_strided, lower_zeros},
    {OpId::full, lower_full},
    {OpId::full_like, lower_full},
    {OpId::linspace, lower_linspace},
    {OpId::new_empty, lower_zeros},
    {OpId::new_full, lower_full},
    {OpId::new_ones, lower_ones},
    {OpId::new_zeros, lower_zeros},
    {OpId::ones, lower_ones},
    {OpId::ones_like, lower_ones},
    {OpId::scalar_tensor, lower_scalar_tensor},
    {OpId::zeros, lower_zeros},
    {OpId::zeros_like, lower_zeros},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> factory_rules() {
  return kFactoryRules;
}

} // namespace fxc::lower_detail
