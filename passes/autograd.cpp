// Derivative rules, one table row per op, and the reverse walk that builds the joint graph.
#include "passes/autograd.h"
#include "passes/conv_grad.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/log.h"
#include "frontend/resample.h"
#include "frontend/schema.h"
#include "frontend/tensor_rules.h"
#include "passes/aot_ops.h"
#include "passes/decompose.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>

namespace fxc {

namespace {

/// What a rule sees: the forward node, its output gradients, and where to put input gradients.
struct GradCtx {
  Graph& g;
  Emit e;
  Node n; ///< a copy: rules append to g.nodes
  std::vector<ValueId> gout;
  const std::vector<char>& requires_grad;
  std::vector<std::pair<ValueId, ValueId>> grads;

  const Arg& arg(std::string_view name) const { return n.arg(name); }
  ValueId in(std::string_view name) const { return n.arg(name).tensor; }
  ValueId out(size_t k = 0) const { return n.outputs[k]; }
  /// The gradient of the (single) output.
  ValueId grad_out(size_t k = 0) const {
    assert(gout[k] != kNoValue && "rule reads a missing output gradient");
    return gout[k];
  }
  bool needs(ValueId v) const {
    return v != kNoValue && size_t(v) < requires_grad.size() && requires_grad[size_t(v)];
  }
  bool needs(std::string_view name) const { return needs(in(name)); }
  std::vector<int64_t> sizes(ValueId v) const { return e.sizes(v); }

  /// Records d(loss)/d(input); broadcasts are summed away and the dtype is restored.
  void add_grad(ValueId input, ValueId grad) {
    if (!needs(input) || grad == kNoValue) return;
    TensorMeta m = g.values[input].meta;
    if (e.sizes(grad) != m.sizes) grad = e.sum_to(grad, m.sizes);
    if (e.dtype(grad) != m.dtype) grad = e.cast(grad, m.dtype);
    grads.push_back({input, grad});
  }
  void add_grad(std::string_view name, ValueId grad) { add_grad(in(name), grad); }

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(g.source, msg, n.name, n.target);
  }
  /// Only the first output may carry a gradient (norms' saved statistics, pooling indices).
  void only_first_output() const {
    for (size_t k = 1; k < gout.size(); ++k)
      if (gout[k] != kNoValue)
        fail("gradients through output " + std::to_string(k) + " are not supported");
  }
};

using GradRule = void (*)(GradCtx& c);

int64_t wrap(int64_t d, int64_t rank) {
  return wrap_dim(d, rank);
}

std::vector<int64_t> reduced_dims(const GradCtx& c, const Arg& dim, int64_t rank) {
  std::vector<int64_t> dims;
  if (dim.kind == Arg::Kind::Ints)
    for (int64_t d : dim.ints) dims.push_back(wrap(d, rank));
  if (dim.kind == Arg::Kind::Int) dims.push_back(wrap(dim.i, rank));
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::sort(dims.begin(), dims.end());
  return dims;
}

/// The gradient of a reduction's output, reshaped to the input's rank with 1 at reduced dims.
ValueId keepdim_grad(GradCtx& c, ValueId g, const std::vector<int64_t>& in_sizes,
                     const std::vector<int64_t>& dims) {
  std::vector<int64_t> keep = in_sizes;
  for (int64_t d : dims) keep[size_t(d)] = 1;
  return c.e.reshape(g, keep);
}

int64_t count_of(const std::vector<int64_t>& sizes, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes[size_t(d)];
  return n;
}

std::vector<int64_t> spatial(const Arg& a, size_t n) {
  if (a.ints.size() == 1) return std::vector<int64_t>(n, a.ints[0]);
  return a.ints;
}

ValueId first_input(const GradCtx& c) {
  return c.n.args[0].tensor;
}

// ---- Pointwise -------------------------------------------------------------------------------

void add_tensor(GradCtx& c) {
  double alpha = c.arg("alpha").scalar();
  c.add_grad("self", c.grad_out());
  if (c.needs("other"))
    c.add_grad("other", alpha == 1 ? c.grad_out() : c.e.mul_s(c.grad_out(), alpha));
}

void sub_tensor(GradCtx& c) {
  double alpha = c.arg("alpha").scalar();
  c.add_grad("self", c.grad_out());
  if (c.needs("other")) c.add_grad("other", c.e.mul_s(c.grad_out(), -alpha));
}

void identity(GradCtx& c) {
  c.add_grad(first_input(c), c.grad_out());
}

void mul_tensor(GradCtx& c) {
  if (c.needs("self")) c.add_grad("self", c.e.mul(c.grad_out(), c.in("other")));
  if (c.needs("other")) c.add_grad("other", c.e.mul(c.grad_out(), c.in("self")));
}

void mul_scalar(GradCtx& c) {
  c.add_grad("self", c.e.mul_s(c.grad_out(), c.arg("other").scalar()));
}

void div_tensor(GradCtx& c) {
  if (c.needs("self")) c.add_grad("self", c.e.div(c.grad_out(), c.in("other")));
  if (c.needs("other"))
    c.add_grad("other", c.e.mul(c.e.unary("neg", c.grad_out()), c.e.div(c.out(), c.in("other"))));
}

void div_scalar(GradCtx& c) {
  c.add_grad("self", c.e.div_s(c.grad_out(), c.arg("other").scalar()));
}

void neg(GradCtx& c) {
  c.add_grad("self", c.e.unary("neg", c.grad_out()));
}
void exp(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.out()));
}
void log(GradCtx& c) {
  c.add_grad("self", c.e.div(c.grad_out(), c.in("self")));
}
void sin(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("cos", c.in("self"))));
}

void cos(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("neg", c.e.unary("sin", c.in("self")))));
}

void tanh(GradCtx& c) {
  ValueId y = c.out();
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.rsub_s(1.0, c.e.mul(y, y))));
}

void sigmoid(GradCtx& c) {
  ValueId y = c.out();
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.mul(y, c.e.rsub_s(1.0, y))));
}

void relu(GradCtx& c) {
  c.add_grad("self", c.e.where_s(c.e.cmp_s("gt", c.out(), 0), c.grad_out(), 0.0));
}

void erf(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId d = c.e.mul_s(c.e.unary("exp", c.e.unary("neg", c.e.mul(x, x))), 2.0 / std::sqrt(M_PI));
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}

void rsqrt(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.mul_s(c.e.pow_s(c.out(), 3.0), -0.5)));
}

void sqrt(GradCtx& c) {
  c.add_grad("self", c.e.div(c.grad_out(), c.e.mul_s(c.out(), 2.0)));
}

void reciprocal(GradCtx& c) {
  ValueId y = c.out();
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("neg", c.e.mul(y, y))));
}

void abs(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("sign", c.in("self"))));
}

void pow_tensor_scalar(GradCtx& c) {
  double p = c.arg("exponent").scalar();
  ValueId x = c.in("self");
  if (p == 0) return; // constant output: no gradient
  if (p == 1) return c.add_grad("self", c.grad_out());
  ValueId d = p == 2 ? c.e.mul_s(x, 2.0) : c.e.mul_s(c.e.pow_s(x, p - 1), p);
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}

void pow_tensor_tensor(GradCtx& c) {
  ValueId x = c.in("self"), p = c.in("exponent");
  if (c.needs("self")) {
    ValueId d =
        c.e.mul(p, c.e.op("aten.pow.Tensor_Tensor", {Emit::t(x), Emit::t(c.e.add_s(p, -1.0))}));
    c.add_grad("self", c.e.mul(c.grad_out(), d));
  }
  if (c.needs("exponent")) {
    // d/dp x^p = x^p log x, defined as 0 where x == 0 and p >= 0 (derivatives.yaml).
    ValueId val = c.e.mul(c.grad_out(), c.e.mul(c.out(), c.e.unary("log", x)));
    ValueId zero_base = c.e.op("aten.logical_and.default",
                               {Emit::t(c.e.cmp_s("eq", x, 0)), Emit::t(c.e.cmp_s("ge", p, 0))});
    c.add_grad("exponent", c.e.where_s(c.e.unary("logical_not", zero_base), val, 0.0));
  }
}

void clamp(GradCtx& c) {
  ValueId x = c.in("self"), mask = kNoValue;
  auto both = [&](ValueId m) {
    mask = mask == kNoValue ? m : c.e.op("aten.logical_and.default", {Emit::t(mask), Emit::t(m)});
  };
  if (!c.arg("min").is_none()) both(c.e.cmp_s("ge", x, c.arg("min").scalar()));
  if (!c.arg("max").is_none()) both(c.e.cmp_s("le", x, c.arg("max").scalar()));
  c.add_grad("self", mask == kNoValue ? c.grad_out() : c.e.where_s(mask, c.grad_out(), 0.0));
}

/// maximum/minimum: the winner takes the gradient, ties split it (derivatives.yaml).
void extremum(GradCtx& c, const char* self_wins, const char* other_wins) {
  ValueId a = c.in("self"), b = c.in("other");
  ValueId tie = c.e.cmp("eq", a, b), half = c.e.mul_s(c.grad_out(), 0.5);
  if (c.needs("self"))
    c.add_grad("self",
               c.e.where(tie, half, c.e.where_s(c.e.cmp(self_wins, a, b), c.grad_out(), 0.0)));
  if (c.needs("other"))
    c.add_grad("other",
               c.e.where(tie, half, c.e.where_s(c.e.cmp(other_wins, a, b), c.grad_out(), 0.0)));
}
void maximum(GradCtx& c) {
  extremum(c, "gt", "lt");
}
void minimum(GradCtx& c) {
  extremum(c, "lt", "gt");
}

void gelu(GradCtx& c) {
  ValueId x = c.in("self");
  Emit& e = c.e;
  ValueId d;
  if (c.arg("approximate").s == "tanh") {
    const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
    ValueId x2 = e.mul(x, x);
    ValueId inner = e.mul_s(e.add(x, e.mul_s(e.mul(x2, x), kappa)), beta);
    ValueId t = e.unary("tanh", inner);
    ValueId left = e.mul_s(e.add_s(t, 1.0), 0.5);
    ValueId dinner = e.mul_s(e.add_s(e.mul_s(x2, 3 * kappa), 1.0), beta);
    ValueId right = e.mul(e.mul(e.mul_s(x, 0.5), e.rsub_s(1.0, e.mul(t, t))), dinner);
    d = e.add(left, right);
  } else {
    ValueId cdf = e.mul_s(e.add_s(e.unary("erf", e.mul_s(x, M_SQRT1_2)), 1.0), 0.5);
    ValueId pdf = e.mul_s(e.unary("exp", e.mul_s(e.mul(x, x), -0.5)), 1.0 / std::sqrt(2.0 * M_PI));
    d = e.add(cdf, e.mul(x, pdf));
  }
  c.add_grad("self", e.mul(c.grad_out(), d));
}

void silu(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId s = c.e.unary("sigmoid", x);
  ValueId d = c.e.mul(s, c.e.add_s(c.e.mul(x, c.e.rsub_s(1.0, s)), 1.0));
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}

void hardswish(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId mid = c.e.mul(c.grad_out(), c.e.add_s(c.e.div_s(x, 3.0), 0.5));
  ValueId upper = c.e.where(c.e.cmp_s("le", x, 3.0), mid, c.grad_out());
  c.add_grad("self", c.e.where_s(c.e.cmp_s("ge", x, -3.0), upper, 0.0));
}

void hardsigmoid(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId inside = c.e.op("aten.logical_and.default",
                          {Emit::t(c.e.cmp_s("gt", x, -3.0)), Emit::t(c.e.cmp_s("lt", x, 3.0))});
  c.add_grad("self", c.e.where_s(inside, c.e.div_s(c.grad_out(), 6.0), 0.0));
}

void where_self(GradCtx& c) {
  ValueId cond = c.in("condition");
  if (c.needs("self")) c.add_grad("self", c.e.where_s(cond, c.grad_out(), 0.0));
  if (c.needs("other"))
    c.add_grad("other", c.e.where_s(c.e.unary("logical_not", cond), c.grad_out(), 0.0));
}

void where_scalar_other(GradCtx& c) {
  c.add_grad("self", c.e.where_s(c.in("condition"), c.grad_out(), 0.0));
}

void masked_fill(GradCtx& c) {
  c.add_grad("self", c.e.where_s(c.e.unary("logical_not", c.in("mask")), c.grad_out(), 0.0));
}

// ---- Reductions and normalisation --------------------------------------------------------------

void sum_default(GradCtx& c) {
  c.add_grad("self", c.e.expand(c.grad_out(), c.sizes(c.in("self"))));
}

void sum_dim(GradCtx& c) {
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  std::vector<int64_t> dims = reduced_dims(c, c.arg("dim"), int64_t(xs.size()));
  c.add_grad("self", c.e.expand(keepdim_grad(c, c.grad_out(), xs, dims), xs));
}

void mean_default(GradCtx& c) {
  std::vector<int64_t> xs = c.sizes(c.in("self"));
  c.add_grad("self",
             c.e.expand(c.e.div_s(c.grad_out(),
                                  double(count_of(xs, reduced_dims(c, {}, int64_t(xs.size()))))),
                        xs));
}

void mean_dim(GradCtx& c) {
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  std::vector<int64_t> dims = reduced_dims(c, c.arg("dim"), int64_t(xs.size()));
  ValueId g = c.e.div_s(keepdim_grad(c, c.grad_out(), xs, dims), double(count_of(xs, dims)));
  c.add_grad("self", c.e.expand(g, xs));
}

void amax(GradCtx& c) {
  // The gradient is shared equally among the elements that attain the maximum.
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  std::vector<int64_t> dims = reduced_dims(c, c.arg("dim"), int64_t(xs.size()));
  ValueId hit = c.e.cmp("eq", x, keepdim_grad(c, c.out(), xs, dims));
  ValueId count = c.e.sum(c.e.cast(hit, c.e.dtype(x)), dims, true);
  ValueId share = c.e.div(keepdim_grad(c, c.grad_out(), xs, dims), count);
  c.add_grad("self", c.e.where_s(hit, c.e.expand(share, xs), 0.0));
}

void softmax(GradCtx& c) {
  ValueId y = c.out(), g = c.grad_out();
  if (c.e.dim(y) == 0) return c.add_grad("self", c.e.mul_s(g, 0.0));
  int64_t dim = wrap(c.arg("dim").i, c.e.dim(y));
  c.add_grad("self", c.e.mul(y, c.e.sub(g, c.e.sum(c.e.mul(g, y), {dim}, true))));
}

void log_softmax(GradCtx& c) {
  ValueId y = c.out(), g = c.grad_out();
  if (c.e.dim(y) == 0) return c.add_grad("self", c.e.mul_s(g, 0.0));
  int64_t dim = wrap(c.arg("dim").i, c.e.dim(y));
  c.add_grad("self", c.e.sub(g, c.e.mul(c.e.unary("exp", y), c.e.sum(g, {dim}, true))));
}

/// Layer-norm backward from the saved statistics (mean, rstd keep the normalized dims as 1).
void layer_norm_from_stats(GradCtx& c, ValueId mean, ValueId rstd) {
  Emit& e = c.e;
  ValueId x = c.in("input"), g = c.grad_out();
  int64_t rank = e.dim(x), k = int64_t(c.arg("normalized_shape").ints.size());
  std::vector<int64_t> dims;
  for (int64_t d = rank - k; d < rank; ++d) dims.push_back(d);
  double n = double(count_of(c.sizes(x), dims));
  ValueId xhat = e.mul(e.sub(x, mean), rstd);
  ValueId w = c.arg("weight").is_none() ? kNoValue : c.in("weight");
  if (c.needs("input")) {
    ValueId gx = w == kNoValue ? g : e.mul(g, w);
    ValueId inner = e.sub(e.sub(e.mul_s(gx, n), e.sum(gx, dims, true)),
                          e.mul(xhat, e.sum(e.mul(gx, xhat), dims, true)));
    c.add_grad("input", e.mul(e.div_s(rstd, n), inner));
  }
  if (w != kNoValue && c.needs(w)) c.add_grad(w, e.mul(g, xhat));
  if (!c.arg("bias").is_none()) c.add_grad("bias", g);
}

void native_layer_norm(GradCtx& c) {
  c.only_first_output();
  layer_norm_from_stats(c, c.out(1), c.out(2));
}

void batch_norm_eval(GradCtx& c) {
  c.only_first_output();
  if (c.n.schema->index_of("training") >= 0 && c.arg("training").b)
    c.fail("batch norm backward in training mode is not supported");
  if (c.arg("running_mean").is_none() || c.arg("running_var").is_none())
    c.fail("batch norm without running statistics is not supported");
  Emit& e = c.e;
  ValueId x = c.in("input"), g = c.grad_out();
  int64_t rank = e.dim(x);
  auto per_channel = [&](ValueId v) {
    std::vector<int64_t> s(size_t(rank), 1);
    s[1] = e.sizes(v)[0];
    return e.reshape(v, s);
  };
  ValueId inv = per_channel(e.unary("rsqrt", e.add_s(c.in("running_var"), c.arg("eps").f)));
  ValueId w = c.arg("weight").is_none() ? kNoValue : c.in("weight");
  std::vector<int64_t> not_channel;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1) not_channel.push_back(d);
  if (c.needs("input"))
    c.add_grad("input", e.mul(g, w == kNoValue ? inv : e.mul(inv, per_channel(w))));
  if (w != kNoValue && c.needs(w)) {
    ValueId xhat = e.mul(e.sub(x, per_channel(c.in("running_mean"))), inv);
    c.add_grad(w, e.sum(e.mul(g, xhat), not_channel, false));
  }
  if (!c.arg("bias").is_none() && c.needs("bias")) c.add_grad("bias", e.sum(g, not_channel, false));
}

// ---- Matrix products and convolution ------------------------------------------------------------

void mm(GradCtx& c) {
  ValueId a = c.in("self"), b = c.in("mat2");
  if (c.needs(a)) c.add_grad(a, c.e.mm(c.grad_out(), c.e.permute(b, {1, 0})));
  if (c.needs(b)) c.add_grad(b, c.e.mm(c.e.permute(a, {1, 0}), c.grad_out()));
}

void bmm(GradCtx& c) {
  ValueId a = c.in("self"), b = c.in("mat2");
  if (c.needs(a)) c.add_grad(a, c.e.bmm(c.grad_out(), c.e.permute(b, {0, 2, 1})));
  if (c.needs(b)) c.add_grad(b, c.e.bmm(c.e.permute(a, {0, 2, 1}), c.grad_out()));
}

void addmm(GradCtx& c) {
  double beta = c.arg("beta").scalar(), alpha = c.arg("alpha").scalar();
  ValueId a = c.in("mat1"), b = c.in("mat2"), g = c.grad_out();
  if (c.needs("self")) c.add_grad("self", beta == 1 ? g : c.e.mul_s(g, beta));
  ValueId ga = alpha == 1 ? g : c.e.mul_s(g, alpha);
  if (c.needs(a)) c.add_grad(a, c.e.mm(ga, c.e.permute(b, {1, 0})));
  if (c.needs(b)) c.add_grad(b, c.e.mm(c.e.permute(a, {1, 0}), ga));
}

void linear(GradCtx& c) {
  Emit& e = c.e;
  ValueId x = c.in("input"), w = c.in("weight");
  std::vector<int64_t> xs = c.sizes(x);
  int64_t in_f = xs.back(), out_f = c.sizes(w)[0], rows = 1;
  for (size_t d = 0; d + 1 < xs.size(); ++d) rows *= xs[d];
  ValueId g2 = e.reshape(c.grad_out(), {rows, out_f});
  if (c.needs(x)) c.add_grad(x, e.reshape(e.mm(g2, w), xs));
  if (c.needs(w)) c.add_grad(w, e.mm(e.permute(g2, {1, 0}), e.reshape(x, {rows, in_f})));
  if (!c.arg("bias").is_none() && c.needs("bias")) c.add_grad("bias", e.sum(g2, {0}, false));
}

/// Reverses a tensor along `dim` (index_select with a descending arange).
ValueId flip(Emit& e, ValueId v, int64_t dim) {
  int64_t n = e.sizes(v)[size_t(dim)];
  if (n == 1) return v;
  ValueId idx = e.arange(n - 1, -1, -1, e.meta(v).device);
  return e.op("aten.index_select.default", {Emit::t(v), Emit::i(dim), Emit::t(idx)});
}

ValueId conv(Emit& e, ValueId x, ValueId w, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
             int64_t groups) {
  return e.op("aten.convolution.default", {Emit::t(x),
                                           Emit::t(w),
                                           {"", Arg::none()},
                                           Emit::ints(stride),
                                           Emit::ints(padding),
                                           Emit::ints(dilation),
                                           Emit::b(false),
                                           Emit::ints(std::vector<int64_t>(stride.size(), 0)),
                                           Emit::i(groups)});
}

/// d(weight) of one group: the input (batch as channels) convolved with the gradient as the
/// weight, stride and dilation swapped, cropped to the kernel size.
ValueId conv_weight_grad_group(Emit& e, ValueId x, ValueId g, const std::vector<int64_t>& ksz,
                               const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                               const std::vector<int64_t>& d) {
  ValueId r = conv(e, e.transpose(x, 0, 1), e.transpose(g, 0, 1), d, p, s, 1);
  for (size_t i = 0; i < ksz.size(); ++i)
    if (e.sizes(r)[2 + i] != ksz[i]) r = e.slice(r, int64_t(2 + i), 0, ksz[i]);
  return e.transpose(r, 0, 1);
}

} // namespace

/// d(input) of a convolution: the stride-dilated, re-padded gradient convolved with the
/// spatially flipped weight whose in/out channels are swapped within each group.
ValueId conv_input_grad(Emit& e, ValueId g, ValueId w, const std::vector<int64_t>& in_sizes,
                        const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                        const std::vector<int64_t>& d, int64_t groups) {
  size_t sp = s.size();
  std::vector<int64_t> ws = e.sizes(w);
  for (size_t i = 0; i < sp; ++i) {
    int64_t axis = int64_t(2 + i), out_len = e.sizes(g)[2 + i];
    if (s[i] > 1 && out_len > 0) {
      std::vector<int64_t> dil = e.sizes(g);
      int64_t len = (out_len - 1) * s[i] + 1;
      dil[2 + i] = len;
      g = e.slice_scatter(e.zeros(dil, e.meta(g)), g, axis, 0, len, s[i]);
    }
    int64_t len = e.sizes(g)[2 + i], k = ws[2 + i];
    int64_t lo = (k - 1) * d[i] - p[i];
    int64_t hi = in_sizes[2 + i] + p[i] - len;
    g = e.pad_dim(g, axis, lo, hi);
  }
  ValueId wf = w;
  for (size_t i = 0; i < sp; ++i) wf = flip(e, wf, int64_t(2 + i));
  int64_t cout = ws[0], cig = ws[1];
  std::vector<int64_t> grouped = {groups, cout / groups, cig};
  std::vector<int64_t> swapped = {groups * cig, cout / groups};
  for (size_t i = 0; i < sp; ++i) {
    grouped.push_back(ws[2 + i]);
    swapped.push_back(ws[2 + i]);
  }
  if (groups == 1) {
    wf = e.transpose(wf, 0, 1);
  } else {
    wf = e.reshape(e.transpose(e.reshape(wf, grouped), 1, 2), swapped);
  }
  return conv(e, g, wf, std::vector<int64_t>(sp, 1), std::vector<int64_t>(sp, 0), d, groups);
}

ValueId conv_weight_grad(Emit& e, ValueId x, ValueId g, const std::vector<int64_t>& w_sizes,
                         const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                         const std::vector<int64_t>& d, int64_t groups) {
  std::vector<int64_t> ksz(w_sizes.begin() + 2, w_sizes.end());
  if (groups == 1) return conv_weight_grad_group(e, x, g, ksz, s, p, d);
  // Every group at once, as one convolution with `groups` groups (not one per group: a
  // depthwise layer of 960 channels would be 960 convolutions and a concatenation). Group j's
  // input channels are its batch planes: x [N, G*cig, ...] -> [cig, G*N, ...]; its weights are
  // its gradient planes: g [N, G*cog, ...] -> [G*cog, N, ...]. The result [cig, G*cog, k...]
  // transposed is the weight gradient [G*cog, cig, k...].
  std::vector<int64_t> xs = e.sizes(x), gs = e.sizes(g);
  const int64_t N = xs[0], cig = xs[1] / groups, cog = w_sizes[0] / groups;
  const size_t sp = ksz.size();
  auto split = [&](const std::vector<int64_t>& sz, int64_t per) {
    std::vector<int64_t> r = {N, groups, per};
    r.insert(r.end(), sz.begin() + 2, sz.end());
    return r;
  };
  auto merged = [&](const std::vector<int64_t>& sz, int64_t a, int64_t b) {
    std::vector<int64_t> r = {a, b};
    r.insert(r.end(), sz.begin() + 2, sz.end());
    return r;
  };
  std::vector<int64_t> xperm = {2, 1, 0}, gperm = {1, 2, 0};
  for (size_t i = 0; i < sp; ++i) {
    xperm.push_back(int64_t(3 + i));
    gperm.push_back(int64_t(3 + i));
  }
  ValueId xt =
      e.reshape(e.permute(e.reshape(x, split(xs, cig)), xperm), merged(xs, cig, groups * N));
  ValueId gt =
      e.reshape(e.permute(e.reshape(g, split(gs, cog)), gperm), merged(gs, groups * cog, N));
  ValueId r = conv(e, xt, gt, d, p, s, groups);
  for (size_t i = 0; i < sp; ++i)
    if (e.sizes(r)[2 + i] != ksz[i]) r = e.slice(r, int64_t(2 + i), 0, ksz[i]);
  return e.transpose(r, 0, 1);
}

ValueId max_pool_input_grad(Emit& e, ValueId g, ValueId indices,
                            const std::vector<int64_t>& in_sizes,
                            const std::vector<int64_t>& kernel_size,
                            const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                            const std::vector<int64_t>& dilation) {
  const size_t rank = in_sizes.size(), S = kernel_size.size();
  auto param = [&](const std::vector<int64_t>& v, const std::vector<int64_t>& if_empty) {
    return v.empty() ? if_empty : resample::spatial_param(v, S);
  };
  const std::vector<int64_t>& k = kernel_size;
  const std::vector<int64_t> s = param(stride, k), p = param(padding, std::vector<int64_t>(S, 0)),
                             d = param(dilation, std::vector<int64_t>(S, 1));
  const std::vector<int64_t> gs = e.sizes(g);
  if (S == 0 || rank < S || gs.size() != rank || s.size() != S || p.size() != S || d.size() != S ||
      e.sizes(indices) != gs)
    return kNoValue;
  const TensorMeta like = e.meta(g);
  const Device dev = like.device;
  std::vector<int64_t> cands(S);
  int64_t combos = 1;
  for (size_t i = 0; i < S; ++i) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || p[i] < 0) return kNoValue;
    cands[i] = ((k[i] - 1) * d[i] + 1 + s[i] - 1) / s[i];
    combos *= cands[i];
  }
  if (combos > 64) return kNoValue;
  // Per spatial dim i and candidate t: for each input position h the output position
  // floor((h + p) / s) - t, clamped into range, and whether it was in range; shaped to broadcast
  // along dim i of the input.
  auto along = [&](ValueId v, size_t i) {
    std::vector<int64_t> sh(rank, 1);
    sh[rank - S + i] = in_sizes[rank - S + i];
    return e.reshape(v, sh);
  };
  std::vector<std::vector<ValueId>> pos(S), valid(S);
  ValueId flat = kNoValue; // the flat spatial position of each input element
  int64_t inner = 1;
  for (size_t ii = S; ii-- > 0;) {
    const int64_t I = in_sizes[rank - S + ii], O = gs[rank - S + ii];
    ValueId h = e.arange(0, I, 1, dev);
    ValueId term = along(e.mul_s(h, double(inner)), ii);
    flat = flat == kNoValue ? term : e.add(flat, term);
    inner *= I;
    ValueId base =
        e.unary("floor", e.div_s(e.cast(e.add_s(h, double(p[ii])), DType::F64), double(s[ii])));
    for (int64_t t = 0; t < cands[ii]; ++t) {
      ValueId o = e.cast(e.add_s(base, -double(t)), DType::I64);
      ValueId ok = e.op("aten.logical_and.default",
                        {Emit::t(e.cmp_s("ge", o, 0)), Emit::t(e.cmp_s("lt", o, double(O)))});
      pos[ii].push_back(e.cast(e.where_s(ok, o, 0), DType::I64));
      valid[ii].push_back(along(ok, ii));
    }
  }
  ValueId total = kNoValue;
  std::vector<int64_t> t(S, 0);
  for (int64_t c = 0; c < combos; ++c) {
    ValueId gv = g, iv = indices, ok = kNoValue;
    for (size_t i = 0; i < S; ++i) {
      const int64_t dim = int64_t(rank - S + i);
      gv = e.op("aten.index_select.default", {Emit::t(gv), Emit::i(dim), Emit::t(pos[i][t[i]])});
      iv = e.op("aten.index_select.default", {Emit::t(iv), Emit::i(dim), Emit::t(pos[i][t[i]])});
      ok = ok == kNoValue
               ? valid[i][t[i]]
               : e.op("aten.logical_and.default", {Emit::t(ok), Emit::t(valid[i][t[i]])});
    }
    ValueId hit = e.op("aten.logical_and.default", {Emit::t(ok), Emit::t(e.cmp("eq", iv, flat))});
    ValueId part = e.where_s(hit, gv, 0.0);
    total = total == kNoValue ? part : e.add(total, part);
    for (size_t i = S; i-- > 0;) { // next combination
      if (++t[i] < cands[i]) break;
      t[i] = 0;
    }
  }
  return e.cast(total, like.dtype);
}

ValueId index_add_rows(Emit& e, int64_t rows, ValueId ids, ValueId src) {
  const int64_t k = e.sizes(src)[0], dim = e.sizes(src)[1];
  const TensorMeta like = e.meta(src);
  const DType t = like.dtype;
  if (k > 0 && rows > 0 && rows * k <= (int64_t(1) << 26) &&
      (t == DType::F32 || t == DType::F16 || t == DType::BF16)) {
    ValueId r = e.reshape(e.arange(0, rows, 1, like.device), {rows, 1});
    ValueId onehot = e.cast(e.cmp("eq", r, e.reshape(ids, {1, k})), t);
    return e.mm(onehot, src);
  }
  return e.op("aten.scatter_add.default",
              {Emit::t(e.zeros({rows, dim}, like)), Emit::i(0),
               Emit::t(e.expand(e.reshape(ids, {k, 1}), {k, dim})), Emit::t(src)});
}

namespace {

void convolution_common(GradCtx& c, const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                        const std::vector<int64_t>& d, int64_t groups) {
  Emit& e = c.e;
  ValueId x = c.in("input"), w = c.in("weight"), g = c.grad_out();
  std::vector<int64_t> xs = c.sizes(x), ws = c.sizes(w);
  if (ws.size() < 3) c.fail("convolution weight needs at least one spatial dimension");
  size_t sp = ws.size() - 2;
  if (xs.size() != ws.size()) c.fail("unbatched convolution backward is not supported");
  if (s.size() != sp || p.size() != sp || d.size() != sp || groups < 1)
    c.fail("convolution arguments do not match the weight's spatial rank");
  // One convolution_backward node, as PyTorch's derivative: decompose() expands it into the
  // convolutions of conv_input_grad/conv_weight_grad, except where cuDNN computes it.
  const bool bias = !c.arg("bias").is_none() && c.needs("bias");
  const std::vector<bool> mask = {c.needs(x), c.needs(w), bias};
  if (!mask[0] && !mask[1] && !mask[2]) return;
  std::vector<ValueId> r = e.call("aten.convolution_backward.default",
                                  {Emit::t(g),
                                   Emit::t(x),
                                   Emit::t(w),
                                   bias ? Emit::ints({ws[0]}) : CallArg{"", Arg::none()},
                                   Emit::ints(s),
                                   Emit::ints(p),
                                   Emit::ints(d),
                                   Emit::b(false),
                                   Emit::ints(std::vector<int64_t>(sp, 0)),
                                   Emit::i(groups),
                                   {"", Arg::of_bools(mask)}});
  if (mask[0]) c.add_grad(x, r[0]);
  if (mask[1]) c.add_grad(w, r[1]);
  if (mask[2]) c.add_grad("bias", r[2]);
}

void convolution(GradCtx& c) {
  if (c.arg("transposed").b) c.fail("transposed convolution backward is not supported");
  convolution_common(c, c.arg("stride").ints, c.arg("padding").ints, c.arg("dilation").ints,
                     c.arg("groups").i);
}

void conv2d(GradCtx& c) {
  size_t sp = size_t(std::max<int64_t>(c.e.dim(c.in("weight")) - 2, 0));
  convolution_common(c, spatial(c.arg("stride"), sp), spatial(c.arg("padding"), sp),
                     spatial(c.arg("dilation"), sp), c.arg("groups").i);
}

// ---- Pooling, indexing --------------------------------------------------------------------------

/// Scatters the pooled gradient back to the positions its indices (flat over the last `sp`
/// spatial dims: h * W + w, d * H * W + h * W + w) name.
void pool_grad_from_indices(GradCtx& c, ValueId indices, size_t sp = 2) {
  Emit& e = c.e;
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x), gs = c.sizes(c.grad_out());
  if (xs.size() < sp + 1 || gs.size() != xs.size())
    c.fail("max_pool" + std::to_string(sp) + "d backward needs a (N,)C," +
           (sp == 3 ? std::string("D,") : std::string()) + "H,W input");
  int64_t planes = 1, in_plane = 1, out_plane = 1;
  for (size_t d = 0; d + sp < xs.size(); ++d) planes *= xs[d];
  for (size_t d = xs.size() - sp; d < xs.size(); ++d) {
    in_plane *= xs[d];
    out_plane *= gs[d];
  }
  ValueId idx = e.reshape(indices, {planes, out_plane});
  ValueId src = e.reshape(c.grad_out(), {planes, out_plane});
  ValueId gx = e.op("aten.scatter_add.default", {Emit::t(e.zeros({planes, in_plane}, e.meta(x))),
                                                 Emit::i(1), Emit::t(idx), Emit::t(src)});
  c.add_grad(x, e.reshape(gx, xs));
}

/// max_pool{2,3}d_with_indices: the gather form (max_pool_input_grad) where the windows allow,
/// else the scatter of pool_grad_from_indices.
void max_pool_with_indices(GradCtx& c, size_t sp) {
  c.only_first_output();
  ValueId x = c.in("self");
  ValueId gx =
      max_pool_input_grad(c.e, c.grad_out(), c.out(1), c.sizes(x),
                          resample::spatial_param(c.arg("kernel_size").ints, sp),
                          c.arg("stride").ints, c.arg("padding").ints, c.arg("dilation").ints);
  if (gx == kNoValue) return pool_grad_from_indices(c, c.out(1), sp);
  c.add_grad(x, gx);
}

void max_pool2d_with_indices(GradCtx& c) {
  max_pool_with_indices(c, 2);
}

void max_pool3d_with_indices(GradCtx& c) {
  max_pool_with_indices(c, 3);
}

void adaptive_max_pool(GradCtx& c) {
  c.only_first_output();
  const std::string& t = c.n.target;
  pool_grad_from_indices(c, c.out(1),
                         t.find("1d") != std::string::npos   ? 1
                         : t.find("3d") != std::string::npos ? 3
                                                             : 2);
}

/// _cdist_forward: x1's gradient is _cdist_backward(grad, x1, x2, p, cdist), x2's the same with
/// the roles swapped and grad and cdist transposed (derivatives.yaml).
void cdist(GradCtx& c) {
  Emit& e = c.e;
  ValueId x1 = c.in("x1"), x2 = c.in("x2"), g = c.grad_out(), out = c.out(0);
  double p = c.arg("p").f;
  int64_t r = e.dim(out);
  if (c.needs(x1))
    c.add_grad(x1, e.op("aten._cdist_backward.default",
                        {Emit::t(g), Emit::t(x1), Emit::t(x2), Emit::f(p), Emit::t(out)}));
  if (c.needs(x2))
    c.add_grad(x2, e.op("aten._cdist_backward.default",
                        {Emit::t(e.transpose(g, r - 2, r - 1)), Emit::t(x2), Emit::t(x1),
                         Emit::f(p), Emit::t(e.transpose(out, r - 2, r - 1))}));
}

/// im2col and col2im are each other's adjoints.
void im2col(GradCtx& c) {
  std::vector<int64_t> xs = c.sizes(c.in("self"));
  c.add_grad("self", c.e.op("aten.col2im.default", {Emit::t(c.grad_out()),
                                                    Emit::ints({xs[xs.size() - 2], xs.back()}),
                                                    {"", c.arg("kernel_size")},
                                                    {"", c.arg("dilation")},
                                                    {"", c.arg("padding")},
                                                    {"", c.arg("stride")}}));
}
void col2im(GradCtx& c) {
  c.add_grad("self", c.e.op("aten.im2col.default", {Emit::t(c.grad_out()),
                                                    {"", c.arg("kernel_size")},
                                                    {"", c.arg("dilation")},
                                                    {"", c.arg("padding")},
                                                    {"", c.arg("stride")}}));
}

void adaptive_avg_pool2d(GradCtx& c) {
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x), os = spatial(c.arg("output_size"), 2);
  if (xs.size() < 3 || os.size() != 2) c.fail("adaptive_avg_pool2d needs a (N,)C,H,W input");
  int64_t H = xs[xs.size() - 2], W = xs.back();
  if (os[0] <= 0 || os[1] <= 0 || H % os[0] != 0 || W % os[1] != 0)
    c.fail("adaptive_avg_pool2d backward needs the input size to be a multiple of the output");
  int64_t kh = H / os[0], kw = W / os[1];
  std::vector<int64_t> split(xs.begin(), xs.end() - 2), one = split;
  split.insert(split.end(), {os[0], kh, os[1], kw});
  one.insert(one.end(), {os[0], 1, os[1], 1});
  ValueId g = c.e.div_s(c.e.reshape(c.grad_out(), one), double(kh * kw));
  c.add_grad(x, c.e.reshape(c.e.expand(g, split), xs));
}

void embedding(GradCtx& c) {
  if (c.arg("scale_grad_by_freq").b) c.fail("embedding with scale_grad_by_freq is not supported");
  Emit& e = c.e;
  ValueId w = c.in("weight"), ids = c.in("indices");
  std::vector<int64_t> ws = c.sizes(w);
  if (ws.size() != 2) c.fail("embedding weight must be 2-D");
  int64_t k = e.meta(ids).numel(), dim = ws[1];
  ValueId src = e.reshape(c.grad_out(), {k, dim});
  ValueId flat = e.reshape(ids, {k, 1});
  int64_t pad = c.arg("padding_idx").i;
  if (pad >= 0) src = e.where_s(e.cmp_s("ne", flat, double(pad)), src, 0.0);
  c.add_grad(w, index_add_rows(e, ws[0], e.reshape(ids, {k}), e.cast(src, e.dtype(w))));
}

void gather(GradCtx& c) {
  ValueId x = c.in("self");
  int64_t dim = wrap(c.arg("dim").i, c.e.dim(x));
  c.add_grad(x, c.e.op("aten.scatter_add.default",
                       {Emit::t(c.e.zeros(c.sizes(x), c.e.meta(x))), Emit::i(dim),
                        Emit::t(c.in("index")), Emit::t(c.grad_out())}));
}

void index_select(GradCtx& c) {
  ValueId x = c.in("self"), g = c.grad_out();
  int64_t dim = wrap(c.arg("dim").i, c.e.dim(x));
  std::vector<int64_t> shape(size_t(c.e.dim(g)), 1);
  shape[size_t(dim)] = c.e.meta(c.in("index")).numel();
  ValueId idx = c.e.expand(c.e.reshape(c.in("index"), shape), c.sizes(g));
  c.add_grad(x, c.e.op("aten.scatter_add.default", {Emit::t(c.e.zeros(c.sizes(x), c.e.meta(x))),
                                                    Emit::i(dim), Emit::t(idx), Emit::t(g)}));
}

/// Advanced indexing x[i0, i1, ...]: the gradient scatters back at the linearised positions
/// of the indexed dims (moved to the front), duplicates accumulating.
void index_tensor(GradCtx& c) {
  Emit& e = c.e;
  ValueId x = c.in("self"), g = c.grad_out();
  std::vector<int64_t> xs = c.sizes(x);
  const std::vector<ValueId>& idx = c.arg("indices").tensors;
  std::vector<int64_t> dims, rest_dims, bs;
  for (size_t d = 0; d < xs.size(); ++d)
    (d < idx.size() && idx[d] != kNoValue ? dims : rest_dims).push_back(int64_t(d));
  if (dims.empty()) c.fail("indexing without index tensors");
  for (int64_t d : dims) {
    if (!is_integral(e.dtype(idx[size_t(d)]))) c.fail("mask indexing has no derivative rule");
    std::vector<int64_t> s = e.sizes(idx[size_t(d)]);
    // Broadcast the index shapes (right-aligned, 1 stretches).
    if (s.size() > bs.size()) bs.insert(bs.begin(), s.size() - bs.size(), 1);
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& b = bs[bs.size() - s.size() + k];
      if (b == 1)
        b = s[k];
      else if (s[k] != 1 && s[k] != b)
        c.fail("index tensors do not broadcast");
    }
  }
  bool adjacent = dims.back() - dims.front() + 1 == int64_t(dims.size());
  size_t before = adjacent ? size_t(dims.front()) : 0; // kept dims ahead of the index dims
  // The gradient as [index shape..., kept dims...].
  std::vector<int64_t> perm_g;
  for (size_t k = 0; k < bs.size(); ++k) perm_g.push_back(int64_t(before + k));
  for (size_t k = 0; k < size_t(e.dim(g)); ++k)
    if (k < before || k >= before + bs.size()) perm_g.push_back(int64_t(k));
  if (before > 0) g = e.permute(g, perm_g);
  ValueId flat = kNoValue;
  int64_t stride = 1;
  for (size_t j = dims.size(); j-- > 0;) {
    int64_t n = xs[size_t(dims[j])];
    ValueId t = e.expand(idx[size_t(dims[j])], bs);
    t = e.where(e.cmp_s("lt", t, 0), e.op("aten.add.Scalar", {Emit::t(t), Emit::i(n)}), t);
    if (stride != 1) t = e.op("aten.mul.Scalar", {Emit::t(t), Emit::i(stride)});
    flat = flat == kNoValue ? t : e.add(flat, t);
    stride *= n;
  }
  int64_t m = 1;
  for (int64_t b : bs) m *= b;
  std::vector<int64_t> rows = {m}, table = {stride}, ones = {m}, xp;
  for (int64_t d : dims) xp.push_back(xs[size_t(d)]);
  for (int64_t d : rest_dims) {
    rows.push_back(xs[size_t(d)]);
    table.push_back(xs[size_t(d)]);
    ones.push_back(1);
    xp.push_back(xs[size_t(d)]);
  }
  ValueId where_to = e.expand(e.reshape(flat, ones), rows);
  ValueId gx = e.op("aten.scatter_add.default", {Emit::t(e.zeros(table, e.meta(x))), Emit::i(0),
                                                 Emit::t(where_to), Emit::t(e.reshape(g, rows))});
  gx = e.reshape(gx, xp);
  std::vector<int64_t> order = dims, inv(xs.size());
  order.insert(order.end(), rest_dims.begin(), rest_dims.end());
  for (size_t k = 0; k < order.size(); ++k) inv[size_t(order[k])] = int64_t(k);
  c.add_grad(x, e.permute(gx, inv));
}

void scatter_add(GradCtx& c) {
  c.add_grad("self", c.grad_out());
  if (c.needs("src"))
    c.add_grad("src", c.e.op("aten.gather.default",
                             {Emit::t(c.grad_out()), {"", c.arg("dim")}, Emit::t(c.in("index"))}));
}

// ---- Views and data movement
// ----------------------------------------------------------------------

void reshape_back(GradCtx& c) {
  ValueId x = first_input(c);
  c.add_grad(x, c.e.reshape(c.grad_out(), c.sizes(x)));
}

void permute(GradCtx& c) {
  std::vector<int64_t> dims = c.arg("dims").ints, inv(dims.size());
  int64_t r = int64_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inv[size_t(wrap(dims[i], r))] = int64_t(i);
  c.add_grad("self", c.e.permute(c.grad_out(), inv));
}

void transpose(GradCtx& c) {
  int64_t r = c.e.dim(c.grad_out());
  if (r == 0) return c.add_grad("self", c.grad_out());
  c.add_grad("self",
             c.e.transpose(c.grad_out(), wrap(c.arg("dim0").i, r), wrap(c.arg("dim1").i, r)));
}

/// Normalised [start, end) of a slice, as PyTorch clamps them.
std::pair<int64_t, int64_t> slice_bounds(const Arg& start, const Arg& end, int64_t n) {
  int64_t s = start.is_none() ? 0 : start.i, e = end.is_none() ? n : end.i;
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::clamp<int64_t>(s, 0, n);
  e = std::clamp<int64_t>(e, s, n);
  return {s, e};
}

void slice(GradCtx& c) {
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  int64_t dim = wrap(c.arg("dim").i, int64_t(xs.size()));
  auto [s, e] = slice_bounds(c.arg("start"), c.arg("end"), xs[size_t(dim)]);
  int64_t step = c.arg("step").i;
  c.add_grad(x, c.e.slice_scatter(c.e.zeros(xs, c.e.meta(x)), c.grad_out(), dim, s, e, step));
}

void select(GradCtx& c) {
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  int64_t dim = wrap(c.arg("dim").i, int64_t(xs.size()));
  int64_t idx = wrap(c.arg("index").i, xs[size_t(dim)]);
  c.add_grad(x, c.e.slice_scatter(c.e.zeros(xs, c.e.meta(x)), c.e.unsqueeze(c.grad_out(), dim), dim,
                                  idx, idx + 1));
}

/// diagonal: the gradient lands on the diagonal of zeros: with dim1 and dim2 moved last and
/// flattened, the diagonal is the slice start::n2+1 of that flat dim.
void diagonal(GradCtx& c) {
  Emit& e = c.e;
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  int64_t R = int64_t(xs.size());
  int64_t d1 = wrap(c.arg("dim1").i, R), d2 = wrap(c.arg("dim2").i, R), off = c.arg("offset").i;
  int64_t n1 = xs[size_t(d1)], n2 = xs[size_t(d2)];
  int64_t len = c.sizes(c.grad_out()).back();
  std::vector<int64_t> perm, moved;
  for (int64_t d = 0; d < R; ++d)
    if (d != d1 && d != d2) {
      perm.push_back(d);
      moved.push_back(xs[size_t(d)]);
    }
  perm.push_back(d1);
  perm.push_back(d2);
  std::vector<int64_t> flat = moved;
  flat.push_back(n1 * n2);
  ValueId z = e.zeros(flat, e.meta(x));
  if (len > 0) {
    int64_t start = std::max<int64_t>(-off, 0) * n2 + std::max<int64_t>(off, 0);
    z = e.slice_scatter(z, c.grad_out(), R - 2, start, start + (len - 1) * (n2 + 1) + 1, n2 + 1);
  }
  moved.push_back(n1);
  moved.push_back(n2);
  std::vector<int64_t> inv(static_cast<size_t>(R), 0);
  for (int64_t i = 0; i < R; ++i) inv[size_t(perm[size_t(i)])] = i;
  c.add_grad(x, e.permute(e.reshape(z, moved), inv));
}

/// as_strided(x, size, stride, offset) reads x's storage at offset + sum(i_d * stride_d); the
/// gradient adds each output element back at that position (overlapping reads accumulate), as
/// PyTorch's as_strided_backward does for an input that is its own contiguous storage.
void as_strided(GradCtx& c) {
  Emit& e = c.e;
  ValueId x = c.in("self");
  const TensorMeta& xm = e.meta(x);
  if (xm.strides != contiguous_strides(xm.sizes))
    c.fail("as_strided of a non-contiguous tensor has no derivative rule");
  const std::vector<int64_t> size = c.arg("size").ints, stride = c.arg("stride").ints;
  const Arg& off = c.arg("storage_offset");
  const int64_t base = (off.is_none() ? xm.storage_offset : off.i) - xm.storage_offset;
  const int64_t numel = xm.numel();
  ValueId g = c.grad_out();
  const int64_t n = e.meta(g).numel();
  // The storage position of every output element, as broadcast sums of aranges.
  ValueId pos = kNoValue;
  int64_t lo = base, hi = base;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 0) return c.add_grad(x, e.zeros(xm.sizes, xm));
    (stride[d] < 0 ? lo : hi) += (size[d] - 1) * stride[d];
    if (size[d] == 1 || stride[d] == 0) continue;
    std::vector<int64_t> shape(size.size(), 1);
    shape[d] = size[d];
    ValueId r = e.reshape(e.arange(0, size[d] * stride[d], stride[d], xm.device), shape);
    pos = pos == kNoValue ? r : e.add(pos, r);
  }
  if (lo < 0 || hi >= numel) c.fail("as_strided reads outside its input; no derivative rule");
  if (pos == kNoValue)
    pos = e.reshape(e.arange(0, 1, 1, xm.device), std::vector<int64_t>(size.size(), 1));
  pos = e.reshape(e.expand(pos, size), {n});
  if (base != 0) pos = e.add(pos, e.reshape(e.arange(base, base + 1, 1, xm.device), {1}));
  ValueId flat = e.op("aten.scatter_add.default", {Emit::t(e.zeros({numel}, xm)), Emit::i(0),
                                                   Emit::t(pos), Emit::t(e.reshape(g, {n}))});
  c.add_grad(x, e.reshape(flat, xm.sizes));
}

void slice_scatter(GradCtx& c) {
  ValueId src = c.in("src");
  std::vector<int64_t> bs = c.sizes(c.in("self"));
  int64_t dim = wrap(c.arg("dim").i, int64_t(bs.size()));
  auto [s, e] = slice_bounds(c.arg("start"), c.arg("end"), bs[size_t(dim)]);
  int64_t step = c.arg("step").i;
  if (c.needs("self"))
    c.add_grad("self",
               c.e.slice_scatter(c.grad_out(), c.e.zeros(c.sizes(src), c.e.meta(c.grad_out())), dim,
                                 s, e, step));
  if (c.needs(src)) c.add_grad(src, c.e.slice(c.grad_out(), dim, s, e, step));
}

void split(GradCtx& c) {
  ValueId x = c.in("self");
  int64_t dim = wrap(c.arg("dim").i, c.e.dim(x));
  std::vector<ValueId> parts;
  for (size_t k = 0; k < c.n.outputs.size(); ++k)
    parts.push_back(c.gout[k] != kNoValue ? c.gout[k]
                                          : c.e.zeros(c.sizes(c.out(k)), c.e.meta(c.out(k))));
  c.add_grad(x, parts.size() == 1 ? parts[0] : c.e.cat(parts, dim));
}

void cat(GradCtx& c) {
  const std::vector<ValueId>& xs = c.arg("tensors").tensors;
  int64_t rank = c.e.dim(c.grad_out());
  int64_t dim = wrap(c.arg("dim").i, rank), off = 0;
  for (ValueId x : xs) {
    std::vector<int64_t> s = c.sizes(x);
    if (int64_t(s.size()) != rank) continue; // legacy empty 1-D inputs take no part
    int64_t n = s[size_t(dim)];
    if (c.needs(x)) c.add_grad(x, c.e.slice(c.grad_out(), dim, off, off + n));
    off += n;
  }
}

void constant_pad_nd(GradCtx& c) {
  const std::vector<int64_t>& pad = c.arg("pad").ints;
  ValueId g = c.grad_out();
  int64_t rank = c.e.dim(g);
  for (size_t j = 0; j + 1 < pad.size(); j += 2)
    g = c.e.pad_dim(g, rank - 1 - int64_t(j / 2), -pad[j], -pad[j + 1]);
  c.add_grad("self", g);
}

void roll(GradCtx& c) {
  std::vector<int64_t> shifts = c.arg("shifts").ints;
  for (int64_t& s : shifts) s = -s;
  c.add_grad("self", c.e.op("aten.roll.default",
                            {Emit::t(c.grad_out()), Emit::ints(shifts), {"", c.arg("dims")}}));
}

// ---- flip, tril/triu, repeat, t, pixel (un)shuffle ----------------------------------------------

void flip(GradCtx& c) {
  c.add_grad("self", c.e.op("aten.flip.default", {Emit::t(c.grad_out()), {"", c.arg("dims")}}));
}

void triangle(GradCtx& c) {
  std::string target = c.n.target;
  c.add_grad("self", c.e.op(target, {Emit::t(c.grad_out()), Emit::i(c.arg("diagonal").i)}));
}

/// repeat: each input element is copied to every tile, so its gradient sums the tiles.
void repeat(GradCtx& c) {
  std::vector<int64_t> xs = c.sizes(c.in("self")), r = c.arg("repeats").ints;
  size_t off = r.size() - xs.size();
  std::vector<int64_t> split, dims;
  for (size_t i = 0; i < r.size(); ++i) {
    dims.push_back(int64_t(split.size()));
    split.push_back(r[i]);
    if (i >= off) split.push_back(xs[i - off]);
  }
  ValueId g = c.e.sum(c.e.reshape(c.grad_out(), split), dims, false);
  c.add_grad("self", c.e.reshape(g, xs));
}

void t(GradCtx& c) {
  if (c.e.dim(c.grad_out()) < 2) return c.add_grad("self", c.grad_out());
  c.add_grad("self", c.e.transpose(c.grad_out(), 0, 1));
}

void pixel_shuffle(GradCtx& c) {
  bool up = c.n.schema->index_of("upscale_factor") >= 0;
  int64_t r = c.arg(up ? "upscale_factor" : "downscale_factor").i;
  c.add_grad("self", c.e.op(up ? "aten.pixel_unshuffle.default" : "aten.pixel_shuffle.default",
                            {Emit::t(c.grad_out()), Emit::i(r)}));
}

void dropout(GradCtx& c) {
  if (c.arg("train").b && c.arg("p").f != 0.0) c.fail("dropout in training mode is not supported");
  c.add_grad("input", c.grad_out());
}

// native_dropout: the gradient goes where the mask kept, scaled as the output was.
void native_dropout(GradCtx& c) {
  c.only_first_output();
  const Arg& train = c.arg("train");
  double p = c.arg("p").f;
  double scale = !train.is_none() && !train.b ? 1.0 : (p == 1 ? 0.0 : 1.0 / (1.0 - p));
  c.add_grad("input", c.e.op("aten.native_dropout_backward.default",
                             {Emit::t(c.grad_out()), Emit::t(c.out(1)), Emit::f(scale)}));
}
void native_dropout_backward(GradCtx& c) {
  c.add_grad("grad_output",
             c.e.op("aten.native_dropout_backward.default",
                    {Emit::t(c.grad_out()), Emit::t(c.in("mask")), Emit::f(c.arg("scale").f)}));
}

// masked_scatter: self's gradient where the mask is false; source element k gets the gradient
// of the k-th true mask position (a scatter_add at cumsum(mask) - 1).
void masked_scatter(GradCtx& c) {
  ValueId g = c.grad_out();
  std::vector<int64_t> shape = c.sizes(g);
  ValueId mask = c.e.expand(c.in("mask"), shape);
  if (c.needs("self")) c.add_grad("self", c.e.where_s(c.e.unary("logical_not", mask), g, 0.0));
  if (!c.needs("source")) return;
  ValueId src = c.in("source");
  std::vector<int64_t> ssizes = c.sizes(src);
  int64_t total = 1, sn = 1;
  for (int64_t s : shape) total *= s;
  for (int64_t s : ssizes) sn *= s;
  ValueId mflat = c.e.reshape(mask, {total});
  ValueId pos = c.e.op("aten.cumsum.default",
                       {Emit::t(mflat), Emit::i(0), Emit::kw("dtype", Arg::of_dtype(DType::I64))});
  // Integer scalars keep the positions int64 (a float scalar would promote them).
  ValueId idx =
      c.e.op("aten.where.ScalarOther",
             {Emit::t(mflat), Emit::t(c.e.op("aten.add.Scalar", {Emit::t(pos), Emit::i(-1)})),
              Emit::i(0)});
  ValueId vals = c.e.where_s(mflat, c.e.reshape(g, {total}), 0.0);
  ValueId acc = c.e.op("aten.scatter_add.default", {Emit::t(c.e.zeros({sn}, c.e.meta(g))),
                                                    Emit::i(0), Emit::t(idx), Emit::t(vals)});
  c.add_grad(src, c.e.reshape(acc, ssizes));
}

// ---- Special functions (derivatives.yaml) ----

ValueId polygamma_of(GradCtx& c, int64_t n, ValueId x) {
  return c.e.op("aten.polygamma.default", {Emit::i(n), Emit::t(x)});
}
void lgamma(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("digamma", c.in("self"))));
}
void digamma(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), polygamma_of(c, 1, c.in("self"))));
}
void polygamma(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), polygamma_of(c, c.arg("n").i + 1, c.in("self"))));
}
// erfinv'(x) = sqrt(pi) / 2 * exp(erfinv(x)^2).
void erfinv(GradCtx& c) {
  ValueId y = c.out();
  c.add_grad("self", c.e.mul(c.grad_out(),
                             c.e.mul_s(c.e.unary("exp", c.e.mul(y, y)), 0.5 * std::sqrt(M_PI))));
}
void i0(GradCtx& c) {
  c.add_grad("self",
             c.e.mul(c.grad_out(), c.e.op("aten.special_i1.default", {Emit::t(c.in("self"))})));
}
// i1'(x) = i0(x) - i1(x) / x, and 1/2 at 0.
void special_i1(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId d = c.e.sub(c.e.unary("i0", x), c.e.div(c.out(), x));
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.where_s(c.e.cmp_s("ne", x, 0.0), d, 0.5)));
}

// ---- Op families of issue 18 (derivatives.yaml) ----

// rsub(self, other, alpha) = other - alpha * self.
void rsub(GradCtx& c) {
  double alpha = c.arg("alpha").scalar();
  if (c.needs("self")) c.add_grad("self", c.e.mul_s(c.grad_out(), -alpha));
  const Arg& other = c.arg("other");
  if (other.kind == Arg::Kind::Tensor && c.needs("other")) c.add_grad("other", c.grad_out());
}

// div with a rounding mode: no gradient through a rounded quotient (zeros), else true division.
void div_mode(GradCtx& c) {
  const bool tensor_other = c.arg("other").kind == Arg::Kind::Tensor;
  if (c.arg("rounding_mode").is_none()) {
    if (c.needs("self"))
      c.add_grad("self", tensor_other ? c.e.div(c.grad_out(), c.in("other"))
                                      : c.e.div_s(c.grad_out(), c.arg("other").scalar()));
    if (tensor_other && c.needs("other"))
      c.add_grad("other", c.e.mul(c.e.unary("neg", c.grad_out()), c.e.div(c.out(), c.in("other"))));
    return;
  }
  if (c.needs("self"))
    c.add_grad("self", c.e.zeros(c.sizes(c.in("self")), c.g.values[c.in("self")].meta));
  if (tensor_other && c.needs("other"))
    c.add_grad("other", c.e.zeros(c.sizes(c.in("other")), c.g.values[c.in("other")].meta));
}

// remainder.Tensor: other gets -grad * floor(self / other); fmod.Tensor: -grad * trunc(self /
// other).
template <bool Floor> void remainder_like(GradCtx& c) {
  c.add_grad("self", c.grad_out());
  if (c.needs("other")) {
    ValueId q = c.e.op("aten.div.Tensor_mode",
                       {Emit::t(c.in("self")), Emit::t(c.in("other")),
                        Emit::kw("rounding_mode", Arg::of_string(Floor ? "floor" : "trunc"))});
    c.add_grad("other", c.e.mul(c.e.unary("neg", c.grad_out()), q));
  }
}
// End of the issue-18 derivatives.

// Issue 18, unary math and special functions (derivatives.yaml).
void tan(GradCtx& c) {
  ValueId y = c.out();
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.add_s(c.e.mul(y, y), 1.0)));
}
void asin(GradCtx& c) {
  ValueId x = c.in("self");
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("rsqrt", c.e.rsub_s(1.0, c.e.mul(x, x)))));
}
void acos(GradCtx& c) {
  ValueId x = c.in("self");
  c.add_grad("self", c.e.mul(c.e.unary("neg", c.grad_out()),
                             c.e.unary("rsqrt", c.e.rsub_s(1.0, c.e.mul(x, x)))));
}
void atan(GradCtx& c) {
  ValueId x = c.in("self");
  c.add_grad("self", c.e.div(c.grad_out(), c.e.add_s(c.e.mul(x, x), 1.0)));
}
void sinh(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("cosh", c.in("self"))));
}
void cosh(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("sinh", c.in("self"))));
}
void asinh(GradCtx& c) {
  ValueId x = c.in("self");
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("rsqrt", c.e.add_s(c.e.mul(x, x), 1.0))));
}
void acosh(GradCtx& c) {
  ValueId x = c.in("self");
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.unary("rsqrt", c.e.add_s(c.e.mul(x, x), -1.0))));
}
void atanh(GradCtx& c) {
  ValueId x = c.in("self");
  c.add_grad("self", c.e.div(c.grad_out(), c.e.rsub_s(1.0, c.e.mul(x, x))));
}
void log2(GradCtx& c) {
  c.add_grad("self", c.e.div(c.grad_out(), c.e.mul_s(c.in("self"), std::log(2.0))));
}
void log10(GradCtx& c) {
  c.add_grad("self", c.e.div(c.grad_out(), c.e.mul_s(c.in("self"), std::log(10.0))));
}
void log1p(GradCtx& c) {
  c.add_grad("self", c.e.div(c.grad_out(), c.e.add_s(c.in("self"), 1.0)));
}
void exp2(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.mul_s(c.out(), std::log(2.0))));
}
void expm1(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.add_s(c.out(), 1.0)));
}
// floor, ceil, round, trunc: zero almost everywhere.
void zero_grad(GradCtx& c) {
  ValueId x = first_input(c);
  c.add_grad(x, c.e.zeros(c.sizes(x), c.g.values[x].meta));
}
void atan2(GradCtx& c) {
  ValueId a = c.in("self"), b = c.in("other");
  ValueId r2 = c.e.add(c.e.mul(a, a), c.e.mul(b, b));
  if (c.needs("self")) c.add_grad("self", c.e.mul(c.grad_out(), c.e.div(b, r2)));
  if (c.needs("other"))
    c.add_grad("other", c.e.mul(c.grad_out(), c.e.div(c.e.unary("neg", a), r2)));
}
// pow.Scalar(s, x) = s^x: d/dx = s^x log s, 0 where s == 0 and x >= 0 (pow_backward_exponent).
void pow_scalar(GradCtx& c) {
  const double s = c.arg("self").scalar();
  ValueId x = c.in("exponent");
  ValueId g = c.e.mul_s(c.e.mul(c.grad_out(), c.out()), std::log(s));
  if (s == 0) g = c.e.where_s(c.e.cmp_s("lt", x, 0), g, 0.0);
  c.add_grad("exponent", g);
}
// clamp.Tensor (clamp_backward_min_max): self where it lies within the bounds, each bound where
// it binds.
void clamp_tensor(GradCtx& c) {
  ValueId x = c.in("self");
  const bool lo = c.arg("min").kind == Arg::Kind::Tensor,
             hi = c.arg("max").kind == Arg::Kind::Tensor;
  ValueId ge = lo ? c.e.cmp("ge", x, c.in("min")) : kNoValue;
  ValueId le = hi ? c.e.cmp("le", x, c.in("max")) : kNoValue;
  ValueId in = ge == kNoValue   ? le
               : le == kNoValue ? ge
                                : c.e.op("aten.logical_and.default", {Emit::t(ge), Emit::t(le)});
  c.add_grad("self", c.e.where_s(in, c.grad_out(), 0.0));
  if (lo && c.needs("min"))
    c.add_grad("min", c.e.where_s(c.e.unary("logical_not", ge), c.grad_out(), 0.0));
  if (hi && c.needs("max"))
    c.add_grad("max", c.e.where_s(c.e.unary("logical_not", le), c.grad_out(), 0.0));
}
// End of the issue-18 unary math.

// Issue 18, scans. cumsum: the gradient summed from each position to the end of the dim,
// total - cumsum(g) + g (derivatives.yaml's cumsum_backward).
void cumsum(GradCtx& c) {
  ValueId g = c.grad_out();
  const int64_t rank = c.e.dim(g);
  if (rank == 0) return c.add_grad("self", g);
  const int64_t d = wrap(c.arg("dim").i, rank);
  ValueId total = c.e.sum(g, {d}, true);
  ValueId run = c.e.op("aten.cumsum.default", {Emit::t(g), Emit::i(d)});
  c.add_grad("self", c.e.add(c.e.sub(total, run), g));
}

/// The [n, n] masks over (i, k) of a scan of length n along dim d of a rank-r tensor, shaped
/// [n, n, 1, ...] to line up with dims d and d + 1 of a tensor with an extra dim at d.
ValueId pair_mask(GradCtx& c, const char* cmp, int64_t n, int64_t d, int64_t rank,
                  const Device& dev) {
  ValueId ar = c.e.arange(0, n, 1, dev);
  ValueId m = c.e.cmp(cmp, c.e.unsqueeze(ar, 1), c.e.unsqueeze(ar, 0));
  std::vector<int64_t> shape = {n, n};
  for (int64_t k = d + 1; k < rank; ++k) shape.push_back(1);
  return c.e.reshape(m, shape);
}

// cumprod, for inputs with zeros too: grad_i = sum_{k >= i} g_k prod_{j <= k, j != i} x_j,
// built as an [n, n] product table along the dim (O(n^2) memory per row).
void cumprod(GradCtx& c) {
  ValueId g = c.grad_out(), x = c.in("self");
  const int64_t rank = c.e.dim(x);
  if (rank == 0 || c.g.values[x].meta.numel() == 0) return c.add_grad("self", g);
  const int64_t d = wrap(c.arg("dim").i, rank);
  std::vector<int64_t> sizes = c.sizes(x);
  const int64_t n = sizes[size_t(d)];
  const Device dev = c.g.values[x].meta.device;
  std::vector<int64_t> wide = sizes;
  wide.insert(wide.begin() + d, n); // dim d indexes i, dim d + 1 indexes j
  ValueId y = c.e.expand(c.e.unsqueeze(x, d), wide);
  y = c.e.where_s(pair_mask(c, "ne", n, d, rank, dev), y, 1.0); // x_j, with 1 for j == i
  ValueId table = c.e.op("aten.cumprod.default", {Emit::t(y), Emit::i(d + 1)});
  ValueId terms = c.e.mul(table, c.e.unsqueeze(g, d));
  terms = c.e.where_s(pair_mask(c, "le", n, d, rank, dev), terms, 0.0); // k >= i
  c.add_grad("self", c.e.sum(terms, {d + 1}, false));
}

// logcumsumexp: grad_i = sum_{k >= i} g_k exp(x_i - out_k), each exponent <= 0 (stable).
void logcumsumexp(GradCtx& c) {
  ValueId g = c.grad_out(), x = c.in("self"), out = c.out();
  const int64_t rank = c.e.dim(x);
  if (rank == 0 || c.g.values[x].meta.numel() == 0) return c.add_grad("self", g);
  const int64_t d = wrap(c.arg("dim").i, rank);
  const int64_t n = c.sizes(x)[size_t(d)];
  const Device dev = c.g.values[x].meta.device;
  ValueId diff = c.e.sub(c.e.unsqueeze(x, d + 1), c.e.unsqueeze(out, d)); // x_i - out_k
  diff = c.e.where_s(pair_mask(c, "le", n, d, rank, dev), diff, -INFINITY);
  ValueId terms = c.e.mul(c.e.unary("exp", diff), c.e.unsqueeze(g, d));
  c.add_grad("self", c.e.sum(terms, {d + 1}, false));
}

void copy(GradCtx& c) {
  c.add_grad("src", c.grad_out());
}

// ---- Issue 18: reductions, sorting and indexing ---------------------------------------------

/// max() / min() over every element: like amax, the gradient is shared among the extremes.
void extreme_all(GradCtx& c) {
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  std::vector<int64_t> dims = reduced_dims(c, Arg::none(), int64_t(xs.size()));
  ValueId hit = c.e.cmp("eq", x, keepdim_grad(c, c.out(), xs, dims));
  ValueId count = c.e.sum(c.e.cast(hit, c.e.dtype(x)), dims, true);
  ValueId share = c.e.div(keepdim_grad(c, c.grad_out(), xs, dims), count);
  c.add_grad("self", c.e.where_s(hit, c.e.expand(share, xs), 0.0));
}

/// Values picked at `indices` along `dim` (max.dim, min.dim, sort, topk): the gradient goes
/// back to the positions they came from. `keepdim` false means dim was reduced away.
void pick_grad(GradCtx& c, int64_t dim, bool keepdim) {
  c.only_first_output();
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  if (xs.empty()) {
    c.add_grad(x, c.e.reshape(c.grad_out(), {}));
    return;
  }
  dim = wrap(dim, int64_t(xs.size()));
  ValueId g = c.grad_out(), idx = c.out(1);
  if (!keepdim) {
    g = c.e.unsqueeze(g, dim);
    idx = c.e.unsqueeze(idx, dim);
  }
  c.add_grad(x, c.e.op("aten.scatter_add.default", {Emit::t(c.e.zeros(xs, c.e.meta(x))),
                                                    Emit::i(dim), Emit::t(idx), Emit::t(g)}));
}
void extreme_dim(GradCtx& c) {
  pick_grad(c, c.arg("dim").i, c.arg("keepdim").b);
}
void sort(GradCtx& c) {
  pick_grad(c, c.arg("dim").i, true);
}

/// prod: the gradient of each element is the product of the others along the reduced dim,
/// the exclusive cumulative products from both ends (exact with zeros, as PyTorch's
/// prod_safe_zeros_backward).
void prod(GradCtx& c) {
  Emit& e = c.e;
  ValueId x = c.in("self");
  std::vector<int64_t> xs = c.sizes(x);
  if (!is_floating(e.dtype(c.out()))) return;
  bool all = c.n.schema->index_of("dim") < 0;
  ValueId v = x, g = c.grad_out();
  int64_t d = 0;
  if (all || xs.empty()) {
    v = e.reshape(x, {e.meta(x).numel()});
    g = e.reshape(g, {1});
  } else {
    d = wrap(c.arg("dim").i, int64_t(xs.size()));
    if (!c.arg("keepdim").b) g = e.unsqueeze(g, d);
  }
  if (e.dtype(v) != e.dtype(c.out())) v = e.cast(v, e.dtype(c.out()));
  std::vector<int64_t> vs = e.sizes(v);
  int64_t len = vs[size_t(d)];
  if (len == 0) {
    c.add_grad(x, e.zeros(xs, e.meta(x)));
    return;
  }
  auto exclusive = [&](ValueId t) {
    std::vector<int64_t> one = vs;
    one[size_t(d)] = 1;
    ValueId ones = e.add_s(e.zeros(one, e.meta(t)), 1.0);
    if (len == 1) return ones;
    ValueId shifted = e.cat({ones, e.slice(t, d, 0, len - 1)}, d);
    return e.op("aten.cumprod.default", {Emit::t(shifted), Emit::i(d)});
  };
  ValueId left = exclusive(v);
  ValueId right = flip(e, exclusive(flip(e, v, d)), d);
  ValueId gx = e.mul(e.mul(e.expand(g, vs), left), right);
  c.add_grad(x, e.reshape(gx, xs));
}

void scatter_src(GradCtx& c) {
  ValueId idx = c.in("index");
  if (c.needs("self"))
    c.add_grad("self",
               c.e.op("aten.scatter.value",
                      {Emit::t(c.grad_out()), {"", c.arg("dim")}, Emit::t(idx), Emit::f(0.0)}));
  if (c.needs("src"))
    c.add_grad("src", c.e.op("aten.gather.default",
                             {Emit::t(c.grad_out()), {"", c.arg("dim")}, Emit::t(idx)}));
}

void scatter_value(GradCtx& c) {
  c.add_grad(
      "self",
      c.e.op("aten.scatter.value",
             {Emit::t(c.grad_out()), {"", c.arg("dim")}, Emit::t(c.in("index")), Emit::f(0.0)}));
}

/// scatter_reduce: the "sum" reduction (the others are refused by name).
void scatter_reduce(GradCtx& c) {
  if (c.arg("reduce").s != "sum")
    c.fail("the derivative of scatter_reduce is implemented for reduce='sum' only, got '" +
           c.arg("reduce").s + "'");
  ValueId idx = c.in("index");
  if (c.needs("self"))
    c.add_grad(
        "self",
        c.arg("include_self").b
            ? c.grad_out()
            : c.e.op("aten.scatter.value",
                     {Emit::t(c.grad_out()), {"", c.arg("dim")}, Emit::t(idx), Emit::f(0.0)}));
  if (c.needs("src"))
    c.add_grad("src", c.e.op("aten.gather.default",
                             {Emit::t(c.grad_out()), {"", c.arg("dim")}, Emit::t(idx)}));
}

/// index_put: self keeps the gradient where it was not overwritten (everywhere when
/// accumulating); values get the gradient at the indexed positions (summed over broadcasts).
void index_put(GradCtx& c) {
  ValueId vals = c.in("values");
  if (c.needs("self")) {
    if (c.arg("accumulate").b)
      c.add_grad("self", c.grad_out());
    else
      c.add_grad("self", c.e.op("aten.index_put.default", {Emit::t(c.grad_out()),
                                                           {"", c.arg("indices")},
                                                           Emit::t(c.e.zeros({}, c.e.meta(vals))),
                                                           Emit::b(false)}));
  }
  if (c.needs(vals))
    c.add_grad(vals, c.e.op("aten.index.Tensor", {Emit::t(c.grad_out()), {"", c.arg("indices")}}));
}

void masked_fill_tensor(GradCtx& c) {
  ValueId mask = c.in("mask");
  if (c.needs("self"))
    c.add_grad("self", c.e.where_s(c.e.unary("logical_not", mask), c.grad_out(), 0.0));
  if (c.needs("value")) {
    ValueId picked = c.e.where_s(mask, c.grad_out(), 0.0);
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < c.e.dim(picked); ++d) dims.push_back(d);
    c.add_grad("value", dims.empty() ? picked : c.e.sum(picked, dims, false));
  }
}
/// cummax / cummin: each output's gradient goes to where its value came from.
void cumextreme(GradCtx& c) {
  pick_grad(c, c.arg("dim").i, true);
}

void index_add(GradCtx& c) {
  c.add_grad("self", c.grad_out());
  if (c.needs("source")) {
    ValueId x = c.in("self");
    ValueId g = c.grad_out();
    if (c.e.dim(x) == 0) {
      c.add_grad("source", c.e.mul_s(g, c.arg("alpha").scalar()));
      return;
    }
    ValueId sel = c.e.op("aten.index_select.default",
                         {Emit::t(g), {"", c.arg("dim")}, Emit::t(c.in("index"))});
    double alpha = c.arg("alpha").scalar();
    c.add_grad("source", alpha == 1 ? sel : c.e.mul_s(sel, alpha));
  }
}

void index_fill(GradCtx& c) {
  c.add_grad(
      "self",
      c.e.op("aten.index_fill.int_Scalar",
             {Emit::t(c.grad_out()), {"", c.arg("dim")}, Emit::t(c.in("index")), Emit::f(0.0)}));
}
// ---- End of the issue-18 rules ----

// ---- Issue 18, the math family (derivatives.yaml's formulas).
void erfc(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId d = c.e.mul_s(c.e.unary("exp", c.e.unary("neg", c.e.mul(x, x))), -2.0 / std::sqrt(M_PI));
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}
// copysign: result / self where self != 0 (copysign_tensor_self_backward); other gets none.
void copysign(GradCtx& c) {
  ValueId x = c.in("self");
  c.add_grad("self",
             c.e.mul(c.grad_out(), c.e.where_s(c.e.cmp_s("ne", x, 0), c.e.div(c.out(), x), 0.0)));
}
// fmax / fmin: self where it wins or other is NaN, other elsewhere.
void fextremum(GradCtx& c, const char* self_wins) {
  ValueId a = c.in("self"), b = c.in("other");
  ValueId take_self = c.e.op("aten.logical_or.default",
                             {Emit::t(c.e.cmp(self_wins, a, b)), Emit::t(c.e.unary("isnan", b))});
  if (c.needs("self")) c.add_grad("self", c.e.where_s(take_self, c.grad_out(), 0.0));
  if (c.needs("other"))
    c.add_grad("other", c.e.where_s(c.e.unary("logical_not", take_self), c.grad_out(), 0.0));
}
void fmax(GradCtx& c) {
  fextremum(c, "ge");
}
void fmin(GradCtx& c) {
  fextremum(c, "le");
}
void hypot(GradCtx& c) {
  for (const char* name : {"self", "other"})
    if (c.needs(name)) c.add_grad(name, c.e.mul(c.grad_out(), c.e.div(c.in(name), c.out())));
}
// ldexp(x, e) = x 2^e.
void ldexp(GradCtx& c) {
  ValueId e2 = c.e.op("aten.pow.Scalar", {Emit::f(2.0), Emit::t(c.in("other"))});
  if (c.needs("self")) c.add_grad("self", c.e.mul(c.grad_out(), e2));
  if (c.needs("other")) c.add_grad("other", c.e.mul_s(c.e.mul(c.grad_out(), c.out()), M_LN2));
}
// logaddexp: g / (1 + exp(other - self)); logaddexp2 with exp2.
void logaddexp_like(GradCtx& c, bool two) {
  ValueId a = c.in("self"), b = c.in("other");
  auto part = [&](ValueId x, ValueId y) {
    ValueId d = c.e.sub(y, x);
    ValueId p = two ? c.e.op("aten.pow.Scalar", {Emit::f(2.0), Emit::t(d)}) : c.e.unary("exp", d);
    return c.e.div(c.grad_out(), c.e.add_s(p, 1.0));
  };
  if (c.needs("self")) c.add_grad("self", part(a, b));
  if (c.needs("other")) c.add_grad("other", part(b, a));
}
void logaddexp(GradCtx& c) {
  logaddexp_like(c, false);
}
void logaddexp2(GradCtx& c) {
  logaddexp_like(c, true);
}
// xlogy: self: g log(other) where self != 0; other: g self / other. xlog1py with log1p and
// other + 1.
void xlogy_like(GradCtx& c, bool one_plus) {
  ValueId x = c.in("self"), y = c.in("other");
  if (c.needs("self")) {
    ValueId l = c.e.unary(one_plus ? "log1p" : "log", y);
    c.add_grad("self", c.e.mul(c.grad_out(), c.e.where_s(c.e.cmp_s("ne", x, 0), l, 0.0)));
  }
  if (c.needs("other"))
    c.add_grad("other", c.e.div(c.e.mul(c.grad_out(), x), one_plus ? c.e.add_s(y, 1.0) : y));
}
void xlogy(GradCtx& c) {
  xlogy_like(c, false);
}
void xlog1py(GradCtx& c) {
  xlogy_like(c, true);
}
// sinc: (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x = 0.
void sinc(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId px = c.e.mul_s(x, M_PI);
  ValueId num = c.e.sub(c.e.mul(px, c.e.unary("cos", px)), c.e.unary("sin", px));
  ValueId d = c.e.div(num, c.e.mul(px, x));
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.where_s(c.e.cmp_s("ne", x, 0), d, 0.0)));
}
void scaled_identity(GradCtx& c, double s) {
  c.add_grad("self", c.e.mul_s(c.grad_out(), s));
}
void deg2rad(GradCtx& c) {
  scaled_identity(c, M_PI / 180.0);
}
void rad2deg(GradCtx& c) {
  scaled_identity(c, 180.0 / M_PI);
}
void nan_to_num(GradCtx& c) {
  c.add_grad("self", c.e.where_s(c.e.unary("isfinite", c.in("self")), c.grad_out(), 0.0));
}
void special_entr(GradCtx& c) {
  ValueId d = c.e.unary("neg", c.e.add_s(c.e.unary("log", c.in("self")), 1.0));
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}
// The standard normal density exp(-x^2 / 2) / sqrt(2 pi).
ValueId normal_pdf(GradCtx& c, ValueId x) {
  return c.e.mul_s(c.e.unary("exp", c.e.mul_s(c.e.mul(x, x), -0.5)), 1.0 / std::sqrt(2 * M_PI));
}
void special_ndtr(GradCtx& c) {
  c.add_grad("self", c.e.mul(c.grad_out(), normal_pdf(c, c.in("self"))));
}
void special_ndtri(GradCtx& c) {
  c.add_grad("self", c.e.div(c.grad_out(), normal_pdf(c, c.out())));
}
void special_log_ndtr(GradCtx& c) {
  ValueId d = c.e.div(normal_pdf(c, c.in("self")), c.e.unary("exp", c.out()));
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}
void special_erfcx(GradCtx& c) {
  ValueId d = c.e.add_s(c.e.mul_s(c.e.mul(c.in("self"), c.out()), 2.0), -2.0 / std::sqrt(M_PI));
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}
// i0e' = i1e - sgn(x) i0e; i1e' = i0e - i1e (sgn(x) + 1/x), 1/2 at 0.
void special_i0e(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId d = c.e.sub(c.e.unary("special_i1e", x), c.e.mul(c.e.unary("sign", x), c.out()));
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}
void special_i1e(GradCtx& c) {
  ValueId x = c.in("self");
  ValueId s = c.e.add(c.e.unary("sign", x), c.e.unary("reciprocal", x));
  ValueId d = c.e.sub(c.e.unary("special_i0e", x), c.e.mul(c.out(), s));
  ValueId zero = c.e.cmp_s("eq", x, 0);
  c.add_grad("self", c.e.mul(c.grad_out(), c.e.where(zero, c.e.add_s(c.e.mul_s(x, 0.0), 0.5), d)));
}
void special_polygamma(GradCtx& c) {
  ValueId d = c.e.op("aten.polygamma.default", {Emit::i(c.arg("n").i + 1), Emit::t(c.in("self"))});
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}
// mvlgamma: sum_j digamma(x - j / 2).
void mvlgamma(GradCtx& c) {
  ValueId x = c.in("self"), d = kNoValue;
  for (int64_t j = 0; j < c.arg("p").i; ++j) {
    ValueId t = c.e.unary("digamma", c.e.add_s(x, -double(j) / 2));
    d = d == kNoValue ? t : c.e.add(d, t);
  }
  c.add_grad("self", c.e.mul(c.grad_out(), d));
}
// igamma / igammac: d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) (Q: its negative); PyTorch has no
// derivative in a.
void igamma_like(GradCtx& c, double sign, const char* name) {
  if (c.needs("self"))
    c.fail(std::string("the derivative for '") + name +
           "' with respect to 'self' is not implemented");
  ValueId a = c.in("self"), x = c.in("other");
  ValueId l =
      c.e.sub(c.e.sub(c.e.mul(c.e.add_s(a, -1.0), c.e.unary("log", x)), x), c.e.unary("lgamma", a));
  c.add_grad("other", c.e.mul_s(c.e.mul(c.grad_out(), c.e.unary("exp", l)), sign));
}
void igamma(GradCtx& c) {
  igamma_like(c, 1.0, "igamma");
}
void igammac(GradCtx& c) {
  igamma_like(c, -1.0, "igammac");
}
// zeta(s, q): d/dq = -s zeta(s + 1, q); none in s (as PyTorch).
void special_zeta(GradCtx& c) {
  if (c.needs("self"))
    c.fail("the derivative for 'special_zeta' with respect to 'self' is not implemented");
  ValueId s = c.in("self"), q = c.in("other");
  ValueId z = c.e.op("aten.special_zeta.default", {Emit::t(c.e.add_s(s, 1.0)), Emit::t(q)});
  c.add_grad("other", c.e.mul(c.grad_out(), c.e.unary("neg", c.e.mul(s, z))));
}
// End of the math family.

// ---- Decompositions and solves (FunctionsManual.cpp's linalg rules, real case). The info,
// LU and pivots outputs carry no gradient. det and slogdet go through A^-T, so their gradient
// at a singular matrix is not finite (PyTorch switches to an SVD formula there). ----

ValueId mT(Emit& e, ValueId v) {
  const int64_t r = e.dim(v);
  return e.transpose(v, r - 2, r - 1);
}

ValueId matmul_of(Emit& e, ValueId a, ValueId b) {
  return e.op("aten.matmul.default", {Emit::t(a), Emit::t(b)});
}

ValueId band(Emit& e, ValueId v, bool upper, int64_t k) {
  return e.op(upper ? "aten.triu.default" : "aten.tril.default", {Emit::t(v), Emit::i(k)});
}

// A value with two trailing dims of 1, to scale a batch of matrices.
ValueId per_matrix(Emit& e, ValueId v) {
  return e.unsqueeze(e.unsqueeze(v, e.dim(v)), e.dim(v) + 1);
}

void only_outputs(GradCtx& c, std::initializer_list<size_t> ok) {
  for (size_t k = 0; k < c.gout.size(); ++k)
    if (c.gout[k] != kNoValue && std::find(ok.begin(), ok.end(), k) == ok.end())
      c.fail("gradients through output " + std::to_string(k) + " are not supported");
}

// inverse = A^-1: gA = -A^-T g A^-T.
void linalg_inv_ex(GradCtx& c) {
  only_outputs(c, {0});
  if (!c.needs("A") || c.gout[0] == kNoValue) return;
  ValueId it = mT(c.e, c.out(0));
  c.add_grad("A", c.e.unary("neg", matmul_of(c.e, matmul_of(c.e, it, c.grad_out()), it)));
}

ValueId inverse_t(GradCtx& c) {
  return mT(c.e, c.e.call("aten.linalg_inv_ex.default", {Emit::t(c.in("A"))})[0]);
}

// det: gA = g det A^-T.
void linalg_det(GradCtx& c) {
  only_outputs(c, {0});
  if (!c.needs("A") || c.gout[0] == kNoValue) return;
  c.add_grad("A", c.e.mul(per_matrix(c.e, c.e.mul(c.grad_out(), c.out(0))), inverse_t(c)));
}

// slogdet: the sign is piecewise constant; g_logabsdet A^-T.
void linalg_slogdet(GradCtx& c) {
  only_outputs(c, {0, 1});
  if (!c.needs("A") || c.gout[1] == kNoValue) return;
  c.add_grad("A", c.e.mul(per_matrix(c.e, c.gout[1]), inverse_t(c)));
}

// X = A^-1 B (left) or B A^-1: gB = A^-T gX (gX A^-T), gA = -gB X^T (-X^T gB); a vector B
// is a column.
void linalg_solve_ex(GradCtx& c) {
  only_outputs(c, {0});
  if (c.gout[0] == kNoValue) return;
  ValueId A = c.in("A"), B = c.in("B"), X = c.out(0);
  const bool left = c.arg("left").b;
  ValueId gB =
      c.e.call("aten._linalg_solve_ex.default", {Emit::t(mT(c.e, A)), Emit::t(c.grad_out()),
                                                 Emit::kw("left", Arg::of_bool(left))})[0];
  c.add_grad(B, gB);
  if (!c.needs(A)) return;
  const std::vector<int64_t> as = c.e.sizes(A); // one vector: both iterators from it
  const bool vec =
      c.e.dim(B) == 1 || (c.e.dim(A) - 1 == c.e.dim(B) &&
                          c.e.sizes(B) == std::vector<int64_t>(as.begin(), as.end() - 1));
  ValueId gB2 = vec ? c.e.unsqueeze(gB, c.e.dim(gB)) : gB;
  ValueId X2 = vec ? c.e.unsqueeze(X, c.e.dim(X)) : X;
  ValueId gA = left ? matmul_of(c.e, gB2, mT(c.e, X2)) : matmul_of(c.e, mT(c.e, X2), gB2);
  c.add_grad(A, c.e.unary("neg", gA));
}

// L L^T = A: gA = L^-T Phi(L^T gL) L^-1 symmetrised (PyTorch's cholesky_backward).
void linalg_cholesky_ex(GradCtx& c) {
  only_outputs(c, {0});
  if (!c.needs("self") || c.gout[0] == kNoValue) return;
  Emit& e = c.e;
  const bool upper = c.arg("upper").b;
  ValueId L = upper ? mT(e, c.out(0)) : c.out(0);
  ValueId gL = upper ? mT(e, c.grad_out()) : c.grad_out();
  ValueId gA = band(e, matmul_of(e, mT(e, L), gL), false, 0);
  gA = e.mul_s(e.add(gA, mT(e, band(e, gA, false, -1))), 0.5);
  gA = e.op("aten.linalg_solve_triangular.default",
            {Emit::t(mT(e, L)), Emit::t(gA), Emit::kw("upper", Arg::of_bool(true)),
             Emit::kw("left", Arg::of_bool(true))});
  gA = e.op("aten.linalg_solve_triangular.default",
            {Emit::t(L), Emit::t(gA), Emit::kw("upper", Arg::of_bool(false)),
             Emit::kw("left", Arg::of_bool(false))});
  c.add_grad("self", gA);
}

// X = op(A)^-1 B with A triangular: gB = op(A)^-T gX, gA = -gB X^T restricted to A's triangle.
void linalg_solve_triangular(GradCtx& c) {
  if (c.gout[0] == kNoValue) return;
  Emit& e = c.e;
  ValueId A = c.in("self"), X = c.out(0);
  const bool upper = c.arg("upper").b, left = c.arg("left").b, unit = c.arg("unitriangular").b;
  ValueId gB =
      e.op("aten.linalg_solve_triangular.default",
           {Emit::t(mT(e, A)), Emit::t(c.grad_out()), Emit::kw("upper", Arg::of_bool(!upper)),
            Emit::kw("left", Arg::of_bool(left)), Emit::kw("unitriangular", Arg::of_bool(unit))});
  c.add_grad("B", gB);
  if (!c.needs(A)) return;
  ValueId gA = left ? matmul_of(e, gB, mT(e, X)) : matmul_of(e, mT(e, X), gB);
  c.add_grad(A, band(e, e.unary("neg", gA), upper, upper ? int64_t(unit) : -int64_t(unit)));
}

// triangular_solve(B, A): as solve_triangular (left), transpose solving with A^T; the cloned
// coefficient's gradient flows to A unchanged.
void triangular_solve(GradCtx& c) {
  Emit& e = c.e;
  ValueId B = c.in("self"), A = c.in("A"), X = c.out(0);
  const bool upper = c.arg("upper").b, trans = c.arg("transpose").b,
             unit = c.arg("unitriangular").b;
  if (c.gout[0] != kNoValue) {
    ValueId gB =
        e.call("aten.triangular_solve.default", {Emit::t(c.grad_out()), Emit::t(A), Emit::b(upper),
                                                 Emit::b(!trans), Emit::b(unit)})[0];
    c.add_grad(B, gB);
    if (c.needs(A)) {
      ValueId gA = trans ? matmul_of(e, X, mT(e, gB)) : matmul_of(e, gB, mT(e, X));
      c.add_grad(A, band(e, e.unary("neg", gA), upper, upper ? int64_t(unit) : -int64_t(unit)));
    }
  }
  if (c.gout[1] != kNoValue) c.add_grad(A, c.gout[1]);
}

const OpTable<GradRule>::Row kDerivatives[] = {
    // Decompositions and solves.
    {OpId::_linalg_det, linalg_det},
    {OpId::_linalg_slogdet, linalg_slogdet},
    {OpId::_linalg_solve_ex, linalg_solve_ex},
    {OpId::linalg_cholesky_ex, linalg_cholesky_ex},
    {OpId::linalg_inv_ex, linalg_inv_ex},
    {OpId::linalg_solve_triangular, linalg_solve_triangular},
    {OpId::triangular_solve, triangular_solve},
    // The math family (issue 18).
    {OpId::angle, zero_grad},
    {OpId::copysign_Tensor, copysign},
    {OpId::deg2rad, deg2rad},
    {OpId::erfc, erfc},
    {OpId::fmax, fmax},
    {OpId::fmin, fmin},
    {OpId::frac, identity},
    {OpId::hypot, hypot},
    {OpId::igamma, igamma},
    {OpId::igammac, igammac},
    {OpId::ldexp_Tensor, ldexp},
    {OpId::logaddexp, logaddexp},
    {OpId::logaddexp2, logaddexp2},
    {OpId::mvlgamma, mvlgamma},
    {OpId::nan_to_num, nan_to_num},
    {OpId::rad2deg, rad2deg},
    {OpId::sgn, zero_grad},
    {OpId::sinc, sinc},
    {OpId::special_entr, special_entr},
    {OpId::special_erfcx, special_erfcx},
    {OpId::special_i0e, special_i0e},
    {OpId::special_i1e, special_i1e},
    {OpId::special_log_ndtr, special_log_ndtr},
    {OpId::special_ndtr, special_ndtr},
    {OpId::special_ndtri, special_ndtri},
    {OpId::special_polygamma, special_polygamma},
    {OpId::special_xlog1py, xlog1py},
    {OpId::special_zeta, special_zeta},
    {OpId::xlogy_Tensor, xlogy},
    {OpId::_log_softmax, log_softmax},
    {OpId::_native_batch_norm_legit_no_training, batch_norm_eval},
    {OpId::_softmax, softmax},
    {OpId::_to_copy, identity},
    {OpId::abs, abs},
    {OpId::_adaptive_avg_pool2d, adaptive_avg_pool2d},
    {OpId::_cdist_forward, cdist},
    {OpId::col2im, col2im},
    {OpId::im2col, im2col},
    {OpId::adaptive_max_pool1d, adaptive_max_pool},
    {OpId::adaptive_max_pool2d, adaptive_max_pool},
    {OpId::adaptive_max_pool3d, adaptive_max_pool},
    {OpId::_unsafe_view, reshape_back},
    {OpId::adaptive_avg_pool2d, adaptive_avg_pool2d},
    {OpId::add_Scalar, identity},
    {OpId::add_Tensor, add_tensor},
    {OpId::addmm, addmm},
    {OpId::alias, identity},
    {OpId::conj_physical, identity},
    {OpId::positive, identity},
    {OpId::real, identity},
    {OpId::resolve_conj, identity},
    {OpId::resolve_neg, identity},
    {OpId::amax, amax},
    {OpId::amin, amax},
    {OpId::index_put, index_put},
    {OpId::cummax, cumextreme},
    {OpId::cummin, cumextreme},
    {OpId::index_add, index_add},
    {OpId::index_fill_int_Scalar, index_fill},
    {OpId::masked_fill_Tensor, masked_fill_tensor},
    {OpId::max, extreme_all},
    {OpId::max_dim, extreme_dim},
    {OpId::min, extreme_all},
    {OpId::min_dim, extreme_dim},
    {OpId::prod, prod},
    {OpId::prod_dim_int, prod},
    {OpId::scatter_reduce_two, scatter_reduce},
    {OpId::scatter_src, scatter_src},
    {OpId::scatter_value, scatter_value},
    {OpId::sort, sort},
    {OpId::sort_stable, sort},
    {OpId::topk, sort},
    {OpId::as_strided, as_strided},
    {OpId::batch_norm, batch_norm_eval},
    {OpId::bmm, bmm},
    {OpId::cat, cat},
    {OpId::clamp, clamp},
    {OpId::clone, identity},
    {OpId::constant_pad_nd, constant_pad_nd},
    {OpId::contiguous, identity},
    {OpId::conv2d, conv2d},
    {OpId::convolution, convolution},
    {OpId::copy, copy},
    {OpId::cos, cos},
    {OpId::div_Scalar, div_scalar},
    {OpId::div_Tensor, div_tensor},
    {OpId::dropout, dropout},
    {OpId::embedding, embedding},
    {OpId::erf, erf},
    {OpId::digamma, digamma},
    {OpId::erfinv, erfinv},
    {OpId::i0, i0},
    {OpId::lgamma, lgamma},
    {OpId::native_dropout, native_dropout},
    {OpId::masked_scatter, masked_scatter},
    {OpId::native_dropout_backward, native_dropout_backward},
    {OpId::polygamma, polygamma},
    {OpId::special_i1, special_i1},
    {OpId::exp, exp},
    {OpId::expand, identity},
    {OpId::flatten_using_ints, reshape_back},
    {OpId::flip, flip},
    {OpId::fmod_Scalar, identity},
    // Issue 18 op families.
    {OpId::div_Scalar_mode, div_mode},
    {OpId::div_Tensor_mode, div_mode},
    {OpId::fmod_Tensor, remainder_like<false>},
    {OpId::remainder_Scalar, identity},
    {OpId::remainder_Tensor, remainder_like<true>},
    {OpId::rsub_Scalar, rsub},
    {OpId::rsub_Tensor, rsub},
    {OpId::sub_Scalar, identity},
    {OpId::acos, acos},
    {OpId::acosh, acosh},
    {OpId::asin, asin},
    {OpId::asinh, asinh},
    {OpId::atan, atan},
    {OpId::atan2, atan2},
    {OpId::atanh, atanh},
    {OpId::cosh, cosh},
    {OpId::exp2, exp2},
    {OpId::expm1, expm1},
    {OpId::log10, log10},
    {OpId::log1p, log1p},
    {OpId::log2, log2},
    {OpId::sinh, sinh},
    {OpId::tan, tan},
    {OpId::ceil, zero_grad},
    {OpId::floor, zero_grad},
    {OpId::round, zero_grad},
    {OpId::round_decimals, zero_grad},
    {OpId::trunc, zero_grad},
    {OpId::clamp_Tensor, clamp_tensor},
    {OpId::pow_Scalar, pow_scalar},
    {OpId::cumprod, cumprod},
    {OpId::cumsum, cumsum},
    {OpId::logcumsumexp, logcumsumexp},
    // End of the issue-18 rows.
    {OpId::gather, gather},
    {OpId::gelu, gelu},
    {OpId::hardsigmoid, hardsigmoid},
    {OpId::hardswish, hardswish},
    {OpId::index_Tensor, index_tensor},
    {OpId::index_select, index_select},
    {OpId::lift_fresh_copy, identity},
    {OpId::linear, linear},
    {OpId::log, log},
    {OpId::log_softmax_int, log_softmax},
    {OpId::masked_fill_Scalar, masked_fill},
    {OpId::max_pool2d_with_indices, max_pool2d_with_indices},
    {OpId::max_pool3d_with_indices, max_pool3d_with_indices},
    {OpId::maximum, maximum},
    {OpId::mean, mean_default},
    {OpId::mean_dim, mean_dim},
    {OpId::min_other, minimum},
    {OpId::minimum, minimum},
    {OpId::mm, mm},
    {OpId::mul_Scalar, mul_scalar},
    {OpId::mul_Tensor, mul_tensor},
    {OpId::native_layer_norm, native_layer_norm},
    {OpId::neg, neg},
    {OpId::permute, permute},
    {OpId::pixel_shuffle, pixel_shuffle},
    {OpId::pixel_unshuffle, pixel_shuffle},
    {OpId::repeat, repeat},
    {OpId::pow_Tensor_Scalar, pow_tensor_scalar},
    {OpId::pow_Tensor_Tensor, pow_tensor_tensor},
    {OpId::reciprocal, reciprocal},
    {OpId::relu, relu},
    {OpId::reshape, reshape_back},
    {OpId::roll, roll},
    {OpId::rsqrt, rsqrt},
    {OpId::scatter_add, scatter_add},
    {OpId::diagonal, diagonal},
    {OpId::select_int, select},
    {OpId::sigmoid, sigmoid},
    {OpId::silu, silu},
    {OpId::sin, sin},
    {OpId::slice_Tensor, slice},
    {OpId::slice_scatter, slice_scatter},
    {OpId::softmax_int, softmax},
    {OpId::split_Tensor, split},
    {OpId::split_with_sizes, split},
    {OpId::sqrt, sqrt},
    {OpId::squeeze, reshape_back},
    {OpId::squeeze_dim, reshape_back},
    {OpId::squeeze_dims, reshape_back},
    {OpId::t, t},
    {OpId::sub_Tensor, sub_tensor},
    {OpId::sum, sum_default},
    {OpId::sum_dim_IntList, sum_dim},
    {OpId::tanh, tanh},
    {OpId::to_device, identity},
    {OpId::to_dtype, identity},
    {OpId::to_dtype_layout, identity},
    {OpId::transpose_int, transpose},
    {OpId::tril, triangle},
    {OpId::triu, triangle},
    {OpId::unflatten_int, reshape_back},
    {OpId::unsqueeze, reshape_back},
    {OpId::view, reshape_back},
    {OpId::where_ScalarOther, where_scalar_other},
    {OpId::where_self, where_self},
};

const OpTable<GradRule>& derivative_table() {
  static const OpTable<GradRule> table(kDerivatives);
  return table;
}

GradRule find_rule(std::string_view target) {
  return derivative_table().find(target);
}

/// Whether a declared op's float outputs do not depend differentiably on its inputs (plugin
/// ops are differentiable: their missing derivative is reported where it is needed).
bool non_differentiable(std::string_view target) {
  std::optional<OpId> id = find_op(target);
  return id && !has_tag(*id, OpTag::Differentiable);
}

/// Sum of the gradient contributions to one value, in the order they were made.
ValueId accumulate(Emit& e, const std::vector<ValueId>& parts) {
  if (parts.empty()) return kNoValue;
  ValueId acc = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) acc = e.add(acc, parts[k]);
  return acc;
}

} // namespace

const OpLayer& derivative_layer() {
  return derivative_table();
}

bool has_derivative(std::string_view target) {
  return find_rule(target) != nullptr;
}

JointGraph build_joint_graph(const Graph& fw_in) {
  // Composite norms and pooling become the ops that return what their backward reads; ops
  // with no rule of their own are differentiated through their decomposition.
  Graph fw = decompose_if(to_autograd_forms(fw_in), [](const Node& n) {
    return !has_derivative(n.target) && !non_differentiable(n.target);
  });
  JointGraph jg;
  jg.graph = fw;
  Graph& g = jg.graph;
  jg.num_primals = g.inputs.size();
  jg.num_fw_outputs = g.outputs.size();
  size_t num_fw_values = g.values.size(), num_fw_nodes = g.nodes.size();

  std::vector<char> requires_grad(num_fw_values, 0);
  for (const GraphInput& in : g.inputs)
    requires_grad[size_t(in.value)] =
        (in.kind == InputKind::Parameter || in.kind == InputKind::UserInput) &&
        is_floating(g.values[in.value].meta.dtype);
  for (const Node& n : g.nodes) {
    if (non_differentiable(n.target)) continue;
    bool any = false;
    for (ValueId v : n.tensor_inputs()) any = any || requires_grad[size_t(v)];
    for (ValueId o : n.outputs)
      requires_grad[size_t(o)] = any && is_floating(g.values[o].meta.dtype);
  }

  // In-place ops left after functionalization write into a view whose base is read afterwards
  // (decompose.cpp can replay writes through slices and selects only): their effect on the
  // base would be missed by the gradient, so they are refused rather than ignored.
  for (const Node& n : g.nodes) {
    int self = n.schema ? n.schema->index_of("self") : -1;
    if (target_has_tag(n.target, OpTag::Inplace) && self >= 0 &&
        n.args[size_t(self)].kind == Arg::Kind::Tensor &&
        requires_grad[size_t(n.args[size_t(self)].tensor)])
      throw Error(g.source,
                  "no derivative rule for this op: it writes in place into a view whose base is "
                  "read afterwards, which fxc cannot rewrite to its functional op",
                  n.name, n.target);
  }

  // One tangent per float output, seeding that output's gradient; none for the new values of
  // mutated buffers (batch norm's running statistics), which are no result.
  std::vector<std::vector<ValueId>> contrib(num_fw_values);
  const size_t results = jg.num_fw_outputs - std::min(g.num_mutation_outputs, jg.num_fw_outputs);
  for (size_t k = 0; k < results; ++k) {
    ValueId o = g.outputs[k];
    TensorMeta m = g.values[o].meta;
    if (!is_floating(m.dtype)) continue;
    m.strides = contiguous_strides(m.sizes);
    m.storage_offset = 0;
    std::string name = "tangents_" + std::to_string(jg.tangent_output_index.size() + 1);
    ValueId t = g.add_value(unique_name(g, name), m);
    g.inputs.push_back({t, InputKind::UserInput, name, true});
    jg.tangent_output_index.push_back(k);
    if (requires_grad[size_t(o)]) contrib[size_t(o)].push_back(t);
  }

  NameCache names(g);
  Emit e(g, {}, &names);
  for (size_t idx = num_fw_nodes; idx-- > 0;) {
    const Node& n = g.nodes[idx];
    bool wanted = false;
    for (ValueId o : n.outputs) wanted = wanted || !contrib[size_t(o)].empty();
    if (!wanted) continue;
    GradRule rule = find_rule(n.target);
    if (!rule && find_custom_op(n.target))
      throw Error(g.source,
                  "custom op '" + find_custom_op(n.target)->name +
                      "' has no derivative (plugins provide no backward); --mode=train cannot "
                      "differentiate through it",
                  n.name, n.target);
    if (!rule) throw Error(g.source, "no derivative rule for this op", n.name, n.target);
    GradCtx c{g, Emit(g, {}, &names), n, {}, requires_grad, {}};
    for (ValueId o : c.n.outputs) c.gout.push_back(accumulate(e, contrib[size_t(o)]));
    rule(c);
    for (auto& [input, grad] : c.grads) {
      assert(g.values[grad].meta.sizes == g.values[input].meta.sizes &&
             "gradient shape differs from its input");
      contrib[size_t(input)].push_back(grad);
    }
  }

  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < jg.num_primals; ++k) {
      const GraphInput in = g.inputs[k];
      bool want = pass == 0 ? in.kind == InputKind::Parameter : in.kind == InputKind::UserInput;
      TensorMeta m = g.values[in.value].meta;
      if (!want || !is_floating(m.dtype)) continue;
      ValueId grad = accumulate(e, contrib[size_t(in.value)]);
      if (grad == kNoValue) grad = e.zeros(m.sizes, m);
      g.outputs.push_back(grad);
      jg.grad_input_index.push_back(k);
      if (pass == 0) {
        jg.grad_names.push_back("grad." + in.fqn);
        continue;
      }
      size_t user_index = 0;
      for (size_t j = 0; j < k; ++j) user_index += g.inputs[j].kind == InputKind::UserInput;
      jg.grad_names.push_back("grad.input_" + std::to_string(user_index));
    }
  }
  if (log_enabled(Component::Aot, Level::Info))
    log_message(Component::Aot, Level::Info,
                "joint graph of " + g.name + ": " + std::to_string(g.nodes.size()) + " nodes (" +
                    std::to_string(num_fw_nodes) + " forward, " +
                    std::to_string(g.nodes.size() - num_fw_nodes) + " backward), " +
                    std::to_string(jg.num_primals) + " primals, " +
                    std::to_string(jg.tangent_output_index.size()) + " tangents, " +
                    std::to_string(jg.grad_names.size()) + " gradients");
  return jg;
}

} // namespace fxc
