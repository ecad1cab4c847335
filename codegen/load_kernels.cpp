// Step "load": the x86 JIT on the CPU, module loading and the runner on CUDA, and the
// --max-autotune timing of each.
#include "codegen/inductor_steps.h"

#include "codegen/autotune.h"
#include "codegen/autotune_cuda.h"
#include "codegen/cpp_wrapper.h"
#include "codegen/host_cpu.h"
#include "frontend/diag.h"
#include "frontend/pass_timer.h"

#include <optional>

namespace fxc {

void load_cpu_kernels(const Graph& g, const Schedule& s, const std::vector<int>& kernel_index,
                      const InductorOptions& opts, CompiledGraph::Impl& impl) {
  Plan& plan = impl.plan;
  PassTimer t("LLVM O2 + x86 object code + JIT link");
  impl.compiler->finalize();
  for (size_t ki = 0; ki < s.kernels.size(); ++ki)
    plan.kernels[kernel_index[ki]].fn = impl.compiler->lookup(s.kernels[ki].name);
  if (!opts.max_autotune) return;
  PassTimer tune("autotune");
  AutotuneOptions ao;
  ao.cache_dir = opts.autotune_dir;
  std::string cpu = host_cpu_description(); // "<triple> <cpu> <features>"
  ao.device = "cpu " + cpu.substr(0, cpu.find(' ', cpu.find(' ') + 1)) +
              " threads=" + std::to_string(impl.pool->size());
  std::vector<std::string> code;
  for (const GeneratedKernel& k : impl.kernels) code.push_back(k.ll);
  impl.autotune_log = autotune_plan(plan, code, *impl.pool, ao, g.source);
  impl.output_code = render_cpp_wrapper(plan, g.source); // with the tuned grains
}

void load_cuda_kernels(const Graph& g, const LoopProgram& p, const Schedule& s,
                       const std::map<std::string, PtxKernel>& ptx,
                       const std::vector<int>& kernel_index, const InductorOptions& opts,
                       CompiledGraph::Impl& impl) {
  Plan& plan = impl.plan;
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
  impl.cuda = std::make_unique<CudaPlanRunner>(impl.plan, g.source, ro);
  if (opts.load_cuda && !impl.cuda->graph_note().empty())
    impl.hints += impl.cuda->graph_note() + "\n";
  if (opts.max_autotune) {
    t.emplace("autotune");
    AutotuneOptions ao;
    ao.cache_dir = opts.autotune_dir;
    const cuda::DeviceInfo& info = cuda::Context::get().info();
    ao.device = "cuda " + info.name + " " + info.arch();
    ao.runs = 10;
    impl.autotune_log =
        autotune_cuda_plan(p, plan, loaded, *impl.cuda, ao, opts.cuda_arch, opts.libdevice);
    for (size_t i = 0; i < loaded.size(); ++i)
      if (loaded[i].kernel) {
        impl.kernels[i].ll = loaded[i].ptx.ll;
        impl.kernels[i].ptx = loaded[i].ptx.ptx;
      }
  }
  t.reset();
  for (CudaTunedKernel& lk : loaded)
    if (lk.module) impl.cuda_modules.push_back(std::move(lk.module));
  if (!opts.load_cuda) { // tuned only: nothing stays loaded
    impl.cuda.reset();
    impl.cuda_modules.clear();
    for (PlanKernel& k : plan.kernels) k.cuda_function = nullptr;
  }
}

} // namespace fxc
