// The CUDA plan: cuBLASLt epilogues, cuDNN convolutions, the device arena, resident runs, graphs.
#include "aot_testing.h"
#include "codegen/inductor.h"
#include "cuda_testing.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "passes/decompose.h"
#include "passes/lower.h"
#include "runtime/compare.h"
#include "runtime/cuda_alloc.h"
#include "runtime/cuda_driver.h"
#include "runtime/cudnn.h"
#include "runtime/interpreter.h"
#include "runtime/plan_executor.h"

#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <string>

using namespace fxc;
using namespace fxc::testing;

namespace {

std::string fixture(const std::string& name) {
  return std::string(FXC_FIXTURES_DIR) + "/" + name;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// x [M, K] @ w.T + b, then `act` (empty for none): the graph decompose() makes of
/// Linear(+activation), in float32. The residual acts add an input r [M, N] afterwards:
/// "residual" (r row-major), "residual_t" (r a transposed view of an [N, M] input),
/// "residual_alpha" (r added with alpha 2), "relu_residual" (relu first).
TestGraph linear_graph(const std::string& act, const std::string& approximate = "none",
                       int64_t M = 16, int64_t K = 24, int64_t N = 40) {
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::F32, {M, K}, tg.random_values(M * K, -1, 1));
  ValueId w = tg.input_values("w", DType::F32, {N, K}, tg.random_values(N * K, -1, 1));
  ValueId b = tg.input_values("b", DType::F32, {N}, tg.random_values(N, -1, 1));
  ValueId y = tg.op("aten.linear.default", {T(x), T(w), T(b)});
  if (act == "relu" || act == "relu_residual") y = tg.op("aten.relu.default", {T(y)});
  if (act.find("residual") != std::string::npos) {
    bool t = act == "residual_t";
    std::vector<int64_t> rs = t ? std::vector<int64_t>{N, M} : std::vector<int64_t>{M, N};
    ValueId r = tg.input_values("r", DType::F32, rs, tg.random_values(M * N, -1, 1));
    if (t) r = tg.op("aten.permute.default", {T(r), Is({1, 0})});
    std::vector<CallArg> args = {T(y), T(r)};
    if (act == "residual_alpha") args.push_back(KW("alpha", Arg::of_float(2.0)));
    y = tg.op("aten.add.Tensor", args);
  }
  if (act == "gelu")
    y = tg.op("aten.gelu.default", {T(y), KW("approximate", Arg::of_string(approximate))});
  tg.output(y);
  tg.g = decompose(tg.g);
  return tg;
}

/// `tg` compiled for CUDA with the default options and run once: every output within `tol` of
/// the interpreter's.
void check_cuda_against_host(const TestGraph& tg, double tol) {
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  InductorOptions o;
  o.cuda = true;
  CompiledGraph cg = compile_inductor(tg.g, o);
  check_close(cg.run(tg.inputs), want, tol);
}

} // namespace

TEST_CASE("cuda plan: addmm + relu is one cuBLASLt call with a relu_bias epilogue") {
  TestGraph tg = linear_graph("relu");
  PtxProgram p = compile_inductor_ptx(tg.g, {});
  INFO(p.ir_post_fusion);
  INFO(p.fusion_log);
  CHECK(contains(p.ir_post_fusion, "= addmm (blas, epilogue relu_bias)(x, "));
  CHECK(p.kernels.empty()); // the transposed weight is read in place, relu is the epilogue
  CHECK(contains(p.fusion_log, "epilogue: relu = relu_bias of linear (cuBLASLt)"));
  // The CPU plan keeps BLAS + a pointwise epilogue kernel.
  LoopProgram cpu = lower(tg.g);
  CHECK(contains(print_loop_program(cpu), "extern: mm (blas)("));
}

TEST_CASE("cuda plan: gelu folds into the epilogue only when it is the tanh approximation") {
  PtxProgram tanh = compile_inductor_ptx(linear_graph("gelu", "tanh").g, {});
  INFO(tanh.ir_post_fusion);
  CHECK(contains(tanh.ir_post_fusion, "(blas, epilogue gelu_tanh_bias)"));
  CHECK(tanh.kernels.empty());
  // cuBLASLt's GELU is the tanh approximation: the exact (erf) gelu stays a kernel.
  PtxProgram erf = compile_inductor_ptx(linear_graph("gelu", "none").g, {});
  INFO(erf.ir_post_fusion);
  CHECK(contains(erf.ir_post_fusion, "(blas, epilogue bias)"));
  CHECK_FALSE(contains(erf.ir_post_fusion, "gelu_tanh"));
  CHECK(erf.kernels.size() == 1);
}

TEST_CASE("cuda plan: a residual add after a linear becomes the matmul's C (bias_residual)") {
  PtxProgram p = compile_inductor_ptx(linear_graph("residual").g, {});
  INFO(p.ir_post_fusion);
  CHECK(contains(p.ir_post_fusion, "= addmm (blas, epilogue bias_residual)(x, w, b, r)"));
  CHECK(p.kernels.empty());
  CHECK(contains(p.fusion_log, "epilogue: add = bias_residual of linear (cuBLASLt)"));
  // Not folded: a residual that is not laid out as the product, an add that scales it, an
  // activation between the product and the add (cuBLASLt adds C before its activation).
  for (const char* act : {"residual_t", "residual_alpha", "relu_residual"}) {
    CAPTURE(act);
    PtxProgram q = compile_inductor_ptx(linear_graph(act).g, {});
    INFO(q.ir_post_fusion);
    CHECK_FALSE(contains(q.ir_post_fusion, "bias_residual"));
    CHECK(q.kernels.size() == 1);
  }
}

TEST_CASE("cuda plan: a planted bug in the activation keeps it in a kernel") {
  TestGraph tg = linear_graph("relu");
  InductorOptions o;
  o.inject_bug = "relu:runtime_error";
  LowerOptions lo;
  lo.cuda = true;
  lo.inject_op = "relu";
  lo.inject_kind = "runtime_error";
  std::string text = print_loop_program(lower(tg.g, lo));
  CHECK(contains(text, "(blas, epilogue bias)"));
  CHECK_FALSE(contains(text, "relu_bias"));
}

TEST_CASE("cuda plan: the mlp and block fixtures use epilogues, convnet uses cuDNN") {
  PtxProgram mlp = compile_inductor_ptx(decompose(import_graph(fixture("mlp.pt2"))), {});
  CHECK(contains(mlp.ir_post_fusion, "(blas, epilogue relu_bias)"));
  PtxProgram block = compile_inductor_ptx(decompose(import_graph(fixture("block.pt2"))), {});
  INFO(block.ir_post_fusion);
  CHECK(contains(block.ir_post_fusion, "(blas, epilogue gelu_tanh_bias)"));
  CHECK(contains(block.ir_post_fusion, "(blas, epilogue bias)"));
  Graph conv = decompose(import_graph(fixture("convnet.pt2")));
  PtxProgram with = compile_inductor_ptx(conv, {});
  INFO(with.ir_post_fusion);
  CHECK(contains(with.ir_post_fusion, "= convolution (cudnn, stride [1, 1], padding [1, 1], "
                                      "dilation [1, 1], groups 1)("));
  InductorOptions no;
  no.cudnn = false;
  PtxProgram without = compile_inductor_ptx(conv, no);
  CHECK_FALSE(contains(without.ir_post_fusion, "(cudnn"));
  CHECK(contains(without.fusion_log, "cuDNN not used: disabled; im2col + cuBLASLt instead"));
}

TEST_CASE("cuda plan: the arena shares bytes between slots whose lifetimes do not overlap") {
  Plan p;
  // slot 0: input; 1: constant; 2 and 3: temporaries, 3 allocated after 2 is freed; 4: output.
  p.slot_bytes = {1000, 64, 4096, 4000, 10};
  p.input_slots = {0};
  p.constant_slots = {{1, Tensor()}};
  p.steps = {{PlanStep::Kind::Alloc, 2},  {PlanStep::Kind::Kernel, 0}, {PlanStep::Kind::Alloc, 4},
             {PlanStep::Kind::Kernel, 1}, {PlanStep::Kind::Free, 2},   {PlanStep::Kind::Alloc, 3},
             {PlanStep::Kind::Kernel, 2}, {PlanStep::Kind::Free, 3}};
  PlanView out;
  out.slot = 4;
  p.outputs = {out};
  ArenaLayout a = plan_arena(p);
  REQUIRE(a.offset.size() == 5);
  CHECK(a.offset[1] == -1);
  CHECK(a.offset[0] == 0);
  CHECK(a.offset[2] == 1024);
  CHECK(a.offset[4] == 1024 + 4096);
  CHECK(a.offset[3] == 1024); // slot 2's bytes, freed before slot 3 is allocated
  CHECK(a.bytes == 1024 + 4096 + 256);
  for (int64_t o : a.offset)
    if (o >= 0) CHECK(o % 256 == 0);
  // A slot that is still live is never shared.
  p.steps.erase(p.steps.begin() + 4); // slot 2 is never freed now
  ArenaLayout b = plan_arena(p);
  CHECK(b.offset[3] == 1024 + 4096 + 256);
}

TEST_CASE("cuda gpu plan: epilogues, cuDNN, the arena, resident runs and graphs match the host" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  for (const char* act : {"relu", "gelu", "residual"}) {
    CAPTURE(act);
    TestGraph tg = linear_graph(act, "tanh", 64, 96, 80);
    std::vector<Tensor> want = interpret(tg.g, tg.inputs);
    for (bool graphs : {false, true}) {
      CAPTURE(graphs);
      InductorOptions o;
      o.cuda = true;
      o.cuda_graphs = graphs;
      CompiledGraph cg = compile_inductor(tg.g, o);
      CHECK(contains(cg.ir_post_fusion(), "epilogue"));
      CudaPlanRunner* r = cg.cuda_runner();
      REQUIRE(r != nullptr);
      CHECK(r->arena_bytes() > 0);
      check_close(cg.run(tg.inputs), want, 1e-4);
      // The first run goes step by step; the second captures the graph and launches it.
      CHECK_FALSE(r->graph_captured());
      cuda::AllocatorStats before = cuda::device_allocator().stats();
      for (int i = 0; i < 3; ++i) check_close(cg.run(tg.inputs), want, 1e-4);
      CHECK(r->graph_captured() == graphs);
      // Runs reuse the arena: no device allocation, from the driver or the cache.
      CHECK(cuda::device_allocator().stats().requests == before.requests);
      // Resident runs: upload once, run many times, download.
      r->upload(tg.inputs);
      for (int i = 0; i < 5; ++i) r->run_resident();
      check_close(r->download(), want, 1e-4);
      std::vector<StepProfile> prof = r->time_steps();
      REQUIRE(prof.size() == 1);
      CHECK_FALSE(prof[0].kernel);
      CHECK(prof[0].ms > 0);
    }
  }
  // The convnet fixture through cuDNN, its convolutions' plan captured into a graph.
  Graph conv = decompose(import_graph(fixture("convnet.pt2")));
  auto all = read_safetensors(fixture("convnet.io.safetensors"));
  std::vector<Tensor> ins = {Tensor::from_weight(all.at("input_0"))};
  std::vector<Tensor> want = {Tensor::from_weight(all.at("output_0"))};
  for (bool dnn : {true, false}) {
    CAPTURE(dnn);
    InductorOptions o;
    o.cuda = true;
    o.cudnn = dnn;
    o.cuda_graphs = true;
    CompiledGraph cg = compile_inductor(conv, o);
    CHECK(contains(cg.ir_post_fusion(), "(cudnn") == dnn);
    CHECK(contains(cg.perf_hints(), "im2col") == !dnn);
    for (int i = 0; i < 2; ++i) check_close({cg.run(ins)[0]}, want, 1e-4);
    CHECK(cg.cuda_runner()->graph_captured());
  }
}

TEST_CASE("cuda gpu plan: short rows (a thread per row) match the host reference" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  TestGraph tg;
  // Pooling: 262144 rows of 4 (values and arg indices), as in convnet; rows of 3 and 4 whose
  // count is no multiple of the 256-row blocks: sums, maxima, argmax and a three-stage softmax.
  ValueId x =
      tg.input_values("x", DType::F32, {8, 32, 64, 64}, tg.random_values(8 * 32 * 64 * 64, -2, 2));
  auto mp = tg.ops("aten.max_pool2d_with_indices.default",
                   {T(tg.op("aten.relu.default", {T(x)})), Is({2, 2}), Is({2, 2})});
  tg.output(mp[0]);
  tg.output(mp[1]);
  ValueId a = tg.input_values("a", DType::F32, {40001, 3}, tg.random_values(40001 * 3, -2, 2));
  tg.output(tg.op("aten.sum.dim_IntList", {T(a), Is({-1})}));
  tg.output(tg.op("aten.amax.default", {T(a), Is({1})}));
  tg.output(tg.op("aten.argmax.default", {T(a), I(1)}));
  ValueId s = tg.input_values("s", DType::F32, {70001, 4}, tg.random_values(70001 * 4, -2, 2));
  tg.output(tg.op("aten._softmax.default", {T(s), I(-1), B(false)}));
  tg.g = decompose(tg.g);
  PtxProgram ptx = compile_inductor_ptx(tg.g, {});
  int short_rows = 0;
  for (const PtxKernelInfo& k : ptx.kernels) short_rows += k.rows > 1 ? 1 : 0;
  INFO(ptx.ir_post_fusion);
  CHECK(short_rows >= 3);
  check_cuda_against_host(tg, 1e-5);
}

TEST_CASE("cuda gpu plan: packed rows (kernels without reductions) match the host reference" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  // Rows of 16 vectors (16 rows a block), 192 vectors (a block of 192 threads), 3 vectors (85
  // rows in 255 threads), row counts no multiple of the rows a block takes, and a copy of a
  // transposed view (q, k, v out of one projection): each read against the host.
  TestGraph tg;
  auto input = [&](const char* name, std::vector<int64_t> sizes) {
    return tg.input_values(name, DType::F32, sizes, tg.random_values(sizes[0] * sizes[1], -2, 2));
  };
  ValueId a = input("a", {4001, 64});
  ValueId b = input("b", {999, 768});
  ValueId c = input("c", {1001, 12});
  ValueId d = input("d", {64, 3001});
  for (ValueId v : {a, b, c})
    tg.output(tg.op("aten.mul.Tensor", {T(tg.op("aten.relu.default", {T(v)})), T(v)}));
  ValueId dt = tg.op("aten.permute.default", {T(d), Is({1, 0})});
  tg.output(tg.op("aten.add.Tensor", {T(dt), T(dt)}));
  tg.g = decompose(tg.g);
  PtxProgram ptx = compile_inductor_ptx(tg.g, {});
  int packed = 0;
  for (const PtxKernelInfo& k : ptx.kernels) packed += k.rows > 1 && k.rows < k.block ? 1 : 0;
  INFO(ptx.ir_post_fusion);
  CHECK(packed >= 3);
  check_cuda_against_host(tg, 1e-6);
}

TEST_CASE("cuda gpu plan: a causal softmax skips its masked vectors and matches the host" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  // Rows of 512 (4 or 8 elements a vector, guarded loads), 500 (f32 vectors of 4), 501 (no
  // vectors: every element loaded), and x read after the softmax too (nothing skipped).
  struct Case {
    DType t;
    int64_t n;
    bool plus_x;
  };
  for (Case c :
       {Case{DType::F32, 512, false}, Case{DType::BF16, 512, false}, Case{DType::F32, 500, false},
        Case{DType::F32, 501, false}, Case{DType::F32, 512, true}}) {
    CAPTURE(dtype_name(c.t));
    CAPTURE(c.n);
    CAPTURE(c.plus_x);
    TestGraph tg = causal_softmax_graph(c.t, 6, c.n, c.plus_x);
    tg.g = decompose(tg.g);
    check_cuda_against_host(tg, c.t == DType::BF16 ? 1e-2 : 1e-5);
  }
}

TEST_CASE("cuda gpu plan: 16-bit layer norm stays exact when the mean dwarfs the spread" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  // Each path of the joint (mean, variance) reduction against float64, the layer norm and a
  // norms-like chain after it within 16-bit rounding: f16 rows of 2048 + U(-8, 8) (mean^2 /
  // variance about 2e5; f16 subtracts each thread's mean first: sum(v^2) - sum * mean would
  // lose about 0.4% of M2 there); bf16 rows of 4096 + U(-128, 128) (sum(v^2) - sum * mean,
  // exact for bf16 values); bf16 rows of 2^64 + U(-2^58, 2^58) (squares overflow f32, M2 of
  // about 2^126 does not: each thread subtracts its mean after all, and Chan's merge scales
  // the difference of two sums before squaring it, which overflowed for half the rows);
  // bf16 rows of U(-2, 2).
  struct Case {
    DType t;
    double offset, spread, tol;
  };
  for (Case c : {Case{DType::F16, 2048, 8, std::ldexp(1.0, -10)},
                 Case{DType::BF16, 4096, 128, std::ldexp(1.0, -8)},
                 Case{DType::BF16, std::ldexp(1.0, 64), std::ldexp(1.0, 58), std::ldexp(1.0, -8)},
                 Case{DType::BF16, 0, 2, std::ldexp(1.0, -8)}}) {
    INFO("offset " << c.offset);
    TestGraph tg;
    int64_t rows = 256, cols = 4096;
    std::vector<double> xv = tg.random_values(rows * cols, -c.spread, c.spread);
    for (double& v : xv) v += c.offset;
    ValueId x = tg.input_values("x", c.t, {rows, cols}, xv);
    ValueId w = tg.input_values("w", c.t, {cols}, tg.random_values(cols, 0.5, 1.5));
    ValueId b = tg.input_values("b", c.t, {cols}, tg.random_values(cols, -0.5, 0.5));
    ValueId ln = tg.op("aten.layer_norm.default", {T(x), Is({cols}), T(w), T(b)});
    tg.output(ln);
    tg.output(tg.op("aten._softmax.default",
                    {T(tg.op("aten.add.Tensor", {T(tg.op("aten.gelu.default", {T(ln)})),
                                                 T(tg.op("aten.mul.Scalar", {T(ln), F(0.5)}))})),
                     I(-1), B(false)}));
    tg.g = decompose(tg.g);
    InterpretOptions f64;
    f64.float64 = true;
    std::vector<Tensor> want = interpret(tg.g, tg.inputs, f64);
    InductorOptions o;
    o.cuda = true;
    CompiledGraph cg = compile_inductor(tg.g, o);
    std::vector<Tensor> got;
    for (const Tensor& t : cg.run(tg.inputs)) got.push_back(t.to(DType::F64));
    check_close(got, want, c.tol);
  }
}

TEST_CASE("cuda gpu plan: bf16 convolutions run on cuDNN and match the host reference" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  TestGraph tg;
  auto in = [&](const char* name, std::vector<int64_t> sizes) {
    return tg.random_input(name, DType::BF16, sizes);
  };
  ValueId x = in("x", {2, 8, 12, 12}), w = in("w", {16, 4, 3, 3}), b = in("b", {16});
  tg.output(
      tg.op("aten.conv2d.default", {T(x), T(w), T(b), Is({2, 1}), Is({1, 1}), Is({1, 1}), I(2)}));
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  InductorOptions o;
  o.cuda = true;
  CompiledGraph cg = compile_inductor(tg.g, o);
  INFO(cg.ir_post_fusion());
  CHECK(contains(cg.ir_post_fusion(), "(cudnn, stride [2, 1], padding [1, 1], dilation [1, 1], "
                                      "groups 2)"));
  check_close(cg.run(tg.inputs), want, 3e-2);
}

namespace {

// A channels-last chain: conv 3x3 (+bias) -> relu -> max pool -> 1x1 conv -> depthwise 3x3 conv
// + the 1x1 conv's result, outputs the relu (a 4-D output: contiguous again) and the sum.
TestGraph channels_last_chain() {
  TestGraph tg;
  auto in = [&](const char* name, std::vector<int64_t> sizes) {
    return tg.random_input(name, DType::F32, sizes);
  };
  ValueId x = in("x", {2, 8, 12, 12}), w1 = in("w1", {16, 8, 3, 3}), b1 = in("b1", {16});
  ValueId w2 = in("w2", {24, 16, 1, 1}), w3 = in("w3", {24, 1, 3, 3});
  ValueId r = tg.op("aten.relu.default",
                    {T(tg.op("aten.conv2d.default",
                             {T(x), T(w1), T(b1), Is({1, 1}), Is({1, 1}), Is({1, 1}), I(1)}))});
  ValueId p = tg.ops("aten.max_pool2d_with_indices.default", {T(r), Is({2, 2}), Is({2, 2})})[0];
  ValueId c2 = tg.op("aten.conv2d.default",
                     {T(p), T(w2), {"", Arg::none()}, Is({1, 1}), Is({0, 0}), Is({1, 1}), I(1)});
  ValueId c3 = tg.op("aten.conv2d.default",
                     {T(c2), T(w3), {"", Arg::none()}, Is({1, 1}), Is({1, 1}), Is({1, 1}), I(24)});
  tg.output(r);
  tg.output(tg.op("aten.add.Tensor", {T(c3), T(c2)}));
  tg.g = decompose(tg.g);
  return tg;
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

} // namespace

TEST_CASE("cuda plan: channels-last convolutions keep NHWC through the chain") {
  TestGraph tg = channels_last_chain();
  InductorOptions o;
  o.conv_layout = ConvLayout::Nhwc;
  PtxProgram ptx = compile_inductor_ptx(tg.g, o);
  const std::string& ir = ptx.ir_post_fusion;
  INFO(ir);
  CHECK(count_of(ir, "groups 1, channels_last)") == 2);
  CHECK(count_of(ir, "groups 24, channels_last)") == 1);
  // x and the dense 3x3 weight are copied channels-last; the 1x1 and the depthwise weights
  // ([K, 1, R, S]) are channels-last as they are; the pooled value (a reduction of the NHWC
  // relu) is stored NHWC, so nothing is copied before the 1x1 conv.
  CHECK(contains(ir, "(buf8, w2)"));
  CHECK(contains(ir, "(buf10, w3)"));
  CHECK(count_of(ir, "store(") == 5); // x and w1 copies; the pool, the relu output, the sum
  // Without the option the same graph runs NCHW; so does `auto`, as the graph has a grouped
  // convolution.
  CHECK_FALSE(contains(compile_inductor_ptx(tg.g, {}).ir_post_fusion, "channels_last"));
  o.conv_layout = ConvLayout::Auto;
  PtxProgram automatic = compile_inductor_ptx(tg.g, o);
  CHECK_FALSE(contains(automatic.ir_post_fusion, "channels_last"));
  CHECK(contains(automatic.fusion_log, "conv layout: NCHW"));
  // `auto` without grouped convolutions: channels-last.
  TestGraph dense;
  ValueId x = dense.random_input("x", DType::F32, {2, 8, 12, 12});
  ValueId w = dense.random_input("w", DType::F32, {16, 8, 3, 3});
  dense.output(dense.op(
      "aten.relu.default",
      {T(dense.op("aten.conv2d.default",
                  {T(x), T(w), {"", Arg::none()}, Is({1, 1}), Is({1, 1}), Is({1, 1}), I(1)}))}));
  dense.g = decompose(dense.g);
  CHECK(contains(compile_inductor_ptx(dense.g, o).ir_post_fusion, "groups 1, channels_last)"));
}

TEST_CASE("cuda gpu plan: channels-last convolutions match the host reference" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  TestGraph tg = channels_last_chain();
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  InductorOptions o;
  o.cuda = true;
  o.conv_layout = ConvLayout::Nhwc;
  o.cuda_graphs = true;
  CompiledGraph cg = compile_inductor(tg.g, o);
  INFO(cg.ir_post_fusion());
  CHECK(contains(cg.ir_post_fusion(), "channels_last"));
  for (int i = 0; i < 3; ++i) {
    std::vector<Tensor> got = cg.run(tg.inputs);
    REQUIRE(got.size() == 2);
    CHECK(got[0].is_contiguous());
    check_close(got, want, 1e-4);
  }
}

TEST_CASE("cuda gpu plan: TF32 is used only when allowed" * doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  // K = 4096 products of values in [-1, 1): TF32's 10-bit mantissa is visible, float32's is not.
  TestGraph tg = linear_graph("relu", "none", 32, 4096, 32);
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  InductorOptions o;
  o.cuda = true;
  check_close(compile_inductor(tg.g, o).run(tg.inputs), want, 2e-5);
  o.conv_tf32 = true; // convolutions only: the matmul stays exact
  check_close(compile_inductor(tg.g, o).run(tg.inputs), want, 2e-5);
  o.matmul_tf32 = true;
  std::vector<Tensor> tf32 = compile_inductor(tg.g, o).run(tg.inputs);
  CompareOptions co;
  co.rtol = co.atol = 2e-5;
  CHECK_FALSE(compare_tensors(tf32[0], want[0], co).ok);
  co.rtol = co.atol = 5e-2;
  CHECK(compare_tensors(tf32[0], want[0], co).ok);
}

TEST_CASE("cuda gpu plan: a captured graph still runs after another plan grew cuDNN's workspace" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  // Train + --cuda-graphs: the forward's graph is captured, then the backward's first run needs
  // a larger workspace. The forward's replay must not use a freed one (an illegal address).
  auto conv_graph = [](int64_t n, int64_t c, int64_t hw, int64_t kout, int64_t k, int64_t pad) {
    TestGraph tg;
    ValueId x =
        tg.input_values("x", DType::F32, {n, c, hw, hw}, tg.random_values(n * c * hw * hw, -1, 1));
    ValueId w = tg.input_values("w", DType::F32, {kout, c, k, k},
                                tg.random_values(kout * c * k * k, -1, 1));
    tg.output(tg.op("aten.convolution.default", {T(x),
                                                 T(w),
                                                 {"", Arg::none()},
                                                 Is({1, 1}),
                                                 Is({pad, pad}),
                                                 Is({1, 1}),
                                                 B(false),
                                                 Is({0, 0}),
                                                 I(1)}));
    tg.g = decompose(tg.g);
    return tg;
  };
  TestGraph small = conv_graph(1, 8, 16, 8, 3, 1);
  std::vector<Tensor> want = interpret(small.g, small.inputs);
  InductorOptions o;
  o.cuda = true;
  o.cuda_graphs = true;
  CompiledGraph a = compile_inductor(small.g, o);
  for (int i = 0; i < 2; ++i) check_close(a.run(small.inputs), want, 1e-4);
  REQUIRE(a.cuda_runner()->graph_captured());
  size_t before = cuda::Cudnn::get().workspace_bytes();
  // Problems that ask cuDNN for large workspaces: a weight gradient's shape (the batch as the
  // channels, the output map as the kernel), large kernels, wide layers.
  const std::vector<std::array<int64_t, 6>> bigger = {{64, 2, 58, 64, 56, 0},
                                                      {256, 8, 30, 256, 28, 0},
                                                      {16, 64, 128, 64, 11, 5},
                                                      {8, 512, 56, 512, 7, 3},
                                                      {32, 128, 64, 128, 3, 1}};
  for (const auto& p : bigger) {
    TestGraph big = conv_graph(p[0], p[1], p[2], p[3], p[4], p[5]);
    CompiledGraph b = compile_inductor(big.g, o);
    b.run(big.inputs);
    if (cuda::Cudnn::get().workspace_bytes() > before) break;
  }
  // Without growth this case shows nothing: one of the problems must ask for more.
  REQUIRE(cuda::Cudnn::get().workspace_bytes() > before);
  for (int i = 0; i < 3; ++i) check_close(a.run(small.inputs), want, 1e-4);
}
