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
  /// Buffer of nbytes whose bytes are not initialised (the caller writes every byte it reads).
  static std::shared_ptr<Storage> uninitialized(size_t nbytes);
  /// Buffer filled by `load` on first access. `load` may throw fxc::Error.
  static std::shared_ptr<Storage> lazy(size_t nbytes, Loader load);
  /// `nbytes` at `data`, owned by someone else (a mapped artifact): no copy. `owner` is held as
  /// long as the storage, so the bytes stay valid; they must stay writable or never be written.
  static std::shared_ptr<Storage> borrowed(std::byte* data, size_t nbytes,
                                           std::shared_ptr<const void> owner);

  std::byte* data();
  size_t nbytes() const { return nbytes_; }
  bool loaded() const { return !loader_; }
  /// Whether the bytes are borrowed() (an artifact's mapping), not owned.
  bool is_borrowed() const { return borrowed_ != nullptr; }

private:
  Storage(size_t nbytes, Loader load);
  size_t nbytes_;
  std::unique_ptr<std::byte[]> bytes_;
  std::byte* borrowed_ = nullptr;     ///< borrowed(): the bytes, kept valid by owner_
  std::shared_ptr<const void> owner_; ///< borrowed(): what keeps borrowed_ valid
  Loader loader_;
  std::once_flag once_;
};

} // namespace fxc
