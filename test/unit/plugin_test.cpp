// Unit tests for custom ops: descriptor checks, the registry, meta, the interpreter, lowering
// with fusion around the extern call, and autograd's refusal.
#include "aot_testing.h"
#include "codegen/inductor.h"
#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "passes/autograd.h"
#include "passes/fuse.h"
#include "passes/lower.h"
#include "runtime/interpreter.h"
#include "runtime/plugin.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace fxc;
using namespace fxc::testing;

namespace {

// unittest::scale_add(x, y, a) = a * x + y; x and y of equal shape and dtype (f32 or f64).
int sa_shape(const fxc_op_args* args, int32_t num_outputs, fxc_tensor_desc* outputs, char* error) {
  const fxc_tensor_desc &x = args->inputs[0], &y = args->inputs[1];
  if (x.dtype != y.dtype || x.ndim != y.ndim ||
      std::memcmp(x.sizes, y.sizes, sizeof(int64_t) * size_t(x.ndim)) != 0) {
    std::snprintf(error, FXC_PLUGIN_ERROR_SIZE, "x and y must have the same dtype and shape");
    return 1;
  }
  if (x.dtype != FXC_DTYPE_F32 && x.dtype != FXC_DTYPE_F64) {
    std::snprintf(error, FXC_PLUGIN_ERROR_SIZE, "x must be float32 or float64");
    return 1;
  }
  outputs[0] = x;
  return num_outputs == 1 ? 0 : 1;
}

int sa_cpu(const fxc_op_args* args, const void* const* in, void* const* out, char* error) {
  int64_t n = 1;
  for (int32_t d = 0; d < args->inputs[0].ndim; ++d) n *= args->inputs[0].sizes[d];
  const double a = args->scalars[0].f;
  if (args->inputs[0].dtype == FXC_DTYPE_F64) {
    for (int64_t i = 0; i < n; ++i)
      static_cast<double*>(out[0])[i] =
          a * static_cast<const double*>(in[0])[i] + static_cast<const double*>(in[1])[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      static_cast<float*>(out[0])[i] =
          float(a * static_cast<const float*>(in[0])[i] + static_cast<const float*>(in[1])[i]);
  }
  return 0;
}

int failing_cpu(const fxc_op_args*, const void* const*, void* const*, char* error) {
  std::snprintf(error, FXC_PLUGIN_ERROR_SIZE, "planted failure");
  return 1;
}

fxc_op_desc desc(const char* name, const char* schema) {
  return fxc_op_desc{FXC_PLUGIN_API_VERSION, name, schema, sa_shape, sa_cpu, nullptr};
}

// Registers the test ops once per process (the registry is global and permanent).
void ensure_registered() {
  static bool done = [] {
    std::vector<CustomOp> ops(2);
    std::string err;
    fxc_op_desc d =
        desc("unittest::scale_add", "scale_add(Tensor x, Tensor y, float a=2) -> Tensor");
    REQUIRE_MESSAGE(make_custom_op(d, "test", &ops[0], &err), err);
    fxc_op_desc f = desc("unittest::fails", "fails(Tensor x, Tensor y, float a=2) -> Tensor");
    f.cpu = failing_cpu;
    REQUIRE_MESSAGE(make_custom_op(f, "test", &ops[1], &err), err);
    REQUIRE_MESSAGE(register_custom_ops(std::move(ops), &err), err);
    return true;
  }();
  (void)done;
}

std::string make_error(fxc_op_desc d) {
  CustomOp op;
  std::string err;
  bool ok = make_custom_op(d, "libx.so", &op, &err);
  return ok ? "accepted" : err;
}

} // namespace

TEST_CASE("plugin: descriptors are checked before anything is registered") {
  const char* sig = "f(Tensor x) -> Tensor";
  CHECK(make_error(desc("ns::f", sig)) == "accepted");
  fxc_op_desc v = desc("ns::f", sig);
  v.api_version = 99;
  CHECK(make_error(v).find("plugin API version 99; this fxc supports version 1") !=
        std::string::npos);
  CHECK(make_error(desc("f", sig)) ==
        "op 'f': the name must be 'namespace::op' (letters, digits, '_')");
  CHECK(make_error(desc("aten::f", sig)).find("namespace 'aten' is reserved") != std::string::npos);
  CHECK(make_error(desc("ns::g", sig)) ==
        "op 'ns::g': schema 'f(Tensor x) -> Tensor': the function name must be 'g'");
  CHECK(make_error(desc("ns::f", "f(Tensor x)")).find("expected 'name(args) -> returns'") !=
        std::string::npos);
  CHECK(make_error(desc("ns::f", "f(Tensor x, int[] d) -> Tensor")).find("list arguments") !=
        std::string::npos);
  CHECK(make_error(desc("ns::f", "f(Tensor x, str s) -> Tensor")).find("has type str") !=
        std::string::npos);
  CHECK(make_error(desc("ns::f", "f(Tensor? x) -> Tensor")).find("has type Tensor?") !=
        std::string::npos);
  CHECK(make_error(desc("ns::f", "f(Tensor x) -> ")).find("returns must be Tensor") !=
        std::string::npos);
  CHECK(make_error(desc("ns::f", "f(Tensor x) -> int")).find("returns must be Tensor") !=
        std::string::npos);
  CHECK(make_error(desc("ns::f", "f(Tensor(a!) x) -> Tensor")).find("alias annotations") !=
        std::string::npos);
  CHECK(make_error(desc("ns::f", "f(float a) -> Tensor")).find("at least one Tensor") !=
        std::string::npos);
  fxc_op_desc nocpu = desc("ns::f", sig);
  nocpu.cpu = nullptr;
  CHECK(make_error(nocpu) == "op 'ns::f': no CPU kernel");
  CustomOp op;
  std::string err;
  REQUIRE(make_custom_op(desc("ns::f", "f.out(Tensor x, Tensor y) -> (Tensor, Tensor)"), "l", &op,
                         &err));
  CHECK(op.target == "ns.f.out");
  CHECK(op.schema.returns.size() == 2);
}

TEST_CASE("plugin: registered ops are found by every spelling; duplicates are refused") {
  ensure_registered();
  CHECK(normalize_target("unittest::scale_add") == "unittest.scale_add.default");
  CHECK(normalize_target("torch.ops.unittest.scale_add.default") == "unittest.scale_add.default");
  const OpSchema* s = find_schema("unittest.scale_add.default");
  REQUIRE(s != nullptr);
  CHECK(s->args.size() == 3);
  CHECK(find_custom_op("unittest.scale_add.default")->library == "test");
  CHECK(find_schema("unittest.nothing.default") == nullptr);
  CHECK(unknown_op_message("unittest.nothing.default") ==
        "unknown operator 'unittest::nothing' (load its plugin with --plugin)");
  CHECK(unknown_op_message("aten.nothing.default") == "unknown op 'aten.nothing.default'");

  // A second registration of the same op, and a batch with one duplicate, register nothing.
  std::vector<CustomOp> again(2);
  std::string err;
  REQUIRE(make_custom_op(desc("unittest::fresh", "fresh(Tensor x, Tensor y) -> Tensor"), "other",
                         &again[0], &err));
  REQUIRE(make_custom_op(desc("unittest::scale_add", "scale_add(Tensor x, Tensor y) -> Tensor"),
                         "other", &again[1], &err));
  CHECK_FALSE(register_custom_ops(std::move(again), &err));
  CHECK(err == "op 'unittest::scale_add' is already registered (by test)");
  CHECK(find_custom_op("unittest.fresh.default") == nullptr);
}

TEST_CASE("plugin: a missing or foreign library is a clear error") {
  CHECK_THROWS_WITH_AS(load_plugin("/nonexistent/libnothing.so"),
                       "/nonexistent/libnothing.so: error: cannot load plugin: no such file",
                       Error);
  // A file that is not a shared library.
  std::string path = std::string(FXC_SOURCE_DIR) + "/examples/custom_op/softplus.fxg";
  CHECK_THROWS_WITH_AS(load_plugin(path), doctest::Contains("cannot load plugin: "), Error);
}

TEST_CASE("plugin: meta and the interpreter call the shape function and the CPU kernel") {
  ensure_registered();
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  ValueId y = tg.input_values("y", DType::F32, {2, 3}, {0.5, 0, -1, 0, 0, 10});
  ValueId z = tg.op("unittest::scale_add", {T(x), T(y), KW("a", Arg::of_float(3))});
  tg.output(z);
  CHECK(format_meta(tg.g.values[z].meta) == "f32[2, 3]");
  std::vector<Tensor> out = interpret(tg.g, tg.inputs);
  REQUIRE(out.size() == 1);
  CHECK(out[0].to_vector() == std::vector<double>{3.5, 6, 8, 12, 15, 28});
  // The float64 reference runs the kernel on f64 operands.
  InterpretOptions f64;
  f64.float64 = true;
  std::vector<Tensor> ref = interpret(tg.g, tg.inputs, f64);
  CHECK(ref[0].dtype() == DType::F64);
  CHECK(ref[0].to_vector() == std::vector<double>{3.5, 6, 8, 12, 15, 28});

  // The shape function's error names the node.
  ValueId w = tg.input_values("w", DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(tg.op("unittest::scale_add", {T(x), T(w)}),
                       "test.fxg: error: node 'scale_add_1' (unittest.scale_add.default): "
                       "unittest::scale_add shape function: x and y must have the same dtype and "
                       "shape",
                       Error);
  // A kernel failure names the node and the plugin.
  TestGraph tf;
  ValueId a = tf.input_values("a", DType::F32, {2}, {1, 2});
  tf.output(tf.op("unittest::fails", {T(a), T(a)}));
  CHECK_THROWS_WITH_AS(interpret(tf.g, tf.inputs),
                       "test.fxg: error: node 'fails' (unittest.fails.default): unittest::fails "
                       "CPU kernel (test): planted failure",
                       Error);
}

TEST_CASE("plugin: inductor fuses the pointwise ops around a custom op's extern call") {
  ensure_registered();
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::F32, {4, 8}, tg.random_values(32, -2, 2));
  ValueId y = tg.input_values("y", DType::F32, {4, 8}, tg.random_values(32, -2, 2));
  ValueId e = tg.op("aten.exp.default", {T(x)});
  ValueId m = tg.op("aten.mul.Scalar", {T(e), F(0.5)});
  ValueId s = tg.op("unittest::scale_add", {T(m), T(y)});
  ValueId t = tg.op("aten.tanh.default", {T(s)});
  tg.output(tg.op("aten.add.Tensor", {T(t), T(y)}));
  LoopProgram lp = lower(tg.g);
  Schedule sched = fuse(lp);
  int externs = 0;
  for (const ScheduleItem& it : sched.items) externs += !it.is_kernel;
  CHECK(sched.kernels.size() == 2); // exp+mul before, tanh+add after
  CHECK(externs == 1);
  CompiledGraph cg = compile_inductor(tg.g, {});
  CHECK(cg.num_kernels() == 2);
  CHECK(cg.num_extern_calls() == 1);
  std::vector<Tensor> got = cg.run(tg.inputs);
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  REQUIRE(got.size() == 1);
  std::vector<double> g = got[0].to_vector(), w = want[0].to_vector();
  for (size_t i = 0; i < g.size(); ++i)
    CHECK(std::abs(g[i] - w[i]) <= 1e-5 + 1e-4 * std::abs(w[i]));
}

TEST_CASE("plugin: training through a custom op is refused, naming the node") {
  ensure_registered();
  TestGraph tg;
  ValueId x = tg.input("x", {3});
  ValueId y = tg.input("y", {3});
  tg.output(tg.op("unittest::scale_add", {T(x), T(y)}));
  CHECK_THROWS_WITH_AS(build_joint_graph(tg.g),
                       doctest::Contains("node 'scale_add' (unittest.scale_add.default): custom "
                                         "op 'unittest::scale_add' has no derivative"),
                       Error);
}
