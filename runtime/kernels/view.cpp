// Reference kernels of the views and copies: views share the input's storage with PyTorch's
// strides (view, reshape, permute, transpose, expand, slice, select, squeeze, split, as_strided
// ...); cat, roll, pad, contiguous, clone, _to_copy, copy and slice_scatter copy.
#include "runtime/kernels/kernel_util.h"

#include "frontend/resample.h"

namespace fxc::kernel_detail {
namespace {

// ---- Joining, padding, scatter ----

Tensors k_cat(const KernelCall& c) {
  const Tensors& ts = c.list("tensors");
  if (ts.empty()) fail("torch.cat(): expected a non-empty list of tensors");
  Tensors used;
  std::optional<DType> common;
  for (const Tensor& t : ts) {
    if (!t.defined()) fail("torch.cat(): expected tensors, got None");
    common = common ? promote_types(*common, t.dtype()) : t.dtype();
    if (!(t.dim() == 1 && t.size(0) == 0)) used.push_back(t); // legacy empty tensors are skipped
  }
  DType dt = c.result_dtype(*common);
  if (used.empty()) return {Tensor::empty(dt, ts[0].sizes())};
  const Tensor& f = used[0];
  if (f.dim() == 0) fail("zero-dimensional tensor cannot be concatenated");
  int64_t dim = wrap(c.arg("dim").i, f.dim());
  Shape shape = f.sizes();
  shape[size_t(dim)] = 0;
  for (size_t i = 0; i < used.size(); ++i) {
    const Tensor& t = used[i];
    if (t.dim() != f.dim())
      fail("tensors must have the same number of dimensions: got " + std::to_string(f.dim()) +
           " and " + std::to_string(t.dim()));
    for (int64_t d = 0; d < f.dim(); ++d)
      if (d != dim && t.size(d) != f.size(d))
        fail("sizes of tensors must match except in dimension " + std::to_string(dim) +
             ". Expected size " + std::to_string(f.size(d)) + " but got size " +
             std::to_string(t.size(d)) + " for tensor number " + std::to_string(i) +
             " in the list");
    shape[size_t(dim)] += t.size(dim);
  }
  Tensor out = Tensor::empty(dt, shape);
  int64_t at = 0;
  for (const Tensor& t : used) {
    Shape s = out.sizes();
    s[size_t(dim)] = t.size(dim);
    view_of(out, s, out.strides(), at * out.stride(dim)).copy_from(t);
    at += t.size(dim);
  }
  return {out};
}

// diff: prepend, self and append concatenated along dim, then n forward differences there
// (for bool, x[i+1] != x[i], as PyTorch's logical_xor).
Tensors k_diff(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  int64_t n = c.arg("n").i;
  Shape sizes = x.sizes();
  int64_t outer = 1, inner = 1;
  for (int64_t e = 0; e < d; ++e) outer *= x.size(e);
  for (int64_t e = d + 1; e < x.dim(); ++e) inner *= x.size(e);
  std::vector<const Tensor*> parts;
  for (const char* name : {"prepend", "self", "append"})
    if (c.tensor(name).defined()) parts.push_back(&c.tensor(name));
  int64_t len = 0;
  for (const Tensor* t : parts) len += t->size(d);
  std::vector<double> cur(size_t(outer * len * inner));
  int64_t at = 0;
  for (const Tensor* t : parts) {
    std::vector<double> v = values(*t);
    int64_t l = t->size(d);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < l; ++j)
        for (int64_t i = 0; i < inner; ++i)
          cur[size_t((o * len + at + j) * inner + i)] = v[size_t((o * l + j) * inner + i)];
    at += l;
  }
  const bool logical = x.dtype() == DType::Bool;
  for (int64_t k = 0; k < n && len > 0; ++k, --len) {
    std::vector<double> next(size_t(outer * (len - 1) * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j + 1 < len; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          double a = cur[size_t((o * len + j) * inner + i)];
          double b = cur[size_t((o * len + j + 1) * inner + i)];
          next[size_t((o * (len - 1) + j) * inner + i)] = logical ? double(a != b) : b - a;
        }
    cur = std::move(next);
  }
  sizes[size_t(d)] = len;
  return {make(c.result_dtype(x.dtype()), sizes, cur)};
}

Tensors k_roll(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& shifts = c.arg("shifts").ints;
  const Shape& dims = c.arg("dims").ints;
  if (dims.empty() && shifts.size() != 1)
    fail("roll: shifts must have one element when dims is empty, got " +
         std::to_string(shifts.size()));
  if (!dims.empty() && dims.size() != shifts.size())
    fail("roll: shifts and dims must align: shifts has " + std::to_string(shifts.size()) +
         " elements, dims has " + std::to_string(dims.size()));
  std::vector<double> v = values(x);
  int64_t n = int64_t(v.size());
  std::vector<double> out(v.size());
  if (dims.empty()) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = ((i + shifts[0]) % n + n) % n;
      out[size_t(j)] = v[size_t(i)];
    }
    return {make(c.result_dtype(x.dtype()), x.sizes(), out)};
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = wrap(dims[k], x.dim());
    int64_t size = x.dim() ? x.size(d) : 1;
    int64_t inner = 1;
    for (int64_t e = d + 1; e < x.dim(); ++e) inner *= x.size(e);
    for (int64_t i = 0; i < n && size > 0; ++i) {
      int64_t coord = (i / inner) % size;
      int64_t nc = ((coord + shifts[k]) % size + size) % size;
      out[size_t(i + (nc - coord) * inner)] = v[size_t(i)];
    }
    v = out;
  }
  return {make(c.result_dtype(x.dtype()), x.sizes(), v)};
}

Tensor constant_pad(const Tensor& x, const Shape& pad, double value, DType dt) {
  if (pad.size() % 2 != 0)
    fail("padding length must be divisible by 2, got " + std::to_string(pad.size()));
  for (int64_t p : pad)
    if (p < -(int64_t(1) << 40) || p > (int64_t(1) << 40))
      fail("padding " + std::to_string(p) + " is out of range");
  if (int64_t(pad.size() / 2) > x.dim())
    fail("padding length " + std::to_string(pad.size()) + " is too large for a " +
         std::to_string(x.dim()) + "-D input");
  Shape lo(size_t(x.dim()), 0), out_shape = x.sizes();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    size_t d = size_t(x.dim()) - 1 - i;
    lo[d] = pad[2 * i];
    out_shape[d] = x.size(int64_t(d)) + pad[2 * i] + pad[2 * i + 1];
    if (out_shape[d] < 0)
      fail("the input size " + std::to_string(x.size(int64_t(d))) + ", plus negative padding " +
           std::to_string(pad[2 * i]) + " and " + std::to_string(pad[2 * i + 1]) +
           " resulted in a negative output size");
  }
  Tensor out = Tensor::empty(dt, out_shape);
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0;
    bool inside = true;
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      int64_t o = rem % out_shape[size_t(d)];
      rem /= out_shape[size_t(d)];
      int64_t s = o - lo[size_t(d)];
      if (s < 0 || s >= x.size(d))
        inside = false;
      else
        src += s * x.stride(d);
    }
    out.store(i, inside ? x.load(src) : value);
  }
  return out;
}

Tensors k_constant_pad_nd(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {constant_pad(x, c.arg("pad").ints, c.arg("value").scalar(), c.result_dtype(x.dtype()))};
}

Tensor mode_pad(const Tensor& x, const Shape& pad, const std::string& mode);

Tensors k_pad(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const std::string& mode = c.arg("mode").s;
  if (mode == "reflect" || mode == "replicate" || mode == "circular")
    return {mode_pad(x, c.arg("pad").ints, mode)};
  if (mode != "constant") fail("unrecognised padding mode '" + mode + "'");
  const Arg& v = c.arg("value");
  return {constant_pad(x, c.arg("pad").ints, v.is_none() ? 0.0 : v.f, c.result_dtype(x.dtype()))};
}

// ---- Views ----

Tensor view_impl(const Tensor& x, const Shape& size) {
  Shape shape = infer_size(size, x.numel());
  Shape st;
  if (!compute_view_strides(x.sizes(), x.strides(), shape, &st))
    fail("view size is not compatible with input tensor's size and stride (at least one dimension "
         "spans across two contiguous subspaces). Use .reshape(...) instead.");
  return view_of(x, shape, st, x.storage_offset());
}

Tensors k_view(const KernelCall& c) {
  return {view_impl(c.tensor("self"), c.arg("size").ints)};
}
Tensors k_reshape(const KernelCall& c) {
  return {reshape_impl(c.tensor("self"), c.arg("shape").ints)};
}

Tensors k_permute(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& dims = c.arg("dims").ints;
  if (int64_t(dims.size()) != x.dim())
    fail("permute(): number of dimensions in the tensor input does not match the length "
         "of the desired ordering of dimensions i.e. input.dim() = " +
         std::to_string(x.dim()) + " is not equal to len(dims) = " + std::to_string(dims.size()));
  Shape s, st;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    int64_t w = wrap(d, x.dim());
    if (seen[size_t(w)]) fail("permute(): duplicate dims are not allowed");
    seen[size_t(w)] = true;
    s.push_back(x.size(w));
    st.push_back(x.stride(w));
  }
  return {view_of(x, s, st, x.storage_offset())};
}

Tensors k_transpose(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  int64_t a = wrap(c.arg("dim0").i, x.dim()), b = wrap(c.arg("dim1").i, x.dim());
  if (x.dim() == 0) return {x};
  Shape s = x.sizes(), st = x.strides();
  std::swap(s[size_t(a)], s[size_t(b)]);
  std::swap(st[size_t(a)], st[size_t(b)]);
  return {view_of(x, s, st, x.storage_offset())};
}

Tensors k_expand(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& size = c.arg("size").ints;
  if (int64_t(size.size()) < x.dim())
    fail("expand: the number of sizes provided (" + std::to_string(size.size()) +
         ") must be greater or equal to the number of dimensions in the tensor (" +
         std::to_string(x.dim()) + ")");
  size_t n = size.size(), k = size_t(x.dim());
  Shape s(n), st(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < n - k) {
      if (size[i] < 0)
        fail("expand: the expanded size of the tensor (" + std::to_string(size[i]) +
             ") isn't allowed in a leading, non-existing dimension " + std::to_string(i));
      s[i] = size[i];
      st[i] = 0;
      continue;
    }
    int64_t d = int64_t(i - (n - k));
    int64_t want = size[i] == -1 ? x.size(d) : size[i];
    if (want == x.size(d)) {
      s[i] = want;
      st[i] = x.stride(d);
    } else if (x.size(d) == 1 && want >= 0) {
      s[i] = want;
      st[i] = 0;
    } else {
      fail("the expanded size of the tensor (" + std::to_string(want) +
           ") must match the existing size (" + std::to_string(x.size(d)) +
           ") at non-singleton dimension " + std::to_string(i) +
           ".  Target sizes: " + shape_str(size) + ".  Tensor sizes: " + shape_str(x.sizes()));
    }
  }
  checked_numel(s);
  return {view_of(x, s, st, x.storage_offset())};
}

Tensor slice_impl(const Tensor& x, int64_t dim, const Arg& start, const Arg& end, int64_t step) {
  if (x.dim() == 0) fail("slice() cannot be applied to a 0-dim tensor");
  int64_t d = wrap(dim, x.dim());
  if (step <= 0) fail("slice step must be positive, got " + std::to_string(step));
  int64_t size = x.size(d);
  int64_t s = start.is_none() ? 0 : start.i, e = end.is_none() ? size : end.i;
  if (s < 0) s = s < -size ? 0 : s + size;
  if (e < 0) e = e < -size ? 0 : e + size;
  s = std::min(s, size);
  e = std::min(e, size);
  if (e < s) e = s;
  int64_t len = (e - s + step - 1) / step;
  Shape sz = x.sizes(), st = x.strides();
  sz[size_t(d)] = len;
  st[size_t(d)] = x.stride(d) * step;
  return view_of(x, sz, st, x.storage_offset() + s * x.stride(d));
}

Tensors k_slice(const KernelCall& c) {
  return {
      slice_impl(c.tensor("self"), c.arg("dim").i, c.arg("start"), c.arg("end"), c.arg("step").i)};
}

Tensors k_select(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("select() cannot be applied to a 0-dim tensor");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  int64_t i = c.arg("index").i, size = x.size(d);
  if (i < -size || i >= size)
    fail("select(): index " + std::to_string(i) + " out of range for tensor of size " +
         shape_str(x.sizes()) + " at dimension " + std::to_string(d));
  if (i < 0) i += size;
  Shape sz = x.sizes(), st = x.strides();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return {view_of(x, sz, st, x.storage_offset() + i * x.stride(d))};
}

Tensors k_diagonal(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() < 2) fail("diagonal() needs a tensor of at least 2 dimensions");
  int64_t d1 = wrap(c.arg("dim1").i, x.dim()), d2 = wrap(c.arg("dim2").i, x.dim());
  if (d1 == d2) fail("diagonal dimensions cannot be identical");
  int64_t off = c.arg("offset").i, s1 = x.size(d1), s2 = x.size(d2);
  int64_t len = off >= 0 ? std::max<int64_t>(std::min(s1, s2 - std::min(off, s2)), 0)
                         : std::max<int64_t>(std::min(s1 + std::max(off, -s1), s2), 0);
  int64_t start = x.storage_offset();
  if (len > 0) start += off >= 0 ? off * x.stride(d2) : -off * x.stride(d1);
  Shape sz, st;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sz.push_back(x.size(d));
    st.push_back(x.stride(d));
  }
  sz.push_back(len);
  st.push_back(x.stride(d1) + x.stride(d2));
  return {view_of(x, sz, st, start)};
}

Tensors k_as_strided(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& size = c.arg("size").ints;
  const Shape& stride = c.arg("stride").ints;
  if (size.size() != stride.size())
    fail("as_strided: mismatch in length of strides and shape (" + std::to_string(size.size()) +
         " sizes, " + std::to_string(stride.size()) + " strides)");
  const Arg& off = c.arg("storage_offset");
  return {x.as_strided(size, stride, off.is_none() ? x.storage_offset() : off.i)};
}

Tensors k_unsqueeze(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {unsqueeze_view(x, wrap(c.arg("dim").i, x.dim() + 1))};
}

Tensor squeeze_dims(const Tensor& x, const std::vector<bool>& drop) {
  Shape s, st;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!(drop[size_t(d)] && x.size(d) == 1)) {
      s.push_back(x.size(d));
      st.push_back(x.stride(d));
    }
  return view_of(x, s, st, x.storage_offset());
}

Tensors k_squeeze(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  std::vector<bool> drop(size_t(x.dim()), false);
  const Arg& dims = c.arg("dim");
  std::vector<int64_t> list = dims.kind == Arg::Kind::Ints ? dims.ints : Shape{dims.i};
  for (int64_t d : list) {
    int64_t w = wrap(d, x.dim());
    if (x.dim() > 0) drop[size_t(w)] = true;
  }
  return {squeeze_dims(x, drop)};
}

Tensors k_alias(const KernelCall& c) {
  return {c.tensor("self")};
}

Tensors k_split(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("split expects at least a 1-dimensional tensor");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  int64_t size = x.size(d);
  Shape sizes;
  if (c.node.schema->index_of("split_sizes") >= 0) {
    sizes = c.arg("split_sizes").ints;
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0)
        fail("split_with_sizes expects split_sizes to be non-negative, got " + shape_str(sizes));
      total += s;
    }
    if (total != size)
      fail("split_with_sizes expects split_sizes to sum exactly to " + std::to_string(size) +
           " (input tensor's size at dimension " + std::to_string(d) +
           "), but got split_sizes=" + shape_str(sizes));
  } else {
    int64_t ss = 0;
    if (c.node.schema->index_of("chunks") >= 0) { // chunk: pieces of ceil(size / chunks)
      int64_t k = c.arg("chunks").i;
      if (k <= 0) fail("chunk expects `chunks` to be greater than 0, got: " + std::to_string(k));
      ss = (size + k - 1) / k;
    } else {
      ss = c.arg("split_size").i;
    }
    if (ss < 0 || (ss == 0 && size != 0))
      fail("split_size can only be 0 if dimension size is 0, but got dimension size of " +
           std::to_string(size));
    int64_t n = ss == 0 ? 1 : std::max<int64_t>((size + ss - 1) / ss, 1);
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::min(ss, size - i * ss));
  }
  Tensors out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice_impl(x, d, Arg::of_int(at), Arg::of_int(at + s), 1));
    at += s;
  }
  return out;
}

Tensors k_flatten(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) return {reshape_impl(x, {1})};
  int64_t s = wrap(c.arg("start_dim").i, x.dim()), e = wrap(c.arg("end_dim").i, x.dim());
  if (s > e) fail("flatten() has invalid args: start_dim cannot come after end_dim");
  if (s == e) return {x};
  Shape shape(x.sizes().begin(), x.sizes().begin() + s);
  int64_t prod = 1;
  for (int64_t d = s; d <= e; ++d) prod *= x.size(d);
  shape.push_back(prod);
  shape.insert(shape.end(), x.sizes().begin() + e + 1, x.sizes().end());
  return {reshape_impl(x, shape)};
}

Tensors k_unflatten(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("unflatten() cannot be applied to a 0-dim tensor");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  const Shape& sizes = c.arg("sizes").ints;
  if (sizes.empty()) fail("unflatten: sizes must be non-empty");
  Shape inferred = infer_size(sizes, x.size(d));
  Shape shape(x.sizes().begin(), x.sizes().begin() + d);
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  shape.insert(shape.end(), x.sizes().begin() + d + 1, x.sizes().end());
  return {view_impl(x, shape)};
}

Tensors k_contiguous(const KernelCall& c) {
  return {c.tensor("self").contiguous()};
}

// ---- Copies and conversions ----

Tensors k_clone(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {x.to(c.result_dtype(x.dtype()))};
}

Tensors k_to_copy(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& dt = c.arg("dtype");
  return {x.to(c.result_dtype(dt.is_none() ? x.dtype() : dt.dtype()))};
}

Tensors k_to_dtype(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  DType dt = c.result_dtype(c.arg("dtype").dtype());
  if (dt == x.dtype() && !c.arg("copy").b) return {x};
  return {x.to(dt)};
}

// to.device and to.dtype_layout (the reference kernels run on the host: the device is metadata).
Tensors k_to_other(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Arg& d = c.arg("dtype");
  DType dt = c.result_dtype(d.is_none() ? x.dtype() : d.dtype());
  if (dt == x.dtype() && !c.arg("copy").b) return {x};
  return {x.to(dt)};
}

Tensors k_copy(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  Tensor out = Tensor::empty(c.result_dtype(x.dtype()), x.sizes());
  out.copy_from(c.tensor("src"));
  return {out};
}

Tensors k_copy_(const KernelCall& c) {
  return write_back(c.tensor("self"), k_copy(c)[0]);
}

Tensors k_slice_scatter(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& src = c.tensor("src");
  Tensor out = x.to(c.result_dtype(x.dtype()));
  Tensor dst = slice_impl(out, c.arg("dim").i, c.arg("start"), c.arg("end"), c.arg("step").i);
  if (dst.sizes() != src.sizes())
    fail("slice_scatter: expected src to have a size equal to the slice of self. src size = " +
         shape_str(src.sizes()) + ", slice size = " + shape_str(dst.sizes()));
  dst.copy_from(src);
  return {out};
}

Tensors k_select_scatter(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Tensor& src = c.tensor("src");
  if (x.dim() == 0) fail("select_scatter() cannot be applied to a 0-dim tensor");
  int64_t d = wrap(c.arg("dim").i, x.dim()), i = c.arg("index").i, size = x.size(d);
  if (i < -size || i >= size)
    fail("select(): index " + std::to_string(i) + " out of range for tensor of size " +
         shape_str(x.sizes()) + " at dimension " + std::to_string(d));
  if (i < 0) i += size;
  Tensor out = x.to(c.result_dtype(x.dtype()));
  Shape sizes = out.sizes(), strides = out.strides();
  int64_t offset = out.storage_offset() + i * strides[size_t(d)];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  Tensor dst = view_of(out, sizes, strides, offset);
  if (dst.sizes() != src.sizes())
    fail("select_scatter: expected src to have a size equal to the slice of self. src size = " +
         shape_str(src.sizes()) + ", slice size = " + shape_str(dst.sizes()));
  dst.copy_from(src);
  return {out};
}

// glu: a * sigmoid(b), a and b the two halves of `dim`.
Tensors k_glu(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("glu does not support scalars because halving size must be even");
  if (!is_floating(x.dtype())) fail("\"glu_cpu\" not implemented for '" + dname(x.dtype()) + "'");
  int64_t d = wrap(c.arg("dim").i, x.dim()), h = x.size(d) / 2;
  if (x.size(d) % 2 != 0)
    fail("Halving dimension must be even, but dimension " + std::to_string(d) + " is size " +
         std::to_string(x.size(d)));
  Shape sizes = x.sizes();
  sizes[size_t(d)] = h;
  Tensor a = view_of(x, sizes, x.strides(), x.storage_offset());
  Tensor b = view_of(x, sizes, x.strides(), x.storage_offset() + h * x.stride(d));
  DType dt = c.result_dtype(x.dtype());
  return {elementwise(
      {a, b}, dt, dt, [](const double* v, const double*) { return v[0] / (1.0 + std::exp(-v[1])); },
      nullptr)};
}

Tensors k_lift_fresh_copy(const KernelCall& c) {
  return {c.tensor("self").clone()};
}

// ---- Index-mapping copies: flip, repeat, tril/triu, pixel (un)shuffle, reflection and
// replication padding. Each output element i is x's element src(coords of i), or 0 for -1.

template <class F> Tensor gather_copy(const Tensor& x0, const Shape& osz, F src) {
  Tensor x = x0.contiguous();
  DType dt = x.dtype();
  Tensor out = Tensor::empty(dt, osz);
  int64_t n = out.numel();
  bool fl = is_floating(dt);
  Shape xs = x.sizes(), xst(xs.size(), 1);
  for (int64_t d = int64_t(xs.size()) - 2; d >= 0; --d)
    xst[size_t(d)] = xst[size_t(d) + 1] * xs[size_t(d) + 1];
  Shape o(osz.size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i;
    for (int64_t d = int64_t(osz.size()) - 1; d >= 0; --d) {
      o[size_t(d)] = rem % osz[size_t(d)];
      rem /= osz[size_t(d)];
    }
    int64_t j = src(o, xst);
    if (j < 0) continue;
    if (fl)
      out.store(i, x.load(j));
    else
      out.store_int(i, x.load_int(j));
  }
  return out;
}

Tensors k_flip(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  std::vector<bool> f(size_t(x.dim()), false);
  for (int64_t d : c.arg("dims").ints) {
    int64_t w = wrap(d, x.dim());
    if (x.dim() > 0) {
      if (f[size_t(w)])
        fail("dim " + std::to_string(w) + " appears multiple times in the list of dims");
      f[size_t(w)] = true;
    }
  }
  Shape xs = x.sizes();
  return {gather_copy(x, xs, [&](const Shape& o, const Shape& st) {
    int64_t j = 0;
    for (size_t d = 0; d < o.size(); ++d) j += (f[d] ? xs[d] - 1 - o[d] : o[d]) * st[d];
    return j;
  })};
}

Tensors k_repeat(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  const Shape& r = c.arg("repeats").ints;
  if (int64_t(r.size()) < x.dim())
    fail("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
         "tensor");
  size_t off = r.size() - size_t(x.dim());
  Shape xs = x.sizes(), osz(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] < 0) fail("Trying to create tensor with negative dimension " + std::to_string(r[i]));
    osz[i] = r[i] * (i < off ? 1 : xs[i - off]);
  }
  return {gather_copy(x, osz, [&](const Shape& o, const Shape& st) {
    int64_t j = 0;
    for (size_t d = 0; d < xs.size(); ++d) j += (o[d + off] % xs[d]) * st[d];
    return j;
  })};
}

Tensors triangle(const KernelCall& c, bool lower) {
  const Tensor& x = c.tensor("self");
  if (x.dim() < 2)
    fail(std::string(lower ? "tril" : "triu") + ": input tensor must have at least 2 dimensions");
  int64_t k = c.arg("diagonal").i;
  size_t R = size_t(x.dim());
  return {gather_copy(x, x.sizes(), [&](const Shape& o, const Shape& st) -> int64_t {
    int64_t diff = o[R - 1] - o[R - 2];
    if (lower ? diff > k : diff < k) return -1;
    int64_t j = 0;
    for (size_t d = 0; d < R; ++d) j += o[d] * st[d];
    return j;
  })};
}
Tensors k_tril(const KernelCall& c) {
  return triangle(c, true);
}
Tensors k_triu(const KernelCall& c) {
  return triangle(c, false);
}

Tensors k_pixel_shuffle(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  bool up = c.node.schema->index_of("upscale_factor") >= 0;
  int64_t r = c.arg(up ? "upscale_factor" : "downscale_factor").i;
  if (x.dim() < 3 || r <= 0 || r > (int64_t(1) << 31))
    fail("pixel_shuffle expects a 3-D or larger input and a positive factor below 2^31");
  Shape osz = x.sizes();
  size_t C = osz.size() - 3, H = C + 1, W = C + 2;
  if (up) {
    if (osz[C] % (r * r) != 0) fail("pixel_shuffle: channels not divisible by upscale_factor^2");
    osz[C] /= r * r;
    osz[H] *= r;
    osz[W] *= r;
  } else {
    if (osz[H] % r != 0 || osz[W] % r != 0)
      fail("pixel_unshuffle: size not divisible by downscale_factor");
    osz[C] *= r * r;
    osz[H] /= r;
    osz[W] /= r;
  }
  return {gather_copy(x, osz, [&](const Shape& o, const Shape& st) {
    int64_t j = 0;
    for (size_t d = 0; d < C; ++d) j += o[d] * st[d];
    int64_t ic, ih, iw;
    if (up) {
      ic = o[C] * r * r + (o[H] % r) * r + (o[W] % r);
      ih = o[H] / r;
      iw = o[W] / r;
    } else {
      ic = o[C] / (r * r);
      ih = o[H] * r + (o[C] % (r * r)) / r;
      iw = o[W] * r + o[C] % r;
    }
    return j + ic * st[C] + ih * st[H] + iw * st[W];
  })};
}

// reflect / replicate / circular padding of the last pad.size()/2 dims.
Tensor mode_pad(const Tensor& x, const Shape& pad, const std::string& mode) {
  size_t sp = pad.size() / 2, R = size_t(x.dim());
  if (pad.size() % 2 != 0 || sp > R)
    fail("padding must have an even number of values, at most two per dim");
  Shape osz = x.sizes(), lo(R, 0);
  for (size_t i = 0; i < sp; ++i) {
    size_t d = R - 1 - i;
    int64_t a = pad[2 * i], b = pad[2 * i + 1];
    if (mode == "reflect" && (a >= osz[d] || b >= osz[d]))
      fail("padding size should be less than the corresponding input dimension");
    if (x.size(int64_t(d)) == 0) fail(mode + " padding of an empty dimension");
    lo[d] = a;
    osz[d] += a + b;
    if (osz[d] < 1) fail("padded output size is below 1");
  }
  Shape xs = x.sizes();
  return gather_copy(x, osz, [&](const Shape& o, const Shape& st) {
    int64_t j = 0;
    for (size_t d = 0; d < R; ++d)
      j += (d + sp >= R ? resample::pad_source(o[d], xs[d], lo[d], mode) : o[d]) * st[d];
    return j;
  });
}

Tensors k_mode_pad(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  bool reflect = c.node.target.find("reflection") != std::string::npos;
  const Shape& p = c.arg("padding").ints;
  size_t sp = p.size() / 2;
  if (x.dim() != int64_t(sp) + 1 && x.dim() != int64_t(sp) + 2)
    fail("expected a " + std::to_string(sp + 1) + "-D or " + std::to_string(sp + 2) + "-D input");
  return {mode_pad(x, p, reflect ? "reflect" : "replicate")};
}

Tensors k_t(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() > 2) fail("t() expects a tensor with <= 2 dimensions");
  if (x.dim() < 2) return {x};
  return {view_of(x, {x.size(1), x.size(0)}, {x.stride(1), x.stride(0)}, x.storage_offset())};
}

Tensors k_squeeze_all(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  return {squeeze_dims(x, std::vector<bool>(size_t(x.dim()), true))};
}

Tensors k_unsafe_view(const KernelCall& c) {
  return {view_impl(c.tensor("self"), c.arg("size").ints)};
}

Tensors k_stack(const KernelCall& c) {
  const Tensors& ts = c.list("tensors");
  if (ts.empty()) fail("stack expects a non-empty TensorList");
  for (const Tensor& t : ts)
    if (t.sizes() != ts[0].sizes()) fail("stack expects each tensor to be equal size");
  int64_t d = wrap(c.arg("dim").i, ts[0].dim() + 1);
  DType dt = ts[0].dtype();
  for (const Tensor& t : ts) dt = promote_types(dt, t.dtype());
  dt = c.result_dtype(dt);
  Shape inner_shape = ts[0].sizes();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= inner_shape[size_t(i)];
  for (size_t i = size_t(d); i < inner_shape.size(); ++i) inner *= inner_shape[i];
  Shape osz = inner_shape;
  osz.insert(osz.begin() + d, int64_t(ts.size()));
  Tensor out = Tensor::empty(dt, osz);
  bool fl = is_floating(dt);
  int64_t k = int64_t(ts.size());
  for (int64_t j = 0; j < k; ++j) {
    Tensor t = ts[size_t(j)].contiguous();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t dst = (o * k + j) * inner + i, src = o * inner + i;
        if (fl)
          out.store(dst, t.load(src));
        else
          out.store_int(dst, t.load_int(src));
      }
  }
  return {out};
}

Tensors k_unbind(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  if (x.dim() == 0) fail("Dimension specified as 0 but tensor has no dimensions");
  int64_t d = wrap(c.arg("dim").i, x.dim());
  Shape sz = x.sizes(), st = x.strides();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  Tensors out;
  for (int64_t i = 0; i < x.size(d); ++i)
    out.push_back(view_of(x, sz, st, x.storage_offset() + i * x.stride(d)));
  return out;
}

// resize_ / resize_as_ (kept in place): self's storage seen contiguously with the new sizes from
// self's offset, as PyTorch does; growing past the storage would reallocate it, which a tensor
// other names share here cannot do.
Tensors k_resize_(const KernelCall& c) {
  const Tensor& x = c.tensor("self");
  Shape s = c.node.schema->index_of("the_template") >= 0 ? c.tensor("the_template").sizes()
                                                         : Shape(c.arg("size").ints);
  int64_t n = 1;
  for (int64_t v : s) {
    if (v < 0) fail("Trying to create tensor with negative dimension " + std::to_string(v));
    n *= v;
  }
  size_t need = size_t(x.storage_offset() + n) * dtype_size(x.dtype());
  if (need > x.storage()->nbytes())
    fail("resize_ to " + shape_str(s) + " needs more storage than " + shape_str(x.sizes()) +
         " has; the reference interpreter cannot grow a tensor in place");
  return {view_of(x, s, contiguous_strides(s), x.storage_offset())};
}

const OpTable<KernelFn>::Row kViewKernels[] = {
    {OpId::resize_, k_resize_},
    {OpId::resize_as_, k_resize_},
    {OpId::_to_copy, k_to_copy},
    {OpId::_unsafe_view, k_unsafe_view},
    {OpId::alias, k_alias},
    {OpId::as_strided, k_as_strided},
    {OpId::cat, k_cat},
    {OpId::clone, k_clone},
    {OpId::constant_pad_nd, k_constant_pad_nd},
    {OpId::contiguous, k_contiguous},
    {OpId::copy, k_copy},
    {OpId::copy_, k_copy_},
    {OpId::detach, k_alias},
    // Identities on real tensors (issue 18): +x, real, resolve_conj, resolve_neg.
    {OpId::positive, k_alias},
    {OpId::real, k_alias},
    {OpId::resolve_conj, k_alias},
    {OpId::resolve_neg, k_alias},
    {OpId::expand, k_expand},
    {OpId::flatten_using_ints, k_flatten},
    {OpId::flip, k_flip},
    {OpId::lift_fresh_copy, k_lift_fresh_copy},
    {OpId::pad, k_pad},
    {OpId::permute, k_permute},
    {OpId::pixel_shuffle, k_pixel_shuffle},
    {OpId::pixel_unshuffle, k_pixel_shuffle},
    {OpId::reflection_pad1d, k_mode_pad},
    {OpId::reflection_pad2d, k_mode_pad},
    {OpId::reflection_pad3d, k_mode_pad},
    {OpId::repeat, k_repeat},
    {OpId::replication_pad1d, k_mode_pad},
    {OpId::replication_pad2d, k_mode_pad},
    {OpId::replication_pad3d, k_mode_pad},
    {OpId::reshape, k_reshape},
    {OpId::roll, k_roll},
    {OpId::diff, k_diff},
    {OpId::diagonal, k_diagonal},
    {OpId::select_int, k_select},
    {OpId::slice_Tensor, k_slice},
    {OpId::slice_scatter, k_slice_scatter},
    {OpId::select_scatter, k_select_scatter},
    {OpId::chunk, k_split},
    {OpId::glu, k_glu},
    {OpId::split_Tensor, k_split},
    {OpId::split_with_sizes, k_split},
    {OpId::squeeze, k_squeeze_all},
    {OpId::squeeze_dim, k_squeeze},
    {OpId::squeeze_dims, k_squeeze},
    {OpId::stack, k_stack},
    {OpId::t, k_t},
    {OpId::to_dtype, k_to_dtype},
    {OpId::to_device, k_to_other},
    {OpId::to_dtype_layout, k_to_other},
    {OpId::transpose_int, k_transpose},
    {OpId::tril, k_tril},
    {OpId::triu, k_triu},
    {OpId::unbind_int, k_unbind},
    {OpId::unflatten_int, k_unflatten},
    {OpId::unsqueeze, k_unsqueeze},
    {OpId::view, k_view},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> view_kernels() {
  return kViewKernels;
}

} // namespace fxc::kernel_detail
