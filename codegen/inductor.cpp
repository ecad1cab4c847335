// compile_inductor: the lowering → fusion → memory plan → LLVM → host plan pipeline.
#include "codegen/inductor.h"

#include "codegen/autotune.h"
#include "codegen/autotune_cuda.h"
#include "codegen/cpp_wrapper.h"
#include "codegen/host_cpu.h"
#include "codegen/llvm_codegen.h"
#include "frontend/diag.h"
#include "frontend/log.h"
#include "frontend/pass_timer.h"
#include "passes/fuse.h"
#include "passes/lower.h"
#include "passes/memory_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/cudnn.h"
#include "runtime/onednn.h"
#include "runtime/plan_executor.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <mutex>
#include <optional>

namespace fxc {

struct CompiledGraph::Impl {
  std::string source;
  std::unique_ptr<KernelCompiler> compiler; // owns the JIT-compiled code
  Plan plan;
  std::vector<std::unique_ptr<cuda::Module>> cuda_modules; // CUDA: the loaded kernels
  std::unique_ptr<CudaPlanRunner> cuda;                    // CUDA: runs `plan` on the device
  std::unique_ptr<ThreadPool> pool;
  std::mutex run_mu; // the pool runs one plan at a time
  bool unloaded = false; // a CUDA build made with load_cuda = false: nothing to run
  std::string pre, post, log, output_code, hints;
  std::vector<std::string> autotune_log;
  std::vector<GeneratedKernel> kernels;
  int externs = 0;
  int64_t peak = 0;
};

std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor>& user_inputs) const {
  assert(impl && "run() on an empty CompiledGraph");
  if (impl->unloaded) throw Error(impl->source, "this CUDA build was not loaded on a device");
  std::lock_guard<std::mutex> lock(impl->run_mu);
  if (impl->cuda) return impl->cuda->run(user_inputs);
  return execute_plan(impl->plan, user_inputs, *impl->pool, impl->source);
}

std::vector<Tensor> CompiledGraph::run_profiled(const std::vector<Tensor>& user_inputs,
                                                std::vector<StepProfile>* profile) const {
  assert(impl && "run_profiled() on an empty CompiledGraph");
  if (impl->unloaded) throw Error(impl->source, "this CUDA build was not loaded on a device");
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

namespace {

PlanView view_of(const MemoryPlan& mp, const Buffer& b, int id, std::vector<int64_t> sizes,
                 std::vector<int64_t> strides, int64_t offset) {
  PlanView v;
  v.slot = mp.slot_of[id];
  assert(v.slot >= 0 && "buffer without storage");
  v.meta.dtype = b.dtype;
  v.meta.sizes = std::move(sizes);
  v.meta.strides = std::move(strides);
  v.meta.storage_offset = offset;
  return v;
}

PlanView contiguous_view(const MemoryPlan& mp, const LoopProgram& p, int id) {
  const Buffer& b = p.buffers[id];
  return view_of(mp, b, id, b.sizes, contiguous_strides(b.sizes), 0);
}

// "buf3 (addmm, relu)": a buffer and the graph nodes it computes.
std::string buffer_label(const Buffer& b) {
  std::string s = b.name;
  for (size_t i = 0; i < b.origins.size(); ++i) s += (i ? ", " : " (") + b.origins[i];
  return b.origins.empty() ? s : s + ")";
}

// What runs an extern step, and why it is not generated code.
std::string extern_reason(const LoopProgram& p, const Buffer& b, bool cuda) {
  const ExternCall& c = b.call;
  switch (c.kind) {
  case ExternCall::Kind::Gemm: {
    std::string s = cuda ? "cuBLASLt matmul"
                         : "BLAS matmul (cblas_sgemm/dgemm of the BLAS found "
                           "at run time, else the reference loop)";
    if (c.epilogue != GemmEpilogue::None)
      s += std::string(" with the ") + gemm_epilogue_name(c.epilogue) + " epilogue";
    s += ": matmuls always run on the library";
    for (const std::string& origin : b.origins)
      for (const std::string& l : p.log)
        if (l.rfind("im2col: node '" + origin + "'", 0) == 0)
          s += "; " + l.substr(l.find("): ") + 3);
    return s;
  }
  case ExternCall::Kind::Conv:
    if (!cuda)
      return "oneDNN convolution" +
             (c.post_ops.empty() ? std::string() : " with post-ops " + c.post_ops) +
             ": 2-D float32 convolutions run on oneDNN when libdnnl.so.2 is found";
    return "cuDNN convolution: 2-D convolutions run on cuDNN when it is found";
  case ExternCall::Kind::Fallback:
    break;
  }
  return "the reference kernel (fallback): " + c.reason;
}

// --log=inductor: what lowering, fusion and the plan made of graph `name`. INFO: buffer, kernel
// and extern counts (and the planned peak when there is a memory plan, peak >= 0). DEBUG: why
// each kernel did not take in the node scheduled just before it, and every extern step with
// what runs it and why.
void log_inductor(const std::string& name, const Graph& g, const LoopProgram& p, const Schedule& s,
                  bool cuda, int64_t peak) {
  if (!log_enabled(Component::Inductor, Level::Info)) return;
  int pointwise = 0, reductions = 0, extern_buffers = 0;
  for (const Buffer& b : p.buffers) {
    pointwise += b.kind == Buffer::Kind::Pointwise;
    reductions += b.kind == Buffer::Kind::Reduction;
    extern_buffers += b.kind == Buffer::Kind::Extern;
  }
  int reduction_kernels = 0;
  for (const Kernel& k : s.kernels) {
    bool r = false;
    for (const KernelMember& m : k.members) r = r || m.role == MemberRole::Reduce;
    reduction_kernels += r;
  }
  int gemm = 0, conv = 0, fallback = 0;
  std::string externs;
  for (const ScheduleItem& item : s.items) {
    if (item.is_kernel) continue;
    const Buffer& b = p.buffers[size_t(item.index)];
    gemm += b.call.kind == ExternCall::Kind::Gemm;
    conv += b.call.kind == ExternCall::Kind::Conv;
    fallback += b.call.kind == ExternCall::Kind::Fallback;
    externs += "\n" + name + ": extern " + buffer_label(b) + " = " + b.call.op + ": " +
               extern_reason(p, b, cuda);
  }
  log_message(Component::Inductor, Level::Info,
              name + ": lowered " + std::to_string(g.nodes.size()) + " nodes to " +
                  std::to_string(pointwise + reductions + extern_buffers) + " buffers (" +
                  std::to_string(pointwise) + " pointwise, " + std::to_string(reductions) +
                  " reductions, " + std::to_string(extern_buffers) + " extern calls)");
  log_message(Component::Inductor, Level::Info,
              name + ": " + std::to_string(s.kernels.size()) + " kernels (" +
                  std::to_string(int(s.kernels.size()) - reduction_kernels) + " pointwise, " +
                  std::to_string(reduction_kernels) + " with a reduction), " +
                  std::to_string(gemm + conv + fallback) + " extern calls (" +
                  std::to_string(gemm) + " matmul, " + std::to_string(conv) + " convolution, " +
                  std::to_string(fallback) + " fallback)" +
                  (peak >= 0 ? ", planned peak " + std::to_string(peak) + " bytes" : ""));
  if (!log_enabled(Component::Inductor, Level::Debug)) return;
  std::string text;
  for (const std::string& u : s.unfused) text += "\n" + name + ": " + u;
  text += externs;
  if (!text.empty()) log_message(Component::Inductor, Level::Debug, text.substr(1));
}

} // namespace

PtxProgram compile_inductor_ptx(const Graph& g, const InductorOptions& opts,
                                const std::string& arch, const std::string& libdevice) {
  LowerOptions lo;
  lo.inline_limit = opts.inline_limit;
  // The plan a CUDA build of this graph runs, assuming cuDNN is found at run time.
  lo.cuda = true;
  lo.cudnn = opts.cudnn;
  lo.no_cudnn_reason = "disabled";
  LoopProgram p = [&] { PassTimer t("lower"); return lower(g, lo); }();
  FuseOptions fo;
  fo.enable = opts.fuse;
  Schedule s = [&] { PassTimer t("fuse"); return fuse(p, fo); }();
  PtxProgram out;
  out.ir_pre_fusion = print_loop_program(p);
  out.ir_post_fusion = print_schedule(p, s);
  for (auto& l : p.log) out.fusion_log += l + "\n";
  out.fusion_log += s.log;
  log_inductor(opts.log_name.empty() ? g.name : opts.log_name, g, p, s, true, -1);
  PassTimer codegen("codegen (PTX)");
  for (PtxKernel& k : generate_ptx(p, s, arch, libdevice, opts.kernel_ptx))
    out.kernels.push_back({k.name, std::move(k.ll), std::move(k.ptx),
                           (k.xnumel + k.rows - 1) / k.rows, k.block, k.rows, int(k.args.size())});
  return out;
}

CompiledGraph compile_inductor(const Graph& g, const InductorOptions& opts) {
  auto impl = std::make_shared<CompiledGraph::Impl>();
  impl->source = g.source;
  LowerOptions lo;
  lo.inline_limit = opts.inline_limit;
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
    std::string why = opts.cudnn ? cuda::Cudnn::unavailable_reason() : "disabled";
    lo.cudnn = why.empty();
    lo.no_cudnn_reason = why;
  } else {
    lo.no_onednn_reason = onednn::unavailable_reason();
    lo.onednn = lo.no_onednn_reason.empty();
  }
  LoopProgram p = [&] { PassTimer t("lower"); return lower(g, lo); }();
  for (const std::string& l : p.log)
    if (l.rfind("im2col: ", 0) == 0) impl->hints += l + "\n";
  impl->pre = print_loop_program(p);
  FuseOptions fo;
  fo.enable = opts.fuse;
  Schedule s = [&] { PassTimer t("fuse"); return fuse(p, fo); }();
  impl->post = print_schedule(p, s);
  MemoryPlanOptions mo;
  mo.reuse = mo.inplace = opts.reuse_memory;
  // The PTX kernels take every buffer as noalias: no output may share an input's slot.
  if (opts.cuda) mo.inplace = false;
  MemoryPlan mp = [&] { PassTimer t("memory_plan"); return plan_memory(p, s, mo); }();
  for (auto& l : p.log) impl->log += l + "\n";
  impl->log += s.log + mp.log;
  impl->peak = mp.peak_bytes;
  log_inductor(opts.log_name.empty() ? g.name : opts.log_name, g, p, s, opts.cuda, mp.peak_bytes);
  impl->pool = std::make_unique<ThreadPool>(opts.num_threads);
  std::map<std::string, PtxKernel> ptx;
  if (opts.cuda) {
    PassTimer t("codegen (PTX)");
    for (PtxKernel& k : generate_ptx(p, s, opts.cuda_arch, opts.libdevice)) ptx[k.name] = k;
  } else {
    impl->compiler = make_x86_compiler();
  }

  Plan& plan = impl->plan;
  plan.slot_bytes = mp.slot_bytes;
  plan.allow_tf32 = opts.cuda && opts.allow_tf32;
  std::optional<PassTimer> timer(std::in_place, "weights");
  for (int b = 0; b < int(p.buffers.size()); ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.kind != Buffer::Kind::Input) continue;
    if (buf.input_index >= 0) {
      if (size_t(buf.input_index) >= plan.input_slots.size()) {
        plan.input_slots.resize(buf.input_index + 1, -1);
        plan.input_metas.resize(buf.input_index + 1);
      }
      plan.input_slots[buf.input_index] = mp.slot_of[b];
      TensorMeta m;
      m.dtype = buf.dtype;
      m.sizes = buf.sizes;
      m.strides = contiguous_strides(buf.sizes);
      plan.input_metas[buf.input_index] = m;
      continue;
    }
    auto it = g.weights.find(buf.weight);
    if (it == g.weights.end() || !it->second.storage)
      throw Error(g.source, "no data for weight '" + buf.weight + "'");
    TensorMeta want;
    want.dtype = buf.dtype;
    want.sizes = buf.sizes;
    if (it->second.meta.dtype != buf.dtype || it->second.meta.sizes != buf.sizes)
      throw Error(g.source, "weight '" + buf.weight + "' is " + format_meta(it->second.meta) +
                                " but the graph uses it as " + format_meta(want));
    Tensor t = Tensor::from_weight(it->second).contiguous();
    if (t.storage_offset() != 0) t = t.clone();
    plan.constant_slots.push_back({mp.slot_of[b], t});
  }
  timer.emplace(opts.cuda ? "host plan" : "codegen (LLVM IR) + host plan");
  std::vector<int> kernel_index(s.kernels.size(), -1);
  for (size_t i = 0; i < s.items.size(); ++i) {
    for (int sl : mp.alloc_before[i]) plan.steps.push_back({PlanStep::Kind::Alloc, sl});
    const ScheduleItem& item = s.items[i];
    if (item.is_kernel) {
      const Kernel& k = s.kernels[item.index];
      std::vector<int> args = k.inputs;
      for (int o : k.outputs)
        if (std::find(args.begin(), args.end(), o) == args.end()) args.push_back(o);
      std::vector<bool> noalias(args.size(), true);
      for (size_t a = 0; a < args.size(); ++a)
        for (size_t b = 0; b < args.size(); ++b)
          if (a != b && mp.slot_of[args[a]] == mp.slot_of[args[b]]) noalias[a] = false;
      // Testing only: a planted bug in a node computed by this kernel.
      std::string planted, planted_node;
      for (const KernelMember& m : k.members)
        for (const std::string& origin : p.buffers[m.buffer].origins)
          if (p.injected.count(origin) && planted.empty()) {
            planted = p.injected.at(origin);
            planted_node = origin;
          }
      if (planted == "compile_error")
        throw Error(g.source, "injected compile error in generated kernel " + k.name, planted_node);
      if (opts.cuda) {
        const PtxKernel& pk = ptx.at(k.name);
        assert(pk.args == args && "PTX kernel arguments differ from the plan's");
        impl->kernels.push_back({k.name, pk.ll, pk.ptx});
      } else {
        impl->kernels.push_back({k.name, impl->compiler->add_kernel(p, k, args, noalias), ""});
      }
      PlanKernel pk;
      pk.name = k.name;
      for (int a : args) pk.arg_slots.push_back(mp.slot_of[a]);
      pk.xnumel = k.xnumel;
      int64_t work_per_row = std::max<int64_t>(k.rnumel, 1) * int64_t(k.members.size());
      int64_t grain = std::max<int64_t>(1, 16384 / work_per_row);
      // At most kMaxTasks tasks a launch: a fixed count, not the pool's size, so that the plan
      // (and an .fxo) is the same bytes with any --threads and on any machine.
      constexpr int64_t kMaxTasks = 64;
      grain = std::max(grain, (k.xnumel + kMaxTasks - 1) / kMaxTasks);
      pk.grain = grain;
      for (int a : args) pk.bytes += p.buffers[a].nbytes();
      if (planted == "runtime_error")
        pk.fail = "injected runtime error in kernel " + k.name + " (node '" + planted_node + "')";
      kernel_index[item.index] = int(plan.kernels.size());
      plan.kernels.push_back(pk);
      if (k.xnumel > 0) plan.steps.push_back({PlanStep::Kind::Kernel, kernel_index[item.index]});
    } else {
      const Buffer& b = p.buffers[item.index];
      PlanExtern e;
      e.kind = b.call.kind == ExternCall::Kind::Gemm   ? PlanExtern::Kind::Gemm
               : b.call.kind == ExternCall::Kind::Conv ? PlanExtern::Kind::Conv
                                                       : PlanExtern::Kind::Fallback;
      e.epilogue = PlanExtern::Epilogue(int(b.call.epilogue)); // same enumerators, same order
      e.stride = b.call.stride;
      e.padding = b.call.padding;
      e.dilation = b.call.dilation;
      e.groups = b.call.groups;
      e.post_ops = b.call.post_ops;
      e.scale = b.call.scale;
      e.shift = b.call.shift;
      e.name = b.origins.empty() ? b.name : b.origins[0];
      for (const ExternOperand& o : b.call.operands)
        e.inputs.push_back(
            view_of(mp, p.buffers[o.buffer], o.buffer, o.sizes, o.strides, o.offset));
      for (int o : b.call.outputs) e.outputs.push_back(contiguous_view(mp, p, o));
      e.graph = b.call.graph;
      for (const ExternOperand& o : b.call.operands) e.bytes += p.buffers[o.buffer].nbytes();
      for (int o : b.call.outputs) e.bytes += p.buffers[o].nbytes();
      plan.externs.push_back(e);
      plan.steps.push_back({PlanStep::Kind::Extern, int(plan.externs.size()) - 1});
      ++impl->externs;
    }
    for (int sl : mp.free_after[i]) plan.steps.push_back({PlanStep::Kind::Free, sl});
  }
  for (const OutputView& o : p.outputs) {
    PlanView v;
    v.slot = mp.slot_of[o.buffer];
    v.meta = o.meta;
    plan.outputs.push_back(v);
  }
  timer.reset();
  if (!opts.cuda) { // oneDNN primitives, and the constant weights in its layout, made once here
    PassTimer t("oneDNN primitives");
    onednn::prepare_plan(plan, g.source);
  }
  if (opts.cuda)
    for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
      const PtxKernel& pk = ptx.at(s.kernels[ki].name);
      plan.kernels[kernel_index[ki]].cuda_block = pk.block;
      plan.kernels[kernel_index[ki]].cuda_rows = pk.rows;
    }
  impl->unloaded = opts.cuda && !opts.load_cuda;
  // --max-autotune times the kernels on the device even for a build that is not run here (an
  // .fxo artifact): the chosen PTX and algorithms are what the plan keeps.
  if (opts.cuda && (opts.load_cuda || opts.max_autotune)) {
    std::vector<CudaTunedKernel> loaded(plan.kernels.size()); // per plan kernel
    try {
      PassTimer t("cuda module load (PTX JIT)");
      cuda::Context& ctx = cuda::Context::get();
      for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
        CudaTunedKernel& lk = loaded[size_t(kernel_index[ki])];
        lk.kernel = &s.kernels[ki];
        lk.ptx = ptx.at(s.kernels[ki].name);
        lk.module = ctx.load_module(lk.ptx.ptx, lk.ptx.name + ".ptx");
        plan.kernels[kernel_index[ki]].cuda_function = lk.module->function(lk.ptx.name);
      }
    } catch (const cuda::CudaError& e) {
      if (opts.load_cuda) throw Error(g.source, e.what());
      throw Error(g.source, std::string("--max-autotune needs a CUDA device to time its "
                                        "candidates: ") +
                                e.what());
    }
    std::optional<PassTimer> t(std::in_place, "cuda runner (arena, weights upload)");
    CudaRunnerOptions ro;
    ro.cuda_graphs = opts.cuda_graphs && opts.load_cuda;
    impl->cuda = std::make_unique<CudaPlanRunner>(impl->plan, g.source, ro);
    if (opts.load_cuda && !impl->cuda->graph_note().empty())
      impl->hints += impl->cuda->graph_note() + "\n";
    if (opts.max_autotune) {
      t.emplace("autotune");
      AutotuneOptions ao;
      ao.cache_dir = opts.autotune_dir;
      const cuda::DeviceInfo& info = cuda::Context::get().info();
      ao.device = "cuda " + info.name + " " + info.arch();
      ao.runs = 10;
      impl->autotune_log =
          autotune_cuda_plan(p, plan, loaded, *impl->cuda, ao, opts.cuda_arch, opts.libdevice);
      for (size_t i = 0; i < loaded.size(); ++i)
        if (loaded[i].kernel) {
          impl->kernels[i].ll = loaded[i].ptx.ll;
          impl->kernels[i].ptx = loaded[i].ptx.ptx;
        }
    }
    t.reset();
    for (CudaTunedKernel& lk : loaded)
      if (lk.module) impl->cuda_modules.push_back(std::move(lk.module));
    if (!opts.load_cuda) { // tuned only: nothing stays loaded
      impl->cuda.reset();
      impl->cuda_modules.clear();
      for (PlanKernel& k : plan.kernels) k.cuda_function = nullptr;
    }
  } else if (!opts.cuda) {
    {
      PassTimer t("output_code.cpp");
      impl->output_code = render_cpp_wrapper(plan, g.source);
    }
    PassTimer t("LLVM O2 + x86 object code + JIT link");
    impl->compiler->finalize();
    for (size_t ki = 0; ki < s.kernels.size(); ++ki)
      plan.kernels[kernel_index[ki]].fn = impl->compiler->lookup(s.kernels[ki].name);
    if (opts.max_autotune) {
      PassTimer t("autotune");
      AutotuneOptions ao;
      ao.cache_dir = opts.autotune_dir;
      std::string cpu = host_cpu_description(); // "<triple> <cpu> <features>"
      ao.device = "cpu " + cpu.substr(0, cpu.find(' ', cpu.find(' ') + 1)) +
                  " threads=" + std::to_string(impl->pool->size());
      std::vector<std::string> code;
      for (const GeneratedKernel& k : impl->kernels) code.push_back(k.ll);
      impl->autotune_log = autotune_plan(plan, code, *impl->pool, ao, g.source);
      impl->output_code = render_cpp_wrapper(plan, g.source); // with the tuned grains
    }
  }
  CompiledGraph cg;
  cg.impl = impl;
  return cg;
}

} // namespace fxc
