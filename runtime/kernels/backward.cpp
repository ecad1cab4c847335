// Reference kernels of the backward ops of the core ATen opset: avg_pool2d_backward/3d,
// adaptive_max_pool2d/3d_backward, _cdist_backward,
// max_pool2d_with_indices_backward, _adaptive_avg_pool2d_backward (each gradient element spread
// over the input positions its output read), embedding_dense_backward (rows accumulated per
// index) and native_layer_norm_backward / native_group_norm_backward (from the saved mean and
// rstd; all three results are computed whatever output_mask says, as only the read ones matter).
#include "runtime/kernels/kernel_util.h"

#include "frontend/resample.h"

namespace fxc::kernel_detail {
namespace {

// The leading (plane) count and the two spatial extents of a 3-D or 4-D tensor.
struct Planes {
  int64_t planes, h, w;
};
Planes planes_of(const Tensor& t, const char* op) {
  if (t.dim() != 3 && t.dim() != 4)
    fail(std::string(op) + " expects a 3-D or 4-D tensor, got " + shape_str(t.sizes()));
  return {checked_numel(Shape(t.sizes().begin(), t.sizes().end() - 2)), t.size(t.dim() - 2),
          t.size(t.dim() - 1)};
}

void check_grad(const Tensor& go, const Tensor& x, int64_t oh, int64_t ow, const char* op) {
  Shape want(x.sizes().begin(), x.sizes().end() - 2);
  want.insert(want.end(), {oh, ow});
  if (go.sizes() != want)
    fail(std::string(op) + ": grad_output is " + shape_str(go.sizes()) + " but the output is " +
         shape_str(want));
}

Tensors k_avg_pool2d_backward(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_output");
  const Tensor& x = c.tensor("self");
  Planes p = planes_of(x, "avg_pool2d_backward");
  Shape k = expand_param(c.arg("kernel_size").ints, 2, "kernel_size");
  Shape s = c.arg("stride").ints.empty() ? k : expand_param(c.arg("stride").ints, 2, "stride");
  Shape pad = expand_param(c.arg("padding").ints, 2, "padding");
  bool ceil = c.arg("ceil_mode").b, include = c.arg("count_include_pad").b;
  int64_t divisor = c.arg("divisor_override").is_none() ? 0 : c.arg("divisor_override").i;
  int64_t I[2] = {p.h, p.w}, O[2];
  for (int i = 0; i < 2; ++i) {
    if (k[i] <= 0 || s[i] <= 0 || pad[i] < 0 || pad[i] > k[i] / 2)
      fail("avg_pool2d_backward: bad kernel_size, stride or padding");
    O[i] = resample::pool_out_size(I[i], k[i], pad[i], s[i], 1, ceil);
  }
  check_grad(go, x, O[0], O[1], "avg_pool2d_backward");
  std::vector<double> g = values(go), out(size_t(p.planes * p.h * p.w), 0.0);
  for (int64_t pl = 0; pl < p.planes; ++pl)
    for (int64_t oh = 0; oh < O[0]; ++oh)
      for (int64_t ow = 0; ow < O[1]; ++ow) {
        int64_t st[2] = {oh * s[0] - pad[0], ow * s[1] - pad[1]}, lo[2], hi[2], full = 1, cnt = 1;
        for (int i = 0; i < 2; ++i) {
          int64_t end = std::min(st[i] + k[i], I[i] + pad[i]);
          full *= end - st[i];
          lo[i] = std::max<int64_t>(st[i], 0);
          hi[i] = std::min(end, I[i]);
          cnt *= std::max<int64_t>(hi[i] - lo[i], 0);
        }
        int64_t div = divisor ? divisor : include ? full : cnt;
        if (cnt == 0) continue;
        double v = g[size_t((pl * O[0] + oh) * O[1] + ow)] / double(div);
        for (int64_t a = lo[0]; a < hi[0]; ++a)
          for (int64_t b = lo[1]; b < hi[1]; ++b) out[size_t((pl * p.h + a) * p.w + b)] += v;
      }
  return {make(c.result_dtype(go.dtype()), x.sizes(), out)};
}

Tensors k_avg_pool3d_backward(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_output");
  const Tensor& x = c.tensor("self");
  if (x.dim() != 4 && x.dim() != 5)
    fail("avg_pool3d_backward expects a 4-D or 5-D tensor, got " + shape_str(x.sizes()));
  Shape k = expand_param(c.arg("kernel_size").ints, 3, "kernel_size");
  Shape s = c.arg("stride").ints.empty() ? k : expand_param(c.arg("stride").ints, 3, "stride");
  Shape pad = expand_param(c.arg("padding").ints, 3, "padding");
  bool ceil = c.arg("ceil_mode").b, include = c.arg("count_include_pad").b;
  int64_t divisor = c.arg("divisor_override").is_none() ? 0 : c.arg("divisor_override").i;
  int64_t I[3], O[3];
  Shape want(x.sizes().begin(), x.sizes().end() - 3);
  for (int i = 0; i < 3; ++i) {
    I[i] = x.size(x.dim() - 3 + i);
    if (k[size_t(i)] <= 0 || s[size_t(i)] <= 0 || pad[size_t(i)] < 0 ||
        pad[size_t(i)] > k[size_t(i)] / 2)
      fail("avg_pool3d_backward: bad kernel_size, stride or padding");
    O[i] = resample::pool_out_size(I[i], k[size_t(i)], pad[size_t(i)], s[size_t(i)], 1, ceil);
    want.push_back(O[i]);
  }
  if (go.sizes() != want)
    fail("avg_pool3d_backward: grad_output is " + shape_str(go.sizes()) + " but the output is " +
         shape_str(want));
  const int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - 3));
  std::vector<double> g = values(go), out(size_t(planes * I[0] * I[1] * I[2]), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t od = 0; od < O[0]; ++od)
      for (int64_t oh = 0; oh < O[1]; ++oh)
        for (int64_t ow = 0; ow < O[2]; ++ow) {
          int64_t o[3] = {od, oh, ow}, lo[3], hi[3], full = 1, cnt = 1;
          for (int i = 0; i < 3; ++i) {
            int64_t st = o[i] * s[size_t(i)] - pad[size_t(i)];
            int64_t end = std::min(st + k[size_t(i)], I[i] + pad[size_t(i)]);
            full *= end - st;
            lo[i] = std::max<int64_t>(st, 0);
            hi[i] = std::min(end, I[i]);
            cnt *= std::max<int64_t>(hi[i] - lo[i], 0);
          }
          if (cnt == 0) continue;
          int64_t div = divisor ? divisor : include ? full : cnt;
          double v = g[size_t(((pl * O[0] + od) * O[1] + oh) * O[2] + ow)] / double(div);
          for (int64_t a = lo[0]; a < hi[0]; ++a)
            for (int64_t b = lo[1]; b < hi[1]; ++b)
              for (int64_t e = lo[2]; e < hi[2]; ++e)
                out[size_t(((pl * I[0] + a) * I[1] + b) * I[2] + e)] += v;
        }
  return {make(c.result_dtype(go.dtype()), x.sizes(), out)};
}

// adaptive_max_pool2d_backward / 3d: each gradient element added at the flat position (over the
// last `sp` dims) its index names.
Tensors adaptive_max_pool_backward(const KernelCall& c, size_t sp) {
  const Tensor& go = c.tensor("grad_output");
  const Tensor& x = c.tensor("self");
  const Tensor& idx = c.tensor("indices");
  const std::string name = "adaptive_max_pool" + std::to_string(sp) + "d_backward";
  if (x.dim() < int64_t(sp) + 1 || go.dim() != x.dim() || idx.sizes() != go.sizes())
    fail(name + ": grad_output " + shape_str(go.sizes()) + ", indices " + shape_str(idx.sizes()) +
         " and self " + shape_str(x.sizes()) + " do not match");
  const int64_t planes = checked_numel(Shape(x.sizes().begin(), x.sizes().end() - long(sp)));
  const int64_t plane_in = checked_numel(Shape(x.sizes().end() - long(sp), x.sizes().end()));
  const int64_t plane_out = checked_numel(Shape(go.sizes().end() - long(sp), go.sizes().end()));
  std::vector<double> g = values(go), at = values(idx), out(size_t(planes * plane_in), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < plane_out; ++o) {
      int64_t i = int64_t(at[size_t(pl * plane_out + o)]);
      if (i < 0 || i >= plane_in)
        fail(name + ": index " + std::to_string(i) + " is outside the input plane of " +
             std::to_string(plane_in) + " elements");
      out[size_t(pl * plane_in + i)] += g[size_t(pl * plane_out + o)];
    }
  return {make(c.result_dtype(go.dtype()), x.sizes(), out)};
}
Tensors k_adaptive_max_pool2d_backward(const KernelCall& c) {
  return adaptive_max_pool_backward(c, 2);
}
Tensors k_adaptive_max_pool3d_backward(const KernelCall& c) {
  return adaptive_max_pool_backward(c, 3);
}

// _cdist_backward (PyTorch's cdist backward formulas per p): the gradient of x1 summed over x2's
// rows and over broadcast batch dims; 0 where a distance is 0.
Tensors k_cdist_backward(const KernelCall& c) {
  const Tensor& gr = c.tensor("grad");
  const Tensor& x1 = c.tensor("x1");
  const Tensor& x2 = c.tensor("x2");
  const Tensor& dist = c.tensor("cdist");
  double p = c.arg("p").f;
  if (x1.dim() < 2 || x2.dim() < 2 || x1.size(x1.dim() - 1) != x2.size(x2.dim() - 1) ||
      gr.sizes() != dist.sizes() || gr.dim() < 2 ||
      gr.size(gr.dim() - 2) != x1.size(x1.dim() - 2) ||
      gr.size(gr.dim() - 1) != x2.size(x2.dim() - 2))
    fail("_cdist_backward: grad " + shape_str(gr.sizes()) + ", x1 " + shape_str(x1.sizes()) +
         " and x2 " + shape_str(x2.sizes()) + " do not match");
  Shape batch(gr.sizes().begin(), gr.sizes().end() - 2);
  const int64_t P = x1.size(x1.dim() - 2), R = x2.size(x2.dim() - 2), M = x1.size(x1.dim() - 1),
                B = checked_numel(batch);
  Shape s1 = batch, s2 = batch;
  s1.insert(s1.end(), {P, M});
  s2.insert(s2.end(), {R, M});
  std::vector<double> a = values(expand_to(x1, s1)), b = values(expand_to(x2, s2));
  std::vector<double> g = values(gr), d = values(dist), out(size_t(B * P * M), 0.0);
  for (int64_t n = 0; n < B; ++n)
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < R; ++j) {
        double dd = d[size_t((n * P + i) * R + j)], gg = g[size_t((n * P + i) * R + j)];
        if (p == 0 || dd == 0) continue;
        for (int64_t k = 0; k < M; ++k) {
          double diff = a[size_t((n * P + i) * M + k)] - b[size_t((n * R + j) * M + k)];
          // In the distances' precision, so |diff| == cdist picks p = inf's maxima as PyTorch.
          if (dist.dtype() != DType::F64) diff = double(float(diff));
          double sgn = double((diff > 0) - (diff < 0)), ad = std::fabs(diff), v;
          if (p == 1)
            v = sgn;
          else if (std::isinf(p))
            v = ad == dd ? sgn : 0;
          else if (p < 2)
            v = ad == 0 ? 0 : sgn * std::pow(ad, p - 1) / std::pow(dd, p - 1);
          else if (p == 2)
            v = diff / dd;
          else
            v = diff * std::pow(ad, p - 2) / std::pow(dd, p - 1);
          out[size_t((n * P + i) * M + k)] += gg * v;
        }
      }
  // Sum the broadcast batch dims back to x1's sizes.
  Tensor full = make(DType::F64, s1, out);
  std::vector<double> red(size_t(x1.numel()), 0.0);
  Shape xs = x1.sizes();
  const size_t lead = s1.size() - xs.size();
  for (int64_t e = 0; e < full.numel(); ++e) {
    int64_t r = e, at = 0, mul = 1;
    for (size_t dd = s1.size(); dd-- > 0;) {
      int64_t c0 = r % s1[dd];
      r /= s1[dd];
      if (dd < lead) continue;
      int64_t sz = xs[dd - lead];
      at += (sz == 1 ? 0 : c0) * mul;
      mul *= sz;
    }
    red[size_t(at)] += out[size_t(e)];
  }
  return {make(c.result_dtype(gr.dtype()), xs, red)};
}

Tensors k_max_pool2d_with_indices_backward(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_output");
  const Tensor& x = c.tensor("self");
  const Tensor& idx = c.tensor("indices");
  Planes p = planes_of(x, "max_pool2d_with_indices_backward");
  if (idx.sizes() != go.sizes())
    fail("max_pool2d_with_indices_backward: indices are " + shape_str(idx.sizes()) +
         " but grad_output is " + shape_str(go.sizes()));
  if (go.dim() != x.dim())
    fail("max_pool2d_with_indices_backward: grad_output is " + shape_str(go.sizes()) +
         " for an input of " + shape_str(x.sizes()));
  const int64_t plane_in = p.h * p.w;
  const int64_t plane_out = go.size(go.dim() - 2) * go.size(go.dim() - 1);
  std::vector<double> g = values(go), at = values(idx), out(size_t(p.planes * plane_in), 0.0);
  for (int64_t pl = 0; pl < p.planes; ++pl)
    for (int64_t o = 0; o < plane_out; ++o) {
      int64_t i = int64_t(at[size_t(pl * plane_out + o)]);
      if (i < 0 || i >= plane_in)
        fail("max_pool2d_with_indices_backward: index " + std::to_string(i) +
             " is outside the input plane of " + std::to_string(plane_in) + " elements");
      out[size_t(pl * plane_in + i)] += g[size_t(pl * plane_out + o)];
    }
  return {make(c.result_dtype(go.dtype()), x.sizes(), out)};
}

Tensors k_adaptive_avg_pool2d_backward(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_output");
  const Tensor& x = c.tensor("self");
  Planes p = planes_of(x, "_adaptive_avg_pool2d_backward");
  if (go.dim() != x.dim())
    fail("_adaptive_avg_pool2d_backward: grad_output is " + shape_str(go.sizes()) +
         " for an input of " + shape_str(x.sizes()));
  int64_t OH = go.size(go.dim() - 2), OW = go.size(go.dim() - 1);
  check_grad(go, x, OH, OW, "_adaptive_avg_pool2d_backward");
  std::vector<double> g = values(go), out(size_t(p.planes * p.h * p.w), 0.0);
  for (int64_t pl = 0; pl < p.planes; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t h0 = (oh * p.h) / OH, h1 = ((oh + 1) * p.h + OH - 1) / OH;
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t w0 = (ow * p.w) / OW, w1 = ((ow + 1) * p.w + OW - 1) / OW;
        double v = g[size_t((pl * OH + oh) * OW + ow)] / double((h1 - h0) * (w1 - w0));
        for (int64_t a = h0; a < h1; ++a)
          for (int64_t b = w0; b < w1; ++b) out[size_t((pl * p.h + a) * p.w + b)] += v;
      }
    }
  return {make(c.result_dtype(go.dtype()), x.sizes(), out)};
}

// Row r of the result sums the gradient rows of the indices equal to r (none at padding_idx);
// scale_grad_by_freq divides each by how often its index occurs.
Tensors k_embedding_dense_backward(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_output");
  const Tensor& idx = c.tensor("indices");
  if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
    fail("embedding_dense_backward: expected i64 or i32 indices, got " + dname(idx.dtype()));
  const int64_t V = c.arg("num_weights").i, pad = c.arg("padding_idx").i;
  if (go.dim() != idx.dim() + 1)
    fail("embedding_dense_backward: grad_output is " + shape_str(go.sizes()) + " for indices " +
         shape_str(idx.sizes()));
  const int64_t D = go.size(go.dim() - 1);
  std::vector<double> g = values(go), ids = values(idx), out(size_t(V * D), 0.0);
  std::vector<double> count(size_t(V), 0.0);
  for (double r : ids) {
    if (r < 0 || r >= double(V))
      fail("embedding_dense_backward: index " + std::to_string(int64_t(r)) +
           " is out of range for a table of " + std::to_string(V) + " rows");
    count[size_t(r)] += 1;
  }
  const bool freq = c.arg("scale_grad_by_freq").b;
  for (size_t k = 0; k < ids.size(); ++k) {
    int64_t r = int64_t(ids[k]);
    if (r == pad) continue;
    double scale = freq ? 1.0 / count[size_t(r)] : 1.0;
    for (int64_t j = 0; j < D; ++j) out[size_t(r * D + j)] += g[size_t(int64_t(k) * D + j)] * scale;
  }
  return {make(c.result_dtype(go.dtype()), {V, D}, out)};
}

// The gradients of a normalisation whose groups are `rows` runs of `m` elements each of x (group
// r's statistics mean[r], rstd[r]); element k of a group has affine parameter param(r, k) (-1:
// none). Returns (dx, dw, db), dw and db of `P` parameters.
template <class Param>
void norm_backward(const std::vector<double>& g, const std::vector<double>& x,
                   const std::vector<double>& mean, const std::vector<double>& rstd,
                   const std::vector<double>& w, int64_t rows, int64_t m, Param param,
                   std::vector<double>& dx, std::vector<double>& dw, std::vector<double>& db) {
  std::vector<double> xhat(static_cast<size_t>(m)), gx(static_cast<size_t>(m));
  for (int64_t r = 0; r < rows; ++r) {
    const size_t base = size_t(r * m);
    double sg = 0, sgx = 0;
    for (int64_t k = 0; k < m; ++k) {
      const int64_t p = param(r, k);
      xhat[size_t(k)] = (x[base + size_t(k)] - mean[size_t(r)]) * rstd[size_t(r)];
      gx[size_t(k)] = g[base + size_t(k)] * (w.empty() ? 1.0 : w[size_t(p)]);
      sg += gx[size_t(k)];
      sgx += gx[size_t(k)] * xhat[size_t(k)];
      dw[size_t(p)] += g[base + size_t(k)] * xhat[size_t(k)];
      db[size_t(p)] += g[base + size_t(k)];
    }
    const double scale = rstd[size_t(r)] / double(m);
    for (int64_t k = 0; k < m; ++k)
      dx[base + size_t(k)] = scale * (double(m) * gx[size_t(k)] - sg - xhat[size_t(k)] * sgx);
  }
}

void check_norm_grad(const Tensor& go, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                     int64_t rows, const char* op) {
  if (go.sizes() != x.sizes())
    fail(std::string(op) + ": grad_out is " + shape_str(go.sizes()) + " but the input is " +
         shape_str(x.sizes()));
  if (checked_numel(mean.sizes()) != rows || checked_numel(rstd.sizes()) != rows)
    fail(std::string(op) + ": mean and rstd must hold " + std::to_string(rows) +
         " statistics, got " + shape_str(mean.sizes()) + " and " + shape_str(rstd.sizes()));
}

Tensors k_native_layer_norm_backward(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_out");
  const Tensor& x = c.tensor("input");
  const Tensor& w = c.tensor("weight");
  const Shape& ns = c.arg("normalized_shape").ints;
  const int64_t axis = x.dim() - int64_t(ns.size());
  bool ok = axis >= 0 && !ns.empty();
  for (int64_t i = 0; ok && i < int64_t(ns.size()); ++i) ok = x.size(axis + i) == ns[size_t(i)];
  if (!ok)
    fail("native_layer_norm_backward: normalized_shape " + shape_str(ns) +
         " is not the trailing sizes of the input " + shape_str(x.sizes()));
  const int64_t m = checked_numel(ns), rows = m == 0 ? 0 : checked_numel(x.sizes()) / m;
  check_norm_grad(go, x, c.tensor("mean"), c.tensor("rstd"), rows, "native_layer_norm_backward");
  check_affine(w, m, "weight");
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> dx(size_t(rows * m)), dw(size_t(m), 0.0), db(size_t(m), 0.0);
  norm_backward(
      values(go), values(x), values(c.tensor("mean")), values(c.tensor("rstd")), wv, rows, m,
      [](int64_t, int64_t k) { return k; }, dx, dw, db);
  DType wdt = c.result_dtype(w.defined() ? w.dtype() : x.dtype());
  return {make(c.result_dtype(x.dtype()), x.sizes(), dx), make(wdt, ns, dw), make(wdt, ns, db)};
}

Tensors k_native_group_norm_backward(const KernelCall& c) {
  const Tensor& go = c.tensor("grad_out");
  const Tensor& x = c.tensor("input");
  const Tensor& w = c.tensor("weight");
  const int64_t N = c.arg("N").i, C = c.arg("C").i, HxW = c.arg("HxW").i, G = c.arg("group").i;
  if (x.dim() < 2 || x.size(0) != N || x.size(1) != C || checked_numel(x.sizes()) != N * C * HxW)
    fail("native_group_norm_backward: N, C, HxW do not describe the input " + shape_str(x.sizes()));
  if (G <= 0 || C % G != 0)
    fail("native_group_norm_backward: " + std::to_string(C) +
         " channels are not divisible by group=" + std::to_string(G));
  check_norm_grad(go, x, c.tensor("mean"), c.tensor("rstd"), N * G, "native_group_norm_backward");
  check_affine(w, C, "weight");
  const int64_t D = C / G, m = D * HxW;
  std::vector<double> wv = w.defined() ? values(w) : std::vector<double>();
  std::vector<double> dx(size_t(N * C * HxW)), dw(size_t(C), 0.0), db(size_t(C), 0.0);
  // Group r = n * G + g covers channels g * D .. g * D + D - 1, HxW elements each.
  norm_backward(
      values(go), values(x), values(c.tensor("mean")), values(c.tensor("rstd")), wv, N * G, m,
      [&](int64_t r, int64_t k) { return (r % G) * D + k / HxW; }, dx, dw, db);
  DType wdt = c.result_dtype(w.defined() ? w.dtype() : x.dtype());
  return {make(c.result_dtype(x.dtype()), x.sizes(), dx), make(wdt, {C}, dw), make(wdt, {C}, db)};
}

const OpTable<KernelFn>::Row kBackwardKernels[] = {
    {OpId::_adaptive_avg_pool2d_backward, k_adaptive_avg_pool2d_backward},
    {OpId::_cdist_backward, k_cdist_backward},
    {OpId::adaptive_max_pool2d_backward, k_adaptive_max_pool2d_backward},
    {OpId::adaptive_max_pool3d_backward, k_adaptive_max_pool3d_backward},
    {OpId::avg_pool2d_backward, k_avg_pool2d_backward},
    {OpId::avg_pool3d_backward, k_avg_pool3d_backward},
    {OpId::embedding_dense_backward, k_embedding_dense_backward},
    {OpId::max_pool2d_with_indices_backward, k_max_pool2d_with_indices_backward},
    {OpId::native_group_norm_backward, k_native_group_norm_backward},
    {OpId::native_layer_norm_backward, k_native_layer_norm_backward},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> backward_kernels() {
  return kBackwardKernels;
}

} // namespace fxc::kernel_detail
