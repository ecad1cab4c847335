// Unit tests for the eager interpreter: real exported fixtures against PyTorch's outputs,
// input checks, error attribution, intermediate freeing, float64 mode and a timing run.
#include "runtime/interpreter.h"
#include "runtime_test_util.h"

#include "frontend/builder.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "runtime/compare.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>

using namespace fxc;
using namespace fxc::test;

namespace {

// A hand-built node whose output metas are given (no meta functions involved).
std::vector<ValueId> node(Graph& g, const std::string& target, std::vector<CallArg> call,
                          std::vector<TensorMeta> outs, const std::string& name) {
  Node n;
  n.name = name;
  n.target = target;
  n.schema = find_schema(target);
  REQUIRE(n.schema);
  std::string err;
  REQUIRE_MESSAGE(bind_args(*n.schema, call, &n.args, &n.given, &err), err);
  for (size_t i = 0; i < outs.size(); ++i) {
    ValueId v = g.add_value(name + (i ? "_" + std::to_string(i) : ""), outs[i]);
    g.values[size_t(v)].producer = int32_t(g.nodes.size());
    g.values[size_t(v)].output_index = int32_t(i);
    n.outputs.push_back(v);
  }
  g.nodes.push_back(std::move(n));
  return g.nodes.back().outputs;
}

TensorMeta meta(DType dt, Shape sizes) {
  TensorMeta m;
  m.dtype = dt;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  return m;
}

ValueId user_input(Graph& g, const std::string& name, TensorMeta m) {
  ValueId v = g.add_value(name, std::move(m));
  g.inputs.push_back({v, InputKind::UserInput, name, true});
  return v;
}

ValueId weight(Graph& g, const std::string& fqn, const Tensor& t,
               InputKind kind = InputKind::Parameter) {
  ValueId v = g.add_value("p_" + fqn, t.meta());
  g.inputs.push_back({v, kind, fqn, true});
  g.weights[fqn] = WeightData{t.storage(), t.meta(), std::nullopt};
  return v;
}

CallArg pos(Arg a) {
  return {"", std::move(a)};
}
CallArg pos_t(ValueId v) {
  return {"", Arg::of_tensor(v)};
}

Tensor from_weight_data(const WeightData& w) {
  return Tensor::from_weight(w);
}

} // namespace

TEST_CASE("interpreter: real exported fixtures match PyTorch's outputs") {
  namespace fs = std::filesystem;
  const char* names[] = {"mlp", "block", "convnet", "norms", "embed", "berttiny"};
  for (const char* name : names)
    for (const char* variant : {"", ".core"}) {
      std::string base = std::string(FXC_FIXTURES_DIR) + "/" + name;
      CAPTURE(base + variant);
      Graph g = import_pt2(base + variant + ".pt2");
      auto io = read_safetensors(base + ".io.safetensors");
      std::vector<Tensor> inputs;
      for (size_t i = 0; io.count("input_" + std::to_string(i)); ++i)
        inputs.push_back(from_weight_data(io.at("input_" + std::to_string(i))));
      std::vector<Tensor> out = interpret(g, inputs);
      std::vector<Tensor> out64 = interpret(g, inputs, {true, {}});
      REQUIRE(out.size() == out64.size());
      size_t compared = 0;
      for (size_t i = 0; i < out.size(); ++i) {
        auto it = io.find("output_" + std::to_string(i));
        if (it == io.end()) continue; // berttiny's reference file holds only its first output
        Tensor expected = from_weight_data(it->second);
        CompareOptions opts;
        opts.rtol = 1e-4;
        opts.atol = 1e-5;
        CompareResult r = compare_tensors(out[i], expected, opts);
        CHECK_MESSAGE(r.ok, "output " << i << ": " << r.message);
        if (is_floating(expected.dtype())) {
          CHECK(out64[i].dtype() == DType::F64);
          AccuracyResult a = same_with_fp64_ref(expected, out[i], out64[i]);
          CHECK_MESSAGE(a.ok, "output " << i << ": " << a.message);
        }
        ++compared;
      }
      CHECK(compared > 0);
    }
}

TEST_CASE("interpreter: checks user inputs and names the failing node") {
  Graph g;
  g.source = "toy.fxg";
  ValueId x = user_input(g, "x", meta(DType::F32, {2, 3}));
  ValueId w = weight(g, "fc.weight", F({3, 3}, {1, 0, 0, 0, 2, 0, 0, 0, 3}));
  ValueId y = node(g, "aten.mm.default", {pos_t(x), pos_t(w)}, {meta(DType::F32, {2, 3})}, "mm")[0];
  ValueId z = node(g, "aten.relu.default", {pos_t(y)}, {meta(DType::F32, {2, 3})}, "relu")[0];
  g.outputs = {z};
  auto out = interpret(g, {F({2, 3}, {1, -1, 2, -3, 4, 5})});
  REQUIRE(out.size() == 1);
  check(out[0], DType::F32, {2, 3}, {1, 0, 6, 0, 8, 15});
  try {
    interpret(g, {F({3, 3}, Vals(9, 0))});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.message() == "input 'x': expected f32[2, 3], got f32[3, 3]");
    CHECK(e.file() == "toy.fxg");
  }
  CHECK_THROWS_WITH_AS(interpret(g, {D({2, 3}, Vals(6, 0))}),
                       "toy.fxg: error: input 'x': expected f32[2, 3], got f64[2, 3]", Error);
  CHECK_THROWS_WITH_AS(interpret(g, {}), "toy.fxg: error: expected 1 inputs, got 0", Error);
  // A kernel failure names the node and op.
  Graph bad = g;
  bad.nodes[1].target = "aten.embedding.default";
  bad.nodes[1].schema = find_schema("aten.embedding.default");
  std::string err;
  REQUIRE(bind_args(*bad.nodes[1].schema, {pos_t(y), pos_t(x)}, &bad.nodes[1].args,
                    &bad.nodes[1].given, &err));
  try {
    interpret(bad, {F({2, 3}, {1, -1, 2, -3, 4, 5})});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.node() == "relu");
    CHECK(e.op() == "aten.embedding.default");
    CHECK(e.message().find("indices") != std::string::npos);
  }
  // Metadata that disagrees with the kernel's result is reported.
  Graph wrong = g;
  wrong.values[size_t(z)].meta = meta(DType::F16, {2, 3});
  CHECK_THROWS_WITH_AS(interpret(wrong, {F({2, 3}, Vals(6, 0))}),
                       "toy.fxg: error: node 'relu' (aten.relu.default): result 0 is f32[2, 3] but "
                       "the graph says f16[2, 3]",
                       Error);
  // Dangling value ids are errors, not crashes.
  Graph dangling = g;
  dangling.nodes[1].args[0].tensor = 99;
  CHECK_THROWS_WITH_AS(interpret(dangling, {F({2, 3}, Vals(6, 0))}),
                       "toy.fxg: error: value id 99 is out of range", Error);
  Graph dangling_out = g;
  dangling_out.outputs = {-5};
  CHECK_THROWS_AS(interpret(dangling_out, {F({2, 3}, Vals(6, 0))}), Error);
  // Missing weight data.
  Graph nodata = g;
  nodata.weights.clear();
  CHECK_THROWS_WITH_AS(interpret(nodata, {F({2, 3}, Vals(6, 0))}),
                       "toy.fxg: error: parameter 'fc.weight': no data", Error);
}

TEST_CASE("interpreter: float64 mode, on_node, freeing and in-place weights") {
  Graph g;
  ValueId x = user_input(g, "x", meta(DType::F32, {3}));
  ValueId b = weight(g, "bias", F({3}, {0.1, 0.2, 0.3}), InputKind::Buffer);
  ValueId a = node(g, "aten.add.Tensor", {pos_t(x), pos_t(b)}, {meta(DType::F32, {3})}, "add")[0];
  ValueId e = node(g, "aten.exp.default", {pos_t(a)}, {meta(DType::F32, {3})}, "exp")[0];
  ValueId m = node(g, "aten.mul.Scalar", {pos_t(e), pos(Arg::of_float(0.1))},
                   {meta(DType::F32, {3})}, "mul")[0];
  // relu_ on the buffer: the graph's weight bytes must stay untouched.
  ValueId r = node(g, "aten.relu_.default", {pos_t(b)}, {meta(DType::F32, {3})}, "relu_")[0];
  ValueId s = node(g, "aten.sum.default", {pos_t(m)}, {meta(DType::F32, {})}, "sum")[0];
  g.outputs = {s, r};
  std::vector<std::string> seen;
  std::weak_ptr<Storage> add_storage;
  bool add_freed_before_sum = false;
  InterpretOptions opts;
  opts.on_node = [&](const Node& n, const std::vector<Tensor>& outs) {
    seen.push_back(n.name);
    if (n.name == "add") add_storage = outs[0].storage();
    if (n.name == "sum") add_freed_before_sum = add_storage.expired();
  };
  Vals xs = {1, -2, 0.5};
  auto out = interpret(g, {F({3}, xs)}, opts);
  CHECK(seen == std::vector<std::string>{"add", "exp", "mul", "relu_", "sum"});
  CHECK(add_freed_before_sum);
  double expect = 0;
  for (int i = 0; i < 3; ++i)
    expect += std::exp(double(float(float(xs[size_t(i)]) + float(0.1 * (i + 1))))) * double(0.1f);
  CHECK(out[0].dtype() == DType::F32);
  CHECK(out[0].item() == doctest::Approx(expect).epsilon(1e-6));
  check(out[1], DType::F32, {3}, {0.1, 0.2, 0.3});
  CHECK(Tensor::from_weight(g.weights.at("bias")).to_vector() ==
        F({3}, {0.1, 0.2, 0.3}).to_vector());
  auto out64 = interpret(g, {F({3}, xs)}, {true, {}});
  CHECK(out64[0].dtype() == DType::F64);
  double e64 = 0;
  for (int i = 0; i < 3; ++i)
    e64 += std::exp(double(float(xs[size_t(i)])) + double(float(0.1 * (i + 1)))) * 0.1;
  CHECK(std::fabs(out64[0].item() - e64) < 1e-14);
}

TEST_CASE("interpreter: synthetic 1000-node graph timing") {
  // 250 blocks of linear -> layer_norm -> gelu -> residual add on 64 x 768 activations.
  const int64_t M = 64, D = 768, blocks = 250;
  Graph g;
  g.source = "synthetic";
  NameCache names(g);
  ValueId x = user_input(g, "x", meta(DType::F32, {M, D}));
  Tensor W = R(DType::F32, {D, D}, 5, -0.03, 0.03), bias = R(DType::F32, {D}, 6, -0.1, 0.1);
  Tensor gamma = R(DType::F32, {D}, 7, 0.9, 1.1), beta = R(DType::F32, {D}, 8, -0.1, 0.1);
  ValueId w = weight(g, "w", W), bv = weight(g, "b", bias), gv = weight(g, "g", gamma),
          be = weight(g, "beta", beta);
  ValueId h = x;
  for (int i = 0; i < blocks; ++i) {
    ValueId l =
        add_node1(g, "aten.linear.default", {pos_t(h), pos_t(w), pos_t(bv)}, "linear", &names);
    ValueId n =
        add_node1(g, "aten.layer_norm.default",
                  {pos_t(l), pos(Arg::of_ints({D})), pos_t(gv), pos_t(be)}, "layer_norm", &names);
    ValueId a = add_node1(g, "aten.gelu.default", {pos_t(n)}, "gelu", &names);
    h = add_node1(g, "aten.add.Tensor", {pos_t(h), pos_t(a)}, "add", &names);
  }
  g.outputs = {h};
  CHECK(g.nodes.size() == size_t(4 * blocks));
  Tensor input = R(DType::F32, {M, D}, 9, -1, 1);
  auto t0 = std::chrono::steady_clock::now();
  auto out = interpret(g, {input});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("eager interpreter ran "
          << g.nodes.size() << " nodes (64x768 linear+layer_norm+gelu+add) in " << secs << " s");
  // Sample value: recompute row 3 through all blocks independently in double, rounding to f32
  // after each op like the f32 graph does.
  Vals wv = W.to_vector(), bb = bias.to_vector(), gg = gamma.to_vector(), be2 = beta.to_vector();
  Vals iv = input.to_vector();
  Vals row(iv.begin() + 3 * D, iv.begin() + 4 * D);
  for (int i = 0; i < blocks; ++i) {
    Vals l(static_cast<size_t>(D)), a(static_cast<size_t>(D));
    for (int64_t o = 0; o < D; ++o) {
      double acc = bb[size_t(o)];
      for (int64_t k = 0; k < D; ++k) acc += row[size_t(k)] * wv[size_t(o * D + k)];
      l[size_t(o)] = double(float(acc));
    }
    double mu = 0, var = 0;
    for (double v : l) mu += v;
    mu /= double(D);
    for (double v : l) var += (v - mu) * (v - mu);
    var /= double(D);
    for (int64_t o = 0; o < D; ++o) {
      double nv = double(
          float((l[size_t(o)] - mu) / std::sqrt(var + 1e-5) * gg[size_t(o)] + be2[size_t(o)]));
      double gl = double(float(0.5 * nv * (1 + std::erf(nv / std::sqrt(2.0)))));
      a[size_t(o)] = double(float(row[size_t(o)] + gl));
    }
    row = a;
  }
  REQUIRE(out[0].sizes() == Shape{M, D});
  for (int64_t o = 0; o < D; o += 97)
    CHECK(out[0].at({3, o}) == doctest::Approx(row[size_t(o)]).epsilon(1e-4));
}

TEST_CASE("interpreter: results take the layout PyTorch recorded, so later views work") {
  // y = clone(x) recorded with transposed strides (as PyTorch's preserve_format would give
  // for a transposed input); y.transpose(0, 1).view(6) is only valid in that layout.
  Graph g;
  ValueId x = user_input(g, "x", meta(DType::F32, {2, 3}));
  TensorMeta tm = meta(DType::F32, {2, 3});
  tm.strides = {1, 2};
  ValueId y = node(g, "aten.clone.default", {pos_t(x)}, {tm}, "clone")[0];
  TensorMeta tt = meta(DType::F32, {3, 2});
  ValueId t = node(g, "aten.transpose.int", {pos_t(y), pos(Arg::of_int(0)), pos(Arg::of_int(1))},
                   {tt}, "transpose")[0];
  ValueId v = node(g, "aten.view.default", {pos_t(t), pos(Arg::of_ints({6}))},
                   {meta(DType::F32, {6})}, "view")[0];
  g.outputs = {v, y};
  auto out = interpret(g, {F({2, 3}, {1, 2, 3, 4, 5, 6})});
  check(out[0], DType::F32, {6}, {1, 4, 2, 5, 3, 6});
  CHECK(out[1].strides() == Shape{1, 2});
  check(out[1], DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  // Without the recorded layout the same view is rejected, naming the node.
  g.values[size_t(y)].meta.strides = {3, 1};
  CHECK_THROWS_WITH_AS(
      interpret(g, {F({2, 3}, {1, 2, 3, 4, 5, 6})}),
      doctest::Contains("node 'view' (aten.view.default): view size is not compatible"), Error);
}

TEST_CASE("interpreter: multi-output, list-output and no-output nodes") {
  Graph g;
  ValueId x = user_input(g, "x", meta(DType::F32, {4, 2}));
  auto parts = node(g, "aten.split.Tensor", {pos_t(x), pos(Arg::of_int(3))},
                    {meta(DType::F32, {3, 2}), meta(DType::F32, {1, 2})}, "split");
  node(g, "aten._assert_tensor_metadata.default", {pos_t(parts[1]), pos(Arg::of_ints({1, 2}))}, {},
       "check");
  auto ln =
      node(g, "aten.native_layer_norm.default",
           {pos_t(parts[0]), pos(Arg::of_ints({2})), pos(Arg::none()), pos(Arg::none()),
            pos(Arg::of_float(0))},
           {meta(DType::F32, {3, 2}), meta(DType::F32, {3, 1}), meta(DType::F32, {3, 1})}, "ln");
  g.outputs = {ln[0], ln[1], parts[1]};
  auto out = interpret(g, {F({4, 2}, {1, 3, 0, 2, 5, 6, 7, 8})});
  REQUIRE(out.size() == 3);
  check(out[0], DType::F32, {3, 2}, {-1, 1, -1, 1, -1, 1});
  check(out[1], DType::F32, {3, 1}, {2, 1, 5.5});
  check(out[2], DType::F32, {1, 2}, {7, 8});
  // A node whose output count differs from the kernel's is an error, not a crash.
  Graph bad = g;
  bad.nodes[0].outputs.pop_back();
  CHECK_THROWS_WITH_AS(interpret(bad, {F({4, 2}, Vals(8, 0))}),
                       doctest::Contains("returned 2 results but the node has 1 outputs"), Error);
  // An unknown op is reported with its node.
  Graph unk = g;
  unk.nodes[2].target = "aten.frobnicate.default";
  unk.nodes[2].schema = nullptr;
  CHECK_THROWS_WITH_AS(interpret(unk, {F({4, 2}, Vals(8, 0))}),
                       doctest::Contains("node 'ln' (aten.frobnicate.default): unknown op"), Error);
}

TEST_CASE("interpreter: copying view ops take the recorded layout, aliasing ones keep theirs") {
  Graph g;
  ValueId x = user_input(g, "x", meta(DType::F32, {2, 3}));
  TensorMeta tt = meta(DType::F32, {3, 2});
  tt.strides = {1, 3};
  ValueId t = node(g, "aten.transpose.int", {pos_t(x), pos(Arg::of_int(0)), pos(Arg::of_int(1))},
                   {tt}, "t")[0];
  // to(f16) of the transposed view copies; PyTorch keeps the transposed layout.
  TensorMeta hm = meta(DType::F16, {3, 2});
  hm.strides = {1, 3};
  ValueId h = node(g, "aten.to.dtype", {pos_t(t), pos(Arg::of_dtype(DType::F16))}, {hm}, "to")[0];
  ValueId d =
      node(g, "aten.dropout.default", {pos_t(t), pos(Arg::of_float(0.1)), pos(Arg::of_bool(false))},
           {tt}, "dropout")[0];
  g.outputs = {h, d};
  Tensor in = F({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = interpret(g, {in});
  CHECK(out[0].strides() == Shape{1, 3});
  check(out[0], DType::F16, {3, 2}, {1, 4, 2, 5, 3, 6});
  CHECK(out[1].storage() == in.storage());
}

TEST_CASE("interpreter: in-place ops through views of a weight leave g.weights unchanged") {
  Graph g;
  ValueId w = weight(g, "w", F({3}, {-1, 2, -3}), InputKind::Buffer);
  ValueId u = node(g, "aten.unsqueeze.default", {pos_t(w), pos(Arg::of_int(0))},
                   {meta(DType::F32, {1, 3})}, "u")[0];
  ValueId r = node(g, "aten.relu_.default", {pos_t(u)}, {meta(DType::F32, {1, 3})}, "relu_")[0];
  ValueId s =
      node(g, "aten.add.Tensor", {pos_t(w), pos_t(r)}, {meta(DType::F32, {1, 3})}, "add")[0];
  g.outputs = {s};
  for (int run = 0; run < 2; ++run) {
    auto out = interpret(g, {});
    check(out[0], DType::F32, {1, 3}, {0, 4, 0}); // w itself was mutated by relu_ through the view
  }
  CHECK(Tensor::from_weight(g.weights.at("w")).to_vector() == Vals{-1, 2, -3});
}
