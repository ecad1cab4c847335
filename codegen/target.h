// The code generation target interface (x86-64 and NVPTX), in the style of Halide's
// CodeGen_LLVM: the generic emitter asks the target how a kernel's iteration space maps to
// threads and how partial reductions are combined; capability fields steer the choices.
#pragma once

#include "passes/fuse.h"
#include "passes/loop_ir.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Function;
class IRBuilderBase;
class Module;
class Value;
class Type;
} // namespace llvm

namespace fxc {

struct TargetCaps {
  std::string name;                   ///< "x86-64", "nvptx64"
  bool host = true;                   ///< kernels run in this process (JIT) vs on a device
  bool parallel_rows = true;          ///< rows (x) are spread over workers: threads or blocks
  bool cooperative_reduction = false; ///< several threads share one row's reduction
  bool has_shared_memory = false;
  int max_threads_per_block = 1;
  int vector_bits = 256; ///< preferred SIMD width for the r loop
  /// fptrunc to bfloat is an instruction (NVPTX sm_80+). Otherwise the emitter rounds with
  /// integer operations, as c10's round_to_nearest_even: LLVM would call __truncsfbf2, which
  /// neither libgcc before GCC 13 nor the artifact loader provides, and AVX512-BF16's
  /// conversion flushes denormals where PyTorch keeps them.
  bool native_bf16_round = true;
};

/// How one kernel's rows map onto the threads of a cooperative target, chosen per kernel before
/// emission. The default (block 0) is the host form: each invocation owns whole rows and loops
/// over r one element at a time; on NVPTX that is the short-row form, `rows` threads per block,
/// each computing one whole row (no shuffles, no barriers).
struct RowMapping {
  int block = 0; ///< threads per row: a power of two (32..1024), or 0 for one thread per row
  /// Rows per thread block: with block 0 (NVPTX) its threads, one row each; otherwise rows the
  /// block computes in turn (persistent rows only: the next row's loads are issued before the
  /// current row is reduced, so they stream in while it computes).
  int rows = 1;
  int vec = 1; ///< contiguous elements per thread access (one 16-byte vector where aligned)
  /// Persistent form: each thread owns `chunks` vectors of the row (block * vec * chunks >=
  /// rnumel), kept in registers from the first stage to the last (no r loops, one read of the row).
  bool persistent = false;
  int chunks = 1;
  /// Packed form (NVPTX, kernels without reductions): `rows` rows side by side in a block of
  /// block * rows threads, `block` threads a row (any count: a vector each), so that no
  /// thread idles where a row is not a power of two vectors long or shorter than a warp.
  bool packed = false;
  /// Threads a block launches (NVPTX): `block`, `rows` in the short-row form (block 0), their
  /// product in the packed form.
  int threads() const { return packed ? block * rows : block > 0 ? block : rows; }
  bool operator==(const RowMapping&) const = default;
};

/// What the target's kernel entry provides to the generic emitter.
struct KernelEntry {
  std::vector<llvm::Value*> buffers; ///< one pointer per kernel argument
  llvm::Value* xbegin = nullptr;     ///< rows [xbegin, xend) computed by this invocation (i64)
  llvm::Value* xend = nullptr;
  llvm::Value* xnumel = nullptr; ///< the kernel's row count (i64)
  llvm::Value* rstart = nullptr; ///< this thread's first r and its stride (i64)
  llvm::Value* rstep = nullptr;
};

class Target {
public:
  virtual ~Target() = default;
  virtual const TargetCaps& caps() const = 0;
  /// Sets the triple and data layout.
  virtual void prepare_module(llvm::Module& m) = 0;
  /// The row mapping of kernel `k` (the host form unless the target overrides it).
  virtual RowMapping row_mapping(const LoopProgram&, const Kernel&) { return {}; }
  /// Creates the kernel function with the target's ABI and positions `b` in its body.
  /// noalias[i] says argument i shares memory with no other argument; `map` is the kernel's
  /// row mapping (row_mapping()).
  virtual llvm::Function* begin_kernel(llvm::Module& m, llvm::IRBuilderBase& b,
                                       const std::string& name, const std::vector<bool>& noalias,
                                       const RowMapping& map, KernelEntry* entry) = 0;
  /// Combines this thread's partial result of a reduction with the other threads of its row
  /// (identity when one thread owns a row). `index` is the position for arg reductions.
  virtual llvm::Value* combine_partial(llvm::IRBuilderBase& b, ReduceOp op, llvm::Value* partial,
                                       llvm::Value** index) = 0;
  /// Merges two partial results of a joint reduction (several values reduced together), each
  /// summarizing the elements of `threads` threads, into one (the first operand is the
  /// thread's own).
  using JointMerge = std::function<std::vector<llvm::Value*>(
      llvm::IRBuilderBase&, const std::vector<llvm::Value*>&, const std::vector<llvm::Value*>&,
      int threads)>;
  /// Combines this thread's partial tuple (f32 values) with the other threads of its row by
  /// `merge`, in one block reduction (one barrier for the tuple), the result the same in every
  /// thread; returns {} where the target has no block reductions (one thread per row).
  virtual std::vector<llvm::Value*> combine_joint(llvm::IRBuilderBase&,
                                                  const std::vector<llvm::Value*>& /*partial*/,
                                                  const JointMerge&) {
    return {};
  }
  /// A math function the target provides its own way (exp, log, tanh, erf, log1p, expm1, sin,
  /// cos, pow): LLVM intrinsics and the C library on the host, libdevice on NVPTX. `args` are
  /// float or double values (`f64`).
  virtual llvm::Value* math(llvm::IRBuilderBase& b, llvm::Module& m, VOp op,
                            const std::vector<llvm::Value*>& args, bool f64) = 0;
  /// A faster f32 form of `op` (Rsqrt, Exp, Erf), or nullptr where the target has none. Without
  /// `half` it must be as precise as PyTorch's CUDA code for the op (rsqrtf). With `half` the
  /// op's value is a 16-bit float (f16 or bf16, computed in f32): a relative error of at most
  /// 2^-18 wherever the exact result is a normal f32 (1/64 of half an f16 ulp, 1/512 of half a
  /// bf16 ulp; exp's rounding of a * log2(e) adds |a| 2^-24 as in any f32 exp, and of an
  /// argument u - c, computed as fma(u, log2(e), -c log2(e)), (|u - c| + |c|) 2^-24: at most
  /// 2^-13.9 where |c| <= 2^10, as results of 2^-126 or more need |u - c| < 88); smaller
  /// results may flush to zero.
  virtual llvm::Value* approx_math(llvm::IRBuilderBase&, llvm::Module&, VOp,
                                   const std::vector<llvm::Value*>&, bool /*half*/) {
    return nullptr;
  }
  /// gelu(y) = y Phi(y) (Phi the standard normal CDF: approximate='none') of an f32 `y` whose
  /// gelu is a 16-bit float, or nullptr where the target has none (the emitter then computes
  /// y/2 (1 + erf(y / sqrt 2)) with approx_math's erf). Phi within 2^-19 absolute (relative
  /// 2^-18 for y >= 0, as 1 + erf with approx_math's erf: no worse in the negative tail).
  virtual llvm::Value* approx_gelu(llvm::IRBuilderBase&, llvm::Value* /*y*/) { return nullptr; }
  /// `lanes` (f32, an even number) rounded to nearest f16 or bf16 (`bf16`) and packed in pairs,
  /// lane 2i in the low half of element i of an i32 vector, or nullptr where the target has no
  /// paired conversion.
  virtual llvm::Value* pack_half(llvm::IRBuilderBase&, const std::vector<llvm::Value*>& /*lanes*/,
                                 bool /*bf16*/) {
    return nullptr;
  }
  /// `ptr` (a kernel argument) as a value the optimizers cannot trace back to it, in the
  /// target's global address space, or nullptr where the target has no such need. Pipelined
  /// rows load the next row through it, so that those loads are not taken for reads of
  /// read-only memory (which NVPTX's ptxas may move past barriers).
  virtual llvm::Value* opaque_global(llvm::IRBuilderBase&, llvm::Value* /*ptr*/) { return nullptr; }
  /// A 16-byte vector load (of type `vt`) from `ptr`, memory the kernel only reads, each byte
  /// of it once (a row streaming through a kernel of a row per block), with the target's cache
  /// hints for such data; nullptr where the target has none (a plain load then).
  virtual llvm::Value* streaming_load(llvm::IRBuilderBase&, llvm::Type* /*vt*/,
                                      llvm::Value* /*ptr*/) {
    return nullptr;
  }
  /// Asks for `ptr`'s bytes to be fetched into the shared cache ahead of their use, when `when`
  /// (i1) holds; false where the target has no such instruction (nothing emitted then).
  virtual bool prefetch(llvm::IRBuilderBase&, llvm::Value* /*ptr*/, llvm::Value* /*when*/) {
    return false;
  }
  /// Between two stages of a row: makes one stage's stores visible to the next stage's loads by
  /// the other threads of the row (nothing when one thread owns a row).
  virtual void end_stage(llvm::IRBuilderBase& b) = 0;
  /// Finishes the kernel (return, wrapper, attributes, annotations). `lean`: the kernel streams
  /// one row in and one row out per block and keeps little else per thread (the target may
  /// bound its registers for more resident blocks).
  virtual void end_kernel(llvm::Module& m, llvm::IRBuilderBase& b, llvm::Function* f,
                          bool lean) = 0;
};

} // namespace fxc
