// The driver: from parsed options to an exit status — import, pipeline, emit, run, check.
#include "driver/driver.h"

#include "driver/bench.h"
#include "driver/cache.h"
#include "driver/check.h"
#include "driver/chrome_trace.h"
#include "driver/depfile.h"
#include "driver/failure_tools.h"
#include "driver/fxo.h"
#include "driver/logging.h"
#include "driver/pipeline.h"
#include "driver/remote_cache.h"
#include "driver/report.h"
#include "driver/tensor_io.h"
#include "frontend/fxg.h"
#include "frontend/import.h"
#include "frontend/io_util.h"
#include "frontend/ops.h"
#include "frontend/pass_timer.h"
#include "frontend/philox.h"
#include "frontend/printer.h"
#include "frontend/random.h"
#include "frontend/safetensors.h"
#include "frontend/shape_prop.h"
#include "frontend/specialize.h"
#include "passes/autocast.h"
#include "runtime/cuda_driver.h"
#include "runtime/plan_executor.h"
#include "runtime/plugin.h"

#include <algorithm>
#include <cassert>
#ifdef FXC_HAVE_CODEGEN
#include "codegen/inductor.h"
#include "codegen/llvm_codegen.h"
#include "passes/loop_ir_parse.h"
#endif
#include "runtime/interpreter.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <unistd.h>

namespace fxc {

namespace fs = std::filesystem;

namespace {
bool g_color = false; // set once by parse_options, before any diagnostic
} // namespace

bool color_wanted(const std::string& color) {
  if (color == "always") return true;
  if (color != "auto") return false;
  const char* term = std::getenv("TERM");
  return ::isatty(2) && !(term && std::string(term) == "dumb");
}

void set_color_diagnostics(bool on) {
  g_color = on;
}

std::string paint_diagnostic(const std::string& line) {
  if (!g_color) return line;
  static const std::pair<const char*, const char*> kSeverities[] = {
      {": error: ", "\033[0;1;31m"},
      {": warning: ", "\033[0;1;35m"},
      {": note: ", "\033[0;1;36m"},
      {": internal compiler error: ", "\033[0;1;31m"}};
  const char* bold = "\033[1m";
  const char* reset = "\033[0m";
  for (const auto& [sev, color] : kSeverities) {
    size_t at = line.find(sev);
    if (at == std::string::npos) continue;
    std::string where = line.substr(0, at + 1), rest = line.substr(at + std::strlen(sev));
    size_t eol = rest.find('\n');
    std::string first = rest.substr(0, eol),
                more = eol == std::string::npos ? "" : rest.substr(eol);
    std::string name(sev + 2, std::strlen(sev) - 4); // "error", "warning", ...
    return bold + where + reset + " " + color + name + ":" + reset + " " + bold + first + reset +
           more;
  }
  return line;
}

void report_error(const Options& opts, const Error& e) {
  if (opts.diagnostics == "json") {
    nlohmann::ordered_json j = {{"severity", "error"},
                                {"file", e.file()},
                                {"node", e.node()},
                                {"op", e.op()},
                                {"message", e.message()}};
    std::fprintf(stderr, "%s\n", j.dump().c_str());
    return;
  }
  std::fprintf(stderr, "%s\n", paint_diagnostic(e.what()).c_str());
}

void report_warning(const Options& opts, const std::string& message) {
  if (opts.werror) throw UsageError(message + " [-Werror]");
  report_diagnostic(opts, "warning", "", message);
}

void report_diagnostic(const Options& opts, const std::string& severity, const std::string& file,
                       const std::string& message, const std::string& repro) {
  if (opts.diagnostics == "json") {
    nlohmann::ordered_json j = {
        {"severity", severity}, {"file", file}, {"node", ""}, {"op", ""}, {"message", message}};
    if (!repro.empty()) j["repro"] = repro;
    std::fprintf(stderr, "%s\n", j.dump().c_str());
    return;
  }
  std::string line = (file.empty() ? "fxc" : file) + ": " + severity + ": " + message;
  std::fprintf(stderr, "%s\n", paint_diagnostic(line).c_str());
}

std::FILE* check_report_stream(const Options& opts, bool ok) {
  return ok || opts.diagnostics == "json" ? stdout : stderr;
}

namespace {

// -S is --emit=ptx for cuda and --emit=llvm for cpu.
std::string effective_emit(const Options& o) {
  if (!o.emit_asm || !o.emit.empty()) return o.emit;
  return o.device == DeviceKind::Cuda ? "ptx" : "llvm";
}

// Rejects flags whose features are not built yet, so that nothing is silently ignored.
void check_supported(const Options& o) {
  auto unsupported = [](const std::string& what) {
    throw UsageError(what + " is not yet supported");
  };
  if (o.bisect && o.minify) throw UsageError("--bisect and --minify cannot be combined");
  if (!o.inject_bug.empty()) {
    auto colon = o.inject_bug.find(':');
    std::string kind = colon == std::string::npos ? "" : o.inject_bug.substr(colon + 1);
    if (colon == 0 || (kind != "compile_error" && kind != "runtime_error" && kind != "accuracy"))
      throw UsageError("--inject-bug expects <op>:compile_error|runtime_error|accuracy, got '" +
                       o.inject_bug + "'");
  }
  if (o.json && !o.bench) throw UsageError("--json needs --bench");
  if (!o.compare.empty() && o.report.empty()) throw UsageError("--compare needs --report=<dir>");
  if (!o.report.empty() && !o.debug_dir.empty()) {
    // The report replaces its trace/ and graphs/ folders: a debug directory there would be lost.
    std::error_code ec;
    fs::path d = fs::weakly_canonical(o.debug_dir, ec);
    for (const char* sub : {"trace", "graphs"}) {
      fs::path r = fs::weakly_canonical(fs::path(o.report) / sub, ec);
      auto [end, _] = std::mismatch(r.begin(), r.end(), d.begin(), d.end());
      if (end == r.end())
        throw UsageError("--debug-dir=" + o.debug_dir + " is inside the report's " + sub +
                         "/ folder, which --report replaces");
    }
  }
  bool cuda = o.device == DeviceKind::Cuda;
  if (o.max_autotune && o.backend != Backend::Inductor)
    throw UsageError("--max-autotune needs --backend=inductor");
  std::string emit = effective_emit(o);
  bool code_emit = emit == "llvm" || emit == "ptx" || emit == "obj" || emit == "cpp";
  if (code_emit && o.backend != Backend::Inductor)
    throw UsageError("--emit=" + emit + " needs --backend=inductor");
  if (emit == "ptx" && !cuda) throw UsageError("--emit=ptx needs --device=cuda");
  if ((emit == "obj" || emit == "cpp") && cuda)
    unsupported("--emit=" + emit + " for --device=cuda");
  if (o.mode == Mode::Train && o.backend == Backend::Eager)
    throw UsageError("--mode=train needs AOT autograd: use --backend=aot_eager or a later backend");
  for (const auto& [flag, step] :
       {std::pair<std::string, std::string>{"--print-after", o.print_after},
        {"--stop-after", o.stop_after}})
    if (!step.empty() && !backend_runs_step(o.backend, step))
      throw UsageError(flag + "=" + step + ": backend " + backend_name(o.backend) +
                       " does not run step " + step);
}

std::string stem_of(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* ext : {".fxg.zst", ".fxg", ".pt2", ".fxo"})
    if (name.size() > strlen(ext) && name.compare(name.size() - strlen(ext), strlen(ext), ext) == 0)
      return name.substr(0, name.size() - strlen(ext));
  return fs::path(name).stem().string();
}

// The file the action writes: -o, else <stem>.<ext> for --emit and the default action; "" when it
// writes to stdout (--emit=fx without -o, -o -) or writes no file (--run, --bench, ...).
std::string output_file(const Options& o) {
  if (o.output == "-") return "";
  std::string emit = effective_emit(o);
  if (emit == "fx") return o.output;
  if (!o.output.empty()) return o.output;
  if (emit == "obj") return stem_of(o.input) + ".o";
  if (emit == "llvm") return stem_of(o.input) + ".ll";
  if (!emit.empty()) return stem_of(o.input) + "." + emit;
  if (o.run || o.bench || o.bisect || o.minify || o.check_accuracy) return "";
  return stem_of(o.input) + ".fxo";
}

bool wants_depfile(const Options& o) {
  return o.md || !o.mf.empty() || !o.mt.empty();
}

// Options the chosen action does not use get a warning each, as clang's "argument unused during
// compilation" (an error under -Werror), instead of being dropped in silence. The action is the
// first of: --emit (or -S), --bisect / --minify, --run / --bench / --check-accuracy, the default
// compile. `artifact`: the input is an .fxo (its device and compile flags are fixed already).
void warn_unused_arguments(const Options& o, bool artifact) {
  auto unused = [&](const std::string& arg, const std::string& context) {
    report_warning(o, "argument unused " + context + ": '" + arg + "'");
  };
  const std::string emit = artifact ? "" : effective_emit(o);
  const bool runs = o.run || o.bench || o.check_accuracy;
  if (!emit.empty()) {
    const std::string with = "with --emit=" + emit + " (it writes " +
                             (emit == "fx" || emit == "fxg" ? "the graph" : "code") +
                             " and runs nothing)";
    for (auto [given, name] : {std::pair{o.run, "--run"},
                               {o.bench, "--bench"},
                               {o.check_accuracy, "--check-accuracy"},
                               {o.bisect, "--bisect"},
                               {o.minify, "--minify"}})
      if (given) unused(name, with);
  } else if (o.bisect || o.minify) {
    if (o.bench) unused("--bench", std::string("with ") + (o.bisect ? "--bisect" : "--minify"));
  }
  const bool executes = emit.empty() && (runs || o.bisect || o.minify);
  if (executes && !o.output.empty() && o.output != "-" && !wants_depfile(o))
    unused("-o " + o.output,
           std::string("with ") +
               (o.bisect   ? "--bisect"
                : o.minify ? "--minify"
                : o.bench  ? "--bench"
                : o.run    ? "--run"
                           : "--check-accuracy") +
               " (it writes no output file; --outputs=<f.safetensors> saves the outputs)");
  if (!executes) {
    if (!o.outputs.empty()) unused("--outputs " + o.outputs, "without --run");
    if (!o.expect.empty()) unused("--expect " + o.expect, "without --run");
  }
  if (o.expect.empty() && !o.bisect && !o.minify) {
    if (o.rtol_given) unused("--rtol", "without --expect");
    if (o.atol_given) unused("--atol", "without --expect");
    if (o.equal_nan) unused("--equal-nan", "without --expect");
  }
  if (artifact && !o.dtype.empty())
    unused("--dtype=" + o.dtype, "with a compiled artifact (its graphs are converted already)");
  if (!artifact && !o.model.empty())
    unused("--model=" + o.model, "with a graph (it chooses a model of an .fxo artifact)");
  if (!artifact && o.device == DeviceKind::Cpu) {
    if (o.cuda_graphs_given)
      unused(o.cuda_graphs ? "--cuda-graphs" : "--no-cuda-graphs", "with --device=cpu");
    if (o.tf32_given)
      unused(o.tf32 == "all" ? "--allow-tf32" : "--tf32=" + o.tf32, "with --device=cpu");
    if (o.cuda_arch_given) unused("--cuda-arch=" + o.cuda_arch, "with --device=cpu");
    if (o.attention_given) unused("--attention=" + o.attention, "with --device=cpu");
  }
}

// -MD, -MF and -MT need a target and a depfile name: the output file's, unless both are given.
void check_depfile_options(const Options& o) {
  if (wants_depfile(o) && output_file(o).empty() && (o.mf.empty() || o.mt.empty()))
    throw UsageError("-MD needs an output file (-o <file>), or both -MF <file> and -MT <target>");
}

// -MD/-MF/-MT: after the action wrote its output, the depfile naming the graph and every
// external weights file the import read, so that Make rebuilds when any of them changes.
void write_dependencies(const Options& o, const std::vector<std::string>& external_files) {
  if (!wants_depfile(o)) return;
  std::vector<std::string> deps{o.input};
  deps.insert(deps.end(), external_files.begin(), external_files.end());
  std::string out = output_file(o);
  write_depfile(o.mf.empty() ? default_depfile_path(out) : o.mf,
                depfile_text(o.mt.empty() ? out : o.mt, deps));
}

void write_text(const std::string& path, const std::string& text) {
  write_file_bytes(path, text, "cannot write output file");
  log_message(Component::Driver, Level::Info,
              "wrote " + (path.empty() ? std::string("standard output") : path) + " (" +
                  std::to_string(text.size()) + " bytes)");
}

// Writes the artifact to the output, its weights straight from their storage (no copy of the
// artifact is made in memory); the cache copies the output file.
// What a finished compile built (graphs, plans, machine code, the mapped weights) is not taken
// apart: the process exits next and the kernel reclaims it all at once, as clang's -disable-free
// leaves its AST (ResNet-50 train: 70-100 ms of frees and unmaps). Kept reachable from a static,
// so that LeakSanitizer does not call it a leak.
template <class T> void keep_until_exit(std::unique_ptr<T> p) {
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  kept->push_back(std::shared_ptr<void>(std::move(p)));
}

void write_artifact_output(CompileCacheUse& cu, const Options& o, const CompiledArtifact& a) {
  const std::string path = output_file(o);
  const bool cached = cu.cache.enabled() || cu.remote;
  if (path.empty() || path == "-") { // standard output: one string for the output and the cache
    std::string bytes = serialize_artifact(a);
    if (cached) tiered_store(cu, o, bytes);
    write_text(path, bytes);
    return;
  }
  uint64_t size = 0;
  {
    OutputFile out(path, "cannot write output file");
    write_artifact(a, [&](std::string_view b) {
      out.write(b);
      size += b.size();
    });
    out.commit();
  }
  log_message(Component::Driver, Level::Info,
              "wrote " + path + " (" + std::to_string(size) + " bytes)");
  if (cached) tiered_store_file(cu, o, path);
}

// The guards the compiled graph assumes of its inputs, and whether this run's inputs pass them.
void log_guards(const Graph& g, const std::vector<Tensor>& inputs) {
  Logger& log = process_logger();
  if (!log.enabled(Artifact::Guards)) return;
  std::string text;
  size_t k = 0;
  for (const GraphInput& in : g.inputs) {
    if (in.kind != InputKind::UserInput) continue;
    const TensorMeta& m = g.values[in.value].meta;
    bool ok = k < inputs.size() && inputs[k].dtype() == m.dtype && inputs[k].sizes() == m.sizes;
    text += "input_" + std::to_string(k) + " '" + g.values[in.value].name + "': dtype " +
            std::string(dtype_name(m.dtype)) + ", shape " + format_meta(m) + ", device " +
            device_name(m.device) + (ok ? " (passes)" : " (FAILS)") + "\n";
    ++k;
  }
  log.artifact(Artifact::Guards, text);
}

// A graph with a data-dependent size (nonzero, masked_select, unique: torch.export's unbacked
// symbols) runs on the eager interpreter, which learns each such size when its node has run.
// Everything else needs every size before the run, so it stops here, naming the node.
void check_data_dependent_action(const Options& o, const Graph& g) {
  const bool eager_run = (o.run || o.bench || o.check_accuracy) && o.backend == Backend::Eager &&
                         o.mode == Mode::Inference && !o.bisect && !o.minify &&
                         o.stop_after.empty() && o.emit.empty();
  if (eager_run || o.emit == "fx") return;
  const Node* n = first_data_dependent_node(g);
  std::string what = "the size of its result depends on its input's values (a data-dependent "
                     "size); such graphs run only with --backend=eager --run in inference mode: ";
  what += o.mode == Mode::Train ? "AOT autograd" : "inductor, AOT autograd and .fxo artifacts";
  what += " need every size before the run";
  if (n) throw Error(o.input, what, n->name, n->target);
  throw Error(o.input, what);
}

// --log=guards and -v: a dynamic graph's symbols, their ranges and hints, and the runtime
// assertions the export recorded.
void log_symbols(const Graph& g) {
  std::string text = describe_symbols(g);
  process_logger().artifact(Artifact::Guards, text);
  log_message(Component::Driver, Level::Info, text.substr(0, text.size() - 1));
}

// The generated code of every compiled graph for --emit=llvm|ptx|obj|cpp. llvm, ptx and obj are
// one module (what llvm-as, ptxas, cuModuleLoadData and a linker take whole): every graph's
// kernels linked into one LLVM module, then its text (CUDA: as generated, before libdevice; CPU:
// as generated), its PTX or its x86-64 object code. llvm and ptx text begin with one comment
// line per kernel, "===== fxc kernel <graph folder>/<name> =====". A kernel whose name an
// earlier graph's kernel has (train mode: forward and backward) is renamed <name>_<role> (the
// line then ends "(symbol <name>_<role>) ====="); kernel names end in a number, so the new
// name is free. cpp is each graph's output_code.cpp, one after another. A graph without kernels
// gives an empty module (one comment line).
std::string emitted_code(const Compilation& c, const std::string& emit) {
  std::string out;
#ifdef FXC_HAVE_CODEGEN
  if (emit == "cpp") {
    for (const std::shared_ptr<CompiledGraph>& g : c.compiled) out += g->output_code();
    if (out.empty()) out = "// fxc: the graph compiled to no kernels\n";
    return out;
  }
  const bool cuda = c.opts.device == DeviceKind::Cuda;
  std::vector<KernelText> kernels;
  std::set<std::string> symbols;
  const char* comment = emit == "ptx" ? "// " : "; ";
  auto add = [&](const StageGraph& g, const std::string& name, const std::string& ll) {
    std::string symbol = symbols.count(name) ? name + "_" + g.role : name;
    assert(!symbols.count(symbol) && "a kernel name ends in a number, so <name>_<role> is free");
    symbols.insert(symbol);
    out += comment + ("===== fxc kernel " + g.folder + "/" + name) +
           (symbol == name ? "" : " (symbol " + symbol + ")") + " =====\n";
    kernels.push_back({name, ll, symbol});
  };
  for (size_t i = 0; i < c.graphs.size(); ++i) {
    // CUDA --emit=ptx compiles through c.ptx; --max-autotune (tuned kernels), like the CPU,
    // through c.compiled.
    if (cuda && !c.ptx.empty()) {
      for (const PtxKernelInfo& k : c.ptx.at(i)->kernels) add(c.graphs[i], k.name, k.ll);
    } else {
      for (const GeneratedKernel& k : c.compiled.at(i)->kernels()) add(c.graphs[i], k.name, k.ll);
    }
  }
  // A graph of views and inputs only computes nothing: its module is empty but valid (as an
  // empty translation unit's is for clang and nvcc), so that build rules hold for every graph.
  if (kernels.empty() && emit != "obj")
    out += comment + std::string("fxc: the graph compiled to no kernels\n");
  PassTimer t("emit: one module");
  if (emit == "obj") return emit_kernels_object(kernels);
  if (cuda)
    return out +
           link_ptx_kernels(kernels, c.opts.cuda_arch, InductorOptions().libdevice, emit == "ptx");
  return out + link_kernels_ll(kernels, false);
#else
  throw Error(c.opts.input, "--emit=" + emit + ": this fxc is built without code generation");
#endif
}

// FXC_REPRO_LEVEL with the meanings of TORCHDYNAMO_REPRO_LEVEL: 1 writes the failing graph as a
// repro, 2 minifies compile and run-time failures, 3 always writes the repro first and minifies
// failures (crashes included), 4 also minifies accuracy failures (a mismatch with eager).
int repro_level() {
  const char* v = std::getenv("FXC_REPRO_LEVEL");
  if (!v || !*v) return 0;
  std::string s = v;
  if (s.size() != 1 || s[0] < '1' || s[0] > '4')
    throw UsageError("FXC_REPRO_LEVEL must be 1, 2, 3 or 4, got '" + s + "'");
  return s[0] - '0';
}

// When the inputs' sizes differ from the sizes the graph was exported with, the guards fail and
// the graph is recompiled for the new sizes: the inputs take the new shapes and shape
// propagation runs again (a node whose arguments bake in the old sizes, e.g. a view, is then
// reported as an error naming it). Logged under --log=recompiles.
//
// A dynamic graph (exported with Dim) needs no recompile: its symbols are bound from the inputs'
// sizes, checked against their ranges, and the graph is specialized to them.
void specialize_to_inputs(Compilation& c, const std::vector<Tensor>& inputs) {
  if (c.symbolic && has_unbacked_symbols(*c.symbolic)) { // eager binds them as it runs
    std::vector<TensorMeta> metas;
    for (const Tensor& t : inputs) metas.push_back(t.meta());
    SymBindings b;
    if (std::string why = bind_symbols(*c.symbolic, metas, &b); !why.empty())
      throw Error(c.opts.inputs.empty() ? c.opts.input : c.opts.inputs,
                  "the inputs are outside the graph's dynamic shapes: " + why);
    process_logger().artifact(Artifact::Guards,
                              "dynamic shapes: the inputs bind " +
                                  (b.empty() ? std::string("no symbol") : format_bindings(b)) +
                                  "; data-dependent sizes are bound as the graph runs\n");
    c.bindings = b;
    return;
  }
  if (c.symbolic) {
    std::vector<TensorMeta> metas;
    for (const Tensor& t : inputs) metas.push_back(t.meta());
    SymBindings b;
    if (std::string why = bind_symbols(*c.symbolic, metas, &b); !why.empty())
      throw Error(c.opts.inputs.empty() ? c.opts.input : c.opts.inputs,
                  "the inputs are outside the graph's dynamic shapes: " + why);
    process_logger().artifact(Artifact::Guards,
                              "dynamic shapes: the inputs bind " + format_bindings(b) + "\n");
    if (b != c.bindings) {
      c.source = specialize(*c.symbolic, b);
      c.bindings = b;
    }
    return;
  }
  Graph& g = c.source;
  std::string reasons;
  size_t k = 0;
  for (const GraphInput& in : g.inputs) {
    if (in.kind != InputKind::UserInput) continue;
    TensorMeta& m = g.values[in.value].meta;
    const Tensor& t = inputs.at(k);
    if (t.sizes() != m.sizes) {
      reasons += "input_" + std::to_string(k) + " '" + g.values[in.value].name + "': expected " +
                 format_meta(m) + ", got " + format_meta(t.meta()) + "; ";
      m.sizes = t.sizes();
      m.strides = contiguous_strides(m.sizes);
      m.storage_offset = 0;
    }
    ++k;
  }
  if (reasons.empty()) return;
  process_logger().artifact(Artifact::Recompiles, "recompiling " + g.name +
                                                      " because the guards failed: " +
                                                      reasons.substr(0, reasons.size() - 2) + "\n");
  propagate_shapes(g);
}

int run_and_check(Compilation& c, const std::vector<Tensor>& inputs) {
  const Options& o = c.opts;
  // A graph may write into its inputs (an in-place op on one): each reference run of the
  // accuracy check gets its own copy of the inputs as given.
  std::vector<Tensor> ref_inputs, base_inputs;
  if (o.check_accuracy)
    for (const Tensor& t : inputs) {
      ref_inputs.push_back(t.defined() ? t.clone() : t);
      base_inputs.push_back(t.defined() ? t.clone() : t);
    }
  auto t0 = std::chrono::steady_clock::now();
  NamedTensors results = c.executable->run(inputs);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  c.trace.log("run", std::string("executed with backend ") + backend_name(o.backend), ms);
  if (o.verbose) std::fprintf(stderr, "fxc: run: %.3f ms\n", ms);

  int status = write_and_expect(o, results, o.mode == Mode::Train);
  if (o.check_accuracy) {
    InterpretOptions f64;
    f64.float64 = true;
    std::vector<Tensor> ref = interpret(c.source, ref_inputs, f64);
    InterpretOptions f32;
    std::vector<Tensor> base = interpret(c.source, base_inputs, f32);
    CheckReport rep = check_accuracy(results, base, ref);
    std::fputs(rep.text.c_str(), check_report_stream(o, rep.ok));
    if (!rep.ok) {
      report_error(o, Error(o.input, "accuracy check failed against the float64 reference"));
      status = 1;
    }
  }
  if (o.outputs.empty() && o.expect.empty() && !o.check_accuracy)
    for (const auto& [name, t] : results)
      std::printf("%s: %s\n", name.c_str(), summarize(t).c_str());
  return status;
}

// Runs an artifact from the compile cache as --run's executable. A corrupt entry is named as
// such (`entry`); what goes wrong in a run names the graph the user gave (`source`), as the
// compile that filled the cache would have.
class LoadedExecutable : public Executable {
public:
  LoadedExecutable(const std::string& bytes, std::string entry, std::string source)
      : m_(LoadedModel::load(parse_artifact(bytes, entry), source)), entry_(std::move(entry)),
        source_(std::move(source)) {}
  NamedTensors run(const std::vector<Tensor>& inputs) override {
    try {
      return m_->run(inputs);
    } catch (const Error& e) { // the entry's graphs carry the entry's name
      if (e.file() != entry_) throw;
      throw Error(source_, e.message(), e.node(), e.op());
    }
  }

private:
  std::unique_ptr<LoadedModel> m_;
  std::string entry_, source_;
};

// What --trace shows besides the compile passes: the steps of one --bench run.
struct TracedRun {
  std::vector<BenchStep> steps;
  double start_us = 0;
  std::string track;
};

TracedRun traced_run(const BenchResult& r) {
  return {r.steps, r.trace_start_us,
          r.timer == "cuda_events" ? "kernels (one --bench run, CUDA events)"
                                   : "kernels (one --bench run, host clock)"};
}

// What the action was, for --report's index.
std::string action_name(const Options& o) {
  std::string emit = effective_emit(o);
  if (!emit.empty()) return "emit=" + emit;
  return o.bisect                    ? "bisect"
         : o.minify                  ? "minify"
         : o.bench                   ? "bench"
         : o.run || o.check_accuracy ? "run"
                                     : "compile";
}

bool is_loop_ir_file(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".lir") == 0;
}

// A loop-IR input (.lir, passes/loop_ir_parse.h): inductor's steps after lower, up to
// --stop-after; --print-after prints as for a graph and -o gets the IR after the last step.
int run_loop_ir_file(const Options& o) {
#ifdef FXC_HAVE_CODEGEN
  const std::vector<std::string> steps = {"fuse", "plan-memory", "codegen", "host-plan"};
  if (std::find(steps.begin(), steps.end(), o.stop_after) == steps.end())
    throw UsageError("a loop-IR input (.lir) starts after lower: it needs "
                     "--stop-after=fuse|plan-memory|codegen|host-plan");
  if (!o.print_after.empty() && std::find(steps.begin(), steps.end(), o.print_after) == steps.end())
    throw UsageError("--print-after=" + o.print_after +
                     ": a loop-IR input (.lir) starts after lower");
  if (o.backend != Backend::Inductor || o.mode == Mode::Train)
    throw UsageError("a loop-IR input (.lir) is one lowered graph: inductor, inference mode");
  std::ifstream in(o.input, std::ios::binary);
  if (!in) throw Error(o.input, std::string("cannot read: ") + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  LoopProgram p = parse_loop_program(text.str(), o.input);
  InductorOptions io;
  io.cuda = o.device == DeviceKind::Cuda;
  io.load_cuda = false;
  io.cuda_arch = o.cuda_arch;
  io.log_name = stem_of(o.input);
  std::string out;
  io.steps.print_after = o.print_after;
  io.steps.stop_after = o.stop_after;
  io.steps.verify_each = o.verify_each;
  io.steps.print = [&](const std::string& step, const std::string& ir) {
    if (step == o.print_after)
      std::fprintf(stderr, "// ----- IR after %s (%s) -----\n%s", step.c_str(), io.log_name.c_str(),
                   ir.c_str());
    if (step == o.stop_after) out = ir;
  };
  compile_loop_program(p, io);
  if (!o.output.empty()) write_text(o.output, out);
  return 0;
#else
  throw Error(o.input, "a loop-IR input needs code generation, which this fxc is built without");
#endif
}

// --dtype: torch.autocast's casts (passes/autocast.h), right after import, so that everything
// after sees the converted graph: every backend's stages and train mode's joint graph,
// --emit=fx|fxg, --check-accuracy's references, --bisect and --minify. The signature (user
// inputs and weights, f32) does not change; the compile cache keys the flag.
void autocast_source(Compilation& c) {
  if (c.opts.dtype.empty()) return;
  auto t0 = std::chrono::steady_clock::now();
  PassTimer t("autocast");
  DType dtype = *parse_dtype(c.opts.dtype);
  AutocastStats stats;
  c.source = autocast(c.source, dtype, &stats);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  c.trace.log("frontend", "--dtype=" + c.opts.dtype + ": " + stats.summary(dtype), ms);
  log_message(Component::Frontend, Level::Info, stats.summary(dtype));
}

// ccache's direct mode for the default action: the cache key is remembered under a key of
// what decides the import (direct_cache_key), so that a hit places the artifact without
// importing the graph. Only where an import could show nothing: no debug trace, no compile
// output or import-time log asked for (--log=driver shows the import's symbols), no warning that
// depends on the graph (--seed with
// --inputs).
bool direct_mode_applies(const Options& o, bool debug_trace) {
  if (o.run || o.bench || o.check_accuracy || o.bisect || o.minify || o.explain_cache ||
      !o.emit.empty() || !effective_emit(o).empty() || !o.stop_after.empty() ||
      !o.print_after.empty() || o.seed_given || o.verbose || o.input_spooled ||
      cache_directory(o).empty())
    return false;
  Logger& log = process_logger();
  return compile_output_asked(o, debug_trace).empty() && !log.enabled(Artifact::Guards) &&
         !log.enabled(Component::Frontend, Level::Info) &&
         !log.enabled(Component::Driver, Level::Info);
}

// The default action's hit through a direct memo: true when the output was written.
bool direct_hit(const Options& o, const std::string& direct_key) {
  std::optional<DirectHit> d = direct_lookup(o, direct_key);
  if (!d) return false;
  CompileCacheUse cu{
      CompileCache(cache_directory(o), cache_max_size(o)), d->key, true, "", {}, nullptr};
  if (!cu.cache.write_hit(d->key, output_file(o))) return false;
  log_message(Component::Cache, Level::Info, "local hit " + d->key + " (direct: no import)");
  write_dependencies(o, d->external_files);
  return true;
}

int drive(const Options& given, TracedRun& traced, ReportInput& rep) {
  if (int status = configure_process_logger(given.log, std::cout, std::cerr); status >= 0)
    return status;
  if (!given.report.empty()) capture_process_logs(report_log_capture());
  if (!given.compare.empty() && !given.report.empty())
    compare_trace_dir(given.compare); // before compiling
  // --device defaults to cuda when a CUDA driver and device are present, else cpu.
  Options o = given;
  if (o.device == DeviceKind::Auto)
    o.device = cuda::Context::unavailable_reason().empty() ? DeviceKind::Cuda : DeviceKind::Cpu;
  check_supported(o);
  check_depfile_options(o);
  if (o.link) return link_artifacts(o);
  warn_unused_arguments(o, is_artifact_file(o.input));
  philox::set_generator_seed(o.seed); // the random ops' key (docs/random.md)
  // Plugins first: importing the graph needs the schemas of their ops.
  for (const std::string& p : o.plugins) load_plugin(p);
  rep.backend = backend_name(o.backend);
  rep.device = o.device == DeviceKind::Cuda ? "cuda" : "cpu";
  rep.mode = o.mode == Mode::Train ? "train" : "inference";
  rep.action = action_name(o);
  if (is_artifact_file(o.input)) {
    rep.action += " of an artifact";
    BenchResult r;
    int status = run_artifact(o, &r);
    if (o.bench) traced = traced_run(r);
    if (o.bench) rep.bench_json = format_bench_json(r, o, 0);
    return status;
  }
  if (is_loop_ir_file(o.input)) return run_loop_ir_file(o);
  std::string debug_dir = o.debug_dir;
  if (debug_dir.empty())
    if (const char* env = std::getenv("FXC_COMPILE_DEBUG"); env && std::string(env) == "1")
      debug_dir = "fxc_compile_debug";
  if (debug_dir.empty() && !o.report.empty()) {
    // --report alone: the trace goes into the report (moved to <dir>/trace by write_report), and
    // so do the minifier's files (<dir>/minifier).
    debug_dir = o.debug_dir = o.report;
    rep.trace_for_report = true;
  }
  if (o.minify || repro_level() > 0) // where the minifier and FXC_REPRO_LEVEL write their repro
    rep.minifier_dir = (o.debug_dir.empty() ? std::string(".") : o.debug_dir) + "/minifier";
  DebugTrace trace = debug_dir.empty() ? DebugTrace() : DebugTrace(debug_dir);
  rep.trace_root = trace.root();

  std::string direct_key;
  if (direct_mode_applies(o, trace.enabled())) {
    try { // a file that cannot be read is the import's to report
      direct_key = direct_cache_key(o, "fxo", code_target(o));
    } catch (const Error&) {
    }
    if (!direct_key.empty() && direct_hit(o, direct_key)) return 0;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> external_files; // the graph's weights files: dependencies
  auto compilation = std::make_unique<Compilation>(o, trace, [&] {
    PassTimer t("import");
    return import_graph(o.input, &external_files);
  }());
  Compilation& c = *compilation;
  c.source.name = stem_of(o.input);
  autocast_source(c); // before the dynamic graph is kept and specialized: both are converted
  if (c.source.is_dynamic()) { // compile at the hints unless --inputs say otherwise
    c.symbolic = std::make_shared<const Graph>(c.source);
    log_symbols(*c.symbolic);
    if (has_unbacked_symbols(c.source)) {
      check_data_dependent_action(o, c.source); // the eager interpreter runs it as it is
    } else {
      c.bindings = hint_bindings(*c.symbolic);
      c.source = specialize(*c.symbolic, c.bindings);
    }
  }
  double import_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  trace.log("frontend",
            "imported " + o.input + " (" + std::to_string(c.source.nodes.size()) + " nodes)",
            import_ms);
  if (o.verbose) std::fprintf(stderr, "fxc: import: %.3f ms\n", import_ms);
  // --seed keys the random ops too; with --inputs and none of them it does nothing.
  if (o.seed_given && !o.inputs.empty() && !o.bisect && !o.minify &&
      std::none_of(c.source.nodes.begin(), c.source.nodes.end(),
                   [](const Node& n) { return target_has_tag(n.target, OpTag::Random); }))
    report_warning(o, "argument unused with --inputs (every input comes from the file, and the "
                      "graph has no random op): '--seed'");

  if (o.explain_cache) { // the key of the default action's compile, and why it would miss
    if (!o.inputs.empty()) specialize_to_inputs(c, load_inputs(c.source, o));
    return explain_cache(o, c.source, external_files);
  }
  if (!o.stop_after.empty()) { // the IR after the step to -o (if given), then nothing else
    run_pipeline(c);
    if (!o.output.empty()) write_text(o.output, c.stop_text);
    trace.finish();
    return 0;
  }
  if (o.emit == "fx") {
    write_text(o.output, print_readable(c.symbolic ? *c.symbolic : c.source));
    write_dependencies(o, external_files);
    trace.finish();
    return 0;
  }
  if (std::string emit = effective_emit(o);
      emit == "llvm" || emit == "ptx" || emit == "obj" || emit == "cpp") {
    run_pipeline(c);
    std::string text = emitted_code(c, emit);
    write_text(output_file(o), text);
    write_dependencies(o, external_files);
    trace.finish();
    return 0;
  }
  if (o.emit == "fxg") {
    // An .fxg names its weights file, written beside it: standard output has no "beside".
    if (o.output == "-")
      for (const GraphInput& in : c.source.inputs)
        if (in.kind != InputKind::UserInput && c.source.weights.count(in.fqn) &&
            !c.source.weights.at(in.fqn).init)
          throw UsageError(
              "--emit=fxg -o -: the graph's weights are written to a .safetensors "
              "file beside the .fxg, which standard output has not; give -o <file>.fxg");
    write_fxg(c.symbolic ? *c.symbolic : c.source,
              o.output.empty() ? stem_of(o.input) + ".fxg" : o.output);
    write_dependencies(o, external_files);
    trace.finish();
    return 0;
  }

  if (o.bisect || o.minify) {
    std::vector<Tensor> inputs = load_inputs(c.source, o);
    if (c.symbolic) specialize_to_inputs(c, inputs);
    int status = o.bisect ? run_bisect(o, c.source, inputs) : run_minify(o, c.source, inputs);
    trace.finish();
    return status;
  }
  if (!o.run && !o.bench && !o.check_accuracy) {
    // The default action: compile to an .fxo. With --inputs, for those inputs' shapes.
    if (!o.inputs.empty()) specialize_to_inputs(c, load_inputs(c.source, o));
    CompileCacheUse cu = open_compile_cache(o, c.source, external_files, trace.enabled());
    if (!direct_key.empty() && !cu.key.empty())
      direct_remember(o, direct_key, cu.key, external_files);
    // A hit links the entry as the output file (or copies it) without reading it into memory.
    bool hit = tiered_write_hit(cu, o, output_file(o)); // local, then --remote-cache
    log_cache_decision(cu, hit);
    if (hit)
      log_message(Component::Driver, Level::Info,
                  "wrote " + (output_file(o).empty() ? "standard output" : output_file(o)) +
                      " from the cache");
    if (!hit) {
      // CUDA: the one PTX module is compiled on one thread inside the stages, so the weights are
      // made beside it. (The CPU's kernels compile on every core in make_artifact, which makes
      // them beside that; started here, they measured slower: 1.2 -> 1.5 s for ResNet-50 train.)
      std::optional<WeightPrefetch> prefetch;
      if (o.device == DeviceKind::Cuda) prefetch.emplace(c.source);
      run_pipeline(c);
      auto artifact = std::make_unique<CompiledArtifact>(make_artifact(c));
      write_artifact_output(cu, o, *artifact);
      keep_until_exit(std::move(artifact));
    }
    write_dependencies(o, external_files);
    trace.finish();
    keep_until_exit(std::move(compilation));
    return 0;
  }

  std::vector<Tensor> inputs = [&] {
    PassTimer t("load inputs"); // --inputs, or seeded random ones: not compile time
    return load_inputs(c.source, o);
  }();
  if (c.symbolic) specialize_to_inputs(c, inputs); // the guards are then those of these sizes
  log_guards(c.source, inputs);
  if (!c.symbolic) specialize_to_inputs(c, inputs);
  int level = repro_level();
  if (level == 3) write_repro(o, c.source, inputs, "compilation (FXC_REPRO_LEVEL=3)");
  if (level > 0) {
    // Compile and run in a child so that a failure (even a crash) leaves the driver able to
    // write the repro or minify, as PyTorch does under TORCHDYNAMO_REPRO_LEVEL.
    ChildOutcome r = run_in_child([&] { return run_backend(o, o.backend, c.source, inputs); });
    if (r.kind != ChildOutcome::Ok) {
      std::fprintf(stderr, "%s\n", r.message.c_str());
      if (level == 1)
        write_repro(o, c.source, inputs, "failure (FXC_REPRO_LEVEL=1)");
      else
        run_minify(o, c.source, inputs);
      return 1;
    }
    if (level == 4 && run_minify(o, c.source, inputs) != 0) return 1;
  }
  auto tc = std::chrono::steady_clock::now();
  // --run with inductor goes through the compile cache: a hit runs the cached artifact.
  bool cached_run = o.backend == Backend::Inductor && !o.bench;
  CompileCacheUse cu = cached_run ? open_compile_cache(o, c.source, external_files, trace.enabled())
                                  : CompileCacheUse{CompileCache(""), "", false, "", {}, nullptr};
  if (cached_run)
    if (std::optional<std::string> bytes = tiered_lookup(cu, o))
      c.executable = std::make_unique<LoadedExecutable>(
          *bytes, cu.cache.enabled() ? cu.cache.entry_path(cu.key) : "<remote cache>", o.input);
  if (cached_run) log_cache_decision(cu, c.executable != nullptr);
  if (!c.executable) {
    run_pipeline(c);
    if (cu.cache.enabled() || cu.remote) tiered_store(cu, o, serialize_artifact(make_artifact(c)));
  }
  write_dependencies(o, external_files); // -MF/-MT: what the compiled graph was built from
  double compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tc).count();
  if (o.bench) {
    BenchResult r = bench(c, inputs, BenchOptions{});
    if (o.json)
      std::fputs(format_bench_json(r, o, compile_ms).c_str(), stdout);
    else
      std::printf("%s: %s: %s", o.input.c_str(), backend_name(o.backend), format_bench(r).c_str());
    traced = traced_run(r);
    rep.bench_json = format_bench_json(r, o, compile_ms);
    trace.write("fxc/bench.json", rep.bench_json, "bench");
    trace.finish();
    return 0;
  }
  int status = run_and_check(c, inputs);
  trace.finish();
  if (trace.enabled() && !rep.trace_for_report)
    std::fprintf(stderr, "fxc: debug trace written to %s\n", trace.root().c_str());
  return status;
}

} // namespace

namespace {

// '-' as the graph reads standard input, as clang does. The readers seek and map their file, so
// the bytes are spooled into a private temporary directory first, removed at exit; diagnostics
// name the input "<stdin>".
class StdinGraph {
public:
  explicit StdinGraph(const Options& o) {
    if (o.input != "-") return;
    if (o.output.empty() && !output_file(o).empty())
      throw UsageError("reading the graph from standard input ('-') needs -o <file>");
    if (wants_depfile(o)) throw UsageError("-MD cannot name standard input as a dependency");
    std::string tmpl = (fs::temp_directory_path() / "fxc-stdin-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      throw Error("<stdin>", std::string("cannot spool: ") + std::strerror(errno));
    dir_ = tmpl;
    path_ = dir_ + "/stdin";
    OutputFile out(path_, "cannot spool standard input");
    char buf[1 << 16];
    size_t total = 0;
    for (ssize_t n; (n = ::read(0, buf, sizeof buf)) != 0;) {
      if (n < 0) {
        if (errno == EINTR) continue;
        throw Error("<stdin>", std::string("cannot read: ") + std::strerror(errno));
      }
      out.write(std::string(buf, size_t(n)));
      total += size_t(n);
    }
    out.commit();
    if (total == 0)
      throw Error("<stdin>", "standard input is empty: expected a graph (.pt2, .fxg) or an .fxo");
  }
  ~StdinGraph() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

private:
  std::string dir_, path_;
};

} // namespace

int run_driver(const Options& given) {
  StdinGraph in(given);
  Options o = given;
  if (!in.path().empty()) {
    o.input = in.path();
    o.input_spooled = true;
  }
  if (o.time_passes || !o.trace.empty() || !o.report.empty()) enable_pass_timing(true);
  TracedRun traced;
  ReportInput rep;
  rep.dir = o.report;
  rep.compare = o.compare;
  rep.input = given.input;
  rep.command = o.command_line;
  // A failed run leaves no report, and no trace written for it behind.
  struct Scratch {
    const ReportInput& rep;
    ~Scratch() {
      std::error_code ec;
      if (rep.trace_for_report && !rep.trace_root.empty()) fs::remove_all(rep.trace_root, ec);
    }
  } scratch{rep};
  int status;
  try {
    status = drive(o, traced, rep);
  } catch (const Error& e) {
    if (in.path().empty() || e.file() != in.path()) throw;
    throw Error("<stdin>", e.message(), e.node(), e.op());
  }
  if (o.time_passes) std::fputs(format_pass_report(pass_spans()).c_str(), stderr);
  if (!o.trace.empty())
    write_chrome_trace(o.trace, pass_spans(), traced.steps, traced.start_us, traced.track);
  if (!o.report.empty() && !rep.action.empty()) {
    rep.status = status;
    rep.passes = pass_spans();
    rep.logs = process_logger().captured();
    rep.failure_tool_output = failure_tools_transcript();
    std::error_code ec;
    fs::create_directories(o.report, ec);
    write_chrome_trace((fs::path(o.report) / "trace.json").string(), rep.passes, traced.steps,
                       traced.start_us, traced.track);
    rep.chrome_trace = "trace.json";
    write_report(rep);
    std::fprintf(stderr, "fxc: report written to %s/index.html\n", o.report.c_str());
  }
  return status;
}

} // namespace fxc
