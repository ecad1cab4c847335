// Host tensors: a shared Storage plus dtype, sizes, strides and storage offset.
//
// Views (view, permute, expand, slice, ...) share storage without copying, exactly as PyTorch
// does; kernels handle non-contiguous and broadcast (stride 0) operands through the strided
// element accessors below.
#pragma once

#include "frontend/graph.h"
#include "frontend/storage.h"

#include <memory>
#include <vector>

namespace fxc {

class Tensor {
public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, TensorMeta meta);

  /// A new contiguous, zero-filled tensor.
  static Tensor empty(DType dtype, std::vector<int64_t> sizes);
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

  /// A view sharing this tensor's storage with new sizes/strides/offset (no copy).
  Tensor as_strided(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) const;
  /// A contiguous copy (or *this when already contiguous with offset 0 and covering its storage).
  Tensor contiguous() const;
  /// An elementwise converted contiguous copy (always a new storage).
  Tensor to(DType dtype) const;
  /// A new contiguous tensor with the same values.
  Tensor clone() const;

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

private:
  std::shared_ptr<Storage> storage_;
  TensorMeta meta_;
};

} // namespace fxc
