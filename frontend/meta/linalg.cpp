// Meta functions of linear algebra, convolution and attention: mm, bmm, addmm, matmul, linear,
// convolution and conv2d, scaled_dot_product_attention, _cdist_forward,
// _pdist_forward, im2col and col2im; the LAPACK decompositions and solves (LU, Cholesky, QR,
// eigh, SVD, LDL, triangular solves, matrix_exp) with PyTorch's checks and column-major outputs.
// Matrix products are contiguous; convolutions keep channels_last inputs channels_last; the fused
// CPU attention kernel returns empty_like(query).
#include "frontend/meta/meta_util.h"
#include "frontend/resample.h"

#include <map>

namespace fxc::meta_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Matrix products: contiguous outputs.

void check_mm_dtypes(const Ctx& c, const char* a, const char* b) {
  if (c.tensor(a).dtype != c.tensor(b).dtype)
    c.fail(c.desc(a) + " but " + c.desc(b) + " (expected the same dtype)");
}

Sizes mm_shape(const Ctx& c, const char* a, const char* b) {
  const TensorMeta& x = c.tensor(a);
  const TensorMeta& y = c.tensor(b);
  if (x.dim() != 2) c.fail(std::string(a) + " must be a matrix, but " + c.desc(a));
  if (y.dim() != 2) c.fail(std::string(b) + " must be a matrix, but " + c.desc(b));
  if (x.sizes[1] != y.sizes[0]) c.fail(c.desc(a) + " but " + c.desc(b));
  check_mm_dtypes(c, a, b);
  return {x.sizes[0], y.sizes[1]};
}

Metas mm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Sizes s = mm_shape(c, "self", "mat2");
  return {make(c.tensor("self").dtype, s, c.tensor("self").device)};
}

Metas addmm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  Sizes s = mm_shape(c, "mat1", "mat2");
  const TensorMeta& self = c.tensor("self");
  check_mm_dtypes(c, "self", "mat1");
  Sizes b;
  try {
    b = broadcast_shapes(self.sizes, s);
  } catch (const std::invalid_argument&) {
    c.fail(c.desc("self") + " but the product is " + join(s) + " (cannot broadcast)");
  }
  if (b != s) c.fail(c.desc("self") + " but the product is " + join(s) + " (cannot broadcast)");
  return {make(self.dtype, s, self.device)};
}

Metas bmm(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const TensorMeta& y = c.tensor("mat2");
  if (x.dim() != 3) c.fail("batch1 must be a 3D tensor, but " + c.desc("self"));
  if (y.dim() != 3) c.fail("batch2 must be a 3D tensor, but " + c.desc("mat2"));
  if (x.sizes[0] != y.sizes[0] || x.sizes[2] != y.sizes[1])
    c.fail(c.desc("self") + " but " + c.desc("mat2"));
  check_mm_dtypes(c, "self", "mat2");
  return {make(x.dtype, {x.sizes[0], x.sizes[1], y.sizes[2]}, x.device)};
}

// torch.matmul's shape rules; every path in _matmul_impl returns a contiguous result.
TensorMeta matmul_meta(const Ctx& c, const TensorMeta& x, const TensorMeta& y,
                       const std::string& xd, const std::string& yd) {
  const int64_t d1 = x.dim(), d2 = y.dim();
  if (d1 == 0 || d2 == 0)
    c.fail("both arguments to matmul need to be at least 1D, but " + xd + " and " + yd);
  if (x.dtype != y.dtype) c.fail(xd + " but " + yd + " (expected the same dtype)");
  const int64_t k1 = x.sizes.back();
  const int64_t k2 = d2 > 1 ? y.sizes[size_t(d2 - 2)] : y.sizes[0];
  if (k1 != k2) c.fail(xd + " but " + yd);
  Sizes b1(x.sizes.begin(), x.sizes.begin() + std::max<int64_t>(d1 - 2, 0));
  Sizes b2(y.sizes.begin(), y.sizes.begin() + std::max<int64_t>(d2 - 2, 0));
  Sizes out;
  try {
    out = broadcast_shapes(b1, b2);
  } catch (const std::invalid_argument&) {
    c.fail(xd + " but " + yd + " (batch dimensions cannot be broadcast)");
  }
  if (d1 > 1) out.push_back(x.sizes[size_t(d1 - 2)]);
  if (d2 > 1) out.push_back(y.sizes.back());
  return make(x.dtype, out, x.device);
}

Metas matmul(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {matmul_meta(c, c.tensor("self"), c.tensor("other"), c.desc("self"), c.desc("other"))};
}

Metas linear(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const TensorMeta& w = c.tensor("weight");
  if (w.dim() != 1 && w.dim() != 2) c.fail("weight must be 1-D or 2-D, but " + c.desc("weight"));
  TensorMeta wt = w;
  std::reverse(wt.sizes.begin(), wt.sizes.end());
  std::reverse(wt.strides.begin(), wt.strides.end());
  TensorMeta out = matmul_meta(c, x, wt, c.desc("input"), c.desc("weight"));
  if (const TensorMeta* b = c.opt_tensor("bias")) {
    check_same_dtype(c, x, "input", b, "bias");
    Sizes s;
    try {
      s = broadcast_shapes(b->sizes, out.sizes);
    } catch (const std::invalid_argument&) {
      c.fail(c.desc("bias") + " but the output is " + join(out.sizes));
    }
    if (s != out.sizes) c.fail(c.desc("bias") + " but the output is " + join(out.sizes));
  }
  return {out};
}

// ---------------------------------------------------------------------------------------------
// Convolution and pooling.

TensorMeta conv_meta(const Ctx& c, const TensorMeta& x, const TensorMeta& w, const TensorMeta* bias,
                     Sizes stride, Sizes pad, Sizes dil, bool transposed, Sizes out_pad,
                     int64_t groups) {
  const int64_t nd = x.dim();
  if (nd < 3) c.fail("expected a batched input with at least 3 dimensions, got " + format_meta(x));
  const size_t sp = size_t(nd - 2);
  if (w.dim() != nd)
    c.fail("expected " + std::to_string(w.dim()) + "-dimensional input for " +
           std::to_string(w.dim()) + "-dimensional weight " + join(w.sizes) + ", but got input " +
           format_meta(x));
  if (x.dtype != w.dtype)
    c.fail("input is " + format_meta(x) + " but weight is " + format_meta(w) + " (dtypes differ)");
  auto fit = [&](Sizes& v, const char* what) {
    if (v.size() == 1) v.assign(sp, v[0]);
    if (v.size() != sp)
      c.fail(std::string(what) + " " + join(v) + " does not match " + std::to_string(sp) +
             " spatial dimensions");
  };
  fit(stride, "stride");
  fit(pad, "padding");
  fit(dil, "dilation");
  if (transposed) fit(out_pad, "output_padding");
  for (size_t i = 0; i < sp; ++i) {
    if (stride[i] <= 0) c.fail("non-positive stride is not supported: " + join(stride));
    if (pad[i] < 0) c.fail("negative padding is not supported: " + join(pad));
    if (dil[i] <= 0) c.fail("dilation should be greater than zero: " + join(dil));
  }
  if (groups <= 0) c.fail("non-positive groups is not supported");
  int64_t out_ch;
  if (transposed) {
    if (x.sizes[1] != w.sizes[0])
      c.fail("given transposed=1 and weight " + join(w.sizes) + ", expected input " +
             join(x.sizes) + " to have " + std::to_string(w.sizes[0]) + " channels, but got " +
             std::to_string(x.sizes[1]));
    out_ch = c.checked(__int128(w.sizes[1]) * groups, "output channels");
  } else {
    if (w.sizes[0] % groups != 0)
      c.fail("given groups=" + std::to_string(groups) + ", expected weight " + join(w.sizes) +
             " to be divisible by " + std::to_string(groups) + " at dimension 0");
    if (__int128(w.sizes[1]) * groups != x.sizes[1])
      c.fail("given groups=" + std::to_string(groups) + " and weight " + join(w.sizes) +
             ", expected input " + join(x.sizes) + " to have " +
             std::to_string(__int128(w.sizes[1]) * groups > INT64_MAX ? -1 : w.sizes[1] * groups) +
             " channels, but got " + std::to_string(x.sizes[1]));
    out_ch = w.sizes[0];
  }
  if (bias && (bias->dim() != 1 || bias->sizes[0] != out_ch))
    c.fail("given weight " + join(w.sizes) + ", expected bias to be 1-dimensional with " +
           std::to_string(out_ch) + " elements, but bias is " + format_meta(*bias));
  if (bias && bias->dtype != x.dtype)
    c.fail("input is " + format_meta(x) + " but bias is " + format_meta(*bias) +
           " (dtypes differ)");
  Sizes out{x.sizes[0], out_ch};
  for (size_t i = 0; i < sp; ++i) {
    __int128 in = x.sizes[2 + i], k = w.sizes[2 + i];
    __int128 o;
    if (transposed) {
      o = (in - 1) * stride[i] - 2 * __int128(pad[i]) + __int128(dil[i]) * (k - 1) + out_pad[i] + 1;
    } else {
      __int128 eff = in + 2 * __int128(pad[i]) - __int128(dil[i]) * (k - 1) - 1;
      if (eff < 0)
        c.fail("calculated padded input size per channel is smaller than the kernel: input " +
               join(x.sizes) + ", weight " + join(w.sizes) + ", padding " + join(pad) +
               ", dilation " + join(dil));
      o = eff / stride[i] + 1;
    }
    if (o <= 0 || o > INT64_MAX)
      c.fail("calculated output size is too small or too large for input " + join(x.sizes) +
             " and weight " + join(w.sizes));
    out.push_back(int64_t(o));
  }
  if (x.sizes[1] == 0) out[1] = 0;
  c.check_sizes(out);
  bool cl = nd == 4 && (suggests_channels_last(x) ||
                        (x.device.kind == Device::CUDA && suggests_channels_last(w)));
  return cl ? make_strided(x.dtype, out, channels_last_strides(out), x.device)
            : make(x.dtype, out, x.device);
}

Metas convolution(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {conv_meta(c, c.tensor("input"), c.tensor("weight"), c.opt_tensor("bias"),
                    c.ints("stride"), c.ints("padding"), c.ints("dilation"), c.bool_("transposed"),
                    c.ints("output_padding"), c.int_("groups"))};
}

// conv1d/conv2d/conv3d: a batched or unbatched (unsqueeze(0), then squeeze the result) input.
Metas conv_nd(const Graph& g, const Node& n, size_t sp) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("input");
  const int64_t s = int64_t(sp);
  if (x.dim() != s + 1 && x.dim() != s + 2)
    c.fail("expected " + std::to_string(s + 1) + "D (unbatched) or " + std::to_string(s + 2) +
           "D (batched) input to conv" + std::to_string(s) + "d, but " + c.desc("input"));
  TensorMeta in = x;
  if (x.dim() == s + 1) {
    in.sizes.insert(in.sizes.begin(), 1);
    in.strides.insert(in.strides.begin(), c.checked(__int128(x.sizes[0]) * x.strides[0], "stride"));
  }
  TensorMeta out = conv_meta(c, in, c.tensor("weight"), c.opt_tensor("bias"),
                             c.ints_n("stride", sp), c.ints_n("padding", sp),
                             c.ints_n("dilation", sp), false, Sizes(sp, 0), c.int_("groups"));
  if (x.dim() == s + 1) {
    out.sizes.erase(out.sizes.begin());
    out.strides.erase(out.strides.begin());
  }
  return {out};
}
Metas conv1d(const Graph& g, const Node& n) {
  return conv_nd(g, n, 1);
}
Metas conv2d(const Graph& g, const Node& n) {
  return conv_nd(g, n, 2);
}
Metas conv3d(const Graph& g, const Node& n) {
  return conv_nd(g, n, 3);
}

// ---------------------------------------------------------------------------------------------
// Attention.

// Whether `v` required grad when torch.export traced the graph: parameters do, and so does
// every floating-point result of a differentiable op that reads one. (Exports made under
// torch.no_grad() are the exception this cannot see.)
bool required_grad(const Graph& g, ValueId v, std::map<ValueId, bool>& memo, int depth = 0) {
  if (v < 0 || size_t(v) >= g.values.size()) return false;
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  bool r = false;
  const Value& val = g.values[size_t(v)];
  if (val.producer < 0) {
    for (const GraphInput& in : g.inputs)
      if (in.value == v) r = in.kind == InputKind::Parameter;
  } else if (depth < 4096 && is_floating(val.meta.dtype)) {
    const Node& p = g.nodes[size_t(val.producer)];
    if (target_has_tag(p.target, OpTag::Differentiable))
      for (ValueId in : p.tensor_inputs())
        if (required_grad(g, in, memo, depth + 1)) {
          r = true;
          break;
        }
  }
  memo[v] = r;
  return r;
}

Metas sdpa(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& q = c.tensor("query");
  const TensorMeta& k = c.tensor("key");
  const TensorMeta& v = c.tensor("value");
  const TensorMeta* mask = c.opt_tensor("attn_mask");
  if (q.dtype != k.dtype || q.dtype != v.dtype)
    c.fail("expected query, key and value to have the same dtype, but " + c.desc("query") + ", " +
           c.desc("key") + " and " + c.desc("value"));
  if (!is_floating(q.dtype))
    c.fail("scaled_dot_product_attention needs floating point inputs, but " + c.desc("query"));
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    c.fail("query, key and value must have at least 2 dimensions, but " + c.desc("query") + ", " +
           c.desc("key") + " and " + c.desc("value"));
  if (mask && c.bool_("is_causal"))
    c.fail("explicit attn_mask should not be set when is_causal=True");
  if (mask && mask->dtype != DType::Bool && mask->dtype != q.dtype)
    c.fail("attn_mask must be bool or match the query dtype, but " + c.desc("attn_mask"));
  if (q.sizes.back() != k.sizes.back())
    c.fail(c.desc("query") + " but " + c.desc("key") + " (head sizes differ)");
  if (k.sizes[k.sizes.size() - 2] != v.sizes[v.sizes.size() - 2])
    c.fail(c.desc("key") + " but " + c.desc("value") + " (sequence lengths differ)");
  const bool gqa = c.bool_("enable_gqa");
  // Shape: q[..., L, E] @ k^T -> [..., L, S] (+ mask) @ v[..., S, Ev] -> [..., L, Ev].
  Sizes qb(q.sizes.begin(), q.sizes.end() - 2), kb(k.sizes.begin(), k.sizes.end() - 2),
      vb(v.sizes.begin(), v.sizes.end() - 2);
  if (gqa && q.dim() >= 3 && k.dim() == q.dim() && v.dim() == q.dim()) {
    int64_t hq = q.sizes[q.sizes.size() - 3], hk = k.sizes[k.sizes.size() - 3],
            hv = v.sizes[v.sizes.size() - 3];
    if (hk == 0 || hv == 0 || hq % hk != 0 || hq % hv != 0)
      c.fail("with enable_gqa, the number of query heads must be a multiple of the key/value "
             "heads, but " +
             c.desc("query") + ", " + c.desc("key") + " and " + c.desc("value"));
    kb[kb.size() - 1] = hq;
    vb[vb.size() - 1] = hq;
  }
  Sizes batch;
  try {
    batch = broadcast_shapes(broadcast_shapes(qb, kb), vb);
  } catch (const std::invalid_argument&) {
    c.fail("batch dimensions of " + c.desc("query") + ", " + c.desc("key") + " and " +
           c.desc("value") + " cannot be broadcast");
  }
  Sizes out = batch;
  out.push_back(q.sizes[q.sizes.size() - 2]);
  out.push_back(v.sizes.back());
  if (mask) {
    Sizes scores = batch;
    scores.push_back(q.sizes[q.sizes.size() - 2]);
    scores.push_back(k.sizes[k.sizes.size() - 2]);
    Sizes b;
    try {
      b = broadcast_shapes(mask->sizes, scores);
    } catch (const std::invalid_argument&) {
      c.fail(c.desc("attn_mask") + " but the attention scores are " + join(scores) +
             " (cannot broadcast)");
    }
    if (b != scores)
      c.fail(c.desc("attn_mask") + " but the attention scores are " + join(scores) +
             " (cannot broadcast)");
  }
  // Which kernel runs decides the layout: the fused kernels give empty_like(query), the math
  // fallback a contiguous result.
  const bool four_d = q.dim() == 4 && k.dim() == 4 && v.dim() == 4;
  const bool same_heads = four_d && q.sizes[0] == k.sizes[0] && q.sizes[0] == v.sizes[0] &&
                          q.sizes[1] == k.sizes[1] && q.sizes[1] == v.sizes[1];
  if (q.device.kind == Device::CPU) {
    bool mask_ok = true;
    if (mask) {
      const Sizes& m = mask->sizes;
      int64_t L = q.sizes[2], S = k.sizes[2];
      mask_ok = m.size() >= 2 && (m[m.size() - 2] == L || m[m.size() - 2] == 1) &&
                (m.back() == S || m.back() == 1) &&
                (m.size() == 2 || (m.size() == 4 && (m[0] == 1 || m[0] == q.sizes[0]) &&
                                   (m[1] == 1 || m[1] == q.sizes[1])));
    }
    // PyTorch's CPU flash kernel takes no mask that requires grad (T5's position bias, made
    // from a parameter): the math fallback runs then.
    if (mask) {
      std::map<ValueId, bool> memo;
      mask_ok = mask_ok && !required_grad(g, c.arg("attn_mask").tensor, memo);
    }
    bool flash = four_d && same_heads && c.float_("dropout_p") == 0 && mask_ok &&
                 q.sizes.back() == v.sizes.back() && q.sizes[2] != 0 && k.sizes[2] != 0 &&
                 q.strides.back() == 1 && k.strides.back() == 1 && v.strides.back() == 1;
    if (flash) return {empty_like_preserve(q, q.dtype)};
  } else if (same_heads) {
    if (q.dtype != DType::F32 && q.dtype != DType::F64 && q.sizes.back() == v.sizes.back()) {
      // flash: empty_like(query.transpose(1, 2)).transpose(1, 2)
      TensorMeta qt = q;
      std::swap(qt.sizes[1], qt.sizes[2]);
      std::swap(qt.strides[1], qt.strides[2]);
      TensorMeta o = empty_like_preserve(qt, q.dtype);
      std::swap(o.sizes[1], o.sizes[2]);
      std::swap(o.strides[1], o.strides[2]);
      return {o};
    }
    // memory-efficient: empty(B, L, H, Ev).transpose(1, 2)
    Sizes blhe{out[0], out[2], out[1], out[3]};
    Sizes st = dense_strides(blhe);
    return {make_strided(q.dtype, out, {st[0], st[2], st[1], st[3]}, q.device)};
  }
  return {make(q.dtype, out, q.device)};
}

// _cdist_forward: x1 (..., P, M) and x2 (..., R, M), batch dims broadcast -> (..., P, R).
Metas cdist_forward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x1 = c.tensor("x1");
  const TensorMeta& x2 = c.tensor("x2");
  if (x1.dim() < 2) c.fail("cdist only supports at least 2D tensors, X1 got: " + c.desc("x1"));
  if (x2.dim() < 2) c.fail("cdist only supports at least 2D tensors, X2 got: " + c.desc("x2"));
  if (x1.sizes.back() != x2.sizes.back())
    c.fail("X1 and X2 must have the same number of columns, but " + c.desc("x1") + " and " +
           c.desc("x2"));
  if (!is_floating(x1.dtype) || x1.dtype != x2.dtype)
    c.fail("cdist only supports floating-point dtypes of the same type, but " + c.desc("x1") +
           " and " + c.desc("x2"));
  double p = c.float_("p");
  if (!(p >= 0)) c.fail("cdist only supports non-negative p values, got " + std::to_string(p));
  Sizes b1(x1.sizes.begin(), x1.sizes.end() - 2), b2(x2.sizes.begin(), x2.sizes.end() - 2);
  Sizes out;
  try {
    out = broadcast_shapes(b1, b2);
  } catch (const std::exception& e) {
    c.fail(std::string("cdist: the batch dims of x1 and x2 do not broadcast: ") + e.what());
  }
  out.push_back(x1.sizes[x1.sizes.size() - 2]);
  out.push_back(x2.sizes[x2.sizes.size() - 2]);
  c.check_sizes(out);
  return {make(x1.dtype, out, x1.device)};
}

// _pdist_forward: the distances between the rows of a 2-D input, pairs i < j in row-major order.
Metas pdist_forward(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() != 2) c.fail("pdist only supports 2D tensors, got: " + c.desc("self"));
  if (!is_floating(x.dtype))
    c.fail("pdist only supports floating-point dtypes, but " + c.desc("self"));
  double p = c.float_("p");
  if (!(p >= 0)) c.fail("pdist only supports non-negative p values, got " + std::to_string(p));
  int64_t N = x.sizes[0];
  return {make(x.dtype, {N > 1 ? N * (N - 1) / 2 : 0}, x.device)};
}

// The sliding-block geometry of im2col/col2im over spatial sizes (H, W): blocks per dim, with
// PyTorch's argument checks (Im2Col.cpp's im2col_shape_check / col2im_shape_check).
Sizes sliding_blocks(const Ctx& c, int64_t H, int64_t W) {
  Sizes k = c.ints_n("kernel_size", 2), d = c.ints_n("dilation", 2), p = c.ints_n("padding", 2),
        s = c.ints_n("stride", 2);
  if (k[0] <= 0 || k[1] <= 0)
    c.fail("kernel size should be greater than zero, but got kernel_size " + join(k));
  if (d[0] <= 0 || d[1] <= 0)
    c.fail("dilation should be greater than zero, but got dilation " + join(d));
  if (p[0] < 0 || p[1] < 0) c.fail("padding should be non-negative, but got padding " + join(p));
  if (s[0] <= 0 || s[1] <= 0)
    c.fail("stride should be greater than zero, but got stride " + join(s));
  Sizes out;
  for (int i = 0; i < 2; ++i) {
    int64_t in = i == 0 ? H : W;
    out.push_back(resample::pool_out_size(in, k[size_t(i)], p[size_t(i)], s[size_t(i)],
                                          d[size_t(i)], false)); // div_rtn, as PyTorch
  }
  if (out[0] < 1 || out[1] < 1)
    c.fail("given an input with spatial size (" + std::to_string(H) + ", " + std::to_string(W) +
           "), the array of sliding blocks is (" + std::to_string(out[0]) + ", " +
           std::to_string(out[1]) + "), but its components must be at least one");
  return out;
}

// im2col: (N,) C, H, W -> (N,) C * kh * kw, L.
Metas im2col(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() != 3 && x.dim() != 4)
    c.fail("expected a 3D or 4D (batch mode) tensor for input, but " + c.desc("self"));
  int64_t H = x.sizes[size_t(x.dim() - 2)], W = x.sizes[size_t(x.dim() - 1)];
  if (x.sizes[size_t(x.dim() - 3)] == 0 || H == 0 || W == 0)
    c.fail("expected non-empty non-batch dimensions, but " + c.desc("self"));
  Sizes b = sliding_blocks(c, H, W), k = c.ints_n("kernel_size", 2);
  Sizes out(x.sizes.begin(), x.sizes.end() - 3);
  out.push_back(x.sizes[size_t(x.dim() - 3)] * k[0] * k[1]);
  out.push_back(b[0] * b[1]);
  c.check_sizes(out);
  return {make(x.dtype, out, x.device)};
}

// col2im: (N,) C * kh * kw, L -> (N,) C, H, W with (H, W) = output_size.
Metas col2im(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() != 2 && x.dim() != 3)
    c.fail("expected a 2D or 3D (batch mode) tensor for input, but " + c.desc("self"));
  Sizes os = c.ints_n("output_size", 2), k = c.ints_n("kernel_size", 2);
  if (os.size() != 2 || os[0] <= 0 || os[1] <= 0)
    c.fail("output_size must be two positive ints, got " + join(c.ints("output_size")));
  Sizes b = sliding_blocks(c, os[0], os[1]);
  int64_t ck = x.sizes[size_t(x.dim() - 2)], L = x.sizes[size_t(x.dim() - 1)];
  if (ck == 0 || ck % (k[0] * k[1]) != 0)
    c.fail("expected size of input's dimension 1 to be divisible by the product of kernel_size, "
           "but " +
           c.desc("self"));
  if (L != b[0] * b[1])
    c.fail("given output_size " + join(os) + ", the input's last dim must be " +
           std::to_string(b[0] * b[1]) + " sliding blocks, but " + c.desc("self"));
  Sizes out(x.sizes.begin(), x.sizes.end() - 2);
  out.insert(out.end(), {ck / (k[0] * k[1]), os[0], os[1]});
  c.check_sizes(out);
  return {make(x.dtype, out, x.device)};
}

// ---------------------------------------------------------------------------------------------
// Decompositions and solves (LU, Cholesky, QR, eigh, SVD, LDL, triangular solves): PyTorch's
// shape checks, with matrix outputs in batched column-major layout (what LAPACK writes, and
// the strides PyTorch gives them) and int32 pivots and info.

// PyTorch's batched_matrix_contiguous_strides: row-major, or column-major in the last two dims.
Sizes matrix_strides(const Sizes& sizes, bool f_contig) {
  Sizes st = dense_strides(sizes);
  const size_t d = sizes.size();
  if (f_contig && d >= 2) {
    st[d - 1] = std::max<int64_t>(sizes[d - 2], 1);
    st[d - 2] = 1;
  }
  return st;
}

TensorMeta fmat(DType dt, const Sizes& sizes, Device dev) {
  return make_strided(dt, sizes, matrix_strides(sizes, true), dev);
}

Sizes drop_last(const Sizes& s, size_t k) {
  return Sizes(s.begin(), s.end() - std::ptrdiff_t(k));
}

// `name` is a batch of matrices of a floating dtype (square when asked), as PyTorch checks it.
const TensorMeta& check_matrix(const Ctx& c, const char* name, const char* op, bool square) {
  const TensorMeta& a = c.tensor(name);
  if (a.dim() < 2)
    c.fail(std::string(op) + ": The input tensor " + name +
           " must have at least 2 dimensions, but " + c.desc(name));
  if (square && a.sizes[a.sizes.size() - 1] != a.sizes[a.sizes.size() - 2])
    c.fail(std::string(op) + ": " + name + " must be batches of square matrices, but " +
           c.desc(name));
  if (!is_floating(a.dtype))
    c.fail(std::string(op) + ": Expected a floating point tensor as input, but " + c.desc(name));
  return a;
}

// The broadcast batch shape of two batches of matrices.
Sizes batch_broadcast(const Ctx& c, const TensorMeta& a, const char* an, const TensorMeta& b,
                      const char* bn) {
  try {
    return broadcast_shapes(drop_last(a.sizes, 2), drop_last(b.sizes, 2));
  } catch (const std::invalid_argument&) {
    c.fail(c.desc(an) + " but " + c.desc(bn) + " (batch dimensions cannot be broadcast)");
  }
}

// B against the square matrix A for a solve (PyTorch's checkInputsSolver): A's size matches
// B's rows (left) or columns (right).
void check_solver(const Ctx& c, const TensorMeta& A, const char* an, const TensorMeta& B,
                  const char* bn, bool left, const char* op) {
  const int64_t n = A.sizes.back();
  const int64_t k = left ? B.sizes[B.sizes.size() - 2] : B.sizes.back();
  if (n != k)
    c.fail(std::string(op) + ": Incompatible shapes of A and B for the equation " +
           (left ? "AX = B" : "XA = B") + ": " + c.desc(an) + " but " + c.desc(bn));
  if (A.dtype != B.dtype)
    c.fail(std::string(op) + ": Expected A and B to have the same dtype, but " + c.desc(an) +
           " and " + c.desc(bn));
}

Sizes with_matrix(Sizes batch, int64_t r, int64_t col) {
  batch.push_back(r);
  batch.push_back(col);
  return batch;
}

Metas linalg_inv_ex(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "linalg.inv", true);
  return {fmat(a.dtype, a.sizes, a.device), make(DType::I32, drop_last(a.sizes, 2), a.device)};
}

Metas linalg_cholesky_ex(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "self", "linalg.cholesky", true);
  return {fmat(a.dtype, a.sizes, a.device), make(DType::I32, drop_last(a.sizes, 2), a.device)};
}

Metas linalg_lu_factor_ex(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "torch.lu_factor", false);
  const int64_t m = a.sizes[a.sizes.size() - 2], k = std::min(m, a.sizes.back());
  Sizes piv = drop_last(a.sizes, 2);
  piv.push_back(k);
  return {fmat(a.dtype, a.sizes, a.device), make(DType::I32, piv, a.device),
          make(DType::I32, drop_last(a.sizes, 2), a.device)};
}

Metas linalg_det(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "linalg.det", true);
  return {make(a.dtype, drop_last(a.sizes, 2), a.device), fmat(a.dtype, a.sizes, a.device),
          make(DType::I32, drop_last(a.sizes, 1), a.device)};
}

Metas linalg_slogdet(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "linalg.slogdet", true);
  Sizes b = drop_last(a.sizes, 2);
  return {make(a.dtype, b, a.device), make(a.dtype, b, a.device), fmat(a.dtype, a.sizes, a.device),
          make(DType::I32, drop_last(a.sizes, 1), a.device)};
}

// PyTorch's linalg_solve_is_vector_rhs: B is a (batch of) vector(s).
bool solve_vector_rhs(const TensorMeta& A, const TensorMeta& B) {
  return B.dim() == 1 || (A.dim() - 1 == B.dim() && B.sizes == drop_last(A.sizes, 1));
}

Metas linalg_solve_ex(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& A = check_matrix(c, "A", "linalg.solve", true);
  const TensorMeta& B = c.tensor("B");
  const bool left = c.bool_("left");
  const bool vec = solve_vector_rhs(A, B);
  TensorMeta B2 = B;
  if (vec) B2.sizes.push_back(1), B2.strides.push_back(1);
  if (B2.dim() < 2) c.fail("linalg.solve: " + c.desc("B") + " (expected at least 1 dimension)");
  if (!left && vec)
    c.fail("linalg.solve: Vector broadcasting of the left hand side is not supported for "
           "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)");
  check_solver(c, A, "A", B2, "B", left, "linalg.solve");
  Sizes out = batch_broadcast(c, B2, "B", A, "A");
  out.push_back(B2.sizes[B2.sizes.size() - 2]);
  out.push_back(B2.sizes.back());
  if (vec) out.pop_back();
  return {make_strided(B.dtype, out, matrix_strides(out, left), B.device),
          fmat(A.dtype, A.sizes, A.device), make(DType::I32, drop_last(A.sizes, 1), A.device),
          make(DType::I32, drop_last(A.sizes, 2), A.device)};
}

Metas linalg_lu_solve(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& LU = check_matrix(c, "LU", "linalg.lu_solve", true);
  const TensorMeta& B = c.tensor("B");
  const TensorMeta& piv = c.tensor("pivots");
  const bool left = c.bool_("left");
  if (B.dim() < 2) c.fail("linalg.lu_solve: B must have at least 2 dimensions, but " + c.desc("B"));
  check_solver(c, LU, "LU", B, "B", left, "linalg.lu_solve");
  if (piv.dtype != DType::I32)
    c.fail("linalg.lu_solve: pivots should be a Tensor of scalar type int32, but " +
           c.desc("pivots"));
  if (piv.dim() < 1 || piv.sizes.back() != LU.sizes.back() ||
      drop_last(piv.sizes, 1) != drop_last(LU.sizes, 2))
    c.fail("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the "
           "matrix, but " +
           c.desc("pivots") + " and " + c.desc("LU"));
  Sizes out = batch_broadcast(c, B, "B", LU, "LU");
  out.push_back(B.sizes[B.sizes.size() - 2]);
  out.push_back(B.sizes.back());
  return {make_strided(B.dtype, out, matrix_strides(out, left), B.device)};
}

Metas linalg_lu(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "linalg.lu", false);
  const int64_t m = a.sizes[a.sizes.size() - 2], nn = a.sizes.back(), k = std::min(m, nn);
  Sizes b = drop_last(a.sizes, 2);
  TensorMeta P = c.bool_("pivot") ? make(a.dtype, with_matrix(b, m, m), a.device)
                                  : make(a.dtype, {0}, a.device);
  return {P, make(a.dtype, with_matrix(b, m, k), a.device),
          make(a.dtype, with_matrix(b, k, nn), a.device)};
}

Metas lu_unpack(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "LU_data", "torch.lu_unpack", false);
  const TensorMeta& piv = c.tensor("LU_pivots");
  const int64_t m = a.sizes[a.sizes.size() - 2], nn = a.sizes.back(), k = std::min(m, nn);
  if (piv.dtype != DType::I32)
    c.fail("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
           "dtype, but " +
           c.desc("LU_pivots"));
  if (piv.dim() < 1 || piv.sizes.back() != k)
    c.fail("torch.lu_unpack: LU_pivots.size(-1) must be min(m, n), but " + c.desc("LU_pivots") +
           " and " + c.desc("LU_data"));
  Sizes b = drop_last(a.sizes, 2);
  const bool data = c.bool_("unpack_data"), pivots = c.bool_("unpack_pivots");
  return {pivots ? make(a.dtype, with_matrix(b, m, m), a.device) : make(a.dtype, {0}, a.device),
          data ? make(a.dtype, with_matrix(b, m, k), a.device) : make(a.dtype, {0}, a.device),
          data ? make(a.dtype, with_matrix(b, k, nn), a.device) : make(a.dtype, {0}, a.device)};
}

Metas triangular_solve(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& B = c.tensor("self");
  const TensorMeta& A = check_matrix(c, "A", "triangular_solve", true);
  if (B.dim() < 2)
    c.fail("torch.triangular_solve: Expected b to have at least 2 dimensions, but " +
           c.desc("self"));
  check_solver(c, A, "A", B, "self", true, "triangular_solve");
  Sizes b = batch_broadcast(c, B, "self", A, "A");
  Sizes bs = with_matrix(b, B.sizes[B.sizes.size() - 2], B.sizes.back());
  Sizes as = with_matrix(b, A.sizes.back(), A.sizes.back());
  return {fmat(B.dtype, bs, B.device), fmat(A.dtype, as, A.device)};
}

Metas linalg_solve_triangular(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& A = check_matrix(c, "self", "linalg.solve_triangular", true);
  const TensorMeta& B = c.tensor("B");
  const bool left = c.bool_("left");
  if (B.dim() < 2)
    c.fail("linalg.solve_triangular: The input tensor B must have at least 2 dimensions, but " +
           c.desc("B"));
  check_solver(c, A, "self", B, "B", left, "linalg.solve_triangular");
  Sizes out = with_matrix(batch_broadcast(c, B, "B", A, "self"), B.sizes[B.sizes.size() - 2],
                          B.sizes.back());
  return {fmat(B.dtype, out, B.device)};
}

Metas cholesky_solve(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& B = c.tensor("self");
  const TensorMeta& L = check_matrix(c, "input2", "cholesky_solve", true);
  if (B.dim() < 2)
    c.fail("cholesky_solve: b should have at least 2 dimensions, but " + c.desc("self"));
  check_solver(c, L, "input2", B, "self", true, "cholesky_solve");
  Sizes out = with_matrix(batch_broadcast(c, B, "self", L, "input2"), B.sizes[B.sizes.size() - 2],
                          B.sizes.back());
  return {fmat(B.dtype, out, B.device)};
}

Metas cholesky_inverse(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "self", "cholesky_inverse", true);
  return {fmat(a.dtype, a.sizes, a.device)};
}

Metas linalg_qr(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "linalg.qr", false);
  const std::string& mode = c.str("mode");
  if (mode != "reduced" && mode != "complete" && mode != "r")
    c.fail("qr received unrecognized mode '" + mode +
           "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const int64_t m = a.sizes[a.sizes.size() - 2], nn = a.sizes.back(), k = std::min(m, nn);
  Sizes b = drop_last(a.sizes, 2);
  const bool complete = mode == "complete";
  TensorMeta Q = mode == "r" ? make(a.dtype, {0}, a.device)
                             : fmat(a.dtype, with_matrix(b, m, complete ? m : k), a.device);
  return {Q, fmat(a.dtype, with_matrix(b, complete ? m : k, nn), a.device)};
}

Metas geqrf(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "self", "geqrf", false);
  Sizes tau = drop_last(a.sizes, 2);
  tau.push_back(std::min(a.sizes[a.sizes.size() - 2], a.sizes.back()));
  return {fmat(a.dtype, a.sizes, a.device), make(a.dtype, tau, a.device)};
}

Metas householder_product(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "input", "torch.linalg.householder_product", false);
  const TensorMeta& tau = c.tensor("tau");
  const int64_t m = a.sizes[a.sizes.size() - 2], nn = a.sizes.back();
  if (m < nn)
    c.fail("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
           "input.shape[-1], but " +
           c.desc("input"));
  if (tau.dim() != a.dim() - 1 || tau.sizes.back() > nn ||
      drop_last(tau.sizes, 1) != drop_last(a.sizes, 2))
    c.fail("torch.linalg.householder_product: tau must have one dimension fewer than input, the "
           "same batch dimensions and at most input.shape[-1] elements, but " +
           c.desc("tau") + " and " + c.desc("input"));
  if (tau.dtype != a.dtype)
    c.fail("torch.linalg.householder_product: tau dtype differs from input: " + c.desc("tau"));
  return {fmat(a.dtype, a.sizes, a.device)};
}

Metas ormqr(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "self", "torch.ormqr", false);
  const TensorMeta& tau = c.tensor("input2");
  const TensorMeta& C = check_matrix(c, "input3", "torch.ormqr", false);
  const bool left = c.bool_("left");
  const int64_t mm = a.sizes[a.sizes.size() - 2];
  const int64_t cdim = left ? C.sizes[C.sizes.size() - 2] : C.sizes.back();
  if (cdim != mm)
    c.fail("torch.ormqr: other.shape[" + std::string(left ? "-2" : "-1") +
           "] must be equal to input.shape[-2], but " + c.desc("input3") + " and " +
           c.desc("self"));
  if (tau.dim() != a.dim() - 1 || tau.sizes.back() > mm ||
      drop_last(tau.sizes, 1) != drop_last(a.sizes, 2) || C.dim() != a.dim() ||
      drop_last(C.sizes, 2) != drop_last(a.sizes, 2))
    c.fail("torch.ormqr: input, tau and other must have matching batch dimensions, but " +
           c.desc("self") + ", " + c.desc("input2") + " and " + c.desc("input3"));
  if (tau.dtype != a.dtype || C.dtype != a.dtype)
    c.fail("torch.ormqr: input, tau and other must have the same dtype, but " + c.desc("self") +
           ", " + c.desc("input2") + " and " + c.desc("input3"));
  return {fmat(C.dtype, C.sizes, C.device)};
}

Metas linalg_eigh(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "linalg.eigh", true);
  const std::string& uplo = c.str("UPLO");
  if (uplo != "L" && uplo != "U" && uplo != "l" && uplo != "u")
    c.fail("Expected UPLO argument to be 'L' or 'U', but got " + uplo);
  return {make(a.dtype, drop_last(a.sizes, 1), a.device),
          c.bool_("compute_v") ? fmat(a.dtype, a.sizes, a.device) : make(a.dtype, {0}, a.device)};
}

Metas linalg_svd(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "A", "linalg.svd", false);
  if (c.has("driver"))
    c.fail("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
           "cuSOLVER backend");
  const int64_t m = a.sizes[a.sizes.size() - 2], nn = a.sizes.back(), k = std::min(m, nn);
  const bool full = c.bool_("full_matrices");
  Sizes b = drop_last(a.sizes, 2);
  Sizes s = b;
  s.push_back(k);
  if (!c.bool_("compute_uv"))
    return {make(a.dtype, {0}, a.device), make(a.dtype, s, a.device), make(a.dtype, {0}, a.device)};
  return {fmat(a.dtype, with_matrix(b, m, full ? m : k), a.device), make(a.dtype, s, a.device),
          fmat(a.dtype, with_matrix(b, full ? nn : k, nn), a.device)};
}

Metas linalg_ldl_factor_ex(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "self", "torch.linalg.ldl_factor_ex", true);
  return {fmat(a.dtype, a.sizes, a.device), make(DType::I32, drop_last(a.sizes, 1), a.device),
          make(DType::I32, drop_last(a.sizes, 2), a.device)};
}

Metas linalg_ldl_solve(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& LD = check_matrix(c, "LD", "torch.linalg.ldl_solve", true);
  const TensorMeta& piv = c.tensor("pivots");
  const TensorMeta& B = c.tensor("B");
  if (B.dim() < 2)
    c.fail("torch.linalg.ldl_solve: B must have at least 2 dimensions, but " + c.desc("B"));
  check_solver(c, LD, "LD", B, "B", true, "torch.linalg.ldl_solve");
  if (piv.dtype != DType::I32 || piv.dim() < 1 || piv.sizes.back() != LD.sizes.back())
    c.fail("torch.linalg.ldl_solve: expected int32 pivots with LD.shape[-1] entries, but " +
           c.desc("pivots"));
  Sizes out = with_matrix(batch_broadcast(c, B, "B", LD, "LD"), B.sizes[B.sizes.size() - 2],
                          B.sizes.back());
  return {fmat(B.dtype, out, B.device)};
}

Metas linalg_matrix_exp(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& a = check_matrix(c, "self", "linalg.matrix_exp", true);
  return {make(a.dtype, a.sizes, a.device)};
}

const OpTable<MetaFn>::Row kLinalgMeta[] = {
    {OpId::_linalg_det, guarded<linalg_det>},
    {OpId::_linalg_eigh, guarded<linalg_eigh>},
    {OpId::_linalg_slogdet, guarded<linalg_slogdet>},
    {OpId::_linalg_solve_ex, guarded<linalg_solve_ex>},
    {OpId::_linalg_svd, guarded<linalg_svd>},
    {OpId::cholesky_inverse, guarded<cholesky_inverse>},
    {OpId::cholesky_solve, guarded<cholesky_solve>},
    {OpId::geqrf, guarded<geqrf>},
    {OpId::linalg_cholesky_ex, guarded<linalg_cholesky_ex>},
    {OpId::linalg_householder_product, guarded<householder_product>},
    {OpId::linalg_inv_ex, guarded<linalg_inv_ex>},
    {OpId::linalg_ldl_factor_ex, guarded<linalg_ldl_factor_ex>},
    {OpId::linalg_ldl_solve, guarded<linalg_ldl_solve>},
    {OpId::linalg_lu, guarded<linalg_lu>},
    {OpId::linalg_lu_factor_ex, guarded<linalg_lu_factor_ex>},
    {OpId::linalg_lu_solve, guarded<linalg_lu_solve>},
    {OpId::linalg_matrix_exp, guarded<linalg_matrix_exp>},
    {OpId::linalg_qr, guarded<linalg_qr>},
    {OpId::linalg_solve_triangular, guarded<linalg_solve_triangular>},
    {OpId::lu_unpack, guarded<lu_unpack>},
    {OpId::ormqr, guarded<ormqr>},
    {OpId::triangular_solve, guarded<triangular_solve>},
    {OpId::_cdist_forward, guarded<cdist_forward>},
    {OpId::_pdist_forward, guarded<pdist_forward>},
    {OpId::col2im, guarded<col2im>},
    {OpId::im2col, guarded<im2col>},
    {OpId::addmm, guarded<addmm>},
    {OpId::bmm, guarded<bmm>},
    {OpId::conv1d, guarded<conv1d>},
    {OpId::conv2d, guarded<conv2d>},
    {OpId::conv3d, guarded<conv3d>},
    {OpId::convolution, guarded<convolution>},
    {OpId::linear, guarded<linear>},
    {OpId::matmul, guarded<matmul>},
    {OpId::mm, guarded<mm>},
    {OpId::scaled_dot_product_attention, guarded<sdpa>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> linalg_meta() {
  return kLinalgMeta;
}

} // namespace fxc::meta_detail
