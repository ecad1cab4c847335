// The inductor backend's entry point: lower, fuse, plan memory, generate code, run.
//
//   CompiledGraph cg = compile_inductor(graph, {});
//   std::vector<Tensor> outs = cg.run(user_inputs);
//
// compile_inductor() expects a graph after decompositions (passes/decompose.h), though any
// graph works: ops without a lowering run as fallback extern calls (see lower.h). The texts
// behind the debug trace are available from the result: ir_pre_fusion.txt (the loop IR of
// every buffer), ir_post_fusion.txt (kernels, stages and members), kernels/<name>.ll,
// output_code.cpp (a C++ program running the plan over those kernels), and the fusion and
// memory-planning logs.
#pragma once

#include "frontend/graph.h"
#include "passes/lower.h"
#include "runtime/plan_executor.h"
#include "runtime/tensor.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fxc {

/// Names of inductor's steps, in the order compile_inductor runs them: lower, fuse, plan-memory,
/// codegen, host-plan, load (compile_inductor_ptx: lower, fuse, codegen).
const std::vector<std::string>& inductor_step_names();

/// What runs after each step (--print-after, --stop-after, --verify-each).
struct StepHooks {
  std::string print_after;  ///< a step name: `print` gets its text
  std::string stop_after;   ///< a step name: `print` gets its text and the build ends there
  bool verify_each = false; ///< the loop-IR verifier after lower, fuse and plan-memory
  /// Receives a step's text: the loop IR (lower), the schedule (fuse), the schedule and memory
  /// plan (plan-memory), the kernels' LLVM IR or PTX (codegen), output_code.cpp (host-plan).
  std::function<void(const std::string& step, const std::string& text)> print;
};

struct InductorOptions {
  int num_threads = 0;      ///< worker threads for kernels; 0: all hardware threads
  bool fuse = true;         ///< false: one kernel per buffer (for bisecting fusion)
  bool reuse_memory = true; ///< memory planner: reuse freed buffers and write in place
  /// Inference (not `train`): kernels and calls that read only weights run once per loaded
  /// plan (Plan::prepare, MemoryPlanOptions::freeze).
  bool freeze = true;
  int inline_limit = 48; ///< see LowerOptions::inline_limit
  /// Testing only: "<op>:compile_error|runtime_error|accuracy" plants that bug in the code
  /// generated for <op> (compile_inductor throws; run() throws; results are off by one).
  std::string inject_bug;
  /// Run on the CUDA device (runtime/cuda_driver.h) instead of the host: kernels become PTX for
  /// `cuda_arch` (math from `libdevice`), matmuls go to cuBLASLt, fallbacks run on the host.
  bool cuda = false;
  /// CUDA: float32 matmuls (cuBLASLt) / convolutions (cuDNN) may use TF32 tensor cores
  /// (--tf32, whose default is PyTorch's: TF32 convolutions, exact matmuls); exact float32
  /// unless set. Part of what a compiled graph depends on (a cache key must include them).
  bool matmul_tf32 = false;
  bool conv_tf32 = false;
  /// CUDA: capture the plan into a CUDA graph on its second run and replay it (--cuda-graphs).
  bool cuda_graphs = false;
  /// CUDA: convolutions through cuDNN when it is found (else im2col + cuBLASLt, logged in the
  /// fusion log and perf hints); false forces im2col + cuBLASLt.
  bool cudnn = true;
  /// The convolutions' layout (LowerOptions::conv_layout; --conv-layout): cuDNN's on CUDA,
  /// oneDNN's on the CPU (inference).
  ConvLayout conv_layout = ConvLayout::Nchw;
  /// CUDA: load the PTX and make the runner. false builds the plan and the PTX without touching
  /// a device (for .fxo artifacts: ptx_module()); run() then throws.
  bool load_cuda = true;
  /// CPU: compile the kernels into this process (the JIT). false builds the plan and the kernels'
  /// LLVM IR only (for .fxo artifacts, whose object code object_code() compiles once); run()
  /// then throws. --max-autotune loads them regardless, to time them.
  bool load_cpu = true;
  /// --max-autotune (CPU builds): time candidate grain sizes of each kernel and keep the
  /// fastest (codegen/autotune.h), remembered in `autotune_dir`/autotune.json ("": not stored).
  bool max_autotune = false;
  std::string autotune_dir;
  /// The graph is a forward or backward of a train step (see LowerOptions::train).
  bool train = false;
  std::string cuda_arch = "sm_90";
  /// The graph's name in --log=inductor lines (the driver passes its debug-trace folder,
  /// "mlp__0_forward_1.0"); empty: the graph's own name.
  std::string log_name;
  std::string libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  /// compile_inductor_ptx(), and compile_inductor() for CUDA without load_cuda: compile each
  /// kernel to PTX (PtxKernelInfo::ptx, GeneratedKernel::ptx). false: each kernel's LLVM IR
  /// only, for --emit=ptx|llvm and .fxo artifacts without a debug trace, whose one module
  /// (link_ptx_kernels(), CompiledGraph::ptx_module()) compiles the kernels together,
  /// libdevice's functions once.
  bool kernel_ptx = true;
  StepHooks steps;
};

struct GeneratedKernel {
  std::string name; ///< "fused_addmm_relu_pow_0"
  std::string ll;   ///< its LLVM IR as generated (before optimization)
  std::string ptx;  ///< CUDA builds: the PTX that was loaded; empty on the CPU
};

class CompiledGraph {
public:
  /// Runs the compiled graph on the user inputs (graph order). Throws fxc::Error when the inputs
  /// do not match the graph (count, dtype, shape) or a fallback kernel fails.
  std::vector<Tensor> run(const std::vector<Tensor>& user_inputs) const;
  /// run() that also times every kernel launch and extern call (host clock, in plan order; CUDA
  /// builds: device time between CUDA events), each with the bytes it must move (for GB/s).
  std::vector<Tensor> run_profiled(const std::vector<Tensor>& user_inputs,
                                   std::vector<StepProfile>* profile) const;

  const std::string& ir_pre_fusion() const;
  const std::string& ir_post_fusion() const;
  const std::string& fusion_log() const; ///< fusion decisions, fallbacks, memory plan
  /// output_code.cpp: the host plan as a standalone C++ program (see codegen/cpp_wrapper.h);
  /// empty for CUDA builds.
  const std::string& output_code() const;
  const std::vector<GeneratedKernel>& kernels() const;
  /// Every kernel linked into one LLVM module (--emit=llvm), optimized or as generated.
  std::string llvm_module(bool optimized = false) const;
  /// Every kernel as one x86-64 ELF relocatable object (--emit=obj); each kernel's entry point
  /// `void <name>(void* const* args, int64_t xbegin, int64_t xend)` is exported.
  std::string object_code() const;
  /// The same kernels as several objects compiled in parallel (emit_kernels_objects()), each
  /// exporting its kernels' entry points: what an .fxo artifact holds. Compiled once; waits
  /// for start_object_codes()'s thread.
  const std::vector<std::string>& object_codes() const;
  /// Starts object_codes() on a thread of its own and returns at once, so that LLVM's work
  /// overlaps whatever the caller does next (the next graph's lowering). Errors surface from
  /// object_codes().
  void start_object_codes() const;
  /// CUDA builds made without load_cuda (.fxo artifacts): every kernel in one PTX module, each
  /// an entry named like its kernel (the kernels as finally chosen, --max-autotune's included).
  const std::string& ptx_module() const;
  int num_kernels() const;      ///< generated (fused) kernels
  int num_extern_calls() const; ///< BLAS and fallback calls
  int64_t peak_bytes() const;   ///< planned peak of intermediate buffers
  /// The host plan (kernels named; CPU kernels' fn set, CUDA kernels' cuda_block set), for
  /// writing an .fxo artifact.
  const Plan& plan() const;
  /// CUDA builds: the runner (resident buffers, per-step CUDA event timing; plan_executor.h);
  /// nullptr on the CPU.
  CudaPlanRunner* cuda_runner() const;
  /// Why this build is slower than it could be, one line each: convolutions without cuDNN, a
  /// plan that --cuda-graphs cannot capture. Empty when there is nothing to say.
  const std::string& perf_hints() const;
  /// With max_autotune: what tuning did, one line each (see codegen/autotune.h); else empty.
  const std::vector<std::string>& autotune_log() const;

  struct Impl;
  std::shared_ptr<Impl> impl;
};

/// The kernels of a graph compiled for NVIDIA GPUs (--device=cuda, --emit=ptx); extern calls
/// and the host plan are the same as on the CPU (see ir_post_fusion).
struct PtxKernelInfo {
  std::string name;
  std::string ll;
  std::string ptx;
  int64_t grid = 0; ///< blocks: ceil(rows / rows per block)
  int block = 32;   ///< threads per block
  int rows = 1;     ///< rows per block: 1, `block` when each thread computes a row, or packed rows
  int num_buffers = 0; ///< pointer parameters before the trailing i64 row count
};
struct PtxProgram {
  std::string ir_pre_fusion, ir_post_fusion, fusion_log;
  std::vector<PtxKernelInfo> kernels;
};

/// Lowers and fuses `g` like compile_inductor() and generates PTX for `arch` ("sm_90"), with
/// math from `libdevice` (only LLVM IR where opts.kernel_ptx is false). Throws fxc::Error.
PtxProgram compile_inductor_ptx(
    const Graph& g, const InductorOptions& opts = {}, const std::string& arch = "sm_90",
    const std::string& libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");

/// Compiles `g` for the host CPU. Throws fxc::Error for graphs that cannot be lowered
/// (missing metadata, malformed arguments) and when LLVM fails.
CompiledGraph compile_inductor(const Graph& g, const InductorOptions& opts = {});

struct LoopProgram;
/// compile_inductor's steps after lower on a loop program read from text (a .lir file,
/// passes/loop_ir_parse.h), verified first. Its weights have no data: a build of a program with
/// weights ends before host-plan (opts.steps.stop_after), and one with a fallback extern call
/// cannot run. Throws fxc::Error.
CompiledGraph compile_loop_program(const LoopProgram& p, const InductorOptions& opts = {});

} // namespace fxc
