// Unit tests for the graph builder: argument binding, inferred metadata and unique names.
#include "frontend/builder.h"
#include "frontend/diag.h"
#include "frontend/verify.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace fxc;

namespace {

TensorMeta meta(DType t, std::vector<int64_t> sizes) {
  TensorMeta m;
  m.dtype = t;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  return m;
}

CallArg T(ValueId v) {
  return {"", Arg::of_tensor(v)};
}

Graph with_input(std::vector<int64_t> sizes) {
  Graph g;
  g.source = "built.fxg";
  ValueId x = g.add_value("x", meta(DType::F32, std::move(sizes)));
  g.inputs.push_back({x, InputKind::UserInput, "x", true});
  return g;
}

// A chain of n relus built with or without a NameCache; returns the milliseconds taken.
double build_chain(Graph& g, int n, bool cached) {
  NameCache names(g);
  auto start = std::chrono::steady_clock::now();
  ValueId v = 0;
  for (int i = 0; i < n; ++i)
    v = add_node1(g, "aten.relu.default", {T(v)}, {}, cached ? &names : nullptr);
  g.outputs.push_back(v);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

TEST_CASE("builder: nodes are bound, named and typed") {
  Graph g = with_input({4, 6});
  ValueId r = add_node1(g, "aten.relu.default", {T(0)});
  ValueId r2 = add_node1(g, "torch.ops.aten.relu.default", {T(r)});
  ValueId s = add_node1(g, "aten.sum.dim_IntList",
                        {T(r2), {"", Arg::of_ints({1})}, {"keepdim", Arg::of_bool(true)}}, "total");
  CHECK(g.values[size_t(r)].name == "relu");
  CHECK(g.values[size_t(r2)].name == "relu_1");
  CHECK(g.nodes[1].name == "relu_1");
  CHECK(g.values[size_t(s)].name == "total");
  CHECK(g.values[size_t(s)].meta.sizes == std::vector<int64_t>{4, 1});
  CHECK(g.values[size_t(s)].producer == 2);
  // Defaults are filled in and `given` says what the call spelled out.
  const Node& sum = g.nodes[2];
  CHECK(sum.args.size() == 4);
  CHECK(sum.given == std::vector<bool>{true, true, true, false});
  auto pieces = add_node(g, "aten.split.Tensor", {T(s), {"", Arg::of_int(2)}});
  REQUIRE(pieces.size() == 2);
  CHECK(g.values[size_t(pieces[0])].name == "getitem");
  CHECK(g.values[size_t(pieces[1])].name == "getitem_1");
  CHECK(g.values[size_t(pieces[1])].output_index == 1);
  g.outputs.push_back(pieces[1]);
  CHECK_NOTHROW(verify_graph(g));
}

TEST_CASE("builder: errors name the op") {
  Graph g = with_input({4, 6});
  CHECK_THROWS_WITH(
      add_node(g, "aten.nope.default", {T(0)}),
      "built.fxg: error: node 'nope' (aten.nope.default): unknown op 'aten.nope.default'");
  CHECK_THROWS_WITH(add_node(g, "aten.addmm.default", {T(0), T(0)}),
                    "built.fxg: error: node 'addmm' (aten.addmm.default): missing argument 'mat2'");
  CHECK_THROWS_WITH(
      add_node(g, "aten.mm.default", {T(0), T(0)}),
      "built.fxg: error: node 'mm' (aten.mm.default): self is f32[4, 6] but mat2 is f32[4, 6]");
  CHECK(g.nodes.empty());
  CHECK(g.values.size() == 1);
}

TEST_CASE("builder: unique_name picks the smallest free suffix") {
  Graph g = with_input({2});
  CHECK(unique_name(g, "y") == "y");
  CHECK(unique_name(g, "x") == "x_1");
  g.add_value("x_1", meta(DType::F32, {2}));
  g.add_value("x_3", meta(DType::F32, {2}));
  g.add_value("x_01", meta(DType::F32, {2}));
  CHECK(unique_name(g, "x") == "x_2");
  NameCache names(g);
  CHECK(names.take("x") == "x_2");
  CHECK(names.take("x") == "x_4");
  CHECK(names.take("y") == "y");
  CHECK(names.contains("x_4"));
  // A node that fails to build takes no name.
  CHECK_THROWS_AS(add_node(g, "aten.mm.default", {T(0), T(0)}, "y", &names), Error);
  ValueId y = add_node1(g, "aten.relu.default", {T(0)}, "y", &names);
  CHECK(y == ValueId(g.values.size() - 1));
  CHECK(g.values.back().name == "y_1");
}

TEST_CASE("builder: a 2,000-node graph builds quickly, with the same names either way") {
  Graph plain = with_input({8}), cached = with_input({8});
  double ms_plain = build_chain(plain, 2000, false);
  double ms_cached = build_chain(cached, 2000, true);
  MESSAGE("2000 relus: " << ms_plain << " ms without a NameCache, " << ms_cached << " ms with one");
  REQUIRE(plain.values.size() == cached.values.size());
  for (size_t i = 0; i < plain.values.size(); ++i)
    CHECK(plain.values[i].name == cached.values[i].name);
  CHECK(plain.values.back().name == "relu_1999");
  CHECK_NOTHROW(verify_graph(cached));
}
