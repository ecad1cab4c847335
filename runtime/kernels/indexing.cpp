// Reference kernels of the indexing ops: embedding, gather, index_select, index.Tensor
// (advanced indexing) and scatter_add, with PyTorch's index range checks.
#include "runtime/kernels/kernel_util.h"

namespace fxc::kernel_detail {
namespace {

// ---- Indexing ----

Tensors k_embedding(const KernelCall& c) {
  const Tensor& w = c.tensor("weight");
  const Tensor& idx = c.tensor("indices");
  if (w.dim() != 2) fail("embedding expects a 2-D weight, got " + shape_str(w.sizes()));
  if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
    fail("expected indices of type i64 or i32 for embedding, got " + dname(idx.dtype()));
  int64_t V = w.size(0), D = w.size(1);
  Shape shape = idx.sizes();
  shape.push_back(D);
  Tensor out = Tensor::empty(c.result_dtype(w.dtype()), shape);
  std::vector<int64_t> off = all_offsets(idx);
  for (size_t i = 0; i < off.size(); ++i) {
    int64_t r = idx.load_int(off[i]);
    if (r < 0 || r >= V)
      fail("embedding: index " + std::to_string(r) + " is out of range for a table of " +
           std::to_string(V) + " rows");
    for (int64_t j = 0; j < D; ++j)
      out.store(int64_t(i) * D + j, w.load(r * w.stride(0) + j * w.stride(1)));
  }
  return {out};
}

void check_index_dtype(const Tensor& t, const char* op) {
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
    fail(std::string(op) + ": expected an i64 or i32 index tensor, got " + dname(t.dtype()));
}

Tensors k_gather(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& index = c.tensor("index");
  check_index_dtype(index, "gather()");
  int64_t r = std::max<int64_t>(x.dim(), 1);
  int64_t dim = wrap(c.arg("dim").i, x.dim());
  if (std::max<int64_t>(index.dim(), 1) != r)
    fail("gather(): index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < index.dim(); ++d)
    if (d != dim && index.size(d) > (x.dim() ? x.size(d) : 1))
      fail("gather(): size of dimension " + std::to_string(d) + " of index " +
           shape_str(index.sizes()) + " exceeds that of input " + shape_str(x.sizes()));
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), index.sizes());
  int64_t dsize = x.dim() ? x.size(dim) : 1;
  int64_t n = index.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, xoff = 0, ioff = 0, v = 0;
    std::vector<int64_t> mi(size_t(index.dim()));
    for (int64_t d = index.dim() - 1; d >= 0; --d) {
      mi[size_t(d)] = rem % index.size(d);
      rem /= index.size(d);
      ioff += mi[size_t(d)] * index.stride(d);
    }
    v = index.load_int(ioff);
    if (v < 0 || v >= dsize)
      fail("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
           " with size " + std::to_string(dsize));
    for (int64_t d = 0; d < x.dim(); ++d) xoff += (d == dim ? v : mi[size_t(d)]) * x.stride(d);
    out.store(i, x.load(xoff));
  }
  return {out};
}

Tensors k_index_select(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& index = c.tensor("index");
  check_index_dtype(index, "index_select");
  if (index.dim() > 1)
    fail("index_select(): index must be 0-D or 1-D, got " + shape_str(index.sizes()));
  int64_t dim = wrap(c.arg("dim").i, x.dim());
  Tensor xs = x.dim() == 0 ? unsqueeze_view(x, 0) : x;
  std::vector<int64_t> idx;
  for (int64_t off : all_offsets(index)) idx.push_back(index.load_int(off));
  int64_t dsize = xs.size(dim);
  for (int64_t v : idx)
    if (v < 0 || v >= dsize)
      fail("index_select(): index " + std::to_string(v) + " is out of range for dimension " +
           std::to_string(dim) + " with size " + std::to_string(dsize));
  Shape os = xs.sizes();
  os[size_t(dim)] = int64_t(idx.size());
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), x.dim() == 0 ? Shape{} : os);
  Tensor ov = x.dim() == 0 ? unsqueeze_view(out, 0) : out;
  for (size_t j = 0; j < idx.size(); ++j) {
    Shape ss = xs.sizes(), sst = xs.strides();
    ss[size_t(dim)] = 1;
    Tensor src = view_of(xs, ss, sst, xs.storage_offset() + idx[j] * xs.stride(dim));
    Shape ds = ov.sizes();
    ds[size_t(dim)] = 1;
    Tensor dst = view_of(ov, ds, ov.strides(), ov.storage_offset() + int64_t(j) * ov.stride(dim));
    dst.copy_from(src);
  }
  return {out};
}

// The index list of x[indices] with boolean masks expanded into one long index per masked dim
// (their nonzero positions).
std::vector<Tensor> expand_masks(const Tensor& x, const std::vector<Tensor>& list) {
  std::vector<Tensor> idx;
  // Boolean masks expand into one long index per masked dim (their nonzero positions).
  for (const Tensor& t : list) {
    if (!t.defined() || (t.dtype() != DType::Bool && t.dtype() != DType::U8)) {
      if (t.defined() && !is_integral(t.dtype()))
        fail("tensors used as indices must be long, int, byte or bool tensors, got " +
             dname(t.dtype()));
      idx.push_back(t);
      continue;
    }
    int64_t first = int64_t(idx.size());
    for (int64_t d = 0; d < t.dim(); ++d)
      if (first + d >= x.dim() || x.size(first + d) != t.size(d))
        fail("the shape of the mask " + shape_str(t.sizes()) + " at index " + std::to_string(d) +
             " does not match the shape of the indexed tensor " + shape_str(x.sizes()));
    std::vector<std::vector<double>> coords(size_t(t.dim()));
    std::vector<int64_t> off = all_offsets(t);
    for (size_t i = 0; i < off.size(); ++i) {
      if (t.load(off[i]) == 0) continue;
      int64_t rem = int64_t(i);
      for (int64_t d = t.dim() - 1; d >= 0; --d) {
        coords[size_t(d)].push_back(double(rem % t.size(d)));
        rem /= t.size(d);
      }
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      std::vector<double>& p = coords[size_t(d)];
      idx.push_back(make(DType::I64, {int64_t(p.size())}, p));
    }
  }
  return idx;
}

// Advanced indexing: x[indices] with None entries for untouched dims.
Tensors k_index(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  std::vector<Tensor> idx = expand_masks(x, c.list("indices"));
  if (int64_t(idx.size()) > x.dim())
    fail("too many indices for tensor of dimension " + std::to_string(x.dim()) + " (got " +
         std::to_string(idx.size()) + ")");
  idx.resize(size_t(x.dim()));
  std::vector<int64_t> pos;
  Shape bshape;
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d].defined()) {
      pos.push_back(int64_t(d));
      bshape = broadcast(bshape, idx[d].sizes());
    }
  if (pos.empty()) return {x.clone()};
  bool adjacent = pos.back() - pos.front() + 1 == int64_t(pos.size());
  // Output dims: [before..., B..., after...] when adjacent, else [B..., rest...].
  Shape rest_before, rest_after;
  std::vector<int64_t> rest_dims_before, rest_dims_after;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (idx[size_t(d)].defined()) continue;
    if (adjacent && d < pos.front())
      rest_dims_before.push_back(d);
    else
      rest_dims_after.push_back(d);
  }
  Shape out_shape;
  for (int64_t d : rest_dims_before) out_shape.push_back(x.size(d));
  out_shape.insert(out_shape.end(), bshape.begin(), bshape.end());
  for (int64_t d : rest_dims_after) out_shape.push_back(x.size(d));
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), out_shape);
  int64_t n = out.numel();
  Tensors bidx;
  std::vector<std::vector<int64_t>> boff;
  for (int64_t d : pos) {
    bidx.push_back(expand_to(idx[size_t(d)], bshape));
    boff.push_back(all_offsets(bidx.back()));
  }
  int64_t nb = checked_numel(bshape);
  int64_t nbefore = 1, nafter = 1;
  for (int64_t d : rest_dims_before) nbefore *= x.size(d);
  for (int64_t d : rest_dims_after) nafter *= x.size(d);
  auto rest_offsets = [&](const std::vector<int64_t>& dims) {
    Shape s, st;
    for (int64_t d : dims) {
      s.push_back(x.size(d));
      st.push_back(x.stride(d));
    }
    return dim_offsets(s, st);
  };
  std::vector<int64_t> before_off = rest_offsets(rest_dims_before),
                       after_off = rest_offsets(rest_dims_after);
  for (int64_t bi = 0; bi < nb && n > 0; ++bi) {
    int64_t src = 0;
    for (size_t j = 0; j < pos.size(); ++j) {
      int64_t v = bidx[j].load_int(boff[j][size_t(bi)]);
      int64_t size = x.size(pos[j]);
      if (v < -size || v >= size)
        fail("index " + std::to_string(v) + " is out of bounds for dimension " +
             std::to_string(pos[j]) + " with size " + std::to_string(size));
      if (v < 0) v += size;
      src += v * x.stride(pos[j]);
    }
    for (int64_t a = 0; a < nbefore; ++a)
      for (int64_t r = 0; r < nafter; ++r) {
        int64_t o = (a * nb + bi) * nafter + r;
        out.store(o, x.load(src + before_off[size_t(a)] + after_off[size_t(r)]));
      }
  }
  return {out};
}

Tensors k_scatter_add(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& index = c.tensor("index");
  const Tensor& src = c.tensor("src");
  if (index.dtype() != DType::I64)
    fail("scatter_add(): expected dtype i64 for index, got " + dname(index.dtype()));
  if (src.dtype() != x.dtype())
    fail("scatter_add(): expected self and src to have the same dtype, got " + dname(x.dtype()) +
         " and " + dname(src.dtype()));
  int64_t dim = wrap(c.arg("dim").i, x.dim());
  int64_t r = std::max<int64_t>(x.dim(), 1);
  if (std::max<int64_t>(index.dim(), 1) != r || std::max<int64_t>(src.dim(), 1) != r)
    fail("scatter_add(): index and src must have as many dimensions as self");
  auto size_or_1 = [](const Tensor& t, int64_t d) { return t.dim() ? t.size(d) : 1; };
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (index.size(d) > size_or_1(src, d))
      fail("scatter_add(): expected index " + shape_str(index.sizes()) +
           " to be no larger than src " + shape_str(src.sizes()) + " in every dimension");
    if (d != dim && index.size(d) > size_or_1(x, d))
      fail("scatter_add(): expected index " + shape_str(index.sizes()) +
           " to be no larger than self " + shape_str(x.sizes()) + " apart from dimension " +
           std::to_string(dim));
  }
  DType dt = c.result_dtype(x.dtype());
  std::vector<double> acc = values(x);
  std::vector<int64_t> xstr = contiguous_strides(x.sizes());
  int64_t dsize = size_or_1(x, dim);
  int64_t n = index.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, ioff = 0, soff = 0;
    std::vector<int64_t> mi(size_t(index.dim()));
    for (int64_t d = index.dim() - 1; d >= 0; --d) {
      mi[size_t(d)] = rem % index.size(d);
      rem /= index.size(d);
      ioff += mi[size_t(d)] * index.stride(d);
      soff += mi[size_t(d)] * src.stride(d);
    }
    int64_t v = index.load_int(ioff);
    if (v < 0 || v >= dsize)
      fail("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
           " with size " + std::to_string(dsize));
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d) o += (d == dim ? v : mi[size_t(d)]) * xstr[size_t(d)];
    acc[size_t(o)] += src.load(soff);
  }
  return {make(dt, x.sizes(), acc)};
}

// ---- Issue 18: scatter (.src, .value), scatter_reduce.two, index_put ----

// Scatters src (or a number) into a copy of self along dim. `reduce` is "" (assign), "sum",
// "prod", "mean", "amax" or "amin"; without include_self, the reduced positions start from the
// reduction's identity (mean divides by the count of values it reduced).
Tensor scatter_impl(const Tensor& x, int64_t dim_arg, const Tensor& index, const Tensor* src,
                    double value, const std::string& reduce, bool include_self, DType dt,
                    const char* op) {
  if (index.dtype() != DType::I64)
    fail(std::string(op) + "(): expected dtype i64 for index, got " + dname(index.dtype()));
  if (src && src->dtype() != x.dtype())
    fail(std::string(op) + "(): expected self and src to have the same dtype, got " +
         dname(x.dtype()) + " and " + dname(src->dtype()));
  int64_t dim = wrap(dim_arg, x.dim());
  int64_t r = std::max<int64_t>(x.dim(), 1);
  auto size_or_1 = [](const Tensor& t, int64_t d) { return t.dim() ? t.size(d) : 1; };
  if (index.numel() > 0) {
    if (std::max<int64_t>(index.dim(), 1) != r || (src && std::max<int64_t>(src->dim(), 1) != r))
      fail(std::string(op) + "(): index and src must have as many dimensions as self");
    for (int64_t d = 0; d < index.dim(); ++d) {
      if (src && index.size(d) > size_or_1(*src, d))
        fail(std::string(op) + "(): expected index " + shape_str(index.sizes()) +
             " to be no larger than src " + shape_str(src->sizes()));
      if (d != dim && index.size(d) > size_or_1(x, d))
        fail(std::string(op) + "(): expected index " + shape_str(index.sizes()) +
             " to be no larger than self " + shape_str(x.sizes()) + " apart from dimension " +
             std::to_string(dim));
    }
  }
  std::vector<double> acc = values(x);
  std::vector<int64_t> count(acc.size(), include_self ? 1 : 0);
  std::vector<char> touched(acc.size(), 0);
  std::vector<int64_t> xstr = contiguous_strides(x.sizes());
  const int64_t dsize = size_or_1(x, dim);
  const int64_t n = index.numel();
  std::vector<int64_t> mi(size_t(index.dim()));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, ioff = 0, soff = 0;
    for (int64_t d = index.dim() - 1; d >= 0; --d) {
      mi[size_t(d)] = rem % index.size(d);
      rem /= index.size(d);
      ioff += mi[size_t(d)] * index.stride(d);
      if (src && src->dim()) soff += mi[size_t(d)] * src->stride(d);
    }
    int64_t v = index.load_int(ioff);
    if (v < 0 || v >= dsize)
      fail("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
           " with size " + std::to_string(dsize));
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d) o += (d == dim ? v : mi[size_t(d)]) * xstr[size_t(d)];
    double s = src ? src->load(soff) : value;
    if (!is_floating(dt)) s = double(cast_int(int64_t(s), dt));
    double& a = acc[size_t(o)];
    if (!include_self && !touched[size_t(o)]) {
      touched[size_t(o)] = 1;
      if (reduce == "sum" || reduce == "mean")
        a = 0;
      else if (reduce == "prod")
        a = 1;
      else if (reduce == "amax")
        a = -INFINITY;
      else if (reduce == "amin")
        a = INFINITY;
    }
    if (reduce.empty())
      a = s;
    else if (reduce == "sum" || reduce == "mean")
      a += s;
    else if (reduce == "prod")
      a *= s;
    else if (reduce == "amax")
      a = nan_max(a, s);
    else if (reduce == "amin")
      a = nan_min(a, s);
    ++count[size_t(o)];
  }
  if (reduce == "mean")
    for (size_t o = 0; o < acc.size(); ++o) {
      if (count[o] == 0) continue;
      acc[o] = is_floating(dt) ? acc[o] / double(count[o]) : std::floor(acc[o] / double(count[o]));
    }
  return make(dt, x.sizes(), acc);
}

Tensors k_scatter(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  bool has_src = c.node.schema->index_of("src") >= 0;
  const Tensor* src = has_src ? &c.tensor("src") : nullptr;
  double value = has_src ? 0.0 : c.arg("value").scalar();
  return {scatter_impl(x, c.arg("dim").i, c.tensor("index"), src, value, "", true,
                       c.result_dtype(x.dtype()), "scatter")};
}

Tensors k_scatter_reduce(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const std::string& r = c.arg("reduce").s;
  if (r != "sum" && r != "prod" && r != "mean" && r != "amax" && r != "amin")
    fail("reduce argument must be either sum, prod, mean, amax or amin, got " + r);
  return {scatter_impl(x, c.arg("dim").i, c.tensor("index"), &c.tensor("src"), 0.0, r,
                       c.arg("include_self").b, c.result_dtype(x.dtype()), "scatter_reduce")};
}

// index_put(self, indices, values, accumulate): a copy of self with self[indices] = values
// (or += values); without accumulate, the last write to a repeated position wins.
Tensors k_index_put(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& vals = c.tensor("values");
  const bool accumulate = c.arg("accumulate").b;
  if (vals.dtype() != x.dtype())
    fail("Index put requires the source and destination dtypes match, got " + dname(x.dtype()) +
         " for the destination and " + dname(vals.dtype()) + " for the source.");
  std::vector<Tensor> idx = expand_masks(x, c.list("indices"));
  if (int64_t(idx.size()) > x.dim())
    fail("too many indices for tensor of dimension " + std::to_string(x.dim()) + " (got " +
         std::to_string(idx.size()) + ")");
  idx.resize(size_t(x.dim()));
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), x.sizes());
  out.copy_from(x);
  std::vector<int64_t> pos;
  Shape bshape;
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d].defined()) {
      pos.push_back(int64_t(d));
      bshape = broadcast(bshape, idx[d].sizes());
    }
  if (pos.empty()) {
    Tensor v = expand_to(vals, x.sizes());
    if (!accumulate) {
      out.copy_from(v);
      return {out};
    }
  }
  bool adjacent = pos.empty() || pos.back() - pos.front() + 1 == int64_t(pos.size());
  std::vector<int64_t> before_dims, after_dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (idx[size_t(d)].defined()) continue;
    (adjacent && !pos.empty() && d < pos.front() ? before_dims : after_dims).push_back(d);
  }
  Shape res_shape;
  for (int64_t d : before_dims) res_shape.push_back(x.size(d));
  res_shape.insert(res_shape.end(), bshape.begin(), bshape.end());
  for (int64_t d : after_dims) res_shape.push_back(x.size(d));
  Shape bc;
  try {
    bc = broadcast_shapes(res_shape, vals.sizes());
  } catch (const std::invalid_argument&) {
  }
  if (bc != res_shape)
    fail("shape mismatch: value tensor of shape " + shape_str(vals.sizes()) +
         " cannot be broadcast to indexing result of shape " + shape_str(res_shape));
  Tensor v = expand_to(vals, res_shape);
  std::vector<int64_t> voff = all_offsets(v);
  Tensors bidx;
  std::vector<std::vector<int64_t>> boff;
  for (int64_t d : pos) {
    bidx.push_back(expand_to(idx[size_t(d)], bshape));
    boff.push_back(all_offsets(bidx.back()));
  }
  const int64_t nb = checked_numel(bshape);
  auto rest_offsets = [&](const std::vector<int64_t>& dims) {
    Shape s, st;
    for (int64_t d : dims) {
      s.push_back(out.size(d));
      st.push_back(out.stride(d));
    }
    return dim_offsets(s, st);
  };
  std::vector<int64_t> before_off = rest_offsets(before_dims), after_off = rest_offsets(after_dims);
  const int64_t nbefore = int64_t(before_off.size()), nafter = int64_t(after_off.size());
  const bool fl = is_floating(out.dtype());
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t dst = 0;
    for (size_t j = 0; j < pos.size(); ++j) {
      int64_t iv = bidx[j].load_int(boff[j][size_t(bi)]);
      int64_t size = x.size(pos[j]);
      if (iv < -size || iv >= size)
        fail("index " + std::to_string(iv) + " is out of bounds for dimension " +
             std::to_string(pos[j]) + " with size " + std::to_string(size));
      if (iv < 0) iv += size;
      dst += iv * out.stride(pos[j]);
    }
    for (int64_t a = 0; a < nbefore; ++a)
      for (int64_t r = 0; r < nafter; ++r) {
        int64_t o = dst + before_off[size_t(a)] + after_off[size_t(r)];
        int64_t vo = voff[size_t((a * nb + bi) * nafter + r)];
        if (fl)
          out.store(o, (accumulate ? out.load(o) : 0.0) + v.load(vo));
        else
          out.store_int(o, accumulate ? wrap_add(out.load_int(o), v.load_int(vo)) : v.load_int(vo));
      }
  }
  return {out};
}

Tensors k_index_put_(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  Tensor r = k_index_put(c)[0];
  self.copy_from(r);
  return {self};
}
// index_add(self, dim, index, source, alpha): self[..., index[j], ...] += alpha * source[..., j,
// ...]; index_fill.int_Scalar: self[..., index[j], ...] = value.
Tensors k_index_add_fill(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& index = c.tensor("index");
  check_index_dtype(index, "index_add");
  if (index.dim() > 1) fail("index must be a vector, got " + shape_str(index.sizes()));
  const bool add = c.node.schema->index_of("source") >= 0;
  const int64_t dim = wrap(c.arg("dim").i, x.dim());
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), x.sizes());
  out.copy_from(x);
  Tensor ov = x.dim() == 0 ? unsqueeze_view(out, 0) : out;
  const int64_t dsize = ov.size(dim);
  std::vector<int64_t> idx;
  for (int64_t off : all_offsets(index)) idx.push_back(index.load_int(off));
  Tensor src;
  if (add) {
    src = c.tensor("source");
    if (src.dtype() != x.dtype())
      fail("index_add(): self and source must have the same dtype, got " + dname(x.dtype()) +
           " and " + dname(src.dtype()));
    if (src.dim() == 0) src = unsqueeze_view(src, 0);
    Shape want = ov.sizes();
    want[size_t(dim)] = int64_t(idx.size());
    if (src.sizes() != want)
      fail("index_add(): source " + shape_str(src.sizes()) + " must be " + shape_str(want));
  }
  const Arg& alpha = add ? c.arg("alpha") : c.arg("value");
  Shape ss = ov.sizes();
  ss[size_t(dim)] = 1;
  std::vector<int64_t> rest = dim_offsets(ss, ov.strides());
  std::vector<int64_t> srest = add ? dim_offsets(ss, src.strides()) : std::vector<int64_t>{};
  const bool fl = is_floating(out.dtype());
  for (size_t j = 0; j < idx.size(); ++j) {
    int64_t v = idx[j];
    // index_fill wraps negative indices; index_add takes [0, size) only, as PyTorch.
    if (v < (add ? 0 : -dsize) || v >= dsize)
      fail("index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(dim) +
           " with size " + std::to_string(dsize));
    if (v < 0) v += dsize;
    for (size_t r = 0; r < rest.size(); ++r) {
      int64_t o = v * ov.stride(dim) + rest[r];
      if (!add) {
        if (fl || alpha.kind == Arg::Kind::Float)
          out.store(o, alpha.scalar());
        else
          out.store_int(o, alpha.kind == Arg::Kind::Bool ? int64_t(alpha.b) : alpha.i);
        continue;
      }
      int64_t so = int64_t(j) * src.stride(dim) + srest[r];
      if (fl)
        out.store(o, out.load(o) + alpha.scalar() * src.load(so));
      else
        out.store_int(
            o, wrap_add(out.load_int(o),
                        wrap_mul(alpha.kind == Arg::Kind::Int ? alpha.i : 1, src.load_int(so))));
    }
  }
  return {out};
}
// ---- End of the issue-18 indexing ----

/// masked_scatter: self (broadcast with mask) with the elements where mask is true replaced, in
/// row-major order, by source's elements in row-major order.
Tensors k_masked_scatter(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  const Tensor& mask = c.tensor("mask");
  const Tensor& src = c.tensor("source");
  if (mask.dtype() != DType::Bool)
    fail("masked_scatter_ only supports boolean masks, but got mask " + dname(mask.dtype()));
  Shape shape = broadcast(self.sizes(), mask.sizes());
  Tensor out = expand_to(self, shape).contiguous().clone();
  Tensor m = expand_to(mask, shape).contiguous();
  Tensor s = src.contiguous();
  int64_t k = 0;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    if (m.load_int(m.offset_of(i)) == 0) continue;
    if (k >= s.numel())
      fail("masked_scatter: expected source to have at least as many elements as ones in mask (" +
           std::to_string(s.numel()) + " elements)");
    if (is_floating(out.dtype()))
      out.store(i, s.load(s.offset_of(k)));
    else
      out.store_int(i, s.load_int(s.offset_of(k)));
    ++k;
  }
  return {out};
}

const OpTable<KernelFn>::Row kIndexingKernels[] = {
    {OpId::embedding, k_embedding},
    {OpId::gather, k_gather},
    {OpId::index_Tensor, k_index},
    {OpId::index_select, k_index_select},
    {OpId::scatter_add, k_scatter_add},
    {OpId::index_put, k_index_put},
    {OpId::index_add, k_index_add_fill},
    {OpId::index_fill_int_Scalar, k_index_add_fill},
    {OpId::index_put_, k_index_put_},
    {OpId::scatter_reduce_two, k_scatter_reduce},
    {OpId::scatter_src, k_scatter},
    {OpId::scatter_value, k_scatter},
    {OpId::masked_scatter, k_masked_scatter},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> indexing_kernels() {
  return kIndexingKernels;
}

} // namespace fxc::kernel_detail
