// The caching device allocator: rounding, bucketed reuse, out-of-memory retry, statistics.
#include "runtime/cuda_alloc.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fxc::cuda {

size_t CachingAllocator::round_size(size_t bytes) {
  assert(bytes <= kMaxBytes && "round_size beyond kMaxBytes");
  if (bytes < kSmallLimit)
    return std::max<size_t>(1, (bytes + kSmallGranule - 1) / kSmallGranule) * kSmallGranule;
  return (bytes + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    empty_cache_locked();
    for (const auto& [p, size] : live_) backend_.release(p);
  } catch (const CudaError&) {
    // The driver may already be shutting down at process exit; nothing more can be freed.
  }
}

DevicePtr CachingAllocator::allocate(size_t bytes) {
  if (bytes > kMaxBytes)
    throw CudaError("device allocation of " + std::to_string(bytes) + " bytes is too large");
  size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.requests;
  DevicePtr p = 0;
  // The smallest cached block of this size or at most a quarter larger.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= size + size / 4) {
    size = it->first;
    p = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) free_.erase(it);
    stats_.bytes_cached -= int64_t(size);
    ++stats_.cache_hits;
  } else {
    try {
      p = backend_.allocate(size);
    } catch (const CudaError&) {
      if (stats_.bytes_cached == 0) throw;
      ++stats_.oom_retries;
      empty_cache_locked();
      p = backend_.allocate(size);
    }
    ++stats_.device_allocs;
  }
  assert(p != 0 && "backend returned a null block");
  assert(!live_.count(p) && "backend returned a live block");
  live_[p] = size;
  stats_.bytes_in_use += int64_t(size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void CachingAllocator::free(DevicePtr p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(p);
  assert(it != live_.end() && "free of a block this allocator does not own (or a double free)");
  if (it == live_.end()) return;
  size_t size = it->second;
  live_.erase(it);
  free_[size].push_back(p);
  stats_.bytes_in_use -= int64_t(size);
  stats_.bytes_cached += int64_t(size);
}

size_t CachingAllocator::block_size(DevicePtr p) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(p);
  assert(it != live_.end() && "block_size of a block this allocator does not own");
  return it == live_.end() ? 0 : it->second;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  empty_cache_locked();
}

void CachingAllocator::empty_cache_locked() {
  // Blocks leave the cache one at a time, so a failing release leaves the counts true.
  while (!free_.empty()) {
    auto it = free_.begin();
    while (!it->second.empty()) {
      backend_.release(it->second.back());
      it->second.pop_back();
      stats_.bytes_cached -= int64_t(it->first);
      ++stats_.device_frees;
    }
    free_.erase(it);
  }
}

CachingAllocator& device_allocator() {
  return device_allocator(Context::get());
}

CachingAllocator& device_allocator(Context& ctx) {
  // Contexts are made before their allocators, so they outlive them at exit.
  struct PerDevice {
    explicit PerDevice(Context& c) : memory(c), allocator(memory) {}
    DriverMemory memory;
    CachingAllocator allocator;
  };
  static std::mutex mu;
  static std::map<int, std::unique_ptr<PerDevice>> devices;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<PerDevice>& d = devices[ctx.ordinal()];
  if (!d) d = std::make_unique<PerDevice>(ctx);
  return d->allocator;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

} // namespace fxc::cuda
