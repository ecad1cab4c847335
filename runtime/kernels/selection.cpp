// Reference kernels of the data-dependent ops: nonzero, argwhere, nonzero_numpy, masked_select,
// _unique2, unique_consecutive and unique_dim. Their result sizes come from the values, so they
// run only on the eager interpreter (frontend/meta/selection.cpp says why; docs/dynamic.md).
// Elements are visited in row-major order, as PyTorch's CPU kernels do.
#include "runtime/kernels/kernel_util.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace fxc::kernel_detail {
namespace {

// The elements of `t` in row-major order, as doubles (floating and complex-free dtypes) or as
// int64 (integers and bool): equality and order are exact either way.
struct Flat {
  bool floating = false;
  std::vector<double> f;
  std::vector<int64_t> i;
  int64_t size() const { return floating ? int64_t(f.size()) : int64_t(i.size()); }
  bool nonzero(int64_t k) const { return floating ? f[size_t(k)] != 0 : i[size_t(k)] != 0; }
  // Exact equality; NaN equals nothing, as in PyTorch's comparisons.
  bool equal(int64_t a, int64_t b) const {
    return floating ? f[size_t(a)] == f[size_t(b)] : i[size_t(a)] == i[size_t(b)];
  }
  // Ascending, NaN last.
  bool less(int64_t a, int64_t b) const {
    if (!floating) return i[size_t(a)] < i[size_t(b)];
    double x = f[size_t(a)], y = f[size_t(b)];
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
    return x < y;
  }
};

Flat flatten(const Tensor& t) {
  Tensor c = t.contiguous();
  Flat r;
  r.floating = is_floating(t.dtype());
  int64_t n = c.numel();
  if (r.floating)
    for (int64_t k = 0; k < n; ++k) r.f.push_back(c.load(c.offset_of(k)));
  else
    for (int64_t k = 0; k < n; ++k) r.i.push_back(c.load_int(c.offset_of(k)));
  return r;
}

// Copies element `from` of `src` (a Flat of t's dtype) to element `to` of the contiguous `out`.
void put(const Tensor& out, int64_t to, const Flat& src, int64_t from) {
  if (src.floating)
    out.store(to, src.f[size_t(from)]);
  else
    out.store_int(to, src.i[size_t(from)]);
}

Tensor int64_vector(const std::vector<int64_t>& v) {
  Tensor out = Tensor::empty(DType::I64, {int64_t(v.size())});
  for (size_t k = 0; k < v.size(); ++k) out.store_int(int64_t(k), v[k]);
  return out;
}

// What a unique op gives for an output that was not asked for (inverse or counts): an empty
// vector of self's dtype, as PyTorch's meta function says (torch.export records that).
Tensor not_asked(const Tensor& self) {
  return Tensor::empty(self.dtype(), {0});
}

// The row-major positions of the nonzero elements, and the multi-index of each.
Tensor nonzero_of(const Tensor& self) {
  Flat x = flatten(self);
  std::vector<int64_t> hits;
  for (int64_t k = 0; k < x.size(); ++k)
    if (x.nonzero(k)) hits.push_back(k);
  int64_t rank = self.dim();
  Tensor out = Tensor::empty(DType::I64, {int64_t(hits.size()), rank});
  for (size_t r = 0; r < hits.size(); ++r) {
    int64_t rem = hits[r];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out.store_int(int64_t(r) * rank + d, rem % self.size(d));
      rem /= self.size(d);
    }
  }
  return out;
}

Tensors k_nonzero(const KernelCall& c) {
  return {nonzero_of(c.tensor("self"))};
}

// nonzero_numpy: one vector per dim (a 0-dim input counts as one dim of size 1).
Tensors k_nonzero_numpy(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  Tensor x = self.dim() == 0 ? self.as_strided({1}, {1}, self.storage_offset()) : self;
  Tensor nz = nonzero_of(x);
  Tensors out;
  int64_t rows = nz.size(0), rank = x.dim();
  for (int64_t d = 0; d < rank; ++d) {
    Tensor col = Tensor::empty(DType::I64, {rows});
    for (int64_t r = 0; r < rows; ++r) col.store_int(r, nz.load_int(r * rank + d));
    out.push_back(col);
  }
  return out;
}

Tensors k_masked_select(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  const Tensor& mask = c.tensor("mask");
  if (mask.dtype() != DType::Bool)
    fail("masked_select: expected BoolTensor for mask, but got " + dname(mask.dtype()));
  Shape shape = broadcast(self.sizes(), mask.sizes());
  Flat x = flatten(expand_to(self, shape));
  Flat m = flatten(expand_to(mask, shape));
  std::vector<int64_t> hits;
  for (int64_t k = 0; k < m.size(); ++k)
    if (m.nonzero(k)) hits.push_back(k);
  Tensor out = Tensor::empty(self.dtype(), {int64_t(hits.size())});
  for (size_t r = 0; r < hits.size(); ++r) put(out, int64_t(r), x, hits[r]);
  return {out};
}

// Groups of equal elements: `order` lists the elements so that equal ones are adjacent; each run
// of equal elements is one unique value, in that order. Returns the first element of each run,
// and sets inverse[k] (the run of element k) and counts.
std::vector<int64_t> runs(const std::vector<int64_t>& order,
                          const std::function<bool(int64_t, int64_t)>& same,
                          std::vector<int64_t>* inverse, std::vector<int64_t>* counts) {
  std::vector<int64_t> firsts;
  for (size_t p = 0; p < order.size(); ++p) {
    if (p == 0 || !same(order[p - 1], order[p])) {
      firsts.push_back(order[p]);
      counts->push_back(0);
    }
    (*inverse)[size_t(order[p])] = int64_t(firsts.size()) - 1;
    ++counts->back();
  }
  return firsts;
}

// _unique2 (torch.unique without dim): the distinct elements in ascending order (PyTorch's CPU
// kernel sorts whatever `sorted` says), with each element's position among them and each one's
// count when asked; what is not asked is an empty vector.
Tensors k_unique2(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  Flat x = flatten(self);
  std::vector<int64_t> order(size_t(x.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return x.less(a, b); });
  std::vector<int64_t> inverse(order.size()), counts;
  std::vector<int64_t> firsts =
      runs(order, [&](int64_t a, int64_t b) { return x.equal(a, b); }, &inverse, &counts);
  Tensor values = Tensor::empty(self.dtype(), {int64_t(firsts.size())});
  for (size_t r = 0; r < firsts.size(); ++r) put(values, int64_t(r), x, firsts[r]);
  Tensor inv = not_asked(self);
  if (c.arg("return_inverse").b) {
    inv = Tensor::empty(DType::I64, self.sizes());
    for (size_t k = 0; k < inverse.size(); ++k) inv.store_int(int64_t(k), inverse[k]);
  }
  return {values, inv, c.arg("return_counts").b ? int64_vector(counts) : not_asked(self)};
}

// Slices along `dim` as rows: slice s is the elements with index s at dim, in row-major order.
struct Slices {
  Flat x;
  int64_t count = 0, len = 0, outer = 0, inner = 0;
  int64_t at(int64_t s, int64_t j) const { // flat index of element j of slice s
    int64_t o = j / inner, in = j % inner;
    return (o * count + s) * inner + in;
  }
  bool equal(int64_t a, int64_t b) const {
    for (int64_t j = 0; j < len; ++j)
      if (!x.equal(at(a, j), at(b, j))) return false;
    return true;
  }
  bool less(int64_t a, int64_t b) const { // lexicographic
    for (int64_t j = 0; j < len; ++j) {
      if (x.less(at(a, j), at(b, j))) return true;
      if (x.less(at(b, j), at(a, j))) return false;
    }
    return false;
  }
};

Slices slices_of(const Tensor& self, int64_t dim) {
  Slices s;
  s.x = flatten(self);
  s.count = self.size(dim);
  s.outer = 1;
  s.inner = 1;
  for (int64_t d = 0; d < dim; ++d) s.outer *= self.size(d);
  for (int64_t d = dim + 1; d < self.dim(); ++d) s.inner *= self.size(d);
  s.len = s.outer * s.inner;
  return s;
}

// The unique slices (firsts) of self along dim, gathered into a tensor of self's dtype.
Tensor gather_slices(const Tensor& self, int64_t dim, const Slices& s,
                     const std::vector<int64_t>& firsts) {
  Shape shape = self.sizes();
  shape[size_t(dim)] = int64_t(firsts.size());
  Tensor out = Tensor::empty(self.dtype(), shape);
  int64_t n = int64_t(firsts.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t in = 0; in < s.inner; ++in)
        put(out, (o * n + r) * s.inner + in, s.x, (o * s.count + firsts[size_t(r)]) * s.inner + in);
  return out;
}

Tensors unique_along(const KernelCall& c, const Tensor& self, int64_t dim, bool sort,
                     bool want_inverse, bool want_counts) {
  if (self.dim() == 0) fail("unique: a 0-dim tensor has no dim " + std::to_string(dim));
  dim = wrap(dim, self.dim());
  Slices s = slices_of(self, dim);
  std::vector<int64_t> order(size_t(s.count));
  std::iota(order.begin(), order.end(), 0);
  if (sort)
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return s.less(a, b); });
  std::vector<int64_t> inverse(order.size()), counts;
  std::vector<int64_t> firsts =
      runs(order, [&](int64_t a, int64_t b) { return s.equal(a, b); }, &inverse, &counts);
  (void)c;
  return {gather_slices(self, dim, s, firsts),
          want_inverse ? int64_vector(inverse) : not_asked(self),
          want_counts ? int64_vector(counts) : not_asked(self)};
}

// unique_consecutive: runs of equal neighbours; with a dim, of equal neighbouring slices.
Tensors k_unique_consecutive(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  bool want_inverse = c.arg("return_inverse").b, want_counts = c.arg("return_counts").b;
  const Arg& dim = c.arg("dim");
  if (!dim.is_none()) return unique_along(c, self, dim.i, false, want_inverse, want_counts);
  Flat x = flatten(self);
  std::vector<int64_t> order(size_t(x.size()));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> inverse(order.size()), counts;
  std::vector<int64_t> firsts =
      runs(order, [&](int64_t a, int64_t b) { return x.equal(a, b); }, &inverse, &counts);
  Tensor values = Tensor::empty(self.dtype(), {int64_t(firsts.size())});
  for (size_t r = 0; r < firsts.size(); ++r) put(values, int64_t(r), x, firsts[r]);
  Tensor inv = not_asked(self);
  if (want_inverse) {
    inv = Tensor::empty(DType::I64, self.sizes());
    for (size_t k = 0; k < inverse.size(); ++k) inv.store_int(int64_t(k), inverse[k]);
  }
  return {values, inv, want_counts ? int64_vector(counts) : not_asked(self)};
}

// unique_dim: the distinct slices along dim, in lexicographic order (PyTorch always sorts them).
Tensors k_unique_dim(const KernelCall& c) {
  return unique_along(c, c.tensor("self"), c.arg("dim").i, true, c.arg("return_inverse").b,
                      c.arg("return_counts").b);
}

// bincount: counts (or summed weights) of each value 0..max; i64 counts, f32 sums of f32
// weights, f64 sums of any other weights, as PyTorch's CPU kernel.
Tensors k_bincount(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  int64_t minlength = c.arg("minlength").i;
  if (self.dim() != 1 || !is_integral(self.dtype()))
    fail("bincount only supports 1-d non-negative integral inputs.");
  if (minlength < 0) fail("minlength should be >= 0");
  Flat x = flatten(self);
  int64_t bins = minlength;
  for (int64_t v : x.i) {
    if (v < 0) fail("bincount only supports 1-d non-negative integral inputs.");
    bins = std::max(bins, v + 1);
  }
  const Arg& w = c.arg("weights");
  DType t = DType::I64;
  Flat wv;
  if (!w.is_none()) {
    const Tensor& wt = c.tensor("weights");
    if (wt.dim() != 1 || wt.size(0) != self.size(0))
      fail("weights should be 1-d and have the same length as input");
    t = wt.dtype() == DType::F32 ? DType::F32 : DType::F64;
    wv = flatten(wt.to(DType::F64));
  }
  std::vector<double> sums(size_t(bins), 0.0);
  std::vector<int64_t> counts(size_t(bins), 0);
  for (size_t k = 0; k < x.i.size(); ++k) {
    ++counts[size_t(x.i[k])];
    if (!w.is_none()) {
      double add = wv.f[k];
      double& s = sums[size_t(x.i[k])];
      s = t == DType::F32 ? double(float(s) + float(add)) : s + add;
    }
  }
  Tensor out = Tensor::empty(c.result_dtype(t), {bins});
  for (int64_t b = 0; b < bins; ++b) {
    if (t == DType::I64)
      out.store_int(b, counts[size_t(b)]);
    else
      out.store(b, sums[size_t(b)]);
  }
  return {out};
}

// tensor_split with a tensor: a 0-dim one is the number of sections, a vector the split points.
Tensors k_tensor_split_tensor(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  const Tensor& ix = c.tensor("tensor_indices_or_sections");
  if (self.dim() == 0)
    fail("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  if (ix.dim() > 1 || !is_integral(ix.dtype()))
    fail("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
         "one-dimensional tensor of integers");
  int64_t dim = wrap(c.arg("dim").i, self.dim()), n = self.size(dim);
  Flat v = flatten(ix);
  std::vector<int64_t> bounds;
  if (ix.dim() == 0) {
    int64_t k = v.i[0];
    if (k <= 0) fail("number of sections must be larger than 0, got " + std::to_string(k));
    for (int64_t i = 0, at = 0; i + 1 < k; ++i) {
      at += n / k + (i < n % k ? 1 : 0);
      bounds.push_back(at);
    }
  } else {
    bounds = v.i;
  }
  Tensors out;
  Shape st = self.strides();
  int64_t prev = 0;
  auto piece = [&](int64_t lo, int64_t hi) {
    Shape s = self.sizes();
    s[size_t(dim)] = std::max<int64_t>(0, hi - lo);
    out.push_back(view_of(self, s, st, self.storage_offset() + lo * self.stride(dim)));
  };
  for (int64_t b : bounds) {
    int64_t at = std::clamp<int64_t>(b < 0 ? b + n : b, 0, n);
    int64_t lo = std::min(prev, n);
    piece(lo, std::max(at, lo));
    prev = std::max(at, prev);
  }
  piece(std::min(prev, n), n);
  return out;
}

// _local_scalar_dense (Tensor.item()): the one element as a 0-dim tensor.
Tensors k_local_scalar_dense(const KernelCall& c) {
  const Tensor& self = c.tensor("self");
  if (self.numel() != 1)
    fail("a Tensor with " + std::to_string(self.numel()) +
         " elements cannot be converted to Scalar");
  Flat x = flatten(self);
  Tensor out = Tensor::empty(self.dtype(), {});
  put(out, 0, x, 0);
  return {out};
}

const OpTable<KernelFn>::Row kSelectionKernels[] = {
    {OpId::_local_scalar_dense, k_local_scalar_dense},
    {OpId::bincount, k_bincount},
    {OpId::tensor_split_tensor_indices_or_sections, k_tensor_split_tensor},
    {OpId::nonzero, k_nonzero},
    {OpId::argwhere, k_nonzero},
    {OpId::nonzero_numpy, k_nonzero_numpy},
    {OpId::masked_select, k_masked_select},
    {OpId::_unique2, k_unique2},
    {OpId::unique_consecutive, k_unique_consecutive},
    {OpId::unique_dim, k_unique_dim},
};

} // namespace

std::span<const OpTable<KernelFn>::Row> selection_kernels() {
  return kSelectionKernels;
}

} // namespace fxc::kernel_detail
