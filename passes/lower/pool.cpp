// Lowering rules of pooling: max_pool2d (padding, dilation, ceil mode) as a reduction over the
// window, on the host and the device.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

void lower_max_pool2d(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  bool with_indices = nd.outputs.size() > 1;
  LVal& x = L.input(n, "self");
  auto k = nd.arg("kernel_size").ints, s = nd.arg("stride").ints, p = nd.arg("padding").ints,
       dl = nd.arg("dilation").ints;
  if (s.empty()) s = k;
  if (k.size() == 1) k = {k[0], k[0]};
  if (s.size() == 1) s = {s[0], s[0]};
  if (p.size() == 1) p = {p[0], p[0]};
  if (dl.size() == 1) dl = {dl[0], dl[0]};
  if (k.size() != 2 || s.size() != 2 || p.size() != 2 || dl.size() != 2 || x.sizes.size() != 4) {
    L.fallback(n, "max_pool2d arguments not lowered");
    return;
  }
  const TensorMeta& m = L.out_meta(n);
  if (m.sizes.size() != 4) {
    L.fallback(n, "max_pool2d of a non-4-D output");
    return;
  }
  // A max reduction over the window. Window positions outside the input (padding, and the last
  // window of ceil mode) read -inf, so they never win: PyTorch keeps every window's start
  // inside the input or its left padding.
  std::vector<int64_t> in_sizes = {m.sizes[0], m.sizes[1], m.sizes[2], m.sizes[3], k[0], k[1]};
  const double lowest = is_floating(m.dtype) ? -INFINITY : double(std::numeric_limits<int64_t>::min());
  auto window = [&](auto& idx) {
    IndexExpr h = idx[2] * s[0] + idx[4] * dl[0] - IndexExpr(p[0]);
    IndexExpr w = idx[3] * s[1] + idx[5] * dl[1] - IndexExpr(p[1]);
    IndexExpr hc = clamped(h, x.sizes[2]), wc = clamped(w, x.sizes[3]);
    VPtr v = L.at(x, {idx[0], idx[1], hc, wc});
    VPtr inside;
    if (!(hc == h)) inside = v_binary(VOp::And, index_ge(h, 0), index_lt(h, x.sizes[2]));
    if (!(wc == w)) {
      VPtr ok = v_binary(VOp::And, index_ge(w, 0), index_lt(w, x.sizes[3]));
      inside = inside ? v_binary(VOp::And, inside, ok) : ok;
    }
    return inside ? v_where(inside, v, v_const(lowest, v->dtype)) : v;
  };
  LVal r = L.reduce(n, ReduceOp::Max, m.dtype, in_sizes, {4, 5}, window, {&x});
  L.set_output(n, 0, L.reshape(r, m.sizes));
  if (!with_indices) return;
  // Indices: the window position of the max (first on ties, NaN wins), as a flat h*W + w.
  LVal pos = L.reduce(n, ReduceOp::ArgMax, m.dtype, in_sizes, {4, 5}, window, {&x});
  const TensorMeta& mi = L.out_meta(n, 1);
  int64_t W = x.sizes[3];
  LVal flat = L.reshape(pos, m.sizes);
  L.set_output(n, 1,
               L.pointwise(n, DType::I64, m.sizes,
                           [&](auto& idx) {
                             auto c = [](int64_t v) { return v_const(double(v), DType::I64); };
                             VPtr a = L.at(flat, idx);
                             VPtr kh = v_binary(VOp::FloorDivide, a, c(k[1]));
                             VPtr kw = v_binary(VOp::Sub, a, v_binary(VOp::Mul, kh, c(k[1])));
                             VPtr ih = v_binary(VOp::Add,
                                                v_index(idx[2] * s[0] - IndexExpr(p[0]), DType::I64),
                                                v_binary(VOp::Mul, kh, c(dl[0])));
                             VPtr iw = v_binary(VOp::Add,
                                                v_index(idx[3] * s[1] - IndexExpr(p[1]), DType::I64),
                                                v_binary(VOp::Mul, kw, c(dl[1])));
                             return v_cast(v_binary(VOp::Add, v_binary(VOp::Mul, ih, c(W)), iw),
                                           mi.dtype);
                           },
                           {&flat}));
}

const OpTable<LowerFn>::Row kPoolRules[] = {
    {OpId::max_pool2d, lower_max_pool2d},
    {OpId::max_pool2d_with_indices, lower_max_pool2d},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> pool_rules() { return kPoolRules; }

} // namespace fxc::lower_detail
