// The x86-64 host target: kernel ABI, row-parallel mapping, O2 pipeline and ORC LLJIT loading.
#include "codegen/llvm_codegen.h"
#include "codegen/target.h"
#include "frontend/diag.h"
#include "runtime/thread_pool.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace fxc {

namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::string to_string(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

// O2 and the default code generation level: the r loops vectorize the same as at O3, and
// compile time matters (a whole model compiles in well under a second).

/// The kernel ABI is `void name(ptr args, i64 xbegin, i64 xend)`; the body lives in an
/// always-inline `name.body(i64, i64, ptr noalias...)` so that noalias arguments become alias
/// scopes after inlining and the r loops vectorize.
class X86Target : public Target {
public:
  explicit X86Target(std::string cpu = {}, std::string features = {}, std::string triple = {},
                     std::string layout = {})
      : cpu_(std::move(cpu)), features_(std::move(features)), triple_(std::move(triple)),
        layout_(std::move(layout)) {
    caps_.name = "x86-64";
    caps_.host = true;
    caps_.parallel_rows = true;
    caps_.cooperative_reduction = false;
    caps_.has_shared_memory = false;
    caps_.max_threads_per_block = 1;
    caps_.vector_bits = features_.find("+avx512f") != std::string::npos ? 512 : 256;
    caps_.native_bf16_round = false;
  }
  const TargetCaps& caps() const override { return caps_; }

  void prepare_module(llvm::Module& m) override {
    m.setTargetTriple(triple_.empty() ? "x86_64-unknown-linux-gnu" : triple_);
    if (!layout_.empty()) m.setDataLayout(layout_);
  }

  llvm::Function* begin_kernel(llvm::Module& m, llvm::IRBuilderBase& b, const std::string& name,
                               const std::vector<bool>& noalias, const RowMapping&,
                               KernelEntry* entry) override {
    llvm::LLVMContext& ctx = m.getContext();
    std::vector<llvm::Type*> params = {b.getInt64Ty(), b.getInt64Ty()};
    for (size_t i = 0; i < noalias.size(); ++i) params.push_back(b.getPtrTy());
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), params, false);
    auto* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name + ".body", m);
    f->addFnAttr(llvm::Attribute::AlwaysInline);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < noalias.size(); ++i) {
      if (noalias[i]) f->addParamAttr(unsigned(i + 2), llvm::Attribute::NoAlias);
      f->addParamAttr(unsigned(i + 2), llvm::Attribute::NoCapture);
    }
    add_cpu_attrs(f);
    f->getArg(0)->setName("xbegin");
    f->getArg(1)->setName("xend");
    auto* bb = llvm::BasicBlock::Create(ctx, "entry", f);
    b.SetInsertPoint(bb);
    entry->buffers.clear();
    for (size_t i = 0; i < noalias.size(); ++i) {
      f->getArg(unsigned(i + 2))->setName("buf" + std::to_string(i));
      entry->buffers.push_back(f->getArg(unsigned(i + 2)));
    }
    entry->xbegin = f->getArg(0);
    entry->xend = f->getArg(1);
    entry->rstart = b.getInt64(0);
    entry->rstep = b.getInt64(1);
    return f;
  }

  llvm::Value* combine_partial(llvm::IRBuilderBase&, ReduceOp, llvm::Value* partial,
                               llvm::Value**) override {
    return partial; // one thread owns each row
  }

  llvm::Value* math(llvm::IRBuilderBase& b, llvm::Module& m, VOp op,
                    const std::vector<llvm::Value*>& args, bool f64) override {
    switch (op) {
    case VOp::Exp:
      return args[0]->getType()->isFloatTy()
                 ? exp_f32(b, args[0])
                 : b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, args[0]);
    case VOp::Log:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::log, args[0]);
    case VOp::Sin:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::sin, args[0]);
    case VOp::Cos:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::cos, args[0]);
    case VOp::Pow:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0], args[1]);
    case VOp::Tanh:
      return f64 ? libm(b, m, "tanh", args[0]) : tanh_f32(b, args[0]);
    case VOp::Erf:
      return f64 ? libm(b, m, "erf", args[0]) : erf_f32(b, args[0]);
    case VOp::Log1p:
      return libm(b, m, f64 ? "log1p" : "log1pf", args[0]);
    case VOp::Tan:
      return libm(b, m, f64 ? "tan" : "tanf", args[0]);
    case VOp::Asin:
      return libm(b, m, f64 ? "asin" : "asinf", args[0]);
    case VOp::Acos:
      return libm(b, m, f64 ? "acos" : "acosf", args[0]);
    case VOp::Atan:
      return libm(b, m, f64 ? "atan" : "atanf", args[0]);
    case VOp::Sinh:
      return libm(b, m, f64 ? "sinh" : "sinhf", args[0]);
    case VOp::Cosh:
      return libm(b, m, f64 ? "cosh" : "coshf", args[0]);
    case VOp::Asinh:
      return libm(b, m, f64 ? "asinh" : "asinhf", args[0]);
    case VOp::Acosh:
      return libm(b, m, f64 ? "acosh" : "acoshf", args[0]);
    case VOp::Atanh:
      return libm(b, m, f64 ? "atanh" : "atanhf", args[0]);
    case VOp::Log2:
      return libm(b, m, f64 ? "log2" : "log2f", args[0]);
    case VOp::Log10:
      return libm(b, m, f64 ? "log10" : "log10f", args[0]);
    case VOp::Atan2:
      return libm2(b, m, f64 ? "atan2" : "atan2f", args[0], args[1]);
    case VOp::Expm1:
      return libm(b, m, f64 ? "expm1" : "expm1f", args[0]);
    default:
      break;
    }
    assert(false && "not a math function");
    return args[0];
  }

  void end_stage(llvm::IRBuilderBase&) override {} // one thread owns each row

  void end_kernel(llvm::Module& m, llvm::IRBuilderBase& b, llvm::Function* body,
                  bool /*lean*/) override {
    b.CreateRetVoid();
    std::string name = body->getName().str();
    name = name.substr(0, name.size() - 5); // strip ".body"
    llvm::LLVMContext& ctx = m.getContext();
    auto* fty = llvm::FunctionType::get(b.getVoidTy(),
                                        {b.getPtrTy(), b.getInt64Ty(), b.getInt64Ty()}, false);
    auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    add_cpu_attrs(f);
    f->getArg(0)->setName("args");
    f->getArg(1)->setName("xbegin");
    f->getArg(2)->setName("xend");
    llvm::IRBuilder<> eb(llvm::BasicBlock::Create(ctx, "entry", f));
    std::vector<llvm::Value*> call_args = {f->getArg(1), f->getArg(2)};
    unsigned nbuf = body->arg_size() - 2;
    for (unsigned i = 0; i < nbuf; ++i) {
      llvm::Value* slot = eb.CreateConstInBoundsGEP1_64(eb.getPtrTy(), f->getArg(0), i);
      call_args.push_back(eb.CreateLoad(eb.getPtrTy(), slot, "arg" + std::to_string(i)));
    }
    eb.CreateCall(body, call_args);
    eb.CreateRetVoid();
  }

private:
  /// p(x^2) * x / q(x^2) for x = a clamped to [-bound, bound], both polynomials in Horner form
  /// (highest coefficient first): the shape of Eigen's fast erf and tanh.
  static llvm::Value* clamped_rational(llvm::IRBuilderBase& b, llvm::Value* a, double bound,
                                       std::initializer_list<double> p,
                                       std::initializer_list<double> q) {
    llvm::Type* t = a->getType();
    auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
    llvm::Value* x = b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, c(-bound));
    x = b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, c(bound));
    llvm::Value* x2 = b.CreateFMul(x, x);
    auto horner = [&](std::initializer_list<double> k) {
      llvm::Value* r = nullptr;
      for (double v : k) r = r ? b.CreateFAdd(b.CreateFMul(r, x2), c(v)) : c(v);
      return r;
    };
    llvm::Value* num = b.CreateFMul(horner(p), x);
    llvm::Value* den = horner(q);
    return b.CreateFDiv(num, den);
  }
  /// erf for float as a rational function of x^2 on [-4, 4] (Eigen's generic_fast_erf_float;
  /// max abs error 4.2e-7 against double erf): straight-line code, so r loops vectorize.
  static llvm::Value* erf_f32(llvm::IRBuilderBase& b, llvm::Value* a) {
    return clamped_rational(b, a, 4.0,
                            {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                             -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                             -1.60960333262415e-02},
                            {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                             -7.37332916720468e-03, -1.42647390514189e-02});
  }
  /// exp for float without a libm call, so that loops holding it vectorize (llvm.exp becomes
  /// one expf call per lane): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite), e^r by Cephes'
  /// expf polynomial (about 1 ulp), times 2^n built in the exponent bits as 2^(n/2) 2^(n-n/2)
  /// so that results down to the subnormals round once. x is clamped to [-104, 89] first, past
  /// which the product underflows to 0 or overflows to inf; NaN passes through.
  static llvm::Value* exp_f32(llvm::IRBuilderBase& b, llvm::Value* a) {
    llvm::Type* t = a->getType();
    auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
    llvm::Value* x = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, c(-104.0));
    x = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, c(89.0));
    llvm::Value* n =
        b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(x, c(1.4426950408889634)));
    auto fma = [&](llvm::Value* p, llvm::Value* q, llvm::Value* r) {
      return b.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, q, r});
    };
    llvm::Value* r = fma(n, c(-0.693359375), x);
    r = fma(n, c(2.12194440e-4), r);
    llvm::Value* p = c(1.9875691500e-4);
    for (double k :
         {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
      p = fma(p, r, c(k));
    p = fma(p, b.CreateFMul(r, r), b.CreateFAdd(r, c(1.0)));
    llvm::Type* i32 = b.getInt32Ty();
    llvm::Value* ni = b.CreateFPToSI(n, i32);
    llvm::Value* n1 = b.CreateAShr(ni, 1);
    llvm::Value* n2 = b.CreateSub(ni, n1);
    auto pow2 = [&](llvm::Value* e) {
      return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, b.getInt32(127)), 23), t);
    };
    llvm::Value* y = b.CreateFMul(b.CreateFMul(p, pow2(n1)), pow2(n2));
    return b.CreateSelect(b.CreateFCmpUNO(a, a), a, y);
  }
  /// tanh for float as a rational function on [-7.9, 7.9] (Eigen's generic_fast_tanh_float;
  /// max abs error 3.3e-7), x itself below 4e-4.
  static llvm::Value* tanh_f32(llvm::IRBuilderBase& b, llvm::Value* a) {
    llvm::Value* r = clamped_rational(
        b, a, 7.90531110763549805,
        {-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
         1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03},
        {1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03});
    llvm::Value* tiny = b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a),
                                        llvm::ConstantFP::get(a->getType(), 0.0004));
    return b.CreateSelect(tiny, a, r);
  }
  llvm::Value* libm(llvm::IRBuilderBase& b, llvm::Module& m, const char* name, llvm::Value* a) {
    llvm::Type* ty = a->getType();
    llvm::FunctionCallee f = m.getOrInsertFunction(name, ty, ty);
    if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
      fn->setDoesNotThrow();
      fn->setOnlyAccessesInaccessibleMemory();
    }
    return b.CreateCall(f, {a});
  }
  llvm::Value* libm2(llvm::IRBuilderBase& b, llvm::Module& m, const char* name, llvm::Value* a,
                     llvm::Value* c) {
    llvm::Type* ty = a->getType();
    llvm::FunctionCallee f = m.getOrInsertFunction(name, ty, ty, ty);
    if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
      fn->setDoesNotThrow();
      fn->setOnlyAccessesInaccessibleMemory();
    }
    return b.CreateCall(f, {a, c});
  }
  void add_cpu_attrs(llvm::Function* f) {
    if (!cpu_.empty()) f->addFnAttr("target-cpu", cpu_);
    if (!features_.empty()) f->addFnAttr("target-features", features_);
  }
  TargetCaps caps_;
  std::string cpu_, features_, triple_, layout_;
};

/// A kernel's IR with every occurrence of its name (the function's, the module's ID and source
/// file name) blanked: equal for kernels that differ only in name.
std::string blank_name(std::string ll, const std::string& name) {
  for (size_t at = ll.find(name); at != std::string::npos; at = ll.find(name, at + 1))
    ll.replace(at, name.size(), "\x01");
  return ll;
}

std::unique_ptr<llvm::TargetMachine> host_machine(bool pic) {
  init_llvm();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) throw Error("", "cannot detect the host CPU: " + to_string(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  if (pic) jtmb->setRelocationModel(llvm::Reloc::PIC_);
  auto tm = jtmb->createTargetMachine();
  if (!tm) throw Error("", "cannot create the host target machine: " + to_string(tm.takeError()));
  return std::move(*tm);
}

class X86Compiler : public KernelCompiler {
public:
  X86Compiler() {
    init_llvm();
    tm_ = host_machine(false);
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) throw Error("", "cannot detect the host CPU: " + to_string(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
    target_ = std::make_unique<X86Target>(
        tm_->getTargetCPU().str(), tm_->getTargetFeatureString().str(),
        tm_->getTargetTriple().str(), tm_->createDataLayout().getStringRepresentation());
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) throw Error("", "cannot start the JIT: " + to_string(jit.takeError()));
    jit_ = std::move(*jit);
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit_->getDataLayout().getGlobalPrefix());
    if (!gen) throw Error("", "cannot resolve host symbols: " + to_string(gen.takeError()));
    jit_->getMainJITDylib().addGenerator(std::move(*gen));
  }

  std::string add_kernel(const LoopProgram& p, const Kernel& k, const std::vector<int>& args,
                         const std::vector<bool>& noalias) override {
    Pending pk;
    pk.ctx = std::make_unique<llvm::LLVMContext>();
    pk.m = std::make_unique<llvm::Module>(k.name, *pk.ctx);
    llvm::Module& m = *pk.m;
    m.setSourceFileName(k.name);
    emit_kernel(*target_, m, p, k, args, noalias);
    std::string text;
    llvm::raw_string_ostream os(text);
    if (llvm::verifyModule(m, &os)) {
      throw Error("", "internal error: generated kernel " + k.name + " is invalid: " + os.str());
    }
    text.clear();
    m.print(os, nullptr);
    os.flush();
    // A kernel whose IR is another's but for its name is not compiled again: its name resolves
    // to the other's code (lookup).
    std::string body = blank_name(text, k.name);
    auto [it, fresh] = bodies_.emplace(std::move(body), k.name);
    if (!fresh) {
      alias_of_[k.name] = it->second;
      return text;
    }
    pending_.push_back(std::move(pk));
    return text;
  }

  // Each kernel has a context of its own, so kernels optimize and compile to object code in
  // parallel; the JIT then only links the objects.
  void finalize() override {
    size_t n = pending_.size();
    std::vector<std::string> objs(n);
    std::vector<std::string> errors(n);
    std::vector<std::vector<std::string>> warnings(n);
    diags_.assign(n, LlvmDiagnostics{});
    ThreadPool pool(int(std::min(std::max<size_t>(n, 1), size_t(default_threads()))));
    pool.parallel_for(int64_t(n), [&](int64_t i) {
      try {
        auto tm = host_machine(true);
        llvm::Module& m = *pending_[i].m;
        // LLVM's diagnostics are kept with the kernel (diags_ lives as long as the contexts),
        // not printed from this worker thread.
        collect_diagnostics(*pending_[i].ctx, &diags_[i]);
        m.setDataLayout(tm->createDataLayout());
        optimize_o2(m, tm.get());
        objs[i] = emit_machine_code(m, *tm, true, "the host target");
        throw_llvm_errors(diags_[i], "the x86-64 back end, kernel " + m.getName().str());
        warnings[i] = diags_[i].warnings;
      } catch (const Error& e) {
        errors[i] = e.message();
      } catch (const std::exception& e) { // never past the pool: a worker would terminate
        errors[i] = std::string("internal error: ") + e.what();
      }
    });
    // What LLVM warned about, in kernel order, now that no worker prints.
    for (size_t i = 0; i < n; ++i)
      for (const std::string& w : warnings[i])
        std::fprintf(stderr, "fxc: warning: kernel %s: %s\n",
                     pending_[i].m->getName().str().c_str(), w.c_str());
    for (size_t i = 0; i < n; ++i) {
      std::string name = pending_[i].m->getName().str();
      if (!errors[i].empty()) throw Error("", "compiling kernel " + name + " failed: " + errors[i]);
      auto buf = llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(objs[i].data(), objs[i].size()), name + ".o");
      if (llvm::Error e = jit_->addObjectFile(std::move(buf)))
        throw Error("", "JIT failed: " + to_string(std::move(e)));
    }
    pending_.clear();
  }

  KernelFn lookup(const std::string& name) override {
    auto alias = alias_of_.find(name);
    auto sym = jit_->lookup(alias == alias_of_.end() ? name : alias->second);
    if (!sym) throw Error("", "JIT lookup of " + name + " failed: " + to_string(sym.takeError()));
    return sym->toPtr<KernelFn>();
  }

private:
  struct Pending {
    std::unique_ptr<llvm::LLVMContext> ctx;
    std::unique_ptr<llvm::Module> m; // destroyed before its context (member order)
  };

  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<X86Target> target_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  /// Each pending kernel context's diagnostics (finalize); declared first, so it outlives them.
  std::vector<LlvmDiagnostics> diags_;
  std::vector<Pending> pending_;
  std::map<std::string, std::string> bodies_;   ///< a kernel's IR with its name blanked -> name
  std::map<std::string, std::string> alias_of_; ///< kernel name -> the kernel compiled for it
};

} // namespace

std::unique_ptr<KernelCompiler> make_x86_compiler() {
  return std::make_unique<X86Compiler>();
}

std::string link_kernels_ll(const std::vector<KernelText>& kernels, bool optimize) {
  llvm::LLVMContext ctx;
  LlvmDiagnostics diags;
  auto m = link_kernel_modules(ctx, kernels, &diags);
  if (optimize) {
    auto tm = host_machine(false);
    optimize_o2(*m, tm.get());
    throw_llvm_errors(diags, "the kernels' LLVM O2");
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  m->print(os, nullptr);
  os.flush();
  return text;
}

size_t object_parts(size_t n) {
  // 1, 2 or 4 (not 3): groups of equal size share 2 or 4 cores evenly.
  return n <= 32 ? 1 : n <= 64 ? 2 : 4;
}

namespace {

/// The symbol a kernel has in the linked module.
const std::string& symbol_of(const KernelText& k) {
  return k.symbol.empty() ? k.name : k.symbol;
}

/// Kernels whose IR is the same but for their name (a model's repeated blocks: ResNet-50's train
/// graphs hold 219 kernels of 69 different bodies) are compiled once; each other is an alias
/// of the first.
struct DedupedKernels {
  std::vector<KernelText> unique;
  std::vector<std::vector<std::string>> aliases; ///< per unique kernel: the symbols it also has
};

DedupedKernels dedup_kernels(const std::vector<KernelText>& kernels) {
  DedupedKernels d;
  std::map<std::string, size_t> seen; // the IR with the kernel's name blanked -> unique index
  for (const KernelText& k : kernels) {
    std::string body = k.ll;
    // The name occurs as the function's, the module's ID and its source file name.
    for (size_t at = body.find(k.name); at != std::string::npos; at = body.find(k.name, at + 1))
      body.replace(at, k.name.size(), "\x01");
    auto [it, fresh] = seen.emplace(std::move(body), d.unique.size());
    if (fresh) {
      d.unique.push_back(k);
      d.aliases.emplace_back();
    } else {
      d.aliases[it->second].push_back(symbol_of(k));
    }
  }
  return d;
}

/// emit_kernels_object() of the unique kernels `ks`, each also defining the symbols `aliases`.
std::string emit_object(const std::vector<KernelText>& ks,
                        const std::vector<std::vector<std::string>>& aliases) {
  llvm::LLVMContext ctx;
  LlvmDiagnostics diags;
  auto m = link_kernel_modules(ctx, ks, &diags);
  for (size_t i = 0; i < ks.size(); ++i) {
    llvm::Function* f = m->getFunction(symbol_of(ks[i]));
    assert(f && "a linked kernel keeps its symbol");
    for (const std::string& a : aliases[i])
      llvm::GlobalAlias::create(f->getFunctionType(), f->getAddressSpace(), f->getLinkage(), a, f,
                                m.get());
  }
  auto tm = host_machine(true);
  m->setDataLayout(tm->createDataLayout());
  optimize_o2(*m, tm.get());
  std::string obj = emit_machine_code(*m, *tm, true, "the host target");
  throw_llvm_errors(diags, "the host target");
  return obj;
}

} // namespace

std::vector<std::string> emit_kernels_objects(const std::vector<KernelText>& kernels) {
  const DedupedKernels d = dedup_kernels(kernels);
  // Consecutive groups of about equal IR size (a proxy for compile time), cut where the running
  // total passes each k/parts of the whole; a kernel's aliases go with it.
  const size_t parts = object_parts(d.unique.size());
  size_t total = 0;
  for (const KernelText& k : d.unique) total += k.ll.size();
  std::vector<std::vector<KernelText>> groups(parts);
  std::vector<std::vector<std::vector<std::string>>> group_aliases(parts);
  size_t seen = 0;
  for (size_t i = 0; i < d.unique.size(); ++i) {
    const KernelText& k = d.unique[i];
    size_t g = total == 0 ? 0 : std::min(parts - 1, seen * parts / total);
    // Never an empty group before a later one: each group starts with a kernel of its own.
    while (g > 0 && groups[g - 1].empty()) --g;
    groups[g].push_back(k);
    group_aliases[g].push_back(d.aliases[i]);
    seen += k.ll.size();
  }
  while (!groups.empty() && groups.back().empty()) groups.pop_back();
  std::vector<std::string> objs(groups.size());
  std::vector<std::exception_ptr> failed(groups.size());
  auto compile = [&](int64_t i) {
    try {
      objs[size_t(i)] = emit_object(groups[size_t(i)], group_aliases[size_t(i)]);
    } catch (...) { // never past the pool: a worker would terminate
      failed[size_t(i)] = std::current_exception();
    }
  };
  if (groups.size() < 2 || default_threads() < 2) {
    for (size_t i = 0; i < groups.size(); ++i) compile(int64_t(i));
  } else {
    ThreadPool pool(int(std::min(groups.size(), size_t(default_threads()))));
    pool.parallel_for(int64_t(groups.size()), compile);
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return objs;
}

std::string emit_kernels_object(const std::vector<KernelText>& kernels) {
  const DedupedKernels d = dedup_kernels(kernels);
  return emit_object(d.unique, d.aliases);
}

} // namespace fxc
