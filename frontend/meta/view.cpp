// Meta functions of the views and copies: view geometry relative to the base's storage (view,
// reshape, flatten, permute, transpose, expand, slice, select, squeeze, split, as_strided ...),
// and the ops that copy into a new layout (cat, roll, pad, contiguous, clone, _to_copy, copy,
// slice_scatter).
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Shape ops that copy: cat, roll, pad.

Metas cat(const Graph& g, const Node& n) {
  Ctx c(g, n);
  auto ts = c.tensors("tensors");
  if (ts.empty()) c.fail("torch.cat(): expected a non-empty list of tensors");
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i]) c.fail("torch.cat(): tensor " + std::to_string(i) + " is None");
    if (ts[i]->dim() == 0)
      c.fail("zero-dimensional tensor (at position " + std::to_string(i) +
             ") cannot be concatenated");
  }
  auto skip = [](const TensorMeta* t) { return t->sizes == Sizes{0}; };
  const TensorMeta* first = nullptr;
  size_t first_i = 0;
  for (size_t i = 0; i < ts.size(); ++i)
    if (!skip(ts[i])) {
      first = ts[i];
      first_i = i;
      break;
    }
  ResultType rt;
  for (const TensorMeta* t : ts) rt.add_tensor(*t);
  DType dt = rt.result();
  Device dev = common_device(c, ts);
  if (!first) return {make(dt, {0}, dev)};
  int64_t d = c.dim(c.int_("dim"), first->dim());
  __int128 total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const TensorMeta* t = ts[i];
    if (skip(t)) continue;
    if (t->dim() != first->dim())
      c.fail("tensors must have the same number of dimensions: tensor " + std::to_string(first_i) +
             " is " + format_meta(*first) + " but tensor " + std::to_string(i) + " is " +
             format_meta(*t));
    for (int64_t k = 0; k < t->dim(); ++k)
      if (k != d && t->sizes[size_t(k)] != first->sizes[size_t(k)])
        c.fail("sizes of tensors must match except in dimension " + std::to_string(d) +
               ": tensor " + std::to_string(first_i) + " is " + format_meta(*first) +
               " but tensor " + std::to_string(i) + " is " + format_meta(*t));
    total += t->sizes[size_t(d)];
  }
  Sizes out = first->sizes;
  out[size_t(d)] = c.checked(total, "concatenated size");
  // cat_compute_output_memory_format: channels_last only when every input suggests it.
  bool cl = true;
  for (const TensorMeta* t : ts) cl &= suggests_channels_last(*t);
  return {make_format(dt, out, dev, cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous,
                      nullptr)};
}

// diff: n forward differences along `dim` of self with prepend and append concatenated there
// (each of self's rank and, except along dim, self's sizes).
Metas diff(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("diff expects input to be at least one-dimensional");
  int64_t k = c.int_("n");
  if (k < 0) c.fail("order must be non-negative but got " + std::to_string(k));
  int64_t d = c.dim(c.int_("dim"), x.dim());
  Sizes sizes = x.sizes;
  for (const char* side : {"prepend", "append"}) {
    const TensorMeta* t = c.opt_tensor(side);
    if (!t) continue;
    if (t->dim() != x.dim())
      c.fail(std::string("diff expects prepend or append to be the same dimension as input"));
    for (int64_t e = 0; e < x.dim(); ++e)
      if (e != d && t->sizes[size_t(e)] != x.sizes[size_t(e)])
        c.fail(std::string("diff expects the shape of tensor to prepend or append to match that of "
                           "input except along the differencing dimension"));
    sizes[size_t(d)] += t->sizes[size_t(d)];
  }
  sizes[size_t(d)] = std::max<int64_t>(0, sizes[size_t(d)] - k);
  return {make(x.dtype, sizes, x.device)};
}

Metas roll(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& shifts = c.ints("shifts");
  const Sizes& dims = c.ints("dims");
  if (shifts.empty()) c.fail("`shifts` required");
  if (dims.empty() && shifts.size() != 1)
    c.fail("shifts and dimensions must align: shifts " + join(shifts) + ", dims []");
  if (!dims.empty() && dims.size() != shifts.size())
    c.fail("shifts and dimensions must align: shifts " + join(shifts) + ", dims " + join(dims));
  for (int64_t d : dims) c.dim(d, x.dim());
  // Fake tensors run the reference implementation: one index_select per rolled dim, or a roll
  // of the flattened tensor viewed back when no dims are given.
  if (x.numel() == 0) return {empty_like_preserve(x, x.dtype)};
  if (dims.empty()) return {make(x.dtype, x.sizes, x.device)};
  TensorMeta cur = x;
  for (int64_t d : dims) {
    Sizes restrided = cur.strides;
    if (cur.dim() > 0) restrided[size_t(c.dim(d, cur.dim()))] = 0;
    cur = index_layout(cur, cur.sizes, restrided);
  }
  return {cur};
}

// constant_pad_nd's shape and layout; also used by pad(mode="constant").
TensorMeta constant_pad(const Ctx& c, const TensorMeta& x, const Sizes& pad) {
  if (pad.size() % 2 != 0)
    c.fail("length of pad must be even but instead it equals " + std::to_string(pad.size()));
  const int64_t l_pad = int64_t(pad.size() / 2);
  if (l_pad > x.dim())
    c.fail(
        "length of pad should be no more than twice the number of dimensions of the input; pad " +
        join(pad) + " but the input is " + format_meta(x));
  TensorMeta narrowed = x;
  Sizes out = x.sizes;
  bool all_non_positive = true;
  for (int64_t i = x.dim() - l_pad; i < x.dim(); ++i) {
    size_t pi = size_t(2 * (x.dim() - i - 1));
    __int128 o = __int128(x.sizes[size_t(i)]) + pad[pi] + pad[pi + 1];
    if (o < 0)
      c.fail("the input size " + std::to_string(x.sizes[size_t(i)]) + ", plus negative padding " +
             std::to_string(pad[pi]) + " and " + std::to_string(pad[pi + 1]) +
             " resulted in a negative output size at dimension " + std::to_string(i));
    out[size_t(i)] = c.checked(o, "padded size");
    if (pad[pi] > 0 || pad[pi + 1] > 0) all_non_positive = false;
    int64_t narrowed_size =
        x.sizes[size_t(i)] + std::min<int64_t>(pad[pi], 0) + std::min<int64_t>(pad[pi + 1], 0);
    narrowed.sizes[size_t(i)] = std::max<int64_t>(narrowed_size, 0);
  }
  c.check_sizes(out);
  if (all_non_positive) return empty_like_preserve(narrowed, x.dtype); // narrow(...).clone()
  return make_format(
      x.dtype, out, x.device,
      suggests_channels_last(x) ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous, nullptr);
}

Metas constant_pad_nd(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {constant_pad(c, c.tensor("self"), c.ints("pad"))};
}

Metas pad(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& p = c.ints("pad");
  const std::string& mode = c.str("mode");
  if (mode == "constant") return {constant_pad(c, x, p)};
  if (mode != "reflect" && mode != "replicate" && mode != "circular")
    c.fail("unrecognised padding mode '" + mode + "'");
  if (c.has("value")) c.fail("padding mode \"" + mode + "\" doesn't take in a value argument");
  if (p.size() % 2 != 0 || p.empty() || p.size() > 6)
    c.fail("padding " + join(p) + " must have 2, 4 or 6 values for mode \"" + mode + "\"");
  const int64_t l_pad = int64_t(p.size() / 2);
  if (x.dim() != l_pad + 1 && x.dim() != l_pad + 2)
    c.fail("expected a " + std::to_string(l_pad + 1) + "D or " + std::to_string(l_pad + 2) +
           "D input for padding " + join(p) + ", but the input is " + format_meta(x));
  Sizes out = x.sizes;
  for (int64_t i = 0; i < l_pad; ++i) {
    size_t d = size_t(x.dim() - 1 - i);
    int64_t a = p[size_t(2 * i)], b = p[size_t(2 * i + 1)];
    if (mode == "reflect" && (a >= x.sizes[d] || b >= x.sizes[d]))
      c.fail(
          "padding size should be less than the corresponding input dimension, but got padding (" +
          std::to_string(a) + ", " + std::to_string(b) + ") at dimension " + std::to_string(d) +
          " of input " + join(x.sizes));
    if (mode == "circular" && (a > x.sizes[d] || b > x.sizes[d]))
      c.fail("padding value causes wrapping around more than once: padding (" + std::to_string(a) +
             ", " + std::to_string(b) + ") at dimension " + std::to_string(d) + " of input " +
             join(x.sizes));
    __int128 o = __int128(x.sizes[d]) + a + b;
    if (o < 1)
      c.fail("input size " + std::to_string(x.sizes[d]) + " with padding (" + std::to_string(a) +
             ", " + std::to_string(b) + ") gives an output size below 1 at dimension " +
             std::to_string(d));
    out[d] = c.checked(o, "padded size");
  }
  c.check_sizes(out);
  return {make(x.dtype, out, x.device)};
}

// ---------------------------------------------------------------------------------------------
// Views: PyTorch's view geometry, relative to the base's storage.

TensorMeta view_of(const TensorMeta& base, Sizes sizes, Sizes strides, int64_t offset) {
  return make_strided(base.dtype, std::move(sizes), std::move(strides), base.device, offset);
}

// infer_size: resolves one -1 against numel.
Sizes infer_size(const Ctx& c, const Sizes& shape, int64_t numel) {
  __int128 newsize = 1;
  std::optional<size_t> infer;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (infer) c.fail("only one dimension can be inferred");
      infer = d;
    } else if (shape[d] >= 0) {
      newsize *= shape[d];
      if (newsize > std::numeric_limits<int64_t>::max())
        c.fail("shape '" + join(shape) + "' has too many elements");
    } else {
      c.fail("invalid shape dimension " + std::to_string(shape[d]));
    }
  }
  Sizes res = shape;
  if (numel == newsize || (infer && newsize > 0 && numel % int64_t(newsize) == 0)) {
    if (infer) {
      if (newsize == 0)
        c.fail("cannot reshape a tensor of 0 elements into shape " + join(shape) +
               " because the unspecified dimension size -1 can be any value and is ambiguous");
      res[*infer] = numel / int64_t(newsize);
    }
    return res;
  }
  c.fail("shape '" + join(shape) + "' is invalid for input of size " + std::to_string(numel));
}

// computeStride (ATen/TensorUtils.cpp): strides for viewing (oldshape, oldstride) as newshape.
std::optional<Sizes> compute_stride(const Sizes& oldshape, const Sizes& oldstride,
                                    const Sizes& newshape) {
  if (oldshape.empty()) return Sizes(newshape.size(), 1);
  const int64_t numel = numel_of(oldshape);
  if (numel == 0 && oldshape == newshape) return oldstride;
  Sizes newstride(newshape.size());
  if (numel == 0) {
    for (int64_t d = int64_t(newshape.size()) - 1; d >= 0; --d)
      newstride[size_t(d)] =
          d == int64_t(newshape.size()) - 1
              ? 1
              : mul(std::max<int64_t>(newshape[size_t(d + 1)], 1), newstride[size_t(d + 1)]);
    return newstride;
  }
  for (int64_t st : oldstride)
    if (st < 0 || st > (int64_t(1) << 62) / std::max<int64_t>(numel, 1)) return std::nullopt;
  int64_t view_d = int64_t(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = int64_t(oldshape.size()) - 1; td >= 0; --td) {
    tensor_numel *= oldshape[size_t(td)];
    if (td == 0 || (oldshape[size_t(td - 1)] != 1 &&
                    oldstride[size_t(td - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[size_t(view_d)] == 1)) {
        newstride[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= newshape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk_base_stride = oldstride[size_t(td - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Metas view(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  Sizes shape = infer_size(c, c.ints("size"), x.numel());
  auto st = compute_stride(x.sizes, x.strides, shape);
  if (!st)
    c.fail("view size " + join(shape) + " is not compatible with the input's size and stride (" +
           format_meta_with_strides(x) +
           "): at least one dimension spans across two contiguous subspaces; use reshape instead");
  return {view_of(x, shape, *st, x.storage_offset)};
}

TensorMeta reshape_meta(const Ctx& c, const TensorMeta& x, const Sizes& requested) {
  Sizes shape = infer_size(c, requested, x.numel());
  if (auto st = compute_stride(x.sizes, x.strides, shape))
    return view_of(x, shape, *st, x.storage_offset);
  return make(x.dtype, shape, x.device); // clone(contiguous_format) then view
}

Metas reshape(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {reshape_meta(c, c.tensor("self"), c.ints("shape"))};
}

Metas flatten(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  int64_t s = c.dim(c.int_("start_dim"), x.dim()), e = c.dim(c.int_("end_dim"), x.dim());
  if (s > e) c.fail("flatten() has invalid args: start_dim cannot come after end_dim");
  if (x.dim() == 0) return {reshape_meta(c, x, {1})};
  if (s == e) return {x};
  Sizes shape(x.sizes.begin(), x.sizes.begin() + s);
  __int128 prod = 1;
  for (int64_t d = s; d <= e; ++d) prod *= x.sizes[size_t(d)];
  shape.push_back(c.checked(prod, "flattened size"));
  shape.insert(shape.end(), x.sizes.begin() + e + 1, x.sizes.end());
  return {reshape_meta(c, x, shape)};
}

Metas unflatten(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("unflatten: cannot unflatten a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  const Sizes& sizes = c.ints("sizes");
  if (sizes.empty()) c.fail("unflatten: sizes must be non-empty");
  __int128 known = 1;
  int64_t inferred_dims = 0;
  for (int64_t s : sizes) {
    if (s < -1) c.fail("unflatten: invalid size " + std::to_string(s) + " in " + join(sizes));
    if (s == -1)
      ++inferred_dims;
    else
      known *= s;
    if (known > std::numeric_limits<int64_t>::max())
      c.fail("unflatten: sizes " + join(sizes) + " are too large");
  }
  if (inferred_dims == 0 && known != x.sizes[size_t(d)])
    c.fail("unflatten: provided sizes " + join(sizes) + " don't multiply up to the size of dim " +
           std::to_string(d) + " (" + std::to_string(x.sizes[size_t(d)]) + ") in the input tensor");
  Sizes inferred = infer_size(c, sizes, x.sizes[size_t(d)]);
  Sizes shape(x.sizes.begin(), x.sizes.begin() + d);
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  shape.insert(shape.end(), x.sizes.begin() + d + 1, x.sizes.end());
  auto st = compute_stride(x.sizes, x.strides, shape);
  assert(st && "splitting one dimension is always a view");
  return {view_of(x, shape, *st, x.storage_offset)};
}

Metas permute(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& dims = c.ints("dims");
  if (int64_t(dims.size()) != x.dim())
    c.fail("permute: the number of dims " + join(dims) + " does not match the input's rank (" +
           format_meta(x) + ")");
  Sizes sz, st;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    int64_t w = c.dim(d, x.dim());
    if (seen[size_t(w)]) c.fail("permute: repeated dim in " + join(dims));
    seen[size_t(w)] = true;
    sz.push_back(x.sizes[size_t(w)]);
    st.push_back(x.strides[size_t(w)]);
  }
  return {view_of(x, sz, st, x.storage_offset)};
}

Metas transpose(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  int64_t a = c.dim(c.int_("dim0"), x.dim()), b = c.dim(c.int_("dim1"), x.dim());
  TensorMeta out = x;
  if (x.dim() == 0) return {out};
  std::swap(out.sizes[size_t(a)], out.sizes[size_t(b)]);
  std::swap(out.strides[size_t(a)], out.strides[size_t(b)]);
  return {out};
}

Metas expand(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& sizes = c.ints("size");
  const int64_t nd = int64_t(sizes.size()), td = x.dim();
  if (nd < td)
    c.fail("expand: the number of sizes provided (" + std::to_string(nd) +
           ") must be greater or equal to the number of dimensions in the tensor (" +
           format_meta(x) + ")");
  Sizes osz(static_cast<size_t>(nd)), ost(static_cast<size_t>(nd), 0);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t off = nd - 1 - i, d = td - 1 - off;
    int64_t size = d >= 0 ? x.sizes[size_t(d)] : 1;
    int64_t stride = d >= 0 ? x.strides[size_t(d)]
                     : i + 1 < nd
                         ? c.checked(__int128(osz[size_t(i + 1)]) * ost[size_t(i + 1)], "stride")
                         : 0;
    int64_t target = sizes[size_t(i)];
    if (target == -1) {
      if (d < 0)
        c.fail("the expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
               "dimension " +
               std::to_string(i));
      target = size;
    }
    if (target < 0) c.fail("expand: invalid size " + std::to_string(target) + " in " + join(sizes));
    if (size != target) {
      if (size != 1)
        c.fail("the expanded size of the tensor (" + std::to_string(target) +
               ") must match the existing size (" + std::to_string(size) +
               ") at non-singleton dimension " + std::to_string(i) + ": target sizes " +
               join(sizes) + ", tensor is " + format_meta(x));
      size = target;
      stride = 0;
    }
    osz[size_t(i)] = size;
    ost[size_t(i)] = td == 0 ? 0 : stride;
  }
  c.check_sizes(osz);
  return {view_of(x, osz, ost, x.storage_offset)};
}

// narrow/slice geometry on dimension d.
TensorMeta slice_meta(const Ctx& c, const TensorMeta& x, int64_t d, std::optional<int64_t> start,
                      std::optional<int64_t> end, int64_t step) {
  if (step <= 0) c.fail("slice step must be positive, got " + std::to_string(step));
  const int64_t size = x.sizes[size_t(d)];
  int64_t s = start.value_or(0), e = end.value_or(std::numeric_limits<int64_t>::max());
  if (s == std::numeric_limits<int64_t>::max()) s = 0;
  if (s < 0) s += size;
  if (e < 0) e += size;
  if (s < 0)
    s = 0;
  else if (s >= size)
    s = size;
  if (e < s)
    e = s;
  else if (e >= size)
    e = size;
  TensorMeta out = x;
  out.storage_offset =
      c.checked(__int128(x.storage_offset) + __int128(s) * x.strides[size_t(d)], "storage offset");
  out.sizes[size_t(d)] = int64_t((__int128(e) - s + step - 1) / step);
  out.strides[size_t(d)] = c.checked(__int128(x.strides[size_t(d)]) * step, "slice stride");
  return out;
}

Metas slice(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("slice() cannot be applied to a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  return {slice_meta(c, x, d, c.opt_int("start"), c.opt_int("end"), c.int_("step"))};
}

Metas slice_scatter(const Graph& g, const Node& n);

Metas select(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("select() cannot be applied to a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  int64_t i = c.int_("index"), size = x.sizes[size_t(d)];
  if (i < -size || i >= size)
    c.fail("select(): index " + std::to_string(i) + " out of range for tensor of size " +
           join(x.sizes) + " at dimension " + std::to_string(d));
  if (i < 0) i += size;
  TensorMeta out = x;
  out.storage_offset =
      c.checked(__int128(x.storage_offset) + __int128(i) * x.strides[size_t(d)], "storage offset");
  out.sizes.erase(out.sizes.begin() + d);
  out.strides.erase(out.strides.begin() + d);
  return {out};
}

// diagonal: dims dim1 and dim2 replaced by one last dim that walks both (offset > 0 above the
// main diagonal, < 0 below); an offset past the end gives an empty diagonal.
Metas diagonal(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() < 2)
    c.fail("diagonal() needs a tensor of at least 2 dimensions, but " + c.desc("self"));
  int64_t d1 = c.dim(c.int_("dim1"), x.dim()), d2 = c.dim(c.int_("dim2"), x.dim());
  if (d1 == d2)
    c.fail("diagonal dimensions cannot be identical " + std::to_string(c.int_("dim1")) + ", " +
           std::to_string(c.int_("dim2")));
  int64_t off = c.int_("offset");
  int64_t s1 = x.sizes[size_t(d1)], s2 = x.sizes[size_t(d2)];
  int64_t len = off >= 0 ? std::max<int64_t>(std::min(s1, s2 - std::min(off, s2)), 0)
                         : std::max<int64_t>(std::min(s1 + std::max(off, -s1), s2), 0);
  TensorMeta out = x;
  __int128 start = 0;
  if (len > 0)
    start =
        off >= 0 ? __int128(off) * x.strides[size_t(d2)] : -__int128(off) * x.strides[size_t(d1)];
  out.storage_offset = c.checked(__int128(x.storage_offset) + start, "storage offset");
  int64_t st = c.checked(__int128(x.strides[size_t(d1)]) + x.strides[size_t(d2)], "stride");
  out.sizes.clear();
  out.strides.clear();
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    out.sizes.push_back(x.sizes[size_t(d)]);
    out.strides.push_back(x.strides[size_t(d)]);
  }
  out.sizes.push_back(len);
  out.strides.push_back(st);
  return {out};
}

Metas unsqueeze(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  int64_t d = c.dim(c.int_("dim"), x.dim() + 1);
  TensorMeta out = x;
  int64_t st =
      d >= x.dim() ? 1 : c.checked(__int128(x.sizes[size_t(d)]) * x.strides[size_t(d)], "stride");
  out.sizes.insert(out.sizes.begin() + d, 1);
  out.strides.insert(out.strides.begin() + d, st);
  return {out};
}

TensorMeta squeeze_meta(const TensorMeta& x, const std::vector<bool>& mask) {
  TensorMeta out = x;
  out.sizes.clear();
  out.strides.clear();
  for (size_t d = 0; d < x.sizes.size(); ++d) {
    if (mask[d] && x.sizes[d] == 1) continue;
    out.sizes.push_back(x.sizes[d]);
    out.strides.push_back(x.strides[d]);
  }
  return out;
}

Metas squeeze_dim(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {squeeze_meta(x, c.dim_mask({c.int_("dim")}, x.dim()))};
}

Metas squeeze_dims(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {squeeze_meta(x, c.dim_mask(c.ints("dim"), x.dim()))};
}

Metas split(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("split expects at least a 1-dimensional tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  int64_t size = x.sizes[size_t(d)];
  int64_t s = 0;
  if (c.has_arg("chunks")) { // chunk: pieces of ceil(size / chunks)
    int64_t k = c.int_("chunks");
    if (k <= 0) c.fail("chunk expects `chunks` to be greater than 0, got: " + std::to_string(k));
    s = (size + k - 1) / k;
  } else {
    s = c.int_("split_size");
  }
  if (s < 0)
    c.fail("split expects split_size be non-negative, but got split_size=" + std::to_string(s));
  if (s == 0 && size != 0)
    c.fail("split_size can only be 0 if dimension size is 0, but got dimension size of " +
           std::to_string(size));
  int64_t pieces = s == 0 ? 1 : std::max<int64_t>(int64_t((__int128(size) + s - 1) / s), 1);
  Metas out;
  for (int64_t i = 0; i < pieces; ++i) {
    int64_t start = i * s, len = std::min(s, size - start);
    out.push_back(slice_meta(c, x, d, start, start + len, 1));
  }
  return out;
}

Metas split_with_sizes(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("split_with_sizes expects at least a 1-dimensional tensor");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  const Sizes& sizes = c.ints("split_sizes");
  __int128 sum = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      c.fail("split_with_sizes expects split_sizes have only non-negative entries, but got " +
             join(sizes));
    sum += s;
  }
  if (sum != x.sizes[size_t(d)])
    c.fail("split_with_sizes expects split_sizes to sum exactly to " +
           std::to_string(x.sizes[size_t(d)]) + " (input tensor's size at dimension " +
           std::to_string(d) + "), but got split_sizes=" + join(sizes));
  Metas out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice_meta(c, x, d, start, start + s, 1));
    start += s;
  }
  return out;
}

Metas as_strided(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& sz = c.ints("size");
  const Sizes& st = c.ints("stride");
  if (sz.size() != st.size())
    c.fail("mismatch in length of strides and shape: size " + join(sz) + ", stride " + join(st));
  for (int64_t s : st)
    if (s < 0) c.fail("as_strided: negative strides are not supported, got strides " + join(st));
  c.check_sizes(sz);
  int64_t off = c.opt_int("storage_offset").value_or(x.storage_offset);
  if (off < 0) c.fail("as_strided: negative storage offset " + std::to_string(off));
  return {view_of(x, sz, st, off)};
}

Metas alias(const Graph& g, const Node& n) {
  Ctx c(g, n);
  return {c.tensor("self")};
}

// positive(x) is x itself; PyTorch refuses it on bool tensors.
Metas positive(const Graph& g, const Node& n) {
  Ctx c(g, n);
  if (c.tensor("self").dtype == DType::Bool)
    c.fail("The `+` operator, on a bool tensor is not supported.");
  return {c.tensor("self")};
}

Metas contiguous(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Contiguous);
  if (mf == MemoryFormat::Preserve)
    c.fail("preserve memory format is unsupported by the contiguous operator");
  bool already = mf == MemoryFormat::ChannelsLast ? is_cl_contig(x.sizes, x.strides)
                                                  : is_contig(x.sizes, x.strides);
  if (already) return {x};
  return {make_format(x.dtype, x.sizes, x.device, mf, nullptr)};
}

// ---------------------------------------------------------------------------------------------
// Copies and conversions.

TensorMeta to_copy_meta(const Ctx& c, const TensorMeta& x, DType dt, Device dev, MemoryFormat mf) {
  if (mf == MemoryFormat::Preserve) {
    TensorMeta out = empty_like_preserve(x, dt);
    out.device = dev;
    return out;
  }
  if (mf == MemoryFormat::ChannelsLast && x.dim() != 4)
    c.fail("required rank 4 tensor to use channels_last format, but the input is " +
           format_meta(x));
  return make_format(dt, x.sizes, dev, mf, nullptr);
}

Metas to_copy(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {to_copy_meta(c, x, c.opt_dtype("dtype").value_or(x.dtype),
                       c.opt_device("device").value_or(x.device),
                       c.memory_format("memory_format", MemoryFormat::Preserve))};
}

Metas to_dtype(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = *c.opt_dtype("dtype");
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Preserve);
  if (dt == x.dtype && !c.bool_("copy") && mf == MemoryFormat::Preserve) return {x};
  return {to_copy_meta(c, x, dt, x.device, mf)};
}

// to.device and to.dtype_layout: to.dtype with a device (fxc's tensors keep theirs), an alias
// when nothing changes.
Metas to_other(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  DType dt = c.opt_dtype("dtype").value_or(x.dtype);
  Device dev = c.opt_device("device").value_or(x.device);
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Preserve);
  if (dt == x.dtype && dev.kind == x.device.kind && !c.bool_("copy") &&
      mf == MemoryFormat::Preserve)
    return {x};
  return {to_copy_meta(c, x, dt, dev, mf)};
}

Metas clone(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  MemoryFormat mf = c.memory_format("memory_format", MemoryFormat::Preserve);
  if (mf == MemoryFormat::ChannelsLast && x.dim() != 4)
    c.fail("required rank 4 tensor to use channels_last format, but the input is " +
           format_meta(x));
  return {make_format(x.dtype, x.sizes, x.device, mf, &x)};
}

Metas lift_fresh_copy(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {empty_like_preserve(x, x.dtype)};
}

// clone_preserve_strides: same strides and offset unless the input overlaps itself.
TensorMeta clone_preserve_strides(const TensorMeta& x) {
  if (has_internal_overlap(x.sizes, x.strides)) return empty_like_preserve(x, x.dtype);
  return x;
}

Metas copy(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  Sizes b = broadcast_all(c, {&self, &src});
  if (b != self.sizes)
    c.fail(c.desc("src") + " but " + c.desc("self") + " (src must broadcast to self)");
  return {clone_preserve_strides(self)};
}

// copy_: src broadcast into self, which it returns.
Metas copy_inplace(const Graph& g, const Node& n) {
  copy(g, n);
  return {Ctx(g, n).tensor("self")};
}

Metas slice_scatter(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  if (self.dim() == 0) c.fail("slice_scatter() cannot be applied to a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  TensorMeta sl = slice_meta(c, self, d, c.opt_int("start"), c.opt_int("end"), c.int_("step"));
  if (sl.sizes != src.sizes)
    c.fail("expected src to have a size equal to the slice of self: " + c.desc("src") +
           " but the slice is " + join(sl.sizes));
  // A fresh tensor (what torch.export records): self's strides when dense, offset 0.
  return {empty_like_preserve(self, self.dtype)};
}

Metas select_scatter(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& src = c.tensor("src");
  if (self.dim() == 0) c.fail("select_scatter() cannot be applied to a 0-dim tensor");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  int64_t size = self.sizes[size_t(d)], i = c.int_("index");
  if (i < -size || i >= size)
    c.fail("select(): index " + std::to_string(i) + " out of range for tensor of size " +
           join(self.sizes) + " at dimension " + std::to_string(d));
  Sizes want = self.sizes;
  want.erase(want.begin() + d);
  if (src.sizes != want)
    c.fail("expected src to have a size equal to the slice of self: " + c.desc("src") +
           " but the slice is " + join(want));
  return {empty_like_preserve(self, self.dtype)};
}

// glu: the first half of `dim` times the sigmoid of the second half.
Metas glu(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("glu does not support scalars because halving size must be even");
  if (!is_floating(x.dtype)) not_implemented(c, "glu_cpu", x.dtype);
  int64_t d = c.dim(c.int_("dim"), x.dim());
  if (x.sizes[size_t(d)] % 2 != 0)
    c.fail("Halving dimension must be even, but dimension " + std::to_string(d) + " is size " +
           std::to_string(x.sizes[size_t(d)]));
  Sizes out = x.sizes;
  out[size_t(d)] /= 2;
  return {make(x.dtype, out, x.device)};
}

// ---- flip, repeat, tril/triu, t, squeeze(), _unsafe_view, detach, pixel (un)shuffle, pads.

Metas flip(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  c.dim_mask(c.ints("dims"), x.dim()); // wraps, and rejects repeated dims
  return {empty_like_preserve(x, x.dtype)};
}

Metas repeat(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& r = c.ints("repeats");
  if (int64_t(r.size()) < x.dim())
    c.fail("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
           "tensor");
  Sizes out(r.size());
  size_t off = r.size() - x.sizes.size();
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] < 0) c.fail("Trying to create tensor with negative dimension " + std::to_string(r[i]));
    out[i] = mul(r[i], i < off ? 1 : x.sizes[i - off]);
  }
  c.check_sizes(out);
  return {make(x.dtype, out, x.device)};
}

Metas triangle(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() < 2)
    c.fail(n.target.substr(5, 4) + ": input tensor must have at least 2 dimensions, but " +
           c.desc("self"));
  return {make(x.dtype, x.sizes, x.device)};
}

Metas t(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() > 2)
    c.fail("t() expects a tensor with <= 2 dimensions, but self is " + std::to_string(x.dim()) +
           "D");
  TensorMeta out = x;
  if (x.dim() == 2) {
    std::swap(out.sizes[0], out.sizes[1]);
    std::swap(out.strides[0], out.strides[1]);
  }
  return {out};
}

Metas squeeze_all(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  return {squeeze_meta(x, std::vector<bool>(size_t(x.dim()), true))};
}

Metas unsafe_view(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  Sizes shape = infer_size(c, c.ints("size"), x.numel());
  auto st = compute_stride(x.sizes, x.strides, shape);
  if (!st)
    c.fail("view size " + join(shape) + " is not compatible with the input's size and stride (" +
           format_meta_with_strides(x) + ")");
  return {view_of(x, shape, *st, x.storage_offset)};
}

Metas pixel_shuffle(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  bool up = c.has_arg("upscale_factor");
  int64_t r = c.int_(up ? "upscale_factor" : "downscale_factor");
  std::string name = up ? "pixel_shuffle" : "pixel_unshuffle";
  if (x.dim() < 3)
    c.fail(name + " expects input to have at least 3 dimensions, but " + c.desc("self"));
  if (r <= 0) c.fail(name + " expects a positive factor, but got " + std::to_string(r));
  const int64_t r2 = mul(r, r); // an overflow is the node's error
  Sizes out = x.sizes;
  size_t C = out.size() - 3, H = C + 1, W = C + 2;
  if (up) {
    if (out[C] % r2 != 0)
      c.fail("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
             "of upscale_factor, but input.size(-3)=" +
             std::to_string(out[C]) + " is not divisible by " + std::to_string(r2));
    out[C] /= r2;
    out[H] = mul(out[H], r);
    out[W] = mul(out[W], r);
  } else {
    if (out[H] % r != 0 || out[W] % r != 0)
      c.fail("pixel_unshuffle expects height and width to be divisible by downscale_factor, but "
             "input is " +
             join(x.sizes) + " and downscale_factor=" + std::to_string(r));
    out[C] = mul(out[C], r2);
    out[H] /= r;
    out[W] /= r;
  }
  return {make(x.dtype, out, x.device)};
}

// reflection_pad{1,2,3}d and replication_pad{1,2,3}d: `padding` holds (left, right) pairs from
// the last dim backwards.
Metas mode_pad(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  const Sizes& p = c.ints("padding");
  bool reflect = n.target.find("reflection") != std::string::npos;
  int64_t sp = int64_t(p.size() / 2);
  std::string name =
      std::string(reflect ? "reflection" : "replication") + "_pad" + std::to_string(sp) + "d";
  if (x.dim() != sp + 1 && x.dim() != sp + 2)
    c.fail(name + ": expected a " + std::to_string(sp + 1) + "D or " + std::to_string(sp + 2) +
           "D input, but " + c.desc("self"));
  for (int64_t d = x.dim() == sp + 2 ? 1 : 0; d < x.dim(); ++d)
    if (x.sizes[size_t(d)] == 0 && (d < x.dim() - sp || reflect))
      c.fail(name + ": expected an input with non-zero sizes, but " + c.desc("self"));
  Sizes out = x.sizes;
  for (int64_t i = 0; i < sp; ++i) {
    size_t d = size_t(x.dim() - 1 - i);
    int64_t a = p[size_t(2 * i)], b = p[size_t(2 * i + 1)];
    if (reflect && (a >= x.sizes[d] || b >= x.sizes[d]))
      c.fail("Argument #4: Padding size should be less than the corresponding input dimension, "
             "but got: padding (" +
             std::to_string(a) + ", " + std::to_string(b) + ") at dimension " + std::to_string(d) +
             " of input " + join(x.sizes));
    __int128 o = __int128(x.sizes[d]) + a + b;
    if (o < 1)
      c.fail("input (" + join(x.sizes) +
             ") is too small. Calculated output size is below 1 at "
             "dimension " +
             std::to_string(d));
    out[d] = c.checked(o, "padded size");
  }
  c.check_sizes(out);
  return {make(x.dtype, out, x.device)};
}

Metas stack(const Graph& g, const Node& n) {
  Ctx c(g, n);
  std::vector<const TensorMeta*> ts = c.tensors("tensors");
  if (ts.empty()) c.fail("stack expects a non-empty TensorList");
  for (const TensorMeta* t : ts)
    if (t->sizes != ts[0]->sizes)
      c.fail("stack expects each tensor to be equal size, but got " + join(ts[0]->sizes) +
             " at entry 0 and " + join(t->sizes) + " at another entry");
  int64_t d = c.dim(c.int_("dim"), ts[0]->dim() + 1);
  DType dt = ts[0]->dtype;
  for (const TensorMeta* t : ts) dt = promote_types(dt, t->dtype);
  Sizes out = ts[0]->sizes;
  out.insert(out.begin() + d, int64_t(ts.size()));
  return {make(dt, out, ts[0]->device)};
}

Metas unbind(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  if (x.dim() == 0) c.fail("Dimension specified as 0 but tensor has no dimensions");
  int64_t d = c.dim(c.int_("dim"), x.dim());
  Metas out;
  for (int64_t i = 0; i < x.sizes[size_t(d)]; ++i) {
    TensorMeta m = x;
    m.sizes.erase(m.sizes.begin() + d);
    m.strides.erase(m.strides.begin() + d);
    m.storage_offset = x.storage_offset + i * x.strides[size_t(d)];
    out.push_back(m);
  }
  return out;
}

// resize_ / resize_as_: self with the new sizes, contiguous (the first elements of its storage).
Metas resize_inplace(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& x = c.tensor("self");
  Sizes s = c.has_arg("the_template") ? c.tensor("the_template").sizes : c.ints("size");
  for (int64_t v : s)
    if (v < 0) c.fail("Trying to create tensor with negative dimension " + std::to_string(v));
  return {make(x.dtype, s, x.device)};
}

const OpTable<MetaFn>::Row kViewMeta[] = {
    {OpId::resize_, guarded<resize_inplace>},
    {OpId::resize_as_, guarded<resize_inplace>},
    {OpId::_to_copy, guarded<to_copy>},
    {OpId::_unsafe_view, guarded<unsafe_view>},
    {OpId::alias, guarded<alias>},
    {OpId::as_strided, guarded<as_strided>},
    {OpId::cat, guarded<cat>},
    {OpId::clone, guarded<clone>},
    {OpId::constant_pad_nd, guarded<constant_pad_nd>},
    {OpId::contiguous, guarded<contiguous>},
    {OpId::copy, guarded<copy>},
    {OpId::copy_, guarded<copy_inplace>},
    {OpId::detach, guarded<alias>},
    {OpId::positive, guarded<positive>},
    {OpId::real, guarded<alias>},
    {OpId::resolve_conj, guarded<alias>},
    {OpId::resolve_neg, guarded<alias>},
    {OpId::expand, guarded<expand>},
    {OpId::flatten_using_ints, guarded<flatten>},
    {OpId::flip, guarded<flip>},
    {OpId::lift_fresh_copy, guarded<lift_fresh_copy>},
    {OpId::pad, guarded<pad>},
    {OpId::permute, guarded<permute>},
    {OpId::pixel_shuffle, guarded<pixel_shuffle>},
    {OpId::pixel_unshuffle, guarded<pixel_shuffle>},
    {OpId::reflection_pad1d, guarded<mode_pad>},
    {OpId::reflection_pad2d, guarded<mode_pad>},
    {OpId::reflection_pad3d, guarded<mode_pad>},
    {OpId::repeat, guarded<repeat>},
    {OpId::replication_pad1d, guarded<mode_pad>},
    {OpId::replication_pad2d, guarded<mode_pad>},
    {OpId::replication_pad3d, guarded<mode_pad>},
    {OpId::reshape, guarded<reshape>},
    {OpId::roll, guarded<roll>},
    {OpId::diagonal, guarded<diagonal>},
    {OpId::diff, guarded<diff>},
    {OpId::select_int, guarded<select>},
    {OpId::slice_Tensor, guarded<slice>},
    {OpId::slice_scatter, guarded<slice_scatter>},
    {OpId::select_scatter, guarded<select_scatter>},
    {OpId::chunk, guarded<split>},
    {OpId::glu, guarded<glu>},
    {OpId::split_Tensor, guarded<split>},
    {OpId::split_with_sizes, guarded<split_with_sizes>},
    {OpId::squeeze, guarded<squeeze_all>},
    {OpId::squeeze_dim, guarded<squeeze_dim>},
    {OpId::squeeze_dims, guarded<squeeze_dims>},
    {OpId::stack, guarded<stack>},
    {OpId::t, guarded<t>},
    {OpId::to_dtype, guarded<to_dtype>},
    {OpId::to_device, guarded<to_other>},
    {OpId::to_dtype_layout, guarded<to_other>},
    {OpId::transpose_int, guarded<transpose>},
    {OpId::tril, guarded<triangle>},
    {OpId::triu, guarded<triangle>},
    {OpId::unbind_int, guarded<unbind>},
    {OpId::unflatten_int, guarded<unflatten>},
    {OpId::unsqueeze, guarded<unsqueeze>},
    {OpId::view, guarded<view>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> view_meta() {
  return kViewMeta;
}

} // namespace fxc::meta_detail
