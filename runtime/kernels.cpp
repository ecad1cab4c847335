// Reference kernels: one plain host implementation per op, in one table keyed by target. The
// kernels live by op family in runtime/kernels/<family>.cpp; this file joins their rows into one
// table, computes view strides and runs a node's kernel (or a plugin's).
#include "runtime/kernels.h"

#include "frontend/composite.h"
#include "frontend/diag.h"
#include "frontend/schema.h"
#include "frontend/tensor_rules.h"
#include "runtime/interpreter.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/plugin.h"

#include <algorithm>
#include <cassert>

namespace fxc {

const Tensor& KernelCall::tensor(std::string_view name) const {
  int i = node.schema->index_of(name);
  assert(i >= 0 && size_t(i) < tensors.size() && "no such tensor argument");
  return tensors[size_t(i)];
}

const std::vector<Tensor>& KernelCall::list(std::string_view name) const {
  int i = node.schema->index_of(name);
  assert(i >= 0 && size_t(i) < lists.size() && "no such tensor list argument");
  return lists[size_t(i)];
}

namespace {

using kernel_detail::Shape;

const OpTable<KernelFn>& kernel_table() {
  using namespace kernel_detail;
  static const OpTable<KernelFn> table({pointwise_kernels(), reduction_kernels(), norm_kernels(),
                                        linalg_kernels(), pool_kernels(), backward_kernels(),
                                        indexing_kernels(), view_kernels(), factory_kernels(),
                                        random_kernels(), special_kernels(), selection_kernels()});
  return table;
}

} // namespace

const OpLayer& kernel_layer() {
  return kernel_table();
}

bool compute_view_strides(const Shape& oldshape, const Shape& oldstride, const Shape& newshape,
                          Shape* out) {
  if (oldshape.empty()) {
    *out = Shape(newshape.size(), 1);
    return true;
  }
  int64_t numel = checked_numel(oldshape);
  if (numel == 0 && oldshape == newshape) {
    *out = oldstride;
    return true;
  }
  Shape ns(newshape.size(), 0);
  if (numel == 0) {
    for (int64_t d = int64_t(newshape.size()) - 1; d >= 0; --d)
      ns[size_t(d)] = d == int64_t(newshape.size()) - 1
                          ? 1
                          : std::max<int64_t>(newshape[size_t(d) + 1], 1) * ns[size_t(d) + 1];
    *out = ns;
    return true;
  }
  int64_t view_d = int64_t(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = int64_t(oldshape.size()) - 1; td >= 0; --td) {
    tensor_numel *= oldshape[size_t(td)];
    if (td == 0 || (oldshape[size_t(td) - 1] != 1 &&
                    oldstride[size_t(td) - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[size_t(view_d)] == 1)) {
        ns[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= newshape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = oldstride[size_t(td) - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return false;
  *out = ns;
  return true;
}

KernelFn find_kernel(std::string_view target) {
  return kernel_table().find(target);
}

namespace {

// A composite op (frontend/composite.h): its decomposition, built on the operands' metadata and
// run by the interpreter. Views come back as views of the operands.
std::vector<Tensor> run_composite(const KernelCall& call) {
  const Node& n = call.node;
  Graph g;
  g.source = "<composite>";
  std::vector<Tensor> inputs;
  Node copy = n;
  auto input = [&](const Tensor& t) {
    if (!t.defined()) return kNoValue;
    ValueId v = g.add_value("operand_" + std::to_string(inputs.size()), t.meta());
    g.inputs.push_back({v, InputKind::UserInput, g.values[size_t(v)].name, true});
    inputs.push_back(t);
    return v;
  };
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (n.args[i].kind == Arg::Kind::Tensor) copy.args[i].tensor = input(call.tensors[i]);
    if (n.args[i].kind == Arg::Kind::Tensors)
      for (size_t k = 0; k < n.args[i].tensors.size(); ++k)
        copy.args[i].tensors[k] = input(call.lists[i][k]);
  }
  copy.outputs.clear();
  Graph sub;
  try {
    sub = composite_hook()->expand(g, copy);
  } catch (const Error& e) {
    throw TensorError(e.message());
  }
  InterpretOptions opts;
  opts.float64 = call.float64;
  try {
    return interpret(sub, inputs, opts);
  } catch (const Error& e) {
    throw TensorError(e.message());
  }
}

} // namespace

std::vector<Tensor> run_kernel(const KernelCall& call) {
  assert(call.node.schema && "node without schema");
  KernelFn fn = find_kernel(call.node.target);
  if (!fn)
    if (const CustomOp* op = find_custom_op(call.node.target)) return run_custom_op_cpu(*op, call);
  if (!fn && is_composite(call.node.target)) return run_composite(call);
  if (!fn) throw TensorError("the reference interpreter has no kernel for " + call.node.target);
  return fn(call);
}

} // namespace fxc
