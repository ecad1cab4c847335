// Lowering of graph nodes to loop-IR buffers: one row per op in the lowering table.
#include "passes/lower.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/schema.h"
#include "frontend/tensor_rules.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace fxc {

std::string op_base_name(const std::string& target) {
  std::string s = target;
  if (s.rfind("aten.", 0) == 0) s = s.substr(5);
  size_t dot = s.find('.');
  if (dot != std::string::npos) s = s.substr(0, dot);
  while (!s.empty() && s.front() == '_') s.erase(s.begin());
  return s;
}

namespace {

/// A lowered value: element `vars` of a tensor of `sizes` is `body`. Realized values (graph
/// inputs, buffers) have body = load(buffer, contiguous offset).
struct LVal {
  int id = -1; ///< unique per lowering (memoization key)
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  VPtr body;
  int buffer = -1;
  std::set<int> origins; ///< graph node indices computed in `body`
};

std::vector<IndexExpr> make_vars(const std::vector<int64_t>& sizes, int base = 0) {
  std::vector<IndexExpr> v;
  for (size_t i = 0; i < sizes.size(); ++i) v.push_back(IndexExpr::var(base + int(i), sizes[i]));
  return v;
}

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

class Lowerer;
using LowerFn = void (*)(Lowerer& L, int node);

class Lowerer {
public:
  Lowerer(const Graph& g, const LowerOptions& o) : g_(g), opts_(o), uses_(g.use_counts()) {
    p_.source = g.source;
    vals_.resize(g.values.size());
  }

  LoopProgram run();

  // ---- helpers used by the lowering rules
  const Graph& g() const { return g_; }
  const LowerOptions& options() const { return opts_; }
  int uses(ValueId v) const { return uses_[v]; }
  /// The one node reading `v` when `v` has exactly one use and is no graph output, else -1.
  int sole_user(ValueId v) const {
    if (uses_[v] != 1) return -1;
    for (int u = 0; u < int(g_.nodes.size()); ++u)
      for (ValueId in : g_.nodes[u].tensor_inputs())
        if (in == v) return u;
    return -1;
  }
  /// Nodes whose outputs an earlier rule already computed (an activation folded into a matmul
  /// epilogue): run() gives each the value of the graph value mapped here instead of lowering it.
  std::map<int, ValueId> absorbed;
  const Node& node(int n) const { return g_.nodes[n]; }
  [[noreturn]] void fail(int n, const std::string& msg) const {
    throw Error(g_.source, msg, node(n).name, node(n).target);
  }
  const TensorMeta& out_meta(int n, int i = 0) const {
    if (size_t(i) >= node(n).outputs.size()) fail(n, "missing output " + std::to_string(i));
    return g_.values[node(n).outputs[i]].meta;
  }
  LVal& val(int n, ValueId v) {
    if (v < 0 || size_t(v) >= vals_.size() || !vals_[v].body)
      fail(n, "operand is not computed before its use");
    return vals_[v];
  }
  LVal& input(int n, const std::string& name) {
    const Arg& a = node(n).arg(name);
    if (a.kind != Arg::Kind::Tensor) fail(n, "argument '" + name + "' must be a tensor");
    return val(n, a.tensor);
  }
  const LVal* opt_input(int n, const std::string& name) {
    const Arg& a = node(n).arg(name);
    if (a.kind != Arg::Kind::Tensor) return nullptr;
    return &val(n, a.tensor);
  }

  /// Element `idx` of value `v` (memoized so diamonds share one subexpression).
  VPtr at(const LVal& v, const std::vector<IndexExpr>& idx) {
    assert(idx.size() == v.sizes.size() && "index rank differs from the value rank");
    std::string key = std::to_string(v.id);
    for (auto& i : idx) key += "|" + i.str();
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    std::map<int, IndexExpr> s;
    for (size_t i = 0; i < idx.size(); ++i) s[int(i)] = idx[i];
    VPtr r = substitute(v.body, s);
    memo_[key] = r;
    return r;
  }
  /// Broadcast read: `v` aligned to the trailing dims of `out_idx`.
  VPtr bcast(const LVal& v, const std::vector<IndexExpr>& out_idx) {
    size_t r = v.sizes.size(), R = out_idx.size();
    assert(r <= R && "broadcast operand has a higher rank than the result");
    std::vector<IndexExpr> idx(r);
    for (size_t j = 0; j < r; ++j) idx[j] = v.sizes[j] == 1 ? IndexExpr(0) : out_idx[j + R - r];
    return at(v, idx);
  }

  LVal make_val(DType t, std::vector<int64_t> sizes, VPtr body, std::set<int> origins) {
    LVal v;
    v.id = next_id_++;
    v.dtype = t;
    v.sizes = std::move(sizes);
    v.body = std::move(body);
    v.origins = std::move(origins);
    return v;
  }
  /// A pointwise value computed from `fn(vars)`, carrying the origins of `inputs` that are not
  /// realized plus node n.
  LVal pointwise(int n, DType t, std::vector<int64_t> sizes,
                 const std::function<VPtr(const std::vector<IndexExpr>&)>& fn,
                 std::vector<const LVal*> inputs) {
    std::set<int> o = {n};
    for (auto* in : inputs)
      if (in && in->buffer < 0) o.insert(in->origins.begin(), in->origins.end());
    auto vars = make_vars(sizes);
    VPtr body = fn(vars);
    return make_val(t, std::move(sizes), body, o);
  }
  void set_output(int n, int i, LVal v) {
    ValueId id = node(n).outputs[i];
    const TensorMeta& m = g_.values[id].meta;
    if (numel_of(m.sizes) != numel_of(v.sizes)) fail(n, "lowered output has the wrong size");
    if (m.sizes != v.sizes) v = reshape(v, m.sizes);
    if (v.dtype != m.dtype) {
      LVal c = v;
      c.id = next_id_++;
      c.dtype = m.dtype;
      c.body = v_cast(v.body, m.dtype);
      c.buffer = -1;
      v = c;
    }
    vals_[id] = std::move(v);
  }

  LVal reshape(const LVal& v, const std::vector<int64_t>& sizes) {
    auto vars = make_vars(sizes);
    IndexExpr lin = linear_index(vars, contiguous_strides(sizes));
    VPtr body = at(v, unravel_index(lin, v.sizes));
    LVal r = make_val(v.dtype, sizes, body, v.origins);
    r.buffer = -1;
    if (v.buffer >= 0) r.origins.clear();
    return r;
  }
  /// A view: element idx of the result is element map(idx) of `v`.
  LVal view(int n, const LVal& v, std::vector<int64_t> sizes,
            const std::function<std::vector<IndexExpr>(const std::vector<IndexExpr>&)>& map) {
    auto vars = make_vars(sizes);
    VPtr body = at(v, map(vars));
    std::set<int> o;
    if (v.buffer < 0) o = v.origins;
    return make_val(v.dtype, std::move(sizes), body, o);
  }

  int add_buffer(Buffer b) {
    b.name = "buf" + std::to_string(p_.buffers.size());
    p_.buffers.push_back(std::move(b));
    return int(p_.buffers.size()) - 1;
  }
  void set_origins(Buffer& b, const std::set<int>& origins) {
    for (int n : origins) {
      b.origins.push_back(node(n).name);
      std::string op = op_base_name(node(n).target);
      if (std::find(b.origin_ops.begin(), b.origin_ops.end(), op) == b.origin_ops.end())
        b.origin_ops.push_back(op);
    }
  }
  LVal load_of(int buf, std::set<int> origins) {
    const Buffer& b = p_.buffers[buf];
    auto vars = make_vars(b.sizes);
    LVal v = make_val(b.dtype, b.sizes,
                      v_load(buf, linear_index(vars, contiguous_strides(b.sizes)), b.dtype),
                      std::move(origins));
    v.buffer = buf;
    return v;
  }
  /// Materializes `v` as a pointwise buffer (no-op when it already is one).
  void realize(LVal& v) {
    if (v.buffer >= 0) return;
    Buffer b;
    b.kind = Buffer::Kind::Pointwise;
    b.dtype = v.dtype;
    b.sizes = v.sizes;
    b.vars = make_vars(v.sizes);
    b.body = v.body;
    set_origins(b, v.origins);
    int id = add_buffer(std::move(b));
    v = load_of(id, v.origins);
  }
  /// A reduction over `rdims` of an input of `in_sizes`; `fn(in_idx)` gives the value reduced.
  /// Returns the keepdim-shaped result.
  LVal reduce(int n, ReduceOp op, DType acc, const std::vector<int64_t>& in_sizes,
              std::vector<int64_t> rdims,
              const std::function<VPtr(const std::vector<IndexExpr>&)>& fn,
              std::vector<const LVal*> inputs) {
    std::sort(rdims.begin(), rdims.end());
    rdims.erase(std::unique(rdims.begin(), rdims.end()), rdims.end());
    Buffer b;
    b.kind = Buffer::Kind::Reduction;
    b.reduce = op;
    b.dtype = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin ? DType::I64
              : op == ReduceOp::Any                            ? DType::Bool
                                                               : acc;
    b.sizes = in_sizes;
    for (int64_t d : rdims) b.sizes[d] = 1;
    b.vars = make_vars(b.sizes);
    std::vector<IndexExpr> in_idx = b.vars;
    for (size_t j = 0; j < rdims.size(); ++j) {
      IndexExpr rv = IndexExpr::var(kRVarBase + int(j), in_sizes[rdims[j]]);
      b.rvars.push_back(rv);
      b.rsizes.push_back(in_sizes[rdims[j]]);
      in_idx[rdims[j]] = rv;
    }
    VPtr body = fn(in_idx);
    b.body = op == ReduceOp::Any                                ? v_cast(body, DType::Bool)
             : op == ReduceOp::ArgMax || op == ReduceOp::ArgMin ? body
                                                                : v_cast(body, acc);
    std::set<int> o = {n};
    for (auto* in : inputs)
      if (in && in->buffer < 0) o.insert(in->origins.begin(), in->origins.end());
    set_origins(b, o);
    int id = add_buffer(std::move(b));
    return load_of(id, {n});
  }
  /// `v` as a strided operand of an extern call when it is a strided view of a buffer.
  std::optional<ExternOperand> strided_operand(const LVal& v) const {
    if (v.body->op != VOp::Load || !v.body->index.is_affine()) return std::nullopt;
    const IndexExpr& ix = v.body->index;
    for (auto& [a, c] : ix.terms())
      if (a.id >= int(v.sizes.size())) return std::nullopt;
    if (v.body->dtype != p_.buffers[v.body->buffer].dtype) return std::nullopt;
    ExternOperand o;
    o.buffer = v.body->buffer;
    o.sizes = v.sizes;
    for (size_t i = 0; i < v.sizes.size(); ++i) o.strides.push_back(ix.coeff_of_var(int(i)));
    o.offset = ix.constant();
    return o;
  }
  /// A strided operand for an extern call (realizing `v` when it is not a strided view).
  ExternOperand operand(LVal& v) {
    if (auto o = strided_operand(v)) return *o;
    realize(v);
    return operand(v);
  }
  int extern_buffer(int n, ExternCall call, DType t, std::vector<int64_t> sizes) {
    Buffer b;
    b.kind = Buffer::Kind::Extern;
    b.dtype = t;
    b.sizes = std::move(sizes);
    b.call = std::move(call);
    set_origins(b, {n});
    int id = add_buffer(std::move(b));
    p_.buffers[id].call.outputs.insert(p_.buffers[id].call.outputs.begin(), id);
    return id;
  }
  /// out = a @ b through BLAS; a [.., M, K], b [.., K, N] (same batch dims). With an epilogue,
  /// `bias` [N] is added (then the activation applied, or `residual` [M, N] added) by the BLAS
  /// call; `also` are nodes the call computes besides n (a folded activation or residual add).
  LVal gemm(int n, LVal& a, LVal& b, const std::vector<int64_t>& out_sizes,
            GemmEpilogue epilogue = GemmEpilogue::None, LVal* bias = nullptr,
            LVal* residual = nullptr, const std::set<int>& also = {}) {
    ExternCall c;
    c.kind = ExternCall::Kind::Gemm;
    c.op = epilogue != GemmEpilogue::None ? "addmm" : a.sizes.size() == 3 ? "bmm" : "mm";
    c.operands = {operand(a), operand(b)};
    if (epilogue != GemmEpilogue::None) {
      assert(bias && "a gemm epilogue needs its bias");
      c.operands.push_back(operand(*bias));
    }
    assert((epilogue == GemmEpilogue::BiasResidual) == (residual != nullptr));
    if (residual) c.operands.push_back(operand(*residual));
    c.epilogue = epilogue;
    int id = extern_buffer(n, std::move(c), a.dtype, out_sizes);
    std::set<int> origins = {n};
    origins.insert(also.begin(), also.end());
    if (!also.empty()) {
      p_.buffers[id].origins.clear();
      p_.buffers[id].origin_ops.clear();
      set_origins(p_.buffers[id], origins);
    }
    return load_of(id, origins);
  }
  /// An extern operand of `v` laid out contiguously from its offset (copied when it is not).
  ExternOperand contiguous_operand(int n, LVal& v) {
    ExternOperand o = operand(v);
    if (o.strides == contiguous_strides(o.sizes)) return o;
    LVal c = pointwise(n, v.dtype, v.sizes, [&](auto& idx) { return at(v, idx); }, {&v});
    realize(c);
    return operand(c);
  }
  void fallback(int n, const std::string& why);
  void inject_bug(int n);

  LoopProgram p_;
  std::vector<LVal> vals_;

private:
  const Graph& g_;
  LowerOptions opts_;
  std::vector<int> uses_;
  std::map<std::string, VPtr> memo_;
  int next_id_ = 0;
};

// ---------------------------------------------------------------- rule helpers

/// Operand `name` of node n at out_idx, converted to `t`: a broadcast tensor or a scalar.
VPtr operand_at(Lowerer& L, int n, const std::string& name, const std::vector<IndexExpr>& idx,
                DType t) {
  const Arg& a = L.node(n).arg(name);
  if (a.kind == Arg::Kind::Tensor) return v_cast(L.bcast(L.val(n, a.tensor), idx), t);
  if (a.kind == Arg::Kind::None) L.fail(n, "argument '" + name + "' is missing");
  return v_const(a.scalar(), t);
}

const LVal* tensor_arg(Lowerer& L, int n, const std::string& name) {
  const Arg& a = L.node(n).arg(name);
  return a.kind == Arg::Kind::Tensor ? &L.val(n, a.tensor) : nullptr;
}

/// The dtype in which a comparison of the two operands is evaluated.
DType compare_dtype(Lowerer& L, int n, const std::string& x, const std::string& y) {
  const Arg& a = L.node(n).arg(x);
  const Arg& b = L.node(n).arg(y);
  auto dt = [&](const Arg& v) -> std::optional<DType> {
    if (v.kind == Arg::Kind::Tensor) return L.val(n, v.tensor).dtype;
    return std::nullopt;
  };
  auto da = dt(a), db = dt(b);
  if (da && db) return promote_types(*da, *db);
  DType t = da ? *da : *db;
  const Arg& s = da ? b : a;
  if (s.kind == Arg::Kind::Float && !is_floating(t)) return DType::F32;
  return t;
}

VPtr gelu_expr(VPtr x, bool tanh_approx) {
  DType t = x->dtype;
  auto c = [&](double v) { return v_const(v, t); };
  VPtr inner;
  if (tanh_approx) {
    VPtr x3 = v_binary(VOp::Mul, v_binary(VOp::Mul, x, x), x);
    inner =
        v_unary(VOp::Tanh, v_binary(VOp::Mul, c(0.7978845608028654),
                                    v_binary(VOp::Add, x, v_binary(VOp::Mul, c(0.044715), x3))));
  } else {
    inner = v_unary(VOp::Erf, v_binary(VOp::Mul, x, c(0.7071067811865476)));
  }
  return v_binary(VOp::Mul, v_binary(VOp::Mul, c(0.5), x), v_binary(VOp::Add, c(1.0), inner));
}

void unary(Lowerer& L, int n, const std::function<VPtr(VPtr)>& f) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  DType t = m.dtype;
  L.set_output(
      n, 0,
      L.pointwise(n, t, m.sizes, [&](auto& idx) { return f(v_cast(L.at(x, idx), t)); }, {&x}));
}

#define UNARY(NAME, EXPR)                                                                          \
  void NAME(Lowerer& L, int n) {                                                                   \
    unary(L, n, [](VPtr x) -> VPtr { return EXPR; });                                              \
  }
UNARY(lower_abs, v_unary(VOp::Abs, x))
UNARY(lower_neg, v_unary(VOp::Neg, x))
UNARY(lower_exp, v_unary(VOp::Exp, x))
UNARY(lower_log, v_unary(VOp::Log, x))
UNARY(lower_sqrt, v_unary(VOp::Sqrt, x))
UNARY(lower_rsqrt, v_unary(VOp::Rsqrt, x))
UNARY(lower_tanh, v_unary(VOp::Tanh, x))
UNARY(lower_sigmoid, v_unary(VOp::Sigmoid, x))
UNARY(lower_erf, v_unary(VOp::Erf, x))
UNARY(lower_sin, v_unary(VOp::Sin, x))
UNARY(lower_cos, v_unary(VOp::Cos, x))
UNARY(lower_reciprocal, v_unary(VOp::Reciprocal, x))
UNARY(lower_relu, v_binary(VOp::Max, x, v_const(0, x->dtype)))
UNARY(lower_silu, v_binary(VOp::Mul, x, v_unary(VOp::Sigmoid, x)))
UNARY(lower_hardsigmoid,
      v_binary(VOp::Min,
               v_binary(VOp::Max,
                        v_binary(VOp::Add, v_binary(VOp::Div, x, v_const(6, x->dtype)),
                                 v_const(0.5, x->dtype)),
                        v_const(0, x->dtype)),
               v_const(1, x->dtype)))
UNARY(lower_hardswish,
      v_binary(VOp::Mul, x,
               v_binary(VOp::Min,
                        v_binary(VOp::Max,
                                 v_binary(VOp::Add, v_binary(VOp::Div, x, v_const(6, x->dtype)),
                                          v_const(0.5, x->dtype)),
                                 v_const(0, x->dtype)),
                        v_const(1, x->dtype))))
UNARY(lower_sign, v_binary(VOp::Sub, v_cast(v_binary(VOp::Gt, x, v_const(0, x->dtype)), x->dtype),
                           v_cast(v_binary(VOp::Lt, x, v_const(0, x->dtype)), x->dtype)))
#undef UNARY

void lower_logical_not(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_cast(v_unary(VOp::Not, v_cast(L.at(x, idx), DType::Bool)),
                                           m.dtype);
                           },
                           {&x}));
}

void lower_gelu(Lowerer& L, int n) {
  bool t = L.node(n).arg("approximate").s == "tanh";
  if (t)
    unary(L, n, [](VPtr x) { return gelu_expr(x, true); });
  else
    unary(L, n, [](VPtr x) { return gelu_expr(x, false); });
}

void lower_clamp(Lowerer& L, int n) {
  const Arg lo = L.node(n).arg("min"), hi = L.node(n).arg("max");
  unary(L, n, [&](VPtr x) {
    if (!lo.is_none()) x = v_binary(VOp::Max, x, v_const(lo.scalar(), x->dtype));
    if (!hi.is_none()) x = v_binary(VOp::Min, x, v_const(hi.scalar(), x->dtype));
    return x;
  });
}

/// Binary arithmetic, evaluated in the output dtype; alpha scales `other` when present.
void binary(Lowerer& L, int n, VOp op, bool has_alpha, bool reverse = false) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  double alpha = has_alpha ? L.node(n).arg("alpha").scalar() : 1.0;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr a = operand_at(L, n, "self", idx, t);
                             VPtr b = operand_at(L, n, "other", idx, t);
                             if (alpha != 1.0) b = v_binary(VOp::Mul, b, v_const(alpha, t));
                             return reverse ? v_binary(op, b, a) : v_binary(op, a, b);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}

void lower_add(Lowerer& L, int n) {
  binary(L, n, VOp::Add, true);
}
void lower_sub(Lowerer& L, int n) {
  binary(L, n, VOp::Sub, true);
}
void lower_mul(Lowerer& L, int n) {
  binary(L, n, VOp::Mul, false);
}
void lower_div(Lowerer& L, int n) {
  binary(L, n, VOp::Div, false);
}
void lower_fmod(Lowerer& L, int n) {
  binary(L, n, VOp::Fmod, false);
}
void lower_maximum(Lowerer& L, int n) {
  binary(L, n, VOp::Max, false);
}
void lower_minimum(Lowerer& L, int n) {
  binary(L, n, VOp::Min, false);
}

void lower_pow(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             return v_binary(VOp::Pow, operand_at(L, n, "self", idx, t),
                                             operand_at(L, n, "exponent", idx, t));
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "exponent")}));
}

void compare(Lowerer& L, int n, VOp op, const char* x = "self", const char* y = "other") {
  const TensorMeta& m = L.out_meta(n);
  DType c = compare_dtype(L, n, x, y);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr r = v_binary(op, operand_at(L, n, x, idx, c),
                                               operand_at(L, n, y, idx, c));
                             return v_cast(r, m.dtype);
                           },
                           {tensor_arg(L, n, x), tensor_arg(L, n, y)}));
}
void lower_eq(Lowerer& L, int n) {
  compare(L, n, VOp::Eq);
}
void lower_ne(Lowerer& L, int n) {
  compare(L, n, VOp::Ne);
}
void lower_lt(Lowerer& L, int n) {
  compare(L, n, VOp::Lt);
}
void lower_le(Lowerer& L, int n) {
  compare(L, n, VOp::Le);
}
void lower_gt(Lowerer& L, int n) {
  compare(L, n, VOp::Gt);
}
void lower_ge(Lowerer& L, int n) {
  compare(L, n, VOp::Ge);
}

void lower_logical_and(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_cast(v_binary(VOp::And,
                                                    operand_at(L, n, "self", idx, DType::Bool),
                                                    operand_at(L, n, "other", idx, DType::Bool)),
                                           m.dtype);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}

// ---- Op families of issue 18: integer division and remainders, rsub, bitwise, logical ----

// rsub(self, other, alpha) = other - alpha * self, in the output dtype.
void lower_rsub(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  double alpha = L.node(n).arg("alpha").scalar();
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr a = operand_at(L, n, "self", idx, t);
                             VPtr b = operand_at(L, n, "other", idx, t);
                             if (alpha != 1.0) a = v_binary(VOp::Mul, a, v_const(alpha, t));
                             return v_binary(VOp::Sub, b, a);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}

void lower_floor_divide(Lowerer& L, int n) {
  binary(L, n, VOp::FloorDivide, false);
}
void lower_remainder(Lowerer& L, int n) {
  binary(L, n, VOp::Remainder, false);
}
// div with rounding_mode None (true division), 'trunc' or 'floor' (the meta function checked it).
void lower_div_mode(Lowerer& L, int n) {
  const Arg& mode = L.node(n).arg("rounding_mode");
  if (mode.is_none()) return binary(L, n, VOp::Div, false);
  binary(L, n, mode.s == "floor" ? VOp::FloorDivide : VOp::TruncDivide, false);
}
void lower_bitwise_and(Lowerer& L, int n) {
  binary(L, n, VOp::BitAnd, false);
}
void lower_bitwise_or(Lowerer& L, int n) {
  binary(L, n, VOp::BitOr, false);
}
void lower_bitwise_xor(Lowerer& L, int n) {
  binary(L, n, VOp::BitXor, false);
}
void lower_shl(Lowerer& L, int n) {
  binary(L, n, VOp::Shl, false);
}
void lower_shr(Lowerer& L, int n) {
  binary(L, n, VOp::Shr, false);
}
void lower_bitwise_not(Lowerer& L, int n) {
  unary(L, n, [](VPtr x) { return v_unary(VOp::BitNot, x); });
}
// logical_or / logical_xor: both operands as bool (nonzero is true), the result cast to bool.
void logical_binary(Lowerer& L, int n, VOp op) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_cast(v_binary(op, operand_at(L, n, "self", idx, DType::Bool),
                                                    operand_at(L, n, "other", idx, DType::Bool)),
                                           m.dtype);
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "other")}));
}
void lower_logical_or(Lowerer& L, int n) {
  logical_binary(L, n, VOp::Or);
}
void lower_logical_xor(Lowerer& L, int n) {
  logical_binary(L, n, VOp::Ne);
}
// End of the issue-18 op families.

// ---- Issue 18, unary math and special functions ----

#define UNARY(NAME, EXPR)                                                                          \
  void NAME(Lowerer& L, int n) {                                                                   \
    unary(L, n, [](VPtr x) -> VPtr { return EXPR; });                                              \
  }
UNARY(lower_tan, v_unary(VOp::Tan, x))
UNARY(lower_asin, v_unary(VOp::Asin, x))
UNARY(lower_acos, v_unary(VOp::Acos, x))
UNARY(lower_atan, v_unary(VOp::Atan, x))
UNARY(lower_sinh, v_unary(VOp::Sinh, x))
UNARY(lower_cosh, v_unary(VOp::Cosh, x))
UNARY(lower_asinh, v_unary(VOp::Asinh, x))
UNARY(lower_acosh, v_unary(VOp::Acosh, x))
UNARY(lower_atanh, v_unary(VOp::Atanh, x))
UNARY(lower_log2, v_unary(VOp::Log2, x))
UNARY(lower_log10, v_unary(VOp::Log10, x))
UNARY(lower_log1p, v_unary(VOp::Log1p, x))
UNARY(lower_expm1, v_unary(VOp::Expm1, x))
// Integers round to themselves.
UNARY(lower_floor, is_floating(x->dtype) ? v_unary(VOp::Floor, x) : x)
UNARY(lower_ceil, is_floating(x->dtype) ? v_unary(VOp::Ceil, x) : x)
UNARY(lower_round, is_floating(x->dtype) ? v_unary(VOp::Round, x) : x)
UNARY(lower_trunc, is_floating(x->dtype) ? v_unary(VOp::Trunc, x) : x)
#undef UNARY

// round.decimals as PyTorch computes it: scale by 10^|d|, round half to even, scale back.
void lower_round_decimals(Lowerer& L, int n) {
  const int64_t d = L.node(n).arg("decimals").i;
  const double ten = std::pow(10.0, double(d < 0 ? -d : d));
  unary(L, n, [&](VPtr x) -> VPtr {
    if (!is_floating(x->dtype)) return x;
    VPtr t = v_const(ten, x->dtype);
    if (d < 0) return v_binary(VOp::Mul, v_unary(VOp::Round, v_binary(VOp::Div, x, t)), t);
    return v_binary(VOp::Div, v_unary(VOp::Round, v_binary(VOp::Mul, x, t)), t);
  });
}

// isnan / isinf read the input in its own dtype (integers are neither).
void nan_inf_test(Lowerer& L, int n, bool inf) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) -> VPtr {
                             VPtr v = L.at(x, idx);
                             if (!is_floating(v->dtype)) return v_const(0, DType::Bool);
                             if (inf)
                               return v_binary(VOp::Eq, v_unary(VOp::Abs, v),
                                               v_const(INFINITY, v->dtype));
                             return v_binary(VOp::Ne, v, v);
                           },
                           {&x}));
}
void lower_isnan(Lowerer& L, int n) {
  nan_inf_test(L, n, false);
}
void lower_isinf(Lowerer& L, int n) {
  nan_inf_test(L, n, true);
}

void lower_atan2(Lowerer& L, int n) {
  binary(L, n, VOp::Atan2, false);
}

void lower_pow_scalar(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             return v_binary(VOp::Pow, operand_at(L, n, "self", idx, t),
                                             operand_at(L, n, "exponent", idx, t));
                           },
                           {tensor_arg(L, n, "exponent")}));
}

// clamp.Tensor: max with the lower bound, then min with the upper (both propagate NaN).
void lower_clamp_tensor(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  const bool lo = !L.node(n).arg("min").is_none(), hi = !L.node(n).arg("max").is_none();
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr x = operand_at(L, n, "self", idx, t);
                             if (lo) x = v_binary(VOp::Max, x, operand_at(L, n, "min", idx, t));
                             if (hi) x = v_binary(VOp::Min, x, operand_at(L, n, "max", idx, t));
                             return x;
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "min"),
                            tensor_arg(L, n, "max")}));
}
// End of the issue-18 unary math.

void lower_where(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             return v_where(operand_at(L, n, "condition", idx, DType::Bool),
                                            operand_at(L, n, "self", idx, t),
                                            operand_at(L, n, "other", idx, t));
                           },
                           {tensor_arg(L, n, "condition"), tensor_arg(L, n, "self"),
                            tensor_arg(L, n, "other")}));
}

void lower_masked_fill(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             return v_where(operand_at(L, n, "mask", idx, DType::Bool),
                                            operand_at(L, n, "value", idx, t),
                                            operand_at(L, n, "self", idx, t));
                           },
                           {tensor_arg(L, n, "self"), tensor_arg(L, n, "mask")}));
}

/// full, zeros, scalar_tensor, full_like, new_zeros: a constant of the output's dtype.
void constant_fill(Lowerer& L, int n, double v) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes, [&](auto&) { return v_const(v, m.dtype); }, {}));
}
void lower_full(Lowerer& L, int n) {
  constant_fill(L, n, L.node(n).arg("fill_value").scalar());
}
void lower_zeros(Lowerer& L, int n) {
  constant_fill(L, n, 0);
}
void lower_scalar_tensor(Lowerer& L, int n) {
  constant_fill(L, n, L.node(n).arg("s").scalar());
}

void lower_arange(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  int si = nd.schema->index_of("start"), pi = nd.schema->index_of("step");
  double start = si >= 0 ? nd.args[si].scalar() : 0.0;
  double step = pi >= 0 ? nd.args[pi].scalar() : 1.0;
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr i = v_index(idx.empty() ? IndexExpr(0) : idx[0], t);
                             return v_binary(VOp::Add, v_const(start, t),
                                             v_binary(VOp::Mul, v_const(step, t), i));
                           },
                           {}));
}

void lower_copy_like(Lowerer& L, int n) {
  unary(L, n, [](VPtr x) { return x; });
}

void lower_copy(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  LVal& src = L.input(n, "src");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) { return v_cast(L.bcast(src, idx), m.dtype); }, {&src}));
}

// ---- views

int64_t wrap(Lowerer& L, int n, int64_t d, int64_t rank) {
  try {
    return wrap_dim(d, rank);
  } catch (const std::out_of_range& e) {
    L.fail(n, e.what());
  }
}

void lower_reshape(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  if (numel_of(m.sizes) != numel_of(x.sizes)) L.fail(n, "reshape changes the number of elements");
  LVal r = L.reshape(x, m.sizes);
  if (x.buffer >= 0) r.origins.clear();
  L.set_output(n, 0, r);
}

void lower_permute(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  auto dims = L.node(n).arg("dims").ints;
  if (dims.size() != x.sizes.size()) L.fail(n, "permute needs one dim per input dim");
  std::vector<int64_t> sizes;
  for (auto& d : dims) {
    d = wrap(L, n, d, int64_t(x.sizes.size()));
    sizes.push_back(x.sizes[d]);
  }
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in(idx.size());
    for (size_t i = 0; i < dims.size(); ++i) in[dims[i]] = idx[i];
    return in;
  }));
}

void lower_transpose(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  int64_t r = int64_t(x.sizes.size());
  int64_t a = wrap(L, n, L.node(n).arg("dim0").i, r), b = wrap(L, n, L.node(n).arg("dim1").i, r);
  std::vector<int64_t> sizes = x.sizes;
  if (r > 0) std::swap(sizes[a], sizes[b]);
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    if (r > 0) std::swap(in[a], in[b]);
    return in;
  }));
}

void lower_expand(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  if (m.sizes.size() < x.sizes.size()) L.fail(n, "expand to fewer dims");
  L.set_output(n, 0, L.view(n, x, m.sizes, [&](auto& idx) {
    std::vector<IndexExpr> in(x.sizes.size());
    size_t off = idx.size() - in.size();
    for (size_t j = 0; j < in.size(); ++j) in[j] = x.sizes[j] == 1 ? IndexExpr(0) : idx[j + off];
    return in;
  }));
}

/// unsqueeze/squeeze: the same elements with size-1 dims added or removed.
void lower_same_order_view(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  LVal r = L.reshape(x, m.sizes);
  if (x.buffer >= 0) r.origins.clear();
  L.set_output(n, 0, r);
}

void lower_slice(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(x.sizes.size()));
  int64_t size = x.sizes[d];
  int64_t start = nd.arg("start").is_none() ? 0 : nd.arg("start").i;
  int64_t end = nd.arg("end").is_none() ? size : nd.arg("end").i;
  int64_t step = nd.arg("step").i;
  if (step <= 0) L.fail(n, "slice step must be positive");
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  std::vector<int64_t> sizes = x.sizes;
  sizes[d] = (end - start + step - 1) / step;
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    in[d] = idx[d] * step + IndexExpr(start);
    return in;
  }));
}

void lower_select(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(x.sizes.size()));
  int64_t i = nd.arg("index").i;
  if (i < 0) i += x.sizes[d];
  if (i < 0 || i >= x.sizes[d]) L.fail(n, "select index out of range");
  std::vector<int64_t> sizes = x.sizes;
  sizes.erase(sizes.begin() + d);
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    in.insert(in.begin() + d, IndexExpr(i));
    return in;
  }));
}

void lower_split(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(x.sizes.size()));
  int64_t start = 0;
  for (size_t k = 0; k < nd.outputs.size(); ++k) {
    std::vector<int64_t> sizes = L.g().values[nd.outputs[k]].meta.sizes;
    if (sizes.size() != x.sizes.size()) L.fail(n, "split output has the wrong rank");
    int64_t s0 = start;
    L.set_output(n, int(k), L.view(n, x, sizes, [&](auto& idx) {
      std::vector<IndexExpr> in = idx;
      in[d] = idx[d] + IndexExpr(s0);
      return in;
    }));
    start += sizes[d];
  }
  if (start > x.sizes[d]) L.fail(n, "split sizes exceed the input");
}

// ---- reductions

std::vector<int64_t> reduce_dims(Lowerer& L, int n, const Arg& dim, int64_t rank) {
  std::vector<int64_t> dims;
  if (dim.kind == Arg::Kind::Int)
    dims = {dim.i};
  else if (dim.kind == Arg::Kind::Ints)
    dims = dim.ints;
  if (dims.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  for (auto& d : dims) d = wrap(L, n, d, rank);
  if (rank == 0) dims.clear();
  return dims;
}

void simple_reduce(Lowerer& L, int n, ReduceOp op, bool mean) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  int di = nd.schema->index_of("dim");
  Arg dim = di >= 0 ? nd.args[di] : Arg::none();
  auto dims = reduce_dims(L, n, dim, int64_t(x.sizes.size()));
  DType acc = op == ReduceOp::Any ? DType::Bool : m.dtype;
  LVal r = L.reduce(n, op, acc, x.sizes, dims, [&](auto& idx) { return L.at(x, idx); }, {&x});
  if (mean) {
    int64_t cnt = 1;
    for (int64_t d : dims) cnt *= x.sizes[d];
    LVal rr = r;
    r = L.pointwise(
        n, acc, rr.sizes,
        [&](auto& idx) { return v_binary(VOp::Div, L.at(rr, idx), v_const(double(cnt), acc)); },
        {&rr});
  }
  L.set_output(n, 0, r);
}
void lower_sum(Lowerer& L, int n) {
  simple_reduce(L, n, ReduceOp::Sum, false);
}
void lower_mean(Lowerer& L, int n) {
  simple_reduce(L, n, ReduceOp::Sum, true);
}
void lower_amax(Lowerer& L, int n) {
  simple_reduce(L, n, ReduceOp::Max, false);
}
void lower_any(Lowerer& L, int n) {
  simple_reduce(L, n, ReduceOp::Any, false);
}
// Without a dim, argmax reduces over every dim: the row-major order of the reduction variables
// makes the position the flat index, as PyTorch defines it.
void lower_argmax(Lowerer& L, int n) {
  simple_reduce(L, n, ReduceOp::ArgMax, false);
}

/// softmax / log_softmax over `dim`: max, sum of exp, then the pointwise result.
void softmax_like(Lowerer& L, int n, bool log) {
  LVal& x0 = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  int64_t d = wrap(L, n, L.node(n).arg("dim").i, int64_t(x0.sizes.size()));
  std::vector<int64_t> dims = x0.sizes.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{d};
  LVal x = L.pointwise(n, t, x0.sizes, [&](auto& idx) { return v_cast(L.at(x0, idx), t); }, {&x0});
  LVal mx =
      L.reduce(n, ReduceOp::Max, t, x.sizes, dims, [&](auto& idx) { return L.at(x, idx); }, {&x});
  auto shifted = [&](auto& idx) { return v_binary(VOp::Sub, L.at(x, idx), L.bcast(mx, idx)); };
  LVal sum = L.reduce(n, ReduceOp::Sum, t, x.sizes, dims,
                      [&](auto& idx) { return v_unary(VOp::Exp, shifted(idx)); }, {&x});
  L.set_output(
      n, 0,
      L.pointwise(n, t, x.sizes,
                  [&](auto& idx) {
                    if (log)
                      return v_binary(VOp::Sub, shifted(idx), v_unary(VOp::Log, L.bcast(sum, idx)));
                    return v_binary(VOp::Div, v_unary(VOp::Exp, shifted(idx)), L.bcast(sum, idx));
                  },
                  {&x}));
}
void lower_softmax(Lowerer& L, int n) {
  softmax_like(L, n, false);
}
void lower_log_softmax(Lowerer& L, int n) {
  softmax_like(L, n, true);
}

/// Layer norm over the trailing dims: two-pass mean and variance, then the affine epilogue.
void layer_norm(Lowerer& L, int n, bool native) {
  LVal& x0 = L.input(n, "input");
  const Node& nd = L.node(n);
  auto norm = nd.arg("normalized_shape").ints;
  double eps = nd.arg("eps").scalar();
  int64_t rank = int64_t(x0.sizes.size());
  if (int64_t(norm.size()) > rank) L.fail(n, "normalized_shape has more dims than the input");
  std::vector<int64_t> dims;
  int64_t cnt = 1;
  for (int64_t i = rank - int64_t(norm.size()); i < rank; ++i) {
    if (x0.sizes[i] != norm[i - (rank - int64_t(norm.size()))])
      L.fail(n, "normalized_shape does not match the input's trailing dims");
    dims.push_back(i);
    cnt *= x0.sizes[i];
  }
  const LVal* w = L.opt_input(n, "weight");
  const LVal* b = L.opt_input(n, "bias");
  DType t = x0.dtype == DType::F64 ? DType::F64 : DType::F32;
  LVal x = L.pointwise(n, t, x0.sizes, [&](auto& idx) { return v_cast(L.at(x0, idx), t); }, {&x0});
  LVal s1 =
      L.reduce(n, ReduceOp::Sum, t, x.sizes, dims, [&](auto& idx) { return L.at(x, idx); }, {&x});
  LVal mean = L.pointwise(
      n, t, s1.sizes,
      [&](auto& idx) { return v_binary(VOp::Div, L.at(s1, idx), v_const(double(cnt), t)); }, {&s1});
  LVal s2 = L.reduce(n, ReduceOp::Sum, t, x.sizes, dims,
                     [&](auto& idx) {
                       VPtr c = v_binary(VOp::Sub, L.at(x, idx), L.bcast(mean, idx));
                       return v_binary(VOp::Mul, c, c);
                     },
                     {&x, &mean});
  LVal rstd = L.pointwise(n, t, s2.sizes,
                          [&](auto& idx) {
                            return v_unary(VOp::Rsqrt, v_binary(VOp::Add,
                                                                v_binary(VOp::Div, L.at(s2, idx),
                                                                         v_const(double(cnt), t)),
                                                                v_const(eps, t)));
                          },
                          {&s2});
  DType ot = L.out_meta(n).dtype;
  L.set_output(n, 0,
               L.pointwise(n, ot, x.sizes,
                           [&](auto& idx) {
                             VPtr y = v_binary(VOp::Mul,
                                               v_binary(VOp::Sub, L.at(x, idx), L.bcast(mean, idx)),
                                               L.bcast(rstd, idx));
                             if (w) y = v_binary(VOp::Mul, y, v_cast(L.bcast(*w, idx), t));
                             if (b) y = v_binary(VOp::Add, y, v_cast(L.bcast(*b, idx), t));
                             return v_cast(y, ot);
                           },
                           {&x, &mean, &rstd, w, b}));
  if (native) {
    L.set_output(n, 1, mean);
    L.set_output(n, 2, rstd);
  }
}
void lower_native_layer_norm(Lowerer& L, int n) {
  layer_norm(L, n, true);
}
void lower_layer_norm(Lowerer& L, int n) {
  layer_norm(L, n, false);
}

void batch_norm_eval(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "input");
  const LVal* w = L.opt_input(n, "weight");
  const LVal* b = L.opt_input(n, "bias");
  const LVal* rm = L.opt_input(n, "running_mean");
  const LVal* rv = L.opt_input(n, "running_var");
  if (!rm || !rv || x.sizes.size() < 2) L.fail(n, "eval batch norm needs running statistics");
  double eps = nd.arg("eps").scalar();
  const TensorMeta& m = L.out_meta(n);
  DType t = m.dtype;
  auto ch = [&](const LVal* v, const std::vector<IndexExpr>& idx) {
    return v_cast(L.at(*v, {idx[1]}), t);
  };
  L.set_output(
      n, 0,
      L.pointwise(n, t, m.sizes,
                  [&](auto& idx) {
                    VPtr y = v_binary(
                        VOp::Mul, v_binary(VOp::Sub, v_cast(L.at(x, idx), t), ch(rm, idx)),
                        v_unary(VOp::Rsqrt, v_binary(VOp::Add, ch(rv, idx), v_const(eps, t))));
                    if (w) y = v_binary(VOp::Mul, y, ch(w, idx));
                    if (b) y = v_binary(VOp::Add, y, ch(b, idx));
                    return y;
                  },
                  {&x, w, b, rm, rv}));
  for (size_t i = 1; i < nd.outputs.size(); ++i) {
    const TensorMeta& mi = L.out_meta(n, int(i));
    L.set_output(
        n, int(i),
        L.pointwise(n, mi.dtype, mi.sizes, [&](auto&) { return v_const(0, mi.dtype); }, {}));
  }
}
void lower_native_batch_norm_no_training(Lowerer& L, int n) {
  batch_norm_eval(L, n);
}
void lower_batch_norm(Lowerer& L, int n) {
  if (L.node(n).arg("training").b) {
    L.fallback(n, "training-mode batch_norm");
    return;
  }
  batch_norm_eval(L, n);
}

IndexExpr clamped(const IndexExpr& e, int64_t extent);
VPtr index_lt(const IndexExpr& e, int64_t bound);
VPtr index_ge(const IndexExpr& e, int64_t bound);

void lower_max_pool2d(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  bool with_indices = nd.outputs.size() > 1;
  LVal& x = L.input(n, "self");
  auto k = nd.arg("kernel_size").ints, s = nd.arg("stride").ints, p = nd.arg("padding").ints,
       dl = nd.arg("dilation").ints;
  if (s.empty()) s = k;
  if (k.size() == 1) k = {k[0], k[0]};
  if (s.size() == 1) s = {s[0], s[0]};
  if (p.size() == 1) p = {p[0], p[0]};
  if (dl.size() == 1) dl = {dl[0], dl[0]};
  if (k.size() != 2 || s.size() != 2 || p.size() != 2 || dl.size() != 2 || x.sizes.size() != 4) {
    L.fallback(n, "max_pool2d arguments not lowered");
    return;
  }
  const TensorMeta& m = L.out_meta(n);
  if (m.sizes.size() != 4) {
    L.fallback(n, "max_pool2d of a non-4-D output");
    return;
  }
  // A max reduction over the window. Window positions outside the input (padding, and the last
  // window of ceil mode) read -inf, so they never win: PyTorch keeps every window's start
  // inside the input or its left padding.
  std::vector<int64_t> in_sizes = {m.sizes[0], m.sizes[1], m.sizes[2], m.sizes[3], k[0], k[1]};
  const double lowest = is_floating(m.dtype) ? -INFINITY : double(std::numeric_limits<int64_t>::min());
  auto window = [&](auto& idx) {
    IndexExpr h = idx[2] * s[0] + idx[4] * dl[0] - IndexExpr(p[0]);
    IndexExpr w = idx[3] * s[1] + idx[5] * dl[1] - IndexExpr(p[1]);
    IndexExpr hc = clamped(h, x.sizes[2]), wc = clamped(w, x.sizes[3]);
    VPtr v = L.at(x, {idx[0], idx[1], hc, wc});
    VPtr inside;
    if (!(hc == h)) inside = v_binary(VOp::And, index_ge(h, 0), index_lt(h, x.sizes[2]));
    if (!(wc == w)) {
      VPtr ok = v_binary(VOp::And, index_ge(w, 0), index_lt(w, x.sizes[3]));
      inside = inside ? v_binary(VOp::And, inside, ok) : ok;
    }
    return inside ? v_where(inside, v, v_const(lowest, v->dtype)) : v;
  };
  LVal r = L.reduce(n, ReduceOp::Max, m.dtype, in_sizes, {4, 5}, window, {&x});
  L.set_output(n, 0, L.reshape(r, m.sizes));
  if (!with_indices) return;
  // Indices: the window position of the max (first on ties, NaN wins), as a flat h*W + w.
  LVal pos = L.reduce(n, ReduceOp::ArgMax, m.dtype, in_sizes, {4, 5}, window, {&x});
  const TensorMeta& mi = L.out_meta(n, 1);
  int64_t W = x.sizes[3];
  LVal flat = L.reshape(pos, m.sizes);
  L.set_output(n, 1,
               L.pointwise(n, DType::I64, m.sizes,
                           [&](auto& idx) {
                             auto c = [](int64_t v) { return v_const(double(v), DType::I64); };
                             VPtr a = L.at(flat, idx);
                             VPtr kh = v_binary(VOp::FloorDivide, a, c(k[1]));
                             VPtr kw = v_binary(VOp::Sub, a, v_binary(VOp::Mul, kh, c(k[1])));
                             VPtr ih = v_binary(VOp::Add,
                                                v_index(idx[2] * s[0] - IndexExpr(p[0]), DType::I64),
                                                v_binary(VOp::Mul, kh, c(dl[0])));
                             VPtr iw = v_binary(VOp::Add,
                                                v_index(idx[3] * s[1] - IndexExpr(p[1]), DType::I64),
                                                v_binary(VOp::Mul, kw, c(dl[1])));
                             return v_cast(v_binary(VOp::Add, v_binary(VOp::Mul, ih, c(W)), iw),
                                           mi.dtype);
                           },
                           {&flat}));
}

// ---- indexing

void lower_embedding(Lowerer& L, int n) {
  LVal& w = L.input(n, "weight");
  LVal& ids = L.input(n, "indices");
  const TensorMeta& m = L.out_meta(n);
  if (w.sizes.size() != 2) L.fail(n, "embedding weight must be 2-D");
  L.set_output(n, 0,
               L.pointwise(n, w.dtype, m.sizes,
                           [&](auto& idx) {
                             std::vector<IndexExpr> id_idx(idx.begin(), idx.end() - 1);
                             IndexExpr row = IndexExpr::indirect(
                                 v_cast(L.at(ids, id_idx), DType::I64), w.sizes[0]);
                             return L.at(w, {row, idx.back()});
                           },
                           {&w, &ids}));
}

void lower_gather(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  LVal& ix = L.input(n, "index");
  const TensorMeta& m = L.out_meta(n);
  int64_t d = wrap(L, n, L.node(n).arg("dim").i, int64_t(x.sizes.size()));
  if (ix.sizes.size() != x.sizes.size()) L.fail(n, "gather index rank differs from the input");
  L.set_output(n, 0,
               L.pointwise(n, x.dtype, m.sizes,
                           [&](auto& idx) {
                             std::vector<IndexExpr> in = idx;
                             in[d] =
                                 IndexExpr::indirect(v_cast(L.at(ix, idx), DType::I64), x.sizes[d]);
                             return L.at(x, in);
                           },
                           {&x, &ix}));
}

void lower_index_select(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  LVal& ix = L.input(n, "index");
  const TensorMeta& m = L.out_meta(n);
  int64_t d = wrap(L, n, L.node(n).arg("dim").i, int64_t(x.sizes.size()));
  L.set_output(
      n, 0,
      L.pointwise(n, x.dtype, m.sizes,
                  [&](auto& idx) {
                    std::vector<IndexExpr> in = idx;
                    in[d] = IndexExpr::indirect(
                        v_cast(L.at(ix, {ix.sizes.empty() ? IndexExpr(0) : idx[d]}), DType::I64),
                        x.sizes[d]);
                    if (ix.sizes.empty())
                      in[d] = IndexExpr::indirect(v_cast(L.at(ix, {}), DType::I64), x.sizes[d]);
                    return L.at(x, in);
                  },
                  {&x, &ix}));
}

// ---- indexing with bounds: cat, padding, slice_scatter

/// `e` when it always lies in [0, extent); otherwise the same index clamped into that range
/// (used for loads on the untaken side of a select, which must stay inside the buffer).
IndexExpr clamped(const IndexExpr& e, int64_t extent) {
  auto [lo, hi] = e.range();
  if (lo >= 0 && hi < extent) return e;
  return IndexExpr::indirect(v_index(e, DType::I64), extent);
}

VPtr index_lt(const IndexExpr& e, int64_t bound) {
  return v_binary(VOp::Lt, v_index(e, DType::I64), v_const(double(bound), DType::I64));
}
VPtr index_ge(const IndexExpr& e, int64_t bound) {
  return v_binary(VOp::Ge, v_index(e, DType::I64), v_const(double(bound), DType::I64));
}

void lower_cat(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  std::vector<LVal*> parts;
  for (ValueId v : nd.arg("tensors").tensors) {
    LVal& t = L.val(n, v);
    // Legacy empty 1-D tensors take no part, as in PyTorch.
    if (t.sizes.size() == 1 && t.sizes[0] == 0 && m.sizes.size() != 1) continue;
    parts.push_back(&t);
  }
  if (parts.empty()) L.fail(n, "cat of no tensors");
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(m.sizes.size()));
  std::vector<int64_t> offsets;
  int64_t off = 0;
  for (LVal* t : parts) {
    if (t->sizes.size() != m.sizes.size()) L.fail(n, "cat inputs differ in rank");
    offsets.push_back(off);
    off += t->sizes[d];
  }
  if (off != m.sizes[d]) L.fail(n, "cat sizes do not add up to the output");
  std::vector<const LVal*> ins(parts.begin(), parts.end());
  L.set_output(n, 0,
               L.pointwise(
                   n, m.dtype, m.sizes,
                   [&](auto& idx) {
                     VPtr v;
                     for (size_t k = parts.size(); k-- > 0;) {
                       if (parts[k]->sizes[d] == 0) continue;
                       std::vector<IndexExpr> in = idx;
                       in[d] = clamped(idx[d] - IndexExpr(offsets[k]), parts[k]->sizes[d]);
                       VPtr here = v_cast(L.at(*parts[k], in), m.dtype);
                       v = v ? v_where(index_lt(idx[d], offsets[k] + parts[k]->sizes[d]), here, v)
                             : here;
                     }
                     return v ? v : v_const(0, m.dtype);
                   },
                   ins));
}

void lower_constant_pad_nd(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  auto pad = nd.arg("pad").ints;
  double value = nd.arg("value").scalar();
  size_t r = x.sizes.size();
  if (pad.size() % 2 != 0 || pad.size() / 2 > r || m.sizes.size() != r)
    L.fail(n, "pad needs pairs of sizes for at most every dim");
  std::vector<int64_t> lo(r, 0);
  for (size_t j = 0; j < pad.size() / 2; ++j) lo[r - 1 - j] = pad[2 * j];
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             std::vector<IndexExpr> in(r);
                             VPtr inside;
                             for (size_t d = 0; d < r; ++d) {
                               IndexExpr e = idx[d] - IndexExpr(lo[d]);
                               in[d] = clamped(e, x.sizes[d]);
                               if (in[d] == e) continue;
                               VPtr ok =
                                   v_binary(VOp::And, index_ge(e, 0), index_lt(e, x.sizes[d]));
                               inside = inside ? v_binary(VOp::And, inside, ok) : ok;
                             }
                             if (numel_of(x.sizes) == 0) return v_const(value, m.dtype);
                             VPtr v = v_cast(L.at(x, in), m.dtype);
                             return inside ? v_where(inside, v, v_const(value, m.dtype)) : v;
                           },
                           {&x}));
}

void lower_slice_scatter(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& self = L.input(n, "self");
  LVal& src = L.input(n, "src");
  const TensorMeta& m = L.out_meta(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(self.sizes.size()));
  int64_t size = self.sizes[d];
  int64_t start = nd.arg("start").is_none() ? 0 : nd.arg("start").i;
  int64_t end = nd.arg("end").is_none() ? size : nd.arg("end").i;
  int64_t step = nd.arg("step").i;
  if (step <= 0) L.fail(n, "slice_scatter step must be positive");
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  if (src.sizes.size() != self.sizes.size() || src.sizes[d] != (end - start + step - 1) / step)
    L.fail(n, "slice_scatter source does not fit the slice");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr base = v_cast(L.at(self, idx), m.dtype);
                             if (src.sizes[d] == 0) return base;
                             IndexExpr rel = idx[d] - IndexExpr(start);
                             std::vector<IndexExpr> in = idx;
                             in[d] = clamped(rel.floordiv(step), src.sizes[d]);
                             VPtr hit = v_binary(VOp::And, index_ge(rel, 0), index_lt(idx[d], end));
                             if (step != 1)
                               hit = v_binary(VOp::And, hit,
                                              v_binary(VOp::Eq, v_index(rel.mod(step), DType::I64),
                                                       v_const(0, DType::I64)));
                             return v_where(hit, v_cast(L.at(src, in), m.dtype), base);
                           },
                           {&self, &src}));
}

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
      rm.dtype != xm.dtype || L.out_meta(add).dtype != xm.dtype || L.out_meta(add).sizes != xm.sizes)
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
    if (t != "aten.view.default" && t != "aten._unsafe_view.default" &&
        t != "aten.reshape.default")
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
    L.p_.log.push_back("epilogue: " + L.node(last).name + " = " + gemm_epilogue_name(epi) +
                       " of " + nd.name + " (cuBLASLt)");
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
  if (x.sizes.empty() || w.sizes.size() != 2 || !gemm_dtype_ok(L, x.dtype) ||
      x.dtype != w.dtype) {
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
  bool conv2d = !transposed && x.sizes.size() == 4 && w.sizes.size() == 4 &&
                m.sizes.size() == 4 && st.size() == 2 && pd.size() == 2 && dl.size() == 2 &&
                x.dtype == w.dtype && groups >= 1 && w.sizes[1] * groups == x.sizes[1] &&
                w.sizes[0] % groups == 0;
  const LowerOptions& lo = L.options();
  bool dnn_dtype = x.dtype == DType::F32 || x.dtype == DType::F16 || x.dtype == DType::BF16;
  if (lo.cuda && conv2d && dnn_dtype && m.dtype == x.dtype && (!bias || bias->dtype == x.dtype)) {
    if (lo.cudnn) {
      ExternCall c;
      c.kind = ExternCall::Kind::Conv;
      c.op = "convolution";
      c.operands = {L.contiguous_operand(n, x), L.contiguous_operand(n, w)};
      if (bias) {
        LVal bv = *bias;
        c.operands.push_back(L.contiguous_operand(n, bv));
      }
      c.stride = {st[0], st[1]};
      c.padding = {pd[0], pd[1]};
      c.dilation = {dl[0], dl[1]};
      c.groups = groups;
      int id = L.extern_buffer(n, std::move(c), m.dtype, m.sizes);
      L.set_output(n, 0, L.load_of(id, {n}));
      return;
    }
    L.p_.log.push_back("im2col: node '" + nd.name + "' (" + nd.target +
                       "): cuDNN not used: " + lo.no_cudnn_reason +
                       "; im2col + cuBLASLt instead");
  }
  if (!conv2d || groups != 1 || !gemm_dtype_ok(L, x.dtype)) {
    L.fallback(n, "convolution other than 2-D and ungrouped, or of a dtype BLAS lacks");
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

// One row per op. Ops absent here become fallback extern calls.
const OpTable<LowerFn>::Row kRules[] = {
    {OpId::_log_softmax, lower_log_softmax},
    {OpId::_native_batch_norm_legit_no_training, lower_native_batch_norm_no_training},
    {OpId::_softmax, lower_softmax},
    {OpId::_to_copy, lower_copy_like},
    {OpId::abs, lower_abs},
    {OpId::add_Scalar, lower_add},
    {OpId::add_Tensor, lower_add},
    {OpId::addmm, lower_addmm},
    {OpId::alias, lower_copy_like},
    {OpId::amax, lower_amax},
    {OpId::any_dim, lower_any},
    {OpId::arange, lower_arange},
    {OpId::arange_start, lower_arange},
    {OpId::arange_start_step, lower_arange},
    {OpId::argmax, lower_argmax},
    {OpId::batch_norm, lower_batch_norm},
    {OpId::bmm, lower_mm},
    {OpId::cat, lower_cat},
    {OpId::clamp, lower_clamp},
    {OpId::clone, lower_copy_like},
    {OpId::contiguous, lower_copy_like},
    {OpId::constant_pad_nd, lower_constant_pad_nd},
    {OpId::conv2d, lower_convolution},
    {OpId::convolution, lower_convolution},
    {OpId::copy, lower_copy},
    {OpId::cos, lower_cos},
    {OpId::div_Scalar, lower_div},
    {OpId::div_Tensor, lower_div},
    {OpId::embedding, lower_embedding},
    {OpId::eq_Scalar, lower_eq},
    {OpId::eq_Tensor, lower_eq},
    {OpId::erf, lower_erf},
    {OpId::exp, lower_exp},
    {OpId::expand, lower_expand},
    {OpId::flatten_using_ints, lower_reshape},
    {OpId::fmod_Scalar, lower_fmod},
    // Issue 18 op families (integer division, rsub, bitwise, logical).
    {OpId::bitwise_and_Scalar, lower_bitwise_and},
    {OpId::bitwise_and_Tensor, lower_bitwise_and},
    {OpId::bitwise_left_shift_Tensor, lower_shl},
    {OpId::bitwise_left_shift_Tensor_Scalar, lower_shl},
    {OpId::bitwise_not, lower_bitwise_not},
    {OpId::bitwise_or_Scalar, lower_bitwise_or},
    {OpId::bitwise_or_Tensor, lower_bitwise_or},
    {OpId::bitwise_right_shift_Tensor, lower_shr},
    {OpId::bitwise_right_shift_Tensor_Scalar, lower_shr},
    {OpId::bitwise_xor_Scalar, lower_bitwise_xor},
    {OpId::bitwise_xor_Tensor, lower_bitwise_xor},
    {OpId::div_Scalar_mode, lower_div_mode},
    {OpId::div_Tensor_mode, lower_div_mode},
    {OpId::floor_divide, lower_floor_divide},
    {OpId::floor_divide_Scalar, lower_floor_divide},
    {OpId::fmod_Tensor, lower_fmod},
    {OpId::logical_or, lower_logical_or},
    {OpId::logical_xor, lower_logical_xor},
    {OpId::remainder_Scalar, lower_remainder},
    {OpId::remainder_Tensor, lower_remainder},
    {OpId::rsub_Scalar, lower_rsub},
    {OpId::rsub_Tensor, lower_rsub},
    {OpId::sub_Scalar, lower_sub},
    {OpId::acos, lower_acos},
    {OpId::acosh, lower_acosh},
    {OpId::asin, lower_asin},
    {OpId::asinh, lower_asinh},
    {OpId::atan, lower_atan},
    {OpId::atan2, lower_atan2},
    {OpId::atanh, lower_atanh},
    {OpId::ceil, lower_ceil},
    {OpId::cosh, lower_cosh},
    {OpId::expm1, lower_expm1},
    {OpId::floor, lower_floor},
    {OpId::isinf, lower_isinf},
    {OpId::isnan, lower_isnan},
    {OpId::log10, lower_log10},
    {OpId::log1p, lower_log1p},
    {OpId::log2, lower_log2},
    {OpId::round, lower_round},
    {OpId::round_decimals, lower_round_decimals},
    {OpId::sinh, lower_sinh},
    {OpId::tan, lower_tan},
    {OpId::trunc, lower_trunc},
    {OpId::clamp_Tensor, lower_clamp_tensor},
    {OpId::pow_Scalar, lower_pow_scalar},
    // End of the issue-18 rows.
    {OpId::full, lower_full},
    {OpId::full_like, lower_full},
    {OpId::gather, lower_gather},
    {OpId::ge_Scalar, lower_ge},
    {OpId::ge_Tensor, lower_ge},
    {OpId::gelu, lower_gelu},
    {OpId::gt_Scalar, lower_gt},
    {OpId::gt_Tensor, lower_gt},
    {OpId::hardsigmoid, lower_hardsigmoid},
    {OpId::hardswish, lower_hardswish},
    {OpId::index_select, lower_index_select},
    {OpId::layer_norm, lower_layer_norm},
    {OpId::le_Scalar, lower_le},
    {OpId::le_Tensor, lower_le},
    {OpId::lift_fresh_copy, lower_copy_like},
    {OpId::linear, lower_linear},
    {OpId::log, lower_log},
    {OpId::log_softmax_int, lower_log_softmax},
    {OpId::logical_and, lower_logical_and},
    {OpId::logical_not, lower_logical_not},
    {OpId::lt_Scalar, lower_lt},
    {OpId::lt_Tensor, lower_lt},
    {OpId::masked_fill_Scalar, lower_masked_fill},
    {OpId::max_pool2d, lower_max_pool2d},
    {OpId::max_pool2d_with_indices, lower_max_pool2d},
    {OpId::maximum, lower_maximum},
    {OpId::mean, lower_mean},
    {OpId::mean_dim, lower_mean},
    {OpId::min_other, lower_minimum},
    {OpId::minimum, lower_minimum},
    {OpId::mm, lower_mm},
    {OpId::mul_Scalar, lower_mul},
    {OpId::mul_Tensor, lower_mul},
    {OpId::native_layer_norm, lower_native_layer_norm},
    {OpId::ne_Scalar, lower_ne},
    {OpId::ne_Tensor, lower_ne},
    {OpId::neg, lower_neg},
    {OpId::new_zeros, lower_zeros},
    {OpId::permute, lower_permute},
    {OpId::pow_Tensor_Scalar, lower_pow},
    {OpId::pow_Tensor_Tensor, lower_pow},
    {OpId::reciprocal, lower_reciprocal},
    {OpId::relu, lower_relu},
    {OpId::reshape, lower_reshape},
    {OpId::rsqrt, lower_rsqrt},
    {OpId::scalar_tensor, lower_scalar_tensor},
    {OpId::select_int, lower_select},
    {OpId::sigmoid, lower_sigmoid},
    {OpId::sign, lower_sign},
    {OpId::silu, lower_silu},
    {OpId::sin, lower_sin},
    {OpId::slice_Tensor, lower_slice},
    {OpId::slice_scatter, lower_slice_scatter},
    {OpId::softmax_int, lower_softmax},
    {OpId::split_Tensor, lower_split},
    {OpId::split_with_sizes, lower_split},
    {OpId::sqrt, lower_sqrt},
    {OpId::squeeze_dim, lower_same_order_view},
    {OpId::squeeze_dims, lower_same_order_view},
    {OpId::sub_Tensor, lower_sub},
    {OpId::sum, lower_sum},
    {OpId::sum_dim_IntList, lower_sum},
    {OpId::tanh, lower_tanh},
    {OpId::to_dtype, lower_copy_like},
    {OpId::transpose_int, lower_transpose},
    {OpId::unflatten_int, lower_reshape},
    {OpId::unsqueeze, lower_same_order_view},
    {OpId::view, lower_reshape},
    {OpId::where_ScalarOther, lower_where},
    {OpId::where_self, lower_where},
    {OpId::zeros, lower_zeros},
};

const OpTable<LowerFn>& rule_table() {
  static const OpTable<LowerFn> table(kRules);
  return table;
}

LowerFn find_rule(const std::string& target) { return rule_table().find(target); }

} // namespace

const OpLayer& lowering_layer() { return rule_table(); }

void Lowerer::fallback(int n, const std::string& why) {
  const Node& nd = node(n);
  auto g1 = std::make_shared<Graph>();
  g1->source = g_.source;
  g1->name = nd.name;
  ExternCall c;
  c.kind = ExternCall::Kind::Fallback;
  c.op = nd.target;
  c.reason = why;
  std::map<ValueId, ValueId> remap;
  Node copy = nd;
  auto map_value = [&](ValueId v) -> ValueId {
    if (v == kNoValue) return v;
    auto it = remap.find(v);
    if (it != remap.end()) return it->second;
    LVal& lv = val(n, v);
    ExternOperand op = operand(lv);
    c.operands.push_back(op);
    TensorMeta meta = g_.values[v].meta;
    meta.sizes = op.sizes;
    meta.strides = contiguous_strides(op.sizes);
    meta.storage_offset = 0;
    ValueId nv = g1->add_value(g_.values[v].name, meta);
    GraphInput gi;
    gi.value = nv;
    gi.kind = InputKind::UserInput;
    gi.fqn = g_.values[v].name;
    g1->inputs.push_back(gi);
    remap[v] = nv;
    return nv;
  };
  for (Arg& a : copy.args) {
    if (a.kind == Arg::Kind::Tensor) a.tensor = map_value(a.tensor);
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId& v : a.tensors) v = map_value(v);
  }
  copy.outputs.clear();
  for (ValueId o : nd.outputs) {
    ValueId nv = g1->add_value(g_.values[o].name, g_.values[o].meta);
    g1->values[nv].producer = 0;
    g1->values[nv].output_index = int32_t(copy.outputs.size());
    copy.outputs.push_back(nv);
    g1->outputs.push_back(nv);
  }
  g1->nodes.push_back(copy);
  c.graph = g1;
  p_.log.push_back("fallback: node '" + nd.name + "' (" + nd.target + "): " + why);
  const TensorMeta& m0 = out_meta(n, 0);
  int owner = extern_buffer(n, c, m0.dtype, m0.sizes);
  vals_[nd.outputs[0]] = load_of(owner, {n});
  for (size_t i = 1; i < nd.outputs.size(); ++i) {
    const TensorMeta& mi = out_meta(n, int(i));
    Buffer b;
    b.kind = Buffer::Kind::ExternOutput;
    b.dtype = mi.dtype;
    b.sizes = mi.sizes;
    b.extern_owner = owner;
    set_origins(b, {n});
    int id = add_buffer(std::move(b));
    p_.buffers[owner].call.outputs.push_back(id);
    vals_[nd.outputs[i]] = load_of(id, {n});
  }
}

void Lowerer::inject_bug(int n) {
  const Node& nd = node(n);
  p_.log.push_back("inject: " + opts_.inject_kind + " bug in node '" + nd.name + "'");
  if (opts_.inject_kind != "accuracy") {
    p_.injected[nd.name] = opts_.inject_kind;
    return;
  }
  for (ValueId o : nd.outputs) {
    LVal v = vals_[o];
    if (v.dtype == DType::Bool) continue;
    vals_[o] = pointwise(
        n, v.dtype, v.sizes,
        [&](auto& idx) { return v_binary(VOp::Add, at(v, idx), v_const(1, v.dtype)); }, {&v});
  }
}

LoopProgram Lowerer::run() {
  int user = 0;
  for (const GraphInput& in : g_.inputs) {
    const Value& v = g_.values[in.value];
    Buffer b;
    b.kind = Buffer::Kind::Input;
    b.dtype = v.meta.dtype;
    b.sizes = v.meta.sizes;
    if (in.kind == InputKind::UserInput)
      b.input_index = user++;
    else
      b.weight = in.fqn;
    int id = add_buffer(std::move(b));
    p_.buffers[id].name = v.name;
    vals_[in.value] = load_of(id, {});
  }
  for (int n = 0; n < int(g_.nodes.size()); ++n) {
    const Node& nd = g_.nodes[n];
    if (!nd.schema) throw Error(g_.source, "op has no schema", nd.name, nd.target);
    if (nd.outputs.empty()) continue;
    LowerFn fn = find_rule(nd.target);
    if (auto ab = absorbed.find(n); ab != absorbed.end())
      vals_[nd.outputs[0]] = val(n, ab->second);
    else if (fn)
      fn(*this, n);
    else
      fallback(n, find_custom_op(nd.target) ? "custom op: extern call to its plugin's kernel"
                                            : "no lowering");
    if (!opts_.inject_op.empty() && op_base_name(nd.target) == opts_.inject_op) inject_bug(n);
    for (ValueId o : nd.outputs) {
      LVal& v = vals_[o];
      if (!v.body) fail(n, "output was not lowered");
      if (v.buffer < 0 && uses_[o] >= 2 && expr_size(v.body) > opts_.inline_limit) {
        p_.log.push_back("realize: " + g_.values[o].name + " (" + std::to_string(uses_[o]) +
                         " users, " + std::to_string(expr_size(v.body)) + " nodes)");
        realize(v);
      }
    }
  }
  for (ValueId o : g_.outputs) {
    if (o < 0 || size_t(o) >= vals_.size() || !vals_[o].body)
      throw Error(g_.source, "graph output is not computed");
    LVal& v = vals_[o];
    ExternOperand op = operand(v);
    OutputView ov;
    ov.buffer = op.buffer;
    ov.meta.dtype = v.dtype;
    ov.meta.sizes = op.sizes;
    ov.meta.strides = op.strides;
    ov.meta.storage_offset = op.offset;
    p_.outputs.push_back(ov);
  }
  return std::move(p_);
}

LoopProgram lower(const Graph& g, const LowerOptions& opts) {
  Lowerer L(g, opts);
  return L.run();
}

} // namespace fxc
