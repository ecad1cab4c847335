// Composite ops (frontend/composite.h): ops declared with a decomposition only take their meta
// function and eager kernel from it; views stay views, argument errors name the node, and
// their gradients (through the decomposition) match finite differences.
#include "aot_testing.h"

#include "frontend/composite.h"
#include "frontend/diag.h"
#include "frontend/meta.h"
#include "passes/decompose.h"
#include "runtime/kernels.h"

using namespace fxc;
using namespace fxc::testing;

TEST_CASE("composite: unfold is a view with PyTorch's sizes and strides, and its values") {
  CHECK(is_composite("aten.unfold.default"));
  CHECK_FALSE(is_composite("aten.add.Tensor"));
  TestGraph tg;
  ValueId x = tg.input("x", {2, 3, 5});
  ValueId u = tg.op("aten.unfold.default", {T(x), I(2), I(2), I(2)});
  const TensorMeta& m = tg.g.values[size_t(u)].meta;
  CHECK(m.sizes == std::vector<int64_t>{2, 3, 2, 2});
  CHECK(m.strides == std::vector<int64_t>{15, 5, 2, 1});
  ValueId t = tg.op("aten.mT.default", {T(x)});
  CHECK(tg.g.values[size_t(t)].meta.strides == std::vector<int64_t>{15, 1, 5});
  tg.output(u);
  std::vector<Tensor> out = interpret(tg.g, tg.inputs);
  REQUIRE(out.size() == 1);
  std::vector<double> xs = tg.inputs[0].to_vector(), us = out[0].to_vector();
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t w = 0; w < 2; ++w)
        for (int64_t k = 0; k < 2; ++k)
          CHECK(us[size_t(((a * 3 + b) * 2 + w) * 2 + k)] ==
                xs[size_t((a * 3 + b) * 5 + w * 2 + k)]);
}

TEST_CASE("composite: list results, copies and integer results") {
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<ValueId> parts = tg.ops("aten.unsafe_split.Tensor", {T(x), I(2), I(1)});
  REQUIRE(parts.size() == 2);
  CHECK(tg.g.values[size_t(parts[1])].meta.sizes == std::vector<int64_t>{2, 1});
  ValueId pc = tg.op("aten.permute_copy.default", {T(x), Is({1, 0})});
  CHECK(tg.g.values[size_t(pc)].meta.strides == std::vector<int64_t>{2, 1});
  ValueId b = tg.input_values("b", DType::F32, {3}, {1.5, 3, 5});
  ValueId bk = tg.op("aten.bucketize.Tensor", {T(x), T(b), KW("right", Arg::of_bool(true))});
  CHECK(tg.g.values[size_t(bk)].meta.dtype == DType::I64);
  tg.output(pc);
  tg.output(bk);
  std::vector<Tensor> out = interpret(tg.g, tg.inputs);
  CHECK(out[0].to_vector() == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(out[1].to_vector() == std::vector<double>{0, 1, 2, 2, 3, 3});
}

TEST_CASE("composite: dtypes and strides are those of PyTorch's decomposition") {
  TestGraph tg;
  // _unsafe_masked_index is masked_fill(index(x), ~mask, fill): x's dtype, int64 exactly.
  ValueId x = tg.input_values("x", DType::I64, {3}, {int64_t(1) << 60, 5, 7});
  ValueId mask = tg.input_values("m", DType::Bool, {3}, {1, 0, 1});
  ValueId ix = tg.input_values("i", DType::I64, {3}, {0, 2, 1});
  ValueId mi = tg.op("aten._unsafe_masked_index.default",
                     {T(x), T(mask), {"", Arg::of_tensors({ix})}, I(-8)});
  CHECK(tg.g.values[size_t(mi)].meta.dtype == DType::I64);
  // linalg_tensorinv reshapes the column-major inverse as a view: [12, 1, 2, 2, 3] with strides
  // {1, 144, 72, 36, 12}, as torch.export records it.
  ValueId a = tg.input("a", {2, 2, 3, 12, 1});
  ValueId inv = tg.op("aten.linalg_tensorinv.default", {T(a), I(3)});
  CHECK(tg.g.values[size_t(inv)].meta.sizes == std::vector<int64_t>{12, 1, 2, 2, 3});
  CHECK(tg.g.values[size_t(inv)].meta.strides == std::vector<int64_t>{1, 144, 72, 36, 12});
  tg.output(mi);
  std::vector<Tensor> out = interpret(tg.g, tg.inputs);
  CHECK(out[0].dtype() == DType::I64);
  CHECK(out[0].load_int(0) == int64_t(1) << 60);
  CHECK(out[0].load_int(1) == -8);
  CHECK(out[0].load_int(2) == 5);
}

TEST_CASE("composite: argument errors name the node") {
  TestGraph tg;
  ValueId x = tg.input("x", {3, 4});
  CHECK_THROWS_WITH_AS(tg.op("aten.narrow.default", {T(x), I(0), I(5), I(1)}),
                       doctest::Contains("node 'narrow' (aten.narrow.default): start out of range"),
                       Error);
  CHECK_THROWS_WITH_AS(
      tg.op("aten.one_hot.default", {T(tg.input_values("i", DType::I64, {2}, {0, 1}))}),
      doctest::Contains("num_classes=-1"), Error);
  CHECK_THROWS_WITH_AS(tg.op("aten.hsplit.int", {T(x), I(3)}),
                       doctest::Contains("not divisible by the split_size 3"), Error);
}

TEST_CASE("composite: gradients through the decomposition") {
  {
    TestGraph tg;
    ValueId a = tg.input("a", {3, 4}), b = tg.input("b", {4}), c = tg.input("c", {3, 1});
    tg.output(tg.op("aten.addcmul.default", {T(a), T(b), T(c), KW("value", Arg::of_float(0.5))}));
    tg.output(tg.op("aten.addcdiv.default", {T(a), T(b), T(tg.op("aten.exp.default", {T(c)}))}));
    check_gradients(tg);
  }
  {
    TestGraph tg;
    ValueId p = tg.input("p", {2, 3, 4}), q = tg.input("q", {2, 4, 5});
    tg.output(tg.op("aten.tensordot.default", {T(p), T(q), Is({0, 2}), Is({0, 1})}));
    tg.output(tg.op("aten.diag_embed.default",
                    {T(tg.op("aten.narrow.default", {T(p), I(1), I(1), I(2)})), I(1), I(0), I(2)}));
    check_gradients(tg);
  }
  {
    TestGraph tg;
    ValueId x = tg.input("x", {3, 4}), s = tg.input("s", {2});
    tg.output(tg.op("aten.diagonal_scatter.default", {T(x), T(s), I(-1)}));
    tg.output(tg.op("aten.unfold.default", {T(x), I(1), I(2), I(1)}));
    tg.output(tg.op("aten.kron.default", {T(s), T(x)}));
    check_gradients(tg);
  }
}
