// Executes a compiled host plan: storage slots, parallel kernel launches, BLAS and fallback calls.
#include "runtime/plan_executor.h"

#include "frontend/diag.h"
#include "runtime/interpreter.h"
#include "runtime/onednn.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <cstring>
#include <mutex>

namespace fxc {

namespace {

// CBLAS entry points, opened at run time so that fxc links and runs without a BLAS (the
// reference loop below is used then). Enum values are CBLAS's.
enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);

struct Blas {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  void (*set_threads)(int) = nullptr; ///< openblas_set_num_threads (OpenBLAS only)
};

const Blas& blas() {
  static Blas b;
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* lib :
         {"libopenblas.so.0", "libopenblas.so", "libcblas.so.3", "libblas.so.3"}) {
      void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      b.sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
      b.dgemm = reinterpret_cast<DgemmFn>(dlsym(h, "cblas_dgemm"));
      b.set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
      if (b.sgemm && b.dgemm) return;
      b = Blas{};
    }
  });
  return b;
}

/// C = op(A) op(B) (row-major) by plain loops, accumulating in double.
template <class T>
void gemm_loops(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* a, int64_t lda,
                const T* b, int64_t ldb, T* c, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(ta ? a[k * lda + i] : a[i * lda + k]) *
               double(tb ? b[j * ldb + k] : b[k * ldb + j]);
      c[i * ldc + j] = T(acc);
    }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Tensor view_of(const std::vector<std::shared_ptr<Storage>>& slots, const PlanView& v) {
  return Tensor(slots[v.slot], v.meta);
}

/// BLAS calls use as many threads as the largest pool that ran one (--threads), no more. The
/// count only grows: changing it while another caller's BLAS call runs (a model run from
/// several threads at once) corrupts that call's result.
void set_blas_threads(int threads) {
  static std::atomic<int> current{0};
  static std::mutex mu;
  const Blas& bl = blas();
  if (!bl.set_threads || threads <= current.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu);
  if (threads <= current.load(std::memory_order_relaxed)) return;
  bl.set_threads(threads);
  current.store(threads, std::memory_order_release);
}

void run_gemm(const PlanExtern& e, const std::vector<std::shared_ptr<Storage>>& slots,
              const std::string& source) {
  Tensor a = view_of(slots, e.inputs[0]), b = view_of(slots, e.inputs[1]);
  Tensor c = view_of(slots, e.outputs[0]);
  bool batched = a.dim() == 3;
  int64_t B = batched ? a.size(0) : 1;
  int o = batched ? 1 : 0;
  int64_t M = a.size(o), K = a.size(o + 1), N = b.size(o + 1);
  if (b.size(o) != K || c.size(o) != M || c.size(o + 1) != N || (batched && b.size(0) != B))
    throw Error(source, "matmul operand shapes do not agree", e.name);
  BlasMatrix la = blas_matrix(M, K, a.stride(o), a.stride(o + 1));
  BlasMatrix lb = blas_matrix(K, N, b.stride(o), b.stride(o + 1));
  if (!la.ok) {
    a = a.contiguous();
    la = blas_matrix(M, K, a.stride(o), a.stride(o + 1));
  }
  if (!lb.ok) {
    b = b.contiguous();
    lb = blas_matrix(K, N, b.stride(o), b.stride(o + 1));
  }
  int64_t sa = batched ? a.stride(0) : 0, sb = batched ? b.stride(0) : 0, sc = M * N;
  for (int64_t i = 0; i < B; ++i) {
    if (M == 0 || N == 0) break;
    if (K == 0) {
      std::memset(c.raw_data() + i * sc * dtype_size(c.dtype()), 0,
                  size_t(sc) * dtype_size(c.dtype()));
      continue;
    }
    int ta = la.trans ? kTrans : kNoTrans, tb = lb.trans ? kTrans : kNoTrans;
    const Blas& bl = blas();
    if (c.dtype() == DType::F32) {
      const float *pa = a.data<float>() + i * sa, *pb = b.data<float>() + i * sb;
      float* pc = c.data<float>() + i * sc;
      if (bl.sgemm)
        bl.sgemm(kRowMajor, ta, tb, int(M), int(N), int(K), 1.0f, pa, int(la.ld), pb, int(lb.ld),
                 0.0f, pc, int(N));
      else
        gemm_loops(la.trans, lb.trans, M, N, K, pa, la.ld, pb, lb.ld, pc, N);
    } else if (c.dtype() == DType::F64) {
      const double *pa = a.data<double>() + i * sa, *pb = b.data<double>() + i * sb;
      double* pc = c.data<double>() + i * sc;
      if (bl.dgemm)
        bl.dgemm(kRowMajor, ta, tb, int(M), int(N), int(K), 1.0, pa, int(la.ld), pb, int(lb.ld),
                 0.0, pc, int(N));
      else
        gemm_loops(la.trans, lb.trans, M, N, K, pa, la.ld, pb, lb.ld, pc, N);
    } else {
      throw Error(source, "BLAS matmul needs f32 or f64 operands", e.name);
    }
  }
}

void run_fallback(const PlanExtern& e, const std::vector<std::shared_ptr<Storage>>& slots,
                  const std::string& source) {
  std::vector<Tensor> ins;
  for (auto& v : e.inputs) ins.push_back(view_of(slots, v));
  std::vector<Tensor> outs = interpret(*e.graph, ins);
  if (outs.size() != e.outputs.size())
    throw Error(source, "reference kernel returned " + std::to_string(outs.size()) + " outputs",
                e.name);
  for (size_t i = 0; i < outs.size(); ++i) {
    Tensor dst = view_of(slots, e.outputs[i]);
    Tensor src = outs[i];
    if (src.numel() != dst.numel())
      throw Error(source,
                  "reference kernel output " + std::to_string(i) + " has " +
                      std::to_string(src.numel()) + " elements, expected " +
                      std::to_string(dst.numel()),
                  e.name);
    src = src.dtype() == dst.dtype() ? src.contiguous() : src.to(dst.dtype());
    std::memcpy(dst.raw_data(), src.raw_data(), size_t(dst.numel()) * dtype_size(dst.dtype()));
  }
}

/// A run's hold on its plan's activation arena (Plan::arena_cache): the idle block, or a new one
/// when another run holds it or the plan has none yet; given back (when the cache is empty) on
/// destruction. Lays the arena out on first use and again whenever the plan's slots or its
/// Alloc/Free steps changed since.
class ArenaLease {
public:
  explicit ArenaLease(const Plan& plan) : cache_(plan.arena_cache) {
    std::vector<std::pair<int, int>> steps;
    for (const PlanStep& s : plan.steps)
      if (s.kind == PlanStep::Kind::Alloc || s.kind == PlanStep::Kind::Free)
        steps.emplace_back(int(s.kind), s.index);
    std::lock_guard<std::mutex> lock(cache_.mutex);
    if (!cache_.laid_out || cache_.slot_bytes != plan.slot_bytes || cache_.steps != steps) {
      cache_.layout = plan_arena(plan, /*intermediates_only=*/true);
      cache_.slot_bytes = plan.slot_bytes;
      cache_.steps = std::move(steps);
      cache_.block.reset();
      cache_.outputs.clear();
      cache_.laid_out = true;
    }
    layout_ = cache_.layout;
    block_ = std::move(cache_.block);
    if (!block_) block_.reset(new std::byte[size_t(std::max<int64_t>(layout_.bytes, 1))]);
  }
  ~ArenaLease() {
    std::lock_guard<std::mutex> lock(cache_.mutex);
    if (!cache_.block && cache_.layout.bytes == layout_.bytes) cache_.block = std::move(block_);
  }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;
  /// The storage of `slot`: its bytes in the arena; for a slot outside it (an output), the
  /// buffer an earlier run returned there if nothing else holds it any more, else a new
  /// uninitialised one (kept for the next run).
  std::shared_ptr<Storage> slot(int slot, int64_t bytes) const {
    int64_t at = size_t(slot) < layout_.offset.size() ? layout_.offset[size_t(slot)] : -1;
    size_t n = size_t(std::max<int64_t>(bytes, 1));
    if (at >= 0)
      return Storage::borrowed(block_.get() + at, n, std::shared_ptr<const void>(block_, nullptr));
    std::lock_guard<std::mutex> lock(cache_.mutex);
    if (cache_.outputs.size() < cache_.slot_bytes.size())
      cache_.outputs.resize(cache_.slot_bytes.size());
    std::shared_ptr<Storage>& kept = cache_.outputs.at(size_t(slot));
    if (kept && kept.use_count() == 1 && kept->nbytes() == n) return kept;
    kept = Storage::uninitialized(n);
    return kept;
  }

private:
  PlanArenaCache& cache_;
  ArenaLayout layout_;
  std::shared_ptr<std::byte[]> block_;
};

/// Runs one step of `plan` over `slots`; `arena` gives Alloc steps their storage.
void run_step(const Plan& plan, const PlanStep& s, std::vector<std::shared_ptr<Storage>>& slots,
              const ArenaLease* arena, std::vector<void*>& args, ThreadPool& pool,
              const std::string& source, std::vector<StepProfile>* profile) {
  switch (s.kind) {
  case PlanStep::Kind::Alloc:
    assert(arena && "an Alloc step outside a run");
    slots[s.index] = arena->slot(s.index, plan.slot_bytes[s.index]);
    break;
  case PlanStep::Kind::Free:
    slots[s.index].reset();
    break;
  case PlanStep::Kind::Kernel: {
    const PlanKernel& k = plan.kernels[s.index];
    if (!k.fail.empty()) throw Error(source, k.fail, k.name);
    args.clear();
    for (int a : k.arg_slots) args.push_back(slots[a]->data());
    int64_t grain = std::max<int64_t>(k.grain, 1);
    int64_t tasks = (k.xnumel + grain - 1) / grain;
    void* const* argv = args.data();
    KernelFn fn = k.fn;
    int64_t xn = k.xnumel;
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(tasks,
                      [&](int64_t t) { fn(argv, t * grain, std::min(xn, (t + 1) * grain)); });
    if (profile) profile->push_back({k.name, true, ms_since(t0), k.bytes});
    break;
  }
  case PlanStep::Kind::Extern: {
    const PlanExtern& e = plan.externs[s.index];
    auto t0 = std::chrono::steady_clock::now();
    if (e.epilogue != PlanExtern::Epilogue::None)
      throw Error(source, "matmul epilogues need the CUDA plan", e.name);
    if (e.kind == PlanExtern::Kind::Attention)
      throw Error(source, "cuDNN fused attention needs the CUDA plan", e.name);
    if (e.kind == PlanExtern::Kind::Conv) {
      onednn::run_conv(e, slots, pool, source);
    } else if (e.kind == PlanExtern::Kind::ConvBackwardData ||
               e.kind == PlanExtern::Kind::ConvBackwardFilter) {
      onednn::run_conv_backward(e, slots, pool, source);
    } else if (e.kind == PlanExtern::Kind::Gemm) {
      set_blas_threads(pool.size());
      run_gemm(e, slots, source);
    } else {
      run_fallback(e, slots, source);
    }
    if (profile) profile->push_back({e.name, false, ms_since(t0), e.bytes});
    break;
  }
  }
}

/// The storage of each prepared slot (Plan::prepare), made by the plan's first run and again
/// when its constants were rebound since; concurrent runs wait for the one that prepares.
std::vector<std::shared_ptr<Storage>> prepared_slots(const Plan& plan, ThreadPool& pool,
                                                     const std::string& source) {
  PlanArenaCache& cache = plan.arena_cache;
  std::lock_guard<std::mutex> lock(cache.prepare_mutex);
  bool same = cache.is_prepared && cache.prepared_for.size() == plan.constant_slots.size() &&
              cache.prepared.size() == plan.slot_bytes.size();
  for (size_t i = 0; same && i < plan.constant_slots.size(); ++i)
    same = cache.prepared_for[i].lock() == plan.constant_slots[i].second.storage();
  if (same) return cache.prepared;
  std::vector<std::shared_ptr<Storage>> slots(plan.slot_bytes.size());
  for (auto& [slot, t] : plan.constant_slots) slots[slot] = t.storage();
  for (int sl : plan.prepared_slots)
    slots[sl] = Storage::uninitialized(size_t(std::max<int64_t>(plan.slot_bytes[sl], 1)));
  std::vector<void*> args;
  for (const PlanStep& s : plan.prepare)
    run_step(plan, s, slots, nullptr, args, pool, source, nullptr);
  std::vector<std::shared_ptr<Storage>> prepared(plan.slot_bytes.size());
  for (int sl : plan.prepared_slots) prepared[sl] = slots[sl];
  cache.prepared = prepared;
  cache.prepared_for.clear();
  for (auto& [slot, t] : plan.constant_slots) cache.prepared_for.push_back(t.storage());
  cache.is_prepared = true;
  return prepared;
}

} // namespace

BlasMatrix blas_matrix(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  BlasMatrix m;
  if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= std::max<int64_t>(cols, 1))) {
    m.ok = true;
    m.ld = rows == 1 ? std::max<int64_t>(cols, 1) : s0;
    return m;
  }
  if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= std::max<int64_t>(rows, 1))) {
    m.ok = true;
    m.trans = true;
    m.ld = cols == 1 ? std::max<int64_t>(rows, 1) : s1;
  }
  return m;
}

std::vector<Tensor> execute_plan(const Plan& plan, const std::vector<Tensor>& user_inputs,
                                 ThreadPool& pool, const std::string& source,
                                 std::vector<StepProfile>* profile) {
  if (user_inputs.size() != plan.input_slots.size())
    throw Error(source, "expected " + std::to_string(plan.input_slots.size()) + " inputs, got " +
                            std::to_string(user_inputs.size()));
  // Declared before the slots, so that every view of the arena is gone when it is given back.
  ArenaLease arena(plan);
  std::vector<std::shared_ptr<Storage>> slots(plan.slot_bytes.size());
  std::vector<Tensor> keep; // contiguous copies of inputs live until the run ends
  for (size_t i = 0; i < user_inputs.size(); ++i) {
    const Tensor& t = user_inputs[i];
    const TensorMeta& m = plan.input_metas[i];
    if (t.dtype() != m.dtype || t.sizes() != m.sizes)
      throw Error(source, "input " + std::to_string(i) + " is " + format_meta(t.meta()) +
                              " but the graph expects " + format_meta(m));
    Tensor c = t.contiguous();
    if (c.storage_offset() != 0) c = c.clone();
    keep.push_back(c);
    slots[plan.input_slots[i]] = c.storage();
  }
  for (auto& [slot, t] : plan.constant_slots) slots[slot] = t.storage();
  if (!plan.prepared_slots.empty()) {
    std::vector<std::shared_ptr<Storage>> prepared = prepared_slots(plan, pool, source);
    for (int sl : plan.prepared_slots) slots[sl] = prepared[sl];
  }
  std::vector<void*> args;
  for (const PlanStep& s : plan.steps)
    run_step(plan, s, slots, &arena, args, pool, source, profile);
  std::vector<Tensor> outs;
  for (const PlanView& v : plan.outputs) outs.push_back(view_of(slots, v));
  return outs;
}

} // namespace fxc
