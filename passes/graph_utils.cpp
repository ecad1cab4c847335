// Generic graph surgery: dead-code elimination, unused-input removal, subgraph extraction.
#include "passes/graph_utils.h"

#include "frontend/schema.h"

#include <cassert>
#include <set>

namespace fxc {

namespace {

ValueId remap(const std::vector<ValueId>& map, ValueId v) {
  if (v == kNoValue) return kNoValue;
  assert(v >= 0 && size_t(v) < map.size() && "value id out of range");
  ValueId r = map[v];
  assert(r != kNoValue && "value used by the rewritten graph was removed");
  return r;
}

void remap_args(std::vector<Arg>& args, const std::vector<ValueId>& map) {
  for (Arg& a : args) {
    if (a.kind == Arg::Kind::Tensor) a.tensor = remap(map, a.tensor);
    if (a.kind == Arg::Kind::Tensors)
      for (ValueId& v : a.tensors) v = remap(map, v);
  }
}

/// Copies the values of `g` marked in `keep` (in order) into `out`, returning the old -> new
/// map. Producers are reset; callers fix them up when they copy nodes.
std::vector<ValueId> copy_values(const Graph& g, const std::vector<bool>& keep, Graph& out) {
  std::vector<ValueId> map(g.values.size(), kNoValue);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!keep[v]) continue;
    map[v] = ValueId(out.values.size());
    Value val = g.values[v];
    val.producer = -1;
    val.output_index = 0;
    out.values.push_back(std::move(val));
  }
  return map;
}

Graph empty_like(const Graph& g) {
  Graph out;
  out.source = g.source;
  out.name = g.name;
  return out;
}

/// Appends copies of the nodes of `g` marked in `keep_node`, remapping their values.
void copy_nodes(const Graph& g, const std::vector<bool>& keep_node, const std::vector<ValueId>& map,
                Graph& out) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep_node[i]) continue;
    Node n = g.nodes[i];
    remap_args(n.args, map);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      n.outputs[k] = remap(map, n.outputs[k]);
      Value& val = out.values[n.outputs[k]];
      val.producer = int32_t(out.nodes.size());
      val.output_index = int32_t(k);
    }
    out.nodes.push_back(std::move(n));
  }
}

} // namespace

GraphRemap extract_subgraph(const Graph& g, const SubgraphSpec& spec) {
  assert(spec.keep_node.size() == g.nodes.size() && "keep_node needs one entry per node");
  std::vector<bool> keep_value(g.values.size(), false);
  std::vector<bool> promoted(g.values.size(), false);
  for (const GraphInput& in : g.inputs) keep_value[in.value] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (spec.keep_node[i])
      for (ValueId v : g.nodes[i].outputs) keep_value[v] = true;
  for (ValueId v : spec.new_inputs) {
    assert(v >= 0 && size_t(v) < g.values.size() && "new input out of range");
    assert(!keep_value[v] && "a new input must be produced by a dropped node");
    keep_value[v] = true;
    promoted[v] = true;
  }

  GraphRemap r{empty_like(g), {}};
  r.value_map = copy_values(g, keep_value, r.graph);
  copy_nodes(g, spec.keep_node, r.value_map, r.graph);
  for (const GraphInput& in : g.inputs) {
    GraphInput copy = in;
    copy.value = r.value_map[in.value];
    r.graph.inputs.push_back(std::move(copy));
  }
  for (ValueId v : spec.new_inputs) {
    GraphInput in;
    in.value = r.value_map[v];
    in.kind = InputKind::UserInput;
    in.fqn = g.values[v].name;
    r.graph.inputs.push_back(std::move(in));
  }
  for (ValueId v : spec.outputs) r.graph.outputs.push_back(remap(r.value_map, v));
  if (spec.outputs == g.outputs) r.graph.num_mutation_outputs = g.num_mutation_outputs;
  r.graph.weights = g.weights;
  return r;
}

std::vector<bool> live_nodes(const Graph& g, bool keep_side_effects) {
  std::vector<bool> live(g.nodes.size(), false);
  std::vector<bool> needed(g.values.size(), false);
  for (ValueId v : g.outputs) needed[v] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool root =
        keep_side_effects && (n.outputs.empty() || (n.schema != nullptr && n.schema->writes()));
    bool used = root;
    for (ValueId v : n.outputs) used = used || needed[v];
    if (!used) continue;
    live[i] = true;
    for (ValueId v : n.tensor_inputs()) needed[v] = true;
  }
  return live;
}

GraphRemap eliminate_dead_code(const Graph& g, bool keep_side_effects) {
  SubgraphSpec spec;
  spec.keep_node = live_nodes(g, keep_side_effects);
  spec.outputs = g.outputs;
  return extract_subgraph(g, spec);
}

GraphRemap remove_unused_inputs(const Graph& g) {
  std::vector<int> uses = g.use_counts();
  std::vector<bool> keep_value(g.values.size(), true);
  for (const GraphInput& in : g.inputs)
    if (uses[in.value] == 0) keep_value[in.value] = false;

  GraphRemap r{empty_like(g), {}};
  r.value_map = copy_values(g, keep_value, r.graph);
  copy_nodes(g, std::vector<bool>(g.nodes.size(), true), r.value_map, r.graph);
  std::set<std::string> weight_users;
  for (const GraphInput& in : g.inputs) {
    if (!keep_value[in.value]) continue;
    GraphInput copy = in;
    copy.value = r.value_map[in.value];
    if (in.kind != InputKind::UserInput) weight_users.insert(in.fqn);
    r.graph.inputs.push_back(std::move(copy));
  }
  for (ValueId v : g.outputs) r.graph.outputs.push_back(remap(r.value_map, v));
  for (const auto& [fqn, w] : g.weights)
    if (weight_users.count(fqn)) r.graph.weights.emplace(fqn, w);
  return r;
}

Graph lift_weights_to_inputs(const Graph& g, std::vector<std::pair<ValueId, WeightData>>* lifted) {
  Graph out = g;
  std::set<std::string> lifted_fqns;
  for (GraphInput& in : out.inputs) {
    if (in.kind == InputKind::UserInput) continue;
    auto it = g.weights.find(in.fqn);
    assert(it != g.weights.end() && "parameter without weights");
    if (lifted) lifted->emplace_back(in.value, it->second);
    lifted_fqns.insert(in.fqn);
    in.kind = InputKind::UserInput;
    in.fqn = out.values[in.value].name;
    in.persistent = true;
  }
  for (const std::string& fqn : lifted_fqns) out.weights.erase(fqn);
  return out;
}

std::vector<ValueId> compose_value_maps(const std::vector<ValueId>& first,
                                        const std::vector<ValueId>& second) {
  std::vector<ValueId> out(first.size(), kNoValue);
  for (size_t i = 0; i < first.size(); ++i)
    if (first[i] != kNoValue) {
      assert(size_t(first[i]) < second.size() && "value maps do not compose");
      out[i] = second[first[i]];
    }
  return out;
}

} // namespace fxc
