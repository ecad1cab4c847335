// Lowering rules of the views and copies: views (reshape, permute, transpose, expand, squeeze,
// slice, select, split) as pure index arithmetic, copies as identity values, and cat,
// constant_pad_nd and slice_scatter as selects over bounded indices.
#include "passes/lower/lower_util.h"

#include "frontend/resample.h"

namespace fxc::lower_detail {
namespace {

void lower_copy_like(Lowerer& L, int n) {
  unary(L, n, [](VPtr x) { return x; });
}

void lower_copy(Lowerer& L, int n) {
  const TensorMeta& m = L.out_meta(n);
  LVal& src = L.input(n, "src");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) { return v_cast(L.bcast(src, idx), m.dtype); }, {&src}));
}

// ---- views

void lower_reshape(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  if (numel_of(m.sizes) != numel_of(x.sizes)) L.fail(n, "reshape changes the number of elements");
  LVal r = L.reshape(x, m.sizes);
  if (x.buffer >= 0) r.origins.clear();
  L.set_output(n, 0, r);
}

/// roll: element i along each rolled dim comes from (i - shift) mod size; without dims the
/// flattened tensor rolls by the one shift.
void lower_roll(Lowerer& L, int n) {
  LVal& x0 = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  std::vector<int64_t> shifts = L.node(n).arg("shifts").ints, dims = L.node(n).arg("dims").ints;
  LVal x = x0;
  bool flat = dims.empty();
  if (flat) {
    if (shifts.size() != 1) L.fail(n, "roll without dims takes exactly one shift");
    x = L.reshape(x0, {numel_of(x0.sizes)});
    dims = {0};
  }
  if (shifts.size() != dims.size())
    L.fail(n, "roll needs one shift per dim (" + std::to_string(shifts.size()) + " shifts, " +
                  std::to_string(dims.size()) + " dims)");
  int64_t rank = int64_t(x.sizes.size());
  for (auto& d : dims) d = wrap(L, n, d, std::max<int64_t>(rank, 1));
  if (rank == 0) x = L.reshape(x, {1});
  LVal r = L.view(n, x, x.sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t s = x.sizes[size_t(dims[k])];
      if (s == 0) continue;
      int64_t back = ((-shifts[k]) % s + s) % s; // in = (i - shift) mod s = (i + back) mod s
      in[size_t(dims[k])] = (in[size_t(dims[k])] + IndexExpr(back)).mod(s);
    }
    return in;
  });
  L.set_output(n, 0, r.sizes == m.sizes ? r : L.reshape(r, m.sizes));
}

/// as_strided: element idx is element offset + sum idx_k * stride_k of self's elements in
/// row-major order (the storage an extern call of the reference kernel sees: self laid out
/// contiguously from offset 0); every element read must lie within self.
void lower_as_strided(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  std::vector<int64_t> size = nd.arg("size").ints, stride = nd.arg("stride").ints;
  if (size.size() != stride.size())
    L.fail(n, "as_strided: mismatch in length of strides and shape (" +
                  std::to_string(size.size()) + " sizes, " + std::to_string(stride.size()) +
                  " strides)");
  const Arg& off = nd.arg("storage_offset");
  int64_t offset = off.kind == Arg::Kind::Int ? off.i : 0;
  int64_t total = numel_of(x.sizes);
  if (numel_of(size) > 0) {
    int64_t lo = offset, hi = offset;
    for (size_t k = 0; k < size.size(); ++k) {
      if (stride[k] < 0) L.fail(n, "as_strided: negative strides are not supported");
      hi += (size[k] - 1) * stride[k];
    }
    if (lo < 0 || hi >= total)
      L.fail(n, "as_strided: the view reads elements [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "] of an input of " + std::to_string(total) + " elements");
  }
  LVal flat = L.reshape(x, {total});
  LVal r = L.view(n, flat, size, [&](auto& idx) {
    return std::vector<IndexExpr>{linear_index(idx, stride, offset)};
  });
  L.set_output(n, 0, r.sizes == m.sizes ? r : L.reshape(r, m.sizes));
}

void lower_permute(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  auto dims = L.node(n).arg("dims").ints;
  if (dims.size() != x.sizes.size()) L.fail(n, "permute needs one dim per input dim");
  std::vector<int64_t> sizes;
  for (auto& d : dims) {
    d = wrap(L, n, d, int64_t(x.sizes.size()));
    sizes.push_back(x.sizes[d]);
  }
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in(idx.size());
    for (size_t i = 0; i < dims.size(); ++i) in[dims[i]] = idx[i];
    return in;
  }));
}

void lower_transpose(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  int64_t r = int64_t(x.sizes.size());
  int64_t a = wrap(L, n, L.node(n).arg("dim0").i, r), b = wrap(L, n, L.node(n).arg("dim1").i, r);
  std::vector<int64_t> sizes = x.sizes;
  if (r > 0) std::swap(sizes[a], sizes[b]);
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    if (r > 0) std::swap(in[a], in[b]);
    return in;
  }));
}

void lower_expand(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  if (m.sizes.size() < x.sizes.size()) L.fail(n, "expand to fewer dims");
  L.set_output(n, 0, L.view(n, x, m.sizes, [&](auto& idx) {
    std::vector<IndexExpr> in(x.sizes.size());
    size_t off = idx.size() - in.size();
    for (size_t j = 0; j < in.size(); ++j) in[j] = x.sizes[j] == 1 ? IndexExpr(0) : idx[j + off];
    return in;
  }));
}

/// unsqueeze/squeeze: the same elements with size-1 dims added or removed.
void lower_same_order_view(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  LVal r = L.reshape(x, m.sizes);
  if (x.buffer >= 0) r.origins.clear();
  L.set_output(n, 0, r);
}

void lower_slice(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(x.sizes.size()));
  int64_t size = x.sizes[d];
  int64_t start = nd.arg("start").is_none() ? 0 : nd.arg("start").i;
  int64_t end = nd.arg("end").is_none() ? size : nd.arg("end").i;
  int64_t step = nd.arg("step").i;
  if (step <= 0) L.fail(n, "slice step must be positive");
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  std::vector<int64_t> sizes = x.sizes;
  sizes[d] = (end - start + step - 1) / step;
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    in[d] = idx[d] * step + IndexExpr(start);
    return in;
  }));
}

void lower_select(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(x.sizes.size()));
  int64_t i = nd.arg("index").i;
  if (i < 0) i += x.sizes[d];
  if (i < 0 || i >= x.sizes[d]) L.fail(n, "select index out of range");
  std::vector<int64_t> sizes = x.sizes;
  sizes.erase(sizes.begin() + d);
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    in.insert(in.begin() + d, IndexExpr(i));
    return in;
  }));
}

// diagonal: the last output dim k walks dim1 and dim2 together from (max(-offset, 0),
// max(offset, 0)); the other dims keep their order.
void lower_diagonal(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  int64_t R = int64_t(x.sizes.size());
  int64_t d1 = wrap(L, n, nd.arg("dim1").i, R), d2 = wrap(L, n, nd.arg("dim2").i, R);
  int64_t off = nd.arg("offset").i;
  const TensorMeta& m = L.out_meta(n);
  int64_t r0 = std::max<int64_t>(-off, 0), c0 = std::max<int64_t>(off, 0);
  L.set_output(n, 0, L.view(n, x, m.sizes, [&](auto& idx) {
    std::vector<IndexExpr> in;
    size_t j = 0;
    for (int64_t d = 0; d < R; ++d) {
      if (d == d1)
        in.push_back(idx.back() + IndexExpr(r0));
      else if (d == d2)
        in.push_back(idx.back() + IndexExpr(c0));
      else
        in.push_back(idx[j++]);
    }
    return in;
  }));
}

void lower_split(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const Node& nd = L.node(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(x.sizes.size()));
  int64_t start = 0;
  for (size_t k = 0; k < nd.outputs.size(); ++k) {
    std::vector<int64_t> sizes = L.g().values[nd.outputs[k]].meta.sizes;
    if (sizes.size() != x.sizes.size()) L.fail(n, "split output has the wrong rank");
    int64_t s0 = start;
    L.set_output(n, int(k), L.view(n, x, sizes, [&](auto& idx) {
      std::vector<IndexExpr> in = idx;
      in[d] = idx[d] + IndexExpr(s0);
      return in;
    }));
    start += sizes[d];
  }
  if (start > x.sizes[d]) L.fail(n, "split sizes exceed the input");
}

// ---- indexing with bounds: cat, padding, slice_scatter

void lower_cat(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  const TensorMeta& m = L.out_meta(n);
  std::vector<LVal*> parts;
  for (ValueId v : nd.arg("tensors").tensors) {
    LVal& t = L.val(n, v);
    // Legacy empty 1-D tensors take no part, as in PyTorch.
    if (t.sizes.size() == 1 && t.sizes[0] == 0 && m.sizes.size() != 1) continue;
    parts.push_back(&t);
  }
  if (parts.empty()) L.fail(n, "cat of no tensors");
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(m.sizes.size()));
  std::vector<int64_t> offsets;
  int64_t off = 0;
  for (LVal* t : parts) {
    if (t->sizes.size() != m.sizes.size()) L.fail(n, "cat inputs differ in rank");
    offsets.push_back(off);
    off += t->sizes[d];
  }
  if (off != m.sizes[d]) L.fail(n, "cat sizes do not add up to the output");
  std::vector<const LVal*> ins(parts.begin(), parts.end());
  L.set_output(n, 0,
               L.pointwise(
                   n, m.dtype, m.sizes,
                   [&](auto& idx) {
                     VPtr v;
                     for (size_t k = parts.size(); k-- > 0;) {
                       if (parts[k]->sizes[d] == 0) continue;
                       std::vector<IndexExpr> in = idx;
                       in[d] = clamped(idx[d] - IndexExpr(offsets[k]), parts[k]->sizes[d]);
                       VPtr here = v_cast(L.at(*parts[k], in), m.dtype);
                       v = v ? v_where(index_lt(idx[d], offsets[k] + parts[k]->sizes[d]), here, v)
                             : here;
                     }
                     return v ? v : v_const(0, m.dtype);
                   },
                   ins));
}

void lower_constant_pad_nd(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  auto pad = nd.arg("pad").ints;
  double value = nd.arg("value").scalar();
  size_t r = x.sizes.size();
  if (pad.size() % 2 != 0 || pad.size() / 2 > r || m.sizes.size() != r)
    L.fail(n, "pad needs pairs of sizes for at most every dim");
  std::vector<int64_t> lo(r, 0);
  for (size_t j = 0; j < pad.size() / 2; ++j) lo[r - 1 - j] = pad[2 * j];
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             std::vector<IndexExpr> in(r);
                             VPtr inside;
                             for (size_t d = 0; d < r; ++d) {
                               IndexExpr e = idx[d] - IndexExpr(lo[d]);
                               in[d] = clamped(e, x.sizes[d]);
                               if (in[d] == e) continue;
                               VPtr ok =
                                   v_binary(VOp::And, index_ge(e, 0), index_lt(e, x.sizes[d]));
                               inside = inside ? v_binary(VOp::And, inside, ok) : ok;
                             }
                             if (numel_of(x.sizes) == 0) return v_const(value, m.dtype);
                             VPtr v = v_cast(L.at(x, in), m.dtype);
                             return inside ? v_where(inside, v, v_const(value, m.dtype)) : v;
                           },
                           {&x}));
}

void lower_slice_scatter(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& self = L.input(n, "self");
  LVal& src = L.input(n, "src");
  const TensorMeta& m = L.out_meta(n);
  int64_t d = wrap(L, n, nd.arg("dim").i, int64_t(self.sizes.size()));
  int64_t size = self.sizes[d];
  int64_t start = nd.arg("start").is_none() ? 0 : nd.arg("start").i;
  int64_t end = nd.arg("end").is_none() ? size : nd.arg("end").i;
  int64_t step = nd.arg("step").i;
  if (step <= 0) L.fail(n, "slice_scatter step must be positive");
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  if (src.sizes.size() != self.sizes.size() || src.sizes[d] != (end - start + step - 1) / step)
    L.fail(n, "slice_scatter source does not fit the slice");
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr base = v_cast(L.at(self, idx), m.dtype);
                             if (src.sizes[d] == 0) return base;
                             IndexExpr rel = idx[d] - IndexExpr(start);
                             std::vector<IndexExpr> in = idx;
                             in[d] = clamped(rel.floordiv(step), src.sizes[d]);
                             VPtr hit = v_binary(VOp::And, index_ge(rel, 0), index_lt(idx[d], end));
                             if (step != 1)
                               hit = v_binary(VOp::And, hit,
                                              v_binary(VOp::Eq, v_index(rel.mod(step), DType::I64),
                                                       v_const(0, DType::I64)));
                             return v_where(hit, v_cast(L.at(src, in), m.dtype), base);
                           },
                           {&self, &src}));
}

// ---- index-mapping copies

/// out[idx] = x[map(idx)], or 0 where `keep` (optional) says false.
void gather_rule(Lowerer& L, int n, LVal& x,
                 const std::function<std::vector<IndexExpr>(const std::vector<IndexExpr>&)>& map,
                 const std::function<VPtr(const std::vector<IndexExpr>&)>& keep = nullptr) {
  const TensorMeta& m = L.out_meta(n);
  L.set_output(n, 0,
               L.pointwise(n, m.dtype, m.sizes,
                           [&](auto& idx) {
                             VPtr v = v_cast(L.at(x, map(idx)), m.dtype);
                             if (!keep) return v;
                             return v_where(keep(idx), v, v_const(0, m.dtype));
                           },
                           {&x}));
}

void lower_flip(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  int64_t r = int64_t(x.sizes.size());
  std::vector<bool> f(size_t(r), false);
  for (int64_t d : L.node(n).arg("dims").ints)
    if (r > 0) f[size_t(wrap(L, n, d, r))] = true;
  gather_rule(L, n, x, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    for (size_t d = 0; d < in.size(); ++d)
      if (f[d]) in[d] = IndexExpr(x.sizes[d] - 1) - idx[d];
    return in;
  });
}

void lower_repeat(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  const TensorMeta& m = L.out_meta(n);
  size_t off = m.sizes.size() - x.sizes.size();
  if (numel_of(m.sizes) == 0) {
    L.set_output(n, 0,
                 L.pointwise(n, m.dtype, m.sizes, [&](auto&) { return v_const(0, m.dtype); }, {}));
    return;
  }
  gather_rule(L, n, x, [&](auto& idx) {
    std::vector<IndexExpr> in;
    for (size_t d = 0; d < x.sizes.size(); ++d) in.push_back(idx[d + off].mod(x.sizes[d]));
    return in;
  });
}

void lower_triangle(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  bool lower = L.node(n).target.find("tril") != std::string::npos;
  int64_t k = L.node(n).arg("diagonal").i;
  size_t R = x.sizes.size();
  if (R < 2) L.fail(n, "tril/triu needs at least 2 dims");
  gather_rule(
      L, n, x, [&](auto& idx) { return idx; },
      [&](auto& idx) {
        VPtr diff = v_index(idx[R - 1] - idx[R - 2], DType::I64);
        return v_binary(lower ? VOp::Le : VOp::Ge, diff, v_const(double(k), DType::I64));
      });
}

void lower_pixel_shuffle(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  bool up = nd.schema->index_of("upscale_factor") >= 0;
  int64_t r = nd.arg(up ? "upscale_factor" : "downscale_factor").i;
  size_t C = x.sizes.size() - 3, H = C + 1, W = C + 2;
  gather_rule(L, n, x, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    if (up) {
      in[C] = idx[C] * (r * r) + idx[H].mod(r) * r + idx[W].mod(r);
      in[H] = idx[H].floordiv(r);
      in[W] = idx[W].floordiv(r);
    } else {
      in[C] = idx[C].floordiv(r * r);
      in[H] = idx[H] * r + idx[C].mod(r * r).floordiv(r);
      in[W] = idx[W] * r + idx[C].mod(r);
    }
    return in;
  });
}

/// reflection_pad*d / replication_pad*d, and pad() in those modes: each padded dim reads
/// x at the reflected (|j| mirrored at both ends) or clamped index.
void lower_mode_pad(Lowerer& L, int n) {
  const Node& nd = L.node(n);
  LVal& x = L.input(n, "self");
  bool generic = nd.schema->index_of("mode") >= 0;
  std::string mode = generic                                             ? nd.arg("mode").s
                     : nd.target.find("reflection") != std::string::npos ? "reflect"
                                                                         : "replicate";
  if (mode == "constant") {
    L.fallback(n, "constant pad() not decomposed");
    return;
  }
  auto pad = nd.arg(generic ? "pad" : "padding").ints;
  size_t R = x.sizes.size();
  std::vector<int64_t> lo(R, 0);
  for (size_t j = 0; j < pad.size() / 2 && j < R; ++j) lo[R - 1 - j] = pad[2 * j];
  size_t first = R - std::min(R, pad.size() / 2);
  gather_rule(L, n, x, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    for (size_t d = first; d < R; ++d) {
      int64_t ext = x.sizes[d];
      IndexExpr e = idx[d] - IndexExpr(lo[d]);
      if (mode == "replicate") {
        in[d] = clamped(e, ext);
      } else if (mode == "circular") {
        in[d] = (e + IndexExpr(ext)).mod(ext);
      } else {
        auto [a, b] = e.range();
        if (a >= 0 && b < ext) continue;
        auto c = [](int64_t v) { return v_const(double(v), DType::I64); };
        VPtr j = v_unary(VOp::Abs, v_index(e, DType::I64));
        VPtr r =
            v_binary(VOp::Sub, c(ext - 1), v_unary(VOp::Abs, v_binary(VOp::Sub, c(ext - 1), j)));
        in[d] = IndexExpr::indirect(r, ext);
      }
    }
    return in;
  });
}

void lower_t(Lowerer& L, int n) {
  LVal& x = L.input(n, "self");
  std::vector<int64_t> sizes = x.sizes;
  bool two = sizes.size() == 2;
  if (two) std::swap(sizes[0], sizes[1]);
  L.set_output(n, 0, L.view(n, x, sizes, [&](auto& idx) {
    std::vector<IndexExpr> in = idx;
    if (two) std::swap(in[0], in[1]);
    return in;
  }));
}

const OpTable<LowerFn>::Row kViewRules[] = {
    {OpId::_to_copy, lower_copy_like},
    {OpId::_unsafe_view, lower_reshape},
    {OpId::alias, lower_copy_like},
    {OpId::as_strided, lower_as_strided},
    {OpId::cat, lower_cat},
    {OpId::clone, lower_copy_like},
    {OpId::contiguous, lower_copy_like},
    {OpId::constant_pad_nd, lower_constant_pad_nd},
    {OpId::copy, lower_copy},
    {OpId::detach, lower_copy_like},
    {OpId::positive, lower_copy_like},
    {OpId::real, lower_copy_like},
    {OpId::resolve_conj, lower_copy_like},
    {OpId::resolve_neg, lower_copy_like},
    {OpId::expand, lower_expand},
    {OpId::flatten_using_ints, lower_reshape},
    {OpId::flip, lower_flip},
    {OpId::lift_fresh_copy, lower_copy_like},
    {OpId::pad, lower_mode_pad},
    {OpId::permute, lower_permute},
    {OpId::pixel_shuffle, lower_pixel_shuffle},
    {OpId::pixel_unshuffle, lower_pixel_shuffle},
    {OpId::reflection_pad1d, lower_mode_pad},
    {OpId::reflection_pad2d, lower_mode_pad},
    {OpId::reflection_pad3d, lower_mode_pad},
    {OpId::repeat, lower_repeat},
    {OpId::replication_pad1d, lower_mode_pad},
    {OpId::replication_pad2d, lower_mode_pad},
    {OpId::replication_pad3d, lower_mode_pad},
    {OpId::reshape, lower_reshape},
    {OpId::diagonal, lower_diagonal},
    {OpId::roll, lower_roll},
    {OpId::select_int, lower_select},
    {OpId::slice_Tensor, lower_slice},
    {OpId::slice_scatter, lower_slice_scatter},
    {OpId::split_Tensor, lower_split},
    {OpId::split_with_sizes, lower_split},
    {OpId::squeeze, lower_same_order_view},
    {OpId::squeeze_dim, lower_same_order_view},
    {OpId::squeeze_dims, lower_same_order_view},
    {OpId::t, lower_t},
    {OpId::to_dtype, lower_copy_like},
    {OpId::to_device, lower_copy_like},
    {OpId::to_dtype_layout, lower_copy_like},
    {OpId::transpose_int, lower_transpose},
    {OpId::tril, lower_triangle},
    {OpId::triu, lower_triangle},
    {OpId::unflatten_int, lower_reshape},
    {OpId::unsqueeze, lower_same_order_view},
    {OpId::view, lower_reshape},
};

} // namespace

std::span<const OpTable<LowerFn>::Row> view_rules() {
  return kViewRules;
}

} // namespace fxc::lower_detail
