// The generic LLVM IR emitter for fused kernels (row loop, stages, r loops, value expressions),
// and the O2 pipeline and machine-code emission that both targets share.
#include "codegen/llvm_codegen.h"
#include "frontend/diag.h"
#include "frontend/special_fns.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace fxc {

namespace {

// ---- The scalar helper functions of VOp::Call: frontend/special_fns.h's templates
// instantiated for LV, an LLVM value of the helper's float type, while its body is built.
namespace llv {

/// The builder, module, target and float type of the helper being built (one at a time per
/// thread; Emitter::scalar_fn sets it).
struct Ctx {
  llvm::IRBuilderBase* b = nullptr;
  llvm::Module* m = nullptr;
  Target* target = nullptr;
  llvm::Type* ty = nullptr;
  bool f64 = false;
};
thread_local Ctx* g_ctx = nullptr;
llvm::IRBuilderBase& B() {
  return *g_ctx->b;
}

/// A condition (i1).
struct LB {
  llvm::Value* v;
};
/// A float or double value; constants take the helper's type.
struct LV {
  llvm::Value* v;
  explicit LV(llvm::Value* x) : v(x) {}
  LV(double c) : v(llvm::ConstantFP::get(g_ctx->ty, c)) {}
};

LV operator+(LV a, LV b) {
  return LV(B().CreateFAdd(a.v, b.v));
}
LV operator-(LV a, LV b) {
  return LV(B().CreateFSub(a.v, b.v));
}
LV operator*(LV a, LV b) {
  return LV(B().CreateFMul(a.v, b.v));
}
LV operator/(LV a, LV b) {
  return LV(B().CreateFDiv(a.v, b.v));
}
LV operator-(LV a) {
  return LV(B().CreateFNeg(a.v));
}
// Ordered comparisons (false with a NaN operand), != unordered: C++'s semantics.
LB operator<(LV a, LV b) {
  return LB{B().CreateFCmpOLT(a.v, b.v)};
}
LB operator<=(LV a, LV b) {
  return LB{B().CreateFCmpOLE(a.v, b.v)};
}
LB operator>(LV a, LV b) {
  return LB{B().CreateFCmpOGT(a.v, b.v)};
}
LB operator>=(LV a, LV b) {
  return LB{B().CreateFCmpOGE(a.v, b.v)};
}
LB operator==(LV a, LV b) {
  return LB{B().CreateFCmpOEQ(a.v, b.v)};
}
LB operator!=(LV a, LV b) {
  return LB{B().CreateFCmpUNE(a.v, b.v)};
}
LB operator&&(LB a, LB b) {
  return LB{B().CreateAnd(a.v, b.v)};
}
LB operator||(LB a, LB b) {
  return LB{B().CreateOr(a.v, b.v)};
}
LB operator!(LB a) {
  return LB{B().CreateNot(a.v)};
}

LV sel(LB c, LV a, LV b) {
  return LV(B().CreateSelect(c.v, a.v, b.v));
}
bool is_double(LV) {
  return g_ctx->f64;
}
[[maybe_unused]] LB isnan(LV a) {
  return LB{B().CreateFCmpUNO(a.v, a.v)};
}
LV fabs(LV a) {
  return LV(B().CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a.v));
}
LB isinf(LV a) {
  return LB{B().CreateFCmpOEQ(fabs(a).v, LV(INFINITY).v)};
}
LV sqrt(LV a) {
  return LV(B().CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a.v));
}
LV trunc(LV a) {
  return LV(B().CreateUnaryIntrinsic(llvm::Intrinsic::trunc, a.v));
}
LV math(VOp op, LV a) {
  return LV(g_ctx->target->math(B(), *g_ctx->m, op, {a.v}, g_ctx->f64));
}
LV exp(LV a) {
  return math(VOp::Exp, a);
}
LV log(LV a) {
  return math(VOp::Log, a);
}
LV sin(LV a) {
  return math(VOp::Sin, a);
}
LV cos(LV a) {
  return math(VOp::Cos, a);
}
LV acos(LV a) {
  return math(VOp::Acos, a);
}

/// special::recur as a loop: k counts in i64 (exact for any trip count), and the loop ends
/// after `count` steps or once q is NaN.
template <class F> LV recur(LV count, LV p0, LV q0, F step) {
  llvm::IRBuilderBase& b = B();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::Value* c =
      b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt64Ty(), g_ctx->ty}, {count.v});
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx, "recur.head", fn);
  auto* body = llvm::BasicBlock::Create(ctx, "recur.body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx, "recur.exit", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2);
  llvm::PHINode* p = b.CreatePHI(g_ctx->ty, 2);
  llvm::PHINode* q = b.CreatePHI(g_ctx->ty, 2);
  k->addIncoming(b.getInt64(1), pre);
  p->addIncoming(p0.v, pre);
  q->addIncoming(q0.v, pre);
  llvm::Value* go = b.CreateAnd(b.CreateICmpSLE(k, c), b.CreateFCmpORD(q, q));
  b.CreateCondBr(go, body, exit);
  b.SetInsertPoint(body);
  LV r = step(LV(b.CreateSIToFP(k, g_ctx->ty)), LV(p), LV(q));
  llvm::BasicBlock* latch = b.GetInsertBlock();
  k->addIncoming(b.CreateAdd(k, b.getInt64(1)), latch);
  p->addIncoming(q, latch);
  q->addIncoming(r.v, latch);
  b.CreateBr(head);
  b.SetInsertPoint(exit);
  return LV(q);
}

/// special::loop_while as a loop.
template <size_t N, class C, class Body>
std::array<LV, N> loop_while(std::array<LV, N> s, C cond, Body body) {
  llvm::IRBuilderBase& b = B();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx, "while.head", fn);
  auto* bb = llvm::BasicBlock::Create(ctx, "while.body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx, "while.exit", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  std::array<llvm::PHINode*, N> phis;
  std::array<LV, N> cur = s;
  for (size_t i = 0; i < N; ++i) {
    phis[i] = b.CreatePHI(g_ctx->ty, 2);
    phis[i]->addIncoming(s[i].v, pre);
    cur[i] = LV(phis[i]);
  }
  b.CreateCondBr(cond(cur).v, bb, exit);
  b.SetInsertPoint(bb);
  std::array<LV, N> next = body(cur);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  for (size_t i = 0; i < N; ++i) phis[i]->addIncoming(next[i].v, latch);
  b.CreateBr(head);
  b.SetInsertPoint(exit);
  return cur;
}

} // namespace llv

/// How far ahead of its row a kernel of a row per block prefetches the rows streaming through
/// it (Emitter::vector_load), about half of what an H200's resident blocks hold. bf16 norms
/// (8 KiB rows, 1056 resident) on an H200, % of copy bandwidth: no prefetch 78.1, 512 KiB 75.4,
/// 1 MiB 77.0, 2 MiB 78.9, 4 MiB 79.9 (f32: 86.3 without, 87.7 at 2 or 4 MiB).
constexpr int64_t kPrefetchBytes = int64_t(4) << 20;

bool is_half(DType t) {
  return t == DType::F16 || t == DType::BF16;
}
bool is_unsigned(DType t) {
  return t == DType::Bool || t == DType::U8;
}
/// Whether an index expression depends on the kernel's r variable (an indirect index when its
/// value does: a gather at a position computed per row, such as a sort's permutation, is a
/// per-row value in the stage after the reduction that computed it).
bool uses_r(const IndexExpr& e) {
  return index_uses_var(e, kRVar);
}

/// Whether `e` depends on variable `var` through affine terms, floor divisions and moduli
/// alone (no indirect index).
bool affine_in(const IndexExpr& e, int var, bool* uses) {
  for (auto& [a, c] : e.terms()) {
    switch (a.kind) {
    case IndexAtom::Kind::Var:
      *uses = *uses || a.id == var;
      break;
    case IndexAtom::Kind::FloorDiv:
    case IndexAtom::Kind::Mod:
      if (!affine_in(*a.arg, var, uses)) return false;
      break;
    case IndexAtom::Kind::Indirect:
      return false;
    }
  }
  return true;
}

/// How vector_load() caches a vector and find_guarded_loads() names it: buffer and index.
std::string vector_key(int buffer, const IndexExpr& ix) {
  return std::to_string(buffer) + ':' + ix.str();
}

/// Calls f on every expression inside the indirect atoms of `e`.
void for_each_indirect(const IndexExpr& e, const std::function<void(const VPtr&)>& f) {
  for (auto& [a, c] : e.terms()) {
    if (a.kind == IndexAtom::Kind::Indirect) f(a.value);
    if (a.arg) for_each_indirect(*a.arg, f);
  }
}

/// Whether `e` reads memory (a load, or an index through loaded values).
bool reads_memory(const VPtr& e) {
  if (e->op == VOp::Load) return true;
  bool reads = false;
  for_each_indirect(e->index, [&](const VPtr&) { reads = true; });
  for (const VPtr& a : e->args) reads = reads || reads_memory(a);
  return reads;
}

class Emitter {
public:
  Emitter(Target& t, llvm::Module& m, const LoopProgram& p, const Kernel& k)
      : target_(t), m_(m), ctx_(m.getContext()), b_(ctx_), p_(p), k_(k) {}

  llvm::Function* run(const std::vector<int>& args, const std::vector<bool>& noalias);

private:
  void mark_parallel(const KernelStage& st, llvm::BasicBlock* body, llvm::BasicBlock* exit,
                     llvm::BranchInst* latch);
  /// Register type of a dtype: i1 for bool, float for f16/bf16 (computed in f32).
  llvm::Type* reg_type(DType t) {
    switch (t) {
    case DType::Bool:
      return b_.getInt1Ty();
    case DType::U8:
    case DType::I8:
      return b_.getInt8Ty();
    case DType::I16:
      return b_.getInt16Ty();
    case DType::I32:
      return b_.getInt32Ty();
    case DType::I64:
      return b_.getInt64Ty();
    case DType::F16:
    case DType::BF16:
    case DType::F32:
      return b_.getFloatTy();
    case DType::F64:
      return b_.getDoubleTy();
    }
    return b_.getFloatTy();
  }
  llvm::Type* mem_type(DType t) {
    if (t == DType::Bool) return b_.getInt8Ty();
    if (t == DType::F16) return b_.getHalfTy();
    // Without native bf16 rounding, bf16 lives in memory as i16: LLVM would legalize bfloat
    // values (a select, a constant) through f32 and __truncsfbf2.
    if (t == DType::BF16)
      return target_.caps().native_bf16_round ? b_.getBFloatTy() : b_.getInt16Ty();
    return reg_type(t);
  }
  llvm::Value* constant(double f, int64_t i, DType t) {
    if (is_floating(t)) return llvm::ConstantFP::get(reg_type(t), f);
    return llvm::ConstantInt::get(reg_type(t), uint64_t(i), !is_unsigned(t));
  }

  llvm::Value* index(const IndexExpr& e);
  llvm::Value* value(const VPtr& e);
  llvm::Value* load(int buffer, const IndexExpr& ix, DType t);
  void store(int buffer, llvm::Value* offset, llvm::Value* v, DType t);
  llvm::Value* cast(llvm::Value* v, DType from, DType to);
  /// `v` (f32 or f64) rounded to the half type `t`, a value of mem_type(t).
  llvm::Value* narrow(llvm::Value* v, DType t);
  /// A half-type value `v` (mem_type(t)) as f32. Without native bf16 rounding, bf16 is an i16
  /// and widens with integer operations, so that LLVM never sees a bfloat value it could narrow
  /// arithmetic to (a bf16 maximum it would lower through __truncsfbf2).
  llvm::Value* widen(llvm::Value* v, DType t);
  llvm::Value* unary(VOp op, llvm::Value* a, DType t);
  /// The helper function of VOp::Call `f` in dtype t (F32 or F64), emitted into the module on
  /// first use as an internal function.
  llvm::Function* scalar_fn(ScalarFn f, DType t);
  llvm::Value* binary(VOp op, llvm::Value* a, llvm::Value* c, DType t);
  llvm::Value* math(VOp op, llvm::Value* a, DType t, llvm::Value* c = nullptr) {
    std::vector<llvm::Value*> args = {a};
    if (c) args.push_back(c);
    if (is_half(t))
      if (llvm::Value* v = target_.approx_math(b_, m_, op, args, true)) return v;
    return target_.math(b_, m_, op, args, t == DType::F64);
  }
  /// Integer FloorDivide, TruncDivide, Fmod, Remainder: a zero divisor gives 0 and a divisor
  /// of -1 never reaches the division (INT_MIN / -1 traps on x86).
  llvm::Value* int_division(VOp op, llvm::Value* a, llvm::Value* c, bool un);
  /// c10::div_floor_floating: floor division through fmod, as PyTorch computes it.
  llvm::Value* floor_divide_float(llvm::Value* a, llvm::Value* c);
  /// y when `e` is gelu(y) (approximate='none') as the lowering writes it, y/2 (1 + erf(y c))
  /// with c = 1/sqrt 2 (operands of the products and the sum in either order), else nullptr.
  const VPtr* gelu_arg(const VExpr& e);
  /// In the slot form, (a - m) r with m and r per-row values and a not (layer norm's
  /// (x - mean) rstd), of a 16-bit result, as fma(a, r, -(m r)): one instruction per element
  /// instead of two. The product m r adds |m r| 2^-24 to the result's absolute error, the order
  /// of the error m itself carries (a sum's rounding, |m| 2^-24 per add); nullptr otherwise.
  llvm::Value* scale_row_difference(const VExpr& e);
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* a) {
    return b_.CreateUnaryIntrinsic(id, a);
  }
  llvm::Value* reduce_init(ReduceOp op, DType t);
  /// Folds v (at position r) into the accumulator `a` of reduction `buf`; arg reductions keep
  /// their index in `argslot`. `first` forces taking v (the thread's first element).
  llvm::Value* accumulate(const Buffer& buf, llvm::Value* a, llvm::Value* v, llvm::Value* r,
                          llvm::Value* first, llvm::AllocaInst* argslot, llvm::Value* ok);
  void emit_stage(const KernelStage& st);

  // The slot form (RowMapping with vectors or persistent rows): each thread handles `vec`
  // contiguous elements per chunk; loads contiguous in r become one aligned vector load per chunk.
  /// Structural id of a node (equal ids compute equal values in one slot).
  int structural_id(const VExpr* e);
  llvm::Value* vector_load(int buffer, const IndexExpr& ix, DType t);
  /// The loads (by vec_loads_ key) whose every use is the value a where() takes where its
  /// condition is false, with that condition's structural id: a causal mask's
  /// where(r > x % T, -inf, s). vector_load() skips such a vector where every lane's condition
  /// holds (the value is never used there).
  void find_guarded_loads();
  /// Per vector load key: the guarding condition (null: a use it does not guard).
  std::map<std::string, VPtr> guard_of_;
  /// `buffer`'s argument in the target's global address space as an opaque value (the argument
  /// itself where the target has none), computed once in the kernel's entry block.
  llvm::Value* global_base(int buffer);
  void vector_store(int buffer, const std::vector<llvm::Value*>& lanes, DType t, int chunk);
  void set_slot(int chunk, int lane);
  /// Computes each chunk's first r for this thread (clamped into the row) and whether it lies
  /// in the row.
  void begin_chunks(const std::vector<llvm::Value*>& r0s, int64_t covered);
  void emit_slot_stage(const KernelStage& st);
  void clear_slot_values();
  /// A persistent row's partial result of reduction `buf` (of `body`) over this thread's
  /// slots, as emit_slot_stage computes it: one accumulator per lane, folded pairwise.
  llvm::Value* thread_partial(const Buffer& buf, const VPtr& body);
  /// This thread's partial result `a` of reduction member `m` (and its position `idx` for arg
  /// reductions, else null) combined with the row's other threads, then finish_reduce().
  void combine_and_finish(const KernelMember& m, llvm::Value* a, llvm::Value* idx);
  /// The row's value `a` (body dtype) of reduction member `m` — or, for an arg reduction, its
  /// index `idx` — kept for the row, stored if so.
  void finish_reduce(const KernelMember& m, llvm::Value* a, llvm::Value* idx = nullptr);
  /// Stages `sa` and `sb` of a persistent row (no masked chunks, 16-bit values) as one block
  /// reduction where `sa` sums a value and `sb` sums the squares of (the same value - a row
  /// constant): layer norm's mean and variance, reduced as (sum, sum of squared deviations)
  /// pairs merged by Chan's formula (each thread's pair exact from its registers). Returns
  /// false, emitting nothing, for any other pair of stages.
  bool emit_joint(const KernelStage& sa, const KernelStage& sb);

  Target& target_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const LoopProgram& p_;
  const Kernel& k_;
  llvm::Function* fn_ = nullptr;
  KernelEntry entry_;
  std::map<int, llvm::Value*> buf_ptr_;       ///< buffer id → argument pointer
  std::map<int, llvm::Value*> row_vals_;      ///< per-row values of this x iteration
  std::map<const VExpr*, llvm::Value*> memo_; ///< values of the current loop body
  /// Member bodies in terms of x and r; kept alive for the whole kernel because memo_ is keyed
  /// by node address.
  std::map<int, VPtr> bodies_;
  llvm::Value* x_ = nullptr;
  llvm::Value* r_ = nullptr;

  RowMapping map_;
  bool slots_ = false; ///< the slot form is in use
  int chunk_ = 0, lane_ = 0;
  std::vector<llvm::Value*> chunk_r0_; ///< each chunk's first r (clamped into the row)
  std::vector<llvm::Value*> chunk_ok_; ///< each chunk lies in the row (nullptr: always)
  std::vector<std::map<int, llvm::Value*>> slot_memo_;         ///< per slot, by structural id
  std::map<int, llvm::Value*> row_memo_;                       ///< values independent of r
  std::vector<std::map<std::string, llvm::Value*>> vec_loads_; ///< per chunk
  std::vector<std::map<int, llvm::Value*>> inner_vals_;        ///< per slot: inner members' values
  std::map<const VExpr*, int> structural_ids_;
  std::map<std::string, int> sid_table_;
  std::vector<bool> depends_on_r_; ///< per structural id: depends on r
  IndexExpr same_;                 ///< x * rnumel + r: an inner member's own position

  // Pipelined rows (a persistent row, several rows per block): each vector load of the row
  // (its index depends on x) is issued for the first row in `prologue_`, and for row x + 1 in
  // `prefetch_` (when there is one) before row x computes; x.head's phis carry them over.
  bool pipelined_ = false;
  /// A persistent row per block (run()): rows stream through the kernel, one each.
  bool streams_ = false;
  std::set<int> read_only_; ///< buffers of noalias arguments the kernel never stores to
  std::set<int> streamed_;  ///< buffers loaded as streaming rows (vector_load)
  llvm::BasicBlock* prologue_ = nullptr; ///< ends with the branch to x.head
  llvm::BasicBlock* head_ = nullptr;     ///< x.head
  llvm::BasicBlock* body_ = nullptr;     ///< x.body: branches to prefetch_ or row_
  llvm::BasicBlock* prefetch_ = nullptr; ///< the next row's loads
  llvm::BasicBlock* row_ = nullptr;      ///< the current row's computation begins here
  llvm::Value* xnext_ = nullptr;         ///< x + 1
  /// Per pipelined load: its x.head phi and the next row's value merged in row_.
  std::vector<std::pair<llvm::PHINode*, llvm::PHINode*>> next_loads_;
  int combines_ = 0;                        ///< block reductions (combine_partial) per row
  std::map<int, llvm::Value*> global_base_; ///< per buffer: global_base()
};

llvm::Value* Emitter::index(const IndexExpr& e) {
  llvm::Value* acc = b_.getInt64(uint64_t(e.constant()));
  for (auto& [a, c] : e.terms()) {
    llvm::Value* v = nullptr;
    switch (a.kind) {
    case IndexAtom::Kind::Var:
      assert((a.id == kXVar || a.id == kRVar) && "unsubstituted variable in a kernel");
      v = a.id == kXVar ? x_ : r_;
      break;
    case IndexAtom::Kind::Indirect: {
      llvm::Value* raw = cast(value(a.value), a.value->dtype, DType::I64);
      // Clamp into bounds: a bad index never reads outside the buffer.
      llvm::Value* lo = b_.getInt64(0);
      llvm::Value* hi = b_.getInt64(uint64_t(std::max<int64_t>(a.extent - 1, 0)));
      v = b_.CreateSelect(b_.CreateICmpSLT(raw, lo), lo, raw);
      v = b_.CreateSelect(b_.CreateICmpSGT(v, hi), hi, v);
      break;
    }
    case IndexAtom::Kind::FloorDiv:
    case IndexAtom::Kind::Mod: {
      llvm::Value* x = index(*a.arg);
      llvm::Value* d = b_.getInt64(uint64_t(a.divisor));
      bool nonneg = a.arg->range().first >= 0;
      if (a.kind == IndexAtom::Kind::FloorDiv) {
        if (nonneg) {
          v = b_.CreateUDiv(x, d);
        } else {
          llvm::Value* q = b_.CreateSDiv(x, d);
          llvm::Value* fix = b_.CreateICmpSLT(b_.CreateSRem(x, d), b_.getInt64(0));
          v = b_.CreateSub(q, b_.CreateZExt(fix, b_.getInt64Ty()));
        }
      } else {
        if (nonneg) {
          v = b_.CreateURem(x, d);
        } else {
          llvm::Value* r = b_.CreateSRem(x, d);
          llvm::Value* neg = b_.CreateICmpSLT(r, b_.getInt64(0));
          v = b_.CreateSelect(neg, b_.CreateAdd(r, d), r);
        }
      }
      break;
    }
    }
    acc = b_.CreateAdd(acc, c == 1 ? v : b_.CreateMul(v, b_.getInt64(uint64_t(c))));
  }
  return acc;
}

llvm::Value* Emitter::load(int buffer, const IndexExpr& ix, DType t) {
  auto rv = row_vals_.find(buffer);
  if (rv != row_vals_.end()) return rv->second;
  // Slot values exist once a stage has set up its chunks (begin_chunks); a stage that runs
  // before that (none set up yet) or after a row loop has ended (cleared) reads memory.
  if (slots_ && size_t(chunk_ * map_.vec + lane_) < inner_vals_.size()) {
    auto& iv = inner_vals_[size_t(chunk_ * map_.vec + lane_)];
    auto in = iv.find(buffer);
    if (in != iv.end() && ix == same_) return in->second;
    if (map_.vec > 1 && uses_r(ix)) {
      IndexExpr base = ix.substitute({{kRVar, IndexExpr(0)}});
      bool aligned =
          ix - base == IndexExpr::var(kRVar, k_.rnumel) && base.constant() % map_.vec == 0;
      for (auto& [a, c] : base.terms()) aligned = aligned && c % map_.vec == 0;
      if (aligned) return vector_load(buffer, ix, t);
    }
  }
  auto it = buf_ptr_.find(buffer);
  assert(it != buf_ptr_.end() && "kernel reads a buffer that is not an argument");
  llvm::Value* ptr = b_.CreateGEP(mem_type(t), it->second, index(ix));
  llvm::Value* v = b_.CreateLoad(mem_type(t), ptr);
  if (t == DType::Bool) return b_.CreateICmpNE(v, b_.getInt8(0));
  if (is_half(t)) return widen(v, t);
  return v;
}

void Emitter::store(int buffer, llvm::Value* offset, llvm::Value* v, DType t) {
  auto it = buf_ptr_.find(buffer);
  assert(it != buf_ptr_.end() && "kernel writes a buffer that is not an argument");
  if (t == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
  if (is_half(t)) v = narrow(v, t);
  b_.CreateStore(v, b_.CreateGEP(mem_type(t), it->second, offset));
}

llvm::Value* Emitter::widen(llvm::Value* v, DType t) {
  if (t != DType::BF16 || target_.caps().native_bf16_round)
    return b_.CreateFPExt(v, b_.getFloatTy());
  llvm::Value* u = b_.CreateZExt(v, b_.getInt32Ty()); // v: the i16 of mem_type
  return b_.CreateBitCast(b_.CreateShl(u, 16), b_.getFloatTy());
}

llvm::Value* Emitter::narrow(llvm::Value* v, DType t) {
  if (t != DType::BF16 || target_.caps().native_bf16_round) return b_.CreateFPCast(v, mem_type(t));
  if (v->getType()->isDoubleTy()) v = b_.CreateFPTrunc(v, b_.getFloatTy()); // c10: via float
  llvm::Value* u = b_.CreateBitCast(v, b_.getInt32Ty());
  llvm::Value* bias = b_.CreateAdd(b_.CreateAnd(b_.CreateLShr(u, 16), 1), b_.getInt32(0x7fff));
  llvm::Value* r = b_.CreateLShr(b_.CreateAdd(u, bias), 16);
  r = b_.CreateSelect(b_.CreateFCmpUNO(v, v), b_.getInt32(0x7fc0), r); // NaN: the quiet NaN
  return b_.CreateTrunc(r, b_.getInt16Ty());                           // mem_type's i16
}

llvm::Value* Emitter::cast(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* dt = reg_type(to);
  if (to == DType::Bool) {
    if (is_floating(from)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (is_floating(from) && is_floating(to)) {
    if (is_half(to)) {
      // Round to the narrow type, then keep computing in f32.
      return widen(narrow(v, to), to);
    }
    return b_.CreateFPCast(v, dt);
  }
  if (is_floating(from))
    return b_.CreateIntrinsic(is_unsigned(to) ? llvm::Intrinsic::fptoui_sat
                                              : llvm::Intrinsic::fptosi_sat,
                              {dt, v->getType()}, {v});
  if (is_floating(to)) {
    llvm::Value* f = is_unsigned(from) ? b_.CreateUIToFP(v, dt) : b_.CreateSIToFP(v, dt);
    return is_half(to) ? cast(f, DType::F32, to) : f;
  }
  return b_.CreateIntCast(v, dt, !is_unsigned(from));
}

llvm::Value* Emitter::unary(VOp op, llvm::Value* a, DType t) {
  bool fl = is_floating(t);
  llvm::Type* ty = reg_type(t);
  auto one = [&] { return llvm::ConstantFP::get(ty, 1.0); };
  if (!fl && op != VOp::Neg && op != VOp::Abs && op != VOp::Not && op != VOp::BitNot) {
    // Transcendental ops on integers compute in f32 (the lowering casts first; keep safe here).
    llvm::Value* f = cast(a, t, DType::F32);
    return cast(unary(op, f, DType::F32), DType::F32, t);
  }
  switch (op) {
  case VOp::Neg:
    return fl ? b_.CreateFNeg(a) : b_.CreateNeg(a);
  case VOp::Abs:
    if (fl) return intrinsic(llvm::Intrinsic::fabs, a);
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a, b_.getFalse());
  case VOp::Not:
    return b_.CreateNot(cast(a, t, DType::Bool));
  case VOp::Exp:
  case VOp::Log:
  case VOp::Tanh:
  case VOp::Erf:
  case VOp::Log1p:
  case VOp::Expm1:
  case VOp::Sin:
  case VOp::Cos:
  case VOp::Tan:
  case VOp::Asin:
  case VOp::Acos:
  case VOp::Atan:
  case VOp::Sinh:
  case VOp::Cosh:
  case VOp::Asinh:
  case VOp::Acosh:
  case VOp::Atanh:
  case VOp::Log2:
  case VOp::Log10:
    return math(op, a, t);
  case VOp::Sqrt:
    return intrinsic(llvm::Intrinsic::sqrt, a);
  case VOp::Rsqrt:
    if (t != DType::F64)
      if (llvm::Value* v = target_.approx_math(b_, m_, VOp::Rsqrt, {a}, is_half(t))) return v;
    return b_.CreateFDiv(one(), intrinsic(llvm::Intrinsic::sqrt, a));
  case VOp::Reciprocal:
    return b_.CreateFDiv(one(), a);
  case VOp::Sigmoid:
    return b_.CreateFDiv(one(), b_.CreateFAdd(one(), math(VOp::Exp, b_.CreateFNeg(a), t)));
  case VOp::Floor:
    return intrinsic(llvm::Intrinsic::floor, a);
  case VOp::Ceil:
    return intrinsic(llvm::Intrinsic::ceil, a);
  case VOp::Round:
    return intrinsic(llvm::Intrinsic::roundeven, a);
  case VOp::Trunc:
    return intrinsic(llvm::Intrinsic::trunc, a);
  case VOp::BitNot:
    return b_.CreateNot(a);
  default:
    break;
  }
  assert(false && "not a unary op");
  return a;
}

llvm::Function* Emitter::scalar_fn(ScalarFn f, DType t) {
  const bool f64 = t == DType::F64;
  const std::string name = "fxc_" + std::string(scalar_fn_name(f)) + (f64 ? "_f64" : "_f32");
  if (llvm::Function* fn = m_.getFunction(name)) return fn;
  llvm::Type* ty = f64 ? b_.getDoubleTy() : b_.getFloatTy();
  const int arity = scalar_fn_arity(f);
  auto* fty = llvm::FunctionType::get(ty, std::vector<llvm::Type*>(size_t(arity), ty), false);
  auto* fn = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name, m_);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> hb(llvm::BasicBlock::Create(ctx_, "entry", fn));
  llv::Ctx c{&hb, &m_, &target_, ty, f64};
  llv::Ctx* saved = llv::g_ctx;
  llv::g_ctx = &c;
  std::vector<llv::LV> args;
  for (int i = 0; i < arity; ++i) args.emplace_back(fn->getArg(unsigned(i)));
  llv::LV r = special::eval_scalar_fn(f, args.data());
  hb.CreateRet(r.v);
  llv::g_ctx = saved;
  return fn;
}

llvm::Value* Emitter::int_division(VOp op, llvm::Value* a, llvm::Value* c, bool un) {
  llvm::Type* ty = a->getType();
  llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
  llvm::Value* one = llvm::ConstantInt::get(ty, 1);
  llvm::Value* isz = b_.CreateICmpEQ(c, zero);
  llvm::Value* neg1 = un ? b_.getFalse() : b_.CreateICmpEQ(c, llvm::ConstantInt::getSigned(ty, -1));
  llvm::Value* safe = b_.CreateSelect(b_.CreateOr(isz, neg1), one, c);
  llvm::Value* r;
  if (op == VOp::FloorDivide || op == VOp::TruncDivide) {
    r = un ? b_.CreateUDiv(a, safe) : b_.CreateSDiv(a, safe);
    if (!un && op == VOp::FloorDivide) {
      llvm::Value* rem = b_.CreateSRem(a, safe);
      llvm::Value* adj =
          b_.CreateAnd(b_.CreateICmpNE(rem, zero),
                       b_.CreateICmpNE(b_.CreateICmpSLT(rem, zero), b_.CreateICmpSLT(safe, zero)));
      r = b_.CreateSub(r, b_.CreateZExt(adj, ty));
    }
    if (!un) r = b_.CreateSelect(neg1, b_.CreateNeg(a), r); // a / -1 wraps like negation
  } else {
    // a % -1 is 0, which a % 1 gives.
    r = un ? b_.CreateURem(a, safe) : b_.CreateSRem(a, safe);
    if (op == VOp::Remainder && !un) {
      llvm::Value* adj =
          b_.CreateAnd(b_.CreateICmpNE(r, zero),
                       b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(safe, zero)));
      r = b_.CreateSelect(adj, b_.CreateAdd(r, safe), r);
    }
  }
  return b_.CreateSelect(isz, zero, r);
}

llvm::Value* Emitter::floor_divide_float(llvm::Value* a, llvm::Value* c) {
  llvm::Type* ty = a->getType();
  auto k = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  llvm::Value* q = b_.CreateFDiv(a, c);
  llvm::Value* mod = b_.CreateFRem(a, c);
  llvm::Value* div = b_.CreateFDiv(b_.CreateFSub(a, mod), c);
  llvm::Value* adj =
      b_.CreateAnd(b_.CreateFCmpUNE(mod, k(0)),
                   b_.CreateICmpNE(b_.CreateFCmpOLT(c, k(0)), b_.CreateFCmpOLT(mod, k(0))));
  div = b_.CreateSelect(adj, b_.CreateFSub(div, k(1)), div);
  llvm::Value* fl = intrinsic(llvm::Intrinsic::floor, div);
  fl = b_.CreateSelect(b_.CreateFCmpOGT(b_.CreateFSub(div, fl), k(0.5)), b_.CreateFAdd(fl, k(1)),
                       fl);
  llvm::Value* signed_zero = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, k(0), q);
  llvm::Value* r = b_.CreateSelect(b_.CreateFCmpUNE(div, k(0)), fl, signed_zero);
  return b_.CreateSelect(b_.CreateFCmpOEQ(c, k(0)), q, r);
}

llvm::Value* Emitter::binary(VOp op, llvm::Value* a, llvm::Value* c, DType t) {
  bool fl = is_floating(t), un = is_unsigned(t);
  if (t == DType::Bool) {
    switch (op) {
    case VOp::Add:
    case VOp::Max:
    case VOp::Or:
      return b_.CreateOr(a, c);
    case VOp::Mul:
    case VOp::Min:
    case VOp::And:
      return b_.CreateAnd(a, c);
    case VOp::Sub:
    case VOp::Ne:
      return b_.CreateXor(a, c);
    case VOp::Eq:
      return b_.CreateNot(b_.CreateXor(a, c));
    default:
      break;
    }
  }
  switch (op) {
  case VOp::Add:
    return fl ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
  case VOp::Sub:
    return fl ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
  case VOp::Mul:
    return fl ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
  case VOp::Div:
    if (fl) return b_.CreateFDiv(a, c);
    return cast(b_.CreateFDiv(cast(a, t, DType::F64), cast(c, t, DType::F64)), DType::F64, t);
  case VOp::FloorDivide:
    if (fl) return floor_divide_float(a, c);
    return int_division(op, a, c, un);
  case VOp::TruncDivide:
    if (fl) return intrinsic(llvm::Intrinsic::trunc, b_.CreateFDiv(a, c));
    return int_division(op, a, c, un);
  case VOp::Fmod:
  case VOp::Remainder: {
    if (fl) {
      llvm::Value* r = b_.CreateFRem(a, c);
      if (op == VOp::Fmod) return r;
      llvm::Value* zero = llvm::ConstantFP::get(a->getType(), 0.0);
      llvm::Value* nonzero = b_.CreateFCmpUNE(r, zero);
      llvm::Value* neg_r = b_.CreateFCmpOLT(r, zero);
      llvm::Value* neg_divisor = b_.CreateFCmpOLT(c, zero);
      llvm::Value* adj = b_.CreateAnd(nonzero, b_.CreateICmpNE(neg_r, neg_divisor));
      return b_.CreateSelect(adj, b_.CreateFAdd(r, c), r);
    }
    return int_division(op, a, c, un);
  }
  case VOp::BitAnd:
    return b_.CreateAnd(a, c);
  case VOp::BitOr:
    return b_.CreateOr(a, c);
  case VOp::BitXor:
    return b_.CreateXor(a, c);
  case VOp::Shl:
  case VOp::Shr: {
    // PyTorch's shift loops: an amount that is negative (as the signed type) or at least the
    // width gives 0 (left) or the sign fill (right); the amount is clamped so LLVM never sees
    // an out-of-range shift.
    llvm::Type* ty = a->getType();
    const unsigned bits = ty->getIntegerBitWidth();
    if (op == VOp::Shl) {
      llvm::Value* oob = b_.CreateICmpUGE(c, llvm::ConstantInt::get(ty, bits));
      llvm::Value* amt = b_.CreateSelect(oob, llvm::ConstantInt::get(ty, 0), c);
      return b_.CreateSelect(oob, llvm::ConstantInt::get(ty, 0), b_.CreateShl(a, amt));
    }
    const unsigned max_shift = un ? bits : bits - 1;
    llvm::Value* oob = b_.CreateICmpUGE(c, llvm::ConstantInt::get(ty, max_shift));
    if (un) {
      llvm::Value* amt = b_.CreateSelect(oob, llvm::ConstantInt::get(ty, 0), c);
      return b_.CreateSelect(oob, llvm::ConstantInt::get(ty, 0), b_.CreateLShr(a, amt));
    }
    llvm::Value* amt = b_.CreateSelect(oob, llvm::ConstantInt::get(ty, max_shift), c);
    return b_.CreateAShr(a, amt);
  }
  case VOp::Atan2:
    return math(VOp::Atan2, a, t, c);
  case VOp::Pow: {
    if (!fl)
      return cast(binary(op, cast(a, t, DType::F64), cast(c, t, DType::F64), DType::F64),
                  DType::F64, t);
    if (auto* k = llvm::dyn_cast<llvm::ConstantFP>(c)) {
      double e = k->getValueAPF().convertToDouble();
      if (e == 1.0) return a;
      if (e == 2.0) return b_.CreateFMul(a, a);
      if (e == 3.0) return b_.CreateFMul(b_.CreateFMul(a, a), a);
      if (e == 0.5) return intrinsic(llvm::Intrinsic::sqrt, a);
      if (e == -1.0) return b_.CreateFDiv(llvm::ConstantFP::get(a->getType(), 1.0), a);
    }
    return math(VOp::Pow, a, t, c);
  }
  case VOp::Max:
  case VOp::Min: {
    bool mx = op == VOp::Max;
    if (!fl)
      return b_.CreateBinaryIntrinsic(mx ? (un ? llvm::Intrinsic::umax : llvm::Intrinsic::smax)
                                         : (un ? llvm::Intrinsic::umin : llvm::Intrinsic::smin),
                                      a, c);
    // NaN propagates, as in PyTorch; llvm.maximum/minimum reductions vectorize.
    return b_.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, a, c);
  }
  case VOp::Eq:
    return fl ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
  case VOp::Ne:
    return fl ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
  case VOp::Lt:
    return fl ? b_.CreateFCmpOLT(a, c) : un ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c);
  case VOp::Le:
    return fl ? b_.CreateFCmpOLE(a, c) : un ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c);
  case VOp::Gt:
    return fl ? b_.CreateFCmpOGT(a, c) : un ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c);
  case VOp::Ge:
    return fl ? b_.CreateFCmpOGE(a, c) : un ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c);
  case VOp::And:
    return b_.CreateAnd(cast(a, t, DType::Bool), cast(c, t, DType::Bool));
  case VOp::Or:
    return b_.CreateOr(cast(a, t, DType::Bool), cast(c, t, DType::Bool));
  default:
    break;
  }
  assert(false && "not a binary op");
  return a;
}

const VPtr* Emitter::gelu_arg(const VExpr& e) {
  auto is_const = [](const VPtr& v, double c) {
    return v->op == VOp::Const && std::fabs(v->fval - c) <= 1e-7 * c;
  };
  // The operand of `v` = op(x, k) or op(k, x) that is not the constant k, or nullptr.
  auto other = [&](const VPtr& v, VOp op, double k) -> const VPtr* {
    if (v->op != op || v->args.size() != 2) return nullptr;
    if (is_const(v->args[1], k)) return &v->args[0];
    if (is_const(v->args[0], k)) return &v->args[1];
    return nullptr;
  };
  if (e.op != VOp::Mul || e.args.size() != 2) return nullptr;
  for (int h = 0; h < 2; ++h) {
    const VPtr* y = other(e.args[size_t(h)], VOp::Mul, 0.5);
    const VPtr* erf = other(e.args[size_t(1 - h)], VOp::Add, 1.0);
    if (!y || !erf || (*erf)->op != VOp::Erf) continue;
    const VPtr* y2 = other((*erf)->args[0], VOp::Mul, M_SQRT1_2);
    if (y2 && structural_id(y2->get()) == structural_id(y->get())) return y;
  }
  return nullptr;
}

llvm::Value* Emitter::scale_row_difference(const VExpr& e) {
  if (!slots_ || e.op != VOp::Mul || e.args.size() != 2) return nullptr;
  auto per_row = [&](const VPtr& v) { return !depends_on_r_[size_t(structural_id(v.get()))]; };
  for (int h = 0; h < 2; ++h) {
    const VPtr& d = e.args[size_t(h)];
    const VPtr& r = e.args[size_t(1 - h)];
    if (d->op != VOp::Sub || !per_row(r) || per_row(d->args[0]) || !per_row(d->args[1])) continue;
    llvm::Value* rv = value(r);
    llvm::Value* mr = b_.CreateFNeg(b_.CreateFMul(value(d->args[1]), rv)); // once per row (CSE)
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()}, {value(d->args[0]), rv, mr});
  }
  return nullptr;
}

llvm::Value* Emitter::value(const VPtr& e) {
  std::map<int, llvm::Value*>* smemo = nullptr;
  int id = -1;
  if (slots_) {
    id = structural_id(e.get());
    smemo = depends_on_r_[size_t(id)] ? &slot_memo_[size_t(chunk_ * map_.vec + lane_)] : &row_memo_;
    auto it = smemo->find(id);
    if (it != smemo->end()) return it->second;
  } else {
    auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second;
  }
  llvm::Value* v = nullptr;
  switch (e->op) {
  case VOp::Const:
    v = constant(e->fval, e->ival, e->dtype);
    break;
  case VOp::Load:
    v = load(e->buffer, e->index, e->dtype);
    break;
  case VOp::Index:
    v = cast(index(e->index), DType::I64, e->dtype);
    break;
  case VOp::Cast:
    v = cast(value(e->args[0]), e->args[0]->dtype, e->dtype);
    break;
  case VOp::Where:
    v = b_.CreateSelect(value(e->args[0]), value(e->args[1]), value(e->args[2]));
    break;
  case VOp::Call: {
    std::vector<llvm::Value*> args;
    for (const VPtr& a : e->args) args.push_back(value(a));
    v = b_.CreateCall(scalar_fn(ScalarFn(e->ival), e->dtype), args);
    break;
  }
  case VOp::Div:
    // Along a row, dividing by a per-row value multiplies by its reciprocal, computed once
    // (within 1.5 f32 ulps of the quotient; softmax's normalization).
    if (slots_ && is_floating(e->dtype) && e->dtype != DType::F64 &&
        !depends_on_r_[size_t(structural_id(e->args[1].get()))]) {
      int key = -2 - structural_id(e->args[1].get());
      auto rit = row_memo_.find(key);
      llvm::Value* inv = nullptr;
      if (rit != row_memo_.end()) {
        inv = rit->second;
      } else {
        inv = b_.CreateFDiv(llvm::ConstantFP::get(b_.getFloatTy(), 1.0), value(e->args[1]));
        row_memo_[key] = inv;
      }
      v = b_.CreateFMul(value(e->args[0]), inv);
      break;
    }
    v = binary(e->op, value(e->args[0]), value(e->args[1]), e->args[0]->dtype);
    break;
  case VOp::Mul:
    if (is_half(e->dtype)) {
      if (const VPtr* y = gelu_arg(*e))
        if ((v = target_.approx_gelu(b_, value(*y)))) break;
      if ((v = scale_row_difference(*e))) break;
    }
    v = binary(e->op, value(e->args[0]), value(e->args[1]), e->args[0]->dtype);
    break;
  default:
    if (vop_is_unary(e->op)) {
      v = unary(e->op, value(e->args[0]), e->args[0]->dtype);
    } else {
      v = binary(e->op, value(e->args[0]), value(e->args[1]), e->args[0]->dtype);
    }
  }
  if (smemo)
    (*smemo)[id] = v;
  else
    memo_[e.get()] = v;
  return v;
}

llvm::Value* Emitter::reduce_init(ReduceOp op, DType t) {
  bool fl = is_floating(t);
  switch (op) {
  case ReduceOp::Sum:
    return constant(0, 0, t);
  case ReduceOp::Prod:
    return constant(1, 1, t);
  case ReduceOp::Any:
    return b_.getFalse();
  case ReduceOp::Max:
  case ReduceOp::ArgMax:
    if (fl) return constant(-std::numeric_limits<double>::infinity(), 0, t);
    if (t == DType::Bool) return b_.getFalse();
    return llvm::ConstantInt::get(
        reg_type(t), llvm::APInt::getSignedMinValue(reg_type(t)->getIntegerBitWidth()));
  case ReduceOp::Min:
  case ReduceOp::ArgMin:
    if (fl) return constant(std::numeric_limits<double>::infinity(), 0, t);
    if (t == DType::Bool) return b_.getTrue();
    return llvm::ConstantInt::get(
        reg_type(t), llvm::APInt::getSignedMaxValue(reg_type(t)->getIntegerBitWidth()));
  }
  return nullptr;
}

llvm::Value* Emitter::accumulate(const Buffer& buf, llvm::Value* a, llvm::Value* v, llvm::Value* r,
                                 llvm::Value* first, llvm::AllocaInst* argslot, llvm::Value* ok) {
  DType vt = buf.body->dtype;
  llvm::Value* n = nullptr;
  bool fl = is_floating(vt);
  switch (buf.reduce) {
  case ReduceOp::Sum:
    if (fl) {
      llvm::FastMathFlags fm;
      fm.setAllowReassoc();
      n = b_.CreateFAdd(a, v);
      if (auto* inst = llvm::dyn_cast<llvm::Instruction>(n)) inst->setFastMathFlags(fm);
    } else {
      n = binary(VOp::Add, a, v, vt);
    }
    break;
  case ReduceOp::Prod:
    n = binary(VOp::Mul, a, v, vt);
    break;
  case ReduceOp::Max:
    n = binary(VOp::Max, a, v, vt);
    break;
  case ReduceOp::Min:
    n = binary(VOp::Min, a, v, vt);
    break;
  case ReduceOp::Any:
    n = b_.CreateOr(a, cast(v, vt, DType::Bool));
    break;
  case ReduceOp::ArgMax:
  case ReduceOp::ArgMin: {
    bool mx = buf.reduce == ReduceOp::ArgMax;
    llvm::Value* better = fl ? (mx ? b_.CreateFCmpOGT(v, a) : b_.CreateFCmpOLT(v, a))
                             : binary(mx ? VOp::Gt : VOp::Lt, v, a, vt);
    if (fl)
      better = b_.CreateOr(better, b_.CreateAnd(b_.CreateFCmpUNO(v, v), b_.CreateFCmpORD(a, a)));
    if (first) better = b_.CreateOr(better, first);
    if (ok) better = b_.CreateAnd(better, ok);
    n = b_.CreateSelect(better, v, a);
    llvm::Value* oi = b_.CreateLoad(b_.getInt64Ty(), argslot);
    b_.CreateStore(b_.CreateSelect(better, r, oi), argslot);
    return n;
  }
  }
  return ok ? b_.CreateSelect(ok, n, a) : n;
}

int Emitter::structural_id(const VExpr* e) {
  auto it = structural_ids_.find(e);
  if (it != structural_ids_.end()) return it->second;
  uint64_t fbits = 0;
  std::memcpy(&fbits, &e->fval, sizeof fbits);
  std::string key = std::to_string(int(e->op)) + ':' + std::to_string(int(e->dtype)) + ':' +
                    std::to_string(fbits) + ':' + std::to_string(e->ival) + ':' +
                    std::to_string(e->buffer);
  bool rdep = false;
  for (const VPtr& a : e->args) {
    int c = structural_id(a.get());
    key += ',' + std::to_string(c);
    rdep = rdep || depends_on_r_[size_t(c)];
  }
  if (e->op == VOp::Load || e->op == VOp::Index) {
    key += '|' + e->index.str();
    rdep = rdep || uses_r(e->index);
  }
  auto [t, fresh] = sid_table_.emplace(key, int(depends_on_r_.size()));
  if (fresh) depends_on_r_.push_back(rdep);
  structural_ids_[e] = t->second;
  return t->second;
}

void Emitter::find_guarded_loads() {
  // Each load's uses, walked from the member bodies: inside a where()'s false branch with a
  // condition that reads no memory, or not. Only floating-point values are guarded: the zeros
  // a skipped vector leaves may reach any arithmetic of the discarded branch, which for floats
  // at worst makes an inf or a NaN nobody reads (an integer division by zero would be UB).
  std::function<void(const VPtr&, const VPtr&)> walk = [&](const VPtr& e, const VPtr& guard) {
    if (e->op == VOp::Load) {
      std::string key = vector_key(e->buffer, e->index);
      auto [it, fresh] = guard_of_.emplace(key, is_floating(e->dtype) ? guard : nullptr);
      if (!fresh && it->second &&
          (!guard || structural_id(it->second.get()) != structural_id(guard.get())))
        it->second = nullptr;
    }
    for_each_indirect(e->index, [&](const VPtr& v) { walk(v, nullptr); });
    if (e->op == VOp::Where && !reads_memory(e->args[0])) {
      walk(e->args[0], nullptr);
      walk(e->args[1], guard);
      walk(e->args[2], e->args[0]);
      return;
    }
    for (const VPtr& a : e->args) walk(a, guard);
  };
  for (const auto& [buffer, body] : bodies_) walk(body, nullptr);
}

void Emitter::set_slot(int chunk, int lane) {
  chunk_ = chunk;
  lane_ = lane;
  r_ = lane == 0
           ? chunk_r0_[size_t(chunk)]
           : b_.CreateAdd(chunk_r0_[size_t(chunk)], b_.getInt64(uint64_t(lane)), "", true, true);
}

llvm::Value* Emitter::vector_load(int buffer, const IndexExpr& ix, DType t) {
  auto& cache = vec_loads_[size_t(chunk_)];
  std::string key = vector_key(buffer, ix);
  auto it = cache.find(key);
  llvm::Value* vv = nullptr;
  if (it != cache.end()) {
    vv = it->second;
  } else {
    auto pit = buf_ptr_.find(buffer);
    assert(pit != buf_ptr_.end() && "kernel reads a buffer that is not an argument");
    llvm::Type* et = mem_type(t);
    uint64_t bytes = m_.getDataLayout().getTypeAllocSize(et) * uint64_t(map_.vec);
    auto* vt = llvm::FixedVectorType::get(et, unsigned(map_.vec));
    llvm::Value *saved_r = r_, *saved_x = x_;
    r_ = chunk_r0_[size_t(chunk_)];
    auto load_at = [&](llvm::Value* x) {
      x_ = x;
      return b_.CreateAlignedLoad(vt, b_.CreateGEP(et, pit->second, index(ix)), llvm::Align(bytes));
    };
    // A guarded vector no lane uses is not loaded (zeros instead): the masked half of a
    // causal attention's scores.
    llvm::BasicBlock *guard_pre = nullptr, *guard_join = nullptr;
    auto guard = guard_of_.find(key);
    if (guard != guard_of_.end() && guard->second && !pipelined_) {
      int lane = lane_;
      llvm::Value* unused = nullptr;
      for (int l = 0; l < map_.vec; ++l) {
        set_slot(chunk_, l);
        llvm::Value* c = value(guard->second);
        unused = unused ? b_.CreateAnd(unused, c) : c;
      }
      lane_ = lane;
      r_ = chunk_r0_[size_t(chunk_)];
      // The values an index reads through (its indirect atoms, themselves loads) are memoized
      // for the rest of the row: compute them here, where they dominate the guarded load and
      // every later use, not inside the block that only runs when a lane needs the vector.
      x_ = saved_x;
      (void)index(ix);
      guard_pre = b_.GetInsertBlock();
      llvm::BasicBlock* needed = llvm::BasicBlock::Create(ctx_, "guard.load", fn_);
      guard_join = llvm::BasicBlock::Create(ctx_, "guard.join", fn_);
      b_.CreateCondBr(unused, guard_join, needed);
      b_.SetInsertPoint(needed);
    }
    bool on_x = false;
    if (pipelined_ && affine_in(ix, kXVar, &on_x) && on_x) {
      llvm::IRBuilderBase::InsertPoint ip = b_.saveIP();
      b_.SetInsertPoint(prologue_->getTerminator());
      llvm::Value* first = load_at(entry_.xbegin);
      // The next row's loads go through the buffer's global address as the target computes
      // it (an opaque value): not provably read-only, they are not ld.global.nc, which ptxas
      // sinks past barriers to the current row's last use of the registers they reuse.
      llvm::Value* arg = pit->second;
      pit->second = global_base(buffer);
      b_.SetInsertPoint(prefetch_->getTerminator());
      llvm::Value* next = load_at(xnext_);
      pit->second = arg;
      b_.restoreIP(ip);
      llvm::IRBuilder<> hb(head_, head_->begin());
      llvm::PHINode* cur = hb.CreatePHI(vt, 2, "row.vec");
      cur->addIncoming(first, prologue_);
      llvm::IRBuilder<> rb(row_, row_->begin());
      llvm::PHINode* merged = rb.CreatePHI(vt, 2, "next.vec");
      merged->addIncoming(next, prefetch_);
      merged->addIncoming(llvm::PoisonValue::get(vt), body_);
      next_loads_.push_back({cur, merged});
      vv = cur;
    } else if (streams_ && bytes == 16 && affine_in(ix, kXVar, &on_x) && on_x &&
               read_only_.count(buffer)) {
      // A row streaming through a kernel of a row per block: the target's streaming load, and
      // the same vector kPrefetchBytes of rows ahead asked into L2 (blocks start in row order,
      // so that row's block starts about when it has arrived).
      streamed_.insert(buffer);
      llvm::Value* base = global_base(buffer);
      x_ = saved_x;
      llvm::Value* ptr = b_.CreateGEP(et, base, index(ix));
      vv = target_.streaming_load(b_, vt, ptr);
      if (!vv) vv = b_.CreateAlignedLoad(vt, ptr, llvm::Align(bytes));
      int64_t row_bytes = k_.rnumel * int64_t(m_.getDataLayout().getTypeAllocSize(et));
      int64_t ahead = std::max<int64_t>(1, kPrefetchBytes / std::max<int64_t>(1, row_bytes));
      x_ = b_.CreateAdd(saved_x, b_.getInt64(uint64_t(ahead)), "x.ahead", true, true);
      target_.prefetch(b_, b_.CreateGEP(et, base, index(ix)), b_.CreateICmpSLT(x_, entry_.xnumel));
    } else {
      vv = load_at(saved_x);
    }
    if (guard_join) {
      llvm::BasicBlock* loaded = b_.GetInsertBlock();
      b_.CreateBr(guard_join);
      b_.SetInsertPoint(guard_join);
      llvm::PHINode* phi = b_.CreatePHI(vt, 2, "guarded");
      phi->addIncoming(vv, loaded);
      phi->addIncoming(llvm::Constant::getNullValue(vt), guard_pre);
      vv = phi;
    }
    r_ = saved_r;
    x_ = saved_x;
    cache[key] = vv;
  }
  if (t == DType::BF16 && map_.vec % 2 == 0) {
    // bf16 is the upper half of an f32: a shift or a mask of the 32-bit pair (the conversion
    // of the upper half would first move it down).
    auto* pairs = llvm::FixedVectorType::get(b_.getInt32Ty(), unsigned(map_.vec / 2));
    llvm::Value* w = b_.CreateExtractElement(b_.CreateBitCast(vv, pairs), uint64_t(lane_ / 2));
    w = lane_ % 2 == 0 ? b_.CreateShl(w, 16) : b_.CreateAnd(w, b_.getInt32(0xffff0000u));
    return b_.CreateBitCast(w, b_.getFloatTy());
  }
  llvm::Value* v = b_.CreateExtractElement(vv, uint64_t(lane_));
  if (t == DType::Bool) return b_.CreateICmpNE(v, b_.getInt8(0));
  if (is_half(t)) return widen(v, t);
  return v;
}

llvm::Value* Emitter::global_base(int buffer) {
  llvm::Value*& base = global_base_[buffer];
  if (!base) {
    llvm::Value* arg = buf_ptr_.at(buffer);
    llvm::IRBuilder<> eb(fn_->getEntryBlock().getTerminator());
    base = target_.opaque_global(eb, arg);
    if (!base) base = arg;
  }
  return base;
}

void Emitter::vector_store(int buffer, const std::vector<llvm::Value*>& lanes, DType t, int chunk) {
  auto it = buf_ptr_.find(buffer);
  assert(it != buf_ptr_.end() && "kernel writes a buffer that is not an argument");
  llvm::Type* et = mem_type(t);
  auto* vt = llvm::FixedVectorType::get(et, unsigned(lanes.size()));
  llvm::Value* vec = llvm::PoisonValue::get(vt);
  llvm::Value* packed = is_half(t) ? target_.pack_half(b_, lanes, t == DType::BF16) : nullptr;
  if (packed) {
    vec = b_.CreateBitCast(packed, vt);
  } else {
    for (size_t l = 0; l < lanes.size(); ++l) {
      llvm::Value* v = lanes[l];
      if (t == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
      if (is_half(t)) v = narrow(v, t);
      vec = b_.CreateInsertElement(vec, v, uint64_t(l));
    }
  }
  llvm::Value* off =
      b_.CreateAdd(b_.CreateMul(x_, b_.getInt64(uint64_t(k_.rnumel))), chunk_r0_[size_t(chunk)]);
  uint64_t bytes = m_.getDataLayout().getTypeAllocSize(et) * uint64_t(lanes.size());
  llvm::Value* ok = chunk_ok_[size_t(chunk)];
  llvm::BasicBlock* cont = nullptr;
  if (ok) {
    llvm::BasicBlock* put = llvm::BasicBlock::Create(ctx_, "st.chunk", fn_);
    cont = llvm::BasicBlock::Create(ctx_, "st.cont", fn_);
    b_.CreateCondBr(ok, put, cont);
    b_.SetInsertPoint(put);
  }
  b_.CreateAlignedStore(vec, b_.CreateGEP(et, it->second, off), llvm::Align(bytes));
  if (ok) {
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
  }
}

void Emitter::clear_slot_values() {
  size_t slots = chunk_r0_.size() * size_t(map_.vec);
  slot_memo_.assign(slots, {});
  inner_vals_.assign(slots, {});
  vec_loads_.assign(chunk_r0_.size(), {});
  row_memo_.clear();
}

void Emitter::begin_chunks(const std::vector<llvm::Value*>& r0s, int64_t covered) {
  chunk_r0_.clear();
  chunk_ok_.clear();
  int64_t per_chunk = covered / int64_t(r0s.size());
  for (size_t j = 0; j < r0s.size(); ++j) {
    llvm::Value* r0 = r0s[j];
    llvm::Value* ok = nullptr;
    // Chunks that may run past the row read its last vector instead and are masked.
    if (int64_t(j + 1) * per_chunk > k_.rnumel) {
      ok = b_.CreateICmpSLT(r0, b_.getInt64(uint64_t(k_.rnumel)));
      r0 = b_.CreateSelect(ok, r0, b_.getInt64(uint64_t(k_.rnumel - map_.vec)));
    }
    chunk_r0_.push_back(r0);
    chunk_ok_.push_back(ok);
  }
  clear_slot_values();
}

void Emitter::emit_slot_stage(const KernelStage& st) {
  llvm::IntegerType* i64 = b_.getInt64Ty();
  int vec = map_.vec;
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  // One accumulator per lane (independent chains), folded together after the row; arg
  // reductions keep one, so that ties resolve to the first index.
  std::map<int, std::vector<llvm::AllocaInst*>> acc;
  std::map<int, llvm::AllocaInst*> arg;
  for (int mi : st.members) {
    const KernelMember& m = k_.members[mi];
    const Buffer& buf = p_.buffers[m.buffer];
    if (m.role != MemberRole::Reduce) continue;
    DType vt = buf.body->dtype;
    bool is_arg = buf.reduce == ReduceOp::ArgMax || buf.reduce == ReduceOp::ArgMin;
    // Float sums start from -0.0, which the first addition folds away (+0.0 is added once
    // at the end instead, so that an empty or all -0.0 sum is still +0.0).
    llvm::Value* init = buf.reduce == ReduceOp::Sum && is_floating(vt)
                            ? llvm::ConstantFP::getNegativeZero(reg_type(vt))
                            : reduce_init(buf.reduce, vt);
    for (int l = 0; l < (is_arg ? 1 : vec); ++l) {
      acc[m.buffer].push_back(eb.CreateAlloca(reg_type(vt)));
      b_.CreateStore(init, acc[m.buffer].back());
    }
    if (is_arg) {
      arg[m.buffer] = eb.CreateAlloca(i64);
      b_.CreateStore(b_.getInt64(0), arg[m.buffer]);
    }
  }
  llvm::BasicBlock *head = nullptr, *exit = nullptr;
  llvm::PHINode* r0 = nullptr;
  llvm::Value* start = nullptr;
  if (!map_.persistent) {
    // for (r0 = tid * vec; r0 < rnumel; r0 += ntid * vec): one vector per thread and step.
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    start = b_.CreateMul(entry_.rstart, b_.getInt64(uint64_t(vec)));
    head = llvm::BasicBlock::Create(ctx_, "r.head", fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "r.body", fn_);
    exit = llvm::BasicBlock::Create(ctx_, "r.exit", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    r0 = b_.CreatePHI(i64, 2, "r0");
    r0->addIncoming(start, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(r0, b_.getInt64(uint64_t(k_.rnumel))), body, exit);
    b_.SetInsertPoint(body);
    begin_chunks({r0}, k_.rnumel);
  }
  int chunks = int(chunk_r0_.size());
  for (int mi : st.members) {
    const KernelMember& m = k_.members[mi];
    const Buffer& buf = p_.buffers[m.buffer];
    if (m.role == MemberRole::Inner) {
      for (int j = 0; j < chunks; ++j) {
        std::vector<llvm::Value*> lanes;
        for (int l = 0; l < vec; ++l) {
          set_slot(j, l);
          llvm::Value* v = value(bodies_[m.buffer]);
          inner_vals_[size_t(j * vec + l)][m.buffer] = v;
          lanes.push_back(v);
        }
        if (m.store) vector_store(m.buffer, lanes, buf.dtype, j);
      }
      continue;
    }
    DType vt = buf.body->dtype;
    bool is_arg = arg.count(m.buffer) > 0;
    for (int j = 0; j < chunks; ++j)
      for (int l = 0; l < vec; ++l) {
        set_slot(j, l);
        llvm::Value* v = value(bodies_[m.buffer]);
        llvm::AllocaInst* slot = acc[m.buffer][is_arg ? 0 : size_t(l)];
        llvm::Value* a = b_.CreateLoad(reg_type(vt), slot);
        llvm::Value* first = nullptr;
        if (is_arg && j == 0 && l == 0)
          first = map_.persistent ? b_.getTrue() : b_.CreateICmpEQ(r0, start);
        llvm::Value* n = accumulate(buf, a, v, r_, first, is_arg ? arg[m.buffer] : nullptr,
                                    chunk_ok_[size_t(j)]);
        b_.CreateStore(n, slot);
      }
  }
  r_ = nullptr;
  if (!map_.persistent) {
    llvm::Value* next = b_.CreateAdd(r0, b_.CreateMul(entry_.rstep, b_.getInt64(uint64_t(vec))),
                                     "r0.next", true, true);
    r0->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    chunk_r0_.clear();
    chunk_ok_.clear();
    clear_slot_values();
  }
  for (int mi : st.members) {
    const KernelMember& m = k_.members[mi];
    if (m.role != MemberRole::Reduce) continue;
    const Buffer& buf = p_.buffers[m.buffer];
    DType vt = buf.body->dtype;
    std::vector<llvm::Value*> part;
    for (llvm::AllocaInst* slot : acc[m.buffer]) part.push_back(b_.CreateLoad(reg_type(vt), slot));
    for (size_t w = 1; w < part.size(); w *= 2)
      for (size_t l = 0; l + w < part.size(); l += 2 * w)
        part[l] = buf.reduce == ReduceOp::Any
                      ? b_.CreateOr(part[l], part[l + w])
                      : accumulate(buf, part[l], part[l + w], nullptr, nullptr, nullptr, nullptr);
    llvm::Value* a = part[0];
    if (buf.reduce == ReduceOp::Sum && is_floating(vt))
      a = b_.CreateFAdd(a, llvm::ConstantFP::get(reg_type(vt), 0.0));
    llvm::Value* idx = arg.count(m.buffer) ? b_.CreateLoad(i64, arg[m.buffer]) : nullptr;
    combine_and_finish(m, a, idx);
  }
}

llvm::Value* Emitter::thread_partial(const Buffer& buf, const VPtr& body) {
  assert(
      (buf.reduce == ReduceOp::Sum || buf.reduce == ReduceOp::Max || buf.reduce == ReduceOp::Min) &&
      "a value reduction");
  DType vt = buf.body->dtype;
  bool fsum = buf.reduce == ReduceOp::Sum && is_floating(vt);
  llvm::Value* init =
      fsum ? llvm::ConstantFP::getNegativeZero(reg_type(vt)) : reduce_init(buf.reduce, vt);
  std::vector<llvm::Value*> part(size_t(map_.vec), init);
  for (size_t j = 0; j < chunk_r0_.size(); ++j)
    for (int l = 0; l < map_.vec; ++l) {
      set_slot(int(j), l);
      part[size_t(l)] =
          accumulate(buf, part[size_t(l)], value(body), r_, nullptr, nullptr, chunk_ok_[j]);
    }
  r_ = nullptr;
  for (size_t w = 1; w < part.size(); w *= 2)
    for (size_t l = 0; l + w < part.size(); l += 2 * w)
      part[l] = accumulate(buf, part[l], part[l + w], nullptr, nullptr, nullptr, nullptr);
  return fsum ? b_.CreateFAdd(part[0], llvm::ConstantFP::get(reg_type(vt), 0.0)) : part[0];
}

void Emitter::combine_and_finish(const KernelMember& m, llvm::Value* a, llvm::Value* idx) {
  // One thread owns each row (block 0): its partial result is the row's.
  if (map_.block > 0) {
    a = target_.combine_partial(b_, p_.buffers[m.buffer].reduce, a, idx ? &idx : nullptr);
    ++combines_;
  }
  finish_reduce(m, a, idx);
}

void Emitter::finish_reduce(const KernelMember& m, llvm::Value* a, llvm::Value* idx) {
  const Buffer& buf = p_.buffers[m.buffer];
  llvm::Value* res = idx ? idx : cast(a, buf.body->dtype, buf.dtype);
  row_vals_[m.buffer] = res;
  if (m.store) store(m.buffer, x_, res, buf.dtype);
}

bool Emitter::emit_joint(const KernelStage& sa, const KernelStage& sb) {
  if (!sa.loop || !sb.loop || sa.members.size() != 1 || sb.members.size() != 1) return false;
  for (llvm::Value* ok : chunk_ok_)
    if (ok) return false;
  const KernelMember& ma = k_.members[size_t(sa.members[0])];
  const KernelMember& mb = k_.members[size_t(sb.members[0])];
  if (ma.role != MemberRole::Reduce || mb.role != MemberRole::Reduce) return false;
  const Buffer& ba = p_.buffers[ma.buffer];
  const Buffer& bb = p_.buffers[mb.buffer];
  DType vt = ba.body->dtype;
  if (!is_half(vt) || bb.body->dtype != vt) return false;
  if (ba.reduce != ReduceOp::Sum || bb.reduce != ReduceOp::Sum) return false;
  const VPtr& va = bodies_[ma.buffer];
  const VPtr& vb = bodies_[mb.buffer];
  // sb's body: d * d with d = (the value sa sums) - (a row constant).
  if (vb->op != VOp::Mul || vb->args.size() != 2 ||
      structural_id(vb->args[0].get()) != structural_id(vb->args[1].get()))
    return false;
  const VPtr& d = vb->args[0];
  if (d->op != VOp::Sub || d->args.size() != 2 ||
      structural_id(d->args[0].get()) != structural_id(va.get()) ||
      depends_on_r_[size_t(structural_id(d->args[1].get()))])
    return false;
  llvm::Type* f = b_.getFloatTy();
  auto k = [&](double v) { return llvm::ConstantFP::get(f, v); };
  int64_t per_thread = int64_t(chunk_r0_.size()) * map_.vec;
  llvm::Value* sum = thread_partial(ba, va);
  // This thread's sum of squared deviations from its own mean (its values are in registers).
  // Of bf16 values as loaded, sum(v^2) - sum * mean: two instructions an element (an fma each
  // for the squares; the sum is the first reduction's) instead of three, and as exact: a
  // square of a bf16 value has at most 16 significant bits, so the sums of this thread's 32
  // squares (and values) round in f32 only when their magnitudes span more than two binades,
  // that is when the spread is not small against the mean and no cancellation follows; the one
  // rounding of the fma then loses 2^-24 of M2 (test/unit/nvptx_test.cpp simulates it on
  // adversarial rows). f16 values (11 bits) and computed values (24) keep the subtraction.
  llvm::Value* mean = b_.CreateFMul(sum, k(1.0 / double(per_thread)));
  bool exact_squares = vt == DType::BF16 && va->op == VOp::Load;
  llvm::FastMathFlags fm;
  fm.setAllowReassoc();
  // sum((v - c)^2) over this thread's values (sum(v^2) without c).
  auto squares = [&](llvm::Value* c) {
    std::vector<llvm::Value*> acc(size_t(map_.vec), llvm::ConstantFP::getNegativeZero(f));
    for (size_t j = 0; j < chunk_r0_.size(); ++j)
      for (int l = 0; l < map_.vec; ++l) {
        set_slot(int(j), l);
        llvm::Value* e = c ? b_.CreateFSub(value(va), c) : value(va);
        llvm::Value* n = b_.CreateFAdd(acc[size_t(l)], b_.CreateFMul(e, e));
        llvm::cast<llvm::Instruction>(n)->setFastMathFlags(fm);
        acc[size_t(l)] = n;
      }
    r_ = nullptr;
    for (size_t w = 1; w < acc.size(); w *= 2)
      for (size_t l = 0; l + w < acc.size(); l += 2 * w) acc[l] = b_.CreateFAdd(acc[l], acc[l + w]);
    return acc[0];
  };
  llvm::Value* m2 = nullptr;
  if (!exact_squares) {
    m2 = squares(mean);
  } else {
    // The squares overflow f32 from |v| = 2^64 on: a thread whose sum of squares is not finite
    // (or NaN) subtracts its mean first after all, in a branch of its own (no barrier in it).
    llvm::Value* sq = squares(nullptr);
    llvm::Value* fast_m2 = b_.CreateFSub(sq, b_.CreateFMul(sum, mean));
    llvm::BasicBlock* fast = b_.GetInsertBlock();
    llvm::BasicBlock* centered = llvm::BasicBlock::Create(ctx_, "m2.centered", fn_);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "m2.join", fn_);
    b_.CreateCondBr(b_.CreateFCmpOLE(sq, k(double(std::numeric_limits<float>::max()))), join,
                    centered);
    b_.SetInsertPoint(centered);
    llvm::Value* slow_m2 = squares(mean);
    llvm::BasicBlock* centered_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    llvm::PHINode* phi = b_.CreatePHI(f, 2, "m2");
    phi->addIncoming(fast_m2, fast);
    phi->addIncoming(slow_m2, centered_end);
    m2 = phi;
  }
  // (sum, M2) pairs of n elements each (every thread holds per_thread of them): Chan's
  // (sum + sum', M2 + M2' + ((sum' - sum) / sqrt(2n))^2). The sums add as a plain block sum
  // would.
  auto merge = [per_thread](llvm::IRBuilderBase& b, const std::vector<llvm::Value*>& a,
                            const std::vector<llvm::Value*>& c,
                            int threads) -> std::vector<llvm::Value*> {
    // delta scaled by 1 / sqrt(2n) before it is squared: delta^2 itself overflows f32 for rows
    // of values from about 2^60 whose M2 does not (the same instruction count).
    llvm::Value* delta = b.CreateFSub(c[0], a[0]);
    llvm::Value* t = b.CreateFMul(
        delta, llvm::ConstantFP::get(b.getFloatTy(),
                                     1.0 / std::sqrt(2.0 * double(threads) * double(per_thread))));
    return {b.CreateFAdd(a[0], c[0]), b.CreateFAdd(b.CreateFAdd(a[1], c[1]), b.CreateFMul(t, t))};
  };
  std::vector<llvm::Value*> r = target_.combine_joint(b_, {sum, m2}, merge);
  assert(r.size() == 2 && "the target combines joint reductions");
  ++combines_;
  finish_reduce(ma, r[0]);
  // sum (v - c)^2 = M2 + n (sum / n - c)^2 for any row constant c (c is sum / n here).
  double n = double(k_.rnumel);
  llvm::Value* dm = b_.CreateFSub(b_.CreateFDiv(r[0], k(n)), value(d->args[1]));
  finish_reduce(mb, b_.CreateFAdd(r[1], b_.CreateFMul(b_.CreateFMul(dm, dm), k(n))));
  return true;
}

// A pointwise stage's iterations touch disjoint elements: an output written in place over an
// input (the memory plan's reuse, passes/memory_plan.cpp: inplace_ok) reads each element only
// before writing it, at the same index. Such arguments are not noalias, and LLVM guarded the
// vector loop with a check that two ranges do not overlap, which fails when they are the same
// buffer: the loop then ran as scalar code. Its loads and stores of buffers go into one access
// group that the loop declares parallel (llvm.loop.parallel_accesses).
void Emitter::mark_parallel(const KernelStage& st, llvm::BasicBlock* body, llvm::BasicBlock* exit,
                            llvm::BranchInst* latch) {
  for (int mi : st.members)
    if (k_.members[mi].role != MemberRole::Inner) return;
  llvm::MDNode* group = llvm::MDNode::getDistinct(ctx_, {});
  bool in_loop = false;
  for (llvm::BasicBlock& bb : *fn_) {
    in_loop = in_loop || &bb == body;
    if (!in_loop || &bb == exit) continue;
    for (llvm::Instruction& i : bb) {
      llvm::Value* ptr = nullptr;
      if (auto* l = llvm::dyn_cast<llvm::LoadInst>(&i)) ptr = l->getPointerOperand();
      if (auto* s = llvm::dyn_cast<llvm::StoreInst>(&i)) ptr = s->getPointerOperand();
      if (ptr && !llvm::isa<llvm::AllocaInst>(ptr->stripPointerCasts()))
        i.setMetadata(llvm::LLVMContext::MD_access_group, group);
    }
  }
  llvm::Metadata* pa[] = {llvm::MDString::get(ctx_, "llvm.loop.parallel_accesses"), group};
  llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx_, pa)};
  llvm::MDNode* loop = llvm::MDNode::getDistinct(ctx_, ops);
  loop->replaceOperandWith(0, loop);
  latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
}

void Emitter::emit_stage(const KernelStage& st) {
  if (st.loop && slots_) {
    emit_slot_stage(st);
    return;
  }
  llvm::IntegerType* i64 = b_.getInt64Ty();
  memo_.clear();
  if (!st.loop) {
    for (int mi : st.members) {
      const KernelMember& m = k_.members[mi];
      const Buffer& buf = p_.buffers[m.buffer];
      llvm::Value* v = value(bodies_[m.buffer]);
      row_vals_[m.buffer] = v;
      if (m.store) store(m.buffer, x_, v, buf.dtype);
    }
    memo_.clear();
    return;
  }
  // Accumulators live in allocas in the entry block (promoted to registers by SROA).
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  std::map<int, llvm::AllocaInst*> acc, arg;
  for (int mi : st.members) {
    const KernelMember& m = k_.members[mi];
    const Buffer& buf = p_.buffers[m.buffer];
    if (m.role != MemberRole::Reduce) continue;
    DType vt = buf.body->dtype;
    acc[m.buffer] = eb.CreateAlloca(reg_type(vt));
    b_.CreateStore(reduce_init(buf.reduce, vt), acc[m.buffer]);
    if (buf.reduce == ReduceOp::ArgMax || buf.reduce == ReduceOp::ArgMin) {
      arg[m.buffer] = eb.CreateAlloca(i64);
      b_.CreateStore(b_.getInt64(0), arg[m.buffer]);
    }
  }
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "r.head", fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "r.body", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "r.exit", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* r = b_.CreatePHI(i64, 2, "r");
  r->addIncoming(entry_.rstart, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(r, b_.getInt64(uint64_t(k_.rnumel))), body, exit);
  b_.SetInsertPoint(body);
  r_ = r;
  llvm::Value* xr = b_.CreateAdd(b_.CreateMul(x_, b_.getInt64(uint64_t(k_.rnumel))), r);
  for (int mi : st.members) {
    const KernelMember& m = k_.members[mi];
    const Buffer& buf = p_.buffers[m.buffer];
    llvm::Value* v = value(bodies_[m.buffer]);
    if (m.role == MemberRole::Inner) {
      store(m.buffer, xr, v, buf.dtype);
      continue;
    }
    DType vt = buf.body->dtype;
    llvm::Value* a = b_.CreateLoad(reg_type(vt), acc[m.buffer]);
    bool is_arg = buf.reduce == ReduceOp::ArgMax || buf.reduce == ReduceOp::ArgMin;
    llvm::Value* first = is_arg ? b_.CreateICmpEQ(r, entry_.rstart) : nullptr;
    llvm::Value* n = accumulate(buf, a, v, r, first, is_arg ? arg[m.buffer] : nullptr, nullptr);
    b_.CreateStore(n, acc[m.buffer]);
  }
  llvm::Value* rn = b_.CreateAdd(r, entry_.rstep, "r.next", true, true);
  r->addIncoming(rn, b_.GetInsertBlock());
  llvm::BranchInst* latch = b_.CreateBr(head);
  mark_parallel(st, body, exit, latch);
  b_.SetInsertPoint(exit);
  memo_.clear();
  r_ = nullptr;
  for (int mi : st.members) {
    const KernelMember& m = k_.members[mi];
    if (m.role != MemberRole::Reduce) continue;
    const Buffer& buf = p_.buffers[m.buffer];
    DType vt = buf.body->dtype;
    llvm::Value* a = b_.CreateLoad(reg_type(vt), acc[m.buffer]);
    llvm::Value* idx = arg.count(m.buffer) ? b_.CreateLoad(i64, arg[m.buffer]) : nullptr;
    combine_and_finish(m, a, idx);
  }
}

llvm::Function* Emitter::run(const std::vector<int>& args, const std::vector<bool>& noalias) {
  target_.prepare_module(m_);
  map_ = target_.row_mapping(p_, k_);
  fn_ = target_.begin_kernel(m_, b_, k_.name, noalias, map_, &entry_);
  for (size_t i = 0; i < args.size(); ++i) buf_ptr_[args[i]] = entry_.buffers[i];
  for (size_t i = 0; i < args.size(); ++i)
    if (i < noalias.size() && noalias[i]) read_only_.insert(args[i]);
  for (const KernelMember& m : k_.members)
    if (m.store) read_only_.erase(m.buffer);
  slots_ = map_.block > 0 && (map_.vec > 1 || map_.persistent);
  assert((!slots_ || k_.rnumel % map_.vec == 0) && "vectors must tile the row");
  assert((!map_.persistent || int64_t(map_.block) * map_.vec * map_.chunks >= k_.rnumel) &&
         "a persistent row must fit its threads' chunks");
  same_ = IndexExpr::var(kXVar, k_.xnumel) * k_.rnumel + IndexExpr::var(kRVar, k_.rnumel);
  for (auto& m : k_.members) {
    const Buffer& b = p_.buffers[m.buffer];
    bodies_[m.buffer] = substitute(b.body, member_subst(b, m.role, k_.xnumel, k_.rnumel));
  }
  if (slots_) find_guarded_loads();
  llvm::IntegerType* i64 = b_.getInt64Ty();
  bool resident = slots_ && map_.persistent;
  assert((map_.block == 0 || map_.rows == 1 || resident || map_.packed) &&
         "several rows per block need a persistent row or the packed form");
  if (resident) {
    // Chunk j of thread t starts at (j * block + t) * vec: consecutive threads read
    // consecutive vectors.
    std::vector<llvm::Value*> r0s;
    llvm::Value* t0 = b_.CreateMul(entry_.rstart, b_.getInt64(uint64_t(map_.vec)));
    for (int j = 0; j < map_.chunks; ++j)
      r0s.push_back(j == 0 ? t0
                           : b_.CreateAdd(t0, b_.getInt64(uint64_t(j) * uint64_t(map_.block) *
                                                          uint64_t(map_.vec))));
    begin_chunks(r0s, int64_t(map_.block) * map_.vec * map_.chunks);
  }
  pipelined_ = resident && map_.rows > 1;
  streams_ = resident && map_.rows == 1 && map_.block > 0 && entry_.xnumel;
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "x.head", fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "x.body", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "x.exit", fn_);
  if (pipelined_) {
    prologue_ = llvm::BasicBlock::Create(ctx_, "x.prologue", fn_);
    b_.CreateCondBr(b_.CreateICmpSLT(entry_.xbegin, entry_.xend), prologue_, exit);
    b_.SetInsertPoint(prologue_);
  }
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* x = b_.CreatePHI(i64, 2, "x");
  x->addIncoming(entry_.xbegin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(x, entry_.xend), body, exit);
  b_.SetInsertPoint(body);
  x_ = x;
  llvm::Value* xn = b_.CreateAdd(x, b_.getInt64(1), "x.next", true, true);
  if (pipelined_) {
    head_ = head;
    body_ = body;
    xnext_ = xn;
    prefetch_ = llvm::BasicBlock::Create(ctx_, "x.prefetch", fn_);
    row_ = llvm::BasicBlock::Create(ctx_, "x.row", fn_);
    b_.CreateCondBr(b_.CreateICmpSLT(xn, entry_.xend), prefetch_, row_);
    b_.SetInsertPoint(prefetch_);
    b_.CreateBr(row_);
    b_.SetInsertPoint(row_);
  }
  row_vals_.clear();
  for (size_t i = 0; i < k_.stages.size(); ++i) {
    // A resident row passes values between stages in registers: no stores to make visible.
    // With one thread per row (block 0), the thread reads back only its own stores.
    if (i > 0 && !resident && map_.block > 0) target_.end_stage(b_);
    if (resident && i + 1 < k_.stages.size() && emit_joint(k_.stages[i], k_.stages[i + 1])) {
      ++i;
      continue;
    }
    emit_stage(k_.stages[i]);
  }
  // Each block reduction has shared slots of its own, written once per row: another
  // reduction's barrier keeps the next row's writes after every thread's reads of this row's,
  // but a row with a single one needs a barrier of its own before the next row.
  if (map_.block > 0 && map_.rows > 1 && combines_ == 1) target_.end_stage(b_);
  for (auto& [cur, merged] : next_loads_) cur->addIncoming(merged, b_.GetInsertBlock());
  x->addIncoming(xn, b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
  int stores = 0;
  for (const KernelMember& m : k_.members) stores += m.store ? 1 : 0;
  target_.end_kernel(m_, b_, fn_, streams_ && streamed_.size() == 1 && stores == 1);
  return fn_;
}

} // namespace

llvm::Function* emit_kernel(Target& target, llvm::Module& m, const LoopProgram& p, const Kernel& k,
                            const std::vector<int>& args, const std::vector<bool>& noalias) {
  Emitter e(target, m, p, k);
  return e.run(args, noalias);
}

void optimize_o2(llvm::Module& m, llvm::TargetMachine* tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);
}

std::string emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, bool object,
                              const std::string& target) {
  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             object ? llvm::CodeGenFileType::ObjectFile
                                    : llvm::CodeGenFileType::AssemblyFile))
    throw Error("", "internal error: " + target + " cannot emit " +
                        (object ? "object files" : "assembly"));
  pm.run(m);
  return std::string(out.begin(), out.end());
}

void throw_llvm_errors(const LlvmDiagnostics& d, const std::string& what) {
  if (!d.errors.empty()) throw Error("", "internal error: " + what + ": " + d.errors.front());
}

namespace {

class CollectingHandler : public llvm::DiagnosticHandler {
public:
  explicit CollectingHandler(LlvmDiagnostics* out) : out_(out) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& di) override {
    if (di.getSeverity() != llvm::DS_Error && di.getSeverity() != llvm::DS_Warning) return true;
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::DiagnosticPrinterRawOStream printer(os);
    di.print(printer);
    os.flush();
    (di.getSeverity() == llvm::DS_Error ? out_->errors : out_->warnings).push_back(text);
    return true;
  }

private:
  LlvmDiagnostics* out_;
};

} // namespace

void collect_diagnostics(llvm::LLVMContext& ctx, LlvmDiagnostics* out) {
  ctx.setDiagnosticHandler(std::make_unique<CollectingHandler>(out));
}

std::unique_ptr<llvm::Module> link_kernel_modules(llvm::LLVMContext& ctx,
                                                  const std::vector<KernelText>& kernels,
                                                  LlvmDiagnostics* diags) {
  collect_diagnostics(ctx, diags);
  auto all = std::make_unique<llvm::Module>("kernels", ctx);
  all->setSourceFileName("kernels");
  // One linker for every kernel: a Linker made per call walks the whole destination module for
  // its types first, which made linking n kernels quadratic (an EfficientNet-B0 train graph's
  // 1050 kernels: minutes).
  llvm::Linker linker(*all);
  for (const KernelText& k : kernels) {
    llvm::SMDiagnostic diag;
    auto buf = llvm::MemoryBuffer::getMemBuffer(k.ll, k.name, false);
    std::unique_ptr<llvm::Module> m = llvm::parseIR(buf->getMemBufferRef(), diag, ctx);
    if (!m)
      throw Error("", "internal error: kernel " + k.name +
                          " does not parse: " + diag.getMessage().str());
    if (!k.symbol.empty() && k.symbol != k.name) {
      llvm::Function* f = m->getFunction(k.name);
      if (!f) throw Error("", "internal error: kernel " + k.name + " has no function of its name");
      f->setName(k.symbol);
      assert(f->getName() == k.symbol && "a kernel's module holds nothing else of its new name");
    }
    if (all->getDataLayoutStr().empty()) {
      all->setDataLayout(m->getDataLayout());
      all->setTargetTriple(m->getTargetTriple());
    }
    if (linker.linkInModule(std::move(m)))
      throw Error("", "internal error: kernel " + k.name + " does not link" +
                          (diags->errors.empty() ? "" : ": " + diags->errors.front()));
  }
  return all;
}

} // namespace fxc
