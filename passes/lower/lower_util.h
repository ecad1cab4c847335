// Internal to the lowering rules (passes/lower/*.cpp): the helpers several op families share
// (operands, wrapped dims, bounded indices) and each family's rows of the rule table, which
// passes/lower.cpp concatenates.
#pragma once

#include "passes/lower/engine.h"

#include <span>

namespace fxc::lower_detail {

// ---------------------------------------------------------------- rule helpers

/// Operand `name` of node n at out_idx, converted to `t`: a broadcast tensor or a scalar.
inline VPtr operand_at(Lowerer& L, int n, const std::string& name,
                       const std::vector<IndexExpr>& idx, DType t) {
  const Arg& a = L.node(n).arg(name);
  if (a.kind == Arg::Kind::Tensor) return v_cast(L.bcast(L.val(n, a.tensor), idx), t);
  if (a.kind == Arg::Kind::None) L.fail(n, "argument '" + name + "' is missing");
  return v_const(a.scalar(), t);
}

inline const LVal* tensor_arg(Lowerer& L, int n, const std::string& name) {
  const Arg& a = L.node(n).arg(name);
  return a.kind == Arg::Kind::Tensor ? &L.val(n, a.tensor) : nullptr;
}

/// The dtype in which a comparison of the two operands is evaluated.
inline DType compare_dtype(Lowerer& L, int n, const std::string& x, const std::string& y) {
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

inline void unary(Lowerer& L, int n, const std::function<VPtr(VPtr)>& f) {
  const TensorMeta& m = L.out_meta(n);
  LVal& x = L.input(n, "self");
  DType t = m.dtype;
  L.set_output(
      n, 0,
      L.pointwise(n, t, m.sizes, [&](auto& idx) { return f(v_cast(L.at(x, idx), t)); }, {&x}));
}

inline int64_t wrap(Lowerer& L, int n, int64_t d, int64_t rank) {
  try {
    return wrap_dim(d, rank);
  } catch (const std::out_of_range& e) {
    L.fail(n, e.what());
  }
}

/// `e` when it always lies in [0, extent); otherwise the same index clamped into that range
/// (used for loads on the untaken side of a select, which must stay inside the buffer).
inline IndexExpr clamped(const IndexExpr& e, int64_t extent) {
  auto [lo, hi] = e.range();
  if (lo >= 0 && hi < extent) return e;
  return IndexExpr::indirect(v_index(e, DType::I64), extent);
}

inline VPtr index_lt(const IndexExpr& e, int64_t bound) {
  return v_binary(VOp::Lt, v_index(e, DType::I64), v_const(double(bound), DType::I64));
}
inline VPtr index_ge(const IndexExpr& e, int64_t bound) {
  return v_binary(VOp::Ge, v_index(e, DType::I64), v_const(double(bound), DType::I64));
}

// Each op family's rows of the lowering table.
std::span<const OpTable<LowerFn>::Row> pointwise_rules();
std::span<const OpTable<LowerFn>::Row> reduction_rules();
std::span<const OpTable<LowerFn>::Row> norm_rules();
std::span<const OpTable<LowerFn>::Row> linalg_rules();
/// A float32 CPU convolution as a oneDNN call with the ops after it folded as post-ops
/// (passes/lower/conv_onednn.cpp); false (logged) when oneDNN cannot run it.
bool lower_conv_onednn(Lowerer& L, int n, LVal& x, LVal& w, const LVal* bias,
                       const std::array<int64_t, 2>& stride, const std::array<int64_t, 2>& padding,
                       const std::array<int64_t, 2>& dilation, int64_t groups);
/// A 1-D or 3-D (any of 1-3 spatial dims), ungrouped convolution as im2col and one batched GEMM
/// (passes/lower/conv_nd.cpp); false when the node is not one.
bool lower_conv_nd_im2col(Lowerer& L, int n, LVal& x, LVal& w, const LVal* bias,
                          const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                          const std::vector<int64_t>& dilation);
std::span<const OpTable<LowerFn>::Row> pool_rules();
std::span<const OpTable<LowerFn>::Row> pool_nd_rules();
std::span<const OpTable<LowerFn>::Row> indexing_rules();
std::span<const OpTable<LowerFn>::Row> view_rules();
std::span<const OpTable<LowerFn>::Row> factory_rules();

} // namespace fxc::lower_detail
