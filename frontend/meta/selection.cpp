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

const OpTable<MetaFn>::Row kSelectionMeta[] = {
    {OpId::nonzero, guarded<nonzero>},       {OpId::argwhere, guarded<nonzero>},
    {OpId::nonzero_numpy, guarded<nonzero>}, {OpId::masked_select, guarded<masked_select>},
    {OpId::_unique2, guarded<unique>},       {OpId::unique_consecutive, guarded<unique>},
    {OpId::unique_dim, guarded<unique>},
};

} // namespace

std::span<const OpTable<MetaFn>::Row> selection_meta() {
  return kSelectionMeta;
}

} // namespace fxc::meta_detail
