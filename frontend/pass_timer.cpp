// Wall-time spans of the compiler's passes, for --time-passes and --trace.
#include "frontend/pass_timer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace fxc {

namespace {
std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
std::vector<PassSpan>& spans() {
  static std::vector<PassSpan> s;
  return s;
}
thread_local int t_depth = 0;
thread_local int t_handed = 0; // ScopedPassDepth scopes open: work handed out by a pool
std::atomic<int> g_threads{0};
/// This thread's number in the spans: given when it first times a pass.
int thread_number() {
  thread_local const int n = g_threads++;
  return n;
}

std::chrono::steady_clock::time_point origin() {
  static const auto t0 = std::chrono::steady_clock::now();
  return t0;
}
} // namespace

void enable_pass_timing(bool on) {
  origin();
  thread_number(); // the enabling thread (the driver's) is thread 0
  g_enabled = on;
}

double pass_clock_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin())
      .count();
}

std::vector<PassSpan> pass_spans() {
  std::vector<PassSpan> out;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    out = spans();
  }
  std::stable_sort(out.begin(), out.end(), [](const PassSpan& a, const PassSpan& b) {
    return a.start_us < b.start_us || (a.start_us == b.start_us && a.depth < b.depth);
  });
  return out;
}

int pass_depth() {
  return t_depth;
}

ScopedPassDepth::ScopedPassDepth(int depth) : saved_(t_depth) {
  t_depth = depth;
  ++t_handed;
}

ScopedPassDepth::~ScopedPassDepth() {
  t_depth = saved_;
  --t_handed;
}

PassTimer::PassTimer(const char* name) : PassTimer(std::string(name)) {}

PassTimer::PassTimer(std::string name) {
  if (!g_enabled) return;
  name_ = std::move(name);
  depth_ = t_depth++;
  start_ = pass_clock_us();
}

PassTimer::~PassTimer() {
  if (start_ < 0) return;
  double end = pass_clock_us();
  --t_depth;
  int thread = thread_number();
  std::lock_guard<std::mutex> lock(g_mutex);
  spans().push_back({std::move(name_), start_, end - start_, depth_, thread, t_handed > 0});
}

std::string format_pass_report(const std::vector<PassSpan>& spans) {
  struct Row {
    std::string name;
    int depth;
    double us = 0;
    int runs = 0;
    bool parallel = false; ///< some span ran as work handed to a pool
  };
  std::vector<Row> rows;
  double total = 0;
  for (const PassSpan& s : spans) {
    if (s.depth == 0) total += s.dur_us;
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const Row& r) { return r.name == s.name && r.depth == s.depth; });
    if (it == rows.end()) it = rows.insert(rows.end(), Row{s.name, s.depth});
    it->us += s.dur_us;
    ++it->runs;
    it->parallel |= s.handed;
  }
  bool parallel = false;
  std::string out = "===------------------- fxc pass timing report -------------------===\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "  Total: %.3f ms (top-level passes)\n", total / 1000);
  out += buf;
  out += "     wall ms       %   runs  pass\n";
  for (const Row& r : rows) {
    bool workers = r.parallel;
    parallel |= workers;
    std::snprintf(buf, sizeof buf, "  %10.3f  %6.1f  %5d  %s%s%s\n", r.us / 1000,
                  total > 0 ? 100 * r.us / total : 0.0, r.runs,
                  std::string(2 * r.depth, ' ').c_str(), r.name.c_str(),
                  workers ? " [parallel]" : "");
    out += buf;
  }
  if (parallel)
    out += "  note: passes marked [parallel] ran on a thread pool, several at once: their wall "
           "times are summed over threads, so they can exceed their parent's time and 100%\n";
  return out;
}

} // namespace fxc
