// Reference-counted byte buffers behind tensors and weights, optionally loaded lazily.
#pragma once

#include <atomic>
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
  /// Buffer filled by `load` on first access. `load` may throw fxc::Error. The buffer is
  /// zero-filled first unless `load_writes_all` promises that the loader writes every byte (or
  /// throws): a weight read from a file skips the zeroing (and its page faults) that way.
  static std::shared_ptr<Storage> lazy(size_t nbytes, Loader load, bool load_writes_all = false);
  /// `nbytes` at `data`, owned by someone else (a mapped artifact): no copy. `owner` is held as
  /// long as the storage, so the bytes stay valid; they must stay writable or never be written.
  static std::shared_ptr<Storage> borrowed(std::byte* data, size_t nbytes,
                                           std::shared_ptr<const void> owner);
  /// borrowed(), with `check` run once before the bytes are first handed out (a weight mapped
  /// from its archive verifies its CRC-32 there); a check that throws runs again next time.
  using Check = std::function<void()>;
  static std::shared_ptr<Storage> borrowed(std::byte* data, size_t nbytes,
                                           std::shared_ptr<const void> owner, Check check);

  std::byte* data();
  size_t nbytes() const { return nbytes_; }
  /// Whether data() has nothing left to do: no loader to run, no check pending.
  bool loaded() const { return !pending_.load(std::memory_order_acquire); }
  /// Whether the bytes are borrowed() (an artifact's mapping), not owned.
  bool is_borrowed() const { return borrowed_ != nullptr; }

private:
  Storage(size_t nbytes, Loader load, bool load_writes_all = false);
  size_t nbytes_;
  std::unique_ptr<std::byte[]> bytes_;
  std::byte* borrowed_ = nullptr;     ///< borrowed(): the bytes, kept valid by owner_
  std::shared_ptr<const void> owner_; ///< borrowed(): what keeps borrowed_ valid
  Loader loader_;
  Check check_;
  bool load_writes_all_ = false;
  std::atomic<bool> pending_{false}; ///< a loader or check still to run
  std::once_flag once_;
};

} // namespace fxc
