// A caching device allocator: size-bucketed free lists over cuMemAlloc, with statistics.
//
// cuMemAlloc and cuMemFree are slow and cuMemFree synchronizes the device, so freed blocks are
// kept and handed out again. Sizes are rounded up (512 bytes below 1 MiB, 2 MiB above) and a
// request reuses the smallest cached block of its rounded size or up to a quarter larger. All
// device work of fxc runs on the context's one stream, so a block freed after queueing work on it
// may be reused by work queued later without waiting: the stream orders the two. When the device
// runs out of memory, the cache is returned to the driver and the allocation retried once.
//
// The memory plan decides which buffers share a slot; this allocator provides the slots.
#pragma once

#include "runtime/cuda_driver.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace fxc::cuda {

/// Where the cache gets device memory and gives it back.
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  /// `bytes` of fresh device memory; throws CudaError when out of memory.
  virtual DevicePtr allocate(size_t bytes) = 0;
  virtual void release(DevicePtr p) = 0;
};

/// DeviceMemory straight from the driver (Context::mem_alloc / mem_free).
class DriverMemory : public DeviceMemory {
public:
  explicit DriverMemory(Context& ctx) : ctx_(ctx) {}
  DevicePtr allocate(size_t bytes) override { return ctx_.mem_alloc(bytes); }
  void release(DevicePtr p) override { ctx_.mem_free(p); }

private:
  Context& ctx_;
};

struct AllocatorStats {
  int64_t requests = 0;      ///< allocate() calls
  int64_t cache_hits = 0;    ///< requests served from the cache
  int64_t device_allocs = 0; ///< blocks taken from the backend
  int64_t device_frees = 0;  ///< blocks given back to the backend
  int64_t oom_retries = 0;   ///< times the cache was emptied to retry a failed allocation
  int64_t bytes_in_use = 0;  ///< rounded bytes of live blocks
  int64_t bytes_cached = 0;  ///< rounded bytes of free blocks kept
  int64_t peak_bytes_in_use = 0;
};

class CachingAllocator {
public:
  /// Largest single request (bytes); larger ones throw CudaError before reaching the driver.
  static constexpr size_t kMaxBytes = size_t(1) << 46;
  static constexpr size_t kSmallLimit = size_t(1) << 20; ///< below: 512-byte granules
  static constexpr size_t kSmallGranule = 512;
  static constexpr size_t kLargeGranule = size_t(2) << 20;

  explicit CachingAllocator(DeviceMemory& backend) : backend_(backend) {}
  /// Gives every block, cached or still live, back to the backend.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// The block size a request of `bytes` gets (a request of 0 bytes gets the smallest block).
  static size_t round_size(size_t bytes);

  /// A block of at least `bytes`, 256-byte aligned as cuMemAlloc's are. Throws CudaError when
  /// `bytes` exceeds kMaxBytes or the device is out of memory even after emptying the cache.
  DevicePtr allocate(size_t bytes);
  /// Returns a block from allocate() to the cache.
  void free(DevicePtr p);
  /// The rounded size of a live block.
  size_t block_size(DevicePtr p) const;
  /// Gives every cached (free) block back to the backend.
  void empty_cache();
  AllocatorStats stats() const;

private:
  void empty_cache_locked();
  DeviceMemory& backend_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<DevicePtr>> free_; ///< rounded size -> cached blocks
  std::map<DevicePtr, size_t> live_;              ///< block -> rounded size
  AllocatorStats stats_;
};

/// The process's allocator over a device's memory (one per device; Context::get()'s without an
/// argument): compiled plans take their arenas and resident weights from it, so a freed arena is
/// handed to the next plan of its size without cuMemFree/cuMemAlloc. Throws CudaError when there
/// is no CUDA device.
CachingAllocator& device_allocator();
CachingAllocator& device_allocator(Context& ctx);

} // namespace fxc::cuda
