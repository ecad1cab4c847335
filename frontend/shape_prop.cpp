// Shape and dtype propagation: runs every node's meta function in graph order.
#include "frontend/shape_prop.h"

#include "frontend/diag.h"
#include "frontend/meta.h"

namespace fxc {

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// Every field, so that differences in strides or offset show: "f32[2, 3]{3, 1}+0 cpu".
std::string describe(const TensorMeta& m) {
  return format_meta(m) + "{" + ints(m.strides) + "}+" + std::to_string(m.storage_offset) + " " +
         device_name(m.device);
}

// The inferred output metadata of node `i`; throws fxc::Error.
std::vector<TensorMeta> infer(const Graph& g, const Node& n) {
  MetaFn fn = find_meta(n.target);
  if (!fn) throw Error(g.source, "no meta function for this op", n.name, n.target);
  std::vector<TensorMeta> metas = fn(g, n);
  if (metas.size() != n.outputs.size())
    throw Error(g.source,
                "the op gives " + std::to_string(metas.size()) + " outputs but the node has " +
                    std::to_string(n.outputs.size()),
                n.name, n.target);
  for (ValueId v : n.outputs)
    if (v < 0 || size_t(v) >= g.values.size())
      throw Error(g.source, "output refers to an unknown value", n.name, n.target);
  return metas;
}

} // namespace

void propagate_shapes(Graph& g) {
  for (const Node& n : g.nodes) {
    std::vector<TensorMeta> metas = infer(g, n);
    for (size_t i = 0; i < metas.size(); ++i)
      g.values[size_t(n.outputs[i])].meta = std::move(metas[i]);
  }
}

std::vector<std::string> check_recorded_shapes(const Graph& g) {
  std::vector<std::string> diffs;
  for (const Node& n : g.nodes) {
    std::vector<TensorMeta> metas;
    try {
      metas = infer(g, n);
    } catch (const Error& e) {
      diffs.push_back(e.what());
      continue;
    }
    for (size_t i = 0; i < metas.size(); ++i) {
      const Value& v = g.values[size_t(n.outputs[i])];
      if (v.meta == metas[i]) continue;
      diffs.push_back("node '" + n.name + "' (" + n.target + ") output '" + v.name +
                      "': recorded " + describe(v.meta) + ", inferred " + describe(metas[i]));
    }
  }
  return diffs;
}

} // namespace fxc
