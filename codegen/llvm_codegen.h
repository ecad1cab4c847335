// Loop IR → LLVM IR for one fused kernel (target-independent), and the CPU kernel compiler.
#pragma once

#include "codegen/target.h"
#include "passes/fuse.h"
#include "runtime/plan_executor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

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
  virtual std::string add_kernel(const LoopProgram& p, const Kernel& k,
                                 const std::vector<int>& args,
                                 const std::vector<bool>& noalias) = 0;
  /// Optimizes (O2) and JIT-compiles every queued kernel. Throws fxc::Error on failure.
  virtual void finalize() = 0;
  /// The entry point of a finalized kernel.
  virtual KernelFn lookup(const std::string& name) = 0;
};

/// The host compiler.
std::unique_ptr<KernelCompiler> make_x86_compiler();

/// One kernel for NVIDIA GPUs. Launch: grid ceil(xnumel / rows), block (block) threads, no
/// dynamic shared memory; parameters: a pointer per buffer in `args` (each a distinct allocation,
/// 16-byte aligned: kernels use 16-byte vector accesses), then xnumel as i64.
struct PtxKernel {
  std::string name;
  std::string ll; ///< LLVM IR as generated (before libdevice and optimization)
  std::string ptx;
  std::vector<int> args; ///< buffer ids, in parameter order
  int64_t xnumel = 0;
  int block = 32; ///< threads per block: mapping.threads()
  /// Rows per block: 1, or mapping.rows in the short-row form (a thread per row) and the packed
  /// form (mapping.block threads a row).
  int rows = 1;
  RowMapping mapping;
  /// What LLVM warned about while compiling it (generate_ptx() prints them in kernel order).
  std::vector<std::string> warnings;
};

/// Generates PTX for every kernel of `s` for `arch` ("sm_90"), linking the math functions
/// from `libdevice` (libdevice.10.bc). Kernels compile on worker threads; what LLVM warns about
/// is printed afterwards on the calling thread, kernel by kernel ("fxc: warning: kernel <name>:
/// ..." on stderr). Throws fxc::Error when `arch` is not one of nvptx_processors() (before any
/// kernel compiles) and when LLVM or libdevice fail. With `ptx` false, each kernel's LLVM IR
/// only (PtxKernel::ptx empty; link_ptx_kernels() compiles them together).
std::vector<PtxKernel> generate_ptx(const LoopProgram& p, const Schedule& s,
                                    const std::string& arch, const std::string& libdevice,
                                    bool ptx = true);
/// One kernel to generate, with `mapping` instead of nvptx_row_mapping()'s when it is set (an
/// autotuning candidate from nvptx_mapping_candidates()).
struct PtxRequest {
  const Kernel* kernel = nullptr;
  std::optional<RowMapping> mapping;
};
/// generate_ptx() for the requested kernels, in request order.
std::vector<PtxKernel> generate_ptx(const LoopProgram& p, const std::vector<PtxRequest>& kernels,
                                    const std::string& arch, const std::string& libdevice,
                                    bool ptx = true);
/// How kernel `k` maps onto a thread block: 16-byte vectors of the narrowest element along r
/// (where they tile the row), the row resident in registers when several stages walk it and it
/// fits (at most 8 vectors per thread), and a power-of-two block size from the row length.
RowMapping nvptx_row_mapping(const LoopProgram& p, const Kernel& k);
/// The mappings --max-autotune times for kernel `k`, nvptx_row_mapping()'s first and no two
/// alike: other block sizes of the same form (threads per row, or rows per block for many short
/// rows), a persistent row with more threads and fewer vectors each, and the looping form
/// instead of a persistent row. Every candidate computes the same result.
std::vector<RowMapping> nvptx_mapping_candidates(const LoopProgram& p, const Kernel& k);
/// "block=128 vec=8 persistent chunks=4", "block=256 vec=4", "rows=256" (a thread per row),
/// "block=16 vec=4 rows=16 packed".
std::string format_mapping(const RowMapping& m);

/// erf of NVPTX kernels with 16-bit results (Target::approx_math): x P(x^2) / Q(x^2) with x
/// clamped to [-clamp, clamp], Horner's rule in f32 with fma, 1/Q by rcp.approx. A minimax fit
/// of the relative error: at most 2^-18 for every f32 x with a normal result (checked over all
/// of them, 1/Q off by an ulp either way; test/unit/nvptx_test.cpp sweeps it densely).
struct HalfErf {
  static constexpr int kTerms = 4;
  float clamp;
  float p[kTerms]; ///< P's coefficients, constant term first
  float q[kTerms]; ///< Q's, q[0] = 1
};
inline constexpr HalfErf kHalfErf = {3.3f,
                                     {1.128377199f, 0.1547448188f, 0.04312683269f, 7.446273812e-4f},
                                     {1.0f, 0.4704849422f, 0.09494952857f, 0.009254763834f}};
/// The normal CDF of NVPTX kernels' 16-bit gelu (Target::approx_gelu) as a logistic function:
/// Phi(y) = 1 / (1 + 2^(y P(y^2))), P of degree 4 by Horner's rule in f32 with fma, 2^ by
/// ex2.approx.ftz and 1 / by rcp.approx.ftz, with no clamp (2^ saturates to 0 or inf, so Phi to 1
/// or 0; NaN stays NaN). P is -log2(Phi / (1 - Phi)) / y fitted minimax with the error weighted
/// by Phi (1 - Phi) (what an error in the exponent does to Phi) on y in [0, 6]; its top
/// coefficient is negative, so y P(y^2) falls monotonically for y > 0 and the fit holds beyond.
/// Absolute error at most 2^-19, relative 2^-18.5 for y >= 0 (test/unit/nvptx_test.cpp sweeps it
/// against std::erfc in float64). Four instructions fewer than a clamped rational of the same
/// accuracy (the clamp, a shorter numerator, the 1/2): gelu is most of a fused 16-bit norm's work.
struct HalfPhi {
  static constexpr int kTerms = 5;
  float p[kTerms]; ///< P's coefficients, constant term first
};
inline constexpr HalfPhi kHalfPhi = {{-2.3021648378958903f, -0.10500869105545592f,
                                      2.5551090095089416e-4f, 1.0541638506124971e-4f,
                                      -4.082529422147926e-6f}};

/// LLVM's O2 module pipeline for `tm`'s target, as clang -O2 runs it.
void optimize_o2(llvm::Module& m, llvm::TargetMachine* tm);
/// `m` compiled by `tm` to assembly text (PTX for NVPTX) or an object file. Throws fxc::Error
/// "internal error: <target> cannot emit ..." when the target cannot.
std::string emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, bool object,
                              const std::string& target);

/// The processors LLVM's NVPTX back end knows ("sm_20" .. "sm_90a"), by number then suffix:
/// the values --cuda-arch accepts.
std::vector<std::string> nvptx_processors();

/// What LLVM reported through a context's diagnostic handler while fxc compiled in it.
struct LlvmDiagnostics {
  std::vector<std::string> errors, warnings; ///< "<message>", in the order reported
};
/// Routes the diagnostics of `ctx` into `*out` (which must outlive their use) instead of LLVM's
/// default handler, which prints from whichever thread compiles and exits on an error. Remarks
/// and notes are dropped.
void collect_diagnostics(llvm::LLVMContext& ctx, LlvmDiagnostics* out);

/// One kernel's LLVM IR (a module of its own, as generated) to link with others into one
/// module: `name` is its entry function in `ll`, renamed to `symbol` in the linked module
/// (unless empty) where kernels of two graphs share a name.
struct KernelText {
  std::string name;
  std::string ll;
  std::string symbol;
};
/// Throws fxc::Error "internal error: <what>: <first error>" when LLVM reported an error.
void throw_llvm_errors(const LlvmDiagnostics& d, const std::string& what);

/// Parses and links `kernels` (in order) into one module named "kernels" in `ctx`, whose
/// diagnostics go to `*diags` from then on (collect_diagnostics()). Throws fxc::Error when one
/// does not parse or two define the same symbol.
std::unique_ptr<llvm::Module> link_kernel_modules(llvm::LLVMContext& ctx,
                                                  const std::vector<KernelText>& kernels,
                                                  LlvmDiagnostics* diags);
/// Links the kernels' LLVM IR into one module. Returns its text after the same O2 pipeline the
/// JIT uses when `optimize`, else as generated. Throws fxc::Error.
std::string link_kernels_ll(const std::vector<KernelText>& kernels, bool optimize);
/// The linked, optimized kernels as an x86-64 ELF relocatable object (position independent),
/// exporting each kernel's entry point. Throws fxc::Error.
std::string emit_kernels_object(const std::vector<KernelText>& kernels);
/// The kernels in object_parts(kernels) consecutive groups, each linked and compiled as
/// emit_kernels_object() compiles all of them, the groups in parallel (in order in the result).
/// The grouping depends on the kernels alone, never on the machine, so the objects are
/// deterministic. Throws fxc::Error.
std::vector<std::string> emit_kernels_objects(const std::vector<KernelText>& kernels);
/// How many objects emit_kernels_objects() makes of `n` different kernels: 1 up to 32, 2 up to
/// 64, else 4 (LLVM's per-module cost is small next to a kernel's; the parts run on the cores,
/// evenly on 2 or 4 of them). Kernels that differ only in name are compiled once (aliases).
size_t object_parts(size_t n);
/// NVPTX kernels' LLVM IR as generate_ptx() generated it (PtxKernel::ll) linked into one
/// module: its text as generated (`ptx` false), or one PTX module for `arch` (`ptx` true) with
/// the libdevice functions the kernels call linked once, optimized and compiled as
/// generate_ptx() compiles each kernel. What --emit=ptx|llvm -o writes for --device=cuda.
/// Throws fxc::Error.
std::string link_ptx_kernels(const std::vector<KernelText>& kernels, const std::string& arch,
                             const std::string& libdevice, bool ptx);

} // namespace fxc
