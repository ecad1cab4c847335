// Reference kernels of pooling: max_pool2d/3d (with and without indices, padding, dilation and
// ceil mode) and adaptive_avg_pool1d/2d/3d.
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

Tensors k_adaptive_avg_pool2d(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    fail("adaptive_avg_pool2d expects a 3-D or 4-D input, got " + shape_str(x.sizes()));
  Shape os = expand_param(c.arg("output_size").ints, 2, "output_size");
  if (os[0] < 0 || os[1] < 0) fail("adaptive_avg_pool2d: output size must be non-negative");
  int64_t H = x.size(x.dim() - 2), W = x.size(x.dim() - 1);
  for (int64_t d = 0; d < x.dim() - 2; ++d)
    if (x.size(d) == 0) fail("adaptive_avg_pool2d: input has an empty non-spatial dimension");
  if ((H == 0 || W == 0) && os[0] * os[1] > 0)
    fail("adaptive_avg_pool2d: input spatial size is zero");
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

// upsample_nearest2d, _upsample_nearest_exact2d and upsample_bilinear2d (both overloads). The
// source indices and weights are computed in float for float and half inputs, as PyTorch does.
template <class T> Tensor upsample(const KernelCall& c, const Tensor& x, int mode) {
  resample::Upsample u;
  int64_t H = x.size(2), W = x.size(3);
  std::string err = resample::upsample_args(c.node, {H, W}, u);
  if (!err.empty()) fail(err);
  int64_t OH = u.out[0], OW = u.out[1], planes = x.size(0) * x.size(1);
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), {x.size(0), x.size(1), OH, OW});
  std::vector<double> xv = values(x);
  // Per output row/column: two source indices and the weight of the second.
  auto axis = [&](int64_t in, int64_t o, std::optional<double> sc, std::vector<int64_t>& i0,
                  std::vector<int64_t>& i1, std::vector<T>& l1) {
    T scale = resample::linear_scale<T>(in, o, u.align_corners, sc);
    for (int64_t d = 0; d < o; ++d) {
      if (mode != 2) {
        int64_t s = resample::nearest_source(d, in, o, sc, mode == 1);
        i0.push_back(s), i1.push_back(s), l1.push_back(T(0));
        continue;
      }
      T real = resample::linear_source<T>(scale, d, u.align_corners);
      int64_t a = std::min(int64_t(std::floor(real)), in - 1);
      T lam = std::min(std::max(real - T(a), T(0)), T(1));
      i0.push_back(a), i1.push_back(a + (a < in - 1 ? 1 : 0)), l1.push_back(lam);
    }
  };
  std::vector<int64_t> h0, h1, w0, w1;
  std::vector<T> lh, lw;
  axis(H, OH, u.scale[0], h0, h1, lh);
  axis(W, OW, u.scale[1], w0, w1, lw);
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* b = xv.data() + pl * H * W;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        T ah = lh[size_t(oh)], aw = lw[size_t(ow)];
        T v00 = T(b[h0[size_t(oh)] * W + w0[size_t(ow)]]),
          v01 = T(b[h0[size_t(oh)] * W + w1[size_t(ow)]]);
        T v10 = T(b[h1[size_t(oh)] * W + w0[size_t(ow)]]),
          v11 = T(b[h1[size_t(oh)] * W + w1[size_t(ow)]]);
        T r = mode == 2 ? (T(1) - ah) * ((T(1) - aw) * v00 + aw * v01) +
                              ah * ((T(1) - aw) * v10 + aw * v11)
                        : v00;
        out.store(idx++, double(r));
      }
  }
  return out;
}

Tensors upsample2d(const KernelCall& c, int mode) {
  const Tensor& x = c.tensor(c.node.schema->index_of("input") >= 0 ? "input" : "self");
  if (x.dim() != 4)
    fail("upsampling expects a 4-D input (N, C, H, W), got " + shape_str(x.sizes()));
  if (mode != 2 || c.result_dtype(x.dtype()) == DType::F64) return {upsample<double>(c, x, mode)};
  return {upsample<float>(c, x, mode)};
}
Tensors k_upsample_nearest2d(const KernelCall& c) {
  return upsample2d(c, 0);
}
Tensors k_upsample_nearest_exact2d(const KernelCall& c) {
  return upsample2d(c, 1);
}
Tensors k_upsample_bilinear2d(const KernelCall& c) {
  return upsample2d(c, 2);
}

const OpTable<KernelFn>::Row kPoolKernels[] = {
    {OpId::_adaptive_avg_pool2d, k_adaptive_avg_pool2d},
    {OpId::_adaptive_avg_pool3d, k_adaptive_avg_pool3d},
    {OpId::_upsample_nearest_exact2d, k_upsample_nearest_exact2d},
    {OpId::_upsample_nearest_exact2d_vec, k_upsample_nearest_exact2d},
    {OpId::adaptive_avg_pool1d, k_adaptive_avg_pool1d},
    {OpId::adaptive_avg_pool2d, k_adaptive_avg_pool2d},
    {OpId::adaptive_avg_pool3d, k_adaptive_avg_pool3d},
    {OpId::avg_pool1d, k_avg_pool1d},
    {OpId::avg_pool2d, k_avg_pool2d},
    {OpId::avg_pool3d, k_avg_pool3d},
    {OpId::max_pool2d, k_max_pool2d},
    {OpId::max_pool2d_with_indices, k_max_pool2d_with_indices},
    {OpId::max_pool3d, k_max_pool3d},
    {OpId::max_pool3d_with_indices, k_max_pool3d_with_indices},
    {OpId::upsample_bilinear2d, k_upsample_bilinear2d},
    {OpId::upsample_bilinear2d_vec, k_upsample_bilinear2d},
    {OpId::upsample_nearest2d, k_upsample_nearest2d},
    {OpId::upsample_nearest2d_vec, k_upsample_nearest2d},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> pool_kernels() {
  return kPoolKernels;
}

} // namespace fxc::kernel_detail
