// compile_inductor: the list of inductor's steps — lower, fuse, plan-memory, codegen,
// host-plan, load — each a function of codegen/inductor_steps.h or passes/.
#include "codegen/inductor.h"

#include "codegen/cpp_wrapper.h"
#include "codegen/inductor_steps.h"
#include "frontend/diag.h"
#include "frontend/pass_timer.h"
#include "passes/loop_ir_verify.h"
#include "runtime/cudnn.h"
#include "runtime/onednn.h"

#include <cassert>
#include <future>
#include <map>

namespace fxc {

std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor>& user_inputs) const {
  assert(impl && "run() on an empty CompiledGraph");
  if (impl->unloaded)
    throw Error(impl->source, impl->cpu_unloaded
                                  ? "this CPU build was compiled for an artifact, not loaded"
                                  : "this CUDA build was not loaded on a device");
  assert(!impl->stopped && "run() on a build that --stop-after ended");
  std::lock_guard<std::mutex> lock(impl->run_mu);
  if (impl->cuda) return impl->cuda->run(user_inputs);
  return execute_plan(impl->plan, user_inputs, *impl->pool, impl->source);
}

std::vector<Tensor> CompiledGraph::run_profiled(const std::vector<Tensor>& user_inputs,
                                                std::vector<StepProfile>* profile) const {
  assert(impl && "run_profiled() on an empty CompiledGraph");
  if (impl->unloaded)
    throw Error(impl->source, impl->cpu_unloaded
                                  ? "this CPU build was compiled for an artifact, not loaded"
                                  : "this CUDA build was not loaded on a device");
  std::lock_guard<std::mutex> lock(impl->run_mu);
  if (impl->cuda) {
    impl->cuda->upload(user_inputs);
    std::vector<StepProfile> steps = impl->cuda->time_steps();
    if (profile) profile->insert(profile->end(), steps.begin(), steps.end());
    return impl->cuda->download();
  }
  return execute_plan(impl->plan, user_inputs, *impl->pool, impl->source, profile);
}

const std::string& CompiledGraph::ir_pre_fusion() const {
  return impl->pre;
}
const std::string& CompiledGraph::ir_post_fusion() const {
  return impl->post;
}
const std::string& CompiledGraph::fusion_log() const {
  return impl->log;
}
const std::string& CompiledGraph::output_code() const {
  return impl->output_code;
}
const std::vector<GeneratedKernel>& CompiledGraph::kernels() const {
  return impl->kernels;
}
namespace {
std::vector<KernelText> kernel_texts(const std::vector<GeneratedKernel>& ks) {
  std::vector<KernelText> out;
  for (auto& k : ks) out.push_back({k.name, k.ll, ""});
  return out;
}
} // namespace

std::string CompiledGraph::llvm_module(bool optimized) const {
  if (impl->cuda)
    throw Error(impl->source, "a CUDA build has PTX kernels (kernels()[i].ptx), not host code");
  return link_kernels_ll(kernel_texts(impl->kernels), optimized);
}
std::string CompiledGraph::object_code() const {
  if (impl->cuda)
    throw Error(impl->source, "a CUDA build has PTX kernels (kernels()[i].ptx), not host code");
  return emit_kernels_object(kernel_texts(impl->kernels));
}
void CompiledGraph::start_object_codes() const {
  if (impl->cuda)
    throw Error(impl->source, "a CUDA build has PTX kernels (kernels()[i].ptx), not host code");
  std::lock_guard<std::mutex> lock(impl->objects_mu);
  if (impl->objects.valid()) return;
  impl->objects = std::async(std::launch::async, [im = impl.get(), depth = pass_depth()] {
                    ScopedPassDepth nest(depth);
                    PassTimer t("x86 object code");
                    return emit_kernels_objects(kernel_texts(im->kernels));
                  }).share();
}
const std::vector<std::string>& CompiledGraph::object_codes() const {
  start_object_codes();
  return impl->objects.get();
}
const std::string& CompiledGraph::ptx_module() const {
  // A build made to run (load_cuda) loaded each kernel's own PTX; its artifact (the compile
  // cache stores one after --run) links the same LLVM IR, as tuned, into one module here.
  std::call_once(impl->ptx_once, [&] {
    if (!impl->ptx_module.empty() || impl->kernels.empty() || impl->cuda_arch.empty()) return;
    PassTimer t("codegen (one PTX module)");
    std::vector<KernelText> texts;
    for (const GeneratedKernel& k : impl->kernels) texts.push_back({k.name, k.ll, ""});
    impl->ptx_module = link_ptx_kernels(texts, impl->cuda_arch, impl->libdevice, true);
  });
  return impl->ptx_module;
}
int CompiledGraph::num_kernels() const {
  return int(impl->kernels.size());
}
int CompiledGraph::num_extern_calls() const {
  return impl->externs;
}
int64_t CompiledGraph::peak_bytes() const {
  return impl->peak;
}
const Plan& CompiledGraph::plan() const {
  return impl->plan;
}
CudaPlanRunner* CompiledGraph::cuda_runner() const {
  return impl->cuda.get();
}
const std::string& CompiledGraph::perf_hints() const {
  return impl->hints;
}
const std::vector<std::string>& CompiledGraph::autotune_log() const {
  return impl->autotune_log;
}

const std::vector<std::string>& inductor_step_names() {
  static const std::vector<std::string> names = {"lower",   "fuse",      "plan-memory",
                                                 "codegen", "host-plan", "load"};
  return names;
}

namespace {

std::string kernels_text(const std::vector<GeneratedKernel>& kernels, bool ptx) {
  std::string s;
  for (const GeneratedKernel& k : kernels)
    s += (ptx ? "// kernel " : "; kernel ") + k.name + "\n" + (ptx ? k.ptx : k.ll);
  return s;
}

} // namespace

PtxProgram compile_inductor_ptx(const Graph& g, const InductorOptions& opts,
                                const std::string& arch, const std::string& libdevice) {
  LowerOptions lo;
  lo.inline_limit = opts.inline_limit;
  lo.train = opts.train;
  // The plan a CUDA build of this graph runs, assuming cuDNN is found at run time.
  lo.cuda = true;
  lo.cudnn = opts.cudnn;
  lo.no_cudnn_reason = "disabled";
  lo.conv_layout = opts.conv_layout;
  PtxProgram out;
  InductorFront front = lower_and_fuse(g, lo, opts);
  const LoopProgram& p = front.program;
  const Schedule& s = front.schedule;
  out.ir_pre_fusion = front.ir_pre_fusion;
  out.ir_post_fusion = front.ir_post_fusion;
  if (front.stopped) return out;
  for (auto& l : p.log) out.fusion_log += l + "\n";
  out.fusion_log += s.log;
  log_inductor(opts.log_name.empty() ? g.name : opts.log_name, g, p, s, true, -1);
  // No plan-memory: the kernels alone need no storage, and PTX takes every buffer as noalias.
  {
    PassTimer codegen("codegen (PTX)");
    for (PtxKernel& k : generate_ptx(p, s, arch, libdevice, opts.kernel_ptx))
      out.kernels.push_back({k.name, std::move(k.ll), std::move(k.ptx),
                             (k.xnumel + k.rows - 1) / k.rows, k.block, k.rows,
                             int(k.args.size())});
  }
  after_inductor_step(opts, "codegen", nullptr, [&] {
    std::string text;
    for (const PtxKernelInfo& k : out.kernels)
      text += "// kernel " + k.name + "\n" + (opts.kernel_ptx ? k.ptx : k.ll);
    return text;
  });
  return out;
}

namespace {

LowerOptions full_lower_options(const InductorOptions& opts) {
  LowerOptions lo;
  lo.inline_limit = opts.inline_limit;
  lo.train = opts.train;
  if (!opts.inject_bug.empty()) {
    size_t colon = opts.inject_bug.find(':');
    std::string kind = colon == std::string::npos ? "" : opts.inject_bug.substr(colon + 1);
    if (colon == 0 || (kind != "compile_error" && kind != "runtime_error" && kind != "accuracy"))
      throw Error("", "--inject-bug expects <op>:compile_error|runtime_error|accuracy, got '" +
                          opts.inject_bug + "'");
    lo.inject_op = opts.inject_bug.substr(0, colon);
    lo.inject_kind = kind;
  }
  if (opts.cuda) {
    lo.cuda = true;
    // A plan this process runs uses cuDNN when it loads here. A plan built to run elsewhere (an
    // artifact: load_cuda off) assumes it, as the PTX-only build does, so that the artifact is
    // the same whether or not the building machine has a GPU and cuDNN.
    std::string why = !opts.cudnn      ? "disabled"
                      : opts.load_cuda ? cuda::Cudnn::unavailable_reason()
                                       : "";
    lo.cudnn = why.empty();
    lo.no_cudnn_reason = why;
    lo.conv_layout = opts.conv_layout;
  } else {
    lo.no_onednn_reason = onednn::unavailable_reason();
    lo.onednn = lo.no_onednn_reason.empty();
    lo.conv_layout = opts.conv_layout;
  }
  return lo;
}

CompiledGraph stopped(std::shared_ptr<CompiledGraph::Impl> impl) {
  impl->stopped = true;
  CompiledGraph cg;
  cg.impl = std::move(impl);
  return cg;
}

// The steps after fuse: plan-memory, codegen, host-plan, load.
CompiledGraph compile_fused(const Graph& g, const InductorFront& front,
                            const InductorOptions& opts) {
  auto impl = std::make_shared<CompiledGraph::Impl>();
  impl->source = g.source;
  const LoopProgram& p = front.program;
  const Schedule& s = front.schedule;
  for (const std::string& l : p.log)
    if (l.rfind("im2col: ", 0) == 0) impl->hints += l + "\n";
  impl->pre = front.ir_pre_fusion;
  impl->post = front.ir_post_fusion;
  if (front.stopped) return stopped(impl);

  // plan-memory: after fusion, because a buffer fused into its reader needs no storage and a
  // slot's lifetime ends at its last reading kernel, which only the schedule knows.
  MemoryPlanOptions mo;
  mo.reuse = mo.inplace = opts.reuse_memory;
  // The PTX kernels take every buffer as noalias: no output may share an input's slot.
  if (opts.cuda) mo.inplace = false;
  // Train graphs take their weights as user inputs; only inference plans bind them.
  mo.freeze = opts.freeze && !opts.train;
  MemoryPlan mp = [&] {
    PassTimer t("memory_plan");
    return plan_memory(p, s, mo);
  }();
  for (auto& l : p.log) impl->log += l + "\n";
  impl->log += s.log + mp.log;
  impl->peak = mp.peak_bytes;
  log_inductor(opts.log_name.empty() ? g.name : opts.log_name, g, p, s, opts.cuda, mp.peak_bytes);
  if (after_inductor_step(opts, "plan-memory", &p, [&] { return impl->post + mp.log; }))
    return stopped(impl);
  impl->pool = std::make_unique<ThreadPool>(opts.num_threads);

  // codegen: after plan-memory, because a kernel's arguments may alias only where the plan put
  // an output in place over an input (CPU; PTX kernels take every argument as noalias).
  std::map<std::string, PtxKernel> ptx;
  if (opts.cuda) {
    impl->cuda_arch = opts.cuda_arch;
    impl->libdevice = opts.libdevice;
    PassTimer t("codegen (PTX)");
    // Each kernel's own PTX where it is loaded, tuned or printed; an artifact's kernels compile
    // together after the load step (ptx_module()).
    bool each = opts.load_cuda || opts.max_autotune || opts.kernel_ptx;
    for (PtxKernel& k : generate_ptx(p, s, opts.cuda_arch, opts.libdevice, each)) ptx[k.name] = k;
    for (const ScheduleItem& item : s.items)
      if (item.is_kernel) {
        const PtxKernel& k = ptx.at(s.kernels[item.index].name);
        impl->kernels.push_back({k.name, k.ll, k.ptx});
      }
  } else {
    impl->compiler = make_x86_compiler();
    impl->kernels = generate_llvm_kernels(p, s, mp, *impl->compiler);
  }
  if (after_inductor_step(opts, "codegen", nullptr,
                          [&] { return kernels_text(impl->kernels, opts.cuda); }))
    return stopped(impl);

  // host-plan: after codegen, because a CUDA kernel's block and rows per block are chosen by
  // the PTX generator; before load, which fills in the entry points of the plan's kernels.
  std::vector<int> kernel_index;
  impl->plan = build_host_plan(g, p, s, mp, ptx, opts.cuda && opts.matmul_tf32,
                               opts.cuda && opts.conv_tf32, &kernel_index);
  impl->plan.cuda_graphs = opts.cuda && opts.cuda_graphs;
  impl->externs = int(impl->plan.externs.size());
  if (!opts.cuda) {
    PassTimer t("output_code.cpp");
    impl->output_code = render_cpp_wrapper(impl->plan, g.source);
  }
  if (after_inductor_step(opts, "host-plan", nullptr,
                          [&] { return opts.cuda ? "" : impl->output_code; }))
    return stopped(impl);

  // load: the last step, since it runs code (the JIT, the device) that every step before it
  // must have finished making.
  const bool jit = opts.load_cpu || opts.max_autotune;
  impl->unloaded = opts.cuda ? !opts.load_cuda : !jit;
  impl->cpu_unloaded = !opts.cuda && !jit;
  // --max-autotune times the kernels on the device even for a build that is not run here (an
  // .fxo artifact): the chosen PTX and algorithms are what the plan keeps.
  if (opts.cuda && (opts.load_cuda || opts.max_autotune))
    load_cuda_kernels(g, p, s, ptx, kernel_index, opts, *impl);
  else if (!opts.cuda && jit) {
    { // oneDNN primitives, and the constant weights in its layout, made once here (an
      // artifact's are made at its load)
      PassTimer t("oneDNN primitives");
      onednn::prepare_plan(impl->plan, g.source);
    }
    load_cpu_kernels(g, s, kernel_index, opts, *impl);
  }
  if (opts.cuda && !opts.load_cuda && !impl->kernels.empty()) {
    PassTimer t("codegen (one PTX module)");
    std::vector<KernelText> texts;
    for (const GeneratedKernel& k : impl->kernels) texts.push_back({k.name, k.ll, ""});
    impl->ptx_module = link_ptx_kernels(texts, opts.cuda_arch, opts.libdevice, true);
  }
  after_inductor_step(opts, "load", nullptr, [&] {
    std::string text;
    for (const std::string& l : impl->autotune_log) text += l + "\n";
    return text;
  });
  CompiledGraph cg;
  cg.impl = impl;
  return cg;
}

} // namespace

CompiledGraph compile_inductor(const Graph& g, const InductorOptions& opts) {
  // lower, fuse: the front half, the same as a PTX-only build's.
  return compile_fused(g, lower_and_fuse(g, full_lower_options(opts), opts), opts);
}

CompiledGraph compile_loop_program(const LoopProgram& p, const InductorOptions& opts) {
  // The text was written by hand or by another fxc: the steps after lower rely on what the
  // verifier checks, so it runs before them, always.
  verify_loop_program(p, "as read");
  Graph g; // no weights: a parsed program's inputs are user inputs or weights without data
  g.source = p.source;
  g.name = opts.log_name;
  InductorFront front;
  front.program = p;
  front.ir_pre_fusion = print_loop_program(p);
  fuse_step(front, opts);
  return compile_fused(g, front, opts);
}

} // namespace fxc
