// --max-autotune on CUDA: the mapping candidates of a kernel (compile-only, no GPU needed) and,
// on a GPU, every candidate's results, cached choices and a tuned run against the host reference.
#include "aot_testing.h"
#include "codegen/autotune_cuda.h"
#include "codegen/inductor.h"
#include "codegen/llvm_codegen.h"
#include "cuda_testing.h"
#include "frontend/diag.h"
#include "passes/decompose.h"
#include "passes/fuse.h"
#include "passes/lower.h"
#include "runtime/autotune_cache.h"
#include "runtime/compare.h"
#include "runtime/cublaslt.h"
#include "runtime/cuda_driver.h"
#include "runtime/interpreter.h"
#include "test_files.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

using namespace fxc;
using namespace fxc::testing;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// softmax(gelu(layer_norm(x)) + x) over rows of `cols` (one persistent-row kernel), and a
/// softmax over many rows of 4 (a thread per row), float32.
TestGraph tuned_graph(int64_t rows, int64_t cols) {
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::F32, {rows, cols}, tg.random_values(rows * cols, -2, 2));
  ValueId w = tg.input_values("w", DType::F32, {cols}, tg.random_values(cols, 0.5, 1.5));
  ValueId b = tg.input_values("b", DType::F32, {cols}, tg.random_values(cols, -0.5, 0.5));
  ValueId ln = tg.op("aten.layer_norm.default", {T(x), Is({cols}), T(w), T(b)});
  ValueId y = tg.op("aten.add.Tensor", {T(tg.op("aten.gelu.default", {T(ln)})), T(x)});
  tg.output(tg.op("aten._softmax.default", {T(y), I(-1), B(false)}));
  ValueId s = tg.input_values("s", DType::F32, {70001, 4}, tg.random_values(70001 * 4, -2, 2));
  tg.output(tg.op("aten._softmax.default", {T(s), I(-1), B(false)}));
  tg.g = decompose(tg.g);
  return tg;
}

/// The autotune log, one line each.
std::string log_of(const CompiledGraph& cg) {
  std::string log;
  for (const std::string& l : cg.autotune_log()) log += l + "\n";
  return log;
}

/// A CUDA compile with --max-autotune remembering its choices in `dir`.
InductorOptions tuned_options(const fs::path& dir) {
  InductorOptions o;
  o.cuda = true;
  o.max_autotune = true;
  o.autotune_dir = dir.string();
  return o;
}

} // namespace

TEST_CASE("cuda autotune: mapping candidates start with the heuristic's and all compile") {
  if (!have_libdevice()) return;
  TestGraph tg = tuned_graph(300, 2048);
  LoopProgram p = lower(tg.g);
  Schedule s = fuse(p);
  REQUIRE(s.kernels.size() == 2);
  int persistent_kernels = 0;
  for (const Kernel& k : s.kernels) {
    std::vector<RowMapping> c = nvptx_mapping_candidates(p, k);
    INFO(k.name);
    REQUIRE(!c.empty());
    CHECK(c[0] == nvptx_row_mapping(p, k));
    CHECK(c.size() >= 3);
    std::set<std::string> labels;
    for (const RowMapping& m : c) labels.insert(format_mapping(m));
    CHECK(labels.size() == c.size()); // no two alike
    std::vector<PtxRequest> req;
    for (const RowMapping& m : c) req.push_back({&k, m});
    std::vector<PtxKernel> ptx = generate_ptx(p, req, "sm_90", kLibdevice);
    REQUIRE(ptx.size() == c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      INFO(format_mapping(c[i]));
      CHECK(ptx[i].mapping == c[i]);
      CHECK(ptx[i].block == (c[i].block > 0 ? c[i].block : c[i].rows));
      CHECK(contains(ptx[i].ptx, ".entry " + k.name));
    }
    if (c[0].persistent) {
      ++persistent_kernels;
      // 2048 floats = 512 vectors: 64 threads hold 8 each (the most), 128 hold 4 (the
      // heuristic), up to 512 threads with one; and the looping form.
      CHECK(format_mapping(c[0]) == "block=128 vec=4 persistent chunks=4");
      CHECK(labels.count("block=64 vec=4 persistent chunks=8"));
      CHECK(labels.count("block=512 vec=4 persistent chunks=1"));
      CHECK(labels.count("block=512 vec=4"));
      CHECK_FALSE(labels.count("block=32 vec=4 persistent chunks=16"));
      // Pipelined rows: 2 per block still give 150 blocks, 4 would leave multiprocessors idle.
      CHECK(labels.count("block=128 vec=4 persistent chunks=4 rows=2"));
      CHECK_FALSE(labels.count("block=128 vec=4 persistent chunks=4 rows=4"));
    } else {
      CHECK(format_mapping(c[0]) == "rows=256");
      CHECK(labels.count("rows=64"));
      CHECK(labels.count("block=32 vec=1"));
    }
  }
  CHECK(persistent_kernels == 1);
}

TEST_CASE("cuda autotune: without a device --max-autotune cannot time candidates") {
  if (cuda::Context::unavailable_reason().empty()) return; // the GPU case below covers it
  TestGraph tg = tuned_graph(300, 256);
  InductorOptions o;
  o.cuda = true;
  o.load_cuda = false;
  o.max_autotune = true;
  try {
    compile_inductor(tg.g, o);
    FAIL("compiled without a device");
  } catch (const Error& e) {
    CHECK(contains(e.what(), "--max-autotune needs a CUDA device to time its candidates"));
  }
}

TEST_CASE("cuda gpu autotune: every candidate matches the host, choices are cached and reused" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  TestGraph tg = tuned_graph(300, 2048);
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  LoopProgram p = lower(tg.g);
  Schedule s = fuse(p);
  PtxProgram heuristic = compile_inductor_ptx(tg.g, {}, "sm_90", kLibdevice);
  REQUIRE(heuristic.kernels.size() == s.kernels.size());
  const cuda::DeviceInfo& info = cuda::Context::get().info();
  const std::string device = "cuda " + info.name + " " + info.arch();

  // Each candidate in turn, forced through a cached choice: it runs without timing.
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const Kernel& k = s.kernels[ki];
    REQUIRE(heuristic.kernels[ki].name == k.name);
    std::string key = AutotuneCache::kernel_key(heuristic.kernels[ki].ll,
                                                "xnumel=" + std::to_string(k.xnumel) +
                                                    " rnumel=" + std::to_string(k.rnumel));
    for (const RowMapping& m : nvptx_mapping_candidates(p, k)) {
      INFO(k.name << " " << format_mapping(m));
      testing::TempDir tmp("fxc-autotune-cuda-each-");
      const fs::path& dir = tmp.path;
      AutotuneCache cache(dir.string());
      AutotuneEntry e;
      e.kernel = k.name;
      e.choice = format_mapping(m);
      cache.insert(device, key, e);
      std::string err;
      REQUIRE(cache.save(&err));
      CompiledGraph cg = compile_inductor(tg.g, tuned_options(dir));
      std::string log = log_of(cg);
      INFO(log);
      CHECK(contains(log, k.name + ": cached " + format_mapping(m)));
      bool found = false;
      for (const PlanKernel& pk : cg.plan().kernels)
        if (pk.name == k.name) {
          found = true;
          CHECK(pk.cuda_block == (m.block > 0 ? m.block : m.rows));
        }
      CHECK(found);
      check_close(cg.run(tg.inputs), want, 1e-5);
    }
  }

  // A tuned compile times the candidates, stores its choices, and a second compile reuses them.
  testing::TempDir tmp("fxc-autotune-cuda-tuned-");
  const fs::path& dir = tmp.path;
  InductorOptions o = tuned_options(dir);
  CompiledGraph first = compile_inductor(tg.g, o);
  std::string log = log_of(first);
  INFO(log);
  CHECK(contains(log, ": candidates block=128 vec=4 persistent chunks=4 "));
  CHECK_FALSE(contains(log, "discarded"));
  CHECK(contains(log, ": candidates rows=256 "));
  CHECK(fs::exists(dir / "autotune.json"));
  check_close(first.run(tg.inputs), want, 1e-5);
  CompiledGraph second = compile_inductor(tg.g, o);
  std::string log2 = log_of(second);
  INFO(log2);
  CHECK_FALSE(contains(log2, "candidates"));
  CHECK(contains(log2, ": cached "));
  for (size_t i = 0; i < first.plan().kernels.size(); ++i)
    CHECK(first.plan().kernels[i].cuda_block == second.plan().kernels[i].cuda_block);
  check_close(second.run(tg.inputs), want, 1e-5);
}

TEST_CASE("cuda gpu autotune: matmuls time cuBLASLt's algorithms and keep the choice" *
          doctest::test_suite("gpu")) {
  if (!have_cuda()) return;
  TestGraph tg;
  ValueId x = tg.input_values("x", DType::F32, {256, 512}, tg.random_values(256 * 512, -1, 1));
  ValueId w = tg.input_values("w", DType::F32, {384, 512}, tg.random_values(384 * 512, -1, 1));
  ValueId b = tg.input_values("b", DType::F32, {384}, tg.random_values(384, -1, 1));
  tg.output(tg.op("aten.relu.default", {T(tg.op("aten.linear.default", {T(x), T(w), T(b)}))}));
  tg.g = decompose(tg.g);
  std::vector<Tensor> want = interpret(tg.g, tg.inputs);
  testing::TempDir tmp("fxc-autotune-cuda-gemm-");
  const fs::path& dir = tmp.path;
  InductorOptions o = tuned_options(dir);
  CompiledGraph cg = compile_inductor(tg.g, o);
  std::string log = log_of(cg);
  INFO(log);
  // cuBLASLt offers several algorithms for this product: they are timed.
  CHECK(contains(log, ": candidates algo=0 "));
  CHECK(contains(log, ", algo=1 "));
  CHECK_FALSE(contains(log, "discarded"));
  REQUIRE(cg.plan().externs.size() == 1);
  int algo = cg.plan().externs[0].algo;
  CHECK(algo >= 0);
  CHECK(algo < cuda::CublasLt::kMaxAlgorithms);
  check_close(cg.run(tg.inputs), want, 1e-4);
  CompiledGraph again = compile_inductor(tg.g, o);
  CHECK(again.plan().externs[0].algo == algo);
  std::string log2 = log_of(again);
  CHECK(contains(log2, ": cached algo=" + std::to_string(algo)));
}
