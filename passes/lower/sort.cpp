// Lowering rules of sorting along one dim: sort (.default, .stable), argsort (.default, .stable)
// and topk, by ranks.
//
// The rank of element i of a row is the number of elements that come before it in the stable
// order: rank[i] = sum_j before(j, i), where before(j, i) = x[j] < x[i] || (x[j] == x[i] && j < i)
// (descending: x[j] > x[i], same tie rule), NaN comparing above every number as in PyTorch. The
// ranks are a permutation, so the element at sorted position k is the one j with rank[j] == k:
// perm[k] = max_j where(rank[j] == k, j, -1). Both are reduction buffers (O(n^2) per row of n,
// deterministic, on the device on both targets); the values are a gather of x at perm.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

/// a < b in the sort order of ascending PyTorch sort: a NaN is above every number.
VPtr sort_less(const VPtr& a, const VPtr& b) {
  VPtr lt = v_binary(VOp::Lt, a, b);
  if (!is_floating(a->dtype)) return lt;
  return v_binary(VOp::Or, lt, v_binary(VOp::And, is_nan(b), v_unary(VOp::Not, is_nan(a))));
}

struct Sorted {
  LVal values, indices;
};

/// The first `k` elements of each row of `self` along `dim`, stably sorted.
Sorted sort_rows(Lowerer& L, int n, int64_t dim, bool descending, int64_t k) {
  LVal x = L.input(n, "self");
  int64_t rank = int64_t(x.sizes.size());
  int64_t d = wrap(L, n, dim, std::max<int64_t>(rank, 1));
  if (rank == 0) x = L.reshape(x, {1});
  int64_t len = x.sizes[size_t(d)];
  if (k < 0) k = len;
  if (k > len)
    L.fail(n, "selected index k out of range (k = " + std::to_string(k) + ", dim " +
                  std::to_string(d) + " has " + std::to_string(len) + " elements)");
  DType kt = exact_type(x.dtype);
  auto key = [&](const std::vector<IndexExpr>& idx) { return v_cast(L.at(x, idx), kt); };
  auto with_d = [&](std::vector<IndexExpr> idx, const IndexExpr& j) {
    idx[size_t(d)] = j;
    return idx;
  };
  LVal ranks =
      reduce_extra(L, n, ReduceOp::Sum, DType::I64, x.sizes, {len},
                   [&](auto& out, auto& rr) {
                     VPtr xi = key(out), xj = key(with_d(out, rr[0]));
                     VPtr first = descending ? sort_less(xi, xj) : sort_less(xj, xi);
                     VPtr after = descending ? sort_less(xj, xi) : sort_less(xi, xj);
                     VPtr earlier = v_binary(VOp::Lt, i64(rr[0]), i64(out[size_t(d)]));
                     VPtr before = v_binary(VOp::Or, first,
                                            v_binary(VOp::And, v_unary(VOp::Not, after), earlier));
                     return v_where(before, v_const(1, DType::I64), v_const(0, DType::I64));
                   },
                   {&x});
  std::vector<int64_t> osizes = x.sizes;
  osizes[size_t(d)] = k;
  LVal perm = reduce_extra(L, n, ReduceOp::Max, DType::I64, osizes, {len},
                           [&](auto& out, auto& rr) {
                             VPtr hit = v_binary(VOp::Eq, L.at(ranks, with_d(out, rr[0])),
                                                 i64(out[size_t(d)]));
                             return v_where(hit, i64(rr[0]), v_const(-1, DType::I64));
                           },
                           {&ranks});
  LVal values = L.pointwise(
      n, x.dtype, osizes,
      [&](auto& idx) {
        return L.at(x,
                    with_d(idx, IndexExpr::indirect(L.at(perm, idx), std::max<int64_t>(len, 1))));
      },
      {&x, &perm});
  return {values, perm};
}

/// Whether the CPU plan calls the reference kernel instead (a long row: see
/// cpu_reference_instead).
bool sort_on_host_cpu(Lowerer& L, int n) {
  const LVal& x = L.input(n, "self");
  int64_t len = 1;
  if (!x.sizes.empty())
    len = x.sizes[size_t(wrap(L, n, L.node(n).arg("dim").i, int64_t(x.sizes.size())))];
  return cpu_reference_instead(L, n, 2 * numel_of(x.sizes) * len);
}

void lower_sort(Lowerer& L, int n) {
  if (sort_on_host_cpu(L, n)) return;
  const Node& nd = L.node(n);
  Sorted s = sort_rows(L, n, nd.arg("dim").i, nd.arg("descending").b, -1);
  L.set_output(n, 0, s.values);
  L.set_output(n, 1, s.indices);
}
void lower_argsort(Lowerer& L, int n) {
  if (sort_on_host_cpu(L, n)) return;
  const Node& nd = L.node(n);
  L.set_output(n, 0, sort_rows(L, n, nd.arg("dim").i, nd.arg("descending").b, -1).indices);
}
/// topk: the first k of the stable descending (largest) or ascending order, sorted either way.
void lower_topk(Lowerer& L, int n) {
  if (sort_on_host_cpu(L, n)) return;
  const Node& nd = L.node(n);
  int64_t k = nd.arg("k").i;
  if (k < 0) L.fail(n, "selected index k out of range (k = " + std::to_string(k) + ")");
  Sorted s = sort_rows(L, n, nd.arg("dim").i, nd.arg("largest").b, k);
  L.set_output(n, 0, s.values);
  L.set_output(n, 1, s.indices);
}

const OpTable<LowerFn>::Row kSortRules[] = {
    {OpId::argsort, lower_argsort}, {OpId::argsort_stable, lower_argsort},
    {OpId::sort, lower_sort},       {OpId::sort_stable, lower_sort},
    {OpId::topk, lower_topk},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> sort_rules() {
  return kSortRules;
}

} // namespace fxc::lower_detail
