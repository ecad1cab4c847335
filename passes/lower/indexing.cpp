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

const OpTable<LowerFn>::Row kIndexingRules[] = {
    {OpId::embedding, lower_embedding},
    {OpId::gather, lower_gather},
    {OpId::index_select, lower_index_select},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> indexing_rules() {
  return kIndexingRules;
}

} // namespace fxc::lower_detail
