// The lowering engine's interface to its rules (passes/lower.cpp runs it): a lowered value
// (LVal) and the Lowerer, which holds the loop program being built, reads a node's arguments and
// inputs, builds pointwise values and buffers, materializes and memoizes them. The rules, one
// per op by family in passes/lower/<family>.cpp, call it; the driver loop, the fallback to extern
// calls and the rule lookup stay in passes/lower.cpp.
#pragma once

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

namespace fxc::lower_detail {

/// A lowered value: element `vars` of a tensor of `sizes` is `body`. Realized values (graph
/// inputs, buffers) have body = load(buffer, contiguous offset).
struct LVal {
  int id = -1; ///< unique per lowering (memoization key)
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  VPtr body;
  int buffer = -1;
  std::set<int> origins; ///< graph node indices computed in `body`
  /// A 4-D or 5-D value best stored channels-last (NHWC, NDHWC): it reads a channels-last buffer
  /// (a convolution's result, LowerOptions::conv_layout). realize() then stores it so.
  bool channels_last = false;
  /// The value is the NCHW view of channels-last buffer `nhwc_buffer` ([N, H, W, C] or
  /// [N, D, H, W, C]), or -1.
  int nhwc_buffer = -1;
  /// Whether `body` is a load of a stored buffer (plain or channels-last).
  bool realized() const { return buffer >= 0 || nhwc_buffer >= 0; }
};

/// Whether values of this rank can be stored channels-last: [N, C, H, W] and [N, C, D, H, W].
inline bool channels_last_rank(size_t rank) {
  return rank == 4 || rank == 5;
}

/// The logical dim each dim of a channels-last buffer holds: {0, 2, .., rank - 1, 1}.
inline std::vector<size_t> channels_last_order(size_t rank) {
  std::vector<size_t> order = {0};
  for (size_t d = 2; d < rank; ++d) order.push_back(d);
  order.push_back(1);
  return order;
}

/// `v` ([N, C, ...]) in a channels-last buffer's dim order ([N, ..., C]).
inline std::vector<int64_t> to_channels_last(const std::vector<int64_t>& v) {
  std::vector<int64_t> out;
  for (size_t d : channels_last_order(v.size())) out.push_back(v[d]);
  return out;
}

/// Strides of `sizes` [N, C, H, W] (or [N, C, D, H, W]) laid out channels-last (NHWC, NDHWC); a
/// dim of size 1 may have any.
inline bool is_channels_last_layout(const std::vector<int64_t>& sizes,
                                    const std::vector<int64_t>& strides) {
  return channels_last_rank(sizes.size()) && strides.size() == sizes.size() &&
         is_contiguous_layout(to_channels_last(sizes), to_channels_last(strides));
}

inline std::vector<IndexExpr> make_vars(const std::vector<int64_t>& sizes, int base = 0) {
  std::vector<IndexExpr> v;
  for (size_t i = 0; i < sizes.size(); ++i) v.push_back(IndexExpr::var(base + int(i), sizes[i]));
  return v;
}

inline int64_t numel_of(const std::vector<int64_t>& s) {
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
    // CUDA: cuDNN's 2-D convolutions; the CPU: oneDNN's 2-D and 3-D ones (inference).
    channels_last_ = (o.cuda ? o.cudnn : o.onednn && !o.train) && o.conv_layout != ConvLayout::Nchw;
    if (channels_last_ && o.cuda && o.conv_layout == ConvLayout::Auto)
      for (const Node& nd : g.nodes) {
        int gi = nd.schema ? nd.schema->index_of("groups") : -1;
        bool conv = nd.target == "aten.convolution.default" || nd.target == "aten.conv2d.default";
        if (conv && gi >= 0 && size_t(gi) < nd.args.size() &&
            nd.args[size_t(gi)].kind == Arg::Kind::Int && nd.args[size_t(gi)].i > 1) {
          channels_last_ = false;
          p_.log.push_back("conv layout: NCHW (node '" + nd.name +
                           "' is a grouped convolution, slow channels-last on cuDNN)");
          break;
        }
      }
  }

  LoopProgram run();

  // ---- helpers used by the lowering rules
  const Graph& g() const { return g_; }
  const LowerOptions& options() const { return opts_; }
  /// Whether convolutions run channels-last (LowerOptions::conv_layout, decided for the graph).
  bool channels_last() const { return channels_last_; }
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
    bool cl = false;
    for (auto* in : inputs) cl |= in && in->channels_last && in->sizes.size() == sizes.size();
    LVal r = make_val(t, std::move(sizes), body, o);
    r.channels_last = cl && channels_last_rank(r.sizes.size());
    return r;
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
    if (v.realized()) r.origins.clear();
    // [N, C, H, W, 1, ...] of a channels-last reduction (pooling) to [N, C, H, W].
    r.channels_last = v.channels_last && channels_last_rank(sizes.size()) &&
                      v.sizes.size() >= sizes.size() &&
                      std::equal(sizes.begin(), sizes.end(), v.sizes.begin()) &&
                      numel_of(sizes) == numel_of(v.sizes);
    return r;
  }
  /// A view: element idx of the result is element map(idx) of `v`.
  LVal view(int n, const LVal& v, std::vector<int64_t> sizes,
            const std::function<std::vector<IndexExpr>(const std::vector<IndexExpr>&)>& map) {
    auto vars = make_vars(sizes);
    VPtr body = at(v, map(vars));
    std::set<int> o;
    if (!v.realized()) o = v.origins;
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
  /// The [N, C, H, W] ([N, C, D, H, W]) view of channels-last buffer `buf` ([N, H, W, C],
  /// [N, D, H, W, C]).
  LVal load_nhwc(int buf, std::set<int> origins) {
    const Buffer& b = p_.buffers[buf];
    assert(channels_last_rank(b.sizes.size()) && "a channels-last buffer is 4-D or 5-D");
    const std::vector<size_t> order = channels_last_order(b.sizes.size());
    std::vector<int64_t> sizes(b.sizes.size());
    for (size_t j = 0; j < order.size(); ++j) sizes[order[j]] = b.sizes[j];
    auto v = make_vars(sizes);
    std::vector<IndexExpr> at_buf;
    for (size_t d : order) at_buf.push_back(v[d]);
    IndexExpr ix = linear_index(at_buf, contiguous_strides(b.sizes));
    LVal r = make_val(b.dtype, sizes, v_load(buf, ix, b.dtype), std::move(origins));
    r.channels_last = true;
    r.nhwc_buffer = buf;
    return r;
  }
  /// Materializes `v` as a pointwise buffer (no-op when it already is one), channels-last when
  /// `v` prefers it.
  void realize(LVal& v) {
    if (v.realized()) return;
    Buffer b;
    b.kind = Buffer::Kind::Pointwise;
    b.dtype = v.dtype;
    set_origins(b, v.origins);
    if (v.channels_last && channels_last_rank(v.sizes.size())) {
      // Buffer dims (n, [d,] h, w, c): the body's variable of logical dim order[j] becomes j.
      const std::vector<size_t> order = channels_last_order(v.sizes.size());
      b.sizes = to_channels_last(v.sizes);
      b.vars = make_vars(b.sizes);
      std::map<int, IndexExpr> subst;
      for (size_t j = 0; j < order.size(); ++j) subst[int(order[j])] = b.vars[j];
      b.body = substitute(v.body, subst);
      int id = add_buffer(std::move(b));
      v = load_nhwc(id, v.origins);
      return;
    }
    b.sizes = v.sizes;
    b.vars = make_vars(v.sizes);
    b.body = v.body;
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
    // Over [N, C, H, W, window...] of a channels-last input (pooling): stored [N, H, W, C, ...]
    // (3-D: [N, D, H, W, C, ...]).
    size_t R = 0;
    for (auto* in : inputs)
      if (in && in->channels_last && !R) R = in->sizes.size();
    bool cl = channels_last_rank(R) && b.sizes.size() >= R && !rdims.empty() &&
              size_t(rdims.front()) >= R && b.sizes[1] > 1;
    // order[j]: the logical dim that buffer dim j holds.
    std::vector<size_t> order(b.sizes.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    if (cl) {
      std::vector<size_t> first = channels_last_order(R);
      std::copy(first.begin(), first.end(), order.begin());
    }
    std::vector<int64_t> logical = b.sizes;
    for (size_t j = 0; j < order.size(); ++j) b.sizes[j] = logical[order[j]];
    b.vars = make_vars(b.sizes);
    std::vector<IndexExpr> in_idx(b.vars.size());
    for (size_t j = 0; j < order.size(); ++j) in_idx[order[j]] = b.vars[j];
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
    std::vector<int64_t> strides = contiguous_strides(b.sizes);
    int id = add_buffer(std::move(b));
    if (!cl) return load_of(id, {n});
    auto v = make_vars(logical);
    std::vector<IndexExpr> at_buf(order.size());
    for (size_t j = 0; j < order.size(); ++j) at_buf[j] = v[order[j]];
    LVal r = make_val(p_.buffers[id].dtype, logical,
                      v_load(id, linear_index(at_buf, strides), p_.buffers[id].dtype), {n});
    r.channels_last = true;
    r.nhwc_buffer = id;
    return r;
  }
  /// `v` as a strided operand of an extern call when it is a strided view of a buffer (no
  /// negative strides).
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
    // A reversed view (flip, rot90) is not an operand: tensors and externs take strides >= 0,
    // and PyTorch's flip gives a fresh tensor anyway.
    for (int64_t s : o.strides)
      if (s < 0) return std::nullopt;
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
  /// An extern operand of `v` laid out contiguously from its offset (copied when it is not; a
  /// dim of size 1 may have any stride, as a 1x1 convolution's weight [k, c, 1, 1] has).
  ExternOperand contiguous_operand(int n, LVal& v) {
    ExternOperand o = operand(v);
    if (is_contiguous_layout(o.sizes, o.strides)) return o;
    LVal c = stored_copy(n, v, false);
    return operand(c);
  }
  /// An extern operand of `v` [N, C, H, W] (or [N, C, D, H, W]) laid out channels-last. When it
  /// is not, `v` becomes a channels-last copy, which later users share.
  ExternOperand channels_last_operand(int n, LVal& v) {
    assert(channels_last_rank(v.sizes.size()) && "channels-last operands are 4-D or 5-D");
    ExternOperand o = operand(v);
    if (is_channels_last_layout(o.sizes, o.strides)) return o;
    v = stored_copy(n, v, true);
    return operand(v);
  }
  void fallback(int n, const std::string& why);
  void inject_bug(int n);

  LoopProgram p_;
  std::vector<LVal> vals_;

private:
  /// A buffer holding a copy of `v`, stored channels-last or contiguously.
  LVal stored_copy(int n, const LVal& v, bool channels_last) {
    LVal c = pointwise(n, v.dtype, v.sizes, [&](auto& idx) { return at(v, idx); }, {&v});
    c.channels_last = channels_last;
    realize(c);
    return c;
  }

  const Graph& g_;
  LowerOptions opts_;
  std::vector<int> uses_;
  std::map<std::string, VPtr> memo_;
  int next_id_ = 0;
  bool channels_last_ = false;
};

} // namespace fxc::lower_detail
