// Component logs from any layer: the levels and the sink the driver installs.
#include "frontend/log.h"

#include <atomic>

namespace fxc {

namespace {

// Level::Error + 1: nothing passes until the driver installs its settings.
constexpr uint8_t kOff = uint8_t(Level::Error) + 1;

std::atomic<uint8_t> g_min_level[kNumComponents] = {kOff, kOff, kOff, kOff, kOff, kOff};
static_assert(kNumComponents == 6, "one initializer per component");
std::atomic<LogSink> g_sink{nullptr};

} // namespace

void install_log_sink(const std::array<Level, kNumComponents>& levels, LogSink sink) {
  g_sink.store(sink, std::memory_order_relaxed);
  for (size_t i = 0; i < kNumComponents; ++i)
    g_min_level[i].store(sink ? uint8_t(levels[i]) : kOff, std::memory_order_relaxed);
}

bool log_enabled(Component c, Level l) {
  return uint8_t(l) >= g_min_level[size_t(c)].load(std::memory_order_relaxed);
}

void log_message(Component c, Level l, const std::string& msg) {
  if (!log_enabled(c, l)) return;
  if (LogSink sink = g_sink.load(std::memory_order_relaxed)) sink(c, l, msg);
}

} // namespace fxc
