// cuBLASLt via dlopen: problem checks, the row-major to column-major mapping, heuristic matmul.
#include "runtime/cublaslt.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <vector>

#if defined(FXC_HAVE_CUDA_HEADERS) && __has_include(<cublasLt.h>)
#define FXC_HAVE_CUBLASLT_HEADERS 1
#include <cublasLt.h>
#endif

namespace fxc::cuda {

namespace {

[[noreturn]] void bad(const std::string& msg) {
  throw CudaError("matmul: " + msg);
}

// a * b + c, or a throw naming `what` when it overflows int64.
int64_t checked_span(int64_t a, int64_t b, int64_t c, const char* what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
    bad(std::string(what) + " overflows");
  return r;
}

} // namespace

MatmulProblem normalize(const MatmulProblem& p) {
  MatmulProblem q = p;
  if (q.dtype != DType::F32 && q.dtype != DType::F16 && q.dtype != DType::BF16)
    bad("unsupported dtype " + std::string(dtype_name(q.dtype)) + " (f32, f16 and bf16 are)");
  auto dim = [](int64_t v, const char* name) {
    if (v < 1 || v > INT32_MAX)
      bad(std::string(name) + " = " + std::to_string(v) + " is outside [1, 2^31-1]");
  };
  dim(q.m, "m");
  dim(q.n, "n");
  dim(q.k, "k");
  dim(q.batch, "batch");
  int64_t a_cols = q.trans_a ? q.m : q.k, a_rows = q.trans_a ? q.k : q.m;
  int64_t b_cols = q.trans_b ? q.k : q.n, b_rows = q.trans_b ? q.n : q.k;
  auto ld = [](int64_t& v, int64_t cols, const char* name) {
    if (v == 0) v = cols;
    if (v < cols)
      bad(std::string(name) + " = " + std::to_string(v) + " is less than the row length " +
          std::to_string(cols));
  };
  ld(q.lda, a_cols, "lda");
  ld(q.ldb, b_cols, "ldb");
  ld(q.ldd, q.n, "ldd");
  int64_t a_span = checked_span(a_rows - 1, q.lda, a_cols, "A's extent");
  int64_t b_span = checked_span(b_rows - 1, q.ldb, b_cols, "B's extent");
  int64_t d_span = checked_span(q.m - 1, q.ldd, q.n, "D's extent");
  if (q.stride_a < 0 || q.stride_b < 0 || q.stride_d < 0) bad("negative batch stride");
  if (q.batch > 1) {
    if (q.stride_d == 0) q.stride_d = checked_span(q.m, q.ldd, 0, "D's batch stride");
    if (q.stride_d < d_span)
      bad("batches of D overlap (stride_d " + std::to_string(q.stride_d) + " < " +
          std::to_string(d_span) + ")");
    checked_span(q.batch - 1, q.stride_a, a_span, "A's batched extent");
    checked_span(q.batch - 1, q.stride_b, b_span, "B's batched extent");
    checked_span(q.batch - 1, q.stride_d, d_span, "D's batched extent");
  }
  if (q.dtype != DType::F32) q.allow_tf32 = false; // TF32 is a float32 mode only
  return q;
}

namespace {

// How a [rows, cols] matrix with strides (srow, scol) is handed to cuBLASLt: used as stored
// (row stride ld) or as the transpose of a stored [cols, rows] matrix (row stride ld).
struct MatrixLayout {
  bool trans = false;
  int64_t ld = 0;
};

std::optional<MatrixLayout> layout_of(int64_t rows, int64_t cols, int64_t srow, int64_t scol) {
  // Strides of size-1 dimensions are arbitrary in PyTorch; they never address a second element.
  if (cols == 1) scol = 1;
  if (rows == 1) srow = cols;
  if (scol == 1 && srow >= cols) return MatrixLayout{false, srow};
  if (rows == 1 || srow == 1) {
    int64_t ld = rows == 1 ? std::max<int64_t>(scol, 1) : scol;
    if (ld >= rows) return MatrixLayout{true, ld};
  }
  return std::nullopt;
}

} // namespace

std::optional<MatmulProblem> matmul_problem(const TensorMeta& a, const TensorMeta& b,
                                            const TensorMeta& d) {
  if (a.dtype != b.dtype || a.dtype != d.dtype)
    bad("operands of different dtypes: " + format_meta(a) + ", " + format_meta(b) + " -> " +
        format_meta(d));
  int64_t rank = a.dim();
  if ((rank != 2 && rank != 3) || b.dim() != rank || d.dim() != rank ||
      a.strides.size() != size_t(rank) || b.strides.size() != size_t(rank) ||
      d.strides.size() != size_t(rank))
    bad("expected three matrices or three batches of matrices with strides, got " + format_meta(a) +
        ", " + format_meta(b) + " -> " + format_meta(d));
  int64_t o = rank - 2; // first matrix dimension
  int64_t m = a.sizes[o], k = a.sizes[o + 1], n = b.sizes[o + 1];
  bool batch_ok = rank == 2 || (a.sizes[0] == b.sizes[0] && a.sizes[0] == d.sizes[0]);
  if (b.sizes[o] != k || d.sizes[o] != m || d.sizes[o + 1] != n || !batch_ok)
    bad("shapes do not form a product: " + format_meta(a) + " @ " + format_meta(b) + " -> " +
        format_meta(d));
  std::optional<MatrixLayout> la = layout_of(m, k, a.strides[o], a.strides[o + 1]);
  std::optional<MatrixLayout> lb = layout_of(k, n, b.strides[o], b.strides[o + 1]);
  std::optional<MatrixLayout> ld = layout_of(m, n, d.strides[o], d.strides[o + 1]);
  if (!la || !lb || !ld || ld->trans) return std::nullopt;
  MatmulProblem p;
  p.dtype = a.dtype;
  p.m = m, p.n = n, p.k = k;
  p.trans_a = la->trans, p.lda = la->ld;
  p.trans_b = lb->trans, p.ldb = lb->ld;
  p.ldd = ld->ld;
  if (rank == 3) {
    p.batch = a.sizes[0];
    bool single = p.batch == 1; // one batch: its stride addresses nothing
    p.stride_a = single ? 0 : a.strides[0];
    p.stride_b = single ? 0 : b.strides[0];
    p.stride_d = single ? 0 : d.strides[0];
    if (p.stride_a < 0 || p.stride_b < 0 || (!single && p.stride_d <= 0)) return std::nullopt;
  }
  return p;
}

ColumnMajorGemm column_major(const MatmulProblem& p) {
  // Row-major X [r, c] with row stride ld is column-major Xᵀ [c, r] with the same ld. So
  // D [m, n] is Dᵀ [n, m] = op(B)ᵀ [n, k] · op(A)ᵀ [k, m] with B first and A second.
  ColumnMajorGemm g;
  g.trans_first = p.trans_b;
  g.first_rows = p.trans_b ? p.k : p.n;
  g.first_cols = p.trans_b ? p.n : p.k;
  g.ld_first = p.ldb;
  g.trans_second = p.trans_a;
  g.second_rows = p.trans_a ? p.m : p.k;
  g.second_cols = p.trans_a ? p.k : p.m;
  g.ld_second = p.lda;
  g.d_rows = p.n;
  g.d_cols = p.m;
  g.ld_d = p.ldd;
  return g;
}

#if defined(FXC_HAVE_CUBLASLT_HEADERS)

#define FXC_LT_FUNCTIONS(X)                                                                        \
  X(cublasLtCreate)                                                                                \
  X(cublasLtDestroy)                                                                               \
  X(cublasLtGetVersion)                                                                            \
  X(cublasLtGetStatusName)                                                                         \
  X(cublasLtGetStatusString)                                                                       \
  X(cublasLtMatmulDescCreate)                                                                      \
  X(cublasLtMatmulDescDestroy)                                                                     \
  X(cublasLtMatmulDescSetAttribute)                                                                \
  X(cublasLtMatrixLayoutCreate)                                                                    \
  X(cublasLtMatrixLayoutDestroy)                                                                   \
  X(cublasLtMatrixLayoutSetAttribute)                                                              \
  X(cublasLtMatmulPreferenceCreate)                                                                \
  X(cublasLtMatmulPreferenceDestroy)                                                               \
  X(cublasLtMatmulPreferenceSetAttribute)                                                          \
  X(cublasLtMatmulAlgoGetHeuristic)                                                                \
  X(cublasLtMatmul)

struct CublasLt::Api {
  void* lib = nullptr;
#define FXC_LT_MEMBER(fn) decltype(&::fn) fn = nullptr;
  FXC_LT_FUNCTIONS(FXC_LT_MEMBER)
#undef FXC_LT_MEMBER
};

namespace {

constexpr const char* kNoLt = "cuBLASLt not available: ";

std::unique_ptr<CublasLt::Api> load_lt() {
  auto api = std::make_unique<CublasLt::Api>();
  std::string tried;
  api->lib = open_library({"libcublasLt.so.13", "libcublasLt.so.12",
                           "/usr/local/cuda/lib64/libcublasLt.so.13",
                           "/usr/local/cuda/lib64/libcublasLt.so.12"},
                          &tried);
  if (!api->lib) throw CudaError(kNoLt + tried);
#define FXC_LT_RESOLVE(fn)                                                                         \
  api->fn = reinterpret_cast<decltype(api->fn)>(dlsym(api->lib, #fn));                             \
  if (!api->fn) throw CudaError(std::string(kNoLt) + "the library lacks " #fn);
  FXC_LT_FUNCTIONS(FXC_LT_RESOLVE)
#undef FXC_LT_RESOLVE
  return api;
}

struct LtSingleton {
  std::unique_ptr<CublasLt> lt;
  std::string error;
};

cudaDataType_t data_type(DType t) {
  switch (t) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    break;
  }
  assert(false && "normalize() admits only f32, f16 and bf16");
  return CUDA_R_32F;
}

cublasLtEpilogue_t epilogue_of(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::ReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case Epilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// Largest power of two (at most 256) dividing the address: what the heuristic may assume.
uint32_t alignment_of(DevicePtr p) {
  uint32_t a = 256;
  while (a > 1 && p % a != 0) a /= 2;
  return a;
}

} // namespace

CublasLt& CublasLt::get() {
  return get(Context::get()); // the "no CUDA driver/device" error comes first
}

CublasLt& CublasLt::get(Context& ctx) {
  // Never destroyed: at exit the library's own statics (registered when it was opened, after
  // this map was made) are torn down first, and destroying the handle then frees what is gone
  // (free(): invalid pointer in cublasLtDestroy, seen on the H200). The process's exit
  // releases the device memory with the contexts.
  static std::mutex mu;
  static auto& per_device = *new std::map<int, LtSingleton>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = per_device.find(ctx.ordinal());
  if (it == per_device.end()) {
    LtSingleton r;
    try {
      r.lt.reset(new CublasLt(ctx, load_lt()));
    } catch (const CudaError& e) {
      std::string msg = e.what();
      r.error = msg.rfind(kNoLt, 0) == 0 ? msg : kNoLt + msg;
    }
    it = per_device.emplace(ctx.ordinal(), std::move(r)).first;
  }
  if (!it->second.lt) throw CudaError(it->second.error);
  return *it->second.lt;
}

std::string CublasLt::unavailable_reason() {
  try {
    get();
    return "";
  } catch (const CudaError& e) {
    return e.what();
  }
}

CublasLt::CublasLt(Context& ctx, std::unique_ptr<Api> api) : ctx_(ctx), api_(std::move(api)) {
  version_ = api_->cublasLtGetVersion();
  cublasLtHandle_t h = nullptr;
  check(api_->cublasLtCreate(&h), "cublasLtCreate");
  handle_ = h;
  try {
    workspace_ = ctx_.mem_alloc(kWorkspaceBytes);
  } catch (...) {
    api_->cublasLtDestroy(h);
    throw;
  }
}

CublasLt::~CublasLt() {
  // Errors are ignored: at process exit the driver may already be shutting down.
  try {
    ctx_.make_current();
    ctx_.synchronize();
    ctx_.mem_free(workspace_);
  } catch (const CudaError&) {
  }
  prepared_.clear();
  api_->cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

void CublasLt::check(int status, const char* call) const {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const char* name = api_->cublasLtGetStatusName(cublasStatus_t(status));
  const char* text = api_->cublasLtGetStatusString(cublasStatus_t(status));
  throw CudaError(std::string(call) +
                  " failed: " + (name ? name : "status " + std::to_string(status)) +
                  (text ? std::string(" (") + text + ")" : ""));
}

struct CublasLt::Prepared {
  const Api& L;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, dl = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos; ///< the heuristic's list, best first (not empty)
  explicit Prepared(const Api& api) : L(api) {}
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
  ~Prepared() {
    if (dl) L.cublasLtMatrixLayoutDestroy(dl);
    if (second) L.cublasLtMatrixLayoutDestroy(second);
    if (first) L.cublasLtMatrixLayoutDestroy(first);
    if (op) L.cublasLtMatmulDescDestroy(op);
  }
};

size_t CublasLt::prepared_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prepared_.size();
}

CublasLt::Prepared& CublasLt::prepare(const MatmulProblem& problem, DevicePtr a, DevicePtr b,
                                      DevicePtr bias, DevicePtr d, DevicePtr c) {
  MatmulProblem p = normalize(problem);
  bool wants_bias = p.epilogue != Epilogue::None;
  if (wants_bias && bias == 0) bad("the epilogue needs a bias");
  if (!wants_bias && bias != 0) bad("a bias was given without a bias epilogue");
  if (a == 0 || b == 0 || d == 0) bad("null operand");
  // The algorithm index is not part of the key: one problem's descriptors serve every index.
  std::array<int64_t, 21> key = {int64_t(p.dtype),
                                 p.m,
                                 p.n,
                                 p.k,
                                 p.trans_a,
                                 p.trans_b,
                                 p.lda,
                                 p.ldb,
                                 p.ldd,
                                 p.batch,
                                 p.stride_a,
                                 p.stride_b,
                                 p.stride_d,
                                 int64_t(p.epilogue),
                                 p.allow_tf32,
                                 wants_bias,
                                 alignment_of(b),
                                 alignment_of(a),
                                 alignment_of(d),
                                 wants_bias ? alignment_of(bias) : 0,
                                 alignment_of(c ? c : d)};
  auto it = prepared_.find(key);
  if (it != prepared_.end()) return *it->second;
  const Api& L = *api_;
  // Descriptors are released however this function leaves (`pp` owns them until it is kept).
  auto pp = std::make_unique<Prepared>(L);
  Prepared& r = *pp;
  ColumnMajorGemm g = column_major(p);
  cudaDataType_t dt = data_type(p.dtype);
  cublasComputeType_t compute = p.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check(L.cublasLtMatmulDescCreate(&r.op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  auto set_desc = [&](cublasLtMatmulDescAttributes_t attr, const void* v, size_t size) {
    check(L.cublasLtMatmulDescSetAttribute(r.op, attr, v, size), "cublasLtMatmulDescSetAttribute");
  };
  cublasOperation_t ta = g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  set_desc(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  cublasLtEpilogue_t epi = epilogue_of(p.epilogue);
  set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
  if (p.epilogue != Epilogue::None) {
    // Each call sets its own bias pointer; the heuristic sees this first one.
    const void* bias_ptr = reinterpret_cast<const void*>(uintptr_t(bias));
    set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr));
  }

  auto layout = [&](cublasLtMatrixLayout_t& l, int64_t rows, int64_t cols, int64_t ld,
                    int64_t stride) {
    check(L.cublasLtMatrixLayoutCreate(&l, dt, uint64_t(rows), uint64_t(cols), ld),
          "cublasLtMatrixLayoutCreate");
    if (p.batch == 1) return;
    int32_t count = int32_t(p.batch);
    check(L.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                             sizeof(count)),
          "cublasLtMatrixLayoutSetAttribute(batch count)");
    check(L.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof(stride)),
          "cublasLtMatrixLayoutSetAttribute(batch stride)");
  };
  layout(r.first, g.first_rows, g.first_cols, g.ld_first, p.stride_b);
  layout(r.second, g.second_rows, g.second_cols, g.ld_second, p.stride_a);
  layout(r.dl, g.d_rows, g.d_cols, g.ld_d, p.stride_d);

  cublasLtMatmulPreference_t pref = nullptr;
  check(L.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  struct ReleasePref {
    const Api& L;
    cublasLtMatmulPreference_t& pref;
    ~ReleasePref() {
      if (pref) L.cublasLtMatmulPreferenceDestroy(pref);
    }
  } release_pref{L, pref};
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, const void* v, size_t size) {
    check(L.cublasLtMatmulPreferenceSetAttribute(pref, attr, v, size),
          "cublasLtMatmulPreferenceSetAttribute");
  };
  uint64_t ws = kWorkspaceBytes;
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  // The key's last entries: the alignments of B, A, D, the bias and C (cuBLASLt's A, B, D, C).
  uint32_t align_first = uint32_t(key[16]), align_second = uint32_t(key[17]),
           align_d = uint32_t(key[18]), align_c = uint32_t(key[20]);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first, sizeof(align_first));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second, sizeof(align_second));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d));

  std::array<cublasLtMatmulHeuristicResult_t, kMaxAlgorithms> results = {};
  int found = 0;
  check(L.cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(handle_), r.op, r.first,
                                         r.second, r.dl, r.dl, pref, kMaxAlgorithms, results.data(),
                                         &found),
        "cublasLtMatmulAlgoGetHeuristic");
  for (int i = 0; i < std::min(found, kMaxAlgorithms); ++i)
    if (results[size_t(i)].state == CUBLAS_STATUS_SUCCESS)
      r.algos.push_back(results[size_t(i)].algo);
  if (r.algos.empty())
    bad("cuBLASLt has no algorithm for m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
        " k=" + std::to_string(p.k) + " batch=" + std::to_string(p.batch) + " " +
        std::string(dtype_name(p.dtype)));
  return *prepared_.emplace(key, std::move(pp)).first->second;
}

void CublasLt::matmul(const MatmulProblem& problem, DevicePtr a, DevicePtr b, DevicePtr bias,
                      DevicePtr d, DevicePtr c) {
  MatmulProblem p = normalize(problem);
  bool wants_bias = p.epilogue != Epilogue::None;
  ctx_.make_current();
  const Api& L = *api_;
  std::lock_guard<std::mutex> lock(mu_);
  Prepared& r = prepare(p, a, b, bias, d, c);
  const cublasLtMatmulAlgo_t& algo =
      r.algos[p.algo >= 0 && size_t(p.algo) < r.algos.size() ? size_t(p.algo) : 0];
  if (wants_bias) {
    const void* bias_ptr = reinterpret_cast<const void*>(uintptr_t(bias));
    check(L.cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                           sizeof(bias_ptr)),
          "cublasLtMatmulDescSetAttribute(bias)");
  }
  auto ptr = [](DevicePtr x) { return reinterpret_cast<void*>(uintptr_t(x)); };
  check(L.cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), r.op, &p.alpha, ptr(b), r.first,
                         ptr(a), r.second, &p.beta, ptr(c ? c : d), r.dl, ptr(d), r.dl, &algo,
                         ptr(workspace_), kWorkspaceBytes,
                         static_cast<cudaStream_t>(ctx_.stream())),
        "cublasLtMatmul");
}

int CublasLt::algorithm_count(const MatmulProblem& p, DevicePtr a, DevicePtr b, DevicePtr bias,
                              DevicePtr d, DevicePtr c) {
  ctx_.make_current();
  std::lock_guard<std::mutex> lock(mu_);
  return int(prepare(p, a, b, bias, d, c).algos.size());
}

#else // no cuBLASLt headers at build time

struct CublasLt::Api {};

CublasLt& CublasLt::get() {
  return get(Context::get()); // the "no CUDA driver/device" error when CUDA is missing altogether
}
CublasLt& CublasLt::get(Context&) {
  throw CudaError("cuBLASLt not available: fxc was built without cublasLt.h");
}
std::string CublasLt::unavailable_reason() {
  try {
    get();
  } catch (const CudaError& e) {
    return e.what();
  }
  return "";
}
struct CublasLt::Prepared {};
CublasLt::~CublasLt() = default;
size_t CublasLt::prepared_count() const {
  return 0;
}
void CublasLt::matmul(const MatmulProblem& p, DevicePtr, DevicePtr, DevicePtr, DevicePtr,
                      DevicePtr) {
  normalize(p);
  throw CudaError("cuBLASLt not available: fxc was built without cublasLt.h");
}
int CublasLt::algorithm_count(const MatmulProblem& p, DevicePtr, DevicePtr, DevicePtr, DevicePtr,
                              DevicePtr) {
  normalize(p);
  throw CudaError("cuBLASLt not available: fxc was built without cublasLt.h");
}

#endif

} // namespace fxc::cuda
