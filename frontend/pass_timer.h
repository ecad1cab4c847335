// Wall-time spans of the compiler's passes, for --time-passes and --trace (process-wide, off
// until enabled).
//
//   { PassTimer t("inductor.lower"); p = lower(g, lo); }   // a span, when timing is on
//
// Spans nest (depth is the number of spans open on the thread when it began); they are kept in
// the order they ended. Every layer may time itself with this header: it depends on nothing.
#pragma once

#include <string>
#include <vector>

namespace fxc {

struct PassSpan {
  std::string name;
  double start_us = 0; ///< since the clock's origin (pass_clock_us)
  double dur_us = 0;
  int depth = 0;
  int thread = 0; ///< 0: the thread that enabled timing (the driver's); others 1, 2, ... in turn
  bool handed = false; ///< begun under a ScopedPassDepth: work handed to a pool (parallel)
};

/// Starts (or stops) recording spans. Recording starts empty.
void enable_pass_timing(bool on);
/// Now, in microseconds since the process first asked for the time, on the spans' clock.
double pass_clock_us();
/// The spans recorded so far, in the order they began.
std::vector<PassSpan> pass_spans();

/// Records one span from construction to destruction while timing is on; costs one flag test
/// when it is off.
class PassTimer {
public:
  explicit PassTimer(const char* name);
  explicit PassTimer(std::string name);
  ~PassTimer();
  PassTimer(const PassTimer&) = delete;
  PassTimer& operator=(const PassTimer&) = delete;

private:
  std::string name_;
  double start_ = -1;
  int depth_ = 0;
};

/// Spans begun on another thread nest under the span open on the thread that handed it the
/// work: a worker creates one of these with the handing thread's pass_depth() first.
int pass_depth();
class ScopedPassDepth {
public:
  explicit ScopedPassDepth(int depth);
  ~ScopedPassDepth();
  ScopedPassDepth(const ScopedPassDepth&) = delete;
  ScopedPassDepth& operator=(const ScopedPassDepth&) = delete;

private:
  int saved_;
};

/// The --time-passes report: one row per pass name and nesting level, in the order passes
/// first ran, with total wall time, share of the whole and how often it ran, e.g.
///   ===----- fxc pass timing report -----===
///     Total: 12.345 ms
///     wall ms      %   runs  pass
///       3.210   26.0      1  import
std::string format_pass_report(const std::vector<PassSpan>& spans);

} // namespace fxc
