// The worker pool behind parallel kernel launches on the CPU.
#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace fxc {

namespace {
std::atomic<int> g_default_threads{0};
} // namespace

void set_default_threads(int threads) {
  g_default_threads = std::max(0, threads);
}

int default_threads() {
  int n = g_default_threads;
  return n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = default_threads();
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    start_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && next_ < tasks_); });
    if (stop_) return;
    seen = generation_;
    while (next_ < tasks_) {
      int64_t i = next_++;
      const auto* fn = fn_;
      lock.unlock();
      (*fn)(i);
      lock.lock();
      if (++done_ == tasks_) done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t tasks, const std::function<void(int64_t)>& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int64_t i = 0; i < tasks; ++i) fn(i);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = &fn;
  tasks_ = tasks;
  next_ = 0;
  done_ = 0;
  ++generation_;
  start_cv_.notify_all();
  while (next_ < tasks_) {
    int64_t i = next_++;
    lock.unlock();
    fn(i);
    lock.lock();
    ++done_;
  }
  done_cv_.wait(lock, [&] { return done_ == tasks_; });
  fn_ = nullptr;
  tasks_ = 0;
}

} // namespace fxc
