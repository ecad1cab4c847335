// Lowering rules of the scatters: scatter (.src, .value), scatter_add, scatter_reduce.two,
// index_add, index_fill.int_Scalar and index_put, as gathers.
//
// Each element of the result is self's element combined with the contributions that land on
// it, found by a reduction over the index positions that could: for scatter along dim d, the
// positions j of the index row through the element (out[x] takes src[x with d = j] where
// index[x with d = j] == x_d); for index_put, every element of the broadcast index shape. Sums,
// products, extremes and counts are ordinary reductions; where several contributions land on
// one element of a non-accumulating scatter or index_put, the last one in index order wins (a
// max reduction of the matching positions, then a gather), as PyTorch's CPU kernels write
// them. So the result is deterministic and no atomics are needed, at the cost of a reduction
// over the index length per element. Negative indices count from the end where PyTorch allows
// them (index_put, index_fill); indices out of range match no element (PyTorch raises).
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

/// `v` as at least 1-D (a 0-dim tensor viewed as [1]).
LVal at_least_1d(Lowerer& L, const LVal& v) {
  return v.sizes.empty() ? L.reshape(v, {1}) : v;
}

/// The lowest / highest value of `t` (the identity of max / min), as a constant of `t`.
VPtr extreme_of(DType t, bool lowest) {
  double inf = std::numeric_limits<double>::infinity();
  if (is_floating(t)) return v_const(lowest ? -inf : inf, t);
  if (t == DType::Bool) return v_const(lowest ? 0 : 1, t);
  int bits = int(dtype_size(t)) * 8;
  bool un = t == DType::U8;
  if (bits == 64) {
    auto e = std::make_shared<VExpr>();
    e->op = VOp::Const;
    e->dtype = t;
    e->ival = lowest ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    return e;
  }
  double lo = un ? 0 : -std::ldexp(1.0, bits - 1);
  double hi = un ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
  return v_const(lowest ? lo : hi, t);
}

// ---- scatter, scatter_add, scatter_reduce

/// Where index position j of the row through out element x contributes to x.
struct ScatterRow {
  LVal self, index;
  int64_t d = 0;
  /// index/src coordinates of position j for out element x: x with dim d = j, the others
  /// clamped into the index's extent (x beyond it matches nothing).
  std::vector<IndexExpr> at(const std::vector<IndexExpr>& x, const IndexExpr& j) const {
    std::vector<IndexExpr> y = x;
    for (size_t k = 0; k < y.size(); ++k)
      y[k] = int64_t(k) == d ? j : clamped(x[k], std::max<int64_t>(index.sizes[k], 1));
    return y;
  }
  VPtr match(Lowerer& L, const std::vector<IndexExpr>& x, const IndexExpr& j) {
    VPtr m = v_binary(VOp::Eq, v_cast(L.at(index, at(x, j)), DType::I64), i64(x[size_t(d)]));
    for (size_t k = 0; k < x.size(); ++k)
      if (int64_t(k) != d && index.sizes[k] < self.sizes[k])
        m = v_binary(VOp::And, m, index_lt(x[k], index.sizes[k]));
    return m;
  }
};

ScatterRow scatter_row(Lowerer& L, int n) {
  ScatterRow r{at_least_1d(L, L.input(n, "self")), at_least_1d(L, L.input(n, "index")), 0};
  r.d = wrap(L, n, L.node(n).arg("dim").i, int64_t(r.self.sizes.size()));
  if (r.index.sizes.size() != r.self.sizes.size())
    L.fail(n, "index and self must have the same number of dimensions");
  for (size_t k = 0; k < r.self.sizes.size(); ++k)
    if (int64_t(k) != r.d && r.index.sizes[k] > r.self.sizes[k] && numel_of(r.index.sizes) > 0)
      L.fail(n, "index is larger than self in dimension " + std::to_string(k));
  return r;
}

/// The value scattered from position y: src there (converted to `t`), or the scalar `value`.
VPtr scattered(Lowerer& L, int n, const LVal* src, const std::vector<IndexExpr>& y, DType t) {
  if (src) return v_cast(L.at(*src, y), t);
  return v_const(L.node(n).arg("value").scalar(), t);
}

/// The last matching position (-1: none): the winner of a non-accumulating scatter.
LVal last_match(Lowerer& L, int n, ScatterRow& r, std::vector<const LVal*> inputs) {
  return reduce_extra(
      L, n, ReduceOp::Max, DType::I64, r.self.sizes, {r.index.sizes[size_t(r.d)]},
      [&](auto& x, auto& rr) {
        return v_where(r.match(L, x, rr[0]), i64(rr[0]), v_const(-1, DType::I64));
      },
      inputs);
}

void lower_scatter(Lowerer& L, int n) {
  ScatterRow r = scatter_row(L, n);
  if (cpu_reference_instead(L, n, numel_of(r.self.sizes) * r.index.sizes[size_t(r.d)])) return;
  const TensorMeta& m = L.out_meta(n);
  bool has_src = L.node(n).schema->index_of("src") >= 0;
  std::optional<LVal> src;
  if (has_src) src = at_least_1d(L, L.input(n, "src"));
  if (numel_of(r.index.sizes) == 0) {
    L.set_output(
        n, 0,
        L.pointwise(n, m.dtype, r.self.sizes, [&](auto& x) { return L.at(r.self, x); }, {&r.self}));
    return;
  }
  LVal win = last_match(L, n, r, {&r.index});
  int64_t len = r.index.sizes[size_t(r.d)];
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, r.self.sizes,
                           [&](auto& x) {
                             VPtr w = L.at(win, x);
                             VPtr v = scattered(L, n, src ? &*src : nullptr,
                                                r.at(x, IndexExpr::indirect(w, len)), m.dtype);
                             return v_where(v_binary(VOp::Ge, w, v_const(0, DType::I64)), v,
                                            v_cast(L.at(r.self, x), m.dtype));
                           },
                           {&r.self, &win}));
}

/// scatter_add and scatter_reduce.two (sum, prod, mean, amax, amin; include_self or not).
void scatter_reduce_with(Lowerer& L, int n, const std::string& how, bool include_self) {
  ScatterRow r = scatter_row(L, n);
  if (cpu_reference_instead(L, n, 2 * numel_of(r.self.sizes) * r.index.sizes[size_t(r.d)])) return;
  const TensorMeta& m = L.out_meta(n);
  LVal src = at_least_1d(L, L.input(n, "src"));
  DType t = m.dtype;
  if (numel_of(r.index.sizes) == 0) {
    L.set_output(
        n, 0, L.pointwise(n, t, r.self.sizes, [&](auto& x) { return L.at(r.self, x); }, {&r.self}));
    return;
  }
  std::vector<int64_t> extra = {r.index.sizes[size_t(r.d)]};
  ReduceOp op;
  DType acc = accumulate_type(t);
  VPtr ident;
  if (how == "sum" || how == "mean") {
    op = ReduceOp::Sum;
    ident = v_const(0, acc);
  } else if (how == "prod") {
    op = ReduceOp::Prod;
    ident = v_const(1, acc);
  } else if (how == "amax" || how == "amin") {
    op = how == "amax" ? ReduceOp::Max : ReduceOp::Min;
    acc = exact_type(t);
    ident = extreme_of(acc, how == "amax");
  } else {
    L.fail(n, "reduce argument must be one of sum, prod, mean, amax, amin, got '" + how + "'");
  }
  LVal red = reduce_extra(L, n, op, acc, r.self.sizes, extra,
                          [&](auto& x, auto& rr) {
                            return v_where(r.match(L, x, rr[0]),
                                           v_cast(L.at(src, r.at(x, rr[0])), acc), ident);
                          },
                          {&r.index, &src});
  LVal cnt = reduce_extra(L, n, ReduceOp::Sum, DType::I64, r.self.sizes, extra,
                          [&](auto& x, auto& rr) {
                            return v_where(r.match(L, x, rr[0]), v_const(1, DType::I64),
                                           v_const(0, DType::I64));
                          },
                          {&r.index});
  L.set_output(
      n, 0,
      L.pointwise(n, t, r.self.sizes,
                  [&](auto& x) {
                    VPtr s = v_cast(L.at(r.self, x), acc), v = L.at(red, x), c = L.at(cnt, x);
                    VPtr res;
                    if (op == ReduceOp::Sum)
                      res = include_self ? v_binary(VOp::Add, s, v) : v;
                    else if (op == ReduceOp::Prod)
                      res = include_self ? v_binary(VOp::Mul, s, v) : v;
                    else
                      res = include_self ? v_binary(op == ReduceOp::Max ? VOp::Max : VOp::Min, s, v)
                                         : v;
                    if (how == "mean") {
                      VPtr k = v_cast(
                          include_self ? v_binary(VOp::Add, c, v_const(1, DType::I64)) : c, acc);
                      res = v_binary(is_floating(acc) ? VOp::Div : VOp::FloorDivide, res, k);
                    }
                    VPtr any = v_binary(VOp::Gt, c, v_const(0, DType::I64));
                    return v_cast(v_where(any, res, s), t);
                  },
                  {&r.self, &red, &cnt}));
}

void lower_scatter_add(Lowerer& L, int n) {
  scatter_reduce_with(L, n, "sum", true);
}
void lower_scatter_reduce(Lowerer& L, int n) {
  scatter_reduce_with(L, n, L.node(n).arg("reduce").s, L.node(n).arg("include_self").b);
}

// ---- index_add, index_fill

/// For index_add / index_fill along dim d with a 1-D (or 0-dim) index: whether index[j]
/// names element x's coordinate along d.
struct DimIndex {
  LVal self, index;
  int64_t d = 0;
  bool wraps = false; ///< a negative index counts from the end (index_fill; not index_add)
  VPtr match(Lowerer& L, const std::vector<IndexExpr>& x, const IndexExpr& j) {
    VPtr i = wraps ? wrap_index(L.at(index, {j}), self.sizes[size_t(d)])
                   : v_cast(L.at(index, {j}), DType::I64);
    return v_binary(VOp::Eq, i, i64(x[size_t(d)]));
  }
};
DimIndex dim_index(Lowerer& L, int n) {
  DimIndex r{at_least_1d(L, L.input(n, "self")), at_least_1d(L, L.input(n, "index")), 0};
  r.d = wrap(L, n, L.node(n).arg("dim").i, int64_t(r.self.sizes.size()));
  if (r.index.sizes.size() != 1) L.fail(n, "index must be a vector (0-dim or 1-D)");
  return r;
}

/// index_add: out = self + alpha * sum_j where(index[j] == x_d, source[x with d = j], 0).
void lower_index_add(Lowerer& L, int n) {
  DimIndex r = dim_index(L, n);
  if (cpu_reference_instead(L, n, numel_of(r.self.sizes) * r.index.sizes[0])) return;
  const TensorMeta& m = L.out_meta(n);
  LVal src = at_least_1d(L, L.input(n, "source"));
  DType t = m.dtype, acc = accumulate_type(t);
  int64_t len = r.index.sizes[0];
  if (src.sizes.size() != r.self.sizes.size() || src.sizes[size_t(r.d)] != len)
    L.fail(n, "source must have self's rank and the index's length along dim");
  LVal sum = reduce_extra(L, n, ReduceOp::Sum, acc, r.self.sizes, {len},
                          [&](auto& x, auto& rr) {
                            std::vector<IndexExpr> y = x;
                            y[size_t(r.d)] = rr[0];
                            return v_where(r.match(L, x, rr[0]), v_cast(L.at(src, y), acc),
                                           v_const(0, acc));
                          },
                          {&r.index, &src});
  VPtr alpha = v_const(L.node(n).arg("alpha").scalar(), acc);
  L.set_output(n, 0,
               L.pointwise(n, t, r.self.sizes,
                           [&](auto& x) {
                             VPtr add = v_binary(VOp::Mul, L.at(sum, x), alpha);
                             if (t == DType::Bool)
                               return v_binary(VOp::Or, L.at(r.self, x), v_cast(add, DType::Bool));
                             return v_cast(v_binary(VOp::Add, v_cast(L.at(r.self, x), acc), add),
                                           t);
                           },
                           {&r.self, &sum}));
}

/// index_fill: value where some index[j] names the coordinate along dim, else self.
void lower_index_fill(Lowerer& L, int n) {
  DimIndex r = dim_index(L, n);
  r.wraps = true;
  if (cpu_reference_instead(L, n, numel_of(r.self.sizes) * r.index.sizes[0])) return;
  const TensorMeta& m = L.out_meta(n);
  LVal hits = reduce_extra(L, n, ReduceOp::Sum, DType::I64, r.self.sizes, {r.index.sizes[0]},
                           [&](auto& x, auto& rr) {
                             return v_where(r.match(L, x, rr[0]), v_const(1, DType::I64),
                                            v_const(0, DType::I64));
                           },
                           {&r.index});
  VPtr value = v_const(L.node(n).arg("value").scalar(), m.dtype);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, r.self.sizes,
                           [&](auto& x) {
                             return v_where(
                                 v_binary(VOp::Gt, L.at(hits, x), v_const(0, DType::I64)), value,
                                 v_cast(L.at(r.self, x), m.dtype));
                           },
                           {&r.self, &hits}));
}

// ---- index_put

/// index_put(self, indices, values, accumulate) with integer index tensors (None entries for
/// whole dims). The index tensors broadcast to a shape B; element b of B writes
/// values[r(b, x)] to self[x] where x's indexed coordinates are the (wrapped) indices at b and
/// the others run free; r places B where PyTorch does (in place of the indexed dims when they
/// are adjacent, else first). Boolean mask indices (data-dependent positions) stay an extern
/// call on the CPU and are refused in a CUDA plan.
void lower_index_put(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  LVal self = L.input(n, "self");
  LVal values = L.input(n, "values");
  bool accumulate = nd.arg("accumulate").b;
  const Arg& ia = nd.arg("indices");
  size_t R = self.sizes.size();
  std::vector<const LVal*> idx(R, nullptr);
  if (ia.tensors.size() > R) L.fail(n, "too many indices for the tensor");
  for (size_t k = 0; k < ia.tensors.size(); ++k)
    if (ia.tensors[k] != kNoValue) {
      idx[k] = &L.val(n, ia.tensors[k]);
      if (idx[k]->dtype == DType::Bool || idx[k]->dtype == DType::U8) {
        // The positions a mask names are data-dependent: eager only. The CPU plan calls the
        // reference kernel; a CUDA plan refuses it rather than round-trip through the host.
        if (L.options().cuda)
          L.fail(n, "index_put with a boolean mask index writes data-dependent positions and "
                    "has no CUDA lowering; use --backend=eager, or torch.where(mask, values, "
                    "self) when values is a single element");
        L.fallback(n, "boolean mask index (data-dependent positions)");
        return;
      }
    }
  // B: the broadcast shape of the index tensors.
  std::vector<int64_t> B;
  for (auto* t : idx)
    if (t) {
      if (t->sizes.size() > B.size()) B.insert(B.begin(), t->sizes.size() - B.size(), 1);
      for (size_t j = 0; j < t->sizes.size(); ++j) {
        int64_t& b = B[B.size() - t->sizes.size() + j];
        if (b == 1) b = t->sizes[j];
      }
    }
  // Where B sits in the indexing result: adjacent indexed dims keep their place.
  int first = -1, last = -1, state = 0;
  bool adjacent = true;
  for (size_t k = 0; k < R; ++k) {
    if (idx[k]) {
      if (first < 0) first = int(k);
      last = int(k);
      if (state == 2) adjacent = false;
      state = 1;
    } else if (state == 1) {
      state = 2;
    }
  }
  if (first < 0) L.fail(n, "index_put needs at least one index tensor");
  // The coordinates of values (broadcast to the indexing result) for b and self element x.
  auto value_index = [&](const std::vector<IndexExpr>& x, const std::vector<IndexExpr>& b) {
    std::vector<IndexExpr> r;
    if (adjacent) {
      for (int k = 0; k < first; ++k) r.push_back(x[size_t(k)]);
      r.insert(r.end(), b.begin(), b.end());
      for (size_t k = size_t(last) + 1; k < R; ++k) r.push_back(x[k]);
    } else {
      r = b;
      for (size_t k = 0; k < R; ++k)
        if (!idx[k]) r.push_back(x[k]);
    }
    return r;
  };
  auto match = [&](const std::vector<IndexExpr>& x, const std::vector<IndexExpr>& b) {
    VPtr mt;
    for (size_t k = 0; k < R; ++k)
      if (idx[k]) {
        VPtr e = v_binary(VOp::Eq, wrap_index(L.bcast(*idx[k], b), self.sizes[k]), i64(x[k]));
        mt = mt ? v_binary(VOp::And, mt, e) : e;
      }
    return mt;
  };
  DType t = m.dtype;
  if (cpu_reference_instead(L, n, numel_of(self.sizes) * numel_of(B))) return;
  if (numel_of(B) == 0) {
    L.set_output(n, 0,
                 L.pointwise(n, t, self.sizes, [&](auto& x) { return L.at(self, x); }, {&self}));
    return;
  }
  std::vector<const LVal*> ins;
  for (auto* p : idx)
    if (p) ins.push_back(p);
  if (accumulate) {
    DType acc = t == DType::Bool ? DType::I64 : accumulate_type(t);
    ins.push_back(&values);
    LVal sum = reduce_extra(
        L, n, ReduceOp::Sum, acc, self.sizes, B,
        [&](auto& x, auto& b) {
          return v_where(match(x, b), v_cast(L.bcast(values, value_index(x, b)), acc),
                         v_const(0, acc));
        },
        ins);
    L.set_output(n, 0,
                 L.pointwise(n, t, self.sizes,
                             [&](auto& x) {
                               return v_cast(
                                   v_binary(VOp::Add, v_cast(L.at(self, x), acc), L.at(sum, x)), t);
                             },
                             {&self, &sum}));
    return;
  }
  // The last b (row-major) that writes x, as a flat position in B.
  std::vector<int64_t> Bstr = contiguous_strides(B);
  LVal win = reduce_extra(
      L, n, ReduceOp::Max, DType::I64, self.sizes, B,
      [&](auto& x, auto& b) {
        return v_where(match(x, b), i64(linear_index(b, Bstr)), v_const(-1, DType::I64));
      },
      ins);
  L.set_output(n, 0,
               L.pointwise(n, t, self.sizes,
                           [&](auto& x) {
                             VPtr w = L.at(win, x);
                             auto b = unravel_index(IndexExpr::indirect(w, numel_of(B)), B);
                             return v_where(v_binary(VOp::Ge, w, v_const(0, DType::I64)),
                                            v_cast(L.bcast(values, value_index(x, b)), t),
                                            v_cast(L.at(self, x), t));
                           },
                           {&self, &values, &win}));
}

const OpTable<LowerFn>::Row kScatterRules[] = {
    {OpId::index_add, lower_index_add},
    {OpId::index_fill_int_Scalar, lower_index_fill},
    {OpId::index_put, lower_index_put},
    {OpId::scatter_add, lower_scatter_add},
    {OpId::scatter_reduce_two, lower_scatter_reduce},
    {OpId::scatter_src, lower_scatter},
    {OpId::scatter_value, lower_scatter},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> scatter_rules() {
  return kScatterRules;
}

} // namespace fxc::lower_detail
