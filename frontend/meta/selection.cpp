// Meta functions of the data-dependent ops (nonzero, argwhere, nonzero_numpy, masked_select,
// _unique2, unique_consecutive, unique_dim): how many elements they find depends on the values,
// so no meta function can give their sizes. torch.export names such a size with an unbacked
// symbol (u0) and the eager interpreter binds it when the node has run (docs/dynamic.md); these
// functions check the operands and then say why the sizes cannot be known here (a graph that
// holds the op with fixed sizes, an .fxg, or a rewrite that needs its metadata).
#include "frontend/meta/meta_util.h"

namespace fxc::meta_detail {
namespace {

[[noreturn]] void data_dependent(const Ctx& c, const std::string& of) {
  c.fail("the size of its result depends on the values of " + of +
         " (a data-dependent size): only a torch.export archive, which names that size with a "
         "symbol, can hold it, and only --backend=eager --run runs it");
}

Metas nonzero(const Graph& g, const Node& n) {
  Ctx c(g, n);
  c.tensor("self");
  data_dependent(c, "'self'");
}

Metas masked_select(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& mask = c.tensor("mask");
  if (mask.dtype != DType::Bool)
    c.fail("masked_select: expected BoolTensor for mask, but " + c.desc("mask"));
  broadcast_all(c, {&self, &mask});
  data_dependent(c, "'mask'");
}

Metas unique(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  if (c.has_arg("dim") && c.has("dim")) c.dim(c.int_("dim"), self.dim());
  data_dependent(c, "'self'");
}

// bincount: as many bins as the largest value + 1 (at least minlength).
Metas bincount(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  if (self.dim() != 1 || !is_integral(self.dtype))
    c.fail("bincount only supports 1-d non-negative integral inputs, but " + c.desc("self"));
  if (const TensorMeta* w = c.opt_tensor("weights"); w && w->sizes != self.sizes)
    c.fail("weights should be 1-d and have the same length as input");
  if (c.int_("minlength") < 0) c.fail("minlength should be >= 0");
  data_dependent(c, "'self'");
}

// tensor_split with a tensor of indices or sections: the split points are values.
Metas tensor_split_tensor(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  const TensorMeta& ix = c.tensor("tensor_indices_or_sections");
  if (ix.dtype != DType::I64 || ix.dim() > 1)
    c.fail("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
           "one-dimensional tensor of i64, but " +
           c.desc("tensor_indices_or_sections"));
  if (self.dim() == 0)
    c.fail("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  c.dim(c.int_("dim"), self.dim());
  data_dependent(c, "'tensor_indices_or_sections'");
}

// _local_scalar_dense (Tensor.item()): the one element, here a 0-dim tensor; what it is depends
// on the values, so a size made from it is data-dependent (only the eager interpreter runs it).
Metas local_scalar_dense(const Graph& g, const Node& n) {
  Ctx c(g, n);
  const TensorMeta& self = c.tensor("self");
  if (self.numel() != 1)
    c.fail("a Tensor with " + std::to_string(self.numel()) +
           " elements cannot be converted to Scalar");
  return {make(self.dtype, {}, self.device)};
}

const OpTable<MetaFn>::Row kSelectionMeta[] = {
    {OpId::_local_scalar_dense, guarded<local_scalar_dense>},
    {OpId::bincount, guarded<bincount>},
    {OpId::tensor_split_tensor_indices_or_sections, guarded<tensor_split_tensor>},
    {OpId::nonzero, guarded<nonzero>},
    {OpId::argwhere, guarded<nonzero>},
    {OpId::nonzero_numpy, guarded<nonzero>},
    {OpId::masked_select, guarded<masked_select>},
    {OpId::_unique2, guarded<unique>},
    {OpId::unique_consecutive, guarded<unique>},
    {OpId::unique_dim, guarded<unique>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> selection_meta() {
  return kSelectionMeta;
}

} // namespace fxc::meta_detail
