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

/// The type in which values of `t` are compared and reduced exactly: float32 for the 16-bit
/// floats, int64 for the integers and bool, `t` itself for float32/float64.
inline DType exact_type(DType t) {
  if (is_floating(t)) return dtype_size(t) == 2 ? DType::F32 : t;
  return DType::I64;
}
/// The type in which a sum or product of `t` accumulates: float32 for the 16-bit floats, else t.
inline DType accumulate_type(DType t) {
  return is_floating(t) && dtype_size(t) == 2 ? DType::F32 : t;
}
inline VPtr i64(const IndexExpr& e) {
  return v_index(e, DType::I64);
}
inline VPtr is_nan(const VPtr& v) {
  return is_floating(v->dtype) ? v_binary(VOp::Ne, v, v) : v_const(0, DType::Bool);
}
/// An index tensor's entry wrapped as PyTorch wraps it: i + size when i < 0 (int64).
inline VPtr wrap_index(const VPtr& i, int64_t size) {
  VPtr v = v_cast(i, DType::I64);
  return v_where(v_binary(VOp::Lt, v, v_const(0, DType::I64)),
                 v_binary(VOp::Add, v, v_const(double(size), DType::I64)), v);
}

/// The lowerings of scans, sorts and scatters do quadratic work (a row against itself, every
/// element against the index). Past this many steps a CPU plan calls the reference kernel
/// (linear, or n log n) instead; a CUDA plan always lowers: no op of it goes through the host.
constexpr int64_t kCpuQuadraticWorkLimit = int64_t(1) << 27;
/// Makes node n an extern call of its reference kernel, logged with the work, and returns true
/// when this is a CPU plan and `work` is past kCpuQuadraticWorkLimit.
inline bool cpu_reference_instead(Lowerer& L, int n, int64_t work) {
  if (L.options().cuda || work <= kCpuQuadraticWorkLimit) return false;
  L.fallback(n, "quadratic lowering of " + std::to_string(work) +
                    " steps: the reference kernel is faster on the CPU");
  return true;
}

/// A reduction with `op` of fn(out_idx, r_idx) over the extra dims `extra`, for every element
/// of a result of `out` sizes (the result has exactly those sizes). With nothing to reduce
/// (an extra extent of 0), every element is the identity of `op` (Sum and Prod only: the other
/// callers reduce over at least one element or guard the empty case by a count).
inline LVal reduce_extra(
    Lowerer& L, int n, ReduceOp op, DType acc, const std::vector<int64_t>& out,
    const std::vector<int64_t>& extra,
    const std::function<VPtr(const std::vector<IndexExpr>&, const std::vector<IndexExpr>&)>& fn,
    std::vector<const LVal*> inputs) {
  if (numel_of(extra) == 0 || numel_of(out) == 0) {
    double id = op == ReduceOp::Prod ? 1 : 0;
    return L.pointwise(n, acc, out, [&](auto&) { return v_const(id, acc); }, inputs);
  }
  std::vector<int64_t> in = out;
  in.insert(in.end(), extra.begin(), extra.end());
  std::vector<int64_t> rd;
  for (size_t j = 0; j < extra.size(); ++j) rd.push_back(int64_t(out.size() + j));
  LVal r = L.reduce(
      n, op, acc, in, rd,
      [&](const std::vector<IndexExpr>& idx) {
        std::vector<IndexExpr> o(idx.begin(), idx.begin() + std::ptrdiff_t(out.size()));
        std::vector<IndexExpr> rr(idx.begin() + std::ptrdiff_t(out.size()), idx.end());
        return fn(o, rr);
      },
      inputs);
  return L.reshape(r, out);
}

// Each op family's rows of the lowering table.
std::span<const OpTable<LowerFn>::Row> pointwise_rules();
std::span<const OpTable<LowerFn>::Row> reduction_rules();
std::span<const OpTable<LowerFn>::Row> norm_rules();
std::span<const OpTable<LowerFn>::Row> linalg_rules();
/// A float32 CPU convolution (1 to 3 spatial dims; stride, padding and dilation one value per
/// dim) as a oneDNN call with the ops after it folded as post-ops (passes/lower/conv_onednn.cpp);
/// false (logged) when oneDNN cannot run it.
bool lower_conv_onednn(Lowerer& L, int n, LVal& x, LVal& w, const LVal* bias,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                       const std::vector<int64_t>& dilation, int64_t groups);
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
std::span<const OpTable<LowerFn>::Row> scan_rules();
std::span<const OpTable<LowerFn>::Row> sort_rules();
std::span<const OpTable<LowerFn>::Row> scatter_rules();
std::span<const OpTable<LowerFn>::Row> random_rules();
std::span<const OpTable<LowerFn>::Row> special_rules();

} // namespace fxc::lower_detail
