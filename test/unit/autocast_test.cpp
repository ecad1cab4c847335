// Autocast tests (passes/autocast.h): where the casts go, the dtypes every value ends with, and
// that the converted graph computes the float32 graph's values within bf16's precision.
#include "aot_testing.h"

#include "frontend/printer.h"
#include "passes/autocast.h"
#include "passes/autograd.h"
#include "runtime/compare.h"

#include <algorithm>
#include <cmath>

using namespace fxc;
using namespace fxc::testing;

namespace {

/// A float32 user input with uniform random values in [-1, 1).
ValueId f32_input(TestGraph& tg, const std::string& name, std::vector<int64_t> sizes) {
  int64_t n = TestGraph::meta(DType::F32, sizes).numel();
  return tg.input_values(name, DType::F32, sizes, tg.random_values(n, -1, 1));
}

/// A float32 parameter stored in the graph's weights.
ValueId f32_weight(TestGraph& tg, const std::string& fqn, std::vector<int64_t> sizes) {
  TensorMeta m = TestGraph::meta(DType::F32, sizes);
  ValueId v = tg.g.add_value("p_" + fqn, m);
  tg.g.inputs.push_back({v, InputKind::Parameter, fqn, true});
  Tensor t = Tensor::from_values(DType::F32, sizes, tg.random_values(m.numel(), -1, 1));
  tg.g.weights[fqn] = WeightData{t.storage(), m, {}};
  return v;
}

DType dtype_of(const Graph& g, ValueId v) {
  return g.values[size_t(v)].meta.dtype;
}

/// The node producing `v` in `g`.
const Node& producer(const Graph& g, ValueId v) {
  REQUIRE(g.values[size_t(v)].producer >= 0);
  return g.nodes[size_t(g.values[size_t(v)].producer)];
}

/// The dtypes of the tensor inputs of the first node calling `target`.
std::vector<DType> input_dtypes(const Graph& g, const std::string& target) {
  for (const Node& n : g.nodes) {
    if (n.target != target) continue;
    std::vector<DType> out;
    for (ValueId v : n.tensor_inputs()) out.push_back(dtype_of(g, v));
    return out;
  }
  FAIL("no node calls " << target);
  return {};
}

/// The _to_copy nodes of `g` casting to `t`.
int casts_to(const Graph& g, DType t) {
  return int(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return n.target == "aten._to_copy.default" && n.arg("dtype").dtype() == t;
  }));
}

/// Every input keeps its dtype: the signature does not change.
void check_signature(const Graph& before, const Graph& after) {
  REQUIRE(before.inputs.size() == after.inputs.size());
  for (size_t i = 0; i < before.inputs.size(); ++i)
    CHECK(dtype_of(after, after.inputs[i].value) == dtype_of(before, before.inputs[i].value));
  CHECK(before.outputs == after.outputs);
}

/// The largest error of `got` relative to the largest magnitude of `want`.
double relative_error(const Tensor& got, const Tensor& want) {
  std::vector<double> a = got.to_vector(), b = want.to_vector();
  REQUIRE(a.size() == b.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return err / std::max(scale, 1e-30);
}

} // namespace

TEST_CASE("autocast: the op lists") {
  CHECK(autocast_policy("aten.mm.default") == CastPolicy::LowerPrecision);
  CHECK(autocast_policy("aten.addmm.default") == CastPolicy::LowerPrecision);
  CHECK(autocast_policy("aten.convolution.default") == CastPolicy::LowerPrecision);
  CHECK(autocast_policy("aten.scaled_dot_product_attention.default") == CastPolicy::LowerPrecision);
  CHECK(autocast_policy("aten._softmax.default") == CastPolicy::Fp32);
  CHECK(autocast_policy("aten.native_layer_norm.default") == CastPolicy::Fp32);
  CHECK(autocast_policy("aten._native_batch_norm_legit_no_training.default") == CastPolicy::Fp32);
  CHECK(autocast_policy("aten.sum.dim_IntList") == CastPolicy::Fp32);
  CHECK(autocast_policy("aten.pow.Tensor_Scalar") == CastPolicy::Fp32);
  CHECK(autocast_policy("aten.index_put.default") == CastPolicy::Promote);
  CHECK(autocast_policy("aten.add.Tensor") == CastPolicy::None);
  CHECK(autocast_policy("aten.relu.default") == CastPolicy::None);
  CHECK(autocast_policy("mylib.unknown.default") == CastPolicy::None);
}

TEST_CASE("autocast: matmuls and convolutions take bf16 inputs and give bf16") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId w = f32_weight(tg, "fc.weight", {8, 16});
  ValueId b = f32_weight(tg, "fc.bias", {16});
  ValueId mm = tg.op("aten.mm.default", {T(x), T(w)});
  ValueId addmm = tg.op("aten.addmm.default", {T(b), T(x), T(w)});
  ValueId img = f32_input(tg, "img", {1, 3, 8, 8});
  ValueId cw = f32_weight(tg, "conv.weight", {4, 3, 3, 3});
  ValueId cb = f32_weight(tg, "conv.bias", {4});
  ValueId conv = tg.op("aten.convolution.default", {T(img), T(cw), T(cb), Is({1, 1}), Is({1, 1}),
                                                    Is({1, 1}), B(false), Is({0, 0}), I(1)});
  tg.output(mm);
  tg.output(addmm);
  tg.output(conv);
  AutocastStats st;
  Graph out = autocast(tg.g, DType::BF16, &st);
  verify_graph(out);
  check_signature(tg.g, out);
  CHECK(st.converted);
  for (const char* t : {"aten.mm.default", "aten.addmm.default", "aten.convolution.default"}) {
    INFO(t);
    for (DType d : input_dtypes(out, t)) CHECK(d == DType::BF16);
  }
  CHECK(dtype_of(out, mm) == DType::BF16);
  CHECK(dtype_of(out, addmm) == DType::BF16);
  CHECK(dtype_of(out, conv) == DType::BF16);
  // One cast per value: x and w serve both matmuls; b, img and the conv's weight and bias.
  CHECK(casts_to(out, DType::BF16) == 6);
  CHECK(st.casts_to_lower == 6);
  CHECK(st.casts_to_f32 == 0);
  CHECK(st.lower_ops == 3);
  // Each cast sits before its first consumer and reads the f32 value.
  const Node& mm_node = producer(out, mm);
  const Node& cast_x = producer(out, mm_node.args[0].tensor);
  CHECK(cast_x.target == "aten._to_copy.default");
  CHECK(cast_x.args[0].tensor == x);
  CHECK(out.values[size_t(mm_node.args[0].tensor)].name == "x_bf16");
  CHECK(print_readable(out).find("bf16[4, 16]") != std::string::npos);
}

TEST_CASE("autocast: softmax and layer norm cast bf16 back to f32") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId w = f32_weight(tg, "fc.weight", {8, 8});
  ValueId lw = f32_weight(tg, "ln.weight", {8});
  ValueId lb = f32_weight(tg, "ln.bias", {8});
  ValueId mm = tg.op("aten.mm.default", {T(x), T(w)});
  ValueId sm = tg.op("aten._softmax.default", {T(mm), I(-1), B(false)});
  std::vector<ValueId> ln =
      tg.ops("aten.native_layer_norm.default", {T(mm), Is({8}), T(lw), T(lb), F(1e-5)});
  ValueId s = tg.op("aten.sum.dim_IntList", {T(mm), Is({1})});
  tg.output(sm);
  tg.output(ln[0]);
  tg.output(s);
  AutocastStats st;
  Graph out = autocast(tg.g, DType::BF16, &st);
  verify_graph(out);
  check_signature(tg.g, out);
  CHECK(dtype_of(out, mm) == DType::BF16);
  for (const char* t :
       {"aten._softmax.default", "aten.native_layer_norm.default", "aten.sum.dim_IntList"}) {
    INFO(t);
    for (DType d : input_dtypes(out, t)) CHECK(d == DType::F32);
  }
  CHECK(dtype_of(out, sm) == DType::F32);
  for (ValueId v : ln) CHECK(dtype_of(out, v) == DType::F32);
  CHECK(dtype_of(out, s) == DType::F32);
  // The matmul's bf16 result is cast back once, for all three consumers.
  CHECK(casts_to(out, DType::F32) == 1);
  CHECK(st.casts_to_f32 == 1);
  CHECK(st.fp32_ops == 3);
  CHECK(st.summary(DType::BF16) ==
        "autocast to bf16: 3 casts inserted (2 to bf16, 1 to f32); 1 ops run in bf16, 3 in f32");
}

TEST_CASE("autocast: other ops follow type promotion") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId w = f32_weight(tg, "fc.weight", {8, 16});
  ValueId bias = f32_weight(tg, "fc.bias", {16});
  ValueId mm = tg.op("aten.mm.default", {T(x), T(w)});
  ValueId relu = tg.op("aten.relu.default", {T(mm)});
  ValueId scaled = tg.op("aten.mul.Scalar", {T(relu), F(0.5)});
  ValueId plus_bias = tg.op("aten.add.Tensor", {T(scaled), T(bias)});
  ValueId view = tg.op("aten.view.default", {T(relu), Is({64})});
  tg.output(plus_bias);
  tg.output(view);
  Graph out = autocast(tg.g, DType::BF16);
  verify_graph(out);
  CHECK(dtype_of(out, relu) == DType::BF16);     // bf16 in, bf16 out
  CHECK(dtype_of(out, scaled) == DType::BF16);   // a Python number does not promote
  CHECK(dtype_of(out, plus_bias) == DType::F32); // bf16 + f32 parameter is f32
  CHECK(dtype_of(out, view) == DType::BF16);
  CHECK(casts_to(out, DType::F32) == 0); // no cast for the add: promotion does it
}

TEST_CASE("autocast: f16, and a dtype the call names is kept") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId w = f32_weight(tg, "fc.weight", {8, 8});
  ValueId mm = tg.op("aten.mm.default", {T(x), T(w)});
  ValueId s = tg.op("aten.sum.dim_IntList",
                    {T(mm), Is({1}), B(false), KW("dtype", Arg::of_dtype(DType::F16))});
  tg.output(s);
  Graph out = autocast(tg.g, DType::F16);
  verify_graph(out);
  CHECK(dtype_of(out, mm) == DType::F16);
  CHECK(input_dtypes(out, "aten.sum.dim_IntList") == std::vector<DType>{DType::F16});
  CHECK(dtype_of(out, s) == DType::F16);
}

TEST_CASE("autocast: graphs that are not float32 are left as they are") {
  SUBCASE("bf16") {
    TestGraph tg;
    ValueId x = tg.input_values("x", DType::BF16, {2, 2}, {1, 2, 3, 4});
    ValueId mm = tg.op("aten.mm.default", {T(x), T(x)});
    tg.output(tg.op("aten._softmax.default", {T(mm), I(-1), B(false)}));
    AutocastStats st;
    Graph out = autocast(tg.g, DType::BF16, &st);
    CHECK_FALSE(st.converted);
    CHECK(st.casts() == 0);
    CHECK(print_readable(out) == print_readable(tg.g));
    CHECK(st.summary(DType::BF16) == "autocast to bf16: not a float32 graph, left as it is");
  }
  SUBCASE("integers only") {
    TestGraph tg;
    ValueId x = tg.input_values("x", DType::I64, {2, 2}, {1, 2, 3, 4});
    tg.output(tg.op("aten.mm.default", {T(x), T(x)}));
    AutocastStats st;
    Graph out = autocast(tg.g, DType::BF16, &st);
    CHECK_FALSE(st.converted);
    CHECK(print_readable(out) == print_readable(tg.g));
  }
  SUBCASE("float64: not eligible") {
    TestGraph tg;
    ValueId x = tg.input("x", {2, 2});
    tg.output(tg.op("aten.mm.default", {T(x), T(x)}));
    Graph out = autocast(tg.g, DType::BF16);
    CHECK(print_readable(out) == print_readable(tg.g));
  }
}

TEST_CASE("autocast: converting again changes nothing") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId w = f32_weight(tg, "fc.weight", {8, 8});
  ValueId mm = tg.op("aten.mm.default", {T(x), T(w)});
  ValueId sm = tg.op("aten._softmax.default", {T(mm), I(-1), B(false)});
  tg.output(tg.op("aten.mm.default", {T(sm), T(w)}));
  Graph once = autocast(tg.g, DType::BF16);
  AutocastStats st;
  Graph twice = autocast(once, DType::BF16, &st);
  CHECK(st.casts() == 0);
  CHECK(print_readable(twice) == print_readable(once));
}

TEST_CASE("autocast: the converted MLP computes the float32 one within bf16 precision") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {16, 64});
  ValueId w1 = f32_weight(tg, "fc1.weight", {64, 64});
  ValueId b1 = f32_weight(tg, "fc1.bias", {64});
  ValueId w2 = f32_weight(tg, "fc2.weight", {64, 10});
  ValueId b2 = f32_weight(tg, "fc2.bias", {10});
  ValueId h = tg.op("aten.relu.default", {T(tg.op("aten.addmm.default", {T(b1), T(x), T(w1)}))});
  ValueId logits = tg.op("aten.addmm.default", {T(b2), T(h), T(w2)});
  ValueId probs = tg.op("aten._softmax.default", {T(logits), I(-1), B(false)});
  tg.output(logits);
  tg.output(probs);
  Graph out = autocast(tg.g, DType::BF16);
  verify_graph(out);
  std::vector<Tensor> want = interpret(tg.g, tg.inputs), got = interpret(out, tg.inputs);
  REQUIRE(got.size() == 2);
  CHECK(got[0].dtype() == DType::BF16);
  CHECK(got[1].dtype() == DType::F32);
  for (size_t k = 0; k < 2; ++k) {
    double err = relative_error(got[k], want[k]);
    INFO("output " << k << ": relative error " << err);
    CHECK(err < 2e-2); // bf16 keeps 8 bits: ~4e-3 per rounding, a few roundings deep
    CHECK(err > 1e-5); // and it did round: an f32 computation would be ~1e-7
  }
}

TEST_CASE("autocast: the converted graph differentiates; gradients keep the inputs' dtypes") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId w = f32_weight(tg, "fc.weight", {8, 8});
  ValueId mm = tg.op("aten.mm.default", {T(x), T(w)});
  tg.output(tg.op("aten._softmax.default", {T(mm), I(-1), B(false)}));
  Graph out = autocast(tg.g, DType::BF16);
  JointGraph j = build_joint_graph(out);
  verify_graph(j.graph);
  AotGraphs aot = partition_joint(j, PartitionStrategy::Default);
  REQUIRE(aot.backward.outputs.size() == 2);
  for (ValueId g : aot.backward.outputs) CHECK(dtype_of(aot.backward, g) == DType::F32);
}

TEST_CASE("autocast: a view is cast as its base; metadata assertions follow the new dtype") {
  TestGraph tg;
  // core ATen's batched input times a weight: bmm(x, expand(permute(W))).
  ValueId x = f32_input(tg, "x", {4, 6, 8});
  ValueId w = f32_weight(tg, "proj.weight", {5, 8});
  ValueId wt = tg.op("aten.permute.default", {T(w), Is({1, 0})});
  ValueId we = tg.op("aten.expand.default", {T(wt), Is({4, 8, 5})});
  ValueId y = tg.op("aten.bmm.default", {T(x), T(we)});
  tg.ops("aten._assert_tensor_metadata.default", {T(y), KW("dtype", Arg::of_dtype(DType::F32))});
  tg.output(y);
  Graph g = autocast(tg.g, DType::BF16);
  // The weight's cast copies its 40 elements, not the 160 of the expanded view.
  int casts = 0;
  for (const Node& n : g.nodes)
    if (n.target == "aten._to_copy.default") {
      ++casts;
      ValueId in = n.args[0].tensor;
      CHECK(g.values[size_t(in)].producer < 0); // a graph input or weight, not a view
    }
  CHECK(casts == 2);
  CHECK(input_dtypes(g, "aten.bmm.default") == std::vector<DType>{DType::BF16, DType::BF16});
  for (const Node& n : g.nodes)
    if (n.target == "aten._assert_tensor_metadata.default")
      CHECK(n.arg("dtype").dtype() == DType::BF16);
  std::vector<Tensor> want = interpret(tg.g, tg.inputs), got = interpret(g, tg.inputs);
  CompareOptions o;
  o.rtol = o.atol = 2e-2;
  CompareResult r = compare_tensors(got[0].to(DType::F32), want[0], o);
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("autocast: ops of a disabled autocast region keep their dtypes") {
  // Graph::autocast_disabled names the nodes pt2_reader inlined from wrap_with_autocast(enabled=
  // False): they run in the dtypes they are given, as under torch.autocast(enabled=False).
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId w = f32_weight(tg, "fc.weight", {8, 16});
  ValueId inside = tg.op("aten.mm.default", {T(x), T(w)});
  ValueId outside = tg.op("aten.mm.default", {T(x), T(w)});
  tg.output(inside);
  tg.output(outside);
  tg.g.autocast_disabled.insert(tg.g.nodes[size_t(tg.g.values[size_t(inside)].producer)].name);
  Graph out = autocast(tg.g, DType::BF16);
  verify_graph(out);
  CHECK(dtype_of(out, inside) == DType::F32);
  CHECK(dtype_of(out, outside) == DType::BF16);
  // aten.to(x, float32) is a view of an f32 x, but it names its dtype: a matmul reading it casts
  // its result, not x viewed again (which would give f32 back).
  TestGraph to;
  ValueId a = f32_input(to, "a", {4, 8});
  ValueId b = f32_input(to, "b", {8, 16});
  ValueId ta = to.op("aten.to.dtype", {T(a), {"dtype", Arg::of_dtype(DType::F32)}});
  ValueId p = to.op("aten.matmul.default", {T(ta), T(b)});
  to.output(p);
  Graph out2 = autocast(to.g, DType::BF16);
  verify_graph(out2);
  CHECK(dtype_of(out2, p) == DType::BF16);
  for (DType d : input_dtypes(out2, "aten.matmul.default")) CHECK(d == DType::BF16);
}
