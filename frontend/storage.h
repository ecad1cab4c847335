// Reference-counted byte buffers behind tensors and weights, optionally loaded lazily.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace fxc {

/// A flat byte buffer. Tensors and weights hold a shared_ptr to one; several views may share it.
/// A lazy storage runs its loader on the first call to data(), exactly once, so weights are
/// read from their file only when used and copied no more than that one time.
class Storage {
public:
  using Loader = std::function<void(std::byte* dst, size_t nbytes)>;

  /// Zero-filled buffer of nbytes.
  explicit Storage(size_t nbytes);
  /// Buffer filled by `load` on first access. `load` may throw fxc::Error.
  static std::shared_ptr<Storage> lazy(size_t nbytes, Loader load);

  std::byte* data();
  size_t nbytes() const { return nbytes_; }
  bool loaded() const { return !loader_; }

private:
  Storage(size_t nbytes, Loader load);
  size_t nbytes_;
  std::unique_ptr<std::byte[]> bytes_;
  Loader loader_;
  std::once_flag once_;
};

} // namespace fxc
