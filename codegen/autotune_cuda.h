// --max-autotune for CUDA plans: candidate thread mappings per kernel and cuBLASLt algorithms
// per matmul, timed on the device, the fastest kept and cached.
//
// For every generated kernel the candidates are nvptx_mapping_candidates() (the heuristic's
// mapping first: other block sizes, a persistent row with more or fewer threads, the looping
// form), each generated as PTX and loaded; for every gemm call they are the algorithms of
// cuBLASLt's heuristic list (PlanExtern::algo, up to CublasLt::kMaxAlgorithms). The plan runs on
// seeded random inputs (floating inputs N(0, 1), integer inputs zero) resident on the device, in
// rounds: round r gives every kernel and matmul its r-th candidate (its last once it has no
// more), then, after a warm-up, times every step with CUDA events (CudaPlanRunner::time_steps)
// `runs` times, each after writing 256 MiB to flush the L2 cache; a candidate's time is its
// fastest. Another candidate replaces the heuristic's only when it takes under 97% of its time,
// and the choices are kept only when the tuned plan's results on those inputs match the
// heuristic plan's (up to the reordering of sums; else all are discarded and the log says why).
// Choices persist in autotune.json (runtime/autotune_cache.h) keyed by the device ("cuda <name>
// sm_XY") and the kernel's code and size, or the matmul's shapes, strides, epilogue and
// cuBLASLt version; a cached choice is applied without timing. Covered by test/gpu/run.sh
// (test/gpu/e2e/autotune_cuda.sh) and the `cuda autotune` unit cases.
#pragma once

#include "codegen/autotune.h"
#include "codegen/llvm_codegen.h"
#include "runtime/cuda_driver.h"

#include <memory>
#include <string>
#include <vector>

namespace fxc {

/// One generated kernel of a CUDA plan, as the tuner sees and updates it.
struct CudaTunedKernel {
  const Kernel* kernel = nullptr;       ///< its loop-IR kernel (candidates are generated from it)
  PtxKernel ptx;                        ///< its PTX (the heuristic's; replaced by the choice)
  std::unique_ptr<cuda::Module> module; ///< the loaded `ptx` (replaced with it)
};

/// Tunes `plan`'s kernels (kernels[i] is plan.kernels[i]) and gemm calls in place: the chosen
/// mapping's PTX, module, CUfunction, block and rows per block, and each matmul's
/// PlanExtern::algo. `runner` runs `plan` (its buffers are overwritten). Returns the log lines
/// ("<kernel>: candidates block=128 ... 0.0720ms, ... -> block=256 ...", "<kernel>: cached
/// ...", "<matmul>: candidates algo=0 0.3900ms, ... -> algo=2"). A plan that fails to run keeps
/// the heuristic's choices and the log says why. Throws fxc::Error only when PTX generation
/// fails.
std::vector<std::string> autotune_cuda_plan(const LoopProgram& p, Plan& plan,
                                            std::vector<CudaTunedKernel>& kernels,
                                            CudaPlanRunner& runner, const AutotuneOptions& opts,
                                            const std::string& arch, const std::string& libdevice);

} // namespace fxc
