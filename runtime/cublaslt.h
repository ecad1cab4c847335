// Matrix products through cuBLASLt, opened with dlopen: mm, bmm and addmm (+relu/gelu) externs.
//
// Matrices are row-major, as PyTorch's contiguous tensors; the product is handed to cuBLASLt,
// which is column-major, as Dᵀ = op(B)ᵀ·op(A)ᵀ, so no data moves. The bias (addmm's `self`
// broadcast over rows, one value per output column) and the activation run as a cuBLASLt
// epilogue. Float32 products use CUBLAS_COMPUTE_32F (full float32, as PyTorch's default) unless
// TF32 is allowed (--allow-tf32); float16/bfloat16 products accumulate in float32.
//
// libcublasLt is looked up by its soname through LD_LIBRARY_PATH and the loader cache, then in
// /usr/local/cuda/lib64.
#pragma once

#include "frontend/dtype.h"
#include "frontend/graph.h"
#include "runtime/cuda_driver.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace fxc::cuda {

/// What cuBLASLt applies to the product before writing D.
enum class Epilogue : uint8_t {
  None,     ///< D = alpha·A·B + beta·D
  Bias,     ///< + bias[j]
  ReluBias, ///< relu(... + bias[j])
  GeluBias, ///< gelu(... + bias[j], approximate='tanh'), PyTorch's _addmm_activation(use_gelu)
};

/// One row-major product, optionally batched with strides:
/// D[b] = epilogue(alpha · op(A[b]) · op(B[b]) + beta · C[b]), D[b] of shape [m, n], where C is
/// laid out as D (it is D itself unless matmul() is given another C).
struct MatmulProblem {
  DType dtype = DType::F32; ///< of A, B, D and the bias: F32, F16 or BF16
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false; ///< A is stored [k, m] and used transposed (else stored [m, k])
  bool trans_b = false; ///< B is stored [n, k] and used transposed (else stored [k, n])
  int64_t lda = 0, ldb = 0, ldd = 0; ///< row strides in elements; 0 means packed rows
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0; ///< batch strides in elements (A, B may be 0)
  Epilogue epilogue = Epilogue::None;
  float alpha = 1.0f, beta = 0.0f;
  bool allow_tf32 = false; ///< float32 only: let the tensor cores round inputs to TF32
  /// Which of cuBLASLt's heuristic algorithms runs the product: its index in the heuristic's
  /// list (0: the heuristic's first choice; --max-autotune times the others). An index past the
  /// list's end (a library that offers fewer) runs the first.
  int algo = 0;
};

/// `p` with packed row strides filled in (lda, ldb, ldd of 0) and checked: positive sizes, row
/// strides at least the row length, batch strides that keep batches of D apart, a supported
/// dtype. Throws CudaError("matmul: ...") otherwise. Runs on the host only.
MatmulProblem normalize(const MatmulProblem& p);

/// The problem that multiplies tensors laid out as `a` [(B,) M, K] and `b` [(B,) K, N] into `d`
/// [(B,) M, N] where they lie (sizes and strides in elements; storage offsets are the caller's,
/// added to the base pointers), so that no operand is copied: a matrix with unit column stride
/// is used as stored, one with unit row stride (a transposed view) through trans_a/trans_b, and
/// a batch stride of 0 (an expanded operand) is kept. Returns nullopt when a matrix has neither
/// unit stride, or d is not row-major; the caller then makes that operand contiguous. Throws
/// CudaError("matmul: ...") when the shapes or dtypes do not form a product. The epilogue,
/// alpha, beta and TF32 are left at their defaults.
std::optional<MatmulProblem> matmul_problem(const TensorMeta& a, const TensorMeta& b,
                                            const TensorMeta& d);

/// The column-major problem handed to cuBLASLt for a normalized row-major `p`.
struct ColumnMajorGemm {
  bool trans_first = false, trans_second = false;          ///< cuBLASLt's TRANSA / TRANSB
  int64_t first_rows = 0, first_cols = 0, ld_first = 0;    ///< layout of the first operand (B)
  int64_t second_rows = 0, second_cols = 0, ld_second = 0; ///< layout of the second (A)
  int64_t d_rows = 0, d_cols = 0, ld_d = 0;                ///< layout of D (Dᵀ of [m, n])
};
ColumnMajorGemm column_major(const MatmulProblem& p);

class CublasLt {
public:
  /// The process's cuBLASLt handle with a workspace on Context::get()'s device (get(ctx): on
  /// ctx's device; one per device). Throws CudaError("cuBLASLt not available: ...") when the
  /// library cannot be opened (and the context's "no CUDA driver/device" error when CUDA itself
  /// is missing).
  static CublasLt& get();
  static CublasLt& get(Context& ctx);
  /// Empty when get() succeeds, else its message. Never throws.
  static std::string unavailable_reason();

  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;
  ~CublasLt();

  /// Queues the product on the context's stream. `bias` holds n values of p.dtype and must be
  /// non-zero exactly when the epilogue has a bias; `c` is the C that p.beta scales, laid out as
  /// D (0: D itself; it may be D). Throws CudaError when the problem is invalid, no algorithm
  /// fits it, or cuBLASLt fails.
  void matmul(const MatmulProblem& p, DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d,
              DevicePtr c = 0);
  /// How many algorithms the heuristic offers for the product matmul() would run with these
  /// operands (at most kMaxAlgorithms; p.algo picks one). Throws as matmul() does.
  int algorithm_count(const MatmulProblem& p, DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d,
                      DevicePtr c = 0);
  static constexpr int kMaxAlgorithms = 16;
  /// cublasLtGetVersion(), e.g. 130000.
  size_t version() const { return version_; }
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  struct Api; ///< the resolved entry points (defined in cublaslt.cpp)
  /// A problem's descriptors and the heuristic's algorithms, made on its first matmul() and
  /// reused by later calls with the same problem and operand alignments.
  struct Prepared;
  /// Problems prepared so far (descriptors kept for reuse).
  size_t prepared_count() const;

private:
  CublasLt(Context& ctx, std::unique_ptr<Api> api);
  void check(int status, const char* call) const;
  Prepared& prepare(const MatmulProblem& p, DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d,
                    DevicePtr c);
  Context& ctx_;
  std::unique_ptr<Api> api_;
  mutable std::mutex mu_;
  std::map<std::array<int64_t, 21>, std::unique_ptr<Prepared>> prepared_;
  void* handle_ = nullptr;
  DevicePtr workspace_ = 0;
  size_t version_ = 0;
};

} // namespace fxc::cuda
