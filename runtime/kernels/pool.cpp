// Reference kernels of pooling: max_pool2d/3d (with and without indices, padding, dilation and
// ceil mode), adaptive_avg_pool1d/2d/3d and adaptive_max_pool1d/2d/3d; upsampling (nearest, linear,
// bicubic) and grid_sampler_2d.
#include "runtime/kernels/kernel_util.h"

#include "frontend/resample.h"

namespace fxc::kernel_detail {
namespace {

// PyTorch's pooling_output_shape.
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

// max_pool2d/3d over the last `sp` dims, padded as 3-D with unit dims in front; the indices are
// flat over the input's spatial dims (h * W + w, d * H * W + h * W + w).
Tensors max_pool(const KernelCall& c, bool with_indices, size_t sp) {
  Tensor x = c.tensor("self");
  const std::string name = "max_pool" + std::to_string(sp) + "d";
  const int64_t n = int64_t(sp);
  if (x.dim() != n + 1 && x.dim() != n + 2)
    fail(name + " expects a " + std::to_string(sp + 1) + "-D or " + std::to_string(sp + 2) +
         "-D input, got " + shape_str(x.sizes()));
  Shape k = expand_param(c.arg("kernel_size").ints, sp, "kernel_size");
  Shape s = c.arg("stride").ints.empty() ? k : expand_param(c.arg("stride").ints, sp, "stride");
  Shape p = expand_param(c.arg("padding").ints, sp, "padding");
  Shape d = expand_param(c.arg("dilation").ints, sp, "dilation");
  bool ceil = c.arg("ceil_mode").b;
  for (size_t i = 0; i < sp; ++i) {
    if (k[i] <= 0) fail("kernel size should be greater than zero");
    if (s[i] <= 0) fail("stride should be greater than zero");
    if (d[i] <= 0) fail("dilation should be greater than zero");
    if (p[i] < 0 || p[i] > k[i] / 2) fail("pad should be at most half of effective kernel size");
  }
  Shape K(3 - sp, 1), S(3 - sp, 1), P(3 - sp, 0), D(3 - sp, 1), I(3 - sp, 1), O(3 - sp, 1);
  K.insert(K.end(), k.begin(), k.end());
  S.insert(S.end(), s.begin(), s.end());
  P.insert(P.end(), p.begin(), p.end());
  D.insert(D.end(), d.begin(), d.end());
  for (size_t i = 0; i < sp; ++i) I.push_back(x.size(x.dim() - n + int64_t(i)));
  for (size_t i = 3 - sp; i < 3; ++i) {
    O.push_back(pool_out(I[i], K[i], P[i], S[i], D[i], ceil));
    if (O.back() <= 0)
      fail("given input size " + shape_str(x.sizes()) +
           ", the calculated output size is too small");
  }
  int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - n));
  Shape osz(x.sizes().begin(), x.sizes().end() - n);
  osz.insert(osz.end(), O.end() - n, O.end());
  DType dt = c.result_dtype(x.dtype());
  Tensor out = Tensor::empty(dt, osz), ind = Tensor::empty(DType::I64, osz);
  std::vector<double> xv = values(x);
  const int64_t vol = I[0] * I[1] * I[2];
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o0 = 0; o0 < O[0]; ++o0)
      for (int64_t o1 = 0; o1 < O[1]; ++o1)
        for (int64_t o2 = 0; o2 < O[2]; ++o2) {
          int64_t st[3] = {o0 * S[0] - P[0], o1 * S[1] - P[1], o2 * S[2] - P[2]};
          int64_t first[3];
          for (int i = 0; i < 3; ++i) {
            first[i] = st[i];
            while (first[i] < 0) first[i] += D[i];
          }
          double best = -std::numeric_limits<double>::infinity();
          int64_t bi = (first[0] * I[1] + first[1]) * I[2] + first[2];
          for (int64_t a = 0; a < K[0]; ++a) {
            int64_t i0 = st[0] + a * D[0];
            if (i0 < 0 || i0 >= I[0]) continue;
            for (int64_t b = 0; b < K[1]; ++b) {
              int64_t i1 = st[1] + b * D[1];
              if (i1 < 0 || i1 >= I[1]) continue;
              for (int64_t w = 0; w < K[2]; ++w) {
                int64_t i2 = st[2] + w * D[2];
                if (i2 < 0 || i2 >= I[2]) continue;
                int64_t at = (i0 * I[1] + i1) * I[2] + i2;
                double v = xv[size_t(pl * vol + at)];
                if (v > best || std::isnan(v)) {
                  best = v;
                  bi = at;
                }
              }
            }
          }
          out.store(idx, best);
          ind.store_int(idx, bi);
          ++idx;
        }
  if (with_indices) return {out, ind};
  return {out};
}

Tensors k_max_pool2d(const KernelCall& c) {
  return max_pool(c, false, 2);
}
Tensors k_max_pool2d_with_indices(const KernelCall& c) {
  return max_pool(c, true, 2);
}
Tensors k_max_pool3d(const KernelCall& c) {
  return max_pool(c, false, 3);
}
Tensors k_max_pool3d_with_indices(const KernelCall& c) {
  return max_pool(c, true, 3);
}

// adaptive_avg_pool1d/3d: PyTorch's windows [floor(o * in / out), ceil((o + 1) * in / out)) per
// spatial dim over the last `sp` dims, padded as 3-D with unit dims in front.
Tensors adaptive_avg_pool_nd(const KernelCall& c, size_t sp) {
  const Tensor& x = c.tensor("self");
  const std::string name = "adaptive_avg_pool" + std::to_string(sp) + "d";
  const int64_t n = int64_t(sp);
  if (x.dim() != n + 1 && x.dim() != n + 2)
    fail(name + " expects a " + std::to_string(sp + 1) + "-D or " + std::to_string(sp + 2) +
         "-D input, got " + shape_str(x.sizes()));
  Shape os = expand_param(c.arg("output_size").ints, sp, "output_size");
  for (int64_t o : os)
    if (o < 0) fail(name + ": output size must be non-negative");
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.size(d) == 0) fail(name + ": input has an empty non-batch dimension");
  Shape I(3 - sp, 1), O(3 - sp, 1);
  for (size_t i = 0; i < sp; ++i) I.push_back(x.size(x.dim() - n + int64_t(i)));
  O.insert(O.end(), os.begin(), os.end());
  int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - n));
  Shape osz(x.sizes().begin(), x.sizes().end() - n);
  osz.insert(osz.end(), os.begin(), os.end());
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), osz);
  std::vector<double> xv = values(x);
  auto lo = [](int64_t o, int64_t in, int64_t out) { return (o * in) / out; };
  auto hi = [](int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; };
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o0 = 0; o0 < O[0]; ++o0)
      for (int64_t o1 = 0; o1 < O[1]; ++o1)
        for (int64_t o2 = 0; o2 < O[2]; ++o2) {
          int64_t a0 = lo(o0, I[0], O[0]), a1 = hi(o0, I[0], O[0]);
          int64_t b0 = lo(o1, I[1], O[1]), b1 = hi(o1, I[1], O[1]);
          int64_t w0 = lo(o2, I[2], O[2]), w1 = hi(o2, I[2], O[2]);
          double sum = 0;
          for (int64_t a = a0; a < a1; ++a)
            for (int64_t b = b0; b < b1; ++b)
              for (int64_t w = w0; w < w1; ++w)
                sum += xv[size_t(((pl * I[0] + a) * I[1] + b) * I[2] + w)];
          out.store(idx++, sum / double((a1 - a0) * (b1 - b0) * (w1 - w0)));
        }
  return {out};
}
Tensors k_adaptive_avg_pool1d(const KernelCall& c) {
  return adaptive_avg_pool_nd(c, 1);
}
Tensors k_adaptive_avg_pool3d(const KernelCall& c) {
  return adaptive_avg_pool_nd(c, 3);
}

// adaptive_max_pool1d/2d/3d: the max over the adaptive windows (first on ties; a NaN wins, the
// last one of a window, as PyTorch's CPU kernel) and its flat index over the input's spatial dims.
Tensors adaptive_max_pool_nd(const KernelCall& c, size_t sp) {
  const Tensor& x = c.tensor("self");
  const std::string name = "adaptive_max_pool" + std::to_string(sp) + "d";
  const int64_t n = int64_t(sp);
  if (x.dim() != n + 1 && x.dim() != n + 2)
    fail(name + " expects a " + std::to_string(sp + 1) + "-D or " + std::to_string(sp + 2) +
         "-D input, got " + shape_str(x.sizes()));
  Shape os = expand_param(c.arg("output_size").ints, sp, "output_size");
  for (int64_t o : os)
    if (o < 0) fail(name + ": output size must be non-negative");
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.size(d) == 0) fail(name + ": input has an empty non-batch dimension");
  Shape I(3 - sp, 1), O(3 - sp, 1);
  for (size_t i = 0; i < sp; ++i) I.push_back(x.size(x.dim() - n + int64_t(i)));
  O.insert(O.end(), os.begin(), os.end());
  int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - n));
  Shape osz(x.sizes().begin(), x.sizes().end() - n);
  osz.insert(osz.end(), os.begin(), os.end());
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), osz);
  Tensor ind = Tensor::empty(DType::I64, osz);
  std::vector<double> xv = values(x);
  auto lo = [](int64_t o, int64_t in, int64_t out) { return (o * in) / out; };
  auto hi = [](int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; };
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o0 = 0; o0 < O[0]; ++o0)
      for (int64_t o1 = 0; o1 < O[1]; ++o1)
        for (int64_t o2 = 0; o2 < O[2]; ++o2) {
          double best = -INFINITY;
          int64_t at = -1;
          for (int64_t a = lo(o0, I[0], O[0]); a < hi(o0, I[0], O[0]); ++a)
            for (int64_t b = lo(o1, I[1], O[1]); b < hi(o1, I[1], O[1]); ++b)
              for (int64_t w = lo(o2, I[2], O[2]); w < hi(o2, I[2], O[2]); ++w) {
                int64_t flat = (a * I[1] + b) * I[2] + w;
                double v = xv[size_t(pl * I[0] * I[1] * I[2] + flat)];
                if (at < 0 || v > best || std::isnan(v)) best = v, at = flat;
              }
          out.store(idx, best);
          ind.store(idx++, double(at));
        }
  return {out, ind};
}
Tensors k_adaptive_max_pool1d(const KernelCall& c) {
  return adaptive_max_pool_nd(c, 1);
}
Tensors k_adaptive_max_pool2d(const KernelCall& c) {
  return adaptive_max_pool_nd(c, 2);
}
Tensors k_adaptive_max_pool3d(const KernelCall& c) {
  return adaptive_max_pool_nd(c, 3);
}

Tensors k_adaptive_avg_pool2d(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    fail("adaptive_avg_pool2d expects a 3-D or 4-D input, got " + shape_str(x.sizes()));
  Shape os = expand_param(c.arg("output_size").ints, 2, "output_size");
  if (os[0] < 0 || os[1] < 0) fail("adaptive_avg_pool2d: output size must be non-negative");
  int64_t H = x.size(x.dim() - 2), W = x.size(x.dim() - 1);
  // As PyTorch: every dim but the first (the batch, or the channels of a 3-D input) non-empty.
  for (int64_t d = 1; d < x.dim(); ++d)
    if (x.size(d) == 0)
      fail("adaptive_avg_pool2d: expected input to have non-zero size for non-batch dimensions, "
           "got " +
           shape_str(x.sizes()));
  int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - 2));
  Shape osz(x.sizes().begin(), x.sizes().end() - 2);
  osz.insert(osz.end(), {os[0], os[1]});
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), osz);
  std::vector<double> xv = values(x);
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < os[0]; ++oh) {
      int64_t h0 = (oh * H) / os[0], h1 = ((oh + 1) * H + os[0] - 1) / os[0];
      for (int64_t ow = 0; ow < os[1]; ++ow) {
        int64_t w0 = (ow * W) / os[1], w1 = ((ow + 1) * W + os[1] - 1) / os[1];
        double s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) s += xv[size_t((pl * H + ih) * W + iw)];
        out.store(idx++, s / double((h1 - h0) * (w1 - w0)));
      }
    }
  return {out};
}

// avg_pool1d/2d/3d: windows over the last `sp` dims, padded as 3-D with unit dims in front.
Tensors avg_pool(const KernelCall& c, size_t sp) {
  const Tensor& x = c.tensor("self");
  if (x.dim() != int64_t(sp) + 1 && x.dim() != int64_t(sp) + 2)
    fail("avg_pool" + std::to_string(sp) + "d expects a " + std::to_string(sp + 1) + "-D or " +
         std::to_string(sp + 2) + "-D input, got " + shape_str(x.sizes()));
  Shape k = resample::spatial_param(c.arg("kernel_size").ints, sp);
  Shape s = c.arg("stride").ints.empty() ? k : resample::spatial_param(c.arg("stride").ints, sp);
  Shape p = resample::spatial_param(c.arg("padding").ints, sp);
  if (k.size() != sp || s.size() != sp || p.size() != sp)
    fail("avg_pool: bad kernel_size, stride or padding");
  bool ceil = c.arg("ceil_mode").b, include = c.arg("count_include_pad").b;
  int64_t divisor = 0;
  if (c.node.schema->index_of("divisor_override") >= 0 && !c.arg("divisor_override").is_none())
    divisor = c.arg("divisor_override").i;
  // Pad to 3 spatial dims.
  Shape K(3 - sp, 1), S(3 - sp, 1), P(3 - sp, 0), I(3 - sp, 1), O;
  K.insert(K.end(), k.begin(), k.end());
  S.insert(S.end(), s.begin(), s.end());
  P.insert(P.end(), p.begin(), p.end());
  for (size_t i = 0; i < sp; ++i) I.push_back(x.size(x.dim() - int64_t(sp) + int64_t(i)));
  for (int i = 0; i < 3; ++i) {
    if (K[i] <= 0 || S[i] <= 0) fail("kernel size and stride should be greater than zero");
    if (P[i] < 0 || P[i] > K[i] / 2) fail("pad should be at most half of kernel size");
    O.push_back(resample::pool_out_size(I[i], K[i], P[i], S[i], 1, ceil));
    if (O.back() <= 0)
      fail("given input size " + shape_str(x.sizes()) +
           ", the calculated output size is too small");
  }
  Shape osz(x.sizes().begin(), x.sizes().end() - int64_t(sp));
  int64_t planes = checked_numel(osz);
  osz.insert(osz.end(), O.end() - int64_t(sp), O.end());
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), osz);
  std::vector<double> xv = values(x);
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t od = 0; od < O[0]; ++od)
      for (int64_t oh = 0; oh < O[1]; ++oh)
        for (int64_t ow = 0; ow < O[2]; ++ow) {
          int64_t st[3] = {od * S[0] - P[0], oh * S[1] - P[1], ow * S[2] - P[2]};
          int64_t lo[3], hi[3], cnt = 1, full = 1;
          for (int i = 0; i < 3; ++i) {
            int64_t end = std::min(st[i] + K[i], I[i] + P[i]);
            full *= end - st[i];
            lo[i] = std::max<int64_t>(st[i], 0);
            hi[i] = std::min(end, I[i]);
            cnt *= std::max<int64_t>(hi[i] - lo[i], 0);
          }
          double sum = 0;
          for (int64_t a = lo[0]; a < hi[0]; ++a)
            for (int64_t b = lo[1]; b < hi[1]; ++b)
              for (int64_t w = lo[2]; w < hi[2]; ++w)
                sum += xv[size_t(((pl * I[0] + a) * I[1] + b) * I[2] + w)];
          int64_t div = divisor ? divisor : include ? full : cnt;
          out.store(idx++, cnt == 0 ? 0.0 : sum / double(div));
        }
  return {out};
}
Tensors k_avg_pool1d(const KernelCall& c) {
  return avg_pool(c, 1);
}
Tensors k_avg_pool2d(const KernelCall& c) {
  return avg_pool(c, 2);
}
Tensors k_avg_pool3d(const KernelCall& c) {
  return avg_pool(c, 3);
}

// Upsampling over the last `sp` dims (both overloads): mode 0 nearest, 1 nearest-exact, 2 linear
// (upsample_linear1d / bilinear2d / trilinear3d), 3 bicubic. Each output position of a dim reads
// taps (1, 2 or 4 source indices with weights); the value is the weighted sum over the taps of
// every dim, innermost dim first. Indices and weights are computed in float for float and half
// inputs, as PyTorch does.
template <class T> Tensor upsample(const KernelCall& c, const Tensor& x, size_t sp, int mode) {
  resample::Upsample u;
  Shape in(x.sizes().end() - long(sp), x.sizes().end());
  std::string err = resample::upsample_args(c.node, in, u);
  if (!err.empty()) fail(err);
  Shape out_sizes = {x.size(0), x.size(1)};
  out_sizes.insert(out_sizes.end(), u.out.begin(), u.out.end());
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), out_sizes);
  const int taps = mode == 3 ? 4 : mode == 2 ? 2 : 1;
  // Per dim and output position: `taps` source indices and weights.
  std::vector<std::vector<int64_t>> idx(sp);
  std::vector<std::vector<T>> wt(sp);
  for (size_t d = 0; d < sp; ++d) {
    int64_t I = in[d], O = u.out[d];
    T scale = resample::linear_scale<T>(I, O, u.align_corners, u.scale[d]);
    for (int64_t o = 0; o < O; ++o) {
      if (mode < 2) {
        idx[d].push_back(resample::nearest_source(o, I, O, u.scale[d], mode == 1));
        wt[d].push_back(T(1));
      } else if (mode == 2) {
        T real = resample::linear_source<T>(scale, o, u.align_corners);
        int64_t a = std::min(int64_t(std::floor(real)), I - 1);
        T lam = std::min(std::max(real - T(a), T(0)), T(1));
        idx[d].insert(idx[d].end(), {a, a + (a < I - 1 ? 1 : 0)});
        wt[d].insert(wt[d].end(), {T(1) - lam, lam});
      } else {
        T real = resample::cubic_source<T>(scale, o, u.align_corners);
        int64_t a = int64_t(std::floor(real));
        T w[4];
        resample::cubic_coefficients<T>(real - T(a), w);
        for (int j = 0; j < 4; ++j) {
          idx[d].push_back(std::clamp<int64_t>(a - 1 + j, 0, I - 1));
          wt[d].push_back(w[j]);
        }
      }
    }
  }
  std::vector<double> xv = values(x);
  int64_t planes = x.size(0) * x.size(1), plane_in = 1, plane_out = 1;
  for (size_t d = 0; d < sp; ++d) plane_in *= in[d], plane_out *= u.out[d];
  std::vector<int64_t> o(sp, 0);
  // The weighted sum over the taps of dims d.. at output position o, base offset `at`.
  auto interp = [&](auto& self, size_t d, const double* b, int64_t at) -> T {
    if (d == sp) return T(b[at]);
    T acc = T(0);
    for (int t = 0; t < taps; ++t) {
      size_t k = size_t(o[d] * taps + t);
      T v = self(self, d + 1, b, at * in[d] + idx[d][k]);
      acc = t == 0 ? wt[d][k] * v : acc + wt[d][k] * v;
    }
    return acc;
  };
  int64_t pos = 0;
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* b = xv.data() + pl * plane_in;
    for (int64_t e = 0; e < plane_out; ++e) {
      for (size_t d = sp, r = size_t(e); d-- > 0;) {
        o[d] = int64_t(r % size_t(u.out[d]));
        r /= size_t(u.out[d]);
      }
      out.store(pos++, double(interp(interp, 0, b, 0)));
    }
  }
  return out;
}

Tensors upsample_nd(const KernelCall& c, size_t sp, int mode) {
  const Tensor& x = c.tensor(c.node.schema->index_of("input") >= 0 ? "input" : "self");
  if (x.dim() != int64_t(sp) + 2)
    fail("upsampling expects a " + std::to_string(sp + 2) + "-D input, got " +
         shape_str(x.sizes()));
  if (mode < 2 || c.result_dtype(x.dtype()) == DType::F64)
    return {upsample<double>(c, x, sp, mode)};
  return {upsample<float>(c, x, sp, mode)};
}
Tensors k_upsample_nearest2d(const KernelCall& c) {
  return upsample_nd(c, 2, 0);
}
Tensors k_upsample_nearest_exact2d(const KernelCall& c) {
  return upsample_nd(c, 2, 1);
}
Tensors k_upsample_linear1d(const KernelCall& c) {
  return upsample_nd(c, 1, 2);
}
Tensors k_upsample_bilinear2d(const KernelCall& c) {
  return upsample_nd(c, 2, 2);
}
Tensors k_upsample_trilinear3d(const KernelCall& c) {
  return upsample_nd(c, 3, 2);
}
Tensors k_upsample_bicubic2d(const KernelCall& c) {
  return upsample_nd(c, 2, 3);
}

// grid_sampler_2d (GridSampler.h's formulas): bilinear reads the four neighbours of the
// unnormalized, padded position, nearest the neighbour at nearbyint (half to even), bicubic the
// 4x4 neighbours of the unnormalized position with each tap padded; taps outside the input read 0.
template <class T> Tensor grid_sample(const KernelCall& c, const Tensor& x, const Tensor& grid) {
  int64_t mode = c.arg("interpolation_mode").i, pad = c.arg("padding_mode").i;
  bool align = c.arg("align_corners").b;
  if (mode < 0 || mode > 2 || pad < 0 || pad > 2)
    fail("grid_sampler_2d: bad interpolation_mode " + std::to_string(mode) + " or padding_mode " +
         std::to_string(pad));
  int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  int64_t OH = grid.size(1), OW = grid.size(2);
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), {N, C, OH, OW});
  std::vector<double> xv = values(x), gv = values(grid);
  auto at = [&](const double* b, int64_t h, int64_t w) -> T {
    return h >= 0 && h < H && w >= 0 && w < W ? T(b[h * W + w]) : T(0);
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const double* gp = gv.data() + ((n * OH + oh) * OW + ow) * 2;
        T ix = resample::grid_unnormalize<T>(T(gp[0]), W, align);
        T iy = resample::grid_unnormalize<T>(T(gp[1]), H, align);
        if (mode != 2) {
          ix = resample::grid_pad<T>(ix, W, pad, align);
          iy = resample::grid_pad<T>(iy, H, pad, align);
        }
        for (int64_t ch = 0; ch < C; ++ch) {
          const double* b = xv.data() + (n * C + ch) * H * W;
          T r;
          if (mode == 0) {
            T fx = std::floor(ix), fy = std::floor(iy);
            int64_t x0 = int64_t(fx), y0 = int64_t(fy);
            T tx = ix - fx, ty = iy - fy;
            T nw = (T(1) - tx) * (T(1) - ty), ne = tx * (T(1) - ty), sw = (T(1) - tx) * ty,
              se = tx * ty;
            r = at(b, y0, x0) * nw + at(b, y0, x0 + 1) * ne + at(b, y0 + 1, x0) * sw +
                at(b, y0 + 1, x0 + 1) * se;
          } else if (mode == 1) {
            r = at(b, int64_t(std::nearbyint(iy)), int64_t(std::nearbyint(ix)));
          } else {
            T fx = std::floor(ix), fy = std::floor(iy);
            T wx[4], wy[4];
            resample::cubic_coefficients<T>(ix - fx, wx);
            resample::cubic_coefficients<T>(iy - fy, wy);
            r = T(0);
            for (int i = 0; i < 4; ++i) {
              T row = T(0);
              int64_t yy = int64_t(resample::grid_pad<T>(fy - T(1) + T(i), H, pad, align));
              for (int j = 0; j < 4; ++j) {
                int64_t xx = int64_t(resample::grid_pad<T>(fx - T(1) + T(j), W, pad, align));
                row += wx[j] * at(b, yy, xx);
              }
              r += wy[i] * row;
            }
          }
          out.store(((n * C + ch) * OH + oh) * OW + ow, double(r));
        }
      }
  return out;
}

Tensors k_grid_sampler_2d(const KernelCall& c) {
  const Tensor& x = c.tensor("input");
  const Tensor& grid = c.tensor("grid");
  if (x.dim() != 4 || grid.dim() != 4 || grid.size(0) != x.size(0) || grid.size(3) != 2)
    fail("grid_sampler_2d: expected input (N, C, H, W) and grid (N, Ho, Wo, 2), got " +
         shape_str(x.sizes()) + " and " + shape_str(grid.sizes()));
  if (c.result_dtype(x.dtype()) == DType::F64) return {grid_sample<double>(c, x, grid)};
  return {grid_sample<float>(c, x, grid)};
}

const OpTable<KernelFn>::Row kPoolKernels[] = {
    {OpId::_adaptive_avg_pool2d, k_adaptive_avg_pool2d},
    {OpId::_adaptive_avg_pool3d, k_adaptive_avg_pool3d},
    {OpId::_upsample_nearest_exact2d, k_upsample_nearest_exact2d},
    {OpId::_upsample_nearest_exact2d_vec, k_upsample_nearest_exact2d},
    {OpId::adaptive_avg_pool1d, k_adaptive_avg_pool1d},
    {OpId::adaptive_avg_pool2d, k_adaptive_avg_pool2d},
    {OpId::adaptive_avg_pool3d, k_adaptive_avg_pool3d},
    {OpId::adaptive_max_pool1d, k_adaptive_max_pool1d},
    {OpId::adaptive_max_pool2d, k_adaptive_max_pool2d},
    {OpId::adaptive_max_pool3d, k_adaptive_max_pool3d},
    {OpId::avg_pool1d, k_avg_pool1d},
    {OpId::avg_pool2d, k_avg_pool2d},
    {OpId::avg_pool3d, k_avg_pool3d},
    {OpId::max_pool2d, k_max_pool2d},
    {OpId::max_pool2d_with_indices, k_max_pool2d_with_indices},
    {OpId::max_pool3d, k_max_pool3d},
    {OpId::max_pool3d_with_indices, k_max_pool3d_with_indices},
    {OpId::grid_sampler_2d, k_grid_sampler_2d},
    {OpId::upsample_bicubic2d, k_upsample_bicubic2d},
    {OpId::upsample_bicubic2d_vec, k_upsample_bicubic2d},
    {OpId::upsample_bilinear2d, k_upsample_bilinear2d},
    {OpId::upsample_bilinear2d_vec, k_upsample_bilinear2d},
    {OpId::upsample_nearest2d, k_upsample_nearest2d},
    {OpId::upsample_linear1d, k_upsample_linear1d},
    {OpId::upsample_linear1d_vec, k_upsample_linear1d},
    {OpId::upsample_nearest2d_vec, k_upsample_nearest2d},
    {OpId::upsample_trilinear3d, k_upsample_trilinear3d},
    {OpId::upsample_trilinear3d_vec, k_upsample_trilinear3d},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> pool_kernels() {
  return kPoolKernels;
}

} // namespace fxc::kernel_detail
