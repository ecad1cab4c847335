// The graph verifier: structural and metadata invariants every pipeline stage must keep.
#include "frontend/verify.h"

#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/meta.h"
#include "frontend/meta/meta_util.h"
#include "frontend/ops.h"
#include "frontend/schema.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace fxc {

namespace {

// Metadata agreement as PyTorch checks it between fake and real tensors: dtype, sizes, device
// and offset equal, and strides equal where they matter (dimensions of size > 1 of a non-empty
// tensor); exporters may record any stride for the others.
// `fresh`: the op returns a new tensor (not a view), whose storage offset means nothing: PyTorch's
// export records some (slice_scatter in core ATen) with the offset of the input they replace.
bool same_layout(const TensorMeta& a, const TensorMeta& b, bool fresh) {
  if (a.dtype != b.dtype || a.sizes != b.sizes || a.device != b.device ||
      (!fresh && a.storage_offset != b.storage_offset) || a.strides.size() != b.strides.size())
    return false;
  for (int64_t s : a.sizes)
    if (s == 0) return true;
  // A new tensor laid out densely in another order than the meta function's: how PyTorch's
  // kernel allocated it (einsum's permuted bmm result, SDPA's [B, L, H, E] memory). Every
  // backend gives the value the recorded layout (the interpreter's with_layout, decompose's
  // restride), which later views rely on.
  if (fresh && a.storage_offset == 0 &&
      meta_detail::is_non_overlapping_and_dense(a.sizes, a.strides))
    return true;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (a.sizes[d] > 1 && a.strides[d] != b.strides[d]) return false;
  return true;
}

class Verifier {
public:
  explicit Verifier(const Graph& g) : g_(g), defined_(g.values.size(), false) {}

  void run() {
    check_names();
    check_inputs();
    for (size_t i = 0; i < g_.nodes.size(); ++i) check_node(int32_t(i));
    for (ValueId v : g_.outputs) {
      if (!valid(v)) fail("graph output refers to unknown value #" + std::to_string(v));
      if (!defined_[size_t(v)])
        fail("graph output '" + g_.values[size_t(v)].name + "' is never defined");
    }
  }

private:
  [[noreturn]] void fail(const std::string& msg, const Node* n = nullptr) const {
    throw Error(g_.source, msg, n ? n->name : std::string(), n ? n->target : std::string());
  }
  bool valid(ValueId v) const { return v >= 0 && size_t(v) < g_.values.size(); }

  void check_names() const {
    std::unordered_set<std::string_view> values, nodes;
    for (const Value& v : g_.values) {
      if (v.name.empty()) fail("a value has an empty name");
      if (!values.insert(v.name).second) fail("two values are named '" + v.name + "'");
    }
    for (const Node& n : g_.nodes) {
      if (n.name.empty()) fail("a node has an empty name", &n);
      if (!nodes.insert(n.name).second) fail("two nodes are named '" + n.name + "'", &n);
    }
  }

  void check_inputs() {
    std::unordered_set<std::string_view> fqns;
    for (const GraphInput& in : g_.inputs) {
      if (!valid(in.value))
        fail("graph input '" + in.fqn + "' refers to unknown value #" + std::to_string(in.value));
      const Value& v = g_.values[size_t(in.value)];
      if (defined_[size_t(in.value)]) fail("value '" + v.name + "' is a graph input twice");
      if (v.producer != -1) fail("graph input '" + v.name + "' also has a producing node");
      defined_[size_t(in.value)] = true;
      if (v.meta.strides.size() != v.meta.sizes.size())
        fail("graph input '" + v.name + "' has " + std::to_string(v.meta.sizes.size()) +
             " sizes but " + std::to_string(v.meta.strides.size()) + " strides");
      for (int64_t s : v.meta.sizes)
        if (s < 0) fail("graph input '" + v.name + "' has a negative size");
      if (in.kind == InputKind::UserInput) continue;
      if (!fqns.insert(in.fqn).second)
        fail(std::string(input_kind_name(in.kind)) + " '" + in.fqn + "' is listed twice");
      check_weight(in, v);
    }
  }

  // The weight behind a parameter, buffer or constant covers every element its view reaches.
  void check_weight(const GraphInput& in, const Value& v) const {
    const std::string what = std::string(input_kind_name(in.kind)) + " '" + in.fqn + "'";
    auto it = g_.weights.find(in.fqn);
    if (it == g_.weights.end() || !it->second.storage) fail(what + " has no weights");
    const WeightData& w = it->second;
    if (w.meta.dtype != v.meta.dtype || w.meta.sizes != v.meta.sizes)
      fail(what + " holds " + format_meta(w.meta) + " but graph input '" + v.name + "' is " +
           format_meta(v.meta));
    if (w.meta.strides.size() != w.meta.sizes.size() || w.meta.storage_offset < 0)
      fail(what + " has malformed strides or storage offset");
    __int128 extent = 0; // one past the last element reached, in elements
    bool empty = false;
    for (size_t d = 0; d < w.meta.sizes.size(); ++d) {
      if (w.meta.sizes[d] < 0 || w.meta.strides[d] < 0)
        fail(what + " has a negative size or stride");
      if (w.meta.sizes[d] == 0) empty = true;
      extent += __int128(w.meta.sizes[d] - 1) * w.meta.strides[d];
      if (extent > (__int128(1) << 100)) fail(what + " has sizes and strides too large to address");
    }
    __int128 need =
        empty ? 0 : (extent + 1 + w.meta.storage_offset) * __int128(dtype_size(w.meta.dtype));
    if (need > __int128(w.storage->nbytes()))
      fail(what + " needs " + std::to_string(int64_t(need)) + " bytes for " +
           format_meta_with_strides(w.meta) + " but its storage holds " +
           std::to_string(w.storage->nbytes()));
  }

  void check_arg(const Node& n, const ArgSchema& s, const Arg& a) const {
    if (!arg_matches(s, a))
      fail("argument '" + s.name + "' expects " + arg_type_name(s) + ", got " +
               std::string(arg_kind_name(a.kind)),
           &n);
    auto use = [&](ValueId v) {
      if (!valid(v))
        fail("argument '" + s.name + "' refers to unknown value #" + std::to_string(v), &n);
      if (!defined_[size_t(v)])
        fail("uses '" + g_.values[size_t(v)].name + "' before it is defined", &n);
    };
    if (a.kind == Arg::Kind::Tensor) use(a.tensor);
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId v : a.tensors) {
        if (v == kNoValue && s.optional) continue;
        use(v);
      }
  }

  void check_node(int32_t index) {
    const Node& n = g_.nodes[size_t(index)];
    const OpSchema* s = find_schema(n.target);
    if (!s) fail(unknown_op_message(n.target), &n);
    if (n.schema != s) fail("the node's schema does not match its target", &n);
    if (n.args.size() != s->args.size())
      fail("has " + std::to_string(n.args.size()) + " arguments but the schema takes " +
               std::to_string(s->args.size()),
           &n);
    if (n.given.size() != n.args.size())
      fail("has " + std::to_string(n.given.size()) + " 'given' flags for " +
               std::to_string(n.args.size()) + " arguments",
           &n);
    for (size_t i = 0; i < n.args.size(); ++i) check_arg(n, s->args[i], n.args[i]);
    const bool list_return = s->returns.size() == 1 && s->returns[0].is_list;
    if (!list_return && n.outputs.size() != s->returns.size())
      fail("has " + std::to_string(n.outputs.size()) + " outputs but the op returns " +
               std::to_string(s->returns.size()),
           &n);
    MetaFn fn = find_meta(n.target);
    if (!fn) fail("no meta function for this op", &n);
    // A dynamic graph's symbolic sizes are checked where they are bound (specialize(), or the
    // eager interpreter for data-dependent ones), not at the placeholder sizes it holds.
    bool symbolic = false;
    for (const Arg& a : n.args) symbolic = symbolic || !a.syms.empty();
    for (ValueId v : n.outputs)
      symbolic = symbolic || (valid(v) && (!g_.values[size_t(v)].meta.sym_sizes.empty() ||
                                           !g_.values[size_t(v)].meta.sym_strides.empty()));
    std::vector<TensorMeta> metas = symbolic ? std::vector<TensorMeta>() : fn(g_, n);
    if (!symbolic && metas.size() != n.outputs.size())
      fail("the op gives " + std::to_string(metas.size()) + " outputs but the node has " +
               std::to_string(n.outputs.size()),
           &n);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueId v = n.outputs[i];
      if (!valid(v))
        fail("output " + std::to_string(i) + " refers to unknown value #" + std::to_string(v), &n);
      const Value& val = g_.values[size_t(v)];
      if (defined_[size_t(v)]) fail("defines '" + val.name + "', which is already defined", &n);
      if (val.producer != index || val.output_index != int32_t(i))
        fail("output '" + val.name + "' does not name this node as its producer", &n);
      if (!symbolic && !same_layout(val.meta, metas[i], !target_has_tag(n.target, OpTag::View)))
        fail("output '" + val.name + "' is " + format_meta_with_strides(val.meta) + " on " +
                 device_name(val.meta.device) + " but the op gives " +
                 format_meta_with_strides(metas[i]) + " on " + device_name(metas[i].device),
             &n);
      defined_[size_t(v)] = true;
    }
  }

  const Graph& g_;
  std::vector<bool> defined_;
};

} // namespace

void verify_graph(const Graph& g) {
  Verifier(g).run();
}

} // namespace fxc
