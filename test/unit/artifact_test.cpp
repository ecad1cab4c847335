// Tests of .fxo artifacts: the ELF loader on real kernel objects, the format, guards, the C API.
#include "codegen/inductor.h"
#include "codegen/llvm_codegen.h"
#include "driver/tensor_io.h"
#include "frontend/builder.h"
#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/import.h"
#include "frontend/safetensors.h"
#include "frontend/specialize.h"
#include "fxc/plugin.h"
#include "fxc/runtime.h"
#include "fxc/runtime.hpp"
#include "passes/decompose.h"
#include "runtime/artifact.h"
#include "runtime/compare.h"
#include "runtime/cuda_driver.h"
#include "runtime/elf_loader.h"
#include "runtime/interpreter.h"
#include "skip.h"

#include <doctest/doctest.h>

#include <dlfcn.h>
#include <elf.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

using namespace fxc;

namespace {

std::string fixture(const std::string& name) {
  return std::string(FXC_FIXTURES_DIR) + "/" + name;
}

/// The tensors `prefix`0, `prefix`1, ... of a fixture's safetensors file (`name`: its path under
/// test/fixtures), in order.
std::vector<Tensor> numbered_tensors(const std::string& name, const std::string& prefix) {
  auto all = read_safetensors(fixture(name));
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    auto it = all.find(prefix + std::to_string(i));
    if (it == all.end()) break;
    out.push_back(Tensor::from_weight(it->second));
  }
  return out;
}

std::vector<Tensor> io_tensors(const std::string& model, const std::string& prefix) {
  return numbered_tensors(model + ".io.safetensors", prefix);
}

void check_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  REQUIRE(got.size() >= want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CompareOptions co;
    co.rtol = co.atol = 1e-4;
    CompareResult r = compare_tensors(got[i], want[i], co);
    INFO("output " << i << ": " << r.message);
    CHECK(r.ok);
  }
}

/// A compiled fixture and the artifact holding it (CPU, inference).
struct Compiled {
  Graph graph;
  CompiledGraph cg;
  CompiledArtifact artifact;
};

Compiled compile_graph(Graph graph, const std::string& model) {
  Compiled c;
  c.graph = std::move(graph);
  c.graph.name = model;
  c.cg = compile_inductor(c.graph, {});
  CompiledArtifact& a = c.artifact;
  a.name = model;
  a.backend = "inductor";
  a.device = "cpu";
  a.mode = "inference";
  a.inputs = input_specs(c.graph);
  ArtifactGraph g;
  g.role = "inference";
  g.plan = c.cg.plan();
  g.objects = c.cg.object_codes();
  g.constant_names = name_constants(g.plan, c.graph);
  for (size_t i = 0; i < g.plan.outputs.size(); ++i)
    a.outputs.push_back("output_" + std::to_string(i));
  a.graphs.push_back(g);
  return c;
}

Compiled compile_fixture(const std::string& model) {
  return compile_graph(decompose(import_graph(fixture(model + ".pt2"))), model);
}

/// log(x) over f32[64]: its kernel calls logf, an external symbol.
Graph log_graph() {
  Graph g;
  g.source = "log.fxg";
  TensorMeta m;
  m.dtype = DType::F32;
  m.sizes = {64};
  m.strides = {1};
  ValueId x = g.add_value("x", m);
  g.inputs.push_back({x, InputKind::UserInput, "x", true});
  g.outputs = {add_node1(g, "aten.log.default", {{"", Arg::of_tensor(x)}})};
  return g;
}

std::vector<Tensor> values(const NamedResults& rs) {
  std::vector<Tensor> out;
  for (auto& [name, t] : rs) out.push_back(t);
  return out;
}

/// The message of the fxc::Error that `f` throws ("" when it does not throw).
template <class F> std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Header offsets of an ELF section table entry field, for planting corruptions.
const Elf64_Shdr* section(const std::string& obj, const char* name) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, obj.data(), sizeof eh);
  auto* sh = reinterpret_cast<const Elf64_Shdr*>(obj.data() + eh.e_shoff);
  const char* names = obj.data() + sh[eh.e_shstrndx].sh_offset;
  for (int i = 0; i < eh.e_shnum; ++i)
    if (std::strcmp(names + sh[i].sh_name, name) == 0) return &sh[i];
  return nullptr;
}

} // namespace

TEST_CASE("artifact: CPU plans round-trip through .fxo bytes and match PyTorch") {
  for (const char* model : {"mlp", "norms", "block"}) {
    INFO(model);
    Compiled c = compile_fixture(model);
    std::string bytes = serialize_artifact(c.artifact);
    CHECK(serialize_artifact(c.artifact) == bytes); // deterministic
    CHECK(is_artifact(bytes));
    auto m = LoadedModel::load(parse_artifact(bytes, "t.fxo"), "t.fxo", 2);
    check_close(values(m->run(io_tensors(model, "input_"))), io_tensors(model, "output_"));
    // The loaded kernels compute what the JIT-compiled ones do.
    std::vector<Tensor> jit = c.cg.run(io_tensors(model, "input_"));
    check_close(values(m->run(io_tensors(model, "input_"))), jit);
  }
}

TEST_CASE("artifact: interpreted graphs (eager backend) keep their weights") {
  Graph g = import_graph(fixture("block.pt2"));
  CompiledArtifact a;
  a.name = "block";
  a.backend = "eager";
  a.device = "cpu";
  a.mode = "inference";
  a.inputs = input_specs(g);
  ArtifactGraph ag;
  ag.kind = ArtifactGraph::Kind::Interpreted;
  ag.role = "inference";
  ag.graph = std::make_shared<Graph>(g);
  a.graphs.push_back(ag);
  for (size_t i = 0; i < g.outputs.size(); ++i) a.outputs.push_back("output_" + std::to_string(i));
  std::string bytes = serialize_artifact(a);
  auto m = LoadedModel::load(parse_artifact(bytes, "b.fxo"), "b.fxo");
  check_close(values(m->run(io_tensors("block", "input_"))), io_tensors("block", "output_"));
}

TEST_CASE("elf loader: real kernel objects load; corrupt ones are clean errors") {
  Compiled c = compile_graph(log_graph(), "logs");   // logf: GOT64, GOTPC64, GOTOFF64 relocations
  REQUIRE(c.artifact.graphs[0].objects.size() == 1); // one kernel: one object
  const std::string obj = c.artifact.graphs[0].objects[0];
  auto loaded = load_elf_object(obj, "k.o");
  for (const PlanKernel& k : c.artifact.graphs[0].plan.kernels) CHECK(loaded->function(k.name));
  CHECK(loaded->function("no_such_kernel") == nullptr);

  std::string bad = obj;
  bad[1] = 'X';
  CHECK(error_of([&] { load_elf_object(bad, "k.o"); }).find("not an ELF file") !=
        std::string::npos);
  CHECK(error_of([&] {
          load_elf_object(obj.substr(0, 40), "k.o");
        }).find("k.o: error: kernel object") == 0);

  // An unknown relocation type is named.
  const Elf64_Shdr* rela = section(obj, ".rela.ltext");
  REQUIRE(rela);
  bad = obj;
  Elf64_Rela r;
  std::memcpy(&r, bad.data() + rela->sh_offset, sizeof r);
  r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), R_X86_64_PLT32);
  std::memcpy(bad.data() + rela->sh_offset, &r, sizeof r);
  CHECK(error_of([&] {
          load_elf_object(bad, "k.o");
        }).find("unsupported relocation R_X86_64_PLT32") != std::string::npos);

  // A symbol the process does not have is named.
  bad = obj;
  size_t at = bad.find(std::string("logf\0", 5));
  REQUIRE(at != std::string::npos);
  bad[at] = 'z'; // "zogf"
  CHECK(error_of([&] { load_elf_object(bad, "k.o"); }).find("undefined symbol 'zogf'") !=
        std::string::npos);

  // Every truncation and single-byte corruption of the headers is an error or a load, never a
  // crash (sections' contents are code and are not checked).
  for (size_t n = 0; n < obj.size(); n += 61) {
    try {
      load_elf_object(obj.substr(0, n), "k.o");
    } catch (const Error&) {
    }
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, obj.data(), sizeof eh);
  std::vector<size_t> spots;
  for (size_t i = 0; i < sizeof eh; ++i) spots.push_back(i);
  for (size_t i = 0; i < size_t(eh.e_shnum) * sizeof(Elf64_Shdr); i += 3)
    spots.push_back(eh.e_shoff + i);
  for (size_t i = 0; i < rela->sh_size; i += 5) spots.push_back(rela->sh_offset + i);
  for (size_t spot : spots)
    for (unsigned char v : {0x00, 0x7f, 0xff}) {
      bad = obj;
      bad[spot] = char(v);
      try {
        load_elf_object(bad, "k.o");
      } catch (const Error&) {
      }
    }
}

TEST_CASE("artifact: foreign, truncated, corrupt and newer files are clean errors") {
  Compiled c = compile_fixture("mlp");
  const std::string bytes = serialize_artifact(c.artifact);
  auto err = [](const std::string& b) { return error_of([&] { parse_artifact(b, "m.fxo"); }); };
  CHECK(err("PK\x03\x04 a zip") == "m.fxo: error: not an fxc artifact (no FXO magic number)");
  CHECK(err(bytes.substr(0, 20)).find("truncated artifact") != std::string::npos);
  CHECK(err(bytes.substr(0, bytes.size() - 1)).find("truncated artifact") != std::string::npos);
  CHECK(err(bytes + "x").find("1 bytes after the weights") != std::string::npos);
  std::string bad = bytes;
  bad[100] ^= 1; // in the compressed payload
  CHECK(err(bad) == "m.fxo: error: corrupt artifact: checksum mismatch");
  bad = bytes;
  bad[bad.size() - 3] ^= 1; // in the last weight
  CHECK(err(bad).find("corrupt artifact: checksum mismatch in the weights (bytes 0 to ") !=
        std::string::npos);
  bad = bytes;
  bad[4] = 9;
  CHECK(err(bad).find("artifact format version 9 (written by fxc") != std::string::npos);
  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < bytes.size(); n += 37) CHECK(!err(bytes.substr(0, n)).empty());

  // Well-formed files whose plan would make the executor touch memory it does not own.
  CompiledArtifact a = c.artifact;
  a.graphs[0].plan.kernels[0].arg_slots[0] = 999;
  CHECK(err(serialize_artifact(a)).find("uses slot 999") != std::string::npos);
  a = c.artifact;
  a.graphs[0].plan.steps.erase(a.graphs[0].plan.steps.begin()); // the first alloc
  CHECK(err(serialize_artifact(a)).find("before it is allocated") != std::string::npos);
  a = c.artifact;
  a.graphs[0].plan.outputs[0].meta.sizes[0] *= 2;
  CHECK(err(serialize_artifact(a)).find("reaches outside slot") != std::string::npos);
  a = c.artifact;
  a.inputs.pop_back();
  CHECK(err(serialize_artifact(a)).find("guards for a graph of") != std::string::npos);
}

TEST_CASE("artifact: every run checks the guards first and names the input and the guard") {
  Compiled c = compile_fixture("mlp");
  auto m = LoadedModel::load(parse_artifact(serialize_artifact(c.artifact), "m.fxo"), "m.fxo");
  std::vector<Tensor> in = io_tensors("mlp", "input_");
  REQUIRE(in.size() == 1);
  CHECK(m->check_guards(in).empty());
  const TensorMeta& want = c.artifact.inputs[0].meta;
  std::vector<int64_t> half = want.sizes;
  half[0] /= 2;
  std::string e = error_of([&] { m->run({Tensor::empty(DType::F32, half)}); });
  CHECK(e == "m.fxo: error: input_0 '" + c.artifact.inputs[0].name +
                 "': shape guard failed: expected " + format_meta(want) + ", got " +
                 format_meta(Tensor::empty(DType::F32, half).meta()));
  CHECK(m->check_guards({Tensor::empty(DType::F64, want.sizes)}) ==
        "input_0 '" + c.artifact.inputs[0].name + "': dtype guard failed: expected f32, got f64");
  std::vector<int64_t> rank3 = want.sizes;
  rank3.push_back(1);
  CHECK(m->check_guards({Tensor::empty(DType::F32, rank3)}) ==
        "input_0 '" + c.artifact.inputs[0].name + "': shape guard failed: expected " +
            format_meta(want) + ", got " + format_meta(Tensor::empty(DType::F32, rank3).meta()));
  CHECK(m->check_guards({}) == "expected 1 inputs, got 0");
  Tensor t = Tensor::empty(DType::F32, {want.sizes[1], want.sizes[0]});
  Tensor transposed = t.as_strided(want.sizes, {1, want.sizes[0]}, 0);
  CHECK(m->check_guards({transposed}).find("strides guard failed") != std::string::npos);
}

TEST_CASE("C API: load from memory, describe, run with caller buffers, guard errors") {
  Compiled c = compile_fixture("mlp");
  std::string bytes = serialize_artifact(c.artifact);
  fxc_model* m = nullptr;
  REQUIRE(fxc_model_load_memory(bytes.data(), bytes.size(), "m.fxo", &m) == FXC_OK);
  REQUIRE(fxc_model_num_inputs(m) == 1);
  REQUIRE(fxc_model_num_outputs(m) == 1);
  fxc_tensor_info in, out;
  REQUIRE(fxc_model_input_info(m, 0, &in) == FXC_OK);
  REQUIRE(fxc_model_output_info(m, 0, &out) == FXC_OK);
  CHECK(std::string(fxc_dtype_name(in.dtype)) == "f32");
  CHECK(fxc_model_input_info(m, 1, &in) == FXC_ERROR_INVALID_ARGUMENT);
  fxc_model_input_info(m, 0, &in);
  Tensor x = io_tensors("mlp", "input_")[0].contiguous();
  REQUIRE(in.nbytes == size_t(x.numel()) * 4);
  std::vector<float> y(out.nbytes / 4);
  const void* ins[] = {x.raw_data()};
  void* outs[] = {y.data()};
  REQUIRE(fxc_model_run(m, ins, outs) == FXC_OK);
  Tensor ref = io_tensors("mlp", "output_")[0];
  Tensor got = Tensor::empty(DType::F32, ref.sizes());
  std::memcpy(got.raw_data(), y.data(), out.nbytes);
  check_close({got}, {ref});

  int32_t dtypes[] = {in.dtype}, ranks[] = {in.rank};
  std::vector<int64_t> wrong(in.sizes, in.sizes + in.rank);
  wrong[0] += 1;
  const int64_t* sizes[] = {wrong.data()};
  CHECK(fxc_model_run_checked(m, ins, dtypes, ranks, sizes, outs) == FXC_ERROR_GUARD);
  CHECK(std::string(fxc_last_error()).find("m.fxo: error: input_0 '") == 0);
  CHECK(std::string(fxc_last_error()).find("shape guard failed") != std::string::npos);
  wrong[0] -= 1;
  CHECK(fxc_model_run_checked(m, ins, dtypes, ranks, sizes, outs) == FXC_OK);
  int32_t f64[] = {FXC_DTYPE_F64};
  CHECK(fxc_model_run_checked(m, ins, f64, ranks, sizes, outs) == FXC_ERROR_GUARD);
  CHECK(std::string(fxc_last_error()) == "m.fxo: error: input_0 '" + std::string(in.name) +
                                             "': dtype guard failed: expected f32, got f64");
  fxc_model_free(m);

  fxc_model* none = nullptr;
  CHECK(fxc_model_load_memory("garbage", 7, "g.fxo", &none) == FXC_ERROR_BAD_ARTIFACT);
  CHECK(std::string(fxc_last_error()) == "g.fxo: error: not an fxc artifact (no FXO magic number)");
  CHECK(none == nullptr);
  CHECK(fxc_model_load_file("/nonexistent.fxo", &none) == FXC_ERROR_IO);
}

namespace {

uint64_t u64_at(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

/// A fresh path in the temporary directory.
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("fxc-artifact-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

} // namespace

namespace {

/// `model` compiled for CUDA into an artifact (every kernel in one PTX module, as `fxc -o`
/// makes it; no GPU needed to build it).
CompiledArtifact cuda_artifact(const std::string& model, const std::string& arch = "sm_90") {
  Compiled c = compile_fixture(model);
  InductorOptions io;
  io.cuda = true;
  io.load_cuda = false;
  io.kernel_ptx = false;
  CompiledGraph cg = compile_inductor(c.graph, io);
  CompiledArtifact a = c.artifact;
  a.device = "cuda";
  a.cuda_arch = arch;
  a.graphs[0].plan = cg.plan();
  for (PlanKernel& k : a.graphs[0].plan.kernels) k.fn = nullptr;
  a.graphs[0].objects.clear();
  a.graphs[0].ptx = cg.ptx_module();
  a.graphs[0].constant_names = name_constants(a.graphs[0].plan, c.graph);
  return a;
}

} // namespace

TEST_CASE("C API: load options, device runs refused where they cannot be") {
  fxc_load_options d = fxc_load_options_default();
  CHECK(d.model_name == nullptr);
  CHECK(d.cuda_device == -1);
  CHECK(d.num_threads == 0);

  Compiled c = compile_fixture("mlp");
  std::string bytes = serialize_artifact(c.artifact);
  fxc_load_options o = fxc_load_options_default();
  o.num_threads = 1;
  o.model_name = "mlp";
  fxc_model* m = nullptr;
  REQUIRE(fxc_model_load_memory_ex(bytes.data(), bytes.size(), "m.fxo", &o, &m) == FXC_OK);
  CHECK(fxc_model_cuda_device(m) == -1); // a CPU artifact
  CHECK(fxc_model_cuda_device(nullptr) == -1);
  Tensor x = io_tensors("mlp", "input_")[0].contiguous();
  fxc_tensor_info out;
  REQUIRE(fxc_model_output_info(m, 0, &out) == FXC_OK);
  std::vector<float> y(out.nbytes / 4);
  const void* ins[] = {x.raw_data()};
  void* outs[] = {y.data()};
  REQUIRE(fxc_model_run(m, ins, outs) == FXC_OK);
  CHECK(fxc_model_run_cuda(m, ins, outs, nullptr) == FXC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(fxc_last_error()) ==
        "m.fxo: error: fxc_model_run_cuda needs a CUDA inference artifact (this one is cpu, "
        "inference): use fxc_model_run");
  CHECK(fxc_model_run_cuda(nullptr, ins, outs, nullptr) == FXC_ERROR_INVALID_ARGUMENT);
  fxc_model_free(m);

  fxc_model* none = nullptr;
  o.cuda_device = -2;
  CHECK(fxc_model_load_memory_ex(bytes.data(), bytes.size(), "m.fxo", &o, &none) ==
        FXC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(fxc_last_error()).find("cuda_device >= -1") != std::string::npos);
  o = fxc_load_options_default();
  o.model_name = "decoder";
  CHECK(fxc_model_load_memory_ex(bytes.data(), bytes.size(), "m.fxo", &o, &none) ==
        FXC_ERROR_INVALID_ARGUMENT);
  CHECK(fxc_model_load_file_ex("/nonexistent.fxo", nullptr, &none) == FXC_ERROR_IO);
  CHECK(none == nullptr);

  // A CUDA artifact on a device that is not there: a load error naming it (without a GPU, the
  // driver's absence).
  if (!fxc::testing::have_libdevice()) return;
  std::string cuda_bytes = serialize_artifact(cuda_artifact("mlp"));
  o = fxc_load_options_default();
  o.cuda_device = 99;
  CHECK(fxc_model_load_memory_ex(cuda_bytes.data(), cuda_bytes.size(), "c.fxo", &o, &none) ==
        FXC_ERROR_LOAD);
  std::string why = fxc_last_error();
  INFO(why);
  if (cuda::Context::unavailable_reason().empty())
    CHECK(why.find("c.fxo: error: no CUDA driver/device: device 99 requested") == 0);
  else
    CHECK(why.find("c.fxo: error: no CUDA driver/device") == 0);
  CHECK(none == nullptr);
}

namespace {

/// The few driver calls a caller of fxc_model_run_cuda makes on its own stream.
struct CallerStreams {
  int (*create)(void**, unsigned) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*sync)(void*) = nullptr;
  int (*memset8)(uint64_t, unsigned char, size_t, void*) = nullptr;
  int (*copy)(uint64_t, uint64_t, size_t, void*) = nullptr;
  CallerStreams() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib);
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cuStreamCreate"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cuStreamDestroy_v2"));
    sync = reinterpret_cast<decltype(sync)>(dlsym(lib, "cuStreamSynchronize"));
    memset8 = reinterpret_cast<decltype(memset8)>(dlsym(lib, "cuMemsetD8Async"));
    copy = reinterpret_cast<decltype(copy)>(dlsym(lib, "cuMemcpyDtoDAsync_v2"));
    REQUIRE((create && destroy && sync && memset8 && copy));
  }
};

/// Runs `m` (the mlp fixture's CUDA artifact, loaded on `ctx`'s device) on device buffers on a
/// stream of the caller's, three times; each run's input arrives on that stream behind 1 GiB of
/// memsets, and each output is copied away on it afterwards. Returns the last output.
std::vector<float> run_on_caller_stream(fxc_model* m, cuda::Context& ctx, const Tensor& x) {
  CallerStreams cs;
  fxc_tensor_info in, out;
  REQUIRE(fxc_model_input_info(m, 0, &in) == FXC_OK);
  REQUIRE(fxc_model_output_info(m, 0, &out) == FXC_OK);
  const size_t busy = size_t(1) << 28;
  cuda::DevicePtr src = ctx.mem_alloc(in.nbytes), din = ctx.mem_alloc(in.nbytes);
  cuda::DevicePtr dout = ctx.mem_alloc(out.nbytes), dcopy = ctx.mem_alloc(out.nbytes);
  cuda::DevicePtr scratch = ctx.mem_alloc(busy);
  ctx.copy_to_device(src, x.raw_data(), in.nbytes);
  void* stream = nullptr;
  REQUIRE(cs.create(&stream, 1 /* CU_STREAM_NON_BLOCKING */) == 0);
  std::vector<float> y(out.nbytes / 4);
  for (int run = 0; run < 3; ++run) {
    ctx.fill_bytes(din, 0, in.nbytes);
    ctx.fill_bytes(dout, 0xff, out.nbytes);
    ctx.synchronize();
    for (int k = 0; k < 4; ++k) REQUIRE(cs.memset8(scratch, uint8_t(k), busy, stream) == 0);
    REQUIRE(cs.copy(din, src, in.nbytes, stream) == 0);
    const void* ins[] = {reinterpret_cast<const void*>(uintptr_t(din))};
    void* outs[] = {reinterpret_cast<void*>(uintptr_t(dout))};
    REQUIRE(fxc_model_run_cuda(m, ins, outs, stream) == FXC_OK);
    REQUIRE(cs.copy(dcopy, dout, out.nbytes, stream) == 0);
    REQUIRE(cs.sync(stream) == 0);
    ctx.copy_to_host(y.data(), dcopy, out.nbytes);
  }
  cs.destroy(stream);
  for (cuda::DevicePtr p : {src, din, dout, dcopy, scratch}) ctx.mem_free(p);
  return y;
}

} // namespace

TEST_CASE("cuda gpu C API: an artifact runs on device buffers, the caller's stream and device" *
          doctest::test_suite("gpu")) {
  if (!fxc::testing::have_cuda() || !fxc::testing::have_libdevice()) return;
  cuda::Context& dev0 = cuda::Context::get(0);
  std::string bytes = serialize_artifact(cuda_artifact("mlp", dev0.info().arch()));
  Tensor x = io_tensors("mlp", "input_")[0].contiguous();
  Tensor ref = io_tensors("mlp", "output_")[0];

  fxc_load_options o = fxc_load_options_default();
  o.cuda_device = 0;
  fxc_model* m = nullptr;
  REQUIRE(fxc_model_load_memory_ex(bytes.data(), bytes.size(), "c.fxo", &o, &m) == FXC_OK);
  CHECK(fxc_model_cuda_device(m) == 0);
  std::vector<float> y = run_on_caller_stream(m, dev0, x);
  Tensor got = Tensor::empty(DType::F32, ref.sizes());
  std::memcpy(got.raw_data(), y.data(), y.size() * 4);
  check_close({got}, {ref});
  // Host buffers still work on the same model, and agree.
  std::vector<float> yh(y.size());
  const void* ins[] = {x.raw_data()};
  void* outs[] = {yh.data()};
  REQUIRE(fxc_model_run(m, ins, outs) == FXC_OK);
  CHECK(yh == y);
  fxc_model_free(m);

  // A second device, where the machine has one: the model's buffers and runs live there.
  try {
    cuda::Context& dev1 = cuda::Context::get(1);
    o.cuda_device = 1;
    REQUIRE(fxc_model_load_memory_ex(bytes.data(), bytes.size(), "c.fxo", &o, &m) == FXC_OK);
    CHECK(fxc_model_cuda_device(m) == 1);
    std::vector<float> y1 = run_on_caller_stream(m, dev1, x);
    CHECK(y1 == y);
    fxc_model_free(m);
    MESSAGE("ran on CUDA device 1 too");
  } catch (const cuda::CudaError& e) {
    std::string why = e.what();
    CHECK(why.find("device 1 requested, 1 present") != std::string::npos);
    o.cuda_device = 1;
    CHECK(fxc_model_load_memory_ex(bytes.data(), bytes.size(), "c.fxo", &o, &m) == FXC_ERROR_LOAD);
  }
  cuda::Context::get(0); // leave the default device current
}

TEST_CASE("artifact: several models in one file, each loaded by name") {
  Compiled mlp = compile_fixture("mlp");
  Compiled block = compile_fixture("block");
  Compiled twin = compile_fixture("mlp"); // the same weights under another model name
  twin.artifact.name = "twin";
  std::vector<const CompiledArtifact*> models = {&mlp.artifact, &block.artifact, &twin.artifact};
  std::string bytes = serialize_artifact(models);
  CHECK(serialize_artifact(models) == bytes); // deterministic
  // The twin's weights are the mlp's bytes: the section holds them once.
  std::string one = serialize_artifact(mlp.artifact);
  std::string two = serialize_artifact({&mlp.artifact, &twin.artifact});
  CHECK(u64_at(two, 48) == u64_at(one, 48));

  for (const char* name : {"mlp", "block", "twin"}) {
    INFO(name);
    CompiledArtifact a = parse_artifact(bytes, "all.fxo", name);
    CHECK(a.name == name);
    CHECK(a.models_in_file == std::vector<std::string>{"mlp", "block", "twin"});
    std::string fixture_name = std::string(name) == "block" ? "block" : "mlp";
    auto m = LoadedModel::load(std::move(a), "all.fxo", 2);
    check_close(values(m->run(io_tensors(fixture_name, "input_"))),
                io_tensors(fixture_name, "output_"));
  }
  CHECK(parse_artifact(bytes, "all.fxo").name == "mlp"); // no name: the first
  CHECK(parse_artifact_models(ArtifactBytes::copy(bytes), "all.fxo").size() == 3);
  CHECK(error_of([&] { parse_artifact(bytes, "all.fxo", "decoder"); }) ==
        "all.fxo: error: no model 'decoder' in this artifact (it holds 'mlp', 'block', 'twin')");
  Compiled again = compile_fixture("mlp");
  CHECK(error_of([&] { serialize_artifact({&mlp.artifact, &again.artifact}); }) ==
        "mlp: error: two models named 'mlp' in one artifact (models are chosen by name; rename "
        "one)");
  // One model's file round-trips byte for byte, as before.
  CHECK(serialize_artifact(parse_artifact(one, "m.fxo")) == one);

  // The C API and its C++ wrapper.
  fxc_model* m = nullptr;
  REQUIRE(fxc_model_load_memory_named(bytes.data(), bytes.size(), "all.fxo", "block", &m) ==
          FXC_OK);
  CHECK(std::string(fxc_model_name(m)) == "block");
  REQUIRE(fxc_artifact_num_models(m) == 3);
  CHECK(std::string(fxc_artifact_model_name(m, 2)) == "twin");
  CHECK(fxc_artifact_model_name(m, 3) == nullptr);
  fxc_model_free(m);
  m = nullptr;
  CHECK(fxc_model_load_memory_named(bytes.data(), bytes.size(), "all.fxo", "nope", &m) ==
        FXC_ERROR_INVALID_ARGUMENT);
  CHECK(m == nullptr);
  CHECK(std::string(fxc_last_error()) ==
        "all.fxo: error: no model 'nope' in this artifact (it holds 'mlp', 'block', 'twin')");
  const std::string path = temp_path("all.fxo");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
    std::fclose(f);
  }
  fxc::rt::Model first = fxc::rt::Model::load_file(path);
  CHECK(first.name() == "mlp");
  fxc::rt::Model b = fxc::rt::Model::load_file(path, "block");
  CHECK(b.name() == "block");
  CHECK(b.artifact_models() == std::vector<std::string>{"mlp", "block", "twin"});
  CHECK(b.num_inputs() == block.artifact.inputs.size());
  std::vector<Tensor> in = io_tensors("block", "input_");
  std::vector<const void*> ptrs;
  for (Tensor& t : in) {
    t = t.contiguous();
    ptrs.push_back(t.raw_data());
  }
  std::vector<std::vector<std::byte>> out = b.run(ptrs);
  Tensor ref = io_tensors("block", "output_")[0];
  Tensor got = Tensor::empty(DType::F32, ref.sizes());
  REQUIRE(out[0].size() == size_t(ref.numel()) * 4);
  std::memcpy(got.raw_data(), out[0].data(), out[0].size());
  check_close({got}, {ref});
  std::filesystem::remove(path);
}

TEST_CASE("artifact: weights are raw, aligned, deduplicated by content, checked per chunk") {
  Compiled c = compile_fixture("mlp");
  CompiledArtifact a = c.artifact;
  Plan& p = a.graphs[0].plan;
  REQUIRE(p.constant_slots.size() >= 2);
  std::string before = serialize_artifact(a);
  // Each constant in a storage of its own holding the same bytes, and the table written twice
  // (as a forward and a backward would): deduplicated by content, the weight section is the
  // same size.
  for (auto& [slot, t] : p.constant_slots) {
    Tensor own = Tensor::empty(t.dtype(), t.sizes());
    std::memcpy(own.raw_data(), t.contiguous().raw_data(),
                size_t(t.numel()) * dtype_size(t.dtype()));
    t = own;
  }
  CHECK(serialize_artifact(a) == before);

  const std::string bytes = before;
  uint64_t woff = u64_at(bytes, 40), wsize = u64_at(bytes, 48);
  CHECK(woff % 4096 == 0);
  CHECK(woff + wsize == bytes.size());
  // Each constant's bytes lie raw in the section, 64-byte aligned (page-aligned from 64 KiB).
  CompiledArtifact back = parse_artifact(bytes, "m.fxo");
  for (auto& [slot, t] : back.graphs[0].plan.constant_slots) {
    size_t n = size_t(t.numel()) * dtype_size(t.dtype());
    const char* at = reinterpret_cast<const char*>(t.raw_data());
    CHECK(t.storage()->is_borrowed());
    CHECK(reinterpret_cast<uintptr_t>(at) % 64 == 0);
    if (n >= 65536) CHECK(reinterpret_cast<uintptr_t>(at) % 4096 == 0);
  }
  for (size_t i = 0; i < c.artifact.graphs[0].plan.constant_slots.size(); ++i) {
    const Tensor& want = c.artifact.graphs[0].plan.constant_slots[i].second;
    const Tensor& got = back.graphs[0].plan.constant_slots[i].second;
    size_t n = size_t(want.numel()) * dtype_size(want.dtype());
    CHECK(std::memcmp(want.contiguous().raw_data(), got.raw_data(), n) == 0);
    CHECK(bytes.find(std::string(reinterpret_cast<const char*>(want.contiguous().raw_data()),
                                 std::min<size_t>(n, 256))) >= woff);
  }
  // The names of parameters travel with the plan.
  CHECK(back.graphs[0].constant_names == c.artifact.graphs[0].constant_names);
  bool named = false;
  for (const std::string& n : back.graphs[0].constant_names) named |= !n.empty();
  CHECK(named);
}

TEST_CASE("artifact: weights alike in their sampled bytes are told apart; equal ones shared") {
  // Six graphs whose first constant is a zero f32[4096] but for element 1000, which no sample
  // of the dedup sketch (the first, middle and last 256 bytes) covers: the writer must compare
  // the whole bytes (from the fourth such weight on, by their XXH3-128).
  Compiled c = compile_fixture("mlp");
  auto section = [&](const std::vector<float>& markers) {
    CompiledArtifact a = c.artifact;
    a.graphs.resize(markers.size(), a.graphs[0]);
    for (size_t g = 0; g < markers.size(); ++g) {
      Tensor t = Tensor::empty(DType::F32, {4096});
      auto* f = reinterpret_cast<float*>(t.raw_data());
      std::fill(f, f + 4096, 0.0f);
      f[1000] = markers[g];
      a.graphs[g].plan.constant_slots[0].second = t;
    }
    return u64_at(serialize_artifact(a), 48);
  };
  const uint64_t same = section({0, 0, 0, 0, 0, 0});
  const uint64_t apart = section({1, 2, 3, 4, 5, 6}) - same;
  CHECK(apart >= 5 * 16384);
  CHECK(apart < 5 * 16384 + 64); // one alignment pad at most
  const uint64_t two = section({1, 1, 1, 2, 2, 2}) - same;
  CHECK(two >= 16384);
  CHECK(two < 16384 + 64);
  CHECK(section({7, 7, 7, 7, 7, 7}) == same);
}

TEST_CASE("artifact: a mapped file's weights are used in place; memory loads copy") {
  Compiled c = compile_fixture("mlp");
  std::string path = temp_path("mapped.fxo");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    write_artifact(c.artifact, [&](std::string_view b) { std::fwrite(b.data(), 1, b.size(), f); });
    std::fclose(f);
  }
  auto file = ArtifactBytes::map_file(path);
  CHECK(file->mapped());
  CHECK(file->view() == serialize_artifact(c.artifact));
  CompiledArtifact a = parse_artifact(file, path);
  const Tensor& w = a.graphs[0].plan.constant_slots[0].second;
  const char* p = reinterpret_cast<const char*>(w.raw_data());
  CHECK(p >= file->view().data());
  CHECK(p < file->view().data() + file->view().size());
  // The model keeps the mapping alive after every other reference is gone.
  std::weak_ptr<const ArtifactBytes> weak = file;
  file.reset();
  auto m = LoadedModel::load(std::move(a), path, 2);
  CHECK(!weak.expired());
  check_close(values(m->run(io_tensors("mlp", "input_"))), io_tensors("mlp", "output_"));
  CHECK(m->load_ms() >= 0);
  m.reset();
  CHECK(weak.expired());
  // A copy is not a mapping, and its weights live in the copy.
  auto mem = ArtifactBytes::copy(serialize_artifact(c.artifact));
  CHECK(!mem->mapped());
  CHECK(reinterpret_cast<uintptr_t>(mem->view().data()) % 4096 == 0);
  std::remove(path.c_str());
}

TEST_CASE("artifact: weight swaps are validated, all or nothing, and runs see one version") {
  Compiled c = compile_fixture("mlp");
  auto m = LoadedModel::load(parse_artifact(serialize_artifact(c.artifact), "m.fxo"), "m.fxo", 2);
  std::vector<Tensor> in = io_tensors("mlp", "input_");
  Tensor before = m->run(in)[0].second.contiguous();
  auto ws = m->swappable_weights();
  REQUIRE(!ws.empty());
  // Errors name the weight; nothing changes.
  CHECK(error_of([&] { m->swap_weights({{"no.such", Tensor::empty(DType::F32, {1})}}); }) ==
        "m.fxo: error: weight 'no.such': the artifact has no such swappable weight (a parameter "
        "the compiled code folded or does not use cannot be swapped)");
  const std::string name = ws[0].first;
  const TensorMeta meta = ws[0].second;
  std::vector<int64_t> wrong = meta.sizes;
  wrong.push_back(1);
  Tensor ok = Tensor::empty(meta.dtype, meta.sizes);
  CHECK(error_of([&] {
          m->swap_weights({{name, ok}, {name + "x", ok}});
        }).find("weight '" + name + "x'") != std::string::npos);
  CHECK(error_of([&] { m->swap_weights({{name, Tensor::empty(meta.dtype, wrong)}}, "w.st"); }) ==
        "w.st: error: weight '" + name + "': expected " + format_meta(meta) + ", got " +
            format_meta(Tensor::empty(meta.dtype, wrong).meta()));
  CHECK(error_of([&] {
          m->swap_weights({{name, Tensor::empty(DType::F64, meta.sizes)}});
        }).find("expected " + format_meta(meta)) != std::string::npos);
  Tensor same = m->run(in)[0].second.contiguous();
  CHECK(std::memcmp(same.raw_data(), before.raw_data(), size_t(before.numel()) * 4) == 0);
  // Zero weights: a different result; the old weights back: the first result again.
  std::vector<std::pair<std::string, Tensor>> zeros, old;
  for (const auto& [n, mt] : ws) zeros.emplace_back(n, Tensor::empty(mt.dtype, mt.sizes));
  for (size_t k = 0; k < c.artifact.graphs[0].constant_names.size(); ++k)
    if (!c.artifact.graphs[0].constant_names[k].empty())
      old.emplace_back(c.artifact.graphs[0].constant_names[k],
                       c.artifact.graphs[0].plan.constant_slots[k].second);
  m->swap_weights(zeros);
  Tensor zeroed = m->run(in)[0].second.contiguous();
  CHECK(std::memcmp(zeroed.raw_data(), before.raw_data(), size_t(before.numel()) * 4) != 0);
  m->swap_weights(old);
  Tensor again = m->run(in)[0].second.contiguous();
  CHECK(std::memcmp(again.raw_data(), before.raw_data(), size_t(before.numel()) * 4) == 0);
}

TEST_CASE("artifact: a swapped convolution weight is used, not its reordered old copy") {
  // CPU convolutions on oneDNN keep their weights reordered (and a folded batch norm's scale
  // multiplied in) in the prepared primitive; a swap must prepare them again. Expected: the
  // same graph compiled with the new weight from the start.
  Compiled c = compile_fixture("convnet");
  auto m = LoadedModel::load(parse_artifact(serialize_artifact(c.artifact), "c.fxo"), "c.fxo", 2);
  std::vector<Tensor> in = io_tensors("convnet", "input_");
  std::string name;
  for (const auto& [n, meta] : m->swappable_weights())
    if (meta.sizes.size() == 4 && name.empty()) name = n;
  REQUIRE(!name.empty());
  const WeightData& old = c.graph.weights.at(name);
  Tensor doubled = Tensor::empty(old.meta.dtype, old.meta.sizes);
  const float* src = reinterpret_cast<const float*>(old.storage->data()) + old.meta.storage_offset;
  for (int64_t i = 0; i < doubled.numel(); ++i)
    reinterpret_cast<float*>(doubled.raw_data())[i] = 2 * src[i] - 0.01f * float(i % 7);
  m->swap_weights({{name, doubled}});
  Tensor swapped = m->run(in)[0].second.contiguous();

  Compiled d = compile_fixture("convnet");
  WeightData& w = d.graph.weights.at(name);
  w.storage = std::make_shared<Storage>(size_t(doubled.numel()) * 4);
  std::memcpy(w.storage->data(), doubled.raw_data(), size_t(doubled.numel()) * 4);
  w.meta = doubled.meta();
  w.init.reset();
  std::vector<Tensor> want = interpret(d.graph, in);
  CompareOptions co;
  co.rtol = 1e-4;
  co.atol = 1e-5;
  CompareResult r = compare_tensors(swapped, want[0], co);
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("artifact: one model run from 8 threads x 200 runs gives the same results") {
  Compiled c = compile_fixture("block");
  auto m = LoadedModel::load(parse_artifact(serialize_artifact(c.artifact), "b.fxo"), "b.fxo", 2);
  std::vector<Tensor> in = io_tensors("block", "input_");
  std::vector<Tensor> ref = values(m->run(in));
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      for (int r = 0; r < 200; ++r) {
        std::vector<Tensor> got = values(m->run(in));
        for (size_t i = 0; i < ref.size(); ++i) {
          Tensor a = got[i].contiguous(), b = ref[i].contiguous();
          if (std::memcmp(a.raw_data(), b.raw_data(), size_t(b.numel()) * dtype_size(b.dtype())))
            ++bad;
        }
      }
    });
  for (std::thread& t : ts) t.join();
  CHECK(bad == 0);
}

TEST_CASE("C API: weight info and swaps from buffers and safetensors files") {
  Compiled c = compile_fixture("mlp");
  std::string bytes = serialize_artifact(c.artifact);
  fxc_model* m = nullptr;
  REQUIRE(fxc_model_load_memory(bytes.data(), bytes.size(), "m.fxo", &m) == FXC_OK);
  size_t nw = fxc_model_num_weights(m);
  REQUIRE(nw > 0);
  fxc_tensor_info wi;
  REQUIRE(fxc_model_weight_info(m, 0, &wi) == FXC_OK);
  CHECK(fxc_model_weight_info(m, nw, &wi) == FXC_ERROR_INVALID_ARGUMENT);
  fxc_model_weight_info(m, 0, &wi);
  std::vector<char> zeros(wi.nbytes, 0);
  fxc_weight w{wi.name, wi.dtype, wi.rank, wi.sizes, zeros.data()};
  CHECK(fxc_model_swap_weights(m, &w, 1) == FXC_OK);
  std::vector<int64_t> bad(wi.sizes, wi.sizes + wi.rank);
  bad[0] += 1;
  fxc_weight wrong{wi.name, wi.dtype, wi.rank, bad.data(), zeros.data()};
  CHECK(fxc_model_swap_weights(m, &wrong, 1) == FXC_ERROR_WEIGHTS);
  CHECK(std::string(fxc_last_error()).find("weight '" + std::string(wi.name) + "': expected") !=
        std::string::npos);
  fxc_weight unknown{"nope", wi.dtype, wi.rank, wi.sizes, zeros.data()};
  CHECK(fxc_model_swap_weights(m, &unknown, 1) == FXC_ERROR_WEIGHTS);
  // A safetensors file with every swappable weight, zeros: the outputs become the bias-free
  // result of zero weights (all equal).
  std::string st = temp_path("swap.safetensors");
  std::vector<std::vector<std::byte>> data(nw);
  std::vector<SafetensorsEntry> es;
  for (size_t i = 0; i < nw; ++i) {
    fxc_model_weight_info(m, i, &wi);
    data[i].assign(wi.nbytes, std::byte(0));
    TensorMeta meta;
    from_plugin_dtype(wi.dtype, &meta.dtype);
    meta.sizes.assign(wi.sizes, wi.sizes + wi.rank);
    meta.strides = contiguous_strides(meta.sizes);
    es.push_back({wi.name, meta, data[i].data()});
  }
  write_safetensors(st, es);
  CHECK(fxc_model_swap_weights_file(m, st.c_str()) == FXC_OK);
  CHECK(fxc_model_swap_weights_file(m, "/nonexistent.safetensors") == FXC_ERROR_IO);
  fxc_tensor_info in, out;
  fxc_model_input_info(m, 0, &in);
  fxc_model_output_info(m, 0, &out);
  std::vector<char> x(in.nbytes, 1);
  std::vector<float> y(out.nbytes / 4, 7.f);
  const void* ins[] = {x.data()};
  void* outs[] = {y.data()};
  REQUIRE(fxc_model_run(m, ins, outs) == FXC_OK);
  for (float v : y) CHECK(v == y[0]);
  fxc_model_free(m);
  std::remove(st.c_str());
}

TEST_CASE("artifact code: CPU kernels in parallel objects, split by the kernels alone") {
  CHECK(object_parts(0) == 1);
  CHECK(object_parts(1) == 1);
  CHECK(object_parts(32) == 1);
  CHECK(object_parts(33) == 2);
  CHECK(object_parts(64) == 2);
  CHECK(object_parts(65) == 4);
  CHECK(object_parts(96) == 4);
  CHECK(object_parts(1000) == 4);
  // 40 kernels that differ (by an unused global each) under other names: two objects, each
  // kernel in exactly one.
  Compiled c = compile_fixture("mlp");
  REQUIRE(!c.cg.kernels().empty());
  const GeneratedKernel& k = c.cg.kernels().front();
  std::vector<KernelText> texts;
  for (int i = 0; i < 40; ++i)
    texts.push_back({k.name, k.ll + "\n@distinct = internal global i32 " + std::to_string(i) + "\n",
                     "copy_" + std::to_string(i)});
  std::vector<std::string> objs = emit_kernels_objects(texts);
  REQUIRE(objs.size() == 2);
  CHECK(emit_kernels_objects(texts) == objs); // deterministic
  std::vector<std::unique_ptr<ElfObject>> loaded;
  for (const std::string& o : objs) loaded.push_back(load_elf_object(o, "k.o"));
  for (int i = 0; i < 40; ++i) {
    int defined = 0;
    for (const auto& o : loaded) defined += o->function("copy_" + std::to_string(i)) != nullptr;
    CHECK(defined == 1);
  }
  // 40 copies that differ only in name: compiled once, one object, every name the same code.
  std::vector<KernelText> same;
  for (int i = 0; i < 40; ++i) same.push_back({k.name, k.ll, "same_" + std::to_string(i)});
  std::vector<std::string> one = emit_kernels_objects(same);
  REQUIRE(one.size() == 1);
  CHECK(one.front().size() < objs.front().size());
  std::unique_ptr<ElfObject> o = load_elf_object(one.front(), "same.o");
  REQUIRE(o->function("same_0") != nullptr);
  for (int i = 1; i < 40; ++i)
    CHECK(o->function("same_" + std::to_string(i)) == o->function("same_0"));
  CHECK(emit_kernels_object(same) == one.front());
  // The artifact's graph holds the parts; an artifact build does not load the kernels itself.
  CHECK(c.cg.object_codes().size() == 1);
  InductorOptions io;
  io.load_cpu = false;
  CompiledGraph unloaded = compile_inductor(c.graph, io);
  CHECK(unloaded.object_codes() == c.cg.object_codes());
  CHECK_THROWS_WITH_AS(unloaded.run(io_tensors("mlp", "input_")),
                       doctest::Contains("compiled for an artifact, not loaded"), Error);
}

TEST_CASE("artifact code: a CUDA build for an artifact has one PTX module of every kernel") {
  if (!fxc::testing::have_libdevice()) return;
  Compiled c = compile_fixture("block"); // several kernels, some calling libdevice
  InductorOptions io;
  io.cuda = true;
  io.load_cuda = false;
  io.kernel_ptx = false;
  CompiledGraph cg = compile_inductor(c.graph, io);
  REQUIRE(cg.num_kernels() > 0);
  const std::string& ptx = cg.ptx_module();
  CHECK(ptx.find(".target sm_90") != std::string::npos);
  for (const GeneratedKernel& k : cg.kernels()) {
    CHECK(k.ptx.empty()); // no kernel compiled on its own
    CHECK(ptx.find(".entry " + k.name + "(") != std::string::npos);
  }
  // Into an artifact and back: one module per graph; duplicate kernel names are refused.
  CompiledArtifact a = c.artifact;
  a.device = "cuda";
  a.cuda_arch = "sm_90";
  a.graphs[0].plan = cg.plan();
  for (PlanKernel& k : a.graphs[0].plan.kernels) k.fn = nullptr;
  a.graphs[0].objects.clear();
  a.graphs[0].ptx = ptx;
  CompiledArtifact back = parse_artifact(serialize_artifact(a), "c.fxo");
  CHECK(back.graphs[0].ptx == ptx);
  CHECK(back.graphs[0].objects.empty());
  a.graphs[0].ptx.clear();
  CHECK_THROWS_WITH_AS(serialize_artifact(a), doctest::Contains("needs their PTX module"), Error);
  a.graphs[0].ptx = ptx;
  if (a.graphs[0].plan.kernels.size() < 2) return;
  a.graphs[0].plan.kernels[1].name = a.graphs[0].plan.kernels[0].name;
  CHECK_THROWS_WITH_AS(parse_artifact(serialize_artifact(a), "c.fxo"),
                       doctest::Contains("a second kernel named"), Error);
}

TEST_CASE("artifact: a CUDA plan's fused attention call round-trips and is validated") {
  if (!fxc::testing::have_libdevice()) return;
  Graph g;
  g.source = "attn.fxg";
  g.name = "attn";
  std::vector<ValueId> qkv;
  for (const char* name : {"q", "k", "v"}) {
    TensorMeta m;
    m.dtype = DType::BF16;
    m.sizes = {1, 2, 16, 64};
    m.strides = {2048, 1024, 64, 1};
    qkv.push_back(g.add_value(name, m));
    g.inputs.push_back({qkv.back(), InputKind::UserInput, name, true});
  }
  g.outputs = {add_node1(g, "aten.scaled_dot_product_attention.default",
                         {{"", Arg::of_tensor(qkv[0])},
                          {"", Arg::of_tensor(qkv[1])},
                          {"", Arg::of_tensor(qkv[2])},
                          {"is_causal", Arg::of_bool(true)}})};
  DecomposeOptions keep;
  keep.keep_cudnn_attention = true;
  g = decompose(g, keep);
  InductorOptions io;
  io.cuda = true;
  io.load_cuda = false;
  io.kernel_ptx = false;
  CompiledGraph cg = compile_inductor(g, io);
  CompiledArtifact a;
  a.name = "attn";
  a.backend = "inductor";
  a.device = "cuda";
  a.cuda_arch = "sm_90";
  a.mode = "inference";
  a.inputs = input_specs(g);
  ArtifactGraph ag;
  ag.role = "inference";
  ag.plan = cg.plan();
  for (PlanKernel& k : ag.plan.kernels) k.fn = nullptr;
  ag.ptx = cg.ptx_module();
  ag.constant_names = name_constants(ag.plan, g);
  a.outputs = {"output_0"};
  a.graphs.push_back(ag);
  auto attention = [](const Plan& p) -> const PlanExtern* {
    for (const PlanExtern& e : p.externs)
      if (e.kind == PlanExtern::Kind::Attention) return &e;
    return nullptr;
  };
  const PlanExtern* e = attention(a.graphs[0].plan);
  REQUIRE(e);
  CHECK(e->causal);
  CHECK(e->attn_scale == doctest::Approx(0.125));
  CHECK(e->inputs.size() == 3);
  CHECK(e->outputs[0].meta.sizes == std::vector<int64_t>{1, 16, 2, 64});
  CompiledArtifact back = parse_artifact(serialize_artifact(a), "attn.fxo");
  const PlanExtern* b = attention(back.graphs[0].plan);
  REQUIRE(b);
  CHECK(b->causal);
  CHECK(b->attn_scale == e->attn_scale);
  CHECK(b->inputs.size() == 3);
  // A call without its value operand is refused at load.
  for (PlanExtern& x : a.graphs[0].plan.externs)
    if (x.kind == PlanExtern::Kind::Attention) x.inputs.pop_back();
  CHECK_THROWS_WITH_AS(parse_artifact(serialize_artifact(a), "attn.fxo"),
                       doctest::Contains("an attention call takes q, k, v"), Error);
}

namespace {

/// The dynamic mlp fixture (batch s77 in [1, 4096]) compiled at four consecutive batch sizes,
/// each an artifact of the dynamic graph bound at that size.
struct GenericProbes {
  std::shared_ptr<const Graph> symbolic;
  std::vector<Compiled> at; // batch 3, 4, 5, 6
};

GenericProbes mlp_probes() {
  GenericProbes p;
  p.symbolic = std::make_shared<const Graph>(import_graph(fixture("dynamic/mlp.core.pt2")));
  REQUIRE(p.symbolic->symbols.size() == 1);
  const std::string sym = p.symbolic->symbols[0].name;
  for (int64_t b = 3; b <= 6; ++b) {
    SymBindings bind{{sym, b}};
    p.at.push_back(compile_graph(decompose(specialize(*p.symbolic, bind)), "mlp"));
    p.at.back().artifact.symbolic = p.symbolic;
    p.at.back().artifact.bindings = bind;
  }
  return p;
}

std::vector<std::pair<int64_t, const CompiledArtifact*>> probe_list(const GenericProbes& p) {
  std::vector<std::pair<int64_t, const CompiledArtifact*>> at;
  for (size_t k = 0; k < p.at.size(); ++k) at.push_back({int64_t(3 + k), &p.at[k].artifact});
  return at;
}

std::vector<Tensor> dynamic_io(const std::string& file, const std::string& prefix) {
  return numbered_tensors("dynamic/" + file, prefix);
}

} // namespace

TEST_CASE("artifact: a dynamic plan made size-generic runs its kernels at every batch size") {
  GenericProbes p = mlp_probes();
  CompiledArtifact& a = p.at[1].artifact; // compiled at batch 4
  REQUIRE(make_size_generic(a, probe_list(p)) == "");
  CHECK(a.generic.symbol == p.symbolic->symbols[0].name);
  CHECK(a.generic.base == 3);
  CHECK(!a.generic.fields.empty());
  for (const SizeGeneric::Field& f : a.generic.fields) CHECK(f.c2 == 0); // rows grow linearly
  CompiledArtifact back = parse_artifact(serialize_artifact(a), "mlp.fxo");
  CHECK(back.generic.fields.size() == a.generic.fields.size());
  // The plans at batch 200 are the compiled ones with the rows, slots and views of 200.
  std::vector<ArtifactGraph> gs = instantiate_size_generic(back, 200, "mlp.fxo");
  REQUIRE(gs.size() == 1);
  CHECK(gs[0].plan.input_metas[0].sizes == std::vector<int64_t>{200, 256});
  CHECK(gs[0].plan.kernels.size() == a.graphs[0].plan.kernels.size());
  auto m = LoadedModel::load(std::move(back), "mlp.fxo", 1);
  for (const char* size : {"b1", "b3", "b200", "b64"}) {
    INFO("batch " << size);
    std::string file = std::string("mlp.") + size + ".io.safetensors";
    check_close(values(m->run(dynamic_io(file, "input_"))), dynamic_io(file, "output_"));
  }
}

TEST_CASE("artifact: size-generic plans are refused where the compiles disagree") {
  GenericProbes p = mlp_probes();
  CompiledArtifact& a = p.at[0].artifact;
  auto at = probe_list(p);
  SUBCASE("values not consecutive") {
    at[3].first = 9;
    CHECK(make_size_generic(a, at) == "the sizes are not consecutive");
  }
  SUBCASE("kernel code that depends on the size") {
    p.at[2].artifact.graphs[0].objects[0] += "x";
    CHECK(make_size_generic(a, at) == "the kernels' code differs between sizes");
  }
  SUBCASE("a number that is no polynomial of degree two") {
    p.at[3].artifact.graphs[0].plan.kernels[0].xnumel += 1;
    CHECK(make_size_generic(a, at).find("no polynomial of degree two in the size at "
                                        "/kernels/0/xnumel") != std::string::npos);
  }
  SUBCASE("two symbols") {
    CompiledArtifact b = a;
    auto two = std::make_shared<Graph>(*p.symbolic);
    two->symbols.push_back(two->symbols[0]);
    two->symbols.back().name = "s99";
    b.symbolic = two;
    CHECK(make_size_generic(b, at) == "not an inference artifact with one symbol");
  }
  CHECK(a.generic.symbol.empty()); // left as it was
  CHECK(a.generic.fields.empty());
}

TEST_CASE("artifact: a size-generic field that disagrees with its plan is a corrupt file") {
  GenericProbes p = mlp_probes();
  CompiledArtifact& a = p.at[0].artifact;
  REQUIRE(make_size_generic(a, probe_list(p)) == "");
  a.generic.fields[0].c0 += 1;
  CHECK(error_of([&] {
          parse_artifact(serialize_artifact(a), "mlp.fxo");
        }).find("does not give the plan's own value") != std::string::npos);
  a.generic.fields[0].c0 -= 1;
  a.generic.fields[0].pointer = "/no/such/field";
  CHECK(error_of([&] {
          parse_artifact(serialize_artifact(a), "mlp.fxo");
        }).find("names no number of a plan") != std::string::npos);
}
