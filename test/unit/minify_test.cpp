// Unit tests for the minifier (passes/minify.h) with in-process failure predicates.
#include "passes/minify.h"

#include "frontend/builder.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "frontend/verify.h"
#include "runtime/interpreter.h"

#include <doctest/doctest.h>

#include <chrono>
#include <map>

using namespace fxc;

namespace {

ValueId add_input(Graph& g, const std::string& name, std::vector<int64_t> sizes,
                  InputKind kind = InputKind::UserInput) {
  TensorMeta m;
  m.dtype = DType::F32;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  ValueId v = g.add_value(name, m);
  g.inputs.push_back(GraphInput{v, kind, name, true});
  return v;
}

void add_weight(Graph& g, const std::string& name, const std::vector<double>& values) {
  add_input(g, name, {int64_t(values.size())}, InputKind::Parameter);
  Tensor t = Tensor::from_values(DType::F32, {int64_t(values.size())}, values);
  g.weights[name] = WeightData{t.storage(), t.meta(), std::nullopt};
}

ValueId unary(Graph& g, const char* target, ValueId a) {
  return add_node1(g, target, {CallArg{"", Arg::of_tensor(a)}});
}

ValueId binary(Graph& g, const char* target, ValueId a, ValueId b) {
  return add_node1(g, target, {CallArg{"", Arg::of_tensor(a)}, CallArg{"", Arg::of_tensor(b)}});
}

int count_target(const Graph& g, const std::string& target) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.target == target;
  return n;
}

/// Every value of `g` on `inputs`, by ValueId (inputs, weights and node outputs).
std::vector<Tensor> all_values(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> vals(g.values.size());
  size_t k = 0;
  for (const GraphInput& in : g.inputs)
    vals[in.value] =
        in.kind == InputKind::UserInput ? inputs[k++] : Tensor::from_weight(g.weights.at(in.fqn));
  InterpretOptions io;
  io.on_node = [&](const Node& n, const std::vector<Tensor>& outs) {
    for (size_t i = 0; i < outs.size(); ++i) vals[n.outputs[i]] = outs[i];
  };
  interpret(g, inputs, io);
  return vals;
}

/// The planted bug: "a relu whose input has a negative element".
bool relu_sees_negative(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> vals = all_values(g, inputs);
  for (const Node& n : g.nodes) {
    if (n.target != "aten.relu.default") continue;
    for (double x : vals[n.tensor_inputs()[0]].to_vector())
      if (x < 0) return true;
  }
  return false;
}

/// x -> (add x, tanh, mul x, tanh)* with one relu planted after node `relu_at`.
Graph chain(int nodes, int relu_at) {
  Graph g;
  g.source = "chain.fxg";
  ValueId x = add_input(g, "x", {4});
  ValueId cur = x;
  for (int i = 0; int(g.nodes.size()) < nodes; ++i) {
    if (int(g.nodes.size()) == relu_at) {
      cur = unary(g, "aten.relu.default", cur);
      continue;
    }
    switch (i % 4) {
    case 0:
      cur = binary(g, "aten.add.Tensor", cur, x);
      break;
    case 1:
      cur = unary(g, "aten.tanh.default", cur);
      break;
    case 2:
      cur = binary(g, "aten.mul.Tensor", cur, x);
      break;
    default:
      cur = unary(g, "aten.tanh.default", cur);
      break;
    }
  }
  g.outputs = {cur};
  return g;
}

std::vector<Tensor> chain_inputs() {
  return {Tensor::from_values(DType::F32, {4}, {-1.0, 0.5, 2.0, -3.0})};
}

} // namespace

TEST_CASE("minify: a planted relu in a chain shrinks to at most 3 nodes") {
  Graph g = chain(40, 21);
  REQUIRE(relu_sees_negative(g, chain_inputs()));
  std::vector<std::string> lines;
  MinifyOptions opts;
  opts.progress = [&](const std::string& l) { lines.push_back(l); };
  MinifyResult r = minify(g, chain_inputs(), relu_sees_negative, opts);
  CHECK(r.initial_nodes == 40);
  CHECK(r.graph.nodes.size() <= 3);
  CHECK(count_target(r.graph, "aten.relu.default") == 1);
  CHECK_NOTHROW(verify_graph(r.graph));
  CHECK(relu_sees_negative(r.graph, r.inputs));
  CHECK_FALSE(r.hit_call_limit);
  // Progress lines name the strategy and the node counts.
  bool truncated = false;
  for (const std::string& l : lines)
    truncated |= l.find("nodes: truncate suffix") != std::string::npos;
  CHECK(truncated);
  CHECK(lines.front().rfind("minifying 40 nodes", 0) == 0);
  CHECK(lines.back().find("minimal graph: ") == 0);
  // The original graph is untouched.
  CHECK(g.nodes.size() == 40);
}

TEST_CASE("minify: windows replaced by inputs carry their concrete values") {
  Graph g = chain(12, 6);
  MinifyResult r = minify(g, chain_inputs(), relu_sees_negative);
  REQUIRE(r.graph.nodes.size() == 1);
  CHECK(r.graph.nodes[0].target == "aten.relu.default");
  REQUIRE(r.inputs.size() == 1);
  // The relu's input is the value node 5 of the original graph computed.
  std::vector<Tensor> vals = all_values(g, chain_inputs());
  ValueId relu_in = g.nodes[6].tensor_inputs()[0];
  CHECK(r.inputs[0].to_vector() == vals[relu_in].to_vector());
  CHECK(r.graph.values[r.graph.inputs[0].value].name == g.values[relu_in].name);
}

TEST_CASE("minify: a failure that needs two nodes keeps both") {
  Graph g = chain(24, -1);
  // Fails while some mul feeds a tanh directly.
  auto mul_into_tanh = [](const Graph& c, const std::vector<Tensor>&) {
    for (const Node& n : c.nodes) {
      if (n.target != "aten.tanh.default") continue;
      int32_t p = c.values[n.tensor_inputs()[0]].producer;
      if (p >= 0 && c.nodes[p].target == "aten.mul.Tensor") return true;
    }
    return false;
  };
  MinifyResult r = minify(g, chain_inputs(), mul_into_tanh);
  REQUIRE(r.graph.nodes.size() == 2);
  CHECK(r.graph.nodes[0].target == "aten.mul.Tensor");
  CHECK(r.graph.nodes[1].target == "aten.tanh.default");
  CHECK_NOTHROW(verify_graph(r.graph));
}

TEST_CASE("minify: two distant nodes that fail together are both kept, and nothing between") {
  Graph g = chain(400, -1);
  std::string a = g.nodes[40].name, b = g.nodes[361].name;
  auto both = [&](const Graph& c, const std::vector<Tensor>&) {
    bool has_a = false, has_b = false;
    for (const Node& n : c.nodes) {
      has_a |= n.name == a;
      has_b |= n.name == b;
    }
    return has_a && has_b;
  };
  MinifyResult r = minify(g, chain_inputs(), both);
  MESSAGE("two distant nodes in 400: " << r.predicate_calls << " predicate calls");
  REQUIRE(r.graph.nodes.size() == 2);
  CHECK(r.graph.nodes[0].name == a);
  CHECK(r.graph.nodes[1].name == b);
  CHECK_NOTHROW(verify_graph(r.graph));
  CHECK(r.predicate_calls < 200);
}

TEST_CASE("minify: unused outputs are dropped and weights become inputs") {
  Graph g;
  g.source = "w.fxg";
  ValueId x = add_input(g, "x", {4});
  add_weight(g, "w", {0.5, -4.0, 1.0, 0.25});
  add_weight(g, "b", {1.0, 2.0, 3.0, 4.0});
  ValueId w = g.inputs[1].value, b = g.inputs[2].value;
  ValueId t = unary(g, "aten.tanh.default", x);
  ValueId s = binary(g, "aten.add.Tensor", x, w);
  ValueId r1 = unary(g, "aten.relu.default", s);
  ValueId m = binary(g, "aten.mul.Tensor", r1, b);
  ValueId sq = binary(g, "aten.mul.Tensor", x, x);
  g.outputs = {t, m, sq};
  std::vector<Tensor> in = {Tensor::from_values(DType::F32, {4}, {1, 1, 1, 1})};
  REQUIRE(relu_sees_negative(g, in));
  MinifyResult r = minify(g, in, relu_sees_negative);
  CHECK(r.graph.outputs.size() == 1);
  CHECK(r.graph.weights.empty());
  REQUIRE(r.graph.nodes.size() == 1);
  CHECK(r.graph.nodes[0].target == "aten.relu.default");
  REQUIRE(r.inputs.size() == 1);
  CHECK(r.inputs[0].to_vector() == std::vector<double>{1.5, -3.0, 2.0, 1.25});
}

TEST_CASE("minify: a run-time error is minified even though the reference run fails") {
  Graph g;
  g.source = "rt.fxg";
  ValueId x = add_input(g, "x", {4});
  TensorMeta im;
  im.dtype = DType::I64;
  im.sizes = {2};
  im.strides = {1};
  ValueId idx = g.add_value("idx", im);
  g.inputs.push_back(GraphInput{idx, InputKind::UserInput, "idx", true});
  ValueId a = unary(g, "aten.tanh.default", x);
  ValueId b = binary(g, "aten.mul.Tensor", a, x);
  ValueId c = binary(g, "aten.add.Tensor", b, a);
  ValueId sel = add_node1(g, "aten.index_select.default",
                          {CallArg{"", Arg::of_tensor(c)}, CallArg{"", Arg::of_int(0)},
                           CallArg{"", Arg::of_tensor(idx)}});
  g.outputs = {unary(g, "aten.tanh.default", sel)};
  std::vector<Tensor> in = {chain_inputs()[0], Tensor::from_values(DType::I64, {2}, {1, 7})};
  auto throws_in_index_select = [](const Graph& c, const std::vector<Tensor>& inputs) {
    try {
      interpret(c, inputs);
    } catch (const Error& e) {
      return e.op().find("index_select") != std::string::npos;
    }
    return false;
  };
  std::vector<std::string> lines;
  MinifyOptions opts;
  opts.progress = [&](const std::string& l) { lines.push_back(l); };
  MinifyResult r = minify(g, in, throws_in_index_select, opts);
  REQUIRE(r.graph.nodes.size() == 1);
  CHECK(r.graph.nodes[0].target == "aten.index_select.default");
  CHECK(r.inputs.size() == 2);
  CHECK(lines[1].rfind("reference run failed after 3 nodes", 0) == 0);
}

TEST_CASE("minify: in-place ops do not corrupt the recorded values or the caller's inputs") {
  Graph g;
  g.source = "inplace.fxg";
  ValueId x = add_input(g, "x", {4});
  ValueId a = binary(g, "aten.add.Tensor", x, x);
  unary(g, "aten.relu_.default", a);
  ValueId t = unary(g, "aten.tanh.default", a);
  g.outputs = {binary(g, "aten.mul.Tensor", t, x)};
  std::vector<Tensor> in = chain_inputs();
  auto has_relu_ = [](const Graph& c, const std::vector<Tensor>& inputs) {
    interpret(c, inputs); // mutates its inputs through relu_
    for (const Node& n : c.nodes)
      if (n.target == "aten.relu_.default") return true;
    return false;
  };
  MinifyResult r = minify(g, in, has_relu_);
  REQUIRE(r.graph.nodes.size() == 1);
  CHECK(r.graph.nodes[0].target == "aten.relu_.default");
  REQUIRE(r.inputs.size() == 1);
  CHECK(r.inputs[0].to_vector() == std::vector<double>{-2, 1, 4, -6});
  CHECK(in[0].to_vector() == std::vector<double>{-1, 0.5, 2, -3});
}

TEST_CASE("minify: the predicate-call limit stops the search with a failing graph") {
  Graph g = chain(40, 30);
  MinifyOptions opts;
  opts.max_predicate_calls = 4;
  MinifyResult r = minify(g, chain_inputs(), relu_sees_negative, opts);
  CHECK(r.hit_call_limit);
  CHECK(r.predicate_calls == 4);
  CHECK(r.graph.nodes.size() < 40);
  CHECK(relu_sees_negative(r.graph, r.inputs));
}

TEST_CASE("minify: a graph that does not fail, or wrong inputs, is an error") {
  Graph g = chain(8, -1);
  CHECK_THROWS_AS(minify(g, chain_inputs(), relu_sees_negative), Error);
  CHECK_THROWS_WITH_AS(minify(g, {}, relu_sees_negative),
                       "chain.fxg: error: minify: the graph has 1 user input but 0 were given",
                       Error);
  std::vector<Tensor> wrong = {Tensor::from_values(DType::F32, {2}, {1, 2})};
  CHECK_THROWS_AS(minify(g, wrong, relu_sees_negative), Error);
}

TEST_CASE("minify: a real transformer block (views, multi-output nodes, weights)") {
  Graph g = import_pt2(FXC_FIXTURES_DIR "/block.core.pt2");
  WeightData x = read_safetensors(FXC_FIXTURES_DIR "/block.io.safetensors").at("input_0");
  std::vector<Tensor> in = {Tensor(x.storage, x.meta)};
  // A pretend gelu bug that shows only for inputs below -1.
  auto gelu_sees_below_minus_one = [](const Graph& c, const std::vector<Tensor>& inputs) {
    std::vector<Tensor> vals = all_values(c, inputs);
    for (const Node& n : c.nodes) {
      if (n.target != "aten.gelu.default") continue;
      for (double v : vals[n.tensor_inputs()[0]].to_vector())
        if (v < -1) return true;
    }
    return false;
  };
  REQUIRE(gelu_sees_below_minus_one(g, in));
  MinifyResult r = minify(g, in, gelu_sees_below_minus_one);
  MESSAGE("block.core.pt2: " << r.initial_nodes << " nodes -> " << r.graph.nodes.size() << " after "
                             << r.predicate_calls << " predicate calls");
  CHECK(r.graph.nodes.size() <= 3);
  CHECK(count_target(r.graph, "aten.gelu.default") == 1);
  CHECK(r.graph.weights.empty());
  CHECK_NOTHROW(verify_graph(r.graph));
  CHECK(gelu_sees_below_minus_one(r.graph, r.inputs));
}

TEST_CASE("minify: a 1,000-node chain with one planted relu") {
  Graph g = chain(1000, 617);
  std::string log;
  MinifyOptions opts;
  opts.progress = [&](const std::string& l) { log += "\n  " + l; };
  auto t0 = std::chrono::steady_clock::now();
  MinifyResult r = minify(g, chain_inputs(), relu_sees_negative, opts);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("1000-node chain: " << r.predicate_calls << " predicate calls, " << s << " s, "
                              << r.graph.nodes.size() << " nodes left" << log);
  CHECK(r.graph.nodes.size() <= 3);
  CHECK(count_target(r.graph, "aten.relu.default") == 1);
  CHECK(r.predicate_calls < 300);
}
