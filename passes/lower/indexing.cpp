// Lowering rules of the indexing ops: embedding, gather and index_select as indirect loads.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

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
                             // A 0-dim input has one element: its only index is 0 (the meta
                             // checked the shapes), so the load is the input itself.
                             if (x.sizes.empty()) return L.at(x, {});
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
  L.set_output(n, 0,
               L.pointwise(n, x.dtype, m.sizes,
                           [&](auto& idx) {
                             // A 0-dim input: the result is the input (its one index is 0).
                             if (x.sizes.empty()) return L.at(x, {});
                             std::vector<IndexExpr> in = idx;
                             VPtr i = L.at(ix, ix.sizes.empty() ? std::vector<IndexExpr>{}
                                                                : std::vector<IndexExpr>{idx[d]});
                             in[d] = IndexExpr::indirect(v_cast(i, DType::I64), x.sizes[d]);
                             return L.at(x, in);
                           },
                           {&x, &ix}));
}

/// index.Tensor (advanced indexing with integer index tensors and None entries): the index
/// tensors broadcast to B, which replaces the indexed dims in place when they are adjacent and
/// goes first otherwise (as meta_index_Tensor places it); each indexed coordinate is the
/// (wrapped) index at the result's B coordinates, the others run free. Boolean masks never
/// reach here: the meta rejects them (data-dependent shape).
void lower_index_tensor(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  const Arg& ia = L.node(n).arg("indices");
  size_t R = x.sizes.size();
  if (ia.tensors.size() > R) L.fail(n, "too many indices for the tensor");
  std::vector<const LVal*> idx(R, nullptr);
  size_t brank = 0;
  for (size_t k = 0; k < ia.tensors.size(); ++k)
    if (ia.tensors[k] != kNoValue) {
      idx[k] = &L.val(n, ia.tensors[k]);
      brank = std::max(brank, idx[k]->sizes.size());
    }
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
  if (first < 0) L.fail(n, "at least one index must be provided");
  size_t nfree = 0;
  for (auto* p : idx) nfree += p == nullptr;
  if (m.sizes.size() != brank + nfree) L.fail(n, "the result rank does not match the indexing");
  std::vector<const LVal*> ins = {&x};
  for (auto* p : idx)
    if (p) ins.push_back(p);
  L.set_output(n, 0,
               L.pointwise(
                   n, x.dtype, m.sizes,
                   [&](auto& o) {
                     size_t bstart = adjacent ? size_t(first) : 0;
                     std::vector<IndexExpr> b(o.begin() + std::ptrdiff_t(bstart),
                                              o.begin() + std::ptrdiff_t(bstart + brank));
                     std::vector<IndexExpr> in(R);
                     size_t next = adjacent ? 0 : brank; // the next free coordinate of o
                     for (size_t k = 0; k < R; ++k) {
                       if (idx[k]) {
                         VPtr i = L.bcast(*idx[k], b);
                         VPtr w = v_cast(i, DType::I64);
                         w = v_where(v_binary(VOp::Lt, w, v_const(0, DType::I64)),
                                     v_binary(VOp::Add, w, v_const(double(x.sizes[k]), DType::I64)),
                                     w);
                         in[k] = IndexExpr::indirect(w, std::max<int64_t>(x.sizes[k], 1));
                         continue;
                       }
                       if (adjacent && int(k) > last && next < bstart + brank)
                         next = bstart + brank;
                       in[k] = o[next++];
                     }
                     return L.at(x, in);
                   },
                   ins));
}

/// masked_scatter: element i (row-major over the broadcast shape) where the mask is true takes
/// source's element rank(i), the number of true mask elements before i: a triangular count
/// (O(N^2) work, as the scans lower); past the quadratic limit a CPU plan calls the kernel.
/// That source holds enough elements is the kernel's check (a data-dependent count); here a
/// short source is read clamped.
void lower_masked_scatter(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  int64_t total = numel_of(m.sizes);
  if (cpu_reference_instead(L, n, total * total)) return;
  LVal& self = L.input(n, "self");
  LVal& mask = L.input(n, "mask");
  LVal& src = L.input(n, "source");
  int64_t sn = numel_of(src.sizes);
  LVal mexp =
      L.pointwise(n, DType::Bool, m.sizes,
                  [&](auto& idx) { return v_cast(L.bcast(mask, idx), DType::Bool); }, {&mask});
  L.realize(mexp);
  LVal mflat = L.reshape(mexp, {total});
  LVal ranks = reduce_extra(L, n, ReduceOp::Sum, DType::I64, {total}, {total},
                            [&](auto& out, auto& rr) {
                              VPtr take =
                                  v_binary(VOp::And, v_binary(VOp::Lt, i64(rr[0]), i64(out[0])),
                                           L.at(mflat, {rr[0]}));
                              return v_where(take, v_const(1, DType::I64), v_const(0, DType::I64));
                            },
                            {&mflat});
  LVal sflat = sn > 0 ? L.reshape(src, {sn}) : src;
  std::vector<int64_t> strides = contiguous_strides(m.sizes);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr keep = v_cast(L.bcast(self, idx), m.dtype);
                             if (sn == 0) return keep;
                             VPtr r = L.at(ranks, {linear_index(idx, strides)});
                             VPtr v = v_cast(L.at(sflat, {IndexExpr::indirect(r, sn)}), m.dtype);
                             return v_where(L.at(mexp, idx), v, keep);
                           },
                           {&self, &mexp, &ranks, &sflat}));
}

const OpTable<LowerFn>::Row kIndexingRules[] = {
    {OpId::embedding, lower_embedding},           {OpId::gather, lower_gather},
    {OpId::index_Tensor, lower_index_tensor},     {OpId::index_select, lower_index_select},
    {OpId::masked_scatter, lower_masked_scatter},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> indexing_rules() {
  return kIndexingRules;
}

} // namespace fxc::lower_detail
