// Unit tests for the generic graph surgery helpers (passes/graph_utils.h).
#include "passes/graph_utils.h"

#include "frontend/builder.h"
#include "frontend/verify.h"

#include <doctest/doctest.h>

using namespace fxc;

namespace {

ValueId input(Graph& g, const std::string& name, InputKind kind = InputKind::UserInput) {
  TensorMeta m;
  m.sizes = {3};
  m.strides = {1};
  ValueId v = g.add_value(name, m);
  g.inputs.push_back(GraphInput{v, kind, name, true});
  if (kind != InputKind::UserInput)
    g.weights[name] = WeightData{std::make_shared<Storage>(12), m, std::nullopt};
  return v;
}

ValueId op(Graph& g, const char* target, std::vector<ValueId> args) {
  std::vector<CallArg> call;
  for (ValueId a : args) call.push_back(CallArg{"", Arg::of_tensor(a)});
  return add_node1(g, target, call);
}

std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) out.push_back(n.name);
  return out;
}

/// x, w(param), u(unused) -> a = x + w; dead = tanh(x); b = relu(a); out b
Graph sample() {
  Graph g;
  g.source = "s.fxg";
  ValueId x = input(g, "x");
  ValueId w = input(g, "w", InputKind::Parameter);
  input(g, "u");
  ValueId a = op(g, "aten.add.Tensor", {x, w});
  op(g, "aten.tanh.default", {x});
  ValueId b = op(g, "aten.relu.default", {a});
  g.outputs = {b};
  return g;
}

} // namespace

TEST_CASE("graph_utils: dead-code elimination drops unused nodes and keeps the rest valid") {
  Graph g = sample();
  GraphRemap r = eliminate_dead_code(g);
  CHECK(node_names(r.graph) == std::vector<std::string>{"add", "relu"});
  CHECK(r.graph.inputs.size() == 3);
  CHECK(r.value_map[g.nodes[1].outputs[0]] == kNoValue);
  ValueId relu_out = r.value_map[g.nodes[2].outputs[0]];
  CHECK(r.graph.outputs == std::vector<ValueId>{relu_out});
  CHECK(r.graph.values[relu_out].producer == 1);
  CHECK_NOTHROW(verify_graph(r.graph));
}

TEST_CASE("graph_utils: live_nodes keeps side effects only when asked") {
  Graph g = sample();
  g.outputs.clear();
  op(g, "aten.relu_.default", {g.inputs[0].value});
  CHECK(live_nodes(g, true) == std::vector<bool>{false, false, false, true});
  CHECK(live_nodes(g, false) == std::vector<bool>{false, false, false, false});
}

TEST_CASE("graph_utils: unused inputs go, with their weights") {
  Graph g = sample();
  GraphRemap dce = eliminate_dead_code(g);
  g.nodes[0].args[1] = Arg::of_tensor(g.inputs[0].value); // add(x, x): w is now unused
  GraphRemap r = remove_unused_inputs(eliminate_dead_code(g).graph);
  REQUIRE(r.graph.inputs.size() == 1);
  CHECK(r.graph.values[r.graph.inputs[0].value].name == "x");
  CHECK(r.graph.weights.empty());
  CHECK_NOTHROW(verify_graph(r.graph));
  // With w still used, only u goes.
  GraphRemap r2 = remove_unused_inputs(dce.graph);
  CHECK(r2.graph.inputs.size() == 2);
  CHECK(r2.graph.weights.count("w") == 1);
}

TEST_CASE("graph_utils: extract_subgraph promotes values of dropped nodes to inputs") {
  Graph g = sample();
  ValueId a = g.nodes[0].outputs[0];
  SubgraphSpec spec;
  spec.keep_node = {false, false, true};
  spec.new_inputs = {a};
  spec.outputs = g.outputs;
  GraphRemap r = extract_subgraph(g, spec);
  REQUIRE(r.graph.nodes.size() == 1);
  REQUIRE(r.graph.inputs.size() == 4);
  const GraphInput& in = r.graph.inputs.back();
  CHECK(in.kind == InputKind::UserInput);
  CHECK(in.fqn == "add");
  CHECK(in.value == r.value_map[a]);
  CHECK(r.graph.values[in.value].producer == -1);
  CHECK(r.graph.nodes[0].args[0].tensor == in.value);
  CHECK_NOTHROW(verify_graph(r.graph));
}

TEST_CASE("graph_utils: lifting weights turns parameters into user inputs") {
  Graph g = sample();
  std::vector<std::pair<ValueId, WeightData>> lifted;
  Graph l = lift_weights_to_inputs(g, &lifted);
  REQUIRE(lifted.size() == 1);
  CHECK(lifted[0].first == g.inputs[1].value);
  CHECK(lifted[0].second.storage == g.weights.at("w").storage);
  CHECK(l.weights.empty());
  CHECK(l.inputs[1].kind == InputKind::UserInput);
  CHECK_NOTHROW(verify_graph(l));
}

TEST_CASE("graph_utils: value maps compose") {
  CHECK(compose_value_maps({2, kNoValue, 0}, {kNoValue, 5, 1}) ==
        std::vector<ValueId>{1, kNoValue, kNoValue});
}
