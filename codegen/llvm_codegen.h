// Loop IR → LLVM IR for one fused kernel (target-independent), and the CPU kernel compiler.
#pragma once

#include "codegen/target.h"
#include "passes/fuse.h"
#include "runtime/plan_executor.h"

#include <memory>
#include <string>
#include <vector>

namespace fxc {

/// Emits kernel `k` into `m` through `target`. args lists the buffers passed to the kernel (in
/// argument order); noalias[i] says args[i] has memory of its own. Returns the entry function.
llvm::Function* emit_kernel(Target& target, llvm::Module& m, const LoopProgram& p, const Kernel& k,
                            const std::vector<int>& args, const std::vector<bool>& noalias);

/// Compiles kernels for the host CPU through ORC LLJIT.
class KernelCompiler {
public:
  virtual ~KernelCompiler() = default;
  /// Generates LLVM IR for `k` and queues it for compilation; returns its .ll text.
  virtual std::string add_kernel(const LoopProgram& p, const Kernel& k, const std::vector<int>& args,
                                 const std::vector<bool>& noalias) = 0;
  /// Optimizes (O3) and JIT-compiles every queued kernel. Throws fxc::Error on failure.
  virtual void finalize() = 0;
  /// The entry point of a finalized kernel.
  virtual KernelFn lookup(const std::string& name) = 0;
};

/// The host compiler; `threads_hint` is unused by code generation and kept for the plan.
std::unique_ptr<KernelCompiler> make_x86_compiler();

} // namespace fxc
