// The one pipeline (docs/design.md §1): the stage list, in order; each backend runs a prefix of it.
#include "driver/pipeline.h"

#include "driver/cache.h"
#include "driver/logging.h"
#include "frontend/custom_ops.h"
#include "frontend/diag.h"
#include "frontend/fxg.h"
#include "frontend/pass_timer.h"
#include "frontend/printer.h"
#include "frontend/specialize.h"
#include "frontend/verify.h"
#include "passes/attention_match.h"
#include "passes/autograd.h"
#include "passes/decompose.h"
#include "passes/partition.h"
#include "runtime/interpreter.h"
#ifdef FXC_HAVE_CODEGEN
#include "codegen/inductor.h"
#include "runtime/cudnn.h"
#include "runtime/onednn.h"
#endif

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fxc {

namespace {

using GraphRunner = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Runs the pipeline's graphs: one inference graph, or train mode's forward then backward with
// output gradients of ones (as out.sum().backward()).
class GraphExecutable : public Executable {
public:
  GraphExecutable(const Compilation& c, std::vector<GraphRunner> runners)
      : runners_(std::move(runners)), train_(c.opts.mode == Mode::Train), aot_(c.aot) {}

  NamedTensors run(const std::vector<Tensor>& user_inputs) override {
    NamedTensors out;
    std::vector<Tensor> fw = runners_.at(0)(user_inputs);
    size_t n_user = train_ ? aot_->num_user_outputs : fw.size();
    for (size_t i = 0; i < n_user; ++i) out.emplace_back("output_" + std::to_string(i), fw[i]);
    if (!train_) return out;
    std::vector<Tensor> grads =
        runners_.at(1)(backward_inputs(fw, n_user, aot_->tangent_output_index));
    assert(grads.size() == aot_->grad_names.size() && "backward returns one gradient per name");
    for (size_t i = 0; i < grads.size(); ++i) out.emplace_back(aot_->grad_names[i], grads[i]);
    return out;
  }

private:
  std::vector<GraphRunner> runners_;
  bool train_;
  std::shared_ptr<const AotGraphs> aot_;
};

void write_graph_artifacts(Compilation& c, const char* stage, const char* file) {
  for (const StageGraph& sg : c.graphs)
    c.trace.write("inductor/" + sg.folder + "/" + file, print_readable(sg.graph), stage, sg.folder);
}

// A standalone graph file per graph that reproduces it with fxc (weights beside it).
void write_runnable_graphs(Compilation& c) {
  if (!c.trace.enabled()) return;
  for (const StageGraph& sg : c.graphs) {
    std::string rel = "inductor/" + sg.folder + "/fx_graph_runnable.fxg";
    std::filesystem::create_directories(std::filesystem::path(c.trace.root()) / "inductor" /
                                        sg.folder);
    write_fxg(sg.graph, c.trace.root() + "/" + rel);
    c.trace.record(rel, "frontend", sg.folder);
    std::string weights = "inductor/" + sg.folder + "/fx_graph_runnable.safetensors";
    if (std::filesystem::exists(c.trace.root() + "/" + weights))
      c.trace.record(weights, "frontend", sg.folder);
  }
}

void log_aot_graphs(const Compilation& c, const std::string& what) {
  Logger& log = process_logger();
  if (!log.enabled(Artifact::AotGraphs)) return;
  for (const StageGraph& sg : c.graphs)
    log.artifact(Artifact::AotGraphs,
                 "===== " + sg.role + " graph, " + what + " =====\n" + print_readable(sg.graph));
}

std::string folder_name(const Compilation& c, const char* role, int n, int k) {
  return c.source.name + "__0_" + role + "_" + std::to_string(n) + "." + std::to_string(k);
}

// Stage 1: the frontend. Import already happened; verify the graph and set up the one
// inference graph that later stages rewrite.
void stage_frontend(Compilation& c) {
  verify_graph(c.source);
  if (c.symbolic) // the graph as exported, with its symbols, and the sizes compiled for
    c.trace.write("fxc/dynamic_shapes.txt",
                  describe_symbols(*c.symbolic) + "compiled at " + format_bindings(c.bindings) +
                      "\n\n" + print_readable(*c.symbolic),
                  "frontend");
  c.graphs.clear();
  c.graphs.push_back({"inference", folder_name(c, "inference", 0, 0), c.source});
  if (c.opts.mode == Mode::Inference) {
    write_graph_artifacts(c, "frontend", "fx_graph_readable.txt");
    write_runnable_graphs(c);
  }
}

void set_train_graphs(Compilation& c, const AotGraphs& aot) {
  c.graphs.clear();
  c.graphs.push_back({"forward", folder_name(c, "forward", 1, 0), aot.forward});
  c.graphs.push_back({"backward", folder_name(c, "backward", 2, 1), aot.backward});
  c.aot = std::make_shared<AotGraphs>(aot);
}

// Stage 2: AOT autograd. Train mode builds the joint graph and splits it with the default
// partitioner (save what the backward reads); inference has no backward.
void stage_aot(Compilation& c) {
  if (c.opts.mode == Mode::Inference) {
    c.trace.log("aot", "inference mode: no joint graph");
    return;
  }
  c.joint = std::make_shared<JointGraph>(build_joint_graph(c.source));
  AotGraphs aot = partition_joint(*c.joint, PartitionStrategy::Default);
  c.aot_log = aot.log;
  set_train_graphs(c, aot);
  c.trace.write("aot/aot_" + c.source.name + "___0_debug.log", c.aot_log, "aot");
  log_aot_graphs(c, "aot_eager (default partition)");
  write_graph_artifacts(c, "aot", "fx_graph_readable.txt");
  write_runnable_graphs(c);
}

#ifdef FXC_HAVE_CODEGEN
bool needs_execution(const Options& o) {
  return o.run || o.bench || o.check_accuracy || o.bisect || o.minify;
}

// The default action: an .fxo, the plan and its kernels, built without a device.
bool builds_artifact(const Options& o) {
  return o.emit.empty() && !o.emit_asm && !needs_execution(o);
}

// --print-after/--stop-after at a step past code generation (the host plan, loading).
bool late_step(const Options& o) {
  return o.print_after == "host-plan" || o.print_after == "load" || o.stop_after == "host-plan" ||
         o.stop_after == "load";
}

// Whether stage 4 builds only PTX for --device=cuda (--emit=ptx and the like: no memory plan,
// host plan or device; with --max-autotune the device times candidates, so the full build).
bool ptx_only(const Options& o) {
  return o.device == DeviceKind::Cuda && !needs_execution(o) && !builds_artifact(o) &&
         !o.max_autotune && !late_step(o);
}
#endif

// Whether inductor computes 2-D convolution gradients with cuDNN, so that decompose keeps their
// convolution_backward nodes: a CUDA build whose convolutions go to cuDNN (built to run
// elsewhere, PTX or an artifact: cuDNN assumed found at run time, as for the forward
// convolutions; run here: when it is found now).
bool inductor_cudnn(const Compilation& c) {
#ifdef FXC_HAVE_CODEGEN
  if (c.opts.backend != Backend::Inductor || c.opts.device != DeviceKind::Cuda) return false;
  return !needs_execution(c.opts) || cuda::Cudnn::unavailable_reason().empty();
#else
  (void)c;
  return false;
#endif
}

// Inductor for the CPU where oneDNN loads: 3-D convolutions stay whole (inference; train graphs
// keep the 2-D rewrite, whose gradients are 2-D convolutions), and so do the convolution_backward
// nodes oneDNN's backward primitives compute (train).
bool inductor_onednn(const Compilation& c) {
#ifdef FXC_HAVE_CODEGEN
  return c.opts.backend == Backend::Inductor && c.opts.device == DeviceKind::Cpu &&
         onednn::unavailable_reason().empty();
#else
  (void)c;
  return false;
#endif
}

// Stage 3: decompositions, then (train mode) the min-cut rematerialization partitioner on the
// decomposed joint graph, so both graphs are decomposed exactly as inductor will see them.
void stage_decompose(Compilation& c) {
  DecomposeOptions dopts;
  dopts.keep_cudnn_conv_backward = inductor_cudnn(c);
  dopts.keep_onednn_conv_backward = inductor_onednn(c);
  if (c.opts.mode == Mode::Inference) {
    dopts.keep_conv3d = inductor_onednn(c);
    dopts.keep_cudnn_attention = inductor_cudnn(c) && c.opts.attention == "fused";
    if (dopts.keep_cudnn_attention) {
      // Core ATen's attention (bmm, softmax, bmm) back into one node for the fused call.
      int matched = 0;
      c.graphs.front().graph = match_attention(c.graphs.front().graph, &matched);
      if (matched)
        log_message(Component::Inductor, Level::Info,
                    "attention: " + std::to_string(matched) +
                        " bmm-softmax-bmm pattern(s) matched into scaled_dot_product_attention");
    }
    c.graphs.front().graph = decompose(c.graphs.front().graph, dopts);
    write_graph_artifacts(c, "decompose", "fx_graph_transformed.txt");
    return;
  }
  int64_t default_bytes = c.aot->saved_bytes;
  c.joint->graph = decompose(c.joint->graph, dopts);
  AotGraphs aot = partition_joint(*c.joint, PartitionStrategy::MinCut);
  std::ostringstream log;
  log << c.aot_log << "\n=== after decompositions: min-cut rematerialization partition ===\n"
      << aot.log << "\nsaved bytes: default partition " << default_bytes << ", min-cut "
      << aot.saved_bytes << "\n";
  c.aot_log = log.str();
  set_train_graphs(c, aot);
  c.trace.write("aot/aot_" + c.source.name + "___0_debug.log", c.aot_log, "decompose");
  log_aot_graphs(c, "after decompositions (min-cut partition)");
  write_graph_artifacts(c, "decompose", "fx_graph_transformed.txt");
}

#ifdef FXC_HAVE_CODEGEN
// graph_breaks, schedule and perf_hints from the post-fusion plan: one entry per step
// ("kernel <name>: ..." or "extern <buf> = <op> (<kind>)(<args>)").
void log_plan_artifacts(const std::string& folder, const std::string& post_fusion) {
  Logger& log = process_logger();
  std::istringstream in(post_fusion);
  std::string line, schedule, breaks, hints;
  int step = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == ' ') continue;
    schedule += folder + " step " + std::to_string(step++) + ": " + line + "\n";
    size_t fb = line.find(" (fallback)");
    if (line.rfind("extern ", 0) != 0 || fb == std::string::npos) continue;
    size_t eq = line.find(" = ");
    std::string op = eq == std::string::npos ? line : line.substr(eq + 3, fb - eq - 3);
    if (find_custom_op(op)) { // a plugin's op: an extern call by design, not a graph break
      hints += folder + ": custom op " + op +
               " runs as an extern call to its plugin's kernel; its "
               "inputs and output round-trip through memory\n";
      continue;
    }
    breaks += folder + ": fallback " + op +
              ": no inductor lowering; runs the reference kernel as an extern call\n";
    hints += folder + ": " + op +
             " runs as an unfused fallback; its inputs and output round-trip through memory\n";
  }
  log.artifact(Artifact::Schedule, schedule);
  if (!breaks.empty()) log.artifact(Artifact::GraphBreaks, breaks);
  if (!hints.empty()) log.artifact(Artifact::PerfHints, hints);
}

// The hooks of inductor's steps: --print-after prints the step's text to stderr, --stop-after
// keeps it for -o (and the pipeline ends after this graph's build), --verify-each.
StepHooks step_hooks(Compilation& c, const std::string& folder) {
  StepHooks h;
  h.print_after = c.opts.print_after;
  h.stop_after = c.opts.stop_after;
  h.verify_each = c.opts.verify_each;
  h.print = [&c, folder](const std::string& step, const std::string& text) {
    if (step == c.opts.print_after)
      std::fprintf(stderr, "// ----- IR after %s (%s) -----\n%s", step.c_str(), folder.c_str(),
                   text.c_str());
    if (step == c.opts.stop_after) {
      c.stopped = true;
      c.stop_text += text;
    }
  };
  return h;
}

// What inductor made of one graph, for the debug trace and the --log artifacts.
struct InductorOutput {
  std::string pre, post, fusion_log, output_code, hints;
  const std::vector<GeneratedKernel>* kernels = nullptr;
};

void write_inductor_artifacts(Compilation& c, const StageGraph& sg, const InductorOutput& out,
                              bool cuda) {
  std::string dir = "inductor/" + sg.folder + "/";
  c.trace.write(dir + "ir_pre_fusion.txt", out.pre, "inductor", sg.folder);
  c.trace.write(dir + "ir_post_fusion.txt", out.post, "inductor", sg.folder);
  if (!cuda) c.trace.write(dir + "output_code.cpp", out.output_code, "inductor", sg.folder);
  for (const GeneratedKernel& k : *out.kernels) {
    c.trace.write(dir + "kernels/" + k.name + ".ll", k.ll, "inductor", sg.folder);
    if (cuda) c.trace.write(dir + "kernels/" + k.name + ".ptx", k.ptx, "inductor", sg.folder);
  }
  Logger& log = process_logger();
  log.artifact(Artifact::IrPreFusion, "===== " + sg.folder + " =====\n" + out.pre);
  log.artifact(Artifact::IrPostFusion, "===== " + sg.folder + " =====\n" + out.post);
  log.artifact(Artifact::Fusion, out.fusion_log);
  log_plan_artifacts(sg.folder, out.post);
  if (!out.hints.empty()) {
    std::istringstream hints(out.hints);
    std::string text;
    for (std::string line; std::getline(hints, line);) text += sg.folder + ": " + line + "\n";
    log.artifact(Artifact::PerfHints, text);
  }
  if (!cuda)
    log.artifact(Artifact::OutputCode,
                 "===== " + sg.folder + "/output_code.cpp =====\n" + out.output_code);
  for (const GeneratedKernel& k : *out.kernels)
    if (cuda)
      log.artifact(Artifact::OutputCode, "===== kernel " + k.name + " (PTX) =====\n" + k.ptx);
}

ConvLayout conv_layout_of(const Options& o) {
  std::string l = o.effective_conv_layout();
  return l == "nhwc" ? ConvLayout::Nhwc : l == "auto" ? ConvLayout::Auto : ConvLayout::Nchw;
}

// Whether each CUDA kernel's own PTX is wanted: for the debug trace, --log=output_code and
// --print-after/--stop-after=codegen. Otherwise --emit's one module and an artifact's compile the
// kernels together, once (libdevice linked and the pipeline run once).
bool need_kernel_ptx(const Compilation& c) {
  return c.trace.enabled() || process_logger().enabled(Artifact::OutputCode) ||
         c.opts.print_after == "codegen" || c.opts.stop_after == "codegen";
}

// Stage 4, PTX only (--device=cuda --emit=ptx): lowering, fusion and the kernels' PTX per graph;
// no memory plan, host plan or device.
void stage_inductor_cuda(Compilation& c) {
  c.ptx.clear();
  for (const StageGraph& sg : c.graphs) {
    InductorOptions io;
    io.inject_bug = c.opts.inject_bug;
    io.log_name = sg.folder;
    io.kernel_ptx = need_kernel_ptx(c);
    io.conv_layout = conv_layout_of(c.opts);
    io.steps = step_hooks(c, sg.folder);
    auto prog = std::make_shared<PtxProgram>(compile_inductor_ptx(sg.graph, io, c.opts.cuda_arch));
    std::vector<GeneratedKernel> kernels;
    for (const PtxKernelInfo& k : prog->kernels) kernels.push_back({k.name, k.ll, k.ptx});
    InductorOutput out{
        prog->ir_pre_fusion, prog->ir_post_fusion, prog->fusion_log, "", "", &kernels};
    write_inductor_artifacts(c, sg, out, true);
    c.trace.log("inductor", sg.folder + ": " + std::to_string(prog->kernels.size()) +
                                " PTX kernels for " + c.opts.cuda_arch);
    c.ptx.push_back(prog);
  }
}

// Stage 4: inductor — lowering, fusion, memory planning, code generation, the host plan and
// loading, per graph (codegen/inductor.cpp lists the steps).
void stage_inductor(Compilation& c) {
  bool cuda = c.opts.device == DeviceKind::Cuda;
  bool artifact = builds_artifact(c.opts);
  if (ptx_only(c.opts)) { // --emit=ptx: PTX only, no device needed
    stage_inductor_cuda(c);
    return;
  }
  c.compiled.clear();
  for (const StageGraph& sg : c.graphs) {
    InductorOptions io;
    io.inject_bug = c.opts.inject_bug;
    io.log_name = sg.folder;
    io.cuda = cuda;
    io.load_cuda = needs_execution(c.opts);
    // An artifact's kernels are compiled once, into its object or PTX module (make_artifact),
    // not also loaded here.
    io.load_cpu = !artifact || late_step(c.opts);
    io.kernel_ptx = need_kernel_ptx(c);
    io.cuda_arch = c.opts.cuda_arch;
    io.matmul_tf32 = c.opts.matmul_tf32();
    io.conv_tf32 = c.opts.conv_tf32();
    io.train = c.opts.mode == Mode::Train;
    io.cuda_graphs = c.opts.cuda_graphs;
    io.freeze = c.opts.freeze;
    io.conv_layout = conv_layout_of(c.opts);
    io.max_autotune = c.opts.max_autotune;
    if (io.max_autotune) io.autotune_dir = cache_directory(c.opts);
    io.steps = step_hooks(c, sg.folder);
    // --emit=llvm|obj|cpp need the kernels and the host plan (the debug trace's
    // output_code.cpp), not the JIT: the build stops after host-plan.
    std::string emit = c.opts.emit.empty() && c.opts.emit_asm && !cuda ? "llvm" : c.opts.emit;
    if (!cuda && !c.opts.max_autotune && io.steps.stop_after.empty() &&
        (emit == "llvm" || emit == "obj" || emit == "cpp"))
      io.steps.stop_after = "host-plan";
    auto cg = std::make_shared<CompiledGraph>(compile_inductor(sg.graph, io));
    // The artifact's machine code (make_artifact) compiles while the next graph lowers.
    if (artifact && !cuda && io.steps.stop_after.empty() && !cg->kernels().empty())
      cg->start_object_codes();
    for (const std::string& line : cg->autotune_log())
      process_logger().log(Component::Autotune, Level::Info, sg.folder + ": " + line);
    InductorOutput out{cg->ir_pre_fusion(), cg->ir_post_fusion(), cg->fusion_log(),
                       cg->output_code(),   cg->perf_hints(),     &cg->kernels()};
    write_inductor_artifacts(c, sg, out, cuda);
    c.trace.log("inductor", sg.folder + ": " + std::to_string(cg->num_kernels()) +
                                " generated kernels, " + std::to_string(cg->num_extern_calls()) +
                                " extern calls, planned peak " + std::to_string(cg->peak_bytes()) +
                                " bytes");
    c.compiled.push_back(cg);
  }
}
#endif

struct Stage {
  const char* name;
  void (*run)(Compilation&);
};

// The pipeline. Order matters: each stage consumes the previous one's graphs, and a backend
// is the prefix of this list up to its own stage (stage_count).
const Stage kStages[] = {
    {"frontend", stage_frontend},
    {"aot", stage_aot},
    {"decompose", stage_decompose},
#ifdef FXC_HAVE_CODEGEN
    {"inductor", stage_inductor},
#endif
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

std::vector<Tensor> backward_inputs(const std::vector<Tensor>& fw, size_t num_user_outputs,
                                    const std::vector<size_t>& tangent_output_index) {
  std::vector<Tensor> in(fw.begin() + long(num_user_outputs), fw.end());
  for (size_t k : tangent_output_index) {
    Tensor ones = Tensor::empty(fw.at(k).dtype(), fw.at(k).sizes());
    for (int64_t i = 0; i < ones.numel(); ++i) ones.store(i, 1.0);
    in.push_back(ones);
  }
  return in;
}

std::vector<std::string> pipeline_step_names() {
  std::vector<std::string> names = {"frontend", "aot", "decompose"};
#ifdef FXC_HAVE_CODEGEN
  for (const std::string& s : inductor_step_names()) names.push_back(s);
#endif
  return names;
}

bool backend_runs_step(Backend b, const std::string& name) {
  std::vector<std::string> names = pipeline_step_names();
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return false;
  int index = int(it - names.begin());
  return index < 3 ? index < stage_count(b) : b == Backend::Inductor;
}

int stage_count(Backend b) {
  switch (b) {
  case Backend::Eager:
    return 1;
  case Backend::AotEager:
    return 2;
  case Backend::AotEagerDecompPartition:
    return 3;
  case Backend::Inductor:
    return 4;
  }
  return 1;
}

void run_pipeline(Compilation& c) {
  int n = stage_count(c.opts.backend);
  int available = int(sizeof kStages / sizeof kStages[0]);
  if (n > available)
    throw Error(c.opts.input, std::string("backend '") + backend_name(c.opts.backend) +
                                  "' is not available: this fxc was built without LLVM");
  if (log_enabled(Component::Driver, Level::Info)) {
    std::string stages;
    for (int i = 0; i < n; ++i) stages += (i ? ", " : "") + std::string(kStages[i].name);
    log_message(Component::Driver, Level::Info,
                std::string("pipeline: backend ") + backend_name(c.opts.backend) + " runs " +
                    stages + " (" + (c.opts.mode == Mode::Train ? "train" : "inference") +
                    " mode, device " + (c.opts.device == DeviceKind::Cuda ? "cuda" : "cpu") + ")");
  }
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    PassTimer timer(kStages[i].name);
    kStages[i].run(c);
    if (c.opts.verify_each)
      for (const StageGraph& sg : c.graphs) verify_graph(sg.graph);
    double ms = ms_since(t0);
    c.trace.log(kStages[i].name, "done", ms);
    if (c.opts.verbose) std::fprintf(stderr, "fxc: %s: %.3f ms\n", kStages[i].name, ms);
    const std::string name = kStages[i].name;
    for (const StageGraph& sg : c.graphs) {
      if (c.opts.print_after == name)
        std::fprintf(stderr, "// ----- IR after %s (%s) -----\n%s", name.c_str(), sg.folder.c_str(),
                     print_readable(sg.graph).c_str());
      if (c.opts.stop_after == name) c.stop_text += print_readable(sg.graph);
    }
    if (c.opts.stop_after == name) c.stopped = true;
    if (c.stopped) return; // --stop-after: nothing runs after the step
  }
  if (!c.ptx.empty()) return; // --device=cuda cross-compilation (--emit=ptx): nothing to run
  std::vector<GraphRunner> runners;
#ifdef FXC_HAVE_CODEGEN
  for (auto cg : c.compiled)
    runners.push_back([cg](const std::vector<Tensor>& in) { return cg->run(in); });
#endif
  if (runners.empty()) {
    for (const StageGraph& sg : c.graphs) {
      auto g = std::make_shared<Graph>(sg.graph);
      runners.push_back([g](const std::vector<Tensor>& in) { return interpret(*g, in); });
    }
  }
  c.executable = std::make_unique<GraphExecutable>(c, std::move(runners));
}

} // namespace fxc
