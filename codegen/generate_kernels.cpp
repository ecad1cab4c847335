// Step "codegen" on the CPU: each fused kernel's LLVM IR, queued for the x86 JIT.
#include "codegen/inductor_steps.h"

#include "frontend/pass_timer.h"

#include <algorithm>

namespace fxc {

std::vector<int> kernel_args(const Kernel& k) {
  std::vector<int> args = k.inputs;
  for (int o : k.outputs)
    if (std::find(args.begin(), args.end(), o) == args.end()) args.push_back(o);
  return args;
}

std::vector<GeneratedKernel> generate_llvm_kernels(const LoopProgram& p, const Schedule& s,
                                                   const MemoryPlan& mp, KernelCompiler& compiler) {
  PassTimer t("codegen (LLVM IR)");
  std::vector<GeneratedKernel> out;
  for (const ScheduleItem& item : s.items) {
    if (!item.is_kernel) continue;
    const Kernel& k = s.kernels[item.index];
    std::vector<int> args = kernel_args(k);
    // Arguments in one slot (an output written in place over an input) may alias.
    std::vector<bool> noalias(args.size(), true);
    for (size_t a = 0; a < args.size(); ++a)
      for (size_t b = 0; b < args.size(); ++b)
        if (a != b && mp.slot_of[args[a]] == mp.slot_of[args[b]]) noalias[a] = false;
    out.push_back({k.name, compiler.add_kernel(p, k, args, noalias), ""});
  }
  return out;
}

} // namespace fxc
