// The NVPTX target: one block per row (a thread per row for many short rows), warp-shuffle
// block reductions, libdevice math, PTX through LLVM's NVPTX back end.
#include "codegen/llvm_codegen.h"
#include "codegen/target.h"
#include "frontend/diag.h"
#include "frontend/pass_timer.h"
#include "runtime/thread_pool.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

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
constexpr uint32_t kRegistersPerSm = 65536; ///< sm_50 on
constexpr uint32_t kMaxBlocksPerSm = 32;    ///< sm_90's limit (16 or 24 on some; ptxas caps it)
constexpr uint32_t kMaxRegisters = 64;      ///< a thread's budget (.minnctapersm)
constexpr int kMaxChunks = 8;               ///< vectors of a persistent row per thread
constexpr int kPersistentBlock = 128;       ///< smallest block for a persistent row
/// Fewer rows than this leave multiprocessors idle with 128-thread blocks (132 on an H100/H200).
constexpr int64_t kFewRows = 264;
/// Rows of at most this many elements get a thread each (the short-row form) when there are
/// enough of them: a block per row would leave most of a warp idle.
constexpr int64_t kShortRow = 32;
/// Threads (rows) per block of the short-row form.
constexpr int kShortRowBlock = 256;
/// Block reductions over at most this many warps read every warp's slot in every thread.
constexpr int kDirectWarps = 8;
/// Multiprocessors of an H100 or H200 (SXM).
constexpr int64_t kMultiprocessors = 132;
/// Threads per block of the packed form (about: whole rows of a vector per thread each).
constexpr int kPackedThreads = 256;
/// Rows per block of the pipelined persistent candidates.
constexpr int kPipelinedRows[] = {1, 2, 4, 8};

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
  case VOp::Tan:
    base = "tan";
    break;
  case VOp::Asin:
    base = "asin";
    break;
  case VOp::Acos:
    base = "acos";
    break;
  case VOp::Atan:
    base = "atan";
    break;
  case VOp::Sinh:
    base = "sinh";
    break;
  case VOp::Cosh:
    base = "cosh";
    break;
  case VOp::Asinh:
    base = "asinh";
    break;
  case VOp::Acosh:
    base = "acosh";
    break;
  case VOp::Atanh:
    base = "atanh";
    break;
  case VOp::Log2:
    base = "log2";
    break;
  case VOp::Log10:
    base = "log10";
    break;
  case VOp::Atan2:
    base = "atan2";
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

  /// `void name(ptr buf0, ..., i64 xnumel)`: block c computes rows c * map.rows on, map.rows of
  /// them in turn (one row where map.rows is 1); its threads stride over r.
  /// In the short-row form (map.block 0) thread t of block c computes row c * ntid + t alone
  /// (none past xnumel); in the packed form, vector t % map.block of row c * map.rows +
  /// t / map.block.
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
    llvm::NamedMDNode* ann = m.getOrInsertNamedMetadata("nvvm.annotations");
    ann->addOperand(llvm::MDNode::get(ctx, md));
    // The launch's block size (.maxntid): ptxas allocates registers for it (and end_kernel may
    // bound them further).
    threads_ = uint32_t(map.threads());
    llvm::Metadata* ntid[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, "maxntidx"),
                              llvm::ValueAsMetadata::get(b.getInt32(threads_))};
    ann->addOperand(llvm::MDNode::get(ctx, ntid));
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    entry->buffers.clear();
    for (size_t i = 0; i < noalias.size(); ++i) entry->buffers.push_back(f->getArg(unsigned(i)));
    llvm::Value* xnumel = f->getArg(unsigned(noalias.size()));
    entry->xnumel = xnumel;
    block_ = map.block;
    llvm::Value* x =
        b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), b.getInt64Ty());
    if (map.block == 0 || map.packed) {
      llvm::Value* tid =
          b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), b.getInt64Ty());
      llvm::Value* lane = nullptr;
      llvm::Value* rows = nullptr;
      if (map.packed) {
        llvm::Value* per_row = b.getInt64(uint64_t(map.block));
        lane = b.CreateURem(tid, per_row, "lane");
        tid = b.CreateUDiv(tid, per_row);
        rows = b.getInt64(uint64_t(map.rows));
      } else {
        rows = b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x), b.getInt64Ty());
      }
      x = b.CreateAdd(b.CreateMul(x, rows, "", true, true), tid, "row", true, true);
      // Threads past the last row return at once; the others compute exactly one row.
      llvm::BasicBlock* none = llvm::BasicBlock::Create(ctx, "row.none", f);
      llvm::BasicBlock* one = llvm::BasicBlock::Create(ctx, "row.one", f);
      b.CreateCondBr(b.CreateICmpSLT(x, xnumel), one, none);
      b.SetInsertPoint(none);
      b.CreateRetVoid();
      b.SetInsertPoint(one);
      entry->xbegin = x;
      entry->xend = b.CreateAdd(x, b.getInt64(1), "", true, true);
      // A packed row's threads take a vector each (the emitter's r loop runs once).
      entry->rstart = lane ? lane : b.getInt64(0);
      entry->rstep = b.getInt64(lane ? uint64_t(map.block) : 1);
      return f;
    }
    // Block c computes rows [c * rows, min(c * rows + rows, xnumel)) in turn.
    llvm::Value* first = map.rows > 1 ? b.CreateMul(x, b.getInt64(uint64_t(map.rows))) : x;
    llvm::Value* past = b.CreateAdd(first, b.getInt64(uint64_t(map.rows)));
    entry->xbegin = first;
    entry->xend = b.CreateSelect(b.CreateICmpSLT(past, xnumel), past, xnumel);
    entry->rstart =
        b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), b.getInt64Ty());
    entry->rstep =
        b.CreateZExt(sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x), b.getInt64Ty());
    return f;
  }

  /// Block reduction: a butterfly shuffle within each warp, one shared slot per warp (slots of
  /// their own for each reduction, written once per row, so one barrier suffices; with several
  /// rows per block the emitter separates the rows where a row has only one reduction), then
  /// the per-warp results combined in the same fixed order by every thread (up to 8 warps: read
  /// all slots) or by a butterfly over them whose lane 0's result is broadcast. The result is
  /// deterministic and the same in every thread.
  llvm::Value* combine_partial(llvm::IRBuilderBase& b, ReduceOp op, llvm::Value* partial,
                               llvm::Value** index) override {
    assert(block_ >= kWarp && block_ % kWarp == 0 && "a block reduction needs whole warps");
    llvm::Module& m = *b.GetInsertBlock()->getModule();
    llvm::Function* f = b.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = m.getContext();
    int nwarps = block_ / kWarp;
    bool is_bool = partial->getType()->isIntegerTy(1);
    llvm::Type* st = is_bool ? b.getInt8Ty() : partial->getType();
    llvm::Value* v = partial;
    llvm::Value* vi = index ? *index : nullptr;
    // Folds (c, ci) into (*a, *ai) (no index: ai null).
    auto both = [&](llvm::Value** a, llvm::Value** ai, llvm::Value* c, llvm::Value* ci) {
      if (!ai) {
        *a = combine(b, op, *a, c);
        return;
      }
      llvm::Value* take = arg_better(b, op == ReduceOp::ArgMax, c, ci, *a, *ai);
      *a = b.CreateSelect(take, c, *a);
      *ai = b.CreateSelect(take, ci, *ai);
    };
    // One butterfly step at `offset` over the warp.
    auto step = [&](int offset) {
      llvm::Value* c = shuffle(b, v, offset);
      both(&v, vi ? &vi : nullptr, c, vi ? shuffle(b, vi, offset) : nullptr);
    };
    auto broadcast = [&] {
      // Lane 0's result everywhere: lanes may differ in the sign of a zero or a NaN's payload.
      v = shuffle(b, v, 0, true);
      if (vi) vi = shuffle(b, vi, 0, true);
    };
    for (int o = kWarp / 2; o >= 1; o /= 2) step(o);
    if (nwarps == 1) {
      broadcast();
      if (index) *index = vi;
      return v;
    }
    llvm::GlobalVariable* vals = shared_array(m, st, nwarps);
    llvm::GlobalVariable* idxs = index ? shared_array(m, b.getInt64Ty(), nwarps) : nullptr;
    auto [lane, warp] = lane_and_warp(b);
    auto slot = [&](llvm::GlobalVariable* g, llvm::Value* i) { return warp_slot(b, g, i); };
    auto to_mem = [&](llvm::Value* x) { return is_bool ? b.CreateZExt(x, b.getInt8Ty()) : x; };
    auto from_mem = [&](llvm::Value* x) { return is_bool ? b.CreateICmpNE(x, b.getInt8(0)) : x; };
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
    if (nwarps <= kDirectWarps) {
      // Every thread reads every slot (vector loads) and folds them as a butterfly's lane 0
      // would: at offset o, slot j < o takes in slot j + o.
      auto all = [&](llvm::GlobalVariable* g) {
        llvm::Type* et = llvm::cast<llvm::ArrayType>(g->getValueType())->getElementType();
        llvm::Value* vec = b.CreateAlignedLoad(llvm::FixedVectorType::get(et, unsigned(nwarps)), g,
                                               g->getAlign().valueOrOne());
        std::vector<llvm::Value*> out;
        for (int j = 0; j < nwarps; ++j) out.push_back(b.CreateExtractElement(vec, uint64_t(j)));
        return out;
      };
      std::vector<llvm::Value*> sv = all(vals), si;
      for (llvm::Value*& x : sv) x = from_mem(x);
      if (idxs) si = all(idxs);
      for (int o = nwarps / 2; o >= 1; o /= 2)
        for (int j = 0; j < o; ++j)
          both(&sv[size_t(j)], idxs ? &si[size_t(j)] : nullptr, sv[size_t(j + o)],
               idxs ? si[size_t(j + o)] : nullptr);
      v = sv[0];
      vi = idxs ? si[0] : nullptr;
    } else {
      // Lane l holds warp l mod nwarps: a butterfly over the low log2(nwarps) lane bits.
      llvm::Value* src = b.CreateAnd(lane, b.getInt32(nwarps - 1));
      v = from_mem(b.CreateLoad(st, slot(vals, src)));
      if (idxs) vi = b.CreateLoad(b.getInt64Ty(), slot(idxs, src));
      for (int o = nwarps / 2; o >= 1; o /= 2) step(o);
      broadcast();
    }
    if (index) *index = vi;
    return v;
  }

  /// combine_partial's butterfly, slots and barrier for a tuple merged by `merge`: each value
  /// shuffles and has slots of its own, the tuple shares the one barrier.
  std::vector<llvm::Value*> combine_joint(llvm::IRBuilderBase& b,
                                          const std::vector<llvm::Value*>& partial,
                                          const JointMerge& merge) override {
    assert(block_ >= kWarp && block_ % kWarp == 0 && "a block reduction needs whole warps");
    llvm::Module& m = *b.GetInsertBlock()->getModule();
    llvm::Function* f = b.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = m.getContext();
    int nwarps = block_ / kWarp;
    std::vector<llvm::Value*> v = partial;
    // One butterfly step at `offset`, each operand summarizing `threads` threads.
    auto step = [&](int offset, int threads) {
      std::vector<llvm::Value*> c;
      for (llvm::Value* x : v) c.push_back(shuffle(b, x, offset));
      v = merge(b, v, c, threads);
    };
    auto broadcast = [&] {
      for (llvm::Value*& x : v) x = shuffle(b, x, 0, true);
    };
    for (int o = kWarp / 2, t = 1; o >= 1; o /= 2, t *= 2) step(o, t);
    if (nwarps == 1) {
      broadcast();
      return v;
    }
    std::vector<llvm::GlobalVariable*> vals;
    for (llvm::Value* x : v) vals.push_back(shared_array(m, x->getType(), nwarps));
    auto [lane, warp] = lane_and_warp(b);
    auto slot = [&](llvm::GlobalVariable* g, llvm::Value* i) { return warp_slot(b, g, i); };
    llvm::BasicBlock* put = llvm::BasicBlock::Create(ctx, "red.put", f);
    llvm::BasicBlock* joined = llvm::BasicBlock::Create(ctx, "red.joined", f);
    b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt32(0)), put, joined);
    b.SetInsertPoint(put);
    for (size_t i = 0; i < v.size(); ++i) b.CreateStore(v[i], slot(vals[i], warp));
    b.CreateBr(joined);
    b.SetInsertPoint(joined);
    barrier(b);
    if (nwarps <= kDirectWarps) {
      // Every thread reads every slot and folds them as a butterfly's lane 0 would.
      std::vector<std::vector<llvm::Value*>> sv(static_cast<size_t>(nwarps));
      for (llvm::GlobalVariable* g : vals) {
        llvm::Type* et = llvm::cast<llvm::ArrayType>(g->getValueType())->getElementType();
        llvm::Value* vec = b.CreateAlignedLoad(llvm::FixedVectorType::get(et, unsigned(nwarps)), g,
                                               g->getAlign().valueOrOne());
        for (int j = 0; j < nwarps; ++j)
          sv[size_t(j)].push_back(b.CreateExtractElement(vec, uint64_t(j)));
      }
      for (int o = nwarps / 2; o >= 1; o /= 2)
        for (int j = 0; j < o; ++j)
          sv[size_t(j)] = merge(b, sv[size_t(j)], sv[size_t(j + o)], kWarp * nwarps / (2 * o));
      return sv[0];
    }
    // Lane l holds warp l mod nwarps: a butterfly over the low log2(nwarps) lane bits.
    llvm::Value* src = b.CreateAnd(lane, b.getInt32(nwarps - 1));
    for (size_t i = 0; i < v.size(); ++i) v[i] = b.CreateLoad(v[i]->getType(), slot(vals[i], src));
    for (int o = nwarps / 2; o >= 1; o /= 2) step(o, kWarp * nwarps / (2 * o));
    broadcast();
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

  /// rsqrt.approx (what PyTorch's rsqrtf compiles to); for 16-bit results exp and erf within
  /// a relative error of 2^-18 (Target::approx_math), without branches: exp by ex2.approx.ftz
  /// (of one fma for exp(u - c)), erf by a rational function (kHalfErf) with one rcp.approx.
  llvm::Value* approx_math(llvm::IRBuilderBase& b, llvm::Module&, VOp op,
                           const std::vector<llvm::Value*>& args, bool half) override {
    llvm::Value* a = args[0];
    if (!a->getType()->isFloatTy()) return nullptr;
    auto k = [&](double v) { return f32(b, v); };
    switch (op) {
    case VOp::Rsqrt:
      return b.CreateIntrinsic(llvm::Intrinsic::nvvm_rsqrt_approx_f, {}, {a});
    case VOp::Exp: {
      if (!half) return nullptr;
      // ex2.approx.ftz is one instruction (the plain form adds a range fix-up for denormal
      // results); results below the normal range flush to zero. exp(u - c) (softmax's terms)
      // is ex2(fma(u, log2 e, -(c log2 e))), one instruction less than rounding u - c first
      // (c log2 e is computed once where c is per row).
      const double log2e = 1.4426950408889634;
      auto* d = llvm::dyn_cast<llvm::BinaryOperator>(a);
      llvm::Value* t = nullptr;
      if (d && d->getOpcode() == llvm::Instruction::FSub)
        t = fma(b, d->getOperand(0), k(log2e), b.CreateFMul(d->getOperand(1), k(-log2e)));
      else
        t = b.CreateFMul(a, k(log2e));
      return b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {t});
    }
    case VOp::Erf: {
      if (!half) return nullptr;
      // x P(x^2) / Q(x^2) with x clamped to +-kHalfErf.clamp (NaN stays NaN).
      auto [xp, q] = odd_rational(b, kHalfErf, a);
      return b.CreateFMul(xp, q);
    }
    default:
      return nullptr;
    }
  }

  /// y / (1 + 2^(y P(y^2))) (kHalfPhi): y squared, four fma, a product, ex2.approx.ftz, an add,
  /// rcp.approx.ftz and the product with y (an fma when a sum follows, as in gelu(y) + x).
  llvm::Value* approx_gelu(llvm::IRBuilderBase& b, llvm::Value* y) override {
    if (!y->getType()->isFloatTy()) return nullptr;
    const HalfPhi& e = kHalfPhi;
    llvm::Value* t = b.CreateFMul(y, y);
    llvm::Value* p = f32(b, e.p[HalfPhi::kTerms - 1]);
    for (int i = HalfPhi::kTerms - 2; i >= 0; --i) p = fma(b, p, t, f32(b, e.p[i]));
    llvm::Value* z =
        b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {b.CreateFMul(y, p)});
    llvm::Value* phi = b.CreateIntrinsic(llvm::Intrinsic::nvvm_rcp_approx_ftz_f, {},
                                         {b.CreateFAdd(z, f32(b, 1.0))});
    return b.CreateFMul(y, phi);
  }

  /// cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32 (sm_80 on): one conversion per pair of lanes.
  llvm::Value* pack_half(llvm::IRBuilderBase& b, const std::vector<llvm::Value*>& lanes,
                         bool bf16) override {
    if (lanes.size() % 2 != 0 || sm_version() < 80) return nullptr;
    auto* vt = llvm::FixedVectorType::get(b.getInt32Ty(), unsigned(lanes.size() / 2));
    llvm::Value* vec = llvm::PoisonValue::get(vt);
    for (size_t i = 0; i + 1 < lanes.size(); i += 2) {
      // The first operand goes to the upper half.
      llvm::Value* pair = b.CreateIntrinsic(bf16 ? llvm::Intrinsic::nvvm_ff2bf16x2_rn
                                                 : llvm::Intrinsic::nvvm_ff2f16x2_rn,
                                            {}, {lanes[i + 1], lanes[i]});
      vec = b.CreateInsertElement(vec, b.CreateBitCast(pair, b.getInt32Ty()), uint64_t(i / 2));
    }
    return vec;
  }

  /// cvta.to.global of `ptr` in inline assembly: loads through it are plain ld.global.
  llvm::Value* opaque_global(llvm::IRBuilderBase& b, llvm::Value* ptr) override {
    auto* ft =
        llvm::FunctionType::get(llvm::PointerType::get(b.getContext(), 1), {ptr->getType()}, false);
    return b.CreateCall(ft, llvm::InlineAsm::get(ft, "cvta.to.global.u64 $0, $1;", "=l,l", false),
                        {ptr});
  }

  /// ld.global.nc.L1::no_allocate.L2::256B: past L1 (nothing of the row is read twice), and
  /// L2 fetching whole 256-byte sectors pairs from DRAM. bf16 norms on an H200: 77.0% -> 77.3%
  /// of copy bandwidth, and with the L2 prefetch of rows ahead (prefetch()) about 80%.
  llvm::Value* streaming_load(llvm::IRBuilderBase& b, llvm::Type* vt, llvm::Value* ptr) override {
    if (vt->getPrimitiveSizeInBits().getFixedValue() != 128) return nullptr;
    llvm::Type* i32 = b.getInt32Ty();
    auto* rt = llvm::StructType::get(b.getContext(), {i32, i32, i32, i32});
    llvm::Value* g = global(b, ptr);
    auto* ft = llvm::FunctionType::get(rt, {g->getType()}, false);
    auto* asm_ = llvm::InlineAsm::get(
        ft, "ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l",
        false);
    llvm::CallInst* call = b.CreateCall(ft, asm_, {g});
    call->setOnlyReadsMemory();
    call->setDoesNotThrow();
    auto* v4 = llvm::FixedVectorType::get(i32, 4);
    llvm::Value* v = llvm::PoisonValue::get(v4);
    for (unsigned i = 0; i < 4; ++i)
      v = b.CreateInsertElement(v, b.CreateExtractValue(call, {i}), uint64_t(i));
    return b.CreateBitCast(v, vt);
  }

  /// prefetch.global.L2, predicated on `when`.
  bool prefetch(llvm::IRBuilderBase& b, llvm::Value* ptr, llvm::Value* when) override {
    llvm::Value* g = global(b, ptr);
    auto* ft = llvm::FunctionType::get(b.getVoidTy(), {g->getType(), b.getInt32Ty()}, false);
    auto* asm_ = llvm::InlineAsm::get(
        ft, "{ .reg .pred p; setp.ne.u32 p, $1, 0; @p prefetch.global.L2 [$0]; }", "l,r", true);
    b.CreateCall(ft, asm_, {g, b.CreateZExt(when, b.getInt32Ty())});
    return true;
  }

  void end_stage(llvm::IRBuilderBase& b) override { barrier(b); }

  /// .minnctapersm for at most kMaxRegisters registers a thread when the kernel is `lean` and
  /// calls no libdevice: such row kernels are memory-bound and want blocks resident while others
  /// wait on their loads (bf16 norms on an H200: 72 registers, 7 blocks of 128 threads a
  /// multiprocessor, 73.5% of copy bandwidth; at 64, 8 blocks and 75.3%, no spills). Kernels
  /// with more state spill under that bound (training's row kernels of several inputs and
  /// outputs: 72 to 251 registers), and libdevice's branchy math needs more (f32 norms with
  /// erff: 96 registers, 228 bytes spilled at 64).
  void end_kernel(llvm::Module& m, llvm::IRBuilderBase& b, llvm::Function* f, bool lean) override {
    b.CreateRetVoid();
    if (!lean) return;
    for (const llvm::BasicBlock& bb : *f)
      for (const llvm::Instruction& i : bb)
        if (const auto* call = llvm::dyn_cast<llvm::CallInst>(&i))
          if (const llvm::Function* callee = call->getCalledFunction())
            if (callee->getName().starts_with("__nv_")) return;
    uint32_t blocks = std::min(kMaxBlocksPerSm, kRegistersPerSm / (kMaxRegisters * threads_));
    if (blocks < 2) return;
    llvm::LLVMContext& ctx = m.getContext();
    llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, "minctasm"),
                            llvm::ValueAsMetadata::get(b.getInt32(blocks))};
    m.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, md));
  }

private:
  /// `ptr` in the global address space (converted unless it is already).
  llvm::Value* global(llvm::IRBuilderBase& b, llvm::Value* ptr) {
    return ptr->getType()->getPointerAddressSpace() == 1 ? ptr : opaque_global(b, ptr);
  }
  static llvm::Value* f32(llvm::IRBuilderBase& b, double v) {
    return llvm::ConstantFP::get(b.getFloatTy(), v);
  }
  static llvm::Value* fma(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y, llvm::Value* z) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {x, y, z});
  }
  /// e's rational at `a`: {x P(x^2), 1 / Q(x^2)} with x = a clamped to +-e.clamp (min/max.NaN:
  /// NaN stays NaN), Horner's rule with fma, the reciprocal by rcp.approx.ftz.
  static std::pair<llvm::Value*, llvm::Value*> odd_rational(llvm::IRBuilderBase& b,
                                                            const HalfErf& e, llvm::Value* a) {
    auto horner = [&](const float* c, llvm::Value* s) {
      llvm::Value* p = f32(b, c[HalfErf::kTerms - 1]);
      for (int i = HalfErf::kTerms - 2; i >= 0; --i) p = fma(b, p, s, f32(b, c[i]));
      return p;
    };
    llvm::Value* x = b.CreateBinaryIntrinsic(
        llvm::Intrinsic::minimum,
        b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, f32(b, -e.clamp)), f32(b, e.clamp));
    llvm::Value* s = b.CreateFMul(x, x);
    llvm::Value* q =
        b.CreateIntrinsic(llvm::Intrinsic::nvvm_rcp_approx_ftz_f, {}, {horner(e.q, s)});
    return {b.CreateFMul(x, horner(e.p, s)), q};
  }

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
  /// This thread's lane in its warp and its warp in the block.
  static std::pair<llvm::Value*, llvm::Value*> lane_and_warp(llvm::IRBuilderBase& b) {
    llvm::Value* tid = sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    llvm::Value* lane = b.CreateAnd(tid, b.getInt32(kWarp - 1));
    return {lane, b.CreateLShr(tid, b.getInt32(5))};
  }
  /// The address of element `i` (an i32) of the shared per-warp array `g`.
  static llvm::Value* warp_slot(llvm::IRBuilderBase& b, llvm::GlobalVariable* g, llvm::Value* i) {
    return b.CreateInBoundsGEP(g->getValueType(), g,
                               {b.getInt64(0), b.CreateZExt(i, b.getInt64Ty())});
  }
  static void barrier(llvm::IRBuilderBase& b) {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  }
  /// A new shared array of `n` elements (16-byte aligned: read as vectors).
  static llvm::GlobalVariable* shared_array(llvm::Module& m, llvm::Type* t, int n) {
    auto* at = llvm::ArrayType::get(t, uint64_t(n));
    auto* g = new llvm::GlobalVariable(m, at, false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(at), "fxc.reduce", nullptr,
                                       llvm::GlobalValue::NotThreadLocal, 3);
    g->setAlignment(llvm::Align(16));
    return g;
  }
  static llvm::Value* combine(llvm::IRBuilderBase& b, ReduceOp op, llvm::Value* a, llvm::Value* c) {
    bool fl = a->getType()->isFloatingPointTy();
    switch (op) {
    case ReduceOp::Sum:
      return fl ? b.CreateFAdd(a, c) : b.CreateAdd(a, c);
    case ReduceOp::Prod:
      if (a->getType()->isIntegerTy(1)) return b.CreateAnd(a, c);
      return fl ? b.CreateFMul(a, c) : b.CreateMul(a, c);
    case ReduceOp::Any:
      return b.CreateOr(a, c);
    case ReduceOp::Max:
    case ReduceOp::Min: {
      bool mx = op == ReduceOp::Max;
      if (a->getType()->isIntegerTy(1)) return mx ? b.CreateOr(a, c) : b.CreateAnd(a, c);
      if (!fl)
        return b.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, a, c);
      // NaN-propagating (max.NaN / min.NaN on sm_80 on): one instruction a step of a
      // warp's butterfly instead of two compares and two selects.
      return b.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, a,
                                     c);
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
  int block_ = 0;        ///< threads per row of the kernel being emitted (begin_kernel)
  uint32_t threads_ = 0; ///< threads per block of the kernel being emitted (begin_kernel)

  /// 90 for "sm_90" (0 when unknown).
  int sm_version() const {
    if (arch_.rfind("sm_", 0) != 0) return 0;
    int v = 0;
    for (size_t i = 3; i < arch_.size() && std::isdigit(static_cast<unsigned char>(arch_[i])); ++i)
      v = v * 10 + (arch_[i] - '0');
    return v;
  }
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
  // Without reductions, rows whose vectors are fewer than a warp or no power of two are packed
  // side by side, a vector a thread: a power-of-two block per row would leave threads idle
  // (q, k and v copied out of a [B, T, 3·H·D] projection in rows of 16 vectors ran 16 of 32
  // threads; rows of 192 vectors 192 of 256).
  if (!t.reduces && k.stages.size() == 1 && vectors < kMaxBlock && vectors != m.block) {
    m.packed = true;
    m.block = int(vectors);
    m.rows = std::max(1, kPackedThreads / m.block);
  }
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
  if (h.packed)
    for (int threads : {128, 512, 1024}) { // other block sizes, whole rows each
      RowMapping m = h;
      m.rows = std::max(1, threads / h.block);
      if (m.threads() <= kMaxBlock) add(m);
    }
  if (h.persistent) {
    // The row in registers with other thread counts: fewer threads hold more vectors each
    // (more rows in flight), more threads fewer (fewer registers).
    for (int block = kWarp; block <= widest; block *= 2) {
      int64_t chunks = (vectors + block - 1) / block;
      if (chunks > kMaxChunks) continue;
      RowMapping m = h;
      m.block = block;
      m.chunks = int(chunks);
      m.rows = 1;
      add(m);
    }
    // Several rows per block, the next one's loads in flight while a row computes, as long
    // as every multiprocessor still gets a block.
    for (int rows : kPipelinedRows) {
      RowMapping m = h;
      m.rows = rows;
      if ((k.xnumel + rows - 1) / rows >= kMultiprocessors) add(m);
    }
  }
  // The looping form: threads stride over the row, each stage reads it again.
  for (int block = kWarp; block <= widest; block *= 2) {
    if (block < h.block / 4 && !h.persistent) continue; // far fewer threads than the row wants
    RowMapping m = h;
    m.persistent = false;
    m.packed = false;
    m.chunks = 1;
    m.rows = 1;
    m.block = block;
    add(m);
  }
  return c;
}

std::string format_mapping(const RowMapping& m) {
  if (m.block == 0) return "rows=" + std::to_string(m.rows);
  std::string s = "block=" + std::to_string(m.block) + " vec=" + std::to_string(m.vec);
  if (m.persistent) s += " persistent chunks=" + std::to_string(m.chunks);
  if (m.rows > 1) s += " rows=" + std::to_string(m.rows);
  if (m.packed) s += " packed";
  return s;
}

std::vector<PtxKernel> generate_ptx(const LoopProgram& p, const Schedule& s,
                                    const std::string& arch, const std::string& libdevice,
                                    bool ptx) {
  std::vector<PtxRequest> all;
  for (const Kernel& k : s.kernels) all.push_back({&k, std::nullopt});
  return generate_ptx(p, all, arch, libdevice, ptx);
}

namespace {

// The most parameter bytes a kernel may take in PTX before ISA 8.1 (ptxas: "uses too much
// parameter space (0x1510 bytes, 0x1100 max)"); 8.1 allows 32764 on sm_70 and later.
constexpr uint64_t kPtx78ParamBytes = 0x1100;

/// The largest parameter space of a function defined in `m`, in bytes, laid out as PTX lays
/// out .param space: each argument at its ABI alignment.
uint64_t max_param_bytes(const llvm::Module& m) {
  const llvm::DataLayout& dl = m.getDataLayout();
  uint64_t most = 0;
  for (const llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    uint64_t bytes = 0;
    for (const llvm::Argument& a : f.args()) {
      llvm::Type* ty = a.getType();
      bytes = llvm::alignTo(bytes, dl.getABITypeAlign(ty).value()) + dl.getTypeAllocSize(ty);
    }
    most = std::max(most, bytes);
  }
  return most;
}

/// An NVPTX target machine for `arch` (one of nvptx_processors()) to compile `m`: PTX ISA 7.8,
/// LLVM's default for sm_90, unless a kernel of `m` takes more parameter space than 7.8 allows
/// (a cat of a thousand inputs in an EfficientNet-B0 train graph): then ISA 8.1.
std::unique_ptr<llvm::TargetMachine> nvptx_machine(const llvm::Target& t, const std::string& arch,
                                                   const llvm::Module& m) {
  // Multiplies and adds contract into fma, as nvcc compiles PyTorch's kernels (-fmad=true).
  llvm::TargetOptions to;
  to.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  const char* features = max_param_bytes(m) > kPtx78ParamBytes ? "+ptx81" : "";
  std::unique_ptr<llvm::TargetMachine> tm(t.createTargetMachine(
      kTriple, arch, features, to, std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Default));
  if (!tm) throw Error("", "cannot create an NVPTX target machine for " + arch);
  return tm;
}

/// `m` (its kernels as generated) compiled to PTX: the libdevice functions it calls linked in,
/// then the NVPTX pipeline (NVVMReflect included) and the back end. `what` names it in errors;
/// `timer` times each step.
std::string compile_ptx_module(llvm::Module& m, llvm::TargetMachine& tm,
                               const llvm::MemoryBuffer& lib, const std::string& libdevice,
                               const std::string& what, std::optional<PassTimer>& timer) {
  // The bitcode is read lazily (only the used functions' bodies are materialized) and not at
  // all for a module that calls none: parsing all of it per kernel dominated compile time.
  timer.emplace("link libdevice");
  bool calls_libdevice = std::any_of(m.begin(), m.end(), [](const llvm::Function& f) {
    return f.isDeclaration() && f.getName().starts_with("__nv_");
  });
  if (calls_libdevice) {
    auto libmod = llvm::getLazyBitcodeModule(lib.getMemBufferRef(), m.getContext());
    if (!libmod) {
      llvm::consumeError(libmod.takeError());
      throw Error(libdevice, "cannot parse libdevice");
    }
    (*libmod)->setTargetTriple(kTriple);
    (*libmod)->setDataLayout(kLayout);
    if (llvm::Linker::linkModules(m, std::move(*libmod), llvm::Linker::LinkOnlyNeeded))
      throw Error("", "internal error: libdevice does not link into " + what);
  }
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  timer.emplace("LLVM O2");
  optimize_o2(m, &tm);
  timer.emplace("NVPTX back end (PTX)");
  return emit_machine_code(m, tm, false, "the NVPTX back end");
}

/// The PTX of one requested kernel, in a context of its own (its LLVM IR alone without `lib`).
PtxKernel generate_one_ptx(const llvm::Target& t, const LoopProgram& p, const PtxRequest& request,
                           const std::string& arch, const llvm::MemoryBuffer* lib,
                           const std::string& libdevice) {
  assert(request.kernel && "a PTX request names its kernel");
  const Kernel& k = *request.kernel;
  llvm::LLVMContext ctx;
  // LLVM's diagnostics are kept with the kernel, not printed from this worker thread.
  LlvmDiagnostics diags;
  collect_diagnostics(ctx, &diags);
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
  pk.block = pk.mapping.threads();
  pk.rows = pk.mapping.rows;
  std::optional<PassTimer> timer(std::in_place, "emit LLVM IR");
  emit_kernel(target, *m, p, k, pk.args, std::vector<bool>(pk.args.size(), true));
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(*m, &vos))
    throw Error("", "internal error: generated kernel " + k.name + " is invalid: " + vos.str());
  pk.ll = print_module(*m);
  if (!lib) return pk;
  std::unique_ptr<llvm::TargetMachine> tm = nvptx_machine(t, arch, *m);
  pk.ptx = compile_ptx_module(*m, *tm, *lib, libdevice, k.name, timer);
  throw_llvm_errors(diags, "the NVPTX back end, kernel " + k.name);
  pk.warnings = std::move(diags.warnings);
  return pk;
}

/// The NVPTX back end; throws fxc::Error when `arch` is not one of nvptx_processors(), before
/// LLVM sees it (it would warn from every thread that compiles and write `.target <arch>`).
const llvm::Target& nvptx_backend(const std::string& arch) {
  init_nvptx();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!t) throw Error("", "LLVM has no NVPTX back end: " + err);
  std::vector<std::string> known = nvptx_processors();
  if (std::find(known.begin(), known.end(), arch) == known.end()) {
    std::string list;
    for (const std::string& a : known) list += (list.empty() ? "" : ", ") + a;
    throw Error("",
                "unknown CUDA architecture '" + arch + "'; LLVM's NVPTX back end knows " + list);
  }
  return *t;
}

std::unique_ptr<llvm::MemoryBuffer> read_libdevice(const std::string& libdevice) {
  auto lib = llvm::MemoryBuffer::getFile(libdevice);
  if (!lib) throw Error(libdevice, "cannot read libdevice: " + lib.getError().message());
  return std::move(*lib);
}

/// The number in "sm_90a" (90), for ordering.
int arch_number(const std::string& a) {
  int v = 0;
  for (size_t i = 3; i < a.size() && std::isdigit(static_cast<unsigned char>(a[i])); ++i)
    v = v * 10 + (a[i] - '0');
  return v;
}

} // namespace

std::vector<std::string> nvptx_processors() {
  init_nvptx();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!t) return {};
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t->createMCSubtargetInfo(kTriple, "", ""));
  if (!sti) return {};
  std::vector<std::string> out;
  for (const llvm::SubtargetSubTypeKV& p : sti->getAllProcessorDescriptions()) out.push_back(p.Key);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(arch_number(a), a) < std::make_pair(arch_number(b), b);
  });
  return out;
}

std::vector<PtxKernel> generate_ptx(const LoopProgram& p, const std::vector<PtxRequest>& kernels,
                                    const std::string& arch, const std::string& libdevice,
                                    bool ptx) {
  const llvm::Target& t = nvptx_backend(arch);
  std::unique_ptr<llvm::MemoryBuffer> lib = ptx ? read_libdevice(libdevice) : nullptr;
  // Each kernel has a context (and target machine) of its own, so kernels compile on all the
  // hardware threads; each result lands at its request's index, so the output does not depend
  // on the schedule, and the first failure by index is the one reported.
  std::vector<PtxKernel> out(kernels.size());
  std::vector<std::exception_ptr> failed(kernels.size());
  const int depth = pass_depth();
  auto compile = [&](int64_t i) {
    ScopedPassDepth nest(depth);
    try {
      out[size_t(i)] = generate_one_ptx(t, p, kernels[size_t(i)], arch, lib.get(), libdevice);
    } catch (...) {
      failed[size_t(i)] = std::current_exception();
    }
  };
  const size_t threads = size_t(default_threads());
  if (kernels.size() < 2 || threads < 2) {
    for (size_t i = 0; i < kernels.size(); ++i) compile(int64_t(i));
  } else {
    ThreadPool pool(int(std::min(kernels.size(), threads)));
    pool.parallel_for(int64_t(kernels.size()), compile);
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  // What LLVM warned about, in kernel order, now that no worker prints.
  for (const PtxKernel& k : out)
    for (const std::string& w : k.warnings)
      std::fprintf(stderr, "fxc: warning: kernel %s: %s\n", k.name.c_str(), w.c_str());
  return out;
}

std::string link_ptx_kernels(const std::vector<KernelText>& kernels, const std::string& arch,
                             const std::string& libdevice, bool ptx) {
  const llvm::Target& t = nvptx_backend(arch);
  llvm::LLVMContext ctx;
  LlvmDiagnostics diags;
  std::unique_ptr<llvm::Module> m = link_kernel_modules(ctx, kernels, &diags);
  if (!ptx) return print_module(*m);
  std::unique_ptr<llvm::TargetMachine> tm = nvptx_machine(t, arch, *m);
  std::unique_ptr<llvm::MemoryBuffer> lib = read_libdevice(libdevice);
  std::optional<PassTimer> timer;
  std::string text = compile_ptx_module(*m, *tm, *lib, libdevice, "the linked kernels", timer);
  throw_llvm_errors(diags, "the NVPTX back end, the linked kernels");
  for (const std::string& w : diags.warnings) std::fprintf(stderr, "fxc: warning: %s\n", w.c_str());
  return text;
}

} // namespace fxc
