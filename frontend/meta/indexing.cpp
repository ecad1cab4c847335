// Meta functions of the indexing ops: embedding, gather, scatter_add, index_select and
// index.Tensor (advanced indexing, following meta_index_Tensor), with their index dtype and
// shape checks.
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Indexing.

bool is_index_dtype(DType t) {
  return t == DType::I64 || t == DType::I32;
}

Metas embedding(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& w = c.tensor("weight");
  const TensorMeta& idx = c.tensor("indices");
  if (w.dim() != 2) c.fail("'weight' must be 2-D, but " + c.desc("weight"));
  if (!is_index_dtype(idx.dtype))
    c.fail("expected indices of dtype i64 or i32, but " + c.desc("indices"));
  Sizes out = idx.sizes;
  out.push_back(w.sizes[1]);
  return {make(w.dtype, out, w.device)};
}

Metas gather(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  if (idx.numel() != 0) {
    if (!is_index_dtype(idx.dtype))
      c.fail("gather(): expected an i64 or i32 index, but " + c.desc("index"));
    if (std::max<int64_t>(idx.dim(), 1) != std::max<int64_t>(self.dim(), 1))
      c.fail("index tensor must have the same number of dimensions as input tensor, but " +
             c.desc("index") + " and " + c.desc("self"));
    for (int64_t i = 0; i < idx.dim(); ++i)
      if (i != d && self.dim() > 0 && idx.sizes[size_t(i)] > self.sizes[size_t(i)])
        c.fail("size does not match at dimension " + std::to_string(i) + ": expected " +
               c.desc("index") + " to be no larger than " + c.desc("self") +
               " apart from dimension " + std::to_string(d));
  }
  return {make(self.dtype, idx.sizes, self.device)};
}

Metas scatter_add(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("src");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  if (idx.dtype != DType::I64)
    c.fail("scatter_add(): expected an i64 index, but " + c.desc("index"));
  if (src.dtype != self.dtype)
    c.fail(c.desc("self") + " but " + c.desc("src") + " (expected the same dtype)");
  if (idx.numel() != 0) {
    int64_t r = std::max<int64_t>(self.dim(), 1);
    if (std::max<int64_t>(idx.dim(), 1) != r || std::max<int64_t>(src.dim(), 1) != r)
      c.fail("index, self and src must have the same number of dimensions, but " + c.desc("index") +
             ", " + c.desc("self") + " and " + c.desc("src"));
    // A 0-dim operand counts as size 1 along its single (implicit) dim.
    auto size_at = [](const TensorMeta& t, int64_t i) {
      return t.dim() == 0 ? int64_t(1) : t.sizes[size_t(i)];
    };
    for (int64_t i = 0; i < idx.dim(); ++i) {
      if (idx.sizes[size_t(i)] > size_at(src, i) ||
          (i != d && idx.sizes[size_t(i)] > size_at(self, i)))
        c.fail("expected " + c.desc("index") + " to be no larger than " + c.desc("src") +
               " and, apart from dimension " + std::to_string(d) + ", than " + c.desc("self"));
    }
  }
  return {make(self.dtype, self.sizes, self.device)};
}

Metas index_select(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  if (idx.dim() > 1)
    c.fail("index_select(): index is supposed to be a vector, but " + c.desc("index"));
  if (!is_index_dtype(idx.dtype))
    c.fail("index_select(): expected an i64 or i32 index, but " + c.desc("index"));
  Sizes out = self.sizes;
  if (self.dim() == 0) {
    if (idx.numel() != 1)
      c.fail("index_select(): index to select a 0-dim tensor must have one element");
    return {make(self.dtype, out, self.device)};
  }
  out[size_t(d)] = idx.numel();
  // The fake-tensor implementation is self[:, ..., index]: aten.index's layout rule.
  Sizes restrided = self.strides;
  restrided[size_t(d)] = 0;
  return {index_layout(self, out, restrided)};
}

// aten.index.Tensor, following meta_index_Tensor (torch/_meta_registrations.py).
Metas index_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  auto idx = c.tensors("indices");
  if (idx.empty()) c.fail("at least one index must be provided");
  std::vector<const TensorMeta*> defined;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (!idx[i]) continue;
    if (idx[i]->dtype == DType::Bool || idx[i]->dtype == DType::I8 || idx[i]->dtype == DType::U8)
      c.fail("index " + std::to_string(i) + " is a mask (" + format_meta(*idx[i]) +
             "); boolean mask indexing has a data-dependent shape and is not supported");
    if (!is_index_dtype(idx[i]->dtype))
      c.fail("tensors used as indices must be long, int, byte or bool tensors, but index " +
             std::to_string(i) + " is " + format_meta(*idx[i]));
    defined.push_back(idx[i]);
  }
  if (int64_t(idx.size()) > self.dim())
    c.fail("too many indices for tensor of dimension " + std::to_string(self.dim()) + " (got " +
           std::to_string(idx.size()) + ")");
  Sizes rep = broadcast_all(c, defined);
  std::vector<bool> is_idx(size_t(self.dim()), false);
  for (size_t i = 0; i < idx.size(); ++i) is_idx[i] = idx[i] != nullptr;
  // hasContiguousSubspace: the indexed dims are adjacent.
  int state = 0;
  bool contiguous_subspace = true;
  for (bool b : is_idx) {
    if (state == 0 && b)
      state = 1;
    else if (state == 1 && !b)
      state = 2;
    else if (state == 2 && b)
      contiguous_subspace = false;
  }
  // transposeToFront when not adjacent.
  std::vector<size_t> order;
  for (size_t i = 0; i < is_idx.size(); ++i)
    if (is_idx[i] || contiguous_subspace) order.push_back(i);
  if (!contiguous_subspace)
    for (size_t i = 0; i < is_idx.size(); ++i)
      if (!is_idx[i]) order.push_back(i);
  Sizes before, after, strides_before, strides_after;
  bool seen = false;
  for (size_t p : order) {
    if (is_idx[p]) {
      seen = true;
      continue;
    }
    (seen ? after : before).push_back(self.sizes[p]);
    (seen ? strides_after : strides_before).push_back(self.strides[p]);
  }
  Sizes out = before;
  out.insert(out.end(), rep.begin(), rep.end());
  out.insert(out.end(), after.begin(), after.end());
  c.check_sizes(out);
  // Restrided source: indexed dims become broadcast (stride 0) dims of the replacement shape.
  Sizes rst = strides_before;
  rst.insert(rst.end(), rep.size(), 0);
  rst.insert(rst.end(), strides_after.begin(), strides_after.end());
  return {index_layout(self, out, rst)};
}

// ---------------------------------------------------------------------------------------------
// Issue 18, indexing: scatter (.src, .value), scatter_reduce.two, index_put (and index_put_).

// The index checks of scatter/scatter_reduce (scatter_gather_dtype_check, scatter_shape_check).
void scatter_checks(const Ctx& c, const TensorMeta& self, const TensorMeta& idx,
                    const TensorMeta* src, int64_t d, const char* op) {
  if (idx.dtype != DType::I64)
    c.fail(std::string(op) + "(): expected an i64 index, but " + c.desc("index"));
  if (src && src->dtype != self.dtype)
    c.fail(std::string(op) + "(): " + c.desc("self") + " but " + c.desc("src") +
           " (expected the same dtype)");
  if (idx.numel() == 0) return;
  int64_t r = std::max<int64_t>(self.dim(), 1);
  if (std::max<int64_t>(idx.dim(), 1) != r || (src && std::max<int64_t>(src->dim(), 1) != r))
    c.fail(std::string(op) + "(): index and self" + (src ? " and src" : "") +
           " must have the same number of dimensions, but " + c.desc("index") + " and " +
           c.desc("self"));
  for (int64_t i = 0; i < idx.dim(); ++i) {
    if ((src && src->dim() > 0 && idx.sizes[size_t(i)] > src->sizes[size_t(i)]) ||
        (i != d && self.dim() > 0 && idx.sizes[size_t(i)] > self.sizes[size_t(i)]))
      c.fail(std::string(op) + "(): expected " + c.desc("index") + " to be no larger than " +
             (src ? c.desc("src") + " and, " : std::string()) + "apart from dimension " +
             std::to_string(d) + ", than " + c.desc("self"));
  }
}

Metas scatter(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta* src = c.has_arg("src") ? &c.tensor("src") : nullptr;
  int64_t d = c.dim(c.int_("dim"), self.dim());
  scatter_checks(c, self, idx, src, d, "scatter");
  return {make(self.dtype, self.sizes, self.device)};
}

Metas scatter_reduce(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  const TensorMeta& src = c.tensor("src");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  const std::string& r = c.str("reduce");
  if (r != "sum" && r != "prod" && r != "mean" && r != "amax" && r != "amin")
    c.fail("reduce argument must be either sum, prod, mean, amax or amin, got " + r);
  scatter_checks(c, self, idx, &src, d, "scatter_reduce");
  return {make(self.dtype, self.sizes, self.device)};
}

// index_put(self, indices, values, accumulate): self's layout; values must broadcast to the
// shape self[indices] has and have self's dtype.
Metas index_put(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& values = c.tensor("values");
  auto idx = c.tensors("indices");
  if (values.dtype != self.dtype)
    c.fail("Index put requires the source and destination dtypes match, got " + c.desc("self") +
           " and " + c.desc("values"));
  if (int64_t(idx.size()) > self.dim())
    c.fail("too many indices for tensor of dimension " + std::to_string(self.dim()) + " (got " +
           std::to_string(idx.size()) + ")");
  std::vector<const TensorMeta*> defined;
  size_t k = 0;
  for (const TensorMeta* t : idx) {
    ++k;
    if (!t) continue;
    if (t->dtype == DType::Bool || t->dtype == DType::U8) {
      // A mask covers as many dims as it has, each of the same size as self's.
      for (int64_t j = 0; j < t->dim(); ++j)
        if (k - 1 + size_t(j) >= size_t(self.dim()) ||
            t->sizes[size_t(j)] != self.sizes[k - 1 + size_t(j)])
          c.fail("the shape of the mask " + format_meta(*t) + " at index " + std::to_string(k - 1) +
                 " does not match the shape of the indexed tensor " + c.desc("self"));
      continue;
    }
    if (!is_index_dtype(t->dtype))
      c.fail("tensors used as indices must be long, int, byte or bool tensors, but index " +
             std::to_string(k - 1) + " is " + format_meta(*t));
    defined.push_back(t);
  }
  if (defined.size() == [&] {
        size_t m = 0;
        for (const TensorMeta* t : idx) m += t != nullptr;
        return m;
      }()) {
    // Integer indices only: values must broadcast to self[indices]'s shape.
    Sizes rep = broadcast_all(c, defined);
    Sizes before, after;
    bool seen = false;
    std::vector<bool> is_idx(size_t(self.dim()), false);
    for (size_t i = 0; i < idx.size(); ++i) is_idx[i] = idx[i] != nullptr;
    int state = 0;
    bool adjacent = true;
    for (bool b : is_idx) {
      if (state == 0 && b)
        state = 1;
      else if (state == 1 && !b)
        state = 2;
      else if (state == 2 && b)
        adjacent = false;
    }
    for (size_t p = 0; p < is_idx.size(); ++p) {
      if (is_idx[p]) {
        seen = true;
        continue;
      }
      (seen && adjacent ? after : before).push_back(self.sizes[p]);
    }
    Sizes shape = adjacent ? before : Sizes{};
    shape.insert(shape.end(), rep.begin(), rep.end());
    if (adjacent)
      shape.insert(shape.end(), after.begin(), after.end());
    else
      shape.insert(shape.end(), before.begin(), before.end());
    try {
      if (broadcast_shapes(shape, values.sizes) != shape) throw std::invalid_argument("");
    } catch (const std::invalid_argument&) {
      c.fail("shape mismatch: value tensor of shape " + join(values.sizes) +
             " cannot be broadcast to indexing result of shape " + join(shape));
    }
  }
  if (n.target == "aten.index_put_.default") return {self};
  return {make(self.dtype, self.sizes, self.device)};
}
// index_add / index_fill.int_Scalar: self's sizes; a vector (or scalar) index of i64 or i32.
Metas index_add_fill(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& idx = c.tensor("index");
  int64_t d = c.dim(c.int_("dim"), self.dim());
  if (idx.dim() > 1) c.fail("index must be a vector, but " + c.desc("index"));
  if (!is_index_dtype(idx.dtype)) c.fail("expected an i64 or i32 index, but " + c.desc("index"));
  if (c.has_arg("source")) {
    const TensorMeta& src = c.tensor("source");
    if (src.dtype != self.dtype)
      c.fail(c.desc("self") + " but " + c.desc("source") + " (expected the same dtype)");
    Sizes want = self.sizes;
    if (self.dim() > 0) want[size_t(d)] = idx.numel();
    if (std::max<int64_t>(src.dim(), 1) != std::max<int64_t>(self.dim(), 1) ||
        (self.dim() > 0 && src.sizes != want) || (self.dim() == 0 && src.numel() != idx.numel()))
      c.fail("index_add(): " + c.desc("source") + " must be " + join(want) + " for " +
             c.desc("self") + " and " + c.desc("index"));
  }
  return {make(self.dtype, self.sizes, self.device)};
}
// End of the issue-18 indexing.

/// masked_scatter: self and the bool mask broadcast together; source has self's dtype (that it
/// holds as many elements as the mask has ones is checked by the kernel: data-dependent).
Metas masked_scatter(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  const TensorMeta& src = c.tensor("source");
  if (mask.dtype != DType::Bool)
    c.fail("masked_scatter_ only supports boolean masks, but got mask " + format_meta(mask));
  if (src.dtype != self.dtype)
    c.fail("masked_scatter: expected self and source to have same dtypes but got " +
           std::string(dtype_name(self.dtype)) + " and " + std::string(dtype_name(src.dtype)));
  Sizes shape = broadcast_all(c, {&mask, &self});
  return {make(self.dtype, shape, common_device(c, {&self, &mask, &src}))};
}

const OpTable<MetaFn>::Row kIndexingMeta[] = {
    {OpId::embedding, guarded<embedding>},
    {OpId::gather, guarded<gather>},
    {OpId::index_Tensor, guarded<index_tensor>},
    {OpId::index_select, guarded<index_select>},
    {OpId::scatter_add, guarded<scatter_add>},
    {OpId::index_put, guarded<index_put>},
    {OpId::index_add, guarded<index_add_fill>},
    {OpId::index_fill_int_Scalar, guarded<index_add_fill>},
    {OpId::index_put_, guarded<index_put>},
    {OpId::scatter_reduce_two, guarded<scatter_reduce>},
    {OpId::scatter_src, guarded<scatter>},
    {OpId::scatter_value, guarded<scatter>},
    {OpId::masked_scatter, guarded<masked_scatter>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> indexing_meta() {
  return kIndexingMeta;
}

} // namespace fxc::meta_detail
