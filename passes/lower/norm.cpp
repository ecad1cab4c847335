// Lowering rules of the normalisations: layer norm (two-pass mean and variance, then the affine
// epilogue) and inference batch norm with running statistics.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

/// Layer norm over the trailing dims: two-pass mean and variance, then the affine epilogue.
void layer_norm(Lowerer& L, int n, bool native) {
  LVal& x0 = L.input(n, "input");
  const Node& nd = L.node(n);
  auto norm = nd.arg("normalized_shape").ints;
  double eps = nd.arg("eps").scalar();
  int64_t rank = int64_t(x0.sizes.size());
  if (int64_t(norm.size()) > rank) L.fail(n, "normalized_shape has more dims than the input");
  std::vector<int64_t> dims;
  int64_t cnt = 1;
  for (int64_t i = rank - int64_t(norm.size()); i < rank; ++i) {
    if (x0.sizes[i] != norm[i - (rank - int64_t(norm.size()))])
      L.fail(n, "normalized_shape does not match the input's trailing dims");
    dims.push_back(i);
    cnt *= x0.sizes[i];
  }
  const LVal* w = L.opt_input(n, "weight");
  const LVal* b = L.opt_input(n, "bias");
  DType t = x0.dtype == DType::F64 ? DType::F64 : DType::F32;
  LVal x = L.pointwise(n, t, x0.sizes, [&](auto& idx) { return v_cast(L.at(x0, idx), t); }, {&x0});
  LVal s1 =
      L.reduce(n, ReduceOp::Sum, t, x.sizes, dims, [&](auto& idx) { return L.at(x, idx); }, {&x});
  LVal mean = L.pointwise(
      n, t, s1.sizes,
      [&](auto& idx) { return v_binary(VOp::Div, L.at(s1, idx), v_const(double(cnt), t)); }, {&s1});
  LVal s2 = L.reduce(n, ReduceOp::Sum, t, x.sizes, dims,
                     [&](auto& idx) {
                       VPtr c = v_binary(VOp::Sub, L.at(x, idx), L.bcast(mean, idx));
                       return v_binary(VOp::Mul, c, c);
                     },
                     {&x, &mean});
  LVal rstd = L.pointwise(n, t, s2.sizes,
                          [&](auto& idx) {
                            return v_unary(VOp::Rsqrt, v_binary(VOp::Add,
                                                                v_binary(VOp::Div, L.at(s2, idx),
                                                                         v_const(double(cnt), t)),
                                                                v_const(eps, t)));
                          },
                          {&s2});
  DType ot = L.out_meta(n).dtype;
  L.set_output(n, 0,
               L.pointwise(n, ot, x.sizes,
                           [&](auto& idx) {
                             VPtr y = v_binary(VOp::Mul,
                                               v_binary(VOp::Sub, L.at(x, idx), L.bcast(mean, idx)),
                                               L.bcast(rstd, idx));
                             if (w) y = v_binary(VOp::Mul, y, v_cast(L.bcast(*w, idx), t));
                             if (b) y = v_binary(VOp::Add, y, v_cast(L.bcast(*b, idx), t));
                             return v_cast(y, ot);
                           },
                           {&x, &mean, &rstd, w, b}));
  if (native) {
    L.set_output(n, 1, mean);
    L.set_output(n, 2, rstd);
  }
}
void lower_native_layer_norm(Lowerer& L, int n) {
  layer_norm(L, n, true);
}
void lower_layer_norm(Lowerer& L, int n) {
  layer_norm(L, n, false);
}

void batch_norm_eval(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "input");
  const LVal* w = L.opt_input(n, "weight");
  const LVal* b = L.opt_input(n, "bias");
  const LVal* rm = L.opt_input(n, "running_mean");
  const LVal* rv = L.opt_input(n, "running_var");
  if (!rm || !rv || x.sizes.size() < 2) L.fail(n, "eval batch norm needs running statistics");
  double eps = nd.arg("eps").scalar();
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  auto ch = [&](const LVal* v, const std::vector<IndexExpr>& idx) {
    return v_cast(L.at(*v, {idx[1]}), t);
  };
  L.set_output(
      n, 0,
      L.pointwise(n, t, m.sizes,
                  [&](auto& idx) {
                    VPtr y = v_binary(
                        VOp::Mul, v_binary(VOp::Sub, v_cast(L.at(x, idx), t), ch(rm, idx)),
                        v_unary(VOp::Rsqrt, v_binary(VOp::Add, ch(rv, idx), v_const(eps, t))));
                    if (w) y = v_binary(VOp::Mul, y, ch(w, idx));
                    if (b) y = v_binary(VOp::Add, y, ch(b, idx));
                    return y;
                  },
                  {&x, w, b, rm, rv}));
  for (size_t i = 1; i < nd.outputs.size(); ++i) {
    const TensorMeta& mi = L.out_meta(n, int(i));
    L.set_output(
        n, int(i),
        L.pointwise(n, mi.dtype, mi.sizes, [&](auto&) { return v_const(0, mi.dtype); }, {}));
  }
}
void lower_native_batch_norm_no_training(Lowerer& L, int n) {
  batch_norm_eval(L, n);
}
void lower_batch_norm(Lowerer& L, int n) {
  if (L.node(n).arg("training").b) {
    L.fallback(n, "training-mode batch_norm");
    return;
  }
  batch_norm_eval(L, n);
}

const OpTable<LowerFn>::Row kNormRules[] = {
    {OpId::_native_batch_norm_legit_no_training, lower_native_batch_norm_no_training},
    {OpId::batch_norm, lower_batch_norm},
    {OpId::layer_norm, lower_layer_norm},
    {OpId::native_layer_norm, lower_native_layer_norm},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> norm_rules() {
  return kNormRules;
}

} // namespace fxc::lower_detail
