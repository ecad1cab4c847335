// Unit tests for lowering graphs to the loop IR: views as index arithmetic, reductions, externs.
#include "aot_testing.h"
#include "passes/lower.h"

#include <doctest/doctest.h>

using namespace fxc;
using namespace fxc::testing;

namespace {

ValueId f32_input(TestGraph& tg, const std::string& name, std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return tg.input_values(name, DType::F32, sizes, tg.random_values(n, -2, 2));
}

int count_kind(const LoopProgram& p, Buffer::Kind k) {
  int n = 0;
  for (auto& b : p.buffers) n += b.kind == k;
  return n;
}

} // namespace

TEST_CASE("lower: permute and reshape become index arithmetic inside one pointwise buffer") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  ValueId p = tg.op("aten.permute.default", {T(x), Is({1, 0})});
  ValueId v = tg.op("aten.reshape.default", {T(p), Is({32})});
  tg.output(tg.op("aten.relu.default", {T(v)}));
  LoopProgram lp = lower(tg.g);
  REQUIRE(lp.buffers.size() == 2);
  CHECK(lp.buffers[1].kind == Buffer::Kind::Pointwise);
  CHECK(lp.buffers[1].origins == std::vector<std::string>{"relu"});
  std::string text = print_loop_program(lp);
  CHECK(text.find("load(x, ((x0) // 4) + 8*((x0) % 4))") != std::string::npos);
  CHECK(lp.outputs.size() == 1);
  CHECK(lp.outputs[0].buffer == 1);
}

TEST_CASE("lower: a graph output that is a view of an input needs no buffer") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 8});
  tg.output(tg.op("aten.permute.default", {T(x), Is({1, 0})}));
  LoopProgram lp = lower(tg.g);
  REQUIRE(lp.buffers.size() == 1);
  REQUIRE(lp.outputs.size() == 1);
  CHECK(lp.outputs[0].meta.sizes == std::vector<int64_t>{8, 4});
  CHECK(lp.outputs[0].meta.strides == std::vector<int64_t>{1, 8});
}

TEST_CASE("lower: softmax is a max reduction, a sum reduction and a pointwise output") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {4, 16});
  tg.output(tg.op("aten._softmax.default", {T(x), I(-1), B(false)}));
  LoopProgram lp = lower(tg.g);
  CHECK(count_kind(lp, Buffer::Kind::Reduction) == 2);
  CHECK(count_kind(lp, Buffer::Kind::Pointwise) == 1);
  CHECK(lp.buffers[1].reduce == ReduceOp::Max);
  CHECK(lp.buffers[2].reduce == ReduceOp::Sum);
  CHECK(lp.buffers[2].rsizes == std::vector<int64_t>{16});
  // The sum's prologue is exp(x - max), inlined rather than materialized.
  std::string text = print_loop_program(lp);
  CHECK(text.find("exp(") != std::string::npos);
}

TEST_CASE("lower: addmm is a BLAS call on a transposed view plus a pointwise epilogue") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {3, 5});
  ValueId w = f32_input(tg, "w", {7, 5});
  ValueId b = f32_input(tg, "b", {7});
  ValueId wt = tg.op("aten.permute.default", {T(w), Is({1, 0})});
  tg.output(tg.op("aten.addmm.default", {T(b), T(x), T(wt)}));
  LoopProgram lp = lower(tg.g);
  REQUIRE(count_kind(lp, Buffer::Kind::Extern) == 1);
  const Buffer& mm = lp.buffers[3];
  REQUIRE(mm.kind == Buffer::Kind::Extern);
  CHECK(mm.call.kind == ExternCall::Kind::Gemm);
  REQUIRE(mm.call.operands.size() == 2);
  CHECK(mm.call.operands[1].buffer == 1);
  CHECK(mm.call.operands[1].strides == std::vector<int64_t>{1, 5});
  CHECK(count_kind(lp, Buffer::Kind::Pointwise) == 1);
  CHECK(lp.buffers[4].origins == std::vector<std::string>{"addmm"});
}

TEST_CASE("lower: an op without a lowering becomes a logged fallback extern call") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {2, 3});
  ValueId y = f32_input(tg, "y", {2, 3});
  ValueId c = tg.op("aten.cat.default", {{"", Arg::of_tensors({x, y})}, I(0)});
  tg.output(tg.op("aten.relu.default", {T(c)}));
  LoopProgram lp = lower(tg.g);
  REQUIRE(count_kind(lp, Buffer::Kind::Extern) == 1);
  CHECK(lp.buffers[2].call.kind == ExternCall::Kind::Fallback);
  CHECK(lp.buffers[2].call.operands.size() == 2);
  REQUIRE(lp.log.size() == 1);
  CHECK(lp.log[0] == "fallback: node 'cat' (aten.cat.default): no lowering");
}

TEST_CASE("lower: embedding reads rows through an indirect, clamped index") {
  TestGraph tg;
  ValueId w = f32_input(tg, "w", {10, 4});
  ValueId ids = tg.input_values("ids", DType::I64, {3}, {1, 9, 0});
  tg.output(tg.op("aten.embedding.default", {T(w), T(ids)}));
  LoopProgram lp = lower(tg.g);
  REQUIRE(lp.buffers.size() == 3);
  std::string text = print_loop_program(lp);
  CHECK(text.find("load(w, x1 + 4*indirect(load(buf1, x0)))") != std::string::npos);
}

TEST_CASE("lower: large values with several users are materialized once") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {8});
  ValueId v = x;
  for (int i = 0; i < 30; ++i) v = tg.op("aten.sin.default", {T(v)});
  ValueId a = tg.op("aten.mul.Tensor", {T(v), T(v)});
  tg.output(tg.op("aten.add.Tensor", {T(a), T(v)}));
  LowerOptions lo;
  lo.inline_limit = 16;
  LoopProgram lp = lower(tg.g, lo);
  CHECK(count_kind(lp, Buffer::Kind::Pointwise) == 2);
  REQUIRE(!lp.log.empty());
  CHECK(lp.log[0].rfind("realize: sin_29", 0) == 0);
}
