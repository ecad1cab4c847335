// Meta functions: every op's output dtype, sizes, strides and offset, by PyTorch's rules. The
// functions live by op family in frontend/meta/<family>.cpp; this file joins their rows into one
// table and adds the plugins' ops.
#include "frontend/meta.h"

#include "frontend/composite.h"
#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/meta/meta_util.h"

#include <stdexcept>

namespace fxc {

namespace {

using meta_detail::Metas;

// A plugin's op (frontend/custom_ops.h): its shape function, on the device of the first tensor.
Metas custom_op_meta(const Graph& g, const Node& n) {
  const CustomOp* op = find_custom_op(n.target);
  if (!op) throw Error(g.source, unknown_op_message(n.target), n.name, n.target);
  std::vector<const TensorMeta*> tensors;
  for (size_t i = 0; i < op->schema.args.size() && i < n.args.size(); ++i) {
    if (op->schema.args[i].type != ArgType::Tensor) continue;
    const Arg& a = n.args[i];
    if (a.kind != Arg::Kind::Tensor || a.tensor < 0 || size_t(a.tensor) >= g.values.size())
      throw Error(g.source, "argument '" + op->schema.args[i].name + "' is not a tensor", n.name,
                  n.target);
    tensors.push_back(&g.values[size_t(a.tensor)].meta);
  }
  try {
    fxc_op_args args = custom_op_args(*op, n.args, tensors);
    return custom_op_output_metas(*op, args, tensors.empty() ? Device{} : tensors[0]->device);
  } catch (const std::invalid_argument& e) {
    throw Error(g.source, e.what(), n.name, n.target);
  }
}

// A composite op (frontend/composite.h): the metadata of its decomposition's results.
Metas composite_meta(const Graph& g, const Node& n) {
  const CompositeHook* h = composite_hook();
  if (!h) throw Error(g.source, "no meta function for this op", n.name, n.target);
  Graph sub = h->expand(g, n);
  Metas out;
  for (ValueId v : sub.outputs) out.push_back(sub.values[size_t(v)].meta);
  return out;
}

const OpTable<MetaFn>& meta_table() {
  using namespace meta_detail;
  static const OpTable<MetaFn> table(
      {pointwise_meta(), reduction_meta(), norm_meta(), linalg_meta(), pool_meta(), backward_meta(),
       indexing_meta(), view_meta(), factory_meta(), random_meta(), selection_meta()});
  return table;
}

} // namespace

const OpLayer& meta_layer() {
  return meta_table();
}

MetaFn find_meta(std::string_view target) {
  if (MetaFn fn = meta_table().find(target)) return fn;
  if (find_custom_op(target)) return custom_op_meta;
  return is_composite(target) ? composite_meta : nullptr;
}

} // namespace fxc
