// Unit tests for lowering graphs to the loop IR: views as index arithmetic, reductions, externs.
#include "aot_testing.h"
#include "codegen/inductor.h"
#include "frontend/diag.h"
#include "passes/decompose.h"
#include "passes/loop_ir_parse.h"
#include "passes/lower.h"
#include "runtime/compare.h"
#include "runtime/onednn.h"

#include <cmath>
#include <doctest/doctest.h>

using namespace fxc;
using namespace fxc::testing;

namespace {

ValueId f32_input(TestGraph& tg, const std::string& name, std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return tg.input_values(name, DType::F32, sizes, tg.random_values(n, -2, 2));
}

/// Compiles tg with the inductor backend and checks its outputs against the interpreter.
void check_compiled(TestGraph& tg) {
  CompiledGraph cg = compile_inductor(tg.g, {});
  auto got = cg.run(tg.inputs);
  auto want = interpret(tg.g, tg.inputs);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CompareResult r = compare_tensors(got[i], want[i]);
    INFO("output " << i << ": " << r.message);
    CHECK(r.ok);
  }
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

TEST_CASE("lower: a node without generated code becomes a logged fallback extern call") {
  // index_put through a boolean mask writes data-dependent positions: the CPU plan calls the
  // reference kernel, a CUDA plan refuses it rather than round-trip through the host.
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {2, 3});
  ValueId y = f32_input(tg, "y", {2, 3});
  ValueId m = tg.input_values("m", DType::Bool, {2, 3}, {1, 0, 1, 0, 0, 1});
  ValueId v = f32_input(tg, "v", {});
  ValueId s = tg.op("aten.add.Tensor", {T(x), T(y)});
  ValueId c = tg.op("aten.index_put.default", {T(s), {"", Arg::of_tensors({m})}, T(v)});
  tg.output(tg.op("aten.relu.default", {T(c)}));
  LoopProgram lp = lower(tg.g);
  REQUIRE(count_kind(lp, Buffer::Kind::Extern) == 1);
  // The add is realized for the call, which reads it, the mask and the value.
  CHECK(lp.buffers[4].kind == Buffer::Kind::Pointwise);
  CHECK(lp.buffers[5].call.kind == ExternCall::Kind::Fallback);
  CHECK(lp.buffers[5].call.operands.size() == 3);
  REQUIRE(lp.log.size() == 1);
  CHECK(lp.log[0] == "fallback: node 'index_put' (aten.index_put.default): boolean mask index "
                     "(data-dependent positions)");
  check_compiled(tg);
  LowerOptions cuda;
  cuda.cuda = true;
  try {
    lower(tg.g, cuda);
    FAIL("a CUDA plan lowered a boolean-mask index_put");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("has no CUDA lowering") != std::string::npos);
  }
}

TEST_CASE("lower: scans, sorts and scatters match the reference kernels without fallbacks") {
  TestGraph tg;
  // Ties and a NaN: stable order, NaN sorting last, cummax's index of the last NaN / maximum.
  ValueId x = tg.input_values("x", DType::F32, {2, 5}, {3, 1, 3, NAN, 2, -1, 4, 4, 0, -INFINITY});
  ValueId t = tg.input_values("t", DType::I32, {3, 4}, {5, -2, 5, 0, 1, 1, 1, 7, -3, 9, 0, 9});
  ValueId ix = tg.input_values("ix", DType::I64, {2, 4}, {0, 2, 2, 1, 2, 2, 0, 0});
  ValueId src = tg.input_values("src", DType::I32, {2, 4}, {10, 20, 30, 40, 50, 60, 70, 80});
  ValueId ip = tg.input_values("ip", DType::I64, {3}, {-1, 0, 2});
  ValueId e = f32_input(tg, "e", {0, 3});
  for (const char* op : {"aten.cumsum.default", "aten.cumprod.default"})
    tg.output(tg.op(op, {T(t), I(-1)}));
  tg.output(tg.op("aten.logcumsumexp.default", {T(x), I(1)}));
  for (const char* op : {"aten.cummax.default", "aten.cummin.default"}) {
    auto r = tg.ops(op, {T(x), I(1)});
    tg.output(r[0]);
    tg.output(r[1]);
  }
  for (bool desc : {false, true}) {
    auto s = tg.ops("aten.sort.default", {T(x), I(-1), B(desc)});
    tg.output(s[0]);
    tg.output(s[1]);
    tg.output(tg.op("aten.argsort.default", {T(t), I(0), B(desc)}));
  }
  auto k = tg.ops("aten.topk.default", {T(t), I(2), I(1)});
  tg.output(k[0]);
  tg.output(k[1]);
  tg.output(tg.op("aten.prod.dim_int", {T(t), I(0)}));
  tg.output(tg.op("aten.cumsum.default", {T(e), I(0)}));
  tg.output(tg.op("aten.scatter.src", {T(t), I(0), T(ix), T(src)}));
  tg.output(tg.op("aten.scatter_add.default", {T(t), I(0), T(ix), T(src)}));
  ValueId row = tg.input_values("row", DType::I32, {4}, {-7, 8, -9, 10});
  tg.output(tg.op("aten.index_put.default", {T(t), {"", Arg::of_tensors({ip})}, T(row)}));
  tg.output(tg.op("aten.index_fill.int_Scalar", {T(t), I(1), T(ip), I(-4)}));
  tg.output(tg.op("aten.roll.default", {T(t), Is({-5}), Is({})}));
  LoopProgram lp = lower(tg.g);
  CHECK(count_kind(lp, Buffer::Kind::Extern) == 0);
  for (const std::string& l : lp.log) CHECK(l.rfind("fallback", 0) == std::string::npos);
  check_compiled(tg);
}

TEST_CASE("lower: a long scan calls the reference kernel on the CPU and lowers for CUDA") {
  // 20000 x 20000 steps of a triangular reduction: past kCpuQuadraticWorkLimit on the CPU.
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {1, 20000});
  tg.output(tg.op("aten.cumsum.default", {T(x), I(1)}));
  LoopProgram cpu = lower(tg.g);
  CHECK(count_kind(cpu, Buffer::Kind::Extern) == 1);
  REQUIRE(cpu.log.size() == 1);
  CHECK(cpu.log[0] == "fallback: node 'cumsum' (aten.cumsum.default): quadratic lowering of "
                      "400000000 steps: the reference kernel is faster on the CPU");
  LowerOptions cuda;
  cuda.cuda = true;
  LoopProgram dev = lower(tg.g, cuda);
  CHECK(count_kind(dev, Buffer::Kind::Extern) == 0);
  CHECK(count_kind(dev, Buffer::Kind::Reduction) == 1);
}

TEST_CASE("lower: cat, constant_pad_nd and slice_scatter are selects over clamped loads") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {3, 4});
  ValueId y = f32_input(tg, "y", {2, 4});
  ValueId c = tg.op("aten.cat.default", {{"", Arg::of_tensors({x, y})}, I(0)});
  ValueId p = tg.op("aten.constant_pad_nd.default", {T(c), Is({1, 2, 0, 1}), F(0.5)});
  ValueId z = f32_input(tg, "z", {6, 2});
  tg.output(p);
  tg.output(tg.op("aten.slice_scatter.default", {T(p), T(z), I(1), I(1), I(5), I(2)}));
  LoopProgram lp = lower(tg.g);
  CHECK(count_kind(lp, Buffer::Kind::Extern) == 0);
  CHECK(print_loop_program(lp).find("indirect(") != std::string::npos);
  check_compiled(tg);
}

TEST_CASE("lower: max_pool2d with indices is a max and an argmax over the window") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {2, 3, 6, 8});
  auto outs = tg.ops("aten.max_pool2d_with_indices.default", {T(x), Is({2, 2}), Is({2, 2})});
  tg.output(outs[0]);
  tg.output(outs[1]);
  LoopProgram lp = lower(tg.g);
  CHECK(count_kind(lp, Buffer::Kind::Extern) == 0);
  CHECK(count_kind(lp, Buffer::Kind::Reduction) == 2);
  check_compiled(tg);
}

TEST_CASE("lower: padded, ceil-mode and dilated max_pool2d read -inf outside the input") {
  // ResNet's stem pool (3, 2, 1) ran as a fallback on the host before; inputs are in [-1, 1],
  // so a padding read as 0 would win many border windows.
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {2, 3, 9, 10});
  auto a =
      tg.ops("aten.max_pool2d_with_indices.default", {T(x), Is({3, 3}), Is({2, 2}), Is({1, 1})});
  tg.output(a[0]);
  tg.output(a[1]);
  auto b = tg.ops("aten.max_pool2d_with_indices.default",
                  {T(x), Is({3, 2}), Is({2, 3}), Is({1, 1}), Is({2, 1}), B(true)});
  tg.output(b[0]);
  tg.output(b[1]);
  LoopProgram lp = lower(tg.g);
  CHECK(count_kind(lp, Buffer::Kind::Extern) == 0);
  CHECK(count_kind(lp, Buffer::Kind::Reduction) == 4);
  check_compiled(tg);
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

TEST_CASE("lower: convolution is im2col, one batched BLAS call and a bias epilogue") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {2, 3, 7, 6});
  ValueId w = f32_input(tg, "w", {4, 3, 3, 2});
  ValueId b = f32_input(tg, "b", {4});
  tg.output(tg.op("aten.convolution.default", {T(x), T(w), T(b), Is({2, 1}), Is({1, 1}), Is({1, 2}),
                                               B(false), Is({0, 0}), I(1)}));
  LoopProgram lp = lower(tg.g);
  REQUIRE(count_kind(lp, Buffer::Kind::Extern) == 1);
  const Buffer* mm = nullptr;
  for (auto& buf : lp.buffers)
    if (buf.kind == Buffer::Kind::Extern) mm = &buf;
  CHECK(mm->call.kind == ExternCall::Kind::Gemm);
  CHECK(mm->call.op == "bmm");
  // The weight is read in place, broadcast over the batch.
  CHECK(mm->call.operands[0].strides == std::vector<int64_t>{0, 18, 1});
  check_compiled(tg);
}

TEST_CASE("lower: convolution_backward on CUDA with cuDNN is two cuDNN calls and a bias sum") {
  TestGraph tg;
  // conv2d(x [2, 3, 7, 6], w [4, 3, 3, 2], stride (2, 1), padding (1, 1), dilation (1, 2)) gives
  // [2, 4, 4, 6]: its output gradient g.
  ValueId g = f32_input(tg, "g", {2, 4, 4, 6});
  ValueId x = f32_input(tg, "x", {2, 3, 7, 6});
  ValueId w = f32_input(tg, "w", {4, 3, 3, 2});
  std::vector<ValueId> r =
      tg.ops("aten.convolution_backward.default", {T(g),
                                                   T(x),
                                                   T(w),
                                                   Is({4}),
                                                   Is({2, 1}),
                                                   Is({1, 1}),
                                                   Is({1, 2}),
                                                   B(false),
                                                   Is({0, 0}),
                                                   I(1),
                                                   {"", Arg::of_bools({true, true, true})}});
  for (ValueId v : r) tg.output(v);
  CHECK(cudnn_conv_backward(tg.g, tg.g.nodes.back()));
  LowerOptions lo;
  lo.cuda = true;
  lo.cudnn = true;
  LoopProgram lp = lower(tg.g, lo);
  std::vector<const Buffer*> calls;
  for (auto& buf : lp.buffers)
    if (buf.kind == Buffer::Kind::Extern) calls.push_back(&buf);
  REQUIRE(calls.size() == 2);
  CHECK(calls[0]->call.kind == ExternCall::Kind::ConvBackwardData);
  CHECK(calls[0]->call.op == "convolution_backward_data");
  CHECK(calls[0]->sizes == std::vector<int64_t>{2, 3, 7, 6});
  CHECK(calls[1]->call.kind == ExternCall::Kind::ConvBackwardFilter);
  CHECK(calls[1]->sizes == std::vector<int64_t>{4, 3, 3, 2});
  CHECK(calls[1]->call.stride == std::vector<int64_t>{2, 1});
  CHECK(calls[1]->call.dilation == std::vector<int64_t>{1, 2});
  CHECK(count_kind(lp, Buffer::Kind::Reduction) == 1); // the bias gradient
  std::string text = print_loop_program(lp);
  CHECK(text.find("convolution_backward_filter (cudnn, stride [2, 1], padding [1, 1], dilation "
                  "[1, 2], groups 1)(x") != std::string::npos);
  // Through the loop IR parser and back: the kinds survive.
  LoopProgram back = parse_loop_program(text, "<test>");
  CHECK(print_loop_program(back) == text);
  int data = 0, filter = 0;
  for (auto& buf : back.buffers) {
    data += buf.call.kind == ExternCall::Kind::ConvBackwardData;
    filter += buf.call.kind == ExternCall::Kind::ConvBackwardFilter;
  }
  CHECK(data == 1);
  CHECK(filter == 1);
  // Without cuDNN the node is not lowered (decompose keeps it only for cuDNN): a fallback.
  LowerOptions no_dnn;
  no_dnn.cuda = true;
  no_dnn.no_cudnn_reason = "disabled";
  LoopProgram fb = lower(tg.g, no_dnn);
  REQUIRE(count_kind(fb, Buffer::Kind::Extern) == 1);
  for (auto& buf : fb.buffers)
    if (buf.kind == Buffer::Kind::Extern) {
      CHECK(buf.call.kind == ExternCall::Kind::Fallback);
      CHECK(buf.call.reason.find("cuDNN not used: disabled") != std::string::npos);
    }
}

TEST_CASE("lower: bmm with a matrix broadcast over the batch is one product over all rows") {
  TestGraph tg;
  // a [5, 3, 4] read transposed from [3, 5, 4] (non-contiguous rows), times w [4, 6] expanded to
  // [5, 4, 6] (batch stride 0), as core ATen writes matmul(x.transpose(0, 1), w).
  ValueId x = f32_input(tg, "x", {3, 5, 4});
  ValueId w = f32_input(tg, "w", {4, 6});
  ValueId a = tg.op("aten.permute.default", {T(x), Is({1, 0, 2})});
  ValueId b = tg.op("aten.expand.default", {T(w), Is({5, 4, 6})});
  tg.output(tg.op("aten.bmm.default", {T(a), T(b)}));
  LoopProgram lp = lower(tg.g);
  const Buffer* mm = nullptr;
  for (auto& buf : lp.buffers)
    if (buf.kind == Buffer::Kind::Extern) mm = &buf;
  REQUIRE(mm != nullptr);
  CHECK(mm->call.kind == ExternCall::Kind::Gemm);
  CHECK(mm->call.op == "mm");
  CHECK(mm->sizes == std::vector<int64_t>{15, 6});
  check_compiled(tg);
  // The same with a computed matrix (as --dtype=bf16's cast of a weight): still one product,
  // and the matrix is computed once, not once per batch.
  TestGraph cg;
  ValueId x2 = f32_input(cg, "x", {3, 5, 4});
  ValueId w2 = cg.op("aten.neg.default", {T(f32_input(cg, "w", {4, 6}))});
  ValueId a2 = cg.op("aten.permute.default", {T(x2), Is({1, 0, 2})});
  ValueId b2 = cg.op("aten.expand.default", {T(w2), Is({5, 4, 6})});
  cg.output(cg.op("aten.bmm.default", {T(a2), T(b2)}));
  LoopProgram lp2 = lower(cg.g);
  int gemms = 0;
  for (auto& buf : lp2.buffers) {
    CHECK(TestGraph::meta(DType::F32, buf.sizes).numel() < 5 * 4 * 6);
    if (buf.kind == Buffer::Kind::Extern) {
      ++gemms;
      CHECK(buf.call.op == "mm");
      CHECK(buf.sizes == std::vector<int64_t>{15, 6});
    }
  }
  CHECK(gemms == 1);
  check_compiled(cg);
  // GQA's repeated keys: the computed operand agrees at batches 0 and 1 (one key head) and
  // differs at 2: a batched product, not one matrix.
  TestGraph gq;
  ValueId q = f32_input(gq, "q", {4, 5, 3});
  ValueId k = gq.op("aten.neg.default", {T(f32_input(gq, "k", {2, 3, 6}))});
  ValueId ku = gq.op("aten.unsqueeze.default", {T(k), I(1)});
  ValueId ke = gq.op("aten.expand.default", {T(ku), Is({2, 2, 3, 6})});
  ValueId kr = gq.op("aten.reshape.default", {T(ke), Is({4, 3, 6})});
  gq.output(gq.op("aten.bmm.default", {T(q), T(kr)}));
  LoopProgram lp3 = lower(gq.g);
  for (auto& buf : lp3.buffers)
    if (buf.kind == Buffer::Kind::Extern) CHECK(buf.call.op == "bmm");
  check_compiled(gq);
}

TEST_CASE("lower: linear and cubic upsampling run one pass per dim, innermost first") {
  TestGraph tg;
  ValueId x = f32_input(tg, "x", {2, 3, 5, 7});
  tg.output(tg.op("aten.upsample_bilinear2d.default", {T(x), Is({40, 56}), B(false)}));
  LoopProgram up = lower(tg.g);
  // The W pass (2x3x5x56, realized) and the H pass reading its rows: no gather along W there.
  REQUIRE(count_kind(up, Buffer::Kind::Pointwise) == 2);
  const Buffer& w_pass = up.buffers[1];
  CHECK(w_pass.sizes == std::vector<int64_t>{2, 3, 5, 56});
  check_compiled(tg);
  TestGraph more;
  ValueId y = f32_input(more, "y", {1, 2, 6, 4});
  more.output(more.op("aten.upsample_bilinear2d.default", {T(y), Is({13, 9}), B(true)}));
  more.output(more.op("aten.upsample_bicubic2d.default", {T(y), Is({12, 12}), B(false)}));
  ValueId z = f32_input(more, "z", {1, 2, 3, 4, 5});
  more.output(more.op("aten.upsample_trilinear3d.default", {T(z), Is({6, 8, 10}), B(false)}));
  // Downsampling keeps the one-kernel form.
  more.output(more.op("aten.upsample_bilinear2d.default", {T(y), Is({3, 2}), B(false)}));
  check_compiled(more);
}

TEST_CASE("lower: 3-D and 1-D convolutions are oneDNN calls on the CPU; the IR reads back") {
  if (!onednn::unavailable_reason().empty()) {
    MESSAGE("skipped: " << onednn::unavailable_reason());
    return;
  }
  TestGraph tg;
  ValueId x = tg.random_input("x", DType::F32, {2, 4, 5, 6, 7});
  ValueId w = tg.random_input("w", DType::F32, {8, 2, 3, 3, 1});
  ValueId y = tg.op("aten.convolution.default", {T(x),
                                                 T(w),
                                                 {"", Arg::none()},
                                                 Is({1, 2, 1}),
                                                 Is({1, 1, 0}),
                                                 Is({2, 1, 1}),
                                                 B(false),
                                                 Is({0, 0, 0}),
                                                 I(2)});
  tg.output(tg.op("aten.relu.default", {T(y)}));
  ValueId a = tg.random_input("a", DType::F32, {2, 4, 20});
  ValueId v = tg.random_input("v", DType::F32, {6, 4, 5});
  tg.output(
      tg.op("aten.convolution.default",
            {T(a), T(v), {"", Arg::none()}, Is({2}), Is({2}), Is({1}), B(false), Is({0}), I(1)}));
  LowerOptions lo;
  lo.onednn = true;
  LoopProgram lp = lower(tg.g, lo);
  std::vector<const Buffer*> calls;
  for (auto& buf : lp.buffers)
    if (buf.kind == Buffer::Kind::Extern) calls.push_back(&buf);
  REQUIRE(calls.size() == 2);
  CHECK(calls[0]->call.op == "onednn_convolution");
  CHECK(calls[0]->call.stride == std::vector<int64_t>{1, 2, 1});
  CHECK(calls[0]->call.padding == std::vector<int64_t>{1, 1, 0});
  CHECK(calls[0]->call.post_ops == "relu");
  CHECK(calls[0]->sizes == std::vector<int64_t>{2, 8, 3, 3, 7});
  CHECK(calls[1]->call.dilation == std::vector<int64_t>{1});
  CHECK(calls[1]->sizes == std::vector<int64_t>{2, 6, 10});
  std::string text = print_loop_program(lp);
  CHECK(text.find("onednn_convolution (onednn, stride [1, 2, 1], padding [1, 1, 0], dilation "
                  "[2, 1, 1], groups 2, post-ops relu)(x") != std::string::npos);
  LoopProgram back = parse_loop_program(text, "<test>");
  CHECK(print_loop_program(back) == text);
  CHECK(back.buffers[size_t(calls[0] - lp.buffers.data())].call.post_ops == "relu");
}

TEST_CASE("onednn: shape_error accepts PyTorch's convolution shapes only") {
  onednn::ConvShape s{
      {2, 4, 5, 6, 7}, {8, 2, 3, 3, 1}, {2, 8, 3, 3, 7}, {1, 2, 1}, {1, 1, 0}, {2, 1, 1}, 2};
  CHECK(onednn::shape_error(s).empty());
  onednn::ConvShape bad = s;
  bad.out[3] = 4;
  CHECK(onednn::shape_error(bad).find("spatial dim 1 of the result is 4") != std::string::npos);
  bad = s;
  bad.groups = 3;
  CHECK(onednn::shape_error(bad).find("groups") != std::string::npos);
  bad = s;
  bad.stride = {1, 2};
  CHECK(onednn::shape_error(bad).find("one value per spatial dim") != std::string::npos);
  bad = s;
  bad.w = {8, 2, 3, 3};
  CHECK(onednn::shape_error(bad).find("one rank") != std::string::npos);
  // 1-D and 2-D
  CHECK(onednn::shape_error({{2, 4, 20}, {6, 4, 5}, {2, 6, 10}, {2}, {2}, {1}, 1}).empty());
  CHECK(onednn::shape_error({{1, 3, 8, 8}, {4, 3, 3, 3}, {1, 4, 8, 8}, {1, 1}, {1, 1}, {1, 1}, 1})
            .empty());
}

TEST_CASE("lower: CPU convolution chains stay channels-last between oneDNN calls") {
  if (!onednn::unavailable_reason().empty()) {
    MESSAGE("skipped: " << onednn::unavailable_reason());
    return;
  }
  for (size_t rank : {4, 5}) {
    CAPTURE(rank);
    TestGraph tg;
    std::vector<int64_t> xs = {2, 3, 6, 7}, ws = {8, 3, 3, 3}, w2s = {4, 8, 1, 1};
    if (rank == 5) xs.insert(xs.begin() + 2, 5), ws.push_back(3), w2s.push_back(1);
    ValueId x = tg.random_input("x", DType::F32, xs);
    ValueId w = tg.random_input("w", DType::F32, ws);
    ValueId w2 = tg.random_input("w2", DType::F32, w2s);
    std::vector<int64_t> one(rank - 2, 1), zero(rank - 2, 0);
    ValueId y =
        tg.op("aten.convolution.default",
              {T(x), T(w), {"", Arg::none()}, Is(one), Is(one), Is(one), B(false), Is(zero), I(1)});
    ValueId h = tg.op("aten.mul.Scalar", {T(tg.op("aten.sigmoid.default", {T(y)})), F(2.0)});
    ValueId h2 = tg.op("aten.add.Tensor", {T(h), T(y)}); // a kernel between the calls
    tg.output(tg.op(
        "aten.convolution.default",
        {T(h2), T(w2), {"", Arg::none()}, Is(one), Is(zero), Is(one), B(false), Is(zero), I(1)}));
    LowerOptions lo;
    lo.onednn = true;
    lo.conv_layout = ConvLayout::Auto;
    LoopProgram lp = lower(tg.g, lo);
    std::vector<const Buffer*> calls;
    for (auto& buf : lp.buffers)
      if (buf.kind == Buffer::Kind::Extern) calls.push_back(&buf);
    REQUIRE(calls.size() == 2);
    for (const Buffer* c : calls) {
      CHECK(c->call.channels_last);
      CHECK(c->sizes.back() == c->call.operands[1].sizes[0]); // [N, ..., K]
    }
    // The second call reads the kernel's buffer as it is, channels-last: no copy.
    const ExternOperand& in = calls[1]->call.operands[0];
    CHECK(in.sizes[1] == 8);
    CHECK(in.strides[1] == 1);
    CHECK(lp.buffers[size_t(in.buffer)].kind == Buffer::Kind::Pointwise);
    // The graph output is contiguous, as the graph has it.
    REQUIRE(lp.outputs.size() == 1);
    CHECK(is_contiguous_layout(lp.outputs[0].meta.sizes, lp.outputs[0].meta.strides));
    // NCHW as asked: no channels-last call.
    lo.conv_layout = ConvLayout::Nchw;
    for (auto& buf : lower(tg.g, lo).buffers) CHECK_FALSE(buf.call.channels_last);
  }
}

TEST_CASE("lower: scaled_dot_product_attention on CUDA with cuDNN is one fused call") {
  TestGraph tg;
  // q [2, 4, 16, 64] (a transposed view of [2, 16, 4, 64], as attention layers write it), k and v
  // with 2 heads (grouped-query), a causal mask.
  ValueId qs = tg.random_input("q", DType::BF16, {2, 16, 4, 64});
  ValueId q = tg.op("aten.transpose.int", {T(qs), I(1), I(2)});
  ValueId k = tg.random_input("k", DType::BF16, {2, 2, 24, 64});
  ValueId v = tg.random_input("v", DType::BF16, {2, 2, 24, 32});
  ValueId o =
      tg.op("aten.scaled_dot_product_attention.default", {T(q),
                                                          T(k),
                                                          T(v),
                                                          {"", Arg::none()},
                                                          F(0.0),
                                                          B(true),
                                                          KW("scale", Arg::of_float(0.25)),
                                                          KW("enable_gqa", Arg::of_bool(true))});
  tg.output(tg.op("aten.transpose.int", {T(o), I(1), I(2)}));
  CHECK(cudnn_attention(tg.g, tg.g.nodes[1]));
  // Kept whole by decompose only when asked.
  auto has_sdpa = [](const Graph& g) {
    for (const Node& n : g.nodes)
      if (n.target == "aten.scaled_dot_product_attention.default") return true;
    return false;
  };
  DecomposeOptions keep;
  keep.keep_cudnn_attention = true;
  CHECK(has_sdpa(decompose(tg.g, keep)));
  CHECK_FALSE(has_sdpa(decompose(tg.g, DecomposeOptions{})));
  LowerOptions lo;
  lo.cuda = true;
  lo.cudnn = true;
  LoopProgram lp = lower(tg.g, lo);
  std::vector<const Buffer*> calls;
  for (auto& buf : lp.buffers)
    if (buf.kind == Buffer::Kind::Extern) calls.push_back(&buf);
  REQUIRE(calls.size() == 1);
  const ExternCall& c = calls[0]->call;
  CHECK(c.kind == ExternCall::Kind::Attention);
  CHECK(c.causal);
  CHECK(c.attn_scale == 0.25);
  REQUIRE(c.operands.size() == 3);
  // q is read in place through its strides: [2, 4, 16, 64] over the [2, 16, 4, 64] input.
  CHECK(c.operands[0].strides == std::vector<int64_t>{4096, 64, 256, 1});
  // The result buffer is [B, Sq, H, Dv]: the transpose that follows is the buffer itself.
  CHECK(calls[0]->sizes == std::vector<int64_t>{2, 16, 4, 32});
  CHECK(count_kind(lp, Buffer::Kind::Pointwise) == 0);
  std::string text = print_loop_program(lp);
  CHECK(text.find("scaled_dot_product_attention (cudnn attention, scale 0.25, causal)(q[2, 4, 16, "
                  "64]{4096, 64, 256, 1}+0") != std::string::npos);
  LoopProgram back = parse_loop_program(text, "<test>");
  CHECK(print_loop_program(back) == text);
  // Without cuDNN a kept node is a fallback that says why.
  LowerOptions no_dnn;
  no_dnn.cuda = true;
  no_dnn.no_cudnn_reason = "disabled";
  LoopProgram fb = lower(tg.g, no_dnn);
  for (auto& buf : fb.buffers)
    if (buf.kind == Buffer::Kind::Extern) {
      CHECK(buf.call.kind == ExternCall::Kind::Fallback);
      CHECK(buf.call.reason.find("cuDNN not used: disabled") != std::string::npos);
    }
}

TEST_CASE("lower: an attention mask becomes cuDNN's additive bias, broadcast dims kept at 1") {
  TestGraph tg;
  ValueId q = tg.random_input("q", DType::F16, {2, 3, 8, 16});
  ValueId k = tg.random_input("k", DType::F16, {2, 3, 8, 16});
  ValueId v = tg.random_input("v", DType::F16, {2, 3, 8, 16});
  // A padding mask [2, 1, 1, 8] expanded over heads and queries, as BERT passes it.
  ValueId m0 = tg.random_input("m", DType::Bool, {2, 1, 1, 8});
  ValueId m = tg.op("aten.expand.default", {T(m0), Is({2, 3, 8, 8})});
  tg.output(tg.op("aten.scaled_dot_product_attention.default",
                  {T(q), T(k), T(v), T(m), F(0.0), B(false)}));
  CHECK(cudnn_attention(tg.g, tg.g.nodes.back()));
  LowerOptions lo;
  lo.cuda = true;
  lo.cudnn = true;
  LoopProgram lp = lower(tg.g, lo);
  const Buffer* call = nullptr;
  for (auto& buf : lp.buffers)
    if (buf.kind == Buffer::Kind::Extern) call = &buf;
  REQUIRE(call);
  REQUIRE(call->call.operands.size() == 4);
  const Buffer& bias = lp.buffers[size_t(call->call.operands[3].buffer)];
  CHECK(bias.dtype == DType::F16);
  CHECK(bias.sizes == std::vector<int64_t>{2, 1, 8, 8});
  CHECK_FALSE(call->call.causal);
  CHECK(call->call.attn_scale == doctest::Approx(0.25)); // 1 / sqrt(16)
  // Unsupported: float32 inputs, a head dim not a multiple of 8, dropout.
  TestGraph f32;
  ValueId a = f32.random_input("a", DType::F32, {1, 1, 4, 8});
  f32.output(f32.op("aten.scaled_dot_product_attention.default",
                    {T(a), T(a), T(a), {"", Arg::none()}, F(0.0), B(false)}));
  CHECK_FALSE(cudnn_attention(f32.g, f32.g.nodes.back()));
  TestGraph odd;
  ValueId b = odd.random_input("b", DType::BF16, {1, 1, 4, 12});
  odd.output(odd.op("aten.scaled_dot_product_attention.default",
                    {T(b), T(b), T(b), {"", Arg::none()}, F(0.0), B(false)}));
  CHECK_FALSE(cudnn_attention(odd.g, odd.g.nodes.back()));
  TestGraph drop;
  ValueId c = drop.random_input("c", DType::BF16, {1, 1, 4, 16});
  drop.output(drop.op("aten.scaled_dot_product_attention.default",
                      {T(c), T(c), T(c), {"", Arg::none()}, F(0.1), B(false)}));
  CHECK_FALSE(cudnn_attention(drop.g, drop.g.nodes.back()));
}

TEST_CASE("decompose: grouped-query attention repeats each key and value head") {
  TestGraph tg;
  ValueId q = tg.random_input("q", DType::F64, {2, 6, 5, 4});
  ValueId k = tg.random_input("k", DType::F64, {2, 3, 7, 4});
  ValueId v = tg.random_input("v", DType::F64, {2, 3, 7, 3});
  tg.output(
      tg.op("aten.scaled_dot_product_attention.default", {T(q),
                                                          T(k),
                                                          T(v),
                                                          {"", Arg::none()},
                                                          F(0.0),
                                                          B(true),
                                                          KW("enable_gqa", Arg::of_bool(true))}));
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  std::vector<Tensor> got = interpret(decompose(tg.g), tg.inputs);
  REQUIRE(got.size() == 1);
  CompareResult r = compare_tensors(got[0], want[0]);
  INFO(r.message);
  CHECK(r.ok);
}
