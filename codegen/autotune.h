// --max-autotune for CPU plans: time candidate grain sizes of every kernel, keep the fastest.
//
// Each generated kernel of a host plan runs its rows in tasks of PlanKernel::grain rows on the
// thread pool. autotune_plan() times a few grain sizes per kernel (the heuristic's, and sizes
// giving 1, 2 and 8 tasks per thread, 1, 16 and 256 rows) by running the whole plan on seeded
// random inputs (floating inputs N(0, 1), integer inputs zero, so that every index is in range)
// with per-step timing (execute_plan's profile, host monotonic clock), a warm-up run and then
// the minimum of `runs` runs per candidate, and sets each kernel's grain to its fastest (another
// grain than the heuristic's only when it takes under 90% of its time). The
// choices persist in the AutotuneCache in `cache_dir`, keyed by the device and the kernel's code
// and size: a kernel found there gets its cached grain without being run. Matmuls are extern
// BLAS calls and are not tuned here. Covered by test/autotune.sh.
#pragma once

#include "runtime/autotune_cache.h"
#include "runtime/plan_executor.h"
#include "runtime/thread_pool.h"

#include <string>
#include <vector>

namespace fxc {

struct AutotuneOptions {
  std::string cache_dir; ///< where autotune.json lives; "": tune, remember nothing
  std::string device;    ///< the machine, for the cache key ("cpu <triple> <cpu> threads=N")
  int runs = 5;          ///< timed runs per candidate (after one warm-up run)
};

/// The autotune cache of `dir`, loaded; what the log should say about it (a corrupt file
/// discarded, no directory to remember the choices in) is appended to `log`.
AutotuneCache open_autotune_cache(const std::string& dir, std::vector<std::string>* log);

/// Seeded random inputs for `plan`'s user inputs, as tuning runs them: floating inputs N(0, 1),
/// integer inputs zero (an index input is then in range of any non-empty dimension).
std::vector<Tensor> autotune_inputs(const Plan& plan);

/// Tunes the grain of every kernel of `plan` (CPU kernels: fn set) and returns the log lines
/// ("<kernel>: candidates grain=1 0.120ms, grain=8 0.050ms -> grain=8", "<kernel>: cached
/// grain=8", cache notes). `kernel_code[i]` is the code of plan.kernels[i] (its LLVM IR). A plan
/// that fails to run keeps its heuristic grains and the log says why. Never throws for cache
/// trouble; the caller's run reports errors of the plan itself.
std::vector<std::string> autotune_plan(Plan& plan, const std::vector<std::string>& kernel_code,
                                       ThreadPool& pool, const AutotuneOptions& opts,
                                       const std::string& source);

} // namespace fxc
