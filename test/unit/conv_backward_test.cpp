// Unit tests for convolution gradients on the CPU: oneDNN's backward-data and backward-weights
// primitives (runtime/onednn.h), the direct loop that stands in for them without oneDNN, the
// decompose() predicate that keeps convolution_backward whole for them, and their lowering.
#include "aot_testing.h"
#include "codegen/inductor.h"
#include "frontend/diag.h"
#include "passes/decompose.h"
#include "passes/loop_ir_parse.h"
#include "passes/lower.h"
#include "runtime/compare.h"
#include "runtime/onednn.h"
#include "runtime/thread_pool.h"

#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <random>

using namespace fxc;
using namespace fxc::testing;

namespace {

struct Case {
  const char* name;
  std::vector<int64_t> x, w, stride, padding, dilation;
  int64_t groups;
};

// Stride 1 and 2, padding, dilation, groups, depthwise, 1x1, non-square, batch 1; 1-D and 3-D.
const Case kCases[] = {
    {"plain 3x3", {2, 8, 10, 10}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {"stride 2", {2, 8, 9, 9}, {12, 8, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1},
    {"dilated, batch 1", {1, 6, 14, 14}, {8, 6, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1},
    {"grouped", {2, 8, 9, 9}, {12, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 4},
    {"depthwise, stride 2", {2, 16, 11, 11}, {16, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 16},
    {"depthwise, dilated", {2, 8, 14, 14}, {8, 1, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 8},
    {"1x1", {2, 16, 7, 7}, {24, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
    {"1x1 stride 2", {2, 16, 8, 8}, {24, 16, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},
    {"non-square", {2, 4, 7, 12}, {6, 4, 3, 5}, {2, 1}, {1, 2}, {1, 2}, 1},
    {"7x7 stride 2 (a stem), odd size", {1, 3, 17, 17}, {8, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1},
    {"1-D grouped", {2, 8, 20}, {12, 2, 5}, {1}, {2}, {1}, 4},
    {"3-D", {1, 4, 5, 6, 7}, {8, 4, 3, 3, 1}, {1, 2, 1}, {1, 1, 0}, {1, 1, 1}, 1},
};

onednn::ConvShape shape_of(const Case& c) {
  onednn::ConvShape s;
  s.x = c.x;
  s.w = c.w;
  s.stride = c.stride;
  s.padding = c.padding;
  s.dilation = c.dilation;
  s.groups = c.groups;
  s.out = {c.x[0], c.w[0]};
  for (size_t i = 0; i + 2 < c.x.size(); ++i)
    s.out.push_back(
        (c.x[2 + i] + 2 * c.padding[i] - c.dilation[i] * (c.w[2 + i] - 1) - 1) / c.stride[i] + 1);
  return s;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<float> random(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = d(rng);
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

/// A ConvBackwardData (dy, w -> dx) or ConvBackwardFilter (x, dy -> dw) call over slots 0, 1
/// (the operands) and 2 (the result), all contiguous float32.
PlanExtern grad_call(const onednn::ConvShape& s, bool data) {
  PlanExtern e;
  e.kind = data ? PlanExtern::Kind::ConvBackwardData : PlanExtern::Kind::ConvBackwardFilter;
  e.name = data ? "dx" : "dw";
  std::vector<std::vector<int64_t>> sizes =
      data ? std::vector<std::vector<int64_t>>{s.out, s.w, s.x}
           : std::vector<std::vector<int64_t>>{s.x, s.out, s.w};
  for (int i = 0; i < 3; ++i) {
    PlanView v;
    v.slot = i;
    v.meta = TestGraph::meta(DType::F32, sizes[size_t(i)]);
    (i < 2 ? e.inputs : e.outputs).push_back(v);
  }
  e.stride = s.stride;
  e.padding = s.padding;
  e.dilation = s.dilation;
  e.groups = s.groups;
  return e;
}

std::shared_ptr<Storage> storage_of(const std::vector<float>& v) {
  auto st = std::make_shared<Storage>(v.size() * sizeof(float));
  std::memcpy(st->data(), v.data(), v.size() * sizeof(float));
  return st;
}

/// Runs the call through onednn::run_conv_backward (prepared with prepare_plan or not).
std::vector<float> run_call(const PlanExtern& e, const std::vector<float>& a,
                            const std::vector<float>& b, int64_t out_numel, bool prepare,
                            ThreadPool& pool) {
  Plan plan;
  plan.externs.push_back(e);
  if (prepare) onednn::prepare_plan(plan, "<test>");
  std::vector<float> nan(static_cast<size_t>(out_numel), NAN); // every element must be written
  std::vector<std::shared_ptr<Storage>> slots = {storage_of(a), storage_of(b), storage_of(nan)};
  onednn::run_conv_backward(plan.externs[0], slots, pool, "<test>");
  const float* o = reinterpret_cast<const float*>(slots[2]->data());
  return std::vector<float>(o, o + out_numel);
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0, scale = 1e-3;
  for (float v : want) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
  CHECK(worst <= 1e-5 * scale * 8);
}

} // namespace

TEST_CASE("onednn: convolution gradients are the adjoints of the convolution") {
  ThreadPool pool(2);
  std::mt19937_64 rng(7);
  const bool dnnl = onednn::unavailable_reason().empty();
  if (!dnnl) MESSAGE("oneDNN not checked: " << onednn::unavailable_reason());
  for (const Case& c : kCases) {
    CAPTURE(std::string(c.name));
    onednn::ConvShape s = shape_of(c);
    REQUIRE(onednn::shape_error(s).empty());
    std::vector<float> x = random(numel(s.x), rng), w = random(numel(s.w), rng),
                       dy = random(numel(s.out), rng);
    // The direct loops: <dy, conv(x, w)> = <dx, x> = <dw, w> for the linear map's adjoints.
    std::vector<float> y(static_cast<size_t>(numel(s.out))), dx(x.size()), dw(w.size());
    onednn::conv_direct(s, x.data(), w.data(), nullptr, nullptr, nullptr, {}, {}, y.data(), pool);
    onednn::conv_backward_direct(s, true, dy.data(), w.data(), dx.data(), pool);
    onednn::conv_backward_direct(s, false, x.data(), dy.data(), dw.data(), pool);
    const double ref = dot(dy, y);
    CHECK(dot(dx, x) == doctest::Approx(ref).epsilon(1e-5));
    CHECK(dot(dw, w) == doctest::Approx(ref).epsilon(1e-5));
    if (!dnnl) continue;
    // oneDNN's primitives: the direct loop's values, prepared with the plan or made per run.
    CHECK(onednn::check_conv_backward(s, true) == "");
    CHECK(onednn::check_conv_backward(s, false) == "");
    CAPTURE(onednn::conv_backward_impl_name(s, true));
    CAPTURE(onednn::conv_backward_impl_name(s, false));
    for (bool prepare : {true, false}) {
      CAPTURE(prepare);
      check_close(run_call(grad_call(s, true), dy, w, numel(s.x), prepare, pool), dx);
      check_close(run_call(grad_call(s, false), x, dy, numel(s.w), prepare, pool), dw);
    }
  }
}

TEST_CASE("onednn: a convolution gradient call of sizes the window does not give is refused") {
  onednn::ConvShape s = shape_of(kCases[1]);
  PlanExtern e = grad_call(s, true);
  e.inputs[0].meta = TestGraph::meta(DType::F32, {2, 12, 4, 4}); // dy should be [2, 12, 5, 5]
  CHECK(onednn::shape_error(onednn::backward_shape_of(e)).find("spatial dim 0") !=
        std::string::npos);
  ThreadPool pool(1);
  std::vector<float> a(2 * 12 * 4 * 4), b(static_cast<size_t>(numel(s.w)));
  CHECK_THROWS_WITH_AS(run_call(e, a, b, numel(s.x), false, pool),
                       doctest::Contains("convolution gradient call"), Error);
}

TEST_CASE("decompose: convolution_backward stays whole for oneDNN, lowers to two oneDNN calls") {
  if (!onednn::unavailable_reason().empty()) {
    MESSAGE("skipped: " << onednn::unavailable_reason());
    return;
  }
  for (const Case& c : kCases) {
    CAPTURE(std::string(c.name));
    onednn::ConvShape s = shape_of(c);
    TestGraph tg;
    ValueId g = tg.random_input("g", DType::F32, s.out);
    ValueId x = tg.random_input("x", DType::F32, s.x);
    ValueId w = tg.random_input("w", DType::F32, s.w);
    std::vector<ValueId> r =
        tg.ops("aten.convolution_backward.default", {T(g),
                                                     T(x),
                                                     T(w),
                                                     Is({s.w[0]}),
                                                     Is(c.stride),
                                                     Is(c.padding),
                                                     Is(c.dilation),
                                                     B(false),
                                                     Is(std::vector<int64_t>(c.stride.size(), 0)),
                                                     I(c.groups),
                                                     {"", Arg::of_bools({true, true, true})}});
    for (ValueId v : r) tg.output(v);
    CHECK(onednn_conv_backward(tg.g, tg.g.nodes.back()));
    DecomposeOptions keep;
    keep.keep_onednn_conv_backward = true;
    Graph kept = decompose(tg.g, keep);
    int nodes = 0;
    for (const Node& n : kept.nodes) nodes += n.target == "aten.convolution_backward.default";
    CHECK(nodes == 1);
    LowerOptions lo;
    lo.onednn = true;
    lo.train = true;
    LoopProgram lp = lower(tg.g, lo);
    std::vector<const Buffer*> calls;
    for (auto& buf : lp.buffers)
      if (buf.kind == Buffer::Kind::Extern) calls.push_back(&buf);
    REQUIRE(calls.size() == 2);
    CHECK(calls[0]->call.kind == ExternCall::Kind::ConvBackwardData);
    CHECK(calls[0]->call.op == "onednn_convolution_backward_data");
    CHECK(calls[0]->sizes == s.x);
    CHECK(calls[1]->call.kind == ExternCall::Kind::ConvBackwardFilter);
    CHECK(calls[1]->call.op == "onednn_convolution_backward_filter");
    CHECK(calls[1]->sizes == s.w);
    CHECK(calls[1]->call.stride == c.stride);
    CHECK(calls[1]->call.dilation == c.dilation);
    // The loop IR text names oneDNN and reads back with the same kinds.
    std::string text = print_loop_program(lp);
    CHECK(text.find("onednn_convolution_backward_filter (onednn, stride [") != std::string::npos);
    LoopProgram back = parse_loop_program(text, "<test>");
    CHECK(print_loop_program(back) == text);
    int data = 0, filter = 0;
    for (auto& buf : back.buffers) {
      data += buf.call.kind == ExternCall::Kind::ConvBackwardData;
      filter += buf.call.kind == ExternCall::Kind::ConvBackwardFilter;
    }
    CHECK(data == 1);
    CHECK(filter == 1);
    // Compiled and run: the reference interpreter's gradients (the op's decomposition).
    CompiledGraph cg = compile_inductor(tg.g, {});
    std::vector<Tensor> got = cg.run(tg.inputs), want = interpret(tg.g, tg.inputs);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CompareOptions o;
      o.rtol = 1e-4;
      o.atol = 1e-4;
      CompareResult cr = compare_tensors(got[i], want[i], o);
      INFO("output " << i << ": " << cr.message);
      CHECK(cr.ok);
    }
  }
}

TEST_CASE("decompose: convolution_backward oneDNN does not compute is decomposed") {
  TestGraph tg;
  // float64: oneDNN's primitives are float32 here.
  ValueId g = tg.random_input("g", DType::F64, {2, 4, 3, 3});
  ValueId x = tg.random_input("x", DType::F64, {2, 6, 5, 5});
  ValueId w = tg.random_input("w", DType::F64, {4, 6, 3, 3});
  tg.ops("aten.convolution_backward.default", {T(g),
                                               T(x),
                                               T(w),
                                               {"", Arg::none()},
                                               Is({1, 1}),
                                               Is({0, 0}),
                                               Is({1, 1}),
                                               B(false),
                                               Is({0, 0}),
                                               I(1),
                                               {"", Arg::of_bools({true, true, false})}});
  CHECK_FALSE(onednn_conv_backward(tg.g, tg.g.nodes.back()));
  TestGraph t2;
  ValueId g2 = t2.random_input("g", DType::F32, {2, 4, 3, 3});
  ValueId x2 = t2.random_input("x", DType::F32, {2, 6, 5, 5});
  ValueId w2 = t2.random_input("w", DType::F32, {4, 6, 3, 3});
  t2.ops("aten.convolution_backward.default", {T(g2),
                                               T(x2),
                                               T(w2),
                                               {"", Arg::none()},
                                               Is({1, 1}),
                                               Is({0, 0}),
                                               Is({1, 1}),
                                               B(false),
                                               Is({0, 0}),
                                               I(1),
                                               {"", Arg::of_bools({true, true, false})}});
  // A float32 one whose grad_output does not have the convolution's output sizes: no.
  t2.g.values[size_t(g2)].meta = TestGraph::meta(DType::F32, {2, 4, 4, 4});
  CHECK_FALSE(onednn_conv_backward(t2.g, t2.g.nodes.back()));
}
