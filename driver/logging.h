// Log knobs: --log= / FXC_LOGS= (TORCH_LOGS syntax), components with levels, named artifacts.
//
// A spec is a comma-separated list of names. Components take a level prefix: `+inductor`
// (DEBUG), `inductor` (INFO), `-inductor` (ERROR only); components not named log WARNING and
// above. Artifacts are named streams (`fusion`, `output_code`, ...) that are off unless named,
// enabled by `all`/`+all`, or (for the light ones) enabled by their component at DEBUG;
// `-fusion` turns one off again. `all` sets every component (`+all` DEBUG, `-all` ERROR, which
// also turns every artifact off). Later entries win. `help` asks for log_help_text().
//
// Lines are deterministic: "[fxc:<artifact>] <line>" for artifacts and
// "[fxc:<component>] <level>: <message>" for component logs; multi-line text gets the
// prefix on every line. Output goes to stderr, or appended to the file named by
// FXC_LOGS_OUT. Covered by test/unit/logging_test.cpp.
//
// The frontend, the passes and code generation log through frontend/log.h (log_enabled,
// log_message); configure_process_logger() routes those messages to process_logger().
#pragma once

#include "frontend/log.h"

#include <array>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace fxc {

enum class Artifact : uint8_t {
  GraphBreaks,
  Guards,
  Recompiles,
  AotGraphs,
  IrPreFusion,
  IrPostFusion,
  OutputCode,
  Fusion,
  Schedule,
  PerfHints
};
constexpr size_t kNumArtifacts = 10;

std::string_view component_name(Component c); ///< "inductor"
std::string_view level_name(Level l);         ///< "debug", "info", "warning", "error"
std::string_view artifact_name(Artifact a);   ///< "graph_breaks"

/// What a spec turned on.
struct LogSettings {
  std::array<Level, kNumComponents> levels; ///< minimum level logged, per component
  std::array<bool, kNumArtifacts> artifacts{};
  bool help = false; ///< the spec contained `help`

  LogSettings() { levels.fill(Level::Warning); }
};

/// Applies `spec` on top of `*settings` (so FXC_LOGS then --log can be applied in turn).
/// Returns false with *error set on an unknown or malformed name; the message lists the
/// valid names. Whitespace around names and empty entries are ignored.
bool parse_log_settings(std::string_view spec, LogSettings* settings, std::string* error);

/// The `--log=help` text: the syntax, then every component and artifact with one line of
/// description each. Deterministic.
std::string log_help_text();

/// Emits log lines according to LogSettings. Thread-safe; cheap to query when disabled.
class Logger {
public:
  /// Logs WARNING and above of every component to stderr.
  Logger();
  /// Logs according to `settings` into `out` (which must outlive the logger).
  Logger(const LogSettings& settings, std::ostream* out);

  /// Builds a logger from the FXC_LOGS environment variable and then `flag_spec` (the --log
  /// value; later entries win), writing to the file named by FXC_LOGS_OUT (appended) or to
  /// stderr. Returns nullopt with *error set on a bad spec or an unopenable file. When the
  /// spec asks for help, *help is set (the caller prints log_help_text() and exits 0).
  static std::optional<Logger> from_environment(std::string_view flag_spec, std::string* error,
                                                bool* help);

  Logger(Logger&&) noexcept;
  Logger& operator=(Logger&&) noexcept;
  ~Logger();

  const LogSettings& settings() const { return settings_; }
  bool enabled(Artifact a) const {
    return settings_.artifacts[size_t(a)] || (capturing_ && capture_.artifacts[size_t(a)]);
  }
  bool enabled(Component c, Level l) const {
    return l >= settings_.levels[size_t(c)] || (capturing_ && l >= capture_.levels[size_t(c)]);
  }

  /// One artifact text or component message kept by capture().
  struct Captured {
    std::string stream; ///< the artifact's or the component's name
    Level level;        ///< Info for artifacts
    std::string text;
  };
  /// Also keeps (in memory, in the order written) what `what` turns on, whether or not the
  /// settings print it (--report collects guards, fusion decisions, cache events this way);
  /// enabled() answers for both. What the settings print is unchanged.
  void capture(const LogSettings& what);
  /// The levels to install as frontend/log.h's sink levels: the settings' and the capture's.
  std::array<Level, kNumComponents> sink_levels() const;
  /// What capture() kept so far.
  std::vector<Captured> captured() const;

  /// Writes `text` with "[fxc:<artifact>] " before every line, when the artifact is enabled.
  void artifact(Artifact a, const std::string& text);
  /// Writes "[fxc:<component>] <level>: <msg>" (every line prefixed) when enabled.
  void log(Component c, Level l, const std::string& msg);

private:
  void write(const std::string& prefix, const std::string& text);

  LogSettings settings_;
  bool capturing_ = false;
  LogSettings capture_;
  std::vector<Captured> captured_;
  std::unique_ptr<std::ofstream> file_; ///< owned FXC_LOGS_OUT file, when there is one
  std::ostream* out_;
  std::unique_ptr<std::mutex> mu_;
};

/// The process-wide logger the driver configures once from flags; starts as Logger().
Logger& process_logger();

/// The driver's one call: configures process_logger() from FXC_LOGS, `flag_spec` (--log) and
/// FXC_LOGS_OUT, and installs it as the sink of frontend/log.h's component logs. Returns -1 to go
/// on; 0 after printing log_help_text() to `out` (help was asked for); 2 after printing "fxc:
/// error: <message>" to `err` (a usage error).
int configure_process_logger(std::string_view flag_spec, std::ostream& out, std::ostream& err);

/// After configure_process_logger: process_logger().capture(what), and the component logs of
/// frontend/log.h reach it at the capture's levels too.
void capture_process_logs(const LogSettings& what);

} // namespace fxc
