// Reference kernels of pooling: max_pool2d (with and without indices, padding, dilation and
// ceil mode) and adaptive_avg_pool2d.
#include "runtime/kernels/kernel_util.h"

namespace fxc::kernel_detail {
namespace {

// PyTorch's pooling_output_shape.
int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

Tensors max_pool(const KernelCall& c, bool with_indices) {
  Tensor x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    fail("max_pool2d expects a 3-D or 4-D input, got " + shape_str(x.sizes()));
  Shape k = expand_param(c.arg("kernel_size").ints, 2, "kernel_size");
  Shape s = c.arg("stride").ints.empty() ? k : expand_param(c.arg("stride").ints, 2, "stride");
  Shape p = expand_param(c.arg("padding").ints, 2, "padding");
  Shape d = expand_param(c.arg("dilation").ints, 2, "dilation");
  bool ceil = c.arg("ceil_mode").b;
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0) fail("kernel size should be greater than zero");
    if (s[i] <= 0) fail("stride should be greater than zero");
    if (d[i] <= 0) fail("dilation should be greater than zero");
    if (p[i] < 0 || p[i] > k[i] / 2) fail("pad should be at most half of effective kernel size");
  }
  int64_t H = x.size(x.dim() - 2), W = x.size(x.dim() - 1);
  int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - 2));
  int64_t OH = pool_out(H, k[0], p[0], s[0], d[0], ceil),
          OW = pool_out(W, k[1], p[1], s[1], d[1], ceil);
  if (OH <= 0 || OW <= 0)
    fail("given input size " + shape_str(x.sizes()) + ", the calculated output size is too small");
  Shape osz(x.sizes().begin(), x.sizes().end() - 2);
  osz.insert(osz.end(), {OH, OW});
  DType dt = c.fdt(x.dtype());
  Tensor out = Tensor::empty(dt, osz), ind = Tensor::empty(DType::I64, osz);
  std::vector<double> xv = values(x);
  int64_t idx = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t hs = oh * s[0] - p[0], ws = ow * s[1] - p[1];
        int64_t h0 = hs, w0 = ws;
        while (h0 < 0) h0 += d[0];
        while (w0 < 0) w0 += d[1];
        double best = -std::numeric_limits<double>::infinity();
        int64_t bi = h0 * W + w0;
        for (int64_t kh = 0; kh < k[0]; ++kh) {
          int64_t ih = hs + kh * d[0];
          if (ih < 0 || ih >= H) continue;
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            int64_t iw = ws + kw * d[1];
            if (iw < 0 || iw >= W) continue;
            double v = xv[size_t((pl * H + ih) * W + iw)];
            if (v > best || std::isnan(v)) {
              best = v;
              bi = ih * W + iw;
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
  return max_pool(c, false);
}
Tensors k_max_pool2d_with_indices(const KernelCall& c) {
  return max_pool(c, true);
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
  Tensor out = Tensor::empty(c.fdt(x.dtype()), osz);
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

const OpTable<KernelFn>::Row kPoolKernels[] = {
    {OpId::adaptive_avg_pool2d, k_adaptive_avg_pool2d},
    {OpId::max_pool2d, k_max_pool2d},
    {OpId::max_pool2d_with_indices, k_max_pool2d_with_indices},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> pool_kernels() { return kPoolKernels; }

} // namespace fxc::kernel_detail
