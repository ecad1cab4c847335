// Host tensors: a shared Storage plus dtype, sizes, strides and storage offset.
//
// Views (view, permute, expand, slice, ...) share storage without copying, exactly as PyTorch
// does; kernels handle non-contiguous and broadcast (stride 0) operands through the strided
// element accessors below.
#pragma once

#include "frontend/graph.h"
#include "frontend/storage.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fxc {

/// A tensor operation that cannot be carried out (bad shape, index out of range, size too
/// large). The interpreter turns it into an fxc::Error naming the file and the node.
class TensorError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// IEEE binary16 and bfloat16 conversions; float -> half/bf16 rounds to nearest even.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);
/// `v` as a value of `dtype` would hold it (f16/bf16 round through f32, as PyTorch stores
/// them; integers truncate toward zero; bool is v != 0), returned as double.
double round_to_dtype(double v, DType dtype);

/// Number of elements of `sizes`; throws TensorError on a negative size or overflow.
int64_t checked_numel(const std::vector<int64_t>& sizes);

class Tensor {
public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, TensorMeta meta);

  /// A new contiguous, zero-filled tensor. Throws TensorError when the size is negative,
  /// overflows, or exceeds kMaxBytes.
  static Tensor empty(DType dtype, std::vector<int64_t> sizes);
  /// A contiguous tensor holding `values` (row-major, converted to `dtype`).
  static Tensor from_values(DType dtype, std::vector<int64_t> sizes,
                            const std::vector<double>& values);
  /// A 0-dim tensor.
  static Tensor scalar(DType dtype, double v);
  /// Largest tensor the reference runtime allocates (bytes).
  static constexpr int64_t kMaxBytes = int64_t(1) << 40;
  /// The tensor behind a parameter/buffer/constant (shares its storage).
  static Tensor from_weight(const WeightData& w);

  bool defined() const { return storage_ != nullptr; }
  const TensorMeta& meta() const { return meta_; }
  DType dtype() const { return meta_.dtype; }
  const std::vector<int64_t>& sizes() const { return meta_.sizes; }
  const std::vector<int64_t>& strides() const { return meta_.strides; }
  int64_t size(int64_t d) const { return meta_.sizes[d]; }
  int64_t stride(int64_t d) const { return meta_.strides[d]; }
  int64_t dim() const { return meta_.dim(); }
  int64_t numel() const { return meta_.numel(); }
  int64_t storage_offset() const { return meta_.storage_offset; }
  bool is_contiguous() const { return meta_.is_contiguous(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  /// A view sharing this tensor's storage with new sizes/strides/offset (no copy). Throws
  /// TensorError when the view would reach outside the storage.
  Tensor as_strided(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) const;
  /// *this when already contiguous (as PyTorch's contiguous()), else a contiguous copy.
  Tensor contiguous() const;
  /// An elementwise converted contiguous copy (always a new storage).
  Tensor to(DType dtype) const;
  /// A new contiguous tensor with the same values.
  Tensor clone() const;

  /// Copies `src` (broadcast to this tensor's shape, converted to its dtype) into this
  /// tensor's storage, through its strides.
  void copy_from(const Tensor& src) const;

  /// Every element in row-major order, as double (for tests and comparisons).
  std::vector<double> to_vector() const;
  /// The single element of a one-element tensor.
  double item() const;

  /// Raw pointer to element 0 (storage data + offset * itemsize).
  std::byte* raw_data() const;
  template <class T> T* data() const { return reinterpret_cast<T*>(raw_data()); }

  /// Element at a storage-relative linear position (offset already applied), as double.
  double load(int64_t elem_offset) const;
  void store(int64_t elem_offset, double v) const;
  /// int64 access avoids precision loss for integer tensors.
  int64_t load_int(int64_t elem_offset) const;
  void store_int(int64_t elem_offset, int64_t v) const;

  /// Storage element offset (relative to raw_data()) of the element with the given
  /// row-major linear index.
  int64_t offset_of(int64_t linear) const;
  /// Element by multi-index (one entry per dim), as double.
  double at(const std::vector<int64_t>& index) const;

private:
  std::shared_ptr<Storage> storage_;
  TensorMeta meta_;
};

} // namespace fxc
