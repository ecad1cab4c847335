// Decomposition tests: each decomposed graph computes what the original computes, with only
// core ops left; real fixtures still reproduce PyTorch's outputs after decomposition.
#include "aot_testing.h"

#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "frontend/verify.h"
#include "passes/decompose.h"
#include "runtime/compare.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace fxc;
using namespace fxc::testing;

namespace {

/// Decomposes tg's graph and checks: it is a fixpoint, no op with a row is left unless `kept`
/// names it, and every output matches the original's (float64).
Graph check_decomposition(TestGraph& tg, std::vector<std::string> kept = {}) {
  Graph d = decompose(tg.g);
  verify_graph(d);
  CHECK(fully_decomposed(d));
  for (const Node& n : d.nodes) {
    INFO(n.name << " " << n.target);
    if (std::find(kept.begin(), kept.end(), n.target) == kept.end())
      CHECK_FALSE(has_decomposition(n.target));
  }
  std::vector<Tensor> want = interpret(tg.g, tg.inputs), got = interpret(d, tg.inputs);
  REQUIRE(want.size() == got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    CompareOptions o;
    o.rtol = 1e-10;
    o.atol = 1e-12;
    CompareResult r = compare_tensors(got[k], want[k], o);
    INFO("output " << k << ": " << r.message);
    CHECK(r.ok);
  }
  return d;
}

} // namespace

TEST_CASE("decompose: activations") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 7}, -5, 5);
  tg.output(tg.op("aten.gelu.default", {T(x)}));
  tg.output(tg.op("aten.gelu.default", {T(x), KW("approximate", Arg::of_string("tanh"))}));
  tg.output(tg.op("aten.silu.default", {T(x)}));
  tg.output(tg.op("aten.hardswish.default", {T(x)}));
  tg.output(tg.op("aten.hardsigmoid.default", {T(x)}));
  tg.output(tg.op("aten.dropout.default", {T(x), F(0.1), B(false)}));
  Graph d = check_decomposition(tg);
  // The value replacing gelu keeps its name.
  CHECK(d.find_value("gelu") != kNoValue);
  CHECK(d.values[size_t(d.find_value("gelu"))].producer >= 0);
}

TEST_CASE("decompose: softmax, log_softmax, layer and batch norm") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4, 5}, -3, 3);
  tg.output(tg.op("aten._softmax.default", {T(x), I(-1), B(false)}));
  tg.output(tg.op("aten.softmax.int", {T(x), I(1)}));
  tg.output(tg.op("aten._log_softmax.default", {T(x), I(2), B(false)}));
  tg.output(tg.op("aten.log_softmax.int", {T(x), I(-1)}));
  ValueId w = tg.weight("ln.weight", {4, 5}), b = tg.weight("ln.bias", {4, 5});
  for (ValueId o :
       tg.ops("aten.native_layer_norm.default", {T(x), Is({4, 5}), T(w), T(b), F(1e-5)}))
    tg.output(o);
  tg.output(tg.op("aten.layer_norm.default", {T(x), Is({5})}));
  ValueId bw = tg.weight("bn.weight", {3}), bb = tg.weight("bn.bias", {3});
  ValueId rm = tg.weight("bn.running_mean", {3}, -1, 1, InputKind::Buffer);
  ValueId rv = tg.weight("bn.running_var", {3}, 0.5, 2, InputKind::Buffer);
  for (ValueId o : tg.ops("aten._native_batch_norm_legit_no_training.default",
                          {T(x), T(bw), T(bb), T(rm), T(rv), F(0.1), F(1e-5)}))
    tg.output(o);
  tg.output(tg.op("aten.batch_norm.default",
                  {T(x), T(bw), T(bb), T(rm), T(rv), B(false), F(0.1), F(1e-3), B(true)}));
  check_decomposition(tg);
}

TEST_CASE("decompose: linear, matmul, conv2d") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4}), w = tg.weight("fc.weight", {5, 4});
  ValueId b = tg.weight("fc.bias", {5});
  tg.output(tg.op("aten.linear.default", {T(x), T(w), T(b)}));
  tg.output(tg.op("aten.linear.default", {T(tg.input("x2", {3, 4})), T(w)}));
  ValueId m = tg.input("m", {4, 2}), v = tg.input("v", {4}), bm = tg.input("bm", {2, 1, 4, 3});
  tg.output(tg.op("aten.matmul.default", {T(x), T(m)}));
  tg.output(tg.op("aten.matmul.default", {T(x), T(v)}));
  tg.output(tg.op("aten.matmul.default", {T(v), T(v)}));
  tg.output(tg.op("aten.matmul.default", {T(v), T(m)}));
  tg.output(tg.op("aten.matmul.default", {T(x), T(bm)}));
  // addmm: a 1-row product with a small mat2 and non-unit beta/alpha are split; a plain
  // addmm stays one op.
  ValueId r1 = tg.input("r1", {1, 4}), bias = tg.input("bias", {5}), bias2 = tg.input("b2", {2});
  tg.output(tg.op("aten.addmm.default", {T(bias2), T(r1), T(m)}));
  ValueId m45 = tg.input("m45", {4, 5}), a34 = tg.input("a34", {3, 4});
  tg.output(tg.op("aten.addmm.default", {T(bias), T(r1), T(m45)}));
  tg.output(tg.op("aten.addmm.default", {T(bias), T(a34), T(m45), KW("beta", Arg::of_float(0.5)),
                                         KW("alpha", Arg::of_float(2.0))}));
  tg.output(tg.op("aten.addmm.default", {T(bias), T(a34), T(m45), KW("beta", Arg::of_float(0.0))}));
  tg.output(tg.op("aten.addmm.default", {T(bias), T(a34), T(m45)}));
  ValueId img = tg.input("img", {1, 2, 6, 6}), cw = tg.weight("conv.weight", {4, 2, 3, 3});
  tg.output(
      tg.op("aten.conv2d.default", {T(img), T(cw), {"", Arg::none()}, Is({2, 2}), Is({1, 1})}));
  // convolution keeps its node unless transposed (its row rewrites only that form).
  Graph d = check_decomposition(tg, {"aten.addmm.default", "aten.convolution.default"});
  int addmms = 0;
  for (const Node& n : d.nodes) addmms += n.target == "aten.addmm.default";
  CHECK(addmms == 2); // the plain one and linear's
}

TEST_CASE("decompose: scaled_dot_product_attention with masks, causal and scale") {
  TestGraph tg;
  ValueId q = tg.input("q", {2, 2, 4, 3}), k = tg.input("k", {2, 2, 5, 3});
  ValueId v = tg.input("v", {2, 2, 5, 2});
  ValueId mask = tg.input_values("mask", DType::Bool, {4, 5},
                                 {1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1});
  ValueId fmask = tg.input("fmask", {2, 1, 4, 5});
  tg.output(tg.op("aten.scaled_dot_product_attention.default", {T(q), T(k), T(v)}));
  tg.output(tg.op("aten.scaled_dot_product_attention.default",
                  {T(q), T(k), T(v), {"", Arg::none()}, F(0.0), B(true)}));
  // Row 1 of the mask is all False: PyTorch's safe softmax gives zeros there, not NaN.
  tg.output(tg.op("aten.scaled_dot_product_attention.default",
                  {T(q), T(k), T(v), T(mask), KW("scale", Arg::of_float(0.3))}));
  tg.output(tg.op("aten.scaled_dot_product_attention.default", {T(q), T(k), T(v), T(fmask)}));
  check_decomposition(tg);
}

TEST_CASE("decompose: views, pooling and split") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4, 6});
  tg.output(tg.op("aten.transpose.int", {T(x), I(1), I(-1)}));
  tg.output(tg.op("aten.reshape.default", {T(x), Is({6, -1})}));
  tg.output(tg.op("aten.flatten.using_ints", {T(x), I(1)}));
  tg.output(tg.op("aten.unflatten.int", {T(x), I(3), Is({2, 3})}));
  for (ValueId o : tg.ops("aten.split.Tensor", {T(x), I(4), I(3)})) tg.output(o);
  tg.output(tg.op("aten.max_pool2d.default", {T(x), Is({2, 2})}));
  tg.output(tg.op("aten.adaptive_avg_pool2d.default", {T(x), Is({1, 1})}));
  tg.output(tg.op("aten.adaptive_avg_pool2d.default", {T(x), Is({2, 3})}));
  // 4 x 6 -> 3 x 4 is not an even split: the op stays.
  tg.output(tg.op("aten.adaptive_avg_pool2d.default", {T(x), Is({3, 4})}));
  tg.output(tg.op("aten.pad.default", {T(x), Is({1, 1}), KW("value", Arg::of_float(2.0))}));
  check_decomposition(tg, {"aten.adaptive_avg_pool2d.default"});
}

TEST_CASE("decompose: swapaxes, swapdims, moveaxis and movedim.int are transposes and movedims") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4, 6});
  // Pairs: the alias, then the op it names.
  tg.output(tg.op("aten.swapaxes.default", {T(x), I(1), I(-1)}));
  tg.output(tg.op("aten.transpose.int", {T(x), I(1), I(-1)}));
  tg.output(tg.op("aten.swapdims.default", {T(x), I(0), I(2)}));
  tg.output(tg.op("aten.transpose.int", {T(x), I(0), I(2)}));
  tg.output(tg.op("aten.movedim.int", {T(x), I(0), I(-1)}));
  tg.output(tg.op("aten.permute.default", {T(x), Is({1, 2, 3, 0})}));
  tg.output(tg.op("aten.moveaxis.int", {T(x), I(3), I(1)}));
  tg.output(tg.op("aten.permute.default", {T(x), Is({0, 3, 1, 2})}));
  tg.output(tg.op("aten.moveaxis.intlist", {T(x), Is({0, 1}), Is({2, 3})}));
  tg.output(tg.op("aten.permute.default", {T(x), Is({2, 3, 0, 1})}));
  Graph d = check_decomposition(tg);
  std::vector<Tensor> got = interpret(d, tg.inputs);
  REQUIRE(got.size() == 10);
  for (size_t k = 0; k < got.size(); k += 2) {
    INFO("pair " << k / 2);
    CHECK(got[k].sizes() == got[k + 1].sizes());
    CHECK(got[k].strides() == got[k + 1].strides()); // views of x, as their ops are
    CHECK(compare_tensors(got[k], got[k + 1], CompareOptions{}).ok);
  }
}

TEST_CASE("decompose: autograd forms return the statistics and indices the backward reads") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4, 4});
  ValueId w = tg.weight("ln.weight", {4});
  ValueId rm = tg.weight("bn.running_mean", {3}, -1, 1, InputKind::Buffer);
  ValueId rv = tg.weight("bn.running_var", {3}, 0.5, 2, InputKind::Buffer);
  tg.output(tg.op("aten.layer_norm.default", {T(x), Is({4}), T(w)}));
  tg.output(tg.op("aten.batch_norm.default", {T(x),
                                              {"", Arg::none()},
                                              {"", Arg::none()},
                                              T(rm),
                                              T(rv),
                                              B(false),
                                              F(0.1),
                                              F(1e-5),
                                              B(true)}));
  tg.output(tg.op("aten.max_pool2d.default", {T(x), Is({2, 2})}));
  Graph d = to_autograd_forms(tg.g);
  std::vector<std::string> targets;
  for (const Node& n : d.nodes) targets.push_back(n.target);
  CHECK(targets == std::vector<std::string>{"aten.native_layer_norm.default",
                                            "aten._native_batch_norm_legit_no_training.default",
                                            "aten.max_pool2d_with_indices.default"});
  std::vector<Tensor> want = interpret(tg.g, tg.inputs), got = interpret(d, tg.inputs);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) CHECK(got[k].to_vector() == want[k].to_vector());
  // Training-mode batch norm (batch statistics) takes its functional form, whose derivative is
  // its decomposition's; the same values.
  TestGraph t2;
  ValueId y = t2.input("y", {2, 3, 4});
  t2.output(t2.op("aten.batch_norm.default", {T(y),
                                              {"", Arg::none()},
                                              {"", Arg::none()},
                                              {"", Arg::none()},
                                              {"", Arg::none()},
                                              B(true),
                                              F(0.1),
                                              F(1e-5),
                                              B(true)}));
  Graph d2 = to_autograd_forms(t2.g);
  REQUIRE(d2.nodes.size() == 1);
  CHECK(d2.nodes[0].target == "aten._native_batch_norm_legit.no_stats");
  std::vector<Tensor> in2 = {Tensor::empty(DType::F64, {2, 3, 4})};
  for (int64_t i = 0; i < 24; ++i) in2[0].store(i, double(i % 7) - 2.5);
  CHECK(interpret(d2, in2)[0].to_vector() == interpret(t2.g, in2)[0].to_vector());
}

TEST_CASE("decompose: training-mode dropout draws its mask with native_dropout") {
  TestGraph tg;
  ValueId x = tg.input("x", {3});
  tg.output(tg.op("aten.dropout.default", {T(x), F(0.5), B(true)}));
  Graph d = decompose(tg.g);
  verify_graph(d);
  bool drawn = false;
  for (const Node& n : d.nodes) drawn = drawn || n.target == "aten.native_dropout.default";
  CHECK(drawn);
}

TEST_CASE("decompose: real fixtures keep PyTorch's outputs") {
  for (const char* name : {"mlp", "block", "convnet", "norms", "embed", "berttiny"}) {
    INFO(std::string(name));
    std::string base = std::string(FXC_FIXTURES_DIR) + "/" + name;
    Graph g = import_pt2(base + ".pt2");
    Graph d = decompose(g);
    verify_graph(d);
    CHECK(fully_decomposed(d));
    auto io = read_safetensors(base + ".io.safetensors");
    std::vector<Tensor> inputs;
    for (int i = 0; io.count("input_" + std::to_string(i)); ++i)
      inputs.push_back(Tensor::from_weight(io.at("input_" + std::to_string(i))));
    std::vector<Tensor> outs = interpret(d, inputs);
    // The archive records the outputs PyTorch saved (berttiny: the hidden states only).
    REQUIRE(io.count("output_0"));
    for (size_t k = 0; k < outs.size() && io.count("output_" + std::to_string(k)); ++k) {
      Tensor want = Tensor::from_weight(io.at("output_" + std::to_string(k)));
      CompareOptions o;
      o.rtol = 1e-4;
      o.atol = 1e-5;
      CompareResult r = compare_tensors(outs[k], want, o);
      INFO("output " << k << ": " << r.message);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("decompose: convolution_backward is kept for cuDNN only where cuDNN computes it") {
  TestGraph tg;
  auto f32 = [&](const std::string& name, std::vector<int64_t> sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return tg.input_values(name, DType::F32, sizes, tg.random_values(n, -1, 1));
  };
  ValueId g2 = f32("g2", {2, 4, 3, 3}), x2 = f32("x2", {2, 6, 5, 5}), w2 = f32("w2", {4, 3, 3, 3});
  ValueId g1 = f32("g1", {2, 4, 3}), x1 = f32("x1", {2, 3, 5}), w1 = f32("w1", {4, 3, 3});
  auto mask = [](bool a, bool b, bool c) { return CallArg{"", Arg::of_bools({a, b, c})}; };
  // 2-D, grouped (2 groups), stride 1, padding 0: cuDNN's.
  for (ValueId v : tg.ops("aten.convolution_backward.default",
                          {T(g2), T(x2), T(w2), Is({4}), Is({1, 1}), Is({0, 0}), Is({1, 1}),
                           B(false), Is({0, 0}), I(2), mask(true, true, true)}))
    tg.output(v);
  // 1-D: always the convolutions of its decomposition.
  std::vector<ValueId> r1 = tg.ops("aten.convolution_backward.default", {T(g1),
                                                                         T(x1),
                                                                         T(w1),
                                                                         {"", Arg::none()},
                                                                         Is({1}),
                                                                         Is({0}),
                                                                         Is({1}),
                                                                         B(false),
                                                                         Is({0}),
                                                                         I(1),
                                                                         mask(true, true, false)});
  tg.output(r1[0]);
  tg.output(r1[1]);
  DecomposeOptions keep;
  keep.keep_cudnn_conv_backward = true;
  Graph kept = decompose(tg.g, keep);
  verify_graph(kept);
  int backward = 0;
  for (const Node& n : kept.nodes)
    if (n.target == "aten.convolution_backward.default") {
      ++backward;
      CHECK(cudnn_conv_backward(kept, n));
    }
  CHECK(backward == 1);
  Graph full = decompose(tg.g);
  for (const Node& n : full.nodes) CHECK(n.target != "aten.convolution_backward.default");
  // Both compute what the op computes (the kept node through its composite expansion).
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  for (const Graph* d : {&kept, &full}) {
    std::vector<Tensor> got = interpret(*d, tg.inputs);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CompareResult r = compare_tensors(got[i], want[i]);
      INFO("output " << i << ": " << r.message);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("decompose: kernel taps that only read padding are dropped") {
  TestGraph tg;
  // DeepLab's ASPP on a 14x14 map: dilation 24, padding 24: only the centre tap reads the input.
  ValueId x = tg.input("x", {2, 8, 14, 14});
  ValueId w = tg.weight("aspp.weight", {4, 8, 3, 3}), b = tg.weight("aspp.bias", {4});
  tg.output(tg.op("aten.convolution.default", {T(x), T(w), T(b), Is({1, 1}), Is({24, 24}),
                                               Is({24, 24}), B(false), Is({0, 0}), I(1)}));
  // Dilation 12 on the same map: every tap is read by some output; the convolution stays.
  ValueId w12 = tg.weight("d12.weight", {4, 8, 3, 3});
  tg.output(tg.op(
      "aten.convolution.default",
      {T(x), T(w12), {"", Arg::none()}, Is({1}), Is({12}), Is({12}), B(false), Is({0}), I(1)}));
  // 1-D, kernel 5, dilation 4, padding 8, length 5: taps 1..3 live, padding 4 after the cut.
  ValueId x1 = tg.input("x1", {1, 2, 5});
  ValueId w1 = tg.weight("c1.weight", {3, 2, 5});
  tg.output(
      tg.op("aten.convolution.default",
            {T(x1), T(w1), {"", Arg::none()}, Is({1}), Is({8}), Is({4}), B(false), Is({0}), I(1)}));
  // Grouped and strided, dead taps in one dim only: 7x3 kernel of dilation (6, 1) on 4x9.
  ValueId xg = tg.input("xg", {1, 4, 4, 9});
  ValueId wg = tg.weight("g.weight", {6, 2, 7, 3});
  tg.output(tg.op("aten.convolution.default", {T(xg),
                                               T(wg),
                                               {"", Arg::none()},
                                               Is({2, 1}),
                                               Is({18, 1}),
                                               Is({6, 1}),
                                               B(false),
                                               Is({0, 0}),
                                               I(2)}));
  Graph d = check_decomposition(tg, {"aten.convolution.default"});
  std::vector<std::vector<int64_t>> kernels;
  for (const Node& n : d.nodes)
    if (n.target == "aten.convolution.default") {
      const std::vector<int64_t>& k = d.values[n.arg("weight").tensor].meta.sizes;
      kernels.emplace_back(k.begin() + 2, k.end());
      if (kernels.size() == 1) {
        CHECK(n.arg("padding").ints == std::vector<int64_t>{0, 0});
        CHECK(n.arg("dilation").ints == std::vector<int64_t>{1, 1});
      }
    }
  CHECK(kernels == std::vector<std::vector<int64_t>>{{1, 1}, {3, 3}, {3}, {1, 3}});
}

TEST_CASE("decompose: a 3-D convolution is 2-D convolutions over the frames") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 4, 7, 5, 6});
  ValueId w = tg.weight("conv.weight", {6, 2, 3, 3, 2}), b = tg.weight("conv.bias", {6});
  // Temporal stride 2, padding 1, dilation 2; two groups; and an unpadded 1-frame kernel.
  tg.output(tg.op("aten.convolution.default", {T(x), T(w), T(b), Is({2, 1, 2}), Is({1, 1, 0}),
                                               Is({2, 1, 1}), B(false), Is({0, 0, 0}), I(2)}));
  ValueId w1 = tg.weight("c1.weight", {3, 4, 1, 1, 1});
  tg.output(
      tg.op("aten.convolution.default",
            {T(x), T(w1), {"", Arg::none()}, Is({1}), Is({0}), Is({1}), B(false), Is({0}), I(1)}));
  // Ungrouped, three temporal offsets, temporal padding 2.
  ValueId w3 = tg.weight("c3.weight", {5, 4, 3, 2, 2}), b3 = tg.weight("c3.bias", {5});
  tg.output(tg.op("aten.convolution.default", {T(x), T(w3), T(b3), Is({1, 2, 1}), Is({2, 0, 1}),
                                               Is({1, 1, 1}), B(false), Is({0, 0, 0}), I(1)}));
  Graph d = check_decomposition(tg, {"aten.convolution.default"});
  int convs = 0;
  for (const Node& n : d.nodes)
    if (n.target == "aten.convolution.default") {
      ++convs;
      CHECK(d.values[n.arg("input").tensor].meta.dim() == 4);
    }
  CHECK(convs == 3 + 1 + 3); // one per temporal kernel offset
  // For oneDNN (inductor on the CPU, inference) 3-D convolutions stay whole.
  DecomposeOptions keep;
  keep.keep_conv3d = true;
  Graph k = decompose(tg.g, keep);
  convs = 0;
  for (const Node& n : k.nodes)
    if (n.target == "aten.convolution.default") {
      ++convs;
      CHECK(k.values[n.arg("input").tensor].meta.dim() == 5);
    }
  CHECK(convs == 3);
}

TEST_CASE("decompose: in-place distributions draw what their functional ops draw") {
  CHECK(functional_target("aten.uniform_.default") == "aten.uniform.default");
  CHECK(functional_target("aten.normal_.default") == "aten.normal_functional.default");
  CHECK(functional_target("aten.relu_.default") == "aten.relu.default");
  CHECK(functional_target("aten.relu.default").empty());
  TestGraph tg;
  ValueId x = tg.input("x", {4, 5});
  auto fresh = [&] { return tg.op("aten.clone.default", {T(x)}); };
  tg.output(tg.op("aten.uniform_.default", {T(fresh()), F(-1.0), F(3.0)}));
  tg.output(tg.op("aten.normal_.default", {T(fresh()), F(2.0), F(0.5)}));
  tg.output(tg.op("aten.exponential_.default", {T(fresh()), F(2.0)}));
  tg.output(tg.op("aten.cauchy_.default", {T(fresh()), F(1.0), F(2.0)}));
  tg.output(tg.op("aten.geometric_.default", {T(fresh()), F(0.25)}));
  tg.output(tg.op("aten.log_normal_.default", {T(fresh()), F(0.0), F(0.5)}));
  // A write into a graph input stays in place (its reference kernel runs).
  ValueId in = tg.input("y", {3});
  tg.output(tg.op("aten.uniform_.default", {T(in)}));
  Graph d = check_decomposition(tg, {"aten.uniform_.default"});
  size_t inplace = 0, draws = 0;
  for (const Node& n : d.nodes) {
    inplace += target_has_tag(n.target, OpTag::Inplace);
    draws += n.target == "aten.rand_like.default" || n.target == "aten.randn_like.default";
  }
  CHECK(inplace == 1);
  CHECK(draws == 6);
  // The functional node takes the in-place node's name, hence its stream: the same draws.
  std::vector<Tensor> a = interpret(tg.g, tg.inputs), b = interpret(d, tg.inputs);
  for (size_t k = 0; k + 1 < a.size(); ++k) CHECK(a[k].to_vector() == b[k].to_vector());
  std::vector<double> u = a[0].to_vector(), g = a[4].to_vector();
  CHECK(*std::min_element(u.begin(), u.end()) >= -1.0);
  CHECK(*std::max_element(u.begin(), u.end()) < 3.0);
  for (double v : g) CHECK((v >= 1 && v == std::floor(v)));
}

TEST_CASE("decompose: multinomial samples categories by their probabilities") {
  TestGraph tg;
  ValueId p =
      tg.input_values("p", DType::F32, {3, 4}, {0, 1, 0, 3, /**/ 1, 1, 1, 1, /**/ 0, 0, 5, 0});
  ValueId w = tg.op("aten.multinomial.default", {T(p), I(2)});
  ValueId r = tg.op("aten.multinomial.default", {T(p), I(50), B(true)});
  ValueId one = tg.op("aten.multinomial.default", {T(p), I(1), B(true)});
  ValueId v = tg.input_values("v", DType::F64, {3}, {0.2, 0, 0.8});
  ValueId v1 = tg.op("aten.multinomial.default", {T(v), I(20), B(true)});
  CHECK(tg.g.values[size_t(w)].meta.sizes == std::vector<int64_t>{3, 2});
  CHECK(tg.g.values[size_t(w)].meta.dtype == DType::I64);
  CHECK(tg.g.values[size_t(r)].meta.sizes == std::vector<int64_t>{3, 50});
  CHECK(tg.g.values[size_t(v1)].meta.sizes == std::vector<int64_t>{20});
  for (ValueId o : {w, r, one, v1}) tg.output(o);
  Graph d = check_decomposition(tg);
  std::vector<Tensor> out = interpret(d, tg.inputs);
  std::vector<double> wo = out[0].to_vector(), ro = out[1].to_vector(), oo = out[2].to_vector(),
                      vo = out[3].to_vector();
  // Without replacement: distinct positive categories; row 0 has exactly two.
  CHECK(std::set<double>{wo[0], wo[1]} == std::set<double>{1, 3});
  CHECK(wo[2] != wo[3]);
  CHECK(wo[4] == 2); // row 2 has one positive category, then a zero one
  // With replacement: only positive categories.
  for (int64_t j = 0; j < 50; ++j) {
    CHECK((ro[size_t(j)] == 1 || ro[size_t(j)] == 3));
    CHECK(ro[size_t(100 + j)] == 2);
  }
  CHECK(oo[2] == 2);
  for (double x : vo) CHECK((x == 0 || x == 2));
}

TEST_CASE("decompose: multinomial's argument errors are PyTorch's") {
  TestGraph tg;
  ValueId p = tg.input("p", {2, 3}, 0, 1);
  ValueId p3 = tg.input("p3", {2, 2, 3}, 0, 1);
  ValueId pi = tg.input_values("pi", DType::I64, {3}, {1, 2, 3});
  auto fails = [&](std::vector<CallArg> call, const char* msg) {
    CHECK_THROWS_WITH_AS(tg.op("aten.multinomial.default", std::move(call)), doctest::Contains(msg),
                         Error);
  };
  fails({T(p3), I(1)}, "prob_dist must be 1 or 2 dim");
  fails({T(pi), I(1)}, "multinomial only supports floating-point dtypes for input, got: Long");
  fails({T(p), I(0)}, "cannot sample n_sample <= 0 samples");
  fails({T(p), I(4)}, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  CHECK_NOTHROW(tg.op("aten.multinomial.default", {T(p), I(4), B(true)}));
}
