// Lowering rules of linear algebra and convolution: mm, addmm and linear as BLAS extern calls
// (on CUDA, cuBLASLt with a folded bias, relu/gelu or residual-add epilogue), 2-D convolution as
// im2col, a batched BLAS call and a pointwise bias epilogue (or cuDNN); _cdist_forward as a
// reduction over the feature dim, im2col as a gather and col2im as a sum over the kernel offsets.
#include "passes/lower/lower_util.h"

#include "frontend/resample.h"
#include "passes/decompose.h"

namespace fxc::lower_detail {
namespace {

// ---- matmuls

/// Dtypes the target's BLAS multiplies: the CPU's f32/f64, cuBLASLt's f32/f16/bf16.
bool gemm_dtype_ok(const Lowerer& L, DType t) {
  if (L.options().cuda) return t == DType::F32 || t == DType::F16 || t == DType::BF16;
  return t == DType::F32 || t == DType::F64;
}

bool is_scalar_op(const Node& nd, const char* target, double value) {
  if (nd.target != target) return false;
  const Arg& o = nd.arg("other");
  if (o.kind == Arg::Kind::Tensor || o.kind == Arg::Kind::None) return false;
  double v = o.scalar();
  return std::abs(v - value) <= 1e-9 * std::max(1.0, std::abs(value));
}

/// add.Tensor/add.Scalar with alpha 1 (or ops without alpha).
bool unit_alpha(const Node& nd) {
  int ai = nd.schema ? nd.schema->index_of("alpha") : -1;
  return ai < 0 || nd.args[ai].scalar() == 1.0;
}

/// The last node of gelu(x, approximate='tanh') as decompose() writes it, when every node of
/// it reads only x and its own chain and nothing else reads x or the chain; else -1. The
/// folded nodes are added to `chain`.
///   0.5x · (tanh(√(2/π) · (x + 0.044715 · (x·x)·x)) + 1)
int match_gelu_tanh(const Lowerer& L, ValueId x, std::set<int>& chain) {
  const Graph& g = L.g();
  if (L.uses(x) != 5) return -1; // 0.5·x, x·x (twice), (x·x)·x, x + ...
  auto producer = [&](ValueId v) -> const Node* {
    if (v < 0 || g.values[v].producer < 0 || L.uses(v) != 1) return nullptr;
    return &g.nodes[g.values[v].producer];
  };
  auto tensor = [](const Node& nd, const char* name) {
    const Arg& a = nd.arg(name);
    return a.kind == Arg::Kind::Tensor ? a.tensor : kNoValue;
  };
  std::set<int> nodes;
  auto take = [&](const Node* nd) {
    if (nd) nodes.insert(int(nd - g.nodes.data()));
    return nd;
  };
  // The chain is matched from x's 0.5·x user down to the final product.
  int half = -1;
  for (int u = 0; u < int(g.nodes.size()) && half < 0; ++u)
    if (is_scalar_op(g.nodes[u], "aten.mul.Scalar", 0.5) && tensor(g.nodes[u], "self") == x)
      half = u;
  if (half < 0) return -1;
  ValueId hv = g.nodes[half].outputs[0];
  int fin = L.sole_user(hv);
  if (fin < 0) return -1;
  const Node& f = g.nodes[fin];
  if (f.target != "aten.mul.Tensor") return -1;
  ValueId t1v = tensor(f, "self") == hv ? tensor(f, "other") : tensor(f, "self");
  const Node* t1 = take(producer(t1v));
  if (!t1 || !is_scalar_op(*t1, "aten.add.Scalar", 1.0) || !unit_alpha(*t1)) return -1;
  const Node* th = take(producer(tensor(*t1, "self")));
  if (!th || th->target != "aten.tanh.default") return -1;
  const Node* inner = take(producer(tensor(*th, "self")));
  if (!inner || !is_scalar_op(*inner, "aten.mul.Scalar", std::sqrt(2.0 / M_PI))) return -1;
  const Node* sum = take(producer(tensor(*inner, "self")));
  if (!sum || sum->target != "aten.add.Tensor" || !unit_alpha(*sum)) return -1;
  ValueId sa = tensor(*sum, "self"), sb = tensor(*sum, "other");
  if (sb == x) std::swap(sa, sb);
  if (sa != x) return -1;
  const Node* scaled = take(producer(sb));
  if (!scaled || !is_scalar_op(*scaled, "aten.mul.Scalar", 0.044715)) return -1;
  const Node* cube = take(producer(tensor(*scaled, "self")));
  if (!cube || cube->target != "aten.mul.Tensor") return -1;
  ValueId ca = tensor(*cube, "self"), cb = tensor(*cube, "other");
  if (cb != x) std::swap(ca, cb);
  if (cb != x) return -1;
  const Node* sq = take(producer(ca));
  if (!sq || sq->target != "aten.mul.Tensor" || tensor(*sq, "self") != x ||
      tensor(*sq, "other") != x)
    return -1;
  nodes.insert(half);
  nodes.insert(fin);
  for (int nd : nodes)
    if (g.nodes[nd].outputs.size() != 1) return -1;
  chain.insert(nodes.begin(), nodes.end());
  return fin;
}

/// The add reading `x` (the product of node n, after its views) when it is worth making the
/// product's epilogue: x + r or r + x with unit alpha as x's only use, r computed before n with
/// x's sizes and dtype, the add's result of that dtype too and only a graph output. Returns the
/// add's node (r in `residual`), or -1. An add whose result a kernel reads is left to that
/// kernel, which adds r as it reads the product: cuBLASLt's reading of C delays the product's
/// epilogue more than the kernel's extra load costs (block f32 on an H200: the projection's
/// residual as C cost its matmul 0.006 ms and saved the layer norm after it 0.003 ms; the last
/// residual saved its own 0.013 ms kernel).
int match_residual_add(Lowerer& L, int n, ValueId x, ValueId* residual) {
  int add = L.sole_user(x);
  if (add < 0) return -1;
  const Node& nd = L.node(add);
  if (nd.target != "aten.add.Tensor" || !unit_alpha(nd) || nd.outputs.size() != 1) return -1;
  const Arg &s = nd.arg("self"), &o = nd.arg("other");
  if (s.kind != Arg::Kind::Tensor || o.kind != Arg::Kind::Tensor) return -1;
  ValueId r = s.tensor == x ? o.tensor : s.tensor;
  if (r == x || (s.tensor != x && o.tensor != x)) return -1;
  const Graph& g = L.g();
  const TensorMeta &xm = g.values[x].meta, &rm = g.values[r].meta;
  if (g.values[r].producer >= n || !L.vals_[r].body || rm.sizes != xm.sizes ||
      rm.dtype != xm.dtype || L.out_meta(add).dtype != xm.dtype ||
      L.out_meta(add).sizes != xm.sizes)
    return -1;
  ValueId out = nd.outputs[0];
  if (L.uses(out) != 1 || L.sole_user(out) >= 0) return -1; // read by a node, not only output
  *residual = r;
  return add;
}

/// addmm on CUDA as one cuBLASLt call with its bias (and a folded relu/gelu, or a residual add
/// of a contiguous tensor) as the epilogue.
/// False when the call cannot take it: scaled operands, a bias other than one row of N values,
/// or a planted bug in one of the nodes (--inject-bug needs them in kernels).
bool lower_addmm_epilogue(Lowerer& L, int n, LVal& bias, LVal& a, LVal& b) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  if (nd.arg("beta").scalar() != 1.0 || nd.arg("alpha").scalar() != 1.0) return false;
  if (bias.sizes.size() != 1 || bias.sizes[0] != m.sizes[1] || bias.dtype != a.dtype ||
      m.dtype != a.dtype)
    return false;
  const std::string& inject = L.options().inject_op;
  if (!inject.empty() && op_base_name(nd.target) == inject) return false;
  GemmEpilogue epi = GemmEpilogue::Bias;
  std::set<int> folded;
  int last = n;
  // The activation is elementwise, so it may be applied before views of the product (the
  // reshape back to [B, L, N] of a 3-D linear): act(view(x)) = view(act(x)).
  ValueId x = nd.outputs[0];
  for (int u = L.sole_user(x); u >= 0; u = L.sole_user(x)) {
    const std::string& t = L.node(u).target;
    if (t != "aten.view.default" && t != "aten._unsafe_view.default" && t != "aten.reshape.default")
      break;
    x = L.node(u).outputs[0];
  }
  int user = L.sole_user(x);
  if (user >= 0 && L.node(user).target == "aten.relu.default") {
    epi = GemmEpilogue::ReluBias;
    folded = {user};
    last = user;
  } else if (int fin = match_gelu_tanh(L, x, folded); fin >= 0) {
    epi = GemmEpilogue::GeluTanhBias;
    last = fin;
  } else {
    folded.clear();
  }
  // A residual add becomes cuBLASLt's C (beta = 1) when the residual lies row-major like the
  // product: then no kernel reads the product back to add it.
  std::optional<LVal> residual;
  ValueId r = kNoValue;
  if (epi == GemmEpilogue::Bias)
    if (int add = match_residual_add(L, n, x, &r); add >= 0) {
      // A computed residual (x + attention, which the kernels reading it compute as they
      // go) is stored once, by the first kernel that computes it.
      LVal& computed = L.val(n, r);
      if (!L.strided_operand(computed)) L.realize(computed);
      LVal rv = L.reshape(computed, m.sizes);
      std::optional<ExternOperand> ro = L.strided_operand(rv);
      if (ro && ro->strides == contiguous_strides(m.sizes)) {
        residual = rv;
        epi = GemmEpilogue::BiasResidual;
        folded = {add};
        last = add;
      }
    }
  // Nothing folded after all: the bias alone.
  auto bias_only = [&] {
    epi = GemmEpilogue::Bias;
    folded.clear();
    residual.reset();
    last = n;
  };
  for (int f : folded)
    if (!inject.empty() && op_base_name(L.node(f).target) == inject) {
      bias_only();
      break;
    }
  if (!folded.empty() && L.out_meta(last).dtype != m.dtype) bias_only();
  LVal prod = L.gemm(n, a, b, m.sizes, epi, &bias, residual ? &*residual : nullptr, folded);
  // With an activation, the product's value is already activated: it is read only through the
  // views and the folded nodes, which take the value of the last view.
  for (int f : folded) L.absorbed[f] = x;
  L.set_output(n, 0, prod);
  if (!folded.empty())
    L.p_.log.push_back("epilogue: " + L.node(last).name + " = " + gemm_epilogue_name(epi) + " of " +
                       nd.name + " (cuBLASLt)");
  return true;
}

void lower_mm(Lowerer& L, int n) {
  LVal& a = L.input(n, "self");
  LVal& b = L.input(n, "mat2");
  const TensorMeta& m = L.out_meta(n);
  if (a.sizes.size() != b.sizes.size() || (a.sizes.size() != 2 && a.sizes.size() != 3) ||
      !gemm_dtype_ok(L, a.dtype) || a.dtype != b.dtype) {
    L.fallback(n, "matmul operands not supported by BLAS");
    return;
  }
  // bmm with one [K, N] matrix broadcast over the batch (stride 0: core ATen's matmul of a
  // non-contiguous 3-D input and a weight) is one product over all B·M rows: a batch of
  // M-row products runs the GEMM at a fraction of its speed when M is small.
  if (a.sizes.size() == 3 && a.sizes[0] > 1) {
    std::optional<ExternOperand> bo = L.strided_operand(b);
    bool shared = bo && bo->strides[0] == 0;
    // A computed operand whose body never reads the batch index (var 0) is such a matrix too:
    // --dtype=bf16's cast of a weight under its expand (torchvision's attention on [L, N, E]
    // inputs: 197 copies of a 2304x768 weight otherwise). Equal values at two batch indices
    // are not enough: GQA's repeated keys agree at heads 0 and 1 and differ at 2.
    if (!bo && b.buffer < 0 && b.body) shared = !value_uses_var(*b.body, 0);
    if (shared) {
      const int64_t B = a.sizes[0], M = a.sizes[1], K = a.sizes[2], N = b.sizes[2];
      LVal rows = L.reshape(a, {B * M, K});
      LVal w = L.view(n, b, {K, N}, [](auto& idx) {
        return std::vector<IndexExpr>{IndexExpr(0), idx[0], idx[1]};
      });
      L.set_output(n, 0, L.reshape(L.gemm(n, rows, w, {B * M, N}), m.sizes));
      return;
    }
  }
  L.set_output(n, 0, L.gemm(n, a, b, m.sizes));
}

void lower_addmm(Lowerer& L, int n) {
  LVal& bias = L.input(n, "self");
  LVal& a = L.input(n, "mat1");
  LVal& b = L.input(n, "mat2");
  const TensorMeta& m = L.out_meta(n);
  if (a.sizes.size() != 2 || b.sizes.size() != 2 || !gemm_dtype_ok(L, a.dtype) ||
      a.dtype != b.dtype) {
    L.fallback(n, "addmm operands not supported by BLAS");
    return;
  }
  if (L.options().cuda && lower_addmm_epilogue(L, n, bias, a, b)) return;
  double beta = L.node(n).arg("beta").scalar(), alpha = L.node(n).arg("alpha").scalar();
  LVal prod = L.gemm(n, a, b, m.sizes);
  DType t = m.dtype;
  // The bias and scaling are a pointwise epilogue, fused with whatever consumes the result.
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr p = L.at(prod, idx);
                             if (alpha != 1.0) p = v_binary(VOp::Mul, p, v_const(alpha, t));
                             if (beta == 0.0) return p;
                             VPtr c = v_cast(L.bcast(bias, idx), t);
                             if (beta != 1.0) c = v_binary(VOp::Mul, c, v_const(beta, t));
                             return v_binary(VOp::Add, p, c);
                           },
                           {&bias}));
}

void lower_linear(Lowerer& L, int n) {
  LVal& x = L.input(n, "input");
  LVal& w = L.input(n, "weight");
  const LVal* bias = L.opt_input(n, "bias");
  const TensorMeta& m = L.out_meta(n);
  if (x.sizes.empty() || w.sizes.size() != 2 || !gemm_dtype_ok(L, x.dtype) || x.dtype != w.dtype) {
    L.fallback(n, "linear operands not supported by BLAS");
    return;
  }
  int64_t K = x.sizes.back(), N = w.sizes[0], M = numel_of(x.sizes) / std::max<int64_t>(K, 1);
  LVal x2 = L.reshape(x, {M, K});
  LVal wt = L.view(n, w, {K, N}, [](auto& idx) { return std::vector<IndexExpr>{idx[1], idx[0]}; });
  LVal prod = L.gemm(n, x2, wt, {M, N});
  LVal out = L.reshape(prod, m.sizes);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr p = L.at(out, idx);
                             if (bias) p = v_binary(VOp::Add, p, v_cast(L.bcast(*bias, idx), t));
                             return p;
                           },
                           {bias}));
}

/// A depthwise 2-D convolution (one input channel per group, as many outputs: MobileNet's,
/// EfficientNet's, ConvNeXt's) as a generated reduction over the window, accumulated in float32,
/// with the bias and the ops that follow fused after it; stored channels-last when its input is.
/// Used where no library runs it (CUDA without cuDNN, the CPU without oneDNN): on the H200 it is
/// slower than cuDNN's NCHW kernels (EfficientNet-B0 at batch 8: 1.73 ms against 1.37;
/// ConvNeXt-Tiny's 7x7 windows 15.0 against 3.6).
void lower_depthwise_conv(Lowerer& L, int n, LVal& x, LVal& w, const LVal* bias,
                          const std::vector<int64_t>& st, const std::vector<int64_t>& pd,
                          const std::vector<int64_t>& dl) {
  const TensorMeta& m = L.out_meta(n);
  int64_t KH = w.sizes[2], KW = w.sizes[3], H = x.sizes[2], W = x.sizes[3];
  std::vector<int64_t> in_sizes = {m.sizes[0], m.sizes[1], m.sizes[2], m.sizes[3], KH, KW};
  auto window = [&](const std::vector<IndexExpr>& idx) {
    IndexExpr h = idx[2] * st[0] + idx[4] * dl[0] - IndexExpr(pd[0]);
    IndexExpr ww = idx[3] * st[1] + idx[5] * dl[1] - IndexExpr(pd[1]);
    IndexExpr hc = clamped(h, H), wc = clamped(ww, W);
    VPtr v = v_binary(VOp::Mul, v_cast(L.at(x, {idx[0], idx[1], hc, wc}), DType::F32),
                      v_cast(L.at(w, {idx[1], IndexExpr(0), idx[4], idx[5]}), DType::F32));
    VPtr inside;
    if (!(hc == h)) inside = v_binary(VOp::And, index_ge(h, 0), index_lt(h, H));
    if (!(wc == ww)) {
      VPtr ok = v_binary(VOp::And, index_ge(ww, 0), index_lt(ww, W));
      inside = inside ? v_binary(VOp::And, inside, ok) : ok;
    }
    return inside ? v_where(inside, v, v_const(0, DType::F32)) : v;
  };
  LVal r = L.reshape(L.reduce(n, ReduceOp::Sum, DType::F32, in_sizes, {4, 5}, window, {&x, &w}),
                     m.sizes);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr p = L.at(r, idx);
                             if (bias)
                               p = v_binary(VOp::Add, p, v_cast(L.at(*bias, {idx[1]}), DType::F32));
                             return v_cast(p, m.dtype);
                           },
                           {&r, bias}));
}

/// 2-D convolution as im2col (a pointwise buffer), one batched BLAS call with the weight
/// broadcast over the batch, and the bias as a pointwise epilogue that fuses with what follows.
void lower_convolution(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "input");
  LVal& w = L.input(n, "weight");
  const LVal* bias = L.opt_input(n, "bias");
  const TensorMeta& m = L.out_meta(n);
  int ti = nd.schema->index_of("transposed");
  bool transposed = ti >= 0 && nd.args[ti].b;
  auto two = [](std::vector<int64_t> v) {
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
  };
  auto st = two(nd.arg("stride").ints), pd = two(nd.arg("padding").ints),
       dl = two(nd.arg("dilation").ints);
  int64_t groups = nd.arg("groups").i;
  bool conv2d = !transposed && x.sizes.size() == 4 && w.sizes.size() == 4 && m.sizes.size() == 4 &&
                st.size() == 2 && pd.size() == 2 && dl.size() == 2 && x.dtype == w.dtype &&
                groups >= 1 && w.sizes[1] * groups == x.sizes[1] && w.sizes[0] % groups == 0;
  const LowerOptions& lo = L.options();
  bool dnn_dtype = x.dtype == DType::F32 || x.dtype == DType::F16 || x.dtype == DType::BF16;
  // Depthwise without cuDNN (CUDA) or oneDNN (CPU): a generated kernel, not a host fallback.
  bool depthwise = conv2d && groups > 1 && groups == x.sizes[1] && w.sizes[0] == groups &&
                   m.dtype == x.dtype && (!bias || bias->dtype == x.dtype) &&
                   (lo.cuda ? dnn_dtype && !lo.cudnn : x.dtype == DType::F32 && !lo.onednn);
  if (depthwise) {
    L.p_.log.push_back("depthwise: node '" + nd.name + "' (" + nd.target + "): " +
                       (lo.cuda ? "cuDNN not used: " + lo.no_cudnn_reason
                                : "oneDNN not used: " + lo.no_onednn_reason) +
                       "; a generated kernel instead");
    lower_depthwise_conv(L, n, x, w, bias, st, pd, dl);
    return;
  }
  if (lo.cuda && conv2d && dnn_dtype && m.dtype == x.dtype && (!bias || bias->dtype == x.dtype)) {
    if (lo.cudnn) {
      ExternCall c;
      c.kind = ExternCall::Kind::Conv;
      c.op = "convolution";
      c.stride = {st[0], st[1]};
      c.padding = {pd[0], pd[1]};
      c.dilation = {dl[0], dl[1]};
      c.groups = groups;
      if (L.channels_last()) {
        // NHWC, as torch.compile's layout optimization: x, w and the result channels-last (the
        // ops that follow keep it, realize() stores their buffers so); the bias is a pointwise
        // epilogue that fuses with them.
        c.channels_last = true;
        c.operands = {L.channels_last_operand(n, x), L.channels_last_operand(n, w)};
        int id = L.extern_buffer(n, std::move(c), m.dtype,
                                 {m.sizes[0], m.sizes[2], m.sizes[3], m.sizes[1]});
        LVal out = L.load_nhwc(id, {n});
        if (bias)
          out = L.pointwise(
              n, m.dtype, m.sizes,
              [&](auto& idx) { return v_binary(VOp::Add, L.at(out, idx), L.at(*bias, {idx[1]})); },
              {&out, bias});
        L.set_output(n, 0, out);
        return;
      }
      c.operands = {L.contiguous_operand(n, x), L.contiguous_operand(n, w)};
      if (bias) {
        LVal bv = *bias;
        c.operands.push_back(L.contiguous_operand(n, bv));
      }
      int id = L.extern_buffer(n, std::move(c), m.dtype, m.sizes);
      L.set_output(n, 0, L.load_of(id, {n}));
      return;
    }
    L.p_.log.push_back("im2col: node '" + nd.name + "' (" + nd.target +
                       "): cuDNN not used: " + lo.no_cudnn_reason + "; im2col + cuBLASLt instead");
  }
  // On the CPU: 1-D to 3-D convolutions through oneDNN.
  const size_t rank = x.sizes.size();
  bool conv_any = !transposed && rank >= 3 && rank <= 5 && w.sizes.size() == rank &&
                  m.sizes.size() == rank && groups >= 1;
  auto per_dim = [&](const char* name) {
    std::vector<int64_t> v = nd.arg(name).ints;
    return v.size() == 1 ? std::vector<int64_t>(rank - 2, v[0]) : v;
  };
  if (!lo.cuda && conv_any && x.dtype == DType::F32 && w.dtype == DType::F32 &&
      m.dtype == DType::F32 && (!bias || bias->dtype == DType::F32)) {
    if (lo.onednn && lower_conv_onednn(L, n, x, w, bias, per_dim("stride"), per_dim("padding"),
                                       per_dim("dilation"), groups))
      return;
    if (!lo.onednn)
      L.p_.log.push_back(
          "im2col: node '" + nd.name + "' (" + nd.target +
          "): oneDNN not used: " + lo.no_onednn_reason +
          (groups == 1 ? "; im2col + BLAS instead" : "; the reference kernel instead"));
  }
  // 1-D and 3-D convolutions: im2col over the spatial dims and one GEMM.
  bool conv_nd = !transposed && (x.sizes.size() == 3 || x.sizes.size() == 5) && groups == 1 &&
                 x.dtype == w.dtype && m.dtype == x.dtype && (!bias || bias->dtype == x.dtype) &&
                 gemm_dtype_ok(L, x.dtype);
  if (conv_nd && lower_conv_nd_im2col(L, n, x, w, bias, nd.arg("stride").ints,
                                      nd.arg("padding").ints, nd.arg("dilation").ints))
    return;
  if (!conv2d || groups != 1 || !gemm_dtype_ok(L, x.dtype)) {
    L.fallback(
        n,
        std::string("convolution other than 1-D to 3-D and ungrouped, or of a dtype BLAS lacks") +
            (lo.cuda || lo.onednn ? "" : " (oneDNN not used: " + lo.no_onednn_reason + ")"));
    return;
  }
  int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  int64_t O = w.sizes[0], KH = w.sizes[2], KW = w.sizes[3], OH = m.sizes[2], OW = m.sizes[3];
  int64_t CKK = C * KH * KW, Lo = OH * OW;
  LVal cols = L.pointwise(n, x.dtype, {N, CKK, Lo},
                          [&](auto& idx) {
                            IndexExpr c = idx[1].floordiv(KH * KW),
                                      kh = idx[1].floordiv(KW).mod(KH), kw = idx[1].mod(KW);
                            IndexExpr oh = idx[2].floordiv(OW), ow = idx[2].mod(OW);
                            IndexExpr ih = oh * st[0] + kh * dl[0] - IndexExpr(pd[0]);
                            IndexExpr iw = ow * st[1] + kw * dl[1] - IndexExpr(pd[1]);
                            IndexExpr cih = clamped(ih, H), ciw = clamped(iw, W);
                            VPtr v = L.at(x, {idx[0], c, cih, ciw});
                            VPtr inside;
                            auto add = [&](VPtr ok) {
                              inside = inside ? v_binary(VOp::And, inside, ok) : ok;
                            };
                            if (!(cih == ih))
                              add(v_binary(VOp::And, index_ge(ih, 0), index_lt(ih, H)));
                            if (!(ciw == iw))
                              add(v_binary(VOp::And, index_ge(iw, 0), index_lt(iw, W)));
                            return inside ? v_where(inside, v, v_const(0, x.dtype)) : v;
                          },
                          {&x});
  LVal wb = L.view(n, w, {N, O, CKK}, [&](auto& idx) {
    return std::vector<IndexExpr>{idx[1], idx[2].floordiv(KH * KW), idx[2].floordiv(KW).mod(KH),
                                  idx[2].mod(KW)};
  });
  LVal prod = L.gemm(n, wb, cols, {N, O, Lo});
  LVal out = L.reshape(prod, m.sizes);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr p = L.at(out, idx);
                             if (bias) p = v_binary(VOp::Add, p, v_cast(L.at(*bias, {idx[1]}), t));
                             return p;
                           },
                           {bias}));
}

/// convolution_backward (decompose keeps it only for CUDA with cuDNN and for the CPU with
/// oneDNN, passes/decompose.h): the input gradient is a backward-data call
/// (cudnnConvolutionBackwardData, oneDNN's backward data), the weight gradient a backward-filter
/// call (cudnnConvolutionBackwardFilter, oneDNN's backward weights), the bias gradient a sum of
/// grad_output over every dim but the channels; an output output_mask does not ask for is the
/// op's empty tensor.
void lower_convolution_backward(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const LowerOptions& lo = L.options();
  const bool cudnn = lo.cuda && lo.cudnn && cudnn_conv_backward(L.g(), nd);
  const bool dnnl = !lo.cuda && lo.onednn && onednn_conv_backward(L.g(), nd);
  if (!cudnn && !dnnl) {
    L.fallback(n, std::string("convolution_backward is decomposed except for cuDNN and oneDNN (") +
                      (lo.cuda ? (lo.cudnn ? "not a 2-D float convolution"
                                           : "cuDNN not used: " + lo.no_cudnn_reason)
                               : (lo.onednn ? "oneDNN does not compute this convolution's gradients"
                                            : "oneDNN not used: " + lo.no_onednn_reason)) +
                      ")");
    return;
  }
  LVal& g = L.input(n, "grad_output");
  LVal& x = L.input(n, "input");
  LVal& w = L.input(n, "weight");
  // cuDNN: {h, w}; oneDNN: one value per spatial dim.
  const size_t sp = dnnl ? x.sizes.size() - 2 : 2;
  auto window = [&](const char* name) {
    std::vector<int64_t> v = nd.arg(name).ints;
    if (v.size() == 1) v.assign(sp, v[0]);
    return v;
  };
  std::vector<bool> mask = nd.arg("output_mask").bools;
  mask.resize(3, false);
  auto empty = [&](int i) {
    const TensorMeta& m = L.out_meta(n, i);
    L.set_output(n, i,
                 L.pointwise(n, m.dtype, m.sizes, [&](auto&) { return v_const(0, m.dtype); }, {}));
  };
  auto call = [&](ExternCall::Kind kind, const std::string& op, LVal& a, LVal& b, int i) {
    if (!mask[size_t(i)]) return empty(i);
    const TensorMeta& m = L.out_meta(n, i);
    ExternCall c;
    c.kind = kind;
    c.op = (dnnl ? "onednn_" : "") + op;
    c.operands = {L.contiguous_operand(n, a), L.contiguous_operand(n, b)};
    c.stride = window("stride");
    c.padding = window("padding");
    c.dilation = window("dilation");
    c.groups = nd.arg("groups").i;
    int id = L.extern_buffer(n, std::move(c), m.dtype, m.sizes);
    L.set_output(n, i, L.load_of(id, {n}));
  };
  call(ExternCall::Kind::ConvBackwardData, "convolution_backward_data", g, w, 0);
  call(ExternCall::Kind::ConvBackwardFilter, "convolution_backward_filter", x, g, 1);
  if (!mask[2]) return empty(2);
  DType acc = accumulate_type(g.dtype);
  std::vector<int64_t> dims = {0};
  for (size_t i = 2; i < g.sizes.size(); ++i) dims.push_back(int64_t(i));
  L.set_output(n, 2,
               L.reduce(n, ReduceOp::Sum, acc, g.sizes, dims,
                        [&](auto& idx) { return v_cast(L.at(g, idx), acc); }, {&g}));
}

/// _cdist_forward: a reduction over the feature dim of |x1 - x2| raised per p (a count for p = 0,
/// a max for p = inf, |d|, d^2 or |d|^p), then the root; batch dims broadcast by index.
void lower_cdist(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x1 = L.input(n, "x1");
  LVal& x2 = L.input(n, "x2");
  const TensorMeta& m = L.out_meta(n);
  const double p = nd.arg("p").f;
  const size_t R = m.sizes.size();
  if (R < 2 || x1.sizes.size() < 2 || x2.sizes.size() < 2 || !(p >= 0)) {
    L.fallback(n, "_cdist_forward arguments not lowered");
    return;
  }
  const int64_t M = x1.sizes.back();
  const DType acc = accumulate_type(m.dtype);
  std::vector<int64_t> in_sizes = m.sizes;
  in_sizes.push_back(M);
  // The operand's element for output batch index idx[..R-2], row `row`, feature `k`.
  auto at = [&](LVal& x, const auto& idx, const IndexExpr& row, const IndexExpr& k) {
    std::vector<IndexExpr> i;
    size_t kb = x.sizes.size() - 2, ob = R - 2;
    for (size_t d = 0; d < kb; ++d) i.push_back(x.sizes[d] == 1 ? IndexExpr(0) : idx[ob - kb + d]);
    i.push_back(row);
    i.push_back(k);
    return v_cast(L.at(x, i), acc);
  };
  const bool inf = std::isinf(p);
  auto term = [&](auto& idx) {
    VPtr d = v_unary(VOp::Abs, v_binary(VOp::Sub, at(x1, idx, idx[R - 2], idx[R]),
                                        at(x2, idx, idx[R - 1], idx[R])));
    if (p == 0) return v_cast(v_binary(VOp::Ne, d, v_const(0, acc)), acc);
    if (inf || p == 1) return d;
    if (p == 2) return v_binary(VOp::Mul, d, d);
    return v_binary(VOp::Pow, d, v_const(p, acc));
  };
  LVal r = L.reduce(n, inf ? ReduceOp::Max : ReduceOp::Sum, acc, in_sizes, {int64_t(R)}, term,
                    {&x1, &x2});
  LVal flat = L.reshape(r, m.sizes);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr v = L.at(flat, idx);
                             if (inf)
                               v = v_binary(VOp::Max, v, v_const(0, acc));
                             else if (p == 2)
                               v = v_unary(VOp::Sqrt, v);
                             else if (p != 0 && p != 1)
                               v = v_binary(VOp::Pow, v, v_const(1 / p, acc));
                             return v_cast(v, m.dtype);
                           },
                           {&flat}));
}

/// im2col/col2im's kernel_size, dilation, padding and stride (two each) and blocks per dim.
struct Blocks {
  std::vector<int64_t> k, d, p, s;
  int64_t oh = 0, ow = 0;
};
bool blocks_of(const Node& nd, int64_t H, int64_t W, Blocks& b) {
  auto two = [&](const char* name) {
    auto v = nd.arg(name).ints;
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
  };
  b.k = two("kernel_size"), b.d = two("dilation"), b.p = two("padding"), b.s = two("stride");
  if (b.k.size() != 2 || b.d.size() != 2 || b.p.size() != 2 || b.s.size() != 2) return false;
  if (b.s[0] <= 0 || b.s[1] <= 0) return false;
  b.oh = resample::pool_out_size(H, b.k[0], b.p[0], b.s[0], b.d[0], false);
  b.ow = resample::pool_out_size(W, b.k[1], b.p[1], b.s[1], b.d[1], false);
  return b.oh > 0 && b.ow > 0;
}

/// im2col: a pointwise gather; row r = (c * kh + i) * kw + j and block l = oh * OW + ow read
/// x[c, oh*sh - ph + i*dh, ow*sw - pw + j*dw], 0 in the padding.
void lower_im2col(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  Blocks b;
  if (x.sizes.size() < 3 || !blocks_of(nd, x.sizes[x.sizes.size() - 2], x.sizes.back(), b)) {
    L.fallback(n, "im2col arguments not lowered");
    return;
  }
  const size_t lead = x.sizes.size() - 3;
  const int64_t H = x.sizes[lead + 1], W = x.sizes[lead + 2];
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             const IndexExpr &r = idx[lead], &l = idx[lead + 1];
                             IndexExpr ch = r.floordiv(b.k[0] * b.k[1]),
                                       i = r.floordiv(b.k[1]).mod(b.k[0]), j = r.mod(b.k[1]);
                             IndexExpr h =
                                 l.floordiv(b.ow) * b.s[0] - IndexExpr(b.p[0]) + i * b.d[0];
                             IndexExpr w = l.mod(b.ow) * b.s[1] - IndexExpr(b.p[1]) + j * b.d[1];
                             IndexExpr hc = clamped(h, H), wc = clamped(w, W);
                             std::vector<IndexExpr> at(idx.begin(), idx.begin() + long(lead));
                             at.insert(at.end(), {ch, hc, wc});
                             VPtr v = L.at(x, at), inside;
                             if (!(hc == h))
                               inside = v_binary(VOp::And, index_ge(h, 0), index_lt(h, H));
                             if (!(wc == w)) {
                               VPtr ok = v_binary(VOp::And, index_ge(w, 0), index_lt(w, W));
                               inside = inside ? v_binary(VOp::And, inside, ok) : ok;
                             }
                             return inside ? v_where(inside, v, v_const(0, v->dtype)) : v;
                           },
                           {&x}));
}

/// col2im: a sum over the kernel offsets (i, j); offset (i, j) of pixel (h, w) reads block
/// ((h + ph - i*dh) / sh, (w + pw - j*dw) / sw) where that divides exactly and lies in range.
void lower_col2im(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  Blocks b;
  if (m.sizes.size() < 3 || !blocks_of(nd, m.sizes[m.sizes.size() - 2], m.sizes.back(), b)) {
    L.fallback(n, "col2im arguments not lowered");
    return;
  }
  const size_t R = m.sizes.size(), lead = R - 3;
  const DType acc = accumulate_type(m.dtype);
  std::vector<int64_t> in_sizes = m.sizes;
  in_sizes.insert(in_sizes.end(), {b.k[0], b.k[1]});
  auto c64 = [](int64_t v) { return v_const(double(v), DType::I64); };
  // The block index along one dim for pixel + pad - offset * dil, and whether it is one.
  auto block = [&](const IndexExpr& e, int64_t stride, int64_t blocks, VPtr& ok) {
    VPtr v = i64(e);
    VPtr q = stride == 1 ? v : v_binary(VOp::FloorDivide, v, c64(stride));
    ok = v_binary(VOp::And, v_binary(VOp::Ge, v, c64(0)), v_binary(VOp::Lt, q, c64(blocks)));
    if (stride != 1)
      ok = v_binary(VOp::And, ok,
                    v_binary(VOp::Eq, v_binary(VOp::Remainder, v, c64(stride)), c64(0)));
    return IndexExpr::indirect(q, blocks);
  };
  auto term = [&](auto& idx) {
    const IndexExpr &ch = idx[lead], &h = idx[lead + 1], &w = idx[lead + 2], &i = idx[R],
                    &j = idx[R + 1];
    VPtr okh, okw;
    IndexExpr oh = block(h + IndexExpr(b.p[0]) - i * b.d[0], b.s[0], b.oh, okh);
    IndexExpr ow = block(w + IndexExpr(b.p[1]) - j * b.d[1], b.s[1], b.ow, okw);
    std::vector<IndexExpr> at(idx.begin(), idx.begin() + long(lead));
    at.push_back(ch * (b.k[0] * b.k[1]) + i * b.k[1] + j);
    at.push_back(oh * b.ow + ow);
    VPtr v = v_cast(L.at(x, at), acc);
    return v_where(v_binary(VOp::And, okh, okw), v, v_const(0, acc));
  };
  LVal r = L.reduce(n, ReduceOp::Sum, acc, in_sizes, {int64_t(R), int64_t(R + 1)}, term, {&x});
  LVal flat = L.reshape(r, m.sizes);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) { return v_cast(L.at(flat, idx), m.dtype); }, {&flat}));
}

// ---- attention

/// A scaled_dot_product_attention that decompose() kept (DecomposeOptions::keep_cudnn_attention)
/// becomes one cuDNN fused-attention call: q, k and v are read where they are (strided, unit
/// last stride, 16-byte aligned strides and offsets; else copied), and the result buffer is
/// [B, Sq, H, Dv], the layout the flash kernels write, viewed as PyTorch's [B, H, Sq, Dv] (the
/// transpose(1, 2) and reshape to [B, Sq, H·Dv] that usually follow cost nothing).
void lower_sdpa(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const LowerOptions& lo = L.options();
  if (!lo.cuda || !lo.cudnn || !cudnn_attention(L.g(), nd)) {
    L.fallback(n, lo.cuda && !lo.cudnn
                      ? "scaled_dot_product_attention kept whole, but cuDNN not used: " +
                            lo.no_cudnn_reason
                      : "scaled_dot_product_attention kept whole outside cuDNN's fused attention");
    return;
  }
  const TensorMeta& m = L.out_meta(n);
  LVal& q = L.input(n, "query"); // [B, H, Sq, D]
  LVal& k = L.input(n, "key");
  LVal& v = L.input(n, "value");
  auto attention_operand = [&](LVal& x) {
    ExternOperand o = L.operand(x);
    bool ok = o.strides.size() == 4 && (o.strides[3] == 1 || o.sizes[3] == 1) && o.offset % 8 == 0;
    for (size_t i = 0; ok && i < 3; ++i) ok = o.sizes[i] == 1 || o.strides[i] % 8 == 0;
    return ok ? o : L.contiguous_operand(n, x);
  };
  ExternCall c;
  c.kind = ExternCall::Kind::Attention;
  c.op = "scaled_dot_product_attention";
  c.operands = {attention_operand(q), attention_operand(k), attention_operand(v)};
  if (const LVal* mask = L.opt_input(n, "attn_mask")) {
    // cuDNN's additive bias [B or 1, H or 1, Sq, Skv] in q's dtype, stored contiguously: a bool
    // mask's false becomes -inf, a float mask is cast.
    // The mask's sizes as [B, H, Sq, Skv] (1 where it has no dim, or an expanded one: stride 0).
    const size_t r = mask->sizes.size();
    std::vector<int64_t> ms(4 - r, 1);
    ms.insert(ms.end(), mask->sizes.begin(), mask->sizes.end());
    if (std::optional<ExternOperand> o = L.strided_operand(*mask))
      for (size_t j = 0; j < r; ++j)
        if (o->strides[j] == 0) ms[j + 4 - r] = 1;
    std::vector<int64_t> bias_sizes = {ms[0], ms[1], q.sizes[2], k.sizes[2]};
    LVal bias =
        L.pointwise(n, q.dtype, bias_sizes,
                    [&](auto& idx) {
                      std::vector<IndexExpr> at;
                      for (size_t j = 0; j < r; ++j) {
                        size_t i = j + 4 - r;
                        at.push_back(ms[i] == 1 || mask->sizes[j] == 1 ? IndexExpr(0) : idx[i]);
                      }
                      VPtr m = L.at(*mask, at);
                      if (mask->dtype == DType::Bool)
                        return v_where(m, v_const(0, q.dtype), v_const(-INFINITY, q.dtype));
                      return v_cast(m, q.dtype);
                    },
                    {mask});
    c.operands.push_back(L.contiguous_operand(n, bias));
  }
  int si = nd.schema->index_of("scale");
  bool scaled =
      si >= 0 && size_t(si) < nd.args.size() && nd.args[size_t(si)].kind != Arg::Kind::None;
  c.attn_scale = scaled ? nd.args[size_t(si)].scalar() : 1.0 / std::sqrt(double(q.sizes[3]));
  int ci = nd.schema->index_of("is_causal");
  c.causal = ci >= 0 && size_t(ci) < nd.args.size() && nd.args[size_t(ci)].b;
  const std::vector<int64_t>& s = m.sizes; // [B, H, Sq, Dv]
  int id = L.extern_buffer(n, std::move(c), m.dtype, {s[0], s[2], s[1], s[3]});
  LVal out = L.load_of(id, {n});
  L.set_output(n, 0, L.view(n, out, s, [](const std::vector<IndexExpr>& i) {
    return std::vector<IndexExpr>{i[0], i[2], i[1], i[3]};
  }));
}

const OpTable<LowerFn>::Row kLinalgRules[] = {
    {OpId::_cdist_forward, lower_cdist},
    {OpId::addmm, lower_addmm},
    {OpId::bmm, lower_mm},
    {OpId::col2im, lower_col2im},
    {OpId::conv2d, lower_convolution},
    {OpId::convolution, lower_convolution},
    {OpId::convolution_backward, lower_convolution_backward},
    {OpId::im2col, lower_im2col},
    {OpId::linear, lower_linear},
    {OpId::mm, lower_mm},
    {OpId::scaled_dot_product_attention, lower_sdpa},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> linalg_rules() {
  return kLinalgRules;
}

} // namespace fxc::lower_detail
