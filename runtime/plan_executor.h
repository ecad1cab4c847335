// The host plan of a compiled graph (allocate, run kernel, call extern, free) and its executor.
//
// Codegen fills a Plan with compiled kernel entry points; this file runs it without knowing how
// the kernels were made (no LLVM here). Storage slots hold buffers; the memory planner decides
// which buffers share a slot.
#pragma once

#include "frontend/graph.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fxc {

namespace cuda {
class Context;
} // namespace cuda

/// A compiled kernel: computes rows [xbegin, xend) of its iteration space. args[i] is the base
/// pointer of the i-th buffer argument.
using KernelFn = void (*)(void* const* args, int64_t xbegin, int64_t xend);

// Every field of PlanView, PlanKernel, PlanExtern, PlanStep and Plan is serialized in
// runtime/artifact.cpp (.fxo artifacts): a new field needs a line in its write_* and read_*
// functions there (a static_assert on each struct's size fails until it has one).

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
  /// CUDA plans: the loaded kernel (a CUfunction), launched with blocks of `cuda_block` threads,
  /// one block per `cuda_rows` rows (1: a block per row; cuda_block: a thread per row; another
  /// divisor of cuda_block: rows side by side, cuda_block / cuda_rows threads each), and
  /// parameters (a device pointer per argument, then xnumel as int64).
  void* cuda_function = nullptr;
  int cuda_block = 0;
  int cuda_rows = 1;
};

struct PlanExtern {
  /// Gemm: a BLAS product. Fallback: the reference kernel of one node. Conv: a convolution
  /// through cuDNN (CUDA plans, 2-D) or oneDNN (CPU plans, 1-D to 3-D, runtime/onednn.h).
  /// ConvBackwardData / ConvBackwardFilter: the input / weight gradient of a convolution
  /// through cuDNN (CUDA plans, 2-D) or oneDNN (CPU plans, 1-D to 3-D, float32). Attention: fused
  /// scaled-dot-product attention through cuDNN's graph API (CUDA plans only, f16/bf16).
  enum class Kind : uint8_t {
    Gemm,
    Fallback,
    Conv,
    ConvBackwardData,
    ConvBackwardFilter,
    Attention
  };
  /// Gemm: what the product gets before it is written, as one cuBLASLt epilogue (CUDA plans
  /// only; CPU plans always have None). The bias is one value per output column.
  enum class Epilogue : uint8_t {
    None,         ///< D = A·B
    Bias,         ///< D = A·B + bias
    ReluBias,     ///< D = relu(A·B + bias)
    GeluTanhBias, ///< D = gelu(A·B + bias, approximate='tanh') (CUBLASLT_EPILOGUE_GELU_BIAS)
    BiasResidual, ///< D = A·B + bias + R (R is cuBLASLt's C, with beta = 1)
  };
  Kind kind = Kind::Fallback;
  std::string name;
  /// Gemm: A [(B,) M, K], B [(B,) K, N], then the bias [N] (unit stride) when the epilogue has
  /// one, then the residual R [M, N] (contiguous) for BiasResidual. Conv: x [N, C, H, W], w [K, C /
  /// groups, R, S], then the bias [K] when there is one, then one operand per `sum` post-op (CPU),
  /// all contiguous. ConvBackwardData: dy [N, K, OH, OW], w (the output is dx, shaped as x);
  /// ConvBackwardFilter: x, dy (the output is dw, shaped as w). Attention: q [B, H, Sq, D],
  /// k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv] (any strides with a unit last one), then an additive
  /// bias [B or 1, H or 1, Sq, Skv] (contiguous) when there is one; the output is [B, Sq, H, Dv].
  std::vector<PlanView> inputs;
  std::vector<PlanView> outputs;      ///< contiguous
  std::shared_ptr<const Graph> graph; ///< Fallback: one node; inputs are its user inputs
  int64_t bytes = 0;                  ///< operand and result bytes
  Epilogue epilogue = Epilogue::None; ///< Gemm only
  /// Conv only: PyTorch's convolution arguments, one value per spatial dim each ({h, w} on CUDA:
  /// cuDNN runs 2-D ones), and the group count.
  std::vector<int64_t> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  /// Conv on CUDA: x and w channels-last (NHWC strides), the output [N, OH, OW, K], no bias.
  bool channels_last = false;
  /// Gemm on CUDA: the index of the cuBLASLt heuristic algorithm to run (0: its first choice;
  /// --max-autotune may pick another, see cuda::MatmulProblem::algo).
  int algo = 0;
  /// Conv on the CPU (oneDNN, runtime/onednn.h): the fused post-ops, space-separated
  /// ("linear:1:3 clip:0:6 sum"); each `sum` reads one more input after x, w and the bias.
  std::string post_ops;
  /// Conv on the CPU: per output channel k, y = scale[k] · (conv + bias)[k] + shift[k] before the
  /// post-ops (a folded inference batch norm); prepare_plan folds it into the constant weights
  /// and bias. Empty: none.
  std::vector<float> scale, shift;
  /// Attention only: softmax(attn_scale · q·kᵀ) · v, with keys j > i masked out of query i when
  /// `causal`.
  double attn_scale = 1;
  bool causal = false;
  /// Conv, ConvBackwardData and ConvBackwardFilter on the CPU: the oneDNN primitive and
  /// reordered weights (onednn::prepare_plan). Made
  /// when the plan is built or loaded; not serialized.
  std::shared_ptr<void> prepared;
};

/// "none", "bias", "relu_bias", "gelu_tanh_bias", "bias_residual".
const char* epilogue_name(PlanExtern::Epilogue e);

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

struct ArenaLayout {
  std::vector<int64_t> offset; ///< per slot, bytes from the arena's base; -1: not in the arena
  int64_t bytes = 0;           ///< the arena's size (the planned peak, rounded per slot)
};

/// A CPU plan's activation arena, kept between runs (execute_plan): one block laid out by
/// plan_arena, taken by a run and given back when it ends, so that a run neither allocates nor
/// zeroes its intermediate buffers (page faults and memset were most of a ResNet-50 train step).
/// A run that finds the arena taken (concurrent runs of one plan) makes a block of its own. A
/// copied plan starts with an empty cache. Buffers are not zeroed: every kernel writes what it
/// reads later, as on CUDA, whose arena is reused the same way.
struct PlanArenaCache {
  PlanArenaCache() = default;
  PlanArenaCache(const PlanArenaCache&) {}
  PlanArenaCache& operator=(const PlanArenaCache&) { return *this; }
  std::mutex mutex;
  bool laid_out = false;
  std::vector<int64_t> slot_bytes;        ///< what the layout was made for (plans may change)
  std::vector<std::pair<int, int>> steps; ///< Alloc/Free steps (kind, slot) it was made for
  ArenaLayout layout;
  std::shared_ptr<std::byte[]> block; ///< the idle block; null while a run holds it
  /// Per slot outside the arena (outputs): the last run's buffer, reused by the next run once
  /// the caller has let go of it (so a plan keeps one set of outputs alive after a run).
  std::vector<std::shared_ptr<Storage>> outputs;
  /// Plan::prepare's results: per slot, its persistent buffer (null elsewhere), made by the
  /// first run for the weights in `prepared_for` (their storages; a plan whose constants were
  /// rebound prepares again). Guarded by prepare_mutex, held while the prepare steps run.
  std::mutex prepare_mutex;
  std::vector<std::shared_ptr<Storage>> prepared;
  std::vector<std::weak_ptr<Storage>> prepared_for;
  bool is_prepared = false;
};

struct Plan {
  std::vector<int64_t> slot_bytes; ///< size of each storage slot
  std::vector<int> input_slots;    ///< slot of each user input, in order (contiguous copies)
  std::vector<TensorMeta> input_metas;
  std::vector<std::pair<int, Tensor>> constant_slots; ///< weights bound at compile time
  std::vector<PlanKernel> kernels;
  std::vector<PlanExtern> externs;
  std::vector<PlanStep> steps;
  /// Freezing (inference plans): Kernel and Extern steps that read only constant slots and
  /// prepared slots. They give the same result every run, so they run once per loaded plan (the
  /// CPU executor's first run, the CUDA runner's constructor, after the weight upload) into the
  /// `prepared_slots`, which live as long as the plan and which `steps` never allocate or free.
  std::vector<PlanStep> prepare;
  std::vector<int> prepared_slots;
  std::vector<PlanView> outputs;
  /// float32 BLAS calls / convolutions may round their inputs to TF32 (--tf32; CUDA only).
  bool matmul_tf32 = false;
  bool conv_tf32 = false;
  /// CUDA: an artifact's runner replays the plan as a CUDA graph (--cuda-graphs, the default;
  /// CudaRunnerOptions::cuda_graphs of the runners the runtime makes).
  bool cuda_graphs = false;
  /// CPU runs: the reused activation arena (not serialized).
  mutable PlanArenaCache arena_cache;
};

/// Where each storage slot of a CUDA plan lives in its one device arena: slots whose lifetimes
/// (first Alloc to last Free in plan.steps; inputs and outputs for the whole run) do not overlap
/// may share bytes. Constant and prepared slots are not in the arena (offset -1). Offsets are
/// multiples of 256 bytes (cuBLASLt and cuDNN like aligned operands). Deterministic; runs on the
/// host only. `intermediates_only` (CPU runs): inputs and outputs stay out of the arena (offset
/// -1), since the run's inputs are the caller's and its outputs outlive the run.
ArenaLayout plan_arena(const Plan& plan, bool intermediates_only = false);

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
/// The first run of a plan (and the first after its constants were rebound) runs Plan::prepare
/// first, once, while concurrent runs wait; prepare steps are not profiled.
std::vector<Tensor> execute_plan(const Plan& plan, const std::vector<Tensor>& user_inputs,
                                 ThreadPool& pool, const std::string& source = {},
                                 std::vector<StepProfile>* profile = nullptr);

struct CudaRunnerOptions {
  /// Capture the plan's launches into a CUDA graph after the first run and replay it from then
  /// on (--cuda-graphs). Only when every step can be captured: a plan with host fallback calls
  /// runs step by step, and graph_note() says why.
  bool cuda_graphs = false;
  /// The CUDA device (ordinal) the runner's buffers live on and its work runs on; -1: the
  /// default device (cuda::Context::get()).
  int device = -1;
};

/// Runs a plan whose kernels are CUDA functions on one CUDA device (runtime/
/// cuda_driver.h): slots are offsets into one device arena (plan_arena) allocated when the
/// runner is made and reused by every run; the weights are uploaded once, then stay resident,
/// and Plan::prepare runs once right after the upload into device buffers of its own (a new
/// runner, e.g. after a weight swap, prepares again). time_steps() leaves prepare steps out.
/// Kernels, cuBLASLt (with its epilogue) and cuDNN calls are queued on the context's one stream
/// with no synchronization between steps; fallback calls run on the host between copies.
/// Throws fxc::Error for bad inputs and CUDA failures.
///
/// Timing on resident buffers (for --bench): upload() once, then time run_resident() with CUDA
/// events on cuda::Context::get() (its stream is the one everything runs on), flushing L2
/// between runs as you like; download() the outputs at the end. time_steps() times each step.
///
///   runner.upload(inputs);
///   auto start = ctx.create_event(), stop = ctx.create_event();
///   start->record(); runner.run_resident(); stop->record();
///   float ms = stop->elapsed_ms_since(*start);
///   std::vector<Tensor> outs = runner.download();
class CudaPlanRunner {
public:
  explicit CudaPlanRunner(const Plan& plan, std::string source = {}, CudaRunnerOptions opts = {});
  ~CudaPlanRunner();
  CudaPlanRunner(const CudaPlanRunner&) = delete;
  CudaPlanRunner& operator=(const CudaPlanRunner&) = delete;
  /// upload(), run_resident(), download().
  std::vector<Tensor> run(const std::vector<Tensor>& user_inputs);

  /// Checks the user inputs (count, dtype, shape, as run()) and copies them into their device
  /// slots; returns when the copies are done.
  void upload(const std::vector<Tensor>& user_inputs);
  /// Queues every step of the plan on the context's stream over the resident inputs of the last
  /// upload() and returns without waiting (a plan with fallback calls waits for each of them).
  /// With cuda_graphs, the first call captures the steps into a graph and every call launches
  /// it. Throws fxc::Error when nothing was uploaded.
  void run_resident();
  /// Waits for the stream, then copies the outputs of the last run to the host.
  std::vector<Tensor> download();
  /// A run on the caller's device buffers, ordered on the caller's stream (a CUstream or
  /// cudaStream_t of the runner's device; null: the legacy default stream): the run waits for
  /// the work queued on `stream` so far, copies inputs[i] (contiguous, as plan.input_metas[i])
  /// into the input slots, runs, and copies each output contiguously to outputs[i]; work the
  /// caller queues on `stream` afterwards waits for it. Returns once the work is queued (an
  /// output that is not a contiguous view is staged through the host, which waits).
  void run_device(const std::vector<uint64_t>& inputs, const std::vector<uint64_t>& outputs,
                  void* stream);
  /// The device the runner runs on.
  cuda::Context& context() const { return *ctx_; }
  /// Runs the plan once with a CUDA event recorded before and after each kernel launch and
  /// extern call; returns their device times (ms) in plan order. Waits. Where the plan can be
  /// captured (cuda_graphs, no host step), each step is replayed from a graph of its own (made
  /// on the first call), so a step's time is its GPU work, not the host time a library call
  /// spends queuing it.
  std::vector<StepProfile> time_steps();
  /// How many cuBLASLt algorithms can run gemm call `extern_index` (PlanExtern::algo's range;
  /// 0 for other calls and empty products). Throws fxc::Error when cuBLASLt fails.
  int gemm_algorithm_count(size_t extern_index);

  int64_t arena_bytes() const { return arena_.bytes; }
  /// Whether run_resident() replays a captured CUDA graph.
  bool graph_captured() const { return graph_exec_ != nullptr; }
  /// With cuda_graphs: empty once a graph is captured, else why the plan runs step by step.
  const std::string& graph_note() const { return graph_note_; }

private:
  void run_step(const PlanStep& st);
  void release();
  const Plan& plan_;
  std::string source_;
  CudaRunnerOptions opts_;
  cuda::Context* ctx_ = nullptr;
  ArenaLayout arena_;
  uint64_t arena_base_ = 0;
  std::vector<uint64_t> slot_ptr_;  ///< device address of each slot (arena or constant)
  std::vector<uint64_t> constants_; ///< device copy of each constant slot (0 elsewhere)
  std::vector<uint64_t> prepared_;  ///< device buffer of each prepared slot (0 elsewhere)
  bool uploaded_ = false;
  bool ran_ = false;
  void* graph_ = nullptr;         ///< CUgraph
  void* graph_exec_ = nullptr;    ///< CUgraphExec
  std::vector<void*> step_execs_; ///< time_steps(): one CUgraphExec per timed step
  std::string graph_note_;
};

} // namespace fxc
