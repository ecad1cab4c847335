// Component logs from any layer (--log=frontend, +aot, ...): the levels and the sink the driver
// installs.
//
//   if (log_enabled(Component::Aot, Level::Info))
//     log_message(Component::Aot, Level::Info, "saved 4 tensors (1 MB)");
//
// Like pass_timer.h this sits in the lowest layer and depends on nothing, so that the frontend,
// the passes and code generation log their own decisions. The driver owns the settings, the
// format and the output (driver/logging.h) and installs them with install_log_sink(); until it
// does, nothing is enabled and nothing is written. log_enabled() is one relaxed atomic load, so
// a disabled log costs nothing but the test: build the message only after it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fxc {

enum class Component : uint8_t { Frontend, Aot, Inductor, Cache, Driver, Autotune };
constexpr size_t kNumComponents = 6;

enum class Level : uint8_t { Debug, Info, Warning, Error };

/// Receives every enabled message; called from any thread.
using LogSink = void (*)(Component c, Level l, const std::string& msg);

/// Sets the minimum level written per component and the sink (nullptr: nothing is written).
void install_log_sink(const std::array<Level, kNumComponents>& levels, LogSink sink);

/// Whether log_message(c, l, ...) would write anything.
bool log_enabled(Component c, Level l);

/// Hands `msg` to the sink when log_enabled(c, l).
void log_message(Component c, Level l, const std::string& msg);

} // namespace fxc
