// The decomposition table: one row per composite op, each building the op from core ATen ops.
#include "passes/decompose.h"

#include "frontend/composite.h"
#include "frontend/diag.h"
#include "frontend/meta.h"
#include "frontend/meta/meta_util.h"
#include "frontend/resample.h"
#include "frontend/schema.h"
#include "frontend/tensor_rules.h"
#include "passes/aot_ops.h"
#include "passes/conv_grad.h"
#include "runtime/onednn.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fxc {

namespace {

/// The node being decomposed, with its tensor arguments already mapped into the new graph.
struct DNode {
  const Graph& src;
  const Node& n;
  std::vector<Arg> args;
  const std::vector<ValueId>* map = nullptr; ///< src values -> their values in the new graph
  /// src values that later nodes must read as another new value (an in-place write through a
  /// view replaces its base); decompose_once applies them after the row.
  mutable std::vector<std::pair<ValueId, ValueId>> remap;

  const Arg& arg(std::string_view name) const {
    int k = n.schema->index_of(name);
    assert(k >= 0 && "decomposition reads an argument its schema lacks");
    return args[size_t(k)];
  }
  ValueId tensor(std::string_view name) const { return arg(name).tensor; }
  bool has(std::string_view name) const { return !arg(name).is_none(); }
  TensorMeta out_meta(size_t k) const { return src.values[n.outputs[k]].meta; }
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(src.source, msg, n.name, n.target);
  }
};

/// Returns one value per output of the node, or an empty vector to keep the node as it is.
using DecompFn = std::vector<ValueId> (*)(Emit& e, const DNode& d);

int64_t wrap(int64_t d, int64_t rank) {
  return wrap_dim(d, rank);
}

std::vector<int64_t> last_dims(int64_t rank, int64_t k) {
  std::vector<int64_t> dims;
  for (int64_t i = rank - k; i < rank; ++i) dims.push_back(i);
  return dims;
}

int64_t prod(const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, v.size()); ++i) p *= v[i];
  return p;
}

/// Shape [1, C, 1, ...] for per-channel vectors broadcast against an N-C-... input.
ValueId channel_view(Emit& e, ValueId v, int64_t rank) {
  std::vector<int64_t> s(size_t(rank), 1);
  s[1] = e.sizes(v)[0];
  return e.reshape(v, s);
}

std::vector<ValueId> gelu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  const std::string& approx = d.arg("approximate").s;
  ValueId half_x = e.mul_s(x, 0.5);
  if (approx == "tanh") {
    ValueId cube = e.mul(e.mul(x, x), x);
    ValueId inner = e.mul_s(e.add(x, e.mul_s(cube, 0.044715)), std::sqrt(2.0 / M_PI));
    return {e.mul(half_x, e.add_s(e.unary("tanh", inner), 1.0))};
  }
  if (approx != "none") d.fail("unknown gelu approximation '" + approx + "'");
  ValueId cdf = e.add_s(e.unary("erf", e.mul_s(x, M_SQRT1_2)), 1.0);
  return {e.mul(half_x, cdf)};
}

std::vector<ValueId> silu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {e.mul(x, e.unary("sigmoid", x))};
}

ValueId relu6_of_x_plus_3(Emit& e, ValueId x) {
  return e.op("aten.clamp.default", {Emit::t(e.add_s(x, 3.0)), Emit::f(0.0), Emit::f(6.0)});
}

std::vector<ValueId> hardsigmoid(Emit& e, const DNode& d) {
  return {e.div_s(relu6_of_x_plus_3(e, d.tensor("self")), 6.0)};
}

std::vector<ValueId> hardswish(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {e.div_s(e.mul(x, relu6_of_x_plus_3(e, x)), 6.0)};
}

ValueId softmax_input(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int k = d.n.schema->index_of("dtype");
  if (k >= 0 && !d.args[size_t(k)].is_none()) x = e.cast(x, d.args[size_t(k)].dtype());
  return x;
}

std::vector<ValueId> softmax(Emit& e, const DNode& d) {
  ValueId x = softmax_input(e, d);
  int64_t dim = wrap(d.arg("dim").i, e.dim(x));
  if (e.dim(x) == 0) return {e.unary("exp", e.sub(x, x))};
  ValueId ex = e.unary("exp", e.sub(x, e.amax(x, {dim}, true)));
  return {e.cast(e.div(ex, e.sum(ex, {dim}, true)), d.out_meta(0).dtype)};
}

std::vector<ValueId> log_softmax(Emit& e, const DNode& d) {
  ValueId x = softmax_input(e, d);
  if (e.dim(x) == 0) return {e.sub(x, x)};
  int64_t dim = wrap(d.arg("dim").i, e.dim(x));
  ValueId shifted = e.sub(x, e.amax(x, {dim}, true));
  ValueId lse = e.unary("log", e.sum(e.unary("exp", shifted), {dim}, true));
  return {e.cast(e.sub(shifted, lse), d.out_meta(0).dtype)};
}

/// (out, mean, rstd) of a layer norm over the trailing normalized_shape dims.
std::vector<ValueId> layer_norm_parts(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  int64_t rank = e.dim(x);
  int64_t k = int64_t(d.arg("normalized_shape").ints.size());
  if (k > rank) d.fail("normalized_shape has more dims than the input");
  std::vector<int64_t> dims = last_dims(rank, k);
  ValueId mean = e.mean(x, dims, true);
  ValueId xc = e.sub(x, mean);
  ValueId var = e.mean(e.mul(xc, xc), dims, true);
  ValueId rstd = e.unary("rsqrt", e.add_s(var, d.arg("eps").f));
  ValueId out = e.mul(xc, rstd);
  if (d.has("weight")) out = e.mul(out, d.tensor("weight"));
  if (d.has("bias")) out = e.add(out, d.tensor("bias"));
  return {out, mean, rstd};
}

std::vector<ValueId> layer_norm(Emit& e, const DNode& d) {
  return {layer_norm_parts(e, d)[0]};
}

std::vector<ValueId> native_layer_norm(Emit& e, const DNode& d) {
  std::vector<ValueId> r = layer_norm_parts(e, d);
  // PyTorch returns mean/rstd with the normalized dims kept as 1; match the node's metadata.
  for (size_t k = 1; k < 3; ++k) r[k] = e.reshape(r[k], d.out_meta(k).sizes);
  return r;
}

ValueId batch_norm_eval(Emit& e, const DNode& d, ValueId x, ValueId rm, ValueId rv) {
  int64_t rank = e.dim(x);
  if (rank < 2) d.fail("batch norm needs an input with a channel dimension");
  ValueId inv = channel_view(e, e.unary("rsqrt", e.add_s(rv, d.arg("eps").f)), rank);
  ValueId out = e.mul(e.sub(x, channel_view(e, rm, rank)), inv);
  if (d.has("weight")) out = e.mul(out, channel_view(e, d.tensor("weight"), rank));
  if (d.has("bias")) out = e.add(out, channel_view(e, d.tensor("bias"), rank));
  return out;
}

std::vector<ValueId> batch_norm_train_values(Emit& e, const DNode& d, std::vector<ValueId>* stats);

std::vector<ValueId> batch_norm(Emit& e, const DNode& d) {
  // Training mode writes the running statistics when given: that node stays (its kernel
  // writes them); without them it normalises by the batch statistics.
  if (d.arg("training").b) {
    if (d.has("running_mean") && d.has("running_var")) return {};
    return {batch_norm_train_values(e, d, nullptr)[0]};
  }
  if (!d.has("running_mean") || !d.has("running_var"))
    d.fail("batch norm without running statistics has no decomposition");
  return {
      batch_norm_eval(e, d, d.tensor("input"), d.tensor("running_mean"), d.tensor("running_var"))};
}

std::vector<ValueId> native_batch_norm_no_training(Emit& e, const DNode& d) {
  ValueId out =
      batch_norm_eval(e, d, d.tensor("input"), d.tensor("running_mean"), d.tensor("running_var"));
  // The eval kernel returns empty save_mean/save_rstd; reproduce their metadata.
  return {out, e.zeros(d.out_meta(1).sizes, d.out_meta(1)),
          e.zeros(d.out_meta(2).sizes, d.out_meta(2))};
}

/// Broadcasts `v`'s leading (batch) dims to `batch` and folds them into one.
ValueId fold_batch(Emit& e, ValueId v, const std::vector<int64_t>& batch) {
  std::vector<int64_t> s = e.sizes(v);
  std::vector<int64_t> full = batch;
  full.push_back(s[s.size() - 2]);
  full.push_back(s[s.size() - 1]);
  if (s.size() < full.size())
    v = e.reshape(v, [&] {
      std::vector<int64_t> r(full.size() - s.size(), 1);
      r.insert(r.end(), s.begin(), s.end());
      return r;
    }());
  v = e.expand(v, full);
  return e.reshape(v, {prod(batch), full[full.size() - 2], full.back()});
}

std::vector<int64_t> broadcast(std::vector<int64_t> a, std::vector<int64_t> b, const DNode& d) {
  try {
    return broadcast_shapes(a, b);
  } catch (const std::invalid_argument& e) {
    d.fail(std::string("batch dimensions do not broadcast: ") + e.what());
  }
}

std::vector<ValueId> sdpa(Emit& e, const DNode& d) {
  if (d.arg("dropout_p").f != 0.0) d.fail("attention dropout is not supported (eval only)");
  ValueId q = d.tensor("query"), k = d.tensor("key"), v = d.tensor("value");
  std::vector<int64_t> qs = e.sizes(q), ks = e.sizes(k), vs = e.sizes(v);
  if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2) d.fail("attention inputs need 2+ dims");
  if (d.arg("enable_gqa").b && ks.size() >= 3 && vs.size() >= 3 && qs.size() >= 3 &&
      ks[ks.size() - 3] != qs[qs.size() - 3]) {
    // Grouped-query attention: each of k's and v's Hkv heads serves H / Hkv query heads
    // (repeat_interleave along the head dim, as PyTorch's math path does).
    int64_t h = qs[qs.size() - 3], hk = ks[ks.size() - 3];
    if (hk == 0 || h % hk != 0 || vs[vs.size() - 3] != hk)
      d.fail("grouped-query attention needs key and value heads dividing the query's (" +
             std::to_string(h) + " query heads, " + std::to_string(hk) + " key heads)");
    auto repeat_heads = [&](ValueId t) {
      std::vector<int64_t> s = e.sizes(t);
      size_t hd = s.size() - 3;
      std::vector<int64_t> grouped = s;
      grouped.insert(grouped.begin() + long(hd) + 1, h / hk);
      ValueId x = e.expand(e.unsqueeze(t, int64_t(hd) + 1), grouped);
      s[hd] = h;
      return e.reshape(x, s);
    };
    k = repeat_heads(k);
    v = repeat_heads(v);
    ks = e.sizes(k);
    vs = e.sizes(v);
  }
  int64_t L = qs[qs.size() - 2], E = qs.back(), S = ks[ks.size() - 2], Ev = vs.back();
  double scale = d.has("scale") ? d.arg("scale").f : 1.0 / std::sqrt(double(E));
  std::vector<int64_t> qb(qs.begin(), qs.end() - 2), kb(ks.begin(), ks.end() - 2),
      vb(vs.begin(), vs.end() - 2);
  std::vector<int64_t> batch = broadcast(broadcast(qb, kb, d), vb, d);
  ValueId q3 = fold_batch(e, q, batch);
  ValueId kt = e.transpose(fold_batch(e, k, batch), 1, 2);
  std::vector<int64_t> score_sizes = batch;
  score_sizes.push_back(L);
  score_sizes.push_back(S);
  ValueId scores = e.reshape(e.mul_s(e.bmm(q3, kt), scale), score_sizes);
  bool masked = false;
  if (d.arg("is_causal").b) {
    Device dev = e.meta(q).device;
    ValueId rows = e.unsqueeze(e.arange(0, L, 1, dev), 1), cols = e.arange(0, S, 1, dev);
    scores = e.where_s(e.cmp("ge", rows, cols), scores, -INFINITY);
    masked = true;
  }
  if (d.has("attn_mask")) {
    ValueId m = d.tensor("attn_mask");
    if (e.dtype(m) == DType::Bool) {
      scores = e.where_s(m, scores, -INFINITY);
      masked = true;
    } else {
      scores = e.add(scores, m);
    }
  }
  int64_t last = int64_t(score_sizes.size()) - 1;
  ValueId attn = e.op("aten._softmax.default", {Emit::t(scores), Emit::i(last), Emit::b(false)});
  if (masked) {
    // PyTorch's _safe_softmax: rows with every score masked out give zeros, not NaN.
    ValueId live = e.unary("logical_not", e.cmp_s("eq", scores, -INFINITY));
    ValueId any = e.op("aten.any.dim", {Emit::t(live), Emit::i(last), Emit::b(true)});
    attn = e.where_s(any, attn, 0.0);
  }
  ValueId out = e.bmm(e.reshape(attn, {prod(batch), L, S}), fold_batch(e, v, batch));
  std::vector<int64_t> out_sizes = batch;
  out_sizes.push_back(L);
  out_sizes.push_back(Ev);
  return {e.reshape(out, out_sizes)};
}

// diff: n times the difference of the slices [1:] and [:-1] along dim (logical_xor for bool),
// after concatenating prepend and append there.
std::vector<ValueId> diff(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t rank = e.dim(x);
  if (rank == 0) return {};
  int64_t dim = wrap(d.arg("dim").i, rank), n = d.arg("n").i;
  std::vector<ValueId> parts;
  if (d.has("prepend")) parts.push_back(d.tensor("prepend"));
  parts.push_back(x);
  if (d.has("append")) parts.push_back(d.tensor("append"));
  if (parts.size() > 1) x = e.cat(parts, dim);
  const bool logical = e.dtype(x) == DType::Bool;
  for (int64_t k = 0; k < n; ++k) {
    int64_t len = e.sizes(x)[size_t(dim)];
    if (len == 0) break;
    ValueId hi = e.slice(x, dim, 1, len), lo = e.slice(x, dim, 0, len - 1);
    x = logical ? e.op("aten.logical_xor.default", {Emit::t(hi), Emit::t(lo)}) : e.sub(hi, lo);
  }
  return {x};
}

std::vector<ValueId> linear(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), w = d.tensor("weight");
  std::vector<int64_t> xs = e.sizes(x);
  if (xs.empty() || e.dim(w) != 2) return {};
  int64_t in = xs.back(), out_f = e.sizes(w)[0];
  ValueId x2 = xs.size() == 2 ? x : e.reshape(x, {prod(xs, 0, xs.size() - 1), in});
  ValueId wt = e.permute(w, {1, 0});
  ValueId y = d.has("bias") ? e.op("aten.addmm.default",
                                   {Emit::t(d.tensor("bias")), Emit::t(x2), Emit::t(wt)})
                            : e.mm(x2, wt);
  if (xs.size() == 2) return {y};
  std::vector<int64_t> ys(xs.begin(), xs.end() - 1);
  ys.push_back(out_f);
  return {e.reshape(y, ys)};
}

/// addmm stays one extern matmul with a fused bias unless splitting helps, as in Inductor's
/// decomposition: a 1-row product with a small mat2 becomes a pointwise multiply and a sum,
/// and non-unit beta/alpha become scalings around mm + add.
/// v * s for a Scalar argument, keeping an integral scalar integral; v itself when s is 1.
ValueId scale_by(Emit& e, ValueId v, const Arg& s) {
  if (s.kind != Arg::Kind::Bool && s.scalar() == 1.0) return v;
  return e.op("aten.mul.Scalar", {Emit::t(v), {"", s}});
}

std::vector<ValueId> addmm(Emit& e, const DNode& d) {
  ValueId bias = d.tensor("self"), a = d.tensor("mat1"), b = d.tensor("mat2");
  double beta = d.arg("beta").scalar(), alpha = d.arg("alpha").scalar();
  std::vector<int64_t> as = e.sizes(a), bs = e.sizes(b);
  if (as.size() != 2 || bs.size() != 2) return {};
  bool tiny = as[0] == 1 && bs[0] <= 16 && bs[1] <= 16;
  if (!tiny && beta == 1 && alpha == 1) return {};
  ValueId prod = tiny ? e.sum(e.mul(e.permute(a, {1, 0}), b), {0}, true) : e.mm(a, b);
  // Integer matrices stay integers: alpha and beta are applied as the Scalars they are.
  prod = scale_by(e, prod, d.arg("alpha"));
  if (beta == 0) return {prod};
  return {e.add(prod, scale_by(e, bias, d.arg("beta")))};
}

std::vector<ValueId> matmul(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("other");
  std::vector<int64_t> as = e.sizes(a), bs = e.sizes(b);
  if (as.empty() || bs.empty()) d.fail("matmul needs tensors of at least one dimension");
  if (as.size() == 1 && bs.size() == 1) return {e.sum(e.mul(a, b), {0}, false)};
  if (as.size() == 2 && bs.size() == 2) return {e.mm(a, b)};
  if (bs.size() <= 2) {
    // Fold a's batch dims into the rows of one mm.
    ValueId b2 = bs.size() == 1 ? e.unsqueeze(b, 1) : b;
    ValueId a2 =
        as.size() == 1 ? e.unsqueeze(a, 0) : e.reshape(a, {prod(as, 0, as.size() - 1), as.back()});
    std::vector<int64_t> rs(as.begin(), as.end() - 1);
    if (bs.size() == 2) rs.push_back(bs[1]);
    return {e.reshape(e.mm(a2, b2), rs)};
  }
  // Batched: 1-D operands become a row/column and lose that dim again at the end.
  ValueId a3 = as.size() == 1 ? e.unsqueeze(a, 0) : a;
  ValueId b3 = b;
  std::vector<int64_t> a3s = e.sizes(a3);
  std::vector<int64_t> batch = broadcast(std::vector<int64_t>(a3s.begin(), a3s.end() - 2),
                                         std::vector<int64_t>(bs.begin(), bs.end() - 2), d);
  int64_t n = a3s[a3s.size() - 2], m = bs.back();
  ValueId r = e.bmm(fold_batch(e, a3, batch), fold_batch(e, b3, batch));
  std::vector<int64_t> rs = batch;
  if (as.size() > 1) rs.push_back(n);
  rs.push_back(m);
  return {e.reshape(r, rs)};
}

std::vector<int64_t> spatial(const Arg& a, size_t n) {
  if (a.ints.size() == 1) return std::vector<int64_t>(n, a.ints[0]);
  return a.ints;
}

/// conv1d/conv2d/conv3d as convolution; an unbatched input gains a batch dim of 1 and loses it
/// after.
std::vector<ValueId> conv2d(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), w = d.tensor("weight");
  size_t sp = size_t(std::max<int64_t>(e.dim(w) - 2, 0));
  if (e.dim(x) == e.dim(w) - 1) {
    std::vector<int64_t> os = d.out_meta(0).sizes;
    DNode b = d;
    b.args[size_t(d.n.schema->index_of("input"))] = Arg::of_tensor(e.unsqueeze(x, 0));
    return {e.reshape(conv2d(e, b)[0], os)};
  }
  std::vector<CallArg> call = {Emit::t(x),
                               Emit::t(w),
                               {"", d.arg("bias")},
                               Emit::ints(spatial(d.arg("stride"), sp)),
                               Emit::ints(spatial(d.arg("padding"), sp)),
                               Emit::ints(spatial(d.arg("dilation"), sp)),
                               Emit::b(false),
                               Emit::ints(std::vector<int64_t>(sp, 0)),
                               Emit::i(d.arg("groups").i)};
  return {e.op("aten.convolution.default", std::move(call))};
}

/// conv1d/2d/3d.padding: padding "valid" (none) or "same" (the output keeps the input's size,
/// stride 1 only; PyTorch pads dilation * (k - 1) per dim, the odd element at the end, which
/// needs a constant pad before the convolution when it is odd).
std::vector<ValueId> conv_padding(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), w = d.tensor("weight");
  size_t sp = size_t(std::max<int64_t>(e.dim(w) - 2, 0));
  std::vector<int64_t> stride = spatial(d.arg("stride"), sp),
                       dilation = spatial(d.arg("dilation"), sp), pad(sp, 0);
  const std::string& mode = d.arg("padding").s;
  if (mode != "valid" && mode != "same")
    d.fail("invalid padding string '" + mode + "': expected 'valid' or 'same'");
  bool unbatched = e.dim(x) == e.dim(w) - 1;
  if (unbatched) x = e.unsqueeze(x, 0);
  if (mode == "same") {
    for (int64_t st : stride)
      if (st != 1) d.fail("padding='same' is not supported for strided convolutions");
    std::vector<int64_t> extra; // constant_pad_nd's pairs, last dim first
    bool odd = false;
    for (size_t i = sp; i-- > 0;) {
      int64_t total = dilation[i] * (e.sizes(w)[2 + i] - 1);
      pad[i] = total / 2;
      extra.push_back(0);
      extra.push_back(total - 2 * pad[i]);
      odd = odd || total % 2 != 0;
    }
    if (odd) x = e.op("aten.constant_pad_nd.default", {Emit::t(x), Emit::ints(extra)});
  }
  ValueId y = e.op("aten.convolution.default", {Emit::t(x),
                                                Emit::t(w),
                                                {"", d.arg("bias")},
                                                Emit::ints(stride),
                                                Emit::ints(pad),
                                                Emit::ints(dilation),
                                                Emit::b(false),
                                                Emit::ints(std::vector<int64_t>(sp, 0)),
                                                Emit::i(d.arg("groups").i)});
  if (unbatched) y = e.op("aten.squeeze.dims", {Emit::t(y), Emit::ints({0})});
  return {y};
}

/// bmm(a [B, M, K], b) where b is one [K, N] matrix expanded over the batch (the form core ATen's
/// matmul takes for a non-contiguous 3-D input times a weight, as in nn.MultiheadAttention's
/// projections) as one mm over the B·M rows: its derivative is then one mm per operand, not a
/// batched product summed over the batch (a [B, K, N] intermediate: 1.4 GB for each attention
/// projection of ViT-B/16 at batch 8). The matrix is found through the expand and the
/// size-preserving views above it. Kept as it is otherwise.
std::vector<ValueId> bmm_of_shared_matrix(Emit& e, const DNode& d) {
  const Graph& g = d.src;
  const std::vector<int64_t>& as = g.values[size_t(d.n.arg("self").tensor)].meta.sizes;
  ValueId v = d.n.arg("mat2").tensor;
  const std::vector<int64_t> bs = g.values[size_t(v)].meta.sizes;
  if (as.size() != 3 || bs.size() != 3 || as[0] < 2 || as[0] != bs[0] || as[2] != bs[1]) return {};
  const std::vector<int64_t> kn = {bs[1], bs[2]}, one_kn = {1, bs[1], bs[2]};
  bool expanded = false;
  while (true) {
    const std::vector<int64_t>& sz = g.values[size_t(v)].meta.sizes;
    if (sz == kn || (sz == one_kn && expanded)) break;
    int32_t p = g.values[size_t(v)].producer;
    if (p < 0) return {};
    const Node& pn = g.nodes[size_t(p)];
    bool view = pn.target == "aten.view.default" || pn.target == "aten._unsafe_view.default" ||
                pn.target == "aten.reshape.default";
    if (!view && pn.target != "aten.expand.default") return {};
    ValueId in = pn.arg("self").tensor;
    const std::vector<int64_t>& in_sz = g.values[size_t(in)].meta.sizes;
    // A view keeps [B, K, N] as it is; the expand broadcasts [K, N] or [1, K, N] over B.
    if (view && in_sz != sz) return {};
    if (!view) {
      if (in_sz != kn && in_sz != one_kn) return {};
      expanded = true;
    }
    v = in;
  }
  if (!expanded) return {};
  ValueId w = (*d.map)[size_t(v)];
  if (e.sizes(w) != kn) w = e.reshape(w, kn);
  ValueId a = d.tensor("self");
  ValueId prod = e.mm(e.reshape(a, {as[0] * as[1], as[2]}), w);
  return {e.reshape(prod, {as[0], as[1], bs[2]})};
}

std::vector<ValueId> max_pool2d(Emit& e, const DNode& d) {
  std::vector<CallArg> call;
  for (size_t k = 0; k < d.args.size(); ++k) call.push_back({"", d.args[k]});
  return {e.call("aten.max_pool2d_with_indices.default", std::move(call))[0]};
}

std::vector<ValueId> max_pool3d(Emit& e, const DNode& d) {
  std::vector<CallArg> call;
  for (size_t k = 0; k < d.args.size(); ++k) call.push_back({"", d.args[k]});
  return {e.call("aten.max_pool3d_with_indices.default", std::move(call))[0]};
}

std::vector<ValueId> adaptive_avg_pool2d(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> xs = e.sizes(x), os = spatial(d.arg("output_size"), 2);
  if (xs.size() < 2 || os.size() != 2) return {};
  int64_t H = xs[xs.size() - 2], W = xs.back();
  if (os[0] <= 0 || os[1] <= 0 || H % os[0] != 0 || W % os[1] != 0) return {};
  int64_t r = int64_t(xs.size());
  std::vector<int64_t> split(xs.begin(), xs.end() - 2);
  split.insert(split.end(), {os[0], H / os[0], os[1], W / os[1]});
  return {e.mean(e.reshape(x, split), {r - 1, r + 1}, false)};
}

std::vector<ValueId> transpose(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  if (r == 0) return {e.op("aten.alias.default", {Emit::t(x)})};
  return {e.transpose(x, wrap(d.arg("dim0").i, r), wrap(d.arg("dim1").i, r))};
}

std::vector<ValueId> to_shape(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> s = d.out_meta(0).sizes;
  if (e.sizes(x) == s) return {e.view(x, s)};
  return {e.reshape(x, s)};
}

std::vector<ValueId> split(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t dim = wrap(d.arg("dim").i, e.dim(x));
  std::vector<int64_t> sizes;
  for (ValueId o : d.n.outputs) sizes.push_back(d.src.values[o].meta.sizes[size_t(dim)]);
  return e.call("aten.split_with_sizes.default", {Emit::t(x), Emit::ints(sizes), Emit::i(dim)});
}

std::vector<ValueId> pad(Emit& e, const DNode& d) {
  if (d.arg("mode").s != "constant") return {};
  double value = d.has("value") ? d.arg("value").f : 0.0;
  return {e.op("aten.constant_pad_nd.default",
               {Emit::t(d.tensor("self")), {"", d.arg("pad")}, Emit::f(value)})};
}

// ---- Issue 18: reductions as sums, maxima and pointwise ops -----------------------------------

/// The reduced dims of a reduction's `dim` argument (None, [] or absent: every dim).
std::vector<int64_t> reduce_dims_of(const DNode& d, ValueId x, Emit& e) {
  int64_t rank = e.dim(x);
  std::vector<int64_t> dims;
  int k = d.n.schema->index_of("dim");
  if (k >= 0) {
    const Arg& a = d.args[size_t(k)];
    if (a.kind == Arg::Kind::Int) dims.push_back(wrap(a.i, rank));
    if (a.kind == Arg::Kind::Ints)
      for (int64_t v : a.ints) dims.push_back(wrap(v, rank));
  }
  if (dims.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  if (rank == 0) dims.clear();
  std::sort(dims.begin(), dims.end());
  return dims;
}

bool keepdim_of(const DNode& d) {
  int k = d.n.schema->index_of("keepdim");
  return k >= 0 && d.args[size_t(k)].b;
}

/// Whether a reduced dim is empty (the decompositions below leave those to the kernel).
bool empty_reduction(Emit& e, ValueId x, const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (e.sizes(x)[size_t(d)] == 0) return true;
  return false;
}

/// var / std / var_mean: sum((x - mean)^2) / max(0, N - correction), two passes as PyTorch.
std::vector<ValueId> var_like(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> dims = reduce_dims_of(d, x, e);
  bool keep = keepdim_of(d);
  double corr = 1.0;
  if (d.n.schema->index_of("unbiased") >= 0)
    corr = d.arg("unbiased").b ? 1.0 : 0.0;
  else if (d.has("correction"))
    corr = d.arg("correction").scalar();
  int64_t n = 1;
  for (int64_t k : dims) n *= e.sizes(x)[size_t(k)];
  ValueId mean = e.mean(x, dims, true);
  ValueId xc = e.sub(x, mean);
  ValueId var = e.div_s(e.sum(e.mul(xc, xc), dims, keep), std::max(0.0, double(n) - corr));
  const std::string& t = d.n.target;
  if (t.rfind("aten.std.", 0) == 0) return {e.unary("sqrt", var)};
  if (t == "aten.std_mean.correction")
    return {e.unary("sqrt", var), keep ? mean : e.reshape(mean, d.out_meta(1).sizes)};
  if (t == "aten.var_mean.correction")
    return {var, keep ? mean : e.reshape(mean, d.out_meta(1).sizes)};
  return {var};
}

/// logsumexp: log(sum(exp(x - m))) + m, m the maximum where finite (0 where infinite).
std::vector<ValueId> logsumexp(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (!is_floating(e.dtype(x))) return {};
  std::vector<int64_t> dims = reduce_dims_of(d, x, e);
  if (dims.empty() || empty_reduction(e, x, dims)) return {};
  ValueId m = e.amax(x, dims, true);
  m = e.where_s(e.unary("logical_not", e.unary("isinf", m)), m, 0.0);
  ValueId r = e.add(e.unary("log", e.sum(e.unary("exp", e.sub(x, m)), dims, true)), m);
  return {keepdim_of(d) ? r : e.reshape(r, d.out_meta(0).sizes)};
}

/// linalg_vector_norm for ord 1, 2, inf and other positive ords.
std::vector<ValueId> vector_norm(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (d.has("dtype")) x = e.cast(x, d.arg("dtype").dtype());
  std::vector<int64_t> dims = reduce_dims_of(d, x, e);
  double p = d.arg("ord").scalar();
  if (!(p > 0) || empty_reduction(e, x, dims)) return {};
  bool keep = keepdim_of(d);
  ValueId a = e.unary("abs", x), r;
  if (dims.empty()) return {a};
  if (std::isinf(p))
    r = e.amax(a, dims, keep);
  else if (p == 1)
    r = e.sum(a, dims, keep);
  else if (p == 2)
    r = e.unary("sqrt", e.sum(e.mul(x, x), dims, keep));
  else
    r = e.pow_s(e.sum(e.pow_s(a, p), dims, keep), 1.0 / p);
  return {r};
}

/// max() / min() over every element: amax / amin over every dim.
std::vector<ValueId> extreme_all(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> dims = reduce_dims_of(d, x, e);
  if (dims.empty()) return {e.op("aten.clone.default", {Emit::t(x)})};
  if (d.n.target == "aten.max.default") return {e.amax(x, dims, false)};
  return {e.op("aten.amin.default", {Emit::t(x), Emit::ints(dims), Emit::b(false)})};
}

/// max.dim / min.dim: (amax, argmax) / (amin, argmin) along dim.
std::vector<ValueId> extreme_dim(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) == 0) return {};
  int64_t dim = wrap(d.arg("dim").i, e.dim(x));
  bool keep = d.arg("keepdim").b, mx = d.n.target == "aten.max.dim";
  ValueId v = e.op(mx ? "aten.amax.default" : "aten.amin.default",
                   {Emit::t(x), Emit::ints({dim}), Emit::b(keep)});
  ValueId i = e.op(mx ? "aten.argmax.default" : "aten.argmin.default",
                   {Emit::t(x), Emit::i(dim), Emit::b(keep)});
  return {v, i};
}

/// all(...) = not any(not x) (bool inputs and outputs; u8 keeps its kernel).
std::vector<ValueId> all_of(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dtype(x) == DType::U8) return {};
  std::vector<int64_t> dims = reduce_dims_of(d, x, e);
  ValueId nx = e.unary("logical_not", x);
  ValueId any =
      dims.empty() ? nx
                   : e.op("aten.any.dims", {Emit::t(nx), Emit::ints(dims), Emit::b(keepdim_of(d))});
  return {e.unary("logical_not", any)};
}
/// nansum: the sum of where(isnan(x), 0, x) (floating inputs).
std::vector<ValueId> nansum(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (d.has("dtype")) x = e.cast(x, d.arg("dtype").dtype());
  if (!is_floating(e.dtype(x))) return {};
  std::vector<int64_t> dims = reduce_dims_of(d, x, e);
  ValueId z = e.where_s(e.unary("logical_not", e.unary("isnan", x)), x, 0.0);
  if (dims.empty()) return {e.op("aten.clone.default", {Emit::t(z)})};
  return {e.sum(z, dims, keepdim_of(d))};
}

/// count_nonzero: the sum of x != 0 (bool sums to i64).
std::vector<ValueId> count_nonzero(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> dims = reduce_dims_of(d, x, e);
  ValueId nz = e.cmp_s("ne", x, 0.0);
  if (dims.empty()) return {e.cast(nz, DType::I64)};
  return {e.sum(nz, dims, false)};
}
// ---- End of the issue-18 decompositions ----

std::vector<ValueId> stack(Emit& e, const DNode& d) {
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  if (ts.empty()) return {};
  int64_t dim = wrap(d.arg("dim").i, e.dim(ts[0]) + 1);
  std::vector<ValueId> parts;
  for (ValueId t : ts) parts.push_back(e.unsqueeze(t, dim));
  return {e.cat(parts, dim)};
}

std::vector<ValueId> unbind(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t dim = wrap(d.arg("dim").i, e.dim(x));
  std::vector<ValueId> out;
  for (size_t i = 0; i < d.n.outputs.size(); ++i)
    out.push_back(e.op("aten.select.int", {Emit::t(x), Emit::i(dim), Emit::i(int64_t(i))}));
  return out;
}

// ---- Activations, single-bound clamps, prelu, glu, fill, select_scatter ----

ValueId clamp_call(Emit& e, ValueId x, const Arg& lo, const Arg& hi) {
  return e.op("aten.clamp.default", {Emit::t(x), {"", lo}, {"", hi}});
}

std::vector<ValueId> hardtanh(Emit& e, const DNode& d) {
  // hardtanh keeps its input's dtype (clamp would promote an integer tensor to float).
  ValueId x = d.tensor("self");
  return {e.cast(clamp_call(e, x, d.arg("min_val"), d.arg("max_val")), e.meta(x).dtype)};
}
std::vector<ValueId> clamp_min(Emit& e, const DNode& d) {
  return {clamp_call(e, d.tensor("self"), d.arg("min"), Arg::none())};
}
std::vector<ValueId> clamp_max(Emit& e, const DNode& d) {
  return {clamp_call(e, d.tensor("self"), Arg::none(), d.arg("max"))};
}

std::vector<ValueId> leaky_relu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {e.where(e.cmp_s("gt", x, 0.0), x, e.mul_s(x, d.arg("negative_slope").scalar()))};
}

std::vector<ValueId> elu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  double alpha = d.arg("alpha").scalar(), scale = d.arg("scale").scalar();
  double input_scale = d.arg("input_scale").scalar();
  ValueId neg = e.mul_s(e.unary("expm1", e.mul_s(x, input_scale)), alpha * scale);
  return {e.where(e.cmp_s("gt", x, 0.0), e.mul_s(x, scale), neg)};
}

/// log1p(exp(beta x)) / beta where beta x <= threshold, else x. The soft branch sees beta x
/// clamped to the threshold, so neither it nor its gradient overflows where it is not taken.
ValueId softplus_of(Emit& e, ValueId x, double beta, double threshold) {
  ValueId xb = e.mul_s(x, beta);
  ValueId capped = clamp_call(e, xb, Arg::none(), Arg::of_float(threshold));
  ValueId soft = e.div_s(e.unary("log1p", e.unary("exp", capped)), beta);
  return e.where(e.cmp_s("gt", xb, threshold), x, soft);
}

std::vector<ValueId> softplus(Emit& e, const DNode& d) {
  return {softplus_of(e, d.tensor("self"), d.arg("beta").scalar(), d.arg("threshold").scalar())};
}

std::vector<ValueId> mish(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {e.mul(x, e.unary("tanh", softplus_of(e, x, 1.0, 20.0)))};
}

std::vector<ValueId> prelu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), w = d.tensor("weight");
  int64_t rank = e.dim(x);
  ValueId wv = e.meta(w).numel() == 1 ? e.reshape(w, {}) : channel_view(e, w, rank);
  return {e.where(e.cmp_s("gt", x, 0.0), x, e.mul(x, wv))};
}

std::vector<ValueId> glu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t dim = wrap(d.arg("dim").i, e.dim(x)), h = e.sizes(x)[size_t(dim)] / 2;
  return {e.mul(e.slice(x, dim, 0, h), e.unary("sigmoid", e.slice(x, dim, h, 2 * h)))};
}

std::vector<ValueId> fill_scalar(Emit& e, const DNode& d) {
  return {e.op("aten.full_like.default", {Emit::t(d.tensor("self")), {"", d.arg("value")}})};
}

std::vector<ValueId> select_scatter(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t dim = wrap(d.arg("dim").i, e.dim(x)), i = d.arg("index").i;
  if (i < 0) i += e.sizes(x)[size_t(dim)];
  return {e.slice_scatter(x, e.unsqueeze(d.tensor("src"), dim), dim, i, i + 1)};
}

// ---- Group, instance and batch-statistics normalisation ----

/// y * weight + bias, both per channel (dim 1), when given.
ValueId channel_affine(Emit& e, const DNode& d, ValueId y, int64_t rank) {
  if (d.has("weight")) y = e.mul(y, channel_view(e, d.tensor("weight"), rank));
  if (d.has("bias")) y = e.add(y, channel_view(e, d.tensor("bias"), rank));
  return y;
}

/// (x - mean) * rstd over `dims` (kept), with the mean and rstd.
std::vector<ValueId> normalize_over(Emit& e, ValueId x, const std::vector<int64_t>& dims,
                                    double eps) {
  ValueId mean = e.mean(x, dims, true);
  ValueId xc = e.sub(x, mean);
  ValueId rstd = e.unary("rsqrt", e.add_s(e.mean(e.mul(xc, xc), dims, true), eps));
  return {e.mul(xc, rstd), mean, rstd};
}

std::vector<ValueId> native_group_norm(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  std::vector<int64_t> xs = e.sizes(x);
  int64_t N = xs[0], G = d.arg("group").i, rank = int64_t(xs.size());
  ValueId xr = e.reshape(x, {N, G, prod(xs, 1) / G});
  std::vector<ValueId> r = normalize_over(e, xr, {2}, d.arg("eps").f);
  ValueId y = channel_affine(e, d, e.reshape(r[0], xs), rank);
  return {y, e.reshape(r[1], {N, G}), e.reshape(r[2], {N, G})};
}

std::vector<ValueId> group_norm(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  std::vector<int64_t> xs = e.sizes(x);
  return {e.call("aten.native_group_norm.default", {Emit::t(x),
                                                    {"", d.arg("weight")},
                                                    {"", d.arg("bias")},
                                                    Emit::i(xs[0]),
                                                    Emit::i(xs[1]),
                                                    Emit::i(prod(xs, 2)),
                                                    Emit::i(d.arg("num_groups").i),
                                                    Emit::f(d.arg("eps").f)})[0]};
}

std::vector<ValueId> instance_norm(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  if (!d.arg("use_input_stats").b)
    return {e.call("aten._native_batch_norm_legit_no_training.default",
                   {Emit::t(x),
                    {"", d.arg("weight")},
                    {"", d.arg("bias")},
                    Emit::t(d.tensor("running_mean")),
                    Emit::t(d.tensor("running_var")),
                    Emit::f(d.arg("momentum").f),
                    Emit::f(d.arg("eps").f)})[0]};
  int64_t rank = e.dim(x);
  std::vector<int64_t> dims;
  for (int64_t k = 2; k < rank; ++k) dims.push_back(k);
  if (dims.empty()) return {}; // [N, C]: each statistic of one element; keep the kernel
  return {channel_affine(e, d, normalize_over(e, x, dims, d.arg("eps").f)[0], rank)};
}

std::vector<ValueId> batch_norm_no_stats(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  int64_t rank = e.dim(x), C = e.sizes(x)[1];
  std::vector<int64_t> dims = {0};
  for (int64_t k = 2; k < rank; ++k) dims.push_back(k);
  std::vector<ValueId> r = normalize_over(e, x, dims, d.arg("eps").f);
  DType stat = d.out_meta(1).dtype;
  return {channel_affine(e, d, r[0], rank), e.cast(e.reshape(r[1], {C}), stat),
          e.cast(e.reshape(r[2], {C}), stat)};
}

// ---- Backward ops of the core opset, as the ops their derivative rules emit ----

/// max_pool2d_with_indices_backward and adaptive_max_pool2d/3d_backward: the gradient scattered
/// (added) to the input positions its indices (flat per H*W or D*H*W plane) name.
std::vector<ValueId> max_pool2d_backward(Emit& e, const DNode& d) {
  ValueId go = d.tensor("grad_output"), x = d.tensor("self");
  std::vector<int64_t> xs = e.sizes(x), gs = e.sizes(go);
  const size_t S = d.n.target.find("3d") != std::string::npos ? 3 : 2;
  if (xs.size() < S + 1 || gs.size() != xs.size()) return {};
  if (d.n.target.find("with_indices") != std::string::npos) { // windows known: gather form
    ValueId gx = max_pool_input_grad(
        e, go, d.tensor("indices"), xs, resample::spatial_param(d.arg("kernel_size").ints, S),
        d.arg("stride").ints, d.arg("padding").ints, d.arg("dilation").ints);
    if (gx != kNoValue) return {gx};
  }
  int64_t planes = prod(xs, 0, xs.size() - S), in_plane = prod(xs, xs.size() - S);
  int64_t out_plane = prod(gs, gs.size() - S);
  TensorMeta like = e.meta(go);
  ValueId gx = e.op("aten.scatter_add.default",
                    {Emit::t(e.zeros({planes, in_plane}, like)), Emit::i(1),
                     Emit::t(e.reshape(d.tensor("indices"), {planes, out_plane})),
                     Emit::t(e.reshape(go, {planes, out_plane}))});
  return {e.reshape(gx, xs)};
}

/// _cdist_backward: sum over x2's rows of grad times d||x1_i - x2_j||_p / dx1_i (per p, as
/// PyTorch's cdist backward; 0 where the distance is 0), summed back to x1's sizes.
std::vector<ValueId> cdist_backward(Emit& e, const DNode& d) {
  ValueId g = d.tensor("grad"), x1 = d.tensor("x1"), x2 = d.tensor("x2"), dist = d.tensor("cdist");
  const double p = d.arg("p").f;
  std::vector<int64_t> s1 = e.sizes(x1);
  if (p == 0) return {e.zeros(s1, e.meta(g))};
  int64_t r1 = e.dim(x1), r2 = e.dim(x2), rg = e.dim(g);
  ValueId diff = e.sub(e.unsqueeze(x1, r1 - 1), e.unsqueeze(x2, r2 - 2)); // [..., P, R, M]
  ValueId gg = e.unsqueeze(g, rg), dd = e.unsqueeze(dist, rg);
  ValueId ad = e.unary("abs", diff), sg = e.unary("sign", diff), v;
  if (p == 1) {
    v = sg;
  } else if (std::isinf(p)) {
    v = e.mul(sg, e.cast(e.cmp("eq", ad, dd), e.dtype(diff)));
  } else if (p < 2) {
    ValueId num = e.where_s(e.cmp_s("ne", ad, 0), e.mul(sg, e.pow_s(ad, p - 1)), 0);
    v = e.div(num, e.pow_s(dd, p - 1));
  } else if (p == 2) {
    v = e.div(diff, dd);
  } else {
    v = e.div(e.mul(diff, e.pow_s(ad, p - 2)), e.pow_s(dd, p - 1));
  }
  v = e.where_s(e.cmp_s("ne", dd, 0), v, 0);
  ValueId r = e.sum(e.mul(gg, v), {e.dim(v) - 2}, false);
  if (e.sizes(r) != s1) r = e.sum_to(r, s1);
  return {r};
}

/// _pdist_forward: _cdist_forward of the rows against themselves, then the pairs i < j in
/// row-major order gathered from the flat distance matrix. Pair k lies in row
/// i = #{r in 1..N-1 : start(r) <= k}, start(r) = r*N - r(r+1)/2 its first pair, at column
/// j = k - start(i) + i + 1 (index arithmetic in f64, exact below 2^53).
std::vector<ValueId> pdist_forward(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> xs = e.sizes(x);
  if (xs.size() != 2) return {};
  const int64_t N = xs[0], K = N > 1 ? N * (N - 1) / 2 : 0;
  const Device dev = e.meta(x).device;
  if (K == 0) return {e.zeros({0}, e.meta(x))};
  ValueId dist = e.op("aten._cdist_forward.default", {Emit::t(e.unsqueeze(x, 0)),
                                                      Emit::t(e.unsqueeze(x, 0)),
                                                      Emit::f(d.arg("p").f),
                                                      {"", Arg::none()}});
  ValueId k = e.cast(e.arange(0, K, 1, dev), DType::F64);
  ValueId r = e.cast(e.arange(0, N, 1, dev), DType::F64);
  // start(r) = r*N - r(r+1)/2
  ValueId start = e.sub(e.mul_s(r, double(N)), e.div_s(e.mul(r, e.add_s(r, 1)), 2));
  ValueId later = e.slice(start, 0, 1, N);
  ValueId row =
      e.sum(e.cast(e.cmp("ge", e.unsqueeze(k, 1), e.unsqueeze(later, 0)), DType::F64), {1}, false);
  ValueId row_start = e.op("aten.index_select.default",
                           {Emit::t(start), Emit::i(0), Emit::t(e.cast(row, DType::I64))});
  ValueId col = e.add_s(e.add(e.sub(k, row_start), row), 1);
  ValueId flat = e.cast(e.add(e.mul_s(row, double(N)), col), DType::I64);
  return {e.op("aten.index_select.default",
               {Emit::t(e.reshape(dist, {N * N})), Emit::i(0), Emit::t(flat)})};
}

/// embedding_dense_backward: gradient rows added into the rows their indices name (none at
/// padding_idx); scale_grad_by_freq divides each by the count of its index.
std::vector<ValueId> embedding_backward(Emit& e, const DNode& d) {
  ValueId go = d.tensor("grad_output"), ids = d.tensor("indices");
  int64_t k = e.meta(ids).numel(), dim = e.sizes(go).back(), rows = d.arg("num_weights").i;
  TensorMeta like = e.meta(go);
  ValueId src = e.reshape(go, {k, dim});
  ValueId flat = e.reshape(ids, {k, 1});
  int64_t pad = d.arg("padding_idx").i;
  if (pad >= 0) src = e.where_s(e.cmp_s("ne", flat, double(pad)), src, 0.0);
  if (d.arg("scale_grad_by_freq").b) {
    ValueId ones = e.add_s(e.zeros({k}, like), 1.0);
    ValueId counts =
        e.op("aten.scatter_add.default", {Emit::t(e.zeros({rows}, like)), Emit::i(0),
                                          Emit::t(e.reshape(ids, {k})), Emit::t(ones)});
    ValueId per = e.op("aten.index_select.default",
                       {Emit::t(counts), Emit::i(0), Emit::t(e.reshape(ids, {k}))});
    src = e.div(src, e.reshape(per, {k, 1}));
  }
  return {index_add_rows(e, rows, e.reshape(ids, {k}), src)};
}

/// avg_pool2d_backward, avg_pool3d_backward and _adaptive_avg_pool2d_backward: the forward maps are
/// separable, x ×_d M_d with M_d ([in_d, out_d]) the op applied to an identity laid out along d, so
/// the gradient is grad ×_d M_d^T.
std::vector<ValueId> separable_pool_backward(Emit& e, const DNode& d) {
  ValueId go = d.tensor("grad_output"), x = d.tensor("self");
  std::vector<int64_t> xs = e.sizes(x), gs = e.sizes(go);
  const int64_t S = d.n.target.find("3d") != std::string::npos ? 3 : 2, R = int64_t(xs.size());
  if (R < S + 1 || int64_t(gs.size()) != R) return {};
  bool adaptive = d.n.target.find("adaptive") != std::string::npos;
  double override_div = 0;
  ValueId y = go;
  for (int64_t i = 0; i < S; ++i) {
    int64_t dim = R - S + i, I = xs[size_t(dim)], O = gs[size_t(dim)];
    ValueId a = e.arange(0, I, 1, e.meta(go).device);
    ValueId eye = e.cast(e.cmp("eq", e.unsqueeze(a, 1), e.unsqueeze(a, 0)), e.meta(go).dtype);
    std::vector<int64_t> es = {1, I};
    for (int64_t j = 0; j < S; ++j) es.push_back(j == i ? I : 1);
    eye = e.reshape(eye, es);
    ValueId m;
    if (adaptive) {
      std::vector<int64_t> osz(size_t(S), 1);
      osz[size_t(i)] = O;
      m = e.op("aten._adaptive_avg_pool2d.default", {Emit::t(eye), Emit::ints(osz)});
    } else {
      auto one = [&](const char* name, int64_t unit) {
        const Arg& v = d.arg(name);
        std::vector<int64_t> full =
            v.ints.empty() ? resample::spatial_param(d.arg("kernel_size").ints, size_t(S))
                           : resample::spatial_param(v.ints, size_t(S));
        std::vector<int64_t> r(size_t(S), unit);
        r[size_t(i)] = full.at(size_t(i));
        return Emit::ints(r);
      };
      CallArg div{"", Arg::none()};
      if (d.has("divisor_override")) {
        override_div = double(d.arg("divisor_override").i);
        div = Emit::i(1);
      }
      m = e.op(S == 3 ? "aten.avg_pool3d.default" : "aten.avg_pool2d.default",
               {Emit::t(eye), one("kernel_size", 1), one("stride", 1), one("padding", 0),
                Emit::b(d.arg("ceil_mode").b), Emit::b(d.arg("count_include_pad").b), div});
    }
    ValueId mt = e.transpose(e.reshape(m, {I, O}), 0, 1);
    ValueId moved = dim == R - 1 ? y : e.transpose(y, dim, R - 1);
    ValueId r = e.op("aten.matmul.default", {Emit::t(moved), Emit::t(mt)});
    y = dim == R - 1 ? r : e.transpose(r, dim, R - 1);
  }
  if (override_div != 0) y = e.div_s(y, override_div);
  return {y};
}

/// The gradients of a normalisation from its saved statistics: x and g shaped so that `red` are
/// the normalised dims, mean/rstd broadcasting against them; `w` (or kNoValue) broadcasting
/// likewise. Returns (dx, sum of g * xhat over `keep_sum`, sum of g over `keep_sum`).
std::vector<ValueId> norm_grads(Emit& e, ValueId g, ValueId x, ValueId mean, ValueId rstd,
                                ValueId w, const std::vector<int64_t>& red,
                                const std::vector<int64_t>& param_sum) {
  double m = 1;
  for (int64_t dim : red) m *= double(e.sizes(x)[size_t(dim)]);
  ValueId xhat = e.mul(e.sub(x, mean), rstd);
  ValueId gx = w == kNoValue ? g : e.mul(g, w);
  ValueId inner = e.sub(e.sub(e.mul_s(gx, m), e.sum(gx, red, true)),
                        e.mul(xhat, e.sum(e.mul(gx, xhat), red, true)));
  ValueId dx = e.mul(e.div_s(rstd, m), inner);
  ValueId gxhat = e.mul(g, xhat);
  if (param_sum.empty()) return {dx, gxhat, g};
  return {dx, e.sum(gxhat, param_sum, false), e.sum(g, param_sum, false)};
}

/// native_layer_norm_backward: dx, dweight, dbias from the saved mean and rstd (all three are
/// computed; output_mask only says which ones the graph reads).
std::vector<ValueId> layer_norm_backward(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), g = d.tensor("grad_out");
  std::vector<int64_t> xs = e.sizes(x);
  int64_t rank = int64_t(xs.size()), k = int64_t(d.arg("normalized_shape").ints.size());
  if (k == 0 || k > rank) d.fail("normalized_shape does not fit the input");
  std::vector<int64_t> stat(xs.begin(), xs.end() - k), lead;
  stat.resize(size_t(rank), 1);
  for (int64_t i = 0; i < rank - k; ++i) lead.push_back(i);
  ValueId mean = e.reshape(d.tensor("mean"), stat), rstd = e.reshape(d.tensor("rstd"), stat);
  ValueId w = d.has("weight") ? d.tensor("weight") : kNoValue;
  std::vector<ValueId> r = norm_grads(e, g, x, mean, rstd, w, last_dims(rank, k), lead);
  for (size_t i = 0; i < 3; ++i) r[i] = e.cast(r[i], d.out_meta(i).dtype);
  return r;
}

/// native_group_norm_backward: the input viewed as [N, G, C / G, HxW], normalised over the last
/// two dims; dweight and dbias sum over N and HxW.
std::vector<ValueId> group_norm_backward(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), g = d.tensor("grad_out");
  std::vector<int64_t> xs = e.sizes(x);
  const int64_t N = d.arg("N").i, C = d.arg("C").i, HxW = d.arg("HxW").i, G = d.arg("group").i;
  if (G <= 0 || C % G != 0) d.fail("the channels are not divisible by the groups");
  std::vector<int64_t> grouped = {N, G, C / G, HxW};
  ValueId mean = e.reshape(d.tensor("mean"), {N, G, 1, 1});
  ValueId rstd = e.reshape(d.tensor("rstd"), {N, G, 1, 1});
  ValueId w = d.has("weight") ? e.reshape(d.tensor("weight"), {1, G, C / G, 1}) : kNoValue;
  std::vector<ValueId> r =
      norm_grads(e, e.reshape(g, grouped), e.reshape(x, grouped), mean, rstd, w, {2, 3}, {0, 3});
  r[0] = e.reshape(r[0], xs);
  r[1] = e.reshape(r[1], {C});
  r[2] = e.reshape(r[2], {C});
  for (size_t i = 0; i < 3; ++i) r[i] = e.cast(r[i], d.out_meta(i).dtype);
  return r;
}

// float_power: pow of the operands as float64 (issue 18).
std::vector<ValueId> float_power(Emit& e, const DNode& d) {
  const Arg& s = d.arg("self");
  const Arg& x = d.arg("exponent");
  if (s.kind != Arg::Kind::Tensor)
    return {e.op("aten.pow.Scalar", {Emit::f(s.scalar()), Emit::t(e.cast(x.tensor, DType::F64))})};
  ValueId base = e.cast(s.tensor, DType::F64);
  if (x.kind != Arg::Kind::Tensor)
    return {e.op("aten.pow.Tensor_Scalar", {Emit::t(base), Emit::f(x.scalar())})};
  return {e.op("aten.pow.Tensor_Tensor", {Emit::t(base), Emit::t(e.cast(x.tensor, DType::F64))})};
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s;
}

// ---- Composite ops (frontend/composite.h): their meta function and eager kernel are these rows'.
// Rows here read no output metadata (d.out_meta), which a composite op's meta function lacks.

/// `v` as a fresh contiguous tensor (the `*_copy` ops and ops PyTorch computes into a new
/// tensor).
ValueId contiguous_copy(Emit& e, ValueId v) {
  return e.op(
      "aten.clone.default",
      {Emit::t(v), Emit::kw("memory_format", Arg::of_memory_format(MemoryFormat::Contiguous))});
}

/// `v` when it is contiguous, else a contiguous copy.
ValueId dense(Emit& e, ValueId v) {
  return e.meta(v).is_contiguous() ? v : contiguous_copy(e, v);
}

/// A view of `x` that is a value of its own (a row's result must not be its input).
ValueId own_view(Emit& e, ValueId v, ValueId x) {
  return v == x ? e.op("aten.alias.default", {Emit::t(x)}) : v;
}

std::vector<int64_t> broadcast_all(const DNode& d, const std::vector<std::vector<int64_t>>& ss) {
  std::vector<int64_t> out;
  try {
    for (const auto& s : ss) out = broadcast_shapes(out, s);
  } catch (const std::invalid_argument& err) {
    d.fail(std::string("shapes do not broadcast: ") + err.what());
  }
  return out;
}

std::vector<ValueId> expand_as(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {own_view(e, e.expand(x, e.sizes(d.tensor("other"))), x)};
}

std::vector<ValueId> view_as(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {own_view(e, e.view(x, e.sizes(d.tensor("other"))), x)};
}

std::vector<ValueId> reshape_as(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {own_view(e, e.reshape(x, e.sizes(d.tensor("other"))), x)};
}

/// type_as(self, other): self in other's dtype (self itself when they agree, as Tensor.to).
std::vector<ValueId> type_as(Emit& e, const DNode& d) {
  return {e.cast(d.tensor("self"), e.dtype(d.tensor("other")))};
}

std::vector<ValueId> broadcast_to(Emit& e, const DNode& d) {
  return {e.op("aten.expand.default", {Emit::t(d.tensor("self")), {"", d.arg("size")}})};
}

std::vector<ValueId> broadcast_tensors(Emit& e, const DNode& d) {
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  std::vector<std::vector<int64_t>> ss;
  for (ValueId t : ts) ss.push_back(e.sizes(t));
  std::vector<int64_t> shape = broadcast_all(d, ss);
  std::vector<ValueId> out;
  for (ValueId t : ts) out.push_back(own_view(e, e.expand(t, shape), t));
  return out;
}

/// mT, mH (real tensors: the same), matrix_H: the last two dims swapped.
std::vector<ValueId> matrix_transpose(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  if (d.n.target == "aten.matrix_H.default" && r != 2)
    d.fail("tensor.H is only supported on matrices (2-D tensors). Got " + std::to_string(r) +
           "-D tensor.");
  if (r < 2)
    d.fail("tensor.mT is only supported on matrices or batches of matrices. Got " +
           std::to_string(r) + "-D tensor.");
  return {e.op("aten.transpose.int", {Emit::t(x), Emit::i(r - 2), Emit::i(r - 1)})};
}

std::vector<ValueId> numpy_T(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> perm;
  for (int64_t k = e.dim(x) - 1; k >= 0; --k) perm.push_back(k);
  return {e.op("aten.permute.default", {Emit::t(x), Emit::ints(perm)})};
}

// swapaxes / swapdims: transpose by another name.
std::vector<ValueId> swap_dims(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  bool axes = d.n.schema->index_of("axis0") >= 0;
  int64_t a = d.arg(axes ? "axis0" : "dim0").i, b = d.arg(axes ? "axis1" : "dim1").i;
  if (r == 0) return {e.op("aten.alias.default", {Emit::t(x)})};
  return {e.transpose(x, wrap(a, r), wrap(b, r))};
}

// movedim / moveaxis, with one dim (.int) or lists of them (.intlist).
std::vector<ValueId> movedim(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  auto dims = [&](const char* name) {
    const Arg& a = d.arg(name);
    return a.kind == Arg::Kind::Int ? std::vector<int64_t>{a.i} : a.ints;
  };
  const std::vector<int64_t> src = dims("source");
  const std::vector<int64_t> dst = dims("destination");
  if (r == 0) { // a 0-dim tensor: dims 0 and -1 name it, as in PyTorch
    for (int64_t v : src) wrap(v, r);
    for (int64_t v : dst) wrap(v, r);
    if (src.size() != dst.size() || src.size() > 1)
      d.fail("movedim: Invalid source or destination dims for a 0-dim tensor");
    return {e.op("aten.alias.default", {Emit::t(x)})};
  }
  if (src.size() != dst.size())
    d.fail("movedim: Invalid source or destination dims: source (" + std::to_string(src.size()) +
           " dims) should contain the same number of dims as destination (" +
           std::to_string(dst.size()) + " dims)");
  std::vector<int64_t> perm(size_t(r), -1);
  std::vector<bool> used(size_t(r), false);
  for (size_t k = 0; k < src.size(); ++k) {
    int64_t s = wrap(src[k], r), t = wrap(dst[k], r);
    if (used[size_t(s)] || perm[size_t(t)] != -1)
      d.fail("movedim: repeated dim in source or destination");
    perm[size_t(t)] = s;
    used[size_t(s)] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p != -1) continue;
    while (used[size_t(next)]) ++next;
    p = next;
    used[size_t(next)] = true;
  }
  return {e.op("aten.permute.default", {Emit::t(x), Emit::ints(perm)})};
}

std::vector<ValueId> ravel(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {own_view(e, e.reshape(x, {e.meta(x).numel()}), x)};
}

ValueId narrow_of(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) == 0) d.fail("narrow() cannot be applied to a 0-dim tensor.");
  int64_t dim = wrap(d.arg("dim").i, e.dim(x)), n = e.sizes(x)[size_t(dim)];
  int64_t start = d.arg("start").i, length = d.arg("length").i;
  if (start < -n || start > n)
    d.fail("start out of range (expected to be in range of [" + std::to_string(-n) + ", " +
           std::to_string(n) + "], but got " + std::to_string(start) + ")");
  if (start < 0) start += n;
  if (length < 0 || start + length > n)
    d.fail("start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
           ") exceeds dimension size (" + std::to_string(n) + ").");
  return e.slice(x, dim, start, start + length);
}

std::vector<ValueId> narrow(Emit& e, const DNode& d) {
  return {narrow_of(e, d)};
}

std::vector<ValueId> narrow_copy(Emit& e, const DNode& d) {
  return {contiguous_copy(e, narrow_of(e, d))};
}

/// atleast_1d/2d/3d of one tensor (numpy's placement of the new dims).
ValueId atleast(Emit& e, ValueId x, int64_t k) {
  int64_t r = e.dim(x);
  if (r >= k) return x;
  if (r == 0) return e.reshape(x, std::vector<int64_t>(size_t(k), 1));
  if (k == 2) return e.unsqueeze(x, 0);
  if (r == 1) return e.unsqueeze(e.unsqueeze(x, 0), 2);
  return e.unsqueeze(x, 2);
}

std::vector<ValueId> atleast_nd(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  const std::string& t = d.n.target;
  int64_t k = t == "aten.atleast_1d.default" ? 1 : t == "aten.atleast_2d.default" ? 2 : 3;
  return {own_view(e, atleast(e, x, k), x)};
}

/// The `*_copy` ops: the view op of the same name and arguments, copied into a new contiguous
/// tensor (one per result).
std::vector<ValueId> view_copy(Emit& e, const DNode& d) {
  std::string view = d.n.target;
  view.erase(view.find("_copy."), 5);
  if (view == "aten.alias.default") return {contiguous_copy(e, d.tensor("self"))};
  // view_copy of a tensor no view can give is its reshape, as in PyTorch.
  if (view == "aten.view.default")
    return {contiguous_copy(
        e, e.op("aten.reshape.default", {Emit::t(d.tensor("self")), {"", d.arg("size")}}))};
  std::vector<CallArg> call;
  for (size_t k = 0; k < d.args.size(); ++k) call.push_back({d.n.schema->args[k].name, d.args[k]});
  std::vector<ValueId> out;
  if (view == "aten.unbind.int") {
    ValueId x = d.tensor("self");
    if (e.dim(x) == 0) d.fail("Dimension specified as 0 but tensor has no dimensions");
    int64_t dim = wrap(d.arg("dim").i, e.dim(x));
    for (int64_t k = 0; k < e.sizes(x)[size_t(dim)]; ++k)
      out.push_back(
          contiguous_copy(e, e.op("aten.select.int", {Emit::t(x), Emit::i(dim), Emit::i(k)})));
    return out;
  }
  for (ValueId v : e.call(view, std::move(call))) out.push_back(contiguous_copy(e, v));
  return out;
}

/// unfold of a contiguous tensor: as_strided from its own start (storage_offset None), which
/// eager reads from its storage and inductor from its row-major elements alike.
ValueId unfold_contiguous(Emit& e, const DNode& d, ValueId x, int64_t dim) {
  TensorMeta m = e.meta(x);
  int64_t r = m.dim(), size = d.arg("size").i, step = d.arg("step").i;
  std::vector<int64_t> sizes = m.sizes, strides = m.strides;
  if (r > 0) {
    sizes[size_t(dim)] = (m.sizes[size_t(dim)] - size) / step + 1;
    strides[size_t(dim)] = step * m.strides[size_t(dim)];
  }
  sizes.push_back(size);
  strides.push_back(r == 0 ? 1 : m.strides[size_t(dim)]);
  return e.op("aten.as_strided.default",
              {Emit::t(x), Emit::ints(sizes), Emit::ints(strides), {"", Arg::none()}});
}

std::vector<ValueId> unfold(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  TensorMeta m = e.meta(x);
  int64_t r = m.dim(), dim = wrap(d.arg("dimension").i, std::max<int64_t>(r, 1));
  int64_t size = d.arg("size").i, step = d.arg("step").i;
  int64_t max_size = r == 0 ? 1 : m.sizes[size_t(dim)];
  if (size > max_size)
    d.fail("maximum size for tensor at dimension " + std::to_string(dim) + " is " +
           std::to_string(max_size) + " but size is " + std::to_string(size));
  if (size < 0) d.fail("size is " + std::to_string(size) + " but must be >= 0");
  if (step <= 0) d.fail("step is " + std::to_string(step) + " but must be > 0");
  if (m.is_contiguous()) return {unfold_contiguous(e, d, x, dim)};
  // A dense permuted view (a transpose, mT): unfold its contiguous permutation, then permute
  // the windows back; the strides are PyTorch's.
  std::vector<int64_t> order(static_cast<size_t>(r), 0);
  for (int64_t k = 0; k < r; ++k) order[size_t(k)] = k;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return m.strides[size_t(a)] > m.strides[size_t(b)];
  });
  ValueId xp = e.op("aten.permute.default", {Emit::t(x), Emit::ints(order)});
  if (!e.meta(xp).is_contiguous())
    d.fail("unfold of a view that is not a permutation of a contiguous tensor is not supported");
  int64_t at = int64_t(std::find(order.begin(), order.end(), dim) - order.begin());
  ValueId u = unfold_contiguous(e, d, xp, at);
  std::vector<int64_t> back(static_cast<size_t>(r + 1), r);
  for (int64_t k = 0; k < r; ++k)
    back[size_t(k)] = int64_t(std::find(order.begin(), order.end(), k) - order.begin());
  return {e.op("aten.permute.default", {Emit::t(u), Emit::ints(back)})};
}

std::vector<ValueId> unfold_copy(Emit& e, const DNode& d) {
  return {contiguous_copy(e, unfold(e, d)[0])};
}

/// split's chunk sizes: equal pieces of `size` (the last smaller), at least one.
std::vector<int64_t> split_sizes(int64_t n, int64_t size) {
  int64_t pieces = size == 0 ? 1 : std::max<int64_t>((n + size - 1) / size, 1);
  std::vector<int64_t> out(size_t(pieces), size);
  out.back() = size - (size * pieces - n);
  return out;
}

/// unsafe_split, unsafe_chunk: split and chunk (views, as PyTorch's are).
std::vector<ValueId> unsafe_split(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) == 0) d.fail("split expects at least a 1-dimensional tensor");
  int64_t dim = wrap(d.arg("dim").i, e.dim(x)), n = e.sizes(x)[size_t(dim)];
  std::vector<int64_t> sizes;
  if (d.n.target == "aten.unsafe_chunk.default") {
    int64_t chunks = d.arg("chunks").i;
    if (chunks <= 0)
      d.fail("chunk expects `chunks` to be greater than 0, got: " + std::to_string(chunks));
    int64_t size = (n + chunks - 1) / chunks;
    if (size == 0 && n == 0) {
      sizes.assign(size_t(chunks), 0);
    } else {
      sizes = split_sizes(n, size);
    }
  } else {
    int64_t size = d.arg("split_size").i;
    if (size < 0)
      d.fail("split expects split_size be non-negative, but got split_size=" +
             std::to_string(size));
    if (size == 0 && n != 0)
      d.fail("split_size can only be 0 if dimension size is 0, but got dimension size of " +
             std::to_string(n));
    sizes = split_sizes(n, size);
  }
  return e.call("aten.split_with_sizes.default", {Emit::t(x), Emit::ints(sizes), Emit::i(dim)});
}

/// hsplit, vsplit, dsplit: tensor_split along dim 1 (0 for 1-D), 0, 2.
std::vector<ValueId> hvd_split(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  const std::string& t = d.n.target;
  std::string name = t.substr(5, 6);
  int64_t dim = 0, need = 1;
  if (name == "vsplit") need = 2;
  if (name == "dsplit") need = 3, dim = 2;
  if (name == "hsplit") dim = r == 1 ? 0 : 1;
  if (r < need)
    d.fail("torch." + name + " requires a tensor with at least " + std::to_string(need) +
           " dimension, but got a tensor with " + std::to_string(r) + " dimensions!");
  int64_t n = e.sizes(x)[size_t(dim)];
  std::vector<ValueId> out;
  if (t.find(".int") != std::string::npos) {
    int64_t sections = d.arg("sections").i;
    if (sections <= 0 || n % sections != 0)
      d.fail("torch." + name + " attempted to split along dimension " + std::to_string(dim) +
             ", but the size of the dimension " + std::to_string(n) +
             " is not divisible by the split_size " + std::to_string(sections) + "!");
    return e.call("aten.split_with_sizes.default",
                  {Emit::t(x), Emit::ints(std::vector<int64_t>(size_t(sections), n / sections)),
                   Emit::i(dim)});
  }
  int64_t start = 0;
  for (int64_t end : d.arg("indices").ints) {
    out.push_back(e.op("aten.slice.Tensor",
                       {Emit::t(x), Emit::i(dim), Emit::i(start), Emit::i(end), Emit::i(1)}));
    start = end;
  }
  out.push_back(e.op("aten.slice.Tensor",
                     {Emit::t(x), Emit::i(dim), Emit::i(start), Emit::i(INT64_MAX), Emit::i(1)}));
  return out;
}

/// hstack, vstack, dstack, column_stack: cat of the tensors made at least 1-, 2-, 3-D.
std::vector<ValueId> stack_like(Emit& e, const DNode& d) {
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  std::string name = op_base_name(d.n.target);
  if (ts.empty()) d.fail(name + " expects a non-empty TensorList");
  std::vector<ValueId> parts;
  int64_t dim = 0;
  for (ValueId t : ts) {
    if (name == "hstack") parts.push_back(atleast(e, t, 1));
    if (name == "vstack") parts.push_back(atleast(e, t, 2));
    if (name == "dstack") parts.push_back(atleast(e, t, 3));
    if (name == "column_stack")
      parts.push_back(e.dim(t) <= 1 ? e.reshape(t, {e.meta(t).numel(), 1}) : t);
  }
  if (name == "hstack") dim = e.dim(parts[0]) == 1 ? 0 : 1;
  if (name == "dstack") dim = 2;
  if (name == "column_stack") dim = 1;
  return {e.cat(parts, dim)};
}

std::vector<ValueId> flip_lr_ud(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  bool lr = d.n.target == "aten.fliplr.default";
  if (e.dim(x) < (lr ? 2 : 1)) d.fail(std::string("Input must be >= ") + (lr ? "2" : "1") + "-d.");
  return {e.op("aten.flip.default", {Emit::t(x), Emit::ints({lr ? 1 : 0})})};
}

std::vector<ValueId> rot90(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  const std::vector<int64_t>& dims = d.arg("dims").ints;
  if (dims.size() != 2)
    d.fail("expected total rotation dims == 2, but got dims = " + std::to_string(dims.size()));
  if (r < 2) d.fail("expected total dims >= 2, but got total dims = " + std::to_string(r));
  int64_t a = wrap(dims[0], r), b = wrap(dims[1], r);
  if (a == b) d.fail("expected rotation dims to be different");
  int64_t k = ((d.arg("k").i % 4) + 4) % 4;
  auto flip = [&](std::vector<int64_t> fd) {
    return e.op("aten.flip.default", {Emit::t(x), Emit::ints(std::move(fd))});
  };
  // PyTorch returns the transposed flip as it is (not contiguous).
  if (k == 1) return {e.transpose(flip({b}), a, b)};
  if (k == 2) return {flip({a, b})};
  if (k == 3) return {e.transpose(flip({a}), a, b)};
  return {contiguous_copy(e, x)};
}

std::vector<ValueId> tile(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> reps = d.arg("dims").ints;
  if (int64_t(reps.size()) < e.dim(x)) reps.insert(reps.begin(), size_t(e.dim(x)) - reps.size(), 1);
  return {e.op("aten.repeat.default", {Emit::t(x), Emit::ints(reps)})};
}

std::vector<ValueId> repeat_interleave_int(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t reps = d.arg("repeats").i;
  if (reps < 0) d.fail("repeats can not be negative");
  int64_t dim = 0;
  if (d.has("dim")) {
    dim = wrap(d.arg("dim").i, std::max<int64_t>(e.dim(x), 1));
    if (e.dim(x) == 0) x = e.reshape(x, {1});
  } else {
    x = e.reshape(x, {e.meta(x).numel()});
  }
  std::vector<int64_t> s = e.sizes(x);
  ValueId u = e.unsqueeze(x, dim + 1);
  std::vector<int64_t> big = e.sizes(u);
  big[size_t(dim + 1)] = reps;
  std::vector<int64_t> out = s;
  out[size_t(dim)] *= reps;
  if (d.has("output_size") && d.arg("output_size").i != out[size_t(dim)])
    d.fail("repeat_interleave: output_size " + std::to_string(d.arg("output_size").i) +
           " is not the repeated size " + std::to_string(out[size_t(dim)]));
  return {e.reshape(e.expand(u, big), out)};
}

/// [..., n, n] with x's last dim on the `offset`-th diagonal of the last two dims, zeros elsewhere.
ValueId embed_diagonal(Emit& e, ValueId x, int64_t offset) {
  int64_t r = e.dim(x), len = e.sizes(x).back(), k = offset < 0 ? -offset : offset;
  int64_t n = len + k;
  ValueId xp = e.pad_dim(x, r - 1, 0, k);
  ValueId a = e.arange(0, n, 1, e.meta(x).device);
  ValueId mask = e.cmp_s("eq", e.sub(e.unsqueeze(a, 0), e.unsqueeze(a, 1)), double(offset));
  ValueId v = offset >= 0 ? e.unsqueeze(xp, r) : e.unsqueeze(xp, r - 1);
  return e.where(mask, v, e.zeros({}, e.meta(x)));
}

/// The permutation that moves dims (R-2, R-1) of an R-dim tensor to d1, d2 (the others keep
/// their order).
std::vector<int64_t> place_last_two(int64_t R, int64_t d1, int64_t d2) {
  std::vector<int64_t> perm(static_cast<size_t>(R), 0);
  int64_t next = 0;
  for (int64_t k = 0; k < R; ++k) perm[size_t(k)] = k == d1 ? R - 2 : k == d2 ? R - 1 : next++;
  return perm;
}

std::vector<ValueId> diag_embed(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t R = e.dim(x) + 1;
  if (R < 2) d.fail("diag_embed: the input must be at least 1-D");
  int64_t d1 = wrap(d.arg("dim1").i, R), d2 = wrap(d.arg("dim2").i, R);
  if (d1 == d2)
    d.fail("diagonal dimensions cannot be identical " + std::to_string(d.arg("dim1").i) + ", " +
           std::to_string(d.arg("dim2").i));
  ValueId emb = embed_diagonal(e, x, d.arg("offset").i);
  return {dense(e, e.permute(emb, place_last_two(R, d1, d2)))};
}

std::vector<ValueId> diagflat(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  return {embed_diagonal(e, e.reshape(x, {e.meta(x).numel()}), d.arg("offset").i)};
}

std::vector<ValueId> diag(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t off = d.arg("diagonal").i;
  if (e.dim(x) == 1) return {embed_diagonal(e, x, off)};
  if (e.dim(x) != 2)
    d.fail("diag(): Supports 1D or 2D tensors. Got " + std::to_string(e.dim(x)) + "D");
  return {contiguous_copy(
      e, e.op("aten.diagonal.default", {Emit::t(x), Emit::i(off), Emit::i(0), Emit::i(1)}))};
}

std::vector<ValueId> diagonal_scatter(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), src = d.tensor("src");
  int64_t R = e.dim(x);
  if (R < 2) d.fail("diagonal_scatter: the input must be at least 2-D");
  int64_t d1 = wrap(d.arg("dim1").i, R), d2 = wrap(d.arg("dim2").i, R), off = d.arg("offset").i;
  if (d1 == d2) d.fail("diagonal dimensions cannot be identical");
  std::vector<int64_t> xs = e.sizes(x);
  int64_t D1 = xs[size_t(d1)], D2 = xs[size_t(d2)];
  // The diagonal's expected shape: the other dims, then its length.
  std::vector<int64_t> want;
  std::vector<int64_t> to_last;
  for (int64_t k = 0; k < R; ++k)
    if (k != d1 && k != d2) want.push_back(xs[size_t(k)]), to_last.push_back(k);
  int64_t len = std::max<int64_t>(0, off >= 0 ? std::min(D1, D2 - off) : std::min(D1 + off, D2));
  want.push_back(len);
  if (e.sizes(src) != want)
    d.fail("diagonal_scatter: src must have the diagonal's shape [" + join_ints(want) + "], got [" +
           join_ints(e.sizes(src)) + "]");
  to_last.push_back(d1);
  to_last.push_back(d2);
  ValueId base = e.permute(x, to_last); // [..., D1, D2]
  ValueId a1 = e.arange(0, D1, 1, e.meta(x).device), a2 = e.arange(0, D2, 1, e.meta(x).device);
  ValueId mask = e.cmp_s("eq", e.sub(e.unsqueeze(a2, 0), e.unsqueeze(a1, 1)), double(off));
  ValueId s = e.cast(src, e.dtype(x));
  ValueId v = off >= 0 ? e.unsqueeze(e.pad_dim(s, R - 2, 0, D1 - len), R - 1)
                       : e.unsqueeze(e.pad_dim(s, R - 2, 0, D2 - len), R - 2);
  ValueId out = e.where(mask, v, base);
  return {dense(e, e.permute(out, place_last_two(R, d1, d2)))};
}

std::vector<ValueId> as_strided_scatter(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), src = d.tensor("src");
  TensorMeta m = e.meta(x);
  if (!m.is_contiguous())
    d.fail("as_strided_scatter of a non-contiguous input is not supported (its copy's storage "
           "order differs from its logical order)");
  const std::vector<int64_t>& size = d.arg("size").ints;
  const std::vector<int64_t>& stride = d.arg("stride").ints;
  if (size.size() != stride.size()) d.fail("mismatch in length of strides and shape");
  if (e.sizes(src) != size)
    d.fail("expected src to have a size equal to the slice of self. src size = [" +
           join_ints(e.sizes(src)) + "], slice size = [" + join_ints(size) + "]");
  int64_t off = d.has("storage_offset") ? d.arg("storage_offset").i : 0;
  int64_t R = int64_t(size.size()), last = off;
  for (int64_t k = 0; k < R; ++k)
    if (size[size_t(k)] > 0) last += (size[size_t(k)] - 1) * stride[size_t(k)];
  if (m.numel() > 0 && (off < 0 || last >= m.numel()) && e.meta(src).numel() > 0)
    d.fail("setStorage: sizes [" + join_ints(size) + "], strides [" + join_ints(stride) +
           "], storage offset " + std::to_string(off) + " are out of bounds for storage of " +
           std::to_string(m.numel()) + " elements");
  ValueId idx = e.reshape(e.arange(off, off + 1, 1, m.device), std::vector<int64_t>(size_t(R), 1));
  for (int64_t k = 0; k < R; ++k) {
    std::vector<int64_t> s(size_t(R), 1);
    s[size_t(k)] = size[size_t(k)];
    ValueId a = e.reshape(e.arange(0, size[size_t(k)], 1, m.device), s);
    idx = e.add(idx, e.op("aten.mul.Scalar", {Emit::t(a), Emit::i(stride[size_t(k)])}));
  }
  int64_t n = prod(size);
  ValueId flat = e.reshape(x, {m.numel()});
  ValueId put = e.op("aten.index_put.default", {Emit::t(flat),
                                                {"", Arg::of_tensors({e.reshape(idx, {n})})},
                                                Emit::t(e.reshape(e.cast(src, m.dtype), {n})),
                                                Emit::b(false)});
  return {e.reshape(put, m.sizes)};
}

std::vector<ValueId> block_diag(Emit& e, const DNode& d) {
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  std::vector<ValueId> mats;
  std::optional<DType> dt;
  int64_t cols = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    ValueId t = ts[i];
    if (e.dim(t) > 2)
      d.fail("torch.block_diag: Input tensors must have 2 or fewer dimensions. Input " +
             std::to_string(i) + " has " + std::to_string(e.dim(t)) + " dimensions");
    mats.push_back(e.dim(t) == 2 ? t : e.reshape(t, {1, e.meta(t).numel()}));
    cols += e.sizes(mats.back())[1];
    dt = dt ? promote_types(*dt, e.dtype(t)) : e.dtype(t);
  }
  if (mats.empty()) d.fail("torch.block_diag of no tensors is not supported");
  std::vector<ValueId> rows;
  int64_t at = 0;
  for (ValueId m : mats) {
    int64_t c = e.sizes(m)[1];
    rows.push_back(e.pad_dim(e.cast(m, *dt), 1, at, cols - at - c));
    at += c;
  }
  return {dense(e, e.cat(rows, 0))};
}

/// meshgrid's results: each 1-D (or 0-D) tensor viewed along its own dim and expanded.
std::vector<ValueId> meshgrid_of(Emit& e, const DNode& d, const std::vector<ValueId>& ts, bool xy) {
  std::vector<int64_t> shape;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (e.dim(ts[i]) > 1)
      d.fail("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: " +
             format_meta(e.meta(ts[i])));
    shape.push_back(e.meta(ts[i]).numel());
  }
  if (xy && shape.size() >= 2) std::swap(shape[0], shape[1]);
  std::vector<ValueId> out;
  for (size_t i = 0; i < ts.size(); ++i) {
    size_t at = xy && ts.size() >= 2 && i < 2 ? 1 - i : i;
    std::vector<int64_t> v(shape.size(), 1);
    v[at] = shape[at];
    out.push_back(e.expand(e.op("aten.view.default", {Emit::t(ts[i]), Emit::ints(v)}), shape));
  }
  return out;
}

std::vector<ValueId> meshgrid(Emit& e, const DNode& d) {
  const std::string& ix = d.arg("indexing").s;
  if (ix != "ij" && ix != "xy")
    d.fail("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: " + ix);
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  if (ts.empty()) d.fail("torch.meshgrid expects a non-empty TensorList");
  return meshgrid_of(e, d, ts, ix == "xy");
}

std::vector<ValueId> cartesian_prod(Emit& e, const DNode& d) {
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  for (ValueId t : ts)
    if (e.dim(t) != 1) d.fail("Expect a 1D vector, but got shape [" + join_ints(e.sizes(t)) + "]");
  if (ts.empty()) d.fail("cartesian_prod expects a non-empty TensorList");
  if (ts.size() == 1) return {e.op("aten.alias.default", {Emit::t(ts[0])})};
  std::vector<ValueId> cols;
  for (ValueId g : meshgrid_of(e, d, ts, false))
    cols.push_back(e.unsqueeze(e.reshape(g, {e.meta(g).numel()}), 1));
  return {e.cat(cols, 1)};
}

std::vector<ValueId> kron(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("other");
  size_t R = size_t(std::max(e.dim(a), e.dim(b)));
  std::vector<int64_t> as = e.sizes(a), bs = e.sizes(b);
  as.insert(as.begin(), R - as.size(), 1);
  bs.insert(bs.begin(), R - bs.size(), 1);
  std::vector<int64_t> ai, bi, out;
  for (size_t k = 0; k < R; ++k) {
    ai.push_back(as[k]), ai.push_back(1);
    bi.push_back(1), bi.push_back(bs[k]);
    out.push_back(as[k] * bs[k]);
  }
  return {e.reshape(e.mul(e.reshape(a, ai), e.reshape(b, bi)), out)};
}

std::vector<ValueId> sum_to_size(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> size = d.arg("size").ints, xs = e.sizes(x);
  bool ok = size.size() <= xs.size();
  for (size_t k = 0; ok && k < size.size(); ++k) {
    int64_t have = xs[xs.size() - size.size() + k];
    ok = size[k] == have || size[k] == 1;
  }
  if (!ok)
    d.fail("size {" + join_ints(size) + "} is not expandable to size {" + join_ints(xs) + "}.");
  return {own_view(e, e.sum_to(x, size), x)};
}

// ---- Composite products and fused arithmetic ----

std::vector<ValueId> outer(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("vec2");
  if (e.dim(a) != 1 || e.dim(b) != 1)
    d.fail("outer: expected 1-D vectors, got " + format_meta(e.meta(a)) + " and " +
           format_meta(e.meta(b)));
  return {e.mul(e.unsqueeze(a, 1), b)};
}

ValueId mv_of(Emit& e, const DNode& d, ValueId m, ValueId v) {
  if (e.dim(m) != 2 || e.dim(v) != 1)
    d.fail("vector + matrix @ vector expected, got " + format_meta(e.meta(m)) + " @ " +
           format_meta(e.meta(v)));
  if (e.sizes(m)[1] != e.sizes(v)[0])
    d.fail("size mismatch, got input (" + std::to_string(e.sizes(m)[0]) + "), mat (" +
           std::to_string(e.sizes(m)[0]) + "x" + std::to_string(e.sizes(m)[1]) + "), vec (" +
           std::to_string(e.sizes(v)[0]) + ")");
  return e.reshape(e.mm(m, e.unsqueeze(v, 1)), {e.sizes(m)[0]});
}

std::vector<ValueId> mv(Emit& e, const DNode& d) {
  return {mv_of(e, d, d.tensor("self"), d.tensor("vec"))};
}

/// beta * self + alpha * product; beta 0 ignores self (NaN and inf included), as PyTorch does.
ValueId add_scaled(Emit& e, const DNode& d, ValueId product) {
  ValueId self = d.tensor("self");
  ValueId p = scale_by(e, product, d.arg("alpha"));
  const Arg& beta = d.arg("beta");
  if (beta.kind != Arg::Kind::Bool && beta.scalar() == 0.0) {
    std::vector<int64_t> s = broadcast_all(d, {e.sizes(self), e.sizes(p)});
    if (s != e.sizes(p)) d.fail("the input does not broadcast to the product's shape");
    return e.cast(p, promote_types(e.dtype(self), e.dtype(p)));
  }
  ValueId out = e.add(scale_by(e, self, beta), p);
  if (e.sizes(out) != e.sizes(p))
    d.fail("the input " + format_meta(e.meta(self)) + " does not broadcast to the product " +
           format_meta(e.meta(p)));
  return out;
}

std::vector<ValueId> addmv(Emit& e, const DNode& d) {
  return {add_scaled(e, d, mv_of(e, d, d.tensor("mat"), d.tensor("vec")))};
}

std::vector<ValueId> addr(Emit& e, const DNode& d) {
  ValueId a = d.tensor("vec1"), b = d.tensor("vec2");
  if (e.dim(a) != 1 || e.dim(b) != 1)
    d.fail("addr: expected 1-D vectors, got " + format_meta(e.meta(a)) + " and " +
           format_meta(e.meta(b)));
  return {add_scaled(e, d, e.mul(e.unsqueeze(a, 1), b))};
}

std::vector<ValueId> addbmm(Emit& e, const DNode& d) {
  ValueId p = e.bmm(d.tensor("batch1"), d.tensor("batch2"));
  return {add_scaled(e, d, e.sum(p, {0}, false))};
}

std::vector<ValueId> baddbmm(Emit& e, const DNode& d) {
  return {add_scaled(e, d, e.bmm(d.tensor("batch1"), d.tensor("batch2")))};
}

std::vector<ValueId> addcmul_div(Emit& e, const DNode& d) {
  ValueId t1 = d.tensor("tensor1"), t2 = d.tensor("tensor2");
  bool div = d.n.target == "aten.addcdiv.default";
  if (div && !is_floating(e.dtype(t1)) && !is_floating(e.dtype(t2)))
    d.fail("Integer division with addcdiv is no longer supported, and in a future release "
           "addcdiv will perform a true division of tensor1 and tensor2.");
  ValueId p = div ? e.div(t1, t2) : e.mul(scale_by(e, t1, d.arg("value")), t2);
  if (div) p = scale_by(e, p, d.arg("value"));
  return {e.add(d.tensor("self"), p)};
}

std::vector<ValueId> tensordot(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("other");
  std::vector<int64_t> da = d.arg("dims_self").ints, db = d.arg("dims_other").ints;
  if (da.size() != db.size()) d.fail("both dimension lists should have same length");
  int64_t ra = e.dim(a), rb = e.dim(b), K = 1;
  std::vector<bool> ca(size_t(ra), false), cb(size_t(rb), false);
  for (size_t k = 0; k < da.size(); ++k) {
    int64_t x = wrap(da[k], ra), y = wrap(db[k], rb);
    if (x >= ra || y >= rb) d.fail("dimension specified as 0 but tensor has no dimensions");
    if (e.sizes(a)[size_t(x)] != e.sizes(b)[size_t(y)])
      d.fail("contracted dimensions need to match, but first has size " +
             std::to_string(e.sizes(a)[size_t(x)]) + " in dim " + std::to_string(x) +
             " and second has size " + std::to_string(e.sizes(b)[size_t(y)]) + " in dim " +
             std::to_string(y));
    da[k] = x, db[k] = y, ca[size_t(x)] = cb[size_t(y)] = true;
    K *= e.sizes(a)[size_t(x)];
  }
  std::vector<int64_t> pa, pb, out;
  int64_t P = 1, Q = 1;
  for (int64_t k = 0; k < ra; ++k)
    if (!ca[size_t(k)]) pa.push_back(k), out.push_back(e.sizes(a)[size_t(k)]), P *= out.back();
  pa.insert(pa.end(), da.begin(), da.end());
  pb = db;
  for (int64_t k = 0; k < rb; ++k)
    if (!cb[size_t(k)]) pb.push_back(k), out.push_back(e.sizes(b)[size_t(k)]), Q *= out.back();
  ValueId am = e.reshape(e.permute(a, pa), {P, K}), bm = e.reshape(e.permute(b, pb), {K, Q});
  return {e.reshape(e.mm(am, bm), out)};
}

std::vector<ValueId> linalg_vecdot(Emit& e, const DNode& d) {
  ValueId p = e.mul(d.tensor("x"), d.tensor("y"));
  if (e.dim(p) == 0) d.fail("linalg.vecdot: the inputs must have at least one dimension");
  return {e.sum(p, {wrap(d.arg("dim").i, e.dim(p))}, false)};
}

std::vector<ValueId> cross(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("other");
  if (e.dim(a) != e.dim(b)) d.fail("linalg.cross: inputs must have the same number of dimensions.");
  std::vector<int64_t> s = broadcast_all(d, {e.sizes(a), e.sizes(b)});
  int64_t R = int64_t(s.size()), dim = -1;
  if (d.n.target == "aten.cross.default" && !d.has("dim")) {
    for (int64_t k = 0; k < R && dim < 0; ++k)
      if (s[size_t(k)] == 3) dim = k;
    if (dim < 0) d.fail("no dimension of size 3 in input");
  } else {
    if (R == 0) d.fail("linalg.cross: inputs must have at least one dimension");
    dim = wrap(d.arg("dim").i, R);
  }
  if (s[size_t(dim)] != 3)
    d.fail("linalg.cross: inputs dimension " + std::to_string(dim) + " must have length 3. Got " +
           std::to_string(e.sizes(a)[size_t(dim)]) + " and " +
           std::to_string(e.sizes(b)[size_t(dim)]));
  a = e.expand(a, s), b = e.expand(b, s);
  auto at = [&](ValueId v, int64_t k) { return e.slice(v, dim, k, k + 1); };
  auto term = [&](int64_t i, int64_t j) {
    return e.sub(e.mul(at(a, i), at(b, j)), e.mul(at(a, j), at(b, i)));
  };
  return {e.cat({term(1, 2), term(2, 0), term(0, 1)}, dim)};
}

std::vector<ValueId> true_divide(Emit& e, const DNode& d) {
  return {e.div(d.tensor("self"), d.tensor("other"))};
}

std::vector<ValueId> max_other(Emit& e, const DNode& d) {
  return {e.op("aten.maximum.default", {Emit::t(d.tensor("self")), Emit::t(d.tensor("other"))})};
}

std::vector<ValueId> clamp_bound_tensor(Emit& e, const DNode& d) {
  bool lo = d.n.target == "aten.clamp_min.Tensor";
  ValueId bound = d.tensor(lo ? "min" : "max");
  return {e.op("aten.clamp.Tensor", {Emit::t(d.tensor("self")),
                                     {"", lo ? Arg::of_tensor(bound) : Arg::none()},
                                     {"", lo ? Arg::none() : Arg::of_tensor(bound)}})};
}

std::vector<ValueId> square(Emit& e, const DNode& d) {
  return {e.op("aten.pow.Tensor_Scalar", {Emit::t(d.tensor("self")), Emit::i(2)})};
}

// ---- Composite indexing and scatter ----

std::vector<ValueId> take(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), idx = d.tensor("index");
  ValueId flat = e.reshape(x, {e.meta(x).numel()});
  return {e.op("aten.index.Tensor", {Emit::t(flat), {"", Arg::of_tensors({idx})}})};
}

std::vector<ValueId> take_along_dim(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), idx = d.tensor("indices");
  if (!d.has("dim"))
    return {e.op("aten.gather.default", {Emit::t(e.reshape(x, {e.meta(x).numel()})), Emit::i(0),
                                         Emit::t(e.reshape(idx, {e.meta(idx).numel()}))})};
  if (e.dim(x) != e.dim(idx))
    d.fail("torch.take_along_dim(): input and indices should have the same number of dimensions, "
           "but input has " +
           std::to_string(e.dim(x)) + " dimensions and indices has " + std::to_string(e.dim(idx)) +
           " dimensions");
  int64_t dim = wrap(d.arg("dim").i, std::max<int64_t>(e.dim(x), 1));
  if (e.dim(x) == 0) return {e.op("aten.gather.default", {Emit::t(x), Emit::i(0), Emit::t(idx)})};
  std::vector<int64_t> xs = e.sizes(x);
  xs[size_t(dim)] = e.sizes(idx)[size_t(dim)];
  std::vector<int64_t> shape = broadcast_all(d, {xs, e.sizes(idx)});
  std::vector<int64_t> xshape = shape;
  xshape[size_t(dim)] = e.sizes(x)[size_t(dim)];
  return {e.op("aten.gather.default",
               {Emit::t(e.expand(x, xshape)), Emit::i(dim), Emit::t(e.expand(idx, shape))})};
}

std::vector<ValueId> put(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), idx = d.tensor("index"), src = d.tensor("source");
  TensorMeta m = e.meta(x);
  int64_t n = e.meta(idx).numel();
  if (e.meta(src).numel() != n)
    d.fail("put_(): Expected source and index to have the same number of elements, but got "
           "source.numel() = " +
           std::to_string(e.meta(src).numel()) + ", index.numel() = " + std::to_string(n));
  ValueId flat = e.reshape(x, {m.numel()});
  ValueId r = e.op("aten.index_put.default", {Emit::t(flat),
                                              {"", Arg::of_tensors({e.reshape(idx, {n})})},
                                              Emit::t(e.reshape(e.cast(src, m.dtype), {n})),
                                              {"", d.arg("accumulate")}});
  return {e.reshape(r, m.sizes)};
}

std::vector<ValueId> index_copy(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), idx = d.tensor("index"), src = d.tensor("source");
  int64_t r = e.dim(x), dim = wrap(d.arg("dim").i, std::max<int64_t>(r, 1));
  if (e.dim(idx) > 1)
    d.fail("index_copy_(): Index should have dimension 1 or 0 (got " + std::to_string(e.dim(idx)) +
           ")");
  if (r == 0) // as a 1-element vector, and back to 0-dim
    return {e.reshape(e.op("aten.index_put.default",
                           {Emit::t(e.reshape(x, {1})),
                            {"", Arg::of_tensors({e.reshape(idx, {e.meta(idx).numel()})})},
                            Emit::t(e.reshape(e.cast(src, e.dtype(x)), {e.meta(src).numel()})),
                            Emit::b(false)}),
                      {})};
  std::vector<ValueId> ix(size_t(dim), kNoValue);
  ix.push_back(e.reshape(idx, {e.meta(idx).numel()}));
  ValueId s = e.cast(src, e.dtype(x));
  if (e.dim(s) == 0) s = e.reshape(s, {1});
  return {e.op("aten.index_put.default",
               {Emit::t(x), {"", Arg::of_tensors(ix)}, Emit::t(s), Emit::b(false)})};
}

std::vector<ValueId> index_reduce(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), idx = d.tensor("index"), src = d.tensor("source");
  const std::string& red = d.arg("reduce").s;
  if (red != "prod" && red != "mean" && red != "amax" && red != "amin")
    d.fail("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got " + red +
           ".");
  if (e.dim(idx) > 1) d.fail("index_reduce_(): Index is supposed to be a vector");
  int64_t r = e.dim(src), dim = wrap(d.arg("dim").i, std::max<int64_t>(r, 1));
  ValueId index = idx;
  if (r > 0) {
    std::vector<int64_t> s(size_t(r), 1);
    s[size_t(dim)] = e.meta(idx).numel();
    index = e.expand(e.reshape(idx, s), e.sizes(src));
  }
  return {e.op("aten.scatter_reduce.two", {Emit::t(x), Emit::i(dim), Emit::t(index), Emit::t(src),
                                           Emit::kw("reduce", Arg::of_string(red)),
                                           Emit::kw("include_self", d.arg("include_self"))})};
}

std::vector<ValueId> scatter_reduce_op(Emit& e, const DNode& d) {
  const std::string& red = d.arg("reduce").s;
  if (red != "add" && red != "multiply")
    d.fail("reduce argument must be either add or multiply, got " + red);
  return {e.op("aten.scatter_reduce.two",
               {Emit::t(d.tensor("self")),
                {"", d.arg("dim")},
                Emit::t(d.tensor("index")),
                Emit::t(d.tensor("src")),
                Emit::kw("reduce", Arg::of_string(red == "add" ? "sum" : "prod")),
                Emit::kw("include_self", Arg::of_bool(true))})};
}

std::vector<ValueId> one_hot(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t n = d.arg("num_classes").i;
  if (e.dtype(x) != DType::I64)
    d.fail("one_hot is only applicable to index tensor of type LongTensor.");
  if (n < 0)
    d.fail("one_hot with num_classes=-1 takes the class count from the data (max + 1), which a "
           "compiled graph cannot know; pass num_classes");
  ValueId a = e.arange(0, n, 1, e.meta(x).device);
  return {e.cast(e.cmp("eq", e.unsqueeze(x, e.dim(x)), a), DType::I64)};
}

/// The insertion points of `x` into the sorted last dim of `seq` ([M] or [..., M] against
/// [..., N]): lower bound counts the entries !(s >= v), upper bound !(s > v) (NaN goes last).
ValueId sorted_position(Emit& e, ValueId seq, ValueId x, bool right, bool int32) {
  ValueId v = e.unsqueeze(x, e.dim(x));
  ValueId s = e.dim(seq) == 1 ? seq : e.unsqueeze(seq, e.dim(seq) - 1);
  ValueId past = e.unary("logical_not", e.cmp(right ? "gt" : "ge", s, v));
  ValueId count = e.op("aten.sum.dim_IntList", {Emit::t(past), Emit::ints({-1}), Emit::b(false)});
  return e.cast(count, int32 ? DType::I32 : DType::I64);
}

std::vector<ValueId> bucketize(Emit& e, const DNode& d) {
  ValueId b = d.tensor("boundaries");
  if (e.dim(b) != 1)
    d.fail("boundaries tensor must be 1 dimension, but got dim(" + std::to_string(e.dim(b)) + ")");
  return {sorted_position(e, b, d.tensor("self"), d.arg("right").b, d.arg("out_int32").b)};
}

std::vector<ValueId> searchsorted(Emit& e, const DNode& d) {
  ValueId seq = d.tensor("sorted_sequence"), x = d.tensor("self");
  bool right = d.arg("right").b;
  if (d.has("side")) {
    const std::string& side = d.arg("side").s;
    if (side != "left" && side != "right")
      d.fail("torch.searchsorted(): side can only be 'left' or 'right' but got " + side);
    if (right && side == "left")
      d.fail("torch.searchsorted(): side and right can't be set to opposites, got side of left "
             "while right was True");
    right = side == "right";
  }
  if (e.dim(seq) == 0)
    d.fail("torch.searchsorted(): input value can be a scalar only when boundaries tensor "
           "dimension is 1, but we got boundaries tensor dim(0)");
  if (e.dim(seq) > 1) {
    std::vector<int64_t> a = e.sizes(seq), b = e.sizes(x);
    a.pop_back();
    if (!b.empty()) b.pop_back();
    if (a != b)
      d.fail("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
             "dimensions of boundaries tensor and input value tensor must match, but we got "
             "boundaries tensor [" +
             join_ints(e.sizes(seq)) + "] and input value tensor [" + join_ints(e.sizes(x)) + "]");
  }
  if (d.has("sorter"))
    seq = e.op("aten.gather.default", {Emit::t(seq), Emit::i(-1), Emit::t(d.tensor("sorter"))});
  return {sorted_position(e, seq, x, right, d.arg("out_int32").b)};
}

std::vector<ValueId> isin(Emit& e, const DNode& d) {
  ValueId x = d.tensor("elements"), t = d.tensor("test_elements");
  ValueId flat = e.reshape(t, {e.meta(t).numel()});
  ValueId hit = e.op("aten.any.dim", {Emit::t(e.cmp("eq", e.unsqueeze(x, e.dim(x)), flat)),
                                      Emit::i(-1), Emit::b(false)});
  return {d.arg("invert").b ? e.unary("logical_not", hit) : hit};
}

/// histc: counts of the elements in [min, max] over `bins` equal bins (min == max: the data's
/// range, widened by 1 each way when that is empty), the last bin closed.
std::vector<ValueId> histc(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  TensorMeta m = e.meta(x);
  if (!is_floating(m.dtype))
    d.fail("torch.histc: input tensor and bins must be of floating point dtype, got " +
           std::string(dtype_name(m.dtype)));
  int64_t bins = d.arg("bins").i;
  if (bins <= 0) d.fail("torch.histc(): bins must be > 0, but got " + std::to_string(bins));
  double lo = d.arg("min").scalar(), hi = d.arg("max").scalar();
  if (lo > hi) d.fail("torch.histc(): max must be larger than min");
  if (!std::isfinite(lo) || !std::isfinite(hi))
    d.fail("torch.histc(): range of [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "] is not finite");
  ValueId flat = e.reshape(x, {m.numel()});
  ValueId vlo, vhi;
  if (lo == hi) {
    if (m.numel() == 0) return {e.zeros({bins}, m)};
    vlo = e.op("aten.amin.default", {Emit::t(flat), Emit::ints({0}), Emit::b(false)});
    vhi = e.amax(flat, {0}, false);
    ValueId same = e.cmp("eq", vlo, vhi);
    vlo = e.where(same, e.add_s(vlo, -1.0), vlo);
    vhi = e.where(same, e.add_s(vhi, 1.0), vhi);
  } else {
    vlo = e.add_s(e.zeros({}, m), lo);
    vhi = e.add_s(e.zeros({}, m), hi);
  }
  ValueId in = e.op("aten.logical_and.default",
                    {Emit::t(e.cmp("ge", flat, vlo)), Emit::t(e.cmp("le", flat, vhi))});
  ValueId pos = e.div(e.mul_s(e.sub(flat, vlo), double(bins)), e.sub(vhi, vlo));
  pos = e.where(in, pos, e.zeros({}, m));
  ValueId bin = e.cast(pos, DType::I64);
  bin = e.op("aten.clamp.default", {Emit::t(bin), {"", Arg::none()}, Emit::i(bins - 1)});
  ValueId ones = e.cast(in, m.dtype);
  return {e.op("aten.scatter_add.default",
               {Emit::t(e.zeros({bins}, m)), Emit::i(0), Emit::t(bin), Emit::t(ones)})};
}

std::vector<ValueId> msort(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) == 0) return {contiguous_copy(e, x)};
  return {e.call("aten.sort.default", {Emit::t(x), Emit::i(0), Emit::b(false)})[0]};
}

// ---- Composite reductions ----

std::vector<ValueId> var_mean_unbiased(Emit& e, const DNode& d) {
  std::string t = d.n.target;
  t.replace(t.rfind(".dim"), 4, ".correction");
  return e.call(t, {Emit::t(d.tensor("self")),
                    {"", d.arg("dim")},
                    Emit::kw("correction", Arg::of_int(d.arg("unbiased").b ? 1 : 0)),
                    Emit::kw("keepdim", d.arg("keepdim"))});
}

std::vector<ValueId> nanmean(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (!is_floating(e.dtype(x)))
    d.fail("nanmean(): expected input to have floating point dtype but got " +
           std::string(dtype_name(e.dtype(x))));
  ValueId present = e.unary("logical_not", e.unary("isnan", x));
  ValueId count =
      e.op("aten.sum.dim_IntList", {Emit::t(present), {"", d.arg("dim")}, {"", d.arg("keepdim")}});
  ValueId total = e.op(
      "aten.nansum.default",
      {Emit::t(x), {"", d.arg("dim")}, {"", d.arg("keepdim")}, Emit::kw("dtype", d.arg("dtype"))});
  return {e.div(total, count)};
}

std::vector<ValueId> trapezoid(Emit& e, const DNode& d) {
  ValueId y = d.tensor("y"), x = d.tensor("x");
  if (e.dim(y) == 0) d.fail("trapezoid: y must have at least one dimension");
  int64_t R = e.dim(y), dim = wrap(d.arg("dim").i, R), n = e.sizes(y)[size_t(dim)];
  if (n == 0) return {e.sum(y, {dim}, false)};
  ValueId dx;
  if (e.dim(x) == 1) {
    if (e.sizes(x)[0] != n) d.fail("trapezoid: There must be one `x` value for each sample point");
    dx = e.sub(e.slice(x, 0, 1, n), e.slice(x, 0, 0, n - 1));
    std::vector<int64_t> s(size_t(R), 1);
    s[size_t(dim)] = n - 1;
    dx = e.reshape(dx, s);
  } else {
    if (e.dim(x) == 0) d.fail("trapezoid: x must have at least one dimension");
    int64_t xd = wrap(d.arg("dim").i, e.dim(x)), m = e.sizes(x)[size_t(xd)];
    if (m != n) d.fail("trapezoid: x and y must have the same size along dim");
    dx = e.sub(e.slice(x, xd, 1, m), e.slice(x, xd, 0, m - 1));
  }
  ValueId avg = e.add(e.slice(y, dim, 1, n), e.slice(y, dim, 0, n - 1));
  return {e.sum(e.div_s(e.mul(dx, avg), 2.0), {dim}, false)};
}

/// Batch norm with batch statistics: (out, save_mean [C], save_rstd [C]), and the running
/// statistics updated as PyTorch does (momentum-weighted, the variance unbiased) in *stats.
std::vector<ValueId> batch_norm_train_values(Emit& e, const DNode& d, std::vector<ValueId>* stats) {
  ValueId x = d.tensor("input");
  int64_t rank = e.dim(x), C = e.sizes(x)[1];
  std::vector<int64_t> dims = {0};
  for (int64_t k = 2; k < rank; ++k) dims.push_back(k);
  const double eps = d.arg("eps").f, m = d.arg("momentum").f;
  const DType stat = dtype_size(e.dtype(x)) < 4 ? DType::F32 : e.dtype(x);
  ValueId xs = e.cast(x, stat);
  ValueId mean = e.mean(xs, dims, true);
  ValueId xc = e.sub(xs, mean);
  ValueId var = e.mean(e.mul(xc, xc), dims, true);
  ValueId rstd = e.unary("rsqrt", e.add_s(var, eps));
  ValueId out = e.cast(channel_affine(e, d, e.mul(xc, rstd), rank), d.out_meta(0).dtype);
  ValueId mean_c = e.reshape(mean, {C}), rstd_c = e.reshape(rstd, {C});
  if (stats && d.has("running_mean") && d.has("running_var")) {
    const double n = C > 0 ? double(e.meta(x).numel() / C) : 0.0;
    ValueId rm = d.tensor("running_mean"), rv = d.tensor("running_var");
    ValueId unbiased = e.mul_s(e.reshape(var, {C}), n > 1 ? n / (n - 1) : INFINITY);
    *stats = {
        e.cast(e.add(e.mul_s(rm, 1 - m), e.mul_s(e.cast(mean_c, e.dtype(rm)), m)), e.dtype(rm)),
        e.cast(e.add(e.mul_s(rv, 1 - m), e.mul_s(e.cast(unbiased, e.dtype(rv)), m)), e.dtype(rv))};
  }
  return {out, mean_c, rstd_c};
}

/// Batch norm with the running statistics (training false): the output and the empty
/// statistics PyTorch's CPU kernel returns.
std::vector<ValueId> batch_norm_eval_values(Emit& e, const DNode& d) {
  ValueId out =
      batch_norm_eval(e, d, d.tensor("input"), d.tensor("running_mean"), d.tensor("running_var"));
  return {e.cast(out, d.out_meta(0).dtype), e.zeros(d.out_meta(1).sizes, d.out_meta(1)),
          e.zeros(d.out_meta(2).sizes, d.out_meta(2))};
}

/// _native_batch_norm_legit_functional and _batch_norm_with_update_functional: the updated
/// running statistics are the last two outputs (the running ones as given in evaluation mode);
/// _batch_norm_with_update_functional adds the empty reserve before them.
std::vector<ValueId> batch_norm_functional(Emit& e, const DNode& d) {
  const bool with_update = d.n.schema->index_of("training") < 0;
  std::vector<ValueId> r, stats;
  if (with_update || d.arg("training").b) {
    r = batch_norm_train_values(e, d, &stats);
  } else {
    r = batch_norm_eval_values(e, d);
    stats = {d.tensor("running_mean"), d.tensor("running_var")};
  }
  if (with_update) r.push_back(e.zeros(d.out_meta(3).sizes, d.out_meta(3)));
  r.insert(r.end(), stats.begin(), stats.end());
  return r;
}

/// _native_batch_norm_legit, native_batch_norm and _batch_norm_with_update write the running
/// statistics in place in training mode: such a node stays as it is (its kernel writes them);
/// evaluation mode, and training without running statistics, decompose.
std::vector<ValueId> batch_norm_mutating(Emit& e, const DNode& d) {
  const bool with_update = d.n.schema->index_of("training") < 0;
  const bool training = with_update || d.arg("training").b;
  if (training && d.has("running_mean") && d.has("running_var")) return {};
  if (!training) return batch_norm_eval_values(e, d);
  std::vector<ValueId> r = batch_norm_train_values(e, d, nullptr);
  if (with_update) r.push_back(e.zeros(d.out_meta(3).sizes, d.out_meta(3)));
  return r;
}

/// rms_norm: x * rsqrt(mean(x^2) + eps) over the normalized dims, times weight; eps defaults to
/// the input dtype's machine epsilon. Half inputs compute in float32.
std::vector<ValueId> rms_norm(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  const DType dt = e.dtype(x);
  const int64_t k = int64_t(d.arg("normalized_shape").ints.size()), rank = e.dim(x);
  double eps = d.has("eps")        ? d.arg("eps").f
               : dt == DType::F16  ? 0.0009765625
               : dt == DType::BF16 ? 0.0078125
               : dt == DType::F64  ? 2.220446049250313e-16
                                   : 1.1920928955078125e-07;
  ValueId xf = dt == DType::F64 ? x : e.cast(x, DType::F32);
  ValueId y = xf;
  if (k > 0) {
    ValueId ms = e.mean(e.mul(xf, xf), last_dims(rank, k), true);
    y = e.mul(xf, e.unary("rsqrt", e.add_s(ms, eps)));
  } else {
    y = e.mul(xf, e.unary("rsqrt", e.add_s(e.mul(xf, xf), eps)));
  }
  y = e.cast(y, dt);
  if (d.has("weight")) y = e.mul(y, d.tensor("weight"));
  return {e.cast(y, d.out_meta(0).dtype)};
}

/// _safe_softmax: softmax, with zeros for the rows whose elements are all -inf.
std::vector<ValueId> safe_softmax(Emit& e, const DNode& d) {
  ValueId x = softmax_input(e, d);
  if (e.dim(x) == 0) return softmax(e, d);
  int64_t dim = wrap(d.arg("dim").i, e.dim(x));
  ValueId sm = softmax(e, d)[0];
  ValueId masked = e.cmp_s("eq", e.amax(x, {dim}, true), -INFINITY);
  return {e.where_s(e.unary("logical_not", masked), sm, 0.0)};
}

/// _softmax_backward_data: output * (grad - sum(grad * output, dim)), in input_dtype.
std::vector<ValueId> softmax_backward_data(Emit& e, const DNode& d) {
  ValueId g = d.tensor("grad_output"), y = d.tensor("output");
  int64_t dim = e.dim(y) == 0 ? 0 : wrap(d.arg("dim").i, e.dim(y));
  ValueId gy = e.mul(g, y);
  ValueId s = e.dim(y) == 0 ? gy : e.sum(gy, {dim}, true);
  return {e.cast(e.mul(y, e.sub(g, s)), d.out_meta(0).dtype)};
}

std::vector<ValueId> relu6(Emit& e, const DNode& d) {
  return {clamp_call(e, d.tensor("self"), Arg::of_int(0), Arg::of_int(6))};
}

std::vector<ValueId> selu(Emit& e, const DNode& d) {
  const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  ValueId x = d.tensor("self");
  return {e.where(e.cmp_s("gt", x, 0.0), e.mul_s(x, scale),
                  e.mul_s(e.unary("expm1", x), alpha * scale))};
}

std::vector<ValueId> celu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  const double alpha = d.arg("alpha").scalar();
  return {e.where(e.cmp_s("gt", x, 0.0), x, e.mul_s(e.unary("expm1", e.div_s(x, alpha)), alpha))};
}

/// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)).
std::vector<ValueId> log_sigmoid(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  ValueId lo = clamp_call(e, x, Arg::none(), Arg::of_float(0.0));
  return {e.sub(lo, e.unary("log1p", e.unary("exp", e.mul_s(e.unary("abs", x), -1.0))))};
}

/// logit(x) = log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given.
std::vector<ValueId> logit(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (!is_floating(e.dtype(x))) x = e.cast(x, d.out_meta(0).dtype);
  if (d.has("eps"))
    x = clamp_call(e, x, Arg::of_float(d.arg("eps").f), Arg::of_float(1.0 - d.arg("eps").f));
  return {e.unary("log", e.div(x, e.rsub_s(1.0, x)))};
}

/// hardshrink: 0 where -lambd <= x <= lambd, x elsewhere (NaN stays).
std::vector<ValueId> hardshrink(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  ValueId inside = e.cmp_s("le", e.unary("abs", x), d.arg("lambd").scalar());
  return {e.where_s(e.unary("logical_not", inside), x, 0.0)};
}

/// softshrink: x - lambd above lambd, x + lambd below -lambd, 0 between.
std::vector<ValueId> softshrink(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  const double l = d.arg("lambd").scalar();
  ValueId below = e.where_s(e.cmp_s("lt", x, -l), e.add_s(x, l), 0.0);
  return {e.where(e.cmp_s("gt", x, l), e.add_s(x, -l), below)};
}

/// threshold: value where x <= threshold, x elsewhere (NaN stays).
std::vector<ValueId> threshold(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  ValueId le = e.cmp_s("le", x, d.arg("threshold").scalar());
  // An integer tensor keeps its dtype: the value is passed as the Scalar it is.
  return {e.cast(e.op("aten.where.ScalarOther",
                      {Emit::t(e.unary("logical_not", le)), Emit::t(x), {"", d.arg("value")}}),
                 d.out_meta(0).dtype)};
}

// ---- Composite ops, second batch (issue 18): products, statistics, order statistics, distances
// and losses, pooling and upsampling in one dimension, and random distributions. Like the rows
// above they read no output metadata.

/// The result of a loss per element under `reduction` (0 none, 1 mean, 2 sum).
ValueId reduce_loss(Emit& e, const DNode& d, ValueId v, int64_t reduction) {
  if (reduction == 0) return v;
  if (reduction == 1) return e.mean(v, {}, false);
  if (reduction == 2) return e.sum(v, {}, false);
  d.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(reduction));
}

std::vector<ValueId> dot(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self");
  ValueId b = d.tensor(d.n.target == "aten.dot.default" ? "tensor" : "other");
  if (e.dim(a) != 1 || e.dim(b) != 1)
    d.fail("1D tensors expected, but got " + std::to_string(e.dim(a)) + "D and " +
           std::to_string(e.dim(b)) + "D tensors");
  if (e.sizes(a) != e.sizes(b))
    d.fail("inconsistent tensor size, expected tensor [" + std::to_string(e.sizes(a)[0]) +
           "] and src [" + std::to_string(e.sizes(b)[0]) + "] to have the same number of elements");
  ValueId p = e.mul(a, b);
  return {e.cast(e.sum(p, {0}, false), e.dtype(p))};
}

std::vector<ValueId> inner(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("other");
  if (e.dim(a) == 0 || e.dim(b) == 0) return {e.mul(a, b)};
  std::vector<int64_t> as = e.sizes(a), bs = e.sizes(b);
  if (as.back() != bs.back())
    d.fail("inner() the last dimension must match on both input tensors but got shapes " +
           format_meta(e.meta(a)) + " and " + format_meta(e.meta(b)));
  int64_t k = as.back();
  std::vector<int64_t> out(as.begin(), as.end() - 1);
  out.insert(out.end(), bs.begin(), bs.end() - 1);
  ValueId a2 = e.reshape(a, {prod(as, 0, as.size() - 1), k});
  ValueId b2 = e.reshape(b, {prod(bs, 0, bs.size() - 1), k});
  return {e.reshape(e.mm(a2, e.permute(b2, {1, 0})), out)};
}

std::vector<ValueId> trace(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) != 2)
    d.fail("trace: expected a matrix, but got tensor with dim " + std::to_string(e.dim(x)));
  ValueId diag = e.op("aten.diagonal.default", {Emit::t(x), Emit::i(0), Emit::i(0), Emit::i(1)});
  if (e.sizes(diag)[0] == 0) return {e.sum(e.zeros({1}, e.meta(x)), {0}, false)};
  return {e.sum(diag, {0}, false)};
}

/// var.default, std.default, var_mean.default, std_mean.default: over every dim.
std::vector<ValueId> moments_all(Emit& e, const DNode& d) {
  std::string t = d.n.target;
  t.replace(t.rfind(".default"), 8, ".correction");
  return e.call(t, {Emit::t(d.tensor("self")),
                    {"", Arg::none()},
                    Emit::kw("correction", Arg::of_int(d.arg("unbiased").b ? 1 : 0))});
}

std::vector<ValueId> aminmax(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  std::vector<CallArg> dims = {Emit::ints({})};
  if (d.has("dim")) {
    int64_t dim = d.arg("dim").i;
    if (e.dim(x) > 0) dims = {Emit::ints({wrap(dim, e.dim(x))})};
  }
  bool keep = d.arg("keepdim").b;
  auto red = [&](const char* op) {
    ValueId r = e.op(op, {Emit::t(x), dims[0], Emit::b(keep)});
    return r;
  };
  return {red("aten.amin.default"), red("aten.amax.default")};
}

/// The k-th smallest along `dim` of a stable ascending sort (NaN sorts last), k a tensor of
/// indices with the reduced shape (keepdim). Returns {values, indices} without the dim unless
/// keepdim.
std::vector<ValueId> pick_sorted(Emit& e, ValueId x, int64_t dim, ValueId k, bool keepdim) {
  std::vector<ValueId> s =
      e.call("aten.sort.stable",
             {Emit::t(x), Emit::kw("stable", Arg::of_bool(true)), Emit::kw("dim", Arg::of_int(dim)),
              Emit::kw("descending", Arg::of_bool(false))});
  ValueId v = e.op("aten.gather.default", {Emit::t(s[0]), Emit::i(dim), Emit::t(k)});
  ValueId i = e.op("aten.gather.default", {Emit::t(s[1]), Emit::i(dim), Emit::t(k)});
  if (!keepdim) {
    v = e.op("aten.squeeze.dims", {Emit::t(v), Emit::ints({dim})});
    i = e.op("aten.squeeze.dims", {Emit::t(i), Emit::ints({dim})});
  }
  return {v, i};
}

/// A tensor of the reduced shape (dim kept) holding `k` everywhere, as int64.
ValueId const_index(Emit& e, ValueId x, int64_t dim, int64_t k) {
  std::vector<int64_t> s = e.sizes(x);
  s[size_t(dim)] = 1;
  TensorMeta like = e.meta(x);
  like.dtype = DType::I64;
  return e.op("aten.add.Scalar", {Emit::t(e.zeros(s, like)), Emit::i(k)});
}

/// median / nanmedian over `dim` (x at least 1-D): the lower middle of the values (of the
/// non-NaN ones for nanmedian); median gives the first NaN of a row that has one, nanmedian
/// NaN only for a row of NaNs.
std::vector<ValueId> median_along(Emit& e, const DNode& d, ValueId x, int64_t dim, bool keepdim,
                                  bool nan_skipping) {
  int64_t n = e.sizes(x)[size_t(dim)];
  if (n == 0) d.fail("median() cannot compute the median of an empty dimension");
  ValueId k;
  if (!is_floating(e.dtype(x))) {
    k = const_index(e, x, dim, (n - 1) / 2);
  } else {
    // count of non-NaN values per row; median: (n-1)/2 when the row has no NaN, else the count
    // (the first NaN's sorted position); nanmedian: (count-1)/2, 0 for a row of NaNs.
    ValueId present = e.cast(e.unary("logical_not", e.unary("isnan", x)), DType::F64);
    ValueId cnt = e.sum(present, {dim}, true);
    ValueId pick;
    if (nan_skipping) {
      pick = e.unary("floor", e.mul_s(e.add_s(cnt, -1.0), 0.5));
      pick = e.op("aten.clamp_min.default", {Emit::t(pick), Emit::f(0.0)});
    } else {
      ValueId full = e.cmp_s("eq", cnt, double(n));
      pick = e.where(full, e.add_s(e.mul_s(cnt, 0.0), double((n - 1) / 2)), cnt);
    }
    k = e.cast(pick, DType::I64);
  }
  return pick_sorted(e, x, dim, k, keepdim);
}

std::vector<ValueId> median_all(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.meta(x).numel() == 0) d.fail("median() input tensor cannot be empty");
  ValueId flat = e.reshape(x, {e.meta(x).numel()});
  bool nan_skipping = d.n.target == "aten.nanmedian.default";
  return {median_along(e, d, flat, 0, false, nan_skipping)[0]};
}

std::vector<ValueId> median_dim(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  bool keep = d.arg("keepdim").b, nan_skipping = d.n.target == "aten.nanmedian.dim";
  if (e.dim(x) == 0) {
    int64_t dim = wrap(d.arg("dim").i, 1);
    (void)dim;
    ValueId idx = e.op("aten.mul.Scalar", {Emit::t(e.cast(x, DType::I64)), Emit::i(0)});
    return {own_view(e, x, x), idx};
  }
  int64_t dim = wrap(d.arg("dim").i, e.dim(x));
  return median_along(e, d, x, dim, keep, nan_skipping);
}

std::vector<ValueId> kthvalue(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t k = d.arg("k").i;
  bool keep = d.arg("keepdim").b;
  if (e.dim(x) == 0) {
    if (k != 1) d.fail("kthvalue(): selected number k out of range for dimension 0");
    ValueId idx = e.op("aten.mul.Scalar", {Emit::t(e.cast(x, DType::I64)), Emit::i(0)});
    return {own_view(e, x, x), idx};
  }
  int64_t dim = wrap(d.arg("dim").i, e.dim(x)), n = e.sizes(x)[size_t(dim)];
  if (k < 1 || k > n)
    d.fail("kthvalue(): selected number k out of range for dimension " + std::to_string(dim));
  return pick_sorted(e, x, dim, const_index(e, x, dim, k - 1), keep);
}

std::vector<ValueId> lerp_scalar(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("end");
  double w = d.arg("weight").scalar();
  ValueId diff = e.sub(b, a);
  // PyTorch's two-sided form: exact at both ends.
  if (std::abs(w) < 0.5) return {e.add(a, e.mul_s(diff, w))};
  return {e.sub(b, e.mul_s(diff, 1.0 - w))};
}

std::vector<ValueId> channel_shuffle(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t g = d.arg("groups").i;
  std::vector<int64_t> s = e.sizes(x);
  if (s.size() < 3) d.fail("channel_shuffle expects input to have at least 3 dimensions");
  if (g <= 0 || s[1] % g != 0)
    d.fail("channel_shuffle: number of channels (" + std::to_string(s[1]) +
           ") must be divisible by groups (" + std::to_string(g) + ")");
  std::vector<int64_t> split = {s[0], g, s[1] / g};
  split.insert(split.end(), s.begin() + 2, s.end());
  ValueId t = e.transpose(e.reshape(x, split), 1, 2);
  return {e.reshape(contiguous_copy(e, t), s)};
}

std::vector<ValueId> linalg_vander(Emit& e, const DNode& d) {
  ValueId x = d.tensor("x");
  if (e.dim(x) == 0) x = e.reshape(x, {1}); // a scalar is a vector of one
  int64_t n = d.has("N") ? d.arg("N").i : e.sizes(x).back();
  if (n <= 0) d.fail("N must be greater than 1.");
  DType t = e.dtype(x) == DType::Bool ? DType::I64 : e.dtype(x);
  ValueId xc = e.cast(x, t);
  std::vector<int64_t> s = e.sizes(x);
  ValueId col = e.unsqueeze(xc, -1);
  s.push_back(1);
  ValueId ones = e.op("aten.add.Scalar", {Emit::t(e.zeros(s, e.meta(col))), Emit::i(1)});
  if (n == 1) return {ones};
  std::vector<int64_t> rest = e.sizes(col);
  rest.back() = n - 1;
  ValueId all = e.cat({ones, e.expand(col, rest)}, int64_t(s.size()) - 1);
  return {e.op("aten.cumprod.default", {Emit::t(all), Emit::i(int64_t(s.size()) - 1)})};
}

std::vector<ValueId> frexp(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  DType t = e.dtype(x);
  if (!is_floating(t))
    d.fail("torch.frexp() only supports floating-point dtypes, got " + std::string(dtype_name(t)));
  ValueId xd = e.cast(x, DType::F64);
  ValueId ax = e.unary("abs", xd);
  ValueId finite_nz = e.op("aten.logical_and.default",
                           {Emit::t(e.unary("isfinite", xd)), Emit::t(e.cmp_s("ne", xd, 0.0))});
  // exponent = floor(log2 |x|) + 1, corrected by one either way where log2 rounded.
  ValueId safe = e.where(finite_nz, ax, e.add_s(e.mul_s(ax, 0.0), 1.0));
  ValueId ex = e.add_s(e.unary("floor", e.unary("log2", safe)), 1.0);
  ValueId m = e.mul(safe, e.op("aten.pow.Scalar", {Emit::f(2.0), Emit::t(e.mul_s(ex, -1.0))}));
  ValueId hi = e.cmp_s("ge", m, 1.0), lo = e.cmp_s("lt", m, 0.5);
  ex = e.add(ex, e.sub(e.cast(hi, DType::F64), e.cast(lo, DType::F64)));
  m = e.where(hi, e.mul_s(m, 0.5), e.where(lo, e.mul_s(m, 2.0), m));
  ValueId signed_m = e.where(e.cmp_s("lt", xd, 0.0), e.mul_s(m, -1.0), m);
  ValueId mant = e.where(finite_nz, signed_m, xd);
  ValueId expo = e.where(finite_nz, ex, e.mul_s(ex, 0.0));
  return {e.cast(mant, t), e.cast(expo, DType::I32)};
}

/// ||x1 - x2 + eps||_p over the last dim (pairwise_distance's rule).
ValueId pairwise(Emit& e, ValueId a, ValueId b, double p, double eps, bool keepdim) {
  ValueId diff = e.add_s(e.sub(a, b), eps);
  int64_t r = e.dim(diff);
  std::vector<CallArg> args = {Emit::t(diff), Emit::f(p)};
  args.push_back(r == 0 ? Emit::ints({}) : Emit::ints({r - 1}));
  args.push_back(Emit::b(keepdim));
  return e.op("aten.linalg_vector_norm.default", std::move(args));
}

std::vector<ValueId> pairwise_distance(Emit& e, const DNode& d) {
  return {pairwise(e, d.tensor("x1"), d.tensor("x2"), d.arg("p").scalar(), d.arg("eps").scalar(),
                   d.arg("keepdim").b)};
}

std::vector<ValueId> dist(Emit& e, const DNode& d) {
  ValueId diff = e.sub(d.tensor("self"), d.tensor("other"));
  return {e.op("aten.linalg_vector_norm.default",
               {Emit::t(diff), {"", d.arg("p")}, Emit::ints({}), Emit::b(false)})};
}

/// ||v|| over every dim but `dim` (over all of v when dim is -1), kept as size-1 dims: PyTorch's
/// norm_except_dim(v, 2, dim), the norm of torch.nn.utils.weight_norm.
ValueId norm_except_dim(Emit& e, const DNode& d, ValueId v, int64_t dim) {
  const int64_t r = e.dim(v);
  if (dim != -1) {
    if (dim < -r || dim >= r)
      d.fail("dim " + std::to_string(dim) + " is out of range for a " + std::to_string(r) +
             "-dim weight");
    dim = wrap(dim, r);
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < r; ++i)
    if (dim == -1 || i != dim) dims.push_back(i);
  return e.op("aten.linalg_vector_norm.default",
              {Emit::t(v), Emit::f(2.0), Emit::ints(dims), Emit::b(true)});
}

/// _weight_norm(v, g, dim): v * (g / norm_except_dim(v, 2, dim)).
std::vector<ValueId> weight_norm(Emit& e, const DNode& d) {
  ValueId v = d.tensor("v");
  return {e.mul(v, e.div(d.tensor("g"), norm_except_dim(e, d, v, d.arg("dim").i)))};
}

/// _weight_norm_interface(v, g, dim): the weight and the norms (the shape of g).
std::vector<ValueId> weight_norm_interface(Emit& e, const DNode& d) {
  ValueId v = d.tensor("v");
  ValueId norm = norm_except_dim(e, d, v, d.arg("dim").i);
  return {e.mul(v, e.div(d.tensor("g"), norm)), norm};
}

std::vector<ValueId> cosine_similarity(Emit& e, const DNode& d) {
  ValueId a = d.tensor("x1"), b = d.tensor("x2");
  std::vector<int64_t> s = broadcast_all(d, {e.sizes(a), e.sizes(b)});
  if (s.empty()) d.fail("cosine_similarity: the inputs must have at least one dimension");
  a = e.expand(a, s);
  b = e.expand(b, s);
  int64_t dim = wrap(d.arg("dim").i, int64_t(s.size()));
  double eps = d.arg("eps").scalar();
  auto unit = [&](ValueId v) {
    ValueId nrm = e.op("aten.linalg_vector_norm.default",
                       {Emit::t(v), Emit::f(2.0), Emit::ints({dim}), Emit::b(true)});
    return e.div(v, e.op("aten.clamp_min.default", {Emit::t(nrm), Emit::f(eps)}));
  };
  return {e.sum(e.mul(unit(a), unit(b)), {dim}, false)};
}

std::vector<ValueId> bilinear(Emit& e, const DNode& d) {
  ValueId x1 = d.tensor("input1"), x2 = d.tensor("input2"), w = d.tensor("weight");
  if (e.dim(w) != 3) d.fail("bilinear(): weight must be three-dimensional");
  std::vector<int64_t> s1 = e.sizes(x1), ws = e.sizes(w);
  if (s1.empty() || e.sizes(x2).empty() || s1.back() != ws[1] || e.sizes(x2).back() != ws[2])
    d.fail("bilinear(): input sizes do not match the weight " + format_meta(e.meta(w)));
  int64_t rows = prod(s1, 0, s1.size() - 1), O = ws[0], I = ws[1], J = ws[2];
  ValueId a = e.reshape(x1, {rows, I});
  ValueId b = e.reshape(x2, {rows, J});
  // t[r, o, j] = sum_i a[r, i] w[o, i, j]; y[r, o] = sum_j t[r, o, j] b[r, j]
  ValueId wt = e.reshape(contiguous_copy(e, e.permute(w, {1, 0, 2})), {I, O * J});
  ValueId t = e.reshape(e.mm(a, wt), {rows, O, J});
  ValueId y = e.sum(e.mul(t, e.unsqueeze(b, 1)), {2}, false);
  if (d.has("bias")) y = e.add(y, d.tensor("bias"));
  std::vector<int64_t> out(s1.begin(), s1.end() - 1);
  out.push_back(O);
  return {e.reshape(y, out)};
}

std::vector<ValueId> cdist(Emit& e, const DNode& d) {
  return {e.op("aten._cdist_forward.default", {Emit::t(d.tensor("x1")),
                                               Emit::t(d.tensor("x2")),
                                               {"", d.arg("p")},
                                               {"", d.arg("compute_mode")}})};
}

std::vector<ValueId> linalg_diagonal(Emit& e, const DNode& d) {
  ValueId x = d.tensor("A");
  return {
      own_view(e,
               e.op("aten.diagonal.default",
                    {Emit::t(x), {"", d.arg("offset")}, {"", d.arg("dim1")}, {"", d.arg("dim2")}}),
               x)};
}

std::vector<ValueId> max_pool1d(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  if (r != 2 && r != 3)
    d.fail("max_pool1d() Expected 2D or 3D input tensor, but got " + format_meta(e.meta(x)));
  auto one = [&](const char* name, int64_t dflt) {
    const std::vector<int64_t>& v = d.arg(name).ints;
    return std::vector<int64_t>{dflt, v.empty() ? -1 : v[0]};
  };
  std::vector<int64_t> k = one("kernel_size", 1), s = one("stride", 1), p = one("padding", 0),
                       dl = one("dilation", 1);
  if (s[1] < 0) s[1] = k[1];
  ValueId x2 = e.unsqueeze(x, r - 1);
  std::vector<ValueId> out =
      e.call("aten.max_pool2d_with_indices.default", {Emit::t(x2),
                                                      Emit::ints(k),
                                                      Emit::ints(s),
                                                      Emit::ints(p),
                                                      Emit::ints(dl),
                                                      {"", d.arg("ceil_mode")}});
  std::vector<ValueId> res;
  for (ValueId v : out) res.push_back(e.op("aten.squeeze.dims", {Emit::t(v), Emit::ints({r - 1})}));
  if (d.n.target == "aten.max_pool1d.default") res.resize(1);
  return res;
}

std::vector<ValueId> upsample_nearest1d_vec(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  if (e.dim(x) != 3)
    d.fail("upsample_nearest1d: expected a 3-D input, got " + format_meta(e.meta(x)));
  ValueId x2 = e.unsqueeze(x, 2);
  Arg size = Arg::none(), scales = Arg::none();
  if (d.has("output_size")) size = Arg::of_ints({1, d.arg("output_size").ints.at(0)});
  if (d.has("scale_factors")) scales = Arg::of_floats({1.0, d.arg("scale_factors").floats.at(0)});
  ValueId y = e.op("aten.upsample_nearest2d.vec", {Emit::t(x2), {"", size}, {"", scales}});
  return {e.op("aten.squeeze.dims", {Emit::t(y), Emit::ints({2})})};
}

// ---- Losses (reduction: 0 none, 1 mean, 2 sum)

std::vector<ValueId> binary_cross_entropy(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), t = d.tensor("target");
  auto clamped_log = [&](ValueId v) {
    return e.op("aten.clamp_min.default", {Emit::t(e.unary("log", v)), Emit::f(-100.0)});
  };
  ValueId l =
      e.add(e.mul(t, clamped_log(x)), e.mul(e.rsub_s(1.0, t), clamped_log(e.rsub_s(1.0, x))));
  l = e.mul_s(l, -1.0);
  if (d.has("weight")) l = e.mul(l, d.tensor("weight"));
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

std::vector<ValueId> kl_div(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), t = d.tensor("target");
  ValueId l = d.arg("log_target").b
                  ? e.mul(e.unary("exp", t), e.sub(t, x))
                  : e.sub(e.op("aten.xlogy.Tensor", {Emit::t(t), Emit::t(t)}), e.mul(t, x));
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

std::vector<ValueId> soft_margin_loss(Emit& e, const DNode& d) {
  ValueId l =
      e.unary("log1p", e.unary("exp", e.mul_s(e.mul(d.tensor("self"), d.tensor("target")), -1.0)));
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

std::vector<ValueId> margin_ranking_loss(Emit& e, const DNode& d) {
  ValueId diff = e.sub(d.tensor("input1"), d.tensor("input2"));
  ValueId l = e.add_s(e.mul_s(e.mul(d.tensor("target"), diff), -1.0), d.arg("margin").scalar());
  l = e.op("aten.clamp_min.default", {Emit::t(l), Emit::f(0.0)});
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

std::vector<ValueId> hinge_embedding_loss(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), t = d.tensor("target");
  double margin = d.arg("margin").scalar();
  ValueId mc = e.op("aten.clamp_min.default", {Emit::t(e.rsub_s(margin, x)), Emit::f(0.0)});
  ValueId zero = e.mul_s(x, 0.0);
  ValueId om = e.where(e.cmp_s("ne", t, 1.0), mc, zero);
  ValueId os = e.where(e.cmp_s("ne", t, -1.0), x, zero);
  return {reduce_loss(e, d, e.add(om, os), d.arg("reduction").i)};
}

std::vector<ValueId> poisson_nll_loss(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), t = d.tensor("target");
  ValueId l = d.arg("log_input").b
                  ? e.sub(e.unary("exp", x), e.mul(t, x))
                  : e.sub(x, e.mul(t, e.unary("log", e.add_s(x, d.arg("eps").scalar()))));
  if (d.arg("full").b) {
    // Stirling's term t log t - t + log(2 pi t) / 2 where t > 1.
    ValueId st = e.add(e.sub(e.mul(t, e.unary("log", t)), t),
                       e.mul_s(e.unary("log", e.mul_s(t, 2.0 * M_PI)), 0.5));
    l = e.add(l, e.where(e.cmp_s("gt", t, 1.0), st, e.mul_s(t, 0.0)));
  }
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

std::vector<ValueId> cosine_embedding_loss(Emit& e, const DNode& d) {
  ValueId a = d.tensor("input1"), b = d.tensor("input2"), t = d.tensor("target");
  int64_t r = e.dim(a);
  if (r != e.dim(b) || r < 1 || r > 2)
    d.fail("cosine_embedding_loss: expected 1-D or 2-D inputs of equal rank");
  int64_t dim = r - 1;
  const double kEps = 1e-12;
  ValueId dotp = e.sum(e.mul(a, b), {dim}, false);
  ValueId m1 = e.add_s(e.sum(e.mul(a, a), {dim}, false), kEps);
  ValueId m2 = e.add_s(e.sum(e.mul(b, b), {dim}, false), kEps);
  ValueId cos = e.div(dotp, e.unary("sqrt", e.mul(m1, m2)));
  ValueId zero = e.mul_s(cos, 0.0);
  ValueId pos = e.rsub_s(1.0, cos);
  ValueId neg = e.op("aten.clamp_min.default",
                     {Emit::t(e.add_s(cos, -d.arg("margin").scalar())), Emit::f(0.0)});
  ValueId l =
      e.add(e.where(e.cmp_s("eq", t, 1.0), pos, zero), e.where(e.cmp_s("eq", t, -1.0), neg, zero));
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

std::vector<ValueId> triplet_margin_loss(Emit& e, const DNode& d) {
  ValueId a = d.tensor("anchor"), p = d.tensor("positive"), n = d.tensor("negative");
  double pn = d.arg("p").scalar(), eps = d.arg("eps").scalar();
  ValueId dp = pairwise(e, a, p, pn, eps, false), dn = pairwise(e, a, n, pn, eps, false);
  if (d.arg("swap").b)
    dn = e.op("aten.minimum.default", {Emit::t(dn), Emit::t(pairwise(e, p, n, pn, eps, false))});
  ValueId l = e.add_s(e.sub(dp, dn), d.arg("margin").scalar());
  l = e.op("aten.clamp_min.default", {Emit::t(l), Emit::f(0.0)});
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

// ---- Random distributions: functions of rand_like / randn_like samples (docs/random.md), so
// that eager, inductor and CUDA draw the same numbers.

/// Uniform samples in [0, 1) shaped like x, in float64 (float x) or float32.
ValueId uniform01(Emit& e, ValueId x) {
  DType t = is_floating(e.dtype(x)) ? e.dtype(x) : DType::F32;
  return e.op("aten.rand_like.default", {Emit::t(x), Emit::kw("dtype", Arg::of_dtype(t))});
}

std::vector<ValueId> exponential(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  double l = d.arg("lambd").scalar();
  if (!(l > 0)) d.fail("exponential_ expects lambda > 0.0, but found lambda=" + std::to_string(l));
  ValueId u = uniform01(e, x);
  return {e.cast(e.mul_s(e.unary("log1p", e.mul_s(u, -1.0)), -1.0 / l), e.dtype(x))};
}

std::vector<ValueId> geometric(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  double p = d.arg("p").scalar();
  if (!(p > 0 && p < 1))
    d.fail("geometric_ expects p to be in (0, 1), but got p=" + std::to_string(p));
  ValueId u = uniform01(e, x);
  // ceil(log(1 - u) / log(1 - p)), at least 1.
  ValueId k = e.unary("ceil", e.mul_s(e.unary("log1p", e.mul_s(u, -1.0)), 1.0 / std::log1p(-p)));
  k = e.op("aten.clamp_min.default", {Emit::t(k), Emit::f(1.0)});
  return {e.cast(k, e.dtype(x))};
}

std::vector<ValueId> cauchy(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  ValueId u = uniform01(e, x);
  ValueId c = e.unary("tan", e.mul_s(e.add_s(u, -0.5), M_PI));
  return {
      e.cast(e.add_s(e.mul_s(c, d.arg("sigma").scalar()), d.arg("median").scalar()), e.dtype(x))};
}

/// Standard normal samples shaped like x (float dtype).
ValueId normal01(Emit& e, ValueId x) {
  DType t = is_floating(e.dtype(x)) ? e.dtype(x) : DType::F32;
  return e.op("aten.randn_like.default", {Emit::t(x), Emit::kw("dtype", Arg::of_dtype(t))});
}

std::vector<ValueId> log_normal(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  double sd = d.arg("std").scalar();
  if (!(sd > 0)) d.fail("log_normal_ expects std > 0.0, but found std=" + std::to_string(sd));
  ValueId z = e.add_s(e.mul_s(normal01(e, x), sd), d.arg("mean").scalar());
  return {e.cast(e.unary("exp", z), e.dtype(x))};
}

std::vector<ValueId> uniform(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  double lo = d.arg("from").scalar(), hi = d.arg("to").scalar();
  if (lo > hi)
    d.fail("uniform_ expects to return a [from, to) range, but found from=" + std::to_string(lo) +
           " > to=" + std::to_string(hi));
  return {e.cast(e.add_s(e.mul_s(uniform01(e, x), hi - lo), lo), e.dtype(x))};
}

std::vector<ValueId> normal_functional(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  double sd = d.arg("std").scalar();
  if (sd < 0) d.fail("normal expects std >= 0.0, but found std " + std::to_string(sd));
  return {e.cast(e.add_s(e.mul_s(normal01(e, x), sd), d.arg("mean").scalar()), e.dtype(x))};
}

/// normal.Tensor_Tensor, .Tensor_float, .float_Tensor: mean + std * N(0, 1), broadcast.
std::vector<ValueId> normal_tensor(Emit& e, const DNode& d) {
  const Arg& m = d.arg("mean");
  const Arg& s = d.arg("std");
  std::vector<std::vector<int64_t>> shapes;
  if (m.kind == Arg::Kind::Tensor) shapes.push_back(e.sizes(m.tensor));
  if (s.kind == Arg::Kind::Tensor) shapes.push_back(e.sizes(s.tensor));
  std::vector<int64_t> shape = broadcast_all(d, shapes);
  ValueId like = m.kind == Arg::Kind::Tensor ? m.tensor : s.tensor;
  ValueId z = normal01(e, e.expand(like, shape));
  ValueId r = s.kind == Arg::Kind::Tensor ? e.mul(z, s.tensor) : e.mul_s(z, s.scalar());
  r = m.kind == Arg::Kind::Tensor ? e.add(r, m.tensor) : e.add_s(r, m.scalar());
  return {r};
}

/// multinomial, as PyTorch samples it: without replacement (or one sample), the exponential race:
/// the indices of the num_samples largest p / E with E = -log1p(-u) ~ Exp(1) per category, which
/// are distributed as successive draws without replacement (zero probabilities come last); with
/// replacement, inversion: per sample u ~ U[0, 1) the number of entries of the cumulative sum,
/// divided by its last entry so that it ends at 1 exactly, that are <= u. In float64 throughout.
std::vector<ValueId> multinomial(Emit& e, const DNode& d) {
  ValueId p = d.tensor("self");
  const int64_t n = d.arg("num_samples").i;
  const bool replacement = d.arg("replacement").b;
  if (e.dim(p) < 1 || e.dim(p) > 2) d.fail("prob_dist must be 1 or 2 dim");
  if (!is_floating(e.dtype(p)))
    d.fail("multinomial only supports floating-point dtypes for input, got: " +
           std::string(scalar_type_name(e.dtype(p))));
  if (n <= 0) d.fail("cannot sample n_sample <= 0 samples");
  const int64_t k = e.sizes(p).back();
  if (!replacement && n > k)
    d.fail("cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  if (k > (int64_t(1) << 24)) d.fail("number of categories cannot exceed 2^24");
  ValueId q = e.cast(p, DType::F64);
  if (!replacement || n == 1) {
    ValueId ex = e.mul_s(e.unary("log1p", e.mul_s(uniform01(e, q), -1.0)), -1.0);
    ValueId key = e.where_s(e.cmp_s("gt", q, 0.0), e.div(q, ex), -1.0);
    return {e.call("aten.topk.default", {Emit::t(key), Emit::i(n)})[1]};
  }
  ValueId c = e.op("aten.cumsum.default", {Emit::t(q), Emit::i(-1)});
  c = e.div(c, e.slice(c, e.dim(c) - 1, k - 1, k));
  std::vector<int64_t> shape = e.sizes(p);
  shape.back() = n;
  std::vector<CallArg> rand = {Emit::ints(shape), Emit::kw("dtype", Arg::of_dtype(DType::F64))};
  if (e.meta(p).device != Device{})
    rand.push_back(Emit::kw("device", Arg::of_device(e.meta(p).device)));
  ValueId u = e.op("aten.rand.default", std::move(rand));
  // A row of zeros (nan cumulative sums) counts every entry: keep the index in range.
  ValueId ix = sorted_position(e, c, u, true, false);
  return {e.op("aten.clamp_max.default", {Emit::t(ix), Emit::i(k - 1)})};
}

std::vector<ValueId> randint_like(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t lo = d.n.target == "aten.randint_like.low_dtype" ? d.arg("low").i : 0;
  int64_t hi = d.arg("high").i;
  if (hi <= lo)
    d.fail("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(lo) +
           " >= to=" + std::to_string(hi));
  DType t = d.has("dtype") ? d.arg("dtype").dtype() : e.dtype(x);
  ValueId u =
      e.op("aten.rand_like.default", {Emit::t(x), Emit::kw("dtype", Arg::of_dtype(DType::F64))});
  ValueId v = e.add_s(e.unary("floor", e.mul_s(u, double(hi - lo))), double(lo));
  return {e.cast(v, t)};
}

std::vector<ValueId> pointwise_loss(Emit& e, const DNode& d) {
  ValueId diff = e.sub(d.tensor("self"), d.tensor("target"));
  const std::string& t = d.n.target;
  ValueId l;
  if (t == "aten.mse_loss.default") {
    l = e.mul(diff, diff);
  } else {
    ValueId z = e.unary("abs", diff);
    if (t == "aten.l1_loss.default") {
      l = z;
    } else if (t == "aten.smooth_l1_loss.default") {
      double beta = d.arg("beta").scalar();
      if (beta < 0) d.fail("smooth_l1_loss does not support negative values for beta.");
      l = beta == 0 ? z
                    : e.where(e.cmp_s("lt", z, beta), e.mul_s(e.mul(z, z), 0.5 / beta),
                              e.add_s(z, -0.5 * beta));
    } else { // huber_loss
      double delta = d.arg("delta").scalar();
      if (delta <= 0) d.fail("huber_loss does not support non-positive values for delta.");
      l = e.where(e.cmp_s("lt", z, delta), e.mul_s(e.mul(z, z), 0.5),
                  e.mul_s(e.add_s(z, -0.5 * delta), delta));
    }
  }
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

std::vector<ValueId> bce_with_logits(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), t = d.tensor("target");
  // -log sigmoid(x) = max(-x, 0) + log1p(exp(-|x|))
  ValueId nls = e.add(e.op("aten.clamp_min.default", {Emit::t(e.mul_s(x, -1.0)), Emit::f(0.0)}),
                      e.unary("log1p", e.unary("exp", e.mul_s(e.unary("abs", x), -1.0))));
  if (d.has("pos_weight")) {
    ValueId lw = e.add_s(e.mul(e.add_s(d.tensor("pos_weight"), -1.0), t), 1.0);
    nls = e.mul(lw, nls);
  }
  ValueId l = e.add(e.mul(e.rsub_s(1.0, t), x), nls);
  if (d.has("weight")) l = e.mul(l, d.tensor("weight"));
  return {reduce_loss(e, d, l, d.arg("reduction").i)};
}

/// nll_loss: {per-element loss (the target's shape), total weight}; x is [C] or [N, C, d...]
/// with the classes in dim 1 (dim 0 for a 1-D x), the target the other dims.
std::pair<ValueId, ValueId> nll_parts(Emit& e, const DNode& d, ValueId x, ValueId t) {
  int64_t r = e.dim(x);
  if (r < 1) d.fail("nll_loss: input must have at least one dimension");
  int64_t cdim = r == 1 ? 0 : 1, C = e.sizes(x)[size_t(cdim)];
  std::vector<int64_t> ts = e.sizes(x);
  ts.erase(ts.begin() + cdim);
  if (e.sizes(t) != ts)
    d.fail("nll_loss: expected target of shape " + format_meta(e.meta(t)) + " to match the input " +
           format_meta(e.meta(x)) + " without its class dimension");
  if (is_floating(e.dtype(t))) d.fail("nll_loss: expected a target of class indices (integers)");
  int64_t ignore = d.arg("ignore_index").i;
  ValueId keep = e.cmp_s("ne", t, double(ignore));
  ValueId safe = e.where(keep, t, e.mul_s(e.cast(t, DType::F64), 0.0));
  safe = e.cast(safe, DType::I64);
  ValueId picked =
      e.op("aten.gather.default", {Emit::t(x), Emit::i(cdim), Emit::t(e.unsqueeze(safe, cdim))});
  picked = e.op("aten.squeeze.dims", {Emit::t(picked), Emit::ints({cdim})});
  ValueId w = e.cast(keep, e.dtype(x));
  if (d.has("weight")) {
    ValueId wv = d.tensor("weight");
    if (e.sizes(wv) != std::vector<int64_t>{C})
      d.fail("nll_loss: weight tensor should be defined either for all " + std::to_string(C) +
             " classes or no classes but got weight tensor of shape " + format_meta(e.meta(wv)));
    int64_t n = prod(ts);
    ValueId wt =
        e.op("aten.index_select.default", {Emit::t(wv), Emit::i(0), Emit::t(e.reshape(safe, {n}))});
    w = e.mul(w, e.reshape(wt, ts));
  }
  return {e.mul_s(e.mul(picked, w), -1.0), e.sum(w, {}, false)};
}

ValueId nll_reduce(Emit& e, const DNode& d, ValueId l, ValueId total, int64_t reduction) {
  if (reduction == 0) return l;
  if (reduction == 2) return e.sum(l, {}, false);
  if (reduction == 1) return e.div(e.sum(l, {}, false), total);
  d.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(reduction));
}

/// nll_loss_forward, nll_loss2d_forward: (output, total_weight).
std::vector<ValueId> nll_loss_forward(Emit& e, const DNode& d) {
  auto [l, total] = nll_parts(e, d, d.tensor("self"), d.tensor("target"));
  int64_t red = d.arg("reduction").i;
  if (red == 0) total = e.mul_s(total, 0.0);
  return {nll_reduce(e, d, l, total, red), total};
}

std::vector<ValueId> nll_loss(Emit& e, const DNode& d) {
  auto [l, total] = nll_parts(e, d, d.tensor("self"), d.tensor("target"));
  return {nll_reduce(e, d, l, total, d.arg("reduction").i)};
}

std::vector<ValueId> cross_entropy_loss(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), t = d.tensor("target");
  int64_t r = e.dim(x);
  if (r < 1) d.fail("cross_entropy: input must have at least one dimension");
  int64_t cdim = r == 1 ? 0 : 1, C = e.sizes(x)[size_t(cdim)], red = d.arg("reduction").i;
  double ls = d.arg("label_smoothing").scalar();
  if (ls < 0 || ls > 1)
    d.fail("label_smoothing must be between 0.0 and 1.0. Got: " + std::to_string(ls));
  ValueId logp = e.op("aten._log_softmax.default", {Emit::t(x), Emit::i(cdim), Emit::b(false)});
  std::optional<ValueId> wc; // the weight broadcast along the class dim
  if (d.has("weight")) {
    std::vector<int64_t> s(size_t(r), 1);
    s[size_t(cdim)] = C;
    wc = e.reshape(d.tensor("weight"), s);
  }
  if (is_floating(e.dtype(t))) { // class probabilities
    if (e.sizes(t) != e.sizes(x))
      d.fail("cross_entropy: a probability target must have the input's shape");
    ValueId tt = ls > 0 ? e.add_s(e.mul_s(t, 1.0 - ls), ls / double(C)) : t;
    ValueId prodv = e.mul(logp, tt);
    if (wc) prodv = e.mul(prodv, *wc);
    ValueId l = e.mul_s(e.sum(prodv, {cdim}, false), -1.0);
    if (red == 1)
      return {e.div_s(e.sum(l, {}, false),
                      double(std::max<int64_t>(e.meta(x).numel() / std::max<int64_t>(C, 1), 1)))};
    return {reduce_loss(e, d, l, red)};
  }
  auto [l, total] = nll_parts(e, d, logp, t);
  ValueId nll = nll_reduce(e, d, l, total, red);
  if (ls == 0) return {nll};
  ValueId keep = e.cast(e.cmp_s("ne", t, double(d.arg("ignore_index").i)), e.dtype(x));
  ValueId sm = wc ? e.mul(logp, *wc) : logp;
  ValueId smooth = e.mul(e.mul_s(e.sum(sm, {cdim}, false), -1.0), keep);
  ValueId ret;
  if (red == 0)
    ret = smooth;
  else if (red == 2)
    ret = e.sum(smooth, {}, false);
  else
    ret = e.div(e.sum(smooth, {}, false), wc ? total : e.sum(keep, {}, false));
  return {e.add(e.mul_s(nll, 1.0 - ls), e.mul_s(ret, ls / double(C)))};
}

/// A tensor and the einsum label of each of its dims (letters; ellipsis dims as '0', '1', ...
/// counted from the left of the broadcast ellipsis).
struct Labeled {
  ValueId v;
  std::string labels;
};

/// Sums `x` over the dims whose label `drop` accepts.
template <typename Pred> Labeled sum_labels(Emit& e, Labeled x, Pred drop) {
  std::vector<int64_t> dims;
  std::string keep;
  for (size_t k = 0; k < x.labels.size(); ++k) {
    if (drop(x.labels[k]))
      dims.push_back(int64_t(k));
    else
      keep += x.labels[k];
  }
  if (dims.empty()) return x;
  return {e.sum(x.v, dims, false), keep};
}

/// `x` with its dims in the order of `order` (every label of x, once).
ValueId order_labels(Emit& e, const Labeled& x, const std::string& order) {
  std::vector<int64_t> perm;
  for (char c : order) perm.push_back(int64_t(x.labels.find(c)));
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) identity = identity && perm[k] == int64_t(k);
  return identity ? x.v : e.permute(x.v, perm);
}

/// Contracts a and b over the labels they share that `keep` lacks: a bmm of
/// [batch, left, contracted] by [batch, contracted, right] (floats), or a broadcast product and a
/// sum (integers).
Labeled contract_pair(Emit& e, const DNode& d, Labeled a, Labeled b, const std::string& keep) {
  auto in = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
  // Labels only one side has and nothing later needs are summed first.
  a = sum_labels(e, a, [&](char c) { return !in(keep, c) && !in(b.labels, c); });
  b = sum_labels(e, b, [&](char c) { return !in(keep, c) && !in(a.labels, c); });
  std::string batch, contracted, left, right;
  for (char c : a.labels) {
    if (in(b.labels, c))
      (in(keep, c) ? batch : contracted) += c;
    else
      left += c;
  }
  for (char c : b.labels)
    if (!in(a.labels, c)) right += c;
  std::map<char, int64_t> size;
  for (const Labeled* x : {&a, &b})
    for (size_t k = 0; k < x->labels.size(); ++k) {
      int64_t s = e.sizes(x->v)[k];
      auto [it, fresh] = size.emplace(x->labels[k], s);
      if (!fresh && it->second != s) {
        if (it->second != 1 && s != 1)
          d.fail(
              std::string("einsum(): operands do not broadcast with remapped shapes at label '") +
              x->labels[k] + "'");
        it->second = std::max(it->second, s);
      }
    }
  auto sizes_of = [&](const std::string& ls) {
    std::vector<int64_t> s;
    for (char c : ls) s.push_back(size[c]);
    return s;
  };
  auto expanded = [&](const Labeled& x, const std::string& order) {
    ValueId v = order_labels(e, x, order);
    std::vector<int64_t> want = sizes_of(order);
    return e.sizes(v) == want ? v : e.expand(v, want);
  };
  std::string out = batch + left + right;
  if (!is_floating(e.dtype(a.v)) || !is_floating(e.dtype(b.v))) {
    // Integers: align every label, multiply with broadcasting, sum the contracted ones.
    std::string all = batch + left + right + contracted;
    auto aligned = [&](const Labeled& x) {
      std::string present;
      for (char c : all)
        if (in(x.labels, c)) present += c;
      ValueId v = order_labels(e, x, present);
      std::vector<int64_t> s;
      for (char c : all) s.push_back(in(x.labels, c) ? size[c] : 1);
      std::vector<int64_t> have;
      for (char c : all)
        if (in(x.labels, c)) have.push_back(e.sizes(v)[present.find(c)]);
      std::vector<int64_t> shaped;
      size_t p = 0;
      for (char c : all) shaped.push_back(in(x.labels, c) ? have[p++] : 1);
      return e.reshape(v, shaped);
    };
    ValueId prodv = e.mul(aligned(a), aligned(b));
    Labeled r{prodv, all};
    return sum_labels(e, r, [&](char c) { return in(contracted, c); });
  }
  int64_t B = prod(sizes_of(batch)), L = prod(sizes_of(left)), R = prod(sizes_of(right)),
          C = prod(sizes_of(contracted));
  ValueId a3 = e.reshape(expanded(a, batch + left + contracted), {B, L, C});
  ValueId b3 = e.reshape(expanded(b, batch + contracted + right), {B, C, R});
  return {e.reshape(e.bmm(a3, b3), sizes_of(out)), out};
}

std::vector<ValueId> einsum(Emit& e, const DNode& d) {
  std::string eq;
  for (char c : d.arg("equation").s)
    if (c != ' ') eq += c;
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  std::vector<std::string> specs;
  for (size_t p = 0;;) {
    size_t q = lhs.find(',', p);
    specs.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (specs.size() != ts.size())
    d.fail("einsum(): " + std::to_string(specs.size()) + " operands in the equation, " +
           std::to_string(ts.size()) + " tensors given");
  // Ellipsis dims: '0' + k for the k-th of the broadcast ellipsis (right-aligned).
  int64_t ell = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    size_t dots = specs[i].find("...");
    if (dots == std::string::npos) continue;
    int64_t letters = int64_t(specs[i].size()) - 3;
    ell = std::max(ell, e.dim(ts[i]) - letters);
  }
  auto expand_spec = [&](const std::string& s, int64_t rank) {
    size_t dots = s.find("...");
    std::string r;
    for (size_t k = 0; k < s.size(); ++k) {
      if (k == dots) {
        int64_t n = rank - (int64_t(s.size()) - 3);
        for (int64_t j = ell - n; j < ell; ++j) r += char('0' + j);
        k += 2;
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(s[k])))
        d.fail(std::string("einsum(): invalid subscript given in the equation string: '") + s[k] +
               "'");
      r += s[k];
    }
    return r;
  };
  if (ell > 10) d.fail("einsum(): at most 10 ellipsis dimensions are supported");
  std::vector<Labeled> ops;
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string ls = expand_spec(specs[i], e.dim(ts[i]));
    if (int64_t(ls.size()) != e.dim(ts[i]))
      d.fail("einsum(): the number of subscripts in the equation (" + std::to_string(ls.size()) +
             ") does not match the number of dimensions (" + std::to_string(e.dim(ts[i])) +
             ") for operand " + std::to_string(i));
    Labeled x{ts[i], ls};
    // A label repeated within an operand takes the diagonal (moved last by diagonal()).
    for (bool again = true; again;) {
      again = false;
      for (size_t p = 0; p < x.labels.size() && !again; ++p) {
        size_t q = x.labels.find(x.labels[p], p + 1);
        if (q == std::string::npos) continue;
        char c = x.labels[p];
        x.v = e.op("aten.diagonal.default",
                   {Emit::t(x.v), Emit::i(0), Emit::i(int64_t(p)), Emit::i(int64_t(q))});
        x.labels.erase(q, 1);
        x.labels.erase(p, 1);
        x.labels += c;
        again = true;
      }
    }
    ops.push_back(x);
  }
  if (arrow != std::string::npos) {
    rhs = expand_spec(eq.substr(arrow + 2), int64_t(eq.substr(arrow + 2).size()) - 3 + ell);
  } else { // implicit: the ellipsis, then the labels seen once, sorted
    std::map<char, int> seen;
    for (const std::string& s : specs)
      for (char c : s)
        if (std::isalpha(static_cast<unsigned char>(c))) ++seen[c];
    for (int64_t j = 0; j < ell; ++j) rhs += char('0' + j);
    std::string once;
    for (auto [c, n] : seen)
      if (n == 1) once += c;
    std::sort(once.begin(), once.end(), [](char x, char y) {
      // PyTorch orders upper case before lower case (ASCII).
      return x < y;
    });
    rhs += once;
  }
  for (char c : rhs) {
    bool found = false;
    for (const Labeled& x : ops) found = found || x.labels.find(c) != std::string::npos;
    if (!found && !std::isdigit(static_cast<unsigned char>(c)))
      d.fail(std::string("einsum(): output subscript ") + c +
             " does not appear in the equation for any input operand");
  }
  Labeled acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::string keep = rhs;
    for (size_t j = i + 1; j < ops.size(); ++j) keep += ops[j].labels;
    acc = contract_pair(e, d, acc, ops[i], keep);
  }
  acc = sum_labels(e, acc, [&](char c) { return rhs.find(c) == std::string::npos; });
  // Ellipsis labels of the output that no operand has (all operands had fewer dims) are size 1.
  std::string present;
  for (char c : rhs)
    if (acc.labels.find(c) != std::string::npos) present += c;
  ValueId r = order_labels(e, acc, present);
  if (present.size() != rhs.size()) {
    std::vector<int64_t> s;
    size_t p = 0;
    for (char c : rhs) s.push_back(acc.labels.find(c) != std::string::npos ? e.sizes(r)[p++] : 1);
    r = e.reshape(r, s);
  }
  if (r == ts[0]) r = e.op("aten.alias.default", {Emit::t(r)});
  // einsum's result is a new tensor, never a view of an operand.
  return {e.meta(r).is_contiguous() ? r : contiguous_copy(e, r)};
}

/// _trilinear: the three operands unsqueezed at their expand dims, multiplied (broadcast) and
/// summed over sumdim (bilinear's core form).
std::vector<ValueId> trilinear(Emit& e, const DNode& d) {
  ValueId xs[3] = {d.tensor("i1"), d.tensor("i2"), d.tensor("i3")};
  const char* names[3] = {"expand1", "expand2", "expand3"};
  for (int k = 0; k < 3; ++k)
    for (int64_t dim : d.arg(names[k]).ints) xs[k] = e.unsqueeze(xs[k], dim);
  if (e.dim(xs[0]) != e.dim(xs[1]) || e.dim(xs[0]) != e.dim(xs[2]))
    d.fail("_trilinear: the expanded operands differ in rank");
  ValueId p = e.mul(e.mul(xs[0], xs[1]), xs[2]);
  std::vector<int64_t> dims;
  for (int64_t s : d.arg("sumdim").ints) dims.push_back(wrap(s, e.dim(p)));
  if (dims.empty()) return {p};
  return {e.sum(p, dims, false)};
}

/// empty_permuted: a tensor laid out in `physical_layout` order (its values unspecified, here
/// zeros), seen in logical order.
std::vector<ValueId> empty_permuted(Emit& e, const DNode& d) {
  const std::vector<int64_t>& size = d.arg("size").ints;
  const std::vector<int64_t>& layout = d.arg("physical_layout").ints;
  if (layout.size() != size.size())
    d.fail("empty_permuted: the physical layout names " + std::to_string(layout.size()) +
           " dims, the size " + std::to_string(size.size()));
  std::vector<int64_t> phys, inverse(size.size(), -1);
  for (size_t k = 0; k < layout.size(); ++k) {
    int64_t l = layout[k];
    if (l < 0 || l >= int64_t(size.size()) || inverse[size_t(l)] >= 0)
      d.fail("empty_permuted: physical_layout is not a permutation");
    phys.push_back(size[size_t(l)]);
    inverse[size_t(l)] = int64_t(k);
  }
  TensorMeta like;
  like.dtype = d.has("dtype") ? d.arg("dtype").dtype() : DType::F32;
  if (d.has("device")) like.device = d.arg("device").device;
  ValueId z = e.zeros(phys, like);
  return {size.empty() ? z : e.permute(z, inverse)};
}

/// A transposed convolution as the ordinary convolution it is the input gradient of
/// (conv_input_grad): out = (in - 1) s - 2 p + d (k - 1) + output_padding + 1 per spatial dim.
ValueId transposed_conv(Emit& e, const DNode& d, ValueId x, ValueId w, const Arg* bias,
                        std::vector<int64_t> s, std::vector<int64_t> p, std::vector<int64_t> op,
                        std::vector<int64_t> dl, int64_t groups) {
  std::vector<int64_t> xs = e.sizes(x), ws = e.sizes(w);
  if (ws.size() < 3 || xs.size() != ws.size())
    d.fail("transposed convolution: expected a batched input of the weight's rank " +
           std::to_string(ws.size()) + ", got " + format_meta(e.meta(x)));
  size_t sp = ws.size() - 2;
  auto fit = [&](std::vector<int64_t>& v, const char* what) {
    if (v.size() == 1) v.assign(sp, v[0]);
    if (v.size() != sp)
      d.fail(std::string("transposed convolution: ") + what + " has the wrong length");
  };
  fit(s, "stride");
  fit(p, "padding");
  fit(op, "output_padding");
  fit(dl, "dilation");
  if (groups < 1 || xs[1] != ws[0] || ws[0] % groups != 0)
    d.fail("transposed convolution: the input has " + std::to_string(xs[1]) +
           " channels, the weight " + format_meta(e.meta(w)) + " with groups " +
           std::to_string(groups));
  std::vector<int64_t> out = {xs[0], ws[1] * groups};
  for (size_t i = 0; i < sp; ++i) {
    if (op[i] >= std::max(s[i], dl[i]) || op[i] < 0)
      d.fail("transposed convolution: output padding must be smaller than either stride or "
             "dilation");
    out.push_back((xs[2 + i] - 1) * s[i] - 2 * p[i] + dl[i] * (ws[2 + i] - 1) + op[i] + 1);
    if (out.back() <= 0) d.fail("transposed convolution: the output size is too small");
  }
  ValueId y = conv_input_grad(e, x, w, out, s, p, dl, groups);
  if (bias && !bias->is_none()) {
    std::vector<int64_t> bs(out.size(), 1);
    bs[1] = out[1];
    y = e.add(y, e.reshape(bias->tensor, bs));
  }
  return y;
}

/// convolution with transposed=True; an ordinary convolution stays as it is.
/// A 3-D convolution as kt 2-D convolutions, one per temporal kernel offset, with the output
/// frames folded into the batch: y[n, :, t] = sum over dt of conv2d(x[n, :, t·st + dt·dt_dil -
/// pt], w[:, :, dt]). 2-D convolutions run on cuDNN (CUDA), 3-D ones would be im2col and one GEMM
/// there; inductor for the CPU keeps 3-D ones whole for oneDNN in inference
/// (DecomposeOptions::keep_conv3d). The bias goes to the first; the partial sums and the layout
/// back to [N, K, T', H', W'] are one pointwise kernel. Kept (empty) when it cannot apply.
std::vector<ValueId> conv3d_as_2d(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), w = d.tensor("weight");
  const std::vector<int64_t> xs = e.sizes(x), ws = e.sizes(w);
  if (xs.size() != 5 || ws.size() != 5) return {};
  auto three = [&](const char* name) {
    std::vector<int64_t> v = d.arg(name).ints;
    if (v.size() == 1) v.assign(3, v[0]);
    return v;
  };
  const std::vector<int64_t> st = three("stride"), pd = three("padding"), dl = three("dilation");
  const int64_t groups = d.arg("groups").i;
  if (st.size() != 3 || pd.size() != 3 || dl.size() != 3 || groups < 1 || st[0] < 1 || dl[0] < 1 ||
      pd[0] < 0)
    return {};
  const int64_t N = xs[0], C = xs[1], T = xs[2], H = xs[3], W = xs[4];
  const int64_t K = ws[0], KT = ws[2];
  const int64_t span = dl[0] * (KT - 1) + 1, Tp = T + 2 * pd[0];
  if (Tp < span || N * C * H * W == 0 || K == 0) return {};
  const int64_t To = (Tp - span) / st[0] + 1;
  ValueId xp = pd[0] > 0 ? e.pad_dim(x, 2, pd[0], pd[0]) : x;
  ValueId acc = kNoValue;
  for (int64_t dt = 0; dt < KT; ++dt) {
    const int64_t start = dt * dl[0];
    ValueId frames = e.slice(xp, 2, start, start + (To - 1) * st[0] + 1, st[0]);
    ValueId batch = e.reshape(e.permute(frames, {0, 2, 1, 3, 4}), {N * To, C, H, W});
    ValueId wk = e.reshape(e.slice(w, 2, dt, dt + 1), {K, ws[1], ws[3], ws[4]});
    ValueId y =
        e.op("aten.convolution.default",
             {Emit::t(batch), Emit::t(wk),
              dt == 0 ? CallArg{"", d.arg("bias")} : CallArg{"", Arg::none()},
              Emit::ints({st[1], st[2]}), Emit::ints({pd[1], pd[2]}), Emit::ints({dl[1], dl[2]}),
              Emit::b(false), Emit::ints({0, 0}), Emit::i(groups)});
    acc = acc == kNoValue ? y : e.add(acc, y);
  }
  const std::vector<int64_t> ys = e.sizes(acc);
  ValueId out = e.permute(e.reshape(acc, {N, To, K, ys[2], ys[3]}), {0, 2, 1, 3, 4});
  return {e.op(
      "aten.clone.default",
      {Emit::t(out), Emit::kw("memory_format", Arg::of_memory_format(MemoryFormat::Contiguous))})};
}

/// A convolution without the kernel taps that only ever read padding. Tap j of a spatial dim
/// (kernel k, dilation dl, padding p, stride s, input H, O outputs) reads o·s + j·dl - p for
/// o in [0, O); when that never lands in [0, H), the tap multiplies zeros. Atrous convolutions on
/// small maps are such (DeepLab's ASPP: a 3x3 kernel of dilation 24 or 36 on a 14x14 map is its
/// centre tap alone, a 1x1 convolution with a ninth of the work). The live taps of a dim are
/// contiguous, [a, b]; the convolution becomes one with the weight sliced to them and padding
/// p - a·dl (dilation 1 for a single tap), kept only when that padding is not negative and gives
/// the same O. Empty when no tap is dead or the rewrite does not apply.
std::vector<ValueId> conv_dead_taps(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), w = d.tensor("weight");
  const std::vector<int64_t> xs = e.sizes(x), ws = e.sizes(w);
  if (xs.size() < 3 || xs.size() != ws.size()) return {};
  const size_t sp = ws.size() - 2;
  auto per_dim = [&](const char* name) {
    std::vector<int64_t> v = d.arg(name).ints;
    if (v.size() == 1) v.assign(sp, v[0]);
    return v;
  };
  std::vector<int64_t> st = per_dim("stride"), pd = per_dim("padding"), dl = per_dim("dilation");
  if (st.size() != sp || pd.size() != sp || dl.size() != sp) return {};
  std::vector<int64_t> lo(sp), hi(sp), npd(sp), ndl(sp);
  bool dead = false;
  for (size_t i = 0; i < sp; ++i) {
    const int64_t H = xs[2 + i], k = ws[2 + i], s = st[i], p = pd[i], dil = dl[i];
    if (H < 1 || k < 1 || s < 1 || dil < 1 || p < 0) return {};
    const int64_t O = (H + 2 * p - dil * (k - 1) - 1) / s + 1;
    if (O < 1) return {};
    // Tap j is live when some output reads inside: j·dl - p < H and (O - 1)·s + j·dl - p >= 0.
    int64_t a = k, b = -1;
    for (int64_t j = 0; j < k; ++j)
      if (j * dil - p < H && (O - 1) * s + j * dil - p >= 0) a = std::min(a, j), b = std::max(b, j);
    if (b < a) return {}; // every tap reads padding: leave it to the op (zeros plus the bias)
    const int64_t k2 = b - a + 1, p2 = p - a * dil, dil2 = k2 == 1 ? 1 : dil;
    if (p2 < 0 || (H + 2 * p2 - dil2 * (k2 - 1) - 1) / s + 1 != O) return {};
    lo[i] = a, hi[i] = b, npd[i] = p2, ndl[i] = dil2;
    dead = dead || k2 < k;
  }
  if (!dead) return {};
  ValueId wk = w;
  for (size_t i = 0; i < sp; ++i)
    if (hi[i] - lo[i] + 1 < ws[2 + i]) wk = e.slice(wk, int64_t(2 + i), lo[i], hi[i] + 1);
  return {e.op("aten.convolution.default",
               {Emit::t(x), Emit::t(wk), CallArg{"", d.arg("bias")}, Emit::ints(st),
                Emit::ints(npd), Emit::ints(ndl), Emit::b(false),
                Emit::ints(std::vector<int64_t>(sp, 0)), Emit::i(d.arg("groups").i)})};
}

/// convolution: the transposed form as a convolution of the dilated input; one with kernel taps
/// that only read padding without them (conv_dead_taps); a 3-D one as 2-D convolutions
/// (conv3d_as_2d); other convolutions stay.
std::vector<ValueId> convolution_transposed(Emit& e, const DNode& d) {
  if (!d.arg("transposed").b) {
    if (std::vector<ValueId> r = conv_dead_taps(e, d); !r.empty()) return r;
    return conv3d_as_2d(e, d);
  }
  return {transposed_conv(e, d, d.tensor("input"), d.tensor("weight"), &d.arg("bias"),
                          d.arg("stride").ints, d.arg("padding").ints, d.arg("output_padding").ints,
                          d.arg("dilation").ints, d.arg("groups").i)};
}

/// conv_transpose1d/2d/3d: a convolution with transposed=True (an unbatched input gets a batch
/// of one).
std::vector<ValueId> conv_transpose(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), w = d.tensor("weight");
  bool unbatched = e.dim(x) == e.dim(w) - 1;
  if (unbatched) x = e.unsqueeze(x, 0);
  ValueId y = e.op("aten.convolution.default", {Emit::t(x),
                                                Emit::t(w),
                                                {"", d.arg("bias")},
                                                {"", d.arg("stride")},
                                                {"", d.arg("padding")},
                                                {"", d.arg("dilation")},
                                                Emit::b(true),
                                                {"", d.arg("output_padding")},
                                                {"", d.arg("groups")}});
  if (unbatched) y = e.op("aten.squeeze.dims", {Emit::t(y), Emit::ints({0})});
  return {y};
}

// ---- nn ops of the core opset and of torch.nn.functional built from index ops (scatter_reduce,
// index_select, gather), so that they run and differentiate on every backend.

/// An int64 tensor of `sizes` filled with `v`, on `dev`.
ValueId full_i64(Emit& e, std::vector<int64_t> sizes, int64_t v, const Device& dev) {
  std::vector<CallArg> call = {Emit::ints(std::move(sizes)), Emit::i(v),
                               Emit::kw("dtype", Arg::of_dtype(DType::I64))};
  if (dev != Device{}) call.push_back(Emit::kw("device", Arg::of_device(dev)));
  return e.op("aten.full.default", std::move(call));
}

/// A tensor like `like` of `sizes` filled with the float `v`.
ValueId full_like_f(Emit& e, std::vector<int64_t> sizes, double v, const TensorMeta& like) {
  std::vector<CallArg> call = {Emit::ints(std::move(sizes)), Emit::f(v),
                               Emit::kw("dtype", Arg::of_dtype(like.dtype))};
  if (like.device != Device{}) call.push_back(Emit::kw("device", Arg::of_device(like.device)));
  return e.op("aten.full.default", std::move(call));
}

// ---- Tensor, shape and selection ops of the single-op corpus ----

std::vector<ValueId> subtract(Emit& e, const DNode& d) {
  return {e.op("aten.sub.Tensor", {Emit::t(d.tensor("self")), Emit::t(d.tensor("other")),
                                   Emit::kw("alpha", d.arg("alpha"))})};
}

/// A full tensor of `sizes` holding `v`, of dtype `t` on `like`'s device.
ValueId full_of(Emit& e, std::vector<int64_t> sizes, double v, DType t, const TensorMeta& like) {
  std::vector<CallArg> call = {Emit::ints(std::move(sizes)), Emit::f(v),
                               Emit::kw("dtype", Arg::of_dtype(t))};
  if (like.device != Device{}) call.push_back(Emit::kw("device", Arg::of_device(like.device)));
  return e.op("aten.full.default", std::move(call));
}

ValueId scatter_reduce(Emit& e, ValueId self, int64_t dim, ValueId index, ValueId src,
                       const char* how, bool include_self) {
  return e.op("aten.scatter_reduce.two", {Emit::t(self),
                                          Emit::i(dim),
                                          Emit::t(index),
                                          Emit::t(src),
                                          {"", Arg::of_string(how)},
                                          Emit::kw("include_self", Arg::of_bool(include_self))});
}

ValueId index_select(Emit& e, ValueId x, int64_t dim, ValueId index) {
  return e.op("aten.index_select.default", {Emit::t(x), Emit::i(dim), Emit::t(index)});
}

/// For each position 0..n-1 (the last dim of the result), the number of `starts` (along their
/// last dim, batched over the leading dims) at or before it, less one: the segment (bag) the
/// position falls in when segments begin at `starts` (-1 before the first).
ValueId segment_of(Emit& e, ValueId starts, int64_t n) {
  const Device dev = e.meta(starts).device;
  ValueId k = e.arange(0, n, 1, dev);
  ValueId s = e.unsqueeze(e.cast(starts, DType::I64), e.dim(starts) - 1); // [..., 1, S]
  ValueId le = e.cast(e.cmp("le", s, e.unsqueeze(k, 1)), DType::I64);     // [..., n, S]
  return e.op("aten.sub.Scalar", {Emit::t(e.sum(le, {e.dim(le) - 1}, false)), Emit::i(1)});
}

/// _embedding_bag and its export spellings: the rows of `weight` that `indices` name, reduced per
/// bag (sum, mean or max) with index_select and scatter_reduce. A bag runs from its offset to the
/// next one (the end of indices for the last bag unless include_last_offset); indices equal to
/// padding_idx (>= 0) count in no bag; an empty bag gives zeros. Outputs as PyTorch's CPU kernel:
/// output, offset2bag (empty on its sum fast path: f32/f16 weight, no padding_idx), bag_size (the
/// non-padding indices per bag for mean and max, zeros for sum), max_indices (max: the weight row
/// of each max, the first of equal ones, 0 for an empty bag; mean: bag_size; sum: zeros).
std::vector<ValueId> embedding_bag(Emit& e, const DNode& d) {
  ValueId w = d.tensor("weight"), ids = d.tensor("indices"), offs = d.tensor("offsets");
  auto is_index = [](DType t) { return t == DType::I64 || t == DType::I32; };
  if (e.dim(w) != 2) d.fail("embedding_bag: weight must be 2-D, got " + format_meta(e.meta(w)));
  if (e.dim(ids) != 1 || !is_index(e.dtype(ids)))
    d.fail("embedding_bag: indices must be a 1-D int64 or int32 tensor, got " +
           format_meta(e.meta(ids)));
  if (e.dim(offs) != 1 || !is_index(e.dtype(offs)))
    d.fail("embedding_bag: offsets must be a 1-D int64 or int32 tensor, got " +
           format_meta(e.meta(offs)));
  if (!is_floating(e.dtype(w)))
    d.fail("embedding_bag: expected weight to be floating point type, got " +
           format_meta(e.meta(w)));
  const int64_t mode = d.arg("mode").i;
  if (mode < 0 || mode > 2) d.fail("embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max)");
  const bool last = d.arg("include_last_offset").b;
  int64_t pad = -1;
  if (d.n.schema->index_of("padding_idx") >= 0 && d.has("padding_idx"))
    pad = d.arg("padding_idx").i;
  const bool psw = d.has("per_sample_weights");
  if (psw && mode != 0) d.fail("embedding_bag: per_sample_weights only supported with mode='sum'");
  const int64_t K = e.sizes(ids)[0], D = e.sizes(w)[1], Bo = e.sizes(offs)[0];
  if (last && Bo < 1) d.fail("embedding_bag: include_last_offset: numBags should be at least 1");
  const int64_t B = last ? Bo - 1 : Bo;
  if (psw && (e.dim(d.tensor("per_sample_weights")) != 1 ||
              e.sizes(d.tensor("per_sample_weights"))[0] != K))
    d.fail("embedding_bag: expected per_sample_weights to be a 1-D tensor of " + std::to_string(K) +
           " elements, got " + format_meta(e.meta(d.tensor("per_sample_weights"))));
  const Device dev = e.meta(w).device;
  const DType odt = e.dtype(offs);
  ValueId ids64 = e.cast(ids, DType::I64);
  ValueId starts = B == Bo ? offs : e.slice(offs, 0, 0, B);
  ValueId bag = segment_of(e, starts, K); // offset2bag, [K]
  // The bag each index adds into: its own, or the spare row B (padding, before the first bag).
  ValueId keep = e.cmp_s("ge", bag, 0);
  if (pad >= 0)
    keep = e.op("aten.logical_and.default",
                {Emit::t(keep), Emit::t(e.cmp_s("ne", ids64, double(pad)))});
  ValueId target = e.where(keep, bag, full_i64(e, {K}, B, dev));
  ValueId count = scatter_reduce(e, full_i64(e, {B + 1}, 0, dev), 0, target,
                                 full_i64(e, {K}, 1, dev), "sum", true);
  ValueId bag_size = e.slice(count, 0, 0, B);
  ValueId rows = index_select(e, w, 0, ids64); // [K, D]
  if (psw) rows = e.mul(rows, e.unsqueeze(e.cast(d.tensor("per_sample_weights"), e.dtype(w)), 1));
  ValueId idx2 = e.expand(e.unsqueeze(target, 1), {K, D});
  ValueId out, max_indices;
  if (mode == 2) {
    // The max of each (bag, dim) from scatter_reduce finds the first index holding it (PyTorch
    // keeps the first of equal ones); the output gathers that row, so that it differentiates.
    ValueId m = scatter_reduce(e, e.zeros({B + 1, D}, e.meta(w)), 0, idx2, rows, "amax", false);
    ValueId hit = e.cmp("eq", rows, index_select(e, m, 0, target));
    ValueId pos = e.where(hit, e.expand(e.unsqueeze(e.arange(0, K, 1, dev), 1), {K, D}),
                          full_i64(e, {K, D}, K, dev));
    ValueId first = e.slice(
        scatter_reduce(e, full_i64(e, {B + 1, D}, K, dev), 0, idx2, pos, "amin", true), 0, 0, B);
    if (K == 0) {
      out = e.zeros({B, D}, e.meta(w));
      max_indices = full_i64(e, {B, D}, 0, dev);
    } else {
      ValueId found = e.cmp_s("lt", first, double(K));
      ValueId safe = e.op("aten.clamp_max.default", {Emit::t(first), Emit::i(K - 1)});
      out = e.where_s(found,
                      e.op("aten.gather.default", {Emit::t(rows), Emit::i(0), Emit::t(safe)}), 0.0);
      ValueId word = e.reshape(index_select(e, ids64, 0, e.reshape(safe, {B * D})), {B, D});
      max_indices = e.where(found, word, full_i64(e, {B, D}, 0, dev));
    }
  } else {
    ValueId s = scatter_reduce(e, e.zeros({B + 1, D}, e.meta(w)), 0, idx2, rows, "sum", true);
    out = e.slice(s, 0, 0, B);
    if (mode == 1) {
      ValueId n = e.op("aten.clamp_min.default", {Emit::t(bag_size), Emit::i(1)});
      out = e.div(out, e.unsqueeze(e.cast(n, e.dtype(w)), 1));
      max_indices = bag_size;
    } else {
      bag_size = max_indices = full_i64(e, {B}, 0, dev);
    }
  }
  const bool fast_sum =
      mode == 0 && (e.dtype(w) == DType::F32 || e.dtype(w) == DType::F16) && pad < 0;
  ValueId offset2bag = fast_sum ? full_i64(e, {0}, 0, dev) : bag;
  return {out, e.cast(offset2bag, odt), e.cast(bag_size, odt), e.cast(max_indices, odt)};
}

/// max_unpool2d / max_unpool3d: zeros of the output size with each input value scattered to
/// the flat spatial position its index names.
std::vector<ValueId> max_unpool(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), idx = d.tensor("indices");
  const std::vector<int64_t>& os = d.arg("output_size").ints;
  const int64_t S = int64_t(os.size()), R = e.dim(x);
  const std::string name = S == 3 ? "max_unpool3d" : "max_unpool2d";
  if (R != S + 1 && R != S + 2)
    d.fail(name + ": expected a " + std::to_string(S + 1) + "-D or " + std::to_string(S + 2) +
           "-D input, got " + format_meta(e.meta(x)));
  if (e.sizes(idx) != e.sizes(x) || e.dtype(idx) != DType::I64)
    d.fail(name + ": expected indices of int64 and the input's shape, got " +
           format_meta(e.meta(idx)) + " for input " + format_meta(e.meta(x)));
  std::vector<int64_t> xs = e.sizes(x);
  std::vector<int64_t> lead(xs.begin(), xs.end() - S);
  int64_t in_plane = prod(xs, size_t(R - S)), out_plane = 1;
  for (int64_t v : os) {
    if (v < 0) d.fail(name + ": output_size must not be negative");
    out_plane *= v;
  }
  std::vector<int64_t> flat_in = lead, flat_out = lead, out = lead;
  flat_in.push_back(in_plane);
  flat_out.push_back(out_plane);
  out.insert(out.end(), os.begin(), os.end());
  int64_t dim = int64_t(lead.size());
  ValueId y =
      e.op("aten.scatter.src", {Emit::t(e.zeros(flat_out, e.meta(x))), Emit::i(dim),
                                Emit::t(e.reshape(idx, flat_in)), Emit::t(e.reshape(x, flat_in))});
  return {e.reshape(y, out)};
}

std::vector<ValueId> pdist(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) != 2)
    d.fail("pdist only supports 2D tensors, got: " + std::to_string(e.dim(x)) + "D");
  if (d.arg("p").f < 0) d.fail("pdist only supports non-negative p values");
  return {e.op("aten._pdist_forward.default", {Emit::t(x), Emit::f(d.arg("p").f)})};
}

/// grid_sampler: grid_sampler_2d or grid_sampler_3d by the input's rank.
std::vector<ValueId> grid_sampler(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  if (e.dim(x) != 4 && e.dim(x) != 5)
    d.fail("grid_sampler: expected a 4-D or 5-D input, got " + format_meta(e.meta(x)));
  std::vector<CallArg> call;
  for (const Arg& a : d.args) call.push_back({"", a});
  return {e.op(e.dim(x) == 4 ? "aten.grid_sampler_2d.default" : "aten.grid_sampler_3d.default",
               std::move(call))};
}

/// A 0/1 mask (the input's dtype) of Bernoulli(1 - p) draws of `sizes`, from native_dropout so
/// that every backend draws the same numbers.
ValueId keep_mask(Emit& e, ValueId x, std::vector<int64_t> sizes, double p) {
  ValueId ones = full_like_f(e, std::move(sizes), 1.0, e.meta(x));
  std::vector<ValueId> r =
      e.call("aten.native_dropout.default", {Emit::t(ones), Emit::f(p), {"", Arg::of_bool(true)}});
  return e.cast(r[1], e.dtype(x));
}

/// dropout, feature_dropout, alpha_dropout and feature_alpha_dropout: ATen's _dropout_impl. The
/// feature forms draw one mask value per (batch, channel); the alpha forms keep the
/// self-normalizing mean and variance: x * m * a + (m - 1) * alpha * a + alpha * a * p with
/// a = 1 / sqrt((alpha^2 p + 1)(1 - p)).
std::vector<ValueId> dropout(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input");
  const double p = d.arg("p").f;
  const std::string& t = d.n.target;
  const bool feature = t.find("feature") != std::string::npos;
  const bool alpha = t.find("alpha") != std::string::npos;
  if (p < 0 || p > 1)
    d.fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!d.arg("train").b || p == 0 || e.meta(x).numel() == 0)
    return {e.op("aten.clone.default", {Emit::t(x)})};
  if (!is_floating(e.dtype(x))) d.fail("dropout in training mode needs a floating-point input");
  if (p == 1) return {e.mul_s(x, 0.0)};
  std::vector<int64_t> ns = e.sizes(x);
  if (feature) {
    if (ns.size() < 2) d.fail("feature dropout requires at least 2 dimensions in the input");
    for (size_t i = 2; i < ns.size(); ++i) ns[i] = 1;
  }
  if (!feature && !alpha)
    return {e.call("aten.native_dropout.default",
                   {Emit::t(x), Emit::f(p), {"", Arg::of_bool(true)}})[0]};
  ValueId m = keep_mask(e, x, ns, p);
  if (!alpha) return {e.mul(x, e.div_s(m, 1 - p))};
  const double kAlpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
  ValueId b = e.add_s(e.mul_s(e.add_s(m, -1.0), kAlpha * a), kAlpha * a * p);
  return {e.add(e.mul(x, e.mul_s(m, a)), b)};
}

/// rrelu / rrelu_with_noise_functional: in training, x * r for x <= 0 with r uniform in
/// [lower, upper) (rand_like), the noise r there and 1 elsewhere; in eval, leaky_relu with slope
/// (lower + upper) / 2 and the noise unchanged.
std::vector<ValueId> rrelu(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  const double lo = d.arg("lower").scalar(), hi = d.arg("upper").scalar();
  const bool functional = d.n.schema->index_of("noise") >= 0;
  if (lo > hi) d.fail("rrelu: lower bound must be less than or equal to upper bound");
  if (!is_floating(e.dtype(x)))
    d.fail("rrelu: expected a floating-point input, got " + format_meta(e.meta(x)));
  if (!d.arg("training").b) {
    ValueId y = e.op("aten.leaky_relu.default", {Emit::t(x), Emit::f((lo + hi) / 2)});
    if (!functional) return {y};
    return {y, e.op("aten.clone.default", {Emit::t(d.tensor("noise"))})};
  }
  ValueId u = e.op("aten.rand_like.default", {Emit::t(x)});
  ValueId r = e.add_s(e.mul_s(u, hi - lo), lo);
  ValueId neg = e.cmp_s("le", x, 0.0);
  ValueId y = e.where(neg, e.mul(x, r), x);
  if (!functional) return {y};
  ValueId noise = e.where_s(neg, r, 1.0);
  ValueId nz = d.tensor("noise");
  if (e.sizes(nz) != e.sizes(x)) noise = e.reshape(noise, e.sizes(nz));
  return {y, e.cast(noise, e.dtype(nz))};
}

/// multi_margin_loss: per sample, the mean over the classes j != y of
/// max(0, margin - x[y] + x[j])^p (times weight[y]), as PyTorch's decomposition.
std::vector<ValueId> multi_margin_loss(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), y = d.tensor("target");
  const double p = d.arg("p").scalar();
  if (p != 1 && p != 2) d.fail("multi_margin_loss: only p == 1 and p == 2 supported");
  if (e.dim(x) > 2)
    d.fail("multi_margin_loss: expected a 0-D, 1-D or 2-D input, got " + format_meta(e.meta(x)));
  std::vector<int64_t> xs = e.sizes(x);
  const int64_t N = e.dim(x) == 2 ? xs[0] : 1, C = e.dim(x) == 0 ? 1 : xs.back();
  if (e.meta(y).numel() != N || e.dim(y) > 1)
    d.fail("multi_margin_loss: inconsistent target size " + format_meta(e.meta(y)) + " for input " +
           format_meta(e.meta(x)));
  ValueId x2 = e.reshape(x, {N, C});
  ValueId idx = e.reshape(e.cast(y, DType::I64), {N, 1});
  ValueId u = e.op("aten.gather.default", {Emit::t(x2), Emit::i(1), Emit::t(idx)});
  ValueId z = e.op("aten.clamp_min.default",
                   {Emit::t(e.add(e.rsub_s(d.arg("margin").scalar(), u), x2)), Emit::f(0.0)});
  if (p == 2) z = e.mul(z, z);
  if (d.has("weight"))
    z = e.mul(z, e.reshape(index_select(e, d.tensor("weight"), 0, e.reshape(idx, {N})), {N, 1}));
  ValueId other = e.cmp("ne", e.unsqueeze(e.arange(0, C, 1, e.meta(x).device), 0), idx);
  z = e.where_s(other, z, 0.0);
  const int64_t red = d.arg("reduction").i;
  if (red == 0) return {e.reshape(e.mean(z, {1}, false), e.sizes(y))};
  if (red == 2) return {e.div_s(e.sum(z, {}, false), double(C))};
  return {reduce_loss(e, d, z, red)};
}

/// multilabel_margin_loss_forward: the target's labels run up to its first -1; per sample,
/// sum over labels j and non-labels c of max(0, 1 - (x[j] - x[c])) / C; is_target marks the
/// labels.
std::vector<ValueId> multilabel_margin_loss(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), t = d.tensor("target");
  if (e.dim(x) > 2)
    d.fail("multilabel_margin_loss: expected a 0-D, 1-D or 2-D input, got " +
           format_meta(e.meta(x)));
  if (e.sizes(t) != e.sizes(x))
    d.fail("multilabel_margin_loss: inconsistent target size " + format_meta(e.meta(t)) +
           " for input " + format_meta(e.meta(x)));
  std::vector<int64_t> xs = e.sizes(x);
  const int64_t N = e.dim(x) == 2 ? xs[0] : 1, C = e.dim(x) == 0 ? 1 : xs.back();
  const Device dev = e.meta(x).device;
  ValueId x2 = e.reshape(x, {N, C});
  ValueId t2 = e.reshape(e.cast(t, DType::I64), {N, C});
  ValueId seen_end =
      e.op("aten.cumsum.default", {Emit::t(e.cast(e.cmp_s("lt", t2, 0), DType::I64)), Emit::i(1)});
  ValueId valid = e.cmp_s("eq", seen_end, 0);
  ValueId tc = e.where(valid, t2, full_i64(e, {N, C}, 0, dev));
  ValueId is_target =
      scatter_reduce(e, e.zeros({N, C}, e.meta(x)), 1, tc, e.cast(valid, e.dtype(x)), "amax", true);
  ValueId xt = e.op("aten.gather.default", {Emit::t(x2), Emit::i(1), Emit::t(tc)});
  ValueId h =
      e.op("aten.clamp_min.default",
           {Emit::t(e.rsub_s(1.0, e.sub(e.unsqueeze(xt, 2), e.unsqueeze(x2, 1)))), Emit::f(0.0)});
  ValueId wgt =
      e.mul(e.unsqueeze(e.cast(valid, e.dtype(x)), 2), e.unsqueeze(e.rsub_s(1.0, is_target), 1));
  ValueId l = e.div_s(e.sum(e.mul(h, wgt), {1, 2}, false), double(C));
  const int64_t red = d.arg("reduction").i;
  ValueId out = red == 0 ? (e.dim(x) <= 1 ? e.reshape(l, {}) : l) : reduce_loss(e, d, l, red);
  return {out, e.reshape(is_target, xs)};
}

std::vector<ValueId> multilabel_margin_loss_only(Emit& e, const DNode& d) {
  return {multilabel_margin_loss(e, d)[0]};
}

/// _upsample_nearest_exact1d / 3d (and .vec): an index_select along each spatial dim of the
/// source positions nearest_exact_idx gives, min(floor((dst + 0.5) * scale), in - 1) with the
/// float scale (resample::scales_value).
std::vector<ValueId> upsample_nearest_exact(Emit& e, const DNode& d) {
  const OpSchema& s = *d.n.schema;
  ValueId x = d.args[size_t(s.index_of(s.index_of("self") >= 0 ? "self" : "input"))].tensor;
  const int64_t S = d.n.target.find("1d") != std::string::npos ? 1 : 3, R = e.dim(x);
  if (R != S + 2)
    d.fail("upsample_nearest_exact" + std::to_string(S) + "d: expected a " + std::to_string(S + 2) +
           "-D input, got " + format_meta(e.meta(x)));
  std::vector<int64_t> xs = e.sizes(x), in(xs.end() - S, xs.end());
  resample::Upsample u;
  std::string err = resample::upsample_args(d.n, in, u);
  if (!err.empty()) d.fail("upsample_nearest_exact: " + err);
  ValueId y = x;
  for (int64_t i = 0; i < S; ++i) {
    const int64_t I = in[size_t(i)], O = u.out[size_t(i)];
    const float scale = resample::scales_value<float>(u.scale[size_t(i)], I, O);
    ValueId pos = e.add_s(e.cast(e.arange(0, O, 1, e.meta(x).device), DType::F64), 0.5);
    pos = e.unary("floor", e.cast(e.mul_s(pos, double(scale)), DType::F32));
    ValueId src =
        e.op("aten.clamp_max.default", {Emit::t(e.cast(pos, DType::I64)), Emit::i(I - 1)});
    y = index_select(e, y, R - S + i, src);
  }
  return {y};
}

/// segment_reduce (lengths or offsets along the last dim of `axis`'s batch): each element along
/// axis goes to the segment whose start is the last at or before it (a spare segment past the
/// end), then scatter_reduce from `initial` (the reduction's identity without one); mean
/// divides by the length, NaN for an empty segment without initial.
std::vector<ValueId> segment_reduce(Emit& e, const DNode& d) {
  ValueId x = d.tensor("data");
  const std::string& how = d.arg("reduce").s;
  if (d.has("indices")) d.fail("segment_reduce(): indices based reduction is not supported yet.");
  const bool by_len = d.has("lengths");
  if (!by_len && !d.has("offsets"))
    d.fail("segment_reduce(): Either lengths or offsets must be defined.");
  if (!is_floating(e.dtype(x)))
    d.fail("segment_reduce(): expected floating-point data, got " + format_meta(e.meta(x)));
  ValueId seg = d.tensor(by_len ? "lengths" : "offsets");
  const int64_t R = e.dim(x), L = e.dim(seg);
  const int64_t axis = wrap(d.arg("axis").i, R);
  if (L < 1 || axis != L - 1)
    d.fail("segment_reduce(): Expected axis to be the last dimension of " +
           std::string(by_len ? "lengths" : "offsets") + " but got " + std::to_string(axis) + ".");
  std::vector<int64_t> xs = e.sizes(x), ss = e.sizes(seg);
  for (int64_t i = 0; i < axis; ++i)
    if (ss[size_t(i)] != xs[size_t(i)])
      d.fail("segment_reduce(): " + std::string(by_len ? "lengths" : "offsets") + " " +
             format_meta(e.meta(seg)) + " do not match the leading dims of data " +
             format_meta(e.meta(x)));
  const int64_t S = by_len ? ss.back() : ss.back() - 1, A = xs[size_t(axis)];
  if (S < 0) d.fail("segment_reduce(): offsets must have at least one element");
  const Device dev = e.meta(x).device;
  ValueId s64 = e.cast(seg, DType::I64), starts, ends, lens;
  if (by_len) {
    ends = e.op("aten.cumsum.default", {Emit::t(s64), Emit::i(axis)});
    starts = e.sub(ends, s64);
    lens = s64;
  } else {
    starts = e.slice(s64, axis, 0, S);
    ends = e.slice(s64, axis, 1, S + 1);
    lens = e.sub(ends, starts);
  }
  // The segment of each position along axis, batched over the leading dims: [lead..., A].
  ValueId k = e.arange(0, A, 1, dev);
  ValueId id = segment_of(e, starts, A);
  ValueId inside = e.cmp_s("ge", id, 0); // none when there are no segments
  if (S > 0) {
    ValueId stop = by_len ? e.slice(ends, axis, S - 1, S) : e.slice(s64, axis, S, S + 1);
    inside = e.op("aten.logical_and.default", {Emit::t(inside), Emit::t(e.cmp("lt", k, stop))});
  }
  std::vector<int64_t> lead(xs.begin(), xs.begin() + axis);
  std::vector<int64_t> ids = lead;
  ids.push_back(A);
  ValueId target = e.where(inside, id, full_i64(e, ids, S, dev));
  for (int64_t i = axis + 1; i < R; ++i) target = e.unsqueeze(target, i);
  target = e.expand(target, xs);
  std::optional<double> init;
  if (d.has("initial")) init = d.arg("initial").scalar();
  const double inf = std::numeric_limits<double>::infinity();
  std::string red = how;
  double identity = 0;
  if (how == "max")
    red = "amax", identity = -inf;
  else if (how == "min")
    red = "amin", identity = inf;
  else if (how == "prod")
    identity = 1;
  else if (how != "sum" && how != "mean")
    d.fail("segment_reduce(): unknown reduction '" + how + "'");
  if (how == "mean") red = "sum";
  std::vector<int64_t> os = xs;
  os[size_t(axis)] = S + 1;
  ValueId acc = full_like_f(e, os, init.value_or(identity), e.meta(x));
  ValueId r = e.slice(scatter_reduce(e, acc, axis, target, x, red.c_str(), true), axis, 0, S);
  if (how == "mean") {
    ValueId n = lens;
    for (int64_t i = axis + 1; i < R; ++i) n = e.unsqueeze(n, i);
    ValueId nf = e.cast(n, e.dtype(x));
    ValueId q = e.div(r, e.op("aten.clamp_min.default", {Emit::t(nf), Emit::f(1.0)}));
    r = e.where(e.cmp_s("gt", n, 0), q, init ? r : e.add_s(e.mul_s(r, 0.0), std::nan("")));
  }
  if (axis > 0) // the slice of a segment's dim past the first: contiguous, as PyTorch's output
    r = e.op(
        "aten.clone.default",
        {Emit::t(r), Emit::kw("memory_format", Arg::of_memory_format(MemoryFormat::Contiguous))});
  return {r};
}

/// convolution_backward (non-transposed): convolution's derivative rule (passes/conv_grad.h) for
/// the outputs output_mask asks for; an output it does not ask for (None in PyTorch) is an empty
/// tensor.
std::vector<ValueId> convolution_backward(Emit& e, const DNode& d) {
  ValueId g = d.tensor("grad_output"), x = d.tensor("input"), w = d.tensor("weight");
  if (d.arg("transposed").b)
    d.fail("convolution_backward: transposed convolution is not supported");
  std::vector<int64_t> xs = e.sizes(x), ws = e.sizes(w);
  if (ws.size() < 3 || xs.size() != ws.size() || e.dim(g) != e.dim(x))
    d.fail(
        "convolution_backward: expected batched input, weight and grad_output of one rank, got " +
        format_meta(e.meta(x)) + ", " + format_meta(e.meta(w)) + ", " + format_meta(e.meta(g)));
  const size_t sp = ws.size() - 2;
  auto spatial_arg = [&](const char* name) {
    std::vector<int64_t> v = d.arg(name).ints;
    if (v.size() == 1 && sp > 1) v.assign(sp, v[0]);
    if (v.size() != sp)
      d.fail(std::string("convolution_backward: ") + name + " must have " + std::to_string(sp) +
             " elements");
    return v;
  };
  std::vector<int64_t> s = spatial_arg("stride"), p = spatial_arg("padding"),
                       dl = spatial_arg("dilation");
  const int64_t groups = d.arg("groups").i;
  if (groups < 1 || xs[1] % groups != 0 || ws[0] % groups != 0)
    d.fail("convolution_backward: groups must divide the input and output channels");
  std::vector<bool> mask = d.arg("output_mask").bools;
  mask.resize(3, false);
  ValueId none = e.zeros({0}, e.meta(g));
  ValueId gi = mask[0] ? conv_input_grad(e, g, w, xs, s, p, dl, groups) : none;
  ValueId gw = mask[1] ? conv_weight_grad(e, x, g, ws, s, p, dl, groups) : none;
  std::vector<int64_t> dims = {0};
  for (size_t i = 0; i < sp; ++i) dims.push_back(int64_t(2 + i));
  ValueId gb = mask[2] ? e.sum(g, dims, false) : none;
  return {gi, gw, gb};
}

/// fractional_max_pool2d / 3d: PyTorch's generate_intervals in the input's dtype — window i of
/// a dim starts at trunc((i + u) * alpha) - trunc(u * alpha), alpha = (in - k) / (out - 1), the
/// last at in - k, u the plane's random sample for that dim (W, H for 2d; T, H, W for 3d) —
/// then the windows gathered dim by dim and the first max of each (its flat plane index).
std::vector<ValueId> fractional_max_pool(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), u = d.tensor("random_samples");
  const std::vector<int64_t>& ks = d.arg("kernel_size").ints;
  const std::vector<int64_t>& os = d.arg("output_size").ints;
  const int64_t S = d.n.target.find("3d") != std::string::npos ? 3 : 2;
  const std::string name = "fractional_max_pool" + std::to_string(S) + "d";
  const bool batched = e.dim(x) == S + 2;
  if (!batched && e.dim(x) != S + 1)
    d.fail(name + ": expected a " + std::to_string(S + 1) + "-D or " + std::to_string(S + 2) +
           "-D input, got " + format_meta(e.meta(x)));
  if (int64_t(ks.size()) != S || int64_t(os.size()) != S)
    d.fail(name + ": kernel_size and output_size must have " + std::to_string(S) + " elements");
  if (!batched) x = e.unsqueeze(x, 0);
  std::vector<int64_t> xs = e.sizes(x);
  const int64_t N = xs[0], C = xs[1];
  if (e.sizes(u) != std::vector<int64_t>{N, C, S})
    d.fail(name + ": expected random_samples of shape [" + std::to_string(N) + ", " +
           std::to_string(C) + ", " + std::to_string(S) + "], got " + format_meta(e.meta(u)));
  const Device dev = e.meta(x).device;
  const char* dim_names[] = {"time", "height", "width"};
  std::vector<ValueId> pos; // per spatial dim: [N, C, out, k] input positions
  for (int64_t j = 0; j < S; ++j) {
    const int64_t I = xs[size_t(2 + j)], O = os[size_t(j)], K = ks[size_t(j)];
    if (O <= 0 || K <= 0) d.fail(name + ": kernel_size and output_size must be positive");
    if (O + K - 1 > I)
      d.fail(name + ": output_size + kernel_size - 1 (" + std::to_string(O + K - 1) +
             ") exceeds the input " + dim_names[3 - S + j] + " " + std::to_string(I));
    // 2d samples are (W, H): dim j (H, W) reads sample 1 - j; 3d samples are (T, H, W).
    const int64_t sample = S == 2 ? 1 - j : j;
    ValueId uj = e.unsqueeze(e.op("aten.select.int", {Emit::t(u), Emit::i(2), Emit::i(sample)}), 2);
    uj = e.cast(uj, e.dtype(x));
    ValueId start;
    if (O == 1) {
      start = full_i64(e, {N, C, 1}, I - K, dev);
    } else {
      const double alpha = double(I - K) / double(O - 1);
      ValueId i = e.cast(e.arange(0, O - 1, 1, dev), e.dtype(x));
      ValueId a = e.unary("trunc", e.mul_s(e.add(e.reshape(i, {1, 1, O - 1}), uj), alpha));
      ValueId b = e.unary("trunc", e.mul_s(uj, alpha));
      ValueId first = e.cast(e.sub(a, b), DType::I64);
      start = e.cat({first, full_i64(e, {N, C, 1}, I - K, dev)}, 2);
    }
    pos.push_back(e.add(e.unsqueeze(start, 3), e.reshape(e.arange(0, K, 1, dev), {1, 1, 1, K})));
  }
  // Gather the windows dim by dim: y [N, C, O0*K0, O1*K1, ...].
  ValueId y = x;
  for (int64_t j = 0; j < S; ++j) {
    const int64_t OK = os[size_t(j)] * ks[size_t(j)];
    std::vector<int64_t> shape(size_t(S + 2), 1);
    shape[0] = N, shape[1] = C, shape[size_t(2 + j)] = OK;
    std::vector<int64_t> full = e.sizes(y);
    full[size_t(2 + j)] = OK;
    ValueId idx = e.expand(e.reshape(pos[size_t(j)], shape), full);
    y = e.op("aten.gather.default", {Emit::t(y), Emit::i(2 + j), Emit::t(idx)});
  }
  // [N, C, O0, K0, O1, K1, ...] -> [N, C, O0, O1, ..., K0*K1*...]
  std::vector<int64_t> split = {N, C}, perm = {0, 1}, outs = {N, C};
  int64_t window = 1;
  for (int64_t j = 0; j < S; ++j) {
    split.push_back(os[size_t(j)]);
    split.push_back(ks[size_t(j)]);
    perm.push_back(2 + 2 * j);
    outs.push_back(os[size_t(j)]);
    window *= ks[size_t(j)];
  }
  for (int64_t j = 0; j < S; ++j) perm.push_back(3 + 2 * j);
  std::vector<int64_t> flat = outs;
  flat.push_back(window);
  ValueId win = e.reshape(e.permute(e.reshape(y, split), perm), flat);
  // The flat plane index of each window element, in the same layout.
  ValueId plane = kNoValue;
  int64_t stride = 1;
  for (int64_t j = S - 1; j >= 0; --j) {
    std::vector<int64_t> shape(size_t(2 * S + 2), 1);
    shape[0] = N, shape[1] = C, shape[size_t(2 + j)] = os[size_t(j)],
    shape[size_t(2 + S + j)] = ks[size_t(j)];
    ValueId pj = e.reshape(e.mul(pos[size_t(j)], full_i64(e, {1}, stride, dev)), shape);
    plane = plane == kNoValue ? pj : e.add(plane, pj);
    stride *= xs[size_t(2 + j)];
  }
  std::vector<int64_t> wide = outs;
  for (int64_t j = 0; j < S; ++j) wide.push_back(ks[size_t(j)]);
  plane = e.reshape(e.expand(plane, wide), flat);
  const int64_t last = int64_t(flat.size()) - 1;
  ValueId am =
      e.unsqueeze(e.op("aten.argmax.default", {Emit::t(win), {"", Arg::of_int(last)}}), last);
  ValueId val =
      e.op("aten.squeeze.dims",
           {Emit::t(e.op("aten.gather.default", {Emit::t(win), Emit::i(last), Emit::t(am)})),
            Emit::ints({last})});
  ValueId ind =
      e.op("aten.squeeze.dims",
           {Emit::t(e.op("aten.gather.default", {Emit::t(plane), Emit::i(last), Emit::t(am)})),
            Emit::ints({last})});
  if (!batched) {
    val = e.op("aten.squeeze.dims", {Emit::t(val), Emit::ints({0})});
    ind = e.op("aten.squeeze.dims", {Emit::t(ind), Emit::ints({0})});
  }
  return {val, ind};
}

/// _upsample_bilinear2d_aa (antialias): separable, each spatial dim multiplied by its [in, out]
/// matrix of PyTorch's _compute_indices_min_size_weights_aa weights — the triangle filter at
/// (j - center + 0.5) * invscale over [xmin, xmin + xsize), normalized per output — built in f64
/// from aranges.
std::vector<ValueId> upsample_bilinear2d_aa(Emit& e, const DNode& d) {
  const OpSchema& s = *d.n.schema;
  ValueId x = d.args[size_t(s.index_of(s.index_of("self") >= 0 ? "self" : "input"))].tensor;
  const int64_t R = e.dim(x);
  if (R != 4)
    d.fail("_upsample_bilinear2d_aa: expected a 4-D input, got " + format_meta(e.meta(x)));
  std::vector<int64_t> xs = e.sizes(x), in(xs.end() - 2, xs.end());
  resample::Upsample u;
  std::string err = resample::upsample_args(d.n, in, u);
  if (!err.empty()) d.fail("_upsample_bilinear2d_aa: " + err);
  const Device dev = e.meta(x).device;
  ValueId y = x;
  for (int64_t i = 0; i < 2; ++i) {
    const int64_t I = in[size_t(i)], O = u.out[size_t(i)], dim = 2 + i;
    const double scale = resample::linear_scale<double>(I, O, u.align_corners, u.scale[size_t(i)]);
    const double support = scale >= 1.0 ? scale : 1.0; // interp_size 2 / 2, times the scale
    const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
    ValueId o = e.cast(e.reshape(e.arange(0, O, 1, dev), {1, O}), DType::F64);
    ValueId j = e.cast(e.reshape(e.arange(0, I, 1, dev), {I, 1}), DType::F64);
    ValueId center = e.mul_s(e.add_s(o, 0.5), scale);
    ValueId xmin = e.op("aten.clamp_min.default",
                        {Emit::t(e.unary("trunc", e.add_s(center, 0.5 - support))), Emit::f(0.0)});
    ValueId xmax =
        e.op("aten.clamp_max.default",
             {Emit::t(e.unary("trunc", e.add_s(center, 0.5 + support))), Emit::f(double(I))});
    ValueId t = e.unary("abs", e.mul_s(e.add_s(e.sub(j, center), 0.5), invscale));
    ValueId wgt = e.op("aten.clamp_min.default", {Emit::t(e.rsub_s(1.0, t)), Emit::f(0.0)});
    ValueId in_win = e.op("aten.logical_and.default",
                          {Emit::t(e.cmp("ge", j, xmin)), Emit::t(e.cmp("lt", j, xmax))});
    wgt = e.where_s(in_win, wgt, 0.0);
    ValueId total = e.sum(wgt, {0}, true);
    ValueId safe = e.where(e.cmp_s("ne", total, 0.0), total, e.add_s(e.mul_s(total, 0.0), 1.0));
    ValueId m = e.cast(e.div(wgt, safe), e.dtype(x));
    ValueId moved = dim == R - 1 ? y : e.transpose(y, dim, R - 1);
    ValueId r = e.op("aten.matmul.default", {Emit::t(moved), Emit::t(m)});
    y = dim == R - 1 ? r : e.transpose(r, dim, R - 1);
  }
  return {e.op("aten.contiguous.default", {Emit::t(y)})};
}

std::vector<ValueId> grid_sampler_taps(Emit& e, const DNode& d);
// ---- The torch.linalg composites: the public ops over the LAPACK kernels (_ex ops with
// check_errors=True raise what the plain op raises), and pinv, matrix_rank, the matrix norms,
// cond, matrix_power, multi_dot, tensorinv and tensorsolve as PyTorch's
// BatchLinearAlgebra.cpp / LinearAlgebra.cpp build them. ----

std::string sizes_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

CallArg kwb(const char* name, bool v) {
  return Emit::kw(name, Arg::of_bool(v));
}

ValueId mT(Emit& e, ValueId v) {
  const int64_t r = e.dim(v);
  return e.transpose(v, r - 2, r - 1);
}

ValueId matmul_of(Emit& e, ValueId a, ValueId b) {
  return e.op("aten.matmul.default", {Emit::t(a), Emit::t(b)});
}

std::vector<ValueId> linalg_inv(Emit& e, const DNode& d) {
  return {
      e.call("aten.linalg_inv_ex.default", {Emit::t(d.tensor("A")), kwb("check_errors", true)})[0]};
}

std::vector<ValueId> linalg_solve(Emit& e, const DNode& d) {
  return {e.call("aten._linalg_solve_ex.default",
                 {Emit::t(d.tensor("A")), Emit::t(d.tensor("B")), Emit::kw("left", d.arg("left")),
                  kwb("check_errors", true)})[0]};
}

std::vector<ValueId> linalg_solve_ex(Emit& e, const DNode& d) {
  auto r = e.call("aten._linalg_solve_ex.default",
                  {Emit::t(d.tensor("A")), Emit::t(d.tensor("B")), Emit::kw("left", d.arg("left")),
                   Emit::kw("check_errors", d.arg("check_errors"))});
  return {r[0], r[3]};
}

ValueId first_tensor(const DNode& d) {
  return d.arg(d.n.schema->args[0].name).tensor;
}

std::vector<ValueId> det(Emit& e, const DNode& d) {
  return {e.call("aten._linalg_det.default", {Emit::t(first_tensor(d))})[0]};
}

std::vector<ValueId> slogdet(Emit& e, const DNode& d) {
  auto r = e.call("aten._linalg_slogdet.default", {Emit::t(first_tensor(d))});
  return {r[0], r[1]};
}

// logdet: log|det| where det > 0, nan where det < 0 (and -inf where det == 0).
std::vector<ValueId> logdet(Emit& e, const DNode& d) {
  auto r = e.call("aten._linalg_slogdet.default", {Emit::t(d.tensor("self"))});
  return {e.where_s(e.cmp_s("ne", r[0], -1), r[1], std::nan(""))};
}

std::vector<ValueId> linalg_lu_factor(Emit& e, const DNode& d) {
  auto r = e.call(
      "aten.linalg_lu_factor_ex.default",
      {Emit::t(d.tensor("A")), Emit::kw("pivot", d.arg("pivot")), kwb("check_errors", true)});
  return {r[0], r[1]};
}

// _lu_with_info: PyTorch ignores check_errors (info is returned).
std::vector<ValueId> lu_with_info(Emit& e, const DNode& d) {
  return e.call(
      "aten.linalg_lu_factor_ex.default",
      {Emit::t(d.tensor("self")), Emit::kw("pivot", d.arg("pivot")), kwb("check_errors", false)});
}

std::vector<ValueId> lu_solve(Emit& e, const DNode& d) {
  return {e.op(
      "aten.linalg_lu_solve.default",
      {Emit::t(d.tensor("LU_data")), Emit::t(d.tensor("LU_pivots")), Emit::t(d.tensor("self"))})};
}

std::vector<ValueId> linalg_cholesky(Emit& e, const DNode& d) {
  return {e.call("aten.linalg_cholesky_ex.default",
                 {Emit::t(d.tensor("self")), Emit::kw("upper", d.arg("upper")),
                  kwb("check_errors", true)})[0]};
}

std::vector<ValueId> linalg_ldl_factor(Emit& e, const DNode& d) {
  auto r = e.call("aten.linalg_ldl_factor_ex.default",
                  {Emit::t(d.tensor("self")), Emit::kw("hermitian", d.arg("hermitian")),
                   kwb("check_errors", true)});
  return {r[0], r[1]};
}

std::vector<ValueId> qr(Emit& e, const DNode& d) {
  return e.call(
      "aten.linalg_qr.default",
      {Emit::t(d.tensor("self")), {"", Arg::of_string(d.arg("some").b ? "reduced" : "complete")}});
}

std::vector<ValueId> linalg_eigh(Emit& e, const DNode& d) {
  return e.call("aten._linalg_eigh.default",
                {Emit::t(d.tensor("self")), {"", d.arg("UPLO")}, Emit::b(true)});
}

std::vector<ValueId> linalg_eigvalsh(Emit& e, const DNode& d) {
  return {e.call("aten._linalg_eigh.default",
                 {Emit::t(d.tensor("self")), {"", d.arg("UPLO")}, Emit::b(false)})[0]};
}

ValueId svdvals_of(Emit& e, ValueId a) {
  return e.call("aten._linalg_svd.default", {Emit::t(a), Emit::b(false), Emit::b(false)})[1];
}

std::vector<ValueId> linalg_svd(Emit& e, const DNode& d) {
  return e.call("aten._linalg_svd.default", {Emit::t(d.tensor("A")),
                                             {"", d.arg("full_matrices")},
                                             Emit::b(true),
                                             Emit::kw("driver", d.arg("driver"))});
}

std::vector<ValueId> linalg_svdvals(Emit& e, const DNode& d) {
  return {
      e.call("aten._linalg_svd.default", {Emit::t(d.tensor("A")), Emit::b(false), Emit::b(false),
                                          Emit::kw("driver", d.arg("driver"))})[1]};
}

// svd: V rather than Vh; without compute_uv, U and V are zeros of the full sizes.
std::vector<ValueId> svd(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self");
  if (d.arg("compute_uv").b) {
    auto r =
        e.call("aten._linalg_svd.default", {Emit::t(a), Emit::b(!d.arg("some").b), Emit::b(true)});
    return {r[0], r[1], mT(e, r[2])};
  }
  std::vector<int64_t> s = e.sizes(a);
  if (s.size() < 2) d.fail("svd: The input tensor A must have at least 2 dimensions.");
  const int64_t m = s[s.size() - 2], n = s.back();
  std::vector<int64_t> us = s, vs = s;
  us.back() = m;
  vs[vs.size() - 2] = n;
  return {e.zeros(us, e.meta(a)), svdvals_of(e, a), e.zeros(vs, e.meta(a))};
}

std::vector<ValueId> matrix_exp(Emit& e, const DNode& d) {
  return {e.op("aten.linalg_matrix_exp.default", {Emit::t(d.tensor("self"))})};
}

double dtype_eps(DType t) {
  return t == DType::F64    ? 2.220446049250313e-16
         : t == DType::F16  ? 0.0009765625
         : t == DType::BF16 ? 0.0078125
                            : 1.1920928955078125e-07;
}

// PyTorch's tolerance of pinv and matrix_rank: max(atol, rtol * max_val) per matrix, with
// atol 0 and rtol eps * max(m, n) by default (0 when only a positive atol is given). `max_val`
// keeps a trailing dim of 1; atol and rtol are tensors, numbers, or None.
ValueId pinv_tol(Emit& e, const DNode& d, ValueId a, ValueId max_val) {
  std::vector<int64_t> s = e.sizes(a);
  const double dflt = dtype_eps(e.dtype(a)) * double(std::max(s[s.size() - 2], s.back()));
  const Arg& atol = d.arg("atol");
  const Arg& rtol = d.arg("rtol");
  auto as_col = [&](const Arg& x) { return e.unsqueeze(x.tensor, e.dim(x.tensor)); };
  ValueId rt;
  if (rtol.kind == Arg::Kind::Tensor)
    rt = e.mul(as_col(rtol), max_val);
  else if (!rtol.is_none())
    rt = e.mul_s(max_val, rtol.scalar());
  else if (atol.kind == Arg::Kind::Tensor)
    rt = e.mul(e.where_s(e.cmp_s("gt", as_col(atol), 0), e.mul_s(as_col(atol), 0), dflt), max_val);
  else
    rt = e.mul_s(max_val, !atol.is_none() && atol.scalar() > 0 ? 0 : dflt);
  if (atol.kind == Arg::Kind::Tensor)
    return e.op("aten.maximum.default", {Emit::t(as_col(atol)), Emit::t(rt)});
  if (!atol.is_none()) return e.op("aten.clamp_min.default", {Emit::t(rt), Emit::f(atol.scalar())});
  return rt;
}

// The singular values (or |eigenvalues| when hermitian) with the largest one per matrix.
struct Spectrum {
  ValueId s, max_val, u = kNoValue, vh = kNoValue, ev = kNoValue;
};
Spectrum spectrum(Emit& e, ValueId a, bool hermitian, bool vectors) {
  Spectrum sp;
  if (hermitian) {
    auto r = e.call("aten._linalg_eigh.default",
                    {Emit::t(a), {"", Arg::of_string("L")}, Emit::b(vectors)});
    sp.ev = r[0];
    sp.u = r[1];
    sp.s = e.unary("abs", r[0]);
    sp.max_val = e.amax(sp.s, {e.dim(sp.s) - 1}, true);
  } else {
    auto r = e.call("aten._linalg_svd.default", {Emit::t(a), Emit::b(false), Emit::b(vectors)});
    sp.u = r[0];
    sp.s = r[1];
    sp.vh = r[2];
    sp.max_val = e.slice(sp.s, e.dim(sp.s) - 1, 0, 1);
  }
  return sp;
}

std::vector<ValueId> linalg_pinv(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self");
  std::vector<int64_t> s = e.sizes(a);
  if (s.size() < 2) d.fail("linalg.pinv: The input tensor must have at least 2 dimensions");
  if (prod(s) == 0) {
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    return {e.zeros(s, e.meta(a))};
  }
  const bool herm = d.arg("hermitian").b;
  Spectrum sp = spectrum(e, a, herm, true);
  ValueId tol = pinv_tol(e, d, a, sp.max_val);
  ValueId inv = herm ? e.unary("reciprocal", sp.ev) : e.unary("reciprocal", sp.s);
  ValueId sinv = e.where_s(e.cmp("gt", sp.s, tol), inv, 0);
  ValueId scaled = herm ? e.mul(sp.u, e.unsqueeze(sinv, e.dim(sinv) - 1))
                        : e.mul(mT(e, sp.vh), e.unsqueeze(sinv, e.dim(sinv) - 1));
  return {matmul_of(e, scaled, mT(e, sp.u))};
}

// pinverse(self, rcond) = linalg_pinv(self, rtol=rcond).
std::vector<ValueId> pinverse(Emit& e, const DNode& d) {
  return {e.op("aten.linalg_pinv.atol_rtol_float",
               {Emit::t(d.tensor("self")), Emit::kw("rtol", d.arg("rcond"))})};
}

std::vector<ValueId> linalg_matrix_rank(Emit& e, const DNode& d) {
  ValueId a = d.tensor("input");
  std::vector<int64_t> s = e.sizes(a);
  if (s.size() < 2)
    d.fail("linalg.matrix_rank: The input tensor input must have at least 2 dimensions");
  if (prod(s) == 0) {
    TensorMeta like = e.meta(a);
    like.dtype = DType::I64;
    return {e.zeros(std::vector<int64_t>(s.begin(), s.end() - 2), like)};
  }
  Spectrum sp = spectrum(e, a, d.arg("hermitian").b, false);
  ValueId tol = pinv_tol(e, d, a, sp.max_val);
  return {e.op("aten.sum.dim_IntList",
               {Emit::t(e.cmp("gt", sp.s, tol)), Emit::ints({-1}), Emit::b(false)})};
}

// The permutation that moves dims d0, d1 to the end (PyTorch's create_dim_backshift_permutation)
// and its inverse.
std::vector<int64_t> backshift(int64_t d0, int64_t d1, int64_t rank) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d0 && i != d1) p.push_back(i);
  p.push_back(d0);
  p.push_back(d1);
  return p;
}

std::vector<int64_t> inverse_perm(const std::vector<int64_t>& p) {
  std::vector<int64_t> inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[size_t(p[i])] = int64_t(i);
  return inv;
}

ValueId with_dtype(Emit& e, ValueId a, const Arg& dtype) {
  return dtype.is_none() ? a : e.cast(a, dtype.dtype());
}

ValueId vector_norm_of(Emit& e, ValueId a, double ord, std::vector<int64_t> dims, bool keepdim,
                       const Arg& dtype) {
  return e.op("aten.linalg_vector_norm.default",
              {Emit::t(a), Emit::f(ord), Emit::ints(std::move(dims)), Emit::b(keepdim),
               Emit::kw("dtype", dtype)});
}

// A reduction of the singular values over the matrix dims `dims` (nuc: sum; 2 / -2: amax /
// amin), with the reduced dims kept as 1 when asked.
ValueId svd_norm(Emit& e, const DNode& d, ValueId a, const std::vector<int64_t>& dims, bool keepdim,
                 const Arg& dtype, const char* how) {
  const int64_t r = e.dim(a);
  const int64_t d0 = wrap(dims[0], r), d1 = wrap(dims[1], r);
  if (d0 == d1)
    d.fail("linalg.matrix_norm: dims must be different, got (" + std::to_string(dims[0]) + ", " +
           std::to_string(dims[1]) + ")");
  std::vector<int64_t> p = backshift(d0, d1, r);
  ValueId s = svdvals_of(e, e.permute(with_dtype(e, a, dtype), p));
  const int64_t last = e.dim(s) - 1;
  std::string h = how;
  ValueId out = h == "sum" ? e.sum(s, {last}, keepdim)
                : h == "amax"
                    ? e.amax(s, {last}, keepdim)
                    : e.op("aten.amin.default", {Emit::t(s), Emit::ints({last}), Emit::b(keepdim)});
  if (!keepdim) return out;
  return e.permute(e.unsqueeze(out, e.dim(out)), inverse_perm(p));
}

ValueId matrix_norm_num(Emit& e, const DNode& d, ValueId a, double ord, std::vector<int64_t> dims,
                        bool keepdim, const Arg& dtype) {
  const double ab = std::abs(ord);
  if (ab != 2 && ab != 1 && ab != INFINITY)
    d.fail("linalg.matrix_norm: Order " + std::to_string(ord) + " not supported.");
  if (dims.size() != 2) d.fail("linalg.matrix_norm: dim must be a 2-tuple.");
  if (ab == 2) return svd_norm(e, d, a, dims, keepdim, dtype, ord > 0 ? "amax" : "amin");
  const int64_t r = e.dim(a);
  int64_t d0 = wrap(dims[0], r), d1 = wrap(dims[1], r);
  if (ab == INFINITY) std::swap(d0, d1);
  ValueId v = vector_norm_of(e, a, 1, {d0}, keepdim, dtype);
  if (!keepdim && d0 < d1) --d1;
  return ord > 0 ? e.amax(v, {d1}, keepdim)
                 : e.op("aten.amin.default", {Emit::t(v), Emit::ints({d1}), Emit::b(keepdim)});
}

std::vector<ValueId> linalg_matrix_norm(Emit& e, const DNode& d) {
  return {matrix_norm_num(e, d, d.tensor("self"), d.arg("ord").scalar(), d.arg("dim").ints,
                          d.arg("keepdim").b, d.arg("dtype"))};
}

std::vector<ValueId> linalg_matrix_norm_str(Emit& e, const DNode& d) {
  const std::string& ord = d.arg("ord").s;
  ValueId a = d.tensor("self");
  const std::vector<int64_t>& dims = d.arg("dim").ints;
  if (dims.size() != 2) d.fail("linalg.matrix_norm: dim must be a 2-tuple.");
  if (ord == "fro") return {vector_norm_of(e, a, 2, dims, d.arg("keepdim").b, d.arg("dtype"))};
  if (ord == "nuc") return {svd_norm(e, d, a, dims, d.arg("keepdim").b, d.arg("dtype"), "sum")};
  d.fail("linalg.matrix_norm: Order " + ord + " not supported.");
}

// linalg_norm: a matrix norm for an ord with two dims (or a 2-D input without dims), else a
// vector norm (ord 2 by default).
std::vector<ValueId> linalg_norm(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self");
  const Arg& ord = d.arg("ord");
  const bool has_dim = d.has("dim");
  if (has_dim && d.arg("dim").ints.size() != 1 && d.arg("dim").ints.size() != 2)
    d.fail("linalg.norm: If dim is specified, it must be of length 1 or 2.");
  if (!has_dim && !ord.is_none() && e.dim(a) != 1 && e.dim(a) != 2)
    d.fail("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D.");
  if (!ord.is_none() && (has_dim ? d.arg("dim").ints.size() == 2 : e.dim(a) == 2)) {
    std::vector<int64_t> dims = has_dim ? d.arg("dim").ints : std::vector<int64_t>{0, 1};
    return {matrix_norm_num(e, d, a, ord.scalar(), dims, d.arg("keepdim").b, d.arg("dtype"))};
  }
  std::vector<int64_t> dims;
  if (has_dim)
    dims = d.arg("dim").ints;
  else
    for (int64_t i = 0; i < e.dim(a); ++i) dims.push_back(i);
  return {vector_norm_of(e, a, ord.is_none() ? 2 : ord.scalar(), dims, d.arg("keepdim").b,
                         d.arg("dtype"))};
}

// linalg_cond: s_max / s_min for p None or +-2 (0 for an empty input); otherwise
// norm(A) * norm(inv(A)), inf where A is singular.
std::vector<ValueId> linalg_cond(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self");
  std::vector<int64_t> s = e.sizes(a);
  if (s.size() < 2) d.fail("linalg.cond: The input tensor A must have at least 2 dimensions.");
  const Arg& p = d.arg("p");
  const double ord = p.is_none() ? 2 : p.scalar();
  if (prod(s) == 0) return {e.zeros(std::vector<int64_t>(s.begin(), s.end() - 2), e.meta(a))};
  if (std::abs(ord) == 2) {
    ValueId sv = svdvals_of(e, a);
    const int64_t last = e.dim(sv) - 1, k = e.sizes(sv).back();
    ValueId mx = e.slice(sv, last, 0, 1), mn = e.slice(sv, last, k - 1, k);
    ValueId r = ord < 0 ? e.div(mn, mx) : e.div(mx, mn);
    return {e.op("aten.squeeze.dims", {Emit::t(r), Emit::ints({last})})};
  }
  if (s[s.size() - 1] != s[s.size() - 2])
    d.fail("linalg.cond(ord=" + std::to_string(ord) +
           "): A must be batches of square matrices, "
           "but they are " +
           std::to_string(s[s.size() - 2]) + " by " + std::to_string(s.back()) + " matrices");
  auto inv = e.call("aten.linalg_inv_ex.default", {Emit::t(a)});
  const int64_t r = int64_t(s.size());
  ValueId prod_norm = e.mul(matrix_norm_num(e, d, a, ord, {r - 2, r - 1}, false, Arg()),
                            matrix_norm_num(e, d, inv[0], ord, {r - 2, r - 1}, false, Arg()));
  return {e.where_s(e.cmp_s("eq", inv[1], 0), prod_norm, INFINITY)};
}

// The identity matrix [n, n] of `like`'s dtype, broadcast to `sizes`.
ValueId eye_like(Emit& e, ValueId like, const std::vector<int64_t>& sizes) {
  const int64_t n = sizes.back();
  ValueId i = e.arange(0, n, 1, e.meta(like).device);
  ValueId eq = e.cmp("eq", e.unsqueeze(i, 1), e.unsqueeze(i, 0));
  return e.expand(e.cast(eq, e.dtype(like)), sizes);
}

ValueId contiguous_clone(Emit& e, ValueId v) {
  return e.op(
      "aten.clone.default",
      {Emit::t(v), Emit::kw("memory_format", Arg::of_memory_format(MemoryFormat::Contiguous))});
}

// linalg_matrix_power: PyTorch's binary decomposition of n (inverse first for n < 0).
std::vector<ValueId> linalg_matrix_power(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self");
  std::vector<int64_t> s = e.sizes(a);
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    d.fail("linalg.matrix_power: A must be batches of square matrices");
  const int64_t power = d.arg("n").i;
  if (power == 0) return {contiguous_clone(e, eye_like(e, a, s))};
  // The magnitude in unsigned arithmetic: -INT64_MIN does not fit in an int64.
  uint64_t n = power < 0 ? 0 - uint64_t(power) : uint64_t(power);
  if (power < 0)
    a = e.call("aten.linalg_inv_ex.default", {Emit::t(a), kwb("check_errors", true)})[0];
  if (n == 1) return {contiguous_clone(e, a)};
  if (n == 2) return {matmul_of(e, a, a)};
  if (n == 3) return {matmul_of(e, matmul_of(e, a, a), a)};
  ValueId z = kNoValue, result = kNoValue;
  while (n > 0) {
    const uint64_t bit = n % 2;
    n /= 2;
    z = z == kNoValue ? a : matmul_of(e, z, z);
    if (bit == 1) result = result == kNoValue ? z : matmul_of(e, result, z);
  }
  return {result};
}

// linalg_multi_dot: the chain left to right; a 1-D first (last) operand is a row (column).
std::vector<ValueId> linalg_multi_dot(Emit& e, const DNode& d) {
  std::vector<ValueId> ts = d.arg("tensors").tensors;
  if (ts.size() < 2)
    d.fail("multi_dot(): expected at least 2 tensors but got " + std::to_string(ts.size()));
  const bool first_vec = e.dim(ts.front()) == 1, last_vec = e.dim(ts.back()) == 1;
  for (size_t i = 0; i < ts.size(); ++i) {
    int64_t r = e.dim(ts[i]);
    bool edge = i == 0 || i + 1 == ts.size();
    if (r != 2 && !(edge && r == 1))
      d.fail("multi_dot(): tensor " + std::to_string(i) + " must be 2D" + (edge ? " or 1D" : "") +
             " but got " + std::to_string(r) + "D");
  }
  ValueId acc = first_vec ? e.unsqueeze(ts[0], 0) : ts[0];
  for (size_t i = 1; i < ts.size(); ++i) {
    ValueId b = i + 1 == ts.size() && last_vec ? e.unsqueeze(ts[i], 1) : ts[i];
    if (e.sizes(acc)[1] != e.sizes(b)[0])
      d.fail("multi_dot(): tensors " + std::to_string(i - 1) + " and " + std::to_string(i) +
             " with shapes " + sizes_str(e.sizes(acc)) + " and " + sizes_str(e.sizes(b)) +
             " cannot be multiplied");
    acc = e.mm(acc, b);
  }
  std::vector<int64_t> out = e.sizes(acc);
  if (first_vec && last_vec) return {e.reshape(acc, {})};
  if (first_vec) return {e.reshape(acc, {out[1]})};
  if (last_vec) return {e.reshape(acc, {out[0]})};
  return {acc};
}

std::vector<ValueId> linalg_tensorinv(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self");
  const int64_t ind = d.arg("ind").i;
  std::vector<int64_t> s = e.sizes(a);
  if (ind <= 0)
    d.fail("Expected a strictly positive integer for 'ind', but got " + std::to_string(ind));
  if (ind > int64_t(s.size())) d.fail("linalg.tensorinv: ind must not exceed the input's rank");
  const int64_t lead = prod(s, 0, size_t(ind)), tail = prod(s, size_t(ind));
  if (lead != tail)
    d.fail("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
           "prod(self.shape[:ind]), but got " +
           std::to_string(tail) + " != " + std::to_string(lead));
  std::vector<int64_t> rs(s.begin() + ind, s.end());
  rs.insert(rs.end(), s.begin(), s.begin() + ind);
  ValueId inv = e.call("aten.linalg_inv_ex.default",
                       {Emit::t(e.reshape(a, {tail, tail})), kwb("check_errors", true)})[0];
  // PyTorch's reshape: a view of the (column-major) inverse where its strides allow one.
  return {e.op("aten.reshape.default", {Emit::t(inv), Emit::ints(rs)})};
}

std::vector<ValueId> linalg_tensorsolve(Emit& e, const DNode& d) {
  ValueId a = d.tensor("self"), b = d.tensor("other");
  const int64_t nd = e.dim(a);
  if (d.has("dims")) {
    std::vector<int64_t> dims = d.arg("dims").ints, perm;
    std::vector<bool> moved(size_t(nd), false);
    for (int64_t& x : dims) {
      x = wrap(x, nd);
      if (x >= nd || moved[size_t(x)]) d.fail("linalg.tensorsolve: dims must be distinct dims");
      moved[size_t(x)] = true;
    }
    for (int64_t i = 0; i < nd; ++i)
      if (!moved[size_t(i)]) perm.push_back(i);
    perm.insert(perm.end(), dims.begin(), dims.end());
    a = e.permute(a, perm);
  }
  std::vector<int64_t> s = e.sizes(a);
  const int64_t bd = e.dim(b);
  if (bd > int64_t(s.size())) d.fail("linalg.tensorsolve: other has more dimensions than self");
  std::vector<int64_t> rs(s.begin() + bd, s.end());
  const int64_t rp = prod(rs), op = prod(e.sizes(b));
  if (prod(s) != rp * op || rp != op)
    d.fail("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
           "prod(self.shape[:other.ndim]), but got " +
           std::to_string(rp) + " != " + std::to_string(op));
  ValueId x = e.call(
      "aten._linalg_solve_ex.default",
      {Emit::t(e.reshape(a, {op, rp})), Emit::t(e.reshape(b, {op})), kwb("check_errors", true)})[0];
  return {e.reshape(x, rs)};
}

/// The rows of `rows` ([N, k]) whose `keep` ([N] bool) is set, in order, as a [count, k] tensor:
/// `count` (known here) is how many are set; rows past the kept ones hold `fill`. Each kept row
/// goes to its rank among the kept ones (a cumulative sum) and the others to a spare row that is
/// cut off, so the shape is static.
ValueId compact_rows(Emit& e, ValueId keep, ValueId rows, int64_t count, double fill) {
  TensorMeta rm = e.meta(rows);
  int64_t k = rm.sizes[1];
  ValueId rank = e.op("aten.cumsum.default", {Emit::t(e.cast(keep, DType::I64)), Emit::i(0)});
  ValueId dest = e.op("aten.sub.Scalar", {Emit::t(rank), Emit::i(1)});
  ValueId fits = e.op("aten.logical_and.default",
                      {Emit::t(keep), Emit::t(e.cmp_s("lt", dest, double(count)))});
  dest = e.cast(e.where_s(fits, dest, double(count)), DType::I64);
  ValueId buf = full_of(e, {count + 1, k}, fill, rm.dtype, rm);
  ValueId put = e.op("aten.index_put.default",
                     {Emit::t(buf), {"", Arg::of_tensors({dest})}, Emit::t(rows), Emit::b(false)});
  return e.slice(put, 0, 0, count);
}

/// The multi-index of every element of a tensor of `sizes`, row-major, as an [N, rank] int64
/// tensor.
ValueId all_coords(Emit& e, const std::vector<int64_t>& sizes, const Device& dev) {
  int64_t n = prod(sizes), rank = int64_t(sizes.size());
  ValueId lin = e.arange(0, n, 1, dev);
  std::vector<ValueId> cols;
  int64_t inner = 1;
  for (int64_t dd = rank - 1; dd >= 0; --dd) {
    ValueId q = e.op("aten.div.Tensor_mode",
                     {Emit::t(lin), Emit::t(full_of(e, {}, double(inner), DType::I64, e.meta(lin))),
                      Emit::kw("rounding_mode", Arg::of_string("floor"))});
    cols.insert(
        cols.begin(),
        e.unsqueeze(e.op("aten.remainder.Scalar", {Emit::t(q), Emit::i(sizes[size_t(dd)])}), 1));
    inner *= sizes[size_t(dd)];
  }
  if (cols.empty()) return full_of(e, {n, 0}, 0.0, DType::I64, e.meta(lin));
  return e.cat(cols, 1);
}

std::vector<ValueId> nonzero_static(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  TensorMeta m = e.meta(x);
  int64_t size = d.arg("size").i;
  if (size < 0) d.fail("nonzero_static: 'size' must be an non-negative integer");
  ValueId keep = e.reshape(e.cmp_s("ne", x, 0.0), {m.numel()});
  return {
      compact_rows(e, keep, all_coords(e, m.sizes, m.device), size, double(d.arg("fill_value").i))};
}

int64_t binomial(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0;
  int64_t r = 1;
  for (int64_t i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// combinations: the r-tuples of elements, increasing positions (non-decreasing with
// replacement), in lexicographic order: the tuples of the n^r grid that qualify, compacted.
std::vector<ValueId> combinations(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) != 1) d.fail("Expect a 1D vector, but got shape " + std::to_string(e.dim(x)) + "-D");
  int64_t r = d.arg("r").i, n = e.sizes(x)[0];
  if (r < 0) d.fail("Expect a non-negative number, but got " + std::to_string(r));
  bool repl = d.arg("with_replacement").b;
  TensorMeta m = e.meta(x);
  if (r == 0) return {e.reshape(e.slice(x, 0, 0, 0), {0})};
  // The tuples are picked from the n^r grid: keep it within 2^31 entries.
  int64_t cells = 1;
  for (int64_t k = 0; k < r && n > 1; ++k)
    if ((cells *= n) > (int64_t(1) << 31))
      d.fail("combinations: " + std::to_string(n) + " elements taken " + std::to_string(r) +
             " at a time are too many tuples");
  if (n <= 1 && r > 64) d.fail("combinations: r = " + std::to_string(r) + " is too large");
  int64_t count = repl ? binomial(n + r - 1, r) : binomial(n, r);
  std::vector<int64_t> grid(size_t(r), n);
  ValueId coords = all_coords(e, grid, m.device); // [n^r, r]
  ValueId keep = full_of(e, {prod(grid)}, 1.0, DType::Bool, m);
  for (int64_t k = 0; k + 1 < r; ++k) {
    ValueId a = e.slice(coords, 1, k, k + 1), b = e.slice(coords, 1, k + 1, k + 2);
    ValueId ok = e.reshape(e.cmp(repl ? "le" : "lt", a, b), {prod(grid)});
    keep = e.op("aten.logical_and.default", {Emit::t(keep), Emit::t(ok)});
  }
  ValueId idx = compact_rows(e, keep, coords, count, 0.0); // [count, r]
  ValueId vals =
      e.op("aten.index.Tensor", {Emit::t(x), {"", Arg::of_tensors({e.reshape(idx, {count * r})})}});
  return {e.reshape(vals, {count, r})};
}

// mode: the most frequent value along dim (the smallest one on a tie) and the last position of
// it, as PyTorch's CPU kernel gives; counted by comparing every pair of the dim's elements.
std::vector<ValueId> mode(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  int64_t r = e.dim(x);
  bool keep = d.arg("keepdim").b;
  if (r == 0) {
    ValueId zero = full_of(e, {}, 0.0, DType::I64, e.meta(x));
    return {e.op("aten.clone.default", {Emit::t(x)}), zero};
  }
  int64_t dim = wrap(d.arg("dim").i, r);
  int64_t n = e.sizes(x)[size_t(dim)];
  if (n == 0)
    d.fail("mode(): Expected reduction dim " + std::to_string(dim) + " to have non-zero size.");
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    if (i != dim) perm.push_back(i);
  perm.push_back(dim);
  ValueId xs = e.permute(x, perm); // [..., n]
  // cnt[i]: how many elements equal element i
  ValueId eq = e.cmp("eq", e.unsqueeze(xs, r), e.unsqueeze(xs, r - 1));
  ValueId cnt = e.sum(e.cast(eq, DType::I64), {r}, false);
  ValueId cand = e.cmp("eq", cnt, e.amax(cnt, {r - 1}, true));
  ValueId val = e.op("aten.amin.default", {Emit::t(e.where(cand, xs, e.amax(xs, {r - 1}, true))),
                                           Emit::ints({r - 1}), Emit::b(true)});
  ValueId pos = e.expand(e.arange(0, n, 1, e.meta(x).device), e.sizes(cnt));
  ValueId at = e.where(e.cmp("eq", xs, val), pos,
                       e.op("aten.full_like.default", {Emit::t(cnt), Emit::i(-1)}));
  ValueId index = e.amax(at, {r - 1}, true); // [..., 1]
  ValueId values = e.op("aten.gather.default", {Emit::t(xs), Emit::i(r - 1), Emit::t(index)});
  // back to the input's dim order, dim kept as size 1
  std::vector<int64_t> back(static_cast<size_t>(r));
  for (int64_t i = 0, j = 0; i < r; ++i) back[size_t(i)] = i == dim ? r - 1 : j++;
  values = e.permute(values, back);
  index = e.permute(index, back);
  if (!keep) {
    std::vector<int64_t> s = e.sizes(x);
    s.erase(s.begin() + dim);
    values = e.reshape(values, s);
    index = e.reshape(index, s);
  }
  return {values, index};
}

std::vector<ValueId> chunk_cat(Emit& e, const DNode& d) {
  const std::vector<ValueId>& ts = d.arg("tensors").tensors;
  int64_t chunks = d.arg("num_chunks").i;
  if (ts.empty()) d.fail("_chunk_cat expects a non-empty input tensor list");
  if (chunks < 1) d.fail("_chunk_cat expects a positive num_chunks");
  int64_t r = e.dim(ts[0]);
  if (r == 0) d.fail("_chunk_cat does not support zero-dimensional tensors");
  int64_t dim = wrap(d.arg("dim").i, r);
  std::vector<int64_t> s0 = e.sizes(ts[0]);
  std::vector<int64_t> lead(s0.begin(), s0.begin() + dim);
  std::vector<ValueId> parts;
  DType t = e.dtype(ts[0]);
  for (ValueId v : ts) t = promote_types(t, e.dtype(v));
  for (ValueId v : ts) {
    std::vector<int64_t> s = e.sizes(v);
    if (int64_t(s.size()) != r || !std::equal(lead.begin(), lead.end(), s.begin()))
      d.fail("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors");
    int64_t tail = prod(s, size_t(dim));
    int64_t padded = (tail + chunks - 1) / chunks * chunks;
    std::vector<int64_t> flat = lead;
    flat.push_back(tail);
    ValueId f = e.pad_dim(e.reshape(e.cast(v, t), flat), dim, 0, padded - tail);
    std::vector<int64_t> split = lead;
    split.push_back(chunks);
    split.push_back(padded / chunks);
    parts.push_back(e.reshape(f, split));
  }
  return {e.cat(parts, dim + 1)};
}

std::vector<ValueId> zero(Emit& e, const DNode& d) {
  return {e.op("aten.full_like.default", {Emit::t(d.tensor("self")), Emit::i(0)})};
}

/// resize: the first elements of `self` in row-major order, as `sizes`; elements past self's
/// (PyTorch leaves them uninitialized) are zeros.
ValueId resized(Emit& e, ValueId x, const std::vector<int64_t>& sizes) {
  int64_t have = e.meta(x).numel(), want = prod(sizes);
  ValueId flat = e.reshape(x, {have});
  flat = want <= have ? e.slice(flat, 0, 0, want) : e.pad_dim(flat, 0, 0, want - have);
  return e.reshape(e.op("aten.clone.default", {Emit::t(flat)}), sizes);
}

std::vector<ValueId> resize(Emit& e, const DNode& d) {
  for (int64_t s : d.arg("size").ints)
    if (s < 0) d.fail("Trying to create tensor with negative dimension " + std::to_string(s));
  return {resized(e, d.tensor("self"), d.arg("size").ints)};
}

std::vector<ValueId> resize_as(Emit& e, const DNode& d) {
  return {resized(e, d.tensor("self"), e.sizes(d.tensor("the_template")))};
}

std::vector<ValueId> new_empty_strided(Emit& e, const DNode& d) {
  TensorMeta m = e.meta(d.tensor("self"));
  std::vector<CallArg> call = {
      {"", d.arg("size")},
      {"", d.arg("stride")},
      Emit::kw("dtype", d.has("dtype") ? d.arg("dtype") : Arg::of_dtype(m.dtype)),
      Emit::kw("device", d.has("device") ? d.arg("device") : Arg::of_device(m.device))};
  return {e.op("aten.empty_strided.default", std::move(call))};
}

std::vector<int64_t> shift_dims(Emit& e, const DNode& d, ValueId x) {
  std::vector<int64_t> dims;
  if (!d.has("dim"))
    for (int64_t i = 0; i < e.dim(x); ++i) dims.push_back(i);
  else
    for (int64_t v : d.arg("dim").ints) dims.push_back(wrap(v, std::max<int64_t>(e.dim(x), 1)));
  return dims;
}

/// fftshift (inverse: ifftshift): a roll by half of each dim's size.
std::vector<ValueId> fft_shift(Emit& e, const DNode& d, bool inverse) {
  ValueId x = d.tensor("self");
  std::vector<int64_t> dims = shift_dims(e, d, x), shifts;
  if (e.dim(x) == 0 || dims.empty()) return {e.op("aten.clone.default", {Emit::t(x)})};
  for (int64_t dd : dims) {
    int64_t n = e.sizes(x)[size_t(dd)];
    shifts.push_back(inverse ? (n + 1) / 2 : n / 2);
  }
  return {e.op("aten.roll.default", {Emit::t(x), Emit::ints(shifts), Emit::ints(dims)})};
}

std::vector<ValueId> fft_fftshift(Emit& e, const DNode& d) {
  return fft_shift(e, d, false);
}

std::vector<ValueId> fft_ifftshift(Emit& e, const DNode& d) {
  return fft_shift(e, d, true);
}

// renorm: each slice along dim whose p-norm exceeds maxnorm is scaled to maxnorm (PyTorch's
// factor maxnorm / (norm + 1e-7)).
std::vector<ValueId> renorm(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  double p = d.arg("p").scalar(), maxnorm = d.arg("maxnorm").scalar();
  if (p <= 0) d.fail("renorm: non-positive-norm not supported");
  if (maxnorm < 0) d.fail("renorm: expected maxnorm to be >= 0 but got " + std::to_string(maxnorm));
  int64_t r = e.dim(x);
  if (r <= 1)
    d.fail("renorm: input needs at least 2 dimensions, got " + std::to_string(r) + " dimensions");
  int64_t dim = wrap(d.arg("dim").i, r);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < r; ++i)
    if (i != dim) dims.push_back(i);
  ValueId nrm = e.op("aten.linalg_vector_norm.default",
                     {Emit::t(x), Emit::f(p), Emit::ints(dims), Emit::b(true)});
  ValueId factor = e.where_s(e.cmp_s("gt", nrm, maxnorm),
                             e.mul_s(e.unary("reciprocal", e.add_s(nrm, 1e-7)), maxnorm), 1.0);
  return {e.cast(e.mul(x, factor), e.dtype(x))};
}

// index_fill with a 0-dim tensor value: a mask of the filled positions along dim, then where.
std::vector<ValueId> index_fill_tensor(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), idx = d.tensor("index"), v = d.tensor("value");
  if (e.dim(v) != 0)
    d.fail("index_fill_ only supports a 0-dimensional value tensor, but got tensor with " +
           std::to_string(e.dim(v)) + " dimension(s).");
  int64_t r = e.dim(x), dim = wrap(d.arg("dim").i, std::max<int64_t>(r, 1));
  int64_t n = r == 0 ? 1 : e.sizes(x)[size_t(dim)];
  TensorMeta m = e.meta(x);
  ValueId mask = e.op("aten.index_fill.int_Scalar",
                      {Emit::t(full_of(e, {n}, 0.0, DType::Bool, m)), Emit::i(0),
                       Emit::t(e.reshape(idx, {e.meta(idx).numel()})), Emit::b(true)});
  std::vector<int64_t> s(size_t(r), 1);
  if (r > 0) s[size_t(dim)] = n;
  return {e.where(e.reshape(mask, s), e.cast(v, m.dtype), x)};
}

/// Indices clamped into [lo, size - 1] of their dims (None entries kept).
std::vector<ValueId> clamped_indices(Emit& e, ValueId x, const std::vector<ValueId>& ix,
                                     bool negative_ok) {
  std::vector<ValueId> out;
  for (size_t k = 0; k < ix.size(); ++k) {
    if (ix[k] == kNoValue) {
      out.push_back(kNoValue);
      continue;
    }
    int64_t n = e.sizes(x)[k];
    out.push_back(e.op("aten.clamp.default",
                       {Emit::t(ix[k]), Emit::i(negative_ok ? -n : 0), Emit::i(n - 1)}));
  }
  return out;
}

std::vector<ValueId> unsafe_masked_index(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), mask = d.tensor("mask");
  if (e.dtype(mask) != DType::Bool) d.fail("_unsafe_masked_index: mask must be a bool tensor");
  const std::vector<ValueId>& ix = d.arg("indices").tensors;
  if (int64_t(ix.size()) > e.dim(x)) d.fail("too many indices for tensor");
  ValueId got = e.op("aten.index.Tensor",
                     {Emit::t(x), {"", Arg::of_tensors(clamped_indices(e, x, ix, false))}});
  // PyTorch's masked_fill(~mask, fill): self's dtype, an integral fill exactly.
  return {e.op("aten.masked_fill.Scalar",
               {Emit::t(got), Emit::t(e.unary("logical_not", mask)), {"", d.arg("fill")}})};
}

std::vector<ValueId> unsafe_masked_index_put_accumulate(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), mask = d.tensor("mask");
  if (e.dtype(mask) != DType::Bool)
    d.fail("_unsafe_masked_index_put_accumulate: mask must be a bool tensor");
  const std::vector<ValueId>& ix = d.arg("indices").tensors;
  if (int64_t(ix.size()) > e.dim(x)) d.fail("too many indices for tensor");
  ValueId vals = e.where_s(mask, d.tensor("values"), 0.0);
  return {e.op("aten.index_put.default", {Emit::t(x),
                                          {"", Arg::of_tensors(clamped_indices(e, x, ix, true))},
                                          Emit::t(e.cast(vals, e.dtype(x))),
                                          Emit::b(true)})};
}

/// The float dtype integral inputs compute in (the default dtype).
ValueId as_float(Emit& e, ValueId x) {
  return is_floating(e.dtype(x)) ? x : e.cast(x, DType::F32);
}

// gradient: central differences inside, one-sided (edge_order 1) or second-order (2) ones at the
// edges, per dim, with a scalar spacing.
std::vector<ValueId> gradient(Emit& e, const DNode& d) {
  ValueId x = as_float(e, d.tensor("self"));
  int64_t r = e.dim(x), order = d.arg("edge_order").i;
  if (order != 1 && order != 2)
    d.fail("torch.gradient only supports edge_order=1 and edge_order=2.");
  std::vector<int64_t> dims;
  int k = d.n.schema->index_of("dim");
  if (k >= 0 && d.args[size_t(k)].kind == Arg::Kind::Ints)
    for (int64_t v : d.args[size_t(k)].ints) dims.push_back(wrap(v, r));
  else if (k >= 0 && !d.args[size_t(k)].is_none())
    dims.push_back(wrap(d.args[size_t(k)].i, r));
  else
    for (int64_t i = 0; i < r; ++i) dims.push_back(i);
  int sp = d.n.schema->index_of("spacing");
  double h = sp >= 0 && !d.args[size_t(sp)].is_none() ? d.args[size_t(sp)].scalar() : 1.0;
  std::vector<ValueId> out;
  for (int64_t dd : dims) {
    int64_t n = r == 0 ? 1 : e.sizes(x)[size_t(dd)]; // a 0-dim tensor is one element along dim 0
    if (n < order + 1)
      d.fail("torch.gradient expected each dimension size to be at least edge_order+1");
    auto at = [&](int64_t a, int64_t b) { return e.slice(x, dd, a, b); };
    ValueId mid = e.div_s(e.sub(at(2, n), at(0, n - 2)), 2.0 * h);
    ValueId lo, hi;
    if (order == 1) {
      lo = e.div_s(e.sub(at(1, 2), at(0, 1)), h);
      hi = e.div_s(e.sub(at(n - 1, n), at(n - 2, n - 1)), h);
    } else {
      lo = e.div_s(
          e.add(e.add(e.mul_s(at(0, 1), -1.5), e.mul_s(at(1, 2), 2.0)), e.mul_s(at(2, 3), -0.5)),
          h);
      hi = e.div_s(e.add(e.add(e.mul_s(at(n - 3, n - 2), 0.5), e.mul_s(at(n - 2, n - 1), -2.0)),
                         e.mul_s(at(n - 1, n), 1.5)),
                   h);
    }
    out.push_back(e.cat({lo, mid, hi}, dd));
  }
  return out;
}

// cumulative_trapezoid: running sums of the trapezoids' areas along dim.
std::vector<ValueId> cumulative_trapezoid(Emit& e, const DNode& d) {
  ValueId y = as_float(e, d.tensor("y"));
  int64_t r = e.dim(y);
  if (r == 0) d.fail("cumulative_trapezoid: y must have at least one dimension");
  int64_t dim = wrap(d.arg("dim").i, r), n = e.sizes(y)[size_t(dim)];
  if (n == 0) return {e.op("aten.clone.default", {Emit::t(y)})}; // nothing to integrate
  ValueId avg = e.div_s(e.add(e.slice(y, dim, 1, n), e.slice(y, dim, 0, n - 1)), 2.0);
  ValueId area;
  if (d.n.schema->index_of("x") >= 0) {
    ValueId x = as_float(e, d.tensor("x"));
    ValueId dx;
    if (e.dim(x) == 1) {
      int64_t m = e.sizes(x)[0];
      if (m != n) d.fail("trapezoid: There must be one `x` value for each sample point");
      std::vector<int64_t> s(size_t(r), 1);
      s[size_t(dim)] = n - 1;
      dx = e.reshape(e.sub(e.slice(x, 0, 1, m), e.slice(x, 0, 0, m - 1)), s);
    } else {
      if (e.dim(x) != r)
        d.fail("trapezoid: x must be 1-D or have the dimensions of y, got " +
               format_meta(e.meta(x)) + " for y " + format_meta(e.meta(y)));
      int64_t m = e.sizes(x)[size_t(dim)];
      if (m != n) d.fail("trapezoid: There must be one `x` value for each sample point");
      dx = e.sub(e.slice(x, dim, 1, m), e.slice(x, dim, 0, m - 1));
    }
    area = e.mul(avg, dx);
  } else {
    area = e.mul_s(avg, d.arg("dx").scalar());
  }
  return {e.op("aten.cumsum.default", {Emit::t(area), Emit::i(dim)})};
}

/// Evenly spaced values from the 0-dim float64 `a` to `b`, `steps` of them (PyTorch's linspace
/// formula), as float64.
ValueId linspace_of(Emit& e, ValueId a, ValueId b, int64_t steps, const Device& dev) {
  ValueId idx = e.cast(e.arange(0, steps, 1, dev), DType::F64);
  if (steps <= 1) return e.add(e.mul_s(idx, 0.0), a);
  ValueId step = e.div_s(e.sub(b, a), double(steps - 1));
  ValueId lo = e.add(a, e.mul(step, idx));
  ValueId hi = e.sub(b, e.mul(step, e.rsub_s(double(steps - 1), idx)));
  return e.where(e.cmp_s("lt", idx, double(steps / 2)), lo, hi);
}

/// A linspace/logspace endpoint as a 0-dim float64 tensor.
ValueId endpoint(Emit& e, const DNode& d, std::string_view name, const TensorMeta& like) {
  const Arg& a = d.arg(name);
  if (a.kind == Arg::Kind::Tensor) {
    if (e.dim(a.tensor) != 0)
      d.fail("linspace only supports 0-dimensional start and end tensors, but got " +
             std::to_string(e.dim(a.tensor)) + "-dimensional '" + std::string(name) + "'");
    return e.cast(a.tensor, DType::F64);
  }
  return full_of(e, {}, a.scalar(), DType::F64, like);
}

// linspace/logspace with tensor endpoints: PyTorch's formula (from the start for the first
// half, from the end for the second), in float64, then the dtype (float32 by default).
std::vector<ValueId> spaced(Emit& e, const DNode& d, bool log) {
  int64_t steps = d.arg("steps").i;
  if (steps < 0) d.fail("number of steps must be non-negative");
  TensorMeta like;
  for (const char* nm : {"start", "end"})
    if (d.arg(nm).kind == Arg::Kind::Tensor) like = e.meta(d.arg(nm).tensor);
  if (d.has("device")) like.device = d.arg("device").device;
  DType t = d.has("dtype") ? d.arg("dtype").dtype() : DType::F32;
  ValueId a = endpoint(e, d, "start", like), b = endpoint(e, d, "end", like);
  ValueId v = linspace_of(e, a, b, steps, like.device);
  if (log) v = e.op("aten.pow.Scalar", {Emit::f(d.arg("base").f), Emit::t(v)});
  return {e.cast(v, t)};
}

std::vector<ValueId> linspace_t(Emit& e, const DNode& d) {
  return spaced(e, d, false);
}

std::vector<ValueId> logspace_t(Emit& e, const DNode& d) {
  return spaced(e, d, true);
}

std::vector<ValueId> tensor_split_sizes(Emit& e, const DNode& d, ValueId x, int64_t dim,
                                        const std::vector<int64_t>& bounds) {
  std::vector<ValueId> out;
  int64_t n = e.sizes(x)[size_t(dim)], prev = 0;
  for (int64_t b : bounds) {
    int64_t s = std::clamp<int64_t>(b < 0 ? b + n : b, 0, n);
    out.push_back(e.slice(x, dim, std::min(prev, n), std::max(s, std::min(prev, n))));
    prev = std::max(s, prev);
  }
  out.push_back(e.slice(x, dim, std::min(prev, n), n));
  (void)d;
  return out;
}

std::vector<ValueId> tensor_split_indices(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) == 0)
    d.fail("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  return tensor_split_sizes(e, d, x, wrap(d.arg("dim").i, e.dim(x)), d.arg("indices").ints);
}

std::vector<ValueId> tensor_split_sections(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  if (e.dim(x) == 0)
    d.fail("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  int64_t k = d.arg("sections").i;
  if (k <= 0) d.fail("number of sections must be larger than 0, got " + std::to_string(k));
  int64_t dim = wrap(d.arg("dim").i, e.dim(x)), n = e.sizes(x)[size_t(dim)];
  if (k > n && k > (int64_t(1) << 16))
    d.fail("tensor_split: " + std::to_string(k) + " sections of a dim of " + std::to_string(n) +
           " (at most 65536 empty sections)");
  std::vector<int64_t> bounds;
  int64_t base = n / k, extra = n % k, at = 0;
  for (int64_t i = 0; i + 1 < k; ++i) {
    at += base + (i < extra ? 1 : 0);
    bounds.push_back(at);
  }
  return tensor_split_sizes(e, d, x, dim, bounds);
}

// histogram: the elements (or their weights) counted in bins [edge k, edge k+1), the last bin
// closed; elements outside the edges are not counted. bin_ct spaces bins evenly over range (by
// default self's [min, max], widened by 0.5 each way when they are equal), as PyTorch does.
std::vector<ValueId> histogram(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self");
  TensorMeta m = e.meta(x);
  if (!is_floating(m.dtype))
    d.fail("torch.histogram: input tensor must be floating point, but got " +
           std::string(dtype_name(m.dtype)));
  ValueId flat = e.reshape(x, {m.numel()});
  ValueId edges;
  int64_t nb;
  if (d.n.schema->index_of("bins") >= 0 && d.arg("bins").kind == Arg::Kind::Tensor) {
    edges = d.tensor("bins");
    if (e.dim(edges) != 1 || e.sizes(edges)[0] < 1)
      d.fail("torch.histogram: bins tensor should have one dimension and at least 1 entry");
    if (e.dtype(edges) != m.dtype)
      d.fail("torch.histogram: input tensor and bins tensors should have the same dtype");
    nb = e.sizes(edges)[0] - 1;
  } else {
    nb = d.arg("bins").i;
    if (nb <= 0) d.fail("torch.histogram(): bins must be > 0, but got " + std::to_string(nb));
    ValueId lo, hi;
    if (d.has("range")) {
      const std::vector<double>& r = d.arg("range").floats;
      if (r.size() != 2) d.fail("torch.histogram: range should have 2 elements");
      if (r[0] > r[1])
        d.fail("torch.histogram: min should not exceed max, but got min " + std::to_string(r[0]) +
               " max " + std::to_string(r[1]));
      lo = full_of(e, {}, r[0], DType::F64, m);
      hi = full_of(e, {}, r[1], DType::F64, m);
    } else if (m.numel() == 0) {
      lo = full_of(e, {}, 0.0, DType::F64, m);
      hi = full_of(e, {}, 0.0, DType::F64, m);
    } else {
      lo = e.cast(e.op("aten.amin.default", {Emit::t(flat), Emit::ints({0}), Emit::b(false)}),
                  DType::F64);
      hi = e.cast(e.amax(flat, {0}, false), DType::F64);
    }
    ValueId same = e.cmp("eq", lo, hi);
    lo = e.where(same, e.add_s(lo, -0.5), lo);
    hi = e.where(same, e.add_s(hi, 0.5), hi);
    edges = e.cast(linspace_of(e, lo, hi, nb + 1, m.device), m.dtype);
  }
  // bin of each element: how many edges are <= it, less one; the last edge closes the last bin
  ValueId col = e.unsqueeze(flat, 1);
  ValueId le = e.cmp("le", e.unsqueeze(edges, 0), col); // [n, nb + 1]
  ValueId pos =
      e.op("aten.sub.Scalar", {Emit::t(e.sum(e.cast(le, DType::I64), {1}, false)), Emit::i(1)});
  pos =
      e.op("aten.clamp.default", {Emit::t(pos), Emit::i(0), Emit::i(std::max<int64_t>(nb - 1, 0))});
  ValueId inside =
      e.op("aten.logical_and.default", {Emit::t(e.cmp("ge", flat, e.slice(edges, 0, 0, 1))),
                                        Emit::t(e.cmp("le", flat, e.slice(edges, 0, nb, nb + 1)))});
  if (d.has("weight") && e.sizes(d.tensor("weight")) != m.sizes)
    d.fail("torch.histogram: if weight tensor is provided it should have the same shape as the "
           "input tensor");
  ValueId w = d.has("weight") ? e.reshape(e.cast(d.tensor("weight"), m.dtype), {m.numel()})
                              : e.op("aten.ones_like.default", {Emit::t(flat)});
  w = e.where_s(inside, w, 0.0);
  ValueId hist = e.op("aten.index_put.default", {Emit::t(e.zeros({nb}, m)),
                                                 {"", Arg::of_tensors({e.cast(pos, DType::I64)})},
                                                 Emit::t(w),
                                                 Emit::b(true)});
  if (d.arg("density").b) {
    ValueId widths = e.sub(e.slice(edges, 0, 1, nb + 1), e.slice(edges, 0, 0, nb));
    hist = e.div(e.div(hist, e.sum(hist, {0}, false)), widths);
  }
  return {hist, edges};
}

// index_put with one boolean mask (None elsewhere) whose values do not depend on how many
// elements it selects (they broadcast along the selected dim): where(mask, values, self), or
// self + where(mask, values, 0) to accumulate, which inductor lowers on any device. Any other
// form stays as it is (its positions are data-dependent: an extern call on the CPU).
std::vector<ValueId> index_put_mask(Emit& e, const DNode& d) {
  ValueId x = d.tensor("self"), v = d.tensor("values");
  const std::vector<ValueId>& ix = d.arg("indices").tensors;
  int64_t k = -1;
  for (size_t i = 0; i < ix.size(); ++i)
    if (ix[i] != kNoValue) {
      if (k >= 0) return {};
      k = int64_t(i);
    }
  if (k < 0 || e.dtype(ix[size_t(k)]) != DType::Bool) return {};
  ValueId mask = ix[size_t(k)];
  std::vector<int64_t> xs = e.sizes(x), ms = e.sizes(mask), vs = e.sizes(v);
  int64_t R = int64_t(xs.size()), mr = int64_t(ms.size()), rv = int64_t(vs.size());
  if (mr == 0 || k + mr > R || e.dtype(x) == DType::Bool) return {};
  for (int64_t j = 0; j < mr; ++j)
    if (ms[size_t(j)] != xs[size_t(k + j)]) return {};
  int64_t rest = R - k - mr;
  // values on self's shape: the mask's dims are 1 (the selected dim broadcasts)
  std::vector<int64_t> shape(size_t(R), 1);
  for (int64_t j = 0; j < std::min(rv, rest); ++j) {
    int64_t vsz = vs[size_t(rv - 1 - j)], xsz = xs[size_t(R - 1 - j)];
    if (vsz != 1 && vsz != xsz) return {};
    shape[size_t(R - 1 - j)] = vsz;
  }
  if (rv > rest) {
    int64_t p = rv - rest - 1; // values' dims before the selected one
    if (vs[size_t(p)] != 1 || p > k) return {};
    for (int64_t j = 0; j < p; ++j) {
      int64_t vsz = vs[size_t(j)], xsz = xs[size_t(k - p + j)];
      if (vsz != 1 && vsz != xsz) return {};
      shape[size_t(k - p + j)] = vsz;
    }
  }
  std::vector<int64_t> mshape(size_t(R), 1);
  for (int64_t j = 0; j < mr; ++j) mshape[size_t(k + j)] = ms[size_t(j)];
  ValueId m = e.reshape(mask, mshape);
  ValueId vv = e.reshape(e.cast(v, e.dtype(x)), shape);
  if (d.arg("accumulate").b) return {e.add(x, e.where_s(m, vv, 0.0))};
  return {e.where(m, vv, x)};
}

// atan2.out: atan2 written into `out` and returned. When out is computed in the graph (not an
// input, not a view, no view taken of it), later reads of out read the result, a functional
// graph; otherwise the node stays as it is (the eager interpreter writes into out).
std::vector<ValueId> atan2_out(Emit& e, const DNode& d) {
  ValueId out = d.n.arg("out").tensor;
  const Value& ov = d.src.values[size_t(out)];
  if (ov.producer < 0 || target_has_tag(d.src.nodes[size_t(ov.producer)].target, OpTag::View))
    return {};
  for (const Node& m : d.src.nodes)
    if (target_has_tag(m.target, OpTag::View))
      for (ValueId t : m.tensor_inputs())
        if (t == out) return {};
  ValueId r = e.op("aten.atan2.default", {Emit::t(d.tensor("self")), Emit::t(d.tensor("other"))});
  d.remap.push_back({out, r});
  return {r};
}

const OpTable<DecompFn>::Row kDecompositions[] = {
    // The torch.linalg composites.
    {OpId::_lu_with_info, lu_with_info},
    {OpId::cholesky, linalg_cholesky},
    {OpId::det, det},
    {OpId::linalg_cholesky, linalg_cholesky},
    {OpId::linalg_cond, linalg_cond},
    {OpId::linalg_det, det},
    {OpId::linalg_eigh, linalg_eigh},
    {OpId::linalg_eigvalsh, linalg_eigvalsh},
    {OpId::linalg_inv, linalg_inv},
    {OpId::linalg_ldl_factor, linalg_ldl_factor},
    {OpId::linalg_lu_factor, linalg_lu_factor},
    {OpId::linalg_matrix_norm, linalg_matrix_norm},
    {OpId::linalg_matrix_norm_str_ord, linalg_matrix_norm_str},
    {OpId::linalg_matrix_power, linalg_matrix_power},
    {OpId::linalg_matrix_rank_atol_rtol_tensor, linalg_matrix_rank},
    {OpId::linalg_multi_dot, linalg_multi_dot},
    {OpId::linalg_norm, linalg_norm},
    {OpId::linalg_pinv_atol_rtol_float, linalg_pinv},
    {OpId::linalg_pinv_atol_rtol_tensor, linalg_pinv},
    {OpId::linalg_slogdet, slogdet},
    {OpId::linalg_solve, linalg_solve},
    {OpId::linalg_solve_ex, linalg_solve_ex},
    {OpId::linalg_svd, linalg_svd},
    {OpId::linalg_svdvals, linalg_svdvals},
    {OpId::linalg_tensorinv, linalg_tensorinv},
    {OpId::linalg_tensorsolve, linalg_tensorsolve},
    {OpId::logdet, logdet},
    {OpId::lu_solve, lu_solve},
    {OpId::matrix_exp, matrix_exp},
    {OpId::pinverse, pinverse},
    {OpId::qr, qr},
    {OpId::slogdet, slogdet},
    {OpId::svd, svd},
    {OpId::atan2_out, atan2_out},
    {OpId::index_put, index_put_mask},
    {OpId::histogram_bin_ct, histogram},
    {OpId::histogram_bins_tensor, histogram},
    {OpId::_chunk_cat, chunk_cat},
    {OpId::_unsafe_masked_index, unsafe_masked_index},
    {OpId::_unsafe_masked_index_put_accumulate, unsafe_masked_index_put_accumulate},
    {OpId::combinations, combinations},
    {OpId::cumulative_trapezoid_dx, cumulative_trapezoid},
    {OpId::cumulative_trapezoid_x, cumulative_trapezoid},
    {OpId::fft_fftshift, fft_fftshift},
    {OpId::fft_ifftshift, fft_ifftshift},
    {OpId::gradient_array, gradient},
    {OpId::gradient_scalararray, gradient},
    {OpId::gradient_scalarint, gradient},
    {OpId::index_fill_int_Tensor, index_fill_tensor},
    {OpId::linspace_Scalar_Tensor, linspace_t},
    {OpId::linspace_Tensor_Scalar, linspace_t},
    {OpId::linspace_Tensor_Tensor, linspace_t},
    {OpId::logspace_Scalar_Tensor, logspace_t},
    {OpId::logspace_Tensor_Scalar, logspace_t},
    {OpId::logspace_Tensor_Tensor, logspace_t},
    {OpId::mode, mode},
    {OpId::new_empty_strided, new_empty_strided},
    {OpId::nonzero_static, nonzero_static},
    {OpId::renorm, renorm},
    {OpId::resize, resize},
    {OpId::resize_as, resize_as},
    {OpId::subtract_Tensor, subtract},
    {OpId::tensor_split_indices, tensor_split_indices},
    {OpId::tensor_split_sections, tensor_split_sections},
    {OpId::zero, zero},
    {OpId::float_power_Scalar, float_power},
    {OpId::float_power_Tensor_Scalar, float_power},
    {OpId::float_power_Tensor_Tensor, float_power},
    {OpId::_adaptive_avg_pool2d_backward, separable_pool_backward},
    {OpId::_cdist_backward, cdist_backward},
    {OpId::_pdist_forward, pdist_forward},
    {OpId::adaptive_max_pool2d_backward, max_pool2d_backward},
    {OpId::adaptive_max_pool3d_backward, max_pool2d_backward},
    {OpId::avg_pool2d_backward, separable_pool_backward},
    {OpId::avg_pool3d_backward, separable_pool_backward},
    {OpId::embedding_dense_backward, embedding_backward},
    {OpId::max_pool2d_with_indices_backward, max_pool2d_backward},
    {OpId::native_group_norm_backward, group_norm_backward},
    {OpId::native_layer_norm_backward, layer_norm_backward},
    {OpId::_native_batch_norm_legit_no_stats, batch_norm_no_stats},
    {OpId::_prelu_kernel, prelu},
    {OpId::chunk, split},
    {OpId::clamp_max, clamp_max},
    {OpId::clamp_min, clamp_min},
    {OpId::elu, elu},
    {OpId::fill_Scalar, fill_scalar},
    {OpId::glu, glu},
    {OpId::group_norm, group_norm},
    {OpId::hardtanh, hardtanh},
    {OpId::instance_norm, instance_norm},
    {OpId::leaky_relu, leaky_relu},
    {OpId::mish, mish},
    {OpId::native_group_norm, native_group_norm},
    {OpId::prelu, prelu},
    {OpId::select_scatter, select_scatter},
    {OpId::softplus, softplus},
    {OpId::all, all_of},
    {OpId::all_dim, all_of},
    {OpId::all_dims, all_of},
    {OpId::linalg_vector_norm, vector_norm},
    {OpId::logsumexp, logsumexp},
    {OpId::max, extreme_all},
    {OpId::max_dim, extreme_dim},
    {OpId::min, extreme_all},
    {OpId::min_dim, extreme_dim},
    {OpId::std_correction, var_like},
    {OpId::std_dim, var_like},
    {OpId::var_correction, var_like},
    {OpId::var_dim, var_like},
    {OpId::var_mean_correction, var_like},
    {OpId::count_nonzero, count_nonzero},
    {OpId::count_nonzero_dim_IntList, count_nonzero},
    {OpId::nansum, nansum},
    {OpId::std_mean_correction, var_like},
    {OpId::_log_softmax, log_softmax},
    {OpId::_native_batch_norm_legit_no_training, native_batch_norm_no_training},
    {OpId::_adaptive_avg_pool2d, adaptive_avg_pool2d},
    {OpId::_softmax, softmax},
    {OpId::adaptive_avg_pool2d, adaptive_avg_pool2d},
    {OpId::addmm, addmm},
    {OpId::batch_norm, batch_norm},
    {OpId::conv1d, conv2d},
    {OpId::conv2d, conv2d},
    {OpId::conv3d, conv2d},
    {OpId::conv1d_padding, conv_padding},
    {OpId::conv2d_padding, conv_padding},
    {OpId::conv3d_padding, conv_padding},
    {OpId::diff, diff},
    {OpId::dropout, dropout},
    {OpId::flatten_using_ints, to_shape},
    {OpId::gelu, gelu},
    {OpId::hardsigmoid, hardsigmoid},
    {OpId::hardswish, hardswish},
    {OpId::layer_norm, layer_norm},
    {OpId::linear, linear},
    {OpId::log_softmax_int, log_softmax},
    {OpId::matmul, matmul},
    {OpId::max_pool2d, max_pool2d},
    {OpId::max_pool3d, max_pool3d},
    {OpId::native_layer_norm, native_layer_norm},
    {OpId::pad, pad},
    {OpId::reshape, to_shape},
    {OpId::scaled_dot_product_attention, sdpa},
    {OpId::silu, silu},
    {OpId::softmax_int, softmax},
    {OpId::split_Tensor, split},
    {OpId::stack, stack},
    {OpId::transpose_int, transpose},
    {OpId::unbind_int, unbind},
    {OpId::unflatten_int, to_shape},
    // Composite ops (frontend/composite.h).
    {OpId::addbmm, addbmm},
    {OpId::addcdiv, addcmul_div},
    {OpId::addcmul, addcmul_div},
    {OpId::addmv, addmv},
    {OpId::addr, addr},
    {OpId::alias_copy, view_copy},
    {OpId::as_strided_copy, view_copy},
    {OpId::as_strided_scatter, as_strided_scatter},
    {OpId::atleast_1d, atleast_nd},
    {OpId::atleast_2d, atleast_nd},
    {OpId::atleast_3d, atleast_nd},
    {OpId::baddbmm, baddbmm},
    {OpId::block_diag, block_diag},
    {OpId::broadcast_tensors, broadcast_tensors},
    {OpId::broadcast_to, broadcast_to},
    {OpId::bucketize_Tensor, bucketize},
    {OpId::cartesian_prod, cartesian_prod},
    {OpId::clamp_max_Tensor, clamp_bound_tensor},
    {OpId::clamp_min_Tensor, clamp_bound_tensor},
    {OpId::column_stack, stack_like},
    {OpId::cross, cross},
    {OpId::diag, diag},
    {OpId::diag_embed, diag_embed},
    {OpId::diagflat, diagflat},
    {OpId::diagonal_copy, view_copy},
    {OpId::diagonal_scatter, diagonal_scatter},
    {OpId::divide_Tensor, true_divide},
    {OpId::dsplit_array, hvd_split},
    {OpId::dsplit_int, hvd_split},
    {OpId::dstack, stack_like},
    {OpId::expand_as, expand_as},
    {OpId::type_as, type_as},
    {OpId::_weight_norm, weight_norm},
    {OpId::_weight_norm_interface, weight_norm_interface},
    {OpId::expand_copy, view_copy},
    {OpId::fliplr, flip_lr_ud},
    {OpId::flipud, flip_lr_ud},
    {OpId::histc, histc},
    {OpId::hsplit_array, hvd_split},
    {OpId::hsplit_int, hvd_split},
    {OpId::hstack, stack_like},
    {OpId::index_copy, index_copy},
    {OpId::index_reduce, index_reduce},
    {OpId::isin_Tensor_Tensor, isin},
    {OpId::kron, kron},
    {OpId::linalg_cross, cross},
    {OpId::linalg_vecdot, linalg_vecdot},
    {OpId::mH, matrix_transpose},
    {OpId::mT, matrix_transpose},
    {OpId::matrix_H, matrix_transpose},
    {OpId::max_other, max_other},
    {OpId::meshgrid_indexing, meshgrid},
    {OpId::moveaxis_int, movedim},
    {OpId::moveaxis_intlist, movedim},
    {OpId::movedim_int, movedim},
    {OpId::movedim_intlist, movedim},
    {OpId::swapaxes, swap_dims},
    {OpId::swapdims, swap_dims},
    {OpId::msort, msort},
    {OpId::mv, mv},
    {OpId::nanmean, nanmean},
    {OpId::narrow, narrow},
    {OpId::narrow_copy, narrow_copy},
    {OpId::numpy_T, numpy_T},
    {OpId::one_hot, one_hot},
    {OpId::outer, outer},
    {OpId::permute_copy, view_copy},
    {OpId::put, put},
    {OpId::ravel, ravel},
    {OpId::repeat_interleave_self_int, repeat_interleave_int},
    {OpId::reshape_as, reshape_as},
    {OpId::rot90, rot90},
    {OpId::scatter_reduce, scatter_reduce_op},
    {OpId::searchsorted_Tensor, searchsorted},
    {OpId::split_with_sizes_copy, view_copy},
    {OpId::square, square},
    {OpId::squeeze_copy, view_copy},
    {OpId::squeeze_copy_dim, view_copy},
    {OpId::std_mean_dim, var_mean_unbiased},
    {OpId::sum_to_size, sum_to_size},
    {OpId::t_copy, view_copy},
    {OpId::take, take},
    {OpId::take_along_dim, take_along_dim},
    {OpId::tensordot, tensordot},
    {OpId::tile, tile},
    {OpId::transpose_copy_int, view_copy},
    {OpId::trapezoid_x, trapezoid},
    {OpId::trapz_x, trapezoid},
    {OpId::true_divide_Tensor, true_divide},
    {OpId::unbind_copy_int, view_copy},
    {OpId::unfold, unfold},
    {OpId::unfold_copy, unfold_copy},
    {OpId::unsafe_chunk, unsafe_split},
    {OpId::unsafe_split_Tensor, unsafe_split},
    {OpId::unsqueeze_copy, view_copy},
    {OpId::var_mean_dim, var_mean_unbiased},
    {OpId::view_as, view_as},
    {OpId::view_copy, view_copy},
    {OpId::vsplit_array, hvd_split},
    {OpId::vsplit_int, hvd_split},
    {OpId::vstack, stack_like},
    {OpId::_native_batch_norm_legit, batch_norm_mutating},
    {OpId::native_batch_norm, batch_norm_mutating},
    {OpId::_batch_norm_with_update, batch_norm_mutating},
    {OpId::_native_batch_norm_legit_functional, batch_norm_functional},
    {OpId::_batch_norm_with_update_functional, batch_norm_functional},
    {OpId::rms_norm, rms_norm},
    {OpId::_safe_softmax, safe_softmax},
    {OpId::_softmax_backward_data, softmax_backward_data},
    {OpId::relu6, relu6},
    {OpId::selu, selu},
    {OpId::celu, celu},
    {OpId::log_sigmoid, log_sigmoid},
    {OpId::logit, logit},
    {OpId::hardshrink, hardshrink},
    {OpId::softshrink, softshrink},
    {OpId::threshold, threshold},
    // Composite ops, second batch.
    {OpId::aminmax, aminmax},
    {OpId::bilinear, bilinear},
    {OpId::binary_cross_entropy, binary_cross_entropy},
    {OpId::binary_cross_entropy_with_logits, bce_with_logits},
    {OpId::cauchy, cauchy},
    {OpId::cdist, cdist},
    {OpId::channel_shuffle, channel_shuffle},
    {OpId::cosine_embedding_loss, cosine_embedding_loss},
    {OpId::cosine_similarity, cosine_similarity},
    {OpId::cross_entropy_loss, cross_entropy_loss},
    {OpId::dist, dist},
    {OpId::dot, dot},
    {OpId::exponential, exponential},
    {OpId::frexp_Tensor, frexp},
    {OpId::geometric, geometric},
    {OpId::hinge_embedding_loss, hinge_embedding_loss},
    {OpId::huber_loss, pointwise_loss},
    {OpId::inner, inner},
    {OpId::kl_div, kl_div},
    {OpId::kthvalue, kthvalue},
    {OpId::l1_loss, pointwise_loss},
    {OpId::lerp_Scalar, lerp_scalar},
    {OpId::linalg_diagonal, linalg_diagonal},
    {OpId::linalg_vander, linalg_vander},
    {OpId::log_normal, log_normal},
    {OpId::margin_ranking_loss, margin_ranking_loss},
    {OpId::max_pool1d, max_pool1d},
    {OpId::max_pool1d_with_indices, max_pool1d},
    {OpId::median, median_all},
    {OpId::median_dim, median_dim},
    {OpId::mse_loss, pointwise_loss},
    {OpId::multinomial, multinomial},
    {OpId::nanmedian, median_all},
    {OpId::nanmedian_dim, median_dim},
    {OpId::nll_loss, nll_loss},
    {OpId::nll_loss2d_forward, nll_loss_forward},
    {OpId::nll_loss_forward, nll_loss_forward},
    {OpId::nll_loss_nd, nll_loss},
    {OpId::normal_Tensor_Tensor, normal_tensor},
    {OpId::normal_Tensor_float, normal_tensor},
    {OpId::normal_float_Tensor, normal_tensor},
    {OpId::normal_functional, normal_functional},
    {OpId::pairwise_distance, pairwise_distance},
    {OpId::poisson_nll_loss, poisson_nll_loss},
    {OpId::randint_like, randint_like},
    {OpId::randint_like_low_dtype, randint_like},
    {OpId::smooth_l1_loss, pointwise_loss},
    {OpId::soft_margin_loss, soft_margin_loss},
    {OpId::std, moments_all},
    {OpId::std_mean, moments_all},
    {OpId::trace, trace},
    {OpId::triplet_margin_loss, triplet_margin_loss},
    {OpId::uniform, uniform},
    {OpId::upsample_nearest1d_vec, upsample_nearest1d_vec},
    {OpId::var, moments_all},
    {OpId::var_mean, moments_all},
    {OpId::vdot, dot},
    {OpId::_trilinear, trilinear},
    {OpId::einsum, einsum},
    {OpId::empty_permuted, empty_permuted},
    {OpId::conv_transpose1d, conv_transpose},
    {OpId::conv_transpose2d_input, conv_transpose},
    {OpId::conv_transpose3d_input, conv_transpose},
    {OpId::convolution, convolution_transposed},
    // nn ops: core ATen and torch.nn.functional (index ops, random masks).
    {OpId::_embedding_bag, embedding_bag},
    {OpId::_embedding_bag_forward_only, embedding_bag},
    {OpId::_upsample_bilinear2d_aa, upsample_bilinear2d_aa},
    {OpId::_upsample_bilinear2d_aa_vec, upsample_bilinear2d_aa},
    {OpId::_upsample_nearest_exact1d, upsample_nearest_exact},
    {OpId::_upsample_nearest_exact1d_vec, upsample_nearest_exact},
    {OpId::_upsample_nearest_exact3d, upsample_nearest_exact},
    {OpId::_upsample_nearest_exact3d_vec, upsample_nearest_exact},
    {OpId::alpha_dropout, dropout},
    {OpId::convolution_backward, convolution_backward},
    {OpId::embedding_bag, embedding_bag},
    {OpId::embedding_bag_padding_idx, embedding_bag},
    {OpId::feature_alpha_dropout, dropout},
    {OpId::feature_dropout, dropout},
    {OpId::fractional_max_pool2d, fractional_max_pool},
    {OpId::fractional_max_pool3d, fractional_max_pool},
    {OpId::grid_sampler, grid_sampler},
    {OpId::grid_sampler_3d, grid_sampler_taps},
    {OpId::max_unpool2d, max_unpool},
    {OpId::max_unpool3d, max_unpool},
    {OpId::multi_margin_loss, multi_margin_loss},
    {OpId::multilabel_margin_loss, multilabel_margin_loss_only},
    {OpId::multilabel_margin_loss_forward, multilabel_margin_loss},
    {OpId::pdist, pdist},
    {OpId::rrelu, rrelu},
    {OpId::rrelu_with_noise_functional, rrelu},
    {OpId::segment_reduce, segment_reduce},
};

/// Pooling windows (adaptive ones too), upsampling and reflection/replication padding are linear
/// maps that act on each spatial dim separately: y = x ×_d M_d over the spatial dims d, with M_d
/// ([in_d, out_d]) the op itself applied to an identity laid out along d (size 1 in the other
/// spatial dims). Train mode differentiates this form (transposes and matmuls); inference keeps the
/// op.
std::vector<ValueId> separable(Emit& e, const DNode& d) {
  const OpSchema& s = *d.n.schema;
  const std::string& target = d.n.target;
  int xi = s.index_of("self") >= 0 ? s.index_of("self") : s.index_of("input");
  ValueId x = d.args[size_t(xi)].tensor;
  std::vector<int64_t> xs = e.sizes(x), os = d.out_meta(0).sizes;
  int64_t R = int64_t(xs.size());
  int64_t S = target.find("1d") != std::string::npos   ? 1
              : target.find("3d") != std::string::npos ? 3
                                                       : 2;
  if (R < S + 1 || int64_t(os.size()) != R) return {};
  bool adaptive = target.find("adaptive_avg_pool") != std::string::npos;
  bool pool = !adaptive && target.find("avg_pool") != std::string::npos;
  bool upsample = target.find("upsample") != std::string::npos;
  double override_div = 0;
  ValueId y = x;
  for (int64_t i = 0; i < S; ++i) {
    int64_t dim = R - S + i, I = xs[size_t(dim)], O = os[size_t(dim)];
    ValueId a = e.arange(0, I, 1, e.meta(x).device);
    ValueId eye = e.cast(e.cmp("eq", e.unsqueeze(a, 1), e.unsqueeze(a, 0)), e.meta(x).dtype);
    std::vector<int64_t> es = {1, I};
    for (int64_t j = 0; j < S; ++j) es.push_back(j == i ? I : 1);
    eye = e.reshape(eye, es);
    std::vector<CallArg> call;
    std::string t = target;
    if (adaptive) {
      // The identity pooled to O along this dim only (1 -> 1 elsewhere is the identity).
      std::vector<int64_t> osz(size_t(S), 1);
      osz[size_t(i)] = O;
      call = {Emit::t(eye), Emit::ints(osz)};
    } else if (upsample) {
      resample::Upsample u;
      std::vector<int64_t> in(xs.end() - S, xs.end());
      if (!resample::upsample_args(d.n, in, u).empty()) return {};
      if (t.size() > 4 && t.compare(t.size() - 4, 4, ".vec") == 0)
        t = t.substr(0, t.size() - 4) + ".default";
      std::vector<int64_t> osz(size_t(S), 1);
      osz[size_t(i)] = O;
      call = {Emit::t(eye), Emit::ints(osz)};
      if (s.index_of("align_corners") >= 0) call.push_back(Emit::b(u.align_corners));
      for (int64_t j = 0; j < S; ++j)
        call.push_back(
            {"", j == i && u.scale[size_t(j)] ? Arg::of_float(*u.scale[size_t(j)]) : Arg::none()});
    } else {
      for (size_t k = 0; k < d.args.size(); ++k) {
        const std::string& name = s.args[k].name;
        Arg v = d.args[k];
        if (int(k) == xi) {
          v = Arg::of_tensor(eye);
        } else if (pool && (name == "kernel_size" || name == "stride" || name == "padding")) {
          std::vector<int64_t> full =
              v.ints.empty() ? resample::spatial_param(d.arg("kernel_size").ints, size_t(S))
                             : resample::spatial_param(v.ints, size_t(S));
          std::vector<int64_t> one(size_t(S), name == "padding" ? 0 : 1);
          one[size_t(i)] = full.at(size_t(i));
          v = Arg::of_ints(one);
        } else if (name == "divisor_override" && !v.is_none()) {
          override_div = double(v.i);
          v = Arg::of_int(1);
        } else if (!pool && name == "padding") {
          std::vector<int64_t> p(v.ints.size(), 0);
          size_t pair = size_t(S - 1 - i); // pairs run from the last dim backwards
          p[2 * pair] = v.ints[2 * pair];
          p[2 * pair + 1] = v.ints[2 * pair + 1];
          v = Arg::of_ints(p);
        }
        call.push_back({"", v});
      }
    }
    ValueId m = e.reshape(e.op(t, std::move(call)), {I, O});
    ValueId moved = dim == R - 1 ? y : e.transpose(y, dim, R - 1);
    ValueId r = e.op("aten.matmul.default", {Emit::t(moved), Emit::t(m)});
    y = dim == R - 1 ? r : e.transpose(r, dim, R - 1);
  }
  if (override_div != 0) y = e.div_s(y, override_div);
  return {y};
}

/// grid_sampler_2d and grid_sampler_3d as the sum of their taps: the grid unnormalized and
/// padded with differentiable ops (clamp, abs, fmod, where), each tap an index_select of the
/// input's (N*spatial, C) rows at the tap's flat position (computed in f64, clamped into the
/// input) times its weight and a 0/1 in-bounds factor. The gradient of the input is
/// index_select's (an index_add), that of the grid flows through the weights' fractions, as
/// grid_sampler_2d_backward computes. grid_sampler_2d keeps its kernel and lowering in inference
/// (this is its autograd form); grid_sampler_3d is this decomposition everywhere. The grid's last
/// dim holds (x, y[, z]), the coordinates of the input's last, second-last[, third-last] dims.
std::vector<ValueId> grid_sampler_taps(Emit& e, const DNode& d) {
  ValueId x = d.tensor("input"), grid = d.tensor("grid");
  std::vector<int64_t> xs = e.sizes(x), gs = e.sizes(grid);
  const int64_t S = int64_t(xs.size()) - 2;
  const bool three = d.n.target.find("3d") != std::string::npos;
  if (three && (xs.size() != 5 || gs.size() != 5 || gs[4] != 3 || gs[0] != xs[0]))
    d.fail("grid_sampler_3d: expected a 5-D input and a 5-D grid [N, D, H, W, 3] of the same "
           "batch, got " +
           format_meta(e.meta(x)) + " and " + format_meta(e.meta(grid)));
  if (!three && (xs.size() != 4 || gs.size() != 4)) return {};
  const int64_t mode = d.arg("interpolation_mode").i, pad = d.arg("padding_mode").i;
  const bool align = d.arg("align_corners").b;
  if (three && (mode < 0 || mode > 1 || pad < 0 || pad > 2))
    d.fail("grid_sampler_3d: interpolation_mode must be 0 (bilinear) or 1 (nearest) and "
           "padding_mode 0, 1 or 2");
  if (mode < 0 || mode > 2 || pad < 0 || pad > 2) return {};
  const int64_t N = xs[0], C = xs[1];
  std::vector<int64_t> in(xs.begin() + 2, xs.end()), out(gs.begin() + 1, gs.end() - 1);
  const int64_t P = prod(in), OP = prod(out);
  const DType ft = e.dtype(x);
  auto unnormalize = [&](ValueId g, int64_t size) {
    return align ? e.mul_s(e.div_s(e.add_s(g, 1), 2), double(size - 1))
                 : e.div_s(e.add_s(e.mul_s(e.add_s(g, 1), double(size)), -1), 2);
  };
  auto clip = [&](ValueId v, int64_t size) {
    return e.op("aten.clamp.default", {Emit::t(v), Emit::f(0), Emit::f(double(size - 1))});
  };
  auto reflect = [&](ValueId v, int64_t twice_low, int64_t twice_high) {
    if (twice_low == twice_high) return e.mul_s(v, 0);
    double lo = double(twice_low) / 2, span = double(twice_high - twice_low) / 2;
    ValueId a = e.unary("abs", e.add_s(v, -lo));
    ValueId extra = e.op("aten.fmod.Scalar", {Emit::t(a), Emit::f(span)});
    ValueId flips = e.unary("floor", e.div_s(a, span));
    ValueId even = e.cmp_s("eq", e.op("aten.fmod.Scalar", {Emit::t(flips), Emit::f(2)}), 0);
    return e.where(even, e.add_s(extra, lo), e.add_s(e.rsub_s(span, extra), lo));
  };
  auto padded = [&](ValueId v, int64_t size) {
    if (pad == 1) return clip(v, size);
    if (pad == 2)
      return clip(align ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1), size);
    return v;
  };
  // pos[i]: the source position along spatial dim i (grid component S - 1 - i).
  std::vector<ValueId> pos;
  for (int64_t i = 0; i < S; ++i) {
    ValueId c = e.op("aten.select.int", {Emit::t(grid), Emit::i(S + 1), Emit::i(S - 1 - i)});
    ValueId v = unnormalize(c, in[size_t(i)]);
    pos.push_back(mode != 2 ? padded(v, in[size_t(i)]) : v);
  }
  // Rows of the input by (n, spatial...); the batch's first row per grid point, in f64.
  std::vector<int64_t> to_last = {0};
  for (int64_t i = 0; i < S; ++i) to_last.push_back(2 + i);
  to_last.push_back(1);
  ValueId rows = e.reshape(e.permute(x, to_last), {N * P, C});
  std::vector<int64_t> bshape(size_t(S + 1), 1);
  bshape[0] = N;
  ValueId base = e.cast(e.reshape(e.arange(0, N * P, P, e.meta(x).device), bshape), DType::F64);
  std::vector<int64_t> res = {N};
  res.insert(res.end(), out.begin(), out.end());
  res.push_back(C);
  // One tap: the input at integer-valued positions at[i] (f64), 0 outside, times `w`.
  auto tap = [&](const std::vector<ValueId>& at, ValueId w) {
    ValueId ok = kNoValue, flat = base;
    int64_t stride = P;
    for (int64_t i = 0; i < S; ++i) {
      const int64_t n = in[size_t(i)];
      stride /= n;
      ValueId in_i = e.mul(e.cast(e.cmp_s("ge", at[size_t(i)], 0), ft),
                           e.cast(e.cmp_s("lt", at[size_t(i)], double(n)), ft));
      ok = ok == kNoValue ? in_i : e.mul(ok, in_i);
      flat = e.add(flat, e.mul_s(clip(at[size_t(i)], n), double(stride)));
    }
    ValueId idx = e.reshape(e.cast(flat, DType::I64), {N * OP});
    ValueId v = e.reshape(
        e.op("aten.index_select.default", {Emit::t(rows), Emit::i(0), Emit::t(idx)}), res);
    return e.mul(v, e.unsqueeze(e.mul(w, ok), S + 1));
  };
  auto f64 = [&](ValueId v) { return e.cast(v, DType::F64); };
  ValueId r = kNoValue;
  auto acc = [&](ValueId v) { r = r == kNoValue ? v : e.add(r, v); };
  if (mode == 1) {
    std::vector<int64_t> ws = {N};
    ws.insert(ws.end(), out.begin(), out.end());
    ValueId one = e.add_s(e.zeros(ws, e.meta(pos[0])), 1);
    std::vector<ValueId> at;
    for (ValueId p : pos) at.push_back(f64(e.unary("round", p)));
    acc(tap(at, one));
  } else if (mode == 0) {
    // The 2^S corners: bit i of the corner picks floor + 1 along dim i, weight t_i or 1 - t_i.
    std::vector<ValueId> lo, t;
    for (ValueId p : pos) {
      ValueId f = e.unary("floor", p);
      lo.push_back(f);
      t.push_back(e.sub(p, f));
    }
    for (int64_t corner = 0; corner < (int64_t(1) << S); ++corner) {
      std::vector<ValueId> at;
      ValueId w = kNoValue;
      for (int64_t i = 0; i < S; ++i) {
        const bool up = (corner >> (S - 1 - i)) & 1;
        at.push_back(up ? e.add_s(f64(lo[size_t(i)]), 1) : f64(lo[size_t(i)]));
        ValueId wi = up ? t[size_t(i)] : e.rsub_s(1, t[size_t(i)]);
        w = w == kNoValue ? wi : e.mul(w, wi);
      }
      acc(tap(at, w));
    }
  } else {
    ValueId iy = pos[0], ix = pos[1];
    const int64_t H = in[0], W = in[1];
    ValueId fx = e.unary("floor", ix), fy = e.unary("floor", iy);
    const double A = -0.75;
    auto c1 = [&](ValueId z) {
      return e.add_s(e.mul(e.mul(e.add_s(e.mul_s(z, A + 2), -(A + 3)), z), z), 1);
    };
    auto c2 = [&](ValueId z) {
      return e.add_s(e.mul(e.add_s(e.mul(e.add_s(e.mul_s(z, A), -5 * A), z), 8 * A), z), -4 * A);
    };
    auto coeffs = [&](ValueId t) {
      ValueId omt = e.rsub_s(1, t);
      return std::vector<ValueId>{c2(e.add_s(t, 1)), c1(t), c1(omt), c2(e.add_s(omt, 1))};
    };
    std::vector<ValueId> wx = coeffs(e.sub(ix, fx)), wy = coeffs(e.sub(iy, fy));
    auto at = [&](ValueId fl, int j, int64_t size) {
      return f64(e.unary("trunc", padded(e.add_s(fl, double(j - 1)), size)));
    };
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        acc(tap({at(fy, i, H), at(fx, j, W)}, e.mul(wy[size_t(i)], wx[size_t(j)])));
  }
  std::vector<int64_t> back = {0, S + 1};
  for (int64_t i = 0; i < S; ++i) back.push_back(1 + i);
  // grid_sampler_3d's own meta is this decomposition's: contiguous, as PyTorch's output.
  if (three)
    return {e.op("aten.clone.default",
                 {Emit::t(e.permute(r, back)),
                  Emit::kw("memory_format", Arg::of_memory_format(MemoryFormat::Contiguous))})};
  return {e.permute(r, back)};
}

std::vector<ValueId> layer_norm_to_native(Emit& e, const DNode& d) {
  return {e.call("aten.native_layer_norm.default", {Emit::t(d.tensor("input")),
                                                    {"", d.arg("normalized_shape")},
                                                    {"", d.arg("weight")},
                                                    {"", d.arg("bias")},
                                                    Emit::f(d.arg("eps").f)})[0]};
}

std::vector<ValueId> batch_norm_to_native(Emit& e, const DNode& d) {
  if (d.arg("training").b) {
    // Batch statistics (a default export of a model in train mode): the functional form, whose
    // derivative is its decomposition's. The running statistics it updates are not outputs of
    // such a program (its pre-dispatch graph mutates them inside batch_norm).
    if (d.has("running_mean") && d.has("running_var"))
      return {e.call("aten._native_batch_norm_legit_functional.default",
                     {Emit::t(d.tensor("input")),
                      {"", d.arg("weight")},
                      {"", d.arg("bias")},
                      Emit::t(d.tensor("running_mean")),
                      Emit::t(d.tensor("running_var")),
                      Emit::b(true),
                      Emit::f(d.arg("momentum").f),
                      Emit::f(d.arg("eps").f)})[0]};
    return {e.call("aten._native_batch_norm_legit.no_stats", {Emit::t(d.tensor("input")),
                                                              {"", d.arg("weight")},
                                                              {"", d.arg("bias")},
                                                              Emit::b(true),
                                                              Emit::f(d.arg("momentum").f),
                                                              Emit::f(d.arg("eps").f)})[0]};
  }
  if (!d.has("running_mean") || !d.has("running_var")) return {};
  return {e.call("aten._native_batch_norm_legit_no_training.default",
                 {Emit::t(d.tensor("input")),
                  {"", d.arg("weight")},
                  {"", d.arg("bias")},
                  Emit::t(d.tensor("running_mean")),
                  Emit::t(d.tensor("running_var")),
                  Emit::f(d.arg("momentum").f),
                  Emit::f(d.arg("eps").f)})[0]};
}

/// Composite ops rewritten to the ATen op that returns what their backward needs (mean/rstd,
/// pooling indices), as PyTorch's autograd does, so the forward computes it once.
const OpTable<DecompFn>::Row kAutogradForms[] = {
    {OpId::_upsample_nearest_exact2d, separable},
    {OpId::_upsample_nearest_exact2d_vec, separable},
    {OpId::avg_pool1d, separable},
    {OpId::avg_pool2d, separable},
    {OpId::avg_pool3d, separable},
    {OpId::batch_norm, batch_norm_to_native},
    {OpId::bmm, bmm_of_shared_matrix},
    {OpId::layer_norm, layer_norm_to_native},
    {OpId::_adaptive_avg_pool3d, separable},
    {OpId::adaptive_avg_pool1d, separable},
    {OpId::adaptive_avg_pool3d, separable},
    {OpId::max_pool2d, max_pool2d},
    {OpId::max_pool3d, max_pool3d},
    {OpId::reflection_pad1d, separable},
    {OpId::reflection_pad2d, separable},
    {OpId::reflection_pad3d, separable},
    {OpId::replication_pad1d, separable},
    {OpId::replication_pad2d, separable},
    {OpId::replication_pad3d, separable},
    {OpId::grid_sampler_2d, grid_sampler_taps},
    {OpId::upsample_bicubic2d, separable},
    {OpId::upsample_bicubic2d_vec, separable},
    {OpId::upsample_bilinear2d, separable},
    {OpId::upsample_bilinear2d_vec, separable},
    {OpId::upsample_linear1d, separable},
    {OpId::upsample_linear1d_vec, separable},
    {OpId::upsample_nearest2d, separable},
    {OpId::upsample_nearest2d_vec, separable},
    {OpId::upsample_trilinear3d, separable},
    {OpId::upsample_trilinear3d_vec, separable},
};

const OpTable<DecompFn>& decomposition_table() {
  static const OpTable<DecompFn> table(kDecompositions);
  return table;
}

const OpTable<DecompFn>& autograd_form_table() {
  static const OpTable<DecompFn> table(kAutogradForms);
  return table;
}

bool has_inplace_self(const Node& n) {
  return target_has_tag(n.target, OpTag::Inplace) && n.schema && n.schema->index_of("self") >= 0 &&
         n.args[size_t(n.schema->index_of("self"))].kind == Arg::Kind::Tensor;
}

/// The values that name the storage `v` names through in-place ops: the value an in-place
/// chain starts from and every in-place op's output along it (`y = relu_(x)`: x and y).
std::vector<ValueId> inplace_aliases(const Graph& g, ValueId v) {
  std::vector<ValueId> root(g.values.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = ValueId(i);
  for (const Node& n : g.nodes)
    if (has_inplace_self(n) && !n.outputs.empty())
      root[size_t(n.outputs[0])] = root[size_t(n.args[size_t(n.schema->index_of("self"))].tensor)];
  std::vector<ValueId> out;
  for (size_t i = 0; i < root.size(); ++i)
    if (root[i] == root[size_t(v)]) out.push_back(ValueId(i));
  return out;
}

/// Whether rewriting an in-place node to its functional op keeps the graph's meaning: the
/// storage it mutates must be a value nothing else aliases (not a graph input, not a view, no
/// views taken of it). decompose_once then makes the result stand for every name of it.
bool can_functionalize(const Graph& g, const Node& n) {
  if (!has_inplace_self(n)) return false;
  std::vector<ValueId> names =
      inplace_aliases(g, n.args[size_t(n.schema->index_of("self"))].tensor);
  const Value& first = g.values[size_t(names.front())];
  if (first.producer < 0 || target_has_tag(g.nodes[size_t(first.producer)].target, OpTag::View))
    return false;
  for (const Node& m : g.nodes) {
    if (!target_has_tag(m.target, OpTag::View)) continue;
    for (ValueId t : m.tensor_inputs())
      if (std::find(names.begin(), names.end(), t) != names.end()) return false;
  }
  return true;
}

/// Whether an in-place write into a view can be rewritten to its functional op without writing
/// the result back into the view's base: the storage it writes is a computed value (not a graph
/// input), and after the write nothing reads it under a name made before the write other than the
/// one written (the base, another view of it), and no graph output is such a name. ConvNeXt's `x =
/// permute(...); x += skip` and a classifier's in-place dropout on a flattened view are such
/// writes.
bool writes_dead_view(const Graph& g, const Node& n) {
  if (!has_inplace_self(n)) return false;
  // Every value's storage: through views (their `self`, else first tensor input) and in-place ops.
  std::vector<ValueId> root(g.values.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = ValueId(i);
  for (const Node& m : g.nodes) {
    bool view = target_has_tag(m.target, OpTag::View);
    if (!view && !has_inplace_self(m)) continue;
    ValueId src = -1;
    if (m.schema && m.schema->index_of("self") >= 0 &&
        m.args[size_t(m.schema->index_of("self"))].kind == Arg::Kind::Tensor)
      src = m.args[size_t(m.schema->index_of("self"))].tensor;
    else if (!m.tensor_inputs().empty())
      src = m.tensor_inputs().front();
    if (src < 0) continue;
    for (ValueId o : view ? m.outputs : std::vector<ValueId>{m.outputs.front()})
      root[size_t(o)] = root[size_t(src)];
  }
  ValueId self = n.args[size_t(n.schema->index_of("self"))].tensor;
  ValueId r = root[size_t(self)];
  if (g.values[size_t(r)].producer < 0) return false;
  std::vector<ValueId> names = inplace_aliases(g, self);
  size_t w = size_t(&n - g.nodes.data());
  // Views made after the write are views of its result (the rewrite remaps their input).
  auto other_name = [&](ValueId t) {
    return root[size_t(t)] == r && g.values[size_t(t)].producer < int32_t(w) &&
           std::find(names.begin(), names.end(), t) == names.end();
  };
  for (size_t j = w + 1; j < g.nodes.size(); ++j)
    for (ValueId t : g.nodes[j].tensor_inputs())
      if (other_name(t)) return false;
  for (ValueId o : g.outputs)
    if (other_name(o)) return false;
  return true;
}

/// Number of nodes of g that read v.
int users_of(const Graph& g, ValueId v) {
  int k = 0;
  for (const Node& m : g.nodes)
    for (ValueId t : m.tensor_inputs()) k += t == v;
  return k;
}

/// The slice/select views from a base value down to `v` (innermost first) that an in-place op
/// on `v` writes through, when that write can be replayed on the base: each view read by
/// nothing but the next (or the writer), the base a computed value (not a graph input), and no
/// other view of the base taken before the write and read after it. Empty when it cannot.
std::vector<const Node*> view_chain(const Graph& g, const Node& writer, ValueId v, ValueId* base) {
  std::vector<const Node*> chain;
  ValueId cur = v;
  for (;;) {
    const Value& val = g.values[size_t(cur)];
    if (val.producer < 0) return {};
    const Node& p = g.nodes[size_t(val.producer)];
    if (!target_has_tag(p.target, OpTag::View)) break;
    if ((p.target != "aten.slice.Tensor" && p.target != "aten.select.int") || users_of(g, cur) != 1)
      return {};
    chain.push_back(&p);
    cur = p.args[size_t(p.schema->index_of("self"))].tensor;
  }
  if (chain.empty()) return {};
  std::vector<ValueId> names = inplace_aliases(g, cur);
  size_t w = size_t(&writer - g.nodes.data());
  for (size_t i = 0; i < w; ++i) {
    const Node& m = g.nodes[i];
    if (!target_has_tag(m.target, OpTag::View) ||
        std::find(chain.begin(), chain.end(), &m) != chain.end())
      continue;
    bool of_base = false;
    for (ValueId t : m.tensor_inputs())
      of_base = of_base || std::find(names.begin(), names.end(), t) != names.end();
    if (!of_base) continue;
    for (size_t j = w + 1; j < g.nodes.size(); ++j)
      for (ValueId t : g.nodes[j].tensor_inputs())
        for (ValueId o : m.outputs)
          if (t == o) return {};
  }
  *base = cur;
  return chain;
}

/// The functional op of an in-place node on its (remapped) arguments, in the functional op's
/// own dtype.
ValueId functional_call(Emit& e, const DNode& d) {
  if (d.n.target == "aten.fill_.Tensor") { // fill.Tensor: the value broadcast to self's sizes
    ValueId self = d.tensor("self");
    return e.cast(e.expand(d.tensor("value"), e.sizes(self)), e.meta(self).dtype);
  }
  std::vector<CallArg> call;
  // By name where the functional op has the name (keyword-only arguments), else by position
  // (dropout_'s `self` is dropout's `input`).
  std::string target = functional_target(d.n.target);
  const OpSchema* fs = find_schema(target);
  for (size_t k = 0; k < d.args.size(); ++k) {
    const std::string& name = d.n.schema->args[k].name;
    call.push_back({fs && fs->index_of(name) >= 0 ? name : std::string(), d.args[k]});
  }
  return e.op(target, std::move(call));
}

/// The functional form of an in-place node on its (remapped) arguments, in self's dtype.
ValueId functional_value(Emit& e, const DNode& d) {
  return e.cast(functional_call(e, d), d.out_meta(0).dtype);
}

/// An in-place op with no meta function or kernel of its own, as PyTorch computes it: its
/// functional op, checked as TensorIterator checks an in-place output (the result's dtype casts
/// to self's, its shape is self's, self has no elements that share memory), copied into self.
std::vector<ValueId> inplace_composite(Emit& e, const DNode& d) {
  ValueId self = d.tensor("self");
  const TensorMeta& sm = e.meta(self);
  for (size_t i = 0; i < sm.sizes.size(); ++i)
    if (sm.strides[i] == 0 && sm.sizes[i] > 1)
      d.fail("unsupported operation: more than one element of the written-to tensor refers to a "
             "single memory location. Please clone() the tensor before performing the operation.");
  ValueId r = functional_call(e, d);
  const TensorMeta& rm = e.meta(r);
  if (!can_cast(rm.dtype, sm.dtype))
    d.fail("result type " + std::string(dtype_name(rm.dtype)) +
           " can't be cast to the desired output type " + std::string(dtype_name(sm.dtype)));
  if (rm.sizes != sm.sizes)
    d.fail("output with shape " + meta_detail::join(sm.sizes) +
           " doesn't match the broadcast shape " + meta_detail::join(rm.sizes));
  return {e.op("aten.copy_.default", {Emit::t(self), Emit::t(r)})};
}

/// An in-place op as its functional op. On a value nothing else aliases, the result replaces
/// it; written through a chain of slices and selects (`mask[a:b, c:d] = v`), the result is
/// scattered back up the chain (slice_scatter, select_scatter) and replaces the base.
std::vector<ValueId> functionalize(Emit& e, const DNode& d) {
  if (can_functionalize(d.src, d.n) || writes_dead_view(d.src, d.n))
    return {functional_value(e, d)};
  if (!has_inplace_self(d.n)) return {};
  ValueId base = -1;
  std::vector<const Node*> chain =
      view_chain(d.src, d.n, d.n.args[size_t(d.n.schema->index_of("self"))].tensor, &base);
  if (chain.empty()) return {};
  ValueId view_new = functional_value(e, d);
  ValueId cur = view_new;
  for (const Node* link : chain) {
    ValueId parent = (*d.map)[size_t(link->args[size_t(link->schema->index_of("self"))].tensor)];
    auto a = [&](const char* name) { return CallArg{"", link->arg(name)}; };
    cur = link->target == "aten.slice.Tensor"
              ? e.op("aten.slice_scatter.default",
                     {Emit::t(parent), Emit::t(cur), a("dim"), a("start"), a("end"), a("step")})
              : e.op("aten.select_scatter.default",
                     {Emit::t(parent), Emit::t(cur), a("dim"), a("index")});
  }
  for (ValueId v : inplace_aliases(d.src, base)) d.remap.push_back({v, cur});
  return {view_new};
}

DecompFn find_row(std::string_view target) {
  if (DecompFn fn = decomposition_table().find(target)) return fn;
  if (functionalizes(target)) return functionalize;
  return nullptr;
}

using RowFinder = DecompFn (*)(std::string_view);

/// One pass over g; returns whether anything was decomposed.
bool decompose_once(const Graph& g, const std::function<bool(const Node&)>& select, RowFinder find,
                    Graph& out) {
  NameCache names(out);
  ValueMap map = copy_inputs(g, out, {}, &names);
  bool changed = false;
  for (const Node& n : g.nodes) {
    DecompFn fn = find(n.target);
    if (!fn || !select(n)) {
      copy_node(g, n, out, map, &names);
      continue;
    }
    Emit e(out, n.name, &names);
    DNode d{g, n, remap_args(n, map), &map, {}};
    size_t first_new = out.nodes.size();
    std::vector<ValueId> r = fn(e, d);
    if (r.empty()) {
      copy_node(g, n, out, map, &names);
      continue;
    }
    assert(r.size() == n.outputs.size() && "decomposition returned the wrong number of values");
    // An in-place op's rewrite stands for the mutated `self` in every later node.
    if (has_inplace_self(n))
      for (ValueId v : inplace_aliases(g, n.args[size_t(n.schema->index_of("self"))].tensor))
        map[size_t(v)] = r[0];
    for (auto [from, to] : d.remap) map[size_t(from)] = to;
    for (size_t k = 0; k < r.size(); ++k) {
      // Later views rely on the original layout (SDPA's output is [B, L, H, E] in memory).
      r[k] = e.restride(r[k], g.values[n.outputs[k]].meta);
      map[n.outputs[k]] = r[k];
      // The value that replaces an output takes over its name when it is a new single-output
      // node, so later stages and readers still find "gelu" after gelu was decomposed.
      Value& v = out.values[r[k]];
      const std::string& orig = g.values[n.outputs[k]].name;
      if (v.producer < int32_t(first_new) || out.nodes[v.producer].outputs.size() != 1 ||
          names.contains(orig))
        continue;
      v.name = names.take(orig);
      out.nodes[v.producer].name = orig;
    }
    changed = true;
  }
  for (ValueId o : g.outputs) out.outputs.push_back(map[o]);
  out.num_mutation_outputs = g.num_mutation_outputs;
  return changed;
}

/// An in-place op declared with no meta function of its own: computed through its functional op.
bool inplace_composite_has(std::string_view target) {
  std::optional<OpId> id = find_op(target);
  return id && !meta_layer().has(*id) && functionalizes(target);
}

bool composite_has(std::string_view target) {
  return decomposition_table().find(target) != nullptr || inplace_composite_has(target);
}

Graph composite_expand(const Graph& g, const Node& n) {
  DecompFn fn = decomposition_table().find(n.target);
  if (!fn && inplace_composite_has(n.target)) fn = inplace_composite;
  if (!fn) throw Error(g.source, "no decomposition for this op", n.name, n.target);
  Graph out;
  out.source = g.source;
  ValueMap map(g.values.size(), kNoValue);
  for (ValueId v : n.tensor_inputs()) {
    if (v == kNoValue || map[size_t(v)] != kNoValue) continue;
    map[size_t(v)] = out.add_value(g.values[size_t(v)].name, g.values[size_t(v)].meta);
    out.inputs.push_back({map[size_t(v)], InputKind::UserInput, g.values[size_t(v)].name, true});
  }
  NameCache names(out);
  Emit e(out, n.name, &names);
  DNode d{g, n, remap_args(n, map), &map, {}};
  std::vector<ValueId> r;
  try {
    r = fn(e, d);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& err) { // dimension wrapping, broadcasting
    d.fail(err.what());
  }
  if (r.empty()) d.fail("the decomposition does not take these arguments");
  out.outputs = r;
  return out;
}

/// Composite ops get their meta function and eager kernel from this table.
const bool kCompositeHookInstalled = [] {
  set_composite_hook({composite_has, composite_expand});
  return true;
}();

} // namespace

Graph expand_composite(const Graph& g, const Node& n) {
  (void)kCompositeHookInstalled;
  return composite_expand(g, n);
}

std::string functional_target(std::string_view target) {
  size_t dot = target.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || target[dot - 1] != '_') return {};
  // Where the functional op's overload of the same name takes other arguments (pow.Scalar is
  // Scalar ** Tensor, pow_.Scalar is Tensor ** Scalar).
  static const std::pair<std::string_view, std::string_view> kRenamed[] = {
      {"aten.pow_.Scalar", "aten.pow.Tensor_Scalar"},
      {"aten.pow_.Tensor", "aten.pow.Tensor_Tensor"},
      {"aten.floor_divide_.Tensor", "aten.floor_divide.default"},
  };
  for (auto [from, to] : kRenamed)
    if (target == from) return std::string(to);
  std::string base(target.substr(0, dot - 1)), overload(target.substr(dot));
  // PyTorch names the functional variant `<name>_functional` where `<name>` is another op's
  // (normal_ -> normal_functional: normal's overloads take tensor means and deviations).
  for (std::string f : {base + overload, base + "_functional" + overload})
    if (find_op(f)) return f;
  return {};
}

bool functionalizes(std::string_view target) {
  return target_has_tag(target, OpTag::Inplace) &&
         (!functional_target(target).empty() || target == "aten.fill_.Tensor");
}

const OpLayer& decomposition_layer() {
  return decomposition_table();
}
const OpLayer& autograd_form_layer() {
  return autograd_form_table();
}

bool has_decomposition(std::string_view target) {
  return find_row(target) != nullptr;
}

namespace {

// decompose_if with a selection that also sees the graph of the round (the node's operands).
Graph decompose_selected(const Graph& g,
                         const std::function<bool(const Graph&, const Node&)>& select) {
  Graph cur = g;
  // Each round expands one level; rows emit ops at most a few levels deep (sdpa -> _softmax).
  for (int round = 0; round < 16; ++round) {
    Graph next;
    if (!decompose_once(cur, [&](const Node& n) { return select(cur, n); }, find_row, next))
      return next;
    cur = std::move(next);
  }
  assert(false && "decompositions did not reach a fixpoint");
  return cur;
}

} // namespace

Graph decompose_if(const Graph& g, const std::function<bool(const Node&)>& select) {
  return decompose_selected(g, [&](const Graph&, const Node& n) { return select(n); });
}

Graph decompose(const Graph& g) {
  return decompose_if(g, [](const Node&) { return true; });
}

bool cudnn_conv_backward(const Graph& g, const Node& n) {
  if (n.target != "aten.convolution_backward.default" || n.arg("transposed").b) return false;
  std::vector<ValueId> in = {n.arg("grad_output").tensor, n.arg("input").tensor,
                             n.arg("weight").tensor};
  for (ValueId v : in) {
    if (v == kNoValue) return false;
    const TensorMeta& m = g.values[size_t(v)].meta;
    if (m.dim() != 4 || m.dtype != g.values[size_t(in[0])].meta.dtype) return false;
  }
  DType t = g.values[size_t(in[0])].meta.dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16) return false;
  for (const char* name : {"stride", "padding", "dilation"}) {
    size_t k = n.arg(name).ints.size();
    if (k != 1 && k != 2) return false;
  }
  const std::vector<int64_t>& xs = g.values[size_t(in[1])].meta.sizes;
  const std::vector<int64_t>& ws = g.values[size_t(in[2])].meta.sizes;
  int64_t groups = n.arg("groups").i;
  return groups >= 1 && xs[1] % groups == 0 && ws[0] % groups == 0 && ws[1] * groups == xs[1];
}

bool onednn_conv_backward(const Graph& g, const Node& n) {
  if (n.target != "aten.convolution_backward.default" || n.arg("transposed").b) return false;
  ValueId gv = n.arg("grad_output").tensor, xv = n.arg("input").tensor, wv = n.arg("weight").tensor;
  for (ValueId v : {gv, xv, wv}) {
    if (v == kNoValue) return false;
    const TensorMeta& m = g.values[size_t(v)].meta;
    if (m.dim() < 3 || m.dim() > 5 || m.dim() != g.values[size_t(xv)].meta.dim() ||
        m.dtype != DType::F32)
      return false;
  }
  onednn::ConvShape s;
  s.x = g.values[size_t(xv)].meta.sizes;
  s.w = g.values[size_t(wv)].meta.sizes;
  s.out = g.values[size_t(gv)].meta.sizes;
  const size_t sp = s.spatial();
  auto spatial = [&](const char* name, std::vector<int64_t>* v) {
    *v = n.arg(name).ints;
    if (v->size() == 1) v->assign(sp, (*v)[0]);
    return v->size() == sp;
  };
  if (!spatial("stride", &s.stride) || !spatial("padding", &s.padding) ||
      !spatial("dilation", &s.dilation))
    return false;
  s.groups = n.arg("groups").i;
  std::vector<bool> mask = n.arg("output_mask").bools;
  mask.resize(3, false);
  if (!onednn::shape_error(s).empty()) return false;
  return (!mask[0] || onednn::check_conv_backward(s, true).empty()) &&
         (!mask[1] || onednn::check_conv_backward(s, false).empty());
}

/// A convolution node of 5-D input and weight, not transposed (keep_conv3d).
bool conv3d_kept(const Graph& g, const Node& n) {
  if (n.target != "aten.convolution.default" || n.arg("transposed").b) return false;
  std::vector<ValueId> in = n.tensor_inputs();
  return in.size() >= 2 && g.values[size_t(in[0])].meta.sizes.size() == 5 &&
         g.values[size_t(in[1])].meta.sizes.size() == 5;
}

bool cudnn_attention_shapes(const TensorMeta& qm, const TensorMeta& km, const TensorMeta& vm,
                            const TensorMeta* mask, bool gqa) {
  if (qm.dim() != 4 || km.dim() != 4 || vm.dim() != 4) return false;
  if ((qm.dtype != DType::F16 && qm.dtype != DType::BF16) || km.dtype != qm.dtype ||
      vm.dtype != qm.dtype)
    return false;
  auto head_dim_ok = [](int64_t d) { return d > 0 && d % 8 == 0 && d <= 128; };
  const std::vector<int64_t>&qs = qm.sizes, &ks = km.sizes, &vs = vm.sizes;
  // Grouped-query heads: k and v have H / G heads, each shared by G query heads (enable_gqa).
  bool heads_ok = qs[1] == ks[1] || (gqa && ks[1] > 0 && qs[1] % ks[1] == 0);
  bool shapes = qs[0] == ks[0] && qs[0] == vs[0] && heads_ok && ks[1] == vs[1] && ks[2] == vs[2] &&
                qs[3] == ks[3] && head_dim_ok(qs[3]) && head_dim_ok(vs[3]) && qs[0] > 0 &&
                qs[1] > 0 && qs[2] > 0 && ks[2] > 0;
  if (!shapes || !mask) return shapes;
  // A mask (bool: where to attend; float: added to the scores) that broadcasts to
  // [B, H, Sq, Skv]; it becomes cuDNN's additive bias.
  if ((mask->dtype != DType::Bool && !is_floating(mask->dtype)) || mask->dim() > 4) return false;
  const std::vector<int64_t> full = {qs[0], qs[1], qs[2], ks[2]};
  for (size_t i = 0; i < mask->sizes.size(); ++i) {
    int64_t s = mask->sizes[mask->sizes.size() - 1 - i], f = full[3 - i];
    if (s != f && s != 1) return false;
  }
  return true;
}

bool cudnn_attention(const Graph& g, const Node& n) {
  if (n.target != "aten.scaled_dot_product_attention.default" || !n.schema) return false;
  auto given = [&](const char* name) -> const Arg* {
    int i = n.schema->index_of(name);
    return i >= 0 && size_t(i) < n.args.size() && n.args[size_t(i)].kind != Arg::Kind::None
               ? &n.args[size_t(i)]
               : nullptr;
  };
  if (const Arg* p = given("dropout_p"); p && p->scalar() != 0) return false;
  const Arg *q = given("query"), *k = given("key"), *v = given("value");
  if (!q || !k || !v || q->kind != Arg::Kind::Tensor || k->kind != Arg::Kind::Tensor ||
      v->kind != Arg::Kind::Tensor)
    return false;
  const Arg* mask = given("attn_mask");
  if (mask && (mask->kind != Arg::Kind::Tensor || (given("is_causal") && given("is_causal")->b)))
    return false;
  const Arg* gqa = given("enable_gqa");
  return cudnn_attention_shapes(g.values[size_t(q->tensor)].meta, g.values[size_t(k->tensor)].meta,
                                g.values[size_t(v->tensor)].meta,
                                mask ? &g.values[size_t(mask->tensor)].meta : nullptr,
                                gqa && gqa->b);
}

Graph decompose(const Graph& g, const DecomposeOptions& opts) {
  if (!opts.keep_cudnn_conv_backward && !opts.keep_onednn_conv_backward && !opts.keep_conv3d &&
      !opts.keep_cudnn_attention)
    return decompose(g);
  return decompose_selected(g, [&](const Graph& cur, const Node& n) {
    if (opts.keep_cudnn_conv_backward && cudnn_conv_backward(cur, n)) return false;
    if (opts.keep_onednn_conv_backward && onednn_conv_backward(cur, n)) return false;
    if (opts.keep_cudnn_attention && cudnn_attention(cur, n)) return false;
    return !(opts.keep_conv3d && conv3d_kept(cur, n));
  });
}

Graph to_autograd_forms(const Graph& g) {
  Graph out;
  decompose_once(
      g, [](const Node&) { return true; },
      [](std::string_view t) { return autograd_form_table().find(t); }, out);
  return out;
}

} // namespace fxc
