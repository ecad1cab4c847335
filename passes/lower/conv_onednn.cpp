// Lowering of CPU convolutions (1-D to 3-D) to oneDNN calls, with the ops that follow folded as
// post-ops.
#include "passes/lower/lower_util.h"

#include "runtime/onednn.h"

#include <cfloat>
#include <cmath>

namespace fxc::lower_detail {
namespace {

using onednn::PostOp;

/// The nodes reading `v` (each once), in graph order.
std::vector<int> users_of(const Lowerer& L, ValueId v) {
  std::vector<int> out;
  for (int u = 0; u < int(L.g().nodes.size()); ++u)
    for (ValueId in : L.g().nodes[u].tensor_inputs())
      if (in == v) {
        out.push_back(u);
        break;
      }
  return out;
}

/// Argument `name` of the node, or null when its schema has none.
const Arg* find_arg(const Node& nd, const char* name) {
  int i = nd.schema ? nd.schema->index_of(name) : -1;
  return i >= 0 && size_t(i) < nd.args.size() ? &nd.args[size_t(i)] : nullptr;
}

bool scalar_arg(const Node& nd, const char* name, double* v) {
  const Arg* a = find_arg(nd, name);
  if (!a || a->kind == Arg::Kind::Tensor || a->kind == Arg::Kind::None) return false;
  *v = a->scalar();
  return true;
}

ValueId tensor_arg(const Node& nd, const char* name) {
  const Arg* a = find_arg(nd, name);
  return a && a->kind == Arg::Kind::Tensor ? a->tensor : kNoValue;
}

bool unit_alpha(const Node& nd) {
  const Arg* a = find_arg(nd, "alpha");
  return !a || a->scalar() == 1.0;
}

/// A node of one float32 output with the sizes of the convolution's result.
bool same_shape(const Lowerer& L, int u, const TensorMeta& m) {
  const Node& nd = L.node(u);
  if (nd.outputs.size() != 1) return false;
  const TensorMeta& o = L.g().values[nd.outputs[0]].meta;
  return o.dtype == DType::F32 && o.sizes == m.sizes;
}

/// The post-op of a node applied to its `self` alone (relu, sigmoid, clamp, x + c, x * c, ...).
std::optional<PostOp> unary_post_op(const Node& nd) {
  const std::string& t = nd.target;
  PostOp op;
  double c = 0, lo = 0, hi = 0;
  if (t == "aten.relu.default") return PostOp{PostOp::Kind::Relu};
  if (t == "aten.sigmoid.default") return PostOp{PostOp::Kind::Sigmoid};
  if (t == "aten.tanh.default") return PostOp{PostOp::Kind::Tanh};
  if (t == "aten.hardswish.default") return PostOp{PostOp::Kind::Hardswish};
  if (t == "aten.silu.default") return PostOp{PostOp::Kind::Silu};
  if (t == "aten.gelu.default") {
    const Arg* a = find_arg(nd, "approximate");
    bool tanh = a && a->kind == Arg::Kind::String && a->s == "tanh";
    return PostOp{tanh ? PostOp::Kind::GeluTanh : PostOp::Kind::GeluErf};
  }
  if (t == "aten.clamp.default" || t == "aten.hardtanh.default") {
    bool clamp = t == "aten.clamp.default";
    bool has_lo = scalar_arg(nd, clamp ? "min" : "min_val", &lo);
    bool has_hi = scalar_arg(nd, clamp ? "max" : "max_val", &hi);
    if (!clamp && (!has_lo || !has_hi)) return std::nullopt;
    return PostOp{PostOp::Kind::Clip, has_lo ? float(lo) : -FLT_MAX, has_hi ? float(hi) : FLT_MAX};
  }
  if (!scalar_arg(nd, "other", &c)) return std::nullopt;
  double alpha = 1;
  if (const Arg* a = find_arg(nd, "alpha")) alpha = a->scalar();
  if (t == "aten.add.Scalar" || t == "aten.add.Tensor")
    return PostOp{PostOp::Kind::Linear, 1, float(c * alpha)};
  if (t == "aten.sub.Scalar" || t == "aten.sub.Tensor")
    return PostOp{PostOp::Kind::Linear, 1, float(-c * alpha)};
  if (t == "aten.mul.Scalar" || t == "aten.mul.Tensor")
    return PostOp{PostOp::Kind::Linear, float(c), 0};
  if ((t == "aten.div.Scalar" || t == "aten.div.Tensor") && c != 0)
    return PostOp{PostOp::Kind::Linear, float(1 / c), 0};
  return std::nullopt;
}

/// The values of `v` when it is one per output channel and computed from weights alone by views
/// and simple arithmetic (batch norm's running statistics, rsqrt(var + eps), its weight and
/// bias), evaluated here in double; else nullopt. `rank`: the rank of the convolution's result
/// that `v` broadcasts against ([K, 1, 1] or [1, K, 1, 1] for a 2-D one: K lines up with the
/// channel dim); 0 inside the computation, where any shape of K elements does.
std::optional<std::vector<double>> channel_constant(const Lowerer& L, ValueId v, int64_t K,
                                                    size_t rank, int depth = 0) {
  const Graph& g = L.g();
  if (v < 0 || depth > 16) return std::nullopt;
  const TensorMeta& m = g.values[v].meta;
  int64_t numel = 1;
  for (int64_t d : m.sizes) numel *= d;
  if (numel != K || (m.dtype != DType::F32 && m.dtype != DType::F64)) return std::nullopt;
  if (rank) {
    // Dim j of v lines up with dim j + rank - r of the result; dim 1 must be the one of size K.
    const size_t r = m.sizes.size();
    if (r > rank || r + 1 < rank) return std::nullopt;
    const size_t j = 1 + r - rank;
    for (size_t i = 0; i < r; ++i)
      if (m.sizes[i] != (i == j ? K : 1)) return std::nullopt;
  }
  int prod = g.values[v].producer;
  if (prod < 0) {
    for (const GraphInput& in : g.inputs) {
      if (in.value != v || in.kind == InputKind::UserInput) continue;
      auto it = g.weights.find(in.fqn);
      if (it == g.weights.end() || !it->second.storage) return std::nullopt;
      Tensor t = Tensor::from_weight(it->second).contiguous();
      std::vector<double> out(static_cast<size_t>(K));
      for (int64_t i = 0; i < K; ++i) out[size_t(i)] = t.load(i);
      return out;
    }
    return std::nullopt;
  }
  const Node& nd = g.nodes[size_t(prod)];
  const std::string& t = nd.target;
  ValueId self = tensor_arg(nd, "self");
  if (t == "aten.view.default" || t == "aten._unsafe_view.default" || t == "aten.reshape.default" ||
      t == "aten.unsqueeze.default" || t == "aten.squeeze.dim" || t == "aten.clone.default" ||
      t == "aten._to_copy.default")
    return channel_constant(L, self, K, 0, depth + 1);
  auto a = channel_constant(L, self, K, 0, depth + 1);
  if (!a) return std::nullopt;
  if (t == "aten.rsqrt.default" || t == "aten.sqrt.default" || t == "aten.reciprocal.default") {
    for (double& x : *a)
      x = t == "aten.sqrt.default"    ? std::sqrt(x)
          : t == "aten.rsqrt.default" ? 1 / std::sqrt(x)
                                      : 1 / x;
    return a;
  }
  std::optional<std::vector<double>> b;
  double c = 0;
  if (scalar_arg(nd, "other", &c))
    b = std::vector<double>(size_t(K), c);
  else
    b = channel_constant(L, tensor_arg(nd, "other"), K, 0, depth + 1);
  if (!b) return std::nullopt;
  double alpha = 1;
  if (const Arg* al = find_arg(nd, "alpha")) alpha = al->scalar();
  for (size_t i = 0; i < a->size(); ++i) {
    double &x = (*a)[i], y = (*b)[i];
    if (t == "aten.add.Tensor" || t == "aten.add.Scalar")
      x += alpha * y;
    else if (t == "aten.sub.Tensor" || t == "aten.sub.Scalar")
      x -= alpha * y;
    else if (t == "aten.mul.Tensor" || t == "aten.mul.Scalar")
      x *= y;
    else if (t == "aten.div.Tensor" || t == "aten.div.Scalar")
      x /= y;
    else
      return std::nullopt;
  }
  return a;
}

/// x · relu6(x + 3) / 6 as decompose() writes hardswish (x read twice), or x · sigmoid(x)
/// (silu): the post-op and the chain's nodes, the last one last.
std::optional<PostOp> two_use_post_op(const Lowerer& L, ValueId x, const TensorMeta& m,
                                      std::vector<int>* nodes) {
  std::vector<int> us = users_of(L, x);
  if (us.size() != 2 || L.uses(x) != 2) return std::nullopt;
  auto is_product_of = [&](int u, ValueId a, ValueId b) {
    const Node& nd = L.node(u);
    if (nd.target != "aten.mul.Tensor" || !same_shape(L, u, m)) return false;
    ValueId s = tensor_arg(nd, "self"), o = tensor_arg(nd, "other");
    return (s == a && o == b) || (s == b && o == a);
  };
  for (int k = 0; k < 2; ++k) {
    int first = us[k], mul = us[1 - k];
    const Node& f = L.node(first);
    // silu: sigmoid(x), then x · sigmoid(x)
    if (f.target == "aten.sigmoid.default" && L.sole_user(f.outputs[0]) == mul &&
        is_product_of(mul, x, f.outputs[0])) {
      *nodes = {first, mul};
      return PostOp{PostOp::Kind::Silu};
    }
    // hardswish: x + 3, clamps to [0, 6], then x · that, then / 6
    double c = 0;
    if (f.target != "aten.add.Scalar" || !unit_alpha(f) || !scalar_arg(f, "other", &c) || c != 3)
      continue;
    std::vector<int> chain = {first};
    double lo = -INFINITY, hi = INFINITY;
    ValueId v = f.outputs[0];
    for (int u = L.sole_user(v); u >= 0 && u != mul; u = L.sole_user(v)) {
      std::optional<PostOp> op = unary_post_op(L.node(u));
      if (!op || op->kind != PostOp::Kind::Clip) break;
      lo = std::max(lo, double(op->a));
      hi = std::min(hi, double(op->b));
      chain.push_back(u);
      v = L.node(u).outputs[0];
    }
    if (lo != 0 || hi != 6 || L.sole_user(v) != mul || !is_product_of(mul, x, v)) continue;
    int div = L.sole_user(L.node(mul).outputs[0]);
    if (div < 0 || !same_shape(L, div, m)) continue;
    std::optional<PostOp> d = unary_post_op(L.node(div));
    if (!d || d->kind != PostOp::Kind::Linear || d->b != 0 || d->a != float(1.0 / 6)) continue;
    chain.push_back(mul);
    chain.push_back(div);
    *nodes = chain;
    return PostOp{PostOp::Kind::Hardswish};
  }
  return std::nullopt;
}

} // namespace

bool lower_conv_onednn(Lowerer& L, int n, LVal& x, LVal& w, const LVal* bias,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& dilation, int64_t groups) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  onednn::ConvShape shape;
  shape.x = x.sizes;
  shape.w = w.sizes;
  shape.out = m.sizes;
  shape.stride = stride;
  shape.padding = padding;
  shape.dilation = dilation;
  shape.groups = groups;
  shape.bias = bias != nullptr;
  // Channels-last activations (LowerOptions::conv_layout): x, a residual and the result NHWC
  // (NDHWC), the weight as the graph has it (reordered once when the plan is prepared).
  const bool cl = L.channels_last() && channels_last_rank(m.sizes.size());
  shape.channels_last = cl;
  if (std::string why = onednn::shape_error(shape); !why.empty()) {
    L.p_.log.push_back("im2col: node '" + nd.name + "' (" + nd.target + "): " + why);
    return false;
  }
  if (std::string why = onednn::check_conv(shape, {}); !why.empty()) {
    L.p_.log.push_back("im2col: node '" + nd.name + "' (" + nd.target + "): " + why);
    return false;
  }
  // A convolution oneDNN has no direct kernel for in fxc's layouts (a 1x1 one on plain NCHW)
  // runs as its gemm-based convolution, whose bias and post-ops (a residual sum,
  // an activation) take a slow pass of their own. fxc's BLAS path (one sgemm per image, the
  // epilogue fused into a generated kernel) is faster there: a ResNet-50 1x1 64->256 at 56x56
  // with its residual took 19.7 ms against 3.6 ms, MobileNetV3-Large 47-70 ms against 36-43
  // and EfficientNet-B0 130 ms against 69-89 (batch 2, 2-core AVX2 machine, docs/perf.md).
  // Only 1x1 ones, unstrided, unpadded and ungrouped: their BLAS path is a plain sgemm. Others
  // would need an im2col (the weight gradients of train mode: kernels as large as the image,
  // slower and summed in another order) or have only the reference kernel (grouped ones).
  // Train steps keep oneDNN (LowerOptions::train): squeezenet1_1's gradients of its first layers
  // differ from PyTorch's by up to 0.4% when a forward rounded otherwise flips a ReLU.
  bool pointwise = !cl && !L.options().train && groups == 1 && shape.spatial() == 2;
  for (size_t i = 0; i < shape.spatial(); ++i)
    pointwise = pointwise && shape.w[2 + i] == 1 && stride[i] == 1 && padding[i] == 0;
  if (std::string impl = pointwise ? onednn::conv_impl_name(shape, {}) : std::string();
      impl.find("gemm") != std::string::npos) {
    L.p_.log.push_back("im2col: node '" + nd.name + "' (" + nd.target +
                       "): oneDNN would run it as " + impl +
                       ", slower than a BLAS sgemm with a fused epilogue");
    return false;
  }
  // Fold what follows, node by node, while it reads only the running result.
  const std::string& inject = L.options().inject_op;
  std::vector<PostOp> ops;
  std::vector<int> folded;
  ValueId cur = nd.outputs[0], residual = kNoValue;
  int64_t K = m.sizes[1];
  // A per-channel affine map folds into the weights only when they (and the bias) are weights
  // bound at compile time, which prepare_plan can rewrite once.
  auto is_weight = [&](const LVal* v) {
    if (!v) return true;
    std::optional<ExternOperand> o = L.strided_operand(*v);
    return o && L.p_.buffers[o->buffer].kind == Buffer::Kind::Input &&
           !L.p_.buffers[o->buffer].weight.empty();
  };
  bool fold_weights = is_weight(&w) && is_weight(bias);
  std::vector<double> scale(size_t(K), 1.0), shift(size_t(K), 0.0);
  bool affine = false;
  for (;;) {
    std::vector<int> chain;
    std::optional<PostOp> op;
    int u = L.sole_user(cur);
    // Batch norm in inference (and any per-channel affine map right after the convolution):
    // folded into the weights and bias when the plan is prepared.
    if (u >= 0 && same_shape(L, u, m) && ops.empty() && fold_weights) {
      const Node& un = L.node(u);
      const std::string& t = un.target;
      ValueId s = tensor_arg(un, "self"), o = tensor_arg(un, "other");
      bool commutes = t == "aten.add.Tensor" || t == "aten.mul.Tensor";
      bool binary = commutes || t == "aten.sub.Tensor" || t == "aten.div.Tensor";
      if (binary && (s == cur || (commutes && o == cur)) && s != o && unit_alpha(un)) {
        auto c = channel_constant(L, s == cur ? o : s, K, m.sizes.size());
        bool planted = !inject.empty() && op_base_name(t) == inject;
        if (c && !planted) {
          for (int64_t k = 0; k < K; ++k) {
            double y = (*c)[size_t(k)];
            double& sc = scale[size_t(k)];
            double& sh = shift[size_t(k)];
            if (t == "aten.add.Tensor")
              sh += y;
            else if (t == "aten.sub.Tensor")
              sh -= y;
            else if (t == "aten.mul.Tensor")
              sc *= y, sh *= y;
            else
              sc /= y, sh /= y;
          }
          affine = true;
          folded.push_back(u);
          cur = un.outputs[0];
          continue;
        }
      }
    }
    if (u >= 0 && same_shape(L, u, m)) {
      const Node& un = L.node(u);
      chain = {u};
      op = unary_post_op(un);
      ValueId s = tensor_arg(un, "self"), o = tensor_arg(un, "other");
      // A residual: cur + r with r computed before the convolution.
      if (!op && un.target == "aten.add.Tensor" && unit_alpha(un) && residual == kNoValue &&
          s != kNoValue && o != kNoValue) {
        ValueId r = s == cur ? o : s;
        const Value& rv = L.g().values[r];
        if (r != cur && rv.producer < n && L.vals_[r].body && rv.meta.sizes == m.sizes &&
            rv.meta.dtype == DType::F32) {
          op = PostOp{PostOp::Kind::Sum};
          residual = r;
        }
      }
      // Only `self` may be the running result of a unary post-op (not `other` of x - c).
      if (op && op->kind != PostOp::Kind::Sum && s != cur) op.reset();
    } else if (u < 0) {
      op = two_use_post_op(L, cur, m, &chain);
    }
    if (!op) break;
    bool planted = false;
    for (int c : chain)
      planted = planted || (!inject.empty() && op_base_name(L.node(c).target) == inject);
    if (planted) break;
    std::vector<PostOp> next = ops;
    // Two clamps in a row are one; so are two affine maps (fewer passes over the result).
    PostOp* prev = next.empty() ? nullptr : &next.back();
    if (prev && prev->kind == PostOp::Kind::Clip && op->kind == PostOp::Kind::Clip) {
      prev->a = std::max(prev->a, op->a);
      prev->b = std::min(prev->b, op->b);
    } else if (prev && prev->kind == PostOp::Kind::Linear && op->kind == PostOp::Kind::Linear) {
      prev->b = op->a * prev->b + op->b;
      prev->a = op->a * prev->a;
    } else if (prev && prev->kind == PostOp::Kind::Clip && op->kind == PostOp::Kind::Linear &&
               op->a > 0) {
      // a·clip(y, lo, hi) + b = clip(a·y + b, a·lo + b, a·hi + b) for a > 0: the map moves in
      // front of the clip and joins the one there (hardsigmoid's x + 3, clamps, / 6 become
      // x / 6 + 0.5, clip to [0, 1]). oneDNN 2.7's brgconv_1x1 computes the chain linear, clip,
      // linear wrongly (lraspp_mobilenet_v3_large's squeeze-excitation, found by --minify).
      PostOp clip = *prev;
      next.pop_back();
      if (clip.a > -FLT_MAX) clip.a = op->a * clip.a + op->b;
      if (clip.b < FLT_MAX) clip.b = op->a * clip.b + op->b;
      if (!next.empty() && next.back().kind == PostOp::Kind::Linear) {
        next.back().b = op->a * next.back().b + op->b;
        next.back().a = op->a * next.back().a;
      } else {
        next.push_back(PostOp{PostOp::Kind::Linear, op->a, op->b});
      }
      next.push_back(clip);
    } else {
      next.push_back(*op);
    }
    if (!onednn::check_conv(shape, next).empty()) {
      if (op->kind == PostOp::Kind::Sum) residual = kNoValue;
      break;
    }
    ops = next;
    folded.insert(folded.end(), chain.begin(), chain.end());
    cur = L.node(chain.back()).outputs[0];
  }
  ExternCall c;
  c.kind = ExternCall::Kind::Conv;
  c.op = "onednn_convolution";
  c.channels_last = cl;
  c.operands = {cl ? L.channels_last_operand(n, x) : L.contiguous_operand(n, x),
                L.contiguous_operand(n, w)};
  if (bias) {
    LVal bv = *bias;
    c.operands.push_back(L.contiguous_operand(n, bv));
  }
  if (residual != kNoValue) {
    LVal& r = L.val(n, residual);
    c.operands.push_back(cl ? L.channels_last_operand(n, r) : L.contiguous_operand(n, r));
  }
  if (affine) {
    c.scale.assign(scale.begin(), scale.end());
    c.shift.assign(shift.begin(), shift.end());
  }
  c.stride = stride;
  c.padding = padding;
  c.dilation = dilation;
  c.groups = groups;
  for (const PostOp& op : ops)
    c.post_ops += (c.post_ops.empty() ? "" : " ") + onednn::post_op_token(op);
  int id = L.extern_buffer(n, std::move(c), m.dtype, cl ? to_channels_last(m.sizes) : m.sizes);
  std::set<int> origins = {n};
  origins.insert(folded.begin(), folded.end());
  if (!folded.empty()) {
    L.p_.buffers[id].origins.clear();
    L.p_.buffers[id].origin_ops.clear();
    L.set_origins(L.p_.buffers[id], origins);
    L.p_.log.push_back("post-ops: " + L.node(folded.back()).name + " = " +
                       (affine ? "per-channel affine (folded into the weights) " : "") +
                       L.p_.buffers[id].call.post_ops + " of " + nd.name + " (oneDNN)");
  }
  // Every folded node takes the convolution's (final) value: only the chain reads them.
  for (int f : folded) L.absorbed[f] = nd.outputs[0];
  L.set_output(n, 0, cl ? L.load_nhwc(id, origins) : L.load_of(id, origins));
  return true;
}

} // namespace fxc::lower_detail
