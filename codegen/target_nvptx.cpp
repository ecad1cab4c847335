// The NVPTX target: one block per row (a thread per row for many short rows), warp-shuffle
// block reductions, libdevice math, PTX through LLVM's NVPTX back end.
#include "codegen/llvm_codegen.h"
#include "codegen/target.h"
#include "frontend/diag.h"
#include "frontend/pass_timer.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <algorithm>
#include <cassert>
#include <mutex>
#include <optional>
#include <set>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace fxc {

namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";
constexpr const char* kLayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64";
constexpr int kMaxBlock = 1024;
constexpr int kWarp = 32;
constexpr int kMaxChunks = 8;         ///< vectors of a persistent row per thread
constexpr int kPersistentBlock = 128; ///< smallest block for a persistent row
/// Fewer rows than this leave multiprocessors idle with 128-thread blocks (132 on an H100/H200).
constexpr int64_t kFewRows = 264;
/// Rows of at most this many elements get a thread each (the short-row form) when there are
/// enough of them: a block per row would leave most of a warp idle.
constexpr int64_t kShortRow = 32;
/// Threads (rows) per block of the short-row form.
constexpr int kShortRowBlock = 256;

/// libdevice's name for a math function.
std::string libdevice_name(VOp op, bool f64) {
  const char* base = nullptr;
  switch (op) {
  case VOp::Exp:
    base = "exp";
    break;
  case VOp::Log:
    base = "log";
    break;
  case VOp::Tanh:
    base = "tanh";
    break;
  case VOp::Erf:
    base = "erf";
    break;
  case VOp::Log1p:
    base = "log1p";
    break;
  case VOp::Expm1:
    base = "expm1";
    break;
  case VOp::Sin:
    base = "sin";
    break;
  case VOp::Cos:
    base = "cos";
    break;
  case VOp::Pow:
    base = "pow";
    break;
  default:
    assert(false && "not a math function");
    base = "exp";
  }
  return std::string("__nv_") + base + (f64 ? "" : "f");
}

int pow2_at_least(int64_t n, int lo, int hi) {
  int b = lo;
  while (b < hi && b < n) b *= 2;
  return b;
}

/// What the mapping heuristic needs to know about a kernel.
struct KernelTraits {
  int narrow = 16;            ///< bytes of the narrowest element accessed along r
  bool reduces = false;       ///< has a reduction member
  int loop_stages = 0;        ///< stages that loop over r
  bool same_row_reads = true; ///< in-kernel inner members are read only at their own position
};

KernelTraits kernel_traits(const LoopProgram& p, const Kernel& k) {
  KernelTraits t;
  IndexExpr same = IndexExpr::var(kXVar, k.xnumel) * k.rnumel + IndexExpr::var(kRVar, k.rnumel);
  std::set<int> inner;
  for (const KernelMember& m : k.members) {
    const Buffer& b = p.buffers[m.buffer];
    if (m.role == MemberRole::Reduce) t.reduces = true;
    if (m.role == MemberRole::Inner) t.narrow = std::min(t.narrow, int(dtype_size(b.dtype)));
    auto sub = member_subst(b, m.role, k.xnumel, k.rnumel);
    for_each_load(b.body, [&](const VExpr& l) {
      IndexExpr ix = l.index.substitute(sub);
      if (inner.count(l.buffer) && ix != same) t.same_row_reads = false;
      if (ix.substitute({{kRVar, IndexExpr(0)}}) != ix)
        t.narrow = std::min(t.narrow, int(dtype_size(l.dtype)));
    });
    if (m.role == MemberRole::Inner) inner.insert(m.buffer);
  }
  for (const KernelStage& st : k.stages) t.loop_stages += st.loop ? 1 : 0;
  return t;
}

class NvptxTarget : public Target {
public:
  explicit NvptxTarget(std::string arch) : arch_(std::move(arch)) {
    caps_.name = "nvptx64";
    caps_.host = false;
    caps_.parallel_rows = true;
    caps_.cooperative_reduction = true;
    caps_.has_shared_memory = true;
    caps_.max_threads_per_block = kMaxBlock;
    caps_.vector_bits = 32;
  }
  const TargetCaps& caps() const override { return caps_; }

  RowMapping row_mapping(const LoopProgram& p, const Kernel& k) override {
    return forced_ ? *forced_ : nvptx_row_mapping(p, k);
  }
  /// Uses `m` for every kernel instead of the heuristic (autotuning candidates).
  void force_mapping(const RowMapping& m) { forced_ = m; }

  void prepare_module(llvm::Module& m) override {
    m.setTargetTriple(kTriple);
    m.setDataLayout(kLayout);
  }

  /// `void name(ptr buf0, ..., i64 xnumel)`: block x computes row x; its threads stride over r.
  /// In the short-row form (map.block 0) thread t of block c computes row c * ntid + t alone
  /// (none past xnumel).
  llvm::Function* begin_kernel(llvm::Module& m, llvm::IRBuilderBase& b, const std::string& name,
                               const std::vector<bool>& noalias, const RowMapping& map,
                               KernelEntry* entry) override {
    std::vector<llvm::Type*> params(noalias.size(), b.getPtrTy());
    params.push_back(b.getInt64Ty());
    auto* f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), params, false),
                                     llvm::Function::ExternalLinkage, name, m);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < noalias.size(); ++i) {
      if (noalias[i]) f->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
      f->getArg(unsigned(i))->setName("buf" + std::to_string(i));
    }
    f->getArg(unsigned(noalias.size()))->setName("xnumel");
    llvm::LLVMContext& ctx = m.getContext();
    llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, "kernel"),
                            llvm::ValueAsMetadata::get(b.getInt32(1))};
    m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, md));
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    entry->buffers.clear();
    for (size_t i = 0; i < noalias.size(); ++i) entry->buffers.push_back(f->getArg(unsigned(i)));
    llvm::Value* xnumel = f->getArg(unsigned(noalias.size()));
    llvm::Value* x =
        b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), b.getInt64Ty());
    if (map.block == 0) {
      llvm::Value* ntid =
          b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x), b.getInt64Ty());
      llvm::Value* tid =
          b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), b.getInt64Ty());
      x = b.CreateAdd(b.CreateMul(x, ntid, "", true, true), tid, "row", true, true);
      // Threads past the last row return at once; the others compute exactly one row.
      llvm::BasicBlock* none = llvm::BasicBlock::Create(ctx, "row.none", f);
      llvm::BasicBlock* one = llvm::BasicBlock::Create(ctx, "row.one", f);
      b.CreateCondBr(b.CreateICmpSLT(x, xnumel), one, none);
      b.SetInsertPoint(none);
      b.CreateRetVoid();
      b.SetInsertPoint(one);
      entry->xbegin = x;
      entry->xend = b.CreateAdd(x, b.getInt64(1), "", true, true);
      entry->rstart = b.getInt64(0);
      entry->rstep = b.getInt64(1);
      return f;
    }
    entry->xbegin = x;
    entry->xend = b.CreateSelect(b.CreateICmpSLT(x, xnumel), b.CreateAdd(x, b.getInt64(1)), x);
    entry->rstart =
        b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), b.getInt64Ty());
    entry->rstep =
        b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x), b.getInt64Ty());
    return f;
  }

  /// Block reduction: a butterfly shuffle within each warp, one shared slot per warp, then a
  /// butterfly over those slots; the combination order is fixed, so results are deterministic.
  /// The block size is a power of two of at least one warp.
  llvm::Value* combine_partial(llvm::IRBuilderBase& b, ReduceOp op, llvm::Value* partial,
                               llvm::Value** index) override {
    llvm::Module& m = *b.GetInsertBlock()->getModule();
    llvm::Function* f = b.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = m.getContext();
    bool is_bool = partial->getType()->isIntegerTy(1);
    llvm::Type* st = is_bool ? b.getInt8Ty() : partial->getType();
    llvm::GlobalVariable* vals = shared_array(m, st);
    llvm::GlobalVariable* idxs = index ? shared_array(m, b.getInt64Ty()) : nullptr;
    llvm::Value* tid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    llvm::Value* ntid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    llvm::Value* lane = b.CreateAnd(tid, b.getInt32(kWarp - 1));
    llvm::Value* warp = b.CreateLShr(tid, b.getInt32(5));
    llvm::Value* nwarps = b.CreateLShr(ntid, b.getInt32(5));
    auto slot = [&](llvm::GlobalVariable* g, llvm::Value* i) {
      return b.CreateInBoundsGEP(g->getValueType(), g,
                                 {b.getInt64(0), b.CreateZExt(i, b.getInt64Ty())});
    };
    auto to_mem = [&](llvm::Value* v) { return is_bool ? b.CreateZExt(v, b.getInt8Ty()) : v; };
    auto from_mem = [&](llvm::Value* v) { return is_bool ? b.CreateICmpNE(v, b.getInt8(0)) : v; };
    llvm::Value* v = partial;
    llvm::Value* vi = index ? *index : nullptr;
    // One butterfly step at `offset`; `use` (when given) keeps the old value where it is false.
    auto step = [&](int offset, llvm::Value* use) {
      llvm::Value* c = shuffle(b, v, offset);
      llvm::Value *nv, *ni = nullptr;
      if (vi) {
        llvm::Value* ci = shuffle(b, vi, offset);
        llvm::Value* take = arg_better(b, op == ReduceOp::ArgMax, c, ci, v, vi);
        nv = b.CreateSelect(take, c, v);
        ni = b.CreateSelect(take, ci, vi);
      } else {
        nv = combine(b, op, v, c);
      }
      v = use ? b.CreateSelect(use, nv, v) : nv;
      if (vi) vi = use ? b.CreateSelect(use, ni, vi) : ni;
    };
    for (int o = kWarp / 2; o >= 1; o /= 2) step(o, nullptr);
    // Lane 0 of each warp publishes the warp's result.
    llvm::BasicBlock* put = llvm::BasicBlock::Create(ctx, "red.put", f);
    llvm::BasicBlock* joined = llvm::BasicBlock::Create(ctx, "red.joined", f);
    b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt32(0)), put, joined);
    b.SetInsertPoint(put);
    b.CreateStore(to_mem(v), slot(vals, warp));
    if (idxs) b.CreateStore(vi, slot(idxs, warp));
    b.CreateBr(joined);
    b.SetInsertPoint(joined);
    barrier(b);
    // Every warp reduces the per-warp results (lane l holds warp l mod nwarps; nwarps is a power
    // of two) in the same order, so every warp's lane 0 ends with the same block result.
    llvm::Value* src = b.CreateAnd(lane, b.CreateSub(nwarps, b.getInt32(1)));
    v = from_mem(b.CreateLoad(st, slot(vals, src)));
    if (idxs) vi = b.CreateLoad(b.getInt64Ty(), slot(idxs, src));
    for (int o = kWarp / 2; o >= 1; o /= 2) step(o, b.CreateICmpULT(b.getInt32(o), nwarps));
    // Lane 0's result everywhere: lanes may differ in the sign of a zero or a NaN's payload.
    v = shuffle(b, v, 0, true);
    if (vi) vi = shuffle(b, vi, 0, true);
    barrier(b); // the slots are reused by the next reduction
    if (index) *index = vi;
    return v;
  }

  llvm::Value* math(llvm::IRBuilderBase& b, llvm::Module& m, VOp op,
                    const std::vector<llvm::Value*>& args, bool f64) override {
    llvm::Type* t = args[0]->getType();
    std::vector<llvm::Type*> params(args.size(), t);
    llvm::FunctionCallee fn =
        m.getOrInsertFunction(libdevice_name(op, f64), llvm::FunctionType::get(t, params, false));
    return b.CreateCall(fn, args);
  }

  /// rsqrt.approx (what PyTorch's rsqrtf compiles to); for 16-bit results, exp through ex2.approx
  /// and erf by Abramowitz-Stegun 7.1.26 (absolute error below 2e-7; its Taylor series below 0.5
  /// for relative precision), both without branches.
  llvm::Value* approx_math(llvm::IRBuilderBase& b, llvm::Module&, VOp op,
                           const std::vector<llvm::Value*>& args, bool half) override {
    llvm::Value* a = args[0];
    if (!a->getType()->isFloatTy()) return nullptr;
    auto k = [&](double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); };
    auto fma = [&](llvm::Value* x, llvm::Value* y, llvm::Value* z) {
      return b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {x, y, z});
    };
    auto exp = [&](llvm::Value* x) {
      return b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_f, {},
                               {b.CreateFMul(x, k(1.4426950408889634))});
    };
    switch (op) {
    case VOp::Rsqrt:
      return b.CreateIntrinsic(llvm::Intrinsic::nvvm_rsqrt_approx_f, {}, {a});
    case VOp::Exp:
      return half ? exp(a) : nullptr;
    case VOp::Erf: {
      if (!half) return nullptr;
      llvm::Value* x = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
      llvm::Value* t = b.CreateIntrinsic(llvm::Intrinsic::nvvm_rcp_approx_ftz_f, {},
                                         {fma(x, k(0.3275911), k(1.0))});
      llvm::Value* p = fma(t, k(1.061405429), k(-1.453152027));
      p = fma(p, t, k(1.421413741));
      p = fma(p, t, k(-0.284496736));
      p = fma(p, t, k(0.254829592));
      p = b.CreateFMul(p, t);
      llvm::Value* x2 = b.CreateFMul(a, a);
      llvm::Value* e = b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_f, {},
                                         {b.CreateFMul(x2, k(-1.4426950408889634))});
      // 1 - p e lies in [0, 1]: a's sign bit makes it erf(a).
      llvm::Value* y = fma(b.CreateFNeg(p), e, k(1.0));
      llvm::Value* sign = b.CreateAnd(b.CreateBitCast(a, b.getInt32Ty()), b.getInt32(0x80000000u));
      y = b.CreateBitCast(b.CreateOr(b.CreateBitCast(y, b.getInt32Ty()), sign), b.getFloatTy());
      // Near 0 the form above loses relative precision: the Taylor series to x^11 instead.
      llvm::Value* s = fma(x2, k(-0.0008548325508305403), k(0.005223977625442188));
      s = fma(s, x2, k(-0.026866170645131252));
      s = fma(s, x2, k(0.11283791670955126));
      s = fma(s, x2, k(-0.37612638903183754));
      s = fma(s, x2, k(1.1283791670955126));
      return b.CreateSelect(b.CreateFCmpOLT(x, k(0.5)), b.CreateFMul(s, a), y);
    }
    default:
      return nullptr;
    }
  }

  void end_stage(llvm::IRBuilderBase& b) override { barrier(b); }

  void end_kernel(llvm::Module&, llvm::IRBuilderBase& b, llvm::Function*) override {
    b.CreateRetVoid();
  }

private:
  static llvm::Value* sreg(llvm::IRBuilderBase& b, llvm::Intrinsic::ID id) {
    return b.CreateIntrinsic(id, {}, {});
  }
  /// `v` from lane (lane ^ offset) of the warp (from lane `offset` when `idx`), through 32-bit
  /// shuffles.
  static llvm::Value* shuffle(llvm::IRBuilderBase& b, llvm::Value* v, int offset,
                              bool idx = false) {
    llvm::Type* t = v->getType();
    llvm::Value* mask = b.getInt32(-1);
    llvm::Value* off = b.getInt32(offset);
    llvm::Value* clamp = b.getInt32(kWarp - 1);
    if (t->isFloatTy())
      return b.CreateIntrinsic(idx ? llvm::Intrinsic::nvvm_shfl_sync_idx_f32
                                   : llvm::Intrinsic::nvvm_shfl_sync_bfly_f32,
                               {}, {mask, v, off, clamp});
    auto bfly = [&](llvm::Value* x) {
      return b.CreateIntrinsic(idx ? llvm::Intrinsic::nvvm_shfl_sync_idx_i32
                                   : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
                               {}, {mask, x, off, clamp});
    };
    unsigned bits = t->getPrimitiveSizeInBits().getFixedValue();
    assert((bits <= 32 || bits == 64) && "reduction values are at most 64 bits");
    llvm::Type* it = b.getIntNTy(bits);
    llvm::Value* x = t->isIntegerTy() ? v : b.CreateBitCast(v, it);
    llvm::Value* r;
    if (bits <= 32) {
      r = bfly(b.CreateZExt(x, b.getInt32Ty()));
      r = b.CreateTrunc(r, it);
    } else {
      llvm::Value* lo = bfly(b.CreateTrunc(x, b.getInt32Ty()));
      llvm::Value* hi = bfly(b.CreateTrunc(b.CreateLShr(x, 32), b.getInt32Ty()));
      r = b.CreateOr(b.CreateZExt(lo, it), b.CreateShl(b.CreateZExt(hi, it), 32));
    }
    return t->isIntegerTy() ? r : b.CreateBitCast(r, t);
  }
  static void barrier(llvm::IRBuilderBase& b) {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  }
  static llvm::GlobalVariable* shared_array(llvm::Module& m, llvm::Type* t) {
    std::string name;
    llvm::raw_string_ostream os(name);
    os << "fxc.reduce.";
    t->print(os);
    os.flush();
    if (auto* g = m.getNamedGlobal(name)) return g;
    auto* at = llvm::ArrayType::get(t, kMaxBlock / kWarp);
    auto* g = new llvm::GlobalVariable(m, at, false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(at), name, nullptr,
                                       llvm::GlobalValue::NotThreadLocal, 3);
    g->setAlignment(llvm::Align(8));
    return g;
  }
  static llvm::Value* combine(llvm::IRBuilderBase& b, ReduceOp op, llvm::Value* a, llvm::Value* c) {
    bool fl = a->getType()->isFloatingPointTy();
    switch (op) {
    case ReduceOp::Sum:
      return fl ? b.CreateFAdd(a, c) : b.CreateAdd(a, c);
    case ReduceOp::Any:
      return b.CreateOr(a, c);
    case ReduceOp::Max:
    case ReduceOp::Min: {
      bool mx = op == ReduceOp::Max;
      if (a->getType()->isIntegerTy(1)) return mx ? b.CreateOr(a, c) : b.CreateAnd(a, c);
      if (!fl)
        return b.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, a, c);
      llvm::Value* pick = mx ? b.CreateFCmpOGT(a, c) : b.CreateFCmpOLT(a, c);
      return b.CreateSelect(b.CreateOr(pick, b.CreateFCmpUNO(a, a)), a, c);
    }
    default:
      break;
    }
    assert(false && "arg reductions combine through arg_better");
    return a;
  }
  /// Whether (c, ci) beats (a, ai): a larger (smaller) value, NaN first, ties to the lower index.
  static llvm::Value* arg_better(llvm::IRBuilderBase& b, bool mx, llvm::Value* c, llvm::Value* ci,
                                 llvm::Value* a, llvm::Value* ai) {
    bool fl = a->getType()->isFloatingPointTy();
    llvm::Value* strictly = fl ? (mx ? b.CreateFCmpOGT(c, a) : b.CreateFCmpOLT(c, a))
                               : (mx ? b.CreateICmpSGT(c, a) : b.CreateICmpSLT(c, a));
    llvm::Value* same = fl ? b.CreateFCmpOEQ(c, a) : b.CreateICmpEQ(c, a);
    llvm::Value* better = b.CreateOr(strictly, b.CreateAnd(same, b.CreateICmpSLT(ci, ai)));
    if (fl) {
      llvm::Value *cn = b.CreateFCmpUNO(c, c), *an = b.CreateFCmpUNO(a, a);
      better = b.CreateOr(b.CreateAnd(cn, b.CreateNot(an)),
                          b.CreateAnd(b.CreateAnd(cn, an), b.CreateICmpSLT(ci, ai)));
      better = b.CreateOr(
          better, b.CreateAnd(b.CreateNot(an),
                              b.CreateAnd(b.CreateNot(cn),
                                          b.CreateOr(strictly,
                                                     b.CreateAnd(same, b.CreateICmpSLT(ci, ai))))));
    }
    return better;
  }

  TargetCaps caps_;
  std::string arch_;
  std::optional<RowMapping> forced_;
};

void init_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::string print_module(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os, nullptr);
  os.flush();
  return text;
}

} // namespace

RowMapping nvptx_row_mapping(const LoopProgram& p, const Kernel& k) {
  RowMapping m;
  if (k.rnumel < 1) { // an empty row: nothing to vectorize or keep
    m.block = kWarp;
    return m;
  }
  // Many short rows: a thread per row, looping over r alone, kShortRowBlock rows per block, as
  // long as that still gives every multiprocessor a block (convnet's pooling kernel, 1M rows of
  // 4, spent 87% of the graph's time with 32-thread blocks, 28 lanes of each warp idle).
  if (k.rnumel <= kShortRow && k.xnumel >= kFewRows * kShortRowBlock / 2) {
    m.block = 0;
    m.rows = kShortRowBlock;
    return m;
  }
  KernelTraits t = kernel_traits(p, k);
  // One 16-byte access of the narrowest element (8 bf16, 4 f32), when vectors tile the row.
  m.vec = std::max(1, std::min(8, 16 / std::max(1, t.narrow)));
  while (m.vec > 1 && k.rnumel % m.vec != 0) m.vec /= 2;
  int64_t vectors = (k.rnumel + m.vec - 1) / m.vec;
  // A row that several stages walk stays in registers when each thread holds at most
  // kMaxChunks vectors: the row is read once. Small blocks (128 threads, up to 8 vectors each)
  // keep many rows in flight per multiprocessor, which hides the barriers between the stages:
  // on an H200, norms (8192 x 4096) ran at 80% of copy bandwidth with 128 threads, 74% with
  // 256, 51% with 512 and 27% with 1024 (f32).
  if (t.reduces && t.loop_stages >= 2 && t.same_row_reads) {
    // With fewer rows than blocks the device can hold, a row gets more threads instead (one
    // vector each where 1024 threads cover it): the rows in flight are all there is.
    int64_t per_thread = k.xnumel < kFewRows ? 1 : kMaxChunks;
    int block = pow2_at_least((vectors + per_thread - 1) / per_thread, kPersistentBlock, kMaxBlock);
    int64_t chunks = (vectors + block - 1) / block;
    if (chunks <= kMaxChunks) {
      m.block = block;
      m.chunks = int(chunks);
      m.persistent = true;
      return m;
    }
  }
  m.block = pow2_at_least(vectors, kWarp, kMaxBlock);
  return m;
}

std::vector<RowMapping> nvptx_mapping_candidates(const LoopProgram& p, const Kernel& k) {
  const RowMapping h = nvptx_row_mapping(p, k);
  std::vector<RowMapping> c = {h};
  auto add = [&](const RowMapping& m) {
    if (std::find(c.begin(), c.end(), m) == c.end()) c.push_back(m);
  };
  if (k.rnumel < 1) return c;
  if (h.block == 0) {
    // A thread per row: other block sizes, and a warp per row (one element per access).
    for (int rows : {64, 128, 256, 512, 1024}) {
      RowMapping m = h;
      m.rows = rows;
      add(m);
    }
    RowMapping warp;
    warp.block = kWarp;
    add(warp);
    return c;
  }
  const int64_t vectors = (k.rnumel + h.vec - 1) / h.vec;
  const int widest = pow2_at_least(vectors, kWarp, kMaxBlock); // a vector for every thread
  if (h.persistent) {
    // The row in registers with other thread counts: fewer threads hold more vectors each
    // (more rows in flight), more threads fewer (fewer registers).
    for (int block = kWarp; block <= widest; block *= 2) {
      int64_t chunks = (vectors + block - 1) / block;
      if (chunks > kMaxChunks) continue;
      RowMapping m = h;
      m.block = block;
      m.chunks = int(chunks);
      add(m);
    }
  }
  // The looping form: threads stride over the row, each stage reads it again.
  for (int block = kWarp; block <= widest; block *= 2) {
    if (block < h.block / 4 && !h.persistent) continue; // far fewer threads than the row wants
    RowMapping m = h;
    m.persistent = false;
    m.chunks = 1;
    m.block = block;
    add(m);
  }
  return c;
}

std::string format_mapping(const RowMapping& m) {
  if (m.block == 0) return "rows=" + std::to_string(m.rows);
  std::string s = "block=" + std::to_string(m.block) + " vec=" + std::to_string(m.vec);
  if (m.persistent) s += " persistent chunks=" + std::to_string(m.chunks);
  return s;
}

std::unique_ptr<Target> make_nvptx_target(const std::string& arch) {
  return std::make_unique<NvptxTarget>(arch);
}

std::vector<PtxKernel> generate_ptx(const LoopProgram& p, const Schedule& s,
                                    const std::string& arch, const std::string& libdevice) {
  std::vector<PtxRequest> all;
  for (const Kernel& k : s.kernels) all.push_back({&k, std::nullopt});
  return generate_ptx(p, all, arch, libdevice);
}

std::vector<PtxKernel> generate_ptx(const LoopProgram& p, const std::vector<PtxRequest>& kernels,
                                    const std::string& arch, const std::string& libdevice) {
  init_nvptx();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!t) throw Error("", "LLVM has no NVPTX back end: " + err);
  // Multiplies and adds contract into fma, as nvcc compiles PyTorch's kernels (-fmad=true).
  llvm::TargetOptions to;
  to.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      kTriple, arch, "", to, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Default));
  if (!tm) throw Error("", "cannot create an NVPTX target machine for " + arch);
  auto lib = llvm::MemoryBuffer::getFile(libdevice);
  if (!lib) throw Error(libdevice, "cannot read libdevice: " + lib.getError().message());
  std::vector<PtxKernel> out;
  for (const PtxRequest& request : kernels) {
    assert(request.kernel && "a PTX request names its kernel");
    const Kernel& k = *request.kernel;
    llvm::LLVMContext ctx;
    auto m = std::make_unique<llvm::Module>(k.name, ctx);
    m->setSourceFileName(k.name);
    NvptxTarget target(arch);
    if (request.mapping) target.force_mapping(*request.mapping);
    PtxKernel pk;
    pk.name = k.name;
    pk.args = k.inputs;
    for (int o : k.outputs)
      if (std::find(pk.args.begin(), pk.args.end(), o) == pk.args.end()) pk.args.push_back(o);
    pk.xnumel = k.xnumel;
    pk.mapping = target.row_mapping(p, k);
    pk.block = pk.mapping.block > 0 ? pk.mapping.block : pk.mapping.rows;
    pk.rows = pk.mapping.block > 0 ? 1 : pk.mapping.rows;
    std::optional<PassTimer> timer(std::in_place, "emit LLVM IR");
    emit_kernel(target, *m, p, k, pk.args, std::vector<bool>(pk.args.size(), true));
    std::string verr;
    llvm::raw_string_ostream vos(verr);
    if (llvm::verifyModule(*m, &vos))
      throw Error("", "internal error: generated kernel " + k.name + " is invalid: " + vos.str());
    pk.ll = print_module(*m);
    // libdevice: only the functions used, then the NVPTX pipeline (NVVMReflect included). The
    // bitcode is read lazily (only the used functions' bodies are materialized) and not at all
    // for a kernel that calls none: parsing all of it per kernel dominated compile time.
    timer.emplace("link libdevice");
    bool calls_libdevice = std::any_of(m->begin(), m->end(), [](const llvm::Function& f) {
      return f.isDeclaration() && f.getName().starts_with("__nv_");
    });
    if (calls_libdevice) {
      auto libmod = llvm::getLazyBitcodeModule(lib.get()->getMemBufferRef(), ctx);
      if (!libmod) {
        llvm::consumeError(libmod.takeError());
        throw Error(libdevice, "cannot parse libdevice");
      }
      (*libmod)->setTargetTriple(kTriple);
      (*libmod)->setDataLayout(kLayout);
      if (llvm::Linker::linkModules(*m, std::move(*libmod), llvm::Linker::LinkOnlyNeeded))
        throw Error("", "internal error: libdevice does not link into " + k.name);
    }
    m->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
    timer.emplace("LLVM O2");
    {
      llvm::LoopAnalysisManager lam;
      llvm::FunctionAnalysisManager fam;
      llvm::CGSCCAnalysisManager cgam;
      llvm::ModuleAnalysisManager mam;
      llvm::PassBuilder pb(tm.get());
      pb.registerModuleAnalyses(mam);
      pb.registerCGSCCAnalyses(cgam);
      pb.registerFunctionAnalyses(fam);
      pb.registerLoopAnalyses(lam);
      pb.crossRegisterProxies(lam, fam, cgam, mam);
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(*m, mam);
    }
    timer.emplace("NVPTX back end (PTX)");
    llvm::SmallVector<char, 0> ptx;
    llvm::raw_svector_ostream os(ptx);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      throw Error("", "internal error: the NVPTX back end cannot emit PTX");
    pm.run(*m);
    pk.ptx.assign(ptx.begin(), ptx.end());
    out.push_back(std::move(pk));
  }
  return out;
}

} // namespace fxc
