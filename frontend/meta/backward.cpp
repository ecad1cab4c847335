// Meta functions of the backward ops of the core ATen opset that exported backward graphs
// contain: avg_pool2d_backward, avg_pool3d_backward, adaptive_max_pool2d/3d_backward,
// _cdist_backward, max_pool2d_with_indices_backward,
// _adaptive_avg_pool2d_backward (each the input's sizes, in grad_output's dtype),
// embedding_dense_backward, and native_layer_norm_backward / native_group_norm_backward (grad_input
// like the input, grad_weight and grad_bias shaped like the affine parameters).
#include "frontend/meta/meta_util.h"
#include "frontend/resample.h"

namespace fxc::meta_detail {
namespace {

// grad_output must have self's leading dims and float dtype; the result has self's sizes.
Metas pool2d_grad(const Ctx& c, const Sizes& out_spatial) {
  const TensorMeta& go = c.tensor("grad_output");
  const TensorMeta& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("expected a 3D or 4D (batch mode) 'self', but " + c.desc("self"));
  Sizes want(x.sizes.begin(), x.sizes.end() - 2);
  want.insert(want.end(), out_spatial.begin(), out_spatial.end());
  if (go.sizes != want)
    c.fail("'grad_output' must have the pooled output's sizes " + join(want) + ", but " +
           c.desc("grad_output"));
  if (!is_floating(go.dtype))
    c.fail("'grad_output' must be floating point, but " + c.desc("grad_output"));
  return {make(go.dtype, x.sizes, x.device)};
}

// The pooled sizes of the last two dims of self (PyTorch's pooling_output_shape).
Sizes pooled(const Ctx& c, const Sizes& k, const Sizes& s, const Sizes& p, const Sizes& d,
             bool ceil) {
  const TensorMeta& x = c.tensor("self");
  Sizes out;
  for (size_t i = 0; i < 2; ++i) {
    if (k[i] <= 0 || s[i] <= 0 || d[i] <= 0 || p[i] < 0 || p[i] > k[i] / 2)
      c.fail("bad pooling parameters: kernel_size " + join(k) + ", stride " + join(s) +
             ", padding " + join(p));
    out.push_back(
        resample::pool_out_size(x.sizes[x.sizes.size() - 2 + i], k[i], p[i], s[i], d[i], ceil));
  }
  return out;
}

Metas avg_pool2d_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Sizes k = c.ints_n("kernel_size", 2);
  Sizes s = c.ints("stride").empty() ? k : c.ints_n("stride", 2);
  if (c.has("divisor_override") && c.int_("divisor_override") == 0)
    c.fail("avg_pool2d_backward: divisor must be not zero");
  const TensorMeta& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("expected a 3D or 4D (batch mode) 'self', but " + c.desc("self"));
  return pool2d_grad(c, pooled(c, k, s, c.ints_n("padding", 2), {1, 1}, c.bool_("ceil_mode")));
}

// avg_pool3d_backward: self (N,)C,D,H,W; grad_output the pooled sizes of its last three dims.
Metas avg_pool3d_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Sizes k = c.ints_n("kernel_size", 3);
  Sizes s = c.ints("stride").empty() ? k : c.ints_n("stride", 3);
  Sizes p = c.ints_n("padding", 3);
  if (c.has("divisor_override") && c.int_("divisor_override") == 0)
    c.fail("avg_pool3d_backward: divisor must be not zero");
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& go = c.tensor("grad_output");
  if (x.dim() != 4 && x.dim() != 5)
    c.fail("expected a 4D or 5D (batch mode) 'self', but " + c.desc("self"));
  Sizes want(x.sizes.begin(), x.sizes.end() - 3);
  for (size_t i = 0; i < 3; ++i) {
    if (k[i] <= 0 || s[i] <= 0 || p[i] < 0 || p[i] > k[i] / 2)
      c.fail("bad pooling parameters: kernel_size " + join(k) + ", stride " + join(s) +
             ", padding " + join(p));
    want.push_back(resample::pool_out_size(x.sizes[x.sizes.size() - 3 + i], k[i], p[i], s[i], 1,
                                           c.bool_("ceil_mode")));
  }
  if (go.sizes != want)
    c.fail("'grad_output' must have the pooled output's sizes " + join(want) + ", but " +
           c.desc("grad_output"));
  if (!is_floating(go.dtype))
    c.fail("'grad_output' must be floating point, but " + c.desc("grad_output"));
  return {make(go.dtype, x.sizes, x.device)};
}

// adaptive_max_pool2d_backward / 3d: self's sizes in grad_output's dtype; indices like grad_output.
Metas adaptive_max_pool_backward(const Graph& g, const Node& n, size_t sp) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& go = c.tensor("grad_output");
  const TensorMeta& idx = c.tensor("indices");
  if (x.dim() != int64_t(sp) + 1 && x.dim() != int64_t(sp) + 2)
    c.fail("expected a " + std::to_string(sp + 1) + "D or " + std::to_string(sp + 2) +
           "D (batch mode) 'self', but " + c.desc("self"));
  if (go.dim() != x.dim() ||
      !std::equal(x.sizes.begin(), x.sizes.end() - int64_t(sp), go.sizes.begin()))
    c.fail("'grad_output' must have self's leading dims, but " + c.desc("grad_output") + " and " +
           c.desc("self"));
  if (idx.dtype != DType::I64) c.fail("'indices' must be i64, but " + c.desc("indices"));
  if (idx.sizes != go.sizes)
    c.fail("'indices' must have grad_output's sizes, but " + c.desc("indices") + " and " +
           c.desc("grad_output"));
  if (!is_floating(go.dtype))
    c.fail("'grad_output' must be floating point, but " + c.desc("grad_output"));
  return {make(go.dtype, x.sizes, x.device)};
}
Metas adaptive_max_pool2d_backward(const Graph& g, const Node& n) {
  return adaptive_max_pool_backward(g, n, 2);
}
Metas adaptive_max_pool3d_backward(const Graph& g, const Node& n) {
  return adaptive_max_pool_backward(g, n, 3);
}

// _cdist_backward: the gradient of x1 (x1's sizes, grad's dtype).
Metas cdist_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& gr = c.tensor("grad");
  const TensorMeta& x1 = c.tensor("x1");
  const TensorMeta& x2 = c.tensor("x2");
  const TensorMeta& d = c.tensor("cdist");
  if (x1.dim() < 2 || x2.dim() < 2 || x1.sizes.back() != x2.sizes.back())
    c.fail("_cdist_backward: x1 and x2 must be at least 2-D with the same last dim, but " +
           c.desc("x1") + " and " + c.desc("x2"));
  if (gr.sizes != d.sizes || gr.dim() < 2 ||
      gr.sizes[gr.sizes.size() - 2] != x1.sizes[x1.sizes.size() - 2] ||
      gr.sizes.back() != x2.sizes[x2.sizes.size() - 2])
    c.fail("_cdist_backward: grad and cdist must be the distances' sizes, but " + c.desc("grad") +
           " and " + c.desc("cdist"));
  if (!is_floating(gr.dtype))
    c.fail("_cdist_backward: grad must be floating point, but " + c.desc("grad"));
  return {make(gr.dtype, x1.sizes, x1.device)};
}

Metas max_pool2d_with_indices_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Sizes k = c.ints_n("kernel_size", 2);
  Sizes s = c.ints("stride").empty() ? k : c.ints_n("stride", 2);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("expected a 3D or 4D (batch mode) 'self', but " + c.desc("self"));
  const TensorMeta& idx = c.tensor("indices");
  if (idx.dtype != DType::I64) c.fail("'indices' must be i64, but " + c.desc("indices"));
  if (idx.sizes != c.tensor("grad_output").sizes)
    c.fail("'indices' must have grad_output's sizes, but " + c.desc("indices") + " and " +
           c.desc("grad_output"));
  return pool2d_grad(
      c, pooled(c, k, s, c.ints_n("padding", 2), c.ints_n("dilation", 2), c.bool_("ceil_mode")));
}

Metas adaptive_avg_pool2d_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& go = c.tensor("grad_output");
  const TensorMeta& x = c.tensor("self");
  if (go.dim() != x.dim() || go.dim() < 3)
    c.fail("'grad_output' and 'self' must both be 3D or 4D, but " + c.desc("grad_output") +
           " and " + c.desc("self"));
  return pool2d_grad(c, Sizes(go.sizes.end() - 2, go.sizes.end()));
}

Metas embedding_dense_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& go = c.tensor("grad_output");
  const TensorMeta& idx = c.tensor("indices");
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32)
    c.fail("expected indices of dtype i64 or i32, but " + c.desc("indices"));
  if (go.dim() != idx.dim() + 1 ||
      !std::equal(idx.sizes.begin(), idx.sizes.end(), go.sizes.begin()))
    c.fail("'grad_output' must be the indices' sizes plus the embedding dim, but " +
           c.desc("grad_output") + " and " + c.desc("indices"));
  int64_t rows = c.int_("num_weights");
  if (rows < 0) c.fail("num_weights must be non-negative, got " + std::to_string(rows));
  return {make(go.dtype, {rows, go.sizes.back()}, go.device)};
}

// grad_out must be the input's sizes and float; the statistics must hold `rows` elements each.
void norm_backward_checks(const Ctx& c, int64_t rows) {
  const TensorMeta& go = c.tensor("grad_out");
  const TensorMeta& x = c.tensor("input");
  if (go.sizes != x.sizes)
    c.fail("'grad_out' must have the input's sizes, but " + c.desc("grad_out") + " and " +
           c.desc("input"));
  if (!is_floating(go.dtype) || !is_floating(x.dtype))
    c.fail("'grad_out' and 'input' must be floating point, but " + c.desc("grad_out") + " and " +
           c.desc("input"));
  for (const char* s : {"mean", "rstd"})
    if (c.tensor(s).numel() != rows)
      c.fail(std::string("'") + s + "' must hold " + std::to_string(rows) + " statistics, but " +
             c.desc(s));
  if (c.arg("output_mask").bools.size() != 3)
    c.fail("'output_mask' must hold 3 bools, got " +
           std::to_string(c.arg("output_mask").bools.size()));
}

Metas native_layer_norm_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const Sizes& ns = c.ints("normalized_shape");
  const int64_t axis = x.dim() - int64_t(ns.size());
  if (ns.empty() || axis < 0 || !std::equal(ns.begin(), ns.end(), x.sizes.begin() + axis))
    c.fail("given normalized_shape=" + join(ns) + ", expected input with shape [*, " +
           (ns.empty() ? std::string("]") : join(ns).substr(1)) + ", but " + c.desc("input"));
  for (const char* w : {"weight", "bias"})
    if (const TensorMeta* t = c.opt_tensor(w); t && t->sizes != ns)
      c.fail(std::string("expected ") + w + " of the same shape as normalized_shape " + join(ns) +
             ", but " + c.desc(w));
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= x.sizes[size_t(d)];
  norm_backward_checks(c, rows);
  const TensorMeta* w = c.opt_tensor("weight");
  DType wdt = w ? w->dtype : x.dtype;
  return {make(x.dtype, x.sizes, x.device), make(wdt, ns, x.device), make(wdt, ns, x.device)};
}

Metas native_group_norm_backward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const int64_t N = c.int_("N"), C = c.int_("C"), HxW = c.int_("HxW"), G = c.int_("group");
  if (x.dim() < 2 || x.sizes[0] != N || x.sizes[1] != C || x.numel() != N * C * HxW)
    c.fail("N=" + std::to_string(N) + ", C=" + std::to_string(C) + ", HxW=" + std::to_string(HxW) +
           " do not describe " + c.desc("input"));
  if (G <= 0 || C % G != 0)
    c.fail("expected the number of channels " + std::to_string(C) +
           " to be divisible by group=" + std::to_string(G));
  if (const TensorMeta* t = c.opt_tensor("weight"); t && (t->dim() != 1 || t->sizes[0] != C))
    c.fail("expected weight to be a vector of " + std::to_string(C) + " elements, but " +
           c.desc("weight"));
  norm_backward_checks(c, N * G);
  const TensorMeta* w = c.opt_tensor("weight");
  DType wdt = w ? w->dtype : x.dtype;
  return {make(x.dtype, x.sizes, x.device), make(wdt, {C}, x.device), make(wdt, {C}, x.device)};
}

const OpTable<MetaFn>::Row kBackwardMeta[] = {
    {OpId::_adaptive_avg_pool2d_backward, guarded<adaptive_avg_pool2d_backward>},
    {OpId::_cdist_backward, guarded<cdist_backward>},
    {OpId::adaptive_max_pool2d_backward, guarded<adaptive_max_pool2d_backward>},
    {OpId::adaptive_max_pool3d_backward, guarded<adaptive_max_pool3d_backward>},
    {OpId::avg_pool2d_backward, guarded<avg_pool2d_backward>},
    {OpId::avg_pool3d_backward, guarded<avg_pool3d_backward>},
    {OpId::embedding_dense_backward, guarded<embedding_dense_backward>},
    {OpId::max_pool2d_with_indices_backward, guarded<max_pool2d_with_indices_backward>},
    {OpId::native_group_norm_backward, guarded<native_group_norm_backward>},
    {OpId::native_layer_norm_backward, guarded<native_layer_norm_backward>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> backward_meta() {
  return kBackwardMeta;
}

} // namespace fxc::meta_detail
