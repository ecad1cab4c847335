// A fixed pool of worker threads running parallel-for loops (the CPU target's outer loops).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fxc {

/// The thread count of a pool asked for 0 threads and the bound of the compiler's per-kernel
/// pools: --threads, else (0) std::thread::hardware_concurrency(). Set once, before compiling.
void set_default_threads(int threads);
int default_threads();

class ThreadPool {
public:
  /// `threads` workers including the calling thread; 0 means default_threads().
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  /// Runs fn(i) for i in [0, tasks), spread over the pool; returns when all are done. The
  /// calling thread takes part. Not reentrant: fn must not call parallel_for.
  void parallel_for(int64_t tasks, const std::function<void(int64_t)>& fn);

private:
  void work();
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t tasks_ = 0, next_ = 0, done_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

} // namespace fxc
