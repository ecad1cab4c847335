// End-to-end tests of the inductor backend: fixtures compiled to LLVM kernels and run.
#include "aot_testing.h"
#include "codegen/inductor.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "passes/decompose.h"
#include "runtime/compare.h"
#include "runtime/cuda_driver.h"
#include "runtime/interpreter.h"
#include "runtime/thread_pool.h"
#include "skip.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

using namespace fxc;

namespace {

std::string fixture(const std::string& name) {
  return std::string(FXC_FIXTURES_DIR) + "/" + name;
}

struct IO {
  std::vector<Tensor> inputs, outputs;
};

IO read_io(const std::string& model) {
  auto all = read_safetensors(fixture(model + ".io.safetensors"));
  IO io;
  for (int i = 0;; ++i) {
    auto it = all.find("input_" + std::to_string(i));
    if (it == all.end()) break;
    io.inputs.push_back(Tensor::from_weight(it->second));
  }
  for (int i = 0;; ++i) {
    auto it = all.find("output_" + std::to_string(i));
    if (it == all.end()) break;
    io.outputs.push_back(Tensor::from_weight(it->second));
  }
  return io;
}

/// Compiles `file`, runs it on the fixture inputs and checks every output against PyTorch's.
CompiledGraph check_fixture(const std::string& model, const std::string& file, bool decomp,
                            double tol = 1e-4) {
  Graph g = import_graph(fixture(file));
  if (decomp) g = decompose(g);
  CompiledGraph cg = compile_inductor(g, {});
  IO io = read_io(model);
  auto outs = cg.run(io.inputs);
  // The .io files hold the first outputs only (berttiny: the hidden states, not the pooler).
  REQUIRE(outs.size() >= io.outputs.size());
  REQUIRE(!io.outputs.empty());
  for (size_t i = 0; i < io.outputs.size(); ++i) {
    CompareOptions co;
    co.rtol = tol;
    co.atol = tol;
    CompareResult r = compare_tensors(outs[i], io.outputs[i], co);
    INFO(file << " output " << i << ": " << r.message);
    CHECK(r.ok);
  }
  return cg;
}

} // namespace

TEST_CASE("codegen: mlp core graph is 2 BLAS calls and 2 fused kernels, matching PyTorch") {
  CompiledGraph cg = check_fixture("mlp", "mlp.core.pt2", false);
  CHECK(cg.num_kernels() == 2);
  CHECK(cg.num_extern_calls() == 2);
  REQUIRE(cg.kernels().size() == 2);
  CHECK(cg.kernels()[0].name == "fused_addmm_relu_pow_0");
  CHECK(cg.kernels()[0].ll.find("define void @fused_addmm_relu_pow_0(ptr") != std::string::npos);
}

TEST_CASE("codegen: norms (layer_norm, gelu, add, softmax) fuses into one row kernel") {
  CompiledGraph cg = check_fixture("norms", "norms.core.pt2", false);
  CHECK(cg.num_kernels() <= 2);
  CHECK(cg.num_extern_calls() == 0);
}

TEST_CASE("codegen: every fixture matches PyTorch's outputs") {
  for (const char* m : {"mlp", "norms", "block", "convnet", "embed", "berttiny"}) {
    SUBCASE(m) {
      check_fixture(m, std::string(m) + ".core.pt2", false);
      check_fixture(m, std::string(m) + ".pt2", false);
    }
  }
}

TEST_CASE("codegen: decomposed fixtures match PyTorch's outputs") {
  for (const char* m : {"mlp", "norms", "block", "embed"}) {
    SUBCASE(m) {
      check_fixture(m, std::string(m) + ".pt2", true);
    }
  }
}

TEST_CASE("codegen: --inject-bug plants compile, runtime and accuracy bugs in one op's kernel") {
  Graph g = import_graph(fixture("mlp.core.pt2"));
  IO io = read_io("mlp");
  InductorOptions o;
  o.inject_bug = "relu:compile_error";
  CHECK_THROWS_WITH_AS(
      compile_inductor(g, o),
      doctest::Contains("injected compile error in generated kernel fused_addmm_relu_pow_0"),
      Error);
  o.inject_bug = "relu:runtime_error";
  CompiledGraph rt = compile_inductor(g, o);
  CHECK_THROWS_WITH_AS(rt.run(io.inputs), doctest::Contains("injected runtime error"), Error);
  o.inject_bug = "relu:accuracy";
  CompiledGraph acc = compile_inductor(g, o);
  auto outs = acc.run(io.inputs);
  CHECK_FALSE(compare_tensors(outs[0], io.outputs[0]).ok);
  CHECK(acc.fusion_log().find("inject: accuracy bug in node 'relu'") != std::string::npos);
  o.inject_bug = "relu:wrong";
  CHECK_THROWS_AS(compile_inductor(g, o), Error);
  // An op the graph does not have changes nothing.
  o.inject_bug = "sigmoid:accuracy";
  CHECK(compare_tensors(compile_inductor(g, o).run(io.inputs)[0], io.outputs[0],
                        CompareOptions{1e-4, 1e-4, true, true})
            .ok);
}

TEST_CASE("codegen: output_code.cpp renders the host plan as a program with main()") {
  Graph g = import_graph(fixture("mlp.core.pt2"));
  CompiledGraph cg = compile_inductor(g, {});
  const std::string& c = cg.output_code();
  CHECK(c.find("extern \"C\" void fused_addmm_relu_pow_0(void* const* args, int64_t xbegin, "
               "int64_t xend);") != std::string::npos);
  // x [64, 256] @ permute(fc1.weight): row-major A, transposed B read in place.
  CHECK(c.find("cblas_sgemm(101, 111, 112, 64, 256, 256, 1, A + i * 0, 256, Bm + i * 0, 256, 0, C "
               "+ i * 16384, 256);") != std::string::npos);
  CHECK(c.find("launch(fused_addmm_relu_pow_1, args, 64,") != std::string::npos);
  CHECK(c.find("int main(int argc, char** argv)") != std::string::npos);
  CHECK(c.find("FXC_WITH_RUNTIME") == std::string::npos);
  // The same plan renders the same text.
  CHECK(compile_inductor(g, {}).output_code() == c);
  // A node without generated code (index_put through a boolean mask: data-dependent
  // positions) runs through fxc's reference kernels, which the program needs.
  fxc::testing::TestGraph tg;
  ValueId x = tg.input("x", {4, 3});
  ValueId m = tg.input_values("m", DType::Bool, {4, 3}, {1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1, 0});
  ValueId v = tg.input("v", {});
  tg.output(tg.op("aten.index_put.default",
                  {fxc::testing::T(x), {"", Arg::of_tensors({m})}, fxc::testing::T(v)}));
  CompiledGraph put = compile_inductor(tg.g, {});
  CHECK(put.output_code().find("#error \"this graph calls fxc reference kernels") !=
        std::string::npos);
  CHECK(put.output_code().find("fxc::interpret(fallback_graph(0), in)") != std::string::npos);
  CHECK(put.output_code().find("aten.index_put.default") != std::string::npos);
}

TEST_CASE("codegen: the thread pool runs every task exactly once, repeatedly") {
  ThreadPool pool(4);
  CHECK(pool.size() == 4);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> hits(97);
    pool.parallel_for(97, [&](int64_t i) { hits[i]++; });
    for (auto& h : hits) REQUIRE(h.load() == 1);
  }
  int64_t count = 0;
  pool.parallel_for(0, [&](int64_t) { ++count; });
  CHECK(count == 0);
  ThreadPool single(1);
  single.parallel_for(5, [&](int64_t) { ++count; });
  CHECK(count == 5);
}

TEST_CASE("codegen: runs reuse the activation arena; outputs of earlier runs stay intact") {
  Graph g = import_graph(fixture("convnet.core.pt2"));
  IO io = read_io("convnet");
  CompiledGraph cg = compile_inductor(g, {});
  std::vector<Tensor> first = cg.run(io.inputs);
  // Other inputs leave other values in the arena's bytes.
  std::vector<Tensor> other;
  for (const Tensor& t : io.inputs) {
    Tensor c = t.clone();
    float* p = c.data<float>();
    for (int64_t i = 0; i < c.numel(); ++i) p[i] = -3.0f * p[i] + 0.5f;
    other.push_back(c);
  }
  std::vector<Tensor> changed = cg.run(other);
  std::vector<Tensor> again = cg.run(io.inputs);
  // Two runs at once: one takes the idle arena, the other makes its own.
  std::vector<Tensor> t1, t2;
  std::thread a([&] { t1 = cg.run(io.inputs); });
  std::thread b([&] { t2 = cg.run(other); });
  a.join();
  b.join();
  CompareOptions exact;
  exact.rtol = exact.atol = 0;
  REQUIRE(first.size() == again.size());
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(compare_tensors(again[i], first[i], exact).ok);
    CHECK(compare_tensors(t1[i], first[i], exact).ok);
    CHECK(compare_tensors(t2[i], changed[i], exact).ok);
    CHECK_FALSE(compare_tensors(changed[i], first[i], exact).ok);
  }
  CompareOptions co;
  co.rtol = co.atol = 1e-4;
  CHECK(compare_tensors(first[0], io.outputs[0], co).ok);
}

TEST_CASE("codegen: kernels split over threads give the same result as one thread") {
  Graph g = import_graph(fixture("norms.core.pt2"));
  IO io = read_io("norms");
  InductorOptions one;
  one.num_threads = 1;
  InductorOptions many;
  many.num_threads = 4;
  auto a = compile_inductor(g, one).run(io.inputs);
  auto b = compile_inductor(g, many).run(io.inputs);
  CompareOptions exact;
  exact.rtol = exact.atol = 0;
  CHECK(compare_tensors(a[0], b[0], exact).ok);
}

TEST_CASE("codegen: the kernels link into one module and one ELF object") {
  CompiledGraph cg = compile_inductor(import_graph(fixture("mlp.core.pt2")), {});
  std::string ll = cg.llvm_module();
  CHECK(ll.find("define void @fused_addmm_relu_pow_0(ptr") != std::string::npos);
  CHECK(ll.find("define void @fused_addmm_relu_pow_1(ptr") != std::string::npos);
  // Optimized, the r loop is vectorized.
  CHECK(cg.llvm_module(true).find("x float>") != std::string::npos);
  std::string obj = cg.object_code();
  REQUIRE(obj.size() > 64);
  CHECK(obj.substr(0, 4) == "\x7f"
                            "ELF");
  CHECK(obj.find("fused_addmm_relu_pow_1") != std::string::npos);
}

TEST_CASE(
    "codegen: the same kernels compile to PTX for NVIDIA GPUs (checked by ptxas when present)") {
  const std::string& libdevice = fxc::testing::kLibdevice;
  if (!fxc::testing::have_libdevice()) return;
  // Arg, bool, integer and f64 reductions exercise every shared-memory combine.
  fxc::testing::TestGraph tg;
  {
    using namespace fxc::testing;
    ValueId x = tg.input("x", {2, 3, 6, 8});
    ValueId xf = tg.op("aten._to_copy.default", {T(x), KW("dtype", Arg::of_dtype(DType::F32))});
    auto mp = tg.ops("aten.max_pool2d_with_indices.default", {T(xf), Is({2, 2}), Is({2, 2})});
    tg.output(mp[0]);
    tg.output(mp[1]);
    tg.output(tg.op("aten.any.dim", {T(tg.op("aten.gt.Scalar", {T(x), F(0.5)})), I(3)}));
    tg.output(tg.op("aten.amax.default", {T(x), Is({1})}));
    tg.output(tg.op("aten.sum.dim_IntList", {T(tg.op("aten.gt.Scalar", {T(x), F(0)})), Is({2})}));
  }
  std::vector<std::pair<std::string, Graph>> graphs;
  graphs.push_back({"reductions", tg.g});
  for (const char* m : {"mlp", "norms", "block", "convnet", "embed", "berttiny"})
    graphs.push_back({m, decompose(import_graph(fixture(std::string(m) + ".pt2")))});
  for (auto& [m, g] : graphs) {
    CAPTURE(m);
    PtxProgram pp = compile_inductor_ptx(g, {}, "sm_90", libdevice);
    // Every kernel of the CUDA plan (which folds addmm epilogues into cuBLASLt calls and runs
    // convolutions on cuDNN, so it may have fewer kernels than the CPU plan) has its PTX.
    int planned = 0;
    for (size_t at = 0; (at = pp.ir_post_fusion.find("kernel ", at)) != std::string::npos; ++at)
      planned += at == 0 || pp.ir_post_fusion[at - 1] == '\n';
    REQUIRE(int(pp.kernels.size()) == planned);
    for (const PtxKernelInfo& k : pp.kernels) {
      CAPTURE(k.name);
      CHECK(k.ptx.find(".visible .entry " + k.name + "(") != std::string::npos);
      CHECK(k.ptx.find(".target sm_90") != std::string::npos);
      CHECK(k.block >= 32);
      CHECK(k.block <= 1024);
      std::string ptxas = "/usr/local/cuda/bin/ptxas";
      if (!std::ifstream(ptxas)) continue;
      std::string path = "/tmp/fxc_codegen_test_" + k.name + ".ptx";
      std::ofstream(path) << k.ptx;
      CHECK(std::system((ptxas + " -arch=sm_90 " + path + " -o /dev/null").c_str()) == 0);
      std::remove(path.c_str());
    }
  }
  // A softmax row reduces across the block through shared memory.
  Graph g = import_graph(fixture("norms.core.pt2"));
  PtxProgram pp = compile_inductor_ptx(g, {}, "sm_90", libdevice);
  REQUIRE(pp.kernels.size() == 1);
  CHECK(pp.kernels[0].block == 128);
  CHECK(pp.kernels[0].ptx.find("bar.sync") != std::string::npos);
  CHECK(pp.kernels[0].ptx.find(".shared") != std::string::npos);
}

TEST_CASE("codegen: compiling the same graph twice gives byte-identical IR, kernels and plan") {
  for (const char* m : {"block", "embed", "convnet"}) {
    CAPTURE(m);
    Graph g = decompose(import_graph(fixture(std::string(m) + ".pt2")));
    CompiledGraph a = compile_inductor(g, {});
    CompiledGraph b = compile_inductor(g, {});
    CHECK(a.ir_pre_fusion() == b.ir_pre_fusion());
    CHECK(a.ir_post_fusion() == b.ir_post_fusion());
    CHECK(a.fusion_log() == b.fusion_log());
    CHECK(a.output_code() == b.output_code());
    REQUIRE(a.kernels().size() == b.kernels().size());
    for (size_t i = 0; i < a.kernels().size(); ++i) {
      CHECK(a.kernels()[i].name == b.kernels()[i].name);
      CHECK(a.kernels()[i].ll == b.kernels()[i].ll);
    }
  }
}

TEST_CASE("codegen: a profiled run times every kernel and extern call with its bytes") {
  CompiledGraph cg = compile_inductor(import_graph(fixture("mlp.core.pt2")), {});
  IO io = read_io("mlp");
  std::vector<StepProfile> prof;
  auto outs = cg.run_profiled(io.inputs, &prof);
  CHECK(compare_tensors(outs[0], io.outputs[0], CompareOptions{1e-4, 1e-4, true, true}).ok);
  REQUIRE(prof.size() == 4);
  CHECK_FALSE(prof[0].kernel);
  CHECK(prof[1].kernel);
  CHECK(prof[1].name == "fused_addmm_relu_pow_0");
  // The epilogue reads the product [64, 256] and the bias [256] and writes [64, 256].
  CHECK(prof[1].bytes == (64 * 256 * 2 + 256) * 4);
  // mm reads x [64, 256] and the weight [256, 256] and writes [64, 256].
  CHECK(prof[0].bytes == (64 * 256 * 2 + 256 * 256) * 4);
  for (auto& p : prof) CHECK(p.ms >= 0);
}

TEST_CASE("cuda gpu inductor: every fixture matches PyTorch on the device (PTX kernels, cuBLASLt)" *
          doctest::test_suite("gpu")) {
  if (!fxc::testing::have_cuda()) return;
  InductorOptions o;
  o.cuda = true;
  for (const char* m : {"mlp", "norms", "block", "convnet", "embed", "berttiny"}) {
    CAPTURE(m);
    Graph g = decompose(import_graph(fixture(std::string(m) + ".pt2")));
    CompiledGraph cg = compile_inductor(g, o);
    IO io = read_io(m);
    auto outs = cg.run(io.inputs);
    REQUIRE(outs.size() >= io.outputs.size());
    for (size_t i = 0; i < io.outputs.size(); ++i) {
      CompareOptions co;
      co.rtol = co.atol = 1e-4;
      CompareResult r = compare_tensors(outs[i], io.outputs[i], co);
      INFO("output " << i << ": " << r.message);
      CHECK(r.ok);
    }
    for (const GeneratedKernel& k : cg.kernels()) CHECK(!k.ptx.empty());
  }
}
