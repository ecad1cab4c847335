// Lowering rules of the scans along one dim: cumsum, cumprod, logcumsumexp, cummax and cummin.
//
// Element i of a row is a reduction over the whole row with the positions after i masked out
// (a triangular reduction): cumsum(x)[i] = sum_j where(j <= i, x[j], 0). Every element is then
// an ordinary reduction buffer, computed on the device in a fixed order on both targets
// (deterministic, no host round trip), at O(n^2) work per row of n elements.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

/// The node's `self` with a 0-dim input viewed as [1], and its wrapped scan dim.
struct ScanInput {
  LVal x;
  int64_t d = 0;
  /// The steps of the triangular reductions (numel times the row length).
  int64_t work() const { return numel_of(x.sizes) * x.sizes[size_t(d)]; }
};
ScanInput scan_input(Lowerer& L, int n) {
  ScanInput s{L.input(n, "self"), 0};
  int64_t rank = int64_t(s.x.sizes.size());
  s.d = wrap(L, n, L.node(n).arg("dim").i, std::max<int64_t>(rank, 1));
  if (rank == 0) s.x = L.reshape(s.x, {1});
  return s;
}

/// `idx` with its scan coordinate replaced by `j`.
std::vector<IndexExpr> with_dim(std::vector<IndexExpr> idx, int64_t d, const IndexExpr& j) {
  idx[size_t(d)] = j;
  return idx;
}

/// j <= i: position j belongs to the prefix ending at i.
VPtr in_prefix(const IndexExpr& j, const IndexExpr& i) {
  return v_binary(VOp::Le, i64(j), i64(i));
}

/// cumsum / cumprod: where(j <= i, x[j], identity) summed (multiplied) over j.
void sum_scan(Lowerer& L, int n, ReduceOp op) {
  ScanInput s = scan_input(L, n);
  if (cpu_reference_instead(L, n, s.work())) return;
  const TensorMeta& m = L.out_meta(n);
  DType acc = accumulate_type(m.dtype);
  VPtr ident = v_const(op == ReduceOp::Prod ? 1 : 0, acc);
  LVal r = reduce_extra(L, n, op, acc, s.x.sizes, {s.x.sizes[size_t(s.d)]},
                        [&](auto& out, auto& rr) {
                          VPtr xj = v_cast(L.at(s.x, with_dim(out, s.d, rr[0])), acc);
                          return v_where(in_prefix(rr[0], out[size_t(s.d)]), xj, ident);
                        },
                        {&s.x});
  L.set_output(n, 0, r);
}
void lower_cumsum(Lowerer& L, int n) {
  sum_scan(L, n, ReduceOp::Sum);
}
void lower_cumprod(Lowerer& L, int n) {
  sum_scan(L, n, ReduceOp::Prod);
}

/// logcumsumexp: m = the prefix maximum (taken as 0 where it is infinite, so that all -inf
/// gives -inf and any +inf gives +inf), then m + log(sum_j<=i exp(x[j] - m)).
void lower_logcumsumexp(Lowerer& L, int n) {
  ScanInput s = scan_input(L, n);
  if (cpu_reference_instead(L, n, s.work())) return;
  const TensorMeta& m = L.out_meta(n);
  DType acc = accumulate_type(m.dtype);
  if (!is_floating(acc)) L.fail(n, "logcumsumexp needs a floating-point result");
  int64_t d = s.d;
  std::vector<int64_t> extra = {s.x.sizes[size_t(d)]};
  // The masked positions take x[i] itself, which is in the prefix: the maximum is unchanged.
  LVal mx = reduce_extra(L, n, ReduceOp::Max, acc, s.x.sizes, extra,
                         [&](auto& out, auto& rr) {
                           return v_where(in_prefix(rr[0], out[size_t(d)]),
                                          v_cast(L.at(s.x, with_dim(out, d, rr[0])), acc),
                                          v_cast(L.at(s.x, out), acc));
                         },
                         {&s.x});
  LVal shift = L.pointwise(n, acc, s.x.sizes,
                           [&](auto& idx) {
                             VPtr v = L.at(mx, idx);
                             VPtr inf =
                                 v_binary(VOp::Eq, v_unary(VOp::Abs, v),
                                          v_const(std::numeric_limits<double>::infinity(), acc));
                             return v_where(inf, v_const(0, acc), v);
                           },
                           {&mx});
  L.realize(shift);
  LVal sum =
      reduce_extra(L, n, ReduceOp::Sum, acc, s.x.sizes, extra,
                   [&](auto& out, auto& rr) {
                     VPtr xj = v_cast(L.at(s.x, with_dim(out, d, rr[0])), acc);
                     return v_where(in_prefix(rr[0], out[size_t(d)]),
                                    v_unary(VOp::Exp, v_binary(VOp::Sub, xj, L.at(shift, out))),
                                    v_const(0, acc));
                   },
                   {&s.x, &shift});
  L.set_output(n, 0,
               L.pointwise(n, acc, s.x.sizes,
                           [&](auto& idx) {
                             return v_binary(VOp::Add, L.at(shift, idx),
                                             v_unary(VOp::Log, L.at(sum, idx)));
                           },
                           {&shift, &sum}));
}

/// cummax / cummin: the prefix extreme (NaN propagates), and where it was last reached as
/// PyTorch's CPU kernel records it: the last NaN of the prefix when there is one, else the last
/// position holding the extreme value.
void cum_extreme(Lowerer& L, int n, bool mx) {
  ScanInput s = scan_input(L, n);
  if (cpu_reference_instead(L, n, s.work())) return;
  DType kt = exact_type(s.x.dtype);
  int64_t d = s.d;
  std::vector<int64_t> extra = {s.x.sizes[size_t(d)]};
  auto key = [&](const std::vector<IndexExpr>& idx) { return v_cast(L.at(s.x, idx), kt); };
  LVal v = reduce_extra(L, n, mx ? ReduceOp::Max : ReduceOp::Min, kt, s.x.sizes, extra,
                        [&](auto& out, auto& rr) {
                          return v_where(in_prefix(rr[0], out[size_t(d)]),
                                         key(with_dim(out, d, rr[0])), key(out));
                        },
                        {&s.x});
  LVal at = reduce_extra(L, n, ReduceOp::Max, DType::I64, s.x.sizes, extra,
                         [&](auto& out, auto& rr) {
                           VPtr xj = key(with_dim(out, d, rr[0]));
                           VPtr best = L.at(v, out);
                           VPtr hit = is_floating(kt) ? v_where(is_nan(best), is_nan(xj),
                                                                v_binary(VOp::Eq, xj, best))
                                                      : v_binary(VOp::Eq, xj, best);
                           return v_where(v_binary(VOp::And, in_prefix(rr[0], out[size_t(d)]), hit),
                                          i64(rr[0]), v_const(-1, DType::I64));
                         },
                         {&s.x, &v});
  L.set_output(n, 0, v);
  L.set_output(n, 1, at);
}
void lower_cummax(Lowerer& L, int n) {
  cum_extreme(L, n, true);
}
void lower_cummin(Lowerer& L, int n) {
  cum_extreme(L, n, false);
}

const OpTable<LowerFn>::Row kScanRules[] = {
    {OpId::cummax, lower_cummax},
    {OpId::cummin, lower_cummin},
    {OpId::cumprod, lower_cumprod},
    {OpId::cumsum, lower_cumsum},
    {OpId::logcumsumexp, lower_logcumsumexp},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> scan_rules() {
  return kScanRules;
}

} // namespace fxc::lower_detail
