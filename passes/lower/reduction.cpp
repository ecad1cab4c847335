// Lowering rules of the reductions: sum, mean, amax, any and argmax as reduction buffers, and
// softmax/log_softmax as max, sum of exp and a pointwise result.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {
namespace {

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

/// prod: a product reduction (16-bit floats multiply in float32).
void lower_prod(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  int di = nd.schema->index_of("dim");
  Arg dim = di >= 0 ? nd.args[size_t(di)] : Arg::none();
  auto dims = reduce_dims(L, n, dim, int64_t(x.sizes.size()));
  DType acc = accumulate_type(m.dtype);
  int64_t count = 1;
  for (int64_t d : dims) count *= x.sizes[size_t(d)];
  if (count == 0) { // an empty product is 1
    L.set_output(n, 0, L.pointwise(n, acc, m.sizes, [&](auto&) { return v_const(1, acc); }, {}));
    return;
  }
  L.set_output(n, 0,
               L.reduce(n, ReduceOp::Prod, acc, x.sizes, dims,
                        [&](auto& idx) { return L.at(x, idx); }, {&x}));
}

// Issue 18: amin, argmin, and any over several dims or all of them.
void lower_amin(Lowerer& L, int n) {
  simple_reduce(L, n, ReduceOp::Min, false);
}
void lower_argmin(Lowerer& L, int n) {
  simple_reduce(L, n, ReduceOp::ArgMin, false);
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

const OpTable<LowerFn>::Row kReductionRules[] = {
    {OpId::_log_softmax, lower_log_softmax},
    {OpId::_softmax, lower_softmax},
    {OpId::amax, lower_amax},
    {OpId::amin, lower_amin},
    {OpId::any, lower_any},
    {OpId::any_dims, lower_any},
    {OpId::argmin, lower_argmin},
    {OpId::any_dim, lower_any},
    {OpId::argmax, lower_argmax},
    {OpId::log_softmax_int, lower_log_softmax},
    {OpId::mean, lower_mean},
    {OpId::mean_dim, lower_mean},
    {OpId::prod, lower_prod},
    {OpId::prod_dim_int, lower_prod},
    {OpId::softmax_int, lower_softmax},
    {OpId::sum, lower_sum},
    {OpId::sum_dim_IntList, lower_sum},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> reduction_rules() {
  return kReductionRules;
}

} // namespace fxc::lower_detail
