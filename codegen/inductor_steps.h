// The steps of compile_inductor (the list itself is in inductor.cpp), each one function: lower and
// fuse (the front half, shared with the PTX-only build), generate kernels, build the host plan,
// load and tune. Memory planning is passes/memory_plan.h.
#pragma once

#include "codegen/inductor.h"
#include "codegen/llvm_codegen.h"
#include "passes/fuse.h"
#include "passes/loop_ir.h"
#include "passes/lower.h"
#include "passes/memory_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/plan_executor.h"
#include "runtime/thread_pool.h"

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fxc {

/// What compile_inductor builds; the steps fill it in.
struct CompiledGraph::Impl {
  std::string source;
  std::unique_ptr<KernelCompiler> compiler; // owns the JIT-compiled code
  Plan plan;
  std::vector<std::unique_ptr<cuda::Module>> cuda_modules; // CUDA: the loaded kernels
  std::unique_ptr<CudaPlanRunner> cuda;                    // CUDA: runs `plan` on the device
  std::unique_ptr<ThreadPool> pool;
  std::mutex run_mu;         // the pool runs one plan at a time
  bool unloaded = false;     // made with load_cuda (CUDA) or load_cpu (CPU) false: nothing to run
  bool cpu_unloaded = false; // the CPU's kind of unloaded
  bool stopped = false;      // --stop-after ended the build before the load step: nothing to run
  std::string pre, post, log, output_code, hints;
  std::vector<std::string> autotune_log;
  std::vector<GeneratedKernel> kernels;
  std::string ptx_module;           // CUDA: every kernel, compiled together (ptx_module())
  std::string cuda_arch, libdevice; // CUDA: for a ptx_module() asked of a loaded build
  std::once_flag ptx_once;          // ptx_module() links a loaded build's kernels once
  int externs = 0;
  int64_t peak = 0;
  // CPU: the kernels' object code (object_codes()), compiled on a thread of its own. Declared
  // last, so that it is destroyed first: destroying it waits for that thread, which reads
  // `kernels`.
  std::mutex objects_mu;
  std::shared_future<std::vector<std::string>> objects;
};

/// Calls the hooks of opts.steps after `step` (see StepHooks): the loop-IR verifier when
/// verify_each and `program` is given, then the printer when the step is print_after or
/// stop_after. Returns true when the build stops here (stop_after == step).
bool after_inductor_step(const InductorOptions& opts, const std::string& step,
                         const LoopProgram* program, const std::function<std::string()>& text);

/// The front half of every inductor build: the loop IR of `g` and its fusion schedule.
struct InductorFront {
  LoopProgram program;
  Schedule schedule;
  std::string ir_pre_fusion, ir_post_fusion; ///< print_loop_program, print_schedule
  bool stopped =
      false; ///< --stop-after=lower|fuse: the build ends here (schedule empty after lower)
};

/// Steps "lower" and "fuse": lowers `g` with `lo`, then fuses (opts.fuse), running the step
/// hooks after each. Throws fxc::Error for graphs that cannot be lowered.
InductorFront lower_and_fuse(const Graph& g, const LowerOptions& lo, const InductorOptions& opts);
/// Step "fuse" alone, on f.program (fills the schedule and ir_post_fusion, sets f.stopped).
void fuse_step(InductorFront& f, const InductorOptions& opts);

/// --log=inductor: what lowering, fusion and the plan made of graph `name` (peak < 0: no
/// memory plan yet).
void log_inductor(const std::string& name, const Graph& g, const LoopProgram& p, const Schedule& s,
                  bool cuda, int64_t peak);

/// A generated kernel's arguments: its inputs, then its outputs not among them (buffer ids).
std::vector<int> kernel_args(const Kernel& k);

/// Step "codegen" on the CPU: each kernel's LLVM IR, queued in `compiler` in the order the
/// schedule runs them; `mp` says which arguments may alias.
std::vector<GeneratedKernel> generate_llvm_kernels(const LoopProgram& p, const Schedule& s,
                                                   const MemoryPlan& mp, KernelCompiler& compiler);

/// Step "host-plan": the plan that runs the schedule's kernels and extern calls over the memory
/// plan's slots (weights bound, steps in schedule order). `ptx`: CUDA builds' kernels by name
/// (block and rows per block come from them); empty on the CPU. Throws for a weight without
/// data or of the wrong shape, and for an injected compile error. Sets *kernel_index to the plan
/// kernel of each schedule kernel.
Plan build_host_plan(const Graph& g, const LoopProgram& p, const Schedule& s, const MemoryPlan& mp,
                     const std::map<std::string, PtxKernel>& ptx, bool matmul_tf32, bool conv_tf32,
                     std::vector<int>* kernel_index);

/// Step "load" on the CPU: JIT-compiles the queued kernels and sets each plan kernel's entry
/// point; with opts.max_autotune also times grain sizes (impl's autotune log, and output_code
/// rendered again with the tuned grains).
void load_cpu_kernels(const Graph& g, const Schedule& s, const std::vector<int>& kernel_index,
                      const InductorOptions& opts, CompiledGraph::Impl& impl);

/// Step "load" on CUDA: loads the PTX, makes the runner and (opts.max_autotune) tunes the
/// kernels on the device; a build not to be run (load_cuda false) keeps only the tuning.
void load_cuda_kernels(const Graph& g, const LoopProgram& p, const Schedule& s,
                       const std::map<std::string, PtxKernel>& ptx,
                       const std::vector<int>& kernel_index, const InductorOptions& opts,
                       CompiledGraph::Impl& impl);

} // namespace fxc
