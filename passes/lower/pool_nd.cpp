// Lowering rules of the pooling ops over any number of spatial dims that the 2-D rules of
// pool.cpp do not cover: max_pool3d (with indices) as a max reduction over the window, and
// adaptive average pooling (1-D, 2-D with windows that do not divide the input, 3-D) as a sum
// over the largest window with the positions past each window's end masked out, adaptive max
// pooling (1-D to 3-D, with indices) as a max over it.
#include "passes/lower/lower_util.h"

#include "frontend/resample.h"

namespace fxc::lower_detail {
namespace {

VPtr c64(int64_t v) {
  return v_const(double(v), DType::I64);
}

/// max_pool3d and max_pool3d_with_indices: the max over the window (positions outside the input
/// read -inf, or the lowest integer), and the flat d*H*W + h*W + w index of the first max.
void lower_max_pool3d(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const size_t sp = 3;
  bool with_indices = nd.outputs.size() > 1;
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  auto k = resample::spatial_param(nd.arg("kernel_size").ints, sp);
  auto s = nd.arg("stride").ints.empty() ? k : resample::spatial_param(nd.arg("stride").ints, sp);
  auto p = resample::spatial_param(nd.arg("padding").ints, sp);
  auto dl = resample::spatial_param(nd.arg("dilation").ints, sp);
  if (k.size() != sp || s.size() != sp || p.size() != sp || dl.size() != sp ||
      m.sizes.size() != x.sizes.size() || x.sizes.size() < sp + 1) {
    L.fallback(n, "max_pool3d arguments not lowered");
    return;
  }
  const size_t R = m.sizes.size(), lead = R - sp;
  std::vector<int64_t> in_sizes = m.sizes, rdims;
  for (size_t i = 0; i < sp; ++i) {
    in_sizes.push_back(k[i]);
    rdims.push_back(int64_t(R + i));
  }
  const double lowest =
      is_floating(m.dtype) ? -INFINITY : double(std::numeric_limits<int64_t>::min());
  auto window = [&](auto& idx) {
    std::vector<IndexExpr> in(idx.begin(), idx.begin() + long(lead));
    VPtr inside;
    for (size_t i = 0; i < sp; ++i) {
      int64_t ext = x.sizes[lead + i];
      IndexExpr e = idx[lead + i] * s[i] + idx[R + i] * dl[i] - IndexExpr(p[i]);
      IndexExpr ce = clamped(e, ext);
      in.push_back(ce);
      if (ce == e) continue;
      VPtr ok = v_binary(VOp::And, index_ge(e, 0), index_lt(e, ext));
      inside = inside ? v_binary(VOp::And, inside, ok) : ok;
    }
    VPtr v = L.at(x, in);
    return inside ? v_where(inside, v, v_const(lowest, v->dtype)) : v;
  };
  LVal r = L.reduce(n, ReduceOp::Max, m.dtype, in_sizes, rdims, window, {&x});
  L.set_output(n, 0, L.reshape(r, m.sizes));
  if (!with_indices) return;
  // The window position of the max (first on ties, NaN wins), flat over the window dims, back
  // to a flat position in the input's spatial dims.
  LVal pos = L.reduce(n, ReduceOp::ArgMax, m.dtype, in_sizes, rdims, window, {&x});
  LVal flat = L.reshape(pos, m.sizes);
  const TensorMeta& mi = L.out_meta(n, 1);
  L.set_output(
      n, 1,
      L.pointwise(
          n, DType::I64, m.sizes,
          [&](auto& idx) {
            VPtr a = L.at(flat, idx);
            VPtr at;
            int64_t inner = k[1] * k[2];
            for (size_t i = 0; i < sp; ++i) {
              VPtr ki = v_binary(VOp::FloorDivide, a, c64(inner));
              a = v_binary(VOp::Sub, a, v_binary(VOp::Mul, ki, c64(inner)));
              if (i + 1 < sp) inner /= k[i + 1];
              VPtr pi =
                  v_binary(VOp::Add, v_index(idx[lead + i] * s[i] - IndexExpr(p[i]), DType::I64),
                           v_binary(VOp::Mul, ki, c64(dl[i])));
              at = at ? v_binary(VOp::Add, v_binary(VOp::Mul, at, c64(x.sizes[lead + i])), pi) : pi;
            }
            return v_cast(at, mi.dtype);
          },
          {&flat}));
}

/// The adaptive windows of a pooling node's 1-3 trailing (spatial) dims: output o of dim i covers
/// input [floor(o * in / out), ceil((o + 1) * in / out)); a reduction runs over the largest such
/// window (kmax), appended as reduction dims after the output's.
struct AdaptiveWindows {
  size_t sp = 0, R = 0, lead = 0;
  std::vector<int64_t> in, out, kmax, in_sizes, rdims;

  IndexExpr start(const IndexExpr& o, size_t i) const { return (o * in[i]).floordiv(out[i]); }
  IndexExpr end(const IndexExpr& o, size_t i) const {
    return (o * in[i] + IndexExpr(in[i] + out[i] - 1)).floordiv(out[i]);
  }
  /// The input position a reduction index reads (clamped into the input), and in *inside
  /// whether it lies within its window (null when every window has one element).
  template <class Idx> std::vector<IndexExpr> at(const Idx& idx, VPtr* inside) const {
    std::vector<IndexExpr> pos(idx.begin(), idx.begin() + long(lead));
    *inside = nullptr;
    for (size_t i = 0; i < sp; ++i) {
      IndexExpr e = start(idx[lead + i], i) + idx[R + i];
      pos.push_back(clamped(e, in[i]));
      if (kmax[i] == 1) continue;
      VPtr ok =
          v_binary(VOp::Lt, v_index(e, DType::I64), v_index(end(idx[lead + i], i), DType::I64));
      *inside = *inside ? v_binary(VOp::And, *inside, ok) : ok;
    }
    return pos;
  }
};

/// The windows of node n (adaptive_{avg,max}_pool{1,2,3}d, the dims from its name); false, with
/// a fallback recorded, when its sizes are not lowered.
bool adaptive_windows(Lowerer& L, int n, const LVal& x, const char* what, AdaptiveWindows* w) {
  const std::string& target = L.node(n).target;
  const TensorMeta& m = L.out_meta(n);
  w->sp = target.find("1d") != std::string::npos   ? 1
          : target.find("3d") != std::string::npos ? 3
                                                   : 2;
  if (m.sizes.size() != x.sizes.size() || x.sizes.size() < w->sp + 1) {
    L.fallback(n, std::string(what) + " arguments not lowered");
    return false;
  }
  w->R = m.sizes.size();
  w->lead = w->R - w->sp;
  w->in_sizes = m.sizes;
  w->in.assign(w->sp, 0);
  w->out.assign(w->sp, 0);
  w->kmax.assign(w->sp, 1);
  for (size_t i = 0; i < w->sp; ++i) {
    int64_t in = x.sizes[w->lead + i], out = m.sizes[w->lead + i];
    w->in[i] = in;
    w->out[i] = out;
    for (int64_t o = 0; o < out; ++o)
      w->kmax[i] = std::max(w->kmax[i], ((o + 1) * in + out - 1) / out - (o * in) / out);
    w->in_sizes.push_back(w->kmax[i]);
    w->rdims.push_back(int64_t(w->R + i));
  }
  return true;
}

/// adaptive_avg_pool1d/2d/3d: output o of a spatial dim averages the input over
/// [floor(o * in / out), ceil((o + 1) * in / out)); the sum runs over the largest such window,
/// reading 0 past each window's end, and divides by the window's volume.
void lower_adaptive_avg_pool(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  AdaptiveWindows w;
  if (!adaptive_windows(L, n, x, "adaptive_avg_pool", &w)) return;
  const size_t sp = w.sp, lead = w.lead;
  DType acc = is_floating(m.dtype) && m.dtype != DType::F64 ? DType::F32 : m.dtype;
  auto window = [&](auto& idx) {
    VPtr inside;
    VPtr v = v_cast(L.at(x, w.at(idx, &inside)), acc);
    return inside ? v_where(inside, v, v_const(0, acc)) : v;
  };
  LVal sum = L.reduce(n, ReduceOp::Sum, acc, w.in_sizes, w.rdims, window, {&x});
  LVal flat = L.reshape(sum, m.sizes);
  L.set_output(
      n, 0,
      L.pointwise(n, m.dtype, m.sizes,
                  [&](auto& idx) {
                    VPtr vol;
                    for (size_t i = 0; i < sp; ++i) {
                      VPtr len =
                          v_index(w.end(idx[lead + i], i) - w.start(idx[lead + i], i), DType::I64);
                      vol = vol ? v_binary(VOp::Mul, vol, len) : len;
                    }
                    return v_cast(v_binary(VOp::Div, L.at(flat, idx), v_cast(vol, acc)), m.dtype);
                  },
                  {&flat}));
}

/// adaptive_max_pool1d/2d/3d: a max (and argmax) reduction over the largest adaptive window, the
/// positions past each window's end reading -inf (or the lowest integer); the index is the flat
/// position in the input's spatial dims of the window's first max.
void lower_adaptive_max_pool(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  AdaptiveWindows w;
  if (!adaptive_windows(L, n, x, "adaptive_max_pool", &w)) return;
  const size_t sp = w.sp, lead = w.lead;
  const double lowest =
      is_floating(m.dtype) ? -INFINITY : double(std::numeric_limits<int64_t>::min());
  auto window = [&](auto& idx) {
    VPtr inside;
    VPtr v = L.at(x, w.at(idx, &inside));
    return inside ? v_where(inside, v, v_const(lowest, v->dtype)) : v;
  };
  LVal r = L.reduce(n, ReduceOp::Max, m.dtype, w.in_sizes, w.rdims, window, {&x});
  L.set_output(n, 0, L.reshape(r, m.sizes));
  if (nd.outputs.size() < 2) return;
  LVal pos = L.reduce(n, ReduceOp::ArgMax, m.dtype, w.in_sizes, w.rdims, window, {&x});
  LVal flat = L.reshape(pos, m.sizes);
  const TensorMeta& mi = L.out_meta(n, 1);
  L.set_output(
      n, 1,
      L.pointwise(n, DType::I64, m.sizes,
                  [&](auto& idx) {
                    VPtr a = L.at(flat, idx);
                    int64_t inner = 1;
                    for (size_t i = 1; i < sp; ++i) inner *= w.kmax[i];
                    VPtr at;
                    for (size_t i = 0; i < sp; ++i) {
                      VPtr ki = v_binary(VOp::FloorDivide, a, c64(inner));
                      a = v_binary(VOp::Sub, a, v_binary(VOp::Mul, ki, c64(inner)));
                      if (i + 1 < sp) inner /= w.kmax[i + 1];
                      VPtr pi =
                          v_binary(VOp::Add, v_index(w.start(idx[lead + i], i), DType::I64), ki);
                      at = at ? v_binary(VOp::Add, v_binary(VOp::Mul, at, c64(w.in[i])), pi) : pi;
                    }
                    return v_cast(at, mi.dtype);
                  },
                  {&flat}));
}

const OpTable<LowerFn>::Row kPoolNdRules[] = {
    {OpId::_adaptive_avg_pool2d, lower_adaptive_avg_pool},
    {OpId::_adaptive_avg_pool3d, lower_adaptive_avg_pool},
    {OpId::adaptive_avg_pool1d, lower_adaptive_avg_pool},
    {OpId::adaptive_avg_pool2d, lower_adaptive_avg_pool},
    {OpId::adaptive_avg_pool3d, lower_adaptive_avg_pool},
    {OpId::adaptive_max_pool1d, lower_adaptive_max_pool},
    {OpId::adaptive_max_pool2d, lower_adaptive_max_pool},
    {OpId::adaptive_max_pool3d, lower_adaptive_max_pool},
    {OpId::max_pool3d, lower_max_pool3d},
    {OpId::max_pool3d_with_indices, lower_max_pool3d},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> pool_nd_rules() {
  return kPoolNdRules;
}

} // namespace fxc::lower_detail
