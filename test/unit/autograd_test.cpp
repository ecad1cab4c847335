// Gradient checks for every derivative rule: analytic (joint graph, partitioned, interpreted in
// float64) against central finite differences of the forward graph.
#include "aot_testing.h"

#include "frontend/diag.h"
#include "passes/autograd.h"
#include "passes/decompose.h"

using namespace fxc;
using namespace fxc::testing;

namespace {

void unary(std::string_view target, std::vector<int64_t> sizes, double lo = -1, double hi = 1) {
  INFO(target);
  TestGraph tg;
  ValueId x = tg.input("x", sizes, lo, hi);
  tg.output(tg.op(target, {T(x)}));
  check_gradients(tg);
}

void binary(std::string_view target, std::vector<int64_t> a, std::vector<int64_t> b,
            std::vector<CallArg> extra = {}, double lo = -1, double hi = 1) {
  INFO(target);
  TestGraph tg;
  ValueId x = tg.input("x", a, lo, hi), y = tg.input("y", b, lo, hi);
  std::vector<CallArg> call = {T(x), T(y)};
  call.insert(call.end(), extra.begin(), extra.end());
  tg.output(tg.op(target, call));
  check_gradients(tg);
}

} // namespace

TEST_CASE("autograd: elementwise binary ops with broadcasting") {
  for (auto [a, b] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 1, 3}, {4, 1}}, {{}, {2, 3}}}) {
    binary("aten.add.Tensor", a, b);
    binary("aten.add.Tensor", a, b, {KW("alpha", Arg::of_float(2.5))});
    binary("aten.sub.Tensor", a, b, {KW("alpha", Arg::of_float(-0.5))});
    binary("aten.mul.Tensor", a, b);
    binary("aten.div.Tensor", a, b, {}, 0.5, 2.0);
    binary("aten.maximum.default", a, b);
    binary("aten.minimum.default", a, b);
    binary("aten.pow.Tensor_Tensor", a, b, {}, 0.5, 2.0);
  }
}

TEST_CASE("autograd: elementwise unary ops") {
  for (std::vector<int64_t> s : {std::vector<int64_t>{5}, std::vector<int64_t>{2, 3, 4}}) {
    for (const char* op :
         {"aten.neg.default", "aten.exp.default", "aten.tanh.default", "aten.sigmoid.default",
          "aten.relu.default", "aten.erf.default", "aten.abs.default", "aten.sin.default",
          "aten.cos.default", "aten.silu.default", "aten.clone.default", "aten.gelu.default"})
      unary(op, s);
    for (const char* op :
         {"aten.log.default", "aten.rsqrt.default", "aten.sqrt.default", "aten.reciprocal.default"})
      unary(op, s, 0.3, 2.0);
    unary("aten.hardswish.default", s, -5, 5);
    unary("aten.hardsigmoid.default", s, -5, 5);
  }
}

TEST_CASE("autograd: ops with scalar arguments") {
  auto with = [](std::string_view target, std::vector<CallArg> extra, double lo = -1,
                 double hi = 1) {
    INFO(target);
    TestGraph tg;
    ValueId x = tg.input("x", {3, 5}, lo, hi);
    std::vector<CallArg> call = {T(x)};
    call.insert(call.end(), extra.begin(), extra.end());
    tg.output(tg.op(target, call));
    check_gradients(tg);
  };
  with("aten.add.Scalar", {F(1.5)});
  with("aten.mul.Scalar", {F(-3.0)});
  with("aten.div.Scalar", {F(4.0)});
  with("aten.pow.Tensor_Scalar", {F(3.0)});
  with("aten.pow.Tensor_Scalar", {F(2.0)});
  with("aten.pow.Tensor_Scalar", {F(-1.5)}, 0.5, 2.0);
  with("aten.clamp.default", {F(-0.5), F(0.4)});
  with("aten.fmod.Scalar", {F(0.3)});
  with("aten.gelu.default", {KW("approximate", Arg::of_string("tanh"))}, -3, 3);
  with("aten.gelu.default", {KW("approximate", Arg::of_string("none"))}, -3, 3);
  with("aten._to_copy.default", {KW("dtype", Arg::of_dtype(DType::F64))});
}

TEST_CASE("autograd: where and masked_fill route the gradient by the condition") {
  TestGraph tg;
  ValueId x = tg.input("x", {4, 3}), y = tg.input("y", {3});
  ValueId c = tg.op("aten.gt.Scalar", {T(x), F(0.0)});
  tg.output(tg.op("aten.where.self", {T(c), T(x), T(y)}));
  tg.output(tg.op("aten.where.ScalarOther", {T(c), T(y), F(2.0)}));
  tg.output(tg.op("aten.masked_fill.Scalar", {T(x), T(c), F(-1.0)}));
  check_gradients(tg);
}

TEST_CASE("autograd: reductions") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4, 5});
  tg.output(tg.op("aten.sum.default", {T(x)}));
  tg.output(tg.op("aten.sum.dim_IntList", {T(x), Is({1}), B(false)}));
  tg.output(tg.op("aten.sum.dim_IntList", {T(x), Is({0, -1}), B(true)}));
  tg.output(tg.op("aten.mean.dim", {T(x), Is({-1}), B(true)}));
  tg.output(tg.op("aten.mean.dim", {T(x), Is({0, 2}), B(false)}));
  tg.output(tg.op("aten.mean.default", {T(x)}));
  tg.output(tg.op("aten.amax.default", {T(x), Is({1}), B(false)}));
  tg.output(tg.op("aten.amax.default", {T(x), Is({0, 2}), B(true)}));
  check_gradients(tg);
}

TEST_CASE("autograd: softmax and log_softmax") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 5}, -2, 2);
  tg.output(tg.op("aten._softmax.default", {T(x), I(-1), B(false)}));
  tg.output(tg.op("aten.softmax.int", {T(x), I(1)}));
  tg.output(tg.op("aten._log_softmax.default", {T(x), I(2), B(false)}));
  tg.output(tg.op("aten.log_softmax.int", {T(x), I(0)}));
  check_gradients(tg);
}

TEST_CASE("autograd: layer norm (native and composite)") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4}, -2, 2);
  ValueId w = tg.weight("ln.weight", {3, 4}), b = tg.weight("ln.bias", {3, 4});
  ValueId w1 = tg.weight("ln1.weight", {4});
  auto outs = tg.ops("aten.native_layer_norm.default", {T(x), Is({3, 4}), T(w), T(b), F(1e-5)});
  tg.output(outs[0]);
  tg.output(tg.op("aten.layer_norm.default", {T(x), Is({4}), T(w1)}));
  check_gradients(tg);
}

TEST_CASE("autograd: batch norm in eval mode") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4, 2}, -2, 2);
  ValueId w = tg.weight("bn.weight", {3}), b = tg.weight("bn.bias", {3});
  ValueId rm = tg.weight("bn.running_mean", {3}, -1, 1, InputKind::Buffer);
  ValueId rv = tg.weight("bn.running_var", {3}, 0.5, 2, InputKind::Buffer);
  auto outs = tg.ops("aten._native_batch_norm_legit_no_training.default",
                     {T(x), T(w), T(b), T(rm), T(rv), F(0.1), F(1e-5)});
  tg.output(outs[0]);
  tg.output(
      tg.op("aten.batch_norm.default",
            {T(x), T(w), {"", Arg::none()}, T(rm), T(rv), B(false), F(0.1), F(1e-5), B(true)}));
  AotGraphs aot = check_gradients(tg);
  // Buffers get no gradient: only x, weight and bias.
  CHECK(aot.grad_names ==
        std::vector<std::string>{"grad.bn.weight", "grad.bn.bias", "grad.input_0"});
}

TEST_CASE("autograd: matrix products") {
  TestGraph tg;
  ValueId a = tg.input("a", {3, 4}), b = tg.input("b", {4, 5}), c = tg.input("c", {5});
  ValueId ba = tg.input("ba", {2, 3, 4}), bb = tg.input("bb", {2, 4, 2});
  tg.output(tg.op("aten.mm.default", {T(a), T(b)}));
  tg.output(tg.op("aten.addmm.default", {T(c), T(a), T(b), KW("beta", Arg::of_float(0.5)),
                                         KW("alpha", Arg::of_float(2.0))}));
  tg.output(tg.op("aten.bmm.default", {T(ba), T(bb)}));
  check_gradients(tg);
}

TEST_CASE("autograd: linear and matmul") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4}), w = tg.weight("fc.weight", {5, 4});
  ValueId bias = tg.weight("fc.bias", {5});
  tg.output(tg.op("aten.linear.default", {T(x), T(w), T(bias)}));
  ValueId x2 = tg.input("x2", {3, 4});
  tg.output(tg.op("aten.linear.default", {T(x2), T(w)}));
  ValueId m = tg.input("m", {4, 2}), v = tg.input("v", {4}), bm = tg.input("bm", {2, 1, 4, 3});
  tg.output(tg.op("aten.matmul.default", {T(x), T(m)}));  // 3-D x 2-D
  tg.output(tg.op("aten.matmul.default", {T(x), T(v)}));  // 3-D x 1-D
  tg.output(tg.op("aten.matmul.default", {T(v), T(v)}));  // dot
  tg.output(tg.op("aten.matmul.default", {T(x), T(bm)})); // broadcast batch
  tg.output(tg.op("aten.matmul.default", {T(v), T(bm)})); // 1-D x batched
  check_gradients(tg);
}

TEST_CASE("autograd: convolution with stride, padding, dilation and groups") {
  struct Conv {
    std::vector<int64_t> x, w, stride, pad, dil;
    int64_t groups;
  };
  for (const Conv& c : {Conv{{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
                        Conv{{1, 4, 8, 7}, {6, 2, 3, 2}, {2, 3}, {1, 0}, {1, 2}, 2},
                        Conv{{2, 2, 5, 5}, {2, 1, 3, 3}, {2, 2}, {2, 2}, {1, 1}, 2}}) {
    TestGraph tg;
    ValueId x = tg.input("x", c.x), w = tg.weight("conv.weight", c.w);
    ValueId b = tg.weight("conv.bias", {c.w[0]});
    tg.output(tg.op("aten.convolution.default", {T(x), T(w), T(b), Is(c.stride), Is(c.pad),
                                                 Is(c.dil), B(false), Is({0, 0}), I(c.groups)}));
    tg.output(
        tg.op("aten.conv2d.default",
              {T(x), T(w), {"", Arg::none()}, Is(c.stride), Is(c.pad), Is(c.dil), I(c.groups)}));
    check_gradients(tg);
  }
}

TEST_CASE("autograd: 1-D convolution") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 4, 9}), w = tg.weight("conv.weight", {6, 2, 3});
  tg.output(
      tg.op("aten.convolution.default",
            {T(x), T(w), {"", Arg::none()}, Is({2}), Is({1}), Is({2}), B(false), Is({0}), I(2)}));
  check_gradients(tg);
}

TEST_CASE("autograd: grouped 3-D convolution, several planes per group") {
  // The weight gradient of all groups is one grouped convolution (passes/autograd.cpp).
  TestGraph tg;
  ValueId x = tg.input("x", {2, 6, 4, 5, 4}), w = tg.weight("conv.weight", {9, 2, 2, 3, 2});
  tg.output(tg.op("aten.convolution.default", {T(x),
                                               T(w),
                                               {"", Arg::none()},
                                               Is({1, 2, 1}),
                                               Is({1, 0, 1}),
                                               Is({1, 1, 2}),
                                               B(false),
                                               Is({0, 0, 0}),
                                               I(3)}));
  check_gradients(tg);
}

TEST_CASE("autograd: max pooling in gather form: overlap, dilation, padding, ceil mode, 3-D") {
  // passes/autograd.cpp max_pool_input_grad: each input element sums the covering windows.
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 9, 8});
  ValueId v = tg.input("v", {1, 2, 5, 6, 7});
  tg.output(tg.ops("aten.max_pool2d_with_indices.default",
                   {T(x), Is({3, 3}), Is({1, 2}), Is({1, 1}), Is({2, 1}), B(true)})[0]);
  tg.output(tg.ops("aten.max_pool2d_with_indices.default",
                   {T(x), Is({3, 2}), Is({2, 2}), Is({1, 0}), Is({1, 1}), B(true)})[0]);
  tg.output(tg.ops("aten.max_pool3d_with_indices.default",
                   {T(v), Is({3, 3, 3}), Is({2, 2, 2}), Is({1, 1, 1})})[0]);
  check_gradients(tg);
}

TEST_CASE("autograd: pooling") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 6, 5});
  auto mp = tg.ops("aten.max_pool2d_with_indices.default", {T(x), Is({2, 2})});
  tg.output(mp[0]);
  tg.output(tg.op("aten.max_pool2d.default", {T(x), Is({3, 2}), Is({2, 1}), Is({1, 0})}));
  tg.output(tg.op("aten.adaptive_avg_pool2d.default", {T(x), Is({1, 1})}));
  tg.output(tg.op("aten.adaptive_avg_pool2d.default", {T(x), Is({3, 5})}));
  check_gradients(tg);
}

TEST_CASE("autograd: embedding accumulates repeated ids; integer inputs get no gradient") {
  TestGraph tg;
  ValueId w = tg.weight("emb.weight", {6, 3});
  ValueId ids = tg.input_values("ids", DType::I64, {2, 4}, {1, 5, 1, 0, 3, 3, 3, 2});
  tg.output(tg.op("aten.embedding.default", {T(w), T(ids)}));
  AotGraphs aot = check_gradients(tg);
  CHECK(aot.grad_names == std::vector<std::string>{"grad.emb.weight"});
}

TEST_CASE("autograd: embedding rows at padding_idx get no gradient") {
  TestGraph tg;
  ValueId w = tg.weight("emb.weight", {6, 2});
  ValueId ids = tg.input_values("ids", DType::I64, {2, 4}, {1, 5, 1, 0, 3, 3, 3, 2});
  tg.output(tg.op("aten.embedding.default", {T(w), T(ids), I(3)}));
  AotGraphs aot = aot_autograd(tg.g, PartitionStrategy::MinCut);
  std::vector<Tensor> fw = interpret(aot.forward, tg.inputs);
  std::vector<Tensor> bw_in(fw.begin() + 1, fw.end());
  bw_in.push_back(Tensor::from_values(DType::F64, {2, 4, 2}, std::vector<double>(16, 1.0)));
  std::vector<Tensor> grads = interpret(aot.backward, bw_in);
  REQUIRE(grads.size() == 1);
  // Row r collects one per occurrence of id r; row 3 (padding) stays zero.
  CHECK(grads[0].to_vector() == std::vector<double>{1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1});
}

TEST_CASE("autograd: gather and index_select") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  ValueId idx = tg.input_values("idx", DType::I64, {3, 2}, {0, 3, 1, 1, 2, 0});
  ValueId sel = tg.input_values("sel", DType::I64, {3}, {2, 0, 2});
  tg.output(tg.op("aten.gather.default", {T(x), I(1), T(idx)}));
  tg.output(tg.op("aten.index_select.default", {T(x), I(0), T(sel)}));
  tg.output(tg.op("aten.index_select.default", {T(x), I(1), T(sel)}));
  check_gradients(tg);
}

TEST_CASE("autograd: advanced indexing accumulates at the indexed positions") {
  TestGraph tg;
  ValueId x = tg.input("x", {5, 4}), y = tg.input("y", {4, 5, 2}), z = tg.input("z", {3, 4, 5});
  ValueId i23 = tg.input_values("i23", DType::I64, {2, 3}, {0, 4, 4, 1, -1, 2});
  ValueId i3 = tg.input_values("i3", DType::I64, {3}, {1, 3, 1});
  ValueId j3 = tg.input_values("j3", DType::I64, {3}, {-1, 0, -1});
  ValueId j1 = tg.input_values("j1", DType::I64, {1}, {2});
  auto index = [&](ValueId self, std::vector<ValueId> idx) {
    return tg.op("aten.index.Tensor", {T(self), {"", Arg::of_tensors(std::move(idx))}});
  };
  tg.output(index(x, {i23}));              // x[i23]
  tg.output(index(y, {i3, j3}));           // y[i, j]: both leading dims
  tg.output(index(z, {kNoValue, i3}));     // z[:, i]: kept dim ahead of the index
  tg.output(index(z, {j1, kNoValue, i3})); // z[j, :, i]: index dims apart, result first
  check_gradients(tg);
}

TEST_CASE("autograd: views and data movement") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4});
  tg.output(tg.op("aten.view.default", {T(x), Is({6, 4})}));
  tg.output(tg.op("aten.reshape.default", {T(x), Is({4, -1})}));
  tg.output(tg.op("aten.permute.default", {T(x), Is({2, 0, 1})}));
  tg.output(tg.op("aten.transpose.int", {T(x), I(0), I(-1)}));
  tg.output(tg.op("aten.unsqueeze.default", {T(x), I(1)}));
  tg.output(tg.op("aten.flatten.using_ints", {T(x), I(1)}));
  ValueId s = tg.input("s", {3, 1});
  tg.output(tg.op("aten.expand.default", {T(s), Is({2, 3, 5})}));
  tg.output(tg.op("aten.squeeze.dim", {T(s), I(1)}));
  tg.output(tg.op("aten.slice.Tensor", {T(x), I(2), I(1), I(4), I(2)}));
  tg.output(tg.op("aten.slice.Tensor", {T(x), I(1), I(-2)}));
  tg.output(tg.op("aten.select.int", {T(x), I(1), I(-1)}));
  for (ValueId part : tg.ops("aten.split.Tensor", {T(x), I(3), I(2)})) tg.output(part);
  auto parts = tg.ops("aten.split_with_sizes.default", {T(x), Is({1, 2}), I(1)});
  tg.output(parts[1]); // the other part gets a zero gradient
  tg.output(tg.op("aten.cat.default", {{"", Arg::of_tensors({x, x})}, I(1)}));
  tg.output(tg.op("aten.constant_pad_nd.default", {T(x), Is({1, 2, 0, -1})}));
  tg.output(tg.op("aten.roll.default", {T(x), Is({1, -2}), Is({0, 2})}));
  check_gradients(tg);
}

TEST_CASE("autograd: as_strided adds overlapping reads back at their storage positions") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  // Overlapping 2x3 windows of stride (2, 1) from offset 1, a transpose, and a broadcast.
  tg.output(tg.op("aten.as_strided.default", {T(x), Is({4, 3}), Is({2, 1}), I(1)}));
  tg.output(tg.op("aten.as_strided.default", {T(x), Is({4, 3}), Is({1, 4})}));
  tg.output(tg.op("aten.as_strided.default", {T(x), Is({2, 5}), Is({0, 2})}));
  check_gradients(tg);
}

TEST_CASE("autograd: scaled_dot_product_attention through its decomposition") {
  TestGraph tg;
  ValueId q = tg.input("q", {2, 2, 4, 3}), k = tg.input("k", {2, 2, 5, 3});
  ValueId v = tg.input("v", {2, 2, 5, 2});
  ValueId mask = tg.input_values("mask", DType::Bool, {4, 5},
                                 {1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1});
  ValueId fmask = tg.input("fmask", {4, 5});
  tg.output(tg.op("aten.scaled_dot_product_attention.default", {T(q), T(k), T(v)}));
  ValueId q2 = tg.input("q2", {2, 2, 5, 3});
  tg.output(tg.op("aten.scaled_dot_product_attention.default",
                  {T(q2), T(k), T(v), {"", Arg::none()}, F(0.0), B(true)}));
  tg.output(tg.op("aten.scaled_dot_product_attention.default",
                  {T(q), T(k), T(v), T(mask), KW("scale", Arg::of_float(0.7))}));
  tg.output(tg.op("aten.scaled_dot_product_attention.default", {T(q), T(k), T(v), T(fmask)}));
  check_gradients(tg);
}

TEST_CASE("autograd: a small residual network end to end") {
  // conv-bn-relu, max_pool2d(3, 2, 1), a residual block with a strided 1x1 downsample,
  // global average pool and a linear head: the ResNet pattern.
  TestGraph tg;
  ValueId x = tg.input("x", {2, 2, 8, 8});
  auto conv = [&](ValueId in, const std::string& name, std::vector<int64_t> w, int64_t stride,
                  int64_t pad) {
    ValueId wt = tg.weight(name + ".weight", w);
    return tg.op("aten.conv2d.default",
                 {T(in), T(wt), {"", Arg::none()}, Is({stride, stride}), Is({pad, pad})});
  };
  auto bn = [&](ValueId in, const std::string& name, int64_t c) {
    ValueId w = tg.weight(name + ".weight", {c}), b = tg.weight(name + ".bias", {c});
    ValueId rm = tg.weight(name + ".running_mean", {c}, -1, 1, InputKind::Buffer);
    ValueId rv = tg.weight(name + ".running_var", {c}, 0.5, 2, InputKind::Buffer);
    return tg.op("aten.batch_norm.default",
                 {T(in), T(w), T(b), T(rm), T(rv), B(false), F(0.1), F(1e-5), B(true)});
  };
  ValueId h = tg.op("aten.relu.default", {T(bn(conv(x, "conv1", {3, 2, 3, 3}, 1, 1), "bn1", 3))});
  h = tg.op("aten.max_pool2d.default", {T(h), Is({3, 3}), Is({2, 2}), Is({1, 1})});
  ValueId r = tg.op("aten.relu.default", {T(bn(conv(h, "c2", {4, 3, 3, 3}, 2, 1), "bn2", 4))});
  r = bn(conv(r, "c3", {4, 4, 3, 3}, 1, 1), "bn3", 4);
  ValueId down = bn(conv(h, "down", {4, 3, 1, 1}, 2, 0), "bnd", 4);
  ValueId y = tg.op("aten.relu.default", {T(tg.op("aten.add.Tensor", {T(r), T(down)}))});
  y = tg.op("aten.flatten.using_ints",
            {T(tg.op("aten.adaptive_avg_pool2d.default", {T(y), Is({1, 1})})), I(1)});
  ValueId fc = tg.weight("fc.weight", {3, 4}), fb = tg.weight("fc.bias", {3});
  tg.output(tg.op("aten.linear.default", {T(y), T(fc), T(fb)}));
  check_gradients(tg, PartitionStrategy::MinCut);
  check_gradients(tg, PartitionStrategy::Default);
}

TEST_CASE("autograd: both partitioners give the same gradients") {
  TestGraph tg;
  ValueId x = tg.input("x", {4, 6}), w = tg.weight("fc.weight", {5, 6});
  ValueId h = tg.op("aten.linear.default", {T(x), T(w)});
  ValueId gl = tg.op("aten.gelu.default", {T(h), KW("approximate", Arg::of_string("tanh"))});
  tg.output(tg.op("aten._softmax.default", {T(gl), I(-1), B(false)}));
  check_gradients(tg, PartitionStrategy::Default);
  check_gradients(tg, PartitionStrategy::MinCut);
}

TEST_CASE("autograd: repeated outputs, an input returned as is, and a value used twice") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4}), w = tg.weight("w", {4});
  ValueId y = tg.op("aten.mul.Tensor", {T(x), T(w)});
  ValueId z = tg.op("aten.mul.Tensor", {T(y), T(y)});
  tg.output(y);
  tg.output(y);
  tg.output(x);
  tg.output(z);
  check_gradients(tg, PartitionStrategy::MinCut);
  check_gradients(tg, PartitionStrategy::Default);
}

TEST_CASE("autograd: joint graph layout") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3});
  ValueId ids = tg.input_values("ids", DType::I64, {2}, {0, 1});
  ValueId w = tg.weight("w", {3});
  ValueId unused = tg.weight("unused", {2});
  ValueId buf = tg.weight("buf", {3}, -1, 1, InputKind::Buffer);
  (void)unused;
  ValueId y = tg.op("aten.mul.Tensor", {T(x), T(w)});
  tg.output(tg.op("aten.add.Tensor", {T(y), T(buf)}));
  tg.output(ids);
  JointGraph jg = build_joint_graph(tg.g);
  CHECK(jg.num_primals == 5);
  CHECK(jg.num_fw_outputs == 2);
  CHECK(jg.tangent_output_index == std::vector<size_t>{0}); // the int output has no tangent
  CHECK(jg.graph.inputs.size() == 6);
  CHECK(jg.graph.inputs[5].fqn == "tangents_1");
  CHECK(jg.grad_names == std::vector<std::string>{"grad.w", "grad.unused", "grad.input_0"});
  CHECK(jg.graph.outputs.size() == 5);
  // The unused parameter gets zeros of its shape.
  ValueId gz = jg.graph.outputs[3];
  CHECK(jg.graph.nodes[size_t(jg.graph.values[size_t(gz)].producer)].target ==
        "aten.zeros.default");
  CHECK(jg.graph.values[size_t(gz)].meta.sizes == std::vector<int64_t>{2});
}

TEST_CASE("autograd: unsupported cases are diagnosed with the node") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3});
  tg.output(tg.op("aten.dropout.default", {T(x), F(0.5), B(true)}));
  CHECK_THROWS_WITH_AS(build_joint_graph(tg.g), doctest::Contains("training mode"), Error);
  TestGraph t2;
  ValueId y = t2.input("y", {2, 3});
  ValueId yt = t2.op("aten.permute.default", {T(y), Is({1, 0})});
  t2.output(t2.op("aten.as_strided.default", {T(yt), Is({3}), Is({2})}));
  CHECK_THROWS_WITH_AS(build_joint_graph(t2.g), doctest::Contains("non-contiguous"), Error);
  TestGraph t5;
  ValueId u5 = t5.input("u", {2, 3});
  t5.output(t5.op("aten.as_strided.default", {T(u5), Is({4}), Is({2})}));
  CHECK_THROWS_WITH_AS(build_joint_graph(t5.g), doctest::Contains("reads outside its input"),
                       Error);
  TestGraph t3;
  ValueId z = t3.input("z", {1, 2, 4, 4}), w = t3.weight("w", {2, 3, 3, 3});
  t3.output(t3.op("aten.convolution.default", {T(z),
                                               T(w),
                                               {"", Arg::none()},
                                               Is({1, 1}),
                                               Is({0, 0}),
                                               Is({1, 1}),
                                               B(true),
                                               Is({0, 0}),
                                               I(1)}));
  CHECK_THROWS_WITH_AS(build_joint_graph(t3.g), doctest::Contains("transposed convolution"), Error);
  TestGraph t4;
  ValueId u = t4.input("u", {2, 4});
  auto ln = t4.ops("aten.native_layer_norm.default",
                   {T(u), Is({4}), {"", Arg::none()}, {"", Arg::none()}, F(1e-5)});
  t4.output(ln[2]); // rstd as an output: no rule for its gradient
  CHECK_THROWS_WITH_AS(build_joint_graph(t4.g), doctest::Contains("output 2"), Error);
}

// ---- Op families of issue 18 (derivatives.yaml) ----

TEST_CASE("autograd: sub.Scalar, rsub, remainder, fmod and div with rounding modes") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4}), y = tg.input("y", {4});
  tg.output(tg.op("aten.sub.Scalar", {T(x), F(1.5), F(2.0)}));
  tg.output(tg.op("aten.rsub.Scalar", {T(x), F(1.5), F(-3.0)}));
  tg.output(tg.op("aten.rsub.Tensor", {T(x), T(y), KW("alpha", Arg::of_float(0.5))}));
  tg.output(tg.op("aten.div.Tensor_mode", {T(x), T(y), KW("rounding_mode", Arg::none())}));
  tg.output(tg.op("aten.div.Scalar_mode", {T(x), F(4.0), KW("rounding_mode", Arg::none())}));
  check_gradients(tg);
}

TEST_CASE("autograd: remainder and fmod away from their jumps") {
  // Quotients stay inside (2, 3) and (-3, -2), where the rounded quotient is constant and the
  // derivative with respect to the divisor is -floor (remainder) or -trunc (fmod) of it.
  for (auto [lo, hi] : {std::pair{5.1, 5.9}, std::pair{-5.9, -5.1}}) {
    TestGraph tg;
    ValueId x = tg.input("x", {2, 3}, lo, hi), y = tg.input("y", {3}, 2.0, 2.3);
    tg.output(tg.op("aten.remainder.Tensor", {T(x), T(y)}));
    tg.output(tg.op("aten.fmod.Tensor", {T(x), T(y)}));
    tg.output(tg.op("aten.remainder.Scalar", {T(x), F(2.2)}));
    check_gradients(tg);
  }
}

TEST_CASE("autograd: div with a rounding mode has a zero gradient") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3}, 0.1, 0.9), y = tg.input("y", {3}, 2.0, 3.0);
  tg.output(
      tg.op("aten.div.Tensor_mode", {T(x), T(y), KW("rounding_mode", Arg::of_string("floor"))}));
  tg.output(
      tg.op("aten.div.Scalar_mode", {T(x), F(2.0), KW("rounding_mode", Arg::of_string("trunc"))}));
  check_gradients(tg);
}

TEST_CASE("autograd: trigonometric, hyperbolic, log/exp variants and rounding") {
  unary("aten.tan.default", {2, 3});
  unary("aten.atan.default", {2, 3}, -3, 3);
  unary("aten.sinh.default", {2, 3});
  unary("aten.cosh.default", {2, 3});
  unary("aten.asinh.default", {2, 3}, -3, 3);
  unary("aten.expm1.default", {2, 3});
  for (const char* op : {"aten.asin.default", "aten.acos.default", "aten.atanh.default"})
    unary(op, {2, 3}, -0.8, 0.8);
  unary("aten.acosh.default", {2, 3}, 1.3, 3);
  for (const char* op : {"aten.log2.default", "aten.log10.default", "aten.log1p.default"})
    unary(op, {2, 3}, 0.3, 2);
  // Rounding has a zero gradient (away from the jumps: values stay inside (0.1, 0.4)).
  for (const char* op :
       {"aten.floor.default", "aten.ceil.default", "aten.round.default", "aten.trunc.default"})
    unary(op, {2, 3}, 0.1, 0.4);
  binary("aten.atan2.default", {2, 3}, {3}, {}, 0.3, 1.5);
  binary("aten.atan2.default", {3}, {2, 3}, {}, -1.5, -0.3);
}

TEST_CASE("autograd: pow.Scalar and clamp.Tensor") {
  {
    TestGraph tg;
    ValueId x = tg.input("x", {2, 3});
    tg.output(tg.op("aten.pow.Scalar", {F(2.5), T(x)}));
    tg.output(tg.op("aten.pow.Scalar", {F(0.5), T(x)}));
    check_gradients(tg);
  }
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4}, -2, 2), lo = tg.input("lo", {4}, -1.5, -0.5),
          hi = tg.input("hi", {3, 1}, 0.5, 1.5);
  tg.output(tg.op("aten.clamp.Tensor", {T(x), T(lo), T(hi)}));
  tg.output(tg.op("aten.clamp.Tensor", {T(x), T(lo)}));
  tg.output(tg.op("aten.clamp.Tensor", {T(x), KW("max", Arg::of_tensor(hi))}));
  check_gradients(tg);
}

TEST_CASE("autograd: cumsum") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4, 2});
  tg.output(tg.op("aten.cumsum.default", {T(x), I(1)}));
  tg.output(tg.op("aten.cumsum.default", {T(x), I(-1)}));
  tg.output(tg.op("aten.cumsum.default", {T(x), I(0), KW("dtype", Arg::of_dtype(DType::F64))}));
  check_gradients(tg);
}

TEST_CASE("autograd: cumprod (zeros included) and logcumsumexp") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4, 2});
  tg.output(tg.op("aten.cumprod.default", {T(x), I(1)}));
  tg.output(tg.op("aten.cumprod.default", {T(x), I(-1)}));
  tg.output(tg.op("aten.logcumsumexp.default", {T(x), I(0)}));
  tg.output(tg.op("aten.logcumsumexp.default", {T(x), I(-2)}));
  // A zero in the scanned values: only the general formula gets the gradients before it right.
  ValueId z = tg.op("aten.mul.Tensor", {T(x), T(tg.op("aten.gt.Scalar", {T(x), F(-0.7)}))});
  tg.output(tg.op("aten.cumprod.default", {T(z), I(1)}));
  check_gradients(tg);
}

// Issue 18: the new reductions, sorting and indexing ops (random inputs have no ties).
TEST_CASE("autograd: var, std, var_mean, logsumexp and vector norms through decompositions") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  tg.output(tg.op("aten.var.correction", {T(x), Is({1}), KW("correction", Arg::of_int(0))}));
  tg.output(tg.op("aten.var.dim", {T(x), Is({0}), B(true), B(true)}));
  tg.output(tg.op("aten.std.correction", {T(x)}));
  tg.output(tg.op("aten.std.dim", {T(x), Is({-1}), B(false)}));
  auto vm = tg.ops("aten.var_mean.correction", {T(x), Is({0})});
  tg.output(vm[0]);
  tg.output(vm[1]);
  tg.output(tg.op("aten.logsumexp.default", {T(x), Is({-1})}));
  tg.output(tg.op("aten.linalg_vector_norm.default", {T(x)}));
  tg.output(tg.op("aten.linalg_vector_norm.default", {T(x), F(3.0), Is({0}), B(true)}));
  check_gradients(tg);
}

TEST_CASE("autograd: amin, max/min, max.dim, sort and topk route the gradient to the picks") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  tg.output(tg.op("aten.amin.default", {T(x), Is({1})}));
  tg.output(tg.op("aten.max.default", {T(x)}));
  tg.output(tg.op("aten.min.default", {T(x)}));
  tg.output(tg.ops("aten.max.dim", {T(x), I(1)})[0]);
  tg.output(tg.ops("aten.min.dim", {T(x), I(0), B(true)})[0]);
  tg.output(tg.ops("aten.sort.default", {T(x), I(0), B(true)})[0]);
  tg.output(tg.ops("aten.topk.default", {T(x), I(2)})[0]);
  check_gradients(tg);
}

TEST_CASE("autograd: prod (zeros included), scatter, scatter_reduce sum, index_put, masked_fill") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  ValueId src = tg.input("src", {2, 4});
  ValueId v = tg.input("v", {});
  ValueId idx = tg.input_values("idx", DType::I64, {2, 4}, {0, 1, 2, 0, 2, 0, 1, 1});
  ValueId rows = tg.input_values("rows", DType::I64, {2}, {2, 0});
  ValueId mask = tg.op("aten.gt.Scalar", {T(x), F(0.2)});
  tg.output(tg.op("aten.prod.default", {T(x)}));
  tg.output(tg.op("aten.prod.dim_int", {T(x), I(1), B(true)}));
  ValueId z = tg.op("aten.mul.Tensor", {T(x), T(tg.op("aten.gt.Scalar", {T(x), F(-0.7)}))});
  tg.output(tg.op("aten.prod.dim_int", {T(z), I(-1)}));
  tg.output(tg.op("aten.scatter.src", {T(x), I(0), T(idx), T(src)}));
  tg.output(tg.op("aten.scatter.value", {T(x), I(0), T(idx), F(1.5)}));
  tg.output(tg.op("aten.scatter_reduce.two",
                  {T(x), I(0), T(idx), T(src), CallArg{"", Arg::of_string("sum")}}));
  tg.output(tg.op("aten.scatter_reduce.two",
                  {T(x), I(0), T(idx), T(src), CallArg{"", Arg::of_string("sum")},
                   KW("include_self", Arg::of_bool(false))}));
  tg.output(tg.op("aten.index_put.default", {T(x), CallArg{"", Arg::of_tensors({rows})}, T(src)}));
  tg.output(tg.op("aten.index_put.default",
                  {T(x), CallArg{"", Arg::of_tensors({rows})}, T(src), B(true)}));
  tg.output(tg.op("aten.masked_fill.Tensor", {T(x), T(mask), T(v)}));
  check_gradients(tg);
}

TEST_CASE("autograd: cummax/cummin, index_add, index_fill, nansum and std_mean") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  ValueId s = tg.input("s", {3, 2});
  ValueId cols = tg.input_values("cols", DType::I64, {2}, {3, 3});
  tg.output(tg.ops("aten.cummax.default", {T(x), I(1)})[0]);
  tg.output(tg.ops("aten.cummin.default", {T(x), I(0)})[0]);
  tg.output(tg.op("aten.index_add.default",
                  {T(x), I(1), T(cols), T(s), KW("alpha", Arg::of_float(-2.0))}));
  tg.output(tg.op("aten.index_fill.int_Scalar", {T(x), I(1), T(cols), F(4.0)}));
  tg.output(tg.op("aten.nansum.default", {T(x), Is({0})}));
  auto sm = tg.ops("aten.std_mean.correction", {T(x), Is({1})});
  tg.output(sm[0]);
  tg.output(sm[1]);
  check_gradients(tg);
}

TEST_CASE("autograd: avg pooling, upsampling and mode padding through their separable form") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 5, 7});
  ValueId x3 = tg.input("x3", {2, 3, 6});
  ValueId x5 = tg.input("x5", {1, 2, 3, 4, 5});
  CallArg none{"", Arg::none()};
  tg.output(tg.op("aten.avg_pool2d.default",
                  {T(x), Is({3, 2}), Is({2, 2}), Is({1, 1}), B(true), B(false)}));
  tg.output(tg.op("aten.avg_pool2d.default", {T(x), Is({3, 3}), Is({2, 3}), Is({1, 0}), B(true)}));
  tg.output(tg.op("aten.avg_pool2d.default",
                  {T(x), Is({2, 2}), Is({}), Is({0, 0}), B(true), B(true), I(3)}));
  tg.output(
      tg.op("aten.avg_pool1d.default", {T(x3), Is({3}), Is({2}), Is({1}), B(true), B(false)}));
  tg.output(tg.op("aten.avg_pool3d.default",
                  {T(x5), Is({2, 3, 3}), Is({2, 2, 2}), Is({1, 1, 1}), B(true), B(false)}));
  tg.output(tg.op("aten.upsample_bilinear2d.default", {T(x), Is({8, 11}), B(false)}));
  tg.output(tg.op("aten.upsample_bilinear2d.vec", {T(x), Is({9, 4}), B(true), none}));
  tg.output(tg.op("aten.upsample_nearest2d.vec", {T(x), none, {"", Arg::of_floats({2.0, 1.5})}}));
  tg.output(tg.op("aten._upsample_nearest_exact2d.default", {T(x), Is({3, 10})}));
  tg.output(tg.op("aten.reflection_pad2d.default", {T(x), Is({2, 1, 3, 0})}));
  tg.output(tg.op("aten.replication_pad1d.default", {T(x3), Is({0, 4})}));
  tg.output(tg.op("aten.reflection_pad3d.default", {T(x5), Is({1, 1, 2, 0, 1, 2})}));
  tg.output(tg.op("aten.replication_pad3d.default", {T(x5), Is({1, 2, 0, 1, 2, 2})}));
  check_gradients(tg);
}

TEST_CASE("autograd: linear 1-D/3-D and bicubic upsampling through their separable form") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 5, 7});
  ValueId x3 = tg.input("x3", {2, 3, 6});
  ValueId x5 = tg.input("x5", {1, 2, 3, 4, 5});
  CallArg none{"", Arg::none()};
  tg.output(tg.op("aten.upsample_linear1d.default", {T(x3), Is({11}), B(false)}));
  tg.output(
      tg.op("aten.upsample_linear1d.vec", {T(x3), none, B(true), {"", Arg::of_floats({1.7})}}));
  tg.output(tg.op("aten.upsample_trilinear3d.default", {T(x5), Is({5, 3, 9}), B(false)}));
  tg.output(tg.op("aten.upsample_trilinear3d.vec", {T(x5), Is({4, 7, 6}), B(true), none}));
  tg.output(tg.op("aten.upsample_bicubic2d.default", {T(x), Is({9, 4}), B(false)}));
  tg.output(tg.op("aten.upsample_bicubic2d.vec",
                  {T(x), none, B(true), {"", Arg::of_floats({1.5, 2.0})}}));
  check_gradients(tg);
}

TEST_CASE("autograd: grid_sampler_2d in every mode, padding and alignment") {
  for (int64_t mode : {0, 1, 2})
    for (int64_t pad : {0, 1, 2})
      for (bool align : {false, true}) {
        INFO("mode " << mode << " padding " << pad << " align_corners " << align);
        TestGraph tg;
        ValueId x = tg.input("x", {2, 3, 4, 5});
        ValueId g = tg.input("g", {2, 3, 6, 2}, -1.3, 1.3);
        tg.output(tg.op("aten.grid_sampler_2d.default", {T(x), T(g), I(mode), I(pad), B(align)}));
        check_gradients(tg);
      }
}

TEST_CASE("autograd: grid_sampler_3d in every mode, padding and alignment") {
  for (int64_t mode : {0, 1})
    for (int64_t pad : {0, 1, 2})
      for (bool align : {false, true}) {
        INFO("mode " << mode << " padding " << pad << " align_corners " << align);
        TestGraph tg;
        ValueId x = tg.input("x", {2, 2, 3, 4, 3});
        ValueId g = tg.input("g", {2, 2, 3, 2, 3}, -1.3, 1.3);
        tg.output(tg.op("aten.grid_sampler_3d.default", {T(x), T(g), I(mode), I(pad), B(align)}));
        check_gradients(tg);
      }
}

TEST_CASE("autograd: embedding_bag sum (per_sample_weights), mean and max (padding_idx)") {
  for (int64_t mode : {0, 1, 2}) {
    INFO("mode " << mode);
    TestGraph tg;
    ValueId w = tg.weight("bag.weight", {6, 3});
    ValueId ids = tg.input_values("ids", DType::I64, {7}, {1, 5, 1, 0, 3, 4, 2});
    // Bags [0, 3), [3, 3) (empty), [3, 7); include_last_offset drops the final 7.
    ValueId offs = tg.input_values("offs", DType::I64, {4}, {0, 3, 3, 7});
    CallArg none{"", Arg::none()};
    CallArg psw = none;
    if (mode == 0) psw = T(tg.input("psw", {7}));
    std::vector<ValueId> r =
        tg.ops("aten._embedding_bag.default", {T(w), T(ids), T(offs), B(false), I(mode), B(false),
                                               psw, B(true), I(mode == 2 ? 4 : -1)});
    tg.output(r[0]);
    check_gradients(tg);
  }
}

TEST_CASE("autograd: max_unpool2d and max_unpool3d route the gradient from the picks") {
  TestGraph tg;
  ValueId x = tg.input("x", {1, 2, 2, 2});
  ValueId i = tg.input_values("i", DType::I64, {1, 2, 2, 2}, {0, 3, 9, 11, 1, 2, 6, 7});
  ValueId x3 = tg.input("x3", {2, 1, 2, 1});
  ValueId i3 = tg.input_values("i3", DType::I64, {2, 1, 2, 1}, {0, 5, 3, 4});
  tg.output(tg.op("aten.max_unpool2d.default", {T(x), T(i), Is({3, 4})}));
  tg.output(tg.op("aten.max_unpool3d.default",
                  {T(x3), T(i3), Is({2, 1, 3}), Is({1, 1, 1}), Is({0, 0, 0})}));
  check_gradients(tg);
}

TEST_CASE("autograd: multi_margin_loss, multilabel_margin_loss and antialiased upsampling") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  ValueId y = tg.input_values("y", DType::I64, {3}, {2, 0, 3});
  ValueId wt = tg.input("wt", {4}, 0.5, 2);
  ValueId t = tg.input_values("t", DType::I64, {3, 4}, {3, 0, -1, 1, 1, -1, 2, 2, 0, 1, 2, 3});
  ValueId img = tg.input("img", {1, 2, 5, 7});
  ValueId seq = tg.input("seq", {2, 3, 4});
  CallArg none{"", Arg::none()};
  tg.output(tg.op("aten.multi_margin_loss.default", {T(x), T(y), I(1), F(0.7), none, I(1)}));
  tg.output(tg.op("aten.multi_margin_loss.default", {T(x), T(y), I(2), F(1.0), T(wt), I(0)}));
  tg.output(tg.op("aten.multilabel_margin_loss.default", {T(x), T(t), I(0)}));
  tg.output(tg.op("aten._upsample_bilinear2d_aa.default", {T(img), Is({3, 11}), B(false)}));
  tg.output(tg.op("aten._upsample_nearest_exact1d.default", {T(seq), Is({7})}));
  check_gradients(tg);
}

TEST_CASE("autograd: adaptive max pooling routes the gradient to the picks") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 5, 7});
  ValueId x3 = tg.input("x3", {2, 3, 7});
  ValueId x5 = tg.input("x5", {1, 2, 3, 4, 5});
  tg.output(tg.ops("aten.adaptive_max_pool2d.default", {T(x), Is({3, 4})})[0]);
  tg.output(tg.ops("aten.adaptive_max_pool1d.default", {T(x3), Is({3})})[0]);
  tg.output(tg.ops("aten.adaptive_max_pool3d.default", {T(x5), Is({2, 3, 2})})[0]);
  check_gradients(tg);
}

TEST_CASE("autograd: _cdist_forward for p = 0, 1, 1.5, 2, 3 and inf, batch dims broadcast") {
  for (double p : {0.0, 1.0, 1.5, 2.0, 3.0, double(INFINITY)}) {
    INFO("p " << p);
    TestGraph tg;
    ValueId a = tg.input("a", {3, 1, 4, 5});
    ValueId b = tg.input("b", {2, 6, 5});
    CallArg none{"", Arg::none()};
    tg.output(tg.op("aten._cdist_forward.default", {T(a), T(b), {"", Arg::of_float(p)}, none}));
    check_gradients(tg);
  }
}

TEST_CASE("autograd: im2col, col2im and _pdist_forward") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 5, 7});
  ValueId cols = tg.input("cols", {2, 8, 9});
  ValueId pts = tg.input("pts", {5, 3});
  tg.output(tg.op("aten.im2col.default", {T(x), Is({2, 3}), Is({1, 2}), Is({1, 0}), Is({2, 1})}));
  tg.output(tg.op("aten.col2im.default",
                  {T(cols), Is({4, 5}), Is({2, 2}), Is({1, 1}), Is({0, 1}), Is({1, 2})}));
  tg.output(tg.op("aten._pdist_forward.default", {T(pts), {"", Arg::of_float(2.0)}}));
  tg.output(tg.op("aten._pdist_forward.default", {T(pts), {"", Arg::of_float(1.5)}}));
  check_gradients(tg);
}

TEST_CASE("autograd: flip, repeat, tril/triu, t and pixel (un)shuffle") {
  TestGraph tg;
  ValueId x = tg.input("x", {4, 5});
  ValueId y = tg.input("y", {1, 8, 3, 5});
  tg.output(tg.op("aten.flip.default", {T(x), Is({0, -1})}));
  tg.output(tg.op("aten.repeat.default", {T(x), Is({2, 1, 3})}));
  tg.output(tg.op("aten.tril.default", {T(x), I(1)}));
  tg.output(tg.op("aten.triu.default", {T(x), I(-1)}));
  tg.output(tg.op("aten.mul.Tensor",
                  {T(tg.op("aten.t.default", {T(x)})), T(tg.op("aten.t.default", {T(x)}))}));
  ValueId ps = tg.op("aten.pixel_shuffle.default", {T(y), I(2)});
  tg.output(tg.op("aten.mul.Tensor", {T(ps), T(ps)}));
  tg.output(tg.op("aten.pixel_unshuffle.default", {T(y), I(1)}));
  check_gradients(tg);
}

TEST_CASE("autograd: activations, single-bound clamps, prelu and glu through decompositions") {
  auto with = [](std::string_view target, std::vector<CallArg> extra, double lo = -3,
                 double hi = 3) {
    INFO(target);
    TestGraph tg;
    ValueId x = tg.input("x", {2, 3, 4}, lo, hi);
    std::vector<CallArg> call = {T(x)};
    call.insert(call.end(), extra.begin(), extra.end());
    tg.output(tg.op(target, call));
    check_gradients(tg);
  };
  with("aten.hardtanh.default", {F(-0.5), F(0.75)});
  with("aten.leaky_relu.default", {F(0.2)});
  with("aten.elu.default", {F(1.5), F(1.0507), F(2.0)});
  with("aten.softplus.default", {F(2.0), F(3.0)});
  with("aten.softplus.default", {F(1.0), F(20.0)}, 25, 40); // above the threshold: x
  with("aten.mish.default", {});
  with("aten.clamp_min.default", {F(0.25)});
  with("aten.clamp_max.default", {F(-0.25)});
  with("aten.glu.default", {I(2)});
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4}, -2, 2);
  ValueId w = tg.weight("prelu.weight", {3}), w1 = tg.weight("prelu1.weight", {1});
  tg.output(tg.op("aten.prelu.default", {T(x), T(w)}));
  tg.output(tg.op("aten.prelu.default", {T(x), T(w1)}));
  check_gradients(tg);
}

TEST_CASE("autograd: group, instance and batch-statistics norms through decompositions") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 4, 3, 2}, -2, 2);
  ValueId w = tg.weight("gn.weight", {4}), b = tg.weight("gn.bias", {4});
  tg.output(tg.op("aten.group_norm.default", {T(x), I(2), T(w), T(b), F(1e-5), B(true)}));
  auto ngn = tg.ops("aten.native_group_norm.default",
                    {T(x), T(w), {"", Arg::none()}, I(2), I(4), I(6), I(2), F(1e-5)});
  tg.output(ngn[0]);
  tg.output(tg.op("aten.instance_norm.default", {T(x),
                                                 T(w),
                                                 T(b),
                                                 {"", Arg::none()},
                                                 {"", Arg::none()},
                                                 B(true),
                                                 F(0.1),
                                                 F(1e-5),
                                                 B(false)}));
  auto bn = tg.ops("aten._native_batch_norm_legit.no_stats",
                   {T(x), T(w), T(b), B(true), F(0.1), F(1e-5)});
  tg.output(bn[0]);
  check_gradients(tg);
}

TEST_CASE("autograd: in-place ops on intermediates are differentiated as their functional ops") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4}, -2, 2), y = tg.input("y", {3, 4});
  ValueId t = tg.op("aten.mul.Scalar", {T(x), F(3.0)});
  tg.op("aten.hardtanh_.default", {T(t), F(-1.0), F(1.0)});
  ValueId u = tg.op("aten.add_.Tensor", {T(t), T(y)});
  tg.output(tg.op("aten.mul.Tensor", {T(t), T(u)})); // both names of the mutated storage
  ValueId q = tg.op("aten.neg.default", {T(x)});
  tg.op("aten.leaky_relu_.default", {T(q), F(0.5)});
  tg.output(q);
  check_gradients(tg);
}

TEST_CASE("autograd: in-place ops on views whose base is dead after the write") {
  // ConvNeXt: a permuted view of an intermediate gets `+=`, and a view is made of the result;
  // a classifier's in-place dropout (eval: identity) and relu_ on a flattened view.
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 4}, -2, 2), y = tg.input("y", {2, 4, 3});
  ValueId t = tg.op("aten.mul.Scalar", {T(x), F(2.0)});
  ValueId p = tg.op("aten.permute.default", {T(t), Is({0, 2, 1})});
  ValueId u = tg.op("aten.add_.Tensor", {T(p), T(y)});
  ValueId v = tg.op("aten.permute.default", {T(u), Is({0, 2, 1})});
  tg.output(tg.op("aten.mul.Tensor", {T(v), T(x)}));
  ValueId f = tg.op("aten.view.default", {T(tg.op("aten.neg.default", {T(x)})), Is({2, 12})});
  ValueId d = tg.op("aten.dropout_.default", {T(f), F(0.2), B(false)});
  tg.op("aten.relu_.default", {T(d)});
  tg.output(tg.op("aten.mul.Tensor", {T(d), T(d)}));
  check_gradients(tg);
}

TEST_CASE("autograd: an in-place write into a view whose base is read later is refused") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3}, -2, 2), y = tg.input("y", {3, 2});
  ValueId t = tg.op("aten.mul.Scalar", {T(x), F(2.0)});
  ValueId p = tg.op("aten.permute.default", {T(t), Is({1, 0})});
  tg.op("aten.add_.Tensor", {T(p), T(y)});
  tg.output(tg.op("aten.mul.Tensor", {T(t), T(x)})); // reads the base: needs the write-back
  CHECK_THROWS_WITH_AS(aot_autograd(tg.g, PartitionStrategy::MinCut),
                       doctest::Contains("writes in place into a view whose base is read"), Error);
}

TEST_CASE("autograd: 3-D convolution, conv1d/conv3d (batched and unbatched)") {
  TestGraph tg;
  ValueId x = tg.input("x", {2, 2, 4, 5, 4}), w = tg.weight("conv.weight", {3, 2, 2, 3, 2});
  ValueId b = tg.weight("conv.bias", {3});
  ValueId xu = tg.input("xu", {2, 3, 4, 3}), x1 = tg.input("x1", {3, 7});
  ValueId w1 = tg.weight("conv1.weight", {4, 3, 3});
  CallArg none{"", Arg::none()};
  tg.output(tg.op("aten.convolution.default", {T(x), T(w), T(b), Is({1, 2, 1}), Is({1, 0, 1}),
                                               Is({1, 1, 2}), B(false), Is({0, 0, 0}), I(1)}));
  tg.output(tg.op("aten.conv3d.default", {T(xu), T(w), none, Is({2}), Is({1}), Is({1}), I(1)}));
  tg.output(tg.op("aten.conv1d.default", {T(x1), T(w1), none, Is({1}), Is({1}), Is({2}), I(1)}));
  check_gradients(tg);
}

TEST_CASE("autograd: max_pool3d, adaptive average pooling 1-D/2-D/3-D, diagonal and exp2") {
  TestGraph tg;
  ValueId x5 = tg.input("x5", {1, 2, 4, 5, 3});
  ValueId x3 = tg.input("x3", {2, 3, 7});
  ValueId x4 = tg.input("x4", {2, 5, 4, 3});
  auto mp = tg.ops("aten.max_pool3d_with_indices.default",
                   {T(x5), Is({2, 3, 2}), Is({2, 1, 1}), Is({1, 1, 0})});
  tg.output(mp[0]);
  tg.output(tg.op("aten.max_pool3d.default", {T(x5), Is({2}), Is({}), Is({0}), Is({1}), B(true)}));
  tg.output(tg.op("aten.adaptive_avg_pool1d.default", {T(x3), Is({3})}));
  tg.output(tg.op("aten.adaptive_avg_pool3d.default", {T(x5), Is({3, 2, 2})}));
  tg.output(tg.op("aten._adaptive_avg_pool3d.default", {T(x5), Is({1, 1, 1})}));
  tg.output(tg.op("aten.diagonal.default", {T(x4), I(1), I(-1), I(1)}));
  tg.output(tg.op("aten.diagonal.default", {T(x4), I(-2), I(2), I(-3)}));
  tg.output(tg.op("aten.exp2.default", {T(x3)}));
  check_gradients(tg);
}

TEST_CASE("autograd: special functions (lgamma, digamma, polygamma, erfinv, i0, i1)") {
  // Both sides of the reflections at 0.5, away from the poles at 0, -1, ...
  unary("aten.lgamma.default", {2, 3}, 0.2, 4.0);
  unary("aten.lgamma.default", {5}, -0.9, -0.1);
  unary("aten.digamma.default", {2, 3}, 0.2, 4.0);
  unary("aten.digamma.default", {5}, -0.9, -0.1);
  unary("aten.erfinv.default", {2, 3}, -0.9, 0.9);
  unary("aten.i0.default", {2, 3}, -3.0, 3.0);
  unary("aten.special_i1.default", {2, 3}, -3.0, 3.0);
  for (int64_t n : {0, 1, 2, 3}) {
    INFO("polygamma n=" << n);
    TestGraph tg;
    ValueId x = tg.input("x", {2, 3}, 0.3, 3.0);
    tg.output(tg.op("aten.polygamma.default", {I(n), T(x)}));
    check_gradients(tg);
  }
}

TEST_CASE("autograd: native_dropout routes the gradient through its mask, scaled") {
  for (bool train : {true, false}) {
    INFO("train " << train);
    TestGraph tg;
    ValueId x = tg.input("x", {4, 8});
    std::vector<ValueId> o = tg.ops("aten.native_dropout.default", {T(x), F(0.4), B(train)});
    tg.output(o[0]);
    check_gradients(tg);
  }
  TestGraph tg;
  ValueId gr = tg.input("g", {3, 5});
  ValueId m = tg.op("aten.gt.Scalar", {T(tg.input("y", {3, 5})), F(0.0)});
  tg.output(tg.op("aten.native_dropout_backward.default", {T(gr), T(m), F(1.25)}));
  check_gradients(tg);
}

TEST_CASE("autograd: masked_scatter sends gradients to self off the mask, to source on it") {
  for (bool broadcast : {false, true}) {
    INFO("broadcast mask " << broadcast);
    TestGraph tg;
    ValueId x = tg.input("x", {3, 4});
    ValueId m =
        broadcast ? tg.input_values("m", DType::Bool, {4}, {1, 0, 1, 1})
                  : tg.input_values("m", DType::Bool, {3, 4}, {1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1});
    ValueId s = tg.input("s", {2, 7}); // more elements than the mask's 6 or 9 ones
    tg.output(tg.op("aten.masked_scatter.default", {T(x), T(m), T(s)}));
    check_gradients(tg);
  }
}

TEST_CASE("autograd: the math family of issue 18 (pointwise and special functions)") {
  unary("aten.erfc.default", {2, 3}, -2.0, 2.0);
  unary("aten.sinc.default", {2, 3}, -2.0, 2.0);
  unary("aten.frac.default", {2, 3}, 0.1, 0.9);
  unary("aten.deg2rad.default", {2, 3});
  unary("aten.rad2deg.default", {2, 3});
  unary("aten.sgn.default", {2, 3});
  unary("aten.angle.default", {2, 3});
  unary("aten.positive.default", {2, 3});
  unary("aten.conj_physical.default", {2, 3});
  unary("aten.resolve_conj.default", {2, 3});
  unary("aten.resolve_neg.default", {2, 3});
  unary("aten.real.default", {2, 3});
  unary("aten.nan_to_num.default", {2, 3});
  unary("aten.special_entr.default", {2, 3}, 0.1, 3.0);
  unary("aten.special_ndtr.default", {2, 3}, -3.0, 3.0);
  unary("aten.special_ndtri.default", {2, 3}, 0.05, 0.95);
  unary("aten.special_log_ndtr.default", {2, 3}, -4.0, 3.0);
  unary("aten.special_erfcx.default", {2, 3}, -2.0, 5.0);
  unary("aten.special_i0e.default", {2, 3}, -4.0, 4.0);
  unary("aten.special_i1e.default", {2, 3}, -4.0, 4.0);
  binary("aten.copysign.Tensor", {2, 3}, {3});
  binary("aten.fmax.default", {2, 3}, {3});
  binary("aten.fmin.default", {2, 3}, {2, 1});
  binary("aten.hypot.default", {2, 3}, {3}, {}, 0.5, 2.0);
  binary("aten.ldexp.Tensor", {2, 3}, {3});
  binary("aten.logaddexp.default", {2, 3}, {3}, {}, -3.0, 3.0);
  binary("aten.logaddexp2.default", {2, 3}, {3}, {}, -3.0, 3.0);
  binary("aten.xlogy.Tensor", {2, 3}, {3}, {}, 0.2, 2.0);
  binary("aten.special_xlog1py.default", {2, 3}, {3}, {}, 0.2, 2.0);
  binary("aten.float_power.Tensor_Tensor", {2, 3}, {3}, {}, 0.5, 2.0);
  {
    TestGraph tg;
    ValueId x = tg.input("x", {2, 3}, 1.2, 3.0);
    tg.output(tg.op("aten.mvlgamma.default", {T(x), I(3)}));
    tg.output(tg.op("aten.special_polygamma.default", {I(2), T(x)}));
    tg.output(tg.op("aten.float_power.Tensor_Scalar", {T(x), F(1.5)}));
    tg.output(tg.op("aten.float_power.Scalar", {F(2.5), T(x)}));
    check_gradients(tg);
  }
  // igamma, igammac, zeta: gradients in the second argument only (as PyTorch).
  for (const char* op :
       {"aten.igamma.default", "aten.igammac.default", "aten.special_zeta.default"}) {
    INFO(op);
    TestGraph tg;
    ValueId x = tg.input("x", {2, 3}, 0.5, 5.0);
    // a = 2.5 everywhere, from ones_like (no gradient flows into a).
    ValueId a = tg.op("aten.add.Scalar", {T(tg.op("aten.ones_like.default", {T(x)})), F(1.5)});
    tg.output(tg.op(op, {T(a), T(x)}));
    check_gradients(tg);
  }
}

TEST_CASE("autograd: the nn activations of issue 18 through their decompositions") {
  for (std::vector<int64_t> s : {std::vector<int64_t>{7}, std::vector<int64_t>{2, 3, 4}}) {
    for (const char* op : {"aten.relu6.default", "aten.selu.default", "aten.celu.default",
                           "aten.log_sigmoid.default"})
      unary(op, s, -8, 8);
    unary("aten.logit.default", s, 0.05, 0.95);
  }
  auto with = [](std::string_view target, std::vector<CallArg> extra, double lo, double hi) {
    INFO(target);
    TestGraph tg;
    ValueId x = tg.input("x", {3, 5}, lo, hi);
    std::vector<CallArg> call = {T(x)};
    call.insert(call.end(), extra.begin(), extra.end());
    tg.output(tg.op(target, call));
    check_gradients(tg);
  };
  with("aten.celu.default", {F(0.6)}, -3, 3);
  with("aten.logit.default", {F(0.2)}, 0.3, 0.7);
  with("aten.hardshrink.default", {F(0.25)}, -2, 2);
  with("aten.softshrink.default", {F(0.3)}, -2, 2);
  with("aten.threshold.default", {F(0.1), F(-2.0)}, -2, 2);
}

TEST_CASE("autograd: training batch norm (functional forms), rms_norm and _safe_softmax") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 2, 4}, -2, 2);
  ValueId w = tg.weight("bn.weight", {2}), b = tg.weight("bn.bias", {2});
  ValueId rm = tg.weight("bn.running_mean", {2}, -1, 1, InputKind::Buffer);
  ValueId rv = tg.weight("bn.running_var", {2}, 0.5, 2, InputKind::Buffer);
  auto bn = tg.ops("aten._native_batch_norm_legit_functional.default",
                   {T(x), T(w), T(b), T(rm), T(rv), B(true), F(0.1), F(1e-5)});
  tg.output(bn[0]);
  tg.output(bn[1]);
  tg.output(bn[2]);
  auto bu = tg.ops("aten._batch_norm_with_update_functional.default",
                   {T(x), {"", Arg::none()}, T(b), T(rm), T(rv), F(0.3), F(1e-3)});
  tg.output(bu[0]);
  auto nb =
      tg.ops("aten.native_batch_norm.default",
             {T(x), T(w), T(b), {"", Arg::none()}, {"", Arg::none()}, B(true), F(0.1), F(1e-5)});
  tg.output(nb[0]);
  ValueId w4 = tg.weight("rms.weight", {4});
  tg.output(tg.op("aten.rms_norm.default", {T(x), Is({4}), T(w4), F(1e-6)}));
  tg.output(tg.op("aten.rms_norm.default", {T(x), Is({2, 4})}));
  tg.output(tg.op("aten._safe_softmax.default", {T(x), I(1)}));
  check_gradients(tg);
}

namespace {
// A float64 input of well-conditioned square matrices: random entries plus 4 on the diagonal.
ValueId well_conditioned(TestGraph& tg, const std::string& name, std::vector<int64_t> sizes) {
  const int64_t n = sizes.back();
  std::vector<double> v = tg.random_values(TestGraph::meta(DType::F64, sizes).numel(), -1, 1);
  for (size_t i = 0; i < v.size(); ++i)
    if (int64_t(i) % (n * n) / n == int64_t(i) % n) v[i] += 4;
  return tg.input_values(name, DType::F64, sizes, v);
}
} // namespace

TEST_CASE("autograd: cholesky and triangular solves") {
  TestGraph tg;
  // A = X X^T is positive-definite for the nonsingular X.
  ValueId x = well_conditioned(tg, "x", {3, 3});
  ValueId spd =
      tg.op("aten.mm.default", {T(x), T(tg.op("aten.permute.default", {T(x), Is({1, 0})}))});
  tg.output(tg.ops("aten.linalg_cholesky_ex.default", {T(spd)})[0]);
  tg.output(
      tg.ops("aten.linalg_cholesky_ex.default", {T(spd), KW("upper", Arg::of_bool(true))})[0]);
  ValueId t = well_conditioned(tg, "t", {3, 3}), rhs = tg.input("rhs", {3, 2});
  ValueId rrhs = tg.input("rrhs", {2, 3});
  tg.output(tg.op("aten.linalg_solve_triangular.default",
                  {T(t), T(rhs), KW("upper", Arg::of_bool(true))}));
  tg.output(tg.op("aten.linalg_solve_triangular.default",
                  {T(t), T(rrhs), KW("upper", Arg::of_bool(false)), KW("left", Arg::of_bool(false)),
                   KW("unitriangular", Arg::of_bool(true))}));
  auto ts = tg.ops("aten.triangular_solve.default", {T(rhs), T(t), B(false), B(true), B(false)});
  tg.output(ts[0]);
  tg.output(ts[1]);
  check_gradients(tg);
}

TEST_CASE("autograd: inverse, determinants and solves") {
  TestGraph tg;
  ValueId a = well_conditioned(tg, "a", {2, 3, 3}), b = tg.input("b", {2, 3, 2});
  ValueId v = tg.input("v", {2, 3});
  tg.output(tg.ops("aten.linalg_inv_ex.default", {T(a)})[0]);
  tg.output(tg.ops("aten._linalg_det.default", {T(a)})[0]);
  tg.output(tg.ops("aten._linalg_slogdet.default", {T(a)})[1]);
  tg.output(tg.ops("aten._linalg_solve_ex.default", {T(a), T(b)})[0]);
  tg.output(tg.ops("aten._linalg_solve_ex.default", {T(a), T(v)})[0]);
  tg.output(tg.ops("aten._linalg_solve_ex.default",
                   {T(a), T(tg.input("r", {2, 2, 3})), KW("left", Arg::of_bool(false))})[0]);
  check_gradients(tg);
}

TEST_CASE("autograd: tensor and selection ops of the single-op corpus (decompositions)") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4}, -2, 2);
  ValueId y = tg.input("y", {3, 2}, -2, 2);
  tg.output(tg.op("aten.renorm.default", {T(x), I(2), I(0), F(1.0)}));
  tg.output(tg.op("aten.cumulative_trapezoid.x", {T(x), T(tg.input("t", {4}, 0, 3))}));
  tg.output(tg.op("aten.cumulative_trapezoid.dx",
                  {T(x), KW("dx", Arg::of_float(0.5)), KW("dim", Arg::of_int(0))}));
  for (ValueId g : tg.ops("aten.gradient.scalarint", {T(x), KW("edge_order", Arg::of_int(2))}))
    tg.output(g);
  tg.output(tg.op("aten._chunk_cat.default", {{"", Arg::of_tensors({x, y})}, I(1), I(3)}));
  tg.output(tg.op("aten.fft_fftshift.default", {T(x)}));
  tg.output(tg.op("aten.fft_ifftshift.default", {T(x), Is({1})}));
  tg.output(tg.op("aten.combinations.default", {T(tg.input("v", {4}, -2, 2)), I(2)}));
  tg.output(tg.ops("aten.mode.default", {T(x), I(1)})[0]);
  check_gradients(tg);
}

TEST_CASE("autograd: a convolution's gradients are one convolution_backward node") {
  // As PyTorch's derivative: decompose() expands it, or keeps it for cuDNN.
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 6, 6}), w = tg.weight("conv.weight", {4, 3, 3, 3});
  ValueId b = tg.weight("conv.bias", {4});
  tg.output(tg.op("aten.conv2d.default", {T(x), T(w), T(b), Is({2, 2}), Is({1, 1})}));
  JointGraph jg = build_joint_graph(tg.g);
  std::vector<const Node*> found;
  for (const Node& n : jg.graph.nodes)
    if (n.target == "aten.convolution_backward.default") found.push_back(&n);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->arg("output_mask").bools == std::vector<bool>{true, true, true});
  CHECK(found[0]->arg("stride").ints == std::vector<int64_t>{2, 2});
  CHECK_FALSE(cudnn_conv_backward(jg.graph, *found[0])); // float64: never cuDNN's
  check_gradients(tg);
}

TEST_CASE("autograd: bmm of a matrix expanded over the batch differentiates as one mm") {
  // The weight's gradient is one mm over all rows, not a batched product summed over the batch.
  TestGraph tg;
  ValueId x = tg.input("x", {3, 5, 4}), w = tg.weight("w", {6, 4});
  ValueId a = tg.op("aten.permute.default", {T(x), Is({1, 0, 2})});
  ValueId wt = tg.op("aten.permute.default", {T(w), Is({1, 0})});
  ValueId b = tg.op("aten.view.default",
                    {T(tg.op("aten.expand.default", {T(wt), Is({5, 4, 6})})), Is({5, 4, 6})});
  tg.output(tg.op("aten.bmm.default", {T(a), T(b)}));
  JointGraph jg = build_joint_graph(tg.g);
  for (const Node& n : jg.graph.nodes) {
    INFO(n.name);
    CHECK(n.target != "aten.bmm.default");
  }
  check_gradients(tg);
}
