// Lowering of 1-D and 3-D convolution (ungrouped, not transposed) as im2col over the spatial
// dims (a pointwise buffer), one batched GEMM with the weight broadcast over the batch, and the
// bias as a pointwise epilogue that fuses with what follows. The spatial dims are handled as
// three, the missing ones of size 1 in front.
#include "passes/lower/lower_util.h"

namespace fxc::lower_detail {

bool lower_conv_nd_im2col(Lowerer& L, int n, LVal& x, LVal& w, const LVal* bias,
                          const std::vector<int64_t>& st, const std::vector<int64_t>& pd,
                          const std::vector<int64_t>& dl) {
  const TensorMeta& m = L.out_meta(n);
  const size_t R = x.sizes.size();
  if (R < 3 || R > 5 || w.sizes.size() != R || m.sizes.size() != R || w.sizes[1] != x.sizes[1])
    return false;
  const size_t sp = R - 2, pad = 3 - sp;
  auto fit = [&](const std::vector<int64_t>& v, int64_t unit, std::array<int64_t, 3>& out) {
    if (v.size() != 1 && v.size() != sp) return false;
    for (size_t i = 0; i < 3; ++i) out[i] = i < pad ? unit : v.size() == 1 ? v[0] : v[i - pad];
    return true;
  };
  std::array<int64_t, 3> S, P, D, I, K, OS;
  if (!fit(st, 1, S) || !fit(pd, 0, P) || !fit(dl, 1, D)) return false;
  for (size_t i = 0; i < 3; ++i) {
    I[i] = i < pad ? 1 : x.sizes[2 + i - pad];
    K[i] = i < pad ? 1 : w.sizes[2 + i - pad];
    OS[i] = i < pad ? 1 : m.sizes[2 + i - pad];
  }
  const int64_t N = x.sizes[0], C = x.sizes[1], O = w.sizes[0];
  const int64_t KV = K[0] * K[1] * K[2], CK = C * KV, Lo = OS[0] * OS[1] * OS[2];
  // cols[n, (c, kd, kh, kw), (od, oh, ow)]: the input under each window position, 0 in the
  // padding.
  LVal cols = L.pointwise(n, x.dtype, {N, CK, Lo},
                          [&](auto& idx) {
                            IndexExpr c = idx[1].floordiv(KV);
                            IndexExpr k[3] = {idx[1].floordiv(K[1] * K[2]).mod(K[0]),
                                              idx[1].floordiv(K[2]).mod(K[1]), idx[1].mod(K[2])};
                            IndexExpr o[3] = {idx[2].floordiv(OS[1] * OS[2]),
                                              idx[2].floordiv(OS[2]).mod(OS[1]), idx[2].mod(OS[2])};
                            std::vector<IndexExpr> at = {idx[0], c};
                            VPtr inside;
                            for (size_t i = pad; i < 3; ++i) {
                              IndexExpr e = o[i] * S[i] + k[i] * D[i] - IndexExpr(P[i]);
                              IndexExpr ce = clamped(e, I[i]);
                              at.push_back(ce);
                              if (ce == e) continue;
                              VPtr ok = v_binary(VOp::And, index_ge(e, 0), index_lt(e, I[i]));
                              inside = inside ? v_binary(VOp::And, inside, ok) : ok;
                            }
                            VPtr v = L.at(x, at);
                            return inside ? v_where(inside, v, v_const(0, x.dtype)) : v;
                          },
                          {&x});
  LVal wb = L.view(n, w, {N, O, CK}, [&](auto& idx) {
    std::vector<IndexExpr> at = {idx[1], idx[2].floordiv(KV)};
    IndexExpr k[3] = {idx[2].floordiv(K[1] * K[2]).mod(K[0]), idx[2].floordiv(K[2]).mod(K[1]),
                      idx[2].mod(K[2])};
    for (size_t i = pad; i < 3; ++i) at.push_back(k[i]);
    return at;
  });
  LVal prod = L.gemm(n, wb, cols, {N, O, Lo});
  LVal out = L.reshape(prod, m.sizes);
  DType t = m.dtype;
  L.set_output(n, 0,
               L.pointwise(n, t, m.sizes,
                           [&](auto& idx) {
                             VPtr p = L.at(out, idx);
                             if (bias) p = v_binary(VOp::Add, p, v_cast(L.at(*bias, {idx[1]}), t));
                             return p;
                           },
                           {bias}));
  return true;
}

} // namespace fxc::lower_detail
