// Lowering rules of the random ops and of native_dropout_backward.
//
// Philox4x32-10 (frontend/philox.h) written as int64 loop-IR operations on 32-bit lanes: a round's
// 32x32 -> 64-bit products are int64 multiplications (wrapping), their halves shifts and masks.
// The key (the seed) and the stream (the node's name) are constants of the kernel; the counter is
// the element's row-major index. The conversions to uniform, normal, integer and Bernoulli
// samples are the reference kernels' (runtime/kernels/random.cpp), operation for operation in
// float64, so the generated code (CPU and CUDA) computes the numbers eager computes. randperm
// sorts the keys by ranks, as the sort lowering does (a device kernel on CUDA).
#include "passes/lower/lower_util.h"

#include "frontend/philox.h"

namespace fxc::lower_detail {
namespace {

constexpr int64_t kLow32 = 0xFFFFFFFFll;

VPtr ic(int64_t v) {
  auto e = std::make_shared<VExpr>();
  e->op = VOp::Const;
  e->dtype = DType::I64;
  e->ival = v;
  return e;
}
VPtr op(VOp o, VPtr a, VPtr b) {
  return v_binary(o, std::move(a), std::move(b));
}
VPtr f64(double v) {
  return v_const(v, DType::F64);
}

/// The four 32-bit words (in int64 lanes) of the block of element `index` of node n.
std::array<VPtr, 4> philox_block(const Lowerer& L, int n, const VPtr& index) {
  uint64_t seed = philox::generator_seed();
  uint64_t stream = philox::node_stream(L.node(n).name);
  std::array<VPtr, 4> c = {op(VOp::BitAnd, index, ic(kLow32)), op(VOp::Shr, index, ic(32)),
                           ic(int64_t(stream & 0xFFFFFFFFu)), ic(int64_t(stream >> 32))};
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < philox::kRounds; ++r) {
    VPtr p0 = op(VOp::Mul, ic(philox::kM0), c[0]);
    VPtr p1 = op(VOp::Mul, ic(philox::kM1), c[2]);
    VPtr hi0 = op(VOp::BitAnd, op(VOp::Shr, p0, ic(32)), ic(kLow32));
    VPtr hi1 = op(VOp::BitAnd, op(VOp::Shr, p1, ic(32)), ic(kLow32));
    c = {op(VOp::BitXor, op(VOp::BitXor, hi1, c[1]), ic(k0)), op(VOp::BitAnd, p1, ic(kLow32)),
         op(VOp::BitXor, op(VOp::BitXor, hi0, c[3]), ic(k1)), op(VOp::BitAnd, p0, ic(kLow32))};
    k0 += philox::kW0;
    k1 += philox::kW1;
  }
  return c;
}

/// The row-major index of element `idx` of a tensor of `sizes`, as int64.
VPtr element_index(const std::vector<int64_t>& sizes, const std::vector<IndexExpr>& idx) {
  return v_index(linear_index(idx, contiguous_strides(sizes)), DType::I64);
}

/// philox::uniform: a float64 in [0, 1) with the random bits of `t`.
VPtr uniform(const std::array<VPtr, 4>& w, DType t) {
  int bits = philox::uniform_bits(t);
  VPtr v = bits == 53 ? op(VOp::BitOr, op(VOp::Shl, w[0], ic(21)), op(VOp::Shr, w[1], ic(11)))
                      : op(VOp::Shr, w[0], ic(32 - bits));
  return op(VOp::Mul, v_cast(v, DType::F64), f64(std::ldexp(1.0, -bits)));
}

/// philox::normal (Box-Muller in float64).
VPtr normal(const std::array<VPtr, 4>& w) {
  VPtr u1 = op(VOp::Mul, op(VOp::Add, v_cast(w[0], DType::F64), f64(1.0)), f64(0x1p-32));
  VPtr u2 = op(VOp::Mul, v_cast(w[1], DType::F64), f64(0x1p-32));
  VPtr r = v_unary(VOp::Sqrt, op(VOp::Mul, f64(-2.0), v_unary(VOp::Log, u1)));
  return op(VOp::Mul, r, v_unary(VOp::Cos, op(VOp::Mul, f64(philox::kTwoPi), u2)));
}

/// philox::bits63.
VPtr bits63(const std::array<VPtr, 4>& w) {
  return op(VOp::BitAnd, op(VOp::BitOr, op(VOp::Shl, w[2], ic(32)), w[3]),
            ic(0x7FFFFFFFFFFFFFFFll));
}

void lower_floats(Lowerer& L, int n, bool is_normal) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             auto w = philox_block(L, n, element_index(m.sizes, idx));
                             return v_cast(is_normal ? normal(w) : uniform(w, m.dtype), m.dtype);
                           },
                           {}));
}
void lower_rand(Lowerer& L, int n) {
  lower_floats(L, n, false);
}
void lower_randn(Lowerer& L, int n) {
  lower_floats(L, n, true);
}

void lower_randint(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  int64_t low = nd.schema->index_of("low") >= 0 ? nd.arg("low").i : 0, high = nd.arg("high").i;
  if (low >= high) L.fail(n, "random_ expects 'from' to be less than 'to'");
  uint64_t range = uint64_t(high) - uint64_t(low);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr r = bits63(philox_block(L, n, element_index(m.sizes, idx)));
                             // A range of 2^63 or more keeps every 63-bit value (r < range).
                             if (range <= uint64_t(INT64_MAX))
                               r = op(VOp::Remainder, r, ic(int64_t(range)));
                             return v_cast(op(VOp::Add, ic(low), r), m.dtype);
                           },
                           {}));
}

/// u < q with u the 24-bit uniform (float64) and q float64.
VPtr keep(const std::array<VPtr, 4>& w, VPtr q) {
  return op(VOp::Lt, uniform(w, DType::F32), std::move(q));
}

void lower_bernoulli(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  bool scalar_p = nd.schema->index_of("p") >= 0;
  double p = scalar_p ? nd.arg("p").f : 0;
  LVal& x = L.input(n, "self");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             auto w = philox_block(L, n, element_index(m.sizes, idx));
                             VPtr q = scalar_p ? f64(p) : v_cast(L.at(x, idx), DType::F64);
                             return v_cast(keep(w, q), m.dtype);
                           },
                           {&x}));
}

/// x * scale as the reference kernel computes it: in float64 (exact for the narrower types),
/// rounded once to the dtype.
VPtr scaled(const VPtr& x, double s, DType t) {
  if (t != DType::F64) s = double(float(s));
  return v_cast(op(VOp::Mul, v_cast(x, DType::F64), f64(s)), t);
}

void lower_native_dropout(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  double p = nd.arg("p").f;
  const Arg& train = nd.arg("train");
  LVal& x = L.input(n, "input");
  if (!train.is_none() && !train.b) {
    L.set_output(n, 0, x);
    L.set_output(
        n, 1,
        L.pointwise(n, DType::Bool, m.sizes, [&](auto&) { return v_const(1, DType::Bool); }, {}));
    return;
  }
  double s = p == 1 ? 0.0 : 1.0 / (1.0 - p);
  LVal mask =
      L.pointwise(n, DType::Bool, m.sizes,
                  [&](auto& idx) {
                    return keep(philox_block(L, n, element_index(m.sizes, idx)), f64(1.0 - p));
                  },
                  {});
  L.realize(mask);
  LVal out = L.pointwise(n, m.dtype, m.sizes,
                         [&](auto& idx) {
                           return v_where(L.at(mask, idx), scaled(L.at(x, idx), s, m.dtype),
                                          v_const(0, m.dtype));
                         },
                         {&x, &mask});
  L.set_output(n, 0, out);
  L.set_output(n, 1, mask);
}

void lower_native_dropout_backward(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  double s = L.node(n).arg("scale").f;
  LVal& g = L.input(n, "grad_output");
  LVal& mask = L.input(n, "mask");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             return v_where(v_cast(L.bcast(mask, idx), DType::Bool),
                                            scaled(L.bcast(g, idx), s, m.dtype),
                                            v_const(0, m.dtype));
                           },
                           {&g, &mask}));
}

/// randperm: the indices 0..n-1 stably sorted by their keys bits63(block(i)): the rank of i
/// counts the j before it, and position k holds the j of rank k.
void lower_randperm(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  int64_t len = L.node(n).arg("n").i;
  if (cpu_reference_instead(L, n, 2 * len * len)) return;
  LVal keys = L.pointwise(
      n, DType::I64, {len},
      [&](auto& idx) { return bits63(philox_block(L, n, element_index({len}, idx))); }, {});
  L.realize(keys);
  LVal ranks = reduce_extra(L, n, ReduceOp::Sum, DType::I64, {len}, {len},
                            [&](auto& out, auto& rr) {
                              VPtr ki = L.at(keys, out), kj = L.at(keys, {rr[0]});
                              VPtr earlier = op(VOp::Lt, i64(rr[0]), i64(out[0]));
                              VPtr before = op(VOp::Or, op(VOp::Lt, kj, ki),
                                               op(VOp::And, op(VOp::Eq, kj, ki), earlier));
                              return v_where(before, ic(1), ic(0));
                            },
                            {&keys});
  LVal perm = reduce_extra(L, n, ReduceOp::Max, DType::I64, {len}, {len},
                           [&](auto& out, auto& rr) {
                             VPtr hit = op(VOp::Eq, L.at(ranks, {rr[0]}), i64(out[0]));
                             return v_where(hit, i64(rr[0]), ic(-1));
                           },
                           {&ranks});
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, {len},
                           [&](auto& idx) { return v_cast(L.at(perm, idx), m.dtype); }, {&perm}));
}

const OpTable<LowerFn>::Row kRandomRules[] = {
    {OpId::bernoulli, lower_bernoulli},
    {OpId::bernoulli_p, lower_bernoulli},
    {OpId::native_dropout, lower_native_dropout},
    {OpId::native_dropout_backward, lower_native_dropout_backward},
    {OpId::rand, lower_rand},
    {OpId::rand_like, lower_rand},
    {OpId::randint, lower_randint},
    {OpId::randint_low, lower_randint},
    {OpId::randn, lower_randn},
    {OpId::randn_like, lower_randn},
    {OpId::randperm, lower_randperm},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> random_rules() {
  return kRandomRules;
}

} // namespace fxc::lower_detail
