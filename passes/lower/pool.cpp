// Lowering rules of pooling: max_pool2d (padding, dilation, ceil mode) as a reduction over the
// window, on the host and the device.
#include "passes/lower/lower_util.h"

#include "frontend/resample.h"

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
  const double lowest =
      is_floating(m.dtype) ? -INFINITY : double(std::numeric_limits<int64_t>::min());
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
  L.set_output(
      n, 1,
      L.pointwise(n, DType::I64, m.sizes,
                  [&](auto& idx) {
                    auto c = [](int64_t v) { return v_const(double(v), DType::I64); };
                    VPtr a = L.at(flat, idx);
                    VPtr kh = v_binary(VOp::FloorDivide, a, c(k[1]));
                    VPtr kw = v_binary(VOp::Sub, a, v_binary(VOp::Mul, kh, c(k[1])));
                    VPtr ih =
                        v_binary(VOp::Add, v_index(idx[2] * s[0] - IndexExpr(p[0]), DType::I64),
                                 v_binary(VOp::Mul, kh, c(dl[0])));
                    VPtr iw =
                        v_binary(VOp::Add, v_index(idx[3] * s[1] - IndexExpr(p[1]), DType::I64),
                                 v_binary(VOp::Mul, kw, c(dl[1])));
                    return v_cast(v_binary(VOp::Add, v_binary(VOp::Mul, ih, c(W)), iw), mi.dtype);
                  },
                  {&flat}));
}

VPtr i64(const IndexExpr& e) {
  return v_index(e, DType::I64);
}
VPtr c64(int64_t v) {
  return v_const(double(v), DType::I64);
}

/// avg_pool1d/2d/3d: a sum over the window (padding reads 0) divided by PyTorch's divisor,
/// computed per output position from index arithmetic.
void lower_avg_pool(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  size_t sp = nd.target.find("1d") != std::string::npos   ? 1
              : nd.target.find("3d") != std::string::npos ? 3
                                                          : 2;
  auto k = resample::spatial_param(nd.arg("kernel_size").ints, sp);
  auto s = nd.arg("stride").ints.empty() ? k : resample::spatial_param(nd.arg("stride").ints, sp);
  auto p = resample::spatial_param(nd.arg("padding").ints, sp);
  bool include = nd.arg("count_include_pad").b;
  int64_t divisor = 0;
  if (nd.schema->index_of("divisor_override") >= 0 && !nd.arg("divisor_override").is_none())
    divisor = nd.arg("divisor_override").i;
  if (k.size() != sp || s.size() != sp || p.size() != sp || m.sizes.size() != x.sizes.size()) {
    L.fallback(n, "avg_pool arguments not lowered");
    return;
  }
  size_t R = m.sizes.size(), lead = R - sp;
  DType acc = is_floating(m.dtype) && m.dtype != DType::F64 ? DType::F32 : m.dtype;
  std::vector<int64_t> in_sizes = m.sizes;
  std::vector<int64_t> rdims;
  for (size_t i = 0; i < sp; ++i) {
    in_sizes.push_back(k[i]);
    rdims.push_back(int64_t(R + i));
  }
  auto window = [&](auto& idx) {
    std::vector<IndexExpr> in(idx.begin(), idx.begin() + long(lead));
    VPtr inside;
    for (size_t i = 0; i < sp; ++i) {
      int64_t ext = x.sizes[lead + i];
      IndexExpr e = idx[lead + i] * s[i] + idx[R + i] - IndexExpr(p[i]);
      IndexExpr ce = clamped(e, ext);
      in.push_back(ce);
      if (ce == e) continue;
      VPtr ok = v_binary(VOp::And, index_ge(e, 0), index_lt(e, ext));
      inside = inside ? v_binary(VOp::And, inside, ok) : ok;
    }
    VPtr v = v_cast(L.at(x, in), acc);
    return inside ? v_where(inside, v, v_const(0, acc)) : v;
  };
  LVal sum = L.reduce(n, ReduceOp::Sum, acc, in_sizes, rdims, window, {&x});
  LVal flat = L.reshape(sum, m.sizes);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr div;
                             if (divisor) {
                               div = c64(divisor);
                             } else {
                               for (size_t i = 0; i < sp; ++i) {
                                 int64_t ext = x.sizes[lead + i];
                                 IndexExpr st = idx[lead + i] * s[i] - IndexExpr(p[i]);
                                 VPtr start = i64(st);
                                 VPtr end =
                                     v_binary(VOp::Min, i64(st + IndexExpr(k[i])), c64(ext + p[i]));
                                 VPtr len;
                                 if (include) {
                                   len = v_binary(VOp::Sub, end, start);
                                 } else {
                                   VPtr a = v_binary(VOp::Max, start, c64(0));
                                   VPtr b = v_binary(VOp::Min, end, c64(ext));
                                   len = v_binary(VOp::Sub, b, a);
                                 }
                                 div = div ? v_binary(VOp::Mul, div, len) : len;
                               }
                             }
                             VPtr r = v_binary(VOp::Div, L.at(flat, idx), v_cast(div, acc));
                             return v_cast(r, m.dtype);
                           },
                           {&flat}));
}

/// upsample_nearest2d, _upsample_nearest_exact2d, upsample_bilinear2d: loads at source indices
/// computed in float from the output index (PyTorch's formulas, resample.h), as indirect indices.
void lower_upsample(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, nd.schema->index_of("input") >= 0 ? "input" : "self");
  const TensorMeta& m = L.out_meta(n);
  if (x.sizes.size() != 4) {
    L.fallback(n, "upsample of a non-4-D input");
    return;
  }
  int mode = nd.target.find("bilinear") != std::string::npos ? 2
             : nd.target.find("exact") != std::string::npos  ? 1
                                                             : 0;
  resample::Upsample u;
  if (!resample::upsample_args(nd, {x.sizes[2], x.sizes[3]}, u).empty()) {
    L.fallback(n, "upsample arguments not lowered");
    return;
  }
  DType f = DType::F32, acc = m.dtype == DType::F64 ? DType::F64 : DType::F32;
  DType ft = mode == 2 ? acc : f;
  auto fc = [&](double v) { return v_const(v, ft); };
  struct Axis {
    IndexExpr i0, i1;
    VPtr lam;
  };
  auto axis = [&](const IndexExpr& o, int64_t in, int64_t out, std::optional<double> sc) {
    Axis a;
    if (mode != 2) {
      if (mode == 0 && out == in) {
        a.i0 = o;
      } else if (mode == 0 && out == 2 * in) {
        a.i0 = o.floordiv(2);
      } else {
        float scale = resample::scales_value<float>(sc, in, out);
        VPtr pos = v_index(o, f);
        if (mode == 1) pos = v_binary(VOp::Add, pos, v_const(0.5, f));
        VPtr src =
            v_cast(v_unary(VOp::Floor, v_binary(VOp::Mul, pos, v_const(scale, f))), DType::I64);
        a.i0 = IndexExpr::indirect(v_binary(VOp::Min, src, c64(in - 1)), in);
      }
      a.i1 = a.i0;
      return a;
    }
    double scale = ft == DType::F64 ? resample::linear_scale<double>(in, out, u.align_corners, sc)
                                    : resample::linear_scale<float>(in, out, u.align_corners, sc);
    VPtr pos = v_index(o, ft);
    VPtr real;
    if (u.align_corners) {
      real = v_binary(VOp::Mul, fc(scale), pos);
    } else {
      real = v_binary(VOp::Sub, v_binary(VOp::Mul, fc(scale), v_binary(VOp::Add, pos, fc(0.5))),
                      fc(0.5));
      real = v_binary(VOp::Max, real, fc(0));
    }
    VPtr i0 = v_binary(VOp::Min, v_cast(v_unary(VOp::Floor, real), DType::I64), c64(in - 1));
    VPtr lam = v_binary(VOp::Sub, real, v_cast(i0, ft));
    a.lam = v_binary(VOp::Min, v_binary(VOp::Max, lam, fc(0)), fc(1));
    VPtr i1 = v_binary(VOp::Add, i0, v_cast(v_binary(VOp::Lt, i0, c64(in - 1)), DType::I64));
    a.i0 = IndexExpr::indirect(i0, in);
    a.i1 = IndexExpr::indirect(i1, in);
    return a;
  };
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             Axis h = axis(idx[2], x.sizes[2], m.sizes[2], u.scale[0]);
                             Axis w = axis(idx[3], x.sizes[3], m.sizes[3], u.scale[1]);
                             if (mode != 2)
                               return v_cast(L.at(x, {idx[0], idx[1], h.i0, w.i0}), m.dtype);
                             auto ld = [&](const IndexExpr& a, const IndexExpr& b) {
                               return v_cast(L.at(x, {idx[0], idx[1], a, b}), ft);
                             };
                             auto lerp = [&](VPtr a, VPtr b, VPtr t) {
                               return v_binary(VOp::Add,
                                               v_binary(VOp::Mul, v_binary(VOp::Sub, fc(1), t), a),
                                               v_binary(VOp::Mul, t, b));
                             };
                             VPtr top = lerp(ld(h.i0, w.i0), ld(h.i0, w.i1), w.lam);
                             VPtr bot = lerp(ld(h.i1, w.i0), ld(h.i1, w.i1), w.lam);
                             return v_cast(lerp(top, bot, h.lam), m.dtype);
                           },
                           {&x}));
}

const OpTable<LowerFn>::Row kPoolRules[] = {
    {OpId::_upsample_nearest_exact2d, lower_upsample},
    {OpId::_upsample_nearest_exact2d_vec, lower_upsample},
    {OpId::avg_pool1d, lower_avg_pool},
    {OpId::avg_pool2d, lower_avg_pool},
    {OpId::avg_pool3d, lower_avg_pool},
    {OpId::max_pool2d, lower_max_pool2d},
    {OpId::max_pool2d_with_indices, lower_max_pool2d},
    {OpId::upsample_bilinear2d, lower_upsample},
    {OpId::upsample_bilinear2d_vec, lower_upsample},
    {OpId::upsample_nearest2d, lower_upsample},
    {OpId::upsample_nearest2d_vec, lower_upsample},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> pool_rules() {
  return kPoolRules;
}

} // namespace fxc::lower_detail
