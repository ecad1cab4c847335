// Lowering rules of pooling: max_pool2d (padding, dilation, ceil mode) as a reduction over the
// window, avg pooling, upsampling (nearest, linear 1-D/2-D/3-D, bicubic) and grid_sampler_2d as
// pointwise buffers of indirect loads, on the host and the device.
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

/// Upsampling over the last 1-3 dims (nearest, nearest-exact, linear, bicubic): each output
/// position of a dim reads taps (1, 2 or 4 source indices, indirect and computed in float from the
/// output index with PyTorch's formulas, resample.h) with weights; the value is the weighted sum
/// over the taps of every dim, innermost dim first, as the reference kernel sums.
void lower_upsample(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, nd.schema->index_of("input") >= 0 ? "input" : "self");
  const TensorMeta& m = L.out_meta(n);
  const std::string& t = nd.target;
  const size_t sp = t.find("1d") != std::string::npos   ? 1
                    : t.find("3d") != std::string::npos ? 3
                                                        : 2;
  if (x.sizes.size() != sp + 2 || m.sizes.size() != sp + 2) {
    L.fallback(n, "upsample of an input of the wrong rank");
    return;
  }
  const int mode = t.find("cubic") != std::string::npos    ? 3
                   : t.find("linear") != std::string::npos ? 2
                   : t.find("exact") != std::string::npos  ? 1
                                                           : 0;
  resample::Upsample u;
  std::vector<int64_t> in(x.sizes.begin() + 2, x.sizes.end());
  if (!resample::upsample_args(nd, in, u).empty()) {
    L.fallback(n, "upsample arguments not lowered");
    return;
  }
  DType f = DType::F32, acc = m.dtype == DType::F64 ? DType::F64 : DType::F32;
  DType ft = mode >= 2 ? acc : f;
  auto fc = [&](double v) { return v_const(v, ft); };
  auto add = [](VPtr a, VPtr b) { return v_binary(VOp::Add, a, b); };
  auto mul = [](VPtr a, VPtr b) { return v_binary(VOp::Mul, a, b); };
  auto sub = [](VPtr a, VPtr b) { return v_binary(VOp::Sub, a, b); };
  struct Axis {
    std::vector<IndexExpr> at;
    std::vector<VPtr> w; // empty: a single tap of weight 1
  };
  auto axis = [&](const IndexExpr& o, int64_t I, int64_t O, std::optional<double> sc) {
    Axis a;
    if (mode < 2) {
      if (mode == 0 && O == I) {
        a.at = {o};
      } else if (mode == 0 && O == 2 * I) {
        a.at = {o.floordiv(2)};
      } else {
        float scale = resample::scales_value<float>(sc, I, O);
        VPtr pos = v_index(o, f);
        if (mode == 1) pos = add(pos, v_const(0.5, f));
        VPtr src = v_cast(v_unary(VOp::Floor, mul(pos, v_const(scale, f))), DType::I64);
        a.at = {IndexExpr::indirect(v_binary(VOp::Min, src, c64(I - 1)), I)};
      }
      return a;
    }
    double scale = ft == DType::F64 ? resample::linear_scale<double>(I, O, u.align_corners, sc)
                                    : resample::linear_scale<float>(I, O, u.align_corners, sc);
    VPtr pos = v_index(o, ft);
    VPtr real =
        u.align_corners ? mul(fc(scale), pos) : sub(mul(fc(scale), add(pos, fc(0.5))), fc(0.5));
    if (mode == 2) {
      if (!u.align_corners) real = v_binary(VOp::Max, real, fc(0));
      VPtr i0 = v_binary(VOp::Min, v_cast(v_unary(VOp::Floor, real), DType::I64), c64(I - 1));
      VPtr lam = sub(real, v_cast(i0, ft));
      lam = v_binary(VOp::Min, v_binary(VOp::Max, lam, fc(0)), fc(1));
      VPtr i1 = add(i0, v_cast(v_binary(VOp::Lt, i0, c64(I - 1)), DType::I64));
      a.at = {IndexExpr::indirect(i0, I), IndexExpr::indirect(i1, I)};
      a.w = {sub(fc(1), lam), lam};
      return a;
    }
    // Bicubic: taps floor(real) - 1 .. + 2, clamped into the dim (indirect indices clamp), with
    // get_cubic_upsample_coefficients' weights of the fraction.
    VPtr fl = v_unary(VOp::Floor, real);
    VPtr i0 = v_cast(fl, DType::I64);
    VPtr tt = sub(real, fl);
    const double A = -0.75;
    auto c1 = [&](VPtr z) { return add(mul(mul(sub(mul(fc(A + 2), z), fc(A + 3)), z), z), fc(1)); };
    auto c2 = [&](VPtr z) {
      return sub(mul(add(mul(sub(mul(fc(A), z), fc(5 * A)), z), fc(8 * A)), z), fc(4 * A));
    };
    VPtr omt = sub(fc(1), tt);
    a.w = {c2(add(tt, fc(1))), c1(tt), c1(omt), c2(add(omt, fc(1)))};
    for (int j = 0; j < 4; ++j) a.at.push_back(IndexExpr::indirect(add(i0, c64(j - 1)), I));
    return a;
  };
  // Upsampling by linear or cubic taps: one pass per spatial dim, innermost first, each a
  // realized buffer but the last, as PyTorch's CPU kernels and the reference sum (the inner dim's
  // taps first, so the values are the same). A one-kernel form would gather 2^sp (4^sp) taps per
  // output; in passes, only the first pass gathers along its dim, and every later pass reads
  // whole rows of the previous one (DeepLabV3's 16x bilinear upsample of its 21-class logits:
  // 4 gathers per output before).
  if (mode >= 2 && sp >= 2 && numel_of(m.sizes) >= 2 * numel_of(x.sizes)) {
    LVal cur = x;
    std::vector<int64_t> sizes = x.sizes;
    for (size_t dd = sp; dd-- > 0;) {
      sizes[2 + dd] = u.out[dd];
      const bool first = dd + 1 == sp, last = dd == 0;
      LVal next = L.pointwise(n, last ? m.dtype : ft, sizes,
                              [&](auto& idx) {
                                Axis a = axis(idx[2 + dd], in[dd], u.out[dd], u.scale[dd]);
                                std::vector<IndexExpr> at(idx.begin(), idx.end());
                                VPtr r;
                                for (size_t k = 0; k < a.at.size(); ++k) {
                                  at[2 + dd] = a.at[k];
                                  VPtr v = first ? v_cast(L.at(cur, at), ft) : L.at(cur, at);
                                  v = mul(a.w[k], v);
                                  r = r ? add(r, v) : v;
                                }
                                return last ? v_cast(r, m.dtype) : r;
                              },
                              {&cur});
      if (!last) L.realize(next);
      cur = next;
    }
    L.set_output(n, 0, cur);
    return;
  }
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             std::vector<Axis> ax;
                             for (size_t d = 0; d < sp; ++d)
                               ax.push_back(axis(idx[2 + d], in[d], u.out[d], u.scale[d]));
                             std::vector<IndexExpr> at = {idx[0], idx[1]};
                             auto sum = [&](auto& self, size_t d) -> VPtr {
                               if (d == sp) return mode < 2 ? L.at(x, at) : v_cast(L.at(x, at), ft);
                               VPtr r;
                               for (size_t k = 0; k < ax[d].at.size(); ++k) {
                                 at.push_back(ax[d].at[k]);
                                 VPtr v = self(self, d + 1);
                                 at.pop_back();
                                 if (!ax[d].w.empty()) v = mul(ax[d].w[k], v);
                                 r = r ? add(r, v) : v;
                               }
                               return r;
                             };
                             return v_cast(sum(sum, 0), m.dtype);
                           },
                           {&x}));
}

/// grid_sampler_2d: per output (n, c, h, w) the grid point (n, h, w) unnormalized and padded
/// (border clips, reflection reflects then clips) in the input's opmath type, then the taps as
/// indirect loads: bilinear the four neighbours, nearest the roundeven neighbour, bicubic the 4x4
/// neighbours with each tap padded; taps outside the input read 0 (a select, the load clamped).
void lower_grid_sampler(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "input");
  LVal& grid = L.input(n, "grid");
  const TensorMeta& m = L.out_meta(n);
  const int64_t mode = nd.arg("interpolation_mode").i, pad = nd.arg("padding_mode").i;
  const bool align = nd.arg("align_corners").b;
  if (x.sizes.size() != 4 || grid.sizes.size() != 4 || mode < 0 || mode > 2 || pad < 0 || pad > 2) {
    L.fallback(n, "grid_sampler_2d arguments not lowered");
    return;
  }
  const int64_t H = x.sizes[2], W = x.sizes[3];
  const DType ft = m.dtype == DType::F64 ? DType::F64 : DType::F32;
  auto fc = [&](double v) { return v_const(v, ft); };
  auto add = [](VPtr a, VPtr b) { return v_binary(VOp::Add, a, b); };
  auto mul = [](VPtr a, VPtr b) { return v_binary(VOp::Mul, a, b); };
  auto sub = [](VPtr a, VPtr b) { return v_binary(VOp::Sub, a, b); };
  auto unnormalize = [&](VPtr g, int64_t size) {
    return align ? mul(v_binary(VOp::Div, add(g, fc(1)), fc(2)), fc(double(size - 1)))
                 : v_binary(VOp::Div, sub(mul(add(g, fc(1)), fc(double(size))), fc(1)), fc(2));
  };
  auto clip = [&](VPtr v, int64_t size) {
    return v_binary(VOp::Min, fc(double(size - 1)), v_binary(VOp::Max, v, fc(0)));
  };
  auto reflect = [&](VPtr v, int64_t twice_low, int64_t twice_high) {
    if (twice_low == twice_high) return fc(0);
    double lo = double(twice_low) / 2, span = double(twice_high - twice_low) / 2;
    VPtr a = v_unary(VOp::Abs, sub(v, fc(lo)));
    VPtr extra = v_binary(VOp::Fmod, a, fc(span));
    VPtr flips = v_unary(VOp::Floor, v_binary(VOp::Div, a, fc(span)));
    VPtr even = v_binary(VOp::Eq, v_binary(VOp::Fmod, flips, fc(2)), fc(0));
    return v_where(even, add(extra, fc(lo)), add(sub(fc(span), extra), fc(lo)));
  };
  auto padded = [&](VPtr v, int64_t size) {
    if (pad == 1) return clip(v, size);
    if (pad == 2)
      return clip(align ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1), size);
    return v;
  };
  auto fn = [&](auto& idx) {
    VPtr gx = v_cast(L.at(grid, {idx[0], idx[2], idx[3], IndexExpr(0)}), ft);
    VPtr gy = v_cast(L.at(grid, {idx[0], idx[2], idx[3], IndexExpr(1)}), ft);
    VPtr ix = unnormalize(gx, W), iy = unnormalize(gy, H);
    if (mode != 2) ix = padded(ix, W), iy = padded(iy, H);
    // The input at integer positions (yi, xi) (I64), 0 outside.
    auto tap = [&](VPtr yi, VPtr xi) {
      VPtr v = v_cast(
          L.at(x, {idx[0], idx[1], IndexExpr::indirect(yi, H), IndexExpr::indirect(xi, W)}), ft);
      VPtr ok = v_binary(
          VOp::And,
          v_binary(VOp::And, v_binary(VOp::Ge, yi, c64(0)), v_binary(VOp::Lt, yi, c64(H))),
          v_binary(VOp::And, v_binary(VOp::Ge, xi, c64(0)), v_binary(VOp::Lt, xi, c64(W))));
      return v_where(ok, v, fc(0));
    };
    VPtr r;
    if (mode == 1) {
      r = tap(v_cast(v_unary(VOp::Round, iy), DType::I64),
              v_cast(v_unary(VOp::Round, ix), DType::I64));
    } else if (mode == 0) {
      VPtr fx = v_unary(VOp::Floor, ix), fy = v_unary(VOp::Floor, iy);
      VPtr x0 = v_cast(fx, DType::I64), y0 = v_cast(fy, DType::I64);
      VPtr x1 = add(x0, c64(1)), y1 = add(y0, c64(1));
      VPtr tx = sub(ix, fx), ty = sub(iy, fy);
      VPtr ux = sub(fc(1), tx), uy = sub(fc(1), ty);
      r = add(add(add(mul(tap(y0, x0), mul(ux, uy)), mul(tap(y0, x1), mul(tx, uy))),
                  mul(tap(y1, x0), mul(ux, ty))),
              mul(tap(y1, x1), mul(tx, ty)));
    } else {
      VPtr fx = v_unary(VOp::Floor, ix), fy = v_unary(VOp::Floor, iy);
      const double A = -0.75;
      auto c1 = [&](VPtr z) {
        return add(mul(mul(sub(mul(fc(A + 2), z), fc(A + 3)), z), z), fc(1));
      };
      auto c2 = [&](VPtr z) {
        return sub(mul(add(mul(sub(mul(fc(A), z), fc(5 * A)), z), fc(8 * A)), z), fc(4 * A));
      };
      auto coeffs = [&](VPtr tt) {
        VPtr omt = sub(fc(1), tt);
        return std::vector<VPtr>{c2(add(tt, fc(1))), c1(tt), c1(omt), c2(add(omt, fc(1)))};
      };
      std::vector<VPtr> wx = coeffs(sub(ix, fx)), wy = coeffs(sub(iy, fy));
      // Each tap's position padded, then truncated toward zero (PyTorch's static_cast).
      auto at = [&](VPtr base, int j, int64_t size) {
        return v_cast(v_unary(VOp::Trunc, padded(add(base, fc(double(j - 1))), size)), DType::I64);
      };
      for (int i = 0; i < 4; ++i) {
        VPtr yi = at(fy, i, H), row;
        for (int j = 0; j < 4; ++j) {
          VPtr v = mul(wx[size_t(j)], tap(yi, at(fx, j, W)));
          row = row ? add(row, v) : v;
        }
        VPtr v = mul(wy[size_t(i)], row);
        r = r ? add(r, v) : v;
      }
    }
    return v_cast(r, m.dtype);
  };
  L.set_output(n, 0, L.pointwise(n, m.dtype, m.sizes, fn, {&x, &grid}));
}

const OpTable<LowerFn>::Row kPoolRules[] = {
    {OpId::_upsample_nearest_exact2d, lower_upsample},
    {OpId::_upsample_nearest_exact2d_vec, lower_upsample},
    {OpId::avg_pool1d, lower_avg_pool},
    {OpId::avg_pool2d, lower_avg_pool},
    {OpId::avg_pool3d, lower_avg_pool},
    {OpId::grid_sampler_2d, lower_grid_sampler},
    {OpId::max_pool2d, lower_max_pool2d},
    {OpId::max_pool2d_with_indices, lower_max_pool2d},
    {OpId::upsample_bicubic2d, lower_upsample},
    {OpId::upsample_bicubic2d_vec, lower_upsample},
    {OpId::upsample_bilinear2d, lower_upsample},
    {OpId::upsample_bilinear2d_vec, lower_upsample},
    {OpId::upsample_nearest2d, lower_upsample},
    {OpId::upsample_linear1d, lower_upsample},
    {OpId::upsample_linear1d_vec, lower_upsample},
    {OpId::upsample_nearest2d_vec, lower_upsample},
    {OpId::upsample_trilinear3d, lower_upsample},
    {OpId::upsample_trilinear3d_vec, lower_upsample},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> pool_rules() {
  return kPoolRules;
}

} // namespace fxc::lower_detail
