// The host plan of a compiled graph (allocate, run kernel, call extern, free) and its executor.
//
// Codegen fills a Plan with compiled kernel entry points; this file runs it without knowing how
// the kernels were made (no LLVM here). Storage slots hold buffers; the memory planner decides
// which buffers share a slot.
#pragma once

#include "frontend/graph.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

#include <memory>
#include <string>
#include <vector>

namespace fxc {

/// A compiled kernel: computes rows [xbegin, xend) of its iteration space. args[i] is the base
/// pointer of the i-th buffer argument.
using KernelFn = void (*)(void* const* args, int64_t xbegin, int64_t xend);

/// A strided view of a slot's storage.
struct PlanView {
  int slot = -1;
  TensorMeta meta; ///< dtype, sizes, strides and offset (elements) into the slot
};

struct PlanKernel {
  std::string name;
  KernelFn fn = nullptr;
  std::vector<int> arg_slots; ///< one per kernel argument
  int64_t xnumel = 0;
  int64_t grain = 1; ///< rows per task
  std::string fail;  ///< testing only (--inject-bug): running the kernel throws this message
  int64_t bytes = 0; ///< bytes the kernel must move: its inputs read once, its outputs written
  /// CUDA plans: the loaded kernel (a CUfunction), launched with one block of `cuda_block`
  /// threads per row and parameters (a device pointer per argument, then xnumel as int64).
  void* cuda_function = nullptr;
  int cuda_block = 0;
};

struct PlanExtern {
  enum class Kind : uint8_t { Gemm, Fallback };
  Kind kind = Kind::Fallback;
  std::string name;
  std::vector<PlanView> inputs;       ///< Gemm: A [(B,) M, K], B [(B,) K, N]
  std::vector<PlanView> outputs;      ///< contiguous
  std::shared_ptr<const Graph> graph; ///< Fallback: one node; inputs are its user inputs
  int64_t bytes = 0;                  ///< operand and result bytes
};

/// The time one kernel or extern call took in a profiled run.
struct StepProfile {
  std::string name; ///< kernel name, or the extern call's node
  bool kernel = true;
  double ms = 0;
  int64_t bytes = 0; ///< PlanKernel::bytes / PlanExtern::bytes
};

struct PlanStep {
  enum class Kind : uint8_t { Alloc, Free, Kernel, Extern };
  Kind kind = Kind::Kernel;
  int index = -1; ///< slot (Alloc, Free), kernel or extern index
};

struct Plan {
  std::vector<int64_t> slot_bytes; ///< size of each storage slot
  std::vector<int> input_slots;    ///< slot of each user input, in order (contiguous copies)
  std::vector<TensorMeta> input_metas;
  std::vector<std::pair<int, Tensor>> constant_slots; ///< weights bound at compile time
  std::vector<PlanKernel> kernels;
  std::vector<PlanExtern> externs;
  std::vector<PlanStep> steps;
  std::vector<PlanView> outputs;
};

/// How a BLAS gemm reads a rows x cols matrix with element strides (s0, s1) in place: row-major
/// (trans = false) or transposed, with leading dimension ld; ok = false when it must be copied.
struct BlasMatrix {
  bool ok = false;
  bool trans = false;
  int64_t ld = 1;
};
BlasMatrix blas_matrix(int64_t rows, int64_t cols, int64_t s0, int64_t s1);

/// Runs the plan on the user inputs; returns the outputs (views of plan-owned storage).
/// Throws fxc::Error when the inputs do not match the plan (count, dtype, shape) or an extern
/// call fails.
/// With `profile`, each kernel launch and extern call is timed (host clock) and appended to it.
std::vector<Tensor> execute_plan(const Plan& plan, const std::vector<Tensor>& user_inputs,
                                 ThreadPool& pool, const std::string& source = {},
                                 std::vector<StepProfile>* profile = nullptr);

/// Runs a plan whose kernels are CUDA functions on the process's CUDA device (runtime/
/// cuda_driver.h): slots are device buffers, BLAS calls go to cuBLASLt, fallback calls run on the
/// host between copies. Inputs and outputs are host tensors. The weights are uploaded once, when
/// the runner is made. Throws fxc::Error for bad inputs and CUDA failures.
class CudaPlanRunner {
public:
  explicit CudaPlanRunner(const Plan& plan, std::string source = {});
  ~CudaPlanRunner();
  CudaPlanRunner(const CudaPlanRunner&) = delete;
  CudaPlanRunner& operator=(const CudaPlanRunner&) = delete;
  std::vector<Tensor> run(const std::vector<Tensor>& user_inputs);

private:
  const Plan& plan_;
  std::string source_;
  std::vector<uint64_t> constants_; ///< device copy of each constant slot (0 elsewhere)
};

} // namespace fxc
