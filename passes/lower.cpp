// Lowering of graph nodes to loop-IR buffers: the engine, which lowers each node by the rule of
// its op (one row per op; the rules live by op family in passes/lower/<family>.cpp) and makes
// every op without a rule an extern call of its reference kernel.
#include "passes/lower.h"

#include "passes/lower/lower_util.h"

#include <map>
#include <memory>

namespace fxc {

std::string op_base_name(const std::string& target) {
  std::string s = target;
  if (s.rfind("aten.", 0) == 0) s = s.substr(5);
  size_t dot = s.find('.');
  if (dot != std::string::npos) s = s.substr(0, dot);
  while (!s.empty() && s.front() == '_') s.erase(s.begin());
  return s;
}

namespace {

using lower_detail::Lowerer;
using lower_detail::LowerFn;
using lower_detail::LVal;

// One row per op. Ops absent here become fallback extern calls.
const OpTable<LowerFn>& rule_table() {
  using namespace lower_detail;
  static const OpTable<LowerFn> table(
      {pointwise_rules(), reduction_rules(), norm_rules(), linalg_rules(), pool_rules(),
       pool_nd_rules(), indexing_rules(), view_rules(), factory_rules(), scan_rules(), sort_rules(),
       scatter_rules(), random_rules(), special_rules()});
  return table;
}

LowerFn find_rule(const std::string& target) {
  return rule_table().find(target);
}

} // namespace

const OpLayer& lowering_layer() {
  return rule_table();
}

void Lowerer::fallback(int n, const std::string& why) {
  const Node& nd = node(n);
  auto g1 = std::make_shared<Graph>();
  g1->source = g_.source;
  g1->name = nd.name;
  ExternCall c;
  c.kind = ExternCall::Kind::Fallback;
  c.op = nd.target;
  c.reason = why;
  std::map<ValueId, ValueId> remap;
  Node copy = nd;
  auto map_value = [&](ValueId v) -> ValueId {
    if (v == kNoValue) return v;
    auto it = remap.find(v);
    if (it != remap.end()) return it->second;
    LVal& lv = val(n, v);
    ExternOperand op = operand(lv);
    c.operands.push_back(op);
    TensorMeta meta = g_.values[v].meta;
    meta.sizes = op.sizes;
    meta.strides = contiguous_strides(op.sizes);
    meta.storage_offset = 0;
    ValueId nv = g1->add_value(g_.values[v].name, meta);
    GraphInput gi;
    gi.value = nv;
    gi.kind = InputKind::UserInput;
    gi.fqn = g_.values[v].name;
    g1->inputs.push_back(gi);
    remap[v] = nv;
    return nv;
  };
  for (Arg& a : copy.args) {
    if (a.kind == Arg::Kind::Tensor) a.tensor = map_value(a.tensor);
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId& v : a.tensors) v = map_value(v);
  }
  copy.outputs.clear();
  for (ValueId o : nd.outputs) {
    ValueId nv = g1->add_value(g_.values[o].name, g_.values[o].meta);
    g1->values[nv].producer = 0;
    g1->values[nv].output_index = int32_t(copy.outputs.size());
    copy.outputs.push_back(nv);
    g1->outputs.push_back(nv);
  }
  g1->nodes.push_back(copy);
  c.graph = g1;
  p_.log.push_back("fallback: node '" + nd.name + "' (" + nd.target + "): " + why);
  const TensorMeta& m0 = out_meta(n, 0);
  int owner = extern_buffer(n, c, m0.dtype, m0.sizes);
  vals_[nd.outputs[0]] = load_of(owner, {n});
  for (size_t i = 1; i < nd.outputs.size(); ++i) {
    const TensorMeta& mi = out_meta(n, int(i));
    Buffer b;
    b.kind = Buffer::Kind::ExternOutput;
    b.dtype = mi.dtype;
    b.sizes = mi.sizes;
    b.extern_owner = owner;
    set_origins(b, {n});
    int id = add_buffer(std::move(b));
    p_.buffers[owner].call.outputs.push_back(id);
    vals_[nd.outputs[i]] = load_of(id, {n});
  }
}

void Lowerer::inject_bug(int n) {
  const Node& nd = node(n);
  p_.log.push_back("inject: " + opts_.inject_kind + " bug in node '" + nd.name + "'");
  if (opts_.inject_kind != "accuracy") {
    p_.injected[nd.name] = opts_.inject_kind;
    return;
  }
  for (ValueId o : nd.outputs) {
    LVal v = vals_[o];
    if (v.dtype == DType::Bool) continue;
    vals_[o] = pointwise(
        n, v.dtype, v.sizes,
        [&](auto& idx) { return v_binary(VOp::Add, at(v, idx), v_const(1, v.dtype)); }, {&v});
  }
}

LoopProgram Lowerer::run() {
  int user = 0;
  for (const GraphInput& in : g_.inputs) {
    const Value& v = g_.values[in.value];
    Buffer b;
    b.kind = Buffer::Kind::Input;
    b.dtype = v.meta.dtype;
    b.sizes = v.meta.sizes;
    if (in.kind == InputKind::UserInput)
      b.input_index = user++;
    else
      b.weight = in.fqn;
    int id = add_buffer(std::move(b));
    p_.buffers[id].name = v.name;
    vals_[in.value] = load_of(id, {});
  }
  for (int n = 0; n < int(g_.nodes.size()); ++n) {
    const Node& nd = g_.nodes[n];
    if (!nd.schema) throw Error(g_.source, "op has no schema", nd.name, nd.target);
    LowerFn fn = find_rule(nd.target);
    if (nd.outputs.empty()) {
      if (fn) fn(*this, n); // a check (_assert_tensor_metadata): it computes nothing
      continue;
    }
    if (auto ab = absorbed.find(n); ab != absorbed.end())
      vals_[nd.outputs[0]] = val(n, ab->second);
    else if (fn)
      fn(*this, n);
    else if (opts_.cuda && target_has_tag(nd.target, OpTag::LinalgDecomposition))
      // Its reference kernel calls LAPACK on the host: a CUDA plan must not leave the device.
      fail(n, std::string(nd.target) + " has no CUDA implementation yet (a linalg decomposition: "
                                       "compile for --device=cpu)");
    else
      fallback(n, find_custom_op(nd.target) ? "custom op: extern call to its plugin's kernel"
                                            : "no lowering");
    if (!opts_.inject_op.empty() && op_base_name(nd.target) == opts_.inject_op) inject_bug(n);
    for (ValueId o : nd.outputs) {
      LVal& v = vals_[o];
      if (!v.body) fail(n, "output was not lowered");
      if (v.buffer < 0 && uses_[o] >= 2 && expr_size(v.body) > opts_.inline_limit) {
        p_.log.push_back("realize: " + g_.values[o].name + " (" + std::to_string(uses_[o]) +
                         " users, " + std::to_string(expr_size(v.body)) + " nodes)");
        realize(v);
      }
    }
  }
  for (ValueId o : g_.outputs) {
    if (o < 0 || size_t(o) >= vals_.size() || !vals_[o].body)
      throw Error(g_.source, "graph output is not computed");
    LVal& v = vals_[o];
    // Channels-last inside, contiguous as the graph says at the boundary.
    bool contiguous = g_.values[o].meta.is_contiguous();
    if (contiguous && !v.realized()) v.channels_last = false;
    ExternOperand op = operand(v);
    if (channels_last_ && contiguous && !is_contiguous_layout(op.sizes, op.strides)) {
      Buffer b;
      b.kind = Buffer::Kind::Pointwise;
      b.dtype = v.dtype;
      b.sizes = v.sizes;
      b.vars = make_vars(v.sizes);
      b.body = v.body;
      b.origins = p_.buffers[op.buffer].origins;
      b.origin_ops = p_.buffers[op.buffer].origin_ops;
      LVal c = load_of(add_buffer(std::move(b)), {});
      op = operand(c);
    }
    OutputView ov;
    ov.buffer = op.buffer;
    ov.meta.dtype = v.dtype;
    ov.meta.sizes = op.sizes;
    ov.meta.strides = op.strides;
    ov.meta.storage_offset = op.offset;
    p_.outputs.push_back(ov);
  }
  return std::move(p_);
}

LoopProgram lower(const Graph& g, const LowerOptions& opts) {
  Lowerer L(g, opts);
  return L.run();
}

} // namespace fxc
