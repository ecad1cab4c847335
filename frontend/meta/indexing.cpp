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

const OpTable<MetaFn>::Row kIndexingMeta[] = {
    {OpId::embedding, guarded<embedding>},
    {OpId::gather, guarded<gather>},
    {OpId::index_Tensor, guarded<index_tensor>},
    {OpId::index_select, guarded<index_select>},
    {OpId::scatter_add, guarded<scatter_add>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> indexing_meta() { return kIndexingMeta; }

} // namespace fxc::meta_detail
